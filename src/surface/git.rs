//! The `git` surface: each issue's labels, assignees and comments are one
//! JSON file (`issue.json`) in a commit at the issue's own ref,
//! `refs/maverick/issue/<n>`, on the remote itself.
//!
//! A write to one issue is a compare-and-swap push of a child commit
//! (`--force-with-lease=<ref>:<old>` with a non-forced refspec); a write
//! that spans issues (a scope claim, a dispatch claim) is one
//! `git push --atomic` with a lease per ref: all of its refs move or none.
//! A lost swap is retried from a fresh read. Writes to different issues meet
//! at no ref, so they never queue behind each other; two writes to one issue
//! meet at its ref, so the writes to an issue are linearizable. Guards run
//! inside the swap: every issue a write changes is in the push, so a claim
//! that checks "no live claim exists" cannot race. An issue a write names
//! only for its guard to see (a dispatch claim reads the whole ledger) is
//! checked as of the read the write started from, as on GitHub, and is not
//! in the push: swapping it too would make every dispatch queue behind every
//! other, which is what one ref for all issues did. The dispatch settle
//! resolves what slips through.
//!
//! Reads ask `git ls-remote` where the refs they need are, then fetch only
//! the commits this clone lacks, into `refs/maverick-cache/<remote>/…`: a
//! `coord read` brings one issue's ref, `status` and `dispatch` what changed.
//!
//! Comment ids are a Lamport clock: a write numbers its comments above
//! every id on the issues it read, so they strictly increase on an issue,
//! and a write that read other issues (a dispatch claim reads the whole
//! ledger) orders after everything it saw there. Stamps are the writer's
//! clock, or the newest stamp on the issues read when that leads by no more
//! than `maxClockSkew`. Ids and stamps are assigned by the writer that wins
//! the swap.
//!
//! The layout before this one kept every issue in one commit at
//! `refs/maverick/issues`; [`legacy`] reads it and converts it at the first
//! write.

mod legacy;
mod stored;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use self::legacy::{Legacy, OldLayout, LEGACY_REF};
use self::stored::{corrupt, to_json, StoredIssue, FORMAT};
use super::{
    Applied, DamageLog, DamagedIssue, Guard, Issue, IssueReset, IssueSummary, Surface,
    SurfaceError, Write,
};
use crate::clock::Clock;
use crate::git::{Git, Hooks, PushOutcome};
use crate::timefmt::Timestamp;

/// Where each issue's ref lives: this, then the issue number.
pub(crate) const ISSUE_REFS: &str = "refs/maverick/issue/";
/// The old layout's ref, and the subject of the tombstone that replaces it
/// (the one write of the git surface that is not a fast-forward).
pub(crate) use self::legacy::{LEGACY_REF as OLD_LAYOUT_REF, TOMBSTONE_MESSAGE};
/// Where `coord reset` keeps what an issue's ref held: `issue-N-<object>`.
const BACKUP_REFS: &str = "refs/maverick/backup/";
/// Why a compare-and-swap push talks to the remote, for `-v`.
const SWAP_WHY: &str = "write the git surface: compare-and-swap on the issues' refs";
const ISSUE_FILE: &str = "issue.json";
const MAX_ATTEMPTS: u32 = 200;
/// Beyond this many issues a read lists every issue ref (one pattern)
/// rather than name each.
const MAX_PATTERNS: usize = 64;
const AUTHOR_NAME: &str = "git-maverick";
const AUTHOR_EMAIL: &str = "git-maverick@localhost";
/// What a lost swap says, in git's words: another writer moved a ref first.
const CONFLICTS: [&str; 7] = [
    "stale info",
    "fetch first",
    "non-fast-forward",
    "cannot lock ref",
    "failed to update ref",
    "incorrect old value",
    "already exists",
];

pub(crate) struct GitSurface {
    git: Git,
    remote: String,
    me: String,
    /// Fetched refs go here, named as below `refs/maverick/` on the remote.
    cache_prefix: String,
    remote_url: String,
    /// How far the stored clock may lead this one and still be followed.
    max_clock_skew: Duration,
    memory: Mutex<Memory>,
    /// This writer's clock (the stamps) and every wait (backoff).
    clock: Clock,
    /// Where the damaged issues this process met are reported.
    damage: DamageLog,
}

