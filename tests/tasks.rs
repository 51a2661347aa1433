//! Push-per-task end to end: the real binary, real git, a bare origin, and
//! the surface the harness gives (`on_both_surfaces!`).

use crate::support::screen::{screen, screen_naming};
use crate::support::{Repo, Surface, TestEnv};
use serde_json::Value;

use crate::support::{STORY, STORY_BRANCH as BRANCH};

const THREE_TASKS: &str = "\
Parse marker blocks — fenced JSON in comments
Upsert markers in place — PATCH the newest of a kind
Verify after writing
";

/// Another machine: a clone that follows the story's branch on origin.
fn join_story<'a>(s: &'a TestEnv, name: &str) -> Repo<'a> {
    let repo = s.clone(name);
    repo.git(&["switch", "--quiet", BRANCH]);
    repo
}

fn stage(repo: &Repo<'_>, path: &str, content: &str) {
    repo.write_file(path, content);
    repo.git(&["add", path]);
}

fn tasks_body(s: &TestEnv) -> String {
    s.comment_starting_with(STORY, "## Tasks")
        .expect("the story has a tasks comment")
        .body
}

/// `(checked, sha)` of each task line of the tasks comment.
fn marks(body: &str) -> Vec<(bool, Option<String>)> {
    crate::support::mav::tasks::parse_tasks(body)
        .into_iter()
        .map(|t| (t.done, t.sha))
        .collect()
}

/// The commits of the branch on origin beyond main, oldest first:
/// `(sha, subject, Maverick-Issue, Maverick-Task)`.
fn remote_commits(s: &TestEnv) -> Vec<(String, String, String, String)> {
    let exists = s.git_output_in(&s.origin, &["rev-parse", "--verify", "--quiet", BRANCH]);
    if !exists.status.success() {
        return Vec::new();
    }
    let out = s.git_in(
        &s.origin,
        &[
            "log",
            "--reverse",
            "--format=%H%x1f%s%x1f%(trailers:key=Maverick-Issue,valueonly)%x1f%(trailers:key=Maverick-Task,valueonly)%x1e",
            &format!("main..{BRANCH}"),
        ],
    );
    out.split('\x1e')
        .map(|r| r.trim())
        .filter(|r| !r.is_empty())
        .map(|r| {
            let f: Vec<&str> = r.split('\x1f').map(str::trim).collect();
            (
                f[0].to_owned(),
                f[1].to_owned(),
                f[2].to_owned(),
                f[3].to_owned(),
            )
        })
        .collect()
}

fn three_tasks_done_in_a_row(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", THREE_TASKS);
    for (n, subject) in [
        "feat(markers): parse blocks",
        "feat(markers): upsert in place",
        "test(markers): verify after writing",
    ]
    .iter()
    .enumerate()
    {
        stage(
            &a,
            &format!("src/step{}.rs", n + 1),
            &format!("// step {}\n", n + 1),
        );
        let run = a.maverick(&["task", "done", "-m", subject]);
        insta::assert_snapshot!(format!("three_tasks_done_{}", n + 1), screen(s, &run));
    }
    let commits = remote_commits(s);
    assert_eq!(
        commits.len(),
        3,
        "three commits on the remote branch: {commits:?}"
    );
    for (i, (sha, subject, issue, task)) in commits.iter().enumerate() {
        assert_eq!(issue, "142", "{subject}");
        assert_eq!(task, &(i + 1).to_string(), "{subject}");
        let (checked, mark) = &marks(&tasks_body(s))[i];
        assert!(checked, "task {} is checked", i + 1);
        let mark = mark.as_deref().expect("the check mark names the commit");
        assert!(sha.starts_with(mark), "task {}: {mark} is not {sha}", i + 1);
    }
    assert_eq!(
        a.git(&["rev-parse", "HEAD"]),
        commits[2].0,
        "the local branch is what was pushed"
    );

    let list = a.maverick(&["task", "list"]);
    insta::assert_snapshot!("three_tasks_done_list", screen(s, &list));
    let list = a.maverick(&["--json", "task", "list", "142"]);
    let json = list.json();
    assert_eq!(json["done"], 3);
    assert_eq!(json["next_task"], Value::Null);
    insta::assert_snapshot!("three_tasks_done_list_json", screen(s, &list));

    let progress = a.maverick(&["--json", "state", "get", "task-progress", "142"]);
    let json = progress.json();
    assert_eq!(json["marker"]["task"], 3);
    // The marker's author and comment ids are the surface's own.
    insta::assert_snapshot!(
        format!("three_tasks_done_progress_json_{}", s.name()),
        screen(s, &progress)
    );
}

