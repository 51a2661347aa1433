//! One writer per branch in the setups users have (issue 11): the writer's
//! own plain pushes, every spelling of the remote, branch names as typed,
//! damaged records, rewinds, and paths that lead out of the repository.
//! Each case on its own bare origin, with the real binary and real pushes.

use std::process::Output;

use crate::support::screen::{git_screen, screen};
use crate::support::{allowed, refused_as_collision as refused, Repo, RepoKind, TestEnv};

// The writer's own pushes and the hook's reads of refs and records go
// through the ref backend and the object format: every kind of repository.
on_every_repo_kind!(
    claim_plain_push_without_hook_then_task_done,
    claim_push_hook_install_push,
    pushes_by_url_in_a_row_see_their_own_push,
    a_push_by_someone_else_is_still_a_collision_for_task_done,
    a_rewind_after_a_plain_push_is_a_moved_head,
    a_rewind_after_a_push_without_the_hook_is_a_moved_head,
    a_push_through_a_second_remote_sees_a_push_through_the_first,
);

/// `on_one_repo_kind!(Kind: scenario, ...)`: each scenario as
/// `scenario::kind`, in that kind of repository only.
macro_rules! on_one_repo_kind {
    ($($kind:ident: $($name:ident),+;)+) => {
        $($(
            mod $name {
                #[test]
                #[allow(non_snake_case)]
                fn $kind() {
                    super::$name(crate::support::RepoKind::$kind)
                }
            }
        )+)+
    };
}

// How the remote is spelled, which branch a claim names, a record file
// that is damaged, a worktree's path: decided before any ref or object is
// read, the same in every kind of repository (the kinds above prove the
// reads). One kind each, the three in turn, so each still runs them all.
on_one_repo_kind!(
    Files:
        a_force_push_to_the_file_url_is_checked,
        a_force_push_to_a_relative_path_is_checked,
        an_ssh_push_to_an_https_origin_is_checked,
        a_claim_of_refs_heads_guards_the_branch,
        a_record_whose_id_leads_out_is_damaged_and_nothing_is_written_outside;
    Reftable:
        a_force_push_to_the_path_with_a_trailing_slash_is_checked,
        a_push_to_another_repository_stays_unchecked,
        a_damaged_record_of_another_issue_stops_nothing_else;
    Sha256:
        a_force_push_through_another_remote_name_is_checked,
        a_damaged_record_of_this_branch_says_it_is_safe_to_remove,
        resume_refuses_a_tracked_worktrees_symlink;
);

const ISSUE: &str = "12";
const BRANCH: &str = "maverick/12-t";

fn push(repo: &Repo, args: &[&str]) -> Output {
    crate::support::push(repo, &[&["--quiet"], args].concat())
}

/// A clone that claimed the issue for BRANCH and has it checked out, with
/// one task in the tasks comment; no hook.
fn writer<'a>(env: &'a TestEnv, name: &str) -> Repo<'a> {
    let repo = env.clone(name);
    repo.maverick(&["coord", "claim", ISSUE, "--branch", BRANCH])
        .expect(0);
    repo.git(&["switch", "--quiet", "-c", BRANCH]);
    let tasks = env.path().join(format!("{name}-tasks.md"));
    std::fs::write(&tasks, "Write the parser\nTest the parser\n").unwrap();
    repo.maverick(&["task", "init", ISSUE, tasks.to_str().unwrap()])
        .expect(0);
    repo
}

fn stage(repo: &Repo, path: &str, content: &str) {
    repo.write_file(path, content);
    repo.git(&["add", path]);
}

// Item 1: a push this clone made is seen, with or without the hook.

fn claim_plain_push_without_hook_then_task_done(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = writer(&env, "a");
    let early = a.commit_file("draft.md", "draft\n", "docs: draft");
    // To open a draft PR early, before any hook is installed.
    allowed(&push(&a, &["-u", "origin", BRANCH]));
    stage(&a, "parser.rs", "fn parse() {}\n");
    let run = a.maverick(&["task", "done", "-m", "feat: parser"]);
    insta::assert_snapshot!("task_done_after_a_plain_push", screen(&env, &run));
    let head = a.git(&["rev-parse", "HEAD"]);
    assert_eq!(env.origin_head(BRANCH).as_deref(), Some(head.as_str()));
    assert_ne!(head, early);
    // And resume agrees: nothing is ahead, nothing is refused.
    let resume = a.maverick(&["resume", BRANCH]);
    insta::assert_snapshot!("resume_after_a_plain_push", screen(&env, &resume));
}

