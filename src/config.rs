//! Configuration and identity (SPEC sections 1 and 2): every tunable is a
//! `git config maverick.*` key with a flag that overrides it, and the choice
//! of surface is a pure function of config, flags and the remote URL.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::git::{Git, GitError};
use crate::timefmt::{parse_duration, DurationError};

#[derive(
    Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum SurfaceKind {
    Git,
    Github,
}

impl std::fmt::Display for SurfaceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SurfaceKind::Git => "git",
            SurfaceKind::Github => "github",
        })
    }
}

/// Values given on the command line; each beats its `maverick.*` key.
#[derive(Clone, Debug, Default)]
pub(crate) struct Overrides {
    pub surface: Option<SurfaceKind>,
    pub remote: Option<String>,
    pub repo: Option<String>,
    pub lease_ttl: Option<Duration>,
    pub heartbeat_interval: Option<Duration>,
    pub max_clock_skew: Option<Duration>,
    pub settle_delay: Option<Duration>,
    pub worktree_dir: Option<PathBuf>,
    pub dispatch_slots: Option<u32>,
    pub dispatch_stale: Option<Duration>,
    pub trusted_authors: Option<Vec<String>>,
}

#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub struct Labels {
    pub in_progress: String,
    /// `blocked-by:#` — the issue number follows.
    pub blocked_prefix: String,
    pub wip: String,
    pub pr: String,
    pub frontier: String,
}

impl Labels {
    pub(crate) fn blocked_by(&self, issue: u64) -> String {
        format!("{}{issue}", self.blocked_prefix)
    }

    /// The issue a `blocked-by:#N` label names.
    pub(crate) fn blocker(&self, label: &str) -> Option<u64> {
        label.strip_prefix(&self.blocked_prefix)?.parse().ok()
    }
}

/// Everything a command needs to know about where and how to coordinate.
#[derive(Clone, Debug)]
pub struct Settings {
    pub surface: SurfaceKind,
    pub remote: String,
    pub remote_url: Option<String>,
    /// `OWNER/NAME`, from `-R` or the remote URL (GitHub only).
    pub repo: Option<String>,
    pub github_api_url: String,
    pub lease_ttl: Duration,
    pub heartbeat_interval: Duration,
    /// How far a stamp may lead a clock before it is not believed (SPEC 2).
    pub max_clock_skew: Duration,
    pub settle_delay: Duration,
    pub worktree_dir: PathBuf,
    pub dispatch_slots: u32,
    pub dispatch_stale: Duration,
    pub labels: Labels,
    pub trusted_authors: Vec<String>,
    pub instance: String,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("maverick.{key}: {source}")]
    Duration {
        key: &'static str,
        #[source]
        source: DurationError,
    },
    #[error("maverick.{key} = {value:?} is not valid: {expected}")]
    Invalid {
        key: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("this repository has no remote {remote:?}")]
    NoRemote { remote: String },
    #[error("-R/--repo wants OWNER/NAME (or HOST/OWNER/NAME), not {0:?}")]
    BadRepo(String),
    #[error("GH_REPO wants OWNER/NAME (or HOST/OWNER/NAME), not {0:?}")]
    BadGhRepo(String),
    #[error("the instance id {0:?} is not valid: use 1-64 letters, digits, '.', '_' or '-'")]
    BadInstance(String),
    #[error("could not keep the instance id in {path}: {source}")]
    InstanceFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// One `maverick.*` key maverick reads: its name as documented, its default,
/// and what it sets. The man page's CONFIGURATION section, `git maverick
/// config` and the unknown-key warning all read this one list.
#[derive(Clone, Copy, Debug)]
pub struct KnownKey {
    pub name: &'static str,
    pub default: &'static str,
    pub about: &'static str,
}

