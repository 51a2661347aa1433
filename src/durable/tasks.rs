//! Push-per-task (SPEC 6): the tasks comment, checking tasks off, and the
//! reconcile that heals a crash between a push and its check mark.
//!
//! The tasks comment is a GitHub task list in Maverick's format, written for
//! people and edited by them:
//!
//! ```text
//! ## Tasks
//! - [x] **Parse marker blocks** — fenced JSON in comments (`3f2c1aa`)
//! - [ ] **Upsert markers in place** — PATCH the newest of a kind
//! ```
//!
//! Parsing tolerates what a person does to it (text around the list, nested
//! lists, `[X]`, other bullets, code blocks); a check-off rewrites one line
//! and keeps every other byte. Two writers checking different tasks at once
//! both win: each write is guarded by the body it was computed from (a
//! compare-and-swap on the git surface, a fresh read elsewhere), re-applied
//! on a newer body, and verified after writing.

use std::collections::BTreeMap;

use maverick_core::ids::{ObjectId, ObjectPrefix};

/// "all 3 tasks of #5 are", "the one task of #5 is": for "… done".
pub(crate) fn all_tasks_are(total: usize, issue: Option<u64>) -> String {
    let of = issue.map(|n| format!(" of #{n}")).unwrap_or_default();
    match total {
        1 => format!("the one task{of} is"),
        n => format!("all {n} tasks{of} are"),
    }
}

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::Settings;
use crate::durable::state::{self, StateError};
use crate::git::{Git, GitError, Order};
use crate::markers::{self, Marker, MarkerKind};
use crate::records::claim::{self, ClaimStore};
use crate::surface::{write_if_unchanged, Comment, Conditional, Issue, Op, Surface, SurfaceError};
use maverick_core::ids::InstanceId;
use maverick_core::payloads::{unknown_fields, TaskProgressPayload};

/// How many times a check-off is re-applied on a newer body before giving up.
const MAX_CHECK_ATTEMPTS: u32 = 20;
/// How much of a remote branch's history reconcile reads.
const MAX_HISTORY: usize = 5000;

