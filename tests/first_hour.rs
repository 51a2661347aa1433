//! A newcomer's first hour: the README's quick start works as written, and
//! no install line names a placeholder.

use std::process::Command;

use crate::support::{Surface, TestEnv};

on_both_surfaces!(
    the_readme_quick_start_works_as_written,
    verbose_shows_each_request_to_the_surface_and_why,
);

const README: &str = include_str!("../README.md");

/// The first indented block of the README: the quick start.
fn quick_start() -> Vec<&'static str> {
    README
        .lines()
        .skip_while(|line| !line.starts_with("    "))
        .take_while(|line| line.starts_with("    "))
        .map(str::trim)
        .collect()
}

fn the_readme_quick_start_works_as_written(surface: Surface) {
    let lines = quick_start();
    let (install, rest) = lines.split_first().expect("a quick start");
    // The install line takes the crate from the repository Cargo.toml names
    // (the binary under test stands in for what it builds).
    let repository = env!("CARGO_PKG_REPOSITORY");
    assert!(
        install.starts_with(&format!("cargo install --locked --git {repository} ")),
        "{install}"
    );
    let env = TestEnv::with_surface(surface);
    let repo = env.clone("alice");
    repo.write_file("fix.txt", "fixed\n");
    for line in rest {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", line]).current_dir(&repo.dir);
        env.apply_env(&mut cmd);
        cmd.env("MAVERICK_INSTANCE", "alice");
        let out = cmd.output().expect("sh runs");
        assert!(
            out.status.success(),
            "{line}\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        if line.starts_with("git maverick status") {
            let shown = String::from_utf8_lossy(&out.stdout);
            assert!(shown.contains("#142"), "{shown}");
        }
    }
    // The task's commit is on origin's branch, and the hook guards it.
    let head = env
        .origin_head("maverick/142-fix")
        .expect("the branch was pushed");
    let files = env.git_in(&repo.dir, &["show", "--name-only", "--format=", &head]);
    assert_eq!(files, "fix.txt");
    // `hook status` exits 0 when the guard is on.
    repo.maverick(&["hook", "status"]).expect(0);
    // The pushed branch tracks origin's, as after `git push -u`: git
    // status shows it, and a plain `git push` of the next commit works.
    let status = env.git_in(&repo.dir, &["status", "--short", "--branch"]);
    assert!(
        status.starts_with("## maverick/142-fix...origin/maverick/142-fix"),
        "{status}"
    );
    repo.write_file("more.txt", "more\n");
    env.git_in(&repo.dir, &["add", "more.txt"]);
    env.git_in(&repo.dir, &["commit", "--quiet", "-m", "fix: more"]);
    let mut push = Command::new("git");
    push.args(["push", "--quiet"]).current_dir(&repo.dir);
    env.apply_env(&mut push);
    push.env("MAVERICK_INSTANCE", "alice");
    let out = push.output().expect("git runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let local = env.git_in(&repo.dir, &["rev-parse", "HEAD"]);
    assert_eq!(
        env.origin_head("maverick/142-fix").as_deref(),
        Some(local.trim())
    );
}

#[test]
fn no_install_line_names_a_placeholder() {
    let skill = include_str!("../skills/git-maverick/SKILL.md");
    for (name, text) in [("README.md", README), ("SKILL.md", skill)] {
        assert!(!text.contains("OWNER/REPO"), "{name} names OWNER/REPO");
        for line in text.lines().filter(|l| l.contains("marketplace add")) {
            assert!(
                line.contains("git-maverick/git-maverick") || line.contains("./"),
                "{name}: {line}"
            );
        }
    }
}

/// Every command path of the clap tree but the hidden ones.
fn visible_paths(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(prefix.clone());
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        let mut path = prefix.clone();
        path.push(sub.get_name().to_owned());
        visible_paths(sub, path, out);
    }
}

/// `-h` shows a command's own options; the shared configuration flags
/// are in `--help` only, under one heading.
#[test]
fn short_help_shows_each_commands_own_options() {
    let env = TestEnv::new();
    let mut paths = Vec::new();
    visible_paths(&crate::support::mav::cli::command(), Vec::new(), &mut paths);
    let mut screens = String::new();
    for path in &paths {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("-h");
        let short = env.maverick_in(env.path(), &args, &[]);
        short.expect(0);
        for shared in [
            "--remote <NAME>",
            "--lease-ttl <DURATION>",
            "--repo <OWNER/NAME>",
            "Configuration:",
        ] {
            assert!(!short.stdout.contains(shared), "{args:?}: {}", short.stdout);
        }
        args.pop();
        args.push("--help");
        let long = env.maverick_in(env.path(), &args, &[]);
        let heading = long.stdout.find("\nConfiguration:\n").expect("the heading");
        for shared in ["--remote <NAME>", "--lease-ttl", "-R, --repo"] {
            let at = long.stdout.find(shared).expect(shared);
            assert!(at > heading, "{args:?}: {shared} is under Configuration");
        }
        let line = format!("git maverick {} -h", path.join(" "));
        screens.push_str(&format!(
            "$ {}\n{}\n",
            line.replace("  ", " "),
            short.stdout
        ));
    }
    // The own options of a command, e.g. claim's.
    assert!(screens.contains("--takeover"), "{screens}");
    insta::assert_snapshot!("short_help", screens);
}

