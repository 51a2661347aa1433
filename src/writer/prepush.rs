//! One writer per branch (SPEC 8): the checks the pre-push hook makes, and
//! that maverick's own pushes make before their compare-and-swap.
//!
//! A branch is *managed* by this clone when a local claim record names it or
//! a last-seen record exists for it. For a managed branch, a push
//! - must come from the instance that holds the branch's claim, as its own
//!   local record last confirmed it (not lost, not expired, no newer
//!   generation recorded by another instance of this clone);
//! - must not delete the branch;
//! - must find the remote where this writer last saw it: the remote object
//!   name git hands the hook comes from the remote's own ref advertisement
//!   for this very push, so the check costs no network call;
//! - must be a fast-forward of that head.
//!
//! Everything else (tags, unmanaged branches, repositories without maverick)
//! is allowed after at most a few file stats: no git process, no network.
//!
//! ## Why "pending" heads
//!
//! git has no post-push hook: the pre-push hook cannot know whether the push
//! it allowed went through. Recording the pushed commit as last seen would
//! turn a push that then failed at the remote (a server hook, a dropped
//! connection) into a false "moved head" next time; keeping the old head
//! would turn every successful plain `git push` into one. So an allowed push
//! records its commit as *pending*, and the next push accepts the remote
//! head when it is the last-seen head or one of the pending ones (then
//! promoted to last seen). A pending commit is one this writer made and
//! chose to push, so the remote showing it can only mean our push landed.
//! A `reference-transaction` hook could observe the remote-tracking ref move
//! instead, but it would run on every ref update in the repository, which
//! is a cost every commit and checkout would pay.

use std::path::{Path, PathBuf};

use crate::coord::record::{ClaimRecord, ClaimStore};
use crate::files::RecordError;
use crate::git::{Git, GitEnv, GitError};
use crate::timefmt::Timestamp;
use crate::writer::branch_record::{BranchRecord, BranchStore};

/// What this writer keeps pending at most (one per allowed push in a row
/// that the remote never confirmed).
const MAX_PENDING: usize = 8;

/// One line of the pre-push hook's stdin:
/// `<local ref> SP <local sha> SP <remote ref> SP <remote sha>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefUpdate {
    pub local_ref: String,
    /// `None` for a deletion.
    pub local_sha: Option<String>,
    pub remote_ref: String,
    /// `None` when the remote does not have the ref.
    pub remote_sha: Option<String>,
}

impl RefUpdate {
    /// The branch this update writes to on the remote, if it writes to one.
    pub fn branch(&self) -> Option<&str> {
        self.remote_ref.strip_prefix("refs/heads/")
    }
}

#[derive(Debug, thiserror::Error)]
pub enum PrePushError {
    #[error("the pre-push hook got a line it does not understand: {0:?}")]
    BadLine(String),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Record(#[from] RecordError),
}

fn null_sha(sha: &str) -> bool {
    !sha.is_empty() && sha.bytes().all(|b| b == b'0')
}

/// Parses git's pre-push stdin. Blank lines are skipped; anything else that
/// is not four fields is an error (the hook fails closed).
pub fn parse_updates(input: &str) -> Result<Vec<RefUpdate>, PrePushError> {
    let mut updates = Vec::new();
    for line in input.lines() {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(' ').collect();
        let [local_ref, local_sha, remote_ref, remote_sha] = fields[..] else {
            return Err(PrePushError::BadLine(line.to_owned()));
        };
        let hex = |s: &str| s.len() >= 40 && s.bytes().all(|b| b.is_ascii_hexdigit());
        if !hex(local_sha) || !hex(remote_sha) {
            return Err(PrePushError::BadLine(line.to_owned()));
        }
        let sha = |s: &str| (!null_sha(s)).then(|| s.to_ascii_lowercase());
        updates.push(RefUpdate {
            local_ref: local_ref.to_owned(),
            local_sha: sha(local_sha),
            remote_ref: remote_ref.to_owned(),
            remote_sha: sha(remote_sha),
        });
    }
    Ok(updates)
}

/// The repository's common git dir, found from the environment git gives
/// hooks (`env`) and the `.git` entry of the working directory, without
/// running git. `None` when it cannot be told that way (the caller asks git).
pub fn locate_common_dir(cwd: &Path, env: &GitEnv) -> Option<PathBuf> {
    let absolute = |p: PathBuf| if p.is_absolute() { p } else { cwd.join(p) };
    if let Some(dir) = env.get("GIT_COMMON_DIR") {
        return Some(absolute(PathBuf::from(dir)));
    }
    let git_dir = match env.get("GIT_DIR") {
        Some(dir) => absolute(PathBuf::from(dir)),
        None => {
            let dot_git = cwd.join(".git");
            let meta = std::fs::metadata(&dot_git).ok()?;
            if meta.is_dir() {
                dot_git
            } else {
                // A linked worktree or a submodule: `gitdir: <path>`.
                let text = std::fs::read_to_string(&dot_git).ok()?;
                let target = text.strip_prefix("gitdir:")?.trim();
                absolute(PathBuf::from(target))
            }
        }
    };
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => {
            let common = PathBuf::from(text.trim_end_matches(['\n', '\r']));
            Some(if common.is_absolute() {
                common
            } else {
                git_dir.join(common)
            })
        }
        Err(_) => Some(git_dir),
    }
}

