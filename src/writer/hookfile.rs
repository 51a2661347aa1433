//! The installed pre-push hook (SPEC 8): maverick's lines live in one marked
//! block, so an existing hook keeps working and `uninstall` takes out only
//! what `install` put in.
//!
//! A hook file that is maverick's alone, in this clone's own hooks
//! directory, is `hooks/pre-push`: a small script as git-lfs writes its
//! own, `command -v git-maverick` (a clear message and a failed push when it
//! is missing), then `exec git-maverick hook pre-push "$@"`. Inside a hook
//! that runs more than maverick, and in a hook file others share (a
//! `core.hooksPath` a team commits, husky's `.husky/pre-push`), the block is
//! [`SHARED_BLOCK`]: it hands the pushed refs on to the rest of the hook, and
//! a clone that never used maverick passes it untouched even without
//! git-maverick, while one that did fails closed.
//!
//! Earlier versions wrote a copy of the git-maverick binary, or a file whose
//! interpreter was git-maverick; `install` turns both into the script and
//! `uninstall` removes them.

use crate::programs::executable;
use std::path::{Path, PathBuf};

use crate::git::{Git, GitError};
use crate::records::files::IoError;

/// The hook file that is maverick's alone, as shipped in `hooks/pre-push`.
pub(crate) const SCRIPT: &str = include_str!("../../hooks/pre-push");
pub(crate) const BEGIN: &str = "# >>> git-maverick pre-push >>>";
pub(crate) const END: &str = "# <<< git-maverick pre-push <<<";

/// Maverick's block where it shares a hook file: the pushed refs (git's
/// stdin) are kept and handed to whatever the hook runs after it. Without
/// git-maverick on PATH it fails the push only in a clone that uses
/// maverick (its common dir holds maverick's records): a teammate who does
/// not use it pushes through a committed hook untouched.
pub(crate) const SHARED_BLOCK: &str = r#"# >>> git-maverick pre-push >>>
# One writer per branch: `git maverick hook install` put this block here and
# `git maverick hook uninstall` takes it out; the rest of this file is yours.
# A clone that does not use git-maverick passes it untouched.
if command -v git-maverick >/dev/null 2>&1; then
	# The pushed refs, read whole: `git push --tags` may send thousands.
	maverick_refs=$(cat) || exit $?
	git-maverick hook pre-push "$@" <<MAVERICK_REFS || exit $?
$maverick_refs
MAVERICK_REFS
	# Whatever else this hook runs reads the same lines.
	if [ -n "$maverick_refs" ]; then
		exec <<MAVERICK_REFS
$maverick_refs
MAVERICK_REFS
	else
		exec </dev/null
	fi
elif ! maverick_dir=$(git rev-parse --git-common-dir) || [ -d "$maverick_dir/maverick" ]; then
	echo "error: this clone uses git-maverick, which is not on PATH, so $0 cannot check this push" >&2
	echo "hint: put git-maverick on PATH (the directory of its binary; its README's Install says how to get it)," >&2
	echo "hint: or take maverick's block out of $0 (git maverick hook uninstall);" >&2
	echo "hint: to push once without any pre-push check: git push --no-verify" >&2
	exit 1
fi
# <<< git-maverick pre-push <<<
"#;

/// A file holding [`SHARED_BLOCK`] alone: maverick's hook file where the
/// hooks directory may be shared.
pub(crate) fn shared_script() -> String {
    format!("#!/bin/sh\n{SHARED_BLOCK}")
}

/// The line of [`SHARED_BLOCK`] that lets a clone that does not use
/// maverick through: every version of the shared block holds it, whatever
/// its messages say.
const PASS_OTHER_CLONES: &str = r#"elif ! maverick_dir=$(git rev-parse --git-common-dir) || [ -d "$maverick_dir/maverick" ]; then"#;

/// Whether hook text holds a shared block, which lets a clone that does not
/// use maverick push without git-maverick on PATH.
pub(crate) fn lets_other_clones_through(text: &str) -> bool {
    text.lines().any(|line| line == PASS_OTHER_CLONES)
}

/// What a hook file holding maverick's guard alone is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Alone {
    /// [`SCRIPT`]: this clone's own hooks.
    Script,
    /// [`shared_script`]: a hooks directory or file others may share.
    Shared,
}

impl Alone {
    pub(crate) fn text(self) -> String {
        match self {
            Alone::Script => SCRIPT.to_owned(),
            Alone::Shared => shared_script(),
        }
    }
}

