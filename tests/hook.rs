//! The pre-push hook against real pushes: the real binary on PATH, a real
//! bare origin, real `git push` (SPEC 8).

use std::ffi::OsStr;
use std::io::Write as _;
use std::process::{Output, Stdio};

use crate::support::screen::{git_screen, git_screen_naming, screen};
use crate::support::{
    allowed, path_without_maverick, push, refused_as_collision, Repo, RepoKind, TestEnv, BIN,
};

use crate::support::STORY_BRANCH as BRANCH;

/// The pre-push guard alone, as `cargo build` makes it beside git-maverick.
const PRE_PUSH_BIN: &str = env!("CARGO_BIN_EXE_maverick-pre-push");

// SPEC 8's checks in every kind of repository: refs as files or a
// reftable, object names in SHA-1 or SHA-256 (issue 26, item 2).
on_every_repo_kind!(
    first_push_of_a_new_claimed_branch,
    fast_forward_push,
    two_plain_pushes_in_a_row_raise_no_false_alarm,
    a_push_the_remote_rejected_raises_no_false_alarm,
    the_pusher_s_instance_can_come_from_git_config,
    a_second_clone_pushes_then_the_holders_push_is_refused_as_a_moved_head,
    force_pushes_are_refused,
    deleting_the_branch_is_refused,
    a_push_from_a_linked_worktree_is_checked,
    long_reflogs_give_the_same_verdicts,
    a_rewind_behind_long_reflogs_is_a_moved_head,
    a_remembered_entry_dropped_from_the_reflog_reads_it_whole,
    a_record_of_an_earlier_version_is_read_by_count_and_upgraded,
);

fn first_push_of_a_new_claimed_branch(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.claimed_clone("a");
    let head = a.commit_file("parser.rs", "fn parse() {}\n", "feat: parser");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(head));
}

fn fast_forward_push(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.claimed_clone("a");
    a.commit_file("parser.rs", "fn parse() {}\n", "feat: parser");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    let head = a.commit_file("parser.rs", "fn parse() -> u8 { 2 }\n", "feat: parse more");
    allowed(&push(&a, &["--quiet", "origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(head));
}

fn two_plain_pushes_in_a_row_raise_no_false_alarm(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    for n in 2..5 {
        a.commit_file(
            &format!("f{n}.rs"),
            &format!("{n}\n"),
            &format!("feat: {n}"),
        );
        allowed(&push(&a, &["--quiet"]));
    }
    // Nothing new: git does not even ask the hook.
    allowed(&push(&a, &["--quiet"]));
    assert_eq!(env.origin_head(BRANCH), Some(a.git(&["rev-parse", "HEAD"])));
}

fn a_push_the_remote_rejected_raises_no_false_alarm(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    // The remote turns the next push down after the hook allowed it.
    let gate = env.path().join("reject-once");
    std::fs::write(&gate, "").unwrap();
    let hook = env.origin.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\nif [ -e '{0}' ]; then rm '{0}'; echo 'not today' >&2; exit 1; fi\n",
            gate.display()
        ),
    )
    .unwrap();
    make_executable(&hook);
    a.commit_file("two.rs", "2\n", "feat: two");
    let out = push(&a, &["--quiet"]);
    insta::assert_snapshot!("a_push_the_remote_rejected", git_screen(&env, &out));
    a.commit_file("three.rs", "3\n", "feat: three");
    allowed(&push(&a, &["--quiet"]));
    a.commit_file("four.rs", "4\n", "feat: four");
    allowed(&push(&a, &["--quiet"]));
    assert_eq!(env.origin_head(BRANCH), Some(a.git(&["rev-parse", "HEAD"])));
}

fn the_pusher_s_instance_can_come_from_git_config(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    // `git_output` runs git without MAVERICK_INSTANCE: the hook asks config.
    a.git(&["config", "maverick.instance", "a"]);
    let out = a.git_output(&["push", "--quiet", "-u", "origin", BRANCH]);
    allowed(&out);
    a.commit_file("two.rs", "2\n", "feat: two");
    a.git(&["config", "maverick.instance", "somebody-else"]);
    let out = a.git_output(&["push", "origin", BRANCH]);
    insta::assert_snapshot!("a_push_by_another_instance", git_screen(&env, &out));
    // Pushed by URL instead of by name: still maverick's remote.
    a.git(&["config", "maverick.instance", "a"]);
    let url = env.origin.to_str().unwrap();
    allowed(&a.git_output(&["push", "--quiet", url, BRANCH]));
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    let out = a.git_output(&["push", "--force", url, BRANCH]);
    insta::assert_snapshot!("a_force_push_by_url", git_screen(&env, &out));
}

fn a_second_clone_pushes_then_the_holders_push_is_refused_as_a_moved_head(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.claimed_clone("a");
    a.commit_file("parser.rs", "fn parse() {}\n", "feat: parser");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    let last_seen = a.git(&["rev-parse", "HEAD"]);

    // Another clone, no claim: for it the branch is unmanaged, so it pushes.
    let b = env.clone("b");
    b.maverick(&["hook", "install"]).expect(0);
    b.git(&["switch", "--quiet", BRANCH]);
    let intruder = b.commit_file("other.rs", "intrusion\n", "feat: someone else");
    allowed(&push(&b, &["--quiet", "origin", BRANCH]));

    // The holder fetches, rebases and pushes: the head moved behind its back.
    a.commit_file("parser.rs", "fn parse() { 1 }\n", "feat: more parser");
    a.git(&["fetch", "--quiet", "origin"]);
    a.git(&["rebase", "--quiet", &format!("origin/{BRANCH}")]);
    let out = push(&a, &["origin", BRANCH]);
    let names = [
        (intruder.as_str(), "[intruder]"),
        (last_seen.as_str(), "[last-seen]"),
    ];
    insta::assert_snapshot!(
        "a_push_over_a_moved_head",
        git_screen_naming(&env, &out, &names)
    );
    assert_eq!(env.origin_head(BRANCH), Some(intruder));
}

fn force_pushes_are_refused(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    let pushed = a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    a.commit_file("two.rs", "rewritten\n", "feat: two, rewritten");

    // The same refusal whichever way the push is forced.
    for args in [
        &["--force", "origin", BRANCH][..],
        &["origin", &format!("+{BRANCH}")],
        &["--force-with-lease", "origin", BRANCH],
    ] {
        let out = push(&a, args);
        insta::assert_snapshot!("a_force_push", git_screen(&env, &out));
    }
    assert_eq!(env.origin_head(BRANCH), Some(pushed));
}

fn deleting_the_branch_is_refused(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.claimed_clone("a");
    let head = a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    for args in [
        &["origin", "--delete", BRANCH][..],
        &["origin", &format!(":{BRANCH}")],
    ] {
        let out = push(&a, args);
        insta::assert_snapshot!("a_push_deleting_the_branch", git_screen(&env, &out));
    }
    assert_eq!(env.origin_head(BRANCH), Some(head));
}

#[test]
fn a_released_branch_is_no_longer_guarded() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    a.maverick(&["coord", "release", "142", "--reason", "merged"])
        .expect(0);
    allowed(&push(&a, &["--quiet", "origin", "--delete", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), None);
}

#[test]
fn tags_are_allowed() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    a.git(&["tag", "v1"]);
    allowed(&push(&a, &["--quiet", "origin", "v1"]));
    a.git(&["tag", "-f", "v1", "main"]);
    allowed(&push(&a, &["--quiet", "--force", "origin", "v1"]));
}

