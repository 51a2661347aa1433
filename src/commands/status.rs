//! `git maverick status`: the whole team at a glance, and the epic as a picture.

use std::io::{IsTerminal as _, Write as _};
use std::time::Duration;

use clap::{Args, ValueEnum};
use serde_json::Value;

use super::{Context, Outcome};
use crate::cli::{duration, issue_number, GlobalArgs};
use crate::config::SurfaceKind;
use crate::error::{CommandError, Exit};
use crate::surface::git::GitSurface;
use crate::surface::github::GithubSurface;
use crate::surface::Surface;
use crate::workflow::status::{self, Heads, StatusError, StatusRequest, StatusView};

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
            StatusError::NotAnEpic(n) => CommandError::from_error(Exit::Error, &err).hint(format!(
                "an epic carries its DAG in a maverick-dag marker: \
                     git maverick state put dag {n} FILE"
            )),
        }
    }
}

/// The surface and the one fetch that brings the branches' heads.
enum Source {
    Git(GitSurface),
    Github(Box<GithubSurface>),
}

impl Source {
    fn open(ctx: &Context) -> Result<Source, CommandError> {
        let settings = &ctx.settings;
        Ok(match settings.surface {
            SurfaceKind::Git => Source::Git(GitSurface::new(
                ctx.git.clone(),
                &settings.remote,
                settings.remote_url.as_deref().unwrap_or_default(),
                &settings.instance,
                settings.clock.clone(),
            )),
            SurfaceKind::Github => Source::Github(Box::new(ctx.github_surface()?)),
        })
    }

    fn surface(&self) -> &dyn Surface {
        match self {
            Source::Git(s) => s,
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
                Ok(ctx.git.fetch_pruning(remote, &[branches]).err().map(|e| {
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

pub(crate) fn run(global: &GlobalArgs, args: StatusArgs) -> Result<Outcome, CommandError> {
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
        let source = Source::open(&ctx)?;
        return watch(&ctx, &source, &request, interval, global.json);
    }
    let ctx = Context::load(global)?;
    let source = Source::open(&ctx)?;
    let view = source.gather(&ctx, &request)?;
    match args.format {
        Format::Text => {
            let json = serde_json::to_value(&view).expect("the view serializes");
            let mut outcome = Outcome::new(Exit::Ok, json);
            outcome.lines = status::render_text(&view);
            Ok(outcome)
        }
        Format::Dot | Format::Svg => {
            let epic = view.epic.as_ref().expect("--epic was given");
            let dot = status::render_dot(epic);
            let text = if args.format == Format::Svg {
                render_svg(&dot, epic.epic)?
            } else {
                dot
            };
            let mut outcome = Outcome::new(Exit::Ok, Value::Null);
            outcome.lines = text.lines().map(str::to_owned).collect();
            outcome.notes = view
                .warnings
                .iter()
                .map(|w| format!("warning: {w}"))
                .collect();
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
) -> Result<Outcome, CommandError> {
    let terminal = !json && std::io::stdout().is_terminal();
    // What loading the settings warned about, on every object.
    let warnings = super::take_warnings();
    let mut first = true;
    let clock = &ctx.settings.clock;
    loop {
        let gathered = source.gather(ctx, request);
        // The pause starts before the round shows: whoever sees it and then
        // moves the clock on brings the next round.
        let next_round = clock.instant() + interval;
        let lines = match gathered {
            Ok(view) if json => {
                let value = serde_json::to_value(&view).expect("the view serializes");
                vec![super::contract(value, 0, &warnings).to_string()]
            }
            Ok(view) => status::render_text(&view),
            // A first read that fails is an error; a later one a line
            // on the screen, and the next round tries again.
            Err(err) if first => return Err(err),
            Err(err) if json => vec![super::error_json(&err).to_string()],
            Err(err) => err.to_string().lines().map(str::to_owned).collect(),
        };
        first = false;
        let mut stdout = std::io::stdout().lock();
        let mut text = String::new();
        if terminal {
            // Home and clear: a redraw in place.
            text.push_str("\x1b[H\x1b[2J");
        }
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
            return Ok(Outcome::new(Exit::Ok, Value::Null));
        }
        drop(stdout);
        clock.wait_until(next_round);
    }
}
