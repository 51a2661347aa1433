//! The Claude Code plugin (SPEC 11): its manifests, and its hooks run as
//! Claude Code runs them: the command from `hooks/hooks.json` through a
//! shell, the event's JSON (`fixtures/claude-hooks/`) on stdin, the real
//! `git-maverick` on PATH, real clones of a real bare origin.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::screen::{normalise, screen_naming, screens};
use crate::support::{Repo, Run, Surface, TestEnv};
use serde_json::Value;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The session of the fixtures, and its instance: the first 10 hex digits
/// of the SHA-256 of the session id.
const SESSION: &str = "5f0c2a9e-81d4-4b7e-9a61-0c3d2b1e7f44";
pub(crate) const INSTANCE: &str = "1d77aaf625";
const BRANCH: &str = "maverick/142-parser";
/// The instances the snapshots name (ten or more hex digits would show as
/// an object name).
const NAMES: &[(&str, &str)] = &[
    (INSTANCE, "[session-instance]"),
    ("laptop-0a1b2c3d", "[laptop-instance]"),
];

/// A hook's run as a snapshot shows it, the instances named.
fn screen(env: &TestEnv, run: &Run) -> String {
    screen_naming(env, run, NAMES)
}

/// A text (a log, a reason) as a snapshot shows it, the instances named.
fn shown(env: &TestEnv, text: &str) -> String {
    let named = NAMES.iter().fold(text.to_owned(), |text, (value, name)| {
        text.replace(value, name)
    });
    normalise(env, &named)
}

fn read_json(relative: &str) -> Value {
    let path = Path::new(ROOT).join(relative);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{relative} is not JSON: {e}"))
}

/// The command `hooks/hooks.json` runs for `event`.
fn hook_command(event: &str) -> String {
    let hooks = read_json("hooks/hooks.json");
    let entry = &hooks["hooks"][event][0]["hooks"][0];
    assert_eq!(entry["type"], "command", "{event}");
    entry["command"].as_str().expect("a command").to_owned()
}

/// Runs the plugin's hook for `fixture`'s event in `dir`, as Claude Code
/// does, after `patch` has adjusted the input.
pub(crate) fn run_hook(
    repo: &Repo,
    fixture: &str,
    patch: impl FnOnce(&mut Value),
    envs: &[(&str, &std::ffi::OsStr)],
) -> Run {
    let mut input = read_json(&format!("fixtures/claude-hooks/{fixture}.json"));
    assert_eq!(input["session_id"], SESSION, "{fixture}");
    input["cwd"] = Value::String(repo.dir.display().to_string());
    let event = input["hook_event_name"].as_str().unwrap().to_owned();
    patch(&mut input);
    run_hook_input(repo, &event, input.to_string().as_bytes(), envs)
}

/// Runs the plugin's hook for `event` with `stdin` as its input, whatever
/// it is, as Claude Code runs it.
fn run_hook_input(
    repo: &Repo,
    event: &str,
    stdin: &[u8],
    envs: &[(&str, &std::ffi::OsStr)],
) -> Run {
    let command = hook_command(event);
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(&command);
    // Claude Code starts hooks in the project; the input's cwd says where.
    cmd.current_dir(repo.env.path());
    repo.env.apply_env(&mut cmd);
    for (key, value) in envs {
        cmd.env(key, value);
    }
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("sh runs");
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    Run::from_output(&[&command], child.wait_with_output().unwrap())
}

/// Runs the `fixture` SessionStart hook with `CLAUDE_ENV_FILE` set to a
/// fresh `env_file`; the run and what the hook wrote there.
fn session_start(repo: &Repo, fixture: &str, env_file: &Path) -> (Run, String) {
    let _ = std::fs::remove_file(env_file);
    let run = run_hook(
        repo,
        fixture,
        |_| {},
        &[("CLAUDE_ENV_FILE", env_file.as_os_str())],
    );
    run.expect(0);
    let written = std::fs::read_to_string(env_file).unwrap_or_default();
    (run, written)
}

/// The guard's answer to one Bash command line.
#[derive(Debug, PartialEq, Eq)]
enum Answer {
    Allow,
    Ask(String),
    Deny(String),
}

impl Answer {
    #[track_caller]
    fn denied(self, line: &str) -> String {
        match self {
            Answer::Deny(reason) => reason,
            other => panic!("{line}: denied expected, got {other:?}"),
        }
    }
}

/// The PreToolUse answer for one Bash command line, run in `repo`.
#[track_caller]
fn guard(repo: &Repo, line: &str) -> Answer {
    let run = run_hook(
        repo,
        "pre-tool-use-bash",
        |input| input["tool_input"]["command"] = Value::String(line.to_owned()),
        &[],
    );
    answer_of(&run, line)
}

/// The PreToolUse answer `run` gave (about `line`).
#[track_caller]
fn answer_of(run: &Run, line: &str) -> Answer {
    run.expect(0);
    assert!(run.stderr.is_empty(), "{line}: {}", run.stderr);
    if run.stdout.trim().is_empty() {
        return Answer::Allow;
    }
    let answer: Value = serde_json::from_str(run.stdout.trim()).expect("the answer is JSON");
    let out = &answer["hookSpecificOutput"];
    assert_eq!(out["hookEventName"], "PreToolUse");
    let reason = out["permissionDecisionReason"].as_str().unwrap().to_owned();
    match out["permissionDecision"].as_str() {
        Some("deny") => Answer::Deny(reason),
        Some("ask") => Answer::Ask(reason),
        _ => panic!("{line}: {answer}"),
    }
}

