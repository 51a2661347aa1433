//! `git maverick hook`: the pre-push hook (SPEC 8) and the Claude Code
//! plugin's session and tool-use hooks (SPEC 11).

use std::io::Read as _;

use clap::{Args, Subcommand};
use serde_json::json;

use super::Outcome;
use crate::cli::GlobalArgs;
use crate::config::Settings;
use crate::coord::claims;
use crate::coord::lease::Coordinator;
use crate::coord::record::ClaimStore;
use crate::error::{CommandError, Exit};
use crate::git::{Git, GitEnv};
use crate::timefmt::Timestamp;
use crate::writer::bash_guard;
use crate::writer::branch_record::BranchStore;
use crate::writer::hookfile::{self, Change};
use crate::writer::prepush::{self, BranchState, RefUpdate, RefusalKind};

#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub command: HookCommand,
}

#[derive(Debug, Subcommand)]
pub enum HookCommand {
    /// Install the pre-push hook where git looks for it (core.hooksPath and
    /// linked worktrees respected); an existing hook keeps working
    Install,
    /// Take maverick's block out of the pre-push hook (the file too, if
    /// nothing else is in it)
    Uninstall,
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
pub struct PrePushArgs {
    /// The remote's name (or its URL when the push named a URL)
    // Its own id: `remote` is the global --remote option's.
    #[arg(id = "push_remote", value_name = "REMOTE")]
    pub remote: String,
    /// The remote's URL
    #[arg(id = "push_url", value_name = "URL")]
    pub url: Option<String>,
}

pub fn run(global: &GlobalArgs, args: HookArgs) -> Result<Outcome, CommandError> {
    match args.command {
        HookCommand::Install => install(),
        HookCommand::Uninstall => uninstall(),
        HookCommand::PrePush(a) => pre_push(global, a),
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
fn never_fails(hook: &str, result: Result<Outcome, CommandError>) -> Result<Outcome, CommandError> {
    Ok(result.unwrap_or_else(|err| {
        let message = err.to_string();
        let first = message.lines().next().unwrap_or_default();
        Outcome::new(Exit::Ok, json!({"hook": hook, "error": first})).note(format!(
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

/// The instance the session acts as: an instance the environment names
/// explicitly, else the session id derived as SPEC 2 says.
fn session_instance(input: &AgentHookInput) -> Result<String, CommandError> {
    if let Some(id) = crate::config::instance_from_env().transpose()? {
        return Ok(id);
    }
    input
        .session_id
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(crate::config::session_instance_id)
        .or_else(crate::config::instance_from_session)
        .ok_or_else(|| CommandError::tool("the hook input names no session_id"))
}

fn session_start() -> Result<Outcome, CommandError> {
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
    let answer = json!({
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}
    });
    Ok(Outcome::new(Exit::Ok, answer.clone()).line(answer.to_string()))
}

fn session_end(global: &GlobalArgs) -> Result<Outcome, CommandError> {
    let input = agent_hook_input()?;
    let me = session_instance(&input)?;
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    // Nothing held: no configuration read, no surface, no network.
    let common_dir = match Git::new(&cwd, GitEnv::inherit()).common_dir() {
        Ok(dir) if !prepush::maverick_absent(&dir) => dir,
        _ => {
            return Ok(Outcome::new(
                Exit::Ok,
                json!({"instance_id": me, "released": []}),
            ))
        }
    };
    if ClaimStore::new(&common_dir).of_instance(&me)?.is_empty() {
        return Ok(Outcome::new(
            Exit::Ok,
            json!({"instance_id": me, "released": []}),
        ));
    }
    let mut ctx = super::Context::load(global)?;
    ctx.settings.instance = me.clone();
    let surface = ctx.surface()?;
    let coord = Coordinator::new(surface.as_ref(), &ctx.settings);
    let outcome = claims::release_all(&coord, &ctx.claims()?, "abort")?;
    let mut o = Outcome::new(
        Exit::Ok,
        json!({"instance_id": me, "released": outcome.released}),
    );
    for n in &outcome.released {
        o = o.note(format!("git maverick: released #{n} (session ended)"));
    }
    Ok(o)
}

fn pre_tool_use() -> Result<Outcome, CommandError> {
    let input = agent_hook_input()?;
    let allow = || Ok(Outcome::new(Exit::Ok, json!({"permissionDecision": null})));
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
            let answer = json!({
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": denial.reason,
                }
            });
            return Ok(Outcome::new(Exit::Ok, answer.clone()).line(answer.to_string()));
        }
    }
    allow()
}

fn repository() -> Result<Git, CommandError> {
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    let git = Git::new(cwd, GitEnv::inherit());
    if !git.is_repository()? {
        return Err(CommandError::tool("not inside a git repository")
            .code(crate::error::ErrorCode::NotARepository)
            .hint("run it from a clone of the project"));
    }
    Ok(git)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

fn install() -> Result<Outcome, CommandError> {
    let git = repository()?;
    let path = hookfile::hook_path(&git)?;
    let change = hookfile::install(&path)?;
    let shown = path.display();
    let line = match change {
        Change::Created => format!("installed the pre-push hook: {shown}"),
        Change::Added => format!("added maverick's block to the existing pre-push hook: {shown}"),
        Change::Updated => format!("updated maverick's block in {shown}"),
        _ => format!("already installed: {shown}"),
    };
    let mut outcome = Outcome::new(Exit::Ok, json!({"hook": path, "change": change})).line(line);
    if !on_path("git-maverick") {
        outcome = outcome.note(
            "warning: git-maverick is not on PATH, so the hook refuses every push until it is \
             (the hook runs `git-maverick`, not this binary's path)",
        );
    }
    Ok(outcome)
}

fn uninstall() -> Result<Outcome, CommandError> {
    let git = repository()?;
    let path = hookfile::hook_path(&git)?;
    let change = hookfile::uninstall(&path)?;
    let shown = path.display();
    let line = match change {
        Change::Removed => {
            format!("took maverick's block out of {shown}; the rest of the hook stays")
        }
        Change::Deleted => format!("removed the pre-push hook: {shown}"),
        _ => format!("no maverick block in {shown}: nothing to do"),
    };
    Ok(Outcome::new(Exit::Ok, json!({"hook": path, "change": change})).line(line))
}

/// True when the push goes to maverick's remote (by name, or by its URL).
fn pushes_to_maverick_remote(settings: &Settings, args: &PrePushArgs) -> bool {
    let url = settings.remote_url.as_deref();
    args.remote == settings.remote
        || Some(args.remote.as_str()) == url
        || (args.url.is_some() && args.url.as_deref() == url)
}

/// The pusher, when the environment names it and every managed branch has a
/// claim record of it for the remote this push goes to; `None`: ask the
/// configuration.
fn identity_from_records(
    managed: &[(&RefUpdate, BranchState)],
    args: &PrePushArgs,
) -> Result<Option<String>, CommandError> {
    let Some(me) = crate::config::instance_from_env().transpose()? else {
        return Ok(None);
    };
    let known = managed.iter().all(|(_, state)| {
        let mine: Vec<_> = state
            .claims
            .iter()
            .filter(|c| c.instance_id == me)
            .collect();
        !mine.is_empty() && mine.iter().all(|c| c.remote == args.remote)
    });
    Ok(known.then_some(me))
}

/// The hot path: tags, unmanaged branches and repositories without maverick
/// leave after a few file stats, with no git process and no network call.
fn pre_push(global: &GlobalArgs, args: PrePushArgs) -> Result<Outcome, CommandError> {
    let mut input = String::new();
    std::io::stdin()
        .read_to_string(&mut input)
        .map_err(|e| CommandError::tool(format!("cannot read the pushed refs from stdin: {e}")))?;
    let updates = prepush::parse_updates(&input)?;
    let allowed = |checked: Vec<&str>| {
        Outcome::new(
            Exit::Ok,
            json!({"remote": args.remote, "allowed": true, "checked": checked}),
        )
    };
    let branch_updates: Vec<&RefUpdate> = updates.iter().filter(|u| u.branch().is_some()).collect();
    if branch_updates.is_empty() {
        return Ok(allowed(vec![]));
    }
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    // What git told the hook (GIT_DIR and the rest) passes on to git explicitly.
    let git = Git::new(&cwd, GitEnv::inherit());
    let common_dir = match prepush::locate_common_dir(&cwd, git.env()) {
        Some(dir) => dir,
        None => git.common_dir()?,
    };
    if prepush::maverick_absent(&common_dir) {
        return Ok(allowed(vec![]));
    }
    let mut managed = Vec::new();
    for update in branch_updates {
        let branch = update.branch().expect("filtered to branches");
        let state = BranchState::load(&common_dir, branch)?;
        if state.managed() {
            managed.push((update, state));
        }
    }
    if managed.is_empty() {
        return Ok(allowed(vec![]));
    }
    // A managed branch: the pusher's instance id, and whether this push goes
    // to maverick's remote. When the environment names the instance and its
    // claim records name this remote, no configuration needs reading.
    let me = match identity_from_records(&managed, &args)? {
        Some(me) => me,
        None => {
            let settings = Settings::load(&git, &global.overrides())?;
            if !pushes_to_maverick_remote(&settings, &args) {
                return Ok(allowed(vec![]));
            }
            settings.instance
        }
    };
    let now = Timestamp::now();
    let mut refusals = Vec::new();
    for (update, state) in &managed {
        if let Some(refusal) = prepush::check_update(&git, update, state, &me)? {
            refusals.push(refusal);
        }
    }
    let checked: Vec<&str> = managed.iter().filter_map(|(u, _)| u.branch()).collect();
    if refusals.is_empty() {
        let store = BranchStore::new(&common_dir);
        let mut outcome = allowed(checked.clone());
        for (update, state) in &managed {
            prepush::record_allowed(&store, update, state, &me)?;
            for warning in prepush::lease_warnings(&state.claims, &me, now) {
                outcome = outcome.note(warning);
            }
        }
        return Ok(outcome);
    }
    let exit = if refusals
        .iter()
        .any(|r| refusal_exit(r.kind) == Exit::ClaimLost)
    {
        Exit::ClaimLost
    } else {
        Exit::Collision
    };
    let mut outcome = Outcome::new(
        exit,
        json!({
            "remote": args.remote,
            "allowed": false,
            "checked": checked,
            "instance_id": me,
            "refusals": refusals,
        }),
    );
    for refusal in &refusals {
        for line in refusal.describe(&args.remote) {
            outcome = outcome.note(line);
        }
    }
    Ok(outcome)
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
