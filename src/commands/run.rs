//! `git maverick run`: hold a claim for the life of a command (SPEC 4).
//!
//! Claim; start CMD in a process group of its own; renew the lease from a
//! timer thread that nothing CMD does can hold up (maverick never reads
//! CMD's output, and that thread writes to no terminal); release when CMD
//! ends. When the claim is lost, or two heartbeats in a row fail, CMD's
//! whole group gets SIGTERM and, after the grace period, SIGKILL; because
//! `ttl > 2 × heartbeat + grace` is checked up front, that happens before
//! another instance can take the claim over. The protocol is
//! `coord::hold`; this file parses the arguments, claims, and prints the
//! report `hold` returns, with its exit code.

use std::ffi::OsString;
use std::time::Duration;

use clap::Args;
use schemars::JsonSchema;
use serde::Serialize;

use super::contract::{ErrorObject, Note};
use super::coord::{self, ClaimArgs, ReleaseReason};
use super::escape::{for_terminal, Newlines};
use super::{Context, Outcome, Warning};
use crate::cli::{lease_duration, GlobalArgs};
use crate::commands::error::{CommandError, ErrorCode, Exit};
use crate::coord::hold::{self, command_line, Ending, HoldReport, HoldRequest, Inbox, Released};
use crate::coord::lease::{ClaimOutcome, Coordinator};
use crate::coord::supervise::{signal_name, ChildStatus};
use maverick_core::ids::InstanceId;

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
pub(crate) struct RunArgs {
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

/// `run ISSUE -- CMD --json`: maverick's object is all of stdout; CMD's
/// own stdout goes to stderr. The exit code is CMD's own status.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub(crate) enum RunOutput {
    Held(Box<HoldOutput>),
    /// The claim was refused: what it came to, and CMD did not run.
    Refused(ClaimOutcome),
}

/// The claim held while CMD ran, and how it ended.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(crate) struct HoldOutput {
    pub issue: u64,
    pub issues: Vec<u64>,
    pub instance_id: InstanceId,
    pub generation: u64,
    pub command: Vec<String>,
    /// CMD's exit status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ChildStatus>,
    /// The signal that maverick got and forwarded, or that stopped it before CMD started.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// Why the claim was lost (exit 7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lost: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub killed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_after_ms: Option<u64>,
    /// CMD could not start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub released: Option<Vec<u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<ReleaseReason>,
    /// This instance held the claim before `run`: kept.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kept: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub release_error: Option<String>,
}

pub(crate) fn run(
    global: &GlobalArgs,
    args: RunArgs,
) -> Result<Outcome<RunOutput, u8>, CommandError> {
    let ctx = Context::load(global)?;
    ctx.report(hold_for(&ctx, global, args))
}

fn hold_for(
    ctx: &Context,
    global: &GlobalArgs,
    args: RunArgs,
) -> Result<Outcome<RunOutput, u8>, CommandError> {
    let settings = &ctx.settings;
    hold::check_timing(settings.lease_ttl, settings.heartbeat_interval, args.grace)?;

    // Before any other thread exists (see `Inbox`).
    let inbox = Inbox::watch_signals()?;

    let surface = ctx.surface()?;
    let coord = Coordinator::new(surface.as_ref(), settings);
    let store = ctx.claims()?;
    let claimed_at = settings.clock.instant();
    let (claimed, refused) = coord::claim(
        ctx,
        &coord,
        args.claim.issue,
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
        return Ok(refused.map(RunOutput::Refused).map_exit(Exit::code));
    };
    let request = HoldRequest {
        issues: views.iter().map(|v| v.issue).collect(),
        generation,
        already_held,
        claimed_at,
        command: args.command,
        success_reason: args.success_reason,
        grace: args.grace,
        // With --json, stdout carries exactly one JSON object (maverick's):
        // the command's own output goes to stderr.
        stdout_to_stderr: global.json,
    };
    let new_surface: hold::SurfaceMaker = {
        let ctx = Context {
            git: ctx.git.clone(),
            settings: settings.clone(),
            warnings: Vec::new(),
            damage: ctx.damage.clone(),
        };
        Box::new(move || ctx.surface().ok())
    };
    let report = hold::hold(&coord, store, inbox, request, new_surface, &mut |started| {
        let line = format!(
            "git maverick: holding #{} (generation {}) while `{}` runs (pid {})",
            started.issue,
            started.generation,
            command_line(started.command),
            started.pid
        );
        eprintln!("{}", for_terminal(&line, Newlines::Escape));
    })?;
    Ok(show(&settings.instance, report))
}