pub const KNOWN_KEYS: &[KnownKey] = &[
    KnownKey { name: "surface", default: "github for github.com remotes, else git", about: "Where shared state lives: github (labels and marker comments) or git (refs/maverick/* on the remote)" },
    KnownKey { name: "remote", default: "origin", about: "The remote that holds the branches" },
    KnownKey { name: "repo", default: "from the remote's URL", about: "The GitHub repository, OWNER/NAME" },
    KnownKey { name: "githubApiUrl", default: "https://api.github.com", about: "The GitHub API's base URL (GitHub Enterprise: https://HOST/api/v3)" },
    KnownKey { name: "instance", default: "generated once per clone", about: "This instance's id (MAVERICK_INSTANCE beats it)" },
    KnownKey { name: "leaseTtl", default: "10m", about: "How long a lease lives without a heartbeat" },
    KnownKey { name: "maxClockSkew", default: "5m", about: "How far a writer's stamp may lead the surface's clock before it is flagged and not followed" },
    KnownKey { name: "heartbeatInterval", default: "2m", about: "How often run renews its lease" },
    KnownKey { name: "settleDelay", default: "3s on github, 0 on git", about: "How long a claim waits before its re-read" },
    KnownKey { name: "httpTimeout", default: "30s", about: "How long one GitHub request may take before it is retried" },
    KnownKey { name: "worktreeDir", default: ".maverick/worktrees", about: "Where worktrees are made" },
    KnownKey { name: "dispatchSlots", default: "3", about: "Agent cycles in flight at once" },
    KnownKey { name: "dispatchStale", default: "4h", about: "Age after which a dispatch claim is cleared" },
    KnownKey { name: "trustedAuthors", default: "none", about: "Logins whose markers count besides members, comma-separated" },
    KnownKey { name: "inProgressLabel", default: "claude-in-progress", about: "The label of a claimed issue" },
    KnownKey { name: "blockedLabelPrefix", default: "blocked-by:#", about: "The prefix of the label naming a blocker (blocked-by:#N)" },
    KnownKey { name: "wipLabel", default: "agent-wip", about: "The label of an issue an agent cycle works on" },
    KnownKey { name: "prLabel", default: "agent-pr", about: "The label of an agent's pull request" },
    KnownKey { name: "frontierLabel", default: "agent-ready", about: "The label of issues dispatch may pick" },
];

/// Where one setting came from, for `git maverick config`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Origin {
    /// Nothing set it.
    Default,
    /// A command-line flag.
    Flag(&'static str),
    /// An environment variable.
    Env(&'static str),
    /// A `maverick.*` key in one git config file.
    Config(ConfigOrigin),
    /// Worked out from other settings; the text says from what.
    Derived(String),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Default => f.write_str("default"),
            Origin::Flag(flag) => write!(f, "flag {flag}"),
            Origin::Env(var) => write!(f, "environment {var}"),
            Origin::Config(c) => c.fmt(f),
            Origin::Derived(why) => f.write_str(why),
        }
    }
}

/// A config key's name as git reports it (lower-cased), its scope (`local`,
/// `global`, `system`, `worktree`, `command`) and the file that set it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConfigOrigin {
    pub key: String,
    pub scope: String,
    pub file: String,
}

impl std::fmt::Display for ConfigOrigin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.scope.as_str() {
            "command" => write!(f, "{} from the command line (git -c)", self.key),
            scope => write!(f, "{} in {scope} config ({})", self.key, self.file),
        }
    }
}

#[derive(Debug)]
struct ConfigEntry {
    value: String,
    origin: ConfigOrigin,
}

/// A `maverick.*` key that maverick does not read, and the known key it is
/// closest to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UnknownKey {
    pub origin: ConfigOrigin,
    pub suggestion: Option<&'static str>,
}

impl std::fmt::Display for UnknownKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "unknown config key {}", self.origin)?;
        if let Some(known) = self.suggestion {
            write!(f, "; did you mean maverick.{known}?")?;
        }
        Ok(())
    }
}

/// The `maverick.*` keys, read with one `git config` call (lower-cased names,
/// as git reports them; the last value of a key wins, as in git).
#[derive(Debug, Default)]
pub(crate) struct ConfigKeys(HashMap<String, ConfigEntry>);