/// What this process has learned of the remote.
#[derive(Default)]
struct Memory {
    /// Each issue as last read or written.
    issues: BTreeMap<u64, Entry>,
    /// The old single ref as last read or written.
    legacy: Option<Legacy>,
    /// Issues by the commit that holds them: a ref that did not move is
    /// not read again.
    parsed: HashMap<String, StoredIssue>,
    /// Set by [`GitSurface::fetch_with_branches`]: reads answer from that
    /// look at the remote.
    pinned: Option<Refs>,
}

/// One issue: the commit at its ref (`None`: it has no ref yet) and what it holds.
#[derive(Clone, Debug)]
struct Entry {
    commit: Option<String>,
    stored: StoredIssue,
}

/// Where the remote's refs were at one `ls-remote`.
#[derive(Clone, Debug, Default)]
struct Refs {
    issues: BTreeMap<u64, String>,
    legacy: Option<String>,
}

/// The issues a write starts from, and the old ref.
struct Snapshot {
    issues: BTreeMap<u64, Entry>,
    legacy: Legacy,
    /// Issues whose ref holds something that does not parse: left out of
    /// `issues`, so that one damaged issue stops only what is about it.
    damaged: BTreeMap<u64, DamagedIssue>,
}

/// One ref a push moves, from `expected` (`None`: it must not exist).
struct RefUpdate {
    refname: String,
    commit: String,
    expected: Option<String>,
}

/// A write's push, and what the refs hold once it lands.
#[derive(Default)]
struct Plan {
    updates: Vec<RefUpdate>,
    issues: Vec<(u64, Entry)>,
    legacy: Option<Legacy>,
}

/// An object read from this clone: its type and content.
type Object = (String, Vec<u8>);

enum Swap {
    Done,
    /// Another writer moved a ref first: git's words.
    Lost(String),
}

fn issue_ref(number: u64) -> String {
    format!("{ISSUE_REFS}{number}")
}

impl Refs {
    fn from_listing(listing: Vec<(String, String)>) -> Refs {
        let mut refs = Refs::default();
        for (name, commit) in listing {
            if name == LEGACY_REF {
                refs.legacy = Some(commit);
            } else if let Some(number) = name
                .strip_prefix(ISSUE_REFS)
                .and_then(|n| n.parse::<u64>().ok())
                .filter(|n| issue_ref(*n) == name)
            {
                refs.issues.insert(number, commit);
            }
        }
        refs
    }
}

impl Snapshot {
    /// The newest stamp on the issues read.
    fn clock(&self) -> Option<Timestamp> {
        let old = match &self.legacy {
            Legacy::Old(old) => old.clock.as_deref().and_then(Timestamp::parse),
            _ => None,
        };
        self.issues
            .values()
            .filter_map(|e| e.stored.stamp())
            .chain(old)
            .max()
    }

    /// The id the write's first new comment takes.
    fn next_comment_id(&self) -> u64 {
        let old = match &self.legacy {
            Legacy::Old(old) => old.next_comment_id,
            _ => 0,
        };
        self.issues
            .values()
            .map(|e| e.stored.next_id())
            .chain([old, 1])
            .max()
            .unwrap_or(1)
    }
}

impl GitSurface {
    pub(crate) fn new(
        git: Git,
        remote: &str,
        remote_url: &str,
        me: &str,
        clock: Clock,
    ) -> GitSurface {
        let safe_remote: String = remote
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        GitSurface {
            git,
            remote: remote.to_owned(),
            me: me.to_owned(),
            cache_prefix: format!("refs/maverick-cache/{safe_remote}/"),
            remote_url: remote_url.to_owned(),
            max_clock_skew: crate::config::DEFAULT_MAX_CLOCK_SKEW,
            memory: Mutex::new(Memory::default()),
            clock,
            damage: DamageLog::default(),
        }
    }

    /// Reports the damaged issues this surface meets to `damage`.
    pub(crate) fn with_damage_log(mut self, damage: DamageLog) -> GitSurface {
        self.damage = damage;
        self
    }

    /// Sets `maverick.maxClockSkew` (default: the documented one).
    pub(crate) fn with_max_clock_skew(mut self, skew: Duration) -> GitSurface {
        self.max_clock_skew = skew;
        self
    }

