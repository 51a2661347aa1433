//! Crash and fault safety (issue 12): what a `kill -9` leaves behind, and the
//! next run that heals it, through the real binary on a bare origin and on
//! the fake GitHub server.

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::screen::{screen, screen_keeping, screens};
use crate::support::{run_flags, Repo, Run, Surface, TestEnv};

const STORY: u64 = 142;
const BRANCH: &str = "maverick/142-parser";

const FOUR_TASKS: &str = "\
Parse marker blocks
Upsert markers in place
Verify after writing
Document the format
";

/// A clone on the story's branch, with the story's tasks comment written.
fn start_story<'a>(s: &'a TestEnv, name: &str) -> Repo<'a> {
    let repo = s.clone(name);
    repo.git(&["switch", "--quiet", "-c", BRANCH]);
    let path = s.path().join("tasks.md");
    std::fs::write(&path, FOUR_TASKS).unwrap();
    repo.maverick(&["task", "init", "142", path.to_str().unwrap()])
        .expect(0);
    repo
}

fn stage(repo: &Repo<'_>, path: &str) {
    repo.write_file(path, &format!("// {path}\n"));
    repo.git(&["add", path]);
}

/// Commits what is staged as `task done` would, with its trailers.
fn commit_as_task(repo: &Repo<'_>, task: usize, subject: &str) -> String {
    repo.git(&[
        "commit",
        "--quiet",
        "-m",
        subject,
        "--trailer",
        &format!("Maverick-Issue: {STORY}"),
        "--trailer",
        &format!("Maverick-Task: {task}"),
    ]);
    repo.git(&["rev-parse", "HEAD"])
}

/// `(checked, sha)` of each task line of the tasks comment.
fn marks(s: &TestEnv) -> Vec<(bool, Option<String>)> {
    let body = s
        .comment_starting_with(STORY, "## Tasks")
        .expect("the story has a tasks comment")
        .body;
    crate::support::mav::tasks::parse_tasks(&body)
        .into_iter()
        .map(|t| (t.done, t.sha))
        .collect()
}

/// The `Maverick-Task` trailer of each commit of the branch on origin
/// beyond main, oldest first, with its sha.
fn remote_tasks(s: &TestEnv) -> Vec<(String, String)> {
    let out = s.git_in(
        &s.origin,
        &[
            "log",
            "--reverse",
            "--format=%H %(trailers:key=Maverick-Task,valueonly,separator=%x2C)",
            &format!("main..{BRANCH}"),
        ],
    );
    out.lines()
        .map(|l| {
            let (sha, task) = l.split_once(' ').unwrap_or((l, ""));
            (sha.to_owned(), task.trim().to_owned())
        })
        .collect()
}

/// Asserts each task's check mark names the one commit on origin that
/// carries its number, and that no two commits carry one number.
#[track_caller]
fn assert_marks_follow_the_branch(s: &TestEnv, done: usize) {
    let commits = remote_tasks(s);
    let mut numbers: Vec<&str> = commits.iter().map(|(_, t)| t.as_str()).collect();
    numbers.sort_unstable();
    numbers.dedup();
    assert_eq!(
        numbers.len(),
        commits.len(),
        "one commit per task: {commits:?}"
    );
    let marks = marks(s);
    for (i, (checked, sha)) in marks.iter().enumerate() {
        let number = (i + 1).to_string();
        let commit = commits.iter().find(|(_, t)| *t == number);
        match commit {
            Some((full, _)) => {
                assert!(
                    checked,
                    "task {number} has a commit on origin but is unchecked"
                );
                let sha = sha.as_deref().expect("the check mark names its commit");
                assert!(full.starts_with(sha), "task {number}: {sha} is not {full}");
            }
            None => assert!(
                !checked,
                "task {number} is checked with no commit on origin"
            ),
        }
    }
    assert_eq!(marks.iter().filter(|(c, _)| *c).count(), done, "{marks:?}");
}

fn task_done_after_a_crash_between_push_and_check_off(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = start_story(s, "alpha");
    stage(&a, "src/one.rs");
    a.maverick(&["task", "done", "-m", "feat: one"]).expect(0);
    // What `kill -9` of `task done` leaves between its push and its check
    // mark: task 2 on origin, unchecked. (The pre-push hook records the
    // plain push as this writer's own, as maverick's push does.)
    a.maverick(&["hook", "install"]).expect(0);
    stage(&a, "src/two.rs");
    commit_as_task(&a, 2, "feat: two");
    a.git(&["push", "--quiet", "origin", BRANCH]);
    assert_eq!(marks(s)[1], (false, None));

    // The same clone carries on: the new work is task 3, not task 2 again.
    stage(&a, "src/three.rs");
    let run = a.maverick(&["--json", "task", "done", "-m", "feat: three"]);
    run.expect(0);
    assert_eq!(run.json()["task"], 3, "{}", run.screen());
    assert_marks_follow_the_branch(s, 3);
    stage(&a, "src/four.rs");
    let run = a.maverick(&["--json", "task", "done", "-m", "docs: four"]);
    assert_eq!(run.json()["task"], 4, "{}", run.screen());
    assert_marks_follow_the_branch(s, 4);
}

