//! The key registry: every `maverick.*` key git maverick reads, how each
//! value is parsed, and the unknown keys (a warning on every command).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use super::*;
use crate::git::{Git, GitError};
use crate::timefmt::parse_duration;

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
    KnownKey { name: "heartbeatInterval", default: "2m", about: "How often run settles its claim (it writes the lease when due)" },
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
    KnownKey { name: "protectBranches", default: "maverick/* alone", about: "More branch patterns git maverick protect has the server hold, comma-separated (maverick/* always)" },
];

#[derive(Debug)]
pub(super) struct ConfigEntry {
    pub(super) value: String,
    pub(super) origin: ConfigOrigin,
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
pub(crate) struct ConfigKeys(pub(super) HashMap<String, ConfigEntry>);

/// The `maverick.*` entries a [`ConfigKeys::read_along`] listed, and the
/// directory it listed them in, until the settings' first read there takes
/// them: one `git config` process for the colour and the settings.
static READ_ALONG: std::sync::Mutex<Option<(PathBuf, Vec<crate::git::ConfigEntry>)>> =
    std::sync::Mutex::new(None);

impl ConfigKeys {
    pub(crate) fn read(git: &Git) -> Result<ConfigKeys, GitError> {
        let mut kept = READ_ALONG.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((dir, entries)) = kept.take() {
            if dir == git.dir() {
                return Ok(ConfigKeys::of_entries(entries));
            }
        }
        drop(kept);
        Ok(ConfigKeys::of_entries(git.config_entries(r"^maverick\.")?))
    }

    /// The entries whose keys `other` (a regular expression, anchored)
    /// matches, listed by the same `git config` process as the `maverick.*`
    /// keys, which the first [`ConfigKeys::read`] in `git`'s directory then
    /// takes instead of asking git again. maverick writes no `maverick.*`
    /// key itself, so nothing it does in between changes them.
    pub(crate) fn read_along(
        git: &Git,
        other: &str,
    ) -> Result<Vec<crate::git::ConfigEntry>, GitError> {
        let (own, other): (Vec<_>, Vec<_>) = git
            .config_entries(&format!(r"^maverick\.|{other}"))?
            .into_iter()
            .partition(|e| e.key.to_ascii_lowercase().starts_with("maverick."));
        *READ_ALONG.lock().unwrap_or_else(|e| e.into_inner()) = Some((git.dir().to_owned(), own));
        Ok(other)
    }

    /// The keys of `entries`, which `git config --get-regexp` listed.
    pub(super) fn of_entries(entries: Vec<crate::git::ConfigEntry>) -> ConfigKeys {
        let mut keys = HashMap::new();
        for entry in entries {
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
        ConfigKeys(keys)
    }

    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.entry(key).map(|e| e.value.as_str())
    }

    pub(super) fn entry(&self, key: &str) -> Option<&ConfigEntry> {
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
pub(super) fn flag<T>(value: Option<T>, name: &'static str) -> Option<(T, Origin)> {
    value.map(|v| (v, Origin::Flag(name)))
}

/// An environment variable's value, when it is set and not empty.
pub(super) fn env_var(name: &'static str) -> Option<(String, Origin)> {
    std::env::var(name)
        .ok()
        .filter(|v| !v.is_empty())
        .map(|v| (v, Origin::Env(name)))
}

/// The documented default.
pub(super) fn default<T>(value: T) -> impl FnOnce() -> (T, Origin) {
    move || (value, Origin::Default)
}

/// A lease duration in a key (ttl, heartbeat interval, clock skew): whole
/// seconds, at least one. A flag's value was checked by its parser (exit 2,
/// naming the flag); a key's is checked here (exit 1, naming the key).
pub(super) fn lease_duration_key(key: &'static str, text: &str) -> Result<Duration, ConfigError> {
    let value = Duration::from_key(key, text)?;
    crate::timefmt::check_lease_duration(value).map_err(|expected| ConfigError::Invalid {
        key,
        value: text.to_owned(),
        expected,
    })?;
    Ok(value)
}
