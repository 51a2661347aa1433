//! `git maverick status`: the whole team at a glance, and the epic as a picture.

use std::collections::BTreeSet;
use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::escape::{for_terminal, Newlines};
use super::{Context, Envelope, Failure, Outcome, Warning};
use crate::cli::{duration, issue_number, GlobalArgs};
use crate::commands::error::{CommandError, Exit};
use crate::config::SurfaceKind;
use crate::coord::dispatch::HolderKind;
use crate::surface::git::GitSurface;
use crate::surface::github::GithubSurface;
use crate::surface::Surface;
use crate::timefmt::Timestamp;
use crate::workflow::status::{
    self, EpicView, Heads, IssueRow, RowState, StatusError, StatusRequest, StatusView, Totals,
};

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    /// Only the issues this instance holds (claims and dispatch claims)
    #[arg(long)]
    pub mine: bool,
    /// Also show an epic's stories in DAG order, grouped by wave, free and
    /// merged ones included (142 or #142)
    #[arg(long, value_name = "N", value_parser = issue_number)]
    pub epic: Option<u64>,
    /// Redraw every INTERVAL (default 10s) until Ctrl-C: in place on a
    /// terminal, as appended blocks otherwise. Unchanged GitHub reads are
    /// answered 304 and cost no rate limit
    #[arg(
        long,
        value_name = "INTERVAL",
        num_args = 0..=1,
        default_missing_value = "10s",
        value_parser = duration
    )]
    pub watch: Option<Duration>,
    /// `text`, or the epic's DAG as Graphviz: `dot`, or `svg` (rendered by
    /// Graphviz's `dot`, which must be installed); both need --epic
    #[arg(long, value_enum, default_value = "text", value_name = "FORMAT")]
    pub format: Format,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    Text,
    Dot,
    Svg,
}

impl From<StatusError> for CommandError {
    fn from(err: StatusError) -> Self {
        match err {
            StatusError::Surface(e) => e.into(),
            StatusError::Git(e) => e.into(),
            StatusError::NotAnEpic(n) => CommandError::from_error(Exit::Error, err).hint(format!(
                "an epic carries its DAG in a maverick-dag marker: \
                     git maverick state put dag {n} FILE"
            )),
        }
    }
}

/// The surface and the one fetch that brings the branches' heads.
enum Source {
    Git(Box<GitSurface>),
    Github(Box<GithubSurface>),
}

impl Source {
    fn open(ctx: &Context) -> Result<Source, CommandError> {
        let settings = &ctx.settings;
        Ok(match settings.surface {
            SurfaceKind::Git => Source::Git(Box::new(ctx.git_surface())),
            SurfaceKind::Github => Source::Github(Box::new(ctx.github_surface()?)),
        })
    }

    fn surface(&self) -> &dyn Surface {
        match self {
            Source::Git(s) => s.as_ref(),
            Source::Github(s) => s.as_ref(),
        }
    }

    /// One fetch: on the git surface it brings the surface with the
    /// branches; on GitHub only the branches, and a failure costs only
    /// fresh heads (a warning), not the view.
    fn fetch(&self, ctx: &Context) -> Result<Option<String>, CommandError> {
        let remote = &ctx.settings.remote;
        match self {
            Source::Git(surface) => {
                surface.fetch_with_branches()?;
                Ok(None)
            }
            Source::Github(_) => {
                let branches = format!("+refs/heads/*:refs/remotes/{remote}/*");
                Ok(ctx
                    .git
                    .fetch_pruning(remote, &[branches], "read the remote's branches")
                    .err()
                    .map(|e| {
                        format!(
                            "could not fetch the branches from {remote} ({}): heads are as of \
                         the last fetch",
                            e.stderr().trim()
                        )
                    }))
            }
        }
    }

    fn gather(&self, ctx: &Context, request: &StatusRequest) -> Result<StatusView, CommandError> {
        let warning = self.fetch(ctx)?;
        let heads = Heads::read(&ctx.git, &ctx.settings.remote)?;
        let mut view = status::gather(self.surface(), &ctx.settings, &ctx.git, &heads, request)?;
        view.warnings.extend(warning);
        Ok(view)
    }
}

