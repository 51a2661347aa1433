//! The test environment: the real `git-maverick` binary against real git
//! repositories (a bare origin and clones in a temp dir), hermetic like jj's
//! `TestEnvironment`: fake HOME, no system git config and a global one that
//! only turns off git's background maintenance, fixed dates,
//! UTC, C locale, and none of the caller's maverick or GitHub variables.
//!
//! One suite, two surfaces: `TestEnv::with_surface(Surface::Github)` starts a
//! fake GitHub server and points every clone at it, and the accessors
//! (`labels`, `comments`, `write_count`, ...) and person's edits
//! (`add_comment`, `edit_comment`, `open_pull`, `close`) work on either
//! surface, so a test written once runs on both (`on_both_surfaces!`).
//!
//! Time passes because a test moves it: every maverick process, git hook and
//! the fake GitHub share one clock (`MAVERICK_CLOCK_FILE`, the library's
//! `Clock::file`), which [`TestEnv::advance_clock`] moves, running
//! processes included, and which a maverick process's own pauses (settle
//! delays, backoffs, rate-limit waits) move instead of waiting. No test
//! sleeps to let time pass, and none waits for maverick to sleep.
#![allow(dead_code)]

pub mod fake_anthropic;
pub mod fake_github;
pub mod json_schema;
pub mod run_flags;
pub mod screen;
pub mod sim;

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use assert_fs::fixture::{FileWriteStr, PathChild};
use serde_json::{json, Value};

pub use fake_github::FakeGithub;

/// The library as the tests name it: the one place that knows where each
/// module lives in `src/`, so a move there changes only these lines.
pub mod mav {
    pub use maverick::cli;
    pub use maverick::clock;
    pub use maverick::config;
    pub use maverick::coord::{dispatch, lease};
    pub use maverick::durable::tasks;
    pub use maverick::failpoint;
    pub use maverick::git;
    pub use maverick::markers;
    pub use maverick::records::branch as branch_record;
    pub use maverick::surface;
    pub use maverick::timefmt;
    pub use maverick::workflow::hydrate;
    pub use maverick::writer::{prepush, push};
}

/// The repository the fake GitHub serves.
pub const GITHUB_REPO: &str = "acme/widgets";

/// The story most tests work on, and its branch.
pub const STORY: u64 = 142;
pub const STORY_BRANCH: &str = "maverick/142-parser";

/// Where a test's shared state lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Surface {
    Git,
    Github,
}

/// Turns each `fn name(surface: Surface)` into two tests, `name::git` and
/// `name::github`: the one way a test runs on both surfaces.
#[macro_export]
macro_rules! on_both_surfaces {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[test]
                fn git() {
                    super::$name($crate::support::Surface::Git)
                }
                #[test]
                fn github() {
                    super::$name($crate::support::Surface::Github)
                }
            }
        )+
    };
}

/// How a test's repositories store refs and name objects: git's default
/// (files, SHA-1), clones whose refs are a reftable
/// (`git clone --ref-format=reftable`, git 3.0's planned default), or an
/// origin and clones in SHA-256 (`git init --object-format=sha256`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepoKind {
    Files,
    Reftable,
    Sha256,
}

impl RepoKind {
    /// `git init`'s options for this kind.
    fn formats(self) -> (&'static str, &'static str) {
        match self {
            RepoKind::Files => ("--object-format=sha1", "--ref-format=files"),
            RepoKind::Reftable => ("--object-format=sha1", "--ref-format=reftable"),
            RepoKind::Sha256 => ("--object-format=sha256", "--ref-format=files"),
        }
    }
}

/// Turns each `fn name(kind: RepoKind)` into three tests, `name::files`,
/// `name::reftable` and `name::sha256`: the one way a test runs in every
/// kind of repository.
#[macro_export]
macro_rules! on_every_repo_kind {
    ($($name:ident),+ $(,)?) => {
        $(
            mod $name {
                #[test]
                fn files() {
                    super::$name($crate::support::RepoKind::Files)
                }
                #[test]
                fn reftable() {
                    super::$name($crate::support::RepoKind::Reftable)
                }
                #[test]
                fn sha256() {
                    super::$name($crate::support::RepoKind::Sha256)
                }
            }
        )+
    };
}

pub const BIN: &str = env!("CARGO_BIN_EXE_git-maverick");

/// The test user's global git config: no background maintenance, which git
/// would otherwise start as a process of its own after every commit, fetch
/// and received push in these throwaway repositories.
const GLOBAL_CONFIG: &str =
    "[maintenance]\n\tauto = false\n[receive]\n\tautogc = false\n[gc]\n\tauto = 0\n";

/// Where every test's root directory goes: `MAVERICK_TEST_TMPDIR` when set,
/// else a memory filesystem when the machine has one (`/dev/shm`), else the
/// system temp dir. The suite makes and deletes tens of thousands of files
/// (every clone's `.git`); on ext4, allocating their inodes was most of
/// git's time in the suite.
pub fn temp_base() -> &'static Path {
    static BASE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BASE.get_or_init(find_temp_base)
}

