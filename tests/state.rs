//! State markers and `hydrate` end to end: the real binary, real git, and
//! the surface the harness gives (`on_both_surfaces!`).

use crate::support::screen::{screen, screens};
use crate::support::{Repo, Surface, TestEnv};
use serde_json::{json, Value};

const EPIC: u64 = 123;

/// Writes `value` as a JSON file outside every clone; returns its path.
fn input_file(s: &TestEnv, name: &str, value: &Value) -> String {
    s.input_file(name, &serde_json::to_string_pretty(value).unwrap())
}

fn put(s: &TestEnv, repo: &Repo<'_>, kind: &str, issue: u64, payload: Value) -> Value {
    let file = input_file(s, &format!("{kind}-{issue}.json"), &payload);
    repo.maverick(&["--json", "state", "put", kind, &issue.to_string(), &file])
        .expect(0)
        .json()
}

fn get(repo: &Repo<'_>, kind: &str, issue: u64) -> Value {
    repo.maverick(&["--json", "state", "get", kind, &issue.to_string()])
        .expect(0)
        .json()
}

/// Comments of `issue` holding a `maverick-<kind>` block.
fn marker_comments(s: &TestEnv, issue: u64, kind: &str) -> usize {
    s.comments(issue)
        .iter()
        .filter(|c| c.body.contains(&format!("```maverick-{kind}\n")))
        .count()
}

fn without_stamps(mut v: Value) -> Value {
    let map = v.as_object_mut().unwrap();
    map.remove("updated_at");
    map.remove("marker_id");
    v
}

fn put_then_get_round_trips_in_place(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.clone("alpha");
    let dag = json!({
        "epic": 123,
        "stories": {"140": {"deps": [], "files": ["src/a.rs"]}, "142": {"deps": ["140"]}},
        "x-future": {"kept": true},
    });
    let written = put(s, &a, "dag", EPIC, dag.clone());
    assert_eq!(written["created"], true);
    let read = get(&a, "dag", EPIC);
    assert_eq!(read["comment_id"], written["comment_id"]);
    assert_eq!(without_stamps(read["marker"].clone()), dag);
    let marker_id = read["marker"]["marker_id"].as_str().unwrap().to_owned();
    assert_eq!(marker_id.len(), 32);
    assert!(read["marker"]["updated_at"]
        .as_str()
        .unwrap()
        .ends_with('Z'));

    // People read the payload itself, pretty, to pipe it on.
    let plain = a.maverick(&["state", "get", "dag", "123"]);
    plain.expect(0);
    let printed: Value = serde_json::from_str(&plain.stdout).unwrap();
    assert_eq!(printed, read["marker"]);

    // A second put updates the same comment and keeps the marker's id.
    let mut dag2 = dag.clone();
    dag2["stories"]["145"] = json!({"deps": ["142"]});
    let again = put(s, &a, "dag", EPIC, dag2.clone());
    assert_eq!(again["created"], false);
    assert_eq!(again["comment_id"], written["comment_id"]);
    let read2 = get(&a, "dag", EPIC);
    assert_eq!(without_stamps(read2["marker"].clone()), dag2);
    assert_eq!(read2["marker"]["marker_id"], marker_id.as_str());
    assert_eq!(marker_comments(s, EPIC, "dag"), 1, "upserted, not appended");

    // A task-progress put merges comment ids one by one (Maverick's
    // `task-progress set`): recording the plan keeps the tasks comment.
    put(
        s,
        &a,
        "task-progress",
        142,
        json!({"phase": "tasks", "comments": {"tasks": 7}}),
    );
    put(
        s,
        &a,
        "task-progress",
        142,
        json!({"phase": "branch", "comments": {"plan": 6}}),
    );
    let progress = get(&a, "task-progress", 142);
    assert_eq!(
        progress["marker"]["comments"],
        json!({"plan": 6, "tasks": 7})
    );
    assert_eq!(progress["marker"]["phase"], "branch");

    // --replace drops what the payload does not name.
    let file = input_file(s, "small.json", &json!({"epic": 123, "stories": {}}));
    a.maverick(&["state", "put", "dag", "123", &file, "--replace"])
        .expect(0);
    assert_eq!(
        without_stamps(get(&a, "dag", EPIC)["marker"].clone()),
        json!({"epic": 123, "stories": {}})
    );
}

