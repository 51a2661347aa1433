//! The settings: every tunable with its default, resolved from flags, the
//! environment and `git config maverick.*`, and where each came from.

use std::path::PathBuf;
use std::time::Duration;

use super::*;
use crate::clock::Clock;
use crate::git::{Git, GitError};
use crate::timefmt::DurationError;
use maverick_core::ids::InstanceId;
use maverick_core::remote::{GithubHost, GITHUB_COM};

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
    /// The GitHub host the repository is on (github.com, or an Enterprise
    /// Server's): which of gh's tokens it takes.
    pub github_host: String,
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
    pub instance: InstanceId,
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
            github_host: place.github_host,
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
    github_host: String,
}

impl Place {
    pub(super) fn resolve(
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
        let github_host = implied.host().0.unwrap_or_else(|| GITHUB_COM.to_owned());
        Ok(Place {
            surface,
            remote,
            remote_url,
            repo,
            github_api_url,
            github_host,
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
    pub(super) fn resolve(
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
    pub(super) fn resolve(keys: &ConfigKeys, origins: &mut Origins) -> Result<Labels, ConfigError> {
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
    /// (the protocols' own tests start from these). Panics on an `instance`
    /// the core's rule refuses: a test's own mistake.
    pub fn defaults(surface: SurfaceKind, instance: &str) -> Settings {
        Settings {
            surface,
            remote: "origin".to_owned(),
            remote_url: None,
            repo: None,
            github_api_url: GithubHost::api_url(GITHUB_COM),
            github_host: GITHUB_COM.to_owned(),
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
            instance: InstanceId::parse(instance).expect("a valid instance id"),
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
