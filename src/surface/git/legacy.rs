//! The layout before one ref per issue, and the tombstone that replaces it.
//!
//! Until then the git surface kept every issue in one commit at
//! `refs/maverick/issues`: `meta.json` (the comment counter and the clock of
//! the whole surface) and an `issue-<n>.json` per issue. A remote that still
//! holds it is read as it is; the first write converts it in the same atomic
//! push as its own change: every issue of the old commit gets its own ref,
//! and the old ref moves to the tombstone, under a lease on the old commit,
//! so a claim an older binary wrote meanwhile is never lost (the push fails
//! and the write starts again from it).
//!
//! Why the new refs are `refs/maverick/issue/<n>` and not
//! `refs/maverick/issues/<n>`: git cannot hold a ref and refs below it
//! (`refs/maverick/issues` is a file where `refs/maverick/issues/5` needs a
//! directory), so those could not be created while the old ref exists, and
//! taking the old ref away first would leave older binaries reading an
//! absent ref, which they take for an empty surface: every issue free.
//!
//! The tombstone is a small commit that older binaries fail on, loudly.
//! They fetch `refs/maverick/issues`, parse its `meta.json` before every
//! write, list `issue-*.json` for `status` and `dispatch`, and read
//! `issue-<n>.json` for one issue (a missing file is an issue nobody wrote
//! to). The tombstone holds one file, a JSON object whose `format` and
//! `number` are a sentence saying where the state went, under the names
//! `meta.json`, `issue-0.json` (so that every list meets it) and
//! `issue-<n>.json` for each issue the conversion moved or its write named:
//! an older binary stops on any write, any list and any read of an issue
//! that had state before the conversion with "maverick's state on the
//! remote is damaged (…): invalid type: string \"…upgrade git-maverick…\"".
//! An issue first written after the conversion has no file there: an older
//! binary's `coord read` of it says free, and its claim still fails on
//! `meta.json`. The tombstone has no parent, so that a clone reading it
//! fetches three objects; the old history stays on the remote at
//! `refs/maverick/archive/issues`.
//!
//! A remote that never held the old ref gets no tombstone: there is no
//! state an older binary could misread as free.
//!
//! A reader whose look saw the old commit, and whose fetch came just after
//! another clone converted it, fetches the tombstone, which has no parent:
//! the old commit would never arrive, and the state would read as damaged.
//! So the fetch for the old ref's objects brings the archive too, where the
//! conversion keeps that commit: the read answers as of its look, and a
//! write from it fails its lease on the old ref and starts again.

use serde_json::Value;

use super::stored::{corrupt, parse_json, StoredIssue, FORMAT};
use crate::surface::SurfaceError;

pub(crate) const LEGACY_REF: &str = "refs/maverick/issues";
/// Where the tombstone says the state went.
const MOVED_TO: &str = "refs/maverick/issue/<n>";
const MOVED: &str = "git-maverick keeps this state at refs/maverick/issue/<n> now, one ref per issue; this git-maverick is older than that: upgrade git-maverick";
pub(crate) const TOMBSTONE_MESSAGE: &str =
    "maverick: the state moved to refs/maverick/issue/<n>, one ref per issue";
/// Where the conversion keeps the old layout's history.
pub(super) const ARCHIVE_REF: &str = "refs/maverick/archive/issues";

/// The refs to fetch for the objects of `refname`: the old ref's commit
/// may sit only in the archive by the time the fetch comes.
pub(super) fn fetched_with(refname: &str) -> Vec<String> {
    if refname == LEGACY_REF {
        // A pattern: a remote that was never converted has no archive.
        vec![refname.to_owned(), format!("{ARCHIVE_REF}*")]
    } else {
        vec![refname.to_owned()]
    }
}

/// What the old single ref holds.
#[derive(Clone, Debug)]
pub(super) enum Legacy {
    /// No such ref: a remote that never had the old layout.
    Absent,
    /// The tombstone: every issue lives at its own ref.
    Moved { commit: String },
    /// The old layout, not converted yet.
    Old(OldLayout),
}

#[derive(Clone, Debug)]
pub(super) struct OldLayout {
    pub commit: String,
    /// The old surface-wide counter: converted issues continue above it.
    pub next_comment_id: u64,
    /// The old surface-wide clock.
    pub clock: Option<String>,
}

