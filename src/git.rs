//! The one builder for every git subprocess.
//!
//! Network operations and worktree changes always go through the `git` CLI so
//! that the user's credential helpers, ssh config and proxies just work; reads
//! go through it too (see the README for why there is no git library).

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Whether a person watches stderr (a terminal, and no `--json`): then
/// fetches and pushes say what they wait for and let git's own progress
/// through, as git does on a terminal.
static SHOW_PROGRESS: AtomicBool = AtomicBool::new(false);

/// Turns on the progress of fetches and pushes for this process.
pub(crate) fn show_progress(on: bool) {
    SHOW_PROGRESS.store(on, Ordering::Relaxed);
}

/// Says what maverick waits for, when a person watches (as fetches and
/// pushes do): a checkout of a large tree takes seconds, silently.
fn announce(what: &str) {
    if SHOW_PROGRESS.load(Ordering::Relaxed) {
        let _ = writeln!(std::io::stderr(), "git maverick: {what}…");
    }
}

/// The trailer naming the issue a task commit belongs to (SPEC 6).
pub(crate) const ISSUE_TRAILER: &str = "Maverick-Issue";
/// The trailer naming the task number(s) a commit completes.
pub(crate) const TASK_TRAILER: &str = "Maverick-Task";

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("could not run `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}){}", stderr_suffix(.stderr))]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("`{command}` printed something that is not UTF-8")]
    NotUtf8 { command: String },
    #[error("{0}")]
    TooOld(#[source] GitTooOld),
}

/// A git older than a feature needs. Its own type, so that the command
/// layer finds it in any error's source chain (wrappers that are
/// `transparent` hide the [`GitError`] itself) and adds the way out.
#[derive(Debug, thiserror::Error)]
#[error("git {needed} or newer is needed for {feature}; this is git {found}")]
pub struct GitTooOld {
    pub feature: &'static str,
    pub needed: GitVersion,
    pub found: GitVersion,
}

fn stderr_suffix(stderr: &str) -> String {
    let trimmed = stderr.trim();
    if trimmed.is_empty() {
        String::new()
    } else {
        format!(
            ": {}",
            trimmed
                .lines()
                .map(str::trim_end)
                .filter(|line| !line.is_empty())
                .take(6)
                .collect::<Vec<_>>()
                .join(" / ")
        )
    }
}

impl GitError {
    /// git's own words, for callers that sort failures by what git said.
    pub(crate) fn stderr(&self) -> &str {
        match self {
            GitError::Failed { stderr, .. } => stderr,
            _ => "",
        }
    }
}

/// A git release, `major.minor.patch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct GitVersion(pub u32, pub u32, pub u32);

impl std::fmt::Display for GitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.0, self.1, self.2)
    }
}

impl GitVersion {
    /// Reads `git version 2.39.5` (and vendor tails such as
    /// `2.39.5.windows.1` or `2.39.5 (Apple Git-154)`).
    pub(crate) fn parse(text: &str) -> Option<GitVersion> {
        let number = text.trim().strip_prefix("git version ")?;
        let mut parts = number
            .split(|c: char| !c.is_ascii_digit())
            .map(|p| p.parse::<u32>().ok());
        let major = parts.next()??;
        let minor = parts.next()??;
        let patch = parts.next().flatten().unwrap_or(0);
        Some(GitVersion(major, minor, patch))
    }
}

/// A git feature newer than what every supported system ships: the calls
/// that use it tell an older git by its answer, and only then ask its version.
struct Requirement {
    feature: &'static str,
    needed: GitVersion,
}

const PATH_FORMAT_ABSOLUTE: &str = "--path-format=absolute";

const PATH_FORMAT: Requirement = Requirement {
    feature: "`git rev-parse --path-format`",
    needed: GitVersion(2, 31, 0),
};

/// The environment every git process of one command runs with. The command
/// layer takes it from the process once ([`GitEnv::inherit`]); tests build
/// their own. Nothing here, nor any caller, changes the process environment.
#[derive(Clone, Debug, Default)]
pub struct GitEnv {
    vars: Vec<(OsString, OsString)>,
}

impl GitEnv {
    /// This process's environment, as git hooks and users expect it passed
    /// on (`GIT_DIR` in a hook, `HOME`, `PATH`, credential helpers' variables).
    pub(crate) fn inherit() -> GitEnv {
        GitEnv {
            vars: std::env::vars_os().collect(),
        }
    }

    /// No variables at all; add what git needs with [`GitEnv::set`].
    pub fn empty() -> GitEnv {
        GitEnv::default()
    }

    pub fn set(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> GitEnv {
        let key = key.as_ref().to_owned();
        self.vars.retain(|(k, _)| *k != key);
        self.vars.push((key, value.as_ref().to_owned()));
        self
    }

    /// A variable's value; an empty one counts as unset.
    pub(crate) fn get(&self, key: &str) -> Option<&OsStr> {
        self.vars
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_os_str())
            .filter(|v| !v.is_empty())
    }

    /// The variables a git process gets: these, with git's messages pinned
    /// to English (`LC_MESSAGES=C`) and the user's character set kept. An
    /// `LC_ALL` would override `LC_MESSAGES`, so its value moves to the
    /// categories it stood for; `LANGUAGE` would pick a translation, so it goes.
    fn for_git(&self) -> Vec<(OsString, OsString)> {
        const CATEGORIES: [&str; 5] = [
            "LC_CTYPE",
            "LC_COLLATE",
            "LC_NUMERIC",
            "LC_TIME",
            "LC_MONETARY",
        ];
        let all = self.get("LC_ALL").map(OsStr::to_owned);
        let mut vars: Vec<(OsString, OsString)> = self
            .vars
            .iter()
            .filter(|(k, _)| {
                !(k == "LC_ALL"
                    || k == "LANGUAGE"
                    || k == "LC_MESSAGES"
                    || k == "GIT_TERMINAL_PROMPT"
                    || (all.is_some() && CATEGORIES.iter().any(|c| k == c)))
            })
            .cloned()
            .collect();
        if let Some(all) = all {
            vars.extend(CATEGORIES.iter().map(|c| (c.into(), all.clone())));
        }
        vars.push(("LC_MESSAGES".into(), "C".into()));
        // A tool that runs in hooks and scripts must never wait for a password.
        vars.push(("GIT_TERMINAL_PROMPT".into(), "0".into()));
        vars
    }
}

/// A repository (or any directory) that git commands run in, with the
/// environment they run with.
#[derive(Clone, Debug)]
pub struct Git {
    dir: PathBuf,
    env: Arc<GitEnv>,
}

/// What HEAD is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Head {
    Branch(String),
    Detached,
    /// A branch whose name is not UTF-8 (git allows any bytes but a few):
    /// never one maverick manages, whose records name branches in UTF-8.
    /// Its name as shown, invalid bytes replaced.
    NotUtf8(String),
}

