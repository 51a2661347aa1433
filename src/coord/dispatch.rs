//! The dispatch slot (SPEC 9): "claim the slot at dispatch time", written
//! once above the surface trait.
//!
//! A scheduler (cron, a loop, several people's laptops) runs `dispatch` to
//! start an agent cycle; at most `dispatchSlots` cycles may be in flight and
//! never two on one issue. The shared state is the *ledger*:
//!
//! - open items labelled `agent-pr` (the agent's pull requests; on the git
//!   surface, which has no pull requests, any number carrying the label
//!   stands for one);
//! - open issues labelled `agent-wip` or the frontier label, with their
//!   `maverick-dispatch` comments: a claim (`"action": "claim"`) is closed by
//!   a later withdrawal, clearing or release that names its `marker_id`.
//!
//! The settle is a pure function of the ledger, so every dispatcher that
//! reads the same data reaches the same verdict: open PRs hold slots first,
//! then issues labelled `agent-wip` without any claim (put there by hand or
//! another tool), then fresh live claims in the order the surface gave their
//! comments (`created_at`, then comment id); the first `slots` hold, and one
//! issue holds at most one. A claim's verdict depends only on what the surface
//! ordered before it, so a claim written later can never unseat it.
//!
//! The claim (comment and label) is one write whose guard re-runs the settle
//! over every item of the ledger as this dispatcher read it. On the git
//! surface that write is a compare-and-swap on the claimed issue, so two
//! claims never land on one issue; a claim on another issue that landed
//! since the read can slip past the guard there as on GitHub (where the
//! guard sees a fresh read only), and the settle after the write resolves
//! it.
//!
//! A dispatch that lost an attempt (another claim landed first) tries again
//! for as long as a slot and an eligible issue are free, within a time
//! budget rather than a number of tries, and spreads: many dispatchers that
//! met on the lowest issue would otherwise meet again on each next one.

use serde::Serialize;
use std::collections::{BTreeSet, HashSet};

use crate::config::Settings;
use crate::coord::pulls::closed_by_pull;
use crate::coord::settle::{Begin, Driver, Race, Verdict as Settled};
use crate::markers::{self, Marker, MarkerKind};
use crate::surface::{Applied, Comment, Issue, IssueSummary, Op, Surface, SurfaceError, Write};
use crate::timefmt::{format_duration, Timestamp};
use maverick_core::ids::InstanceId;
use maverick_core::payloads::{DispatchAction, DispatchPayload};
use maverick_core::settle::{earliest_first, landed_before, Landed};

/// How far a dispatch's read walks the frontier.
#[derive(Clone, Copy)]
enum Walk {
    /// Not at all: a settle counts only the claims.
    No,
    /// To the lowest eligible issue, the one a first attempt claims.
    Lowest,
    /// To as many eligible issues as there are free slots: the ones an
    /// attempt after a lost one spreads over ([`SlotView::pick`]).
    Spread,
}

const ACTION_CLAIM: DispatchAction = DispatchAction::Claim;
const ACTION_WITHDRAW: DispatchAction = DispatchAction::Withdraw;
const ACTION_CLEAR: DispatchAction = DispatchAction::Clear;
const ACTION_RELEASE: DispatchAction = DispatchAction::Release;

/// What the dispatcher reads from the surface.
#[derive(Clone, Debug)]
pub struct Ledger {
    pub now: Timestamp,
    /// Open items labelled `agent-pr`.
    pub pulls: BTreeSet<u64>,
    /// Open issues labelled `agent-wip` or the frontier label, with every comment.
    pub issues: Vec<Issue>,
}

impl Ledger {
    /// The ledger of fully read items, each placed by its labels: what a
    /// guard sees inside the compare-and-swap.
    pub(crate) fn from_items(
        now: Timestamp,
        items: &[Issue],
        settings: &Settings,
        frontier: &str,
    ) -> Ledger {
        let labels = &settings.labels;
        let pulls = items
            .iter()
            .filter(|i| i.open && i.has_label(&labels.pr))
            .map(|i| i.number)
            .collect::<BTreeSet<_>>();
        let issues = items
            .iter()
            .filter(|i| i.open && !i.is_pull && !pulls.contains(&i.number))
            .filter(|i| i.has_label(&labels.wip) || i.has_label(frontier))
            .cloned()
            .collect();
        Ledger { now, pulls, issues }
    }

    /// Every number the ledger covers, pulls included.
    fn numbers(&self) -> Vec<u64> {
        let mut numbers: Vec<u64> = self.pulls.iter().copied().collect();
        numbers.extend(self.issues.iter().map(|i| i.number));
        numbers.sort_unstable();
        numbers.dedup();
        numbers
    }
}

/// Why a live claim does not hold a slot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Verdict {
    Holds {
        slot: u32,
    },
    /// `slots` others were ordered before it.
    NoSlot,
    /// An earlier claim holds the same issue.
    IssueTaken {
        by_comment: u64,
    },
    /// The issue's agent PR is open: open PRs beat any claim.
    PullOpen {
        pr: u64,
    },
    /// Older than `dispatchStale`: the next dispatch clears it.
    Stale,
}

/// One unclosed dispatch claim and the settle's verdict on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SlotClaim {
    pub issue: u64,
    pub comment_id: u64,
    /// The marker's `marker_id`, or `comment-<id>` for a claim without one.
    pub marker_id: String,
    pub instance_id: InstanceId,
    pub host: Option<String>,
    /// The surface's time of the claim comment: what orders claims.
    pub claimed_at: Timestamp,
    /// Whether its issue carries `agent-wip`.
    pub labelled: bool,
    #[serde(flatten)]
    pub verdict: Verdict,
}

impl SlotClaim {
    pub fn holds(&self) -> bool {
        matches!(self.verdict, Verdict::Holds { .. })
    }

    /// Where the surface placed it among the claims on every issue.
    pub(crate) fn landed(&self) -> Landed<'_> {
        Landed::across_records(self.claimed_at, self.comment_id, &self.instance_id)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum HolderKind {
    /// An open agent PR.
    PullRequest,
    /// An issue labelled `agent-wip` without any live claim.
    Labelled,
    /// A fresh claim that won the settle.
    Claim,
}

/// One busy slot.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Holder {
    pub slot: u32,
    pub kind: HolderKind,
    /// The issue, or the pull request for [`HolderKind::PullRequest`].
    pub number: u64,
    pub instance_id: Option<InstanceId>,
    pub since: Option<Timestamp>,
    pub comment_id: Option<u64>,
}

/// Why a frontier issue cannot be dispatched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Skip {
    Assigned,
    InProgress,
    Claimed,
    Blocked,
    PullOpen,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FrontierIssue {
    pub issue: u64,
    /// `None` when it is eligible.
    pub skip: Option<Skip>,
}

/// The slots as the settle sees them.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct SlotView {
    pub now: Timestamp,
    pub slots: u32,
    pub frontier_label: String,
    pub busy: u32,
    pub free: u32,
    pub holders: Vec<Holder>,
    /// Every unclosed claim, in the settle's order (stale ones last).
    pub claims: Vec<SlotClaim>,
    /// The frontier, lowest first.
    pub frontier: Vec<FrontierIssue>,
}

