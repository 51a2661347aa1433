//! The coordination surface: where all shared state lives (SPEC 1).
//!
//! The trait is deliberately narrow. Every protocol (claims, leases, tasks,
//! dispatch) is written once above it; a surface only stores issues, labels,
//! assignees and comments, and tells the time.

pub mod git;
pub mod github;

use crate::timefmt::Timestamp;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Comment {
    /// Assigned by the surface, strictly increasing in creation order.
    pub id: u64,
    pub author: String,
    /// Whether markers in this comment count (SPEC 3, authenticity).
    pub trusted: bool,
    pub body: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Issue {
    pub number: u64,
    pub open: bool,
    pub is_pull: bool,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
    /// Every comment, in ascending id order.
    pub comments: Vec<Comment>,
}

impl Issue {
    pub fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l == label)
    }
}

/// An issue or pull request as a list shows it, without its comments.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IssueSummary {
    pub number: u64,
    pub open: bool,
    pub is_pull: bool,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
}

/// One change to one issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    AddLabels(Vec<String>),
    /// Removing a label that is not there is success.
    RemoveLabel(String),
    CreateComment(String),
    UpdateComment {
        id: u64,
        body: String,
    },
    Assign(Vec<String>),
    Unassign(Vec<String>),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Write {
    pub issue: u64,
    pub ops: Vec<Op>,
}

/// What each op left behind, in the order of the ops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    Labels(Vec<String>),
    Comment(Comment),
    Assignees(Vec<String>),
}

/// A precondition on the issues a write touches. Given their state and the
/// surface's clock, it says whether the write may go ahead. Where the surface
/// has a compare-and-swap (git), nobody can write between the check and the
/// write; elsewhere (GitHub) it is checked on a read made just before the
/// write (this process's own, when it is a moment old), and the settle
/// that follows every claim resolves what slipped through.
pub type Guard<'a> = &'a mut dyn FnMut(&[Issue], Timestamp) -> bool;

#[derive(Debug, thiserror::Error)]
pub enum SurfaceError {
    #[error(transparent)]
    Git(#[from] crate::git::GitError),
    #[error("issue #{0} does not exist")]
    NoSuchIssue(u64),
    #[error("comment {id} is not on issue #{issue}")]
    NoSuchComment { issue: u64, id: u64 },
    #[error(
        "the remote kept rejecting maverick's update of {refname} ({attempts} attempts): {last}"
    )]
    Contended {
        refname: String,
        attempts: u32,
        last: String,
    },
    #[error("the remote refused maverick's update of {refname}: {reason}")]
    PushRejected { refname: String, reason: String },
    #[error("maverick's state on the remote is damaged ({what}): {detail}")]
    Corrupt { what: String, detail: String },
    #[error(transparent)]
    Github(Box<github::GithubError>),
    #[error("{0}")]
    Other(String),
}

pub trait Surface {
    /// One line naming the surface and where it lives, for people.
    fn describe(&self) -> String;

    /// The surface's clock: lease expiry is judged against it.
    fn now(&self) -> Result<Timestamp, SurfaceError>;

    /// The name under which this surface records our own writes.
    fn me(&self) -> &str;

    /// Reads issues with labels, assignees and all of their comments.
    /// On the git surface an issue with no records reads as open and empty.
    fn issues(&self, numbers: &[u64]) -> Result<Vec<Issue>, SurfaceError>;

    /// Open (or all) issues and pull requests carrying every label given.
    fn list(
        &self,
        labels: &[&str],
        include_closed: bool,
    ) -> Result<Vec<IssueSummary>, SurfaceError>;

    /// Applies the writes if `guard` (when given) allows; `Ok(None)` when it did not.
    fn write(
        &self,
        writes: &[Write],
        guard: Option<Guard<'_>>,
    ) -> Result<Option<Vec<Vec<Applied>>>, SurfaceError>;

    fn issue(&self, number: u64) -> Result<Issue, SurfaceError> {
        let mut issues = self.issues(&[number])?;
        issues.pop().ok_or(SurfaceError::NoSuchIssue(number))
    }

    fn create_comment(&self, issue: u64, body: String) -> Result<Comment, SurfaceError> {
        let applied = self.write_unguarded(issue, vec![Op::CreateComment(body)])?;
        match applied.into_iter().next() {
            Some(Applied::Comment(c)) => Ok(c),
            _ => Err(SurfaceError::Other(
                "the surface did not return the new comment".into(),
            )),
        }
    }

    fn update_comment(&self, issue: u64, id: u64, body: String) -> Result<Comment, SurfaceError> {
        let applied = self.write_unguarded(issue, vec![Op::UpdateComment { id, body }])?;
        match applied.into_iter().next() {
            Some(Applied::Comment(c)) => Ok(c),
            _ => Err(SurfaceError::Other(
                "the surface did not return the comment".into(),
            )),
        }
    }

    fn write_unguarded(&self, issue: u64, ops: Vec<Op>) -> Result<Vec<Applied>, SurfaceError> {
        let results = self.write(&[Write { issue, ops }], None)?;
        Ok(results.and_then(|mut r| r.pop()).unwrap_or_default())
    }
}