impl ConfigKeys {
    pub(crate) fn read(git: &Git) -> Result<ConfigKeys, GitError> {
        let mut keys = HashMap::new();
        for entry in git.config_entries(r"^maverick\.")? {
            let origin = ConfigOrigin {
                key: entry.key.to_ascii_lowercase(),
                scope: entry.scope,
                file: entry.file,
            };
            keys.insert(
                origin.key.clone(),
                ConfigEntry {
                    value: entry.value,
                    origin,
                },
            );
        }
        Ok(ConfigKeys(keys))
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.entry(key).map(|e| e.value.as_str())
    }

    fn entry(&self, key: &str) -> Option<&ConfigEntry> {
        self.0
            .get(&format!("maverick.{}", key.to_ascii_lowercase()))
    }

    /// Where `key` was set, when it was.
    pub(crate) fn origin(&self, key: &str) -> Option<Origin> {
        self.entry(key).map(|e| Origin::Config(e.origin.clone()))
    }

    pub(crate) fn duration(&self, key: &'static str) -> Result<Option<Duration>, ConfigError> {
        self.get(key)
            .map(|v| parse_duration(v).map_err(|source| ConfigError::Duration { key, source }))
            .transpose()
    }

    /// The keys maverick does not read (a typo reads as a default otherwise),
    /// in name order, each with the closest known key.
    pub(crate) fn unknown(&self) -> Vec<UnknownKey> {
        let mut unknown: Vec<UnknownKey> = self
            .0
            .values()
            .filter(|e| {
                let name = e.origin.key.trim_start_matches("maverick.");
                !KNOWN_KEYS.iter().any(|k| k.name.eq_ignore_ascii_case(name))
            })
            .map(|e| UnknownKey {
                origin: e.origin.clone(),
                suggestion: closest_key(e.origin.key.trim_start_matches("maverick.")),
            })
            .collect();
        unknown.sort_by(|a, b| a.origin.key.cmp(&b.origin.key));
        unknown
    }
}

/// The known key `name` most likely misspells, if any is close.
pub(crate) fn closest_key(name: &str) -> Option<&'static str> {
    closest_name(name, KNOWN_KEYS.iter().map(|k| k.name))
}

/// The candidate `name` most likely misspells, if any is close: clap's
/// measure and threshold for its own suggestions, ignoring case.
pub(crate) fn closest_name<'a>(
    name: &str,
    candidates: impl Iterator<Item = &'a str>,
) -> Option<&'a str> {
    let name = name.to_ascii_lowercase();
    candidates
        .map(|c| (strsim::jaro(&name, &c.to_ascii_lowercase()), c))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c)
}

/// Where each setting came from, by its key name (`leaseTtl`), plus the
/// settings that are not keys: `remoteUrl`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Origins {
    pub of: Vec<(&'static str, Origin)>,
    pub unknown_keys: Vec<UnknownKey>,
}

impl Origins {
    fn set(&mut self, name: &'static str, origin: Origin) {
        self.of.retain(|(n, _)| *n != name);
        self.of.push((name, origin));
    }

    pub(crate) fn get(&self, name: &str) -> Origin {
        self.of
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, o)| o.clone())
            .unwrap_or(Origin::Default)
    }
}

pub(crate) const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(600);
pub(crate) const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(120);
pub(crate) const DEFAULT_MAX_CLOCK_SKEW: Duration = Duration::from_secs(300);
/// GitHub's lists can lag a write by seconds; the git surface is exact.
pub(crate) const DEFAULT_GITHUB_SETTLE: Duration = Duration::from_secs(3);
/// How long one GitHub request may take before it is retried
/// (`maverick.httpTimeout`).
pub(crate) const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);

