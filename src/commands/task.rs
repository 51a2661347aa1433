//! `git maverick task`: push-per-task (SPEC 6).

use std::io::Read as _;

use clap::{Args, Subcommand};
use serde_json::json;

use super::{Context, Outcome};
use crate::cli::{issue_number, GlobalArgs};
use crate::durable::tasks::{self, IssueSource, Task, TaskError, TaskListView};
use crate::error::{CommandError, Exit};
use crate::workflow::task_done::{self, DoneOutcome, DoneReport, DoneRequest};

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
}

pub(crate) fn run(global: &GlobalArgs, args: TaskArgs) -> Result<Outcome, CommandError> {
    let ctx = Context::load(global)?;
    match args.command {
        TaskCommand::Init(a) => init(&ctx, a),
        TaskCommand::List(a) => list(&ctx, a),
        TaskCommand::Check(a) => check(&ctx, a),
        TaskCommand::Done(a) => done(&ctx, a).map(|o| super::warn_if_guard_off(&ctx.git, o)),
    }
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

fn init(ctx: &Context, mut args: InitArgs) -> Result<Outcome, CommandError> {
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
    let mut o = Outcome::new(
        Exit::Ok,
        serde_json::to_value(&outcome).expect("outcome serializes"),
    )
    .line(format!(
        "#{}: {verb} the tasks comment ({} task{}, comment {})",
        args.issue,
        outcome.tasks.len(),
        plural(outcome.tasks.len()),
        outcome.comment_id
    ));
    for task in &outcome.tasks {
        o = o.line(task_line(task));
    }
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

fn list(ctx: &Context, mut args: ListArgs) -> Result<Outcome, CommandError> {
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
    Ok(list_outcome(&view, &ctx.settings.remote))
}

/// What `task list` shows; also what `resume` can print.
pub(crate) fn list_outcome(view: &TaskListView, remote: &str) -> Outcome {
    let mut o = Outcome::new(
        Exit::Ok,
        serde_json::to_value(view).expect("view serializes"),
    );
    let branch = view.branch.as_ref().map(|b| b.name.as_str());
    for commit in &view.reconciled {
        o = o.line(format!(
            "checked off task {} from {} on {remote}/{} (pushed, but not yet checked)",
            commit.task,
            commit.short,
            branch.unwrap_or_default()
        ));
    }
    o = o.line(format!(
        "#{}: {}/{} task{} done",
        view.issue,
        view.done,
        view.total,
        plural(view.total)
    ));
    for task in &view.tasks {
        o = o.line(task_line(task));
    }
    o = o.line(match &view.next {
        Some(t) => format!("next: task {} — {}", t.number, t.title),
        None => "next: none, all tasks are done".to_owned(),
    });
    if !view.ahead.is_empty() {
        o = o.note(format!(
            "warning: task{} {} {} checked with a commit that {remote}/{} does not have",
            plural(view.ahead.len()),
            tasks::join_numbers(&view.ahead),
            if view.ahead.len() == 1 { "is" } else { "are" },
            branch.unwrap_or_default()
        ));
    }
    for commit in &view.unknown {
        o = o.note(format!(
            "warning: commit {} names task {}, which the tasks comment does not have",
            commit.short, commit.task
        ));
    }
    o
}

fn valid_sha(sha: &str) -> bool {
    (4..=40).contains(&sha.len()) && sha.bytes().all(|b| b.is_ascii_hexdigit())
}

fn check(ctx: &Context, args: CheckArgs) -> Result<Outcome, CommandError> {
    if let Some(sha) = &args.sha {
        if !valid_sha(sha) {
            return Err(CommandError::usage(format!("{sha:?} is not a commit sha")));
        }
    }
    let surface = ctx.surface()?;
    let sha = args.sha.map(|s| s.to_ascii_lowercase());
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
    let mut o = Outcome::new(
        Exit::Ok,
        json!({"issue": args.issue, "task": args.task, "checked": checked}),
    )
    .line(line);
    if let Some(next) = tasks::next_task(&checked.tasks) {
        o = o.line(format!("next: task {} — {}", next.number, next.title));
    }
    Ok(o)
}

fn done(ctx: &Context, args: DoneArgs) -> Result<Outcome, CommandError> {
    let remote = ctx.settings.remote.clone();
    let branch = ctx.git.current_branch()?.ok_or_else(|| {
        CommandError::tool("HEAD is detached: `task done` pushes the current branch")
            .hint("switch to the story's branch: `git switch BRANCH`")
    })?;
    let (issue, source) = issue_here(ctx, Some(&branch), args.issue)?;
    if let Some(m) = &args.message {
        tasks::check_conventional(m).map_err(|e| {
            CommandError::from_error(Exit::Usage, &e).hint(
                "nothing was committed; write e.g. -m \"feat(parser): accept CRLF line endings\"",
            )
        })?;
    }

    let req = DoneRequest {
        issue,
        branch: &branch,
        task: args.task,
        message: args.message.as_deref(),
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
        DoneOutcome::ClaimLost { reason } => {
            return Ok(Outcome::new(
                Exit::ClaimLost,
                json!({"issue": issue, "committed": false, "pushed": false, "reason": reason}),
            )
            .line(format!("claim lost: {reason}; nothing was committed"))
            .note("hint: stop working on this issue and report; do not push to its branch"))
        }
        DoneOutcome::Held { holder, stale } => {
            let exit = if stale {
                Exit::HeldStale
            } else {
                Exit::HeldLive
            };
            return Ok(Outcome::new(
                exit,
                json!({"issue": issue, "committed": false, "pushed": false, "holder": holder}),
            )
            .line(format!(
                "#{issue} is claimed by {} (generation {}); nothing was committed",
                holder.instance_id, holder.generation
            ))
            .note(if stale {
                format!("hint: its lease is stale; take it over with `git maverick coord claim {issue} --takeover`")
            } else {
                "hint: another instance works on this issue; pick another".to_owned()
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
    } = report;
    let next = tasks::next_task(&checked.tasks);
    let json = json!({
        "issue": issue,
        "issue_source": source,
        "task": number,
        "sha": sha,
        "short": short,
        "branch": branch,
        "remote": remote,
        "committed": committed_now,
        "pushed": true,
        "checked": checked.checked,
        "next_task": next,
        "done": checked.tasks.iter().filter(|t| t.done).count(),
        "total": checked.tasks.len(),
    });
    let mut o = Outcome::new(Exit::Ok, json).line(format!(
        "task {number} of #{issue} done: {short} pushed to {remote}/{branch} and checked off"
    ));
    if !committed_now {
        o = o.line(format!(
            "({short} was committed earlier; this run pushed it)"
        ));
    }
    Ok(o.line(match next {
        Some(t) => format!("next: task {} — {}", t.number, t.title),
        None => format!("all {} tasks of #{issue} are done", checked.tasks.len()),
    }))
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
) -> Outcome {
    Outcome::new(
        exit,
        json!({
            "issue": issue,
            "task": number,
            "short": short,
            "branch": branch,
            "committed": true,
            "pushed": false,
            "reason": why,
        }),
    )
    .line(format!("not pushed: {why}"))
    .line(format!(
        "the commit {short} stays local on {branch}; task {number} of #{issue} stays unchecked"
    ))
    .note(format!(
        "hint: someone else pushed to {remote}/{branch}: stop and report; do not merge or overwrite"
    ))
}