#[derive(Debug, thiserror::Error)]
pub(crate) enum TaskError {
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    State(#[from] StateError),
    #[error(transparent)]
    Record(#[from] crate::records::files::RecordError),
    #[error("#{issue} has no tasks comment")]
    NoTasksComment { issue: u64 },
    #[error("task {number} is out of range: the tasks comment of #{issue} has {total} task{}", if *.total == 1 { "" } else { "s" })]
    OutOfRange {
        issue: u64,
        number: usize,
        total: usize,
    },
    #[error("the tasks comment of #{issue} kept changing while checking task {number} off ({attempts} attempts)")]
    Contended {
        issue: u64,
        number: usize,
        attempts: u32,
    },
    #[error("#{issue} already has a tasks comment (comment {comment_id}) with other tasks")]
    AlreadyInitialised { issue: u64, comment_id: u64 },
    #[error("no tasks given: write one task per line, or a JSON array")]
    NoTasks,
}

/// One task of the tasks comment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Task {
    /// 1-based, in the order the list shows.
    pub number: usize,
    pub title: String,
    pub detail: Option<String>,
    pub done: bool,
    /// The short sha of the commit that did it, when the check mark names one.
    pub sha: Option<String>,
    /// Byte offset of the character between the brackets.
    #[serde(skip)]
    box_at: usize,
    /// Byte offset of the end of the line's text (before its line ending).
    #[serde(skip)]
    text_end: usize,
}

/// Whether `body` is a tasks comment by its first line: `## Tasks`.
pub(crate) fn is_tasks_comment(body: &str) -> bool {
    body.trim_start_matches(['\u{feff}', ' ', '\t', '\r', '\n'])
        .lines()
        .next()
        .and_then(heading)
        .is_some_and(|(level, text)| level == 2 && is_tasks_title(text))
}

fn is_tasks_title(text: &str) -> bool {
    text.trim()
        .trim_end_matches('#')
        .trim()
        .eq_ignore_ascii_case("tasks")
}

/// An ATX heading: its level and text.
fn heading(line: &str) -> Option<(usize, &str)> {
    let rest = strip_indent(line, 3)?;
    let level = rest.bytes().take_while(|b| *b == b'#').count();
    if !(1..=6).contains(&level) {
        return None;
    }
    let text = &rest[level..];
    if !text.is_empty() && !text.starts_with([' ', '\t']) {
        return None;
    }
    Some((level, text.trim()))
}

/// The line without up to `max` leading spaces; `None` when it has more.
fn strip_indent(line: &str, max: usize) -> Option<&str> {
    let spaces = line.bytes().take_while(|b| *b == b' ').count();
    (spaces <= max).then(|| &line[spaces..])
}

/// A fence line's character and length, for skipping code blocks.
fn fence_of(line: &str) -> Option<(u8, usize)> {
    let rest = strip_indent(line, 3)?;
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = rest.bytes().take_while(|b| *b == ch).count();
    (len >= 3).then_some((ch, len))
}

/// A list item with a checkbox: its indent (columns), the box's byte offset
/// within the line, whether it is checked, and the text after the box.
fn checkbox_item(line: &str) -> Option<(usize, usize, bool, &str)> {
    let mut indent = 0;
    let mut at = 0;
    for b in line.bytes() {
        match b {
            b' ' => indent += 1,
            b'\t' => indent += 4 - indent % 4,
            _ => break,
        }
        at += 1;
    }
    let rest = &line[at..];
    let marker_len = match rest.as_bytes().first()? {
        b'-' | b'*' | b'+' => 1,
        b'0'..=b'9' => {
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits > 9 || !matches!(rest.as_bytes().get(digits), Some(b'.' | b')')) {
                return None;
            }
            digits + 1
        }
        _ => return None,
    };
    let after_marker = &rest[marker_len..];
    let gap = after_marker
        .bytes()
        .take_while(|b| *b == b' ' || *b == b'\t')
        .count();
    if gap == 0 {
        return None;
    }
    let item = &after_marker[gap..];
    let bytes = item.as_bytes();
    if bytes.len() < 3 || bytes[0] != b'[' || bytes[2] != b']' {
        return None;
    }
    let done = match bytes[1] {
        b' ' => false,
        b'x' | b'X' => true,
        _ => return None,
    };
    let text = &item[3..];
    if !text.is_empty() && !text.starts_with([' ', '\t']) {
        return None;
    }
    let box_at = at + marker_len + gap + 1;
    Some((indent, box_at, done, text.trim()))
}

/// Splits ``text (`3f2c1aa`)`` into the text and the sha.
fn split_sha(text: &str) -> (&str, Option<String>) {
    let trimmed = text.trim_end();
    let Some(inner) = trimmed.strip_suffix(')') else {
        return (text, None);
    };
    let Some(open) = inner.rfind('(') else {
        return (text, None);
    };
    let candidate = inner[open + 1..].trim().trim_matches('`');
    if ObjectPrefix::in_text(candidate).is_some() {
        (inner[..open].trim_end(), Some(candidate.to_owned()))
    } else {
        (text, None)
    }
}

/// `**Title** — detail`, or `Title — detail`, or just a title.
fn split_title(text: &str) -> (String, Option<String>) {
    let clean = |s: &str| {
        let s = s.trim().trim_start_matches(['—', '–', ':', '-']).trim();
        (!s.is_empty()).then(|| s.to_owned())
    };
    if let Some(rest) = text.strip_prefix("**") {
        if let Some(end) = rest.find("**") {
            return (rest[..end].trim().to_owned(), clean(&rest[end + 2..]));
        }
    }
    for separator in [" — ", " – "] {
        if let Some((title, detail)) = text.split_once(separator) {
            return (title.trim().to_owned(), clean(detail));
        }
    }
    (text.trim().to_owned(), None)
}

/// The tasks of a comment body, in order.
///
/// Tasks are the checkbox items of the `Tasks` section (the whole body when
/// it has no such heading) at the indent of the first one; items nested
/// deeper, other bullets, text and code blocks are a person's and are kept
/// as they are, not counted.
pub fn parse_tasks(body: &str) -> Vec<Task> {
    let mut tasks = Vec::new();
    let has_section = body
        .lines()
        .any(|l| heading(l).is_some_and(|(_, t)| is_tasks_title(t)));
    let mut in_section = !has_section;
    let mut section_level = 0;
    let mut fence: Option<(u8, usize)> = None;
    let mut base_indent: Option<usize> = None;
    let mut offset = 0;
    for raw in body.split_inclusive('\n') {
        let start = offset;
        offset += raw.len();
        let line = raw.trim_end_matches('\n').trim_end_matches('\r');
        if let Some((ch, len)) = fence {
            if let Some((c, l)) = fence_of(line) {
                if c == ch && l >= len && line.trim().bytes().all(|b| b == ch) {
                    fence = None;
                }
            }
            continue;
        }
        if let Some(f) = fence_of(line) {
            fence = Some(f);
            continue;
        }
        if let Some((level, text)) = heading(line) {
            if has_section && !in_section && is_tasks_title(text) && tasks.is_empty() {
                in_section = true;
                section_level = level;
                continue;
            }
            if has_section && in_section && level <= section_level {
                break;
            }
            continue;
        }
        if !in_section {
            continue;
        }
        let Some((indent, box_at, done, text)) = checkbox_item(line) else {
            continue;
        };
        let base = *base_indent.get_or_insert(indent);
        // A list item indented by two or more columns past the first task
        // is nested under the task above it.
        if indent >= base + 2 {
            continue;
        }
        let (text, sha) = split_sha(text);
        let (title, detail) = split_title(text);
        tasks.push(Task {
            number: tasks.len() + 1,
            title,
            detail,
            done,
            sha,
            box_at: start + box_at,
            text_end: start + line.len(),
        });
    }
    tasks
}

/// One task to write with `task init`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Deserialize)]
pub(crate) struct NewTask {
    pub title: String,
    #[serde(default)]
    pub detail: Option<String>,
}

/// Reads the tasks `task init` is given: a JSON array (of strings or of
/// `{"title", "detail"}` objects), a Markdown list (checkboxes or plain
/// bullets, `## Tasks` heading optional), or one task per line.
pub(crate) fn parse_task_input(text: &str) -> Result<Vec<NewTask>, TaskError> {
    let trimmed = text.trim();
    if trimmed.starts_with('[') {
        if let Ok(items) = serde_json::from_str::<Vec<Value>>(trimmed) {
            let tasks: Vec<NewTask> = items
                .into_iter()
                .filter_map(|item| match item {
                    Value::String(s) => {
                        let (title, detail) = split_title(&s);
                        Some(NewTask { title, detail })
                    }
                    other => serde_json::from_value::<NewTask>(other).ok(),
                })
                .filter(|t| !t.title.trim().is_empty())
                .collect();
            return if tasks.is_empty() {
                Err(TaskError::NoTasks)
            } else {
                Ok(tasks)
            };
        }
    }
    let checkboxes = parse_tasks(text);
    let tasks: Vec<NewTask> = if !checkboxes.is_empty() {
        checkboxes
            .into_iter()
            .map(|t| NewTask {
                title: t.title,
                detail: t.detail,
            })
            .collect()
    } else {
        text.lines()
            .filter(|l| heading(l).is_none() && !l.trim().is_empty())
            .map(|l| {
                let l = l.trim();
                let l = l
                    .strip_prefix("- ")
                    .or_else(|| l.strip_prefix("* "))
                    .or_else(|| l.strip_prefix("+ "))
                    .unwrap_or(l);
                let (title, detail) = split_title(l.trim());
                NewTask { title, detail }
            })
            .filter(|t| !t.title.is_empty())
            .collect()
    };
    if tasks.is_empty() {
        Err(TaskError::NoTasks)
    } else {
        Ok(tasks)
    }
}

/// The tasks comment as Maverick writes it.
pub(crate) fn render_tasks(tasks: &[NewTask]) -> String {
    let mut body = String::from("## Tasks\n");
    for task in tasks {
        let title = task.title.trim().replace('\n', " ");
        body.push_str(&format!("- [ ] **{title}**"));
        if let Some(detail) = task
            .detail
            .as_deref()
            .map(str::trim)
            .filter(|d| !d.is_empty())
        {
            body.push_str(&format!(" — {}", detail.replace('\n', " ")));
        }
        body.push('\n');
    }
    body
}

/// `body` with each task in `checks` checked off and, when it has none yet,
/// the sha appended; every other byte kept. Tasks out of range are an error.
pub(crate) fn apply_checks(
    body: &str,
    issue: u64,
    checks: &[(usize, Option<String>)],
) -> Result<String, TaskError> {
    let tasks = parse_tasks(body);
    let mut edits: BTreeMap<usize, (usize, String)> = BTreeMap::new();
    for (number, sha) in checks {
        let task = tasks
            .get(number.wrapping_sub(1))
            .ok_or(TaskError::OutOfRange {
                issue,
                number: *number,
                total: tasks.len(),
            })?;
        if !task.done {
            edits.insert(task.box_at, (1, "x".to_owned()));
        }
        if let (None, Some(sha)) = (&task.sha, sha) {
            edits.insert(task.text_end, (0, format!(" (`{sha}`)")));
        }
    }
    let mut out = String::with_capacity(body.len() + 32 * edits.len());
    let mut at = 0;
    for (pos, (replace, text)) in edits {
        out.push_str(&body[at..pos]);
        out.push_str(&text);
        at = pos + replace;
    }
    out.push_str(&body[at..]);
    Ok(out)
}

/// The tasks comment of an issue and where it was found.
#[derive(Clone, Debug)]
pub(crate) struct TasksComment {
    pub comment: Comment,
    pub tasks: Vec<Task>,
}

/// Finds the tasks comment: the one the newest trusted `maverick-task-progress`
/// marker points at (`comments.tasks`), else the newest trusted comment that
/// starts with `## Tasks`.
pub(crate) fn locate(issue: &Issue) -> Option<TasksComment> {
    let pointed = progress(issue)
        .and_then(|p| p.tasks_comment())
        .and_then(|id| issue.comments.iter().find(|c| c.id == id && c.trusted));
    let comment = pointed.or_else(|| {
        issue
            .comments
            .iter()
            .rev()
            .find(|c| c.trusted && is_tasks_comment(&c.body))
    })?;
    Some(TasksComment {
        tasks: parse_tasks(&comment.body),
        comment: comment.clone(),
    })
}

/// The newest trusted `maverick-task-progress` of `issue`, when it reads.
pub(crate) fn progress(issue: &Issue) -> Option<TaskProgressPayload> {
    state::newest_marker(issue, MarkerKind::TaskProgress)?
        .marker
        .task_progress()
        .ok()
}

/// Task numbers as people read them: `1, 3, 4`.
pub(crate) fn join_numbers(numbers: &[usize]) -> String {
    numbers
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The first unchecked task.
pub(crate) fn next_task(tasks: &[Task]) -> Option<&Task> {
    tasks.iter().find(|t| !t.done)
}

/// What a check-off came to.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Checked {
    pub comment_id: u64,
    /// The tasks this write checked off (those already checked are not listed).
    pub checked: Vec<usize>,
    pub tasks: Vec<Task>,
}

/// Checks tasks off on the issue's tasks comment, so that no concurrent
/// writer's check mark is lost: the update is guarded by the body it was
/// computed from, re-applied to the newer body when another writer got
/// there first, and verified by a read after the write (and repaired when a
/// writer on a surface without compare-and-swap overwrote it).
pub(crate) fn check_tasks(
    surface: &dyn Surface,
    settings: &Settings,
    issue: u64,
    checks: &[(usize, Option<String>)],
) -> Result<Checked, TaskError> {
    let mut current = surface.issue(issue)?;
    let mut newly: Vec<usize> = Vec::new();
    for _ in 0..MAX_CHECK_ATTEMPTS {
        let found = locate(&current).ok_or(TaskError::NoTasksComment { issue })?;
        let id = found.comment.id;
        let base = found.comment.body.clone();
        let body = apply_checks(&base, issue, checks)?;
        for (n, _) in checks {
            if !found.tasks[n - 1].done && !newly.contains(n) {
                newly.push(*n);
            }
        }
        if body == base {
            newly.sort_unstable();
            return Ok(Checked {
                comment_id: id,
                checked: newly,
                tasks: found.tasks,
            });
        }
        let op = Op::UpdateComment { id, body };
        let absent = |_: &Issue| false;
        if let Conditional::Stale(newer) =
            write_if_unchanged(surface, issue, op, Some((id, base.as_str())), &absent)?
        {
            current = newer;
            continue;
        }
        if !settings.settle_delay.is_zero() {
            settings
                .clock
                .wait_announced(settings.settle_delay, "the settle delay");
        }
        current = surface.issue(issue)?;
        // Verify: a writer without compare-and-swap may have overwritten us
        // with a body computed before our write; then the loop re-applies.
        if let Some(after) = locate(&current) {
            if checks
                .iter()
                .all(|(n, _)| after.tasks.get(n - 1).is_some_and(|t| t.done))
            {
                newly.sort_unstable();
                return Ok(Checked {
                    comment_id: after.comment.id,
                    checked: newly,
                    tasks: after.tasks,
                });
            }
        }
    }
    Err(TaskError::Contended {
        issue,
        number: checks.first().map_or(0, |c| c.0),
        attempts: MAX_CHECK_ATTEMPTS,
    })
}

/// Writes the tasks comment of `issue` and points the task-progress marker
/// at it. Idempotent: an existing comment with the same titles is left as
/// it is. With `replace`, an existing comment is rewritten in place, keeping
/// the check marks of tasks whose titles stay.
pub(crate) fn init_tasks(
    surface: &dyn Surface,
    settings: &Settings,
    issue: u64,
    tasks: &[NewTask],
    replace: bool,
    branch: Option<&str>,
) -> Result<InitOutcome, TaskError> {
    if tasks.is_empty() {
        return Err(TaskError::NoTasks);
    }
    let current = surface.issue(issue)?;
    let existing = locate(&current);
    let existing_body = existing
        .as_ref()
        .map(|f| f.comment.body.clone())
        .unwrap_or_default();
    let (comment, created) = match existing {
        Some(found) => {
            let same = found.tasks.len() == tasks.len()
                && found
                    .tasks
                    .iter()
                    .zip(tasks)
                    .all(|(old, new)| old.title == new.title.trim());
            if same {
                (found.comment, false)
            } else if !replace {
                return Err(TaskError::AlreadyInitialised {
                    issue,
                    comment_id: found.comment.id,
                });
            } else {
                let mut body = render_tasks(tasks);
                let keep: Vec<(usize, Option<String>)> = tasks
                    .iter()
                    .enumerate()
                    .filter_map(|(i, new)| {
                        found
                            .tasks
                            .iter()
                            .find(|old| old.done && old.title == new.title.trim())
                            .map(|old| (i + 1, old.sha.clone()))
                    })
                    .collect();
                body = apply_checks(&body, issue, &keep)?;
                (
                    surface.update_comment(issue, found.comment.id, body)?,
                    false,
                )
            }
        }
        None => (surface.create_comment(issue, render_tasks(tasks))?, true),
    };
    // An init that changed nothing leaves the progress marker alone (its
    // phase may be well past "tasks"), unless it does not point here.
    let pointed = state::newest_marker(&current, MarkerKind::TaskProgress).filter(|p| {
        p.marker
            .task_progress()
            .is_ok_and(|t| t.tasks_comment() == Some(comment.id))
    });
    let unchanged = !created && comment.body == existing_body;
    let progress = match pointed {
        Some(p) if unchanged => p.marker,
        _ => update_progress(
            surface,
            settings,
            issue,
            comment.id,
            "tasks",
            branch,
            Pushed::default(),
        )?,
    };
    let tasks = parse_tasks(&comment.body);
    Ok(InitOutcome {
        comment_id: comment.id,
        created,
        tasks,
        progress: Value::Object(progress.payload),
    })
}

#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct InitOutcome {
    pub comment_id: u64,
    pub created: bool,
    pub tasks: Vec<Task>,
    pub progress: Value,
}

