//! `task done` as a protocol (SPEC 6, push-per-task): commit what is staged
//! with the task trailers, push it as a compare-and-swap, check the task off
//! and move the task-progress marker. It works over `&dyn Surface` and the
//! git layer and returns what happened; `commands/task.rs` prints it and
//! maps it to an exit code.

use crate::config::Settings;
use crate::coord::claims;
use crate::coord::lease::{
    self, ClaimOutcome, ClaimRequest, Coordinator, Decision, HeartbeatOutcome, Renewal,
};
use crate::durable::tasks::{self, Checked, TaskError};
use crate::git::{Git, GitError, Order};
use crate::records::branch::BranchStore;
use crate::records::claim::{ClaimRecord, ClaimStore};
use crate::records::files::RecordError;
use crate::surface::{Issue, Surface, SurfaceError};
use crate::timefmt::Timestamp;
use crate::writer::push::{self, PushError};

/// What `task done` is asked to do.
pub(crate) struct DoneRequest<'a> {
    pub issue: u64,
    /// The current branch: the one committed on and pushed.
    pub branch: &'a str,
    /// `--task N`; otherwise the next open task without a commit.
    pub task: Option<usize>,
    /// `-m`; otherwise the task's title, when it is a Conventional Commits message.
    pub message: Option<&'a str>,
    /// `--allow-mass-delete`: commit even when the index deletes most of
    /// the tree.
    pub allow_mass_delete: bool,
}

/// How `task done` ended when it did not fail.
#[derive(Debug)]
pub(crate) enum DoneOutcome {
    /// The claim record says this clone held the issue, and it no longer does.
    ClaimLost {
        reason: String,
    },
    /// Another instance holds the issue (this clone never claimed it).
    Held {
        holder: lease::ClaimView,
        stale: bool,
    },
    /// Committed, not pushed: someone else's push is in the way.
    Collision {
        number: usize,
        short: String,
        why: String,
    },
    Done(DoneReport),
}

/// A task pushed and checked off.
#[derive(Debug)]
pub(crate) struct DoneReport {
    pub task: usize,
    pub sha: String,
    pub short: String,
    /// False when the commit was made by an earlier run that could not push it.
    pub committed_now: bool,
    pub checked: Checked,
    /// What the run did to this instance's lease before committing.
    pub lease: Option<LeaseKept>,
}

