//! `schemas/`, generated from the types each command prints with `--json`
//! (README "JSON output"). A unit test compares every checked-in file with
//! what the types generate now; `MAVERICK_UPDATE_SCHEMAS=1 cargo test --lib
//! schemas` writes them anew.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

use super::contract::{Answer, Envelope, Failure};
use crate::commands::error::Exit;

/// One schema file: `schemas/NAME.schema.json`.
pub(crate) struct SchemaFile {
    pub name: &'static str,
    pub schema: Value,
}

/// `command` is how a person runs it; `about`, what its object holds.
fn answer<T: JsonSchema>(name: &'static str, command: &str, about: &str) -> SchemaFile {
    answer_with::<T, Exit>(name, command, about)
}

fn answer_with<T: JsonSchema, C: JsonSchema>(
    name: &'static str,
    command: &str,
    about: &str,
) -> SchemaFile {
    let schema = generator().into_root_schema_for::<Answer<T, C>>();
    SchemaFile {
        name,
        schema: described(
            name,
            format!("git maverick {command} --json"),
            format!(
                "{about} Additive fields keep schema_version 1; ignore fields you do not know."
            ),
            schema.to_value(),
        ),
    }
}

fn generator() -> schemars::SchemaGenerator {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
}

/// The root's `$schema` first, then its `$id`, title and description.
fn described(name: &str, title: String, description: String, schema: Value) -> Value {
    let Value::Object(generated) = schema else {
        unreachable!("a root schema is an object")
    };
    let mut root = serde_json::Map::new();
    root.insert(
        "$schema".into(),
        generated.get("$schema").cloned().unwrap_or_default(),
    );
    root.insert(
        "$id".into(),
        Value::from(format!(
            "https://git-maverick.invalid/schemas/{name}.schema.json"
        )),
    );
    root.insert("title".into(), Value::from(title));
    root.insert("description".into(), Value::from(description));
    for (key, value) in generated {
        if !root.contains_key(&key) {
            root.insert(key, value);
        }
    }
    Value::Object(root)
}

/// Every schema file, generated: the error's, then one per command's answer.
pub(crate) fn all() -> Vec<SchemaFile> {
    use super::completions::CompletionsOutput;
    use super::config::ConfigOutput;
    use super::coord::{LabelOutput, ReadOutput, ReleaseAllOutput};
    use super::help::{HelpOutput, ManPagesOutput, VersionOutput};
    use crate::coord::dispatch::{DispatchReport, ReleaseReport, SlotView};
    use crate::coord::lease::{ClaimOutcome, HeartbeatOutcome, ReleaseOutcome};
    let error = generator().into_root_schema_for::<Envelope<Failure>>();
    let mut files = vec![
        SchemaFile {
            name: "error",
            schema: described(
                "error",
                "git maverick: a failed command's --json".to_owned(),
                "A command that failed: exit 1 or 2, or 7 or 8 when a push it made was refused."
                    .to_owned(),
                error.to_value(),
            ),
        },
        answer::<VersionOutput>("version", "--version", "`--version --json`: the build."),
        answer::<HelpOutput>(
            "help",
            "help",
            "`help [COMMAND...] --json`: a command's help text.",
        ),
        answer::<CompletionsOutput>(
            "completions",
            "completions",
            "`completions SHELL --json`: the completion script.",
        ),
        answer::<ManPagesOutput>(
            "install-man-pages",
            "install-man-pages",
            "`install-man-pages [DIR] --json`: the man pages written.",
        ),
        answer::<ConfigOutput>(
            "config",
            "config",
            "`config`: every effective setting and where it came from, and the maverick.* keys nothing reads (each also in warnings).",
        ),
        answer::<ReadOutput>(
            "coord-read",
            "coord read",
            "`coord read ISSUE`: the issue's snapshot and decision; the exit code is the decision.",
        ),
        answer::<ClaimOutcome>(
            "coord-claim",
            "coord claim",
            "`coord claim`: every issue of the scope in `issues`.",
        ),
        answer::<HeartbeatOutcome>(
            "coord-heartbeat",
            "coord heartbeat",
            "`coord heartbeat`: the claim's scope, renewed or lost (exit 7).",
        ),
        answer::<ReleaseOutcome>(
            "coord-release",
            "coord release",
            "`coord release ISSUE`: what was released; `foreign` holds issues another instance holds now (exit 7).",
        ),
        answer::<ReleaseAllOutput>(
            "coord-release-all",
            "coord release-all",
            "`coord release-all`: every claim of this instance by its local records.",
        ),
        answer::<LabelOutput>(
            "coord-label",
            "coord label",
            "`coord block|unblock|label add|remove`: the issue's labels afterwards.",
        ),
        answer::<crate::surface::IssueReset>(
            "coord-reset",
            "coord reset",
            "`coord reset`: the issue's ref now holds an empty record; what it held is kept at `backup`.",
        ),
        answer::<Box<DispatchReport>>(
            "dispatch",
            "dispatch",
            "`dispatch`: one dispatch attempt and the slots.",
        ),
        answer::<SlotView>(
            "dispatch-status",
            "dispatch status",
            "`dispatch status`: the slots.",
        ),
        answer::<ReleaseReport>(
            "dispatch-release",
            "dispatch release",
            "`dispatch release ISSUE`.",
        ),
    ];
    files.extend(work_answers());
    files
}