fn a_persons_edit_survives_an_update_of_one_field(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.clone("alpha");
    let written = put(
        s,
        &a,
        "state",
        EPIC,
        json!({"epic": 123, "stories": {"140": "merged", "142": "in_flight"}}),
    );
    let id = written["comment_id"].as_u64().unwrap();
    let body = s
        .comments(EPIC)
        .into_iter()
        .find(|c| c.id == id)
        .unwrap()
        .body;
    // A person adds a sentence around the block and a field inside it.
    let edited = format!(
        "Epic status, kept by the bot. Ask @carol before editing.\n\n{}\n\nLast reviewed on Friday.\n",
        body.replacen("{\n", "{\n  \"note\": \"hold 150 until the API lands\",\n", 1)
    );
    s.edit_comment(EPIC, id, &edited);

    put(
        s,
        &a,
        "state",
        EPIC,
        json!({"stories": {"140": "merged", "142": "merged"}}),
    );
    let read = get(&a, "state", EPIC);
    assert_eq!(read["comment_id"], id);
    assert_eq!(
        without_stamps(read["marker"].clone()),
        json!({
            "epic": 123,
            "note": "hold 150 until the API lands",
            "stories": {"140": "merged", "142": "merged"},
        })
    );
    let after = s
        .comments(EPIC)
        .into_iter()
        .find(|c| c.id == id)
        .unwrap()
        .body;
    assert!(after.starts_with("Epic status, kept by the bot. Ask @carol before editing.\n\n<!-- maverick epic-state snapshot -->\n"), "{after}");
    assert!(
        after.ends_with("```\n\nLast reviewed on Friday.\n"),
        "{after}"
    );
    assert_eq!(marker_comments(s, EPIC, "state"), 1);

    // A story transition changes that story alone, at once.
    a.maverick(&["state", "story", "123", "150", "in_flight"])
        .expect(0);
    let read = get(&a, "state", EPIC);
    assert_eq!(
        read["marker"]["stories"],
        json!({"140": "merged", "142": "merged", "150": "in_flight"})
    );
    assert_eq!(read["marker"]["note"], "hold 150 until the API lands");
}

fn concurrent_story_transitions_keep_both(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.clone("alpha");
    let b = s.clone("beta");
    put(s, &a, "state", EPIC, json!({"epic": 123, "stories": {}}));
    // Both writers verify after a pause that lets the other's write land:
    // real time here (MAVERICK_CLOCK_PAUSES=wait), as between two machines.
    let spawn = |repo: &Repo<'_>, story: &str| {
        repo.command(&["state", "story", "123", story, "merged"])
            .env(crate::support::mav::clock::CLOCK_PAUSES_VAR, "wait")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap()
    };
    let first = spawn(&a, "140");
    let second = spawn(&b, "142");
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert_eq!(
        get(&a, "state", EPIC)["marker"]["stories"],
        json!({"140": "merged", "142": "merged"})
    );
}

fn refuses_events_and_bad_payloads(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = s.clone("alpha");
    let claim = input_file(s, "claim.json", &json!({"instance_id": "x"}));
    let event = a.maverick(&["state", "put", "claim", "123", &claim]);
    let array = input_file(s, "array.json", &json!([1, 2]));
    let not_an_object = a.maverick(&["state", "put", "state", "123", &array]);
    let broken = s.path().join("broken.json");
    std::fs::write(&broken, "{\"epic\": 123,").unwrap();
    let invalid = a.maverick(&["state", "put", "state", "123", broken.to_str().unwrap()]);
    let unknown = a.maverick(&["state", "put", "nope", "123", &array]);
    let missing = a.maverick(&["state", "get", "bprop", "123"]);
    insta::assert_snapshot!(
        format!("refuses_events_and_bad_payloads_{}", s.name()),
        screens(&[
            ("state put claim 123 claim.json", screen(s, &event)),
            ("state put state 123 array.json", screen(s, &not_an_object)),
            ("state put state 123 broken.json", screen(s, &invalid)),
            ("state put nope 123 array.json", screen(s, &unknown)),
            ("state get bprop 123", screen(s, &missing)),
        ])
    );
    a.maverick(&["state", "story", "123", "142", "done"])
        .expect(2);
}

