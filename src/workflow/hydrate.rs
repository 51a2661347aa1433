//! The cold start (SPEC 5): rebuild local state from the surface alone.
//!
//! For an epic: its DAG, its `maverick-state`, each story's labels (block,
//! claim), the claim and lease of each story in flight, open pull requests
//! with their CI status, and a block propagation in flight. For a story:
//! its claim, its task-progress marker, its tasks and its pull request.
//! The result is what `.claude/epic-state.json` (and
//! `.claude/issue-state.json`) hold; the surface always wins over them.
//!
//! Reads are shaped for GitHub's request budget: one read of the epic with
//! its comments, one of every story's labels ([`Surface::summaries`]), the
//! comments of the stories in flight only ([`Surface::with_comments`]: on
//! GitHub, one list of recent comments where their comments are recent),
//! one list of open pull requests and one CI query for the heads of the
//! stories' pull requests. Every read is conditional: a hydrate of an
//! unchanged epic costs nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::{Settings, SurfaceKind};
use crate::coord::lease::{self, Decision, Holding, IssueView};
use crate::durable::state::{self, FoundMarker, StoryState};
use crate::durable::tasks::{self, Task};
use crate::git::{Git, GitError};
use crate::markers::MarkerKind;
use crate::records::claim;
use crate::surface::{CiStatus, Issue, IssueSummary, PullRequest, Surface, SurfaceError};
use crate::timefmt::Timestamp;
use maverick_core::ids::InstanceId;
use maverick_core::payloads::PayloadError;

pub(crate) const EPIC_STATE_FILE: &str = ".claude/epic-state.json";
pub(crate) const ISSUE_STATE_FILE: &str = ".claude/issue-state.json";

#[derive(Debug, thiserror::Error)]
pub enum HydrateError {
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("could not write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Confine(#[from] crate::records::files::ConfineError),
    #[error("#{issue}: {source}")]
    Unreadable {
        issue: u64,
        #[source]
        source: PayloadError,
    },
}

/// What `hydrate` found: an epic (it has a DAG or an epic state) or a story.
#[derive(Clone, Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum Hydrated {
    Epic(Box<EpicState>),
    Story(Box<IssueState>),
}

/// `.claude/epic-state.json`: the epic's `maverick-state` snapshot in
/// Maverick's shape (its other fields kept), and what the surface says of
/// each story.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct EpicState {
    /// The `maverick-state` payload's fields beyond those below, as written.
    #[serde(flatten)]
    pub recorded: Map<String, Value>,
    pub epic: u64,
    /// Each story's effective state (`pending`, `in_flight`, `merged`,
    /// `blocked`, `ejected`), by issue number.
    #[schemars(with = "BTreeMap<String, String>")]
    pub stories: BTreeMap<String, StoryState>,
    /// The `maverick-dag` payload.
    pub dag: Option<Map<String, Value>>,
    /// A `maverick-bprop` walk in flight.
    pub bprop: Option<Map<String, Value>>,
    /// Each story, by issue number.
    pub issues: BTreeMap<String, StoryDetail>,
    /// Pending stories that are free, open, and whose dependencies merged.
    pub ready: Vec<u64>,
    pub pulls: Vec<PullDetail>,
    pub hydrated: HydratedAt,
}

/// One story of an epic.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct StoryDetail {
    /// As the epic's state marker records it (`pending`, `in_flight`,
    /// `merged`, `blocked`, `ejected`; a state outside these records
    /// nothing), else derived from labels.
    #[schemars(with = "String")]
    pub state: StoryState,
    /// `marker` (the epic's maverick-state) or `derived` (from labels).
    #[schemars(schema_with = "state_sources")]
    pub state_source: &'static str,
    pub deps: Vec<u64>,
    pub open: Option<bool>,
    pub labels: Vec<String>,
    pub blocked_by: Vec<u64>,
    pub claim: Option<ClaimDetail>,
    pub decision: Decision,
    pub pull: Option<PullDetail>,
}

/// Where a story's state comes from, for the schemas.
pub(crate) fn state_sources(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": "string", "enum": ["marker", "derived"] })
}