/// The answers of the commands that work on a branch: the hook, hydrate,
/// resume, run, state, status and task.
fn work_answers() -> Vec<SchemaFile> {
    use super::hook::{InstallOutput, PrePushOutput, SessionEndOutput, UninstallOutput};
    use super::hydrate::HydrateOutput;
    use super::resume::ResumeOutput;
    use super::run::RunOutput;
    use super::state::{GetOutput, PutOutput, StoryOutput};
    use super::task::{CheckOutput, DoneOutput};
    use crate::durable::tasks::{InitOutcome, TaskListView};
    use crate::workflow::status::StatusView;
    vec![
        answer::<InstallOutput>(
            "hook-install",
            "hook install",
            "`hook install`: the guard put where this clone's hook manager runs it; `status` says whether it is on now.",
        ),
        answer::<UninstallOutput>(
            "hook-uninstall",
            "hook uninstall",
            "`hook uninstall`: the guard's block taken out; the rest of each hook stays.",
        ),
        answer::<super::protect::ProtectOutput>(
            "protect",
            "protect install|status|remove",
            "`protect install|status|remove [--dry-run]`: whether the server refuses force pushes and deletions of the managed branches (status: exit 0 on, 1 off), and what was or would be written.",
        ),
        answer::<super::hook::StatusOutput>(
            "hook-status",
            "hook status",
            "`hook status`: whether the pre-push guard runs on the next push from here (exit 0 on, 1 off).",
        ),
        answer::<PrePushOutput>(
            "hook-pre-push",
            "hook pre-push",
            "`hook pre-push REMOTE [URL]`: the pre-push check.",
        ),
        answer::<SessionEndOutput>(
            "hook-session-end",
            "hook session-end",
            "`hook session-end`: the release of the session's claims, started in the background.",
        ),
        answer::<HydrateOutput>(
            "hydrate",
            "hydrate",
            "`hydrate ISSUE`: the state file's content (epic-state.json or issue-state.json) and where it was written.",
        ),
        answer::<ResumeOutput>(
            "resume",
            "resume",
            "`resume BRANCH`: the worktree, or why not (exit 3-8).",
        ),
        answer_with::<RunOutput, u8>(
            "run",
            "run",
            "`run ISSUE -- CMD`: maverick's object is all of stdout; CMD's own stdout goes to stderr under --json. `status` is CMD's exit status, and `exit_code` CMD's own; a CMD that could not start has an `error` object; a refused claim is `coord claim`'s object.",
        ),
        answer::<GetOutput>("state-get", "state get", "`state get`: one marker's payload."),
        answer::<PutOutput>(
            "state-put",
            "state put",
            "`state put`: the marker written or kept.",
        ),
        answer::<StoryOutput>(
            "state-story",
            "state story",
            "`state story`: a story's state in its epic's state marker.",
        ),
        answer::<StatusView>(
            "status",
            "status",
            "One object per run (one per line with --watch): every issue that is claimed, leased, blocked or holds a dispatch claim, the dispatch slots, the totals and, with --epic, the epic's stories by wave.",
        ),
        answer::<InitOutcome>("task-init", "task init", "`task init`: the tasks comment."),
        answer::<TaskListView>(
            "task-list",
            "task list",
            "`task list`: the tasks after reconciling with the remote branch.",
        ),
        answer::<CheckOutput>("task-check", "task check", "`task check`."),
        answer::<DoneOutput>(
            "task-done",
            "task done",
            "`task done`: the task's commit, pushed and checked off; or why not (exit 4-8).",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    /// The checked-in schemas are the generated ones; with
    /// `MAVERICK_UPDATE_SCHEMAS=1` the test writes them instead.
    #[test]
    fn schemas_are_generated_from_the_output_types() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas");
        let update = std::env::var_os("MAVERICK_UPDATE_SCHEMAS").is_some_and(|v| v == "1");
        let mut stale = Vec::new();
        let files = super::all();
        for file in &files {
            let path = dir.join(format!("{}.schema.json", file.name));
            let text = serde_json::to_string_pretty(&file.schema).unwrap() + "\n";
            if std::fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
                continue;
            }
            if update {
                std::fs::write(&path, text).unwrap();
            } else {
                stale.push(file.name);
            }
        }
        assert!(
            stale.is_empty(),
            "schemas/ differs from the output types for {stale:?}: \
             regenerate with `MAVERICK_UPDATE_SCHEMAS=1 cargo test --lib schemas`, \
             and review the diff (README \"JSON output\": a rename or removal bumps schema_version)"
        );
        let names: Vec<&str> = files.iter().map(|f| f.name).collect();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            let stem = name.trim_end_matches(".schema.json");
            assert!(
                names.contains(&stem),
                "schemas/{name} is not generated from any output type"
            );
        }
    }
}