fn crash_between_push_and_comment_heals_on_another_machine(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", THREE_TASKS);
    stage(&a, "src/one.rs", "// one\n");
    a.maverick(&["task", "done", "-m", "feat: one"]).expect(0);
    // The crash: task 2 committed and pushed, the check-off never written.
    // (The push is a plain `git push` through the pre-push hook, which
    // records the pushed head as this writer's own, as maverick's push does.)
    a.maverick(&["hook", "install"]).expect(0);
    stage(&a, "src/two.rs", "// two\n");
    a.git(&[
        "commit",
        "--quiet",
        "-m",
        "feat: two",
        "--trailer",
        "Maverick-Issue: 142",
        "--trailer",
        "Maverick-Task: 2",
    ]);
    a.git(&["push", "--quiet", "origin", BRANCH]);
    let two = a.git(&["rev-parse", "HEAD"]);
    assert_eq!(marks(&tasks_body(s))[1], (false, None));

    let b = s.clone("beta");
    let list = b.maverick(&["task", "list", "142"]);
    list.expect(0);
    insta::assert_snapshot!(
        "a_list_that_heals_a_crash_after_the_push",
        screen_naming(s, &list, &[(&two[..7], "[two]")])
    );
    let (checked, mark) = marks(&tasks_body(s))[1].clone();
    assert!(checked);
    assert!(two.starts_with(&mark.unwrap()));

    // Once healed, nothing more to do; and the first machine carries on.
    let again = b.maverick(&["--json", "task", "list", "142"]).json();
    assert_eq!(again["reconciled"], serde_json::json!([]));
    assert_eq!(again["next_task"]["number"], 3);
    stage(&a, "src/three.rs", "// three\n");
    a.maverick(&["task", "done", "-m", "test: three"]).expect(0);
    assert!(marks(&tasks_body(s)).iter().all(|(c, _)| *c));
}

fn crash_before_push_leaves_the_next_machine_at_that_task(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", THREE_TASKS);
    stage(&a, "src/one.rs", "// one\n");
    a.maverick(&["task", "done", "-m", "feat: one"]).expect(0);
    // The crash: task 2 committed, never pushed.
    stage(&a, "src/two.rs", "// two, alpha's\n");
    a.git(&[
        "commit",
        "--quiet",
        "-m",
        "feat: two",
        "--trailer",
        "Maverick-Issue: 142",
        "--trailer",
        "Maverick-Task: 2",
    ]);

    let b = join_story(s, "beta");
    let json = b.maverick(&["--json", "task", "list"]).json();
    assert_eq!(json["done"], 1);
    assert_eq!(json["next_task"]["number"], 2);
    assert_eq!(
        json["ahead"],
        serde_json::json!([]),
        "nothing on the issue claims more than the remote has"
    );
    let remote = remote_commits(s);
    assert_eq!(remote.len(), 1);
    for (checked, mark) in marks(&tasks_body(s)) {
        if checked {
            assert!(remote
                .iter()
                .any(|c| c.0.starts_with(mark.as_deref().unwrap())));
        }
    }

    // The next machine does task 2 ...
    stage(&b, "src/two.rs", "// two, beta's\n");
    let run = b.maverick(&["task", "done", "-m", "feat: two again"]);
    insta::assert_snapshot!("task_two_done_by_the_next_machine", screen(s, &run));
    let beta_two = b.git(&["rev-parse", "HEAD"]);

    // ... and the first machine, back, must not overwrite it.
    let late = a.maverick(&["task", "done"]);
    late.expect(8);
    insta::assert_snapshot!("task_two_done_late_by_the_first_machine", screen(s, &late));
    assert_eq!(s.git_in(&s.origin, &["rev-parse", BRANCH]), beta_two);
    let (checked, mark) = marks(&tasks_body(s))[1].clone();
    assert!(checked);
    assert!(
        beta_two.starts_with(&mark.unwrap()),
        "task 2 keeps beta's commit"
    );
}

