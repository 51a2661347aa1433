//! Pacing per token, shared by every maverick process of one machine.
//!
//! GitHub's secondary limits ("About secondary rate limits" in its REST
//! documentation) hold per token: at most 900 points a minute (a GET, HEAD
//! or OPTIONS is 1 point, a POST, PATCH, PUT or DELETE 5), at most 80
//! content-generating requests a minute and 500 an hour. A fleet of agents
//! that starts together spends those in seconds, and each process alone
//! cannot tell: so every request first takes a slot in a ledger that all
//! the processes using the token share.
//!
//! - One small file per token, named by a SHA-256 of the API URL and the
//!   token (never the token itself), under the user's cache directory, so
//!   that every clone and worktree on the machine shares it; readable by
//!   its owner only.
//! - A slot is taken under an exclusive `flock`: the earliest moment at or
//!   after now at which the request keeps every window within its budget
//!   is written down, then the lock is released and the process waits for
//!   its moment on the one clock ([`Clock`]). Slots taken ahead of time
//!   queue the processes instead of letting them all try at once.
//! - A limit GitHub answered anyway (a secondary limit the budgets did not
//!   foresee: another machine on the same token, a person's browser) is
//!   written down too: every process holds back until it ends, not only
//!   the one that met it.
//! - A ledger that cannot be read or written is no error: the request goes
//!   out unpaced, as without the ledger (GitHub's answer is still heeded).

use std::fs::{self, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use http::Method;
use sha2::{Digest, Sha256};

const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 3_600_000;

/// What the ledger lets one token spend: GitHub's published secondary
/// limits with a margin for what maverick does not see (a person's
/// browser, another tool on the same token).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Budget {
    pub(crate) points_per_minute: u32,
    pub(crate) content_per_minute: u32,
    pub(crate) content_per_hour: u32,
}

impl Default for Budget {
    /// 900 points, 80 and 500 content-generating requests, less a tenth.
    fn default() -> Budget {
        Budget {
            points_per_minute: 810,
            content_per_minute: 72,
            content_per_hour: 450,
        }
    }
}

/// What one request costs against the secondary limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Cost {
    pub(crate) points: u32,
    pub(crate) content: bool,
}

impl Cost {
    /// As GitHub's documentation prices `method` on `path`: 1 point for a
    /// read, 5 for a write; content-generating: creating an issue, a
    /// comment or a label, adding labels, and (the strict reading, since
    /// GitHub does not say otherwise) editing a comment.
    pub(crate) fn of(method: &Method, path: &str) -> Cost {
        let read = matches!(*method, Method::GET | Method::HEAD | Method::OPTIONS);
        let path = path.split('?').next().unwrap_or(path).trim_end_matches('/');
        let segments: Vec<&str> = path.rsplit('/').take(3).collect();
        let content = match (method, segments.as_slice()) {
            // …/issues, …/issues/N/comments, …/issues/N/labels, …/labels
            (&Method::POST, ["issues", ..] | ["comments", _, "issues"] | ["labels", ..]) => true,
            // …/issues/comments/ID
            (&Method::PATCH, [_, "comments", "issues"]) => true,
            _ => false,
        };
        Cost {
            points: if read { 1 } else { 5 },
            content,
        }
    }
}

/// The shared ledger of one token.
pub(crate) struct Pacer {
    path: PathBuf,
    budget: Budget,
}

/// When a request may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    /// Milliseconds since the Unix epoch, on the one clock.
    pub(crate) at_ms: i64,
    /// What holds it back, for the line that announces the wait.
    pub(crate) held_by: Option<&'static str>,
}

impl Pacer {
    /// The ledger for `token` on `api_url`, in `dir`.
    pub(crate) fn new(dir: &Path, api_url: &str, token: &str, budget: Budget) -> Pacer {
        let mut hasher = Sha256::new();
        hasher.update(api_url.trim_end_matches('/').as_bytes());
        hasher.update(b"\n");
        hasher.update(token.as_bytes());
        let digest = hasher.finalize();
        let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
        Pacer {
            path: dir.join(name),
            budget,
        }
    }

