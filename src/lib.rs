//! git maverick: claims, leases, durable push-per-task and one writer per
//! branch for people and agents that work the same issues from many machines.
//!
//! The binary (`src/main.rs`) is thin; everything lives here so that the
//! protocols can be tested without a terminal. The rules every command
//! asks (ids, markers, verdicts) live in the pure core crate, `maverick_core`
//! (core/), re-exported here under the paths the layers use.

pub mod agents;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod coord;
pub mod durable;
pub mod failpoint;
pub mod git;
pub mod markers;
pub(crate) mod programs;
pub mod records;
pub mod surface;
pub use maverick_core::timefmt;
pub mod unique;
pub mod workflow;
pub mod writer;
