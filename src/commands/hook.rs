//! `git maverick hook`: the pre-push hook (SPEC 8) and the Claude Code
//! plugin's session and tool-use hooks (SPEC 11).

use std::io::Read as _;

use std::path::PathBuf;

use clap::{Args, Subcommand};
use schemars::JsonSchema;
use serde::Serialize;

use super::Outcome;
use crate::cli::GlobalArgs;
use crate::coord::claims;
use crate::coord::lease::Coordinator;
use crate::error::{CommandError, Exit};
use crate::git::{Git, GitEnv};
use crate::records::claim::ClaimStore;
use crate::timefmt::Timestamp;
use crate::writer::bash_guard;
use crate::writer::guard::{self, PushInput, Verdict};
use crate::writer::hookfile::Change;
use crate::writer::hookmanager::Manager;
use crate::writer::hookmanager::{self, Setup, Status};
use crate::writer::prepush::{self, Refusal, RefusalKind};

#[derive(Debug, Args)]
pub(crate) struct HookArgs {
    #[command(subcommand)]
    pub command: HookCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum HookCommand {
    /// Install the pre-push hook where git looks for it (core.hooksPath and
    /// linked worktrees respected); an existing hook keeps working
    Install,
    /// Take maverick's block out of the pre-push hook and every copy hook
    /// managers left of it (the file too, if nothing else is in it)
    Uninstall,
    /// Whether the next push from here runs the guard, and through what;
    /// exit 0 on, 1 off
    Status,
    /// The check the pre-push hook runs: reads git's ref lines on stdin.
    /// Call it from other hook managers as `git maverick hook pre-push "$@"`
    #[command(hide = true)]
    PrePush(PrePushArgs),
    /// Claude Code's SessionStart hook: exports the session's instance id
    /// through CLAUDE_ENV_FILE and reports the claims it still holds
    #[command(hide = true)]
    SessionStart,
    /// Claude Code's SessionEnd hook: releases every claim of the session's
    /// instance
    #[command(hide = true)]
    SessionEnd,
    /// Claude Code's PreToolUse hook for the Bash tool: denies pushes that
    /// skip the guard, force or delete a managed branch, or write to a
    /// branch another instance holds
    #[command(hide = true)]
    PreToolUse,
}

#[derive(Debug, Args)]
pub(crate) struct PrePushArgs {
    /// The remote's name (or its URL when the push named a URL); without
    /// it, pre-commit's PRE_COMMIT_* variables say what is pushed
    // Its own id: `remote` is the global --remote option's.
    #[arg(id = "push_remote", value_name = "REMOTE")]
    pub remote: Option<String>,
    /// The remote's URL
    #[arg(id = "push_url", value_name = "URL")]
    pub url: Option<String>,
}

/// `git-maverick hook pre-push REMOTE URL`, the shape git's hook file
/// runs on every push, read without clap (whose command tree is most of a
/// start-up). `None`: anything else, for clap.
pub(crate) fn fast_pre_push(args: &[std::ffi::OsString]) -> Option<PrePushArgs> {
    let words: Vec<&str> = args
        .iter()
        .skip(1)
        .map(|a| a.to_str())
        .collect::<Option<_>>()?;
    let ["hook", "pre-push", remote, url] = words.as_slice() else {
        return None;
    };
    // An option among them is clap's to read (git never passes one).
    if remote.starts_with('-') || url.starts_with('-') {
        return None;
    }
    Some(PrePushArgs {
        remote: Some((*remote).to_owned()),
        url: Some((*url).to_owned()),
    })
}

/// What a `hook` subcommand prints with `--json`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum HookOutput {
    Install(Box<InstallOutput>),
    Uninstall(UninstallOutput),
    Status(Status),
    PrePush(PrePushOutput),
    SessionEnd(SessionEndOutput),
    /// Claude Code's hook answer (session-start, pre-tool-use).
    Agent(AgentAnswer),
    /// An agent hook that failed and let the session go on.
    AgentFailed(AgentHookFailed),
}

