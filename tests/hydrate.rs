//! Hydrate's request budget on GitHub, counted on the simulator's call log:
//! a cold start of a 50-story epic reads the comments of the epic and of the
//! stories in flight only, one list of summaries, one of pull requests and
//! one CI query.

use crate::support::mav::config::{Settings, SurfaceKind};
use crate::support::mav::hydrate::{hydrate, Hydrated};
use crate::support::mav::markers::{render_marker, Marker, MarkerKind};
use crate::support::mav::surface::{Comment, PullRequest};
use crate::support::mav::timefmt::Timestamp;
use serde_json::{json, Map, Value};

use crate::support::sim::{SimSurface, World};

fn comment(id: u64, body: String) -> Comment {
    Comment {
        id,
        author: "bot".into(),
        trusted: true,
        body,
        created_at: Timestamp(1_799_999_000),
        updated_at: Timestamp(1_799_999_000),
    }
}

fn settings() -> Settings {
    Settings {
        repo: Some("acme/widgets".into()),
        settle_delay: std::time::Duration::ZERO,
        ..Settings::defaults(SurfaceKind::Github, "me")
    }
}

#[test]
fn a_50_story_epic_reads_comments_of_the_epic_and_the_stories_in_flight_only() {
    let stories: Vec<u64> = (200..250).collect();
    let dag: Map<String, Value> = stories
        .iter()
        .map(|n| (n.to_string(), json!({"deps": []})))
        .collect();
    let dag = Marker::new(
        MarkerKind::Dag,
        json!({"epic": 1, "stories": dag})
            .as_object()
            .unwrap()
            .clone(),
    );
    // Hydrate reads; it never lists by label and never writes.
    let mut world = World::new(1)
        .with_clock(1_800_000_000, 1)
        .never(&["list", "write"]);
    world.push_comment(1, comment(1, render_marker(&dag)));
    let in_flight = [203, 217, 240];
    for &n in &stories {
        world.issue_mut(n);
        if in_flight.contains(&n) {
            let claim = Marker::new(
                MarkerKind::Claim,
                json!({"instance_id": "other", "branch": format!("maverick/{n}-x"), "generation": 1})
                    .as_object()
                    .unwrap()
                    .clone(),
            );
            world.issue_mut(n).labels = vec!["claude-in-progress".into()];
            world.push_comment(n, comment(10 + n, render_marker(&claim)));
        }
    }
    world.pulls = in_flight
        .iter()
        .map(|n| PullRequest {
            number: 1000 + n,
            title: format!("story {n}"),
            head_ref: format!("maverick/{n}-x"),
            head_sha: format!("{n:040}"),
            base_ref: "main".into(),
            draft: true,
            labels: Vec::new(),
            body: String::new(),
            author: "other".into(),
            base_repo: "acme/widgets".into(),
            base_repo_url: "https://github.com/acme/widgets".into(),
            default_branch: "main".into(),
            from_fork: false,
            trusted: true,
        })
        .collect();
    let world = world.shared();
    let surface = SimSurface::new(&world, "me");
    let hydrated = hydrate(&surface, &settings(), 1).unwrap();
    assert!(matches!(hydrated, Hydrated::Epic(_)), "an epic");
    let value = serde_json::to_value(&hydrated).unwrap();
    assert_eq!(
        world.lock().unwrap().log,
        [
            "comments #1",
            "summaries",
            "comments #203",
            "comments #217",
            "comments #240",
            "pulls",
            "ci x3",
        ]
    );
    assert_eq!(value["issues"]["217"]["claim"]["instance_id"], "other");
    assert_eq!(value["issues"]["217"]["pull"]["ci"]["state"], "success");
    assert_eq!(value["issues"]["218"]["pull"], Value::Null);
    assert_eq!(value["ready"].as_array().unwrap().len(), 47);
}
