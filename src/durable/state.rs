//! Durable state markers (SPEC 3 and 5): read the newest trusted marker of a
//! kind, and upsert one in place with read-after-write.
//!
//! State kinds (`dag`, `state`, `bprop`, `task-progress`) are upserted: the
//! newest trusted comment holding a marker of the kind is edited in place,
//! keeping a person's text around the block; a comment is created only when
//! there is none. Every payload is stamped with `updated_at` and a
//! `marker_id` (kept across updates, so one logical marker keeps one id).
//! Each write is guarded by the body it was computed from and read back.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::config::Settings;
use crate::markers::{self, Marker, MarkerKind};
use crate::surface::{write_if_unchanged, Conditional, Issue, Op, Surface, SurfaceError};
use crate::timefmt::Timestamp;
pub(crate) use maverick_core::payloads::StoryState;
use maverick_core::payloads::{unknown_fields, PayloadError, StatePayload};

/// The kinds `state put` upserts. Claims, leases and dispatch claims are
/// events whose order is the protocol: they are never rewritten here.
pub(crate) const UPSERT_KINDS: [MarkerKind; 4] = [
    MarkerKind::Dag,
    MarkerKind::State,
    MarkerKind::Bprop,
    MarkerKind::TaskProgress,
];

const MAX_UPSERT_ATTEMPTS: u32 = 20;

/// Computes a marker's new payload from its current one (`None`: no marker yet).
pub(crate) type PayloadUpdate<'a> =
    &'a mut dyn FnMut(Option<&Map<String, Value>>) -> Map<String, Value>;

#[derive(Debug, thiserror::Error)]
pub(crate) enum StateError {
    #[error(transparent)]
    Surface(#[from] SurfaceError),
    #[error("`{}` markers are events, not state: they are never rewritten (use `git maverick coord`)", .0.fence_tag())]
    NotState(MarkerKind),
    #[error("the `{}` payload is {bytes} bytes, over the {} byte limit", .kind.fence_tag(), markers::MAX_PAYLOAD_BYTES)]
    TooLarge { kind: MarkerKind, bytes: usize },
    #[error("the `{}` marker on #{issue} kept changing under this write ({attempts} attempts)", .kind.fence_tag())]
    Contended {
        kind: MarkerKind,
        issue: u64,
        attempts: u32,
    },
    #[error("the `{}` marker on #{issue} does not read back as written", .kind.fence_tag())]
    ReadBack { kind: MarkerKind, issue: u64 },
    #[error("{0}: Maverick cannot read it, so it is not written")]
    Unreadable(PayloadError),
}

/// Refuses a payload that does not read as its kind (SPEC 3), which
/// Maverick could not read either: a required field missing (it fails on
/// a `maverick-state` without `epic`, and iterates `stories`), a field of
/// the wrong type. `updated_at` is stamped on every write, so it is never
/// missing from what is written.
pub(crate) fn check_readable(
    kind: MarkerKind,
    payload: &Map<String, Value>,
) -> Result<(), StateError> {
    Marker::new(kind, payload.clone())
        .typed()
        .map(drop)
        .map_err(StateError::Unreadable)
}

/// A marker and the comment it was read from.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct FoundMarker {
    pub comment_id: u64,
    pub author: String,
    pub updated_at: Timestamp,
    #[serde(skip)]
    pub body: String,
    #[serde(skip)]
    pub marker: Marker,
}

/// The newest trusted marker of `kind`: the marker of the trusted comment
/// with the highest id (its first block of the kind, as Maverick reads it).
pub(crate) fn newest_marker(issue: &Issue, kind: MarkerKind) -> Option<FoundMarker> {
    issue
        .comments
        .iter()
        .rev()
        .filter(|c| c.trusted)
        .find_map(|c| {
            markers::find_marker(&c.body, kind).map(|marker| FoundMarker {
                comment_id: c.id,
                author: c.author.clone(),
                updated_at: c.updated_at,
                body: c.body.clone(),
                marker,
            })
        })
}

/// What an upsert wrote.
#[derive(Clone, Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Upserted {
    pub issue: u64,
    pub comment_id: u64,
    pub created: bool,
    #[serde(skip)]
    pub marker: Marker,
}

