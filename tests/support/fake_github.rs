//! A stateful fake of the GitHub REST API (version 2022-11-28), for tests only.
//!
//! The real binary reaches it through `GITHUB_API_URL`. It answers with
//! GitHub's own shapes (they validate against `fixtures/github-api/schemas/`)
//! and reproduces the behaviours the product must survive: ids above 2^31,
//! second-precision timestamps, absolute `link` headers to
//! `/repositories/{id}/…`, ETags and 304s, replication lag on reads, 5xx
//! answers to writes that were committed anyway, and both rate limits.
//!
//! Std only: one thread per connection, HTTP/1.1 keep-alive, one mutex over
//! the whole state so that concurrent requests from many processes see a
//! linearizable GitHub (apart from the lag the test asks for).
#![allow(dead_code)]

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hash::{Hash, Hasher};
use std::io::{self, BufRead, BufReader, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use serde_json::{json, Value};

use super::mav::clock::Clock;

/// Distinctive, so a test can assert it never shows up in any output.
const TOKEN: &str = "ghp_FAKEtoken0123456789abcdefSECRET";
const DEFAULT_USER: &str = "maverick-bot";
const REPO_ID: u64 = 812_345_678;
/// Real comment ids passed 2^31 long ago; a client storing them in an i32 breaks.
const FIRST_COMMENT_ID: u64 = 2_200_000_000;
const RATE_LIMIT: u64 = 5000;
const DOCS: &str = "https://docs.github.com/rest";
const MAX_COMMENT_BODY: usize = 65536;
/// Write time of seeded state: older than any lag, so tests see it at once.
const SEEDED: i64 = i64::MIN / 4;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FakeComment {
    pub id: u64,
    pub user: String,
    pub body: String,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    /// Path and query, as sent.
    pub path: String,
    pub status: u16,
    pub had_authorization: bool,
    pub body: String,
    /// When it was answered, on the fake's clock (milliseconds since the
    /// Unix epoch).
    pub at_ms: i64,
    /// Whether GitHub would count it against the primary rate limit: a 304
    /// answer to a conditional request does not count, nor does
    /// `GET /rate_limit`, nor an answer that is itself a rate limit.
    pub counted: bool,
    /// What the request sent as `If-None-Match` / `If-Modified-Since`.
    pub if_none_match: Option<String>,
    pub if_modified_since: Option<String>,
    /// Its price against the secondary limits (GET 1, a write 5), and
    /// whether it generates content.
    pub points: u32,
    pub content: Content,
    /// Whether it was answered with a secondary limit.
    pub secondary_limited: bool,
}

/// Whether a request generates content, in GitHub's sense (its REST
/// documentation, "About secondary rate limits"): creating issues,
/// comments and labels certainly; editing a comment only under the strict
/// reading (GitHub does not say it does not).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Content {
    No,
    Edit,
    Create,
}

impl Content {
    /// Whether it counts under the reading `edits_count`.
    pub fn counts(self, edits_count: bool) -> bool {
        match self {
            Content::No => false,
            Content::Edit => edits_count,
            Content::Create => true,
        }
    }
}

/// GitHub's secondary limits per token, as its REST documentation
/// publishes them, and how the fake answers a breach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SecondaryLimits {
    pub points_per_minute: u32,
    pub content_per_minute: u32,
    pub content_per_hour: u32,
    pub concurrent: usize,
    /// The strict reading: a comment edit is content too.
    pub edits_are_content: bool,
    /// When set, every breach is a bare 403 that names no time (GitHub
    /// then asks for a minute's wait and exponential backoff).
    pub unnamed: bool,
}

impl SecondaryLimits {
    /// 900 points a minute, 80 content-generating requests a minute and
    /// 500 an hour, 100 concurrent requests; comment edits count.
    pub fn github() -> SecondaryLimits {
        SecondaryLimits {
            points_per_minute: 900,
            content_per_minute: 80,
            content_per_hour: 500,
            concurrent: 100,
            edits_are_content: true,
            unnamed: false,
        }
    }
}

/// The highest use of each secondary limit seen in any window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SecondaryPeaks {
    pub points_per_minute: u32,
    /// Strict reading (comment edits count), then lenient.
    pub content_per_minute: (u32, u32),
    pub content_per_hour: (u32, u32),
    pub concurrent: usize,
    /// Secondary-limit answers given.
    pub limit_answers: usize,
    /// Requests sent on a connection that had been answered with a
    /// secondary limit, before the time that answer named (a minute when
    /// it named none) had passed.
    pub unheeded: usize,
}

/// One repository on a fake GitHub; stops serving when dropped.
pub struct FakeGithub {
    shared: Arc<Shared>,
    addr: SocketAddr,
    _acceptor: Acceptor,
}

struct Shared {
    state: Mutex<State>,
    stopping: Arc<AtomicBool>,
    slowed: AtomicU64,
    /// Requests read and not yet answered, and the connections served.
    in_flight: AtomicUsize,
    connections: AtomicU64,
}

impl FakeGithub {
    /// A fake on the system's clock.
    pub fn start(owner: &str, repo: &str) -> FakeGithub {
        FakeGithub::start_with_clock(owner, repo, Clock::system())
    }

    /// A fake whose clock is `clock` (a test environment's, which every
    /// maverick process it starts shares), plus what
    /// [`FakeGithub::advance_clock`] moves GitHub's alone.
    pub fn start_with_clock(owner: &str, repo: &str, clock: Clock) -> FakeGithub {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the fake GitHub server");
        let addr = listener
            .local_addr()
            .expect("local address of the fake GitHub server");
        let state = State::new(format!("http://{addr}"), owner, repo, clock);
        let stopping = Arc::new(AtomicBool::new(false));
        let shared = Arc::new(Shared {
            state: Mutex::new(state),
            stopping: Arc::clone(&stopping),
            slowed: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            connections: AtomicU64::new(0),
        });
        let acceptor = {
            let shared = Arc::clone(&shared);
            Acceptor::start(listener, stopping, move |stream| {
                let _ = serve_connection(&shared, stream);
            })
        };
        FakeGithub {
            shared,
            addr,
            _acceptor: acceptor,
        }
    }

    /// What `GITHUB_API_URL` is set to.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn token(&self) -> &str {
        TOKEN
    }

    pub fn repo_id(&self) -> u64 {
        REPO_ID
    }

    /// The login `GET /user` answers and new comments are written as.
    pub fn set_authenticated_user(&self, login: &str) {
        let mut state = self.state();
        state.ensure_user(login, "MEMBER");
        state.authenticated = login.to_string();
    }

    /// `association` is what comments by this login carry: OWNER, MEMBER,
    /// COLLABORATOR, CONTRIBUTOR, NONE… A login never added is NONE (a
    /// stranger), except the owner (OWNER) and the authenticated user (MEMBER).
    pub fn add_user(&self, login: &str, association: &str) {
        let mut state = self.state();
        state.ensure_user(login, association);
        if let Some(user) = state.find_user_mut(login) {
            user.association = association.to_string();
        }
    }

    /// When on, any issue a request names springs into existence (open,
    /// unlabelled), so tests written for the git surface, where every number
    /// is an issue, run unchanged. Off by default, as on GitHub.
    pub fn create_issues_on_demand(&self, on: bool) {
        self.state().issues_on_demand = on;
    }

    /// A new comment, a label or an assignee change moves an issue's
    /// `updated_at` (and so its ETag and every list page it is on). Whether
    /// editing or deleting a comment does is not documented; off by default,
    /// on to check that a budget does not depend on it.
    pub fn set_comment_edits_touch_issues(&self, on: bool) {
        self.state().edits_touch_issues = on;
    }

    pub fn create_issue(&self, number: u64, title: &str, labels: &[&str]) {
        self.state().seed_issue(number, title, labels, None);
    }

    /// An open pull request; like GitHub, it is also an issue with a
    /// `pull_request` key, so it shows in issue lists and takes comments.
    pub fn create_pull(&self, number: u64, title: &str, labels: &[&str], head_sha: &str) {
        let pull = Pull {
            head_ref: format!("pr-{number}"),
            head_sha: head_sha.to_string(),
            base_ref: None,
            draft: false,
            fork: None,
        };
        self.state().seed_issue(number, title, labels, Some(pull));
    }

    /// An open pull request from branch `head_ref` (`create_pull` names it `pr-N`).
    pub fn create_pull_from(
        &self,
        number: u64,
        title: &str,
        labels: &[&str],
        head_ref: &str,
        head_sha: &str,
    ) {
        let pull = Pull {
            head_ref: head_ref.to_string(),
            head_sha: head_sha.to_string(),
            base_ref: None,
            draft: false,
            fork: None,
        };
        self.state().seed_issue(number, title, labels, Some(pull));
    }

    /// An open pull request as a person opens one: by `author`, from
    /// `head_ref` into `base_ref`, described by `body` (where `Fixes #N`
    /// links it to an issue).
    pub fn open_pull(&self, number: u64, author: &str, head_ref: &str, base_ref: &str, body: &str) {
        let pull = Pull {
            head_ref: head_ref.to_string(),
            head_sha: format!("{number:040x}"),
            base_ref: Some(base_ref.to_string()),
            draft: false,
            fork: None,
        };
        let mut state = self.state();
        state.seed_issue(number, &format!("Pull request {number}"), &[], Some(pull));
        state.seed_update(number, |issue| {
            issue.author = author.to_string();
            issue.body = Some(body.to_string());
        });
    }

    /// An open pull request from a fork (`fork`, `OWNER/REPO`) by
    /// `author`, into the default branch, described by `body`.
    pub fn open_fork_pull(
        &self,
        number: u64,
        author: &str,
        fork: &str,
        head_ref: &str,
        body: &str,
    ) {
        let base = self.state().default_branch.clone();
        self.open_pull(number, author, head_ref, &base, body);
        self.state().seed_update(number, |issue| {
            if let Some(pull) = &mut issue.pull {
                pull.fork = Some(fork.to_string());
            }
        });
    }

    /// The repository's default branch (`main` unless set).
    pub fn set_default_branch(&self, branch: &str) {
        self.state().default_branch = branch.to_string();
    }

    pub fn set_draft(&self, number: u64, draft: bool) {
        self.state().seed_update(number, |issue| {
            if let Some(pull) = &mut issue.pull {
                pull.draft = draft;
            }
        });
    }

    pub fn close(&self, number: u64) {
        let mut state = self.state();
        let now = state.now_secs();
        state.seed_update(number, |issue| {
            issue.open = false;
            issue.closed_at = Some(now);
        });
    }

    /// A comment written by `login` before the test looks, visible at once
    /// whatever the lag. Returns its id.
    pub fn add_comment_as(&self, issue: u64, login: &str, body: &str) -> u64 {
        let mut state = self.state();
        state.ensure_user(login, "NONE");
        state
            .insert_comment(issue, login, body, SEEDED)
            .unwrap_or_else(|| panic!("fake GitHub: no issue #{issue} to comment on"))
    }

    /// Replaces a comment's body as a person editing it in the browser
    /// would; visible at once whatever the lag.
    pub fn edit_comment(&self, id: u64, body: &str) {
        let mut state = self.state();
        let now = state.now_secs();
        let stored = state
            .comments
            .get_mut(&id)
            .unwrap_or_else(|| panic!("fake GitHub: no comment {id}"));
        let mut comment = stored
            .history
            .latest()
            .cloned()
            .unwrap_or_else(|| panic!("fake GitHub: comment {id} was deleted"));
        comment.body = body.to_string();
        comment.updated_at = now;
        // Seeded history keeps its order: the edit replaces what lag would show.
        stored.history.versions = vec![(SEEDED, Some(comment))];
    }

    /// Deletes a comment as a person would in the browser; gone at once
    /// whatever the lag.
    pub fn delete_comment(&self, id: u64) {
        let mut state = self.state();
        let stored = state
            .comments
            .get_mut(&id)
            .unwrap_or_else(|| panic!("fake GitHub: no comment {id}"));
        stored.history.versions = vec![(SEEDED, None)];
    }

    /// The true comments of an issue (no lag), ascending id.
    pub fn comments(&self, issue: u64) -> Vec<FakeComment> {
        let state = self.state();
        state
            .comments
            .iter()
            .filter(|(_, stored)| stored.issue == issue)
            .filter_map(|(id, stored)| {
                stored.history.latest().map(|comment| FakeComment {
                    id: *id,
                    user: comment.author.clone(),
                    body: comment.body.clone(),
                    created_at: rfc3339(comment.created_at),
                    updated_at: rfc3339(comment.updated_at),
                })
            })
            .collect()
    }

    pub fn labels(&self, issue: u64) -> Vec<String> {
        self.state()
            .issues
            .get(&issue)
            .and_then(|history| history.latest())
            .map(|issue| issue.labels.clone())
            .unwrap_or_default()
    }

    pub fn assignees(&self, issue: u64) -> Vec<String> {
        self.state()
            .issues
            .get(&issue)
            .and_then(|history| history.latest())
            .map(|issue| issue.assignees.clone())
            .unwrap_or_default()
    }

    pub fn is_open(&self, issue: u64) -> bool {
        self.state()
            .issues
            .get(&issue)
            .and_then(|history| history.latest())
            .is_some_and(|issue| issue.open)
    }

    /// Check runs of a commit: `(name, status, conclusion)`, for example
    /// `("ci", "completed", Some("success"))` or `("ci", "in_progress", None)`.
    pub fn set_check_runs(&self, sha: &str, runs: &[(&str, &str, Option<&str>)]) {
        let at = self.state().now_secs();
        let runs = runs
            .iter()
            .map(|(name, status, conclusion)| CheckRun {
                name: name.to_string(),
                status: status.to_string(),
                conclusion: conclusion.map(str::to_string),
                at,
            })
            .collect();
        self.state().check_runs.insert(sha.to_string(), runs);
    }

    /// One commit status (`success`, `pending`, `failure`, `error`) on `sha`.
    pub fn set_commit_status(&self, sha: &str, state: &str) {
        let mut fake = self.state();
        let at = fake.now_secs();
        fake.statuses
            .insert(sha.to_string(), (state.to_string(), at));
    }

    /// The fake's clock as GitHub would write it (`2026-11-30T10:15:00Z`).
    pub fn now(&self) -> String {
        rfc3339(self.state().now_secs())
    }

    /// Moves the fake's clock alone (Date header, timestamps, lag,
    /// rate-limit window), as when GitHub's clock and a writer's differ;
    /// the shared clock keeps flowing underneath.
    pub fn advance_clock(&self, secs: i64) {
        self.state().clock_offset_ms += secs * 1000;
    }

    /// Comment lists, issue lists, pull lists and issue reads (labels,
    /// assignees) miss writes younger than `lag` on the fake's clock, as
    /// GitHub's read replicas do. The answer to a write is always fresh.
    pub fn set_list_lag(&self, lag: Duration) {
        self.state().list_lag_ms = duration_ms(lag);
    }

    /// The same for `GET …/issues/comments/{id}` (zero by default).
    pub fn set_get_lag(&self, lag: Duration) {
        self.state().get_lag_ms = duration_ms(lag);
    }

    /// The next `n` requests answer `status` (502, 503…) and change nothing.
    pub fn fail_next(&self, n: usize, status: u16) {
        self.push_faults(n, Fault::Status(status));
    }

    /// The next `n` requests are carried out, then answered `status`: the
    /// 5xx after a committed POST that makes retrying clients write twice.
    pub fn fail_next_after_commit(&self, n: usize, status: u16) {
        self.push_faults(n, Fault::AfterCommit(status));
    }

    pub fn fail_always(&self, status: u16) {
        self.state().fail_always = Some(status);
    }

    /// Every `method` request whose path contains `path_part` answers
    /// `status` and changes nothing, until `clear_faults`.
    pub fn fail_always_matching(&self, method: &str, path_part: &str, status: u16) {
        self.state().fail_matching.push(MatchingFault {
            method: method.to_string(),
            path_part: path_part.to_string(),
            fault: Fault::Status(status),
            remaining: None,
        });
    }

    /// The next `n` such requests are carried out, then answered `status`:
    /// a committed POST whose answer is lost, aimed at one kind of request.
    pub fn fail_next_matching_after_commit(
        &self,
        method: &str,
        path_part: &str,
        n: usize,
        status: u16,
    ) {
        self.state().fail_matching.push(MatchingFault {
            method: method.to_string(),
            path_part: path_part.to_string(),
            fault: Fault::AfterCommit(status),
            remaining: Some(n),
        });
    }

    /// Error answers quote the request's `Authorization` header, as a
    /// broken proxy might: the client must keep it out of its output anyway.
    pub fn echo_authorization_in_errors(&self, on: bool) {
        self.state().echo_authorization = on;
    }

    pub fn clear_faults(&self) {
        let mut state = self.state();
        state.fail_always = None;
        state.fail_matching.clear();
        state.faults.clear();
        state.slow.clear();
    }

    /// 403 "You have exceeded a secondary rate limit" with `retry-after`.
    pub fn secondary_rate_limit_next(&self, n: usize, retry_after_secs: u64) {
        self.push_faults(n, Fault::SecondaryRateLimit { retry_after_secs });
    }

    /// 403 "API rate limit exceeded" with `x-ratelimit-remaining: 0` and
    /// `x-ratelimit-reset` that many seconds ahead on the fake's clock.
    pub fn primary_rate_limit_next(&self, n: usize, reset_in_secs: u64) {
        self.push_faults(n, Fault::PrimaryRateLimit { reset_in_secs });
    }

    /// The next `n` requests are carried out only after `delay` on the
    /// fake's clock, whether or not the client is still waiting (as a slow
    /// GitHub does).
    pub fn slow_next(&self, n: usize, delay: Duration) {
        self.state().slow.extend(vec![delay; n]);
    }

    /// While on, every request waits (unanswered) until it is turned off:
    /// a GitHub that answers only when the test says so.
    pub fn hold_requests(&self, on: bool) {
        self.state().held = on;
    }

    /// How many requests wait for [`FakeGithub::hold_requests`] to end.
    pub fn held_requests(&self) -> usize {
        self.state().waiting
    }

    /// How many requests [`FakeGithub::slow_next`] made wait so far (each
    /// counts from when it starts to wait).
    pub fn slowed_requests(&self) -> u64 {
        self.shared.slowed.load(Ordering::SeqCst)
    }

    /// The primary limit per hour (GitHub's 5,000 for a user token by
    /// default); what is left of it starts full.
    pub fn set_rate_limit(&self, per_hour: u64) {
        let mut state = self.state();
        state.rate_limit = per_hour;
        state.rate_remaining = per_hour;
    }

    /// Turns GitHub's secondary limits on (`Some`) or off, counted per
    /// token on the fake's clock (the test clock), from now on.
    pub fn set_secondary_limits(&self, limits: Option<SecondaryLimits>) {
        let mut state = self.state();
        state.secondary = limits;
        state.secondary_use.clear();
    }

    /// How close the requests since the last `reset_count` came to each
    /// secondary limit, and whether every limit answer was heeded.
    pub fn secondary_peaks(&self) -> SecondaryPeaks {
        let state = self.state();
        let requests = &state.requests;
        let peak = |span: i64, counts: &dyn Fn(&RecordedRequest) -> u32| -> u32 {
            let used: Vec<(i64, u32)> = requests
                .iter()
                .filter(|r| !r.secondary_limited)
                .map(|r| (r.at_ms, counts(r)))
                .filter(|(_, n)| *n > 0)
                .collect();
            used.iter()
                .map(|(end, _)| {
                    used.iter()
                        .filter(|(at, _)| *at > end - span && at <= end)
                        .map(|(_, n)| n)
                        .sum::<u32>()
                })
                .max()
                .unwrap_or(0)
        };
        let content = |strict: bool| move |r: &RecordedRequest| u32::from(r.content.counts(strict));
        SecondaryPeaks {
            points_per_minute: peak(60_000, &|r| r.points),
            content_per_minute: (peak(60_000, &content(true)), peak(60_000, &content(false))),
            content_per_hour: (
                peak(3_600_000, &content(true)),
                peak(3_600_000, &content(false)),
            ),
            concurrent: state.peak_in_flight,
            limit_answers: requests.iter().filter(|r| r.secondary_limited).count(),
            unheeded: state.unheeded,
        }
    }

    pub fn request_count(&self) -> usize {
        self.state().requests.len()
    }

    /// Requests since the last `reset_count` that GitHub counts against the
    /// primary rate limit (a 304 does not), judged here, not by the client.
    pub fn counted_requests(&self) -> usize {
        self.state().requests.iter().filter(|r| r.counted).count()
    }

    /// Requests answered 304 Not Modified since the last `reset_count`.
    pub fn not_modified_count(&self) -> usize {
        self.state()
            .requests
            .iter()
            .filter(|r| r.status == 304)
            .count()
    }

    pub fn reset_count(&self) {
        let mut state = self.state();
        state.requests.clear();
        state.unheeded = 0;
        state.peak_in_flight = 0;
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.state().requests.clone()
    }

    fn push_faults(&self, n: usize, fault: Fault) {
        self.state().faults.extend(vec![fault; n]);
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }
}

