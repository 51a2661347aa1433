//! Recovery that never makes things worse, and nothing trusted that should
//! not be (issue 29): what the surface says reaches a terminal only
//! escaped; a token goes only to the host the repository is on; a claim
//! without a lease is judged by its age; and the crash cases (a kill inside
//! `git worktree add`, a push the remote took before its tracking ref was
//! written) recover with the documented commands, through the failpoints.

use crate::crash::crash_at;
use crate::native::setting;
use crate::support::mav::markers::{parse_markers, MarkerKind};
use crate::support::screen::screen;
use crate::support::{Repo, Run, Surface, TestEnv};
use serde_json::json;

on_both_surfaces!(surface_text_reaches_the_terminal_escaped);

// -- Terminal escapes from the surface ---------------------------------------

/// An instance id that sets the window title, erases the line and returns
/// the cursor, and a host that writes the clipboard (OSC 52).
const HOSTILE_INSTANCE: &str = "eve\x1b]0;pwned\x07\x1b[2K\rbob";
const HOSTILE_HOST: &str = "box\x1b]52;c;cm0gLXJmIH4K\x07";
/// A task title with a one-byte CSI (C1) that clears the screen, a DEL and
/// a cursor-up, and a right-to-left override.
const HOSTILE_TITLE: &str = "Parse\u{9b}2J blocks\x7f\x1b[1A \u{202e}exe.txt";

/// Every character a terminal acts on, in what a person was shown.
fn terminal_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

/// What a person was shown holds no character a terminal acts on; the
/// snapshot `name` shows how the hostile text was escaped.
#[track_caller]
fn assert_escaped(env: &TestEnv, name: &str, run: &Run) {
    let shown = run.screen();
    assert_eq!(terminal_controls(&shown), Vec::<char>::new(), "{shown:?}");
    insta::assert_snapshot!(name, screen(env, run));
}

fn surface_text_reaches_the_terminal_escaped(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let carol = env.clone("carol");
    // A claim whose holder's id and host carry escape sequences, as anyone
    // with write access (or a broken client) could post one.
    let claim = json!({
        "instance_id": HOSTILE_INSTANCE,
        "host": HOSTILE_HOST,
        "scope": ["150"],
        "claimed_at": "2026-11-30T10:00:00Z",
    });
    carol
        .maverick(&["coord", "label", "add", "150", "claude-in-progress"])
        .expect(0);
    env.add_comment(
        150,
        "dana",
        &format!(
            "<!-- maverick claim -->\n\n```maverick-claim\n{}\n```\n",
            serde_json::to_string_pretty(&claim).unwrap()
        ),
    );
    // And a tasks comment whose title carries more.
    env.add_comment(
        150,
        "dana",
        &format!("## Tasks\n- [ ] **{HOSTILE_TITLE}** — the detail\n- [ ] **Two**\n"),
    );

    // The instance shows as `eve\x1b]0;pwned\x07\x1b[2K\x0dbob`, the title
    // as `Parse\u{9b}2J blocks\x7f\x1b[1A \u{202e}exe.txt`.
    let read = carol.maverick(&["coord", "read", "150"]);
    read.expect(4);
    assert_escaped(&env, "hostile_read", &read);

    let list = carol.maverick(&["task", "list", "150"]);
    list.expect(0);
    assert_escaped(&env, "hostile_task_list", &list);

    let status = carol.maverick(&["status"]);
    status.expect(0);
    let name = format!("hostile_status_{}", env.name());
    assert_escaped(&env, &name, &status);

    // An error that quotes what the surface holds is escaped too.
    let takeover = carol.maverick(&["coord", "takeover", "150"]);
    assert_ne!(takeover.code, 0, "{}", takeover.screen());
    assert_escaped(&env, "hostile_takeover", &takeover);

    // JSON stays exact: a program gets the very bytes the surface holds.
    let json = carol.maverick(&["--json", "coord", "read", "150"]);
    json.expect(4);
    let json = json.json();
    assert_eq!(json["holder"]["instance_id"], HOSTILE_INSTANCE);
    assert_eq!(json["holder"]["host"], HOSTILE_HOST);
    let list = carol
        .maverick(&["--json", "task", "list", "150"])
        .expect(0)
        .json();
    assert_eq!(list["tasks"][0]["title"], HOSTILE_TITLE, "{list}");
}

// -- A claim whose lease was never written -----------------------------------