impl Settings {
    /// The settings and where each came from (`git maverick config`), and
    /// the `maverick.*` keys nobody reads (a warning on every command).
    pub(crate) fn load_explained(
        git: &Git,
        overrides: &Overrides,
    ) -> Result<(Settings, Origins), ConfigError> {
        let keys = ConfigKeys::read(git)?;
        let mut origins = Origins {
            unknown_keys: keys.unknown(),
            ..Origins::default()
        };
        let gh = GhEnv::read()?;
        let remote = match (&overrides.remote, keys.get("remote")) {
            (Some(flag), _) => {
                origins.set("remote", Origin::Flag("--remote"));
                flag.clone()
            }
            (None, Some(key)) => {
                origins.set("remote", keys.origin("remote").unwrap_or(Origin::Default));
                key.to_owned()
            }
            (None, None) => "origin".to_owned(),
        };
        let remote_url = git.config_get(&format!("remote.{remote}.url"))?;
        origins.set("remoteUrl", Origin::Derived(format!("remote.{remote}.url")));
        let github_host = gh.host.as_deref();
        let repo_of_remote = || {
            remote_url
                .as_deref()
                .and_then(|url| github_repo_of_url_on(url, github_host))
        };
        let surface = match (overrides.surface, keys.get("surface")) {
            (Some(kind), _) => {
                origins.set("surface", Origin::Flag("--surface"));
                kind
            }
            (None, Some(value)) => {
                origins.set("surface", keys.origin("surface").unwrap_or(Origin::Default));
                match value {
                    "git" => SurfaceKind::Git,
                    "github" => SurfaceKind::Github,
                    other => {
                        return Err(ConfigError::Invalid {
                            key: "surface",
                            value: other.to_owned(),
                            expected: "git or github",
                        })
                    }
                }
            }
            (None, None) if overrides.repo.is_some() => {
                origins.set(
                    "surface",
                    Origin::Derived("-R/--repo names a GitHub repository".to_owned()),
                );
                SurfaceKind::Github
            }
            (None, None) if gh.repo.is_some() => {
                origins.set(
                    "surface",
                    Origin::Derived("GH_REPO names a GitHub repository".to_owned()),
                );
                SurfaceKind::Github
            }
            (None, None) if keys.get("repo").is_some() => {
                origins.set(
                    "surface",
                    Origin::Derived("maverick.repo names a GitHub repository".to_owned()),
                );
                SurfaceKind::Github
            }
            (None, None) => match repo_of_remote() {
                Some(_) => {
                    let host = github_host.unwrap_or("github.com");
                    origins.set(
                        "surface",
                        Origin::Derived(format!("the remote {remote:?} is on {host}")),
                    );
                    SurfaceKind::Github
                }
                None => {
                    origins.set(
                        "surface",
                        Origin::Derived(format!("the remote {remote:?} is not on GitHub")),
                    );
                    SurfaceKind::Git
                }
            },
        };
        if surface == SurfaceKind::Git && remote_url.is_none() {
            return Err(ConfigError::NoRemote { remote });
        }
        let repo = match (&overrides.repo, &gh.repo) {
            (Some(r), _) => {
                origins.set("repo", Origin::Flag("--repo"));
                Some(
                    parse_repo(r)
                        .ok_or_else(|| ConfigError::BadRepo(r.clone()))?
                        .1,
                )
            }
            (None, Some((_, r))) => {
                origins.set("repo", Origin::Env("GH_REPO"));
                Some(r.clone())
            }
            (None, None) => match keys.get("repo") {
                Some(r) if valid_repo(r) => {
                    origins.set("repo", keys.origin("repo").unwrap_or(Origin::Default));
                    Some(r.to_owned())
                }
                Some(r) => {
                    return Err(ConfigError::Invalid {
                        key: "repo",
                        value: r.to_owned(),
                        expected: "OWNER/NAME",
                    })
                }
                None => {
                    origins.set(
                        "repo",
                        Origin::Derived(format!("the URL of the remote {remote:?}")),
                    );
                    repo_of_remote()
                }
            },
        };
        let github_api_url = if let Some(url) = std::env::var("GITHUB_API_URL")
            .ok()
            .filter(|v| !v.is_empty())
        {
            origins.set("githubApiUrl", Origin::Env("GITHUB_API_URL"));
            url
        } else if let Some(url) = keys.get("githubApiUrl") {
            origins.set(
                "githubApiUrl",
                keys.origin("githubApiUrl").unwrap_or(Origin::Default),
            );
            url.to_owned()
        } else if let Some((Some(host), _)) = &gh.repo {
            origins.set(
                "githubApiUrl",
                Origin::Derived("the host GH_REPO names".to_owned()),
            );
            api_url_of_host(host)
        } else if let Some(host) = github_host {
            origins.set("githubApiUrl", Origin::Env("GH_HOST"));
            api_url_of_host(host)
        } else {
            "https://api.github.com".to_owned()
        };
        let default_labels = Labels::default();
        let mut label = |key: &'static str, default: &str| match keys.get(key) {
            Some(value) => {
                origins.set(key, keys.origin(key).unwrap_or(Origin::Default));
                value.to_owned()
            }
            None => default.to_owned(),
        };
        let labels = Labels {
            in_progress: label("inProgressLabel", &default_labels.in_progress),
            blocked_prefix: label("blockedLabelPrefix", &default_labels.blocked_prefix),
            wip: label("wipLabel", &default_labels.wip),
            pr: label("prLabel", &default_labels.pr),
            frontier: label("frontierLabel", &default_labels.frontier),
        };
        let dispatch_slots = match overrides.dispatch_slots {
            Some(n) => {
                origins.set("dispatchSlots", Origin::Flag("--dispatch-slots"));
                n
            }
            None => match keys.get("dispatchSlots") {
                Some(v) => {
                    origins.set(
                        "dispatchSlots",
                        keys.origin("dispatchSlots").unwrap_or(Origin::Default),
                    );
                    v.parse().map_err(|_| ConfigError::Invalid {
                        key: "dispatchSlots",
                        value: v.to_owned(),
                        expected: "a whole number",
                    })?
                }
                None => 3,
            },
        };
        let trusted_authors = match &overrides.trusted_authors {
            Some(list) => {
                origins.set("trustedAuthors", Origin::Flag("--trusted-authors"));
                list.clone()
            }
            None => match keys.get("trustedAuthors") {
                Some(list) => {
                    origins.set(
                        "trustedAuthors",
                        keys.origin("trustedAuthors").unwrap_or(Origin::Default),
                    );
                    split_list(list)
                }
                None => Vec::new(),
            },
        };
        let settle_default = match surface {
            SurfaceKind::Git => Duration::ZERO,
            SurfaceKind::Github => DEFAULT_GITHUB_SETTLE,
        };
        let mut pick = |flag: Option<Duration>,
                        flag_name: &'static str,
                        key: &'static str,
                        default: Duration|
         -> Result<Duration, ConfigError> {
            if let Some(value) = flag {
                origins.set(key, Origin::Flag(flag_name));
                return Ok(value);
            }
            match keys.duration(key)? {
                Some(value) => {
                    origins.set(key, keys.origin(key).unwrap_or(Origin::Default));
                    Ok(value)
                }
                None => Ok(default),
            }
        };
        let lease_ttl = pick(
            overrides.lease_ttl,
            "--lease-ttl",
            "leaseTtl",
            DEFAULT_LEASE_TTL,
        )?;
        let heartbeat_interval = pick(
            overrides.heartbeat_interval,
            "--heartbeat-interval",
            "heartbeatInterval",
            DEFAULT_HEARTBEAT,
        )?;
        let max_clock_skew = pick(
            overrides.max_clock_skew,
            "--max-clock-skew",
            "maxClockSkew",
            DEFAULT_MAX_CLOCK_SKEW,
        )?;
        let settle_delay = pick(
            overrides.settle_delay,
            "--settle-delay",
            "settleDelay",
            settle_default,
        )?;
        let dispatch_stale = pick(
            overrides.dispatch_stale,
            "--dispatch-stale",
            "dispatchStale",
            Duration::from_secs(4 * 3600),
        )?;
        // A flag's value was checked by its parser (exit 2, naming the flag);
        // a key's is checked here (exit 1, naming the key).
        for (key, flag, value) in [
            ("leaseTtl", overrides.lease_ttl, lease_ttl),
            (
                "heartbeatInterval",
                overrides.heartbeat_interval,
                heartbeat_interval,
            ),
            ("maxClockSkew", overrides.max_clock_skew, max_clock_skew),
        ] {
            if flag.is_some() {
                continue;
            }
            if let Err(expected) = crate::timefmt::check_lease_duration(value) {
                return Err(ConfigError::Invalid {
                    key,
                    value: keys.get(key).unwrap_or_default().to_owned(),
                    expected,
                });
            }
        }
        let worktree_dir = match (&overrides.worktree_dir, keys.get("worktreeDir")) {
            (Some(dir), _) => {
                origins.set("worktreeDir", Origin::Flag("--worktree-dir"));
                dir.clone()
            }
            (None, Some(dir)) => {
                origins.set(
                    "worktreeDir",
                    keys.origin("worktreeDir").unwrap_or(Origin::Default),
                );
                PathBuf::from(dir)
            }
            (None, None) => PathBuf::from(".maverick/worktrees"),
        };
        let (instance, instance_origin) = resolve_instance(git, &keys)?;
        origins.set("instance", instance_origin);
        let settings = Settings {
            surface,
            remote,
            remote_url,
            repo,
            github_api_url,
            lease_ttl,
            heartbeat_interval,
            max_clock_skew,
            settle_delay,
            worktree_dir,
            dispatch_slots,
            dispatch_stale,
            labels,
            trusted_authors,
            instance,
        };
        Ok((settings, origins))
    }
}

