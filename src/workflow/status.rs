//! `status`: the whole team at a glance, gathered once over the surface.
//!
//! One view of every issue that is claimed, leased, blocked or holds a
//! dispatch claim, the dispatch slots, and (for an epic) its stories in DAG
//! order. The reads are shaped for GitHub's budget, and every protocol
//! verdict comes from the module that owns it (leases from [`lease`],
//! slots from [`dispatch`], tasks from [`tasks`]):
//!
//! - the open issues that carry a label a row is made of: claimed,
//!   dispatched, an agent PR or `blocked-by:#N` ([`Surface::open_with_any_label`]:
//!   on GitHub the repository's labels and a list per such label, so the
//!   cost follows the labels, not the backlog); with `--epic`, every open
//!   issue, for the epic's stories;
//! - the comments of each claimed or dispatched issue (on GitHub from one
//!   list of the repository's recent comments);
//! - one list of open pull requests and one CI read per head of a pull
//!   request that works on a shown issue;
//! - the branches' heads from one `git fetch` (on the git surface the same
//!   fetch brings the surface).
//!
//! Nothing here writes, prints or knows about terminals: the command layer
//! renders the [`StatusView`] as text, JSON or Graphviz.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::config::{Settings, SurfaceKind};
use crate::coord::claims;
use crate::coord::dispatch::{self, HolderKind, Ledger, Verdict};
use crate::coord::lease::{self, Decision, IssueView};
use crate::coord::pulls::closing_pull;
use crate::durable::state::{self, StoryState};
use crate::durable::tasks;
use crate::git::{Git, GitError};
use crate::markers::MarkerKind;
use crate::records::branch::BranchStore;
use crate::surface::{CiStatus, Issue, IssueSummary, PullRequest, Surface, SurfaceError};
use crate::timefmt::Timestamp;
use crate::workflow::hydrate::{self, HydrateError};
use maverick_core::holding::Holding;
use maverick_core::ids::InstanceId;

#[derive(Debug, thiserror::Error)]
pub(crate) enum StatusError {
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("#{0} is not an epic: it has no maverick-dag or maverick-state marker")]
    NotAnEpic(u64),
}

impl From<HydrateError> for StatusError {
    fn from(err: HydrateError) -> Self {
        match err {
            HydrateError::Surface(e) => StatusError::Surface(e),
            HydrateError::Git(e) => StatusError::Git(e),
            other => StatusError::Surface(SurfaceError::Other(other.to_string())),
        }
    }
}

/// What to gather.
#[derive(Clone, Debug, Default)]
pub(crate) struct StatusRequest {
    /// Only this instance's claims.
    pub mine: bool,
    /// An epic whose stories to show in DAG order.
    pub epic: Option<u64>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct StatusView {
    pub surface: SurfaceKind,
    pub instance_id: InstanceId,
    /// The surface's clock when the view was read.
    pub now: Timestamp,
    pub mine: bool,
    /// Sorted so that what needs a person comes first.
    pub issues: Vec<IssueRow>,
    pub dispatch: DispatchSlots,
    pub totals: Totals,
    pub epic: Option<EpicView>,
    /// Whether the server refuses force pushes and deletions of managed
    /// branches, as far as local files tell (`git maverick protect status`
    /// asks the server).
    pub server: Option<crate::writer::protect::ServerProtection>,
    /// What did not stop the view (the command puts them in `--json`'s
    /// `warnings`).
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// One issue that is claimed, leased, blocked or dispatched.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct IssueRow {
    pub issue: u64,
    /// `ours`, `held`, `stale`, `blocked`, `pull` (in progress by an open
    /// pull request that closes it, with no live claim), `orphan`
    /// (labelled, no claim behind it) or `dispatch` (only a dispatch claim).
    #[schemars(schema_with = "row_states")]
    pub state: RowState,
    pub holder: Option<Holder>,
    pub generation: Option<u64>,
    pub lease: Option<LeaseState>,
    pub branch: Option<BranchState>,
    pub tasks: Option<TaskCount>,
    pub pull: Option<PullState>,
    pub blocked_by: Vec<u64>,
    pub dispatch: Option<DispatchClaim>,
    /// Why a person should look, most urgent first; empty when all is well.
    pub attention: Vec<String>,
}

impl IssueRow {
    pub(crate) fn needs_attention(&self) -> bool {
        !self.attention.is_empty()
    }
}

/// What a row's issue is to the team (its `state`): the holding verdict,
/// and what makes a row of an issue no claim holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum RowState {
    Ours,
    Lapsed,
    Held,
    Stale,
    Blocked,
    /// In progress by an open pull request that closes it, no live claim.
    Pull,
    /// Labelled, no claim behind it.
    Orphan,
    /// Only a dispatch claim.
    Dispatch,
}

