//! The claim protocol driven over a surface: read, claim through the one
//! settle, heartbeat, release, and what each came to.

use std::time::Duration;

use serde::Serialize;

use super::analysis::{analyze, lost_reason};
use super::{ClaimRequest, Coordinator, Decision, IssueView, ReleaseReason};
use crate::coord::settle::{Begin, Driver, Race, Verdict};
use crate::surface::{Applied, Comment, Issue, Op, SurfaceError, Write};
use crate::timefmt::Timestamp;
use maverick_core::holding::own_comment;
use maverick_core::ids::InstanceId;
use maverick_core::payloads::ClaimPayload;

/// What a claim attempt came to.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum ClaimOutcome {
    /// We hold every issue in scope.
    Claimed {
        generation: u64,
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
        already_held: bool,
    },
    Blocked {
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
    Held {
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
    Stale {
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
    /// Another claim won the settle; ours was withdrawn.
    Lost {
        winner: Option<InstanceId>,
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error("issue #{0} is closed")]
    Closed(u64),
    #[error("a claim marker on #{0} carries an impossible generation; remove that comment")]
    GenerationExhausted(u64),
}

impl Coordinator<'_> {
    pub fn read(&self, issues: &[u64]) -> Result<Vec<IssueView>, LeaseError> {
        self.read_with(issues, &[])
    }

    /// Reads, counting our own `written` comments even where a lagging list
    /// does not show them yet: comment ids order claims whether or not a
    /// list has caught up, and a claim we cannot see is still ours.
    fn read_with(
        &self,
        issues: &[u64],
        written: &[(u64, Comment)],
    ) -> Result<Vec<IssueView>, LeaseError> {
        // Read first, then the time: GitHub's clock is the Date of that answer.
        let mut read = self.surface.issues(issues)?;
        let now = self.surface.now()?;
        for issue in &mut read {
            for (_, comment) in written.iter().filter(|(n, _)| *n == issue.number) {
                if !issue.comments.iter().any(|c| c.id == comment.id) {
                    issue.comments.push(comment.clone());
                }
            }
            issue.comments.sort_by_key(|c| c.id);
        }
        Ok(read
            .iter()
            .map(|i| analyze(i, self.settings, self.me(), now))
            .collect())
    }
    /// Claims every issue in `req` (SPEC 4): label, claim, lease, settle
    /// (the one settle of [`crate::coord::settle`]). A guard that refuses
    /// because the claims moved under us starts a new round; a lost settle
    /// ends the claim (another instance holds the issue).
    pub fn claim(&self, req: &ClaimRequest<'_>) -> Result<ClaimOutcome, LeaseError> {
        let settle = Driver {
            clock: &self.settings.clock,
            delay: self.settings.settle_delay,
            rounds: CLAIM_ROUNDS,
        };
        settle.run(&mut IssueClaim { coord: self, req })
    }

    /// After a claim's writes failed part way: a surface without
    /// multi-issue transactions (GitHub) may hold whole claims of this
    /// `generation` on some issues of the scope, which nobody would ever
    /// heartbeat, and claim comments that hold nothing. Takes them back, as
    /// far as the surface lets it; an issue we held before is left alone.
    fn abandon(&self, issues: &[u64], generation: u64) {
        let Ok(views) = self.read(issues) else { return };
        let touched: Vec<IssueView> = views
            .into_iter()
            .filter(|v| {
                v.holder
                    .as_ref()
                    .filter(|h| h.instance_id == *self.me())
                    .is_none_or(|h| h.generation == generation)
            })
            .collect();
        let _ = self.withdraw(&touched, ReleaseReason::Abort, Some(generation));
    }

    /// Releases the issues among `views` this instance holds, and withdraws
    /// its claims that do not hold (its losing claim, and those of
    /// generation `wrote` that it just made and lost). A release (the label
    /// and a released lease) happens only where we hold the issue. A claim
    /// that lost is withdrawn by editing its own comment into a
    /// `maverick-withdrawn` marker (a comment this account wrote; a claim
    /// of ours in another's comment gets a new one of ours): never a lease
    /// on an issue another instance holds, which Maverick would read as
    /// that issue's lease (stale at once). The write is guarded, so a
    /// takeover that lands between our read and our write keeps its label;
    /// we then read again and withdraw what is still ours. Returns the
    /// issues it released or withdrew a claim on.
    fn withdraw(
        &self,
        views: &[IssueView],
        reason: ReleaseReason,
        wrote: Option<u64>,
    ) -> Result<Vec<u64>, LeaseError> {
        let issues: Vec<u64> = views.iter().map(|v| v.issue).collect();
        let mut views = views.to_vec();
        // Who we are, to edit only our own comments: after a claim the
        // surface knows it from the claim it wrote; a heartbeat that finds
        // its claim lost asks, once, only when it has a claim to withdraw.
        let account = std::cell::OnceCell::new();
        for _ in 0..8 {
            let now = self.surface.now()?;
            let mut held: Vec<(u64, u64)> = Vec::new();
            let mut orphans: Vec<u64> = Vec::new();
            let writes: Vec<Write> = views
                .iter()
                .filter_map(|v| {
                    let ours = v.holder.as_ref().filter(|h| h.instance_id == *self.me());
                    let mut ops = Vec::new();
                    if let Some(claim) = ours {
                        held.push((v.issue, claim.comment_id));
                        ops.push(Op::CreateComment(self.release_body(
                            claim.generation,
                            now,
                            reason,
                        )));
                        ops.push(Op::RemoveLabel(self.settings.labels.in_progress.clone()));
                    } else {
                        let losing = v.my_losing_claim.as_ref().map(|c| c.generation);
                        let holder = v.holder.as_ref().map(|h| h.instance_id.as_str());
                        let (own, foreign): (Vec<_>, Vec<_>) = v
                            .my_claim_comments
                            .iter()
                            .filter(|c| {
                                let generation = c.claim.generation;
                                generation.is_some()
                                    && (generation == losing || generation == wrote)
                            })
                            .partition(|c| {
                                let account = account.get_or_init(|| self.surface.me().to_owned());
                                own_comment(&c.author, Some(account))
                            });
                        // Our own comment is edited, so that no reader
                        // (Maverick included) takes it for a claim any more.
                        // Another account's is never touched: a withdrawal
                        // of ours in a later comment ends the claim it
                        // carries for every reader: our edited one, else a
                        // new one (one for each generation).
                        for c in &own {
                            ops.push(Op::UpdateComment {
                                id: c.id,
                                body: self.withdrawn_body(&c.claim, now, reason.as_str(), holder),
                            });
                        }
                        let mut ended: Vec<Option<u64>> = Vec::new();
                        for c in foreign {
                            let generation = c.claim.generation;
                            let later_own = own
                                .iter()
                                .any(|o| o.claim.generation == generation && o.id > c.id);
                            if !later_own && !ended.contains(&generation) {
                                ended.push(generation);
                                // A marker id of its own: a copy of ours
                                // that another account wrote may carry our
                                // claim's, and a reader counts one marker
                                // of a kind and id (a retried POST's copy).
                                let claim = ClaimPayload {
                                    marker_id: Some(crate::markers::new_marker_id()),
                                    ..c.claim.clone()
                                };
                                ops.push(Op::CreateComment(self.withdrawn_body(
                                    &claim,
                                    now,
                                    reason.as_str(),
                                    holder,
                                )));
                            }
                        }
                        if v.my_release_unfinished {
                            // An earlier release wrote its marker but failed to
                            // remove the label: a rerun finishes it.
                            orphans.push(v.issue);
                            ops.push(Op::RemoveLabel(self.settings.labels.in_progress.clone()));
                        }
                    }
                    (!ops.is_empty()).then_some(Write {
                        issue: v.issue,
                        ops,
                    })
                })
                .collect();
            if writes.is_empty() {
                return Ok(Vec::new());
            }
            let mut guard = |current: &[Issue], now: Timestamp| {
                current.iter().all(|issue| {
                    let v = || analyze(issue, self.settings, self.me(), now);
                    held.iter()
                        .filter(|(n, _)| *n == issue.number)
                        .all(|(_, id)| v().holder.is_some_and(|h| h.comment_id == *id))
                        && (!orphans.contains(&issue.number) || v().holder.is_none())
                })
            };
            // A crash between the marker and the label leaves an orphan label.
            crate::failpoint::name_ops(&["release"]);
            if self.surface.write(&writes, Some(&mut guard))?.is_some() {
                return Ok(writes.iter().map(|w| w.issue).collect());
            }
            views = self.read(&issues)?;
        }
        Err(LeaseError::Surface(SurfaceError::Other(
            "the claims kept changing while releasing; run the command again".to_owned(),
        )))
    }

    /// Pushes the lease forward on every issue, or reports the claim lost.
    /// The write that renews `view`'s lease: in place only where Maverick
    /// reads the lease too (the newest comment with a lease block, whoever
    /// wrote it), else a new lease comment.
    /// The lease runs this coordinator's `lease_ttl` (a heartbeat's
    /// `--lease-ttl` sets it; `task done` renews for the ttl the claim
    /// declared).
    fn renewal(&self, view: &IssueView, generation: u64, now: Timestamp) -> Op {
        let ttl = self.settings.lease_ttl;
        match &view.my_lease_comment {
            Some((id, payload))
                if self.own_lease_comment(view, *id) && view.newest_lease_comment == Some(*id) =>
            {
                Op::UpdateComment {
                    id: *id,
                    body: self.lease_body(&self.lease_payload(
                        generation,
                        now,
                        ttl,
                        Some(payload.clone()),
                    )),
                }
            }
            _ => {
                Op::CreateComment(self.lease_body(&self.lease_payload(generation, now, ttl, None)))
            }
        }
    }

    /// Re-reads and settles the claim on every issue (SPEC 4: a race the
    /// claim's re-read missed ends here, exit 7), and writes the leases that
    /// `renewal` says are due; a lease with time enough left is left as it is.
    pub fn heartbeat(
        &self,
        issues: &[u64],
        generation: Option<u64>,
        renewal: Renewal,
    ) -> Result<HeartbeatOutcome, LeaseError> {
        let raw = self.surface.claim_records(issues)?;
        let now = self.surface.now()?;
        self.heartbeat_read(issues, raw, now, generation, renewal)
    }

    /// [`heartbeat`](Coordinator::heartbeat) on `raw`, the claim records of
    /// `issues` a caller has just read at surface time `now`: no read of its own.
    pub fn heartbeat_read(
        &self,
        issues: &[u64],
        mut raw: Vec<Issue>,
        now: Timestamp,
        generation: Option<u64>,
        renewal: Renewal,
    ) -> Result<HeartbeatOutcome, LeaseError> {
        let views: Vec<IssueView> = raw
            .iter()
            .map(|i| analyze(i, self.settings, self.me(), now))
            .collect();
        // A lease of ours that lapsed is lost too (SPEC 4): another instance
        // may have taken it over, or be about to, and on GitHub a renewal
        // does not fence a takeover already on its way.
        let lost: Vec<&IssueView> = views
            .iter()
            .filter(|v| {
                v.decision() != Decision::Ours || generation.is_some_and(|g| g != v.generation)
            })
            .collect();
        if !lost.is_empty() {
            let reason = lost_reason(
                lost[0],
                self.me(),
                generation,
                &self.settings.labels.in_progress,
            );
            // A claim of ours that lost a race nobody saw must not come back
            // to life when the winner releases.
            let losing: Vec<IssueView> = views
                .iter()
                .filter(|v| {
                    v.my_losing_claim.is_some()
                        && v.holder
                            .as_ref()
                            .is_none_or(|h| h.instance_id != *self.me())
                })
                .cloned()
                .collect();
            self.withdraw(&losing, ReleaseReason::LostRace, None)?;
            return Ok(HeartbeatOutcome::Lost { reason, views });
        }
        let generation = views[0].generation;
        let writes: Vec<Write> = views
            .iter()
            .filter(|v| renewal.due(v, self.settings.heartbeat_interval))
            .map(|v| Write {
                issue: v.issue,
                ops: vec![self.renewal(v, generation, now)],
            })
            .collect();
        let written: Vec<u64> = writes.iter().map(|w| w.issue).collect();
        if writes.is_empty() {
            return Ok(HeartbeatOutcome::Renewed {
                generation,
                written,
                views,
            });
        }
        let expected = generation;
        let mut guard = |current: &[Issue], now: Timestamp| {
            current.iter().all(|issue| {
                let v = analyze(issue, self.settings, self.me(), now);
                v.decision() == Decision::Ours && v.generation == expected
            })
        };
        crate::failpoint::name_ops(&["heartbeat"]);
        let Some(applied) = self.surface.write(&writes, Some(&mut guard))? else {
            let views = self.read(issues)?;
            let reason = views
                .iter()
                .find(|v| v.decision() != Decision::Ours || v.generation != expected)
                .map(|v| {
                    lost_reason(
                        v,
                        self.me(),
                        Some(expected),
                        &self.settings.labels.in_progress,
                    )
                })
                .unwrap_or_else(|| "the claim changed while renewing".to_owned());
            return Ok(HeartbeatOutcome::Lost { reason, views });
        };
        // The renewed state is what we read plus what we wrote: no third read.
        for (write, results) in writes.iter().zip(applied) {
            let issue = raw
                .iter_mut()
                .find(|i| i.number == write.issue)
                .expect("every written issue was read");
            for comment in results.into_iter().filter_map(|a| match a {
                Applied::Comment(c) => Some(c),
                _ => None,
            }) {
                match issue.comments.iter_mut().find(|c| c.id == comment.id) {
                    Some(existing) => *existing = comment,
                    None => issue.comments.push(comment),
                }
            }
        }
        let views = raw
            .iter()
            .map(|i| analyze(i, self.settings, self.me(), now))
            .collect();
        Ok(HeartbeatOutcome::Renewed {
            generation,
            written,
            views,
        })
    }

    /// Whether the lease comment `id` may be updated in place: it is the
    /// lease of our claim, in a comment this account wrote
    /// ([`own_comment`], the rule a withdrawal follows too). Who we are is
    /// what the surface knows without asking (a heartbeat must not cost a
    /// request for it): the account of our own writes, else the one that
    /// wrote the claim we hold by.
    fn own_lease_comment(&self, view: &IssueView, id: u64) -> bool {
        let account = self
            .surface
            .known_me()
            .or_else(|| view.holder.as_ref().map(|h| h.author.as_str()));
        view.lease.as_ref().is_some_and(|l| {
            l.comment_id == Some(id)
                && l.author
                    .as_deref()
                    .is_some_and(|author| own_comment(author, account))
        })
    }

    /// Releases the issues this instance holds; never another's claim.
    pub fn release(
        &self,
        issues: &[u64],
        reason: ReleaseReason,
    ) -> Result<ReleaseOutcome, LeaseError> {
        let views = self.read(issues)?;
        let released = self.withdraw(&views, reason, None)?;
        let views = self.read(issues)?;
        let foreign: Vec<IssueView> = views
            .iter()
            .filter(|v| {
                v.holder
                    .as_ref()
                    .is_some_and(|h| h.instance_id != *self.me())
            })
            .cloned()
            .collect();
        Ok(ReleaseOutcome {
            released,
            foreign,
            views,
        })
    }

    /// Adds or removes labels (block/unblock and `label`).
    pub(crate) fn relabel(
        &self,
        issue: u64,
        add: &[String],
        remove: &[String],
    ) -> Result<Vec<String>, LeaseError> {
        let mut ops = Vec::new();
        if !add.is_empty() {
            ops.push(Op::AddLabels(add.to_vec()));
        }
        ops.extend(remove.iter().cloned().map(Op::RemoveLabel));
        self.surface.write_unguarded(issue, ops)?;
        Ok(self.surface.issue(issue)?.labels)
    }
}

/// How many rounds a claim may lose to a guard that refused (the claims
/// moved under us between the read and the write) before it answers with
/// what it reads.
const CLAIM_ROUNDS: u32 = 8;

/// An issue's claim (every issue of its scope) as the settle drives it.
struct IssueClaim<'c, 'a> {
    coord: &'c Coordinator<'a>,
    req: &'c ClaimRequest<'c>,
}

/// What a claim round writes, as its read decided.
struct ClaimPick {
    generation: u64,
    writes: Vec<Write>,
    /// Each issue's generation and decision as read: the guard's facts.
    expected: Vec<(u64, u64, Decision)>,
    takeover: bool,
}

impl Race for IssueClaim<'_, '_> {
    type Pick = ClaimPick;
    type Wrote = (u64, Vec<(u64, Comment)>);
    type Lost = (u64, Vec<IssueView>);
    type Answer = ClaimOutcome;
    type Error = LeaseError;

    fn begin(&mut self, _lost: u32) -> Result<Begin<ClaimOutcome, ClaimPick>, LeaseError> {
        let (coord, req) = (self.coord, self.req);
        let views = coord.read(&req.issues)?;
        if let Some(closed) = views.iter().find(|v| !v.open) {
            return Err(LeaseError::Closed(closed.issue));
        }
        // A lapsed lease of ours is lost as any stale one is: held
        // again only by a new claim (a new generation), never renewed.
        // Nobody else claimed it, so its holder re-takes it without
        // `--takeover` (a person's claim must not stay lost unseen).
        let stale = |v: &IssueView| v.decision() == Decision::Stale;
        if views.iter().all(|v| v.decision() == Decision::Ours) {
            let generation = views[0].generation;
            return Ok(Begin::Answer(ClaimOutcome::Claimed {
                generation,
                views,
                already_held: true,
            }));
        }
        if views.iter().any(|v| v.decision() == Decision::Blocked) {
            return Ok(Begin::Answer(ClaimOutcome::Blocked { views }));
        }
        if views.iter().any(|v| v.decision() == Decision::Held) {
            return Ok(Begin::Answer(ClaimOutcome::Held { views }));
        }
        if !req.takeover && views.iter().any(stale) {
            return Ok(Begin::Answer(ClaimOutcome::Stale { views }));
        }
        let Some(generation) = views
            .iter()
            .map(|v| v.generation)
            .max()
            .unwrap_or(0)
            .checked_add(1)
        else {
            return Err(LeaseError::GenerationExhausted(views[0].issue));
        };
        let now = views[0].now;
        let writes: Vec<Write> = views
            .iter()
            .map(|v| {
                // A takeover: of another's stale lease, or of our own
                // lapsed one (written as such, SPEC 4).
                let prior = v.holding.lapsed().then_some(v);
                let lease = coord.lease_body(&coord.lease_payload(
                    generation,
                    now,
                    coord.settings.lease_ttl,
                    None,
                ));
                Write {
                    issue: v.issue,
                    ops: vec![
                        Op::AddLabels(vec![coord.settings.labels.in_progress.clone()]),
                        Op::CreateComment(coord.claim_body(req, generation, now, prior)),
                        Op::CreateComment(lease),
                    ],
                }
            })
            .collect();
        Ok(Begin::Claim(ClaimPick {
            generation,
            writes,
            expected: views
                .iter()
                .map(|v| (v.issue, v.generation, v.decision()))
                .collect(),
            takeover: views.iter().any(stale),
        }))
    }

    fn write(&mut self, pick: &ClaimPick) -> Result<Option<Self::Wrote>, LeaseError> {
        let coord = self.coord;
        let mut guard = |current: &[Issue], now: Timestamp| {
            current.iter().all(|issue| {
                let v = analyze(issue, coord.settings, coord.me(), now);
                pick.expected.iter().any(|(n, g, d)| {
                    *n == v.issue
                        && *g == v.generation
                        && (*d == v.decision()
                            || matches!(v.decision(), Decision::Free | Decision::Ours))
                })
            })
        };
        let steps = if pick.takeover {
            ["", "takeover", ""]
        } else {
            [
                "claim-after-label",
                "claim-after-claim-comment",
                "claim-after-lease",
            ]
        };
        crate::failpoint::name_ops(&steps);
        let applied = match coord.surface.write(&pick.writes, Some(&mut guard)) {
            Ok(Some(applied)) => applied,
            Ok(None) => return Ok(None),
            Err(err) => {
                coord.abandon(&self.req.issues, pick.generation);
                return Err(err.into());
            }
        };
        let written: Vec<(u64, Comment)> = pick
            .writes
            .iter()
            .zip(applied)
            .flat_map(|(w, results)| {
                results.into_iter().filter_map(move |a| match a {
                    Applied::Comment(c) => Some((w.issue, c)),
                    _ => None,
                })
            })
            .collect();
        Ok(Some((pick.generation, written)))
    }

    /// Every reader reaches the same verdict (see [`analyze`]).
    fn reread(
        &mut self,
        _pick: ClaimPick,
        (generation, written): Self::Wrote,
    ) -> Result<Verdict<ClaimOutcome, Self::Lost>, LeaseError> {
        let views = self.coord.read_with(&self.req.issues, &written)?;
        // The settle is won by the claim that holds: ours, even where its
        // lease ran out before the re-read (a lease of a second on a slow
        // machine). Nobody else claimed in between, or the holder would be
        // theirs; the lapse is the lease's own fact, which the answer shows
        // and the next heartbeat acts on.
        if views.iter().all(|v| {
            matches!(v.decision(), Decision::Ours | Decision::Lapsed) && v.generation == generation
        }) {
            return Ok(Verdict::Won(ClaimOutcome::Claimed {
                generation,
                views,
                already_held: false,
            }));
        }
        Ok(Verdict::Lost((generation, views)))
    }

    /// Withdraws every claim comment of the generation we wrote (the
    /// re-read counts ours even where a lagging list misses them): the
    /// issue is another instance's, and the claim ends.
    fn withdraw(
        &mut self,
        (generation, views): Self::Lost,
    ) -> Result<Option<ClaimOutcome>, LeaseError> {
        let coord = self.coord;
        let winner = views
            .iter()
            .filter_map(|v| v.holder.as_ref())
            .find(|h| h.instance_id != *coord.me())
            .map(|h| h.instance_id.clone());
        coord.withdraw(&views, ReleaseReason::LostRace, Some(generation))?;
        let views = coord.read(&self.req.issues)?;
        Ok(Some(ClaimOutcome::Lost { winner, views }))
    }

    fn out_of_budget(&mut self) -> Result<ClaimOutcome, LeaseError> {
        let views = self.coord.read(&self.req.issues)?;
        Ok(ClaimOutcome::Held { views })
    }
}

/// When a heartbeat writes the lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Renewal {
    /// When [`maverick_core::holding::renewal_due`] says so; `grace` is how long the
    /// holder needs to stop its work once it knows its claim is lost (`run`'s
    /// `--grace`; zero for a command that holds no work).
    WhenDue { grace: Duration },
    /// Whatever time the lease has left (`coord heartbeat --renew`).
    Now,
}

