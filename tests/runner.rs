//! The one integration test binary: every area of the suite is a module
//! here, so the suite links once (as jj's `cli/tests/runner.rs` does).
//! Run one area with `cargo test --test runner coord::`.

#[macro_use]
mod support;

mod agent_hooks;
mod budget;
mod cas_push;
mod claude_code;
mod cli;
mod coord;
mod crash;
mod demo;
mod dispatch;
mod dispatch_schedule;
mod fake_github;
mod first_hour;
mod git_surface;
mod github;
mod guard;
mod heartbeat;
mod holding;
mod hook;
mod hook_managers;
mod hydrate;
mod layout;
mod markers;
mod maverick_interop;
mod native;
mod open_pulls;
mod protect;
mod recovery;
mod resume;
mod run;
mod settle;
mod shells;
mod sim_crash;
mod skill;
mod state;
mod status;
mod tasks;
mod writer;
