//! The only code that knows about clap, terminals and exit codes.

pub(crate) mod completions;
pub(crate) mod config;
pub(crate) mod coord;
pub(crate) mod dispatch;
pub(crate) mod help;
pub(crate) mod hook;
pub(crate) mod hydrate;
pub(crate) mod resume;
pub(crate) mod run;
pub(crate) mod state;
pub(crate) mod status;
pub(crate) mod task;

use std::ffi::OsString;
use std::io::Write as _;

use clap::FromArgMatches as _;
use serde_json::{json, Value};

use crate::cli::{Cli, Command, GlobalArgs};
use crate::config::{Settings, SurfaceKind, UnknownKey};
use crate::error::{CommandError, Exit};
use crate::git::{Git, GitEnv};
use crate::records::claim::ClaimStore;
use crate::surface::git::GitSurface;
use crate::surface::github::{resolve_token, GithubConfig, GithubError, GithubSurface};
use crate::surface::{Surface, SurfaceError};

/// The version of the JSON contract (`schemas/`, README "JSON output"):
/// additive fields keep it; a rename or a removal bumps it.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// What a command came to: an exit code, one JSON object, and lines for people.
#[derive(Debug)]
pub(crate) struct Outcome {
    pub exit: Exit,
    pub json: Value,
    /// For stdout.
    pub lines: Vec<String>,
    /// For stderr: why a protocol verdict is not 0, and the way out.
    pub notes: Vec<String>,
    /// The exit status when it is not `exit`'s code: a wrapped command's
    /// own (`run`).
    pub status: Option<u8>,
}

impl Outcome {
    pub(crate) fn new(exit: Exit, json: Value) -> Outcome {
        Outcome {
            exit,
            json,
            lines: Vec::new(),
            notes: Vec::new(),
            status: None,
        }
    }

    /// The process exit code.
    pub(crate) fn code(&self) -> u8 {
        self.status.unwrap_or(self.exit.code())
    }

    pub(crate) fn line(mut self, line: impl Into<String>) -> Outcome {
        self.lines.push(line.into());
        self
    }

    pub(crate) fn note(mut self, note: impl Into<String>) -> Outcome {
        self.notes.push(note.into());
        self
    }
}

/// Runs the command line `args` and returns the process exit code.
pub fn main(args: Vec<OsString>) -> u8 {
    // The pre-push hook runs on every push; its own argument shapes skip
    // clap, whose command tree is most of a start-up (issue 11's 2 ms).
    if let Some(parsed) = hook::fast_pre_push(&args) {
        return finish(
            parsed.and_then(|a| hook::pre_push(&GlobalArgs::default(), a)),
            false,
        );
    }
    let wants_json = args.iter().skip(1).any(|a| a == "--json");
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
                print_json(&contract(help::version_json(), 0, &[]));
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
                print_json(&error_json(&e));
            }
            let _ = err.print();
            return Exit::Usage.code();
        }
    };
    init_tracing(cli.global.verbose);
    let json = cli.global.json;
    finish(run(cli), json)
}

/// Prints what a command came to (one JSON object with `json`, else its
/// lines) and its notes, and returns the exit code.
fn finish(result: Result<Outcome, CommandError>, json: bool) -> u8 {
    match result {
        Ok(outcome) => {
            let code = outcome.code();
            if json {
                let notes = outcome
                    .notes
                    .iter()
                    .filter_map(|n| n.strip_prefix("warning: "))
                    .map(str::to_owned);
                let warnings: Vec<String> = take_warnings().into_iter().chain(notes).collect();
                print_json(&contract(outcome.json, code, &warnings));
            } else {
                let mut stdout = std::io::stdout().lock();
                for line in &outcome.lines {
                    // A closed pipe (`| head`) is not an error.
                    if writeln!(stdout, "{line}").is_err() {
                        break;
                    }
                }
            }
            for note in &outcome.notes {
                eprintln!("{note}");
            }
            code
        }
        Err(err) => {
            if json {
                let mut value = error_json(&err);
                value["warnings"] = take_warnings().into();
                print_json(&value);
            }
            eprintln!("{err}");
            err.exit.code()
        }
    }
}

/// One `--json` object as the contract (README, "JSON output") has it:
/// `schema_version`, `ok`, `exit_code`, and `warnings` holding the
/// command's own and `extra`, once each.
pub(crate) fn contract(json: Value, code: u8, extra: &[String]) -> Value {
    let mut object = match json {
        Value::Object(map) => map,
        other => {
            let mut map = serde_json::Map::new();
            map.insert("result".into(), other);
            map
        }
    };
    object.insert("schema_version".into(), SCHEMA_VERSION.into());
    let mut warnings: Vec<Value> = match object.remove("warnings") {
        Some(Value::Array(list)) => list,
        _ => Vec::new(),
    };
    for text in extra {
        let text = Value::String(text.clone());
        if !warnings.contains(&text) {
            warnings.push(text);
        }
    }
    object.insert("warnings".into(), Value::Array(warnings));
    object.insert("ok".into(), Value::Bool(code == 0));
    object.insert("exit_code".into(), code.into());
    Value::Object(object)
}

