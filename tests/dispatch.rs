//! `git maverick dispatch` end to end: the real binary, real clones of a real
//! bare origin.
//!
//! Every test body takes the surface from the harness (`on_both_surfaces!`) and
//! touches it only through the binary and `TestEnv`, so it runs on each
//! surface the harness knows.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Stdio};

use crate::support::mav::markers::{parse_markers, Marker, MarkerKind};
use crate::support::screen::screen;
use crate::support::{Repo, Run, Surface, TestEnv};
use serde_json::Value;

/// One issue as the surface shows it.
struct Stored {
    labels: Vec<String>,
    bodies: Vec<String>,
}

impl Stored {
    fn has_label(&self, label: &str) -> bool {
        self.labels.iter().any(|l| l == label)
    }

    fn dispatch_markers(&self) -> Vec<Marker> {
        self.bodies
            .iter()
            .flat_map(|b| parse_markers(b))
            .flatten()
            .filter(|m| m.kind == MarkerKind::Dispatch)
            .collect()
    }

    /// Claim marker ids that no withdrawal, clearing or release names.
    fn live_claims(&self) -> Vec<String> {
        let markers = self.dispatch_markers();
        let closed: BTreeSet<String> = markers
            .iter()
            .filter(|m| m.payload.get("action").and_then(|v| v.as_str()) != Some("claim"))
            .flat_map(|m| {
                m.payload["claims"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap().to_owned())
            })
            .collect();
        markers
            .iter()
            .filter(|m| m.payload.get("action").and_then(|v| v.as_str()) == Some("claim"))
            .map(|m| m.marker_id().unwrap().to_owned())
            .filter(|id| !closed.contains(id))
            .collect()
    }

    fn actions(&self) -> Vec<String> {
        self.dispatch_markers()
            .iter()
            .map(|m| {
                m.payload
                    .get("action")
                    .and_then(|v| v.as_str())
                    .unwrap()
                    .to_owned()
            })
            .collect()
    }
}

/// An open issue with these labels.
fn issue(repo: &Repo<'_>, number: u64, labels: &[&str]) {
    let n = number.to_string();
    let mut args = vec!["coord", "label", "add", n.as_str()];
    args.extend(labels);
    repo.maverick(&args).expect(0);
}

/// An open pull request labelled `agent-pr`. (On the git surface, which has
/// no pull requests, any number carrying the label stands for one.)
fn agent_pull(s: &TestEnv, repo: &Repo<'_>, number: u64) {
    s.open_pull(repo, number, &["agent-pr"]);
}

/// Closes an issue or pull request (on the git surface: the `closed` label).
fn close(s: &TestEnv, repo: &Repo<'_>, number: u64) {
    s.close(repo, number);
}

/// The labels (as `coord read` reports them) and comments of an issue.
fn read_issue(s: &TestEnv, repo: &Repo<'_>, number: u64) -> Stored {
    let read = repo.maverick(&["coord", "read", &number.to_string(), "--json"]);
    let labels = read.json()["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    Stored {
        labels,
        bodies: s.comments(number).into_iter().map(|c| c.body).collect(),
    }
}

/// Everything the surface holds about these issues: changes with any write.
fn fingerprint(s: &TestEnv, repo: &Repo<'_>, numbers: &[u64]) -> Vec<(Vec<String>, Vec<String>)> {
    numbers
        .iter()
        .map(|n| {
            let stored = read_issue(s, repo, *n);
            (stored.labels, stored.bodies)
        })
        .collect()
}

on_both_surfaces!(
    dispatch_claims_the_lowest_eligible_issue,
    exit_9_when_every_slot_is_busy,
    dry_run_writes_nothing,
    nothing_eligible_exits_3,
    ledger_two_dispatches_into_the_window_one_wins,
    ledger_the_same_issue_picked_twice_in_parallel_one_wins,
    ledger_an_orphan_claim_is_busy_while_fresh_and_cleared_when_stale,
    a_crash_between_comment_and_label_holds_the_slot_and_the_issue,
    a_stale_claim_is_cleared_with_a_comment,
    release_on_pr_open_passes_the_slot_to_the_pr,
    release_on_give_up_relabels_the_issue,
    status_shows_holders_since_when_and_what_is_stale,
    six_dispatchers_three_slots_three_rounds,
);