/// Serves each connection `listener` accepts on a thread of its own until
/// dropped; then cuts the open ones (idle keep-alive clients included).
pub(super) struct Acceptor {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    connections: Arc<Mutex<HashMap<u64, TcpStream>>>,
    thread: Option<JoinHandle<()>>,
}

impl Acceptor {
    pub(super) fn start(
        listener: TcpListener,
        stopping: Arc<AtomicBool>,
        serve: impl Fn(TcpStream) + Send + Sync + 'static,
    ) -> Acceptor {
        let addr = listener.local_addr().expect("a bound listener");
        let connections: Arc<Mutex<HashMap<u64, TcpStream>>> = Arc::default();
        let serve = Arc::new(serve);
        let thread = {
            let stopping = Arc::clone(&stopping);
            let connections = Arc::clone(&connections);
            thread::spawn(move || {
                let next = AtomicU64::new(0);
                for stream in listener.incoming() {
                    if stopping.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    let id = next.fetch_add(1, Ordering::SeqCst);
                    if let Ok(clone) = stream.try_clone() {
                        lock(&connections).insert(id, clone);
                    }
                    let connections = Arc::clone(&connections);
                    let serve = Arc::clone(&serve);
                    thread::spawn(move || {
                        serve(stream);
                        lock(&connections).remove(&id);
                    });
                }
            })
        };
        Acceptor {
            addr,
            stopping,
            connections,
            thread: Some(thread),
        }
    }
}

impl Drop for Acceptor {
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        // Wake the blocking accept so the acceptor sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        for (_, stream) in lock(&self.connections).drain() {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }
}

/// A panicking test thread must not wedge every other request.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn duration_ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX / 4)
}

// ---------------------------------------------------------------------------
// State

struct MatchingFault {
    method: String,
    path_part: String,
    fault: Fault,
    /// `None`: every time.
    remaining: Option<usize>,
}

#[derive(Clone, Copy, Debug)]
enum Fault {
    Status(u16),
    AfterCommit(u16),
    SecondaryRateLimit { retry_after_secs: u64 },
    PrimaryRateLimit { reset_in_secs: u64 },
}

struct User {
    login: String,
    id: u64,
    association: String,
}

struct Label {
    id: u64,
    name: String,
    color: String,
    description: Option<String>,
}

#[derive(Clone)]
struct Pull {
    head_ref: String,
    head_sha: String,
    /// `None`: the repository's default branch.
    base_ref: Option<String>,
    draft: bool,
    /// The fork (`OWNER/REPO`) its head branch lives in; `None`: this
    /// repository.
    fork: Option<String>,
}

#[derive(Clone)]
struct Issue {
    number: u64,
    title: String,
    author: String,
    /// The description; `null` in GitHub's answers when there is none.
    body: Option<String>,
    open: bool,
    labels: Vec<String>,
    assignees: Vec<String>,
    pull: Option<Pull>,
    created_at: i64,
    updated_at: i64,
    closed_at: Option<i64>,
}

#[derive(Clone)]
struct Comment {
    author: String,
    body: String,
    created_at: i64,
    updated_at: i64,
}

struct StoredComment {
    issue: u64,
    history: Versioned<Comment>,
}

struct CheckRun {
    name: String,
    status: String,
    conclusion: Option<String>,
    /// When it was set, on the fake's clock: an unchanged run reads the same
    /// (and keeps its ETag), as on GitHub.
    at: i64,
}

/// Every write keeps the value it replaced, stamped with the fake-clock time
/// (ms) of the write, so a lagging read can answer what a replica would.
struct Versioned<T> {
    versions: Vec<(i64, Option<T>)>,
}

impl<T> Versioned<T> {
    fn new(written_at: i64, value: T) -> Self {
        Versioned {
            versions: vec![(written_at, Some(value))],
        }
    }

    fn latest(&self) -> Option<&T> {
        self.versions.last().and_then(|(_, value)| value.as_ref())
    }

    fn as_of(&self, cutoff: i64) -> Option<&T> {
        self.versions
            .iter()
            .rev()
            .find(|(written_at, _)| *written_at <= cutoff)
            .and_then(|(_, value)| value.as_ref())
    }

    fn write(&mut self, written_at: i64, value: Option<T>) {
        self.versions.push((written_at, value));
    }
}

struct State {
    base: String,
    owner: String,
    repo: String,
    default_branch: String,
    authenticated: String,
    users: Vec<User>,
    labels: Vec<Label>,
    issues: BTreeMap<u64, Versioned<Issue>>,
    comments: BTreeMap<u64, StoredComment>,
    last_comment_id: u64,
    check_runs: HashMap<String, Vec<CheckRun>>,
    /// A commit's status and when it was set (fake clock).
    statuses: HashMap<String, (String, i64)>,
    /// The clock the fake shares with the test's maverick processes.
    clock: Clock,
    /// How far GitHub's clock alone is ahead of it.
    clock_offset_ms: i64,
    list_lag_ms: i64,
    get_lag_ms: i64,
    faults: VecDeque<Fault>,
    fail_always: Option<u16>,
    fail_matching: Vec<MatchingFault>,
    issues_on_demand: bool,
    edits_touch_issues: bool,
    echo_authorization: bool,
    slow: VecDeque<Duration>,
    /// Requests wait while set ([`FakeGithub::hold_requests`]).
    held: bool,
    /// How many requests are waiting for `held` to clear.
    waiting: usize,
    rate_limit: u64,
    rate_remaining: u64,
    rate_reset: i64,
    requests: Vec<RecordedRequest>,
    request_serial: u64,
    /// Answers to hold back (see [`FakeGithub::hold_answer`]).
    holds: Vec<ArmedHold>,
    /// Repository rulesets, and where the origin's hook reads them.
    rulesets: Rulesets,
    /// GitHub's secondary limits, when on.
    secondary: Option<SecondaryLimits>,
    /// Per token: (fake-clock ms, points, content) of each request the
    /// secondary limits let through within the last hour.
    secondary_use: HashMap<String, VecDeque<(i64, u32, Content)>>,
    /// Per connection: until when (fake-clock ms) its last limit answer
    /// asked it to wait.
    limited_until: HashMap<u64, i64>,
    unheeded: usize,
    peak_in_flight: usize,
}

impl State {
    fn new(base: String, owner: &str, repo: &str, clock: Clock) -> State {
        let mut state = State {
            base,
            owner: owner.to_string(),
            repo: repo.to_string(),
            default_branch: "main".to_string(),
            authenticated: DEFAULT_USER.to_string(),
            users: Vec::new(),
            labels: Vec::new(),
            issues: BTreeMap::new(),
            comments: BTreeMap::new(),
            last_comment_id: FIRST_COMMENT_ID,
            check_runs: HashMap::new(),
            statuses: HashMap::new(),
            clock,
            clock_offset_ms: 0,
            list_lag_ms: 0,
            get_lag_ms: 0,
            faults: VecDeque::new(),
            fail_always: None,
            fail_matching: Vec::new(),
            issues_on_demand: false,
            edits_touch_issues: false,
            echo_authorization: false,
            slow: VecDeque::new(),
            held: false,
            waiting: 0,
            rate_limit: RATE_LIMIT,
            rate_remaining: RATE_LIMIT,
            rate_reset: 0,
            requests: Vec::new(),
            request_serial: 0,
            holds: Vec::new(),
            rulesets: Rulesets::default(),
            secondary: None,
            secondary_use: HashMap::new(),
            limited_until: HashMap::new(),
            unheeded: 0,
            peak_in_flight: 0,
        };
        state.ensure_user(owner, "OWNER");
        state.ensure_user(DEFAULT_USER, "MEMBER");
        state.rate_reset = state.now_secs() + 3600;
        state
    }

