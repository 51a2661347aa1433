//! One deterministic simulator for the protocols, in memory, over the
//! library's `Surface` trait: one seeded [`Schedule`] and one memory surface
//! ([`SimSurface`] over a shared [`World`]) with lag settings and a call log.
//!
//! Every actor (an instance running a protocol) is a thread, but only one
//! runs at a time: every surface call is a step, and the schedule's seeded
//! generator picks which waiting actor takes the next one. So a seed is an
//! interleaving, and [`for_each_seed`] replays the one a failure names
//! (`MAVERICK_SEED=<seed>`).
//!
//! The world has GitHub's weaknesses where a test asks for them ([`Lag`]):
//! no compare-and-swap (a guard sees one read, and others may write right
//! after it), every op its own request, comment ids not dense, new comments
//! unseen by reads for some steps, label lists behind the labels. And it
//! has a dying machine's faults where a test asks for them ([`Faults`], in
//! [`SimSurface::call`], the one place every call passes): an actor that
//! crashes between two calls and never runs again, and an answer lost after
//! the request acted (the caller sees an error).
#![allow(dead_code)]

use std::collections::{BTreeMap, VecDeque};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex, MutexGuard};
use std::thread::Thread;

use crate::support::mav::surface::{
    apply_membership, Applied, CiStatus, Comment, Guard, Issue, IssueSummary, Op, PullRequest,
    Surface, SurfaceError, Write,
};
use crate::support::mav::timefmt::Timestamp;

/// xorshift64*: small, fast, and the same on every machine.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// Runs `run(seed)` for every seed (`MAVERICK_SEED=N` replays one,
/// `MAVERICK_SEEDS=N` explores the first N instead of `seeds`); a failure
/// names the seed that replays it.
pub fn for_each_seed(seeds: impl IntoIterator<Item = u64>, mut run: impl FnMut(u64)) {
    let seeds: Vec<u64> = match std::env::var("MAVERICK_SEED") {
        Ok(seed) => vec![seed.parse().expect("MAVERICK_SEED is a number")],
        Err(_) => match std::env::var("MAVERICK_SEEDS") {
            Ok(n) => (0..n.parse().expect("MAVERICK_SEEDS is a number")).collect(),
            Err(_) => seeds.into_iter().collect(),
        },
    };
    for seed in seeds {
        if let Err(panic) = catch_unwind(AssertUnwindSafe(|| run(seed))) {
            eprintln!("the simulation failed at seed {seed}; replay it with MAVERICK_SEED={seed}");
            resume_unwind(panic);
        }
    }
}

/// Lets exactly one actor run at a time, chosen by a seeded generator once
/// every live actor waits for its next step.
///
/// The hand-off is a flag and `Thread::unpark` per actor: the actor picked
/// wakes without taking the lock again (a condvar wait would), so a step
/// costs one futex wake and one wait, the least two threads can do.
pub struct Schedule {
    state: Mutex<ScheduleState>,
    /// One per actor, set when the schedule gives it the next step.
    go: Vec<AtomicBool>,
}

struct ScheduleState {
    alive: usize,
    /// Which actors wait for a step, by actor (picked in actor order).
    waiting: Vec<bool>,
    waiting_count: usize,
    running: Option<usize>,
    rng: Rng,
    /// The thread of each actor that has asked for a step, to wake it.
    threads: Vec<Option<Thread>>,
}

