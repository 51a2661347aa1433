//! The `github` surface (SPEC 1): issue labels, assignees and marker
//! comments through GitHub's REST API (version 2022-11-28).
//!
//! octocrab carries the requests: base URI, the token's `Authorization`
//! header (sent only to the API's own host), rustls. How to ask is decided
//! here, because the product's promises depend on it:
//!
//! - every request has a timeout; 5xx answers, timeouts and broken
//!   connections are retried with jittered exponential backoff; rate-limit
//!   answers are waited out (`retry-after`, else until `x-ratelimit-reset`),
//!   within a cap, and said on stderr at `-v`;
//! - GETs are conditional (ETags, kept in a cache the clone's processes
//!   share), so a read that finds nothing new costs no rate limit;
//! - requests run one at a time, so at most one content-creating request is
//!   ever in flight; a comment POST whose answer was lost is looked for (by
//!   its body, which carries a unique `marker_id`) before it is sent again,
//!   and a copy that slips through anyway is recognised by that id;
//! - the surface's clock is the `Date` header of the latest answer, so
//!   reading the time costs no request;
//! - GitHub's lists lag writes by seconds: a read shows this process's own
//!   writes even where the list has not caught up (read-your-writes);
//! - markers count only from trusted authors (SPEC 3, authenticity).
//!
//! The token is held in [`Token`], whose `Debug` hides it; no log line
//! prints a header, and every message built from an answer or a transport
//! error passes through [`GithubSurface::redact`].

use std::cell::{Cell, OnceCell, RefCell};
use std::collections::HashMap;
use std::time::{Duration, Instant};

use http::{header, Method, StatusCode};
use http_body_util::BodyExt as _;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::{
    Applied, CheckRun, CiStatus, Comment, Guard, Issue, IssueSummary, Op, PullRequest, Surface,
    SurfaceError, Write,
};
use crate::clock::Clock;
use crate::timefmt::Timestamp;

/// The most a page holds; an epic's comments come 100 at a time.
const PER_PAGE: u32 = 100;
/// Attempts of one request that meets 5xx answers, timeouts or broken connections.
const MAX_ATTEMPTS: u32 = 5;
/// The longest single wait for a rate limit or a pacing slot; a longer one
/// is an error that says when to come back. GitHub asks for a minute when
/// it names no time, and twice that at the next answer like it.
const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(150);
/// The longest wait for a request's turn in its token's pacing: a queue
/// of this machine's own requests, which moves, so longer than a wait for
/// a limit GitHub answered; beyond it, an error before anything is sent.
const MAX_PACE_WAIT: Duration = Duration::from_secs(600);
/// The most one request waits for rate limits in all: a fleet that starts
/// together meets a few short ones, not an endless series.
const MAX_RATE_LIMITED: Duration = Duration::from_secs(300);
/// A guard is judged on this process's read of the issue when it is younger
/// than this and nothing was written since (see [`GithubSurface::write`]).
const GUARD_READ_MAX_AGE: Duration = Duration::from_secs(1);
/// How long GitHub's lists may miss a write: what a list that carries no
/// time of its own is taken to reflect.
const LIST_LAG_HORIZON: Duration = Duration::from_secs(60);
/// How long this process's own comments are added to reads that miss them.
const OWN_COMMENT_HORIZON: Duration = Duration::from_secs(600);
/// Far more pages than any issue has: a `link` loop must end.
const MAX_PAGES: usize = 2000;
const TRUSTED_ASSOCIATIONS: [&str; 3] = ["OWNER", "MEMBER", "COLLABORATOR"];

mod api;
mod cache;
mod mirror;
mod pace;
mod token;
mod transport;

use api::ApiComment;
pub(crate) use api::ApiRuleset;
use cache::{CachedGet, SharedCache};
pub use token::{resolve_token, Token, TokenSource};
use transport::Reply;

