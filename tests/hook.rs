//! The pre-push hook against real pushes: the real binary on PATH, a real
//! bare origin, real `git push` (SPEC 8).

use std::ffi::OsStr;
use std::io::Write as _;
use std::process::{Output, Stdio};

use crate::support::{allowed, push, refused_as_collision, Repo, TestEnv, BIN};

use crate::support::STORY_BRANCH as BRANCH;

/// The push failed; returns what git and the hook printed.
#[track_caller]
fn refused(out: &Output) -> String {
    let stderr = refused_as_collision(out);
    assert!(
        stderr.contains(&format!("branch:          {BRANCH}")),
        "{stderr}"
    );
    stderr
}

#[test]
fn first_push_of_a_new_claimed_branch() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let head = a.commit_file("parser.rs", "fn parse() {}\n", "feat: parser");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(head));
}

#[test]
fn fast_forward_push() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.commit_file("parser.rs", "fn parse() {}\n", "feat: parser");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    let head = a.commit_file("parser.rs", "fn parse() -> u8 { 2 }\n", "feat: parse more");
    allowed(&push(&a, &["--quiet", "origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(head));
}

#[test]
fn two_plain_pushes_in_a_row_raise_no_false_alarm() {
    let env = TestEnv::new();
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

#[test]
fn a_push_the_remote_rejected_raises_no_false_alarm() {
    let env = TestEnv::new();
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
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not today"));
    a.commit_file("three.rs", "3\n", "feat: three");
    allowed(&push(&a, &["--quiet"]));
    a.commit_file("four.rs", "4\n", "feat: four");
    allowed(&push(&a, &["--quiet"]));
    assert_eq!(env.origin_head(BRANCH), Some(a.git(&["rev-parse", "HEAD"])));
}

#[test]
fn the_pusher_s_instance_can_come_from_git_config() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    // `git_output` runs git without MAVERICK_INSTANCE: the hook asks config.
    a.git(&["config", "maverick.instance", "a"]);
    let out = a.git_output(&["push", "--quiet", "-u", "origin", BRANCH]);
    allowed(&out);
    a.commit_file("two.rs", "2\n", "feat: two");
    a.git(&["config", "maverick.instance", "somebody-else"]);
    let out = a.git_output(&["push", "origin", BRANCH]);
    let stderr = refused(&out);
    assert!(
        stderr.contains("claimed by a (#142, generation 1), not by somebody-else"),
        "{stderr}"
    );
    // Pushed by URL instead of by name: still maverick's remote.
    a.git(&["config", "maverick.instance", "a"]);
    let url = env.origin.to_str().unwrap();
    allowed(&a.git_output(&["push", "--quiet", url, BRANCH]));
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    refused(&a.git_output(&["push", "--force", url, BRANCH]));
}

#[test]
fn a_second_clone_pushes_then_the_holders_push_is_refused_as_a_moved_head() {
    let env = TestEnv::new();
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
    let stderr = refused(&push(&a, &["origin", BRANCH]));
    assert!(stderr.contains("moved on the remote"), "{stderr}");
    assert!(
        stderr.contains(&format!("remote head:     {intruder}")),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("last seen here:  {last_seen}")),
        "{stderr}"
    );
    assert_eq!(env.origin_head(BRANCH), Some(intruder));
}

#[test]
fn force_pushes_are_refused() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    let pushed = a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    a.commit_file("two.rs", "rewritten\n", "feat: two, rewritten");

    let stderr = refused(&push(&a, &["--force", "origin", BRANCH]));
    assert!(stderr.contains("not a fast-forward"), "{stderr}");
    let stderr = refused(&push(&a, &["origin", &format!("+{BRANCH}")]));
    assert!(stderr.contains("not a fast-forward"), "{stderr}");
    let stderr = refused(&push(&a, &["--force-with-lease", "origin", BRANCH]));
    assert!(stderr.contains("not a fast-forward"), "{stderr}");
    assert_eq!(env.origin_head(BRANCH), Some(pushed));
}