impl SlotView {
    /// The eligible frontier issues, lowest first.
    pub(crate) fn eligible(&self) -> impl Iterator<Item = u64> + '_ {
        self.frontier
            .iter()
            .filter(|f| f.skip.is_none())
            .map(|f| f.issue)
    }

    /// The issue to claim: the lowest eligible one; after `lost` attempts
    /// (another dispatcher's claim landed first), one of the lowest `free`
    /// eligible issues chosen by `racer` (different for each dispatcher), so
    /// that dispatchers that met on one issue spread over the issues the free
    /// slots will take anyway rather than meet again on the next one.
    pub(crate) fn pick(&self, racer: &str, lost: u32) -> Option<u64> {
        let eligible: Vec<u64> = self.eligible().collect();
        let at = match lost {
            0 => 0,
            _ => {
                use std::hash::{Hash, Hasher};
                let mut hasher = std::collections::hash_map::DefaultHasher::new();
                (racer, lost).hash(&mut hasher);
                let spread = eligible.len().min(self.free as usize).max(1);
                (hasher.finish() % spread as u64) as usize
            }
        };
        eligible.get(at).copied()
    }

    pub(crate) fn stale(&self) -> impl Iterator<Item = &SlotClaim> {
        self.claims.iter().filter(|c| c.verdict == Verdict::Stale)
    }

    pub(crate) fn claim(&self, marker_id: &str) -> Option<&SlotClaim> {
        self.claims.iter().find(|c| c.marker_id == marker_id)
    }

    /// Whether the losing `claim` may take `agent-wip` off its issue: only
    /// when no other claim holds the issue (then the label is the winner's)
    /// and no earlier live claim sits there (then it is that claim's to take
    /// off or keep, so that two losers never disagree about it).
    fn label_is_left_to(&self, claim: &SlotClaim) -> bool {
        !self.claims.iter().any(|c| {
            c.issue == claim.issue
                && c.marker_id != claim.marker_id
                && (c.holds()
                    || (c.verdict != Verdict::Stale && landed_before(c.landed(), claim.landed())))
        })
    }
}

/// A claim as its comment states it, before the settle.
#[derive(Clone, Debug)]
struct ParsedClaim {
    comment_id: u64,
    key: String,
    instance_id: InstanceId,
    host: Option<String>,
    claimed_at: Timestamp,
}

/// The dispatch markers of one issue.
struct IssueMarks {
    /// Unclosed claims, in comment order.
    live: Vec<ParsedClaim>,
    /// PRs its releases recorded.
    linked_prs: Vec<u64>,
}

fn claim_key(payload: &DispatchPayload, comment: &Comment) -> String {
    payload
        .marker_id
        .clone()
        .unwrap_or_else(|| format!("comment-{}", comment.id))
}

fn issue_marks(issue: &Issue) -> IssueMarks {
    let mut seen = HashSet::new();
    let mut claims: Vec<ParsedClaim> = Vec::new();
    let mut closed: HashSet<String> = HashSet::new();
    let mut linked_prs = Vec::new();
    for comment in issue.comments.iter().filter(|c| c.trusted) {
        for marker in markers::first_of_each_kind(&comment.body) {
            if marker.kind != MarkerKind::Dispatch {
                continue;
            }
            // A payload that does not read (a claim without its instance,
            // a field of the wrong type) counts for nothing.
            let Ok(payload) = marker.dispatch() else {
                continue;
            };
            // A POST retried after the surface had committed it shows up
            // twice; the first copy is the one that counts.
            if let Some(id) = &payload.marker_id {
                if !seen.insert(id.clone()) {
                    continue;
                }
            }
            match &payload.action {
                DispatchAction::Claim => {
                    let Some(instance_id) = payload.instance_id.clone() else {
                        continue;
                    };
                    claims.push(ParsedClaim {
                        comment_id: comment.id,
                        key: claim_key(&payload, comment),
                        instance_id,
                        host: payload.host.clone(),
                        claimed_at: comment.created_at,
                    });
                }
                action if action.closes() => {
                    if let Some(pr) = payload.pr {
                        linked_prs.push(pr);
                    }
                    match payload.claims {
                        Some(keys) => closed.extend(keys),
                        // Another tool's closing that names no claim closes
                        // every claim before it.
                        _ => closed.extend(
                            claims
                                .iter()
                                .filter(|c| c.comment_id < comment.id)
                                .map(|c| c.key.clone()),
                        ),
                    }
                }
                _ => {}
            }
        }
    }
    claims.retain(|c| !closed.contains(&c.key));
    IssueMarks {
        live: claims,
        linked_prs,
    }
}

/// Settles the ledger: who holds the slots, which claims lose or are stale,
/// and what can be dispatched next.
pub fn analyze(ledger: &Ledger, settings: &Settings, frontier_label: &str) -> SlotView {
    let now = ledger.now;
    let marks: Vec<(&Issue, IssueMarks)> =
        ledger.issues.iter().map(|i| (i, issue_marks(i))).collect();
    let settle = Settle {
        ledger,
        settings,
        marks: &marks,
    };
    let mut holders = settle.holders_without_claims();
    let claims = settle.claims(&mut holders);
    let frontier = settle.frontier(frontier_label);
    let busy = holders.len() as u32;
    SlotView {
        now,
        slots: settings.dispatch_slots,
        frontier_label: frontier_label.to_owned(),
        busy,
        free: settings.dispatch_slots.saturating_sub(busy),
        holders,
        claims,
        frontier,
    }
}

/// The ledger, each issue with its marks, as [`analyze`] settles them.
struct Settle<'a> {
    ledger: &'a Ledger,
    settings: &'a Settings,
    marks: &'a [(&'a Issue, IssueMarks)],
}