/// One commit's task trailers (`Maverick-Issue`, `Maverick-Task`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TrailerCommit {
    pub sha: String,
    pub short: String,
    pub issues: Vec<u64>,
    pub tasks: Vec<usize>,
}

impl TrailerCommit {
    pub(crate) fn names_issue(&self, issue: u64) -> bool {
        self.issues.contains(&issue)
    }
}

/// Which end of a history comes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Order {
    NewestFirst,
    OldestFirst,
}

/// What a push with a lease came to.
#[derive(Debug)]
pub(crate) enum PushOutcome {
    Pushed,
    /// The remote or git refused: `status` is porcelain's reason for the
    /// refused ref (`stale info`, `fetch first`, a hook's words), `said`
    /// everything git printed, `error` the failure with git's stderr.
    Refused {
        status: Option<String>,
        said: String,
        error: GitError,
    },
}

impl PushOutcome {
    fn of(out: GitOutput) -> PushOutcome {
        if out.success() {
            return PushOutcome::Pushed;
        }
        let said = format!("{}\n{}", String::from_utf8_lossy(&out.stdout), out.stderr);
        let status = said
            .lines()
            .find(|l| l.starts_with('!'))
            .map(|l| l.rsplit('\t').next().unwrap_or(l).trim().to_owned());
        PushOutcome::Refused {
            status,
            said,
            error: out.into_error(),
        }
    }
}

