//! The coding agents' side of the Claude Code plugin (SPEC 11): the Bash
//! guard that judges an agent's command line before its shell runs it, and
//! the reading of shell command lines it stands on. It sits above `writer`
//! (whose records and rules it asks) and below `commands`.

pub mod bash_guard;
pub(crate) mod shell;
