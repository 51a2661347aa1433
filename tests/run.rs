//! `git maverick run` and `coord release-all` end to end: the real binary,
//! real commands in their own process groups, a real bare origin.
//!
//! Time passes because the test moves the clock (ttl 5m, heartbeat 1m,
//! grace 10s, none of which real time brings within a test), and every wait
//! is a bounded poll for what that brings: a file, a ref, a process, never a
//! bare sleep.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use crate::support::run_flags::{self, GRACE_SECS, HEARTBEAT_SECS, TTL_SECS};
use crate::support::screen::{normalise, screen, screen_of_lines};
use crate::support::{Repo, Run, TestEnv};
use serde_json::Value;

const TIMING: [&str; 6] = run_flags::MOVED;

/// `git maverick run TIMING ARGS -- sh -c SCRIPT` as `repo`'s instance.
fn run_command(repo: &Repo<'_>, args: &[&str], script: &str) -> Command {
    run_command_timed(repo, &TIMING, args, script)
}

fn run_command_timed(repo: &Repo<'_>, timing: &[&str], args: &[&str], script: &str) -> Command {
    let mut all: Vec<&str> = timing.to_vec();
    all.extend(args);
    run_command_argv(repo, &all, &["sh", "-c", script])
}

/// `git maverick run ARGS -- ARGV` as `repo`'s instance.
fn run_command_argv(repo: &Repo<'_>, args: &[&str], argv: &[&str]) -> Command {
    let mut all: Vec<&str> = vec!["run"];
    all.extend(args);
    all.push("--");
    all.extend(argv);
    let mut cmd = repo.maverick_command(&all);
    cmd.env("MAVERICK_INSTANCE", &repo.instance);
    cmd
}

fn run_to_end(repo: &Repo<'_>, args: &[&str], script: &str) -> Run {
    let out = run_command(repo, args, script)
        .output()
        .expect("git-maverick runs");
    Run::from_output(&["run"], out)
}

