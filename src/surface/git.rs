//! The `git` surface: issues, labels, assignees and comments stored as JSON
//! files in one commit at `refs/maverick/issues` on the remote itself.
//!
//! Every write is a compare-and-swap push of a child commit
//! (`--force-with-lease=<ref>:<old>` with a non-forced refspec), retried from
//! a fresh fetch when another writer won. One ref for the whole surface makes
//! the order of all writes total: comment ids and timestamps are assigned by
//! the writer that wins the swap and strictly increase. Guards run inside the
//! swap, so a claim that checks "no live claim exists" cannot race.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    apply_membership, Applied, Comment, Guard, Issue, IssueSummary, Op, Surface, SurfaceError,
    Write,
};
use crate::clock::Clock;
use crate::git::{Git, Hooks, PushOutcome};
use crate::timefmt::Timestamp;

pub(crate) const SURFACE_REF: &str = "refs/maverick/issues";
/// On the git surface an issue is open until it carries this label.
pub(crate) const CLOSED_LABEL: &str = "closed";
const MAX_ATTEMPTS: u32 = 200;
const AUTHOR_NAME: &str = "git-maverick";
const AUTHOR_EMAIL: &str = "git-maverick@localhost";

pub(crate) struct GitSurface {
    git: Git,
    remote: String,
    me: String,
    cache_ref: String,
    remote_url: String,
    /// Whether this process has fetched the surface ref already.
    fetched: std::sync::atomic::AtomicBool,
    /// How far the stored clock may lead this one and still be followed.
    max_clock_skew: Duration,
    /// Reads answer from the latest fetch instead of fetching again (see
    /// [`GitSurface::fetch_with_branches`]).
    pinned: std::sync::atomic::AtomicBool,
    /// This writer's clock (the stamps) and every wait (backoff).
    clock: Clock,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Meta {
    format: u32,
    next_comment_id: u64,
    clock: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct StoredComment {
    id: u64,
    author: String,
    body: String,
    created_at: String,
    updated_at: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct StoredIssue {
    number: u64,
    #[serde(default)]
    labels: Vec<String>,
    #[serde(default)]
    assignees: Vec<String>,
    #[serde(default)]
    comments: Vec<StoredComment>,
}

/// The surface as one fetched commit shows it.
struct Snapshot {
    commit: Option<String>,
    meta: Meta,
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
            cache_ref: format!("refs/maverick-cache/{safe_remote}/issues"),
            remote_url: remote_url.to_owned(),
            fetched: std::sync::atomic::AtomicBool::new(false),
            max_clock_skew: crate::config::DEFAULT_MAX_CLOCK_SKEW,
            pinned: std::sync::atomic::AtomicBool::new(false),
            clock,
        }
    }

    /// One fetch that brings the surface and the remote's branches (into
    /// `refs/remotes/<remote>/*`) at once; the reads after it answer from
    /// that fetch until the next call. For a view of the whole repository
    /// that costs the remote one round trip (`status`).
    pub(crate) fn fetch_with_branches(&self) -> Result<(), SurfaceError> {
        let branches = format!("+refs/heads/*:refs/remotes/{}/*", self.remote);
        self.fetch_refspecs(&[branches])?;
        self.pinned
            .store(true, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }

    /// The surface as of a fresh fetch, or as of the pinned one.
    fn current(&self) -> Result<Option<String>, SurfaceError> {
        if self.pinned.load(std::sync::atomic::Ordering::Relaxed) {
            self.cached_commit()
        } else {
            self.fetch()
        }
    }

    /// Brings the remote's surface ref into the local cache ref; returns its commit.
    fn fetch(&self) -> Result<Option<String>, SurfaceError> {
        self.fetch_refspecs(&[])
    }

    /// `fetch` with more refspecs in the same round trip.
    fn fetch_refspecs(&self, extra: &[String]) -> Result<Option<String>, SurfaceError> {
        let mut refspecs = vec![format!(
            "+refs/maverick/*:{}",
            self.cache_ref.trim_end_matches("issues").to_owned() + "*"
        )];
        refspecs.extend_from_slice(extra);
        let mut attempt = 0;
        loop {
            let error = match self.git.fetch_pruning(&self.remote, &refspecs) {
                Ok(()) => {
                    self.fetched
                        .store(true, std::sync::atomic::Ordering::Relaxed);
                    break;
                }
                Err(error) => error,
            };
            // Two processes of one clone fetching at once contend for the
            // cache ref's lock; the other one brought what we wanted.
            attempt += 1;
            if attempt < 20 && error.stderr().contains("lock") {
                backoff(&self.clock, attempt);
                continue;
            }
            return Err(error.into());
        }
        self.cached_commit()
    }

    fn cached_commit(&self) -> Result<Option<String>, SurfaceError> {
        Ok(self.git.resolve_commit(&self.cache_ref)?)
    }

    /// The surface as of a fresh fetch, or (`fresh == false`) as of the last
    /// fetch this process made: a write may start from that, because the
    /// compare-and-swap refuses it if the remote moved since.
    fn read_snapshot(&self, fresh: bool) -> Result<Snapshot, SurfaceError> {
        let commit = if fresh || !self.fetched.load(std::sync::atomic::Ordering::Relaxed) {
            self.fetch()?
        } else {
            self.cached_commit()?
        };
        let meta = match &commit {
            Some(c) => match self.cat_files(&[format!("{c}:meta.json")])?.pop().flatten() {
                Some(bytes) => parse_json(&bytes, "meta.json")?,
                None => Meta::default(),
            },
            None => Meta::default(),
        };
        Ok(Snapshot { commit, meta })
    }

    /// Reads several objects with one `git cat-file --batch`; `None` for a missing one.
    fn cat_files(&self, names: &[String]) -> Result<Vec<Option<Vec<u8>>>, SurfaceError> {
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
            let size: usize = header
                .rsplit(' ')
                .next()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| corrupt(name, &header))?;
            if rest.len() < size + 1 {
                return Err(corrupt(name, "truncated object"));
            }
            found.push(Some(rest[..size].to_vec()));
            rest = &rest[size + 1..];
        }
        Ok(found)
    }