/// The bytes every git-maverick build that copied itself into `.git/hooks`
/// held (versions before the script). Only `install`, `uninstall` and
/// `status` look for them, in a hook file that is an executable binary.
const LEGACY_COPY_MARK: &[u8] =
    b"git-maverick: this file is a copy of git-maverick, the pre-push hook";

/// Whether the file at `path` is a copy of git-maverick an earlier version
/// put there: an executable binary (ELF, Mach-O) that holds the mark those
/// builds held. A text file is never one, whatever it says.
pub(crate) fn is_legacy_copy(path: &Path) -> bool {
    use std::io::Read as _;
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut magic = [0u8; 4];
    if file.read_exact(&mut magic).is_err() {
        return false;
    }
    let binary = magic == *b"\x7fELF"
        || matches!(
            u32::from_be_bytes(magic),
            0xfeed_face | 0xfeed_facf | 0xcefa_edfe | 0xcffa_edfe | 0xcafe_babe
        );
    if !binary {
        return false;
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).is_ok()
        && bytes
            .windows(LEGACY_COPY_MARK.len())
            .any(|w| w == LEGACY_COPY_MARK)
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum HookFileError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("{path} is a symbolic link; maverick does not edit the file it points to")]
    Symlink { path: PathBuf },
    #[error("{path} is not executable, so git does not run it (and would not run maverick's block in it)")]
    NotExecutable { path: PathBuf },
    #[error("{path} is a {interpreter} script; maverick's block is shell")]
    NotShell { path: PathBuf, interpreter: String },
    #[error("{path} has a maverick block that is not closed (a line {:?} without {:?})", markers.begin, markers.end)]
    Unbalanced { path: PathBuf, markers: Markers },
}

/// What `install` or `uninstall` did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Change {
    /// A new hook file holding maverick's guard alone.
    Created,
    /// The block went into an existing hook.
    Added,
    /// An older block, or a file of an earlier version, was replaced by this version's.
    Updated,
    /// The block was already there.
    Unchanged,
    /// The block was taken out; the rest of the hook stays.
    Removed,
    /// The hook held nothing but maverick's guard: the file is gone.
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

/// The lines that open and close one kind of maverick block in a hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Markers {
    pub begin: &'static str,
    pub end: &'static str,
}

/// The pre-push guard's block.
pub(crate) const PRE_PUSH: Markers = Markers {
    begin: BEGIN,
    end: END,
};

/// Where the block is in `text`: byte range of its lines, end exclusive.
fn find_block(text: &str) -> Option<Result<(usize, usize), UnclosedBlock>> {
    find_marked(text, PRE_PUSH)
}

