//! The plugin in the real Claude Code client (issue 30, SPEC 11): the pinned
//! `@anthropic-ai/claude-code` that `scripts/test.sh` installs from npm runs
//! `claude -p` in a real clone, with the plugin installed from this checkout
//! the way the README says, against a scripted model server on 127.0.0.1
//! (`support::fake_anthropic`) that answers with Bash tool calls. Each hook
//! is checked by its effect, from outside: what the model was told at the
//! start, what reached the session's commands, what the remote holds after
//! the pushes the guard denied, and that the session's claim is released
//! by a process that outlives the client. strace checks that the client
//! and everything it starts connect to nothing but 127.0.0.1.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::agent_hooks::{session_log, wait_for_session_release};
use crate::support::fake_anthropic::{FakeModel, Step};
use crate::support::screen::normalise;
use crate::support::{Surface, TestEnv};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
const SESSION: &str = "5f0c2a9e-81d4-4b7e-9a61-0c3d2b1e7f44";
/// The first 10 hex digits of the SHA-256 of `SESSION`.
const INSTANCE: &str = "1d77aaf625";
const BRANCH: &str = "maverick/142-parser";
const THEIRS: &str = "maverick/143-lexer";
/// How long one client process may take on a loaded 2-core machine.
const CLIENT_BOUND: Duration = Duration::from_secs(300);

/// The Claude Code version `scripts/test.sh` pins.
fn pinned_version() -> String {
    let script =
        std::fs::read_to_string(Path::new(ROOT).join("scripts/test.sh")).expect("scripts/test.sh");
    script
        .lines()
        .find_map(|l| l.strip_prefix("claude_code="))
        .expect("scripts/test.sh pins claude_code=VERSION")
        .trim()
        .to_owned()
}

/// The `claude` of the pinned version: on PATH, or where `scripts/test.sh` installs
/// it. A missing client fails the test: it is part of the suite.
fn claude() -> PathBuf {
    let version = pinned_version();
    let tools = std::env::var_os("MAVERICK_CI_TOOLS")
        .map(PathBuf::from)
        .or_else(|| {
            let cache = std::env::var_os("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
            Some(cache.join("git-maverick-ci"))
        });
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("claude"))
                .collect()
        })
        .unwrap_or_default();
    candidates.extend(tools.map(|t| t.join(format!("claude-code-{version}/bin/claude"))));
    let mut seen = Vec::new();
    for candidate in candidates.into_iter().filter(|c| c.is_file()) {
        let out = Command::new(&candidate)
            .arg("--version")
            .env_clear()
            .env("HOME", std::env::temp_dir())
            .output();
        let said = out
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .unwrap_or_default();
        if said.starts_with(&format!("{version} ")) {
            return candidate;
        }
        seen.push(format!("{} says {said:?}", candidate.display()));
    }
    panic!(
        "Claude Code {version} (npm @anthropic-ai/claude-code@{version}) is not installed, and \
         this test drives the real client: run scripts/test.sh, which installs it into \
         ~/.cache/git-maverick-ci/claude-code-{version}/ (or put that version's `claude` on \
         PATH). Found instead: {seen:?}"
    );
}

/// strace, which checks where the client connects.
fn strace() -> PathBuf {
    let out = Command::new("sh")
        .args(["-c", "command -v strace"])
        .output()
        .expect("sh runs");
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert!(
        !path.is_empty(),
        "strace is not installed (Debian's `strace`; scripts/test.sh installs it): this test checks \
         with it that the client connects to nothing but 127.0.0.1"
    );
    PathBuf::from(path)
}

/// The instances as a snapshot names them (ten or more hex digits would
/// show as an object name).
fn named(text: &str) -> String {
    text.replace(INSTANCE, "[session-instance]")
        .replace("laptop-0a1b2c3d", "[laptop-instance]")
}

/// How strace shows a local socket or this machine's loopback address.
const LOCAL_ADDRESSES: [&str; 5] = [
    "AF_UNIX",
    "AF_LOCAL",
    "inet_addr(\"127.0.0.1\")",
    "\"::1\"",
    "\"::ffff:127.0.0.1\"",
];

