//! git maverick: claims, leases, durable push-per-task and one writer per
//! branch for people and agents that work the same issues from many machines.
//!
//! The binary (`src/main.rs`) is thin; everything lives here so that the
//! protocols can be tested without a terminal.

pub mod agents;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod coord;
pub mod durable;
pub mod error;
pub mod failpoint;
pub mod git;
pub mod markers;
pub mod records;
pub mod surface;
pub mod timefmt;
pub mod unique;
pub mod workflow;
pub mod writer;