/// `.claude/issue-state.json`: one story.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct IssueState {
    pub issue: u64,
    pub open: bool,
    pub labels: Vec<String>,
    pub blocked_by: Vec<u64>,
    pub decision: Decision,
    pub claim: Option<ClaimDetail>,
    pub branch: Option<String>,
    /// The `maverick-task-progress` payload.
    pub task_progress: Option<Map<String, Value>>,
    pub tasks: Option<TasksDetail>,
    pub pull: Option<PullDetail>,
    pub hydrated: HydratedAt,
}

/// The holder of a claim.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ClaimDetail {
    pub instance_id: InstanceId,
    pub host: Option<String>,
    pub branch: Option<String>,
    pub generation: u64,
    pub claimed_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub live: bool,
    pub ours: bool,
}

/// The tasks comment of a story.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct TasksDetail {
    pub comment_id: u64,
    pub done: usize,
    pub total: usize,
    /// The next unchecked task's number.
    pub next: Option<usize>,
    pub list: Vec<Task>,
}

/// An open pull request and its CI.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct PullDetail {
    #[serde(flatten)]
    pub pull: PullRequest,
    pub ci: Option<CiStatus>,
}

/// When, where and by whom the state was read.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct HydratedAt {
    pub at: Timestamp,
    pub surface: SurfaceKind,
    pub instance_id: InstanceId,
}

impl HydratedAt {
    fn of(settings: &Settings, now: Timestamp) -> HydratedAt {
        HydratedAt {
            at: now,
            surface: settings.surface,
            instance_id: settings.instance.clone(),
        }
    }
}

impl Hydrated {
    /// As JSON, through a `Value`: keys sorted, as the state files have
    /// always been written.
    pub(crate) fn value(&self) -> Value {
        serde_json::to_value(self).expect("hydrated state serializes")
    }

    /// The file in the worktree root that holds it.
    pub(crate) fn file(&self) -> &'static str {
        match self {
            Hydrated::Epic(_) => EPIC_STATE_FILE,
            Hydrated::Story(_) => ISSUE_STATE_FILE,
        }
    }
}

/// Reads everything about `number` from the surface.
pub fn hydrate(
    surface: &dyn Surface,
    settings: &Settings,
    number: u64,
) -> Result<Hydrated, HydrateError> {
    let issue = surface.issue(number)?;
    let dag = state::newest_marker(&issue, MarkerKind::Dag);
    let epic_state = state::newest_marker(&issue, MarkerKind::State);
    if dag.is_none() && epic_state.is_none() {
        return Ok(Hydrated::Story(Box::new(hydrate_story(
            surface, settings, issue,
        )?)));
    }
    let now = surface.now()?;
    let (deps, recorded) = epic_plan(number, dag.as_ref(), epic_state.as_ref())?;
    let dag_payload = dag.map(|d| d.marker.payload);
    let state_payload = epic_state.map(|s| s.marker.payload);
    let bprop = state::newest_marker(&issue, MarkerKind::Bprop).map(|b| b.marker.payload);
    let stories: Vec<u64> = deps
        .keys()
        .chain(recorded.keys())
        .copied()
        .filter(|n| *n != number)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();

    let summaries: BTreeMap<u64, IssueSummary> = surface
        .summaries(&stories)?
        .into_iter()
        .map(|s| (s.number, s))
        .collect();
    let views = claims_in_flight(surface, settings, &stories, &summaries, now)?;
    let pulls = surface.open_pulls()?;
    let story_pulls = pulls_of_stories(&pulls, &stories, &views);
    let ci = ci_by_sha(surface, story_pulls.values().copied())?;
    let epic = Epic {
        deps: &deps,
        recorded: &recorded,
        summaries: &summaries,
        views: &views,
    };
    let (details, effective) = epic.details(settings, &stories, &story_pulls, &ci);
    let ready = epic.ready(&stories, &details, &effective);

    // The epic-state snapshot itself comes first, in Maverick's shape, so
    // that a tool reading the cache as a `maverick-state` payload finds it.
    let mut recorded = state_payload.unwrap_or_default();
    for field in [
        "epic", "stories", "dag", "bprop", "issues", "ready", "pulls", "hydrated",
    ] {
        recorded.remove(field);
    }
    Ok(Hydrated::Epic(Box::new(EpicState {
        recorded,
        epic: number,
        stories: effective
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        dag: dag_payload,
        bprop,
        issues: details
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        ready,
        pulls: pulls.iter().map(|p| pull_detail(p, &ci)).collect(),
        hydrated: HydratedAt::of(settings, now),
    })))
}