fn refuses_bad_messages_an_empty_index_and_tasks_out_of_range(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", THREE_TASKS);
    let head = a.git(&["rev-parse", "HEAD"]);

    let empty = a.maverick(&["task", "done", "-m", "feat: nothing"]);
    insta::assert_snapshot!("task_done_with_nothing_staged", screen(s, &empty));

    stage(&a, "src/x.rs", "// x\n");
    let mut screens = Vec::new();
    for bad in [
        "added the parser",
        "Feat: parser",
        "feat(): parser",
        "feat:parser",
        "feat: x\nno blank line",
    ] {
        let run = a.maverick(&["task", "done", "-m", bad]);
        screens.push(format!("-m {bad:?}\n{}", screen(s, &run)));
    }
    insta::assert_snapshot!("task_done_with_bad_messages", screens.join("\n"));
    // No -m and a title that is not a conventional message.
    let untitled = a.maverick(&["task", "done"]);
    insta::assert_snapshot!(
        "task_done_with_an_unconventional_title",
        screen(s, &untitled)
    );
    assert_eq!(a.git(&["rev-parse", "HEAD"]), head, "nothing was committed");

    let out_of_range = a.maverick(&["task", "done", "--task", "4", "-m", "feat: x"]);
    insta::assert_snapshot!("task_done_out_of_range", screen(s, &out_of_range));
    let zero = a.maverick(&["task", "check", "142", "0"]);
    insta::assert_snapshot!("task_check_zero", screen(s, &zero));
    let nine = a.maverick(&["task", "check", "142", "9"]);
    insta::assert_snapshot!("task_check_out_of_range", screen(s, &nine));
    assert_eq!(a.git(&["rev-parse", "HEAD"]), head);
    assert!(remote_commits(s).is_empty(), "nothing was pushed");

    // Which issue: the branch name, unless a flag disagrees; none on main.
    let disagree = a.maverick(&["task", "done", "--issue", "7", "-m", "feat: x"]);
    insta::assert_snapshot!("task_done_for_another_issue", screen(s, &disagree));
    let b = s.clone("beta");
    let nowhere = b.maverick(&["task", "list"]);
    insta::assert_snapshot!("task_list_on_main", screen(s, &nowhere));
    let none = b.maverick(&["task", "list", "143"]);
    insta::assert_snapshot!("task_list_without_a_tasks_comment", screen(s, &none));
    let no_tasks = s.input_file("empty.md", "\n\n");
    let init = b.maverick(&["task", "init", "143", &no_tasks]);
    insta::assert_snapshot!("task_init_with_no_tasks", screen(s, &init));

    // Init twice with the same tasks: nothing changes; with others: refused.
    let same = s.input_file("same.md", THREE_TASKS);
    b.maverick(&["task", "init", "142", &same]).expect(0);
    let other = s.input_file("other.md", "Something else\n");
    let refused = b.maverick(&["task", "init", "142", &other]);
    insta::assert_snapshot!("task_init_over_other_tasks", screen(s, &refused));
    assert_eq!(
        s.comments(STORY)
            .iter()
            .filter(|c| c.body.starts_with("## Tasks"))
            .count(),
        1
    );
}

