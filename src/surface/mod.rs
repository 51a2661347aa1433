//! The coordination surface: where all shared state lives (SPEC 1).
//!
//! The trait is deliberately narrow. Every protocol (claims, leases, tasks,
//! dispatch) is written once above it; a surface only stores issues, labels,
//! assignees and comments, and tells the time.

pub use maverick_core::closing;
pub(crate) mod git;
pub mod github;

use crate::timefmt::Timestamp;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
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

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
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
    pub(crate) fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l == label)
    }
}

/// An issue or pull request as a list shows it, without its comments.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct IssueSummary {
    pub number: u64,
    pub open: bool,
    pub is_pull: bool,
    pub labels: Vec<String>,
    pub assignees: Vec<String>,
    /// When the issue last changed (a comment, a label…), where the
    /// surface's list says.
    pub updated_at: Option<Timestamp>,
    /// How many comments it has, where the surface's list says.
    pub comments: Option<u64>,
}

/// An open pull request, as `hydrate` reports it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct PullRequest {
    pub number: u64,
    pub title: String,
    /// The branch the pull request merges from.
    pub head_ref: String,
    pub head_sha: String,
    pub base_ref: String,
    pub draft: bool,
    pub labels: Vec<String>,
    /// The description, where `Closes #142` links it to a story.
    #[serde(skip)]
    pub body: String,
    /// Who opened it (a GitHub login).
    #[serde(skip)]
    pub author: String,
    /// The repository it merges into, `OWNER/REPO`, and that repository's
    /// web address and default branch.
    #[serde(skip)]
    pub base_repo: String,
    #[serde(skip)]
    pub base_repo_url: String,
    #[serde(skip)]
    pub default_branch: String,
    /// Whether its head branch lives in another repository (a fork).
    #[serde(skip)]
    pub from_fork: bool,
    /// Whether its author is trusted as a marker's author is (SPEC 3):
    /// only then does it count as work in progress on what it closes.
    #[serde(skip)]
    pub trusted: bool,
}

impl PullRequest {
    /// The issues its description names with a closing keyword, whatever
    /// its base (see [`closing`]).
    pub fn closing_references(&self) -> Vec<u64> {
        closing::closing_issues(&self.body, &self.base_repo, &self.base_repo_url)
    }

    /// Whether GitHub links it to `issue` as the pull request that closes
    /// it: a closing keyword in its description, and its base is the
    /// repository's default branch (GitHub ignores the keywords elsewhere).
    pub fn closes(&self, issue: u64) -> bool {
        self.base_ref == self.default_branch && self.closing_references().contains(&issue)
    }
}

/// One check run on a commit (GitHub Checks).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct CheckRun {
    pub name: String,
    /// `queued`, `in_progress` or `completed`.
    pub status: String,
    /// Set when completed: `success`, `failure`, `neutral`, `cancelled`, …
    pub conclusion: Option<String>,
}

/// What CI says about one commit: the combined commit status and the check runs.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub struct CiStatus {
    pub sha: String,
    /// The combined verdict: `success`, `failure`, `pending`, or `none`
    /// when nothing reported on the commit.
    pub state: String,
    /// The combined commit status (`success`, `failure`, `pending`), if any
    /// status was posted.
    pub combined: Option<String>,
    pub check_runs: Vec<CheckRun>,
}

impl CiStatus {
    /// The verdict of a combined status and check runs, as GitHub's merge
    /// box shows it: any failure fails, anything unfinished is pending.
    pub(crate) fn verdict(combined: Option<&str>, runs: &[CheckRun]) -> &'static str {
        let failed = |c: &str| {
            matches!(
                c,
                "failure"
                    | "error"
                    | "cancelled"
                    | "timed_out"
                    | "action_required"
                    | "startup_failure"
            )
        };
        if combined.is_some_and(failed)
            || runs
                .iter()
                .any(|r| r.conclusion.as_deref().is_some_and(failed))
        {
            return "failure";
        }
        if combined == Some("pending") || runs.iter().any(|r| r.status != "completed") {
            return "pending";
        }
        if combined.is_none() && runs.is_empty() {
            return "none";
        }
        "success"
    }
}