/// The last task a push brought to the remote, for the progress marker.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Pushed<'a> {
    pub task: Option<usize>,
    pub head: Option<&'a str>,
}

/// Upserts the story's `maverick-task-progress` marker, merging into what is
/// there (Maverick's `task-progress set` semantics): `phase`, `instance_id`,
/// `comments.tasks`, and `branch` when known.
pub(crate) fn update_progress(
    surface: &dyn Surface,
    settings: &Settings,
    issue: u64,
    tasks_comment: u64,
    phase: &str,
    branch: Option<&str>,
    pushed: Pushed<'_>,
) -> Result<Marker, TaskError> {
    let instance = settings.instance.clone();
    let mut update = |old: Option<&Map<String, Value>>| {
        let old = old.map(|p| Marker::new(MarkerKind::TaskProgress, p.clone()));
        let mut payload = match old.as_ref().map(Marker::task_progress) {
            Some(Ok(progress)) => progress,
            // None yet, or one that does not read: a fresh one that keeps
            // the other tool's fields.
            _ => TaskProgressPayload {
                extra: old
                    .map(|m| unknown_fields(MarkerKind::TaskProgress, &m.payload))
                    .unwrap_or_default(),
                ..TaskProgressPayload::default()
            },
        };
        payload.phase = Some(phase.to_owned());
        payload.instance_id = Some(instance.clone());
        if let Some(b) = branch {
            payload.branch = Some(b.to_owned());
        }
        payload.point_tasks_at(tasks_comment);
        if let Some(task) = pushed.task {
            payload.task = Some(task as u64);
        }
        if let Some(head) = pushed.head {
            payload.head = Some(head.to_owned());
        }
        markers::payload_of(&payload)
    };
    Ok(state::upsert(
        surface,
        settings,
        issue,
        MarkerKind::TaskProgress,
        &mut update,
    )?
    .marker)
}

