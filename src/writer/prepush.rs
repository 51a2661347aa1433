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

use crate::git::{Git, GitEnv, GitError};
use crate::records::branch::{BranchRecord, BranchStore};
use crate::records::claim::{ClaimRecord, ClaimStore};
use crate::records::files::RecordError;
use crate::timefmt::Timestamp;

/// What this writer keeps pending at most (one per allowed push in a row
/// that the remote never confirmed).
const MAX_PENDING: usize = 8;

/// One line of the pre-push hook's stdin:
/// `<local ref> SP <local sha> SP <remote ref> SP <remote sha>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RefUpdate {
    pub local_ref: String,
    /// `None` for a deletion.
    pub local_sha: Option<String>,
    pub remote_ref: String,
    /// `None` when the remote does not have the ref.
    pub remote_sha: Option<String>,
}

impl RefUpdate {
    /// The branch this update writes to on the remote, if it writes to one.
    pub(crate) fn branch(&self) -> Option<&str> {
        self.remote_ref.strip_prefix("refs/heads/")
    }
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum PrePushError {
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
pub(crate) fn parse_updates(input: &str) -> Result<Vec<RefUpdate>, PrePushError> {
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

/// This worktree's git dir, found from the environment git gives hooks
/// (`env`) and the `.git` entry of the working directory, without running
/// git. `None` when it cannot be told that way (the caller asks git).
pub(crate) fn locate_git_dir(cwd: &Path, env: &GitEnv) -> Option<PathBuf> {
    let absolute = |p: PathBuf| if p.is_absolute() { p } else { cwd.join(p) };
    if let Some(dir) = env.get("GIT_DIR") {
        return Some(absolute(PathBuf::from(dir)));
    }
    let dot_git = cwd.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    // A linked worktree or a submodule: `gitdir: <path>`.
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let target = text.strip_prefix("gitdir:")?.trim();
    Some(absolute(PathBuf::from(target)))
}

/// The repository's common git dir, found as [`locate_git_dir`] finds the
/// git dir, without running git.
pub(crate) fn locate_common_dir(cwd: &Path, env: &GitEnv) -> Option<PathBuf> {
    let git_dir = locate_git_dir(cwd, env)?;
    Some(common_dir_from(cwd, env, &git_dir))
}

/// The common git dir of `git_dir` (a linked worktree's `commondir`), or
/// the one the environment names.
pub(crate) fn common_dir_from(cwd: &Path, env: &GitEnv, git_dir: &Path) -> PathBuf {
    if let Some(dir) = env.get("GIT_COMMON_DIR") {
        return cwd.join(dir);
    }
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => git_dir.join(text.trim_end_matches(['\n', '\r'])),
        Err(_) => git_dir.to_owned(),
    }
}

/// True when maverick has never written anything in this clone: then no
/// branch can be managed and the hook has nothing to check.
pub(crate) fn maverick_absent(common_dir: &Path) -> bool {
    !common_dir.join("maverick").is_dir()
}

/// What this clone knows about one branch.
#[derive(Clone, Debug, Default)]
pub(crate) struct BranchState {
    /// Claim records of every instance of this clone that name the branch.
    pub claims: Vec<ClaimRecord>,
    pub seen: Option<BranchRecord>,
    /// Where this writer expects the remote's head, its own pushes included.
    pub expected: Option<Expected>,
}

impl BranchState {
    /// A damaged record stops only the branch it is about: a claim record
    /// that does not parse is an error here only when it still names this
    /// branch, or its issue is this branch's.
    pub(crate) fn load(common_dir: &Path, branch: &str) -> Result<BranchState, RecordError> {
        let seen = BranchStore::new(common_dir).get(branch)?;
        let issue = seen.as_ref().and_then(|s| s.issue);
        let (all, damaged) = ClaimStore::new(common_dir).all_readable()?;
        if let Some(bad) = damaged.into_iter().find(|d| d.may_name(branch, issue)) {
            return Err(bad.error);
        }
        // A claim made without --branch (`task done` takes the branch from
        // its name) holds the branch whose record names its issue.
        let claims = all
            .into_iter()
            .filter(|c| match &c.branch {
                Some(b) => b == branch,
                None => Some(c.issue) == issue,
            })
            .collect();
        let expected = seen.as_ref().map(|s| expected(common_dir, s));
        Ok(BranchState {
            claims,
            seen,
            expected,
        })
    }

    pub(crate) fn managed(&self) -> bool {
        self.seen.is_some() || !self.claims.is_empty()
    }
}

/// Where this writer expects the remote's head of a branch: the newest head
/// it saw or pushed there (`current`), or one of the pushes the pre-push
/// hook let through that nothing has confirmed or ruled out yet.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Expected {
    pub current: Option<String>,
    pub pending: Vec<String>,
}

impl Expected {
    /// True when the remote at `head` is where this writer left it.
    pub(crate) fn accepts(&self, head: Option<&str>) -> bool {
        self.current.as_deref() == head || head.is_some_and(|h| self.pending.iter().any(|p| p == h))
    }

