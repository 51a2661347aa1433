//! What a person sees: the full `--help` tree, bad input, and `--json`.

use crate::support::screen::{screen, screen_keeping, screens};
use crate::support::{Run, Surface, TestEnv};

// What does not depend on where state lives runs on both surfaces.
on_both_surfaces!(
    a_non_numeric_issue_is_a_usage_error,
    an_unknown_reason_is_a_usage_error_and_releases_nothing,
    a_malformed_duration_says_how_to_write_one,
    a_bad_instance_id_is_refused,
    a_hostile_branch_name_is_refused,
    the_instance_id_is_generated_once_per_worktree,
);

/// Every command path of the clap tree, hidden ones included.
fn command_paths(cmd: &clap::Command, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(prefix.clone());
    for sub in cmd.get_subcommands() {
        let mut path = prefix.clone();
        path.push(sub.get_name().to_owned());
        command_paths(sub, path, out);
    }
}

fn run_in(dir: &std::path::Path, env: &TestEnv, args: &[&str]) -> Run {
    env.maverick_in(dir, args, &[])
}

#[test]
fn help_of_every_command() {
    let env = TestEnv::new();
    let mut paths = Vec::new();
    command_paths(&crate::support::mav::cli::command(), Vec::new(), &mut paths);
    assert!(paths.len() > 5);
    let mut screens = String::new();
    for path in &paths {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("--help");
        let long = run_in(env.path(), &env, &args);
        long.expect(0);
        // (`-h` of every visible command: first_hour's `short_help`.)
        screens.push_str(&format!(
            "$ git maverick {} --help\n{}\n",
            path.join(" "),
            long.stdout
        ));
    }
    insta::assert_snapshot!("help", screens);
}

fn a_non_numeric_issue_is_a_usage_error(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let repo = env.clone("alice");
    let word = repo.maverick(&["coord", "read", "abc"]);
    let zero = repo.maverick(&["coord", "claim", "0"]);
    let json = repo.maverick(&["coord", "read", "x", "--json"]);
    assert_eq!(json.json()["ok"], false);
    assert_eq!(json.json()["error"]["code"], "usage");
    // Under --json a usage error keeps clap's whole message: the argument's
    // name, clap's tips and the usage line, which a program shows its user;
    // and clap's suggestion for a misspelt flag.
    let typo = repo.maverick(&["coord", "claim", "5", "--scopez", "6", "--json"]);
    insta::assert_snapshot!(
        "a_non_numeric_issue",
        screens(&[
            ("git maverick coord read abc", screen(&env, &word)),
            ("git maverick coord claim 0", screen(&env, &zero)),
            ("git maverick coord read x --json", screen(&env, &json)),
            (
                "git maverick coord claim 5 --scopez 6 --json",
                screen(&env, &typo)
            ),
        ])
    );
}

fn an_unknown_reason_is_a_usage_error_and_releases_nothing(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let repo = env.clone("alice");
    repo.maverick(&["coord", "claim", "5"]).expect(0);
    let writes = env.write_count();
    let run = repo.maverick(&["coord", "release", "5", "--reason", "bored"]);
    insta::assert_snapshot!("an_unknown_reason", screen(&env, &run));
    assert_eq!(env.write_count(), writes);
    repo.maverick(&["coord", "read", "5", "--json"]).expect(0);
}

/// The durations an error teaches, kept in a snapshot as printed.
const HOW_TO_WRITE_A_DURATION: &[&str] = &["600s", "10m", "4h"];

fn a_malformed_duration_says_how_to_write_one(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let repo = env.clone("alice");
    // A bad flag is a usage error that names the flag (issue 12) and says
    // how to write a duration; an absurd one, the most it may be.
    let mut shown = Vec::new();
    for ttl in ["ten minutes", "18446744073709551615", "9000h", "0"] {
        let run = repo.maverick(&["coord", "claim", "5", "--lease-ttl", ttl]);
        shown.push((
            format!("git maverick coord claim 5 --lease-ttl {ttl:?}"),
            screen_keeping(&env, &run, &["600s", "10m", "4h", "9000h", "1s"]),
        ));
    }
    // A bad key is an error that says how to fix it.
    repo.git(&["config", "maverick.leaseTtl", "10 min"]);
    let key = repo.maverick(&["coord", "claim", "5"]);
    shown.push((
        "git maverick coord claim 5 (maverick.leaseTtl = \"10 min\")".to_owned(),
        screen_keeping(&env, &key, HOW_TO_WRITE_A_DURATION),
    ));
    let shown: Vec<(&str, String)> = shown.iter().map(|(c, s)| (c.as_str(), s.clone())).collect();
    insta::assert_snapshot!("a_malformed_duration", screens(&shown));
    assert_eq!(env.write_count(), 0, "nothing was written");
}