/// A commit on the remote branch that names an issue and task in its trailers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub(crate) struct TaskCommit {
    pub sha: String,
    pub short: String,
    pub task: usize,
}

/// The remote branch as reconcile saw it.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct RemoteBranch {
    pub name: String,
    /// `None` when the remote has no such branch.
    pub head: Option<String>,
    /// The oldest commit of each task of this issue, by task number.
    pub commits: Vec<TaskCommit>,
    #[serde(skip)]
    history: Vec<String>,
}

impl RemoteBranch {
    /// Whether the branch's history holds a commit that `short` (an
    /// abbreviated id, as a tasks comment names it) names.
    pub(crate) fn contains(&self, short: &str) -> bool {
        let Ok(prefix) = ObjectPrefix::parse(short) else {
            return false;
        };
        self.history
            .iter()
            .filter_map(|sha| ObjectId::parse(sha).ok())
            .any(|id| prefix.matches(&id))
    }
}

/// Fetches `branch` from `remote` (into its remote-tracking ref, as a plain
/// `git fetch` would) and reads the task trailers of `issue` on it.
pub(crate) fn read_remote_branch(
    git: &Git,
    remote: &str,
    branch: &str,
    issue: u64,
) -> Result<RemoteBranch, TaskError> {
    let Some(head) = git.fetch_branch(remote, branch, "read the branch's task commits")? else {
        return Ok(RemoteBranch {
            name: branch.to_owned(),
            head: None,
            commits: Vec::new(),
            history: Vec::new(),
        });
    };
    let (history, commits) = task_commits(git, &head, issue)?;
    Ok(RemoteBranch {
        name: branch.to_owned(),
        head: Some(head),
        commits,
        history,
    })
}

