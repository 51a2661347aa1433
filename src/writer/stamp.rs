//! The pushing instance, resolved once and stamped for the pre-push hook.
//!
//! A person's push names no instance in the environment, so the hook must
//! resolve it as every command does (SPEC 2: `maverick.instance`, the agent
//! session, the id kept in the clone), and asking `git config` costs a
//! process on every push. So the resolution ([`crate::config::instance_of_clone`],
//! the one there is) is stamped into `<git dir>/maverick/instance-stamp.json`
//! with what it was derived from: the environment variables git and the
//! resolution read (hashed), and the identity of every configuration file
//! git reads (system, global, the repository's, the worktree's, every file
//! an `include` names, whether it exists or not; `git var` and `git config`
//! name them, nothing here parses git's configuration) and of the id files
//! the resolution falls back to. The hook trusts the stamp only while all of
//! that is unchanged: a few `stat`s instead of a `git config` process.
//!
//! A file is compared by device, inode, size, mode, modification and change
//! time. `git config` replaces a file (a new inode and change time), an
//! editor rewrites it (a new modification time). As git does for its index
//! ("racily clean" entries), a stamp is written only when every file was
//! last modified more than [`SETTLED`] before the resolution started: a
//! change in the same clock tick as the stamp cannot pass for the stamped
//! file. A configuration whose includes depend on the checked-out branch
//! (`includeIf.onbranch:`) is never stamped: the hook asks git every time.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::config::ConfigError;
use crate::git::{ConfigEntry, Git};
use maverick_core::ids::InstanceId;

const FILE: &str = "instance-stamp.json";

/// How long a file must have been left alone before a stamp vouches for it.
const SETTLED: Duration = Duration::from_secs(1);

/// The environment variables the resolution depends on beyond the files:
/// git's configuration variables (`GIT_CONFIG_PARAMETERS` from `git -c`,
/// `GIT_CONFIG_COUNT`/`KEY_n`/`VALUE_n`, `GIT_CONFIG_GLOBAL`, ...), where
/// git finds the user's files, and the instance's own sources.
fn watched_var(name: &str) -> bool {
    name.starts_with("GIT_CONFIG")
        || matches!(
            name,
            "HOME" | "XDG_CONFIG_HOME" | "MAVERICK_INSTANCE" | "MAVERICK_INSTANCE_ID"
        )
        || crate::config::SESSION_VARS.contains(&name)
}

