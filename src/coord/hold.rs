//! Holding a claim for the life of a command (SPEC 4, `git maverick run`):
//! the timing rule that makes a lost claim safe to act on, and the heartbeat
//! loop that renews the lease from a thread of its own. Process groups and
//! signals are in `supervise`; the command layer (`commands/run.rs`) wires
//! them together and prints what happened.

use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crate::config::Settings;
use crate::coord::lease::{Coordinator, HeartbeatOutcome, LeaseError};
use crate::coord::supervise::ChildStatus;
use crate::surface::Surface;
use crate::timefmt::format_duration;

/// What the control loop of a held command hears about, from the threads
/// that watch things.
pub enum HoldEvent {
    Signal(libc::c_int),
    Exited(std::io::Result<ChildStatus>),
    Beat {
        started: Instant,
        result: Result<HeartbeatOutcome, LeaseError>,
    },
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum TimingError {
    #[error("the heartbeat interval must be at least 1s")]
    ZeroHeartbeat,
    #[error(
        "the lease ttl ({}) must be longer than two heartbeat intervals plus the grace period \
         (2 × {} + {} = {}), so that a lost claim is acted on before it can be taken over",
        format_duration(*ttl),
        format_duration(*heartbeat),
        format_duration(*grace),
        format_duration(*needed)
    )]
    TtlTooShort {
        ttl: Duration,
        heartbeat: Duration,
        grace: Duration,
        needed: Duration,
    },
}

/// Checks `ttl > 2 × heartbeat + grace`: the second failed heartbeat and
/// the grace period both end before the lease can go stale, so a command
/// that lost its claim is stopped before anyone can take the claim over.
pub fn check_timing(
    ttl: Duration,
    heartbeat: Duration,
    grace: Duration,
) -> Result<(), TimingError> {
    if heartbeat.is_zero() {
        return Err(TimingError::ZeroHeartbeat);
    }
    let needed = heartbeat * 2 + grace;
    if ttl <= needed {
        return Err(TimingError::TtlTooShort {
            ttl,
            heartbeat,
            grace,
            needed,
        });
    }
    Ok(())
}

/// Renews the lease every `heartbeatInterval` from `renewed_at` on a fixed
/// schedule until told to stop or the claim is lost. Only reports: the
/// control loop keeps the records, so nothing is written after it decided.
pub fn heartbeat_loop(
    surface: &dyn Surface,
    settings: &Settings,
    issues: &[u64],
    generation: u64,
    renewed_at: Instant,
    stop: Receiver<()>,
    events: Sender<HoldEvent>,
) {
    let interval = settings.heartbeat_interval;
    let coord = Coordinator::new(surface, settings);
    // Returns whether to go on.
    let beat_at = |due: Instant| -> bool {
        match stop.recv_timeout(due.saturating_duration_since(Instant::now())) {
            Err(RecvTimeoutError::Timeout) => {}
            _ => return false,
        }
        let started = Instant::now();
        let result = coord.heartbeat(issues, Some(generation));
        let lost = matches!(result, Ok(HeartbeatOutcome::Lost { .. }));
        events.send(HoldEvent::Beat { started, result }).is_ok() && !lost
    };
    // When the surface's lists lag longer than the claim's settle delay,
    // every racer's claim succeeds; the first heartbeat settles again, so it
    // comes a few settle delays after the claim, not a whole interval later.
    let early = settings.settle_delay * FIRST_BEAT_SETTLES;
    if !early.is_zero() && early < interval && !beat_at(renewed_at + early) {
        return;
    }
    let mut due = renewed_at + interval;
    while beat_at(due) {
        due = (due + interval).max(Instant::now());
    }
}

/// How many settle delays after the claim the first heartbeat comes.
const FIRST_BEAT_SETTLES: u32 = 3;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_claim_is_acted_on_before_the_lease_goes_stale() {
        let s = Duration::from_secs;
        assert_eq!(
            check_timing(s(600), s(0), s(10)),
            Err(TimingError::ZeroHeartbeat)
        );
        assert_eq!(check_timing(s(600), s(60), s(10)), Ok(()));
        // Exactly 2 × heartbeat + grace is not enough: the takeover could race the kill.
        let err = check_timing(s(130), s(60), s(10)).unwrap_err();
        assert_eq!(
            err,
            TimingError::TtlTooShort {
                ttl: s(130),
                heartbeat: s(60),
                grace: s(10),
                needed: s(130)
            }
        );
        assert!(err.to_string().contains("(2 × 1m + 10s = 130s)"), "{err}");
    }
}
