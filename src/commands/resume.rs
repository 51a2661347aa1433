//! `git maverick resume BRANCH`: recreate a branch's worktree from the
//! remote and pick the work up where it stopped (SPEC 7).

use clap::Args;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Serialize;

use super::{Context, Outcome};
use crate::cli::{issue_number, GlobalArgs};
use crate::coord::lease::{self, ClaimOutcome, Coordinator, Decision, HeartbeatOutcome, IssueView};
use crate::durable::tasks::{self, IssueSource, Task, TaskListView};
use crate::error::{CommandError, Exit};
use crate::records::claim::ClaimRecord;
use crate::writer::prepush;
use crate::writer::worktree::{self, LocalBranch};

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

/// The issue of `branch`: the claim record that names it, else `--issue`,
/// else the branch name (`maverick/142-…`). A flag that contradicts the
/// claim record is a usage error, not a silent choice.
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
    pub instance_id: String,
    pub worktree_state: WorktreeState,
    pub fast_forwarded: bool,
    /// Where a stale worktree directory was moved aside.
    pub moved_aside: Option<PathBuf>,
    pub next_task: Option<Task>,
    pub tasks: Option<TaskListView>,
}

/// This instance's claim on the issue after the resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ClaimState {
    /// Held already, and renewed.
    Held,
    /// A stale lease taken over.
    TakenOver,
    /// Nobody holds the issue; resume claims nothing.
    None,
}

impl ClaimState {
    fn as_str(self) -> &'static str {
        match self {
            ClaimState::Held => "held",
            ClaimState::TakenOver => "taken_over",
            ClaimState::None => "none",
        }
    }
}

/// What became of the worktree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WorktreeState {
    Created,
    Repaired,
    Reused,
}

impl WorktreeState {
    fn as_str(self) -> &'static str {
        match self {
            WorktreeState::Created => "created",
            WorktreeState::Repaired => "repaired",
            WorktreeState::Reused => "reused",
        }
    }
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

/// Fetches `branch` into its remote-tracking ref; `None` when the remote
/// has no such branch.
fn fetch(ctx: &Context, branch: &str) -> Result<Option<String>, CommandError> {
    let remote = &ctx.settings.remote;
    ctx.git.fetch_branch(remote, branch).map_err(|e| {
        CommandError::from(e).hint(format!("check that `git fetch {remote}` works from here"))
    })
}

/// Makes sure this clone has a claim record for an issue the surface says
/// we hold (resuming our own work from another clone).
fn adopt_claim(ctx: &Context, view: &IssueView, branch: &str) -> Result<(), CommandError> {
    let store = ctx.claims()?;
    let me = &ctx.settings.instance;
    let mut record = match store.load(me, view.issue)? {
        Some(r) => r,
        None => ClaimRecord {
            // The branch is checked and set below.
            branch: None,
            ..crate::coord::claims::record_of(&ctx.settings, view)
        },
    };
    match record.branch.as_deref() {
        Some(b) if b != branch => {
            return Err(CommandError::usage(format!(
                "this instance's claim on #{} is for branch {b}, not {branch}",
                view.issue
            ))
            .hint(format!("resume {b} instead")));
        }
        _ => record.branch = Some(branch.to_owned()),
    }
    record.generation = view.generation;
    record.last_confirmed = view.now.to_string();
    record.expires_at = view.expires_at.unwrap_or(view.now).to_string();
    record.lost = None;
    store.save(&record)?;
    Ok(())
}

/// Reconciles the tasks comment of `issue` with the `Maverick-Task`
/// trailers on the remote branch (a crash between push and check-off heals
/// here) and returns what it found: `None` when the issue has no tasks
/// comment (SPEC 6 and 7).
fn reconcile_tasks(
    ctx: &Context,
    issue: u64,
    branch: &str,
) -> Result<Option<tasks::TaskListView>, CommandError> {
    let surface = ctx.surface()?;
    let view = tasks::reconcile(
        surface.as_ref(),
        &ctx.git,
        &ctx.settings,
        issue,
        Some(branch),
    )?;
    Ok(view.comment_id.is_some().then_some(view))
}

