//! One writer per branch, held by the server (issue 38): `git maverick
//! protect` on a bare origin reached as a path (its update hook) and on
//! the fake GitHub (a ruleset, which the test origin's pre-receive hook
//! enforces as GitHub's server would). Every push form that would rewrite
//! or delete a managed branch is run for real against both.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

use crate::fake_github::api;
use crate::support::json_schema::Schema;
use crate::support::screen::screen;
use crate::support::{git_command, Repo, Surface, TestEnv, GITHUB_REPO, STORY_BRANCH};

const TASKS: &str = "- parse\n- check\n- print\n";

/// What the origin holds of the refs protection is about: managed
/// branches and coordination refs.
fn guarded_refs(env: &TestEnv) -> BTreeMap<String, String> {
    all_refs(env)
        .into_iter()
        .filter(|(name, _)| {
            name.starts_with("refs/heads/maverick/") || name.starts_with("refs/maverick/")
        })
        .collect()
}

fn all_refs(env: &TestEnv) -> BTreeMap<String, String> {
    env.git_in(
        &env.origin,
        &["for-each-ref", "--format=%(refname) %(objectname)"],
    )
    .lines()
    .filter_map(|line| line.split_once(' '))
    .map(|(name, sha)| (name.to_owned(), sha.to_owned()))
    .collect()
}

/// Puts every ref of origin back as `refs` had it, behind the hooks' back.
fn restore(env: &TestEnv, refs: &BTreeMap<String, String>) {
    let now = all_refs(env);
    for name in now.keys().filter(|n| !refs.contains_key(*n)) {
        env.git_in(&env.origin, &["update-ref", "-d", name]);
    }
    for (name, sha) in refs.iter().filter(|(n, sha)| now.get(*n) != Some(sha)) {
        env.git_in(&env.origin, &["update-ref", name, sha]);
    }
}

/// The push forms that rewrite or delete a managed branch, each with or
/// without the client's guard in its way.
const FORMS: &[&str] = &[
    "push --force",
    "push --no-verify --force",
    "push +refspec",
    "push --force-with-lease",
    "push --delete",
    "push :refs/heads/BRANCH",
    "-c core.hooksPath=/dev/null push -f",
    "git-push by path -f",
    "GIT_DIR=... git push -f",
    "push --mirror",
];

/// Runs one form from `repo`, whose `STORY_BRANCH` is a rewrite of the
/// origin's.
fn attempt(env: &TestEnv, repo: &Repo<'_>, form: &str) -> Output {
    let b = STORY_BRANCH;
    let plus = format!("+{b}");
    let colon = format!(":refs/heads/{b}");
    let git = |args: &[&str]| repo.git_as_instance(args, &[]);
    match form {
        "push --force" => git(&["push", "--force", "origin", b]),
        "push --no-verify --force" => git(&["push", "--no-verify", "--force", "origin", b]),
        "push +refspec" => git(&["push", "origin", &plus]),
        "push --force-with-lease" => git(&["push", "--force-with-lease", "origin", b]),
        "push --delete" => git(&["push", "--delete", "origin", b]),
        "push :refs/heads/BRANCH" => git(&["push", "origin", &colon]),
        "-c core.hooksPath=/dev/null push -f" => {
            git(&["-c", "core.hooksPath=/dev/null", "push", "-f", "origin", b])
        }
        "git-push by path -f" => {
            let exec_path = repo.git(&["--exec-path"]);
            let mut cmd = Command::new(Path::new(&exec_path).join("git-push"));
            cmd.args(["-f", "origin", b]).current_dir(&repo.dir);
            env.apply_env(&mut cmd);
            cmd.env("MAVERICK_INSTANCE", &repo.instance);
            cmd.output().unwrap()
        }
        "GIT_DIR=... git push -f" => {
            let mut cmd = git_command();
            cmd.args(["push", "-f", "origin", b])
                .current_dir(env.path());
            env.apply_env(&mut cmd);
            cmd.env("GIT_DIR", repo.dir.join(".git"))
                .env("GIT_WORK_TREE", &repo.dir)
                .env("MAVERICK_INSTANCE", &repo.instance);
            cmd.output().unwrap()
        }
        "push --mirror" => git(&["push", "--mirror", "origin"]),
        other => panic!("no form {other:?}"),
    }
}

