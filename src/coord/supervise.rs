//! A command that must not outlive a claim: started as the leader of a
//! process group of its own, so that it and everything it starts can be
//! signalled at once, and watched without being reaped, so that the group's
//! id cannot pass to a stranger while we may still signal it.
//!
//! Unix only: process groups, `waitid` and `sigwait` are what make the
//! guarantees possible.

use std::io;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use crate::clock::Clock;

/// How often the members of a group whose leader is gone are looked for.
const STRAGGLER_POLL: Duration = Duration::from_millis(20);

/// The signals `run` forwards to its command.
pub(crate) const FORWARDED: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

fn forwarded_set() -> libc::sigset_t {
    // SAFETY: sigemptyset initialises the set before sigaddset reads it.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for signal in FORWARDED {
            libc::sigaddset(&mut set, signal);
        }
        set
    }
}

/// Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, and so in every
/// thread it starts from now on, and hands each one that arrives to
/// `on_signal` on a thread of its own. Call it before starting any other
/// thread: a thread started earlier would still take the default action
/// (death) for them. Processes started afterwards inherit the mask (git's
/// keep it: a fetch in flight finishes); [`Group::spawn`] clears it for the
/// command.
pub(crate) fn watch_signals(
    mut on_signal: impl FnMut(libc::c_int) + Send + 'static,
) -> io::Result<()> {
    let set = forwarded_set();
    // SAFETY: `set` is initialised; a null old-set pointer is allowed.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    std::thread::Builder::new()
        .name("signals".to_owned())
        .spawn(move || loop {
            let mut signal: libc::c_int = 0;
            // SAFETY: both pointers are valid for the call.
            if unsafe { libc::sigwait(&set, &mut signal) } == 0 {
                on_signal(signal);
            }
        })?;
    Ok(())
}

/// How a command ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChildStatus {
    Exited(i32),
    Signaled(i32),
}

impl ChildStatus {
    /// As a shell reports it: the exit code, or 128 + the signal's number.
    pub(crate) fn code(self) -> u8 {
        match self {
            ChildStatus::Exited(code) => (code & 0xff) as u8,
            ChildStatus::Signaled(signal) => (128 + signal).clamp(0, 255) as u8,
        }
    }

    pub(crate) fn success(self) -> bool {
        self == ChildStatus::Exited(0)
    }

    fn from_exit_status(status: ExitStatus) -> ChildStatus {
        match (status.code(), status.signal()) {
            (Some(code), _) => ChildStatus::Exited(code),
            (None, Some(signal)) => ChildStatus::Signaled(signal),
            (None, None) => ChildStatus::Exited(1),
        }
    }
}

impl std::fmt::Display for ChildStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChildStatus::Exited(code) => write!(f, "exited {code}"),
            ChildStatus::Signaled(signal) => write!(f, "killed by {}", signal_name(*signal)),
        }
    }
}

pub(crate) fn signal_name(signal: libc::c_int) -> String {
    match signal {
        libc::SIGHUP => "SIGHUP".to_owned(),
        libc::SIGINT => "SIGINT".to_owned(),
        libc::SIGKILL => "SIGKILL".to_owned(),
        libc::SIGTERM => "SIGTERM".to_owned(),
        libc::SIGPIPE => "SIGPIPE".to_owned(),
        libc::SIGSEGV => "SIGSEGV".to_owned(),
        libc::SIGABRT => "SIGABRT".to_owned(),
        other => format!("signal {other}"),
    }
}

/// A command running as the leader of its own process group.
pub(crate) struct Group {
    child: Child,
    pgid: libc::pid_t,
    /// Whether the group was given the terminal, to be taken back at the end.
    terminal: bool,
}

/// Whether this process is the terminal's foreground job.
fn owns_terminal() -> bool {
    // SAFETY: plain queries on file descriptor 0.
    unsafe { libc::isatty(0) == 1 && libc::tcgetpgrp(0) == libc::getpgrp() }
}

/// Makes `pgid` the terminal's foreground group. A background group that
/// does this gets SIGTTOU unless it ignores it.
///
/// # Safety
/// Async-signal-safe: callable between fork and exec.
unsafe fn give_terminal(pgid: libc::pid_t) {
    let previous = libc::signal(libc::SIGTTOU, libc::SIG_IGN);
    libc::tcsetpgrp(0, pgid);
    libc::signal(libc::SIGTTOU, previous);
}

