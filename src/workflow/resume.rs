//! `resume BRANCH` as a protocol (SPEC 7): recreate a branch's worktree from
//! the remote and pick the work up where it stopped. Entry check (who holds
//! the issue), the remote's head and what the local side would have to do,
//! the claim (ours, or taken over), the worktree, the last-seen record, and
//! the tasks reconciled with what was pushed. It returns what happened;
//! `commands/resume.rs` prints it and maps it to an exit code.

use std::path::PathBuf;

use crate::config::Settings;
use crate::coord::claims::{self, ClaimReport, ClaimsError, ScopeClaim};
use crate::coord::lease::{
    self, ClaimOutcome, Coordinator, Decision, HeartbeatOutcome, IssueView, Renewal,
};
use crate::durable::tasks::{self, TaskError, TaskListView};
use crate::git::{Git, GitError};
use crate::records::claim::{ClaimRecord, ClaimStore};
use crate::records::files::RecordError;
use crate::surface::{Surface, SurfaceError};
use crate::writer::prepush;
use crate::writer::worktree::{self, Applied, LocalBranch, WorktreeError};

/// What `resume` is asked to do.
pub(crate) struct ResumeRequest<'a> {
    /// The branch, as the remote names it (normalised).
    pub branch: &'a str,
    /// The branch's issue.
    pub issue: u64,
    /// Take the issue over when its holder's lease is stale.
    pub takeover: bool,
}

/// How `resume` ended when it did not fail.
pub(crate) enum ResumeOutcome {
    /// The entry check said no: nothing was fetched or changed.
    Refused(Refusal, Box<IssueView>),
    /// The local branch has commits the remote lacks: it is never moved.
    LocalAhead {
        remote_head: String,
        local: String,
        commits: Vec<String>,
    },
    /// Renewing our own claim found it lost.
    ClaimLost {
        reason: String,
        views: Vec<IssueView>,
    },
    /// The takeover of the issue did not go through.
    NotTakenOver(ClaimReport),
    Resumed(Box<Resumed>),
}

/// Why the entry check refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refusal {
    Blocked,
    HeldLive,
    /// Stale, and `--takeover` was not given.
    HeldStale,
}

/// This instance's claim on the issue after the resume.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ClaimState {
    /// Held already, and renewed (or claimed anew after its own lease
    /// lapsed).
    Held,
    /// A stale lease taken over.
    TakenOver,
    /// Nobody holds the issue; resume claims nothing.
    None,
}

impl ClaimState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ClaimState::Held => "held",
            ClaimState::TakenOver => "taken over",
            ClaimState::None => "none",
        }
    }
}

/// What became of the worktree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum WorktreeState {
    Created,
    Repaired,
    Reused,
}

impl WorktreeState {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WorktreeState::Created => "created",
            WorktreeState::Repaired => "repaired",
            WorktreeState::Reused => "reused",
        }
    }
}

/// A branch picked up.
pub(crate) struct Resumed {
    pub branch: String,
    pub issue: u64,
    pub worktree: PathBuf,
    pub head: String,
    pub subject: String,
    pub claim: ClaimState,
    /// The claim's generation, when there is a claim.
    pub generation: Option<u64>,
    pub applied: Applied,
    /// The issue's tasks, when it has a tasks comment.
    pub tasks: Option<TaskListView>,
    /// The new worktree, for what the command layer checks there.
    pub worktree_git: Git,
}