/// The view, `--json`'s body; none when a watch ends because nobody
/// reads any more.
pub(crate) fn run(
    global: &GlobalArgs,
    args: StatusArgs,
) -> Result<Outcome<Option<StatusView>>, CommandError> {
    if args.format != Format::Text {
        let name = if args.format == Format::Dot {
            "dot"
        } else {
            "svg"
        };
        if args.epic.is_none() {
            return Err(CommandError::usage(format!(
                "--format {name} draws an epic's DAG: name the epic"
            ))
            .hint(format!("git maverick status --epic N --format {name}")));
        }
        if global.json || args.watch.is_some() {
            return Err(CommandError::usage(format!(
                "--format {name} prints one picture: it takes neither --json nor --watch"
            )));
        }
    }
    if args.watch.is_some_and(|d| d.is_zero()) {
        return Err(CommandError::usage("--watch needs an interval above zero")
            .hint("git maverick status --watch 10s"));
    }
    let request = StatusRequest {
        mine: args.mine,
        epic: args.epic,
    };
    if let Some(interval) = args.watch {
        // Before the surface exists: the signal thread must be the first.
        // It ends the process itself, as a shell expects of a signalled
        // command (128 + the signal: 130 for Ctrl-C), even while the main
        // thread is stuck writing to a terminal that stopped reading
        // (Ctrl-S): each round is flushed whole, so nothing is lost.
        crate::coord::supervise::watch_signals(|signal| {
            // SAFETY: _exit ends the process at once and touches no lock.
            unsafe { libc::_exit(128 + signal) }
        })
        .map_err(|e| CommandError::tool(format!("cannot watch for Ctrl-C: {e}")))?;
        let ctx = Context::load(global)?;
        return ctx.report(
            Source::open(&ctx)
                .and_then(|source| watch(&ctx, &source, &request, interval, global.json)),
        );
    }
    let ctx = Context::load(global)?;
    ctx.report(show(&ctx, &request, args.format).map(|o| o.map(Some)))
}

fn show(
    ctx: &Context,
    request: &StatusRequest,
    format: Format,
) -> Result<Outcome<StatusView>, CommandError> {
    let source = Source::open(ctx)?;
    let view = source.gather(ctx, request)?;
    let warnings: Vec<Warning> = view.warnings.iter().map(Warning::new).collect();
    match format {
        Format::Text => {
            let lines = render_text(&view, super::paint::stdout_in_colour());
            let mut outcome = Outcome::new(Exit::Ok, view).own_warnings(warnings);
            outcome.lines = lines;
            // Escaped by render_text, cell by cell, before its colours.
            outcome.exact = true;
            Ok(outcome)
        }
        Format::Dot | Format::Svg => {
            let epic = view.epic.as_ref().expect("--epic was given");
            let dot = render_dot(epic);
            let text = if format == Format::Svg {
                render_svg(&dot, epic.epic)?
            } else {
                dot
            };
            let mut outcome = Outcome::new(Exit::Ok, view);
            outcome.lines = text.lines().map(str::to_owned).collect();
            for warning in warnings {
                outcome = outcome.warn(warning);
            }
            Ok(outcome)
        }
    }
}

