//! The one clock: every reading of the time and every wait of the product
//! goes through a [`Clock`] handed down from the command layer (in
//! [`Settings`](crate::config::Settings), or to a surface when it is built).
//!
//! In production it is the system's. A test of the real binary sets
//! `MAVERICK_CLOCK_FILE=PATH`, and the clock then runs ahead of the system's
//! by an offset kept in that file, which the test, its fake GitHub and every
//! maverick process it starts share: the test moves time by moving the
//! offset, and no test waits in real time for time to pass. It is a test
//! knob, not a setting.
//!
//! A wait is one of two kinds, and a moved clock tells them apart:
//!
//! - a pause ([`Clock::pause`]): the process lets time pass and does nothing
//!   else meanwhile (a settle delay, a retry's backoff, a rate-limit wait).
//!   A moved clock moves on by the pause and returns at once; the world's
//!   clock moves with it, so a fake GitHub's lag or rate limit sees the time
//!   pass too. Pauses of processes that overlap overlap, as they do in real
//!   time: the clock goes to the latest end, not to their sum.
//! - a wait for a moment ([`Clock::wait_until`], [`Clock::recv_until`]):
//!   the world goes on meanwhile (a heartbeat schedule, a grace period, the
//!   next round of `status --watch`). A moved clock returns when the time
//!   comes, whoever brings it: the test moving the clock, another process's
//!   pause, or real time.
//!
//! A test that must act while a process pauses (take a claim over during
//! its settle delay) starts that process with `MAVERICK_CLOCK_PAUSES=wait`
//! too: its pauses then wait for the time to come, as waits do, and the
//! line a long pause prints ("waiting 90 s for the settle delay") tells the
//! test that the pause began.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::timefmt::Timestamp;

/// The environment variable that selects a moved clock (tests only).
pub const CLOCK_FILE_VAR: &str = "MAVERICK_CLOCK_FILE";

/// With a moved clock, `wait` makes this process's pauses wait for the
/// time to come instead of moving the clock (tests only).
pub const CLOCK_PAUSES_VAR: &str = "MAVERICK_CLOCK_PAUSES";

/// Waits do not pass silently: one that lasts longer than this says so on
/// stderr without `-v`.
pub const ANNOUNCED_WAIT: Duration = Duration::from_secs(2);

/// How often a wait on a moved clock looks whether the clock was moved.
const MOVED_POLL: Duration = Duration::from_millis(10);

/// The time, and every wait. Cheap to clone: clones share one clock.
#[derive(Clone)]
pub struct Clock(Arc<Source>);

enum Source {
    System,
    /// The system's clock run ahead by an offset someone else moves too.
    Moved {
        offset: Offset,
        pauses: Pauses,
    },
}

/// What a pause does on a moved clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pauses {
    /// Moves the clock on (the default).
    Move,
    /// Waits for the time to come, as a wait for a moment does.
    Wait,
}

/// How far a moved clock runs ahead of the system's, in milliseconds.
enum Offset {
    /// Shared between processes: the number, as text, in a file. Readers
    /// take a shared lock, movers an exclusive one (flock).
    File(PathBuf),
    /// One process's own (the protocols' in-process tests).
    Memory(Mutex<i64>),
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.0 {
            Source::System => f.write_str("Clock::system"),
            Source::Moved { offset, pauses } => {
                match offset {
                    Offset::File(path) => write!(f, "Clock::file({})", path.display())?,
                    Offset::Memory(_) => f.write_str("Clock::manual")?,
                }
                match pauses {
                    Pauses::Move => Ok(()),
                    Pauses::Wait => f.write_str(".pauses_wait()"),
                }
            }
        }
    }
}

impl Clock {
    /// The system's clock.
    pub fn system() -> Clock {
        Clock(Arc::new(Source::System))
    }

    /// The clock the environment selects: a moved clock kept in the file
    /// `MAVERICK_CLOCK_FILE` names (whose pauses wait with
    /// `MAVERICK_CLOCK_PAUSES=wait`), else the system's.
    pub fn from_env() -> Clock {
        let Some(path) = std::env::var_os(CLOCK_FILE_VAR).filter(|v| !v.is_empty()) else {
            return Clock::system();
        };
        let pauses = match std::env::var(CLOCK_PAUSES_VAR).as_deref() {
            Ok("wait") => Pauses::Wait,
            _ => Pauses::Move,
        };
        Clock::moved(Offset::File(PathBuf::from(path)), pauses)
    }

    /// A moved clock whose offset is kept in `path` (created by the first
    /// move; no file is no offset).
    pub fn file(path: impl Into<PathBuf>) -> Clock {
        Clock::moved(Offset::File(path.into()), Pauses::Move)
    }

    /// A moved clock of this process alone, at the system's time until
    /// [`Clock::advance`] moves it.
    pub fn manual() -> Clock {
        Clock::moved(Offset::Memory(Mutex::new(0)), Pauses::Move)
    }