    /// Takes the earliest slot at or after `now_ms` for a request costing
    /// `cost`. `None`: the ledger is out of reach, so the request goes now.
    /// A slot more than `max_wait` off is returned but not written down:
    /// the caller will not send it, so it holds no other process back.
    pub(crate) fn take(&self, now_ms: i64, cost: Cost, max_wait: Duration) -> Option<Slot> {
        let latest = now_ms.saturating_add(i64::try_from(max_wait.as_millis()).unwrap_or(i64::MAX));
        match self.locked(|ledger| ledger.take_by(now_ms, cost, self.budget, latest)) {
            Ok(slot) => Some(slot),
            Err(e) => {
                tracing::debug!("pacing ledger {}: {e}", self.path.display());
                None
            }
        }
    }

    /// Writes down that GitHub asked this token to hold back until
    /// `until_ms`: every process sharing the ledger waits for it.
    pub(crate) fn hold_until(&self, until_ms: i64) {
        let held = self.locked(|ledger| {
            ledger.hold_until = ledger.hold_until.max(until_ms);
        });
        if let Err(e) = held {
            tracing::debug!("pacing ledger {}: {e}", self.path.display());
        }
    }

    fn locked<T>(&self, change: impl FnOnce(&mut Ledger) -> T) -> std::io::Result<T> {
        if let Some(dir) = self.path.parent() {
            fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&self.path)?;
        crate::clock::lock(&file, libc::LOCK_EX)?;
        let mut text = String::new();
        // A torn or foreign file reads as an empty ledger.
        let _ = file.read_to_string(&mut text);
        let mut ledger = Ledger::parse(&text);
        let result = change(&mut ledger);
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(ledger.render().as_bytes())?;
        // Closing the file releases the lock.
        Ok(result)
    }
}

/// The slots taken within the last hour, and a hold GitHub asked for.
#[derive(Debug, Default, PartialEq, Eq)]
struct Ledger {
    hold_until: i64,
    /// (when, points, content-generating), in the order taken.
    slots: Vec<(i64, u32, bool)>,
}

