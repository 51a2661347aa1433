//! The dispatch settle under a seeded, deterministic schedule, on an
//! in-memory surface with GitHub's weaknesses: a guard is only checked on a
//! read before the write, every op is its own request (so other dispatchers
//! run between a claim comment and its label), comments created in the same
//! second tie on `created_at`, and label lists lag behind writes.
//!
//! Each dispatcher is a thread, but only one runs at a time: every surface
//! call is a step, and a seeded generator picks which waiting thread takes
//! the next one. A failing interleaving is replayed with
//! `MAVERICK_SEED=<seed> cargo test --test dispatch_schedule`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use maverick::config::{Settings, SurfaceKind};
use maverick::coord::dispatch::{analyze, DispatchResult, Dispatcher, Ledger, ReleaseHow};
use maverick::surface::{
    apply_membership, Applied, Comment, Guard, Issue, IssueSummary, Op, Surface, SurfaceError,
    Write,
};
use maverick::timefmt::Timestamp;

const SLOTS: u32 = 3;
const ISSUES: u64 = 10;
const DISPATCHERS: usize = 6;
const ROUNDS: usize = 4;
/// The surface's clock moves one second every this many steps, so that some
/// claims share a second and only their comment ids order them.
const STEPS_PER_SECOND: u64 = 9;
/// How many steps a label list lags behind the labels.
const LIST_LAG: usize = 12;

/// Lets exactly one registered thread run at a time, chosen by a seeded generator.
struct Schedule {
    state: Mutex<ScheduleState>,
    turn: Condvar,
}

struct ScheduleState {
    alive: usize,
    waiting: BTreeSet<usize>,
    running: Option<usize>,
    rng: u64,
}

impl Schedule {
    fn new(seed: u64, threads: usize) -> Schedule {
        Schedule {
            state: Mutex::new(ScheduleState {
                alive: threads,
                waiting: BTreeSet::new(),
                running: None,
                rng: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            }),
            turn: Condvar::new(),
        }
    }

    fn pick(state: &mut ScheduleState) {
        if state.running.is_none()
            && !state.waiting.is_empty()
            && state.waiting.len() == state.alive
        {
            // xorshift64*
            state.rng ^= state.rng >> 12;
            state.rng ^= state.rng << 25;
            state.rng ^= state.rng >> 27;
            let r = state.rng.wrapping_mul(0x2545_F491_4F6C_DD1D);
            let index = (r % state.waiting.len() as u64) as usize;
            let next = *state.waiting.iter().nth(index).unwrap();
            state.waiting.remove(&next);
            state.running = Some(next);
        }
    }

    /// Waits until the schedule gives `thread` the next step.
    fn step(&self, thread: usize) {
        let mut state = self.state.lock().unwrap();
        if state.running == Some(thread) {
            state.running = None;
        }
        state.waiting.insert(thread);
        Schedule::pick(&mut state);
        self.turn.notify_all();
        while state.running != Some(thread) {
            state = self.turn.wait(state).unwrap();
        }
    }

    fn finish(&self, thread: usize) {
        let mut state = self.state.lock().unwrap();
        state.alive -= 1;
        if state.running == Some(thread) {
            state.running = None;
        }
        Schedule::pick(&mut state);
        self.turn.notify_all();
    }
}

#[derive(Default)]
struct Store {
    issues: BTreeMap<u64, Issue>,
    next_comment_id: u64,
    steps: u64,
    /// Labels per issue as of each past step, newest last, for lagging lists.
    label_history: Vec<BTreeMap<u64, Vec<String>>>,
}

impl Store {
    fn now(&self) -> Timestamp {
        Timestamp(1_800_000_000 + (self.steps / STEPS_PER_SECOND) as i64)
    }

    fn tick(&mut self) {
        self.steps += 1;
        let labels = self
            .issues
            .iter()
            .map(|(n, i)| (*n, i.labels.clone()))
            .collect();
        self.label_history.push(labels);
        if self.label_history.len() > LIST_LAG + 1 {
            self.label_history.remove(0);
        }
    }

    fn issue_mut(&mut self, number: u64) -> &mut Issue {
        self.issues.entry(number).or_insert_with(|| Issue {
            number,
            open: true,
            is_pull: false,
            labels: Vec::new(),
            assignees: Vec::new(),
            comments: Vec::new(),
        })
    }
}

/// The in-memory surface as one dispatcher sees it.
struct Handle {
    store: Arc<Mutex<Store>>,
    schedule: Arc<Schedule>,
    thread: usize,
    me: String,
}

impl Handle {
    fn step(&self) -> std::sync::MutexGuard<'_, Store> {
        self.schedule.step(self.thread);
        let mut store = self.store.lock().unwrap();
        store.tick();
        store
    }
}

