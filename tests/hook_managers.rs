//! The pre-push guard with real hook managers (issue 11): lefthook, husky
//! and pre-commit as `scripts/test.sh` installs them, each one's own `install`, and
//! real `git push`es to a bare origin. In every setup a force push over a
//! claimed branch is refused and a plain fast-forward passes; `hook status`
//! says whether the guard runs, and `install` never claims a guard that will
//! not run.

use std::path::Path;
use std::process::{Command, Output};

use crate::support::screen::{git_screen, screen};
use crate::support::{allowed, push, Repo, TestEnv};

const BRANCH: &str = "maverick/21-managed";

/// Fails, naming the `scripts/test.sh` step, when a manager is missing: never a skip.
#[track_caller]
fn require(tool: &str, step: &str) {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()));
    assert!(
        found,
        "{tool} is not on PATH; the tests drive the real {tool}: run `scripts/test.sh` (its step `{step}`) \
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
/// pass the guard, a force push back over the branch is refused, as the
/// snapshot `force_push_through_{manager}` shows it.
#[track_caller]
fn the_guard_holds(env: &TestEnv, a: &Repo, manager: &str) {
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
    insta::assert_snapshot!(
        format!("force_push_through_{manager}"),
        git_screen(env, &out)
    );
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

/// `hook status --json` as its snapshot `name` shows it.
#[track_caller]
fn status_is(a: &Repo, name: &str) {
    let run = a.maverick(&["--json", "hook", "status"]);
    run.json();
    insta::assert_snapshot!(name, screen(a.env, &run));
}

/// No file under `dir` holds maverick's block, or is a copy of git-maverick
/// an earlier version wrote, any more.
#[track_caller]
fn no_block_under(dir: &Path) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            no_block_under(&path);
            continue;
        }
        let bytes = std::fs::read(&path).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("git-maverick pre-push >>>")
                && !text.contains("this file is a copy of git-maverick"),
            "{} still holds maverick's guard",
            path.display()
        );
    }
}

/// A clone `a` whose lefthook config is `config`, with lefthook's hooks
/// installed by lefthook itself.
fn lefthook_clone<'a>(env: &'a TestEnv, config: &str) -> Repo<'a> {
    require("lefthook", "npm install lefthook husky");
    let a = env.clone("a");
    a.write_file("lefthook.yml", config);
    tool(&a, "lefthook", &["install"]);
    a
}

const LEFTHOOK_PRE_COMMIT: &str = "pre-commit:\n  commands:\n    lint:\n      run: echo ok\n";
const LEFTHOOK_PRE_PUSH: &str = "pre-push:\n  commands:\n    test:\n      run: echo ok\n";

/// A push from `repo` with `path` as PATH (a machine without git-maverick).
fn push_with_path(repo: &Repo, path: &std::ffi::OsStr, args: &[&str]) -> Output {
    let mut full = vec!["push"];
    full.extend_from_slice(args);
    repo.git_as_instance(&full, &[("PATH", path)])
}

/// Before lefthook has a pre-push hook, `install` leaves the plain hook
/// file guarding (never nothing); once `lefthook install` puts its own in
/// place, lefthook runs the guard from the clone's local config.
#[test]
fn lefthook_runs_the_guard_from_its_config() {
    let env = TestEnv::new();
    let a = lefthook_clone(&env, LEFTHOOK_PRE_COMMIT);
    assert!(!a.dir.join(".git/hooks/pre-push").exists());
    a.maverick(&["hook", "install"]).expect(0);
    let on = status(&a, 0);
    assert_eq!(on["manager"], "lefthook");
    assert!(
        on["via"].as_str().unwrap().ends_with(".git/hooks/pre-push"),
        "{on}"
    );
    // lefthook now installs its pre-push hook (the local config has one).
    tool(&a, "lefthook", &["install"]);
    let hook = std::fs::read_to_string(a.dir.join(".git/hooks/pre-push")).unwrap();
    assert!(hook.contains("lefthook"), "{hook}");
    let on = status(&a, 0);
    assert!(
        on["via"].as_str().unwrap().ends_with("lefthook-local.yml"),
        "{on}"
    );
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
    the_guard_holds(&env, &a, "lefthook_local_config");
    // lefthook's config skips the hook: status says the guard is off.
    a.write_file(
        "lefthook.yml",
        "pre-commit:\n  commands:\n    lint:\n      run: echo ok\npre-push:\n  skip: true\n",
    );
    status_is(&a, "status_when_lefthook_skips_pre_push");
}

