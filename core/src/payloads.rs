//! Typed marker payloads (SPEC 3): one struct a kind, for reading and for
//! writing, each keeping the fields it does not know in `extra`, so a
//! payload another tool (Maverick, or a newer git maverick) wrote loses
//! nothing when git maverick rewrites it.
//!
//! Reading is by hand rather than by serde's derive: an error names the
//! kind and the field (`` `maverick-claim` payload has no `instance_id` ``),
//! and the tolerance the format needs is written down field by field:
//! Maverick keys issues by strings (`"140"`) as often as by numbers, a
//! `null` is an absent field, and every field beyond a kind's required ones
//! is optional. Writing is serde's: the struct's fields, then `extra`.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::ids::InstanceId;
use crate::markers::{Marker, MarkerKind};
use crate::timefmt::{parse_duration, Timestamp};

/// Why a marker's payload is not a payload of its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PayloadError {
    #[error("the `{}` payload has no `{field}`", .kind.fence_tag())]
    Missing {
        kind: MarkerKind,
        field: &'static str,
    },
    #[error("the `{}` payload's `{field}` is not {expected}", .kind.fence_tag())]
    WrongType {
        kind: MarkerKind,
        field: String,
        expected: &'static str,
    },
    #[error("a `{}` marker was read as a `{}` payload", .found.fence_tag(), .wanted.fence_tag())]
    WrongKind {
        wanted: MarkerKind,
        found: MarkerKind,
    },
}

impl PayloadError {
    /// The kind of the payload that did not read.
    pub fn kind(&self) -> MarkerKind {
        match self {
            PayloadError::Missing { kind, .. } | PayloadError::WrongType { kind, .. } => *kind,
            PayloadError::WrongKind { found, .. } => *found,
        }
    }
}

/// The fields of an object not yet read: each `take` removes the field it
/// reads, and what is left is the payload's `extra`.
struct Fields {
    kind: MarkerKind,
    map: Map<String, Value>,
}

impl Fields {
    fn new(kind: MarkerKind, map: &Map<String, Value>) -> Fields {
        Fields {
            kind,
            map: map.clone(),
        }
    }

    fn wrong(&self, field: &str, expected: &'static str) -> PayloadError {
        PayloadError::WrongType {
            kind: self.kind,
            field: field.to_owned(),
            expected,
        }
    }

    /// The field's value; `null` is an absent field.
    fn take(&mut self, field: &str) -> Option<Value> {
        self.map.remove(field).filter(|v| !v.is_null())
    }

    fn string(&mut self, field: &str) -> Result<Option<String>, PayloadError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::String(text)) => Ok(Some(text)),
            Some(_) => Err(self.wrong(field, "a string")),
        }
    }

    /// A number, or a string of digits (Maverick's `"140"`).
    fn number(&mut self, field: &str) -> Result<Option<u64>, PayloadError> {
        self.number_as(field, "a non-negative integer")
    }

    /// An issue (or pull request) number, as [`Fields::number`] reads it.
    fn issue(&mut self, field: &str) -> Result<Option<u64>, PayloadError> {
        self.number_as(field, "an issue number")
    }

    fn number_as(
        &mut self,
        field: &str,
        expected: &'static str,
    ) -> Result<Option<u64>, PayloadError> {
        match self.take(field) {
            None => Ok(None),
            Some(value) => number_of(&value)
                .map(Some)
                .ok_or_else(|| self.wrong(field, expected)),
        }
    }

    fn time(&mut self, field: &str) -> Result<Option<Timestamp>, PayloadError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::String(text)) => Timestamp::parse(&text)
                .map(Some)
                .ok_or_else(|| self.wrong(field, "an RFC 3339 time")),
            Some(_) => Err(self.wrong(field, "an RFC 3339 time")),
        }
    }

    fn strings(&mut self, field: &str) -> Result<Option<Vec<String>>, PayloadError> {
        let Some(value) = self.take(field) else {
            return Ok(None);
        };
        let items = match value {
            Value::Array(items) => items,
            _ => return Err(self.wrong(field, "a list of strings")),
        };
        items
            .into_iter()
            .map(|item| match item {
                Value::String(text) => Ok(text),
                _ => Err(self.wrong(field, "a list of strings")),
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    /// A list of issue numbers as Maverick writes them: numbers, or strings
    /// such as `"140"`, `" 142"` (its `--scope` split at commas) or `"#142"`.
    fn issues(&mut self, field: &str) -> Result<Option<Vec<IssueRef>>, PayloadError> {
        let Some(value) = self.take(field) else {
            return Ok(None);
        };
        let Value::Array(items) = value else {
            return Err(self.wrong(field, "a list of issue numbers"));
        };
        items
            .into_iter()
            .map(|item| match item {
                Value::Number(n) => n
                    .as_u64()
                    .map(IssueRef::Number)
                    .ok_or_else(|| self.wrong(field, "a list of issue numbers")),
                Value::String(text) => Ok(IssueRef::Text(text)),
                _ => Err(self.wrong(field, "a list of issue numbers")),
            })
            .collect::<Result<_, _>>()
            .map(Some)
    }

    fn object(&mut self, field: &str) -> Result<Option<Map<String, Value>>, PayloadError> {
        match self.take(field) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(map)),
            Some(_) => Err(self.wrong(field, "a JSON object")),
        }
    }

    fn required<T>(&self, field: &'static str, value: Option<T>) -> Result<T, PayloadError> {
        value.ok_or(PayloadError::Missing {
            kind: self.kind,
            field,
        })
    }

    fn rest(self) -> Map<String, Value> {
        self.map
    }
}