/// What a person (and `--json`) sees of a held command, and the exit code:
/// the command's own, or the protocol's when the claim was lost.
fn show(instance: &InstanceId, report: HoldReport) -> Outcome<RunOutput, u8> {
    let HoldReport {
        issues,
        generation,
        command,
        warnings,
        ending,
    } = report;
    let issue = issues[0];
    let mut shown = Shown {
        output: HoldOutput {
            issue,
            issues,
            instance_id: instance.clone(),
            generation,
            command: command
                .iter()
                .map(|a| a.to_string_lossy().into_owned())
                .collect(),
            ..HoldOutput::default()
        },
        notes: Vec::new(),
    };
    let (exit, mut code, released) = shown.ending(ending, &command_line(&command));
    if let Some(released) = released {
        let failed = shown.released(released, issue);
        // The command's own failure says more; a clean run that left its
        // claim behind is still a failure of the tool.
        if failed && exit != Exit::ClaimLost && code == Some(0) {
            code = Some(Exit::Error.code());
        }
    }
    let mut outcome = Outcome::new(
        code.unwrap_or(exit.code()),
        RunOutput::Held(Box::new(shown.output)),
    );
    for warning in &warnings {
        outcome = outcome.warn(Warning::new(warning.to_string()));
    }
    outcome.notes.extend(shown.notes);
    outcome
}

/// The output and the lines for stderr, as they are built.
struct Shown {
    output: HoldOutput,
    notes: Vec<Note>,
}

impl Shown {
    fn text(&mut self, text: String) {
        self.notes.push(Note::Text(text));
    }

    /// How the command ended: the protocol's exit, the command's own exit
    /// status (when it ran), and what the release at the end did.
    fn ending(&mut self, ending: Ending, line: &str) -> (Exit, Option<u8>, Option<Released>) {
        let hint_lost = || {
            Note::Hint(
                "stop working on this issue and report; do not push to its branch".to_owned(),
            )
        };
        match ending {
            Ending::LostBeforeStart(reason) => {
                self.text(format!("claim lost before the command started: {reason}"));
                self.notes.push(hint_lost());
                self.output.lost = Some(reason);
                (Exit::ClaimLost, None, None)
            }
            Ending::SignalBeforeStart(signal, released) => {
                self.output.signal = Some(signal_name(signal));
                self.text(format!(
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
                self.output.error = Some(ErrorObject {
                    code: ErrorCode::Failed,
                    message: format!("cannot run `{line}`: {err}"),
                    causes: Vec::new(),
                    hints: Vec::new(),
                });
                self.text(format!("error: cannot run `{line}`: {err}"));
                (Exit::Error, Some(code), Some(released))
            }
            Ending::Exited {
                status,
                received,
                released,
            } => {
                self.output.status = Some(status);
                let code = match received {
                    Some(signal) => {
                        self.output.signal = Some(signal_name(signal));
                        self.text(format!(
                            "`{line}` {status} after maverick forwarded {}",
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
                self.text(format!("claim lost: {reason}"));
                self.text(format!(
                    "`{line}` was stopped with {} ({status}, {:.1}s after the loss)",
                    if killed {
                        "SIGKILL after the grace period"
                    } else {
                        "SIGTERM"
                    },
                    stopped_after.as_secs_f64()
                ));
                self.notes.push(hint_lost());
                self.output.lost = Some(reason);
                self.output.status = Some(status);
                self.output.killed = Some(killed);
                self.output.stopped_after_ms = Some(stopped_after.as_millis() as u64);
                (Exit::ClaimLost, None, Some(released))
            }
        }
    }

    /// What the release at the end did; true when it failed.
    fn released(&mut self, released: Released, issue: u64) -> bool {
        match released {
            Released::Done(issues, reason) => {
                if !issues.is_empty() {
                    self.text(format!(
                        "released {} ({})",
                        issues
                            .iter()
                            .map(|n| format!("#{n}"))
                            .collect::<Vec<_>>()
                            .join(", "),
                        reason.as_str()
                    ));
                }
                self.output.released = Some(issues);
                self.output.reason = Some(reason);
                false
            }
            Released::Kept => {
                self.output.released = Some(Vec::new());
                self.output.kept = Some(true);
                self.text(format!(
                    "kept #{issue}: this instance held it before `run`; release it with `git maverick coord release {issue}`"
                ));
                false
            }
            Released::Failed(err) => {
                let err = CommandError::from(err);
                self.output.released = Some(Vec::new());
                self.output.release_error = Some(err.message());
                self.text(format!("{err}"));
                self.notes.push(Note::Hint(format!(
                    "release it by hand with `git maverick coord release {issue} --reason abort`"
                )));
                true
            }
        }
    }
}

fn signal_code(signal: libc::c_int) -> u8 {
    ChildStatus::Signaled(signal).code()
}
