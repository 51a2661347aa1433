//! `git maverick state`: durable state markers (SPEC 3, 5).

use clap::{Args, Subcommand};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

use super::{Context, Outcome};
use crate::cli::{issue_number, GlobalArgs};
use crate::commands::error::{CommandError, Exit};
use crate::durable::state::{self, StateError, StoryState};
use crate::markers::MarkerKind;

#[derive(Debug, Args)]
pub(crate) struct StateArgs {
    #[command(subcommand)]
    pub command: StateCommand,
}

#[derive(Debug, Subcommand)]
pub(crate) enum StateCommand {
    /// Print the newest trusted marker of a kind as JSON (exit 1 when there is none)
    Get(GetArgs),
    /// Upsert a marker in place from a JSON object, then read it back
    Put(PutArgs),
    /// Move one story of an epic to a new state in its maverick-state marker
    Story(StoryArgs),
}

#[derive(Debug, Args)]
pub(crate) struct GetArgs {
    /// dag, state, bprop, task-progress (or claim, lease, dispatch)
    #[arg(value_parser = marker_kind)]
    pub kind: MarkerKind,
    /// The issue that carries it (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
}

#[derive(Debug, Args)]
pub(crate) struct PutArgs {
    /// dag, state, bprop or task-progress
    #[arg(value_parser = marker_kind)]
    pub kind: MarkerKind,
    /// The issue that carries it (142 or #142)
    #[arg(value_parser = issue_number)]
    pub issue: u64,
    /// A JSON object; `-` or nothing reads standard input. Its fields
    /// replace those of the current marker; fields it does not name are kept
    #[arg(value_name = "FILE|-")]
    pub file: Option<String>,
    /// Write the payload exactly as given, dropping fields it does not name
    #[arg(long)]
    pub replace: bool,
}

#[derive(Debug, Args)]
pub(crate) struct StoryArgs {
    /// The epic (142 or #142)
    #[arg(value_parser = issue_number)]
    pub epic: u64,
    /// The story
    #[arg(value_parser = issue_number)]
    pub story: u64,
    /// Its new state
    #[arg(value_parser = story_state())]
    pub state: StoryState,
}

/// Maverick's five story states, as their possible values.
fn story_state() -> impl clap::builder::TypedValueParser<Value = StoryState> {
    use clap::builder::TypedValueParser;
    clap::builder::PossibleValuesParser::new(StoryState::ALL.map(StoryState::as_str)).map(
        |name: String| StoryState::from_name(&name).expect("a possible value names a story state"),
    )
}

fn marker_kind(text: &str) -> Result<MarkerKind, String> {
    text.parse::<MarkerKind>().map_err(|e| e.to_string())
}

/// `state get --json`: one marker's payload.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct GetOutput {
    /// The marker kind: `dag`, `state`, `bprop`, `task-progress`, …
    pub kind: &'static str,
    pub issue: u64,
    pub comment_id: u64,
    /// Who wrote the comment (a GitHub login; the instance on git).
    pub author: String,
    /// The payload.
    pub marker: Map<String, Value>,
}

/// `state put --json`: the marker written or kept.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct PutOutput {
    pub kind: &'static str,
    pub issue: u64,
    pub comment_id: u64,
    /// Whether a new comment was created (else the newest was updated).
    pub created: bool,
    pub marker: Map<String, Value>,
}

/// `state story --json`: a story's state in its epic's state marker.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct StoryOutput {
    pub epic: u64,
    pub story: u64,
    pub state: StoryState,
    pub comment_id: u64,
    pub marker: Map<String, Value>,
}

/// What a `state` subcommand prints with `--json`.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub(crate) enum StateOutput {
    Get(GetOutput),
    Put(PutOutput),
    Story(StoryOutput),
}

pub(crate) fn run(
    global: &GlobalArgs,
    args: StateArgs,
) -> Result<Outcome<StateOutput>, CommandError> {
    let ctx = Context::load(global)?;
    let outcome = match args.command {
        StateCommand::Get(a) => get(&ctx, a).map(|o| o.map(StateOutput::Get)),
        StateCommand::Put(a) => put(&ctx, a).map(|o| o.map(StateOutput::Put)),
        StateCommand::Story(a) => story(&ctx, a).map(|o| o.map(StateOutput::Story)),
    };
    ctx.report(outcome)
}

/// Pretty JSON, one line per output line, so that people can pipe it.
fn pretty_lines<T>(mut o: Outcome<T>, value: &Value) -> Outcome<T> {
    let text = serde_json::to_string_pretty(value).expect("JSON values serialize");
    for line in text.lines() {
        o = o.line(line);
    }
    o
}

fn get(ctx: &Context, args: GetArgs) -> Result<Outcome<GetOutput>, CommandError> {
    let surface = ctx.surface()?;
    let issue = surface.issue(args.issue)?;
    let Some(found) = state::newest_marker(&issue, args.kind) else {
        return Err(CommandError::tool(format!(
            "#{} has no trusted `{}` marker",
            args.issue,
            args.kind.fence_tag()
        ))
        .hint(format!(
            "write one with `git maverick state put {} {} FILE`",
            args.kind, args.issue
        )));
    };
    let payload = Value::Object(found.marker.payload.clone());
    let output = GetOutput {
        kind: args.kind.name(),
        issue: args.issue,
        comment_id: found.comment_id,
        author: found.author,
        marker: found.marker.payload,
    };
    Ok(pretty_lines(Outcome::new(Exit::Ok, output), &payload))
}

fn put(ctx: &Context, args: PutArgs) -> Result<Outcome<PutOutput>, CommandError> {
    if !state::UPSERT_KINDS.contains(&args.kind) {
        return Err(StateError::NotState(args.kind).into());
    }
    let text = super::task::read_input(args.file.as_deref())?;
    let payload: Map<String, Value> = match serde_json::from_str(text.trim()) {
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            return Err(CommandError::usage(format!(
                "the `{}` payload must be a JSON object",
                args.kind.fence_tag()
            )))
        }
        Err(e) => {
            return Err(CommandError::usage(format!(
                "the `{}` payload is not valid JSON: {e}",
                args.kind.fence_tag()
            )))
        }
    };
    let surface = ctx.surface()?;
    let written = state::put(
        surface.as_ref(),
        &ctx.settings,
        args.issue,
        args.kind,
        payload,
        args.replace,
    )?;
    let verb = if written.created {
        "created"
    } else {
        "updated"
    };
    let output = PutOutput {
        kind: args.kind.name(),
        issue: args.issue,
        comment_id: written.comment_id,
        created: written.created,
        marker: written.marker.payload,
    };
    Ok(Outcome::new(Exit::Ok, output).line(format!(
        "#{}: {verb} the `{}` marker (comment {})",
        args.issue,
        args.kind.fence_tag(),
        written.comment_id
    )))
}

fn story(ctx: &Context, args: StoryArgs) -> Result<Outcome<StoryOutput>, CommandError> {
    let surface = ctx.surface()?;
    let written = state::set_story_state(
        surface.as_ref(),
        &ctx.settings,
        args.epic,
        args.story,
        args.state,
    )?;
    let output = StoryOutput {
        epic: args.epic,
        story: args.story,
        state: args.state,
        comment_id: written.comment_id,
        marker: written.marker.payload,
    };
    Ok(Outcome::new(Exit::Ok, output).line(format!(
        "#{}: story #{} is {}",
        args.epic,
        args.story,
        args.state.as_str()
    )))
}