/// An epic in every state a story can be in.
fn epic_fixture<'a>(s: &'a TestEnv) -> Repo<'a> {
    let a = s.clone("alpha");
    put(
        s,
        &a,
        "dag",
        EPIC,
        json!({"epic": 123, "stories": {
            "140": {"deps": [], "files": ["src/a.rs"]},
            "142": {"deps": ["140"]},
            "145": {"deps": ["140"]},
            "150": {"deps": ["142"]},
            "151": {"deps": []},
            "152": {"deps": ["151"]},
        }}),
    );
    put(
        s,
        &a,
        "state",
        EPIC,
        json!({"epic": 123, "stories": {
            "140": "merged", "142": "in_flight", "145": "pending", "150": "blocked", "151": "ejected",
        }}),
    );
    put(
        s,
        &a,
        "bprop",
        EPIC,
        json!({"ejected": "151", "descendants": ["152"], "labelled": [], "started_at": "2026-04-23T10:40:00Z"}),
    );
    a.maverick(&["coord", "claim", "142", "--branch", "maverick/142-parser"])
        .expect(0);
    a.maverick(&["coord", "block", "150", "--by", "142"])
        .expect(0);
    a.maverick(&["coord", "label", "add", "140", "closed"])
        .expect(0);
    a
}

/// Replaces what changes from run to run (times, ids) with placeholders.
fn redact(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                let is_time = key.ends_with("_at") || key == "at";
                if (is_time && v.is_string() && key != "started_at")
                    || key == "marker_id"
                    || key == "host"
                {
                    *v = json!(format!("[{key}]"));
                } else {
                    redact(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(redact),
        _ => {}
    }
}

fn hydrate_writes_the_epic_snapshot_over_a_stale_file(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = epic_fixture(s);
    let stale = a.dir.join(".claude/epic-state.json");
    std::fs::create_dir_all(stale.parent().unwrap()).unwrap();
    std::fs::write(
        &stale,
        "{\"epic\": 123, \"stories\": {\"140\": \"pending\"}, \"stale\": true}\n",
    )
    .unwrap();

    let run = a.maverick(&["hydrate", "123"]);
    insta::assert_snapshot!(
        format!("hydrate_over_a_stale_file_{}", s.name()),
        screen(s, &run)
    );
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    let file: Value = serde_json::from_slice(&std::fs::read(&stale).unwrap()).unwrap();
    assert_eq!(printed, file, "prints what it writes");
    assert!(
        file.get("stale").is_none(),
        "the surface wins over the local file"
    );
    assert_eq!(
        a.git(&["status", "--porcelain", "--untracked-files=all"]),
        "",
        "the cache stays out of git status"
    );

    let mut redacted = printed;
    redact(&mut redacted);
    insta::assert_snapshot!(
        format!("hydrate_epic_{}", s.name()),
        serde_json::to_string_pretty(&redacted).unwrap()
    );

    let json = a.maverick(&["--json", "hydrate", "123"]).json();
    assert_eq!(json["ready"], json!([145]));
    assert!(json["written_to"]
        .as_str()
        .unwrap()
        .ends_with(".claude/epic-state.json"));
}

fn hydrate_of_a_story_writes_issue_state(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let a = epic_fixture(s);
    a.git(&["switch", "--quiet", "-c", "maverick/142-parser"]);
    let tasks = s.path().join("tasks.md");
    std::fs::write(&tasks, "One\nTwo\n").unwrap();
    a.maverick(&[
        "task",
        "init",
        "142",
        tasks.to_str().unwrap(),
        "--branch",
        "maverick/142-parser",
    ])
    .expect(0);
    let run = a.maverick(&["hydrate", "142"]);
    run.expect(0);
    let printed: Value = serde_json::from_str(&run.stdout).unwrap();
    let file: Value =
        serde_json::from_slice(&std::fs::read(a.dir.join(".claude/issue-state.json")).unwrap())
            .unwrap();
    assert_eq!(printed, file);
    assert_eq!(file["issue"], 142);
    assert_eq!(file["decision"], "ours");
    assert_eq!(file["claim"]["branch"], "maverick/142-parser");
    assert_eq!(file["claim"]["live"], true);
    assert_eq!(file["branch"], "maverick/142-parser");
    assert_eq!(file["tasks"]["total"], 2);
    assert_eq!(file["tasks"]["next"], 1);
    assert_eq!(file["task_progress"]["phase"], "tasks");
    assert_eq!(file["pull"], Value::Null);
    assert!(!a.dir.join(".claude/epic-state.json").exists());
}

on_both_surfaces!(
    put_then_get_round_trips_in_place,
    a_persons_edit_survives_an_update_of_one_field,
    concurrent_story_transitions_keep_both,
    refuses_events_and_bad_payloads,
    hydrate_writes_the_epic_snapshot_over_a_stale_file,
    hydrate_of_a_story_writes_issue_state,
);
