//! git maverick as a native git subcommand: `help`, `--help` opening the man
//! page (as git's own commands do), `install-man-pages`, and `--version`
//! with the commit it was built from.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use clap::Args;
use clap_mangen::roff::{bold, roman, Roff};
use schemars::JsonSchema;
use serde::Serialize;

use super::Outcome;
use crate::commands::error::{CommandError, Exit};
use crate::config::{closest_name, KNOWN_KEYS};

/// The commit the binary was built from (7 hex digits), when known.
pub(crate) fn build_commit() -> Option<&'static str> {
    Some(env!("MAVERICK_BUILD_COMMIT")).filter(|c| !c.is_empty())
}

/// The date (YYYY-MM-DD, UTC) of that commit, when known.
pub(crate) fn build_date() -> Option<String> {
    let secs: i64 = env!("MAVERICK_BUILD_EPOCH").parse().ok()?;
    let stamp = crate::timefmt::Timestamp(secs).to_string();
    Some(stamp[..10].to_owned())
}

/// `0.2.0 (1a2b3c4 2026-12-01)`, or as much of it as the build knew.
pub(crate) fn version() -> String {
    let built: Vec<String> = build_commit()
        .map(str::to_owned)
        .into_iter()
        .chain(build_date())
        .collect();
    if built.is_empty() {
        env!("CARGO_PKG_VERSION").to_owned()
    } else {
        format!("{} ({})", env!("CARGO_PKG_VERSION"), built.join(" "))
    }
}

/// `--version --json`: the build.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct VersionOutput {
    #[schemars(schema_with = "program_name")]
    pub name: &'static str,
    pub version: &'static str,
    /// The commit the binary was built from (7 hex digits), when known.
    pub commit: Option<&'static str>,
    /// The date (YYYY-MM-DD, UTC) of that commit, when known.
    pub date: Option<String>,
}

fn program_name(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "const": "git-maverick" })
}

pub(crate) fn version_output() -> VersionOutput {
    VersionOutput {
        name: "git-maverick",
        version: env!("CARGO_PKG_VERSION"),
        commit: build_commit(),
        date: build_date(),
    }
}

/// `help [COMMAND...] --json`: a command's help text.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct HelpOutput {
    /// The subcommand path, `["coord", "claim"]`.
    pub command: Vec<String>,
    pub help: String,
}

/// `install-man-pages [DIR] --json`: the man pages written.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ManPagesOutput {
    pub dir: String,
    pub pages: Vec<String>,
}

/// The clap command with its run-time version line.
pub(crate) fn command() -> clap::Command {
    // Once per process: clap wants a 'static version string.
    let version: &'static str = Box::leak(version().into_boxed_str());
    crate::cli::command().version(version)
}

/// The subcommand path that `args` names (`["coord", "claim"]`), skipping
/// options, as far as the command tree goes.
fn subcommand_path(args: &[std::ffi::OsString]) -> Vec<String> {
    let mut cmd = crate::cli::command();
    let mut path = Vec::new();
    for arg in args.iter().skip(1) {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            break;
        }
        let found = cmd
            .get_subcommands()
            .find(|s| s.get_name() == arg || s.get_all_aliases().any(|a| a == arg))
            .cloned();
        if let Some(sub) = found {
            path.push(sub.get_name().to_owned());
            cmd = sub;
        }
    }
    path
}

/// The man page of a command path: `git-maverick`, `git-maverick-coord`, …
pub(crate) fn page_name(path: &[String]) -> String {
    std::iter::once("git-maverick")
        .chain(path.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join("-")
}

/// `--help` (not `-h`) opens the man page, as `git commit --help` does,
/// when `man` finds it; the exit status of `man`, or `None` to print the
/// help text instead.
pub(crate) fn open_man_page(args: &[std::ffi::OsString]) -> Option<u8> {
    let asked = args
        .iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--help");
    if !asked {
        return None;
    }
    let page = page_name(&subcommand_path(args));
    let found = std::process::Command::new("man")
        .args(["-w", &page])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        return None;
    }
    let status = std::process::Command::new("man").arg(&page).status().ok()?;
    Some(status.code().map_or(1, |c| c.clamp(0, 255) as u8))
}

