//! The installed pre-push hook (SPEC 8): maverick's lines live in one marked
//! block, so an existing hook keeps working and `uninstall` takes out only
//! what `install` put in.
//!
//! A hook file that is maverick's alone, in a hooks directory of this
//! clone's own, is a copy of git-maverick itself (issue 11: the hook's whole
//! budget is 2 ms, and on a small VM every process git starts for it costs
//! about 0.7 ms). git then starts one process, not a shell or env and then
//! maverick. The copy keeps its source's size and modification time, so a
//! push notices when an upgrade replaced the git-maverick on PATH: it copies
//! the new one over itself and hands the push to it. With git-maverick gone
//! from PATH, the copy still guards (it fails closed by still working).
//! Where the copy cannot be made, the file's interpreter is git-maverick
//! (`#!/usr/bin/env git-maverick`, a second process; a shebang naming the
//! binary's own path would hang the push in git 2.47 when it is missing).
//! A copy is replaced, never written through: a rename puts every new
//! version in place. Every other hook keeps the shell block.

use std::path::{Path, PathBuf};

use crate::git::{Git, GitError};

/// The shim, as shipped in `hooks/pre-push`: a shebang and the block.
pub(crate) const SHIM: &str = include_str!("../../hooks/pre-push");
pub(crate) const BEGIN: &str = "# >>> git-maverick pre-push >>>";
pub(crate) const END: &str = "# <<< git-maverick pre-push <<<";

/// The first line of a hook file whose interpreter is git-maverick; git
/// then runs `git-maverick <hook file> REMOTE URL`
/// (`commands::hook::fast_pre_push`).
pub(crate) const NATIVE_LINE: &str = "#!/usr/bin/env git-maverick";

/// Maverick's block: from the BEGIN line through the END line and its newline.
pub(crate) fn block() -> &'static str {
    let start = SHIM.find(BEGIN).expect("the shim has a begin marker");
    &SHIM[start..]
}

/// The hook file whose interpreter is git-maverick. It holds maverick's
/// markers, so everything that finds the block (status, uninstall, the
/// copies hook managers leave) finds this file too.
pub(crate) fn native_hook() -> String {
    format!(
        "{NATIVE_LINE}\n{BEGIN}\n{}{END}\n",
        "\
# One writer per branch: `git maverick hook install` wrote this file and
# `git maverick hook uninstall` deletes it. Its interpreter is git-maverick
# (the first line), not a shell: lines added to it do not run. For hooks of
# your own as well, put them in a shell script here instead and run
# `git maverick hook install` again: maverick adds its block to yours.
"
    )
}

/// Whether `text` is a hook file whose interpreter is git-maverick.
pub(crate) fn is_native(text: &str) -> bool {
    text.lines().next().map(str::trim_end) == Some(NATIVE_LINE)
}

/// Bytes every git-maverick binary holds: how maverick knows a hook file
/// that is a copy of git-maverick, this build's or an older one's.
#[used]
static COPY_MARK: &[u8] = b"git-maverick: this file is a copy of git-maverick, the pre-push hook";

/// What a hook file that is maverick's alone is.
#[derive(Clone, Debug)]
pub(crate) enum Alone {
    /// The shell block (a hooks directory others may share, or no
    /// git-maverick on PATH now: the shim says what to do at each push).
    Shim,
    /// The file whose interpreter is git-maverick: the `git-maverick` on
    /// PATH is something that starts it (a version manager's shim, a
    /// wrapper script), not a build to copy.
    Native,
    /// A copy of the git-maverick build at this path; the native file
    /// where no copy can be made.
    Copy(PathBuf),
}

/// Whether the env the native file's first line names is there to start it.
pub(crate) fn env_available() -> bool {
    std::fs::metadata(NATIVE_ENV).is_ok_and(|m| m.is_file() && executable(&m))
}

/// The git-maverick git would find on PATH now, with its metadata
/// (symbolic links followed).
pub(crate) fn installed_binary() -> Option<(PathBuf, std::fs::Metadata)> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find_map(|dir| {
        let binary = dir.join("git-maverick");
        let meta = std::fs::metadata(&binary).ok()?;
        (meta.is_file() && executable(&meta)).then_some((binary, meta))
    })
}