    /// The head to name as "last seen" when it does not.
    pub(crate) fn newest(&self) -> Option<&str> {
        self.pending
            .last()
            .or(self.current.as_ref())
            .map(String::as_str)
    }
}

/// The remote-tracking ref's reflog of `branch` under remote `name`.
fn tracking_log(common_dir: &Path, name: &str, branch: &str) -> Option<PathBuf> {
    // A URL pushed to directly has no remote-tracking ref.
    let plain = !name.is_empty()
        && !name.contains(':')
        && !name.starts_with(['/', '.'])
        && crate::git::is_valid_branch_name(name);
    plain.then(|| common_dir.join("logs/refs/remotes").join(name).join(branch))
}

/// How long that reflog is now (0 when there is none): the mark a record
/// keeps, so that only pushes made after it count.
pub(crate) fn tracking_log_len(common_dir: &Path, name: &str, branch: &str) -> u64 {
    tracking_log(common_dir, name, branch)
        .and_then(|p| std::fs::metadata(p).ok())
        .map_or(0, |m| m.len())
}

/// The heads this clone pushed to `branch` through remote `name` after
/// `mark`, oldest first, as git logged them on the remote-tracking ref
/// (`update by push`: the remote accepted the push). A fetch never counts.
fn pushed_since(common_dir: &Path, name: &str, branch: &str, mark: u64) -> Vec<String> {
    let Some(bytes) = tracking_log(common_dir, name, branch).and_then(|p| std::fs::read(p).ok())
    else {
        return Vec::new();
    };
    // A log shorter than the mark was deleted with its ref and started over.
    let from = usize::try_from(mark).unwrap_or(usize::MAX);
    let tail = bytes.get(from..).unwrap_or(&bytes);
    String::from_utf8_lossy(tail)
        .lines()
        .filter_map(|line| {
            let (entry, message) = line.split_once('\t')?;
            let new = entry.split(' ').nth(1)?;
            (message == "update by push" && !null_sha(new)).then(|| new.to_owned())
        })
        .collect()
}

/// Where `record`'s writer expects the remote: its last-seen head, unless a
/// push of its own landed since (with or without the hook: git logs it on
/// the remote-tracking ref), and the pending heads not yet ruled out.
pub(crate) fn expected(common_dir: &Path, record: &BranchRecord) -> Expected {
    let mut out = Expected {
        current: record.last_seen.clone(),
        pending: record.pending.clone(),
    };
    for (name, mark) in &record.push_log {
        if let Some(last) = pushed_since(common_dir, name, &record.branch, *mark).pop() {
            // Pending pushes made before this one are history now.
            if let Some(at) = out.pending.iter().position(|p| *p == last) {
                out.pending.drain(..=at);
            }
            out.current = Some(last);
        }
    }
    out
}

/// The marks of every remote a record watches, plus `name`, as they are now.
pub(crate) fn push_log_marks(
    common_dir: &Path,
    record: Option<&BranchRecord>,
    name: &str,
    branch: &str,
) -> std::collections::BTreeMap<String, u64> {
    let mut names: Vec<&str> = record
        .map(|r| r.push_log.keys().map(String::as_str).collect())
        .unwrap_or_default();
    names.push(name);
    names
        .into_iter()
        .filter(|n| tracking_log(common_dir, n, branch).is_some())
        .map(|n| (n.to_owned(), tracking_log_len(common_dir, n, branch)))
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RefusalKind {
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
    pub(crate) fn claim_lost(self) -> bool {
        matches!(self, RefusalKind::NotHolder | RefusalKind::ClaimLost)
    }
}

/// Why a push of one branch is refused, with everything a person needs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Refusal {
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
    pub(crate) fn describe(&self, remote: &str) -> Vec<String> {
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
pub(crate) fn check_holder(
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
pub(crate) fn lease_warnings(claims: &[ClaimRecord], me: &str, now: Timestamp) -> Vec<String> {
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

/// The parents of `sha` when it is a loose commit object of this clone (a
/// commit just made is one), read without a git process; `None` otherwise.
fn loose_parents(common_dir: &Path, sha: &str) -> Option<Vec<String>> {
    if sha.len() != 40 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let path = common_dir.join("objects").join(&sha[..2]).join(&sha[2..]);
    let bytes = std::fs::read(path).ok()?;
    let data = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(&bytes, 1 << 20).ok()?;
    let nul = data.iter().position(|b| *b == 0)?;
    if !data.starts_with(b"commit ") {
        return None;
    }
    let header = &data[nul + 1..];
    let header = &header[..header
        .windows(2)
        .position(|w| w == b"\n\n")
        .unwrap_or(header.len())];
    let header = std::str::from_utf8(header).ok()?;
    Some(
        header
            .lines()
            .filter_map(|l| l.strip_prefix("parent "))
            .map(str::to_owned)
            .collect(),
    )
}

/// `is_ancestor` for the common case without a process: the pushed commits
/// are loose and reach the remote head within a few steps (a fast-forward
/// of commits just made). Anything else asks git.
pub(crate) fn is_ancestor_here(
    git: &Git,
    common_dir: &Path,
    ancestor: &str,
    descendant: &str,
) -> Result<bool, GitError> {
    let mut todo = vec![descendant.to_owned()];
    let mut read = 0;
    while let Some(commit) = todo.pop() {
        if commit == ancestor {
            return Ok(true);
        }
        read += 1;
        match loose_parents(common_dir, &commit) {
            Some(parents) if read <= 64 => todo.extend(parents),
            _ => return git.is_ancestor(ancestor, descendant),
        }
    }
    // Every path ended at a root commit without meeting it.
    Ok(false)
}

/// Checks one update of a managed branch. `me` is the pushing instance.
pub(crate) fn check_update(
    git: &Git,
    common_dir: &Path,
    update: &RefUpdate,
    state: &BranchState,
    me: &str,
) -> Result<Option<Refusal>, GitError> {
    let branch = update.branch().unwrap_or(&update.remote_ref).to_owned();
    // What this writer believes the remote holds: its newest push not yet
    // confirmed, else the newest head it saw or pushed.
    let last_seen = state
        .expected
        .as_ref()
        .and_then(|e| e.newest().map(str::to_owned));
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
    let seen_ok = match &state.expected {
        Some(expected) => expected.accepts(update.remote_sha.as_deref()),
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
        if !is_ancestor_here(git, common_dir, remote, pushed)? {
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
/// becomes last seen, and what it sends becomes pending. `remote` is the
/// remote name (or URL) git named to the hook.
pub(crate) fn record_allowed(
    common_dir: &Path,
    update: &RefUpdate,
    state: &BranchState,
    me: &str,
    remote: &str,
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
    if let Some(expected) = &state.expected {
        record.pending = expected.pending.clone();
        if expected.current != record.last_seen {
            // A push of ours landed (the reflog says so): it is the head.
            record.last_seen = expected.current.clone();
        }
    }
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
    record.push_log = push_log_marks(common_dir, state.seen.as_ref(), remote, branch);
    record.instance_id = Some(me.to_owned());
    record.updated_at = Timestamp::now().to_string();
    BranchStore::new(common_dir).set_unsynced(&record)
}

/// The remote a head was seen on: its name (for its remote-tracking ref)
/// and its normalised location (for pushes that spell it otherwise).
#[derive(Clone, Debug)]
pub struct SeenOn<'a> {
    pub name: &'a str,
    pub location: Option<String>,
}

impl<'a> SeenOn<'a> {
    /// Maverick's remote (`maverick.remote`), located as git would reach it.
    pub(crate) fn of_settings(git: &Git, settings: &'a crate::config::Settings) -> SeenOn<'a> {
        SeenOn::of_remote(git, &settings.remote)
    }

    /// A remote by name, located by the URL a push to it goes to
    /// (`insteadOf` and `pushurl` applied, as git hands it to the hook).
    pub fn of_remote(git: &Git, name: &'a str) -> SeenOn<'a> {
        let url = git.push_url(name).ok();
        SeenOn {
            name,
            location: url.map(|url| crate::writer::location::normalise(&url, &toplevel(git))),
        }
    }
}

/// The worktree's top level, which git resolves relative remote URLs from;
/// the directory itself when git cannot tell.
pub(crate) fn toplevel(git: &Git) -> PathBuf {
    git.toplevel().unwrap_or_else(|_| git.dir().to_owned())
}

/// Records `head` as the last-seen head of `branch` (a claim, a resume, or
/// maverick's own push saw the remote there).
pub fn record_seen(
    common_dir: &Path,
    branch: &str,
    head: Option<&str>,
    issue: Option<u64>,
    me: &str,
    on: &SeenOn<'_>,
) -> Result<(), RecordError> {
    let store = BranchStore::new(common_dir);
    // Unreadable or absent, the old record only lends its watched remotes.
    let old = store.get(branch).ok().flatten();
    store.set(&BranchRecord {
        branch: branch.to_owned(),
        last_seen: head.map(str::to_owned),
        issue,
        instance_id: Some(me.to_owned()),
        updated_at: Timestamp::now().to_string(),
        pending: Vec::new(),
        location: on
            .location
            .clone()
            .or_else(|| old.as_ref().and_then(|o| o.location.clone())),
        push_log: push_log_marks(common_dir, old.as_ref(), on.name, branch),
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
        let state = |_: &BranchStore| BranchState::load(dir.path(), "x").unwrap();
        let allow = |update: &RefUpdate, state: &BranchState| {
            record_allowed(dir.path(), update, state, "me", "origin").unwrap()
        };
        allow(&update(None, &a), &state(&store));
        let seen = store.get("x").unwrap().unwrap();
        assert_eq!(
            (seen.last_seen, seen.pending.clone()),
            (None, vec![a.clone()])
        );
        // The push of a landed; the next push sees it and sends b.
        allow(&update(Some(&a), &b), &state(&store));
        let seen = store.get("x").unwrap().unwrap();
        assert_eq!(
            (seen.last_seen, seen.pending),
            (Some(a.clone()), vec![b.clone()])
        );
        // The push of b failed at the remote; the next one still sees a.
        allow(&update(Some(&a), &c), &state(&store));
        let seen = store.get("x").unwrap().unwrap();
        assert_eq!((seen.last_seen, seen.pending), (Some(a), vec![b, c]));
    }

    #[test]
    fn a_landed_push_in_the_reflog_is_the_expected_head() {
        let dir = tempfile::tempdir().unwrap();
        let (l0, p1) = ("a".repeat(40), "b".repeat(40));
        let log = dir.path().join("logs/refs/remotes/origin/x");
        std::fs::create_dir_all(log.parent().unwrap()).unwrap();
        let line = |old: &str, new: &str, msg: &str| {
            format!("{old} {new} A U Thor <a@example.com> 1764496800 +0000\t{msg}\n")
        };
        std::fs::write(&log, line(&"0".repeat(40), &l0, "fetch: storing head")).unwrap();
        let mark = std::fs::metadata(&log).unwrap().len();
        let record = BranchRecord {
            branch: "x".into(),
            last_seen: Some(l0.clone()),
            pending: vec![p1.clone()],
            push_log: [("origin".to_owned(), mark)].into(),
            ..BranchRecord::default()
        };
        // Nothing after the mark: the last-seen head, or the pending push.
        let before = expected(dir.path(), &record);
        assert!(before.accepts(Some(&l0)) && before.accepts(Some(&p1)));
        // The push of p1 landed: l0 is history now (a rewind to it moved the head).
        let mut text = std::fs::read_to_string(&log).unwrap();
        text.push_str(&line(&l0, &p1, "update by push"));
        text.push_str(&line(&p1, &l0, "fetch: forced-update"));
        std::fs::write(&log, text).unwrap();
        let after = expected(dir.path(), &record);
        assert_eq!(after.current.as_deref(), Some(p1.as_str()));
        assert!(after.pending.is_empty());
        assert!(!after.accepts(Some(&l0)) && after.accepts(Some(&p1)));
    }

    #[test]
    fn loose_commits_reach_their_ancestors_without_git() {
        let dir = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| {
            let out = std::process::Command::new("git")
                .args(args)
                .current_dir(dir.path())
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_AUTHOR_NAME", "a")
                .env("GIT_AUTHOR_EMAIL", "a@example.com")
                .env("GIT_COMMITTER_NAME", "a")
                .env("GIT_COMMITTER_EMAIL", "a@example.com")
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}");
            String::from_utf8(out.stdout).unwrap().trim().to_owned()
        };
        run(&["init", "--quiet"]);
        let mut commits = Vec::new();
        for n in 0..3 {
            run(&["commit", "--quiet", "--allow-empty", "-m", &format!("c{n}")]);
            commits.push(run(&["rev-parse", "HEAD"]));
        }
        let common = dir.path().join(".git");
        assert_eq!(
            loose_parents(&common, &commits[2]),
            Some(vec![commits[1].clone()])
        );
        assert_eq!(loose_parents(&common, &commits[0]), Some(vec![]));
        // Git is never asked: a directory without git would fail if it were.
        let nowhere = Git::new(dir.path().join("missing"), GitEnv::empty());
        assert!(is_ancestor_here(&nowhere, &common, &commits[0], &commits[2]).unwrap());
        assert!(!is_ancestor_here(&nowhere, &common, &commits[2], &commits[0]).unwrap());
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