    fn memory(&self) -> MutexGuard<'_, Memory> {
        self.memory.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One fetch that brings the surface and the remote's branches (into
    /// `refs/remotes/<remote>/*`) at once: the remote's ref advertisement
    /// says which refs moved, and only their new commits come. The reads
    /// after it answer from that fetch. For a view of the whole repository
    /// that costs the remote one round trip (`status`).
    pub(crate) fn fetch_with_branches(&self) -> Result<(), SurfaceError> {
        self.fetch(&[
            format!("+refs/heads/*:refs/remotes/{}/*", self.remote),
            self.refspec(&format!("{ISSUE_REFS}*")),
            self.refspec(&format!("{LEGACY_REF}*")),
        ])?;
        let cached = self.git.refs_under(&self.cache_prefix)?;
        let below = |name: &str| {
            let name = name.strip_prefix(&self.cache_prefix)?;
            Some(format!("refs/maverick/{name}"))
        };
        let refs = Refs::from_listing(
            cached
                .into_iter()
                .filter_map(|(name, commit)| Some((below(&name)?, commit)))
                .collect(),
        );
        self.memory().pinned = Some(refs);
        Ok(())
    }

    /// Where the old ref and the refs of `numbers` (of every issue, with
    /// `None`) are on the remote: one `ls-remote`, or the pinned look.
    fn refs(&self, numbers: Option<&[u64]>) -> Result<Refs, SurfaceError> {
        if let Some(pinned) = &self.memory().pinned {
            return Ok(pinned.clone());
        }
        self.look(numbers)
    }

    /// Asks the remote, whatever is pinned.
    fn look(&self, numbers: Option<&[u64]>) -> Result<Refs, SurfaceError> {
        let mut patterns = vec![LEGACY_REF.to_owned()];
        match numbers {
            Some(numbers) if numbers.len() <= MAX_PATTERNS => {
                patterns.extend(numbers.iter().map(|n| issue_ref(*n)));
            }
            _ => patterns.push(format!("{ISSUE_REFS}*")),
        }
        let mut refs = Refs::from_listing(self.git.ls_remote(
            &self.remote,
            &patterns,
            "see which of the git surface's refs moved",
        )?);
        if let Some(numbers) = numbers {
            refs.issues.retain(|n, _| numbers.contains(n));
        }
        Ok(refs)
    }

    /// The local ref a fetch of the remote's `refname` goes to.
    fn refspec(&self, refname: &str) -> String {
        let below = refname.strip_prefix("refs/maverick/").unwrap_or(refname);
        format!("+{refname}:{}{below}", self.cache_prefix)
    }

    fn fetch(&self, refspecs: &[String]) -> Result<(), SurfaceError> {
        let mut attempt = 0;
        loop {
            let error = match self.git.fetch_pruning(
                &self.remote,
                refspecs,
                "bring the git surface's refs that moved",
            ) {
                Ok(()) => return Ok(()),
                Err(error) => error,
            };
            // Two processes of one clone fetching at once contend for a
            // cache ref's lock; the other one brought what we wanted.
            attempt += 1;
            if attempt < 20 && error.stderr().contains("lock") {
                backoff(&self.clock, attempt);
                continue;
            }
            return Err(error.into());
        }
    }