fn claim_push_hook_install_push(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = writer(&env, "a");
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["-u", "origin", BRANCH]));
    a.maverick(&["hook", "install"]).expect(0);
    let two = a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &["origin", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(two));
    // The hook's own push is seen by task done too.
    stage(&a, "three.rs", "3\n");
    a.maverick(&["task", "done", "-m", "feat: three"]).expect(0);
}

/// A push to the origin's URL moves no remote-tracking ref, so only the
/// hook's own record (the commit it let through, appended on each push)
/// says the next head is this clone's.
fn pushes_by_url_in_a_row_see_their_own_push(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = writer(&env, "a");
    a.maverick(&["hook", "install"]).expect(0);
    let url = format!("file://{}", env.origin.display());
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &[&url, BRANCH]));
    let two = a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &[&url, BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(two));
    stage(&a, "three.rs", "3\n");
    a.maverick(&["task", "done", "-m", "feat: three"]).expect(0);
}

fn a_push_by_someone_else_is_still_a_collision_for_task_done(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = writer(&env, "a");
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["-u", "origin", BRANCH]));
    let b = env.clone("b");
    b.git(&["switch", "--quiet", BRANCH]);
    b.commit_file("theirs.rs", "b\n", "feat: theirs");
    allowed(&push(&b, &["origin", BRANCH]));
    a.git(&["fetch", "--quiet", "origin"]);
    a.git(&["rebase", "--quiet", &format!("origin/{BRANCH}")]);
    stage(&a, "two.rs", "2\n");
    let run = a.maverick(&["task", "done", "-m", "feat: two"]);
    insta::assert_snapshot!("task_done_on_someone_elses_push", screen(&env, &run));
}

// Item 7: after a plain push, its head is last seen; a rewind is a moved head.

fn a_rewind_after_a_plain_push_is_a_moved_head(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = writer(&env, "a");
    a.maverick(&["hook", "install"]).expect(0);
    let l0 = a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["-u", "origin", BRANCH]));
    a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &["origin", BRANCH]));
    // Someone else puts the branch back where it was.
    let b = env.clone("b");
    b.git(&[
        "push",
        "--quiet",
        "--force",
        "origin",
        &format!("{l0}:refs/heads/{BRANCH}"),
    ]);
    assert_eq!(env.origin_head(BRANCH).as_deref(), Some(l0.as_str()));
    a.commit_file("three.rs", "3\n", "feat: three");
    let out = push(&a, &["origin", BRANCH]);
    refused(&out);
    insta::assert_snapshot!("a_push_after_a_rewind", git_screen(&env, &out));
    assert_eq!(env.origin_head(BRANCH), Some(l0.clone()));
    // task done refuses the same case, exit 8.
    stage(&a, "four.rs", "4\n");
    let run = a.maverick(&["task", "done", "-m", "feat: four"]);
    insta::assert_snapshot!("task_done_after_a_rewind", screen(&env, &run));
    assert_eq!(env.origin_head(BRANCH), Some(l0));
}

fn a_rewind_after_a_push_without_the_hook_is_a_moved_head(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = writer(&env, "a");
    let l0 = a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["-u", "origin", BRANCH]));
    a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &["origin", BRANCH]));
    let b = env.clone("b");
    b.git(&[
        "push",
        "--quiet",
        "--force",
        "origin",
        &format!("{l0}:refs/heads/{BRANCH}"),
    ]);
    a.maverick(&["hook", "install"]).expect(0);
    a.commit_file("three.rs", "3\n", "feat: three");
    let out = push(&a, &["origin", BRANCH]);
    refused(&out);
    insta::assert_snapshot!(
        "a_push_after_a_rewind_the_hook_did_not_see",
        git_screen(&env, &out)
    );
    assert_eq!(env.origin_head(BRANCH), Some(l0));
}

// Item 4: the destination however spelled.

/// A holder with the hook whose branch is on origin, and a commit that
/// rewrites it, ready to be force-pushed.
fn rewriter<'a>(env: &'a TestEnv) -> (Repo<'a>, String) {
    let a = writer(env, "a");
    a.maverick(&["hook", "install"]).expect(0);
    a.commit_file("one.rs", "1\n", "feat: one");
    let pushed = a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &["-u", "origin", BRANCH]));
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    (a, pushed)
}

/// The force push is refused; `name` is its snapshot's (git names the
/// destination as it was spelled).
#[track_caller]
fn force_to(env: &TestEnv, a: &Repo, destination: &str, pushed: &str, name: &str) {
    let out = push(a, &["--force", destination, BRANCH]);
    refused(&out);
    insta::assert_snapshot!(name, git_screen(env, &out));
    assert_eq!(env.origin_head(BRANCH).as_deref(), Some(pushed));
}