/// Renders DOT as SVG with Graphviz's `dot`.
fn render_svg(dot: &str, epic: u64) -> Result<String, CommandError> {
    use std::process::{Command, Stdio};
    let child = Command::new("dot")
        .arg("-Tsvg")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(child) => child,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(
                CommandError::tool("Graphviz's `dot` is not installed: it renders the SVG")
                    .hint(
                        "install Graphviz: `sudo apt-get install graphviz` (Debian, Ubuntu), \
                 `brew install graphviz` (macOS), `sudo dnf install graphviz` (Fedora)",
                    )
                    .hint(format!(
                        "or print the DOT and render it elsewhere: \
                 git maverick status --epic {epic} --format dot > epic-{epic}.dot"
                    )),
            )
        }
        Err(e) => {
            return Err(CommandError::tool(format!(
                "cannot run Graphviz's dot: {e}"
            )))
        }
    };
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let input = dot.as_bytes().to_vec();
    // Written from a thread: dot may answer before it has read everything.
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child
        .wait_with_output()
        .map_err(|e| CommandError::tool(format!("cannot run Graphviz's dot: {e}")))?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(CommandError::tool(format!(
            "Graphviz's dot failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Redraws the view every `interval` until a signal: in place on a
/// terminal, appended blocks (or one JSON object a line) otherwise. One
/// surface for the whole watch, so GitHub's ETags make unchanged reads free.
fn watch(
    ctx: &Context,
    source: &Source,
    request: &StatusRequest,
    interval: Duration,
    json: bool,
) -> Result<Outcome<Option<StatusView>>, CommandError> {
    let terminal = !json && std::io::stdout().is_terminal();
    let mut first = true;
    let clock = &ctx.settings.clock;
    loop {
        let gathered = source.gather(ctx, request);
        // The pause starts before the round shows: whoever sees it and then
        // moves the clock on brings the next round.
        let next_round = clock.instant() + interval;
        let lines = match gathered {
            Ok(view) if json => {
                // What loading the settings warned about, on every object.
                let warnings = view
                    .warnings
                    .iter()
                    .map(Warning::new)
                    .chain(ctx.warnings.iter().cloned())
                    .collect();
                vec![super::json_line(&Envelope::new(Exit::Ok, warnings, &view))]
            }
            Ok(view) => render_text(&view, super::paint::stdout_in_colour()),
            // A first read that fails is an error; a later one a line
            // on the screen, and the next round tries again.
            Err(err) if first => return Err(err),
            Err(err) if json => vec![super::json_line(&Failure::of(&err.shown(&ctx.warnings)))],
            Err(err) => err
                .to_string()
                .lines()
                .map(|line| for_terminal(line, Newlines::Escape).into_owned())
                .collect(),
        };
        first = false;
        let mut stdout = std::io::stdout().lock();
        let mut text = String::new();
        if terminal {
            // Home and clear: a redraw in place.
            text.push_str("\x1b[H\x1b[2J");
        }
        // JSON as it is; the text already made safe for a terminal.
        for line in &lines {
            text.push_str(line);
            text.push('\n');
        }
        if terminal {
            let every = if interval.subsec_millis() == 0 {
                crate::timefmt::format_duration(interval)
            } else {
                format!("{}ms", interval.as_millis())
            };
            text.push_str(&format!("every {every}; Ctrl-C to stop\n"));
        } else if !json {
            text.push('\n');
        }
        if stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            // Nobody reads any more (`| head`): done.
            return Ok(Outcome::new(Exit::Ok, None));
        }
        drop(stdout);
        clock.wait_until(next_round);
    }
}

/// For people: `14m`, `2h5m`, `45s` (seconds only under a minute).
fn rough_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        _ if s % 3600 / 60 == 0 => format!("{}h", s / 3600),
        _ => format!("{}h{}m", s / 3600, s % 3600 / 60),
    }
}