/// `hook install --json`: the guard put where this clone's hook manager
/// runs it; `status` says whether it is on now.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct InstallOutput {
    pub manager: Manager,
    pub hook: PathBuf,
    /// What happened to the last file touched; null when nothing was
    /// written (`lines_to_add`).
    pub change: Option<Change>,
    /// Each file, and what happened to it.
    pub changes: Vec<(PathBuf, Change)>,
    /// A manager config maverick does not edit, and the lines to add to it.
    pub lines_to_add: Option<(PathBuf, String)>,
    pub status: Status,
}

/// `hook uninstall --json`: the guard's block taken out; the rest of each
/// hook stays.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct UninstallOutput {
    pub manager: Manager,
    pub hook: PathBuf,
    pub change: Change,
    pub changes: Vec<(PathBuf, Change)>,
}

/// `hook pre-push REMOTE [URL] --json`: the pre-push check.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PrePushOutput {
    pub remote: String,
    pub allowed: bool,
    /// The managed branches checked.
    pub checked: Vec<String>,
    /// The pushing instance, when the push was refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refusals: Vec<Refusal>,
}

/// `hook session-end --json`: the claims the session's instance released.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SessionEndOutput {
    pub instance_id: String,
    pub released: Vec<u64>,
}

/// A Claude Code hook's answer on stdout.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum AgentAnswer {
    Speak {
        #[serde(rename = "hookSpecificOutput")]
        output: HookSpecificOutput,
    },
    /// pre-tool-use: allowed, nothing to say.
    Allow {
        #[serde(rename = "permissionDecision")]
        decision: Option<String>,
    },
}

/// Claude Code's `hookSpecificOutput`.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct HookSpecificOutput {
    pub hook_event_name: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub additional_context: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_decision: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission_decision_reason: Option<String>,
}

/// An agent hook that failed: the session goes on.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct AgentHookFailed {
    pub hook: String,
    pub error: String,
}

pub(crate) fn run(
    global: &GlobalArgs,
    args: HookArgs,
) -> Result<Outcome<HookOutput>, CommandError> {
    match args.command {
        HookCommand::Install => install().map(|o| o.map(|i| HookOutput::Install(Box::new(i)))),
        HookCommand::Uninstall => uninstall().map(|o| o.map(HookOutput::Uninstall)),
        HookCommand::Status => status().map(|o| o.map(HookOutput::Status)),
        HookCommand::PrePush(a) => pre_push(global, a).map(|o| o.map(HookOutput::PrePush)),
        HookCommand::SessionStart => never_fails("session-start", session_start()),
        HookCommand::SessionEnd => never_fails("session-end", session_end(global)),
        HookCommand::PreToolUse => never_fails("pre-tool-use", pre_tool_use()),
    }
}

/// What Claude Code sends a command hook on stdin (the fields maverick
/// reads; the rest is ignored).
#[derive(Debug, Default, serde::Deserialize)]
struct AgentHookInput {
    session_id: Option<String>,
    cwd: Option<std::path::PathBuf>,
    tool_name: Option<String>,
    #[serde(default)]
    tool_input: serde_json::Value,
}

/// A hook never breaks the agent's session (SPEC 11): an error is one line
/// on stderr, and the answer is "no objection".
fn never_fails(
    hook: &str,
    result: Result<Outcome<HookOutput>, CommandError>,
) -> Result<Outcome<HookOutput>, CommandError> {
    Ok(result.unwrap_or_else(|err| {
        let message = err.to_string();
        let first = message.lines().next().unwrap_or_default();
        let failed = AgentHookFailed {
            hook: hook.to_owned(),
            error: first.to_owned(),
        };
        Outcome::new(Exit::Ok, HookOutput::AgentFailed(failed)).note(format!(
            "git maverick hook {hook}: {}",
            first.trim_start_matches("error: ")
        ))
    }))
}

/// Reads the hook's JSON and moves to the session's directory.
fn agent_hook_input() -> Result<AgentHookInput, CommandError> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| CommandError::tool(format!("cannot read the hook input on stdin: {e}")))?;
    let input: AgentHookInput = if text.trim().is_empty() {
        AgentHookInput::default()
    } else {
        serde_json::from_str(&text)
            .map_err(|e| CommandError::tool(format!("the hook input is not JSON: {e}")))?
    };
    if let Some(cwd) = &input.cwd {
        std::env::set_current_dir(cwd).map_err(|e| {
            CommandError::tool(format!(
                "cannot enter the session's cwd {}: {e}",
                cwd.display()
            ))
        })?;
    }
    Ok(input)
}

