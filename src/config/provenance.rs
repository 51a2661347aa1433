//! Provenance: where each setting's value came from (a flag, the
//! environment, a git config file, a default, or what it was derived from),
//! as `git maverick config` shows it.

use super::*;

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

/// Where each setting came from, by its key name (`leaseTtl`), plus the
/// settings that are not keys: `remoteUrl`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Origins {
    pub of: Vec<(&'static str, Origin)>,
    pub unknown_keys: Vec<UnknownKey>,
}

impl Origins {
    pub(super) fn set(&mut self, name: &'static str, origin: Origin) {
        self.of.retain(|(n, _)| *n != name);
        self.of.push((name, origin));
    }

    /// Notes where the setting `name` came from; returns its value.
    pub(super) fn keep<T>(&mut self, name: &'static str, (value, origin): (T, Origin)) -> T {
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
