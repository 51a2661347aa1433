//! The pure core of git maverick: every fact a command judges, judged once.
//!
//! As gix-protocol stands apart from gix and jj-lib from jj-cli, this crate
//! holds the rules and none of the I/O: it is handed the time, the markers,
//! labels and pull requests, and returns verdicts. It has no dependency that
//! could read a file, start a process, open a socket or read the clock
//! (tests/layout.rs fails if it gains one), so every command that asks it
//! gets the same answer for the same facts.
//!
//! - [`ids`]: typed ids (object ids that know SHA-1 from SHA-256, instance ids);
//! - [`timefmt`]: timestamps and the spec's duration grammar;
//! - [`markers`]: the marker format, parsed totally;
//! - [`payloads`]: each marker kind's payload, typed, unknown fields kept;
//! - [`closing`]: GitHub's closing keywords in a pull request's description;
//! - [`holding`]: who holds an issue, the one verdict every command answers from;
//! - [`settle`]: who wins a race of claims (an issue's, the dispatch slot's);
//! - [`shell`]: how a printed command line quotes its words;
//! - [`remote`]: what a remote URL (as git resolves it for a push) names.

#![forbid(unsafe_code)]

pub mod closing;
pub mod holding;
pub mod ids;
pub mod markers;
pub mod payloads;
pub mod remote;
pub mod settle;
pub mod shell;
pub mod timefmt;
