//! Failpoints for the crash tests (issue 12), not a user-facing feature:
//! `MAVERICK_FAILPOINT=NAME[,NAME…]` makes the process die at that step as
//! `kill -9` would: SIGKILL to itself, so no destructor runs, nothing is
//! released, no buffer is flushed. Unset, each point costs one load of a
//! value read once.
//!
//! A protocol step that is one surface write of several operations (a claim:
//! label, claim comment, lease) names its operations with [`name_ops`]; the
//! surface calls [`after_op`] after each one it carried out. On the GitHub
//! surface each operation is its own request, so a crash can fall between
//! them; the git surface writes them all in one compare-and-swap and calls
//! [`after_op`] for each once the swap succeeded.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::OnceLock;

/// The variable that names the failpoints to die at.
pub const ENV: &str = "MAVERICK_FAILPOINT";

/// Every failpoint, for the tests and for `hit`'s debug check.
pub const ALL: &[&str] = &[
    "claim-after-label",
    "claim-after-claim-comment",
    "claim-after-lease",
    "heartbeat",
    "release",
    "takeover",
    "task-done-after-commit",
    "push-before-remote",
    "task-done-after-push",
    "task-done-after-check-off",
    "task-done-before-progress",
    "resume-after-fetch",
    "resume-after-journal",
    "resume-after-move-aside",
    "resume-after-worktree-add",
    "dispatch-after-comment",
    "dispatch-after-label",
    "dispatch-before-withdrawal",
    "state-put",
];

fn armed() -> Option<&'static str> {
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    ARMED
        .get_or_init(|| std::env::var(ENV).ok().filter(|v| !v.is_empty()))
        .as_deref()
}

/// Dies here when `name` is armed.
pub(crate) fn hit(name: &str) {
    debug_assert!(ALL.contains(&name), "unknown failpoint {name}");
    if let Some(armed) = armed() {
        if armed.split(',').any(|n| n.trim() == name) {
            die();
        }
    }
}

fn die() -> ! {
    // SAFETY: plain system calls; SIGKILL cannot be caught, so nothing of
    // this process runs after it.
    unsafe {
        libc::kill(libc::getpid(), libc::SIGKILL);
        libc::_exit(137)
    }
}

thread_local! {
    static OPS: RefCell<VecDeque<&'static str>> = const { RefCell::new(VecDeque::new()) };
}

/// Names the operations of the next surface write on this thread, in order
/// (`""` for one that is no failpoint).
pub(crate) fn name_ops(names: &[&'static str]) {
    if armed().is_some() {
        OPS.with(|ops| *ops.borrow_mut() = names.iter().copied().collect());
    }
}

/// Called by a surface after it carried out one operation of a write.
pub(crate) fn after_op() {
    if armed().is_some() {
        if let Some(name) = OPS.with(|ops| ops.borrow_mut().pop_front()) {
            if !name.is_empty() {
                hit(name);
            }
        }
    }
}

/// Called by a surface when a write ends, carried out or not: names left
/// over belong to no later write.
pub(crate) fn end_write() {
    if armed().is_some() {
        OPS.with(|ops| ops.borrow_mut().clear());
    }
}