/// Every git command a push ran, from a `GIT_TRACE` log.
fn traced_push(repo: &Repo, args: &[&str]) -> (Output, String) {
    let log = repo
        .env
        .path()
        .join(format!("trace-{}.log", args.join("-").replace('/', "_")));
    let mut full = vec!["push"];
    full.extend_from_slice(args);
    let out = repo.git_as_instance(&full, &[("GIT_TRACE", log.as_os_str())]);
    (out, std::fs::read_to_string(&log).unwrap_or_default())
}

/// The git commands the pre-push hook ran, from a push's `GIT_TRACE` log:
/// those between git starting the hook and git packing what it pushes.
fn hook_commands(trace: &str) -> Vec<String> {
    let started = trace
        .find("pre-push")
        .unwrap_or_else(|| panic!("the hook did not run:\n{trace}"));
    trace[started..]
        .lines()
        .take_while(|line| !line.contains("pack-objects"))
        .filter_map(|line| {
            line.split_once("trace: built-in: git ")
                .map(|(_, c)| c.to_owned())
        })
        .collect()
}

/// Item 2 and SPEC 8's cost: an unmanaged branch costs no git process at
/// all; a managed one asks git once (`git log --walk-reflogs`: the
/// remote-tracking ref's reflog, and the pushed branch's, whose commits made
/// here show the fast-forward), never the network, and no configuration
/// when the environment names the instance.
#[test]
fn unmanaged_branches_cost_no_git_process_and_managed_ones_one() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.git(&["switch", "--quiet", "-c", "feature/unmanaged", "main"]);
    a.commit_file("x.rs", "x\n", "feat: x");
    let (out, trace) = traced_push(&a, &["--quiet", "origin", "feature/unmanaged"]);
    allowed(&out);
    assert_eq!(hook_commands(&trace), Vec::<String>::new(), "{trace}");
    a.git(&["switch", "--quiet", BRANCH]);
    a.commit_file("y.rs", "y\n", "feat: y");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    a.commit_file("z.rs", "z\n", "feat: z");
    let (out, trace) = traced_push(&a, &["--quiet", "origin", BRANCH]);
    allowed(&out);
    let commands = hook_commands(&trace);
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert!(
        commands[0].starts_with("log --walk-reflogs"),
        "{commands:?}"
    );
}

#[test]
fn a_repository_without_maverick_state_pushes_untouched() {
    let env = TestEnv::new();
    let b = env.clone("b");
    b.maverick(&["hook", "install"]).expect(0);
    b.git(&["switch", "--quiet", "-c", BRANCH]);
    b.commit_file("x.rs", "x\n", "feat: x");
    let (out, trace) = traced_push(&b, &["--quiet", "origin", BRANCH]);
    allowed(&out);
    assert!(!trace.contains("config"), "{trace}");
    assert!(!b.dir.join(".git/maverick").exists());
}

fn a_push_from_a_linked_worktree_is_checked(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.clone("a");
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    let wt_dir = env.path().join("a-linked");
    a.git(&[
        "worktree",
        "add",
        "--quiet",
        "-b",
        BRANCH,
        wt_dir.to_str().unwrap(),
    ]);
    let wt = a.at(&wt_dir);
    // Installed from the linked worktree, it lands where git looks for it.
    let run = wt.maverick(&["--json", "hook", "install"]);
    run.expect(0);
    insta::assert_snapshot!("install_json_from_a_linked_worktree", screen(&env, &run));
    assert_eq!(
        std::fs::canonicalize(run.json()["hook"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(a.dir.join(".git/hooks/pre-push")).unwrap()
    );
    wt.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&wt, &["--quiet", "-u", "origin", BRANCH]));
    let head = wt.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&wt, &["--quiet"]));
    assert_eq!(env.origin_head(BRANCH), Some(head.clone()));
    wt.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    wt.commit_file("two.rs", "other\n", "feat: two again");
    let out = push(&wt, &["--force"]);
    insta::assert_snapshot!("a_force_push", git_screen(&env, &out));
    assert_eq!(env.origin_head(BRANCH), Some(head));
}

#[test]
fn core_hooks_path_is_respected() {
    let env = TestEnv::new();
    let a = env.clone("a");
    a.git(&["config", "core.hooksPath", ".githooks"]);
    a.maverick(&["hook", "install"]).expect(0);
    assert!(a.dir.join(".githooks/pre-push").is_file());
    assert!(!a.dir.join(".git/hooks/pre-push").exists());
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    let head = a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    let out = push(&a, &["origin", "--delete", BRANCH]);
    insta::assert_snapshot!("a_push_deleting_the_branch", git_screen(&env, &out));
    assert_eq!(env.origin_head(BRANCH), Some(head));
}

const EXISTING_HOOK: &str = "#!/bin/sh\n# the team's own pre-push hook\nwhile read local_ref local_sha remote_ref remote_sha; do\n  echo \"$1 $remote_ref\" >> \"$(git rev-parse --git-dir)/existing-hook-saw\"\ndone\nexit 0\n";

fn make_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn an_existing_hook_still_runs_with_the_same_input() {
    let env = TestEnv::new();
    let a = env.clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    std::fs::write(&hook, EXISTING_HOOK).unwrap();
    make_executable(&hook);
    let run = a.maverick(&["--json", "hook", "install"]);
    assert_eq!(run.json()["change"], "added");
    insta::assert_snapshot!("install_json_beside_an_existing_hook", screen(&env, &run));
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    a.git(&["tag", "v1"]);
    allowed(&push(&a, &["--quiet", "origin", "v1"]));
    let saw = std::fs::read_to_string(a.dir.join(".git/existing-hook-saw")).unwrap();
    assert_eq!(
        saw,
        format!("origin refs/heads/{BRANCH}\norigin refs/tags/v1\n")
    );
    // Maverick still refuses what it must.
    let out = push(&a, &["origin", "--delete", BRANCH]);
    insta::assert_snapshot!("a_push_deleting_the_branch", git_screen(&env, &out));
}