    fn read_issues(
        &self,
        commit: Option<&str>,
        numbers: &[u64],
    ) -> Result<Vec<StoredIssue>, SurfaceError> {
        let Some(commit) = commit else {
            return Ok(numbers.iter().map(|&n| StoredIssue::empty(n)).collect());
        };
        let names: Vec<String> = numbers
            .iter()
            .map(|n| format!("{commit}:{}", issue_file(*n)))
            .collect();
        let blobs = self.cat_files(&names)?;
        numbers
            .iter()
            .zip(blobs)
            .map(|(&n, blob)| match blob {
                Some(bytes) => parse_json(&bytes, &issue_file(n)),
                None => Ok(StoredIssue::empty(n)),
            })
            .collect()
    }

    fn hash_blob(&self, bytes: Vec<u8>) -> Result<String, SurfaceError> {
        Ok(self.git.hash_blob(bytes)?)
    }

    /// Builds the child commit of `snapshot` with the changed files.
    fn commit_files(
        &self,
        snapshot: &Snapshot,
        files: &BTreeMap<String, Vec<u8>>,
        message: &str,
    ) -> Result<String, SurfaceError> {
        let mut entries: BTreeMap<String, String> = BTreeMap::new();
        if let Some(commit) = &snapshot.commit {
            for entry in self.git.ls_tree(commit)? {
                if let Some((_, name)) = entry.split_once('\t') {
                    entries.insert(name.to_owned(), entry.clone());
                }
            }
        }
        for (name, bytes) in files {
            let sha = self.hash_blob(bytes.clone())?;
            entries.insert(name.clone(), format!("100644 blob {sha}\t{name}"));
        }
        let tree = self
            .git
            .mktree(&entries.into_values().collect::<Vec<_>>())?;
        Ok(self.git.commit_tree(
            &tree,
            snapshot.commit.as_deref(),
            message,
            (AUTHOR_NAME, AUTHOR_EMAIL),
        )?)
    }

