//! GitHub's request budget, counted the way GitHub counts it: by the fake
//! GitHub, which knows a 304 answer to a conditional request from a counted
//! one, whatever the client believes. Counts are deterministic, so each
//! budget is an assertion.
//!
//! [`measure`] runs every command of an agent's cycle against a backlog of
//! N ready issues; the tests below hold the budgets at 10 and 1,000, and
//! `bench/github-budget.sh` prints the whole table through the same entry
//! point (`MAVERICK_BUDGET_SIZES`, `MAVERICK_BUDGET_TABLE`).
//!
//! GitHub's secondary limits are measured too: [`fleet_start`] starts a
//! fleet of agents dispatching at once against the fake with the limits on
//! and list lag, and the table prices one agent's hour against each limit
//! (points, content-generating requests under both readings of what
//! generates content) to name the one that binds.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use std::process::{Child, Stdio};
use std::time::Instant;

use crate::support::fake_github::{RecordedRequest, SecondaryLimits, SecondaryPeaks};
use crate::support::{Repo, Run, Surface, TestEnv};

/// GitHub's primary limit for a user token, per hour.
const RATE_LIMIT: u64 = 5000;
/// The default `heartbeatInterval`, in seconds.
const HEARTBEAT_INTERVAL: u64 = 120;
/// The default `leaseTtl`, in seconds.
const LEASE_TTL: u64 = 600;
/// Issues claimed at once when `status` is measured.
const CLAIMED: u64 = 41;
/// Where the claimed issues start: above any backlog measured.
const CLAIMED_FROM: u64 = 5001;
const EPIC: u64 = 9000;
/// Issues blocked by others when `status` is measured again.
const BLOCKED: [u64; 3] = [8001, 8002, 8003];
const FRONTIER: &str = "agent-ready";

/// What one command cost.
#[derive(Clone, Debug, Default)]
pub struct Cost {
    /// Counted against the rate limit.
    pub counted: usize,
    /// Answered 304 (free).
    pub not_modified: usize,
    /// Pages of the list of every open issue (an issue list with no
    /// `labels` filter), counted or not: what grows with the backlog.
    pub everything_pages: usize,
    /// Secondary-limit points (a read 1, a write 5).
    pub points: u32,
    /// Content-generating requests: comment edits counted (strict), not
    /// counted (lenient).
    pub content: (usize, usize),
}

/// Whether `request` is a page of the list of every open issue:
/// `GET …/issues` without a `labels` filter.
fn lists_everything(request: &RecordedRequest) -> bool {
    let (path, query) = request.path.split_once('?').unwrap_or((&request.path, ""));
    request.method == "GET"
        && path.ends_with("/issues")
        && !query.split('&').any(|pair| pair.starts_with("labels="))
}

/// The commands of the table, in its order.
pub const COMMANDS: [&str; 14] = [
    "coord read (first)",
    "coord read (again, new process)",
    "dispatch",
    "dispatch status",
    "coord claim",
    "coord heartbeat",
    "coord heartbeat (lease due)",
    "dispatch release --pr",
    "coord release",
    "status (41 claimed, first)",
    "status (41 claimed, every lease moved)",
    "hydrate (first)",
    "hydrate (again)",
    "status (41 claimed, 3 blocked, first)",
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
        everything_pages: requests.iter().filter(|r| lists_everything(r)).count(),
        points: requests.iter().map(|r| r.points).sum(),
        content: (
            requests.iter().filter(|r| r.content.counts(true)).count(),
            requests.iter().filter(|r| r.content.counts(false)).count(),
        ),
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
    // The steady state: the beat after a beat, the lease fresh enough to
    // be left as it is; then the beat that finds it due and writes it.
    for _ in 0..2 {
        env.advance_clock(HEARTBEAT_INTERVAL);
        let beat = cost(&env, &agent, &["coord", "heartbeat", &issue_arg], 0).1;
        record("coord heartbeat", beat);
    }
    env.advance_clock(HEARTBEAT_INTERVAL);
    let (run, due) = cost(
        &env,
        &agent,
        &["--json", "coord", "heartbeat", &issue_arg],
        0,
    );
    assert_eq!(run.json()["written"], serde_json::json!([issue]), "due");
    record("coord heartbeat (lease due)", due);
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
    let (run, first) = cost(&env, &viewer, &["--json", "status"], 0);
    let totals = &run.json()["totals"];
    assert_eq!(totals["issues"], 41, "every claim shown: {totals}");
    assert_eq!(totals["held"], 41, "every claim shown: {totals}");
    record("status (41 claimed, first)", first);
    env.advance_clock(HEARTBEAT_INTERVAL);
    fleet
        .maverick(&["coord", "heartbeat", &CLAIMED_FROM.to_string(), "--renew"])
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

    // Three issues blocked by three others, seen from a fresh clone: one
    // more list each.
    for (n, blocker) in BLOCKED.iter().zip(1u64..) {
        fake.create_issue(*n, "Waits", &[&format!("blocked-by:#{blocker}")]);
    }
    let newcomer = env.clone("newcomer");
    let (run, blocked) = cost(&env, &newcomer, &["--json", "status"], 0);
    let json = run.json();
    assert_eq!(json["totals"]["issues"], 44, "{}", json["totals"]);
    assert_eq!(json["totals"]["blocked"], 3, "{}", json["totals"]);
    let mut shown: Vec<u64> = json["issues"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|row| row["state"] == "blocked")
        .map(|row| row["issue"].as_u64().expect("a number"))
        .collect();
    shown.sort_unstable();
    assert_eq!(shown, BLOCKED);
    record("status (41 claimed, 3 blocked, first)", blocked);
    costs
}