/// The claim and lease of each story in flight: only the stories labelled
/// in progress have their comments read.
fn claims_in_flight(
    surface: &dyn Surface,
    settings: &Settings,
    stories: &[u64],
    summaries: &BTreeMap<u64, IssueSummary>,
    now: Timestamp,
) -> Result<BTreeMap<u64, IssueView>, HydrateError> {
    let in_progress = &settings.labels.in_progress;
    let labelled: Vec<IssueSummary> = stories
        .iter()
        .filter_map(|n| summaries.get(n))
        .filter(|s| s.labels.contains(in_progress))
        .cloned()
        .collect();
    if labelled.is_empty() {
        return Ok(BTreeMap::new());
    }
    Ok(surface
        .with_comments(&labelled)?
        .iter()
        .map(|i| {
            (
                i.number,
                lease::analyze(i, settings, &settings.instance, now),
            )
        })
        .collect())
}

/// Each story's open pull request, by the branch its claim names or the
/// story's number.
fn pulls_of_stories<'a>(
    pulls: &'a [PullRequest],
    stories: &[u64],
    views: &BTreeMap<u64, IssueView>,
) -> BTreeMap<u64, &'a PullRequest> {
    let mut story_pulls = BTreeMap::new();
    for &story in stories {
        let branch = views
            .get(&story)
            .and_then(|v| v.holder.as_ref())
            .and_then(|h| h.branch.as_deref());
        if let Some(pr) = pulls.iter().find(|pr| pull_is_for(pr, story, branch)) {
            story_pulls.insert(story, pr);
        }
    }
    story_pulls
}

/// What an epic's stories are, as read.
struct Epic<'a> {
    deps: &'a BTreeMap<u64, Vec<u64>>,
    recorded: &'a BTreeMap<u64, StoryState>,
    summaries: &'a BTreeMap<u64, IssueSummary>,
    views: &'a BTreeMap<u64, IssueView>,
}

impl Epic<'_> {
    /// Each story's detail by number, and each story's effective state.
    fn details(
        &self,
        settings: &Settings,
        stories: &[u64],
        story_pulls: &BTreeMap<u64, &PullRequest>,
        ci: &BTreeMap<String, CiStatus>,
    ) -> (BTreeMap<u64, StoryDetail>, BTreeMap<u64, StoryState>) {
        let mut details = BTreeMap::new();
        let mut effective: BTreeMap<u64, StoryState> = BTreeMap::new();
        for &story in stories {
            let summary = self.summaries.get(&story);
            let StoryStatus {
                blocked_by,
                state: state_value,
                source,
            } = story_status(settings, summary, self.recorded.get(&story).copied());
            effective.insert(story, state_value);
            let view = self.views.get(&story);
            let decision = match view {
                Some(v) => v.decision(),
                None => Holding::unclaimed(&blocked_by).decision(),
            };
            let detail = StoryDetail {
                state: state_value,
                state_source: source,
                deps: self.deps.get(&story).cloned().unwrap_or_default(),
                open: summary.map(|s| s.open),
                labels: summary.map(|s| s.labels.clone()).unwrap_or_default(),
                blocked_by,
                claim: view.and_then(|v| claim_detail(v, &settings.instance)),
                decision,
                pull: story_pulls.get(&story).map(|pr| pull_detail(pr, ci)),
            };
            details.insert(story, detail);
        }
        (details, effective)
    }

    /// The stories ready to start: pending, open, free, and every
    /// dependency merged.
    fn ready(
        &self,
        stories: &[u64],
        details: &BTreeMap<u64, StoryDetail>,
        effective: &BTreeMap<u64, StoryState>,
    ) -> Vec<u64> {
        let is = |n: &u64, state: StoryState| effective.get(n) == Some(&state);
        stories
            .iter()
            .copied()
            .filter(|n| is(n, StoryState::Pending))
            .filter(|n| self.summaries.get(n).is_none_or(|s| s.open))
            .filter(|n| {
                details[n].decision == Decision::Free
                    && self
                        .deps
                        .get(n)
                        .is_none_or(|ds| ds.iter().all(|d| is(d, StoryState::Merged)))
            })
            .collect()
    }
}

