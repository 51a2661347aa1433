//! `maverick-pre-push REMOTE URL`: the pre-push guard alone, the program
//! the installed hook runs on every push when it is installed beside
//! git-maverick (`cargo install` and the release archive put both in one
//! directory). The same library and the same check as `git maverick hook
//! pre-push` (src/commands/prepush_program.rs); a smaller program starts
//! sooner (issue 42): the linker keeps only what the check reaches, none of
//! the command line's tree, the GitHub client or the Bash guard.
//!
//! It starts as a C program does (`no_main`): the standard library's own
//! start-up reads `/proc/self/maps` to place a guard for a stack overflow's
//! message (about 0.1 ms of a bare program's start here), on every push.
//! What the check relies on of that start-up is done here: the arguments
//! come from `argv` (the standard library learns them by itself only on
//! glibc, not on musl, which the Linux release archives are built for),
//! and a write to a closed pipe is an error to report, not a signal that
//! kills the hook. Left out, as git never needs them of a hook: reopening
//! a closed stdin, stdout or stderr, and unwinding a panic (it aborts: the
//! push is refused either way).
#![no_main]

use std::ffi::{c_char, c_int, CStr, OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;

/// The program's entry, as the C runtime calls it.
///
/// # Safety
///
/// `argv` holds `argc` pointers to NUL-terminated strings that live as long
/// as the process: what the C runtime hands `main`.
#[no_mangle]
pub unsafe extern "C" fn main(argc: c_int, argv: *const *const c_char) -> c_int {
    // SAFETY: setting a signal's disposition to SIG_IGN, before any thread
    // is started, races with nothing.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let args: Vec<OsString> = (0..usize::try_from(argc).unwrap_or(0))
        .map(|i| {
            // SAFETY: `main`'s contract: `argc` valid strings in `argv`.
            let arg = unsafe { CStr::from_ptr(*argv.add(i)) };
            OsStr::from_bytes(arg.to_bytes()).to_owned()
        })
        .collect();
    let code = maverick::commands::pre_push_main(args);
    let _ = std::io::Write::flush(&mut std::io::stdout());
    c_int::from(code)
}
