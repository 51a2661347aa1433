//! The surface a test runs against, so one test body can run on every
//! surface: the git surface, and the GitHub surface against the fake server.
//!
//! A test body takes `&dyn SurfaceSetup`, makes its clones with
//! [`SurfaceSetup::clone`] and runs maverick with [`SurfaceSetup::maverick`],
//! and reads or edits the shared state (as a person would in the browser)
//! through the trait, never through one surface's storage.
#![allow(dead_code)]

use std::cell::Cell;
use std::process::Command;

use serde_json::{json, Value};

use super::{Repo, Run, Surface, TestEnv};

/// A comment as the surface stores it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredComment {
    pub id: u64,
    pub author: String,
    pub body: String,
}

pub trait SurfaceSetup {
    /// A short name for messages.
    fn name(&self) -> &'static str;

    /// The environment the test runs in.
    fn env(&self) -> &TestEnv;

    /// Configures a clone of origin to use this surface.
    fn configure(&self, repo: &Repo<'_>);

    /// Variables every maverick process needs on this surface.
    fn process_env(&self) -> Vec<(String, String)>;

    /// Every comment of an issue, in id order.
    fn comments(&self, issue: u64) -> Vec<StoredComment>;

    /// Replaces a comment's body, as a person editing it would.
    fn edit_comment(&self, issue: u64, id: u64, body: &str);

    /// Adds a comment by a trusted person; returns its id.
    fn add_comment(&self, issue: u64, author: &str, body: &str) -> u64;

    /// Lets `secs` pass for what `issue` stores, as far as every reader's
    /// lease arithmetic goes: the fake GitHub's clock moves; on the git
    /// surface, whose clock is its writers', the issue's stamps move back.
    fn let_time_pass(&self, issue: u64, secs: u64);

    /// A clone of origin named `name` (its instance id too), set up for this surface.
    fn clone<'a>(&'a self, name: &str) -> Repo<'a> {
        let repo = self.env().clone(name);
        self.configure(&repo);
        repo
    }

    /// `git maverick ARGS` in `repo`, as its instance.
    fn maverick(&self, repo: &Repo<'_>, args: &[&str]) -> Run {
        let mut cmd = self.command(repo, args);
        Run::from_output(args, cmd.output().expect("git-maverick runs"))
    }

    /// The command for `git maverick ARGS` in `repo`, to spawn.
    fn command(&self, repo: &Repo<'_>, args: &[&str]) -> Command {
        let mut cmd = repo.maverick_command(args);
        cmd.env("MAVERICK_INSTANCE", &repo.instance);
        for (k, v) in self.process_env() {
            cmd.env(k, v);
        }
        cmd
    }

    /// Opens pull request `number` carrying `labels`. (The git surface has
    /// no pull requests: there an issue carrying the labels stands for one.)
    fn open_pull(&self, repo: &Repo<'_>, number: u64, labels: &[&str]) {
        let n = number.to_string();
        let mut args = vec!["coord", "label", "add", n.as_str()];
        args.extend(labels);
        self.maverick(repo, &args).expect(0);
    }

    /// Closes an issue or pull request (on the git surface: the `closed` label).
    fn close(&self, repo: &Repo<'_>, number: u64) {
        let n = number.to_string();
        self.maverick(repo, &["coord", "label", "add", &n, "closed"])
            .expect(0);
    }

    /// The body of the issue's comment that starts with `prefix`, newest first.
    fn comment_starting_with(&self, issue: u64, prefix: &str) -> Option<StoredComment> {
        self.comments(issue)
            .into_iter()
            .rev()
            .find(|c| c.body.starts_with(prefix))
    }
}

/// The git surface: state in `refs/maverick/issues` on the bare origin.
pub struct GitSetup {
    pub env: TestEnv,
    edits: Cell<u32>,
}

impl GitSetup {
    pub fn new() -> GitSetup {
        GitSetup {
            env: TestEnv::new(),
            edits: Cell::new(0),
        }
    }

