//! `git maverick coord` end to end: the real binary, real clones of a real
//! bare origin, on both surfaces: every test runs on the git surface and on
//! the github surface (a fake GitHub server), as `name::git` and `name::github`.

use std::io::{BufRead as _, BufReader};
use std::process::{Child, ChildStderr};

use crate::support::mav::markers::{parse_markers, MarkerKind};
use crate::support::screen::{normalise, screen, screens};
use crate::support::{mav, Repo, Run, StoredComment, Surface, TestEnv};

/// The kinds of the marker blocks in one comment body.
fn marker_kinds(body: &str) -> Vec<MarkerKind> {
    parse_markers(body)
        .into_iter()
        .map(|m| m.expect("a marker that parses").kind)
        .collect()
}

on_both_surfaces!(
    read_of_an_unclaimed_issue_is_free,
    claim_then_read_ours_then_held_by_another,
    claim_twice_is_idempotent,
    blocked_issue_reads_3_and_refuses_a_claim,
    stale_lease_reads_5_refuses_a_claim_and_is_taken_over,
    heartbeat_pushes_the_lease_forward_in_place,
    release_removes_the_label_and_frees_the_issue,
    a_claim_scoped_to_three_issues_labels_and_leases_all_three,
    a_scope_overlapping_a_held_issue_claims_nothing,
    a_block_never_hides_who_holds_an_issue,
    a_claim_taken_over_before_its_settle_exits_6,
    sixteen_instances_race_for_one_issue_and_exactly_one_wins_each_round,
    a_lost_settle_leaves_another_accounts_copy_of_our_claim_unedited,
    a_losing_claim_of_ours_in_another_accounts_comment_is_withdrawn_by_a_comment_of_our_own,
);

fn wait_all(children: Vec<(String, Child)>) -> Vec<(String, Run)> {
    children
        .into_iter()
        .map(|(name, child)| {
            let out = child.wait_with_output().expect("maverick finishes");
            (name, Run::from_output(&["coord", "claim"], out))
        })
        .collect()
}

fn read_of_an_unclaimed_issue_is_free(surface: Surface) {
    let env = TestEnv::with_surface(surface);
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
    assert_eq!(env.write_count(), 0);
}

fn claim_then_read_ours_then_held_by_another(surface: Surface) {
    let env = TestEnv::with_surface(surface);
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
    insta::assert_snapshot!(
        format!("read_json_held_by_another_{}", env.name()),
        screen(&env, &held)
    );

    // Bob's claim is refused and writes nothing.
    let before = env.write_count();
    bob.maverick(&["coord", "claim", "142"]).expect(4);
    assert_eq!(env.write_count(), before);

    // The issue carries the label, a claim and a lease, in that order.
    assert_eq!(env.labels(142), ["claude-in-progress"]);
    let bodies = env.comment_bodies(142);
    assert_eq!(bodies.len(), 2);
    assert_eq!(marker_kinds(&bodies[0]), [MarkerKind::Claim]);
    assert_eq!(marker_kinds(&bodies[1]), [MarkerKind::Lease]);
}

fn claim_twice_is_idempotent(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    alice.maverick(&["coord", "claim", "7"]).expect(0);
    let writes = env.write_count();
    let again = alice.maverick(&["coord", "claim", "7", "--json"]);
    again.expect(0);
    assert_eq!(again.json()["already_held"], true);
    assert_eq!(
        env.write_count(),
        writes,
        "a second claim wrote to the surface"
    );
}

fn blocked_issue_reads_3_and_refuses_a_claim(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    alice
        .maverick(&["coord", "block", "150", "--by", "142"])
        .expect(0);
    let read = alice.maverick(&["coord", "read", "150", "--json"]);
    read.expect(3);
    assert_eq!(read.json()["blocked_by"], serde_json::json!([142]));
    alice.maverick(&["coord", "claim", "150"]).expect(3);
    assert!(!env.labels(150).iter().any(|l| l == "claude-in-progress"));
    alice
        .maverick(&["coord", "unblock", "150", "--by", "142"])
        .expect(0);
    alice.maverick(&["coord", "read", "150"]).expect(0);
    alice.maverick(&["coord", "claim", "150"]).expect(0);
}