impl Legacy {
    /// Reads the commit at the old ref: `kind` is its object type (`None`
    /// when it could not be read), `meta` its `meta.json`.
    pub fn read(
        commit: &str,
        kind: Option<&str>,
        meta: Option<&[u8]>,
    ) -> Result<Legacy, SurfaceError> {
        match kind {
            Some("commit") => {}
            Some(other) => {
                return Err(corrupt(
                    LEGACY_REF,
                    &format!("it names a {other}, not a commit"),
                ))
            }
            None => return Err(corrupt(LEGACY_REF, &format!("{commit} cannot be read"))),
        }
        let meta: Value = match meta {
            Some(bytes) => parse_json(bytes, &format!("{LEGACY_REF}: meta.json"))?,
            // The old layout wrote meta.json with every write; without one
            // its counter and clock start from nothing, as the old code did.
            None => Value::Null,
        };
        if meta.get("format").is_some_and(Value::is_string) {
            return Ok(Legacy::Moved {
                commit: commit.to_owned(),
            });
        }
        let format = meta.get("format").and_then(Value::as_u64).unwrap_or(1);
        if format != 1 {
            return Err(corrupt(
                &format!("{LEGACY_REF}: meta.json"),
                &format!("unknown format {format}"),
            ));
        }
        Ok(Legacy::Old(OldLayout {
            commit: commit.to_owned(),
            next_comment_id: meta
                .get("next_comment_id")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            clock: meta.get("clock").and_then(Value::as_str).map(str::to_owned),
        }))
    }

    /// The commit at the old ref, if any.
    pub fn commit(&self) -> Option<&str> {
        match self {
            Legacy::Absent => None,
            Legacy::Moved { commit } => Some(commit),
            Legacy::Old(old) => Some(&old.commit),
        }
    }
}

impl OldLayout {
    /// The issue numbers among the names of the old commit's files.
    pub fn numbers(names: &[String]) -> Vec<u64> {
        let mut numbers: Vec<u64> = names
            .iter()
            .filter_map(|name| {
                name.strip_prefix("issue-")?
                    .strip_suffix(".json")?
                    .parse()
                    .ok()
            })
            .collect();
        numbers.sort_unstable();
        numbers
    }

    /// The object name of issue `number`'s file in the old commit.
    pub fn file(&self, number: u64) -> String {
        format!("{}:{}", self.commit, issue_file(number))
    }

    /// Issue `number` as the old commit holds it (`None`: no file), made a
    /// file of the new layout: ids continue above the old counter, stamps
    /// from the old clock.
    pub fn issue(&self, number: u64, file: Option<&[u8]>) -> Result<StoredIssue, SurfaceError> {
        let mut stored = match file {
            Some(bytes) => {
                StoredIssue::parse(bytes, &format!("{LEGACY_REF}: {}", issue_file(number)))?
            }
            None => StoredIssue::empty(number),
        };
        stored.format = FORMAT;
        stored.number = number;
        stored.next_comment_id = stored.next_comment_id.max(self.next_comment_id);
        if stored.clock.is_none() {
            stored.clock.clone_from(&self.clock);
        }
        Ok(stored)
    }
}

fn issue_file(number: u64) -> String {
    format!("issue-{number}.json")
}

/// The one file the tombstone holds under every name.
pub(super) fn tombstone_file() -> Vec<u8> {
    super::stored::to_json(&serde_json::json!({
        "format": MOVED,
        "number": MOVED,
        "moved_to": MOVED_TO,
    }))
}

/// The tombstone's tree (`mode type id\tname` entries, for `git mktree`):
/// `blob` (the [`tombstone_file`]) as `meta.json`, as `issue-0.json` and as
/// the file of every issue in `numbers`.
pub(super) fn tombstone_entries(blob: &str, numbers: &[u64]) -> Vec<String> {
    let mut covered: Vec<u64> = std::iter::once(0).chain(numbers.iter().copied()).collect();
    covered.sort_unstable();
    covered.dedup();
    std::iter::once("meta.json".to_owned())
        .chain(covered.into_iter().map(issue_file))
        .map(|name| format!("100644 blob {blob}\t{name}"))
        .collect()
}