fn task_done_never_reuses_a_task_of_an_unpushed_commit(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = start_story(s, "alpha");
    stage(&a, "src/one.rs");
    a.maverick(&["task", "done", "-m", "feat: one"]).expect(0);
    // A crash after the commit of task 2, then a plain commit on top.
    stage(&a, "src/two.rs");
    commit_as_task(&a, 2, "feat: two");
    stage(&a, "src/wip.rs");
    a.git(&["commit", "--quiet", "-m", "chore: wip"]);

    stage(&a, "src/three.rs");
    let run = a.maverick(&["--json", "task", "done", "-m", "feat: three"]);
    run.expect(0);
    assert_eq!(run.json()["task"], 3, "{}", run.screen());
    // The push brought task 2's commit too, and checked it off with its own sha.
    assert_marks_follow_the_branch(s, 3);

    // Unless --task says so: more work on task 1.
    stage(&a, "src/one-more.rs");
    let run = a.maverick(&["--json", "task", "done", "--task", "1", "-m", "fix: one"]);
    run.expect(0);
    assert_eq!(run.json()["task"], 1, "{}", run.screen());
}

on_both_surfaces!(
    task_done_after_a_crash_between_push_and_check_off,
    task_done_never_reuses_a_task_of_an_unpushed_commit,
);

/// Polls until `path` exists and holds a line; returns it.
#[track_caller]
fn wait_for_line(path: &std::path::Path, within: Duration) -> String {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if let Ok(text) = std::fs::read_to_string(path) {
            if text.ends_with('\n') {
                return text.trim().to_owned();
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} did not appear within {within:?}", path.display());
}

/// Whether process `pid` is alive (a zombie is not).
fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let state = stat
        .rsplit_once(") ")
        .and_then(|(_, rest)| rest.chars().next());
    !matches!(state, None | Some('Z') | Some('X'))
}

/// `git maverick run ARGS -- sh -c SCRIPT` as `repo`'s instance, started.
fn spawn_run(repo: &Repo<'_>, args: &[&str], script: &str) -> Child {
    let mut all = vec!["run"];
    all.extend(args);
    all.extend(["--", "sh", "-c", script]);
    let mut cmd = repo.command(&all);
    cmd.env("MAVERICK_INSTANCE", &repo.instance)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.spawn().expect("git-maverick starts")
}

#[test]
fn run_killed_with_sigkill_takes_its_command_with_it() {
    let env = TestEnv::new();
    let a = env.clone("alpha");
    let pid_file = env.path().join("command.pid");
    let mut args = run_flags::MOVED.to_vec();
    args.push("7");
    let mut run = spawn_run(
        &a,
        &args,
        &format!("echo $$ > {}; exec sleep 1000", pid_file.display()),
    );
    let command: i32 = wait_for_line(&pid_file, Duration::from_secs(30))
        .parse()
        .unwrap();
    assert!(alive(command));

    run.kill().unwrap(); // SIGKILL: run can stop nothing itself.
    run.wait().unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    while alive(command) && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!alive(command), "the command outlived `run`");

    // Nothing released, so the claim blocks others until its lease goes
    // stale; then the documented takeover recovers the issue.
    let b = env.clone("beta");
    b.maverick(&["coord", "read", "7"]).expect(4);
    env.advance_clock(run_flags::TTL_SECS + 1); // past the lease
    b.maverick(&["coord", "read", "7"]).expect(5);
    b.maverick(&["coord", "claim", "7", "--takeover"]).expect(0);
}