impl Schedule {
    pub fn new(seed: u64, actors: usize) -> Arc<Schedule> {
        Arc::new(Schedule {
            state: Mutex::new(ScheduleState {
                alive: actors,
                waiting: vec![false; actors],
                waiting_count: 0,
                running: None,
                rng: Rng::new(seed),
                threads: vec![None; actors],
            }),
            go: (0..actors).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, ScheduleState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn pick(&self, state: &mut ScheduleState) {
        if state.running.is_none() && state.waiting_count > 0 && state.waiting_count == state.alive
        {
            // The same draw as ever: the index-th waiting actor in actor
            // order, so a seed keeps its interleaving.
            let index = state.rng.below(state.waiting_count as u64) as usize;
            let next = (0..state.waiting.len())
                .filter(|a| state.waiting[*a])
                .nth(index)
                .unwrap();
            state.waiting[next] = false;
            state.waiting_count -= 1;
            state.running = Some(next);
            self.go[next].store(true, Ordering::Release);
            state.threads[next]
                .as_ref()
                .expect("a waiting actor named its thread")
                .unpark();
        }
    }

    /// Waits until the schedule gives `actor` the next step.
    pub fn step(&self, actor: usize) {
        {
            let mut state = self.lock();
            if state.running == Some(actor) {
                state.running = None;
            }
            if state.threads[actor].is_none() {
                state.threads[actor] = Some(std::thread::current());
            }
            state.waiting[actor] = true;
            state.waiting_count += 1;
            self.pick(&mut state);
        }
        // `park` may return early (a token left from an earlier use of a
        // pooled thread, or spuriously): only the flag says it is our turn.
        while !self.go[actor].swap(false, Ordering::Acquire) {
            std::thread::park();
        }
    }

    /// `actor` takes no more steps.
    pub fn finish(&self, actor: usize) {
        let mut state = self.lock();
        state.alive -= 1;
        if state.running == Some(actor) {
            state.running = None;
        }
        self.pick(&mut state);
    }

    /// Runs `body` as `actor` on a thread of its own while it runs (a
    /// pooled one: a new OS thread per actor per seed was a good part of
    /// the simulator's system time); the actor finishes when the body
    /// returns or panics, so one panicking actor never hangs the rest.
    pub fn spawn<T: Send + 'static>(
        self: &Arc<Schedule>,
        actor: usize,
        body: impl FnOnce() -> T + Send + 'static,
    ) -> Actor<T> {
        struct Finish(Arc<Schedule>, usize);
        impl Drop for Finish {
            fn drop(&mut self) {
                self.0.finish(self.1);
            }
        }
        let finish = Finish(Arc::clone(self), actor);
        let (send, receive) = mpsc::channel();
        pool_run(Box::new(move || {
            let out = catch_unwind(AssertUnwindSafe(body));
            drop(finish);
            let _ = send.send(out);
        }));
        Actor(receive)
    }
}

/// A spawned actor, to join as a thread is joined.
pub struct Actor<T>(mpsc::Receiver<std::thread::Result<T>>);

impl<T> Actor<T> {
    /// The body's value, or the panic it unwound with.
    pub fn join(self) -> std::thread::Result<T> {
        self.0
            .recv()
            .expect("a pooled actor always sends its outcome")
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Idle pooled threads, each waiting on its own channel for a job.
static POOL: Mutex<Vec<mpsc::Sender<Job>>> = Mutex::new(Vec::new());

/// Runs `job` on an idle pooled thread, or a new one when none is idle;
/// the thread goes back to the pool when the job is done.
fn pool_run(job: Job) {
    let idle = POOL.lock().unwrap_or_else(|e| e.into_inner()).pop();
    let job = match idle {
        Some(worker) => match worker.send(job) {
            Ok(()) => return,
            Err(mpsc::SendError(job)) => job,
        },
        None => job,
    };
    std::thread::spawn(move || {
        let (send, receive) = mpsc::channel::<Job>();
        let mut job = Some(job);
        while let Some(run) = job.take() {
            // The job catches its body's panics itself.
            run();
            POOL.lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(send.clone());
            job = receive.recv().ok();
        }
    });
}

/// How far the world's reads lag its writes, in steps.
#[derive(Clone, Copy, Debug, Default)]
pub struct Lag {
    /// A new comment stays unseen by reads for up to this many steps
    /// (each comment its own, drawn from the world's generator).
    pub comments: u64,
    /// Label lists (`list`) show the labels as of this many steps ago.
    pub lists: usize,
}

/// Faults the world injects at surface calls, each a chance in a thousand
/// per call (none by default).
#[derive(Clone, Copy, Debug, Default)]
pub struct Faults {
    /// The actor crashes before the call: it stops for good, as `kill -9`
    /// leaves it (its thread unwinds with [`Crashed`]).
    pub crash: u64,
    /// The request acts, but its answer is lost: the caller sees an error.
    /// (The clock asks nothing, so it never loses an answer.)
    pub lost_answer: u64,
}

/// What a crashed actor unwinds with; `Actor::join` returns it.
#[derive(Debug)]
pub struct Crashed;

/// Whether a joined actor crashed (`Ok(false)`: it finished), or the panic
/// of a real failure to pass on.
pub fn crashed<T>(joined: std::thread::Result<T>) -> Result<T, ()> {
    match joined {
        Ok(out) => Ok(out),
        Err(panic) if panic.is::<Crashed>() => Err(()),
        Err(panic) => resume_unwind(panic),
    }
}

/// The shared state every actor's surface reads and writes.
pub struct World {
    pub issues: BTreeMap<u64, Issue>,
    pub pulls: Vec<PullRequest>,
    /// Surface calls so far.
    pub steps: u64,
    /// What was asked of the surface, in order (the clock is not asked).
    pub log: Vec<String>,
    /// The step from which reads show each comment (by id).
    visible_from: BTreeMap<u64, u64>,
    label_history: VecDeque<BTreeMap<u64, Vec<String>>>,
    lag: Lag,
    epoch: i64,
    steps_per_second: u64,
    next_comment_id: u64,
    rng: Rng,
    never: Vec<&'static str>,
    /// The faults injected from now on (a test may turn them off).
    pub faults: Faults,
    fault_rng: Rng,
    /// Who crashed, and the world's time when it did.
    pub crashed: BTreeMap<String, Timestamp>,
    /// The log names the actor of every call, the clock's too.
    named_log: bool,
    /// A guarded write is one compare-and-swap, as on the git surface.
    compare_and_swap: bool,
}

impl World {
    /// An empty world at 2026-09-21, one second per step, without lag.
    pub fn new(seed: u64) -> World {
        World {
            issues: BTreeMap::new(),
            pulls: Vec::new(),
            steps: 0,
            log: Vec::new(),
            visible_from: BTreeMap::new(),
            label_history: VecDeque::new(),
            lag: Lag::default(),
            epoch: 1_790_000_000,
            steps_per_second: 1,
            next_comment_id: 1_000,
            rng: Rng::new(seed ^ 0x5EED),
            never: Vec::new(),
            faults: Faults::default(),
            fault_rng: Rng::new(seed ^ 0xFA17),
            crashed: BTreeMap::new(),
            named_log: false,
            compare_and_swap: false,
        }
    }

    /// The git surface's strength: a guarded write checks its guard on the
    /// current state and applies every op in the same step (one
    /// compare-and-swap of the surface ref), so nobody writes in between.
    pub fn with_compare_and_swap(mut self) -> World {
        self.compare_and_swap = true;
        self
    }

    pub fn with_lag(mut self, lag: Lag) -> World {
        self.lag = lag;
        self
    }

    /// The clock starts at `epoch` and moves one second every
    /// `steps_per_second` steps (more than one: calls share a second).
    pub fn with_clock(mut self, epoch: i64, steps_per_second: u64) -> World {
        self.epoch = epoch;
        self.steps_per_second = steps_per_second.max(1);
        self
    }

    pub fn with_faults(mut self, faults: Faults) -> World {
        self.faults = faults;
        self
    }

    /// Every log line names its actor, and the clock's steps are logged too
    /// (a trace to read when a seed fails).
    pub fn with_named_log(mut self) -> World {
        self.named_log = true;
        self
    }

    /// Draws a fault that has `per_mille` chances in a thousand (no draw at 0,
    /// so a world without faults replays as before).
    fn fault(&mut self, per_mille: u64) -> bool {
        per_mille > 0 && self.fault_rng.below(1000) < per_mille
    }

    /// Calls (`list`, `write`, `pulls`, ...) the code under test must never
    /// make: the surface panics on them.
    pub fn never(mut self, calls: &[&'static str]) -> World {
        self.never.extend(calls);
        self
    }

    pub fn shared(self) -> Arc<Mutex<World>> {
        Arc::new(Mutex::new(self))
    }

    pub fn now(&self) -> Timestamp {
        Timestamp(self.epoch + (self.steps / self.steps_per_second) as i64)
    }

    /// Lets `steps` steps pass with no call (lagging reads catch up).
    pub fn advance(&mut self, steps: u64) {
        for _ in 0..steps {
            self.tick();
        }
    }

    fn tick(&mut self) {
        self.steps += 1;
        if self.lag.lists > 0 {
            let labels = self
                .issues
                .iter()
                .map(|(n, i)| (*n, i.labels.clone()))
                .collect();
            self.label_history.push_back(labels);
            while self.label_history.len() > self.lag.lists + 1 {
                self.label_history.pop_front();
            }
        }
    }

    /// The issue, created open and empty when first named (as on the git surface).
    pub fn issue_mut(&mut self, number: u64) -> &mut Issue {
        self.issues.entry(number).or_insert_with(|| Issue {
            number,
            open: true,
            is_pull: false,
            labels: Vec::new(),
            assignees: Vec::new(),
            comments: Vec::new(),
        })
    }

    /// Puts a comment on an issue, seen at once (the state a test starts from).
    pub fn push_comment(&mut self, issue: u64, comment: Comment) {
        self.next_comment_id = self.next_comment_id.max(comment.id);
        self.issue_mut(issue).comments.push(comment);
    }

    /// An issue as a read shows it now: without the comments still lagging.
    pub fn view(&mut self, number: u64) -> Issue {
        let steps = self.steps;
        let mut issue = self.issue_mut(number).clone();
        let visible = &self.visible_from;
        issue
            .comments
            .retain(|c| visible.get(&c.id).is_none_or(|from| *from <= steps));
        issue
    }

    fn summary(issue: &Issue, labels: Vec<String>) -> IssueSummary {
        IssueSummary {
            number: issue.number,
            open: issue.open,
            is_pull: issue.is_pull,
            labels,
            assignees: issue.assignees.clone(),
            updated_at: None,
            comments: None,
        }
    }

    fn list(&self, labels: &[&str], include_closed: bool) -> Vec<IssueSummary> {
        let lagged = (self.lag.lists > 0).then(|| self.label_history.front());
        self.issues
            .values()
            .filter(|i| include_closed || i.open)
            .filter_map(|i| {
                let seen = match lagged {
                    Some(history) => history?.get(&i.number)?.clone(),
                    None => i.labels.clone(),
                };
                labels
                    .iter()
                    .all(|l| seen.iter().any(|s| s == l))
                    .then(|| World::summary(i, seen))
            })
            .collect()
    }

    fn apply(&mut self, issue: u64, op: &Op, me: &str) -> Applied {
        let now = self.now();
        match op {
            Op::CreateComment(body) => {
                // GitHub's comment ids grow, but not one by one.
                self.next_comment_id += 1 + self.rng.below(3);
                let lag = self.rng.below(self.lag.comments + 1);
                let comment = Comment {
                    id: self.next_comment_id,
                    author: me.to_owned(),
                    trusted: true,
                    body: body.clone(),
                    created_at: now,
                    updated_at: now,
                };
                self.visible_from.insert(comment.id, self.steps + lag);
                self.issue_mut(issue).comments.push(comment.clone());
                Applied::Comment(comment)
            }
            Op::UpdateComment { id, body } => {
                let comment = self
                    .issue_mut(issue)
                    .comments
                    .iter_mut()
                    .find(|c| c.id == *id)
                    .unwrap_or_else(|| panic!("no comment {id} on #{issue}"));
                comment.body = body.clone();
                comment.updated_at = now;
                Applied::Comment(comment.clone())
            }
            membership => {
                let issue = self.issue_mut(issue);
                apply_membership(membership, &mut issue.labels, &mut issue.assignees)
                    .unwrap_or_else(|| panic!("the simulator does not know {membership:?}"))
            }
        }
    }
}

/// One actor's view of the world: the library's `Surface`, GitHub-like.
pub struct SimSurface {
    pub world: Arc<Mutex<World>>,
    schedule: Option<(Arc<Schedule>, usize)>,
    me: String,
}

impl SimSurface {
    /// A surface whose calls run when made (one actor, no schedule).
    pub fn new(world: &Arc<Mutex<World>>, me: &str) -> SimSurface {
        SimSurface {
            world: Arc::clone(world),
            schedule: None,
            me: me.to_owned(),
        }
    }

    /// A surface whose every call is a step of `actor` under `schedule`.
    pub fn scheduled(
        world: &Arc<Mutex<World>>,
        schedule: &Arc<Schedule>,
        actor: usize,
        me: &str,
    ) -> SimSurface {
        SimSurface {
            schedule: Some((Arc::clone(schedule), actor)),
            ..SimSurface::new(world, me)
        }
    }

    fn world(&self) -> MutexGuard<'_, World> {
        self.world.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One surface call: wait for the turn, maybe crash, log the requests
    /// it makes (`what`), act on the world, let a step pass, maybe lose the
    /// answer.
    fn call<T>(
        &self,
        what: Vec<String>,
        act: impl FnOnce(&mut World) -> T,
    ) -> Result<T, SurfaceError> {
        if let Some((schedule, actor)) = &self.schedule {
            schedule.step(*actor);
        }
        let mut world = self.world();
        let crash = world.faults.crash;
        if world.fault(crash) {
            let now = world.now();
            world.crashed.insert(self.me.clone(), now);
            world.log.push(format!("crash {}", self.me));
            drop(world);
            // No panic message, no destructor that writes: the actor is gone.
            resume_unwind(Box::new(Crashed));
        }
        if what.is_empty() && world.named_log {
            let line = format!("{}: now", self.me);
            world.log.push(line);
        }
        for request in &what {
            let kind = request.split(' ').next().unwrap_or_default();
            assert!(
                !world.never.contains(&kind),
                "{} asked the surface for `{request}`, which it must never do",
                self.me
            );
            let line = match world.named_log {
                true => format!("{}: {request}", self.me),
                false => request.clone(),
            };
            world.log.push(line);
        }
        let out = act(&mut world);
        world.tick();
        let lost = world.faults.lost_answer;
        if !what.is_empty() && world.fault(lost) {
            world.log.push(format!("lost answer to {}", self.me));
            return Err(SurfaceError::Other(format!(
                "the answer to `{}` was lost",
                what.join(", ")
            )));
        }
        Ok(out)
    }
}

impl Surface for SimSurface {
    fn describe(&self) -> String {
        "simulated surface".into()
    }

    /// The world's clock: a step (others may run), but no request.
    fn now(&self) -> Result<Timestamp, SurfaceError> {
        self.call(Vec::new(), |w| w.now())
    }

    fn me(&self) -> &str {
        &self.me
    }

    fn issues(&self, numbers: &[u64]) -> Result<Vec<Issue>, SurfaceError> {
        // One request per issue's comments, as on GitHub.
        let what = numbers.iter().map(|n| format!("comments #{n}")).collect();
        self.call(what, |w| numbers.iter().map(|n| w.view(*n)).collect())
    }

    fn summaries(&self, numbers: &[u64]) -> Result<Vec<IssueSummary>, SurfaceError> {
        self.call(vec!["summaries".into()], |w| {
            numbers
                .iter()
                .map(|n| {
                    let issue = w.issue_mut(*n).clone();
                    World::summary(&issue, issue.labels.clone())
                })
                .collect()
        })
    }

    fn list(
        &self,
        labels: &[&str],
        include_closed: bool,
    ) -> Result<Vec<IssueSummary>, SurfaceError> {
        self.call(vec![format!("list {}", labels.join(","))], |w| {
            w.list(labels, include_closed)
        })
    }

    /// No compare-and-swap: the guard sees one (lagging) read, then every op
    /// is its own request, as on GitHub. In a world
    /// [`World::with_compare_and_swap`], the guard and every op are one step
    /// on the current state, as on the git surface.
    fn write(
        &self,
        writes: &[Write],
        guard: Option<Guard<'_>>,
    ) -> Result<Option<Vec<Vec<Applied>>>, SurfaceError> {
        if self.world().compare_and_swap {
            return self.call(vec!["write cas".into()], |w| {
                if let Some(guard) = guard {
                    let current: Vec<Issue> = writes
                        .iter()
                        .map(|x| w.issue_mut(x.issue).clone())
                        .collect();
                    let now = w.now();
                    if !guard(&current, now) {
                        return None;
                    }
                }
                let applied = writes
                    .iter()
                    .map(|write| {
                        write
                            .ops
                            .iter()
                            .map(|op| w.apply(write.issue, op, &self.me))
                            .collect()
                    })
                    .collect();
                Some(applied)
            });
        }
        if let Some(guard) = guard {
            let (current, now) = self.call(vec!["write guard".into()], |w| {
                let current: Vec<Issue> = writes.iter().map(|x| w.view(x.issue)).collect();
                (current, w.now())
            })?;
            if !guard(&current, now) {
                return Ok(None);
            }
        }
        let mut results = Vec::new();
        for write in writes {
            let mut applied = Vec::new();
            for op in &write.ops {
                let what = format!("write #{} {}", write.issue, op_name(op));
                applied.push(self.call(vec![what], |w| w.apply(write.issue, op, &self.me))?);
            }
            results.push(applied);
        }
        Ok(Some(results))
    }

    /// GitHub's list of the repository's recent comments, one request, as
    /// lagging as every comment read; none in a world with
    /// compare-and-swap (the git surface reads the issues themselves).
    fn comments_since(
        &self,
        since: Timestamp,
    ) -> Result<Option<Vec<(u64, Comment)>>, SurfaceError> {
        if self.world().compare_and_swap {
            return Ok(None);
        }
        self.call(vec!["recent comments".into()], |w| {
            let numbers: Vec<u64> = w.issues.keys().copied().collect();
            let mut recent: Vec<(u64, Comment)> = numbers
                .into_iter()
                .flat_map(|n| {
                    w.view(n)
                        .comments
                        .into_iter()
                        .filter(|c| c.updated_at >= since)
                        .map(move |c| (n, c))
                })
                .collect();
            recent.sort_by_key(|(_, c)| c.id);
            Some(recent)
        })
    }

    fn open_pulls(&self) -> Result<Vec<PullRequest>, SurfaceError> {
        self.call(vec!["pulls".into()], |w| w.pulls.clone())
    }

    /// Every commit's CI passed.
    fn ci_status(&self, shas: &[String]) -> Result<Vec<Option<CiStatus>>, SurfaceError> {
        self.call(vec![format!("ci x{}", shas.len())], |_| {
            shas.iter()
                .map(|sha| {
                    Some(CiStatus {
                        sha: sha.clone(),
                        state: "success".into(),
                        combined: Some("success".into()),
                        check_runs: Vec::new(),
                    })
                })
                .collect()
        })
    }
}

fn op_name(op: &Op) -> &'static str {
    match op {
        Op::CreateComment(_) => "create-comment",
        Op::UpdateComment { .. } => "update-comment",
        _ => "membership",
    }
}