fn find_marked(text: &str, markers: Markers) -> Option<Result<(usize, usize), UnclosedBlock>> {
    let mut offset = 0;
    let mut start = None;
    for line in text.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        match (start, bare == markers.begin, bare == markers.end) {
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

/// `existing` with `block` in it: replacing an older block in place, else
/// right after the shebang, so it runs before anything that could exit.
pub(crate) fn with_block(existing: &str, block: &str) -> Result<(String, Change), UnclosedBlock> {
    with_marked(existing, block, PRE_PUSH)
}

fn with_marked(
    existing: &str,
    block: &str,
    markers: Markers,
) -> Result<(String, Change), UnclosedBlock> {
    match find_marked(existing, markers) {
        Some(Ok((start, end))) => {
            if &existing[start..end] == block {
                return Ok((existing.to_owned(), Change::Unchanged));
            }
            let text = format!("{}{block}{}", &existing[..start], &existing[end..]);
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
    without_marked(existing, PRE_PUSH)
}

fn without_marked(
    existing: &str,
    markers: Markers,
) -> Result<(Option<String>, Change), UnclosedBlock> {
    match find_marked(existing, markers) {
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

/// Whether `text` holds maverick's guard and nothing else: a file of this
/// version or of an earlier one (a shell block, or git-maverick as the
/// interpreter).
pub(crate) fn is_maverick_alone(text: &str) -> bool {
    matches!(without_block(text), Ok((None, _)))
}

fn io(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> HookFileError {
    let io = IoError::on(action, path);
    move |source| io(source).into()
}

/// The metadata of `path` itself (a link is not followed); `None` when
/// there is nothing there.
fn metadata_there(path: &Path) -> Result<Option<std::fs::Metadata>, HookFileError> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io("read", path)(e)),
    }
}

/// Refuses a path under `base` that goes through a symbolic link (a
/// tracked `.lefthook-local` pointing out of the repository): maverick
/// reads and writes its files only where they seem to be.
pub(crate) fn refuse_links(base: &Path, path: &Path) -> Result<(), HookFileError> {
    let Ok(rest) = path.strip_prefix(base) else {
        return Ok(());
    };
    let mut at = base.to_owned();
    for part in rest.components() {
        at.push(part);
        match metadata_there(&at)? {
            Some(meta) if meta.file_type().is_symlink() => {
                return Err(HookFileError::Symlink { path: at });
            }
            Some(_) => {}
            None => break,
        }
    }
    Ok(())
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
/// nothing. A new hook, or one that holds nothing but maverick's guard (of
/// this version or an earlier one, a copy of git-maverick included),
/// becomes `alone`. Any other hook gets [`SHARED_BLOCK`].
pub(crate) fn install(path: &Path, alone: Alone) -> Result<Change, HookFileError> {
    install_block(path, true, alone)
}

/// The same for a script a hook manager runs with `sh` (husky's
/// `.husky/pre-push`): it need not be executable.
pub(crate) fn install_script(path: &Path) -> Result<Change, HookFileError> {
    install_block(path, false, Alone::Shared)
}

fn install_block(path: &Path, needs_exec: bool, alone: Alone) -> Result<Change, HookFileError> {
    let Some(meta) = metadata_there(path)? else {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io("create", dir))?;
        }
        write_hook(path, &alone.text(), None)?;
        return Ok(Change::Created);
    };
    if meta.file_type().is_symlink() {
        return Err(HookFileError::Symlink {
            path: path.to_owned(),
        });
    }
    if is_legacy_copy(path) {
        write_hook(path, &alone.text(), None)?;
        return Ok(Change::Updated);
    }
    let existing = std::fs::read_to_string(path).map_err(io("read", path))?;
    let unbalanced = |UnclosedBlock| HookFileError::Unbalanced {
        path: path.to_owned(),
        markers: PRE_PUSH,
    };
    if is_maverick_alone(&existing) {
        let text = alone.text();
        if existing == text {
            return Ok(Change::Unchanged);
        }
        write_hook(path, &text, None)?;
        return Ok(Change::Updated);
    }
    without_block(&existing).map_err(unbalanced)?;
    if let Some(name) = interpreter(&existing).filter(|i| !is_shell(i)) {
        return Err(HookFileError::NotShell {
            path: path.to_owned(),
            interpreter: name,
        });
    }
    let (text, change) = with_block(&existing, SHARED_BLOCK).map_err(unbalanced)?;
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

/// Takes the block out of the hook at `path`, and the file when nothing
/// else is left (a copy of git-maverick an earlier version wrote too).
pub(crate) fn uninstall(path: &Path) -> Result<Change, HookFileError> {
    let markers = PRE_PUSH;
    let Some(meta) = metadata_there(path)? else {
        return Ok(Change::Absent);
    };
    if meta.file_type().is_symlink() {
        return Err(HookFileError::Symlink {
            path: path.to_owned(),
        });
    }
    if is_legacy_copy(path) {
        std::fs::remove_file(path).map_err(io("remove", path))?;
        return Ok(Change::Deleted);
    }
    let Ok(existing) = std::fs::read_to_string(path) else {
        // Not text: not a file maverick wrote.
        return Ok(Change::Absent);
    };
    let (text, change) =
        without_marked(&existing, markers).map_err(|UnclosedBlock| HookFileError::Unbalanced {
            path: path.to_owned(),
            markers,
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

/// What installing `block` (opened and closed by `markers`) into the shell
/// hook at `path` makes of it, written by [`write_planned`]: a new file
/// holds it alone; an existing hook keeps its lines and gets the block
/// after its shebang, or an older block replaced in place. For hooks other
/// than the pre-push guard, which has its own history ([`install`]).
pub(crate) fn plan_marked(
    path: &Path,
    markers: Markers,
    block: &str,
) -> Result<Planned, HookFileError> {
    let Some(meta) = metadata_there(path)? else {
        return Ok(Planned {
            change: Change::Created,
            text: Some(format!("#!/bin/sh\n{block}")),
            mode_from: None,
        });
    };
    if meta.file_type().is_symlink() {
        return Err(HookFileError::Symlink {
            path: path.to_owned(),
        });
    }
    let existing = std::fs::read_to_string(path).map_err(io("read", path))?;
    let unbalanced = |UnclosedBlock| HookFileError::Unbalanced {
        path: path.to_owned(),
        markers,
    };
    without_marked(&existing, markers).map_err(unbalanced)?;
    if let Some(name) = interpreter(&existing).filter(|i| !is_shell(i)) {
        return Err(HookFileError::NotShell {
            path: path.to_owned(),
            interpreter: name,
        });
    }
    let (text, change) = with_marked(&existing, block, markers).map_err(unbalanced)?;
    if change != Change::Unchanged && !executable(&meta) {
        return Err(HookFileError::NotExecutable {
            path: path.to_owned(),
        });
    }
    Ok(Planned {
        change,
        text: Some(text),
        mode_from: Some(meta),
    })
}

/// What taking the block `markers` open out of the hook at `path` makes
/// of it: the file goes when nothing else is left.
pub(crate) fn plan_unmarked(path: &Path, markers: Markers) -> Result<Planned, HookFileError> {
    let Some(meta) = metadata_there(path)? else {
        return Ok(Planned {
            change: Change::Absent,
            text: None,
            mode_from: None,
        });
    };
    if meta.file_type().is_symlink() {
        return Err(HookFileError::Symlink {
            path: path.to_owned(),
        });
    }
    let Ok(existing) = std::fs::read_to_string(path) else {
        return Ok(Planned {
            change: Change::Absent,
            text: None,
            mode_from: None,
        });
    };
    let (text, change) =
        without_marked(&existing, markers).map_err(|UnclosedBlock| HookFileError::Unbalanced {
            path: path.to_owned(),
            markers,
        })?;
    let text = match change {
        Change::Absent => Some(existing),
        _ => text,
    };
    Ok(Planned {
        change,
        text,
        mode_from: Some(meta),
    })
}

/// A hook file's change, planned and not yet written.
#[derive(Debug)]
pub(crate) struct Planned {
    pub change: Change,
    /// The file's whole text after; `None` when it goes (or never was).
    pub text: Option<String>,
    mode_from: Option<std::fs::Metadata>,
}

/// Writes what [`plan_marked`] or [`plan_unmarked`] planned for `path`.
pub(crate) fn write_planned(path: &Path, planned: &Planned) -> Result<(), HookFileError> {
    match (planned.change, &planned.text) {
        (Change::Unchanged | Change::Absent, _) => Ok(()),
        (Change::Deleted, _) | (_, None) => std::fs::remove_file(path).map_err(io("remove", path)),
        (_, Some(text)) => {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(io("create", dir))?;
            }
            write_hook(path, text, planned.mode_from.as_ref())
        }
    }
}

/// The block `markers` open in the hook at `path`: `None` when the file
/// or the block is not there (or the block is not closed).
pub(crate) fn marked_block(path: &Path, markers: Markers) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let (start, end) = find_marked(&text, markers)?.ok()?;
    Some(text[start..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_is_a_shebang_and_the_block() {
        assert!(SCRIPT.starts_with(&format!("#!/bin/sh\n{BEGIN}\n")));
        assert!(SCRIPT.ends_with(&format!("{END}\n")));
        assert!(SCRIPT.contains("\nexec git-maverick hook pre-push \"$@\"\n"));
        assert!(SCRIPT.contains(
            "\ncommand -v maverick-pre-push >/dev/null 2>&1 && exec maverick-pre-push \"$@\"\n"
        ));
        assert!(is_maverick_alone(SCRIPT) && is_maverick_alone(&shared_script()));
        assert!(SHARED_BLOCK.starts_with(BEGIN) && SHARED_BLOCK.ends_with(&format!("{END}\n")));
    }

    #[test]
    fn a_shared_block_of_any_version_lets_other_clones_through() {
        assert!(lets_other_clones_through(&shared_script()));
        let earlier = SHARED_BLOCK.replace(
            "(the directory of its binary; its README's Install says how to get it)",
            "(cargo install git-maverick, or the directory of its binary)",
        );
        assert_ne!(earlier, SHARED_BLOCK);
        assert!(lets_other_clones_through(&format!(
            "#!/bin/sh\necho mine\n{earlier}"
        )));
        assert!(!lets_other_clones_through(SCRIPT));
    }

    #[test]
    fn round_trips_an_existing_hook() {
        let original = "#!/bin/bash\nset -e\necho existing\nexit 0\n";
        let (with, change) = with_block(original, SHARED_BLOCK).unwrap();
        assert_eq!(change, Change::Added);
        assert!(with.starts_with(&format!("#!/bin/bash\n{BEGIN}\n")));
        assert!(with.ends_with("echo existing\nexit 0\n"));
        assert_eq!(
            with_block(&with, SHARED_BLOCK).unwrap().1,
            Change::Unchanged
        );
        let (back, change) = without_block(&with).unwrap();
        assert_eq!(change, Change::Removed);
        assert_eq!(back.as_deref(), Some(original));
    }

    #[test]
    fn a_hook_without_shebang_or_newline() {
        let (with, _) = with_block("#!/bin/sh", SHARED_BLOCK).unwrap();
        assert_eq!(with, shared_script());
        assert_eq!(without_block(&with).unwrap(), (None, Change::Deleted));
        let (with, _) = with_block("echo hi\n", SHARED_BLOCK).unwrap();
        assert!(with.starts_with(BEGIN) && with.ends_with("echo hi\n"));
        assert_eq!(
            without_block(&with).unwrap().0.as_deref(),
            Some("echo hi\n")
        );
    }

    /// The shared block as earlier builds wrote it: the refs read a line
    /// at a time in a shell loop (quadratic in the number of refs).
    fn loop_block() -> String {
        let read_whole = "\t# The pushed refs, read whole: `git push --tags` may send thousands.\n\tmaverick_refs=$(cat) || exit $?\n";
        let a_line_at_a_time = "\tmaverick_refs=\n\twhile IFS= read -r maverick_line || [ -n \"$maverick_line\" ]; do\n\t\tmaverick_refs=\"${maverick_refs:+$maverick_refs\n}$maverick_line\"\n\tdone\n";
        assert!(SHARED_BLOCK.contains(read_whole));
        SHARED_BLOCK.replace(read_whole, a_line_at_a_time)
    }

    #[test]
    fn the_loop_block_of_earlier_versions_is_known_and_replaced() {
        assert!(!SHARED_BLOCK.contains("while "));
        let hook = format!("#!/bin/sh\n{}echo mine\n", loop_block());
        assert!(has_block(&hook) && lets_other_clones_through(&hook));
        let (with, change) = with_block(&hook, SHARED_BLOCK).unwrap();
        assert_eq!(change, Change::Updated);
        assert_eq!(with, format!("#!/bin/sh\n{SHARED_BLOCK}echo mine\n"));
    }

    #[test]
    fn an_old_block_is_replaced_in_place() {
        let old = format!("#!/bin/sh\necho before\n{BEGIN}\nold lines\n{END}\necho after\n");
        let (with, change) = with_block(&old, SHARED_BLOCK).unwrap();
        assert_eq!(change, Change::Updated);
        assert_eq!(
            with,
            format!("#!/bin/sh\necho before\n{SHARED_BLOCK}echo after\n")
        );
        assert!(with_block(&format!("{BEGIN}\nno end\n"), SHARED_BLOCK).is_err());
    }

    #[test]
    fn files_of_earlier_versions_are_maverick_s_alone() {
        let native = format!("#!/usr/bin/env git-maverick\n{BEGIN}\n# earlier\n{END}\n");
        assert!(is_maverick_alone(&native));
        assert!(!is_maverick_alone(&format!("{native}echo mine\n")));
        assert!(!is_maverick_alone("#!/bin/sh\necho hi\n"));
    }

    #[test]
    fn a_legacy_copy_is_a_binary_with_the_mark() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pre-push");
        let mut bytes = b"\x7fELF\x02\x01\x01".to_vec();
        bytes.extend_from_slice(&[0; 64]);
        bytes.extend_from_slice(LEGACY_COPY_MARK);
        std::fs::write(&file, &bytes).unwrap();
        assert!(is_legacy_copy(&file));
        // Text that quotes the mark is no copy; neither is a binary without it.
        std::fs::write(
            &file,
            [b"#!/bin/sh\n# ".as_slice(), LEGACY_COPY_MARK].concat(),
        )
        .unwrap();
        assert!(!is_legacy_copy(&file));
        std::fs::write(&file, b"\x7fELF\x02\x01\x01 another program").unwrap();
        assert!(!is_legacy_copy(&file));
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