impl From<Issue> for IssueSummary {
    fn from(i: Issue) -> IssueSummary {
        IssueSummary {
            number: i.number,
            open: i.open,
            is_pull: i.is_pull,
            labels: i.labels,
            assignees: i.assignees,
            updated_at: None,
            comments: Some(i.comments.len() as u64),
        }
    }
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

/// Applies a label or assignee op the way GitHub does: adding what is there
/// and removing what is not are no-ops. `None` for comment ops, which each
/// surface applies itself.
pub fn apply_membership(
    op: &Op,
    labels: &mut Vec<String>,
    assignees: &mut Vec<String>,
) -> Option<Applied> {
    fn add(set: &mut Vec<String>, items: &[String]) {
        for item in items {
            if !set.contains(item) {
                set.push(item.clone());
            }
        }
    }
    Some(match op {
        Op::AddLabels(items) => {
            add(labels, items);
            Applied::Labels(labels.clone())
        }
        Op::RemoveLabel(label) => {
            labels.retain(|l| l != label);
            Applied::Labels(labels.clone())
        }
        Op::Assign(users) => {
            add(assignees, users);
            Applied::Assignees(assignees.clone())
        }
        Op::Unassign(users) => {
            assignees.retain(|a| !users.contains(a));
            Applied::Assignees(assignees.clone())
        }
        Op::CreateComment(_) | Op::UpdateComment { .. } => return None,
    })
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
/// has a compare-and-swap (git), nobody can write to an issue the write
/// changes between the check and the write; elsewhere (GitHub), and on git
/// for an issue named only to be seen (no ops), it is checked on a read made
/// just before the write (this process's own, when it is a moment old), and
/// the settle that follows every claim resolves what slipped through.
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
    #[error("{}", .0.describe())]
    Damaged(DamagedIssue),
    #[error("{refname} is readable: there is nothing to reset")]
    NotDamaged { issue: u64, refname: String },
    #[error(transparent)]
    Github(Box<github::GithubError>),
    #[error("{0}")]
    Other(String),
}

/// One issue whose record on the surface does not parse (the git
/// surface's `refs/maverick/issue/N`): it stops only what is about that
/// issue, and `git maverick coord reset N` is the way out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DamagedIssue {
    pub issue: u64,
    pub refname: String,
    /// The object the ref points at, kept reachable by the reset.
    pub object: String,
    pub detail: String,
}

impl DamagedIssue {
    pub fn describe(&self) -> String {
        format!(
            "{} (issue #{}) is damaged: {}",
            self.refname, self.issue, self.detail
        )
    }

    /// The command that gets the fleet past this issue.
    pub fn way_out(&self) -> String {
        format!(
            "`git maverick coord reset {}` resets this one issue to free (the damaged commit stays reachable under a backup ref); every other issue works meanwhile",
            self.issue
        )
    }
}

/// What the damaged issues a command met are reported through: the
/// command layer shares it with the surface it opens and turns it into
/// warnings.
pub type DamageLog = std::sync::Arc<std::sync::Mutex<Vec<DamagedIssue>>>;

/// What `coord reset` did: the issue's ref now holds an empty record, and
/// what it held before is kept at `backup`.
#[derive(Clone, Debug, serde::Serialize, schemars::JsonSchema)]
pub struct IssueReset {
    pub issue: u64,
    pub refname: String,
    /// Whether the record was damaged (else the reset was forced).
    pub was_damaged: bool,
    /// The ref that keeps the record as it was, on the remote.
    pub backup: String,
    /// The object the issue's ref pointed at before.
    pub previous: String,
}

pub trait Surface {
    /// One line naming the surface and where it lives, for people.
    fn describe(&self) -> String;

    /// The surface's clock: lease expiry is judged against it.
    fn now(&self) -> Result<Timestamp, SurfaceError>;

    /// The name under which this surface records our own writes.
    fn me(&self) -> &str;

    /// [`me`](Surface::me) where the surface knows it without a request of
    /// its own (GitHub: the login it learned from this process's own writes
    /// or reads); `None` otherwise.
    fn known_me(&self) -> Option<&str> {
        Some(self.me()).filter(|me| !me.is_empty())
    }

    /// Reads issues with labels, assignees and all of their comments.
    /// On the git surface an issue with no records reads as open and empty.
    fn issues(&self, numbers: &[u64]) -> Result<Vec<Issue>, SurfaceError>;

    /// Open (or all) issues and pull requests carrying every label given.
    fn list(
        &self,
        labels: &[&str],
        include_closed: bool,
    ) -> Result<Vec<IssueSummary>, SurfaceError>;

    /// Resets one issue's record to empty with a compare-and-swap, keeping
    /// what it held under a backup ref: the way out of a damaged record.
    /// Refused for a readable record unless `force`. Only the git surface
    /// keeps records it can reset.
    fn reset_issue(&self, issue: u64, force: bool) -> Result<IssueReset, SurfaceError> {
        let _ = (issue, force);
        Err(SurfaceError::Other(
            "`coord reset` resets the git surface's refs/maverick/issue/N; on GitHub an issue's markers are its comments, which GitHub keeps readable".to_owned(),
        ))
    }

    /// Applies the writes if `guard` (when given) allows; `Ok(None)` when it did not.
    fn write(
        &self,
        writes: &[Write],
        guard: Option<Guard<'_>>,
    ) -> Result<Option<Vec<Vec<Applied>>>, SurfaceError>;

