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
//! - GETs are conditional (ETags, kept for the process), so a read that
//!   finds nothing new costs no rate limit;
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
use std::fmt;
use std::time::{Duration, Instant};

use http::{header, Method, StatusCode};
use http_body_util::BodyExt as _;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{
    Applied, CheckRun, CiStatus, Comment, Guard, Issue, IssueSummary, Op, PullRequest, Surface,
    SurfaceError, Write,
};
use crate::timefmt::Timestamp;

/// The most a page holds; an epic's comments come 100 at a time.
const PER_PAGE: u32 = 100;
/// Attempts of one request that meets 5xx answers, timeouts or broken connections.
const MAX_ATTEMPTS: u32 = 5;
/// The longest single wait for a rate limit; a longer one is an error that
/// says when to come back.
const MAX_RATE_LIMIT_WAIT: Duration = Duration::from_secs(90);
/// Rate-limit waits allowed within one request.
const MAX_RATE_LIMIT_WAITS: u32 = 4;
/// A guard is judged on this process's read of the issue when it is younger
/// than this and nothing was written since (see [`GithubSurface::write`]).
const GUARD_READ_MAX_AGE: Duration = Duration::from_secs(1);
/// How long this process's own comments are added to reads that miss them.
const OWN_COMMENT_HORIZON: Duration = Duration::from_secs(600);
/// Far more pages than any issue has: a `link` loop must end.
const MAX_PAGES: usize = 2000;
const TRUSTED_ASSOCIATIONS: [&str; 3] = ["OWNER", "MEMBER", "COLLABORATOR"];

/// Where the token came from, for messages (never the token itself).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TokenSource {
    GhToken,
    GithubToken,
    GhCli,
    Given,
}

impl fmt::Display for TokenSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TokenSource::GhToken => "GH_TOKEN",
            TokenSource::GithubToken => "GITHUB_TOKEN",
            TokenSource::GhCli => "`gh auth token`",
            TokenSource::Given => "the caller",
        })
    }
}

/// A GitHub token. `Debug` shows where it came from, never what it is.
#[derive(Clone)]
pub struct Token {
    secret: String,
    source: TokenSource,
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Token(<redacted>, from {})", self.source)
    }
}

impl Token {
    pub fn new(secret: &str, source: TokenSource) -> Result<Token, GithubError> {
        let secret = secret.trim();
        if secret.is_empty() {
            return Err(GithubError::NoToken);
        }
        // It goes into a header: visible ASCII only, or octocrab would panic.
        if !secret.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(GithubError::BadToken { origin: source });
        }
        Ok(Token {
            secret: secret.to_owned(),
            source,
        })
    }

    pub fn source(&self) -> TokenSource {
        self.source
    }
}

/// SPEC 1: `GH_TOKEN`, else `GITHUB_TOKEN`, else `gh auth token` when `gh`
/// is installed. Never a fallback to another surface.
pub fn resolve_token(api_url: &str) -> Result<Token, GithubError> {
    for (var, source) in [
        ("GH_TOKEN", TokenSource::GhToken),
        ("GITHUB_TOKEN", TokenSource::GithubToken),
    ] {
        if let Some(value) = std::env::var_os(var) {
            let value = value.to_string_lossy();
            if !value.trim().is_empty() {
                return Token::new(&value, source);
            }
        }
    }
    let Some(gh) = find_on_path("gh") else {
        return Err(GithubError::NoToken);
    };
    let host = match host_of(api_url) {
        Some(h) if h.eq_ignore_ascii_case("api.github.com") => "github.com".to_owned(),
        Some(h) => h,
        None => "github.com".to_owned(),
    };
    let out = std::process::Command::new(gh)
        .args(["auth", "token", "--hostname", &host])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => {
            let text = String::from_utf8_lossy(&out.stdout);
            Token::new(&text, TokenSource::GhCli).map_err(|e| match e {
                // `gh` printed nothing: it has no login for this host.
                GithubError::NoToken => GithubError::NoToken,
                other => other,
            })
        }
        _ => Err(GithubError::NoToken),
    }
}

fn find_on_path(program: &str) -> Option<std::path::PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

fn host_of(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    uri.host().map(str::to_owned)
}