/// Whether two files are one build as far as their metadata tells: a copy
/// keeps its source's size and modification time. The times are compared
/// to the two seconds the coarsest file systems keep (FAT; ext2 and some
/// mounts keep whole seconds), so that such a hooks directory does not
/// make every push look like one after an upgrade.
fn same_build(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    let close = |x: std::time::SystemTime, y: std::time::SystemTime| {
        let apart = x.duration_since(y).or_else(|_| y.duration_since(x));
        apart.is_ok_and(|d| d <= std::time::Duration::from_secs(2))
    };
    a.len() == b.len() && matches!((a.modified(), b.modified()), (Ok(x), Ok(y)) if close(x, y))
}

/// Whether the file at `path` is a git-maverick build: its bytes hold the
/// mark every build holds (whatever the executable format).
pub(crate) fn is_build(path: &Path) -> bool {
    let mark = std::hint::black_box(COPY_MARK);
    std::fs::read(path).is_ok_and(|bytes| bytes.windows(mark.len()).any(|w| w == mark))
}

/// Whether the file at `path` is a copy of git-maverick: of the one on
/// PATH (size and time, no read), or of any build (the mark).
pub(crate) fn is_copy(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if !meta.is_file() {
        return false;
    }
    let current = installed_binary().is_some_and(|(_, theirs)| same_build(&meta, &theirs));
    current || is_build(path)
}

/// Whether the hook file at `path` is a copy of exactly the build at
/// `binary`: the same bytes.
pub(crate) fn is_copy_of(path: &Path, binary: &Path) -> bool {
    match (std::fs::read(path), std::fs::read(binary)) {
        (Ok(copy), Ok(build)) => copy == build,
        _ => false,
    }
}

/// Puts a copy of the git-maverick at `binary` at `path` at once: written
/// beside it, given the source's modification time and made executable,
/// then renamed over whatever is there (so a running hook, or a file
/// linked to it, is left as it was).
pub(crate) fn copy_binary(binary: &Path, path: &Path) -> std::io::Result<()> {
    let tmp = crate::records::files::temp_beside(path)?;
    let copied = (|| {
        let mut from = std::fs::File::open(binary)?;
        let modified = from.metadata()?.modified()?;
        let mut to = std::fs::File::create(&tmp)?;
        std::io::copy(&mut from, &mut to)?;
        to.set_modified(modified)?;
        drop(to);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
        }
        std::fs::rename(&tmp, path)
    })();
    if copied.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    copied
}

/// Git runs a copy of git-maverick as the hook `hook`: when an upgrade
/// replaced the git-maverick build on PATH since the copy was made, the
/// copy takes the new build's place (for the next push) and this push goes
/// to the new build. Returns when this process is to check the push itself:
/// the copy is current, there is no git-maverick build on PATH (none, or a
/// wrapper: the copy still guards), or the hand-over failed.
#[cfg(unix)]
pub(crate) fn hand_over_if_replaced(hook: &Path, remote: &str, url: &str) {
    use std::os::unix::process::CommandExt as _;
    let Some((installed, theirs)) = installed_binary() else {
        return;
    };
    match std::fs::metadata(hook) {
        Ok(own) if !same_build(&own, &theirs) => {}
        _ => return,
    }
    if !is_build(&installed) {
        return;
    }
    let _ = copy_binary(&installed, hook);
    let _ = std::process::Command::new(&installed)
        .args(["hook", "pre-push", remote, url])
        .exec();
}

#[cfg(not(unix))]
pub(crate) fn hand_over_if_replaced(_: &Path, _: &str, _: &str) {}

/// Whether `program` (git's `argv[0]`) is a hook file that is a copy of
/// git-maverick: `pre-push`, or the `pre-push.legacy` pre-commit keeps
/// and runs.
pub(crate) fn is_hook_name(program: &str) -> bool {
    Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n == "pre-push" || n.starts_with("pre-push."))
}

/// The env the native hook's first line names.
pub(crate) const NATIVE_ENV: &str = "/usr/bin/env";

