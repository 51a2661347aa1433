//! An open pull request that closes an issue (`Fixes #N`) is work in
//! progress on it: `coord read` shows it, `coord claim` (and `run`, which
//! claims through it) refuses as for another instance's live claim, and
//! `status` lists the issue. Only as GitHub links them: a closing keyword
//! in the description, naming this repository's issue, in a pull request
//! into the default branch; and never the claimant's own pull request.
//! Only a pull request whose author is trusted as a marker's author is
//! (a member, a collaborator, `maverick.trustedAuthors`) holds anything;
//! `dispatch` hands out no issue such a pull request closes.

use serde_json::{json, Value};

use crate::support::screen::screen;
use crate::support::{Surface, TestEnv};

/// A GitHub where alice, bob and agent are the repository's collaborators.
fn github() -> TestEnv {
    let env = TestEnv::with_surface(Surface::Github);
    for login in ["alice", "bob", "agent"] {
        env.github().add_user(login, "COLLABORATOR");
    }
    env
}

/// What `coord read --json` says of `issue`: its decision and the pull
/// request it names.
fn read(repo: &crate::support::Repo<'_>, issue: u64) -> (String, Value) {
    let run = repo.maverick(&["--json", "coord", "read", &issue.to_string()]);
    let json = run.json();
    (
        json["decision"].as_str().unwrap_or_default().to_owned(),
        json.get("pull_request").cloned().unwrap_or(Value::Null),
    )
}

#[test]
fn a_pull_request_that_fixes_an_issue_holds_it() {
    let env = github();
    env.github().open_pull(
        50,
        "alice",
        "fix-login",
        "main",
        "The login form forgot the password.\n\nFixes #7",
    );
    let agent = env.clone("agent");

    let shown = agent.maverick(&["coord", "read", "7"]);
    insta::assert_snapshot!("open_pull_read", screen(&env, &shown));
    let json = agent.maverick(&["--json", "coord", "read", "7"]);
    insta::assert_snapshot!("open_pull_read_json", screen(&env, &json));

    let claim = agent.maverick(&["coord", "claim", "7", "--branch", "agent-7"]);
    insta::assert_snapshot!("open_pull_claim_refused", screen(&env, &claim));
    let run = agent.maverick(&["run", "7", "--", "true"]);
    assert_eq!(run.code, 4, "run claims as claim does: {}", run.stderr);
    assert_eq!(
        env.github().labels(7),
        Vec::<String>::new(),
        "a refused claim writes nothing"
    );

    let status = agent.maverick(&["status"]);
    insta::assert_snapshot!("open_pull_status", screen(&env, &status));
    let status = agent.maverick(&["--json", "status"]);
    let rows = status.json()["issues"].clone();
    assert_eq!(
        rows.as_array().map(|r| r.len()),
        Some(1),
        "one row, #7: {rows}"
    );
    assert_eq!(
        (
            rows[0]["issue"].clone(),
            rows[0]["state"].clone(),
            rows[0]["pull"]["number"].clone()
        ),
        (json!(7), json!("pull"), json!(50))
    );
}

#[test]
fn only_keywords_github_links_count() {
    let env = github();
    let fake = env.github();
    // A closing keyword, into another branch than the default one.
    fake.open_pull(51, "alice", "backport", "release-1", "Fixes #8");
    // Mentions without a keyword.
    fake.open_pull(52, "alice", "notes", "main", "See #9; part of #9, re #9");
    // A keyword, for another repository's issue.
    fake.open_pull(53, "alice", "upstream", "main", "Fixes other/widgets#10");
    // And this repository's issue in every form GitHub takes.
    fake.open_pull(
        54,
        "bob",
        "forms",
        "main",
        "closes: acme/widgets#11, Resolves https://github.com/acme/widgets/issues/12",
    );
    let agent = env.clone("agent");
    let pulls: Vec<(u64, (String, Value))> = (8..=12).map(|n| (n, read(&agent, n))).collect();
    let by_pull = |number: u64| json!({"number": number, "head_ref": "forms", "author": "bob", "draft": false});
    assert_eq!(
        pulls,
        [
            (8, ("free".to_owned(), Value::Null)),
            (9, ("free".to_owned(), Value::Null)),
            (10, ("free".to_owned(), Value::Null)),
            (11, ("held".to_owned(), by_pull(54))),
            (12, ("held".to_owned(), by_pull(54))),
        ]
    );
    agent.maverick(&["coord", "claim", "8"]).expect(0);
    agent.maverick(&["coord", "claim", "10"]).expect(0);
}

#[test]
fn the_default_branch_is_the_repositorys_own() {
    let env = github();
    let fake = env.github();
    fake.set_default_branch("trunk");
    fake.open_pull(60, "alice", "a", "main", "Fixes #13");
    fake.open_pull(61, "alice", "b", "trunk", "Fixes #14");
    let agent = env.clone("agent");
    assert_eq!(read(&agent, 13).0, "free");
    assert_eq!(read(&agent, 14).0, "held");
}