/// How `task done` kept this instance's claim alive (SPEC 4: a person's
/// claim never lapses unseen): it renews a live lease, and re-takes one
/// that lapsed while nobody else claimed the issue.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct LeaseKept {
    /// `renewed` (the lease was live) or `retaken` (it had lapsed: a new
    /// claim, a new generation).
    pub action: LeaseAction,
    pub generation: u64,
    pub expires_at: Option<crate::timefmt::Timestamp>,
    /// When the lease had lapsed, for a re-take.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lapsed_at: Option<crate::timefmt::Timestamp>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LeaseAction {
    Renewed,
    Retaken,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum DoneError {
    #[error("nothing is staged: the index has no changes to commit")]
    NothingStaged,
    #[error(
        "HEAD is task {unpushed}'s commit, not yet pushed, and nothing is staged for task {asked}"
    )]
    UnpushedOther { unpushed: usize, asked: usize },
    #[error("{} checked off", crate::durable::tasks::all_tasks_are(*.total, Some(*.issue)))]
    AllChecked { issue: u64, total: usize },
    #[error("every unchecked task of #{issue} ({open}) already has a commit on {branch}")]
    AllCommitted {
        issue: u64,
        open: String,
        branch: String,
    },
    #[error(
        "no -m given, and task {number}'s title {title:?} is not a Conventional Commits message"
    )]
    NotConventional { number: usize, title: String },
    #[error(
        "the staged changes delete {deleted} of the {tracked} files HEAD tracks ({first}{more}): \
         most of the tree, as a broken worktree or index would"
    )]
    MassDelete {
        deleted: usize,
        tracked: usize,
        first: String,
        more: String,
    },
    #[error("{0}")]
    Commit(GitError),
    #[error("committed {short} locally but could not push it: {source}; task {number} of #{issue} stays unchecked")]
    Push {
        short: String,
        number: usize,
        issue: u64,
        source: Box<PushError>,
    },
    #[error(
        "pushed {short} to {remote}/{branch}, but could not check task {number} off: {source}"
    )]
    CheckOff {
        short: String,
        remote: String,
        branch: String,
        number: usize,
        issue: u64,
        source: Box<TaskError>,
    },
    #[error(transparent)]
    Task(#[from] TaskError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error(transparent)]
    Record(#[from] RecordError),
    /// Renewing or re-taking the claim before committing.
    #[error(transparent)]
    Claims(#[from] claims::ClaimsError),
}

/// What `task done` commits: the index, or a task commit an earlier run
/// made but could not push. Read before the surface is reached, so that an
/// empty index is reported first.
#[derive(Debug)]
pub(crate) struct ToCommit {
    head: Option<String>,
    /// The task of an unpushed task commit at HEAD, when nothing is staged.
    unpushed_task: Option<usize>,
}

/// Refuses an index that deletes more than half of the files HEAD tracks:
/// what a half-made worktree (an empty index) or a stray `git rm -r` would
/// commit, and push, as a task (issue 29).
fn refuse_mass_delete(git: &Git) -> Result<(), DoneError> {
    let (deleted, tracked) = git.staged_deletions()?;
    if deleted.is_empty() || deleted.len() * 2 <= tracked {
        return Ok(());
    }
    let shown = 3;
    Err(DoneError::MassDelete {
        deleted: deleted.len(),
        tracked,
        first: deleted[..deleted.len().min(shown)].join(", "),
        more: match deleted.len().saturating_sub(shown) {
            0 => String::new(),
            n => format!(" and {n} more"),
        },
    })
}

/// Finds what to commit; `NothingStaged` when there is nothing.
pub(crate) fn to_commit(
    git: &Git,
    remote: &str,
    req: &DoneRequest<'_>,
) -> Result<ToCommit, DoneError> {
    let staged = git.has_staged_changes()?;
    if staged && !req.allow_mass_delete {
        refuse_mass_delete(git)?;
    }
    let head = git.resolve_commit("HEAD")?;
    let mut unpushed_task: Option<usize> = None;
    if !staged {
        if let Some(h) = &head {
            let trailers = git.task_trailers(h, 1, Order::NewestFirst)?;
            let task_numbers = trailers.first().map_or(&[][..], |c| &c.tasks[..]);
            if trailers.first().is_some_and(|c| c.names_issue(req.issue))
                && !task_numbers.is_empty()
            {
                let on_remote = match git.remote_head(
                    remote,
                    req.branch,
                    "see whether the last task commit is already on the remote",
                )? {
                    Some(r) => r == *h || git.is_ancestor(h, &r)?,
                    None => false,
                };
                if !on_remote {
                    unpushed_task = task_numbers.first().copied();
                }
            }
        }
        if unpushed_task.is_none() {
            return Err(DoneError::NothingStaged);
        }
    }
    Ok(ToCommit {
        head,
        unpushed_task,
    })
}

/// Runs `task done` on what `to_commit` found: see the module
/// documentation. Nothing is committed when the claim fence refuses or the
/// request is wrong; a commit that cannot be pushed stays, and the next run
/// pushes it.
pub(crate) fn task_done(
    surface: &dyn Surface,
    git: &Git,
    settings: &Settings,
    claims: &ClaimStore,
    req: &DoneRequest<'_>,
    what: ToCommit,
) -> Result<DoneOutcome, DoneError> {
    let (issue, branch) = (req.issue, req.branch);
    let lease = match fence(surface, settings, claims, issue)? {
        Fence::Refused(refused) => return Ok(refused),
        Fence::Pass(lease) => lease,
    };

    // Heal first (SPEC 6): a crash between an earlier push and its check
    // mark leaves that task unchecked; picking it again would label the new
    // work with its number and shift every later task by one.
    let healed = tasks::reconcile(surface, git, settings, issue, Some(branch))?;
    if healed.comment_id.is_none() {
        return Err(TaskError::NoTasksComment { issue }.into());
    }
    let number = pick_task(git, req, &what, &healed.tasks)?;

    // 1. Commit.
    let sha = match what.unpushed_task {
        Some(_) => what.head.clone().expect("an unpushed task commit is HEAD"),
        None => commit(git, req, &healed.tasks[number - 1])?,
    };
    let short = git.short_name(&sha)?;

    // 2. Push, as a compare-and-swap against the remote's head.
    let live = git.remote_head(
        &settings.remote,
        branch,
        "read the branch's head to push against",
    )?;
    if let Some(why) = collision(git, branch, live.as_deref(), &sha, &short)? {
        return Ok(DoneOutcome::Collision { number, short, why });
    }
    let pusher = push::Pusher {
        issue: Some(issue),
        instance: &settings.instance,
        clock: &settings.clock,
    };
    match push::cas_push(git, &settings.remote, &sha, branch, live.as_deref(), pusher) {
        Ok(_) => {
            crate::failpoint::hit("task-done-after-push");
            // Tracking is a convenience: the push stands without it.
            let _ = git.set_upstream_if_unset(&settings.remote, branch);
        }
        Err(err @ PushError::Collision { .. }) => {
            return Ok(DoneOutcome::Collision {
                number,
                short,
                why: err.to_string(),
            });
        }
        Err(source) => {
            return Err(DoneError::Push {
                short,
                number,
                issue,
                source: Box::new(source),
            })
        }
    }

    // 3. Check off every task whose commit this push brought to the remote.
    let pushed = Pushed {
        number,
        total: healed.tasks.len(),
        before: live,
        sha,
        short,
    };
    let checked = check_off(surface, git, settings, req, &pushed)?;
    Ok(DoneOutcome::Done(DoneReport {
        task: number,
        sha: pushed.sha,
        short: pushed.short,
        committed_now: what.unpushed_task.is_none(),
        checked,
        lease,
    }))
}

/// The fence's answer: go on (with what it did to our lease), or stop.
enum Fence {
    Pass(Option<LeaseKept>),
    Refused(DoneOutcome),
}

/// The fence (SPEC 4): never write for a claim that is no longer ours, and
/// keep a claim that is ours alive. From the issue's holding verdict: a
/// live lease of ours is renewed; one that lapsed is re-taken (a new claim,
/// a new generation) while nobody else has claimed the issue, and refused
/// when someone has; another instance's claim refuses.
fn fence(
    surface: &dyn Surface,
    settings: &Settings,
    claims: &ClaimStore,
    issue: u64,
) -> Result<Fence, DoneError> {
    let instance = &settings.instance;
    // One read of the claim's scope answers both the check and the
    // renewal (the heartbeat is handed it, and reads nothing again).
    let (scope, record) = claims::scope_of(claims, instance, issue)?;
    // A claim this clone already knows it lost is refused before anything
    // is read from the surface.
    if let Some(reason) = record.as_ref().and_then(|r| r.lost.clone()) {
        return Ok(Fence::Refused(DoneOutcome::ClaimLost { reason }));
    }
    let read = surface.claim_records(&scope)?;
    let now = surface.now()?;
    let Some(current) = read.iter().find(|i| i.number == issue) else {
        return Err(SurfaceError::NoSuchIssue(issue).into());
    };
    let view = lease::analyze(current, settings, instance, now);
    let fenced = record.as_ref().map(|r| r.generation);
    let lost = |reason: String| Ok(Fence::Refused(DoneOutcome::ClaimLost { reason }));
    match (view.decision(), &view.holder) {
        (Decision::Ours | Decision::Lapsed, _) if fenced.is_some_and(|g| g != view.generation) => {
            lost(format!(
                "the generation of #{issue} changed from {} to {}",
                fenced.unwrap_or_default(),
                view.generation
            ))
        }
        (Decision::Ours | Decision::Lapsed, _) => keep_alive(
            surface,
            settings,
            claims,
            &view,
            (scope, record),
            (read, now),
        ),
        (Decision::Held | Decision::Stale, Some(h)) if record.is_none() => {
            Ok(Fence::Refused(DoneOutcome::Held {
                holder: h.clone(),
                stale: view.decision() == Decision::Stale,
            }))
        }
        (_, Some(h)) => lost(format!("#{issue} is held by {}", h.who())),
        (_, None) if record.is_some() => {
            lost(format!("#{issue} is no longer claimed by {instance}"))
        }
        // Never claimed here, and nobody holds it: work without a claim.
        (_, None) => Ok(Fence::Pass(None)),
    }
}

/// Renews our live lease on the claim's scope, or re-takes our lapsed one;
/// a loss (someone claimed it meanwhile) refuses.
fn keep_alive(
    surface: &dyn Surface,
    settings: &Settings,
    store: &ClaimStore,
    view: &lease::IssueView,
    (issues, record): (Vec<u64>, Option<ClaimRecord>),
    read: (Vec<Issue>, Timestamp),
) -> Result<Fence, DoneError> {
    if view.decision() == Decision::Ours {
        // Renewed for the ttl the claim declared, not this clone's
        // `maverick.leaseTtl` of the moment: a 20-minute claim stays one.
        let declared = Settings {
            lease_ttl: view.holder.as_ref().map_or(settings.lease_ttl, |h| h.ttl),
            ..settings.clone()
        };
        let coord = Coordinator::new(surface, &declared);
        return Ok(
            match claims::heartbeat_read(
                &coord,
                store,
                &issues,
                read,
                Some(view.generation),
                Renewal::WHEN_DUE,
            )? {
                HeartbeatOutcome::Renewed {
                    generation, views, ..
                } => Fence::Pass(Some(LeaseKept {
                    action: LeaseAction::Renewed,
                    generation,
                    expires_at: views.first().and_then(|v| v.expires_at),
                    lapsed_at: None,
                })),
                HeartbeatOutcome::Lost { reason, .. } => {
                    Fence::Refused(DoneOutcome::ClaimLost { reason })
                }
            },
        );
    }
    let coord = Coordinator::new(surface, settings);
    let branch = record
        .and_then(|r| r.branch)
        .or_else(|| view.holder.as_ref().and_then(|h| h.branch.clone()));
    let request = ClaimRequest {
        issues,
        branch: branch.as_deref(),
        takeover: false,
    };
    Ok(match claims::claim(&coord, store, &request)? {
        ClaimOutcome::Claimed {
            generation, views, ..
        } => Fence::Pass(Some(LeaseKept {
            action: LeaseAction::Retaken,
            generation,
            expires_at: views.first().and_then(|v| v.expires_at),
            lapsed_at: view.expires_at,
        })),
        other => {
            let reason = match views_of(&other).iter().find_map(|v| v.holder.as_ref()) {
                Some(h) if h.instance_id != settings.instance => format!(
                    "the lease of {} on #{} lapsed and {} claimed it (generation {})",
                    settings.instance,
                    view.issue,
                    h.who(),
                    h.generation
                ),
                _ => format!(
                    "the lease of {} on #{} lapsed and could not be taken back",
                    settings.instance, view.issue
                ),
            };
            claims::mark_lost(store, &settings.instance, &request.issues, &reason)?;
            Fence::Refused(DoneOutcome::ClaimLost { reason })
        }
    })
}

/// The issues a claim attempt read.
fn views_of(outcome: &ClaimOutcome) -> &[lease::IssueView] {
    match outcome {
        ClaimOutcome::Claimed { views, .. }
        | ClaimOutcome::Blocked { views }
        | ClaimOutcome::Held { views }
        | ClaimOutcome::Stale { views }
        | ClaimOutcome::Lost { views, .. } => views,
    }
}

/// The task this run commits: `--task N`, else the task of an unpushed
/// task commit at HEAD, else the first open task without a commit on the
/// branch (pushed or not: it is never picked again unless `--task` names it).
fn pick_task(
    git: &Git,
    req: &DoneRequest<'_>,
    what: &ToCommit,
    tasks: &[tasks::Task],
) -> Result<usize, DoneError> {
    let (issue, total) = (req.issue, tasks.len());
    match (req.task, what.unpushed_task) {
        (Some(k), _) if k == 0 || k > total => Err(TaskError::OutOfRange {
            issue,
            number: k,
            total,
        }
        .into()),
        (Some(k), Some(u)) if k != u => Err(DoneError::UnpushedOther {
            unpushed: u,
            asked: k,
        }),
        (Some(k), _) => Ok(k),
        (None, Some(u)) => Ok(u),
        (None, None) => {
            let committed: Vec<usize> = match &what.head {
                Some(h) => tasks::task_commits(git, h, issue)?
                    .1
                    .into_iter()
                    .map(|c| c.task)
                    .collect(),
                None => Vec::new(),
            };
            if let Some(t) = tasks
                .iter()
                .find(|t| !t.done && !committed.contains(&t.number))
            {
                return Ok(t.number);
            }
            let open: Vec<usize> = tasks.iter().filter(|t| !t.done).map(|t| t.number).collect();
            Err(if open.is_empty() {
                DoneError::AllChecked { issue, total }
            } else {
                DoneError::AllCommitted {
                    issue,
                    open: tasks::join_numbers(&open),
                    branch: req.branch.to_owned(),
                }
            })
        }
    }
}

/// Commits the index as `task` (`-m`, else the task's title when it is a
/// Conventional Commits message) with the task trailers; returns the commit.
fn commit(git: &Git, req: &DoneRequest<'_>, task: &tasks::Task) -> Result<String, DoneError> {
    let message = match req.message {
        Some(m) => m.to_owned(),
        None if tasks::check_conventional(&task.title).is_ok() => task.title.clone(),
        None => {
            return Err(DoneError::NotConventional {
                number: task.number,
                title: task.title.clone(),
            })
        }
    };
    git.commit_task(&message, req.issue, task.number)
        .map_err(DoneError::Commit)?;
    let sha = git.commit_of("HEAD")?;
    crate::failpoint::hit("task-done-after-commit");
    Ok(sha)
}

/// Why pushing `sha` over the remote's head `live` would be a collision,
/// if it would. That head must be one our commit descends from (so the push
/// overwrites nothing this clone does not have) and, when this clone
/// recorded a last-seen head (claim, resume, an earlier push), that very
/// head or one its own plain `git push` left (the pre-push hook records
/// those): anything else is someone else's push, a collision to report,
/// never to build on. Without a record (this clone never claimed, resumed
/// or pushed the branch), nobody's work can be lost by a fast-forward of
/// what the remote has now, and the swap refuses anything pushed after this
/// look.
fn collision(
    git: &Git,
    branch: &str,
    live: Option<&str>,
    sha: &str,
    short: &str,
) -> Result<Option<String>, DoneError> {
    if let Some(l) = live {
        if !git.is_ancestor(l, sha)? {
            return Ok(Some(format!(
                "the remote's {branch} is at {l}, which {short} does not descend from"
            )));
        }
    }
    let common_dir = git.common_dir()?;
    let Some(recorded) = BranchStore::new(&common_dir).get(branch)? else {
        return Ok(None);
    };
    // Where this writer left the remote: the head it last saw, or a push of
    // its own since (a plain `git push`, with or without the hook: git logs
    // it on the remote-tracking ref; or one the hook left pending).
    let expected = crate::writer::prepush::expected(git, &recorded)?;
    if expected.accepts(live) {
        return Ok(None);
    }
    Ok(Some(match (live, &expected.current) {
        (Some(l), Some(s)) => format!(
            "the remote's {branch} moved from {s}, last seen by this clone, to {l}: someone else pushed to it"
        ),
        (Some(l), None) => format!(
            "the remote's {branch} appeared at {l}, where this clone last saw no branch: someone else pushed to it"
        ),
        (None, _) => format!(
            "the remote's {branch} is gone; this clone last saw it at {}",
            expected.newest().unwrap_or("(no branch)")
        ),
    }))
}

/// A task commit that reached the remote.
struct Pushed {
    number: usize,
    /// How many tasks the issue has.
    total: usize,
    /// The remote's head before the push.
    before: Option<String>,
    sha: String,
    short: String,
}

/// Checks off every task whose commit the push brought to the remote (its
/// own, and any earlier task commit it carried), and moves the
/// task-progress marker.
fn check_off(
    surface: &dyn Surface,
    git: &Git,
    settings: &Settings,
    req: &DoneRequest<'_>,
    pushed: &Pushed,
) -> Result<Checked, DoneError> {
    let (issue, branch) = (req.issue, req.branch);
    let Pushed {
        number,
        total,
        before,
        sha,
        short,
    } = pushed;
    let pushed_range = match before {
        Some(old) if git.is_ancestor(old, sha)? => format!("{old}..{sha}"),
        _ => sha.clone(),
    };
    let mut checks: Vec<(usize, Option<String>)> = vec![(*number, Some(short.clone()))];
    for commit in git.task_trailers(&pushed_range, 200, Order::OldestFirst)? {
        if !commit.names_issue(issue) {
            continue;
        }
        for &t in &commit.tasks {
            if t >= 1 && t <= *total && !checks.iter().any(|(n, _)| *n == t) {
                checks.push((t, Some(commit.short.clone())));
            }
        }
    }
    checks.sort_by_key(|(n, _)| *n);
    let after_push = |source: TaskError| DoneError::CheckOff {
        short: short.clone(),
        remote: settings.remote.clone(),
        branch: branch.to_owned(),
        number: *number,
        issue,
        source: Box::new(source),
    };
    let checked = tasks::check_tasks(surface, settings, issue, &checks).map_err(after_push)?;
    crate::failpoint::hit("task-done-after-check-off");
    crate::failpoint::hit("task-done-before-progress");
    tasks::update_progress(
        surface,
        settings,
        issue,
        checked.comment_id,
        "implement",
        Some(branch),
        tasks::Pushed {
            task: Some(*number),
            head: Some(sha.as_str()),
        },
    )
    .map_err(after_push)?;
    Ok(checked)
}

#[cfg(test)]
mod tests {
    //! The protocol over `&dyn Surface` without the binary: the git surface
    //! on a bare origin in a temporary directory, and a real clone.
    use std::path::Path;
    use std::process::Command;

    use super::*;
    use crate::config::SurfaceKind;
    use crate::git::GitEnv;
    use crate::surface::git::GitSurface;

    const BRANCH: &str = "7-parser";

    fn sh(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// A bare origin and a clone of it on the story's branch.
    fn clone(root: &Path, name: &str) -> Git {
        let dir = root.join(name);
        sh(
            root,
            &[
                "clone",
                "--quiet",
                root.join("origin.git").to_str().unwrap(),
                name,
            ],
        );
        sh(&dir, &["config", "user.name", name]);
        sh(&dir, &["config", "user.email", "a@example.com"]);
        Git::new(
            &dir,
            GitEnv::inherit()
                .set("GIT_CONFIG_GLOBAL", "/dev/null")
                .set("GIT_CONFIG_NOSYSTEM", "1"),
        )
    }

    fn setup(root: &Path) -> (Git, Settings, GitSurface) {
        sh(root, &["init", "--quiet", "--bare", "origin.git"]);
        let git = clone(root, "a");
        let dir = git.dir().to_owned();
        sh(&dir, &["checkout", "--quiet", "-b", BRANCH]);
        std::fs::write(dir.join("README"), "start\n").unwrap();
        sh(&dir, &["add", "README"]);
        sh(&dir, &["commit", "--quiet", "-m", "chore: start"]);
        sh(&dir, &["push", "--quiet", "origin", BRANCH]);
        let settings = Settings::defaults(SurfaceKind::Git, "agent-a");
        let surface = GitSurface::new(git.clone(), "origin", "", "agent-a", settings.clock.clone());
        let new = tasks::parse_task_input("feat(parser): read input\nfeat(parser): write output\n")
            .unwrap();
        tasks::init_tasks(&surface, &settings, 7, &new, false, Some(BRANCH)).unwrap();
        (git, settings, surface)
    }

    fn stage(git: &Git, file: &str) {
        std::fs::write(git.dir().join(file), "work\n").unwrap();
        sh(git.dir(), &["add", file]);
    }

    fn done(
        git: &Git,
        settings: &Settings,
        surface: &GitSurface,
    ) -> Result<DoneOutcome, DoneError> {
        let req = DoneRequest {
            issue: 7,
            branch: BRANCH,
            task: None,
            message: None,
            allow_mass_delete: false,
        };
        let what = to_commit(git, &settings.remote, &req)?;
        let claims = ClaimStore::new(&git.common_dir().unwrap());
        task_done(surface, git, settings, &claims, &req, what)
    }

    fn checked_tasks(surface: &GitSurface, git: &Git, settings: &Settings) -> Vec<bool> {
        tasks::reconcile(surface, git, settings, 7, None)
            .unwrap()
            .tasks
            .iter()
            .map(|t| t.done)
            .collect()
    }

    #[test]
    fn a_staged_task_is_committed_pushed_and_checked_off() {
        let root = tempfile::tempdir().unwrap();
        let (git, settings, surface) = setup(root.path());
        stage(&git, "input.rs");
        let DoneOutcome::Done(report) = done(&git, &settings, &surface).unwrap() else {
            panic!("not done");
        };
        assert_eq!(report.task, 1);
        assert!(report.committed_now);
        assert_eq!(report.checked.checked, vec![1]);
        // The commit carries the trailers and is the origin's head.
        let origin = root.path().join("origin.git");
        assert_eq!(sh(&origin, &["rev-parse", BRANCH]), report.sha);
        let message = sh(&origin, &["log", "-1", "--format=%B", BRANCH]);
        assert!(message.starts_with("feat(parser): read input"), "{message}");
        assert!(
            message.contains(": 7\n") && message.ends_with(": 1"),
            "{message}"
        );
        assert_eq!(checked_tasks(&surface, &git, &settings), vec![true, false]);

        // The next run takes the next task.
        stage(&git, "output.rs");
        let DoneOutcome::Done(report) = done(&git, &settings, &surface).unwrap() else {
            panic!("not done");
        };
        assert_eq!(report.task, 2);
        assert_eq!(checked_tasks(&surface, &git, &settings), vec![true, true]);
        // Nothing left: an empty index is refused before anything else.
        assert!(matches!(
            done(&git, &settings, &surface),
            Err(DoneError::NothingStaged)
        ));
    }

    #[test]
    fn someone_elses_push_is_a_collision_and_the_task_stays_open() {
        let root = tempfile::tempdir().unwrap();
        let (git, settings, surface) = setup(root.path());
        // Another clone pushes to the branch first.
        let other = clone(root.path(), "b");
        sh(other.dir(), &["checkout", "--quiet", BRANCH]);
        std::fs::write(other.dir().join("theirs.rs"), "theirs\n").unwrap();
        sh(other.dir(), &["add", "theirs.rs"]);
        sh(other.dir(), &["commit", "--quiet", "-m", "feat: theirs"]);
        sh(other.dir(), &["push", "--quiet", "origin", BRANCH]);
        let theirs = sh(other.dir(), &["rev-parse", "HEAD"]);

        stage(&git, "input.rs");
        let outcome = done(&git, &settings, &surface).unwrap();
        let DoneOutcome::Collision { number, why, .. } = outcome else {
            panic!("no collision: {outcome:?}");
        };
        assert_eq!(number, 1);
        assert!(why.contains("does not descend from"), "{why}");
        // Their commit stays; ours is committed here only; nothing is checked.
        let origin = root.path().join("origin.git");
        assert_eq!(sh(&origin, &["rev-parse", BRANCH]), theirs);
        assert_eq!(checked_tasks(&surface, &git, &settings), vec![false, false]);
        assert!(!git.has_staged_changes().unwrap());
    }

    #[test]
    fn a_commit_left_unpushed_is_pushed_by_the_next_run() {
        let root = tempfile::tempdir().unwrap();
        let (git, settings, surface) = setup(root.path());
        // An earlier run committed task 1 and stopped before its push.
        stage(&git, "input.rs");
        git.commit_task("feat(parser): read input", 7, 1).unwrap();
        let left = git.commit_of("HEAD").unwrap();
        let DoneOutcome::Done(report) = done(&git, &settings, &surface).unwrap() else {
            panic!("not done");
        };
        assert_eq!((report.task, report.committed_now), (1, false));
        assert_eq!(report.sha, left);
        let origin = root.path().join("origin.git");
        assert_eq!(sh(&origin, &["rev-parse", BRANCH]), left);
        assert_eq!(checked_tasks(&surface, &git, &settings), vec![true, false]);
    }
}
