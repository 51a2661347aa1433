//! Files this clone keeps for itself (claim and branch records, hook files,
//! hydrated state): written whole or not at all, and the error of reading
//! or writing a local record.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};

/// A file operation that failed: what was done, to which path, and why.
/// Every layer's error of a local file carries this one.
#[derive(Debug, thiserror::Error)]
#[error("could not {action} {path}: {source}")]
pub struct IoError {
    pub action: &'static str,
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl IoError {
    /// For `map_err`: `action` on `path` failed.
    pub(crate) fn on(action: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> IoError {
        let path = path.to_owned();
        move |source| IoError {
            action,
            path,
            source,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error(transparent)]
    Io(#[from] IoError),
    #[error("the local record {path} is damaged: {detail}")]
    Damaged {
        path: PathBuf,
        detail: String,
        /// What removing it loses, and how maverick gets it back.
        loses: String,
    },
    /// A record would be named after an id the strict rule refuses
    /// (`InstanceId::parse`): it could name a path outside the records,
    /// so nothing is read or written there.
    #[error("no local record is kept under that id: {0}")]
    NotPathSafe(#[from] maverick_core::ids::IdError),
}

impl RecordError {
    /// The way out of a damaged record: it may be removed, and what that costs.
    pub(crate) fn hint(&self) -> Option<String> {
        match self {
            RecordError::Damaged { path, loses, .. } => Some(format!(
                "it is safe to remove ({}): that loses {loses}",
                shell_rm(path)
            )),
            RecordError::Io(_) | RecordError::NotPathSafe(_) => None,
        }
    }
}

/// `rm -- PATH`, quoted for a POSIX shell.
pub(crate) fn shell_rm(path: &Path) -> String {
    let text = path.to_string_lossy();
    format!("rm -- '{}'", text.replace('\'', "'\\''"))
}

/// Writes through a temporary file and a rename, so a crash leaves the old
/// file or the new one, never half of one.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_file(path, bytes, true)
}

/// The file a replacement of `path` is written to before it is renamed
/// over it: beside it (one file system), named for this process; the
/// directory is made when missing.
pub(crate) fn temp_beside(path: &Path) -> std::io::Result<std::path::PathBuf> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("record");
    Ok(dir.join(format!(".{name}.{}.tmp", std::process::id())))
}

pub(crate) fn replace_file(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let tmp = temp_beside(path)?;
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    if sync {
        file.sync_all()?;
    }
    drop(file);
    std::fs::rename(&tmp, path)
}

// Paths maverick creates or writes inside a repository (`resume`'s
// worktrees, `hydrate`'s `.claude/` files) stay inside it (SPEC 7, issue
// 11): a tracked symlink on the way (`.maverick/worktrees -> /elsewhere`,
// `.claude -> ~`) is refused, never followed, since anyone who can push to
// the main branch can commit one.

#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("{path} is a symbolic link; maverick does not create or write through it (it could lead out of {root})")]
    Symlink { path: PathBuf, root: PathBuf },
    #[error("{path} is not inside {root}")]
    Outside { path: PathBuf, root: PathBuf },
    #[error(transparent)]
    Io(#[from] IoError),
}

/// `root/relative`, checked: `relative` has only plain components, and no
/// part of it that exists is a symbolic link (or anything but a directory,
/// below the last part).
pub(crate) fn inside(root: &Path, relative: &Path) -> Result<PathBuf, ConfineError> {
    let mut path = root.to_owned();
    let parts: Vec<_> = relative.components().collect();
    for (i, part) in parts.iter().enumerate() {
        match part {
            Component::Normal(name) => path.push(name),
            Component::CurDir => continue,
            _ => {
                return Err(ConfineError::Outside {
                    path: root.join(relative),
                    root: root.to_owned(),
                })
            }
        }
        match std::fs::symlink_metadata(&path) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(ConfineError::Symlink {
                    path,
                    root: root.to_owned(),
                })
            }
            Ok(meta) if i + 1 < parts.len() && !meta.is_dir() => {
                return Err(ConfineError::Outside {
                    path,
                    root: root.to_owned(),
                })
            }
            Ok(_) => {}
            // Nothing there yet: nothing below it can be a link either.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
            Err(source) => return Err(IoError::on("read", &path)(source).into()),
        }
    }
    Ok(root.join(relative))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_on_the_way_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".maverick")).unwrap();
        std::os::unix::fs::symlink(dir.path(), root.join(".maverick/worktrees")).unwrap();
        let err = inside(&root, Path::new(".maverick/worktrees/x")).unwrap_err();
        assert!(
            matches!(err, ConfineError::Symlink { ref path, .. } if path.ends_with(".maverick/worktrees"))
        );
        assert!(inside(&root, Path::new(".maverick/other/x")).is_ok());
        assert!(inside(&root, Path::new("../x")).is_err());
        std::fs::write(root.join("file"), "").unwrap();
        assert!(inside(&root, Path::new("file/x")).is_err());
    }
}