/// True when maverick has never written anything in this clone: then no
/// branch can be managed and the hook has nothing to check.
pub fn maverick_absent(common_dir: &Path) -> bool {
    !common_dir.join("maverick").is_dir()
}

/// What this clone knows about one branch.
#[derive(Clone, Debug, Default)]
pub struct BranchState {
    /// Claim records of every instance of this clone that name the branch.
    pub claims: Vec<ClaimRecord>,
    pub seen: Option<BranchRecord>,
}

impl BranchState {
    pub fn load(common_dir: &Path, branch: &str) -> Result<BranchState, RecordError> {
        let seen = BranchStore::new(common_dir).get(branch)?;
        let issue = seen.as_ref().and_then(|s| s.issue);
        // A claim made without --branch (`task done` takes the branch from
        // its name) holds the branch whose record names its issue.
        let claims = ClaimStore::new(common_dir)
            .all()?
            .into_iter()
            .filter(|c| match &c.branch {
                Some(b) => b == branch,
                None => Some(c.issue) == issue,
            })
            .collect();
        Ok(BranchState { claims, seen })
    }

    pub fn managed(&self) -> bool {
        self.seen.is_some() || !self.claims.is_empty()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    /// The pusher holds no claim on the branch (another instance does, or nobody).
    NotHolder,
    /// A heartbeat found the claim lost, or this clone recorded a newer generation.
    ClaimLost,
    Deletion,
    /// The remote head is not the one this writer last saw.
    MovedHead,
    /// The branch exists on the remote but this writer never recorded its head.
    NeverSeen,
    NonFastForward,
}

impl RefusalKind {
    /// Whether the pusher lost (or never had) the claim, as opposed to a
    /// collision on the branch itself. The command layer maps this to an
    /// exit code.
    pub fn claim_lost(self) -> bool {
        matches!(self, RefusalKind::NotHolder | RefusalKind::ClaimLost)
    }
}

/// Why a push of one branch is refused, with everything a person needs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Refusal {
    pub kind: RefusalKind,
    pub branch: String,
    /// The remote's head as it advertised it for this push.
    pub remote_head: Option<String>,
    pub last_seen: Option<String>,
    /// What the push would have set the branch to (`None`: a deletion).
    pub pushed: Option<String>,
    /// What happened, in one sentence.
    pub what: String,
    /// The way out.
    pub hint: String,
}

impl Refusal {
    /// The lines a person sees (stderr of `git push`).
    pub fn describe(&self, remote: &str) -> Vec<String> {
        let head = |sha: &Option<String>| sha.clone().unwrap_or_else(|| "(no branch)".to_owned());
        vec![
            format!("maverick: push of {} refused: {}", self.branch, self.what),
            format!("  branch:          {}", self.branch),
            format!(
                "  remote head:     {} ({remote}, as it answered)",
                head(&self.remote_head)
            ),
            format!("  last seen here:  {}", head(&self.last_seen)),
            format!("  this push:       {}", head(&self.pushed)),
            if self.kind.claim_lost() {
                "maverick: claim lost: stop and report; do not merge or overwrite.".to_owned()
            } else {
                "maverick: stop and report; do not merge or overwrite.".to_owned()
            },
            format!("hint: {}", self.hint),
        ]
    }
}