#[test]
fn a_repository_without_a_remote_names_the_way_out() {
    let env = TestEnv::new();
    let dir = env.path().join("lonely");
    env.git_in(env.path(), &["init", "--quiet", "lonely"]);
    let run = run_in(&dir, &env, &["coord", "claim", "5"]);
    let json = run_in(&dir, &env, &["coord", "read", "5", "--json"]);
    assert_eq!(json.json()["error"]["code"], "no_remote");
    insta::assert_snapshot!(
        "a_repository_without_a_remote",
        screens(&[
            ("git maverick coord claim 5", screen(&env, &run)),
            ("git maverick coord read 5 --json", screen(&env, &json)),
        ])
    );
}

#[test]
fn a_git_older_than_a_feature_needs_is_named_with_the_version_needed() {
    let env = TestEnv::new();
    let a = env.clone("a");
    // A git that says it is 2.30 and, as git before 2.31 does, has
    // rev-parse echo `--path-format=absolute` as an option it does not
    // know (and otherwise is the real one).
    let bin = env.path().join("old-git");
    std::fs::create_dir_all(&bin).unwrap();
    let script = bin.join("git");
    std::fs::write(
        &script,
        format!(
            concat!(
                "#!/bin/sh\n",
                "for arg in \"$@\"; do [ \"$arg\" = version ] && {{ echo 'git version 2.30.2'; exit 0; }}; done\n",
                "for arg in \"$@\"; do shift; if [ \"$arg\" = --path-format=absolute ]; then echo \"$arg\"; else set -- \"$@\" \"$arg\"; fi; done\n",
                "exec {} \"$@\"\n",
            ),
            crate::support::real_git().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut path = bin.into_os_string();
    path.push(":");
    path.push(crate::support::path_with_bin());

    let mut cmd = a.maverick_command(&["coord", "read", "142"]);
    cmd.env("PATH", &path);
    let plain = Run::from_output(&["coord", "read", "142"], cmd.output().unwrap());

    // A program reads the same as a code it can switch on.
    let mut cmd = a.maverick_command(&["coord", "read", "142", "--json"]);
    cmd.env("PATH", &path);
    let run = Run::from_output(&["coord", "read", "142", "--json"], cmd.output().unwrap());
    let json = run.expect(1).json();
    assert_eq!(json["error"]["code"], "git_too_old", "{json}");
    insta::assert_snapshot!(
        "a_git_older_than_a_feature_needs",
        screens(&[
            ("git maverick coord read 142", screen(&env, &plain)),
            ("git maverick coord read 142 --json", screen(&env, &run)),
        ])
    );

    // The same clone with the real git works.
    a.maverick(&["coord", "read", "142"]).expect(0);
}

#[test]
fn outside_a_repository_is_a_clear_error() {
    let env = TestEnv::new();
    let plain = run_in(env.path(), &env, &["coord", "read", "5"]);
    let run = run_in(env.path(), &env, &["coord", "read", "5", "--json"]);
    assert_eq!(run.json()["error"]["code"], "not_a_repository");
    insta::assert_snapshot!(
        "outside_a_repository",
        screens(&[
            ("git maverick coord read 5", screen(&env, &plain)),
            ("git maverick coord read 5 --json", screen(&env, &run)),
        ])
    );
}

/// The commands that joined after contract v1 keep it: help, completions,
/// config, status and hook status answer with schema_version, warnings and,
/// when they fail, the error object with its code (each object checked
/// against its schema by `Run::json`).
#[test]
fn the_newer_commands_keep_the_json_contract() {
    let env = TestEnv::new();
    let help = run_in(env.path(), &env, &["help", "coord", "claim", "--json"]);
    let json = help.expect(0).json();
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["command"], serde_json::json!(["coord", "claim"]));
    assert!(json["help"]
        .as_str()
        .unwrap()
        .contains("Usage: git maverick coord claim"));
    let completions = run_in(env.path(), &env, &["completions", "bash", "--json"]);
    let json = completions.expect(0).json();
    assert_eq!(json["shell"], "bash");
    assert!(json["script"].as_str().unwrap().contains("_git_maverick"));
    let version = run_in(env.path(), &env, &["--version", "--json"]);
    assert_eq!(version.expect(0).json()["warnings"], serde_json::json!([]));

    // Outside a repository: the error a program switches on.
    for args in [
        &["status", "--json"][..],
        &["config", "--json"],
        &["hook", "status", "--json"],
    ] {
        let run = run_in(env.path(), &env, args);
        run.expect(1);
        let json = run.json();
        assert_eq!(
            json["error"]["code"], "not_a_repository",
            "{args:?}: {json}"
        );
        assert!(
            !json["error"]["hints"].as_array().unwrap().is_empty(),
            "{json}"
        );
    }

    // A bad value for a newer flag is a usage error that keeps clap's text.
    let repo = env.clone("alice");
    let run = repo.maverick(&["status", "--json", "--watch", "soon"]);
    assert_eq!(run.json()["error"]["code"], "usage");
    insta::assert_snapshot!(
        "a_bad_watch_interval_json",
        screen_keeping(&env, &run, HOW_TO_WRITE_A_DURATION)
    );

    // A typo'd key is a warning in the object, not only on stderr.
    repo.git(&["config", "maverick.leaseTime", "5m"]);
    let status = repo.maverick(&["status", "--json"]);
    assert_eq!(
        status.expect(0).json()["warnings"],
        serde_json::json!([
            "unknown config key maverick.leasetime in local config (.git/config); \
             did you mean maverick.leaseTtl?"
        ])
    );
}

/// The codes docs/json-and-exit-codes.md documents are the codes the schema allows, and
/// every schema in schemas/ is a draft 2020-12 schema with schema_version 1.
#[test]
fn the_json_contract_is_documented_where_programs_read_it() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/json-and-exit-codes.md")).unwrap();
    let section = page
        .split("## JSON output")
        .nth(1)
        .expect("docs/json-and-exit-codes.md has a JSON output section");
    let documented: Vec<&str> = section
        .split("is one of a stable set")
        .nth(1)
        .expect("the page's table of error codes")
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter_map(|l| l.trim().strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .collect();
    let error: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("schemas/error.schema.json")).unwrap(),
    )
    .unwrap();
    // The generated schema names its parts in `$defs`.
    let resolve = |schema: &serde_json::Value| -> serde_json::Value {
        match schema["$ref"].as_str() {
            Some(pointer) => error
                .pointer(pointer.trim_start_matches('#'))
                .cloned()
                .unwrap(),
            None => schema.clone(),
        }
    };
    let object = resolve(&error["properties"]["error"]);
    let code = resolve(&object["properties"]["code"]);
    let codes: Vec<&str> = code["enum"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(documented, codes);
    let mut files = 0;
    for entry in std::fs::read_dir(root.join("schemas")).unwrap() {
        let path = entry.unwrap().path();
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            schema["$schema"],
            "https://json-schema.org/draft/2020-12/schema",
            "{}",
            path.display()
        );
        assert!(
            schema
                .to_string()
                .contains(r#""schema_version":{"const":1}"#),
            "{}",
            path.display()
        );
        // Listed in the README, by its full name or its stem in a row.
        let stem = path.file_name().unwrap().to_str().unwrap();
        let stem = stem.trim_end_matches(".schema.json");
        assert!(
            section.contains(&format!("`schemas/{stem}.schema.json`"))
                || section.contains(&format!(", `{stem}`")),
            "docs/json-and-exit-codes.md's JSON output section lists {stem}"
        );
        files += 1;
    }
    assert!(files >= 30, "one schema per command output");
    let commands = std::fs::read_to_string(root.join("docs/commands.md")).unwrap();
    assert!(
        commands.contains("CMD's own stdout goes to stderr"),
        "docs/commands.md says where run --json puts CMD's output"
    );
}

