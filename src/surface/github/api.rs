//! The API calls behind the `Surface` trait: GitHub's response shapes (only
//! the fields maverick reads), reading issues with this process's own writes
//! shown, label/assignee/comment writes with guards, and who is trusted.

use std::collections::BTreeMap;

use super::transport::next_link;
use super::*;

/// The most label lists [`GithubSurface::open_with_any_label`] makes
/// before one list of everything open is the cheaper bet: the product's
/// own labels (`in-progress`, `agent-wip`, `agent-pr`) and a few
/// `blocked-by:#N`.
pub(super) const MAX_LABEL_LISTS: usize = 8;

// GitHub's shapes, only the fields maverick reads. Everything GitHub's
// schemas call nullable is an Option here, so one odd comment (a deleted
// user's, say) cannot make a whole issue unreadable.

#[derive(Deserialize)]
pub(super) struct ApiUser {
    pub(super) login: String,
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
    /// How many comments the issue has.
    #[serde(default)]
    comments: Option<u64>,
}

impl ApiIssue {
    /// The issue as a list shows it.
    fn into_summary(self) -> IssueSummary {
        let updated_at = self.updated_at.as_deref().and_then(Timestamp::parse);
        let comments = self.comments;
        let number = self.number;
        let issue = self.into_issue(number, Vec::new());
        IssueSummary {
            comments,
            updated_at,
            ..IssueSummary::from(issue)
        }
    }

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
pub(super) struct ApiComment {
    pub(super) id: u64,
    pub(super) user: Option<ApiUser>,
    pub(super) author_association: Option<String>,
    pub(super) body: Option<String>,
    pub(super) created_at: String,
    pub(super) updated_at: Option<String>,
}

#[derive(Deserialize)]
struct ApiBranch {
    #[serde(rename = "ref")]
    name: String,
    sha: String,
    /// `null` once a fork's repository is deleted.
    #[serde(default)]
    repo: Option<ApiRepo>,
}

#[derive(Deserialize)]
struct ApiRepo {
    full_name: String,
    #[serde(default)]
    html_url: Option<String>,
    #[serde(default)]
    default_branch: Option<String>,
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
    user: Option<ApiUser>,
    #[serde(default)]
    author_association: Option<String>,
}

impl ApiPull {
    /// The pull request, its author not yet judged (not trusted).
    fn into_pull(self) -> PullRequest {
        let base_repo = self.base.repo;
        let from_fork = match (&self.head.repo, &base_repo) {
            (Some(head), Some(base)) => !head.full_name.eq_ignore_ascii_case(&base.full_name),
            _ => true,
        };
        let (base_repo, base_repo_url, default_branch) = base_repo.map_or_else(
            || (String::new(), String::new(), String::new()),
            |r| {
                (
                    r.full_name,
                    r.html_url.unwrap_or_default(),
                    r.default_branch.unwrap_or_default(),
                )
            },
        );
        PullRequest {
            number: self.number,
            title: self.title.unwrap_or_default(),
            head_ref: self.head.name,
            head_sha: self.head.sha,
            base_ref: self.base.name,
            draft: self.draft.unwrap_or(false),
            labels: self
                .labels
                .into_iter()
                .filter_map(ApiLabel::into_name)
                .collect(),
            body: self.body.unwrap_or_default(),
            author: self.user.map(|u| u.login).unwrap_or_default(),
            base_repo,
            base_repo_url,
            default_branch,
            from_fork,
            trusted: false,
        }
    }
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

impl GithubSurface {
    /// The token's login: from a comment this process wrote, else `GET /user`
    /// once per process. `None` when GitHub will not say (an app's
    /// installation token cannot read `/user`).
    pub(super) fn identity(&self) -> Result<Option<&str>, GithubError> {
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

    /// SPEC 3's trust, for each `(login, author_association, matters)`:
    /// by role or by name, else being the token's own login, which GitHub
    /// is asked for only when an author that `matters` is not trusted
    /// otherwise. Markers and pull requests are judged by this one rule.
    pub(super) fn trust_each(
        &self,
        authors: &[(&str, Option<&str>, bool)],
    ) -> Result<Vec<bool>, GithubError> {
        let mut trusted: Vec<bool> = authors
            .iter()
            .map(|(login, association, _)| self.trusted_without_identity(login, *association))
            .collect();
        let needs_identity = authors
            .iter()
            .zip(&trusted)
            .any(|((_, _, matters), trusted)| *matters && !trusted);
        if needs_identity {
            if let Some(me) = self.identity()? {
                for ((login, _, _), trusted) in authors.iter().zip(trusted.iter_mut()) {
                    *trusted = *trusted || login.eq_ignore_ascii_case(me);
                }
            }
        }
        Ok(trusted)
    }

    /// Trusted by role or by name, without asking who we are.
    pub(super) fn trusted_without_identity(&self, login: &str, association: Option<&str>) -> bool {
        association.is_some_and(|a| TRUSTED_ASSOCIATIONS.contains(&a))
            || self
                .trusted_authors
                .iter()
                .any(|t| t.eq_ignore_ascii_case(login))
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

    /// An issue as a claim on it is judged: its labels from their own list
    /// (whose ETag only a label change moves, where an issue's may move
    /// with every comment edit, a heartbeat's own included), every comment,
    /// and the rest as this clone last read the issue.
    fn read_claim_records(&self, number: u64) -> Result<Issue, SurfaceError> {
        let issue_path = self.repo_path(&format!("issues/{number}"));
        let cached = self
            .cached(&issue_path)
            .and_then(|c| serde_json::from_slice::<ApiIssue>(&c.body).ok());
        let api = match cached {
            Some(api) => api,
            None => self.get_issue(number)?,
        };
        let what = format!("reading the labels of #{number}");
        let labels: Vec<ApiLabel> = self
            .get_pages(format!("{issue_path}/labels?per_page={PER_PAGE}"), &what)
            .map_err(|e| match e {
                GithubError::Status { status: 404, .. } => self.missing_issue(number),
                e => e.into(),
            })?;
        // A list says nothing of when the issue changed: a label write of
        // ours younger than GitHub's lag may be missing from it.
        let reflects_before = self.clock_now().minus(LIST_LAG_HORIZON);
        let comments = self.read_comments(number)?;
        let mut issue = api.into_issue(number, comments);
        issue.labels = labels.into_iter().filter_map(ApiLabel::into_name).collect();
        Ok(self.finish_read(issue, Some(reflects_before)))
    }

    /// Every comment of `number`, every page, trusted as SPEC 3 says.
    fn read_comments(&self, number: u64) -> Result<Vec<Comment>, SurfaceError> {
        self.trusted(&self.fetch_comments(number)?)
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
            .insert(issue.number, (self.clock.instant(), issue.clone()));
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
        let now = state
            .clock
            .map(|(date, at)| date.plus(self.clock.since(at)));
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
        let at = reply.date().unwrap_or_else(|| self.clock.now());
        let mut state = self.state.borrow_mut();
        if let OwnOp::Comment(comment) = &op {
            // An update replaces what we remember of that comment.
            state
                .own_writes
                .retain(|w| !matches!(&w.op, OwnOp::Comment(c) if c.id == comment.id));
        }
        state.own_writes.push(OwnWrite { issue, at, op });
        state.last_read.remove(&issue);
        state.recent = None;
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

    /// One write to an issue's own resource (`rest`, under the repository):
    /// a 404 means the issue is not there, any other non-2xx is unexpected.
    fn call_on_issue(
        &self,
        issue: u64,
        method: Method,
        rest: &str,
        body: Option<&Value>,
        what: &str,
        recover: Option<&dyn Fn() -> Result<Option<Reply>, GithubError>>,
    ) -> Result<Reply, SurfaceError> {
        let reply = self.call(method, &self.repo_path(rest), body, what, recover)?;
        if reply.status == StatusCode::NOT_FOUND {
            return Err(SurfaceError::NoSuchIssue(issue));
        }
        if !reply.success() {
            return Err(self.unexpected(what, &reply).into());
        }
        Ok(reply)
    }

    fn apply(&self, issue: u64, op: &Op) -> Result<Applied, SurfaceError> {
        match op {
            Op::AddLabels(labels) => self.add_labels(issue, labels),
            Op::RemoveLabel(label) => self.remove_label(issue, label),
            Op::CreateComment(body) => self.create_comment(issue, body),
            Op::UpdateComment { id, body } => self.update_comment(issue, *id, body),
            Op::Assign(logins) => self.set_assignees(issue, logins, true),
            Op::Unassign(logins) => self.set_assignees(issue, logins, false),
        }
    }

    fn add_labels(&self, issue: u64, labels: &[String]) -> Result<Applied, SurfaceError> {
        let what = format!("adding {} to #{issue}", labels.join(", "));
        let reply = self.call_on_issue(
            issue,
            Method::POST,
            &format!("issues/{issue}/labels"),
            Some(&request(&LabelsBody { labels: &labels })),
            &what,
            None,
        )?;
        let names = self.label_names(&what, &reply)?;
        self.learn_labels(issue, &names);
        self.remember(issue, &reply, OwnOp::AddLabels(labels.to_vec()));
        Ok(Applied::Labels(names))
    }

    fn remove_label(&self, issue: u64, label: &str) -> Result<Applied, SurfaceError> {
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
        self.remember(issue, &reply, OwnOp::RemoveLabel(label.to_owned()));
        Ok(Applied::Labels(names))
    }

    fn create_comment(&self, issue: u64, body: &str) -> Result<Applied, SurfaceError> {
        let what = format!("commenting on #{issue}");
        let payload = request(&CommentBody { body });
        let recover = || {
            let since = self.clock_now().minus(Duration::from_secs(120));
            self.find_created(issue, body, since)
        };
        let recover: &dyn Fn() -> Result<Option<Reply>, GithubError> = &recover;
        let reply = self.call_on_issue(
            issue,
            Method::POST,
            &format!("issues/{issue}/comments"),
            Some(&payload),
            &what,
            has_marker_id(body).then_some(recover),
        )?;
        let comment = self.written_comment(&what, &reply)?;
        self.remember(issue, &reply, OwnOp::Comment(comment.clone()));
        Ok(Applied::Comment(comment))
    }

    fn update_comment(&self, issue: u64, id: u64, body: &str) -> Result<Applied, SurfaceError> {
        let what = format!("updating comment {id} on #{issue}");
        let reply = self.call(
            Method::PATCH,
            &self.repo_path(&format!("issues/comments/{id}")),
            Some(&request(&CommentBody { body })),
            &what,
            None,
        )?;
        if reply.status == StatusCode::NOT_FOUND {
            return Err(SurfaceError::NoSuchComment { issue, id });
        }
        if !reply.success() {
            return Err(self.unexpected(&what, &reply).into());
        }
        let comment = self.written_comment(&what, &reply)?;
        self.remember(issue, &reply, OwnOp::Comment(comment.clone()));
        Ok(Applied::Comment(comment))
    }

    /// Assigns (`assign`) or unassigns `logins`; GitHub silently drops
    /// logins it cannot assign, so the answer is checked.
    fn set_assignees(
        &self,
        issue: u64,
        logins: &[String],
        assign: bool,
    ) -> Result<Applied, SurfaceError> {
        let verb = if assign { "assign" } else { "unassign" };
        let what = format!("{verb}ing {} on #{issue}", logins.join(", "));
        let method = if assign { Method::POST } else { Method::DELETE };
        let reply = self.call_on_issue(
            issue,
            method,
            &format!("issues/{issue}/assignees"),
            Some(&request(&AssigneesBody { assignees: &logins })),
            &what,
            None,
        )?;
        let api: ApiIssue = self.parse(&what, &reply)?;
        let now: Vec<String> = api
            .assignees
            .unwrap_or_default()
            .into_iter()
            .map(|u| u.login)
            .collect();
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
            OwnOp::Assign(logins.to_vec())
        } else {
            OwnOp::Unassign(logins.to_vec())
        };
        self.remember(issue, &reply, own);
        Ok(Applied::Assignees(now))
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
        // We wrote it: it counts whatever our role.
        let comment = self.keep_comment(api, what)?.to_comment(true);
        self.learn_identity(&comment.author);
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
        Ok(reply.date().unwrap_or_else(|| self.clock.now()))
    }

    fn me(&self) -> &str {
        self.identity().ok().flatten().unwrap_or_default()
    }

    fn known_me(&self) -> Option<&str> {
        self.identity.get().map(String::as_str)
    }

    fn issues(&self, numbers: &[u64]) -> Result<Vec<Issue>, SurfaceError> {
        numbers.iter().map(|&n| self.read_issue(n)).collect()
    }

    /// Two requests an issue, labels and comments, each answered 304 when
    /// it did not change: a heartbeat pays for the lease its last beat
    /// moved, and nothing for the issue.
    fn claim_records(&self, numbers: &[u64]) -> Result<Vec<Issue>, SurfaceError> {
        numbers
            .iter()
            .map(|&n| self.read_claim_records(n))
            .collect()
    }

    /// The comments from this clone's copies, brought up to date by one
    /// list of the repository's recent comments (see [`mirror`](super::mirror));
    /// an issue without a usable copy costs a read of its comments.
    fn with_comments(&self, listed: &[IssueSummary]) -> Result<Vec<Issue>, SurfaceError> {
        let mut kept = self.mirrored_comments(listed)?;
        listed
            .iter()
            .map(|summary| {
                let comments = kept.remove(&summary.number).unwrap_or_default();
                let issue = Issue {
                    number: summary.number,
                    open: summary.open,
                    is_pull: summary.is_pull,
                    labels: summary.labels.clone(),
                    assignees: summary.assignees.clone(),
                    comments: self.trusted(&comments)?,
                };
                Ok(self.finish_read(issue, summary.updated_at))
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
                let summary = self.get_issue(number)?.into_summary();
                let mut issue = Issue {
                    number,
                    open: summary.open,
                    is_pull: summary.is_pull,
                    labels: summary.labels.clone(),
                    assignees: summary.assignees.clone(),
                    comments: Vec::new(),
                };
                self.show_own_writes(&mut issue, summary.updated_at);
                issue.comments.clear();
                Ok(IssueSummary {
                    labels: issue.labels,
                    assignees: issue.assignees,
                    ..summary
                })
            })
            .collect()
    }

    /// One list, a page at a time, oldest first: GitHub numbers issues in
    /// the order they are opened (an issue transferred in keeps its date
    /// and gets a new number, so within what was read the lowest number
    /// is the one taken).
    fn list_lowest_first(
        &self,
        labels: &[&str],
        more: &mut dyn FnMut(&[IssueSummary]) -> bool,
    ) -> Result<(), SurfaceError> {
        let query = issues_query(labels, false);
        let what = "listing issues, oldest first";
        self.each_page(
            format!(
                "{}?{query}&sort=created&direction=asc",
                self.repo_path("issues")
            ),
            what,
            &mut |page: Vec<ApiIssue>| {
                let mut page: Vec<IssueSummary> = page
                    .into_iter()
                    .map(ApiIssue::into_summary)
                    .filter(|s| s.open && has_every(s, labels))
                    .collect();
                page.sort_by_key(|s| s.number);
                more(&page)
            },
        )?;
        Ok(())
    }

    /// One list of the repository's comments since `since` (every page),
    /// with this process's own comments that it does not show yet.
    fn comments_since(
        &self,
        since: Timestamp,
    ) -> Result<Option<Vec<(u64, Comment)>>, SurfaceError> {
        let (_, recent) = self.recent_comments(since)?;
        let kept: Vec<_> = recent.iter().map(|(_, c)| c.clone()).collect();
        let mut found: Vec<(u64, Comment)> = recent
            .iter()
            .map(|(issue, _)| *issue)
            .zip(self.trusted(&kept)?)
            .collect();
        for write in &self.state.borrow().own_writes {
            if let OwnOp::Comment(mine) = &write.op {
                let missing = !found.iter().any(|(_, c)| c.id == mine.id);
                if missing && mine.updated_at >= since {
                    found.push((write.issue, mine.clone()));
                }
            }
        }
        found.sort_by_key(|(_, c)| c.id);
        Ok(Some(found))
    }

    /// The repository's labels, every page.
    fn label_names(&self) -> Result<Vec<String>, SurfaceError> {
        let labels: Vec<ApiLabel> = self.get_pages(
            format!("{}?per_page={PER_PAGE}", self.repo_path("labels")),
            "listing the repository's labels",
        )?;
        Ok(labels.into_iter().filter_map(ApiLabel::into_name).collect())
    }

    fn open_pulls(&self) -> Result<Vec<PullRequest>, SurfaceError> {
        let pulls: Vec<ApiPull> = self.get_pages(
            format!("{}?state=open&per_page={PER_PAGE}", self.repo_path("pulls")),
            "listing open pull requests",
        )?;
        let associations: Vec<Option<String>> =
            pulls.iter().map(|p| p.author_association.clone()).collect();
        let mut pulls: Vec<PullRequest> = pulls.into_iter().map(ApiPull::into_pull).collect();
        // Only a pull request that closes an issue is worth asking GitHub
        // who we are for: nothing else is judged by its author.
        let authors: Vec<(&str, Option<&str>, bool)> = pulls
            .iter()
            .zip(&associations)
            .map(|(p, association)| {
                (
                    p.author.as_str(),
                    association.as_deref(),
                    !p.closing_references().is_empty(),
                )
            })
            .collect();
        let trust = self.trust_each(&authors)?;
        for (pull, trusted) in pulls.iter_mut().zip(trust) {
            pull.trusted = trusted;
        }
        Ok(pulls)
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
        let query = issues_query(labels, include_closed);
        let what = "listing issues and pull requests";
        let items: Vec<ApiIssue> =
            self.get_pages(format!("{}?{query}", self.repo_path("issues")), what)?;
        Ok(items
            .into_iter()
            .map(ApiIssue::into_summary)
            .filter(|s| include_closed || s.open)
            .filter(|s| has_every(s, labels))
            .collect())
    }

    /// One list of the repository's labels, then one list of the open
    /// issues for each label `wanted` accepts (GitHub ANDs the labels of
    /// one list, so "any of" takes a list each; a label no issue carries
    /// any more costs one empty page): a cost that follows the labels, not
    /// the backlog. With more than [`MAX_LABEL_LISTS`] such labels, or one
    /// GitHub cannot filter on, one list of everything open instead.
    fn open_with_any_label(
        &self,
        wanted: &dyn Fn(&str) -> bool,
    ) -> Result<Vec<IssueSummary>, SurfaceError> {
        let carries = |s: &IssueSummary| s.labels.iter().any(|l| wanted(l));
        let names: Vec<String> = Surface::label_names(self)?
            .into_iter()
            .filter(|name| wanted(name))
            .collect();
        if names.len() > MAX_LABEL_LISTS || names.iter().any(|n| n.contains(',')) {
            return Ok(self.list(&[], false)?.into_iter().filter(carries).collect());
        }
        let mut found: BTreeMap<u64, IssueSummary> = BTreeMap::new();
        for name in &names {
            for summary in self.list(&[name.as_str()], false)? {
                found.entry(summary.number).or_insert(summary);
            }
        }
        Ok(found.into_values().filter(carries).collect())
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
                    .filter(|(at, _)| self.clock.since(*at) <= GUARD_READ_MAX_AGE)
                    .map(|(_, issue)| issue.clone());
                current.push(match recent {
                    Some(issue) => issue,
                    None => self.read_issue(n)?,
                });
            }
            let now = self.now()?;
            if !guard(&current, now) {
                crate::failpoint::end_write();
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
                        crate::failpoint::after_op();
                    }
                    Err(e) => {
                        crate::failpoint::end_write();
                        return Err(self.undo_labels(write.issue, &added, e));
                    }
                }
            }
            results.push(applied);
        }
        crate::failpoint::end_write();
        Ok(Some(results))
    }
}