/// Whether git runs the local pre-push hook.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Hooks {
    Run,
    Skip,
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>, env: GitEnv) -> Git {
        Git {
            dir: dir.into(),
            env: Arc::new(env),
        }
    }

    /// The same environment (and git) in another directory.
    pub(crate) fn at(&self, dir: impl Into<PathBuf>) -> Git {
        Git {
            dir: dir.into(),
            env: Arc::clone(&self.env),
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    pub(crate) fn env(&self) -> &GitEnv {
        &self.env
    }

    fn cmd<I, S>(&self, args: I) -> GitCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        GitCommand {
            dir: self.dir.clone(),
            env: Arc::clone(&self.env),
            args: args.into_iter().map(|a| a.as_ref().to_owned()).collect(),
            stdin: None,
            envs: Vec::new(),
            network: None,
        }
    }

    fn read<I, S>(&self, args: I) -> Result<String, GitError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd(args).read()
    }

    /// The version of the git this environment runs (asked only to name
    /// it in an error).
    fn version(&self) -> Result<GitVersion, GitError> {
        let text = self.read(["version"])?;
        // A build that spells its version unlike git's own is taken as new.
        Ok(GitVersion::parse(&text).unwrap_or(GitVersion(u32::MAX, 0, 0)))
    }

    // The repository and its files.

    /// True when the directory is inside a git repository.
    pub(crate) fn is_repository(&self) -> Result<bool, GitError> {
        Ok(self
            .cmd(["rev-parse", "--git-dir"])
            .output_unchecked()?
            .success())
    }

    /// The directory shared by all worktrees of this repository.
    pub fn common_dir(&self) -> Result<PathBuf, GitError> {
        self.absolute_path("--git-common-dir", None)
    }

    /// This worktree's own git directory.
    pub(crate) fn git_dir(&self) -> Result<PathBuf, GitError> {
        self.absolute_path("--git-dir", None)
    }

    /// Where git keeps `name` (`hooks`, `info/exclude`), honouring
    /// `core.hooksPath` and linked worktrees.
    pub(crate) fn git_path(&self, name: &str) -> Result<PathBuf, GitError> {
        self.absolute_path("--git-path", Some(name))
    }

    /// No `git version` process of its own: a git older than 2.31 does not
    /// know `--path-format`, and rev-parse echoes an option it does not
    /// know on a line of its own. Only then is the version asked, to name
    /// it in the error.
    fn absolute_path(&self, what: &str, name: Option<&str>) -> Result<PathBuf, GitError> {
        let text = self.read(
            ["rev-parse", PATH_FORMAT_ABSOLUTE, what]
                .into_iter()
                .chain(name),
        )?;
        if text
            .split_once('\n')
            .is_some_and(|(first, _)| first == PATH_FORMAT_ABSOLUTE)
        {
            return Err(GitError::TooOld(GitTooOld {
                feature: PATH_FORMAT.feature,
                needed: PATH_FORMAT.needed,
                found: self.version()?,
            }));
        }
        Ok(PathBuf::from(text))
    }

    /// The root of this worktree.
    pub(crate) fn toplevel(&self) -> Result<PathBuf, GitError> {
        Ok(PathBuf::from(self.read(["rev-parse", "--show-toplevel"])?))
    }

    /// True when git's ignore rules cover `path`, tracked or not.
    pub(crate) fn is_ignored(&self, path: &Path) -> Result<bool, GitError> {
        let out = self
            .cmd(["check-ignore", "-q", "--no-index", "--"])
            .arg(path)
            .output_unchecked()?;
        match out.code {
            Some(0) => Ok(true),
            Some(1) => Ok(false),
            _ => Err(out.into_error()),
        }
    }

    // Configuration.

    /// `git config --get KEY`, `None` when unset.
    pub(crate) fn config_get(&self, key: &str) -> Result<Option<String>, GitError> {
        let out = self.cmd(["config", "--get", key]).output_unchecked()?;
        match out.code {
            Some(0) => Ok(Some(out.stdout_text()?.trim_end_matches('\n').to_owned())),
            Some(1) => Ok(None),
            _ => Err(out.into_error()),
        }
    }

    /// The same, with where each came from (`git config --show-scope
    /// --show-origin`).
    pub(crate) fn config_entries(&self, pattern: &str) -> Result<Vec<ConfigEntry>, GitError> {
        let out = self
            .cmd([
                "config",
                "-z",
                "--show-scope",
                "--show-origin",
                "--get-regexp",
                pattern,
            ])
            .output_unchecked()?;
        match out.code {
            Some(0) => {
                // Each entry: scope NUL origin NUL key [LF value] NUL.
                let mut entries = Vec::new();
                let mut fields = out.stdout.split(|b| *b == 0);
                while let (Some(scope), Some(file), Some(entry)) =
                    (fields.next(), fields.next(), fields.next())
                {
                    let entry = String::from_utf8_lossy(entry);
                    let (key, value) = match entry.split_once('\n') {
                        Some((key, value)) => (key.to_owned(), value.to_owned()),
                        None => (entry.into_owned(), "true".to_owned()),
                    };
                    let file = String::from_utf8_lossy(file);
                    entries.push(ConfigEntry {
                        scope: String::from_utf8_lossy(scope).into_owned(),
                        file: file.strip_prefix("file:").unwrap_or(&file).to_owned(),
                        key,
                        value,
                    });
                }
                Ok(entries)
            }
            // 1: no such key. Outside a repository git still reads the global files.
            Some(1) => Ok(Vec::new()),
            _ => Err(out.into_error()),
        }
    }

    /// The system and global configuration files this git reads, whether
    /// they exist or not (`git var -l`'s `GIT_CONFIG_SYSTEM` and
    /// `GIT_CONFIG_GLOBAL`, git 2.42 on). `None` from an older git, which
    /// does not name them.
    pub(crate) fn standard_config_files(&self) -> Result<Option<Vec<PathBuf>>, GitError> {
        use std::os::unix::ffi::OsStrExt as _;
        let out = self.cmd(["var", "-l"]).output_unchecked()?;
        if !out.success() {
            return Err(out.into_error());
        }
        let mut files = Vec::new();
        let mut global = false;
        for line in out.stdout.split(|b| *b == b'\n') {
            if let Some(path) = line.strip_prefix(b"GIT_CONFIG_SYSTEM=") {
                files.push(PathBuf::from(OsStr::from_bytes(path)));
            } else if let Some(path) = line.strip_prefix(b"GIT_CONFIG_GLOBAL=") {
                global = true;
                files.push(PathBuf::from(OsStr::from_bytes(path)));
            }
        }
        Ok(global.then_some(files))
    }

    pub(crate) fn config_set(&self, key: &str, value: &str) -> Result<(), GitError> {
        self.cmd(["config", key, value]).output().map(drop)
    }

    /// Makes `remote`'s `branch` the upstream of the local branch of that
    /// name, as `git push -u` does, when it has none: maverick pushes a
    /// commit, not the branch, so git sets none itself; with it a plain
    /// `git push` or `git pull` works and `git status` shows the tracking.
    pub(crate) fn set_upstream_if_unset(&self, remote: &str, branch: &str) -> Result<(), GitError> {
        let local = format!("refs/heads/{branch}");
        if self.resolve_commit(&local)?.is_none()
            || self
                .config_get(&format!("branch.{branch}.merge"))?
                .is_some()
        {
            return Ok(());
        }
        self.config_set(&format!("branch.{branch}.remote"), remote)?;
        self.config_set(&format!("branch.{branch}.merge"), &local)
    }

    // Commits and branches.

    /// The commit `rev` names, `None` when it names none.
    pub(crate) fn resolve_commit(&self, rev: &str) -> Result<Option<String>, GitError> {
        let out = self
            .cmd(["rev-parse", "--verify", "--quiet", "--end-of-options"])
            .arg(format!("{rev}^{{commit}}"))
            .output_unchecked()?;
        match out.code {
            Some(0) => Ok(Some(out.stdout_text()?.trim().to_owned())),
            Some(1) => Ok(None),
            _ => Err(out.into_error()),
        }
    }

    /// The commit `rev` names; an error carrying git's words when none.
    pub(crate) fn commit_of(&self, rev: &str) -> Result<String, GitError> {
        self.read([
            "rev-parse",
            "--verify",
            "--end-of-options",
            &format!("{rev}^{{commit}}"),
        ])
    }

    /// The abbreviated name of a commit.
    pub(crate) fn short_name(&self, sha: &str) -> Result<String, GitError> {
        self.read(["rev-parse", "--short", "--end-of-options", sha])
    }

    /// A commit's subject line.
    pub(crate) fn subject(&self, rev: &str) -> Result<String, GitError> {
        self.read(["log", "-1", "--format=%s", "--end-of-options", rev])
    }

    /// `short subject` of each commit in `range`, newest first.
    pub(crate) fn oneline_log(&self, range: &str) -> Result<Vec<String>, GitError> {
        let log = self.read([
            "log",
            "--no-decorate",
            "--format=%h %s",
            "--end-of-options",
            range,
        ])?;
        Ok(log.lines().map(str::to_owned).collect())
    }

    /// True when `ancestor` is an ancestor of (or equal to) `descendant`. An
    /// object this clone does not have cannot be an ancestor of one it has.
    pub(crate) fn is_ancestor(&self, ancestor: &str, descendant: &str) -> Result<bool, GitError> {
        let out = self
            .cmd(["merge-base", "--is-ancestor", "--end-of-options"])
            .args([ancestor, descendant])
            .output_unchecked()?;
        match out.code {
            Some(0) => Ok(true),
            // 128: an object this clone does not have.
            Some(1) | Some(128) => Ok(false),
            _ => Err(out.into_error()),
        }
    }

    /// The reflogs of `refnames`, each newest first, as git keeps them
    /// (files or reftable alike), in one process; a ref without one (or
    /// missing) has none. With `newest`, only that many entries in all:
    /// git walks the reflogs together, newest entry first (by the entry's
    /// time; a tie goes to the ref named first), so each ref gets a prefix
    /// of its reflog, and git loads no commit beyond them (the cost of a
    /// reflog read is its entries' commits). Fewer than `newest` entries
    /// means every reflog was read whole.
    pub(crate) fn reflogs(
        &self,
        refnames: &[String],
        newest: Option<usize>,
    ) -> Result<BTreeMap<String, Vec<ReflogEntry>>, GitError> {
        if refnames.is_empty() {
            return Ok(BTreeMap::new());
        }
        self.start_reflogs(refnames, newest)?.finish()
    }

    /// [`Git::reflogs`] started and not waited for: git runs while this
    /// process does other work (the pre-push hook reads its records
    /// meanwhile). [`ReflogRead::finish`] reads the answer.
    pub(crate) fn start_reflogs(
        &self,
        refnames: &[String],
        newest: Option<usize>,
    ) -> Result<ReflogRead, GitError> {
        let mut cmd = self
            .cmd([
                "log",
                "--walk-reflogs",
                "--ignore-missing",
                // `log.showSignature` would run gpg on every signed commit.
                "--no-show-signature",
                // The selector `%gD` then names the entry's time: `ref@{1733390000}`.
                "--date=unix",
                "--format=%gD%x09%H%x09%P%x09%gs",
            ])
            // Ids, ref names and reflog messages, never a translated or
            // re-encoded word: git need not load a locale. Its answer in
            // one write at the end, not a write (and a wake-up here) per line.
            .env("LC_ALL", "C")
            .env("GIT_FLUSH", "0");
        if let Some(n) = newest {
            cmd = cmd.arg(format!("--max-count={n}"));
        }
        let running = cmd
            .arg("--end-of-options")
            .args(refnames)
            .arg("--")
            .start()?;
        Ok(ReflogRead {
            refnames: refnames.to_vec(),
            newest,
            running,
        })
    }

    /// What is checked out here.
    pub(crate) fn head(&self) -> Result<Head, GitError> {
        let out = self
            .cmd(["symbolic-ref", "--quiet", "--short", "HEAD"])
            .output_unchecked()?;
        match out.code {
            Some(0) => Ok(match std::str::from_utf8(&out.stdout) {
                Ok(name) => Head::Branch(name.trim().to_owned()),
                Err(_) => Head::NotUtf8(String::from_utf8_lossy(&out.stdout).trim().to_owned()),
            }),
            Some(1) => Ok(Head::Detached),
            _ => Err(out.into_error()),
        }
    }

    /// The branch checked out here; `None` on a detached HEAD, or on a
    /// branch whose name is not UTF-8, which maverick never manages.
    pub(crate) fn current_branch(&self) -> Result<Option<String>, GitError> {
        Ok(match self.head()? {
            Head::Branch(name) => Some(name),
            Head::Detached | Head::NotUtf8(_) => None,
        })
    }

    /// True when the index differs from HEAD.
    pub(crate) fn has_staged_changes(&self) -> Result<bool, GitError> {
        let out = self
            .cmd(["diff", "--cached", "--quiet"])
            .output_unchecked()?;
        match out.code {
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            _ => Err(out.into_error()),
        }
    }

    /// The files the index deletes from HEAD, and how many files HEAD
    /// tracks (counted only when something is deleted).
    pub(crate) fn staged_deletions(&self) -> Result<(Vec<String>, usize), GitError> {
        let deleted = self.nul_separated([
            "diff",
            "--cached",
            "--name-only",
            "--no-renames",
            "--diff-filter=D",
            "-z",
        ])?;
        if deleted.is_empty() {
            return Ok((deleted, 0));
        }
        let tracked = self.nul_separated([
            "ls-tree",
            "-r",
            "--name-only",
            "-z",
            "--end-of-options",
            "HEAD",
        ])?;
        Ok((deleted, tracked.len()))
    }

    /// Commits the index with `message` and the task trailers. git's
    /// refusal (a hook, no identity) keeps git's words.
    pub(crate) fn commit_task(
        &self,
        message: &str,
        issue: u64,
        task: usize,
    ) -> Result<(), GitError> {
        self.cmd(["commit", "--quiet", "--cleanup=strip", "-m", message])
            .arg(format!("--trailer={ISSUE_TRAILER}: {issue}"))
            .arg(format!("--trailer={TASK_TRAILER}: {task}"))
            .output()
            .map(drop)
    }

    /// The task trailers of the commits `revs` names (a commit and its
    /// history, or a range), at most `max` of them.
    pub(crate) fn task_trailers(
        &self,
        revs: &str,
        max: usize,
        order: Order,
    ) -> Result<Vec<TrailerCommit>, GitError> {
        let format = format!(
            "--format=%H%x1f%h%x1f%(trailers:key={ISSUE_TRAILER},valueonly,separator=%x2C)%x1f%(trailers:key={TASK_TRAILER},valueonly,separator=%x2C)%x1e"
        );
        let mut cmd = self.cmd(["log", &format, &format!("--max-count={max}")]);
        if order == Order::OldestFirst {
            cmd = cmd.arg("--reverse");
        }
        let out = cmd.args(["--end-of-options", revs]).output()?;
        let text = out.stdout_text()?;
        let numbers = |field: &str| -> Vec<_> {
            field
                .split(',')
                .filter_map(|v| v.trim().trim_start_matches('#').parse().ok())
                .collect()
        };
        Ok(text
            .split('\x1e')
            .filter_map(|record| {
                let fields: Vec<&str> = record.trim_matches('\n').split('\x1f').collect();
                let [sha, short, issues, tasks] = fields[..] else {
                    return None;
                };
                Some(TrailerCommit {
                    sha: sha.to_owned(),
                    short: short.to_owned(),
                    issues: numbers(issues),
                    tasks: numbers(tasks)
                        .into_iter()
                        .map(|n: u64| n as usize)
                        .collect(),
                })
            })
            .collect())
    }

    /// Moves `refname` to `new` only if it is at `old` (a compare-and-swap
    /// on a local ref); `old == None` moves it whatever it is.
    pub(crate) fn update_ref(
        &self,
        refname: &str,
        new: &str,
        old: Option<&str>,
        reason: &str,
    ) -> Result<(), GitError> {
        self.cmd(["update-ref", "-m", reason, refname, new])
            .args(old)
            .output()
            .map(drop)
    }

    /// Fast-forwards the branch checked out here to `rev`.
    pub(crate) fn merge_ff_only(&self, rev: &str) -> Result<(), GitError> {
        self.cmd(["merge", "--ff-only", "--quiet", "--end-of-options", rev])
            .output()
            .map(drop)
    }

    // The remote.

    /// The URL a push to the remote `name` goes to (`insteadOf` and
    /// `pushurl` applied).
    pub(crate) fn push_url(&self, name: &str) -> Result<String, GitError> {
        self.read(["remote", "get-url", "--push", "--end-of-options", name])
    }

    /// The remote's head of `branch` by `git ls-remote` (a network call:
    /// never from the hook). `None` when the remote has no such branch.
    pub(crate) fn remote_head(
        &self,
        remote: &str,
        branch: &str,
        why: &str,
    ) -> Result<Option<String>, GitError> {
        let refname = format!("refs/heads/{branch}");
        let refs = self.ls_remote(remote, std::slice::from_ref(&refname), why)?;
        Ok(refs
            .into_iter()
            .find_map(|(name, sha)| (name == refname).then_some(sha)))
    }

    /// The remote's refs that `patterns` match (`git ls-remote --refs`, one
    /// round trip that sends no objects), as (name, object id).
    pub(crate) fn ls_remote(
        &self,
        remote: &str,
        patterns: &[String],
        why: &str,
    ) -> Result<Vec<(String, String)>, GitError> {
        let out = self
            .cmd(["ls-remote", "--refs", "--end-of-options", remote])
            .args(patterns)
            .network(why)
            .output()?;
        Ok(out
            .stdout_text()?
            .lines()
            .filter_map(|line| {
                let (sha, name) = line.split_once('\t')?;
                Some((name.to_owned(), sha.to_owned()))
            })
            .collect())
    }

    /// Fetches `branch` from `remote` into its remote-tracking ref, as a
    /// plain `git fetch` would; returns its commit, `None` when the remote
    /// has no such branch.
    pub(crate) fn fetch_branch(
        &self,
        remote: &str,
        branch: &str,
        why: &str,
    ) -> Result<Option<String>, GitError> {
        let tracking = format!("refs/remotes/{remote}/{branch}");
        let out = self
            .cmd([
                "fetch",
                "--no-tags",
                "--quiet",
                "--no-write-fetch-head",
                "--no-recurse-submodules",
                "--no-auto-maintenance",
                "--end-of-options",
                remote,
            ])
            .arg(format!("+refs/heads/{branch}:{tracking}"))
            .network(why)
            .output_unchecked()?;
        if !out.success() {
            if out.stderr.contains("couldn't find remote ref") {
                return Ok(None);
            }
            return Err(out.into_error());
        }
        self.commit_of(&tracking).map(Some)
    }

    /// Fetches what `refspecs` name (in one round trip), pruning local refs
    /// the remote dropped. Maverick's fetches (here and [`Git::fetch_branch`])
    /// start no `git maintenance run --auto` after them: they bring a few
    /// small objects, and the user's own git commands keep the repository
    /// maintained.
    pub(crate) fn fetch_pruning(
        &self,
        remote: &str,
        refspecs: &[String],
        why: &str,
    ) -> Result<(), GitError> {
        self.cmd([
            "fetch",
            "--no-tags",
            "--prune",
            "--no-write-fetch-head",
            "--quiet",
            "--no-recurse-submodules",
            "--no-auto-maintenance",
            "--end-of-options",
            remote,
        ])
        .args(refspecs)
        .network(why)
        .output()
        .map(drop)
    }

    /// The local refs under `prefix`, as (name, object id).
    pub(crate) fn refs_under(&self, prefix: &str) -> Result<Vec<(String, String)>, GitError> {
        let lines = self
            .cmd([
                "for-each-ref",
                "--format=%(refname)%00%(objectname)",
                prefix,
            ])
            .read_utf8_lines()?;
        Ok(lines
            .iter()
            .filter_map(|line| {
                let (name, id) = line.split_once('\0')?;
                Some((name.to_owned(), id.to_owned()))
            })
            .collect())
    }

    /// Every remote-tracking branch of `remote` as the last fetch left it:
    /// (branch, head, committer time in Unix seconds).
    pub(crate) fn remote_tracking_heads(
        &self,
        remote: &str,
    ) -> Result<Vec<(String, String, i64)>, GitError> {
        let prefix = format!("refs/remotes/{remote}/");
        let lines = self
            .cmd([
                "for-each-ref",
                "--format=%(refname)%00%(objectname)%00%(committerdate:unix)",
                prefix.as_str(),
            ])
            .read_utf8_lines()?;
        Ok(lines
            .iter()
            .filter_map(|line| {
                let mut parts = line.split('\0');
                let name = parts.next()?.strip_prefix(&prefix)?;
                let head = parts.next()?;
                let at = parts.next()?.parse().ok()?;
                (name != "HEAD").then(|| (name.to_owned(), head.to_owned(), at))
            })
            .collect())
    }

    /// Pushes `src` to `dst_ref` on `remote` if the remote's ref is still at
    /// `expected` (`None`: it must not exist yet).
    pub(crate) fn push_with_lease(
        &self,
        remote: &str,
        src: &str,
        dst_ref: &str,
        expected: Option<&str>,
        hooks: Hooks,
        why: &str,
    ) -> Result<PushOutcome, GitError> {
        let lease = format!("--force-with-lease={dst_ref}:{}", expected.unwrap_or(""));
        let mut cmd = self.cmd(["push", "--porcelain", &lease]);
        if hooks == Hooks::Skip {
            cmd = cmd.arg("--no-verify");
        }
        let out = cmd
            .args(["--end-of-options", remote])
            .arg(format!("{src}:{dst_ref}"))
            .network(why)
            .output_unchecked()?;
        Ok(PushOutcome::of(out))
    }

    /// Pushes every `(src, dst_ref, expected)` in one `git push --atomic`:
    /// each ref moves only if it is still at its `expected` (`None`: it must
    /// not exist yet), and either all move or none does. The local pre-push
    /// hook does not run (these are maverick's own refs, not branches).
    pub(crate) fn push_atomic_with_leases(
        &self,
        remote: &str,
        updates: &[(String, String, Option<String>)],
        why: &str,
    ) -> Result<PushOutcome, GitError> {
        let mut cmd = self.cmd(["push", "--porcelain", "--atomic", "--no-verify"]);
        for (_, dst_ref, expected) in updates {
            cmd = cmd.arg(format!(
                "--force-with-lease={dst_ref}:{}",
                expected.as_deref().unwrap_or("")
            ));
        }
        let out = cmd
            .args(["--end-of-options", remote])
            .args(updates.iter().map(|(src, dst, _)| format!("{src}:{dst}")))
            .network(why)
            .output_unchecked()?;
        Ok(PushOutcome::of(out))
    }

    // Worktrees.

    /// `git worktree list --porcelain -z`, as git prints it.
    pub(crate) fn worktree_list(&self) -> Result<Vec<u8>, GitError> {
        Ok(self
            .cmd(["worktree", "list", "--porcelain", "-z"])
            .output()?
            .stdout)
    }

    /// Removes the registration of the one worktree at `path` whose folder
    /// is gone, locked or not (never a bare `git worktree prune`, which
    /// drops every worktree whose folder is absent right now).
    pub(crate) fn worktree_remove_missing(&self, path: &Path) -> Result<(), GitError> {
        self.cmd(["worktree", "remove", "--force", "--force"])
            .arg(path.as_os_str())
            .output()
            .map(drop)
    }

    /// Moves the worktree at `from` to `to`, its registration with it.
    pub(crate) fn worktree_move(&self, from: &Path, to: &Path) -> Result<(), GitError> {
        self.cmd(["worktree", "move"])
            .args([from.as_os_str(), to.as_os_str()])
            .output()
            .map(drop)
    }

    /// Locks the worktree at `path` with `reason`, which `git worktree
    /// list` shows (and which keeps `git worktree prune` off it).
    pub(crate) fn worktree_lock(&self, path: &Path, reason: &str) -> Result<(), GitError> {
        self.cmd(["worktree", "lock", "--reason", reason])
            .arg(path.as_os_str())
            .output()
            .map(drop)
    }

    /// Removes the lock of the worktree at `path` (git's own "initializing"
    /// one, left by a `git worktree add` that was killed).
    pub(crate) fn worktree_unlock(&self, path: &Path) -> Result<(), GitError> {
        self.cmd(["worktree", "unlock"])
            .arg(path.as_os_str())
            .output()
            .map(drop)
    }

    /// Detaches this worktree's HEAD at `commit`, leaving its index and
    /// files as they are.
    pub(crate) fn detach_head(&self, commit: &str, reason: &str) -> Result<(), GitError> {
        self.cmd(["update-ref", "--no-deref", "-m", reason, "HEAD", commit])
            .output()
            .map(drop)
    }

    /// Adds a worktree at `path` on a new branch `branch` starting at `start`.
    pub(crate) fn worktree_add_new_branch(
        &self,
        path: &Path,
        branch: &str,
        start: &str,
    ) -> Result<(), GitError> {
        announce(&format!("checking out {branch} into {}", path.display()));
        self.cmd(["worktree", "add", "--quiet", "--no-track", "-b", branch])
            .args([path.as_os_str(), OsStr::new(start)])
            .output()
            .map(drop)
    }

    /// Adds a worktree at `path` with the existing `branch` checked out.
    pub(crate) fn worktree_add(&self, path: &Path, branch: &str) -> Result<(), GitError> {
        announce(&format!("checking out {branch} into {}", path.display()));
        self.cmd(["worktree", "add", "--quiet"])
            .args([path.as_os_str(), OsStr::new(branch)])
            .output()
            .map(drop)
    }

    // Objects: the git surface's store.

    /// Reads objects with one `git cat-file --batch`; git's output as is.
    pub(crate) fn cat_file_batch(&self, names: &[String]) -> Result<Vec<u8>, GitError> {
        let mut input = names.join("\n");
        input.push('\n');
        Ok(self
            .cmd(["cat-file", "--batch"])
            .stdin(input)
            .output()?
            .stdout)
    }

    /// Writes a blob; returns its id.
    pub(crate) fn hash_blob(&self, bytes: Vec<u8>) -> Result<String, GitError> {
        self.cmd(["hash-object", "-w", "--stdin"])
            .stdin(bytes)
            .read()
    }

    /// The file names of a commit's tree.
    pub(crate) fn ls_tree_names(&self, commit: &str) -> Result<Vec<String>, GitError> {
        self.nul_separated(["ls-tree", "--name-only", "-z", "--end-of-options", commit])
    }

    fn nul_separated<const N: usize>(&self, args: [&str; N]) -> Result<Vec<String>, GitError> {
        let out = self.cmd(args).output()?;
        Ok(out
            .stdout
            .split(|b| *b == 0)
            .filter(|e| !e.is_empty())
            .map(|e| String::from_utf8_lossy(e).into_owned())
            .collect())
    }

    /// Whether the index of this worktree tracks `path`.
    pub(crate) fn is_tracked(&self, path: &Path) -> Result<bool, GitError> {
        let out = self
            .cmd(["ls-files", "-z", "--"])
            .arg(path.as_os_str())
            .output()?;
        Ok(!out.stdout.is_empty())
    }

    /// Writes a tree of `entries` (`mode type id\tname`); returns its id.
    pub(crate) fn mktree(&self, entries: &[String]) -> Result<String, GitError> {
        let mut input = entries.join("\0");
        input.push('\0');
        self.cmd(["mktree", "-z"]).stdin(input).read()
    }

    /// Writes a commit of `tree` by `(name, email)`; returns its id.
    pub(crate) fn commit_tree(
        &self,
        tree: &str,
        parent: Option<&str>,
        message: &str,
        (name, email): (&str, &str),
    ) -> Result<String, GitError> {
        let mut cmd = self
            .cmd(["commit-tree", tree, "-m", message])
            .env("GIT_AUTHOR_NAME", name)
            .env("GIT_AUTHOR_EMAIL", email)
            .env("GIT_COMMITTER_NAME", name)
            .env("GIT_COMMITTER_EMAIL", email);
        if let Some(parent) = parent {
            cmd = cmd.args(["-p", parent]);
        }
        cmd.read()
    }
}