/// gh's own variables, read as gh reads them: `GH_REPO` is `[HOST/]OWNER/NAME`
/// (as `-R`), `GH_HOST` the GitHub host when nothing else names one.
#[derive(Debug, Default)]
struct GhEnv {
    repo: Option<(Option<String>, String)>,
    host: Option<String>,
}

impl GhEnv {
    fn read() -> Result<GhEnv, ConfigError> {
        let var = |name| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let repo = match var("GH_REPO") {
            Some(text) => Some(parse_repo(text.trim()).ok_or(ConfigError::BadGhRepo(text))?),
            None => None,
        };
        let host = var("GH_HOST").map(|h| h.trim().to_ascii_lowercase());
        Ok(GhEnv { repo, host })
    }
}

/// `OWNER/NAME` or `HOST/OWNER/NAME`: the host (if any) and `OWNER/NAME`.
fn parse_repo(text: &str) -> Option<(Option<String>, String)> {
    if valid_repo(text) {
        return Some((None, text.to_owned()));
    }
    let (host, repo) = text.split_once('/')?;
    (valid_host(host) && valid_repo(repo))
        .then(|| (Some(host.to_ascii_lowercase()), repo.to_owned()))
}

fn valid_host(host: &str) -> bool {
    !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | ':'))
}

/// gh's rule: github.com's API is api.github.com; GitHub Enterprise Server's
/// is `https://HOST/api/v3`.
pub(crate) fn api_url_of_host(host: &str) -> String {
    if host.eq_ignore_ascii_case("github.com") {
        "https://api.github.com".to_owned()
    } else {
        format!("https://{host}/api/v3")
    }
}