#[test]
fn install_twice_changes_nothing_and_uninstall_restores_the_existing_hook() {
    let env = TestEnv::new();
    let a = env.clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    std::fs::write(&hook, EXISTING_HOOK).unwrap();
    make_executable(&hook);
    a.maverick(&["hook", "install"]).expect(0);
    let installed = std::fs::read_to_string(&hook).unwrap();
    let run = a.maverick(&["--json", "hook", "install"]);
    assert_eq!(run.json()["change"], "unchanged");
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), installed);

    let run = a.maverick(&["--json", "hook", "uninstall"]);
    assert_eq!(run.json()["change"], "removed");
    insta::assert_snapshot!(
        "uninstall_json_restores_the_existing_hook",
        screen(&env, &run)
    );
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), EXISTING_HOOK);
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&hook).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert_eq!(
        a.maverick(&["--json", "hook", "uninstall"]).json()["change"],
        "absent"
    );

    // A hook maverick created alone goes away entirely.
    std::fs::remove_file(&hook).unwrap();
    assert_eq!(
        a.maverick(&["--json", "hook", "install"]).json()["change"],
        "created"
    );
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), SCRIPT);
    assert_eq!(
        a.maverick(&["--json", "hook", "install"]).json()["change"],
        "unchanged"
    );
    assert_eq!(
        a.maverick(&["--json", "hook", "uninstall"]).json()["change"],
        "deleted"
    );
    assert!(!hook.exists());
}

/// The hook file `install` writes where it holds maverick's guard alone
/// (the repository's `hooks/pre-push`).
const SCRIPT: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/hooks/pre-push"));

/// The hook file earlier versions wrote: git-maverick as its interpreter.
fn native_hook_of_earlier_versions() -> String {
    "#!/usr/bin/env git-maverick\n# >>> git-maverick pre-push >>>\n# (earlier versions)\n# <<< git-maverick pre-push <<<\n".to_owned()
}

/// The shell hook of earlier versions, alone in its file.
const OLD_SHELL_HOOK: &str = "#!/bin/sh\n# >>> git-maverick pre-push >>>\nif command -v git-maverick >/dev/null 2>&1; then\n\tgit-maverick hook pre-push \"$@\" || exit $?\nfi\n# <<< git-maverick pre-push <<<\n";

/// A copy of git-maverick as earlier versions put one in `.git/hooks`: an
/// executable binary holding the mark every such build held.
fn write_legacy_copy(path: &std::path::Path) {
    let mut bytes = b"\x7fELF\x02\x01\x01\0".to_vec();
    bytes.extend_from_slice(&[0; 4096]);
    bytes
        .extend_from_slice(b"git-maverick: this file is a copy of git-maverick, the pre-push hook");
    bytes.extend_from_slice(&[0; 4096]);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
    make_executable(path);
}

/// The guard holds: a first plain push of the claimed branch goes
/// through, a force push over it is refused, and the remote keeps the
/// first (`envs` for git, such as a PATH of the test's making).
fn the_guard_holds(env: &TestEnv, a: &Repo, envs: &[(&str, &OsStr)]) {
    let head = a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&a.git_as_instance(&["push", "--quiet", "-u", "origin", BRANCH], envs));
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    a.commit_file("one.rs", "other\n", "feat: one again");
    let out = a.git_as_instance(&["push", "--force", "origin", BRANCH], envs);
    insta::assert_snapshot!("a_force_push", git_screen(env, &out));
    assert_eq!(env.origin_head(BRANCH), Some(head));
}

/// Issue 26, item 1: in `.git/hooks`, a hook that holds only maverick's
/// guard is a small script as git-lfs writes its own, and guards.
#[test]
fn a_new_hook_is_the_script_and_guards() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), SCRIPT);
    insta::assert_snapshot!("the_hook_script", SCRIPT);
    let run = a.maverick(&["hook", "status"]);
    insta::assert_snapshot!("hook_status_of_the_script", screen(&env, &run));
    the_guard_holds(&env, &a, &[]);
}

/// Without git-maverick on PATH the script fails the push with a clear
/// message (as git-lfs's does), and `status` says why the guard is off.
#[test]
fn the_script_fails_closed_without_git_maverick_on_path() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    let path = path_without_maverick(&env);
    let out = a.git_as_instance(&["push", "origin", BRANCH], &[("PATH", &path)]);
    insta::assert_snapshot!(
        "a_push_without_git_maverick_on_path",
        git_screen(&env, &out)
    );
    assert_eq!(env.origin_head(BRANCH), None);
    let status = a
        .maverick_command(&["hook", "status"])
        .env("PATH", &path)
        .output()
        .unwrap();
    insta::assert_snapshot!(
        "hook_status_without_git_maverick_on_path",
        git_screen(&env, &status)
    );
}

/// A PATH whose `git-maverick` is a wrapper script (as version managers
/// install) that notes each run in `wrapper.log` and starts the real one,
/// then the rest of the test PATH (whose directory of the built programs
/// holds `maverick-pre-push` too). With `beside`, the wrapper's
/// directory holds `maverick-pre-push` as well: an install of both.
fn path_with_a_wrapper(env: &TestEnv, beside: bool) -> std::ffi::OsString {
    let dir = env.path().join("wrapper-bin");
    std::fs::create_dir_all(&dir).unwrap();
    // Written beside, then copied in by `cp` (see `support::copy_program`).
    let script = env.path().join("wrapper.sh");
    let log = wrapper_log(env);
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$*\" >>'{}'\nexec '{BIN}' \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    make_executable(&script);
    crate::support::copy_program(&script, &dir.join("git-maverick"));
    if beside {
        std::os::unix::fs::symlink(PRE_PUSH_BIN, dir.join("maverick-pre-push")).unwrap();
    }
    std::env::join_paths(
        std::iter::once(dir).chain(std::env::split_paths(&crate::support::path_with_bin())),
    )
    .unwrap()
}

/// What the wrapper of [`path_with_a_wrapper`] was run for, a line a run.
fn wrapper_log(env: &TestEnv) -> std::path::PathBuf {
    env.path().join("wrapper.log")
}

