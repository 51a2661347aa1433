//! Claims and leases (SPEC 4), written once above the surface trait.
//!
//! The state of an issue is derived from its trusted `maverick-claim`,
//! `maverick-withdrawn` and `maverick-lease` markers, read in comment-id
//! order:
//!
//! - every claim carries a generation; each fresh claim and each takeover
//!   takes the highest generation seen plus one, so the generation is a
//!   fencing token that changes whenever the holder can change. Maverick
//!   (the Python plugin) writes claims without one: such a claim counts as
//!   one above every claim before it (its takeover, a takeover comment and
//!   a plain claim, counts once), so a history Maverick wrote reads as
//!   Maverick reads it: the newest claim holds;
//! - among unreleased, unwithdrawn claims of the current generation, the one
//!   the surface ordered first (lowest comment id, then lower instance id)
//!   holds the issue, provided the in-progress label is on it. A later
//!   reader can never reverse that verdict, which "lower instance id wins"
//!   alone could. A Maverick claim holds only until another claim of its
//!   generation lands after it (Maverick's own "latest wins"): so in every
//!   race between the two tools the claim Maverick names is the one git
//!   maverick names, once the losers' claims are withdrawn;
//! - a claim that lost is withdrawn by editing its own comment into a
//!   `maverick-withdrawn` marker, which Maverick does not read as a claim;
//!   a comment another account wrote is never edited (the one rule,
//!   `maverick_core::holding::own_comment`): a claim of ours in one is
//!   withdrawn by a later `maverick-withdrawn` comment of our own, which
//!   ends that instance's claim of that generation for every reader.
//!   No instance writes a lease or a release on an issue another holds:
//!   Maverick takes the newest lease block on an issue, whoever wrote it,
//!   for the issue's lease;
//! - the holder's lease is the newest lease block that names it, wherever it
//!   sits (Maverick PATCHes its lease into the newest comment carrying one,
//!   whoever wrote it), and expires at that comment's surface time plus the
//!   ttl it declared, so client clock skew changes no decision. A holder
//!   with no lease of its own lives from its claim's surface time for the
//!   ttl the claim declared, or the default: never a reader's own setting.

use std::time::Duration;

use serde::Serialize;

use crate::config::Settings;
use crate::coord::pulls::ClosingPull;
use crate::surface::Surface;
use crate::timefmt::Timestamp;
use maverick_core::ids::InstanceId;
use maverick_core::payloads::{ClaimPayload, LeasePayload};

mod analysis;
mod driver;
mod payloads;

pub use analysis::analyze;
pub(crate) use analysis::remaining;
pub use driver::{ClaimOutcome, HeartbeatOutcome, LeaseError, ReleaseOutcome, Renewal};
pub use maverick_core::holding::{lease_live, Decision, Holding};
pub use payloads::ReleaseReason;

/// Which tool wrote a claim: git maverick stamps every claim with a
/// generation, Maverick never does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Writer {
    GitMaverick,
    Maverick,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ClaimView {
    pub instance_id: InstanceId,
    pub host: Option<String>,
    pub branch: Option<String>,
    pub generation: u64,
    pub scope: Vec<u64>,
    pub claimed_at: Timestamp,
    pub takeover_of: Option<InstanceId>,
    pub comment_id: u64,
    /// Who wrote the claim comment (a GitHub login; the instance on git).
    #[serde(skip)]
    pub author: String,
    /// `maverick` when the Python plugin wrote the claim, so a skill can tell.
    pub writer: Writer,
    /// How long the claim lives without a lease of its own.
    #[serde(skip)]
    pub ttl: Duration,
    /// Withdrawn by its writer after it lost a race: it still counts for
    /// the generations, and never holds.
    #[serde(skip)]
    withdrawn: bool,
}