/// The view as lines a person reads, made safe for a terminal, the rows
/// that need a person coloured when `colour`.
fn render_text(view: &StatusView, colour: bool) -> Vec<String> {
    let mut lines = Vec::new();
    lines.push(format!(
        "{} surface, {}, you are {}",
        view.surface, view.now, view.instance_id
    ));
    if view.issues.is_empty() {
        lines.push(if view.mine {
            "this instance holds no claims".to_owned()
        } else {
            "nothing is claimed, leased, blocked or dispatched".to_owned()
        });
    }
    let rows: Vec<Vec<Cell>> = view.issues.iter().map(|r| row_cells(r, view.now)).collect();
    let table = table(&rows, colour);
    let d = &view.dispatch;
    let mut slots = format!("dispatch slots: {}/{} used", d.used, d.slots);
    if !d.holders.is_empty() {
        let who: Vec<String> = d
            .holders
            .iter()
            .map(|h| {
                let what = match h.kind {
                    HolderKind::PullRequest => format!("PR #{}", h.issue),
                    HolderKind::Labelled => format!("#{} (labelled by hand)", h.issue),
                    HolderKind::Claim => format!(
                        "#{} {}",
                        h.issue,
                        who(h.instance_id.as_ref().map_or("?", |id| id.as_str()), h.ours)
                    ),
                };
                format!("{}: {what}", h.slot)
            })
            .collect();
        slots.push_str(&format!(" ({})", who.join(", ")));
    }
    lines.push(slots);
    lines.push(render_totals(&view.totals));
    let server = view.server.as_ref().filter(|s| s.worth_a_line());
    lines.extend(server.map(|s| s.describe()));
    if let Some(epic) = &view.epic {
        lines.extend(render_epic(epic, view));
    }
    for warning in &view.warnings {
        lines.push(format!("warning: {warning}"));
    }
    let mut lines = lines
        .into_iter()
        .map(|line| for_terminal(&line, Newlines::Escape).into_owned());
    // The rows after the header line.
    let mut out: Vec<String> = lines.by_ref().take(1).collect();
    out.extend(table);
    out.extend(lines);
    out
}

/// One cell of a row: its text, made safe for a terminal, and whether it
/// is what needs a person (coloured).
#[derive(Default)]
struct Cell {
    text: String,
    hot: bool,
}

impl Cell {
    fn plain(text: impl AsRef<str>) -> Cell {
        Cell {
            text: for_terminal(text.as_ref(), Newlines::Escape).into_owned(),
            hot: false,
        }
    }

    fn hot(text: impl AsRef<str>, hot: bool) -> Cell {
        Cell {
            hot,
            ..Cell::plain(text)
        }
    }
}

/// The rows as aligned lines: a column is as wide as its widest cell (in
/// characters), a column no row fills takes no room, and a row's last cell
/// is not padded; the cells that need a person coloured when `colour`.
fn table(rows: &[Vec<Cell>], colour: bool) -> Vec<String> {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let width = |c: &Cell| c.text.chars().count();
    let widths: Vec<usize> = (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(width)
                .max()
                .unwrap_or(0)
        })
        .collect();
    rows.iter()
        .map(|row| {
            let last = row.iter().rposition(|c| !c.text.is_empty()).unwrap_or(0);
            let mut line = String::new();
            for (i, cell) in row.iter().enumerate().take(last + 1) {
                if widths[i] == 0 {
                    continue;
                }
                if !line.is_empty() {
                    line.push_str("  ");
                }
                line.push_str(&super::paint::needs_a_person(
                    &cell.text,
                    cell.hot && colour,
                ));
                if i < last {
                    line.push_str(&" ".repeat(widths[i] - width(cell)));
                }
            }
            line
        })
        .collect()
}

fn who(instance: &str, ours: bool) -> String {
    if ours {
        format!("{instance} (you)")
    } else {
        instance.to_owned()
    }
}

