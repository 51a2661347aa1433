//! What only the github surface has to get right, end to end against the
//! fake GitHub server: existing issues, lagging lists, forged markers from
//! strangers, long comment threads, request budgets, faults and rate limits,
//! tokens. (Everything the two surfaces share runs in coord.rs and cli.rs.)

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::support::fake_github::RecordedRequest;
use crate::support::mav::markers::{parse_markers, MarkerKind};
use crate::support::screen::{normalise, screen, screen_keeping, screen_of_lines, screens};
use crate::support::{Repo, Run, Surface, TestEnv};
use serde_json::{json, Value};

fn github_env() -> TestEnv {
    TestEnv::with_surface(Surface::Github)
}

fn spawn(repo: &Repo<'_>, args: &[&str]) -> Child {
    repo.maverick_command(args)
        .env("MAVERICK_INSTANCE", &repo.instance)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git-maverick starts")
}

fn finish(args: &[&str], child: Child) -> Run {
    Run::from_output(args, child.wait_with_output().expect("git-maverick ends"))
}

/// Runs `args` and returns the run and the requests it made.
fn counted(env: &TestEnv, repo: &Repo<'_>, args: &[&str]) -> (Run, Vec<RecordedRequest>) {
    env.github().reset_count();
    let run = repo.maverick(args);
    (run, env.github().requests())
}

fn writes(requests: &[RecordedRequest]) -> usize {
    requests.iter().filter(|r| r.method != "GET").count()
}

/// [`screen`] without what the backoff's jitter decides or another layer
/// owns: the line announcing the last retry's wait (2 s plus 0 to 99 ms of
/// jitter, announced only when over 2 s) and, at -vvv, the git commands
/// maverick runs (src/git.rs's business; the requests are this file's).
fn steady_screen(env: &TestEnv, run: &Run) -> String {
    screen_of_lines(env, run, |l| {
        let announced = l
            .strip_prefix("waiting ")
            .and_then(|rest| rest.split_once(" s for GitHub to answer again, until "));
        announced.is_none() && !l.starts_with("DEBUG git ")
    })
}

fn summary(requests: &[RecordedRequest]) -> String {
    requests
        .iter()
        .map(|r| format!("{} {} -> {}", r.method, r.path, r.status))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn claiming_an_issue_that_does_not_exist_is_a_clear_error() {
    let env = github_env();
    env.github().create_issues_on_demand(false);
    env.github().create_issue(1, "exists", &[]);
    let alice = env.clone("alice");
    let missing = alice.maverick(&["coord", "claim", "999"]);
    assert_eq!(env.write_count(), 0);
    alice.maverick(&["coord", "read", "999"]).expect(1);
    alice.maverick(&["coord", "read", "1"]).expect(0);

    // A repository that is not there (or not visible) is named as such.
    let nothing = alice.maverick(&["coord", "read", "1", "-R", "acme/nothing"]);

    // A closed issue is not claimed.
    env.github().close(1);
    let closed = alice.maverick(&["coord", "claim", "1"]);
    assert_eq!(env.write_count(), 0);
    insta::assert_snapshot!(
        "claiming_a_missing_or_closed_issue",
        screens(&[
            ("git maverick coord claim 999", screen(&env, &missing)),
            (
                "git maverick coord read 1 -R acme/nothing",
                screen(&env, &nothing)
            ),
            ("git maverick coord claim 1 (closed)", screen(&env, &closed)),
        ])
    );
}

/// GitHub's lists (and issue reads) lag writes: every racer's settle can
/// miss every other claim. The race ends at the next heartbeat.
#[test]
fn eight_instances_racing_with_list_lag_leave_at_most_one_holder() {
    let env = github_env();
    let fake = env.github();
    fake.create_issue(77, "contested", &[]);
    let racers: Vec<Repo<'_>> = (0..8).map(|i| env.clone(&format!("racer-{i}"))).collect();
    fake.set_list_lag(Duration::from_secs(30));

    let claims: Vec<(String, Run)> = racers
        .iter()
        .map(|r| (r.instance.clone(), spawn(r, &["coord", "claim", "77"])))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|(name, child)| (name, finish(&["coord", "claim", "77"], child)))
        .collect();
    for (name, run) in &claims {
        assert!(
            [0, 4, 6].contains(&run.code),
            "{name}'s claim exited {}: {}",
            run.code,
            run.stderr
        );
    }

    // The replicas catch up.
    fake.advance_clock(60);
    let beats: Vec<(String, Run)> = racers
        .iter()
        .map(|r| (r.instance.clone(), spawn(r, &["coord", "heartbeat", "77"])))
        .collect::<Vec<_>>()
        .into_iter()
        .map(|(name, child)| (name, finish(&["coord", "heartbeat", "77"], child)))
        .collect();
    let holders: Vec<&String> = beats
        .iter()
        .filter(|(_, r)| r.code == 0)
        .map(|(n, _)| n)
        .collect();
    // At most one holder; here exactly one, since every claim went through.
    assert_eq!(holders.len(), 1, "holders {holders:?}\n{beats:#?}");
    for ((name, claim), (_, beat)) in claims.iter().zip(&beats) {
        if beat.code != 0 {
            assert_eq!(
                beat.code, 7,
                "{name} (claim exited {}) lost without exit 7: {}",
                claim.code, beat.stderr
            );
        }
    }
    // Every reader agrees with the one heartbeat that renewed.
    let read = env
        .clone("referee")
        .maverick(&["coord", "read", "77", "--json"]);
    read.expect(4);
    assert_eq!(read.json()["holder"]["instance_id"], holders[0].as_str());
    // The holder is the author of the earliest claim comment.
    let first_claim = fake
        .comments(77)
        .into_iter()
        .find_map(|c| {
            parse_markers(&c.body)
                .into_iter()
                .flatten()
                .find(|m| m.kind == MarkerKind::Claim)
        })
        .unwrap();
    assert_eq!(
        first_claim
            .payload
            .get("instance_id")
            .and_then(|v| v.as_str()),
        Some(holders[0].as_str())
    );
}