    /// The compare-and-swap. `Ok(false)` when another writer got there first.
    fn swap(&self, old: Option<&str>, new: &str) -> Result<bool, SurfaceError> {
        let (said, error) =
            match self
                .git
                .push_with_lease(&self.remote, new, SURFACE_REF, old, Hooks::Skip)?
            {
                PushOutcome::Pushed => {
                    // The cache is only a shortcut: the next fetch corrects it.
                    let _ = self.git.update_ref(
                        &self.cache_ref,
                        new,
                        None,
                        "git maverick: surface write",
                    );
                    return Ok(true);
                }
                PushOutcome::Refused { said, error, .. } => (said, error),
            };
        if said.contains("stale info")
            || said.contains("fetch first")
            || said.contains("non-fast-forward")
            || said.contains("cannot lock ref")
            || said.contains("failed to update ref")
        {
            return Ok(false);
        }
        if said.contains("remote rejected") || said.contains("[rejected]") {
            let reason = said
                .lines()
                .find(|l| l.contains("rejected"))
                .unwrap_or("rejected")
                .trim()
                .to_owned();
            return Err(SurfaceError::PushRejected {
                refname: SURFACE_REF.to_owned(),
                reason,
            });
        }
        Err(error.into())
    }

    /// Sets `maverick.maxClockSkew` (default: the documented one).
    pub(crate) fn with_max_clock_skew(mut self, skew: Duration) -> GitSurface {
        self.max_clock_skew = skew;
        self
    }

    /// The stamp of a write: this clock, or the stored clock (the newest
    /// stamp written) when that leads this one by no more than
    /// `maxClockSkew`, so that stamps stay in order across clocks that differ
    /// a little. A stored clock further ahead was written by a clock that is
    /// wrong: following it would make every later lease live as long, so it
    /// is not followed, and this write puts it right.
    fn surface_now(&self, meta: &Meta) -> Timestamp {
        let mine = self.clock.now();
        let last = meta.clock.as_deref().and_then(Timestamp::parse);
        match last {
            Some(last) if last <= mine.plus(self.max_clock_skew) => mine.max(last),
            _ => mine,
        }
    }
}

impl StoredIssue {
    fn empty(number: u64) -> StoredIssue {
        StoredIssue {
            number,
            ..StoredIssue::default()
        }
    }

    fn to_issue(&self) -> Issue {
        Issue {
            number: self.number,
            open: !self.labels.iter().any(|l| l == CLOSED_LABEL),
            is_pull: false,
            labels: self.labels.clone(),
            assignees: self.assignees.clone(),
            comments: self
                .comments
                .iter()
                .map(|c| Comment {
                    id: c.id,
                    author: c.author.clone(),
                    // Whoever can push to the remote is a collaborator.
                    trusted: true,
                    body: c.body.clone(),
                    created_at: Timestamp::parse(&c.created_at).unwrap_or(Timestamp(0)),
                    updated_at: Timestamp::parse(&c.updated_at).unwrap_or(Timestamp(0)),
                })
                .collect(),
        }
    }
}

fn issue_file(number: u64) -> String {
    format!("issue-{number}.json")
}

fn corrupt(what: &str, detail: &str) -> SurfaceError {
    SurfaceError::Corrupt {
        what: what.to_owned(),
        detail: detail.to_owned(),
    }
}

fn parse_json<T: serde::de::DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T, SurfaceError> {
    serde_json::from_slice(bytes).map_err(|e| corrupt(what, &e.to_string()))
}

/// Jittered, growing pause between attempts, so racers spread out.
fn backoff(clock: &Clock, attempt: u32) {
    let jitter = crate::unique::jitter(20);
    let base = 5 * u64::from(attempt.min(10));
    clock.pause(Duration::from_millis(base + jitter));
}

fn apply_op(
    issue: &mut StoredIssue,
    op: &Op,
    meta: &mut Meta,
    now: Timestamp,
    me: &str,
) -> Result<Applied, SurfaceError> {
    if let Some(applied) = apply_membership(op, &mut issue.labels, &mut issue.assignees) {
        return Ok(applied);
    }
    Ok(match op {
        Op::CreateComment(body) => {
            meta.next_comment_id = meta.next_comment_id.max(1);
            let id = meta.next_comment_id;
            meta.next_comment_id += 1;
            issue.comments.push(StoredComment {
                id,
                author: me.to_owned(),
                body: body.clone(),
                created_at: now.to_string(),
                updated_at: now.to_string(),
            });
            Applied::Comment(issue.to_issue().comments.pop().expect("just pushed"))
        }
        Op::UpdateComment { id, body } => {
            let number = issue.number;
            let index = issue.comments.iter().position(|c| c.id == *id).ok_or(
                SurfaceError::NoSuchComment {
                    issue: number,
                    id: *id,
                },
            )?;
            issue.comments[index].body = body.clone();
            issue.comments[index].updated_at = now.to_string();
            Applied::Comment(issue.to_issue().comments.swap_remove(index))
        }
        Op::AddLabels(_) | Op::RemoveLabel(_) | Op::Assign(_) | Op::Unassign(_) => {
            unreachable!("applied by apply_membership above")
        }
    })
}