/// One git invocation, built up and then run.
#[derive(Debug)]
struct GitCommand {
    dir: PathBuf,
    env: Arc<GitEnv>,
    args: Vec<OsString>,
    stdin: Option<Vec<u8>>,
    envs: Vec<(OsString, OsString)>,
    /// Why the command talks to the remote, for `-v`; `None` for a local one.
    network: Option<String>,
}

/// What a finished git process left behind.
#[derive(Debug)]
struct GitOutput {
    command: String,
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
}

impl GitOutput {
    fn success(&self) -> bool {
        self.code == Some(0)
    }

    fn stdout_text(&self) -> Result<&str, GitError> {
        std::str::from_utf8(&self.stdout).map_err(|_| GitError::NotUtf8 {
            command: self.command.clone(),
        })
    }

    fn into_error(self) -> GitError {
        GitError::Failed {
            command: self.command,
            status: match self.code {
                Some(code) => format!("exit {code}"),
                None => "killed by a signal".to_owned(),
            },
            stderr: self.stderr,
        }
    }
}

/// A reflog read started by [`Git::start_reflogs`]: git runs until
/// [`ReflogRead::finish`] reads its answer, or until this is dropped (git
/// is stopped then and its answer never read).
#[derive(Debug)]
pub(crate) struct ReflogRead {
    refnames: Vec<String>,
    newest: Option<usize>,
    running: Running,
}