fn a_force_push_to_the_file_url_is_checked(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let (a, pushed) = rewriter(&env);
    force_to(
        &env,
        &a,
        &format!("file://{}", env.origin.display()),
        &pushed,
        "a_force_push_to_the_file_url",
    );
}

fn a_force_push_to_the_path_with_a_trailing_slash_is_checked(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let (a, pushed) = rewriter(&env);
    let slash = format!("{}/", env.origin.display());
    force_to(
        &env,
        &a,
        &slash,
        &pushed,
        "a_force_push_to_the_path_with_a_slash",
    );
}

fn a_force_push_to_a_relative_path_is_checked(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let (a, pushed) = rewriter(&env);
    force_to(
        &env,
        &a,
        "../origin.git",
        &pushed,
        "a_force_push_to_a_relative_path",
    );
    force_to(
        &env,
        &a,
        "../origin",
        &pushed,
        "a_force_push_to_a_relative_path_without_git",
    );
}

fn a_force_push_through_another_remote_name_is_checked(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let (a, pushed) = rewriter(&env);
    a.git(&[
        "remote",
        "add",
        "upstream",
        &format!("file://{}/", env.origin.display()),
    ]);
    force_to(
        &env,
        &a,
        "upstream",
        &pushed,
        "a_force_push_through_another_remote",
    );
}

fn an_ssh_push_to_an_https_origin_is_checked(kind: RepoKind) {
    // The real pushes above reach a local origin; ssh and https are told
    // apart only by what git hands the hook, so this feeds it those.
    let env = TestEnv::with_repo_kind(kind);
    let (a, pushed) = rewriter(&env);
    let base = a.git(&["rev-parse", "HEAD"]);
    // The origin moved to GitHub since the claim; a second remote names it by ssh.
    a.git(&[
        "remote",
        "set-url",
        "origin",
        "https://github.com/acme/widgets.git",
    ]);
    let line = format!("refs/heads/{BRANCH} {base} refs/heads/{BRANCH} {pushed}\n");
    let hook = |remote: &str, url: &str| {
        let mut cmd = a.maverick_command(&["hook", "pre-push", remote, url]);
        cmd.env("MAVERICK_INSTANCE", &a.instance)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(line.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    for (remote, url) in [
        ("gh", "git@github.com:acme/widgets.git"),
        ("gh", "ssh://git@github.com/acme/widgets"),
        ("origin", "https://github.com/acme/widgets/"),
    ] {
        let out = hook(remote, url);
        // The same refusal, whichever spelling of the URL; the remote as named.
        insta::assert_snapshot!(
            format!("a_force_push_by_another_url_of_github_through_{remote}"),
            git_screen(&env, &out)
        );
    }
    // Another repository on the same host is not maverick's business.
    assert_eq!(
        hook("fork", "git@github.com:someone/widgets.git")
            .status
            .code(),
        Some(0)
    );
}

/// Issue 42: the hook starts its read of the reflogs before it reads the
/// branch's record, guessing the record watches only the remote pushed
/// to. Here it watches `origin` and the push goes through `upstream` (the
/// same repository): the guess is not the read the check needs, and the
/// check reads `origin`'s reflog too, where a push made without the hook
/// moved the head. A check that used the guess would refuse this push as
/// a moved head.
fn a_push_through_a_second_remote_sees_a_push_through_the_first(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = writer(&env, "a");
    a.maverick(&["hook", "install"]).expect(0);
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["-u", "origin", BRANCH]));
    a.git(&[
        "remote",
        "add",
        "upstream",
        &format!("file://{}/", env.origin.display()),
    ]);
    a.git(&["fetch", "--quiet", "upstream"]);
    a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &["--no-verify", "origin", BRANCH]));
    let head = a.commit_file("three.rs", "3\n", "feat: three");
    allowed(&push(&a, &["upstream", BRANCH]));
    assert_eq!(env.origin_head(BRANCH), Some(head));
}

fn a_push_to_another_repository_stays_unchecked(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let (a, _) = rewriter(&env);
    env.bare_repo("mirror.git");
    allowed(&push(&a, &["--force", "../mirror.git", BRANCH]));
}

// Item 5: branch names normalised and validated where they enter.

