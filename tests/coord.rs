//! `git maverick coord` end to end: the real binary, real clones of a real
//! bare origin, the git surface.

mod support;

use std::process::Child;
use std::time::{Duration, Instant};

use support::{Run, TestEnv};

fn wait_all(children: Vec<(String, Child)>) -> Vec<(String, Run)> {
    children
        .into_iter()
        .map(|(name, child)| {
            let out = child.wait_with_output().expect("maverick finishes");
            (name, Run::from_output(&["coord", "claim"], out))
        })
        .collect()
}

/// Polls `coord read` until it exits `code`, within a bounded time.
#[track_caller]
fn wait_for_read_exit(repo: &support::Repo<'_>, issue: &str, code: i32) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let run = repo.maverick(&["coord", "read", issue]);
        if run.code == code {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "coord read never exited {code}: {}",
            run.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn read_of_an_unclaimed_issue_is_free() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let run = alice.maverick(&["coord", "read", "142", "--json"]);
    run.expect(0);
    let json = run.json();
    assert_eq!(json["decision"], "free");
    assert_eq!(json["holder"], serde_json::Value::Null);
    assert_eq!(
        alice.maverick(&["coord", "read", "#142"]).expect(0).stdout,
        "#142: free\n"
    );
    // A read writes nothing.
    assert_eq!(env.surface_head(), None);
}

#[test]
fn claim_then_read_ours_then_held_by_another() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let claim = alice.maverick(&[
        "coord",
        "claim",
        "142",
        "--branch",
        "maverick/142-parse",
        "--json",
    ]);
    claim.expect(0);
    let json = claim.json();
    assert_eq!(json["result"], "claimed");
    assert_eq!(json["generation"], 1);

    let ours = alice.maverick(&["coord", "read", "142", "--json"]);
    ours.expect(0);
    assert_eq!(ours.json()["decision"], "ours");

    let held = bob.maverick(&["coord", "read", "142", "--json"]);
    held.expect(4);
    let json = held.json();
    assert_eq!(json["decision"], "held");
    assert_eq!(json["holder"]["instance_id"], "alice");
    assert_eq!(json["holder"]["branch"], "maverick/142-parse");
    assert!(held.stderr.contains("hint:"), "{}", held.stderr);

    // Bob's claim is refused and writes nothing.
    let before = env.surface_head();
    bob.maverick(&["coord", "claim", "142"]).expect(4);
    assert_eq!(env.surface_head(), before);

    // The issue carries the label, a claim and a lease, in that order.
    let stored = env.stored_issue(142).unwrap();
    assert_eq!(stored["labels"], serde_json::json!(["claude-in-progress"]));
    let bodies: Vec<&str> = stored["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap())
        .collect();
    assert_eq!(bodies.len(), 2);
    assert!(bodies[0].contains("```maverick-claim"));
    assert!(bodies[1].contains("```maverick-lease"));
}

#[test]
fn claim_twice_is_idempotent() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    alice.maverick(&["coord", "claim", "7"]).expect(0);
    let head = env.surface_head();
    let again = alice.maverick(&["coord", "claim", "7", "--json"]);
    again.expect(0);
    assert_eq!(again.json()["already_held"], true);
    assert_eq!(
        env.surface_head(),
        head,
        "a second claim wrote to the surface"
    );
}

#[test]
fn blocked_issue_reads_3_and_refuses_a_claim() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    alice
        .maverick(&["coord", "block", "150", "--by", "142"])
        .expect(0);
    let read = alice.maverick(&["coord", "read", "150", "--json"]);
    read.expect(3);
    assert_eq!(read.json()["blocked_by"], serde_json::json!([142]));
    alice.maverick(&["coord", "claim", "150"]).expect(3);
    assert!(!env.stored_issue(150).unwrap()["labels"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l == "claude-in-progress"));
    alice
        .maverick(&["coord", "unblock", "150", "--by", "142"])
        .expect(0);
    alice.maverick(&["coord", "read", "150"]).expect(0);
    alice.maverick(&["coord", "claim", "150"]).expect(0);
}

