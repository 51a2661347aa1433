//! Where a remote is, however it is spelled (SPEC 8): the pre-push hook
//! checks a push when its destination is the managed repository, whether the
//! push named it `origin`, another remote, `file://…`, a path with a
//! trailing slash, a relative path, or the ssh URL of an https origin.
//!
//! A location is compared, never a remote's name or URL string: local
//! repositories by their resolved path, network ones by host and path (the
//! scheme, user, port, a `.git` suffix and trailing slashes do not count).

use std::path::{Component, Path, PathBuf};

use maverick_core::remote::{self, strip_git, Location};

/// The normalised location of `url`; a relative local path is taken relative
/// to `base` (the directory git resolves it from: the worktree's top level).
/// What the URL names is the core's one rule ([`remote::locate`]); only
/// resolving a local path, which reads the disk, is done here.
pub(crate) fn normalise(url: &str, base: &Path) -> String {
    match remote::locate(url) {
        Location::Network { host, path } => format!("{host}/{path}"),
        Location::Local { path } => local(Path::new(&path), base),
    }
}

/// The resolved path: symlinks followed where the path exists (git tries
/// `PATH` and then `PATH.git`), `.` and `..` resolved where it does not.
fn local(path: &Path, base: &Path) -> String {
    let resolved = resolve_local(path, base);
    let text = resolved.to_string_lossy();
    let text = text.trim_end_matches('/');
    // A non-bare repository is the same one whether named by its top
    // level or by its `.git` directory.
    let text = text.strip_suffix("/.git").unwrap_or(text);
    format!("file:{}", strip_git(text))
}

/// The repository a local path names, as git finds it: relative to `base`,
/// `PATH` and then `PATH.git`, symlinks followed where it exists, `.` and
/// `..` resolved lexically where it does not.
pub(crate) fn resolve_local(path: &Path, base: &Path) -> PathBuf {
    // An absolute path replaces `base`.
    let joined = base.join(path);
    let mut with_git = joined.clone().into_os_string();
    with_git.push(".git");
    std::fs::canonicalize(&joined)
        .or_else(|_| std::fs::canonicalize(PathBuf::from(with_git)))
        .unwrap_or_else(|_| lexical(&joined))
}

fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_spellings_of_one_repository() {
        let dir = tempfile::tempdir().unwrap();
        let origin = dir.path().join("origin.git");
        std::fs::create_dir_all(&origin).unwrap();
        std::fs::create_dir_all(dir.path().join("clone")).unwrap();
        let want = normalise(origin.to_str().unwrap(), Path::new("/"));
        let base = dir.path().join("clone");
        for url in [
            format!("{}/", origin.display()),
            format!("file://{}", origin.display()),
            format!("file://{}/", origin.display()),
            "../origin.git".to_owned(),
            "../origin".to_owned(),
            format!("{}/clone/../origin.git", dir.path().display()),
        ] {
            assert_eq!(normalise(&url, &base), want, "{url}");
        }
        assert_ne!(normalise("../other.git", &base), want);
    }
}
