//! Configuration and identity (SPEC sections 1 and 2): every tunable is a
//! `git config maverick.*` key with a flag that overrides it, and the choice
//! of surface is a pure function of config, flags and the remote URL.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::clock::Clock;
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
    /// How long one GitHub request may take before it is given up and retried.
    pub http_timeout: Duration,
    pub worktree_dir: PathBuf,
    pub dispatch_slots: u32,
    pub dispatch_stale: Duration,
    pub labels: Labels,
    pub trusted_authors: Vec<String>,
    pub instance: String,
    /// What time it is, and every wait: the system's, or a test's
    /// (`MAVERICK_CLOCK_FILE`).
    pub clock: Clock,
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

    /// Notes where the setting `name` came from; returns its value.
    fn keep<T>(&mut self, name: &'static str, (value, origin): (T, Origin)) -> T {
        self.set(name, origin);
        value
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
pub(crate) const DEFAULT_DISPATCH_STALE: Duration = Duration::from_secs(4 * 3600);
pub(crate) const DEFAULT_WORKTREE_DIR: &str = ".maverick/worktrees";

/// GitHub's lists lag; the git surface's writes are exact.
fn default_settle_delay(surface: SurfaceKind) -> Duration {
    match surface {
        SurfaceKind::Git => Duration::ZERO,
        SurfaceKind::Github => DEFAULT_GITHUB_SETTLE,
    }
}

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
        let place = Place::resolve(git, &keys, overrides, &mut origins)?;
        let timing = Timing::resolve(&keys, overrides, place.surface, &mut origins)?;
        let labels = Labels::resolve(&keys, &mut origins)?;
        let dispatch_slots = origins.keep(
            "dispatchSlots",
            keys.resolve(
                flag(overrides.dispatch_slots, "--dispatch-slots"),
                "dispatchSlots",
                default(3),
            )?,
        );
        let trusted_authors = origins.keep(
            "trustedAuthors",
            keys.resolve(
                flag(overrides.trusted_authors.clone(), "--trusted-authors"),
                "trustedAuthors",
                default(Vec::new()),
            )?,
        );
        let worktree_dir = origins.keep(
            "worktreeDir",
            keys.resolve(
                flag(overrides.worktree_dir.clone(), "--worktree-dir"),
                "worktreeDir",
                default(PathBuf::from(DEFAULT_WORKTREE_DIR)),
            )?,
        );
        let instance = origins.keep("instance", resolve_instance(git, &keys)?);
        let settings = Settings {
            surface: place.surface,
            remote: place.remote,
            remote_url: place.remote_url,
            repo: place.repo,
            github_api_url: place.github_api_url,
            lease_ttl: timing.lease_ttl,
            heartbeat_interval: timing.heartbeat_interval,
            max_clock_skew: timing.max_clock_skew,
            settle_delay: timing.settle_delay,
            http_timeout: timing.http_timeout,
            worktree_dir,
            dispatch_slots,
            dispatch_stale: timing.dispatch_stale,
            labels,
            trusted_authors,
            instance,
            clock: Clock::from_env(),
        };
        Ok((settings, origins))
    }
}

/// Where to coordinate: the remote, the surface, and on GitHub the
/// repository and its API.
struct Place {
    surface: SurfaceKind,
    remote: String,
    remote_url: Option<String>,
    repo: Option<String>,
    github_api_url: String,
}

impl Place {
    fn resolve(
        git: &Git,
        keys: &ConfigKeys,
        overrides: &Overrides,
        origins: &mut Origins,
    ) -> Result<Place, ConfigError> {
        let gh = GhEnv::read()?;
        let remote: String = origins.keep(
            "remote",
            keys.resolve(
                flag(overrides.remote.clone(), "--remote"),
                "remote",
                default("origin".to_owned()),
            )?,
        );
        let remote_url = push_url(git, &remote)?;
        origins.set(
            "remoteUrl",
            Origin::Derived(format!("git remote get-url --push {remote}")),
        );
        let flag_repo = match &overrides.repo {
            Some(r) => Some(parse_repo(r).ok_or_else(|| ConfigError::BadRepo(r.clone()))?),
            None => None,
        };
        let implied = Implied {
            flag_repo,
            gh: &gh,
            keys,
            remote: &remote,
            remote_url: remote_url.as_deref(),
        };
        let surface = origins.keep(
            "surface",
            keys.resolve(flag(overrides.surface, "--surface"), "surface", || {
                implied.surface()
            })?,
        );
        if surface == SurfaceKind::Git && remote_url.is_none() {
            return Err(ConfigError::NoRemote { remote });
        }
        let repo = origins.keep(
            "repo",
            keys.resolve_with(implied.repo_override(), "repo", repo_key, || implied.repo())?,
        );
        let github_api_url = origins.keep(
            "githubApiUrl",
            keys.resolve(env_var("GITHUB_API_URL"), "githubApiUrl", || {
                implied.api_url()
            })?,
        );
        Ok(Place {
            surface,
            remote,
            remote_url,
            repo,
            github_api_url,
        })
    }
}