fn wrapper_runs(env: &TestEnv) -> Vec<String> {
    std::fs::read_to_string(wrapper_log(env))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Whatever PATH's `git-maverick` is (a version manager's shim, a
/// wrapper), the script runs it at each push: nothing to reinstall.
///
/// `maverick-pre-push` further on PATH is another install's: the push
/// goes to the wrapper, which checks it (issue 42).
#[test]
fn a_wrapper_on_path_runs_as_the_guard() {
    let env = TestEnv::new();
    let a = env.clone("a");
    let path = path_with_a_wrapper(&env, false);
    let out = a
        .maverick_command(&["hook", "install"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let hook = a.dir.join(".git/hooks/pre-push");
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), SCRIPT);
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    the_guard_holds(&env, &a, &[("PATH", path.as_os_str())]);
    let pushes: Vec<String> = wrapper_runs(&env)
        .into_iter()
        .filter(|run| run.starts_with("hook pre-push origin "))
        .collect();
    assert_eq!(pushes.len(), 2, "{:?}", wrapper_runs(&env));
}

/// Issue 42: where `maverick-pre-push` was installed beside the
/// `git-maverick` PATH finds, the script runs it, git-maverick not at all,
/// and the guard holds as before.
#[test]
fn the_script_runs_the_guard_program_installed_beside_git_maverick() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let path = path_with_a_wrapper(&env, true);
    the_guard_holds(&env, &a, &[("PATH", path.as_os_str())]);
    assert_eq!(wrapper_runs(&env), Vec::<String>::new());
    // Other arguments than git's are git-maverick's to answer.
    let mut help = std::process::Command::new(PRE_PUSH_BIN);
    help.arg("--help").current_dir(&a.dir);
    env.apply_env(&mut help);
    let out = help.env("PATH", &path).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("pre-push"),
        "{out:?}"
    );
    assert_eq!(wrapper_runs(&env), ["hook pre-push --help"]);
}

/// Issue 42: `maverick-pre-push` says its build as git-maverick does; a
/// guard program of another build beside the `git-maverick` PATH finds
/// (one of the two copied over without the other) is named by `hook
/// status` and `hook install`, which say to install both again.
#[test]
fn a_guard_program_of_another_build_is_named() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let own = std::process::Command::new(PRE_PUSH_BIN)
        .arg("--version")
        .output()
        .unwrap();
    let maverick = a.maverick(&["--version"]);
    assert_eq!(
        String::from_utf8_lossy(&own.stdout).trim(),
        maverick
            .stdout
            .trim()
            .replacen("git-maverick ", "maverick-pre-push ", 1)
    );
    let dir = env.path().join("old-install");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(BIN, dir.join("git-maverick")).unwrap();
    let old = env.path().join("old-guard.sh");
    std::fs::write(
        &old,
        "#!/bin/sh\necho 'maverick-pre-push 0.0.1 (abcdef0 2026-01-01)'\n",
    )
    .unwrap();
    make_executable(&old);
    crate::support::copy_program(&old, &dir.join("maverick-pre-push"));
    let path = std::env::join_paths(
        std::iter::once(dir.clone()).chain(std::env::split_paths(&crate::support::path_with_bin())),
    )
    .unwrap();
    for command in ["status", "install"] {
        let out = a
            .maverick_command(&["hook", command])
            .env("PATH", &path)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "warning: the hook runs {} (maverick-pre-push 0.0.1 (abcdef0 2026-01-01)), not this git-maverick's build",
                dir.join("maverick-pre-push").display()
            )),
            "{command}: {stderr}"
        );
        assert!(stderr.contains("install both programs again"), "{stderr}");
    }
    let same = a.maverick_command(&["hook", "status"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&same.stderr).contains("warning"),
        "{same:?}"
    );
}

/// A person who signs commits and has git show signatures in logs
/// (`log.showSignature`) is not asked to check them at every push: the
/// guard's read of the reflogs runs no signing program. Real signatures,
/// made by ssh-keygen (git's `gpg.format = ssh`), through a wrapper that
/// notes each run.
#[test]
fn a_push_of_signed_commits_checks_no_signature() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let key = env.path().join("signing-key");
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "test", "-f"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let log = env.path().join("ssh-keygen.log");
    let program = env.path().join("ssh-keygen-wrapper");
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\necho \"$*\" >>'{}'\nexec ssh-keygen \"$@\"\n",
            log.display()
        ),
    )
    .unwrap();
    make_executable(&program);
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let allowed_signers = env.path().join("allowed-signers");
    std::fs::write(&allowed_signers, format!("test {public}")).unwrap();
    for (key_name, value) in [
        ("gpg.format", "ssh"),
        (
            "gpg.ssh.allowedSignersFile",
            allowed_signers.to_str().unwrap(),
        ),
        ("user.signingkey", key.to_str().unwrap()),
        ("gpg.ssh.program", program.to_str().unwrap()),
        ("commit.gpgsign", "true"),
        ("log.showSignature", "true"),
    ] {
        a.git(&["config", key_name, value]);
    }
    let checks = || -> Vec<String> {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .lines()
            .filter(|run| !run.starts_with("-Y sign"))
            .map(str::to_owned)
            .collect()
    };
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    let head = a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &["--quiet", "origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(head));
    assert_eq!(checks(), Vec::<String>::new());
    // The commits are signed, and git shows it where a person looks.
    let shown = a.git(&["log", "-1", "--format=%H"]);
    assert!(!shown.is_empty());
    assert!(!checks().is_empty(), "git log checked no signature");
}

/// `install` turns what earlier versions wrote, alone in the hook file (a
/// copy of git-maverick, a file whose interpreter is git-maverick, the old
/// shell hook), into the script; `status` does not call the file of
/// git-maverick's interpreter on (this git-maverick no longer runs it).
#[test]
fn install_turns_the_files_of_earlier_versions_into_the_script() {
    let env = TestEnv::new();
    let a = env.clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    write_legacy_copy(&hook);
    let run = a.maverick(&["--json", "hook", "install"]);
    assert_eq!(run.json()["change"], "updated");
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), SCRIPT);

    std::fs::write(&hook, native_hook_of_earlier_versions()).unwrap();
    let off = a.maverick(&["hook", "status"]);
    insta::assert_snapshot!(
        "hook_status_of_an_earlier_versions_file",
        screen(&env, &off)
    );
    let run = a.maverick(&["--json", "hook", "install"]);
    assert_eq!(run.json()["change"], "updated");
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), SCRIPT);

    std::fs::write(&hook, OLD_SHELL_HOOK).unwrap();
    let run = a.maverick(&["--json", "hook", "install"]);
    assert_eq!(run.json()["change"], "updated");
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), SCRIPT);
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    the_guard_holds(&env, &a, &[]);
}

/// Under a `core.hooksPath` (a directory a team may commit), the hook file
/// gets the shared block; a copy of git-maverick left in `.git/hooks`
/// becomes the script on `install`, and `uninstall` removes it there too.
#[test]
fn a_copy_left_in_git_hooks_under_another_hooks_path_is_converted_and_removed() {
    let env = TestEnv::new();
    let a = env.clone("a");
    let own = a.dir.join(".git/hooks/pre-push");
    write_legacy_copy(&own);
    a.git(&["config", "core.hooksPath", ".githooks"]);
    a.maverick(&["hook", "install"]).expect(0);
    let shared = std::fs::read_to_string(a.dir.join(".githooks/pre-push")).unwrap();
    insta::assert_snapshot!("the_shared_hook_after_install", env.normalise(&shared));
    assert_eq!(std::fs::read_to_string(&own).unwrap(), SCRIPT);
    a.maverick(&["hook", "status"]).expect(0);

    write_legacy_copy(&own);
    let run = a.maverick(&["--json", "hook", "uninstall"]);
    insta::assert_snapshot!(
        "uninstall_json_under_another_hooks_path",
        screen(&env, &run)
    );
    assert!(!own.exists(), "the copy in .git/hooks is still there");
    assert!(!a.dir.join(".githooks/pre-push").exists());
    assert_eq!(
        run.json()["changes"].as_array().unwrap().len(),
        2,
        "{}",
        run.stdout
    );
}

