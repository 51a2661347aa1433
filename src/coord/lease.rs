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
//!   `maverick-withdrawn` marker, which Maverick does not read as a claim.
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

use crate::config::{Settings, DEFAULT_LEASE_TTL};
use crate::coord::pulls::ClosingPull;
use crate::coord::settle::{Begin, Driver, Race, Verdict};
use crate::markers::{self, Marker, MarkerKind};
use crate::surface::{Applied, Comment, Issue, Op, Surface, SurfaceError, Write};
use crate::timefmt::{format_duration, Timestamp};
use maverick_core::holding::HoldingFacts;
use maverick_core::payloads::{ClaimPayload, DeclaredTtl, IssueRef, LeasePayload};
use maverick_core::settle::{earliest_first, Landed};

pub use maverick_core::holding::{lease_live, Decision, Holding};

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
    pub instance_id: String,
    pub host: Option<String>,
    pub branch: Option<String>,
    pub generation: u64,
    pub scope: Vec<u64>,
    pub claimed_at: Timestamp,
    pub takeover_of: Option<String>,
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
        let mut who = self.instance_id.clone();
        if let Some(host) = self.host.as_deref().filter(|h| !h.is_empty()) {
            who.push_str(&format!(" on {host}"));
        }
        if !self.author.is_empty() && self.author != self.instance_id {
            who.push_str(&format!(" as @{}", self.author));
        }
        who
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LeaseView {
    pub instance_id: String,
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
    /// git maverick wrote (a copy a retried POST left included), with the
    /// claim: what a withdrawal edits.
    #[serde(skip)]
    my_claim_comments: Vec<(u64, ClaimPayload)>,
    /// The newest comment with a `maverick-lease` block, whoever wrote it:
    /// the lease Maverick reads and upserts.
    #[serde(skip)]
    newest_lease_comment: Option<u64>,
}

/// A writer whose clock runs ahead of the reader's by more than allowed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ClockSkew {
    pub instance_id: String,
    /// Its stamp furthest ahead.
    pub stamp: Timestamp,
    pub ahead_secs: i64,
}

/// The writers of claim and lease markers whose stamps (the comment's time
/// and the payload's own) lead `now` by more than `max_skew`.
fn clocks_ahead(markers: &[MarkerAt<'_>], now: Timestamp, max_skew: Duration) -> Vec<ClockSkew> {
    let limit = now.plus(max_skew);
    let mut found: Vec<ClockSkew> = Vec::new();
    for at in markers {
        let (instance, own_stamps) = match &at.mark {
            Mark::Claim(c) => (c.instance_id.as_str(), [c.claimed_at, None]),
            Mark::Lease(l) => (l.instance_id.as_str(), [l.heartbeat_at, l.released_at]),
        };
        let stamps = own_stamps
            .into_iter()
            .flatten()
            .chain([at.comment.created_at, at.comment.updated_at]);
        for stamp in stamps.filter(|s| *s > limit) {
            match found.iter_mut().find(|f| f.instance_id == instance) {
                Some(f) if f.stamp >= stamp => {}
                Some(f) => {
                    f.stamp = stamp;
                    f.ahead_secs = stamp.0 - now.0;
                }
                None => found.push(ClockSkew {
                    instance_id: instance.to_owned(),
                    stamp,
                    ahead_secs: stamp.0 - now.0,
                }),
            }
        }
    }
    found
}

/// A claim-protocol marker, its payload typed: a claim (or a withdrawn
/// one), or a lease (or a release).
enum Mark {
    Claim(ClaimPayload),
    Lease(LeasePayload),
}

struct MarkerAt<'a> {
    comment: &'a Comment,
    kind: MarkerKind,
    mark: Mark,
}

impl MarkerAt<'_> {
    fn lease(&self) -> Option<&LeasePayload> {
        match &self.mark {
            Mark::Lease(l) => Some(l),
            Mark::Claim(_) => None,
        }
    }
}

/// The trusted claim, withdrawn and lease markers of `issue`, in comment
/// order. A payload that does not read as its kind (no `instance_id`, a
/// field of the wrong type) names nobody and counts for nothing.
fn trusted_markers(issue: &Issue) -> Vec<MarkerAt<'_>> {
    let mut seen_ids = std::collections::HashSet::new();
    let mut found = Vec::new();
    for comment in issue.comments.iter().filter(|c| c.trusted) {
        for marker in markers::first_of_each_kind(&comment.body) {
            let (mark, marker_id) = match marker.kind {
                MarkerKind::Claim | MarkerKind::Withdrawn => match marker.claim() {
                    Ok(c) => {
                        let id = c.marker_id.clone();
                        (Mark::Claim(c), id)
                    }
                    Err(_) => continue,
                },
                MarkerKind::Lease => match marker.lease() {
                    Ok(l) => {
                        let id = l.marker_id.clone();
                        (Mark::Lease(l), id)
                    }
                    Err(_) => continue,
                },
                _ => continue,
            };
            // A POST retried after GitHub had committed it shows up twice;
            // the first copy is the one that counts.
            if let Some(id) = marker_id {
                if !seen_ids.insert((marker.kind, id)) {
                    continue;
                }
            }
            found.push(MarkerAt {
                comment,
                kind: marker.kind,
                mark,
            });
        }
    }
    found
}

/// The ttl a claim declares (`lease_ttl`: seconds, or a duration such as
/// `10m`); Maverick's claims declare none and live its default ten minutes.
fn declared_ttl(claim: &ClaimPayload) -> Duration {
    claim.declared_ttl().unwrap_or(DEFAULT_LEASE_TTL)
}