fn parses_a_persons_edits_and_loses_no_check_mark(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", THREE_TASKS);
    let comment = s.comment_starting_with(STORY, "## Tasks").unwrap();
    let edited = "\
## Tasks

Plan agreed with @carol on Monday.

- [X] **Parse marker blocks** — done by hand before the tool
  - [ ] a sub-step the person added
  - a note, not a task
- [ ] **Upsert markers in place** — PATCH the newest of a kind
    ```
    - [ ] not a task: inside code
    ```
* [ ] **Verify after writing**

## Notes
- [ ] a checkbox outside the tasks section
";
    s.edit_comment(STORY, comment.id, edited);

    let json = a.maverick(&["--json", "task", "list"]).json();
    assert_eq!(json["total"], 3, "{json}");
    assert_eq!(json["done"], 1);
    assert_eq!(json["tasks"][0]["title"], "Parse marker blocks");
    assert_eq!(json["tasks"][2]["title"], "Verify after writing");
    assert_eq!(json["next_task"]["number"], 2);

    stage(&a, "src/two.rs", "// two\n");
    a.maverick(&["task", "done", "-m", "feat(markers): upsert in place"])
        .expect(0);
    let short = a.git(&["rev-parse", "--short", "HEAD"]);
    let expected = edited.replace(
        "- [ ] **Upsert markers in place** — PATCH the newest of a kind\n",
        &format!("- [x] **Upsert markers in place** — PATCH the newest of a kind (`{short}`)\n"),
    );
    assert_eq!(tasks_body(s), expected, "only task 2's line changed");

    // A check mark with a sha a person wrote is kept as it is.
    a.maverick(&["task", "check", "142", "2", "--sha", "abcdef0"])
        .expect(0);
    assert_eq!(tasks_body(s), expected);
}