#[test]
fn the_plugin_manifests_have_claude_codes_documented_fields() {
    let plugin = read_json(".claude-plugin/plugin.json");
    let known = [
        "name",
        "version",
        "description",
        "author",
        "homepage",
        "repository",
        "license",
        "keywords",
        "commands",
        "agents",
        "skills",
        "hooks",
        "mcpServers",
        "lspServers",
        "outputStyles",
    ];
    for key in plugin.as_object().expect("an object").keys() {
        assert!(
            known.contains(&key.as_str()),
            "plugin.json: unknown field {key}"
        );
    }
    let name = plugin["name"].as_str().expect("name is required");
    let kebab = |s: &str| {
        s.starts_with(|c: char| c.is_ascii_lowercase())
            && s.split('-').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
            })
    };
    assert!(kebab(name), "plugin name {name:?} is not kebab-case");
    let version = plugin["version"].as_str().expect("a version");
    assert_eq!(
        version,
        env!("CARGO_PKG_VERSION"),
        "the plugin's version is the crate's"
    );
    assert!(plugin["description"].as_str().is_some_and(|d| d.len() > 40));
    assert!(plugin["author"]["name"].is_string());

    let market = read_json(".claude-plugin/marketplace.json");
    for key in market.as_object().unwrap().keys() {
        assert!(
            [
                "name",
                "owner",
                "plugins",
                "metadata",
                "$schema",
                "description",
                "version"
            ]
            .contains(&key.as_str()),
            "marketplace.json: unknown field {key}"
        );
    }
    assert!(kebab(market["name"].as_str().expect("a marketplace name")));
    assert!(
        market["owner"]["name"].is_string(),
        "owner.name is required"
    );
    let plugins = market["plugins"].as_array().expect("plugins");
    assert_eq!(plugins.len(), 1, "a one-plugin marketplace");
    assert_eq!(plugins[0]["name"], name);
    // A release bumps the crate's version; the plugin's follows it, in both
    // manifests (Claude Code offers an update when it changes).
    assert_eq!(
        plugins[0]["version"], version,
        "marketplace.json names the plugin's version"
    );
    let source = plugins[0]["source"].as_str().expect("a relative source");
    assert!(source.starts_with("./"), "{source}");
    assert!(
        Path::new(ROOT)
            .join(source)
            .join(".claude-plugin/plugin.json")
            .is_file(),
        "the source holds the plugin"
    );
    // The plugin's parts are where Claude Code looks for them by default.
    assert!(Path::new(ROOT)
        .join("skills/git-maverick/SKILL.md")
        .is_file());
    let hooks = read_json("hooks/hooks.json");
    let events: Vec<&String> = hooks["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events, ["PreToolUse", "SessionEnd", "SessionStart"]);
    assert_eq!(hooks["hooks"]["PreToolUse"][0]["matcher"], "Bash");
    // Each hook command is one this build knows.
    let env = TestEnv::new();
    let repo = env.clone("a");
    for event in events {
        let command = hook_command(event);
        assert!(command.starts_with("git maverick hook "), "{command}");
        let run = repo.maverick(&[
            "hook",
            command.trim_start_matches("git maverick hook "),
            "--help",
        ]);
        run.expect(0);
    }
}