/// The instance the session acts as, resolved as every command resolves it
/// (SPEC 2: env, then `maverick.instance`, then the session, here the
/// `session_id` of the hook's input).
fn session_instance(input: &AgentHookInput) -> Result<String, CommandError> {
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    let git = Git::new(cwd, GitEnv::inherit());
    let in_repo = git.is_repository().unwrap_or(false);
    crate::config::agent_session_instance(in_repo.then_some(&git), input.session_id.as_deref())?
        .ok_or_else(|| CommandError::tool("the hook input names no session_id"))
}

fn session_start() -> Result<Outcome<HookOutput>, CommandError> {
    let input = agent_hook_input()?;
    let me = session_instance(&input)?;
    if let Some(path) = std::env::var_os("CLAUDE_ENV_FILE").filter(|p| !p.is_empty()) {
        use std::io::Write as _;
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| writeln!(f, "export MAVERICK_INSTANCE={me}").map(|()| f));
        if let Err(e) = file.as_mut() {
            return Err(CommandError::tool(format!(
                "cannot write CLAUDE_ENV_FILE {}: {e}",
                std::path::Path::new(&path).display()
            )));
        }
    }
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    let held = match Git::new(&cwd, GitEnv::inherit()).common_dir() {
        Ok(dir) if !prepush::maverick_absent(&dir) => ClaimStore::new(&dir).of_instance(&me)?,
        _ => Vec::new(),
    };
    let mut context = format!("git maverick: this session acts as instance {me}.");
    if !held.is_empty() {
        context.push_str(" It still holds these claims from before:");
        for c in &held {
            context.push_str(&format!(
                "\n- #{} (generation {}, branch {}, lease expires {})",
                c.issue,
                c.generation,
                c.branch.as_deref().unwrap_or("-"),
                c.expires_at
            ));
        }
        context.push_str(
            "\nResume the work (git maverick coord heartbeat ISSUE keeps the lease), or release \
             what you will not finish (git maverick coord release ISSUE --reason abort).",
        );
    }
    Ok(agent_answer(HookSpecificOutput {
        hook_event_name: "SessionStart",
        additional_context: Some(context),
        permission_decision: None,
        permission_decision_reason: None,
    }))
}

/// Claude Code reads the answer on stdout, with or without `--json`.
fn agent_answer(output: HookSpecificOutput) -> Outcome<HookOutput> {
    let answer = AgentAnswer::Speak { output };
    let line = super::json_line(&answer);
    Outcome::new(Exit::Ok, HookOutput::Agent(answer)).line(line)
}

fn session_end(global: &GlobalArgs) -> Result<Outcome<HookOutput>, CommandError> {
    let input = agent_hook_input()?;
    let me = session_instance(&input)?;
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    // Nothing held: no configuration read, no surface, no network.
    let common_dir = match Git::new(&cwd, GitEnv::inherit()).common_dir() {
        Ok(dir) if !prepush::maverick_absent(&dir) => dir,
        _ => return Ok(released_by_session(me, Vec::new())),
    };
    if ClaimStore::new(&common_dir).of_instance(&me)?.is_empty() {
        return Ok(released_by_session(me, Vec::new()));
    }
    let mut ctx = super::Context::load(global)?;
    ctx.settings.instance = me.clone();
    let surface = ctx.surface()?;
    let coord = Coordinator::new(surface.as_ref(), &ctx.settings);
    let outcome = claims::release_all(&coord, &ctx.claims()?, "abort")?;
    Ok(released_by_session(me, outcome.released).shown(&ctx.warnings))
}

fn released_by_session(me: String, released: Vec<u64>) -> Outcome<HookOutput> {
    let notes: Vec<String> = released
        .iter()
        .map(|n| format!("git maverick: released #{n} (session ended)"))
        .collect();
    let mut o = Outcome::new(
        Exit::Ok,
        HookOutput::SessionEnd(SessionEndOutput {
            instance_id: me,
            released,
        }),
    );
    for note in notes {
        o = o.note(note);
    }
    o
}