fn hydrate_story(
    surface: &dyn Surface,
    settings: &Settings,
    issue: Issue,
) -> Result<IssueState, HydrateError> {
    let now = surface.now()?;
    let view = lease::analyze(&issue, settings, &settings.instance, now);
    let progress = state::newest_marker(&issue, MarkerKind::TaskProgress);
    let branch = view
        .holder
        .as_ref()
        .and_then(|h| h.branch.clone())
        .or_else(|| tasks::progress(&issue).and_then(|p| p.branch));
    let tasks = tasks::locate(&issue).map(|found| TasksDetail {
        comment_id: found.comment.id,
        done: found.tasks.iter().filter(|t| t.done).count(),
        total: found.tasks.len(),
        next: tasks::next_task(&found.tasks).map(|t| t.number),
        list: found.tasks,
    });
    let pulls = surface.open_pulls()?;
    // As `coord read` judges it: an open pull request that closes the
    // story, not from its own branch, holds it when nobody holds it live.
    let own: Vec<String> = branch.iter().cloned().collect();
    let view = crate::coord::claims::judged_with_pulls(view, &pulls, &own, &settings.instance);
    let pull = pulls
        .iter()
        .find(|pr| pull_is_for(pr, issue.number, branch.as_deref()));
    let ci = ci_by_sha(surface, pull)?;
    Ok(IssueState {
        issue: issue.number,
        open: issue.open,
        claim: claim_detail(&view, &settings.instance),
        decision: view.decision(),
        blocked_by: view.blocked_by,
        labels: issue.labels,
        branch,
        task_progress: progress.map(|p| p.marker.payload),
        tasks,
        pull: pull.map(|p| pull_detail(p, &ci)),
        hydrated: HydratedAt::of(settings, now),
    })
}

/// Writes the hydrated JSON to its file in the worktree root, atomically
/// (temporary file and rename), keeping it out of `git status`. Returns the path.
pub(crate) fn write_local(git: &Git, hydrated: &Hydrated) -> Result<PathBuf, HydrateError> {
    let root = git.toplevel()?;
    let path = crate::records::files::inside(&root, Path::new(hydrated.file()))?;
    let mut bytes = serde_json::to_vec_pretty(&hydrated.value()).expect("JSON values serialize");
    bytes.push(b'\n');
    crate::records::files::write_atomically(&path, &bytes).map_err(|source| {
        HydrateError::Write {
            path: path.clone(),
            source,
        }
    })?;
    exclude(git, &root, hydrated.file())?;
    Ok(path)
}

/// Adds `relative` to `info/exclude` unless git already ignores it: the
/// cache must never be committed by a `git add -A`.
fn exclude(git: &Git, root: &Path, relative: &str) -> Result<(), HydrateError> {
    if git.is_ignored(&root.join(relative))? {
        return Ok(());
    }
    let path = git.git_path("info/exclude")?;
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("/{relative}\n"));
    crate::records::files::write_atomically(&path, text.as_bytes())
        .map_err(|source| HydrateError::Write { path, source })
}

/// Each story's dependencies, by story.
pub(crate) type Deps = BTreeMap<u64, Vec<u64>>;

/// Each story's dependencies (from the epic's `maverick-dag`) and each
/// story's recorded state (from its `maverick-state`). A marker of either
/// kind that does not read is an error that names it: read as empty, it
/// would show every story free to start.
pub(crate) fn epic_plan(
    epic: u64,
    dag: Option<&FoundMarker>,
    recorded: Option<&FoundMarker>,
) -> Result<(Deps, BTreeMap<u64, StoryState>), HydrateError> {
    let unreadable = |source| HydrateError::Unreadable {
        issue: epic,
        source,
    };
    let deps = match dag {
        Some(d) => d.marker.dag().map_err(unreadable)?.deps(),
        None => BTreeMap::new(),
    };
    let states = match recorded {
        Some(s) => s.marker.state().map_err(unreadable)?.story_states(),
        None => BTreeMap::new(),
    };
    Ok((deps, states))
}