    fn now_ms(&self) -> i64 {
        self.clock.unix_millis() + self.clock_offset_ms
    }

    fn now_secs(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }

    fn find_user(&self, login: &str) -> Option<&User> {
        self.users
            .iter()
            .find(|user| user.login.eq_ignore_ascii_case(login))
    }

    fn find_user_mut(&mut self, login: &str) -> Option<&mut User> {
        self.users
            .iter_mut()
            .find(|user| user.login.eq_ignore_ascii_case(login))
    }

    fn ensure_user(&mut self, login: &str, association: &str) {
        if self.find_user(login).is_none() {
            let id = 51_000 + self.users.len() as u64 * 7;
            self.users.push(User {
                login: login.to_string(),
                id,
                association: association.to_string(),
            });
        }
    }

    fn association(&self, login: &str) -> String {
        self.find_user(login)
            .map_or_else(|| "NONE".to_string(), |user| user.association.clone())
    }

    /// GitHub matches label names case-insensitively and keeps the
    /// repository's spelling; a label the repository lacks is created.
    fn ensure_label(&mut self, name: &str) -> String {
        if let Some(label) = self
            .labels
            .iter()
            .find(|label| label.name.eq_ignore_ascii_case(name))
        {
            return label.name.clone();
        }
        self.labels.push(Label {
            id: 6_100_000_000 + self.labels.len() as u64 * 13,
            name: name.to_string(),
            color: "ededed".to_string(),
            description: None,
        });
        name.to_string()
    }

    fn seed_issue(&mut self, number: u64, title: &str, labels: &[&str], pull: Option<Pull>) {
        let now = self.now_secs();
        let labels = labels.iter().map(|name| self.ensure_label(name)).collect();
        let issue = Issue {
            number,
            title: title.to_string(),
            author: self.owner.clone(),
            body: None,
            open: true,
            labels,
            assignees: Vec::new(),
            pull,
            created_at: now,
            updated_at: now,
            closed_at: None,
        };
        self.issues.insert(number, Versioned::new(SEEDED, issue));
    }

    fn seed_update(&mut self, number: u64, change: impl FnOnce(&mut Issue)) {
        if self.update_issue(number, SEEDED, change).is_none() {
            panic!("fake GitHub: no issue #{number}");
        }
    }

    /// Applies `change` to the newest version of an issue, as one write.
    fn update_issue(
        &mut self,
        number: u64,
        written_at: i64,
        change: impl FnOnce(&mut Issue),
    ) -> Option<Issue> {
        let now = self.now_secs();
        let history = self.issues.get_mut(&number)?;
        let mut issue = history.latest()?.clone();
        change(&mut issue);
        issue.updated_at = now;
        history.write(written_at, Some(issue.clone()));
        Some(issue)
    }

    fn insert_comment(
        &mut self,
        issue: u64,
        author: &str,
        body: &str,
        written_at: i64,
    ) -> Option<u64> {
        self.issues.get(&issue)?;
        // Ids are global on GitHub, so one repository sees ascending ids with gaps.
        self.last_comment_id += 1 + (self.last_comment_id * 7919) % 5;
        let id = self.last_comment_id;
        let now = self.now_secs();
        let comment = Comment {
            author: author.to_string(),
            body: body.to_string(),
            created_at: now,
            updated_at: now,
        };
        self.comments.insert(
            id,
            StoredComment {
                issue,
                history: Versioned::new(written_at, comment),
            },
        );
        // A comment bumps the issue's updated_at; seeded history leaves the
        // issue alone so it cannot reveal another write still hidden by lag.
        if written_at != SEEDED {
            self.update_issue(issue, written_at, |_| {});
        }
        Some(id)
    }

    fn list_cutoff(&self) -> i64 {
        self.now_ms() - self.list_lag_ms
    }

    // -- request handling ---------------------------------------------------

    fn respond(&mut self, request: &Request, connection: u64, in_flight: usize) -> Response {
        let now = self.now_secs();
        self.peak_in_flight = self.peak_in_flight.max(in_flight);
        let now_ms = self.now_ms();
        if self
            .limited_until
            .get(&connection)
            .is_some_and(|until| now_ms < *until)
        {
            self.unheeded += 1;
        }
        if now >= self.rate_reset {
            self.rate_remaining = self.rate_limit;
            self.rate_reset = now + 3600;
        }
        let matching = self
            .fail_matching
            .iter_mut()
            .find(|f| {
                f.remaining != Some(0)
                    && request.method.eq_ignore_ascii_case(&f.method)
                    && request.path().contains(f.path_part.as_str())
            })
            .map(|f| {
                if let Some(n) = &mut f.remaining {
                    *n -= 1;
                }
                f.fault
            });
        let fault = self
            .fail_always
            .map(Fault::Status)
            .or(matching)
            .or_else(|| self.faults.pop_front());
        let asked_base = self.asked_base(request);
        let own_base = asked_base.map(|base| std::mem::replace(&mut self.base, base));
        let (points, content) = price(request);
        let limited = match fault {
            None if bearer_token(request) == Some(TOKEN) && self.rate_remaining > 0 => {
                self.secondary_limit(request, in_flight, now_ms)
            }
            _ => None,
        };
        let secondary_limited = limited.is_some();
        let mut answer = match limited {
            Some((answer, until_ms)) => {
                self.limited_until.insert(connection, until_ms);
                answer
            }
            None => self.answer(request, fault, now),
        };
        if let Some(base) = own_base {
            self.base = base;
        }
        if self.echo_authorization && answer.status >= 400 {
            if let (Some(auth), Some(body)) = (request.header("authorization"), &mut answer.body) {
                body["message"] = json!(format!(
                    "{} (you sent: {auth})",
                    body["message"].as_str().unwrap_or("")
                ));
            }
        }
        let (response, counted) = self.finish(request, answer, now);
        self.requests.push(RecordedRequest {
            method: request.method.clone(),
            path: request.target.clone(),
            status: response.status,
            had_authorization: request.header("authorization").is_some(),
            body: String::from_utf8_lossy(&request.body).into_owned(),
            at_ms: self.now_ms(),
            counted,
            if_none_match: request.header("if-none-match").map(str::to_string),
            if_modified_since: request.header("if-modified-since").map(str::to_string),
            points,
            content,
            secondary_limited,
        });
        response
    }

    /// A secondary-limit answer for `request`, with the fake-clock time it
    /// asks the client to wait until, when the token's use within the
    /// window would pass a limit; else the request counts in the windows.
    /// A breach of the content limits is a 403 with `retry-after`, or past
    /// the hour's with `x-ratelimit-remaining: 0` and `x-ratelimit-reset`;
    /// of the points, a 429 with `retry-after`; of the concurrent
    /// requests, a bare 403 (GitHub documents all of these answers).
    fn secondary_limit(
        &mut self,
        request: &Request,
        in_flight: usize,
        now_ms: i64,
    ) -> Option<(Answer, i64)> {
        let limits = self.secondary?;
        let (points, content) = price(request);
        let token = bearer_token(request).unwrap_or_default().to_string();
        let used = self.secondary_use.entry(token).or_default();
        while used
            .front()
            .is_some_and(|(at, _, _)| *at <= now_ms - 3_600_000)
        {
            used.pop_front();
        }
        let counts = content.counts(limits.edits_are_content);
        let within = |span: i64| used.iter().filter(move |(at, _, _)| *at > now_ms - span);
        let oldest_content = |span: i64| {
            within(span)
                .filter(|(_, _, c)| c.counts(limits.edits_are_content))
                .map(|(at, _, _)| *at)
                .min()
                .unwrap_or(now_ms)
        };
        let minute_points: u32 = within(60_000).map(|(_, p, _)| p).sum();
        let content_in = |span: i64| {
            within(span)
                .filter(|(_, _, c)| c.counts(limits.edits_are_content))
                .count() as u32
        };
        // (status, frees at, as a reset rather than a retry-after)
        let breach = if in_flight > limits.concurrent {
            Some((403, now_ms + 60_000, None))
        } else if counts && content_in(3_600_000) >= limits.content_per_hour {
            Some((403, oldest_content(3_600_000) + 3_600_000, Some(())))
        } else if counts && content_in(60_000) >= limits.content_per_minute {
            Some((403, oldest_content(60_000) + 60_000, None))
        } else if minute_points + points > limits.points_per_minute {
            let oldest = within(60_000).map(|(at, _, _)| *at).min().unwrap_or(now_ms);
            Some((429, oldest + 60_000, None))
        } else {
            None
        };
        let Some((status, frees_ms, as_reset)) = breach else {
            used.push_back((now_ms, points, content));
            return None;
        };
        let mut answer = Answer::error(
            status,
            "You have exceeded a secondary rate limit. Please wait a few minutes before \
             you try again. If you reach out to GitHub Support for help, please include \
             the request ID FAKE.",
            "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
        );
        let unnamed = limits.unnamed || in_flight > limits.concurrent;
        let frees_secs = ((frees_ms - now_ms).max(1000) + 999) / 1000;
        let until_ms = if unnamed {
            now_ms + 60_000
        } else if as_reset.is_some() {
            let reset = (frees_ms + 999).div_euclid(1000);
            answer.rate_limited_until = Some(reset);
            reset * 1000
        } else {
            answer.header("retry-after", frees_secs.to_string());
            now_ms + frees_secs * 1000
        };
        Some((answer, until_ms))
    }

    /// Faults first (a proxy's 502 comes before any credential check), then
    /// the token, the primary limit, and the route.
    fn answer(&mut self, request: &Request, fault: Option<Fault>, now: i64) -> Answer {
        match fault {
            Some(Fault::Status(status)) => Answer::error(status, status_reason(status), DOCS),
            Some(Fault::SecondaryRateLimit { retry_after_secs }) => {
                let mut answer = Answer::error(
                    403,
                    "You have exceeded a secondary rate limit. Please wait a few minutes before \
                     you try again. If you reach out to GitHub Support for help, please include \
                     the request ID FAKE.",
                    "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
                );
                answer.header("retry-after", retry_after_secs.to_string());
                answer
            }
            Some(Fault::PrimaryRateLimit { reset_in_secs }) => {
                Answer::rate_limited(now + reset_in_secs as i64)
            }
            _ if bearer_token(request) != Some(TOKEN) => {
                Answer::error(401, "Bad credentials", DOCS)
            }
            _ if self.rate_remaining == 0 => Answer::rate_limited(self.rate_reset),
            Some(Fault::AfterCommit(status)) => {
                self.route(request);
                Answer::error(status, status_reason(status), DOCS)
            }
            None => self.route(request),
        }
    }

    /// Adds what every GitHub answer carries, and answers a conditional GET
    /// whose resource did not change with a bodiless 304, as GitHub does:
    /// every answer with a body carries an ETag (weak, `W/"…"`, on a GET)
    /// that changes whenever anything in the body does (so a list's changes
    /// when any item on the page does); a single resource also carries
    /// `Last-Modified` (its `updated_at`). `If-None-Match` wins over
    /// `If-Modified-Since` when a request sends both (RFC 9110 13.2.2).
    fn finish(&mut self, request: &Request, mut answer: Answer, now: i64) -> (Response, bool) {
        let mut body = answer
            .body
            .as_ref()
            .map(|value| value.to_string().into_bytes())
            .unwrap_or_default();
        let mut status = answer.status;
        if (200..300).contains(&status) && answer.body.is_some() {
            let get = request.method == "GET";
            let etag = etag(&body, &answer.headers, get);
            if get && status == 200 {
                let unchanged = match request.header("if-none-match") {
                    Some(_) => if_none_match(request, &etag),
                    None => not_modified_since(request, answer.last_modified),
                };
                if unchanged {
                    status = 304;
                    body.clear();
                }
                answer.header(
                    "cache-control",
                    "private, max-age=60, s-maxage=60".to_string(),
                );
                answer.header(
                    "vary",
                    "Accept, Authorization, Cookie, X-GitHub-OTP, Accept-Encoding".to_string(),
                );
            }
            answer.header("etag", etag);
            if let Some(modified) = answer.last_modified {
                answer.header("last-modified", http_date(modified));
            }
        }
        // A 304 does not count against the primary limit; neither does /rate_limit.
        let free = status == 304 || request.path() == "/rate_limit";
        let counted = !free && answer.rate_limited_until.is_none();
        if counted {
            self.rate_remaining = self.rate_remaining.saturating_sub(1);
        }
        let (remaining, reset) = match answer.rate_limited_until {
            Some(reset) => (0, reset),
            None => (self.rate_remaining, self.rate_reset),
        };
        self.request_serial += 1;
        let mut headers: Vec<(String, String)> = [
            ("date", http_date(now)),
            (
                "x-github-request-id",
                format!("FAKE:{:08X}", self.request_serial),
            ),
            ("x-github-api-version-selected", "2022-11-28".to_string()),
            ("x-ratelimit-limit", self.rate_limit.to_string()),
            ("x-ratelimit-remaining", remaining.to_string()),
            ("x-ratelimit-reset", reset.to_string()),
            (
                "x-ratelimit-used",
                (self.rate_limit - remaining).to_string(),
            ),
            ("x-ratelimit-resource", "core".to_string()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_string(), value))
        .collect();
        if status != 204 && status != 304 {
            let json = "application/json; charset=utf-8".to_string();
            headers.push(("content-type".to_string(), json));
        }
        headers.append(&mut answer.headers);
        let response = Response {
            status,
            headers,
            body,
        };
        (response, counted)
    }