impl Default for Labels {
    fn default() -> Labels {
        Labels {
            in_progress: "claude-in-progress".to_owned(),
            blocked_prefix: "blocked-by:#".to_owned(),
            wip: "agent-wip".to_owned(),
            pr: "agent-pr".to_owned(),
            frontier: "agent-ready".to_owned(),
        }
    }
}

impl Settings {
    /// Every setting at its documented default, for `instance` on `surface`
    /// (the protocols' own tests start from these).
    pub fn defaults(surface: SurfaceKind, instance: &str) -> Settings {
        Settings {
            surface,
            remote: "origin".to_owned(),
            remote_url: None,
            repo: None,
            github_api_url: "https://api.github.com".to_owned(),
            lease_ttl: DEFAULT_LEASE_TTL,
            heartbeat_interval: DEFAULT_HEARTBEAT,
            max_clock_skew: DEFAULT_MAX_CLOCK_SKEW,
            settle_delay: match surface {
                SurfaceKind::Git => Duration::ZERO,
                SurfaceKind::Github => DEFAULT_GITHUB_SETTLE,
            },
            worktree_dir: PathBuf::from(".maverick/worktrees"),
            dispatch_slots: 3,
            dispatch_stale: Duration::from_secs(4 * 3600),
            labels: Labels::default(),
            trusted_authors: Vec::new(),
            instance: instance.to_owned(),
        }
    }
}

