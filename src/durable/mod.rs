//! Promise 2: a machine that dies loses no pushed work (SPEC 3, 5, 6).
//! Story state and task lists, written as markers on the surface.

pub(crate) mod state;
pub mod tasks;