/// The SHA-256 of the watched variables and their values, in name order.
fn environment_digest() -> String {
    use sha2::{Digest, Sha256};
    use std::os::unix::ffi::OsStrExt as _;
    let mut vars: Vec<(std::ffi::OsString, std::ffi::OsString)> = std::env::vars_os()
        .filter(|(name, _)| name.to_str().is_some_and(watched_var))
        .collect();
    vars.sort();
    let mut hash = Sha256::new();
    for (name, value) in vars {
        hash.update(name.as_bytes());
        hash.update(b"=");
        hash.update(value.as_bytes());
        hash.update(b"\0");
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// What a file was when the stamp was written.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct FileState {
    path: PathBuf,
    /// `None`: nothing was there.
    identity: Option<Identity>,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct Identity {
    dev: u64,
    ino: u64,
    mode: u32,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileState {
    fn of(path: &Path) -> FileState {
        use std::os::unix::fs::MetadataExt as _;
        let identity = std::fs::metadata(path).ok().map(|m| Identity {
            dev: m.dev(),
            ino: m.ino(),
            mode: m.mode(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
        });
        FileState {
            path: path.to_owned(),
            identity,
        }
    }

    /// Whether a regular file was modified at `since` or later (a device
    /// such as `/dev/null` has no content to change). The modification
    /// time, which every rewrite sets to the present: a later rewrite can
    /// only match a stamp whose time was the present too.
    fn modified_since(&self, since: SystemTime) -> bool {
        let Some(id) = &self.identity else {
            return false;
        };
        if id.mode & libc::S_IFMT != libc::S_IFREG {
            return false;
        }
        let at = |(secs, nanos): (i64, i64)| {
            let secs = u64::try_from(secs).unwrap_or(0);
            let nanos = u32::try_from(nanos).unwrap_or(0);
            SystemTime::UNIX_EPOCH + Duration::new(secs, nanos)
        };
        at(id.mtime) >= since
    }
}

/// The stamp: the instance a resolution found, and what it read.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
struct InstanceStamp {
    instance_id: String,
    environment: String,
    files: Vec<FileState>,
}

fn stamp_path(git_dir: &Path) -> PathBuf {
    git_dir.join("maverick").join(FILE)
}

/// The instance the stamp in `git_dir` names, when everything it was
/// derived from is as it was; `None` otherwise (the caller resolves).
pub(crate) fn stamped(git_dir: &Path) -> Option<InstanceId> {
    let text = std::fs::read(stamp_path(git_dir)).ok()?;
    let stamp: InstanceStamp = serde_json::from_slice(&text).ok()?;
    let unchanged = stamp.environment == environment_digest()
        && stamp.files.iter().all(|f| FileState::of(&f.path) == *f);
    // Parsed as it enters from disk: a stamp naming no valid id is no stamp.
    unchanged
        .then(|| InstanceId::parse(&stamp.instance_id).ok())
        .flatten()
}

/// This worktree's instance as a person's clone resolves it (SPEC 2, as
/// every command does, through [`crate::config::instance_of_clone`]), and
/// the stamp of it written when it can be trusted later. Only the
/// resolution can fail; a stamp that cannot be written is not written.
pub(crate) fn resolve_and_stamp(
    git: &Git,
    git_dir: Option<&Path>,
    common_dir: &Path,
) -> Result<InstanceId, ConfigError> {
    let started = SystemTime::now();
    let environment = environment_digest();
    let standard = git.standard_config_files();
    let (id, includes) = crate::config::instance_of_clone(git, git_dir)?;
    let git_dir = match git_dir {
        Some(dir) => dir.to_owned(),
        None => git.git_dir()?,
    };
    let files = match standard {
        Ok(Some(files)) => files,
        Ok(None) => {
            tracing::debug!("git names no configuration files (older than 2.42): no stamp");
            return Ok(id);
        }
        Err(e) => {
            tracing::debug!("no stamp of the instance: {e}");
            return Ok(id);
        }
    };
    let Some(watched) = watched_files(files, &includes, common_dir, &git_dir) else {
        tracing::debug!("includes depend on the branch: no stamp of the instance");
        return Ok(id);
    };
    let files: Vec<FileState> = watched.iter().map(|p| FileState::of(p)).collect();
    let settled = started
        .checked_sub(SETTLED)
        .unwrap_or(SystemTime::UNIX_EPOCH);
    if files.iter().any(|f| f.modified_since(settled)) {
        tracing::debug!("a configuration file changed a moment ago: no stamp of the instance");
        let _ = std::fs::remove_file(stamp_path(&git_dir));
        return Ok(id);
    }
    let stamp = InstanceStamp {
        instance_id: id.to_string(),
        environment,
        files,
    };
    let text = serde_json::to_vec_pretty(&stamp).expect("a stamp serializes");
    if let Err(e) = crate::records::files::write_atomically(&stamp_path(&git_dir), &text) {
        tracing::debug!("could not stamp the instance: {e}");
    }
    Ok(id)
}

/// Every file the resolution read or would have read had it existed: git's
/// standard ones (`standard`: system and global), the repository's and the
/// worktree's configuration, the files `includes` name, and the id files
/// after the configuration in SPEC 2's order. `None` when an include
/// depends on the checked-out branch.
fn watched_files(
    standard: Vec<PathBuf>,
    includes: &[ConfigEntry],
    common_dir: &Path,
    git_dir: &Path,
) -> Option<Vec<PathBuf>> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut files = standard;
    files.push(common_dir.join("config"));
    files.push(git_dir.join("config.worktree"));
    for entry in includes {
        if entry
            .key
            .to_ascii_lowercase()
            .starts_with("includeif.onbranch:")
        {
            return None;
        }
        // As git resolves an include's path: `~/` is the home directory, a
        // relative path is relative to the including file.
        let named = match (entry.value.strip_prefix("~/"), &home) {
            (Some(rest), Some(home)) => home.join(rest),
            _ => PathBuf::from(&entry.value),
        };
        let path = if named.is_absolute() {
            named
        } else {
            let including = Path::new(&entry.file);
            // An include from the command line is in the environment's digest.
            let Some(dir) = including.parent().filter(|_| including.is_absolute()) else {
                continue;
            };
            dir.join(named)
        };
        files.push(path);
    }
    files.push(git_dir.join("maverick").join("instance"));
    files.sort();
    files.dedup();
    Some(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_holds_while_its_files_do() {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("config");
        std::fs::write(&config, "[maverick]\n\tinstance = a\n").unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&config)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let files = vec![
            FileState::of(&config),
            FileState::of(&dir.path().join("absent")),
        ];
        assert!(!files
            .iter()
            .any(|f| f.modified_since(old + Duration::from_secs(1))));
        assert!(files[0].modified_since(old));
        let stamp = InstanceStamp {
            instance_id: "a".to_owned(),
            environment: environment_digest(),
            files,
        };
        std::fs::create_dir_all(dir.path().join("maverick")).unwrap();
        let write = |stamp: &InstanceStamp| {
            std::fs::write(stamp_path(dir.path()), serde_json::to_vec(stamp).unwrap()).unwrap()
        };
        write(&stamp);
        assert_eq!(stamped(dir.path()).unwrap(), "a");
        // Another environment, a file that appeared, a file rewritten.
        write(&InstanceStamp {
            environment: "other".to_owned(),
            ..stamp.clone()
        });
        assert_eq!(stamped(dir.path()), None);
        write(&stamp);
        std::fs::write(dir.path().join("absent"), "").unwrap();
        assert_eq!(stamped(dir.path()), None);
        std::fs::remove_file(dir.path().join("absent")).unwrap();
        assert_eq!(stamped(dir.path()).unwrap(), "a");
        std::fs::write(&config, "[maverick]\n\tinstance = b\n").unwrap();
        assert_eq!(stamped(dir.path()), None);
    }

    #[test]
    fn includes_are_watched_where_git_finds_them() {
        let entry = |file: &str, key: &str, value: &str| ConfigEntry {
            scope: "local".to_owned(),
            file: file.to_owned(),
            key: key.to_owned(),
            value: value.to_owned(),
        };
        let includes = [
            entry("/r/.git/config", "include.path", "extra.inc"),
            entry("/etc/x", "includeif.gitdir:/w/.path", "/abs/y"),
            entry("command line:", "include.path", "z"),
        ];
        let files = watched_files(
            Vec::new(),
            &includes,
            Path::new("/r/.git"),
            Path::new("/r/.git"),
        )
        .unwrap();
        assert!(
            files.contains(&PathBuf::from("/r/.git/extra.inc")),
            "{files:?}"
        );
        assert!(files.contains(&PathBuf::from("/abs/y")));
        assert!(files.contains(&PathBuf::from("/r/.git/config")));
        assert!(files.contains(&PathBuf::from("/r/.git/maverick/instance")));
        assert!(!files.iter().any(|f| f.ends_with("z")));
        let on_branch = [entry("/r/.git/config", "includeif.onbranch:main.path", "b")];
        assert_eq!(
            watched_files(Vec::new(), &on_branch, Path::new("/r"), Path::new("/r")),
            None
        );
    }
}