/// Upserts the marker of `kind` on `issue`: `update` gets the current
/// payload (if any) and returns the new one; `updated_at` and `marker_id`
/// are stamped on it. When another writer changes the comment first, the
/// update is re-applied to what it wrote; the result is read back.
pub(crate) fn upsert(
    surface: &dyn Surface,
    settings: &Settings,
    issue: u64,
    kind: MarkerKind,
    update: PayloadUpdate<'_>,
) -> Result<Upserted, StateError> {
    if !UPSERT_KINDS.contains(&kind) {
        return Err(StateError::NotState(kind));
    }
    let mut current = surface.issue(issue)?;
    for _ in 0..MAX_UPSERT_ATTEMPTS {
        let existing = newest_marker(&current, kind);
        let mut payload = update(existing.as_ref().map(|f| &f.marker.payload));
        let now = surface.now()?;
        payload.insert("updated_at".into(), Value::from(now.to_string()));
        let marker_id = existing
            .as_ref()
            .and_then(|f| f.marker.marker_id().map(str::to_owned))
            .unwrap_or_else(markers::new_marker_id);
        payload.insert("marker_id".into(), Value::from(marker_id));
        check_readable(kind, &payload)?;
        let marker = Marker::new(kind, payload);
        let rendered = markers::render_marker(&marker);
        let bytes = rendered.len();
        if bytes > markers::MAX_PAYLOAD_BYTES {
            return Err(StateError::TooLarge { kind, bytes });
        }
        let (op, base) = match &existing {
            Some(found) => (
                Op::UpdateComment {
                    id: found.comment_id,
                    body: markers::replace_marker(&found.body, &marker),
                },
                Some((found.comment_id, found.body.clone())),
            ),
            None => (Op::CreateComment(rendered), None),
        };
        // The write goes ahead only on the state it was computed from: the
        // same comment body, or (creating) still no marker of the kind.
        let base = base.as_ref().map(|(id, body)| (*id, body.as_str()));
        let absent = |i: &Issue| newest_marker(i, kind).is_none();
        if let Conditional::Stale(newer) = write_if_unchanged(surface, issue, op, base, &absent)? {
            current = newer;
            continue;
        }
        // Written, not yet read back (every upsert: `state put`, progress).
        crate::failpoint::hit("state-put");
        if !settings.settle_delay.is_zero() {
            settings
                .clock
                .wait_announced(settings.settle_delay, "the settle delay");
        }
        current = surface.issue(issue)?;
        let Some(back) = newest_marker(&current, kind) else {
            return Err(StateError::ReadBack { kind, issue });
        };
        // Read-after-write: our change is there when applying it again would
        // change nothing. A later writer's marker (stamped after ours) was
        // ordered after us and stands; an earlier-stamped one overwrote us
        // without having seen our write (no compare-and-swap on that
        // surface), so the update is applied again on top of it.
        let later = back.marker.updated_at().is_some_and(|t| t > now);
        if reflects(update, &back.marker.payload) || later {
            return Ok(Upserted {
                issue,
                comment_id: back.comment_id,
                created: base.is_none(),
                marker,
            });
        }
    }
    Err(StateError::Contended {
        kind,
        issue,
        attempts: MAX_UPSERT_ATTEMPTS,
    })
}

fn without_stamps(payload: &Map<String, Value>) -> Map<String, Value> {
    let mut p = payload.clone();
    p.remove("updated_at");
    p.remove("marker_id");
    p
}

fn reflects(update: PayloadUpdate<'_>, payload: &Map<String, Value>) -> bool {
    without_stamps(&update(Some(payload))) == without_stamps(payload)
}

/// `state put`: the payload as given over the current one. Top-level fields
/// the given payload does not name are kept (a person's or a newer tool's
/// fields survive an update of one field), and a task-progress marker's
/// `comments` ids are merged id by id, as Maverick's `task-progress set`
/// does, so that recording a plan comment never loses the tasks comment.
/// With `replace`, the payload is written exactly as given.
pub(crate) fn put(
    surface: &dyn Surface,
    settings: &Settings,
    issue: u64,
    kind: MarkerKind,
    payload: Map<String, Value>,
    replace: bool,
) -> Result<Upserted, StateError> {
    let mut update = |old: Option<&Map<String, Value>>| {
        let mut merged = match (replace, old) {
            (false, Some(old)) => old.clone(),
            _ => Map::new(),
        };
        for (k, v) in &payload {
            let keywise = !replace && kind == MarkerKind::TaskProgress && k == "comments";
            match (keywise, merged.get_mut(k), v) {
                (true, Some(Value::Object(old)), Value::Object(new)) => {
                    for (id_kind, id) in new {
                        old.insert(id_kind.clone(), id.clone());
                    }
                }
                _ => {
                    merged.insert(k.clone(), v.clone());
                }
            }
        }
        merged
    };
    upsert(surface, settings, issue, kind, &mut update)
}

/// A story state as a string, for the schemas of outputs that keep it
/// as one (the value a `maverick-state` marker holds).
pub(crate) fn story_states(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    <StoryState as schemars::JsonSchema>::json_schema(generator)
}

/// A story state transition (SPEC 5): updates the epic's `maverick-state`
/// at once, one story, keeping every other story and field.
pub(crate) fn set_story_state(
    surface: &dyn Surface,
    settings: &Settings,
    epic: u64,
    story: u64,
    to: StoryState,
) -> Result<Upserted, StateError> {
    let mut update = |old: Option<&Map<String, Value>>| {
        let old = old.map(|p| Marker::new(MarkerKind::State, p.clone()));
        let mut payload = match old.as_ref().map(Marker::state) {
            Some(Ok(state)) => state,
            // None yet, or one that does not read: a fresh one, which keeps
            // the old one's other fields (`updated_at` and `marker_id` are
            // stamped on the write).
            _ => StatePayload {
                epic,
                stories: Map::new(),
                updated_at: Timestamp(0),
                marker_id: None,
                extra: old
                    .map(|m| unknown_fields(MarkerKind::State, &m.payload))
                    .unwrap_or_default(),
            },
        };
        payload.set_story(story, to);
        markers::payload_of(&payload)
    };
    upsert(surface, settings, epic, MarkerKind::State, &mut update)
}