/// What the real bash, with git's completion and maverick's script loaded,
/// offers: subcommands first (flags only for a `-` word), the values of
/// enum options, and no hidden command.
#[test]
fn bash_offers_subcommands_first_values_and_no_hidden_command() {
    use crate::native::complete;
    let env = TestEnv::new();
    let repo = env.clone("alice");
    let git = |words: &[&str]| complete(&env, &repo.dir, "__git_wrap__git_main", words);
    let visible: Vec<String> = crate::support::mav::cli::command()
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .map(|s| s.get_name().to_owned())
        .collect();
    assert_eq!(git(&["git", "maverick", ""]), visible);
    let flags = git(&["git", "maverick", "-"]);
    assert!(flags.iter().all(|w| w.starts_with('-')), "{flags:?}");
    assert!(flags.contains(&"--remote".to_owned()), "{flags:?}");
    assert_eq!(
        git(&["git", "maverick", "hook", ""]),
        ["install", "uninstall", "status"]
    );
    assert!(git(&["git", "maverick", "hook", "pre"]).is_empty());
    assert!(git(&["git", "maverick", "hook", "session"]).is_empty());
    assert_eq!(
        git(&["git", "maverick", "--surface", ""]),
        ["git", "github"]
    );
    assert_eq!(
        git(&["git", "maverick", "coord", "release", "5", "--reason", ""]),
        ["merged", "ejected", "abort"]
    );
    assert_eq!(
        git(&["git", "maverick", "status", "--format", ""]),
        ["text", "dot", "svg"]
    );
    assert_eq!(
        git(&["git", "maverick", "completions", ""]),
        ["bash", "zsh", "fish"]
    );
}

/// `error:`, `hint:` and `warning:` in clap's colours where clap colours:
/// on a terminal (script(1) gives one), or under CLICOLOR_FORCE; never
/// under NO_COLOR, in a pipe, or with `--json`.
#[test]
fn error_and_hint_prefixes_are_coloured_as_clap_colours_them() {
    let env = TestEnv::new();
    let run = |args: &[&str], vars: &[(&str, &str)]| {
        let mut cmd = Command::new(crate::support::BIN);
        cmd.args(args).current_dir(env.path());
        env.apply_env(&mut cmd);
        cmd.env_remove("NO_COLOR");
        cmd.envs(vars.iter().copied());
        String::from_utf8(cmd.output().unwrap().stderr).unwrap()
    };
    let force = [("CLICOLOR_FORCE", "1")];
    // clap's own `error:` (a usage error), the bytes to match.
    let clap_error = run(&["coord", "read", "x"], &force);
    let clap_prefix = &clap_error[..clap_error.find(" ").unwrap()];
    assert!(
        clap_prefix.contains("\x1b[") && clap_prefix.ends_with("\x1b[0m"),
        "{clap_error:?}"
    );
    // Ours: not a repository, with a hint.
    let ours = run(&["coord", "read", "5"], &force);
    assert!(
        ours.starts_with(&format!("{clap_prefix} not inside a git repository")),
        "{ours:?}"
    );
    assert!(
        ours.contains("\n\x1b[32mhint:\x1b[0m run git maverick"),
        "{ours:?}"
    );
    let plain = "error: not inside a git repository\nhint: ";
    for (args, vars) in [
        (&["coord", "read", "5"][..], &[][..]),
        (
            &["coord", "read", "5"],
            &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")],
        ),
    ] {
        let stderr = run(args, vars);
        assert!(stderr.starts_with(plain), "{args:?} {vars:?}: {stderr:?}");
    }
    // With --json the object on stdout is the error: no text lines beside it.
    assert_eq!(run(&["coord", "read", "5", "--json"], &force), "");
    // A terminal, no forcing variable.
    let mut cmd = Command::new("script");
    cmd.args(["--quiet", "--return", "--command"])
        .arg(format!("{} coord read 5", crate::support::BIN))
        .arg("/dev/null")
        .current_dir(env.path());
    env.apply_env(&mut cmd);
    cmd.env_remove("NO_COLOR").env("TERM", "xterm-256color");
    let out = cmd.output().expect("script(1) runs (util-linux)");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.starts_with(&format!("{clap_prefix} not inside")),
        "{shown:?}"
    );
}