impl ReflogRead {
    /// Whether this is the read of `refnames` (in that order: it decides
    /// ties) limited to `newest` entries.
    pub(crate) fn reads(&self, refnames: &[String], newest: Option<usize>) -> bool {
        self.refnames == refnames && self.newest == newest
    }

    /// The reflogs by ref name, each newest first: see [`Git::reflogs`].
    pub(crate) fn finish(self) -> Result<BTreeMap<String, Vec<ReflogEntry>>, GitError> {
        let out = self.running.output()?;
        if !out.success() {
            return Err(out.into_error());
        }
        // Any byte that is not UTF-8 replaced: the text is only compared
        // with what maverick itself wrote (a reflog's messages name any
        // branch checked out).
        let text = String::from_utf8_lossy(&out.stdout);
        let mut out: BTreeMap<String, Vec<ReflogEntry>> = BTreeMap::new();
        for line in text.lines() {
            let mut fields = line.splitn(4, '\t');
            let (Some(selector), Some(commit), Some(parents), Some(message)) =
                (fields.next(), fields.next(), fields.next(), fields.next())
            else {
                continue;
            };
            // `refs/remotes/origin/x@{1733390000}`: `@{` is in no ref name.
            let Some((refname, at)) = selector.rsplit_once("@{") else {
                continue;
            };
            out.entry(refname.to_owned())
                .or_default()
                .push(ReflogEntry {
                    commit: commit.to_owned(),
                    parents: parents.split_whitespace().map(str::to_owned).collect(),
                    message: message.to_owned(),
                    at: at.trim_end_matches('}').to_owned(),
                });
        }
        Ok(out)
    }
}