#[test]
fn a_remote_that_rejects_the_push_leaves_nothing_half_written() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    let hook = env.origin.join("hooks").join("pre-receive");
    std::fs::write(
        &hook,
        "#!/bin/sh\necho 'refs/maverick/* are not allowed here' >&2\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();

    let run = repo.maverick(&["coord", "claim", "5", "--branch", "maverick/5-x"]);
    insta::assert_snapshot!("a_remote_that_rejects_the_push", screen(&env, &run));
    assert_eq!(env.surface_refs(), None);
    // No local claim record claims what the surface does not have.
    let common = repo.git(&["rev-parse", "--git-common-dir"]);
    assert!(!repo
        .dir
        .join(common)
        .join("maverick/claims/alice/5.json")
        .exists());

    std::fs::remove_file(&hook).unwrap();
    repo.maverick(&["coord", "read", "5"]).expect(0);
}

#[test]
fn an_unreachable_remote_is_an_error_not_a_decision() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    repo.git(&[
        "remote",
        "set-url",
        "origin",
        env.path().join("gone.git").to_str().unwrap(),
    ]);
    let run = repo.maverick(&["coord", "read", "5", "--json"]);
    run.json();
    insta::assert_snapshot!("an_unreachable_remote_json", screen(&env, &run));
}