/// A story of an epic: what blocks it, and its state with where it came from.
pub(crate) struct StoryStatus {
    pub blocked_by: Vec<u64>,
    pub state: StoryState,
    /// `marker` (recorded in the epic state) or `derived` (from labels).
    pub source: &'static str,
}

/// A story's status: its state as the epic state records it, else as its
/// labels say.
pub(crate) fn story_status(
    settings: &Settings,
    summary: Option<&IssueSummary>,
    recorded: Option<StoryState>,
) -> StoryStatus {
    let blocked_by: Vec<u64> = summary
        .map(|s| {
            s.labels
                .iter()
                .filter_map(|l| settings.labels.blocker(l))
                .collect()
        })
        .unwrap_or_default();
    let (state, source) = match recorded {
        Some(s) => (s, "marker"),
        None => (
            derive_state(summary, &blocked_by, &settings.labels.in_progress),
            "derived",
        ),
    };
    StoryStatus {
        blocked_by,
        state,
        source,
    }
}

/// A story's state when the epic state does not record it, from its labels.
fn derive_state(
    summary: Option<&IssueSummary>,
    blocked_by: &[u64],
    in_progress: &str,
) -> StoryState {
    match summary {
        _ if !blocked_by.is_empty() => StoryState::Blocked,
        Some(s) if !s.open => StoryState::Merged,
        Some(s) if s.labels.iter().any(|l| l == in_progress) => StoryState::InFlight,
        _ => StoryState::Pending,
    }
}

/// Whether a pull request works on `story`: its head is the story's claimed
/// branch or a branch named for it, or its description closes the story.
pub(crate) fn pull_is_for(pr: &PullRequest, story: u64, branch: Option<&str>) -> bool {
    if branch == Some(pr.head_ref.as_str()) {
        return true;
    }
    if claim::issue_of_branch_name(&pr.head_ref) == Some(story) {
        return true;
    }
    pr.closing_references().contains(&story)
}

pub(crate) fn ci_by_sha<'a>(
    surface: &dyn Surface,
    pulls: impl IntoIterator<Item = &'a PullRequest>,
) -> Result<BTreeMap<String, CiStatus>, HydrateError> {
    let shas: Vec<String> = pulls
        .into_iter()
        .map(|p| p.head_sha.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if shas.is_empty() {
        return Ok(BTreeMap::new());
    }
    let statuses = surface.ci_status(&shas)?;
    Ok(shas
        .into_iter()
        .zip(statuses)
        .filter_map(|(sha, status)| Some((sha, status?)))
        .collect())
}

fn pull_detail(pr: &PullRequest, ci: &BTreeMap<String, CiStatus>) -> PullDetail {
    PullDetail {
        pull: pr.clone(),
        ci: ci.get(&pr.head_sha).cloned(),
    }
}

/// The claim of `view`'s holder; `ours` when `me` made it, whatever holds
/// the issue now (a pull request holds over a lapsed claim of ours).
fn claim_detail(view: &IssueView, me: &InstanceId) -> Option<ClaimDetail> {
    let h = view.holder.as_ref()?;
    Some(ClaimDetail {
        instance_id: h.instance_id.clone(),
        host: h.host.clone(),
        branch: h.branch.clone(),
        generation: h.generation,
        claimed_at: h.claimed_at,
        expires_at: view.expires_at,
        live: view
            .expires_at
            .is_some_and(|e| lease::lease_live(e, view.now)),
        ours: h.instance_id == *me,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ci_verdicts() {
        use crate::surface::CheckRun;
        let run = |status: &str, conclusion: Option<&str>| CheckRun {
            name: "ci".into(),
            status: status.into(),
            conclusion: conclusion.map(str::to_owned),
        };
        assert_eq!(CiStatus::verdict(None, &[]), "none");
        assert_eq!(
            CiStatus::verdict(Some("success"), &[run("completed", Some("success"))]),
            "success"
        );
        assert_eq!(
            CiStatus::verdict(None, &[run("in_progress", None)]),
            "pending"
        );
        assert_eq!(CiStatus::verdict(Some("pending"), &[]), "pending");
        assert_eq!(
            CiStatus::verdict(Some("success"), &[run("completed", Some("failure"))]),
            "failure"
        );
    }
}