impl Settle<'_> {
    /// A claim young enough to hold a slot.
    fn fresh(&self, c: &ParsedClaim) -> bool {
        maverick_core::holding::lease_live(
            c.claimed_at.plus(self.settings.dispatch_stale),
            self.ledger.now,
        )
    }

    /// The open pull request linked to an issue, which holds its slot.
    fn open_pr(&self, m: &IssueMarks) -> Option<u64> {
        m.linked_prs
            .iter()
            .copied()
            .find(|p| self.ledger.pulls.contains(p))
    }

    /// The slots held without a claim: every open pull request, and every
    /// issue labelled work-in-progress with neither a claim nor a pull
    /// request behind the label.
    fn holders_without_claims(&self) -> Vec<Holder> {
        let wip = &self.settings.labels.wip;
        let pulls = self
            .ledger
            .pulls
            .iter()
            .map(|&pr| (HolderKind::PullRequest, pr));
        let labelled = self
            .marks
            .iter()
            .filter(|(issue, m)| {
                issue.has_label(wip) && m.live.is_empty() && self.open_pr(m).is_none()
            })
            .map(|(issue, _)| (HolderKind::Labelled, issue.number));
        pulls
            .chain(labelled)
            .map(|(kind, number)| Holder {
                slot: 0,
                kind,
                number,
                instance_id: None,
                since: None,
                comment_id: None,
            })
            .collect()
    }

    /// Every live claim with its verdict, oldest first and the stale ones
    /// last; the claims that win a slot join `holders`, which are then
    /// numbered.
    fn claims(&self, holders: &mut Vec<Holder>) -> Vec<SlotClaim> {
        let labels = &self.settings.labels;
        let mut claims: Vec<SlotClaim> = Vec::new();
        let mut stale: Vec<SlotClaim> = Vec::new();
        let mut candidates: Vec<(&ParsedClaim, u64, bool)> = Vec::new();
        for (issue, m) in self.marks {
            let labelled = issue.has_label(&labels.wip);
            for c in &m.live {
                let verdict = match self.open_pr(m) {
                    Some(pr) => Some(Verdict::PullOpen { pr }),
                    None if !self.fresh(c) => Some(Verdict::Stale),
                    None => None,
                };
                match verdict {
                    Some(Verdict::Stale) => {
                        stale.push(slot_claim(c, issue.number, labelled, Verdict::Stale))
                    }
                    Some(v) => claims.push(slot_claim(c, issue.number, labelled, v)),
                    None => candidates.push((c, issue.number, labelled)),
                }
            }
        }
        claims.extend(self.fill_slots(candidates, holders));
        for (index, holder) in holders.iter_mut().enumerate() {
            holder.slot = index as u32 + 1;
        }
        earliest_first(&mut claims, SlotClaim::landed);
        earliest_first(&mut stale, SlotClaim::landed);
        claims.extend(stale);
        claims
    }

    /// The fresh claims without a pull request, oldest first: each takes a
    /// free slot, unless an earlier claim holds its issue already.
    fn fill_slots(
        &self,
        mut candidates: Vec<(&ParsedClaim, u64, bool)>,
        holders: &mut Vec<Holder>,
    ) -> Vec<SlotClaim> {
        earliest_first(&mut candidates, |(c, _, _)| {
            Landed::across_records(c.claimed_at, c.comment_id, &c.instance_id)
        });
        let mut holding: Vec<(u64, u64)> = Vec::new();
        let mut claims = Vec::new();
        for (c, issue, labelled) in candidates {
            let held = holders.len() as u32;
            let verdict = if let Some((_, by)) = holding.iter().find(|(n, _)| *n == issue) {
                Verdict::IssueTaken { by_comment: *by }
            } else if held < self.settings.dispatch_slots {
                holding.push((issue, c.comment_id));
                holders.push(Holder {
                    slot: 0,
                    kind: HolderKind::Claim,
                    number: issue,
                    instance_id: Some(c.instance_id.clone()),
                    since: Some(c.claimed_at),
                    comment_id: Some(c.comment_id),
                });
                Verdict::Holds { slot: held + 1 }
            } else {
                Verdict::NoSlot
            };
            claims.push(slot_claim(c, issue, labelled, verdict));
        }
        claims
    }

    /// The issues labelled `frontier_label`, each with what keeps it from
    /// being dispatched (if anything), by number.
    fn frontier(&self, frontier_label: &str) -> Vec<FrontierIssue> {
        let mut frontier: Vec<FrontierIssue> = self
            .marks
            .iter()
            .filter(|(issue, _)| issue.has_label(frontier_label))
            .map(|(issue, m)| FrontierIssue {
                issue: issue.number,
                skip: self.skip(issue, m),
            })
            .collect();
        frontier.sort_by_key(|f| f.issue);
        frontier
    }

    /// Why a frontier issue is not dispatched, if it is not.
    fn skip(&self, issue: &Issue, m: &IssueMarks) -> Option<Skip> {
        let labels = &self.settings.labels;
        // A label backed only by stale claims goes with them.
        let wip = issue.has_label(&labels.wip)
            && (m.live.is_empty() || m.live.iter().any(|c| self.fresh(c)));
        if self.open_pr(m).is_some() {
            Some(Skip::PullOpen)
        } else if wip || m.live.iter().any(|c| self.fresh(c)) {
            Some(Skip::Claimed)
        } else if issue.has_label(&labels.in_progress)
            && !crate::coord::lease::analyze(
                issue,
                self.settings,
                &InstanceId::default(),
                self.ledger.now,
            )
            .orphan_label
        {
            // A claim label with no unreleased claim behind it is an
            // orphan (a release that failed part way): the issue is free.
            Some(Skip::InProgress)
        } else if !issue.assignees.is_empty() {
            Some(Skip::Assigned)
        } else if issue
            .labels
            .iter()
            .any(|l| l.starts_with(&labels.blocked_prefix))
        {
            Some(Skip::Blocked)
        } else {
            None
        }
    }
}

fn slot_claim(c: &ParsedClaim, issue: u64, labelled: bool, verdict: Verdict) -> SlotClaim {
    SlotClaim {
        issue,
        comment_id: c.comment_id,
        marker_id: c.key.clone(),
        instance_id: c.instance_id.clone(),
        host: c.host.clone(),
        claimed_at: c.claimed_at,
        labelled,
        verdict,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DispatchResult {
    /// A slot is ours: start the agent cycle on `issue`.
    Dispatched,
    /// `--dry-run`: this is the issue a dispatch would claim; nothing was written.
    WouldDispatch,
    /// Every slot is busy (exit 9).
    NoSlot,
    /// A slot is free but nothing on the frontier is eligible (exit 3).
    Idle,
    /// Other dispatchers' claims kept landing first in every round of the
    /// settle budget, with a slot and an eligible issue still free (exit 6).
    Lost,
}

/// What one `dispatch` came to.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct DispatchReport {
    pub result: DispatchResult,
    pub issue: Option<u64>,
    pub comment_id: Option<u64>,
    pub slot: Option<u32>,
    pub marker_id: Option<String>,
    pub instance_id: InstanceId,
    pub dry_run: bool,
    /// Stale claims this dispatch cleared (with `--dry-run`: would clear).
    pub cleared: Vec<SlotClaim>,
    /// Claims of this dispatch that lost the settle and were withdrawn.
    pub withdrawn: Vec<SlotClaim>,
    /// The slots as the last read saw them.
    pub view: SlotView,
}

/// Why a dispatch claim ends, as its closing marker's `reason` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
enum DispatchEnd {
    /// Withdrawn by its dispatcher: it lost the settle.
    LostSettle,
    /// Cleared by another dispatcher: too old.
    Stale,
    /// Released: the cycle's pull request takes the slot.
    PrOpened,
    /// Released: the cycle gave up.
    GiveUp,
    /// Released: the cycle ended without a pull request.
    Done,
}

impl DispatchEnd {
    /// The name its closing marker's `reason` carries.
    fn as_str(self) -> &'static str {
        match self {
            DispatchEnd::LostSettle => "lost-settle",
            DispatchEnd::Stale => "stale",
            DispatchEnd::PrOpened => "pr-opened",
            DispatchEnd::GiveUp => "give-up",
            DispatchEnd::Done => "done",
        }
    }
}

/// How a cycle ends for `dispatch release`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReleaseHow {
    /// The cycle ended without a PR; the issue goes back to the frontier.
    Done,
    /// The agent's draft PR opened: it gets `agent-pr` and takes the slot.
    PullRequest(u64),
    /// The give-up path: the issue leaves the frontier with this label.
    GiveUp(String),
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ReleaseReport {
    pub issue: u64,
    pub pr: Option<u64>,
    pub give_up: Option<String>,
    /// The claims this release closed.
    pub released: Vec<SlotClaim>,
    pub labels: Vec<String>,
    /// Whether anything was written.
    pub changed: bool,
}

/// How many rounds a dispatch may run before it answers "lost" (exit 6).
/// A round is lost only to other claims: another dispatcher's that landed
/// first (its guard saw the issue or the last free slot taken, or an earlier
/// claim won the settle), or stale ones it cleared. Each slot is won once,
/// so a dispatch that keeps losing with a slot still free met other losers
/// (claims not yet withdrawn), which the margin covers. Time does not count:
/// a round that waits in the token's queue for GitHub's limits lost nothing
/// (a time budget used to run out there, with slots and issues still free).
fn settle_rounds(slots: u32) -> u32 {
    slots.saturating_add(LOST_ROUNDS_MARGIN)
}