/// The claim at `at` (or the withdrawn one), given the highest generation
/// of the claims before it and the claim right before it. A claim without
/// a generation (Maverick's) counts as one above them all, except right
/// after another of the same instance: Maverick's takeover is two claim
/// comments (the takeover, then a plain claim), one step, not two.
fn claim_view(
    at: &MarkerAt<'_>,
    generation_before: u64,
    previous: Option<&ClaimView>,
) -> Option<ClaimView> {
    let Mark::Claim(m) = &at.mark else {
        return None;
    };
    let instance_id = m.instance_id.clone();
    let declared = m.generation;
    let generation = declared.unwrap_or_else(|| match previous {
        Some(p) if p.writer == Writer::Maverick && p.instance_id == instance_id => p.generation,
        _ => generation_before.saturating_add(1),
    });
    Some(ClaimView {
        instance_id,
        host: m.host.clone(),
        branch: m.branch.clone(),
        generation,
        // Maverick keeps its `--scope` list as typed, split at commas:
        // `"140, 142"` gives `" 142"`, which names 142.
        scope: m.scope_issues(),
        claimed_at: at.comment.created_at,
        takeover_of: m.takeover_of.clone(),
        comment_id: at.comment.id,
        author: at.comment.author.clone(),
        writer: match declared {
            Some(_) => Writer::GitMaverick,
            None => Writer::Maverick,
        },
        ttl: declared_ttl(m),
        withdrawn: at.kind == MarkerKind::Withdrawn,
    })
}

/// Derives the claim state of `issue` as `me` sees it at surface time `now`.
pub fn analyze(issue: &Issue, settings: &Settings, me: &str, now: Timestamp) -> IssueView {
    let markers = trusted_markers(issue);
    let (claims, generation) = claims_of(&markers);
    let leases: Vec<&MarkerAt<'_>> = markers
        .iter()
        .filter(|m| {
            m.lease()
                .is_some_and(|l| l.generation.is_none_or(|g| g == generation))
        })
        .collect();
    let live_claims = unreleased(&claims, generation, &leases);
    let labelled = issue.has_label(&settings.labels.in_progress);
    let holder = if labelled {
        live_claims.first().map(|c| (*c).clone())
    } else {
        None
    };
    let my_losing_claim = live_claims
        .iter()
        .find(|c| {
            c.instance_id == me && holder.as_ref().map(|h| h.comment_id) != Some(c.comment_id)
        })
        .map(|c| (*c).clone());
    let (lease, my_lease_comment) = match &holder {
        Some(h) => {
            let (lease, mine) = lease_of(h, &leases);
            (Some(lease), mine.filter(|_| h.instance_id == me))
        }
        None => (None, None),
    };
    // Flagged, not overruled: from here a clock far ahead and this clock
    // far behind look the same, and a reader that is behind must not judge
    // every live lease stale. What keeps one wrong clock from misjudging
    // everyone's leases is that no writer follows it (the git surface's
    // stamps, `surface::git`).
    let clock_skew = clocks_ahead(&markers, now, settings.max_clock_skew);
    let newest_claim = claims
        .iter()
        .filter(|c| c.generation == generation && !c.withdrawn)
        .max_by_key(|c| c.comment_id);
    let orphan_label = labelled && live_claims.is_empty();
    let my_release_unfinished = orphan_label && newest_claim.is_some_and(|c| c.instance_id == me);
    let expires_at = lease.as_ref().map(|l| l.expires_at);
    let my_claim_comments = my_claim_comments(issue, me);
    let newest_lease_comment = newest_lease_comment(issue);
    let blocked_by: Vec<u64> = issue
        .labels
        .iter()
        .filter_map(|l| settings.labels.blocker(l))
        .collect();
    let holding = maverick_core::holding::judge(&HoldingFacts {
        holder: holder
            .as_ref()
            .zip(expires_at)
            .map(|(h, e)| (h.instance_id.as_str(), e)),
        blocked_by: &blocked_by,
        pull_request: None,
        me,
        now,
    });
    IssueView {
        issue: issue.number,
        open: issue.open,
        labels: issue.labels.clone(),
        labelled,
        blocked_by,
        generation,
        holder,
        lease,
        expires_at,
        holding,
        now,
        clock_skew,
        orphan_label,
        pull_request: None,
        my_release_unfinished,
        my_losing_claim,
        my_lease_comment,
        my_claim_comments,
        newest_lease_comment,
    }
}

/// The comments that carry an unwithdrawn claim of `me` that git maverick
/// wrote, with the claim: what a withdrawal edits.
fn my_claim_comments(issue: &Issue, me: &str) -> Vec<(u64, ClaimPayload)> {
    issue
        .comments
        .iter()
        .filter(|c| c.trusted && c.body.contains(me))
        .filter_map(|c| {
            let claim = markers::find_marker(&c.body, MarkerKind::Claim)?
                .claim()
                .ok()?;
            let mine = claim.instance_id == me && claim.generation.is_some();
            mine.then_some((c.id, claim))
        })
        .collect()
}

/// The newest comment with a `maverick-lease` block Maverick reads,
/// whoever wrote it.
fn newest_lease_comment(issue: &Issue) -> Option<u64> {
    issue
        .comments
        .iter()
        .rev()
        .find(|c| markers::maverick_reads_block(&c.body, MarkerKind::Lease))
        .map(|c| c.id)
}