/// A story on `STORY_BRANCH`, pushed by `task done`, with the guard
/// installed and the claim held; and a plain clone with neither.
fn story(env: &TestEnv) -> (Repo<'_>, Repo<'_>) {
    let alpha = env.claimed_clone("alpha");
    let file = env.input_file("tasks.md", TASKS);
    alpha.maverick(&["task", "init", "142", &file]).expect(0);
    alpha.write_file("src/parse.rs", "// parse\n");
    alpha.git(&["add", "src/parse.rs"]);
    alpha
        .maverick(&["task", "done", "-m", "feat(parse): read the input"])
        .expect(0);
    let rogue = env.clone("rogue");
    rogue.git(&["switch", "--quiet", STORY_BRANCH]);
    (alpha, rogue)
}

/// Each form from `repo`, against the origin as it stands: the forms whose
/// rewrite or deletion landed (the origin is put back after each).
fn landed_forms(env: &TestEnv, repo: &Repo<'_>) -> Vec<&'static str> {
    let before = all_refs(env);
    let guarded = guarded_refs(env);
    let head = env
        .origin_head(STORY_BRANCH)
        .expect("the story is on origin");
    let mut landed = Vec::new();
    for form in FORMS {
        // The clone's view of origin is current, as a user's after a fetch
        // (what --force-with-lease without a value checks against).
        repo.git(&["fetch", "--quiet", "origin"]);
        repo.git(&["reset", "--quiet", "--hard", &head]);
        repo.git(&[
            "commit",
            "--quiet",
            "--amend",
            "-m",
            &format!("rewrite: {form}"),
        ]);
        let out = attempt(env, repo, form);
        if guarded_refs(env) != guarded {
            landed.push(*form);
        } else {
            assert_eq!(env.origin_head(STORY_BRANCH).as_ref(), Some(&head));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                !out.status.success() || stderr.contains("rejected"),
                "{form}: {stderr}"
            );
        }
        restore(env, &before);
    }
    repo.git(&["reset", "--quiet", "--hard", &head]);
    landed
}

/// The environment with the server refusing what the fake GitHub's active
/// rulesets forbid (github), an admin token.
fn env_on(surface: Surface) -> TestEnv {
    let env = TestEnv::with_surface(surface);
    if surface == Surface::Github {
        env.github().set_admin(true);
        env.github().enforce_rulesets_on(&env.origin);
    }
    env
}

on_both_surfaces!(
    without_protection_rewrites_land,
    with_protection_no_rewrite_lands_and_honest_work_passes,
    install_is_idempotent_and_remove_takes_only_its_own,
);

fn without_protection_rewrites_land(surface: Surface) {
    let env = env_on(surface);
    let (alpha, rogue) = story(&env);
    let guarded = landed_forms(&env, &alpha);
    let plain = landed_forms(&env, &rogue);
    eprintln!(
        "protection off ({surface:?}): {} of {} forms land from a clone with the guard, {} of {} from one without: {guarded:?}",
        guarded.len(),
        FORMS.len(),
        plain.len(),
        FORMS.len()
    );
    // The client's guard stops what runs its hook; what skips it lands.
    assert_eq!(
        guarded,
        [
            "push --no-verify --force",
            "-c core.hooksPath=/dev/null push -f"
        ]
    );
    assert_eq!(plain, FORMS);
}

fn with_protection_no_rewrite_lands_and_honest_work_passes(surface: Surface) {
    let env = env_on(surface);
    let (alpha, rogue) = story(&env);
    alpha.maverick(&["protect", "install"]).expect(0);
    alpha.maverick(&["protect", "status"]).expect(0);
    assert_eq!(landed_forms(&env, &alpha), Vec::<&str>::new());
    assert_eq!(landed_forms(&env, &rogue), Vec::<&str>::new());
    rogue.git(&["commit", "--quiet", "--amend", "-m", "rewrite: once more"]);
    let refused = attempt(&env, &rogue, "push --no-verify --force");
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    match surface {
        Surface::Git => assert!(
            stderr.contains("refs/heads/maverick/142-parser is protected (git maverick protect): a non-fast-forward update is refused"),
            "{stderr}"
        ),
        Surface::Github => assert!(stderr.contains("Cannot force-push to this branch"), "{stderr}"),
    }

    // Honest work passes: maverick's own task push and coordination
    // writes, and a plain fast-forward.
    let before = env.origin_head(STORY_BRANCH).unwrap();
    alpha.write_file("src/check.rs", "// check\n");
    alpha.git(&["add", "src/check.rs"]);
    alpha
        .maverick(&["task", "done", "-m", "feat(check): check the input"])
        .expect(0);
    let after_task = env.origin_head(STORY_BRANCH).unwrap();
    assert_ne!(after_task, before);
    alpha.commit_file("src/print.rs", "// print\n", "feat(print): print it");
    let out = alpha.git_as_instance(&["push", "origin", STORY_BRANCH], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        env.origin_head(STORY_BRANCH),
        Some(alpha.git(&["rev-parse", "HEAD"]))
    );
    alpha.maverick(&["coord", "heartbeat", "142"]).expect(0);
    alpha
        .maverick(&["coord", "release", "142", "--reason", "merged"])
        .expect(0);
    let beta = env.clone("beta");
    beta.maverick(&["coord", "claim", "143", "--branch", "maverick/143-next"])
        .expect(0);
    if surface == Surface::Git {
        // Those writes were the git surface's refs, moved forward.
        assert!(guarded_refs(&env).contains_key("refs/maverick/issue/143"));
    }
}