/// Rounds a dispatch may lose beyond one for each slot.
const LOST_ROUNDS_MARGIN: u32 = 8;

/// One dispatch as the settle drives it.
struct SlotClaimRace<'d, 'a> {
    dispatcher: &'d Dispatcher<'a>,
    dry_run: bool,
    cleared: Vec<SlotClaim>,
    withdrawn: Vec<SlotClaim>,
    last_view: Option<SlotView>,
}

impl Race for SlotClaimRace<'_, '_> {
    /// The ledger as read, and the issue to claim.
    type Pick = (Ledger, u64);
    /// The claim's marker id and comment.
    type Wrote = (String, Comment);
    type Lost = (SlotView, SlotClaim);
    type Answer = DispatchReport;
    type Error = DispatchError;

    fn begin(&mut self, lost: u32) -> Result<Begin<DispatchReport, Self::Pick>, DispatchError> {
        let d = self.dispatcher;
        let walk = if lost == 0 {
            Walk::Lowest
        } else {
            Walk::Spread
        };
        let ledger = d.read_to_dispatch(walk)?;
        let view = analyze(&ledger, d.settings, &d.frontier_label);
        let stale: Vec<SlotClaim> = view.stale().cloned().collect();
        if !stale.is_empty() {
            if self.dry_run {
                self.cleared.extend(stale);
            } else {
                let cleared = d.clear(&ledger, &view)?;
                self.cleared.extend(cleared);
                return Ok(Begin::Again);
            }
        }
        if view.free == 0 {
            return Ok(Begin::Answer(d.report(DispatchResult::NoSlot, view, self)));
        }
        let Some(issue) = view.pick(d.me().as_str(), lost) else {
            return Ok(Begin::Answer(d.report(DispatchResult::Idle, view, self)));
        };
        if self.dry_run {
            let mut r = d.report(DispatchResult::WouldDispatch, view, self);
            r.issue = Some(issue);
            r.slot = Some(r.view.busy + 1);
            return Ok(Begin::Answer(r));
        }
        Ok(Begin::Claim((ledger, issue)))
    }

    fn write(
        &mut self,
        (ledger, issue): &Self::Pick,
    ) -> Result<Option<Self::Wrote>, DispatchError> {
        self.dispatcher.claim(ledger, *issue)
    }

    fn reread(
        &mut self,
        (_, issue): Self::Pick,
        (marker_id, comment): Self::Wrote,
    ) -> Result<Settled<DispatchReport, Self::Lost>, DispatchError> {
        let d = self.dispatcher;
        let ledger = d.with_own_claim(d.read_to_dispatch(Walk::No)?, issue, &comment)?;
        let view = analyze(&ledger, d.settings, &d.frontier_label);
        let claim = match view.claim(&marker_id).cloned() {
            Some(claim) => claim,
            None => SlotClaim {
                issue,
                comment_id: comment.id,
                marker_id: marker_id.clone(),
                instance_id: d.me().clone(),
                host: Some(d.host.clone()),
                claimed_at: comment.created_at,
                labelled: true,
                verdict: Verdict::NoSlot,
            },
        };
        let Verdict::Holds { slot } = claim.verdict else {
            return Ok(Settled::Lost((view, claim)));
        };
        // A loser that read before us may have taken the label off; the
        // holder puts it back.
        if !claim.labelled {
            d.surface
                .write_unguarded(issue, vec![Op::AddLabels(vec![d.wip().to_owned()])])?;
        }
        let mut r = d.report(DispatchResult::Dispatched, view, self);
        r.issue = Some(issue);
        r.comment_id = Some(comment.id);
        r.slot = Some(slot);
        r.marker_id = Some(marker_id);
        Ok(Settled::Won(r))
    }

    /// Withdraws the losing claim; another round may find a free slot.
    fn withdraw(
        &mut self,
        (view, claim): Self::Lost,
    ) -> Result<Option<DispatchReport>, DispatchError> {
        self.dispatcher.withdraw(&view, &claim)?;
        self.withdrawn.push(claim);
        self.last_view = Some(view);
        Ok(None)
    }

    /// Other dispatchers' claims landed first in every round: "lost", with
    /// every claim of ours withdrawn.
    fn out_of_budget(&mut self) -> Result<DispatchReport, DispatchError> {
        let view = match self.last_view.take() {
            Some(view) => view,
            None => self.dispatcher.status()?,
        };
        Ok(self.dispatcher.report(DispatchResult::Lost, view, self))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error("#{0} cannot be its own pull request")]
    SelfPull(u64),
    #[error("the surface did not return the new claim comment on #{0}")]
    NoClaimComment(u64),
}

/// Why claims close, in the closing payload.
struct Closing {
    reason: DispatchEnd,
    pr: Option<u64>,
    give_up: Option<String>,
}

impl Closing {
    fn because(reason: DispatchEnd) -> Closing {
        Closing {
            reason,
            pr: None,
            give_up: None,
        }
    }
}

/// The dispatch protocol over any surface.
pub struct Dispatcher<'a> {
    pub surface: &'a dyn Surface,
    pub settings: &'a Settings,
    pub frontier_label: String,
    pub host: String,
}