#[test]
fn session_start_exports_the_instance_and_reports_the_claims_it_still_holds() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    let env_file = env.path().join("claude-env");
    // A fresh session, nothing held: the export and the instance, no claims.
    let (run, written) = session_start(&repo, "session-start", &env_file);
    assert_eq!(written, format!("export MAVERICK_INSTANCE={INSTANCE}\n"));
    let answer: Value = serde_json::from_str(run.stdout.trim()).expect("JSON on stdout");
    let context = answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["hookEventName"],
        "SessionStart"
    );
    insta::assert_snapshot!("session_start_of_a_fresh_session", shown(&env, context));

    // Every command of the session sources the file: it acts as the instance.
    repo.maverick_as(INSTANCE, &["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    let (run, _) = session_start(&repo, "session-start-resume", &env_file);
    let mut sh = Command::new("sh");
    sh.arg("-c")
        .arg(format!(
            ". '{}' && git maverick coord read --json 142",
            env_file.display()
        ))
        .current_dir(&repo.dir);
    env.apply_env(&mut sh);
    let read = Run::from_output(&["coord", "read"], sh.output().unwrap());
    let view = read.expect(0).json();
    assert_eq!(view["decision"], "ours", "{view}");
    insta::assert_snapshot!("session_start_with_a_claim_held", screen(&env, &run));
}

/// The hook resolves the instance as every command does (SPEC 2): a clone
/// whose `maverick.instance` names it acts as that instance in the session
/// too, and the export says so; without it, the session's derived id.
#[test]
fn session_start_resolves_the_instance_as_every_command_does() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    let env_file = env.path().join("claude-env");
    repo.git(&["config", "maverick.instance", "laptop-7"]);
    let (_, written) = session_start(&repo, "session-start", &env_file);
    assert_eq!(written, "export MAVERICK_INSTANCE=laptop-7\n");
    // What a command of the session (no MAVERICK_INSTANCE) resolves.
    let mut cmd = repo.maverick_command(&["config", "--json"]);
    cmd.env("CLAUDE_CODE_SESSION_ID", SESSION);
    let config = Run::from_output(&["config", "--json"], cmd.output().unwrap());
    let json = config.expect(0).json();
    let instance = json["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "instance")
        .unwrap();
    assert_eq!(instance["value"], "laptop-7", "{json}");

    repo.git(&["config", "--unset", "maverick.instance"]);
    let (_, written) = session_start(&repo, "session-start", &env_file);
    assert_eq!(written, format!("export MAVERICK_INSTANCE={INSTANCE}\n"));
}

/// The context a SessionStart run gave the model.
fn context_of(run: &Run) -> String {
    let answer: Value = serde_json::from_str(run.stdout.trim()).expect("JSON on stdout");
    answer["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .expect("additionalContext")
        .to_owned()
}

/// Without CLAUDE_ENV_FILE nothing exports the instance (issue 30): the
/// hook says what a command of the session will act as, and two sessions in
/// one clone stay two instances.
#[test]
fn session_start_without_claude_env_file_says_what_is_true_and_keeps_sessions_apart() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    let other_session = "0b7e4d21-aaaa-4bbb-8ccc-111122223333";
    let other_instance = {
        let run = run_hook(
            &repo,
            "session-start",
            |input| input["session_id"] = Value::from(other_session),
            &[],
        );
        let context = context_of(run.expect(0));
        let id = context
            .split("instance is ")
            .nth(1)
            .and_then(|rest| rest.split(',').next())
            .unwrap_or_else(|| panic!("{context}"))
            .to_owned();
        assert_ne!(id, INSTANCE);
        id
    };
    // Claude Code gave the hook neither CLAUDE_ENV_FILE nor a session id.
    let run = run_hook(&repo, "session-start", |_| {}, &[]);
    insta::assert_snapshot!("session_start_without_claude_env_file", screen(&env, &run));
    // That is true: a command run as it is acts as the clone's own instance.
    let config = repo
        .maverick_command(&["config", "--json"])
        .output()
        .unwrap();
    let config = Run::from_output(&["config", "--json"], config)
        .expect(0)
        .json();
    let clone_instance = config["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "instance")
        .unwrap()["value"]
        .clone();
    assert_ne!(clone_instance, INSTANCE, "{config}");
    // The two sessions, as told, claim as their own instances, and the end
    // of one releases its claims only.
    repo.maverick_as(INSTANCE, &["coord", "claim", "150"])
        .expect(0);
    repo.maverick_as(&other_instance, &["coord", "claim", "151"])
        .expect(0);
    run_hook(&repo, "session-end", |_| {}, &[]).expect(0);
    wait_for_session_release(&repo, INSTANCE);
    env.assert_released_once(150, INSTANCE, "abort");
    assert!(env.releases(151).is_empty());
    let read = repo.maverick_as(&other_instance, &["coord", "read", "--json", "151"]);
    assert_eq!(read.expect(0).json()["decision"], "ours");

    // With the session id in its environment, as Claude Code gives every
    // command, the hook says the instance comes from it.
    let run = run_hook(
        &repo,
        "session-start",
        |_| {},
        &[("CLAUDE_CODE_SESSION_ID", std::ffi::OsStr::new(SESSION))],
    );
    insta::assert_snapshot!("session_start_with_the_session_id", screen(&env, &run));
    // A clone that names its instance makes every session that one instance.
    repo.git(&["config", "maverick.instance", "laptop-7"]);
    let run = run_hook(&repo, "session-start", |_| {}, &[]);
    insta::assert_snapshot!("session_start_with_a_named_instance", screen(&env, &run));
}

#[test]
fn session_start_never_fails_the_session() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    // An env file that cannot be written, a cwd that is gone, input that is not JSON.
    let unwritable = env.path().join("no-such-dir/env");
    let gone = env.path().join("gone");
    type Case<'a> = (
        Box<dyn FnOnce(&mut Value) + 'a>,
        Vec<(&'a str, &'a std::ffi::OsStr)>,
    );
    let cases: Vec<Case> = vec![
        (
            Box::new(|_: &mut Value| {}),
            vec![("CLAUDE_ENV_FILE", unwritable.as_os_str())],
        ),
        (
            Box::new(|input: &mut Value| input["cwd"] = Value::String(gone.display().to_string())),
            vec![],
        ),
        (
            Box::new(|input: &mut Value| *input = Value::from(7)),
            vec![],
        ),
    ];
    for (patch, envs) in cases {
        let run = run_hook(&repo, "session-start", patch, &envs);
        run.expect(0);
        assert_eq!(run.stderr.lines().count(), 1, "one line: {}", run.stderr);
        assert!(
            run.stderr.starts_with("git maverick hook session-start: "),
            "{}",
            run.stderr
        );
    }
}