impl ClaimView {
    /// The holder as a person reads it: the instance, the machine its claim
    /// names and, on GitHub, the login that wrote it (`vm-dfa13a7c on
    /// build-7 as @octocat`), so a person knows whom to ask.
    pub(crate) fn who(&self) -> String {
        let mut who = self.instance_id.to_string();
        if let Some(host) = self.host.as_deref().filter(|h| !h.is_empty()) {
            who.push_str(&format!(" on {host}"));
        }
        if !self.author.is_empty() && self.instance_id != *self.author {
            who.push_str(&format!(" as @{}", self.author));
        }
        who
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LeaseView {
    pub instance_id: InstanceId,
    pub heartbeat_at: Option<Timestamp>,
    pub expires_at: Timestamp,
    pub comment_id: Option<u64>,
    pub author: Option<String>,
}

/// One issue as the claim protocol sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct IssueView {
    pub issue: u64,
    pub open: bool,
    pub labels: Vec<String>,
    pub labelled: bool,
    pub blocked_by: Vec<u64>,
    pub generation: u64,
    pub holder: Option<ClaimView>,
    pub lease: Option<LeaseView>,
    pub expires_at: Option<Timestamp>,
    // The verdict (SPEC 4: every command answers from it), in the JSON as
    // the `decision` it names (`IssueView::decision`), so the two can never
    // disagree. (A doc comment would become the schema's description.)
    #[serde(rename = "decision", serialize_with = "decision_of")]
    #[schemars(with = "Decision")]
    pub holding: Holding,
    pub now: Timestamp,
    /// Writers whose stamps on this issue lead `now` by more than
    /// `maxClockSkew`: their clock or this one is wrong (SPEC 2).
    pub clock_skew: Vec<ClockSkew>,
    /// The claim label with no unreleased claim behind it (a release that
    /// removed it only in part, a claim that died after adding it): free to
    /// claim and to dispatch (SPEC 4). A claim on its way between its label
    /// and its comment looks the same for that moment; it still settles
    /// against whoever claims meanwhile.
    pub orphan_label: bool,
    /// The open pull request that holds an issue no instance holds live:
    /// it closes the issue (`Fixes #N` in its description, into the
    /// default branch) and is not the reader's own. Read by `coord read`
    /// and `coord claim` only, never by the claim protocol; absent when
    /// there is none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull_request: Option<ClosingPull>,
    /// Whether the newest claim of the current generation is this
    /// instance's own, released: an orphan label is its release unfinished.
    #[serde(skip)]
    my_release_unfinished: bool,
    /// This instance's claim of the current generation, if it has one that
    /// does not hold (it lost the settle).
    #[serde(skip)]
    pub my_losing_claim: Option<ClaimView>,
    #[serde(skip)]
    my_lease_comment: Option<LeaseComment>,
    /// The comments that carry an unwithdrawn claim of this instance that
    /// git maverick wrote (a copy a retried POST left included, and a copy
    /// in another account's comment), with the claim: what a withdrawal
    /// edits, where the comment is this account's own.
    #[serde(skip)]
    my_claim_comments: Vec<ClaimComment>,
    /// The newest comment with a `maverick-lease` block, whoever wrote it:
    /// the lease Maverick reads and upserts.
    #[serde(skip)]
    newest_lease_comment: Option<u64>,
}

/// A writer whose clock runs ahead of the reader's by more than allowed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ClockSkew {
    pub instance_id: InstanceId,
    /// Its stamp furthest ahead.
    pub stamp: Timestamp,
    pub ahead_secs: i64,
}

/// The comment a lease was written in, and its payload.
type LeaseComment = (u64, LeasePayload);

/// A comment that carries a claim of this instance.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ClaimComment {
    id: u64,
    /// Who wrote the comment: whether we may edit it.
    author: String,
    claim: ClaimPayload,
}

impl IssueView {
    /// Whether an open pull request would hold the issue: nobody, not even
    /// this instance, holds it live, and nothing blocks it.
    pub(crate) fn pull_may_hold(&self) -> bool {
        self.holding.pull_may_hold()
    }

    /// Counts `pull` (an open pull request that closes the issue, not the
    /// reader's own) as work in progress: it holds an issue that
    /// [`pull_may_hold`](IssueView::pull_may_hold).
    pub(crate) fn with_pull(mut self, pull: Option<ClosingPull>) -> IssueView {
        self.holding = self.holding.with_pull(pull.as_ref().map(|p| p.number));
        if matches!(self.holding, Holding::PullRequest { .. }) {
            self.pull_request = pull;
        }
        self
    }

    /// The verdict's one-word name, derived from the holding.
    pub fn decision(&self) -> Decision {
        self.holding.decision()
    }
}

fn decision_of<S: serde::Serializer>(holding: &Holding, s: S) -> Result<S::Ok, S::Error> {
    holding.decision().serialize(s)
}

pub struct ClaimRequest<'a> {
    /// The issues to claim, the named one first.
    pub issues: Vec<u64>,
    pub branch: Option<&'a str>,
    pub takeover: bool,
}

/// The claim protocol over any surface.
pub struct Coordinator<'a> {
    pub surface: &'a dyn Surface,
    pub settings: &'a Settings,
    pub host: String,
}

impl<'a> Coordinator<'a> {
    pub fn new(surface: &'a dyn Surface, settings: &'a Settings) -> Coordinator<'a> {
        Coordinator {
            surface,
            settings,
            host: crate::config::short_hostname(),
        }
    }

    fn me(&self) -> &InstanceId {
        &self.settings.instance
    }
}
