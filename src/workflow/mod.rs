//! Workflows that keep several promises at once, built on the three promise
//! folders: `task done` (a lease, a compare-and-swap push, a check mark),
//! `hydrate` (claims, state and tasks of an epic), `resume` (a claim, a
//! worktree, a last-seen head and the tasks of a branch) and the team view
//! of `status`.

pub mod hydrate;
pub(crate) mod resume;
pub(crate) mod status;
pub(crate) mod task_done;