fn spawn_dispatch(repo: &Repo<'_>, args: &[&str]) -> Child {
    repo.command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git-maverick starts")
}

/// Runs `dispatch ARGS` in every repo at once.
fn race(repos: &[Repo<'_>], args: &[&str]) -> Vec<(String, Run)> {
    let children: Vec<(String, Child)> = repos
        .iter()
        .map(|r| (r.instance.clone(), spawn_dispatch(r, args)))
        .collect();
    children
        .into_iter()
        .map(|(name, child)| {
            let out = child.wait_with_output().expect("maverick finishes");
            (name, Run::from_output(args, out))
        })
        .collect()
}

/// `dispatch --dry-run --json ARGS`, which must say something was cleared.
#[track_caller]
fn dry_run_clearing(repo: &Repo<'_>, args: &[&str]) -> Value {
    let mut full = vec!["dispatch", "--dry-run", "--json"];
    full.extend(args);
    let run = repo.maverick(&full);
    let json = run.json();
    assert!(
        json["cleared"].as_array().is_some_and(|c| !c.is_empty()),
        "the dry run clears nothing: {}",
        run.screen()
    );
    json
}

fn dispatch_claims_the_lowest_eligible_issue(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    issue(&alice, 3, &["agent-ready"]);
    issue(&alice, 5, &["agent-ready"]);
    issue(&alice, 2, &["agent-ready", "blocked-by:#1"]);
    issue(&alice, 1, &["agent-ready"]);
    s.clone("bob").maverick(&["coord", "claim", "1"]).expect(0);
    issue(&alice, 4, &["bug"]);
    let run = alice.maverick(&["dispatch", "--json"]);
    run.expect(0);
    let json = run.json();
    assert_eq!(json["result"], "dispatched");
    assert_eq!(json["issue"], 3);
    assert_eq!(json["slot"], 1);
    let comment_id = json["comment_id"].as_u64().expect("a comment id");
    let stored = read_issue(s, &alice, 3);
    assert!(stored.has_label("agent-wip"));
    assert_eq!(stored.actions(), ["claim"]);
    let claim = &stored.dispatch_markers()[0];
    assert_eq!(
        claim.payload.get("instance_id").and_then(|v| v.as_str()),
        Some("alice")
    );
    assert_eq!(claim.payload.get("issue").and_then(|v| v.as_u64()), Some(3));
    assert!(claim
        .payload
        .get("claimed_at")
        .and_then(|v| v.as_str())
        .is_some());
    assert_eq!(claim.marker_id(), json["marker_id"].as_str());

    // GitHub's dispatch lists only the frontier issues it read (issue 28:
    // its cost does not grow with the backlog); the git surface reads all.
    insta::assert_snapshot!(format!("dispatch_json_{}", s.name()), screen(s, &run));

    let run = alice.maverick(&["dispatch"]);
    insta::assert_snapshot!("dispatch_the_next", screen(s, &run));
    assert!(!run.stdout.contains(&format!("comment {comment_id})")));
    // A frontier label of one's own.
    issue(&alice, 9, &["ready-for-bots"]);
    let run = alice.maverick(&["dispatch", "--frontier-label", "ready-for-bots", "--json"]);
    run.expect(0);
    assert_eq!(run.json()["issue"], 9);
    assert_eq!(run.json()["view"]["frontier_label"], "ready-for-bots");
}

fn exit_9_when_every_slot_is_busy(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    for n in 1..=4 {
        issue(&alice, n, &["agent-ready"]);
    }
    agent_pull(s, &alice, 20);
    alice.maverick(&["dispatch", "--slots", "2"]).expect(0);
    let before = fingerprint(s, &alice, &[1, 2, 3, 4, 20]);
    let full = alice.maverick(&["dispatch", "--slots", "2", "--json"]);
    full.expect(9);
    let json = full.json();
    assert_eq!(json["result"], "no_slot");
    assert_eq!(json["issue"], Value::Null);
    assert_eq!(json["view"]["busy"], 2);
    assert_eq!(json["view"]["holders"][0]["kind"], "pull_request");
    assert_eq!(json["view"]["holders"][0]["number"], 20);
    assert_eq!(json["view"]["holders"][1]["kind"], "claim");
    assert_eq!(json["view"]["holders"][1]["number"], 1);
    assert_eq!(
        fingerprint(s, &alice, &[1, 2, 3, 4, 20]),
        before,
        "a refused dispatch wrote"
    );
    insta::assert_snapshot!(
        format!("dispatch_json_with_no_free_slot_{}", s.name()),
        screen(s, &full)
    );
    let full = alice.maverick(&["dispatch", "--slots", "2"]);
    insta::assert_snapshot!("dispatch_with_no_free_slot", screen(s, &full));
    // The config key serves as well as the flag.
    alice.git(&["config", "maverick.dispatchSlots", "2"]);
    alice.maverick(&["dispatch"]).expect(9);
    alice.git(&["config", "maverick.dispatchSlots", "3"]);
    alice.maverick(&["dispatch"]).expect(0);
    alice.maverick(&["dispatch"]).expect(9);
    // An issue labelled agent-wip by hand holds a slot too.
    issue(&alice, 30, &["agent-wip"]);
    let json = alice
        .maverick(&["dispatch", "--slots", "4", "--json"])
        .json();
    assert_eq!(json["exit_code"], 9);
    assert!(json["view"]["holders"]
        .as_array()
        .unwrap()
        .iter()
        .any(|h| h["kind"] == "labelled" && h["number"] == 30));
}

fn dry_run_writes_nothing(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    issue(&alice, 7, &["agent-ready"]);
    issue(&alice, 8, &["agent-ready"]);
    alice.maverick(&["dispatch"]).expect(0);
    let before = fingerprint(s, &alice, &[7, 8]);
    let run = alice.maverick(&["dispatch", "--dry-run", "--json"]);
    run.expect(0);
    let json = run.json();
    assert_eq!(json["result"], "would_dispatch");
    assert_eq!(json["issue"], 8);
    assert_eq!(json["slot"], 2);
    assert_eq!(json["comment_id"], Value::Null);
    assert_eq!(json["dry_run"], true);
    let text = alice.maverick(&["dispatch", "--dry-run"]);
    text.expect(0);
    assert_eq!(
        text.stdout,
        "would dispatch #8 (slot 2 of 3); nothing written\n"
    );
    alice
        .maverick(&["dispatch", "--dry-run", "--slots", "1"])
        .expect(9);
    // Even a stale claim is only reported.
    s.advance_clock(601);
    let json = dry_run_clearing(&alice, &["--dispatch-stale", "10m"]);
    assert_eq!(json["cleared"][0]["issue"], 7);
    assert_eq!(json["cleared"][0]["state"], "stale");
    assert_eq!(fingerprint(s, &alice, &[7, 8]), before, "a dry run wrote");
    assert!(read_issue(s, &alice, 7).has_label("agent-wip"));
}

fn nothing_eligible_exits_3(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    issue(&alice, 1, &["agent-ready"]);
    issue(&alice, 2, &["agent-ready", "blocked-by:#1"]);
    alice.maverick(&["dispatch"]).expect(0);
    let run = alice.maverick(&["dispatch", "--json"]);
    run.expect(3);
    let json = run.json();
    assert_eq!(json["result"], "idle");
    let frontier = &json["view"]["frontier"];
    assert_eq!(frontier[0]["skip"], "claimed");
    assert_eq!(frontier[1]["skip"], "blocked");
    // An empty frontier has nothing to dispatch either.
    alice
        .maverick(&["dispatch", "--frontier-label", "nobody-uses-this"])
        .expect(3);
}

/// ADR ledger case 1: two dispatches race for the last free slot; one gets
/// it, the other finds no slot (after withdrawing, where the surface let its
/// claim through). Two rounds: the second races on the state the first's
/// release left; `dispatch_schedule` carries the many interleavings.
fn ledger_two_dispatches_into_the_window_one_wins(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    let racers = [s.clone("racer-a"), s.clone("racer-b")];
    for n in 1..=6 {
        issue(&alice, n, &["agent-ready"]);
    }
    agent_pull(s, &alice, 40);
    agent_pull(s, &alice, 41);
    for round in 0..2 {
        let results = race(&racers, &["dispatch", "--json"]);
        let winners: Vec<Value> = results
            .iter()
            .map(|(_, r)| r.json())
            .filter(|j| j["exit_code"] == 0)
            .collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:#?}");
        for (name, run) in &results {
            assert!(
                run.code == 0 || run.code == 9,
                "round {round}: {name}: {}",
                run.screen()
            );
        }
        let issue = winners[0]["issue"].as_u64().unwrap();
        assert_eq!(winners[0]["slot"], 3);
        let status = alice.maverick(&["dispatch", "status", "--json"]).json();
        assert_eq!(status["busy"], 3);
        let holding: Vec<&Value> = status["claims"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["state"] == "holds")
            .collect();
        assert_eq!(holding.len(), 1, "round {round}: {status}");
        assert_eq!(holding[0]["issue"], issue);
        for n in 1..=6 {
            let stored = read_issue(s, &alice, n);
            assert!(stored.live_claims().len() <= usize::from(n == issue));
            assert_eq!(
                stored.has_label("agent-wip"),
                n == issue,
                "round {round} #{n}"
            );
        }
        alice
            .maverick(&["dispatch", "release", &issue.to_string()])
            .expect(0);
    }
}

/// ADR ledger case 2: two dispatchers pick the same (only) issue at once; one
/// wins, and the agent-wip label stays with the winner. Two rounds, as in
/// case 1.
fn ledger_the_same_issue_picked_twice_in_parallel_one_wins(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    let racers = [s.clone("racer-a"), s.clone("racer-b")];
    issue(&alice, 12, &["agent-ready"]);
    for round in 0..2 {
        let results = race(&racers, &["dispatch", "--json"]);
        let codes: Vec<i32> = results.iter().map(|(_, r)| r.code).collect();
        let mut sorted = codes.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 3], "round {round}: {results:#?}");
        let (winner, run) = results.iter().find(|(_, r)| r.code == 0).unwrap();
        let json = run.json();
        assert_eq!(json["issue"], 12);
        let stored = read_issue(s, &alice, 12);
        assert!(
            stored.has_label("agent-wip"),
            "round {round}: the label left the winner"
        );
        let live = stored.live_claims();
        assert_eq!(live, [json["marker_id"].as_str().unwrap()], "round {round}");
        let status = alice.maverick(&["dispatch", "status", "--json"]).json();
        assert_eq!(status["holders"][0]["instance_id"], winner.as_str());
        assert_eq!(status["busy"], 1);
        alice.maverick(&["dispatch", "release", "12"]).expect(0);
        assert!(!read_issue(s, &alice, 12).has_label("agent-wip"));
    }
}