/// lefthook's hook cannot find lefthook: it lets every push through, so
/// `status` does not call the guard on.
#[test]
fn lefthook_without_lefthook_is_reported_off() {
    let env = TestEnv::new();
    let a = lefthook_clone(&env, LEFTHOOK_PRE_PUSH);
    a.maverick(&["hook", "install"]).expect(0);
    status(&a, 0);
    // No lefthook on PATH, and the path lefthook wrote into its hook gone.
    let hook = a.dir.join(".git/hooks/pre-push");
    let text = std::fs::read_to_string(&hook).unwrap();
    assert!(text.contains("Can't find lefthook"), "{text}");
    let written: Vec<&str> = text
        .split_whitespace()
        .filter(|w| w.starts_with('/') && w.ends_with("/lefthook"))
        .collect();
    let mut moved = text.clone();
    for path in written {
        moved = moved.replace(path, "/nowhere/lefthook");
    }
    std::fs::write(&hook, moved).unwrap();
    let path = crate::support::path_without_maverick(&env);
    let mut cmd = a.maverick_command(&["--json", "hook", "status"]);
    let mut with_maverick =
        std::ffi::OsString::from(Path::new(crate::support::BIN).parent().unwrap());
    with_maverick.push(":");
    with_maverick.push(&path);
    cmd.env("PATH", &with_maverick);
    let out = cmd.output().unwrap();
    insta::assert_snapshot!(
        "status_when_lefthook_finds_no_lefthook",
        git_screen(&env, &out)
    );
}

/// A tracked `.lefthook-local` that is a symbolic link out of the
/// repository: `install` writes nothing through it, and `status` does not
/// call a script behind it a guard.
#[test]
fn a_tracked_lefthook_local_link_out_of_the_repository_is_never_followed() {
    require("lefthook", "npm install lefthook husky");
    let env = TestEnv::new();
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let b = env.clone("b");
    b.write_file("lefthook.yml", LEFTHOOK_PRE_PUSH);
    std::os::unix::fs::symlink("../outside", b.dir.join(".lefthook-local")).unwrap();
    b.git(&["add", "lefthook.yml", ".lefthook-local"]);
    b.git(&["commit", "--quiet", "-m", "chore: lefthook"]);
    b.git(&["push", "--quiet", "origin", "main"]);
    let a = env.clone("a");
    tool(&a, "lefthook", &["install"]);
    let run = a.maverick(&["hook", "install"]);
    insta::assert_snapshot!("install_over_a_lefthook_local_link", screen(&env, &run));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    // Even with a guard placed behind the link by someone, it is not "on".
    std::fs::create_dir_all(outside.join("pre-push")).unwrap();
    std::fs::write(
        outside.join("pre-push/git-maverick"),
        "git-maverick hook pre-push \"$@\"\n",
    )
    .unwrap();
    a.write_file(
        "lefthook-local.yml",
        "pre-push:\n  scripts:\n    \"git-maverick\":\n      runner: sh\n      use_stdin: true\n",
    );
    status_is(&a, "status_behind_a_lefthook_local_link");
}

#[test]
fn lefthook_installed_over_maverick_s_hook_is_reported_and_fixed() {
    require("lefthook", "npm install lefthook husky");
    let env = TestEnv::new();
    let a = env.clone("a");
    a.maverick(&["hook", "install"]).expect(0);
    a.write_file("lefthook.yml", LEFTHOOK_PRE_PUSH);
    tool(&a, "lefthook", &["install"]);
    // lefthook's own hook replaced maverick's, renamed to one it never runs.
    let hook = std::fs::read_to_string(a.dir.join(".git/hooks/pre-push")).unwrap();
    assert!(hook.contains("lefthook"), "{hook}");
    assert!(a.dir.join(".git/hooks/pre-push.old").exists());
    status_is(&a, "status_when_lefthook_replaced_the_hook");
    // The main config has a pre-push section; the clone's local one does not.
    a.maverick(&["hook", "install"]).expect(0);
    the_guard_holds(&env, &a, "lefthook_main_config");
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
    a.write_file("lefthook.yml", LEFTHOOK_PRE_COMMIT);
    a.write_file(
        "lefthook-local.yml",
        "pre-push:\n  commands:\n    mine:\n      run: echo ok\n",
    );
    tool(&a, "lefthook", &["install"]);
    let run = a.maverick(&["hook", "install"]);
    insta::assert_snapshot!(
        "install_beside_a_lefthook_local_pre_push",
        screen(&env, &run)
    );
    assert_eq!(
        std::fs::read_to_string(a.dir.join("lefthook-local.yml")).unwrap(),
        "pre-push:\n  commands:\n    mine:\n      run: echo ok\n"
    );
}

