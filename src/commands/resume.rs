//! `git maverick resume BRANCH`: recreate a branch's worktree from the
//! remote and pick the work up where it stopped (SPEC 7).

use clap::Args;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Serialize;

use super::{Context, Outcome};
use crate::cli::{issue_number, GlobalArgs};
use crate::commands::error::{CommandError, Exit};
use crate::config::Settings;
use crate::coord::lease::{ClaimOutcome, Decision, IssueView};
use crate::durable::tasks::{self, IssueSource, Task, TaskListView};
use crate::workflow::resume::{
    self, ClaimState, Refusal, ResumeError, ResumeOutcome, ResumeRequest, WorktreeState,
};
use crate::writer::worktree::WorktreeError;
use maverick_core::ids::InstanceId;

#[derive(Debug, Args)]
pub(crate) struct ResumeArgs {
    /// The branch, as the remote names it (maverick/142-short-title)
    pub branch: String,
    /// Take the issue over when its holder's lease is stale (instead of exit 5)
    #[arg(long)]
    pub takeover: bool,
    /// The branch's issue, when neither a claim record nor the branch name tells
    #[arg(long, value_name = "N", value_parser = issue_number)]
    pub issue: Option<u64>,
}

/// `resume BRANCH --json`: the worktree, or why not (exit 3-8).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum ResumeOutput {
    Resumed(Box<Resumed>),
    Refused(Box<Refused>),
    LocalAhead(LocalAhead),
    ClaimLost(ClaimLost),
    /// The takeover's claim did not go through: what it came to.
    Claim(ClaimOutcome),
}

/// The worktree, ready to work in.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Resumed {
    pub branch: String,
    pub issue: u64,
    pub worktree: PathBuf,
    pub head: String,
    pub remote: String,
    pub claim: ClaimState,
    pub generation: Option<u64>,
    pub instance_id: InstanceId,
    pub worktree_state: WorktreeState,
    pub fast_forwarded: bool,
    /// Where a half-made worktree of resume's own was moved aside: detached,
    /// locked, its files kept (docs/recovery.md).
    pub moved_aside: Option<PathBuf>,
    pub next_task: Option<Task>,
    pub tasks: Option<TaskListView>,
}

/// Who holds the issue stopped the resume.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Refused {
    pub issue: u64,
    pub decision: Decision,
    pub view: IssueView,
}

/// The local branch has commits the remote lacks: it is never moved (exit 8).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct LocalAhead {
    pub branch: String,
    pub issue: u64,
    pub remote_head: String,
    pub local_head: String,
    pub unpushed: Vec<String>,
}

/// The claim was lost while picking the work up (exit 7).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ClaimLost {
    pub issue: u64,
    pub branch: String,
    pub reason: String,
    pub issues: Vec<IssueView>,
}

/// The issue of `branch`: the claim record that names it, else `--issue`,
/// else the branch name (`maverick/142-…`). A flag that contradicts the
/// claim record is a usage error, not a silent choice.
fn issue_of(ctx: &Context, branch: &str, flag: Option<u64>) -> Result<u64, CommandError> {
    let found = tasks::issue_of_branch(&ctx.claims()?, &ctx.settings.instance, branch)?;
    match (found, flag) {
        (Some((r, IssueSource::Claim)), Some(f)) if r != f => Err(CommandError::usage(format!(
            "{branch} belongs to #{r} by this clone's claim record, not #{f}"
        ))
        .hint(format!("drop --issue, or resume #{f}'s own branch"))),
        (Some((r, IssueSource::Claim)), _) => Ok(r),
        (_, Some(f)) => Ok(f),
        (Some((n, _)), None) => Ok(n),
        (None, None) => Err(CommandError::usage(format!(
            "cannot tell which issue {branch} belongs to"
        ))
        .hint(format!("name it: git maverick resume {branch} --issue N"))),
    }
}

fn refused(exit: Exit, view: &IssueView, what: String, hint: String) -> Outcome<ResumeOutput> {
    let output = Refused {
        issue: view.issue,
        decision: view.decision(),
        view: view.clone(),
    };
    Outcome::new(exit, ResumeOutput::Refused(Box::new(output)))
        .line(super::coord::describe(view))
        .note(format!("resume refused: {what}"))
        .hint(hint)
}