    fn route(&mut self, request: &Request) -> Answer {
        let segments: Vec<String> = request
            .path()
            .split('/')
            .filter(|segment| !segment.is_empty())
            .map(percent_decode)
            .collect();
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        let method = request.method.as_str();
        let rest = match segments.as_slice() {
            ["user"] if method == "GET" => return Answer::ok(self.authenticated_user_json()),
            ["rate_limit"] if method == "GET" => return Answer::ok(self.rate_limit_json()),
            ["graphql"] if method == "POST" => return self.graphql(request),
            ["repos", owner, repo, rest @ ..]
                if owner.eq_ignore_ascii_case(&self.owner)
                    && repo.eq_ignore_ascii_case(&self.repo) =>
            {
                rest
            }
            ["repositories", id, rest @ ..] if *id == REPO_ID.to_string() => rest,
            _ => return Answer::not_found(DOCS),
        };
        if self.issues_on_demand {
            if let ["issues", number, ..] = rest {
                if let Ok(number) = number.parse::<u64>() {
                    if !self.issues.contains_key(&number) {
                        self.seed_issue(number, &format!("Issue {number}"), &[], None);
                    }
                }
            }
        }
        let query = parse_query(request.query());
        let rest_path = rest.join("/");
        match (method, rest) {
            ("GET", []) => Answer::ok(self.repo_json()),
            ("GET", ["issues"]) => self.list_issues(&query, &rest_path),
            ("GET", ["pulls"]) => self.list_pulls(&query, &rest_path),
            ("GET", ["issues", "comments"]) => self.list_repo_comments(&query, &rest_path),
            ("GET", ["labels"]) => self.list_repo_labels(&query, &rest_path),
            ("GET", ["issues", "comments", id]) => self.get_comment(id),
            ("PATCH" | "POST", ["issues", "comments", id]) => self.update_comment(id, request),
            ("DELETE", ["issues", "comments", id]) => self.delete_comment(id),
            ("GET", ["issues", number]) => self.get_issue(number),
            ("GET", ["issues", number, "comments"]) => {
                self.list_comments(number, &query, &rest_path)
            }
            ("POST", ["issues", number, "comments"]) => self.create_comment(number, request),
            ("GET", ["issues", number, "labels"]) => {
                self.list_issue_labels(number, &query, &rest_path)
            }
            ("POST" | "PUT", ["issues", number, "labels"]) => {
                self.set_labels(number, request, method == "PUT")
            }
            ("DELETE", ["issues", number, "labels"]) => self.clear_labels(number),
            ("DELETE", ["issues", number, "labels", name]) => self.remove_label(number, name),
            ("POST" | "DELETE", ["issues", number, "assignees"]) => {
                self.change_assignees(number, request, method == "POST")
            }
            ("GET", ["rulesets"]) => self.list_rulesets(&query, &rest_path),
            ("POST", ["rulesets"]) => self.create_ruleset(request),
            ("GET", ["rulesets", id]) => self.get_ruleset(id),
            ("PUT", ["rulesets", id]) => self.update_ruleset(id, request),
            ("DELETE", ["rulesets", id]) => self.delete_ruleset(id),
            ("GET", ["commits", reference @ .., "check-runs"]) if !reference.is_empty() => {
                Answer::ok(self.check_runs_json(&reference.join("/")))
            }
            ("GET", ["commits", reference @ .., "status"]) if !reference.is_empty() => {
                Answer::ok(self.combined_status_json(&reference.join("/")))
            }
            _ => Answer::not_found(DOCS),
        }
    }

    fn issue_at(&self, number: &str, cutoff: i64) -> Option<&Issue> {
        let number: u64 = number.parse().ok()?;
        self.issues.get(&number)?.as_of(cutoff)
    }

    fn get_issue(&self, number: &str) -> Answer {
        let cutoff = self.list_cutoff();
        match self.issue_at(number, cutoff) {
            Some(issue) => Answer::ok(self.issue_json(issue, cutoff)).modified_at(issue.updated_at),
            None => Answer::not_found("https://docs.github.com/rest/issues/issues#get-an-issue"),
        }
    }