impl RowState {
    /// The word `status` prints and its JSON carries.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RowState::Ours => "ours",
            RowState::Lapsed => "lapsed",
            RowState::Held => "held",
            RowState::Stale => "stale",
            RowState::Blocked => "blocked",
            RowState::Pull => "pull",
            RowState::Orphan => "orphan",
            RowState::Dispatch => "dispatch",
        }
    }

    /// The order of rows that need no person: live work first, then what
    /// waits (rows of one rank by issue number).
    fn rank(self) -> u8 {
        match self {
            RowState::Stale | RowState::Lapsed => 0,
            RowState::Ours => 1,
            RowState::Held | RowState::Pull => 2,
            RowState::Dispatch => 3,
            RowState::Blocked => 4,
            RowState::Orphan => 5,
        }
    }
}

impl std::fmt::Display for RowState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct Holder {
    pub instance_id: InstanceId,
    pub host: Option<String>,
    /// Whether it is this instance.
    pub ours: bool,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct LeaseState {
    pub expires_at: Timestamp,
    pub live: bool,
    /// Seconds until it runs out (live) or since it ran out (stale).
    pub seconds: u64,
    /// The command that takes a stale lease over.
    pub takeover: Option<String>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct BranchState {
    pub name: String,
    /// The remote's head, `None` when the branch is not on the remote.
    pub head: Option<String>,
    /// The committer date of the remote head: when it last moved, for a
    /// branch that moves by pushing new commits.
    pub head_moved_at: Option<Timestamp>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct TaskCount {
    pub done: usize,
    pub total: usize,
    pub next_task: Option<NextTask>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct NextTask {
    pub number: usize,
    pub title: String,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct PullState {
    pub number: u64,
    pub head_ref: String,
    /// Who opened it.
    pub author: String,
    pub head: String,
    pub draft: bool,
    /// `success`, `failure`, `pending`, `none`, or `unknown` where the
    /// surface knows nothing of CI.
    #[schemars(schema_with = "ci_verdicts")]
    pub ci: String,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct DispatchClaim {
    pub instance_id: InstanceId,
    pub ours: bool,
    pub claimed_at: Timestamp,
    /// `holds`, `no_slot`, `issue_taken`, `pull_open` or `stale`.
    #[schemars(schema_with = "dispatch_verdicts")]
    pub verdict: String,
    pub slot: Option<u32>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct DispatchSlots {
    pub slots: u32,
    pub used: u32,
    pub free: u32,
    pub holders: Vec<SlotHolder>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct SlotHolder {
    pub slot: u32,
    /// `pull_request`, `labelled` or `claim`.
    pub kind: HolderKind,
    pub issue: u64,
    pub instance_id: Option<InstanceId>,
    pub ours: bool,
    pub since: Option<Timestamp>,
}

#[derive(Clone, Debug, Default, Serialize, schemars::JsonSchema)]
pub(crate) struct Totals {
    pub issues: usize,
    pub ours: usize,
    pub held: usize,
    pub stale: usize,
    /// This instance's own claims whose lease lapsed (state `lapsed`).
    pub lapsed: usize,
    pub blocked: usize,
    pub orphan: usize,
    /// In progress by an open pull request only (state `pull`).
    pub pull: usize,
    pub dispatch: usize,
    pub needs_attention: usize,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct EpicView {
    pub epic: u64,
    pub waves: Vec<Wave>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Wave {
    /// 1 for stories without dependencies inside the epic.
    pub wave: u32,
    pub stories: Vec<Story>,
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Story {
    pub issue: u64,
    /// `pending`, `in_flight`, `merged`, `blocked` or `ejected`.
    #[schemars(schema_with = "crate::durable::state::story_states")]
    pub state: StoryState,
    /// `marker` (the epic's maverick-state) or `derived` (from labels).
    #[schemars(schema_with = "crate::workflow::hydrate::state_sources")]
    pub state_source: &'static str,
    pub deps: Vec<u64>,
    pub open: Option<bool>,
    pub holder: Option<Holder>,
    /// Whether the holder's lease ran out.
    pub stale: bool,
    pub blocked_by: Vec<u64>,
    /// The open pull request that closes it, which makes a story nobody
    /// recorded or labelled `in_flight`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull: Option<u64>,
}

// The closed vocabularies of the view's plain strings, for its schema.
fn row_states(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["ours", "lapsed", "held", "stale", "blocked", "pull", "orphan", "dispatch"],
    })
}

fn ci_verdicts(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["success", "failure", "pending", "none", "unknown"],
    })
}

fn dispatch_verdicts(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "string",
        "enum": ["holds", "no_slot", "issue_taken", "pull_open", "stale"],
    })
}

/// Where the branches' heads come from.
pub(crate) struct Heads {
    /// Branch name to (head, committer time).
    pub by_branch: BTreeMap<String, (String, Timestamp)>,
}

impl Heads {
    /// The remote-tracking refs of `remote`, as the last fetch left them
    /// (one local `git for-each-ref`).
    pub(crate) fn read(git: &Git, remote: &str) -> Result<Heads, GitError> {
        let by_branch = git
            .remote_tracking_heads(remote)?
            .into_iter()
            .map(|(name, head, at)| (name, (head, Timestamp(at))))
            .collect();
        Ok(Heads { by_branch })
    }
}

/// The open issues that an open pull request closes and that are not in
/// `listed`, and not this reader's own work (`own` branches): a read of
/// each (free when unchanged); a number that names
/// nothing, or a pull request, is left out.
fn closed_by_pulls(
    surface: &dyn Surface,
    pulls: &[PullRequest],
    listed: &[IssueSummary],
    own: &[String],
) -> Result<Vec<IssueSummary>, StatusError> {
    let own: Vec<&str> = own.iter().map(String::as_str).collect();
    let numbers: BTreeSet<u64> = pulls
        .iter()
        .flat_map(PullRequest::closing_references)
        .filter(|&n| closing_pull(pulls, n, &own).is_some())
        .filter(|n| !listed.iter().any(|s| s.number == *n))
        .collect();
    let mut found = Vec::new();
    for number in numbers {
        match surface.summaries(&[number]) {
            Ok(summaries) => found.extend(summaries.into_iter().filter(|s| s.open && !s.is_pull)),
            Err(SurfaceError::NoSuchIssue(_)) => {}
            Err(err) => return Err(err.into()),
        }
    }
    Ok(found)
}

/// Reads the view. `heads` are the branches as of a fetch the caller made
/// (the command layer makes it, once, as the surface allows).
pub(crate) fn gather(
    surface: &dyn Surface,
    settings: &Settings,
    git: &Git,
    heads: &Heads,
    request: &StatusRequest,
) -> Result<StatusView, StatusError> {
    let labels = &settings.labels;
    let me = &settings.instance;
    // Every row carries one of these labels (and the agent PRs, which
    // fill dispatch slots); `--epic` shows every open story of the epic,
    // so it lists everything open.
    let shows = |l: &str| {
        l == labels.in_progress || l == labels.wip || l == labels.pr || labels.blocker(l).is_some()
    };
    let open = match request.epic {
        Some(_) => surface.list(&[], false)?,
        None => surface.open_with_any_label(&shows)?,
    };
    let now = surface.now()?;
    let mut warnings = Vec::new();

    let is_blocked = |s: &IssueSummary| s.labels.iter().any(|l| labels.blocker(l).is_some());
    let shown: Vec<&IssueSummary> = open
        .iter()
        .filter(|s| !s.is_pull)
        .filter(|s| {
            s.labels.contains(&labels.in_progress)
                || s.labels.contains(&labels.wip)
                || is_blocked(s)
        })
        .collect();
    // Comments only where a claim or a dispatch claim lives.
    let to_read: Vec<IssueSummary> = shown
        .iter()
        .filter(|s| s.labels.contains(&labels.in_progress) || s.labels.contains(&labels.wip))
        .map(|s| (*s).clone())
        .collect();
    let mut read: BTreeMap<u64, Issue> = surface
        .with_comments(&to_read)?
        .into_iter()
        .map(|i| (i.number, i))
        .collect();
    let agent_pulls: BTreeSet<u64> = open
        .iter()
        .filter(|s| s.labels.contains(&labels.pr))
        .map(|s| s.number)
        .collect();
    let ledger = Ledger {
        now,
        pulls: agent_pulls,
        issues: read
            .values()
            .filter(|i| i.has_label(&labels.wip) && !i.is_pull)
            .cloned()
            .collect(),
    };
    let pulls = surface.open_pulls()?;
    let own = claims::own_branches(git, None)?;
    // None with `--mine`, whose rows are claims.
    let pulled = match request.mine {
        true => Vec::new(),
        false => closed_by_pulls(surface, &pulls, &open, &own)?,
    };
    let shown: Vec<&IssueSummary> = shown.into_iter().chain(&pulled).collect();
    let seen = Seen {
        settings,
        git,
        heads,
        slots: dispatch::analyze(&ledger, settings, &labels.frontier),
        views: read
            .values()
            .map(|i| {
                let view = lease::analyze(i, settings, me, now);
                (i.number, claims::judged_with_pulls(view, &pulls, &own, me))
            })
            .collect(),
        read: &read,
        pulls,
        own,
        branch_store: BranchStore::new(&git.common_dir()?),
    };
    let mut rows = Vec::new();
    for summary in &shown {
        let row = seen.row(summary)?;
        if !request.mine || row.0.is_mine() {
            rows.push(row);
        }
    }
    let issues = with_ci(surface, settings, rows)?;
    let dispatch = seen.dispatch_slots(request.mine);
    let views = seen.views;
    let pulls = seen.pulls;
    let epic = match request.epic {
        Some(number) => Some(epic_view(
            surface,
            settings,
            number,
            &open,
            &mut read,
            &views,
            &pulls,
            now,
            &mut warnings,
        )?),
        None => None,
    };
    Ok(StatusView {
        surface: settings.surface,
        instance_id: me.clone(),
        now,
        mine: request.mine,
        totals: Totals::of(&issues),
        issues,
        dispatch,
        epic,
        server: crate::writer::protect::known(git, settings),
        warnings,
    })
}

/// What one gathering read, for the rows it makes.
struct Seen<'a> {
    settings: &'a Settings,
    git: &'a Git,
    heads: &'a Heads,
    slots: dispatch::SlotView,
    views: BTreeMap<u64, IssueView>,
    /// The issues read with their comments.
    read: &'a BTreeMap<u64, Issue>,
    pulls: Vec<PullRequest>,
    /// The branches whose pull requests are this reader's own work.
    own: Vec<String>,
    branch_store: BranchStore,
}

impl Seen<'_> {
    /// The row of one shown issue, and its pull request (whose CI is read
    /// for every row at once).
    fn row(&self, summary: &IssueSummary) -> Result<(IssueRow, Option<PullRequest>), StatusError> {
        let (labels, me) = (&self.settings.labels, self.settings.instance.as_str());
        let number = summary.number;
        let issue = self.read.get(&number);
        let view = self.views.get(&number);
        let blocked_by: Vec<u64> = summary
            .labels
            .iter()
            .filter_map(|l| labels.blocker(l))
            .collect();
        let claimed = summary.labels.contains(&labels.in_progress);
        let dispatch_claim = self.dispatch_claim(number);
        let holder = view.and_then(|v| v.holder.as_ref());
        // As `coord read` judges it: an open pull request that closes it
        // holds an issue nobody holds live.
        // (An issue only a pull request names is not read: no claim.)
        let closing = match view {
            Some(v) => v.pull_request.as_ref().map(|c| c.number),
            // No claim read: the core's rule over what the labels say.
            None => {
                let pull = closing_pull(
                    &self.pulls,
                    number,
                    &self.own.iter().map(String::as_str).collect::<Vec<_>>(),
                );
                match Holding::unclaimed(&blocked_by).with_pull(pull.map(|c| c.number)) {
                    Holding::PullRequest { number } => Some(number),
                    _ => None,
                }
            }
        }
        .and_then(|n| self.pulls.iter().find(|pr| pr.number == n));
        let state = match view.map(|v| v.decision()) {
            _ if closing.is_some() => RowState::Pull,
            Some(Decision::Ours) => RowState::Ours,
            Some(Decision::Lapsed) => RowState::Lapsed,
            Some(Decision::Held) => RowState::Held,
            Some(Decision::Stale) => RowState::Stale,
            _ if !blocked_by.is_empty() => RowState::Blocked,
            _ if claimed => RowState::Orphan,
            _ => RowState::Dispatch,
        };
        let branch_name = holder
            .and_then(|h| h.branch.clone())
            .or_else(|| issue.and_then(tasks::progress).and_then(|p| p.branch));
        let branch = branch_name.map(|name| {
            let remote = self.heads.by_branch.get(&name);
            BranchState {
                head: remote.map(|(sha, _)| sha.clone()),
                head_moved_at: remote.map(|(_, at)| *at),
                name,
            }
        });
        let task_count = issue.and_then(tasks::locate).map(|found| TaskCount {
            done: found.tasks.iter().filter(|t| t.done).count(),
            total: found.tasks.len(),
            next_task: tasks::next_task(&found.tasks).map(|t| NextTask {
                number: t.number,
                title: t.title.clone(),
            }),
        });
        let pull = closing
            .or_else(|| {
                self.pulls.iter().find(|pr| {
                    hydrate::pull_is_for(pr, number, branch.as_ref().map(|b| b.name.as_str()))
                })
            })
            .cloned();
        let ours = holder.is_some_and(|h| h.instance_id == *me);
        let attention =
            self.attention(state, view, ours, branch.as_ref(), dispatch_claim.as_ref())?;
        let row = IssueRow {
            issue: number,
            state,
            holder: holder.map(|h| Holder {
                instance_id: h.instance_id.clone(),
                host: h.host.clone(),
                ours: h.instance_id == *me,
            }),
            generation: view.filter(|v| v.generation > 0).map(|v| v.generation),
            lease: view.and_then(|v| lease_state(v, number)),
            branch,
            tasks: task_count,
            pull: None,
            blocked_by,
            dispatch: dispatch_claim,
            attention,
        };
        Ok((row, pull))
    }

    /// The dispatch claim on `number` that counts: one that holds or may,
    /// else whichever there is.
    fn dispatch_claim(&self, number: u64) -> Option<DispatchClaim> {
        let claims = &self.slots.claims;
        claims
            .iter()
            .filter(|c| c.issue == number && c.verdict != Verdict::Stale)
            .min_by_key(|c| (!c.holds(), c.landed()))
            .or_else(|| claims.iter().find(|c| c.issue == number))
            .map(|c| DispatchClaim {
                instance_id: c.instance_id.clone(),
                ours: self.settings.instance == c.instance_id,
                claimed_at: c.claimed_at,
                verdict: verdict_name(&c.verdict).to_owned(),
                slot: match c.verdict {
                    Verdict::Holds { slot } => Some(slot),
                    _ => None,
                },
            })
    }

    /// What in a row needs a person: a stale lease, a collision, a head
    /// moved behind this writer's back, a stale dispatch claim.
    fn attention(
        &self,
        state: RowState,
        view: Option<&IssueView>,
        ours: bool,
        branch: Option<&BranchState>,
        dispatch_claim: Option<&DispatchClaim>,
    ) -> Result<Vec<String>, StatusError> {
        let mut attention = Vec::new();
        if state == RowState::Stale {
            attention.push("stale lease".to_owned());
        }
        if state == RowState::Lapsed {
            attention.push("your lease lapsed: anyone may take it over".to_owned());
        }
        if view.is_some_and(|v| v.my_losing_claim.is_some()) {
            attention.push("collision: two live claims of one generation".to_owned());
        }
        if let Some(b) = branch.filter(|_| ours) {
            if let Some(reason) = moved_behind_back(self.git, &self.branch_store, b)? {
                attention.push(reason);
            }
        }
        match dispatch_claim.map(|d| d.verdict.as_str()) {
            Some("issue_taken") => {
                attention.push("collision: two dispatch claims on one issue".to_owned())
            }
            Some("stale") => attention.push("stale dispatch claim".to_owned()),
            _ => {}
        }
        Ok(attention)
    }

    /// The dispatch slots and who holds them (only this instance's with
    /// `mine`).
    fn dispatch_slots(&self, mine: bool) -> DispatchSlots {
        let me = &self.settings.instance;
        let slots = &self.slots;
        DispatchSlots {
            slots: slots.slots,
            used: slots.busy,
            free: slots.free,
            holders: slots
                .holders
                .iter()
                .filter(|h| !mine || h.instance_id.as_ref() == Some(me))
                .map(|h| SlotHolder {
                    slot: h.slot,
                    kind: h.kind,
                    issue: h.number,
                    instance_id: h.instance_id.clone(),
                    ours: h.instance_id.as_ref() == Some(me),
                    since: h.since,
                })
                .collect(),
        }
    }
}

impl IssueRow {
    /// This instance holds the issue's claim or its dispatch claim.
    fn is_mine(&self) -> bool {
        self.holder.as_ref().is_some_and(|h| h.ours)
            || self.dispatch.as_ref().is_some_and(|d| d.ours)
    }
}

/// The rows with their pull requests' CI (one read per head of a shown
/// issue's pull request), in the order people read them: what needs a
/// person first.
fn with_ci(
    surface: &dyn Surface,
    settings: &Settings,
    rows: Vec<(IssueRow, Option<PullRequest>)>,
) -> Result<Vec<IssueRow>, StatusError> {
    let ci = hydrate::ci_by_sha(surface, rows.iter().filter_map(|(_, p)| p.as_ref()))?;
    let mut issues: Vec<IssueRow> = rows
        .into_iter()
        .map(|(mut row, pull)| {
            if let Some(pr) = pull {
                let verdict = ci_verdict(&ci, &pr, settings);
                if verdict == "failure" {
                    row.attention.push("CI failing".to_owned());
                }
                row.pull = Some(PullState {
                    number: pr.number,
                    head_ref: pr.head_ref,
                    author: pr.author,
                    head: pr.head_sha,
                    draft: pr.draft,
                    ci: verdict,
                });
            }
            row
        })
        .collect();
    issues.sort_by_key(|r| (!r.needs_attention(), r.state.rank(), r.issue));
    Ok(issues)
}

impl Totals {
    fn of(issues: &[IssueRow]) -> Totals {
        let mut totals = Totals {
            issues: issues.len(),
            ..Totals::default()
        };
        for row in issues {
            match row.state {
                RowState::Ours => totals.ours += 1,
                RowState::Held => totals.held += 1,
                RowState::Stale => totals.stale += 1,
                RowState::Lapsed => totals.lapsed += 1,
                RowState::Blocked => totals.blocked += 1,
                RowState::Orphan => totals.orphan += 1,
                RowState::Pull => totals.pull += 1,
                RowState::Dispatch => {}
            }
            if row.dispatch.is_some() {
                totals.dispatch += 1;
            }
            if row.needs_attention() {
                totals.needs_attention += 1;
            }
        }
        totals
    }
}

fn verdict_name(verdict: &Verdict) -> &'static str {
    match verdict {
        Verdict::Holds { .. } => "holds",
        Verdict::NoSlot => "no_slot",
        Verdict::IssueTaken { .. } => "issue_taken",
        Verdict::PullOpen { .. } => "pull_open",
        Verdict::Stale => "stale",
    }
}

fn ci_verdict(ci: &BTreeMap<String, CiStatus>, pr: &PullRequest, settings: &Settings) -> String {
    match ci.get(&pr.head_sha) {
        Some(status) => status.state.clone(),
        None if settings.surface == crate::config::SurfaceKind::Git => "unknown".to_owned(),
        None => "none".to_owned(),
    }
}

fn lease_state(view: &IssueView, issue: u64) -> Option<LeaseState> {
    view.holder.as_ref()?;
    let expires_at = view.expires_at?;
    let live = lease::lease_live(expires_at, view.now);
    Some(LeaseState {
        expires_at,
        live,
        seconds: if live {
            expires_at.since(view.now).as_secs()
        } else {
            view.now.since(expires_at).as_secs()
        },
        takeover: match view.decision() {
            Decision::Stale => Some(format!("git maverick coord takeover {issue}")),
            // Its holder takes it back with a plain claim (a new generation).
            Decision::Lapsed => Some(format!("git maverick coord claim {issue}")),
            _ => None,
        },
    })
}

/// A collision on this instance's own branch (SPEC 8): the remote head is a
/// commit that this writer never saw (its last-seen record does not name
/// it) and that this clone's branch does not contain, so someone else
/// pushed it. A remote head the local branch contains is this writer's own
/// push, recorded by the hook or not.
fn moved_behind_back(
    git: &Git,
    store: &BranchStore,
    branch: &BranchState,
) -> Result<Option<String>, StatusError> {
    let Some(remote) = &branch.head else {
        return Ok(None);
    };
    // A damaged record affects only its branch: read as no record.
    if let Some(record) = store.get(&branch.name).ok().flatten() {
        if record.last_seen.as_ref() == Some(remote) || record.pending.contains(remote) {
            return Ok(None);
        }
    }
    let Some(local) = git.resolve_commit(&format!("refs/heads/{}", branch.name))? else {
        // No local branch to compare with: nothing to say.
        return Ok(None);
    };
    if git.is_ancestor(remote, &local)? {
        return Ok(None);
    }
    Ok(Some(format!(
        "collision: {} moved on the remote to {} behind this writer's back",
        branch.name,
        maverick_core::ids::ObjectId::parse(remote)
            .map_or_else(|_| remote.to_owned(), |id| id.short().to_owned())
    )))
}

#[allow(clippy::too_many_arguments)]
fn epic_view(
    surface: &dyn Surface,
    settings: &Settings,
    number: u64,
    open: &[IssueSummary],
    read: &mut BTreeMap<u64, Issue>,
    views: &BTreeMap<u64, IssueView>,
    pulls: &[PullRequest],
    now: Timestamp,
    warnings: &mut Vec<String>,
) -> Result<EpicView, StatusError> {
    let epic = match open.iter().find(|s| s.number == number) {
        Some(summary) if !read.contains_key(&number) => surface
            .with_comments(std::slice::from_ref(summary))?
            .pop()
            .ok_or(SurfaceError::NoSuchIssue(number))?,
        Some(_) => read[&number].clone(),
        None => surface.issue(number)?,
    };
    let dag = state::newest_marker(&epic, MarkerKind::Dag);
    let epic_state = state::newest_marker(&epic, MarkerKind::State);
    if dag.is_none() && epic_state.is_none() {
        return Err(StatusError::NotAnEpic(number));
    }
    if dag.is_none() {
        warnings.push(format!(
            "#{number} has no maverick-dag marker: every story is drawn in wave 1"
        ));
    }
    let (deps, recorded) = hydrate::epic_plan(number, dag.as_ref(), epic_state.as_ref())?;
    let stories: BTreeSet<u64> = deps
        .keys()
        .chain(recorded.keys())
        .copied()
        .filter(|n| *n != number)
        .collect();

    // Open stories are in the list already; closed ones (or ones the list
    // missed) cost a read of their labels each.
    let mut summaries: BTreeMap<u64, IssueSummary> = open
        .iter()
        .filter(|s| stories.contains(&s.number))
        .map(|s| (s.number, s.clone()))
        .collect();
    let missing: Vec<u64> = stories
        .iter()
        .copied()
        .filter(|n| !summaries.contains_key(n))
        .collect();
    if !missing.is_empty() {
        summaries.extend(
            surface
                .summaries(&missing)?
                .into_iter()
                .map(|s| (s.number, s)),
        );
    }
    // A story claimed but not listed (a list that lagged): its claim too.
    let unread: Vec<IssueSummary> = summaries
        .values()
        .filter(|s| {
            s.labels.contains(&settings.labels.in_progress) && !read.contains_key(&s.number)
        })
        .cloned()
        .collect();
    let mut extra_views = BTreeMap::new();
    for issue in surface.with_comments(&unread)? {
        extra_views.insert(
            issue.number,
            lease::analyze(&issue, settings, &settings.instance, now),
        );
        read.insert(issue.number, issue);
    }

    let waves = waves_of(&stories, &deps);
    let mut by_wave: BTreeMap<u32, Vec<Story>> = BTreeMap::new();
    for &story in &stories {
        let summary = summaries.get(&story);
        let mut status = hydrate::story_status(settings, summary, recorded.get(&story).copied());
        let pull = pulls
            .iter()
            .find(|pr| pr.closes(story) && summary.is_none_or(|s| s.open));
        if pull.is_some() && status.source == "derived" && status.state == StoryState::Pending {
            status.state = StoryState::InFlight;
        }
        let view = views.get(&story).or_else(|| extra_views.get(&story));
        let holder = view.and_then(|v| v.holder.as_ref()).map(|h| Holder {
            instance_id: h.instance_id.clone(),
            host: h.host.clone(),
            ours: h.instance_id == settings.instance,
        });
        by_wave.entry(waves[&story]).or_default().push(Story {
            issue: story,
            state: status.state,
            state_source: status.source,
            deps: deps.get(&story).cloned().unwrap_or_default(),
            open: summary.map(|s| s.open),
            holder,
            stale: view.is_some_and(|v| v.decision() == Decision::Stale),
            blocked_by: status.blocked_by,
            pull: pull.map(|pr| pr.number),
        });
    }
    Ok(EpicView {
        epic: number,
        waves: by_wave
            .into_iter()
            .map(|(wave, stories)| Wave { wave, stories })
            .collect(),
    })
}

/// Each story's wave: 1 without dependencies inside the epic, else one
/// more than its latest dependency. A cycle (a damaged DAG) is cut where
/// the walk meets it again.
fn waves_of(stories: &BTreeSet<u64>, deps: &BTreeMap<u64, Vec<u64>>) -> BTreeMap<u64, u32> {
    fn visit(
        story: u64,
        stories: &BTreeSet<u64>,
        deps: &BTreeMap<u64, Vec<u64>>,
        done: &mut BTreeMap<u64, u32>,
        walking: &mut BTreeSet<u64>,
    ) -> u32 {
        if let Some(&wave) = done.get(&story) {
            return wave;
        }
        if !walking.insert(story) {
            return 0;
        }
        let mut wave = 1;
        for &dep in deps.get(&story).into_iter().flatten() {
            if dep != story && stories.contains(&dep) {
                wave = wave.max(visit(dep, stories, deps, done, walking) + 1);
            }
        }
        walking.remove(&story);
        done.insert(story, wave);
        wave
    }
    let mut done = BTreeMap::new();
    let mut walking = BTreeSet::new();
    for &story in stories {
        visit(story, stories, deps, &mut done, &mut walking);
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waves_follow_the_dag_and_survive_a_cycle() {
        let stories: BTreeSet<u64> = [1, 2, 3, 4, 5].into();
        let deps: BTreeMap<u64, Vec<u64>> = [
            (2, vec![1]),
            (3, vec![1, 2]),
            (4, vec![99]),
            (5, vec![5, 3]),
        ]
        .into();
        let waves = waves_of(&stories, &deps);
        assert_eq!(waves, [(1, 1), (2, 2), (3, 3), (4, 1), (5, 4)].into());
        let cyclic: BTreeMap<u64, Vec<u64>> = [(1, vec![2]), (2, vec![1])].into();
        let waves = waves_of(&[1, 2].into(), &cyclic);
        assert!(waves.values().all(|w| *w >= 1), "{waves:?}");
    }
}
