//! One issue as the git surface stores it: a JSON file of its labels,
//! assignees and comments, with the clock and comment counter its writes
//! continue from. The layout of one ref per issue keeps it as `issue.json`
//! at `refs/maverick/issue/<n>`; the layout before kept the same fields in
//! `issue-<n>.json` in one commit for all issues (`legacy`).

use serde::{Deserialize, Serialize};

use crate::surface::{apply_membership, Applied, Comment, Issue, Op, SurfaceError};
use crate::timefmt::Timestamp;

/// On the git surface an issue is open until it carries this label.
pub(crate) const CLOSED_LABEL: &str = "closed";
/// The layout of one ref per issue. A file of a later format was written by
/// a newer git-maverick, which this one must not rewrite.
pub(super) const FORMAT: u32 = 2;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct StoredComment {
    pub id: u64,
    pub author: String,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct StoredIssue {
    /// 2 for this layout; the old layout's files have none.
    #[serde(default)]
    pub format: u32,
    pub number: u64,
    #[serde(default)]
    pub labels: Vec<String>,
    #[serde(default)]
    pub assignees: Vec<String>,
    #[serde(default)]
    pub comments: Vec<StoredComment>,
    /// The next comment id is at least this (ids never go back, even across
    /// the conversion from the old layout's counter for all issues).
    #[serde(default)]
    pub next_comment_id: u64,
    /// The newest stamp a write put on this issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clock: Option<String>,
}

impl StoredIssue {
    pub fn empty(number: u64) -> StoredIssue {
        StoredIssue {
            format: FORMAT,
            number,
            ..StoredIssue::default()
        }
    }

    /// Parses a stored file, refusing one a newer git-maverick wrote.
    pub fn parse(bytes: &[u8], what: &str) -> Result<StoredIssue, SurfaceError> {
        let stored: StoredIssue = parse_json(bytes, what)?;
        if stored.format > FORMAT {
            return Err(corrupt(
                what,
                &format!(
                    "written in format {} by a newer git-maverick (this one reads up to {FORMAT}): upgrade git-maverick",
                    stored.format
                ),
            ));
        }
        Ok(stored)
    }

    /// The lowest id a new comment on this issue may take.
    pub fn next_id(&self) -> u64 {
        let above_comments = self.comments.iter().map(|c| c.id + 1).max().unwrap_or(1);
        self.next_comment_id.max(above_comments)
    }

    /// [`StoredIssue::next_id`] of a file too damaged to parse, read as
    /// loosely as JSON allows (`next_comment_id`, each comment's `id`): the
    /// ids it still names must not be given again. 0 when it is not JSON.
    pub fn next_id_in(bytes: &[u8]) -> u64 {
        use serde_json::Value;
        let Ok(file) = serde_json::from_slice::<Value>(bytes) else {
            return 0;
        };
        let counter = file.get("next_comment_id").and_then(Value::as_u64);
        let comments = file.get("comments").and_then(Value::as_array);
        comments
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("id")?.as_u64())
            .map(|id| id.saturating_add(1))
            .chain(counter)
            .max()
            .unwrap_or(0)
    }

    pub fn stamp(&self) -> Option<Timestamp> {
        self.clock.as_deref().and_then(Timestamp::parse)
    }

    pub fn to_issue(&self) -> Issue {
        Issue {
            number: self.number,
            open: !self.labels.iter().any(|l| l == CLOSED_LABEL),
            is_pull: false,
            labels: self.labels.clone(),
            assignees: self.assignees.clone(),
            comments: self
                .comments
                .iter()
                .map(StoredComment::to_comment)
                .collect(),
        }
    }

    /// Applies `op` stamped `now`; a new comment takes `next_id`, which moves on.
    pub fn apply(
        &mut self,
        op: &Op,
        next_id: &mut u64,
        now: Timestamp,
        me: &str,
    ) -> Result<Applied, SurfaceError> {
        if let Some(applied) = apply_membership(op, &mut self.labels, &mut self.assignees) {
            return Ok(applied);
        }
        Ok(match op {
            Op::CreateComment(body) => {
                let comment = StoredComment {
                    id: *next_id,
                    author: me.to_owned(),
                    body: body.clone(),
                    created_at: now.to_string(),
                    updated_at: now.to_string(),
                };
                *next_id += 1;
                let applied = Applied::Comment(comment.to_comment());
                self.comments.push(comment);
                applied
            }
            Op::UpdateComment { id, body } => {
                let number = self.number;
                let comment = self.comments.iter_mut().find(|c| c.id == *id).ok_or(
                    SurfaceError::NoSuchComment {
                        issue: number,
                        id: *id,
                    },
                )?;
                comment.body = body.clone();
                comment.updated_at = now.to_string();
                Applied::Comment(comment.to_comment())
            }
            Op::AddLabels(_) | Op::RemoveLabel(_) | Op::Assign(_) | Op::Unassign(_) => {
                unreachable!("applied by apply_membership above")
            }
        })
    }
}

impl StoredComment {
    fn to_comment(&self) -> Comment {
        Comment {
            id: self.id,
            author: self.author.clone(),
            // Whoever can push to the remote is a collaborator.
            trusted: true,
            body: self.body.clone(),
            created_at: Timestamp::parse(&self.created_at).unwrap_or(Timestamp(0)),
            updated_at: Timestamp::parse(&self.updated_at).unwrap_or(Timestamp(0)),
        }
    }
}

pub(super) fn corrupt(what: &str, detail: &str) -> SurfaceError {
    SurfaceError::Corrupt {
        what: what.to_owned(),
        detail: detail.to_owned(),
    }
}

pub(super) fn parse_json<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    what: &str,
) -> Result<T, SurfaceError> {
    serde_json::from_slice(bytes).map_err(|e| corrupt(what, &e.to_string()))
}

pub(super) fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    let mut bytes = serde_json::to_vec_pretty(value).expect("plain data serializes");
    bytes.push(b'\n');
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_file_still_names_the_ids_it_gave() {
        let ids = |text: &str| StoredIssue::next_id_in(text.as_bytes());
        assert_eq!(ids(r#"{"next_comment_id": 7, "labels": 3}"#), 7);
        assert_eq!(ids(r#"{"comments": [{"id": 4}, {"id": "x"}, 9]}"#), 5);
        assert_eq!(
            ids(r#"{"next_comment_id": 3, "comments": [{"id": 12}]}"#),
            13
        );
        assert_eq!(ids(r#"{"format": 2, "comments": [tru"#), 0);
        assert_eq!(ids("\u{0}\u{1}"), 0);
    }
}
