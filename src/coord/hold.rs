//! Holding a claim for the life of a command (SPEC 4, `git maverick run`):
//! the timing rule that makes a lost claim safe to act on, the heartbeat
//! loop that renews the lease from a thread of its own, and the control
//! loop ([`hold`]) that starts the command, acts on what the threads report,
//! stops the command when the claim is lost, and releases on every exit
//! path. Process groups and signals are in `supervise`; the command layer
//! (`commands/run.rs`) claims, calls [`hold`], and prints the [`HoldReport`]
//! it gets back with its exit code.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::config::Settings;
use crate::coord::claims::{self, ClaimsError, ReleaseReason};
use crate::coord::lease::{self, Coordinator, HeartbeatOutcome, IssueView, LeaseError, Renewal};
use crate::coord::supervise::{self, ChildStatus, Group};
use crate::records::claim::ClaimStore;
use crate::records::files::RecordError;
use crate::surface::Surface;
use crate::timefmt::format_duration;

/// What the control loop of a held command hears about, from the threads
/// that watch things.
pub(crate) enum HoldEvent {
    Signal(libc::c_int),
    Exited(std::io::Result<ChildStatus>),
    Beat {
        started: Instant,
        result: Result<HeartbeatOutcome, LeaseError>,
    },
}

#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TimingError {
    #[error("the heartbeat interval must be at least 1s")]
    ZeroHeartbeat,
    #[error(
        "the lease ttl ({}) must be longer than two heartbeat intervals plus the grace period \
         (2 × {} + {} = {}), so that a lost claim is acted on before it can be taken over",
        format_duration(*ttl),
        format_duration(*heartbeat),
        format_duration(*grace),
        format_duration(*needed)
    )]
    TtlTooShort {
        ttl: Duration,
        heartbeat: Duration,
        grace: Duration,
        needed: Duration,
    },
}

/// Checks `ttl > 2 × heartbeat + grace`: the second failed heartbeat and
/// the grace period both end before the lease can go stale, so a command
/// that lost its claim is stopped before anyone can take the claim over.
pub(crate) fn check_timing(
    ttl: Duration,
    heartbeat: Duration,
    grace: Duration,
) -> Result<(), TimingError> {
    if heartbeat.is_zero() {
        return Err(TimingError::ZeroHeartbeat);
    }
    let needed = heartbeat * 2 + grace;
    if ttl <= needed {
        return Err(TimingError::TtlTooShort {
            ttl,
            heartbeat,
            grace,
            needed,
        });
    }
    Ok(())
}

/// Settles the claim every `heartbeatInterval` from `renewed_at` on a
/// fixed schedule, renewing the lease when `renewal` says it is due, until
/// told to stop or the claim is lost. Only reports: the control loop keeps
/// the records, so nothing is written after it decided.
#[allow(clippy::too_many_arguments)]
pub(crate) fn heartbeat_loop(
    surface: &dyn Surface,
    settings: &Settings,
    issues: &[u64],
    generation: u64,
    renewal: Renewal,
    renewed_at: Instant,
    stop: Receiver<Instant>,
    events: Sender<HoldEvent>,
) {
    let interval = settings.heartbeat_interval;
    let clock = &settings.clock;
    let coord = Coordinator::new(surface, settings);
    // Told to stop at a moment, the beats due by then still run (their
    // outcome names the loss); hung up on, none does.
    let mut stop_at: Option<Instant> = None;
    // Returns whether to go on.
    let mut beat_at = |due: Instant| -> bool {
        if stop_at.is_none() {
            match clock.recv_until(&stop, due) {
                Err(RecvTimeoutError::Timeout) => {}
                Ok(at) => stop_at = Some(at),
                Err(RecvTimeoutError::Disconnected) => return false,
            }
        }
        if stop_at.is_some_and(|at| due > at) {
            return false;
        }
        let started = clock.instant();
        let result = coord.heartbeat(issues, Some(generation), renewal);
        let lost = matches!(result, Ok(HeartbeatOutcome::Lost { .. }));
        events.send(HoldEvent::Beat { started, result }).is_ok() && !lost
    };
    // When the surface's lists lag longer than the claim's settle delay,
    // every racer's claim succeeds; the first heartbeat settles again, so it
    // comes a few settle delays after the claim, not a whole interval later.
    let early = settings.settle_delay * FIRST_BEAT_SETTLES;
    if !early.is_zero() && early < interval && !beat_at(renewed_at + early) {
        return;
    }
    let mut due = renewed_at + interval;
    while beat_at(due) {
        due = (due + interval).max(clock.instant());
    }
}

