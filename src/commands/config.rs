//! `git maverick config`: every effective setting and where it came from,
//! as `gh config list` shows gh's.

use std::time::Duration;

use clap::Args;
use schemars::JsonSchema;
use serde::Serialize;

use super::{Outcome, Warning};
use crate::cli::GlobalArgs;
use crate::commands::error::{CommandError, Exit};
use crate::config::{Origin, Origins, Settings, SurfaceKind};
use crate::git::Git;

#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    /// Fail (exit 1) on an unknown maverick.* key instead of warning about it
    #[arg(long)]
    pub check: bool,
}

/// One line of the listing.
struct Entry {
    name: &'static str,
    value: String,
    origin: Origin,
}

/// `config --json`: every effective setting and where it came from, and
/// the `maverick.*` keys nothing reads (each also in `warnings`).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ConfigOutput {
    pub settings: Vec<Setting>,
    pub unknown_keys: Vec<UnknownKeyOutput>,
}

/// One effective setting.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Setting {
    pub name: &'static str,
    pub value: String,
    pub source: Source,
    /// Where the value came from, for people.
    pub from: String,
}

/// What set a setting.
#[derive(Clone, Copy, Debug, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Source {
    Default,
    Flag,
    Env,
    Config,
    Derived,
}

/// A `maverick.*` key nothing reads.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct UnknownKeyOutput {
    pub key: String,
    /// git's scope: `local`, `global`, `system`, `worktree` or `command`.
    pub scope: String,
    pub file: String,
    /// The known key it looks like: `maverick.leaseTtl`.
    pub suggestion: Option<String>,
}

pub(crate) fn run(
    global: &GlobalArgs,
    args: ConfigArgs,
) -> Result<Outcome<ConfigOutput>, CommandError> {
    let git = super::repository()?;
    let (settings, origins) = Settings::load_explained(&git, &global.overrides())?;
    if args.check && !origins.unknown_keys.is_empty() {
        {
            let names: Vec<&str> = origins
                .unknown_keys
                .iter()
                .map(|u| u.origin.key.as_str())
                .collect();
            let mut err = CommandError::tool(format!(
                "unknown config key{}: {}",
                if names.len() == 1 { "" } else { "s" },
                names.join(", ")
            ))
            .code(crate::commands::error::ErrorCode::BadConfig);
            for unknown in &origins.unknown_keys {
                let scope = match unknown.origin.scope.as_str() {
                    "local" | "global" | "system" | "worktree" => {
                        format!(" --{}", unknown.origin.scope)
                    }
                    _ => String::new(),
                };
                let guess = unknown
                    .suggestion
                    .map(|known| format!("did you mean maverick.{known}? "))
                    .unwrap_or_default();
                err = err.hint(format!(
                    "{}: {guess}remove it with `git config{scope} --unset {}`",
                    unknown.origin, unknown.origin.key
                ));
            }
            return Err(err);
        }
    }
    let entries = entries(&git, &settings, &origins);
    let width = entries.iter().map(|e| e.name.len()).max().unwrap_or(0);
    let value_width = entries
        .iter()
        .map(|e| e.value.len())
        .max()
        .unwrap_or(0)
        .min(40);
    let output = ConfigOutput {
        settings: entries
            .iter()
            .map(|e| Setting {
                name: e.name,
                value: e.value.clone(),
                source: source_kind(&e.origin),
                from: e.origin.to_string(),
            })
            .collect(),
        unknown_keys: origins
            .unknown_keys
            .iter()
            .map(|u| UnknownKeyOutput {
                key: u.origin.key.clone(),
                scope: u.origin.scope.clone(),
                file: u.origin.file.clone(),
                suggestion: u.suggestion.map(|s| format!("maverick.{s}")),
            })
            .collect(),
    };
    let mut outcome = Outcome::new(Exit::Ok, output);
    for entry in &entries {
        outcome = outcome.line(format!(
            "{:width$}  {:value_width$}  {}",
            entry.name, entry.value, entry.origin
        ));
    }
    for unknown in &origins.unknown_keys {
        outcome = outcome.warn(Warning::new(unknown.to_string()));
    }
    Ok(outcome)
}

fn source_kind(origin: &Origin) -> Source {
    match origin {
        Origin::Default => Source::Default,
        Origin::Flag(_) => Source::Flag,
        Origin::Env(_) => Source::Env,
        Origin::Config(_) => Source::Config,
        Origin::Derived(_) => Source::Derived,
    }
}