/// GitHub's lists lag longer than the settle delay: both racers' claims
/// succeed and both commands start. The first heartbeat settles again a few
/// settle delays later, so one of them stops within seconds, not minutes.
#[test]
fn a_race_hidden_by_list_lag_ends_at_the_early_first_heartbeat() {
    let env = TestEnv::with_surface(Surface::Github);
    let fake = env.github();
    fake.create_issue(77, "contested", &[]);
    let racers: Vec<Repo<'_>> = ["racer-a", "racer-b"]
        .iter()
        .map(|n| env.clone(n))
        .collect();
    for r in &racers {
        r.git(&["config", "maverick.settleDelay", "1s"]);
    }
    // Longer than a settle delay and a half: whichever racer's settle moves
    // the shared clock first, the other racer's claim stays hidden from both
    // re-reads.
    fake.set_list_lag(Duration::from_millis(2500));
    let dir = env.path().to_owned();
    let mut runs: Vec<Child> = racers
        .iter()
        .map(|r| {
            spawn_run(
                r,
                &["77"],
                &format!(
                    "echo $$ > {d}/{n}.pid; trap 'exit 0' TERM; while :; do sleep 0.05; done",
                    d = dir.display(),
                    n = r.instance
                ),
            )
        })
        .collect();
    for r in &racers {
        wait_for_line(
            &dir.join(format!("{}.pid", r.instance)),
            Duration::from_secs(30),
        );
    }

    // The first heartbeat comes three settle delays after the claim, well
    // within the 120s heartbeat interval, and sees past the lag: one run
    // exits 7.
    env.advance_clock(5);
    let end = Instant::now() + Duration::from_secs(20);
    let loser = loop {
        if let Some(i) = runs
            .iter_mut()
            .position(|c| c.try_wait().unwrap().is_some())
        {
            break i;
        }
        assert!(Instant::now() < end, "both racers still run their commands");
        std::thread::sleep(Duration::from_millis(20));
    };
    let lost = runs.remove(loser).wait_with_output().unwrap();
    assert_eq!(
        lost.status.code(),
        Some(7),
        "{}",
        String::from_utf8_lossy(&lost.stderr)
    );
    let winner = &racers[1 - loser];
    let read = winner.maverick(&["--json", "coord", "read", "77"]);
    read.expect(0);
    assert_eq!(read.json()["holder"]["instance_id"], winner.instance);

    // The winner carries on; SIGTERM ends it and releases.
    let mut winner_run = runs.pop().unwrap();
    assert!(
        winner_run.try_wait().unwrap().is_none(),
        "the winner runs on"
    );
    let term = std::process::Command::new("kill")
        .args(["-TERM", &winner_run.id().to_string()])
        .status()
        .unwrap();
    assert!(term.success());
    let out = winner_run.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `git maverick ARGS` as `repo`'s instance with its clock moved by
/// `offset` (faketime's `-f` syntax: `+365d`, `-1d`), through the real
/// `faketime` (Debian's package; `scripts/test.sh` installs it).
fn maverick_at(repo: &Repo<'_>, offset: &str, args: &[&str]) -> Run {
    let cmd = repo.command(args);
    let program = cmd.get_program().to_owned();
    let mut faked = std::process::Command::new("faketime");
    faked
        .arg("-f")
        .arg(offset)
        .arg(program)
        .args(cmd.get_args());
    faked.current_dir(&repo.dir);
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => faked.env(key, v),
            None => faked.env_remove(key),
        };
    }
    faked.env("MAVERICK_INSTANCE", &repo.instance);
    let out = faked
        .stdin(Stdio::null())
        .output()
        .expect("faketime runs (apt-get install faketime)");
    Run::from_output(args, out)
}

fn epoch_of(value: &serde_json::Value) -> i64 {
    crate::support::mav::timefmt::Timestamp::parse(value.as_str().expect("a timestamp"))
        .expect("RFC 3339")
        .0
}

fn real_now() -> i64 {
    crate::support::mav::clock::Clock::system().now().0
}

/// Asserts that `reader` sees #`issue` held with a lease of one default ttl
/// (600s) from now: no clock dragged it along.
#[track_caller]
fn assert_lease_lives_one_ttl(reader: &Repo<'_>, issue: u64) {
    let read = reader.maverick(&["--json", "coord", "read", &issue.to_string()]);
    read.expect(4);
    let json = read.json();
    // Against the reader's clock (which the test may have moved), not the real one.
    let left = epoch_of(&json["expires_at"]) - epoch_of(&json["now"]);
    assert!((590..=602).contains(&left), "{}", read.stdout);
}

