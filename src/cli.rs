//! The command line, in one place. Doc comments here are the help text.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::commands::completions::CompletionsArgs;
use crate::commands::config::ConfigArgs;
use crate::commands::coord::CoordArgs;
use crate::commands::dispatch::DispatchArgs;
use crate::commands::help::{HelpArgs, InstallManPagesArgs};
use crate::commands::hook::HookArgs;
use crate::commands::hydrate::HydrateArgs;
use crate::commands::protect::ProtectArgs;
use crate::commands::resume::ResumeArgs;
use crate::commands::run::RunArgs;
use crate::commands::state::StateArgs;
use crate::commands::status::StatusArgs;
use crate::commands::task::TaskArgs;
use crate::config::{Overrides, SurfaceKind};

#[derive(Debug, Parser)]
#[command(
    name = "git-maverick",
    bin_name = "git maverick",
    version,
    about = "Claims, leases and one writer per branch for people and agents working the same issues",
    long_about = "Claims, leases and one writer per branch for people and agents working the same issues.\n\n\
        All shared state lives on a coordination surface: GitHub (labels and marker comments) \
        or refs/maverick/* on the git remote itself.\n\n\
        Exit codes: 0 ok, 1 error, 2 usage, 3 blocked, 4 held live, 5 held stale \
        (or your own lease lapsed), 6 lost race (dispatch: out of rounds, run it again), \
        7 claim lost, 8 collision, 9 no slot.",
    propagate_version = true,
    disable_help_subcommand = true
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Default, Args)]
pub(crate) struct GlobalArgs {
    /// Print exactly one JSON object on stdout
    #[arg(long, global = true)]
    pub json: bool,
    /// More detail on stderr (-v, -vv)
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// When to colour: always, never, or auto (a terminal); beats git's
    /// color.maverick and color.ui
    #[arg(
        long,
        value_name = "WHEN",
        global = true,
        hide_short_help = true,
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "always",
        value_parser = ["always", "never", "auto"]
    )]
    pub color: Option<String>,
    #[command(flatten)]
    pub config: ConfigFlags,
}

/// The configuration every command shares: in `--help` under one heading,
/// left out of `-h`, which shows a command's own options.
#[derive(Debug, Default, Args)]
#[command(next_help_heading = "Configuration")]
pub(crate) struct ConfigFlags {
    /// The GitHub repository, instead of the one the remote's URL names (HOST/OWNER/NAME names its host too)
    #[arg(
        short = 'R',
        long = "repo",
        value_name = "OWNER/NAME",
        global = true,
        hide_short_help = true
    )]
    pub repo: Option<String>,
    /// The remote that holds the branches (maverick.remote, default origin)
    #[arg(long, value_name = "NAME", global = true, hide_short_help = true)]
    pub remote: Option<String>,
    /// Where shared state lives (maverick.surface; default: github for github.com remotes, else git)
    #[arg(long, value_name = "SURFACE", global = true, hide_short_help = true)]
    pub surface: Option<SurfaceKind>,
    /// How long a lease lives without a heartbeat (maverick.leaseTtl, default 10m, at least 1s)
    #[arg(long, alias = "ttl", value_name = "DURATION", value_parser = lease_duration, global = true, hide_short_help = true)]
    pub lease_ttl: Option<Duration>,
    /// How often `run` settles its claim, writing the lease when due (maverick.heartbeatInterval, default 2m, at least 1s)
    #[arg(long, alias = "heartbeat", value_name = "DURATION", value_parser = lease_duration, global = true, hide_short_help = true)]
    pub heartbeat_interval: Option<Duration>,
    /// How far the stored clock may lead this one and still be followed; writers further ahead are flagged (maverick.maxClockSkew, default 5m)
    #[arg(long, value_name = "DURATION", value_parser = lease_duration, global = true, hide_short_help = true)]
    pub max_clock_skew: Option<Duration>,
    /// How long a claim waits before its re-read (maverick.settleDelay; github 3s, git 0)
    #[arg(long, value_name = "DURATION", value_parser = duration, global = true, hide_short_help = true)]
    pub settle_delay: Option<Duration>,
    /// Where worktrees are made (maverick.worktreeDir, default .maverick/worktrees)
    #[arg(long, value_name = "DIR", global = true, hide_short_help = true)]
    pub worktree_dir: Option<PathBuf>,
    /// Agent cycles in flight at once (maverick.dispatchSlots, default 3)
    #[arg(
        long,
        alias = "slots",
        value_name = "N",
        global = true,
        hide_short_help = true
    )]
    pub dispatch_slots: Option<u32>,
    /// Age after which a dispatch claim is cleared (maverick.dispatchStale, default 4h)
    #[arg(long, value_name = "DURATION", value_parser = duration, global = true, hide_short_help = true)]
    pub dispatch_stale: Option<Duration>,
    /// Logins whose markers count besides members (maverick.trustedAuthors, comma-separated)
    #[arg(long, value_name = "LOGINS", global = true, hide_short_help = true)]
    pub trusted_authors: Option<String>,
}