/// The claim check: `me` must hold the claim on the branch as its own
/// records last confirmed. `claims` are the records naming the branch.
pub fn check_holder(
    branch: &str,
    claims: &[ClaimRecord],
    me: &str,
) -> Result<(), (RefusalKind, String, String)> {
    let mine: Vec<&ClaimRecord> = claims.iter().filter(|c| c.instance_id == me).collect();
    if mine.is_empty() {
        let what = match claims.first() {
            Some(other) => format!(
                "{branch} is claimed by {} (#{}, generation {}), not by {me}",
                other.instance_id, other.issue, other.generation
            ),
            None => format!("{me} holds no claim on {branch}"),
        };
        let issue = claims
            .first()
            .map_or("N".to_owned(), |c| c.issue.to_string());
        return Err((
            RefusalKind::NotHolder,
            what,
            format!(
                "only the holder of the claim pushes to {branch}. If this worktree works for another \
                 instance, set MAVERICK_INSTANCE (or `git config maverick.instance`); if the issue is \
                 free, claim it first: git maverick coord claim {issue} --branch {branch}"
            ),
        ));
    }
    for record in &mine {
        if let Some(reason) = &record.lost {
            return Err((
                RefusalKind::ClaimLost,
                format!(
                    "the claim of {me} on #{} (generation {}) was lost: {reason}",
                    record.issue, record.generation
                ),
                "another instance owns this work now; do not push it here".to_owned(),
            ));
        }
        if let Some(newer) = claims
            .iter()
            .find(|c| c.issue == record.issue && c.generation > record.generation)
        {
            return Err((
                RefusalKind::ClaimLost,
                format!(
                    "#{} was taken over by {} (generation {}); {me} holds generation {}",
                    record.issue, newer.instance_id, newer.generation, record.generation
                ),
                "another instance owns this work now; do not push it here".to_owned(),
            ));
        }
    }
    Ok(())
}

/// Warnings for the holder whose lease, as last confirmed, has run out. A
/// stale lease is still held until someone takes it over (SPEC 4: the
/// generation is the fence), and the hook cannot ask the surface; it can
/// only say so.
pub fn lease_warnings(claims: &[ClaimRecord], me: &str, now: Timestamp) -> Vec<String> {
    claims
        .iter()
        .filter(|c| c.instance_id == me)
        .filter_map(|c| {
            let expired = Timestamp::parse(&c.expires_at).filter(|e| *e <= now)?;
            Some(format!(
                "maverick: warning: the lease of {me} on #{} expired at {expired}; if another instance \
                 took it over, this push is a collision it will see. Renew it: git maverick coord heartbeat {}",
                c.issue, c.issue
            ))
        })
        .collect()
}