#[derive(Debug, thiserror::Error)]
pub(crate) enum HookFileError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is a symbolic link; maverick does not edit the file it points to")]
    Symlink { path: PathBuf },
    #[error("{path} is not executable, so git does not run it (and would not run maverick's block in it)")]
    NotExecutable { path: PathBuf },
    #[error("{path} is a {interpreter} script; maverick's block is shell")]
    NotShell { path: PathBuf, interpreter: String },
    #[error("{path} has a maverick block that is not closed (a line {BEGIN:?} without {END:?})")]
    Unbalanced { path: PathBuf },
}

/// What `install` or `uninstall` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Change {
    /// A new hook file: one whose interpreter is git-maverick, or the shim.
    Created,
    /// The block went into an existing hook.
    Added,
    /// An older block was replaced by this version's.
    Updated,
    /// The block was already there.
    Unchanged,
    /// The block was taken out; the rest of the hook stays.
    Removed,
    /// The hook held nothing but the block: the file is gone.
    Deleted,
    /// There was no block to take out.
    Absent,
}

/// The hook file git actually runs (`git rev-parse --git-path hooks`, which
/// knows `core.hooksPath` and linked worktrees).
pub(crate) fn hook_path(git: &Git) -> Result<PathBuf, GitError> {
    Ok(git.git_path("hooks")?.join("pre-push"))
}

/// A BEGIN line without its END line: maverick does not guess where its block stops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct UnclosedBlock;

/// True when `text` holds maverick's block (closed).
pub(crate) fn has_block(text: &str) -> bool {
    matches!(find_block(text), Some(Ok(_)))
}

/// Where the block is in `text`: byte range of its lines, end exclusive.
fn find_block(text: &str) -> Option<Result<(usize, usize), UnclosedBlock>> {
    let mut offset = 0;
    let mut start = None;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        match (start, bare == BEGIN, bare == END) {
            (None, true, _) => start = Some(offset),
            (Some(s), _, true) => return Some(Ok((s, offset + line.len()))),
            _ => {}
        }
        offset += line.len();
    }
    start.map(|_| Err(UnclosedBlock))
}

/// The interpreter a shebang names, `None` when the text has no shebang.
fn interpreter(text: &str) -> Option<String> {
    let first = text.lines().next()?.strip_prefix("#!")?;
    let mut words = first.split_whitespace();
    let program = words.next()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    if name == "env" {
        let arg = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
        return Some(arg.rsplit('/').next().unwrap_or(arg).to_owned());
    }
    Some(name.to_owned())
}

fn is_shell(interpreter: &str) -> bool {
    matches!(
        interpreter,
        "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "busybox"
    )
}

/// `existing` with maverick's block in it: replacing an older block in place,
/// else right after the shebang, so it runs before anything that could exit.
pub(crate) fn with_block(existing: &str) -> Result<(String, Change), UnclosedBlock> {
    let block = block();
    match find_block(existing) {
        Some(Ok((start, end))) => {
            if &existing[start..end] == block {
                return Ok((existing.to_owned(), Change::Unchanged));
            }
            let mut text = String::with_capacity(existing.len() + block.len());
            text.push_str(&existing[..start]);
            text.push_str(block);
            text.push_str(&existing[end..]);
            Ok((text, Change::Updated))
        }
        Some(Err(e)) => Err(e),
        None => {
            let after_shebang = if existing.starts_with("#!") {
                existing.find('\n').map_or(existing.len(), |n| n + 1)
            } else {
                0
            };
            let mut text = String::with_capacity(existing.len() + block.len() + 1);
            text.push_str(&existing[..after_shebang]);
            if after_shebang > 0 && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(block);
            text.push_str(&existing[after_shebang..]);
            Ok((text, Change::Added))
        }
    }
}

/// `existing` without maverick's block; `None` when nothing else is left
/// (a shebang alone does not count).
pub(crate) fn without_block(existing: &str) -> Result<(Option<String>, Change), UnclosedBlock> {
    match find_block(existing) {
        None => Ok((Some(existing.to_owned()), Change::Absent)),
        Some(Err(e)) => Err(e),
        Some(Ok((start, end))) => {
            let text = format!("{}{}", &existing[..start], &existing[end..]);
            let rest = text
                .lines()
                .filter(|l| !l.starts_with("#!"))
                .any(|l| !l.trim().is_empty());
            if rest {
                Ok((Some(text), Change::Removed))
            } else {
                Ok((None, Change::Deleted))
            }
        }
    }
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> HookFileError {
    let path = path.to_owned();
    move |source| HookFileError::Io {
        action,
        path,
        source,
    }
}

#[cfg(unix)]
pub(crate) fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
pub(crate) fn executable(_: &std::fs::Metadata) -> bool {
    true
}

fn write_hook(
    path: &Path,
    text: &str,
    mode_from: Option<&std::fs::Metadata>,
) -> Result<(), HookFileError> {
    crate::records::files::write_atomically(path, text.as_bytes()).map_err(io("write", path))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = mode_from.map_or(0o755, |m| m.permissions().mode() & 0o7777);
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(io("make executable", path))?;
    }
    #[cfg(not(unix))]
    let _ = mode_from;
    Ok(())
}