    /// Reads objects with one `git cat-file --batch`: (type, content), or
    /// `None` for a missing one.
    fn cat_files(&self, names: &[String]) -> Result<Vec<Option<Object>>, SurfaceError> {
        if names.is_empty() {
            return Ok(Vec::new());
        }
        let out = self.git.cat_file_batch(names)?;
        let mut rest = &out[..];
        let mut found = Vec::with_capacity(names.len());
        for name in names {
            let newline = rest
                .iter()
                .position(|b| *b == b'\n')
                .ok_or_else(|| corrupt("cat-file", "short output"))?;
            let header = String::from_utf8_lossy(&rest[..newline]).into_owned();
            rest = &rest[newline + 1..];
            if header.ends_with(" missing") || header.ends_with(" ambiguous") {
                found.push(None);
                continue;
            }
            let mut fields = header.rsplit(' ');
            let size: usize = fields
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| corrupt(name, &header))?;
            let kind = fields.next().unwrap_or_default().to_owned();
            if rest.len() < size + 1 {
                return Err(corrupt(name, "truncated object"));
            }
            found.push(Some((kind, rest[..size].to_vec())));
            rest = &rest[size + 1..];
        }
        Ok(found)
    }

    /// Reads objects (`<commit>:<path>` names) from this clone, first
    /// fetching the ref named beside each one it lacks; `None` for what is
    /// missing even then.
    fn objects(&self, wanted: &[(String, String)]) -> Result<Vec<Option<Object>>, SurfaceError> {
        let names: Vec<String> = wanted.iter().map(|(_, name)| name.clone()).collect();
        let mut found = self.cat_files(&names)?;
        let lacking: Vec<usize> = (0..found.len()).filter(|i| found[*i].is_none()).collect();
        if lacking.is_empty() {
            return Ok(found);
        }
        let refs: BTreeSet<&str> = lacking.iter().map(|i| wanted[*i].0.as_str()).collect();
        let refspecs: Vec<String> = refs
            .iter()
            .flat_map(|r| legacy::fetched_with(r))
            .map(|r| self.refspec(&r))
            .collect();
        self.fetch(&refspecs)?;
        let again: Vec<String> = lacking.iter().map(|i| names[*i].clone()).collect();
        for (i, object) in lacking.into_iter().zip(self.cat_files(&again)?) {
            found[i] = object;
        }
        Ok(found)
    }

    /// What the old ref at `commit` holds.
    fn legacy(&self, commit: Option<&str>) -> Result<Legacy, SurfaceError> {
        let wanted = self.legacy_objects(commit);
        let found = self.objects(&wanted)?;
        self.read_legacy(commit, &found)
    }

    /// The objects [`GitSurface::read_legacy`] needs of the old ref at
    /// `commit`: none when this process knows them.
    fn legacy_objects(&self, commit: Option<&str>) -> Vec<(String, String)> {
        let known = self
            .memory()
            .legacy
            .as_ref()
            .map(|l| l.commit().map(str::to_owned));
        match commit {
            Some(commit) if known != Some(Some(commit.to_owned())) => vec![
                (LEGACY_REF.to_owned(), commit.to_owned()),
                (LEGACY_REF.to_owned(), format!("{commit}:meta.json")),
            ],
            _ => Vec::new(),
        }
    }

    /// The old ref at `commit`, from the objects [`GitSurface::legacy_objects`] named.
    fn read_legacy(
        &self,
        commit: Option<&str>,
        found: &[Option<Object>],
    ) -> Result<Legacy, SurfaceError> {
        let legacy = match (commit, found) {
            (None, _) => Legacy::Absent,
            (Some(commit), [object, meta]) => Legacy::read(
                commit,
                object.as_ref().map(|(kind, _)| kind.as_str()),
                meta.as_ref().map(|(_, bytes)| bytes.as_slice()),
            )?,
            (Some(_), _) => {
                let known = self.memory().legacy.clone();
                return Ok(known.expect("legacy_objects names none only for a known commit"));
            }
        };
        self.memory().legacy = Some(legacy.clone());
        Ok(legacy)
    }

    /// The issues of the old layout that `numbers` name.
    fn old_issues(
        &self,
        old: &OldLayout,
        numbers: &[u64],
    ) -> Result<Vec<StoredIssue>, SurfaceError> {
        let wanted: Vec<(String, String)> = numbers
            .iter()
            .map(|n| (LEGACY_REF.to_owned(), old.file(*n)))
            .collect();
        numbers
            .iter()
            .zip(self.objects(&wanted)?)
            .map(|(n, file)| old.issue(*n, file.as_ref().map(|(_, b)| b.as_slice())))
            .collect()
    }

    /// Every issue the old layout holds.
    fn old_numbers(&self, old: &OldLayout) -> Result<Vec<u64>, SurfaceError> {
        Ok(OldLayout::numbers(&self.git.ls_tree_names(&old.commit)?))
    }

    /// The issues `numbers` where `refs` puts them, read from this clone
    /// (fetching the commits it lacks); an issue with no ref of its own is
    /// read from the old layout while there is one, else it is empty.
    fn snapshot(&self, refs: &Refs, numbers: &[u64]) -> Result<Snapshot, SurfaceError> {
        let mut wanted = self.legacy_objects(refs.legacy.as_deref());
        let legacy_wanted = wanted.len();
        let unread: Vec<(u64, String)> = {
            let memory = self.memory();
            numbers
                .iter()
                .filter_map(|n| Some((*n, refs.issues.get(n)?.clone())))
                .filter(|(_, commit)| !memory.parsed.contains_key(commit))
                .collect()
        };
        wanted.extend(
            unread
                .iter()
                .map(|(n, commit)| (issue_ref(*n), format!("{commit}:{ISSUE_FILE}"))),
        );
        // One `cat-file` (and at most one fetch) for the old ref and the issues.
        let mut files = self.objects(&wanted)?;
        let legacy = self.read_legacy(refs.legacy.as_deref(), &files[..legacy_wanted])?;
        files.drain(..legacy_wanted);
        let mut read = HashMap::new();
        let mut damaged = BTreeMap::new();
        for ((number, commit), file) in unread.into_iter().zip(files) {
            let what = issue_ref(number);
            let parsed = file
                .ok_or_else(|| corrupt(&what, "it is not a commit holding issue.json"))
                .and_then(|(_, bytes)| StoredIssue::parse(&bytes, &what));
            match parsed {
                Ok(stored) => {
                    read.insert(commit, stored);
                }
                Err(SurfaceError::Corrupt { detail, .. }) => {
                    let damage = DamagedIssue {
                        issue: number,
                        refname: what,
                        object: commit,
                        detail,
                    };
                    let mut log = self.damage.lock().unwrap_or_else(|e| e.into_inner());
                    if !log.contains(&damage) {
                        log.push(damage.clone());
                    }
                    damaged.insert(number, damage);
                }
                Err(other) => return Err(other),
            }
        }
        let without_ref: Vec<u64> = numbers
            .iter()
            .copied()
            .filter(|n| !refs.issues.contains_key(n))
            .collect();
        let old = match &legacy {
            Legacy::Old(old) => self.old_issues(old, &without_ref)?,
            _ => without_ref.iter().map(|n| StoredIssue::empty(*n)).collect(),
        };
        let mut memory = self.memory();
        memory.parsed.extend(read);
        let mut issues: BTreeMap<u64, Entry> = without_ref
            .into_iter()
            .zip(old)
            .map(|(n, stored)| {
                (
                    n,
                    Entry {
                        commit: None,
                        stored,
                    },
                )
            })
            .collect();
        for (n, commit) in refs.issues.iter().filter(|(n, _)| numbers.contains(n)) {
            let Some(stored) = memory.parsed.get(commit).cloned() else {
                continue; // damaged
            };
            issues.insert(
                *n,
                Entry {
                    commit: Some(commit.clone()),
                    stored,
                },
            );
        }
        memory
            .issues
            .extend(issues.iter().map(|(n, e)| (*n, e.clone())));
        for n in damaged.keys() {
            memory.issues.remove(n);
        }
        Ok(Snapshot {
            issues,
            legacy,
            damaged,
        })
    }

    /// `snapshot`, refused when one of `numbers` is damaged: a read or a
    /// write of that issue names it and the way out.
    fn whole_snapshot(&self, refs: &Refs, numbers: &[u64]) -> Result<Snapshot, SurfaceError> {
        let snapshot = self.snapshot(refs, numbers)?;
        match snapshot.damaged.values().next() {
            Some(damage) => Err(SurfaceError::Damaged(damage.clone())),
            None => Ok(snapshot),
        }
    }

    /// The issues a write starts from: what this process last read or
    /// wrote of them (the swap refuses the write if the remote moved since),
    /// or a fresh read when it knows them not, or when `fresh`.
    fn start(&self, numbers: &[u64], fresh: bool) -> Result<Snapshot, SurfaceError> {
        if !fresh {
            let memory = self.memory();
            let known: Option<BTreeMap<u64, Entry>> = numbers
                .iter()
                .map(|n| Some((*n, memory.issues.get(n)?.clone())))
                .collect();
            if let (Some(issues), Some(legacy)) = (known, memory.legacy.clone()) {
                return Ok(Snapshot {
                    issues,
                    legacy,
                    damaged: BTreeMap::new(),
                });
            }
        }
        let refs = self.look(Some(numbers))?;
        self.whole_snapshot(&refs, numbers)
    }

    /// Writes issue `stored` as a child commit of `parent`.
    fn commit_issue(
        &self,
        stored: &StoredIssue,
        parent: Option<&str>,
        message: &str,
    ) -> Result<String, SurfaceError> {
        let blob = self.git.hash_blob(to_json(stored))?;
        let tree = self
            .git
            .mktree(&[format!("100644 blob {blob}\t{ISSUE_FILE}")])?;
        self.commit(&tree, parent, message)
    }

    fn commit(
        &self,
        tree: &str,
        parent: Option<&str>,
        message: &str,
    ) -> Result<String, SurfaceError> {
        Ok(self
            .git
            .commit_tree(tree, parent, message, (AUTHOR_NAME, AUTHOR_EMAIL))?)
    }

    /// Applies `writes` to `snapshot`: the push that makes them, and what
    /// each op left. An issue named without ops is read, for the guard and
    /// the comment ids, and not written.
    fn plan(
        &self,
        snapshot: &Snapshot,
        writes: &[Write],
        now: Timestamp,
    ) -> Result<(Plan, Vec<Vec<Applied>>), SurfaceError> {
        let mut next_id = snapshot.next_comment_id();
        let mut changed: BTreeMap<u64, StoredIssue> = BTreeMap::new();
        let mut results = Vec::with_capacity(writes.len());
        for write in writes {
            let issue = changed
                .entry(write.issue)
                .or_insert_with(|| snapshot.issues[&write.issue].stored.clone());
            let applied = write
                .ops
                .iter()
                .map(|op| issue.apply(op, &mut next_id, now, &self.me))
                .collect::<Result<Vec<_>, _>>()?;
            results.push(applied);
        }
        let written: BTreeSet<u64> = writes
            .iter()
            .filter(|w| !w.ops.is_empty())
            .map(|w| w.issue)
            .collect();
        changed.retain(|n, _| written.contains(n));
        let mut plan = Plan::default();
        let list = |numbers: &BTreeSet<u64>| {
            numbers
                .iter()
                .map(|n| format!("#{n}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let message = format!("maverick: {} by {}", list(&written), self.me);
        for (number, mut stored) in changed {
            stored.format = FORMAT;
            stored.next_comment_id = next_id;
            stored.clock = Some(now.to_string());
            let expected = snapshot.issues[&number].commit.clone();
            let commit = self.commit_issue(&stored, expected.as_deref(), &message)?;
            plan.add(number, commit, expected, stored);
        }
        if !plan.updates.is_empty() {
            self.convert(snapshot, &mut plan)?;
        }
        Ok((plan, results))
    }

    /// Adds to `plan` the conversion of the old layout, if the remote still
    /// holds it (`legacy`): a ref for every issue it holds that has none
    /// yet, its history kept at the archive ref, and the tombstone in its
    /// place. A remote that never had the old ref gets none.
    fn convert(&self, snapshot: &Snapshot, plan: &mut Plan) -> Result<(), SurfaceError> {
        let Legacy::Old(old) = &snapshot.legacy else {
            return Ok(());
        };
        let numbers = self.old_numbers(old)?;
        let with_refs = self.look(Some(&numbers))?.issues;
        let moving: Vec<u64> = numbers
            .iter()
            .copied()
            .filter(|n| !with_refs.contains_key(n) && !snapshot.issues.contains_key(n))
            .collect();
        let message = format!("maverick: moved from {LEGACY_REF}");
        for (number, stored) in moving.iter().zip(self.old_issues(old, &moving)?) {
            let commit = self.commit_issue(&stored, None, &message)?;
            plan.add(*number, commit, None, stored);
        }
        let archive = self
            .git
            .ls_remote(
                &self.remote,
                &[legacy::ARCHIVE_REF.to_owned()],
                "see which of the git surface's refs moved",
            )?
            .into_iter()
            .find_map(|(name, commit)| (name == legacy::ARCHIVE_REF).then_some(commit));
        plan.updates.push(RefUpdate {
            refname: legacy::ARCHIVE_REF.to_owned(),
            commit: old.commit.clone(),
            expected: archive,
        });
        let mut named: Vec<u64> = snapshot.issues.keys().copied().collect();
        named.extend(numbers);
        let blob = self.git.hash_blob(legacy::tombstone_file())?;
        let tree = self.git.mktree(&legacy::tombstone_entries(&blob, &named))?;
        let commit = self.commit(&tree, None, legacy::TOMBSTONE_MESSAGE)?;
        plan.updates.push(RefUpdate {
            refname: LEGACY_REF.to_owned(),
            commit: commit.clone(),
            expected: Some(old.commit.clone()),
        });
        plan.legacy = Some(Legacy::Moved { commit });
        Ok(())
    }

    /// The compare-and-swap of every ref in `updates` at once.
    fn swap(&self, updates: &[RefUpdate]) -> Result<Swap, SurfaceError> {
        let outcome = match updates {
            [one] => self.git.push_with_lease(
                &self.remote,
                &one.commit,
                &one.refname,
                one.expected.as_deref(),
                Hooks::Skip,
                SWAP_WHY,
            )?,
            _ => {
                let all: Vec<(String, String, Option<String>)> = updates
                    .iter()
                    .map(|u| (u.commit.clone(), u.refname.clone(), u.expected.clone()))
                    .collect();
                self.git
                    .push_atomic_with_leases(&self.remote, &all, SWAP_WHY)?
            }
        };
        let (said, error) = match outcome {
            PushOutcome::Pushed => return Ok(Swap::Done),
            PushOutcome::Refused { said, error, .. } => (said, error),
        };
        // Porcelain names each refused ref: `!\t<src>:<dst>\t<why>`. An atomic
        // push refuses the others only because one was refused.
        let refused: Vec<(&str, &str)> = said
            .lines()
            .filter_map(|line| {
                let mut fields = line.strip_prefix("!\t")?.split('\t');
                let dst = fields.next()?.rsplit(':').next()?;
                Some((dst, fields.next().unwrap_or_default().trim()))
            })
            .filter(|(_, why)| !why.contains("atomic"))
            .collect();
        let conflict = |text: &str| CONFLICTS.iter().any(|c| text.contains(c));
        match refused.iter().find(|(_, why)| !conflict(why)) {
            Some((refname, why)) if said.contains("rejected") => Err(SurfaceError::PushRejected {
                refname: (*refname).to_owned(),
                reason: (*why).to_owned(),
            }),
            _ if !refused.is_empty() || conflict(&said) => Ok(Swap::Lost(
                refused
                    .first()
                    .map_or_else(|| said.trim().to_owned(), |(r, why)| format!("{r}: {why}")),
            )),
            _ => Err(error.into()),
        }
    }

    /// The stamp of a write: this clock, or the `stored` clock (the newest
    /// stamp on the issues read) when that leads this one by no more than
    /// `maxClockSkew`, so that stamps stay in order across clocks that
    /// differ a little. A stored clock further ahead was written by a clock
    /// that is wrong: following it would make every later lease live as
    /// long, so it is not followed, and this write puts it right.
    fn surface_now(&self, stored: Option<Timestamp>) -> Timestamp {
        let mine = self.clock.now();
        match stored {
            Some(last) if last <= mine.plus(self.max_clock_skew) => mine.max(last),
            _ => mine,
        }
    }

    /// The lowest comment id past every one that the damaged record at
    /// `commit` and the records before it name: the file itself, read
    /// loosely, and its nearest ancestors, of which the newest readable one
    /// holds the counter (a reset's fresh record, the root of a history,
    /// carries it on). The fetch that found the damage brought them.
    fn next_id_of_history(&self, commit: &str) -> Result<u64, SurfaceError> {
        const ANCESTORS_READ: usize = 32;
        let names: Vec<String> = (0..ANCESTORS_READ)
            .map(|n| format!("{commit}~{n}:{ISSUE_FILE}"))
            .collect();
        Ok(self
            .cat_files(&names)?
            .into_iter()
            .flatten()
            .map(|(_, bytes)| StoredIssue::next_id_in(&bytes))
            .chain([1])
            .max()
            .unwrap_or(1))
    }

    /// Keeps what a landed push put on the remote.
    fn remember(&self, plan: Plan) {
        let mut memory = self.memory();
        for (number, entry) in plan.issues {
            if let Some(commit) = &entry.commit {
                memory.parsed.insert(commit.clone(), entry.stored.clone());
            }
            memory.issues.insert(number, entry);
        }
        if let Some(legacy) = plan.legacy {
            memory.legacy = Some(legacy);
        }
    }
}

impl Plan {
    fn add(&mut self, number: u64, commit: String, expected: Option<String>, stored: StoredIssue) {
        self.updates.push(RefUpdate {
            refname: issue_ref(number),
            commit: commit.clone(),
            expected,
        });
        self.issues.push((
            number,
            Entry {
                commit: Some(commit),
                stored,
            },
        ));
    }
}

/// Jittered, growing pause between attempts, so racers spread out.
fn backoff(clock: &Clock, attempt: u32) {
    let jitter = crate::unique::jitter(20);
    let base = 5 * u64::from(attempt.min(10));
    clock.pause(Duration::from_millis(base + jitter));
}

impl Surface for GitSurface {
    fn describe(&self) -> String {
        format!(
            "git surface: {ISSUE_REFS}<n> on {} ({})",
            self.remote, self.remote_url
        )
    }

    fn now(&self) -> Result<Timestamp, SurfaceError> {
        Ok(self.clock.now())
    }

    fn me(&self) -> &str {
        &self.me
    }

    fn issues(&self, numbers: &[u64]) -> Result<Vec<Issue>, SurfaceError> {
        if numbers.is_empty() {
            return Ok(Vec::new());
        }
        let snapshot = self.whole_snapshot(&self.refs(Some(numbers))?, numbers)?;
        Ok(numbers
            .iter()
            .map(|n| snapshot.issues[n].stored.to_issue())
            .collect())
    }

    fn list(
        &self,
        labels: &[&str],
        include_closed: bool,
    ) -> Result<Vec<IssueSummary>, SurfaceError> {
        let refs = self.refs(None)?;
        let mut numbers: Vec<u64> = refs.issues.keys().copied().collect();
        if let Legacy::Old(old) = self.legacy(refs.legacy.as_deref())? {
            numbers.extend(self.old_numbers(&old)?);
            numbers.sort_unstable();
            numbers.dedup();
        }
        let snapshot = self.snapshot(&refs, &numbers)?;
        Ok(snapshot
            .issues
            .values()
            .map(|e| e.stored.to_issue())
            .filter(|i| include_closed || i.open)
            .filter(|i| labels.iter().all(|l| i.has_label(l)))
            .map(IssueSummary::from)
            .collect())
    }

    fn reset_issue(&self, issue: u64, force: bool) -> Result<IssueReset, SurfaceError> {
        let refname = issue_ref(issue);
        let refs = self.look(Some(&[issue]))?;
        let Some(previous) = refs.issues.get(&issue).cloned() else {
            return Err(SurfaceError::NotDamaged { issue, refname });
        };
        let snapshot = self.snapshot(&refs, &[issue])?;
        let was_damaged = snapshot.damaged.contains_key(&issue);
        if !was_damaged && !force {
            return Err(SurfaceError::NotDamaged { issue, refname });
        }
        let mut fresh = StoredIssue::empty(issue);
        // Comment ids go on past every id the issue gave (readers key by
        // them: the tasks comment, the settle's earliest claim): the
        // record's own counter, else what the damaged record and its
        // history still say.
        fresh.next_comment_id = match snapshot.issues.get(&issue) {
            Some(entry) => entry.stored.next_id(),
            None => self.next_id_of_history(&previous)?,
        };
        let backup = format!("{BACKUP_REFS}issue-{issue}-{previous}");
        let why = if was_damaged { "damaged" } else { "forced" };
        let commit = self.commit_issue(
            &fresh,
            None,
            &format!("reset #{issue} ({why}); it held {previous}, kept at {backup}"),
        )?;
        let updates = [
            RefUpdate {
                refname: refname.clone(),
                commit: commit.clone(),
                expected: Some(previous.clone()),
            },
            RefUpdate {
                refname: backup.clone(),
                commit: previous.clone(),
                expected: None,
            },
        ];
        match self.swap(&updates)? {
            Swap::Done => {}
            Swap::Lost(last) => {
                return Err(SurfaceError::Contended {
                    refname,
                    attempts: 1,
                    last,
                })
            }
        }
        let mut memory = self.memory();
        memory.parsed.insert(commit.clone(), fresh.clone());
        memory.issues.insert(
            issue,
            Entry {
                commit: Some(commit),
                stored: fresh,
            },
        );
        self.damage
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|d| d.issue != issue);
        Ok(IssueReset {
            issue,
            refname,
            was_damaged,
            backup,
            previous,
        })
    }

    fn write(
        &self,
        writes: &[Write],
        mut guard: Option<Guard<'_>>,
    ) -> Result<Option<Vec<Vec<Applied>>>, SurfaceError> {
        let mut numbers: Vec<u64> = writes.iter().map(|w| w.issue).collect();
        numbers.sort_unstable();
        numbers.dedup();
        let mut last_conflict = String::new();
        let mut fresh = false;
        for attempt in 1..=MAX_ATTEMPTS {
            let snapshot = self.start(&numbers, fresh)?;
            let now = self.surface_now(snapshot.clock());
            if let Some(guard) = guard.as_mut() {
                let current: Vec<Issue> = snapshot
                    .issues
                    .values()
                    .map(|e| e.stored.to_issue())
                    .collect();
                if !guard(&current, now) {
                    if !fresh {
                        // A refusal must be judged on the remote's state, not the cache's.
                        fresh = true;
                        continue;
                    }
                    crate::failpoint::end_write();
                    return Ok(None);
                }
            }
            let (plan, results) = self.plan(&snapshot, writes, now)?;
            if plan.updates.is_empty() {
                return Ok(Some(results));
            }
            match self.swap(&plan.updates)? {
                Swap::Done => {
                    self.remember(plan);
                    for _ in writes.iter().flat_map(|w| &w.ops) {
                        crate::failpoint::after_op();
                    }
                    crate::failpoint::end_write();
                    return Ok(Some(results));
                }
                Swap::Lost(why) => last_conflict = format!("attempt {attempt}: {why}"),
            }
            fresh = true;
            backoff(&self.clock, attempt);
        }
        Err(SurfaceError::Contended {
            refname: numbers
                .iter()
                .map(|n| issue_ref(*n))
                .collect::<Vec<_>>()
                .join(", "),
            attempts: MAX_ATTEMPTS,
            last: last_conflict,
        })
    }
}
