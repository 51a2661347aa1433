//! An issue's claim, withdrawn and lease markers analysed into the
//! [`IssueView`] the core's `holding::judge` turns into the verdict.

use std::time::Duration;

use super::{ClaimComment, ClaimView, ClockSkew, IssueView, LeaseComment, LeaseView, Writer};
use crate::config::{Settings, DEFAULT_LEASE_TTL};
use crate::markers::{self, MarkerKind};
use crate::surface::{Comment, Issue};
use crate::timefmt::Timestamp;
use maverick_core::holding::{Decision, HoldingFacts};
use maverick_core::ids::InstanceId;
use maverick_core::payloads::{ClaimPayload, LeasePayload};
use maverick_core::settle::{earliest_first, Landed};

/// The writers of claim and lease markers whose stamps (the comment's time
/// and the payload's own) lead `now` by more than `max_skew`.
fn clocks_ahead(markers: &[MarkerAt<'_>], now: Timestamp, max_skew: Duration) -> Vec<ClockSkew> {
    let limit = now.plus(max_skew);
    let mut found: Vec<ClockSkew> = Vec::new();
    for at in markers {
        let (instance, own_stamps) = match &at.mark {
            Mark::Claim(c) => (&c.instance_id, [c.claimed_at, None]),
            Mark::Lease(l) => (&l.instance_id, [l.heartbeat_at, l.released_at]),
        };
        let stamps = own_stamps
            .into_iter()
            .flatten()
            .chain([at.comment.created_at, at.comment.updated_at]);
        for stamp in stamps.filter(|s| *s > limit) {
            match found.iter_mut().find(|f| f.instance_id == *instance) {
                Some(f) if f.stamp >= stamp => {}
                Some(f) => {
                    f.stamp = stamp;
                    f.ahead_secs = stamp.0 - now.0;
                }
                None => found.push(ClockSkew {
                    instance_id: instance.clone(),
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
pub fn analyze(issue: &Issue, settings: &Settings, me: &InstanceId, now: Timestamp) -> IssueView {
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
            c.instance_id == *me && holder.as_ref().map(|h| h.comment_id) != Some(c.comment_id)
        })
        .map(|c| (*c).clone());
    let (lease, my_lease_comment) = match &holder {
        Some(h) => {
            let (lease, mine) = lease_of(h, &leases);
            (Some(lease), mine.filter(|_| h.instance_id == *me))
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
        .filter(|c| c.generation == generation && !c.withdrawn && !withdrawn_later(&claims, c))
        .max_by_key(|c| c.comment_id);
    let orphan_label = labelled && live_claims.is_empty();
    let my_release_unfinished = orphan_label && newest_claim.is_some_and(|c| c.instance_id == *me);
    let expires_at = lease.as_ref().map(|l| l.expires_at);
    let my_claim_comments = my_claim_comments(issue, me, &claims);
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
        me: me.as_str(),
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
/// wrote, whoever wrote the comment, with the claim: what a withdrawal
/// withdraws. A claim a later withdrawal of `me` ended (among `claims`) is
/// withdrawn already.
fn my_claim_comments(issue: &Issue, me: &InstanceId, claims: &[ClaimView]) -> Vec<ClaimComment> {
    issue
        .comments
        .iter()
        .filter(|c| c.trusted && c.body.contains(me.as_str()))
        .filter_map(|c| {
            let claim = markers::find_marker(&c.body, MarkerKind::Claim)?
                .claim()
                .ok()?;
            let generation = claim.generation?;
            let ended = claims.iter().any(|w| ends(w, c.id, me, generation));
            (claim.instance_id == *me && !ended).then(|| ClaimComment {
                id: c.id,
                author: c.author.clone(),
                claim,
            })
        })
        .collect()
}

/// Whether `withdrawal` ends the claim of `instance` at `generation` in
/// comment `comment_id`: a withdrawn claim of that instance and generation
/// in a later comment. It is how an instance withdraws a claim of its own
/// that sits in a comment it may not edit (another account wrote it): a
/// new comment, which every reader counts, as it counts an edited one.
fn ends(withdrawal: &ClaimView, comment_id: u64, instance: &InstanceId, generation: u64) -> bool {
    withdrawal.withdrawn
        && withdrawal.writer == Writer::GitMaverick
        && withdrawal.comment_id > comment_id
        && withdrawal.instance_id == *instance
        && withdrawal.generation == generation
}

/// Whether a later withdrawal among `claims` ends `claim` (git maverick's
/// own only: Maverick withdraws nothing).
fn withdrawn_later(claims: &[ClaimView], claim: &ClaimView) -> bool {
    claim.writer == Writer::GitMaverick
        && claims
            .iter()
            .any(|w| ends(w, claim.comment_id, &claim.instance_id, claim.generation))
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
/// ended, not withdrawn (in their comment or by a later one) and not
/// superseded, earliest comment first: the first one holds the issue.
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
        .filter(|c| {
            c.generation == generation
                && !c.withdrawn
                && !withdrawn_later(claims, c)
                && !released(c)
                && !superseded(c)
        })
        .collect();
    earliest_first(&mut live, |c| {
        Landed::on_record(c.comment_id, &c.instance_id)
    });
    live
}
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

pub(super) fn lost_reason(
    view: &IssueView,
    me: &InstanceId,
    generation: Option<u64>,
    label: &str,
) -> String {
    match &view.holder {
        _ if !view.labelled => format!("the {label} label is gone from #{}", view.issue),
        Some(h) if h.instance_id != *me => format!(
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

/// How long until the lease of `view` runs out, for people.
pub(crate) fn remaining(view: &IssueView) -> Option<Duration> {
    view.expires_at.map(|e| e.since(view.now))
}
