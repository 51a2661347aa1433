//! GitHub's request budget, counted the way GitHub counts it: by the fake
//! GitHub, which knows a 304 answer to a conditional request from a counted
//! one, whatever the client believes. Counts are deterministic, so each
//! budget is an assertion.
//!
//! [`measure`] runs every command of an agent's cycle against a backlog of
//! N ready issues; the tests below hold the budgets at 10 and 1,000, and
//! `bench/github-budget.sh` prints the whole table through the same entry
//! point (`MAVERICK_BUDGET_SIZES`, `MAVERICK_BUDGET_TABLE`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::support::fake_github::RecordedRequest;
use crate::support::{Repo, Run, Surface, TestEnv};

/// GitHub's primary limit for a user token, per hour.
const RATE_LIMIT: u64 = 5000;
/// The default `heartbeatInterval`, in seconds.
const HEARTBEAT_INTERVAL: u64 = 120;
/// Issues claimed at once when `status` is measured.
const CLAIMED: u64 = 41;
/// Where the claimed issues start: above any backlog measured.
const CLAIMED_FROM: u64 = 5001;
const EPIC: u64 = 9000;
const FRONTIER: &str = "agent-ready";

/// What one command cost.
#[derive(Clone, Debug, Default)]
pub struct Cost {
    /// Counted against the rate limit.
    pub counted: usize,
    /// Answered 304 (free).
    pub not_modified: usize,
}

/// The commands of the table, in its order.
pub const COMMANDS: [&str; 12] = [
    "coord read (first)",
    "coord read (again, new process)",
    "dispatch",
    "dispatch status",
    "coord claim",
    "coord heartbeat",
    "dispatch release --pr",
    "coord release",
    "status (41 claimed, first)",
    "status (41 claimed, every lease moved)",
    "hydrate (first)",
    "hydrate (again)",
];

/// Runs `args` in `repo`, expecting `code`, and returns what it cost.
fn cost(env: &TestEnv, repo: &Repo<'_>, args: &[&str], code: i32) -> (Run, Cost) {
    let fake = env.github();
    fake.reset_count();
    let run = repo.maverick(args);
    run.expect(code);
    let requests = fake.requests();
    let cost = Cost {
        counted: fake.counted_requests(),
        not_modified: fake.not_modified_count(),
    };
    if std::env::var_os("MAVERICK_BUDGET_VERBOSE").is_some() {
        eprintln!("{args:?}:\n{}", listing(&requests));
    }
    (run, cost)
}

fn listing(requests: &[RecordedRequest]) -> String {
    requests
        .iter()
        .map(|r| {
            let free = if r.counted { "" } else { " (free)" };
            format!("  {} {} -> {}{free}\n", r.method, r.path, r.status)
        })
        .collect()
}

/// Every command's cost against a backlog of `ready` issues labelled
/// `agent-ready`, created a day before the first command runs.
pub fn measure(ready: u64) -> BTreeMap<&'static str, Cost> {
    let env = TestEnv::with_surface(Surface::Github);
    let fake = env.github();
    fake.create_issues_on_demand(false);
    for n in 1..=ready {
        fake.create_issue(n, &format!("Ready issue {n}"), &[FRONTIER]);
    }
    for n in CLAIMED_FROM..CLAIMED_FROM + CLAIMED {
        fake.create_issue(n, &format!("Story {n}"), &[]);
    }
    fake.create_issue(EPIC, "Epic", &[]);
    env.advance_clock(86_400);
    let mut costs = BTreeMap::new();
    let mut record = |name: &'static str, cost: Cost| {
        assert!(COMMANDS.contains(&name), "{name}");
        costs.insert(name, cost);
    };

    // One agent's cycle.
    let agent = env.clone("agent");
    record(
        "coord read (first)",
        cost(&env, &agent, &["coord", "read", "1"], 0).1,
    );
    record(
        "coord read (again, new process)",
        cost(&env, &agent, &["coord", "read", "1"], 0).1,
    );
    let (run, dispatched) = cost(&env, &agent, &["--json", "dispatch"], 0);
    record("dispatch", dispatched);
    let issue = run.json()["issue"].as_u64().expect("dispatched an issue");
    let issue_arg = issue.to_string();
    record(
        "dispatch status",
        cost(&env, &agent, &["dispatch", "status"], 0).1,
    );
    record(
        "coord claim",
        cost(&env, &agent, &["coord", "claim", &issue_arg], 0).1,
    );
    // The steady state: the beat after a beat.
    for _ in 0..2 {
        env.advance_clock(HEARTBEAT_INTERVAL);
        let beat = cost(&env, &agent, &["coord", "heartbeat", &issue_arg], 0).1;
        record("coord heartbeat", beat);
    }
    let pr = CLAIMED_FROM + CLAIMED + 100;
    fake.create_pull(pr, "Draft", &[], &format!("{pr:040x}"));
    let pr_arg = pr.to_string();
    record(
        "dispatch release --pr",
        cost(
            &env,
            &agent,
            &["dispatch", "release", &issue_arg, "--pr", &pr_arg],
            0,
        )
        .1,
    );
    record(
        "coord release",
        cost(&env, &agent, &["coord", "release", &issue_arg], 0).1,
    );

    // A fleet of 41 claims, seen by someone else's `status`.
    let fleet = env.clone("fleet");
    let scope: Vec<String> = (CLAIMED_FROM + 1..CLAIMED_FROM + CLAIMED)
        .map(|n| n.to_string())
        .collect();
    fleet
        .maverick(&[
            "coord",
            "claim",
            &CLAIMED_FROM.to_string(),
            "--scope",
            &scope.join(","),
        ])
        .expect(0);
    let viewer = env.clone("viewer");
    record(
        "status (41 claimed, first)",
        cost(&env, &viewer, &["status"], 0).1,
    );
    env.advance_clock(HEARTBEAT_INTERVAL);
    fleet
        .maverick(&["coord", "heartbeat", &CLAIMED_FROM.to_string()])
        .expect(0);
    record(
        "status (41 claimed, every lease moved)",
        cost(&env, &viewer, &["status"], 0).1,
    );

    // An epic of ten stories.
    let stories: serde_json::Map<String, serde_json::Value> = (CLAIMED_FROM..CLAIMED_FROM + 10)
        .map(|n| (n.to_string(), serde_json::json!({"deps": []})))
        .collect();
    let dag = env.input_file(
        "dag.json",
        &serde_json::json!({"epic": EPIC, "stories": stories}).to_string(),
    );
    fleet
        .maverick(&["state", "put", "dag", &EPIC.to_string(), &dag])
        .expect(0);
    record(
        "hydrate (first)",
        cost(&env, &viewer, &["hydrate", &EPIC.to_string()], 0).1,
    );
    record(
        "hydrate (again)",
        cost(&env, &viewer, &["hydrate", &EPIC.to_string()], 0).1,
    );
    costs
}