/// Leaves the state a dispatcher that crashed between its claim comment and
/// its label leaves: dispatch, then take the label off.
fn orphan_claim(s: &TestEnv, repo: &Repo<'_>, args: &[&str]) -> Value {
    let mut full = vec!["dispatch", "--json"];
    full.extend(args);
    let run = repo.maverick(&full);
    run.expect(0);
    let json = run.json();
    let issue = json["issue"].as_u64().unwrap().to_string();
    repo.maverick(&["coord", "label", "remove", &issue, "agent-wip"])
        .expect(0);
    assert!(!read_issue(s, repo, json["issue"].as_u64().unwrap()).has_label("agent-wip"));
    json
}

/// ADR ledger case 3: an orphan claim comment without its label is busy while
/// fresh and cleared once stale.
fn ledger_an_orphan_claim_is_busy_while_fresh_and_cleared_when_stale(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    let bob = s.clone("bob");
    issue(&alice, 1, &["agent-ready"]);
    issue(&alice, 2, &["agent-ready"]);
    let orphan = orphan_claim(s, &alice, &["--slots", "1"]);
    assert_eq!(orphan["issue"], 1);
    // Fresh: it holds the only slot.
    let run = bob.maverick(&["dispatch", "--slots", "1", "--json"]);
    run.expect(9);
    let holder = &run.json()["view"]["holders"][0];
    assert_eq!(holder["kind"], "claim");
    assert_eq!(holder["number"], 1);
    assert_eq!(holder["instance_id"], "alice");
    // Stale: the next dispatch clears it, with a comment, and takes the slot.
    let stale = ["--slots", "1", "--dispatch-stale", "10m"];
    s.advance_clock(601);
    let mut dry = vec!["dispatch", "--dry-run", "--json"];
    dry.extend(stale);
    bob.maverick(&dry).expect(0);
    let mut args = vec!["dispatch", "--json"];
    args.extend(stale);
    let run = bob.maverick(&args);
    run.expect(0);
    let json = run.json();
    assert_eq!(json["cleared"][0]["marker_id"], orphan["marker_id"]);
    assert_eq!(
        json["issue"], 1,
        "the cleared issue is the lowest eligible again"
    );
    let stored = read_issue(s, &alice, 1);
    assert_eq!(stored.actions(), ["claim", "clear", "claim"]);
    let clear = stored
        .bodies
        .iter()
        .find(|b| b.contains("\"action\": \"clear\""))
        .unwrap();
    assert!(
        clear.starts_with("Stale dispatch claim by `alice` cleared by `bob`: claimed at "),
        "{clear}"
    );
    assert!(
        clear.contains("with no open agent PR (dispatchStale is 10m)"),
        "{clear}"
    );
    assert_eq!(stored.live_claims(), [json["marker_id"].as_str().unwrap()]);
}

