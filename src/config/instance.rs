//! The instance id (SPEC 2): resolved once, by one precedence.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::*;
use crate::git::{Git, GitError};

#[cfg(test)]
use maverick_core::ids::valid_instance_id;
use maverick_core::ids::InstanceId;

/// `id` as this instance's own: the core's one rule, or the error that
/// names the rule.
fn own_instance(id: String) -> Result<InstanceId, ConfigError> {
    InstanceId::parse(&id).map_err(|_| ConfigError::BadInstance(id))
}

/// The instance id the environment names, which beats every other source
/// (SPEC 2); the pre-push hook uses it to avoid reading the configuration.
pub(crate) fn instance_from_env() -> Option<Result<InstanceId, ConfigError>> {
    let id = ["MAVERICK_INSTANCE", "MAVERICK_INSTANCE_ID"]
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))?;
    Some(own_instance(id))
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
pub(crate) fn instance_from_session() -> Option<InstanceId> {
    SESSION_VARS
        .iter()
        .find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()))
        .map(|session| session_instance_id(&session))
}

/// Maverick's derivation: the first 10 hex digits of the SHA-256 of the
/// session id, exactly as given (no trimming, no case folding).
pub(crate) fn session_instance_id(session: &str) -> InstanceId {
    InstanceId::of_session(session)
}

/// The instance named explicitly: `MAVERICK_INSTANCE` (or
/// `MAVERICK_INSTANCE_ID`), else `maverick.instance` (SPEC 2's first two).
pub(super) fn named_instance(
    keys: &ConfigKeys,
) -> Option<Result<(InstanceId, Origin), ConfigError>> {
    if let Some(id) = instance_from_env() {
        let var = if std::env::var_os("MAVERICK_INSTANCE").is_some_and(|v| !v.is_empty()) {
            "MAVERICK_INSTANCE"
        } else {
            "MAVERICK_INSTANCE_ID"
        };
        return Some(id.map(|id| (id, Origin::Env(var))));
    }
    let id = keys.get("instance")?.to_owned();
    let origin = keys.origin("instance").unwrap_or(Origin::Default);
    Some(own_instance(id).map(|id| (id, origin)))
}

/// The instance an agent session acts as, for the plugin's hooks, which get
/// the session id on stdin rather than in the environment: SPEC 2's order
/// (env, then config, then the session), with `session_id` as the session
/// when given. `None` when nothing names an instance or a session.
pub(crate) fn agent_session_instance(
    git: Option<&Git>,
    session_id: Option<&str>,
) -> Result<Option<InstanceId>, ConfigError> {
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
pub(super) fn resolve_instance(
    git: &Git,
    keys: &ConfigKeys,
) -> Result<(InstanceId, Origin), ConfigError> {
    resolve_instance_in(keys, || git.git_dir())
}

/// This clone's instance id with no setting but `maverick.instance` read,
/// for the pre-push hook: one `git config` process (git reads its own
/// files, includes and all), and the id kept in `git_dir` when none is set.
/// With it, the `include.path` and `includeIf.*.path` entries the same
/// process listed: the files git read beyond its standard ones, which the
/// hook's stamp of this resolution watches.
pub(crate) fn instance_of_clone(
    git: &Git,
    git_dir: Option<&Path>,
) -> Result<(InstanceId, Vec<crate::git::ConfigEntry>), ConfigError> {
    let (own, includes) = git
        .config_entries(r"^(maverick\.|include\.path$|includeif\..*\.path$)")?
        .into_iter()
        .partition(|e| e.key.to_ascii_lowercase().starts_with("maverick."));
    let keys = ConfigKeys::of_entries(own);
    let id = match git_dir {
        Some(dir) => resolve_instance_in(&keys, || Ok(dir.to_owned()))?,
        None => resolve_instance_in(&keys, || git.git_dir())?,
    };
    Ok((id.0, includes))
}

pub(super) fn resolve_instance_in(
    keys: &ConfigKeys,
    git_dir: impl FnOnce() -> Result<PathBuf, GitError>,
) -> Result<(InstanceId, Origin), ConfigError> {
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
        if let Ok(id) = InstanceId::parse(text.trim()) {
            return Ok((id, kept));
        }
    }
    let id = own_instance(format!(
        "{}-{}",
        short_hostname(),
        &crate::unique::unique_id()[..8]
    ))?;
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
    pub(super) fn session_ids_hash_as_maverick_does() {
        // printf %s '…' | sha256sum, first 10 hex digits.
        assert_eq!(session_instance_id(""), "e3b0c44298");
        assert_eq!(session_instance_id("abc"), "ba7816bf8f");
        assert_eq!(session_instance_id("9F1C-77aa-bb"), "eb3463a043");
        assert!(valid_instance_id(session_instance_id("x").as_str()));
    }

    #[test]
    pub(super) fn instance_ids() {
        assert!(valid_instance_id("laptop-1a2b3c4d"));
        assert!(valid_instance_id("claude_A.1"));
        for bad in ["", "-x", ".x", "a/b", "a b", &"x".repeat(65)] {
            assert!(!valid_instance_id(bad), "{bad}");
        }
    }
}