/// `cmd` with SIGINT, SIGTERM and SIGHUP at their default actions, as in a
/// terminal: a test run in the background of a non-interactive shell (a CI
/// job) inherits SIGINT ignored, and a shell cannot trap a signal ignored
/// on entry, so the command would never hear it.
fn with_default_signals(mut cmd: Command) -> Command {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: signal(2) is async-signal-safe, as pre_exec requires.
    unsafe {
        cmd.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    cmd
}

fn spawn(mut cmd: Command) -> Child {
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git-maverick starts")
}

fn finish(child: Child) -> Run {
    Run::from_output(
        &["run"],
        child.wait_with_output().expect("git-maverick ends"),
    )
}

/// Polls until `path` exists; returns when it was written (its mtime), so
/// that a file made while the test was busy elsewhere is timed right.
#[track_caller]
fn wait_for_file(path: &Path, within: Duration) -> SystemTime {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if let Ok(meta) = std::fs::metadata(path) {
            return meta.modified().expect("mtime");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("{} did not appear within {within:?}", path.display());
}

/// `later - earlier` as seconds, negative when `later` came first.
fn seconds_between(earlier: SystemTime, later: SystemTime) -> f64 {
    match later.duration_since(earlier) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// Polls until `child` has exited; returns when it was first seen gone.
#[track_caller]
fn wait_for_exit(child: &mut Child, within: Duration) -> SystemTime {
    let end = Instant::now() + within;
    while Instant::now() < end {
        if child.try_wait().expect("try_wait").is_some() {
            return SystemTime::now();
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    panic!("git-maverick did not exit within {within:?}");
}

/// Polls until the main thread of `parent` has a child named `name`.
#[track_caller]
fn wait_for_child_named(parent: u32, name: &str, within: Duration) -> i32 {
    let end = Instant::now() + within;
    while Instant::now() < end {
        let children = std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
            .unwrap_or_default();
        for pid in children.split_whitespace() {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim() == name {
                return pid.parse().unwrap();
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no {name} under process {parent} within {within:?}");
}

/// Polls until process `pid` is dead (gone, or a zombie not yet reaped).
#[track_caller]
fn wait_for_death(pid: i32, within: Duration) -> SystemTime {
    let end = Instant::now() + within;
    while Instant::now() < end {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit_once(") ")
            .and_then(|(_, rest)| rest.chars().next());
        if matches!(state, None | Some('Z') | Some('X')) {
            return SystemTime::now();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    panic!("process {pid} still alive after {within:?}");
}

fn marker_dir(env: &TestEnv, name: &str) -> PathBuf {
    let dir = env.path().join(name);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A script that writes `started` and then waits, exiting 0 on SIGTERM
/// after writing `term`.
fn stoppable(dir: &Path) -> String {
    format!(
        "trap 'touch {d}/term; exit 0' TERM; touch {d}/started; while :; do sleep 0.05; done",
        d = dir.display()
    )
}

fn record_path(repo: &Repo<'_>, instance: &str, issue: u64) -> PathBuf {
    repo.dir
        .join(".git/maverick/claims")
        .join(instance)
        .join(format!("{issue}.json"))
}

/// [`screen`] of a run whose command was stopped, without the shell's own
/// `Terminated` (dash reports the `sleep` that the SIGTERM killed, unless
/// the signal came between two sleeps): what maverick printed.
fn stopped_screen(env: &TestEnv, run: &Run) -> String {
    screen_of_lines(env, run, |l| l != "Terminated")
}

fn record(repo: &Repo<'_>, instance: &str, issue: u64) -> Option<Value> {
    std::fs::read(record_path(repo, instance, issue))
        .ok()
        .map(|b| serde_json::from_slice(&b).unwrap())
}

fn read_json(repo: &Repo<'_>, instance: &str, issue: u64) -> (i32, Value) {
    let run = repo.maverick_as(instance, &["coord", "read", "--json", &issue.to_string()]);
    (run.code, run.json())
}

#[test]
fn exit_0_and_3_pass_through_and_release_with_the_right_reason() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let dir = marker_dir(&env, "env");
    let script = format!(
        "echo \"$MAVERICK_ISSUE $MAVERICK_INSTANCE $MAVERICK_GENERATION\" > {}/vars; \
         git maverick coord read 40 >/dev/null; echo $? > {}/read; exit 0",
        dir.display(),
        dir.display()
    );
    let mut cmd = run_command(
        &alice,
        &["--json", "--branch", "maverick/40-x", "40"],
        &script,
    );
    // `git maverick` inside CMD is the same instance: the claim is its own.
    let bin_dir = Path::new(crate::support::BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    cmd.env("PATH", path);
    let ok = Run::from_output(&["run"], cmd.output().unwrap());
    ok.expect(0);
    let json = ok.json();
    assert_eq!(json["released"], serde_json::json!([40]));
    assert_eq!(json["reason"], "merged");
    assert_eq!(json["status"], serde_json::json!({"exited": 0}));
    assert_eq!(
        std::fs::read_to_string(dir.join("vars")).unwrap().trim(),
        "40 alice 1"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("read")).unwrap().trim(),
        "0"
    );
    assert!(env.labels(40).is_empty(), "{:?}", env.labels(40));
    env.assert_released_once(40, "alice", "merged");
    assert!(
        record(&alice, "alice", 40).is_none(),
        "the record goes with the claim"
    );

    let failed = run_to_end(&alice, &["41"], "exit 3");
    insta::assert_snapshot!("run_a_command_that_fails", screen(&env, &failed));
    assert!(env.labels(41).is_empty());
    env.assert_released_once(41, "alice", "abort");

    let ejected = run_to_end(
        &alice,
        &["--success-reason", "ejected", "--scope", "43", "42"],
        "true",
    );
    ejected.expect(0);
    for issue in [42, 43] {
        env.assert_released_once(issue, "alice", "ejected");
        assert!(env.labels(issue).is_empty());
    }

    let killed = run_to_end(&alice, &["44"], "kill -KILL $$");
    killed.expect(128 + 9);
    env.assert_released_once(44, "alice", "abort");
}

#[test]
fn a_signal_to_maverick_reaches_the_command_then_releases_and_exits_128_plus_n() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    for (issue, signal, name) in [
        (50, libc::SIGTERM, "TERM"),
        (51, libc::SIGINT, "INT"),
        (52, libc::SIGHUP, "HUP"),
    ] {
        let dir = marker_dir(&env, name);
        let script = format!(
            "trap 'touch {d}/got-{name}; exit 0' {name}; touch {d}/started; \
             while :; do sleep 0.05; done",
            d = dir.display()
        );
        let mut child = spawn(with_default_signals(run_command(
            &alice,
            &[&issue.to_string()],
            &script,
        )));
        wait_for_file(&dir.join("started"), Duration::from_secs(10));
        // SAFETY: a plain kill(2) of our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, signal) };
        wait_for_exit(&mut child, Duration::from_secs(10));
        let run = finish(child);
        run.expect(128 + signal);
        assert!(
            dir.join(format!("got-{name}")).exists(),
            "the command got SIG{name}"
        );
        assert!(env.labels(issue).is_empty());
        env.assert_released_once(issue, "alice", "abort");
    }

    // A command with no handler dies of the signal, as it would without
    // maverick in between: the signals maverick waits for are not blocked
    // in the command.
    let mut child = spawn(run_command_argv(&alice, &["53"], &["sleep", "30"]));
    let pid = wait_for_child_named(child.id(), "sleep", Duration::from_secs(10));
    let sent = SystemTime::now();
    // SAFETY: a plain kill(2) of our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    wait_for_death(pid, Duration::from_secs(5));
    wait_for_exit(&mut child, Duration::from_secs(10));
    eprintln!(
        "SIGTERM to maverick -> plain command dead and run exited: {:.3}s",
        seconds_between(sent, SystemTime::now())
    );
    finish(child).expect(128 + libc::SIGTERM);
    env.assert_released_once(53, "alice", "abort");
}
#[test]
fn a_lost_claim_stops_the_command_at_the_next_heartbeat_and_leaves_the_new_holder_alone() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let dir = marker_dir(&env, "lost");
    let mut child = spawn(run_command(&alice, &["60"], &stoppable(&dir)));
    wait_for_file(&dir.join("started"), Duration::from_secs(10));

    // Someone drops the label and bob claims the free issue.
    bob.maverick(&["coord", "label", "remove", "60", "claude-in-progress"])
        .expect(0);
    bob.maverick(&["coord", "claim", "60"]).expect(0);
    // The next heartbeat, and no later one, finds the claim lost: the
    // command gets SIGTERM.
    env.advance_clock(HEARTBEAT_SECS);
    wait_for_file(&dir.join("term"), Duration::from_secs(20));
    wait_for_exit(&mut child, Duration::from_secs(10));
    let run = finish(child);
    insta::assert_snapshot!("run_when_the_claim_is_taken", stopped_screen(&env, &run));

    // Bob's claim is untouched: labelled, his, generation 2, never released.
    let (code, view) = read_json(&bob, "bob", 60);
    assert_eq!(code, 0);
    assert_eq!(view["decision"], "ours");
    assert_eq!(view["holder"]["generation"], 2);
    assert_eq!(env.labels(60), ["claude-in-progress"]);
    assert!(env.releases(60).iter().all(|(who, _)| who != "bob"));
    assert_eq!(read_json(&alice, "alice", 60).0, 4);
    // Alice's record no longer says she holds #60: it is marked lost.
    let rec = record(&alice, "alice", 60).expect("alice keeps a record of the loss");
    assert!(rec["lost"].is_string(), "{rec}");
}

#[test]
fn a_takeover_while_heartbeats_fail_finds_the_command_already_stopped() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let dir = marker_dir(&env, "takeover");
    // The tightest ttl the arithmetic allows, whole seconds: 2 × 1m + 10s + 1s.
    let timing = run_flags::timing("131s", "1m", "10s");
    let mut child = spawn(run_command_timed(
        &alice,
        &timing,
        &["70"],
        &stoppable(&dir),
    ));
    wait_for_file(&dir.join("started"), Duration::from_secs(10));

    // Alice's surface goes away: every heartbeat from now on fails.
    let missing = env.path().join("gone.git");
    alice.git(&["remote", "set-url", "origin", missing.to_str().unwrap()]);

    // Two heartbeat intervals: two failed heartbeats in a row, and the
    // command is stopped.
    env.advance_clock(HEARTBEAT_SECS);
    env.advance_clock(HEARTBEAT_SECS);
    wait_for_file(&dir.join("term"), Duration::from_secs(20));
    // The arithmetic's point: the command was stopped while the lease was
    // still live, so no takeover can ever run beside it.
    let (code, _) = read_json(&bob, "bob", 70);
    assert_eq!(code, 4, "held live when the command was stopped");
    wait_for_exit(&mut child, Duration::from_secs(10));
    let run = finish(child);
    insta::assert_snapshot!("run_when_heartbeats_fail", stopped_screen(&env, &run));

    // Past the ttl the lease is stale, and bob takes over.
    env.advance_clock(131 - 2 * HEARTBEAT_SECS);
    assert_eq!(read_json(&bob, "bob", 70).0, 5, "stale past the ttl");
    bob.maverick(&["coord", "takeover", "70"]).expect(0);
    alice.git(&["remote", "set-url", "origin", env.origin.to_str().unwrap()]);
    let (code, view) = read_json(&bob, "bob", 70);
    assert_eq!(code, 0);
    assert_eq!(view["holder"]["instance_id"], "bob");
    assert_eq!(view["holder"]["generation"], 2);
    assert!(env.releases(70).is_empty(), "nobody released anything");
    let rec = record(&alice, "alice", 70).expect("alice keeps a record of the loss");
    insta::assert_snapshot!(
        "run_when_heartbeats_fail_records",
        normalise(&env, rec["lost"].as_str().unwrap())
    );
}

#[test]
fn a_command_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let dir = marker_dir(&env, "stubborn");
    // It answers a ping as long as it lives.
    let script = format!(
        "trap 'touch {d}/term' TERM; echo $$ > {d}/pid; touch {d}/started; \
         while :; do [ -e {d}/ping ] && touch {d}/pong; sleep 0.05; done",
        d = dir.display()
    );
    let mut child = spawn(run_command(&alice, &["--json", "80"], &script));
    wait_for_file(&dir.join("started"), Duration::from_secs(10));
    let pid: i32 = std::fs::read_to_string(dir.join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    bob.maverick(&["coord", "label", "remove", "80", "claude-in-progress"])
        .expect(0);
    env.advance_clock(HEARTBEAT_SECS);
    wait_for_file(&dir.join("term"), Duration::from_secs(20));
    // A second short of the grace period, it still lives.
    env.advance_clock(GRACE_SECS - 1);
    std::fs::write(dir.join("ping"), "").unwrap();
    wait_for_file(&dir.join("pong"), Duration::from_secs(10));
    // The grace period is over: SIGKILL, on the clock the test moved (real
    // time would take the whole grace period).
    env.advance_clock(1);
    wait_for_death(pid, Duration::from_secs(5));
    wait_for_exit(&mut child, Duration::from_secs(10));
    let run = finish(child);
    run.expect(7);
    let json = run.json();
    assert_eq!(json["killed"], true, "{json}");
    assert_eq!(
        json["status"],
        serde_json::json!({"signaled": libc::SIGKILL})
    );
    // Not before the grace period was over, on the clock the test moved.
    let stopped_after = json["stopped_after_ms"].as_u64().unwrap();
    assert!(
        stopped_after >= GRACE_SECS * 1000,
        "SIGKILL came {stopped_after} ms after SIGTERM; the grace is {GRACE_SECS}s"
    );
}

/// The head of origin's ref for issue 90, once it differs from `last`.
#[track_caller]
fn wait_for_surface_write(env: &TestEnv, last: &Option<Vec<u8>>, within: Duration) -> Vec<u8> {
    let ref_file = env.origin.join("refs/maverick/issue/90");
    let end = Instant::now() + within;
    while Instant::now() < end {
        if let Ok(now) = std::fs::read(&ref_file) {
            if last.as_ref() != Some(&now) {
                return now;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no write on the surface within {within:?}");
}

#[test]
fn a_command_printing_megabytes_does_not_delay_the_heartbeats() {
    use std::io::Read as _;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let dir = marker_dir(&env, "flood");
    let script = format!(
        "touch {d}/started; while [ ! -e {d}/stop ]; do head -c 2000000 /dev/zero; sleep 0.01; done",
        d = dir.display()
    );
    // The tightest ttl (2 × 1m + 10s + 1s): every heartbeat is due, so
    // every one writes the lease, where the test can see it.
    let timing = run_flags::timing("131s", "1m", "10s");
    let mut child = spawn(run_command_timed(&alice, &timing, &["90"], &script));
    let mut stdout = child.stdout.take().unwrap();
    let read = Arc::new(AtomicU64::new(0));
    let reader = {
        let read = Arc::clone(&read);
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            while let Ok(n) = stdout.read(&mut buf) {
                if n == 0 {
                    break;
                }
                read.fetch_add(n as u64, Ordering::SeqCst);
            }
        })
    };
    // Until a few more megabytes came out: the command is flooding now.
    let flooding = |read: &AtomicU64| {
        let from = read.load(Ordering::SeqCst);
        let end = Instant::now() + Duration::from_secs(20);
        while read.load(Ordering::SeqCst) < from + 4_000_000 {
            assert!(Instant::now() < end, "the command stopped printing");
            std::thread::sleep(Duration::from_millis(5));
        }
    };
    wait_for_file(&dir.join("started"), Duration::from_secs(10));
    let mut head = Some(wait_for_surface_write(&env, &None, Duration::from_secs(10)));
    // Four heartbeat intervals, each while the command floods: each brings
    // its heartbeat.
    for _ in 0..4 {
        flooding(&read);
        env.advance_clock(HEARTBEAT_SECS);
        head = Some(wait_for_surface_write(&env, &head, Duration::from_secs(20)));
    }
    std::fs::write(dir.join("stop"), "").unwrap();
    wait_for_exit(&mut child, Duration::from_secs(10));
    reader.join().unwrap();
    finish(child).expect(0);
    assert!(read.load(Ordering::SeqCst) > 16_000_000);
    // claim, four heartbeats, release.
    env.assert_released_once(90, "alice", "merged");
}

#[test]
fn run_refuses_what_coord_claim_refuses_and_checks_its_arithmetic_first() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let ran = env.path().join("ran");
    let script = format!("touch {}", ran.display());

    let bad = run_command_timed(
        &alice,
        &run_flags::timing("3s", "1s", "1s"),
        &["100"],
        &script,
    )
    .output()
    .expect("git-maverick runs");
    let bad = Run::from_output(&["run"], bad);
    insta::assert_snapshot!(
        "run_with_a_lease_too_short_for_its_heartbeats",
        screen(&env, &bad)
    );
    assert!(env.surface_refs().is_none(), "nothing was claimed");

    bob.maverick(&["coord", "claim", "100"]).expect(0);
    let held = run_to_end(&alice, &["100"], &script);
    held.expect(4);
    bob.maverick(&["coord", "block", "101", "--by", "100"])
        .expect(0);
    run_to_end(&alice, &["101"], &script).expect(3);
    assert!(!ran.exists(), "the command never ran");

    let missing = alice.maverick(&["run", "102", "--", "no-such-command-here"]);
    missing.expect(127);
    env.assert_released_once(102, "alice", "abort");
}

#[test]
fn a_claim_held_before_run_is_renewed_and_kept() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    alice
        .maverick(&["coord", "claim", "110", "--branch", "maverick/110-x"])
        .expect(0);
    let run = run_to_end(&alice, &["110"], "exit 0");
    insta::assert_snapshot!("run_under_a_claim_held_before", screen(&env, &run));
    let (code, view) = read_json(&alice, "alice", 110);
    assert_eq!(code, 0);
    assert_eq!(view["decision"], "ours");
    assert!(env.releases(110).is_empty());
    let rec = record(&alice, "alice", 110).unwrap();
    assert_eq!(rec["branch"], "maverick/110-x");
}

#[test]
fn release_all_releases_this_instances_claims_and_none_of_anothers() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice.maverick(&["coord", "claim", "120"]).expect(0);
    alice
        .maverick(&["coord", "claim", "121", "--scope", "122"])
        .expect(0);
    // Another instance in the same clone, and one in another clone.
    alice
        .maverick_as("carol", &["coord", "claim", "123"])
        .expect(0);
    bob.maverick(&["coord", "claim", "124"]).expect(0);

    let run = alice.maverick(&["coord", "release-all", "--reason", "abort", "--json"]);
    run.expect(0);
    let json = run.json();
    assert_eq!(json["released"], serde_json::json!([120, 121, 122]));
    for issue in [120, 121, 122] {
        env.assert_released_once(issue, "alice", "abort");
        assert!(env.labels(issue).is_empty());
        assert!(record(&alice, "alice", issue).is_none());
    }
    for (issue, holder) in [(123, "carol"), (124, "bob")] {
        assert!(env.releases(issue).is_empty(), "#{issue} was released");
        assert_eq!(read_json(&alice, holder, issue).1["decision"], "ours");
    }
    assert!(record(&alice, "carol", 123).is_some());

    // Nothing left: a second sweep is a no-op.
    let again = alice.maverick(&["coord", "release-all"]);
    insta::assert_snapshot!("release_all_with_nothing_left", screen(&env, &again));
}

#[test]
fn with_json_the_command_writes_to_stderr_and_stdout_holds_one_object() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let run = run_to_end(&alice, &["--json", "14"], "echo hello from the command");
    run.expect(0);
    // `json()` asserts that stdout is exactly one line, one JSON object.
    let json = run.json();
    assert_eq!(json["ok"], true);
    // The command's line is on stderr, before or after maverick's own
    // (the two processes write at once); the snapshot has maverick's.
    let command: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| *l == "hello from the command")
        .collect();
    assert_eq!(command, ["hello from the command"], "{}", run.stderr);
    insta::assert_snapshot!(
        "run_json",
        screen_of_lines(&env, &run, |l| l != "hello from the command")
    );
}

/// SPEC 4: a person's claim never stays lost unseen. `run` on this
/// instance's own lapsed claim that nobody took takes it back at once, as
/// a new generation (a lapsed lease is never renewed); one somebody took
/// over is not run under.
#[test]
fn a_claim_whose_lease_lapsed_is_taken_back_by_run_while_nobody_took_it() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let ran = env.path().join("ran");
    let script = format!("touch {}", ran.display());
    alice
        .maverick(&["coord", "claim", "111", "--lease-ttl", "60s"])
        .expect(0);
    env.advance_clock(61);
    let before = bob.maverick(&["coord", "read", "111", "--json"]);
    before.expect(5);
    assert_eq!(before.json()["generation"], 1);

    // Nobody took it: run takes it back (generation 2), runs, releases.
    let run = run_to_end(&alice, &["111"], &script);
    run.expect(0);
    assert!(
        run.stderr.contains("holding #111 (generation 2)"),
        "{}",
        run.stderr
    );
    assert!(ran.exists(), "the command ran");
    env.assert_released_once(111, "alice", "merged");

    // Taken over by bob after it lapsed again: run refuses, nothing runs.
    std::fs::remove_file(&ran).unwrap();
    alice
        .maverick(&["coord", "claim", "111", "--lease-ttl", "60s"])
        .expect(0);
    env.advance_clock(61);
    bob.maverick(&["coord", "takeover", "111"]).expect(0);
    run_to_end(&alice, &["111"], &script).expect(4);
    assert!(!ran.exists(), "the command never ran");
}

/// A command that leaves a dead child behind, where nobody reaps orphans:
/// in a container whose init never reaps, modelled here by a parent of
/// `run` that takes orphans in (a child subreaper) and never reaps them.
/// The dead child is no straggler: `run` ends and releases at once, not
/// after its grace period (an hour here, which nobody brings).
#[test]
fn a_dead_child_nobody_reaps_does_not_hold_run_for_the_grace_period() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    // `true` ends first; `sleep`, its parent after the exec, never reaps it.
    let inner = run_command_timed(
        &alice,
        &run_flags::timing("3h", "30m", "1h"),
        &["112"],
        "true & exec sleep 0.2",
    );
    let mut cmd = Command::new("python3");
    cmd.args([
        "-c",
        // PR_SET_CHILD_SUBREAPER (36); `run` dies with it (PR_SET_PDEATHSIG).
        "import ctypes, subprocess, sys; libc = ctypes.CDLL(None); libc.prctl(36, 1, 0, 0, 0); \
         sys.exit(subprocess.call(sys.argv[1:], preexec_fn=lambda: libc.prctl(1, 9, 0, 0, 0)))",
    ])
    .arg(inner.get_program())
    .args(inner.get_args())
    .current_dir(inner.get_current_dir().expect("a clone's directory"));
    for (key, value) in inner.get_envs() {
        match value {
            Some(value) => cmd.env(key, value),
            None => cmd.env_remove(key),
        };
    }
    let mut child = spawn(cmd);
    wait_for_exit(&mut child, Duration::from_secs(60));
    finish(child).expect(0);
    env.assert_released_once(112, "alice", "merged");
}

/// The lease lapses while the command runs (GitHub's clock jumps past it
/// between two heartbeats): the next heartbeat finds it lost, not renewable,
/// and the command is stopped as for any lost claim.
#[test]
fn a_lease_that_lapses_while_the_command_runs_is_lost_and_the_command_stopped() {
    let env = TestEnv::with_surface(crate::support::Surface::Github);
    let alice = env.clone("alice");
    let dir = marker_dir(&env, "lapse");
    let mut child = spawn(run_command(&alice, &["130"], &stoppable(&dir)));
    wait_for_file(&dir.join("started"), Duration::from_secs(30));
    // GitHub's clock alone jumps past the lease; then comes the next
    // heartbeat. The command never ends on its own.
    env.github().advance_clock(TTL_SECS as i64 + 60);
    env.advance_clock(HEARTBEAT_SECS);
    wait_for_exit(&mut child, Duration::from_secs(20));
    let run = finish(child);
    insta::assert_snapshot!("run_when_the_lease_lapses", stopped_screen(&env, &run));
    assert!(dir.join("term").exists(), "the command got SIGTERM");
    let (_, view) = read_json(&env.clone("bob"), "bob", 130);
    assert_ne!(view["holder"]["instance_id"], "alice", "{view}");
}

/// `coord::hold`, the protocol `run` prints, in memory: the simulator's
/// surface (`support::sim`) in place of a real one, a real command in its
/// own process group, and the world's clock moved by the test.
mod hold_in_memory {
    use std::ffi::OsString;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    use maverick::clock::Clock;
    use maverick::config::{Settings, SurfaceKind};
    use maverick::coord::claims::{self, ReleaseReason};
    use maverick::coord::hold::{self, Ending, HoldReport, HoldRequest, Inbox, Released};
    use maverick::coord::lease::{ClaimOutcome, ClaimRequest, Coordinator, Decision};
    use maverick::coord::supervise::ChildStatus;
    use maverick::records::claim::ClaimStore;
    use maverick_core::ids::InstanceId;

    use crate::support::sim::{SimSurface, World};

    const ISSUE: u64 = 7;
    const ME: &str = "alice";
    const HEARTBEAT: Duration = Duration::from_secs(10);

    struct Held {
        world: Arc<Mutex<World>>,
        settings: Settings,
        dir: tempfile::TempDir,
    }

    impl Held {
        fn new() -> Held {
            Held {
                world: World::new(1).shared(),
                settings: Settings {
                    repo: Some("acme/widgets".into()),
                    lease_ttl: Duration::from_secs(60),
                    heartbeat_interval: HEARTBEAT,
                    settle_delay: Duration::ZERO,
                    // Moved by the test: no heartbeat comes on its own.
                    clock: Clock::manual(),
                    ..Settings::defaults(SurfaceKind::Github, ME)
                },
                dir: tempfile::tempdir().unwrap(),
            }
        }

        fn store(&self) -> ClaimStore {
            ClaimStore::new(self.dir.path())
        }

        fn surface(&self) -> SimSurface {
            SimSurface::new(&self.world, ME)
        }

        /// Claims the issue as `run` does before it holds it.
        fn claim(&self) -> u64 {
            let surface = self.surface();
            let coord = Coordinator::new(&surface, &self.settings);
            let req = ClaimRequest {
                issues: vec![ISSUE],
                branch: None,
                takeover: false,
            };
            match claims::claim(&coord, &self.store(), &req).unwrap() {
                ClaimOutcome::Claimed { generation, .. } => generation,
                other => panic!("not claimed: {other:?}"),
            }
        }

        /// Moves the world's clock `secs` seconds on.
        fn advance(&self, secs: u64) {
            self.world.lock().unwrap().advance(secs);
        }

        fn decision(&self) -> Decision {
            let surface = self.surface();
            let coord = Coordinator::new(&surface, &self.settings);
            coord.read(&[ISSUE]).unwrap().remove(0).decision()
        }

        /// Holds the claim while `sh -c script` runs; `on_start` runs once
        /// the command has started.
        fn hold(
            &self,
            generation: u64,
            already_held: bool,
            script: &str,
            mut on_start: impl FnMut(),
        ) -> HoldReport {
            let surface = self.surface();
            let coord = Coordinator::new(&surface, &self.settings);
            let request = HoldRequest {
                issues: vec![ISSUE],
                generation,
                already_held,
                claimed_at: self.settings.clock.instant(),
                command: ["sh", "-c", script].map(OsString::from).to_vec(),
                success_reason: ReleaseReason::Merged,
                grace: Duration::from_secs(1),
                stdout_to_stderr: false,
            };
            let world = Arc::clone(&self.world);
            let new_surface: hold::SurfaceMaker =
                Box::new(move || Some(Box::new(SimSurface::new(&world, ME))));
            hold::hold(
                &coord,
                self.store(),
                Inbox::without_signals(),
                request,
                new_surface,
                &mut |_| on_start(),
            )
            .unwrap()
        }
    }

    #[test]
    fn a_command_that_exits_0_releases_with_the_success_reason_and_sees_its_claim() {
        let held = Held::new();
        let generation = held.claim();
        let out = held.dir.path().join("env");
        let script = format!(
            "echo \"$MAVERICK_ISSUE $MAVERICK_INSTANCE $MAVERICK_GENERATION\" > {}",
            out.display()
        );
        let mut started = 0;
        let report = held.hold(generation, false, &script, || started += 1);
        assert_eq!(started, 1);
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            format!("{ISSUE} {ME} {generation}\n")
        );
        match report.ending {
            Ending::Exited {
                status: ChildStatus::Exited(0),
                received: None,
                released: Released::Done(issues, ReleaseReason::Merged),
            } => assert_eq!(issues, [ISSUE]),
            _ => panic!("not a clean exit with a merged release"),
        }
        assert_eq!(held.decision(), Decision::Free);
        assert!(held
            .store()
            .load(&InstanceId::parse(ME).unwrap(), ISSUE)
            .unwrap()
            .is_none());
    }

    #[test]
    fn a_failing_command_releases_with_abort_and_a_held_claim_is_kept() {
        let held = Held::new();
        let generation = held.claim();
        let report = held.hold(generation, false, "exit 3", || {});
        assert!(matches!(
            report.ending,
            Ending::Exited {
                status: ChildStatus::Exited(3),
                released: Released::Done(_, ReleaseReason::Abort),
                ..
            }
        ));
        assert_eq!(held.decision(), Decision::Free);

        // A claim this instance held before: renewed first, kept at the end.
        let generation = held.claim();
        let report = held.hold(generation, true, "exit 0", || {});
        assert!(matches!(
            report.ending,
            Ending::Exited {
                status: ChildStatus::Exited(0),
                released: Released::Kept,
                ..
            }
        ));
        assert_eq!(held.decision(), Decision::Ours);
    }

    /// `the lease of alice on #7 lapsed at TIME (DURATION ago); ...`, TIME a
    /// timestamp.
    fn assert_lapsed(reason: &str) {
        let (whose, rest) = reason.split_once(" lapsed at ").expect(reason);
        let (when, rest) = rest.split_once(" (").expect(reason);
        let (_ago, why) = rest.split_once(" ago); ").expect(reason);
        assert_eq!(whose, "the lease of alice on #7", "{reason}");
        assert!(
            crate::support::fake_github::parse_rfc3339(when).is_some(),
            "{reason}"
        );
        assert_eq!(
            why,
            "a lapsed lease is lost, and another instance may take the issue over"
        );
    }

    #[test]
    fn a_held_claim_whose_lease_lapsed_is_lost_before_the_command_starts() {
        let held = Held::new();
        let generation = held.claim();
        held.advance(61); // past the 60 s lease
        let ran = held.dir.path().join("ran");
        let mut started = false;
        let report = held.hold(
            generation,
            true,
            &format!("touch {}", ran.display()),
            || started = true,
        );
        let Ending::LostBeforeStart(reason) = report.ending else {
            panic!("the lapsed lease was renewed");
        };
        assert_lapsed(&reason);
        assert!(!started && !ran.exists(), "the command never ran");
        // The local record says the claim is lost (the pre-push hook reads it).
        let record = held
            .store()
            .load(&InstanceId::parse(ME).unwrap(), ISSUE)
            .unwrap()
            .unwrap();
        assert_eq!(record.lost, Some(reason));
    }

    #[test]
    fn a_lease_that_lapses_while_the_command_runs_stops_the_command() {
        let held = Held::new();
        let generation = held.claim();
        let started_at = Instant::now();
        let report = held.hold(
            generation,
            false,
            "exec sleep 30",
            // The world's clock jumps past the lease while the command
            // runs; then comes the next heartbeat.
            || {
                held.advance(120);
                held.settings.clock.advance(HEARTBEAT).unwrap();
            },
        );
        let Ending::Lost {
            reason,
            killed,
            released,
            status: report_status,
            ..
        } = report.ending
        else {
            panic!("the command was not stopped for a lost claim");
        };
        assert_lapsed(&reason);
        assert!(!killed, "SIGTERM was enough");
        assert_eq!(report_status, ChildStatus::Signaled(libc::SIGTERM));
        // The next heartbeat found it, at once, well before the silence deadline.
        assert!(started_at.elapsed() < Duration::from_secs(10));
        // Its own lapsed claim was still its own to release.
        assert!(matches!(released, Released::Done(_, ReleaseReason::Abort)));
        assert_eq!(held.decision(), Decision::Free);
    }
}