/// `-v`: one line on stderr per request to the surface, what it asks, why,
/// and the answer (on GitHub: a 304 said to come from the cache).
fn verbose_shows_each_request_to_the_surface_and_why(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let repo = env.clone("alice");
    repo.maverick(&["coord", "claim", "5"]).expect(0);
    let first = repo.maverick(&["coord", "read", "5", "-v"]);
    first.expect(0);
    let again = repo.maverick(&["coord", "read", "5", "-v"]);
    again.expect(0);
    // Plain lines, as the rest of the output: no log level in front.
    let requests = |run: &crate::support::Run| -> Vec<String> {
        run.stderr.lines().map(str::to_owned).collect()
    };
    assert!(!requests(&first).is_empty(), "{}", first.stderr);
    if surface == Surface::Github {
        assert!(
            requests(&again)
                .iter()
                .all(|l| l.ends_with(": 304, from the cache")),
            "{}",
            again.stderr
        );
    }
    let quiet = repo.maverick(&["coord", "read", "5"]);
    assert_eq!(quiet.stderr, "", "without -v, no request lines");
    insta::assert_snapshot!(
        format!("verbose_read_{}", env.name()),
        crate::support::screen::screens(&[
            (
                "coord read 5 -v",
                crate::support::screen::screen(&env, &first)
            ),
            (
                "coord read 5 -v, again",
                crate::support::screen::screen(&env, &again)
            ),
        ])
    );
}

/// README.md and every page under docs/ (pages added later included).
fn documentation() -> Vec<(String, String)> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![("README.md".to_owned(), README.to_owned())];
    let mut names: Vec<_> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    names.sort();
    for path in names {
        let text = std::fs::read_to_string(&path).unwrap();
        let name = path.strip_prefix(root).unwrap().display().to_string();
        pages.push((name, text));
    }
    pages
}

/// The `git maverick …` commands a page shows: in ```sh blocks and in
/// indented code blocks, each command of a line (`a && b`, `x | b`), its
/// comment and redirections left off.
fn documented_commands(text: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut fence: Option<String> = None;
    for line in text.lines() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("```") {
            fence = match fence {
                Some(_) => None,
                None => Some(rest.trim().to_owned()),
            };
            continue;
        }
        let code = match &fence {
            Some(lang) => matches!(lang.as_str(), "sh" | "bash" | "console" | "shell"),
            None => line.starts_with("    "),
        };
        if !code {
            continue;
        }
        let line = trimmed.split(" # ").next().unwrap_or(trimmed);
        for part in line.split(['|', ';']).flat_map(|p| p.split("&&")) {
            let part = part.trim();
            let part = part.strip_prefix("$ ").unwrap_or(part);
            let Some(args) = part.strip_prefix("git maverick ") else {
                continue;
            };
            // Redirections are the shell's, not maverick's.
            let args = args.split([' ']).take_while(|w| !w.starts_with(['>', '<']));
            let args: Vec<&str> = args.take_while(|w| !w.starts_with("2>")).collect();
            commands.push(args.join(" "));
        }
    }
    commands
}