impl<'a> Dispatcher<'a> {
    pub fn new(
        surface: &'a dyn Surface,
        settings: &'a Settings,
        frontier_label: Option<&str>,
    ) -> Dispatcher<'a> {
        Dispatcher {
            surface,
            settings,
            frontier_label: frontier_label
                .unwrap_or(&settings.labels.frontier)
                .to_owned(),
            host: crate::config::short_hostname(),
        }
    }

    fn me(&self) -> &InstanceId {
        &self.settings.instance
    }

    fn wip(&self) -> &str {
        &self.settings.labels.wip
    }

    /// Reads the ledger: the agent PRs, then every `agent-wip` and frontier
    /// issue in full. One list of everything open serves all three labels,
    /// and completes with their comments (on GitHub from this clone's copies
    /// and one list of recent comments, see [`Surface::with_comments`]).
    pub(crate) fn read(&self) -> Result<Ledger, DispatchError> {
        let now = self.surface.now()?;
        let labels = &self.settings.labels;
        let open = self.surface.list(&[], false)?;
        let has = |labels_of: &[String], label: &str| labels_of.iter().any(|l| l == label);
        let pulls: BTreeSet<u64> = open
            .iter()
            .filter(|i| has(&i.labels, &labels.pr))
            .map(|i| i.number)
            .collect();
        let closing = self.surface.open_pulls()?;
        let listed: Vec<IssueSummary> = open
            .into_iter()
            .filter(|i| !i.is_pull && !pulls.contains(&i.number))
            .filter(|i| has(&i.labels, &labels.wip) || has(&i.labels, &self.frontier_label))
            // Work a trusted pull request closes is in progress: not the
            // frontier's (a slot's issue stays in the ledger whatever).
            .filter(|i| has(&i.labels, &labels.wip) || !closed_by_pull(&closing, i.number))
            .collect();
        let issues: Vec<Issue> = self
            .surface
            .with_comments(&listed)?
            .into_iter()
            .filter(|i| i.open)
            .collect();
        // A list can lag a label by seconds (GitHub): the PRs that releases
        // recorded are read one by one, or a slot that just passed from a
        // claim to its PR would look free.
        let mut linked: Vec<u64> = issues
            .iter()
            .flat_map(|i| issue_marks(i).linked_prs)
            .filter(|pr| !pulls.contains(pr))
            .collect();
        linked.sort_unstable();
        linked.dedup();
        let mut pulls = pulls;
        if !linked.is_empty() {
            pulls.extend(
                self.surface
                    .issues(&linked)?
                    .into_iter()
                    .filter(|p| p.open && p.has_label(&labels.pr))
                    .map(|p| p.number),
            );
        }
        Ok(Ledger { now, pulls, issues })
    }

    /// The ledger as a dispatch reads it where the surface keeps a list of
    /// recent comments (GitHub), at a cost that does not grow with the
    /// backlog: the agent PRs and the `agent-wip` issues from their own
    /// lists; in full, the `agent-wip` issues (a copy that did not change
    /// costs nothing) and every issue with a dispatch claim written within
    /// `dispatchStale` (each fresh claim, labelled or not); then the
    /// frontier, lowest first, one page at a time, each issue its list entry
    /// cannot rule out read in full, until the eligible issues `walk` wants
    /// are known. Assigned and blocked issues are ruled out by their labels;
    /// they join the ledger only when fewer are eligible, so that the
    /// answer says why. A full pool, or a settle ([`Walk::No`]: only the
    /// claims count there), reads no frontier. Elsewhere (the git surface,
    /// where one fetch brings every issue) it is [`read`](Self::read).
    fn read_to_dispatch(&self, walk: Walk) -> Result<Ledger, DispatchError> {
        let now = self.surface.now()?;
        let since = now.minus(self.settings.dispatch_stale);
        let Some(recent) = self.surface.comments_since(since)? else {
            return self.read();
        };
        let labels = &self.settings.labels;
        let pulls = self.surface.list(&[labels.pr.as_str()], false)?;
        let mut ledger = Ledger {
            now,
            pulls: pulls.iter().map(|p| p.number).collect(),
            issues: Vec::new(),
        };
        let in_flight: Vec<IssueSummary> = self
            .surface
            .list(&[labels.wip.as_str()], false)?
            .into_iter()
            .filter(|s| !s.is_pull && !ledger.pulls.contains(&s.number))
            .collect();
        let read = self.surface.with_comments(&in_flight)?;
        self.add_read(&mut ledger, read)?;
        let mut claimed: Vec<u64> = recent
            .iter()
            .filter(|(n, c)| c.trusted && !ledger.issues.iter().any(|i| i.number == *n))
            .filter(|(_, c)| {
                markers::first_of_each_kind(&c.body).iter().any(|m| {
                    m.kind == MarkerKind::Dispatch
                        && m.dispatch().is_ok_and(|d| d.action == ACTION_CLAIM)
                })
            })
            .map(|(n, _)| *n)
            .collect();
        claimed.sort_unstable();
        claimed.dedup();
        let read = self.surface.issues(&claimed)?;
        self.add_read(&mut ledger, read)?;
        let free = analyze(&ledger, self.settings, &self.frontier_label).free;
        let wanted = match walk {
            Walk::No => 0,
            Walk::Lowest => free.min(1),
            Walk::Spread => free,
        } as usize;
        if wanted == 0 {
            return Ok(ledger);
        }
        let closing = self.surface.open_pulls()?;
        let mut ruled_out: Vec<Issue> = Vec::new();
        let mut found = false;
        let mut failed = None;
        let frontier = [self.frontier_label.as_str()];
        self.surface.list_lowest_first(&frontier, &mut |page| {
            for summary in page {
                let known = ledger.issues.iter().any(|i| i.number == summary.number);
                if known
                    || summary.is_pull
                    || ledger.pulls.contains(&summary.number)
                    || closed_by_pull(&closing, summary.number)
                {
                    continue;
                }
                let blocked = summary
                    .labels
                    .iter()
                    .any(|l| l.starts_with(&labels.blocked_prefix));
                if blocked || !summary.assignees.is_empty() {
                    ruled_out.push(Issue {
                        number: summary.number,
                        open: summary.open,
                        is_pull: false,
                        labels: summary.labels.clone(),
                        assignees: summary.assignees.clone(),
                        comments: Vec::new(),
                    });
                    continue;
                }
                let read = self.surface.with_comments(std::slice::from_ref(summary));
                if let Err(e) = read
                    .map_err(DispatchError::from)
                    .and_then(|read| self.add_read(&mut ledger, read))
                {
                    failed = Some(e);
                    return false;
                }
                // Every issue below this one is in the ledger or ruled out.
                let view = analyze(&ledger, self.settings, &self.frontier_label);
                if view.eligible().filter(|n| *n <= summary.number).count() >= wanted {
                    found = true;
                    return false;
                }
            }
            true
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        if !found {
            ledger.issues.extend(ruled_out);
        }
        Ok(ledger)
    }

    /// Adds fully read `issues` to `ledger` where [`read`](Self::read)
    /// would place them (open issues labelled `agent-wip` or the frontier
    /// label, not already there), with the agent PRs their releases
    /// recorded that the PR list missed (it can lag a label by seconds).
    fn add_read(&self, ledger: &mut Ledger, issues: Vec<Issue>) -> Result<(), DispatchError> {
        let placed = Ledger::from_items(ledger.now, &issues, self.settings, &self.frontier_label);
        for issue in placed.issues {
            if ledger.pulls.contains(&issue.number)
                || ledger.issues.iter().any(|i| i.number == issue.number)
            {
                continue;
            }
            let mut linked: Vec<u64> = issue_marks(&issue)
                .linked_prs
                .into_iter()
                .filter(|pr| !ledger.pulls.contains(pr))
                .collect();
            linked.sort_unstable();
            linked.dedup();
            ledger.pulls.extend(
                self.surface
                    .issues(&linked)?
                    .into_iter()
                    .filter(|p| p.open && p.has_label(&self.settings.labels.pr))
                    .map(|p| p.number),
            );
            ledger.issues.push(issue);
        }
        Ok(())
    }

    pub(crate) fn status(&self) -> Result<SlotView, DispatchError> {
        let ledger = self.read()?;
        Ok(analyze(&ledger, self.settings, &self.frontier_label))
    }

    fn marker_body(&self, text: String, payload: &DispatchPayload) -> String {
        format!(
            "{text}\n\n{}",
            markers::render_marker(&Marker::of(MarkerKind::Dispatch, payload))
        )
    }

    fn claim_body(&self, issue: u64, marker_id: &str, now: Timestamp) -> String {
        let payload = DispatchPayload {
            instance_id: Some(self.me().clone()),
            host: Some(self.host.clone()),
            issue: Some(issue),
            claimed_at: Some(now),
            slots: Some(u64::from(self.settings.dispatch_slots)),
            marker_id: Some(marker_id.to_owned()),
            ..DispatchPayload::new(ACTION_CLAIM)
        };
        self.marker_body(
            format!("Dispatch slot claimed by `{}` for #{issue}.", self.me()),
            &payload,
        )
    }

    /// A withdrawal, clearing or release closing `claims` on `issue`.
    fn closing_body(
        &self,
        action: DispatchAction,
        issue: u64,
        claims: &[&SlotClaim],
        now: Timestamp,
        text: String,
        why: Closing,
    ) -> String {
        let at = |this: DispatchAction| (action == this).then_some(now);
        let payload = DispatchPayload {
            instance_id: Some(self.me().clone()),
            issue: Some(issue),
            claims: Some(claims.iter().map(|c| c.marker_id.clone()).collect()),
            withdrawn_at: at(ACTION_WITHDRAW),
            cleared_at: at(ACTION_CLEAR),
            released_at: at(ACTION_RELEASE),
            marker_id: Some(markers::new_marker_id()),
            reason: Some(why.reason.as_str().to_owned()),
            pr: why.pr,
            give_up: why.give_up,
            ..DispatchPayload::new(action)
        };
        self.marker_body(text, &payload)
    }

    /// Dispatches one agent cycle: clear what is stale, pick the lowest
    /// eligible issue, claim it (comment, then label), and settle (the one
    /// settle of [`crate::coord::settle`]); a lost round tries again, within
    /// the budget of [`settle_rounds`].
    pub fn dispatch(&self, dry_run: bool) -> Result<DispatchReport, DispatchError> {
        let settle = Driver {
            clock: &self.settings.clock,
            delay: self.settings.settle_delay,
            rounds: settle_rounds(self.settings.dispatch_slots),
        };
        settle.run(&mut SlotClaimRace {
            dispatcher: self,
            dry_run,
            cleared: Vec::new(),
            withdrawn: Vec::new(),
            last_view: None,
        })
    }

    /// A report of this dispatch.
    fn report(
        &self,
        result: DispatchResult,
        view: SlotView,
        race: &mut SlotClaimRace<'_, '_>,
    ) -> DispatchReport {
        DispatchReport {
            result,
            issue: None,
            comment_id: None,
            slot: None,
            marker_id: None,
            instance_id: self.me().clone(),
            dry_run: race.dry_run,
            cleared: std::mem::take(&mut race.cleared),
            withdrawn: std::mem::take(&mut race.withdrawn),
            view,
        }
    }

    /// The ledger with our own claim comment in it, even where a lagging
    /// list or comment page does not show it yet: a claimant that cannot see
    /// its own claim would withdraw a claim others may already count.
    fn with_own_claim(
        &self,
        mut ledger: Ledger,
        issue: u64,
        comment: &Comment,
    ) -> Result<Ledger, DispatchError> {
        let mut own = comment.clone();
        own.trusted = true;
        let index = match ledger.issues.iter().position(|i| i.number == issue) {
            Some(index) => index,
            None => {
                let current = self.surface.issue(issue)?;
                if !current.open {
                    return Ok(ledger);
                }
                ledger.issues.push(current);
                ledger.issues.len() - 1
            }
        };
        let comments = &mut ledger.issues[index].comments;
        if !comments.iter().any(|c| c.id == own.id) {
            comments.push(own);
            comments.sort_by_key(|c| c.id);
        }
        Ok(ledger)
    }

    /// Posts the claim comment and adds `agent-wip`, in one write whose guard
    /// re-settles every item of the ledger: on the git surface nobody can
    /// write between that check and the claim.
    fn claim(
        &self,
        ledger: &Ledger,
        issue: u64,
    ) -> Result<Option<(String, Comment)>, DispatchError> {
        let marker_id = markers::new_marker_id();
        let mut writes = vec![Write {
            issue,
            ops: vec![
                Op::CreateComment(self.claim_body(issue, &marker_id, ledger.now)),
                Op::AddLabels(vec![self.wip().to_owned()]),
            ],
        }];
        writes.extend(
            ledger
                .numbers()
                .into_iter()
                .filter(|n| *n != issue)
                .map(|n| Write {
                    issue: n,
                    ops: Vec::new(),
                }),
        );
        let mut guard = |current: &[Issue], now: Timestamp| {
            let ledger = Ledger::from_items(now, current, self.settings, &self.frontier_label);
            let view = analyze(&ledger, self.settings, &self.frontier_label);
            view.free > 0 && view.eligible().any(|n| n == issue)
        };
        crate::failpoint::name_ops(&["dispatch-after-comment", "dispatch-after-label"]);
        let Some(applied) = self.surface.write(&writes, Some(&mut guard))? else {
            return Ok(None);
        };
        let comment = applied
            .into_iter()
            .next()
            .and_then(|ops| ops.into_iter().next())
            .and_then(|a| match a {
                Applied::Comment(c) => Some(c),
                _ => None,
            })
            .ok_or(DispatchError::NoClaimComment(issue))?;
        Ok(Some((marker_id, comment)))
    }

    /// Withdraws our losing claim. The label comes off first (so a crash in
    /// between leaves an orphan claim, which goes stale, rather than a label
    /// nobody claims), and only when it is ours to take off.
    fn withdraw(&self, view: &SlotView, claim: &SlotClaim) -> Result<(), DispatchError> {
        crate::failpoint::hit("dispatch-before-withdrawal");
        let mut ops = Vec::new();
        if view.label_is_left_to(claim) {
            ops.push(Op::RemoveLabel(self.wip().to_owned()));
        }
        let why = match &claim.verdict {
            Verdict::IssueTaken { by_comment } => {
                format!(
                    "an earlier claim (comment {by_comment}) holds #{}",
                    claim.issue
                )
            }
            Verdict::PullOpen { pr } => format!("its pull request #{pr} is open"),
            _ => format!(
                "all {} slots were taken first",
                self.settings.dispatch_slots
            ),
        };
        let extra = Closing::because(DispatchEnd::LostSettle);
        ops.push(Op::CreateComment(self.closing_body(
            ACTION_WITHDRAW,
            claim.issue,
            &[claim],
            view.now,
            format!("Dispatch claim withdrawn by `{}`: {why}.", self.me()),
            extra,
        )));
        self.surface.write_unguarded(claim.issue, ops)?;
        Ok(())
    }

    /// Clears the stale claims of `view`, one write per issue, each guarded
    /// by the issue's claims being as this read saw them.
    fn clear(&self, ledger: &Ledger, view: &SlotView) -> Result<Vec<SlotClaim>, DispatchError> {
        let mut cleared = Vec::new();
        let mut issues: Vec<u64> = view.stale().map(|c| c.issue).collect();
        issues.dedup();
        for issue in issues {
            let stale: Vec<&SlotClaim> = view.stale().filter(|c| c.issue == issue).collect();
            let live_keys = |i: &Issue| -> Vec<String> {
                issue_marks(i).live.into_iter().map(|c| c.key).collect()
            };
            let Some(before) = ledger.issues.iter().find(|i| i.number == issue) else {
                continue;
            };
            let expected = live_keys(before);
            // Only stale claims live: the label goes with them.
            let remove_label = expected.len() == stale.len();
            let mut ops = Vec::new();
            if remove_label {
                ops.push(Op::RemoveLabel(self.wip().to_owned()));
            }
            let oldest = stale.iter().map(|c| c.claimed_at).min().unwrap_or(view.now);
            let extra = Closing::because(DispatchEnd::Stale);
            let who: Vec<String> = stale
                .iter()
                .map(|c| format!("`{}`", c.instance_id))
                .collect();
            ops.push(Op::CreateComment(self.closing_body(
                ACTION_CLEAR,
                issue,
                &stale,
                view.now,
                format!(
                    "Stale dispatch claim by {} cleared by `{}`: claimed at {oldest}, {} ago, with no open agent PR (dispatchStale is {}).",
                    who.join(", "),
                    self.me(),
                    format_duration(view.now.since(oldest)),
                    format_duration(self.settings.dispatch_stale)
                ),
                extra,
            )));
            let mut guard = |current: &[Issue], _now: Timestamp| {
                current.iter().all(|i| live_keys(i) == expected)
            };
            let writes = [Write { issue, ops }];
            if self.surface.write(&writes, Some(&mut guard))?.is_some() {
                cleared.extend(stale.into_iter().cloned());
            }
        }
        Ok(cleared)
    }

    /// Ends a cycle: `agent-wip` comes off and the issue's live claims are
    /// closed; with a PR, the PR gets `agent-pr` first, so the slot passes
    /// from the claim to the PR without ever being free in between.
    pub fn release(&self, issue: u64, how: &ReleaseHow) -> Result<ReleaseReport, DispatchError> {
        let labels = &self.settings.labels;
        if let ReleaseHow::PullRequest(pr) = how {
            if *pr == issue {
                return Err(DispatchError::SelfPull(issue));
            }
        }
        let now = self.surface.now()?;
        let current = self.surface.issue(issue)?;
        let ledger = Ledger {
            now,
            pulls: BTreeSet::new(),
            issues: vec![current.clone()],
        };
        let released: Vec<SlotClaim> = analyze(&ledger, self.settings, &self.frontier_label)
            .claims
            .into_iter()
            .filter(|c| c.issue == issue)
            .collect();
        let (pr, give_up) = match how {
            ReleaseHow::Done => (None, None),
            ReleaseHow::PullRequest(pr) => (Some(*pr), None),
            ReleaseHow::GiveUp(label) => (None, Some(label.clone())),
        };
        if let Some(pr) = pr {
            self.surface
                .write_unguarded(pr, vec![Op::AddLabels(vec![labels.pr.clone()])])?;
        }
        let mut ops = Vec::new();
        if current.has_label(&labels.wip) {
            ops.push(Op::RemoveLabel(labels.wip.clone()));
        }
        if let Some(label) = &give_up {
            if current.has_label(&self.frontier_label) {
                ops.push(Op::RemoveLabel(self.frontier_label.clone()));
            }
            ops.push(Op::AddLabels(vec![label.clone()]));
        }
        if !released.is_empty() || pr.is_some() || give_up.is_some() {
            let mut extra = Closing::because(DispatchEnd::Done);
            let text = match (&pr, &give_up) {
                (Some(pr), _) => {
                    extra = Closing {
                        pr: Some(*pr),
                        ..Closing::because(DispatchEnd::PrOpened)
                    };
                    format!(
                        "Dispatch slot of #{issue} passed to pull request #{pr} by `{}`.",
                        self.me()
                    )
                }
                (None, Some(label)) => {
                    extra = Closing {
                        give_up: Some(label.clone()),
                        ..Closing::because(DispatchEnd::GiveUp)
                    };
                    format!("Dispatch cycle on #{issue} gave up (labelled `{label}`); released by `{}`.", self.me())
                }
                (None, None) => {
                    format!("Dispatch slot of #{issue} released by `{}`.", self.me())
                }
            };
            let claims: Vec<&SlotClaim> = released.iter().collect();
            ops.push(Op::CreateComment(self.closing_body(
                ACTION_RELEASE,
                issue,
                &claims,
                now,
                text,
                extra,
            )));
        }
        let changed = !ops.is_empty() || pr.is_some();
        let labels_after = if ops.is_empty() {
            current.labels.clone()
        } else {
            let applied = self.surface.write_unguarded(issue, ops)?;
            applied
                .into_iter()
                .rev()
                .find_map(|a| match a {
                    Applied::Labels(l) => Some(l),
                    _ => None,
                })
                .unwrap_or(current.labels)
        };
        Ok(ReleaseReport {
            issue,
            pr,
            give_up,
            released,
            labels: labels_after,
            changed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SurfaceKind;
    use serde_json::{json, Value};

    fn settings(slots: u32) -> Settings {
        Settings {
            dispatch_slots: slots,
            ..Settings::defaults(SurfaceKind::Git, "me")
        }
    }

    const T0: i64 = 1_800_000_000;

    fn marker(payload: Value) -> String {
        let Value::Object(map) = payload else {
            panic!("an object")
        };
        markers::render_marker(&Marker::new(MarkerKind::Dispatch, map))
    }

    /// A coord claim (`maverick-claim`) by `instance`.
    fn coord_claim(instance: &str) -> String {
        let Value::Object(map) = json!({"instance_id": instance, "generation": 1}) else {
            panic!("an object")
        };
        markers::render_marker(&Marker::new(MarkerKind::Claim, map))
    }

    fn comment(id: u64, at: i64, body: String) -> Comment {
        Comment {
            id,
            author: "someone".into(),
            trusted: true,
            body,
            created_at: Timestamp(at),
            updated_at: Timestamp(at),
        }
    }

    fn claim(id: u64, at: i64, key: &str) -> Comment {
        comment(
            id,
            at,
            marker(json!({"action": "claim", "instance_id": format!("i-{key}"), "marker_id": key})),
        )
    }

    fn closing(id: u64, action: &str, keys: &[&str]) -> Comment {
        comment(
            id,
            T0,
            marker(
                json!({"action": action, "instance_id": "x", "claims": keys, "marker_id": format!("close-{id}")}),
            ),
        )
    }

    fn issue(number: u64, labels: &[&str], comments: Vec<Comment>) -> Issue {
        Issue {
            number,
            open: true,
            is_pull: false,
            labels: labels.iter().map(|l| l.to_string()).collect(),
            assignees: Vec::new(),
            comments,
        }
    }

    fn view(slots: u32, pulls: &[u64], issues: Vec<Issue>, now: i64) -> SlotView {
        let ledger = Ledger {
            now: Timestamp(now),
            pulls: pulls.iter().copied().collect(),
            issues,
        };
        analyze(&ledger, &settings(slots), "agent-ready")
    }

    fn verdict(view: &SlotView, key: &str) -> Verdict {
        view.claim(key).expect(key).verdict.clone()
    }

    #[test]
    fn closing_markers_name_their_reason_as_earlier_versions_wrote_it() {
        let written: Vec<Value> = [
            DispatchEnd::LostSettle,
            DispatchEnd::Stale,
            DispatchEnd::PrOpened,
            DispatchEnd::GiveUp,
            DispatchEnd::Done,
        ]
        .iter()
        .map(|end| json!(end.as_str()))
        .collect();
        assert_eq!(
            written,
            [
                json!("lost-settle"),
                json!("stale"),
                json!("pr-opened"),
                json!("give-up"),
                json!("done")
            ]
        );
    }

    #[test]
    fn the_earliest_claims_hold_and_a_same_second_tie_goes_to_the_lower_comment_id() {
        let v = view(
            2,
            &[],
            vec![
                issue(
                    1,
                    &["agent-ready", "agent-wip"],
                    vec![claim(9, T0 + 5, "late")],
                ),
                issue(
                    2,
                    &["agent-ready", "agent-wip"],
                    vec![claim(7, T0 + 3, "tie-high")],
                ),
                issue(
                    3,
                    &["agent-ready", "agent-wip"],
                    vec![claim(4, T0 + 3, "tie-low")],
                ),
            ],
            T0 + 10,
        );
        assert_eq!(verdict(&v, "tie-low"), Verdict::Holds { slot: 1 });
        assert_eq!(verdict(&v, "tie-high"), Verdict::Holds { slot: 2 });
        assert_eq!(verdict(&v, "late"), Verdict::NoSlot);
        assert_eq!((v.busy, v.free), (2, 0));
    }

    #[test]
    fn open_prs_and_unclaimed_labels_hold_before_any_claim() {
        let v = view(
            3,
            &[40],
            vec![
                issue(5, &["agent-wip"], vec![]),
                issue(
                    1,
                    &["agent-ready", "agent-wip"],
                    vec![claim(1, T0, "first")],
                ),
                issue(
                    2,
                    &["agent-ready", "agent-wip"],
                    vec![claim(2, T0, "second")],
                ),
            ],
            T0 + 1,
        );
        let kinds: Vec<(HolderKind, u64, u32)> = v
            .holders
            .iter()
            .map(|h| (h.kind, h.number, h.slot))
            .collect();
        assert_eq!(
            kinds,
            [
                (HolderKind::PullRequest, 40, 1),
                (HolderKind::Labelled, 5, 2),
                (HolderKind::Claim, 1, 3)
            ]
        );
        assert_eq!(verdict(&v, "second"), Verdict::NoSlot);
    }

    #[test]
    fn one_issue_holds_at_most_one_claim_and_its_open_pr_beats_them() {
        let v = view(
            3,
            &[30],
            vec![
                issue(
                    1,
                    &["agent-ready", "agent-wip"],
                    vec![claim(1, T0, "a"), claim(2, T0, "b")],
                ),
                issue(
                    2,
                    &["agent-ready"],
                    vec![
                        comment(
                            3,
                            T0,
                            marker(
                                json!({"action": "release", "instance_id": "x", "claims": [], "pr": 30, "marker_id": "r"}),
                            ),
                        ),
                        claim(4, T0, "c"),
                    ],
                ),
            ],
            T0 + 1,
        );
        assert_eq!(verdict(&v, "a"), Verdict::Holds { slot: 2 });
        assert_eq!(verdict(&v, "b"), Verdict::IssueTaken { by_comment: 1 });
        assert_eq!(verdict(&v, "c"), Verdict::PullOpen { pr: 30 });
        assert_eq!(v.frontier[1].skip, Some(Skip::PullOpen));
    }

    #[test]
    fn closed_stale_duplicate_and_untrusted_claims() {
        let mut untrusted = claim(6, T0, "forged");
        untrusted.trusted = false;
        let mut duplicate = claim(3, T0, "a");
        duplicate.body = duplicate.body.replace("i-a", "i-dup");
        let stale = 4 * 3600;
        let v = view(
            3,
            &[],
            vec![
                issue(
                    1,
                    &["agent-ready", "agent-wip"],
                    vec![claim(1, T0, "a"), duplicate],
                ),
                issue(
                    2,
                    &["agent-ready"],
                    vec![claim(2, T0, "b"), closing(4, "withdraw", &["b"])],
                ),
                // Another tool's closing that names no claim closes those before it.
                issue(
                    3,
                    &["agent-ready"],
                    vec![
                        claim(5, T0, "c"),
                        comment(
                            7,
                            T0,
                            marker(json!({"action": "clear", "instance_id": "x"})),
                        ),
                    ],
                ),
                issue(4, &["agent-ready"], vec![untrusted]),
                issue(
                    5,
                    &["agent-ready", "agent-wip"],
                    vec![claim(8, T0 - stale, "old")],
                ),
            ],
            T0 + 1,
        );
        let keys: Vec<(&str, &str)> = v
            .claims
            .iter()
            .map(|c| (c.marker_id.as_str(), c.instance_id.as_str()))
            .collect();
        assert_eq!(keys, [("a", "i-a"), ("old", "i-old")]);
        assert_eq!(verdict(&v, "old"), Verdict::Stale);
        assert_eq!(v.busy, 1);
        // A label backed only by a stale claim goes with it.
        let eligible: Vec<u64> = v.eligible().collect();
        assert_eq!(eligible, [2, 3, 4, 5]);
    }

    #[test]
    fn frontier_skips() {
        let mut assigned = issue(1, &["agent-ready"], vec![]);
        assigned.assignees.push("octocat".into());
        let v = view(
            3,
            &[],
            vec![
                assigned,
                issue(2, &["agent-ready", "blocked-by:#1"], vec![]),
                issue(
                    3,
                    &["agent-ready", "claude-in-progress"],
                    vec![comment(9, T0, coord_claim("someone"))],
                ),
                issue(4, &["agent-ready", "agent-wip"], vec![]),
                issue(5, &["agent-ready"], vec![claim(1, T0, "orphan")]),
                issue(6, &["agent-wip"], vec![]),
                issue(7, &["agent-ready"], vec![]),
                // A claim label with no claim behind it is an orphan.
                issue(8, &["agent-ready", "claude-in-progress"], vec![]),
            ],
            T0 + 1,
        );
        let skips: Vec<(u64, Option<Skip>)> =
            v.frontier.iter().map(|f| (f.issue, f.skip)).collect();
        assert_eq!(
            skips,
            [
                (1, Some(Skip::Assigned)),
                (2, Some(Skip::Blocked)),
                (3, Some(Skip::InProgress)),
                (4, Some(Skip::Claimed)),
                (5, Some(Skip::Claimed)),
                (7, None),
                (8, None)
            ]
        );
        // The orphan claim (no label) still holds a slot.
        assert_eq!(verdict(&v, "orphan"), Verdict::Holds { slot: 3 });
    }

    /// Two losing claims on one issue: only the earlier one may take the
    /// label off, so that they never disagree; nobody takes a winner's.
    #[test]
    fn the_label_is_left_to_the_earliest_losing_claim_and_never_taken_from_a_winner() {
        let v = view(
            1,
            &[],
            vec![
                issue(
                    1,
                    &["agent-ready", "agent-wip"],
                    vec![claim(1, T0, "holder")],
                ),
                issue(
                    2,
                    &["agent-ready", "agent-wip"],
                    vec![claim(2, T0, "early"), claim(3, T0, "late")],
                ),
            ],
            T0 + 1,
        );
        let c = |key| v.claim(key).unwrap();
        assert!(c("holder").holds());
        assert!(v.label_is_left_to(c("early")));
        assert!(!v.label_is_left_to(c("late")));
        let v = view(
            2,
            &[],
            vec![issue(
                1,
                &["agent-ready", "agent-wip"],
                vec![claim(1, T0, "win"), claim(2, T0, "lose")],
            )],
            T0 + 1,
        );
        assert!(!v.label_is_left_to(v.claim("lose").unwrap()));
    }

    /// A claim's verdict depends only on what was ordered before it: adding
    /// later claims never changes an earlier one's.
    #[test]
    fn a_later_claim_never_unseats_an_earlier_one() {
        let mut issues: Vec<Issue> = (1..=6)
            .map(|n| issue(n, &["agent-ready"], vec![]))
            .collect();
        let mut verdicts: Vec<(String, Verdict)> = Vec::new();
        for (id, target) in [3u64, 1, 3, 5, 2, 6, 1, 4, 4, 2].into_iter().enumerate() {
            let key = format!("k{id}");
            issues[target as usize - 1].comments.push(claim(
                id as u64 + 1,
                T0 + id as i64 / 3,
                &key,
            ));
            let v = view(3, &[], issues.clone(), T0 + 10);
            for (earlier, seen) in &verdicts {
                assert_eq!(&verdict(&v, earlier), seen, "{earlier} changed after {key}");
            }
            verdicts.push((key.clone(), verdict(&v, &key)));
        }
        let holding = verdicts
            .iter()
            .filter(|(_, v)| matches!(v, Verdict::Holds { .. }))
            .count();
        assert_eq!(holding, 3);
    }
}