/// The surface time of the last heartbeat `repo`'s instance recorded for
/// `issue`, once it is `at` or later.
#[track_caller]
fn wait_for_beat_at(repo: &Repo<'_>, issue: u64, at: i64, within: Duration) -> i64 {
    use crate::support::mav::timefmt::Timestamp;
    let end = Instant::now() + within;
    while Instant::now() < end {
        let confirmed = record(repo, &repo.instance, issue)
            .and_then(|r| r["last_confirmed"].as_str().and_then(Timestamp::parse));
        if let Some(Timestamp(t)) = confirmed.filter(|t| t.0 >= at) {
            return t;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    panic!("no heartbeat of #{issue} at {at} or later within {within:?}");
}

#[test]
fn a_run_of_thirty_minutes_writes_its_lease_only_when_due_and_never_looks_stale() {
    use crate::support::mav::timefmt::Timestamp;
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let dir = marker_dir(&env, "long");
    let mut child = spawn(run_command(&alice, &["120"], &stoppable(&dir)));
    wait_for_file(&dir.join("started"), Duration::from_secs(10));
    let lease_ref = env.origin.join("refs/maverick/issue/120");
    let claimed = record(&alice, "alice", 120).expect("the claim is recorded");
    let claimed_at = Timestamp::parse(claimed["last_confirmed"].as_str().unwrap())
        .unwrap()
        .0;
    let mut head = std::fs::read(&lease_ref).ok();
    let mut written = Vec::new();
    // Thirty minutes: a heartbeat a minute, each waited for.
    for beat in 1..=30u64 {
        env.advance_clock(HEARTBEAT_SECS);
        let at = claimed_at + (beat * HEARTBEAT_SECS) as i64 - 1;
        wait_for_beat_at(&alice, 120, at, Duration::from_secs(20));
        let now = std::fs::read(&lease_ref).ok();
        if now != head {
            written.push(beat);
            head = now;
        }
        // Another instance sees it held live at every moment between.
        let (code, view) = read_json(&bob, "bob", 120);
        assert_eq!(code, 4, "after beat {beat}, bob sees: {view}");
        let left = Timestamp::parse(view["expires_at"].as_str().unwrap())
            .unwrap()
            .0
            - Timestamp::parse(view["now"].as_str().unwrap()).unwrap().0;
        assert!(
            left > HEARTBEAT_SECS as i64 + GRACE_SECS as i64,
            "after beat {beat} the lease has {left}s left"
        );
    }
    // ttl 5m, heartbeat 1m, grace 10s: a lease is written when at most
    // 2 × 1m + 30s are left, so every third beat (ttl − 2m of a lease's
    // 5m go by between writes), not every one.
    let every_third: Vec<u64> = (1..=10).map(|n| n * 3).collect();
    assert_eq!(written, every_third, "the beats that wrote the lease");
    // SAFETY: kill(2) on the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    wait_for_exit(&mut child, Duration::from_secs(10));
    finish(child).expect(128 + libc::SIGTERM);
    env.assert_released_once(120, "alice", "abort");
}