#[test]
fn stale_lease_reads_5_refuses_a_claim_and_is_taken_over() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice
        .maverick(&["coord", "claim", "142", "--lease-ttl", "1s"])
        .expect(0);
    wait_for_read_exit(&bob, "142", 5);
    let stale = bob.maverick(&["coord", "read", "142", "--json"]);
    stale.expect(5);
    assert_eq!(stale.json()["decision"], "stale");
    bob.maverick(&["coord", "claim", "142"]).expect(5);

    let takeover = bob.maverick(&["coord", "takeover", "142", "--json"]);
    takeover.expect(0);
    let json = takeover.json();
    assert_eq!(
        json["generation"], 2,
        "takeover bumps the generation by one"
    );
    let stored = env.stored_issue(142).unwrap();
    let takeover_body = stored["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["body"].as_str().unwrap())
        .find(|b| b.contains("takeover_of"))
        .expect("a takeover comment");
    assert!(
        takeover_body.contains("Taking over from `alice`"),
        "{takeover_body}"
    );

    // The old holder finds out at its next heartbeat, and cannot release bob's claim.
    let hb = alice.maverick(&["coord", "heartbeat", "142", "--json"]);
    hb.expect(7);
    assert_eq!(hb.json()["result"], "lost");
    assert!(hb.stdout.contains("held by bob"), "{}", hb.stdout);
    alice.maverick(&["coord", "release", "142"]).expect(7);
    // ... and from then on its local record says the claim is lost, so the
    // pre-push hook refuses its pushes without a network call.
    let common = alice.git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]);
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(std::path::Path::new(&common).join("maverick/claims/alice/142.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(record["lost"], "#142 is held by bob", "{record}");
    let read = bob.maverick(&["coord", "read", "142", "--json"]);
    read.expect(0);
    assert_eq!(read.json()["holder"]["instance_id"], "bob");
    assert_eq!(read.json()["generation"], 2);
}

#[test]
fn heartbeat_pushes_the_lease_forward_in_place() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    alice
        .maverick(&["coord", "claim", "142", "--lease-ttl", "2s"])
        .expect(0);
    wait_for_read_exit(&env.clone("watcher"), "142", 5);
    let hb = alice.maverick(&["coord", "heartbeat", "142", "--lease-ttl", "10m", "--json"]);
    hb.expect(0);
    assert_eq!(hb.json()["result"], "renewed");
    env.clone("bob")
        .maverick(&["coord", "read", "142"])
        .expect(4);
    // Upserted: still one claim and one lease comment.
    assert_eq!(
        env.stored_issue(142).unwrap()["comments"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn release_removes_the_label_and_frees_the_issue() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice.maverick(&["coord", "claim", "142"]).expect(0);
    bob.maverick(&["coord", "release", "142"]).expect(7);
    alice.maverick(&["coord", "read", "142"]).expect(0);
    let release = alice.maverick(&["coord", "release", "142", "--reason", "merged", "--json"]);
    release.expect(0);
    assert_eq!(release.json()["released"], serde_json::json!([142]));
    let stored = env.stored_issue(142).unwrap();
    assert_eq!(stored["labels"], serde_json::json!([]));
    assert!(
        stored["comments"].as_array().unwrap().last().unwrap()["body"]
            .as_str()
            .unwrap()
            .contains("\"reason\": \"merged\"")
    );
    let read = bob.maverick(&["coord", "read", "142", "--json"]);
    read.expect(0);
    assert_eq!(read.json()["decision"], "free");
    // The next claim starts a new generation.
    let claim = bob.maverick(&["coord", "claim", "142", "--json"]);
    claim.expect(0);
    assert_eq!(claim.json()["generation"], 2);
}

#[test]
fn a_claim_scoped_to_three_issues_labels_and_leases_all_three() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice
        .maverick(&["coord", "claim", "140", "--scope", "141,#142"])
        .expect(0);
    for issue in ["140", "141", "142"] {
        let read = bob.maverick(&["coord", "read", issue, "--json"]);
        read.expect(4);
        let json = read.json();
        assert_eq!(json["holder"]["instance_id"], "alice");
        assert_eq!(json["holder"]["scope"], serde_json::json!([140, 141, 142]));
        assert!(json["lease"]["expires_at"].is_string());
        assert!(json["labels"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "claude-in-progress"));
    }
    // One heartbeat renews the whole scope.
    alice.maverick(&["coord", "heartbeat", "140"]).expect(0);
    // Releasing one merged story of the wave leaves its siblings held, and
    // their heartbeats no longer cover the released one.
    alice
        .maverick(&["coord", "release", "141", "--reason", "merged"])
        .expect(0);
    bob.maverick(&["coord", "read", "141"]).expect(0);
    bob.maverick(&["coord", "read", "140"]).expect(4);
    bob.maverick(&["coord", "claim", "141"]).expect(0);
    alice.maverick(&["coord", "heartbeat", "142"]).expect(0);
    bob.maverick(&["coord", "read", "142"]).expect(4);
    alice.maverick(&["coord", "release-all"]).expect(0);
    for issue in ["140", "142"] {
        bob.maverick(&["coord", "read", issue]).expect(0);
    }
}

#[test]
fn a_block_never_hides_who_holds_an_issue() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice.maverick(&["coord", "claim", "150"]).expect(0);
    bob.maverick(&["coord", "block", "150", "--by", "1"])
        .expect(0);
    let read = bob.maverick(&["coord", "read", "150", "--json"]);
    read.expect(4);
    assert_eq!(read.json()["holder"]["instance_id"], "alice");
    assert_eq!(read.json()["blocked_by"], serde_json::json!([1]));
    bob.maverick(&["coord", "claim", "150"]).expect(4);
    alice.maverick(&["coord", "read", "150"]).expect(0);
}