fn pre_tool_use() -> Result<Outcome<HookOutput>, CommandError> {
    let input = agent_hook_input()?;
    let allow = || {
        Ok(Outcome::new(
            Exit::Ok,
            HookOutput::Agent(AgentAnswer::Allow { decision: None }),
        ))
    };
    if input.tool_name.as_deref() != Some("Bash") {
        return allow();
    }
    let Some(command) = input.tool_input.get("command").and_then(|c| c.as_str()) else {
        return allow();
    };
    let pushes = bash_guard::pushes_in(command);
    if pushes.is_empty() {
        return allow();
    }
    let me = session_instance(&input).unwrap_or_default();
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    for push in &pushes {
        let dir = push.dir.as_ref().map_or(cwd.clone(), |d| cwd.join(d));
        let git = Git::new(&dir, GitEnv::inherit());
        let Some(common_dir) = prepush::locate_common_dir(&dir, git.env()) else {
            continue;
        };
        if prepush::maverick_absent(&common_dir) {
            continue;
        }
        let ctx = bash_guard::GuardContext {
            common_dir: &common_dir,
            me: &me,
            current_branch: git.current_branch().ok().flatten(),
            now: Timestamp::now(),
        };
        if let Some(denial) = bash_guard::judge(push, &ctx)? {
            return Ok(agent_answer(HookSpecificOutput {
                hook_event_name: "PreToolUse",
                additional_context: None,
                permission_decision: Some("deny"),
                permission_decision_reason: Some(denial.reason),
            }));
        }
    }
    allow()
}

fn change_line(path: &std::path::Path, change: Change) -> String {
    let shown = path.display();
    match change {
        Change::Created => format!("created {shown} with maverick's block"),
        Change::Added => format!("added maverick's block to {shown}"),
        Change::Updated => format!("updated maverick's block in {shown}"),
        Change::Unchanged => format!("already in place: {shown}"),
        Change::Removed => format!("took maverick's block out of {shown}; the rest stays"),
        Change::Deleted => format!("removed {shown} (it held only maverick's block)"),
        Change::Absent => format!("no maverick block in {shown}"),
    }
}

/// The status as lines, and as the outcome of `hook status`.
fn status_outcome<T>(status: &Status, output: T) -> Outcome<T> {
    let exit = if status.on { Exit::Ok } else { Exit::Error };
    let mut outcome = Outcome::new(exit, output);
    let manager = status.manager.name();
    if let Some(via) = &status.via {
        outcome = outcome.line(format!(
            "on: the next push from here runs the guard ({manager}: {})",
            via.display()
        ));
    }
    if let Some(why) = &status.why_not {
        outcome = outcome.note(format!("error: the guard is off ({manager}): {why}"));
    }
    if let Some(fix) = &status.fix {
        outcome = outcome.hint(fix.clone());
    }
    outcome
}

fn install() -> Result<Outcome<InstallOutput>, CommandError> {
    let git = super::repository()?;
    let setup = Setup::detect(&git)?;
    let report = hookmanager::install(&setup)?;
    let status = hookmanager::status(&setup);
    let mut lines: Vec<String> = report
        .changes
        .iter()
        .rev()
        .map(|(path, change)| change_line(path, *change))
        .collect();
    let mut notes = Vec::new();
    if let Some((path, lines)) = &report.lines_to_add {
        notes.push(format!(
            "error: maverick does not edit {}: add these lines to it yourself:",
            path.display()
        ));
        notes.extend(lines.lines().map(|line| format!("    {line}")));
    }
    let output = InstallOutput {
        manager: setup.manager,
        hook: status.via.clone().unwrap_or_else(|| setup.hook_file()),
        change: report.changes.last().map(|(_, c)| *c),
        changes: report.changes,
        lines_to_add: report.lines_to_add,
        status: status.clone(),
    };
    let mut outcome = status_outcome(&status, output);
    lines.append(&mut outcome.lines);
    outcome.lines = lines;
    for note in notes {
        outcome = outcome.note(note);
    }
    Ok(outcome)
}