/// A dispatcher that died between comment and label: its fresh claim still
/// takes a slot and keeps its issue from being dispatched again.
fn a_crash_between_comment_and_label_holds_the_slot_and_the_issue(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    let bob = s.clone("bob");
    issue(&alice, 1, &["agent-ready"]);
    issue(&alice, 2, &["agent-ready"]);
    issue(&alice, 3, &["agent-ready"]);
    orphan_claim(s, &alice, &[]);
    let status = bob.maverick(&["dispatch", "status", "--json"]).json();
    assert_eq!(status["busy"], 1);
    assert_eq!(status["claims"][0]["labelled"], false);
    assert_eq!(status["claims"][0]["state"], "holds");
    assert_eq!(status["frontier"][0]["skip"], "claimed");
    let run = bob.maverick(&["dispatch", "--json"]);
    run.expect(0);
    assert_eq!(
        run.json()["issue"],
        2,
        "the orphan's issue was dispatched twice"
    );
    assert_eq!(run.json()["slot"], 2);
    // Two slots are held (the orphan and bob's), so with two slots none is free.
    bob.maverick(&["dispatch", "--slots", "2"]).expect(9);
    // The orphan is released like any claim.
    alice.maverick(&["dispatch", "release", "1"]).expect(0);
    assert!(read_issue(s, &alice, 1).live_claims().is_empty());
    bob.maverick(&["dispatch", "--slots", "2"]).expect(0);
}

