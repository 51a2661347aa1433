//! The bodies this instance writes on an issue: its claim, its lease, its
//! release and a lost claim withdrawn.

use std::time::Duration;

use super::{ClaimRequest, Coordinator, IssueView};
use crate::markers::{self, Marker, MarkerKind};
use crate::timefmt::{format_duration, Timestamp};
use maverick_core::payloads::{ClaimPayload, DeclaredTtl, IssueRef, LeasePayload};

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

impl Coordinator<'_> {
    pub(super) fn claim_body(
        &self,
        req: &ClaimRequest<'_>,
        generation: u64,
        now: Timestamp,
        prior: Option<&IssueView>,
    ) -> String {
        let mut payload = ClaimPayload {
            instance_id: self.me().clone(),
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
            let (lease, verb) = if holder.instance_id == *self.me() {
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
    pub(super) fn lease_payload(
        &self,
        generation: u64,
        now: Timestamp,
        ttl: Duration,
        keep: Option<LeasePayload>,
    ) -> LeasePayload {
        let keep = keep.unwrap_or_default();
        LeasePayload {
            instance_id: self.me().clone(),
            heartbeat_at: Some(now),
            expires_at: Some(now.plus(ttl)),
            generation: Some(generation),
            marker_id: keep.marker_id.or_else(|| Some(markers::new_marker_id())),
            ..keep
        }
    }

    pub(super) fn lease_body(&self, payload: &LeasePayload) -> String {
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

    pub(super) fn release_body(
        &self,
        generation: u64,
        now: Timestamp,
        reason: ReleaseReason,
    ) -> String {
        let reason = reason.as_str();
        let payload = LeasePayload {
            instance_id: self.me().clone(),
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
    pub(super) fn withdrawn_body(
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
}
