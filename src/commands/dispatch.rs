//! `git maverick dispatch`: the dispatch slot (SPEC 9).

use clap::{Args, Subcommand};

use super::{Context, Outcome};
use crate::cli::{issue_number, GlobalArgs};
use serde::Serialize;

use crate::commands::error::{CommandError, Exit};
use crate::coord::dispatch::{
    DispatchReport, DispatchResult, Dispatcher, HolderKind, ReleaseHow, ReleaseReport, SlotClaim,
    SlotView, Verdict,
};
use crate::timefmt::format_duration;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct DispatchArgs {
    #[command(subcommand)]
    pub command: Option<DispatchCommand>,
    /// The label that puts an issue on the frontier (maverick.frontierLabel, default agent-ready)
    #[arg(long, value_name = "LABEL", global = true)]
    pub frontier_label: Option<String>,
    /// Show what a dispatch would clear and claim, and write nothing
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum DispatchCommand {
    /// Show the slots: who holds them, since when, and what is stale
    Status,
    /// End a cycle: agent-wip comes off when the draft PR opens (the PR gets
    /// agent-pr) or the give-up path relabels the issue
    Release(ReleaseArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ReleaseArgs {
    /// The issue the cycle worked on (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// The cycle's draft PR opened: it takes the slot and gets agent-pr
    #[arg(long, value_name = "N", value_parser = issue_number, conflicts_with = "give_up")]
    pub pr: Option<u64>,
    /// The cycle gave up: the issue leaves the frontier with this label
    #[arg(long, value_name = "LABEL")]
    pub give_up: Option<String>,
}

/// What a `dispatch` subcommand prints with `--json`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum DispatchOutput {
    Dispatch(Box<DispatchReport>),
    Status(SlotView),
    Release(ReleaseReport),
}

pub(crate) fn run(
    global: &GlobalArgs,
    args: DispatchArgs,
) -> Result<Outcome<DispatchOutput>, CommandError> {
    for label in args.frontier_label.iter() {
        check_label(label)?;
    }
    let ctx = Context::load(global)?;
    ctx.report(slots(&ctx, args))
}

fn slots(ctx: &Context, args: DispatchArgs) -> Result<Outcome<DispatchOutput>, CommandError> {
    if ctx.settings.dispatch_slots == 0 {
        return Err(CommandError::usage("dispatch wants at least one slot")
            .hint("set --dispatch-slots N or `git config maverick.dispatchSlots 3`"));
    }
    let surface = ctx.surface()?;
    let dispatcher = Dispatcher::new(
        surface.as_ref(),
        &ctx.settings,
        args.frontier_label.as_deref(),
    );
    Ok(match args.command {
        None => dispatch(&dispatcher, args.dry_run)?.map(|r| DispatchOutput::Dispatch(Box::new(r))),
        Some(DispatchCommand::Status) => status(&dispatcher)?.map(DispatchOutput::Status),
        Some(DispatchCommand::Release(a)) => release(&dispatcher, a)?.map(DispatchOutput::Release),
    })
}

fn check_label(label: &str) -> Result<(), CommandError> {
    if label.trim().is_empty() || label.len() > 50 {
        return Err(CommandError::usage(format!(
            "{label:?} is not a usable label name (1 to 50 characters)"
        )));
    }
    Ok(())
}

fn dispatch(
    dispatcher: &Dispatcher<'_>,
    dry_run: bool,
) -> Result<Outcome<DispatchReport>, CommandError> {
    let report = dispatcher.dispatch(dry_run)?;
    let view = &report.view;
    let exit = match report.result {
        DispatchResult::Dispatched | DispatchResult::WouldDispatch => Exit::Ok,
        DispatchResult::NoSlot => Exit::NoSlot,
        DispatchResult::Idle => Exit::Blocked,
        DispatchResult::Lost => Exit::LostRace,
    };
    let mut o = Outcome::new(exit, report.clone());
    let cleared_verb = if dry_run { "would clear" } else { "cleared" };
    for c in &report.cleared {
        o = o.line(format!(
            "{cleared_verb} stale claim on #{} by {} (claimed at {})",
            c.issue, c.instance_id, c.claimed_at
        ));
    }
    for c in &report.withdrawn {
        o = o.line(format!(
            "withdrew our claim on #{} ({})",
            c.issue,
            verdict_text(c)
        ));
    }
    o = match report.result {
        DispatchResult::Dispatched => o.line(format!(
            "dispatched #{} (slot {} of {}, claim comment {})",
            report.issue.unwrap_or_default(),
            report.slot.unwrap_or_default(),
            view.slots,
            report.comment_id.unwrap_or_default()
        )),
        DispatchResult::WouldDispatch => o.line(format!(
            "would dispatch #{} (slot {} of {}); nothing written",
            report.issue.unwrap_or_default(),
            report.slot.unwrap_or_default(),
            view.slots
        )),
        DispatchResult::NoSlot => no_slot(o, &report, &dispatcher.settings.labels.wip),
        DispatchResult::Idle => o
            .line(format!(
                "nothing to dispatch: {} of {} slots free, no eligible issue labelled {}",
                view.free, view.slots, view.frontier_label
            ))
            .hint(format!(
                "label an open, unassigned, unblocked issue `{}`; `git maverick dispatch status` shows why each frontier issue is skipped",
                view.frontier_label
            )),
        DispatchResult::Lost => o
            .line(format!(
                "every round of its budget lost the settle to an earlier claim ({} withdrawn)",
                report.withdrawn.len()
            ))
            .hint("many dispatchers are racing; run dispatch again"),
    };
    Ok(o)
}

fn no_slot(
    o: Outcome<DispatchReport>,
    report: &DispatchReport,
    wip: &str,
) -> Outcome<DispatchReport> {
    let view = &report.view;
    let mut o = o.line(format!(
        "no free slot: {} of {} busy",
        view.busy, view.slots
    ));
    for line in holder_lines(view, wip) {
        o = o.line(line);
    }
    o.hint("a slot frees when a cycle's draft PR merges or closes, or `git maverick dispatch release ISSUE` ends a cycle")
}

fn verdict_text(c: &SlotClaim) -> String {
    match &c.verdict {
        Verdict::Holds { slot } => format!("holds slot {slot}"),
        Verdict::NoSlot => "no slot: ordered after every held slot".to_owned(),
        Verdict::IssueTaken { by_comment } => {
            format!("an earlier claim (comment {by_comment}) holds the issue")
        }
        Verdict::PullOpen { pr } => format!("its pull request #{pr} is open"),
        Verdict::Stale => "stale".to_owned(),
    }
}

fn holder_lines(view: &SlotView, wip: &str) -> Vec<String> {
    view.holders
        .iter()
        .map(|h| {
            let what = match h.kind {
                HolderKind::PullRequest => format!("pull request #{}", h.number),
                HolderKind::Labelled => {
                    format!("#{} labelled {wip} without a dispatch claim", h.number)
                }
                HolderKind::Claim => {
                    let since = h.since.map_or(String::new(), |s| {
                        format!(" since {s} ({} ago)", format_duration(view.now.since(s)))
                    });
                    format!(
                        "#{} claimed by {}{since}",
                        h.number,
                        h.instance_id.as_ref().map_or("?", |id| id.as_str())
                    )
                }
            };
            format!("  slot {}: {what}", h.slot)
        })
        .collect()
}

fn status(dispatcher: &Dispatcher<'_>) -> Result<Outcome<SlotView>, CommandError> {
    let view = dispatcher.status()?;
    let mut o = Outcome::new(Exit::Ok, view.clone()).line(format!(
        "slots: {} of {} busy, {} free (frontier: {})",
        view.busy, view.slots, view.free, view.frontier_label
    ));
    for line in holder_lines(&view, &dispatcher.settings.labels.wip) {
        o = o.line(line);
    }
    for c in view.claims.iter().filter(|c| !c.holds()) {
        let age = format_duration(view.now.since(c.claimed_at));
        o = o.line(match c.verdict {
            Verdict::Stale => format!(
                "  stale: #{} claimed by {} at {} ({age} ago); the next dispatch clears it",
                c.issue, c.instance_id, c.claimed_at
            ),
            _ => format!(
                "  losing: #{} claimed by {} at {} ({}); not withdrawn yet",
                c.issue,
                c.instance_id,
                c.claimed_at,
                verdict_text(c)
            ),
        });
    }
    let eligible: Vec<String> = view.eligible().map(|n| format!("#{n}")).collect();
    o = o.line(if eligible.is_empty() {
        "next: nothing eligible".to_owned()
    } else {
        format!("next: {}", eligible.join(", "))
    });
    Ok(o)
}

fn release(
    dispatcher: &Dispatcher<'_>,
    args: ReleaseArgs,
) -> Result<Outcome<ReleaseReport>, CommandError> {
    let how = match (args.pr, args.give_up) {
        (Some(pr), _) => ReleaseHow::PullRequest(pr),
        (None, Some(label)) => {
            check_label(&label)?;
            ReleaseHow::GiveUp(label)
        }
        (None, None) => ReleaseHow::Done,
    };
    let report = dispatcher.release(args.issue, &how)?;
    let mut o = Outcome::new(Exit::Ok, report.clone());
    let n = report.issue;
    o = match (&report.pr, &report.give_up) {
        _ if !report.changed => o.line(format!(
            "#{n}: nothing to release (no dispatch claim, no agent-wip)"
        )),
        (Some(pr), _) => o.line(format!(
            "released #{n}: its slot passed to pull request #{pr}"
        )),
        (None, Some(label)) => o.line(format!("released #{n}: gave up, labelled {label}")),
        (None, None) => o.line(format!("released #{n}: back on the frontier")),
    };
    Ok(o)
}
