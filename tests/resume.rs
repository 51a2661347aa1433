//! `git maverick resume BRANCH` against a real bare origin (SPEC 7).

use std::path::{Path, PathBuf};

use crate::support::screen::{screen, screen_naming};
use crate::support::{Repo, TestEnv};

use crate::support::STORY_BRANCH as BRANCH;

fn worktrees_dir(repo: &Repo) -> PathBuf {
    repo.dir.join(".maverick/worktrees")
}

/// `repo` pushes a new commit of `branch` with plain git, no claim (the
/// branch is unmanaged in that clone): returns the pushed head.
fn push_unclaimed(repo: &Repo, branch: &str, file: &str) -> String {
    repo.git(&["switch", "--quiet", "-C", branch, "origin/main"]);
    let head = repo.commit_file(file, &format!("{file}\n"), &format!("feat: {file}"));
    repo.git(&[
        "push",
        "--quiet",
        "origin",
        &format!("HEAD:refs/heads/{branch}"),
    ]);
    repo.git(&["switch", "--quiet", "main"]);
    head
}

#[test]
fn a_deleted_clone_s_branch_is_resumed_elsewhere_with_every_pushed_commit() {
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    let mut pushed = Vec::new();
    for n in 1..=3 {
        pushed.push(a.commit_file(&format!("f{n}.rs"), "x\n", &format!("feat: part {n}")));
        a.git_as_instance(&["push", "--quiet", "-u", "origin", BRANCH], &[]);
    }
    assert_eq!(env.origin_head(BRANCH).as_ref(), pushed.last());
    // The laptop dies: its lease runs out and its clone is gone.
    a.maverick(&["--lease-ttl", "60s", "coord", "heartbeat", "142", "--renew"])
        .expect(0);
    std::fs::remove_dir_all(&a.dir).unwrap();
    env.advance_clock(61);

    let b = env.clone("b");
    b.maverick(&["hook", "install"]).expect(0);
    b.maverick(&["coord", "read", "142"]).expect(5);
    let run = b.maverick(&["resume", BRANCH]);
    insta::assert_snapshot!("resume_on_a_stale_lease", screen(&env, &run));
    assert!(!worktrees_dir(&b).exists());

    let run = b.maverick(&["--json", "resume", BRANCH, "--takeover"]);
    run.expect(0);
    let json = run.json();
    insta::assert_snapshot!(
        "resume_json_with_takeover",
        screen_naming(&env, &run, &[(pushed.last().unwrap(), "[part-3]")])
    );
    assert_eq!(json["claim"], "taken_over");
    assert_eq!(json["issue"], 142);
    assert_eq!(json["branch"], BRANCH);
    assert_eq!(json["generation"], 2);
    assert_eq!(json["worktree_state"], "created");
    let worktree = PathBuf::from(json["worktree"].as_str().unwrap());
    assert_eq!(worktree, worktrees_dir(&b).join("maverick-142-parser"));
    assert_eq!(json["head"].as_str(), pushed.last().map(String::as_str));
    let wt = b.at(&worktree);
    for commit in &pushed {
        wt.git(&["merge-base", "--is-ancestor", commit, "HEAD"]);
    }
    assert_eq!(wt.git(&["rev-parse", "--abbrev-ref", "HEAD"]), BRANCH);
    assert_eq!(
        wt.git(&["rev-parse", "--abbrev-ref", "@{upstream}"]),
        format!("origin/{BRANCH}")
    );
    // The main worktree does not see the worktree dir.
    assert_eq!(b.git(&["status", "--porcelain"]), "");
    let exclude = std::fs::read_to_string(b.dir.join(".git/info/exclude")).unwrap();
    assert!(exclude.lines().any(|l| l == "/.maverick/"), "{exclude}");

    // The work goes on from there, guarded by the hook.
    let next = wt.commit_file("f4.rs", "x\n", "feat: part 4");
    let out = wt.git_as_instance(&["push", "--quiet"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.origin_head(BRANCH), Some(next));
    let out = wt.git_as_instance(&["push", "--quiet", "origin", &format!(":{BRANCH}")], &[]);
    assert!(!out.status.success(), "a resumed branch is guarded");
}

#[test]
fn resume_run_twice_does_no_harm() {
    let env = TestEnv::new();
    let c = env.clone("c");
    let head = push_unclaimed(&c, BRANCH, "one.rs");
    let b = env.clone("b");
    let first = b.maverick(&["--json", "resume", BRANCH]);
    first.expect(0);
    let first = first.json();
    assert_eq!(first["claim"], "none");
    assert_eq!(first["head"], head.as_str());
    let second = b.maverick(&["--json", "resume", BRANCH]);
    second.expect(0);
    let second = second.json();
    assert_eq!(second["claim"], "none");
    assert_eq!(second["worktree_state"], "reused");
    for key in ["worktree", "head", "branch", "issue", "generation"] {
        assert_eq!(first[key], second[key], "{key}");
    }
    let exclude = std::fs::read_to_string(b.dir.join(".git/info/exclude")).unwrap();
    assert_eq!(exclude.matches("/.maverick/").count(), 1);
    let plain = b.maverick(&["resume", BRANCH]);
    insta::assert_snapshot!(
        "resume_a_third_time",
        screen_naming(&env, &plain, &[(&head[..12], "[head]")])
    );
}

#[test]
fn resume_is_refused_while_the_lease_is_live() {
    let env = TestEnv::new();
    let a = env.clone("a");
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    push_unclaimed(&env.clone("c"), BRANCH, "one.rs");
    let b = env.clone("b");
    let run = b.maverick(&["resume", BRANCH]);
    insta::assert_snapshot!("resume_while_the_lease_is_live", screen(&env, &run));
    let run = b.maverick(&["resume", BRANCH, "--takeover"]);
    insta::assert_snapshot!(
        "resume_with_takeover_while_the_lease_is_live",
        screen(&env, &run)
    );
    assert!(!worktrees_dir(&b).exists());
}

#[test]
fn the_holder_resumes_its_own_branch_on_another_clone() {
    let env = TestEnv::new();
    let a = env.clone("a");
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    let head = push_unclaimed(&env.clone("c"), BRANCH, "one.rs");
    // Its lease runs out while no machine works on it.
    a.maverick(&["--lease-ttl", "60s", "coord", "heartbeat", "142", "--renew"])
        .expect(0);
    env.advance_clock(61);
    env.clone("watcher")
        .maverick(&["coord", "read", "142"])
        .expect(5);
    // The same instance on a new clone (its records are not there): resume
    // renews the lease, and its pushes go through the hook.
    let fresh = Repo {
        instance: "a".to_owned(),
        ..env.clone("a2")
    };
    fresh.maverick(&["hook", "install"]).expect(0);
    let run = fresh.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    assert_eq!(run.json()["claim"], "held");
    assert_eq!(run.json()["head"], head.as_str());
    env.clone("watcher2")
        .maverick(&["coord", "read", "142"])
        .expect(4);
    let wt = fresh.at(run.json()["worktree"].as_str().unwrap());
    let next = wt.commit_file("two.rs", "2\n", "feat: two");
    let out = wt.git_as_instance(&["push", "--quiet"], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.origin_head(BRANCH), Some(next));
}

#[test]
fn a_local_branch_with_unpushed_commits_is_never_moved() {
    let env = TestEnv::new();
    let c = env.clone("c");
    push_unclaimed(&c, BRANCH, "one.rs");
    let b = env.clone("b");
    b.git(&["switch", "--quiet", "-c", BRANCH, "origin/main"]);
    let mine = b.commit_file("mine.rs", "mine\n", "feat: only here");
    b.git(&["switch", "--quiet", "main"]);
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(8).json();
    let names = [(&mine[..7], "[mine]")];
    insta::assert_snapshot!(
        "resume_json_over_unpushed_commits",
        screen_naming(&env, &run, &names)
    );
    let run = b.maverick(&["resume", BRANCH]);
    insta::assert_snapshot!(
        "resume_over_unpushed_commits",
        screen_naming(&env, &run, &names)
    );
    assert_eq!(b.git(&["rev-parse", BRANCH]), mine);
    assert!(!worktrees_dir(&b).exists());
    // Nothing was claimed either.
    let read = b.maverick(&["coord", "read", "142"]);
    insta::assert_snapshot!("coord_read_after_a_refused_resume", screen(&env, &read));
}

#[test]
fn a_branch_checked_out_in_the_main_worktree_is_resumed_there() {
    let env = TestEnv::new();
    let c = env.clone("c");
    push_unclaimed(&c, BRANCH, "one.rs");
    let b = env.clone("b");
    b.git(&["switch", "--quiet", BRANCH]);
    // The branch moves on origin while b's session is gone.
    c.git(&["fetch", "--quiet"]);
    c.git(&[
        "switch",
        "--quiet",
        "-C",
        BRANCH,
        &format!("origin/{BRANCH}"),
    ]);
    let newer = c.commit_file("two.rs", "2\n", "feat: two");
    c.git(&["push", "--quiet", "origin", BRANCH]);
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    let json = run.json();
    assert_eq!(
        std::fs::canonicalize(json["worktree"].as_str().unwrap()).unwrap(),
        std::fs::canonicalize(&b.dir).unwrap()
    );
    insta::assert_snapshot!(
        "resume_json_in_the_main_worktree",
        screen_naming(&env, &run, &[(&newer, "[newer]")])
    );
    assert_eq!(b.git(&["rev-parse", "HEAD"]), newer);
    assert!(!worktrees_dir(&b).exists());
}

#[test]
fn a_local_branch_behind_the_remote_is_fast_forwarded() {
    let env = TestEnv::new();
    let c = env.clone("c");
    push_unclaimed(&c, BRANCH, "one.rs");
    let b = env.clone("b");
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    let worktree = PathBuf::from(run.json()["worktree"].as_str().unwrap());
    // The branch moves on origin (pushed by the instance's other clone).
    c.git(&["fetch", "--quiet"]);
    c.git(&[
        "switch",
        "--quiet",
        "-C",
        BRANCH,
        &format!("origin/{BRANCH}"),
    ]);
    let newer = c.commit_file("two.rs", "2\n", "feat: two");
    c.git(&["push", "--quiet", "origin", BRANCH]);
    let run = b.maverick(&["--json", "resume", BRANCH]);
    assert_eq!(run.json()["head"], newer.as_str());
    insta::assert_snapshot!(
        "resume_json_fast_forwards",
        screen_naming(&env, &run, &[(&newer, "[newer]")])
    );
    assert_eq!(b.at(&worktree).git(&["rev-parse", "HEAD"]), newer);
}

#[test]
fn a_stale_worktree_is_repaired() {
    let env = TestEnv::new();
    let head = push_unclaimed(&env.clone("c"), BRANCH, "one.rs");
    let b = env.clone("b");
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    let worktree = PathBuf::from(run.json()["worktree"].as_str().unwrap());

    // Its directory deleted: git still lists it until pruned.
    std::fs::remove_dir_all(&worktree).unwrap();
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    assert_eq!(run.json()["worktree_state"], "repaired");
    assert_eq!(b.at(&worktree).git(&["rev-parse", "HEAD"]), head);

    // Its registration pruned while the directory (with a file in it) stays.
    std::fs::write(worktree.join("notes.txt"), "uncommitted\n").unwrap();
    let admin = b.dir.join(".git/worktrees");
    for entry in std::fs::read_dir(&admin).unwrap() {
        std::fs::remove_dir_all(entry.unwrap().path()).unwrap();
    }
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    let json = run.json();
    assert_eq!(json["worktree_state"], "repaired");
    let aside = PathBuf::from(json["moved_aside"].as_str().unwrap());
    assert_eq!(
        std::fs::read_to_string(aside.join("notes.txt")).unwrap(),
        "uncommitted\n"
    );
    assert_eq!(aside.parent(), Some(worktrees_dir(&b).as_path()));
    assert_eq!(b.at(&worktree).git(&["rev-parse", "HEAD"]), head);
    // The folder aside is no checkout of the branch any more: its .git
    // named the registration the new worktree reuses (issue 39, item 2).
    let status = b.at(&aside).git_output(&["status"]);
    assert!(!status.status.success(), "git still works in {aside:?}");
    assert!(aside.join("MAVERICK-MOVED-ASIDE.txt").is_file());
}

/// Another worktree whose folder is absent right now (moved, or on a disk
/// not mounted) keeps its registration through resume's repair: resume
/// removes only its own (issue 39, item 3).
#[test]
fn resume_never_prunes_a_worktree_it_did_not_make() {
    let env = TestEnv::new();
    push_unclaimed(&env.clone("c"), BRANCH, "one.rs");
    let b = env.clone("b");
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    let worktree = PathBuf::from(run.json()["worktree"].as_str().unwrap());

    // The user's own worktree, with a commit only its detached HEAD holds.
    let side = env.path().join("side");
    b.git(&[
        "worktree",
        "add",
        "--quiet",
        "--detach",
        side.to_str().unwrap(),
    ]);
    let kept = b.at(&side).commit_file("side.rs", "x\n", "feat: side");
    let unmounted = env.path().join("side-unmounted");
    std::fs::rename(&side, &unmounted).unwrap();

    // Resume's own worktree deleted: resume repairs it.
    std::fs::remove_dir_all(&worktree).unwrap();
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    assert_eq!(run.json()["worktree_state"], "repaired", "{}", run.screen());

    // The disk comes back: the worktree is still git's, its commit with it.
    std::fs::rename(&unmounted, &side).unwrap();
    assert_eq!(b.at(&side).git(&["rev-parse", "HEAD"]), kept);
    assert!(b
        .git(&["worktree", "list"])
        .contains(side.to_str().unwrap()));

    // And a registration resume did not make, whose folder is gone, stops
    // resume with the way out rather than being dropped.
    std::fs::remove_dir_all(&worktree).unwrap();
    std::fs::remove_dir_all(b.dir.join(".git/maverick/worktrees")).unwrap();
    let run = b.maverick(&["resume", BRANCH]);
    run.expect(1);
    insta::assert_snapshot!(
        "resume_leaves_a_missing_worktree_it_did_not_make",
        screen(&env, &run)
    );
    assert!(b
        .git(&["worktree", "list", "--porcelain"])
        .contains(worktree.to_str().unwrap()));
}

/// A `git commit -a` held inside its pre-commit hook holds the worktree's
/// `index.lock`: resume run meanwhile leaves the worktree where it is, and
/// the commit records every file (issue 39, item 1).
#[test]
fn a_commit_in_progress_is_never_taken_for_a_half_made_worktree() {
    use std::io::Read as _;
    let env = TestEnv::new();
    let a = crate::recovery::pushed_claimed_clone(&env, "a");
    let run = a.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    let worktree = PathBuf::from(run.json()["worktree"].as_str().unwrap());
    let wt = a.at(&worktree);

    // A pre-commit hook that says it runs, then waits to be let go.
    let started = env.path().join("hook-started");
    let release = env.path().join("hook-release");
    for fifo in [&started, &release] {
        let status = std::process::Command::new("mkfifo")
            .arg(fifo)
            .status()
            .unwrap();
        assert!(status.success());
    }
    let hooks = wt.git(&["rev-parse", "--path-format=absolute", "--git-path", "hooks"]);
    let hook = Path::new(hooks.trim()).join("pre-commit");
    std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\necho running > '{}'\nread go < '{}'\n",
            started.display(),
            release.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

    wt.write_file("f1.rs", "edited\n");
    let mut commit = crate::support::git_command();
    commit
        .args(["commit", "--quiet", "-a", "-m", "feat: edit part 1"])
        .current_dir(&worktree);
    env.apply_env(&mut commit);
    let commit = commit
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Opening the fifo waits for the hook: from here git holds the lock.
    let mut said = String::new();
    std::fs::File::open(&started)
        .unwrap()
        .read_to_string(&mut said)
        .unwrap();
    assert_eq!(said, "running\n");
    let lock = crate::recovery::index_lock(&wt);
    assert!(Path::new(lock.trim()).exists());

    let run = a.maverick(&["--json", "resume", BRANCH]);
    std::fs::write(&release, "go\n").unwrap();
    let commit = commit.wait_with_output().unwrap();
    assert!(
        commit.status.success(),
        "{}",
        String::from_utf8_lossy(&commit.stderr)
    );
    run.expect(0);
    let json = run.json();
    assert_eq!(json["worktree_state"], "reused", "{json}");
    assert_eq!(json["moved_aside"], serde_json::Value::Null, "{json}");

    // The commit is on the branch, with every file, in the worktree where
    // it was made; nothing was moved aside.
    let files = wt.git(&["ls-tree", "-r", "--name-only", "HEAD"]);
    assert_eq!(
        files.lines().collect::<Vec<_>>(),
        ["README.md", "f1.rs", "f2.rs", "f3.rs"]
    );
    assert_eq!(wt.git(&["show", "HEAD:f1.rs"]), "edited");
    assert_eq!(
        a.git(&["rev-parse", &format!("refs/heads/{BRANCH}")]),
        wt.git(&["rev-parse", "HEAD"])
    );
    let names: Vec<String> = std::fs::read_dir(worktrees_dir(&a))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["maverick-142-parser"]);
}