fn stale_lease_reads_5_refuses_a_claim_and_is_taken_over(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice
        .maverick(&["coord", "claim", "142", "--lease-ttl", "60s"])
        .expect(0);
    bob.maverick(&["coord", "read", "142"]).expect(4);
    env.advance_clock(61);
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
    let takeover_body = env
        .comment_bodies(142)
        .into_iter()
        .find(|b| {
            parse_markers(b)
                .iter()
                .flatten()
                .any(|m| m.payload.contains_key("takeover_of"))
        })
        .expect("a takeover comment");
    insta::assert_snapshot!("takeover_comment", normalise(&env, &takeover_body));

    // The old holder finds out at its next heartbeat, and cannot release bob's claim.
    let hb = alice.maverick(&["coord", "heartbeat", "142", "--json"]);
    hb.expect(7);
    assert_eq!(hb.json()["result"], "lost");
    insta::assert_snapshot!(
        format!("heartbeat_json_after_a_takeover_{}", env.name()),
        screen(&env, &hb)
    );
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

fn heartbeat_pushes_the_lease_forward_in_place(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    alice
        .maverick(&["coord", "claim", "142", "--lease-ttl", "60s"])
        .expect(0);
    // 10 s before the lease runs out (a lapsed one is lost, not renewed:
    // `a_heartbeat_after_the_lease_lapsed_exits_7_and_revives_nothing`).
    env.advance_clock(50);
    let hb = alice.maverick(&["coord", "heartbeat", "142", "--lease-ttl", "10m", "--json"]);
    hb.expect(0);
    assert_eq!(hb.json()["result"], "renewed");
    // Past the first lease's end, the renewed one still holds.
    env.advance_clock(20);
    env.clone("bob")
        .maverick(&["coord", "read", "142"])
        .expect(4);
    // Upserted: still one claim and one lease comment.
    assert_eq!(env.comment_bodies(142).len(), 2);
}

fn release_removes_the_label_and_frees_the_issue(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice.maverick(&["coord", "claim", "142"]).expect(0);
    bob.maverick(&["coord", "release", "142"]).expect(7);
    alice.maverick(&["coord", "read", "142"]).expect(0);
    let release = alice.maverick(&["coord", "release", "142", "--reason", "merged", "--json"]);
    release.expect(0);
    assert_eq!(release.json()["released"], serde_json::json!([142]));
    assert!(env.labels(142).is_empty());
    let released = parse_markers(env.comment_bodies(142).last().unwrap());
    let released = released.last().unwrap().as_ref().expect("a release marker");
    assert_eq!(released.payload["reason"], "merged");
    let read = bob.maverick(&["coord", "read", "142", "--json"]);
    read.expect(0);
    assert_eq!(read.json()["decision"], "free");
    // The next claim starts a new generation.
    let claim = bob.maverick(&["coord", "claim", "142", "--json"]);
    claim.expect(0);
    assert_eq!(claim.json()["generation"], 2);
}

fn a_claim_scoped_to_three_issues_labels_and_leases_all_three(surface: Surface) {
    let env = TestEnv::with_surface(surface);
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

fn a_block_never_hides_who_holds_an_issue(surface: Surface) {
    let env = TestEnv::with_surface(surface);
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

fn a_scope_overlapping_a_held_issue_claims_nothing(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice.maverick(&["coord", "claim", "141"]).expect(0);
    bob.maverick(&["coord", "claim", "140", "--scope", "141,142"])
        .expect(4);
    bob.maverick(&["coord", "read", "140"]).expect(0);
    bob.maverick(&["coord", "read", "142"]).expect(0);
    assert!(env.labels(140).is_empty());
    assert!(env.comment_bodies(140).is_empty());
}

/// `repo`'s claim of #142 with a settle longer than its lease (60 s
/// against 90 s), in the background, once its claim is written and it
/// waits to re-read: the pause waits for the clock
/// (MAVERICK_CLOCK_PAUSES=wait), which the test moves.
fn claim_waiting_for_its_settle(repo: &Repo<'_>) -> (Child, BufReader<ChildStderr>) {
    let mut slow = repo
        .maverick_command(&[
            "coord",
            "claim",
            "142",
            "--lease-ttl",
            "60s",
            "--settle-delay",
            "90s",
            "--json",
        ])
        .env("MAVERICK_INSTANCE", &repo.instance)
        .env(mav::clock::CLOCK_PAUSES_VAR, "wait")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(slow.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(
        line.starts_with("waiting 90 s for the settle delay"),
        "{line}"
    );
    // The rest of its stderr stays readable until it exits.
    (slow, stderr)
}

/// The settle can be lost on the git surface too: a claim whose lease ran
/// out before its re-read was taken over in between.
fn a_claim_taken_over_before_its_settle_exits_6(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let (slow, _stderr) = claim_waiting_for_its_settle(&alice);
    // Her lease runs out while she waits, and bob takes the issue over.
    bob.maverick(&["coord", "read", "142"]).expect(4);
    env.advance_clock(61);
    bob.maverick(&["coord", "read", "142"]).expect(5);
    bob.maverick(&["coord", "takeover", "142"]).expect(0);
    // Then her settle delay ends.
    env.advance_clock(30);
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

/// The comments of `issue` whose claim-kind block (a claim, or one
/// withdrawn) names `instance`, the newest first.
fn claim_comments_naming(env: &TestEnv, issue: u64, instance: &str) -> Vec<StoredComment> {
    env.comments(issue)
        .into_iter()
        .rev()
        .filter(|c| {
            parse_markers(&c.body).into_iter().flatten().any(|m| {
                matches!(m.kind, MarkerKind::Claim | MarkerKind::Withdrawn)
                    && m.payload["instance_id"] == instance
            })
        })
        .collect()
}

/// Asserts that `reader` reads #142 as held by `holder` (exit 4).
fn assert_held_by(reader: &Repo<'_>, holder: &str) {
    let read = reader.maverick(&["coord", "read", "142", "--json"]);
    read.expect(4);
    assert_eq!(read.json()["decision"], "held", "{}", read.stdout);
    assert_eq!(
        read.json()["holder"]["instance_id"],
        holder,
        "{}",
        read.stdout
    );
}

/// A trusted account's comment that carries a claim block naming alice
/// (an admin who pasted it, or wrote one by hand).
fn admins_copy_of_a_claim_by_alice(generation: u64) -> String {
    format!(
        "Pasting alice's claim here for the record.\n\n<!-- maverick claim -->\n\n\
         ```maverick-claim\n{}\n```\n",
        serde_json::json!({
            "instance_id": "alice",
            "host": "laptop",
            "scope": ["142"],
            "claimed_at": "2026-11-30T10:00:00Z",
            "generation": generation,
            "marker_id": "pasted-by-admin",
        })
    )
}

/// alice's claim loses its settle (bob took the issue over while she
/// waited to re-read) and is withdrawn. A copy of her claim block sits in
/// a comment another account wrote: her withdrawal edits her own claim
/// comment, never that one (an admin's token could have edited it), and
/// the issue reads as bob's.
fn a_lost_settle_leaves_another_accounts_copy_of_our_claim_unedited(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let (slow, _stderr) = claim_waiting_for_its_settle(&alice);
    // While alice waits, an admin pastes her claim (generation 1) into a
    // comment of its own; her lease runs out and bob takes the issue over.
    let copy = admins_copy_of_a_claim_by_alice(1);
    let copy_id = env.add_comment(142, "admin", &copy);
    env.advance_clock(61);
    bob.maverick(&["coord", "takeover", "142"]).expect(0);
    env.advance_clock(30);
    let lost = Run::from_output(&["coord", "claim"], slow.wait_with_output().unwrap());
    lost.expect(6);
    assert_eq!(lost.json()["winner"], "bob", "{}", lost.stdout);

    let comments = env.comments(142);
    let admins = comments.iter().find(|c| c.id == copy_id).unwrap();
    assert_eq!(
        admins.body, copy,
        "alice's withdrawal edited the admin's comment"
    );
    // Her own claim comment no longer reads as a claim.
    let own = claim_comments_naming(&env, 142, "alice")
        .into_iter()
        .filter(|c| c.author != "admin")
        .collect::<Vec<_>>();
    assert!(!own.is_empty(), "{comments:?}");
    for c in &own {
        assert_eq!(marker_kinds(&c.body), [MarkerKind::Withdrawn], "{}", c.body);
    }
    assert_held_by(&alice, "bob");
}

/// bob holds the issue; an admin's comment carries a claim block naming
/// alice at bob's generation: a claim of alice's that lost, in a comment
/// she may not edit. Her heartbeat finds the claim lost (exit 7) and
/// withdraws it by a new comment of her own, leaving the admin's comment
/// as it was; every reader then counts that claim withdrawn, so the next
/// heartbeat has nothing left to withdraw, and the issue is bob's.
fn a_losing_claim_of_ours_in_another_accounts_comment_is_withdrawn_by_a_comment_of_our_own(
    surface: Surface,
) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    bob.maverick(&["coord", "claim", "142"]).expect(0);
    let copy = admins_copy_of_a_claim_by_alice(1);
    let copy_id = env.add_comment(142, "admin", &copy);
    assert_held_by(&alice, "bob");

    alice.maverick(&["coord", "heartbeat", "142"]).expect(7);
    let comments = env.comments(142);
    let admins = comments.iter().find(|c| c.id == copy_id).unwrap();
    assert_eq!(
        admins.body, copy,
        "alice's withdrawal edited the admin's comment"
    );
    let newest = comments.last().unwrap();
    assert!(
        newest.id > copy_id && newest.author != "admin",
        "{comments:?}"
    );
    let withdrawn = parse_markers(&newest.body);
    let withdrawn = withdrawn[0].as_ref().expect("a marker that parses");
    assert_eq!(withdrawn.kind, MarkerKind::Withdrawn, "{}", newest.body);
    assert_eq!(withdrawn.payload["instance_id"], "alice", "{}", newest.body);
    assert_eq!(withdrawn.payload["generation"], 1, "{}", newest.body);

    // Withdrawn for every reader: alice's next heartbeat writes nothing,
    // and bob still holds the issue.
    alice.maverick(&["coord", "heartbeat", "142"]).expect(7);
    assert_eq!(
        env.comments(142).len(),
        comments.len(),
        "{:?}",
        env.comments(142)
    );
    assert_held_by(&alice, "bob");
    bob.maverick(&["coord", "heartbeat", "142"]).expect(0);
}

fn sixteen_instances_race_for_one_issue_and_exactly_one_wins_each_round(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let racers: Vec<_> = (0..16)
        .map(|i| env.clone(&format!("racer-{i:02}")))
        .collect();
    let referee = env.clone("referee");
    // On git the claim is one compare-and-swap: a loser sees the holder (4).
    // On GitHub, without a CAS, a loser may also find out at its settle (6).
    // A few rounds prove the real processes agree; the simulator carries the
    // many interleavings (settle::sixteen_racing_claims_*, 100 seeds).
    let (rounds, losing_codes): (u64, &[i32]) = match surface {
        Surface::Git => (3, &[4]),
        Surface::Github => (2, &[4, 6]),
    };
    for round in 0..rounds {
        let issue = (1000 + round).to_string();
        let children: Vec<(String, Child)> = racers
            .iter()
            .map(|r| {
                let child = r
                    .maverick_command(&["coord", "claim", &issue])
                    .env("MAVERICK_INSTANCE", &r.instance)
                    // The settle's pause is what lets every racer's claim
                    // land before the re-read: real time here, as between
                    // machines, not a move of the shared test clock.
                    .env(mav::clock::CLOCK_PAUSES_VAR, "wait")
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
                run.code == 0 || losing_codes.contains(&run.code),
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

on_both_surfaces!(a_heartbeat_after_the_lease_lapsed_exits_7_and_revives_nothing);

/// SPEC 4: a lapsed lease is lost. The holder's heartbeat after the lease
/// ran out must not renew it (another instance may be taking it over: the
/// simulator's seed 1103); only a new claim, a new generation, takes it back.
fn a_heartbeat_after_the_lease_lapsed_exits_7_and_revives_nothing(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice
        .maverick(&["coord", "claim", "142", "--lease-ttl", "60s"])
        .expect(0);
    env.advance_clock(61);
    let before = bob.maverick(&["coord", "read", "142", "--json"]);
    before.expect(5);

    let hb = alice.maverick(&["coord", "heartbeat", "142", "--json"]);
    hb.expect(7);
    assert_eq!(hb.json()["result"], "lost", "{}", hb.screen());
    let text = alice.maverick(&["coord", "heartbeat", "142"]);
    text.expect(7);
    insta::assert_snapshot!(
        format!("heartbeat_after_the_lease_lapsed_{}", env.name()),
        screens(&[
            ("git maverick coord heartbeat 142 --json", screen(&env, &hb)),
            ("git maverick coord heartbeat 142", screen(&env, &text)),
        ])
    );
    // Nothing was renewed: the lease still ends where it ended, and the
    // issue is still stale for everyone else.
    let after = bob.maverick(&["coord", "read", "142", "--json"]);
    after.expect(5);
    assert_eq!(after.json()["expires_at"], before.json()["expires_at"]);

    // Its own claim is not "already held" any more: its holder's plain
    // claim takes it back, as a new claim (nobody else claimed it).
    let again = alice.maverick(&["coord", "claim", "142", "--json"]);
    again.expect(0);
    assert_eq!(again.json()["generation"], 2, "{}", again.screen());
    assert_eq!(again.json()["already_held"], false);
    alice.maverick(&["coord", "heartbeat", "142"]).expect(0);
    bob.maverick(&["coord", "read", "142"]).expect(4);
}

on_both_surfaces!(
    reading_ones_own_lapsed_lease_says_so_and_exits_5,
    a_claim_says_how_long_its_lease_lasts_and_what_keeps_it_alive,
);

/// SPEC 4: `coord read` of this instance's own lapsed lease is no live
/// hold: decision `lapsed`, exit 5 (anyone may take it over), and the way
/// back. Its holder's plain claim takes it back while nobody else has.
fn reading_ones_own_lapsed_lease_says_so_and_exits_5(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    alice
        .maverick(&["coord", "claim", "142", "--lease-ttl", "60s"])
        .expect(0);
    alice.maverick(&["coord", "read", "142"]).expect(0);
    env.advance_clock(61);
    let json = alice.maverick(&["coord", "read", "142", "--json"]);
    assert_eq!(json.expect(5).json()["decision"], "lapsed");
    let text = alice.maverick(&["coord", "read", "142"]);
    text.expect(5);
    insta::assert_snapshot!(
        format!("read_of_ones_own_lapsed_lease_{}", env.name()),
        screen(&env, &text)
    );
    let again = alice.maverick(&["coord", "claim", "142", "--json"]);
    assert_eq!(again.expect(0).json()["generation"], 2);
    alice.maverick(&["coord", "read", "142"]).expect(0);
}

/// A person's claim (no `run`, no agent) says how long its lease lasts and
/// what keeps it alive, so it never lapses unseen.
fn a_claim_says_how_long_its_lease_lasts_and_what_keeps_it_alive(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    let run = alice.maverick(&["coord", "claim", "142"]);
    run.expect(0);
    insta::assert_snapshot!(
        format!("a_persons_claim_{}", env.name()),
        screen(&env, &run)
    );
}

/// A lease that runs out before the settle's re-read (here a lease of a
/// second against a settle delay of three) still won the settle: nobody
/// else claimed, so the claim stands (exit 0), nothing is withdrawn, and
/// the reader is told the lease lapsed. It used to answer "another
/// instance won the claim" (exit 6) and withdraw a claim nobody raced.
#[test]
fn a_claim_whose_lease_ran_out_before_the_reread_still_won_the_settle() {
    let env = TestEnv::with_surface(Surface::Github);
    let alice = env.clone("alice");
    alice.git(&["config", "maverick.settleDelay", "3s"]);
    let run = alice.maverick(&["--lease-ttl", "1s", "--json", "coord", "claim", "5"]);
    run.expect(0);
    let withdrawn = env
        .comment_bodies(5)
        .iter()
        .flat_map(|body| parse_markers(body))
        .flatten()
        .filter(|m| m.kind == MarkerKind::Withdrawn)
        .count();
    assert_eq!(withdrawn, 0, "{}", run.stdout);
    assert!(env.labels(5).iter().any(|l| l == "claude-in-progress"));
    // The next read says the lease lapsed; the claim is still alice's.
    let read = alice.maverick(&["--json", "coord", "read", "5"]);
    read.expect(5);
    assert_eq!(read.json()["decision"], "lapsed", "{}", read.stdout);
}
