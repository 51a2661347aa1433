//! `git maverick run`: hold a claim for the life of a command (SPEC 4).
//!
//! Claim; start CMD in a process group of its own; renew the lease from a
//! timer thread that nothing CMD does can hold up (maverick never reads
//! CMD's output, and that thread writes to no terminal); release when CMD
//! ends. When the claim is lost, or two heartbeats in a row fail, CMD's
//! whole group gets SIGTERM and, after the grace period, SIGKILL; because
//! `ttl > 2 × heartbeat + grace` is checked up front, that happens before
//! another instance can take the claim over.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;

use super::coord::{self, ClaimArgs, ReleaseReason};
use super::{Context, Outcome};
use crate::cli::{lease_duration, GlobalArgs};
use crate::coord::claims;
use crate::coord::hold::{self, HoldEvent};
use crate::coord::lease::{ClaimOutcome, Coordinator, HeartbeatOutcome};
use crate::coord::supervise::{signal_name, ChildStatus, Group};
use crate::error::{CommandError, Exit};

#[derive(Debug, Args)]
#[command(after_help = "\
The lease ttl and the heartbeat interval are the global --lease-ttl and \
--heartbeat-interval (maverick.leaseTtl, maverick.heartbeatInterval); the ttl \
must exceed two heartbeat intervals plus the grace period.

A claim this instance already held is renewed while CMD runs and kept \
afterwards; a claim that `run` made is released when CMD ends: `merged` \
(or --success-reason) when CMD exits 0, `abort` otherwise.

Exit status: CMD's own (128+N when a signal N ended it, 130/143/129 when \
maverick itself got SIGINT/SIGTERM/SIGHUP); the codes of `coord claim` when \
the claim is refused; 7 when the claim was lost and CMD was stopped.")]
pub struct RunArgs {
    /// The claim, as `coord claim` takes it
    #[command(flatten)]
    pub claim: ClaimArgs,
    /// The release reason when CMD exits 0
    #[arg(long, value_enum, value_name = "REASON", default_value = "merged")]
    pub success_reason: ReleaseReason,
    /// How long CMD has between SIGTERM and SIGKILL once the claim is lost (at least 1s)
    #[arg(long, value_name = "DURATION", value_parser = lease_duration, default_value = "10s")]
    pub grace: Duration,
    /// The command to run, and its arguments
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

pub fn run(global: &GlobalArgs, args: RunArgs) -> Result<Outcome, CommandError> {
    let ctx = Context::load(global)?;
    let settings = &ctx.settings;
    let (ttl, interval, grace) = (settings.lease_ttl, settings.heartbeat_interval, args.grace);
    hold::check_timing(ttl, interval, grace)?;

    // Before any other thread exists, so that every thread has them blocked;
    // one that arrives while we claim is acted on as soon as we hold it.
    let (events, inbox) = mpsc::channel::<HoldEvent>();
    {
        let events = events.clone();
        crate::coord::supervise::watch_signals(move |signal| {
            let _ = events.send(HoldEvent::Signal(signal));
        })
        .map_err(|e| CommandError::tool(format!("cannot watch for signals: {e}")))?;
    }

    let surface = ctx.surface()?;
    let coord = Coordinator::new(surface.as_ref(), settings);
    let store = ctx.claims()?;
    let claim_started = Instant::now();
    let issue = args.claim.issue;
    let (claimed, refused) = coord::claim(
        &ctx,
        &coord,
        issue,
        args.claim.scope,
        args.claim.branch,
        args.claim.takeover,
    )?;
    let ClaimOutcome::Claimed {
        generation,
        views,
        already_held,
    } = claimed
    else {
        return Ok(refused);
    };
    let issues: Vec<u64> = views.iter().map(|v| v.issue).collect();
    let mut run = Supervision {
        ctx: &ctx,
        coord: &coord,
        store,
        issues,
        generation,
        owns_claim: !already_held,
        command: args.command,
        notes: Vec::new(),
    };

    // A claim held from before may have been renewed long ago: renew it now,
    // so that the lease CMD starts with is a whole ttl.
    let renewed_at = if already_held {
        let started = Instant::now();
        match claims::heartbeat(&coord, &run.store, &run.issues, Some(generation))? {
            HeartbeatOutcome::Renewed { .. } => started,
            HeartbeatOutcome::Lost { reason, .. } => {
                return Ok(run.finish(Ending::LostBeforeStart(reason)));
            }
        }
    } else {
        claim_started
    };

    if let Ok(HoldEvent::Signal(signal)) = inbox.try_recv() {
        let released = run.release(ReleaseReason::Abort);
        return Ok(run.finish(Ending::SignalBeforeStart(signal, released)));
    }

    let mut cmd = std::process::Command::new(&run.command[0]);
    cmd.args(&run.command[1..])
        .env("MAVERICK_ISSUE", issue.to_string())
        .env("MAVERICK_INSTANCE", &settings.instance)
        .env("MAVERICK_GENERATION", generation.to_string());
    if global.json {
        // With --json, stdout carries exactly one JSON object (maverick's):
        // the command's own output goes to stderr.
        let stderr = std::io::stderr()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| CommandError::tool(format!("cannot pass stderr to the command: {e}")))?;
        cmd.stdout(std::process::Stdio::from(stderr));
    }
    let mut group = match Group::spawn(&mut cmd) {
        Ok(group) => group,
        Err(err) => {
            let released = run.release(ReleaseReason::Abort);
            return Ok(run.finish(Ending::SpawnFailed(err, released)));
        }
    };
    eprintln!(
        "git maverick: holding #{issue} (generation {generation}) while `{}` runs (pid {})",
        run.command_line(),
        group.id()
    );
    {
        let events = events.clone();
        group
            .watch_exit(move |status| {
                let _ = events.send(HoldEvent::Exited(status));
            })
            .map_err(|e| CommandError::tool(format!("cannot watch the command: {e}")))?;
    }
    let (stop_heartbeats, stopped) = mpsc::channel::<()>();
    let heartbeats = {
        let events = events.clone();
        let ctx = Context {
            git: ctx.git.clone(),
            settings: settings.clone(),
        };
        let issues = run.issues.clone();
        std::thread::Builder::new()
            .name("heartbeat".to_owned())
            .spawn(move || {
                // Built once already by the caller; cannot fail here.
                if let Ok(surface) = ctx.surface() {
                    hold::heartbeat_loop(
                        surface.as_ref(),
                        &ctx.settings,
                        &issues,
                        generation,
                        renewed_at,
                        stopped,
                        events,
                    );
                }
            })
            .map_err(|e| CommandError::tool(format!("cannot start the heartbeat: {e}")))?
    };
    drop(events);