fn duration(d: Duration) -> String {
    if d.subsec_millis() != 0 {
        format!("{}ms", d.as_millis())
    } else {
        crate::timefmt::format_duration(d)
    }
}

fn entries(git: &Git, s: &Settings, origins: &Origins) -> Vec<Entry> {
    let entry = |name: &'static str, value: String| Entry {
        name,
        value,
        origin: origins.get(name),
    };
    vec![
        entry("surface", s.surface.to_string()),
        entry("remote", s.remote.clone()),
        entry(
            "remoteUrl",
            s.remote_url.clone().unwrap_or_else(|| "(none)".to_owned()),
        ),
        entry(
            "repo",
            s.repo.clone().unwrap_or_else(|| "(none)".to_owned()),
        ),
        entry("instance", s.instance.to_string()),
        entry("githubApiUrl", s.github_api_url.clone()),
        token_entry(s),
        hook_entry(git),
        entry("leaseTtl", duration(s.lease_ttl)),
        entry("heartbeatInterval", duration(s.heartbeat_interval)),
        entry("maxClockSkew", duration(s.max_clock_skew)),
        entry("settleDelay", duration(s.settle_delay)),
        entry("httpTimeout", duration(s.http_timeout)),
        entry("worktreeDir", s.worktree_dir.display().to_string()),
        entry("dispatchSlots", s.dispatch_slots.to_string()),
        entry("dispatchStale", duration(s.dispatch_stale)),
        entry(
            "trustedAuthors",
            if s.trusted_authors.is_empty() {
                "(none)".to_owned()
            } else {
                s.trusted_authors.join(",")
            },
        ),
        entry("inProgressLabel", s.labels.in_progress.clone()),
        entry("blockedLabelPrefix", s.labels.blocked_prefix.clone()),
        entry("wipLabel", s.labels.wip.clone()),
        entry("prLabel", s.labels.pr.clone()),
        entry("frontierLabel", s.labels.frontier.clone()),
        protect_entry(git),
    ]
}

/// The branch patterns `git maverick protect` has the server hold.
fn protect_entry(git: &Git) -> Entry {
    use crate::writer::protect::{branch_patterns, PATTERNS_KEY};
    let (value, origin) = match branch_patterns(git) {
        Ok(patterns) if patterns.len() == 1 => (patterns.join(","), Origin::Default),
        Ok(patterns) => (
            patterns.join(","),
            Origin::Derived(format!("maverick/* and {PATTERNS_KEY}")),
        ),
        Err(err) => ("(invalid)".to_owned(), Origin::Derived(err.to_string())),
    };
    Entry {
        name: "protectBranches",
        value,
        origin,
    }
}

/// Where the GitHub token comes from; never the token.
fn token_entry(s: &Settings) -> Entry {
    let (value, origin) = if s.surface != SurfaceKind::Github {
        ("(not used)".to_owned(), Origin::Default)
    } else {
        match crate::surface::github::resolve_token(&s.github_host) {
            Ok(token) => (
                "set (never shown)".to_owned(),
                Origin::Derived(format!("from {}", token.source())),
            ),
            Err(err) => ("(none)".to_owned(), Origin::Derived(err.to_string())),
        }
    };
    Entry {
        name: "token",
        value,
        origin,
    }
}

/// Whether this clone's pre-push hook runs maverick's check.
fn hook_entry(git: &Git) -> Entry {
    let (value, origin) = match crate::writer::hookfile::hook_path(git) {
        Ok(path) => {
            let shown = Origin::Derived(path.display().to_string());
            // An earlier version's copy is known before its megabytes are read as text.
            let copy = crate::writer::hookfile::is_legacy_copy(&path);
            let text = if copy {
                String::new()
            } else {
                std::fs::read_to_string(&path).unwrap_or_default()
            };
            if copy || text.contains(crate::writer::hookfile::BEGIN) {
                ("installed".to_owned(), shown)
            } else if text.contains("maverick hook pre-push") {
                ("called by another hook manager".to_owned(), shown)
            } else {
                (
                    "not installed".to_owned(),
                    Origin::Derived("run `git maverick hook install`".to_owned()),
                )
            }
        }
        Err(err) => ("unknown".to_owned(), Origin::Derived(err.to_string())),
    };
    Entry {
        name: "prePushHook",
        value,
        origin,
    }
}