    /// Changes the stored surface as a person with push access could: one
    /// commit on `refs/maverick/issues`.
    fn edit_surface(&self, issue: u64, edit: impl FnOnce(&mut Value, &mut Value)) {
        let n = self.edits.get() + 1;
        self.edits.set(n);
        let dir = self.env.path().join(format!("surface-edit-{n}"));
        let origin = self.env.origin.to_str().unwrap().to_owned();
        self.env
            .git_in(self.env.path(), &["init", "--quiet", dir.to_str().unwrap()]);
        self.env.git_in(
            &dir,
            &[
                "fetch",
                "--quiet",
                &origin,
                "refs/maverick/issues:refs/heads/surface",
            ],
        );
        self.env.git_in(&dir, &["checkout", "--quiet", "surface"]);
        let issue_path = dir.join(format!("issue-{issue}.json"));
        let mut stored: Value = std::fs::read(&issue_path)
            .ok()
            .map(|b| serde_json::from_slice(&b).unwrap())
            .unwrap_or_else(
                || json!({"number": issue, "labels": [], "assignees": [], "comments": []}),
            );
        let meta_path = dir.join("meta.json");
        let mut meta: Value = serde_json::from_slice(&std::fs::read(&meta_path).unwrap()).unwrap();
        edit(&mut meta, &mut stored);
        std::fs::write(&issue_path, serde_json::to_vec_pretty(&stored).unwrap()).unwrap();
        std::fs::write(&meta_path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
        self.env.git_in(&dir, &["add", "-A"]);
        self.env
            .git_in(&dir, &["commit", "--quiet", "-m", "a person's edit"]);
        self.env.git_in(
            &dir,
            &["push", "--quiet", &origin, "surface:refs/maverick/issues"],
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

impl Default for GitSetup {
    fn default() -> Self {
        GitSetup::new()
    }
}

impl SurfaceSetup for GitSetup {
    fn name(&self) -> &'static str {
        "git"
    }

    fn env(&self) -> &TestEnv {
        &self.env
    }

    fn configure(&self, repo: &Repo<'_>) {
        repo.git(&["config", "maverick.surface", "git"]);
    }

    fn process_env(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    fn comments(&self, issue: u64) -> Vec<StoredComment> {
        let Some(stored) = self.env.stored_issue(issue) else {
            return Vec::new();
        };
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
    }

    fn edit_comment(&self, issue: u64, id: u64, body: &str) {
        self.edit_surface(issue, |_, stored| {
            let comment = stored["comments"]
                .as_array_mut()
                .unwrap()
                .iter_mut()
                .find(|c| c["id"] == id)
                .unwrap_or_else(|| panic!("no comment {id} on #{issue}"));
            comment["body"] = json!(body);
            // As on GitHub, an edit is stamped with when it was made.
            comment["updated_at"] = json!(maverick::timefmt::Timestamp::now().to_string());
        });
    }

    fn let_time_pass(&self, issue: u64, secs: u64) {
        let back = |stamp: &Value| {
            let at = maverick::timefmt::Timestamp::parse(stamp.as_str().unwrap()).unwrap();
            json!(at.minus(std::time::Duration::from_secs(secs)).to_string())
        };
        self.edit_surface(issue, |_, stored| {
            for comment in stored["comments"].as_array_mut().unwrap() {
                comment["created_at"] = back(&comment["created_at"]);
                comment["updated_at"] = back(&comment["updated_at"]);
            }
        });
    }

    fn add_comment(&self, issue: u64, author: &str, body: &str) -> u64 {
        let mut new_id = 0;
        self.edit_surface(issue, |meta, stored| {
            new_id = meta["next_comment_id"].as_u64().unwrap_or(1).max(1);
            meta["next_comment_id"] = json!(new_id + 1);
            let at = meta["clock"]
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
}

/// The github surface: issues, labels and comments on the fake GitHub
/// server; clones reach it through `GITHUB_API_URL` and `GH_TOKEN` (set by
/// `TestEnv` for every process).
pub struct GithubSetup {
    pub env: TestEnv,
}

impl GithubSetup {
    pub fn new() -> GithubSetup {
        let env = TestEnv::with_surface(Surface::Github);
        // Tests that run dozens of processes would spend GitHub's hourly
        // 5,000 requests; tests/github.rs tests the limit itself.
        env.github().set_rate_limit(100_000);
        GithubSetup { env }
    }
}

impl Default for GithubSetup {
    fn default() -> Self {
        GithubSetup::new()
    }
}

impl SurfaceSetup for GithubSetup {
    fn name(&self) -> &'static str {
        "github"
    }

    fn env(&self) -> &TestEnv {
        &self.env
    }

    fn configure(&self, _repo: &Repo<'_>) {
        // `TestEnv::clone` has pointed it at the fake already.
    }

    fn process_env(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    fn comments(&self, issue: u64) -> Vec<StoredComment> {
        self.env
            .github()
            .comments(issue)
            .into_iter()
            .map(|c| StoredComment {
                id: c.id,
                author: c.user,
                body: c.body,
            })
            .collect()
    }

    fn edit_comment(&self, _issue: u64, id: u64, body: &str) {
        self.env.github().edit_comment(id, body);
    }

    fn add_comment(&self, issue: u64, author: &str, body: &str) -> u64 {
        let fake = self.env.github();
        fake.add_user(author, "MEMBER");
        fake.add_comment_as(issue, author, body)
    }

    fn let_time_pass(&self, _issue: u64, secs: u64) {
        self.env.github().advance_clock(secs as i64);
    }

    fn open_pull(&self, _repo: &Repo<'_>, number: u64, labels: &[&str]) {
        let head = format!("{number:040x}");
        self.env
            .github()
            .create_pull(number, &format!("Pull request {number}"), labels, &head);
    }

    fn close(&self, _repo: &Repo<'_>, number: u64) {
        self.env.github().close(number);
    }
}

/// Runs each named test body (`fn name(setup: &dyn SurfaceSetup)`) on every
/// surface: `on_surfaces!(three_tasks_done_in_a_row, …);`
#[macro_export]
macro_rules! on_surfaces {
    ($($name:ident),* $(,)?) => {
        mod git_surface {
            $(
                #[test]
                fn $name() {
                    let setup = $crate::support::surfaces::GitSetup::new();
                    super::$name(&setup);
                }
            )*
        }
        mod github_surface {
            $(
                #[test]
                fn $name() {
                    let setup = $crate::support::surfaces::GithubSetup::new();
                    super::$name(&setup);
                }
            )*
        }
    };
}