/// A git process started and not yet waited for. Dropped unread, it is
/// stopped and reaped: nothing of it outlives the command that started it.
#[derive(Debug)]
struct Running {
    command: String,
    child: Option<std::process::Child>,
}

impl Running {
    fn output(mut self) -> Result<GitOutput, GitError> {
        let child = self
            .child
            .take()
            .expect("a running command is waited for once");
        finish(
            std::mem::take(&mut self.command),
            None,
            child.wait_with_output(),
        )
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl GitCommand {
    fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    /// Marks a round trip to the remote, made for `why` (said at `-v`).
    fn network(mut self, why: &str) -> Self {
        self.network = Some(why.to_owned());
        self
    }

    fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(input.into());
        self
    }

    fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    fn display(&self) -> String {
        let mut s = String::from("git");
        for a in &self.args {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
        }
        s
    }

    /// Starts a local command without input and returns at once; its
    /// output is read by [`Running::output`].
    fn start(self) -> Result<Running, GitError> {
        debug_assert!(self.stdin.is_none() && self.network.is_none());
        let command = self.display();
        tracing::debug!(dir = %self.dir.display(), "{command}");
        let child = self.spawn(&command)?;
        Ok(Running {
            command,
            child: Some(child),
        })
    }

    fn spawn(&self, command: &str) -> Result<std::process::Child, GitError> {
        let mut cmd = Command::new(git_program(self.env.get("PATH")));
        // fsmonitor daemons must not be spawned by a tool that runs in hooks.
        cmd.arg("-c")
            .arg("core.fsmonitor=false")
            .args(&self.args)
            .current_dir(&self.dir)
            .env_clear()
            .envs(self.env.for_git())
            .envs(self.envs.iter().map(|(k, v)| (k, v)))
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().map_err(|source| GitError::Spawn {
            command: command.to_owned(),
            source,
        })
    }

    /// Runs the command and returns its output whatever the exit status.
    fn output_unchecked(mut self) -> Result<GitOutput, GitError> {
        let progress = SHOW_PROGRESS.load(Ordering::Relaxed)
            && self.network.is_some()
            && self.stdin.is_none()
            && matches!(
                self.args.first().and_then(|a| a.to_str()),
                Some("fetch" | "push")
            );
        if progress {
            self.args.insert(1, OsString::from("--progress"));
            let why = self.network.as_deref().unwrap_or_default();
            let _ = writeln!(std::io::stderr(), "git maverick: {why}…");
        }
        let command = self.display();
        tracing::debug!(dir = %self.dir.display(), "{command}");
        let mut child = self.spawn(&command)?;
        if let Some(input) = self.stdin {
            let mut pipe = child.stdin.take().expect("stdin was piped");
            // A writer thread: git may fill its stdout pipe before reading all of stdin.
            let writer = std::thread::spawn(move || {
                let _ = pipe.write_all(&input);
            });
            let out = child.wait_with_output();
            let _ = writer.join();
            return finish(command, self.network.as_deref(), out);
        }
        if progress {
            // git's stderr goes to ours as it comes, and is kept too (less
            // the progress lines, which end in a carriage return) for errors.
            let mut from_git = child.stderr.take().expect("stderr was piped");
            let relay = std::thread::spawn(move || {
                let mut kept = Vec::new();
                let mut chunk = [0u8; 4096];
                let mut shown = std::io::stderr();
                while let Ok(n) = std::io::Read::read(&mut from_git, &mut chunk) {
                    if n == 0 {
                        break;
                    }
                    let _ = shown.write_all(&chunk[..n]);
                    kept.extend_from_slice(&chunk[..n]);
                }
                kept.split_inclusive(|b| *b == b'\n')
                    .filter(|line| !line.contains(&b'\r'))
                    .flatten()
                    .copied()
                    .collect::<Vec<u8>>()
            });
            let out = child.wait_with_output().map(|mut out| {
                out.stderr = relay.join().unwrap_or_default();
                out
            });
            return finish(command, self.network.as_deref(), out);
        }
        finish(command, self.network.as_deref(), child.wait_with_output())
    }

    /// Runs the command; a non-zero exit is an error carrying git's stderr.
    fn output(self) -> Result<GitOutput, GitError> {
        let out = self.output_unchecked()?;
        if out.success() {
            Ok(out)
        } else {
            Err(out.into_error())
        }
    }

    /// Runs the command and returns stdout without its trailing newline.
    fn read(self) -> Result<String, GitError> {
        let out = self.output()?;
        let text = out.stdout_text()?;
        Ok(text.strip_suffix('\n').unwrap_or(text).to_owned())
    }

    /// The lines of the output that are UTF-8, for listings of refs: a ref
    /// whose name is not (git allows it) is none maverick manages, and must
    /// not fail the listing of the others.
    fn read_utf8_lines(self) -> Result<Vec<String>, GitError> {
        let out = self.output()?;
        Ok(out
            .stdout
            .split(|b| *b == b'\n')
            .filter_map(|line| std::str::from_utf8(line).ok())
            .filter(|line| !line.is_empty())
            .map(str::to_owned)
            .collect())
    }
}

/// The `git` that `path` (the PATH git is given) finds first, as `execvp`
/// would find it. Named by its path, the child is started by
/// `posix_spawn` (a vfork) instead of a fork of this whole process: the
/// standard library forks whenever the child's PATH is set by hand, as
/// here, to look a bare name up itself. `"git"` when the lookup finds
/// nothing, so the error is the spawn's own.
fn git_program(path: Option<&OsStr>) -> PathBuf {
    for dir in path.into_iter().flat_map(std::env::split_paths) {
        // An empty or relative entry is looked up from the child's working
        // directory, not this one's: the spawn's own lookup decides.
        if !dir.is_absolute() {
            break;
        }
        let candidate = dir.join("git");
        if crate::programs::executable_file(&candidate) {
            return candidate;
        }
    }
    PathBuf::from("git")
}

fn finish(
    command: String,
    network: Option<&str>,
    out: std::io::Result<std::process::Output>,
) -> Result<GitOutput, GitError> {
    let out = out.map_err(|source| GitError::Spawn {
        command: command.clone(),
        source,
    })?;
    if let Some(why) = network {
        // -v: one line per round trip to the remote, what it asks and why.
        let status = out
            .status
            .code()
            .map_or("killed".to_owned(), |c| format!("exit {c}"));
        tracing::info!("{command} ({why}): {status}");
    }
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !stderr.is_empty() {
        tracing::debug!("{command}: {}", stderr.trim_end());
    }
    Ok(GitOutput {
        command,
        code: out.status.code(),
        stdout: out.stdout,
        stderr,
    })
}

/// A branch name as it enters maverick (claim, run, resume): `refs/heads/`
/// stripped once, then checked with git's own rules (`git check-ref-format
/// --branch`), so that the name recorded is the name a push carries.
/// `None` when git refuses it.
pub(crate) fn normalise_branch(git: &Git, input: &str) -> Result<Option<String>, GitError> {
    let name = input.strip_prefix("refs/heads/").unwrap_or(input);
    // `@{-1}` and friends are expanded by `--branch`; a name is never one.
    if !is_valid_branch_name(name) || name == "HEAD" {
        return Ok(None);
    }
    let out = git
        .cmd(["check-ref-format", "--branch", name])
        .output_unchecked()?;
    if !out.success() {
        return Ok(None);
    }
    let checked = out.stdout_text()?.trim_end_matches('\n');
    Ok((checked == name).then(|| name.to_owned()))
}

/// True when `name` is a full ref name git would accept (`git check-ref-format`),
/// checked in-process because hostile names must never reach a command line
/// unchecked.
pub(crate) fn is_valid_branch_name(name: &str) -> bool {
    if name.is_empty()
        || name.starts_with('-')
        || name.starts_with('/')
        || name.ends_with('/')
        || name.ends_with('.')
        || name.ends_with(".lock")
        || name == "@"
        || name.contains("..")
        || name.contains("@{")
        || name.contains("//")
    {
        return false;
    }
    if name
        .split('/')
        .any(|part| part.starts_with('.') || part.ends_with(".lock"))
    {
        return false;
    }
    !name.chars().any(|c| {
        c.is_ascii_control()
            || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\' | '\u{7f}')
    })
}

/// One entry of a reflog: the value the ref took, and why (`update by
/// push`, `fetch: fast-forward`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReflogEntry {
    pub commit: String,
    /// The commit's parents.
    pub parents: Vec<String>,
    pub message: String,
    /// When the entry was written, in seconds since the epoch, as git
    /// prints it.
    pub at: String,
}

