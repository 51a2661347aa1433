//! The agents' Bash guard against its corpus (issue 38): every line of
//! tests/guard_corpus.txt is judged by the real `git-maverick hook
//! pre-tool-use` with Claude Code's hook JSON on stdin, and then run for real
//! (`bash -c`) in a clone whose pre-push hook is installed, to see whether
//! origin's managed branches moved and whether the hook ran. No line the
//! guard allows may move a managed branch without the hook, and every line
//! gets the verdict the corpus expects.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::agent_hooks::run_hook;
use crate::support::{copy_tree, Repo, TestEnv};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The instance of the hook fixtures' session.
const INSTANCE: &str = "1d77aaf625";
const OURS: &str = "maverick/7-x";
const THEIRS: &str = "maverick/8-y";

/// One corpus entry.
#[derive(Debug)]
struct Entry {
    /// The corpus's line number.
    at: usize,
    expected: String,
    line: String,
}

/// `@braces N CMD` and friends: CMD nested N times.
fn expand(line: &str) -> String {
    let Some(rest) = line.strip_prefix('@') else {
        return line.to_owned();
    };
    let mut words = rest.splitn(3, ' ');
    let (kind, n, cmd) = (
        words.next().unwrap(),
        words.next().unwrap().parse::<usize>().unwrap(),
        words.next().unwrap(),
    );
    let (open, close) = match kind {
        "braces" => ("{ ", "; }"),
        "ifs" => ("if true; then ", "; fi"),
        "subshells" => ("( ", " )"),
        "evals" => ("eval ", ""),
        other => panic!("unknown corpus generator @{other}"),
    };
    format!("{}{cmd}{}", open.repeat(n), close.repeat(n))
}

fn corpus() -> Vec<Entry> {
    let text = std::fs::read_to_string(Path::new(ROOT).join("tests/guard_corpus.txt")).unwrap();
    let mut entries = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (expected, rest) = line.split_once(' ').expect("VERDICT LINE");
        assert!(
            matches!(expected, "allow" | "ask" | "deny"),
            "line {}: {line}",
            i + 1
        );
        let line = if rest == "<<" {
            let body: Vec<&str> = lines
                .by_ref()
                .map(|(_, l)| l)
                .take_while(|l| *l != ">>")
                .collect();
            body.join("\n")
        } else {
            expand(rest)
        };
        entries.push(Entry {
            at: i + 1,
            expected: expected.to_owned(),
            line,
        });
    }
    entries
}

/// The clone every line starts from (see the corpus's header); returns the
/// clone and the file the pre-push hook notes each run in.
fn prepare<'a>(env: &'a TestEnv, hook_log: &Path) -> Repo<'a> {
    let repo = env.clone("agent");
    repo.maverick(&["hook", "install"]).expect(0);
    repo.maverick_as(INSTANCE, &["coord", "claim", "7", "--branch", OURS])
        .expect(0);
    repo.maverick_as(
        "laptop-0a1b2c3d",
        &["coord", "claim", "8", "--branch", THEIRS],
    )
    .expect(0);
    repo.git(&["switch", "--quiet", "-c", OURS]);
    repo.commit_file("base.txt", "base\n", "feat: base");
    for (instance, spec) in [
        (INSTANCE, OURS.to_owned()),
        ("laptop-0a1b2c3d", format!("{OURS}:{THEIRS}")),
    ] {
        let pushed = repo.git_as_instance(
            &["push", "--quiet", "origin", &spec],
            &[("MAVERICK_INSTANCE", instance.as_ref())],
        );
        assert!(pushed.status.success(), "{pushed:?}");
    }
    repo.git(&[
        "branch",
        "--quiet",
        "--set-upstream-to",
        &format!("origin/{OURS}"),
    ]);
    repo.commit_file("ahead.txt", "ahead\n", "feat: ahead");
    repo.git(&["branch", "--quiet", "-f", THEIRS, "HEAD"]);
    repo.git(&["branch", "--quiet", "work", "HEAD"]);
    repo.git(&[
        "branch",
        "--quiet",
        "--set-upstream-to",
        &format!("origin/{OURS}"),
        "work",
    ]);
    repo.git(&["tag", "v1"]);
    env.git_in(env.path(), &["init", "--quiet", "--bare", "other.git"]);
    repo.write_file("push.sh", &format!("git push --no-verify origin {OURS}\n"));
    repo.write_file("ok.sh", &format!("git push origin {OURS}\n"));
    // The hook notes that it ran before it does anything else.
    let hook = repo.dir.join(".git/hooks/pre-push");
    let script = std::fs::read_to_string(&hook).unwrap();
    let (shebang, rest) = script.split_once('\n').unwrap();
    std::fs::write(
        &hook,
        format!("{shebang}\necho ran >> '{}'\n{rest}", hook_log.display()),
    )
    .unwrap();
    repo
}