impl Surface for Handle {
    fn describe(&self) -> String {
        "in-memory surface".to_owned()
    }

    fn now(&self) -> Result<Timestamp, SurfaceError> {
        Ok(self.step().now())
    }

    fn me(&self) -> &str {
        &self.me
    }

    fn issues(&self, numbers: &[u64]) -> Result<Vec<Issue>, SurfaceError> {
        let mut store = self.step();
        Ok(numbers
            .iter()
            .map(|n| store.issue_mut(*n).clone())
            .collect())
    }

    fn list(
        &self,
        labels: &[&str],
        include_closed: bool,
    ) -> Result<Vec<IssueSummary>, SurfaceError> {
        let store = self.step();
        let lagged = store.label_history.first().cloned().unwrap_or_default();
        Ok(store
            .issues
            .values()
            .filter(|i| include_closed || i.open)
            .filter_map(|i| {
                let seen = lagged.get(&i.number)?;
                labels
                    .iter()
                    .all(|l| seen.iter().any(|s| s == l))
                    .then(|| IssueSummary {
                        number: i.number,
                        open: i.open,
                        is_pull: i.is_pull,
                        labels: seen.clone(),
                        assignees: i.assignees.clone(),
                    })
            })
            .collect())
    }

    /// GitHub-like: the guard sees one fresh read, then every op is its own request.
    fn write(
        &self,
        writes: &[Write],
        guard: Option<Guard<'_>>,
    ) -> Result<Option<Vec<Vec<Applied>>>, SurfaceError> {
        if let Some(guard) = guard {
            let (current, now) = {
                let mut store = self.step();
                let current: Vec<Issue> = writes
                    .iter()
                    .map(|w| store.issue_mut(w.issue).clone())
                    .collect();
                (current, store.now())
            };
            if !guard(&current, now) {
                return Ok(None);
            }
        }
        let mut results = Vec::new();
        for write in writes {
            let mut applied = Vec::new();
            for op in &write.ops {
                let mut store = self.step();
                let now = store.now();
                store.next_comment_id += 1;
                let id = store.next_comment_id;
                let issue = store.issue_mut(write.issue);
                if let Some(done) = apply_membership(op, &mut issue.labels, &mut issue.assignees) {
                    applied.push(done);
                    continue;
                }
                applied.push(match op {
                    Op::CreateComment(body) => {
                        let comment = Comment {
                            id,
                            author: self.me.clone(),
                            trusted: true,
                            body: body.clone(),
                            created_at: now,
                            updated_at: now,
                        };
                        issue.comments.push(comment.clone());
                        Applied::Comment(comment)
                    }
                    other => panic!("dispatch does not use {other:?}"),
                });
            }
            results.push(applied);
        }
        Ok(Some(results))
    }
}

fn settings(instance: &str) -> Settings {
    Settings {
        settle_delay: Duration::ZERO,
        dispatch_slots: SLOTS,
        ..Settings::defaults(SurfaceKind::Github, instance)
    }
}

struct Won {
    issue: u64,
    marker_id: String,
}

/// How an earlier winner's cycle ends while the next round races.
fn ending(won: &Won) -> ReleaseHow {
    if won.issue % 2 == 0 {
        ReleaseHow::PullRequest(100 + won.issue)
    } else {
        ReleaseHow::Done
    }
}

/// Runs `DISPATCHERS` dispatches under the schedule of `seed`, while one more
/// thread releases the winners of the round before; returns the new winners.
fn race(store: &Arc<Mutex<Store>>, seed: u64, releasing: Vec<Won>) -> (Vec<Won>, usize) {
    let schedule = Arc::new(Schedule::new(seed, DISPATCHERS + 1));
    let handle_for = |thread: usize, me: &str| Handle {
        store: Arc::clone(store),
        schedule: Arc::clone(&schedule),
        thread,
        me: me.to_owned(),
    };
    let releaser = {
        let surface = handle_for(DISPATCHERS, "agent");
        std::thread::spawn(move || {
            let settings = settings("agent");
            let dispatcher = Dispatcher::new(&surface, &settings, None);
            for won in &releasing {
                dispatcher.release(won.issue, &ending(won)).unwrap();
            }
            surface.schedule.finish(DISPATCHERS);
        })
    };
    let dispatchers: Vec<_> = (0..DISPATCHERS)
        .map(|thread| {
            let surface = handle_for(thread, &format!("dispatcher-{thread}"));
            std::thread::spawn(move || {
                let settings = settings(&surface.me);
                let result = Dispatcher::new(&surface, &settings, None).dispatch(false);
                surface.schedule.finish(thread);
                result.expect("the in-memory surface does not fail")
            })
        })
        .collect();
    releaser.join().expect("the releaser panicked");
    let mut winners = Vec::new();
    let mut withdrawn = 0;
    for handle in dispatchers {
        let report = handle.join().expect("a dispatcher panicked");
        withdrawn += report.withdrawn.len();
        match report.result {
            DispatchResult::Dispatched => winners.push(Won {
                issue: report.issue.unwrap(),
                marker_id: report.marker_id.unwrap(),
            }),
            DispatchResult::NoSlot => {}
            other => panic!("seed {seed}: a dispatcher ended {other:?}"),
        }
    }
    (winners, withdrawn)
}

