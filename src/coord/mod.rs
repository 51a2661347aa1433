//! Promise 1: two instances never silently work on the same issue (SPEC 4, 9).
//! Claims and leases, the dispatch slot, and holding a claim for the life of
//! a command.

pub mod claims;
pub mod dispatch;
pub mod hold;
pub mod lease;
pub mod pulls;
pub(crate) mod session_end;
pub(crate) mod settle;
pub mod supervise;