/// A repository ruleset as GitHub answers it (`repository-ruleset`): the
/// fields server-side protection reads and writes. The list leaves out
/// `conditions` and `rules`; `GET rulesets/{id}` has them.
#[derive(Clone, Debug, Deserialize, serde::Serialize, PartialEq, Eq)]
pub(crate) struct ApiRuleset {
    pub id: u64,
    pub name: String,
    #[serde(default)]
    pub target: Option<String>,
    pub enforcement: String,
    #[serde(default)]
    pub source_type: Option<String>,
    #[serde(default)]
    pub conditions: Option<Value>,
    #[serde(default)]
    pub rules: Option<Vec<Value>>,
}

/// Repository rulesets (`/repos/{owner}/{repo}/rulesets`), for the
/// protection of managed branches. Reads are conditional as every GET is;
/// a 403 or 404 comes back as [`GithubError::Status`] for the caller to
/// tell "not an admin" from the rest.
impl GithubSurface {
    /// Every ruleset of the repository itself (not its organisation's).
    pub(crate) fn rulesets(&self) -> Result<Vec<ApiRuleset>, GithubError> {
        let first = self.repo_path(&format!(
            "rulesets?includes_parents=false&per_page={PER_PAGE}"
        ));
        self.get_pages(first, "listing the repository's rulesets")
    }