/// Every path under `dir`, for "nothing was created outside".
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir()
                && !path.ends_with(".git")
                && !path.ends_with(".maverick")
            {
                stack.push(path.clone());
            }
            found.push(path);
        }
    }
    found.sort();
    found
}

#[test]
fn hostile_branch_names_never_leave_the_worktree_dir() {
    let env = TestEnv::new();
    let c = env.clone("c");
    let b = env.clone("b");
    let outside_before = tree(env.path());

    let mut screens = Vec::new();
    for bad in [
        "-x",
        "a/../../escape",
        "../escape",
        "a..b",
        "/abs",
        "HEAD",
        "a/./b",
        "x\ny",
    ] {
        let run = b.maverick(&["resume", "--issue", "7", "--", bad]);
        screens.push(format!("resume {bad:?}\n{}", screen(&env, &run)));
    }
    insta::assert_snapshot!("resume_hostile_branch_names", screens.join("\n"));
    assert_eq!(tree(env.path()), outside_before);

    let deep = format!("deep/{}leaf-9", "x/".repeat(60));
    for (n, name) in [
        "ünïcode/ß-日本",
        "a/b/c/d/e/f/g",
        "x/-y",
        deep.as_str(),
        "p/q",
        "p-q",
    ]
    .iter()
    .enumerate()
    {
        push_unclaimed(&c, name, &format!("f{n}.rs"));
        let issue = (100 + n).to_string();
        let run = b.maverick(&["--json", "resume", name, "--issue", &issue]);
        run.expect(0);
        let worktree = PathBuf::from(run.json()["worktree"].as_str().unwrap());
        assert_eq!(
            worktree.parent(),
            Some(worktrees_dir(&b).as_path()),
            "{name}"
        );
        assert!(worktree.is_dir(), "{name}");
        assert_eq!(
            b.at(&worktree).git(&["rev-parse", "--abbrev-ref", "HEAD"]),
            *name
        );
    }
    // p/q and p-q would share a directory name: the second got its own.
    assert!(worktrees_dir(&b).join("p-q").is_dir());
    let entries: Vec<_> = std::fs::read_dir(worktrees_dir(&b))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(entries.len(), 6);
    assert_eq!(b.git(&["status", "--porcelain"]), "");
}