impl Group {
    /// Starts `cmd` as the leader of a new process group. When this process
    /// is the terminal's foreground job the new group is given the terminal,
    /// as a shell does for a job it starts, so an interactive command can
    /// read it (and Ctrl-C reaches the command, whose death by SIGINT `run`
    /// then reports as 130).
    pub(crate) fn spawn(cmd: &mut Command) -> io::Result<Group> {
        let terminal = owns_terminal();
        cmd.process_group(0);
        // SAFETY: a plain query, before the fork.
        #[cfg(target_os = "linux")]
        let parent = unsafe { libc::getpid() };
        // SAFETY: the closure only makes async-signal-safe calls.
        unsafe {
            cmd.pre_exec(move || {
                // The command must not outlive `run`, even one killed with
                // SIGKILL that can stop nothing: the kernel kills the command
                // when `run` dies. `run` may already have died between the
                // fork and this call, and then the signal never comes: the
                // child has been reparented, which getppid shows.
                #[cfg(target_os = "linux")]
                {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                        || libc::getppid() != parent
                    {
                        libc::_exit(127);
                    }
                }
                // The signals `run` waits for are blocked in this process,
                // and a child inherits the mask: unblocked, the command dies
                // of a SIGTERM it does not handle, as it would anywhere else.
                let mut empty: libc::sigset_t = std::mem::zeroed();
                libc::sigemptyset(&mut empty);
                libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
                // Both sides hand over the terminal, so neither order of the
                // race lets the command read it from the background.
                if terminal {
                    give_terminal(libc::getpid());
                }
                Ok(())
            });
        }
        let child = cmd.spawn()?;
        let pgid = child.id() as libc::pid_t;
        if terminal {
            // SAFETY: plain calls; SIGTTOU stays ignored so that the terminal
            // can be taken back from the background at the end.
            unsafe {
                libc::signal(libc::SIGTTOU, libc::SIG_IGN);
                libc::tcsetpgrp(0, pgid);
            }
        }
        Ok(Group {
            child,
            pgid,
            terminal,
        })
    }

    pub(crate) fn id(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` to every process of the group.
    pub(crate) fn signal(&self, signal: libc::c_int) {
        // SAFETY: a plain system call; the leader is not reaped before the
        // caller is done signalling (see `watch_exit`).
        unsafe {
            libc::kill(-self.pgid, signal);
        }
    }

    /// Reports the leader's end to `on_exit`, from a thread of its own,
    /// without reaping it: until [`Group::reap`] its id (the group's id)
    /// stays taken, so a signal to the group never reaches a stranger.
    pub(crate) fn watch_exit(
        &self,
        on_exit: impl FnOnce(io::Result<ChildStatus>) + Send + 'static,
    ) -> io::Result<()> {
        let pid = self.pgid as libc::id_t;
        std::thread::Builder::new()
            .name("command".to_owned())
            .spawn(move || on_exit(wait_no_reap(pid)))?;
        Ok(())
    }

    /// Reaps the leader after `watch_exit` reported its end.
    pub(crate) fn reap(&mut self) -> io::Result<ChildStatus> {
        let status = self.child.wait()?;
        self.take_back_terminal();
        Ok(ChildStatus::from_exit_status(status))
    }

    /// Whether any process of the group is alive (or not yet reaped).
    pub(crate) fn has_members(&self) -> bool {
        // SAFETY: signal 0 only checks that the group exists.
        unsafe { libc::kill(-self.pgid, 0) == 0 }
    }

    /// After the leader was reaped: stops what is left of its group, with
    /// SIGTERM when `term` (the caller may have sent it already), then
    /// SIGKILL at `kill_at`. Returns whether anything was left.
    pub(crate) fn stop_stragglers(&self, clock: &Clock, term: bool, kill_at: Instant) -> bool {
        if !self.has_members() {
            return false;
        }
        if term {
            self.signal(libc::SIGTERM);
        }
        // Nothing to wait on for processes that are not our children: poll.
        while clock.instant() < kill_at {
            if !self.has_members() {
                return true;
            }
            clock.wait_until((clock.instant() + STRAGGLER_POLL).min(kill_at));
        }
        self.signal(libc::SIGKILL);
        true
    }

    fn take_back_terminal(&mut self) {
        if std::mem::take(&mut self.terminal) {
            // SAFETY: plain calls; SIGTTOU is ignored (see `spawn`).
            unsafe {
                libc::tcsetpgrp(0, libc::getpgrp());
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.take_back_terminal();
    }
}

fn wait_no_reap(pid: libc::id_t) -> io::Result<ChildStatus> {
    loop {
        // SAFETY: `info` is a valid out-pointer; zeroed is a valid siginfo_t.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let rc =
            unsafe { libc::waitid(libc::P_PID, pid, &mut info, libc::WEXITED | libc::WNOWAIT) };
        if rc == 0 {
            // SAFETY: waitid filled in a SIGCHLD siginfo.
            let status = unsafe { info.si_status() };
            return Ok(match info.si_code {
                libc::CLD_EXITED => ChildStatus::Exited(status),
                _ => ChildStatus::Signaled(status),
            });
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}