#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    #[error("no GitHub token: set GH_TOKEN (or GITHUB_TOKEN), or log in with `gh auth login`")]
    NoToken,
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
    #[error("{what}: no usable answer after {attempts} attempts (last: {last})")]
    Unavailable {
        what: String,
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
    pub fn hint(&self) -> Option<String> {
        Some(match self {
            GithubError::NoToken => {
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
            GithubError::Unavailable { .. } => {
                "GitHub may be down (https://www.githubstatus.com); run the command again later"
                    .to_owned()
            }
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
}

pub struct GithubSurface {
    runtime: tokio::runtime::Runtime,
    client: octocrab::Octocrab,
    api_url: String,
    repo: String,
    token: Token,
    trusted_authors: Vec<String>,
    timeout: Duration,
    /// The token's login, once known (from `GET /user` or a comment we wrote).
    identity: OnceCell<String>,
    identity_asked: Cell<bool>,
    state: RefCell<State>,
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
}

#[derive(Clone)]
struct CachedGet {
    etag: String,
    body: Vec<u8>,
    link: Option<String>,
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

// GitHub's shapes, only the fields maverick reads. Everything GitHub's
// schemas call nullable is an Option here, so one odd comment (a deleted
// user's, say) cannot make a whole issue unreadable.

#[derive(Deserialize)]
struct ApiUser {
    login: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ApiLabel {
    Object { name: Option<String> },
    Name(String),
}

impl ApiLabel {
    fn into_name(self) -> Option<String> {
        match self {
            ApiLabel::Object { name } => name,
            ApiLabel::Name(name) => Some(name),
        }
    }
}

#[derive(Deserialize)]
struct ApiIssue {
    number: u64,
    state: String,
    #[serde(default)]
    labels: Vec<ApiLabel>,
    #[serde(default)]
    assignees: Option<Vec<ApiUser>>,
    #[serde(default)]
    pull_request: Option<serde::de::IgnoredAny>,
    updated_at: Option<String>,
}

impl ApiIssue {
    fn into_issue(self, number: u64, comments: Vec<Comment>) -> Issue {
        Issue {
            number,
            open: self.state != "closed",
            is_pull: self.pull_request.is_some(),
            labels: self
                .labels
                .into_iter()
                .filter_map(ApiLabel::into_name)
                .collect(),
            assignees: self
                .assignees
                .unwrap_or_default()
                .into_iter()
                .map(|u| u.login)
                .collect(),
            comments,
        }
    }
}

#[derive(Deserialize)]
struct ApiComment {
    id: u64,
    user: Option<ApiUser>,
    author_association: Option<String>,
    body: Option<String>,
    created_at: String,
    updated_at: Option<String>,
}

#[derive(Deserialize)]
struct ApiBranch {
    #[serde(rename = "ref")]
    name: String,
    sha: String,
}

#[derive(Deserialize)]
struct ApiPull {
    number: u64,
    title: Option<String>,
    head: ApiBranch,
    base: ApiBranch,
    #[serde(default)]
    draft: Option<bool>,
    #[serde(default)]
    labels: Vec<ApiLabel>,
    body: Option<String>,
}

#[derive(Deserialize)]
struct ApiCombinedStatus {
    state: String,
    #[serde(default)]
    total_count: u64,
}

#[derive(Deserialize)]
struct ApiCheckRuns {
    check_runs: Vec<ApiCheckRun>,
}

#[derive(Deserialize)]
struct ApiCheckRun {
    name: String,
    status: String,
    conclusion: Option<String>,
}

#[derive(Deserialize)]
struct ApiMessage {
    message: Option<String>,
}

/// An answer, whole.
struct Reply {
    status: StatusCode,
    headers: http::HeaderMap,
    body: Vec<u8>,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn success(&self) -> bool {
        self.status.is_success()
    }

    /// GitHub's `message`, or the status's reason.
    fn message(&self) -> String {
        serde_json::from_slice::<ApiMessage>(&self.body)
            .ok()
            .and_then(|m| m.message)
            .unwrap_or_else(|| {
                self.status
                    .canonical_reason()
                    .unwrap_or("(no reason)")
                    .to_owned()
            })
    }

    fn date(&self) -> Option<Timestamp> {
        self.header("date").and_then(parse_http_date)
    }
}

enum Sent {
    Answered(Reply),
    /// No answer: a timeout or a broken connection.
    Lost(String),
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
            identity: OnceCell::new(),
            identity_asked: Cell::new(false),
            state: RefCell::new(State::default()),
        })
    }

    /// `text` with the token blanked out wherever it appears.
    pub fn redact(&self, text: &str) -> String {
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
            Some((date, at)) => date.plus(at.elapsed()),
            None => Timestamp::now(),
        }
    }

    fn repo_path(&self, rest: &str) -> String {
        format!("/repos/{}/{rest}", self.repo)
    }

    /// Sends one request and waits for the whole answer, within the timeout.
    fn send_once(
        &self,
        method: &Method,
        uri: &str,
        body: Option<&Value>,
        etag: Option<&str>,
    ) -> Sent {
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(uri)
            .header(header::ACCEPT, "application/vnd.github+json");
        if let Some(tag) = etag {
            builder = builder.header(header::IF_NONE_MATCH, tag);
        }
        let request = match self.client.build_request(builder, body) {
            Ok(request) => request,
            Err(e) => return Sent::Lost(self.redact(&error_chain(&e))),
        };
        let client = &self.client;
        let result = self.runtime.block_on(async {
            tokio::time::timeout(self.timeout, async {
                let response = client.execute(request).await?;
                let (parts, body) = response.into_parts();
                let bytes = body.collect().await?.to_bytes();
                Ok::<_, octocrab::Error>((parts, bytes))
            })
            .await
        });
        match result {
            Err(_) => Sent::Lost(format!("no answer within {}", format_wait(self.timeout))),
            Ok(Err(e)) => Sent::Lost(self.redact(&error_chain(&e))),
            Ok(Ok((parts, bytes))) => Sent::Answered(Reply {
                status: parts.status,
                headers: parts.headers,
                body: bytes.to_vec(),
            }),
        }
    }

    /// One request, with everything GitHub asks of a polite client: ETags on
    /// GETs, retries with backoff, rate-limit waits. `recover`, for a POST
    /// that may have been committed before its answer was lost, finds what it
    /// created so that it is not created twice.
    fn call(
        &self,
        method: Method,
        uri: &str,
        body: Option<&Value>,
        what: &str,
        recover: Option<&dyn Fn() -> Result<Option<Reply>, GithubError>>,
    ) -> Result<Reply, GithubError> {
        let cached = if method == Method::GET {
            self.state.borrow().etags.get(uri).cloned()
        } else {
            None
        };
        let mut attempt = 0;
        let mut rate_waits = 0;
        loop {
            attempt += 1;
            let started = Instant::now();
            let sent = self.send_once(&method, uri, body, cached.as_ref().map(|c| c.etag.as_str()));
            let failure = match sent {
                Sent::Answered(mut reply) => {
                    tracing::debug!(
                        "{method} {} -> {} ({} ms)",
                        path_of(uri),
                        reply.status.as_u16(),
                        started.elapsed().as_millis()
                    );
                    if let Some(date) = reply.date() {
                        self.state.borrow_mut().clock = Some((date, Instant::now()));
                    }
                    if reply.status == StatusCode::NOT_MODIFIED {
                        if let Some(cached) = &cached {
                            reply.status = StatusCode::OK;
                            reply.body = cached.body.clone();
                            if let Some(link) = cached.link.as_deref().and_then(|l| l.parse().ok())
                            {
                                reply.headers.insert(header::LINK, link);
                            }
                            return Ok(reply);
                        }
                    }
                    if let Some(limit) = rate_limit(&reply) {
                        rate_waits += 1;
                        let until = reply.date().unwrap_or_else(Timestamp::now).plus(limit.wait);
                        if limit.wait > MAX_RATE_LIMIT_WAIT || rate_waits > MAX_RATE_LIMIT_WAITS {
                            return Err(GithubError::RateLimited {
                                what: what.to_owned(),
                                kind: limit.kind,
                                until,
                            });
                        }
                        tracing::info!(
                            "{what}: GitHub's {} rate limit; waiting {} as it asks",
                            limit.kind,
                            format_wait(limit.wait)
                        );
                        std::thread::sleep(limit.wait);
                        // A rate-limited request was not carried out: send it again.
                        attempt -= 1;
                        continue;
                    }
                    if reply.status.is_server_error() {
                        format!(
                            "{} {}",
                            reply.status.as_u16(),
                            self.redact(&reply.message())
                        )
                    } else {
                        if method == Method::GET && reply.status == StatusCode::OK {
                            if let Some(etag) = reply.header("etag") {
                                let entry = CachedGet {
                                    etag: etag.to_owned(),
                                    body: reply.body.clone(),
                                    link: reply.header("link").map(str::to_owned),
                                };
                                self.state.borrow_mut().etags.insert(uri.to_owned(), entry);
                            }
                        }
                        return Ok(reply);
                    }
                }
                Sent::Lost(detail) => {
                    tracing::debug!("{method} {} -> {detail}", path_of(uri));
                    detail
                }
            };
            if attempt >= MAX_ATTEMPTS {
                return Err(GithubError::Unavailable {
                    what: what.to_owned(),
                    attempts: attempt,
                    last: failure,
                });
            }
            let pause = backoff(attempt);
            tracing::info!("{what}: {failure}; trying again in {}", format_wait(pause));
            std::thread::sleep(pause);
            if let Some(recover) = recover {
                match recover() {
                    Ok(Some(found)) => {
                        tracing::info!("{what}: the earlier attempt had gone through");
                        return Ok(found);
                    }
                    Ok(None) => {}
                    // Not knowing is no reason to stop: a copy is recognised
                    // by its marker_id.
                    Err(e) => tracing::debug!("{what}: {e}"),
                }
            }
        }
    }

    /// An error for an answer the caller did not expect.
    fn unexpected(&self, what: &str, reply: &Reply) -> GithubError {
        let message = self.redact(&reply.message());
        match reply.status {
            StatusCode::UNAUTHORIZED => GithubError::Unauthorized {
                origin: self.token.source,
                what: what.to_owned(),
                status: reply.status.as_u16(),
                message,
            },
            status if status.is_redirection() => GithubError::Status {
                what: what.to_owned(),
                status: status.as_u16(),
                message: format!(
                    "(moved to {})",
                    self.redact(reply.header("location").unwrap_or("?"))
                ),
            },
            status => GithubError::Status {
                what: what.to_owned(),
                status: status.as_u16(),
                message,
            },
        }
    }

    fn parse<T: DeserializeOwned>(&self, what: &str, reply: &Reply) -> Result<T, GithubError> {
        serde_json::from_slice(&reply.body).map_err(|e| GithubError::BadAnswer {
            what: what.to_owned(),
            detail: e.to_string(),
        })
    }

    /// Every page of a list, following `link: <…>; rel="next"`.
    fn get_pages<T: DeserializeOwned>(
        &self,
        first: String,
        what: &str,
    ) -> Result<Vec<T>, GithubError> {
        let mut items = Vec::new();
        let mut next = Some(first);
        let mut pages = 0;
        while let Some(uri) = next.take() {
            pages += 1;
            if pages > MAX_PAGES {
                return Err(GithubError::BadAnswer {
                    what: what.to_owned(),
                    detail: format!("more than {MAX_PAGES} pages"),
                });
            }
            let reply = self.call(Method::GET, &uri, None, what, None)?;
            if reply.status != StatusCode::OK {
                return Err(self.unexpected(what, &reply));
            }
            items.extend(self.parse::<Vec<T>>(what, &reply)?);
            if let Some(link) = reply.header("link").and_then(next_link) {
                next = Some(self.same_origin(&link, what)?);
            }
        }
        Ok(items)
    }

    /// A `link` URL, checked to point at the API this surface talks to: the
    /// token only ever goes there.
    fn same_origin(&self, link: &str, what: &str) -> Result<String, GithubError> {
        if link.starts_with('/') {
            return Ok(link.to_owned());
        }
        let (Ok(link_uri), Ok(base)) =
            (link.parse::<http::Uri>(), self.api_url.parse::<http::Uri>())
        else {
            return Err(GithubError::BadAnswer {
                what: what.to_owned(),
                detail: "a next-page link that is not a URL".to_owned(),
            });
        };
        if link_uri.scheme() != base.scheme() || link_uri.authority() != base.authority() {
            return Err(GithubError::BadAnswer {
                what: what.to_owned(),
                detail: format!(
                    "a next-page link to another host ({})",
                    link_uri.authority().map_or("?", |a| a.as_str())
                ),
            });
        }
        Ok(link.to_owned())
    }

    /// The token's login: from a comment this process wrote, else `GET /user`
    /// once per process. `None` when GitHub will not say (an app's
    /// installation token cannot read `/user`).
    fn identity(&self) -> Result<Option<&str>, GithubError> {
        if self.identity.get().is_none() && !self.identity_asked.replace(true) {
            let what = "asking GitHub who the token belongs to";
            let reply = self.call(Method::GET, "/user", None, what, None)?;
            if reply.success() {
                let user: ApiUser = self.parse(what, &reply)?;
                let _ = self.identity.set(user.login);
            } else if reply.status == StatusCode::UNAUTHORIZED {
                return Err(self.unexpected(what, &reply));
            } else {
                tracing::info!(
                    "{what}: GitHub answered {} {}; its comments count only as a member's, collaborator's or maverick.trustedAuthors'",
                    reply.status.as_u16(),
                    self.redact(&reply.message())
                );
            }
        }
        Ok(self.identity.get().map(String::as_str))
    }

    fn learn_identity(&self, login: &str) {
        if !login.is_empty() {
            let _ = self.identity.set(login.to_owned());
        }
    }

    /// Trusted by role or by name, without asking who we are.
    fn trusted_without_identity(&self, login: &str, association: Option<&str>) -> bool {
        association.is_some_and(|a| TRUSTED_ASSOCIATIONS.contains(&a))
            || self
                .trusted_authors
                .iter()
                .any(|t| t.eq_ignore_ascii_case(login))
    }

    fn to_comment(
        &self,
        api: ApiComment,
        what: &str,
    ) -> Result<(Comment, Option<String>), GithubError> {
        let bad = |field: &str| GithubError::BadAnswer {
            what: what.to_owned(),
            detail: format!("comment {} has no readable {field}", api.id),
        };
        let created_at = Timestamp::parse(&api.created_at).ok_or_else(|| bad("created_at"))?;
        let updated_at = match &api.updated_at {
            Some(text) => Timestamp::parse(text).ok_or_else(|| bad("updated_at"))?,
            None => created_at,
        };
        // A deleted account's comments belong to GitHub's placeholder user.
        let author = api.user.map_or_else(|| "ghost".to_owned(), |u| u.login);
        let trusted = self.trusted_without_identity(&author, api.author_association.as_deref());
        Ok((
            Comment {
                id: api.id,
                author,
                trusted,
                body: api.body.unwrap_or_default(),
                created_at,
                updated_at,
            },
            api.author_association,
        ))
    }

    /// `GET issues/{number}`: the issue without its comments.
    fn get_issue(&self, number: u64) -> Result<ApiIssue, SurfaceError> {
        let what = format!("reading issue #{number}");
        let reply = self.call(
            Method::GET,
            &self.repo_path(&format!("issues/{number}")),
            None,
            &what,
            None,
        )?;
        match reply.status {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND | StatusCode::GONE => return Err(self.missing_issue(number)),
            _ => return Err(self.unexpected(&what, &reply).into()),
        }
        Ok(self.parse(&what, &reply)?)
    }

    fn read_issue(&self, number: u64) -> Result<Issue, SurfaceError> {
        let api = self.get_issue(number)?;
        let issue_updated_at = api.updated_at.as_deref().and_then(Timestamp::parse);
        let comments = self.read_comments(number)?;
        let issue = api.into_issue(number, comments);
        Ok(self.finish_read(issue, issue_updated_at))
    }

    /// Every comment of `number`, every page, trusted as SPEC 3 says.
    fn read_comments(&self, number: u64) -> Result<Vec<Comment>, SurfaceError> {
        let what = format!("reading the comments of #{number}");
        let listed: Vec<ApiComment> = self.get_pages(
            format!(
                "{}?per_page={PER_PAGE}",
                self.repo_path(&format!("issues/{number}/comments"))
            ),
            &what,
        )?;
        let mut comments = Vec::with_capacity(listed.len());
        for api in listed {
            comments.push(self.to_comment(api, &what)?.0);
        }
        // Only a comment that would carry a marker from an author not trusted
        // by role is worth asking GitHub who we are.
        let needs_identity = comments
            .iter()
            .any(|c| !c.trusted && c.body.contains("maverick-"));
        if needs_identity {
            if let Some(me) = self.identity()? {
                for c in comments.iter_mut().filter(|c| !c.trusted) {
                    c.trusted = c.author.eq_ignore_ascii_case(me);
                }
            }
        }
        Ok(comments)
    }

    /// An issue as read: this process's own writes shown, comments in id
    /// order, labels and the read remembered for guards.
    fn finish_read(&self, mut issue: Issue, issue_updated_at: Option<Timestamp>) -> Issue {
        self.show_own_writes(&mut issue, issue_updated_at);
        issue.comments.sort_by_key(|c| c.id);
        self.learn_labels(issue.number, &issue.labels);
        self.state
            .borrow_mut()
            .last_read
            .insert(issue.number, (Instant::now(), issue.clone()));
        issue
    }

    /// Why GitHub has no issue `number`: a wrong number, or a repository
    /// that does not exist or that the token cannot see (one more request,
    /// on the error path only).
    fn missing_issue(&self, number: u64) -> SurfaceError {
        let what = format!("looking for the repository {}", self.repo);
        match self.call(
            Method::GET,
            self.repo_path("").trim_end_matches('/'),
            None,
            &what,
            None,
        ) {
            Ok(reply) if reply.status == StatusCode::NOT_FOUND => GithubError::NoSuchRepo {
                repo: self.repo.clone(),
                origin: self.token.source,
            }
            .into(),
            _ => SurfaceError::NoSuchIssue(number),
        }
    }

    /// Read-your-writes over GitHub's lagging replicas: a comment this
    /// process wrote is shown (in its newest version) where the list misses
    /// it, and a label or assignee change where the issue as read is older
    /// than the change. Another process's writes show when GitHub shows them;
    /// the settle and the next heartbeat are there for those.
    fn show_own_writes(&self, issue: &mut Issue, issue_updated_at: Option<Timestamp>) {
        let state = self.state.borrow();
        let now = state.clock.map(|(date, at)| date.plus(at.elapsed()));
        for write in state.own_writes.iter().filter(|w| w.issue == issue.number) {
            let stale = issue_updated_at.is_none_or(|read| read <= write.at);
            match &write.op {
                OwnOp::Comment(mine) => match issue.comments.iter_mut().find(|c| c.id == mine.id) {
                    // Only a listed version older than ours is stale: within
                    // one second, another writer's edit may be the newer
                    // one, and read-back checks must see it.
                    Some(listed) => {
                        if listed.updated_at < mine.updated_at && listed.body != mine.body {
                            *listed = mine.clone();
                        }
                    }
                    None => {
                        let recent =
                            now.is_none_or(|now| now.since(mine.created_at) <= OWN_COMMENT_HORIZON);
                        if recent {
                            issue.comments.push(mine.clone());
                        }
                    }
                },
                OwnOp::AddLabels(labels) if stale => add_names(&mut issue.labels, labels),
                OwnOp::RemoveLabel(label) if stale => {
                    issue.labels.retain(|l| !l.eq_ignore_ascii_case(label))
                }
                OwnOp::Assign(logins) if stale => add_names(&mut issue.assignees, logins),
                OwnOp::Unassign(logins) if stale => issue
                    .assignees
                    .retain(|a| !logins.iter().any(|l| l.eq_ignore_ascii_case(a))),
                _ => {}
            }
        }
    }

    fn remember(&self, issue: u64, reply: &Reply, op: OwnOp) {
        let at = reply.date().unwrap_or_else(Timestamp::now);
        let mut state = self.state.borrow_mut();
        if let OwnOp::Comment(comment) = &op {
            // An update replaces what we remember of that comment.
            state
                .own_writes
                .retain(|w| !matches!(&w.op, OwnOp::Comment(c) if c.id == comment.id));
        }
        state.own_writes.push(OwnWrite { issue, at, op });
        state.last_read.remove(&issue);
    }

    /// The current labels of `issue` as this process last knew them.
    fn known_labels(&self, issue: u64) -> Vec<String> {
        self.state
            .borrow()
            .labels
            .get(&issue)
            .cloned()
            .unwrap_or_default()
    }

    fn learn_labels(&self, issue: u64, labels: &[String]) {
        self.state
            .borrow_mut()
            .labels
            .insert(issue, labels.to_vec());
    }

    fn apply(&self, issue: u64, op: &Op) -> Result<Applied, SurfaceError> {
        match op {
            Op::AddLabels(labels) => {
                let what = format!("adding {} to #{issue}", labels.join(", "));
                let reply = self.call(
                    Method::POST,
                    &self.repo_path(&format!("issues/{issue}/labels")),
                    Some(&json!({ "labels": labels })),
                    &what,
                    None,
                )?;
                if reply.status == StatusCode::NOT_FOUND {
                    return Err(SurfaceError::NoSuchIssue(issue));
                }
                if !reply.success() {
                    return Err(self.unexpected(&what, &reply).into());
                }
                let names = self.label_names(&what, &reply)?;
                self.learn_labels(issue, &names);
                self.remember(issue, &reply, OwnOp::AddLabels(labels.clone()));
                Ok(Applied::Labels(names))
            }
            Op::RemoveLabel(label) => {
                let what = format!("removing {label} from #{issue}");
                let reply = self.call(
                    Method::DELETE,
                    &self.repo_path(&format!("issues/{issue}/labels/{}", percent_encode(label))),
                    None,
                    &what,
                    None,
                )?;
                let names = if reply.success() {
                    self.label_names(&what, &reply)?
                } else if reply.status == StatusCode::NOT_FOUND
                    && reply.message().eq_ignore_ascii_case("Label does not exist")
                {
                    // Not there: what removing it wanted.
                    let mut names = self.known_labels(issue);
                    names.retain(|l| !l.eq_ignore_ascii_case(label));
                    names
                } else if reply.status == StatusCode::NOT_FOUND {
                    return Err(SurfaceError::NoSuchIssue(issue));
                } else {
                    return Err(self.unexpected(&what, &reply).into());
                };
                self.learn_labels(issue, &names);
                self.remember(issue, &reply, OwnOp::RemoveLabel(label.clone()));
                Ok(Applied::Labels(names))
            }
            Op::CreateComment(body) => {
                let what = format!("commenting on #{issue}");
                let payload = json!({ "body": body });
                let recover = || {
                    let since = self.clock_now().minus(Duration::from_secs(120));
                    self.find_created(issue, body, since)
                };
                let recover: &dyn Fn() -> Result<Option<Reply>, GithubError> = &recover;
                let reply = self.call(
                    Method::POST,
                    &self.repo_path(&format!("issues/{issue}/comments")),
                    Some(&payload),
                    &what,
                    has_marker_id(body).then_some(recover),
                )?;
                if reply.status == StatusCode::NOT_FOUND {
                    return Err(SurfaceError::NoSuchIssue(issue));
                }
                if !reply.success() {
                    return Err(self.unexpected(&what, &reply).into());
                }
                let comment = self.written_comment(&what, &reply)?;
                self.remember(issue, &reply, OwnOp::Comment(comment.clone()));
                Ok(Applied::Comment(comment))
            }
            Op::UpdateComment { id, body } => {
                let what = format!("updating comment {id} on #{issue}");
                let reply = self.call(
                    Method::PATCH,
                    &self.repo_path(&format!("issues/comments/{id}")),
                    Some(&json!({ "body": body })),
                    &what,
                    None,
                )?;
                if reply.status == StatusCode::NOT_FOUND {
                    return Err(SurfaceError::NoSuchComment { issue, id: *id });
                }
                if !reply.success() {
                    return Err(self.unexpected(&what, &reply).into());
                }
                let comment = self.written_comment(&what, &reply)?;
                self.remember(issue, &reply, OwnOp::Comment(comment.clone()));
                Ok(Applied::Comment(comment))
            }
            Op::Assign(logins) | Op::Unassign(logins) => {
                let assign = matches!(op, Op::Assign(_));
                let verb = if assign { "assign" } else { "unassign" };
                let what = format!("{verb}ing {} on #{issue}", logins.join(", "));
                let method = if assign { Method::POST } else { Method::DELETE };
                let reply = self.call(
                    method,
                    &self.repo_path(&format!("issues/{issue}/assignees")),
                    Some(&json!({ "assignees": logins })),
                    &what,
                    None,
                )?;
                if reply.status == StatusCode::NOT_FOUND {
                    return Err(SurfaceError::NoSuchIssue(issue));
                }
                if !reply.success() {
                    return Err(self.unexpected(&what, &reply).into());
                }
                let api: ApiIssue = self.parse(&what, &reply)?;
                let now: Vec<String> = api
                    .assignees
                    .unwrap_or_default()
                    .into_iter()
                    .map(|u| u.login)
                    .collect();
                // GitHub silently drops logins it cannot assign: check.
                let missed: Vec<&str> = logins
                    .iter()
                    .filter(|l| now.iter().any(|a| a.eq_ignore_ascii_case(l)) != assign)
                    .map(String::as_str)
                    .collect();
                if !missed.is_empty() {
                    return Err(GithubError::Assignees {
                        issue,
                        verb,
                        logins: missed.join(", "),
                    }
                    .into());
                }
                let own = if assign {
                    OwnOp::Assign(logins.clone())
                } else {
                    OwnOp::Unassign(logins.clone())
                };
                self.remember(issue, &reply, own);
                Ok(Applied::Assignees(now))
            }
        }
    }

    fn label_names(&self, what: &str, reply: &Reply) -> Result<Vec<String>, GithubError> {
        Ok(self
            .parse::<Vec<ApiLabel>>(what, reply)?
            .into_iter()
            .filter_map(ApiLabel::into_name)
            .collect())
    }

    /// The comment an answer to our own POST or PATCH describes.
    fn written_comment(&self, what: &str, reply: &Reply) -> Result<Comment, GithubError> {
        let api: ApiComment = self.parse(what, reply)?;
        let (mut comment, _) = self.to_comment(api, what)?;
        self.learn_identity(&comment.author);
        // We wrote it: it counts whatever our role.
        comment.trusted = true;
        Ok(comment)
    }

    /// After a lost answer to a comment POST: the comment, if GitHub had
    /// created it after all (the list can lag; a copy that gets past this
    /// is recognised by its `marker_id` when read).
    fn find_created(
        &self,
        issue: u64,
        body: &str,
        since: Timestamp,
    ) -> Result<Option<Reply>, GithubError> {
        let what = format!("looking for the comment just posted on #{issue}");
        let listed: Vec<Value> = self.get_pages(
            format!(
                "{}?per_page={PER_PAGE}&since={since}",
                self.repo_path(&format!("issues/{issue}/comments"))
            ),
            &what,
        )?;
        let identity = self.identity.get();
        Ok(listed
            .into_iter()
            .rev()
            .find(|c| {
                c.get("body").and_then(Value::as_str) == Some(body)
                    && identity.is_none_or(|me| {
                        c.pointer("/user/login").and_then(Value::as_str) == Some(me.as_str())
                    })
            })
            .map(|found| Reply {
                status: StatusCode::CREATED,
                headers: http::HeaderMap::new(),
                body: found.to_string().into_bytes(),
            }))
    }

    /// Takes off labels a failed write had added, so that no issue carries
    /// the in-progress label without the claim that explains it.
    fn undo_labels(&self, issue: u64, added: &[String], cause: SurfaceError) -> SurfaceError {
        for label in added {
            if let Err(e) = self.apply(issue, &Op::RemoveLabel(label.clone())) {
                tracing::info!("taking {label} off #{issue} again failed: {e}");
                return GithubError::LabelLeftBehind {
                    issue,
                    label: label.clone(),
                    cause: Box::new(cause),
                }
                .into();
            }
        }
        cause
    }

    /// `GET path` as JSON, with this surface's politeness (for callers that
    /// need more of GitHub than the trait offers: pull requests, CI).
    pub fn get_json(&self, path: &str, what: &str) -> Result<Value, SurfaceError> {
        let reply = self.call(Method::GET, path, None, what, None)?;
        if !reply.success() {
            return Err(self.unexpected(what, &reply).into());
        }
        Ok(self.parse(what, &reply)?)
    }

    /// Every page of `GET path` (a list), with this surface's politeness.
    pub fn get_list(&self, path: &str, what: &str) -> Result<Vec<Value>, SurfaceError> {
        Ok(self.get_pages(path.to_owned(), what)?)
    }

    pub fn repo(&self) -> &str {
        &self.repo
    }
}

impl Surface for GithubSurface {
    fn describe(&self) -> String {
        format!("github surface: {} via {}", self.repo, self.api_url)
    }

    fn now(&self) -> Result<Timestamp, SurfaceError> {
        if self.state.borrow().clock.is_some() {
            return Ok(self.clock_now());
        }
        // No answer yet to read the time from: ask for the rate limit, which
        // does not count against it.
        let reply = self.call(
            Method::GET,
            "/rate_limit",
            None,
            "reading GitHub's clock",
            None,
        )?;
        Ok(reply.date().unwrap_or_else(Timestamp::now))
    }

    fn me(&self) -> &str {
        self.identity().ok().flatten().unwrap_or_default()
    }

    fn issues(&self, numbers: &[u64]) -> Result<Vec<Issue>, SurfaceError> {
        numbers.iter().map(|&n| self.read_issue(n)).collect()
    }

    /// One request per issue: its comments, the list having given the rest.
    fn with_comments(&self, listed: &[IssueSummary]) -> Result<Vec<Issue>, SurfaceError> {
        listed
            .iter()
            .map(|summary| {
                let issue = Issue {
                    number: summary.number,
                    open: summary.open,
                    is_pull: summary.is_pull,
                    labels: summary.labels.clone(),
                    assignees: summary.assignees.clone(),
                    comments: self.read_comments(summary.number)?,
                };
                // A list does not say when the issue last changed: this
                // process's own label changes are shown over it.
                Ok(self.finish_read(issue, None))
            })
            .collect()
    }

    /// One request per issue, without its comments (a list of the whole
    /// repository could be many pages, and would miss nothing only with
    /// closed issues in it).
    fn summaries(&self, numbers: &[u64]) -> Result<Vec<IssueSummary>, SurfaceError> {
        numbers
            .iter()
            .map(|&number| {
                let api = self.get_issue(number)?;
                let updated_at = api.updated_at.as_deref().and_then(Timestamp::parse);
                let mut issue = api.into_issue(number, Vec::new());
                self.show_own_writes(&mut issue, updated_at);
                issue.comments.clear();
                Ok(IssueSummary::from(issue))
            })
            .collect()
    }

    fn open_pulls(&self) -> Result<Vec<PullRequest>, SurfaceError> {
        let pulls: Vec<ApiPull> = self.get_pages(
            format!("{}?state=open&per_page={PER_PAGE}", self.repo_path("pulls")),
            "listing open pull requests",
        )?;
        Ok(pulls
            .into_iter()
            .map(|p| PullRequest {
                number: p.number,
                title: p.title.unwrap_or_default(),
                head_ref: p.head.name,
                head_sha: p.head.sha,
                base_ref: p.base.name,
                draft: p.draft.unwrap_or(false),
                labels: p
                    .labels
                    .into_iter()
                    .filter_map(ApiLabel::into_name)
                    .collect(),
                body: p.body.unwrap_or_default(),
            })
            .collect())
    }

    /// The combined commit status and the check runs of each commit: two
    /// requests a commit (more for over 100 check runs).
    fn ci_status(&self, shas: &[String]) -> Result<Vec<Option<CiStatus>>, SurfaceError> {
        shas.iter()
            .map(|sha| {
                let sha_path = percent_encode(sha);
                let what = format!("reading the commit status of {sha}");
                let reply = self.call(
                    Method::GET,
                    &self.repo_path(&format!("commits/{sha_path}/status")),
                    None,
                    &what,
                    None,
                )?;
                if reply.status == StatusCode::NOT_FOUND
                    || reply.status == StatusCode::UNPROCESSABLE_ENTITY
                {
                    // GitHub does not know the commit: nothing reported on it.
                    return Ok(None);
                }
                if !reply.success() {
                    return Err(self.unexpected(&what, &reply).into());
                }
                let combined: ApiCombinedStatus = self.parse(&what, &reply)?;
                let combined = (combined.total_count > 0).then_some(combined.state);
                let what = format!("reading the check runs of {sha}");
                let mut runs = Vec::new();
                let mut next = Some(format!(
                    "{}?per_page={PER_PAGE}",
                    self.repo_path(&format!("commits/{sha_path}/check-runs"))
                ));
                while let Some(uri) = next.take() {
                    let reply = self.call(Method::GET, &uri, None, &what, None)?;
                    if !reply.success() {
                        return Err(self.unexpected(&what, &reply).into());
                    }
                    let page: ApiCheckRuns = self.parse(&what, &reply)?;
                    runs.extend(page.check_runs.into_iter().map(|r| CheckRun {
                        name: r.name,
                        status: r.status,
                        conclusion: r.conclusion,
                    }));
                    if let Some(link) = reply.header("link").and_then(next_link) {
                        if runs.len() < 10_000 {
                            next = Some(self.same_origin(&link, &what)?);
                        }
                    }
                }
                Ok(Some(CiStatus {
                    sha: sha.clone(),
                    state: CiStatus::verdict(combined.as_deref(), &runs).to_owned(),
                    combined,
                    check_runs: runs,
                }))
            })
            .collect()
    }

    fn list(
        &self,
        labels: &[&str],
        include_closed: bool,
    ) -> Result<Vec<IssueSummary>, SurfaceError> {
        let mut query = format!(
            "state={}&per_page={PER_PAGE}",
            if include_closed { "all" } else { "open" }
        );
        // GitHub ANDs comma-separated labels; a name with a comma in it can
        // only be filtered here.
        let filter: Vec<String> = labels
            .iter()
            .filter(|l| !l.contains(','))
            .map(|l| percent_encode(l))
            .collect();
        if !filter.is_empty() {
            query.push_str(&format!("&labels={}", filter.join(",")));
        }
        let what = "listing issues and pull requests";
        let items: Vec<ApiIssue> =
            self.get_pages(format!("{}?{query}", self.repo_path("issues")), what)?;
        Ok(items
            .into_iter()
            .map(|api| IssueSummary {
                number: api.number,
                open: api.state != "closed",
                is_pull: api.pull_request.is_some(),
                labels: api
                    .labels
                    .into_iter()
                    .filter_map(ApiLabel::into_name)
                    .collect(),
                assignees: api
                    .assignees
                    .unwrap_or_default()
                    .into_iter()
                    .map(|u| u.login)
                    .collect(),
            })
            .filter(|s| include_closed || s.open)
            .filter(|s| {
                labels
                    .iter()
                    .all(|want| s.labels.iter().any(|l| l.eq_ignore_ascii_case(want)))
            })
            .collect())
    }

    /// GitHub has no compare-and-swap: the guard is judged on a read just
    /// before the writes, and the settle that follows every claim resolves
    /// what slips between. That read is this process's own when it is a
    /// moment old and nothing was written since (a claim or heartbeat reads,
    /// decides and writes within milliseconds; reading again would narrow no
    /// window and cost two requests), else a fresh one.
    fn write(
        &self,
        writes: &[Write],
        guard: Option<Guard<'_>>,
    ) -> Result<Option<Vec<Vec<Applied>>>, SurfaceError> {
        let mut numbers: Vec<u64> = writes.iter().map(|w| w.issue).collect();
        numbers.sort_unstable();
        numbers.dedup();
        if let Some(guard) = guard {
            let mut current = Vec::with_capacity(numbers.len());
            for &n in &numbers {
                let recent = self
                    .state
                    .borrow()
                    .last_read
                    .get(&n)
                    .filter(|(at, _)| at.elapsed() <= GUARD_READ_MAX_AGE)
                    .map(|(_, issue)| issue.clone());
                current.push(match recent {
                    Some(issue) => issue,
                    None => self.read_issue(n)?,
                });
            }
            let now = self.now()?;
            if !guard(&current, now) {
                return Ok(None);
            }
        }
        let mut results = Vec::with_capacity(writes.len());
        for write in writes {
            let before = self
                .state
                .borrow()
                .last_read
                .get(&write.issue)
                .map(|(_, i)| i.labels.clone());
            let mut added: Vec<String> = Vec::new();
            let mut applied = Vec::with_capacity(write.ops.len());
            for op in &write.ops {
                match self.apply(write.issue, op) {
                    Ok(result) => {
                        if let (Op::AddLabels(labels), Some(before)) = (op, &before) {
                            added.extend(
                                labels
                                    .iter()
                                    .filter(|l| !before.iter().any(|b| b.eq_ignore_ascii_case(l)))
                                    .cloned(),
                            );
                        }
                        applied.push(result);
                    }
                    Err(e) => return Err(self.undo_labels(write.issue, &added, e)),
                }
            }
            results.push(applied);
        }
        Ok(Some(results))
    }
}

struct RateLimit {
    kind: &'static str,
    wait: Duration,
}

/// Whether `reply` is a rate-limit answer, and how long GitHub asks to wait:
/// `retry-after`, else until `x-ratelimit-reset`, else (a secondary limit
/// that names no time) a minute.
fn rate_limit(reply: &Reply) -> Option<RateLimit> {
    let status = reply.status.as_u16();
    if status != 403 && status != 429 {
        return None;
    }
    let retry_after = reply
        .header("retry-after")
        .and_then(|v| v.trim().parse::<u64>().ok());
    let exhausted = reply.header("x-ratelimit-remaining").map(str::trim) == Some("0");
    let says_so = reply.message().to_ascii_lowercase().contains("rate limit");
    if status == 403 && retry_after.is_none() && !exhausted && !says_so {
        // An ordinary "forbidden".
        return None;
    }
    let secondary = !exhausted || reply.message().to_ascii_lowercase().contains("secondary");
    let kind = if secondary { "secondary" } else { "primary" };
    if let Some(secs) = retry_after {
        return Some(RateLimit {
            kind,
            wait: Duration::from_secs(secs.max(1)),
        });
    }
    if exhausted {
        let reset = reply
            .header("x-ratelimit-reset")
            .and_then(|v| v.trim().parse::<i64>().ok());
        let now = reply.date().unwrap_or_else(Timestamp::now);
        if let Some(reset) = reset {
            return Some(RateLimit {
                kind,
                // One second more: the reset second itself may still be limited.
                wait: Timestamp(reset).since(now) + Duration::from_secs(1),
            });
        }
    }
    Some(RateLimit {
        kind,
        wait: Duration::from_secs(60),
    })
}

/// 250 ms, 500 ms, 1 s, 2 s… with up to 100 ms of jitter, so that racing
/// instances spread out.
fn backoff(attempt: u32) -> Duration {
    let jitter = u64::from_str_radix(&crate::markers::new_marker_id()[..4], 16).unwrap_or(0) % 100;
    let base = 250u64 << attempt.saturating_sub(1).min(4);
    Duration::from_millis(base + jitter)
}

fn format_wait(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// The path of a request URI, for log lines (no host, no query).
fn path_of(uri: &str) -> &str {
    let without_scheme = uri.split_once("://").map_or(uri, |(_, rest)| rest);
    let path = if uri.contains("://") {
        without_scheme
            .find('/')
            .map_or("/", |i| &without_scheme[i..])
    } else {
        without_scheme
    };
    path.split('?').next().unwrap_or(path)
}

fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The URL of `rel="next"` in a `link` header.
fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        let is_next = params
            .split(';')
            .any(|p| p.trim().replace(' ', "") == "rel=\"next\"");
        is_next.then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_owned()
        })
    })
}