fn forged_claim(instance: &str) -> String {
    format!(
        "I'll take it.\n\n<!-- maverick claim -->\n\n```maverick-claim\n{}\n```\n\n\
         <!-- maverick lease -->\n\n```maverick-lease\n{}\n```\n",
        serde_json::to_string_pretty(&json!({
            "instance_id": instance, "host": "elsewhere", "scope": ["50"],
            "claimed_at": "2026-11-30T00:00:00Z", "generation": 1,
            "marker_id": "f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0"
        }))
        .unwrap(),
        serde_json::to_string_pretty(&json!({
            "instance_id": instance, "heartbeat_at": "2026-11-30T00:00:00Z",
            "expires_at": "2099-01-01T00:00:00Z", "generation": 1,
            "marker_id": "e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0e0"
        }))
        .unwrap()
    )
}

#[test]
fn a_strangers_forged_claim_neither_blocks_nor_steals() {
    let env = github_env();
    let fake = env.github();
    // The label is there too (left behind, say): only a trusted claim holds.
    fake.create_issue(50, "free for all", &["claude-in-progress"]);
    fake.add_user("mallory", "NONE");
    fake.add_comment_as(50, "mallory", &forged_claim("mallory-box"));
    let alice = env.clone("alice");
    let read = alice.maverick(&["coord", "read", "50", "--json"]);
    read.expect(0);
    assert_eq!(read.json()["decision"], "free");
    assert_eq!(read.json()["holder"], Value::Null);

    alice.maverick(&["coord", "claim", "50"]).expect(0);
    let bob = env.clone("bob");
    let held = bob.maverick(&["coord", "read", "50", "--json"]);
    held.expect(4);
    assert_eq!(held.json()["holder"]["instance_id"], "alice");

    // A contributor's forgery does not count either…
    fake.add_user("casual", "CONTRIBUTOR");
    fake.create_issue(51, "another", &["claude-in-progress"]);
    fake.add_comment_as(51, "casual", &forged_claim("casual-box"));
    bob.maverick(&["coord", "read", "51"]).expect(0);
    // …unless maverick.trustedAuthors names the login.
    let trusting = bob.maverick(&[
        "coord",
        "read",
        "51",
        "--trusted-authors",
        "Casual",
        "--json",
    ]);
    trusting.expect(4);
    assert_eq!(trusting.json()["holder"]["instance_id"], "casual-box");
}

#[test]
fn a_strangers_forged_lease_renewal_does_not_keep_a_stale_lease_alive() {
    let env = github_env();
    let fake = env.github();
    fake.create_issue(52, "abandoned", &[]);
    fake.add_user("mallory", "NONE");
    let alice = env.clone("alice");
    alice
        .maverick(&["coord", "claim", "52", "--lease-ttl", "60s"])
        .expect(0);
    fake.advance_clock(120);
    let lease = serde_json::to_string_pretty(&json!({
        "instance_id": "alice", "heartbeat_at": fake.now(),
        "expires_at": "2099-01-01T00:00:00Z", "generation": 1,
        "marker_id": "d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0d0"
    }))
    .unwrap();
    fake.add_comment_as(
        52,
        "mallory",
        &format!("<!-- maverick lease -->\n\n```maverick-lease\n{lease}\n```\n"),
    );
    let bob = env.clone("bob");
    let read = bob.maverick(&["coord", "read", "52", "--json"]);
    read.expect(5);
    assert_eq!(read.json()["decision"], "stale");
    bob.maverick(&["coord", "takeover", "52"]).expect(0);
}

/// An app or bot token whose comments GitHub marks `NONE`: its own markers
/// count because it is the authenticated user, learned with one `GET /user`.
#[test]
fn the_authenticated_users_own_comments_count_whatever_its_role() {
    let env = github_env();
    let fake = env.github();
    fake.add_user("acme-bot", "NONE");
    fake.set_authenticated_user("acme-bot");
    fake.add_user("acme-bot", "NONE");
    fake.create_issue(53, "bot work", &[]);
    let alice = env.clone("alice");
    alice.maverick(&["coord", "claim", "53"]).expect(0);
    let (read, requests) = counted(&env, &alice, &["coord", "read", "53", "--json"]);
    read.expect(0);
    assert_eq!(read.json()["decision"], "ours");
    assert_eq!(
        requests.iter().filter(|r| r.path == "/user").count(),
        1,
        "{}",
        summary(&requests)
    );
    // A heartbeat renews without asking who it is: the lease's author is the claim's.
    let (beat, requests) = counted(&env, &alice, &["coord", "heartbeat", "53"]);
    beat.expect(0);
    assert!(requests.len() <= 4, "{}", summary(&requests));
    assert_eq!(
        env.comment_bodies(53).len(),
        2,
        "the lease was updated in place"
    );
}

#[test]
fn a_thousand_comments_are_read_in_eleven_requests() {
    let env = github_env();
    let fake = env.github();
    fake.create_issue(60, "a long epic", &["claude-in-progress"]);
    fake.add_user("zed", "COLLABORATOR");
    for i in 0..997 {
        fake.add_comment_as(60, "zed", &format!("progress note {i}"));
    }
    // The claim is on the last page: a reader that stops early sees none.
    let claim = forged_claim("zed-laptop").replace("\"50\"", "\"60\"");
    fake.add_comment_as(60, "zed", &claim);
    fake.add_comment_as(60, "zed", "almost done");
    fake.add_comment_as(60, "zed", "done soon");
    assert_eq!(fake.comments(60).len(), 1000);
    let alice = env.clone("alice");
    let (read, requests) = counted(&env, &alice, &["coord", "read", "60", "--json"]);
    read.expect(4);
    let json = read.json();
    assert_eq!(json["holder"]["instance_id"], "zed-laptop");
    assert_eq!(requests.len(), 11, "{}", summary(&requests));
    assert_eq!(
        requests[1].path,
        "/repos/acme/widgets/issues/60/comments?per_page=100",
        "{}",
        summary(&requests)
    );
    // Pages after the first follow GitHub's link header to /repositories/{id}/….
    assert!(
        requests[2..].iter().all(|r| r
            .path
            .starts_with(&format!("/repositories/{}/", fake.repo_id()))),
        "{}",
        summary(&requests)
    );
}