/// A number, or a non-empty string of ASCII digits.
fn number_of(value: &Value) -> Option<u64> {
    match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) => {
            text.parse().ok()
        }
        _ => None,
    }
}

/// An issue number as a list names it, kept as written so a rewrite
/// changes nothing: a number, or Maverick's string.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum IssueRef {
    Number(u64),
    Text(String),
}

impl IssueRef {
    /// The issue it names: `"140"`, `" 142"` and `"#142"` name one.
    pub fn number(&self) -> Option<u64> {
        match self {
            IssueRef::Number(n) => Some(*n),
            IssueRef::Text(text) => text.trim().trim_start_matches('#').parse().ok(),
        }
    }
}

/// The issues a list names, in order, leaving out what names none.
pub fn issue_numbers(refs: &[IssueRef]) -> Vec<u64> {
    refs.iter().filter_map(IssueRef::number).collect()
}

/// A ttl as a claim declares it: seconds, or a duration such as `10m`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum DeclaredTtl {
    Seconds(u64),
    Text(String),
}

impl DeclaredTtl {
    /// The duration, when it is one and not zero.
    pub fn duration(&self) -> Option<Duration> {
        match self {
            DeclaredTtl::Seconds(secs) => Some(Duration::from_secs(*secs)),
            DeclaredTtl::Text(text) => parse_duration(text).ok(),
        }
        .filter(|ttl| !ttl.is_zero())
    }
}

/// A `maverick-claim` payload, and a `maverick-withdrawn` one (a claim its
/// writer withdrew: the same fields, and when and why).
///
/// Maverick writes `instance_id`, `host`, `scope` and `claimed_at` (its
/// takeover: `instance_id`, `takeover_of`, `claimed_at` and `reason`, no
/// host and no scope); git maverick adds `generation`, `lease_ttl`,
/// `marker_id` and `branch`. Only `instance_id` is required.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ClaimPayload {
    pub instance_id: InstanceId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope: Option<Vec<IssueRef>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_at: Option<Timestamp>,
    /// Absent on Maverick's claims.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    /// Absent on Maverick's claims, which live its default ten minutes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_ttl: Option<DeclaredTtl>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    /// A takeover: the instance whose lapsed lease this claim ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub takeover_of: Option<InstanceId>,
    /// Why: a takeover's, or a withdrawal's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When its writer withdrew it (`maverick-withdrawn` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn_at: Option<Timestamp>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ClaimPayload {
    fn read(kind: MarkerKind, map: &Map<String, Value>) -> Result<ClaimPayload, PayloadError> {
        let mut f = Fields::new(kind, map);
        let instance_id = f.string("instance_id")?;
        Ok(ClaimPayload {
            instance_id: InstanceId::of_marker(f.required("instance_id", instance_id)?),
            host: f.string("host")?,
            scope: f.issues("scope")?,
            claimed_at: f.time("claimed_at")?,
            generation: f.number("generation")?,
            lease_ttl: match f.take("lease_ttl") {
                None => None,
                Some(Value::String(text)) => Some(DeclaredTtl::Text(text)),
                Some(value) => Some(
                    value
                        .as_u64()
                        .map(DeclaredTtl::Seconds)
                        .ok_or_else(|| f.wrong("lease_ttl", "seconds or a duration"))?,
                ),
            },
            marker_id: f.string("marker_id")?,
            branch: f.string("branch")?,
            takeover_of: f.string("takeover_of")?.map(InstanceId::of_marker),
            reason: f.string("reason")?,
            withdrawn_at: f.time("withdrawn_at")?,
            extra: f.rest(),
        })
    }

    /// The issues the claim names, in order.
    pub fn scope_issues(&self) -> Vec<u64> {
        self.scope.as_deref().map(issue_numbers).unwrap_or_default()
    }

    /// The ttl the claim declared, when it declared a usable one.
    pub fn declared_ttl(&self) -> Option<Duration> {
        self.lease_ttl.as_ref().and_then(DeclaredTtl::duration)
    }
}

