//! git maverick: claims, leases, durable push-per-task and one writer per
//! branch for people and agents that work the same issues from many machines.
//!
//! The binary (`src/main.rs`) is thin; everything lives here so that the
//! protocols can be tested without a terminal.

pub mod claims;
pub mod cli;
pub mod commands;
pub mod config;
pub mod dispatch;
pub mod error;
pub mod git;
pub mod hookfile;
pub mod hydrate;
pub mod lease;
pub mod markers;
pub mod prepush;
pub mod push;
pub mod record;
pub mod state;
pub mod status;
pub mod supervise;
pub mod surface;
pub mod tasks;
pub mod timefmt;
pub mod worktree;