on_both_surfaces!(a_claim_without_a_lease_is_judged_by_its_age);

fn a_claim_without_a_lease_is_judged_by_its_age(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alpha = env.clone("alpha");
    let beta = env.clone("beta");
    // alpha dies between its claim comment and its lease (on the git
    // surface the two are one compare-and-swap, so a claim comment without
    // a lease is one Maverick's claimer left: planted as Maverick writes it).
    match surface {
        Surface::Github => crash_at(
            &alpha,
            "claim-after-claim-comment",
            &["--lease-ttl", "2m", "coord", "claim", "5"],
        ),
        Surface::Git => {
            beta.maverick(&["coord", "label", "add", "5", "claude-in-progress"])
                .expect(0);
            let claim = json!({
                "instance_id": "alpha",
                "host": "devbox",
                "scope": ["5"],
                "claimed_at": "2026-11-30T10:00:00Z",
                "lease_ttl": 120,
            });
            env.add_comment(
                5,
                "alpha",
                &format!(
                    "<!-- maverick claim -->\n\n```maverick-claim\n{}\n```\n",
                    serde_json::to_string_pretty(&claim).unwrap()
                ),
            );
        }
    }
    let leases = env
        .comment_bodies(5)
        .iter()
        .filter(|b| {
            parse_markers(b)
                .iter()
                .flatten()
                .any(|m| m.kind == MarkerKind::Lease)
        })
        .count();
    assert_eq!(leases, 0, "{:?}", env.comment_bodies(5));

    // Younger than the ttl its claim declares (2 minutes): held, whatever
    // ttl the reader sets for itself, and never taken over.
    for ttl in ["1s", "1h"] {
        let read = beta.maverick(&["--json", "--lease-ttl", ttl, "coord", "read", "5"]);
        read.expect(4);
        let read = read.json();
        assert_eq!(read["holder"]["instance_id"], "alpha", "{read}");
        assert_eq!(read["lease"]["heartbeat_at"], serde_json::Value::Null);
    }
    beta.maverick(&["coord", "claim", "5"]).expect(4);
    beta.maverick(&["coord", "takeover", "5"]).expect(4);

    // Older than the ttl: stale, and taken over as the README says.
    env.advance_clock(121);
    for ttl in ["1s", "1h"] {
        beta.maverick(&["--lease-ttl", ttl, "coord", "read", "5"])
            .expect(5);
    }
    beta.maverick(&["coord", "takeover", "5"]).expect(0);
    let read = alpha.maverick(&["--json", "coord", "read", "5"]).json();
    assert_eq!(read["holder"]["instance_id"], "beta");
}

// -- GH_HOST never redirects the token ---------------------------------------

/// gh's rule: `GH_HOST` names the host only when nothing else does. A
/// remote on github.com keeps its requests, and so its token, on
/// api.github.com; `-R HOST/OWNER/NAME` sends them to HOST.
#[test]
fn gh_host_does_not_move_a_github_com_remote() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    repo.with_remote_at("https://github.com/acme/widgets.git");
    let config = |args: &[&str]| {
        let mut cmd = repo.maverick_command(&[&["config", "--json"], args].concat());
        cmd.env("MAVERICK_INSTANCE", "alice")
            .env("GH_HOST", "ghe.example.com")
            .env("GH_TOKEN", "ghp_secret");
        let run = crate::support::Run::from_output(&["config"], cmd.output().unwrap());
        run.expect(0);
        run.json()
    };
    let json = config(&[]);
    assert_eq!(setting(&json, "surface")["value"], "github", "{json}");
    assert_eq!(
        setting(&json, "surface")["from"],
        "the remote \"origin\" is on github.com"
    );
    assert_eq!(setting(&json, "repo")["value"], "acme/widgets");
    assert_eq!(
        setting(&json, "githubApiUrl")["value"],
        "https://api.github.com",
        "{json}"
    );
    assert_eq!(
        setting(&json, "githubApiUrl")["from"],
        "the remote \"origin\" is on github.com"
    );

    // A host the user names explicitly is where the requests go.
    let json = config(&["-R", "ghe.example.com/acme/tools"]);
    assert_eq!(setting(&json, "repo")["value"], "acme/tools");
    assert_eq!(
        setting(&json, "githubApiUrl")["value"],
        "https://ghe.example.com/api/v3"
    );
    assert_eq!(setting(&json, "githubApiUrl")["from"], "flag --repo");
}