    // A heartbeat that hangs counts as failed once two intervals (and part
    // of the ttl's spare time) pass without a renewal. The surface keeps
    // whole seconds, so a lease may be judged to start up to 1s before the
    // write that renewed it: that second is not spare.
    let spare = (ttl - interval * 2 - grace).saturating_sub(Duration::from_secs(1)) / 2;
    let silence = interval * 2 + spare.min(interval / 2);
    let mut last_renewed = renewed_at;
    let mut failures = 0u32;
    let mut last_error = String::new();
    let mut received: Option<libc::c_int> = None;

    let lost = loop {
        let deadline = last_renewed + silence;
        let wait = deadline.saturating_duration_since(Instant::now());
        // At the deadline, what already arrived (a renewal that landed just
        // in time) still counts.
        let event = if wait.is_zero() {
            inbox.try_recv().map_err(|_| RecvTimeoutError::Timeout)
        } else {
            inbox.recv_timeout(wait)
        };
        if wait.is_zero() && event.is_err() {
            break format!(
                "no heartbeat renewed the lease for {:.1}s{}",
                last_renewed.elapsed().as_secs_f64(),
                if last_error.is_empty() {
                    String::new()
                } else {
                    format!(" (last error: {last_error})")
                }
            );
        }
        match event {
            Ok(HoldEvent::Signal(signal)) => {
                received = Some(signal);
                group.signal(signal);
            }
            Ok(HoldEvent::Exited(status)) => {
                let status = reap(&mut group, status)?;
                group.stop_stragglers(true, Instant::now() + grace);
                drop(stop_heartbeats);
                let _ = heartbeats.join();
                let reason = match (received, status.success()) {
                    (None, true) => args.success_reason,
                    _ => ReleaseReason::Abort,
                };
                let released = run.release(reason);
                return Ok(run.finish(Ending::Exited {
                    status,
                    received,
                    released,
                }));
            }
            Ok(HoldEvent::Beat { started, result }) => match result {
                Ok(outcome) => {
                    if let Err(e) = claims::record_heartbeat(
                        &run.store,
                        &settings.instance,
                        &run.issues,
                        &outcome,
                    ) {
                        run.notes.push(format!("warning: {e}"));
                    }
                    match outcome {
                        HeartbeatOutcome::Renewed { .. } => {
                            last_renewed = started;
                            failures = 0;
                            last_error.clear();
                        }
                        HeartbeatOutcome::Lost { reason, .. } => break reason,
                    }
                }
                Err(err) => {
                    failures += 1;
                    last_error = CommandError::from(err).message;
                    if failures >= 2 {
                        break format!("two heartbeats in a row failed: {last_error}");
                    }
                }
            },
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                unreachable!("the command watcher holds a sender until it reports")
            }
        }
    };

    // The claim is lost: the command must not outlive it.
    let lost_at = Instant::now();
    if let Err(e) = claims::mark_lost(&run.store, &settings.instance, &run.issues, &lost) {
        run.notes.push(format!("warning: {e}"));
    }
    drop(stop_heartbeats);
    group.signal(libc::SIGTERM);
    let kill_at = lost_at + grace;
    let mut killed = false;
    let status = loop {
        let wait = if killed {
            Duration::from_secs(3600)
        } else {
            kill_at.saturating_duration_since(Instant::now())
        };
        match inbox.recv_timeout(wait) {
            Ok(HoldEvent::Exited(status)) => break reap(&mut group, status)?,
            Ok(HoldEvent::Signal(signal)) => group.signal(signal),
            Ok(HoldEvent::Beat { .. }) => {}
            Err(RecvTimeoutError::Timeout) if !killed => {
                group.signal(libc::SIGKILL);
                killed = true;
            }
            Err(_) => {}
        }
    };
    let stopped_after = lost_at.elapsed();
    group.stop_stragglers(false, kill_at);
    // The heartbeat thread may hang in the network; it is not waited for.
    // Whatever is still ours (a surface that only failed to answer) is
    // released; a release never touches another instance's claim.
    let released = run.release(ReleaseReason::Abort);
    Ok(run.finish(Ending::Lost {
        reason: lost,
        status,
        killed,
        stopped_after,
        released,
    }))
}

