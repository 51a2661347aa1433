//! SPEC 4: every command answers from one holding verdict. The table: each
//! holding state of #142, built for real (claims, leases, labels, the test
//! clock), × each command that judges a holder, run by the real binary
//! from alice's clone → its exit code and what it says. One snapshot per
//! surface: a command that judged the holder for itself (and, say, read
//! alice's own lapsed lease as "ours") shows up as a changed cell.

use serde_json::{json, Value};

use crate::support::screen::normalise;
use crate::support::{Repo, Run, Surface, TestEnv, STORY_BRANCH as BRANCH};

const ISSUE: &str = "142";

/// The holding states, as alice sees #142.
const STATES: &[&str] = &[
    "free",
    "ours",
    "ours, lapsed",
    "held by bob",
    "stale (bob's)",
    "blocked",
    "orphan label",
    "pull request",
];

/// The commands that judge a holder, as alice runs them.
const COMMANDS: &[&str] = &[
    "coord read",
    "coord claim",
    "coord heartbeat",
    "coord release",
    "coord takeover",
    "run",
    "task done",
    "resume",
    "status",
    "dispatch",
    "hydrate",
    "pre-push hook",
    "pre-tool-use guard",
];

/// Alice's clone on the story's branch, pushed before anyone claimed it,
/// with the hook installed, a tasks comment, and a frontier label.
fn base(env: &TestEnv) -> Repo<'_> {
    let alice = env.clone("alice");
    alice.maverick(&["hook", "install"]).expect(0);
    alice.git(&["switch", "--quiet", "-c", BRANCH]);
    alice.commit_file("src/base.rs", "// base\n", "feat: base");
    alice.git(&["push", "--quiet", "origin", BRANCH]);
    let tasks = env.input_file("tasks.md", "First — one\nSecond — two\n");
    alice.maverick(&["task", "init", ISSUE, &tasks]).expect(0);
    alice
        .maverick(&["coord", "label", "add", ISSUE, "agent-ready"])
        .expect(0);
    alice
}

/// Brings #142 into `state`; false when the surface cannot (pull requests
/// exist on GitHub only).
fn make(env: &TestEnv, alice: &Repo<'_>, state: &str) -> bool {
    let claim = |who: &Repo<'_>, ttl: &str| {
        who.maverick(&[
            "coord",
            "claim",
            ISSUE,
            "--branch",
            BRANCH,
            "--lease-ttl",
            ttl,
        ])
        .expect(0);
    };
    match state {
        "free" => {}
        "ours" => claim(alice, "10m"),
        "ours, lapsed" => {
            claim(alice, "60s");
            env.advance_clock(61);
        }
        "held by bob" => claim(&env.clone("bob"), "10m"),
        "stale (bob's)" => {
            claim(&env.clone("bob"), "60s");
            env.advance_clock(61);
        }
        "blocked" => {
            alice
                .maverick(&["coord", "block", ISSUE, "--by", "7"])
                .expect(0);
        }
        "orphan label" => {
            alice
                .maverick(&["coord", "label", "add", ISSUE, "claude-in-progress"])
                .expect(0);
        }
        "pull request" => {
            if env.surface() != Surface::Github {
                return false;
            }
            // A collaborator's pull request: only a trusted author's holds
            // the issues it closes (a stranger's holds nothing).
            env.github().add_user("bob", "COLLABORATOR");
            env.github()
                .open_pull(900, "bob", "bob-parser", "main", "Parses it.\n\nFixes #142");
        }
        other => panic!("no state {other}"),
    }
    true
}