    fn list_issues(&self, query: &[(String, String)], rest_path: &str) -> Answer {
        let cutoff = self.list_cutoff();
        let wanted_labels: Vec<&str> = query_value(query, "labels")
            .map(|labels| {
                labels
                    .split(',')
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let state = query_value(query, "state").unwrap_or("open");
        let assignee = query_value(query, "assignee");
        let mut issues: Vec<&Issue> = self
            .issues
            .values()
            .filter_map(|history| history.as_of(cutoff))
            .filter(|issue| state_matches(state, issue.open))
            .filter(|issue| {
                wanted_labels.iter().all(|wanted| {
                    issue
                        .labels
                        .iter()
                        .any(|label| label.eq_ignore_ascii_case(wanted))
                })
            })
            .filter(|issue| match assignee {
                None => true,
                Some("none") => issue.assignees.is_empty(),
                Some("*") => !issue.assignees.is_empty(),
                Some(login) => issue
                    .assignees
                    .iter()
                    .any(|a| a.eq_ignore_ascii_case(login)),
            })
            .collect();
        sort_issues(&mut issues, query);
        let items = issues
            .into_iter()
            .map(|issue| self.issue_json(issue, cutoff))
            .collect();
        self.paginate(items, query, rest_path)
    }

    fn list_pulls(&self, query: &[(String, String)], rest_path: &str) -> Answer {
        let cutoff = self.list_cutoff();
        let state = query_value(query, "state").unwrap_or("open");
        let mut pulls: Vec<&Issue> = self
            .issues
            .values()
            .filter_map(|history| history.as_of(cutoff))
            .filter(|issue| issue.pull.is_some() && state_matches(state, issue.open))
            .collect();
        sort_issues(&mut pulls, query);
        let items = pulls
            .into_iter()
            .map(|issue| self.pull_json(issue))
            .collect();
        self.paginate(items, query, rest_path)
    }

    fn list_comments(&self, number: &str, query: &[(String, String)], rest_path: &str) -> Answer {
        let cutoff = self.list_cutoff();
        let Some(issue) = self.issue_at(number, cutoff) else {
            return Answer::not_found(
                "https://docs.github.com/rest/issues/comments#list-issue-comments",
            );
        };
        let since = query_value(query, "since").and_then(parse_rfc3339);
        // The documented order is ascending id; the BTreeMap keeps it.
        let items = self
            .comments
            .iter()
            .filter(|(_, stored)| stored.issue == issue.number)
            .filter_map(|(id, stored)| stored.history.as_of(cutoff).map(|c| (*id, c)))
            .filter(|(_, comment)| since.iter().all(|since| comment.updated_at >= *since))
            .map(|(id, comment)| self.comment_json(id, issue.number, comment))
            .collect();
        self.paginate(items, query, rest_path)
    }

    /// Every issue's and pull request's comments: `since` (updated at or
    /// after), `sort` (`created`, the default, or `updated`) and
    /// `direction` (`desc` by default, and only with `sort`).
    fn list_repo_comments(&self, query: &[(String, String)], rest_path: &str) -> Answer {
        let cutoff = self.list_cutoff();
        let since = query_value(query, "since").and_then(parse_rfc3339);
        let mut comments: Vec<(u64, u64, &Comment)> = self
            .comments
            .iter()
            .filter_map(|(id, stored)| Some((*id, stored.issue, stored.history.as_of(cutoff)?)))
            .filter(|(_, issue, _)| self.issue_at(&issue.to_string(), cutoff).is_some())
            .filter(|(_, _, comment)| since.iter().all(|since| comment.updated_at >= *since))
            .collect();
        let sort = query_value(query, "sort");
        if sort == Some("updated") {
            comments.sort_by_key(|(id, _, comment)| (comment.updated_at, *id));
        }
        if sort.is_some() && query_value(query, "direction") != Some("asc") {
            comments.reverse();
        }
        let items = comments
            .into_iter()
            .map(|(id, issue, comment)| self.comment_json(id, issue, comment))
            .collect();
        self.paginate(items, query, rest_path)
    }

    fn list_repo_labels(&self, query: &[(String, String)], rest_path: &str) -> Answer {
        let items = self
            .labels
            .iter()
            .map(|label| self.label_json(&label.name))
            .collect();
        self.paginate(items, query, rest_path)
    }

    fn get_comment(&self, id: &str) -> Answer {
        let cutoff = self.now_ms() - self.get_lag_ms;
        let found = id.parse::<u64>().ok().and_then(|id| {
            let stored = self.comments.get(&id)?;
            Some((id, stored.issue, stored.history.as_of(cutoff)?))
        });
        match found {
            Some((id, issue, comment)) => {
                Answer::ok(self.comment_json(id, issue, comment)).modified_at(comment.updated_at)
            }
            None => Answer::not_found(
                "https://docs.github.com/rest/issues/comments#get-an-issue-comment",
            ),
        }
    }

    fn create_comment(&mut self, number: &str, request: &Request) -> Answer {
        let docs = "https://docs.github.com/rest/issues/comments#create-an-issue-comment";
        let body = match comment_body(request, docs) {
            Ok(body) => body,
            Err(answer) => return answer,
        };
        let Ok(number) = number.parse::<u64>() else {
            return Answer::not_found(docs);
        };
        let author = self.authenticated.clone();
        let written_at = self.now_ms();
        let Some(id) = self.insert_comment(number, &author, &body, written_at) else {
            return Answer::not_found(docs);
        };
        let stored = &self.comments[&id];
        let comment = stored.history.latest().expect("a comment just written");
        let json = self.comment_json(id, number, comment);
        let mut answer = Answer::with_status(201, json);
        answer.header("location", self.comment_url(id));
        answer
    }

    fn update_comment(&mut self, id: &str, request: &Request) -> Answer {
        let docs = "https://docs.github.com/rest/issues/comments#update-an-issue-comment";
        let body = match comment_body(request, docs) {
            Ok(body) => body,
            Err(answer) => return answer,
        };
        let now = self.now_secs();
        let written_at = self.now_ms();
        let Some((id, stored)) = id
            .parse::<u64>()
            .ok()
            .and_then(|id| Some((id, self.comments.get_mut(&id)?)))
        else {
            return Answer::not_found(docs);
        };
        let Some(mut comment) = stored.history.latest().cloned() else {
            return Answer::not_found(docs);
        };
        comment.body = body;
        comment.updated_at = now;
        stored.history.write(written_at, Some(comment.clone()));
        let issue = stored.issue;
        if self.edits_touch_issues {
            self.update_issue(issue, written_at, |_| {});
        }
        Answer::ok(self.comment_json(id, issue, &comment))
    }

    fn delete_comment(&mut self, id: &str) -> Answer {
        let written_at = self.now_ms();
        let stored = id
            .parse::<u64>()
            .ok()
            .and_then(|id| self.comments.get_mut(&id));
        match stored {
            Some(stored) if stored.history.latest().is_some() => {
                stored.history.write(written_at, None);
                let issue = stored.issue;
                if self.edits_touch_issues {
                    self.update_issue(issue, written_at, |_| {});
                }
                Answer::no_content()
            }
            _ => Answer::not_found(
                "https://docs.github.com/rest/issues/comments#delete-an-issue-comment",
            ),
        }
    }

    fn list_issue_labels(
        &self,
        number: &str,
        query: &[(String, String)],
        rest_path: &str,
    ) -> Answer {
        match self.issue_at(number, self.list_cutoff()) {
            Some(issue) => {
                let items = issue
                    .labels
                    .iter()
                    .map(|name| self.label_json(name))
                    .collect();
                self.paginate(items, query, rest_path)
            }
            None => Answer::not_found(
                "https://docs.github.com/rest/issues/labels#list-labels-for-an-issue",
            ),
        }
    }

    fn set_labels(&mut self, number: &str, request: &Request, replace: bool) -> Answer {
        let docs = "https://docs.github.com/rest/issues/labels#add-labels-to-an-issue";
        let names = match label_names(request, docs) {
            Ok(names) => names,
            Err(answer) => return answer,
        };
        let names: Vec<String> = names.iter().map(|name| self.ensure_label(name)).collect();
        let written_at = self.now_ms();
        let Some(issue) = number.parse::<u64>().ok().and_then(|number| {
            self.update_issue(number, written_at, |issue| {
                if replace {
                    issue.labels.clear();
                }
                for name in names {
                    if !issue.labels.contains(&name) {
                        issue.labels.push(name);
                    }
                }
            })
        }) else {
            return Answer::not_found(docs);
        };
        Answer::ok(Value::Array(
            issue
                .labels
                .iter()
                .map(|name| self.label_json(name))
                .collect(),
        ))
    }

    fn clear_labels(&mut self, number: &str) -> Answer {
        let written_at = self.now_ms();
        let cleared = number
            .parse::<u64>()
            .ok()
            .and_then(|number| self.update_issue(number, written_at, |issue| issue.labels.clear()));
        match cleared {
            Some(_) => Answer::no_content(),
            None => Answer::not_found(DOCS),
        }
    }

    fn remove_label(&mut self, number: &str, name: &str) -> Answer {
        let docs = "https://docs.github.com/rest/issues/labels#remove-a-label-from-an-issue";
        let Some(current) = number
            .parse::<u64>()
            .ok()
            .and_then(|number| self.issues.get(&number)?.latest())
        else {
            return Answer::not_found(docs);
        };
        if !current
            .labels
            .iter()
            .any(|label| label.eq_ignore_ascii_case(name))
        {
            return Answer::error(404, "Label does not exist", docs);
        }
        let number = current.number;
        let written_at = self.now_ms();
        let issue = self
            .update_issue(number, written_at, |issue| {
                issue
                    .labels
                    .retain(|label| !label.eq_ignore_ascii_case(name));
            })
            .expect("the issue was just read");
        Answer::ok(Value::Array(
            issue
                .labels
                .iter()
                .map(|name| self.label_json(name))
                .collect(),
        ))
    }

    fn change_assignees(&mut self, number: &str, request: &Request, add: bool) -> Answer {
        let docs = "https://docs.github.com/rest/issues/assignees";
        let value = match json_body(request, docs) {
            Ok(value) => value,
            Err(answer) => return answer,
        };
        // GitHub silently drops logins that cannot be assigned.
        let logins: Vec<String> = value
            .get("assignees")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter_map(|login| self.find_user(login).map(|user| user.login.clone()))
            .collect();
        let written_at = self.now_ms();
        let issue = number.parse::<u64>().ok().and_then(|number| {
            self.update_issue(number, written_at, |issue| {
                for login in logins {
                    let present = issue.assignees.contains(&login);
                    if add && !present && issue.assignees.len() < 10 {
                        issue.assignees.push(login);
                    } else if !add {
                        issue.assignees.retain(|assigned| *assigned != login);
                    }
                }
            })
        });
        match issue {
            Some(issue) => {
                let json = self.issue_json(&issue, self.now_ms());
                Answer::with_status(if add { 201 } else { 200 }, json)
            }
            None => Answer::not_found(docs),
        }
    }

    /// GitHub's pagination: `per_page` (default 30, max 100), `page`, and a
    /// `link` header of absolute `/repositories/{id}/…` URLs, absent when
    /// everything fits on one page.
    fn paginate(&self, items: Vec<Value>, query: &[(String, String)], rest_path: &str) -> Answer {
        let per_page = query_value(query, "per_page")
            .and_then(|value| value.parse::<usize>().ok())
            .filter(|per_page| *per_page > 0)
            .map_or(30, |per_page| per_page.min(100));
        let page = query_value(query, "page")
            .and_then(|value| value.parse::<usize>().ok())
            .map_or(1, |page| page.max(1));
        let last = items.len().div_ceil(per_page).max(1);
        let page_items: Vec<Value> = items
            .into_iter()
            .skip((page - 1).saturating_mul(per_page))
            .take(per_page)
            .collect();
        let mut answer = Answer::ok(Value::Array(page_items));
        if last > 1 || page > 1 {
            let mut kept: Vec<String> = query
                .iter()
                .filter(|(key, _)| key != "page" && key != "per_page")
                .map(|(key, value)| format!("{}={}", percent_encode(key), percent_encode(value)))
                .collect();
            if query_value(query, "per_page").is_some() {
                kept.push(format!("per_page={per_page}"));
            }
            let prefix = kept.join("&");
            let link = |page: usize, rel: &str| {
                let separator = if prefix.is_empty() { "" } else { "&" };
                format!(
                    "<{}/repositories/{REPO_ID}/{rest_path}?{prefix}{separator}page={page}>; rel=\"{rel}\"",
                    self.base
                )
            };
            let mut links = Vec::new();
            if page > 1 {
                links.push(link(page - 1, "prev"));
            }
            if page < last {
                links.push(link(page + 1, "next"));
                links.push(link(last, "last"));
            }
            if page > 1 {
                links.push(link(1, "first"));
            }
            answer.header("link", links.join(", "));
        }
        answer
    }

    // -- JSON shapes ------------------------------------------------------

    fn repo_url(&self) -> String {
        format!("{}/repos/{}/{}", self.base, self.owner, self.repo)
    }

    fn html_repo_url(&self) -> String {
        format!("https://github.com/{}/{}", self.owner, self.repo)
    }

    fn comment_url(&self, id: u64) -> String {
        format!("{}/issues/comments/{id}", self.repo_url())
    }

    fn user_json(&self, login: &str) -> Value {
        let id = self.find_user(login).map_or(1, |user| user.id);
        let url = format!("{}/users/{}", self.base, percent_encode(login));
        let kind = if login.ends_with("[bot]") {
            "Bot"
        } else {
            "User"
        };
        json!({
            "login": login,
            "id": id,
            "node_id": format!("U_kgDOFAKE{id}"),
            "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
            "gravatar_id": "",
            "url": url,
            "html_url": format!("https://github.com/{}", percent_encode(login)),
            "followers_url": format!("{url}/followers"),
            "following_url": format!("{url}/following{{/other_user}}"),
            "gists_url": format!("{url}/gists{{/gist_id}}"),
            "starred_url": format!("{url}/starred{{/owner}}{{/repo}}"),
            "subscriptions_url": format!("{url}/subscriptions"),
            "organizations_url": format!("{url}/orgs"),
            "repos_url": format!("{url}/repos"),
            "events_url": format!("{url}/events{{/privacy}}"),
            "received_events_url": format!("{url}/received_events"),
            "type": kind,
            "user_view_type": "public",
            "site_admin": false
        })
    }

    fn authenticated_user_json(&self) -> Value {
        let mut user = self.user_json(&self.authenticated);
        let profile = json!({
            "name": null, "company": null, "blog": "", "location": null, "email": null,
            "hireable": null, "bio": null, "twitter_username": null,
            "public_repos": 1, "public_gists": 0, "followers": 0, "following": 0,
            "created_at": "2020-01-01T00:00:00Z", "updated_at": "2020-01-01T00:00:00Z"
        });
        if let (Some(user), Value::Object(profile)) = (user.as_object_mut(), profile) {
            user.extend(profile);
        }
        user
    }

    fn rate_limit_json(&self) -> Value {
        let core = json!({
            "limit": self.rate_limit, "remaining": self.rate_remaining, "reset": self.rate_reset,
            "used": self.rate_limit - self.rate_remaining, "resource": "core"
        });
        json!({ "resources": { "core": core }, "rate": core })
    }

    fn repo_json(&self) -> Value {
        let url = self.repo_url();
        let html = self.html_repo_url();
        json!({
            "id": REPO_ID,
            "node_id": format!("R_kgDOFAKE{REPO_ID}"),
            "name": self.repo,
            "full_name": format!("{}/{}", self.owner, self.repo),
            "owner": self.user_json(&self.owner),
            "private": false,
            "html_url": html,
            "description": null,
            "fork": false,
            "url": url,
            "issues_url": format!("{url}/issues{{/number}}"),
            "issue_comment_url": format!("{url}/issues/comments{{/number}}"),
            "labels_url": format!("{url}/labels{{/name}}"),
            "pulls_url": format!("{url}/pulls{{/number}}"),
            "statuses_url": format!("{url}/statuses/{{sha}}"),
            "commits_url": format!("{url}/commits{{/sha}}"),
            "git_url": format!("git://github.com/{}/{}.git", self.owner, self.repo),
            "ssh_url": format!("git@github.com:{}/{}.git", self.owner, self.repo),
            "clone_url": format!("{html}.git"),
            "default_branch": self.default_branch,
            "visibility": "public",
            "archived": false,
            "disabled": false,
            "has_issues": true,
            "open_issues_count": self.issues.values().filter_map(Versioned::latest).filter(|i| i.open).count(),
            "permissions": { "admin": false, "maintain": false, "push": true, "triage": true, "pull": true },
            "created_at": "2020-01-01T00:00:00Z",
            "updated_at": "2020-01-01T00:00:00Z",
            "pushed_at": "2020-01-01T00:00:00Z"
        })
    }

    fn label_json(&self, name: &str) -> Value {
        let label = self
            .labels
            .iter()
            .find(|label| label.name == name)
            .expect("issue labels exist in the repository");
        json!({
            "id": label.id,
            "node_id": format!("LA_kwFAKE{}", label.id),
            "url": format!("{}/labels/{}", self.repo_url(), percent_encode(&label.name)),
            "name": label.name,
            "color": label.color,
            "default": false,
            "description": label.description
        })
    }

    fn reactions_json(url: &str) -> Value {
        json!({
            "url": format!("{url}/reactions"), "total_count": 0, "+1": 0, "-1": 0, "laugh": 0,
            "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0
        })
    }

    fn issue_json(&self, issue: &Issue, cutoff: i64) -> Value {
        let url = format!("{}/issues/{}", self.repo_url(), issue.number);
        let html = format!(
            "{}/{}/{}",
            self.html_repo_url(),
            if issue.pull.is_some() {
                "pull"
            } else {
                "issues"
            },
            issue.number
        );
        let comments = self
            .comments
            .values()
            .filter(|stored| stored.issue == issue.number && stored.history.as_of(cutoff).is_some())
            .count();
        let assignees: Vec<Value> = issue
            .assignees
            .iter()
            .map(|login| self.user_json(login))
            .collect();
        let mut json = json!({
            "id": 3_000_000_000u64 + issue.number,
            "node_id": format!("I_kwFAKE{}", issue.number),
            "url": url,
            "repository_url": self.repo_url(),
            "labels_url": format!("{url}/labels{{/name}}"),
            "comments_url": format!("{url}/comments"),
            "events_url": format!("{url}/events"),
            "html_url": html,
            "number": issue.number,
            "state": if issue.open { "open" } else { "closed" },
            "state_reason": if issue.open { Value::Null } else { json!("completed") },
            "title": issue.title,
            "body": issue.body,
            "user": self.user_json(&issue.author),
            "labels": issue.labels.iter().map(|name| self.label_json(name)).collect::<Vec<_>>(),
            "assignee": assignees.first().cloned().unwrap_or(Value::Null),
            "assignees": assignees,
            "milestone": null,
            "locked": false,
            "active_lock_reason": null,
            "comments": comments,
            "closed_at": issue.closed_at.map(rfc3339),
            "created_at": rfc3339(issue.created_at),
            "updated_at": rfc3339(issue.updated_at),
            "closed_by": null,
            "author_association": self.association(&issue.author),
            "reactions": Self::reactions_json(&url),
            "timeline_url": format!("{url}/timeline"),
            "performed_via_github_app": null
        });
        if let Some(pull) = &issue.pull {
            let pull_url = format!("{}/pulls/{}", self.repo_url(), issue.number);
            json["pull_request"] = json!({
                "url": pull_url,
                "html_url": html,
                "diff_url": format!("{html}.diff"),
                "patch_url": format!("{html}.patch"),
                "merged_at": null
            });
            json["draft"] = json!(pull.draft);
        }
        json
    }

    fn pull_json(&self, issue: &Issue) -> Value {
        let pull = issue.pull.as_ref().expect("a pull request");
        let base_ref = pull.base_ref.as_deref().unwrap_or(&self.default_branch);
        let url = format!("{}/pulls/{}", self.repo_url(), issue.number);
        let issue_url = format!("{}/issues/{}", self.repo_url(), issue.number);
        let html = format!("{}/pull/{}", self.html_repo_url(), issue.number);
        let statuses_url = format!("{}/statuses/{}", self.repo_url(), pull.head_sha);
        let assignees: Vec<Value> = issue
            .assignees
            .iter()
            .map(|login| self.user_json(login))
            .collect();
        // The pull-request-simple schema types a label's description as a
        // plain string where GitHub sends null; "" keeps both readers happy.
        let labels: Vec<Value> = issue
            .labels
            .iter()
            .map(|name| {
                let mut label = self.label_json(name);
                if label["description"].is_null() {
                    label["description"] = json!("");
                }
                label
            })
            .collect();
        let branch = |label: String, reference: &str, sha: &str, fork: Option<&str>| {
            let mut repo = self.repo_json();
            let mut owner = self.owner.clone();
            if let Some(fork) = fork {
                let (fork_owner, fork_name) = fork.split_once('/').unwrap_or((fork, fork));
                owner = fork_owner.to_string();
                repo["full_name"] = json!(fork);
                repo["name"] = json!(fork_name);
                repo["html_url"] = json!(format!("https://github.com/{fork}"));
                repo["fork"] = json!(true);
            }
            json!({
                "label": label,
                "ref": reference,
                "sha": sha,
                "user": self.user_json(&owner),
                "repo": repo
            })
        };
        let href = |href: &str| json!({ "href": href });
        let links = json!({
            "self": href(&url),
            "html": href(&html),
            "issue": href(&issue_url),
            "comments": href(&format!("{issue_url}/comments")),
            "review_comments": href(&format!("{url}/comments")),
            "review_comment": href(&format!("{}/pulls/comments{{/number}}", self.repo_url())),
            "commits": href(&format!("{url}/commits")),
            "statuses": href(&statuses_url)
        });
        json!({
            "url": url,
            "id": 4_000_000_000u64 + issue.number,
            "node_id": format!("PR_kwFAKE{}", issue.number),
            "html_url": html,
            "diff_url": format!("{html}.diff"),
            "patch_url": format!("{html}.patch"),
            "issue_url": issue_url,
            "commits_url": format!("{url}/commits"),
            "review_comments_url": format!("{url}/comments"),
            "review_comment_url": format!("{}/pulls/comments{{/number}}", self.repo_url()),
            "comments_url": format!("{issue_url}/comments"),
            "statuses_url": statuses_url,
            "number": issue.number,
            "state": if issue.open { "open" } else { "closed" },
            "locked": false,
            "title": issue.title,
            "user": self.user_json(&issue.author),
            "body": issue.body,
            "labels": labels,
            "milestone": null,
            "active_lock_reason": null,
            "created_at": rfc3339(issue.created_at),
            "updated_at": rfc3339(issue.updated_at),
            "closed_at": issue.closed_at.map(rfc3339),
            "merged_at": null,
            "merge_commit_sha": null,
            "assignee": assignees.first().cloned().unwrap_or(Value::Null),
            "assignees": assignees,
            "requested_reviewers": [],
            "requested_teams": [],
            "head": branch(
                format!("{}:{}", pull.fork.as_deref().and_then(|f| f.split('/').next()).unwrap_or(&self.owner), pull.head_ref),
                &pull.head_ref,
                &pull.head_sha,
                pull.fork.as_deref(),
            ),
            "base": branch(format!("{}:{base_ref}", self.owner), base_ref, "0000000000000000000000000000000000000000", None),
            "_links": links,
            "author_association": self.association(&issue.author),
            "auto_merge": null,
            "draft": pull.draft
        })
    }

    fn comment_json(&self, id: u64, issue: u64, comment: &Comment) -> Value {
        let url = self.comment_url(id);
        let is_pull = self
            .issues
            .get(&issue)
            .and_then(Versioned::latest)
            .is_some_and(|issue| issue.pull.is_some());
        let kind = if is_pull { "pull" } else { "issues" };
        json!({
            "id": id,
            "node_id": format!("IC_kwFAKE{id}"),
            "url": url,
            "html_url": format!("{}/{kind}/{issue}#issuecomment-{id}", self.html_repo_url()),
            "body": comment.body,
            "user": self.user_json(&comment.author),
            "created_at": rfc3339(comment.created_at),
            "updated_at": rfc3339(comment.updated_at),
            "issue_url": format!("{}/issues/{issue}", self.repo_url()),
            "author_association": self.association(&comment.author),
            "performed_via_github_app": null,
            "reactions": Self::reactions_json(&url),
            "pin": null,
            "minimized": null
        })
    }

    fn check_runs_json(&self, sha: &str) -> Value {
        let runs: Vec<Value> = self
            .check_runs
            .get(sha)
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(index, run)| {
                let id = 9_000_000_000u64 + index as u64;
                let url = format!("{}/check-runs/{id}", self.repo_url());
                let completed = run.status == "completed";
                let at = rfc3339(run.at);
                json!({
                    "id": id,
                    "head_sha": sha,
                    "node_id": format!("CR_kwFAKE{id}"),
                    "external_id": "",
                    "url": url,
                    "html_url": format!("{}/runs/{id}", self.html_repo_url()),
                    "details_url": format!("{}/actions/runs/{id}", self.html_repo_url()),
                    "status": run.status,
                    "conclusion": run.conclusion,
                    "started_at": at,
                    "completed_at": if completed { json!(at) } else { Value::Null },
                    "output": {
                        "title": null, "summary": null, "text": null,
                        "annotations_count": 0,
                        "annotations_url": format!("{url}/annotations")
                    },
                    "name": run.name,
                    "check_suite": { "id": 8_000_000_000u64 },
                    "app": {
                        "id": 15368, "slug": "github-actions", "node_id": "MDM6QXBwMTUzNjg=",
                        "name": "GitHub Actions", "owner": self.user_json(&self.owner)
                    },
                    "pull_requests": []
                })
            })
            .collect();
        json!({ "total_count": runs.len(), "check_runs": runs })
    }

    fn combined_status_json(&self, sha: &str) -> Value {
        let url = format!("{}/commits/{sha}/status", self.repo_url());
        let statuses: Vec<Value> = self
            .statuses
            .get(sha)
            .map(|(state, at)| {
                let at = rfc3339(*at);
                json!({
                    "url": format!("{}/statuses/{sha}", self.repo_url()),
                    "avatar_url": null,
                    "id": 7_000_000_001u64,
                    "node_id": "SC_kwFAKE7000000001",
                    "state": state,
                    "description": null,
                    "target_url": null,
                    "context": "ci",
                    "created_at": at,
                    "updated_at": at
                })
            })
            .into_iter()
            .collect();
        // With no status at all GitHub answers "pending".
        let state = self
            .statuses
            .get(sha)
            .map_or("pending", |(s, _)| s.as_str());
        json!({
            "state": state,
            "statuses": statuses,
            "sha": sha,
            "total_count": statuses.len(),
            "repository": self.repo_json(),
            "commit_url": format!("{}/commits/{sha}", self.repo_url()),
            "url": url
        })
    }
}

fn state_matches(wanted: &str, open: bool) -> bool {
    match wanted {
        "all" => true,
        "closed" => !open,
        _ => open,
    }
}

/// GitHub's default is newest first (`sort=created&direction=desc`).
fn sort_issues(issues: &mut [&Issue], query: &[(String, String)]) {
    let by_updated = query_value(query, "sort") == Some("updated");
    issues.sort_by_key(|issue| {
        let time = if by_updated {
            issue.updated_at
        } else {
            issue.created_at
        };
        (time, issue.number)
    });
    if query_value(query, "direction") != Some("asc") {
        issues.reverse();
    }
}

// ---------------------------------------------------------------------------
// The gh CLI, Maverick's transport: how a real `gh` (2.23, Debian's) reaches
// this server, the GraphQL operations it sends, and answers held back so a
// test can stage a race between two real processes.

/// The host gh is told it talks to: for `github.localhost` gh speaks plain
/// HTTP to `api.github.localhost` (REST) and `api.github.localhost/graphql`,
/// and the proxy variables of [`FakeGithub::gh_env`] bring every request
/// here, so no name is resolved and nothing leaves the loopback interface.
pub const GH_HOST: &str = "github.localhost";

/// A request as a hold sees it, once it has been answered.
pub struct HeldRequest<'a> {
    pub method: &'a str,
    /// Path and query, as sent.
    pub path: &'a str,
    pub body: &'a str,
    pub user_agent: &'a str,
}

