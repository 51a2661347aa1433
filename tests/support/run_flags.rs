//! The timing flags of `git maverick run` that the run and crash tests
//! share: short whole-second durations that keep `ttl > 2 × heartbeat +
//! grace` (SPEC 4), so that a lost claim is acted on within seconds.

/// `--lease-ttl TTL --heartbeat-interval HEARTBEAT --grace GRACE`.
pub const fn timing(
    ttl: &'static str,
    heartbeat: &'static str,
    grace: &'static str,
) -> [&'static str; 6] {
    [
        "--lease-ttl",
        ttl,
        "--heartbeat-interval",
        heartbeat,
        "--grace",
        grace,
    ]
}

/// ttl 4s, heartbeat 1s, grace 1s: the tightest whole seconds allow.
pub const SHORT: [&str; 6] = timing("4s", "1s", "1s");