/// Runs `command` as alice; its exit code and its answer in a few words.
fn answer(env: &TestEnv, alice: &Repo<'_>, command: &str) -> (i32, String) {
    let json =
        |run: &Run| -> Value { serde_json::from_str(run.stdout.trim()).unwrap_or(json!({})) };
    let first_line = |run: &Run| -> String {
        let line = run
            .stdout
            .lines()
            .chain(run.stderr.lines())
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .to_owned();
        said(env, &line)
    };
    let run = match command {
        "coord read" => {
            let run = alice.maverick(&["--json", "coord", "read", ISSUE]);
            let v = json(&run);
            return (run.code, format!("decision {}", v["decision"]));
        }
        "coord claim" | "coord takeover" | "coord heartbeat" => {
            let verb = command.trim_start_matches("coord ");
            let run = alice.maverick(&["--json", "coord", verb, ISSUE]);
            let v = json(&run);
            let generation = match &v["generation"] {
                Value::Null => String::new(),
                g => format!(", generation {g}"),
            };
            return (run.code, format!("{}{generation}", v["result"]));
        }
        "coord release" => alice.maverick(&["coord", "release", ISSUE]),
        "run" => alice.maverick(&["run", ISSUE, "--", "true"]),
        "task done" => {
            alice.write_file("src/task.rs", "// task\n");
            alice.git(&["add", "src/task.rs"]);
            alice.maverick(&["task", "done", "-m", "feat: the task"])
        }
        "resume" => alice.maverick(&["resume", BRANCH]),
        "status" => {
            let run = alice.maverick(&["--json", "status"]);
            let v = json(&run);
            let row = v["issues"]
                .as_array()
                .and_then(|rows| rows.iter().find(|r| r["issue"] == 142))
                .map_or_else(|| "no row".to_owned(), |r| format!("row {}", r["state"]));
            return (run.code, row);
        }
        "dispatch" => {
            let run = alice.maverick(&["--json", "dispatch"]);
            let v = json(&run);
            return (run.code, format!("{} {}", v["result"], v["issue"]));
        }
        "hydrate" => {
            let run = alice.maverick(&["--json", "hydrate", ISSUE]);
            let v = json(&run);
            return (run.code, format!("decision {}", v["decision"]));
        }
        "pre-push hook" => {
            alice.commit_file("src/pushed.rs", "// pushed\n", "feat: pushed");
            let out = alice.git_as_instance(&["push", "origin", BRANCH], &[]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            let said = stderr
                .lines()
                .find(|l| l.contains("maverick"))
                .map_or_else(|| "pushed".to_owned(), |l| said(env, l));
            return (out.status.code().unwrap_or(-1), said);
        }
        "pre-tool-use guard" => return guard(env, alice),
        other => panic!("no command {other}"),
    };
    (run.code, first_line(&run))
}

/// A line as the table shows it: times, ids and the child's pid as
/// placeholders.
fn said(env: &TestEnv, line: &str) -> String {
    let line = normalise(env, line);
    match line.split_once(" (pid ") {
        Some((before, _)) => before.to_owned(),
        None => line,
    }
}

/// The agents' Bash guard (the plugin's PreToolUse hook, as Claude Code
/// runs it) on `git push origin BRANCH`: allow, ask or deny.
fn guard(env: &TestEnv, alice: &Repo<'_>) -> (i32, String) {
    let alice_id = std::ffi::OsStr::new("alice");
    let run = crate::agent_hooks::run_hook(
        alice,
        "pre-tool-use-bash",
        |_| {},
        &[("MAVERICK_INSTANCE", alice_id)],
    );
    let said = match serde_json::from_str::<Value>(run.stdout.trim()) {
        Ok(v) => {
            let o = &v["hookSpecificOutput"];
            let reason = o["permissionDecisionReason"].as_str().unwrap_or("");
            let reason = said(env, reason.lines().next().unwrap_or(""));
            format!(
                "{}: {reason}",
                o["permissionDecision"].as_str().unwrap_or("?")
            )
        }
        Err(_) => "allow".to_owned(),
    };
    (run.code, said)
}

fn every_state_times_every_command(surface: Surface) {
    let mut table = String::new();
    let mut name = "";
    for state in STATES {
        for command in COMMANDS {
            let env = TestEnv::with_surface(surface);
            name = env.name();
            let alice = base(&env);
            if !make(&env, &alice, state) {
                break;
            }
            let (code, said) = answer(&env, &alice, command);
            table.push_str(&format!(
                "{state:<14} | {command:<18} | exit {code} | {said}\n"
            ));
        }
    }
    insta::assert_snapshot!(format!("holding_table_{name}"), table);
}

on_both_surfaces!(every_state_times_every_command);