/// The durations: of a lease and its heartbeats, of the settle, of a
/// dispatch claim, and of one GitHub request.
struct Timing {
    lease_ttl: Duration,
    heartbeat_interval: Duration,
    max_clock_skew: Duration,
    settle_delay: Duration,
    dispatch_stale: Duration,
    http_timeout: Duration,
}

impl Timing {
    fn resolve(
        keys: &ConfigKeys,
        overrides: &Overrides,
        surface: SurfaceKind,
        origins: &mut Origins,
    ) -> Result<Timing, ConfigError> {
        let mut lease_duration =
            |flag_value, flag_name, key, default_value| -> Result<Duration, ConfigError> {
                let found = keys.resolve_with(
                    flag(flag_value, flag_name),
                    key,
                    lease_duration_key,
                    default(default_value),
                )?;
                Ok(origins.keep(key, found))
            };
        let lease_ttl = lease_duration(
            overrides.lease_ttl,
            "--lease-ttl",
            "leaseTtl",
            DEFAULT_LEASE_TTL,
        )?;
        let heartbeat_interval = lease_duration(
            overrides.heartbeat_interval,
            "--heartbeat-interval",
            "heartbeatInterval",
            DEFAULT_HEARTBEAT,
        )?;
        let max_clock_skew = lease_duration(
            overrides.max_clock_skew,
            "--max-clock-skew",
            "maxClockSkew",
            DEFAULT_MAX_CLOCK_SKEW,
        )?;
        let settle_delay = origins.keep(
            "settleDelay",
            keys.resolve(
                flag(overrides.settle_delay, "--settle-delay"),
                "settleDelay",
                default(default_settle_delay(surface)),
            )?,
        );
        let dispatch_stale = origins.keep(
            "dispatchStale",
            keys.resolve(
                flag(overrides.dispatch_stale, "--dispatch-stale"),
                "dispatchStale",
                default(DEFAULT_DISPATCH_STALE),
            )?,
        );
        // Zero is no timeout at all: the default stands.
        let http_timeout = origins.keep(
            "httpTimeout",
            match keys.resolve(None, "httpTimeout", default(DEFAULT_HTTP_TIMEOUT))? {
                (zero, _) if zero.is_zero() => (DEFAULT_HTTP_TIMEOUT, Origin::Default),
                found => found,
            },
        );
        Ok(Timing {
            lease_ttl,
            heartbeat_interval,
            max_clock_skew,
            settle_delay,
            dispatch_stale,
            http_timeout,
        })
    }
}

impl Labels {
    fn resolve(keys: &ConfigKeys, origins: &mut Origins) -> Result<Labels, ConfigError> {
        let mut label = |key: &'static str, default_value: String| -> Result<String, ConfigError> {
            Ok(origins.keep(key, keys.resolve(None, key, default(default_value))?))
        };
        let defaults = Labels::default();
        Ok(Labels {
            in_progress: label("inProgressLabel", defaults.in_progress)?,
            blocked_prefix: label("blockedLabelPrefix", defaults.blocked_prefix)?,
            wip: label("wipLabel", defaults.wip)?,
            pr: label("prLabel", defaults.pr)?,
            frontier: label("frontierLabel", defaults.frontier)?,
        })
    }
}