/// Every `git maverick` command the README and docs/ show parses with the
/// real binary's command line: run with `--help` added (before a `--`,
/// which hands the rest to another program), clap rejects an unknown
/// command or flag and a bad value before it prints the help.
#[test]
fn every_command_the_docs_show_parses() {
    let env = TestEnv::new();
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (page, text) in documentation() {
        for args in documented_commands(&text) {
            let words: Vec<&str> = args.split_whitespace().collect();
            let at = words.iter().position(|w| *w == "--").unwrap_or(words.len());
            let script = format!(
                "exec git-maverick {} --help {}",
                words[..at].join(" "),
                words[at..].join(" ")
            );
            let mut cmd = Command::new("sh");
            cmd.args(["-c", &script]).current_dir(env.path());
            env.apply_env(&mut cmd);
            let out = cmd.output().expect("sh runs");
            checked += 1;
            if !out.status.success() {
                wrong.push(format!(
                    "{page}: git maverick {args}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            }
        }
    }
    assert!(checked > 40, "only {checked} commands found in the docs");
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// On a terminal a fetch says what maverick waits for and lets git's own
/// progress through (as `git fetch` does there); in a pipe, neither.
#[test]
fn a_fetch_on_a_terminal_shows_what_it_waits_for_and_gits_progress() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let branch = "maverick/5-progress";
    alice
        .maverick(&["coord", "claim", "5", "--branch", branch])
        .expect(0);
    alice.git(&["switch", "--quiet", "-c", branch]);
    alice.write_file("a.txt", "a\n");
    alice.git(&["add", "a.txt"]);
    alice.git(&["commit", "--quiet", "-m", "feat: a"]);
    alice.git(&["push", "--quiet", "origin", branch]);

    // The same instance picks the branch up in another clone, on a terminal,
    // after one more push: the fetch has objects to bring (a heartbeat no
    // longer writes, and so pushes, a lease that has time enough left).
    let laptop = env.clone("laptop");
    alice.write_file("b.txt", "b\n");
    alice.git(&["add", "b.txt"]);
    alice.git(&["commit", "--quiet", "-m", "feat: b"]);
    alice.git(&["push", "--quiet", "origin", branch]);
    let mut cmd = Command::new("script");
    cmd.args(["--quiet", "--return", "--command"])
        .arg(format!("{} resume {branch}", crate::support::BIN))
        .arg("/dev/null")
        .current_dir(&laptop.dir);
    env.apply_env(&mut cmd);
    cmd.env("MAVERICK_INSTANCE", "alice")
        .env("TERM", "xterm-256color");
    let out = cmd.output().expect("script(1) runs (util-linux)");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(shown.contains("git maverick: "), "{shown}");
    assert!(shown.contains("objects"), "git's progress: {shown}");
    // The checkout of the worktree, which takes seconds on a large tree.
    assert!(
        shown.contains(&format!("git maverick: checking out {branch} into ")),
        "{shown}"
    );

    // In a pipe: the same resume (run again, it does no harm) says neither.
    let mut piped = laptop.maverick_command(&["resume", branch]);
    piped.env("MAVERICK_INSTANCE", "alice");
    let out = piped.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !stderr.contains("git maverick: ") && !stderr.contains("objects"),
        "{stderr}"
    );
}

/// The colour settings are read by the `git config` process that lists the
/// `maverick.*` keys for the settings: a command pays one, not three (one
/// per colour key besides). Counted from git's own trace.
#[test]
fn colour_and_settings_come_from_one_git_config_process() {
    let env = TestEnv::new();
    let repo = env.clone("alpha");
    repo.git(&["config", "color.maverick", "always"]);
    // A key nobody reads: a `warning:` on stderr, in colour.
    repo.git(&["config", "maverick.leaseTll", "5m"]);
    let trace = env.path().join("git-trace");
    let mut cmd = repo.maverick_command(&["status"]);
    cmd.env_remove("NO_COLOR").env("GIT_TRACE", &trace);
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("\x1b[1m\x1b[33mwarning:\x1b[0m unknown config key"),
        "color.maverick = always colours the warning: {stderr:?}"
    );
    let trace = std::fs::read_to_string(&trace).unwrap();
    let config: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains("built-in: git config"))
        .filter(|l| l.contains("maverick") || l.contains("color"))
        .filter(|l| !l.contains("protectBranches"))
        .collect();
    assert_eq!(
        config.len(),
        1,
        "one git config for colour and settings: {config:#?}"
    );
}

/// Colour as git decides it: `--color=always|never|auto` beats git's
/// `color.maverick`, which beats `color.ui`; `always` colours a pipe too.
#[test]
fn colour_follows_the_color_flag_then_color_maverick_then_color_ui() {
    let env = TestEnv::new();
    let run = |args: &[&str], config: &[(&str, &str)]| {
        let home_config = env.path().join("colour-gitconfig");
        let mut text = String::new();
        for (key, value) in config {
            let (section, name) = key.split_once('.').unwrap();
            text.push_str(&format!("[{section}]\n\t{name} = {value}\n"));
        }
        std::fs::write(&home_config, text).unwrap();
        let mut cmd = Command::new(crate::support::BIN);
        cmd.args(args).current_dir(env.path());
        env.apply_env(&mut cmd);
        cmd.env_remove("NO_COLOR")
            .env("GIT_CONFIG_GLOBAL", &home_config);
        let stderr = String::from_utf8(cmd.output().unwrap().stderr).unwrap();
        stderr.contains("\x1b[")
    };
    let read = ["coord", "read", "5"];
    assert!(!run(&read, &[]), "a pipe, auto: plain");
    assert!(run(&read, &[("color.ui", "always")]));
    assert!(!run(
        &read,
        &[("color.ui", "always"), ("color.maverick", "never")]
    ));
    assert!(run(
        &read,
        &[("color.ui", "never"), ("color.maverick", "always")]
    ));
    assert!(!run(
        &["--color=never", "coord", "read", "5"],
        &[("color.ui", "always")]
    ));
    assert!(run(&["coord", "read", "5", "--color=always"], &[]));
    assert!(run(
        &["--color", "coord", "read", "5"],
        &[("color.ui", "false")]
    ));
    assert!(!run(
        &["--color=auto", "coord", "read", "5"],
        &[("color.ui", "always")]
    ));
}