fn install_is_idempotent_and_remove_takes_only_its_own(surface: Surface) {
    let env = env_on(surface);
    let repo = env.clone("alpha");
    let mine = "#!/bin/sh\necho \"the team's own $1\" >&2\n";
    let update = env.origin.join("hooks").join("update");
    if surface == Surface::Git {
        std::fs::write(&update, mine).unwrap();
        make_executable(&update);
    }
    let first = repo.maverick(&["--json", "protect", "install"]);
    first.expect(0);
    assert_eq!(
        first.json()["change"],
        if surface == Surface::Git {
            "added"
        } else {
            "created"
        }
    );
    let requests = write_requests(&env);
    let again = repo.maverick(&["--json", "protect", "install"]);
    assert_eq!(again.json()["change"], "unchanged");
    assert_eq!(again.json()["enforced"], true);
    assert_eq!(
        write_requests(&env),
        requests,
        "a second install writes nothing"
    );
    repo.maverick(&["protect", "remove"]).expect(0);
    repo.maverick(&["protect", "status"]).expect(1);
    match surface {
        Surface::Git => assert_eq!(std::fs::read_to_string(&update).unwrap(), mine),
        Surface::Github => assert_eq!(env.github().rulesets(), Vec::<Value>::new()),
    }
    let none = repo.maverick(&["--json", "protect", "remove"]);
    none.expect(0);
    assert_eq!(none.json()["change"], "absent");
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The ruleset writes the fake GitHub has seen (none on the git surface).
fn write_requests(env: &TestEnv) -> usize {
    if env.surface() == Surface::Git {
        return 0;
    }
    env.github()
        .requests()
        .iter()
        .filter(|r| r.method != "GET" && r.path.contains("/rulesets"))
        .count()
}

#[test]
fn a_bare_origin_protected_step_by_step() {
    let env = TestEnv::new();
    let repo = env.clone("alpha");
    let mut screens = Vec::new();
    for args in [
        &["protect", "status"][..],
        &["protect", "install", "--dry-run"],
        &["protect", "install"],
        &["protect", "status"],
        &["protect", "remove", "--dry-run"],
        &["protect", "remove"],
    ] {
        let run = repo.maverick(args);
        screens.push(format!(
            "$ git maverick {}\n{}",
            args.join(" "),
            env.screen(&run)
        ));
    }
    insta::assert_snapshot!(screens.join("\n"));
}

#[test]
fn a_dry_run_writes_nothing() {
    let env = TestEnv::new();
    let repo = env.clone("alpha");
    let run = repo.maverick(&["--json", "protect", "install", "--dry-run"]);
    let json = run.expect(0).json();
    assert_eq!(json["change"], "created");
    assert_eq!(json["enforced"], false);
    assert!(!env.origin.join("hooks").join("update").exists());
    let text = json["would_write"]["text"].as_str().unwrap();
    repo.maverick(&["protect", "install"]).expect(0);
    assert_eq!(
        std::fs::read_to_string(env.origin.join("hooks").join("update")).unwrap(),
        text,
        "the dry run printed what install writes"
    );

    let env = env_on(Surface::Github);
    let repo = env.clone("alpha");
    let json = repo
        .maverick(&["--json", "protect", "install", "--dry-run"])
        .expect(0)
        .json();
    assert_eq!(json["would_write"]["method"], "POST");
    assert_eq!(
        json["would_write"]["path"],
        format!("/repos/{GITHUB_REPO}/rulesets")
    );
    assert_eq!(write_requests(&env), 0);
    assert!(env.github().rulesets().is_empty());
}

#[test]
fn a_token_without_admin_is_told_what_to_ask_for() {
    let env = TestEnv::with_surface(Surface::Github);
    let repo = env.clone("alpha");
    let run = repo.maverick(&["protect", "install"]);
    run.expect(1);
    assert!(!run.stderr.contains(env.github().token()));
    insta::assert_snapshot!(env.screen(&run));
    let json = repo.maverick(&["--json", "protect", "install"]).json();
    assert_eq!(json["error"]["code"], "github");
}

#[test]
fn a_ruleset_changed_by_hand_is_put_back_in_place() {
    let env = env_on(Surface::Github);
    let repo = env.clone("alpha");
    repo.maverick(&["protect", "install"]).expect(0);
    let id = env.github().rulesets()[0]["id"].as_u64().unwrap();
    env.github().set_ruleset_enforcement(id, "evaluate");
    let run = repo.maverick(&["protect", "status"]);
    run.expect(1);
    insta::assert_snapshot!(env.screen(&run));
    let json = repo
        .maverick(&["--json", "protect", "install"])
        .expect(0)
        .json();
    assert_eq!(json["change"], "updated");
    assert_eq!(json["ruleset"]["id"], id);
    assert_eq!(env.github().rulesets().len(), 1);
    assert_eq!(env.github().rulesets()[0]["enforcement"], "active");
}

#[test]
fn configured_branch_patterns_are_protected_too() {
    let env = TestEnv::new();
    let repo = env.clone("alpha");
    repo.git(&["config", "maverick.protectBranches", "agent/*"]);
    repo.maverick(&["protect", "install"]).expect(0);
    repo.commit_file("a.txt", "a\n", "chore: a");
    repo.git(&[
        "push",
        "--quiet",
        "origin",
        "HEAD:refs/heads/agent/7-x",
        "HEAD:refs/heads/other",
    ]);
    let out = repo.git_output(&["push", "--no-verify", "origin", ":refs/heads/agent/7-x"]);
    assert!(!out.status.success());
    // Branches outside the patterns are the team's business.
    repo.git(&["push", "--quiet", "origin", ":refs/heads/other"]);
    // A branch this clone manages outside every pattern is named.
    repo.maverick(&["coord", "claim", "9", "--branch", "feature/9-x"])
        .expect(0);
    let status = repo.maverick(&["--json", "protect", "status"]);
    assert_eq!(
        status.json()["not_covered"],
        serde_json::json!([
            "feature/9-x is managed here but no protected pattern covers it: add it to maverick.protectBranches"
        ])
    );
    repo.git(&["config", "maverick.protectBranches", "bad pattern;rm"]);
    let run = repo.maverick(&["protect", "install"]);
    run.expect(1);
    insta::assert_snapshot!(env.screen(&run));
}

#[test]
fn the_fake_rulesets_answer_as_github_does() {
    let env = env_on(Surface::Github);
    let fake = env.github();
    let ruleset = Schema::load("repository-ruleset.trimmed.schema.json");
    let validation = Schema::load("validation-error.schema.json");
    let error = Schema::load("basic-error.schema.json");
    let path = format!("/repos/{GITHUB_REPO}/rulesets");
    let body = serde_json::json!({
        "name": "keep main",
        "target": "branch",
        "enforcement": "active",
        "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
        "rules": [{"type": "deletion"}]
    });
    let created = api(fake, "POST", &path, Some(body.clone()));
    assert_eq!(created.status, 201);
    ruleset.assert_valid(&created.json());
    let id = created.json()["id"].as_u64().unwrap();
    let listed = api(fake, "GET", &path, None);
    ruleset.assert_valid_items(&listed.json());
    ruleset.assert_valid(&api(fake, "GET", &format!("{path}/{id}"), None).json());
    let twice = api(fake, "POST", &path, Some(body));
    assert_eq!(twice.status, 422);
    validation.assert_valid(&twice.json());
    let unknown_rule =
        serde_json::json!({"name": "x", "enforcement": "active", "rules": [{"type": "nope"}]});
    assert_eq!(api(fake, "POST", &path, Some(unknown_rule)).status, 422);
    let put = api(
        fake,
        "PUT",
        &format!("{path}/{id}"),
        Some(serde_json::json!({"enforcement": "disabled"})),
    );
    assert_eq!(put.status, 200);
    ruleset.assert_valid(&put.json());
    assert_eq!(put.json()["name"], "keep main");
    fake.set_admin(false);
    let denied = api(fake, "DELETE", &format!("{path}/{id}"), None);
    assert_eq!(denied.status, 403);
    error.assert_valid(&denied.json());
    fake.set_admin(true);
    assert_eq!(
        api(fake, "DELETE", &format!("{path}/{id}"), None).status,
        204
    );
    assert_eq!(api(fake, "GET", &format!("{path}/{id}"), None).status, 404);
}

#[test]
fn hook_status_status_and_claims_say_whether_the_server_holds_the_rule() {
    let env = TestEnv::new();
    let repo = env.clone("alpha");
    repo.maverick(&["hook", "install"]).expect(0);
    let off = repo.maverick(&["--json", "hook", "status"]);
    assert_eq!(off.json()["server"]["enforced"], false);
    repo.maverick(&["protect", "install"]).expect(0);
    let mut screens = vec![screen(&env, &repo.maverick(&["hook", "status"]))];
    repo.maverick(&["coord", "claim", "142", "--branch", STORY_BRANCH])
        .expect(0);
    screens.push(screen(&env, &repo.maverick(&["status"])));
    // Someone takes the hook away on the server: the next claim says so,
    // from a file read.
    std::fs::remove_file(env.origin.join("hooks").join("update")).unwrap();
    screens.push(screen(
        &env,
        &repo.maverick(&["coord", "claim", "143", "--branch", "maverick/143-next"]),
    ));
    insta::assert_snapshot!(screens.join("\n"));

    let env = env_on(Surface::Github);
    let repo = env.clone("alpha");
    let unknown = repo.maverick(&["--json", "hook", "status"]);
    assert_eq!(unknown.json()["server"]["enforced"], Value::Null);
    repo.maverick(&["protect", "install"]).expect(0);
    let requests = env.github().request_count();
    let known = repo.maverick(&["--json", "hook", "status"]);
    assert_eq!(known.json()["server"]["enforced"], true);
    assert_eq!(
        env.github().request_count(),
        requests,
        "hook status asks GitHub nothing"
    );
}

#[test]
fn a_host_maverick_cannot_write_to_gets_the_way_there() {
    let env = TestEnv::new();
    let repo = env.clone("alpha");
    repo.with_remote_at("ssh://git@gitlab.example.com/team/widgets.git");
    let status = repo.maverick(&["protect", "status"]);
    status.expect(1);
    let install = repo.maverick(&["protect", "install"]);
    install.expect(1);
    insta::assert_snapshot!(format!("{}\n{}", env.screen(&status), env.screen(&install)));
}

#[test]
fn the_git_surface_on_github_is_told_its_refs_stay_unprotected() {
    let env = env_on(Surface::Github);
    let repo = env.clone("alpha");
    repo.git(&["config", "maverick.surface", "git"]);
    let json = repo
        .maverick(&["--json", "protect", "install"])
        .expect(0)
        .json();
    assert_eq!(json["host"], "github");
    assert_eq!(json["enforced"], true);
    assert_eq!(json["coordination_refs"], false);
    let warnings = json["warnings"].to_string();
    assert!(
        warnings.contains(
            "refs/maverick/* is not covered: a GitHub ruleset protects branches and tags"
        ),
        "{warnings}"
    );
}

/// The bare origin is the one repository whatever spelling of it the
/// remote's URL uses (`file://`, `file://localhost`, a path relative to the
/// clone, no `.git`, a trailing slash): `protect` writes its hook there.
#[test]
fn the_bare_origin_is_found_however_the_remote_spells_it() {
    let env = TestEnv::new();
    let repo = env.clone("alpha");
    let origin = std::fs::canonicalize(&env.origin).unwrap();
    let text = origin.to_str().unwrap();
    let relative = format!("../{}", origin.file_name().unwrap().to_str().unwrap());
    assert!(
        repo.dir.join(&relative).exists(),
        "the clone sits by origin"
    );
    for url in [
        format!("file://{text}"),
        format!("file://localhost{text}"),
        format!("{text}/"),
        text.strip_suffix(".git").unwrap().to_owned(),
        relative.clone(),
    ] {
        repo.git(&["remote", "set-url", "origin", &url]);
        let json = repo
            .maverick(&["--json", "protect", "install"])
            .expect(0)
            .json();
        assert_eq!(json["location"], text, "{url}");
        assert!(origin.join("hooks/update").exists(), "{url}");
        repo.maverick(&["protect", "remove"]).expect(0);
        assert!(!origin.join("hooks/update").exists(), "{url}");
    }
}

/// `status` says where the server holds the rule from the remote URL the
/// settings resolved: one `git remote get-url`, not one more for protect.
#[test]
fn status_asks_git_for_the_remote_url_once() {
    let env = TestEnv::new();
    let repo = env.clone("alpha");
    let trace = env.path().join("git-trace");
    let out = repo
        .maverick_command(&["status"])
        .env("GIT_TRACE", &trace)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = std::fs::read_to_string(&trace).unwrap();
    let asked = trace
        .lines()
        .filter(|l| l.contains("built-in: git remote get-url"))
        .count();
    assert_eq!(asked, 1, "{trace}");
}