    /// One ruleset, with its conditions and rules.
    pub(crate) fn ruleset(&self, id: u64) -> Result<ApiRuleset, GithubError> {
        let what = format!("reading ruleset {id}");
        self.on_rulesets(Method::GET, &format!("rulesets/{id}"), None, &what)
    }

    /// Creates a ruleset from `body` (name, target, enforcement,
    /// conditions, rules).
    pub(crate) fn create_ruleset(&self, body: &Value) -> Result<ApiRuleset, GithubError> {
        self.on_rulesets(Method::POST, "rulesets", Some(body), "creating a ruleset")
    }

    /// Replaces what `body` names of ruleset `id`.
    pub(crate) fn update_ruleset(&self, id: u64, body: &Value) -> Result<ApiRuleset, GithubError> {
        let what = format!("updating ruleset {id}");
        self.on_rulesets(Method::PUT, &format!("rulesets/{id}"), Some(body), &what)
    }

    /// Deletes ruleset `id`. A 404 is an error: the ruleset was just
    /// listed, so it means the token may not delete it.
    pub(crate) fn delete_ruleset(&self, id: u64) -> Result<(), GithubError> {
        let what = format!("deleting ruleset {id}");
        self.ruleset_request(Method::DELETE, &format!("rulesets/{id}"), None, &what)
            .map(drop)
    }

