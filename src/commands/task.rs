//! `git maverick task`: push-per-task (SPEC 6).

use std::io::Read as _;

use clap::{Args, Subcommand};
use maverick_core::ids::ObjectPrefix;
use schemars::JsonSchema;
use serde::Serialize;

use super::{Context, Outcome, Warning};
use crate::cli::{issue_number, GlobalArgs};
use crate::commands::error::{CommandError, Exit};
use crate::coord::lease::ClaimView;
use crate::durable::tasks::{
    self, Checked, InitOutcome, IssueSource, Task, TaskError, TaskListView,
};
use crate::workflow::task_done::{
    self, DoneOutcome, DoneReport, DoneRequest, LeaseAction, LeaseKept,
};

#[derive(Debug, Args)]
pub(crate) struct TaskArgs {
    #[command(subcommand)]
    pub command: TaskCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum TaskCommand {
    /// Write the tasks comment of a story (`## Tasks` and one `- [ ]` line per task)
    Init(InitArgs),
    /// Show the tasks, which are done and the next one; checks off tasks
    /// whose commits are on the remote branch but not yet on the comment
    List(ListArgs),
    /// Check one task off by hand
    Check(CheckArgs),
    /// Commit what is staged as the next task, push it, check it off
    Done(DoneArgs),
}

#[derive(Debug, Args)]
pub(crate) struct InitArgs {
    /// The story (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// The tasks: one per line (`Title — detail`), a Markdown task list, or a
    /// JSON array; `-` or nothing reads standard input
    #[arg(value_name = "FILE|-")]
    pub file: Option<String>,
    /// Rewrite an existing tasks comment with other tasks (check marks of
    /// tasks whose titles stay are kept)
    #[arg(long)]
    pub replace: bool,
    /// The story's working branch, recorded in its task-progress marker
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// The story; default: the issue of the current branch
    #[arg(value_parser = issue_number)]
    pub issue: Option<u64>,
    /// The remote branch whose trailers check tasks off (default: the
    /// claim's branch, the current branch, or the task-progress marker's)
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The story (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// The task number (1 is the first)
    pub task: usize,
    /// The commit that did it, shown next to the check mark
    #[arg(long, value_name = "SHA")]
    pub sha: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct DoneArgs {
    /// The commit message, Conventional Commits: `type(scope)!: subject`
    /// (default: the task's title, when it is one)
    #[arg(short = 'm', long = "message", value_name = "MSG")]
    pub message: Option<String>,
    /// The task this commit finishes (default: the next unchecked one)
    #[arg(long = "task", value_name = "N")]
    pub task: Option<usize>,
    /// The story, when neither a claim nor the branch name tells it
    #[arg(long = "issue", value_name = "N", value_parser = issue_number)]
    pub issue: Option<u64>,
    /// Commit even when the staged changes delete more than half of the
    /// files HEAD tracks (refused otherwise: a broken worktree's empty index)
    #[arg(long)]
    pub allow_mass_delete: bool,
}

/// `task check --json`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CheckOutput {
    pub issue: u64,
    pub task: usize,
    pub checked: Checked,
}

/// `task done --json`: the task's commit, pushed and checked off; or why
/// not (exit 4-8).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum DoneOutput {
    Pushed(Pushed),
    NotPushed(NotPushed),
    ClaimLost(ClaimLost),
    Held(Held),
}

/// The task's commit is on the remote and checked off.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Pushed {
    pub issue: u64,
    pub issue_source: IssueSource,
    pub task: usize,
    pub sha: String,
    pub short: String,
    pub branch: String,
    pub remote: String,
    /// False when an earlier run made the commit and this one pushed it.
    pub committed: bool,
    pub pushed: bool,
    /// The tasks this run checked off.
    pub checked: Vec<usize>,
    pub next_task: Option<Task>,
    pub done: usize,
    pub total: usize,
    /// What the run did to this instance's lease: renewed it, or re-took it
    /// after it lapsed while nobody else claimed the issue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease: Option<LeaseKept>,
}

/// Committed, not pushed: someone else's push is in the way (exit 8).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct NotPushed {
    pub issue: u64,
    pub task: usize,
    pub short: String,
    pub branch: String,
    pub committed: bool,
    pub pushed: bool,
    pub reason: String,
}

/// This clone's claim is lost: nothing was committed (exit 7).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ClaimLost {
    pub issue: u64,
    pub committed: bool,
    pub pushed: bool,
    pub reason: String,
}

/// Another instance holds the issue: nothing was committed (exit 4, 5).
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Held {
    pub issue: u64,
    pub committed: bool,
    pub pushed: bool,
    pub holder: ClaimView,
}

/// What a `task` subcommand prints with `--json`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum TaskOutput {
    Init(InitOutcome),
    List(TaskListView),
    Check(CheckOutput),
    Done(DoneOutput),
}