/// The history of `rev` (newest first, at most `MAX_HISTORY` commits) and the
/// oldest commit of each task of `issue` on it, by its trailers.
pub(crate) fn task_commits(
    git: &Git,
    rev: &str,
    issue: u64,
) -> Result<(Vec<String>, Vec<TaskCommit>), TaskError> {
    let mut commits: BTreeMap<usize, TaskCommit> = BTreeMap::new();
    let mut history = Vec::new();
    for commit in git.task_trailers(rev, MAX_HISTORY, Order::NewestFirst)? {
        history.push(commit.sha.clone());
        if !commit.names_issue(issue) {
            continue;
        }
        for &task in &commit.tasks {
            // The log runs newest first: the oldest commit of a task wins.
            commits.insert(
                task,
                TaskCommit {
                    sha: commit.sha.clone(),
                    short: commit.short.clone(),
                    task,
                },
            );
        }
    }
    Ok((history, commits.into_values().collect()))
}

/// The tasks of an issue after reconciling them with the remote branch.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct TaskListView {
    pub issue: u64,
    /// The tasks comment; `None` when the issue has none.
    pub comment_id: Option<u64>,
    pub tasks: Vec<Task>,
    pub done: usize,
    pub total: usize,
    /// The first unchecked task.
    #[serde(rename = "next_task")]
    pub next: Option<Task>,
    /// Tasks this call checked off from the trailers on the remote branch.
    pub reconciled: Vec<TaskCommit>,
    /// Checked tasks whose sha the remote branch does not have.
    pub ahead: Vec<usize>,
    /// Trailer commits naming a task the comment does not have.
    pub unknown: Vec<TaskCommit>,
    pub branch: Option<RemoteBranch>,
}