impl Renewal {
    /// When due, for a holder with no work of its own to stop.
    pub const WHEN_DUE: Renewal = Renewal::WhenDue {
        grace: Duration::ZERO,
    };

    /// Whether a heartbeat renews the lease of `view`, one of ours.
    fn due(self, view: &IssueView, interval: Duration) -> bool {
        match (self, view.expires_at) {
            (Renewal::WhenDue { grace }, Some(expires_at)) => {
                maverick_core::holding::renewal_due(view.now, expires_at, interval, grace)
            }
            _ => true,
        }
    }
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum HeartbeatOutcome {
    /// The claim holds; `issues` carry each lease's expiry, as written now
    /// or as it stood.
    Renewed {
        generation: u64,
        /// The issues whose lease this heartbeat wrote. A lease with time
        /// enough left for two more heartbeats and a margin is left as it
        /// is (a comment edit is a request GitHub limits), so this is
        /// empty for most heartbeats; `--renew` writes every one.
        written: Vec<u64>,
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
    Lost {
        reason: String,
        #[serde(rename = "issues")]
        views: Vec<IssueView>,
    },
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub struct ReleaseOutcome {
    pub released: Vec<u64>,
    /// Issues held by another instance: left alone.
    pub foreign: Vec<IssueView>,
    #[serde(rename = "issues")]
    pub views: Vec<IssueView>,
}