/// A value a `maverick.*` key holds, read from its text.
pub(crate) trait KeyValue: Sized {
    fn from_key(key: &'static str, text: &str) -> Result<Self, ConfigError>;
}

impl KeyValue for String {
    fn from_key(_: &'static str, text: &str) -> Result<String, ConfigError> {
        Ok(text.to_owned())
    }
}

impl KeyValue for PathBuf {
    fn from_key(_: &'static str, text: &str) -> Result<PathBuf, ConfigError> {
        Ok(PathBuf::from(text))
    }
}

impl KeyValue for Duration {
    fn from_key(key: &'static str, text: &str) -> Result<Duration, ConfigError> {
        parse_duration(text).map_err(|source| ConfigError::Duration { key, source })
    }
}

impl KeyValue for u32 {
    fn from_key(key: &'static str, text: &str) -> Result<u32, ConfigError> {
        text.parse().map_err(|_| ConfigError::Invalid {
            key,
            value: text.to_owned(),
            expected: "a whole number",
        })
    }
}

/// A comma- (or space-) separated list.
impl KeyValue for Vec<String> {
    fn from_key(_: &'static str, text: &str) -> Result<Vec<String>, ConfigError> {
        Ok(split_list(text))
    }
}

impl KeyValue for SurfaceKind {
    fn from_key(key: &'static str, text: &str) -> Result<SurfaceKind, ConfigError> {
        match text {
            "git" => Ok(SurfaceKind::Git),
            "github" => Ok(SurfaceKind::Github),
            other => Err(ConfigError::Invalid {
                key,
                value: other.to_owned(),
                expected: "git or github",
            }),
        }
    }
}

impl ConfigKeys {
    /// One setting and where it came from: `over` (a flag, or an
    /// environment variable that beats the key) when there is one, else
    /// the key `key` as `T` reads it, else `otherwise` (the default, or
    /// what other settings imply).
    pub(crate) fn resolve<T: KeyValue>(
        &self,
        over: Option<(T, Origin)>,
        key: &'static str,
        otherwise: impl FnOnce() -> (T, Origin),
    ) -> Result<(T, Origin), ConfigError> {
        self.resolve_with(over, key, T::from_key, otherwise)
    }