/// The script run by hand, without git's arguments, says what it needs.
#[test]
fn the_script_run_by_hand_says_what_it_needs() {
    let env = TestEnv::new();
    let a = env.clone("a");
    a.maverick(&["hook", "install"]).expect(0);
    let mut cmd = std::process::Command::new(a.dir.join(".git/hooks/pre-push"));
    cmd.current_dir(&a.dir);
    env.apply_env(&mut cmd);
    let out = cmd.output().unwrap();
    insta::assert_snapshot!("the_script_run_by_hand", git_screen(&env, &out));
}

/// Item 3: a record cut short at the end of the hook's log (a full disk,
/// a power cut) costs nothing: the next pushes are checked and recorded as
/// before.
#[test]
fn a_torn_last_line_of_the_push_log_poisons_nothing() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    let hex: String = BRANCH.bytes().map(|b| format!("{b:02x}")).collect();
    let log = a.dir.join(format!(".git/maverick/branches/{hex}.pushes"));
    let mut text = std::fs::read_to_string(&log).unwrap();
    text.push_str("{\"branch\":\"maverick/142-parser\",\"last_se");
    std::fs::write(&log, &text).unwrap();
    for n in 2..4 {
        let head = a.commit_file(&format!("f{n}.rs"), "x\n", &format!("feat: {n}"));
        allowed(&push(&a, &["--quiet", "origin", BRANCH]));
        assert_eq!(env.origin_head(BRANCH), Some(head));
    }
    // The guard still holds.
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    let out = push(&a, &["--force", "origin", BRANCH]);
    insta::assert_snapshot!("a_force_push", git_screen(&env, &out));
}

#[test]
fn a_hook_in_another_language_is_left_alone() {
    let env = TestEnv::new();
    let a = env.clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    let python = "#!/usr/bin/env python3\nprint('hi')\n";
    std::fs::write(&hook, python).unwrap();
    make_executable(&hook);
    let run = a.maverick(&["hook", "install"]);
    insta::assert_snapshot!("install_over_a_python_hook", screen(&env, &run));
    assert_eq!(std::fs::read_to_string(&hook).unwrap(), python);
}

#[test]
fn a_pusher_whose_claim_was_taken_over_is_refused() {
    let env = TestEnv::new();
    let a = env.claimed_clone_with_ttl("a", "60s");
    a.commit_file("one.rs", "1\n", "feat: one");

    let b = env.clone("b");
    b.maverick(&["coord", "read", "142"]).expect(4);
    env.advance_clock(61);
    b.maverick(&["coord", "read", "142"]).expect(5);
    b.maverick(&["coord", "claim", "142", "--takeover", "--branch", BRANCH])
        .expect(0);

    // a's heartbeat learns that the claim is gone; its push names why.
    a.maverick(&["coord", "heartbeat", "142"]).expect(7);
    let out = push(&a, &["-u", "origin", BRANCH]);
    insta::assert_snapshot!("a_push_after_a_takeover", git_screen(&env, &out));
    assert_eq!(env.origin_head(BRANCH), None);
}

#[test]
fn a_stale_lease_is_a_warning_and_the_generation_the_fence() {
    let env = TestEnv::new();
    let a = env.claimed_clone_with_ttl("a", "60s");
    a.commit_file("one.rs", "1\n", "feat: one");
    env.advance_clock(61);
    env.clone("watch")
        .maverick(&["coord", "read", "142"])
        .expect(5);
    // Nobody took it over: still a's claim (no network call tells the hook
    // otherwise), so the push goes through with a warning.
    let out = push(&a, &["--quiet", "-u", "origin", BRANCH]);
    allowed(&out);
    insta::assert_snapshot!("a_push_on_a_stale_lease", git_screen(&env, &out));
    // Another instance of the same clone takes over: its higher generation
    // in this clone's records fences a without any heartbeat.
    a.maverick_as(
        "c",
        &["coord", "claim", "142", "--takeover", "--branch", BRANCH],
    )
    .expect(0);
    a.commit_file("two.rs", "2\n", "feat: two");
    let out = push(&a, &["origin", BRANCH]);
    insta::assert_snapshot!(
        "a_push_fenced_by_a_higher_generation",
        git_screen(&env, &out)
    );
}

/// The hook's own exit codes, called as hook managers call it.
#[test]
fn the_hook_command_exits_7_and_8() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let first = a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    let second = a.commit_file("two.rs", "2\n", "feat: two");
    let url = env.origin.to_str().unwrap();
    let zero = "0".repeat(40);
    let run_hook = |instance: &str, line: String| {
        let mut cmd = a.maverick_command(&["hook", "pre-push", "origin", url]);
        cmd.env("MAVERICK_INSTANCE", instance).stdin(Stdio::piped());
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let line = |local: &str, remote: &str| {
        format!("refs/heads/{BRANCH} {local} refs/heads/{BRANCH} {remote}\n")
    };
    assert_eq!(run_hook("a", line(&second, &first)).status.code(), Some(0));
    let garbage = run_hook("a", "not what git writes\n".to_owned());
    assert_eq!(
        garbage.status.code(),
        Some(1),
        "a line it cannot read fails closed"
    );
    assert_eq!(run_hook("a", line(&zero, &first)).status.code(), Some(8));
    assert_eq!(
        run_hook("a", line(&second, &"e".repeat(40))).status.code(),
        Some(8)
    );
    assert_eq!(
        run_hook("intruder", line(&second, &first)).status.code(),
        Some(7)
    );
    let tag = format!("refs/tags/v1 {second} refs/tags/v1 {zero}\n");
    assert_eq!(run_hook("intruder", tag).status.code(), Some(0));
}

#[test]
fn pushes_to_another_remote_are_not_maverick_s_business() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    let mirror = env.bare_repo("mirror.git");
    a.git(&["remote", "add", "mirror", mirror.to_str().unwrap()]);
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    allowed(&push(&a, &["--quiet", "--force", "mirror", BRANCH]));
}