/// Checks a settled round from the raw store, with the settle's own analysis
/// as a second opinion: every dispatcher told it won still holds, nobody
/// else does, every other claim was withdrawn or released, and `agent-wip`
/// is on exactly the winners' issues.
fn check_round(store: &Mutex<Store>, winners: &[Won], seed: u64, round: usize) {
    let context = format!("seed {seed} round {round}");
    let issues: BTreeSet<u64> = winners.iter().map(|w| w.issue).collect();
    assert_eq!(
        issues.len(),
        winners.len(),
        "{context}: two winners on one issue"
    );
    let store = store.lock().unwrap();
    let pulls: BTreeSet<u64> = store
        .issues
        .values()
        .filter(|i| i.open && i.labels.iter().any(|l| l == "agent-pr"))
        .map(|i| i.number)
        .collect();
    assert!(
        winners.len() + pulls.len() <= SLOTS as usize,
        "{context}: {} winners and {} open PRs",
        winners.len(),
        pulls.len()
    );
    if round == 0 {
        // Ten eligible issues and every slot free: every slot fills.
        assert_eq!(
            winners.len(),
            SLOTS as usize,
            "{context}: a free slot stayed free"
        );
    }
    let ledger = Ledger {
        now: store.now(),
        pulls,
        issues: store
            .issues
            .values()
            .filter(|i| i.open && !i.labels.iter().any(|l| l == "agent-pr"))
            .cloned()
            .collect(),
    };
    let view = analyze(&ledger, &settings("referee"), "agent-ready");
    let holding: BTreeSet<&str> = view
        .claims
        .iter()
        .filter(|c| c.holds())
        .map(|c| c.marker_id.as_str())
        .collect();
    let won: BTreeSet<&str> = winners.iter().map(|w| w.marker_id.as_str()).collect();
    assert_eq!(
        holding, won,
        "{context}: the referee's settle disagrees: {:#?}\n{:#?}",
        view.holders, view.claims
    );
    assert_eq!(
        view.claims.len(),
        winners.len(),
        "{context}: a losing claim is still live: {:#?}",
        view.claims
    );
    for issue in store.issues.values() {
        let labelled = issue.labels.iter().any(|l| l == "agent-wip");
        assert_eq!(
            labelled,
            issues.contains(&issue.number),
            "{context}: #{} agent-wip is {labelled}",
            issue.number
        );
    }
}

fn run_seed(seed: u64) -> usize {
    let store = Arc::new(Mutex::new(Store::default()));
    {
        let mut s = store.lock().unwrap();
        for n in 1..=ISSUES {
            s.issue_mut(n).labels.push("agent-ready".into());
        }
    }
    let mut withdrawals = 0;
    let mut releasing = Vec::new();
    for round in 0..ROUNDS {
        // The PRs of two rounds ago merged: their issues are done.
        {
            let mut s = store.lock().unwrap();
            for issue in s.issues.values_mut() {
                if issue.labels.iter().any(|l| l == "agent-pr") {
                    issue.open = false;
                }
            }
        }
        let (winners, withdrawn) = race(&store, seed * 1000 + round as u64, releasing);
        withdrawals += withdrawn;
        check_round(&store, &winners, seed, round);
        releasing = winners;
    }
    withdrawals
}

#[test]
fn the_settle_holds_under_seeded_interleavings() {
    // MAVERICK_SEED replays one schedule; MAVERICK_SEEDS=N explores more.
    let seeds: Vec<u64> = match std::env::var("MAVERICK_SEED") {
        Ok(seed) => vec![seed.parse().expect("MAVERICK_SEED is a number")],
        Err(_) => {
            let count = std::env::var("MAVERICK_SEEDS")
                .ok()
                .and_then(|n| n.parse().ok())
                .unwrap_or(150);
            (0..count).collect()
        }
    };
    let mut withdrawals = 0;
    for seed in seeds {
        withdrawals += run_seed(seed);
    }
    // The schedule really interleaves claims: many of them lose and withdraw.
    eprintln!("{withdrawals} claims lost the settle and were withdrawn");
    if std::env::var("MAVERICK_SEED").is_err() {
        assert!(withdrawals > 50, "only {withdrawals} withdrawals");
    }
}