/// Checks off every task whose commit (by its `Maverick-Issue` and
/// `Maverick-Task` trailers) is on the remote branch but is unchecked, and
/// returns the tasks and the next one. This heals a crash between a push
/// and its check mark; it never unchecks anything.
///
/// For `task list` and `resume`. Without a branch, only reads.
pub(crate) fn reconcile(
    surface: &dyn Surface,
    git: &Git,
    settings: &Settings,
    issue: u64,
    remote_branch: Option<&str>,
) -> Result<TaskListView, TaskError> {
    let branch = match remote_branch {
        Some(b) => Some(read_remote_branch(git, &settings.remote, b, issue)?),
        None => None,
    };
    let current = surface.issue(issue)?;
    let Some(found) = locate(&current) else {
        return Ok(TaskListView {
            issue,
            comment_id: None,
            tasks: Vec::new(),
            done: 0,
            total: 0,
            next: None,
            reconciled: Vec::new(),
            ahead: Vec::new(),
            unknown: branch
                .as_ref()
                .map(|b| b.commits.clone())
                .unwrap_or_default(),
            branch,
        });
    };
    let mut tasks = found.tasks;
    let mut comment_id = found.comment.id;
    let mut reconciled = Vec::new();
    let mut unknown = Vec::new();
    if let Some(b) = &branch {
        let mut checks = Vec::new();
        for commit in &b.commits {
            match tasks.get(commit.task.wrapping_sub(1)) {
                Some(t) if !t.done || t.sha.is_none() => {
                    checks.push((commit.task, Some(commit.short.clone())));
                    if !t.done {
                        reconciled.push(commit.clone());
                    }
                }
                Some(_) => {}
                None => unknown.push(commit.clone()),
            }
        }
        if !checks.is_empty() {
            let checked = check_tasks(surface, settings, issue, &checks)?;
            tasks = checked.tasks;
            comment_id = checked.comment_id;
            if !reconciled.is_empty() {
                if let Some(last) = reconciled.iter().map(|c| c.task).max() {
                    update_progress(
                        surface,
                        settings,
                        issue,
                        comment_id,
                        "implement",
                        Some(&b.name),
                        Pushed {
                            task: Some(last),
                            head: None,
                        },
                    )?;
                }
            }
        }
    }
    let ahead = match &branch {
        Some(b) if b.head.is_some() => tasks
            .iter()
            .filter(|t| t.done && t.sha.as_deref().is_some_and(|s| !b.contains(s)))
            .map(|t| t.number)
            .collect(),
        _ => Vec::new(),
    };
    Ok(TaskListView {
        issue,
        comment_id: Some(comment_id),
        done: tasks.iter().filter(|t| t.done).count(),
        total: tasks.len(),
        next: next_task(&tasks).cloned(),
        tasks,
        reconciled,
        ahead,
        unknown,
        branch,
    })
}