#[test]
fn deleting_the_branch_is_refused() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let head = a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    let stderr = refused(&push(&a, &["origin", "--delete", BRANCH]));
    assert!(stderr.contains("not deleted by a push"), "{stderr}");
    assert!(
        stderr.contains("git maverick coord release 142"),
        "{stderr}"
    );
    refused(&push(&a, &["origin", &format!(":{BRANCH}")]));
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

#[test]
fn unmanaged_branches_cost_no_git_process_and_no_network() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.git(&["switch", "--quiet", "-c", "feature/unmanaged", "main"]);
    a.commit_file("x.rs", "x\n", "feat: x");
    let (out, trace) = traced_push(&a, &["--quiet", "origin", "feature/unmanaged"]);
    allowed(&out);
    assert!(trace.contains("pre-push"), "the hook ran:\n{trace}");
    for command in ["ls-remote", "fetch", "config", "rev-parse", "merge-base"] {
        assert!(!trace.contains(command), "{command} ran:\n{trace}");
    }
    // A managed branch: the hook reads the graph (is it a fast-forward?)
    // from the commits just made, and with the instance named by the
    // environment, no configuration: no git process at all, offline.
    a.git(&["switch", "--quiet", BRANCH]);
    a.commit_file("y.rs", "y\n", "feat: y");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    a.commit_file("z.rs", "z\n", "feat: z");
    let (out, trace) = traced_push(&a, &["--quiet", "origin", BRANCH]);
    allowed(&out);
    assert!(trace.contains("pre-push"), "the hook ran:\n{trace}");
    for command in ["ls-remote", "fetch", "config", "rev-parse", "merge-base"] {
        assert!(!trace.contains(command), "{command} ran:\n{trace}");
    }
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

#[test]
fn a_push_from_a_linked_worktree_is_checked() {
    let env = TestEnv::new();
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
    refused(&push(&wt, &["--force"]));
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
    refused(&push(&a, &["origin", "--delete", BRANCH]));
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
    run.expect(0);
    assert_eq!(run.json()["change"], "added");
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
    refused(&push(&a, &["origin", "--delete", BRANCH]));
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
    run.expect(0);
    assert_eq!(run.json()["change"], "removed");
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
    assert_copy_of_git_maverick(&hook);
    assert_eq!(
        a.maverick(&["--json", "hook", "install"]).json()["change"],
        "unchanged"
    );
    assert_eq!(
        a.maverick(&["--json", "hook", "uninstall"]).json()["change"],
        "deleted"
    );
    assert!(!hook.exists());
    // The git-maverick it was copied from still runs.
    let version = std::process::Command::new(BIN)
        .arg("--version")
        .output()
        .unwrap();
    assert!(version.status.success());
}

/// `path` is git-maverick as built: the same bytes, runnable.
fn assert_copy_of_git_maverick(path: &std::path::Path) {
    let (copy, built) = (std::fs::read(path).unwrap(), std::fs::read(BIN).unwrap());
    assert!(
        copy == built,
        "{} is not a copy of {BIN} ({} bytes against {})",
        path.display(),
        copy.len(),
        built.len()
    );
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(path).unwrap().permissions().mode();
    assert!(mode & 0o111 != 0, "{} is not executable", path.display());
}

/// The first line of a hook file whose interpreter is git-maverick.
const NATIVE_LINE: &str = "#!/usr/bin/env git-maverick";

const SHIM: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/hooks/pre-push"));

/// A PATH with git and nothing of maverick's.
fn path_without_maverick(env: &TestEnv) -> std::path::PathBuf {
    let bin = env.path().join("bin-without-maverick");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(crate::support::real_git(), bin.join("git")).unwrap();
    assert!(!bin.join("git-maverick").exists() && std::path::Path::new(BIN).exists());
    bin
}

/// Gives the file at `path` the modification time `time`, as a copy or an
/// install keeps it. Opened for reading only: a file this process holds
/// open for writing may not be run (see `support::copy_program`).
fn set_modified(path: &std::path::Path, time: std::time::SystemTime) {
    std::fs::File::open(path)
        .unwrap()
        .set_modified(time)
        .unwrap();
}