/// Checks one update of a managed branch. `me` is the pushing instance.
pub fn check_update(
    git: &Git,
    update: &RefUpdate,
    state: &BranchState,
    me: &str,
) -> Result<Option<Refusal>, GitError> {
    let branch = update.branch().unwrap_or(&update.remote_ref).to_owned();
    // What this writer believes the remote holds: its newest push not yet
    // confirmed, else the head it last saw.
    let last_seen = state
        .seen
        .as_ref()
        .and_then(|s| s.pending.last().cloned().or_else(|| s.last_seen.clone()));
    let refusal = |kind, what: String, hint: String| Refusal {
        kind,
        branch: branch.clone(),
        remote_head: update.remote_sha.clone(),
        last_seen: last_seen.clone(),
        pushed: update.local_sha.clone(),
        what,
        hint,
    };
    // A branch guarded only by its last-seen record (maverick pushed it for
    // work nobody claimed here) has no holder to check; the rest applies.
    if !state.claims.is_empty() {
        if let Err((kind, what, hint)) = check_holder(&branch, &state.claims, me) {
            return Ok(Some(refusal(kind, what, hint)));
        }
    }
    let Some(pushed) = &update.local_sha else {
        let issue = state
            .claims
            .first()
            .map(|c| c.issue)
            .or_else(|| state.seen.as_ref().and_then(|s| s.issue))
            .map_or("N".to_owned(), |n| n.to_string());
        return Ok(Some(refusal(
            RefusalKind::Deletion,
            "a claimed working branch is not deleted by a push".to_owned(),
            format!(
                "when the work is done, release the claim (git maverick coord release {issue} \
                 --reason merged); then the branch is no longer guarded"
            ),
        )));
    };
    let seen_ok = match &state.seen {
        Some(seen) => {
            update.remote_sha == seen.last_seen
                || update
                    .remote_sha
                    .as_ref()
                    .is_some_and(|r| seen.pending.contains(r))
        }
        // Claimed but never seen: only creating the branch is safe.
        None => update.remote_sha.is_none(),
    };
    if !seen_ok {
        if state.seen.is_none() {
            return Ok(Some(refusal(
                RefusalKind::NeverSeen,
                "it exists on the remote, but this clone never recorded its head".to_owned(),
                format!(
                    "run `git maverick resume {branch}` to record it (and check what is there)"
                ),
            )));
        }
        return Ok(Some(refusal(
            RefusalKind::MovedHead,
            "its head moved on the remote since this writer last saw it: someone else pushed to it"
                .to_owned(),
            format!(
                "find out who pushed and why first; building on the remote head \
                 (git maverick resume {branch}, in a clone without these commits) is a decision \
                 for whoever owns the work"
            ),
        )));
    }
    if let Some(remote) = &update.remote_sha {
        if !git.is_ancestor(remote, pushed)? {
            return Ok(Some(refusal(
                RefusalKind::NonFastForward,
                "this push would rewrite it (not a fast-forward: a forced push)".to_owned(),
                "claimed branches move forward only: rebase or amend only what was never pushed, \
                 and push new commits on top"
                    .to_owned(),
            )));
        }
    }
    Ok(None)
}

/// After every update of a push was allowed: the remote head this push saw
/// becomes last seen, and what it sends becomes pending.
pub fn record_allowed(
    store: &BranchStore,
    update: &RefUpdate,
    state: &BranchState,
    me: &str,
) -> Result<(), RecordError> {
    let Some(branch) = update.branch() else {
        return Ok(());
    };
    let mut record = state.seen.clone().unwrap_or_else(|| BranchRecord {
        branch: branch.to_owned(),
        issue: state
            .claims
            .iter()
            .find(|c| c.instance_id == me)
            .map(|c| c.issue),
        ..BranchRecord::default()
    });
    if record.last_seen != update.remote_sha {
        // The remote shows one of our pending pushes: it landed.
        record.pending.clear();
    }
    record.last_seen = update.remote_sha.clone();
    if let Some(sha) = &update.local_sha {
        record.pending.retain(|p| p != sha);
        record.pending.push(sha.clone());
        let excess = record.pending.len().saturating_sub(MAX_PENDING);
        record.pending.drain(..excess);
    }
    record.instance_id = Some(me.to_owned());
    record.updated_at = Timestamp::now().to_string();
    store.set_unsynced(&record)
}