/// A `maverick-lease` payload: a lease (`heartbeat_at`, `expires_at`), or a
/// release (`released_at`, `reason`), which Maverick writes as a new lease
/// comment. Only `instance_id` is required; git maverick adds `generation`
/// and `marker_id`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LeasePayload {
    pub instance_id: InstanceId,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub released_at: Option<Timestamp>,
    /// A release's reason (`merged`, `ejected`, `abort`, …).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub generation: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl LeasePayload {
    fn read(map: &Map<String, Value>) -> Result<LeasePayload, PayloadError> {
        let mut f = Fields::new(MarkerKind::Lease, map);
        let instance_id = f.string("instance_id")?;
        Ok(LeasePayload {
            instance_id: InstanceId::of_marker(f.required("instance_id", instance_id)?),
            heartbeat_at: f.time("heartbeat_at")?,
            expires_at: f.time("expires_at")?,
            released_at: f.time("released_at")?,
            reason: f.string("reason")?,
            generation: f.number("generation")?,
            marker_id: f.string("marker_id")?,
            extra: f.rest(),
        })
    }

    /// Whether this lease comment is a release.
    pub fn is_release(&self) -> bool {
        self.released_at.is_some()
    }
}

/// The `action` of a `maverick-dispatch` payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DispatchAction {
    Claim,
    Withdraw,
    Clear,
    Release,
    /// An action of another tool or version: read, kept, ignored.
    Other(String),
}

impl DispatchAction {
    pub fn as_str(&self) -> &str {
        match self {
            DispatchAction::Claim => "claim",
            DispatchAction::Withdraw => "withdraw",
            DispatchAction::Clear => "clear",
            DispatchAction::Release => "release",
            DispatchAction::Other(other) => other,
        }
    }

    fn parse(text: String) -> DispatchAction {
        match text.as_str() {
            "claim" => DispatchAction::Claim,
            "withdraw" => DispatchAction::Withdraw,
            "clear" => DispatchAction::Clear,
            "release" => DispatchAction::Release,
            _ => DispatchAction::Other(text),
        }
    }

    /// Whether it closes dispatch claims (a withdrawal, clearing or release).
    pub fn closes(&self) -> bool {
        matches!(
            self,
            DispatchAction::Withdraw | DispatchAction::Clear | DispatchAction::Release
        )
    }
}

impl Serialize for DispatchAction {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A `maverick-dispatch` payload: a dispatch claim (`action: claim`, with
/// `instance_id`), or the withdrawal, clearing or release that closes
/// `claims` (marker ids). Only `action` is required, and `instance_id` of
/// a claim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DispatchPayload {
    pub action: DispatchAction,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<InstanceId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub issue: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_at: Option<Timestamp>,
    /// The slots the dispatcher counted when it claimed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slots: Option<u64>,
    /// The claims a closing closes; none named closes every claim before it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claims: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub withdrawn_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cleared_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub released_at: Option<Timestamp>,
    /// The pull request a release hands the slot to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub give_up: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DispatchPayload {
    /// A payload of `action` with no other field set.
    pub fn new(action: DispatchAction) -> DispatchPayload {
        DispatchPayload {
            action,
            instance_id: None,
            host: None,
            issue: None,
            claimed_at: None,
            slots: None,
            claims: None,
            withdrawn_at: None,
            cleared_at: None,
            released_at: None,
            pr: None,
            reason: None,
            give_up: None,
            marker_id: None,
            extra: Map::new(),
        }
    }

    fn read(map: &Map<String, Value>) -> Result<DispatchPayload, PayloadError> {
        let mut f = Fields::new(MarkerKind::Dispatch, map);
        let action = f.string("action")?;
        let action = DispatchAction::parse(f.required("action", action)?);
        let instance_id = f.string("instance_id")?;
        let instance_id = match action {
            DispatchAction::Claim => Some(f.required("instance_id", instance_id)?),
            _ => instance_id,
        }
        .map(InstanceId::of_marker);
        Ok(DispatchPayload {
            action,
            instance_id,
            host: f.string("host")?,
            issue: f.issue("issue")?,
            claimed_at: f.time("claimed_at")?,
            slots: f.number("slots")?,
            claims: f.strings("claims")?,
            withdrawn_at: f.time("withdrawn_at")?,
            cleared_at: f.time("cleared_at")?,
            released_at: f.time("released_at")?,
            pr: f.issue("pr")?,
            reason: f.string("reason")?,
            give_up: f.string("give_up")?,
            marker_id: f.string("marker_id")?,
            extra: f.rest(),
        })
    }
}

// Maverick's closed set (SPEC 3). (The doc comment below is the schema's
// description of every output that carries a story state.)
/// A story's state in the epic's `maverick-state`.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum StoryState {
    Pending,
    InFlight,
    Merged,
    Blocked,
    Ejected,
}