/// The guard holds: a first plain push of the claimed branch goes
/// through, a force push over it is refused, and the remote keeps the
/// first (`envs` for git, such as a PATH of the test's making).
fn the_guard_holds(env: &TestEnv, a: &Repo, envs: &[(&str, &OsStr)]) {
    let head = a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&a.git_as_instance(&["push", "--quiet", "-u", "origin", BRANCH], envs));
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    a.commit_file("one.rs", "other\n", "feat: one again");
    refused(&a.git_as_instance(&["push", "--force", "origin", BRANCH], envs));
    assert_eq!(env.origin_head(BRANCH), Some(head));
}

/// Issue 11, item 9: in `.git/hooks`, a hook that holds only maverick's
/// guard is a copy of git-maverick (git starts one process, no shell or
/// env before maverick), and guards as the shell block does.
#[test]
fn a_new_hook_is_a_copy_of_git_maverick_and_guards() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    assert_copy_of_git_maverick(&hook);
    let run = a.maverick(&["hook", "status"]);
    run.expect(0);
    assert!(run.stdout.contains(".git/hooks/pre-push"), "{}", run.stdout);
    the_guard_holds(&env, &a, &[]);
}

/// The copy needs no git-maverick on PATH: with it gone (uninstalled, or
/// a PATH of a tool's own making), pushes are still checked, and `status`
/// says the guard is on.
#[test]
fn the_copied_hook_guards_without_git_maverick_on_path() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let bin = path_without_maverick(&env);
    the_guard_holds(&env, &a, &[("PATH", OsStr::new(bin.to_str().unwrap()))]);
    let status = a
        .maverick_command(&["hook", "status"])
        .env("PATH", &bin)
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(0), "{status:?}");
}

/// After an upgrade replaced the git-maverick on PATH, the next push runs
/// the new build (the copy hands the push over) and the hook file becomes
/// a copy of it; the push is checked all the same.
#[test]
fn an_upgraded_git_maverick_takes_the_copied_hook_over() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    let head = a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["--quiet", "-u", "origin", BRANCH]));
    // The upgrade: another git-maverick first on PATH (this build, written
    // at another time, as an install writes a new file).
    let upgraded = env.path().join("upgraded-bin");
    std::fs::create_dir_all(&upgraded).unwrap();
    let new_build = upgraded.join("git-maverick");
    crate::support::copy_program(std::path::Path::new(BIN), &new_build);
    let then = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000);
    set_modified(&new_build, then);
    let path = std::env::join_paths(
        std::iter::once(upgraded.clone())
            .chain(std::env::split_paths(&crate::support::path_with_bin())),
    )
    .unwrap();
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    a.commit_file("one.rs", "other\n", "feat: one again");
    refused(&a.git_as_instance(
        &["push", "--force", "origin", BRANCH],
        &[("PATH", path.as_os_str())],
    ));
    assert_eq!(env.origin_head(BRANCH), Some(head));
    assert_eq!(
        std::fs::metadata(&hook).unwrap().modified().unwrap(),
        then,
        "the hook file was not replaced by the upgraded build"
    );
    assert_copy_of_git_maverick(&hook);
}

/// A PATH whose `git-maverick` is a wrapper script (as version managers
/// install) that starts the real one, then the rest of the test PATH.
fn path_with_a_wrapper(env: &TestEnv) -> std::ffi::OsString {
    let dir = env.path().join("wrapper-bin");
    std::fs::create_dir_all(&dir).unwrap();
    // Written beside, then copied in by `cp` (see `support::copy_program`).
    let script = env.path().join("wrapper.sh");
    std::fs::write(&script, format!("#!/bin/sh\nexec '{BIN}' \"$@\"\n")).unwrap();
    make_executable(&script);
    crate::support::copy_program(&script, &dir.join("git-maverick"));
    std::env::join_paths(
        std::iter::once(dir).chain(std::env::split_paths(&crate::support::path_with_bin())),
    )
    .unwrap()
}

