//! `git maverick hook`: the pre-push hook (SPEC 8) and the Claude Code
//! plugin's session and tool-use hooks (SPEC 11).

use std::io::Read as _;

use std::path::PathBuf;

use clap::{Args, Subcommand};
use schemars::JsonSchema;
use serde::Serialize;

use super::Outcome;
use crate::agents::bash_guard;
use crate::cli::GlobalArgs;
use crate::clock::Clock;
use crate::commands::error::{CommandError, Exit};
use crate::coord::claims;
use crate::coord::lease::Coordinator;
use crate::coord::session_end;
use crate::git::{Git, GitEnv};
use crate::records::claim::ClaimStore;
use crate::writer::guard::{self, PushInput, Verdict};
use crate::writer::hookfile::Change;
use crate::writer::hookmanager::Manager;
use crate::writer::hookmanager::{self, Setup, Status};
use crate::writer::prepush::{self, Refusal, RefusalKind};
use maverick_core::ids::InstanceId;

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
    /// Claude Code's SessionEnd hook: starts the release of every claim of
    /// the session's instance in the background and returns at once
    #[command(hide = true)]
    SessionEnd,
    /// What `hook session-end` starts: releases every claim of the instance
    /// MAVERICK_INSTANCE names, logging to .git/maverick/session-end.log
    #[command(hide = true)]
    SessionRelease(SessionReleaseArgs),
    /// Claude Code's PreToolUse hook for the Bash tool: denies pushes that
    /// skip the guard, force or delete a managed branch, or write to a
    /// branch another instance holds
    #[command(hide = true)]
    PreToolUse,
}

#[derive(Debug, Args)]
pub(crate) struct SessionReleaseArgs {
    /// The descriptor of the instance's session-end lock, inherited
    #[arg(long, value_name = "FD")]
    pub lock_fd: Option<i32>,
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
    Status(StatusOutput),
    PrePush(PrePushOutput),
    SessionEnd(SessionEndOutput),
    SessionRelease(SessionReleaseOutput),
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
    pub instance_id: Option<InstanceId>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refusals: Vec<Refusal>,
}

/// `hook session-end --json`: the release of the session's claims, started
/// in the background (Claude Code gives the hook about 1.5 s).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SessionEndOutput {
    pub instance_id: InstanceId,
    /// Released by the hook itself: none, the release runs after it
    /// (`releasing`).
    pub released: Vec<u64>,
    /// The issues the background release releases (empty: nothing held).
    pub releasing: Vec<u64>,
    /// The background release's process; null when one was already running.
    pub pid: Option<u32>,
    /// Where the release writes what it did.
    pub log: Option<PathBuf>,
}

/// `hook session-release --json` (what `hook session-end` starts): the
/// claims it released.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct SessionReleaseOutput {
    pub instance_id: InstanceId,
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
        HookCommand::Status => status(global).map(|o| o.map(HookOutput::Status)),
        HookCommand::PrePush(a) => pre_push(global, a).map(|o| o.map(HookOutput::PrePush)),
        HookCommand::SessionStart => never_fails("session-start", session_start()),
        HookCommand::SessionEnd => never_fails("session-end", session_end()),
        HookCommand::SessionRelease(a) => {
            session_release(global, a).map(|o| o.map(HookOutput::SessionRelease))
        }
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
    let input = read_agent_hook_input()
        .map_err(CommandError::tool)?
        .unwrap_or_default();
    enter_session_cwd(&input).map_err(CommandError::tool)?;
    Ok(input)
}

/// The hook's JSON on stdin; `None` when stdin is empty. The error says
/// what was wrong with it.
fn read_agent_hook_input() -> Result<Option<AgentHookInput>, String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the hook input on stdin: {e}"))?;
    if text.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| format!("the hook input is not JSON: {e}"))
}

/// Moves to the directory the session works in, the input's `cwd`.
fn enter_session_cwd(input: &AgentHookInput) -> Result<(), String> {
    match &input.cwd {
        Some(cwd) => std::env::set_current_dir(cwd)
            .map_err(|e| format!("cannot enter the session's cwd {}: {e}", cwd.display())),
        None => Ok(()),
    }
}

