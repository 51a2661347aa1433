//! Configuration and identity (SPEC sections 1 and 2): every tunable is a
//! `git config maverick.*` key with a flag that overrides it, and the choice
//! of surface is a pure function of config, flags and the remote URL.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::git::{Git, GitError};
use crate::timefmt::{parse_duration, DurationError};

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, clap::ValueEnum)]
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
pub struct Overrides {
    pub surface: Option<SurfaceKind>,
    pub remote: Option<String>,
    pub repo: Option<String>,
    pub lease_ttl: Option<Duration>,
    pub heartbeat_interval: Option<Duration>,
    pub settle_delay: Option<Duration>,
    pub worktree_dir: Option<PathBuf>,
    pub dispatch_slots: Option<u32>,
    pub dispatch_stale: Option<Duration>,
    pub trusted_authors: Option<Vec<String>>,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct Labels {
    pub in_progress: String,
    /// `blocked-by:#` — the issue number follows.
    pub blocked_prefix: String,
    pub wip: String,
    pub pr: String,
    pub frontier: String,
}

impl Labels {
    pub fn blocked_by(&self, issue: u64) -> String {
        format!("{}{issue}", self.blocked_prefix)
    }

    /// The issue a `blocked-by:#N` label names.
    pub fn blocker(&self, label: &str) -> Option<u64> {
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
    pub settle_delay: Duration,
    pub worktree_dir: PathBuf,
    pub dispatch_slots: u32,
    pub dispatch_stale: Duration,
    pub labels: Labels,
    pub trusted_authors: Vec<String>,
    pub instance: String,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
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
    #[error("-R/--repo wants OWNER/NAME, not {0:?}")]
    BadRepo(String),
    #[error("the instance id {0:?} is not valid: use 1-64 letters, digits, '.', '_' or '-'")]
    BadInstance(String),
    #[error("could not keep the instance id in {path}: {source}")]
    InstanceFile {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// The `maverick.*` keys, read with one `git config` call (lower-cased names,
/// as git reports them; the last value of a key wins, as in git).
#[derive(Debug, Default)]
pub struct ConfigKeys(HashMap<String, String>);

impl ConfigKeys {
    pub fn read(git: &Git) -> Result<ConfigKeys, GitError> {
        let keys = git
            .config_matching(r"^maverick\.")?
            .into_iter()
            .map(|(key, value)| (key.to_ascii_lowercase(), value))
            .collect();
        Ok(ConfigKeys(keys))
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(&format!("maverick.{}", key.to_ascii_lowercase()))
            .map(String::as_str)
    }

    pub fn duration(&self, key: &'static str) -> Result<Option<Duration>, ConfigError> {
        self.get(key)
            .map(|v| parse_duration(v).map_err(|source| ConfigError::Duration { key, source }))
            .transpose()
    }
}

pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(600);
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(120);
/// GitHub's lists can lag a write by seconds; the git surface is exact.
pub const DEFAULT_GITHUB_SETTLE: Duration = Duration::from_secs(3);
/// How long one GitHub request may take before it is retried
/// (`maverick.httpTimeout`).
pub const DEFAULT_HTTP_TIMEOUT: Duration = Duration::from_secs(30);

impl Settings {
    pub fn load(git: &Git, overrides: &Overrides) -> Result<Settings, ConfigError> {
        let keys = ConfigKeys::read(git)?;
        let remote = overrides
            .remote
            .clone()
            .or_else(|| keys.get("remote").map(str::to_owned))
            .unwrap_or_else(|| "origin".to_owned());
        let remote_url = git.config_get(&format!("remote.{remote}.url"))?;
        let surface = match (overrides.surface, keys.get("surface")) {
            (Some(kind), _) => kind,
            (None, Some("git")) => SurfaceKind::Git,
            (None, Some("github")) => SurfaceKind::Github,
            (None, Some(other)) => {
                return Err(ConfigError::Invalid {
                    key: "surface",
                    value: other.to_owned(),
                    expected: "git or github",
                })
            }
            (None, None) if overrides.repo.is_some() || keys.get("repo").is_some() => {
                SurfaceKind::Github
            }
            (None, None) => match remote_url.as_deref().and_then(github_repo_of_url) {
                Some(_) => SurfaceKind::Github,
                None => SurfaceKind::Git,
            },
        };
        if surface == SurfaceKind::Git && remote_url.is_none() {
            return Err(ConfigError::NoRemote { remote });
        }
        let repo = match &overrides.repo {
            Some(r) if valid_repo(r) => Some(r.clone()),
            Some(r) => return Err(ConfigError::BadRepo(r.clone())),
            None => match keys.get("repo") {
                Some(r) if valid_repo(r) => Some(r.to_owned()),
                Some(r) => {
                    return Err(ConfigError::Invalid {
                        key: "repo",
                        value: r.to_owned(),
                        expected: "OWNER/NAME",
                    })
                }
                None => remote_url.as_deref().and_then(github_repo_of_url),
            },
        };
        let github_api_url = std::env::var("GITHUB_API_URL")
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| keys.get("githubApiUrl").map(str::to_owned))
            .unwrap_or_else(|| "https://api.github.com".to_owned());
        let default_labels = Labels::default();
        let label = |key: &str, default: &str| keys.get(key).unwrap_or(default).to_owned();
        let dispatch_slots = match overrides.dispatch_slots {
            Some(n) => n,
            None => match keys.get("dispatchSlots") {
                Some(v) => v.parse().map_err(|_| ConfigError::Invalid {
                    key: "dispatchSlots",
                    value: v.to_owned(),
                    expected: "a whole number",
                })?,
                None => 3,
            },
        };
        let trusted_authors = match &overrides.trusted_authors {
            Some(list) => list.clone(),
            None => keys
                .get("trustedAuthors")
                .map(split_list)
                .unwrap_or_default(),
        };
        let settle_default = match surface {
            SurfaceKind::Git => Duration::ZERO,
            SurfaceKind::Github => DEFAULT_GITHUB_SETTLE,
        };
        let lease_ttl = pick(
            overrides.lease_ttl,
            keys.duration("leaseTtl")?,
            DEFAULT_LEASE_TTL,
        );
        let heartbeat_interval = pick(
            overrides.heartbeat_interval,
            keys.duration("heartbeatInterval")?,
            DEFAULT_HEARTBEAT,
        );
        for (key, value) in [
            ("leaseTtl", lease_ttl),
            ("heartbeatInterval", heartbeat_interval),
        ] {
            if value.is_zero() {
                return Err(ConfigError::Invalid {
                    key,
                    value: "0".to_owned(),
                    expected: "a duration of at least 1s",
                });
            }
        }
        Ok(Settings {
            surface,
            remote,
            remote_url,
            repo,
            github_api_url,
            lease_ttl,
            heartbeat_interval,
            settle_delay: pick(
                overrides.settle_delay,
                keys.duration("settleDelay")?,
                settle_default,
            ),
            worktree_dir: overrides
                .worktree_dir
                .clone()
                .or_else(|| keys.get("worktreeDir").map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from(".maverick/worktrees")),
            dispatch_slots,
            dispatch_stale: pick(
                overrides.dispatch_stale,
                keys.duration("dispatchStale")?,
                Duration::from_secs(4 * 3600),
            ),
            labels: Labels {
                in_progress: label("inProgressLabel", &default_labels.in_progress),
                blocked_prefix: label("blockedLabelPrefix", &default_labels.blocked_prefix),
                wip: label("wipLabel", &default_labels.wip),
                pr: label("prLabel", &default_labels.pr),
                frontier: label("frontierLabel", &default_labels.frontier),
            },
            trusted_authors,
            instance: resolve_instance(git, &keys)?,
        })
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

fn pick(flag: Option<Duration>, key: Option<Duration>, default: Duration) -> Duration {
    flag.or(key).unwrap_or(default)
}

pub fn split_list(text: &str) -> Vec<String> {
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

/// `OWNER/NAME` when the URL points at github.com, in any of git's URL forms.
pub fn github_repo_of_url(url: &str) -> Option<String> {
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
    if host != "github.com" && host != "www.github.com" {
        return None;
    }
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let repo = path.to_owned();
    valid_repo(&repo).then_some(repo)
}

pub fn valid_instance_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.starts_with(['.', '-'])
}

/// The instance id the environment names, which beats every other source
/// (SPEC 2); the pre-push hook uses it to avoid reading the configuration.
pub fn instance_from_env() -> Option<Result<String, ConfigError>> {
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
pub const SESSION_VARS: [&str; 2] = ["CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID"];

/// The instance id of the agent session the environment names, derived as
/// Maverick derives it, so that one session is one instance whichever tool
/// it runs (SPEC 2).
pub fn instance_from_session() -> Option<String> {
    SESSION_VARS
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
        .map(|session| session_instance_id(&session))
}

/// Maverick's derivation: the first 10 hex digits of the SHA-256 of the
/// session id, exactly as given (no trimming, no case folding).
pub fn session_instance_id(session: &str) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(session.as_bytes());
    digest[..5].iter().map(|b| format!("{b:02x}")).collect()
}

/// SPEC 2: env, then config, then the agent session, then one generated id
/// kept in this worktree's git dir.
fn resolve_instance(git: &Git, keys: &ConfigKeys) -> Result<String, ConfigError> {
    if let Some(id) = instance_from_env() {
        return id;
    }
    if let Some(id) = keys.get("instance").map(str::to_owned) {
        return if valid_instance_id(&id) {
            Ok(id)
        } else {
            Err(ConfigError::BadInstance(id))
        };
    }
    if let Some(id) = instance_from_session() {
        return Ok(id);
    }
    let path = git.git_dir()?.join("maverick").join("instance");
    if let Ok(text) = std::fs::read_to_string(&path) {
        let id = text.trim();
        if valid_instance_id(id) {
            return Ok(id.to_owned());
        }
    }
    let id = format!(
        "{}-{}",
        short_hostname(),
        &crate::durable::markers::new_marker_id()[..8]
    );
    let io_err = |source| ConfigError::InstanceFile {
        path: path.display().to_string(),
        source,
    };
    std::fs::create_dir_all(path.parent().expect("has a parent")).map_err(io_err)?;
    crate::files::write_atomically(&path, format!("{id}\n").as_bytes()).map_err(io_err)?;
    Ok(id)
}

pub fn short_hostname() -> String {
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
                github_repo_of_url(url).as_deref(),
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
            assert_eq!(github_repo_of_url(url), None, "{url}");
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