/// With a wrapper first on PATH, `install` copies no wrapper (a copy of a
/// script or a version manager's shim would not run as the hook): the file
/// starts git-maverick through env, and guards.
#[test]
fn with_a_wrapper_on_path_the_hook_starts_git_maverick_through_env() {
    let env = TestEnv::new();
    let a = env.clone("a");
    let path = path_with_a_wrapper(&env);
    let out = a
        .maverick_command(&["hook", "install"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let hook = a.dir.join(".git/hooks/pre-push");
    let text = std::fs::read_to_string(&hook).unwrap();
    assert_eq!(text.lines().next(), Some(NATIVE_LINE), "{text}");
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    the_guard_holds(&env, &a, &[("PATH", path.as_os_str())]);
}

/// `install` knows a copy by its bytes: one of another build that kept the
/// size and time of this one is replaced.
#[test]
fn install_replaces_a_copy_of_another_build_with_the_same_size_and_time() {
    let env = TestEnv::new();
    let a = env.clone("a");
    a.maverick(&["hook", "install"]).expect(0);
    let hook = a.dir.join(".git/hooks/pre-push");
    let modified = std::fs::metadata(&hook).unwrap().modified().unwrap();
    let mut bytes = std::fs::read(&hook).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    std::fs::write(&hook, &bytes).unwrap();
    set_modified(&hook, modified);
    let run = a.maverick(&["--json", "hook", "install"]);
    assert_eq!(run.json()["change"], "updated");
    assert_copy_of_git_maverick(&hook);
}

/// A hooks directory that keeps times to the second (ext2, FAT, some
/// mounts) does not make every push look like one after an upgrade: the
/// copy is kept, and checks the push itself.
#[test]
fn a_copy_whose_time_was_kept_to_the_second_is_current() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    let exact = std::fs::metadata(&hook).unwrap().modified().unwrap();
    let secs = exact
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let to_the_second = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    assert_ne!(
        exact, to_the_second,
        "the build's time has no fraction to lose"
    );
    set_modified(&hook, to_the_second);
    the_guard_holds(&env, &a, &[]);
    assert_eq!(
        std::fs::metadata(&hook).unwrap().modified().unwrap(),
        to_the_second,
        "the push copied git-maverick again"
    );
}

/// The file of earlier versions, whose interpreter is git-maverick, still
/// guards; with git-maverick gone from PATH it cannot start it and the
/// push fails at once (it does not hang, as git does when a hook's
/// interpreter path is missing), and `status` says why. `install` turns it
/// into a copy.
#[test]
fn a_native_hook_without_git_maverick_on_path_fails_closed() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    std::fs::write(&hook, native_hook_of_earlier_versions()).unwrap();
    make_executable(&hook);
    a.commit_file("one.rs", "1\n", "feat: one");
    let bin = path_without_maverick(&env);
    let out = a.git_as_instance(
        &["push", "origin", BRANCH],
        &[("PATH", OsStr::new(bin.to_str().unwrap()))],
    );
    assert!(
        !out.status.success(),
        "a push went through without its guard"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("git-maverick"), "{stderr}");
    assert_eq!(env.origin_head(BRANCH), None);
    let status = a
        .maverick_command(&["hook", "status"])
        .env("PATH", &bin)
        .output()
        .unwrap();
    assert_eq!(status.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&status.stderr);
    assert!(stderr.contains("not on PATH"), "{stderr}");
    // With git-maverick on PATH it guards, and install makes it a copy.
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    a.commit_file("one.rs", "other\n", "feat: one again");
    allowed(&push(&a, &["--quiet", "origin", BRANCH]));
    let run = a.maverick(&["--json", "hook", "install"]);
    assert_eq!(run.json()["change"], "updated");
    assert_copy_of_git_maverick(&hook);
}

/// The hook file earlier versions wrote: git-maverick as its interpreter.
fn native_hook_of_earlier_versions() -> String {
    format!(
        "{NATIVE_LINE}\n# >>> git-maverick pre-push >>>\n# (earlier versions)\n# <<< git-maverick pre-push <<<\n"
    )
}