pub(crate) fn split_list(text: &str) -> Vec<String> {
    text.split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn valid_repo(repo: &str) -> bool {
    let ok = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    };
    matches!(repo.split_once('/'), Some((owner, name)) if ok(owner) && ok(name))
}

/// `OWNER/NAME` when the URL points at github.com or at `host` (`GH_HOST`, a
/// GitHub Enterprise Server).
pub(crate) fn github_repo_of_url_on(url: &str, gh_host: Option<&str>) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .or_else(|| url.strip_prefix("ssh://"))
        .or_else(|| url.strip_prefix("git://"))
        .map(|r| {
            // Drop userinfo.
            r.split_once('@')
                .filter(|(user, _)| !user.contains('/'))
                .map_or(r, |(_, host)| host)
                .to_owned()
        })
        .or_else(|| {
            // scp-like: git@github.com:owner/name.git
            let (userhost, path) = url.split_once(':')?;
            let host = userhost.rsplit('@').next()?;
            Some(format!("{host}/{path}"))
        })?;
    let (host, path) = rest.split_once('/')?;
    let host = host.split(':').next()?.to_ascii_lowercase();
    let named = gh_host.is_some_and(|h| h.split(':').next() == Some(host.as_str()));
    if host != "github.com" && host != "www.github.com" && !named {
        return None;
    }
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let repo = path.to_owned();
    valid_repo(&repo).then_some(repo)
}

pub(crate) fn valid_instance_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.starts_with(['.', '-'])
}

/// The instance id the environment names, which beats every other source
/// (SPEC 2); the pre-push hook uses it to avoid reading the configuration.
pub(crate) fn instance_from_env() -> Option<Result<String, ConfigError>> {
    let id = ["MAVERICK_INSTANCE", "MAVERICK_INSTANCE_ID"]
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))?;
    Some(if valid_instance_id(&id) {
        Ok(id)
    } else {
        Err(ConfigError::BadInstance(id))
    })
}

/// The agent session's variables, in Maverick's order of preference.
pub(crate) const SESSION_VARS: [&str; 2] = ["CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID"];

/// The instance id of the agent session the environment names, derived as
/// Maverick derives it, so that one session is one instance whichever tool
/// it runs (SPEC 2).
pub(crate) fn instance_from_session() -> Option<String> {
    SESSION_VARS
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
        .map(|session| session_instance_id(&session))
}

/// Maverick's derivation: the first 10 hex digits of the SHA-256 of the
/// session id, exactly as given (no trimming, no case folding).
pub(crate) fn session_instance_id(session: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(session.as_bytes());
    digest[..5].iter().map(|b| format!("{b:02x}")).collect()
}

/// The instance named explicitly: `MAVERICK_INSTANCE` (or
/// `MAVERICK_INSTANCE_ID`), else `maverick.instance` (SPEC 2's first two).
fn named_instance(keys: &ConfigKeys) -> Option<Result<(String, Origin), ConfigError>> {
    if let Some(id) = instance_from_env() {
        let var = if std::env::var_os("MAVERICK_INSTANCE").is_some_and(|v| !v.is_empty()) {
            "MAVERICK_INSTANCE"
        } else {
            "MAVERICK_INSTANCE_ID"
        };
        return Some(id.map(|id| (id, Origin::Env(var))));
    }
    let id = keys.get("instance")?.to_owned();
    Some(if valid_instance_id(&id) {
        Ok((id, keys.origin("instance").unwrap_or(Origin::Default)))
    } else {
        Err(ConfigError::BadInstance(id))
    })
}

/// The instance an agent session acts as, for the plugin's hooks, which get
/// the session id on stdin rather than in the environment: SPEC 2's order
/// (env, then config, then the session), with `session_id` as the session
/// when given. `None` when nothing names an instance or a session.
pub(crate) fn agent_session_instance(
    git: Option<&Git>,
    session_id: Option<&str>,
) -> Result<Option<String>, ConfigError> {
    let keys = match git {
        Some(git) => ConfigKeys::read(git)?,
        None => ConfigKeys(HashMap::new()),
    };
    if let Some(named) = named_instance(&keys) {
        return named.map(|(id, _)| Some(id));
    }
    Ok(session_id
        .filter(|s| !s.is_empty())
        .map(session_instance_id)
        .or_else(instance_from_session))
}

