//! The only code that knows about clap, terminals and exit codes.

pub(crate) mod completions;
pub(crate) mod config;
pub(crate) mod contract;
pub(crate) mod coord;
pub(crate) mod dispatch;
pub(crate) mod error;
pub(crate) mod escape;
pub(crate) mod help;
pub(crate) mod hook;
pub(crate) mod hydrate;
pub(crate) mod paint;
mod prepush_program;
pub(crate) mod protect;
pub(crate) mod resume;
pub(crate) mod run;
#[cfg(test)]
mod schemas;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod task;

use std::ffi::OsString;
use std::io::Write as _;

use clap::FromArgMatches as _;
use serde::Serialize;

use crate::cli::{Cli, Command, GlobalArgs};
use crate::commands::error::{CommandError, Exit};
use crate::config::{Settings, SurfaceKind, UnknownKey};
use crate::git::{Git, GitEnv};
use crate::records::claim::ClaimStore;
use crate::surface::git::GitSurface;
use crate::surface::github::{resolve_token, GithubConfig, GithubError, GithubSurface};
use crate::surface::{Surface, SurfaceError};
use escape::{for_terminal, Newlines};

pub(crate) use contract::{Envelope, Failure, Outcome, Warning};
pub use prepush_program::pre_push_main;

/// Runs the command line `args` and returns the process exit code.
pub fn main(args: Vec<OsString>) -> u8 {
    // The pre-push hook runs on every push; its own argument shape skips
    // clap, whose command tree is most of a start-up.
    if let Some(parsed) = hook::fast_pre_push(&args) {
        return finish(hook::pre_push(&GlobalArgs::default(), parsed), false);
    }
    // The hooks Claude Code runs before every tool call and at a session's
    // ends answer no person: they neither stat nor write man pages.
    let agent_hook = args.get(1).is_some_and(|a| a == "hook")
        && args.get(2).is_some_and(|a| {
            matches!(
                a.to_str(),
                Some("pre-tool-use" | "session-start" | "session-end")
            )
        });
    if !agent_hook {
        help::ensure_man_pages();
    }
    let wants_json = args.iter().skip(1).any(|a| a == "--json");
    if wants_json {
        paint::never();
    } else {
        paint::choose(&args);
    }
    crate::git::show_progress(!wants_json && std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let parsed = help::command()
        .try_get_matches_from(&args)
        .and_then(|matches| Cli::from_arg_matches(&matches));
    let cli = match parsed {
        Ok(cli) => cli,
        Err(err) => {
            use clap::error::ErrorKind;
            if err.kind() == ErrorKind::DisplayHelp {
                if let Some(code) = help::open_man_page(&args) {
                    return code;
                }
            }
            if err.kind() == ErrorKind::DisplayVersion && wants_json {
                print_json(&Envelope::new(Exit::Ok, Vec::new(), help::version_output()));
                return 0;
            }
            if matches!(
                err.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) {
                let _ = err.print();
                return 0;
            }
            if wants_json {
                // clap's whole message: what was wrong, the usage line, the
                // argument names.
                let rendered = err.render().to_string();
                let e = CommandError::usage(rendered.trim_end().trim_start_matches("error: "));
                print_json(&Failure::of(&e));
                return Exit::Usage.code();
            }
            let _ = err.print();
            return Exit::Usage.code();
        }
    };
    init_tracing(cli.global.verbose);
    run(cli)
}

/// Prints what a command came to (one JSON object with `json`, else its
/// lines) and its notes, and returns the exit code. What people read is
/// escaped for a terminal here ([`escape`]); JSON is printed exactly.
fn finish<T: Serialize, C: Copy + Into<u8> + Serialize>(
    result: Result<Outcome<T, C>, CommandError>,
    json: bool,
) -> u8 {
    match result {
        Ok(outcome) => {
            let code: u8 = outcome.exit.into();
            if json {
                let warnings = outcome.all_warnings();
                print_json(&Envelope::new(outcome.exit, warnings, &outcome.output));
            } else {
                let mut stdout = std::io::stdout().lock();
                for line in &outcome.lines {
                    let line = match outcome.exact {
                        true => line.into(),
                        false => for_terminal(line, Newlines::Escape),
                    };
                    // A closed pipe (`| head`) is not an error.
                    if writeln!(stdout, "{line}").is_err() {
                        break;
                    }
                }
            }
            for note in &outcome.notes {
                paint::eprint_lines(&for_terminal(&note.to_string(), Newlines::Escape));
            }
            code
        }
        Err(err) => {
            // With --json the object is the error (code, message, hints);
            // the same lines again on stderr were noise to the program.
            if json {
                print_json(&Failure::of(&err));
            } else {
                paint::eprint_lines(&for_terminal(&err.to_string(), Newlines::Keep));
            }
            err.exit.code()
        }
    }
}

/// One `--json` object on one line. Through a `serde_json::Value`, whose
/// keys are sorted: the order programs have always seen.
pub(crate) fn json_line(object: &impl Serialize) -> String {
    serde_json::to_value(object)
        .expect("command outputs serialize")
        .to_string()
}

fn print_json(object: &impl Serialize) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{}", json_line(object));
}