    /// [`ConfigKeys::resolve`] with the key read by `parse`.
    pub(crate) fn resolve_with<T>(
        &self,
        over: Option<(T, Origin)>,
        key: &'static str,
        parse: impl FnOnce(&'static str, &str) -> Result<T, ConfigError>,
        otherwise: impl FnOnce() -> (T, Origin),
    ) -> Result<(T, Origin), ConfigError> {
        if let Some(found) = over {
            return Ok(found);
        }
        match self.entry(key) {
            Some(entry) => Ok((
                parse(key, &entry.value)?,
                Origin::Config(entry.origin.clone()),
            )),
            None => Ok(otherwise()),
        }
    }
}

/// A flag's value, when the command line gave it.
fn flag<T>(value: Option<T>, name: &'static str) -> Option<(T, Origin)> {
    value.map(|v| (v, Origin::Flag(name)))
}

/// An environment variable's value, when it is set and not empty.
fn env_var(name: &'static str) -> Option<(String, Origin)> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| (v, Origin::Env(name)))
}

/// The documented default.
fn default<T>(value: T) -> impl FnOnce() -> (T, Origin) {
    move || (value, Origin::Default)
}

/// A lease duration in a key (ttl, heartbeat interval, clock skew): whole
/// seconds, at least one. A flag's value was checked by its parser (exit 2,
/// naming the flag); a key's is checked here (exit 1, naming the key).
fn lease_duration_key(key: &'static str, text: &str) -> Result<Duration, ConfigError> {
    let value = Duration::from_key(key, text)?;
    crate::timefmt::check_lease_duration(value).map_err(|expected| ConfigError::Invalid {
        key,
        value: text.to_owned(),
        expected,
    })?;
    Ok(value)
}

/// `maverick.repo`: `OWNER/NAME`.
fn repo_key(key: &'static str, text: &str) -> Result<Option<String>, ConfigError> {
    if valid_repo(text) {
        Ok(Some(text.to_owned()))
    } else {
        Err(ConfigError::Invalid {
            key,
            value: text.to_owned(),
            expected: "OWNER/NAME",
        })
    }
}

/// The URL a push to `remote` goes to, as git resolves it (`pushurl`,
/// `insteadOf` and `pushInsteadOf` applied): the surface and the repository
/// are chosen from the URL every push uses (SPEC 2), never from the raw
/// `remote.<name>.url`. `None` when the remote is not configured.
fn push_url(git: &Git, remote: &str) -> Result<Option<String>, ConfigError> {
    match git.push_url(remote) {
        Ok(url) => Ok(Some(url)),
        Err(_) if git.config_get(&format!("remote.{remote}.url"))?.is_none() => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// What the settings that have no value of their own are worked out from.
struct Implied<'a> {
    /// `-R/--repo`, parsed: its host (if it names one) and `OWNER/NAME`.
    flag_repo: Option<(Option<String>, String)>,
    gh: &'a GhEnv,
    keys: &'a ConfigKeys,
    remote: &'a str,
    remote_url: Option<&'a str>,
}

impl Implied<'_> {
    /// The GitHub repository the remote's URL names, on github.com or
    /// `GH_HOST`.
    fn repo_of_remote(&self) -> Option<String> {
        self.github_remote().map(|(_, repo)| repo)
    }

    /// The GitHub host the remote is on (github.com or `GH_HOST`) and the
    /// repository there: the host is where its API, and so its token, goes.
    fn github_remote(&self) -> Option<(String, String)> {
        self.remote_url
            .and_then(|url| github_repo(url, self.gh.host.as_deref()))
    }

    /// The surface when nothing names one: GitHub when something names a
    /// GitHub repository or the remote is on GitHub, else git.
    fn surface(&self) -> (SurfaceKind, Origin) {
        let github = |why: String| (SurfaceKind::Github, Origin::Derived(why));
        if self.flag_repo.is_some() {
            return github("-R/--repo names a GitHub repository".to_owned());
        }
        if self.gh.repo.is_some() {
            return github("GH_REPO names a GitHub repository".to_owned());
        }
        if self.keys.get("repo").is_some() {
            return github("maverick.repo names a GitHub repository".to_owned());
        }
        let remote = self.remote;
        match self.github_remote() {
            Some((host, _)) => github(format!("the remote {remote:?} is on {host}")),
            None => (
                SurfaceKind::Git,
                Origin::Derived(format!("the remote {remote:?} is not on GitHub")),
            ),
        }
    }

    /// `-R/--repo`, else `GH_REPO`: both beat `maverick.repo`.
    fn repo_override(&self) -> Option<(Option<String>, Origin)> {
        if let Some((_, repo)) = &self.flag_repo {
            return Some((Some(repo.clone()), Origin::Flag("--repo")));
        }
        self.gh
            .repo
            .as_ref()
            .map(|(_, r)| (Some(r.clone()), Origin::Env("GH_REPO")))
    }

    /// The repository the remote's URL names.
    fn repo(&self) -> (Option<String>, Origin) {
        let why = format!("the URL of the remote {:?}", self.remote);
        (self.repo_of_remote(), Origin::Derived(why))
    }

    /// The API of the host `-R`, `GH_REPO` or the remote names, else
    /// `GH_HOST`'s, else github.com's ([`api_url_of_names`]).
    fn api_url(&self) -> (String, Origin) {
        let flag_host = self.flag_repo.as_ref().and_then(|(host, _)| host.clone());
        let remote = self.github_remote();
        api_url_of_names(
            flag_host.as_deref(),
            self.gh,
            remote.as_ref().map(|(host, _)| host.as_str()),
            self.remote,
        )
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

/// The API a repository's requests (and its token) go to when no URL is
/// set, from the host that names it: `-R HOST/…`, then `GH_REPO`'s host,
/// then the host the remote is on, and `GH_HOST` only when none names one
/// (gh's own order: `GH_HOST` never moves a repository whose remote says
/// where it lives).
fn api_url_of_names(
    flag_host: Option<&str>,
    gh: &GhEnv,
    remote_host: Option<&str>,
    remote: &str,
) -> (String, Origin) {
    let gh_repo_host = gh.repo.as_ref().and_then(|(host, _)| host.as_deref());
    let (host, origin) = if let Some(host) = flag_host {
        (host, Origin::Flag("--repo"))
    } else if let Some(host) = gh_repo_host {
        (host, Origin::Derived("the host GH_REPO names".to_owned()))
    } else if let Some(host) = remote_host.filter(|&h| {
        gh.host
            .as_deref()
            .is_some_and(|g| g.split(':').next() != Some(h))
    }) {
        let why = format!("the remote {remote:?} is on {host}");
        (host, Origin::Derived(why))
    } else if let Some(host) = gh.host.as_deref() {
        (host, Origin::Env("GH_HOST"))
    } else {
        return ("https://api.github.com".to_owned(), Origin::Default);
    };
    (api_url_of_host(host), origin)
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
            settle_delay: default_settle_delay(surface),
            http_timeout: DEFAULT_HTTP_TIMEOUT,
            worktree_dir: PathBuf::from(DEFAULT_WORKTREE_DIR),
            dispatch_slots: 3,
            dispatch_stale: DEFAULT_DISPATCH_STALE,
            labels: Labels::default(),
            trusted_authors: Vec::new(),
            instance: instance.to_owned(),
            clock: Clock::system(),
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

use maverick_core::remote::{github_repo, valid_repo};

pub(crate) use maverick_core::ids::valid_instance_id;

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

/// The agent session's variables, in Maverick's order of preference (Kiro
/// first: a Kiro session started inside Claude Code inherits Claude's).
pub(crate) const SESSION_VARS: [&str; 3] = [
    "KIRO_SESSION_ID",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_SESSION_ID",
];

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
    maverick_core::ids::InstanceId::of_session(session).into_string()
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
/// kept in this worktree's git dir. Maverick's `~/.maverick/instance_id` is
/// not read: Maverick rewrites it for each of its sessions, so reading it
/// would move a clone's id under its live claims (the session variable
/// already derives the same id inside a Maverick session).
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