/// How many settle delays after the claim the first heartbeat comes.
const FIRST_BEAT_SETTLES: u32 = 3;

/// What the last heartbeat that kept the claim told, on this process's
/// clock: when it started, and when the lease it saw (written or left as it
/// was) runs out at the earliest.
#[derive(Clone, Copy)]
struct Kept {
    heard: Instant,
    expires: Instant,
}

impl Kept {
    /// A heartbeat that started at `started` found the claim ours, with
    /// the leases of `views`: the surface's time of its read came after
    /// `started`, so each lease runs at least its time left from then.
    fn from_beat(started: Instant, views: &[IssueView]) -> Kept {
        let left = views
            .iter()
            .filter_map(lease::remaining)
            .min()
            .unwrap_or_default();
        Kept {
            heard: started,
            expires: started + left,
        }
    }
}

/// The events of one held command, watched from before any other thread
/// exists: every thread then has the forwarded signals blocked, and one
/// that arrives while the claim is made is acted on as soon as it is held.
pub struct Inbox {
    events: Sender<HoldEvent>,
    inbox: Receiver<HoldEvent>,
}

impl Inbox {
    /// An inbox that hears no signals: for a caller that leaves the
    /// process's signals alone (a test of the protocol, in a test harness
    /// that keeps its own).
    pub fn without_signals() -> Inbox {
        let (events, inbox) = mpsc::channel::<HoldEvent>();
        Inbox { events, inbox }
    }

    /// Blocks the forwarded signals in this thread (and so in every thread
    /// started after) and reports them as events. Call it first.
    pub(crate) fn watch_signals() -> Result<Inbox, HoldError> {
        let inbox = Inbox::without_signals();
        let sender = inbox.events.clone();
        supervise::watch_signals(move |signal| {
            let _ = sender.send(HoldEvent::Signal(signal));
        })
        .map_err(HoldError::WatchSignals)?;
        Ok(inbox)
    }
}

/// Makes the surface the heartbeat thread renews the lease through (a
/// surface is not shared between threads).
pub type SurfaceMaker = Box<dyn FnOnce() -> Option<Box<dyn Surface>> + Send>;

/// A claim just made (or already held), to be held while `command` runs.
pub struct HoldRequest {
    /// The claimed issues, the named one first.
    pub issues: Vec<u64>,
    pub generation: u64,
    /// The claim was this instance's before: it is renewed now and kept at the end.
    pub already_held: bool,
    /// When the claim was asked for: the lease it wrote runs from no later.
    pub claimed_at: Instant,
    /// The command and its arguments.
    pub command: Vec<OsString>,
    /// The release reason when the command exits 0 on its own.
    pub success_reason: ReleaseReason,
    /// Between SIGTERM and SIGKILL once the claim is lost.
    pub grace: Duration,
    /// The command's stdout goes to maverick's stderr (stdout carries one
    /// JSON object under `--json`).
    pub stdout_to_stderr: bool,
}

/// The command was started: what a person is told while it runs.
pub struct Started<'a> {
    pub issue: u64,
    pub generation: u64,
    pub command: &'a [OsString],
    pub pid: u32,
}

/// How a held command ended.
pub enum Ending {
    /// The renewal of a claim held from before found it lost; the command
    /// was not started.
    LostBeforeStart(String),
    /// A signal came before the command started; it was not run.
    SignalBeforeStart(libc::c_int, Released),
    SpawnFailed(std::io::Error, Released),
    Exited {
        status: ChildStatus,
        /// The signal maverick got and forwarded, if any.
        received: Option<libc::c_int>,
        released: Released,
    },
    /// The claim was lost while the command ran: it was stopped.
    Lost {
        reason: String,
        status: ChildStatus,
        /// SIGTERM was not enough within the grace period.
        killed: bool,
        stopped_after: Duration,
        released: Released,
    },
}

/// What the release at the end did: the issues released and the reason,
/// nothing (a claim held before `run`), or the error that stopped it.
pub enum Released {
    Done(Vec<u64>, ReleaseReason),
    Kept,
    Failed(ClaimsError),
}

/// What happened while a claim was held for a command.
pub struct HoldReport {
    pub issues: Vec<u64>,
    pub generation: u64,
    pub command: Vec<OsString>,
    /// Local records that could not be written; nothing stopped for them.
    pub warnings: Vec<RecordError>,
    pub ending: Ending,
}