fn a_claim_of_refs_heads_guards_the_branch(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.clone("a");
    let run = a.maverick(&[
        "--json",
        "coord",
        "claim",
        "8",
        "--branch",
        "refs/heads/maverick/8-y",
    ]);
    run.expect(0).json();
    insta::assert_snapshot!("claim_json_of_a_branch_given_as_a_ref", screen(&env, &run));
    a.maverick(&["hook", "install"]).expect(0);
    a.git(&["switch", "--quiet", "-c", "maverick/8-y"]);
    a.commit_file("one.rs", "1\n", "feat: one");
    let pushed = a.commit_file("two.rs", "2\n", "feat: two");
    allowed(&push(&a, &["-u", "origin", "maverick/8-y"]));
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    let out = push(&a, &["--force", "origin", "maverick/8-y"]);
    insta::assert_snapshot!(
        "a_force_push_of_a_branch_claimed_as_a_ref",
        git_screen(&env, &out)
    );
    assert_eq!(env.origin_head("maverick/8-y"), Some(pushed));
    let record = std::fs::read_to_string(claim_dir(&a).join("a/8.json")).unwrap();
    assert!(record.contains("\"branch\": \"maverick/8-y\""), "{record}");
}

#[test]
fn bad_branch_names_are_refused_where_they_enter() {
    let env = TestEnv::new();
    let a = env.clone("a");
    let mut screens = Vec::new();
    for bad in [
        "maverick/8-y.lock",
        "HEAD",
        "a b",
        "a..b",
        "x@{-1}",
        "refs/heads/",
    ] {
        for args in [
            vec!["coord", "claim", "8", "--branch", bad],
            vec!["run", "8", "--branch", bad, "--", "true"],
            vec!["resume", bad, "--issue", "8"],
        ] {
            let run = a.maverick(&args);
            screens.push(format!("$ git maverick {args:?}\n{}", screen(&env, &run)));
        }
    }
    insta::assert_snapshot!("bad_branch_names", screens.join("\n"));
    // Nothing was claimed.
    assert_eq!(env.write_count(), 0);
}

// Item 6: a damaged record stops only the branch it names.

fn claim_dir(repo: &Repo) -> std::path::PathBuf {
    let common = repo.git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]);
    std::path::Path::new(&common).join("maverick/claims")
}

fn a_damaged_record_of_another_issue_stops_nothing_else(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let (a, _) = rewriter(&env);
    let damaged = claim_dir(&a).join("someone").join("99.json");
    std::fs::create_dir_all(damaged.parent().unwrap()).unwrap();
    std::fs::write(
        &damaged,
        "{\"issue\": 99, \"branch\": \"maverick/99-other\", \"gen",
    )
    .unwrap();
    // main is not managed: pushed untouched.
    a.git(&["switch", "--quiet", "main"]);
    a.commit_file("readme.md", "x\n", "docs: readme");
    allowed(&push(&a, &["origin", "main"]));
    // The claimed branch is still checked.
    a.git(&["switch", "--quiet", BRANCH]);
    let out = push(&a, &["--force", "origin", BRANCH]);
    refused(&out);
    insta::assert_snapshot!(
        "a_force_push_beside_a_damaged_record",
        git_screen(&env, &out)
    );
}

fn a_damaged_record_of_this_branch_says_it_is_safe_to_remove(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let (a, pushed) = rewriter(&env);
    let mine = claim_dir(&a).join("a").join(format!("{ISSUE}.json"));
    std::fs::write(&mine, "{ truncated").unwrap();
    let out = push(&a, &["--force", "origin", BRANCH]);
    insta::assert_snapshot!("a_push_with_a_damaged_record", git_screen(&env, &out));
    assert_eq!(env.origin_head(BRANCH), Some(pushed));
    // Another branch pushes fine meanwhile.
    a.git(&["switch", "--quiet", "-c", "feature/x"]);
    allowed(&push(&a, &["origin", "feature/x"]));
}

/// Every file under `dir` named `name`, relative to `dir`.
fn files_named(dir: &std::path::Path, name: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                todo.push(path);
            } else if entry.file_name() == name {
                found.push(path.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    found.sort();
    found
}

/// A hand-edited record whose instance id is `../../x`: every command that
/// would rewrite it (a heartbeat) or trust it (the hook) says it is damaged
/// and how to remove it, and no record appears outside the claims.
fn a_record_whose_id_leads_out_is_damaged_and_nothing_is_written_outside(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = writer(&env, "a");
    a.maverick(&["hook", "install"]).expect(0);
    let mine = claim_dir(&a).join("a").join(format!("{ISSUE}.json"));
    let text = std::fs::read_to_string(&mine).unwrap();
    let edited = text.replace("\"instance_id\": \"a\"", "\"instance_id\": \"../../x\"");
    assert_ne!(edited, text);
    std::fs::write(&mine, &edited).unwrap();
    let record = format!("{ISSUE}.json");
    let before = files_named(env.path(), &record);
    assert_eq!(before, [format!("a/.git/maverick/claims/a/{record}")]);

    let heartbeat = a.maverick(&["coord", "heartbeat", ISSUE]);
    a.commit_file("one.rs", "1\n", "feat: one");
    let out = push(&a, &["-u", "origin", BRANCH]);
    insta::assert_snapshot!(
        "a_record_whose_id_leads_out",
        format!(
            "$ git maverick coord heartbeat {ISSUE}\n{}\n$ git push -u origin {BRANCH}\n{}",
            screen(&env, &heartbeat),
            git_screen(&env, &out)
        )
    );
    assert_eq!(env.origin_head(BRANCH), None);
    assert_eq!(files_named(env.path(), &record), before);
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), edited);
}