/// A row's cells, one per column, empty where the row has nothing to say:
/// the issue (`!` when it needs a person), its state, holder, generation,
/// lease, branch, tasks, pull request, blockers, dispatch claim, and what
/// needs a person.
fn row_cells(row: &IssueRow, now: Timestamp) -> Vec<Cell> {
    let attention = row.needs_attention();
    let mark = if attention { "!" } else { " " };
    let mut cells = vec![
        Cell::hot(format!("{mark} #{}", row.issue), attention),
        Cell::plain(row.state.as_str()),
    ];
    cells.push(match &row.holder {
        Some(h) => Cell::plain(who(h.instance_id.as_str(), h.ours)),
        None => Cell::default(),
    });
    cells.push(match row.generation.filter(|_| row.holder.is_some()) {
        Some(g) => Cell::plain(format!("gen {g}")),
        None => Cell::default(),
    });
    cells.push(match &row.lease {
        Some(l) => {
            let d = rough_duration(Duration::from_secs(l.seconds));
            match &l.takeover {
                Some(cmd) if row.state == RowState::Lapsed => {
                    Cell::hot(format!("lapsed {d} ago (take it back: {cmd})"), true)
                }
                Some(cmd) => Cell::hot(format!("stale for {d} (take over: {cmd})"), true),
                None if l.live => Cell::plain(format!("lease {d} left")),
                None => Cell::plain(format!("lease ran out {d} ago")),
            }
        }
        None => Cell::default(),
    });
    cells.push(match &row.branch {
        Some(b) => Cell::plain(match b.head_moved_at {
            Some(at) => format!("{} moved {} ago", b.name, rough_duration(now.since(at))),
            None => format!("{} (not on the remote)", b.name),
        }),
        None => Cell::default(),
    });
    cells.push(match &row.tasks {
        Some(t) => {
            let mut text = format!("tasks {}/{}", t.done, t.total);
            if let Some(next) = &t.next_task {
                text.push_str(&format!(", next {}: {}", next.number, next.title));
            }
            Cell::plain(text)
        }
        None => Cell::default(),
    });
    cells.push(match &row.pull {
        Some(p) => {
            let draft = if p.draft { " (draft)" } else { "" };
            // What makes a `pull` row: whose pull request, from which branch.
            let from = match row.state {
                RowState::Pull => format!(" from {} by {}", p.head_ref, p.author),
                _ => String::new(),
            };
            Cell::plain(format!("PR #{}{draft}{from} CI {}", p.number, p.ci))
        }
        None => Cell::default(),
    });
    cells.push(if row.blocked_by.is_empty() {
        Cell::default()
    } else {
        let by: Vec<String> = row.blocked_by.iter().map(|n| format!("#{n}")).collect();
        Cell::plain(format!("blocked by {}", by.join(", ")))
    });
    cells.push(match &row.dispatch {
        Some(d) => {
            let slot = d.slot.map(|s| format!(", slot {s}")).unwrap_or_default();
            Cell::plain(format!(
                "dispatch claim by {} ({}{slot})",
                who(d.instance_id.as_str(), d.ours),
                d.verdict.replace('_', " ")
            ))
        }
        None => Cell::default(),
    });
    cells.push(match attention {
        true => Cell::hot(format!("<- {}", row.attention.join("; ")), true),
        false => Cell::default(),
    });
    cells
}

fn render_totals(t: &Totals) -> String {
    let mut counts = Vec::new();
    for (n, what) in [
        (t.ours, "yours"),
        (t.held, "held"),
        (t.stale, "stale"),
        (t.lapsed, "yours lapsed"),
        (t.blocked, "blocked"),
        (t.orphan, "orphan labels"),
        (t.pull, "in pull requests"),
        (t.dispatch, "dispatched"),
    ] {
        if n > 0 {
            counts.push(format!("{n} {what}"));
        }
    }
    let issues = if t.issues == 1 { "issue" } else { "issues" };
    let mut line = format!("{} {issues}", t.issues);
    if !counts.is_empty() {
        line.push_str(&format!(": {}", counts.join(", ")));
    }
    let need = if t.needs_attention == 1 {
        "needs"
    } else {
        "need"
    };
    line.push_str(&format!("; {} {need} a person", t.needs_attention));
    line
}

fn render_epic(epic: &EpicView, view: &StatusView) -> Vec<String> {
    let count: usize = epic.waves.iter().map(|w| w.stories.len()).sum();
    let mut lines = vec![format!(
        "epic #{}: {count} stories in {} waves",
        epic.epic,
        epic.waves.len()
    )];
    for wave in &epic.waves {
        lines.push(format!("wave {}", wave.wave));
        for story in &wave.stories {
            let mut line = format!(
                "  #{} {}",
                story.issue,
                story.state.as_str().replace('_', " ")
            );
            if let Some(h) = &story.holder {
                line.push_str(&format!(" by {}", who(h.instance_id.as_str(), h.ours)));
                if story.stale {
                    line.push_str(" (stale)");
                }
            }
            if !story.deps.is_empty() {
                let deps: Vec<String> = story.deps.iter().map(|d| format!("#{d}")).collect();
                line.push_str(&format!(", after {}", deps.join(" ")));
            }
            if !story.blocked_by.is_empty() {
                let by: Vec<String> = story.blocked_by.iter().map(|n| format!("#{n}")).collect();
                line.push_str(&format!(", blocked by {}", by.join(" ")));
            }
            if let Some(row) = view.issues.iter().find(|r| r.issue == story.issue) {
                if let Some(t) = &row.tasks {
                    line.push_str(&format!(", tasks {}/{}", t.done, t.total));
                }
                if let Some(p) = &row.pull {
                    line.push_str(&format!(", PR #{} CI {}", p.number, p.ci));
                }
            }
            lines.push(line);
        }
    }
    lines
}