/// SPEC 2: env, then config, then the agent session, then one generated id
/// kept in this worktree's git dir.
fn resolve_instance(git: &Git, keys: &ConfigKeys) -> Result<(String, Origin), ConfigError> {
    resolve_instance_in(keys, || git.git_dir())
}

/// This clone's instance id with no setting but `maverick.instance` read,
/// for the pre-push hook: one `git config` process (git reads its own
/// files, includes and all), and the id kept in `git_dir` when none is set.
pub(crate) fn instance_of_clone(git: &Git, git_dir: Option<&Path>) -> Result<String, ConfigError> {
    let keys = ConfigKeys::read(git)?;
    let id = match git_dir {
        Some(dir) => resolve_instance_in(&keys, || Ok(dir.to_owned()))?,
        None => resolve_instance_in(&keys, || git.git_dir())?,
    };
    Ok(id.0)
}

fn resolve_instance_in(
    keys: &ConfigKeys,
    git_dir: impl FnOnce() -> Result<PathBuf, GitError>,
) -> Result<(String, Origin), ConfigError> {
    if let Some(named) = named_instance(keys) {
        return named;
    }
    if let Some(id) = instance_from_session() {
        let var = SESSION_VARS
            .iter()
            .copied()
            .find(|var| std::env::var(var).is_ok_and(|v| !v.is_empty()))
            .unwrap_or("CLAUDE_CODE_SESSION_ID");
        return Ok((id, Origin::Env(var)));
    }
    let path = git_dir()?.join("maverick").join("instance");
    let kept = Origin::Derived(format!("generated once, kept in {}", path.display()));
    if let Ok(text) = std::fs::read_to_string(&path) {
        let id = text.trim();
        if valid_instance_id(id) {
            return Ok((id.to_owned(), kept));
        }
    }
    let id = format!("{}-{}", short_hostname(), &crate::unique::unique_id()[..8]);
    let io_err = |source| ConfigError::InstanceFile {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(path.parent().expect("has a parent")).map_err(io_err)?;
    crate::records::files::write_atomically(&path, format!("{id}\n").as_bytes()).map_err(io_err)?;
    Ok((id, kept))
}

pub(crate) fn short_hostname() -> String {
    let raw = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let short: String = raw
        .trim()
        .split('.')
        .next()
        .unwrap_or_default()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(40)
        .collect();
    if short.is_empty() {
        "host".to_owned()
    } else {
        short
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_urls() {
        for url in [
            "https://github.com/acme/widgets.git",
            "https://github.com/acme/widgets",
            "https://x-access-token:abc@github.com/acme/widgets.git",
            "git@github.com:acme/widgets.git",
            "ssh://git@github.com/acme/widgets.git",
            "ssh://git@github.com:22/acme/widgets",
        ] {
            assert_eq!(
                github_repo_of_url_on(url, None).as_deref(),
                Some("acme/widgets"),
                "{url}"
            );
        }
        for url in [
            "/tmp/origin.git",
            "file:///tmp/origin.git",
            "git@gitlab.com:acme/widgets.git",
            "https://github.example.com/acme/widgets.git",
            "https://github.com/acme",
        ] {
            assert_eq!(github_repo_of_url_on(url, None), None, "{url}");
        }
    }

    #[test]
    fn session_ids_hash_as_maverick_does() {
        // printf %s '…' | sha256sum, first 10 hex digits.
        assert_eq!(session_instance_id(""), "e3b0c44298");
        assert_eq!(session_instance_id("abc"), "ba7816bf8f");
        assert_eq!(session_instance_id("9F1C-77aa-bb"), "eb3463a043");
        assert!(valid_instance_id(&session_instance_id("x")));
    }

    #[test]
    fn instance_ids() {
        assert!(valid_instance_id("laptop-1a2b3c4d"));
        assert!(valid_instance_id("claude_A.1"));
        for bad in ["", "-x", ".x", "a/b", "a b", &"x".repeat(65)] {
            assert!(!valid_instance_id(bad), "{bad}");
        }
    }
}
