//! The claim protocol kept in step with this clone's local records.
//!
//! Every claim, heartbeat and release goes through here, whoever calls it
//! (`coord`, `run`, a session-end `release-all`), so the records that the
//! pre-push hook and `task done` read without a network call are always
//! those of the last answer the surface gave.

use crate::config::Settings;
pub use crate::coord::lease::ReleaseReason;
use crate::coord::lease::{
    ClaimOutcome, ClaimRequest, Coordinator, Decision, HeartbeatOutcome, IssueView, LeaseError,
    ReleaseOutcome, Renewal,
};
use crate::coord::pulls::closing_pull;
use crate::git::{Git, GitError};
use crate::records::branch::BranchStore;
use crate::records::claim::{ClaimRecord, ClaimStore};
use crate::records::files::RecordError;
use crate::surface::{Issue, PullRequest};
use crate::timefmt::Timestamp;
use crate::writer::prepush;
use maverick_core::ids::InstanceId;

#[derive(Debug, thiserror::Error)]
pub enum ClaimsError {
    #[error(transparent)]
    Lease(#[from] LeaseError),
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Git(#[from] GitError),
    /// Recording the head the claim saw.
    #[error(transparent)]
    Seen(#[from] crate::writer::prepush::SeenError),
}

/// A claim as a command asks for it: the issue, the rest of its scope, the
/// branch it writes to (already checked), and whether to take a stale
/// lease over.
pub(crate) struct ScopeClaim {
    pub issue: u64,
    pub scope: Vec<u64>,
    pub branch: Option<String>,
    pub takeover: bool,
}

/// What a command's claim came to: the protocol's answer, and for a claim
/// with a branch whose remote head could not be read, why.
pub(crate) struct ClaimReport {
    pub outcome: ClaimOutcome,
    pub branch: Option<String>,
    pub head_unread: Option<HeadUnread>,
}

/// The remote head of a branch just claimed could not be read, so the
/// pre-push hook has no last-seen head for it yet.
pub(crate) struct HeadUnread {
    pub branch: String,
    pub remote: String,
    pub error: GitError,
}

/// Claims for `coord claim`, `coord takeover`, `run` and `resume`: the
/// issue and its scope (each once), recorded in this clone, and for a
/// branch, its remote head as last seen at the claim (SPEC 8).
pub(crate) fn claim_scope(
    git: &Git,
    coord: &Coordinator<'_>,
    store: &ClaimStore,
    claim: ScopeClaim,
) -> Result<ClaimReport, ClaimsError> {
    let ScopeClaim {
        issue,
        scope,
        branch,
        takeover,
    } = claim;
    let mut issues = vec![issue];
    for n in scope {
        if !issues.contains(&n) {
            issues.push(n);
        }
    }
    let own = own_branches(git, branch.as_deref())?;
    if let Some(outcome) = refused_for_pulls(coord, &issues, &own)? {
        return Ok(ClaimReport {
            outcome,
            branch,
            head_unread: None,
        });
    }
    let request = ClaimRequest {
        issues,
        branch: branch.as_deref(),
        takeover,
    };
    let outcome = self::claim(coord, store, &request)?;
    let head_unread = match (&outcome, &branch) {
        (ClaimOutcome::Claimed { already_held, .. }, Some(b)) => {
            record_head_at_claim(git, coord.settings, b, issue, *already_held)?
        }
        _ => None,
    };
    Ok(ClaimReport {
        outcome,
        branch,
        head_unread,
    })
}

/// The branches whose pull requests are the claimant's own work: the one
/// it claims for, and the one checked out.
pub(crate) fn own_branches(git: &Git, branch: Option<&str>) -> Result<Vec<String>, GitError> {
    let mut own: Vec<String> = branch.into_iter().map(str::to_owned).collect();
    own.extend(git.current_branch()?.filter(|b| Some(b.as_str()) != branch));
    Ok(own)
}

/// Reads `issues` as `coord read` shows them: an issue that nobody holds
/// live is held by an open pull request that closes it, unless that is the
/// reader's own work (from one of `own_branches`, or from the branch this
/// instance's claim names). One list of open pull requests when an issue
/// could be so held, answered 304 (free) on GitHub when none changed;
/// nothing on the git surface, which has none.
pub(crate) fn read_with_pulls(
    coord: &Coordinator<'_>,
    issues: &[u64],
    own_branches: &[String],
) -> Result<Vec<IssueView>, LeaseError> {
    let views = coord.read(issues)?;
    if !views.iter().any(IssueView::pull_may_hold) {
        return Ok(views);
    }
    let pulls = coord.surface.open_pulls()?;
    Ok(with_pulls(coord, views, &pulls, own_branches))
}

fn with_pulls(
    coord: &Coordinator<'_>,
    views: Vec<IssueView>,
    pulls: &[PullRequest],
    own_branches: &[String],
) -> Vec<IssueView> {
    let me = &coord.settings.instance;
    views
        .into_iter()
        .map(|view| judged_with_pulls(view, pulls, own_branches, me))
        .collect()
}

/// `view` as `coord read` judges it with `pulls` listed: held by an open
/// pull request that closes the issue when nobody holds it live and the
/// pull request is not the reader's own (from one of `own_branches`, or
/// from the branch this instance's own claim on it names). `me` is this
/// instance.
pub(crate) fn judged_with_pulls(
    view: IssueView,
    pulls: &[PullRequest],
    own_branches: &[String],
    me: &InstanceId,
) -> IssueView {
    let mut own: Vec<&str> = own_branches.iter().map(String::as_str).collect();
    own.extend(
        view.holder
            .as_ref()
            .filter(|h| h.instance_id == *me)
            .and_then(|h| h.branch.as_deref()),
    );
    let pull = closing_pull(pulls, view.issue, &own);
    view.with_pull(pull)
}

/// A claim's refusal because an open pull request, not the claimant's
/// own, closes an issue of its scope that nobody else holds live: as a
/// claim held by another instance refuses it (a block first, as the claim
/// protocol reports). `None` when the claim may go ahead; the protocol then
/// judges the issues again as it writes.
fn refused_for_pulls(
    coord: &Coordinator<'_>,
    issues: &[u64],
    own_branches: &[String],
) -> Result<Option<ClaimOutcome>, LeaseError> {
    let pulls = coord.surface.open_pulls()?;
    let own: Vec<&str> = own_branches.iter().map(String::as_str).collect();
    if !issues
        .iter()
        .any(|&n| closing_pull(&pulls, n, &own).is_some())
    {
        return Ok(None);
    }
    let views = with_pulls(coord, coord.read(issues)?, &pulls, own_branches);
    let any = |d: Decision| views.iter().any(|v| v.decision() == d);
    // A closed issue is the claim protocol's error to report.
    Ok(if views.iter().any(|v| !v.open) {
        None
    } else if any(Decision::Blocked) {
        Some(ClaimOutcome::Blocked { views })
    } else if any(Decision::Held) {
        Some(ClaimOutcome::Held { views })
    } else {
        None
    })
}

/// Records the remote head of a branch just claimed (SPEC 8: last seen is
/// recorded when it claimed). A claim already held keeps what it saw.
fn record_head_at_claim(
    git: &Git,
    settings: &Settings,
    branch: &str,
    issue: u64,
    already_held: bool,
) -> Result<Option<HeadUnread>, ClaimsError> {
    let common_dir = git.common_dir()?;
    if already_held && BranchStore::new(&common_dir).get(branch)?.is_some() {
        return Ok(None);
    }
    match git.remote_head(
        &settings.remote,
        branch,
        "record the branch's head as the claim saw it",
    ) {
        Ok(head) => {
            let on = prepush::SeenOn::of_settings(git, settings);
            prepush::record_seen(
                &common_dir,
                branch,
                head.as_deref(),
                Some(issue),
                &settings.instance,
                &on,
                settings.clock.now(),
            )?;
            Ok(None)
        }
        Err(error) => Ok(Some(HeadUnread {
            branch: branch.to_owned(),
            remote: settings.remote.clone(),
            error,
        })),
    }
}

/// Claims `req` and records every issue it now holds.
pub fn claim(
    coord: &Coordinator<'_>,
    store: &ClaimStore,
    req: &ClaimRequest<'_>,
) -> Result<ClaimOutcome, ClaimsError> {
    let outcome = coord.claim(req)?;
    if let ClaimOutcome::Claimed {
        generation, views, ..
    } = &outcome
    {
        let settings = coord.settings;
        for view in views {
            let existing = store.load(&settings.instance, view.issue)?;
            let mut record = record_of(settings, view);
            record.generation = *generation;
            record.branch = req
                .branch
                .map(str::to_owned)
                .or_else(|| existing.and_then(|r| r.branch));
            record.scope = req.issues.clone();
            store.save(&record)?;
        }
    }
    Ok(outcome)
}

/// The record of a claim this instance holds as `view` shows it.
pub(crate) fn record_of(settings: &Settings, view: &IssueView) -> ClaimRecord {
    ClaimRecord {
        issue: view.issue,
        instance_id: settings.instance.clone(),
        generation: view.generation,
        branch: view.holder.as_ref().and_then(|h| h.branch.clone()),
        scope: view
            .holder
            .as_ref()
            .map_or_else(Vec::new, |h| h.scope.clone()),
        surface: settings.surface.to_string(),
        remote: settings.remote.clone(),
        claimed_at: view.holder.as_ref().map_or(view.now, |h| h.claimed_at),
        last_confirmed: view.now,
        expires_at: view.expires_at.unwrap_or(view.now),
        lost: None,
    }
}

/// The issues a command about `issue` acts on: the whole scope it was
/// claimed with when this instance has a record of it.
pub(crate) fn scope_of(
    store: &ClaimStore,
    instance: &InstanceId,
    issue: u64,
) -> Result<(Vec<u64>, Option<ClaimRecord>), RecordError> {
    let record = store.load(instance, issue)?;
    let mut issues = vec![issue];
    if let Some(r) = &record {
        issues.extend(r.scope.iter().filter(|n| **n != issue));
    }
    Ok((issues, record))
}

/// Settles the claim on `issues` (at `generation`, when given), renews
/// their leases as `renewal` says, and records what the surface said.
pub(crate) fn heartbeat(
    coord: &Coordinator<'_>,
    store: &ClaimStore,
    issues: &[u64],
    generation: Option<u64>,
    renewal: Renewal,
) -> Result<HeartbeatOutcome, ClaimsError> {
    let outcome = coord.heartbeat(issues, generation, renewal)?;
    record_heartbeat(store, &coord.settings.instance, issues, &outcome)?;
    Ok(outcome)
}

/// [`heartbeat`] on the claim records of `issues` the caller has just read
/// (`raw`, at surface time `now`): no second read.
pub(crate) fn heartbeat_read(
    coord: &Coordinator<'_>,
    store: &ClaimStore,
    issues: &[u64],
    (raw, now): (Vec<Issue>, Timestamp),
    generation: Option<u64>,
    renewal: Renewal,
) -> Result<HeartbeatOutcome, ClaimsError> {
    let outcome = coord.heartbeat_read(issues, raw, now, generation, renewal)?;
    record_heartbeat(store, &coord.settings.instance, issues, &outcome)?;
    Ok(outcome)
}

/// Records a heartbeat's answer: a renewal moves `last_confirmed` and
/// `expires_at`; a loss marks every issue of the claim lost, so that a push
/// for it is refused without a network call.
pub(crate) fn record_heartbeat(
    store: &ClaimStore,
    instance: &InstanceId,
    issues: &[u64],
    outcome: &HeartbeatOutcome,
) -> Result<(), RecordError> {
    match outcome {
        HeartbeatOutcome::Renewed { views, .. } => {
            for view in views {
                if let Some(mut r) = store.load(instance, view.issue)? {
                    r.last_confirmed = view.now;
                    r.expires_at = view.expires_at.unwrap_or(view.now);
                    store.save(&r)?;
                }
            }
            Ok(())
        }
        HeartbeatOutcome::Lost { reason, .. } => mark_lost(store, instance, issues, reason),
    }
}

/// Marks this instance's records of `issues` lost, with why.
pub(crate) fn mark_lost(
    store: &ClaimStore,
    instance: &InstanceId,
    issues: &[u64],
    reason: &str,
) -> Result<(), RecordError> {
    for n in issues {
        if let Some(mut r) = store.load(instance, *n)? {
            r.lost = Some(reason.to_owned());
            store.save(&r)?;
        }
    }
    Ok(())
}

/// Releases what this instance holds among `issues` (never another's claim)
/// and forgets the records of what it released.
pub(crate) fn release(
    coord: &Coordinator<'_>,
    store: &ClaimStore,
    issues: &[u64],
    reason: ReleaseReason,
) -> Result<ReleaseOutcome, ClaimsError> {
    let instance = &coord.settings.instance;
    let outcome = coord.release(issues, reason)?;
    for n in &outcome.released {
        forget(store, instance, *n)?;
    }
    // What another instance holds now is lost to us: the pre-push hook must
    // refuse this instance's pushes to it from now on.
    for view in &outcome.foreign {
        let holder = view
            .holder
            .as_ref()
            .map_or("another instance", |h| h.instance_id.as_str());
        let reason = format!("#{} is held by {holder}", view.issue);
        mark_lost(store, instance, &[view.issue], &reason)?;
    }
    // The claims that stay no longer cover what was released.
    for mut record in store.of_instance(instance)? {
        let before = record.scope.len();
        record.scope.retain(|n| !outcome.released.contains(n));
        if record.scope.len() != before {
            store.save(&record)?;
        }
    }
    Ok(outcome)
}

/// Forgets a released claim's record, and its branch's last-seen record
/// once no claim of this clone holds that branch any more: a released
/// branch is no longer guarded by the pre-push hook, but a branch two
/// claims share stays guarded, and its head stays known, for the other.
/// The claim records are the one list of a branch's holders.
fn forget(store: &ClaimStore, instance: &InstanceId, issue: u64) -> Result<(), RecordError> {
    let branch = store.load(instance, issue)?.and_then(|r| r.branch);
    store.remove(instance, issue)?;
    if let Some(branch) = branch {
        let holders = store.for_branch(&branch)?;
        let branches = store.branch_store();
        match holders.first() {
            None => branches.remove(&branch)?,
            Some(holder) => {
                if let Some(mut record) = branches.get(&branch)? {
                    if record.issue == Some(issue) {
                        record.issue = Some(holder.issue);
                        record.instance_id = Some(holder.instance_id.to_string());
                        branches.set(&record)?;
                    }
                }
            }
        }
    }
    Ok(())
}

/// Releases every claim this instance holds by its local records (a
/// session-end hook's sweep). Issues whose claim another instance holds now
/// are left alone.
pub(crate) fn release_all(
    coord: &Coordinator<'_>,
    store: &ClaimStore,
    reason: ReleaseReason,
) -> Result<ReleaseOutcome, ClaimsError> {
    let mut issues: Vec<u64> = Vec::new();
    for record in store.of_instance(&coord.settings.instance)? {
        for n in std::iter::once(record.issue).chain(record.scope) {
            if !issues.contains(&n) {
                issues.push(n);
            }
        }
    }
    if issues.is_empty() {
        return Ok(ReleaseOutcome {
            released: Vec::new(),
            foreign: Vec::new(),
            views: Vec::new(),
        });
    }
    let outcome = release(coord, store, &issues, reason)?;
    // The sweep ends this instance's work: records of claims it no longer
    // holds (lost to a takeover) have nothing left to guard.
    for view in &outcome.views {
        if !view.holding.claim_is_mine() {
            forget(store, &coord.settings.instance, view.issue)?;
        }
    }
    Ok(outcome)
}
