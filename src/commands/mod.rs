//! The only code that knows about clap, terminals and exit codes.

pub mod coord;
pub mod dispatch;
pub mod hook;
pub mod hydrate;
pub mod resume;
pub mod run;
pub mod state;
pub mod task;

use std::ffi::OsString;
use std::io::Write as _;

use clap::Parser as _;
use serde_json::Value;

use crate::cli::{Cli, Command, GlobalArgs};
use crate::config::{Settings, SurfaceKind};
use crate::coord::record::ClaimStore;
use crate::error::{CommandError, Exit};
use crate::git::{Git, GitEnv};
use crate::surface::git::GitSurface;
use crate::surface::github::{resolve_token, GithubConfig, GithubError, GithubSurface};
use crate::surface::{Surface, SurfaceError};

/// The version of the JSON contract (`schemas/`, README "JSON output"):
/// additive fields keep it; a rename or a removal bumps it.
pub const SCHEMA_VERSION: u32 = 1;

/// What a command came to: an exit code, one JSON object, and lines for people.
#[derive(Debug)]
pub struct Outcome {
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
    pub fn new(exit: Exit, json: Value) -> Outcome {
        Outcome {
            exit,
            json,
            lines: Vec::new(),
            notes: Vec::new(),
            status: None,
        }
    }

    /// The process exit code.
    pub fn code(&self) -> u8 {
        self.status.unwrap_or(self.exit.code())
    }

    pub fn line(mut self, line: impl Into<String>) -> Outcome {
        self.lines.push(line.into());
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Outcome {
        self.notes.push(note.into());
        self
    }
}

/// Runs the command line `args` and returns the process exit code.
pub fn main(args: Vec<OsString>) -> u8 {
    let wants_json = args.iter().skip(1).any(|a| a == "--json");
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => {
            use clap::error::ErrorKind;
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
                print_json(&e.to_json());
            }
            let _ = err.print();
            return Exit::Usage.code();
        }
    };
    init_tracing(cli.global.verbose);
    let json = cli.global.json;
    match run(cli) {
        Ok(outcome) => {
            let code = outcome.code();
            if json {
                let mut object = match outcome.json {
                    Value::Object(map) => map,
                    other => {
                        let mut map = serde_json::Map::new();
                        map.insert("result".into(), other);
                        map
                    }
                };
                object.insert("schema_version".into(), SCHEMA_VERSION.into());
                object.insert("ok".into(), Value::Bool(code == 0));
                object.insert("exit_code".into(), code.into());
                let warnings: Vec<&str> = outcome
                    .notes
                    .iter()
                    .filter_map(|n| n.strip_prefix("warning: "))
                    .collect();
                object.insert("warnings".into(), warnings.into());
                print_json(&Value::Object(object));
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
                print_json(&err.to_json());
            }
            eprintln!("{err}");
            err.exit.code()
        }
    }
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

pub fn run(cli: Cli) -> Result<Outcome, CommandError> {
    match cli.command {
        Command::Coord(args) => coord::run(&cli.global, args),
        Command::Task(args) => task::run(&cli.global, args),
        Command::State(args) => state::run(&cli.global, args),
        Command::Hydrate(args) => hydrate::run(&cli.global, args),
        Command::Hook(args) => hook::run(&cli.global, args),
        Command::Resume(args) => resume::run(&cli.global, args),
        Command::Run(args) => run::run(&cli.global, args),
        Command::Dispatch(args) => dispatch::run(&cli.global, args),
    }
}

/// What most commands need: the repository, its settings, and its surface.
pub struct Context {
    pub git: Git,
    pub settings: Settings,
}

impl Context {
    pub fn load(global: &GlobalArgs) -> Result<Context, CommandError> {
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
        let settings = Settings::load(&git, &global.overrides())?;
        Ok(Context { git, settings })
    }

    pub fn surface(&self) -> Result<Box<dyn Surface>, CommandError> {
        match self.settings.surface {
            SurfaceKind::Git => Ok(Box::new(GitSurface::new(
                self.git.clone(),
                &self.settings.remote,
                self.settings.remote_url.as_deref().unwrap_or_default(),
                &self.settings.instance,
            ))),
            SurfaceKind::Github => Ok(Box::new(self.github_surface()?)),
        }
    }

    /// The GitHub surface of this repository. Never a fallback to the git
    /// surface: a missing token or repository is an error that says so.
    pub fn github_surface(&self) -> Result<GithubSurface, CommandError> {
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
            })
        });
        config
            .and_then(GithubSurface::new)
            .map_err(|e| SurfaceError::from(e).into())
    }

    pub fn claims(&self) -> Result<ClaimStore, CommandError> {
        Ok(ClaimStore::new(&self.git.common_dir()?))
    }
}