impl Ledger {
    /// `hold MS` then one `MS POINTS C` line a slot (C: 1 content, 0 not).
    fn parse(text: &str) -> Ledger {
        let mut ledger = Ledger::default();
        for line in text.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                ["hold", ms] => ledger.hold_until = ms.parse().unwrap_or(0),
                [ms, points, content] => {
                    if let (Ok(ms), Ok(points)) = (ms.parse(), points.parse()) {
                        ledger.slots.push((ms, points, *content == "1"));
                    }
                }
                _ => {}
            }
        }
        ledger
    }

    fn render(&self) -> String {
        let mut text = format!("hold {}\n", self.hold_until);
        for (ms, points, content) in &self.slots {
            text.push_str(&format!("{ms} {points} {}\n", u8::from(*content)));
        }
        text
    }

    /// Whether `points` more at `at` would pass the minute's budget in a
    /// window that holds `at` (one ending at `at`, or at a slot taken
    /// ahead within the minute after it: reads go at once while writes
    /// queue); if so, the oldest slot of the first such window.
    fn points_breach(&self, at: i64, points: u32, budget: Budget) -> Option<i64> {
        let mut near: Vec<(i64, u32)> = self
            .slots
            .iter()
            .filter(|(ms, _, _)| *ms > at - MINUTE_MS && *ms < at + MINUTE_MS)
            .map(|(ms, p, _)| (*ms, *p))
            .collect();
        near.sort_unstable();
        let mut prefix = vec![0u32];
        for (_, p) in &near {
            prefix.push(prefix.last().copied().unwrap_or(0) + p);
        }
        let ends = std::iter::once(at).chain(near.iter().map(|(ms, _)| *ms).filter(|ms| *ms > at));
        let (mut lo, mut hi) = (0, 0);
        for end in ends {
            while lo < near.len() && near[lo].0 <= end - MINUTE_MS {
                lo += 1;
            }
            while hi < near.len() && near[hi].0 <= end {
                hi += 1;
            }
            if prefix[hi] - prefix[lo] + points > budget.points_per_minute {
                return near.get(lo).map(|(ms, _)| *ms);
            }
        }
        None
    }

    #[cfg(test)]
    fn take(&mut self, now_ms: i64, cost: Cost, budget: Budget) -> Slot {
        self.take_by(now_ms, cost, budget, i64::MAX)
    }

    /// The earliest slot for `cost`, written down only when it is no later
    /// than `latest` (a later one is refused by the caller, never sent).
    fn take_by(&mut self, now_ms: i64, cost: Cost, budget: Budget, latest: i64) -> Slot {
        self.slots.retain(|(ms, _, _)| *ms > now_ms - HOUR_MS);
        let mut at = now_ms;
        let mut held_by = None;
        if self.hold_until > at {
            at = self.hold_until;
            held_by = Some("GitHub's rate limit");
        }
        // Content-generating slots are taken in order, so a window that
        // ends at one holds every content slot before it.
        if cost.content {
            let last = self
                .slots
                .iter()
                .filter(|(_, _, c)| *c)
                .map(|(ms, _, _)| *ms)
                .max();
            at = at.max(last.unwrap_or(at));
        }
        // Each pass moves `at` past the slot that breaks a window, so this
        // ends.
        loop {
            let content = |span: i64| {
                self.slots
                    .iter()
                    .filter(move |(ms, _, c)| *c && *ms > at - span && *ms <= at)
            };
            let over = if let Some(oldest) = self.points_breach(at, cost.points, budget) {
                Some((oldest, MINUTE_MS, "the points a minute"))
            } else if cost.content && content(MINUTE_MS).count() as u32 >= budget.content_per_minute
            {
                content(MINUTE_MS)
                    .map(|(ms, _, _)| *ms)
                    .min()
                    .map(|oldest| {
                        (
                            oldest,
                            MINUTE_MS,
                            "the content-generating requests a minute",
                        )
                    })
            } else if cost.content && content(HOUR_MS).count() as u32 >= budget.content_per_hour {
                content(HOUR_MS)
                    .map(|(ms, _, _)| *ms)
                    .min()
                    .map(|oldest| (oldest, HOUR_MS, "the content-generating requests an hour"))
            } else {
                None
            };
            let Some((oldest, span, what)) = over else {
                break;
            };
            // The oldest slot of the window that counts leaves it first.
            at = at.max(oldest + span + 1);
            held_by = Some(what);
        }
        if at <= latest {
            self.slots.push((at, cost.points, cost.content));
        }
        Slot { at_ms: at, held_by }
    }
}

