//! How one request is carried: timeouts, retries with jittered backoff,
//! rate-limit waits, conditional GETs (ETags), pagination that stays on the
//! API's own host, and the surface clock taken from each answer's `Date`.

use super::*;

#[derive(Deserialize)]
pub(super) struct ApiMessage {
    message: Option<String>,
}

/// An answer, whole.
pub(super) struct Reply {
    pub(super) status: StatusCode,
    pub(super) headers: http::HeaderMap,
    pub(super) body: Vec<u8>,
}

impl Reply {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(super) fn success(&self) -> bool {
        self.status.is_success()
    }

    /// GitHub's `message`, or the status's reason.
    pub(super) fn message(&self) -> String {
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

    pub(super) fn date(&self) -> Option<Timestamp> {
        self.header("date").and_then(parse_http_date)
    }
}

pub(super) enum Sent {
    Answered(Reply),
    /// No answer: a timeout or a broken connection.
    Lost(String),
}

impl GithubSurface {
    /// Sends one request and waits for the whole answer, within the timeout.
    pub(super) fn send_once(
        &self,
        method: &Method,
        uri: &str,
        body: Option<&Value>,
        cached: Option<&CachedGet>,
    ) -> Sent {
        let mut builder = http::Request::builder()
            .method(method.clone())
            .uri(uri)
            .header(header::ACCEPT, "application/vnd.github+json");
        // The ETag where there is one (it tells changes within a second
        // apart); else the date, which GitHub gives single resources.
        match cached.map(|c| (&c.etag, &c.last_modified)) {
            Some((Some(tag), _)) => builder = builder.header(header::IF_NONE_MATCH, tag),
            Some((None, Some(date))) => builder = builder.header(header::IF_MODIFIED_SINCE, date),
            _ => {}
        }
        let request = match self.client.build_request(builder, body) {
            Ok(request) => request,
            Err(e) => return Sent::Lost(self.redact(&error_chain(&e))),
        };
        let client = &self.client;
        let exchange = async {
            let response = client.execute(request).await?;
            let (parts, body) = response.into_parts();
            let bytes = body.collect().await?.to_bytes();
            Ok::<_, octocrab::Error>((parts, bytes))
        };
        let result = self
            .runtime
            .block_on(within(&self.clock, self.timeout, exchange));
        match result {
            None => Sent::Lost(format!("no answer within {}", format_wait(self.timeout))),
            Some(Err(e)) => Sent::Lost(self.redact(&error_chain(&e))),
            Some(Ok((parts, bytes))) => Sent::Answered(Reply {
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
    pub(super) fn call(
        &self,
        method: Method,
        uri: &str,
        body: Option<&Value>,
        what: &str,
        recover: Option<&dyn Fn() -> Result<Option<Reply>, GithubError>>,
    ) -> Result<Reply, GithubError> {
        let cached = if method == Method::GET {
            self.cached(uri)
        } else {
            None
        };
        let mut attempt = 0;
        let mut rate_waits = 0;
        let mut rate_waited = Duration::ZERO;
        let cost = pace::Cost::of(&method, path_of(uri));
        loop {
            attempt += 1;
            self.wait_for_slot(cost, what)?;
            let started = Instant::now();
            let sent = self.send_once(&method, uri, body, cached.as_ref());
            let failure = match sent {
                Sent::Answered(mut reply) => {
                    // -v: one line per request, what it asks and why.
                    let cached_answer =
                        reply.status == StatusCode::NOT_MODIFIED && cached.is_some();
                    tracing::info!(
                        "{method} {} ({what}): {}{}",
                        path_of(uri),
                        reply.status.as_u16(),
                        if cached_answer {
                            ", from the cache"
                        } else {
                            ""
                        }
                    );
                    tracing::debug!(
                        "{method} {}: {} ms",
                        path_of(uri),
                        started.elapsed().as_millis()
                    );
                    if let Some(date) = reply.date() {
                        self.state.borrow_mut().clock = Some((date, self.clock.instant()));
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
                    if let Some(limit) = rate_limit(&reply, self.clock.now()) {
                        self.wait_out(limit, &reply, what, &mut rate_waits, &mut rate_waited)?;
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
                            self.keep(uri, &reply);
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
                    api_url: self.api_url.clone(),
                    attempts: attempt,
                    last: failure,
                });
            }
            let pause = backoff(attempt);
            tracing::info!("{what}: {failure}; trying again in {}", format_wait(pause));
            self.clock.wait_announced(pause, "GitHub to answer again");
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

    /// Waits out a rate-limit answer, as GitHub asks: the time it names,
    /// else a minute doubled at each answer like it (`waits` so far in this
    /// request), with jitter so that the processes that met it together do
    /// not come back together; every process on the token holds back too.
    /// An error, before any wait, when that is longer than maverick waits.
    fn wait_out(
        &self,
        limit: RateLimit,
        reply: &Reply,
        what: &str,
        waits: &mut u32,
        waited: &mut Duration,
    ) -> Result<(), GithubError> {
        *waits += 1;
        let wait = if limit.named {
            limit.wait
        } else {
            let doubled = limit.wait * (1 << (*waits - 1).min(4));
            doubled + Duration::from_millis(crate::unique::jitter(5_000))
        };
        let until = reply.date().unwrap_or(self.clock.now()).plus(wait);
        *waited += wait;
        let waits_it_out = wait <= MAX_RATE_LIMIT_WAIT && *waited <= MAX_RATE_LIMITED;
        // The time GitHub named holds the token whether or not this process
        // waits it out: the others on the token hold back too, or stop
        // before they send when it is longer than they wait. A wait GitHub
        // did not name is this process's own backoff (doubled at each
        // answer of this request, with jitter): it holds the others only
        // while this process waits it out, else GitHub's minute does.
        if let Some(pacer) = &self.pacer {
            let now_ms = self.clock.unix_millis();
            let hold = if limit.named || waits_it_out {
                wait
            } else {
                limit.wait
            };
            pacer.hold_until(now_ms + millis(hold));
        }
        if !waits_it_out {
            return Err(GithubError::RateLimited {
                what: what.to_owned(),
                kind: limit.kind,
                until,
            });
        }
        tracing::info!(
            "{what}: GitHub's {} rate limit; waiting {} {}",
            limit.kind,
            format_wait(wait),
            if limit.named {
                "as it asks"
            } else {
                "(it named no time: backing off)"
            }
        );
        self.clock.wait_announced(wait, "GitHub's rate limit");
        Ok(())
    }

    /// Waits for this request's slot in the token's shared pacing ledger
    /// (see [`pace`]), saying so; a slot further off than maverick waits
    /// is an error that says when to come back, before anything is sent.
    fn wait_for_slot(&self, cost: pace::Cost, what: &str) -> Result<(), GithubError> {
        let Some(pacer) = &self.pacer else {
            return Ok(());
        };
        let now_ms = self.clock.unix_millis();
        let Some(slot) = pacer.take(now_ms, cost, MAX_PACE_WAIT) else {
            return Ok(());
        };
        let wait = pace::wait_for(slot, now_ms);
        if wait.is_zero() {
            return Ok(());
        }
        let held_by = slot.held_by.unwrap_or("the requests queued before it");
        if wait > MAX_PACE_WAIT {
            return Err(GithubError::RateLimited {
                what: what.to_owned(),
                kind: "secondary",
                until: self.clock.now().plus(wait),
            });
        }
        tracing::info!(
            "{what}: waiting {} for {held_by} (GitHub's secondary limits, shared by every process on this token)",
            format_wait(wait)
        );
        self.clock.wait_announced(
            wait,
            &format!("this token's turn within GitHub's limits ({held_by})"),
        );
        Ok(())
    }

    /// The URL a request URI names, as the shared cache keys it.
    pub(super) fn cache_key(&self, uri: &str) -> String {
        if uri.starts_with('/') {
            format!("{}{uri}", self.api_url)
        } else {
            uri.to_owned()
        }
    }

    /// What an earlier GET of `uri` answered: this process's, else the
    /// clone's shared cache's.
    pub(super) fn cached(&self, uri: &str) -> Option<CachedGet> {
        if let Some(found) = self.state.borrow().etags.get(uri) {
            return Some(found.clone());
        }
        let found = self.cache.as_ref()?.load(&self.cache_key(uri))?;
        self.state
            .borrow_mut()
            .etags
            .insert(uri.to_owned(), found.clone());
        Some(found)
    }

    /// Keeps a 200 answer to `GET uri` that came with a validator, for
    /// this process and the next.
    fn keep(&self, uri: &str, reply: &Reply) {
        let entry = CachedGet {
            etag: reply.header("etag").map(str::to_owned),
            last_modified: reply.header("last-modified").map(str::to_owned),
            link: reply.header("link").map(str::to_owned),
            body: reply.body.clone(),
        };
        if entry.etag.is_none() && entry.last_modified.is_none() {
            return;
        }
        if let Some(cache) = &self.cache {
            cache.store(&self.cache_key(uri), &entry, &self.token.secret);
        }
        self.state.borrow_mut().etags.insert(uri.to_owned(), entry);
    }

    /// An error for an answer the caller did not expect.
    pub(super) fn unexpected(&self, what: &str, reply: &Reply) -> GithubError {
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

    pub(super) fn parse<T: DeserializeOwned>(
        &self,
        what: &str,
        reply: &Reply,
    ) -> Result<T, GithubError> {
        serde_json::from_slice(&reply.body).map_err(|e| GithubError::BadAnswer {
            what: what.to_owned(),
            detail: e.to_string(),
        })
    }

    /// Every page of a list, following `link: <…>; rel="next"`.
    pub(super) fn get_pages<T: DeserializeOwned>(
        &self,
        first: String,
        what: &str,
    ) -> Result<Vec<T>, GithubError> {
        let mut items = Vec::new();
        self.each_page(first, what, &mut |page: Vec<T>| {
            items.extend(page);
            true
        })?;
        Ok(items)
    }

    /// The pages of a list one at a time, while `more` wants the next.
    pub(super) fn each_page<T: DeserializeOwned>(
        &self,
        first: String,
        what: &str,
        more: &mut dyn FnMut(Vec<T>) -> bool,
    ) -> Result<(), GithubError> {
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
            if !more(self.parse::<Vec<T>>(what, &reply)?) {
                break;
            }
            if let Some(link) = reply.header("link").and_then(next_link) {
                next = Some(self.same_origin(&link, what)?);
            }
        }
        Ok(())
    }

    /// A `link` URL, checked to point at the API this surface talks to: the
    /// token only ever goes there.
    pub(super) fn same_origin(&self, link: &str, what: &str) -> Result<String, GithubError> {
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
}

/// What `work` comes to, or `None` once `limit` has passed on `clock`.
async fn within<F: std::future::Future>(
    clock: &Clock,
    limit: Duration,
    work: F,
) -> Option<F::Output> {
    let deadline = clock.instant() + limit;
    let mut work = std::pin::pin!(work);
    while let Some(slice) = clock.left_until(deadline) {
        if let Ok(done) = tokio::time::timeout(slice, work.as_mut()).await {
            return Some(done);
        }
    }
    None
}

pub(super) struct RateLimit {
    kind: &'static str,
    wait: Duration,
    /// Whether GitHub said how long (`retry-after`, `x-ratelimit-reset`).
    named: bool,
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX / 4)
}

/// Whether `reply` is a rate-limit answer, and how long GitHub asks to wait:
/// `retry-after`, else until `x-ratelimit-reset`, else (a secondary limit
/// that names no time) a minute. `local_now` stands in for an answer
/// without a `Date`.
pub(super) fn rate_limit(reply: &Reply, local_now: Timestamp) -> Option<RateLimit> {
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
            named: true,
        });
    }
    if exhausted {
        let reset = reply
            .header("x-ratelimit-reset")
            .and_then(|v| v.trim().parse::<i64>().ok());
        let now = reply.date().unwrap_or(local_now);
        if let Some(reset) = reset {
            return Some(RateLimit {
                kind,
                // One second more: the reset second itself may still be limited.
                wait: Timestamp(reset).since(now) + Duration::from_secs(1),
                named: true,
            });
        }
    }
    Some(RateLimit {
        kind,
        wait: Duration::from_secs(60),
        named: false,
    })
}

/// 250 ms, 500 ms, 1 s, 2 s… with up to 100 ms of jitter, so that racing
/// instances spread out.
pub(super) fn backoff(attempt: u32) -> Duration {
    let jitter = crate::unique::jitter(100);
    let base = 250u64 << attempt.saturating_sub(1).min(4);
    Duration::from_millis(base + jitter)
}

pub(super) fn format_wait(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{}s", d.as_secs())
    } else if d < Duration::from_secs(1) {
        format!("{}ms", d.as_millis())
    } else {
        format!("{:.1}s", d.as_secs_f64())
    }
}

/// The path of a request URI, for log lines (no host, no query).
pub(super) fn path_of(uri: &str) -> &str {
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

pub(super) fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
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
pub(super) fn next_link(header: &str) -> Option<String> {
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

/// `Tue, 10 Oct 2017 16:00:00 GMT` (RFC 7231's IMF-fixdate).
pub(crate) fn parse_http_date(text: &str) -> Option<Timestamp> {
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
    use serde_json::json;

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
        let secondary = rate_limit(
            &reply(
                403,
                &[date, ("retry-after", "2")],
                "You have exceeded a secondary rate limit",
            ),
            Timestamp(0),
        )
        .unwrap();
        assert_eq!(
            (secondary.kind, secondary.wait),
            ("secondary", Duration::from_secs(2))
        );
        let reset = (Timestamp::parse("2026-11-30T10:00:30Z").unwrap().0).to_string();
        let primary = rate_limit(
            &reply(
                403,
                &[
                    date,
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset", &reset),
                ],
                "API rate limit exceeded",
            ),
            Timestamp(0),
        )
        .unwrap();
        assert_eq!(
            (primary.kind, primary.wait),
            ("primary", Duration::from_secs(31))
        );
        let unnamed = rate_limit(&reply(429, &[date], "slow down"), Timestamp(0)).unwrap();
        assert_eq!(
            (unnamed.wait, unnamed.named),
            (Duration::from_secs(60), false)
        );
        // A plain "forbidden" is not a rate limit: no waiting, an error.
        assert!(rate_limit(
            &reply(
                403,
                &[date, ("x-ratelimit-remaining", "4999")],
                "Resource not accessible by integration"
            ),
            Timestamp(0)
        )
        .is_none());
        assert!(rate_limit(&reply(502, &[date], "Bad Gateway"), Timestamp(0)).is_none());
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
}