impl StoryState {
    pub const ALL: [StoryState; 5] = [
        StoryState::Pending,
        StoryState::InFlight,
        StoryState::Merged,
        StoryState::Blocked,
        StoryState::Ejected,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            StoryState::Pending => "pending",
            StoryState::InFlight => "in_flight",
            StoryState::Merged => "merged",
            StoryState::Blocked => "blocked",
            StoryState::Ejected => "ejected",
        }
    }

    pub fn from_name(name: &str) -> Option<StoryState> {
        StoryState::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

impl std::fmt::Display for StoryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `maverick-state` payload: the epic, each story's state (keyed by the
/// story's number as a string, as Maverick keys it) and when it was
/// written. All three are required: Maverick fails without them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StatePayload {
    pub epic: u64,
    /// Each story's state as written; [`StatePayload::story_states`] reads it.
    pub stories: Map<String, Value>,
    pub updated_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl StatePayload {
    fn read(map: &Map<String, Value>) -> Result<StatePayload, PayloadError> {
        let mut f = Fields::new(MarkerKind::State, map);
        let epic = f.issue("epic")?;
        let stories = f.object("stories")?;
        let updated_at = f.time("updated_at")?;
        Ok(StatePayload {
            epic: f.required("epic", epic)?,
            stories: f.required("stories", stories)?,
            updated_at: f.required("updated_at", updated_at)?,
            marker_id: f.string("marker_id")?,
            extra: f.rest(),
        })
    }

    /// Each story's recorded state; a key that names no issue, or a state
    /// outside Maverick's five, records nothing.
    pub fn story_states(&self) -> BTreeMap<u64, StoryState> {
        self.stories
            .iter()
            .filter_map(|(key, state)| {
                Some((story_number(key)?, StoryState::from_name(state.as_str()?)?))
            })
            .collect()
    }

    /// Records `story`'s state, keeping every other story.
    pub fn set_story(&mut self, story: u64, state: StoryState) {
        self.stories
            .insert(story.to_string(), Value::from(state.as_str()));
    }
}

/// A story key as Maverick writes one: `"140"` (or `"#140"`).
pub fn story_number(key: &str) -> Option<u64> {
    let digits = key.trim().trim_start_matches('#');
    (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// One story of a `maverick-dag`: the stories it depends on, the files it
/// touches, and whatever else its writer kept.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DagNode {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deps: Option<Vec<IssueRef>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `maverick-dag` payload: the epic and each story's node. `epic` and
/// `stories` are required.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DagPayload {
    pub epic: u64,
    pub stories: BTreeMap<String, DagNode>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl DagPayload {
    fn read(map: &Map<String, Value>) -> Result<DagPayload, PayloadError> {
        let mut f = Fields::new(MarkerKind::Dag, map);
        let epic = f.issue("epic")?;
        let epic = f.required("epic", epic)?;
        let stories = f.object("stories")?;
        let stories = f
            .required("stories", stories)?
            .into_iter()
            .map(|(key, node)| {
                let Value::Object(node) = node else {
                    return Err(f.wrong(&format!("stories.{key}"), "a JSON object"));
                };
                let mut n = Fields::new(MarkerKind::Dag, &node);
                let wrong = |e: PayloadError| match e {
                    PayloadError::WrongType {
                        kind,
                        field,
                        expected,
                    } => PayloadError::WrongType {
                        kind,
                        field: format!("stories.{key}.{field}"),
                        expected,
                    },
                    other => other,
                };
                let node = DagNode {
                    deps: n.issues("deps").map_err(wrong)?,
                    files: n.strings("files").map_err(wrong)?,
                    extra: n.rest(),
                };
                Ok((key, node))
            })
            .collect::<Result<_, _>>()?;
        Ok(DagPayload {
            epic,
            stories,
            updated_at: f.time("updated_at")?,
            marker_id: f.string("marker_id")?,
            extra: f.rest(),
        })
    }

    /// Each story's dependencies, by number.
    pub fn deps(&self) -> BTreeMap<u64, Vec<u64>> {
        self.stories
            .iter()
            .filter_map(|(key, node)| {
                let deps = node.deps.as_deref().map(issue_numbers).unwrap_or_default();
                Some((story_number(key)?, deps))
            })
            .collect()
    }
}

/// A `maverick-bprop` payload: a block propagation in flight. `ejected`
/// is required (the story whose ejection it propagates).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BpropPayload {
    pub ejected: IssueRef,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub descendants: Option<Vec<IssueRef>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labelled: Option<Vec<IssueRef>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl BpropPayload {
    fn read(map: &Map<String, Value>) -> Result<BpropPayload, PayloadError> {
        let mut f = Fields::new(MarkerKind::Bprop, map);
        let ejected = match f.take("ejected") {
            None => None,
            Some(Value::String(text)) => Some(IssueRef::Text(text)),
            Some(value) => Some(
                value
                    .as_u64()
                    .map(IssueRef::Number)
                    .ok_or_else(|| f.wrong("ejected", "an issue number"))?,
            ),
        };
        Ok(BpropPayload {
            ejected: f.required("ejected", ejected)?,
            descendants: f.issues("descendants")?,
            labelled: f.issues("labelled")?,
            started_at: f.time("started_at")?,
            updated_at: f.time("updated_at")?,
            marker_id: f.string("marker_id")?,
            extra: f.rest(),
        })
    }
}

/// A `maverick-task-progress` payload: where a story's work stands, and
/// the comments it points at (`comments.tasks`: the tasks comment's id);
/// git maverick adds the last task pushed (`task`) and its commit
/// (`head`). Every field is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TaskProgressPayload {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instance_id: Option<InstanceId>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// Comment ids by what they hold (`tasks`, `plan`, …), as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comments: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub marker_id: Option<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl TaskProgressPayload {
    fn read(map: &Map<String, Value>) -> Result<TaskProgressPayload, PayloadError> {
        let mut f = Fields::new(MarkerKind::TaskProgress, map);
        let payload = TaskProgressPayload {
            phase: f.string("phase")?,
            instance_id: f.string("instance_id")?.map(InstanceId::of_marker),
            branch: f.string("branch")?,
            task: f.number("task")?,
            head: f.string("head")?,
            comments: f.object("comments")?,
            updated_at: f.time("updated_at")?,
            marker_id: f.string("marker_id")?,
            extra: Map::new(),
        };
        if let Some(tasks) = payload.comments.as_ref().and_then(|c| c.get("tasks")) {
            if !tasks.is_null() && number_of(tasks).is_none() {
                return Err(f.wrong("comments.tasks", "a comment id"));
            }
        }
        Ok(TaskProgressPayload {
            extra: f.rest(),
            ..payload
        })
    }

    /// The id of the tasks comment it points at.
    pub fn tasks_comment(&self) -> Option<u64> {
        number_of(self.comments.as_ref()?.get("tasks")?)
    }

    /// Points `comments.tasks` at `id`, keeping the other comments.
    pub fn point_tasks_at(&mut self, id: u64) {
        self.comments
            .get_or_insert_with(Map::new)
            .insert("tasks".into(), Value::from(id));
    }
}

/// The fields of `payload` that a payload of `kind` does not name: what a
/// rewrite of a payload that does not read keeps, so that writing a fresh
/// one over it loses none of another tool's fields.
pub fn unknown_fields(kind: MarkerKind, payload: &Map<String, Value>) -> Map<String, Value> {
    let known: &[&str] = match kind {
        MarkerKind::Dag => &["epic", "stories", "updated_at", "marker_id"],
        MarkerKind::State => &["epic", "stories", "updated_at", "marker_id"],
        MarkerKind::Claim | MarkerKind::Withdrawn => &[
            "instance_id",
            "host",
            "scope",
            "claimed_at",
            "generation",
            "lease_ttl",
            "marker_id",
            "branch",
            "takeover_of",
            "reason",
            "withdrawn_at",
        ],
        MarkerKind::Lease => &[
            "instance_id",
            "heartbeat_at",
            "expires_at",
            "released_at",
            "reason",
            "generation",
            "marker_id",
        ],
        MarkerKind::Bprop => &[
            "ejected",
            "descendants",
            "labelled",
            "started_at",
            "updated_at",
            "marker_id",
        ],
        MarkerKind::TaskProgress => &[
            "phase",
            "instance_id",
            "branch",
            "task",
            "head",
            "comments",
            "updated_at",
            "marker_id",
        ],
        MarkerKind::Dispatch => &[
            "action",
            "instance_id",
            "host",
            "issue",
            "claimed_at",
            "slots",
            "claims",
            "withdrawn_at",
            "cleared_at",
            "released_at",
            "pr",
            "reason",
            "give_up",
            "marker_id",
        ],
    };
    payload
        .iter()
        .filter(|(key, _)| !known.contains(&key.as_str()))
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}

/// A payload struct and the marker kinds it reads (see [`Marker::read`]).
pub trait KindPayload: Sized {
    const KINDS: &'static [MarkerKind];
    fn read_payload(kind: MarkerKind, map: &Map<String, Value>) -> Result<Self, PayloadError>;
}

impl KindPayload for ClaimPayload {
    const KINDS: &'static [MarkerKind] = &[MarkerKind::Claim, MarkerKind::Withdrawn];
    fn read_payload(kind: MarkerKind, map: &Map<String, Value>) -> Result<Self, PayloadError> {
        ClaimPayload::read(kind, map)
    }
}

/// The payloads of one kind each, whose reading needs no kind.
macro_rules! one_kind_payload {
    ($($payload:ident: $kind:ident),+ $(,)?) => {$(
        impl KindPayload for $payload {
            const KINDS: &'static [MarkerKind] = &[MarkerKind::$kind];
            fn read_payload(_: MarkerKind, map: &Map<String, Value>) -> Result<Self, PayloadError> {
                $payload::read(map)
            }
        }
    )+};
}

one_kind_payload!(
    LeasePayload: Lease,
    DispatchPayload: Dispatch,
    StatePayload: State,
    DagPayload: Dag,
    BpropPayload: Bprop,
    TaskProgressPayload: TaskProgress,
);

/// A typed payload of every kind, for a check that a payload reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    Dag(DagPayload),
    State(StatePayload),
    Claim(ClaimPayload),
    Lease(LeasePayload),
    Bprop(BpropPayload),
    TaskProgress(TaskProgressPayload),
    Dispatch(DispatchPayload),
    Withdrawn(ClaimPayload),
}

impl Marker {
    fn expect_kind(&self, wanted: &[MarkerKind]) -> Result<(), PayloadError> {
        if wanted.contains(&self.kind) {
            Ok(())
        } else {
            Err(PayloadError::WrongKind {
                wanted: wanted[0],
                found: self.kind,
            })
        }
    }

    /// The payload, typed by the marker's kind.
    pub fn typed(&self) -> Result<Payload, PayloadError> {
        let p = &self.payload;
        Ok(match self.kind {
            MarkerKind::Dag => Payload::Dag(DagPayload::read(p)?),
            MarkerKind::State => Payload::State(StatePayload::read(p)?),
            MarkerKind::Claim => Payload::Claim(ClaimPayload::read(self.kind, p)?),
            MarkerKind::Lease => Payload::Lease(LeasePayload::read(p)?),
            MarkerKind::Bprop => Payload::Bprop(BpropPayload::read(p)?),
            MarkerKind::TaskProgress => Payload::TaskProgress(TaskProgressPayload::read(p)?),
            MarkerKind::Dispatch => Payload::Dispatch(DispatchPayload::read(p)?),
            MarkerKind::Withdrawn => Payload::Withdrawn(ClaimPayload::read(self.kind, p)?),
        })
    }

    /// The marker's payload as `P`, one of the kinds `P` reads.
    pub fn read<P: KindPayload>(&self) -> Result<P, PayloadError> {
        self.expect_kind(P::KINDS)?;
        P::read_payload(self.kind, &self.payload)
    }

    /// A `maverick-claim` or `maverick-withdrawn` payload.
    pub fn claim(&self) -> Result<ClaimPayload, PayloadError> {
        self.read()
    }

    pub fn lease(&self) -> Result<LeasePayload, PayloadError> {
        self.read()
    }

    pub fn dispatch(&self) -> Result<DispatchPayload, PayloadError> {
        self.read()
    }

    pub fn state(&self) -> Result<StatePayload, PayloadError> {
        self.read()
    }

    pub fn dag(&self) -> Result<DagPayload, PayloadError> {
        self.read()
    }

    pub fn bprop(&self) -> Result<BpropPayload, PayloadError> {
        self.read()
    }

    pub fn task_progress(&self) -> Result<TaskProgressPayload, PayloadError> {
        self.read()
    }

    /// A marker of `kind` carrying `payload` (its fields, then its `extra`).
    pub fn of(kind: MarkerKind, payload: &impl Serialize) -> Marker {
        Marker::new(kind, crate::markers::payload_of(payload))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn marker(kind: MarkerKind, value: Value) -> Marker {
        let Value::Object(map) = value else {
            unreachable!("a test payload is an object")
        };
        Marker::new(kind, map)
    }

    /// Every kind with a full payload and a field only another tool knows.
    fn samples() -> Vec<Marker> {
        vec![
            marker(
                MarkerKind::Claim,
                json!({"instance_id": "vm-1", "host": "h", "scope": ["140", " 142", 7],
                       "claimed_at": "2026-04-23T10:15:00Z", "generation": 2, "lease_ttl": "10m",
                       "marker_id": "m", "branch": "maverick/140-x", "takeover_of": "vm-0",
                       "reason": "stale", "python_only": {"a": [1]}}),
            ),
            marker(
                MarkerKind::Withdrawn,
                json!({"instance_id": "vm-1", "generation": 3, "withdrawn_at": "2026-04-23T10:15:00Z",
                       "reason": "lost-race", "python_only": true}),
            ),
            marker(
                MarkerKind::Lease,
                json!({"instance_id": "vm-1", "heartbeat_at": "2026-04-23T10:15:00Z",
                       "expires_at": "2026-04-23T10:25:00Z", "generation": 2, "python_only": 1}),
            ),
            marker(
                MarkerKind::Lease,
                json!({"instance_id": "vm-1", "released_at": "2026-04-23T10:15:00Z",
                       "reason": "merged", "python_only": "x"}),
            ),
            marker(
                MarkerKind::Dispatch,
                json!({"action": "claim", "instance_id": "vm-1", "host": "h", "issue": 5,
                       "claimed_at": "2026-04-23T10:15:00Z", "slots": 3, "marker_id": "m",
                       "python_only": false}),
            ),
            marker(
                MarkerKind::Dispatch,
                json!({"action": "release", "instance_id": "vm-1", "issue": 5, "claims": ["m"],
                       "released_at": "2026-04-23T10:15:00Z", "reason": "pr-opened", "pr": 9,
                       "marker_id": "n", "python_only": [1]}),
            ),
            marker(
                MarkerKind::State,
                json!({"epic": 123, "stories": {"140": "merged", "142": "in_flight"},
                       "updated_at": "2026-04-23T10:15:00Z", "python_only": {"x": 1}}),
            ),
            marker(
                MarkerKind::Dag,
                json!({"epic": 123, "stories": {"140": {"deps": [], "files": ["src/a.rs"], "est": 3},
                                                "142": {"deps": ["140"]}},
                       "python_only": "kept"}),
            ),
            marker(
                MarkerKind::Bprop,
                json!({"ejected": "142", "descendants": ["150"], "labelled": [],
                       "started_at": "2026-04-23T10:15:00Z", "python_only": 2}),
            ),
            marker(
                MarkerKind::TaskProgress,
                json!({"phase": "tasks", "instance_id": "vm-1", "branch": "maverick/140-x",
                       "task": 2, "head": "3f2c1aa",
                       "comments": {"tasks": 125, "plan": "126"},
                       "updated_at": "2026-04-23T10:15:00Z", "python_only": "kept"}),
            ),
        ]
    }

    fn written(payload: &Payload, kind: MarkerKind) -> Marker {
        match payload {
            Payload::Dag(p) => Marker::of(kind, p),
            Payload::State(p) => Marker::of(kind, p),
            Payload::Claim(p) | Payload::Withdrawn(p) => Marker::of(kind, p),
            Payload::Lease(p) => Marker::of(kind, p),
            Payload::Bprop(p) => Marker::of(kind, p),
            Payload::TaskProgress(p) => Marker::of(kind, p),
            Payload::Dispatch(p) => Marker::of(kind, p),
        }
    }

    #[test]
    fn every_kind_round_trips_with_unknown_keys() {
        let mut kinds = std::collections::BTreeSet::new();
        for sample in samples() {
            kinds.insert(sample.kind);
            let typed = sample.typed().unwrap_or_else(|e| panic!("{e}"));
            let back = written(&typed, sample.kind);
            assert_eq!(back.payload, sample.payload, "{:?}", sample.kind);
            assert!(back.payload.contains_key("python_only"));
        }
        assert_eq!(kinds.len(), MarkerKind::ALL.len(), "a sample of every kind");
    }

    /// `unknown_fields` names every field the kind's struct reads, so a
    /// payload rebuilt over one that does not read keeps exactly the rest.
    #[test]
    fn unknown_fields_are_what_the_structs_leave_in_extra() {
        for sample in samples() {
            let typed = sample.typed().unwrap();
            let extra = match &typed {
                Payload::Dag(p) => &p.extra,
                Payload::State(p) => &p.extra,
                Payload::Claim(p) | Payload::Withdrawn(p) => &p.extra,
                Payload::Lease(p) => &p.extra,
                Payload::Bprop(p) => &p.extra,
                Payload::TaskProgress(p) => &p.extra,
                Payload::Dispatch(p) => &p.extra,
            };
            assert_eq!(&unknown_fields(sample.kind, &sample.payload), extra);
        }
    }

    #[test]
    fn each_required_field_missing_is_named() {
        let cases: [(MarkerKind, Value, &str); 9] = [
            (MarkerKind::Claim, json!({"host": "h"}), "instance_id"),
            (
                MarkerKind::Withdrawn,
                json!({"generation": 1}),
                "instance_id",
            ),
            (
                MarkerKind::Lease,
                json!({"heartbeat_at": "2026-04-23T10:15:00Z"}),
                "instance_id",
            ),
            (MarkerKind::Dispatch, json!({"instance_id": "vm"}), "action"),
            (
                MarkerKind::Dispatch,
                json!({"action": "claim"}),
                "instance_id",
            ),
            (
                MarkerKind::State,
                json!({"stories": {}, "updated_at": "2026-04-23T10:15:00Z"}),
                "epic",
            ),
            (
                MarkerKind::State,
                json!({"epic": 1, "updated_at": "2026-04-23T10:15:00Z"}),
                "stories",
            ),
            (
                MarkerKind::State,
                json!({"epic": 1, "stories": {}}),
                "updated_at",
            ),
            (MarkerKind::Bprop, json!({"descendants": []}), "ejected"),
        ];
        for (kind, payload, field) in cases {
            let err = marker(kind, payload).typed().unwrap_err();
            assert_eq!(err, PayloadError::Missing { kind, field });
            assert_eq!(
                err.to_string(),
                format!("the `{}` payload has no `{field}`", kind.fence_tag())
            );
        }
        for (payload, field) in [
            (json!({"stories": {}}), "epic"),
            (json!({"epic": 1}), "stories"),
        ] {
            let err = marker(MarkerKind::Dag, payload).dag().unwrap_err();
            assert_eq!(
                err,
                PayloadError::Missing {
                    kind: MarkerKind::Dag,
                    field
                }
            );
        }
        // A closing names no instance of its own and still reads.
        assert!(marker(MarkerKind::Dispatch, json!({"action": "clear"}))
            .dispatch()
            .is_ok());
        // Every field of a task-progress marker is optional.
        assert!(marker(MarkerKind::TaskProgress, json!({}))
            .task_progress()
            .is_ok());
    }

    #[test]
    fn wrong_types_are_named() {
        let cases: [(MarkerKind, Value, &str); 12] = [
            (MarkerKind::Claim, json!({"instance_id": 7}), "instance_id"),
            (
                MarkerKind::Claim,
                json!({"instance_id": "a", "generation": "-1"}),
                "generation",
            ),
            (
                MarkerKind::Claim,
                json!({"instance_id": "a", "scope": "140"}),
                "scope",
            ),
            (
                MarkerKind::Claim,
                json!({"instance_id": "a", "lease_ttl": -5}),
                "lease_ttl",
            ),
            (
                MarkerKind::Claim,
                json!({"instance_id": "a", "claimed_at": "yesterday"}),
                "claimed_at",
            ),
            (
                MarkerKind::Lease,
                json!({"instance_id": "a", "expires_at": 5}),
                "expires_at",
            ),
            (
                MarkerKind::Dispatch,
                json!({"action": "clear", "claims": [1]}),
                "claims",
            ),
            (
                MarkerKind::Dispatch,
                json!({"action": "release", "pr": "x"}),
                "pr",
            ),
            (
                MarkerKind::State,
                json!({"epic": "abc", "stories": {}, "updated_at": "2026-04-23T10:15:00Z"}),
                "epic",
            ),
            (
                MarkerKind::State,
                json!({"epic": 1, "stories": [], "updated_at": "2026-04-23T10:15:00Z"}),
                "stories",
            ),
            (
                MarkerKind::Dag,
                json!({"epic": 1, "stories": {"140": {"deps": {}}}}),
                "stories.140.deps",
            ),
            (
                MarkerKind::TaskProgress,
                json!({"comments": {"tasks": "abc"}}),
                "comments.tasks",
            ),
        ];
        for (kind, payload, field) in cases {
            match marker(kind, payload).typed() {
                Err(PayloadError::WrongType {
                    kind: k, field: f, ..
                }) => {
                    assert_eq!((k, f.as_str()), (kind, field));
                }
                other => panic!("{kind:?} {field}: {other:?}"),
            }
        }
        let err = marker(MarkerKind::Claim, json!({"instance_id": 7}))
            .claim()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "the `maverick-claim` payload's `instance_id` is not a string"
        );
        let err = marker(MarkerKind::Lease, json!({"instance_id": "a"}))
            .claim()
            .unwrap_err();
        assert_eq!(
            err,
            PayloadError::WrongKind {
                wanted: MarkerKind::Claim,
                found: MarkerKind::Lease
            }
        );
    }

    #[test]
    fn maverick_spellings_read_as_it_means_them() {
        let claim = marker(
            MarkerKind::Claim,
            json!({"instance_id": "a", "scope": ["140", " 142", "#143", 144, "x"], "generation": "3",
                   "lease_ttl": 1200, "branch": null}),
        )
        .claim()
        .unwrap();
        assert_eq!(claim.scope_issues(), [140, 142, 143, 144]);
        assert_eq!(claim.generation, Some(3));
        assert_eq!(claim.declared_ttl(), Some(Duration::from_secs(1200)));
        assert_eq!(claim.branch, None);
        let zero = marker(
            MarkerKind::Claim,
            json!({"instance_id": "a", "lease_ttl": "0s"}),
        );
        assert_eq!(zero.claim().unwrap().declared_ttl(), None);

        let state = marker(
            MarkerKind::State,
            json!({"epic": "123", "stories": {"140": "merged", "#141": "blocked", "x": "merged",
                   "142": "someday", "143": 5}, "updated_at": "2026-04-23T10:15:00Z"}),
        )
        .state()
        .unwrap();
        assert_eq!(state.epic, 123);
        assert_eq!(
            state.story_states().into_iter().collect::<Vec<_>>(),
            [(140, StoryState::Merged), (141, StoryState::Blocked)]
        );
        let progress = marker(
            MarkerKind::TaskProgress,
            json!({"comments": {"tasks": "125"}}),
        );
        assert_eq!(progress.task_progress().unwrap().tasks_comment(), Some(125));
    }
}