/// How long from `now_ms` until `slot`.
pub(crate) fn wait_for(slot: Slot, now_ms: i64) -> Duration {
    Duration::from_millis(u64::try_from(slot.at_ms - now_ms).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    const WRITE: Cost = Cost {
        points: 5,
        content: true,
    };

    #[test]
    fn github_prices_requests_as_its_documentation_says() {
        let of = |m: Method, p: &str| {
            let c = Cost::of(&m, p);
            (c.points, c.content)
        };
        assert_eq!(of(Method::GET, "/repos/a/b/issues/1/comments"), (1, false));
        assert_eq!(of(Method::POST, "/repos/a/b/issues/1/comments"), (5, true));
        assert_eq!(of(Method::POST, "/repos/a/b/issues/1/labels"), (5, true));
        assert_eq!(of(Method::POST, "/repos/a/b/issues"), (5, true));
        assert_eq!(of(Method::POST, "/repos/a/b/labels"), (5, true));
        assert_eq!(of(Method::PATCH, "/repos/a/b/issues/comments/9"), (5, true));
        assert_eq!(
            of(Method::DELETE, "/repos/a/b/issues/1/labels/agent-wip"),
            (5, false)
        );
        assert_eq!(
            of(Method::POST, "/repos/a/b/issues/1/assignees"),
            (5, false)
        );
        assert_eq!(
            of(Method::DELETE, "/repos/a/b/issues/comments/9"),
            (5, false)
        );
    }

    #[test]
    fn slots_queue_within_every_window() {
        let budget = Budget {
            points_per_minute: 1000,
            content_per_minute: 3,
            content_per_hour: 5,
        };
        let mut ledger = Ledger::default();
        let at: Vec<i64> = (0..6)
            .map(|_| ledger.take(1_000, WRITE, budget).at_ms)
            .collect();
        // Three in the first minute, two more a minute on, then the hour.
        assert_eq!(&at[..3], [1_000, 1_000, 1_000]);
        assert_eq!(&at[3..5], [61_001, 61_001]);
        assert_eq!(at[5], 1_000 + HOUR_MS + 1);
        // A read is not held back by the content windows.
        let read = Cost {
            points: 1,
            content: false,
        };
        assert_eq!(ledger.take(1_000, read, budget).at_ms, 1_000);
        // The ledger survives its text form.
        assert_eq!(Ledger::parse(&ledger.render()), ledger);
    }

    #[test]
    fn points_and_holds_pace_too() {
        let budget = Budget {
            points_per_minute: 10,
            content_per_minute: 100,
            content_per_hour: 100,
        };
        let mut ledger = Ledger::default();
        assert_eq!(ledger.take(0, WRITE, budget).at_ms, 0);
        assert_eq!(ledger.take(0, WRITE, budget).at_ms, 0);
        let third = ledger.take(0, WRITE, budget);
        assert_eq!(third.at_ms, MINUTE_MS + 1);
        assert_eq!(third.held_by, Some("the points a minute"));
        ledger.hold_until = 500_000;
        assert_eq!(ledger.take(0, WRITE, budget).at_ms, 500_000);
    }

    #[test]
    fn processes_share_one_ledger_per_token_and_never_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let budget = Budget {
            points_per_minute: 1000,
            content_per_minute: 1,
            content_per_hour: 100,
        };
        let one = Pacer::new(dir.path(), "https://api.github.com", "ghp_SECRET", budget);
        let two = Pacer::new(dir.path(), "https://api.github.com/", "ghp_SECRET", budget);
        let other = Pacer::new(dir.path(), "https://api.github.com", "ghp_OTHER", budget);
        assert_eq!(one.take(0, WRITE, Duration::MAX).unwrap().at_ms, 0);
        // A slot further off than the caller waits is not written down:
        // it is never sent, so it holds no one back.
        let refused = two.take(0, WRITE, Duration::from_secs(1)).unwrap();
        assert_eq!(refused.at_ms, MINUTE_MS + 1);
        assert_eq!(
            two.take(0, WRITE, Duration::MAX).unwrap().at_ms,
            MINUTE_MS + 1
        );
        assert_eq!(other.take(0, WRITE, Duration::MAX).unwrap().at_ms, 0);
        for entry in fs::read_dir(dir.path()).unwrap() {
            let entry = entry.unwrap();
            assert!(!entry.file_name().to_string_lossy().contains("SECRET"));
            assert!(!fs::read_to_string(entry.path()).unwrap().contains("SECRET"));
        }
        // Out of reach: the request goes unpaced.
        let blocked = dir.path().join("a-file");
        fs::write(&blocked, "").unwrap();
        assert_eq!(
            Pacer::new(&blocked, "u", "t", budget).take(0, WRITE, Duration::MAX),
            None
        );
    }
}
