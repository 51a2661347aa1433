//! `git maverick protect install|status|remove`: the rule of one writer per
//! branch, held by the server (see `writer::protect` for what goes where).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use super::{Context, Outcome, Warning};
use crate::cli::GlobalArgs;
use crate::commands::error::{CommandError, ErrorCode, Exit};
use crate::surface::github::{ApiRuleset, GithubError};
use crate::surface::SurfaceError;
use crate::writer::hookfile::Change;
use crate::writer::protect::{self, HookState, Host, ProtectError};

#[derive(Debug, Args)]
pub(crate) struct ProtectArgs {
    #[command(subcommand)]
    pub command: ProtectCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ProtectCommand {
    /// Ask the server to refuse force pushes and deletions of managed
    /// branches (maverick/* and maverick.protectBranches) and of the
    /// coordination refs: a GitHub ruleset, or the update hook of a
    /// repository reached as a path. Running it again changes nothing
    Install(ChangeArgs),
    /// Whether the server enforces the rule now; exit 0 on, 1 off
    Status,
    /// Take maverick's ruleset, or its block of the update hook, away again
    Remove(ChangeArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ChangeArgs {
    /// Print exactly what would be written, and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

/// `protect install|status|remove --json`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ProtectOutput {
    /// `github`, `path` (a repository on this machine) or `elsewhere`.
    pub host: &'static str,
    /// `OWNER/NAME`, the repository's path, or the remote's host and path.
    pub location: String,
    /// The branch patterns protected, without `refs/heads/`.
    pub branches: Vec<String>,
    /// Whether the server refuses force pushes and deletions of them now
    /// (after a dry run: before it).
    pub enforced: bool,
    /// Whether `refs/maverick/*` (the git surface's refs) is covered too.
    pub coordination_refs: bool,
    /// What the command changed (or, with `--dry-run`, would change);
    /// null for `status`.
    pub change: Option<Change>,
    pub dry_run: bool,
    /// A repository reached as a path: its update hook and what it holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hook_state: Option<HookState>,
    /// GitHub: maverick's ruleset as found (null: there is none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ruleset: Option<RulesetView>,
    /// GitHub: what the found ruleset lacks of the rule.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<String>,
    /// With `--dry-run`: the request or the file text that would be written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub would_write: Option<WouldWrite>,
    /// What this server's rule cannot cover, said plainly.
    pub not_covered: Vec<String>,
}

/// maverick's ruleset on GitHub.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct RulesetView {
    pub id: u64,
    pub name: String,
    pub enforcement: String,
}

/// What a dry run would write.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum WouldWrite {
    Request {
        method: &'static str,
        path: String,
        /// The request's JSON body; null for DELETE.
        body: Option<Value>,
    },
    File {
        path: PathBuf,
        /// The file's whole text after; null when it would be deleted.
        text: Option<String>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Action {
    Install,
    Status,
    Remove,
}

pub(crate) fn run(
    global: &GlobalArgs,
    args: ProtectArgs,
) -> Result<Outcome<ProtectOutput>, CommandError> {
    let ctx = Context::load(global)?;
    let (action, dry_run) = match args.command {
        ProtectCommand::Install(a) => (Action::Install, a.dry_run),
        ProtectCommand::Status => (Action::Status, false),
        ProtectCommand::Remove(a) => (Action::Remove, a.dry_run),
    };
    ctx.report(protect(&ctx, action, dry_run))
}

fn protect(
    ctx: &Context,
    action: Action,
    dry_run: bool,
) -> Result<Outcome<ProtectOutput>, CommandError> {
    let patterns = protect::branch_patterns(&ctx.git)?;
    let host = protect::host(&ctx.git, &ctx.settings)?;
    let output = ProtectOutput {
        host: host.kind(),
        location: host.location(),
        branches: patterns.clone(),
        enforced: false,
        coordination_refs: false,
        change: None,
        dry_run,
        hook: None,
        hook_state: None,
        ruleset: None,
        gaps: Vec::new(),
        would_write: None,
        not_covered: Vec::new(),
    };
    let mut output = output;
    output.not_covered.extend(
        protect::uncovered(&ctx.git, &patterns)
            .into_iter()
            .map(|b| {
                format!(
                    "{b} is managed here but no protected pattern covers it: add it to {}",
                    protect::PATTERNS_KEY
                )
            }),
    );
    let outcome = match &host {
        Host::Path { path } => on_path(ctx, action, path, &patterns, output),
        Host::Github { repo } => on_github(ctx, action, repo, &patterns, output),
        Host::Elsewhere { location } => elsewhere(action, location, output),
    }?;
    if !dry_run {
        let record = protect::ProtectionRecord {
            host: host.kind().to_owned(),
            location: host.location(),
            enforced: outcome.output.enforced,
            checked_at: ctx.settings.clock.now().to_string(),
        };
        protect::remember(&ctx.git.common_dir()?, &record);
    }
    Ok(outcome)
}

/// A warning for `coord claim --branch` when protection was used from this
/// clone and local files say the server no longer holds the rule. Local
/// files only: a claim costs no request for it (a GitHub ruleset is as of
/// the last `protect` run; `protect status` asks).
pub(crate) fn warn_if_server_off<T, C>(ctx: &Context, outcome: Outcome<T, C>) -> Outcome<T, C> {
    // A clone that never used `protect` (most) pays one stat.
    if !ctx
        .git
        .common_dir()
        .is_ok_and(|dir| protect::checked_here(&dir))
    {
        return outcome;
    }
    match protect::known(&ctx.git, &ctx.settings) {
        Some(known) if known.checked_at.is_some() && known.enforced == Some(false) => {
            outcome.warn(Warning::new(known.describe()))
        }
        _ => outcome,
    }
}

/// `created the update hook …`, as `hook install` says it.
fn change_line(what: &str, change: Change, dry_run: bool) -> String {
    let verb = match (change, dry_run) {
        (Change::Created, false) => "created",
        (Change::Created, true) => "would create",
        (Change::Added, false) => "added maverick's block to",
        (Change::Added, true) => "would add maverick's block to",
        (Change::Updated, false) => "updated",
        (Change::Updated, true) => "would update",
        (Change::Unchanged, _) => "unchanged:",
        (Change::Removed, false) => "took maverick's block out of",
        (Change::Removed, true) => "would take maverick's block out of",
        (Change::Deleted, false) => "deleted",
        (Change::Deleted, true) => "would delete",
        (Change::Absent, _) => "nothing to remove:",
    };
    format!("{verb} {what}")
}

/// The verdict line, and exit 1 for a `status` that finds the rule off.
fn finish(action: Action, output: ProtectOutput, mut lines: Vec<String>) -> Outcome<ProtectOutput> {
    let covered = if output.coordination_refs {
        format!(
            "{} and {}",
            output.branches.join(", "),
            protect::COORDINATION_REFS
        )
    } else {
        output.branches.join(", ")
    };
    let verdict = if output.enforced {
        format!(
            "on: {} refuses force pushes and deletions of {covered}",
            output.location
        )
    } else {
        format!(
            "off: {} does not refuse force pushes or deletions of {covered}",
            output.location
        )
    };
    lines.push(match output.dry_run {
        true => format!("nothing written (dry run); now {verdict}"),
        false => verdict,
    });
    let exit = if action == Action::Status && !output.enforced {
        Exit::Error
    } else {
        Exit::Ok
    };
    let not_covered: Vec<Warning> = output.not_covered.iter().map(Warning::new).collect();
    let mut outcome = Outcome::new(exit, output).own_warnings(not_covered.clone());
    for warning in not_covered {
        outcome = outcome.warn(warning);
    }
    outcome.lines = lines;
    if action == Action::Status && !outcome.output.enforced && outcome.output.host != "elsewhere" {
        outcome = outcome.hint("git maverick protect install (--dry-run shows what it writes)");
    }
    outcome
}

// ---------------------------------------------------------------------------
// A repository reached as a path

fn on_path(
    ctx: &Context,
    action: Action,
    path: &std::path::Path,
    patterns: &[String],
    mut output: ProtectOutput,
) -> Result<Outcome<ProtectOutput>, CommandError> {
    let hook = protect::server_hook_path(&ctx.git, path).map_err(|e| {
        CommandError::from(e).hint(format!(
            "the remote {:?} should be a git repository at {}",
            ctx.settings.remote,
            path.display()
        ))
    })?;
    let before = protect::server_hook_state(&hook, patterns);
    output.coordination_refs = true;
    let mut lines = Vec::new();
    let state = match action {
        Action::Status => before,
        Action::Install | Action::Remove => {
            let planned = match action {
                Action::Install => protect::plan_install(&hook, patterns)?,
                _ => protect::plan_remove(&hook)?,
            };
            let change = planned.change;
            let what = format!("the update hook {}", hook.display());
            lines.push(change_line(&what, change, output.dry_run));
            output.change = Some(change);
            if output.dry_run {
                if !matches!(change, Change::Unchanged | Change::Absent) {
                    if let Some(text) = &planned.text {
                        lines.push(format!("--- {} would read:", hook.display()));
                        lines.extend(text.lines().map(str::to_owned));
                    }
                    output.would_write = Some(WouldWrite::File {
                        path: hook.clone(),
                        text: planned.text.clone(),
                    });
                }
                before
            } else {
                protect::write(&hook, &planned)?;
                protect::server_hook_state(&hook, patterns)
            }
        }
    };
    output.enforced = state == HookState::Current;
    let mut outcome = finish(action, output_with_hook(output, hook.clone(), state), lines);
    match state {
        HookState::NotExecutable => {
            outcome = outcome.hint(format!(
                "git does not run {}: make it executable (chmod +x {})",
                hook.display(),
                hook.display()
            ));
        }
        HookState::Outdated if action == Action::Status => {
            outcome = outcome.warn(Warning::new(format!(
                "the block in {} is for other branch patterns or another version; what it refuses is not what {} asks",
                hook.display(),
                protect::PATTERNS_KEY
            )));
        }
        _ => {}
    }
    Ok(outcome)
}

fn output_with_hook(mut output: ProtectOutput, hook: PathBuf, state: HookState) -> ProtectOutput {
    output.hook = Some(hook);
    output.hook_state = Some(state);
    output
}

// ---------------------------------------------------------------------------
// GitHub

fn on_github(
    ctx: &Context,
    action: Action,
    repo: &str,
    patterns: &[String],
    mut output: ProtectOutput,
) -> Result<Outcome<ProtectOutput>, CommandError> {
    let github = ctx.github_surface()?;
    if ctx.settings.surface == crate::config::SurfaceKind::Git {
        // The github surface keeps no refs of its own: nothing else to cover.
        output.not_covered.push(format!(
            "{} is not covered: a GitHub ruleset protects branches and tags, not other refs, so the git surface's refs on a GitHub remote stay unprotected (on GitHub, coordinate on the github surface)",
            protect::COORDINATION_REFS
        ));
    }
    let denied = |e: GithubError| admin_error(e, repo, action);
    let ours = github
        .rulesets()
        .map_err(denied)?
        .into_iter()
        .find(|r| r.name == protect::RULESET_NAME);
    let found = match &ours {
        Some(r) => Some(github.ruleset(r.id).map_err(denied)?),
        None => None,
    };
    let gaps = |r: &Option<ApiRuleset>| match r {
        Some(r) => protect::ruleset_gaps(r, patterns),
        None => vec!["there is none".to_owned()],
    };
    let body = protect::ruleset_body(patterns);
    let rulesets = format!("/repos/{repo}/rulesets");
    let mut lines = Vec::new();
    let after = match (action, &found) {
        (Action::Status, _) => found,
        (Action::Install, Some(r)) if gaps(&found).is_empty() => {
            output.change = Some(Change::Unchanged);
            lines.push(format!("unchanged: ruleset {} ({:?})", r.id, r.name));
            found
        }
        (Action::Install, existing) if output.dry_run => {
            let (method, path, change) = match existing {
                Some(r) => ("PUT", format!("{rulesets}/{}", r.id), Change::Updated),
                None => ("POST", rulesets.clone(), Change::Created),
            };
            lines.push(format!("would send {method} {path}:"));
            lines.extend(
                serde_json::to_string_pretty(&body)
                    .unwrap_or_default()
                    .lines()
                    .map(str::to_owned),
            );
            output.change = Some(change);
            output.would_write = Some(WouldWrite::Request {
                method,
                path,
                body: Some(body),
            });
            found
        }
        (Action::Install, existing) => {
            let (written, change) = match existing {
                Some(r) => (github.update_ruleset(r.id, &body), Change::Updated),
                None => (github.create_ruleset(&body), Change::Created),
            };
            let written = written.map_err(denied)?;
            lines.push(change_line(
                &format!("ruleset {} ({:?})", written.id, written.name),
                change,
                false,
            ));
            output.change = Some(change);
            Some(written)
        }
        (Action::Remove, None) => {
            output.change = Some(Change::Absent);
            lines.push(format!(
                "nothing to remove: {repo} has no ruleset {:?}",
                protect::RULESET_NAME
            ));
            None
        }
        (Action::Remove, Some(r)) if output.dry_run => {
            let path = format!("{rulesets}/{}", r.id);
            lines.push(format!("would send DELETE {path}"));
            output.change = Some(Change::Deleted);
            output.would_write = Some(WouldWrite::Request {
                method: "DELETE",
                path,
                body: None,
            });
            found
        }
        (Action::Remove, Some(r)) => {
            github.delete_ruleset(r.id).map_err(denied)?;
            lines.push(format!("deleted ruleset {} ({:?})", r.id, r.name));
            output.change = Some(Change::Deleted);
            None
        }
    };
    output.gaps = match &after {
        Some(_) => gaps(&after),
        None => Vec::new(),
    };
    output.enforced = after.is_some() && output.gaps.is_empty();
    output.ruleset = after.map(|r| RulesetView {
        id: r.id,
        name: r.name,
        enforcement: r.enforcement,
    });
    if action == Action::Status {
        lines.extend(
            output
                .gaps
                .iter()
                .map(|g| format!("ruleset {:?}: {g}", protect::RULESET_NAME)),
        );
    }
    Ok(finish(action, output, lines))
}

/// GitHub answers 403, or 404 for a repository it hides, when the token
/// may not administer the repository: say what to ask an admin for.
fn admin_error(err: GithubError, repo: &str, action: Action) -> CommandError {
    if !matches!(
        err,
        GithubError::Status {
            status: 403 | 404,
            ..
        }
    ) {
        return SurfaceError::from(err).into();
    }
    let command = match action {
        Action::Remove => "git maverick protect remove",
        _ => "git maverick protect install",
    };
    CommandError::tool(format!(
        "the GitHub token cannot administer the rulesets of {repo} ({err})"
    ))
    .code(ErrorCode::Github)
    .hint(format!(
        "ask an admin of {repo} for the Administration permission (a fine-grained token: \"Administration\" read and write; a classic token: the repo scope, as an admin), then run `{command}` again"
    ))
    .hint(format!(
        "or ask the admin to run `{command}` themselves (`--dry-run` prints the ruleset), or to create that ruleset in Settings > Rules > Rulesets"
    ))
}

impl From<ProtectError> for CommandError {
    fn from(err: ProtectError) -> Self {
        let err = match err {
            ProtectError::Git(e) => return e.into(),
            other => other,
        };
        let hint = match &err {
            ProtectError::Git(_) => None,
            ProtectError::BadPattern { .. } => Some(format!(
                "fix it: git config {} 'agent/*,release/*' (maverick/* is always protected)",
                protect::PATTERNS_KEY
            )),
            ProtectError::Hook { path, .. } => Some(format!(
                "add maverick's lines to {} yourself (`git maverick protect install --dry-run` prints them), or move that hook aside and install again",
                path.display()
            )),
        };
        let code = match &err {
            ProtectError::BadPattern { .. } => ErrorCode::BadConfig,
            ProtectError::Git(_) => ErrorCode::GitFailed,
            ProtectError::Hook { .. } => ErrorCode::Failed,
        };
        let mut e = CommandError::from_error(Exit::Error, err).code(code);
        e.hints.extend(hint);
        e
    }
}

// ---------------------------------------------------------------------------
// Anywhere else

fn elsewhere(
    action: Action,
    location: &str,
    mut output: ProtectOutput,
) -> Result<Outcome<ProtectOutput>, CommandError> {
    output.not_covered.push(format!(
        "git maverick cannot write the rule on {location}: protect the branches with the host's own branch protection"
    ));
    let patterns = output.branches.join(", ");
    let hints = [
        format!(
            "GitLab: Settings > Repository > Protected branches, a wildcard rule for {patterns} with \"Allowed to force push\" off"
        ),
        format!(
            "Gitea and Forgejo: Settings > Branches, a protection rule for {patterns} (force push and deletion are then refused)"
        ),
        "a bare repository you administer: on the server, run `git maverick protect install` in a clone whose remote is its path".to_owned(),
    ];
    if action == Action::Status {
        return Ok(hints
            .into_iter()
            .fold(finish(action, output, Vec::new()), Outcome::hint));
    }
    let error = CommandError::tool(format!(
        "git maverick cannot install protection on {location}: only GitHub and repositories reached as a path take it"
    ));
    Err(hints.into_iter().fold(error, CommandError::hint))
}
