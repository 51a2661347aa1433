//! Maverick's own pushes (SPEC 8): a compare-and-swap that the remote itself
//! enforces. `git push --force-with-lease=<ref>:<last seen>` with a
//! non-forced refspec: the push goes through only if the remote's head is
//! still the one this writer last saw, and only as a fast-forward. A
//! rejection is a collision, never retried by merging.
//!
//! git forces any update whose lease matches (`force_ref_update` in
//! `remote.c`), refspec or not, so "only as a fast-forward" is checked here
//! before the push: the lease pins the remote to `expected`, and the pushed
//! commit must descend from it. When this clone has a claim on the branch,
//! the pusher must hold it by its records, the same check the pre-push hook
//! makes.

use crate::clock::Clock;
use crate::git::{Git, GitError, Hooks, PushOutcome};
use crate::records::branch::BranchStore;
use crate::records::files::RecordError;
use crate::writer::prepush::{self, BranchState};
use maverick_core::ids::InstanceId;

#[derive(Debug, thiserror::Error)]
pub enum PushError {
    #[error(
        "the remote's {branch} is no longer at {}: someone else pushed to it ({detail})",
        .expected.as_deref().unwrap_or("(absent)")
    )]
    Collision {
        branch: String,
        expected: Option<String>,
        detail: String,
    },
    #[error("the push of {branch} was refused: {reason}")]
    Refused { branch: String, reason: String },
    #[error(
        "{sha} does not descend from {expected}, the remote's {branch}: the push would rewrite it"
    )]
    NotFastForward {
        branch: String,
        expected: String,
        sha: String,
    },
    #[error("the push of {branch} was refused: {what}")]
    NotHolder {
        branch: String,
        what: String,
        hint: String,
    },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Record(#[from] RecordError),
}

/// Who pushes, as the branch record keeps it.
#[derive(Clone, Copy, Debug)]
pub struct Pusher<'a> {
    /// The issue the branch belongs to, when known.
    pub issue: Option<u64>,
    pub instance: &'a InstanceId,
    /// Stamps the record.
    pub clock: &'a Clock,
}

impl From<prepush::SeenError> for PushError {
    fn from(err: prepush::SeenError) -> Self {
        match err {
            prepush::SeenError::Git(e) => PushError::Git(e),
            prepush::SeenError::Record(e) => PushError::Record(e),
        }
    }
}

/// Pushes `rev` to `refs/heads/<branch>` on `remote` if the remote is still
/// at `expected` (`None`: the branch must not exist yet), then records the
/// new head as last seen. Returns the pushed commit.
pub fn cas_push(
    git: &Git,
    remote: &str,
    rev: &str,
    branch: &str,
    expected: Option<&str>,
    by: Pusher<'_>,
) -> Result<String, PushError> {
    let Pusher {
        issue,
        instance,
        clock,
    } = by;
    let sha = git.commit_of(rev)?;
    let common_dir = git.common_dir()?;
    let state = BranchState::load(&common_dir, branch)?;
    if !state.claims.is_empty() {
        if let Err((_, what, hint)) = prepush::check_holder(branch, &state.claims, instance) {
            return Err(PushError::NotHolder {
                branch: branch.to_owned(),
                what,
                hint,
            });
        }
    }
    if let Some(expected) = expected {
        if !git.is_ancestor(expected, &sha)? {
            return Err(PushError::NotFastForward {
                branch: branch.to_owned(),
                expected: expected.to_owned(),
                sha,
            });
        }
    }
    prepush::record_pushing(
        &common_dir,
        branch,
        &sha,
        expected,
        issue,
        instance,
        clock.now(),
    )?;
    crate::failpoint::hit("push-before-remote");
    let target = format!("refs/heads/{branch}");
    let outcome = git.push_with_lease(
        remote,
        &sha,
        &target,
        expected,
        Hooks::Run,
        "push the branch (compare-and-swap on its head)",
    )?;
    if let PushOutcome::Refused { status, error, .. } = outcome {
        return Err(match status {
            Some(line)
                if line.contains("stale info")
                    || line.contains("fetch first")
                    || line.contains("non-fast-forward") =>
            {
                PushError::Collision {
                    branch: branch.to_owned(),
                    expected: expected.map(str::to_owned),
                    detail: line,
                }
            }
            Some(line) => PushError::Refused {
                branch: branch.to_owned(),
                reason: line,
            },
            None => PushError::Refused {
                branch: branch.to_owned(),
                reason: error
                    .stderr()
                    .lines()
                    .filter(|l| !l.trim().is_empty())
                    .collect::<Vec<_>>()
                    .join(" / "),
            },
        });
    }
    prepush::record_seen(
        &common_dir,
        branch,
        Some(&sha),
        issue,
        instance,
        &prepush::SeenOn::of_remote(git, remote),
        clock.now(),
    )?;
    Ok(sha)
}

/// Maverick's own push of `rev` to `branch`, expecting the remote where this
/// clone last saw it: at its last-seen head, or, after plain `git push`es
/// the pre-push hook allowed, at one of the heads they left pending (told
/// apart with one `ls-remote`). No record: the branch must not exist yet.
/// Unlike a head that merely descends from the last-seen one, this accepts
/// only heads this clone pushed, the rule the pre-push hook applies.
pub fn cas_push_last_seen(
    git: &Git,
    remote: &str,
    rev: &str,
    branch: &str,
    by: Pusher<'_>,
) -> Result<String, PushError> {
    let common_dir = git.common_dir()?;
    let expected = match BranchStore::new(&common_dir).get(branch)? {
        None => None,
        Some(record) => {
            let expected = prepush::expected(git, &record)?;
            if expected.pending.is_empty() {
                expected.current
            } else {
                let head =
                    git.remote_head(remote, branch, "read the branch's head to push against")?;
                if !expected.accepts(head.as_deref()) {
                    return Err(PushError::Collision {
                        branch: branch.to_owned(),
                        expected: expected.newest().map(str::to_owned),
                        detail: format!(
                            "the remote is at {}",
                            head.as_deref().unwrap_or("(no branch)")
                        ),
                    });
                }
                head
            }
        }
    };
    cas_push(git, remote, rev, branch, expected.as_deref(), by)
}
