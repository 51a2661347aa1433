//! Who holds an issue (SPEC 4): one verdict, computed once.
//!
//! Every command that asks "may I work on this issue?" (`coord`, `run`,
//! `task done`, `resume`, `status`, `dispatch`, `hydrate`, the pre-push
//! hook, the agents' Bash guard) answers from [`Holding`], never from its
//! own reading of a lease. [`lease_live`] is the one rule for whether a
//! lease still runs; [`judge`] the one rule that turns an issue's facts into
//! a verdict, including the state no caller may forget: a claim of this
//! instance whose lease ran out ([`Holding::OursLapsed`]). [`renewal_due`]
//! is the one rule for whether a heartbeat writes the lease or leaves it;
//! [`own_comment`] the one rule for whether a comment is this account's own
//! to edit (a lease upserted in place, a lost claim withdrawn).

use std::time::Duration;

use serde::Serialize;

use crate::timefmt::Timestamp;

/// Whether a lease that runs until `expires_at` is still live at `now`: a
/// lease is live strictly before its expiry, and lapsed from that instant.
pub fn lease_live(expires_at: Timestamp, now: Timestamp) -> bool {
    now < expires_at
}

/// Whether a heartbeat at `now` must write (renew) a lease of its own that
/// runs until `expires_at`, or may leave it as it is. Every heartbeat reads
/// and settles (SPEC 4); a write is a comment edit that GitHub counts as
/// content, so it is made only when the lease needs it.
///
/// A heartbeat that leaves the lease trusts the later ones to renew it: the
/// lease must outlive the next heartbeat, `interval` away, and the one
/// after it, because the next may fail (two failures in a row end `run`),
/// and then a margin: the holder's `grace` to stop its work once it knows
/// its claim is lost, and one second more because the surface keeps whole
/// seconds; at least half an interval, for the heartbeats' own lateness (a
/// slow read, a settle delay).
///
/// With the defaults (ttl 600 s, interval 120 s) a lease is written when at
/// most 300 s are left: every third heartbeat, so a lease that is never
/// less than 180 s from its expiry when all goes well.
pub fn renewal_due(
    now: Timestamp,
    expires_at: Timestamp,
    interval: Duration,
    grace: Duration,
) -> bool {
    let margin = (grace + Duration::from_secs(1)).max(interval / 2);
    expires_at.since(now) <= interval * 2 + margin
}

/// Whether a comment that `author` wrote is this account's own, and so one
/// it may edit: `account` is the name the surface records our writes under
/// (the token's login on GitHub, the instance on the git surface). A marker
/// block naming our instance proves nothing (a trusted account can write
/// one, and an admin's token can edit anyone's comment), so only the author
/// counts. An account not known owns nothing: an edit refused is a new
/// comment, an edit of another's comment is a loss that cannot be undone.
pub fn own_comment(author: &str, account: Option<&str>) -> bool {
    account.is_some_and(|account| !account.is_empty() && account == author)
}

/// An issue's holding verdict as one instance sees it at one time.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Holding {
    /// Nobody holds it (an orphan label included) and nothing blocks it.
    Free,
    /// This instance holds it with a live lease.
    Ours { until: Timestamp },
    /// This instance's claim holds it, but its lease ran out: lost as any
    /// stale lease is, though nobody may have taken it over yet.
    OursLapsed { since: Timestamp },
    /// Another instance holds it with a live lease.
    Held { by: String, until: Timestamp },
    /// Another instance's claim holds it, its lease ran out.
    Stale { by: String, since: Timestamp },
    /// Nobody holds it, and `blocked-by:#N` labels block it.
    Blocked { by: Vec<u64> },
    /// Nobody holds it live, and an open pull request (not the reader's own)
    /// that closes it is the work in progress.
    PullRequest { number: u64 },
}

/// What [`judge`] is handed: the facts the claim protocol derives from an
/// issue's labels and markers.
#[derive(Clone, Copy, Debug)]
pub struct HoldingFacts<'a> {
    /// The claim whose turn it is (present only while the in-progress label
    /// is on the issue), by instance, and when its lease runs out.
    pub holder: Option<(&'a str, Timestamp)>,
    /// The issues the `blocked-by:#N` labels name.
    pub blocked_by: &'a [u64],
    /// The reader.
    pub me: &'a str,
    /// The surface's time of the read.
    pub now: Timestamp,
}

/// The verdict of the claims and labels. Another instance's claim is
/// reported before a block (a block must never hide who works on an issue).
/// An open pull request, which only some reads look for, is counted by
/// [`Holding::with_pull`].
pub fn judge(facts: &HoldingFacts<'_>) -> Holding {
    match facts.holder {
        Some((who, until)) if who == facts.me && lease_live(until, facts.now) => {
            Holding::Ours { until }
        }
        Some((who, since)) if who == facts.me => Holding::OursLapsed { since },
        Some((who, until)) if lease_live(until, facts.now) => Holding::Held {
            by: who.to_owned(),
            until,
        },
        Some((who, since)) => Holding::Stale {
            by: who.to_owned(),
            since,
        },
        None => Holding::unclaimed(facts.blocked_by),
    }
}

impl Holding {
    /// The verdict on an issue no claim holds: blocked by the issues its
    /// `blocked-by:#N` labels name, else free.
    pub fn unclaimed(blocked_by: &[u64]) -> Holding {
        match blocked_by {
            [] => Holding::Free,
            by => Holding::Blocked { by: by.to_vec() },
        }
    }