/// A failed command's `--json` object (README, "JSON output"): the
/// contract's fields, and `error` with its code, message, causes and hints.
pub(crate) fn error_json(err: &CommandError) -> Value {
    json!({
        "schema_version": SCHEMA_VERSION,
        "ok": false,
        "exit_code": err.exit.code(),
        "error": {
            "code": err.code,
            "message": err.message,
            "causes": err.causes,
            "hints": err.hints,
        },
        "warnings": [],
    })
}

fn print_json(value: &Value) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{value}");
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
                .without_time()
                .with_target(false),
        )
        .with(filter)
        .try_init();
}

pub(crate) fn run(cli: Cli) -> Result<Outcome, CommandError> {
    match cli.command {
        Command::Coord(args) => coord::run(&cli.global, args),
        Command::Task(args) => task::run(&cli.global, args),
        Command::State(args) => state::run(&cli.global, args),
        Command::Hydrate(args) => hydrate::run(&cli.global, args),
        Command::Hook(args) => hook::run(&cli.global, args),
        Command::Resume(args) => resume::run(&cli.global, args),
        Command::Run(args) => run::run(&cli.global, args),
        Command::Dispatch(args) => dispatch::run(&cli.global, args),
        Command::Status(args) => status::run(&cli.global, args),
        Command::Config(args) => config::run(&cli.global, args),
        Command::Help(args) => help::help(cli.global.json, args),
        Command::InstallManPages(args) => help::install_man_pages(args),
        Command::Completions(args) => completions::run(cli.global.json, args),
    }
}

/// What did not stop the command, for `--json`'s `warnings`.
static WARNINGS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Prints `warning: TEXT` on stderr now, and keeps it for `--json`.
pub(crate) fn warn(text: String) {
    eprintln!("warning: {text}");
    if let Ok(mut list) = WARNINGS.lock() {
        list.push(text);
    }
}

pub(crate) fn take_warnings() -> Vec<String> {
    WARNINGS
        .lock()
        .map(|mut list| std::mem::take(&mut *list))
        .unwrap_or_default()
}

/// A `maverick.*` key nobody reads is a typo until shown otherwise: one
/// line each, on every command that reads the configuration.
pub(crate) fn warn_unknown_keys(keys: &[UnknownKey]) {
    for key in keys {
        warn(key.to_string());
    }
}

/// The repository the current directory is in.
pub(crate) fn repository() -> Result<Git, CommandError> {
    let cwd = std::env::current_dir()
        .map_err(|e| CommandError::tool(format!("cannot read the current directory: {e}")))?;
    let git = Git::new(cwd, GitEnv::inherit());
    if !git.is_repository()? {
        return Err(CommandError::tool("not inside a git repository")
            .code(crate::error::ErrorCode::NotARepository)
            .hint(
                "run git maverick from a clone of the project (cd into it, or `git clone URL`)",
            ));
    }
    Ok(git)
}

/// The settings, with a warning for each unknown `maverick.*` key.
pub(crate) fn load_settings(git: &Git, global: &GlobalArgs) -> Result<Settings, CommandError> {
    let (settings, origins) = Settings::load_explained(git, &global.overrides())?;
    warn_unknown_keys(&origins.unknown_keys);
    Ok(settings)
}

/// What most commands need: the repository, its settings, and its surface.
pub(crate) struct Context {
    pub git: Git,
    pub settings: Settings,
}

impl Context {
    pub(crate) fn load(global: &GlobalArgs) -> Result<Context, CommandError> {
        let git = repository()?;
        let settings = load_settings(&git, global)?;
        Ok(Context { git, settings })
    }

    pub(crate) fn surface(&self) -> Result<Box<dyn Surface>, CommandError> {
        match self.settings.surface {
            SurfaceKind::Git => Ok(Box::new(
                GitSurface::new(
                    self.git.clone(),
                    &self.settings.remote,
                    self.settings.remote_url.as_deref().unwrap_or_default(),
                    &self.settings.instance,
                )
                .with_max_clock_skew(self.settings.max_clock_skew),
            )),
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
        let timeout = crate::config::ConfigKeys::read(&self.git)?
            .duration("httpTimeout")?
            .filter(|d| !d.is_zero())
            .unwrap_or(crate::config::DEFAULT_HTTP_TIMEOUT);
        let config = repo.and_then(|repo| {
            Ok(GithubConfig {
                api_url: settings.github_api_url.clone(),
                repo,
                token: resolve_token(&settings.github_api_url)?,
                trusted_authors: settings.trusted_authors.clone(),
                timeout,
                cache_dir: self
                    .git
                    .common_dir()
                    .ok()
                    .map(|dir| dir.join("maverick").join("github-cache")),
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
pub(crate) fn warn_if_guard_off(git: &Git, outcome: Outcome) -> Outcome {
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
        .note(format!(
            "warning: the pre-push guard is off in this clone, so a plain `git push` is not checked: {why}"
        ))
        .note(format!(
            "hint: {} (`git maverick hook status` tells when it is on; this warning is shown once)",
            status.fix.unwrap_or_else(|| "git maverick hook install".to_owned())
        ))
}