fn a_stale_claim_is_cleared_with_a_comment(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    let bob = s.clone("bob");
    issue(&alice, 4, &["agent-ready"]);
    issue(&alice, 5, &["agent-ready"]);
    let first = alice.maverick(&["dispatch", "--json"]).json();
    assert_eq!(first["issue"], 4);
    // Not stale yet at the default 4h.
    let json = bob.maverick(&["dispatch", "--dry-run", "--json"]).json();
    assert_eq!(json["cleared"], serde_json::json!([]));
    s.advance_clock(601);
    let dry = dry_run_clearing(&bob, &["--dispatch-stale", "10m"]);
    assert_eq!(
        dry["issue"], 4,
        "the stale claim's issue is next once cleared"
    );
    let status = bob.maverick(&["dispatch", "status", "--dispatch-stale", "10m"]);
    insta::assert_snapshot!("dispatch_status_with_a_stale_claim", screen(s, &status));
    let run = bob.maverick(&["dispatch", "--dispatch-stale", "10m"]);
    insta::assert_snapshot!("dispatch_clearing_a_stale_claim", screen(s, &run));
    let stored = read_issue(s, &alice, 4);
    assert_eq!(stored.actions(), ["claim", "clear", "claim"]);
    assert!(stored.has_label("agent-wip"));
    let clear = &stored.dispatch_markers()[1];
    assert_eq!(
        clear.payload.get("reason").and_then(|v| v.as_str()),
        Some("stale")
    );
    assert_eq!(
        clear.payload.get("instance_id").and_then(|v| v.as_str()),
        Some("bob")
    );
    assert_eq!(
        clear.payload["claims"],
        serde_json::json!([first["marker_id"]])
    );
}