    fn moved(offset: Offset, pauses: Pauses) -> Clock {
        Clock(Arc::new(Source::Moved { offset, pauses }))
    }

    /// The wall-clock time, to the second: lease stamps, record stamps.
    pub fn now(&self) -> Timestamp {
        Timestamp(self.unix_millis().div_euclid(1000))
    }

    /// The wall-clock time in milliseconds since the Unix epoch.
    pub fn unix_millis(&self) -> i64 {
        let real = match SystemTime::now().duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_millis()).unwrap_or(i64::MAX),
        };
        real.saturating_add(self.offset_millis())
    }

    /// The monotonic time: what schedules and deadlines are measured on.
    pub fn instant(&self) -> Instant {
        shifted(Instant::now(), self.offset_millis())
    }

    /// How long since `earlier` (an [`Clock::instant`] of this clock).
    pub fn since(&self, earlier: Instant) -> Duration {
        self.instant().saturating_duration_since(earlier)
    }

    /// Lets `pause` pass doing nothing else (see the module's doc).
    pub fn pause(&self, pause: Duration) {
        let until = self.instant() + pause;
        match &*self.0 {
            Source::System => std::thread::sleep(pause),
            Source::Moved {
                pauses: Pauses::Wait,
                ..
            } => self.wait_until(until),
            Source::Moved { offset, .. } => {
                if offset.move_to(until).is_err() {
                    // A test whose clock file cannot be written still gets
                    // the pause, as a wait.
                    self.wait_until(until);
                }
            }
        }
    }

    /// Pauses for `pause`; a pause longer than [`ANNOUNCED_WAIT`] first
    /// prints one line on stderr ("waiting 43 s for GitHub's rate limit,
    /// until 10:42:00Z"), so that a person or agent watching knows the
    /// command is not stuck.
    pub fn wait_announced(&self, pause: Duration, what_for: &str) {
        if pause > ANNOUNCED_WAIT {
            let until = self.now().plus(pause).to_string();
            let clock = until.split_once('T').map_or(until.as_str(), |(_, t)| t);
            eprintln!(
                "waiting {} s for {what_for}, until {clock}",
                pause.as_secs_f64().ceil() as u64
            );
        }
        self.pause(pause);
    }

    /// Waits until the clock reaches `deadline` (see the module's doc).
    pub fn wait_until(&self, deadline: Instant) {
        while let Some(slice) = self.left_until(deadline) {
            std::thread::sleep(slice);
        }
    }

    /// For a wait of one's own (an async one, say): `None` once the clock
    /// has reached `deadline`, else how long to block in real time before
    /// asking again. On the system's clock that is all the time left; on a
    /// moved clock a short while, after which the clock is read again
    /// (someone may have moved it).
    pub fn left_until(&self, deadline: Instant) -> Option<Duration> {
        let left = deadline.saturating_duration_since(self.instant());
        if left.is_zero() {
            return None;
        }
        Some(match &*self.0 {
            Source::System => left,
            Source::Moved { .. } => left.min(MOVED_POLL),
        })
    }

    /// The next message of `inbox`, or `Timeout` once the clock reaches
    /// `deadline`. At the deadline a message already there still counts.
    pub fn recv_until<T>(
        &self,
        inbox: &Receiver<T>,
        deadline: Instant,
    ) -> Result<T, RecvTimeoutError> {
        while let Some(slice) = self.left_until(deadline) {
            match inbox.recv_timeout(slice) {
                Err(RecvTimeoutError::Timeout) => {}
                other => return other,
            }
        }
        inbox.try_recv().map_err(|e| match e {
            TryRecvError::Empty => RecvTimeoutError::Timeout,
            TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
        })
    }

    /// Moves a moved clock `by` on (a test letting time pass). The
    /// system's clock cannot be moved: there it does nothing.
    pub fn advance(&self, by: Duration) -> std::io::Result<()> {
        match &*self.0 {
            Source::System => Ok(()),
            Source::Moved { offset, .. } => offset.update(|millis| {
                millis.saturating_add(i64::try_from(by.as_millis()).unwrap_or(i64::MAX))
            }),
        }
    }

    /// How far this clock runs ahead of the system's, in milliseconds
    /// (what another program on the same moved time is told: libfaketime).
    pub fn offset_millis(&self) -> i64 {
        match &*self.0 {
            Source::System => 0,
            Source::Moved { offset, .. } => offset.read(),
        }
    }
}

/// `instant` moved by `millis`, either way.
fn shifted(instant: Instant, millis: i64) -> Instant {
    let by = Duration::from_millis(millis.unsigned_abs());
    let moved = if millis >= 0 {
        instant.checked_add(by)
    } else {
        instant.checked_sub(by)
    };
    moved.unwrap_or(instant)
}

impl Offset {
    fn read(&self) -> i64 {
        match self {
            Offset::Memory(millis) => *millis.lock().unwrap_or_else(|e| e.into_inner()),
            Offset::File(path) => read_offset_file(path).unwrap_or(0),
        }
    }