/// Waits until the release `hook session-end` started for `instance` has
/// finished: it holds the instance's lock from before the hook returns
/// until it exits, so taking the lock is the event.
pub(crate) fn wait_for_session_release(repo: &Repo, instance: &str) {
    let lock = repo
        .dir
        .join(format!(".git/maverick/session-end-{instance}.lock"));
    let file = std::fs::File::open(&lock)
        .unwrap_or_else(|e| panic!("no session-end lock {}: {e}", lock.display()));
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::os::fd::AsRawFd as _;
        // SAFETY: flock on a descriptor this thread owns.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        let _ = done.send(rc);
    });
    let rc = wait
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the session's release finishes within two minutes");
    assert_eq!(rc, 0, "flock {}", lock.display());
}

/// The clone's session-end log.
pub(crate) fn session_log(repo: &Repo) -> String {
    std::fs::read_to_string(repo.dir.join(".git/maverick/session-end.log")).unwrap_or_default()
}

/// Polls `what` until it holds (an event another process causes), for at
/// most two minutes.
#[track_caller]
pub(crate) fn wait_until(what: &str, mut holds: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !holds() {
        assert!(
            std::time::Instant::now() < deadline,
            "waited 120 s for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn session_end_releases_the_sessions_claims_and_nobody_elses(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let repo = env.clone("agent");
    let other = "0b7e4d2111";
    repo.maverick_as(INSTANCE, &["coord", "claim", "150", "--scope", "150,151"])
        .expect(0);
    repo.maverick_as(other, &["coord", "claim", "152"])
        .expect(0);
    let run = run_hook(&repo, "session-end", |_| {}, &[]);
    insta::assert_snapshot!("session_end_releasing", screen(&env, &run));
    wait_for_session_release(&repo, INSTANCE);
    for issue in [150, 151] {
        env.assert_released_once(issue, INSTANCE, "abort");
    }
    assert!(
        env.releases(152).is_empty(),
        "another instance's claim was released"
    );
    let read = repo.maverick_as(other, &["coord", "read", "--json", "152"]);
    assert_eq!(read.expect(0).json()["decision"], "ours");
    let records = repo.dir.join(".git/maverick/claims").join(INSTANCE);
    assert_eq!(
        std::fs::read_dir(records).map(|d| d.count()).unwrap_or(0),
        0
    );
    insta::assert_snapshot!("session_end_log", shown(&env, &session_log(&repo)));
    // Run again (a second SessionEnd): nothing left, nothing started, nothing written.
    let writes = env.write_count();
    let run = run_hook(&repo, "session-end", |_| {}, &[]);
    assert!(run.expect(0).stderr.is_empty(), "{}", run.stderr);
    assert_eq!(env.write_count(), writes);
}

on_both_surfaces!(session_end_releases_the_sessions_claims_and_nobody_elses);

/// Claude Code gives a plugin's SessionEnd hook about 1.5 s; a release on
/// GitHub can take longer. The hook returns while GitHub has not answered
/// yet, and the release it started, in a process session of its own,
/// finishes after it.
#[test]
fn session_end_returns_before_the_release_which_outlives_it() {
    let env = TestEnv::with_surface(Surface::Github);
    let repo = env.clone("agent");
    repo.maverick_as(INSTANCE, &["coord", "claim", "150"])
        .expect(0);
    env.github().hold_requests(true);
    let start = std::time::Instant::now();
    let run = run_hook(&repo, "session-end", |_| {}, &[]);
    let took = start.elapsed();
    run.expect(0);
    eprintln!("the session-end hook returned after {took:?}");
    // The release is under way, waiting for GitHub, after the hook is gone.
    wait_until("the release to ask GitHub", || {
        env.github().held_requests() > 0
    });
    assert!(env.releases(150).is_empty());
    let pid: u32 = run
        .stderr
        .split("(process ")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|pid| pid.parse().ok())
        .unwrap_or_else(|| panic!("no process named: {}", run.stderr));
    // It leads a session of its own: no terminal, no process group of the
    // agent's that a signal at the session's end would reach.
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the release runs");
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(fields[3], pid.to_string(), "session id of {pid}: {stat}");
    assert_eq!(fields[2], pid.to_string(), "process group of {pid}: {stat}");
    env.github().hold_requests(false);
    wait_for_session_release(&repo, INSTANCE);
    env.assert_released_once(150, INSTANCE, "abort");
    insta::assert_snapshot!(
        "session_end_log_of_a_release_that_outlived_the_hook",
        shown(&env, &session_log(&repo))
    );
}

/// Two SessionEnd hooks of one session (or a hook run by hand meanwhile):
/// one release, one release comment.
#[test]
fn session_end_is_safe_to_run_twice() {
    let env = TestEnv::with_surface(Surface::Github);
    let repo = env.clone("agent");
    repo.maverick_as(INSTANCE, &["coord", "claim", "150"])
        .expect(0);
    env.github().hold_requests(true);
    let first = run_hook(&repo, "session-end", |_| {}, &[]);
    let second = run_hook(&repo, "session-end", |_| {}, &[]);
    insta::assert_snapshot!(
        "session_end_twice",
        screens(&[
            ("session-end", screen(&env, &first)),
            ("session-end", screen(&env, &second)),
        ])
    );
    env.github().hold_requests(false);
    wait_for_session_release(&repo, INSTANCE);
    env.assert_released_once(150, INSTANCE, "abort");
    let third = run_hook(&repo, "session-end", |_| {}, &[]);
    assert!(third.expect(0).stderr.is_empty(), "{}", third.stderr);
    wait_for_session_release(&repo, INSTANCE);
    env.assert_released_once(150, INSTANCE, "abort");
    assert_eq!(session_log(&repo).matches("released #150").count(), 1);
}

#[test]
fn session_end_never_fails_teardown_and_leaves_the_lease_as_backstop() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    repo.maverick_as(INSTANCE, &["coord", "claim", "160"])
        .expect(0);
    // The remote is gone: the release cannot be written.
    repo.git(&["remote", "set-url", "origin", "/nonexistent/origin.git"]);
    let run = run_hook(&repo, "session-end", |_| {}, &[]);
    run.expect(0);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    wait_for_session_release(&repo, INSTANCE);
    assert!(env.releases(160).is_empty());
    insta::assert_snapshot!(
        "session_end_log_of_a_failed_release",
        shown(&env, &session_log(&repo))
    );
    // The claim's record stays: the lease is the backstop.
    assert!(repo
        .dir
        .join(format!(".git/maverick/claims/{INSTANCE}/160.json"))
        .is_file());
    // A directory that is no repository: nothing to do, no complaint.
    let plain = env.path().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let run = run_hook(&repo.at(plain), "session-end", |_| {}, &[]);
    run.expect(0);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    // Input that is not JSON: one line on stderr, exit 0.
    let run = run_hook(&repo, "session-end", |input| *input = Value::from(7), &[]);
    run.expect(0);
    assert!(
        run.stderr.starts_with("git maverick hook session-end: "),
        "{}",
        run.stderr
    );
}