/// Every byte but ASCII letters and digits percent-encoded, as octocrab
/// does for label names.
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn add_names(list: &mut Vec<String>, names: &[String]) {
    for name in names {
        if !list.iter().any(|l| l.eq_ignore_ascii_case(name)) {
            list.push(name.clone());
        }
    }
}

fn has_marker_id(body: &str) -> bool {
    crate::markers::parse_markers(body)
        .iter()
        .flatten()
        .any(|m| m.marker_id().is_some())
}

/// `Tue, 10 Oct 2017 16:00:00 GMT` (RFC 7231's IMF-fixdate).
pub fn parse_http_date(text: &str) -> Option<Timestamp> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let mut parts = text.split_whitespace().skip(1);
    let day: u32 = parts.next()?.parse().ok()?;
    let month_name = parts.next()?;
    let month = MONTHS.iter().position(|m| *m == month_name)? + 1;
    let year: u32 = parts.next()?.parse().ok()?;
    let time = parts.next()?;
    if parts.next() != Some("GMT") {
        return None;
    }
    Timestamp::parse(&format!("{year:04}-{month:02}-{day:02}T{time}Z"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn github_api_json(path: &str) -> Vec<u8> {
        let full = format!("{}/fixtures/github-api/{path}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&full).unwrap_or_else(|e| panic!("{full}: {e}"))
    }

    /// The fields the surface reads, from GitHub's own examples and from
    /// recorded traffic (whose labels, users and link headers are real).
    #[test]
    fn githubs_payloads_parse_into_what_the_surface_reads() {
        let issue: ApiIssue =
            serde_json::from_slice(&github_api_json("examples/issue.json")).unwrap();
        assert_eq!(issue.number, 1347);
        assert_eq!(issue.labels.len(), 1);
        assert!(issue
            .updated_at
            .as_deref()
            .and_then(Timestamp::parse)
            .is_some());
        let issues: Vec<ApiIssue> =
            serde_json::from_slice(&github_api_json("examples/issue-items.json")).unwrap();
        assert!(!issues.is_empty());
        let comment: ApiComment =
            serde_json::from_slice(&github_api_json("examples/issue-comment.json")).unwrap();
        assert_eq!(comment.user.unwrap().login, "octocat");
        assert!(Timestamp::parse(&comment.created_at).is_some());
        let comments: Vec<ApiComment> =
            serde_json::from_slice(&github_api_json("examples/issue-comment-items.json")).unwrap();
        assert!(comments.iter().all(|c| c.author_association.is_some()));
        let labels: Vec<ApiLabel> =
            serde_json::from_slice(&github_api_json("examples/label-items.json")).unwrap();
        assert!(labels.into_iter().all(|l| l.into_name().is_some()));

        let recorded: Vec<Value> =
            serde_json::from_slice(&github_api_json("recorded/paginate-issues.json")).unwrap();
        let mut pages = 0;
        for entry in &recorded {
            let items: Vec<ApiIssue> = serde_json::from_value(entry["response"].clone()).unwrap();
            assert!(!items.is_empty());
            pages += 1;
            let link = entry["headers"]["link"].as_str().unwrap_or_default();
            let next = next_link(link);
            if pages < recorded.len() {
                // Absolute, and to /repositories/{id}/…
                assert!(
                    next.as_deref()
                        .unwrap()
                        .contains("/repositories/1000/issues"),
                    "{link}"
                );
            } else {
                assert_eq!(next, None, "{link}");
            }
        }
        let added: Vec<Value> =
            serde_json::from_slice(&github_api_json("recorded/add-labels-to-issue.json")).unwrap();
        let answer = added.iter().find(|e| e["status"] == 200).unwrap();
        let names: Vec<String> =
            serde_json::from_value::<Vec<ApiLabel>>(answer["response"].clone())
                .unwrap()
                .into_iter()
                .filter_map(ApiLabel::into_name)
                .collect();
        assert!(!names.is_empty());
        // A deleted user's comment (GitHub's schema allows a null user) still parses.
        let ghost: ApiComment = serde_json::from_value(json!({
            "id": 1, "user": null, "body": null, "created_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap();
        assert!(ghost.user.is_none());
    }

    #[test]
    fn rate_limit_answers() {
        let reply = |status: u16, headers: &[(&str, &str)], message: &str| Reply {
            status: StatusCode::from_u16(status).unwrap(),
            headers: headers
                .iter()
                .map(|(k, v)| {
                    (
                        http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                        http::HeaderValue::from_str(v).unwrap(),
                    )
                })
                .collect(),
            body: json!({ "message": message }).to_string().into_bytes(),
        };
        let date = ("date", "Mon, 30 Nov 2026 10:00:00 GMT");
        let secondary = rate_limit(&reply(
            403,
            &[date, ("retry-after", "2")],
            "You have exceeded a secondary rate limit",
        ))
        .unwrap();
        assert_eq!(
            (secondary.kind, secondary.wait),
            ("secondary", Duration::from_secs(2))
        );
        let reset = (Timestamp::parse("2026-11-30T10:00:30Z").unwrap().0).to_string();
        let primary = rate_limit(&reply(
            403,
            &[
                date,
                ("x-ratelimit-remaining", "0"),
                ("x-ratelimit-reset", &reset),
            ],
            "API rate limit exceeded",
        ))
        .unwrap();
        assert_eq!(
            (primary.kind, primary.wait),
            ("primary", Duration::from_secs(31))
        );
        let unnamed = rate_limit(&reply(429, &[date], "slow down")).unwrap();
        assert_eq!(unnamed.wait, Duration::from_secs(60));
        // A plain "forbidden" is not a rate limit: no waiting, an error.
        assert!(rate_limit(&reply(
            403,
            &[date, ("x-ratelimit-remaining", "4999")],
            "Resource not accessible by integration"
        ))
        .is_none());
        assert!(rate_limit(&reply(502, &[date], "Bad Gateway")).is_none());
    }

    #[test]
    fn http_dates() {
        assert_eq!(
            parse_http_date("Mon, 30 Nov 2026 10:15:00 GMT"),
            Timestamp::parse("2026-11-30T10:15:00Z")
        );
        assert_eq!(parse_http_date("Mon, 30 Nov 2026 10:15:00 PST"), None);
        assert_eq!(parse_http_date("yesterday"), None);
        assert_eq!(parse_http_date(""), None);
    }

    #[test]
    fn next_links() {
        let header = "<https://api.github.com/repositories/1/issues/5/comments?per_page=100&page=2>; rel=\"next\", \
                      <https://api.github.com/repositories/1/issues/5/comments?per_page=100&page=10>; rel=\"last\"";
        assert_eq!(
            next_link(header).as_deref(),
            Some("https://api.github.com/repositories/1/issues/5/comments?per_page=100&page=2")
        );
        assert_eq!(
            next_link("<https://x/a?page=1>; rel=\"prev\", <https://x/a?page=1>; rel=\"first\""),
            None
        );
    }

    #[test]
    fn label_names_are_encoded_byte_by_byte() {
        assert_eq!(percent_encode("blocked-by:#142"), "blocked%2Dby%3A%23142");
        assert_eq!(percent_encode("a b/ü"), "a%20b%2F%C3%BC");
    }

    #[test]
    fn paths_for_log_lines() {
        assert_eq!(
            path_of("/repos/a/b/issues/1?per_page=100"),
            "/repos/a/b/issues/1"
        );
        assert_eq!(
            path_of("https://api.github.com/repositories/1/issues?page=2"),
            "/repositories/1/issues"
        );
    }

    #[test]
    fn tokens_hide_in_debug() {
        let token = Token::new(" ghp_secret123 \n", TokenSource::GhToken).unwrap();
        assert_eq!(token.secret, "ghp_secret123");
        assert!(!format!("{token:?}").contains("secret123"));
        assert!(matches!(
            Token::new("ghp_a b", TokenSource::GhToken),
            Err(GithubError::BadToken { .. })
        ));
    }
}