#[test]
fn a_clock_a_year_ahead_poisons_nobody_elses_leases() {
    let env = TestEnv::new();
    let ahead = env.clone("ahead");
    let beta = env.clone("beta");
    let gamma = env.clone("gamma");
    // The issue's reproduction: one label written a year ahead.
    maverick_at(&ahead, "+365d", &["coord", "label", "add", "9", "triage"]).expect(0);

    // A correct clock claims afterwards: its lease lives one ttl, not a year.
    beta.maverick(&["--lease-ttl", "60s", "coord", "claim", "5"])
        .expect(0);
    let read = gamma.maverick(&["--json", "coord", "read", "5"]);
    read.expect(4);
    let expires = epoch_of(&read.json()["expires_at"]);
    assert!(
        expires <= real_now() + 60 + 2,
        "the lease lives a ttl, not a year: {}",
        read.stdout
    );
    // beta dies without a release: its issue goes stale within the ttl, and
    // the documented takeover recovers it.
    env.advance_clock(61); // past the 60 s lease
    gamma.maverick(&["coord", "read", "5"]).expect(5);
    gamma
        .maverick(&["coord", "claim", "5", "--takeover"])
        .expect(0);

    // The wrong clock's own claim is flagged: it misjudges its own lease
    // (as others read it, it lives a year), nobody else's.
    maverick_at(&ahead, "+365d", &["coord", "claim", "6"]).expect(0);
    let read = gamma.maverick(&["coord", "read", "6"]);
    read.expect(4);
    // A year less the real second or so between the stamp and the read
    // (364d or 365d as the seconds fall): the JSON below bounds it.
    insta::assert_snapshot!(
        "read_of_a_claim_from_a_clock_a_year_ahead",
        screen_keeping(&env, &read, &["maverick.maxClockSkew is 5m"])
    );
    let json = gamma.maverick(&["--json", "coord", "read", "6"]).json();
    assert_eq!(json["clock_skew"][0]["instance_id"], "ahead", "{json}");
    assert!(json["clock_skew"][0]["ahead_secs"].as_i64().unwrap() > 364 * 86400);
    assert_eq!(json["warnings"].as_array().unwrap().len(), 1, "{json}");
    // Within the bound, nothing is flagged.
    let relaxed = gamma
        .maverick(&["--json", "--max-clock-skew", "8784h", "coord", "read", "6"])
        .json();
    assert_eq!(relaxed["decision"], "held", "{relaxed}");
    assert_eq!(relaxed["clock_skew"], serde_json::json!([]));
    // Its writes never drag the others' stamps along: another correct
    // writer's lease still lives one ttl.
    maverick_at(&ahead, "+365d", &["coord", "heartbeat", "6"]).expect(0);
    beta.maverick(&["coord", "claim", "10"]).expect(0);
    assert_lease_lives_one_ttl(&gamma, 10);
}

#[test]
fn a_clock_a_day_behind_misjudges_only_its_own_leases() {
    let env = TestEnv::new();
    let behind = env.clone("behind");
    let beta = env.clone("beta");
    beta.maverick(&["coord", "claim", "5"]).expect(0);
    // The slow clock sees beta's lease as live (longer than it is: safe),
    // and says that one of the two clocks is wrong.
    let read = maverick_at(&behind, "-1d", &["coord", "read", "5"]);
    read.expect(4);
    insta::assert_snapshot!(
        "read_from_a_clock_a_day_behind",
        screen_keeping(&env, &read, &["maverick.maxClockSkew is 5m"])
    );
    maverick_at(&behind, "-1d", &["coord", "claim", "5"]).expect(4);
    // Its own claim looks expired to everyone else: it can be taken over,
    // and then its next heartbeat says the claim is lost.
    maverick_at(&behind, "-1d", &["coord", "claim", "7"]).expect(0);
    beta.maverick(&["coord", "read", "7"]).expect(5);
    beta.maverick(&["coord", "claim", "7", "--takeover"])
        .expect(0);
    maverick_at(&behind, "-1d", &["coord", "heartbeat", "7"]).expect(7);
    // And it moved nobody's clock: beta's leases are judged right.
    beta.maverick(&["coord", "claim", "8"]).expect(0);
    assert_lease_lives_one_ttl(&env.clone("gamma"), 8);
}

#[test]
fn a_clock_jumping_back_mid_lease_never_leaves_two_holders() {
    let env = TestEnv::new();
    let beta = env.clone("beta");
    let gamma = env.clone("gamma");
    beta.maverick(&["coord", "claim", "5"]).expect(0);
    gamma.maverick(&["coord", "read", "5"]).expect(4);
    // beta's clock jumps back a day, then it renews (its lease looks a day
    // away from due to it: a person's `--renew` writes it all the same).
    maverick_at(&beta, "-1d", &["coord", "heartbeat", "5", "--renew"]).expect(0);
    // Its renewal is stamped with its wrong clock: the lease looks expired
    // to others, who may take it over; beta, back or not, then loses it.
    gamma.maverick(&["coord", "read", "5"]).expect(5);
    gamma
        .maverick(&["coord", "claim", "5", "--takeover"])
        .expect(0);
    beta.maverick(&["coord", "heartbeat", "5"]).expect(7);
    maverick_at(&beta, "-1d", &["coord", "heartbeat", "5"]).expect(7);
    let read = beta.maverick(&["--json", "coord", "read", "5"]).json();
    assert_eq!(read["holder"]["instance_id"], "gamma");
    // The surface's clock was not dragged back for others.
    assert_lease_lives_one_ttl(&beta, 5);
}

