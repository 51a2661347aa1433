//! `git maverick resume BRANCH`: recreate a branch's worktree from the
//! remote and pick the work up where it stopped (SPEC 7).

use clap::Args;
use serde_json::json;

use super::{Context, Outcome};
use crate::cli::{issue_number, GlobalArgs};
use crate::coord::lease::{self, Coordinator, Decision, HeartbeatOutcome, IssueView};
use crate::durable::tasks::{self, IssueSource};
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

fn refused(exit: Exit, view: &IssueView, what: String, hint: String) -> Outcome {
    let json = json!({"issue": view.issue, "decision": view.decision, "view": view});
    Outcome::new(exit, json)
        .line(super::coord::describe(view))
        .note(format!("resume refused: {what}"))
        .note(format!("hint: {hint}"))
}

pub(crate) fn run(global: &GlobalArgs, args: ResumeArgs) -> Result<Outcome, CommandError> {
    let ctx = Context::load(global)?;
    let branch = super::branch_arg(&ctx.git, &args.branch)?;
    let issue = issue_of(&ctx, &branch, args.issue)?;
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
    let Some(remote_head) = fetch(&ctx, &branch)? else {
        return Err(CommandError::tool(format!(
            "{} has no branch {branch}: there is nothing to resume",
            ctx.settings.remote
        ))
        .hint("check the name (git ls-remote --heads REMOTE), or claim the issue and start the branch"));
    };
    crate::failpoint::hit("resume-after-fetch");
    let root = worktree::main_root(&ctx.git)?;
    let path = worktree::choose_path(&ctx.git, &root, &ctx.settings.worktree_dir, &branch)?;
    let plan = worktree::plan(
        &ctx.git,
        &path,
        &branch,
        &remote_head,
        ctx.settings.clock.now(),
    )?;
    if let LocalBranch::Ahead { local, commits } = &plan.local {
        let json = json!({
            "branch": branch, "issue": issue, "remote_head": remote_head,
            "local_head": local, "unpushed": commits,
        });
        let mut outcome = Outcome::new(Exit::Collision, json).note(format!(
            "resume refused: the local branch {branch} has {} commit(s) that {} lacks; it is never moved:",
            commits.len(),
            ctx.settings.remote
        ));
        for commit in commits {
            outcome = outcome.note(format!("  {commit}"));
        }
        return Ok(outcome
            .note("stop and report; do not merge or overwrite.")
            .note("hint: push them from the worktree that made them, or keep them on another branch (git branch -m) and resume again"));
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
                HeartbeatOutcome::Renewed { views, .. } => adopt_claim(&ctx, &views[0], &branch)?,
                HeartbeatOutcome::Lost { reason, views } => {
                    let json = json!({"issue": issue, "branch": branch, "reason": reason, "issues": views});
                    return Ok(Outcome::new(Exit::ClaimLost, json)
                        .line(format!("claim lost: {reason}"))
                        .note("hint: another instance owns this work now; do not resume it here"));
                }
            }
            "held"
        }
        // A stale lease is taken over; so is our own that ran out while no
        // machine worked on it: a lapsed lease is lost, never renewed (SPEC 4).
        Decision::Stale | Decision::Ours => {
            let (_, outcome) =
                super::coord::claim(&ctx, &coord, issue, Vec::new(), Some(branch.clone()), true)?;
            if outcome.exit != Exit::Ok {
                return Ok(outcome.note(format!(
                    "resume of {branch} stopped: the takeover of #{issue} did not go through"
                )));
            }
            match view.decision {
                Decision::Ours => "held",
                _ => "taken_over",
            }
        }
        // Nobody holds it: resume recreates the branch and claims nothing.
        _ => "none",
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
        ctx.settings.clock.now(),
    )?;
    let generation = match claim {
        "none" => None,
        _ => ctx
            .claims()?
            .load(&ctx.settings.instance, issue)?
            .map(|r| r.generation),
    };

    let tasks = reconcile_tasks(&ctx, issue, &branch)?;
    let next_task = tasks.as_ref().and_then(|t| t.next.clone());
    let state = if applied.repaired {
        "repaired"
    } else if applied.created {
        "created"
    } else {
        "reused"
    };
    let json = json!({
        "branch": branch,
        "issue": issue,
        "worktree": path,
        "head": head,
        "remote": ctx.settings.remote,
        "claim": claim,
        "generation": generation,
        "instance_id": ctx.settings.instance,
        "worktree_state": state,
        "fast_forwarded": applied.fast_forwarded,
        "moved_aside": applied.moved_aside,
        "next_task": next_task,
        "tasks": tasks,
    });
    let mut outcome = Outcome::new(Exit::Ok, json)
        .line(format!("worktree: {}", path.display()))
        .line(format!("branch:   {branch} ({state})"))
        .line(format!(
            "head:     {} {subject}",
            &head[..head.len().min(12)]
        ))
        .line(match generation {
            Some(g) if claim != "none" => format!(
                "issue:    #{issue} ({claim} by {}, generation {g})",
                ctx.settings.instance
            ),
            _ => format!("issue:    #{issue} (not claimed)"),
        });
    if let Some(tasks) = &tasks {
        for fixed in &tasks.reconciled {
            outcome = outcome.line(format!(
                "checked off task {} from {} (pushed before a crash)",
                fixed.task, fixed.short
            ));
        }
        outcome = outcome.line(match &next_task {
            Some(t) => format!(
                "next:     task {} of {} — {}",
                t.number, tasks.total, t.title
            ),
            None => format!("next:     nothing: all {} tasks are done", tasks.total),
        });
    }
    if let Some(aside) = &applied.moved_aside {
        outcome = outcome.note(format!(
            "note: a stale worktree directory was moved aside, not deleted: {}",
            aside.display()
        ));
    }
    outcome = super::warn_if_guard_off(&wt_git, outcome);
    if claim == "none" {
        outcome = outcome.note(format!(
            "note: nobody holds #{issue}; claim it before working on it: \
             git maverick coord claim {issue} --branch {branch}"
        ));
    }
    Ok(outcome)
}