/// With a relative `core.hooksPath` every worktree has a hooks folder of
/// its own: resume's worktree gets the guard the main one has, kept out of
/// commits, and a forced push from it is refused (issue 39, item 4).
#[test]
fn a_relative_hooks_path_gives_resume_s_worktree_the_guard() {
    let env = TestEnv::new();
    let head = push_unclaimed(&env.clone("c"), BRANCH, "one.rs");
    let b = env.clone("b");
    b.git(&["config", "core.hooksPath", ".githooks"]);
    b.maverick(&["hook", "install"]).expect(0);
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    let json = run.json();
    assert_eq!(json["warnings"], serde_json::json!([]), "{json}");
    let worktree = PathBuf::from(json["worktree"].as_str().unwrap());
    let wt = b.at(&worktree);
    let status = wt.maverick(&["--json", "hook", "status"]);
    assert_eq!(status.json()["on"], true, "{}", status.screen());

    // The guard's file is in no commit: `git add -A` leaves it out.
    wt.git(&["add", "-A"]);
    assert_eq!(wt.git(&["status", "--porcelain"]).trim(), "");
    assert!(worktree.join(".githooks/pre-push").is_file());

    // A rewritten branch pushed with force is refused; the remote keeps its head.
    wt.git(&["commit", "--quiet", "--amend", "-m", "feat: rewritten"]);
    let push = wt.git_as_instance(
        &[
            "push",
            "--quiet",
            "--force",
            "origin",
            &format!("HEAD:{BRANCH}"),
        ],
        &[],
    );
    assert!(!push.status.success(), "the forced push went through");
    assert_eq!(env.origin_head(BRANCH), Some(head.trim().to_owned()));
}