fn two_instances_checking_at_once_both_win(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", "T1\nT2\nT3\nT4\nT5\nT6\n");
    let b = s.clone("beta");
    for (x, y) in [("1", "2"), ("3", "4"), ("6", "5")] {
        // Both writers verify after a pause that lets the other's write
        // land: real time here (MAVERICK_CLOCK_PAUSES=wait), as between
        // two machines.
        let mut first = a.command(&["task", "check", "142", x]);
        let mut second = b.command(&["task", "check", "142", y]);
        for cmd in [&mut first, &mut second] {
            cmd.env(crate::support::mav::clock::CLOCK_PAUSES_VAR, "wait");
        }
        let first = first
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let second = second
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        for (task, child) in [(x, first), (y, second)] {
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "task check {task}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let body = tasks_body(s);
        for task in [x, y] {
            let n: usize = task.parse().unwrap();
            assert!(
                marks(&body)[n - 1].0,
                "task {task} lost its check mark:\n{body}"
            );
        }
    }
    assert!(marks(&tasks_body(s)).iter().all(|(c, _)| *c));
}

fn the_claim_names_the_issue_and_fences_task_done(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.clone("alpha");
    // A branch whose name says nothing: the claim says which issue it is.
    a.git(&["switch", "--quiet", "-c", "parser-work"]);
    a.maverick(&[
        "--lease-ttl",
        "60s",
        "coord",
        "claim",
        "142",
        "--branch",
        "parser-work",
    ])
    .expect(0);
    let file = s.input_file("tasks.md", THREE_TASKS);
    a.maverick(&["task", "init", "142", &file]).expect(0);
    stage(&a, "src/one.rs", "// one\n");
    let run = a.maverick(&["--json", "task", "done", "-m", "feat: one"]);
    let json = run.expect(0).json();
    assert_eq!(json["issue_source"], "claim");
    insta::assert_snapshot!(
        "task_done_json_on_a_branch_the_claim_names",
        screen(s, &run)
    );

    // Another instance takes the stale claim over: alpha's next task is
    // refused. (`task done` renewed alpha's lease for its own ttl, 10m.)
    s.advance_clock(601);
    let b = s.clone("beta");
    b.maverick(&["coord", "claim", "142", "--takeover"])
        .expect(0);
    stage(&a, "src/two.rs", "// two\n");
    let head = a.git(&["rev-parse", "HEAD"]);
    let fenced = a.maverick(&["task", "done", "-m", "feat: two"]);
    // On GitHub the holder shows the login that wrote its claim too.
    insta::assert_snapshot!(
        format!("task_done_after_a_takeover_{}", s.name()),
        screen(s, &fenced)
    );
    assert_eq!(a.git(&["rev-parse", "HEAD"]), head, "nothing was committed");
}

/// A clone that never claimed the story, on its branch: `task done` is
/// refused while another instance holds it (exit 4), commits nothing, and
/// names the holder as the claim it is (`holder.instance_id`).
fn task_done_on_an_issue_another_instance_holds_names_the_holder(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", THREE_TASKS);
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    a.git(&["push", "--quiet", "origin", BRANCH]);
    let g = join_story(s, "gamma");
    stage(&g, "src/one.rs", "// one\n");
    let head = g.git(&["rev-parse", "HEAD"]);
    let run = g.maverick(&["--json", "task", "done", "-m", "feat: one"]);
    let json = run.expect(4).json();
    assert_eq!(json["holder"]["instance_id"], "alpha", "{json}");
    insta::assert_snapshot!("task_done_json_on_an_issue_alpha_holds", screen(s, &run));
    assert_eq!(g.git(&["rev-parse", "HEAD"]), head, "nothing was committed");
}

fn a_refused_push_leaves_the_commit_local_and_a_rerun_pushes_it(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", THREE_TASKS);
    // The remote refuses branch pushes for a while (maverick's own refs pass).
    let hook = s.origin.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\nwhile read old new ref; do case \"$ref\" in refs/heads/*) echo \"branch pushes are closed\" >&2; exit 1;; esac; done\n",
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    stage(&a, "src/one.rs", "// one\n");
    let refused = a.maverick(&["task", "done", "-m", "feat: one"]);
    refused.expect(1);
    let short = a.git(&["rev-parse", "--short", "HEAD"]);
    insta::assert_snapshot!(
        "task_done_whose_push_is_refused",
        screen_naming(s, &refused, &[(&short, "[local]")])
    );
    assert!(remote_commits(s).is_empty());
    assert_eq!(marks(&tasks_body(s))[0], (false, None));

    std::fs::remove_file(&hook).unwrap();
    let rerun = a.maverick(&["task", "done"]);
    insta::assert_snapshot!(
        "task_done_rerun_pushes_the_local_commit",
        screen_naming(s, &rerun, &[(&short, "[local]")])
    );
    assert_eq!(remote_commits(s).len(), 1);
    assert_eq!(marks(&tasks_body(s))[0], (true, Some(short)));
}

fn what_a_person_sees(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.clone("alpha");
    a.git(&["switch", "--quiet", "-c", BRANCH]);
    let file = s.input_file("tasks.md", THREE_TASKS);
    let mut screens = Vec::new();
    let mut show = |args: &[&str], run: crate::support::Run| {
        screens.push(format!(
            "$ git maverick {}\n{}",
            args.join(" "),
            s.screen(&run)
        ));
    };
    let args = ["task", "init", "142", "tasks.md"];
    show(&args, a.maverick(&["task", "init", "142", &file]));
    stage(&a, "src/one.rs", "// one\n");
    for args in [
        &["task", "done", "-m", "feat(markers): parse blocks"][..],
        &["task", "done", "-m", "parse blocks"],
        &["task", "done", "-m", "feat: nothing staged"],
        &["task", "check", "142", "4"],
        &["task", "list"],
    ] {
        show(args, a.maverick(args));
    }
    insta::assert_snapshot!(format!("task_screens_{}", s.name()), screens.join("\n"));
}

/// Someone else pushed to the branch; the writer fetches and rebases onto it.
/// Building on a push it never saw is what SPEC 8 forbids: exit 8, nothing
/// pushed, the task left unchecked.
fn a_rebase_onto_someone_elses_push_is_a_collision(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", THREE_TASKS);
    stage(&a, "src/one.rs", "// one\n");
    a.maverick(&["task", "done", "-m", "feat: one"]).expect(0);
    let intruder = join_story(s, "intruder");
    intruder.commit_file("src/intruder.rs", "// not yours\n", "feat: intruder");
    intruder.git(&["push", "--quiet", "origin", BRANCH]);
    let intruded = s.git_in(&s.origin, &["rev-parse", BRANCH]);

    a.git(&["pull", "--quiet", "--rebase", "origin", BRANCH]);
    stage(&a, "src/two.rs", "// two\n");
    let done = a.maverick(&["task", "done", "-m", "feat: two"]);
    insta::assert_snapshot!(
        "task_done_after_a_rebase_onto_someone_elses_push",
        screen(s, &done)
    );
    assert_eq!(s.git_in(&s.origin, &["rev-parse", BRANCH]), intruded);
    assert_eq!(marks(&tasks_body(s))[1], (false, None));
}

/// `resume` on another machine heals the crash between push and check-off,
/// and says where to start.
fn resume_reconciles_and_names_the_next_task(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", THREE_TASKS);
    a.maverick(&["hook", "install"]).expect(0);
    stage(&a, "src/one.rs", "// one\n");
    a.maverick(&["task", "done", "-m", "feat: one"]).expect(0);
    stage(&a, "src/two.rs", "// two\n");
    a.git(&[
        "commit",
        "--quiet",
        "-m",
        "feat: two",
        "--trailer",
        "Maverick-Issue: 142",
        "--trailer",
        "Maverick-Task: 2",
    ]);
    a.git(&["push", "--quiet", "origin", BRANCH]);
    let two = a.git(&["rev-parse", "--short", "HEAD"]);

    let c = s.clone("gamma");
    let resume = c.maverick(&["--json", "resume", BRANCH]);
    let json = resume.json();
    assert_eq!(json["tasks"]["reconciled"][0]["task"], 2, "{json}");
    assert_eq!(json["next_task"]["number"], 3, "{json}");
    insta::assert_snapshot!(
        "resume_json_reconciles_task_two",
        screen_naming(s, &resume, &[(&two, "[two]")])
    );
    assert_eq!(marks(&tasks_body(s))[1], (true, Some(two)));
    let again = c.maverick(&["resume", BRANCH]);
    insta::assert_snapshot!("resume_again_names_task_three", screen(s, &again));
}

/// The claim recorded that the branch did not exist yet; someone else
/// created it since. Building on it is a collision too.
fn a_branch_someone_else_created_after_the_claim_is_a_collision(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.clone("alpha");
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    let intruder = s.clone("intruder");
    intruder.git(&["switch", "--quiet", "-c", BRANCH]);
    intruder.commit_file("src/intruder.rs", "// not yours\n", "feat: intruder");
    intruder.git(&["push", "--quiet", "origin", BRANCH]);

    a.git(&["fetch", "--quiet", "origin"]);
    a.git(&[
        "switch",
        "--quiet",
        "-c",
        BRANCH,
        &format!("origin/{BRANCH}"),
    ]);
    let file = s.input_file("tasks.md", THREE_TASKS);
    a.maverick(&["task", "init", "142", &file]).expect(0);
    stage(&a, "src/one.rs", "// one\n");
    let done = a.maverick(&["task", "done", "-m", "feat: one"]);
    insta::assert_snapshot!(
        "task_done_on_a_branch_someone_else_created",
        screen(s, &done)
    );
    assert_eq!(marks(&tasks_body(s))[0], (false, None));
}

/// One rule names a branch's issue, for `task done` and `resume` alike: the
/// leading number of the branch's last path component (`-`, `_` or nothing
/// after it), whatever folders sit above it.
fn task_done_and_resume_agree_on_the_issue_of_any_branch_name(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    for (branch, issue) in [
        ("team/7-infra/142-parser", 142),
        ("maverick/143_parser", 143),
        ("a/b/144-x", 144),
    ] {
        let name = issue.to_string();
        let a = s.clone(&format!("alpha{issue}"));
        a.git(&["switch", "--quiet", "-c", branch]);
        let file = s.input_file(&format!("tasks{issue}.md"), THREE_TASKS);
        a.maverick(&["task", "init", &name, &file]).expect(0);
        stage(&a, "src/one.rs", "// one\n");
        let done = a.maverick(&["task", "done", "-m", "feat: one"]);
        insta::assert_snapshot!(format!("task_done_on_{issue}"), screen(s, &done));
        let trailer = s.git_in(
            &s.origin,
            &[
                "log",
                "-1",
                "--format=%(trailers:key=Maverick-Issue,valueonly)",
                branch,
            ],
        );
        assert_eq!(trailer.trim(), name, "{branch}");
        let body = s
            .comment_starting_with(issue, "## Tasks")
            .expect("the story has a tasks comment")
            .body;
        assert!(marks(&body)[0].0, "{branch}: {body}");
        assert!(s.comment_starting_with(7, "## Tasks").is_none());

        let c = s.clone(&format!("gamma{issue}"));
        let resume = c.maverick(&["--json", "resume", branch]);
        resume.expect(0);
        let json = resume.json();
        assert_eq!(json["issue"], issue, "{branch}: {json}");
        assert_eq!(json["next_task"]["number"], 2, "{branch}: {json}");
    }
}

on_both_surfaces!(
    task_done_on_an_issue_another_instance_holds_names_the_holder,
    task_done_and_resume_agree_on_the_issue_of_any_branch_name,
    a_branch_someone_else_created_after_the_claim_is_a_collision,
    resume_reconciles_and_names_the_next_task,
    a_rebase_onto_someone_elses_push_is_a_collision,
    a_refused_push_leaves_the_commit_local_and_a_rerun_pushes_it,
    the_claim_names_the_issue_and_fences_task_done,
    what_a_person_sees,
    three_tasks_done_in_a_row,
    crash_between_push_and_comment_heals_on_another_machine,
    crash_before_push_leaves_the_next_machine_at_that_task,
    refuses_bad_messages_an_empty_index_and_tasks_out_of_range,
    parses_a_persons_edits_and_loses_no_check_mark,
    two_instances_checking_at_once_both_win,
    task_done_takes_back_a_lapsed_lease_nobody_took,
    task_done_on_a_lapsed_lease_someone_took_pushes_nothing,
    task_done_renews_for_the_ttl_the_claim_declared,
);

/// alpha's claim of #142 on the story's branch, its lease lapsed (nobody
/// took it yet), and another clone, beta.
fn lapsed_claim(s: &TestEnv) -> (Repo<'_>, Repo<'_>) {
    let a = s.story_clone("alpha", THREE_TASKS);
    let claim = [
        "coord",
        "claim",
        "142",
        "--branch",
        BRANCH,
        "--lease-ttl",
        "60s",
    ];
    a.maverick(&claim).expect(0);
    s.advance_clock(61);
    (a, s.clone("beta"))
}

/// SPEC 4: a person's claim never lapses unseen. A person who follows the
/// quick start (`coord claim`, work, `task done`), no `run`, no agent:
/// `task done` renews a live lease, and one that lapsed while nobody else
/// claimed the issue is taken back (a new generation) and the task pushed.
fn task_done_takes_back_a_lapsed_lease_nobody_took(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let (a, b) = lapsed_claim(s);
    b.maverick(&["coord", "read", "142"]).expect(5);

    stage(&a, "src/one.rs", "// one\n");
    let run = a.maverick(&["--json", "task", "done", "-m", "feat: one"]);
    let json = run.expect(0).json();
    assert_eq!(json["pushed"], true, "{json}");
    assert_eq!(json["lease"]["action"], "retaken", "{json}");
    assert_eq!(json["lease"]["generation"], 2, "{json}");
    assert_eq!(
        s.origin_head(BRANCH),
        Some(a.git(&["rev-parse", "HEAD"])),
        "the task was pushed"
    );
    // Held live again, by alpha, for everyone.
    let read = b.maverick(&["--json", "coord", "read", "142"]);
    assert_eq!(read.expect(4).json()["holder"]["instance_id"], "alpha");
    // The new claim says it takes over alpha's own lapsed lease, as a
    // takeover of another's writes it: no reader takes it for a fresh claim.
    let claim = b.maverick(&["--json", "state", "get", "claim", "142"]);
    let claim = &claim.expect(0).json()["marker"];
    assert_eq!(claim["generation"], 2, "{claim}");
    assert_eq!(claim["takeover_of"], "alpha", "{claim}");
    let reason = claim["reason"].as_str().unwrap_or_default();
    assert!(
        reason.starts_with("own lapsed lease: expired at "),
        "{claim}"
    );

    // The next task renews the live lease, and says so.
    s.advance_clock(30);
    stage(&a, "src/two.rs", "// two\n");
    let text = a.maverick(&["task", "done", "-m", "feat: two"]);
    text.expect(0);
    assert!(
        text.stdout.contains("lease on #142 renewed until "),
        "{}",
        text.screen()
    );
}

/// `task done` renews a live lease for the ttl the claim declared (here
/// 20 minutes), not for the renewer's `maverick.leaseTtl` of the moment.
fn task_done_renews_for_the_ttl_the_claim_declared(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.story_clone("alpha", THREE_TASKS);
    a.git(&["config", "maverick.leaseTtl", "20m"]);
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    a.git(&["config", "maverick.leaseTtl", "5m"]);
    s.advance_clock(60);

    stage(&a, "src/one.rs", "// one\n");
    let run = a.maverick(&["--json", "task", "done", "-m", "feat: one"]);
    let json = run.expect(0).json();
    assert_eq!(json["lease"]["action"], "renewed", "{json}");
    // The lease marker written: 20 minutes from its heartbeat.
    let lease = a.maverick(&["--json", "state", "get", "lease", "142"]);
    let lease = &lease.expect(0).json()["marker"];
    let at = |field: &str| {
        let text = lease[field].as_str().unwrap_or_default();
        crate::support::mav::timefmt::Timestamp::parse(text)
            .unwrap_or_else(|| panic!("{field} in {lease}"))
    };
    assert_eq!(
        at("expires_at").since(at("heartbeat_at")),
        std::time::Duration::from_secs(20 * 60),
        "{lease}"
    );
}

/// The holder's lease lapsed and another instance took the issue over:
/// `task done` refuses (exit 7), commits and pushes nothing, and the work
/// stays staged in the index.
fn task_done_on_a_lapsed_lease_someone_took_pushes_nothing(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let (a, b) = lapsed_claim(s);
    b.maverick(&["coord", "takeover", "142"]).expect(0);

    stage(&a, "src/one.rs", "// one\n");
    let head = a.git(&["rev-parse", "HEAD"]);
    let run = a.maverick(&["task", "done", "-m", "feat: one"]);
    run.expect(7);
    insta::assert_snapshot!(
        format!("task_done_on_a_lapsed_lease_someone_took_{}", s.name()),
        screen(s, &run)
    );
    assert_eq!(a.git(&["rev-parse", "HEAD"]), head, "nothing was committed");
    assert_eq!(s.origin_head(BRANCH), None, "nothing was pushed");
    assert_eq!(a.git(&["diff", "--cached", "--name-only"]), "src/one.rs");
    // The loss is recorded: the next try is refused without asking again.
    a.maverick(&["task", "done", "-m", "feat: one"]).expect(7);
}

/// Item 4 of issue 37: `task check --sha` takes a SHA-256 repository's full
/// 64-hex commit id, and writes its short form.
#[test]
fn task_check_takes_a_sha256_repositorys_full_commit_id() {
    let s = &TestEnv::with_repo_kind(crate::support::RepoKind::Sha256);
    let a = s.story_clone("alpha", THREE_TASKS);
    let full = a.commit_file("src/one.rs", "// one\n", "feat: one");
    assert_eq!(full.len(), 64, "{full}");
    a.maverick(&["task", "check", "142", "1", "--sha", &full])
        .expect(0);
    let body = tasks_body(s);
    let line = body
        .lines()
        .find(|l| l.contains("Parse marker blocks"))
        .unwrap();
    assert!(line.starts_with("- [x] "), "{body}");
    assert!(line.contains(&full[..7]), "{body}");
}

/// `task done` on a live claim reads the issue once: the read that checks
/// the claim is the one the renewal works from (it used to read the issue
/// again before renewing). What follows the push (the check-off and the
/// progress marker, each read and written back) is counted apart.
#[test]
fn task_done_reads_the_claim_once_before_the_push() {
    let s = &TestEnv::with_surface(Surface::Github);
    let a = s.story_clone("alpha", THREE_TASKS);
    a.maverick(&["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    // Far enough into the lease that the renewal is due (a heartbeat writes
    // only then): 4 of its 10 minutes left.
    s.advance_clock(360);
    stage(&a, "src/one.rs", "// one\n");
    let fake = s.github();
    fake.reset_count();
    a.maverick(&["--json", "task", "done", "-m", "feat: one"])
        .expect(0);
    let requests = fake.requests();
    // The renewal is the first write; every read of the issue's comments
    // before it is a read of the claim.
    let renewal = requests
        .iter()
        .position(|r| r.method != "GET" && r.path.contains("/issues/"))
        .expect("task done renews the lease");
    let reads: Vec<&str> = requests[..renewal]
        .iter()
        .filter(|r| r.method == "GET")
        .map(|r| r.path.split('?').next().unwrap_or_default())
        .filter(|path| path.ends_with(&format!("/issues/{STORY}/comments")))
        .collect();
    assert_eq!(reads.len(), 1, "{reads:?}");
}
