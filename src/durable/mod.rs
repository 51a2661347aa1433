//! Promise 2: a machine that dies loses no pushed work (SPEC 3, 5, 6).
//! Markers, story state, task lists and hydrating a fresh clone from them.

pub mod hydrate;
pub mod markers;
pub(crate) mod state;
pub(crate) mod task_done;
pub mod tasks;