#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    #[error("no GitHub token: set GH_TOKEN (or GITHUB_TOKEN), or log in with `gh auth login`")]
    NoToken,
    #[error("no GitHub token for {host}: set GH_ENTERPRISE_TOKEN (or GITHUB_ENTERPRISE_TOKEN), or log in with `gh auth login --hostname {host}` (GH_TOKEN is for github.com and is never sent to another host)")]
    NoEnterpriseToken { host: String },
    #[error("the GitHub token from {origin} is not usable: it holds spaces or control characters")]
    BadToken { origin: TokenSource },
    #[error("no GitHub repository to coordinate on: the remote {remote:?} is not on github.com")]
    NoRepo { remote: String },
    #[error("GitHub has no repository {repo} that the token from {origin} can see")]
    NoSuchRepo { repo: String, origin: TokenSource },
    #[error("the GitHub API URL {url:?} is not usable: {reason}")]
    BadUrl { url: String, reason: String },
    #[error("could not start the GitHub client: {0}")]
    Client(String),
    #[error("GitHub refused the token from {origin} ({what}: {status} {message})")]
    Unauthorized {
        origin: TokenSource,
        what: String,
        status: u16,
        message: String,
    },
    #[error("{what}: GitHub's {kind} rate limit holds until {until}, longer than maverick waits")]
    RateLimited {
        what: String,
        kind: &'static str,
        until: Timestamp,
    },
    #[error("{what}: GitHub answered {status} {message}")]
    Status {
        what: String,
        status: u16,
        message: String,
    },
    #[error("{what}: no usable answer from {api_url} after {attempts} attempts (last: {last})")]
    Unavailable {
        what: String,
        api_url: String,
        attempts: u32,
        last: String,
    },
    #[error("{what}: GitHub's answer is not what maverick expected: {detail}")]
    BadAnswer { what: String, detail: String },
    #[error("GitHub did not {verb} {logins} on #{issue} (not a collaborator, or not a user)")]
    Assignees {
        issue: u64,
        verb: &'static str,
        logins: String,
    },
    #[error("{cause}; the label {label:?} this write had just added to #{issue} could not be taken off again")]
    LabelLeftBehind {
        issue: u64,
        label: String,
        cause: Box<SurfaceError>,
    },
}

impl GithubError {
    /// The command that gets the user out, where there is one.
    pub(crate) fn hint(&self) -> Option<String> {
        Some(match self {
            GithubError::NoToken | GithubError::NoEnterpriseToken { .. } => {
                "or coordinate through the git remote instead: `git config maverick.surface git`"
                    .to_owned()
            }
            GithubError::BadToken { origin } => format!("set {origin} to the token alone"),
            GithubError::NoRepo { .. } => {
                "name it with `-R OWNER/NAME` or `git config maverick.repo OWNER/NAME`".to_owned()
            }
            GithubError::NoSuchRepo { .. } => {
                "check -R OWNER/NAME (or maverick.repo, or the remote's URL), and that the token may read it"
                    .to_owned()
            }
            GithubError::BadUrl { .. } => {
                "fix GITHUB_API_URL or `git config maverick.githubApiUrl URL`".to_owned()
            }
            GithubError::Unauthorized { origin, .. } => format!(
                "check the token in {origin} (`gh auth status`), and that it may read and write this repository's issues"
            ),
            GithubError::RateLimited { until, .. } => {
                format!("run the command again after {until}")
            }
            GithubError::Unavailable { api_url, .. } if api_url.contains("://api.github.com") => {
                "GitHub may be down (https://www.githubstatus.com); run the command again later"
                    .to_owned()
            }
            GithubError::Unavailable { api_url, .. } => format!(
                "check that {api_url} answers from here (it comes from GITHUB_API_URL, \
                 maverick.githubApiUrl or the repository's host), or run the command again later"
            ),
            GithubError::Assignees { .. } => {
                "only the repository's collaborators can be assigned".to_owned()
            }
            GithubError::LabelLeftBehind { issue, label, .. } => {
                format!("take it off: `git maverick coord label remove {issue} {label}`")
            }
            _ => return None,
        })
    }
}

impl From<GithubError> for SurfaceError {
    fn from(err: GithubError) -> Self {
        SurfaceError::Github(Box::new(err))
    }
}

/// What the surface needs to talk to one repository.
#[derive(Clone, Debug)]
pub struct GithubConfig {
    /// `https://api.github.com`, or a GitHub Enterprise `https://HOST/api/v3`.
    pub api_url: String,
    /// `OWNER/NAME`.
    pub repo: String,
    pub token: Token,
    /// Logins whose markers count besides the repository's members.
    pub trusted_authors: Vec<String>,
    /// How long one request may take before it is given up and retried.
    pub timeout: Duration,
    /// The local clock: the time before GitHub's first answer, how long
    /// since that answer, and every wait (backoff, rate limits).
    pub clock: Clock,
    /// Where the conditional-request cache shared by this clone's
    /// processes lives (in the common git dir); `None`: this process only.
    pub cache_dir: Option<std::path::PathBuf>,
    /// Where the pacing ledgers of this machine's tokens live (the user's
    /// cache directory, shared by every clone); `None`: unpaced.
    pub pace_dir: Option<std::path::PathBuf>,
}