/// The origin environments of `env`'s kind start from, made once per test
/// process by the first of them (six git processes, a push among them)
/// and copied by every one: the suite makes hundreds. Removed when the
/// test process exits.
fn origin_template(env: &TestEnv) -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    static MADE: [std::sync::OnceLock<PathBuf>; 3] = [const { std::sync::OnceLock::new() }; 3];
    extern "C" fn remove_templates() {
        if let Some(dir) = DIR.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    let index = match env.repo_kind {
        RepoKind::Files => 0,
        RepoKind::Reftable => 1,
        RepoKind::Sha256 => 2,
    };
    MADE[index]
        .get_or_init(|| {
            let dir = DIR.get_or_init(|| {
                let dir = tempfile::Builder::new()
                    .prefix("maverick-origins.")
                    .tempdir_in(temp_base())
                    .expect("temp dir")
                    .keep();
                // SAFETY: registers a plain function, once.
                unsafe { libc::atexit(remove_templates) };
                dir
            });
            let origin = dir.join(format!("{:?}.git", env.repo_kind));
            env.make_origin(&origin);
            origin
        })
        .clone()
}

/// Copies the directory tree at `from` to `to` (files, with their
/// permissions, and directories, empty ones too), in this process.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn find_temp_base() -> PathBuf {
    if let Some(dir) = std::env::var_os("MAVERICK_TEST_TMPDIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let shm = Path::new("/dev/shm");
    let writable = shm.is_dir()
        && tempfile::Builder::new()
            .prefix(".maverick-probe")
            .tempfile_in(shm)
            .is_ok();
    if writable {
        shm.to_owned()
    } else {
        std::env::temp_dir()
    }
}

/// Variables from the caller's environment that must not reach a test.
const SCRUBBED: &[&str] = &[
    // The pacing ledgers live in the user's cache: the fake HOME's.
    "XDG_CACHE_HOME",
    "MAVERICK_INSTANCE",
    "MAVERICK_INSTANCE_ID",
    "CLAUDE_CODE_SESSION_ID",
    "CLAUDE_SESSION_ID",
    "KIRO_SESSION_ID",
    "GH_TOKEN",
    "GITHUB_TOKEN",
    "GH_ENTERPRISE_TOKEN",
    "GITHUB_ENTERPRISE_TOKEN",
    "GITHUB_API_URL",
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_TRACE",
    "GIT_TRACE2",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "XDG_CONFIG_HOME",
    "GH_REPO",
    "GH_HOST",
    "COLUMNS",
    "CLICOLOR",
    "CLICOLOR_FORCE",
    "MANPAGER",
    "PAGER",
];

pub struct TestEnv {
    pub root: assert_fs::TempDir,
    pub origin: PathBuf,
    home: PathBuf,
    github: Option<FakeGithub>,
    /// The one clock of this environment, kept in `clock_file`.
    clock: mav::clock::Clock,
    clock_file: PathBuf,
    repo_kind: RepoKind,
    /// How many person's edits of the git surface so far (names their clones).
    edits: Cell<u32>,
}

/// A comment as the surface stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredComment {
    pub id: u64,
    pub author: String,
    pub body: String,
}

impl Default for TestEnv {
    fn default() -> Self {
        TestEnv::new()
    }
}

impl TestEnv {
    /// A bare `origin` with one commit on `main`; the git surface.
    pub fn new() -> TestEnv {
        TestEnv::with_surface(Surface::Git)
    }

    /// On `Surface::Github`, clones coordinate through a fake GitHub server
    /// (issues spring into existence when named, as any number is an issue
    /// on the git surface) with a 200 ms settle delay and a rate limit no
    /// test that runs dozens of processes spends (tests/github.rs tests the
    /// limit itself).
    pub fn with_surface(surface: Surface) -> TestEnv {
        TestEnv::with(surface, RepoKind::Files)
    }

    /// The git surface, in repositories of `kind`.
    pub fn with_repo_kind(kind: RepoKind) -> TestEnv {
        TestEnv::with(Surface::Git, kind)
    }