/// Where an issue number came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum IssueSource {
    Claim,
    BranchName,
    Flag,
}

/// The issue of `branch` (SPEC 6): a claim record naming the branch (this
/// instance's first), else the branch name.
pub(crate) fn issue_of_branch(
    claims: &ClaimStore,
    instance: &InstanceId,
    branch: &str,
) -> Result<Option<(u64, IssueSource)>, TaskError> {
    let mut records = claims.for_branch(branch)?;
    records.sort_by_key(|r| (r.instance_id != *instance, r.issue));
    if let Some(r) = records.first() {
        return Ok(Some((r.issue, IssueSource::Claim)));
    }
    Ok(claim::issue_of_branch_name(branch).map(|n| (n, IssueSource::BranchName)))
}

/// The branch whose remote holds the commits of `issue`: this instance's
/// claim record, else the task-progress marker's `branch`.
pub(crate) fn branch_of_issue(
    claims: &ClaimStore,
    instance: &InstanceId,
    issue: &Issue,
) -> Result<Option<String>, TaskError> {
    if let Some(b) = claims.load(instance, issue.number)?.and_then(|r| r.branch) {
        return Ok(Some(b));
    }
    Ok(progress(issue)
        .and_then(|p| p.branch)
        .filter(|b| crate::git::is_valid_branch_name(b)))
}

/// Why a commit message is not Conventional Commits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum MessageError {
    #[error("the commit message is empty; write `type(scope): subject`")]
    Empty,
    #[error("{0:?} is not a Conventional Commits message `type(scope)!: subject`: it does not start with a type")]
    NoType(String),
    #[error("{0:?} is not a Conventional Commits message `type(scope)!: subject`: the type must be lowercase (feat, fix, docs, refactor, test, chore, …)")]
    BadType(String),
    #[error("{0:?} is not a Conventional Commits message `type(scope)!: subject`: the scope must be a name in parentheses, like `(parser)`")]
    BadScope(String),
    #[error("{0:?} is not a Conventional Commits message `type(scope)!: subject`: a colon and a space must follow the type")]
    NoColon(String),
    #[error("{0:?} is not a Conventional Commits message `type(scope)!: subject`: the subject after `: ` is empty")]
    NoSubject(String),
    #[error("the commit message needs a blank line between its subject line and its body")]
    NoBlankLine,
}