/// The screen of a refused duration, which shows the value as typed and
/// the least one.
fn fixed_durations(env: &TestEnv, run: &Run, value: &str) -> String {
    let typed = [format!("'{value}'"), format!("\"{value}\"")];
    screen_keeping(env, run, &[&typed[0], &typed[1], "at least 1s"])
}

#[test]
fn lease_durations_are_whole_seconds_and_at_least_one() {
    let env = TestEnv::new();
    let a = env.clone("alpha");
    let mut shown = Vec::new();
    for (flag, value) in [
        ("--lease-ttl", "500ms"),
        ("--lease-ttl", "0"),
        ("--heartbeat-interval", "0s"),
        ("--heartbeat-interval", "1500ms"),
        ("--max-clock-skew", "0"),
    ] {
        let run = a.maverick(&[flag, value, "coord", "claim", "5"]);
        let command = format!("git maverick {flag} {value} coord claim 5");
        shown.push((command, fixed_durations(&env, &run, value)));
    }
    let grace = a.maverick(&["run", "--grace", "0", "5", "--", "true"]);
    let command = "git maverick run --grace 0 5 -- true".to_owned();
    shown.push((command, fixed_durations(&env, &grace, "0")));
    assert_eq!(env.write_count(), 0, "nothing was written");

    for (key, value) in [
        ("leaseTtl", "500ms"),
        ("leaseTtl", "0"),
        ("heartbeatInterval", "0"),
        ("maxClockSkew", "10ms"),
    ] {
        a.git(&["config", &format!("maverick.{key}"), value]);
        let run = a.maverick(&["coord", "claim", "5"]);
        let command = format!("git -c maverick.{key}={value} maverick coord claim 5");
        shown.push((command, fixed_durations(&env, &run, value)));
        a.git(&["config", "--unset", &format!("maverick.{key}")]);
    }
    assert_eq!(env.write_count(), 0, "nothing was written");
    let shown: Vec<(&str, String)> = shown.iter().map(|(c, s)| (c.as_str(), s.clone())).collect();
    insta::assert_snapshot!("durations_below_one_second", screens(&shown));
    // The least values are stated where people look: `--help` and `run
    // --help` say "at least 1s" (the `cli::help` snapshot).
    // The least values work.
    a.maverick(&["--lease-ttl", "1s", "coord", "claim", "5"])
        .expect(0);
}

/// The label removal of a release fails past its retries: the release
/// marker is written, the label stays. The label is an orphan: free to
/// read, claim and dispatch, and the release converges when rerun.
#[test]
fn a_release_that_failed_part_way_converges_and_its_label_is_free() {
    let env = TestEnv::with_surface(Surface::Github);
    let fake = env.github();
    let alpha = env.clone("alpha");
    let beta = env.clone("beta");
    for n in [5, 6] {
        fake.create_issue(n, "story", &["agent-ready"]);
        alpha
            .maverick(&["coord", "claim", &n.to_string()])
            .expect(0);
        fake.fail_always_matching("DELETE", "/labels/", 502);
        let failed = alpha.maverick(&["coord", "release", &n.to_string()]);
        failed.expect(1);
        fake.clear_faults();
        assert_eq!(env.labels(n), ["agent-ready", "claude-in-progress"]);
    }

    // read: free, and says why the label is there.
    let read = beta.maverick(&["coord", "read", "5"]);
    insta::assert_snapshot!("read_of_an_orphan_label", screen(&env, &read));
    let json = beta.maverick(&["--json", "coord", "read", "5"]).json();
    assert_eq!(json["decision"], "free");
    assert_eq!(json["orphan_label"], true);

    // dispatch: the lowest eligible issue is the orphan-labelled #5.
    let dispatched = beta.maverick(&["--json", "dispatch"]);
    dispatched.expect(0);
    assert_eq!(dispatched.json()["issue"], 5, "{}", dispatched.screen());

    // The rerun of the release finishes it, once.
    alpha.maverick(&["coord", "release", "5"]).expect(0);
    assert_eq!(env.labels(5), ["agent-ready", "agent-wip"]);
    env.assert_released_once(5, "alpha", "abort");
    let again = alpha.maverick(&["coord", "release", "5"]);
    insta::assert_snapshot!("release_once_more", screen(&env, &again));

    // claim: an orphan label is no claim; the new claim is backed.
    beta.maverick(&["coord", "claim", "6"]).expect(0);
    let json = alpha.maverick(&["--json", "coord", "read", "6"]).json();
    assert_eq!(json["holder"]["instance_id"], "beta");
    assert_eq!(json["orphan_label"], false);
    // And alpha's rerun leaves beta's claim and label alone.
    alpha.maverick(&["coord", "release", "6"]).expect(7);
    assert_eq!(env.labels(6), ["agent-ready", "claude-in-progress"]);
}

