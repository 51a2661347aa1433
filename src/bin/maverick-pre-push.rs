//! `maverick-pre-push REMOTE URL`: the pre-push guard alone, the
//! program the installed hook runs on every push when it is installed
//! beside git-maverick (`cargo install` and the release archive put both
//! in one directory). The same library and the same check as `git maverick
//! hook pre-push`; a smaller program starts sooner (issue 42): the linker
//! keeps only what the check reaches, none of the command line's tree, the
//! GitHub client or the Bash guard.
//!
//! It starts as a C program does (`no_main`): the standard library's own
//! start-up reads `/proc/self/maps` to place a guard for a stack overflow's
//! message (about 0.1 ms of a bare program's start here), on every push.
//! What of that start-up
//! the check relies on is done here: a write to a closed pipe is an error
//! to report, not a signal that kills the hook.
#![no_main]

use std::ffi::{c_char, c_int};

#[no_mangle]
pub extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
    // SAFETY: setting a signal's disposition to SIG_IGN, before any thread
    // is started, races with nothing.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let code = maverick::commands::pre_push_main(std::env::args_os().collect());
    let _ = std::io::Write::flush(&mut std::io::stdout());
    c_int::from(code)
}
