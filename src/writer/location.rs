//! Where a remote is, however it is spelled (SPEC 8): the pre-push hook
//! checks a push when its destination is the managed repository, whether the
//! push named it `origin`, another remote, `file://…`, a path with a
//! trailing slash, a relative path, or the ssh URL of an https origin.
//!
//! A location is compared, never a remote's name or URL string: local
//! repositories by their resolved path, network ones by host and path (the
//! scheme, user, port, a `.git` suffix and trailing slashes do not count).

use std::path::{Component, Path, PathBuf};

/// The normalised location of `url`; a relative local path is taken relative
/// to `base` (the directory git resolves it from: the worktree's top level).
pub(crate) fn normalise(url: &str, base: &Path) -> String {
    let url = url.trim();
    if let Some((scheme, rest)) = url.split_once("://") {
        let scheme = scheme.to_ascii_lowercase();
        if scheme == "file" {
            // file:///path and file://localhost/path
            let path = rest.strip_prefix("localhost").unwrap_or(rest);
            return local(Path::new(path), base);
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        return network(authority, path);
    }
    // scp-like `[user@]host:path`: a colon before any slash, and not a
    // Windows drive letter (git's own rule in `url_is_local_not_ssh`).
    if let Some((host, path)) = url.split_once(':') {
        let drive = host.len() == 1 && host.chars().all(|c| c.is_ascii_alphabetic());
        if !host.contains('/') && !host.is_empty() && !drive {
            return network(host, path);
        }
    }
    local(Path::new(url), base)
}

/// `host/path`, lowercase host, without user, port, `~`, `.git` or slashes.
fn network(authority: &str, path: &str) -> String {
    let host = authority.rsplit('@').next().unwrap_or(authority);
    let host = match host.strip_prefix('[') {
        // [::1]:22
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => host.split(':').next().unwrap_or(host),
    };
    let path = path.trim_matches('/');
    let path = path.strip_prefix("~/").unwrap_or(path);
    format!("{}/{}", host.to_ascii_lowercase(), strip_git(path))
}

/// The resolved path: symlinks followed where the path exists (git tries
/// `PATH` and then `PATH.git`), `.` and `..` resolved where it does not.
fn local(path: &Path, base: &Path) -> String {
    let joined = if path.is_absolute() {
        path.to_owned()
    } else {
        base.join(path)
    };
    let mut with_git = joined.clone().into_os_string();
    with_git.push(".git");
    let resolved = std::fs::canonicalize(&joined)
        .or_else(|_| std::fs::canonicalize(PathBuf::from(with_git)))
        .unwrap_or_else(|_| lexical(&joined));
    let text = resolved.to_string_lossy();
    let text = text.trim_end_matches('/');
    // A non-bare repository is the same one whether named by its top
    // level or by its `.git` directory.
    let text = text.strip_suffix("/.git").unwrap_or(text);
    format!("file:{}", strip_git(text))
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

fn strip_git(path: &str) -> &str {
    let path = path.trim_end_matches('/');
    path.strip_suffix(".git").unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn network_spellings_of_one_repository() {
        let base = Path::new("/nowhere");
        let want = "github.com/acme/widgets";
        for url in [
            "https://github.com/acme/widgets",
            "https://github.com/acme/widgets.git",
            "https://github.com/acme/widgets/",
            "https://user:token@GitHub.com/acme/widgets.git/",
            "ssh://git@github.com/acme/widgets.git",
            "ssh://git@github.com:22/acme/widgets",
            "git@github.com:acme/widgets.git",
            "github.com:acme/widgets",
            "git://github.com/acme/widgets",
        ] {
            assert_eq!(normalise(url, base), want, "{url}");
        }
        assert_ne!(
            normalise("git@github.com:acme/other.git", base),
            want.to_owned()
        );
        assert_ne!(
            normalise("git@gitlab.com:acme/widgets.git", base),
            want.to_owned()
        );
    }

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