fn a_bad_instance_id_is_refused(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let repo = env.clone("alice");
    let run = repo.maverick_as("../../etc", &["coord", "claim", "5"]);
    insta::assert_snapshot!("a_bad_instance_id", screen(&env, &run));
    assert_eq!(env.write_count(), 0);
}

fn a_hostile_branch_name_is_refused(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let repo = env.clone("alice");
    let shown: Vec<(String, String)> = [
        "--branch=-rf",
        "--branch=a..b",
        "--branch=x:y",
        "--branch=a b",
    ]
    .into_iter()
    .map(|bad| {
        let run = repo.maverick(&["coord", "claim", "5", bad]);
        (
            format!("git maverick coord claim 5 {bad:?}"),
            screen(&env, &run),
        )
    })
    .collect();
    let shown: Vec<(&str, String)> = shown.iter().map(|(c, s)| (c.as_str(), s.clone())).collect();
    insta::assert_snapshot!("a_hostile_branch_name", screens(&shown));
    assert_eq!(env.write_count(), 0);
}

fn the_instance_id_is_generated_once_per_worktree(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let repo = env.clone("alice");
    let first = repo
        .maverick_command(&["coord", "claim", "5", "--json"])
        .output()
        .unwrap();
    let first = Run::from_output(&["coord", "claim", "5", "--json"], first);
    first.expect(0);
    let id = first.json()["issues"][0]["holder"]["instance_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (host, hex) = id.rsplit_once('-').unwrap();
    assert!(!host.is_empty());
    assert_eq!(hex.len(), 8, "{id}");
    let again = Run::from_output(
        &["coord", "read", "5", "--json"],
        repo.maverick_command(&["coord", "read", "5", "--json"])
            .output()
            .unwrap(),
    );
    again.expect(0);
    assert_eq!(again.json()["decision"], "ours");
    // An agent session is one instance.
    let agent = Run::from_output(
        &["coord", "read", "5", "--json"],
        repo.maverick_command(&["coord", "read", "5", "--json"])
            .env("CLAUDE_CODE_SESSION_ID", "9F1C-77aa-bb")
            .output()
            .unwrap(),
    );
    agent.expect(4);
    // As Maverick derives it: `printf %s 9F1C-77aa-bb | sha256sum | cut -c1-10`.
    assert_eq!(agent.json()["instance_id"], "eb3463a043");
}

#[test]
fn the_surface_follows_config_and_never_falls_back() {
    let env = TestEnv::new();
    let repo = env.clone("alice");
    repo.git(&["remote", "add", "gh", "git@github.com:acme/widgets.git"]);
    // A github.com remote selects the github surface, and -R does too.
    let run = repo.maverick(&["coord", "read", "5", "--remote", "gh", "--json"]);
    assert_ne!(run.code, 0);
    assert_ne!(run.json()["surface"], "git");
    // Config wins over the URL.
    repo.git(&["config", "maverick.surface", "git"]);
    repo.maverick(&["coord", "read", "5"]).expect(0);
    repo.git(&["config", "maverick.surface", "gitlab"]);
    let bad = repo.maverick(&["coord", "read", "5"]);
    insta::assert_snapshot!("an_unknown_surface", screen(&env, &bad));
}

/// `--dispatch-slots` (alias `--slots`) is one global flag: dispatch's `-h`
/// shows it once among dispatch's own options, other commands' `-h` leave it
/// to `--help`'s configuration, and every command reads the same value.
#[test]
fn dispatch_slots_is_one_flag_shown_once_where_it_is_dispatchs_own() {
    let env = TestEnv::new();
    let repo = env.clone("alpha");
    let flag = "--dispatch-slots <N>";
    let short = repo.maverick(&["dispatch", "-h"]).expect(0).stdout.clone();
    assert_eq!(short.matches(flag).count(), 1, "{short}");
    assert!(!short.contains("Configuration:"), "{short}");
    let status = repo
        .maverick(&["dispatch", "status", "-h"])
        .expect(0)
        .stdout
        .clone();
    assert_eq!(status.matches(flag).count(), 1, "{status}");
    let other = repo.maverick(&["status", "-h"]).expect(0).stdout.clone();
    assert!(!other.contains(flag), "{other}");
    let long = repo
        .maverick(&["status", "--help"])
        .expect(0)
        .stdout
        .clone();
    assert_eq!(long.matches(flag).count(), 1, "{long}");

    let slots = |args: &[&str]| repo.maverick(args).expect(0).json();
    assert_eq!(
        slots(&["--json", "dispatch", "status", "--slots", "2"])["slots"],
        2
    );
    assert_eq!(
        slots(&["--json", "--dispatch-slots", "4", "dispatch", "status"])["slots"],
        4
    );
    assert_eq!(
        slots(&["--json", "status", "--slots", "5"])["dispatch"]["slots"],
        5
    );
}