#[test]
fn pre_tool_use_denies_pushes_that_skip_force_or_delete_a_managed_branch() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    repo.maverick_as(INSTANCE, &["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    repo.git(&["switch", "--quiet", "-c", BRANCH]);
    // Plain pushes and everything that is no push: no objection, no output.
    let mut reasons = String::new();
    for line in [
        "git push origin maverick/142-parser",
        "git push -u origin HEAD",
        "git push",
        "cargo test && git status",
        "echo 'git push --force origin maverick/142-parser'",
        "git commit -m 'do not git push -f'",
        "git push --force origin unrelated-branch",
        "git push origin --delete old-experiment",
    ] {
        assert_eq!(guard(&repo, line), Answer::Allow, "{line}");
    }
    for (line, says) in [
        (
            "git push --no-verify origin maverick/142-parser",
            "--no-verify",
        ),
        ("git push --no-verify", "--no-verify"),
        ("git push -f origin maverick/142-parser", "forced push"),
        ("git push --force", "forced push"),
        ("cd . && git push -fu origin HEAD", "forced push"),
        ("git push origin +maverick/142-parser", "forced push"),
        (
            "git push origin +HEAD:refs/heads/maverick/142-parser",
            "forced push",
        ),
        (
            "git push --force-with-lease origin maverick/142-parser",
            "forced push",
        ),
        ("git push origin --delete maverick/142-parser", "delete"),
        ("git push origin :maverick/142-parser", "delete"),
        ("git -C . push -d origin maverick/142-parser", "delete"),
        ("git push --mirror origin", "delete"),
    ] {
        let reason = guard(&repo, line).denied(line);
        reasons.push_str(&format!("$ {line}    # {says}\n{}\n", shown(&env, &reason)));
    }
    insta::assert_snapshot!("pre_tool_use_denials", reasons);
    // Any other tool is none of the guard's business.
    let run = run_hook(&repo, "pre-tool-use-edit", |_| {}, &[]);
    assert!(run.expect(0).stdout.is_empty());
}

/// The guard reads a command line as the shell will run it (issue 30):
/// wrappers, compound commands, git's unique option prefixes, `-c`
/// overrides, `send-pack`, aliases, and what is only data; it asks where
/// the shell alone can tell.
#[test]
fn pre_tool_use_reads_the_command_as_the_shell_runs_it() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    repo.maverick_as(INSTANCE, &["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    repo.maverick_as(
        "laptop-0a1b2c3d",
        &["coord", "claim", "143", "--branch", "maverick/143-lexer"],
    )
    .expect(0);
    repo.git(&["switch", "--quiet", "-c", BRANCH]);
    std::fs::create_dir_all(repo.dir.join("src")).unwrap();
    // Scripts the agent wrote earlier; a script runs where it is started.
    std::fs::write(
        repo.dir.join("push.sh"),
        "set -e\ngit push --no-verify origin maverick/142-parser\n",
    )
    .unwrap();
    std::fs::write(repo.dir.join("src/up.sh"), "cd ..\ngit push --force\n").unwrap();
    std::fs::write(
        repo.dir.join("src/ok.sh"),
        "git push origin maverick/142-parser\n",
    )
    .unwrap();
    // A remote maverick does not manage.
    env.git_in(env.path(), &["init", "--quiet", "--bare", "other.git"]);
    repo.git(&["remote", "add", "other", "../other.git"]);
    repo.git(&["config", "alias.pnv", "push --no-verify"]);
    repo.git(&["config", "alias.yolo", "!git push --force origin \"$@\" #"]);

    let denied: &[(&str, &str)] = &[
        // git takes any unique prefix of a long option.
        ("git push --no-verif", "--no-verify"),
        (
            "git push --no-veri origin maverick/142-parser",
            "--no-verify",
        ),
        ("git push --dele origin maverick/142-parser", "delete"),
        // Wrappers that run their arguments as a command.
        ("timeout 60 git push --no-verify", "--no-verify"),
        ("timeout -s KILL 5m git push -f", "forced push"),
        (
            "env GIT_TRACE=1 git push --no-verify origin HEAD",
            "--no-verify",
        ),
        ("command git push --no-verify", "--no-verify"),
        ("nice -n 5 git push -f", "forced push"),
        (
            "nohup git push --force origin maverick/142-parser &",
            "forced push",
        ),
        ("echo x | xargs git push --no-verify origin", "--no-verify"),
        ("sh -c 'git push --force-with-lease'", "forced push"),
        ("bash -lc \"cd src && git push --no-verify\"", "--no-verify"),
        ("eval git push --no-verify", "--no-verify"),
        // A script file a shell runs is read as it is now.
        ("sh push.sh", "--no-verify"),
        ("bash -o pipefail ./push.sh", "--no-verify"),
        (". ./push.sh", "--no-verify"),
        ("source push.sh", "--no-verify"),
        ("cd src && sh up.sh", "forced push"),
        ("bash <<'EOF'\ngit push --no-verify\nEOF", "--no-verify"),
        // Compound commands, lists, pipelines, substitutions.
        ("if true; then git push --no-verify; fi", "--no-verify"),
        ("{ git status; git push --force; }", "forced push"),
        ("(cd src; git push -f)", "forced push"),
        (
            "git status && git push --no-verify || echo failed",
            "--no-verify",
        ),
        ("for i in 1 2; do git push --no-verify; done", "--no-verify"),
        (
            "git log | head -1; git push origin :maverick/142-parser",
            "delete",
        ),
        ("echo \"$(git push --no-verify)\"", "--no-verify"),
        ("cd src && git push --no-verify", "--no-verify"),
        // What the line itself says is known.
        (
            "git push --no-verify origin \"$(git branch --show-current)\"",
            "--no-verify",
        ),
        (
            "B=maverick/142-parser; git push -f origin \"$B\"",
            "forced push",
        ),
        // Other ways to skip the hook.
        ("git -c core.hooksPath=/dev/null push", "core.hooksPath"),
        (
            "git -c core.hookspath=/dev/null push origin maverick/142-parser",
            "core.hooksPath",
        ),
        (
            "git send-pack ../origin.git maverick/142-parser",
            "send-pack",
        ),
        (
            "git send-pack --force ../origin.git maverick/142-parser",
            "send-pack",
        ),
        // Aliases are what they expand to.
        ("git pnv", "--no-verify"),
        ("git yolo maverick/142-parser", "forced push"),
    ];
    let mut reasons = String::new();
    for (line, says) in denied {
        let reason = guard(&repo, line).denied(line);
        reasons.push_str(&format!("$ {line}    # {says}\n{}\n", shown(&env, &reason)));
    }
    insta::assert_snapshot!("pre_tool_use_denials_as_the_shell_runs_it", reasons);

    let asked: &[(&str, &str)] = &[
        ("git push origin \"$BRANCH\"", "\"$BRANCH\""),
        ("git push --force origin $BRANCH", "$BRANCH"),
        (
            "git push -f origin \"$(cat branch.txt)\"",
            "$(cat branch.txt)",
        ),
        (
            "git push --no-verify \"$REMOTE\" maverick/142-parser",
            "$REMOTE",
        ),
        ("$GIT push --force origin maverick/142-parser", "$GIT"),
        ("cd \"$WORKTREE\" && git push --force", "directory"),
        ("git push --forc origin maverick/142-parser", "--forc"),
        ("git push --no-ver origin maverick/142-parser", "--no-ver"),
        ("git -c \"$SETTING\" push", "$SETTING"),
        (
            "git push --prune origin 'refs/heads/*:refs/heads/*'",
            "which branches --prune deletes",
        ),
        (
            "git push origin \"$(git branch --show-current)\" \"$OTHER\"",
            "$OTHER",
        ),
    ];
    let mut reasons = String::new();
    for (line, says) in asked {
        match guard(&repo, line) {
            Answer::Ask(reason) => {
                reasons.push_str(&format!("$ {line}    # {says}\n{}\n", shown(&env, &reason)))
            }
            other => panic!("{line}: ask expected, got {other:?}"),
        }
    }
    insta::assert_snapshot!("pre_tool_use_asks_as_the_shell_runs_it", reasons);

    for line in [
        // A heredoc is data, unless a shell reads it.
        "cat > notes.md <<'EOF'\nNever run git push --no-verify here.\nEOF",
        "cat <<EOF\ngit push --force origin maverick/142-parser\nEOF",
        "git commit -F - <<'EOF'\nci: git push --no-verify is gone\nEOF",
        "echo git push --force",
        "git commit -m \"do not git push --no-verify\"",
        "command -v git",
        // --no-verify to a remote or branch maverick does not manage.
        "git push --no-verify other maverick/142-parser",
        "git push --no-verify ../other.git HEAD",
        "git push --no-verify origin unrelated-branch",
        "git send-pack ../other.git maverick/142-parser",
        // What the guard can read and lets through.
        "git push origin maverick/142-parser",
        "git push -u origin \"$(git branch --show-current)\"",
        "git push --verify origin maverick/142-parser",
        "git push --force --dry-run origin maverick/142-parser",
        "git push --no-verify --dry-run",
        "git -c core.hooksPath=/dev/null status",
        "sh src/ok.sh",
        "sh not-written-yet.sh",
        "git p4 submit",
    ] {
        assert_eq!(guard(&repo, line), Answer::Allow, "{line}");
    }
}

/// The guard's reading of option spellings is git's own: for each
/// spelling, the guard's answer is checked against what the real git does
/// with it (a dry run: whether the pre-push hook ran, whether the push was
/// forced, whether git refused the option).
#[test]
fn pre_tool_use_reads_option_spellings_as_the_real_git_does() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    repo.maverick_as(INSTANCE, &["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    repo.git(&["switch", "--quiet", "-c", BRANCH]);
    repo.commit_file("a.txt", "a\n", "feat: a");
    let marker = repo.dir.join("hook-ran");
    let hook = repo.dir.join(".git/hooks/pre-push");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();

    // What git does with `git [GLOBAL] push --dry-run --porcelain SPELLING origin BRANCH`.
    let git_does = |global: &[&str], spelling: &[&str]| {
        let _ = std::fs::remove_file(&marker);
        let mut args: Vec<&str> = global.to_vec();
        args.extend(["push", "--dry-run", "--porcelain"]);
        args.extend(spelling);
        args.extend(["origin", BRANCH]);
        let out = repo.git_output(&args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), marker.exists(), stdout, stderr)
    };
    // git refuses an ambiguous option (129) and names what it could be:
    // the guard asks when one of those would skip the hook, force or
    // delete, and lets the rest through.
    let refused = |line: &str, stderr: &str, answer: Answer| {
        let could_be = stderr
            .lines()
            .find(|l| l.contains("ambiguous option"))
            .unwrap_or_else(|| panic!("{line}: {stderr}"));
        let risky = [
            "--no-verify",
            "--force ",
            "--force)",
            "--force-with-lease",
            "--delete",
        ]
        .iter()
        .any(|o| format!("{could_be})").contains(o));
        match answer {
            Answer::Ask(_) if risky => {}
            Answer::Allow if !risky => {}
            other => panic!("{line}: {could_be}: {other:?}"),
        }
    };

    let hook_spellings: &[(&[&str], &[&str])] = &[
        (&[], &["--no-verify"]),
        (&[], &["--no-verif"]),
        (&[], &["--no-veri"]),
        (&[], &["--no-ver"]),
        (&[], &["--no-v"]),
        (&[], &["--verify"]),
        (&[], &["--veri"]),
        (&[], &["--ver"]),
        (&[], &["--no-no-verify"]),
        (&[], &["--no-verify", "--verify"]),
        (&["-c", "core.hooksPath=/dev/null"], &[]),
        (&["-c", "Core.HooksPath=/dev/null"], &[]),
        (&["--config-env=core.hooksPath=HOME"], &[]),
    ];
    for (global, spelling) in hook_spellings {
        let mut words = vec!["git"];
        words.extend(*global);
        words.push("push");
        words.extend(*spelling);
        words.extend(["origin", BRANCH]);
        let line = words.join(" ");
        let (code, hook_ran, _, stderr) = git_does(global, spelling);
        let answer = guard(&repo, &line);
        match code {
            Some(0) if hook_ran => assert_eq!(answer, Answer::Allow, "{line}"),
            Some(0) => {
                answer.denied(&line);
            }
            Some(129) => refused(&line, &stderr, answer),
            other => panic!("{line}: git exited {other:?}: {stderr}"),
        }
    }

    // The local branch no longer contains the remote's head.
    repo.git(&["push", "--quiet", "--no-verify", "origin", BRANCH]);
    repo.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    repo.commit_file("b.txt", "b\n", "feat: b");
    let force_spellings: &[&[&str]] = &[
        &["--force"],
        &["-f"],
        &["-uf"],
        &["--forc"],
        &["--for"],
        &["--force-w"],
        &["--force-with-lease"],
        &["--force-i"],
        &["--no-force"],
        &["--force", "--no-force"],
        &["--no-forc"],
        &["--no-force", "--force-w"],
    ];
    for spelling in force_spellings {
        let line = format!("git push {} origin {BRANCH}", spelling.join(" "));
        let mut with_no_verify = spelling.to_vec();
        with_no_verify.push("--no-verify");
        let (code, _, porcelain, stderr) = git_does(&[], &with_no_verify);
        let forced = porcelain.lines().any(|l| l.starts_with('+'));
        let answer = guard(&repo, &line);
        match code {
            Some(0) if forced => {
                answer.denied(&line);
            }
            // Rejected as non-fast-forward: the guard leaves it to the hook.
            Some(0 | 1) => assert_eq!(answer, Answer::Allow, "{line}: {porcelain}"),
            Some(129) => refused(&line, &stderr, answer),
            other => panic!("{line}: git exited {other:?}: {porcelain}{stderr}"),
        }
    }
}

/// A record the guard cannot read is no verdict: a push it would have
/// judged from that record is asked about, never let through (SPEC 8: the
/// guard fails closed on what it cannot judge).
#[test]
fn pre_tool_use_asks_when_a_record_it_needs_is_damaged() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    repo.maverick_as(INSTANCE, &["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    repo.git(&["switch", "--quiet", "-c", BRANCH]);
    let line = "git push --force origin maverick/142-parser";
    assert!(matches!(guard(&repo, line), Answer::Deny(_)), "{line}");
    let record = repo
        .dir
        .join(format!(".git/maverick/claims/{INSTANCE}/142.json"));
    assert!(record.is_file(), "{}", record.display());
    std::fs::write(&record, "{ not json").unwrap();
    match guard(&repo, line) {
        Answer::Ask(reason) => assert!(!reason.is_empty()),
        other => panic!("a damaged record must be asked about: {other:?}"),
    }
}

#[test]
fn pre_tool_use_denies_a_push_to_a_branch_another_instance_holds() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    let theirs = "maverick/143-lexer";
    repo.maverick_as(
        "laptop-0a1b2c3d",
        &["coord", "claim", "143", "--branch", theirs],
    )
    .expect(0);
    let line = format!("git push origin HEAD:{theirs}");
    let reason = guard(&repo, &line).denied(&line);
    insta::assert_snapshot!(
        "pre_tool_use_denies_a_branch_held_by_another",
        shown(&env, &reason)
    );
    // Once that instance released it, the branch is free to push to.
    repo.maverick_as("laptop-0a1b2c3d", &["coord", "release", "143"])
        .expect(0);
    assert_eq!(guard(&repo, &line), Answer::Allow);
}

#[test]
fn pre_tool_use_in_a_repository_without_maverick_allows_everything_at_once() {
    let env = TestEnv::new();
    let repo = env.clone("plain");
    let start = std::time::Instant::now();
    for line in [
        "git push --force",
        "git push --no-verify origin main",
        "git push origin :main",
        "git push origin \"$BRANCH\" --force",
        "git -c core.hooksPath=/dev/null push",
    ] {
        assert_eq!(guard(&repo, line), Answer::Allow, "{line}");
    }
    eprintln!("five guard runs (sh + git-maverick): {:?}", start.elapsed());
}

/// The guard fails closed on a tool call it cannot read (SPEC 8): input
/// that is not JSON, cut short, empty or not an object, and a Bash call in
/// a cwd it cannot enter, are asked about with a reason the person reads,
/// never allowed. A well-formed call of a tool it does not guard stays
/// allowed, whatever its cwd.
#[test]
fn pre_tool_use_asks_when_it_cannot_read_the_tool_call() {
    let env = TestEnv::new();
    let repo = env.clone("agent");
    repo.maverick_as(INSTANCE, &["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    let line = "git push --force origin maverick/142-parser";
    let mut call = read_json("fixtures/claude-hooks/pre-tool-use-bash.json");
    call["cwd"] = Value::String(repo.dir.display().to_string());
    call["tool_input"]["command"] = Value::String(line.to_owned());
    let whole = call.to_string();
    let asked = |what: &str, run: &Run| match answer_of(run, what) {
        Answer::Ask(reason) => assert!(
            reason.contains("cannot read this tool call") && reason.contains("Check the command"),
            "{what}: {reason}"
        ),
        other => panic!("{what}: asked expected, got {other:?}"),
    };
    for (what, stdin) in [
        ("cut short", &whole[..whole.len() / 2]),
        ("a shell line", line),
        ("empty", ""),
        ("an array", "[]"),
    ] {
        asked(
            what,
            &run_hook_input(&repo, "PreToolUse", stdin.as_bytes(), &[]),
        );
    }
    // Well-formed JSON that names no tool, or a Bash call without a command.
    let mut no_tool = call.clone();
    no_tool.as_object_mut().unwrap().remove("tool_name");
    let mut no_command = call.clone();
    no_command["tool_input"] = serde_json::json!({"cmd": line});
    for (what, stdin) in [
        ("no tool", no_tool.to_string()),
        ("no command", no_command.to_string()),
    ] {
        asked(
            what,
            &run_hook_input(&repo, "PreToolUse", stdin.as_bytes(), &[]),
        );
    }
    let not_utf8 = [&whole.as_bytes()[..20], &[0xff, 0xfe][..]].concat();
    asked(
        "not UTF-8",
        &run_hook_input(&repo, "PreToolUse", &not_utf8, &[]),
    );
    let gone = env.path().join("gone");
    let run = run_hook(
        &repo,
        "pre-tool-use-bash",
        |input| {
            input["cwd"] = Value::String(gone.display().to_string());
            input["tool_input"]["command"] = Value::String(line.to_owned());
        },
        &[],
    );
    asked("a cwd that is gone", &run);
    // The same call, well-formed, is the guard's to judge: denied.
    let run = run_hook_input(&repo, "PreToolUse", whole.as_bytes(), &[]);
    assert!(matches!(answer_of(&run, line), Answer::Deny(_)));
    let run = run_hook(
        &repo,
        "pre-tool-use-edit",
        |input| {
            input["cwd"] = Value::String(gone.display().to_string());
        },
        &[],
    );
    assert_eq!(answer_of(&run, "Edit"), Answer::Allow);
}