pub struct GithubSurface {
    runtime: tokio::runtime::Runtime,
    client: octocrab::Octocrab,
    api_url: String,
    repo: String,
    token: Token,
    trusted_authors: Vec<String>,
    timeout: Duration,
    clock: Clock,
    /// The token's login, once known (from `GET /user` or a comment we wrote).
    identity: OnceCell<String>,
    identity_asked: Cell<bool>,
    state: RefCell<State>,
    cache: Option<SharedCache>,
    pacer: Option<pace::Pacer>,
}

#[derive(Default)]
struct State {
    /// The `Date` of the latest answer, and when it came.
    clock: Option<(Timestamp, Instant)>,
    etags: HashMap<String, CachedGet>,
    own_writes: Vec<OwnWrite>,
    /// This process's latest read of each issue, for guards.
    last_read: HashMap<u64, (Instant, Issue)>,
    /// The labels of each issue as the latest read or label answer gave them.
    labels: HashMap<u64, Vec<String>>,
    /// The repository's recent comments, as last read.
    recent: Option<mirror::Recent>,
}

/// One write this process made, kept so that a lagging read still shows it.
struct OwnWrite {
    issue: u64,
    /// The surface time of the answer to the write.
    at: Timestamp,
    op: OwnOp,
}

enum OwnOp {
    AddLabels(Vec<String>),
    RemoveLabel(String),
    Assign(Vec<String>),
    Unassign(Vec<String>),
    Comment(Comment),
}

impl GithubSurface {
    pub fn new(config: GithubConfig) -> Result<GithubSurface, GithubError> {
        let bad_url = |reason: &str| GithubError::BadUrl {
            url: config.api_url.clone(),
            reason: reason.to_owned(),
        };
        let base: http::Uri = config
            .api_url
            .trim_end_matches('/')
            .parse()
            .map_err(|_| bad_url("not a URL"))?;
        if !matches!(base.scheme_str(), Some("https" | "http")) || base.authority().is_none() {
            return Err(bad_url("want http(s)://HOST[/PATH]"));
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map_err(|e| GithubError::Client(e.to_string()))?;
        // octocrab's service stack spawns its worker onto the current runtime.
        let client = {
            let _entered = runtime.enter();
            octocrab::Octocrab::builder()
                .base_uri(base)
                .map_err(|e| GithubError::Client(e.to_string()))?
                .personal_token(config.token.secret.clone())
                .build()
                .map_err(|e| GithubError::Client(e.to_string()))?
        };
        let pacer = config.pace_dir.as_deref().map(|dir| {
            pace::Pacer::new(
                dir,
                &config.api_url,
                &config.token.secret,
                pace::Budget::default(),
            )
        });
        Ok(GithubSurface {
            runtime,
            client,
            api_url: config.api_url.trim_end_matches('/').to_owned(),
            repo: config.repo,
            token: config.token,
            trusted_authors: config
                .trusted_authors
                .iter()
                .map(|l| l.to_ascii_lowercase())
                .collect(),
            timeout: config.timeout,
            clock: config.clock,
            identity: OnceCell::new(),
            identity_asked: Cell::new(false),
            state: RefCell::new(State::default()),
            cache: config
                .cache_dir
                .map(|dir| SharedCache::new(dir, cache::Limits::default())),
            pacer,
        })
    }

    /// `text` with the token blanked out wherever it appears.
    pub(crate) fn redact(&self, text: &str) -> String {
        let secret = self.token.secret.as_str();
        if secret.len() < 4 {
            return text.to_owned();
        }
        text.replace(secret, "[token]")
    }

    /// GitHub's time as of the latest answer, run forward on the local
    /// monotonic clock; the local clock before any answer.
    fn clock_now(&self) -> Timestamp {
        match self.state.borrow().clock {
            Some((date, at)) => date.plus(self.clock.since(at)),
            None => self.clock.now(),
        }
    }

    fn repo_path(&self, rest: &str) -> String {
        format!("/repos/{}/{rest}", self.repo)
    }
}