/// The instance the session acts as, resolved as every command resolves it
/// (SPEC 2: env, then `maverick.instance`, then the session, here the
/// `session_id` of the hook's input).
fn session_instance(input: &AgentHookInput) -> Result<InstanceId, CommandError> {
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
    let exported = match std::env::var_os("CLAUDE_ENV_FILE").filter(|p| !p.is_empty()) {
        Some(path) => {
            use std::io::Write as _;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .and_then(|mut f| writeln!(f, "export MAVERICK_INSTANCE={me}"))
                .map_err(|e| {
                    CommandError::tool(format!(
                        "cannot write CLAUDE_ENV_FILE {}: {e}",
                        std::path::Path::new(&path).display()
                    ))
                })?;
            true
        }
        None => false,
    };
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    let git = Git::new(&cwd, GitEnv::inherit());
    let held = match git.common_dir() {
        Ok(dir) if !prepush::maverick_absent(&dir) => ClaimStore::new(&dir).of_instance(&me)?,
        _ => Vec::new(),
    };
    let mut context = instance_context(&git, me.as_str(), exported);
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

/// What the model is told about its instance: only what is true. Without
/// CLAUDE_ENV_FILE nothing exports it, and a command acts as whatever its
/// own environment and the clone name (SPEC 2).
fn instance_context(git: &Git, me: &str, exported: bool) -> String {
    // How `me` is named when the session does not name it: then every
    // session with the same setting is the same instance.
    let named = if crate::config::instance_from_env().is_some() {
        Some("MAVERICK_INSTANCE in Claude Code's environment")
    } else if git.config_get("maverick.instance").ok().flatten().is_some() {
        Some("this clone's maverick.instance")
    } else {
        None
    };
    let shared = |named: &str| {
        format!(" ({me} is {named}: every session that has it acts as this one instance)")
    };
    if exported {
        let mut context = format!(
            "git maverick: this session acts as instance {me}: every command of the session gets \
             MAVERICK_INSTANCE={me}."
        );
        if let Some(named) = named {
            context.insert_str(context.len() - 1, &shared(named));
        }
        return context;
    }
    if let Some(named) = named {
        return format!(
            "git maverick: this session acts as instance {me}{}.",
            shared(named)
        );
    }
    let session_var = crate::config::SESSION_VARS
        .iter()
        .find(|var| std::env::var_os(var).is_some_and(|v| !v.is_empty()));
    if let Some(var) = session_var {
        if crate::config::instance_from_session().is_some_and(|id| id == me) {
            return format!(
                "git maverick: this session acts as instance {me}, which git maverick derives \
                 from {var}: Claude Code gives it to every command of the session."
            );
        }
    }
    format!(
        "git maverick: this session's instance is {me}, but nothing gives it to the session's \
         commands: CLAUDE_ENV_FILE is not set, and Claude Code's environment does not name this \
         session. A command run as it is acts as this clone's own instance, the same one for \
         every session working in this clone. Start every command that runs git maverick or git push with \
         MAVERICK_INSTANCE={me} (as in `MAVERICK_INSTANCE={me} git maverick coord claim 142`), \
         so that this session's claims stay its own; at the end of the session its hook \
         releases {me}'s claims."
    )
}

/// Claude Code reads the answer on stdout, with or without `--json`.
fn agent_answer(output: HookSpecificOutput) -> Outcome<HookOutput> {
    let answer = AgentAnswer::Speak { output };
    let line = super::json_line(&answer);
    Outcome::new(Exit::Ok, HookOutput::Agent(answer)).exact_line(line)
}

/// Returns within Claude Code's SessionEnd budget (about 1.5 s): reads only
/// local records, and leaves the release (network calls) to a detached
/// process, `hook session-release`.
fn session_end() -> Result<Outcome<HookOutput>, CommandError> {
    let input = agent_hook_input()?;
    let me = session_instance(&input)?;
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    let output = |releasing: Vec<u64>, pid: Option<u32>, log: Option<PathBuf>| {
        HookOutput::SessionEnd(SessionEndOutput {
            instance_id: me.clone(),
            released: Vec::new(),
            releasing,
            pid,
            log,
        })
    };
    // Nothing held: no configuration read, no surface, no network.
    let common_dir = match Git::new(&cwd, GitEnv::inherit()).common_dir() {
        Ok(dir) if !prepush::maverick_absent(&dir) => dir,
        _ => return Ok(Outcome::new(Exit::Ok, output(Vec::new(), None, None))),
    };
    let mut issues: Vec<u64> = ClaimStore::new(&common_dir)
        .of_instance(&me)?
        .iter()
        .flat_map(|c| std::iter::once(c.issue).chain(c.scope.iter().copied()))
        .collect();
    issues.sort_unstable();
    issues.dedup();
    if issues.is_empty() {
        return Ok(Outcome::new(Exit::Ok, output(Vec::new(), None, None)));
    }
    let program = std::env::current_exe()
        .map_err(|e| CommandError::tool(format!("cannot find the git-maverick binary: {e}")))?;
    let started = session_end::start(&common_dir, &me, |fd| {
        let mut release = std::process::Command::new(&program);
        release
            .args(["hook", "session-release", "--lock-fd", &fd.to_string()])
            .current_dir(&cwd)
            .env("MAVERICK_INSTANCE", me.as_str());
        release
    })
    .map_err(|e| {
        CommandError::tool(format!(
            "cannot start the release of the session's claims: {e}"
        ))
    })?;
    let list = issues
        .iter()
        .map(|n| format!("#{n}"))
        .collect::<Vec<_>>()
        .join(", ");
    Ok(match started {
        session_end::Started::Release { pid, log } => {
            let note = format!(
                "git maverick: releasing {list} in the background (process {pid}, log {})",
                log.display()
            );
            Outcome::new(Exit::Ok, output(issues, Some(pid), Some(log))).note(note)
        }
        session_end::Started::AlreadyRunning { log } => {
            let note = format!(
                "git maverick: a release of {me}'s claims is already running (log {})",
                log.display()
            );
            Outcome::new(Exit::Ok, output(issues, None, Some(log))).note(note)
        }
    })
}

/// The release `hook session-end` started, in its own process session with
/// its output going to the log: every claim of the instance
/// MAVERICK_INSTANCE names, with reason `abort`; the lease expiry is the
/// backstop when it cannot.
fn session_release(
    global: &GlobalArgs,
    args: SessionReleaseArgs,
) -> Result<Outcome<SessionReleaseOutput>, CommandError> {
    if let Some(fd) = args.lock_fd {
        session_end::keep_lock(fd)
            .map_err(|e| CommandError::tool(format!("cannot keep the session-end lock: {e}")))?;
    }
    let ctx = super::Context::load(global)?;
    let common_dir = ctx.git.common_dir()?;
    let me = ctx.settings.instance.clone();
    let write_log = |line: String| {
        // The log is where a person looks; when it cannot be written,
        // stderr (the log itself, or nowhere) is all there is.
        if let Err(e) = session_end::log(&common_dir, &line) {
            eprintln!("{line} (cannot write the session-end log: {e})");
        }
    };
    let release = || {
        ctx.surface().and_then(|surface| {
            let coord = Coordinator::new(surface.as_ref(), &ctx.settings);
            Ok(claims::release_all(
                &coord,
                &ctx.claims()?,
                claims::ReleaseReason::Abort,
            )?)
        })
    };
    // Each round's line in the log, as a person reads it.
    let log_round =
        |released: &Result<crate::coord::lease::ReleaseOutcome, CommandError>| match released {
            Ok(outcome) => {
                let list = outcome
                    .released
                    .iter()
                    .map(|n| format!("#{n}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                write_log(if list.is_empty() {
                    format!("session end of {me}: nothing left to release")
                } else {
                    format!("session end of {me}: released {list}")
                });
            }
            Err(err) => {
                let first = err.to_string();
                let first = first.lines().next().unwrap_or_default().to_owned();
                write_log(format!(
                    "session end of {me}: the release failed ({}); its leases run out on their own",
                    first.trim_start_matches("error: ")
                ));
            }
        };
    // Each round's line is in the log before the lock goes.
    let mut released = release();
    log_round(&released);
    // A SessionEnd of the same instance that came while this one ran (a
    // resumed session's) asked for another round: its claims too.
    while let Some(fd) = args.lock_fd {
        match session_end::another_round(&common_dir, &me, fd) {
            Ok(true) => {
                released = release();
                log_round(&released);
            }
            Ok(false) => break,
            Err(e) => {
                write_log(format!(
                    "session end of {me}: cannot look for another round ({e})"
                ));
                break;
            }
        }
    }
    // A failed release is in the log already, written before the lock
    // went: printed again now (stderr is the log) it would land after the
    // lock, where whoever waited for the lock may not find it yet.
    let (exit, released) = match released {
        Ok(outcome) => (Exit::Ok, outcome.released),
        Err(_) => (Exit::Error, Vec::new()),
    };
    Ok(Outcome::new(
        exit,
        SessionReleaseOutput {
            instance_id: me,
            released,
        },
    )
    .shown(&ctx.warnings))
}

fn pre_tool_use() -> Result<Outcome<HookOutput>, CommandError> {
    // Fails closed (SPEC 8): what the guard cannot read could be any tool
    // call, a push past the pre-push guard included, so it asks; an error
    // must not reach `never_fails`, which would answer no objection.
    let cannot_read = |what: String| {
        Ok(guard_answer(
            "ask",
            format!(
                "git maverick's guard cannot read this tool call ({what}), so it cannot \
                 tell whether it pushes past the pre-push guard. Check the command \
                 before you allow it."
            ),
        ))
    };
    let input = match read_agent_hook_input() {
        Ok(Some(input)) => input,
        Ok(None) => return cannot_read("the hook input on stdin is empty".to_owned()),
        Err(what) => return cannot_read(what),
    };
    let allow = || {
        Ok(Outcome::new(
            Exit::Ok,
            HookOutput::Agent(AgentAnswer::Allow { decision: None }),
        ))
    };
    match input.tool_name.as_deref() {
        Some("Bash") => {}
        Some(_) => return allow(),
        None => return cannot_read("it names no tool".to_owned()),
    }
    let Some(command) = input.tool_input.get("command").and_then(|c| c.as_str()) else {
        return cannot_read("a Bash call without a command string".to_owned());
    };
    if let Err(what) = enter_session_cwd(&input) {
        return cannot_read(what);
    }
    let cwd = match std::env::current_dir() {
        Ok(cwd) => cwd,
        Err(e) => return cannot_read(format!("cannot read the current directory: {e}")),
    };
    // No instance resolves: nobody's, so no claim is this session's.
    let me = || session_instance(&input).unwrap_or_default();
    let env = GitEnv::inherit();
    let session = bash_guard::Session {
        cwd: &cwd,
        me: &me,
        now: Clock::from_env().now(),
        env: &env,
    };
    // Fails closed (SPEC 8): a guard that cannot read its records asks;
    // `never_fails` would otherwise turn the error into no objection.
    let verdict = bash_guard::judge(command, &session).unwrap_or_else(|e| {
        let way_out = e
            .hint()
            .map_or_else(String::new, |hint| format!(" To mend it: {hint}."));
        bash_guard::Verdict::Ask(format!(
            "git maverick's guard cannot read its records ({e}), so it cannot tell \
             whether this command pushes past the pre-push guard. Run the push as a \
             plain command of its own.{way_out}"
        ))
    });
    match verdict {
        bash_guard::Verdict::Allow => allow(),
        bash_guard::Verdict::Ask(reason) => Ok(guard_answer("ask", reason)),
        bash_guard::Verdict::Deny(reason) => Ok(guard_answer("deny", reason)),
    }
}

/// The guard's `ask` or `deny`, with the reason the person reads.
fn guard_answer(decision: &'static str, reason: String) -> Outcome<HookOutput> {
    agent_answer(HookSpecificOutput {
        hook_event_name: "PreToolUse",
        additional_context: None,
        permission_decision: Some(decision),
        permission_decision_reason: Some(reason),
    })
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
    if let Some(warning) = super::prepush_program::another_build() {
        outcome = outcome.warn(super::Warning::new(warning));
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

/// `hook status --json`: whether the next push from here runs the guard,
/// and what this clone knows of the server's own rule.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct StatusOutput {
    #[serde(flatten)]
    pub status: Status,
    /// The server's refusal of force pushes and deletions, from local files
    /// alone (`git maverick protect status` asks the server); null when the
    /// settings cannot name the remote.
    pub server: Option<crate::writer::protect::ServerProtection>,
}

fn status(global: &GlobalArgs) -> Result<Outcome<StatusOutput>, CommandError> {
    let git = super::repository()?;
    let setup = Setup::detect(&git)?;
    let status = hookmanager::status(&setup);
    // No request: a hook status is read in milliseconds (SPEC 8).
    let server = crate::config::Settings::load_explained(&git, &global.overrides())
        .ok()
        .and_then(|(settings, _)| crate::writer::protect::known(&git, &settings));
    let output = StatusOutput {
        status: status.clone(),
        server: server.clone(),
    };
    let mut outcome = status_outcome(&status, output);
    outcome.lines.extend(server.map(|s| s.describe()));
    if let Some(warning) = super::prepush_program::another_build() {
        outcome = outcome.warn(super::Warning::new(warning));
    }
    Ok(outcome)
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
            // Bytes: a ref name need not be UTF-8.
            let mut stdin = Vec::new();
            std::io::stdin().read_to_end(&mut stdin).map_err(|e| {
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
    let verdict = guard::check_push(input, &global.overrides(), &Clock::from_env())?;
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