/// The heartbeats of an hour, one every `heartbeatInterval`, and how
/// many of them write the lease: those the core's rule finds due, the
/// lease written a whole ttl ahead each time (and by the claim first).
pub fn heartbeats_an_hour() -> (u64, u64) {
    use maverick_core::holding::renewal_due;
    use maverick_core::timefmt::Timestamp;
    let interval = std::time::Duration::from_secs(HEARTBEAT_INTERVAL);
    let beats = 3600 / HEARTBEAT_INTERVAL;
    let mut expires = LEASE_TTL;
    let mut writes = 0;
    for beat in 1..=beats {
        let now = beat * HEARTBEAT_INTERVAL;
        let (now_at, expires_at) = (Timestamp(now as i64), Timestamp(expires as i64));
        if renewal_due(now_at, expires_at, interval, std::time::Duration::ZERO) {
            writes += 1;
            expires = now + LEASE_TTL;
        }
    }
    (beats, writes)
}

/// The requests one agent makes in an hour: a heartbeat every
/// `heartbeatInterval` (those that find the lease due write it), and one
/// cycle (dispatch, claim, dispatch release, release).
pub fn agent_hour(costs: &BTreeMap<&'static str, Cost>) -> usize {
    hour_of(costs, |c| c.counted as u64) as usize
}

/// The agents one token carries at `costs`.
pub fn agents_per_token(costs: &BTreeMap<&'static str, Cost>) -> u64 {
    RATE_LIMIT / agent_hour(costs).max(1) as u64
}

/// What one command's cost comes to in one respect.
type CostOf = dyn Fn(&Cost) -> u64;

/// One agent's hour (as [`agent_hour`]) of `of` each command.
fn hour_of(costs: &BTreeMap<&'static str, Cost>, of: impl Fn(&Cost) -> u64) -> u64 {
    let of = |name: &str| costs.get(name).map_or(0, &of);
    let (beats, writes) = heartbeats_an_hour();
    (beats - writes) * of("coord heartbeat")
        + writes * of("coord heartbeat (lease due)")
        + of("dispatch")
        + of("coord claim")
        + of("dispatch release --pr")
        + of("coord release")
}