fn release_on_pr_open_passes_the_slot_to_the_pr(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    let agent = s.clone("agent");
    issue(&alice, 1, &["agent-ready"]);
    issue(&alice, 2, &["agent-ready"]);
    alice.maverick(&["dispatch", "--slots", "1"]).expect(0);
    // The agent that worked the cycle opens draft PR #30 and releases.
    let run = agent.maverick(&["dispatch", "release", "1", "--pr", "30", "--json"]);
    run.expect(0);
    let json = run.json();
    assert_eq!(json["pr"], 30);
    assert_eq!(json["released"][0]["instance_id"], "alice");
    let stored = read_issue(s, &alice, 1);
    assert!(!stored.has_label("agent-wip"));
    assert!(stored.live_claims().is_empty());
    let release = stored.dispatch_markers().pop().unwrap();
    assert_eq!(
        release.payload.get("action").and_then(|v| v.as_str()),
        Some("release")
    );
    assert_eq!(release.payload.get("pr").and_then(|v| v.as_u64()), Some(30));
    assert!(read_issue(s, &alice, 30).has_label("agent-pr"));
    // The PR holds the slot now, and its issue is not dispatched again.
    let full = alice.maverick(&["dispatch", "--slots", "1", "--json"]);
    full.expect(9);
    assert_eq!(full.json()["view"]["holders"][0]["kind"], "pull_request");
    assert_eq!(full.json()["view"]["holders"][0]["number"], 30);
    let next = alice.maverick(&["dispatch", "--slots", "2", "--json"]);
    next.expect(0);
    assert_eq!(next.json()["issue"], 2);
    assert_eq!(next.json()["view"]["frontier"][0]["skip"], "pull_open");
    // Closing the PR frees its slot.
    close(s, &alice, 30);
    alice
        .maverick(&["dispatch", "--slots", "2", "--dry-run"])
        .expect(0);
    // Releasing twice does no harm; a PR cannot be its own issue.
    agent.maverick(&["dispatch", "release", "2"]).expect(0);
    let again = agent.maverick(&["dispatch", "release", "2"]);
    again.expect(0);
    assert_eq!(
        again.stdout,
        "#2: nothing to release (no dispatch claim, no agent-wip)\n"
    );
    agent
        .maverick(&["dispatch", "release", "2", "--pr", "2"])
        .expect(2);
    agent
        .maverick(&["dispatch", "release", "2", "--pr", "3", "--give-up", "x"])
        .expect(2);
}

fn release_on_give_up_relabels_the_issue(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    issue(&alice, 6, &["agent-ready", "bug"]);
    alice.maverick(&["dispatch"]).expect(0);
    let run = alice.maverick(&["dispatch", "release", "6", "--give-up", "needs-human"]);
    run.expect(0);
    assert_eq!(run.stdout, "released #6: gave up, labelled needs-human\n");
    let stored = read_issue(s, &alice, 6);
    assert_eq!(stored.labels, ["bug", "needs-human"]);
    assert!(stored.live_claims().is_empty());
    assert_eq!(
        stored
            .dispatch_markers()
            .pop()
            .unwrap()
            .payload
            .get("give_up")
            .and_then(|v| v.as_str()),
        Some("needs-human")
    );
    alice.maverick(&["dispatch"]).expect(3);
}

fn status_shows_holders_since_when_and_what_is_stale(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    let bob = s.clone("bob");
    issue(&alice, 1, &["agent-ready"]);
    issue(&alice, 2, &["agent-ready"]);
    issue(&alice, 3, &["agent-ready", "blocked-by:#1"]);
    agent_pull(s, &alice, 50);
    let before = fingerprint(s, &alice, &[1, 2, 3, 50]);
    let empty = bob.maverick(&["dispatch", "status"]);
    empty.expect(0);
    assert_eq!(
        empty.stdout,
        "slots: 1 of 3 busy, 2 free (frontier: agent-ready)\n  slot 1: pull request #50\nnext: #1, #2\n"
    );
    assert_eq!(
        fingerprint(s, &alice, &[1, 2, 3, 50]),
        before,
        "status wrote"
    );
    alice.maverick(&["dispatch"]).expect(0);
    let json = bob.maverick(&["dispatch", "status", "--json"]).json();
    assert_eq!(json["slots"], 3);
    assert_eq!(json["busy"], 2);
    assert_eq!(json["free"], 1);
    assert_eq!(json["holders"][1]["kind"], "claim");
    assert_eq!(json["holders"][1]["number"], 1);
    assert_eq!(json["holders"][1]["instance_id"], "alice");
    assert!(json["holders"][1]["since"].as_str().unwrap().ends_with('Z'));
    assert_eq!(json["frontier"][2]["skip"], "blocked");
    let text = bob.maverick(&["dispatch", "status"]);
    insta::assert_snapshot!("dispatch_status", screen(s, &text));
    s.advance_clock(601);
    let json = dry_run_clearing(&bob, &["--dispatch-stale", "10m"]);
    assert_eq!(json["cleared"][0]["issue"], 1);
    let stale = bob.maverick(&["dispatch", "status", "--dispatch-stale", "10m", "--json"]);
    let json = stale.json();
    assert_eq!(json["busy"], 1);
    assert_eq!(json["claims"][0]["state"], "stale");
}