pub(crate) fn run(
    global: &GlobalArgs,
    args: ResumeArgs,
) -> Result<Outcome<ResumeOutput>, CommandError> {
    let ctx = Context::load(global)?;
    ctx.report(resume(&ctx, args))
}

fn resume(ctx: &Context, args: ResumeArgs) -> Result<Outcome<ResumeOutput>, CommandError> {
    let branch = super::branch_arg(&ctx.git, &args.branch)?;
    let issue = issue_of(ctx, &branch, args.issue)?;
    let surface = ctx.surface()?;
    let request = ResumeRequest {
        branch: &branch,
        issue,
        takeover: args.takeover,
    };
    let outcome = resume::resume(
        &ctx.git,
        surface.as_ref(),
        &ctx.settings,
        &ctx.claims()?,
        &request,
    )
    .map_err(|e| resume_error(e, &ctx.settings.remote))?;
    Ok(match outcome {
        ResumeOutcome::Refused(refusal, view) => show_refusal(refusal, &view, &branch),
        ResumeOutcome::LocalAhead {
            remote_head,
            local,
            commits,
        } => show_local_ahead(&ctx.settings, &branch, issue, remote_head, local, commits),
        ResumeOutcome::ClaimLost { reason, views } => {
            let line = format!("claim lost: {reason}");
            let output = ClaimLost {
                issue,
                branch,
                reason,
                issues: views,
            };
            Outcome::new(Exit::ClaimLost, ResumeOutput::ClaimLost(output))
                .line(line)
                .hint("another instance owns this work now; do not resume it here")
        }
        ResumeOutcome::NotTakenOver(report) => super::coord::show_claim(ctx, issue, &report)
            .map(ResumeOutput::Claim)
            .note(format!(
                "resume of {branch} stopped: the takeover of #{issue} did not go through"
            )),
        ResumeOutcome::Resumed(resumed) => show_resumed(&ctx.settings, *resumed),
    })
}

/// The error of a resume, with the way out.
fn resume_error(err: ResumeError, remote: &str) -> CommandError {
    match err {
        ResumeError::Fetch { source, .. } => CommandError::from(source)
            .hint(format!("check that `git fetch {remote}` works from here")),
        ResumeError::NoRemoteBranch { .. } => CommandError::tool(err.to_string()).hint(format!(
            "check the name (`git ls-remote --heads {remote}`), or claim the issue and start the \
             branch"
        )),
        ResumeError::OtherBranch { ref claimed, .. } => {
            let hint = format!("resume {claimed} instead");
            CommandError::usage(err.to_string()).hint(hint)
        }
        ResumeError::InstanceFile { .. } => CommandError::tool(err.to_string()),
        ResumeError::Git(e) => e.into(),
        ResumeError::Surface(e) => e.into(),
        ResumeError::Lease(e) => e.into(),
        ResumeError::Claims(e) => e.into(),
        ResumeError::Worktree(e) => worktree_error(e),
        ResumeError::Record(e) => e.into(),
        ResumeError::Task(e) => e.into(),
        ResumeError::Guard(e) => e.into(),
    }
}

/// A worktree resume leaves alone, with the way out.
fn worktree_error(err: WorktreeError) -> CommandError {
    let hint = match &err {
        WorktreeError::InUse { lock, .. } => Some(format!(
            "let the git command there finish, then resume again; if no git runs there any \
             more, remove its stale lock ({}) first",
            crate::records::files::shell_rm(lock)
        )),
        WorktreeError::InUseByResume { pid, .. } => Some(format!(
            "wait for it to finish; if process {pid} is no git maverick any more, run resume again"
        )),
        WorktreeError::NotOurs { path } | WorktreeError::Unfinished { path } => Some(format!(
            "if it is gone for good (or nothing runs there), remove it yourself: \
             git worktree remove --force --force {}; then resume again",
            maverick_core::shell::quote(&path.to_string_lossy())
        )),
        WorktreeError::BranchInMissing { path, .. } => Some(format!(
            "bring that folder back (mount its disk, or move it back), or if it is gone for \
             good: git worktree remove --force --force {}; then resume again",
            maverick_core::shell::quote(&path.to_string_lossy())
        )),
        _ => None,
    };
    let mut e = CommandError::from(err);
    e.hints.extend(hint);
    e
}