/// A clone `name` of a node project with husky's hooks installed by husky.
fn husky_clone<'a>(env: &'a TestEnv, name: &str) -> Repo<'a> {
    require("husky", "npm install lefthook husky");
    let repo = env.clone(name);
    repo.write_file(
        "package.json",
        "{\"name\": \"widgets\", \"version\": \"1.0.0\"}\n",
    );
    tool(&repo, "husky", &[]);
    repo
}

#[test]
fn husky_runs_the_guard_from_its_own_hook_file() {
    let env = TestEnv::new();
    let a = husky_clone(&env, "a");
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
    the_guard_holds(&env, &a, "husky");
    a.maverick(&["hook", "uninstall"]).expect(0);
    no_block_under(&a.dir.join(".husky"));
    status(&a, 1);
}

/// `.husky/pre-push` is committed and shared: a teammate who never used
/// git-maverick (no binary, no maverick state in the clone) pushes through
/// maverick's block untouched, while a clone that uses maverick fails
/// closed without the binary.
#[test]
fn husky_s_shared_hook_lets_teammates_without_maverick_through() {
    let env = TestEnv::new();
    let a = husky_clone(&env, "a");
    a.maverick(&["hook", "install"]).expect(0);
    a.git(&["add", "package.json", ".husky/pre-push"]);
    a.git(&[
        "commit",
        "--quiet",
        "-m",
        "chore: husky, with the one-writer guard",
    ]);
    allowed(&push(&a, &["--quiet", "origin", "main"]));

    let without = crate::support::path_without_maverick(&env);
    let b = env.clone("b");
    tool(&b, "husky", &[]);
    b.git(&["switch", "--quiet", "-c", "feature/b"]);
    b.commit_file("b.rs", "b\n", "feat: b");
    allowed(&push_with_path(
        &b,
        &without,
        &["--quiet", "origin", "feature/b"],
    ));
    assert_eq!(
        env.origin_head("feature/b"),
        Some(b.git(&["rev-parse", "HEAD"]))
    );

    // a uses maverick: without git-maverick its pushes are refused.
    a.maverick(&["coord", "claim", "21", "--branch", BRANCH])
        .expect(0);
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    a.commit_file("one.rs", "1\n", "feat: one");
    let out = push_with_path(&a, &without, &["origin", BRANCH]);
    insta::assert_snapshot!(
        "husky_push_without_git_maverick_on_path",
        git_screen(&env, &out)
    );
    assert_eq!(env.origin_head(BRANCH), None);
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

/// pre-commit hands its hooks the first ref of a push only (deletions
/// never): a `.pre-commit-config.yaml` entry is not called a guard. The
/// guard goes into `pre-push.legacy`, which pre-commit's own hook runs first
/// with the whole push.
#[test]
fn pre_commit_runs_the_guard_with_the_whole_push() {
    require("pre-commit", "pip install pre-commit");
    let env = TestEnv::new();
    let a = env.clone("a");
    a.write_file(".pre-commit-config.yaml", "repos: []\n");
    a.git(&["add", ".pre-commit-config.yaml"]);
    a.git(&["commit", "--quiet", "-m", "chore: pre-commit"]);
    tool(&a, "pre-commit", &["install", "--hook-type", "pre-push"]);
    status(&a, 1);
    // The project's hook definition in the team's config, as pre-commit
    // itself validates it: not the whole push, so not "on".
    let (repo, rev) = hook_repository(&env);
    a.write_file(
        ".pre-commit-config.yaml",
        &format!(
            "repos:\n  - repo: {repo}\n    rev: {rev}\n    hooks:\n      - id: git-maverick\n"
        ),
    );
    a.git(&["commit", "--quiet", "-am", "chore: the one-writer guard"]);
    tool(
        &a,
        "pre-commit",
        &["validate-config", ".pre-commit-config.yaml"],
    );
    tool(
        &a,
        "pre-commit",
        &[
            "validate-manifest",
            &format!("{repo}/.pre-commit-hooks.yaml"),
        ],
    );
    status_is(&a, "status_with_the_pre_commit_config_entry");
    let run = a.maverick(&["--json", "hook", "install"]);
    insta::assert_snapshot!("install_beside_pre_commit", screen(&env, &run));
    let on = status(&a, 0);
    assert_eq!(on["manager"], "pre-commit");
    assert!(
        on["via"].as_str().unwrap().ends_with("pre-push.legacy"),
        "{on}"
    );
    the_guard_holds(&env, &a, "pre_commit");
    // The deletion pre-commit would never show its hooks is refused.
    let out = push(&a, &["origin", "--delete", BRANCH]);
    insta::assert_snapshot!("a_deletion_through_pre_commit", git_screen(&env, &out));
    assert!(env.origin_head(BRANCH).is_some());
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
    insta::assert_snapshot!(
        "pre_commit_variables_of_a_force_push",
        git_screen(&env, &out)
    );
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
    the_guard_holds(&env, &a, "a_hooks_path");
}

#[test]
fn status_says_why_the_guard_is_off_and_commands_warn_once() {
    let env = TestEnv::new();
    let a = env.clone("a");
    status_is(&a, "status_without_a_hook");
    let text = a.maverick(&["hook", "status"]);
    insta::assert_snapshot!("status_screen_without_a_hook", screen(&env, &text));
    let claim = a.maverick(&["coord", "claim", "21", "--branch", BRANCH]);
    insta::assert_snapshot!("claim_warns_the_guard_is_off", screen(&env, &claim));
    let again = a.maverick(&["coord", "claim", "21", "--branch", BRANCH]);
    insta::assert_snapshot!("claim_again_warns_no_more", screen(&env, &again));
    a.maverick(&["hook", "install"]).expect(0);
    let on = status(&a, 0);
    assert!(
        on["via"].as_str().unwrap().ends_with(".git/hooks/pre-push"),
        "{on}"
    );
    // Off again: warned again, once.
    std::fs::remove_file(a.dir.join(".git/hooks/pre-push")).unwrap();
    let claim = a.maverick(&["coord", "claim", "21", "--branch", BRANCH]);
    insta::assert_snapshot!("claim_warns_the_guard_is_off_again", screen(&env, &claim));
}

/// pre-commit installed after maverick keeps maverick's hook as
/// `pre-push.legacy` and runs it first with git's arguments and stdin: it
/// guards from there, `status` names it, and `uninstall` removes it.
#[test]
fn pre_commit_runs_maverick_s_hook_kept_as_legacy() {
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
    the_guard_holds(&env, &a, "pre_commit_legacy");
    a.maverick(&["hook", "uninstall"]).expect(0);
    no_block_under(&a.dir.join(".git/hooks"));
    // With git-maverick gone from PATH, pushes still work.
    a.git(&["switch", "--quiet", "-c", "feature/x"]);
    a.commit_file("x.rs", "x\n", "feat: x");
    // The test's own PATH: pre-commit, and no git-maverick.
    let path = std::env::var_os("PATH").unwrap();
    assert!(!std::env::split_paths(&path).any(|d| d.join("git-maverick").exists()));
    allowed(&push_with_path(
        &a,
        &path,
        &["--quiet", "origin", "feature/x"],
    ));
}

/// git-lfs's own pre-push hook (`git lfs install --local`) and the guard in
/// one file: maverick's block goes into it, hands the pushed refs on, and
/// git-lfs still uploads its objects; the guard still refuses a force push.
#[test]
fn git_lfs_s_hook_gets_the_block_and_still_uploads() {
    require("git-lfs", "apt-get install git-lfs");
    let env = TestEnv::new();
    let a = env.clone("a");
    tool(&a, "git", &["lfs", "install", "--local"]);
    let lfs_hook = std::fs::read_to_string(a.dir.join(".git/hooks/pre-push")).unwrap();
    assert!(lfs_hook.contains("git lfs pre-push"), "{lfs_hook}");
    let run = a.maverick(&["--json", "hook", "install"]);
    run.expect(0);
    assert_eq!(run.json()["change"], "added");
    let on = status(&a, 0);
    assert!(
        on["via"].as_str().unwrap().ends_with(".git/hooks/pre-push"),
        "{on}"
    );
    tool(&a, "git", &["lfs", "track", "*.bin"]);
    a.maverick(&["coord", "claim", "21", "--branch", BRANCH])
        .expect(0);
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    a.write_file("data.bin", &"large file\n".repeat(1000));
    a.git(&["add", ".gitattributes", "data.bin"]);
    a.git(&["commit", "--quiet", "-m", "feat: data"]);
    let pushed = a.git(&["rev-parse", "HEAD"]);
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(pushed.clone()));
    let objects = env.origin.join("lfs/objects");
    assert!(
        objects.is_dir() && std::fs::read_dir(&objects).unwrap().count() > 0,
        "git-lfs uploaded nothing: it did not get the pushed refs"
    );
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    a.commit_file("other.rs", "x\n", "feat: another");
    let out = push(&a, &["--force", "origin", BRANCH]);
    insta::assert_snapshot!("force_push_through_git_lfs", git_screen(&env, &out));
    assert_eq!(env.origin_head(BRANCH), Some(pushed));
}