    /// Moves the offset so that the clock shows at least `until`.
    fn move_to(&self, until: Instant) -> std::io::Result<()> {
        self.update(|millis| {
            let now = Instant::now();
            let needed = match until.checked_duration_since(now) {
                Some(ahead) => i64::try_from(ahead.as_millis()).unwrap_or(i64::MAX),
                None => -i64::try_from(now.duration_since(until).as_millis()).unwrap_or(i64::MAX),
            };
            // Rounded up: a pause never ends early.
            millis.max(needed.saturating_add(1))
        })
    }

    fn update(&self, change: impl FnOnce(i64) -> i64) -> std::io::Result<()> {
        match self {
            Offset::Memory(millis) => {
                let mut millis = millis.lock().unwrap_or_else(|e| e.into_inner());
                *millis = change(*millis);
                Ok(())
            }
            Offset::File(path) => update_offset_file(path, change),
        }
    }
}

fn read_offset_file(path: &Path) -> std::io::Result<i64> {
    let mut file = File::open(path)?;
    lock(&file, libc::LOCK_SH)?;
    Ok(read_number(&mut file))
}

fn update_offset_file(path: &Path, change: impl FnOnce(i64) -> i64) -> std::io::Result<()> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)?;
    lock(&file, libc::LOCK_EX)?;
    let old = read_number(&mut file);
    let new = change(old);
    if new != old {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(format!("{new}\n").as_bytes())?;
    }
    // Closing the file releases the lock.
    Ok(())
}

fn read_number(file: &mut File) -> i64 {
    let mut text = String::new();
    let _ = file.read_to_string(&mut text);
    text.trim().parse().unwrap_or(0)
}

/// `flock(file, how)`, retried when a signal interrupts it: the one lock
/// on shared files (the clock's offset, GitHub's pacing ledger, an agent
/// session's release). `file` is an open file or a descriptor number
/// (`RawFd`), such as one a process inherited.
pub(crate) fn lock(file: &impl AsRawFd, how: libc::c_int) -> std::io::Result<()> {
    loop {
        // SAFETY: a plain system call on a descriptor this function borrows.
        if unsafe { libc::flock(file.as_raw_fd(), how) } == 0 {
            return Ok(());
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

/// [`lock`] without waiting (`how | LOCK_NB`): false when another holds
/// a lock that conflicts.
pub(crate) fn try_lock(file: &impl AsRawFd, how: libc::c_int) -> std::io::Result<bool> {
    match lock(file, how | libc::LOCK_NB) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EWOULDBLOCK) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_lock_says_whether_it_took_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let open = || File::create(&path).unwrap();
        let (one, two) = (open(), open());
        assert!(try_lock(&one, libc::LOCK_EX).unwrap());
        assert!(!try_lock(&two, libc::LOCK_EX).unwrap());
        // Through its descriptor number as well.
        assert!(!try_lock(&two.as_raw_fd(), libc::LOCK_EX).unwrap());
        lock(&one.as_raw_fd(), libc::LOCK_UN).unwrap();
        assert!(try_lock(&two, libc::LOCK_EX).unwrap());
    }

    #[test]
    fn a_pause_on_a_moved_clock_moves_it_instead_of_waiting() {
        let clock = Clock::manual();
        let (wall, mono) = (clock.unix_millis(), clock.instant());
        let real = Instant::now();
        clock.pause(Duration::from_secs(3600));
        assert!(real.elapsed() < Duration::from_secs(60));
        assert!(clock.since(mono) >= Duration::from_secs(3600));
        assert!(clock.unix_millis() - wall >= 3_600_000);
    }

    #[test]
    fn overlapping_pauses_end_together_and_a_wait_ends_when_the_clock_is_moved() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("clock");
        let (one, two) = (Clock::file(&path), Clock::file(&path));
        let start = one.instant();
        // Two processes that pause side by side: the clock goes to the
        // later end, not to the sum.
        one.pause(Duration::from_secs(10));
        let mark = two.instant();
        two.pause(Duration::from_secs(0));
        assert!(one.since(start) >= Duration::from_secs(10));
        assert!(one.since(start) < Duration::from_secs(15));
        assert!(two.since(mark) < Duration::from_secs(5));

        // A wait for a moment an hour ahead ends when someone moves the clock.
        let (_keep, rx) = std::sync::mpsc::channel::<()>();
        let deadline = one.instant() + Duration::from_secs(3600);
        let waiter = std::thread::spawn(move || one.recv_until(&rx, deadline));
        two.advance(Duration::from_secs(3601)).unwrap();
        assert_eq!(waiter.join().unwrap(), Err(RecvTimeoutError::Timeout));
    }

    #[test]
    fn the_system_clock_cannot_be_moved() {
        let clock = Clock::system();
        let before = clock.now();
        clock.advance(Duration::from_secs(3600)).unwrap();
        assert!(clock.now().since(before) < Duration::from_secs(60));
    }
}