// -- Enterprise tokens, as gh reads them -------------------------------------

/// A repository on a GitHub Enterprise Server host takes gh's Enterprise
/// tokens: `GH_ENTERPRISE_TOKEN`, else `GITHUB_ENTERPRISE_TOKEN`, else `gh
/// auth token --hostname HOST`; a github.com token (`GH_TOKEN`) is never
/// sent there. The host is named by `-R HOST/OWNER/NAME`; the requests go
/// to the fake through GITHUB_API_URL.
#[test]
fn an_enterprise_host_takes_the_enterprise_tokens_and_never_gh_token() {
    use std::os::unix::fs::PermissionsExt as _;
    let env = TestEnv::with_surface(Surface::Github);
    env.github().create_issue(1, "one", &[]);
    let repo = env.clone("alice");
    let on_enterprise = format!("ghe.example.com/{}", crate::support::GITHUB_REPO);
    let token = env.github().token().to_owned();
    // A `gh` that has a login for ghe.example.com only.
    let bin = env.path().join("gh-bin");
    std::fs::create_dir_all(&bin).unwrap();
    let gh = bin.join("gh");
    std::fs::write(
        &gh,
        format!(
            "#!/bin/sh\n[ \"$*\" = \"auth token --hostname ghe.example.com\" ] && echo {token} && exit 0\nexit 1\n"
        ),
    )
    .unwrap();
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path_with_gh = {
        let mut dirs = vec![bin.clone()];
        dirs.extend(std::env::split_paths(&crate::support::path_with_bin()));
        std::env::join_paths(dirs).unwrap()
    };
    let read = |vars: &[(&str, &std::ffi::OsStr)]| {
        env.github().reset_count();
        let args = ["-R", &on_enterprise, "coord", "read", "1"];
        let mut cmd = repo.maverick_command(&args);
        cmd.env("MAVERICK_INSTANCE", "alice")
            .env("PATH", crate::support::path_without_maverick(&env))
            .env_remove("GH_TOKEN");
        for (var, value) in vars {
            cmd.env(var, value);
        }
        let run = Run::from_output(&args, cmd.output().unwrap());
        (run, env.github().requests())
    };
    let token_os = std::ffi::OsStr::new(&token);

    // GH_TOKEN alone: not sent, and the error names the way out.
    let (run, requests) = read(&[("GH_TOKEN", token_os)]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(requests.is_empty(), "{requests:?}");
    assert!(
        run.stderr.contains("no GitHub token for ghe.example.com")
            && run.stderr.contains("GH_ENTERPRISE_TOKEN")
            && run
                .stderr
                .contains("gh auth login --hostname ghe.example.com"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains(&token));

    // Each of gh's Enterprise sources, with a wrong GH_TOKEN beside it.
    let wrong = std::ffi::OsStr::new("ghp_github_com_token_not_for_ghe");
    for var in ["GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN"] {
        let (run, requests) = read(&[(var, token_os), ("GH_TOKEN", wrong)]);
        assert_eq!(run.code, 0, "{var}: {}", run.stderr);
        assert!(!requests.is_empty() && requests.iter().all(|r| r.status != 401));
    }
    let (run, requests) = read(&[("PATH", &path_with_gh), ("GH_TOKEN", wrong)]);
    assert_eq!(run.code, 0, "gh auth token --hostname: {}", run.stderr);
    assert!(requests.iter().all(|r| r.status != 401));
}

// -- resume --takeover warns that the guard is off ---------------------------

/// A fresh clone has no pre-push hook: the resume that takes a branch over
/// there says so once, on stderr and in `--json`'s `warnings`.
#[test]
fn a_takeover_resume_in_a_fresh_clone_shows_the_guard_off_warning() {
    use crate::support::STORY_BRANCH as BRANCH;
    let env = TestEnv::new();
    let a = env.claimed_clone_with_ttl("a", "1m");
    a.commit_file("f.rs", "x\n", "feat: part 1");
    a.git_as_instance(&["push", "--quiet", "-u", "origin", BRANCH], &[]);
    env.advance_clock(61);

    let b = env.clone("b");
    let run = b.maverick(&["resume", BRANCH, "--takeover"]);
    run.expect(0);
    insta::assert_snapshot!("resume_takeover_in_a_fresh_clone", screen(&env, &run));

    // b's lease runs out in turn; c takes over with --json.
    env.advance_clock(601);
    let c = env.clone("c");
    let run = c.maverick(&["--json", "resume", BRANCH, "--takeover"]);
    run.expect(0);
    insta::assert_snapshot!("resume_takeover_json_in_a_fresh_clone", screen(&env, &run));
}

// -- A kill inside `git worktree add`, and the mass-delete guard --------------

/// Where git keeps the index lock of the worktree `repo` is in.
pub(crate) fn index_lock(repo: &Repo<'_>) -> String {
    repo.git(&[
        "rev-parse",
        "--path-format=absolute",
        "--git-path",
        "index.lock",
    ])
}

/// What a `git worktree add` killed during its checkout leaves: git's own
/// "initializing" lock, an `index.lock`, and an index without a file of
/// HEAD's (so `git status` shows every file deleted).
fn half_make(repo: &Repo<'_>, worktree: &std::path::Path) {
    let wt = repo.at(worktree);
    wt.git(&["read-tree", "--empty"]);
    repo.git(&[
        "worktree",
        "lock",
        "--reason",
        "initializing",
        worktree.to_str().unwrap(),
    ]);
    let lock = index_lock(&wt);
    std::fs::write(lock.trim(), "").unwrap();
}

/// A clone holding the story's claim, whose branch (three files, three
/// commits) is pushed, with `main` checked out so resume makes a worktree.
pub(crate) fn pushed_claimed_clone<'a>(env: &'a TestEnv, name: &str) -> Repo<'a> {
    use crate::support::STORY_BRANCH as BRANCH;
    let repo = env.claimed_clone(name);
    for n in 1..=3 {
        repo.commit_file(&format!("f{n}.rs"), "x\n", &format!("feat: part {n}"));
    }
    repo.git_as_instance(&["push", "--quiet", "-u", "origin", BRANCH], &[]);
    repo.git(&["switch", "--quiet", "main"]);
    repo
}