/// Every claim among `markers`, in comment order, and the highest
/// generation among them.
fn claims_of(markers: &[MarkerAt<'_>]) -> (Vec<ClaimView>, u64) {
    let mut claims: Vec<ClaimView> = Vec::new();
    let mut generation = 0;
    for at in markers.iter().filter(|m| matches!(m.mark, Mark::Claim(_))) {
        if let Some(claim) = claim_view(at, generation, claims.last()) {
            generation = generation.max(claim.generation);
            claims.push(claim);
        }
    }
    (claims, generation)
}

/// The claims of `generation` that no later release of their instance
/// ended, not withdrawn and not superseded, earliest comment first: the
/// first one holds the issue.
fn unreleased<'c>(
    claims: &'c [ClaimView],
    generation: u64,
    leases: &[&MarkerAt<'_>],
) -> Vec<&'c ClaimView> {
    let released = |claim: &ClaimView| {
        leases.iter().any(|l| {
            l.lease().is_some_and(|lease| {
                lease.is_release()
                    && l.comment.id > claim.comment_id
                    && lease.instance_id == claim.instance_id
            })
        })
    };
    // Maverick's rule is "the newest claim holds", so a Maverick claim holds
    // only until another claim of its generation comes after it: a git
    // maverick claim that raced it unseen stands, and Maverick, reading the
    // newest claim, names the same holder. (Maverick claims that share a
    // generation are one instance's takeover; among git maverick's own
    // claims the earliest holds.)
    let superseded = |claim: &ClaimView| {
        claim.writer == Writer::Maverick
            && claims.iter().any(|c| {
                c.comment_id > claim.comment_id && c.generation == claim.generation && !c.withdrawn
            })
    };
    let mut live: Vec<&ClaimView> = claims
        .iter()
        .filter(|c| c.generation == generation && !c.withdrawn && !released(c) && !superseded(c))
        .collect();
    earliest_first(&mut live, |c| {
        Landed::on_record(c.comment_id, &c.instance_id)
    });
    live
}

/// The comment a lease was written in, and its payload.
type LeaseComment = (u64, LeasePayload);

/// The lease of `holder`'s claim, and the comment that wrote it (when one
/// did).
fn lease_of(holder: &ClaimView, leases: &[&MarkerAt<'_>]) -> (LeaseView, Option<LeaseComment>) {
    // By payload, not by comment: a lease PATCHed into an older comment
    // (Maverick's upsert) counts from when it was written.
    let newest = leases
        .iter()
        .filter_map(|l| Some((l, l.lease()?)))
        .filter(|(l, lease)| {
            !lease.is_release()
                && lease.instance_id == holder.instance_id
                && (l.comment.id > holder.comment_id || l.comment.updated_at >= holder.claimed_at)
        })
        .max_by_key(|(l, _)| (l.comment.updated_at, l.comment.id));
    let Some((l, payload)) = newest else {
        // A claim whose lease was never written (a crash between the two)
        // or was overwritten lives the ttl it declared from the claim: the
        // reader's own setting says nothing about it.
        let lease = LeaseView {
            instance_id: holder.instance_id.clone(),
            heartbeat_at: None,
            expires_at: holder.claimed_at.plus(holder.ttl),
            comment_id: None,
            author: None,
        };
        return (lease, None);
    };
    let heartbeat_at = payload.heartbeat_at;
    let declared_expiry = payload.expires_at;
    // Judge by the surface's own time of the lease comment.
    let expires_at = match (heartbeat_at, declared_expiry) {
        (Some(hb), Some(exp)) => l.comment.updated_at.plus(exp.since(hb)),
        (None, Some(exp)) => exp,
        _ => l.comment.updated_at.plus(holder.ttl),
    };
    let lease = LeaseView {
        instance_id: holder.instance_id.clone(),
        heartbeat_at,
        expires_at,
        comment_id: Some(l.comment.id),
        author: Some(l.comment.author.clone()),
    };
    (lease, Some((l.comment.id, payload.clone())))
}

/// Why the work on a claim ends, as its release marker says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ReleaseReason {
    Merged,
    Ejected,
    Abort,
    // A claim that lost the settle, withdrawn by the claimer itself; no
    // command's output names it (a doc comment here would turn the
    // schema's enum into a oneOf).
    #[schemars(skip)]
    LostRace,
}

impl ReleaseReason {
    /// The reasons a person or a script gives (`--reason`,
    /// `--success-reason`); a lost race is maverick's own.
    pub(crate) const ALL: [ReleaseReason; 3] = [
        ReleaseReason::Merged,
        ReleaseReason::Ejected,
        ReleaseReason::Abort,
    ];

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ReleaseReason::Merged => "merged",
            ReleaseReason::Ejected => "ejected",
            ReleaseReason::Abort => "abort",
            ReleaseReason::LostRace => "lost-race",
        }
    }
}