    fn with(surface: Surface, repo_kind: RepoKind) -> TestEnv {
        let root = assert_fs::TempDir::new_in(temp_base()).expect("temp dir");
        let home = root.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".gitconfig"), GLOBAL_CONFIG).unwrap();
        let origin = root.path().join("origin.git");
        let clock_file = root.path().join("clock");
        let clock = mav::clock::Clock::file(&clock_file);
        let github = (surface == Surface::Github).then(|| {
            let (owner, name) = GITHUB_REPO.split_once('/').unwrap();
            let fake = FakeGithub::start_with_clock(owner, name, clock.clone());
            fake.create_issues_on_demand(true);
            fake.set_rate_limit(100_000);
            fake
        });
        let env = TestEnv {
            root,
            origin,
            home,
            github,
            clock,
            clock_file,
            repo_kind,
            edits: Cell::new(0),
        };
        copy_tree(&origin_template(&env), &env.origin);
        env
    }

    /// Makes the origin every environment of this kind starts from, at
    /// `dir`: a bare repository whose `main` has one commit (the same
    /// commit on every run: the dates and names are fixed).
    fn make_origin(&self, dir: &Path) {
        let (object_format, ref_format) = self.repo_kind.formats();
        let parent = dir.parent().expect("the template is in a directory");
        self.git_in(
            parent,
            &[
                "init",
                "--quiet",
                "--bare",
                object_format,
                ref_format,
                "--initial-branch=main",
                dir.to_str().unwrap(),
            ],
        );
        let seed = self.root.path().join("seed");
        self.git_in(
            self.root.path(),
            &[
                "init",
                "--quiet",
                object_format,
                "--initial-branch=main",
                "seed",
            ],
        );
        std::fs::write(seed.join("README.md"), "# project\n").unwrap();
        self.git_in(&seed, &["add", "README.md"]);
        self.git_in(&seed, &["commit", "--quiet", "-m", "chore: initial commit"]);
        self.git_in(&seed, &["push", "--quiet", dir.to_str().unwrap(), "main"]);
        std::fs::remove_dir_all(&seed).unwrap();
    }

    pub fn path(&self) -> &Path {
        self.root.path()
    }

    /// Another bare repository `name` beside origin, of the same kind.
    pub fn bare_repo(&self, name: &str) -> PathBuf {
        let (object_format, ref_format) = self.repo_kind.formats();
        self.git_in(
            self.root.path(),
            &["init", "--quiet", "--bare", object_format, ref_format, name],
        );
        self.root.path().join(name)
    }

    /// Lets `secs` seconds pass, for everyone at once: the fake GitHub's
    /// clock (its `Date` header and timestamps) and the clock of every
    /// maverick process, those running now included, on either surface. A
    /// process waiting for a moment (a heartbeat, the end of a grace period,
    /// the next round of `status --watch`) sees it come.
    pub fn advance_clock(&self, secs: u64) {
        self.clock
            .advance(std::time::Duration::from_secs(secs))
            .expect("the test clock moves");
    }

    /// This environment's clock, as every maverick process reads it.
    pub fn clock(&self) -> &mav::clock::Clock {
        &self.clock
    }

    /// Seconds the surface's clock runs ahead of the real one.
    pub fn clock_offset(&self) -> i64 {
        self.clock.offset_millis().div_euclid(1000)
    }

    /// The HOME every process of this environment gets.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// What a person saw, as a snapshot keeps it: [`Run::screen`] through
    /// [`TestEnv::normalise`].
    pub fn screen(&self, run: &Run) -> String {
        self.normalise(&run.screen())
    }

    /// The one screen normaliser: what differs from machine to machine or
    /// from one git to the next becomes a placeholder. This environment's
    /// temp dir (as given and as the kernel resolves it) is `[ROOT]`, a
    /// full object name (40 or 64 hex digits) `[oid]`, and an abbreviated
    /// one (7 to 39 lowercase hex digits with a letter and a digit, on word
    /// bounds) `[short-oid]`. Numbers (issue, comment ids) and words made of
    /// hex letters only ("deadbeef", "defaced") stay as they are.
    pub fn normalise(&self, text: &str) -> String {
        let mut text = text.to_owned();
        let root = self.root.path();
        let mut roots = vec![root.to_path_buf()];
        if let Ok(real) = root.canonicalize() {
            if real != root {
                roots.insert(0, real);
            }
        }
        for dir in roots {
            text = text.replace(dir.to_str().expect("a UTF-8 temp dir"), "[ROOT]");
        }
        normalise_object_names(&text)
    }

    /// The surface's name, for messages and snapshot names.
    pub fn name(&self) -> &'static str {
        match self.surface() {
            Surface::Git => "git",
            Surface::Github => "github",
        }
    }

    pub fn surface(&self) -> Surface {
        if self.github.is_some() {
            Surface::Github
        } else {
            Surface::Git
        }
    }

    /// The fake GitHub server (github surface only).
    #[track_caller]
    pub fn github(&self) -> &FakeGithub {
        self.github
            .as_ref()
            .expect("this test environment is on the git surface")
    }

    /// The labels of an issue, on whichever surface.
    pub fn labels(&self, issue: u64) -> Vec<String> {
        match &self.github {
            Some(fake) => fake.labels(issue),
            None => self
                .stored_issue(issue)
                .and_then(|i| {
                    i["labels"].as_array().map(|labels| {
                        labels
                            .iter()
                            .filter_map(|l| l.as_str().map(str::to_owned))
                            .collect()
                    })
                })
                .unwrap_or_default(),
        }
    }

    /// The comment bodies of an issue in comment order, on whichever surface.
    pub fn comment_bodies(&self, issue: u64) -> Vec<String> {
        self.comments(issue).into_iter().map(|c| c.body).collect()
    }

    /// How many writes the surface took: commits of origin's surface refs
    /// on git, successful non-GET requests on GitHub.
    pub fn write_count(&self) -> usize {
        match &self.github {
            Some(fake) => fake
                .requests()
                .iter()
                .filter(|r| r.method != "GET" && (200..300).contains(&r.status))
                .count(),
            None => self
                .git_in(
                    &self.origin,
                    &["rev-list", "--count", "--glob=refs/maverick/*", "--"],
                )
                .parse()
                .unwrap(),
        }
    }

    /// `git maverick ARGS` in `dir` (any directory, a repository or not),
    /// hermetic, with extra variables and no instance id.
    pub fn maverick_in(&self, dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Run {
        let mut cmd = Command::new(BIN);
        cmd.args(args).current_dir(dir);
        self.apply_env(&mut cmd);
        for (key, value) in vars {
            cmd.env(key, value);
        }
        Run::from_output(args, cmd.output().expect("git-maverick runs"))
    }

    /// The hermetic environment every git and maverick process gets.
    pub fn apply_env(&self, cmd: &mut Command) {
        for var in SCRUBBED {
            cmd.env_remove(var);
        }
        cmd.env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", self.home.join(".gitconfig"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_COMMITTER_NAME", "Test Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.com")
            .env("GIT_AUTHOR_DATE", "2026-11-30T10:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-11-30T10:00:00Z")
            .env("TZ", "UTC")
            .env("LC_ALL", "C")
            .env("LANG", "C")
            .env("NO_COLOR", "1")
            // No installed man page opens for `--help`: the help text prints.
            .env("MANPATH", self.home.join("no-man-pages"))
            .env("PATH", path_with_bin())
            .env(mav::clock::CLOCK_FILE_VAR, &self.clock_file)
            .stdin(Stdio::null());
        if let Some(fake) = &self.github {
            cmd.env("GITHUB_API_URL", fake.url())
                .env("GH_TOKEN", fake.token());
        }
    }

    /// The head of `branch` on origin, `None` when origin has no such branch.
    pub fn origin_head(&self, branch: &str) -> Option<String> {
        let out = self.git_output_in(
            &self.origin,
            &[
                "rev-parse",
                "--verify",
                "--quiet",
                &format!("refs/heads/{branch}^{{commit}}"),
            ],
        );
        out.status
            .success()
            .then(|| String::from_utf8(out.stdout).unwrap().trim().to_owned())
    }

    pub fn git_in(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.git_output_in(dir, args);
        assert!(
            out.status.success(),
            "git {args:?} in {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim_end().to_owned()
    }

    pub fn git_output_in(&self, dir: &Path, args: &[&str]) -> Output {
        let mut cmd = git_command();
        cmd.args(args).current_dir(dir);
        self.apply_env(&mut cmd);
        cmd.output().expect("git runs")
    }

    /// A clone of origin named `name`, whose maverick instance is `name`.
    pub fn clone(&self, name: &str) -> Repo<'_> {
        // The clone's maverick settings go in with `clone -c`, as
        // `git config` would write them, in the one process.
        let repo_setting = format!("maverick.repo={GITHUB_REPO}");
        let settings = if self.github.is_none() {
            vec!["maverick.surface=git"]
        } else {
            vec![
                "maverick.surface=github",
                &repo_setting,
                "maverick.settleDelay=200ms",
                "maverick.httpTimeout=5s",
            ]
        };
        let mut args = vec!["clone", "--quiet"];
        if self.repo_kind == RepoKind::Reftable {
            args.push("--ref-format=reftable");
        }
        for setting in &settings {
            args.extend(["-c", setting]);
        }
        args.extend([self.origin.to_str().unwrap(), name]);
        self.git_in(self.root.path(), &args);
        Repo {
            env: self,
            dir: self.root.path().join(name),
            instance: name.to_owned(),
        }
    }

    /// A clone with the pre-push hook installed, holding #142 with
    /// [`STORY_BRANCH`] checked out: where most push tests start.
    pub fn claimed_clone(&self, name: &str) -> Repo<'_> {
        self.claimed_clone_with_ttl(name, "10m")
    }

    /// [`TestEnv::claimed_clone`] with a lease of `ttl` (one that a test
    /// lets run out with [`TestEnv::advance_clock`]).
    pub fn claimed_clone_with_ttl(&self, name: &str, ttl: &str) -> Repo<'_> {
        let repo = self.clone(name);
        repo.maverick(&["hook", "install"]).expect(0);
        repo.maverick(&[
            "--lease-ttl",
            ttl,
            "coord",
            "claim",
            "142",
            "--branch",
            STORY_BRANCH,
        ])
        .expect(0);
        repo.git(&["switch", "--quiet", "-c", STORY_BRANCH]);
        repo
    }

    /// A clone on [`STORY_BRANCH`] that wrote #142's tasks comment from
    /// `tasks` (one task a line).
    pub fn story_clone(&self, name: &str, tasks: &str) -> Repo<'_> {
        let repo = self.clone(name);
        repo.git(&["switch", "--quiet", "-c", STORY_BRANCH]);
        let file = self.input_file("tasks.md", tasks);
        repo.maverick(&["task", "init", "142", &file]).expect(0);
        repo
    }

    /// Writes `text` to a file outside every clone; returns its path.
    pub fn input_file(&self, name: &str, text: &str) -> String {
        let file = self.root.child(name);
        file.write_str(text).unwrap();
        file.path().to_str().unwrap().to_owned()
    }

    /// The surface's state of one issue as stored on origin (git surface).
    pub fn stored_issue(&self, issue: u64) -> Option<Value> {
        let out = self.git_output_in(
            &self.origin,
            &["show", &format!("refs/maverick/issue/{issue}:issue.json")],
        );
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).expect("stored issue is JSON"))
    }

    /// The releases written on one issue, in order: (instance, reason), on
    /// whichever surface.
    pub fn releases(&self, issue: u64) -> Vec<(String, String)> {
        self.comment_bodies(issue)
            .iter()
            .flat_map(|body| crate::support::mav::markers::parse_markers(body))
            .flatten()
            .filter(|m| {
                m.kind == crate::support::mav::markers::MarkerKind::Lease
                    && m.payload.contains_key("released_at")
            })
            .map(|m| {
                let field = |k: &str| m.payload[k].as_str().unwrap_or_default().to_owned();
                (field("instance_id"), field("reason"))
            })
            .collect()
    }

    /// Asserts that `issue` was released exactly once, by `instance`, for `reason`.
    #[track_caller]
    pub fn assert_released_once(&self, issue: u64, instance: &str, reason: &str) {
        assert_eq!(
            self.releases(issue),
            [(instance.to_owned(), reason.to_owned())],
            "releases of #{issue}"
        );
    }

    /// Origin's surface refs (`refs/maverick/*`), one `id type name` a
    /// line, if it has any.
    pub fn surface_refs(&self) -> Option<String> {
        let refs = self.git_in(&self.origin, &["for-each-ref", "refs/maverick/"]);
        (!refs.is_empty()).then_some(refs)
    }
}