/// Every address a traced process connected to that is not this machine's
/// loopback or a local socket.
fn connections_elsewhere(trace: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(trace).expect("the strace log");
    text.lines()
        .filter(|l| l.contains("connect("))
        .filter(|l| !LOCAL_ADDRESSES.iter().any(|local| l.contains(local)))
        .map(str::to_owned)
        .collect()
}

/// A client under strace; killed (its process group) if the test fails.
struct Running {
    strace: Child,
    stdout: PathBuf,
    stderr: PathBuf,
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.strace.try_wait() {
            // SAFETY: signalling our own child's process group.
            unsafe { libc::kill(-(self.strace.id() as i32), libc::SIGKILL) };
            let _ = self.strace.wait();
        }
    }
}

impl Running {
    /// The client's process: the child of strace's that runs claude's
    /// binary (strace starts short-lived children of its own first, to
    /// probe what ptrace can do).
    fn client_pid(&mut self) -> u32 {
        let binary = std::fs::canonicalize(claude()).expect("claude's binary");
        let children = format!("/proc/{0}/task/{0}/children", self.strace.id());
        let Running {
            strace,
            stdout,
            stderr,
        } = self;
        poll("strace to start claude", || {
            // Gone before the test saw it: it failed at once; say how.
            if let Some(status) = strace.try_wait().expect("strace is our child") {
                let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
                panic!(
                    "claude ended at once ({status}):\n{}\n{}",
                    read(stdout),
                    read(stderr)
                );
            }
            let text = std::fs::read_to_string(&children).ok()?;
            text.split_whitespace()
                .filter_map(|pid| pid.parse::<u32>().ok())
                .find(|pid| {
                    std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == binary)
                })
        })
    }

    /// Waits until the client itself has exited (strace may still trace
    /// what it left running); what it printed.
    fn client_exited(&mut self) -> (String, String) {
        let pid = self.client_pid();
        poll("claude to exit", || {
            // Gone, or a zombie strace has not reaped yet. (While it execs,
            // its stat may not read: that is no exit.)
            let exited = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Ok(stat) => stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|rest| rest.trim_start().starts_with('Z')),
                Err(_) => !Path::new(&format!("/proc/{pid}")).exists(),
            };
            exited.then_some(())
        });
        self.printed()
    }

    fn printed(&self) -> (String, String) {
        let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
        (read(&self.stdout), read(&self.stderr))
    }

    /// Waits for strace, so for every process it traced.
    fn finish(&mut self) -> std::process::ExitStatus {
        poll("strace and what it traced to exit", || {
            self.strace.try_wait().expect("strace is our child")
        })
    }
}

