//! Releasing an agent session's claims after the session (SPEC 11).
//!
//! Claude Code gives a plugin's SessionEnd hook about 1.5 s whatever the
//! plugin asks for, and a release on GitHub can take longer. So the hook
//! starts the release in a process of its own session (`setsid`), with no
//! terminal and none of the hook's pipes, that outlives the agent, and
//! returns at once. That process appends what it did to the clone's
//! `.git/maverick/session-end.log`.
//!
//! One release per instance at a time: the hook takes the instance's lock
//! (`flock`, `.git/maverick/session-end-<instance>.lock`) before it starts
//! the release, and the release holds it until it exits. A second
//! SessionEnd meanwhile (a resumed session, same id, that claimed more
//! while the first release still retried) finds the lock taken, asks for
//! another round (`session-end-<instance>.again`) and tries the lock once
//! more; the running release, once done, lets the lock go, and takes it
//! back for a round that reads the claims again when it was asked for one.
//! Asked before the lock is tried, looked at after it is let go: no
//! request falls between the two.

use maverick_core::ids::InstanceId;
use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::fd::AsRawFd as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::clock;

/// The log grows by a few lines a session; past this it starts over (the
/// previous one kept as `session-end.log.1`).
const LOG_LIMIT: u64 = 256 * 1024;

/// The clone's session-end log.
pub(crate) fn log_path(common_dir: &Path) -> PathBuf {
    common_dir.join("maverick").join("session-end.log")
}

/// The lock one instance's release holds.
pub(crate) fn lock_path(common_dir: &Path, instance: &InstanceId) -> PathBuf {
    common_dir
        .join("maverick")
        .join(format!("session-end-{instance}.lock"))
}

/// The request for another round of the release that runs now.
fn again_path(common_dir: &Path, instance: &InstanceId) -> PathBuf {
    common_dir
        .join("maverick")
        .join(format!("session-end-{instance}.again"))
}

fn clear_again(common_dir: &Path, instance: &InstanceId) -> std::io::Result<()> {
    match std::fs::remove_file(again_path(common_dir, instance)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// In the release, once a round is done: lets the lock go, and takes it
/// back when a SessionEnd asked for another round meanwhile (true: read
/// the claims again and release them). False when nobody asked, or another
/// release took the lock (and runs the round itself).
pub(crate) fn another_round(
    common_dir: &Path,
    instance: &InstanceId,
    fd: i32,
) -> std::io::Result<bool> {
    clock::lock(&fd, libc::LOCK_UN)?;
    if !again_path(common_dir, instance).exists() || !clock::try_lock(&fd, libc::LOCK_EX)? {
        return Ok(false);
    }
    clear_again(common_dir, instance)?;
    Ok(true)
}

/// What the hook did.
#[derive(Debug)]
pub(crate) enum Started {
    /// The release runs in process `pid`, logging to `log`.
    Release { pid: u32, log: PathBuf },
    /// A release of this instance is already running.
    AlreadyRunning { log: PathBuf },
}

/// Appends one line to the log, stamped with the time.
pub(crate) fn log(common_dir: &Path, line: &str) -> std::io::Result<()> {
    let mut file = open_log(common_dir)?;
    writeln!(file, "{} {line}", clock::Clock::from_env().now())
}

fn open_log(common_dir: &Path) -> std::io::Result<File> {
    let path = log_path(common_dir);
    if std::fs::metadata(&path).is_ok_and(|m| m.len() > LOG_LIMIT) {
        let mut old = path.clone().into_os_string();
        old.push(".1");
        std::fs::rename(&path, old)?;
    }
    OpenOptions::new().create(true).append(true).open(path)
}

/// Starts the release detached from the session: its own process
/// session, stdin from /dev/null, stdout and stderr to the log, holding
/// the instance's lock until it exits. `release` is given the number of the
/// lock's descriptor and returns the command that releases `instance`'s
/// claims; that command calls [`keep_lock`] first.
pub(crate) fn start(
    common_dir: &Path,
    instance: &InstanceId,
    release: impl FnOnce(i32) -> Command,
) -> std::io::Result<Started> {
    std::fs::create_dir_all(common_dir.join("maverick"))?;
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock_path(common_dir, instance))?;
    let fd = lock.as_raw_fd();
    if !clock::try_lock(&lock, libc::LOCK_EX)? {
        // The running release may have read the claims before this
        // session's last ones: it is asked for another round, unless it
        // finished meanwhile and the lock is free.
        std::fs::write(again_path(common_dir, instance), b"")?;
        if !clock::try_lock(&lock, libc::LOCK_EX)? {
            return Ok(Started::AlreadyRunning {
                log: log_path(common_dir),
            });
        }
    }
    // The release started here reads every claim there is.
    clear_again(common_dir, instance)?;
    let log = open_log(common_dir)?;
    let mut release = release(fd);
    release
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    // SAFETY: between fork and exec only async-signal-safe calls: setsid
    // (no terminal, no process group of the agent's to be signalled with)
    // and fcntl (the child inherits the locked descriptor, so the lock
    // lasts as long as the release).
    unsafe {
        release.pre_exec(move || {
            if libc::setsid() == -1 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = release.spawn()?;
    // This process lets go of its copy; the lock stays with the child's.
    drop(lock);
    Ok(Started::Release {
        pid: child.id(),
        log: log_path(common_dir),
    })
}

/// In the release: the inherited lock stays with this process alone, not
/// with the git processes it starts (a `git gc` git leaves running in the
/// background would otherwise hold it on).
pub(crate) fn keep_lock(fd: i32) -> std::io::Result<()> {
    // SAFETY: fcntl on a descriptor number; a bad one is an error, not UB.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}
