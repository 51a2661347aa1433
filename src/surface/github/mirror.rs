//! Comments of many issues for the price of one list: the repository's
//! comment list filtered by `since`, and this clone's copy of each issue's
//! comments kept whole with it.
//!
//! A claimed issue's comments change at every heartbeat, so a status of 41
//! claimed issues that re-read each issue's comments (even conditionally)
//! paid for 41 reads whenever the fleet had beaten since the last look.
//! Instead, an issue read in full once is kept here (in the shared cache),
//! with the time before which it is complete; the next reader asks GitHub
//! once for every comment of the repository written or edited since the
//! oldest such time, and folds them in.
//!
//! What the list cannot say is caught by the issue list's comment count: a
//! deleted comment (or one a lagging list missed) leaves the copy's count
//! different from GitHub's, and that issue is read in full again. A copy
//! older than [`MIRROR_MAX_AGE`] is read in full too, so that one
//! forgotten issue cannot make every later list long.

use serde::Serialize;

use super::*;

/// The oldest copy that is brought up to date rather than read again.
const MIRROR_MAX_AGE: Duration = Duration::from_secs(1800);
/// What the `since` of a list of recent comments is rounded down to.
const SINCE_STEP: Duration = Duration::from_secs(600);
/// How long one read of the repository's recent comments serves every
/// caller in this process that asks for no older ones.
const RECENT_MAX_AGE: Duration = Duration::from_secs(1);

/// A comment as kept: trust is worked out again by each reader, whose
/// `trustedAuthors` may differ.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(super) struct KeptComment {
    id: u64,
    author: String,
    association: Option<String>,
    body: String,
    created_at: i64,
    updated_at: i64,
}