#[test]
fn a_scope_overlapping_a_held_issue_claims_nothing() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice.maverick(&["coord", "claim", "141"]).expect(0);
    bob.maverick(&["coord", "claim", "140", "--scope", "141,142"])
        .expect(4);
    bob.maverick(&["coord", "read", "140"]).expect(0);
    bob.maverick(&["coord", "read", "142"]).expect(0);
    assert_eq!(env.stored_issue(140), None);
}

/// The settle can be lost on the git surface too: a claim whose lease ran
/// out before its re-read was taken over in between.
#[test]
fn a_claim_taken_over_before_its_settle_exits_6() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let slow = alice
        .maverick_command(&[
            "coord",
            "claim",
            "142",
            "--lease-ttl",
            "1s",
            "--settle-delay",
            "8s",
            "--json",
        ])
        .env("MAVERICK_INSTANCE", "alice")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_read_exit(&bob, "142", 5);
    bob.maverick(&["coord", "takeover", "142"]).expect(0);
    let lost = Run::from_output(&["coord", "claim"], slow.wait_with_output().unwrap());
    lost.expect(6);
    let json = lost.json();
    assert_eq!(json["result"], "lost");
    assert_eq!(json["winner"], "bob");
    // Bob's claim and label are untouched.
    let read = bob.maverick(&["coord", "read", "142", "--json"]);
    read.expect(0);
    assert_eq!(read.json()["holder"]["instance_id"], "bob");
}

#[test]
fn sixteen_instances_race_for_one_issue_and_exactly_one_wins_each_round() {
    let env = TestEnv::new();
    let racers: Vec<_> = (0..16)
        .map(|i| env.clone(&format!("racer-{i:02}")))
        .collect();
    let referee = env.clone("referee");
    for round in 0..20 {
        let issue = (1000 + round).to_string();
        let children: Vec<(String, Child)> = racers
            .iter()
            .map(|r| {
                let child = r
                    .maverick_command(&["coord", "claim", &issue])
                    .env("MAVERICK_INSTANCE", &r.instance)
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap();
                (r.instance.clone(), child)
            })
            .collect();
        let results = wait_all(children);
        let winners: Vec<&String> = results
            .iter()
            .filter(|(_, r)| r.code == 0)
            .map(|(n, _)| n)
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: winners {winners:?}\n{results:#?}"
        );
        for (name, run) in &results {
            assert!(
                run.code == 0 || run.code == 4,
                "round {round}: {name} exited {}: {}",
                run.code,
                run.stderr
            );
        }
        let read = referee.maverick(&["coord", "read", &issue, "--json"]);
        read.expect(4);
        assert_eq!(
            read.json()["holder"]["instance_id"],
            winners[0].as_str(),
            "round {round}"
        );
    }
}