// -- A kill at every step (MAVERICK_FAILPOINT) -------------------------------

/// Runs `git maverick ARGS` in `repo` set to die at `point`, and checks that
/// it died there, by SIGKILL, as `kill -9` would have killed it.
#[track_caller]
pub(crate) fn crash_at(repo: &Repo<'_>, point: &str, args: &[&str]) {
    use std::os::unix::process::ExitStatusExt as _;
    assert!(
        crate::support::mav::failpoint::ALL.contains(&point),
        "{point}"
    );
    let out = repo
        .command(args)
        .env(crate::support::mav::failpoint::ENV, point)
        .output()
        .expect("git-maverick runs");
    assert_eq!(
        out.status.signal(),
        Some(9), // SIGKILL
        "{point}: {args:?} did not die there ({:?})\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every file of the git surface's refs still parses (the git surface);
/// on GitHub, the fake's issue still reads.
#[track_caller]
fn assert_surface_parses(s: &TestEnv, reader: &Repo<'_>, issue: u64) {
    if s.name() == "git" {
        let origin = &s.origin;
        let refs = s.git_in(
            origin,
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/maverick/issue/",
            ],
        );
        for refname in refs.lines() {
            let text = s.git_in(origin, &["show", &format!("{refname}:issue.json")]);
            serde_json::from_str::<serde_json::Value>(&text)
                .unwrap_or_else(|e| panic!("{refname} does not parse: {e}"));
        }
    }
    let read = reader.maverick(&["--json", "coord", "read", &issue.to_string()]);
    assert!([0, 4, 5].contains(&read.code), "{}", read.screen());
    read.json();
}

/// After a crash that left a claim, or part of one, on #5: nothing blocks
/// others beyond the lease ttl, and the documented takeover recovers it;
/// the crashed instance then hears that its claim is lost.
fn recover_claim(s: &TestEnv, crashed: &Repo<'_>, rescuer: &Repo<'_>) {
    assert_surface_parses(s, rescuer, 5);
    // The crashed claim's lease (2 s) runs out: the clock moves past it.
    s.advance_clock(3);
    let read = rescuer.maverick(&["--lease-ttl", "2s", "coord", "read", "5"]);
    assert!(
        [0, 5].contains(&read.code),
        "#5 still blocked: {}",
        read.screen()
    );
    rescuer
        .maverick(&["--lease-ttl", "2s", "coord", "claim", "5", "--takeover"])
        .expect(0);
    let read = crashed.maverick(&["--json", "coord", "read", "5"]).json();
    assert_eq!(read["holder"]["instance_id"], rescuer.instance.as_str());
    crashed.maverick(&["coord", "heartbeat", "5"]).expect(7);
}

fn crash_in_claim(s: &TestEnv, point: &str) {
    let alpha = s.clone("alpha");
    let beta = s.clone("beta");
    crash_at(&alpha, point, &["--lease-ttl", "2s", "coord", "claim", "5"]);
    recover_claim(s, &alpha, &beta);
}

fn killed_in_claim_after_label(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_claim(s, "claim-after-label");
}

fn killed_in_claim_after_claim_comment(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_claim(s, "claim-after-claim-comment");
}

fn killed_in_claim_after_lease(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_claim(s, "claim-after-lease");
}

fn killed_in_heartbeat(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alpha = s.clone("alpha");
    let beta = s.clone("beta");
    alpha
        .maverick(&["--lease-ttl", "2s", "coord", "claim", "5"])
        .expect(0);
    crash_at(
        &alpha,
        "heartbeat",
        &["--lease-ttl", "2s", "coord", "heartbeat", "5"],
    );
    recover_claim(s, &alpha, &beta);
}

fn killed_in_takeover(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alpha = s.clone("alpha");
    let beta = s.clone("beta");
    let gamma = s.clone("gamma");
    alpha
        .maverick(&["--lease-ttl", "2s", "coord", "claim", "5"])
        .expect(0);
    s.advance_clock(3); // past the 2 s lease
    beta.maverick(&["--lease-ttl", "2s", "coord", "read", "5"])
        .expect(5);
    crash_at(
        &beta,
        "takeover",
        &["--lease-ttl", "2s", "coord", "claim", "5", "--takeover"],
    );
    recover_claim(s, &beta, &gamma);
    alpha.maverick(&["coord", "heartbeat", "5"]).expect(7);
}

fn killed_in_release(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alpha = s.clone("alpha");
    let beta = s.clone("beta");
    alpha.maverick(&["coord", "claim", "5"]).expect(0);
    crash_at(&alpha, "release", &["coord", "release", "5"]);
    assert_surface_parses(s, &beta, 5);
    // The release marker is written: the issue is free at once, label or not.
    beta.maverick(&["coord", "read", "5"]).expect(0);
    // The rerun converges, and writes no second release.
    alpha.maverick(&["coord", "release", "5"]).expect(0);
    assert_eq!(s.labels(5), Vec::<String>::new());
    s.assert_released_once(5, "alpha", "abort");
    beta.maverick(&["coord", "claim", "5"]).expect(0);
}

fn crash_in_task_done(s: &TestEnv, point: &str, pushed: bool) {
    let a = start_story(s, "alpha");
    stage(&a, "src/one.rs");
    a.maverick(&["task", "done", "-m", "feat: one"]).expect(0);
    stage(&a, "src/two.rs");
    crash_at(&a, point, &["task", "done", "-m", "feat: two"]);

    // No pushed commit is lost, and the comment is never ahead of the branch.
    let on_origin = remote_tasks(s);
    assert_eq!(on_origin.len(), if pushed { 2 } else { 1 }, "{on_origin:?}");
    for (i, (checked, sha)) in marks(s).iter().enumerate() {
        if *checked {
            let sha = sha.as_deref().unwrap();
            assert!(
                on_origin.iter().any(|(full, _)| full.starts_with(sha)),
                "task {} is checked ahead of the branch",
                i + 1
            );
        }
    }
    // The next `task list`, anywhere, heals the comment.
    let b = s.clone("beta");
    b.maverick(&["task", "list", "142", "--branch", BRANCH])
        .expect(0);
    assert_marks_follow_the_branch(s, if pushed { 2 } else { 1 });
    // The crashed clone carries on with the documented command.
    if !pushed {
        let run = a.maverick(&["--json", "task", "done"]);
        run.expect(0);
        assert_eq!(run.json()["task"], 2, "{}", run.screen());
    }
    stage(&a, "src/three.rs");
    let run = a.maverick(&["--json", "task", "done", "-m", "feat: three"]);
    run.expect(0);
    assert_eq!(run.json()["task"], 3, "{}", run.screen());
    assert_marks_follow_the_branch(s, 3);
    let progress = a
        .maverick(&["--json", "state", "get", "task-progress", "142"])
        .json();
    assert_eq!(progress["marker"]["task"], 3);
}

fn killed_in_task_done_after_commit(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_task_done(s, "task-done-after-commit", false);
}

fn killed_in_task_done_after_push(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_task_done(s, "task-done-after-push", true);
}

fn killed_in_task_done_after_check_off(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_task_done(s, "task-done-after-check-off", true);
}

fn killed_in_task_done_before_progress(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_task_done(s, "task-done-before-progress", true);
}

/// `resume` killed at each of `points` in turn (each run picking up what
/// the one before left), then run to the end.
fn crash_in_resume(s: &TestEnv, points: &[&str]) -> std::path::PathBuf {
    let a = start_story(s, "alpha");
    stage(&a, "src/one.rs");
    a.maverick(&["task", "done", "-m", "feat: one"]).expect(0);
    let b = s.clone("beta");
    for point in points {
        crash_at(&b, point, &["resume", BRANCH]);
    }
    // Run again, it does no harm and finishes the job.
    let run = b.maverick(&["--json", "resume", BRANCH]);
    run.expect(0);
    let json = run.json();
    let worktree = std::path::PathBuf::from(json["worktree"].as_str().expect("a worktree"));
    assert_eq!(
        s.git_in(&worktree, &["rev-parse", "HEAD"]),
        s.origin_head(BRANCH).unwrap()
    );
    assert_eq!(json["next_task"]["number"], 2, "{json}");
    // And the work goes on from there.
    let wt = b.at(&worktree);
    stage(&wt, "src/two.rs");
    let done = wt.maverick(&["--json", "task", "done", "-m", "feat: two"]);
    done.expect(0);
    assert_eq!(done.json()["task"], 2, "{}", done.screen());
    assert_marks_follow_the_branch(s, 2);
    b.dir.clone()
}

fn killed_in_resume_after_fetch(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_resume(s, &["resume-after-fetch"]);
}

fn killed_in_resume_after_journal(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_resume(s, &["resume-after-journal"]);
}

fn killed_in_resume_after_worktree_add(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_resume(s, &["resume-after-worktree-add"]);
}

/// Killed once in `git worktree add`'s wake, then again while moving that
/// half-made worktree aside: the next resume finishes the move (the one
/// aside is detached) and makes the worktree.
fn killed_in_resume_after_move_aside(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let beta = crash_in_resume(s, &["resume-after-worktree-add", "resume-after-move-aside"])
        .join(".maverick/worktrees");
    let aside: Vec<_> = std::fs::read_dir(&beta)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().contains(".stale-"))
        .collect();
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        s.git_in(&aside[0], &["branch", "--show-current"]).trim(),
        ""
    );
}