    /// One request on the rulesets (`rest` under the repository) whose
    /// answer is a ruleset.
    fn on_rulesets(
        &self,
        method: Method,
        rest: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<ApiRuleset, GithubError> {
        let reply = self.ruleset_request(method, rest, body, what)?;
        self.parse(what, &reply)
    }

    /// One request on the rulesets (`rest` under the repository); any
    /// answer but a success is an error.
    fn ruleset_request(
        &self,
        method: Method,
        rest: &str,
        body: Option<&Value>,
        what: &str,
    ) -> Result<Reply, GithubError> {
        let reply = self.call(method, &self.repo_path(rest), body, what, None)?;
        if !reply.success() {
            return Err(self.unexpected(what, &reply));
        }
        Ok(reply)
    }
}

/// The query of an issue list: open ones (or all), every page full, and
/// the labels GitHub can filter on (it ANDs comma-separated names; a name
/// with a comma in it is only filtered by [`has_every`]).
fn issues_query(labels: &[&str], include_closed: bool) -> String {
    let mut query = format!(
        "state={}&per_page={PER_PAGE}",
        if include_closed { "all" } else { "open" }
    );
    let filter: Vec<String> = labels
        .iter()
        .filter(|l| !l.contains(','))
        .map(|l| percent_encode(l))
        .collect();
    if !filter.is_empty() {
        query.push_str(&format!("&labels={}", filter.join(",")));
    }
    query
}

fn has_every(summary: &IssueSummary, labels: &[&str]) -> bool {
    labels
        .iter()
        .all(|want| summary.labels.iter().any(|l| l.eq_ignore_ascii_case(want)))
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

/// `POST issues/N/labels`.
#[derive(serde::Serialize)]
struct LabelsBody<'a, L: serde::Serialize> {
    labels: &'a L,
}

/// `POST issues/N/comments`, `PATCH issues/comments/ID`.
#[derive(serde::Serialize)]
struct CommentBody<'a> {
    body: &'a str,
}

