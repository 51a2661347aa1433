//! git maverick as a native git subcommand (issue 14): `--version`, `help`,
//! suggestions and colour, man pages opened by `git help maverick` and
//! `--help`, completions through git's own bash completion, and
//! `git maverick config` with its sources, unknown keys, GH_REPO and GH_HOST.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::screen::screen;
use crate::support::{Run, Surface, TestEnv, BIN, GITHUB_REPO};

// --- version -------------------------------------------------------------

#[test]
fn version_names_the_commit_and_its_date() {
    let env = TestEnv::new();
    let run = env.maverick_in(env.path(), &["--version"], &[]);
    run.expect(0);
    let line = run.stdout.trim();
    let json = env
        .maverick_in(env.path(), &["--version", "--json"], &[])
        .json();
    assert_eq!(json["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(json["name"], "git-maverick");
    // Built from this clone: the commit and date are HEAD's.
    let head = Command::new("git")
        .args(["log", "-1", "--format=%H %cs"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("TZ", "UTC")
        .output()
        .expect("git runs");
    if head.status.success() && Path::new(env!("CARGO_MANIFEST_DIR")).join(".git").exists() {
        let head = String::from_utf8(head.stdout).unwrap();
        let (commit, date) = head.trim().split_once(' ').unwrap();
        assert_eq!(
            line,
            format!(
                "git-maverick {} ({} {date})",
                env!("CARGO_PKG_VERSION"),
                &commit[..7]
            )
        );
        assert_eq!(json["commit"], commit[..7]);
        assert_eq!(json["date"], date);
    } else {
        // A crate tarball: the version, and the commit cargo recorded.
        assert!(
            line.starts_with(&format!("git-maverick {}", env!("CARGO_PKG_VERSION"))),
            "{line}"
        );
    }
    // Every subcommand answers the same.
    let sub = env.maverick_in(env.path(), &["coord", "--version"], &[]);
    sub.expect(0);
    assert_eq!(
        sub.stdout,
        format!(
            "git-maverick-coord {}\n",
            line.trim_start_matches("git-maverick ")
        )
    );
}

// --- help, suggestions, colour -----------------------------------------------

#[test]
fn help_prints_what_dash_h_prints() {
    let env = TestEnv::new();
    for path in [
        &[][..],
        &["coord"][..],
        &["coord", "claim"][..],
        &["task", "done"][..],
    ] {
        let mut help_args = vec!["help"];
        help_args.extend(path);
        let mut h_args: Vec<&str> = path.to_vec();
        h_args.push("-h");
        let help = env.maverick_in(env.path(), &help_args, &[]);
        help.expect(0);
        let h = env.maverick_in(env.path(), &h_args, &[]);
        h.expect(0);
        assert_eq!(help.stdout, h.stdout, "git maverick help {path:?}");
        insta::assert_snapshot!(
            format!(
                "help_{}",
                ["git", "maverick"]
                    .iter()
                    .chain(path)
                    .copied()
                    .collect::<Vec<_>>()
                    .join("_")
            ),
            screen(&env, &help)
        );
    }
    let typo = env.maverick_in(env.path(), &["help", "coord", "claym"], &[]);
    insta::assert_snapshot!("help_a_typo", screen(&env, &typo));
}

#[test]
fn a_mistyped_subcommand_gets_a_suggestion() {
    let env = TestEnv::new();
    let run = env.maverick_in(env.path(), &["coord", "raed", "5"], &[]);
    insta::assert_snapshot!("mistyped_coord_raed", screen(&env, &run));
    let run = env.maverick_in(env.path(), &["dispach"], &[]);
    insta::assert_snapshot!("mistyped_dispach", screen(&env, &run));
}

const ESC: &str = "\u{1b}[";

#[test]
fn colour_only_on_a_terminal_and_never_with_no_color() {
    let env = TestEnv::new();
    let typo = ["coord", "raed"];
    // A pipe: plain, whatever NO_COLOR says.
    let mut cmd = Command::new(BIN);
    cmd.args(typo).current_dir(env.path());
    env.apply_env(&mut cmd);
    cmd.env_remove("NO_COLOR");
    let piped = Run::from_output(&typo, cmd.output().unwrap());
    insta::assert_snapshot!("colour_piped", screen(&env, &piped));

    // A terminal (script(1) gives the binary a pty): colour, unless NO_COLOR.
    let on_terminal = |no_color: bool| {
        let mut cmd = Command::new("script");
        cmd.args(["--quiet", "--return", "--command"])
            .arg(format!("{BIN} coord raed"))
            .arg("/dev/null")
            .current_dir(env.path());
        env.apply_env(&mut cmd);
        cmd.env("TERM", "xterm-256color");
        if !no_color {
            cmd.env_remove("NO_COLOR");
        }
        let out = cmd.output().expect("script(1) runs (util-linux)");
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        // The escape character shown as `\e`, the terminal's CRLF as LF.
        String::from_utf8_lossy(&out.stdout)
            .replace(ESC, "\\e[")
            .replace("\r\n", "\n")
    };
    insta::assert_snapshot!("colour_on_a_terminal", on_terminal(false));
    insta::assert_snapshot!("colour_on_a_terminal_with_no_color", on_terminal(true));
}

// --- man pages -----------------------------------------------------------------

/// A prefix with the binary in `bin/` (a copy: the default man directory is
/// found from where the binary really is).
fn install_prefix(env: &TestEnv) -> PathBuf {
    let prefix = env.path().join("prefix");
    std::fs::create_dir_all(prefix.join("bin")).unwrap();
    crate::support::copy_program(Path::new(BIN), &prefix.join("bin").join("git-maverick"));
    prefix
}

/// `PATH` with `bin` first, and the system's directories after it.
fn path_with(bin: &Path) -> std::ffi::OsString {
    let mut dirs = vec![bin.to_owned()];
    dirs.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(dirs).unwrap()
}

/// git (or `program`) as a user of the prefix runs it: its bin on PATH, no
/// MANPATH (man-db finds `bin/../share/man` from PATH), MANPAGER=cat.
fn as_prefix_user(env: &TestEnv, prefix: &Path, program: &str, dir: &Path, args: &[&str]) -> Run {
    let mut cmd = Command::new(program);
    cmd.args(args).current_dir(dir);
    env.apply_env(&mut cmd);
    cmd.env("PATH", path_with(&prefix.join("bin")))
        .env_remove("MANPATH")
        .env("MANPAGER", "cat")
        .env("MANWIDTH", "100");
    Run::from_output(args, cmd.output().expect("runs"))
}

#[test]
fn git_help_maverick_and_dash_dash_help_open_the_installed_man_pages() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    let prefix = install_prefix(&env);
    let user =
        |program: &str, args: &[&str]| as_prefix_user(&env, &prefix, program, &repo.dir, args);

    // Right after install, before maverick ever ran: git answers `git help
    // maverick` with man alone, and there is no page yet.
    let man1 = prefix.join("share/man/man1");
    assert_ne!(user("git", &["help", "maverick"]).code, 0);
    assert!(!man1.exists());
    // Its first run, whatever the command (here the quick start's first),
    // writes the pages next to the binary: no install-man-pages needed.
    user("git", &["maverick", "hook", "install"]).expect(0);
    for page in [
        "git-maverick.1",
        "git-maverick-coord.1",
        "git-maverick-coord-claim.1",
        "git-maverick-config.1",
    ] {
        assert!(man1.join(page).is_file(), "{page}");
    }
    assert!(
        !man1.join("git-maverick-hook-pre-push.1").exists(),
        "hidden commands get no page"
    );

    // `git help maverick` and `git maverick --help` (git turns it into
    // `git help maverick`): the main page, with exit codes, environment and keys.
    for args in [&["help", "maverick"][..], &["maverick", "--help"][..]] {
        let mut page = user("git", args);
        page.expect(0);
        // man justifies its lines: compare words.
        page.stdout = page.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
        for want in [
            "git-maverick - Claims, leases and one writer per branch",
            "EXIT STATUS",
            "held stale",
            "ENVIRONMENT",
            "GH_TOKEN",
            "GITHUB_API_URL",
            "MAVERICK_INSTANCE",
            "CONFIGURATION",
            "maverick.leaseTtl",
            "--lease-ttl DURATION How long a lease lives without a heartbeat",
            "-R, --repo OWNER/NAME The GitHub repository",
            "a trusted open pull request has the issue in progress",
            "its own lease lapsed",
            "git-maverick-coord(1)",
        ] {
            assert!(
                page.stdout.contains(want),
                "git {args:?} lacks {want:?}:\n{}",
                page.stdout
            );
        }
        assert!(
            !page.stdout.contains("Usage: git maverick"),
            "{}",
            page.stdout
        );
    }

    // A subcommand's --help opens its own page, as `git commit --help` does.
    let mut coord = user("git", &["maverick", "coord", "--help"]);
    coord.expect(0);
    coord.stdout = coord
        .stdout
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        coord
            .stdout
            .contains("git-maverick-coord - Claim, heartbeat, release and take over issues"),
        "{}",
        coord.stdout
    );
    assert!(coord.stdout.contains("EXIT STATUS"), "{}", coord.stdout);
    let claim = user("git", &["maverick", "coord", "claim", "--help"]);
    claim.expect(0);
    assert!(
        claim.stdout.contains("git-maverick-coord-claim"),
        "{}",
        claim.stdout
    );
    // -h stays the short help text.
    let short = user("git", &["maverick", "coord", "-h"]);
    insta::assert_snapshot!("coord_dash_h_with_man_pages", screen(&env, &short));

    // install-man-pages still writes them (again), and says where.
    let install = user("git", &["maverick", "install-man-pages"]);
    insta::assert_snapshot!(
        "install_man_pages_next_to_the_binary",
        screen(&env, &install)
    );
}

#[test]
fn install_man_pages_into_a_named_directory() {
    let env = TestEnv::new();
    let dir = env.path().join("pages");
    let run = env.maverick_in(
        env.path(),
        &["install-man-pages", dir.to_str().unwrap(), "--json"],
        &[],
    );
    run.expect(0).json();
    // Every page, and how to make man look there (it does not by itself).
    insta::assert_snapshot!("install_man_pages_into_a_directory", screen(&env, &run));
    let text = std::fs::read_to_string(dir.join("git-maverick-coord.1")).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with(".TH git-maverick-coord 1 ")),
        "{text}"
    );

    let blocked = env.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let run = env.maverick_in(
        env.path(),
        &["install-man-pages", blocked.join("man1").to_str().unwrap()],
        &[],
    );
    insta::assert_snapshot!("install_man_pages_under_a_file", screen(&env, &run));
}