fn crash_in_dispatch(s: &TestEnv, point: &str) {
    let alpha = s.clone("alpha");
    let beta = s.clone("beta");
    alpha
        .maverick(&["coord", "label", "add", "3", "agent-ready"])
        .expect(0);
    crash_at(&alpha, point, &["dispatch"]);
    assert_surface_parses(s, &beta, 3);
    // The dead dispatcher's claim blocks #3 no longer than dispatchStale.
    // The dead dispatcher's claim is older than dispatchStale (2 s) once the clock moves.
    s.advance_clock(3);
    let run = beta.maverick(&["--json", "--dispatch-stale", "2s", "dispatch"]);
    run.expect(0);
    assert_eq!(run.json()["issue"], 3, "{}", run.screen());
    let status = beta
        .maverick(&["--json", "--dispatch-stale", "2s", "dispatch", "status"])
        .json();
    let holders = status["holders"].as_array().expect("holders");
    assert_eq!(holders.len(), 1, "{status}");
    assert_eq!(holders[0]["instance_id"], "beta", "{status}");
}

fn killed_in_dispatch_after_comment(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_dispatch(s, "dispatch-after-comment");
}

fn killed_in_dispatch_after_label(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    crash_in_dispatch(s, "dispatch-after-label");
}

fn killed_in_state_put(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alpha = s.clone("alpha");
    let file = s.path().join("state.json");
    std::fs::write(
        &file,
        r#"{"epic": 100, "stories": {"140": "in_flight"}, "updated_at": "2026-11-30T10:00:00Z"}"#,
    )
    .unwrap();
    let file = file.to_str().unwrap();
    crash_at(&alpha, "state-put", &["state", "put", "state", "100", file]);
    let got = alpha.maverick(&["--json", "state", "get", "state", "100"]);
    got.expect(0);
    assert_eq!(got.json()["marker"]["stories"]["140"], "in_flight");
    // The rerun converges on the one marker.
    alpha
        .maverick(&["state", "put", "state", "100", file])
        .expect(0);
    let states = s
        .comments(100)
        .iter()
        .filter(|c| {
            crate::support::mav::markers::find_marker(
                &c.body,
                crate::support::mav::markers::MarkerKind::State,
            )
            .is_some()
        })
        .count();
    assert_eq!(states, 1);
}