pub(crate) fn run(
    global: &GlobalArgs,
    args: TaskArgs,
) -> Result<Outcome<TaskOutput>, CommandError> {
    let ctx = Context::load(global)?;
    let outcome = match args.command {
        TaskCommand::Init(a) => init(&ctx, a).map(|o| o.map(TaskOutput::Init)),
        TaskCommand::List(a) => list(&ctx, a).map(|o| o.map(TaskOutput::List)),
        TaskCommand::Check(a) => check(&ctx, a).map(|o| o.map(TaskOutput::Check)),
        TaskCommand::Done(a) => {
            done(&ctx, a).map(|o| super::warn_if_guard_off(&ctx.git, o.map(TaskOutput::Done)))
        }
    };
    ctx.report(outcome)
}

/// Reads FILE, or standard input for `-` or no FILE.
pub(crate) fn read_input(file: Option<&str>) -> Result<String, CommandError> {
    match file {
        None | Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| CommandError::tool(format!("could not read standard input: {e}")))?;
            Ok(text)
        }
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| CommandError::usage(format!("could not read {path}: {e}"))),
    }
}

fn init(ctx: &Context, mut args: InitArgs) -> Result<Outcome<InitOutcome>, CommandError> {
    args.branch = args
        .branch
        .map(|b| super::branch_arg(&ctx.git, &b))
        .transpose()?;
    let text = read_input(args.file.as_deref())?;
    let new = tasks::parse_task_input(&text)?;
    let surface = ctx.surface()?;
    let outcome = tasks::init_tasks(
        surface.as_ref(),
        &ctx.settings,
        args.issue,
        &new,
        args.replace,
        args.branch.as_deref(),
    )?;
    let verb = if outcome.created { "wrote" } else { "kept" };
    let mut lines = vec![format!(
        "#{}: {verb} the tasks comment ({} task{}, comment {})",
        args.issue,
        outcome.tasks.len(),
        plural(outcome.tasks.len()),
        outcome.comment_id
    )];
    lines.extend(outcome.tasks.iter().map(task_line));
    let mut o = Outcome::new(Exit::Ok, outcome);
    o.lines = lines;
    Ok(o)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn task_line(task: &Task) -> String {
    let mark = if task.done { "x" } else { " " };
    let mut line = format!("  [{mark}] {}. {}", task.number, task.title);
    if let Some(d) = &task.detail {
        line.push_str(&format!(" — {d}"));
    }
    if let Some(sha) = &task.sha {
        line.push_str(&format!(" ({sha})"));
    }
    line
}

/// The issue of the current branch (SPEC 6): the claim naming it, else its
/// name, else `--issue`. A flag that disagrees with the branch is refused.
fn issue_here(
    ctx: &Context,
    branch: Option<&str>,
    flag: Option<u64>,
) -> Result<(u64, IssueSource), CommandError> {
    let derived = match branch {
        Some(b) => tasks::issue_of_branch(&ctx.claims()?, &ctx.settings.instance, b)?,
        None => None,
    };
    match (derived, flag) {
        (Some((n, source)), Some(f)) if n != f => Err(CommandError::usage(format!(
            "--issue {f} disagrees with the branch {}, which belongs to #{n} ({})",
            branch.unwrap_or_default(),
            match source {
                IssueSource::Claim => "by its claim",
                _ => "by its name",
            }
        ))
        .hint("switch to the story's branch, or drop --issue")),
        (Some(found), _) => Ok(found),
        (None, Some(f)) => Ok((f, IssueSource::Flag)),
        (None, None) => Err(CommandError::usage(match branch {
            Some(b) => format!("cannot tell which issue the branch {b} works on"),
            None => "HEAD is detached: cannot tell which issue this works on".to_owned(),
        })
        .hint("pass --issue N, claim with `git maverick coord claim N --branch BRANCH`, or name the branch maverick/N-short-title")),
    }
}

fn list(ctx: &Context, mut args: ListArgs) -> Result<Outcome<TaskListView>, CommandError> {
    args.branch = args
        .branch
        .map(|b| super::branch_arg(&ctx.git, &b))
        .transpose()?;
    let here = ctx.git.current_branch()?;
    let issue = match args.issue {
        Some(n) => n,
        None => issue_here(ctx, here.as_deref(), None)?.0,
    };
    let surface = ctx.surface()?;
    let branch = match args.branch {
        Some(b) => Some(b),
        None => {
            let claims = ctx.claims()?;
            let from_claim = claims
                .load(&ctx.settings.instance, issue)?
                .and_then(|r| r.branch);
            let current = match &here {
                Some(b) => tasks::issue_of_branch(&claims, &ctx.settings.instance, b)?
                    .filter(|(n, _)| *n == issue)
                    .map(|_| b.clone()),
                None => None,
            };
            match from_claim.or(current) {
                Some(b) => Some(b),
                None => {
                    tasks::branch_of_issue(&claims, &ctx.settings.instance, &surface.issue(issue)?)?
                }
            }
        }
    };
    let view = tasks::reconcile(
        surface.as_ref(),
        &ctx.git,
        &ctx.settings,
        issue,
        branch.as_deref(),
    )?;
    if view.comment_id.is_none() {
        return Err(TaskError::NoTasksComment { issue }.into());
    }
    Ok(list_outcome(view, &ctx.settings.remote))
}

/// What `task list` shows; also what `resume` can print.
pub(crate) fn list_outcome(view: TaskListView, remote: &str) -> Outcome<TaskListView> {
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    let branch = view.branch.as_ref().map(|b| b.name.as_str());
    for commit in &view.reconciled {
        lines.push(format!(
            "checked off task {} from {} on {remote}/{} (pushed, but not yet checked)",
            commit.task,
            commit.short,
            branch.unwrap_or_default()
        ));
    }
    lines.push(format!(
        "#{}: {}/{} task{} done",
        view.issue,
        view.done,
        view.total,
        plural(view.total)
    ));
    lines.extend(view.tasks.iter().map(task_line));
    lines.push(match &view.next {
        Some(t) => format!("next: task {} — {}", t.number, t.title),
        None => "next: none, all tasks are done".to_owned(),
    });
    if !view.ahead.is_empty() {
        warnings.push(Warning::new(format!(
            "task{} {} {} checked with a commit that {remote}/{} does not have",
            plural(view.ahead.len()),
            tasks::join_numbers(&view.ahead),
            if view.ahead.len() == 1 { "is" } else { "are" },
            branch.unwrap_or_default()
        )));
    }
    for commit in &view.unknown {
        warnings.push(Warning::new(format!(
            "commit {} names task {}, which the tasks comment does not have",
            commit.short, commit.task
        )));
    }
    let mut o = Outcome::new(Exit::Ok, view);
    o.lines = lines;
    for warning in warnings {
        o = o.warn(warning);
    }
    o
}

fn check(ctx: &Context, args: CheckArgs) -> Result<Outcome<CheckOutput>, CommandError> {
    let sha = match &args.sha {
        Some(sha) => Some(
            ObjectPrefix::parse(sha)
                .map_err(|e| CommandError::usage(e.to_string()))?
                .as_str()
                .to_owned(),
        ),
        None => None,
    };
    let surface = ctx.surface()?;
    let checked = tasks::check_tasks(
        surface.as_ref(),
        &ctx.settings,
        args.issue,
        &[(args.task, sha)],
    )?;
    let line = if checked.checked.contains(&args.task) {
        format!("#{}: checked task {} off", args.issue, args.task)
    } else {
        format!("#{}: task {} was already checked", args.issue, args.task)
    };
    let next = tasks::next_task(&checked.tasks)
        .map(|next| format!("next: task {} — {}", next.number, next.title));
    let mut o = Outcome::new(
        Exit::Ok,
        CheckOutput {
            issue: args.issue,
            task: args.task,
            checked,
        },
    )
    .line(line);
    if let Some(next) = next {
        o = o.line(next);
    }
    Ok(o)
}

/// The branch `task done` commits to and pushes: the one checked out, as
/// long as it is one maverick can manage.
fn branch_to_push(git: &crate::git::Git) -> Result<String, CommandError> {
    use crate::git::Head;
    match git.head()? {
        Head::Branch(branch) => Ok(branch),
        Head::Detached => Err(CommandError::tool(
            "HEAD is detached: `task done` pushes the current branch",
        )
        .hint("switch to the story's branch: `git switch BRANCH`")),
        Head::NotUtf8(shown) => Err(CommandError::tool(format!(
            "the branch checked out, {shown}, has a name that is not UTF-8: maverick manages \
             no such branch, so `task done` does not push it"
        ))
        .hint(
            "rename it (git branch -m NEW-NAME) or switch to the story's branch (git switch \
             BRANCH); nothing was committed",
        )),
    }
}

fn done(ctx: &Context, args: DoneArgs) -> Result<Outcome<DoneOutput>, CommandError> {
    let remote = ctx.settings.remote.clone();
    let branch = branch_to_push(&ctx.git)?;
    let (issue, source) = issue_here(ctx, Some(&branch), args.issue)?;
    check_message(args.message.as_deref())?;
    let req = DoneRequest {
        issue,
        branch: &branch,
        task: args.task,
        message: args.message.as_deref(),
        allow_mass_delete: args.allow_mass_delete,
    };
    let what = task_done::to_commit(&ctx.git, &remote, &req)?;
    let surface = ctx.surface()?;
    let outcome = task_done::task_done(
        surface.as_ref(),
        &ctx.git,
        &ctx.settings,
        &ctx.claims()?,
        &req,
        what,
    )?;
    let report = match outcome {
        DoneOutcome::ClaimLost { reason } => return Ok(claim_lost(issue, reason)),
        DoneOutcome::Held { holder, stale } => {
            let exit = if stale {
                Exit::HeldStale
            } else {
                Exit::HeldLive
            };
            let line = format!(
                "#{issue} is claimed by {} (generation {}); nothing was committed",
                holder.instance_id, holder.generation
            );
            return Ok(Outcome::new(
                exit,
                DoneOutput::Held(Held {
                    issue,
                    committed: false,
                    pushed: false,
                    holder,
                }),
            )
            .line(line)
            .hint(if stale {
                format!("its lease is stale; take it over with `git maverick coord claim {issue} --takeover`")
            } else {
                "another instance works on this issue; pick another".to_owned()
            }));
        }
        DoneOutcome::Collision { number, short, why } => {
            return Ok(not_pushed(
                Exit::Collision,
                issue,
                number,
                &short,
                &remote,
                &branch,
                why,
            ))
        }
        DoneOutcome::Done(report) => report,
    };
    let DoneReport {
        task: number,
        sha,
        short,
        committed_now,
        checked,
        lease,
    } = report;
    let next = tasks::next_task(&checked.tasks).cloned();
    let total = checked.tasks.len();
    let last = match &next {
        Some(t) => format!("next: task {} — {}", t.number, t.title),
        None => format!(
            "{} done",
            crate::durable::tasks::all_tasks_are(total, Some(issue))
        ),
    };
    let output = Pushed {
        issue,
        issue_source: source,
        task: number,
        sha,
        short: short.clone(),
        branch: branch.clone(),
        remote: remote.clone(),
        committed: committed_now,
        pushed: true,
        done: checked.tasks.iter().filter(|t| t.done).count(),
        checked: checked.checked,
        next_task: next,
        total,
        lease: lease.clone(),
    };
    let mut o = Outcome::new(Exit::Ok, DoneOutput::Pushed(output)).line(format!(
        "task {number} of #{issue} done: {short} pushed to {remote}/{branch} and checked off"
    ));
    if !committed_now {
        o = o.line(format!(
            "({short} was committed earlier; this run pushed it)"
        ));
    }
    o = lease
        .iter()
        .fold(o, |o, kept| o.line(lease_line(issue, kept)));
    Ok(o.line(last))
}

/// The claim is lost: nothing was committed, and the staged work stays.
fn claim_lost(issue: u64, reason: String) -> Outcome<DoneOutput> {
    let line = format!("claim lost: {reason}; nothing was committed");
    Outcome::new(
        Exit::ClaimLost,
        DoneOutput::ClaimLost(ClaimLost {
            issue,
            committed: false,
            pushed: false,
            reason,
        }),
    )
    .line(line)
    .hint("stop working on this issue and report; do not push to its branch")
    .hint("the staged changes stay in the index: `git diff --cached` shows them")
}

/// What a person reads of the lease `task done` kept alive.
fn lease_line(issue: u64, kept: &LeaseKept) -> String {
    let until = kept
        .expires_at
        .map_or_else(String::new, |at| format!(" until {at}"));
    match kept.action {
        LeaseAction::Renewed => format!("lease on #{issue} renewed{until}"),
        LeaseAction::Retaken => format!(
            "the lease on #{issue} had lapsed{}, and nobody had claimed it: taken back as \
             generation {}{until}",
            kept.lapsed_at
                .map_or_else(String::new, |at| format!(" at {at}")),
            kept.generation
        ),
    }
}

/// A `-m` message is a conventional commit subject, or nothing is committed.
fn check_message(message: Option<&str>) -> Result<(), CommandError> {
    let Some(m) = message else { return Ok(()) };
    tasks::check_conventional(m).map_err(|e| {
        CommandError::from_error(Exit::Usage, e)
            .hint("nothing was committed; write e.g. -m \"feat(parser): accept CRLF line endings\"")
    })
}

/// A push that did not happen: the commit stays local, the task unchecked.
fn not_pushed(
    exit: Exit,
    issue: u64,
    number: usize,
    short: &str,
    remote: &str,
    branch: &str,
    why: String,
) -> Outcome<DoneOutput> {
    let line = format!("not pushed: {why}");
    Outcome::new(
        exit,
        DoneOutput::NotPushed(NotPushed {
            issue,
            task: number,
            short: short.to_owned(),
            branch: branch.to_owned(),
            committed: true,
            pushed: false,
            reason: why,
        }),
    )
    .line(line)
    .line(format!(
        "the commit {short} stays local on {branch}; task {number} of #{issue} stays unchecked"
    ))
    .hint(format!(
        "someone else pushed to {remote}/{branch}: stop and report; do not merge or overwrite"
    ))
}