/// The shell hook of older versions, alone in its file, becomes a copy of
/// git-maverick on `install`; a shared `core.hooksPath` keeps the shell
/// hook, which finds git-maverick on each machine's PATH.
#[test]
fn install_turns_maverick_s_own_shell_hook_into_a_copy_but_not_in_a_shared_hooks_path() {
    let env = TestEnv::new();
    let a = env.clone("a");
    let hook = a.dir.join(".git/hooks/pre-push");
    std::fs::write(&hook, SHIM).unwrap();
    make_executable(&hook);
    let run = a.maverick(&["--json", "hook", "install"]);
    run.expect(0);
    assert_eq!(run.json()["change"], "updated");
    assert_copy_of_git_maverick(&hook);

    a.git(&["config", "core.hooksPath", ".githooks"]);
    a.maverick(&["hook", "install"]).expect(0);
    assert_eq!(
        std::fs::read_to_string(a.dir.join(".githooks/pre-push")).unwrap(),
        SHIM
    );
    a.maverick(&["hook", "status"]).expect(0);
}

/// The hook file run by hand without git's arguments is a usage error that
/// says what the file is, not clap's "unrecognized subcommand": the copy
/// run as itself, and the earlier native file through git-maverick.
#[test]
fn the_hook_file_run_by_hand_says_what_it_is() {
    let env = TestEnv::new();
    let a = env.clone("a");
    a.maverick(&["hook", "install"]).expect(0);
    let hook = a.dir.join(".git/hooks/pre-push");
    let out = std::process::Command::new(&hook)
        .current_dir(&a.dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("is maverick's pre-push hook: git runs it with REMOTE URL"),
        "{stderr}"
    );
    std::fs::write(&hook, native_hook_of_earlier_versions()).unwrap();
    let run = a.maverick(&[".git/hooks/pre-push"]);
    run.expect(2);
    assert!(
        run.stderr
            .contains("is maverick's pre-push hook: git runs it with REMOTE URL"),
        "{}",
        run.stderr
    );
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
    run.expect(1);
    assert!(run.stderr.contains("python3 script"), "{}", run.stderr);
    assert!(
        run.stderr.contains("git-maverick hook pre-push"),
        "{}",
        run.stderr
    );
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
    let stderr = refused(&push(&a, &["-u", "origin", BRANCH]));
    assert!(stderr.contains("claim lost: stop and report"), "{stderr}");
    assert!(stderr.contains("was lost: #142 is held by b"), "{stderr}");
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
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("warning: the lease of a on #142 expired"),
        "{stderr}"
    );
    // Another instance of the same clone takes over: its higher generation
    // in this clone's records fences a without any heartbeat.
    a.maverick_as(
        "c",
        &["coord", "claim", "142", "--takeover", "--branch", BRANCH],
    )
    .expect(0);
    a.commit_file("two.rs", "2\n", "feat: two");
    let stderr = refused(&push(&a, &["origin", BRANCH]));
    assert!(
        stderr.contains("#142 was taken over by c (generation 2)"),
        "{stderr}"
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
    env.git_in(env.path(), &["init", "--quiet", "--bare", "mirror.git"]);
    a.git(&[
        "remote",
        "add",
        "mirror",
        env.path().join("mirror.git").to_str().unwrap(),
    ]);
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    allowed(&push(&a, &["--quiet", "--force", "mirror", BRANCH]));
}

#[test]
fn the_shim_fails_closed_without_git_maverick_on_path() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.commit_file("one.rs", "1\n", "feat: one");
    let bin = path_without_maverick(&env);
    // Installed with git-maverick nowhere on PATH, the hook is the shim,
    // which looks for it at every push.
    let out = a
        .maverick_command(&["--json", "hook", "install"])
        .env("PATH", &bin)
        .output()
        .unwrap();
    let installed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(installed["change"], "updated", "{installed}");
    assert_eq!(
        std::fs::read_to_string(a.dir.join(".git/hooks/pre-push")).unwrap(),
        SHIM
    );
    let out = a.git_as_instance(
        &["push", "origin", BRANCH],
        &[("PATH", OsStr::new(bin.to_str().unwrap()))],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("git-maverick is not on PATH"), "{stderr}");
    assert!(stderr.contains("git push --no-verify"), "{stderr}");
    assert_eq!(env.origin_head(BRANCH), None);
}

/// A person's clone names no instance in its environment: the hook finds it
/// as every command does, from `maverick.instance` when set, else the id
/// kept in the clone (read without a git process when no config can name
/// one).
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
    let stderr = refused_as_collision(&out);
    assert!(stderr.contains("desk"), "{stderr}");
}