/// Installs the guard into the hook at `path`; running it twice changes
/// nothing. A new hook, or one that holds nothing but maverick's (a copy,
/// the native file or the shim of older versions), becomes `alone`. Any
/// other hook gets the block.
pub(crate) fn install(path: &Path, alone: &Alone) -> Result<Change, HookFileError> {
    install_block(path, true, alone)
}

/// The same for a script a hook manager runs with `sh` (husky's
/// `.husky/pre-push`): it need not be executable.
pub(crate) fn install_script(path: &Path) -> Result<Change, HookFileError> {
    install_block(path, false, &Alone::Shim)
}

/// Makes `path` what a file holding maverick's guard alone is: a copy of
/// git-maverick where one can be made, else its text. Returns the text
/// written, `None` for a copy.
fn write_alone(
    path: &Path,
    alone: &Alone,
    mode_from: Option<&std::fs::Metadata>,
) -> Result<Option<String>, HookFileError> {
    let text = match alone {
        Alone::Copy(binary) => match copy_binary(binary, path) {
            Ok(()) => return Ok(None),
            Err(e) if !env_available() => return Err(io("copy git-maverick to", path)(e)),
            Err(_) => native_hook(),
        },
        Alone::Native => native_hook(),
        Alone::Shim => SHIM.to_owned(),
    };
    write_hook(path, &text, mode_from)?;
    Ok(Some(text))
}

fn install_block(path: &Path, needs_exec: bool, alone: &Alone) -> Result<Change, HookFileError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => Some(meta),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io("read", path)(e)),
    };
    let Some(meta) = meta else {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io("create", dir))?;
        }
        write_alone(path, alone, None)?;
        return Ok(Change::Created);
    };
    if meta.file_type().is_symlink() {
        return Err(HookFileError::Symlink {
            path: path.to_owned(),
        });
    }
    if is_copy(path) {
        // A copy of git-maverick: current, or replaced by what belongs here.
        // The bytes, not the metadata: install is where a copy is made right.
        let current = match alone {
            Alone::Copy(binary) => is_copy_of(path, binary),
            Alone::Native | Alone::Shim => false,
        };
        if current {
            return Ok(Change::Unchanged);
        }
        write_alone(path, alone, None)?;
        return Ok(Change::Updated);
    }
    let existing = std::fs::read_to_string(path).map_err(io("read", path))?;
    if existing == SHIM || is_native(&existing) {
        // Maverick's alone: it becomes what such a file is here.
        let unchanged = match alone {
            Alone::Shim => existing == SHIM,
            Alone::Native => existing == native_hook(),
            Alone::Copy(_) => false,
        };
        if unchanged {
            return Ok(Change::Unchanged);
        }
        if needs_exec && !executable(&meta) {
            return Err(HookFileError::NotExecutable {
                path: path.to_owned(),
            });
        }
        // A copy that could not be made may leave the file as it was.
        let written = write_alone(path, alone, Some(&meta))?;
        return Ok(if written.as_deref() == Some(existing.as_str()) {
            Change::Unchanged
        } else {
            Change::Updated
        });
    }
    if let Some(name) = interpreter(&existing).filter(|i| !is_shell(i)) {
        return Err(HookFileError::NotShell {
            path: path.to_owned(),
            interpreter: name,
        });
    }
    let (text, change) =
        with_block(&existing).map_err(|UnclosedBlock| HookFileError::Unbalanced {
            path: path.to_owned(),
        })?;
    if change == Change::Unchanged {
        return Ok(change);
    }
    if needs_exec && !executable(&meta) {
        return Err(HookFileError::NotExecutable {
            path: path.to_owned(),
        });
    }
    write_hook(path, &text, Some(&meta))?;
    Ok(change)
}

