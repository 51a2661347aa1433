//! The pre-push guard with real hook managers (issue 11): lefthook, husky
//! and pre-commit as `.ci/run` installs them, each one's own `install`, and
//! real `git push`es to a bare origin. In every setup a force push over a
//! claimed branch is refused and a plain fast-forward passes; `hook status`
//! says whether the guard runs, and `install` never claims a guard that will
//! not run.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::{allowed, push, Repo, TestEnv};

const BRANCH: &str = "maverick/21-managed";

/// Fails, naming the `.ci/run` step, when a manager is missing: never a skip.
#[track_caller]
fn require(tool: &str, step: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()));
    assert!(
        found,
        "{tool} is not on PATH; the tests drive the real {tool}: run `.ci/run` (its step `{step}`) \
         or install it the same way"
    );
}

/// Runs a hook manager's own command in the clone, hermetic like git.
#[track_caller]
fn tool(repo: &Repo, program: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(&repo.dir);
    repo.env.apply_env(&mut cmd);
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Claims the issue for BRANCH, then: the first push and a fast-forward
/// pass the guard, a force push back over the branch is refused.
#[track_caller]
fn the_guard_holds(env: &TestEnv, a: &Repo) {
    a.maverick(&["coord", "claim", "21", "--branch", BRANCH])
        .expect(0);
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(a, &["-u", "origin", BRANCH]));
    let two = a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(a, &["origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH).as_deref(), Some(two.as_str()));
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    a.commit_file("other.rs", "x\n", "feat: another two");
    let out = push(a, &["--force", "origin", BRANCH]);
    // pre-commit shows a hook's output on stdout.
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "the force push went through:\n{said}"
    );
    assert!(said.contains("not a fast-forward"), "{said}");
    assert_eq!(env.origin_head(BRANCH), Some(two.clone()));
    // Back on the remote head, a fast-forward passes.
    a.git(&["reset", "--quiet", "--hard", &two]);
    let three = a.commit_file("three.rs", "3\n", "feat: three");
    allowed(&push(a, &["origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(three));
}

#[track_caller]
fn status(a: &Repo, code: i32) -> serde_json::Value {
    let run = a.maverick(&["--json", "hook", "status"]);
    run.expect(code);
    run.json()
}

/// No file under `dir` holds maverick's block any more.
#[track_caller]
fn no_block_under(dir: &Path) {
    let built = std::fs::read(crate::support::BIN).unwrap();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            no_block_under(&path);
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        assert!(
            bytes != built,
            "{} is still a copy of git-maverick",
            path.display()
        );
        if let Ok(text) = String::from_utf8(bytes) {
            assert!(
                !text.contains("git-maverick pre-push >>>"),
                "{} still has maverick's block",
                path.display()
            );
        }
    }
}

#[test]
fn lefthook_runs_the_guard_from_its_config() {
    require("lefthook", "npm install lefthook husky");
    let env = TestEnv::new();
    let a = env.clone("a");
    a.write_file(
        "lefthook.yml",
        "pre-commit:\n  commands:\n    lint:\n      run: echo ok\n",
    );
    tool(&a, "lefthook", &["install"]);
    // lefthook has no pre-push hook yet: install says so and fails.
    let run = a.maverick(&["hook", "install"]);
    run.expect(1);
    assert!(run.stderr.contains("lefthook install"), "{}", run.stderr);
    assert!(run.stdout.contains("lefthook-local.yml"), "{}", run.stdout);
    assert_eq!(status(&a, 1)["on"], false);
    tool(&a, "lefthook", &["install"]);
    let on = status(&a, 0);
    assert_eq!(on["manager"], "lefthook");
    assert!(on["via"].as_str().unwrap().ends_with("lefthook-local.yml"));
    // The clone's own config stays out of commits.
    assert_eq!(
        a.git(&[
            "status",
            "--porcelain",
            "--",
            "lefthook-local.yml",
            ".lefthook-local"
        ]),
        ""
    );
    the_guard_holds(&env, &a);
}

#[test]
fn lefthook_installed_over_maverick_s_hook_is_reported_and_fixed() {
    require("lefthook", "npm install lefthook husky");
    let env = TestEnv::new();
    let a = env.clone("a");
    a.maverick(&["hook", "install"]).expect(0);
    a.write_file(
        "lefthook.yml",
        "pre-push:\n  commands:\n    test:\n      run: echo ok\n",
    );
    tool(&a, "lefthook", &["install"]);
    // lefthook's own hook replaced maverick's (a copy of git-maverick,
    // which lefthook takes for one of its own: it writes over it).
    let hook = std::fs::read_to_string(a.dir.join(".git/hooks/pre-push")).unwrap();
    assert!(hook.contains("lefthook"), "{hook}");
    let off = status(&a, 1);
    assert!(
        off["why_not"].as_str().unwrap().contains("lefthook"),
        "{off}"
    );
    // The main config has a pre-push section; the clone's local one does not.
    a.maverick(&["hook", "install"]).expect(0);
    the_guard_holds(&env, &a);
    // Uninstall takes out every copy, the renamed one included.
    a.maverick(&["hook", "uninstall"]).expect(0);
    no_block_under(&a.dir.join(".git/hooks"));
    assert!(!a.dir.join("lefthook-local.yml").exists());
    assert!(!a.dir.join(".lefthook-local/pre-push/git-maverick").exists());
    status(&a, 1);
}

#[test]
fn a_lefthook_local_config_with_its_own_pre_push_gets_the_lines_to_add() {
    require("lefthook", "npm install lefthook husky");
    let env = TestEnv::new();
    let a = env.clone("a");
    a.write_file(
        "lefthook.yml",
        "pre-commit:\n  commands:\n    lint:\n      run: echo ok\n",
    );
    a.write_file(
        "lefthook-local.yml",
        "pre-push:\n  commands:\n    mine:\n      run: echo ok\n",
    );
    tool(&a, "lefthook", &["install"]);
    let run = a.maverick(&["hook", "install"]);
    run.expect(1);
    assert!(run.stderr.contains("add these lines"), "{}", run.stderr);
    assert!(run.stderr.contains("\"git-maverick\":"), "{}", run.stderr);
    assert!(run.stderr.contains("use_stdin: true"), "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(a.dir.join("lefthook-local.yml")).unwrap(),
        "pre-push:\n  commands:\n    mine:\n      run: echo ok\n"
    );
}

#[test]
fn husky_runs_the_guard_from_its_own_hook_file() {
    require("husky", "npm install lefthook husky");
    let env = TestEnv::new();
    let a = env.clone("a");
    a.write_file(
        "package.json",
        "{\"name\": \"widgets\", \"version\": \"1.0.0\"}\n",
    );
    tool(&a, "husky", &[]);
    assert_eq!(a.git(&["config", "core.hooksPath"]), ".husky/_");
    status(&a, 1);
    a.maverick(&["hook", "install"]).expect(0);
    let on = status(&a, 0);
    assert_eq!(on["manager"], "husky");
    assert!(
        on["via"].as_str().unwrap().ends_with(".husky/pre-push"),
        "{on}"
    );
    // husky regenerates .husky/_ on every install: the guard stays.
    tool(&a, "husky", &[]);
    status(&a, 0);
    the_guard_holds(&env, &a);
    a.maverick(&["hook", "uninstall"]).expect(0);
    no_block_under(&a.dir.join(".husky"));
    status(&a, 1);
}

/// A repository that serves this project's `.pre-commit-hooks.yaml`.
fn hook_repository(env: &TestEnv) -> (String, String) {
    let dir = env.path().join("git-maverick-hooks");
    std::fs::create_dir_all(&dir).unwrap();
    let ours = Path::new(env!("CARGO_MANIFEST_DIR")).join(".pre-commit-hooks.yaml");
    std::fs::copy(ours, dir.join(".pre-commit-hooks.yaml")).unwrap();
    env.git_in(&dir, &["init", "--quiet"]);
    env.git_in(&dir, &["add", "."]);
    env.git_in(&dir, &["commit", "--quiet", "-m", "chore: hooks"]);
    let rev = env.git_in(&dir, &["rev-parse", "HEAD"]);
    (dir.to_str().unwrap().to_owned(), rev)
}

#[test]
fn pre_commit_runs_the_guard_from_the_project_s_hook_definition() {
    require("pre-commit", "pip install pre-commit");
    let env = TestEnv::new();
    let a = env.clone("a");
    a.write_file(".pre-commit-config.yaml", "repos: []\n");
    a.git(&["add", ".pre-commit-config.yaml"]);
    a.git(&["commit", "--quiet", "-m", "chore: pre-commit"]);
    tool(&a, "pre-commit", &["install", "--hook-type", "pre-push"]);
    // maverick does not edit the team's config: it prints what to add.
    let run = a.maverick(&["hook", "install"]);
    run.expect(1);
    assert!(run.stderr.contains("id: git-maverick"), "{}", run.stderr);
    assert!(run.stderr.contains("stages: [pre-push]"), "{}", run.stderr);
    status(&a, 1);
    let (repo, rev) = hook_repository(&env);
    a.write_file(
        ".pre-commit-config.yaml",
        &format!(
            "repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: git-maverick\n"
        ),
    );
    a.git(&["commit", "--quiet", "-am", "chore: the one-writer guard"]);
    assert_eq!(status(&a, 0)["manager"], "pre-commit");
    the_guard_holds(&env, &a);
    // Re-running pre-commit's install keeps the guard.
    tool(&a, "pre-commit", &["install", "--hook-type", "pre-push"]);
    status(&a, 0);
}

#[test]
fn pre_commit_variables_stand_in_for_stdin() {
    // The same check pre-commit triggers, called as pre-commit calls it.
    let env = TestEnv::new();
    let a = env.clone("a");
    a.maverick(&["coord", "claim", "21", "--branch", BRANCH])
        .expect(0);
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    let one = a.commit_file("one.rs", "1\n", "feat: one");
    a.git_as_instance(&["push", "--quiet", "--no-verify", "origin", BRANCH], &[]);
    a.maverick(&["resume", BRANCH]).expect(0);
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    let base = a.git(&["rev-parse", "HEAD"]);
    let run = |to: &str| {
        let mut cmd = a.maverick_command(&["hook", "pre-push"]);
        cmd.env("MAVERICK_INSTANCE", &a.instance)
            .env("PRE_COMMIT_REMOTE_NAME", "origin")
            .env("PRE_COMMIT_REMOTE_URL", &env.origin)
            .env("PRE_COMMIT_LOCAL_BRANCH", format!("refs/heads/{BRANCH}"))
            .env("PRE_COMMIT_REMOTE_BRANCH", format!("refs/heads/{BRANCH}"))
            // pre-commit's guess when the remote head is not local: wrong on purpose.
            .env("PRE_COMMIT_FROM_REF", &base)
            .env("PRE_COMMIT_TO_REF", to);
        cmd.output().unwrap()
    };
    let out = run(&base);
    assert_eq!(out.status.code(), Some(8), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a fast-forward"));
    let two = a.commit_file("two.rs", "2\n", "feat: two");
    a.git(&["reset", "--quiet", "--hard", &one]);
    let ahead = a.commit_file("three.rs", "3\n", "feat: three");
    assert_ne!(two, ahead);
    assert_eq!(run(&ahead).status.code(), Some(0));
}

#[test]
fn any_other_hooks_path_gets_the_block() {
    let env = TestEnv::new();
    let a = env.clone("a");
    a.git(&["config", "core.hooksPath", "ci/hooks"]);
    let run = a.maverick(&["--json", "hook", "install"]);
    run.expect(0);
    assert!(a.dir.join("ci/hooks/pre-push").exists());
    let on = status(&a, 0);
    assert_eq!(on["manager"], "none");
    the_guard_holds(&env, &a);
}

#[test]
fn status_says_why_the_guard_is_off_and_commands_warn_once() {
    let env = TestEnv::new();
    let a = env.clone("a");
    let off = status(&a, 1);
    assert_eq!(off["on"], false);
    assert!(
        off["why_not"]
            .as_str()
            .unwrap()
            .contains("no pre-push hook"),
        "{off}"
    );
    let text = a.maverick(&["hook", "status"]);
    text.expect(1);
    assert!(
        text.stderr.contains("error: the guard is off"),
        "{}",
        text.stderr
    );
    assert!(
        text.stderr.contains("hint: git maverick hook install"),
        "{}",
        text.stderr
    );
    let claim = a.maverick(&["coord", "claim", "21", "--branch", BRANCH]);
    claim.expect(0);
    assert!(
        claim.stderr.contains("warning: the pre-push guard is off"),
        "{}",
        claim.stderr
    );
    let again = a.maverick(&["coord", "claim", "21", "--branch", BRANCH]);
    again.expect(0);
    assert!(!again.stderr.contains("guard is off"), "{}", again.stderr);
    a.maverick(&["hook", "install"]).expect(0);
    let on = status(&a, 0);
    assert!(
        on["via"].as_str().unwrap().ends_with(".git/hooks/pre-push"),
        "{on}"
    );
    // Off again: warned again, once.
    std::fs::remove_file(a.dir.join(".git/hooks/pre-push")).unwrap();
    let claim = a.maverick(&["coord", "claim", "21", "--branch", BRANCH]);
    assert!(claim.stderr.contains("guard is off"), "{}", claim.stderr);
}

/// pre-commit keeps maverick's hook, a copy of git-maverick, as
/// `pre-push.legacy` and runs it first with git's arguments and stdin: the
/// copy guards from there, and `status` names it.
#[test]
fn pre_commit_runs_maverick_s_copy_kept_as_legacy() {
    require("pre-commit", "pip install pre-commit");
    let env = TestEnv::new();
    let a = env.clone("a");
    a.maverick(&["hook", "install"]).expect(0);
    a.write_file(".pre-commit-config.yaml", "repos: []\n");
    a.git(&["add", ".pre-commit-config.yaml"]);
    a.git(&["commit", "--quiet", "-m", "chore: pre-commit"]);
    tool(&a, "pre-commit", &["install", "--hook-type", "pre-push"]);
    let on = status(&a, 0);
    assert!(
        on["via"].as_str().unwrap().ends_with("pre-push.legacy"),
        "{on}"
    );
    the_guard_holds(&env, &a);
}

#[test]
fn uninstall_removes_the_copy_pre_commit_keeps_as_legacy() {
    require("pre-commit", "pip install pre-commit");
    let env = TestEnv::new();
    let a = env.clone("a");
    a.maverick(&["hook", "install"]).expect(0);
    a.write_file(".pre-commit-config.yaml", "repos: []\n");
    tool(&a, "pre-commit", &["install", "--hook-type", "pre-push"]);
    // pre-commit keeps maverick's hook, a copy of git-maverick, as its legacy hook.
    let legacy = a.dir.join(".git/hooks/pre-push.legacy");
    assert!(std::fs::read(&legacy).unwrap() == std::fs::read(crate::support::BIN).unwrap());
    a.maverick(&["hook", "uninstall"]).expect(0);
    no_block_under(&a.dir.join(".git/hooks"));
    // With git-maverick gone from PATH, pushes still work.
    a.git(&["switch", "--quiet", "-c", "feature/x"]);
    a.commit_file("x.rs", "x\n", "feat: x");
    let path = std::env::var_os("PATH").unwrap();
    assert!(!std::env::split_paths(&path).any(|d| d.join("git-maverick").exists()));
    let out = a.git_as_instance(
        &["push", "--quiet", "origin", "feature/x"],
        &[("PATH", &path)],
    );
    allowed(&out);
}