/// Checks a Conventional Commits header `type(scope)!: subject` (and a
/// blank line before any body).
pub(crate) fn check_conventional(message: &str) -> Result<(), MessageError> {
    let message = message.trim_start_matches(['\n', '\r']);
    let mut lines = message.lines();
    let header = lines
        .next()
        .map(|l| l.trim_end_matches('\r'))
        .unwrap_or_default();
    if header.trim().is_empty() {
        return Err(MessageError::Empty);
    }
    let owned = || header.to_owned();
    let type_len = header
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-')
        .count();
    if type_len == 0 {
        return Err(MessageError::NoType(owned()));
    }
    let kind = &header[..type_len];
    if !kind.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        || kind.bytes().any(|b| b.is_ascii_uppercase())
    {
        return Err(MessageError::BadType(owned()));
    }
    let mut rest = &header[type_len..];
    if let Some(scoped) = rest.strip_prefix('(') {
        let Some(end) = scoped.find(')') else {
            return Err(MessageError::BadScope(owned()));
        };
        let scope = &scoped[..end];
        if scope.trim().is_empty() || scope.contains('(') {
            return Err(MessageError::BadScope(owned()));
        }
        rest = &scoped[end + 1..];
    }
    rest = rest.strip_prefix('!').unwrap_or(rest);
    let Some(subject) = rest.strip_prefix(": ") else {
        return Err(MessageError::NoColon(owned()));
    };
    if subject.trim().is_empty() {
        return Err(MessageError::NoSubject(owned()));
    }
    if lines.next().is_some_and(|l| !l.trim().is_empty()) {
        return Err(MessageError::NoBlankLine);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_maverick_format() {
        let body = "## Tasks\n- [x] **Parse marker blocks** — fenced JSON in comments (`3f2c1aa`)\n- [ ] **Upsert markers in place** — PATCH the newest of a kind\n";
        let tasks = parse_tasks(body);
        assert_eq!(tasks.len(), 2);
        assert_eq!(tasks[0].title, "Parse marker blocks");
        assert_eq!(tasks[0].detail.as_deref(), Some("fenced JSON in comments"));
        assert_eq!(tasks[0].sha.as_deref(), Some("3f2c1aa"));
        assert!(tasks[0].done);
        assert_eq!(tasks[1].title, "Upsert markers in place");
        assert!(!tasks[1].done);
        assert_eq!(tasks[1].sha, None);
    }

    #[test]
    fn tolerates_a_persons_edits() {
        let body = "\
Some words first.

## Tasks

A note about the plan.

- [X] **One** — upper-case X
  - [ ] a nested sub-step, not a task
  - plain nested bullet
- plain bullet, not a task
* [ ] Two — star bullet, no bold
```
- [ ] inside a code block
```
1. [ ] **Three**

## Notes
- [ ] not in the tasks section
";
        let tasks = parse_tasks(body);
        let titles: Vec<_> = tasks.iter().map(|t| t.title.as_str()).collect();
        assert_eq!(titles, ["One", "Two", "Three"]);
        assert!(tasks[0].done);
        assert_eq!(tasks[1].detail.as_deref(), Some("star bullet, no bold"));
    }

    #[test]
    fn check_off_rewrites_one_line_only() {
        let body = "## Tasks\r\n- [ ] **A** — a\r\n  - [ ] nested\r\n- [ ] **B**\r\nfooter";
        let out = apply_checks(body, 1, &[(2, Some("abcdef1".into()))]).unwrap();
        assert_eq!(
            out,
            "## Tasks\r\n- [ ] **A** — a\r\n  - [ ] nested\r\n- [x] **B** (`abcdef1`)\r\nfooter"
        );
        let again = apply_checks(&out, 1, &[(2, Some("0000000".into()))]).unwrap();
        assert_eq!(again, out, "a check mark keeps its first sha");
        assert!(matches!(
            apply_checks(body, 1, &[(3, None)]),
            Err(TaskError::OutOfRange { total: 2, .. })
        ));
        assert!(matches!(
            apply_checks(body, 1, &[(0, None)]),
            Err(TaskError::OutOfRange { .. })
        ));
    }

    #[test]
    fn tasks_comment_detection() {
        assert!(is_tasks_comment("## Tasks\n- [ ] a"));
        assert!(is_tasks_comment("\n## tasks"));
        assert!(!is_tasks_comment("# Tasks"));
        assert!(!is_tasks_comment("## Tasks for later"));
        assert!(!is_tasks_comment("Intro\n## Tasks"));
    }

    #[test]
    fn input_forms() {
        let json = parse_task_input(r#"["A — a", {"title": "B", "detail": "b"}]"#).unwrap();
        assert_eq!(json[0].title, "A");
        assert_eq!(json[0].detail.as_deref(), Some("a"));
        assert_eq!(json[1].detail.as_deref(), Some("b"));
        let lines = parse_task_input("## Tasks\n- **A** — a\n- B\n\nC\n").unwrap();
        assert_eq!(
            lines.iter().map(|t| t.title.as_str()).collect::<Vec<_>>(),
            ["A", "B", "C"]
        );
        let boxes = parse_task_input("- [ ] **A**\n- [x] **B** (`abcdef1`)\n").unwrap();
        assert_eq!(boxes[1].title, "B");
        assert!(parse_task_input("\n\n").is_err());
        let rendered = render_tasks(&json);
        assert_eq!(rendered, "## Tasks\n- [ ] **A** — a\n- [ ] **B** — b\n");
    }

    #[test]
    fn conventional_commits() {
        for ok in [
            "feat: add x",
            "fix(parser): accept CRLF",
            "feat(api)!: drop v1",
            "refactor!: rename",
            "chore(deps-dev): bump\n\nbody text",
        ] {
            assert_eq!(check_conventional(ok), Ok(()), "{ok}");
        }
        assert_eq!(check_conventional(""), Err(MessageError::Empty));
        assert!(matches!(
            check_conventional("add a thing"),
            Err(MessageError::NoColon(_))
        ));
        assert!(matches!(
            check_conventional("Feat: x"),
            Err(MessageError::BadType(_))
        ));
        assert!(matches!(
            check_conventional("feat(): x"),
            Err(MessageError::BadScope(_))
        ));
        assert!(matches!(
            check_conventional("feat(x: y"),
            Err(MessageError::BadScope(_))
        ));
        assert!(matches!(
            check_conventional("feat:x"),
            Err(MessageError::NoColon(_))
        ));
        assert!(matches!(
            check_conventional("feat:  "),
            Err(MessageError::NoSubject(_))
        ));
        assert!(matches!(
            check_conventional(": x"),
            Err(MessageError::NoType(_))
        ));
        assert_eq!(
            check_conventional("feat: x\nbody"),
            Err(MessageError::NoBlankLine)
        );
    }
}
