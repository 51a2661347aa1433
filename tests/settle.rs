//! The settle rule under GitHub's conditions, replayed deterministically.
//!
//! The simulator (`support::sim`): a surface without compare-and-swap whose
//! reads show a new comment a random number of steps late, and a seeded
//! schedule that decides which instance's next surface call runs: every
//! interleaving is a seed, so a failing one is replayed exactly
//! (`MAVERICK_SEED=<seed>`). The property is the one the spec
//! promises for GitHub: after every claimant's next heartbeat, at most one
//! instance believes it holds the issue, it is the holder every reader
//! computes, and every other claimant lost (exit 6 or 7).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::mav::config::{Settings, SurfaceKind};
use crate::support::mav::lease::{
    analyze, ClaimOutcome, ClaimRequest, Coordinator, Decision, HeartbeatOutcome, Renewal,
};
use crate::support::mav::surface::Comment;
use crate::support::mav::timefmt::Timestamp;

use crate::support::sim::{for_each_seed, Lag, Schedule, SimSurface, World};

const ISSUE: u64 = 142;
const BASE: i64 = 1_790_000_000;

/// GitHub as the protocol must survive it: no compare-and-swap, and reads
/// that show a new comment only up to `max_lag` steps after it was made.
/// The claim protocol reads and writes one issue and never lists.
fn world(seed: u64, max_lag: u64) -> Arc<Mutex<World>> {
    World::new(seed)
        .with_clock(BASE, 1)
        .with_lag(Lag {
            comments: max_lag,
            lists: 0,
        })
        .never(&["list", "pulls", "summaries"])
        .shared()
}