impl Surface for GitSurface {
    fn describe(&self) -> String {
        format!(
            "git surface: {SURFACE_REF} on {} ({})",
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
        let commit = self.current()?;
        Ok(self
            .read_issues(commit.as_deref(), numbers)?
            .iter()
            .map(StoredIssue::to_issue)
            .collect())
    }

    fn list(
        &self,
        labels: &[&str],
        include_closed: bool,
    ) -> Result<Vec<IssueSummary>, SurfaceError> {
        let Some(commit) = self.current()? else {
            return Ok(Vec::new());
        };
        let mut numbers: Vec<u64> = self
            .git
            .ls_tree_names(&commit)?
            .iter()
            .filter_map(|name| {
                name.strip_prefix("issue-")?
                    .strip_suffix(".json")?
                    .parse()
                    .ok()
            })
            .collect();
        numbers.sort_unstable();
        let issues = self.read_issues(Some(&commit), &numbers)?;
        Ok(issues
            .iter()
            .map(StoredIssue::to_issue)
            .filter(|i| include_closed || i.open)
            .filter(|i| labels.iter().all(|l| i.has_label(l)))
            .map(IssueSummary::from)
            .collect())
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
            let snapshot = self.read_snapshot(fresh)?;
            let mut stored = self.read_issues(snapshot.commit.as_deref(), &numbers)?;
            let now = self.surface_now(&snapshot.meta);
            if let Some(guard) = guard.as_mut() {
                let current: Vec<Issue> = stored.iter().map(StoredIssue::to_issue).collect();
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
            let mut meta = snapshot.meta.clone();
            meta.format = 1;
            meta.clock = Some(now.to_string());
            let mut results = Vec::with_capacity(writes.len());
            for write in writes {
                let issue = stored
                    .iter_mut()
                    .find(|i| i.number == write.issue)
                    .expect("every written issue was read");
                let applied = write
                    .ops
                    .iter()
                    .map(|op| apply_op(issue, op, &mut meta, now, &self.me))
                    .collect::<Result<Vec<_>, _>>()?;
                results.push(applied);
            }
            let mut files = BTreeMap::new();
            files.insert("meta.json".to_owned(), to_json(&meta));
            // An issue named only so that the guard sees it (no ops) is
            // read, not rewritten: the swap of the one ref covers it anyway.
            let changed: Vec<u64> = writes
                .iter()
                .filter(|w| !w.ops.is_empty())
                .map(|w| w.issue)
                .collect();
            for issue in stored.iter().filter(|i| changed.contains(&i.number)) {
                files.insert(issue_file(issue.number), to_json(issue));
            }
            let message = format!(
                "maverick: {} by {}",
                changed
                    .iter()
                    .map(|n| format!("#{n}"))
                    .collect::<Vec<_>>()
                    .join(" "),
                self.me
            );
            let new = self.commit_files(&snapshot, &files, &message)?;
            if self.swap(snapshot.commit.as_deref(), &new)? {
                for _ in writes.iter().flat_map(|w| &w.ops) {
                    crate::failpoint::after_op();
                }
                crate::failpoint::end_write();
                return Ok(Some(results));
            }
            last_conflict = format!("attempt {attempt} lost the compare-and-swap");
            fresh = true;
            backoff(&self.clock, attempt);
        }
        Err(SurfaceError::Contended {
            refname: SURFACE_REF.to_owned(),
            attempts: MAX_ATTEMPTS,
            last: last_conflict,
        })
    }
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("plain data serializes");
    bytes.push(b'\n');
    bytes
}