/// Records `head` as the last-seen head of `branch` (a claim, a resume, or
/// maverick's own push saw the remote there).
pub fn record_seen(
    common_dir: &Path,
    branch: &str,
    head: Option<&str>,
    issue: Option<u64>,
    me: &str,
) -> Result<(), RecordError> {
    BranchStore::new(common_dir).set(&BranchRecord {
        branch: branch.to_owned(),
        last_seen: head.map(str::to_owned),
        issue,
        instance_id: Some(me.to_owned()),
        updated_at: Timestamp::now().to_string(),
        pending: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(instance: &str, issue: u64, generation: u64, expires_at: &str) -> ClaimRecord {
        ClaimRecord {
            issue,
            instance_id: instance.to_owned(),
            generation,
            branch: Some("maverick/1-x".to_owned()),
            scope: vec![issue],
            surface: "git".to_owned(),
            remote: "origin".to_owned(),
            claimed_at: "2026-11-30T10:00:00Z".to_owned(),
            last_confirmed: "2026-11-30T10:00:00Z".to_owned(),
            expires_at: expires_at.to_owned(),
            lost: None,
        }
    }

    #[test]
    fn parses_git_lines() {
        let a = "a".repeat(40);
        let z = "0".repeat(40);
        let input = format!("refs/heads/x {a} refs/heads/x {z}\n\nrefs/tags/v1 {a} refs/tags/v1 {z}\n(delete) {z} refs/heads/y {a}\n");
        let updates = parse_updates(&input).unwrap();
        assert_eq!(updates.len(), 3);
        assert_eq!(updates[0].branch(), Some("x"));
        assert_eq!(updates[0].remote_sha, None);
        assert_eq!(updates[1].branch(), None);
        assert_eq!(updates[2].local_sha, None);
        assert!(parse_updates("refs/heads/x deadbeef refs/heads/x 00").is_err());
        assert!(parse_updates("one two three").is_err());
    }

    #[test]
    fn holder_checks() {
        let now = Timestamp::parse("2026-11-30T10:05:00Z").unwrap();
        let live = "2026-11-30T10:10:00Z";
        let b = "maverick/1-x";
        assert!(check_holder(b, &[claim("me", 1, 1, live)], "me").is_ok());
        let err = |claims: &[ClaimRecord]| check_holder(b, claims, "me").unwrap_err().0;
        assert_eq!(err(&[]), RefusalKind::NotHolder);
        assert_eq!(err(&[claim("other", 1, 1, live)]), RefusalKind::NotHolder);
        let mut lost = claim("me", 1, 1, live);
        lost.lost = Some("taken over".to_owned());
        assert_eq!(err(&[lost]), RefusalKind::ClaimLost);
        assert_eq!(
            err(&[claim("me", 1, 1, live), claim("other", 1, 2, live)]),
            RefusalKind::ClaimLost
        );
        // A stale lease nobody took over is still held: a warning, not a refusal.
        let stale = [claim("me", 1, 1, "2026-11-30T10:04:59Z")];
        assert!(check_holder(b, &stale, "me").is_ok());
        assert_eq!(lease_warnings(&stale, "me", now).len(), 1);
        assert!(lease_warnings(&[claim("me", 1, 1, live)], "me", now).is_empty());
        assert!(RefusalKind::NotHolder.claim_lost());
        assert!(!RefusalKind::MovedHead.claim_lost());
    }

    #[test]
    fn pending_heads_roll_forward() {
        let dir = tempfile::tempdir().unwrap();
        let store = BranchStore::new(dir.path());
        let (a, b, c) = ("a".repeat(40), "b".repeat(40), "c".repeat(40));
        let update = |remote: Option<&String>, local: &String| RefUpdate {
            local_ref: "refs/heads/x".into(),
            local_sha: Some(local.clone()),
            remote_ref: "refs/heads/x".into(),
            remote_sha: remote.cloned(),
        };
        let state = |store: &BranchStore| BranchState {
            claims: vec![],
            seen: store.get("x").unwrap(),
        };
        record_allowed(&store, &update(None, &a), &state(&store), "me").unwrap();
        let seen = store.get("x").unwrap().unwrap();
        assert_eq!(
            (seen.last_seen, seen.pending.clone()),
            (None, vec![a.clone()])
        );
        // The push of a landed; the next push sees it and sends b.
        record_allowed(&store, &update(Some(&a), &b), &state(&store), "me").unwrap();
        let seen = store.get("x").unwrap().unwrap();
        assert_eq!(
            (seen.last_seen, seen.pending),
            (Some(a.clone()), vec![b.clone()])
        );
        // The push of b failed at the remote; the next one still sees a.
        record_allowed(&store, &update(Some(&a), &c), &state(&store), "me").unwrap();
        let seen = store.get("x").unwrap().unwrap();
        assert_eq!((seen.last_seen, seen.pending), (Some(a), vec![b, c]));
    }

    #[test]
    fn common_dir_of_a_plain_clone() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git")).unwrap();
        let plain = GitEnv::empty();
        assert_eq!(
            locate_common_dir(dir.path(), &plain),
            Some(dir.path().join(".git"))
        );
        // In a hook git names the directories; those win over `.git`.
        let hook = plain.set("GIT_DIR", "elsewhere/.git");
        assert_eq!(
            locate_common_dir(dir.path(), &hook),
            Some(dir.path().join("elsewhere/.git"))
        );
    }
}