/// A person's clone names no instance in its environment: the hook finds it
/// as every command does (one `git config`), from `maverick.instance` when
/// set, else the id kept in the clone.
#[test]
fn without_an_instance_in_the_environment_the_hook_pushes_as_the_clone() {
    let env = TestEnv::new();
    // The kept id: claimed and pushed with no MAVERICK_INSTANCE anywhere.
    let kept = env.clone("kept");
    let as_person = |repo: &Repo, args: &[&str]| {
        let out = repo.maverick_command(args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    as_person(&kept, &["hook", "install"]);
    as_person(&kept, &["coord", "claim", "142", "--branch", BRANCH]);
    kept.git(&["switch", "--quiet", "-c", BRANCH]);
    kept.commit_file("one.rs", "1\n", "feat: one");
    allowed(&kept.git_output(&["push", "--quiet", "origin", BRANCH]));

    // Another clone whose repository config names it `desk`: its claim is
    // desk's, and a push from a clone configured as someone else is refused.
    let desk = env.clone("desk");
    desk.git(&["config", "maverick.instance", "desk"]);
    as_person(&desk, &["hook", "install"]);
    as_person(
        &desk,
        &["coord", "claim", "143", "--branch", "maverick/143-desk"],
    );
    desk.git(&["switch", "--quiet", "-c", "maverick/143-desk"]);
    desk.commit_file("two.rs", "2\n", "feat: two");
    allowed(&desk.git_output(&["push", "--quiet", "origin", "maverick/143-desk"]));
    desk.git(&["config", "maverick.instance", "someone-else"]);
    desk.commit_file("three.rs", "3\n", "feat: three");
    let out = desk.git_output(&["push", "--quiet", "origin", "maverick/143-desk"]);
    refused_as_collision(&out);
    insta::assert_snapshot!(
        "a_push_by_the_clone_configured_as_someone_else",
        git_screen(&env, &out)
    );
}

/// Runs `git maverick ARGS` in `repo` as a person does: no instance in the
/// environment.
fn as_person(repo: &Repo, args: &[&str]) {
    let out = repo.maverick_command(args).output().unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Sets the modification time of `files` (those that exist) an hour back:
/// configuration a person wrote a while ago, not a moment before maverick
/// stamped what it resolved from it.
fn left_alone(files: &[std::path::PathBuf]) {
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for file in files.iter().filter(|f| f.exists()) {
        std::fs::File::options()
            .write(true)
            .open(file)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
    }
}

/// Issue 42: a person's push (no MAVERICK_INSTANCE) costs what an agent's
/// does. The claim stamps the instance it resolved, and the hook trusts the
/// stamp (no `git config`) only while what it came from is unchanged: a new
/// `maverick.instance`, in a file or from `git -c`, is never missed.
#[test]
fn a_person_s_push_asks_no_config_and_sees_a_changed_instance() {
    let env = TestEnv::new();
    let a = env.clone("a");
    a.git(&["config", "maverick.instance", "desk"]);
    left_alone(&[a.dir.join(".git/config"), env.home().join(".gitconfig")]);
    as_person(&a, &["hook", "install"]);
    as_person(&a, &["coord", "claim", "142", "--branch", BRANCH]);
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    a.commit_file("one.rs", "1\n", "feat: one");
    let log = env.path().join("person.trace");
    let out = a
        .env
        .git_output_in(&a.dir, &["push", "--quiet", "origin", BRANCH]);
    allowed(&out);
    a.commit_file("two.rs", "2\n", "feat: two");
    let mut cmd = crate::support::git_command();
    cmd.args(["push", "--quiet", "origin", BRANCH])
        .current_dir(&a.dir);
    env.apply_env(&mut cmd);
    let out = cmd.env("GIT_TRACE", &log).output().unwrap();
    allowed(&out);
    let trace = std::fs::read_to_string(&log).unwrap();
    let commands = hook_commands(&trace);
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert!(
        commands[0].starts_with("log --walk-reflogs"),
        "{commands:?}"
    );

    // `git config maverick.instance` changed: the next push judges as the new id.
    a.git(&["config", "maverick.instance", "someone-else"]);
    a.commit_file("three.rs", "3\n", "feat: three");
    let out = a.git_output(&["push", "--quiet", "origin", BRANCH]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.lines().any(|l| l.ends_with("not by someone-else")),
        "{stderr}"
    );
    // Back to desk, left alone again: allowed; then desk's id overridden for one push.
    a.git(&["config", "maverick.instance", "desk"]);
    left_alone(&[a.dir.join(".git/config")]);
    allowed(&a.git_output(&["push", "--quiet", "origin", BRANCH]));
    a.commit_file("four.rs", "4\n", "feat: four");
    let out = a.git_output(&[
        "-c",
        "maverick.instance=visitor",
        "push",
        "--quiet",
        "origin",
        BRANCH,
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().any(|l| l.ends_with("not by visitor")),
        "{stderr}"
    );
    allowed(&a.git_output(&["push", "--quiet", "origin", BRANCH]));
}

/// strace, which counts what a push reads.
fn strace() -> std::path::PathBuf {
    crate::support::on_path("strace").expect(
        "strace is not installed (Debian's `strace`; .ci/run installs it): this test counts \
         with it how the shared hook block reads the pushed refs",
    )
}

/// Issue 38, item 3: the shared block (inside a hook that runs more than
/// maverick) passes thousands of pushed refs through in linear time. A
/// shell loop reads its stdin a byte a time (one `read` per byte) and
/// builds its copy in quadratic time; the block reads it whole. Counted in
/// `read` calls on the hook's stdin across every process of the push.
#[test]
fn the_shared_block_passes_thousands_of_tags_through_in_linear_time() {
    const TAGS: usize = 3000;
    let env = TestEnv::new();
    let a = env.clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    std::fs::write(
        &hook,
        "#!/bin/sh\nwc -l >\"$(git rev-parse --git-dir)/lines-seen\"\n",
    )
    .unwrap();
    make_executable(&hook);
    a.maverick(&["hook", "install"]).expect(0);
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    let head = a.git(&["rev-parse", "HEAD"]);
    let creates: String = (0..TAGS)
        .map(|n| format!("create refs/tags/v0.{n} {head}\n"))
        .collect();
    let mut update = crate::support::git_command();
    update
        .args(["update-ref", "--stdin"])
        .current_dir(&a.dir)
        .stdin(Stdio::piped());
    env.apply_env(&mut update);
    let mut child = update.stdin(Stdio::piped()).spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(creates.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());

    let log = env.path().join("reads.strace");
    let mut cmd = std::process::Command::new(strace());
    cmd.args(["-f", "--seccomp-bpf", "-e", "trace=read,execve", "-o"])
        .arg(&log)
        .arg(crate::support::real_git())
        .args(["push", "--quiet", "--tags", "origin"])
        .current_dir(&a.dir);
    env.apply_env(&mut cmd);
    let out = cmd.env("MAVERICK_INSTANCE", "a").output().unwrap();
    allowed(&out);
    let tags = env.git_in(
        &env.origin,
        &["for-each-ref", "--count=100000", "refs/tags"],
    );
    assert_eq!(tags.lines().count(), TAGS);
    // The rest of the hook read every line.
    let seen = std::fs::read_to_string(a.dir.join(".git/lines-seen")).unwrap();
    assert_eq!(seen.trim(), TAGS.to_string());
    // Over a hundred bytes of stdin a line: a shell loop's read(0, .., 1)
    // calls number in the hundreds of thousands; read whole, a few dozen.
    // Counted in the hook's processes (git's own read their pipes too).
    let trace = std::fs::read_to_string(&log).unwrap();
    let mut program: std::collections::HashMap<&str, &str> = Default::default();
    let mut stdin_reads = 0;
    for line in trace.lines() {
        let Some((pid, call)) = line.split_once(' ') else {
            continue;
        };
        let call = call.trim_start();
        if let Some(path) = call.strip_prefix("execve(\"") {
            let path = path.split('"').next().unwrap_or_default();
            program.insert(pid, path.rsplit('/').next().unwrap_or_default());
        } else if call.starts_with("read(0,")
            && matches!(
                program.get(pid),
                Some(&("pre-push" | "cat" | "git-maverick" | "wc"))
            )
        {
            stdin_reads += 1;
        }
    }
    assert!(program.values().any(|p| *p == "pre-push"), "{program:?}");
    assert!(stdin_reads < 500, "{stdin_reads} reads of the hook's stdin");
}

/// The name of a branch that is not UTF-8 (git allows any bytes but a few).
const ODD_BRANCH: &[u8] = b"odd-\xff-name";

/// `git ARGS` in `repo`, as its instance, with arguments that need not be UTF-8.
fn git_bytes(repo: &Repo, args: &[&[u8]]) -> Output {
    use std::os::unix::ffi::OsStrExt as _;
    let mut cmd = crate::support::git_command();
    cmd.args(args.iter().map(|a| OsStr::from_bytes(a)))
        .current_dir(&repo.dir);
    repo.env.apply_env(&mut cmd);
    cmd.env("MAVERICK_INSTANCE", &repo.instance)
        .output()
        .unwrap()
}

/// Issue 39, item 5: a branch whose name is not UTF-8 is no branch maverick
/// manages; pushed along with a managed one, neither fails for it, and the
/// managed one is still judged.
#[test]
fn a_branch_name_that_is_not_utf8_fails_no_push() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&git_bytes(&a, &[b"branch", ODD_BRANCH]));
    let both = [b"refs/heads/".as_slice(), ODD_BRANCH].concat();
    let branch = format!("refs/heads/{BRANCH}");
    allowed(&git_bytes(
        &a,
        &[b"push", b"--quiet", b"origin", branch.as_bytes(), &both],
    ));
    assert_eq!(env.origin_head(BRANCH), Some(a.git(&["rev-parse", "HEAD"])));
    let on_origin = env.git_output_in(&env.origin, &["for-each-ref", "refs/heads/odd-*"]);
    assert_eq!(
        on_origin.stdout.split(|b| *b == b'\n').count(),
        2,
        "{on_origin:?}"
    );
    // Deleting the managed branch in the same push as the odd one: refused.
    let deletion = format!(":refs/heads/{BRANCH}");
    let out = git_bytes(&a, &[b"push", b"origin", deletion.as_bytes(), &both]);
    refused_as_collision(&out);
    assert!(env.origin_head(BRANCH).is_some());
}

/// Adds `n` entries to `refname`'s reflog, as a long life of fetches (or
/// commits) leaves it: the ref goes back and forth between the commit
/// before its head and its head, and ends where it was. Each entry a
/// second apart, the day before the test's clock (entries alike in commit,
/// time and message cannot be told apart: the hook reads those whole).
fn lengthen_reflog(repo: &Repo, refname: &str, n: usize, message: &str) {
    let head = repo.git(&["rev-parse", refname]);
    let before = repo.git(&["rev-parse", &format!("{refname}~1")]);
    for i in 0..n {
        let to = if i % 2 == n % 2 { &before } else { &head };
        let at = format!(
            "2026-11-29T{:02}:{:02}:{:02}Z",
            i / 3600,
            (i / 60) % 60,
            i % 60
        );
        let out = repo.git_as_instance(
            &["update-ref", "--create-reflog", "-m", message, refname, to],
            &[("GIT_COMMITTER_DATE", std::ffi::OsStr::new(&at))],
        );
        assert!(out.status.success(), "{out:?}");
    }
    assert_eq!(repo.git(&["rev-parse", refname]), head);
}

/// A push, and how many times its hook read reflogs (`git log
/// --walk-reflogs`): once when the newest entries held what the record
/// remembers, twice when it read them whole after.
fn push_counting_reflog_reads(repo: &Repo, args: &[&str], tag: &str) -> (Output, usize) {
    let (out, reads) = push_reading_reflogs(repo, args, tag);
    (out, reads.len())
}

/// A push, and the reflog reads (`git log --walk-reflogs …`) its hook ran.
fn push_reading_reflogs(repo: &Repo, args: &[&str], tag: &str) -> (Output, Vec<String>) {
    let log = repo.env.path().join(format!("trace-{tag}.log"));
    let mut full = vec!["push"];
    full.extend_from_slice(args);
    let out = repo.git_as_instance(&full, &[("GIT_TRACE", log.as_os_str())]);
    let trace = std::fs::read_to_string(&log).unwrap_or_default();
    let reads = hook_commands(&trace)
        .into_iter()
        .filter(|c| c.starts_with("log --walk-reflogs"))
        .collect();
    (out, reads)
}

/// A claimed clone that pushed `one.rs` (creating the branch, its commit
/// returned) and then `two.rs`, with the hook.
fn pushed_twice(env: &TestEnv) -> (Repo<'_>, String) {
    let a = env.claimed_clone("a");
    let one = a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &["--quiet", "origin", BRANCH]));
    (a, one)
}