#[derive(Debug, Args)]
pub(crate) struct HelpArgs {
    /// The command to show help for (`coord`, `coord claim`, …)
    #[arg(value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `git maverick help [COMMAND…]`: the help `-h` prints.
pub(crate) fn help(json: bool, args: HelpArgs) -> Result<Outcome<HelpOutput>, CommandError> {
    let mut cmd = command();
    cmd.build();
    let mut path = Vec::new();
    for name in &args.command {
        let found = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .find(|s| s.get_name() == name || s.get_all_aliases().any(|a| a == name))
            .cloned();
        let Some(sub) = found else {
            let known: Vec<&str> = cmd
                .get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(|s| s.get_name())
                .collect();
            let mut err = CommandError::usage(format!(
                "no such command: git maverick {}",
                path.iter()
                    .chain(std::iter::once(name))
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
            if let Some(close) = closest_name(name, known.iter().copied()) {
                let mut fixed = path.clone();
                fixed.push(close.to_owned());
                err = err.hint(format!(
                    "did you mean `git maverick help {}`?",
                    fixed.join(" ")
                ));
            }
            return Err(err.hint(format!("the commands here: {}", known.join(", "))));
        };
        path.push(sub.get_name().to_owned());
        cmd = sub;
    }
    let output = HelpOutput {
        help: cmd.render_help().to_string(),
        command: path,
    };
    if !json {
        // Through clap's own printer: colour on a terminal, plain in a pipe.
        let _ = cmd.print_help();
    }
    Ok(Outcome::new(Exit::Ok, output))
}

#[derive(Debug, Args)]
pub(crate) struct InstallManPagesArgs {
    /// Where to write the pages [default: <dir of the binary>/../share/man/man1,
    /// where man finds them for every bin directory on PATH]
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// `git maverick install-man-pages [DIR]`.
pub(crate) fn install_man_pages(
    args: InstallManPagesArgs,
) -> Result<Outcome<ManPagesOutput>, CommandError> {
    let dir = match args.dir {
        Some(dir) => dir,
        None => default_man_dir()?,
    };
    let pages =
        man_pages().map_err(|e| CommandError::tool(format!("cannot render the man pages: {e}")))?;
    let io_err = |path: &Path, e: std::io::Error| {
        CommandError::tool(format!("cannot write {}: {e}", path.display()))
            .hint("name a directory you can write to: `git maverick install-man-pages DIR`")
    };
    std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
    let written = write_pages(&dir, &pages, true).map_err(|(path, e)| io_err(&path, e))?;
    let mut outcome = Outcome::new(
        Exit::Ok,
        ManPagesOutput {
            dir: dir.display().to_string(),
            pages: written,
        },
    )
    .line(format!(
        "installed {} man pages in {}",
        pages.len(),
        dir.display()
    ));
    if !man_finds(&dir) {
        outcome = outcome.hint(man_hint(&dir));
    }
    Ok(outcome)
}

/// Writes `pages` into `dir`, the top page (`git-maverick.1`, the first)
/// last, so that a write cut short is redone by [`ensure_man_pages`].
fn write_pages(
    dir: &Path,
    pages: &[(String, Vec<u8>)],
    sync: bool,
) -> Result<Vec<String>, (PathBuf, std::io::Error)> {
    let mut written = Vec::new();
    for (name, text) in pages.iter().skip(1).chain(pages.first()) {
        let path = dir.join(name);
        crate::records::files::replace_file(&path, text, sync).map_err(|e| (path.clone(), e))?;
        written.push(path.display().to_string());
    }
    written.rotate_right(1);
    Ok(written)
}

/// The man pages next to the binary, written the first time it runs (and
/// again when the binary is newer than them, after an upgrade): `cargo
/// install` and an unpacked archive run no install step, and git answers
/// `git maverick --help` with `man git-maverick` without asking maverick.
/// So once any command has run (the quick start's `hook install`, or a
/// mistyped command whose tip says `--help`), `--help` and `git help
/// maverick` open the pages. Two stats when they are current; a directory
/// it may not write to (a system prefix) is left alone, silently, and
/// `install-man-pages DIR` remains the way to put them elsewhere.
pub(crate) fn ensure_man_pages() {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let Ok(dir) = default_man_dir() else {
        return;
    };
    let modified = |path: &Path| std::fs::metadata(path).and_then(|m| m.modified());
    if let (Ok(page), Ok(binary)) = (modified(&dir.join("git-maverick.1")), modified(&exe)) {
        if page >= binary {
            return;
        }
    }
    let Ok(pages) = man_pages() else {
        return;
    };
    if std::fs::create_dir_all(&dir).is_ok() {
        let _ = write_pages(&dir, &pages, false);
    }
}

/// How to read pages `man` does not find: it reads section 1 from the
/// `man1` directory of each MANPATH entry, so a directory of another name
/// is no MANPATH entry's `man1`.
fn man_hint(dir: &Path) -> String {
    let why = "man looks in <dir>/../share/man for each bin directory on PATH";
    if dir.file_name().is_some_and(|name| name == "man1") {
        let root = dir.parent().unwrap_or(dir);
        return format!(
            "{why}; to read these pages add {} to MANPATH",
            root.display()
        );
    }
    format!(
        "{why}, and reads pages from a man1 directory there or in MANPATH; to read \
         these pages, install them into {} and add {} to MANPATH, or open one: man {}",
        dir.join("man1").display(),
        dir.display(),
        dir.join("git-maverick.1").display()
    )
}

/// `<dir of the binary>/../share/man/man1`.
fn default_man_dir() -> Result<PathBuf, CommandError> {
    let exe = std::env::current_exe()
        .map_err(|e| CommandError::tool(format!("cannot tell where this binary is: {e}")))?;
    let bin = exe.parent().unwrap_or(Path::new("/"));
    let prefix = bin.parent().unwrap_or(bin);
    Ok(prefix.join("share").join("man").join("man1"))
}

/// Whether man-db's rule finds `dir` (`…/share/man/man1`) from PATH or MANPATH.
fn man_finds(dir: &Path) -> bool {
    let Some(man_root) = dir.parent() else {
        return false;
    };
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let on = |var: &str, root_of: &dyn Fn(&Path) -> PathBuf| {
        std::env::var_os(var).is_some_and(|paths| {
            std::env::split_paths(&paths).any(|p| same(&root_of(&p), man_root))
        })
    };
    on("MANPATH", &|p: &Path| p.to_owned())
        || on("PATH", &|bin: &Path| {
            bin.parent().unwrap_or(bin).join("share").join("man")
        })
}

/// Every man page: `git-maverick.1` and one per visible subcommand, nested
/// ones too (`git-maverick-coord-claim.1`), as (file name, roff).
pub(crate) fn man_pages() -> std::io::Result<Vec<(String, Vec<u8>)>> {
    let mut cmd = command();
    cmd.build();
    let mut pages = Vec::new();
    render_pages(&cmd, true, &mut pages)?;
    Ok(pages)
}

fn render_pages(
    cmd: &clap::Command,
    top: bool,
    pages: &mut Vec<(String, Vec<u8>)>,
) -> std::io::Result<()> {
    let mut man = clap_mangen::Man::new(cmd.clone())
        .manual("Git Maverick Manual")
        .source(format!("git-maverick {}", env!("CARGO_PKG_VERSION")));
    if let Some(date) = build_date() {
        man = man.date(date);
    }
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    if cmd.get_arguments().any(|a| !a.is_hide_set()) {
        man.render_options_section(&mut out)?;
    }
    if cmd.get_subcommands().any(|s| !s.is_hide_set()) {
        man.render_subcommands_section(&mut out)?;
    }
    let mut roff = Roff::new();
    exit_status_section(&mut roff);
    if top {
        environment_section(&mut roff);
        configuration_section(&mut roff, cmd);
    }
    see_also_section(&mut roff, cmd, top);
    roff.to_writer(&mut out)?;
    man.render_version_section(&mut out)?;
    pages.push((man.get_filename(), out));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        render_pages(sub, false, pages)?;
    }
    Ok(())
}

/// SPEC 10's exit codes: the same on every command.
pub(crate) const EXIT_CODES: &[(u8, &str)] = &[
    (0, "ok"),
    (1, "error: the tool failed (git, the network, a file)"),
    (2, "usage: the command line is wrong"),
    (3, "blocked: the issue waits on another (blocked-by:#N)"),
    (
        4,
        "held live: another instance holds the claim and its lease is live, or a trusted open \
         pull request has the issue in progress",
    ),
    (
        5,
        "held stale: another instance holds the claim but its lease ran out (take it over), or \
         this instance's own lease lapsed (`decision: lapsed`; `coord claim` takes it back)",
    ),
    (
        6,
        "lost race: another claim won the settle; dispatch: its dispatchSlots + 8 rounds ran \
         out, each lost to another claim (run dispatch again)",
    ),
    (
        7,
        "claim lost: this instance's claim was taken over, released or its label removed, or \
         its own lease lapsed (heartbeat, task done, a push; run after two failed heartbeats)",
    ),
    (8, "collision: another writer is on the branch"),
    (9, "no slot: every dispatch slot is busy"),
];

/// The variables maverick reads (and the ones `run` sets for its command).
pub(crate) const ENVIRONMENT: &[(&str, &str)] = &[
    ("GH_TOKEN", "The GitHub token (checked first); never printed."),
    ("GITHUB_TOKEN", "The GitHub token when GH_TOKEN is not set; else `gh auth token` is asked."),
    ("GH_ENTERPRISE_TOKEN, GITHUB_ENTERPRISE_TOKEN", "The token for a GitHub Enterprise Server host, in this order, then `gh auth token --hostname HOST`; GH_TOKEN and GITHUB_TOKEN are for github.com and never sent to another host."),
    ("GITHUB_API_URL", "The GitHub API's base URL; beats maverick.githubApiUrl."),
    ("GH_REPO", "The GitHub repository as [HOST/]OWNER/NAME, as gh reads it; -R beats it, it beats maverick.repo."),
    ("GH_HOST", "The GitHub host when nothing else names one, read as gh reads it: any *.github.com is github.com (API https://api.github.com), a GHE.com tenant's subdomain the tenant (https://api.TENANT.ghe.com), any other host GitHub Enterprise Server (https://HOST/api/v3); its remotes count as GitHub remotes."),
    ("MAVERICK_INSTANCE", "This instance's id; beats maverick.instance (MAVERICK_INSTANCE_ID too)."),
    ("CLAUDE_CODE_SESSION_ID", "An agent session: the instance id is derived from it when nothing else sets one."),
    ("MAVERICK_ISSUE, MAVERICK_GENERATION", "Set by `git maverick run` for the command it runs (with MAVERICK_INSTANCE)."),
    ("NO_COLOR", "No colour in help and errors (colour is only used on a terminal anyway)."),
];

fn tagged_paragraph(roff: &mut Roff, tag: &str, text: &str) {
    roff.control("TP", []);
    roff.text([bold(tag)]);
    roff.text([roman(text)]);
}

fn exit_status_section(roff: &mut Roff) {
    roff.control("SH", ["EXIT STATUS"]);
    for (code, meaning) in EXIT_CODES {
        tagged_paragraph(roff, &code.to_string(), meaning);
    }
    roff.control("PP", []);
    roff.text([roman(
        "With --json the exit code is also the object's exit_code. `run` exits with its command's status.",
    )]);
}

fn environment_section(roff: &mut Roff) {
    roff.control("SH", ["ENVIRONMENT"]);
    for (var, meaning) in ENVIRONMENT {
        tagged_paragraph(roff, var, meaning);
    }
}

fn configuration_section(roff: &mut Roff, cmd: &clap::Command) {
    roff.control("SH", ["CONFIGURATION"]);
    roff.control("PP", []);
    roff.text([roman(
        "Every tunable is a `git config maverick.*` key; the flag of the same name beats it. \
         `git maverick config` shows each setting and where it came from; a key not listed here is \
         warned about.",
    )]);
    for key in KNOWN_KEYS {
        tagged_paragraph(
            roff,
            &format!("maverick.{}", key.name),
            &format!("{} (default: {}).", key.about, key.default),
        );
    }
    // The flags every command shares (`-h` leaves them out; `--help` shows
    // them under this heading): each beats its key for one command.
    roff.control("PP", []);
    roff.text([roman(
        "The flags every command takes, each beating its key for one run:",
    )]);
    for arg in cmd
        .get_arguments()
        .filter(|a| a.get_help_heading() == Some("Configuration"))
    {
        let mut tag = arg
            .get_short()
            .map(|c| format!("-{c}, "))
            .unwrap_or_default();
        if let Some(long) = arg.get_long() {
            tag.push_str(&format!("--{long}"));
        }
        if let Some(name) = arg.get_value_names().and_then(|v| v.first()) {
            tag.push_str(&format!(" {name}"));
        }
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        tagged_paragraph(roff, &tag, &help);
    }
}

fn see_also_section(roff: &mut Roff, cmd: &clap::Command, top: bool) {
    roff.control("SH", ["SEE ALSO"]);
    let mut refs: Vec<String> = Vec::new();
    if !top {
        refs.push("git-maverick(1)".to_owned());
    }
    let display = cmd.get_display_name().unwrap_or(cmd.get_name());
    refs.extend(
        cmd.get_subcommands()
            .filter(|s| !s.is_hide_set())
            .map(|s| format!("{display}-{}(1)", s.get_name())),
    );
    refs.push("git(1)".to_owned());
    roff.text([roman(refs.join(", "))]);
}

/// Writes `text` to stdout; a closed pipe is not an error.
pub(crate) fn print_raw(text: &[u8]) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text).and_then(|()| stdout.flush());
}