#[test]
fn resume_rebuilds_a_worktree_whose_add_was_killed() {
    use crate::support::STORY_BRANCH as BRANCH;
    let env = TestEnv::new();
    let a = pushed_claimed_clone(&env, "a");

    // Killed right after `git worktree add` (the failpoint); then the state
    // a kill inside git's own checkout leaves.
    crash_at(&a, "resume-after-worktree-add", &["resume", BRANCH]);
    let worktree = a.dir.join(".maverick/worktrees/maverick-142-parser");
    assert!(worktree.join(".git").is_file());
    half_make(&a, &worktree);

    let run = a.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    let json = run.json();
    assert_eq!(json["worktree_state"], "repaired", "{json}");
    let aside = json["moved_aside"].as_str().expect("moved aside");
    assert!(std::path::Path::new(aside).exists(), "{aside}");
    let wt = a.at(&worktree);
    assert_eq!(wt.git(&["status", "--porcelain"]).trim(), "", "clean");
    assert!(worktree.join("f3.rs").is_file());
    assert_eq!(wt.git(&["branch", "--show-current"]).trim(), BRANCH);
    let listing = wt.git(&["worktree", "list", "--porcelain"]);
    let locks: Vec<&str> = listing
        .lines()
        .filter(|l| l.starts_with("locked"))
        .collect();
    assert_eq!(
        locks,
        [format!(
            "locked moved aside by git maverick resume from {}; see MAVERICK-MOVED-ASIDE.txt",
            worktree.display()
        )],
        "only the moved-aside one is locked, with where it came from: {listing}"
    );

    // The moved-aside worktree can no longer commit to the branch: it is
    // detached, a commit there moves no branch, and a plain push pushes
    // nothing (issue 39, item 2).
    let aside = a.at(aside);
    assert_eq!(aside.git(&["branch", "--show-current"]).trim(), "");
    let note = std::fs::read_to_string(aside.dir.join("MAVERICK-MOVED-ASIDE.txt")).unwrap();
    assert!(
        note.contains(&format!("worktree of {BRANCH} at {}", worktree.display())),
        "{note}"
    );
    assert!(note.contains("To get files back"), "{note}");
    let branch_head = a.git(&["rev-parse", &format!("refs/heads/{BRANCH}")]);
    // (The killed checkout's index.lock went aside with it; git names it.)
    let lock = index_lock(&aside);
    std::fs::remove_file(lock.trim()).unwrap();
    aside.git(&[
        "commit",
        "--quiet",
        "--allow-empty",
        "-m",
        "feat: from aside",
    ]);
    assert_eq!(
        a.git(&["rev-parse", &format!("refs/heads/{BRANCH}")]),
        branch_head
    );
    assert_eq!(wt.git(&["rev-parse", "HEAD"]), branch_head);
    assert!(!aside
        .git_output(&["push", "--quiet", "origin"])
        .status
        .success());
    assert_eq!(env.origin_head(BRANCH), Some(branch_head.trim().to_owned()));

    // Its directory deleted while git's lock is on it: repaired too.
    a.git(&[
        "worktree",
        "lock",
        "--reason",
        "initializing",
        worktree.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&worktree).unwrap();
    let run = a.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    assert_eq!(run.json()["worktree_state"], "repaired", "{}", run.screen());
    assert_eq!(a.at(&worktree).git(&["status", "--porcelain"]).trim(), "");
}

#[test]
fn task_done_refuses_a_commit_that_deletes_most_of_the_tree() {
    use crate::support::STORY_BRANCH as BRANCH;
    let env = TestEnv::new();
    let a = env.story_clone("a", "feat: one\nfeat: two\n");
    for n in 1..=3 {
        a.commit_file(&format!("f{n}.rs"), "x\n", &format!("feat: part {n}"));
    }
    let head = a.git(&["rev-parse", "HEAD"]);
    // An index that lost every file (a half-made worktree's).
    a.git(&["read-tree", "--empty"]);
    let run = a.maverick(&["task", "done"]);
    insta::assert_snapshot!("task_done_of_a_mass_delete", screen(&env, &run));
    assert_eq!(a.git(&["rev-parse", "HEAD"]), head, "nothing committed");
    assert_eq!(env.origin_head(BRANCH), None, "nothing pushed");

    // Deleting a few files is a task like any other; most of them, when
    // meant, says so.
    a.git(&["reset", "--quiet"]);
    a.git(&["rm", "--quiet", "f1.rs"]);
    a.maverick(&["task", "done"]).expect(0);
    a.git(&["rm", "--quiet", "-r", "."]);
    a.maverick(&["task", "done"]).expect(1);
    a.maverick(&["task", "done", "--allow-mass-delete"])
        .expect(0);
    assert_eq!(env.origin_head(BRANCH), Some(a.git(&["rev-parse", "HEAD"])));
}

// -- A push the remote took before its tracking ref was written --------------

/// `task done` killed after the remote took its push but before git wrote
/// the remote-tracking ref: the remote's head is the commit this writer
/// was pushing, its own push, and the next `task done` builds on it.
#[test]
fn a_push_killed_after_the_remote_took_it_is_the_writer_s_own() {
    use crate::support::STORY_BRANCH as BRANCH;
    let env = TestEnv::new();
    let a = env.story_clone("a", "feat: one\nfeat: two\nfeat: three\n");
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    a.write_file("f1.rs", "x\n");
    a.git(&["add", "f1.rs"]);
    a.maverick(&["task", "done"]).expect(0);

    // Killed as its push left (the failpoint), then the push lands as git
    // would have sent it: by URL, so no remote-tracking ref moves.
    a.write_file("f2.rs", "x\n");
    a.git(&["add", "f2.rs"]);
    crash_at(&a, "push-before-remote", &["task", "done"]);
    let pushed = a.git(&["rev-parse", "HEAD"]);
    a.git(&[
        "push",
        "--quiet",
        "--no-verify",
        env.origin.to_str().unwrap(),
        &format!("HEAD:refs/heads/{BRANCH}"),
    ]);
    assert_eq!(env.origin_head(BRANCH), Some(pushed.clone()));

    a.write_file("f3.rs", "x\n");
    a.git(&["add", "f3.rs"]);
    let run = a.maverick(&["--json", "task", "done"]);
    run.expect(0);
    assert_eq!(run.json()["task"], 3, "{}", run.screen());
    assert_eq!(env.origin_head(BRANCH), Some(a.git(&["rev-parse", "HEAD"])));
    let list = a.maverick(&["--json", "task", "list", "142"]).json();
    let done: Vec<bool> = list["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["done"].as_bool().unwrap())
        .collect();
    assert_eq!(done, [true, true, true], "{list}");
}

// -- A resumed session's SessionEnd while the first release still runs --------

/// The first SessionEnd's release waits on GitHub (as one that retries
/// does); the session is resumed (same id, same instance) and claims #151;
/// its own SessionEnd finds the release running and leaves the work to it.
/// That release, once done with #150, reads the claims again and releases
/// #151 too (issue 39, item 6).
#[test]
fn a_resumed_session_s_claim_is_released_by_the_running_release() {
    use crate::agent_hooks::{run_hook, wait_for_session_release, wait_until, INSTANCE};
    let env = TestEnv::with_surface(Surface::Github);
    let repo = env.clone("agent");
    repo.maverick_as(INSTANCE, &["coord", "claim", "150"])
        .expect(0);
    let hold = env
        .github()
        .hold_answer(|r| r.method != "GET" && r.path.contains("/issues/150/"));
    run_hook(&repo, "session-end", |_| {}, &[]).expect(0);
    hold.wait_until_holding();

    repo.maverick_as(INSTANCE, &["coord", "claim", "151"])
        .expect(0);
    let second = run_hook(&repo, "session-end", |_| {}, &[]);
    second.expect(0);
    assert!(
        second.stderr.contains("already running"),
        "{}",
        second.stderr
    );

    hold.release();
    wait_until("the release of #151", || !env.releases(151).is_empty());
    wait_for_session_release(&repo, INSTANCE);
    env.assert_released_once(150, INSTANCE, "abort");
    env.assert_released_once(151, INSTANCE, "abort");
    let read = repo.maverick_as("someone-else", &["--json", "coord", "read", "151"]);
    assert_eq!(read.expect(0).json()["decision"], "free");
}

// -- A read that meets the conversion of the old layout ----------------------

/// carol's read looks at the remote while it holds the old single-ref
/// layout; another clone converts it before her fetch (an upload-pack that
/// lets the conversion in between her two calls): the tombstone has no
/// parent, so the old commit comes from the archive, and the read answers
/// as of its look instead of calling the state damaged (issue 39, item 7).
#[test]
fn a_read_whose_fetch_lands_just_after_the_conversion_answers() {
    let env = TestEnv::new();
    // Cloned before the old layout was written: a clone of a local path
    // links every object the origin has.
    let carol = env.clone("carol");
    let old = crate::git_surface::old_layout(&env);
    // The conversion, made on a copy of the origin by a new binary's write.
    let converted = env.path().join("converted.git");
    env.git_in(
        env.path(),
        &[
            "clone",
            "--quiet",
            "--mirror",
            env.origin.to_str().unwrap(),
            converted.to_str().unwrap(),
        ],
    );
    let bob = env.clone("bob");
    bob.git(&["remote", "set-url", "origin", converted.to_str().unwrap()]);
    bob.maverick(&["coord", "claim", "9"]).expect(0);
    let tombstone = env.git_in(&converted, &["rev-parse", "refs/maverick/issues"]);
    assert_ne!(tombstone, old);

    // carol's second call on the remote (her fetch, after her look) finds
    // the conversion landed.
    let count = env.path().join("upload-pack-calls");
    let script = env.path().join("upload-pack");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nn=$(($(cat '{count}' 2>/dev/null || echo 0) + 1))\necho $n > '{count}'\n\
             if [ $n = 2 ]; then git -C '{converted}' push --quiet --force '{origin}' \
             'refs/maverick/*:refs/maverick/*' || exit 1; fi\nexec git-upload-pack \"$@\"\n",
            count = count.display(),
            converted = converted.display(),
            origin = env.origin.display(),
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    carol.git(&[
        "config",
        "remote.origin.uploadpack",
        script.to_str().unwrap(),
    ]);
    let read = carol.maverick(&["--json", "coord", "read", "7"]);
    assert_eq!(
        std::fs::read_to_string(&count).unwrap().trim(),
        "2",
        "look, then fetch"
    );
    assert_eq!(
        env.git_in(&env.origin, &["rev-parse", "refs/maverick/issues"]),
        tombstone,
        "the conversion landed between the look and the fetch"
    );
    read.expect(4);
    assert_eq!(
        read.json()["holder"]["instance_id"],
        "alice",
        "{}",
        read.screen()
    );
    // Read again, from a new look: the converted state says the same.
    let read = carol.maverick(&["--json", "coord", "read", "7"]);
    read.expect(4);
    assert_eq!(read.json()["holder"]["instance_id"], "alice");
}