impl HeldRequest<'_> {
    /// Sent by the gh CLI (Maverick's writes and reads).
    pub fn is_from_gh(&self) -> bool {
        self.user_agent.starts_with("GitHub CLI")
    }
}

type HoldMatcher = Box<dyn Fn(&HeldRequest<'_>) -> bool + Send>;

struct ArmedHold {
    matches: HoldMatcher,
    gate: Arc<Gate>,
}

/// The answer to one request, held back after the request took effect.
/// Dropping it lets the answer go.
pub struct Hold {
    gate: Arc<Gate>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum GateState {
    Armed,
    Holding,
    Released,
}

struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

/// Far longer than any wait a working test makes: past it, the test fails.
const HOLD_TIMEOUT: Duration = Duration::from_secs(120);

impl Gate {
    /// Called by the connection's thread, outside the state lock.
    fn hold(&self) {
        let mut state = lock(&self.state);
        if *state == GateState::Armed {
            *state = GateState::Holding;
            self.changed.notify_all();
        }
        let (_state, _) = self
            .changed
            .wait_timeout_while(state, HOLD_TIMEOUT, |s| *s != GateState::Released)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }
}

impl Hold {
    /// Blocks until a matching request has been answered and its answer is
    /// held; fails the test when none comes.
    #[track_caller]
    pub fn wait_until_holding(&self) {
        let state = lock(&self.gate.state);
        let (state, _) = self
            .gate
            .changed
            .wait_timeout_while(state, HOLD_TIMEOUT, |s| *s == GateState::Armed)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        assert!(
            *state != GateState::Armed,
            "no request matched the hold within {HOLD_TIMEOUT:?}"
        );
    }

    /// Lets the held answer go (or, if none is held yet, the next one).
    pub fn release(&self) {
        *lock(&self.gate.state) = GateState::Released;
        self.gate.changed.notify_all();
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.release();
    }
}

impl FakeGithub {
    /// The variables that route a real `gh` to this server, as the real
    /// gh reads them: `GH_HOST` (plain HTTP to `api.github.localhost`),
    /// `GH_TOKEN`, and this server as the HTTP and HTTPS proxy. The caller
    /// also removes `NO_PROXY`/`no_proxy` and gives gh a config dir of its own.
    pub fn gh_env(&self) -> Vec<(&'static str, String)> {
        let proxy = self.url();
        vec![
            ("GH_HOST", GH_HOST.to_string()),
            ("GH_TOKEN", TOKEN.to_string()),
            ("HTTP_PROXY", proxy.clone()),
            ("http_proxy", proxy.clone()),
            ("HTTPS_PROXY", proxy.clone()),
            ("https_proxy", proxy.clone()),
            ("ALL_PROXY", proxy),
            ("GH_NO_UPDATE_NOTIFIER", "1".to_string()),
            ("GH_PROMPT_DISABLED", "1".to_string()),
        ]
    }

    /// A label in the repository (gh adds only labels that exist).
    pub fn create_label(&self, name: &str) {
        self.state().ensure_label(name);
    }

    /// Holds back the answer to the first request that `matches`, after the
    /// request took effect (a write is committed), until the [`Hold`] is
    /// released or dropped: one process stays between two of its steps
    /// while another acts.
    pub fn hold_answer(&self, matches: impl Fn(&HeldRequest<'_>) -> bool + Send + 'static) -> Hold {
        let gate = Arc::new(Gate {
            state: Mutex::new(GateState::Armed),
            changed: Condvar::new(),
        });
        self.state().holds.push(ArmedHold {
            matches: Box::new(matches),
            gate: Arc::clone(&gate),
        });
        Hold { gate }
    }
}

impl State {
    /// The base URL of the links in an answer: the host the client asked
    /// for when it came through the proxy (gh asks `api.github.localhost`,
    /// and follows `link` headers there with its token), else this server.
    fn asked_base(&self, request: &Request) -> Option<String> {
        let host = request.header("host")?;
        let own = self.base.trim_start_matches("http://");
        (host != own).then(|| format!("http://{host}"))
    }

    /// The first armed hold that matches `request`, disarmed.
    fn take_hold(&mut self, request: &Request) -> Option<Arc<Gate>> {
        let body = String::from_utf8_lossy(&request.body);
        let seen = HeldRequest {
            method: &request.method,
            path: &request.target,
            body: &body,
            user_agent: request.header("user-agent").unwrap_or(""),
        };
        let at = self.holds.iter().position(|hold| (hold.matches)(&seen))?;
        Some(self.holds.remove(at).gate)
    }

    /// GitHub's GraphQL endpoint, for the operations gh 2.23 sends on the
    /// way to `gh issue view --json labels` and `gh issue edit
    /// --add-label/--remove-label`. Answers carry exactly the fields asked
    /// for (gh's GraphQL client decodes strictly); anything else is a
    /// GraphQL error, so a new operation fails loudly.
    fn graphql(&mut self, request: &Request) -> Answer {
        let docs = "https://docs.github.com/graphql";
        let body = match json_body(request, docs) {
            Ok(body) => body,
            Err(answer) => return answer,
        };
        let query = body["query"].as_str().unwrap_or_default();
        let vars = &body["variables"];
        let operation = graphql_operation(query);
        match operation {
            "IssueByNumber" => self.graphql_issue(query, vars),
            "RepositoryLabelList" => self.graphql_labels(vars),
            "LabelAdd" | "LabelRemove" => self.graphql_relabel(operation == "LabelAdd", vars),
            _ => graphql_error(
                "UNKNOWN",
                &format!("the fake GitHub does not answer the GraphQL operation {operation:?}"),
            ),
        }
    }

    fn graphql_repo_is_ours(&self, vars: &Value, name_key: &str) -> bool {
        let owner = vars["owner"].as_str().unwrap_or_default();
        let repo = vars[name_key].as_str().unwrap_or_default();
        owner.eq_ignore_ascii_case(&self.owner) && repo.eq_ignore_ascii_case(&self.repo)
    }

    fn graphql_issue(&mut self, query: &str, vars: &Value) -> Answer {
        if !self.graphql_repo_is_ours(vars, "repo") {
            return graphql_no_repository(vars, "repo");
        }
        let Some(number) = vars["number"].as_u64() else {
            return graphql_error(
                "INVALID",
                "Variable $number of type Int! was provided invalid value",
            );
        };
        if self.issues_on_demand && !self.issues.contains_key(&number) {
            self.seed_issue(number, &format!("Issue {number}"), &[], None);
        }
        let cutoff = self.now_ms() - self.get_lag_ms;
        let Some(issue) = self.issue_at(&number.to_string(), cutoff).cloned() else {
            return Answer::ok(json!({
                "data": { "repository": { "hasIssuesEnabled": true, "issue": null } },
                "errors": [{
                    "type": "NOT_FOUND",
                    "path": ["repository", "issue"],
                    "locations": [{ "line": 4, "column": 4 }],
                    "message": format!("Could not resolve to an issue or pull request with the number of {number}.")
                }]
            }));
        };
        let type_name = if issue.pull.is_some() {
            "PullRequest"
        } else {
            "Issue"
        };
        let labels: Vec<Value> = issue
            .labels
            .iter()
            .filter_map(|name| self.labels.iter().find(|l| &l.name == name))
            .map(|label| {
                json!({
                    "id": graphql_label_id(label.id),
                    "name": label.name,
                    "description": label.description,
                    "color": label.color
                })
            })
            .collect();
        let full = json!({
            "id": graphql_issue_id(number, issue.pull.is_some()),
            "number": number,
            "title": issue.title,
            "body": "",
            "url": format!("{}/{}/{number}", self.html_repo_url(), if issue.pull.is_some() { "pull" } else { "issues" }),
            "labels": { "nodes": labels, "totalCount": labels.len() },
            // What other gh versions and commands select besides.
            "state": if issue.open { "OPEN" } else { "CLOSED" },
            "closed": !issue.open,
            "author": { "login": issue.author },
            "assignees": { "nodes": issue.assignees.iter().map(|login| json!({ "login": login })).collect::<Vec<_>>(), "totalCount": issue.assignees.len() },
            "milestone": null,
            "projectCards": { "nodes": [], "totalCount": 0 },
            "projectItems": { "nodes": [], "totalCount": 0 }
        });
        let mut node = serde_json::Map::new();
        node.insert("__typename".into(), json!(type_name));
        for field in graphql_selection(query, type_name) {
            match full.get(&field) {
                Some(value) => node.insert(field, value.clone()),
                None => {
                    return graphql_error(
                        "UNKNOWN",
                        &format!("the fake GitHub does not answer {type_name}.{field}"),
                    )
                }
            };
        }
        Answer::ok(json!({
            "data": { "repository": { "hasIssuesEnabled": true, "issue": node } }
        }))
    }

    fn graphql_labels(&self, vars: &Value) -> Answer {
        if !self.graphql_repo_is_ours(vars, "name") {
            return graphql_no_repository(vars, "name");
        }
        let mut labels: Vec<&Label> = self.labels.iter().collect();
        labels.sort_by_key(|l| l.name.to_lowercase());
        let after: usize = vars["endCursor"]
            .as_str()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let page: Vec<Value> = labels
            .iter()
            .skip(after)
            .take(100)
            .map(|l| json!({ "id": graphql_label_id(l.id), "name": l.name }))
            .collect();
        let end = after + page.len();
        Answer::ok(json!({
            "data": { "repository": { "labels": {
                "nodes": page,
                "pageInfo": {
                    "hasNextPage": end < labels.len(),
                    "endCursor": (end > after).then(|| end.to_string())
                }
            } } }
        }))
    }

    fn graphql_relabel(&mut self, add: bool, vars: &Value) -> Answer {
        let input = &vars["input"];
        let Some(number) = input["labelableId"].as_str().and_then(graphql_issue_number) else {
            return graphql_error(
                "NOT_FOUND",
                "Could not resolve to a node with the global id",
            );
        };
        let mut names = Vec::new();
        for id in input["labelIds"].as_array().into_iter().flatten() {
            let label = id
                .as_str()
                .and_then(|id| self.labels.iter().find(|l| graphql_label_id(l.id) == id));
            match label {
                Some(label) => names.push(label.name.clone()),
                None => {
                    return graphql_error(
                        "NOT_FOUND",
                        &format!("Could not resolve to a node with the global id of '{id}'"),
                    )
                }
            }
        }
        let written_at = self.now_ms();
        let changed = self.update_issue(number, written_at, |issue| {
            for name in names {
                let present = issue.labels.iter().any(|l| l.eq_ignore_ascii_case(&name));
                if add && !present {
                    issue.labels.push(name);
                } else if !add {
                    issue.labels.retain(|l| !l.eq_ignore_ascii_case(&name));
                }
            }
        });
        if changed.is_none() {
            return graphql_error(
                "NOT_FOUND",
                "Could not resolve to a node with the global id",
            );
        }
        let (field, payload) = if add {
            ("addLabelsToLabelable", "AddLabelsToLabelablePayload")
        } else {
            (
                "removeLabelsFromLabelable",
                "RemoveLabelsFromLabelablePayload",
            )
        };
        Answer::ok(json!({ "data": { field: { "__typename": payload } } }))
    }
}

/// The operation's name: the word after `query` or `mutation`.
fn graphql_operation(query: &str) -> &str {
    let mut words = query
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty());
    words
        .find(|w| *w == "query" || *w == "mutation")
        .and_then(|_| words.next())
        .unwrap_or("")
}

/// The fields selected on `type_name` in the query's `...on TYPE{…}`
/// fragment, top level only.
fn graphql_selection(query: &str, type_name: &str) -> Vec<String> {
    let compact: String = query.chars().filter(|c| !c.is_whitespace()).collect();
    let Some(start) = compact.find(&format!("...on{type_name}{{")) else {
        return Vec::new();
    };
    let inner = &compact[start + "...on".len() + type_name.len() + 1..];
    let (mut depth, mut fields, mut word, mut in_args) =
        (0usize, Vec::new(), String::new(), 0usize);
    for c in inner.chars() {
        match c {
            '(' => in_args += 1,
            ')' => in_args = in_args.saturating_sub(1),
            _ if in_args > 0 => {}
            '{' => {
                if depth == 0 && !word.is_empty() {
                    fields.push(std::mem::take(&mut word));
                }
                depth += 1;
            }
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 && !word.is_empty() => fields.push(std::mem::take(&mut word)),
            ',' => {}
            _ if depth == 0 => word.push(c),
            _ => {}
        }
    }
    if !word.is_empty() {
        fields.push(word);
    }
    fields
}

fn graphql_issue_id(number: u64, pull: bool) -> String {
    if pull {
        format!("PR_kwFAKE{number}")
    } else {
        format!("I_kwFAKE{number}")
    }
}

fn graphql_issue_number(id: &str) -> Option<u64> {
    id.strip_prefix("I_kwFAKE")
        .or_else(|| id.strip_prefix("PR_kwFAKE"))?
        .parse()
        .ok()
}

fn graphql_label_id(id: u64) -> String {
    format!("LA_kwFAKE{id}")
}

fn graphql_error(kind: &str, message: &str) -> Answer {
    Answer::ok(json!({
        "data": null,
        "errors": [{ "type": kind, "message": message }]
    }))
}

fn graphql_no_repository(vars: &Value, name_key: &str) -> Answer {
    let owner = vars["owner"].as_str().unwrap_or_default();
    let repo = vars[name_key].as_str().unwrap_or_default();
    Answer::ok(json!({
        "data": { "repository": null },
        "errors": [{
            "type": "NOT_FOUND",
            "path": ["repository"],
            "locations": [{ "line": 2, "column": 3 }],
            "message": format!("Could not resolve to a Repository with the name '{owner}/{repo}'.")
        }]
    }))
}

// ---------------------------------------------------------------------------
// Repository rulesets

/// The first id GitHub-sized ruleset ids start from.
const FIRST_RULESET_ID: u64 = 4_100_000;
const RULESETS_DOCS: &str = "https://docs.github.com/rest/repos/rules";
/// The rule types a repository ruleset may hold (GitHub's
/// `repository-rule` one-of, the types this fake knows).
const RULE_TYPES: &[&str] = &[
    "creation",
    "update",
    "deletion",
    "required_linear_history",
    "required_signatures",
    "non_fast_forward",
    "pull_request",
    "required_status_checks",
];
/// What the origin's pre-receive hook reads, in the origin's directory.
const RULESETS_FILE: &str = "fake-github-rulesets";

/// The fake's rulesets: what GitHub keeps, and the origin whose
/// pre-receive hook enforces the active ones as GitHub's server would.
#[derive(Default)]
struct Rulesets {
    by_id: BTreeMap<u64, Value>,
    last_id: u64,
    /// Whether the token may administer the repository (write rulesets).
    admin: bool,
    enforced_on: Option<std::path::PathBuf>,
}

/// The origin's pre-receive hook: GitHub's enforcement of branch rulesets
/// (`deletion`, `non_fast_forward`) for the tests' git server. It reads
/// one line per active branch ruleset, `RULES INCLUDES EXCLUDES`
/// (comma-separated, `-` for none), each pattern turned into a shell
/// pattern by [`shell_pattern`], and refuses with GitHub's own words.
const ENFORCING_HOOK: &str = r#"#!/bin/sh
# The fake GitHub's active rulesets, enforced as GitHub's server does.
rules_file="$(dirname "$0")/../RULESETS_FILE"
[ -f "$rules_file" ] || exit 0
set -f
refused=0
while read -r old new ref; do
	while read -r rules includes excludes; do
		hit=
		IFS=,
		for pattern in $includes; do case "$ref" in $pattern) hit=1 ;; esac; done
		for pattern in $excludes; do case "$ref" in $pattern) hit= ;; esac; done
		unset IFS
		[ -n "$hit" ] || continue
		case ",$rules," in *,deletion,*)
			case "$new" in *[!0]*) ;; *)
				echo "error: GH013: Repository rule violations found for $ref." >&2
				echo "- Cannot delete this branch" >&2
				refused=1 ;;
			esac ;;
		esac
		case ",$rules," in *,non_fast_forward,*)
			case "$old" in *[!0]*)
				case "$new" in *[!0]*)
					if ! git merge-base --is-ancestor "$old" "$new"; then
						echo "error: GH013: Repository rule violations found for $ref." >&2
						echo "- Cannot force-push to this branch" >&2
						refused=1
					fi ;;
				esac ;;
			esac ;;
		esac
	done <"$rules_file"