fn show_refusal(refusal: Refusal, view: &IssueView, branch: &str) -> Outcome<ResumeOutput> {
    let issue = view.issue;
    let holder = view
        .holder
        .as_ref()
        .map_or("nobody".to_owned(), |h| h.instance_id.to_string());
    match refusal {
        Refusal::Blocked => refused(
            Exit::Blocked,
            view,
            format!("#{issue} is blocked"),
            "work on the blocking issues first".to_owned(),
        ),
        Refusal::HeldLive => refused(
            Exit::HeldLive,
            view,
            format!("{holder} holds #{issue} with a live lease"),
            "someone is working on it; resume only once its lease is released or stale".to_owned(),
        ),
        Refusal::HeldStale => refused(
            Exit::HeldStale,
            view,
            format!("{holder} holds #{issue}, but its lease is stale"),
            format!("take it over: git maverick resume {branch} --takeover"),
        ),
    }
}

fn show_local_ahead(
    settings: &Settings,
    branch: &str,
    issue: u64,
    remote_head: String,
    local: String,
    commits: Vec<String>,
) -> Outcome<ResumeOutput> {
    let mut notes = vec![format!(
        "resume refused: the local branch {branch} has {} commit(s) that {} lacks; it is never moved:",
        commits.len(),
        settings.remote
    )];
    notes.extend(commits.iter().map(|commit| format!("  {commit}")));
    let output = LocalAhead {
        branch: branch.to_owned(),
        issue,
        remote_head,
        local_head: local,
        unpushed: commits,
    };
    let mut outcome = Outcome::new(Exit::Collision, ResumeOutput::LocalAhead(output));
    for note in notes {
        outcome = outcome.note(note);
    }
    outcome
        .note("stop and report; do not merge or overwrite.")
        .hint("push them from the worktree that made them, or keep them on another branch (git branch -m) and resume again")
}

fn show_resumed(settings: &Settings, resumed: resume::Resumed) -> Outcome<ResumeOutput> {
    let state = resumed.worktree_state();
    let resume::Resumed {
        branch,
        issue,
        worktree: path,
        head,
        subject,
        claim,
        generation,
        applied,
        tasks,
        worktree_git,
    } = resumed;
    let next_task = tasks.as_ref().and_then(|t| t.next.clone());
    let mut lines = vec![
        format!("worktree: {}", path.display()),
        format!("branch:   {branch} ({})", state.as_str()),
        format!("head:     {} {subject}", &head[..head.len().min(12)]),
        match generation {
            Some(g) if claim != ClaimState::None => format!(
                "issue:    #{issue} ({} by {}, generation {g})",
                claim.as_str(),
                settings.instance
            ),
            _ => format!("issue:    #{issue} (not claimed)"),
        },
    ];
    if let Some(tasks) = &tasks {
        for fixed in &tasks.reconciled {
            lines.push(format!(
                "checked off task {} from {} (pushed before a crash)",
                fixed.task, fixed.short
            ));
        }
        lines.push(match &next_task {
            Some(t) => format!(
                "next:     task {} of {} — {}",
                t.number, tasks.total, t.title
            ),
            None => format!(
                "next:     nothing: {} done",
                crate::durable::tasks::all_tasks_are(tasks.total, None)
            ),
        });
    }
    let aside = applied.moved_aside.clone();
    let output = Resumed {
        branch: branch.clone(),
        issue,
        worktree: path,
        head,
        remote: settings.remote.clone(),
        claim,
        generation,
        instance_id: settings.instance.clone(),
        worktree_state: state,
        fast_forwarded: applied.fast_forwarded,
        moved_aside: applied.moved_aside,
        next_task,
        tasks,
    };
    let mut outcome = Outcome::new(Exit::Ok, ResumeOutput::Resumed(Box::new(output)));
    outcome.lines = lines;
    if let Some(aside) = &aside {
        outcome = outcome.note(format!(
            "note: a half-made worktree of {branch} was moved aside, not deleted: {}; \
             it can no longer commit to {branch} (see its {})",
            aside.display(),
            crate::writer::worktree::ASIDE_NOTE
        ));
    }
    outcome = super::warn_if_guard_off(&worktree_git, outcome);
    if claim == ClaimState::None {
        outcome = outcome.note(format!(
            "note: nobody holds #{issue}; claim it before working on it: \
             git maverick coord claim {issue} --branch {branch}"
        ));
    }
    outcome
}