// --- completions ----------------------------------------------------------------

/// git's own bash completion script, as the system ships it.
pub(crate) fn git_completion_script() -> PathBuf {
    let exec_path = Command::new("git").arg("--exec-path").output().unwrap();
    let exec_path = PathBuf::from(String::from_utf8(exec_path.stdout).unwrap().trim());
    let mut candidates = vec![
        PathBuf::from("/usr/share/bash-completion/completions/git"),
        PathBuf::from("/usr/share/git-core/contrib/completion/git-completion.bash"),
        PathBuf::from("/etc/bash_completion.d/git"),
    ];
    if let Some(prefix) = exec_path.parent().and_then(Path::parent) {
        candidates.push(prefix.join("share/bash-completion/completions/git"));
        candidates.push(prefix.join("share/git-core/contrib/completion/git-completion.bash"));
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .expect("git's bash completion is installed (scripts/test.sh installs it)")
}

/// What a real bash, with git's completion and maverick's loaded, offers for
/// `line` (the last word being completed), through `complete -F`'s function.
pub(crate) fn complete(env: &TestEnv, dir: &Path, function: &str, words: &[&str]) -> Vec<String> {
    let script = format!(
        r#"
source "$GIT_COMPLETION"
source <(git-maverick completions bash)
COMP_WORDS=({words})
COMP_CWORD=$(( ${{#COMP_WORDS[@]}} - 1 ))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
COMPREPLY=()
{function} "${{COMP_WORDS[0]}}" "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        words = words
            .iter()
            .map(|w| format!("'{w}'"))
            .collect::<Vec<_>>()
            .join(" "),
    );
    let mut cmd = Command::new("bash");
    cmd.args(["--norc", "--noprofile", "-c", &script])
        .current_dir(dir);
    env.apply_env(&mut cmd);
    cmd.env("GIT_COMPLETION", git_completion_script());
    let out = cmd.output().expect("bash runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| l.trim_end().to_owned())
        .filter(|l| !l.is_empty())
        .collect()
}

#[test]
fn bash_completes_git_maverick_through_gits_own_completion() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    let git = |words: &[&str]| complete(&env, &repo.dir, "__git_wrap__git_main", words);

    // Each line typed, then what bash offers for its last word: git lists
    // maverick among its commands (git-maverick is on PATH), then
    // maverick's subcommands and options, after git's own options too.
    let dir = repo.dir.to_str().unwrap();
    let mut offers = Vec::new();
    for words in [
        &["git", "maver"][..],
        &["git", "maverick", "co"],
        &["git", "maverick", "coord", "cl"],
        &["git", "maverick", "coord", "claim", "--lease-t"],
        &["git", "maverick", "--js"],
        &["git", "maverick", "completions", "f"],
        &["git", "-C", dir, "maverick", "coord", "rel"],
    ] {
        offers.push(format!(
            "{}<TAB>: {}",
            words.join(" "),
            git(words).join(" ")
        ));
    }
    // And `git-maverick` typed as one word.
    let one_word = complete(&env, &repo.dir, "_git__maverick", &["git-maverick", "hyd"]);
    offers.push(format!("git-maverick hyd<TAB>: {}", one_word.join(" ")));
    insta::assert_snapshot!(
        "bash_completions",
        crate::support::screen::normalise(&env, &(offers.join("\n") + "\n"))
    );
}

#[test]
fn completions_for_zsh_and_fish_name_the_commands() {
    let env = TestEnv::new();
    let zsh = env.maverick_in(env.path(), &["completions", "zsh"], &[]);
    zsh.expect(0);
    assert!(
        zsh.stdout.starts_with("#compdef git-maverick"),
        "{}",
        &zsh.stdout[..80]
    );
    assert!(
        zsh.stdout
            .lines()
            .any(|l| l == "'coord:Claim, heartbeat, release and take over issues' \\"),
        "zsh script"
    );
    let fish = env.maverick_in(env.path(), &["completions", "fish"], &[]);
    fish.expect(0);
    assert!(
        fish.stdout.lines().any(|l| {
            l
            == "complete -c git-maverick -n \"__fish_git_maverick_needs_command\" -f -a \"coord\" \
                -d 'Claim, heartbeat, release and take over issues'"
        }),
        "fish script"
    );
    let bad = env.maverick_in(env.path(), &["completions", "tcsh"], &[]);
    insta::assert_snapshot!("completions_for_an_unknown_shell", screen(&env, &bad));
}

// --- git maverick config -----------------------------------------------------------

pub(crate) fn setting<'a>(json: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    json["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no setting {name} in {json}"))
}

#[test]
fn config_lists_every_setting_with_its_source() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    // The surface as a user's clone has it: chosen from the remote.
    repo.git(&["config", "--unset", "maverick.surface"]);
    std::fs::write(
        env.path().join("home/.gitconfig"),
        "[maverick]\n\tdispatchSlots = 5\n",
    )
    .unwrap();
    repo.git(&["config", "maverick.heartbeatInterval", "90s"]);
    let run = repo.maverick(&["config", "--lease-ttl", "5m", "--json"]);
    let json = run.expect(0).json();
    assert_eq!(setting(&json, "leaseTtl")["value"], "5m");
    assert_eq!(setting(&json, "heartbeatInterval")["value"], "90s");
    assert_eq!(setting(&json, "settleDelay")["value"], "0s");
    // Each setting's value, source and where it came from.
    insta::assert_snapshot!("config_json_on_git", screen(&env, &run));
    // Every documented key is listed.
    for key in maverick::config::KNOWN_KEYS {
        setting(&json, key.name);
    }

    repo.maverick(&["hook", "install"]).expect(0);
    let plain = repo.maverick(&["config"]);
    insta::assert_snapshot!("config_screen_with_the_hook", screen(&env, &plain));
}

#[test]
fn config_on_github_says_where_the_token_came_from_never_the_token() {
    let env = TestEnv::with_surface(Surface::Github);
    let repo = env.clone("alice");
    let run = repo.maverick(&["config", "--json"]);
    let json = run.expect(0).json();
    assert_eq!(setting(&json, "githubApiUrl")["value"], env.github().url());
    assert_eq!(setting(&json, "settleDelay")["value"], "200ms");
    insta::assert_snapshot!("config_json_on_github", screen(&env, &run));
    let plain = repo.maverick(&["config"]);
    insta::assert_snapshot!("config_screen_on_github", screen(&env, &plain));
    for out in [&run.stdout, &run.stderr, &plain.stdout, &plain.stderr] {
        assert!(
            !out.contains(env.github().token()),
            "the token leaked: {out}"
        );
    }
}

#[test]
fn an_unknown_key_is_a_warning_on_every_command_and_an_error_in_check() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    repo.maverick(&["config", "--check"]).expect(0);
    repo.git(&["config", "maverick.leaseTime", "2m"]);
    let warning = "warning: unknown config key maverick.leasetime in local config (.git/config); \
                   did you mean maverick.leaseTtl?";

    let claim = repo.maverick(&["coord", "claim", "5"]);
    claim.expect(0);
    assert_eq!(
        claim
            .stderr
            .lines()
            .filter(|l| l.starts_with("warning: unknown config key"))
            .collect::<Vec<_>>(),
        [warning],
        "{}",
        claim.stderr
    );
    insta::assert_snapshot!("unknown_key_warned_by_coord_claim", screen(&env, &claim));
    // The typo set nothing: the lease has the default TTL.
    let read = repo.maverick(&["coord", "read", "5", "--json"]);
    read.expect(0).json();
    insta::assert_snapshot!("unknown_key_warned_by_coord_read", screen(&env, &read));
    let config = repo.maverick(&["config", "--json"]);
    let json = config.expect(0).json();
    assert_eq!(setting(&json, "leaseTtl")["value"], "10m");
    insta::assert_snapshot!("unknown_key_in_config_json", screen(&env, &config));

    let check = repo.maverick(&["config", "--check"]);
    insta::assert_snapshot!("unknown_key_config_check", screen(&env, &check));
    // For a program: a bad setting, with the same hint.
    let check = repo.maverick(&["config", "--check", "--json"]);
    check.expect(1).json();
    insta::assert_snapshot!("unknown_key_config_check_json", screen(&env, &check));
    // A key nothing resembles gets no guess.
    repo.git(&["config", "maverick.zzz", "1"]);
    let check = repo.maverick(&["config", "--check"]);
    insta::assert_snapshot!("two_unknown_keys_config_check", screen(&env, &check));
}

#[test]
fn gh_repo_names_the_repository_as_in_gh() {
    let env = TestEnv::with_surface(Surface::Github);
    let repo = env.clone("alice");
    // Nothing in the clone says GitHub: GH_REPO alone does.
    repo.git(&["config", "--unset", "maverick.surface"]);
    repo.git(&["config", "--unset", "maverick.repo"]);
    let without = repo.maverick(&["config", "--json"]);
    without.expect(0);
    assert_eq!(setting(&without.json(), "surface")["value"], "git");

    let mut claim = repo.maverick_command(&["coord", "claim", "7"]);
    claim
        .env("MAVERICK_INSTANCE", "alice")
        .env("GH_REPO", GITHUB_REPO);
    let claim = Run::from_output(&["coord", "claim", "7"], claim.output().unwrap());
    claim.expect(0);
    assert_eq!(env.labels(7), ["claude-in-progress"]);

    let mut config = repo.maverick_command(&["config", "--json"]);
    config
        .env("MAVERICK_INSTANCE", "alice")
        .env("GH_REPO", GITHUB_REPO);
    let config = Run::from_output(&["config", "--json"], config.output().unwrap());
    let json = config.expect(0).json();
    assert_eq!(setting(&json, "surface")["value"], "github");
    insta::assert_snapshot!("config_json_with_gh_repo", screen(&env, &config));
    // -R beats it.
    let mut flag = repo.maverick_command(&["config", "--json", "-R", "acme/other"]);
    flag.env("GH_REPO", GITHUB_REPO);
    let flag = Run::from_output(&["config"], flag.output().unwrap());
    flag.expect(0);
    assert_eq!(setting(&flag.json(), "repo")["value"], "acme/other");

    let mut bad = repo.maverick_command(&["coord", "read", "7"]);
    bad.env("GH_REPO", "not a repo");
    let bad = Run::from_output(&["coord", "read", "7"], bad.output().unwrap());
    insta::assert_snapshot!("gh_repo_not_a_repo", screen(&env, &bad));
}

#[test]
fn gh_host_makes_an_enterprise_remote_a_github_one() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    repo.with_remote_at("git@ghe.example.com:acme/widgets.git");
    let config = |vars: &[(&str, &str)]| {
        let mut cmd = repo.maverick_command(&["config", "--json"]);
        cmd.env("MAVERICK_INSTANCE", "alice");
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let run = Run::from_output(&["config", "--json"], cmd.output().unwrap());
        run.expect(0);
        run.json()
    };
    let plain = config(&[]);
    assert_eq!(setting(&plain, "surface")["value"], "git");

    let json = config(&[("GH_HOST", "ghe.example.com")]);
    assert_eq!(setting(&json, "surface")["value"], "github");
    assert_eq!(
        setting(&json, "surface")["from"],
        "the remote \"origin\" is on ghe.example.com"
    );
    assert_eq!(setting(&json, "repo")["value"], "acme/widgets");
    assert_eq!(
        setting(&json, "githubApiUrl")["value"],
        "https://ghe.example.com/api/v3"
    );
    assert_eq!(
        setting(&json, "githubApiUrl")["from"],
        "environment GH_HOST"
    );

    // GH_REPO's host beats GH_HOST; GITHUB_API_URL beats both.
    let json = config(&[
        ("GH_HOST", "ghe.example.com"),
        ("GH_REPO", "github.com/acme/tools"),
    ]);
    assert_eq!(setting(&json, "repo")["value"], "acme/tools");
    assert_eq!(
        setting(&json, "githubApiUrl")["value"],
        "https://api.github.com"
    );
    let json = config(&[
        ("GH_HOST", "ghe.example.com"),
        ("GITHUB_API_URL", "http://127.0.0.1:9/"),
    ]);
    assert_eq!(
        setting(&json, "githubApiUrl")["value"],
        "http://127.0.0.1:9/"
    );
}

/// `www.github.com` (any subdomain of github.com, any case) is github.com,
/// as gh has it, wherever a host is named: `-R`, `GH_REPO`, `GH_HOST` and
/// the remote's URL. Its API is api.github.com and its token `GH_TOKEN`,
/// never the Enterprise Server ones (`https://www.github.com/api/v3`,
/// `GH_ENTERPRISE_TOKEN`); a look-alike host stays an Enterprise Server
/// and never gets `GH_TOKEN`. `config` shows the resolved API and token
/// source without a network call.
#[test]
fn www_github_com_is_github_com_wherever_it_is_named() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    repo.git(&["config", "--unset", "maverick.surface"]);
    let (dotcom_token, enterprise_token) = ("ghp_DOTCOM_SECRET", "ghe_ENTERPRISE_SECRET");
    let config = |args: &[&str], vars: &[(&str, &str)]| {
        let mut all = vec!["config", "--json"];
        all.extend_from_slice(args);
        let mut cmd = repo.maverick_command(&all);
        cmd.env("MAVERICK_INSTANCE", "alice")
            .env("GH_TOKEN", dotcom_token)
            .env("GH_ENTERPRISE_TOKEN", enterprise_token);
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let run = Run::from_output(&all, cmd.output().unwrap());
        run.expect(0);
        for out in [&run.stdout, &run.stderr] {
            for token in [dotcom_token, enterprise_token] {
                assert!(!out.contains(token), "a token leaked: {out}");
            }
        }
        run.json()
    };
    let on_github_com = |json: &serde_json::Value, why: &str| {
        assert_eq!(setting(json, "surface")["value"], "github", "{why}: {json}");
        assert_eq!(setting(json, "repo")["value"], "acme/widgets", "{why}");
        assert_eq!(
            setting(json, "githubApiUrl")["value"],
            "https://api.github.com",
            "{why}"
        );
        assert_eq!(setting(json, "token")["from"], "from GH_TOKEN", "{why}");
    };

    let json = config(&["-R", "www.github.com/acme/widgets"], &[]);
    on_github_com(&json, "-R www.github.com/…");
    assert_eq!(setting(&json, "githubApiUrl")["source"], "flag");
    let json = config(&["-R", "WWW.GitHub.com/acme/widgets"], &[]);
    on_github_com(&json, "-R WWW.GitHub.com/…");
    let json = config(&[], &[("GH_REPO", "www.github.com/acme/widgets")]);
    on_github_com(&json, "GH_REPO=www.github.com/…");
    let json = config(&["-R", "acme/widgets"], &[("GH_HOST", "www.github.com")]);
    on_github_com(&json, "GH_HOST=www.github.com");

    // GitHub's ssh over the https port is github.com too.
    let ssh = "ssh://git@ssh.github.com:443/acme/widgets.git";
    repo.git(&["remote", "set-url", "origin", ssh]);
    let json = config(&[], &[]);
    on_github_com(&json, "a remote on ssh.github.com");
    assert_eq!(
        setting(&json, "surface")["from"],
        "the remote \"origin\" is on github.com"
    );

    // A look-alike is not a subdomain: its own API, never GH_TOKEN.
    let json = config(&["-R", "evilgithub.com/acme/widgets"], &[]);
    assert_eq!(
        setting(&json, "githubApiUrl")["value"],
        "https://evilgithub.com/api/v3"
    );
    assert_eq!(setting(&json, "token")["from"], "from GH_ENTERPRISE_TOKEN");
}