    /// Issues as a claim on them is judged: labels and every comment as
    /// fresh as [`issues`](Surface::issues) reads them; open state and
    /// assignees may be as last read. The default reads the issues whole;
    /// a surface where re-reading an unchanged resource is free answers
    /// from the resources a heartbeat's own write leaves unchanged.
    fn claim_records(&self, numbers: &[u64]) -> Result<Vec<Issue>, SurfaceError> {
        self.issues(numbers)
    }

    /// Labels and open state of issues, without their comments. The
    /// default reads the issues whole; a surface where comments cost a
    /// request per issue answers from a list instead.
    fn summaries(&self, numbers: &[u64]) -> Result<Vec<IssueSummary>, SurfaceError> {
        Ok(self
            .issues(numbers)?
            .into_iter()
            .map(IssueSummary::from)
            .collect())
    }

    /// Open issues and pull requests carrying at least one label that
    /// `wanted` accepts. The default lists everything open and keeps those;
    /// a surface that charges per list page lists only the labels that match.
    fn open_with_any_label(
        &self,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<IssueSummary>, SurfaceError> {
        Ok(self
            .list(&[], false)?
            .into_iter()
            .filter(|s| s.labels.iter().any(|l| wanted(l)))
            .collect())
    }

    /// Open issues carrying every label given, lowest number first, a page
    /// at a time: `more` sees each page and says whether the next one is
    /// wanted. The default lists them all as one page.
    fn list_lowest_first(
        &self,
        labels: &[&str],
        more: &mut dyn FnMut(&[IssueSummary]) -> bool,
    ) -> Result<(), SurfaceError> {
        let mut all = self.list(labels, false)?;
        all.sort_by_key(|s| s.number);
        more(&all);
        Ok(())
    }

    /// Every comment written or edited at or after `since` on any issue or
    /// pull request, with its issue's number, oldest first; `None` where
    /// the surface keeps no such list because reading the issues themselves
    /// costs as little (the git surface: one fetch brings them all).
    fn comments_since(
        &self,
        since: Timestamp,
    ) -> Result<Option<Vec<(u64, Comment)>>, SurfaceError> {
        let _ = since;
        Ok(None)
    }

    /// Every label name in use: the repository's labels where the surface
    /// keeps a list of them, else those of the open issues.
    fn label_names(&self) -> Result<Vec<String>, SurfaceError> {
        let mut names: Vec<String> = self
            .list(&[], false)?
            .into_iter()
            .flat_map(|s| s.labels)
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Completes issues a [`list`](Surface::list) gave with their comments.
    /// The default reads them whole; a surface where an issue and its
    /// comments are two requests reads only the comments.
    fn with_comments(&self, listed: &[IssueSummary]) -> Result<Vec<Issue>, SurfaceError> {
        let numbers: Vec<u64> = listed.iter().map(|s| s.number).collect();
        self.issues(&numbers)
    }

    /// Open pull requests. The git surface has none.
    fn open_pulls(&self) -> Result<Vec<PullRequest>, SurfaceError> {
        Ok(Vec::new())
    }

    /// CI status of each commit, in the order given; `None` where the
    /// surface knows nothing of CI (the git surface never does).
    fn ci_status(&self, shas: &[String]) -> Result<Vec<Option<CiStatus>>, SurfaceError> {
        Ok(shas.iter().map(|_| None).collect())
    }

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

/// What [`write_if_unchanged`] came to.
pub(crate) enum Conditional {
    Written,
    /// Another writer changed the issue first; this is its newer state.
    Stale(Issue),
}

/// Writes `op` to `issue` only if the state it was computed from still
/// holds: comment `base.0` still has body `base.1`, or (with no base, when
/// creating) `absent` still says the comment to create is missing. On the
/// git surface that check is part of the compare-and-swap; on GitHub it is a
/// fresh read, so callers verify by reading back.
pub(crate) fn write_if_unchanged(
    surface: &dyn Surface,
    issue: u64,
    op: Op,
    base: Option<(u64, &str)>,
    absent: &dyn Fn(&Issue) -> bool,
) -> Result<Conditional, SurfaceError> {
    let mut newer: Option<Issue> = None;
    let mut guard = |issues: &[Issue], _now: Timestamp| {
        let Some(now_issue) = issues.iter().find(|i| i.number == issue) else {
            return false;
        };
        let unchanged = match base {
            Some((id, body)) => now_issue
                .comments
                .iter()
                .find(|c| c.id == id)
                .is_some_and(|c| c.body == body),
            None => absent(now_issue),
        };
        if !unchanged {
            newer = Some(now_issue.clone());
        }
        unchanged
    };
    let written = surface.write(
        &[Write {
            issue,
            ops: vec![op],
        }],
        Some(&mut guard),
    )?;
    Ok(match (written, newer) {
        (Some(_), _) => Conditional::Written,
        (None, Some(newer)) => Conditional::Stale(newer),
        (None, None) => Conditional::Stale(surface.issue(issue)?),
    })
}