impl GlobalArgs {
    pub(crate) fn overrides(&self) -> Overrides {
        let c = &self.config;
        Overrides {
            surface: c.surface,
            remote: c.remote.clone(),
            repo: c.repo.clone(),
            lease_ttl: c.lease_ttl,
            heartbeat_interval: c.heartbeat_interval,
            max_clock_skew: c.max_clock_skew,
            settle_delay: c.settle_delay,
            worktree_dir: c.worktree_dir.clone(),
            dispatch_slots: c.dispatch_slots,
            dispatch_stale: c.dispatch_stale,
            trusted_authors: c.trusted_authors.as_deref().map(crate::config::split_list),
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Claim, heartbeat, release and take over issues
    Coord(CoordArgs),
    /// Work a story task by task: each finished task is one commit, pushed
    /// at once and checked off on the story's tasks comment
    #[command(subcommand_required = true)]
    Task(TaskArgs),
    /// Read and upsert the state markers on issues (dag, state, bprop, task-progress)
    State(StateArgs),
    /// Rebuild local state from the surface: writes .claude/epic-state.json
    /// (.claude/issue-state.json for a story) and prints it
    Hydrate(HydrateArgs),
    /// Install or remove the pre-push hook that keeps one writer per branch
    Hook(HookArgs),
    /// Have the server refuse force pushes and deletions of managed
    /// branches: a GitHub ruleset, or a bare repository's update hook
    #[command(subcommand_required = true)]
    Protect(ProtectArgs),
    /// Recreate a branch's worktree from the remote and pick the work up
    Resume(ResumeArgs),
    /// Hold a claim for the life of a command: claim, run CMD, heartbeat, release
    Run(RunArgs),
    /// Start an agent cycle in a free dispatch slot, at most dispatchSlots (--slots N) at once
    ///
    /// Claims the lowest eligible issue of the frontier (open, labelled with the
    /// frontier label, unassigned, unblocked, not already claimed) with a claim
    /// comment and the agent-wip label, then settles against every other claim:
    /// open agent PRs first, then the earliest claim comment. Prints the issue,
    /// the claim comment and the slot. Exit 9 when every slot is busy, 3 when
    /// nothing on the frontier is eligible, 6 when its dispatchSlots + 8 rounds
    /// ran out, each lost to another claim (run dispatch again).
    /// Slots: --dispatch-slots N (or --slots N); stale age: --dispatch-stale.
    Dispatch(DispatchArgs),
    /// The whole team at a glance: every claimed, leased, blocked or
    /// dispatched issue, one line each, what needs a person first
    ///
    /// Each line: the issue, its holder (you are marked), the generation,
    /// the lease left or how long it has been stale with the takeover
    /// command, the branch and how long ago its remote head moved, tasks
    /// done/total and the next one, the pull request and its CI verdict, and
    /// what blocks it. Then the dispatch slots and the totals. Stale leases,
    /// failing CI and collisions come first. Reads on GitHub: the labels, one
    /// list of open issues per label its lines show, one comments read per
    /// claimed issue, one list of open pull requests, one CI read per pull
    /// request head; and one git fetch.
    Status(StatusArgs),
    /// Every effective setting and where it came from (default, git config
    /// file, environment, flag)
    Config(ConfigArgs),
    /// The help of a command, as -h prints it
    Help(HelpArgs),
    /// Write the man pages where man finds them, so that `git help maverick`
    /// and `git maverick --help` open them
    InstallManPages(InstallManPagesArgs),
    /// Print the completion script for bash (git's own completion included),
    /// zsh or fish
    Completions(CompletionsArgs),
}

pub(crate) fn duration(text: &str) -> Result<Duration, String> {
    crate::timefmt::parse_duration(text).map_err(|e| e.to_string())
}

/// A lease duration: whole seconds, at least 1s.
pub(crate) fn lease_duration(text: &str) -> Result<Duration, String> {
    let d = duration(text)?;
    crate::timefmt::check_lease_duration(d)
        .map_err(|expected| format!("{text:?} is not {expected}"))?;
    Ok(d)
}

/// An issue number: `142` or `#142`.
pub(crate) fn issue_number(text: &str) -> Result<u64, String> {
    let digits = text.strip_prefix('#').unwrap_or(text);
    match digits.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "{text:?} is not an issue number (write 142 or #142)"
        )),
    }
}

pub fn command() -> clap::Command {
    let cmd = <Cli as clap::CommandFactory>::command();
    // `--dispatch-slots` is one flag, defined once (`ConfigArgs`): global,
    // and hidden from every short help but dispatch's, whose own tunable it
    // is. Dispatch gets the same argument (same id, so clap propagates no
    // second one there), shown in its `-h` with its own options.
    let slots = cmd
        .get_arguments()
        .find(|arg| arg.get_id() == "dispatch_slots")
        .cloned()
        .expect("the global --dispatch-slots flag");
    // In place: `mut_subcommand` would move dispatch to the end of the help.
    cmd.mut_subcommands(|sub| match sub.get_name() {
        "dispatch" => sub.arg(slots.clone().hide_short_help(false).help_heading(None)),
        _ => sub,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn verify_app() {
        super::command().debug_assert();
    }
}
