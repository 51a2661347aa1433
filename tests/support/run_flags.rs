//! The timing flags of `git maverick run` that the run and crash tests
//! share. The durations keep `ttl > 2 × heartbeat + grace` (SPEC 4) and are
//! long enough that real time never brings a heartbeat or the end of a
//! grace period within a test: the test moves the clock
//! ([`TestEnv::advance_clock`](super::TestEnv::advance_clock)) to bring
//! each one, and waits for what it brings (a file, a ref, an exit), never
//! for time.

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

/// The lease ttl of [`MOVED`], in seconds.
pub const TTL_SECS: u64 = 300;
/// The heartbeat interval of [`MOVED`], in seconds.
pub const HEARTBEAT_SECS: u64 = 60;
/// The grace period of [`MOVED`], in seconds.
pub const GRACE_SECS: u64 = 10;

/// ttl 5m, heartbeat 1m, grace 10s.
pub const MOVED: [&str; 6] = timing("5m", "1m", "10s");