/// The tool failed while it held the claim (nothing here is a protocol verdict).
#[derive(Debug, thiserror::Error)]
pub enum HoldError {
    #[error("cannot watch for signals: {0}")]
    WatchSignals(std::io::Error),
    #[error("cannot pass stderr to the command: {0}")]
    PassStderr(std::io::Error),
    #[error("cannot watch the command: {0}")]
    WatchCommand(std::io::Error),
    #[error("cannot start the heartbeat: {0}")]
    StartHeartbeat(std::io::Error),
    #[error("cannot wait for the command: {0}")]
    Wait(std::io::Error),
    #[error(transparent)]
    Claims(#[from] ClaimsError),
}

/// The command line as one string, for people.
pub(crate) fn command_line(command: &[OsString]) -> String {
    command
        .iter()
        .map(|a| maverick_core::shell::quote(&a.to_string_lossy()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Holds the claim `req` names while its command runs (SPEC 4): renews a
/// claim held from before, starts the command in a process group of its
/// own, renews the lease from a thread of its own, and releases what it
/// claimed when the command ends. When the claim is lost, or two heartbeats
/// in a row fail, the command's group gets SIGTERM and, after the grace
/// period, SIGKILL, and what is still this instance's is released.
/// `new_surface` makes the heartbeat thread's surface; `on_start` hears
/// that the command started.
pub fn hold(
    coord: &Coordinator<'_>,
    store: ClaimStore,
    inbox: Inbox,
    req: HoldRequest,
    new_surface: SurfaceMaker,
    on_start: &mut dyn FnMut(&Started<'_>),
) -> Result<HoldReport, HoldError> {
    let Inbox { events, inbox } = inbox;
    let mut run = Supervision {
        coord,
        store,
        issues: req.issues,
        generation: req.generation,
        owns_claim: !req.already_held,
        command: req.command,
        grace: req.grace,
        warnings: Vec::new(),
    };
    let kept = if req.already_held {
        match run.renew()? {
            Ok(kept) => kept,
            Err(reason) => return Ok(run.finish(Ending::LostBeforeStart(reason))),
        }
    } else {
        Kept {
            heard: req.claimed_at,
            expires: req.claimed_at + coord.settings.lease_ttl,
        }
    };
    if let Ok(HoldEvent::Signal(signal)) = inbox.try_recv() {
        let released = run.release(ReleaseReason::Abort);
        return Ok(run.finish(Ending::SignalBeforeStart(signal, released)));
    }
    let mut group = match run.spawn(req.stdout_to_stderr)? {
        Ok(group) => group,
        Err(err) => {
            let released = run.release(ReleaseReason::Abort);
            return Ok(run.finish(Ending::SpawnFailed(err, released)));
        }
    };
    on_start(&Started {
        issue: run.issues[0],
        generation: run.generation,
        command: &run.command,
        pid: group.id(),
    });
    {
        let events = events.clone();
        group
            .watch_exit(move |status| {
                let _ = events.send(HoldEvent::Exited(status));
            })
            .map_err(HoldError::WatchCommand)?;
    }
    let heartbeats = run.start_heartbeats(kept.heard, new_surface, events)?;
    match run.watch(&mut group, &inbox, kept)? {
        Watched::Exited { status, received } => {
            let clock = &coord.settings.clock;
            group.stop_stragglers(clock, true, clock.instant() + req.grace);
            heartbeats.stop();
            let reason = match (received, status.success()) {
                (None, true) => req.success_reason,
                _ => ReleaseReason::Abort,
            };
            let released = run.release(reason);
            Ok(run.finish(Ending::Exited {
                status,
                received,
                released,
            }))
        }
        Watched::Lost(mut loss) => {
            let clock = &coord.settings.clock;
            let lost_at = clock.instant();
            run.mark_lost(&loss.to_string());
            // The beats due by now still run, so that the loss names the
            // error of one that failed, whichever of the two threads saw
            // the deadline first; none starts after.
            let finished = heartbeats.stop_after(lost_at);
            let (status, killed, stopped_after) =
                stop(&mut group, &inbox, clock, lost_at, req.grace, &mut loss)?;
            // The command is gone. The heartbeat thread may hang in the
            // network: it is waited for a moment only.
            let _ = clock.recv_until(&finished, clock.instant() + LAST_BEATS);
            while let Ok(event) = inbox.try_recv() {
                loss.hear(event);
            }
            let reason = loss.to_string();
            if loss.changed {
                run.mark_lost(&reason);
            }
            // Whatever is still ours (a surface that only failed to answer)
            // is released; a release never touches another instance's claim.
            let released = run.release(ReleaseReason::Abort);
            Ok(run.finish(Ending::Lost {
                reason,
                status,
                killed,
                stopped_after,
                released,
            }))
        }
    }
}

/// How the watch of a running command ended.
enum Watched {
    Exited {
        status: ChildStatus,
        /// The signal maverick got and forwarded, if any.
        received: Option<libc::c_int>,
    },
    /// The claim is lost, for this reason: the command must not outlive it.
    Lost(Loss),
}

/// How long, once a lost claim's command is gone, maverick waits for the
/// heartbeats that were due by the loss to report, so that the loss names
/// their error.
const LAST_BEATS: Duration = Duration::from_secs(5);

/// Why the claim was lost, as the watch decided it; the error of a
/// heartbeat that was due by then and reports later still joins it.
struct Loss {
    kind: LossKind,
    last_error: Option<String>,
    /// A heartbeat's error joined after the loss was first written down.
    changed: bool,
}

enum LossKind {
    /// The surface says so (another instance holds it, it was released).
    Surface(String),
    /// Two heartbeats in a row failed, both started before the deadline.
    TwoFailed,
    /// No heartbeat renewed the lease for this long.
    Silence(Duration),
}

impl Loss {
    fn new(kind: LossKind, last_error: Option<String>) -> Loss {
        Loss {
            kind,
            last_error,
            changed: false,
        }
    }

    /// A heartbeat that reports after the loss: its error is the last one.
    fn hear(&mut self, event: HoldEvent) {
        if let (
            LossKind::Silence(_),
            HoldEvent::Beat {
                result: Err(err), ..
            },
        ) = (&self.kind, event)
        {
            let err = err.to_string();
            if self.last_error.as_ref() != Some(&err) {
                self.last_error = Some(err);
                self.changed = true;
            }
        }
    }
}

impl std::fmt::Display for Loss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let last = self.last_error.as_deref().unwrap_or_default();
        match &self.kind {
            LossKind::Surface(reason) => f.write_str(reason),
            LossKind::TwoFailed => write!(f, "two heartbeats in a row failed: {last}"),
            LossKind::Silence(silent) => {
                write!(
                    f,
                    "no heartbeat renewed the lease for {:.1}s",
                    silent.as_secs_f64()
                )?;
                match &self.last_error {
                    Some(last) => write!(f, " (last error: {last})"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// The heartbeat thread, told to stop when this is dropped.
struct Heartbeats {
    stop: Sender<Instant>,
    thread: std::thread::JoinHandle<()>,
    /// Hung up on when the thread ends.
    finished: Receiver<()>,
}

impl Heartbeats {
    /// Stops the thread and waits for it.
    fn stop(self) {
        drop(self.stop);
        let _ = self.thread.join();
    }

    /// Lets the thread run the beats due by `at`, then end; returns what
    /// hears it end. The thread is not waited for.
    fn stop_after(self, at: Instant) -> Receiver<()> {
        let _ = self.stop.send(at);
        self.finished
    }
}

/// The claim was lost at `lost_at`: SIGTERM to the command's group and,
/// once the grace period is over, SIGKILL. Returns how the command ended,
/// whether it took SIGKILL, and how long after the loss it was gone.
fn stop(
    group: &mut Group,
    inbox: &Receiver<HoldEvent>,
    clock: &Clock,
    lost_at: Instant,
    grace: Duration,
    loss: &mut Loss,
) -> Result<(ChildStatus, bool, Duration), HoldError> {
    group.signal(libc::SIGTERM);
    let kill_at = lost_at + grace;
    let mut killed = false;
    let status = loop {
        let until = if killed {
            clock.instant() + Duration::from_secs(3600)
        } else {
            kill_at
        };
        match clock.recv_until(inbox, until) {
            Ok(HoldEvent::Exited(status)) => break reap(group, status)?,
            Ok(HoldEvent::Signal(signal)) => group.signal(signal),
            Ok(beat @ HoldEvent::Beat { .. }) => loss.hear(beat),
            Err(RecvTimeoutError::Timeout) if !killed => {
                group.signal(libc::SIGKILL);
                killed = true;
            }
            Err(_) => {}
        }
    };
    let stopped_after = clock.since(lost_at);
    group.stop_stragglers(clock, false, kill_at);
    Ok((status, killed, stopped_after))
}

/// The command's exit status, as its watcher reported it or as reaping it
/// tells (the group leader is reaped either way).
fn reap(
    group: &mut Group,
    reported: std::io::Result<ChildStatus>,
) -> Result<ChildStatus, HoldError> {
    let reaped = group.reap();
    reported.or(reaped).map_err(HoldError::Wait)
}

/// The claim while its command runs.
struct Supervision<'a> {
    coord: &'a Coordinator<'a>,
    store: ClaimStore,
    issues: Vec<u64>,
    generation: u64,
    owns_claim: bool,
    command: Vec<OsString>,
    /// Between SIGTERM and SIGKILL once the claim is lost.
    grace: Duration,
    warnings: Vec<RecordError>,
}

impl Supervision<'_> {
    /// When the holder's heartbeats write the lease: when it is due, with
    /// the time the command needs to stop as the margin.
    fn renewal(&self) -> Renewal {
        Renewal::WhenDue { grace: self.grace }
    }

    /// A claim held from before may have been renewed long ago: settles it
    /// now, and renews its lease if it is due, as every heartbeat does.
    /// Returns what the heartbeat kept, or why the claim is lost.
    fn renew(&self) -> Result<Result<Kept, String>, HoldError> {
        let started = self.coord.settings.clock.instant();
        let outcome = claims::heartbeat(
            self.coord,
            &self.store,
            &self.issues,
            Some(self.generation),
            self.renewal(),
        )?;
        Ok(match outcome {
            HeartbeatOutcome::Renewed { views, .. } => Ok(Kept::from_beat(started, &views)),
            HeartbeatOutcome::Lost { reason, .. } => Err(reason),
        })
    }

    /// Starts the command in a process group of its own, with the claim in
    /// its environment. The outer error is maverick's, the inner the
    /// command's: it could not be started.
    fn spawn(&self, stdout_to_stderr: bool) -> Result<std::io::Result<Group>, HoldError> {
        let mut cmd = std::process::Command::new(&self.command[0]);
        cmd.args(&self.command[1..])
            .env("MAVERICK_ISSUE", self.issues[0].to_string())
            .env("MAVERICK_INSTANCE", self.coord.settings.instance.as_str())
            .env("MAVERICK_GENERATION", self.generation.to_string());
        if stdout_to_stderr {
            let stderr = std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .map_err(HoldError::PassStderr)?;
            cmd.stdout(std::process::Stdio::from(stderr));
        }
        Ok(Group::spawn(&mut cmd))
    }

    /// Starts the thread that renews the lease from `renewed_at` on.
    fn start_heartbeats(
        &self,
        renewed_at: Instant,
        new_surface: SurfaceMaker,
        events: Sender<HoldEvent>,
    ) -> Result<Heartbeats, HoldError> {
        let (stop, stopped) = mpsc::channel::<Instant>();
        let (finishing, finished) = mpsc::channel::<()>();
        let settings = self.coord.settings.clone();
        let issues = self.issues.clone();
        let generation = self.generation;
        let renewal = self.renewal();
        let thread = std::thread::Builder::new()
            .name("heartbeat".to_owned())
            .spawn(move || {
                let _finishing = finishing;
                // Built once already by the caller; cannot fail here.
                if let Some(surface) = new_surface() {
                    heartbeat_loop(
                        surface.as_ref(),
                        &settings,
                        &issues,
                        generation,
                        renewal,
                        renewed_at,
                        stopped,
                        events,
                    );
                }
            })
            .map_err(HoldError::StartHeartbeat)?;
        Ok(Heartbeats {
            stop,
            thread,
            finished,
        })
    }

    /// Acts on what the threads report while the command runs: forwards
    /// signals, keeps the records of each heartbeat, and returns when the
    /// command exits or the claim is lost. A heartbeat that hangs counts as
    /// failed once two intervals (and part of the ttl's spare time) pass
    /// without one that kept the claim, or once the lease it last saw is
    /// too close to running out for the command to be stopped in time (the
    /// heartbeats write the lease only when it is due).
    fn watch(
        &mut self,
        group: &mut Group,
        inbox: &Receiver<HoldEvent>,
        kept: Kept,
    ) -> Result<Watched, HoldError> {
        let settings = self.coord.settings;
        let clock = &settings.clock;
        let grace = self.grace;
        let (ttl, interval) = (settings.lease_ttl, settings.heartbeat_interval);
        // The surface keeps whole seconds, so a lease may be judged to start
        // up to 1s before the write that renewed it: that second is not spare.
        let second = Duration::from_secs(1);
        let spare = (ttl - interval * 2 - grace).saturating_sub(second) / 2;
        let silence = interval * 2 + spare.min(interval / 2);
        let mut kept = kept;
        let mut failures = 0u32;
        let mut last_error: Option<String> = None;
        let mut received: Option<libc::c_int> = None;
        loop {
            // At the deadline, what already arrived (a renewal that landed
            // just in time) still counts. The command is gone a grace
            // period after it, before the lease runs out.
            let deadline = (kept.heard + silence).min(
                kept.expires
                    .checked_sub(grace + second)
                    .unwrap_or(kept.heard),
            );
            let silent = |last_error: Option<String>| {
                Watched::Lost(Loss::new(
                    LossKind::Silence(clock.since(kept.heard)),
                    last_error,
                ))
            };
            let event = match clock.recv_until(inbox, deadline) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => return Ok(silent(last_error)),
                Err(RecvTimeoutError::Disconnected) => {
                    unreachable!("the command watcher holds a sender until it reports")
                }
            };
            match event {
                HoldEvent::Signal(signal) => {
                    received = Some(signal);
                    group.signal(signal);
                }
                HoldEvent::Exited(status) => {
                    let status = reap(group, status)?;
                    return Ok(Watched::Exited { status, received });
                }
                HoldEvent::Beat {
                    started,
                    result: Ok(outcome),
                } => {
                    if let Err(e) = claims::record_heartbeat(
                        &self.store,
                        &settings.instance,
                        &self.issues,
                        &outcome,
                    ) {
                        self.warnings.push(e);
                    }
                    match outcome {
                        HeartbeatOutcome::Renewed { views, .. } => {
                            kept = Kept::from_beat(started, &views);
                            failures = 0;
                            last_error = None;
                        }
                        HeartbeatOutcome::Lost { reason, .. } => {
                            return Ok(Watched::Lost(Loss::new(LossKind::Surface(reason), None)))
                        }
                    }
                }
                HoldEvent::Beat {
                    started,
                    result: Err(err),
                } => {
                    last_error = Some(err.to_string());
                    // A beat that started once the deadline had passed
                    // came too late to count: the silence decided, as it
                    // does when the deadline is seen first.
                    if started >= deadline {
                        return Ok(silent(last_error));
                    }
                    failures += 1;
                    if failures >= 2 {
                        return Ok(Watched::Lost(Loss::new(LossKind::TwoFailed, last_error)));
                    }
                }
            }
        }
    }

    /// Writes down, for the pre-push hook, that the claim is lost.
    fn mark_lost(&mut self, reason: &str) {
        let instance = &self.coord.settings.instance;
        if let Err(e) = claims::mark_lost(&self.store, instance, &self.issues, reason) {
            self.warnings.push(e);
        }
    }

    /// Releases what `run` claimed; a claim held from before is kept.
    fn release(&self, reason: ReleaseReason) -> Released {
        if !self.owns_claim {
            return Released::Kept;
        }
        match claims::release(self.coord, &self.store, &self.issues, reason) {
            Ok(outcome) => Released::Done(outcome.released, reason),
            Err(e) => Released::Failed(e),
        }
    }

    fn finish(self, ending: Ending) -> HoldReport {
        HoldReport {
            issues: self.issues,
            generation: self.generation,
            command: self.command,
            warnings: self.warnings,
            ending,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_claim_is_acted_on_before_the_lease_goes_stale() {
        let s = Duration::from_secs;
        assert_eq!(
            check_timing(s(600), s(0), s(10)),
            Err(TimingError::ZeroHeartbeat)
        );
        assert_eq!(check_timing(s(600), s(60), s(10)), Ok(()));
        // Exactly 2 × heartbeat + grace is not enough: the takeover could race the kill.
        let err = check_timing(s(130), s(60), s(10)).unwrap_err();
        assert_eq!(
            err,
            TimingError::TtlTooShort {
                ttl: s(130),
                heartbeat: s(60),
                grace: s(10),
                needed: s(130)
            }
        );
        assert!(err.to_string().contains("(2 × 1m + 10s = 130s)"), "{err}");
    }
}
