//! Programs on PATH, found as `sh` finds them (`command -v`): the first
//! directory of PATH, in order, holding an executable file of that name;
//! an empty entry is the current directory. No tilde is expanded (POSIX
//! shells, bash as `sh` among them, leave a literal `~` alone).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Whether `path` is a file this user may run (following links).
pub(crate) fn executable_file(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && executable(&m))
}

/// Whether a file's mode lets it run (an execute bit set).
#[cfg(unix)]
pub(crate) fn executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
pub(crate) fn executable(_: &std::fs::Metadata) -> bool {
    true
}

/// Where `program` is on `path` (a PATH value): the PATH entry it was
/// found in and the program's path there.
pub(crate) fn find_on(path: &OsStr, program: &str) -> Option<Found> {
    std::env::split_paths(path)
        .enumerate()
        .map(|(entry, dir)| {
            let dir = if dir.as_os_str().is_empty() {
                PathBuf::from(".")
            } else {
                dir
            };
            Found {
                entry,
                program: dir.join(program),
            }
        })
        .find(|found| executable_file(&found.program))
}

/// [`find_on`] this process's PATH.
pub(crate) fn find_on_path(program: &str) -> Option<PathBuf> {
    find_on(&std::env::var_os("PATH")?, program).map(|found| found.program)
}

/// A program found on PATH.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    /// Which PATH entry (0 the first) it was found in.
    pub entry: usize,
    pub program: PathBuf,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_first_executable_as_sh_does() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let dir = |name: &str| {
            let d = root.path().join(name);
            std::fs::create_dir_all(&d).unwrap();
            d
        };
        let (plain, runnable, empty) = (dir("plain"), dir("runnable"), dir("empty"));
        std::fs::write(plain.join("tool"), "").unwrap();
        std::fs::write(runnable.join("tool"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            runnable.join("tool"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let path = std::env::join_paths([&empty, &plain, &runnable]).unwrap();
        assert_eq!(
            find_on(&path, "tool"),
            Some(Found {
                entry: 2,
                program: runnable.join("tool")
            })
        );
        assert_eq!(find_on(&path, "other"), None);
        // A directory of that name is not a program.
        std::fs::create_dir(empty.join("tool")).unwrap();
        assert_eq!(find_on(&path, "tool").map(|f| f.entry), Some(2));
    }
}