#[test]
fn read_claim_heartbeat_and_release_stay_within_their_request_budgets() {
    let env = github_env();
    env.github().create_issue(70, "budgeted", &[]);
    let alice = env.clone("alice");

    let (read, requests) = counted(&env, &alice, &["coord", "read", "70"]);
    eprintln!("read:\n{}", summary(&requests));
    read.expect(0);
    // The issue, its comments, and (the issue being free) the open pull
    // requests, one of which may close it.
    assert!(requests.len() <= 3, "read:\n{}", summary(&requests));

    let (claim, requests) = counted(&env, &alice, &["coord", "claim", "70"]);
    eprintln!("claim:\n{}", summary(&requests));
    claim.expect(0);
    assert!(writes(&requests) <= 5, "claim:\n{}", summary(&requests));
    // Reads: the open pull requests (304: the read listed them), one
    // before the writes, one after the settle; no GET /user.
    assert!(
        requests.len() - writes(&requests) <= 5,
        "claim:\n{}",
        summary(&requests)
    );

    let (beat, requests) = counted(&env, &alice, &["coord", "heartbeat", "70"]);
    eprintln!("heartbeat:\n{}", summary(&requests));
    beat.expect(0);
    assert!(requests.len() <= 3, "heartbeat:\n{}", summary(&requests));

    let (release, requests) = counted(&env, &alice, &["coord", "release", "70"]);
    eprintln!("release:\n{}", summary(&requests));
    release.expect(0);
    assert!(requests.len() <= 6, "release:\n{}", summary(&requests));
    assert!(env.labels(70).is_empty());
}

#[test]
fn a_burst_of_502s_is_retried_and_the_claim_succeeds() {
    let env = github_env();
    let fake = env.github();
    fake.create_issue(80, "flaky", &[]);
    let alice = env.clone("alice");
    fake.reset_count();
    fake.fail_next(3, 502);
    alice.maverick(&["coord", "claim", "80"]).expect(0);
    let requests = fake.requests();
    assert_eq!(
        requests.iter().filter(|r| r.status == 502).count(),
        3,
        "{}",
        summary(&requests)
    );
    assert_eq!(env.labels(80), ["claude-in-progress"]);
    assert_eq!(env.comment_bodies(80).len(), 2);
}

#[test]
fn a_secondary_rate_limit_is_waited_out_as_retry_after_says() {
    let env = github_env();
    let fake = env.github();
    fake.create_issue(81, "busy", &[]);
    let alice = env.clone("alice");
    fake.secondary_rate_limit_next(1, 2);
    fake.reset_count();
    let run = alice.maverick(&["coord", "read", "81", "-v"]);
    run.expect(0);
    // The request after the limited one came 2 s later on the clock that
    // maverick and the fake share (maverick moved it instead of sleeping).
    let waited = waited_after_the_limit(fake);
    assert!(waited >= 2000, "waited only {waited} ms");
    insta::assert_snapshot!(
        "a_secondary_rate_limit_verbose",
        screen_keeping(&env, &run, &["2s"])
    );
}

/// Milliseconds between the first rate-limited answer and the request after
/// it, on the fake's clock.
fn waited_after_the_limit(fake: &crate::support::FakeGithub) -> i64 {
    let requests = fake.requests();
    let limited = requests
        .iter()
        .position(|r| r.status == 403)
        .expect("a limited request");
    requests[limited + 1].at_ms - requests[limited].at_ms
}

/// `10:42:03` (or `2026-11-30T10:42:03Z`) as seconds since midnight.
fn seconds_of_day(clock: &str) -> i64 {
    let time = clock.split_once('T').map_or(clock, |(_, t)| t);
    let time = time.trim_end_matches('Z');
    time.split(':')
        .map(|part| part.parse::<i64>().expect("HH:MM:SS"))
        .fold(0, |acc, part| acc * 60 + part)
}

#[test]
fn an_exhausted_rate_limit_waits_for_its_reset_or_says_when_to_come_back() {
    let env = github_env();
    let fake = env.github();
    fake.create_issue(86, "popular", &[]);
    let alice = env.clone("alice");
    // The reset is 5 s ahead on GitHub's clock: whichever second the
    // answer's Date falls in, the wait is well over the 2 s that are
    // announced, and the line can be checked against the reset.
    let before = seconds_of_day(&fake.now());
    fake.primary_rate_limit_next(1, 5);
    fake.reset_count();
    let run = alice.maverick(&["coord", "read", "86"]);
    run.expect(0);
    // A wait longer than 2 s says so without -v: one line, with the time it ends.
    let waits: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("waiting "))
        .collect();
    assert_eq!(waits.len(), 1, "{}", run.stderr);
    let (secs, until) = waits[0]
        .strip_prefix("waiting ")
        .and_then(|rest| rest.split_once(" s for GitHub's rate limit, until "))
        .unwrap_or_else(|| {
            panic!(
                "waiting N s for GitHub's rate limit, until HH:MM:SSZ: {}",
                run.stderr
            )
        });
    let secs: u64 = secs.parse().expect("whole seconds");
    assert!((5..=7).contains(&secs), "{}", run.stderr);
    let until = seconds_of_day(until.strip_suffix('Z').expect("UTC"));
    // Until the reset (plus its own second), give or take the second ticks.
    let ahead = (until - before).rem_euclid(86_400);
    assert!(
        (5..=9).contains(&ahead),
        "{} (GitHub's clock was at {before} s)",
        run.stderr
    );
    // It did wait that long before reading again (on the shared clock).
    let waited = waited_after_the_limit(fake);
    assert!(
        waited >= secs as i64 * 1000,
        "waited {waited} ms; {}",
        run.stderr
    );

    // An hour away is too long to wait: an error that says until when.
    fake.primary_rate_limit_next(1, 3600);
    let started = Instant::now();
    let run = alice.maverick(&["coord", "read", "86"]);
    assert!(started.elapsed() < Duration::from_secs(10));
    insta::assert_snapshot!("an_hour_long_rate_limit", screen(&env, &run));
}