mod failpoints {
    use super::*;

    on_both_surfaces!(
        killed_in_claim_after_label,
        killed_in_claim_after_claim_comment,
        killed_in_claim_after_lease,
        killed_in_heartbeat,
        killed_in_takeover,
        killed_in_release,
        killed_in_task_done_after_commit,
        killed_in_task_done_after_push,
        killed_in_task_done_after_check_off,
        killed_in_task_done_before_progress,
        killed_in_resume_after_fetch,
        killed_in_resume_after_journal,
        killed_in_resume_after_worktree_add,
        killed_in_resume_after_move_aside,
        killed_in_dispatch_after_comment,
        killed_in_dispatch_after_label,
        killed_in_state_put,
    );
}

/// A dispatcher that lost the settle dies before its withdrawal: its losing
/// claim holds no slot and blocks nobody; the winner keeps #3. (Only GitHub
/// lets two dispatch claims on one issue happen: its lists lag.)
#[test]
fn killed_in_dispatch_before_withdrawal() {
    let s = &TestEnv::with_surface(Surface::Github);
    let fake = s.github();
    let alpha = s.clone("alpha");
    let beta = s.clone("beta");
    fake.create_issue(3, "story", &["agent-ready"]);
    alpha.git(&["config", "maverick.settleDelay", "3s"]);
    // beta's claim is hidden from alpha's first look, not from its settle.
    fake.set_list_lag(Duration::from_secs(1));
    fake.set_get_lag(Duration::from_secs(1));
    beta.maverick(&["dispatch"]).expect(0);
    crash_at(&alpha, "dispatch-before-withdrawal", &["dispatch"]);
    fake.set_list_lag(Duration::ZERO);
    fake.set_get_lag(Duration::ZERO);

    let status = beta.maverick(&["--json", "dispatch", "status"]).json();
    let holders = status["holders"].as_array().expect("holders");
    assert_eq!(holders.len(), 1, "{status}");
    assert_eq!(holders[0]["instance_id"], "beta", "{status}");
    assert_eq!(fake.labels(3), ["agent-ready", "agent-wip"]);
    // alpha, back, dispatches nothing over beta's claim.
    let again = alpha.maverick(&["--json", "dispatch"]);
    assert_ne!(again.json()["issue"], 3, "{}", again.screen());
}
