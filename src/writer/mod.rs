//! Promise 3: one writer per branch (SPEC 7, 8). The pre-push checks,
//! maverick's own compare-and-swap pushes, hook files and worktrees.

pub(crate) mod guard;
pub(crate) mod hookfile;
pub(crate) mod hookmanager;
pub(crate) mod location;
pub mod prepush;
pub(crate) mod protect;
pub mod push;
pub(crate) mod stamp;
pub(crate) mod worktree;
