//! `maverick-pre-push REMOTE URL`: the pre-push guard as a program of
//! its own (src/bin/maverick-pre-push.rs), which the installed hook runs
//! on every push instead of `git-maverick hook pre-push` (issue 42). It is
//! the same check, from the same library: the program is smaller because
//! the linker keeps only what the check reaches, and so it starts sooner.
//! Its name has no `git-` in front: git would list it among its commands
//! (`git maverick-pre-push`, and in `git <TAB>`), which it is not.
//!
//! It checks a push only as the `git-maverick` the pusher's PATH finds
//! would: when that `git-maverick` is not in the same PATH directory as
//! this program (another version installed elsewhere, a version manager's
//! shim or a wrapper script), it hands the push to that `git-maverick`
//! (`exec`, the pushed refs still unread on stdin), as it does any
//! arguments but git's `REMOTE URL`.

use std::ffi::OsString;

use crate::programs::find_on;

use super::error::Exit;
use super::{finish, help, hook, paint};
use crate::cli::GlobalArgs;

/// The program's name, as the hook script looks it up.
const PROGRAM: &str = "maverick-pre-push";

/// Runs `maverick-pre-push` with `args` (its own name first) and
/// returns the exit code, unless it hands the push to `git-maverick`.
pub fn pre_push_main(args: Vec<OsString>) -> u8 {
    if args.len() == 2 && args[1] == "--version" {
        // Its own build, for `hook status` to compare with git-maverick's.
        println!("{}", version_line());
        return 0;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut shaped: Vec<OsString> = vec!["git-maverick".into(), "hook".into(), "pre-push".into()];
    shaped.extend(args.iter().skip(1).cloned());
    match hook::fast_pre_push(&shaped) {
        Some(parsed) if beside_git_maverick(&path) => {
            finish(hook::pre_push(&GlobalArgs::default(), parsed), false)
        }
        // Another install's git-maverick, or another form of the command
        // (pre-commit's variables, `--help`): git-maverick's to answer.
        _ => hand_to_git_maverick(&args),
    }
}

/// Whether the first `git-maverick` on `path` is in the PATH entry of the
/// first `maverick-pre-push` there (the one the hook script found: this
/// program): the two were installed together.
fn beside_git_maverick(path: &std::ffi::OsStr) -> bool {
    match (find_on(path, PROGRAM), find_on(path, "git-maverick")) {
        (Some(program), Some(maverick)) => program.entry == maverick.entry,
        _ => false,
    }
}

/// What `maverick-pre-push --version` prints: its name and build, as
/// `git maverick --version` says its own.
fn version_line() -> String {
    format!("{PROGRAM} {}", help::version())
}

/// Why the guard program the hook runs here is not this build of
/// git-maverick's: `None` when it is, or when the hook runs git-maverick
/// itself (no `maverick-pre-push` beside the `git-maverick` PATH finds).
/// For `hook install` and `hook status`: one of the two programs copied
/// over without the other leaves pushes checked by the other build.
pub(crate) fn another_build() -> Option<String> {
    let path = std::env::var_os("PATH")?;
    if !beside_git_maverick(&path) {
        return None;
    }
    let program = find_on(&path, PROGRAM)?.program;
    let said = std::process::Command::new(&program)
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned());
    let ours = version_line();
    if said.as_deref() == Some(ours.as_str()) {
        return None;
    }
    Some(format!(
        "the hook runs {} ({}), not this git-maverick's build ({}): install both programs again, together (`cargo install`, or both from one release archive)",
        program.display(),
        said.unwrap_or_else(|| "it does not say its version".to_owned()),
        help::version()
    ))
}

/// Replaces this process with `git-maverick hook pre-push` and the same
/// arguments; returns only when that cannot start (the push then fails:
/// the guard does not let through what it could not check).
fn hand_to_git_maverick(args: &[OsString]) -> u8 {
    use std::os::unix::process::CommandExt as _;
    let err = std::process::Command::new("git-maverick")
        .args(["hook", "pre-push"])
        .args(args.iter().skip(1))
        .exec();
    paint::eprint_lines(&format!(
        "error: {PROGRAM} cannot run git-maverick, so this push is not checked (one writer per branch): {err}\n\
         hint: put git-maverick on PATH, or take the guard out: git maverick hook uninstall\n\
         hint: to push once without any pre-push check: git push --no-verify"
    ));
    Exit::Error.code()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn dir_with(root: &Path, name: &str, programs: &[&str]) -> std::path::PathBuf {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for program in programs {
            let file = dir.join(program);
            std::fs::write(&file, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    #[test]
    fn the_program_runs_only_beside_the_git_maverick_path_finds() {
        let root = tempfile::tempdir().unwrap();
        let both = dir_with(root.path(), "both", &["git-maverick", PROGRAM]);
        let wrapper = dir_with(root.path(), "wrapper", &["git-maverick"]);
        let alone = dir_with(root.path(), "alone", &[PROGRAM]);
        let empty = dir_with(root.path(), "empty", &[]);
        let path = |dirs: &[&Path]| std::env::join_paths(dirs).unwrap();
        assert!(beside_git_maverick(&path(&[&empty, &both])));
        assert!(beside_git_maverick(&path(&[&both, &wrapper])));
        // A git-maverick found first elsewhere is another install.
        assert!(!beside_git_maverick(&path(&[&wrapper, &both])));
        assert!(!beside_git_maverick(&path(&[&alone, &both])));
        assert!(!beside_git_maverick(&path(&[&alone])));
        assert!(!beside_git_maverick(&path(&[&empty])));
        // Not executable is not there, as for the shell.
        let plain = root.path().join("plain");
        std::fs::create_dir_all(&plain).unwrap();
        std::fs::write(plain.join("git-maverick"), "").unwrap();
        assert!(beside_git_maverick(&path(&[&plain, &both])));
    }
}