fn uninstall() -> Result<Outcome<UninstallOutput>, CommandError> {
    let git = super::repository()?;
    let setup = Setup::detect(&git)?;
    let changes = hookmanager::uninstall(&setup)?;
    let mut lines = Vec::new();
    if changes.is_empty() {
        lines.push(format!(
            "no maverick block in {}: nothing to do",
            setup.hook_file().display()
        ));
    }
    lines.extend(
        changes
            .iter()
            .map(|(path, change)| change_line(path, *change)),
    );
    let output = UninstallOutput {
        manager: setup.manager,
        hook: setup.hook_file(),
        change: changes.first().map_or(Change::Absent, |(_, c)| *c),
        changes,
    };
    let mut outcome = Outcome::new(Exit::Ok, output);
    outcome.lines = lines;
    Ok(outcome)
}

fn status() -> Result<Outcome<Status>, CommandError> {
    let git = super::repository()?;
    let setup = Setup::detect(&git)?;
    let status = hookmanager::status(&setup);
    Ok(status_outcome(&status, status.clone()))
}

/// The guard on one push: git's hook (`REMOTE URL`, the refs on stdin),
/// or pre-commit's (no arguments, `PRE_COMMIT_*` variables).
pub(crate) fn pre_push(
    global: &GlobalArgs,
    args: PrePushArgs,
) -> Result<Outcome<PrePushOutput>, CommandError> {
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    // What git told the hook (GIT_DIR and the rest) passes on to git explicitly.
    let env = GitEnv::inherit();
    let input = match args.remote {
        Some(remote) => {
            let mut stdin = String::new();
            std::io::stdin().read_to_string(&mut stdin).map_err(|e| {
                CommandError::tool(format!("cannot read the pushed refs from stdin: {e}"))
            })?;
            PushInput::from_hook(cwd, env, remote, args.url, &stdin)?
        }
        None => PushInput::from_pre_commit(cwd, env)?.ok_or_else(|| {
            CommandError::usage("no remote named, and no PRE_COMMIT_* variables").hint(
                "git runs this as `git maverick hook pre-push REMOTE URL` with the refs on stdin",
            )
        })?,
    };
    let verdict = guard::check_push(input, &global.overrides())?;
    Ok(verdict_outcome(verdict))
}

/// The verdict as git's hook reports it: exit 0 and the warnings, or the
/// refusals on stderr and their exit code.
fn verdict_outcome(verdict: Verdict) -> Outcome<PrePushOutput> {
    let allowed = verdict.refusals.is_empty();
    let exit = if allowed {
        Exit::Ok
    } else if verdict
        .refusals
        .iter()
        .any(|r| refusal_exit(r.kind) == Exit::ClaimLost)
    {
        Exit::ClaimLost
    } else {
        Exit::Collision
    };
    let mut notes: Vec<String> = verdict
        .refusals
        .iter()
        .flat_map(|r| r.describe(&verdict.remote))
        .collect();
    if allowed {
        notes = verdict.warnings;
    }
    let output = PrePushOutput {
        remote: verdict.remote,
        allowed,
        checked: verdict.checked,
        instance_id: if allowed { None } else { verdict.instance_id },
        refusals: verdict.refusals,
    };
    notes
        .into_iter()
        .fold(Outcome::new(exit, output), Outcome::note)
}

/// SPEC 10: a push refused for the claim exits 7, one refused for the branch
/// itself 8; several refusals exit with the claim's code when any names it.
fn refusal_exit(kind: RefusalKind) -> Exit {
    if kind.claim_lost() {
        Exit::ClaimLost
    } else {
        Exit::Collision
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_map_to_spec_exit_codes() {
        assert_eq!(refusal_exit(RefusalKind::NotHolder), Exit::ClaimLost);
        assert_eq!(refusal_exit(RefusalKind::ClaimLost), Exit::ClaimLost);
        for kind in [
            RefusalKind::Deletion,
            RefusalKind::MovedHead,
            RefusalKind::NeverSeen,
            RefusalKind::NonFastForward,
        ] {
            assert_eq!(refusal_exit(kind), Exit::Collision);
        }
    }
}