// Item 8: resume and hydrate never write outside the repository.

/// Someone commits `link -> ../outside` on main; `a` pulls it.
fn tracked_symlink(env: &TestEnv, a: &Repo, link: &str) -> std::path::PathBuf {
    let outside = env.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let b = env.clone("b");
    let full = b.dir.join(link);
    std::fs::create_dir_all(full.parent().unwrap()).unwrap();
    let depth = link.matches('/').count() + 1;
    let target = format!("{}outside", "../".repeat(depth));
    std::os::unix::fs::symlink(&target, &full).unwrap();
    b.git(&["add", link]);
    b.git(&["commit", "--quiet", "-m", "chore: a link"]);
    b.git(&["push", "--quiet", "origin", "main"]);
    a.git(&["switch", "--quiet", "main"]);
    a.git(&["pull", "--quiet", "--ff-only", "origin", "main"]);
    assert!(std::fs::symlink_metadata(a.dir.join(link))
        .unwrap()
        .file_type()
        .is_symlink());
    outside
}

fn resume_refuses_a_tracked_worktrees_symlink(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = writer(&env, "a");
    a.commit_file("one.rs", "1\n", "feat: one");
    allowed(&push(&a, &["-u", "origin", BRANCH]));
    let outside = tracked_symlink(&env, &a, ".maverick/worktrees");
    a.git(&["branch", "--quiet", "-D", BRANCH]);
    let run = a.maverick(&["resume", BRANCH]);
    insta::assert_snapshot!(
        "resume_with_a_tracked_worktrees_symlink",
        screen(&env, &run)
    );
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn hydrate_refuses_a_tracked_claude_symlink() {
    let env = TestEnv::new();
    let a = writer(&env, "a");
    let outside = tracked_symlink(&env, &a, ".claude");
    let run = a.maverick(&["hydrate", ISSUE]);
    insta::assert_snapshot!("hydrate_with_a_tracked_claude_symlink", screen(&env, &run));
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

/// Issue 39, item 5: with a branch whose name is not UTF-8 checked out (and
/// pushed, so a remote-tracking ref has that name too), `coord claim` and
/// `status` answer as anywhere else; `task done` says why it does not push
/// such a branch, and commits nothing.
#[test]
fn commands_on_a_branch_whose_name_is_not_utf8() {
    use std::os::unix::ffi::OsStrExt as _;
    let env = TestEnv::new();
    let a = env.clone("a");
    let odd = std::ffi::OsStr::from_bytes(b"odd-\xff-name");
    let git = |args: &[&std::ffi::OsStr]| {
        let mut cmd = crate::support::git_command();
        cmd.args(args).current_dir(&a.dir);
        env.apply_env(&mut cmd);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    git(&["switch".as_ref(), "--quiet".as_ref(), "-c".as_ref(), odd]);
    a.commit_file("one.rs", "1\n", "feat: one");
    git(&["push".as_ref(), "--quiet".as_ref(), "origin".as_ref(), odd]);
    a.maverick(&["coord", "claim", "142"]).expect(0);
    let status = a.maverick(&["status"]);
    status.expect(0);
    assert!(
        status
            .stdout
            .lines()
            .any(|l| l.trim_start().starts_with("#142 ")),
        "{}",
        status.stdout
    );
    a.write_file("two.rs", "2\n");
    a.git(&["add", "two.rs"]);
    let head = a.git(&["rev-parse", "HEAD"]);
    let run = a.maverick(&["task", "done", "--issue", "142", "-m", "feat: two"]);
    insta::assert_snapshot!(
        "task_done_on_a_branch_whose_name_is_not_utf8",
        screen(&env, &run)
    );
    assert_eq!(a.git(&["rev-parse", "HEAD"]), head);
    assert_eq!(a.git(&["diff", "--cached", "--name-only"]), "two.rs");
}