#[test]
fn a_request_that_times_out_is_retried() {
    let env = github_env();
    let fake = env.github();
    fake.create_issue(82, "slow", &[]);
    let alice = env.clone("alice");
    alice.git(&["config", "maverick.httpTimeout", "1m"]);
    fake.slow_next(1, Duration::from_secs(120));
    let read = alice
        .command(&["coord", "read", "82", "-v"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Once the slow answer is on its way, a minute passes: maverick gives
    // up on it and asks again.
    let end = Instant::now() + Duration::from_secs(30);
    while fake.slowed_requests() == 0 {
        assert!(Instant::now() < end, "no request reached the fake");
        std::thread::sleep(Duration::from_millis(10));
    }
    env.advance_clock(60);
    let run =
        crate::support::Run::from_output(&["coord", "read"], read.wait_with_output().unwrap());
    insta::assert_snapshot!(
        "a_request_that_times_out_verbose",
        screen_keeping(&env, &run, &["60s"])
    );
}

#[test]
fn a_permanent_fault_is_a_clear_error_and_leaves_no_label_without_its_claim() {
    let env = github_env();
    let fake = env.github();
    fake.create_issue(83, "down", &[]);
    fake.create_issue(84, "half down", &[]);
    let alice = env.clone("alice");

    fake.fail_always(502);
    let down = alice.maverick(&["coord", "claim", "83"]);
    fake.clear_faults();
    assert!(env.labels(83).is_empty());

    // Labels go on, comments do not: the label comes off again.
    fake.fail_always_matching("POST", "/comments", 502);
    let half = alice.maverick(&["coord", "claim", "84", "--json"]);
    half.json();
    insta::assert_snapshot!(
        "a_permanent_fault",
        screens(&[
            (
                "git maverick coord claim 83 (every answer 502)",
                steady_screen(&env, &down)
            ),
            (
                "git maverick coord claim 84 --json (every comment 502)",
                steady_screen(&env, &half)
            ),
        ])
    );
    fake.clear_faults();
    assert!(env.labels(84).is_empty(), "{:?}", env.labels(84));
    assert!(env.comment_bodies(84).is_empty());
    alice.maverick(&["coord", "read", "84"]).expect(0);
    alice.maverick(&["coord", "claim", "84"]).expect(0);

    // A scope whose second issue fails: the first one's whole claim, which
    // nobody would heartbeat, is taken back too.
    fake.create_issue(88, "first of two", &[]);
    fake.create_issue(89, "second of two", &[]);
    fake.fail_always_matching("POST", "/issues/89/comments", 502);
    alice
        .maverick(&["coord", "claim", "88", "--scope", "89"])
        .expect(1);
    fake.clear_faults();
    assert!(env.labels(88).is_empty(), "{:?}", env.labels(88));
    assert!(env.labels(89).is_empty(), "{:?}", env.labels(89));
    let read = env
        .clone("bob")
        .maverick(&["coord", "read", "88", "--json"]);
    read.expect(0);
    assert_eq!(read.json()["decision"], "free");
}

/// GitHub commits a comment and the answer is lost: the retry must not
/// leave two claims, and if a copy slips through, its marker_id gives it away.
#[test]
fn a_comment_committed_before_its_answer_was_lost_is_not_posted_twice() {
    let env = github_env();
    let fake = env.github();
    fake.create_issue(85, "lossy", &[]);
    let alice = env.clone("alice");
    fake.fail_next_matching_after_commit("POST", "/issues/85/comments", 1, 502);
    alice.maverick(&["coord", "claim", "85"]).expect(0);
    let bodies = env.comment_bodies(85);
    assert_eq!(bodies.len(), 2, "{bodies:#?}");
    let read = env
        .clone("bob")
        .maverick(&["coord", "read", "85", "--json"]);
    read.expect(4);
    assert_eq!(read.json()["holder"]["instance_id"], "alice");

    // With the list lagging, the look-up misses it and a copy is posted:
    // one claim all the same, and the heartbeat carries on.
    fake.create_issue(87, "lossy and lagging", &[]);
    fake.set_list_lag(Duration::from_secs(30));
    fake.fail_next_matching_after_commit("POST", "/issues/87/comments", 1, 502);
    alice.maverick(&["coord", "claim", "87"]).expect(0);
    fake.set_list_lag(Duration::ZERO);
    let claims = env
        .comment_bodies(87)
        .iter()
        .filter(|b| {
            parse_markers(b)
                .into_iter()
                .flatten()
                .any(|m| m.kind == MarkerKind::Claim)
        })
        .count();
    assert_eq!(claims, 2, "the duplicate this test is about");
    alice.maverick(&["coord", "heartbeat", "87"]).expect(0);
    let read = env
        .clone("carol")
        .maverick(&["coord", "read", "87", "--json"]);
    read.expect(4);
    assert_eq!(read.json()["holder"]["instance_id"], "alice");
    assert_eq!(read.json()["generation"], 1);
}

#[test]
fn without_a_token_the_error_names_both_ways_out() {
    let env = github_env();
    let alice = env.clone("alice");
    let out = alice
        .maverick_command(&["coord", "read", "5"])
        .env_remove("GH_TOKEN")
        .env("MAVERICK_INSTANCE", "alice")
        .output()
        .unwrap();
    let run = Run::from_output(&["coord", "read", "5"], out);
    insta::assert_snapshot!("without_a_token", screen(&env, &run));
    assert_eq!(env.github().request_count(), 0);

    // GITHUB_TOKEN is the second place to look.
    let out = alice
        .maverick_command(&["coord", "read", "5"])
        .env_remove("GH_TOKEN")
        .env("GITHUB_TOKEN", env.github().token())
        .env("MAVERICK_INSTANCE", "alice")
        .output()
        .unwrap();
    Run::from_output(&["coord", "read", "5"], out).expect(0);
}

#[test]
fn the_gh_cli_is_asked_for_a_token_last() {
    let env = github_env();
    let alice = env.clone("alice");
    let bin = env.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let gh = bin.join("gh");
    let args_file = env.path().join("gh-args");
    std::fs::write(
        &gh,
        format!(
            "#!/bin/sh\necho \"$@\" > '{}'\necho '{}'\n",
            args_file.display(),
            env.github().token()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&gh, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = alice
        .maverick_command(&["coord", "read", "5"])
        .env_remove("GH_TOKEN")
        .env("PATH", path)
        .env("MAVERICK_INSTANCE", "alice")
        .output()
        .unwrap();
    Run::from_output(&["coord", "read", "5"], out).expect(0);
    // gh keeps tokens by the GitHub host the repository is on (here
    // github.com), not by the API URL a test or proxy puts in front of it.
    assert_eq!(
        std::fs::read_to_string(&args_file).unwrap().trim(),
        "auth token --hostname github.com"
    );
}

fn assert_no_token(run: &Run, token: &str) {
    assert!(
        !run.stdout.contains(token) && !run.stderr.contains(token),
        "the token leaked:\n{}",
        run.screen()
    );
    // Nor a recognisable piece of it.
    assert!(!run.stderr.contains(&token[4..20]), "{}", run.stderr);
}

#[test]
fn the_token_never_shows_even_at_full_verbosity() {
    let env = github_env();
    let fake = env.github();
    fake.echo_authorization_in_errors(true);
    let alice = env.clone("alice");
    let token = fake.token().to_owned();

    // A working run, at full verbosity.
    let ok = alice.maverick(&["coord", "claim", "90", "-vvv"]);
    insta::assert_snapshot!("a_claim_at_full_verbosity", steady_screen(&env, &ok));
    assert_no_token(&ok, &token);

    // Failing requests whose error bodies quote the Authorization header.
    fake.fail_always(502);
    let failed = alice.maverick(&["coord", "heartbeat", "90", "-vvv", "--json"]);
    insta::assert_snapshot!(
        "a_failing_heartbeat_at_full_verbosity",
        steady_screen(&env, &failed)
    );
    assert_no_token(&failed, &token);
    fake.clear_faults();

    // A token GitHub refuses.
    let wrong = "ghp_WRONGtoken9876543210zyxwvuSECRET";
    let out = alice
        .maverick_command(&["coord", "read", "90", "-vvv"])
        .env("GH_TOKEN", wrong)
        .env("MAVERICK_INSTANCE", "alice")
        .output()
        .unwrap();
    let refused = Run::from_output(&["coord", "read"], out);
    insta::assert_snapshot!(
        "a_refused_token_at_full_verbosity",
        steady_screen(&env, &refused)
    );
    assert_no_token(&refused, wrong);
}

#[test]
fn an_unreachable_api_is_an_error_not_a_decision() {
    let env = github_env();
    let alice = env.clone("alice");
    // A port nothing listens on.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    let out = alice
        .maverick_command(&["coord", "read", "5", "--json"])
        .env("GITHUB_API_URL", &url)
        .env("MAVERICK_INSTANCE", "alice")
        .output()
        .unwrap();
    let run = Run::from_output(&["coord", "read"], out);
    run.json();
    insta::assert_snapshot!("an_unreachable_api_json", steady_screen(&env, &run));
}

/// Maverick's Python plugin and this surface read each other's markers.
#[test]
fn markers_written_here_have_maverick_plugins_shape_and_its_comments_are_read() {
    let env = github_env();
    let fake = env.github();
    let alice = env.clone("alice");
    alice
        .maverick(&[
            "coord",
            "claim",
            "140",
            "--scope",
            "142",
            "--branch",
            "story/140-parser",
        ])
        .expect(0);
    let fixture = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/comments/claim-and-lease.md"
    ))
    .unwrap();
    let theirs: Vec<_> = parse_markers(&fixture).into_iter().flatten().collect();
    let ours: Vec<_> = fake
        .comments(140)
        .iter()
        .flat_map(|c| parse_markers(&c.body).into_iter().flatten())
        .collect();
    for kind in [MarkerKind::Claim, MarkerKind::Lease] {
        let their = theirs.iter().find(|m| m.kind == kind).unwrap();
        let our = ours.iter().find(|m| m.kind == kind).unwrap();
        for key in their.payload.keys() {
            assert!(
                our.payload.contains_key(key),
                "{kind:?} lacks {key}: {our:?}"
            );
            assert_eq!(
                std::mem::discriminant(&their.payload[key]),
                std::mem::discriminant(&our.payload[key]),
                "{kind:?}.{key} has another JSON type"
            );
        }
    }
    // The shape: preamble, blank line, tagged fence, two-space indent, sorted keys.
    let claim_body = &fake.comments(140)[0].body;
    insta::assert_snapshot!("a_claim_comment_body", normalise(&env, claim_body));

    // The plugin's own comment, by a member, holds the issue.
    fake.create_issue(150, "story", &["claude-in-progress"]);
    fake.add_user("alice-person", "MEMBER");
    fake.add_comment_as(150, "alice-person", &fixture);
    let read = env
        .clone("bob")
        .maverick(&["coord", "read", "150", "--json"]);
    read.expect(4);
    let json = read.json();
    assert_eq!(json["holder"]["instance_id"], "alice-mbp-3f9a12c0");
    assert_eq!(json["holder"]["scope"], json!([140, 142]));
    assert_eq!(json["holder"]["branch"], "story/140-parser");
}

/// Octocrab's models and GitHub's own payloads agree on what maverick reads.
#[test]
fn octocrab_models_parse_githubs_examples_and_recordings() {
    use octocrab::models::issues::{Comment, Issue};
    use octocrab::models::Label;
    let load = |path: &str| -> Value {
        let full = format!("{}/fixtures/github-api/{path}", env!("CARGO_MANIFEST_DIR"));
        serde_json::from_str(&std::fs::read_to_string(&full).unwrap()).unwrap()
    };
    serde_json::from_value::<Issue>(load("examples/issue.json")).unwrap();
    serde_json::from_value::<Vec<Issue>>(load("examples/issue-items.json")).unwrap();
    serde_json::from_value::<Comment>(load("examples/issue-comment.json")).unwrap();
    serde_json::from_value::<Vec<Comment>>(load("examples/issue-comment-items.json")).unwrap();
    serde_json::from_value::<Label>(load("examples/label.json")).unwrap();
    serde_json::from_value::<Vec<Label>>(load("examples/label-items.json")).unwrap();
    let recorded = |name: &str, method: &str, status: u64| -> Vec<Value> {
        load(&format!("recorded/{name}.json"))
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["method"] == method && e["status"] == status)
            .map(|e| e["response"].clone())
            .collect()
    };
    for labels in recorded("add-labels-to-issue", "post", 200) {
        serde_json::from_value::<Vec<Label>>(labels).unwrap();
    }
    for issue in recorded("add-labels-to-issue", "post", 201) {
        serde_json::from_value::<Issue>(issue).unwrap();
    }
    let pages = recorded("paginate-issues", "get", 200);
    assert_eq!(pages.len(), 5);
    for page in pages {
        serde_json::from_value::<Vec<Issue>>(page).unwrap();
    }
    // And the fake's answers, which the surface reads, parse the same way.
    let env = github_env();
    let fake = env.github();
    fake.create_issue(3, "parsed", &["a label"]);
    fake.add_comment_as(3, "maverick-bot", "hello");
    let surface = library_surface(&env, &[]);
    let issue = surface
        .get_json("/repos/acme/widgets/issues/3", "reading")
        .unwrap();
    serde_json::from_value::<Issue>(issue).unwrap();
    let comments = surface
        .get_list("/repos/acme/widgets/issues/3/comments", "reading")
        .unwrap();
    serde_json::from_value::<Vec<Comment>>(Value::Array(comments)).unwrap();
}

fn library_surface(
    env: &TestEnv,
    trusted: &[&str],
) -> crate::support::mav::surface::github::GithubSurface {
    library_surface_caching_in(env, trusted, None)
}

/// A surface as one process of a clone whose shared cache is `cache_dir`.
fn library_surface_caching_in(
    env: &TestEnv,
    trusted: &[&str],
    cache_dir: Option<std::path::PathBuf>,
) -> crate::support::mav::surface::github::GithubSurface {
    use crate::support::mav::surface::github::{GithubConfig, GithubSurface, Token, TokenSource};
    GithubSurface::new(GithubConfig {
        api_url: env.github().url(),
        repo: crate::support::GITHUB_REPO.to_owned(),
        token: Token::new(env.github().token(), TokenSource::Given).unwrap(),
        trusted_authors: trusted.iter().map(|s| s.to_string()).collect(),
        timeout: Duration::from_secs(5),
        clock: env.clock().clone(),
        cache_dir,
        pace_dir: None,
    })
    .unwrap()
}

#[test]
fn a_repeated_read_is_conditional_and_costs_no_rate_limit() {
    use crate::support::mav::surface::Surface as _;
    let env = github_env();
    let fake = env.github();
    fake.create_issue(4, "watched", &["x"]);
    fake.add_comment_as(4, "maverick-bot", "hello");
    let surface = library_surface(&env, &[]);
    let first = surface.issue(4).unwrap();
    fake.reset_count();
    let again = surface.issue(4).unwrap();
    assert_eq!(first, again);
    let statuses: Vec<u16> = fake.requests().iter().map(|r| r.status).collect();
    assert_eq!(statuses, [304, 304]);
}

#[test]
fn labels_assignees_and_lists_through_the_library() {
    use crate::support::mav::surface::{Applied, Op, Surface as _};
    let env = github_env();
    let fake = env.github();
    fake.create_issue(10, "story", &["agent-ready"]);
    fake.create_pull(
        11,
        "draft",
        &["agent-pr"],
        "3dca65fa3e8d4b3da3f3d056c59aee1c50f41390",
    );
    fake.create_issue(12, "closed one", &["agent-ready"]);
    fake.close(12);
    let surface = library_surface(&env, &[]);

    let odd = "blocked-by:#9 / ü";
    let applied = surface
        .write_unguarded(
            10,
            vec![
                Op::AddLabels(vec![odd.to_owned()]),
                Op::RemoveLabel("agent-ready".into()),
                Op::RemoveLabel("never-there".into()),
            ],
        )
        .unwrap();
    assert_eq!(
        applied[0],
        Applied::Labels(vec!["agent-ready".into(), odd.into()])
    );
    assert_eq!(applied[2], Applied::Labels(vec![odd.into()]));
    assert_eq!(fake.labels(10), [odd]);
    surface
        .write_unguarded(10, vec![Op::RemoveLabel(odd.to_owned())])
        .unwrap();
    assert!(fake.labels(10).is_empty());

    surface
        .write_unguarded(10, vec![Op::Assign(vec!["maverick-bot".into()])])
        .unwrap();
    assert_eq!(fake.assignees(10), ["maverick-bot"]);
    let refused = surface
        .write_unguarded(10, vec![Op::Assign(vec!["nobody-here".into()])])
        .unwrap_err();
    assert_eq!(
        refused.to_string(),
        "GitHub did not assign nobody-here on #10 (not a collaborator, or not a user)"
    );
    surface
        .write_unguarded(10, vec![Op::Unassign(vec!["maverick-bot".into()])])
        .unwrap();
    assert!(fake.assignees(10).is_empty());

    let open: Vec<u64> = surface
        .list(&[], false)
        .unwrap()
        .iter()
        .map(|i| i.number)
        .collect();
    assert_eq!(open, [11, 10]);
    let prs = surface.list(&["agent-pr"], false).unwrap();
    assert_eq!(prs.len(), 1);
    assert!(prs[0].is_pull);
    let ready: Vec<u64> = surface
        .list(&["agent-ready"], true)
        .unwrap()
        .iter()
        .map(|i| i.number)
        .collect();
    assert_eq!(ready, [12]);
}

#[test]
fn pull_requests_ci_and_summaries_through_the_library() {
    use crate::support::mav::surface::Surface as _;
    let env = github_env();
    let fake = env.github();
    let sha = "3dca65fa3e8d4b3da3f3d056c59aee1c50f41390";
    let other = "0123456789abcdef0123456789abcdef01234567";
    fake.create_issue(20, "story", &["claude-in-progress"]);
    fake.create_pull(21, "Closes #20", &["agent-pr"], sha);
    fake.set_draft(21, true);
    fake.create_pull(22, "another", &[], other);
    fake.close(22);
    fake.set_check_runs(
        sha,
        &[
            ("ci", "completed", Some("success")),
            ("lint", "in_progress", None),
        ],
    );
    fake.set_commit_status(sha, "success");
    let surface = library_surface(&env, &[]);

    let pulls = surface.open_pulls().unwrap();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    assert_eq!(pulls[0].number, 21);
    assert_eq!(pulls[0].head_sha, sha);
    assert_eq!(pulls[0].head_ref, "pr-21");
    assert_eq!(pulls[0].base_ref, "main");
    assert!(pulls[0].draft);
    assert_eq!(pulls[0].labels, ["agent-pr"]);

    let ci = surface
        .ci_status(&[sha.to_owned(), other.to_owned()])
        .unwrap();
    let first = ci[0].as_ref().unwrap();
    assert_eq!(first.combined.as_deref(), Some("success"));
    assert_eq!(first.check_runs.len(), 2);
    assert_eq!(first.state, "pending", "a check run is still running");
    let second = ci[1].as_ref().unwrap();
    assert_eq!(
        (second.combined.as_deref(), second.state.as_str()),
        (None, "none")
    );

    fake.reset_count();
    let summaries = surface.summaries(&[20, 21]).unwrap();
    assert_eq!(summaries[0].labels, ["claude-in-progress"]);
    assert!(summaries[1].is_pull);
    // The two issues, and never their comments.
    assert_eq!(
        summary(&fake.requests()),
        "GET /repos/acme/widgets/issues/20 -> 200\nGET /repos/acme/widgets/issues/21 -> 200"
    );
}

/// The clone's conditional-request cache, where its processes share it.
fn cache_files(repo: &Repo<'_>) -> Vec<std::path::PathBuf> {
    let dir = repo.dir.join(".git/maverick/github-cache");
    match std::fs::read_dir(&dir) {
        Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    }
}

fn counted_summary(requests: &[RecordedRequest]) -> String {
    requests
        .iter()
        .map(|r| {
            let free = if r.counted { "" } else { " (free)" };
            format!("{} {} -> {}{free}", r.method, r.path, r.status)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// GitHub does not count a 304. The ETags a command learnt are in the
/// clone's common git dir, so a new process's re-read of an unchanged issue
/// is answered 304 and costs nothing; a change costs the one read it needs.
#[test]
fn a_second_read_in_a_new_process_is_answered_304_and_costs_nothing() {
    let env = github_env();
    let fake = env.github();
    fake.create_issue(71, "read twice", &["agent-ready"]);
    fake.add_comment_as(71, "maverick-bot", "a note");
    let alice = env.clone("alice");
    let (first, requests) = counted(&env, &alice, &["coord", "read", "71"]);
    first.expect(0);
    assert!(
        requests.iter().all(|r| r.counted),
        "{}",
        counted_summary(&requests)
    );

    let (again, requests) = counted(&env, &alice, &["coord", "read", "71"]);
    again.expect(0);
    assert_eq!(again.stdout, first.stdout);
    let paid = requests.iter().filter(|r| r.counted).count();
    assert!(paid <= 1, "{}", counted_summary(&requests));
    assert!(
        requests.iter().filter(|r| r.status == 304).count() >= 2,
        "the issue and its comments are revalidated: {}",
        counted_summary(&requests)
    );
    assert!(
        requests.iter().filter(|r| r.status == 304).all(|r| r
            .if_none_match
            .as_deref()
            .is_some_and(|t| t.starts_with("W/\""))),
        "with the weak ETag GitHub gave: {}",
        counted_summary(&requests)
    );

    // Another instance's claim lands: the next read pays for what changed.
    let bob = env.clone("bob");
    bob.maverick(&["coord", "claim", "71"]).expect(0);
    let (held, requests) = counted(&env, &alice, &["--json", "coord", "read", "71"]);
    held.expect(4);
    assert_eq!(held.json()["holder"]["instance_id"], "bob");
    let paid = requests.iter().filter(|r| r.counted).count();
    assert!(paid <= 2, "{}", counted_summary(&requests));
}

/// The cache never holds the token or a request header, survives many
/// writers at once, and a damaged cache is ignored (the read pays, and
/// mends it), never an error.
#[test]
fn the_shared_cache_holds_no_token_and_survives_writers_and_damage() {
    let env = github_env();
    let fake = env.github();
    fake.create_issues_on_demand(false);
    for n in 1..=6 {
        fake.create_issue(n, "cached", &[]);
        fake.add_comment_as(n, "maverick-bot", &format!("note {n}"));
    }
    fake.echo_authorization_in_errors(true);
    let alice = env.clone("alice");
    // Six processes fill the cold cache at once, every one of them writing.
    let readers: Vec<Child> = (1..=6)
        .map(|n| spawn(&alice, &["coord", "read", &n.to_string()]))
        .collect();
    for (n, child) in readers.into_iter().enumerate() {
        let run = finish(&["coord", "read"], child);
        assert_eq!(run.code, 0, "read {}: {}", n + 1, run.stderr);
    }
    alice.maverick(&["coord", "claim", "1"]).expect(0);
    alice.maverick(&["coord", "read", "999"]).expect(1);
    let files = cache_files(&alice);
    assert!(files.len() >= 12, "{files:?}");
    for file in &files {
        let bytes = std::fs::read(file).unwrap();
        let text = String::from_utf8_lossy(&bytes).to_ascii_lowercase();
        assert!(
            !text.contains(&fake.token().to_ascii_lowercase()),
            "{file:?}"
        );
        assert!(
            !text.contains("authorization") && !text.contains("bearer"),
            "{file:?}"
        );
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{file:?} is for its owner only");
    }
    let (_, requests) = counted(&env, &alice, &["coord", "read", "3"]);
    assert_eq!(
        requests.iter().filter(|r| r.counted).count(),
        0,
        "{}",
        counted_summary(&requests)
    );

    // Torn, truncated, garbage: every read still answers, paying in full.
    for (i, file) in files.iter().enumerate() {
        let bytes = std::fs::read(file).unwrap();
        let damaged = match i % 3 {
            0 => bytes[..bytes.len() / 2].to_vec(),
            1 => b"not a cache entry at all".to_vec(),
            _ => Vec::new(),
        };
        std::fs::write(file, damaged).unwrap();
    }
    let (read, requests) = counted(&env, &alice, &["coord", "read", "3"]);
    read.expect(0);
    assert!(read.stderr.is_empty(), "{}", read.stderr);
    assert!(
        requests
            .iter()
            .all(|r| r.status == 200 && r.if_none_match.is_none()),
        "{}",
        counted_summary(&requests)
    );
    let (_, requests) = counted(&env, &alice, &["coord", "read", "3"]);
    assert_eq!(
        requests.iter().filter(|r| r.counted).count(),
        0,
        "the read mended the cache: {}",
        counted_summary(&requests)
    );
}

/// A heartbeat costs at most two counted requests: the comments its last
/// beat moved, re-read, and the renewal. The issue's labels are answered
/// 304 whether or not GitHub moves an issue's `updated_at` when a comment
/// is edited (it does not document it), and a label taken off is still
/// seen at the next beat.
#[test]
fn a_heartbeat_costs_at_most_two_counted_requests() {
    for edits_touch_issues in [false, true] {
        let env = github_env();
        let fake = env.github();
        fake.set_comment_edits_touch_issues(edits_touch_issues);
        fake.create_issue(72, "long work", &[]);
        let alice = env.clone("alice");
        alice.maverick(&["coord", "claim", "72"]).expect(0);
        for beat in 1..=3 {
            env.advance_clock(60);
            let (run, requests) = counted(&env, &alice, &["coord", "heartbeat", "72"]);
            run.expect(0);
            let paid = requests.iter().filter(|r| r.counted).count();
            assert!(
                paid <= 2,
                "beat {beat} (edits touch issues: {edits_touch_issues}):\n{}",
                counted_summary(&requests)
            );
        }
        let bob = env.clone("bob");
        bob.maverick(&["coord", "label", "remove", "72", "claude-in-progress"])
            .expect(0);
        env.advance_clock(60);
        let (run, _) = counted(&env, &alice, &["coord", "heartbeat", "72"]);
        run.expect(7);
    }
}

/// `with_comments` reads an issue's comments once, then keeps the copy up
/// to date from one list of the repository's recent comments: an edit and
/// a new comment arrive through it, a deleted comment (which no list shows)
/// is caught by the count, and a copy too old is read again.
#[test]
fn comments_of_many_issues_cost_one_list_once_read() {
    use crate::support::mav::surface::Surface as _;
    let env = github_env();
    let fake = env.github();
    let mut first_ids = Vec::new();
    for n in 1..=3 {
        fake.create_issue(n, "kept", &["claude-in-progress"]);
        first_ids.push(fake.add_comment_as(n, "maverick-bot", &format!("first on {n}")));
        fake.add_comment_as(n, "maverick-bot", &format!("second on {n}"));
    }
    // Just past a ten-minute mark of GitHub's clock, which rounds the
    // time of the list of recent comments (so the test knows which lists
    // are the same).
    let now = crate::support::fake_github::parse_rfc3339(&fake.now()).unwrap();
    env.advance_clock((600 - now.rem_euclid(600) + 5) as u64);
    let cache = env.path().join("shared-cache");
    let process = || library_surface_caching_in(&env, &[], Some(cache.clone()));
    let bodies = |issues: &[crate::support::mav::surface::Issue]| -> Vec<Vec<String>> {
        issues
            .iter()
            .map(|i| i.comments.iter().map(|c| c.body.clone()).collect())
            .collect()
    };
    let read = |surface: &crate::support::mav::surface::github::GithubSurface| {
        let listed = surface.list(&["claude-in-progress"], false).unwrap();
        let mut issues = surface.with_comments(&listed).unwrap();
        issues.sort_by_key(|i| i.number);
        issues
    };

    let cold = read(&process());
    assert_eq!(bodies(&cold)[1], ["first on 2", "second on 2"]);

    env.advance_clock(120);
    fake.edit_comment(first_ids[1], "first on 2, edited");
    fake.add_comment_as(3, "maverick-bot", "third on 3");
    fake.delete_comment(first_ids[0]);
    fake.reset_count();
    let warm = read(&process());
    assert_eq!(
        bodies(&warm),
        [
            vec!["second on 1"],
            vec!["first on 2, edited", "second on 2"],
            vec!["first on 3", "second on 3", "third on 3"],
        ]
    );
    let paid: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.counted)
        .map(|r| r.path.clone())
        .collect();
    // The issue list, the recent comments, and #1 again for its deletion.
    assert_eq!(
        normalise(&env, &paid.join("\n")),
        "/repos/acme/widgets/issues?state=open&per_page=100&labels=claude%2Din%2Dprogress\n\
         /repos/acme/widgets/issues/comments?sort=created&direction=asc&since=[TIME]&per_page=100\n\
         /repos/acme/widgets/issues/1/comments?per_page=100",
        "{paid:#?}"
    );

    // Nothing changed: the same list (its time is rounded down to ten
    // minutes) is answered 304, from the next read on.
    assert_eq!(bodies(&read(&process())), bodies(&warm));
    fake.reset_count();
    assert_eq!(bodies(&read(&process())), bodies(&warm));
    assert_eq!(fake.counted_requests(), 0, "{:#?}", fake.requests());

    // A copy over half an hour old is read again, conditionally: #1,
    // unchanged since it was last read in full, is answered 304. (Three
    // issues without a usable copy first try the list of the last half
    // hour's comments, which holds none of theirs.)
    env.advance_clock(3600);
    fake.reset_count();
    assert_eq!(bodies(&read(&process())), bodies(&warm));
    insta::assert_snapshot!(
        "comments_read_again_after_an_hour",
        normalise(&env, &(counted_summary(&fake.requests()) + "\n"))
    );
}