/// Issue 42: hundreds of reflog entries since the record (a fallback to
/// the whole reflogs), then a landed push seen among the newest entries
/// only (one read), then a fetch that moved the remote-tracking ref over
/// someone else's push: the verdicts of short reflogs.
fn long_reflogs_give_the_same_verdicts(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let (a, _) = pushed_twice(&env);
    let tracking = format!("refs/remotes/origin/{BRANCH}");
    lengthen_reflog(&a, &tracking, 200, "fetch: fast-forward");
    lengthen_reflog(&a, &format!("refs/heads/{BRANCH}"), 200, "commit: filler");
    // What the record remembers is 200 entries down: read whole.
    a.commit_file("three.rs", "3\n", "feat: three");
    let (out, reads) = push_counting_reflog_reads(&a, &["--quiet", "origin", BRANCH], "three");
    allowed(&out);
    assert_eq!(reads, 2, "a window, then the whole reflogs");
    // The push of three landed: found among the newest entries.
    let four = a.commit_file("four.rs", "4\n", "feat: four");
    let (out, reads) = push_counting_reflog_reads(&a, &["--quiet", "origin", BRANCH], "four");
    allowed(&out);
    assert_eq!(reads, 1, "the newest entries hold the record's mark");
    // A push without the hook landed too: still this writer's own.
    let five = a.commit_file("five.rs", "5\n", "feat: five");
    allowed(&push(&a, &["--quiet", "--no-verify", "origin", BRANCH]));
    let six = a.commit_file("six.rs", "6\n", "feat: six");
    let (out, reads) = push_counting_reflog_reads(&a, &["--quiet", "origin", BRANCH], "six");
    allowed(&out);
    assert_eq!(reads, 1);
    assert_eq!(env.origin_head(BRANCH), Some(six.clone()));
    assert_ne!(four, five);

    // Someone else pushes; the holder fetches it (the remote-tracking ref
    // moves), rebases and pushes: a moved head, as with short reflogs.
    let b = env.clone("b");
    b.git(&["switch", "--quiet", BRANCH]);
    let intruder = b.commit_file("other.rs", "x\n", "feat: someone else");
    b.git(&["push", "--quiet", "--no-verify", "origin", BRANCH]);
    a.commit_file("seven.rs", "7\n", "feat: seven");
    a.git(&["fetch", "--quiet", "origin"]);
    a.git(&["rebase", "--quiet", &format!("origin/{BRANCH}")]);
    refused_as_collision(&push(&a, &["--quiet", "origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(intruder));
}

/// Issue 42: a rewind behind the holder's back, its reflogs long, is a
/// moved head; and with the remote-tracking ref's reflog gone (the ref
/// deleted), a push that lands where the record expects is allowed.
fn a_rewind_behind_long_reflogs_is_a_moved_head(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let (a, l0) = pushed_twice(&env);
    lengthen_reflog(&a, &format!("refs/heads/{BRANCH}"), 200, "commit: filler");
    // No reflog of origin's ref: nothing landed that the record misses.
    a.git(&["update-ref", "-d", &format!("refs/remotes/origin/{BRANCH}")]);
    let three = a.commit_file("three.rs", "3\n", "feat: three");
    allowed(&push(&a, &["--quiet", "origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(three));
    // Someone else puts the branch back where it was.
    let rewind = format!("{l0}:refs/heads/{BRANCH}");
    env.clone("b").git(&["push", "-q", "-f", "origin", &rewind]);
    a.commit_file("four.rs", "4\n", "feat: four");
    refused_as_collision(&push(&a, &["--quiet", "origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(l0));
}

/// [`pushed_twice`], then `three.rs` pushed without the hook: a landed
/// push only the remote-tracking reflog tells.
fn pushed_thrice_the_last_without_the_hook(env: &TestEnv) -> Repo<'_> {
    let (a, _) = pushed_twice(env);
    a.commit_file("three.rs", "3\n", "feat: three");
    allowed(&push(&a, &["--quiet", "--no-verify", "origin", BRANCH]));
    a
}

/// The branch's own reflog lengthened past the newest entries read first,
/// then a push of `four.rs` that reads the reflogs whole (two reads), allowed.
fn a_push_reading_the_reflogs_whole(a: &Repo) {
    lengthen_reflog(a, &format!("refs/heads/{BRANCH}"), 40, "commit: filler");
    let four = a.commit_file("four.rs", "4\n", "feat: four");
    let (out, reads) = push_reading_reflogs(a, &["--quiet", "origin", BRANCH], "four");
    allowed(&out);
    assert_eq!(reads.len(), 2, "the mark is not among the newest entries");
    // Read whole: the remote-tracking ref's reflog, not the branch's own,
    // whose newest entries the first read holds (commits made here).
    assert!(
        reads[1].contains(&format!("refs/remotes/origin/{BRANCH}"))
            && !reads[1].contains(&format!("refs/heads/{BRANCH}")),
        "{reads:?}"
    );
    assert_eq!(a.env.origin_head(BRANCH), Some(four));
}

/// Issue 42: the entry the record remembers was dropped from the reflog
/// (`git reflog delete`, as `git reflog expire` drops entries): the hook
/// reads the reflogs whole and counts, as before, so a push of this
/// writer's made without the hook is still its own.
fn a_remembered_entry_dropped_from_the_reflog_reads_it_whole(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    // The hook of the push of two remembers origin's newest entry: the push of one.
    let a = pushed_thrice_the_last_without_the_hook(&env);
    let tracking = format!("refs/remotes/origin/{BRANCH}");
    // Newest first: three, two, one. One goes.
    a.git(&["reflog", "delete", &format!("{tracking}@{{2}}")]);
    let log = a.git(&["reflog", "show", "--format=%gs", &tracking]);
    assert_eq!(log.lines().count(), 2, "{log}");
    a_push_reading_the_reflogs_whole(&a);
}

/// Issue 42: a branch record of an earlier version marks the reflogs by
/// their counts only. The next push reads them whole and judges by the
/// count (a push made without the hook is still this writer's own); its
/// record then remembers the newest entries, and the push after reads only
/// those.
fn a_record_of_an_earlier_version_is_read_by_count_and_upgraded(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = pushed_thrice_the_last_without_the_hook(&env);
    let records = a.dir.join(".git/maverick/branches");
    let mut downgraded = 0;
    for file in std::fs::read_dir(&records).unwrap() {
        let path = file.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let mut lines = Vec::new();
        // The record file is one JSON document; the hook's log one a line.
        let documents: Vec<&str> = if path.extension() == Some(OsStr::new("json")) {
            vec![text.as_str()]
        } else {
            text.lines().collect()
        };
        for document in documents {
            let mut record: serde_json::Value = serde_json::from_str(document).unwrap();
            let fields = record.as_object_mut().unwrap();
            assert!(fields.contains_key("reflog_entries"), "{document}");
            downgraded += usize::from(fields.remove("reflog_newest").is_some());
            lines.push(serde_json::to_string(&record).unwrap());
        }
        std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    }
    assert!(downgraded > 0, "no record remembered an entry");
    // Counts only: the reflogs read whole.
    a_push_reading_the_reflogs_whole(&a);
    let five = a.commit_file("five.rs", "5\n", "feat: five");
    let (out, reads) = push_counting_reflog_reads(&a, &["--quiet", "origin", BRANCH], "five");
    allowed(&out);
    assert_eq!(
        reads, 1,
        "the upgraded record's entries are among the newest"
    );
    assert_eq!(env.origin_head(BRANCH), Some(five));
}