/// `POST`/`DELETE issues/N/assignees`.
#[derive(serde::Serialize)]
struct AssigneesBody<'a, L: serde::Serialize> {
    assignees: &'a L,
}

/// A request's JSON body.
fn request(body: &impl serde::Serialize) -> Value {
    serde_json::to_value(body).expect("request bodies serialize")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
        let pulls: Vec<ApiPull> =
            serde_json::from_slice(&github_api_json("examples/pull-request-simple-items.json"))
                .unwrap();
        let pull = pulls.into_iter().next().unwrap().into_pull();
        assert_eq!(
            (
                pull.author.as_str(),
                pull.base_repo.as_str(),
                pull.base_repo_url.as_str(),
                pull.default_branch.as_str(),
                pull.base_ref.as_str(),
                pull.head_ref.as_str(),
                pull.from_fork,
                pull.body.as_str(),
            ),
            (
                "octocat",
                "octocat/Hello-World",
                "https://github.com/octocat/Hello-World",
                "master",
                "master",
                "new-topic",
                false,
                "Please pull these awesome changes in!",
            )
        );
        // A pull request whose fork was deleted (head.repo null) parses, as from a fork.
        let mut orphan = serde_json::from_slice::<Vec<Value>>(&github_api_json(
            "examples/pull-request-simple-items.json",
        ))
        .unwrap()
        .remove(0);
        orphan["head"]["repo"] = Value::Null;
        orphan["user"] = Value::Null;
        let orphan = serde_json::from_value::<ApiPull>(orphan)
            .unwrap()
            .into_pull();
        assert!(orphan.from_fork && orphan.author.is_empty());
        // A deleted user's comment (GitHub's schema allows a null user) still parses.
        let ghost: ApiComment = serde_json::from_value(json!({
            "id": 1, "user": null, "body": null, "created_at": "2026-01-01T00:00:00Z"
        }))
        .unwrap();
        assert!(ghost.user.is_none());
    }

    #[test]
    fn label_names_are_encoded_byte_by_byte() {
        assert_eq!(percent_encode("blocked-by:#142"), "blocked%2Dby%3A%23142");
        assert_eq!(percent_encode("a b/ü"), "a%20b%2F%C3%BC");
    }
}