fn settings(instance: &str) -> Settings {
    Settings {
        repo: Some("acme/widgets".into()),
        // The lag is modelled in steps; the re-read happens at once.
        settle_delay: Duration::ZERO,
        ..Settings::defaults(SurfaceKind::Github, instance)
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Verdict {
    Claimed,
    Refused(&'static str),
    Lost,
}

/// Runs `f` for each instance on its own thread, under one seeded schedule.
fn run_phase<T: Send + 'static>(
    world: &Arc<Mutex<World>>,
    instances: &[String],
    seed: u64,
    f: impl Fn(&Coordinator<'_>) -> T + Send + Sync + 'static,
) -> Vec<T> {
    let schedule = Schedule::new(seed, instances.len());
    let f = Arc::new(f);
    let handles: Vec<_> = instances
        .iter()
        .enumerate()
        .map(|(actor, name)| {
            let surface = SimSurface::scheduled(world, &schedule, actor, name);
            let (f, name) = (f.clone(), name.clone());
            schedule.spawn(actor, move || {
                let settings = settings(&name);
                let coord = Coordinator::new(&surface, &settings);
                f(&coord)
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}

/// One claim of the issue, and how it ended.
fn claim(coord: &Coordinator<'_>) -> Verdict {
    let req = ClaimRequest {
        issues: vec![ISSUE],
        branch: None,
        takeover: false,
    };
    match coord.claim(&req).unwrap() {
        ClaimOutcome::Claimed { .. } => Verdict::Claimed,
        ClaimOutcome::Lost { .. } => Verdict::Lost,
        ClaimOutcome::Held { .. } => Verdict::Refused("held"),
        ClaimOutcome::Stale { .. } => Verdict::Refused("stale"),
        ClaimOutcome::Blocked { .. } => Verdict::Refused("blocked"),
    }
}

fn replay(seed: u64, claimants: usize, max_lag: u64) {
    let world = world(seed, max_lag);
    // Instance ids in an order unrelated to who comes first.
    let instances: Vec<String> = (0..claimants)
        .map(|i| format!("agent-{:02}", (i + seed as usize) % claimants))
        .collect();
    let claims = run_phase(&world, &instances, seed, claim);
    // GitHub's lists catch up.
    world.lock().unwrap().advance(max_lag + 1);
    let claimed: Vec<String> = instances
        .iter()
        .zip(&claims)
        .filter(|(_, v)| **v == Verdict::Claimed)
        .map(|(n, _)| n.clone())
        .collect();
    let beats = run_phase(&world, &claimed, seed ^ 0xABCD, |coord| {
        match coord.heartbeat(&[ISSUE], None, Renewal::WHEN_DUE).unwrap() {
            HeartbeatOutcome::Renewed { .. } => true,
            HeartbeatOutcome::Lost { .. } => false,
        }
    });
    let holders: Vec<&String> = claimed
        .iter()
        .zip(&beats)
        .filter(|(_, renewed)| **renewed)
        .map(|(n, _)| n)
        .collect();
    let context = format!("seed {seed}, {claimants} claimants, lag {max_lag}: claims {claims:?}, heartbeats {beats:?}");
    assert!(
        holders.len() <= 1,
        "two holders after the heartbeats: {holders:?}; {context}"
    );
    assert_eq!(holders.len(), 1, "nobody holds the issue: {context}");

    every_reader_computes(&world, &instances, holders[0], &context);
}

/// Every reader computes `holder`, and every other claim is released.
fn every_reader_computes(world: &Mutex<World>, instances: &[String], holder: &str, context: &str) {
    let mut w = world.lock().unwrap();
    let view = w.view(ISSUE);
    for reader in instances {
        let reader_settings = settings(reader);
        let v = analyze(&view, &reader_settings, &reader_settings.instance, w.now());
        assert_eq!(
            v.holder.as_ref().map(|h| h.instance_id.as_str()),
            Some(holder),
            "{context}"
        );
        let expected = if reader == holder {
            Decision::Ours
        } else {
            Decision::Held
        };
        assert_eq!(v.decision(), expected, "{context}");
        assert!(
            v.my_losing_claim.is_none(),
            "{reader}'s losing claim was never withdrawn; {context}"
        );
    }
}

#[test]
fn racing_claims_with_lagging_lists_end_with_one_holder() {
    for_each_seed(1..=150, |seed| {
        replay(seed, 2 + (seed % 7) as usize, seed % 5)
    });
}

#[test]
fn without_lag_the_settle_alone_decides() {
    for_each_seed((1..=40).map(|n| n * 7919), |seed| replay(seed, 8, 0));
}

/// Sixteen claimants on GitHub's conditions (no compare-and-swap, lagging
/// comments): the seeds behind the real-binary race
/// `coord::sixteen_instances_race…::github`, which keeps two rounds.
#[test]
fn sixteen_racing_claims_on_github_end_with_one_holder() {
    for_each_seed(1_000..1_040, |seed| replay(seed, 16, seed % 5));
}

/// The git surface's claim: one compare-and-swap of the surface ref. Sixteen
/// claimants race; exactly one claims, every other is refused as held (exit
/// 4, never a lost settle), the winner's heartbeat renews, and every reader
/// computes the winner. The seeds behind the real-binary race
/// `coord::sixteen_instances_race…::git`, which keeps three rounds.
#[test]
fn sixteen_racing_claims_with_compare_and_swap_one_claims_the_rest_see_it_held() {
    for_each_seed(0..60, |seed| {
        let world = World::new(seed)
            .with_clock(BASE, 1)
            .with_compare_and_swap()
            .never(&["list", "pulls", "summaries"])
            .shared();
        let instances: Vec<String> = (0..16)
            .map(|i| format!("racer-{:02}", (i + seed as usize) % 16))
            .collect();
        let claims = run_phase(&world, &instances, seed, claim);
        let context = format!("seed {seed}: {claims:?}");
        let winners: Vec<&String> = instances
            .iter()
            .zip(&claims)
            .filter(|(_, v)| **v == Verdict::Claimed)
            .map(|(n, _)| n)
            .collect();
        assert_eq!(winners.len(), 1, "{context}");
        assert!(
            claims
                .iter()
                .all(|v| *v == Verdict::Claimed || *v == Verdict::Refused("held")),
            "a loser was not refused as held: {context}"
        );
        let winner = winners[0].clone();
        let beats = run_phase(&world, std::slice::from_ref(&winner), seed, |coord| {
            matches!(
                coord.heartbeat(&[ISSUE], None, Renewal::WHEN_DUE).unwrap(),
                HeartbeatOutcome::Renewed { .. }
            )
        });
        assert_eq!(beats, [true], "{context}");
        every_reader_computes(&world, &instances, &winner, &context);
    });
}

/// A failing interleaving is replayed from its seed; keep a few tricky ones pinned.
#[test]
fn pinned_seeds() {
    for (seed, claimants, lag) in [(3, 8, 4), (42, 2, 4), (1234, 6, 3)] {
        replay(seed, claimants, lag);
    }
}

#[test]
fn a_replay_is_deterministic() {
    let outcome = |seed| {
        let world = world(seed, 3);
        let names: Vec<String> = (0..5).map(|i| format!("a{i}")).collect();
        let claims = run_phase(&world, &names, seed, |coord| {
            matches!(
                coord
                    .claim(&ClaimRequest {
                        issues: vec![ISSUE],
                        branch: None,
                        takeover: false
                    })
                    .unwrap(),
                ClaimOutcome::Claimed { .. }
            )
        });
        let mut w = world.lock().unwrap();
        w.advance(4);
        let comments: Vec<(u64, String)> = w
            .view(ISSUE)
            .comments
            .into_iter()
            .map(|c| (c.id, c.author))
            .collect();
        (claims, w.log.clone(), comments)
    };
    assert_eq!(outcome(99), outcome(99));
}

/// A marker with an impossible generation is refused with a typed error,
/// never an overflow.
#[test]
fn an_impossible_generation_is_an_error_not_a_panic() {
    let marker = |kind: &str, payload: &str| format!("```maverick-{kind}\n{payload}\n```\n");
    let comment = |id: u64, body: String| Comment {
        id,
        author: "mallory".into(),
        trusted: true,
        body,
        created_at: Timestamp(BASE),
        updated_at: Timestamp(BASE),
    };
    let world = world(1, 0);
    {
        let mut w = world.lock().unwrap();
        w.push_comment(
            ISSUE,
            comment(
                1,
                marker(
                    "claim",
                    r#"{"instance_id":"mallory","generation":18446744073709551615}"#,
                ),
            ),
        );
        w.push_comment(
            ISSUE,
            comment(
                2,
                marker(
                    "lease",
                    r#"{"instance_id":"mallory","released_at":"2026-01-01T00:00:00Z","generation":18446744073709551615}"#,
                ),
            ),
        );
    }
    let outcome = run_phase(&world, &["alice".to_owned()], 1, |coord| {
        match coord.claim(&ClaimRequest {
            issues: vec![ISSUE],
            branch: None,
            takeover: false,
        }) {
            Err(e) => e.to_string(),
            Ok(o) => format!("claimed: {}", serde_json::to_value(o).unwrap()),
        }
    });
    assert_eq!(
        outcome[0],
        "a claim marker on #142 carries an impossible generation; remove that comment"
    );
}
