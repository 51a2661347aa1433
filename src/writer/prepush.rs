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

use maverick_core::ids::ObjectId;

use crate::git::{Git, GitEnv, GitError, ReflogRead};
use crate::records::branch::{BranchRecord, BranchStore};
use crate::records::claim::{ClaimRecord, ClaimStore};
use crate::records::files::RecordError;
use crate::timefmt::Timestamp;
use crate::writer::stamp;
use maverick_core::ids::InstanceId;

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
    #[error(transparent)]
    Config(#[from] crate::config::ConfigError),
}

/// Why a last-seen head could not be recorded.
#[derive(Debug, thiserror::Error)]
pub enum SeenError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Record(#[from] RecordError),
}

fn null_sha(sha: &str) -> bool {
    ObjectId::parse(sha).is_ok_and(|id| id.is_null())
}

/// Parses git's pre-push stdin, as bytes: git allows ref names that are not
/// UTF-8. Blank lines are skipped; anything else that is not four fields is
/// an error (the hook fails closed). An update of a remote ref whose name
/// is not UTF-8 is left out: maverick's records name branches in UTF-8, so
/// no such branch is managed, and the rest of the push is judged as if it
/// were not there. A local ref's name only leads to its reflog (facts about
/// commits whichever ref logged them), so an invalid byte in it is replaced.
pub(crate) fn parse_updates(input: &[u8]) -> Result<Vec<RefUpdate>, PrePushError> {
    let mut updates = Vec::new();
    for line in input.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.trim_ascii().is_empty() {
            continue;
        }
        let bad = || PrePushError::BadLine(String::from_utf8_lossy(line).into_owned());
        let fields: Vec<&[u8]> = line.split(|b| *b == b' ').collect();
        let [local_ref, local_sha, remote_ref, remote_sha] = fields[..] else {
            return Err(bad());
        };
        let id = |s: &[u8]| {
            std::str::from_utf8(s)
                .ok()
                .and_then(|s| ObjectId::parse(s).ok())
        };
        let (Some(local_id), Some(remote_id)) = (id(local_sha), id(remote_sha)) else {
            return Err(bad());
        };
        let Ok(remote_ref) = std::str::from_utf8(remote_ref) else {
            continue;
        };
        let sha = |id: ObjectId| (!id.is_null()).then(|| id.as_str().to_owned());
        updates.push(RefUpdate {
            local_ref: String::from_utf8_lossy(local_ref).into_owned(),
            local_sha: sha(local_id),
            remote_ref: remote_ref.to_owned(),
            remote_sha: sha(remote_id),
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
}

impl BranchState {
    /// A damaged record stops only the branch it is about: a claim record
    /// that does not parse is an error here only when it still names this
    /// branch, or its issue is this branch's. Local records only: no git.
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
        Ok(BranchState { claims, seen })
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

/// The remote-tracking ref of `branch` under remote `name`; `None` for a
/// URL pushed to directly, which has none.
fn tracking_ref(name: &str, branch: &str) -> Option<String> {
    let plain = !name.is_empty()
        && !name.contains(':')
        && !name.starts_with(['/', '.'])
        && crate::git::is_valid_branch_name(name);
    plain.then(|| format!("refs/remotes/{name}/{branch}"))
}

/// How many entries, all reflogs together, the hook reads first: the
/// newest ones, where the entries a record remembers are found unless much
/// happened since (then the reflogs are read whole). git loads the commit
/// of every entry it shows, so a whole read costs in proportion to the
/// reflogs' length, which grows with every push and commit.
const REFLOG_WINDOW: usize = 32;

/// The reflogs of a branch's remote-tracking refs, by remote name, newest
/// entry first, as `git reflog` shows them: what tells this clone's own
/// pushes, made with or without the hook, from what a fetch saw. Read in
/// one git process, with the reflog of the ref a push sends (its commits
/// made here link the pushed commit to the remote head: a fast-forward
/// proven without a history walk). Only the newest entries are read when
/// they hold every entry the record remembers (see [`REFLOG_WINDOW`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct Tracking {
    reflogs: std::collections::BTreeMap<String, Since>,
    local: Vec<crate::git::ReflogEntry>,
}

/// One remote-tracking reflog: its newest entries (all of it, or a prefix),
/// how many of those came after the record's mark, and how many entries
/// the whole reflog has.
#[derive(Clone, Debug, Default)]
struct Since {
    entries: Vec<crate::git::ReflogEntry>,
    new: usize,
    total: u64,
}

/// Whether `entry` is the one `mark` remembers: the same commit, time and
/// message (two entries alike in all three are one to the records).
fn is_mark(mark: &crate::records::branch::ReflogMark, entry: &crate::git::ReflogEntry) -> bool {
    mark.commit == entry.commit && mark.at == entry.at && mark.message == entry.message
}

impl Since {
    /// Places `record`'s mark of one reflog among `entries`, its newest
    /// entries (`whole`: all of them). The mark is the entry the record
    /// remembers and how many entries there were then. In a whole reflog
    /// the entry is looked for where the count puts it, then anywhere
    /// (once); without it (expired, rewritten, a record of an earlier
    /// version), the count decides as it always did: a reflog shorter than
    /// the count was deleted with its ref and started over, all of it new.
    /// Among the newest entries only, the remembered entry must be there,
    /// once, and the count known; else `None` (read the reflog whole).
    fn place(
        entries: Vec<crate::git::ReflogEntry>,
        count: Option<u64>,
        newest: Option<&crate::records::branch::ReflogMark>,
        whole: bool,
    ) -> Option<Since> {
        let marked = |e: &crate::git::ReflogEntry| newest.is_some_and(|m| is_mark(m, e));
        let mut found = entries.iter().enumerate().filter(|(_, e)| marked(e));
        let once = match (found.next(), found.next()) {
            (Some((at, _)), None) => Some(at),
            _ => None,
        };
        if !whole {
            let (at, count) = (once?, count?);
            return Some(Since {
                entries,
                new: at,
                total: count + at as u64,
            });
        }
        let total = entries.len() as u64;
        let by_count = count
            .and_then(|c| total.checked_sub(c))
            .and_then(|at| usize::try_from(at).ok())
            .filter(|at| entries.get(*at).is_some_and(marked));
        let new = by_count.or(once).unwrap_or_else(|| {
            let c = count.unwrap_or(0);
            usize::try_from(if total < c { total } else { total - c }).unwrap_or(usize::MAX)
        });
        Some(Since {
            entries,
            new,
            total,
        })
    }
}

/// The reflogs a [`Tracking`] reads: the remote-tracking refs of the
/// branch under `remotes` (a record's) and `also`, by remote name, then the
/// ref a push sends (when it is one); and all of their names in the order
/// git is given them.
fn reflogs_read<'a>(
    remotes: &[&str],
    also: &str,
    branch: &str,
    local_ref: Option<&'a str>,
) -> (Vec<(String, String)>, Option<&'a str>, Vec<String>) {
    let mut by_ref: Vec<(String, String)> = Vec::new();
    for name in remotes.iter().copied().chain([also]) {
        if let Some(refname) = tracking_ref(name, branch) {
            if !by_ref.iter().any(|(n, _)| n == name) {
                by_ref.push((name.to_owned(), refname));
            }
        }
    }
    let local_ref = local_ref.filter(|r| r.starts_with("refs/") || *r == "HEAD");
    // The remote-tracking refs first: on a tie of times (entries written
    // in the same second) git shows the ref named first.
    let mut refnames: Vec<String> = by_ref.iter().map(|(_, r)| r.clone()).collect();
    refnames.extend(local_ref.map(str::to_owned));
    (by_ref, local_ref, refnames)
}

impl Tracking {
    /// Starts the read [`Tracking::read`] makes first for a push of
    /// `local_ref` to `branch` on remote `also` whose record watches no
    /// other remote (a record of one remote, the one pushed to: the usual
    /// clone), before the record is read: git then runs while this process
    /// reads its records. `None` when there is nothing to read.
    pub(crate) fn start(
        git: &Git,
        also: &str,
        branch: &str,
        local_ref: &str,
    ) -> Result<Option<ReflogRead>, GitError> {
        let (_, _, refnames) = reflogs_read(&[also], also, branch, Some(local_ref));
        if refnames.is_empty() {
            return Ok(None);
        }
        git.start_reflogs(&refnames, Some(REFLOG_WINDOW)).map(Some)
    }

    /// The reflogs of the remotes `record` watches and of `also` (the
    /// remote a push or a look goes to), and of `local_ref` (the ref a push
    /// sends, when it is one): the newest entries first, and all of them
    /// when the record's marks are not among those.
    /// `ahead`: a read of the newest entries started earlier (see
    /// [`Tracking::start`]), used when it reads the same reflogs.
    pub(crate) fn read(
        git: &Git,
        record: Option<&BranchRecord>,
        also: &str,
        branch: &str,
        local_ref: Option<&str>,
        ahead: Option<ReflogRead>,
    ) -> Result<Tracking, GitError> {
        let remotes: Vec<&str> = record
            .map(|r| r.reflog_entries.keys().map(String::as_str).collect())
            .unwrap_or_default();
        let (by_ref, local_ref, refnames) = reflogs_read(&remotes, also, branch, local_ref);
        let (newest, early) = match ahead {
            Some(read) if read.reads(&refnames, Some(REFLOG_WINDOW)) => (read.finish()?, true),
            other => {
                drop(other);
                (git.reflogs(&refnames, Some(REFLOG_WINDOW))?, false)
            }
        };
        // The pushed ref's newest entries link a push to the remote head
        // (commits made here since it); older ones only save a
        // `merge-base` when the push builds on commits made long ago.
        let local_newest = local_ref
            .and_then(|r| newest.get(r).cloned())
            .unwrap_or_default();
        // A read made before the record was: where another process wrote
        // the record since (a push from another worktree), the entries it
        // remembers may be newer than the read, which would then look like
        // a reflog deleted and begun again. The whole reflogs, read now,
        // decide then.
        if !early || Tracking::holds_marks(record, &by_ref, &newest) {
            let whole = newest.values().map(Vec::len).sum::<usize>() < REFLOG_WINDOW;
            if let Some(tracking) = Tracking::place(record, &by_ref, local_ref, newest, whole) {
                return Ok(tracking);
            }
        }
        // The remote-tracking reflogs whole, the pushed ref's as read above:
        // git loads every entry's commit, and a branch's own reflog grows
        // with every commit made on it.
        let tracking_refs: Vec<String> = by_ref.iter().map(|(_, r)| r.clone()).collect();
        let mut all = git.reflogs(&tracking_refs, None)?;
        if let Some(r) = local_ref {
            all.insert(r.to_owned(), local_newest);
        }
        Ok(Tracking::place(record, &by_ref, local_ref, all, true).unwrap_or_default())
    }

    /// Whether `reflogs` (by ref name) hold, exactly once, the newest entry
    /// `record` remembers of every reflog it watches that had one; a record
    /// that counted entries there without remembering one holds only when it
    /// counted none.
    fn holds_marks(
        record: Option<&BranchRecord>,
        by_ref: &[(String, String)],
        reflogs: &std::collections::BTreeMap<String, Vec<crate::git::ReflogEntry>>,
    ) -> bool {
        let Some(record) = record else {
            return true;
        };
        by_ref.iter().all(|(name, refname)| {
            let entries = reflogs.get(refname).map(Vec::as_slice).unwrap_or_default();
            match record.reflog_newest.get(name) {
                Some(mark) => entries.iter().filter(|e| is_mark(mark, e)).count() == 1,
                None => record.reflog_entries.get(name).copied().unwrap_or(0) == 0,
            }
        })
    }

    /// Places the record's marks in the reflogs read (`reflogs`, by ref
    /// name; `whole`: read to their ends); `None` when a mark is not among
    /// the newest entries read.
    fn place(
        record: Option<&BranchRecord>,
        by_ref: &[(String, String)],
        local_ref: Option<&str>,
        mut reflogs: std::collections::BTreeMap<String, Vec<crate::git::ReflogEntry>>,
        whole: bool,
    ) -> Option<Tracking> {
        let local = local_ref
            .and_then(|r| reflogs.remove(r))
            .unwrap_or_default();
        let mut placed = std::collections::BTreeMap::new();
        for (name, refname) in by_ref {
            let entries = reflogs.remove(refname).unwrap_or_default();
            let count = record.and_then(|r| r.reflog_entries.get(name).copied());
            let newest = record.and_then(|r| r.reflog_newest.get(name));
            placed.insert(name.clone(), Since::place(entries, count, newest, whole)?);
        }
        Some(Tracking {
            reflogs: placed,
            local,
        })
    }

    /// Whether the local reflog links `descendant` to `ancestor` through
    /// commits and their parents (commits made here on top of it). `false`
    /// proves nothing: git is asked then.
    pub(crate) fn links(&self, ancestor: &str, descendant: &str) -> bool {
        let parents: std::collections::HashMap<&str, &[String]> = self
            .local
            .iter()
            .map(|e| (e.commit.as_str(), e.parents.as_slice()))
            .collect();
        let mut todo = vec![descendant];
        let mut seen = std::collections::HashSet::new();
        while let Some(commit) = todo.pop() {
            if commit == ancestor {
                return true;
            }
            if seen.insert(commit) {
                if let Some(up) = parents.get(commit) {
                    todo.extend(up.iter().map(String::as_str));
                }
            }
        }
        false
    }

    /// Marks `record` with the reflogs as they are now (how many entries
    /// each has, and its newest), so that only pushes made after it count.
    pub(crate) fn mark(&self, record: &mut BranchRecord) {
        record.reflog_entries = self
            .reflogs
            .iter()
            .map(|(name, since)| (name.clone(), since.total))
            .collect();
        record.reflog_newest = self
            .reflogs
            .iter()
            .filter_map(|(name, since)| {
                let newest = since.entries.first()?;
                Some((
                    name.clone(),
                    crate::records::branch::ReflogMark {
                        commit: newest.commit.clone(),
                        at: newest.at.clone(),
                        message: newest.message.clone(),
                    },
                ))
            })
            .collect();
    }

    /// The newest head this clone pushed through remote `name` after the
    /// record's mark (`update by push`: the remote accepted the push). A
    /// fetch never counts.
    fn newest_push_since(&self, name: &str) -> Option<&str> {
        let since = self.reflogs.get(name)?;
        since
            .entries
            .iter()
            .take(since.new)
            .find(|e| e.message == "update by push" && !null_sha(&e.commit))
            .map(|e| e.commit.as_str())
    }
}

/// Where `record`'s writer expects the remote: its last-seen head, unless a
/// push of its own landed since (with or without the hook: git logs it on
/// the remote-tracking ref), and the pending heads not yet ruled out.
pub(crate) fn expected_from(record: &BranchRecord, tracking: &Tracking) -> Expected {
    let mut out = Expected {
        current: record.last_seen.clone(),
        pending: record.pending.clone(),
    };
    for name in record.reflog_entries.keys() {
        if let Some(last) = tracking.newest_push_since(name) {
            // Pending pushes made before this one are history now.
            if let Some(at) = out.pending.iter().position(|p| p == last) {
                out.pending.drain(..=at);
            }
            out.current = Some(last.to_owned());
        }
    }
    out
}

/// [`expected_from`], reading the reflogs `record` watches.
pub(crate) fn expected(git: &Git, record: &BranchRecord) -> Result<Expected, GitError> {
    let tracking = Tracking::read(git, Some(record), "", &record.branch, None, None)?;
    Ok(expected_from(record, &tracking))
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
    me: &InstanceId,
) -> Result<(), (RefusalKind, String, String)> {
    let mine: Vec<&ClaimRecord> = claims.iter().filter(|c| c.instance_id == *me).collect();
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
pub(crate) fn lease_warnings(
    claims: &[ClaimRecord],
    me: &InstanceId,
    now: Timestamp,
) -> Vec<String> {
    claims
        .iter()
        .filter(|c| c.instance_id == *me)
        .filter_map(|c| {
            let expired = Some(c.expires_at).filter(|e| !maverick_core::holding::lease_live(*e, now))?;
            Some(format!(
                "maverick: warning: the lease of {me} on #{} expired at {expired}; if another instance \
                 took it over, this push is a collision it will see. Take it back while nobody else has: git maverick coord claim {}",
                c.issue, c.issue
            ))
        })
        .collect()
}

/// Checks one update of a managed branch. `me` is the pushing instance.
/// `checked` is what git said of it: where this writer left the remote
/// (`None`: it never recorded the branch's head), and the reflogs.
pub(crate) fn check_update(
    git: &Git,
    update: &RefUpdate,
    state: &BranchState,
    checked: &Checked,
    me: &InstanceId,
) -> Result<Option<Refusal>, GitError> {
    let expected = checked.expected.as_ref();
    let branch = update.branch().unwrap_or(&update.remote_ref).to_owned();
    // What this writer believes the remote holds: its newest push not yet
    // confirmed, else the newest head it saw or pushed.
    let last_seen = expected.and_then(|e| e.newest().map(str::to_owned));
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
    let seen_ok = match expected {
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
        if !checked.tracking.links(remote, pushed) && !git.is_ancestor(remote, pushed)? {
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
/// becomes last seen, and what it sends becomes pending. `tracking` holds
/// the reflogs the check read (the record's remotes and this push's); `now`
/// stamps the record.
pub(crate) fn record_allowed(
    common_dir: &Path,
    update: &RefUpdate,
    state: &BranchState,
    checked: &Checked,
    me: &InstanceId,
    now: Timestamp,
) -> Result<(), RecordError> {
    let Some(branch) = update.branch() else {
        return Ok(());
    };
    let mut record = state.seen.clone().unwrap_or_else(|| BranchRecord {
        branch: branch.to_owned(),
        issue: state
            .claims
            .iter()
            .find(|c| c.instance_id == *me)
            .map(|c| c.issue),
        ..BranchRecord::default()
    });
    if let Some(expected) = &checked.expected {
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
    checked.tracking.mark(&mut record);
    record.instance_id = Some(me.to_string());
    record.updated_at = now;
    BranchStore::new(common_dir).set_unsynced(&record)
}

/// Before maverick's own push of `sha`: `sha` joins the pending heads (the
/// hook's rule, kept when no hook runs), so a push the remote took but this
/// process never heard back from (killed before git wrote the
/// remote-tracking ref) reads as this writer's own, not someone else's.
/// Without a record, the head the push replaces, `expected`, becomes last
/// seen.
pub(crate) fn record_pushing(
    common_dir: &Path,
    branch: &str,
    sha: &str,
    expected: Option<&str>,
    issue: Option<u64>,
    me: &InstanceId,
    now: Timestamp,
) -> Result<(), RecordError> {
    let store = BranchStore::new(common_dir);
    let mut record = store.get(branch)?.unwrap_or_else(|| BranchRecord {
        branch: branch.to_owned(),
        last_seen: expected.map(str::to_owned),
        issue,
        ..BranchRecord::default()
    });
    record.pending.retain(|p| p != sha);
    record.pending.push(sha.to_owned());
    let excess = record.pending.len().saturating_sub(MAX_PENDING);
    record.pending.drain(..excess);
    record.instance_id = Some(me.to_string());
    record.updated_at = now;
    store.set(&record)
}

/// What one check of a managed branch read from git: the reflogs of its
/// remote-tracking refs, and where this writer expects the remote from
/// them and the record (`None` without a record).
#[derive(Clone, Debug, Default)]
pub(crate) struct Checked {
    pub tracking: Tracking,
    pub expected: Option<Expected>,
}

impl Checked {
    /// Reads the reflogs of `state`'s remotes and of `remote` (the push's),
    /// and of the ref `update` sends.
    pub(crate) fn read(
        git: &Git,
        state: &BranchState,
        remote: &str,
        update: &RefUpdate,
        ahead: Option<ReflogRead>,
    ) -> Result<Checked, GitError> {
        let branch = update.branch().unwrap_or_default();
        let local = Some(update.local_ref.as_str());
        let tracking = Tracking::read(git, state.seen.as_ref(), remote, branch, local, ahead)?;
        let expected = state.seen.as_ref().map(|s| expected_from(s, &tracking));
        Ok(Checked { tracking, expected })
    }
}

/// The remote a head was seen on: its name (for its remote-tracking ref)
/// and its normalised location (for pushes that spell it otherwise), and
/// the repository that asks git about it.
#[derive(Clone, Debug)]
pub struct SeenOn<'a> {
    pub name: &'a str,
    pub location: Option<String>,
    git: Git,
}

impl<'a> SeenOn<'a> {
    /// Maverick's remote (`maverick.remote`), located by the push URL the
    /// settings already resolved (a git error there failed the load: it is
    /// not read again here, where it could only be swallowed).
    pub(crate) fn of_settings(git: &Git, settings: &'a crate::config::Settings) -> SeenOn<'a> {
        SeenOn {
            name: &settings.remote,
            location: settings
                .remote_url
                .as_deref()
                .map(|url| crate::writer::location::normalise(url, &toplevel(git))),
            git: git.clone(),
        }
    }

    /// A remote by name, located by the URL a push to it goes to
    /// (`insteadOf` and `pushurl` applied, as git hands it to the hook).
    pub fn of_remote(git: &Git, name: &'a str) -> SeenOn<'a> {
        let url = git.push_url(name).ok();
        SeenOn {
            name,
            location: url.map(|url| crate::writer::location::normalise(&url, &toplevel(git))),
            git: git.clone(),
        }
    }
}

/// The worktree's top level, which git resolves relative remote URLs from;
/// the directory itself when git cannot tell.
pub(crate) fn toplevel(git: &Git) -> PathBuf {
    git.toplevel().unwrap_or_else(|_| git.dir().to_owned())
}

/// Records `head` as the last-seen head of `branch` (a claim, a resume, or
/// maverick's own push saw the remote there) at `now`.
pub fn record_seen(
    common_dir: &Path,
    branch: &str,
    head: Option<&str>,
    issue: Option<u64>,
    me: &InstanceId,
    on: &SeenOn<'_>,
    now: Timestamp,
) -> Result<(), SeenError> {
    let store = BranchStore::new(common_dir);
    // Unreadable or absent, the old record only lends its watched remotes.
    let old = store.get(branch).ok().flatten();
    let tracking = Tracking::read(&on.git, old.as_ref(), on.name, branch, None, None)?;
    let mut record = BranchRecord {
        branch: branch.to_owned(),
        last_seen: head.map(str::to_owned),
        issue,
        instance_id: Some(me.to_string()),
        updated_at: now,
        pending: Vec::new(),
        location: on
            .location
            .clone()
            .or_else(|| old.as_ref().and_then(|o| o.location.clone())),
        ..BranchRecord::default()
    };
    tracking.mark(&mut record);
    store.set(&record)?;
    // A person's clone (no instance in the environment): the hook's next
    // push finds the instance stamped here instead of asking `git config`.
    // A stamp that still holds is left as it is (no second resolution).
    if crate::config::instance_from_env().is_none() {
        let git_dir = on.git.git_dir().ok();
        if git_dir.as_deref().and_then(stamp::stamped).is_none() {
            if let Err(e) = stamp::resolve_and_stamp(&on.git, git_dir.as_deref(), common_dir) {
                tracing::debug!("no stamp of the instance: {e}");
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use maverick_core::ids::InstanceId;

    fn me() -> InstanceId {
        InstanceId::parse("me").unwrap()
    }

    fn claim(instance: &str, issue: u64, generation: u64, expires_at: &str) -> ClaimRecord {
        ClaimRecord::example(instance, issue, generation, expires_at)
    }

    #[test]
    fn parses_git_lines() {
        let a = "a".repeat(40);
        let z = "0".repeat(40);
        let input = format!("refs/heads/x {a} refs/heads/x {z}\n\nrefs/tags/v1 {a} refs/tags/v1 {z}\n(delete) {z} refs/heads/y {a}\n");
        let updates = parse_updates(input.as_bytes()).unwrap();
        assert_eq!(updates.len(), 3);
        assert_eq!(updates[0].branch(), Some("x"));
        assert_eq!(updates[0].remote_sha, None);
        assert_eq!(updates[1].branch(), None);
        assert_eq!(updates[2].local_sha, None);
        assert!(parse_updates(b"refs/heads/x deadbeef refs/heads/x 00").is_err());
        assert!(parse_updates(b"one two three").is_err());
        // A branch name that is not UTF-8 is no managed branch: left out,
        // the lines around it kept; a local one only loses its odd byte.
        let odd = [
            b"refs/heads/b\xff ".as_slice(),
            a.as_bytes(),
            b" refs/heads/b\xff ",
            z.as_bytes(),
            b"\n",
        ]
        .concat();
        let kept = parse_updates(&[input.as_bytes(), &odd].concat()).unwrap();
        assert_eq!(kept, updates);
        let only_local = [
            b"refs/heads/c\xfe ".as_slice(),
            a.as_bytes(),
            b" refs/heads/x ",
            z.as_bytes(),
        ]
        .concat();
        let update = parse_updates(&only_local).unwrap();
        assert_eq!(update[0].branch(), Some("x"));
        assert_eq!(update[0].local_ref, "refs/heads/c\u{fffd}");
    }

    #[test]
    fn holder_checks() {
        let now = Timestamp::parse("2026-11-30T10:05:00Z").unwrap();
        let live = "2026-11-30T10:10:00Z";
        let b = "maverick/1-x";
        assert!(check_holder(b, &[claim("me", 1, 1, live)], &me()).is_ok());
        let err = |claims: &[ClaimRecord]| check_holder(b, claims, &me()).unwrap_err().0;
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
        assert!(check_holder(b, &stale, &me()).is_ok());
        assert_eq!(lease_warnings(&stale, &me(), now).len(), 1);
        assert!(lease_warnings(&[claim("me", 1, 1, live)], &me(), now).is_empty());
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
        // A push by URL: no remote-tracking reflog to read.
        let state = |_: &BranchStore| BranchState::load(dir.path(), "x").unwrap();
        let allow = |update: &RefUpdate, state: &BranchState| {
            let checked = Checked {
                tracking: Tracking::default(),
                expected: state
                    .seen
                    .as_ref()
                    .map(|s| expected_from(s, &Tracking::default())),
            };
            record_allowed(dir.path(), update, state, &checked, &me(), Timestamp(0)).unwrap()
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

    fn reflog_entry(commit: &str, message: &str) -> crate::git::ReflogEntry {
        crate::git::ReflogEntry {
            commit: commit.to_owned(),
            parents: Vec::new(),
            message: message.to_owned(),
            at: "1796440000".to_owned(),
        }
    }

    /// `origin`'s reflog of branch `x` as the hook reads it, with `record`'s
    /// marks placed in it (`whole`: the reflog read to its end).
    fn origin_tracking(
        record: Option<&BranchRecord>,
        entries: Vec<crate::git::ReflogEntry>,
        whole: bool,
    ) -> Option<Tracking> {
        let refname = "refs/remotes/origin/x".to_owned();
        Tracking::place(
            record,
            &[("origin".to_owned(), refname.clone())],
            None,
            [(refname, entries)].into(),
            whole,
        )
    }

    /// A record of branch `x` marked with `entries` as origin's reflog.
    fn marked(record: BranchRecord, entries: Vec<crate::git::ReflogEntry>) -> BranchRecord {
        let mut record = record;
        origin_tracking(None, entries, true)
            .unwrap()
            .mark(&mut record);
        record
    }

    #[test]
    fn a_landed_push_in_the_reflog_is_the_expected_head() {
        let (l0, p1) = ("a".repeat(40), "b".repeat(40));
        let entry = reflog_entry;
        let tracking =
            |record: &BranchRecord, entries| origin_tracking(Some(record), entries, true).unwrap();
        let fetched = vec![entry(&l0, "fetch: storing head")];
        let record = marked(
            BranchRecord {
                branch: "x".into(),
                last_seen: Some(l0.clone()),
                pending: vec![p1.clone()],
                ..BranchRecord::default()
            },
            fetched.clone(),
        );
        // Nothing after the mark: the last-seen head, or the pending push.
        let before = expected_from(&record, &tracking(&record, fetched.clone()));
        assert!(before.accepts(Some(&l0)) && before.accepts(Some(&p1)));
        // The push of p1 landed: l0 is history now (a rewind to it moved the head).
        let mut later = vec![
            entry(&l0, "fetch: forced-update"),
            entry(&p1, "update by push"),
        ];
        later.extend(fetched);
        let after = expected_from(&record, &tracking(&record, later));
        assert_eq!(after.current.as_deref(), Some(p1.as_str()));
        assert!(after.pending.is_empty());
        assert!(!after.accepts(Some(&l0)) && after.accepts(Some(&p1)));
        // A push before the record's mark is history: the record knows better.
        let old_push = vec![entry(&p1, "update by push")];
        let record = marked(
            BranchRecord {
                pending: Vec::new(),
                ..record
            },
            old_push.clone(),
        );
        let expected = expected_from(&record, &tracking(&record, old_push));
        assert_eq!(expected.current.as_deref(), Some(l0.as_str()));
    }

    /// The newest entries of a reflog place the record's mark when they
    /// hold the entry it remembers, once; else the whole reflog is read,
    /// where the count puts the entry or, failing that, the count alone
    /// decides (a record of an earlier version, an entry expired).
    #[test]
    fn the_newest_entries_place_a_mark_only_when_they_hold_it() {
        let (l0, p1, p2) = ("a".repeat(40), "b".repeat(40), "c".repeat(40));
        let old: Vec<_> = (0..100)
            .map(|n| reflog_entry(&format!("{n:040}"), "update by push"))
            .collect();
        let record = marked(
            BranchRecord {
                branch: "x".into(),
                last_seen: Some(l0.clone()),
                ..BranchRecord::default()
            },
            old.clone(),
        );
        assert_eq!(record.reflog_entries["origin"], 100);
        let mut now = vec![
            reflog_entry(&p2, "update by push"),
            reflog_entry(&p1, "fetch: fast-forward"),
        ];
        now.extend(old.iter().take(3).cloned());
        // The three newest old entries with the two new ones: placed.
        let newest = origin_tracking(Some(&record), now.clone(), false).unwrap();
        assert_eq!(
            expected_from(&record, &newest).current.as_deref(),
            Some(p2.as_str())
        );
        let mut remarked = record.clone();
        newest.mark(&mut remarked);
        assert_eq!(remarked.reflog_entries["origin"], 102);
        assert_eq!(remarked.reflog_newest["origin"].commit, p2);
        // Only new entries: the mark is further down, read it all.
        assert!(origin_tracking(Some(&record), now[..2].to_vec(), false).is_none());
        // The remembered entry twice among the newest: which is it? Read it all.
        let mut twice = now.clone();
        twice.insert(0, old[0].clone());
        assert!(origin_tracking(Some(&record), twice, false).is_none());
        // A record of an earlier version: counts only, read it all.
        let counted = BranchRecord {
            reflog_newest: Default::default(),
            ..record.clone()
        };
        assert!(origin_tracking(Some(&counted), now.clone(), false).is_none());
        // The head expected from the whole reflog `entries`.
        let whole_head = |record: &BranchRecord, entries| {
            let all = origin_tracking(Some(record), entries, true).unwrap();
            expected_from(record, &all).current
        };
        let mut whole = now[..2].to_vec();
        whole.extend(old.iter().cloned());
        assert_eq!(whole_head(&counted, whole.clone()), Some(p2.clone()));
        // Read whole, the entry is where the count puts it.
        assert_eq!(whole_head(&record, whole), Some(p2.clone()));
        // The remembered entry expired with the 90 oldest: by the count, the
        // 12 left are fewer than the 100 counted, a reflog started over:
        // all new, the newest push counts (as before the marks had entries).
        let expired = now[..2].iter().chain(&old[..10]).cloned().collect();
        assert_eq!(whole_head(&record, expired), Some(p2));
        // Nothing since the mark: the record's head.
        assert_eq!(whole_head(&record, old), Some(l0));
    }

    /// Issue 42: the hook reads the reflogs before the record; a read that
    /// misses the entry a record written since remembers (or that it
    /// counted without one) is not used as if the reflog began again.
    #[test]
    fn a_read_made_before_the_record_is_used_only_when_it_holds_the_marks() {
        let old: Vec<_> = (0..5)
            .map(|n| reflog_entry(&format!("{n:040}"), "update by push"))
            .collect();
        let by_ref = [("origin".to_owned(), "refs/remotes/origin/x".to_owned())];
        let read = |entries: &[crate::git::ReflogEntry]| {
            std::collections::BTreeMap::from([(
                "refs/remotes/origin/x".to_owned(),
                entries.to_vec(),
            )])
        };
        let fresh = BranchRecord {
            branch: "x".into(),
            reflog_entries: [("origin".to_owned(), 0)].into(),
            ..BranchRecord::default()
        };
        assert!(Tracking::holds_marks(Some(&fresh), &by_ref, &read(&old)));
        assert!(Tracking::holds_marks(None, &by_ref, &read(&old)));
        let record = marked(fresh.clone(), old.clone());
        assert!(Tracking::holds_marks(Some(&record), &by_ref, &read(&old)));
        // Written by another push after the read: its newest entry is not
        // in the read.
        let mut since = old.clone();
        since.insert(0, reflog_entry(&"f".repeat(40), "update by push"));
        let newer = marked(fresh.clone(), since);
        assert!(!Tracking::holds_marks(Some(&newer), &by_ref, &read(&old)));
        assert!(!Tracking::holds_marks(Some(&newer), &by_ref, &read(&[])));
        // Counted, without an entry remembered (an earlier version's record).
        let counted = BranchRecord {
            reflog_newest: Default::default(),
            ..record.clone()
        };
        assert!(!Tracking::holds_marks(Some(&counted), &by_ref, &read(&old)));
    }

    #[test]
    fn commits_made_here_link_a_push_to_the_remote_head() {
        let entry = |commit: &str, parents: &[&str]| crate::git::ReflogEntry {
            parents: parents.iter().map(|p| (*p).to_owned()).collect(),
            ..reflog_entry(commit, "commit: x")
        };
        let tracking = Tracking {
            reflogs: Default::default(),
            local: vec![
                entry("c", &["b"]),
                entry("b", &["a", "m"]),
                entry("x", &["r"]),
            ],
        };
        assert!(tracking.links("a", "c") && tracking.links("m", "c") && tracking.links("c", "c"));
        // Nothing links c to r here: not proven (git is asked), not refuted.
        assert!(!tracking.links("r", "c"));
        assert!(!Tracking::default().links("a", "c"));
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