/// One config setting and where it came from: its scope (`local`, `global`,
/// `system`, `worktree`, `command`) and file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ConfigEntry {
    pub scope: String,
    pub file: String,
    pub key: String,
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An environment with only what finds git.
    fn path_only() -> GitEnv {
        GitEnv::empty().set("PATH", std::env::var_os("PATH").unwrap_or_default())
    }

    /// The variables a git process sees, read through a shell alias.
    fn seen_by_git(env: GitEnv) -> Vec<(String, String)> {
        let dir = tempfile::tempdir().unwrap();
        let text = Git::new(dir.path(), env)
            .read(["-c", "alias.show-env=!env", "show-env"])
            .unwrap();
        text.lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    }

    /// The git spawned is the one the PATH given to git finds first, as
    /// `execvp` finds it: a file that is not executable, or a directory,
    /// is passed over; a relative entry leaves the lookup to the spawn.
    #[test]
    fn git_is_the_first_executable_on_the_path_git_is_given() {
        use std::os::unix::fs::PermissionsExt as _;
        let root = tempfile::tempdir().unwrap();
        let dir = |name: &str| {
            let d = root.path().join(name);
            std::fs::create_dir(&d).unwrap();
            d
        };
        let script = |d: &Path, mode: u32, says: &str| {
            let file = d.join("git");
            std::fs::write(&file, format!("#!/bin/sh\necho {says}\n")).unwrap();
            std::fs::set_permissions(&file, std::fs::Permissions::from_mode(mode)).unwrap();
            file
        };
        let not_executable = dir("a");
        script(&not_executable, 0o644, "a");
        let directory = dir("b");
        std::fs::create_dir(directory.join("git")).unwrap();
        let first = dir("c");
        let expected = script(&first, 0o755, "c");
        let second = dir("d");
        script(&second, 0o755, "d");
        let path = std::env::join_paths([&not_executable, &directory, &first, &second]).unwrap();
        assert_eq!(git_program(Some(&path)), expected);
        // The git process is that one, not the one this process's PATH finds.
        let env = GitEnv::empty().set("PATH", path.clone());
        assert_eq!(Git::new(root.path(), env).read(["--version"]).unwrap(), "c");

        let relative_first = std::env::join_paths([Path::new("bin"), &first]).unwrap();
        assert_eq!(git_program(Some(&relative_first)), PathBuf::from("git"));
        assert_eq!(git_program(None), PathBuf::from("git"));
        let nowhere = std::env::join_paths([&not_executable]).unwrap();
        assert_eq!(git_program(Some(&nowhere)), PathBuf::from("git"));
    }

    #[test]
    fn messages_are_english_and_the_character_set_stays() {
        let env = path_only()
            .set("LC_ALL", "C.UTF-8")
            .set("LANGUAGE", "de")
            .set("LC_MESSAGES", "de_DE.UTF-8")
            .set("GIT_DIR", "/nowhere/.git");
        let seen = seen_by_git(env);
        let get = |k: &str| {
            seen.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        assert_eq!(get("LC_MESSAGES"), Some("C"));
        assert_eq!(get("LC_ALL"), None);
        assert_eq!(get("LANGUAGE"), None);
        assert_eq!(get("LC_CTYPE"), Some("C.UTF-8"));
        assert_eq!(get("GIT_TERMINAL_PROMPT"), Some("0"));
        // What the caller passed reaches git; nothing else of this process does.
        assert_eq!(get("GIT_DIR"), Some("/nowhere/.git"));
        assert_eq!(get("HOME"), None);

        // Without LC_ALL, the user's own categories are left as they are.
        let seen = seen_by_git(path_only().set("LC_CTYPE", "C.UTF-8"));
        assert!(seen.contains(&("LC_CTYPE".to_owned(), "C.UTF-8".to_owned())));
        assert!(seen.contains(&("LC_MESSAGES".to_owned(), "C".to_owned())));
    }

    #[test]
    fn a_failure_keeps_gits_own_words() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::new(
            dir.path(),
            path_only().set("GIT_CEILING_DIRECTORIES", dir.path()),
        );
        assert!(!git.is_repository().unwrap());
        let err = git.toplevel().unwrap_err();
        assert!(err.stderr().contains("not a git repository"), "{err}");
        assert!(
            err.to_string().contains("git rev-parse --show-toplevel"),
            "{err}"
        );
    }

    #[test]
    fn versions() {
        assert_eq!(
            GitVersion::parse("git version 2.39.5\n"),
            Some(GitVersion(2, 39, 5))
        );
        assert_eq!(
            GitVersion::parse("git version 2.31.1.windows.1"),
            Some(GitVersion(2, 31, 1))
        );
        assert_eq!(
            GitVersion::parse("git version 2.50.1 (Apple Git-155)"),
            Some(GitVersion(2, 50, 1))
        );
        assert_eq!(
            GitVersion::parse("git version 3.0"),
            Some(GitVersion(3, 0, 0))
        );
        assert_eq!(GitVersion::parse("hub version 2.14"), None);
        assert!(GitVersion(2, 30, 9) < PATH_FORMAT.needed);
        assert!(GitVersion(2, 31, 0) >= PATH_FORMAT.needed);
        let err = GitError::TooOld(GitTooOld {
            feature: PATH_FORMAT.feature,
            needed: PATH_FORMAT.needed,
            found: GitVersion(2, 30, 2),
        });
        assert_eq!(
            err.to_string(),
            "git 2.31.0 or newer is needed for `git rev-parse --path-format`; this is git 2.30.2"
        );
    }

    #[test]
    fn branch_names() {
        for ok in [
            "main",
            "maverick/142-short-title",
            "a/b/c/d",
            "ünïcode/ß",
            "x.y",
        ] {
            assert!(is_valid_branch_name(ok), "{ok}");
        }
        for bad in [
            "", "-x", "a..b", "a/", "/a", "a.lock", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[",
            "a\\b", ".hidden", "a/.b", "a@{1}", "@", "a//b", "a\u{1}",
        ] {
            assert!(!is_valid_branch_name(bad), "{bad:?}");
        }
    }
}