fn refused(exit: Exit, view: &IssueView, what: String, hint: String) -> Outcome<ResumeOutput> {
    let output = Refused {
        issue: view.issue,
        decision: view.decision,
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
    let coord = Coordinator::new(surface.as_ref(), &ctx.settings);

    // 1. Entry check: who holds the issue.
    let view = coord.read(&[issue])?.remove(0);
    let holder = view
        .holder
        .as_ref()
        .map_or("nobody".to_owned(), |h| h.instance_id.clone());
    match view.decision {
        Decision::Blocked => {
            return Ok(refused(
                Exit::Blocked,
                &view,
                format!("#{issue} is blocked"),
                "work on the blocking issues first".to_owned(),
            ))
        }
        Decision::Held => {
            return Ok(refused(
                Exit::HeldLive,
                &view,
                format!("{holder} holds #{issue} with a live lease"),
                "someone is working on it; resume only once its lease is released or stale"
                    .to_owned(),
            ))
        }
        Decision::Stale if !args.takeover => {
            return Ok(refused(
                Exit::HeldStale,
                &view,
                format!("{holder} holds #{issue}, but its lease is stale"),
                format!("take it over: git maverick resume {branch} --takeover"),
            ))
        }
        _ => {}
    }

    // 2. The remote's head, and what the local side would have to do.
    let Some(remote_head) = fetch(ctx, &branch)? else {
        return Err(CommandError::tool(format!(
            "{} has no branch {branch}: there is nothing to resume",
            ctx.settings.remote
        ))
        .hint("check the name (git ls-remote --heads REMOTE), or claim the issue and start the branch"));
    };
    crate::failpoint::hit("resume-after-fetch");
    let root = worktree::main_root(&ctx.git)?;
    let path = worktree::choose_path(&ctx.git, &root, &ctx.settings.worktree_dir, &branch)?;
    let plan = worktree::plan(&ctx.git, &path, &branch, &remote_head)?;
    if let LocalBranch::Ahead { local, commits } = &plan.local {
        let output = LocalAhead {
            branch: branch.clone(),
            issue,
            remote_head: remote_head.clone(),
            local_head: local.clone(),
            unpushed: commits.clone(),
        };
        let mut outcome = Outcome::new(Exit::Collision, ResumeOutput::LocalAhead(output)).note(format!(
            "resume refused: the local branch {branch} has {} commit(s) that {} lacks; it is never moved:",
            commits.len(),
            ctx.settings.remote
        ));
        for commit in commits {
            outcome = outcome.note(format!("  {commit}"));
        }
        return Ok(outcome
            .note("stop and report; do not merge or overwrite.")
            .hint("push them from the worktree that made them, or keep them on another branch (git branch -m) and resume again"));
    }

    // 3. The claim: ours already, or claimed (taken over) now.
    let claim = match view.decision {
        Decision::Ours if !lease::lapsed(&view) => {
            // Picking the work up renews the lease, and confirms the claim
            // is still ours.
            match crate::coord::claims::heartbeat(
                &coord,
                &ctx.claims()?,
                &[issue],
                Some(view.generation),
            )? {
                HeartbeatOutcome::Renewed { views, .. } => adopt_claim(ctx, &views[0], &branch)?,
                HeartbeatOutcome::Lost { reason, views } => {
                    let line = format!("claim lost: {reason}");
                    let output = ClaimLost {
                        issue,
                        branch: branch.clone(),
                        reason,
                        issues: views,
                    };
                    return Ok(
                        Outcome::new(Exit::ClaimLost, ResumeOutput::ClaimLost(output))
                            .line(line)
                            .hint("another instance owns this work now; do not resume it here"),
                    );
                }
            }
            ClaimState::Held
        }
        // A stale lease is taken over; so is our own that ran out while no
        // machine worked on it: a lapsed lease is lost, never renewed (SPEC 4).
        Decision::Stale | Decision::Ours => {
            let (_, outcome) =
                super::coord::claim(ctx, &coord, issue, Vec::new(), Some(branch.clone()), true)?;
            if outcome.exit != Exit::Ok {
                return Ok(outcome.map(ResumeOutput::Claim).note(format!(
                    "resume of {branch} stopped: the takeover of #{issue} did not go through"
                )));
            }
            match view.decision {
                Decision::Ours => ClaimState::Held,
                _ => ClaimState::TakenOver,
            }
        }
        // Nobody holds it: resume recreates the branch and claims nothing.
        _ => ClaimState::None,
    };

    // 4. The worktree, ignored by the main one.
    let common_dir = ctx.git.common_dir()?;
    worktree::exclude(&common_dir, &ctx.settings.worktree_dir)?;
    let applied = worktree::apply(&ctx.git, &plan, &ctx.settings.remote)?;
    let path = plan.path.clone();
    let wt_git = ctx.git.at(&path);
    let instance_file = wt_git.git_dir()?.join("maverick").join("instance");
    if applied.created && !instance_file.exists() {
        // The new worktree works for the instance that resumed it: a
        // generated id is kept per worktree, and the claim is this instance's.
        crate::records::files::write_atomically(
            &instance_file,
            format!("{}\n", ctx.settings.instance).as_bytes(),
        )
        .map_err(|e| {
            CommandError::tool(format!("could not write {}: {e}", instance_file.display()))
        })?;
    }
    let head = wt_git.commit_of("HEAD")?;
    let subject = wt_git.subject("HEAD")?;

    // 5. Last seen: where the remote was when this writer picked it up.
    prepush::record_seen(
        &common_dir,
        &branch,
        Some(&remote_head),
        Some(issue),
        &ctx.settings.instance,
        &prepush::SeenOn::of_settings(&ctx.git, &ctx.settings),
    )?;
    let generation = match claim {
        ClaimState::None => None,
        _ => ctx
            .claims()?
            .load(&ctx.settings.instance, issue)?
            .map(|r| r.generation),
    };

    let tasks = reconcile_tasks(ctx, issue, &branch)?;
    let next_task = tasks.as_ref().and_then(|t| t.next.clone());
    let state = if applied.repaired {
        WorktreeState::Repaired
    } else if applied.created {
        WorktreeState::Created
    } else {
        WorktreeState::Reused
    };
    let mut lines = vec![
        format!("worktree: {}", path.display()),
        format!("branch:   {branch} ({})", state.as_str()),
        format!("head:     {} {subject}", &head[..head.len().min(12)]),
        match generation {
            Some(g) if claim != ClaimState::None => format!(
                "issue:    #{issue} ({} by {}, generation {g})",
                claim.as_str(),
                ctx.settings.instance
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
            None => format!("next:     nothing: all {} tasks are done", tasks.total),
        });
    }
    let aside = applied.moved_aside.clone();
    let output = Resumed {
        branch: branch.clone(),
        issue,
        worktree: path,
        head,
        remote: ctx.settings.remote.clone(),
        claim,
        generation,
        instance_id: ctx.settings.instance.clone(),
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
            "note: a stale worktree directory was moved aside, not deleted: {}",
            aside.display()
        ));
    }
    outcome = super::warn_if_guard_off(&wt_git, outcome);
    if claim == ClaimState::None {
        outcome = outcome.note(format!(
            "note: nobody holds #{issue}; claim it before working on it: \
             git maverick coord claim {issue} --branch {branch}"
        ));
    }
    Ok(outcome)
}