    /// The verdict once `pull` (an open pull request that closes the issue
    /// and is not the reader's) is counted: it holds only an issue nobody
    /// holds live, this instance included, and nothing blocks.
    pub fn with_pull(self, pull: Option<u64>) -> Holding {
        match pull {
            Some(number) if self.pull_may_hold() => Holding::PullRequest { number },
            _ => self,
        }
    }

    /// Whether an open pull request would hold the issue over this verdict:
    /// nobody holds it live and nothing blocks it.
    pub fn pull_may_hold(&self) -> bool {
        matches!(
            self,
            Holding::Free | Holding::Stale { .. } | Holding::OursLapsed { .. }
        )
    }

    /// Whether this instance's claim holds the issue, live or lapsed.
    pub fn claim_is_mine(&self) -> bool {
        matches!(self, Holding::Ours { .. } | Holding::OursLapsed { .. })
    }

    /// Whether a lease has run out (ours or another's): a takeover's case.
    pub fn lapsed(&self) -> bool {
        matches!(self, Holding::OursLapsed { .. } | Holding::Stale { .. })
    }

    /// The name a command prints and its JSON's `decision` carries.
    pub fn decision(&self) -> Decision {
        match self {
            Holding::Free => Decision::Free,
            Holding::Ours { .. } => Decision::Ours,
            Holding::OursLapsed { .. } => Decision::Lapsed,
            Holding::Held { .. } | Holding::PullRequest { .. } => Decision::Held,
            Holding::Stale { .. } => Decision::Stale,
            Holding::Blocked { .. } => Decision::Blocked,
        }
    }
}

/// The verdict's one-word name: `decision` in every command's JSON.
/// `lapsed` is this instance's own claim whose lease ran out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    Free,
    Ours,
    Lapsed,
    Blocked,
    Held,
    Stale,
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Timestamp = Timestamp(1_000);

    #[test]
    fn only_a_comment_the_account_wrote_is_its_own() {
        assert!(own_comment("octocat", Some("octocat")));
        assert!(!own_comment("admin", Some("octocat")));
        assert!(!own_comment("octocat", None));
        assert!(!own_comment("", Some("")));
    }

    fn facts<'a>(holder: Option<(&'a str, i64)>, blocked: &'a [u64]) -> HoldingFacts<'a> {
        HoldingFacts {
            holder: holder.map(|(who, at)| (who, Timestamp(at))),
            blocked_by: blocked,
            me: "me",
            now: T,
        }
    }

    #[test]
    fn a_lease_is_live_strictly_before_its_expiry() {
        assert!(lease_live(Timestamp(1_001), T));
        assert!(!lease_live(T, T));
        assert!(!lease_live(Timestamp(999), T));
    }

    #[test]
    fn a_lease_is_renewed_once_two_more_heartbeats_and_a_margin_would_not_fit() {
        let s = Duration::from_secs;
        let due = |left: i64, interval: u64, grace: u64| {
            renewal_due(T, Timestamp(1_000 + left), s(interval), s(grace))
        };
        // The defaults: two intervals of 120 s and half an interval.
        assert!(due(300, 120, 10));
        assert!(!due(301, 120, 10));
        // Right after a claim or a renewal, the lease is a whole ttl.
        assert!(!due(600, 120, 10));
        // A grace longer than half an interval is the margin.
        assert!(due(301, 120, 60));
        assert!(!due(301, 120, 59));
        assert!(!due(302, 120, 60));
        // A lapsed lease, or one at its last second, is due (its holder
        // learns it is lost from the verdict before it writes anything).
        assert!(due(0, 120, 10));
        assert!(due(-5, 120, 10));
        // Intervals shorter than a second (tests) still leave a margin.
        assert!(due(1, 0, 0));
        assert!(!due(2, 0, 0));
    }

    #[test]
    fn every_state_from_its_facts() {
        let cases: Vec<(HoldingFacts<'_>, Holding)> = vec![
            (facts(None, &[]), Holding::Free),
            (
                facts(Some(("me", 1_600)), &[]),
                Holding::Ours {
                    until: Timestamp(1_600),
                },
            ),
            (
                facts(Some(("me", 1_000)), &[]),
                Holding::OursLapsed { since: T },
            ),
            (
                facts(Some(("other", 1_600)), &[7]),
                Holding::Held {
                    by: "other".into(),
                    until: Timestamp(1_600),
                },
            ),
            (
                facts(Some(("other", 900)), &[]),
                Holding::Stale {
                    by: "other".into(),
                    since: Timestamp(900),
                },
            ),
            (facts(None, &[7, 9]), Holding::Blocked { by: vec![7, 9] }),
        ];
        for (f, want) in cases {
            assert_eq!(judge(&f), want, "{f:?}");
        }
    }

    #[test]
    fn a_pull_request_holds_only_what_nobody_holds_live() {
        let with_pull = |f: HoldingFacts<'static>| judge(&f).with_pull(Some(12));
        let pull = Holding::PullRequest { number: 12 };
        assert_eq!(with_pull(facts(None, &[])), pull);
        assert_eq!(with_pull(facts(Some(("me", 900)), &[])), pull);
        assert_eq!(with_pull(facts(Some(("other", 900)), &[])), pull);
        assert_eq!(
            with_pull(facts(Some(("me", 1_600)), &[])).decision(),
            Decision::Ours
        );
        assert_eq!(with_pull(facts(None, &[3])).decision(), Decision::Blocked);
    }
}