/// What a claim attempt came to.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ClaimOutcome {
    /// We hold every issue in scope.
    Claimed {
        generation: u64,
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
        already_held: bool,
    },
    Blocked {
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
    Held {
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
    Stale {
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
    /// Another claim won the settle; ours was withdrawn.
    Lost {
        winner: Option<String>,
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error("issue #{0} is closed")]
    Closed(u64),
    #[error("a claim marker on #{0} carries an impossible generation; remove that comment")]
    GenerationExhausted(u64),
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

    fn me(&self) -> &str {
        &self.settings.instance
    }

    pub fn read(&self, issues: &[u64]) -> Result<Vec<IssueView>, LeaseError> {
        self.read_with(issues, &[])
    }

    /// Reads, counting our own `written` comments even where a lagging list
    /// does not show them yet: comment ids order claims whether or not a
    /// list has caught up, and a claim we cannot see is still ours.
    fn read_with(
        &self,
        issues: &[u64],
        written: &[(u64, Comment)],
    ) -> Result<Vec<IssueView>, LeaseError> {
        // Read first, then the time: GitHub's clock is the Date of that answer.
        let mut read = self.surface.issues(issues)?;
        let now = self.surface.now()?;
        for issue in &mut read {
            for (_, comment) in written.iter().filter(|(n, _)| *n == issue.number) {
                if !issue.comments.iter().any(|c| c.id == comment.id) {
                    issue.comments.push(comment.clone());
                }
            }
            issue.comments.sort_by_key(|c| c.id);
        }
        Ok(read
            .iter()
            .map(|i| analyze(i, self.settings, self.me(), now))
            .collect())
    }

    fn claim_body(
        &self,
        req: &ClaimRequest<'_>,
        generation: u64,
        now: Timestamp,
        prior: Option<&IssueView>,
    ) -> String {
        let mut payload = ClaimPayload {
            instance_id: self.me().to_owned(),
            host: Some(self.host.clone()),
            scope: Some(
                req.issues
                    .iter()
                    .map(|n| IssueRef::Text(n.to_string()))
                    .collect(),
            ),
            claimed_at: Some(now),
            generation: Some(generation),
            lease_ttl: Some(DeclaredTtl::Seconds(self.settings.lease_ttl.as_secs())),
            marker_id: Some(markers::new_marker_id()),
            branch: req.branch.map(str::to_owned),
            ..ClaimPayload::default()
        };
        let mut text = format!("Claimed by `{}` (generation {generation})", self.me());
        if let Some(prior) = prior.and_then(|v| v.holder.as_ref().map(|h| (h, v.expires_at))) {
            let (holder, expired) = prior;
            // A re-take of our own lapsed claim is a takeover of it, and
            // says so: a reader tells it from a fresh claim by the same
            // fields a takeover of another instance's lease writes.
            let (lease, verb) = if holder.instance_id == self.me() {
                ("own lapsed lease", "Re-taking the lapsed claim of")
            } else {
                ("stale lease", "Taking over from")
            };
            let reason = match expired {
                Some(e) => format!("{lease}: expired at {e}"),
                None => lease.to_owned(),
            };
            text = format!("{verb} `{}` ({reason}). {text}", holder.instance_id);
            payload.takeover_of = Some(holder.instance_id.clone());
            payload.reason = Some(reason);
        }
        format!(
            "{text}.\n\n{}",
            markers::render_marker(&Marker::of(MarkerKind::Claim, &payload))
        )
    }

    /// A lease of `generation` that runs `ttl` from `now`, over `keep` (the
    /// lease comment's payload it renews in place, whose other fields stay).
    fn lease_payload(
        &self,
        generation: u64,
        now: Timestamp,
        ttl: Duration,
        keep: Option<LeasePayload>,
    ) -> LeasePayload {
        let keep = keep.unwrap_or_default();
        LeasePayload {
            instance_id: self.me().to_owned(),
            heartbeat_at: Some(now),
            expires_at: Some(now.plus(ttl)),
            generation: Some(generation),
            marker_id: keep.marker_id.or_else(|| Some(markers::new_marker_id())),
            ..keep
        }
    }

    fn lease_body(&self, payload: &LeasePayload) -> String {
        let ttl = payload
            .heartbeat_at
            .zip(payload.expires_at)
            .map_or(self.settings.lease_ttl, |(hb, exp)| exp.since(hb));
        format!(
            "Lease held by `{}` (ttl {}).\n\n{}",
            self.me(),
            format_duration(ttl),
            markers::render_marker(&Marker::of(MarkerKind::Lease, payload))
        )
    }

    fn release_body(&self, generation: u64, now: Timestamp, reason: ReleaseReason) -> String {
        let reason = reason.as_str();
        let payload = LeasePayload {
            instance_id: self.me().to_owned(),
            released_at: Some(now),
            reason: Some(reason.to_owned()),
            generation: Some(generation),
            marker_id: Some(markers::new_marker_id()),
            ..LeasePayload::default()
        };
        // Maverick's own preamble for a release, so either tool's reader
        // of the comment sees the same thing.
        let preamble = format!("maverick lease released: {reason}");
        format!(
            "Released by `{}` ({reason}).\n\n{}",
            self.me(),
            markers::render_with_preamble(&Marker::of(MarkerKind::Lease, &payload), &preamble)
        )
    }

    /// `claim` (one of ours), withdrawn: the same fields, when and why, in
    /// a kind no reader takes for a claim.
    fn withdrawn_body(
        &self,
        claim: &ClaimPayload,
        now: Timestamp,
        reason: &str,
        holder: Option<&str>,
    ) -> String {
        let payload = ClaimPayload {
            withdrawn_at: Some(now),
            reason: Some(reason.to_owned()),
            ..claim.clone()
        };
        let generation = claim.generation.unwrap_or_default();
        let mut text = format!(
            "Claim by `{}` (generation {generation}) withdrawn ({reason})",
            self.me()
        );
        if let Some(holder) = holder {
            text.push_str(&format!(": `{holder}` holds the issue"));
        }
        format!(
            "{text}.\n\n{}",
            markers::render_with_preamble(
                &Marker::of(MarkerKind::Withdrawn, &payload),
                &format!("maverick claim withdrawn: {reason}"),
            )
        )
    }

    /// Claims every issue in `req` (SPEC 4): label, claim, lease, settle
    /// (the one settle of [`crate::coord::settle`]). A guard that refuses
    /// because the claims moved under us starts a new round; a lost settle
    /// ends the claim (another instance holds the issue).
    pub fn claim(&self, req: &ClaimRequest<'_>) -> Result<ClaimOutcome, LeaseError> {
        let settle = Driver {
            clock: &self.settings.clock,
            delay: self.settings.settle_delay,
            rounds: CLAIM_ROUNDS,
        };
        settle.run(&mut IssueClaim { coord: self, req })
    }

    /// After a claim's writes failed part way: a surface without
    /// multi-issue transactions (GitHub) may hold whole claims of this
    /// `generation` on some issues of the scope, which nobody would ever
    /// heartbeat, and claim comments that hold nothing. Takes them back, as
    /// far as the surface lets it; an issue we held before is left alone.
    fn abandon(&self, issues: &[u64], generation: u64) {
        let Ok(views) = self.read(issues) else { return };
        let touched: Vec<IssueView> = views
            .into_iter()
            .filter(|v| {
                v.holder
                    .as_ref()
                    .filter(|h| h.instance_id == self.me())
                    .is_none_or(|h| h.generation == generation)
            })
            .collect();
        let _ = self.withdraw(&touched, ReleaseReason::Abort, Some(generation));
    }

    /// Releases the issues among `views` this instance holds, and withdraws
    /// its claims that do not hold (its losing claim, and those of
    /// generation `wrote` that it just made and lost). A release (the label
    /// and a released lease) happens only where we hold the issue. A claim
    /// that lost is withdrawn by editing its own comment into a
    /// `maverick-withdrawn` marker: never a lease on an issue another
    /// instance holds, which Maverick would read as that issue's lease
    /// (stale at once). The write is guarded, so a takeover that lands
    /// between our read and our write keeps its label; we then read again
    /// and withdraw what is still ours. Returns the issues it released or
    /// withdrew a claim on.
    fn withdraw(
        &self,
        views: &[IssueView],
        reason: ReleaseReason,
        wrote: Option<u64>,
    ) -> Result<Vec<u64>, LeaseError> {
        let issues: Vec<u64> = views.iter().map(|v| v.issue).collect();
        let mut views = views.to_vec();
        for _ in 0..8 {
            let now = self.surface.now()?;
            let mut held: Vec<(u64, u64)> = Vec::new();
            let mut orphans: Vec<u64> = Vec::new();
            let writes: Vec<Write> = views
                .iter()
                .filter_map(|v| {
                    let ours = v.holder.as_ref().filter(|h| h.instance_id == self.me());
                    let mut ops = Vec::new();
                    if let Some(claim) = ours {
                        held.push((v.issue, claim.comment_id));
                        ops.push(Op::CreateComment(self.release_body(
                            claim.generation,
                            now,
                            reason,
                        )));
                        ops.push(Op::RemoveLabel(self.settings.labels.in_progress.clone()));
                    } else {
                        let losing = v.my_losing_claim.as_ref().map(|c| c.generation);
                        let holder = v.holder.as_ref().map(|h| h.instance_id.as_str());
                        ops.extend(
                            v.my_claim_comments
                                .iter()
                                .filter(|(_, claim)| {
                                    let generation = claim.generation;
                                    generation.is_some()
                                        && (generation == losing || generation == wrote)
                                })
                                .map(|(id, claim)| Op::UpdateComment {
                                    id: *id,
                                    body: self.withdrawn_body(claim, now, reason.as_str(), holder),
                                }),
                        );
                        if v.my_release_unfinished {
                            // An earlier release wrote its marker but failed to
                            // remove the label: a rerun finishes it.
                            orphans.push(v.issue);
                            ops.push(Op::RemoveLabel(self.settings.labels.in_progress.clone()));
                        }
                    }
                    (!ops.is_empty()).then_some(Write {
                        issue: v.issue,
                        ops,
                    })
                })
                .collect();
            if writes.is_empty() {
                return Ok(Vec::new());
            }
            let mut guard = |current: &[Issue], now: Timestamp| {
                current.iter().all(|issue| {
                    let v = || analyze(issue, self.settings, self.me(), now);
                    held.iter()
                        .filter(|(n, _)| *n == issue.number)
                        .all(|(_, id)| v().holder.is_some_and(|h| h.comment_id == *id))
                        && (!orphans.contains(&issue.number) || v().holder.is_none())
                })
            };
            // A crash between the marker and the label leaves an orphan label.
            crate::failpoint::name_ops(&["release"]);
            if self.surface.write(&writes, Some(&mut guard))?.is_some() {
                return Ok(writes.iter().map(|w| w.issue).collect());
            }
            views = self.read(&issues)?;
        }
        Err(LeaseError::Surface(SurfaceError::Other(
            "the claims kept changing while releasing; run the command again".to_owned(),
        )))
    }

    /// Pushes the lease forward on every issue, or reports the claim lost.
    /// The write that renews `view`'s lease: in place only where Maverick
    /// reads the lease too (the newest comment with a lease block, whoever
    /// wrote it), else a new lease comment.
    /// The lease runs this coordinator's `lease_ttl` (a heartbeat's
    /// `--lease-ttl` sets it; `task done` renews for the ttl the claim
    /// declared).
    fn renewal(&self, view: &IssueView, generation: u64, now: Timestamp) -> Op {
        let ttl = self.settings.lease_ttl;
        match &view.my_lease_comment {
            Some((id, payload))
                if self.own_comment(view, *id) && view.newest_lease_comment == Some(*id) =>
            {
                Op::UpdateComment {
                    id: *id,
                    body: self.lease_body(&self.lease_payload(
                        generation,
                        now,
                        ttl,
                        Some(payload.clone()),
                    )),
                }
            }
            _ => {
                Op::CreateComment(self.lease_body(&self.lease_payload(generation, now, ttl, None)))
            }
        }
    }

    /// Re-reads and settles the claim on every issue (SPEC 4: a race the
    /// claim's re-read missed ends here, exit 7), and writes the leases that
    /// `renewal` says are due; a lease with time enough left is left as it is.
    pub fn heartbeat(
        &self,
        issues: &[u64],
        generation: Option<u64>,
        renewal: Renewal,
    ) -> Result<HeartbeatOutcome, LeaseError> {
        let raw = self.surface.claim_records(issues)?;
        let now = self.surface.now()?;
        self.heartbeat_read(issues, raw, now, generation, renewal)
    }

    /// [`heartbeat`](Coordinator::heartbeat) on `raw`, the claim records of
    /// `issues` a caller has just read at surface time `now`: no read of its own.
    pub fn heartbeat_read(
        &self,
        issues: &[u64],
        mut raw: Vec<Issue>,
        now: Timestamp,
        generation: Option<u64>,
        renewal: Renewal,
    ) -> Result<HeartbeatOutcome, LeaseError> {
        let views: Vec<IssueView> = raw
            .iter()
            .map(|i| analyze(i, self.settings, self.me(), now))
            .collect();
        // A lease of ours that lapsed is lost too (SPEC 4): another instance
        // may have taken it over, or be about to, and on GitHub a renewal
        // does not fence a takeover already on its way.
        let lost: Vec<&IssueView> = views
            .iter()
            .filter(|v| {
                v.decision() != Decision::Ours || generation.is_some_and(|g| g != v.generation)
            })
            .collect();
        if !lost.is_empty() {
            let reason = lost_reason(
                lost[0],
                self.me(),
                generation,
                &self.settings.labels.in_progress,
            );
            // A claim of ours that lost a race nobody saw must not come back
            // to life when the winner releases.
            let losing: Vec<IssueView> = views
                .iter()
                .filter(|v| {
                    v.my_losing_claim.is_some()
                        && v.holder.as_ref().is_none_or(|h| h.instance_id != self.me())
                })
                .cloned()
                .collect();
            self.withdraw(&losing, ReleaseReason::LostRace, None)?;
            return Ok(HeartbeatOutcome::Lost { reason, views });
        }
        let generation = views[0].generation;
        let writes: Vec<Write> = views
            .iter()
            .filter(|v| renewal.due(v, self.settings.heartbeat_interval))
            .map(|v| Write {
                issue: v.issue,
                ops: vec![self.renewal(v, generation, now)],
            })
            .collect();
        let written: Vec<u64> = writes.iter().map(|w| w.issue).collect();
        if writes.is_empty() {
            return Ok(HeartbeatOutcome::Renewed {
                generation,
                written,
                views,
            });
        }
        let expected = generation;
        let mut guard = |current: &[Issue], now: Timestamp| {
            current.iter().all(|issue| {
                let v = analyze(issue, self.settings, self.me(), now);
                v.decision() == Decision::Ours && v.generation == expected
            })
        };
        crate::failpoint::name_ops(&["heartbeat"]);
        let Some(applied) = self.surface.write(&writes, Some(&mut guard))? else {
            let views = self.read(issues)?;
            let reason = views
                .iter()
                .find(|v| v.decision() != Decision::Ours || v.generation != expected)
                .map(|v| {
                    lost_reason(
                        v,
                        self.me(),
                        Some(expected),
                        &self.settings.labels.in_progress,
                    )
                })
                .unwrap_or_else(|| "the claim changed while renewing".to_owned());
            return Ok(HeartbeatOutcome::Lost { reason, views });
        };
        // The renewed state is what we read plus what we wrote: no third read.
        for (write, results) in writes.iter().zip(applied) {
            let issue = raw
                .iter_mut()
                .find(|i| i.number == write.issue)
                .expect("every written issue was read");
            for comment in results.into_iter().filter_map(|a| match a {
                Applied::Comment(c) => Some(c),
                _ => None,
            }) {
                match issue.comments.iter_mut().find(|c| c.id == comment.id) {
                    Some(existing) => *existing = comment,
                    None => issue.comments.push(comment),
                }
            }
        }
        let views = raw
            .iter()
            .map(|i| analyze(i, self.settings, self.me(), now))
            .collect();
        Ok(HeartbeatOutcome::Renewed {
            generation,
            written,
            views,
        })
    }

    /// Whether the lease comment `id` may be updated in place: it is the
    /// lease of our claim, written by the account that wrote the claim (so
    /// never someone else's comment, and without asking the surface who we
    /// are, which on GitHub would cost a request).
    fn own_comment(&self, view: &IssueView, id: u64) -> bool {
        let claimant = view.holder.as_ref().map(|h| h.author.as_str());
        view.lease.as_ref().is_some_and(|l| {
            l.comment_id == Some(id) && claimant.is_some() && l.author.as_deref() == claimant
        })
    }

    /// Releases the issues this instance holds; never another's claim.
    pub fn release(
        &self,
        issues: &[u64],
        reason: ReleaseReason,
    ) -> Result<ReleaseOutcome, LeaseError> {
        let views = self.read(issues)?;
        let released = self.withdraw(&views, reason, None)?;
        let views = self.read(issues)?;
        let foreign: Vec<IssueView> = views
            .iter()
            .filter(|v| {
                v.holder
                    .as_ref()
                    .is_some_and(|h| h.instance_id != self.me())
            })
            .cloned()
            .collect();
        Ok(ReleaseOutcome {
            released,
            foreign,
            views,
        })
    }

    /// Adds or removes labels (block/unblock and `label`).
    pub(crate) fn relabel(
        &self,
        issue: u64,
        add: &[String],
        remove: &[String],
    ) -> Result<Vec<String>, LeaseError> {
        let mut ops = Vec::new();
        if !add.is_empty() {
            ops.push(Op::AddLabels(add.to_vec()));
        }
        ops.extend(remove.iter().cloned().map(Op::RemoveLabel));
        self.surface.write_unguarded(issue, ops)?;
        Ok(self.surface.issue(issue)?.labels)
    }
}

/// How many rounds a claim may lose to a guard that refused (the claims
/// moved under us between the read and the write) before it answers with
/// what it reads.
const CLAIM_ROUNDS: u32 = 8;

/// An issue's claim (every issue of its scope) as the settle drives it.
struct IssueClaim<'c, 'a> {
    coord: &'c Coordinator<'a>,
    req: &'c ClaimRequest<'c>,
}

/// What a claim round writes, as its read decided.
struct ClaimPick {
    generation: u64,
    writes: Vec<Write>,
    /// Each issue's generation and decision as read: the guard's facts.
    expected: Vec<(u64, u64, Decision)>,
    takeover: bool,
}

impl Race for IssueClaim<'_, '_> {
    type Pick = ClaimPick;
    type Wrote = (u64, Vec<(u64, Comment)>);
    type Lost = (u64, Vec<IssueView>);
    type Answer = ClaimOutcome;
    type Error = LeaseError;

    fn begin(&mut self, _lost: u32) -> Result<Begin<ClaimOutcome, ClaimPick>, LeaseError> {
        let (coord, req) = (self.coord, self.req);
        let views = coord.read(&req.issues)?;
        if let Some(closed) = views.iter().find(|v| !v.open) {
            return Err(LeaseError::Closed(closed.issue));
        }
        // A lapsed lease of ours is lost as any stale one is: held
        // again only by a new claim (a new generation), never renewed.
        // Nobody else claimed it, so its holder re-takes it without
        // `--takeover` (a person's claim must not stay lost unseen).
        let stale = |v: &IssueView| v.decision() == Decision::Stale;
        if views.iter().all(|v| v.decision() == Decision::Ours) {
            let generation = views[0].generation;
            return Ok(Begin::Answer(ClaimOutcome::Claimed {
                generation,
                views,
                already_held: true,
            }));
        }
        if views.iter().any(|v| v.decision() == Decision::Blocked) {
            return Ok(Begin::Answer(ClaimOutcome::Blocked { views }));
        }
        if views.iter().any(|v| v.decision() == Decision::Held) {
            return Ok(Begin::Answer(ClaimOutcome::Held { views }));
        }
        if !req.takeover && views.iter().any(stale) {
            return Ok(Begin::Answer(ClaimOutcome::Stale { views }));
        }
        let Some(generation) = views
            .iter()
            .map(|v| v.generation)
            .max()
            .unwrap_or(0)
            .checked_add(1)
        else {
            return Err(LeaseError::GenerationExhausted(views[0].issue));
        };
        let now = views[0].now;
        let writes: Vec<Write> = views
            .iter()
            .map(|v| {
                // A takeover: of another's stale lease, or of our own
                // lapsed one (written as such, SPEC 4).
                let prior = v.holding.lapsed().then_some(v);
                let lease = coord.lease_body(&coord.lease_payload(
                    generation,
                    now,
                    coord.settings.lease_ttl,
                    None,
                ));
                Write {
                    issue: v.issue,
                    ops: vec![
                        Op::AddLabels(vec![coord.settings.labels.in_progress.clone()]),
                        Op::CreateComment(coord.claim_body(req, generation, now, prior)),
                        Op::CreateComment(lease),
                    ],
                }
            })
            .collect();
        Ok(Begin::Claim(ClaimPick {
            generation,
            writes,
            expected: views
                .iter()
                .map(|v| (v.issue, v.generation, v.decision()))
                .collect(),
            takeover: views.iter().any(stale),
        }))
    }

    fn write(&mut self, pick: &ClaimPick) -> Result<Option<Self::Wrote>, LeaseError> {
        let coord = self.coord;
        let mut guard = |current: &[Issue], now: Timestamp| {
            current.iter().all(|issue| {
                let v = analyze(issue, coord.settings, coord.me(), now);
                pick.expected.iter().any(|(n, g, d)| {
                    *n == v.issue
                        && *g == v.generation
                        && (*d == v.decision()
                            || matches!(v.decision(), Decision::Free | Decision::Ours))
                })
            })
        };
        let steps = if pick.takeover {
            ["", "takeover", ""]
        } else {
            [
                "claim-after-label",
                "claim-after-claim-comment",
                "claim-after-lease",
            ]
        };
        crate::failpoint::name_ops(&steps);
        let applied = match coord.surface.write(&pick.writes, Some(&mut guard)) {
            Ok(Some(applied)) => applied,
            Ok(None) => return Ok(None),
            Err(err) => {
                coord.abandon(&self.req.issues, pick.generation);
                return Err(err.into());
            }
        };
        let written: Vec<(u64, Comment)> = pick
            .writes
            .iter()
            .zip(applied)
            .flat_map(|(w, results)| {
                results.into_iter().filter_map(move |a| match a {
                    Applied::Comment(c) => Some((w.issue, c)),
                    _ => None,
                })
            })
            .collect();
        Ok(Some((pick.generation, written)))
    }

    /// Every reader reaches the same verdict (see [`analyze`]).
    fn reread(
        &mut self,
        _pick: ClaimPick,
        (generation, written): Self::Wrote,
    ) -> Result<Verdict<ClaimOutcome, Self::Lost>, LeaseError> {
        let views = self.coord.read_with(&self.req.issues, &written)?;
        if views
            .iter()
            .all(|v| v.decision() == Decision::Ours && v.generation == generation)
        {
            return Ok(Verdict::Won(ClaimOutcome::Claimed {
                generation,
                views,
                already_held: false,
            }));
        }
        Ok(Verdict::Lost((generation, views)))
    }

    /// Withdraws every claim comment of the generation we wrote (the
    /// re-read counts ours even where a lagging list misses them): the
    /// issue is another instance's, and the claim ends.
    fn withdraw(
        &mut self,
        (generation, views): Self::Lost,
    ) -> Result<Option<ClaimOutcome>, LeaseError> {
        let coord = self.coord;
        let winner = views
            .iter()
            .filter_map(|v| v.holder.as_ref())
            .find(|h| h.instance_id != coord.me())
            .map(|h| h.instance_id.clone());
        coord.withdraw(&views, ReleaseReason::LostRace, Some(generation))?;
        let views = coord.read(&self.req.issues)?;
        Ok(Some(ClaimOutcome::Lost { winner, views }))
    }

    fn out_of_budget(&mut self) -> Result<ClaimOutcome, LeaseError> {
        let views = self.coord.read(&self.req.issues)?;
        Ok(ClaimOutcome::Held { views })
    }
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
        if let Some(pull) = pull.filter(|_| self.pull_may_hold()) {
            self.holding = Holding::PullRequest {
                number: pull.number,
            };
            self.pull_request = Some(pull);
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

fn lost_reason(view: &IssueView, me: &str, generation: Option<u64>, label: &str) -> String {
    match &view.holder {
        _ if !view.labelled => format!("the {label} label is gone from #{}", view.issue),
        Some(h) if h.instance_id != me => format!(
            "#{} is held by {} (generation {})",
            view.issue,
            h.who(),
            h.generation
        ),
        Some(h) if generation.is_some_and(|g| g != h.generation) => format!(
            "the generation of #{} changed from {} to {}",
            view.issue,
            generation.unwrap_or_default(),
            h.generation
        ),
        Some(_) if view.decision() == Decision::Lapsed => format!(
            "the lease of {me} on #{} lapsed at {} ({} ago); a lapsed lease is lost, and another \
             instance may take the issue over",
            view.issue,
            view.expires_at.map(|e| e.to_string()).unwrap_or_default(),
            crate::timefmt::human_duration(
                view.expires_at
                    .map_or(Duration::ZERO, |e| view.now.since(e))
            ),
        ),
        _ => format!("#{} has no claim by {me}", view.issue),
    }
}

/// When a heartbeat writes the lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// When [`maverick_core::holding::renewal_due`] says so; `grace` is how long the
    /// holder needs to stop its work once it knows its claim is lost (`run`'s
    /// `--grace`; zero for a command that holds no work).
    WhenDue { grace: Duration },
    /// Whatever time the lease has left (`coord heartbeat --renew`).
    Now,
}

impl Renewal {
    /// When due, for a holder with no work of its own to stop.
    pub const WHEN_DUE: Renewal = Renewal::WhenDue {
        grace: Duration::ZERO,
    };

    /// Whether a heartbeat renews the lease of `view`, one of ours.
    fn due(self, view: &IssueView, interval: Duration) -> bool {
        match (self, view.expires_at) {
            (Renewal::WhenDue { grace }, Some(expires_at)) => {
                maverick_core::holding::renewal_due(view.now, expires_at, interval, grace)
            }
            _ => true,
        }
    }
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum HeartbeatOutcome {
    /// The claim holds; `issues` carry each lease's expiry, as written now
    /// or as it stood.
    Renewed {
        generation: u64,
        /// The issues whose lease this heartbeat wrote. A lease with time
        /// enough left for two more heartbeats and a margin is left as it
        /// is (a comment edit is a request GitHub limits), so this is
        /// empty for most heartbeats; `--renew` writes every one.
        written: Vec<u64>,
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
    Lost {
        reason: String,
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ReleaseOutcome {
    pub released: Vec<u64>,
    /// Issues held by another instance: left alone.
    pub foreign: Vec<IssueView>,
    #[serde(rename = "issues")]
    pub views: Vec<IssueView>,
}

/// How long until the lease of `view` runs out, for people.
pub(crate) fn remaining(view: &IssueView) -> Option<Duration> {
    view.expires_at.map(|e| e.since(view.now))
}