/// Polls `ready` for an event another process causes, within the bound.
#[track_caller]
fn poll<T>(what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + CLIENT_BOUND;
    loop {
        if let Some(value) = ready() {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "waited {CLIENT_BOUND:?} for {what}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts `claude ARGS` in `dir` under strace, with the environment it
/// needs: nothing of the caller's (an outer Claude Code session exports
/// variables that change how it runs), the test's hermetic git and GitHub
/// settings, and the settings that keep it offline.
fn start_client(
    env: &TestEnv,
    dir: &Path,
    model: &FakeModel,
    name: &str,
    args: &[&str],
) -> Running {
    let base = env.path().join("claude-runs");
    std::fs::create_dir_all(&base).unwrap();
    let running = |ext: &str| base.join(format!("{name}.{ext}"));
    let mut cmd = Command::new(strace());
    // --seccomp-bpf: only connect() stops the traced processes, not every
    // system call (half the client's time on a loaded machine).
    cmd.args(["-f", "-qq", "--seccomp-bpf", "-e", "trace=connect", "-o"])
        .arg(running("strace"))
        .arg(claude())
        .args(args)
        .current_dir(dir)
        .env_clear();
    env.apply_env(&mut cmd);
    cmd.env("TERM", "dumb")
        .env("SHELL", "/bin/bash")
        .env("ANTHROPIC_BASE_URL", model.url())
        .env("ANTHROPIC_API_KEY", "sk-ant-fake-key-for-tests")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_ERROR_REPORTING", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "0")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(running("out")).unwrap())
        .stderr(std::fs::File::create(running("err")).unwrap())
        .process_group(0);
    Running {
        strace: cmd.spawn().expect("strace runs claude"),
        stdout: running("out"),
        stderr: running("err"),
    }
}

/// The strace log of a run.
fn trace_of(env: &TestEnv, name: &str) -> PathBuf {
    env.path()
        .join("claude-runs")
        .join(format!("{name}.strace"))
}

/// Runs a short client command (`plugin install`) to its end; what it printed.
#[track_caller]
fn run_client(env: &TestEnv, dir: &Path, model: &FakeModel, name: &str, args: &[&str]) -> String {
    let mut running = start_client(env, dir, model, name, args);
    let status = running.finish();
    let (stdout, stderr) = running.printed();
    assert!(
        status.success(),
        "claude {args:?}: {status}\n{stdout}\n{stderr}"
    );
    assert_eq!(
        connections_elsewhere(&trace_of(env, name)),
        Vec::<String>::new(),
        "claude {args:?}"
    );
    stdout
}

#[test]
fn the_plugin_works_in_the_real_claude_code_client() {
    let started = Instant::now();
    let env = TestEnv::with_surface(Surface::Github);
    let repo = env.clone("agent");
    repo.maverick(&["hook", "install"]).expect(0);
    // The session resumes a claim of its own, and another instance of this
    // clone holds another issue.
    repo.maverick_as(INSTANCE, &["coord", "claim", "142", "--branch", BRANCH])
        .expect(0);
    repo.maverick_as(
        "laptop-0a1b2c3d",
        &["coord", "claim", "143", "--branch", THEIRS],
    )
    .expect(0);
    repo.git(&["switch", "--quiet", "-c", BRANCH]);

    let steps = [
        // The instance SessionStart exported reaches the session's commands.
        "echo \"instance=$MAVERICK_INSTANCE\"",
        // A plain push: the guard lets it through, and the pre-push hook
        // takes the pusher for the claim's holder.
        "git commit --quiet --allow-empty -m 'feat(parser): one' && git push --quiet origin maverick/142-parser",
        "git commit --quiet --allow-empty -m 'feat(parser): two'",
        // Pushes only the guard stands in front of: they skip the hook.
        "timeout 60 git push --no-verif origin maverick/142-parser",
        "if true; then git -c core.hooksPath=/dev/null push origin maverick/142-parser; fi",
        // A push to the branch another instance holds.
        "git push origin HEAD:maverick/143-lexer",
        // A forced push.
        "git reset --quiet --hard HEAD~2 && git commit --quiet --allow-empty -m 'feat(parser): other'",
        "git push --force origin maverick/142-parser",
        // A heredoc that only mentions a push is data.
        "cat > NOTES.md <<'EOF'\nNever git push --no-verify here.\nEOF",
    ];
    let model = FakeModel::start(
        steps.iter().map(|s| Step::Bash((*s).to_owned())).collect(),
        "Done: pushed one commit to maverick/142-parser.",
    );

    // The plugin from this checkout, installed as the README says.
    let validated = run_client(
        &env,
        &repo.dir,
        &model,
        "validate",
        &["plugin", "validate", ROOT],
    );
    assert!(!validated.contains("error"), "{validated}");
    run_client(
        &env,
        &repo.dir,
        &model,
        "marketplace",
        &["plugin", "marketplace", "add", ROOT],
    );
    run_client(
        &env,
        &repo.dir,
        &model,
        "install",
        &["plugin", "install", "git-maverick@git-maverick"],
    );

    // GitHub answers nothing until the test says so: the session needs no
    // network call, and the release at its end waits.
    env.github().hold_requests(true);
    let mut running = start_client(
        &env,
        &repo.dir,
        &model,
        "session",
        &[
            "-p",
            "Go on with issue 142.",
            "--session-id",
            SESSION,
            "--output-format",
            "json",
            "--allowedTools",
            "Bash",
        ],
    );
    let (out, err) = running.client_exited();
    let session_took = started.elapsed();
    let result: Value = serde_json::from_str(out.trim())
        .unwrap_or_else(|e| panic!("claude's result is not JSON ({e}):\n{out}\n{err}"));
    assert_eq!(result["subtype"], "success", "{result}\n{err}");
    assert_eq!(
        result["result"], "Done: pushed one commit to maverick/142-parser.",
        "{result}"
    );

    // SessionStart: the model was told its instance and its claim.
    let first = model.turns().into_iter().next().expect("a first turn");
    let told = first.to_string();
    assert!(
        told.contains(&format!(
            "git maverick: this session acts as instance {INSTANCE}"
        )),
        "{told}"
    );
    assert!(told.contains("#142"), "{told}");
    // The skill is offered.
    assert!(told.contains("git-maverick:git-maverick"), "{told}");

    let results = model.tool_results();
    assert_eq!(results.len(), steps.len(), "{results:#?}");
    let result_of = |step: usize| &results[step];
    assert_eq!(result_of(0).content.trim(), format!("instance={INSTANCE}"));
    for step in [1, 2, 6, 8] {
        assert!(
            !result_of(step).is_error,
            "step {step}: {:?}",
            result_of(step)
        );
    }
    // What the model was told of each denied step: the guard's reason
    // (naming `--no-verify`, `core.hooksPath`, the holder laptop-0a1b2c3d
    // and the forced push), as the pinned client passes it on.
    let mut told_of_denials = String::new();
    for step in [3, 4, 5, 7] {
        let r = result_of(step);
        assert!(r.is_error, "step {step} ran: {r:?}");
        told_of_denials.push_str(&format!("$ {}\n{}\n", steps[step], r.content));
    }
    insta::assert_snapshot!(
        "denied_steps_as_the_model_sees_them",
        normalise(&env, &named(&told_of_denials))
    );
    let denied: Vec<&str> = result["permission_denials"]
        .as_array()
        .expect("permission_denials")
        .iter()
        .filter_map(|d| d["tool_input"]["command"].as_str())
        .collect();
    assert_eq!(denied, [steps[3], steps[4], steps[5], steps[7]]);
    // From outside: the remote holds the one push that was let through.
    let subject = |branch: &str| {
        env.git_in(
            &env.origin,
            &["log", "-1", "--format=%s", &format!("refs/heads/{branch}")],
        )
    };
    assert_eq!(subject(BRANCH), "feat(parser): one");
    assert_eq!(env.origin_head(THEIRS), None);
    assert!(repo.dir.join("NOTES.md").is_file());

    // SessionEnd: the client is gone, and the release it started waits for
    // GitHub in a process that outlived it.
    let deadline = Instant::now() + Duration::from_secs(120);
    while env.github().held_requests() == 0 {
        assert!(Instant::now() < deadline, "no release asked GitHub");
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(env.releases(142).is_empty());
    env.github().hold_requests(false);
    let status = running.finish();
    assert!(status.success(), "claude exited {status}\n{err}");
    wait_for_session_release(&repo, INSTANCE);
    assert_eq!(
        env.releases(142),
        [(INSTANCE.to_owned(), "abort".to_owned())],
        "{}",
        session_log(&repo)
    );
    assert!(env.releases(143).is_empty(), "another instance's claim");
    insta::assert_snapshot!(
        "session_end_log_after_claude_exits",
        normalise(&env, &named(&session_log(&repo)))
    );

    // Nothing but 127.0.0.1: the model server, the fake GitHub, git.
    let session_trace = trace_of(&env, "session");
    assert_eq!(
        connections_elsewhere(&session_trace),
        Vec::<String>::new(),
        "the session connected elsewhere"
    );
    let trace = std::fs::read_to_string(&session_trace).unwrap();
    let port = |url: &str| url.rsplit(':').next().unwrap().to_owned();
    for (what, url) in [("model", model.url()), ("GitHub", env.github().url())] {
        assert!(
            trace.contains(&format!("htons({})", port(&url))),
            "no connection to the fake {what}"
        );
    }
    for request in model.received() {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/v1/messages")
        );
    }
    eprintln!(
        "claude -p session: {session_took:?} to the client's end, {:?} in all",
        started.elapsed()
    );
}