/// Takes the block out of the hook at `path`, and the file when nothing else is left.
pub(crate) fn uninstall(path: &Path) -> Result<Change, HookFileError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Change::Absent),
        Err(e) => return Err(io("read", path)(e)),
    };
    if meta.file_type().is_symlink() {
        return Err(HookFileError::Symlink {
            path: path.to_owned(),
        });
    }
    if is_copy(path) {
        std::fs::remove_file(path).map_err(io("remove", path))?;
        return Ok(Change::Deleted);
    }
    let existing = std::fs::read_to_string(path).map_err(io("read", path))?;
    let (text, change) =
        without_block(&existing).map_err(|UnclosedBlock| HookFileError::Unbalanced {
            path: path.to_owned(),
        })?;
    match (change, text) {
        (Change::Absent, _) => Ok(Change::Absent),
        (_, Some(text)) => {
            write_hook(path, &text, Some(&meta))?;
            Ok(Change::Removed)
        }
        (_, None) => {
            std::fs::remove_file(path).map_err(io("remove", path))?;
            Ok(Change::Deleted)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shim_is_shebang_and_block() {
        assert!(SHIM.starts_with("#!/bin/sh\n"));
        assert_eq!(format!("#!/bin/sh\n{}", block()), SHIM);
        assert!(block().ends_with(&format!("{END}\n")));
    }

    #[test]
    fn round_trips_an_existing_hook() {
        let original = "#!/bin/bash\nset -e\necho existing\nexit 0\n";
        let (with, change) = with_block(original).unwrap();
        assert_eq!(change, Change::Added);
        assert!(with.starts_with(&format!("#!/bin/bash\n{BEGIN}\n")));
        assert!(with.ends_with("echo existing\nexit 0\n"));
        assert_eq!(with_block(&with).unwrap().1, Change::Unchanged);
        let (back, change) = without_block(&with).unwrap();
        assert_eq!(change, Change::Removed);
        assert_eq!(back.as_deref(), Some(original));
    }

    #[test]
    fn a_hook_without_shebang_or_newline() {
        let (with, _) = with_block("#!/bin/sh").unwrap();
        assert_eq!(with, SHIM);
        assert_eq!(without_block(&with).unwrap(), (None, Change::Deleted));
        let (with, _) = with_block("echo hi\n").unwrap();
        assert!(with.starts_with(BEGIN) && with.ends_with("echo hi\n"));
        assert_eq!(
            without_block(&with).unwrap().0.as_deref(),
            Some("echo hi\n")
        );
    }

    #[test]
    fn an_old_block_is_replaced_in_place() {
        let old = format!("#!/bin/sh\necho before\n{BEGIN}\nold lines\n{END}\necho after\n");
        let (with, change) = with_block(&old).unwrap();
        assert_eq!(change, Change::Updated);
        assert_eq!(
            with,
            format!("#!/bin/sh\necho before\n{}echo after\n", block())
        );
        assert!(with_block(&format!("{BEGIN}\nno end\n")).is_err());
    }

    #[test]
    fn a_native_hook_is_found_and_taken_out_as_the_block_is() {
        let text = native_hook();
        assert!(text.starts_with("#!/usr/bin/env git-maverick\n"));
        assert!(is_native(&text) && has_block(&text));
        assert_eq!(without_block(&text).unwrap(), (None, Change::Deleted));
        assert!(!is_native(SHIM));
        assert!(!is_native("#!/usr/bin/env git-maverick-other\n"));
        assert!(NATIVE_LINE.starts_with(&format!("#!{NATIVE_ENV} ")));
    }

    #[test]
    fn interpreters() {
        assert_eq!(interpreter("#!/bin/sh\n").as_deref(), Some("sh"));
        assert_eq!(
            interpreter("#!/usr/bin/env bash\n").as_deref(),
            Some("bash")
        );
        assert_eq!(
            interpreter("#!/usr/bin/env -S python3 -u\n").as_deref(),
            Some("python3")
        );
        assert_eq!(interpreter("echo\n"), None);
        assert!(!is_shell("python3") && is_shell("bash"));
    }
}