/// Two clones of one GitHub repository, one whose origin is spelled
/// through an `insteadOf` alias (`gh:acme/widgets`), one with the plain
/// URL: both are on the github surface, on the same repository, because
/// the surface comes from the URL git resolves for a push (SPEC 2), so
/// each sees the other's claims.
#[test]
fn an_insteadof_alias_and_the_plain_url_are_one_github_repository() {
    let env = TestEnv::with_surface(Surface::Github);
    let plain = env.clone("plain");
    let aliased = env.clone("aliased");
    for repo in [&plain, &aliased] {
        repo.git(&["config", "--unset", "maverick.repo"]);
    }
    plain.with_remote_at("https://github.com/acme/widgets.git");
    aliased.with_remote_at("gh:acme/widgets");
    aliased.git(&["config", "url.git@github.com:.insteadOf", "gh:"]);
    let config = |repo: &crate::support::Repo<'_>| {
        let run = repo.maverick(&["config", "--json"]);
        run.expect(0);
        run.json()
    };
    for repo in [&plain, &aliased] {
        let json = config(repo);
        assert_eq!(setting(&json, "surface")["value"], "github", "{json}");
        assert_eq!(setting(&json, "repo")["value"], GITHUB_REPO, "{json}");
    }
    let json = config(&aliased);
    assert_eq!(
        setting(&json, "remoteUrl")["value"],
        "git@github.com:acme/widgets"
    );
    assert_eq!(
        setting(&json, "remoteUrl")["from"],
        "git remote get-url --push origin"
    );

    aliased.maverick(&["coord", "claim", "7"]).expect(0);
    let read = plain.maverick(&["coord", "read", "7", "--json"]);
    read.expect(4);
    assert_eq!(read.json()["holder"]["instance_id"], "aliased");
    plain.maverick(&["coord", "claim", "8"]).expect(0);
    let read = aliased.maverick(&["coord", "read", "8", "--json"]);
    read.expect(4);
    assert_eq!(read.json()["holder"]["instance_id"], "plain");
}

/// A `pushInsteadOf` sends pushes elsewhere than fetches: the surface is
/// chosen from where the pushes go.
#[test]
fn the_surface_follows_the_push_url() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    repo.with_remote_at("https://github.com/acme/widgets.git");
    repo.git(&[
        "config",
        "url.git@gitlab.example.com:mirror/.pushInsteadOf",
        "https://github.com/acme/",
    ]);
    let run = repo.maverick(&["config", "--json"]);
    let json = run.expect(0).json();
    assert_eq!(setting(&json, "surface")["value"], "git", "{json}");
    assert_eq!(
        setting(&json, "remoteUrl")["value"],
        "git@gitlab.example.com:mirror/widgets.git"
    );
}
