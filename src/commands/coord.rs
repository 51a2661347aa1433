//! `git maverick coord`: claims and leases (SPEC 4).

use std::time::Duration;

use clap::builder::PossibleValue;
use clap::{Args, Subcommand, ValueEnum};
use schemars::JsonSchema;
use serde::Serialize;

use super::{Context, Outcome, Warning};
use crate::cli::{issue_number, GlobalArgs};
use crate::commands::error::{CommandError, Exit};
use crate::config::SurfaceKind;
use crate::coord::claims::{self, ClaimReport, ScopeClaim};
use crate::coord::lease::{
    ClaimOutcome, Coordinator, Decision, HeartbeatOutcome, IssueView, ReleaseOutcome, Renewal,
};
use crate::timefmt::{format_duration, human_duration};
use maverick_core::ids::InstanceId;

#[derive(Debug, Args)]
pub(crate) struct CoordArgs {
    #[command(subcommand)]
    pub command: CoordCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CoordCommand {
    /// Show who holds an issue; the exit code is the decision
    /// (0 free or ours, 3 blocked, 4 held live, 5 held stale or ours lapsed)
    Read(IssueArg),
    /// Claim an issue (and its scope): label, claim, lease, settle
    Claim(ClaimArgs),
    /// Settle this instance's claim again and keep its lease (exit 7 when
    /// the claim is lost); the lease is written only when it needs it
    Heartbeat(HeartbeatArgs),
    /// Release this instance's claim; never another instance's
    Release(ReleaseArgs),
    /// Release every claim this instance holds by its local records
    /// (for session-end hooks); never another instance's
    ReleaseAll(ReleaseAllArgs),
    /// Take over an issue whose lease went stale
    Takeover(TakeoverArgs),
    /// Mark an issue blocked by another (adds the blocked-by:#N label)
    Block(BlockArgs),
    /// Clear a block (removes the blocked-by:#N label)
    Unblock(BlockArgs),
    /// Add or remove any labels
    #[command(subcommand)]
    Label(LabelCommand),
    /// Reset one issue whose record on the git surface is damaged, so it
    /// is free again (the old record is kept under a backup ref)
    Reset(ResetArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ResetArgs {
    /// The issue number (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// Reset a record that is readable too, dropping its claims, labels
    /// and comments (kept under the backup ref all the same)
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Every heartbeat reads the issue and settles the claim again. It writes the \
lease (a comment edit on GitHub, which GitHub's content limit may count) \
only when too little of it is left for two more heartbeats and a margin: \
at most 2 × heartbeatInterval plus half an interval (300 s with the \
defaults). `written` in the JSON lists the issues it wrote.")]
pub(crate) struct HeartbeatArgs {
    /// The issue number (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// Write the lease now, a whole leaseTtl from now, even when it has time
    /// enough left
    #[arg(long)]
    pub renew: bool,
}

#[derive(Debug, Args)]
pub(crate) struct IssueArg {
    /// The issue number (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
}

#[derive(Debug, Args)]
pub(crate) struct ClaimArgs {
    /// The issue number (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// More issues claimed with it: a wave of stories, or an epic's stories
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', value_parser = issue_number)]
    pub scope: Vec<u64>,
    /// The branch this claim writes to (the pre-push hook guards it)
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
    /// Take the issue over when its lease is stale (instead of exit 5)
    #[arg(long)]
    pub takeover: bool,
}

#[derive(Debug, Args)]
pub(crate) struct TakeoverArgs {
    /// The issue number (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// More issues taken over with it
    #[arg(long, value_name = "N,N,...", value_delimiter = ',', value_parser = issue_number)]
    pub scope: Vec<u64>,
    /// The branch this claim writes to
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
}

pub(crate) use crate::coord::claims::ReleaseReason;

/// The release reasons as flags take them (`--reason`, `--success-reason`).
impl ValueEnum for ReleaseReason {
    fn value_variants<'a>() -> &'a [Self] {
        &ReleaseReason::ALL
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            ReleaseReason::LostRace => None,
            _ => Some(PossibleValue::new(self.as_str())),
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct ReleaseArgs {
    /// The issue number (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// Why the work ends
    #[arg(long, value_enum, default_value = "abort")]
    pub reason: ReleaseReason,
}

#[derive(Debug, Args)]
pub(crate) struct ReleaseAllArgs {
    /// Why the work ends
    #[arg(long, value_enum, default_value = "abort")]
    pub reason: ReleaseReason,
}

#[derive(Debug, Args)]
pub(crate) struct BlockArgs {
    /// The issue that waits
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// The issue it waits for
    #[arg(long, value_name = "N", value_parser = issue_number)]
    pub by: u64,
}

#[derive(Debug, Subcommand)]
pub(crate) enum LabelCommand {
    /// Add labels to an issue
    Add(LabelArgs),
    /// Remove labels from an issue
    Remove(LabelArgs),
}

#[derive(Debug, Args)]
pub(crate) struct LabelArgs {
    /// The issue number (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// The labels
    #[arg(required = true)]
    pub labels: Vec<String>,
}

/// `coord read --json`: the issue's snapshot and decision.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ReadOutput {
    #[serde(flatten)]
    pub view: IssueView,
    pub instance_id: InstanceId,
    pub surface: SurfaceKind,
}

/// `coord release-all --json`: every claim of this instance by its local
/// records.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ReleaseAllOutput {
    #[serde(flatten)]
    pub outcome: ReleaseOutcome,
    pub instance_id: InstanceId,
}

/// `coord block|unblock|label --json`: the issue's labels afterwards.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct LabelOutput {
    pub issue: u64,
    pub labels: Vec<String>,
}

/// What a `coord` subcommand prints with `--json`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum CoordOutput {
    Read(Box<ReadOutput>),
    Claim(ClaimOutcome),
    Heartbeat(HeartbeatOutcome),
    Release(ReleaseOutcome),
    ReleaseAll(ReleaseAllOutput),
    Label(LabelOutput),
    Reset(crate::surface::IssueReset),
}

pub(crate) fn run(
    global: &GlobalArgs,
    args: CoordArgs,
) -> Result<Outcome<CoordOutput>, CommandError> {
    let ctx = Context::load(global)?;
    ctx.report(coord(&ctx, args))
}

fn coord(ctx: &Context, args: CoordArgs) -> Result<Outcome<CoordOutput>, CommandError> {
    let surface = ctx.surface()?;
    let coord = Coordinator::new(surface.as_ref(), &ctx.settings);
    let labels = &ctx.settings.labels;
    Ok(match args.command {
        CoordCommand::Read(a) => {
            read(ctx, &coord, a.issue)?.map(|r| CoordOutput::Read(Box::new(r)))
        }
        CoordCommand::Claim(a) => {
            let (_, shown) = claim(ctx, &coord, a.issue, a.scope, a.branch, a.takeover)?;
            keep_alive_note(ctx, a.issue, shown).map(CoordOutput::Claim)
        }
        CoordCommand::Takeover(a) => {
            let (_, shown) = claim(ctx, &coord, a.issue, a.scope, a.branch, true)?;
            keep_alive_note(ctx, a.issue, shown).map(CoordOutput::Claim)
        }
        CoordCommand::Heartbeat(a) => {
            let renewal = if a.renew {
                Renewal::Now
            } else {
                Renewal::WHEN_DUE
            };
            heartbeat(ctx, &coord, a.issue, renewal)?.map(CoordOutput::Heartbeat)
        }
        CoordCommand::Release(a) => {
            release(ctx, &coord, a.issue, a.reason)?.map(CoordOutput::Release)
        }
        CoordCommand::ReleaseAll(a) => {
            release_all(ctx, &coord, a.reason)?.map(CoordOutput::ReleaseAll)
        }
        CoordCommand::Block(a) => relabel(&coord, a.issue, vec![labels.blocked_by(a.by)], vec![])?,
        CoordCommand::Unblock(a) => {
            relabel(&coord, a.issue, vec![], vec![labels.blocked_by(a.by)])?
        }
        CoordCommand::Label(LabelCommand::Add(a)) => relabel(&coord, a.issue, a.labels, vec![])?,
        CoordCommand::Label(LabelCommand::Remove(a)) => relabel(&coord, a.issue, vec![], a.labels)?,
        CoordCommand::Reset(a) => reset(surface.as_ref(), a.issue, a.force)?,
    })
}

/// `coord reset`: the way out of one damaged issue record.
fn reset(
    surface: &dyn crate::surface::Surface,
    issue: u64,
    force: bool,
) -> Result<Outcome<CoordOutput>, CommandError> {
    let reset = surface.reset_issue(issue, force)?;
    let why = if reset.was_damaged {
        "it was damaged"
    } else {
        "forced"
    };
    let lines = [
        format!("#{issue}: reset {} ({why}); it is free", reset.refname),
        format!("the old record is kept at {}", reset.backup),
    ];
    let mut outcome = Outcome::new(Exit::Ok, CoordOutput::Reset(reset));
    for line in lines {
        outcome = outcome.line(line);
    }
    Ok(outcome)
}

/// `coord read`'s exit code for each verdict (SPEC 10). A lease of ours
/// that lapsed is not a live hold: it exits as a stale one does, since it
/// is one (anyone may take it over), though its holder may re-take it.
fn decision_exit(decision: Decision) -> Exit {
    match decision {
        Decision::Free | Decision::Ours => Exit::Ok,
        Decision::Blocked => Exit::Blocked,
        Decision::Held => Exit::HeldLive,
        Decision::Stale | Decision::Lapsed => Exit::HeldStale,
    }
}

/// What a claim a command made (not `run`, which renews it) tells its
/// holder: how long the lease lasts and what keeps it alive, so that a
/// person's claim never lapses unseen.
fn keep_alive_note(
    ctx: &Context,
    issue: u64,
    shown: Outcome<ClaimOutcome>,
) -> Outcome<ClaimOutcome> {
    let ClaimOutcome::Claimed { views, .. } = &shown.output else {
        return shown;
    };
    let until = views.first().and_then(|v| v.expires_at);
    let until = until.map_or_else(String::new, |at| format!(" (until {at})"));
    shown.note(format!(
        "note: the lease lasts {}{until}: `git maverick task done` and \
         `git maverick coord heartbeat {issue}` keep it (a heartbeat writes the lease once it is \
         due; `--renew` writes it now), and `git maverick run {issue} -- CMD` \
         keeps it alive while CMD runs; if it lapses, `git maverick coord claim {issue}` takes \
         it back while nobody else has",
        format_duration(ctx.settings.lease_ttl)
    ))
}

/// One line a person reads about one issue.
pub(crate) fn describe(view: &IssueView) -> String {
    let n = view.issue;
    let holder = view.holder.as_ref();
    let who = holder.map_or_else(|| "nobody".to_owned(), |h| h.who());
    let generation = view.generation;
    let expiry = match (view.expires_at, crate::coord::lease::remaining(view)) {
        (Some(at), Some(left)) if !left.is_zero() => {
            format!("lease until {at} ({} left)", human_duration(left))
        }
        (Some(at), _) => format!("lease expired at {at}"),
        _ => String::new(),
    };
    if let Some(pull) = &view.pull_request {
        return format!("#{n}: in progress by {}", pull.describe());
    }
    match view.decision() {
        Decision::Free => format!("#{n}: free"),
        Decision::Ours => format!("#{n}: ours (generation {generation}), {expiry}"),
        Decision::Lapsed => {
            format!("#{n}: ours (generation {generation}) but lapsed: {expiry}")
        }
        Decision::Blocked => format!(
            "#{n}: blocked by {}",
            view.blocked_by
                .iter()
                .map(|b| format!("#{b}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Decision::Held => format!("#{n}: held by {who} (generation {generation}), {expiry}"),
        Decision::Stale => {
            format!("#{n}: held by {who} (generation {generation}) but stale: {expiry}")
        }
    }
}

/// What gets a person past an open pull request that closes `issue`.
fn pull_hint(view: &IssueView) -> Option<String> {
    let pull = view.pull_request.as_ref()?;
    if pull.from_fork {
        // A fork's branch is not this repository's: nobody here can switch
        // to it and push.
        return Some(format!(
            "pull request #{} closes #{} from a fork: review and merge it, or close it to work on #{} \
             afresh; to build on its work, fetch it (`git fetch origin pull/{}/head:pr-{}`) and open a \
             pull request of your own that supersedes it",
            pull.number, view.issue, view.issue, pull.number, pull.number
        ));
    }
    Some(format!(
        "pull request #{} closes #{}: review it, or close it to work on #{} afresh; to carry its \
         work on, check out its branch (`git switch {}`) and claim from there",
        pull.number, view.issue, view.issue, pull.head_ref
    ))
}

fn read(
    ctx: &Context,
    coord: &Coordinator<'_>,
    issue: u64,
) -> Result<Outcome<ReadOutput>, CommandError> {
    let own = claims::own_branches(&ctx.git, None)?;
    let view = claims::read_with_pulls(coord, &[issue], &own)?.remove(0);
    let exit = decision_exit(view.decision());
    let warnings: Vec<Warning> = view
        .clock_skew
        .iter()
        .map(|s| {
            Warning::new(format!(
                "{}'s clock runs {} ahead of this one (it stamped {}; maverick.maxClockSkew is {}): \
                 one of the two clocks is wrong; leases are judged by the stamps as written, so fix it (NTP)",
                s.instance_id,
                ahead(s.ahead_secs),
                s.stamp,
                format_duration(ctx.settings.max_clock_skew),
            ))
        })
        .collect();
    let line = describe(&view);
    let decision = view.decision();
    let pull_hint = pull_hint(&view);
    let orphan_label = view.orphan_label;
    let output = ReadOutput {
        view,
        instance_id: ctx.settings.instance.clone(),
        surface: ctx.settings.surface,
    };
    let mut outcome = Outcome::new(exit, output)
        .line(line)
        .own_warnings(warnings.clone());
    for w in warnings {
        outcome = outcome.warn(w);
    }
    outcome = match decision {
        Decision::Held => outcome.hint(pull_hint.unwrap_or_else(|| {
            "someone else is working on this issue; pick another or wait".to_owned()
        })),
        Decision::Stale => outcome.hint(format!(
            "take it over with `git maverick coord takeover {issue}`"
        )),
        Decision::Lapsed => outcome.hint(format!(
            "this instance's lease lapsed, so anyone may take #{issue} over: stop pushing to it; \
             `git maverick coord claim {issue}` takes it back while nobody else has"
        )),
        Decision::Blocked => outcome.hint("work on the blocking issues first"),
        _ => outcome,
    };
    if orphan_label {
        outcome = outcome.note(format!(
            "note: the {} label of #{issue} has no unreleased claim behind it (a release that \
             failed part way): the issue is free; rerunning that release, or the next claim, cleans it",
            ctx.settings.labels.in_progress
        ));
    }
    Ok(outcome)
}

/// How far ahead a clock runs, in days when it is that far.
fn ahead(secs: i64) -> String {
    let secs = secs.max(0) as u64;
    match secs / 86_400 {
        0 => human_duration(Duration::from_secs(secs)),
        days => format!("{days}d"),
    }
}

/// Claims for `coord claim`, `coord takeover`, `run` and `resume`: what the
/// protocol said, and what a person sees of it.
pub(crate) fn claim(
    ctx: &Context,
    coord: &Coordinator<'_>,
    issue: u64,
    scope: Vec<u64>,
    branch: Option<String>,
    takeover: bool,
) -> Result<(ClaimOutcome, Outcome<ClaimOutcome>), CommandError> {
    let branch = branch
        .map(|b| super::branch_arg(&ctx.git, &b))
        .transpose()?;
    let request = ScopeClaim {
        issue,
        scope,
        branch,
        takeover,
    };
    let report = claims::claim_scope(&ctx.git, coord, &ctx.claims()?, request)?;
    let shown = show_claim(ctx, issue, &report);
    Ok((report.outcome, shown))
}

/// What a person sees of a claim.
pub(crate) fn show_claim(ctx: &Context, issue: u64, report: &ClaimReport) -> Outcome<ClaimOutcome> {
    let output = report.outcome.clone();
    match &report.outcome {
        ClaimOutcome::Claimed { views, already_held, .. } => {
            let verb = if *already_held { "already held" } else { "claimed" };
            let mut o = Outcome::new(Exit::Ok, output);
            if let Some(unread) = &report.head_unread {
                o = o.warn(Warning::new(format!(
                    "could not read {b} on {}: {}; run `git maverick resume {b}` before pushing to it",
                    unread.remote,
                    unread.error,
                    b = unread.branch,
                )));
            }
            for view in views {
                o = o.line(format!("{verb} {}", describe(view).trim_start_matches('#')));
            }
            if report.branch.is_some() {
                o = super::warn_if_guard_off(&ctx.git, o);
                o = super::protect::warn_if_server_off(ctx, o);
            }
            o
        }
        ClaimOutcome::Blocked { views } => refused(output, Exit::Blocked, views, "it waits for other issues; work on those first"),
        ClaimOutcome::Held { views } => {
            let hint = views.iter().find_map(pull_hint).unwrap_or_else(|| {
                "another instance holds it with a live lease; pick another issue".to_owned()
            });
            refused(output, Exit::HeldLive, views, &hint)
        }
        ClaimOutcome::Stale { views } => refused(
            output,
            Exit::HeldStale,
            views,
            &format!("its lease is stale; take it over with `git maverick coord claim {issue} --takeover`"),
        ),
        ClaimOutcome::Lost { winner, views } => refused(
            output,
            Exit::LostRace,
            views,
            &format!(
                "{} won the claim; this instance's claim was withdrawn. Pick another issue",
                winner
                    .as_ref()
                    .map_or("another instance", |w| w.as_str())
            ),
        ),
    }
}

fn refused(
    output: ClaimOutcome,
    exit: Exit,
    views: &[IssueView],
    hint: &str,
) -> Outcome<ClaimOutcome> {
    let mut o = Outcome::new(exit, output);
    for view in views {
        o = o.line(describe(view));
    }
    o.hint(hint)
}

fn heartbeat(
    ctx: &Context,
    coord: &Coordinator<'_>,
    issue: u64,
    renewal: Renewal,
) -> Result<Outcome<HeartbeatOutcome>, CommandError> {
    let store = ctx.claims()?;
    let (issues, record) = claims::scope_of(&store, &ctx.settings.instance, issue)?;
    let outcome = claims::heartbeat(
        coord,
        &store,
        &issues,
        record.map(|r| r.generation),
        renewal,
    )?;
    Ok(match &outcome {
        HeartbeatOutcome::Renewed { views, written, .. } => {
            let lines: Vec<String> = views
                .iter()
                .map(|view| {
                    let kept = if written.contains(&view.issue) {
                        "lease renewed"
                    } else {
                        "lease left as it is (time enough left; --renew writes it now)"
                    };
                    format!("{}; {kept}", describe(view))
                })
                .collect();
            let mut o = Outcome::new(Exit::Ok, outcome);
            o.lines = lines;
            o
        }
        HeartbeatOutcome::Lost { reason, views } => {
            let lapsed = views.iter().any(|v| v.decision() == Decision::Lapsed);
            let mut lines = vec![format!("claim lost: {reason}")];
            lines.extend(views.iter().map(describe));
            let mut o = Outcome::new(Exit::ClaimLost, outcome);
            o.lines = lines;
            o = o.hint("stop working on this issue and report; do not push to its branch");
            if lapsed {
                o = o.hint(format!(
                    "to pick the work up again, claim it anew (a new generation) while nobody else \
                     has: `git maverick coord claim {issue}`"
                ));
            }
            o
        }
    })
}

fn release(
    ctx: &Context,
    coord: &Coordinator<'_>,
    issue: u64,
    reason: ReleaseReason,
) -> Result<Outcome<ReleaseOutcome>, CommandError> {
    let store = ctx.claims()?;
    // One issue: releasing a merged story of a wave leaves its siblings held.
    let outcome = claims::release(coord, &store, &[issue], reason)?;
    if !outcome.foreign.is_empty() {
        let lines = outcome
            .foreign
            .iter()
            .map(|view| format!("not released: {}", describe(view)))
            .collect();
        let mut o = Outcome::new(Exit::ClaimLost, outcome);
        o.lines = lines;
        return Ok(o.hint("another instance holds it now; its claim was left alone"));
    }
    let mut lines = Vec::new();
    if outcome.released.is_empty() {
        lines.push(format!(
            "#{issue}: nothing to release (not held by {})",
            ctx.settings.instance
        ));
    }
    for n in &outcome.released {
        lines.push(format!("released #{n} ({})", reason.as_str()));
    }
    let mut o = Outcome::new(Exit::Ok, outcome);
    o.lines = lines;
    Ok(o)
}

fn release_all(
    ctx: &Context,
    coord: &Coordinator<'_>,
    reason: ReleaseReason,
) -> Result<Outcome<ReleaseAllOutput>, CommandError> {
    let outcome = claims::release_all(coord, &ctx.claims()?, reason)?;
    let mut lines = Vec::new();
    if outcome.released.is_empty() && outcome.foreign.is_empty() {
        lines.push(format!(
            "nothing to release (no claims held by {})",
            ctx.settings.instance
        ));
    }
    for n in &outcome.released {
        lines.push(format!("released #{n} ({})", reason.as_str()));
    }
    for view in &outcome.foreign {
        lines.push(format!("not released: {}", describe(view)));
    }
    // A sweep that finds another holder has still done its job.
    let mut o = Outcome::new(
        Exit::Ok,
        ReleaseAllOutput {
            outcome,
            instance_id: ctx.settings.instance.clone(),
        },
    );
    o.lines = lines;
    Ok(o)
}

fn relabel(
    coord: &Coordinator<'_>,
    issue: u64,
    add: Vec<String>,
    remove: Vec<String>,
) -> Result<Outcome<CoordOutput>, CommandError> {
    if let Some(bad) = add
        .iter()
        .chain(&remove)
        .find(|l| l.trim().is_empty() || l.len() > 50)
    {
        return Err(CommandError::usage(format!(
            "{bad:?} is not a usable label name (1 to 50 characters)"
        )));
    }
    let labels = coord.relabel(issue, &add, &remove)?;
    let line = format!(
        "#{issue}: labels {}",
        if labels.is_empty() {
            "(none)".to_owned()
        } else {
            labels.join(", ")
        }
    );
    Ok(Outcome::new(Exit::Ok, CoordOutput::Label(LabelOutput { issue, labels })).line(line))
}