/// A worktree whose branch resume must fast-forward while a git process
/// holds its index lock is left alone, with words and the way out; once
/// that git is done, resume goes on.
#[test]
fn a_worktree_a_git_holds_is_left_alone() {
    let env = TestEnv::new();
    let c = env.clone("c");
    let first = push_unclaimed(&c, BRANCH, "one.rs");
    let b = env.clone("b");
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    let worktree = PathBuf::from(run.json()["worktree"].as_str().unwrap());
    c.git(&["switch", "--quiet", BRANCH]);
    let newer = c.commit_file("two.rs", "two\n", "feat: two");
    c.git(&["push", "--quiet", "origin", BRANCH]);

    // A git at work there (its index.lock, as a running commit holds it).
    let wt = b.at(&worktree);
    let lock = crate::recovery::index_lock(&wt);
    std::fs::write(lock.trim(), "").unwrap();
    let run = b.maverick(&["resume", BRANCH]);
    insta::assert_snapshot!("resume_of_a_worktree_in_use", screen(&env, &run));
    assert_eq!(wt.git(&["rev-parse", "HEAD"]), first);

    std::fs::remove_file(lock.trim()).unwrap();
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    assert_eq!(run.json()["fast_forwarded"], true, "{}", run.screen());
    assert_eq!(wt.git(&["rev-parse", "HEAD"]), newer);
}