fn reap(
    group: &mut Group,
    reported: std::io::Result<ChildStatus>,
) -> Result<ChildStatus, CommandError> {
    let reaped = group.reap();
    reported
        .or(reaped)
        .map_err(|e| CommandError::tool(format!("cannot wait for the command: {e}")))
}

enum Ending {
    LostBeforeStart(String),
    SignalBeforeStart(libc::c_int, Released),
    SpawnFailed(std::io::Error, Released),
    Exited {
        status: ChildStatus,
        received: Option<libc::c_int>,
        released: Released,
    },
    Lost {
        reason: String,
        status: ChildStatus,
        killed: bool,
        stopped_after: Duration,
        released: Released,
    },
}

/// What the release at the end did: the issues released and the reason,
/// nothing (a claim held before `run`), or the error that stopped it.
enum Released {
    Done(Vec<u64>, ReleaseReason),
    Kept,
    Failed(CommandError),
}

struct Supervision<'a> {
    ctx: &'a Context,
    coord: &'a Coordinator<'a>,
    store: crate::coord::record::ClaimStore,
    issues: Vec<u64>,
    generation: u64,
    owns_claim: bool,
    command: Vec<OsString>,
    notes: Vec<String>,
}

impl Supervision<'_> {
    fn command_line(&self) -> String {
        self.command
            .iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Releases what `run` claimed; a claim held from before is kept.
    fn release(&self, reason: ReleaseReason) -> Released {
        if !self.owns_claim {
            return Released::Kept;
        }
        match claims::release(self.coord, &self.store, &self.issues, reason.as_str()) {
            Ok(outcome) => Released::Done(outcome.released, reason),
            Err(e) => Released::Failed(e.into()),
        }
    }

    fn finish(self, ending: Ending) -> Outcome {
        let issue = self.issues[0];
        let mut json = json!({
            "issue": issue,
            "issues": self.issues,
            "instance_id": self.ctx.settings.instance,
            "generation": self.generation,
            "command": self.command.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>(),
        });
        let mut notes = Vec::new();
        let (exit, code, released) = match ending {
            Ending::LostBeforeStart(reason) => {
                json["lost"] = json!(reason);
                notes.push(format!("claim lost before the command started: {reason}"));
                notes.push(
                    "hint: stop working on this issue and report; do not push to its branch"
                        .to_owned(),
                );
                (Exit::ClaimLost, None, None)
            }
            Ending::SignalBeforeStart(signal, released) => {
                json["signal"] = json!(signal_name(signal));
                notes.push(format!(
                    "{} before the command started; it was not run",
                    signal_name(signal)
                ));
                (Exit::Error, Some(signal_code(signal)), Some(released))
            }
            Ending::SpawnFailed(err, released) => {
                let code = if err.kind() == std::io::ErrorKind::NotFound {
                    127
                } else {
                    126
                };
                // The contract's error object (README "JSON output").
                json["error"] = json!({
                    "code": "failed",
                    "message": format!("cannot run `{}`: {err}", self.command_line()),
                    "causes": [],
                    "hints": [],
                });
                notes.push(format!(
                    "error: cannot run `{}`: {err}",
                    self.command_line()
                ));
                (Exit::Error, Some(code), Some(released))
            }
            Ending::Exited {
                status,
                received,
                released,
            } => {
                json["status"] = json!(status);
                let code = match received {
                    Some(signal) => {
                        json["signal"] = json!(signal_name(signal));
                        notes.push(format!(
                            "`{}` {status} after maverick forwarded {}",
                            self.command_line(),
                            signal_name(signal)
                        ));
                        signal_code(signal)
                    }
                    None => status.code(),
                };
                let exit = if code == 0 { Exit::Ok } else { Exit::Error };
                (exit, Some(code), Some(released))
            }
            Ending::Lost {
                reason,
                status,
                killed,
                stopped_after,
                released,
            } => {
                json["lost"] = json!(reason);
                json["status"] = json!(status);
                json["killed"] = json!(killed);
                json["stopped_after_ms"] = json!(stopped_after.as_millis() as u64);
                notes.push(format!("claim lost: {reason}"));
                notes.push(format!(
                    "`{}` was stopped with {} ({status}, {:.1}s after the loss)",
                    self.command_line(),
                    if killed {
                        "SIGKILL after the grace period"
                    } else {
                        "SIGTERM"
                    },
                    stopped_after.as_secs_f64()
                ));
                notes.push(
                    "hint: stop working on this issue and report; do not push to its branch"
                        .to_owned(),
                );
                (Exit::ClaimLost, None, Some(released))
            }
        };
        let mut code = code;
        match released {
            Some(Released::Done(issues, reason)) => {
                json["released"] = json!(issues);
                json["reason"] = json!(reason.as_str());
                if !issues.is_empty() {
                    notes.push(format!(
                        "released {} ({})",
                        issues
                            .iter()
                            .map(|n| format!("#{n}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        reason.as_str()
                    ));
                }
            }
            Some(Released::Kept) => {
                json["released"] = json!([]);
                json["kept"] = json!(true);
                notes.push(format!(
                    "kept #{issue}: this instance held it before `run`; release it with `git maverick coord release {issue}`"
                ));
            }
            Some(Released::Failed(err)) => {
                json["released"] = json!([]);
                json["release_error"] = json!(err.message);
                notes.push(format!("{err}"));
                notes.push(format!(
                    "hint: release it by hand with `git maverick coord release {issue} --reason abort`"
                ));
                // The command's own failure says more; a clean run that
                // left its claim behind is still a failure of the tool.
                if exit != Exit::ClaimLost && code == Some(0) {
                    code = Some(Exit::Error.code());
                }
            }
            None => {}
        }
        let mut outcome = Outcome::new(exit, json);
        outcome.status = code;
        outcome.notes = self.notes;
        outcome.notes.extend(notes);
        outcome
    }
}

fn signal_code(signal: libc::c_int) -> u8 {
    ChildStatus::Signaled(signal).code()
}