done
exit $refused
"#;

/// A ruleset's fnmatch pattern as a shell `case` pattern: GitHub's `*`
/// stops at `/` and `**` does not, a shell's `*` never stops; the tests'
/// branch names make the two agree. `~ALL` and `~DEFAULT_BRANCH` are
/// GitHub's own names.
fn shell_pattern(pattern: &str, default_branch: &str) -> String {
    match pattern {
        "~ALL" => "*".to_string(),
        "~DEFAULT_BRANCH" => format!("refs/heads/{default_branch}"),
        other => other.replace("**/*", "*").replace("**", "*"),
    }
}

impl FakeGithub {
    /// Whether the token may administer the repository (write rulesets);
    /// without it GitHub answers 403.
    pub fn set_admin(&self, admin: bool) {
        self.state().rulesets.admin = admin;
    }

    /// Makes `origin` (a bare repository) refuse what the active rulesets
    /// forbid, as GitHub's server would: a pre-receive hook reading a file
    /// the fake rewrites on every ruleset change.
    pub fn enforce_rulesets_on(&self, origin: &std::path::Path) {
        let hook = origin.join("hooks").join("pre-receive");
        std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
        std::fs::write(
            &hook,
            ENFORCING_HOOK.replace("RULESETS_FILE", RULESETS_FILE),
        )
        .unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let mut state = self.state();
        state.rulesets.enforced_on = Some(origin.to_owned());
        state.write_rulesets_file();
    }

    /// Every ruleset, as `GET rulesets/{id}` answers it.
    pub fn rulesets(&self) -> Vec<Value> {
        self.state().rulesets.by_id.values().cloned().collect()
    }

    /// Sets a ruleset's enforcement, as an admin would in the web UI.
    pub fn set_ruleset_enforcement(&self, id: u64, enforcement: &str) {
        let mut state = self.state();
        if let Some(ruleset) = state.rulesets.by_id.get_mut(&id) {
            ruleset["enforcement"] = json!(enforcement);
        }
        state.write_rulesets_file();
    }
}

impl State {
    fn write_rulesets_file(&self) {
        let Some(origin) = &self.rulesets.enforced_on else {
            return;
        };
        let join = |value: &Value| {
            let list: Vec<String> = value
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(|p| shell_pattern(p, &self.default_branch))
                .collect();
            if list.is_empty() {
                "-".to_string()
            } else {
                list.join(",")
            }
        };
        let mut text = String::new();
        for ruleset in self.rulesets.by_id.values() {
            if ruleset["enforcement"] != "active" || ruleset["target"] != "branch" {
                continue;
            }
            let rules: Vec<&str> = ruleset["rules"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["type"].as_str())
                .collect();
            let ref_name = &ruleset["conditions"]["ref_name"];
            text.push_str(&format!(
                "{} {} {}\n",
                if rules.is_empty() {
                    "-".to_string()
                } else {
                    rules.join(",")
                },
                join(&ref_name["include"]),
                join(&ref_name["exclude"]),
            ));
        }
        std::fs::write(origin.join(RULESETS_FILE), text).unwrap();
    }

    fn ruleset_json(&self, id: u64, body: &Value, created_at: &str) -> Value {
        let url = self.repo_url();
        json!({
            "id": id,
            "name": body["name"],
            "target": body.get("target").cloned().unwrap_or(json!("branch")),
            "source_type": "Repository",
            "source": format!("{}/{}", self.owner, self.repo),
            "enforcement": body["enforcement"],
            "bypass_actors": body.get("bypass_actors").cloned().unwrap_or(json!([])),
            "current_user_can_bypass": "never",
            "node_id": format!("RRS_lACkVXNlcgQ{id}"),
            "_links": {
                "self": { "href": format!("{url}/rulesets/{id}") },
                "html": { "href": format!("{}/rules/{id}", self.html_repo_url()) }
            },
            "conditions": body.get("conditions").cloned().unwrap_or(json!({
                "ref_name": { "include": [], "exclude": [] }
            })),
            "rules": body.get("rules").cloned().unwrap_or(json!([])),
            "created_at": created_at,
            "updated_at": rfc3339(self.now_secs()),
        })
    }

    /// A ruleset body as GitHub validates it: a name unique in the
    /// repository, a known enforcement and target, rules of known types.
    fn check_ruleset(&self, body: &Value, id: Option<u64>) -> Result<(), Answer> {
        let invalid = |message: &str| {
            Err(Answer::validation_failed(
                json!({ "resource": "Ruleset", "code": "custom", "message": message }),
                RULESETS_DOCS,
            ))
        };
        let Some(name) = body["name"].as_str().filter(|n| !n.is_empty()) else {
            return invalid("Name can't be blank");
        };
        if !matches!(
            body["enforcement"].as_str(),
            Some("disabled" | "active" | "evaluate")
        ) {
            return invalid("Invalid property /enforcement: is not one of [\"disabled\", \"active\", \"evaluate\"].");
        }
        if !matches!(
            body.get("target").map(Value::as_str),
            None | Some(Some("branch" | "tag" | "push" | "repository"))
        ) {
            return invalid("Invalid property /target");
        }
        for rule in body["rules"].as_array().into_iter().flatten() {
            if !rule["type"]
                .as_str()
                .is_some_and(|t| RULE_TYPES.contains(&t))
            {
                return invalid("Invalid rule type");
            }
        }
        let taken = self
            .rulesets
            .by_id
            .iter()
            .any(|(other, r)| Some(*other) != id && r["name"] == name);
        if taken {
            return invalid("Name must be unique");
        }
        Ok(())
    }

    fn admin_only(&self) -> Option<Answer> {
        (!self.rulesets.admin)
            .then(|| Answer::error(403, "Must have admin rights to Repository.", RULESETS_DOCS))
    }

    fn list_rulesets(&self, query: &[(String, String)], rest_path: &str) -> Answer {
        let items: Vec<Value> = self
            .rulesets
            .by_id
            .values()
            .map(|r| {
                let mut item = r.clone();
                let object = item.as_object_mut().unwrap();
                object.remove("conditions");
                object.remove("rules");
                object.remove("bypass_actors");
                item
            })
            .collect();
        self.paginate(items, query, rest_path)
    }

    fn get_ruleset(&self, id: &str) -> Answer {
        match id
            .parse::<u64>()
            .ok()
            .and_then(|id| self.rulesets.by_id.get(&id))
        {
            Some(ruleset) => Answer::ok(ruleset.clone()),
            None => Answer::not_found(RULESETS_DOCS),
        }
    }

    fn create_ruleset(&mut self, request: &Request) -> Answer {
        if let Some(denied) = self.admin_only() {
            return denied;
        }
        let body = match json_body(request, RULESETS_DOCS) {
            Ok(body) => body,
            Err(answer) => return answer,
        };
        if let Err(answer) = self.check_ruleset(&body, None) {
            return answer;
        }
        self.rulesets.last_id = self.rulesets.last_id.max(FIRST_RULESET_ID) + 1;
        let id = self.rulesets.last_id;
        let ruleset = self.ruleset_json(id, &body, &rfc3339(self.now_secs()));
        self.rulesets.by_id.insert(id, ruleset.clone());
        self.write_rulesets_file();
        Answer::with_status(201, ruleset)
    }

    fn update_ruleset(&mut self, id: &str, request: &Request) -> Answer {
        if let Some(denied) = self.admin_only() {
            return denied;
        }
        let Some(id) = id
            .parse::<u64>()
            .ok()
            .filter(|id| self.rulesets.by_id.contains_key(id))
        else {
            return Answer::not_found(RULESETS_DOCS);
        };
        let body = match json_body(request, RULESETS_DOCS) {
            Ok(body) => body,
            Err(answer) => return answer,
        };
        // PUT replaces the fields it names and keeps the others.
        let old = self.rulesets.by_id[&id].clone();
        let mut merged = old.clone();
        for (key, value) in body.as_object().into_iter().flatten() {
            merged[key] = value.clone();
        }
        if let Err(answer) = self.check_ruleset(&merged, Some(id)) {
            return answer;
        }
        let created_at = old["created_at"].as_str().unwrap_or_default().to_string();
        let ruleset = self.ruleset_json(id, &merged, &created_at);
        self.rulesets.by_id.insert(id, ruleset.clone());
        self.write_rulesets_file();
        Answer::ok(ruleset)
    }

    fn delete_ruleset(&mut self, id: &str) -> Answer {
        if let Some(denied) = self.admin_only() {
            return denied;
        }
        match id
            .parse::<u64>()
            .ok()
            .and_then(|id| self.rulesets.by_id.remove(&id))
        {
            Some(_) => {
                self.write_rulesets_file();
                Answer::no_content()
            }
            None => Answer::not_found(RULESETS_DOCS),
        }
    }
}

