//! Fresh unique ids and jitter, for every layer: marker ids (SPEC 3), a
//! clone's generated instance id (SPEC 2), and the spread of retries.
//! Unique, not secret.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A fresh 128-bit id as 32 lowercase hex digits.
pub fn unique_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let pid = std::process::id();
    // RandomState is keyed from the OS once per thread and re-keyed on every
    // `new`, so the two halves are independent; time, pid and counter keep
    // ids apart even between processes that happened to draw the same keys.
    let half = |salt: u64| {
        let mut hasher = RandomState::new().build_hasher();
        hasher.write_u64(salt);
        hasher.write_u128(nanos);
        hasher.write_u32(pid);
        hasher.write_u64(count);
        hasher.finish()
    };
    format!("{:016x}{:016x}", half(0), half(1))
}

/// A number in `0..bound` that differs between racers (0 when `bound` is 0).
pub(crate) fn jitter(bound: u64) -> u64 {
    let id = unique_id();
    u64::from_str_radix(&id[..16], 16).unwrap_or(0) % bound.max(1)
}