#[test]
fn the_claimants_own_pull_request_does_not_hold_it_back() {
    let env = github();
    let agent = env.clone("agent");
    let bravo = env.clone("bravo");
    agent
        .maverick(&["coord", "claim", "12", "--branch", "fix-12"])
        .expect(0);
    env.github()
        .open_pull(70, "agent", "fix-12", "main", "Closes #12");

    // Claiming again, with the PR open: already held.
    agent
        .maverick(&["coord", "claim", "12", "--branch", "fix-12"])
        .expect(0);
    assert_eq!(read(&agent, 12), ("ours".to_owned(), Value::Null));
    agent.maverick(&["coord", "release", "12"]).expect(0);

    // Released: another instance is refused, the PR's author is not.
    bravo.maverick(&["coord", "claim", "12"]).expect(4);
    agent
        .maverick(&["coord", "claim", "12", "--branch", "fix-12"])
        .expect(0);
    agent.maverick(&["coord", "release", "12"]).expect(0);

    // status judges as claim does: in progress by #70 for the agent, which
    // holds no claim and is not on fix-12 ...
    let rows = |repo: &crate::support::Repo<'_>| {
        let json = repo.maverick(&["--json", "status"]).expect(0).json();
        json["issues"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["issue"].clone(), r["state"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(rows(&agent), [(json!(12), json!("pull"))]);

    // Nor is whoever works on the PR's branch, checked out (nor does its
    // status show its own work as another's).
    bravo.git(&["switch", "--quiet", "-c", "fix-12"]);
    assert_eq!(rows(&bravo), []);
    let claimed = bravo.maverick(&["coord", "claim", "12"]);
    insta::assert_snapshot!("open_pull_own_branch_claims", screen(&env, &claimed));
}

#[test]
fn an_epic_story_a_pull_request_closes_is_in_flight() {
    let env = github();
    let agent = env.clone("agent");
    let dag = env.input_file(
        "dag.json",
        &json!({"epic": 20, "stories": {"21": {"deps": []}, "22": {"deps": ["21"]}}}).to_string(),
    );
    agent
        .maverick(&["state", "put", "dag", "20", &dag])
        .expect(0);
    env.github()
        .open_pull(80, "alice", "story-21", "main", "Resolves #21");
    let text = agent.maverick(&["status", "--epic", "20"]);
    insta::assert_snapshot!("open_pull_epic", screen(&env, &text));
    let dot = agent.maverick(&["status", "--epic", "20", "--format", "dot"]);
    dot.expect(0);
    insta::assert_snapshot!("open_pull_epic_dot", dot.stdout);
}

#[test]
fn a_strangers_fork_pull_request_holds_nothing_and_a_forks_hint_says_what_works() {
    let env = github();
    let fake = env.github();
    // Anyone may open a pull request on a public repository.
    fake.open_fork_pull(
        90,
        "stranger",
        "stranger/widgets",
        "patch-1",
        "Fixes #7, fixes #8, fixes #9",
    );
    let agent = env.clone("agent");
    for n in [7, 8, 9] {
        assert_eq!(read(&agent, n), ("free".to_owned(), Value::Null), "#{n}");
    }
    agent.maverick(&["coord", "claim", "7"]).expect(0);
    let status = agent.maverick(&["--json", "status"]).expect(0).json();
    let rows: Vec<(Value, Value)> = status["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["issue"].clone(), r["state"].clone()))
        .collect();
    assert!(
        !rows.iter().any(|(_, state)| state == "pull"),
        "no issue in progress by the stranger's pull request: {rows:?}"
    );

    // The same trust as a marker's: named in maverick.trustedAuthors, the
    // stranger's pull request holds what it closes.
    agent.git(&["config", "maverick.trustedAuthors", "stranger"]);
    assert_eq!(read(&agent, 8).0, "held");
    agent.git(&["config", "--unset", "maverick.trustedAuthors"]);

    // A collaborator's pull request from a fork holds its issue; nobody can
    // switch to a fork's branch here, and the hint says what works instead.
    fake.open_fork_pull(91, "bob", "bob/widgets", "fix-10", "Fixes #10");
    let claim = agent.maverick(&["coord", "claim", "10"]);
    assert_eq!(claim.code, 4, "{}", claim.stderr);
    assert!(!claim.stderr.contains("git switch"), "{}", claim.stderr);
    insta::assert_snapshot!("open_pull_fork_claim_refused", screen(&env, &claim));
}

#[test]
fn dispatch_skips_an_issue_a_trusted_pull_request_closes() {
    let env = github();
    let fake = env.github();
    for n in [7, 8, 9] {
        fake.create_issue(n, &format!("Ready {n}"), &["agent-ready"]);
    }
    fake.open_pull(50, "alice", "fix-7", "main", "Fixes #7");
    fake.open_fork_pull(51, "stranger", "stranger/widgets", "patch-8", "Fixes #8");
    let agent = env.clone("agent");
    let run = agent.maverick(&["--json", "dispatch"]);
    run.expect(0);
    assert_eq!(
        run.json()["issue"],
        8,
        "#7 is in progress by alice's pull request; the stranger's holds nothing: {}",
        run.stdout
    );
    // The dispatched agent can claim what it was handed.
    agent.maverick(&["run", "8", "--", "true"]).expect(0);
    // And the next dispatch passes #7 by again.
    let next = env.clone("next").maverick(&["--json", "dispatch"]);
    next.expect(0);
    assert_eq!(next.json()["issue"], 9, "{}", next.stdout);
}