/// The requests one agent makes in an hour: a heartbeat every
/// `heartbeatInterval`, and one cycle (dispatch, claim, dispatch release,
/// release).
pub fn agent_hour(costs: &BTreeMap<&'static str, Cost>) -> usize {
    let of = |name: &str| costs.get(name).map_or(0, |c| c.counted);
    let beats = (3600 / HEARTBEAT_INTERVAL) as usize;
    beats * of("coord heartbeat")
        + of("dispatch")
        + of("coord claim")
        + of("dispatch release --pr")
        + of("coord release")
}

/// The agents one token carries at `costs`.
pub fn agents_per_token(costs: &BTreeMap<&'static str, Cost>) -> u64 {
    RATE_LIMIT / agent_hour(costs).max(1) as u64
}

/// The table `bench/github-budget.sh` prints.
pub fn table(sizes: &[(u64, BTreeMap<&'static str, Cost>)]) -> String {
    let mut out = String::new();
    let _ = write!(out, "{:<40}", "counted requests (304s free)");
    for (size, _) in sizes {
        let _ = write!(out, "{:>18}", format!("{size} ready"));
    }
    out.push('\n');
    for name in COMMANDS {
        let _ = write!(out, "{name:<40}");
        for (_, costs) in sizes {
            let cell = costs.get(name).map_or_else(
                || "-".to_owned(),
                |c| format!("{} ({} free)", c.counted, c.not_modified),
            );
            let _ = write!(out, "{cell:>18}");
        }
        out.push('\n');
    }
    let _ = write!(out, "{:<40}", "one agent's hour");
    for (_, costs) in sizes {
        let _ = write!(out, "{:>18}", agent_hour(costs));
    }
    out.push('\n');
    let _ = write!(out, "{:<40}", "agents per token (5,000/h)");
    for (_, costs) in sizes {
        let _ = write!(out, "{:>18}", agents_per_token(costs));
    }
    out.push('\n');
    let _ = writeln!(
        out,
        "\nOne agent's hour: a heartbeat every {HEARTBEAT_INTERVAL}s (the default heartbeatInterval) and one cycle (dispatch, coord claim, dispatch release --pr, coord release)."
    );
    out
}

fn assert_budgets(size: u64, costs: &BTreeMap<&'static str, Cost>) {
    let of = |name: &str| costs[name].counted;
    let context = format!("{size} ready issues: {costs:#?}");
    assert!(of("dispatch") <= 12, "dispatch over budget at {context}");
    assert!(
        of("coord read (again, new process)") <= 1,
        "a second read over budget at {context}"
    );
    assert!(
        of("coord heartbeat") <= 2,
        "heartbeat over budget at {context}"
    );
    assert!(
        of("status (41 claimed, every lease moved)") <= 6,
        "status over budget at {context}"
    );
    // A first status in a fresh clone: one list of the recent comments
    // brings every claim, and the list of open issues (what finds the
    // blocked ones) is a page per hundred, answered 304 while none changes.
    let pages = (size + CLAIMED + 1).div_ceil(100) as usize;
    assert!(
        of("status (41 claimed, first)") <= 2 + pages,
        "a first status over budget at {context}"
    );
    // An epic of ten stories in flight: the epic and its comments, a read
    // of each story (304 once unchanged), and one list of recent comments
    // for the stories' claims.
    assert!(
        of("hydrate (first)") <= 14,
        "a first hydrate over budget at {context}"
    );
    assert_eq!(of("hydrate (again)"), 0, "hydrate again at {context}");
}

/// The budgets at both ends of the backlog; `MAVERICK_BUDGET_SIZES` (a
/// comma-separated list) measures others, and `MAVERICK_BUDGET_TABLE=FILE`
/// writes the table there (what `bench/github-budget.sh` does).
#[test]
fn the_request_budget_does_not_grow_with_the_backlog() {
    let sizes: Vec<u64> = std::env::var("MAVERICK_BUDGET_SIZES")
        .map(|list| {
            list.split(',')
                .map(|n| n.trim().parse().expect("MAVERICK_BUDGET_SIZES: numbers"))
                .collect()
        })
        .unwrap_or_else(|_| vec![10, 1000]);
    let measured: Vec<(u64, BTreeMap<&'static str, Cost>)> =
        sizes.iter().map(|&n| (n, measure(n))).collect();
    let table = table(&measured);
    eprintln!("{table}");
    if let Some(path) = std::env::var_os("MAVERICK_BUDGET_TABLE") {
        std::fs::write(path, &table).expect("write the budget table");
    }
    for (size, costs) in &measured {
        assert_budgets(*size, costs);
    }
}