fn init_tracing(verbose: u8) {
    use tracing_subscriber::filter::{LevelFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let level = match verbose {
        0 => return,
        1 => LevelFilter::INFO,
        _ => LevelFilter::DEBUG,
    };
    // Only maverick's own lines: a dependency's debug output could carry
    // request headers, and so the token.
    let filter = Targets::new()
        .with_target("maverick", level)
        .with_target("git_maverick", level)
        .with_default(LevelFilter::OFF);
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .event_format(PlainLines),
        )
        .with(filter)
        .try_init();
}

/// `-v`'s lines as people read the rest of the output: the message alone.
/// `-vv`'s debugging lines keep a `DEBUG` in front, so the two stay apart.
struct PlainLines;

impl<S, N> tracing_subscriber::fmt::FormatEvent<S, N> for PlainLines
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
    N: for<'a> tracing_subscriber::fmt::FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &tracing_subscriber::fmt::FmtContext<'_, S, N>,
        mut writer: tracing_subscriber::fmt::format::Writer<'_>,
        event: &tracing::Event<'_>,
    ) -> std::fmt::Result {
        if *event.metadata().level() > tracing::Level::INFO {
            write!(writer, "DEBUG ")?;
        }
        ctx.field_format().format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

fn run(cli: Cli) -> u8 {
    let global = &cli.global;
    let json = global.json;
    match cli.command {
        Command::Coord(args) => finish(coord::run(global, args), json),
        Command::Task(args) => finish(task::run(global, args), json),
        Command::State(args) => finish(state::run(global, args), json),
        Command::Hydrate(args) => finish(hydrate::run(global, args), json),
        Command::Hook(args) => finish(hook::run(global, args), json),
        Command::Resume(args) => finish(resume::run(global, args), json),
        Command::Run(args) => finish(run::run(global, args), json),
        Command::Dispatch(args) => finish(dispatch::run(global, args), json),
        Command::Status(args) => finish(status::run(global, args), json),
        Command::Protect(args) => finish(protect::run(global, args), json),
        Command::Config(args) => finish(config::run(global, args), json),
        Command::Help(args) => finish(help::help(json, args), json),
        Command::InstallManPages(args) => finish(help::install_man_pages(args), json),
        Command::Completions(args) => finish(completions::run(json, args), json),
    }
}

/// A `maverick.*` key nobody reads is a typo until shown otherwise: one
/// line each, on every command that reads the configuration, as it is
/// read.
pub(crate) fn warn_unknown_keys(keys: &[UnknownKey]) -> Vec<Warning> {
    keys.iter()
        .map(|key| {
            let warning = Warning::new(key.to_string());
            paint::eprint_lines(&for_terminal(
                &format!("warning: {warning}"),
                Newlines::Escape,
            ));
            warning
        })
        .collect()
}

/// The repository the current directory is in.
pub(crate) fn repository() -> Result<Git, CommandError> {
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    let git = Git::new(cwd, GitEnv::inherit());
    if !git.is_repository()? {
        return Err(CommandError::tool("not inside a git repository")
            .code(crate::commands::error::ErrorCode::NotARepository)
            .hint(
                "run git maverick from a clone of the project (cd into it, or `git clone URL`)",
            ));
    }
    Ok(git)
}

/// The settings, and a warning (shown now) for each unknown `maverick.*` key.
pub(crate) fn load_settings(
    git: &Git,
    global: &GlobalArgs,
) -> Result<(Settings, Vec<Warning>), CommandError> {
    let (settings, origins) = Settings::load_explained(git, &global.overrides())?;
    let warnings = warn_unknown_keys(&origins.unknown_keys);
    Ok((settings, warnings))
}

/// What most commands need: the repository, its settings, and its surface.
pub(crate) struct Context {
    pub git: Git,
    pub settings: Settings,
    /// What loading the settings warned about, on stderr already.
    pub warnings: Vec<Warning>,
    /// The damaged issues the surfaces this context opened met: warnings
    /// of the command, which went on with every other issue.
    pub damage: crate::surface::DamageLog,
}

impl Context {
    pub(crate) fn load(global: &GlobalArgs) -> Result<Context, CommandError> {
        let git = repository()?;
        let (settings, warnings) = load_settings(&git, global)?;
        Ok(Context {
            git,
            settings,
            warnings,
            damage: Default::default(),
        })
    }

    /// What a command that loaded this context came to, with the
    /// warnings loading it gave, whether it succeeded or failed.
    pub(crate) fn report<T, C>(
        &self,
        result: Result<Outcome<T, C>, CommandError>,
    ) -> Result<Outcome<T, C>, CommandError> {
        let mut warnings = self.warnings.clone();
        warnings.extend(self.warn_damage(&result));
        result
            .map(|o| o.shown(&warnings))
            .map_err(|e| e.shown(&warnings))
    }

    /// One warning (shown now) for each damaged issue the command went on
    /// without; none for the issue its error is about already.
    fn warn_damage<T>(&self, result: &Result<T, CommandError>) -> Vec<Warning> {
        let damage = self.damage.lock().unwrap_or_else(|e| e.into_inner());
        let reported = |issue: u64| {
            result.as_ref().err().is_some_and(|e| {
                e.hints
                    .iter()
                    .any(|h| h.contains(&format!("coord reset {issue}`")))
            })
        };
        damage
            .iter()
            .filter(|d| !reported(d.issue))
            .map(|d| {
                let warning = Warning::new(format!("{}; {}", d.describe(), d.way_out()));
                paint::eprint_lines(&for_terminal(
                    &format!("warning: {warning}"),
                    Newlines::Escape,
                ));
                warning
            })
            .collect()
    }

    /// The git surface of this clone's remote, reporting the damaged
    /// issues it meets to this context.
    pub(crate) fn git_surface(&self) -> GitSurface {
        GitSurface::new(
            self.git.clone(),
            &self.settings.remote,
            self.settings.remote_url.as_deref().unwrap_or_default(),
            self.settings.instance.as_str(),
            self.settings.clock.clone(),
        )
        .with_max_clock_skew(self.settings.max_clock_skew)
        .with_damage_log(self.damage.clone())
    }

    pub(crate) fn surface(&self) -> Result<Box<dyn Surface>, CommandError> {
        match self.settings.surface {
            SurfaceKind::Git => Ok(Box::new(self.git_surface())),
            SurfaceKind::Github => Ok(Box::new(self.github_surface()?)),
        }
    }

    /// The GitHub surface of this repository. Never a fallback to the git
    /// surface: a missing token or repository is an error that says so.
    pub(crate) fn github_surface(&self) -> Result<GithubSurface, CommandError> {
        let settings = &self.settings;
        let repo = settings.repo.clone().ok_or_else(|| GithubError::NoRepo {
            remote: settings.remote.clone(),
        });
        let config = repo.and_then(|repo| {
            Ok(GithubConfig {
                api_url: settings.github_api_url.clone(),
                repo,
                token: resolve_token(&settings.github_host)?,
                trusted_authors: settings.trusted_authors.clone(),
                timeout: settings.http_timeout,
                clock: settings.clock.clone(),
                cache_dir: self
                    .git
                    .common_dir()
                    .ok()
                    .map(|dir| dir.join("maverick").join("github-cache")),
                pace_dir: user_cache_dir().map(|dir| dir.join("git-maverick").join("github-pace")),
            })
        });
        config
            .and_then(GithubSurface::new)
            .map_err(|e| SurfaceError::from(e).into())
    }

    pub(crate) fn claims(&self) -> Result<ClaimStore, CommandError> {
        Ok(ClaimStore::new(&self.git.common_dir()?))
    }
}

/// A branch name given on the command line, normalised and checked once
/// (`refs/heads/` stripped, git's own rules): what claim, run and resume
/// record is what a push of the branch names.
pub(crate) fn branch_arg(git: &Git, input: &str) -> Result<String, CommandError> {
    crate::git::normalise_branch(git, input)?.ok_or_else(|| {
        CommandError::usage(format!("{input:?} is not a valid branch name")).hint(
            "use a name `git check-ref-format --branch` accepts, like maverick/142-short-title",
        )
    })
}

/// Adds a warning, once per clone until it is fixed, when the pre-push
/// guard is off here (SPEC 8): `task done`, `resume` and `claim --branch`
/// rely on it to stop plain `git push`es that would rewrite the branch.
pub(crate) fn warn_if_guard_off<T, C>(git: &Git, outcome: Outcome<T, C>) -> Outcome<T, C> {
    use crate::writer::hookmanager::{self, Setup};
    let Ok(setup) = Setup::detect(git) else {
        return outcome;
    };
    let status = hookmanager::status(&setup);
    let marker = hookmanager::warned_marker(&setup);
    if status.on || marker.exists() {
        return outcome;
    }
    let why = status.why_not.unwrap_or_default();
    let _ = crate::records::files::write_atomically(&marker, format!("{why}\n").as_bytes());
    outcome
        .warn(Warning::new(format!(
            "the pre-push guard is off in this clone, so a plain `git push` is not checked: {why}"
        )))
        .hint(format!(
            "{} (`git maverick hook status` tells when it is on; this warning is shown once)",
            status
                .fix
                .unwrap_or_else(|| "git maverick hook install".to_owned())
        ))
}

/// The user's cache directory (`$XDG_CACHE_HOME`, else `~/.cache`), where
/// what every clone of the machine shares is kept.
fn user_cache_dir() -> Option<std::path::PathBuf> {
    let from = |var: &str| {
        std::env::var_os(var)
            .filter(|v| !v.is_empty())
            .map(std::path::PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    from("XDG_CACHE_HOME").or_else(|| from("HOME").map(|home| home.join(".cache")))
}