/// A person's reads and edits of the shared state, as they would make them
/// in the browser (GitHub) or with push access (git surface), on either
/// surface: never through one surface's storage in a test body.
impl TestEnv {
    /// Every comment of an issue, in id order.
    pub fn comments(&self, issue: u64) -> Vec<StoredComment> {
        match &self.github {
            Some(fake) => fake
                .comments(issue)
                .into_iter()
                .map(|c| StoredComment {
                    id: c.id,
                    author: c.user,
                    body: c.body,
                })
                .collect(),
            None => self
                .stored_issue(issue)
                .map(|stored| {
                    stored["comments"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|c| StoredComment {
                            id: c["id"].as_u64().unwrap(),
                            author: c["author"].as_str().unwrap().to_owned(),
                            body: c["body"].as_str().unwrap().to_owned(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// The body of the issue's comment that starts with `prefix`, newest first.
    pub fn comment_starting_with(&self, issue: u64, prefix: &str) -> Option<StoredComment> {
        self.comments(issue)
            .into_iter()
            .rev()
            .find(|c| c.body.starts_with(prefix))
    }

    /// Replaces a comment's body, as a person editing it would.
    pub fn edit_comment(&self, issue: u64, id: u64, body: &str) {
        match &self.github {
            Some(fake) => fake.edit_comment(id, body),
            None => self.edit_git_surface(issue, |stored| {
                let comment = stored["comments"]
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .find(|c| c["id"] == id)
                    .unwrap_or_else(|| panic!("no comment {id} on #{issue}"));
                comment["body"] = json!(body);
                // As on GitHub, an edit is stamped with when it was made.
                comment["updated_at"] = json!(self.clock.now().to_string());
            }),
        }
    }

    /// Adds a comment by a trusted person; returns its id.
    pub fn add_comment(&self, issue: u64, author: &str, body: &str) -> u64 {
        if let Some(fake) = &self.github {
            fake.add_user(author, "MEMBER");
            return fake.add_comment_as(issue, author, body);
        }
        let mut new_id = 0;
        self.edit_git_surface(issue, |stored| {
            let above = stored["comments"]
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_u64().unwrap() + 1)
                .max()
                .unwrap_or(1);
            new_id = stored["next_comment_id"].as_u64().unwrap_or(1).max(above);
            stored["next_comment_id"] = json!(new_id + 1);
            let at = stored["clock"]
                .as_str()
                .unwrap_or("2026-11-30T10:00:00Z")
                .to_owned();
            stored["comments"].as_array_mut().unwrap().push(json!({
                "id": new_id,
                "author": author,
                "body": body,
                "created_at": at,
                "updated_at": at,
            }));
        });
        new_id
    }

    /// Opens pull request `number` carrying `labels`. (The git surface has
    /// no pull requests: there an issue carrying the labels stands for one.)
    pub fn open_pull(&self, repo: &Repo<'_>, number: u64, labels: &[&str]) {
        if let Some(fake) = &self.github {
            let head = format!("{number:040x}");
            fake.create_pull(number, &format!("Pull request {number}"), labels, &head);
            return;
        }
        let n = number.to_string();
        let mut args = vec!["coord", "label", "add", n.as_str()];
        args.extend(labels);
        repo.maverick(&args).expect(0);
    }

    /// Closes an issue or pull request (on the git surface: the `closed` label).
    pub fn close(&self, repo: &Repo<'_>, number: u64) {
        match &self.github {
            Some(fake) => fake.close(number),
            None => {
                repo.maverick(&["coord", "label", "add", &number.to_string(), "closed"])
                    .expect(0);
            }
        }
    }

    /// Changes the git surface as a person with push access could: one
    /// commit on the issue's ref, `refs/maverick/issue/<n>`.
    fn edit_git_surface(&self, issue: u64, edit: impl FnOnce(&mut Value)) {
        let n = self.edits.get() + 1;
        self.edits.set(n);
        let dir = self.path().join(format!("surface-edit-{n}"));
        let origin = self.origin.to_str().unwrap().to_owned();
        let issue_ref = format!("refs/maverick/issue/{issue}");
        self.git_in(self.path(), &["init", "--quiet", dir.to_str().unwrap()]);
        let fetched = self.git_output_in(
            &dir,
            &[
                "fetch",
                "--quiet",
                &origin,
                &format!("{issue_ref}:refs/heads/surface"),
            ],
        );
        if fetched.status.success() {
            self.git_in(&dir, &["checkout", "--quiet", "surface"]);
        } else {
            self.git_in(&dir, &["checkout", "--quiet", "--orphan", "surface"]);
        }
        let issue_path = dir.join("issue.json");
        let mut stored: Value = std::fs::read(&issue_path)
            .ok()
            .map(|b| serde_json::from_slice(&b).unwrap())
            .unwrap_or_else(|| {
                json!({"format": 2, "number": issue, "labels": [], "assignees": [], "comments": []})
            });
        edit(&mut stored);
        std::fs::write(&issue_path, serde_json::to_vec_pretty(&stored).unwrap()).unwrap();
        self.git_in(&dir, &["add", "-A"]);
        self.git_in(&dir, &["commit", "--quiet", "-m", "a person's edit"]);
        self.git_in(
            &dir,
            &["push", "--quiet", &origin, &format!("surface:{issue_ref}")],
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Copies the program at `from` to `to` in a `cp` process of its own, never
/// in this one: a file this test process held open for writing would be
/// inherited by whatever another test thread forks meanwhile, and
/// executing the copy could then fail with ETXTBSY ("Text file busy").
pub fn copy_program(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("--")
        .arg(from)
        .arg(to)
        .status()
        .expect("cp runs");
    assert!(status.success(), "cp {} {}", from.display(), to.display());
}

/// PATH with the built `git-maverick` first, so that git hooks find it.
pub fn path_with_bin() -> std::ffi::OsString {
    let bin_dir = Path::new(BIN)
        .parent()
        .expect("the binary is in a directory");
    let mut dirs = vec![bin_dir.to_owned()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    std::env::join_paths(dirs).expect("PATH entries join")
}

/// A PATH with git and the system's tools, and nothing of maverick's: a
/// machine git-maverick is not installed on.
pub fn path_without_maverick(env: &TestEnv) -> std::ffi::OsString {
    let bin = env.path().join("bin-without-maverick");
    if !bin.exists() {
        std::fs::create_dir_all(&bin).unwrap();
        std::os::unix::fs::symlink(real_git(), bin.join("git")).unwrap();
    }
    let path =
        std::env::join_paths([bin.as_path(), Path::new("/usr/bin"), Path::new("/bin")]).unwrap();
    for dir in std::env::split_paths(&path) {
        assert!(!dir.join("git-maverick").exists(), "{}", dir.display());
    }
    path
}

/// The git the tests run (the first on PATH), for a PATH of a test's own
/// making.
pub fn real_git() -> PathBuf {
    static GIT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    GIT.get_or_init(|| on_path("git").expect("git is on PATH"))
        .clone()
}

/// The executable `program` names on the tests' PATH (`path_with_bin`), as
/// a shell finds it. A child started by this path, rather than by its bare
/// name with a PATH of the test's own, is spawned without forking the test
/// process (see `git_command`).
pub fn on_path(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::split_paths(&path_with_bin())
        .map(|dir| dir.join(program))
        .find(|file| {
            file.metadata()
                .is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
        })
}

/// `git` by its full path: the git the tests run (apply_env's PATH adds
/// only the directory of git-maverick before it). With a program named by
/// path, std spawns the child with posix_spawn; with a bare name and its
/// own PATH, it forks this test process, copying the page tables of every
/// test thread's memory for each of the suite's thousands of git commands
/// (a tenth of the suite's CPU).
pub fn git_command() -> Command {
    Command::new(real_git())
}

pub struct Repo<'a> {
    pub env: &'a TestEnv,
    pub dir: PathBuf,
    pub instance: String,
}

impl Repo<'_> {
    /// The clone as a user's is: its surface chosen from the remote, which
    /// is at `url`.
    pub fn with_remote_at(&self, url: &str) {
        self.git(&["config", "--unset", "maverick.surface"]);
        self.git(&["remote", "set-url", "origin", url]);
    }

    pub fn git(&self, args: &[&str]) -> String {
        self.env.git_in(&self.dir, args)
    }

    pub fn git_output(&self, args: &[&str]) -> Output {
        self.env.git_output_in(&self.dir, args)
    }

    /// git as this clone's instance (as the pre-push hook sees it), with
    /// extra variables (`GIT_TRACE`, `PATH`, ...).
    pub fn git_as_instance(&self, args: &[&str], envs: &[(&str, &std::ffi::OsStr)]) -> Output {
        let mut cmd = git_command();
        cmd.args(args).current_dir(&self.dir);
        self.env.apply_env(&mut cmd);
        cmd.env("MAVERICK_INSTANCE", &self.instance);
        for (key, value) in envs {
            cmd.env(key, value);
        }
        cmd.output().expect("git runs")
    }

    /// The same instance working in another directory (a linked worktree).
    pub fn at(&self, dir: impl Into<PathBuf>) -> Repo<'_> {
        Repo {
            env: self.env,
            dir: dir.into(),
            instance: self.instance.clone(),
        }
    }

    /// `git maverick ARGS` as this clone's instance.
    pub fn maverick(&self, args: &[&str]) -> Run {
        self.maverick_as(&self.instance, args)
    }

    pub fn maverick_as(&self, instance: &str, args: &[&str]) -> Run {
        let mut cmd = self.command(args);
        cmd.env("MAVERICK_INSTANCE", instance);
        Run::from_output(args, cmd.output().expect("git-maverick runs"))
    }

    /// The command for `git maverick ARGS` as this clone's instance, to spawn.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = self.maverick_command(args);
        cmd.env("MAVERICK_INSTANCE", &self.instance);
        cmd
    }

    /// The command, hermetic, without an instance id: for tests that set
    /// their own environment or spawn it themselves.
    pub fn maverick_command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(BIN);
        cmd.args(args).current_dir(&self.dir);
        self.env.apply_env(&mut cmd);
        cmd
    }

    pub fn write_file(&self, path: &str, content: &str) {
        assert_fs::fixture::ChildPath::new(self.dir.join(path))
            .write_str(content)
            .unwrap();
    }

    /// Writes, stages and commits one file; returns the new head.
    pub fn commit_file(&self, path: &str, content: &str, message: &str) -> String {
        self.write_file(path, content);
        self.git(&["add", path]);
        self.git(&["commit", "--quiet", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }
}

/// Global options that take a value as the next word.
const VALUE_OPTIONS: &[&str] = &[
    "-R",
    "--repo",
    "--remote",
    "--surface",
    "--lease-ttl",
    "--ttl",
    "--heartbeat-interval",
    "--heartbeat",
    "--max-clock-skew",
    "--settle-delay",
    "--worktree-dir",
    "--dispatch-slots",
    "--slots",
    "--dispatch-stale",
    "--trusted-authors",
];

/// The schema of a command line's `--json` output: `coord-read` for
/// `coord read 142 --json`, `dispatch` for `dispatch --dry-run`.
pub fn schema_name(args: &[String]) -> String {
    let mut words = Vec::new();
    let mut rest = args.iter().map(String::as_str);
    while let Some(word) = rest.next() {
        if word == "--" {
            break;
        }
        if VALUE_OPTIONS.contains(&word) {
            rest.next();
        } else if !word.starts_with('-') {
            words.push(word);
        }
    }
    // A single shell line (the skill's tests run `sh -c LINE`).
    if words.len() == 1 && words[0].contains(' ') {
        let split: Vec<String> = words[0]
            .split_whitespace()
            .skip_while(|w| *w != "maverick" && *w != "git-maverick")
            .skip(1)
            .map(str::to_owned)
            .collect();
        return schema_name(&split);
    }
    let with_sub = |first: &str, subs: &[&str]| -> String {
        match words.get(1) {
            Some(sub) if subs.contains(sub) => format!("{first}-{sub}"),
            _ => first.to_owned(),
        }
    };
    match words.first().copied() {
        Some("coord") => match words.get(1).copied() {
            Some("takeover") => "coord-claim".to_owned(),
            Some("block" | "unblock" | "label") => "coord-label".to_owned(),
            Some(sub) => format!("coord-{sub}"),
            None => "coord".to_owned(),
        },
        Some(first @ ("task" | "state" | "hook")) => {
            format!("{first}-{}", words.get(1).unwrap_or(&""))
        }
        Some("dispatch") => with_sub("dispatch", &["status", "release"]),
        Some(first) => first.to_owned(),
        None if args.iter().any(|a| a == "--version" || a == "-V") => "version".to_owned(),
        None => String::new(),
    }
}

/// A finished `git-maverick` process.
#[derive(Debug)]
pub struct Run {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn from_output(args: &[&str], out: Output) -> Run {
        Run {
            args: args.iter().map(|s| s.to_string()).collect(),
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    #[track_caller]
    pub fn expect(&self, code: i32) -> &Run {
        assert_eq!(
            self.code, code,
            "git maverick {:?} exited {} (wanted {code})\n--- stdout\n{}\n--- stderr\n{}",
            self.args, self.code, self.stdout, self.stderr
        );
        self
    }

    /// The one JSON object a `--json` run prints.
    #[track_caller]
    pub fn json(&self) -> Value {
        let trimmed = self.stdout.trim();
        assert_eq!(
            trimmed.lines().count(),
            1,
            "want exactly one JSON line, got:\n{}",
            self.stdout
        );
        let value: Value = serde_json::from_str(trimmed)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout));
        assert!(value.is_object(), "stdout is not a JSON object: {value}");
        assert_eq!(
            value["exit_code"], self.code,
            "exit_code field disagrees with the exit status"
        );
        // The JSON contract: every object the suite sees validates against
        // its command's schema in schemas/.
        let schema = json_schema::command_schema(&schema_name(&self.args));
        schema.assert_valid(&value);
        value
    }

    /// What a person saw, for snapshots: both streams and the exit status.
    pub fn screen(&self) -> String {
        format!(
            "{}{}[exit status: {}]\n",
            self.stdout, self.stderr, self.code
        )
    }
}

/// `git push ARGS` from `repo` as its instance, through the real pre-push hook.
pub fn push(repo: &Repo, args: &[&str]) -> Output {
    let mut full = vec!["push"];
    full.extend_from_slice(args);
    repo.git_as_instance(&full, &[])
}

/// The push went through.
#[track_caller]
pub fn allowed(out: &Output) {
    assert!(
        out.status.success(),
        "push refused:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The hook refused the push as a collision (exit 8 inside git); returns
/// what git and the hook printed.
#[track_caller]
pub fn refused_as_collision(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "push went through:\n{stderr}");
    assert!(
        stderr.contains("stop and report; do not merge or overwrite"),
        "{stderr}"
    );
    stderr
}

/// Object names to placeholders (see [`TestEnv::normalise`]).
pub fn normalise_object_names(text: &str) -> String {
    replace_words(text, |word| {
        let hex = word.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        let digit = word.bytes().any(|b| b.is_ascii_digit());
        let letter = word.bytes().any(|b| b.is_ascii_lowercase());
        match word.len() {
            40 | 64 if hex => Some("[oid]"),
            7..=39 if hex && digit && letter => Some("[short-oid]"),
            _ => None,
        }
    })
}

/// `text` with each word (a run of ASCII letters, digits and `_`) that
/// `placeholder` names replaced by it.
pub fn replace_words(text: &str, placeholder: impl Fn(&str) -> Option<&'static str>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match placeholder(word) {
            Some(p) => out.push_str(p),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

#[test]
fn object_names_become_placeholders_and_numbers_stay() {
    let full = "d739c9f0e1a2b3c4d5e6f708192a3b4c5d6e7f80";
    assert_eq!(
        normalise_object_names(&format!("{full} d739c9f pushed (d739c9f), comment 2200000001, deadbeef0 deadbeef, #142, maverick/142-parser")),
        "[oid] [short-oid] pushed ([short-oid]), comment 2200000001, [short-oid] deadbeef, #142, maverick/142-parser"
    );
    assert_eq!(
        normalise_object_names("refs/heads/a1b2c3d4e..f00ba12"),
        "refs/heads/[short-oid]..[short-oid]"
    );
}

#[test]
fn the_temp_dir_becomes_root_as_given_and_as_resolved() {
    let env = TestEnv::new();
    let given = env.path().join("alpha/.git");
    let resolved = env.path().canonicalize().unwrap().join("alpha");
    assert_eq!(
        env.normalise(&format!(
            "{}\n{}: d739c9f\n",
            given.display(),
            resolved.display()
        )),
        "[ROOT]/alpha/.git\n[ROOT]/alpha: [short-oid]\n"
    );
}