/// Six dispatchers at once, three slots, ten eligible issues, three rounds:
/// after every round at most three claims hold, never two on one issue, every
/// claim that did not win was withdrawn, and no agent-wip label is left
/// without a live claim. A few rounds prove the real processes agree; the
/// simulator carries the many interleavings (`dispatch_schedule`: six
/// dispatchers, three slots, ten issues, four rounds, 150 seeds without
/// compare-and-swap and 60 with it).
fn six_dispatchers_three_slots_three_rounds(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let alice = s.clone("alice");
    for n in 1..=10 {
        issue(&alice, n, &["agent-ready"]);
    }
    let dispatchers: Vec<Repo<'_>> = (0..6)
        .map(|i| s.clone(&format!("dispatcher-{i}")))
        .collect();
    let mut withdrawals = 0;
    for round in 0..3 {
        let results = race(&dispatchers, &["dispatch", "--slots", "3", "--json"]);
        let mut winners: BTreeMap<u64, String> = BTreeMap::new();
        for (name, run) in &results {
            let json = run.json();
            match run.code {
                0 => {
                    let issue = json["issue"].as_u64().unwrap();
                    let marker = json["marker_id"].as_str().unwrap().to_owned();
                    assert!(
                        winners.insert(issue, marker).is_none(),
                        "round {round}: #{issue} dispatched twice\n{results:#?}"
                    );
                }
                9 => assert_eq!(json["result"], "no_slot"),
                _ => panic!("round {round}: {name}: {}", run.screen()),
            }
            withdrawals += json["withdrawn"].as_array().unwrap().len();
        }
        assert_eq!(winners.len(), 3, "round {round}: {results:#?}");
        // The claims from the raw comments; the labels as the slots'
        // status reports them (one read for all ten issues).
        let status = alice
            .maverick(&["dispatch", "status", "--slots", "3", "--json"])
            .json();
        assert_eq!(status["busy"], 3, "round {round}");
        let labelled: BTreeMap<u64, bool> = status["claims"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["issue"].as_u64().unwrap(), c["labelled"] == true))
            .collect();
        let mut live_total = 0;
        for n in 1..=10 {
            let stored = Stored {
                labels: Vec::new(),
                bodies: s.comments(n).into_iter().map(|c| c.body).collect(),
            };
            let live = stored.live_claims();
            live_total += live.len();
            let frontier = status["frontier"]
                .as_array()
                .unwrap()
                .iter()
                .find(|f| f["issue"] == n)
                .unwrap();
            match winners.get(&n) {
                Some(marker) => {
                    assert_eq!(&live, std::slice::from_ref(marker), "round {round} #{n}");
                    assert_eq!(labelled.get(&n), Some(&true), "round {round} #{n}");
                }
                None => {
                    assert!(
                        live.is_empty(),
                        "round {round} #{n}: a loser did not withdraw"
                    );
                    // Eligible: neither agent-wip nor a fresh claim on it.
                    assert_eq!(
                        frontier["skip"],
                        Value::Null,
                        "round {round} #{n}: label without a claim"
                    );
                }
            }
        }
        assert_eq!(live_total, 3);
        for issue in winners.keys() {
            alice
                .maverick(&["dispatch", "release", &issue.to_string()])
                .expect(0);
        }
    }
    eprintln!("withdrawals over 3 rounds: {withdrawals}");
}
