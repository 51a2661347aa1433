//! Paths maverick creates or writes inside a repository (`resume`'s
//! worktrees, `hydrate`'s `.claude/` files) stay inside it (SPEC 7, issue
//! 11): a tracked symlink on the way (`.maverick/worktrees -> /elsewhere`,
//! `.claude -> ~`) is refused, never followed, since anyone who can push to
//! the main branch can commit one.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error("{path} is a symbolic link; maverick does not create or write through it (it could lead out of {root})")]
    Symlink { path: PathBuf, root: PathBuf },
    #[error("{path} is not inside {root}")]
    Outside { path: PathBuf, root: PathBuf },
    #[error("could not read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// `root/relative`, checked: `relative` has only plain components, and no
/// part of it that exists is a symbolic link (or anything but a directory,
/// below the last part).
pub fn inside(root: &Path, relative: &Path) -> Result<PathBuf, ConfineError> {
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
            Err(source) => return Err(ConfineError::Io { path, source }),
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