impl Resumed {
    /// What became of the worktree.
    pub(crate) fn worktree_state(&self) -> WorktreeState {
        if self.applied.repaired {
            WorktreeState::Repaired
        } else if self.applied.created {
            WorktreeState::Created
        } else {
            WorktreeState::Reused
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum ResumeError {
    /// The fetch itself failed (as git says; the command hints at the remote).
    #[error("{source}")]
    Fetch {
        remote: String,
        branch: String,
        #[source]
        source: GitError,
    },
    #[error("{remote} has no branch {branch}: there is nothing to resume")]
    NoRemoteBranch { remote: String, branch: String },
    #[error("this instance's claim on #{issue} is for branch {claimed}, not {branch}")]
    OtherBranch {
        issue: u64,
        claimed: String,
        branch: String,
    },
    #[error("could not write {}: {source}", path.display())]
    InstanceFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error(transparent)]
    Lease(#[from] lease::LeaseError),
    #[error(transparent)]
    Claims(#[from] ClaimsError),
    #[error(transparent)]
    Worktree(#[from] WorktreeError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Task(#[from] TaskError),
    #[error(transparent)]
    Guard(crate::writer::hookfile::HookFileError),
}

impl From<prepush::SeenError> for ResumeError {
    fn from(err: prepush::SeenError) -> Self {
        match err {
            prepush::SeenError::Git(e) => ResumeError::Git(e),
            prepush::SeenError::Record(e) => ResumeError::Record(e),
        }
    }
}

/// Resumes `req.branch` (see the module documentation).
pub(crate) fn resume(
    git: &Git,
    surface: &dyn Surface,
    settings: &Settings,
    store: &ClaimStore,
    req: &ResumeRequest<'_>,
) -> Result<ResumeOutcome, ResumeError> {
    let coord = Coordinator::new(surface, settings);
    let (branch, issue) = (req.branch, req.issue);

    // 1. Entry check: who holds the issue, an open pull request included
    // (as `coord read` judges it; the branch resumed is this writer's own).
    let view = claims::read_with_pulls(&coord, &[issue], &[branch.to_owned()])?.remove(0);
    if let Some(refusal) = entry_refusal(view.decision(), req.takeover) {
        return Ok(ResumeOutcome::Refused(refusal, Box::new(view)));
    }

    // 2. The remote's head, and what the local side would have to do.
    let remote_head = fetch(git, &settings.remote, branch)?;
    crate::failpoint::hit("resume-after-fetch");
    let root = worktree::main_root(git)?;
    let path = worktree::choose_path(git, &root, &settings.worktree_dir, branch)?;
    let plan = worktree::plan(git, &path, branch, &remote_head, settings.clock.now())?;
    if let LocalBranch::Ahead { local, commits } = &plan.local {
        return Ok(ResumeOutcome::LocalAhead {
            remote_head,
            local: local.clone(),
            commits: commits.clone(),
        });
    }

    // 3. The claim: ours already, or claimed (taken over) now.
    let claim = match take_claim(git, &coord, store, &view, branch)? {
        Ok(claim) => claim,
        Err(outcome) => return Ok(outcome),
    };

    // 4. The worktree, ignored by the main one.
    let common_dir = git.common_dir()?;
    worktree::exclude(&common_dir, &settings.worktree_dir)?;
    let applied = worktree::apply(git, &plan, &settings.remote, settings.clock.now())?;
    let worktree_git = git.at(&plan.path);
    if applied.created {
        keep_instance(&worktree_git, settings.instance.as_str())?;
        carry_guard(git, &worktree_git)?;
    }

    // 5. Last seen: where the remote was when this writer picked it up.
    prepush::record_seen(
        &common_dir,
        branch,
        Some(&remote_head),
        Some(issue),
        &settings.instance,
        &prepush::SeenOn::of_settings(git, settings),
        settings.clock.now(),
    )?;
    let generation = match claim {
        ClaimState::None => None,
        _ => store.load(&settings.instance, issue)?.map(|r| r.generation),
    };

    // 6. The tasks, healed where a crash came between a push and its check mark.
    let tasks = reconcile_tasks(surface, git, settings, issue, branch)?;
    Ok(ResumeOutcome::Resumed(Box::new(Resumed {
        branch: branch.to_owned(),
        issue,
        worktree: plan.path.clone(),
        head: worktree_git.commit_of("HEAD")?,
        subject: worktree_git.subject("HEAD")?,
        claim,
        generation,
        applied,
        tasks,
        worktree_git,
    })))
}

/// The entry check's verdict on a decision: free, ours and (with
/// `--takeover`) stale go on.
fn entry_refusal(decision: Decision, takeover: bool) -> Option<Refusal> {
    match decision {
        Decision::Blocked => Some(Refusal::Blocked),
        Decision::Held => Some(Refusal::HeldLive),
        Decision::Stale if !takeover => Some(Refusal::HeldStale),
        _ => None,
    }
}

/// Fetches `branch` into its remote-tracking ref and returns its head.
fn fetch(git: &Git, remote: &str, branch: &str) -> Result<String, ResumeError> {
    git.fetch_branch(remote, branch, "bring the branch to resume")
        .map_err(|source| ResumeError::Fetch {
            remote: remote.to_owned(),
            branch: branch.to_owned(),
            source,
        })?
        .ok_or_else(|| ResumeError::NoRemoteBranch {
            remote: remote.to_owned(),
            branch: branch.to_owned(),
        })
}

/// Makes the issue this instance's: renews a live claim of ours (which
/// confirms it is still ours), takes over a stale one or our own lapsed one
/// (a lapsed lease is lost, never renewed: SPEC 4), and claims nothing when
/// nobody holds it. The outcome to return instead when that fails.
fn take_claim(
    git: &Git,
    coord: &Coordinator<'_>,
    store: &ClaimStore,
    view: &IssueView,
    branch: &str,
) -> Result<Result<ClaimState, ResumeOutcome>, ResumeError> {
    let issue = view.issue;
    match view.decision() {
        Decision::Ours => match claims::heartbeat(
            coord,
            store,
            &[issue],
            Some(view.generation),
            Renewal::WHEN_DUE,
        )? {
            HeartbeatOutcome::Renewed { views, .. } => {
                adopt_claim(coord.settings, store, &views[0], branch)?;
                Ok(Ok(ClaimState::Held))
            }
            HeartbeatOutcome::Lost { reason, views } => {
                Ok(Err(ResumeOutcome::ClaimLost { reason, views }))
            }
        },
        Decision::Stale | Decision::Lapsed => {
            let request = ScopeClaim {
                issue,
                scope: Vec::new(),
                branch: Some(branch.to_owned()),
                takeover: true,
            };
            let report = claims::claim_scope(git, coord, store, request)?;
            if !matches!(report.outcome, ClaimOutcome::Claimed { .. }) {
                return Ok(Err(ResumeOutcome::NotTakenOver(report)));
            }
            Ok(Ok(match view.decision() {
                Decision::Lapsed => ClaimState::Held,
                _ => ClaimState::TakenOver,
            }))
        }
        _ => Ok(Ok(ClaimState::None)),
    }
}

/// Makes sure this clone has a claim record for an issue the surface says
/// we hold (resuming our own work from another clone).
fn adopt_claim(
    settings: &Settings,
    store: &ClaimStore,
    view: &IssueView,
    branch: &str,
) -> Result<(), ResumeError> {
    let mut record = match store.load(&settings.instance, view.issue)? {
        Some(r) => r,
        None => ClaimRecord {
            // The branch is checked and set below.
            branch: None,
            ..claims::record_of(settings, view)
        },
    };
    match record.branch.as_deref() {
        Some(claimed) if claimed != branch => {
            return Err(ResumeError::OtherBranch {
                issue: view.issue,
                claimed: claimed.to_owned(),
                branch: branch.to_owned(),
            });
        }
        _ => record.branch = Some(branch.to_owned()),
    }
    record.generation = view.generation;
    record.last_confirmed = view.now;
    record.expires_at = view.expires_at.unwrap_or(view.now);
    record.lost = None;
    store.save(&record)?;
    Ok(())
}

/// A new worktree works for the instance that resumed it: a generated id is
/// kept per worktree, and the claim is this instance's.
fn keep_instance(worktree_git: &Git, instance: &str) -> Result<(), ResumeError> {
    let path = worktree_git.git_dir()?.join("maverick").join("instance");
    if path.exists() {
        return Ok(());
    }
    crate::records::files::write_atomically(&path, format!("{instance}\n").as_bytes())
        .map_err(|source| ResumeError::InstanceFile { path, source })
}

/// A relative `core.hooksPath` names a folder of each worktree, so a new
/// worktree would push without the guard the main one has: it gets the
/// guard too, in a file kept out of commits (`info/exclude`). A hook file
/// the branch tracks is the project's, never changed: the guard-off warning
/// says so then.
fn carry_guard(main: &Git, worktree_git: &Git) -> Result<(), ResumeError> {
    use crate::writer::hookmanager::{self, Manager, Setup};
    let (main_setup, setup) = (Setup::detect(main)?, Setup::detect(worktree_git)?);
    let inside = setup.hooks_dir.starts_with(&setup.top) && main_setup.hooks_dir != setup.hooks_dir;
    if !inside || setup.manager != Manager::None || !hookmanager::status(&main_setup).on {
        return Ok(());
    }
    let hook = setup.hook_file();
    let Ok(relative) = hook.strip_prefix(&setup.top) else {
        return Ok(());
    };
    if worktree_git.is_tracked(relative)? || hookmanager::status(&setup).on {
        return Ok(());
    }
    worktree::exclude_pattern(
        &setup.common_dir,
        &format!("/{}", relative.display()),
        "git maverick's pre-push guard in resume's worktrees (core.hooksPath is relative)",
    )?;
    hookmanager::install(&setup).map_err(|e| match e {
        hookmanager::ManagerError::Git(e) => ResumeError::Git(e),
        hookmanager::ManagerError::Worktree(e) => ResumeError::Worktree(e),
        hookmanager::ManagerError::HookFile(e) => ResumeError::Guard(e),
    })?;
    Ok(())
}

/// Reconciles the tasks comment of `issue` with the `Maverick-Task`
/// trailers on the remote branch (a crash between push and check-off heals
/// here): `None` when the issue has no tasks comment (SPEC 6 and 7).
fn reconcile_tasks(
    surface: &dyn Surface,
    git: &Git,
    settings: &Settings,
    issue: u64,
    branch: &str,
) -> Result<Option<TaskListView>, ResumeError> {
    let view = tasks::reconcile(surface, git, settings, issue, Some(branch))?;
    Ok(view.comment_id.is_some().then_some(view))
}