/// The epic as a Graphviz digraph: one node per story coloured by state,
/// an edge from each dependency, one rank per wave.
fn render_dot(epic: &EpicView) -> String {
    let mut out = String::new();
    out.push_str(&format!("digraph \"epic-{}\" {{\n", epic.epic));
    out.push_str(&format!(
        "  graph [label=\"epic #{}\", labelloc=t, rankdir=TB, fontname=\"Helvetica\"];\n",
        epic.epic
    ));
    out.push_str(
        "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fillcolor=white];\n",
    );
    for wave in &epic.waves {
        out.push_str(&format!(
            "  subgraph wave_{} {{\n    rank=same;\n",
            wave.wave
        ));
        out.push_str(&format!(
            "    \"wave {0}\" [shape=plaintext, style=\"\", label=\"wave {0}\"];\n",
            wave.wave
        ));
        for story in &wave.stories {
            let (fill, border) = match story.state.as_str() {
                "merged" => ("#c8e6c9", "#2e7d32"),
                "in_flight" if story.stale => ("#ffe0b2", "#e65100"),
                "in_flight" => ("#bbdefb", "#1565c0"),
                "blocked" => ("#ffcdd2", "#c62828"),
                "ejected" => ("#e0e0e0", "#616161"),
                _ => ("#ffffff", "#424242"),
            };
            let mut label = format!(
                "#{}\\n{}",
                story.issue,
                story.state.as_str().replace('_', " ")
            );
            if let Some(h) = &story.holder {
                label.push_str(&format!(
                    "\\n{}",
                    dot_escape(&who(h.instance_id.as_str(), h.ours))
                ));
                if story.stale {
                    label.push_str(" (stale)");
                }
            }
            if let Some(pr) = story.pull {
                label.push_str(&format!("\\nPR #{pr}"));
            }
            out.push_str(&format!(
                "    \"{}\" [label=\"{label}\", fillcolor=\"{fill}\", color=\"{border}\"];\n",
                story.issue
            ));
        }
        out.push_str("  }\n");
    }
    // The wave labels in order down the left, invisible links between them.
    for pair in epic.waves.windows(2) {
        out.push_str(&format!(
            "  \"wave {}\" -> \"wave {}\" [style=invis];\n",
            pair[0].wave, pair[1].wave
        ));
    }
    let known: BTreeSet<u64> = epic
        .waves
        .iter()
        .flat_map(|w| w.stories.iter().map(|s| s.issue))
        .collect();
    for story in epic.waves.iter().flat_map(|w| &w.stories) {
        for dep in story.deps.iter().filter(|d| known.contains(d)) {
            out.push_str(&format!("  \"{dep}\" -> \"{}\";\n", story.issue));
        }
    }
    out.push_str("}\n");
    out
}

fn dot_escape(text: &str) -> String {
    text.replace('\\', "\\\\").replace('"', "\\\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rough_durations() {
        assert_eq!(rough_duration(Duration::from_secs(45)), "45s");
        assert_eq!(rough_duration(Duration::from_secs(14 * 60 + 59)), "14m");
        assert_eq!(rough_duration(Duration::from_secs(7200)), "2h");
        assert_eq!(rough_duration(Duration::from_secs(7500)), "2h5m");
    }
}
