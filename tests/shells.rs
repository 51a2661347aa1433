//! Completions in the real zsh and fish (issue 14): the scripts that
//! `git maverick completions zsh|fish` print are loaded the way each shell's
//! users install them, and fish's own completion engine answers from them.
//! (bash is driven through git's own completion in `native.rs`.)

use std::path::Path;
use std::process::Command;

use crate::support::{TestEnv, BIN};

/// Runs `shell -c script` with `HOME` and `XDG_CONFIG_HOME` in `home` and
/// the binary's directory first on `PATH`; its stdout, after checking it
/// succeeded.
fn shell(shell: &str, home: &Path, script: &str) -> String {
    let bin_dir = Path::new(BIN).parent().unwrap().to_owned();
    let mut dirs = vec![bin_dir];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let out = Command::new(shell)
        .args(["-c", script])
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("PATH", std::env::join_paths(dirs).unwrap())
        .current_dir(home)
        .output()
        .unwrap_or_else(|e| panic!("{shell} runs (scripts/test.sh installs it): {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{shell}: {stdout}\n{stderr}");
    assert!(stderr.is_empty(), "{shell} complained: {stderr}");
    stdout
}

/// The completions' first words (fish prints `word<TAB>description`).
fn words(listing: &str) -> Vec<&str> {
    listing
        .lines()
        .map(|l| l.split('\t').next().unwrap_or(l))
        .collect()
}

#[test]
fn fish_completes_commands_subcommands_and_flags_from_the_installed_script() {
    let env = TestEnv::new();
    let home = env.path().join("fish-home");
    let dir = home.join(".config/fish/completions");
    std::fs::create_dir_all(&dir).unwrap();
    // As a fish user installs it: into the directory fish autoloads from.
    let script = env.maverick_in(env.path(), &["completions", "fish"], &[]);
    script.expect(0);
    std::fs::write(dir.join("git-maverick.fish"), &script.stdout).unwrap();

    let commands = shell("fish", &home, "complete -C 'git-maverick co'");
    assert_eq!(words(&commands), ["completions", "config", "coord"]);
    assert!(
        commands.contains("coord\tClaim, heartbeat, release and take over issues"),
        "{commands}"
    );
    let sub = shell("fish", &home, "complete -C 'git-maverick coord rel'");
    assert_eq!(words(&sub), ["release", "release-all"]);
    let flags = shell("fish", &home, "complete -C 'git-maverick coord claim --ta'");
    assert_eq!(words(&flags), ["--takeover"]);
    let surfaces = shell(
        "fish",
        &home,
        "complete -C 'git-maverick status --surface '",
    );
    assert_eq!(words(&surfaces), ["git", "github"]);
}

#[test]
fn zsh_loads_the_script_from_fpath_as_its_completion_for_git_maverick() {
    let env = TestEnv::new();
    let home = env.path().join("zsh-home");
    let dir = home.join(".zfunc");
    std::fs::create_dir_all(&dir).unwrap();
    // As a zsh user installs it: a `_git-maverick` file on fpath, then
    // compinit binds it to the command from its `#compdef` line.
    let script = env.maverick_in(env.path(), &["completions", "zsh"], &[]);
    script.expect(0);
    std::fs::write(dir.join("_git-maverick"), &script.stdout).unwrap();

    let bound = shell(
        "zsh",
        &home,
        "fpath=(~/.zfunc $fpath); autoload -Uz compinit; compinit -u -d ~/.zcompdump; \
         print -r -- $_comps[git-maverick]; autoload +X _git-maverick; \
         whence -w _git-maverick",
    );
    assert_eq!(
        bound.lines().collect::<Vec<_>>(),
        ["_git-maverick", "_git-maverick: function"],
        "{bound}"
    );
    // zsh parses the whole script (no syntax error hides in a branch that
    // loading does not reach).
    shell("zsh", &home, "zsh -n ~/.zfunc/_git-maverick && print ok");
}

/// The completion line README documents for `shell` (the one that writes
/// its script), as a reader copies it.
fn documented_line(shell: &str) -> String {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md"))
        .expect("README.md");
    let wanted = format!("git maverick completions {shell} >");
    let found: Vec<&str> = readme
        .lines()
        .map(str::trim)
        .filter(|l| l.contains(&wanted))
        .collect();
    assert_eq!(
        found.len(),
        1,
        "README shows one line for {shell}: {found:?}"
    );
    found[0].to_owned()
}

/// Each completion line of README, pasted into a fresh HOME (no
/// `~/.local/share`, no `~/.config`, no `~/.zfunc`) in its own shell, and
/// the zsh line in bash too (where zsh's `${fpath[1]}` was empty and wrote
/// `/_git-maverick`): each writes its script under HOME, and the shell
/// loads it from there.
#[test]
fn the_documented_completion_lines_work_in_a_fresh_home() {
    let env = TestEnv::new();
    let fresh = |name: &str| {
        let home = env.path().join(name);
        std::fs::create_dir(&home).unwrap();
        home
    };

    let home = fresh("bash-home");
    shell("bash", &home, &documented_line("bash"));
    let loaded = shell(
        "bash",
        &home,
        "source ~/.local/share/bash-completion/completions/git-maverick && declare -F _git_maverick",
    );
    assert_eq!(loaded.trim(), "_git_maverick");

    for paste_into in ["zsh", "bash"] {
        let home = fresh(&format!("zsh-line-in-{paste_into}"));
        shell(paste_into, &home, &documented_line("zsh"));
        let entries: Vec<_> = std::fs::read_dir(&home)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(entries, [".zfunc"], "{paste_into} wrote only ~/.zfunc");
        let bound = shell(
            "zsh",
            &home,
            "fpath=(~/.zfunc $fpath); autoload -Uz compinit; compinit -u -d ~/.zcompdump; \
             print -r -- $_comps[git-maverick]",
        );
        assert_eq!(bound.trim(), "_git-maverick", "pasted into {paste_into}");
    }

    let home = fresh("fish-home");
    shell("fish", &home, &documented_line("fish"));
    let commands = shell("fish", &home, "complete -C 'git-maverick co'");
    assert_eq!(words(&commands), ["completions", "config", "coord"]);
}