/// What happened to one line.
#[derive(Debug)]
struct Outcome {
    verdict: String,
    reason: String,
    moved: bool,
    hook_ran: bool,
}

/// The guard's verdict on `line` in `repo`, the hook run as Claude Code
/// runs it (the plugin's hooks.json command, the event's JSON on stdin).
fn judge(repo: &Repo, line: &str) -> (String, String) {
    let run = run_hook(
        repo,
        "pre-tool-use-bash",
        |input| input["tool_input"]["command"] = Value::String(line.to_owned()),
        &[],
    );
    if run.code != 0 {
        // Claude Code runs the command when its hook fails.
        return ("crashed".to_owned(), run.stderr.trim().to_owned());
    }
    if run.stdout.trim().is_empty() {
        return ("allow".to_owned(), String::new());
    }
    let answer: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    let out = &answer["hookSpecificOutput"];
    (
        out["permissionDecision"]
            .as_str()
            .unwrap_or("allow")
            .to_owned(),
        out["permissionDecisionReason"]
            .as_str()
            .unwrap_or("")
            .to_owned(),
    )
}

/// Runs `line` for real in `dir` as this session's instance.
fn run_for_real(env: &TestEnv, dir: &Path, line: &str) {
    let mut cmd = Command::new("timeout");
    cmd.args(["30", "bash", "-c", line]).current_dir(dir);
    env.apply_env(&mut cmd);
    cmd.env("MAVERICK_INSTANCE", INSTANCE)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.status().unwrap();
}

fn origin_heads(env: &TestEnv) -> Vec<Option<String>> {
    [OURS, THEIRS].iter().map(|b| env.origin_head(b)).collect()
}

fn restore(snapshot: &Path, root: &Path) {
    std::fs::remove_dir_all(root).unwrap();
    copy_tree(snapshot, root);
}

#[test]
fn the_guard_lets_no_corpus_line_move_a_managed_branch_past_the_hook() {
    let entries = corpus();
    assert!(entries.len() >= 150, "{} lines", entries.len());
    let env = TestEnv::new();
    let logs = assert_fs::TempDir::new_in(crate::support::temp_base()).unwrap();
    let hook_log = logs.path().join("hook-ran");
    let repo = prepare(&env, &hook_log);
    let snapshot: PathBuf = logs.path().join("snapshot");
    copy_tree(env.path(), &snapshot);
    let before = origin_heads(&env);
    let mut outcomes = Vec::new();
    for entry in &entries {
        restore(&snapshot, env.path());
        let _ = std::fs::remove_file(&hook_log);
        let (verdict, reason) = judge(&repo, &entry.line);
        run_for_real(&env, &repo.dir, &entry.line);
        outcomes.push(Outcome {
            verdict,
            reason,
            moved: origin_heads(&env) != before,
            hook_ran: hook_log.exists(),
        });
    }
    let count = |v: &str| outcomes.iter().filter(|o| o.verdict == v).count();
    let bypassed: Vec<(&Entry, &Outcome)> = entries
        .iter()
        .zip(&outcomes)
        .filter(|(_, o)| o.moved && !o.hook_ran)
        .collect();
    let allowed_bypass: Vec<&(&Entry, &Outcome)> = bypassed
        .iter()
        .filter(|(_, o)| matches!(o.verdict.as_str(), "allow" | "crashed"))
        .collect();
    eprintln!(
        "guard corpus: {} lines; deny {}, ask {}, allow {}, crashed {}; {} moved a managed branch \
         without the hook, {} of them allowed",
        entries.len(),
        count("deny"),
        count("ask"),
        count("allow"),
        count("crashed"),
        bypassed.len(),
        allowed_bypass.len()
    );
    let mut wrong = String::new();
    for (entry, outcome) in entries.iter().zip(&outcomes) {
        if entry.expected != outcome.verdict {
            wrong.push_str(&format!(
                "line {}: expected {}, got {} ({}): {}\n",
                entry.at,
                entry.expected,
                outcome.verdict,
                outcome.reason.chars().take(160).collect::<String>(),
                entry.line.chars().take(160).collect::<String>()
            ));
        }
    }
    for (entry, _) in &allowed_bypass {
        wrong.push_str(&format!(
            "line {}: not stopped, and moved a managed branch without the pre-push hook: {}\n",
            entry.at,
            entry.line.chars().take(160).collect::<String>()
        ));
    }
    // The corpus exercises what it claims: the bypasses it denies or asks
    // about do bypass the hook when run.
    assert!(
        bypassed.len() >= 40,
        "only {} lines bypassed the hook",
        bypassed.len()
    );
    assert!(wrong.is_empty(), "{wrong}");
}
