//! `coord heartbeat` writes the lease only when it needs it (issue 40):
//! every heartbeat reads and settles the claim, and writes the lease (a
//! comment edit on GitHub, which GitHub's content limit may count) only
//! when a later heartbeat could no longer renew it in time. `run`'s own
//! heartbeats are tested in `run.rs`.

use crate::support::mav::timefmt::Timestamp;
use crate::support::screen::{screen, screens};
use crate::support::{Repo, Run, Surface, TestEnv};

/// What a command wrote to the surface, as a count: requests other than
/// reads on GitHub, moves of the issue's ref on the `git` surface.
struct Writes<'e> {
    env: &'e TestEnv,
    issue: u64,
    git_ref: Option<Vec<u8>>,
}

impl<'e> Writes<'e> {
    fn watch(env: &'e TestEnv, issue: u64) -> Writes<'e> {
        let mut w = Writes {
            env,
            issue,
            git_ref: None,
        };
        w.reset();
        w
    }

    fn ref_file(&self) -> std::path::PathBuf {
        self.env
            .origin
            .join(format!("refs/maverick/issue/{}", self.issue))
    }

    fn reset(&mut self) {
        match self.env.name() {
            "github" => self.env.github().reset_count(),
            _ => self.git_ref = std::fs::read(self.ref_file()).ok(),
        }
    }

    /// The writes since the last look.
    fn since(&mut self) -> usize {
        let n = match self.env.name() {
            "github" => self
                .env
                .github()
                .requests()
                .iter()
                .filter(|r| r.method != "GET")
                .count(),
            _ => usize::from(std::fs::read(self.ref_file()).ok() != self.git_ref),
        };
        self.reset();
        n
    }
}

fn heartbeat(repo: &Repo<'_>, args: &[&str]) -> Run {
    let mut all = vec!["--json", "coord", "heartbeat", "142"];
    all.extend(args);
    repo.maverick(&all)
}

fn seconds(value: &serde_json::Value) -> i64 {
    Timestamp::parse(value.as_str().expect("a timestamp"))
        .expect("RFC 3339")
        .0
}

/// The lease's time left as the heartbeat's JSON tells it.
fn left(run: &Run) -> i64 {
    let issue = &run.json()["issues"][0];
    seconds(&issue["expires_at"]) - seconds(&issue["now"])
}

fn a_heartbeat_writes_the_lease_only_when_it_needs_it(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice.maverick(&["coord", "claim", "142"]).expect(0);
    let mut writes = Writes::watch(&env, 142);

    // Right after the claim, the lease has its whole ttl: nothing written.
    let fresh = heartbeat(&alice, &[]);
    fresh.expect(0);
    assert_eq!(fresh.json()["result"], "renewed", "{}", fresh.screen());
    assert_eq!(fresh.json()["written"], serde_json::json!([]));
    assert_eq!(writes.since(), 0, "{}", fresh.screen());
    let text = alice.maverick(&["coord", "heartbeat", "142"]);
    text.expect(0);
    assert_eq!(writes.since(), 0);

    // Three intervals on (ttl 600 s, interval 120 s): 240 s are left, under
    // two intervals and a half: the heartbeat writes the lease.
    env.advance_clock(360);
    let due = heartbeat(&alice, &[]);
    due.expect(0);
    assert_eq!(due.json()["written"], serde_json::json!([142]));
    assert!(writes.since() >= 1, "{}", due.screen());
    assert!(
        left(&due) >= 600,
        "renewed for a whole ttl: {}",
        due.screen()
    );

    // Two intervals on, 360 s left: more than the next two heartbeats and a
    // margin need, so the lease is left as it is...
    env.advance_clock(240);
    let left_alone = heartbeat(&alice, &[]);
    left_alone.expect(0);
    assert_eq!(left_alone.json()["written"], serde_json::json!([]));
    assert_eq!(writes.since(), 0);
    // ...and everyone else sees it held, live.
    bob.maverick(&["coord", "read", "142"]).expect(4);
    // --renew writes it all the same.
    let renewed = heartbeat(&alice, &["--renew"]);
    renewed.expect(0);
    assert_eq!(renewed.json()["written"], serde_json::json!([142]));
    assert!(writes.since() >= 1);
    assert!(left(&renewed) >= 600, "{}", renewed.screen());
    let renew_text = alice.maverick(&["coord", "heartbeat", "142", "--renew"]);
    renew_text.expect(0);

    insta::assert_snapshot!(
        format!("heartbeat_when_due_{}", env.name()),
        screens(&[
            ("git maverick coord heartbeat 142", screen(&env, &text)),
            (
                "git maverick coord heartbeat 142 --renew",
                screen(&env, &renew_text)
            ),
        ])
    );
}

on_both_surfaces!(a_heartbeat_writes_the_lease_only_when_it_needs_it);

/// SPEC 4: a race the claim's re-read missed, or a claim taken meanwhile,
/// ends at the loser's next heartbeat, although that heartbeat writes
/// nothing.
fn a_heartbeat_that_writes_nothing_still_finds_the_claim_lost(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice.maverick(&["coord", "claim", "142"]).expect(0);
    bob.maverick(&["coord", "label", "remove", "142", "claude-in-progress"])
        .expect(0);
    bob.maverick(&["coord", "claim", "142"]).expect(0);
    let mut writes = Writes::watch(&env, 142);
    env.advance_clock(120);
    let lost = heartbeat(&alice, &[]);
    lost.expect(7);
    assert_eq!(lost.json()["result"], "lost", "{}", lost.screen());
    assert_eq!(writes.since(), 0, "{}", lost.screen());
    let (code, holder) = {
        let read = bob.maverick(&["--json", "coord", "read", "142"]);
        (read.code, read.json()["holder"]["instance_id"].clone())
    };
    assert_eq!((code, holder.as_str()), (0, Some("bob")));
}

on_both_surfaces!(a_heartbeat_that_writes_nothing_still_finds_the_claim_lost);