impl KeptComment {
    pub(super) fn to_comment(&self, trusted: bool) -> Comment {
        Comment {
            id: self.id,
            author: self.author.clone(),
            trusted,
            body: self.body.clone(),
            created_at: Timestamp(self.created_at),
            updated_at: Timestamp(self.updated_at),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Mirror {
    /// Every comment written or edited before this time is here as it is now.
    complete_before: i64,
    comments: Vec<KeptComment>,
}

/// The repository's comments since `since`, as this process last read them.
pub(super) struct Recent {
    since: Timestamp,
    at: Instant,
    /// When the list was read (GitHub's clock).
    read_at: Timestamp,
    comments: Vec<(u64, KeptComment)>,
}

#[derive(Deserialize)]
struct ApiRepoComment {
    #[serde(flatten)]
    comment: ApiComment,
    issue_url: Option<String>,
}

impl GithubSurface {
    /// A comment GitHub sent, as kept.
    pub(super) fn keep_comment(
        &self,
        api: ApiComment,
        what: &str,
    ) -> Result<KeptComment, GithubError> {
        let bad = |field: &str| GithubError::BadAnswer {
            what: what.to_owned(),
            detail: format!("comment {} has no readable {field}", api.id),
        };
        let created_at = Timestamp::parse(&api.created_at).ok_or_else(|| bad("created_at"))?;
        let updated_at = match &api.updated_at {
            Some(text) => Timestamp::parse(text).ok_or_else(|| bad("updated_at"))?,
            None => created_at,
        };
        Ok(KeptComment {
            id: api.id,
            // A deleted account's comments belong to GitHub's placeholder user.
            author: api.user.map_or_else(|| "ghost".to_owned(), |u| u.login),
            association: api.author_association,
            body: api.body.unwrap_or_default(),
            created_at: created_at.0,
            updated_at: updated_at.0,
        })
    }

    /// Kept comments as the protocols read them, trusted as SPEC 3 says.
    pub(super) fn trusted(&self, kept: &[KeptComment]) -> Result<Vec<Comment>, SurfaceError> {
        // Only a comment that would carry a marker is worth asking GitHub
        // who we are for.
        let authors: Vec<(&str, Option<&str>, bool)> = kept
            .iter()
            .map(|k| {
                (
                    k.author.as_str(),
                    k.association.as_deref(),
                    k.body.contains("maverick-"),
                )
            })
            .collect();
        let trust = self.trust_each(&authors)?;
        Ok(kept
            .iter()
            .zip(trust)
            .map(|(k, trusted)| k.to_comment(trusted))
            .collect())
    }

    /// Every comment of `number`, every page, as kept.
    pub(super) fn fetch_comments(&self, number: u64) -> Result<Vec<KeptComment>, SurfaceError> {
        let what = format!("reading the comments of #{number}");
        let listed: Vec<ApiComment> = self.get_pages(self.comments_uri(number), &what)?;
        listed
            .into_iter()
            .map(|api| Ok(self.keep_comment(api, &what)?))
            .collect()
    }

    fn comments_uri(&self, number: u64) -> String {
        format!(
            "{}?per_page={PER_PAGE}",
            self.repo_path(&format!("issues/{number}/comments"))
        )
    }

    /// Every comment of the repository written or edited at or after
    /// `since`, with its issue's number: one list, every page. Ordered by
    /// creation, so that a comment edited while the pages are read can
    /// only show twice, never push another off a page.
    pub(super) fn recent_comments(
        &self,
        since: Timestamp,
    ) -> Result<(Timestamp, Vec<(u64, KeptComment)>), SurfaceError> {
        let wanted_since = since;
        let since = rounded_down(since);
        if self.recent_is_fresh(since) {
            if let Some(recent) = self.state.borrow().recent.as_ref() {
                let wanted = recent
                    .comments
                    .iter()
                    .filter(|(_, c)| c.updated_at >= wanted_since.0)
                    .cloned()
                    .collect();
                return Ok((recent.read_at, wanted));
            }
        }
        let what = "reading the repository's recent comments";
        let listed: Vec<ApiRepoComment> = self.get_pages(
            format!(
                "{}?sort=created&direction=asc&since={since}&per_page={PER_PAGE}",
                self.repo_path("issues/comments")
            ),
            what,
        )?;
        let read_at = self.clock_now();
        let mut comments = Vec::with_capacity(listed.len());
        for item in listed {
            let Some(issue) = item.issue_url.as_deref().and_then(issue_number_of) else {
                continue;
            };
            comments.push((issue, self.keep_comment(item.comment, what)?));
        }
        self.state.borrow_mut().recent = Some(Recent {
            since,
            at: Instant::now(),
            read_at,
            comments: comments.clone(),
        });
        comments.retain(|(_, c)| c.updated_at >= wanted_since.0);
        Ok((read_at, comments))
    }

    /// Whether this process read the repository's comments since `since`
    /// a moment ago.
    fn recent_is_fresh(&self, since: Timestamp) -> bool {
        let since = rounded_down(since);
        self.state
            .borrow()
            .recent
            .as_ref()
            .is_some_and(|r| r.since <= since && r.at.elapsed() <= RECENT_MAX_AGE)
    }

    /// The comments of every issue `listed`, from this clone's copies
    /// brought up to date by one list of recent comments, and in full
    /// where there is no usable copy.
    pub(super) fn mirrored_comments(
        &self,
        listed: &[IssueSummary],
    ) -> Result<HashMap<u64, Vec<KeptComment>>, SurfaceError> {
        let oldest_usable = self.clock_now().minus(MIRROR_MAX_AGE).0;
        let mut copies: Vec<(&IssueSummary, Mirror)> = Vec::new();
        let mut unread: Vec<&IssueSummary> = Vec::new();
        for summary in listed {
            match self.load_mirror(summary.number) {
                Some(m) if m.complete_before >= oldest_usable => copies.push((summary, m)),
                _ => unread.push(summary),
            }
        }
        // An issue without a copy whose comments are all in the list of
        // recent comments (its count says how many there are) needs no read
        // of its own: worth that list where several lack a copy, or where
        // this process has just read it.
        let seed = {
            let seedable = unread.iter().filter(|s| s.comments.is_some()).count();
            seedable > 1 || (seedable == 1 && self.recent_is_fresh(Timestamp(oldest_usable)))
        };
        let since = match seed {
            true => Some(oldest_usable),
            false => copies.iter().map(|(_, m)| m.complete_before).min(),
        };
        let mut found = HashMap::new();
        if let Some(since) = since {
            let (read_at, recent) = self.recent_comments(Timestamp(since))?;
            let complete_before = complete_before(read_at);
            if seed {
                unread.retain(|summary| {
                    let mut comments = Vec::new();
                    for (_, comment) in recent.iter().filter(|(n, _)| *n == summary.number) {
                        fold(&mut comments, comment.clone());
                    }
                    if summary.comments != Some(comments.len() as u64) {
                        return true;
                    }
                    let mirror = Mirror {
                        complete_before,
                        comments,
                    };
                    self.store_mirror(summary.number, &mirror);
                    found.insert(summary.number, mirror.comments);
                    false
                });
            }
            for (summary, mut mirror) in copies {
                let mut changed = mirror.complete_before < complete_before;
                for (_, comment) in recent.iter().filter(|(n, _)| *n == summary.number) {
                    changed |= fold(&mut mirror.comments, comment.clone());
                }
                // A comment gone, or one the list missed: read it all.
                if summary
                    .comments
                    .is_some_and(|count| count != mirror.comments.len() as u64)
                {
                    unread.push(summary);
                    continue;
                }
                if changed {
                    mirror.complete_before = mirror.complete_before.max(complete_before);
                    self.store_mirror(summary.number, &mirror);
                }
                found.insert(summary.number, mirror.comments);
            }
        }
        for summary in unread {
            let comments = self.fetch_comments(summary.number)?;
            let mirror = Mirror {
                complete_before: complete_before(self.clock_now()),
                comments,
            };
            self.store_mirror(summary.number, &mirror);
            found.insert(summary.number, mirror.comments);
        }
        Ok(found)
    }

    fn mirror_key(&self, number: u64) -> String {
        format!("mirror:{}", self.cache_key(&self.comments_uri(number)))
    }

    fn load_mirror(&self, number: u64) -> Option<Mirror> {
        let entry = self.cache.as_ref()?.load(&self.mirror_key(number))?;
        serde_json::from_slice(&entry.body).ok()
    }

    fn store_mirror(&self, number: u64, mirror: &Mirror) {
        let (Some(cache), Ok(body)) = (&self.cache, serde_json::to_vec(mirror)) else {
            return;
        };
        let entry = CachedGet {
            etag: None,
            last_modified: None,
            link: None,
            body,
        };
        cache.store(&self.mirror_key(number), &entry, &self.token.secret);
    }
}

/// What a read at `read_at` is complete before: GitHub's lists may lag a
/// write by [`LIST_LAG_HORIZON`].
fn complete_before(read_at: Timestamp) -> i64 {
    rounded_down(read_at.minus(LIST_LAG_HORIZON)).0
}

/// `at` rounded down to [`SINCE_STEP`]: every reader within one step asks
/// for the same list of recent comments, which GitHub then answers 304
/// while no comment changes.
pub(super) fn rounded_down(at: Timestamp) -> Timestamp {
    let step = SINCE_STEP.as_secs() as i64;
    Timestamp(at.0.div_euclid(step) * step)
}

/// Puts `comment` into `comments` (ascending id) over an older version;
/// whether that changed anything.
fn fold(comments: &mut Vec<KeptComment>, comment: KeptComment) -> bool {
    match comments.binary_search_by_key(&comment.id, |c| c.id) {
        Ok(at) => {
            let newer = comments[at].updated_at < comment.updated_at
                || (comments[at].updated_at == comment.updated_at
                    && comments[at].body != comment.body);
            if newer {
                comments[at] = comment;
            }
            newer
        }
        Err(at) => {
            comments.insert(at, comment);
            true
        }
    }
}

/// `…/issues/142` → 142.
fn issue_number_of(issue_url: &str) -> Option<u64> {
    let (rest, number) = issue_url.trim_end_matches('/').rsplit_once('/')?;
    rest.ends_with("/issues").then(|| number.parse().ok())?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(id: u64, updated_at: i64, body: &str) -> KeptComment {
        KeptComment {
            id,
            author: "a".into(),
            association: None,
            body: body.into(),
            created_at: 0,
            updated_at,
        }
    }

    #[test]
    fn a_newer_version_replaces_an_older_one_and_order_is_kept() {
        let mut comments = vec![kept(1, 10, "one"), kept(5, 10, "five")];
        assert!(fold(&mut comments, kept(3, 12, "three")));
        assert!(fold(&mut comments, kept(5, 20, "five, edited")));
        assert!(!fold(&mut comments, kept(1, 5, "one, from a lagging list")));
        assert!(!fold(&mut comments, kept(3, 12, "three")));
        let seen: Vec<(u64, &str)> = comments.iter().map(|c| (c.id, c.body.as_str())).collect();
        assert_eq!(seen, [(1, "one"), (3, "three"), (5, "five, edited")]);
    }

    #[test]
    fn issue_numbers_come_from_issue_urls() {
        assert_eq!(
            issue_number_of("https://api.github.com/repos/o/r/issues/142"),
            Some(142)
        );
        assert_eq!(
            issue_number_of("https://api.github.com/repos/o/r/pulls/7"),
            None
        );
        assert_eq!(issue_number_of("nonsense"), None);
    }
}