/// The agents one token carries under each of GitHub's limits, tightest
/// first: (the limit, agents).
pub fn agents_under_each_limit(costs: &BTreeMap<&'static str, Cost>) -> Vec<(&'static str, u64)> {
    let limits = SecondaryLimits::github();
    let per = |budget: u64, used: u64| budget / used.max(1);
    let mut under = vec![
        ("primary (5,000 requests an hour)", agents_per_token(costs)),
        (
            "points (900 a minute)",
            per(
                u64::from(limits.points_per_minute) * 60,
                hour_of(costs, |c| u64::from(c.points)),
            ),
        ),
        (
            "content, strict (500 an hour, comment edits count)",
            per(
                u64::from(limits.content_per_hour),
                hour_of(costs, |c| c.content.0 as u64),
            ),
        ),
        (
            "content, lenient (500 an hour, comment edits do not)",
            per(
                u64::from(limits.content_per_hour),
                hour_of(costs, |c| c.content.1 as u64),
            ),
        ),
    ];
    under.sort_by_key(|(_, agents)| *agents);
    under
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
    let rows: [(&str, &CostOf); 3] = [
        ("one agent's hour: points", &|c| u64::from(c.points)),
        ("one agent's hour: content (strict)", &|c| {
            c.content.0 as u64
        }),
        ("one agent's hour: content (lenient)", &|c| {
            c.content.1 as u64
        }),
    ];
    for (name, of) in rows {
        let _ = write!(out, "{name:<40}");
        for (_, costs) in sizes {
            let _ = write!(out, "{:>18}", hour_of(costs, of));
        }
        out.push('\n');
    }
    if let Some((_, costs)) = sizes.last() {
        let _ = writeln!(
            out,
            "\nAgents one token carries under each of GitHub's limits, tightest first:"
        );
        for (limit, agents) in agents_under_each_limit(costs) {
            let _ = writeln!(out, "  {agents:>5}  {limit}");
        }
        let (binding, agents) = agents_under_each_limit(costs)[0];
        let _ = writeln!(
            out,
            "The binding limit is {binding}: {agents} agents a token."
        );
    }
    let (beats, writes) = heartbeats_an_hour();
    let _ = writeln!(
        out,
        "\nOne agent's hour: a heartbeat every {HEARTBEAT_INTERVAL}s (the default heartbeatInterval; {beats} an hour, of which the {writes} that find the lease due write it, leaseTtl {LEASE_TTL}s) and one cycle (dispatch, coord claim, dispatch release --pr, coord release)."
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
        of("coord heartbeat (lease due)") <= 2,
        "a heartbeat that writes over budget at {context}"
    );
    assert!(
        of("status (41 claimed, every lease moved)") <= 6,
        "status over budget at {context}"
    );
    // A first status in a fresh clone: the repository's labels, the open
    // issues of each label a row is made of (in-progress, agent-wip,
    // agent-pr, each blocked-by:#N), one list of the recent comments (which
    // brings every claim) and one of the open pull requests; never the list
    // of every open issue, a page per hundred.
    assert!(
        of("status (41 claimed, first)") <= 6,
        "a first status over budget at {context}"
    );
    assert!(
        of("status (41 claimed, 3 blocked, first)") <= 6 + BLOCKED.len(),
        "a first status with blocked issues over budget at {context}"
    );
    for name in COMMANDS.iter().filter(|n| n.starts_with("status")) {
        assert_eq!(
            costs[name].everything_pages, 0,
            "{name} listed every open issue at {context}"
        );
    }
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

/// With more `blocked-by:#N` labels than label lists are worth, `status`
/// lists every open issue instead, and still shows every blocked one.
#[test]
fn status_past_the_label_lists_still_shows_every_blocked_issue() {
    let env = TestEnv::with_surface(Surface::Github);
    let fake = env.github();
    fake.create_issues_on_demand(false);
    let blocked: Vec<u64> = (11..=19).collect();
    for n in 1..=10 {
        fake.create_issue(n, &format!("Ready issue {n}"), &[FRONTIER]);
    }
    for (n, blocker) in blocked.iter().zip(1u64..) {
        fake.create_issue(*n, "Waits", &[&format!("blocked-by:#{blocker}")]);
    }
    // And one label left behind by an issue no longer blocked.
    fake.create_label("blocked-by:#999");
    let viewer = env.clone("viewer");
    let (run, status) = cost(&env, &viewer, &["--json", "status"], 0);
    let json = run.json();
    assert_eq!(json["totals"]["blocked"], 9, "{}", json["totals"]);
    let mut shown: Vec<u64> = json["issues"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| row["issue"].as_u64().expect("a number"))
        .collect();
    shown.sort_unstable();
    assert_eq!(shown, blocked);
    assert_eq!(status.everything_pages, 1, "{status:?}");
}

/// Agents in the fleet that starts together; `MAVERICK_FLEET_AGENTS`
/// asks for another size.
const FLEET: usize = 32;
/// Ready issues when the fleet starts: more than the fleet.
const FLEET_READY: u64 = 40;

/// What a fleet start came to.
#[derive(Debug)]
pub struct FleetStart {
    /// Each agent's issue, or `None` for a clear "no slot" (exit 9).
    pub issues: Vec<Option<u64>>,
    pub no_slot: usize,
    pub peaks: SecondaryPeaks,
    /// From the first dispatch to the last answer, on the test clock
    /// (pauses and rate-limit waits included) and in real time.
    pub test_clock_secs: f64,
    pub real_secs: f64,
    pub requests: usize,
}

impl FleetStart {
    pub fn report(&self, edits_are_content: bool) -> String {
        let dispatched = self.issues.iter().flatten().count();
        let reading = if edits_are_content {
            "strict"
        } else {
            "lenient"
        };
        format!(
            "fleet start, {} agents, limits on ({reading} reading), 2 s list lag: {dispatched} dispatched, {} no slot; \
             {:.0} s on the test clock ({:.1} s real); {} requests; peaks: {} points a minute, {} content a minute \
             (strict; {} lenient), {} concurrent; {} limit answers, {} unheeded\n",
            self.issues.len(),
            self.no_slot,
            self.test_clock_secs,
            self.real_secs,
            self.requests,
            self.peaks.points_per_minute,
            self.peaks.content_per_minute.0,
            self.peaks.content_per_minute.1,
            self.peaks.concurrent,
            self.peaks.limit_answers,
            self.peaks.unheeded,
        )
    }
}

/// `agents` clones with `dispatchSlots` as large, each dispatching at the
/// same moment against GitHub's secondary limits (`edits_are_content`
/// picks the reading) with `FLEET_READY` ready issues and a 2 s list lag.
pub fn fleet_start(agents: usize, edits_are_content: bool) -> FleetStart {
    let env = TestEnv::with_surface(Surface::Github);
    let fake = env.github();
    fake.create_issues_on_demand(false);
    for n in 1..=FLEET_READY {
        fake.create_issue(n, &format!("Ready issue {n}"), &[FRONTIER]);
    }
    let slots = agents.to_string();
    let fleet: Vec<Repo<'_>> = (0..agents)
        .map(|n| {
            let repo = env.clone(&format!("agent-{n:02}"));
            repo.git(&["config", "maverick.dispatchSlots", &slots]);
            // The settle delay outlasts the list lag, as the product's
            // default does GitHub's (the test clones' 200 ms would not).
            repo.git(&["config", "--unset", "maverick.settleDelay"]);
            // One agent's pacing pause moves the clock every agent shares
            // (that is how the test lets time pass): a request another
            // agent has in flight must not count that as its own timeout.
            repo.git(&["config", "maverick.httpTimeout", "10m"]);
            repo
        })
        .collect();
    fake.set_list_lag(std::time::Duration::from_secs(2));
    fake.set_secondary_limits(Some(SecondaryLimits {
        edits_are_content,
        ..SecondaryLimits::github()
    }));
    fake.reset_count();
    let args = ["--json", "dispatch"];
    let (clock_start, real_start) = (env.clock().unix_millis(), Instant::now());
    let children: Vec<Child> = fleet
        .iter()
        .map(|repo| {
            repo.command(&args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("git-maverick starts")
        })
        .collect();
    let runs: Vec<Run> = children
        .into_iter()
        .map(|child| Run::from_output(&args, child.wait_with_output().expect("maverick finishes")))
        .collect();
    let test_clock_secs = (env.clock().unix_millis() - clock_start) as f64 / 1000.0;
    let real_secs = real_start.elapsed().as_secs_f64();
    let issues = runs
        .iter()
        .map(|run| match run.code {
            0 => Some(run.json()["issue"].as_u64().expect("a dispatched issue")),
            9 => {
                assert_eq!(run.json()["result"], "no_slot", "{}", run.stdout);
                None
            }
            // Waiting in the token's queue for GitHub's limits is not losing
            // the settle: no agent runs out of its budget ("lost", exit 6).
            _ => panic!("neither an issue nor \"no slot\": {}", run.screen()),
        })
        .collect::<Vec<Option<u64>>>();
    // Nothing half-written: `agent-wip` is on the dispatched issues alone.
    let labelled: Vec<u64> = (1..=FLEET_READY)
        .filter(|n| fake.labels(*n).iter().any(|l| l == "agent-wip"))
        .collect();
    let mut dispatched: Vec<u64> = issues.iter().flatten().copied().collect();
    dispatched.sort_unstable();
    assert_eq!(
        labelled, dispatched,
        "agent-wip only where an agent was dispatched"
    );
    let no_slot = runs.iter().filter(|r| r.code == 9).count();
    FleetStart {
        issues,
        no_slot,
        peaks: fake.secondary_peaks(),
        test_clock_secs,
        real_secs,
        requests: fake.request_count(),
    }
}

/// A fleet of 32 agents dispatching at once, with GitHub's secondary limits
/// on and list lag: every agent gets a distinct issue or a clear "no slot"
/// (none runs out of its settle budget while it waits for the token's
/// turn), nothing is half-written, no limit answer goes unheeded, no window
/// passes a published limit, and the time it took is reported.
/// `MAVERICK_FLEET_REPORT=FILE` writes the report there (the bench).
#[test]
fn a_fleet_starting_together_stays_within_githubs_secondary_limits() {
    let limits = SecondaryLimits::github();
    let mut report = String::new();
    let readings: &[bool] = if std::env::var_os("MAVERICK_FLEET_REPORT").is_some() {
        &[true, false]
    } else {
        &[true]
    };
    for &edits_are_content in readings {
        let agents = std::env::var("MAVERICK_FLEET_AGENTS")
            .map(|n| n.parse().expect("MAVERICK_FLEET_AGENTS: a number"))
            .unwrap_or(FLEET);
        let start = fleet_start(agents, edits_are_content);
        report.push_str(&start.report(edits_are_content));
        let mut dispatched: Vec<u64> = start.issues.iter().flatten().copied().collect();
        let count = dispatched.len();
        dispatched.sort_unstable();
        dispatched.dedup();
        assert_eq!(
            dispatched.len(),
            count,
            "two agents got one issue: {start:?}"
        );
        // A slot for every agent, and an issue for each while they last.
        assert_eq!(count, agents.min(FLEET_READY as usize), "{start:?}");
        let peaks = start.peaks;
        assert_eq!(peaks.unheeded, 0, "a limit answer went unheeded: {start:?}");
        assert!(
            peaks.points_per_minute <= limits.points_per_minute,
            "{start:?}"
        );
        assert!(
            peaks.content_per_minute.0 <= limits.content_per_minute,
            "{start:?}"
        );
        assert!(
            peaks.content_per_hour.0 <= limits.content_per_hour,
            "{start:?}"
        );
        assert!(peaks.concurrent <= limits.concurrent, "{start:?}");
        // Paced, not refused: the fleet shares its token's budget instead
        // of spending it and meeting GitHub's answer.
        assert_eq!(peaks.limit_answers, 0, "{start:?}");
    }
    eprintln!("{report}");
    if let Some(path) = std::env::var_os("MAVERICK_FLEET_REPORT") {
        std::fs::write(path, &report).expect("write the fleet report");
    }
}

/// An hour of agents, priced from one agent's measured cycle: under the
/// strict reading (comment edits generate content) the content limit binds
/// first, and holds a token to fewer agents than the primary limit does.
#[test]
fn the_binding_limit_of_an_agents_hour_is_named() {
    let costs = measure(10);
    let under = agents_under_each_limit(&costs);
    eprintln!("{under:?}");
    let of = |prefix: &str| {
        under
            .iter()
            .find(|(limit, _)| limit.starts_with(prefix))
            .map(|(_, agents)| *agents)
            .expect("every limit priced")
    };
    assert!(of("content, strict") <= of("content, lenient"));
    assert!(of("content, strict") < of("primary"), "{under:?}");
    assert_eq!(
        under[0].0,
        "content, strict (500 an hour, comment edits count)"
    );
    // A heartbeat writes nothing while the lease has time enough left, and
    // its lease (one comment edit) when it is due: a third of them with
    // the defaults.
    assert_eq!(
        costs["coord heartbeat"].content,
        (0, 0),
        "{:?}",
        costs["coord heartbeat"]
    );
    assert_eq!(
        costs["coord heartbeat (lease due)"].content,
        (1, 0),
        "{:?}",
        costs["coord heartbeat (lease due)"]
    );
    assert_eq!(heartbeats_an_hour(), (30, 10));
}

/// A rate limit GitHub named and that is longer than maverick waits stops
/// the process that met it with a clear error, and is written to the
/// token's pacing ledger all the same: another process on the token stops
/// before it sends anything, instead of asking and meeting the limit too.
#[test]
fn a_limit_longer_than_maverick_waits_stops_every_process_on_the_token_before_it_sends() {
    let env = TestEnv::with_surface(Surface::Github);
    let fake = env.github();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice.maverick(&["coord", "read", "1"]).expect(0);
    // The token is spent for an hour.
    fake.primary_rate_limit_next(1, 3600);
    let refused = |repo: &Repo<'_>| {
        let run = repo.maverick(&["coord", "read", "1"]);
        run.expect(1);
        assert!(
            run.stderr.contains("rate limit holds until"),
            "{}",
            run.stderr
        );
    };
    refused(&alice);
    fake.reset_count();
    refused(&bob);
    assert_eq!(fake.request_count(), 0, "bob sent: {:?}", fake.requests());
}