// ---------------------------------------------------------------------------
// Request bodies

fn json_body(request: &Request, docs: &str) -> Result<Value, Answer> {
    if request.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    serde_json::from_slice(&request.body)
        .map_err(|_| Answer::error(400, "Problems parsing JSON", docs))
}

fn comment_body(request: &Request, docs: &str) -> Result<String, Answer> {
    let value = json_body(request, docs)?;
    let invalid = |code: &str, message: Option<&str>| {
        let mut error = json!({ "resource": "IssueComment", "code": code, "field": "body" });
        if let Some(message) = message {
            error["message"] = json!(message);
        }
        Answer::validation_failed(error, docs)
    };
    match value.get("body").and_then(Value::as_str) {
        None => Err(invalid("missing_field", None)),
        Some("") => Err(invalid("missing_field", None)),
        Some(body) if body.chars().count() > MAX_COMMENT_BODY => Err(invalid(
            "custom",
            Some("body is too long (maximum is 65536 characters)"),
        )),
        Some(body) => Ok(body.to_string()),
    }
}

/// `{"labels": ["a", …]}`, a bare array, or label objects with a `name`.
fn label_names(request: &Request, docs: &str) -> Result<Vec<String>, Answer> {
    let value = json_body(request, docs)?;
    let list = match &value {
        Value::Array(list) => Some(list),
        Value::Object(object) => object.get("labels").and_then(Value::as_array),
        _ => None,
    };
    let Some(list) = list else {
        return Err(Answer::validation_failed(
            json!({ "resource": "Label", "code": "missing_field", "field": "labels" }),
            docs,
        ));
    };
    Ok(list
        .iter()
        .filter_map(|item| item.as_str().or_else(|| item.get("name")?.as_str()))
        .map(str::to_string)
        .collect())
}

// ---------------------------------------------------------------------------
// HTTP

/// One HTTP/1.1 request (the fake model server reads them the same way).
pub(super) struct Request {
    pub(super) method: String,
    /// Origin-form path and query.
    pub(super) target: String,
    headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
    pub(super) close: bool,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    fn query(&self) -> &str {
        self.target.split_once('?').map_or("", |(_, query)| query)
    }
}

/// What a route decided, before the common headers are added.
struct Answer {
    status: u16,
    body: Option<Value>,
    headers: Vec<(String, String)>,
    /// A primary rate-limit answer: remaining 0 until this epoch second.
    rate_limited_until: Option<i64>,
    /// A single resource's `updated_at`, sent as `Last-Modified`.
    last_modified: Option<i64>,
}

impl Answer {
    fn with_status(status: u16, body: Value) -> Answer {
        Answer {
            status,
            body: Some(body),
            headers: Vec::new(),
            rate_limited_until: None,
            last_modified: None,
        }
    }

    fn ok(body: Value) -> Answer {
        Answer::with_status(200, body)
    }

    fn no_content() -> Answer {
        Answer {
            status: 204,
            body: None,
            headers: Vec::new(),
            rate_limited_until: None,
            last_modified: None,
        }
    }

    fn error(status: u16, message: &str, docs: &str) -> Answer {
        Answer::with_status(
            status,
            json!({ "message": message, "documentation_url": docs, "status": status.to_string() }),
        )
    }

    fn rate_limited(reset: i64) -> Answer {
        let mut answer = Answer::error(
            403,
            "API rate limit exceeded for user ID 51007. If you reach out to GitHub Support for \
             help, please include the request ID FAKE.",
            "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-the-primary-rate-limit",
        );
        answer.rate_limited_until = Some(reset);
        answer
    }

    fn not_found(docs: &str) -> Answer {
        Answer::error(404, "Not Found", docs)
    }

    fn validation_failed(error: Value, docs: &str) -> Answer {
        Answer::with_status(
            422,
            json!({
                "message": "Validation Failed",
                "errors": [error],
                "documentation_url": docs,
                "status": "422"
            }),
        )
    }

    fn header(&mut self, name: &str, value: String) {
        self.headers.push((name.to_string(), value));
    }

    fn modified_at(mut self, updated_at: i64) -> Answer {
        self.last_modified = Some(updated_at);
        self
    }
}

pub(super) struct Response {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

fn serve_connection(shared: &Shared, stream: TcpStream) -> io::Result<()> {
    let connection = shared.connections.fetch_add(1, Ordering::SeqCst);
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    loop {
        let request = match read_request(&mut reader, &mut writer) {
            Ok(Some(request)) => request,
            Ok(None) => return Ok(()),
            Err(error) if error.kind() == io::ErrorKind::InvalidData => {
                let response = Response {
                    status: 400,
                    headers: vec![(
                        "content-type".into(),
                        "application/json; charset=utf-8".into(),
                    )],
                    body: br#"{"message":"Bad Request"}"#.to_vec(),
                };
                return write_response(&mut writer, &response, true);
            }
            Err(error) => return Err(error),
        };
        if shared.stopping.load(Ordering::SeqCst) {
            return Ok(());
        }
        shared.in_flight.fetch_add(1, Ordering::SeqCst);
        let response = serve_request(shared, &request, connection);
        // Answered: no longer in flight, even before the client reads it.
        shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        write_response(&mut writer, &response, request.close)?;
        if request.close {
            return Ok(());
        }
    }
}

/// Answers one request read on `connection`; the requests read and not
/// yet answered at that moment, this one included, are the concurrent ones.
fn serve_request(shared: &Shared, request: &Request, connection: u64) -> Response {
    let slow = {
        let mut state = lock(&shared.state);
        let delay = state.slow.pop_front();
        delay.map(|delay| (state.clock.clone(), delay))
    };
    if let Some((clock, delay)) = slow {
        let until = clock.instant() + delay;
        shared.slowed.fetch_add(1, Ordering::SeqCst);
        clock.wait_until(until);
    }
    if lock(&shared.state).held {
        lock(&shared.state).waiting += 1;
        while lock(&shared.state).held && !shared.stopping.load(Ordering::SeqCst) {
            thread::sleep(Duration::from_millis(5));
        }
        lock(&shared.state).waiting -= 1;
    }
    let in_flight = shared.in_flight.load(Ordering::SeqCst);
    let response = lock(&shared.state).respond(request, connection, in_flight);
    let hold = lock(&shared.state).take_hold(request);
    if let Some(gate) = hold {
        gate.hold();
    }
    response
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_string())
}

fn read_line(reader: &mut impl BufRead) -> io::Result<Option<String>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    Ok(Some(line.trim_end_matches(['\r', '\n']).to_string()))
}

pub(super) fn read_request(
    reader: &mut impl BufRead,
    writer: &mut impl Write,
) -> io::Result<Option<Request>> {
    // Tolerate blank lines between pipelined requests.
    let request_line = loop {
        match read_line(reader)? {
            None => return Ok(None),
            Some(line) if line.is_empty() => continue,
            Some(line) => break line,
        }
    };
    let mut parts = request_line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(invalid("malformed request line"));
    };
    let mut headers = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or_else(|| invalid("headers cut short"))?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line
            .split_once(':')
            .ok_or_else(|| invalid("malformed header"))?;
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let header = |name: &str| {
        headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.to_ascii_lowercase())
    };
    if header("expect").as_deref() == Some("100-continue") {
        writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        writer.flush()?;
    }
    let body = if header("transfer-encoding").is_some_and(|te| te.contains("chunked")) {
        read_chunked(reader)?
    } else {
        let length = match header("content-length") {
            Some(length) => length
                .parse::<usize>()
                .map_err(|_| invalid("bad content-length"))?,
            None => 0,
        };
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    let connection = header("connection").unwrap_or_default();
    let close = if version == "HTTP/1.0" {
        !connection.contains("keep-alive")
    } else {
        connection.contains("close")
    };
    // An absolute-form target ("http://host/path") is reduced to its path.
    let target = match target.split_once("://") {
        Some((_, rest)) => rest
            .find('/')
            .map_or("/", |slash| &rest[slash..])
            .to_string(),
        None => target.to_string(),
    };
    Ok(Some(Request {
        method: method.to_ascii_uppercase(),
        target,
        headers,
        body,
        close,
    }))
}

fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line = read_line(reader)?.ok_or_else(|| invalid("chunk cut short"))?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size, 16).map_err(|_| invalid("bad chunk size"))?;
        if size == 0 {
            // Trailers, up to the blank line.
            while read_line(reader)?.is_some_and(|line| !line.is_empty()) {}
            return Ok(body);
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        read_line(reader)?;
    }
}

pub(super) fn write_response(
    writer: &mut impl Write,
    response: &Response,
    close: bool,
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\n",
        response.status,
        status_reason(response.status)
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if response.status != 204 && response.status != 304 {
        head.push_str(&format!("content-length: {}\r\n", response.body.len()));
    }
    head.push_str(if close {
        "connection: close\r\n\r\n"
    } else {
        "connection: keep-alive\r\n\r\n"
    });
    // One write: a head and a body sent apart wait out the client's
    // delayed ACK (Nagle), 40 ms a response, which GitHub never costs.
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&response.body);
    writer.write_all(&bytes)?;
    writer.flush()
}

fn status_reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        304 => "Not Modified",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        422 => "Unprocessable Entity",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Unknown",
    }
}

/// `Authorization: Bearer <t>` or `Authorization: token <t>`.
/// A request's price against the secondary limits, as GitHub's REST
/// documentation sets it: GET, HEAD and OPTIONS 1 point, POST, PATCH, PUT
/// and DELETE 5; creating an issue, a comment or a label (adding labels to
/// an issue may create them) is content, editing a comment is content under
/// the strict reading.
fn price(request: &Request) -> (u32, Content) {
    let method = request.method.as_str();
    let points = if matches!(method, "GET" | "HEAD" | "OPTIONS") {
        1
    } else {
        5
    };
    let segments: Vec<&str> = request
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .collect();
    let rest: &[&str] = match segments.as_slice() {
        ["repos", _, _, rest @ ..] | ["repositories", _, rest @ ..] => rest,
        _ => &[],
    };
    let content = match (method, rest) {
        ("POST", ["issues"] | ["labels"] | ["issues", _, "comments" | "labels"]) => Content::Create,
        ("POST", ["issues", "comments", _]) => Content::Edit,
        ("PATCH", ["issues", "comments", _]) => Content::Edit,
        _ => Content::No,
    };
    (points, content)
}

fn bearer_token(request: &Request) -> Option<&str> {
    let value = request.header("authorization")?;
    let (scheme, token) = value.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token"))
        .then(|| token.trim())
}

/// GitHub's ETags for GETs are weak (`W/"…"`); answers to writes carry
/// strong ones, as the recorded traffic shows.
fn etag(body: &[u8], headers: &[(String, String)], weak: bool) -> String {
    let mut hasher = DefaultHasher::new();
    body.hash(&mut hasher);
    headers.hash(&mut hasher);
    let tag = format!("\"{:016x}\"", hasher.finish());
    if weak {
        format!("W/{tag}")
    } else {
        tag
    }
}

/// `If-Modified-Since` at or after the resource's `Last-Modified`; only a
/// resource that has one (a single issue or comment, not a list) answers it.
fn not_modified_since(request: &Request, last_modified: Option<i64>) -> bool {
    let since = request
        .header("if-modified-since")
        .and_then(parse_http_date);
    matches!((since, last_modified), (Some(since), Some(modified)) if modified <= since)
}

fn if_none_match(request: &Request, etag: &str) -> bool {
    let strip = |tag: &str| tag.trim().trim_start_matches("W/").to_string();
    request.header("if-none-match").is_some_and(|header| {
        header
            .split(',')
            .any(|candidate| candidate.trim() == "*" || strip(candidate) == strip(etag))
    })
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            (
                percent_decode(&key.replace('+', " ")),
                percent_decode(&value.replace('+', " ")),
            )
        })
        .collect()
}

fn query_value<'q>(query: &'q [(String, String)], name: &str) -> Option<&'q str> {
    query
        .iter()
        .find(|(key, _)| key == name)
        .map(|(_, value)| value.as_str())
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let hex = bytes
            .get(index + 1..index + 3)
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[index], hex) {
            (b'%', Some(byte)) => {
                decoded.push(byte);
                index += 3;
            }
            (byte, _) => {
                decoded.push(byte);
                index += 1;
            }
        }
    }
    String::from_utf8_lossy(&decoded).into_owned()
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (byte as char).to_string()
            }
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Time: epoch seconds to and from GitHub's two formats.

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn rfc3339(secs: i64) -> String {
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    let second_of_day = secs.rem_euclid(86_400);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

/// `Tue, 10 Oct 2017 16:00:00 GMT` (RFC 7231).
fn http_date(secs: i64) -> String {
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs.div_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let second_of_day = secs.rem_euclid(86_400);
    format!(
        "{}, {day:02} {} {year:04} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[month as usize - 1],
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60
    )
}

/// `2026-11-30T10:15:00Z`, with optional fraction; what `since` takes.
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    let text = text.strip_suffix('Z')?;
    let (date, time) = text.split_once('T')?;
    let mut date = date.split('-').map(str::parse::<i64>);
    let (year, month, day) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let time = time.split('.').next()?;
    let mut time = time.split(':').map(str::parse::<i64>);
    let (hour, minute, second) = (time.next()?.ok()?, time.next()?.ok()?, time.next()?.ok()?);
    let days = days_from_civil(year, u32::try_from(month).ok()?, u32::try_from(day).ok()?);
    Some(days * 86_400 + hour * 3600 + minute * 60 + second)
}

/// Reads GitHub's `Date` header back into epoch seconds.
pub fn parse_http_date(text: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mut parts = text.split_whitespace().skip(1);
    let day: u32 = parts.next()?.parse().ok()?;
    let month_name = parts.next()?;
    let month = MONTHS.iter().position(|name| *name == month_name)? as u32 + 1;
    let year: i64 = parts.next()?.parse().ok()?;
    let mut time = parts.next()?.split(':').map(str::parse::<i64>);
    let (hour, minute, second) = (time.next()?.ok()?, time.next()?.ok()?, time.next()?.ok()?);
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second)
}
