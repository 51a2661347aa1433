//! The marker parser against real-looking comment bodies
//! (`fixtures/comments/`), generated huge bodies and seeded random input.

use std::path::PathBuf;

use crate::support::mav::markers::*;
use serde_json::{json, Map, Value};

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        other => panic!("not an object: {other}"),
    }
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/comments")
}

fn fixture(name: &str) -> String {
    let path = fixture_dir().join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|err| panic!("{}: {err}", path.display()))
}

/// The one marker a fixture must yield.
fn only_marker(name: &str) -> Marker {
    let parsed = parse_markers(&fixture(name));
    match parsed.as_slice() {
        [Ok(marker)] => marker.clone(),
        other => panic!("{name}: expected exactly one marker, got {other:?}"),
    }
}

fn sample_payload(kind: MarkerKind) -> Map<String, Value> {
    let payload = match kind {
        MarkerKind::Dag => json!({
            "epic": 123,
            "stories": {"140": {"deps": [], "files": ["src/a.rs"]}, "142": {"deps": ["140"]}},
        }),
        MarkerKind::State => json!({
            "epic": 123,
            "stories": {"140": "merged", "142": "in_flight"},
            "updated_at": "2026-04-23T10:15:00Z",
        }),
        MarkerKind::Claim => json!({
            "instance_id": "alice-mbp-3f9a12c0",
            "host": "alice-mbp",
            "scope": ["140", "142"],
            "claimed_at": "2026-04-23T09:58:12Z",
            "branch": "story/140-parser",
            "generation": 3,
        }),
        MarkerKind::Lease => json!({
            "instance_id": "alice-mbp-3f9a12c0",
            "heartbeat_at": "2026-04-23T09:58:12Z",
            "expires_at": "2026-04-23T10:08:12Z",
            "generation": 3,
        }),
        MarkerKind::Bprop => json!({
            "ejected": "142",
            "descendants": ["150"],
            "labelled": [],
            "started_at": "2026-04-23T10:40:00Z",
        }),
        MarkerKind::TaskProgress => json!({
            "phase": "implement",
            "instance_id": "alice-mbp-3f9a12c0",
            "branch": "story/140-parser",
            "comments": {"tasks": 125},
            "updated_at": "2026-04-23T10:30:00Z",
        }),
        MarkerKind::Dispatch => json!({
            "instance_id": "alice-mbp-3f9a12c0",
            "issue": 145,
            "claimed_at": "2026-04-23T11:00:05Z",
            "note": "multibyte: 日本語 🦀, quotes \" and ``` fences",
        }),
        MarkerKind::Withdrawn => json!({
            "instance_id": "alice-mbp-3f9a12c0",
            "scope": ["140"],
            "claimed_at": "2026-04-23T09:58:12Z",
            "generation": 3,
            "withdrawn_at": "2026-04-23T09:58:15Z",
            "reason": "lost-race",
        }),
    };
    let mut payload = object(payload);
    payload.insert("marker_id".into(), Value::String(new_marker_id()));
    payload
}

fn sample_marker(kind: MarkerKind) -> Marker {
    Marker::new(kind, sample_payload(kind))
}

// ---------------------------------------------------------------- round trips

#[test]
fn render_then_parse_gives_back_the_marker_for_every_kind() {
    for kind in MarkerKind::ALL {
        let marker = sample_marker(kind);
        let rendered = render_marker(&marker);
        assert!(
            rendered.starts_with(&format!(
                "<!-- {} -->\n\n```{}\n{{\n",
                kind.preamble(),
                kind.fence_tag()
            )),
            "{rendered}"
        );
        // As Maverick writes a body: nothing after the closing fence.
        assert!(rendered.ends_with("\n}\n```"), "{rendered}");
        assert_eq!(parse_markers(&rendered), [Ok(marker.clone())], "{kind}");
        assert_eq!(find_marker(&rendered, kind), Some(marker));
    }
}

#[test]
fn render_matches_python_json_dumps_sorted_with_indent_2() {
    let marker = Marker::new(
        MarkerKind::State,
        object(json!({
            "updated_at": "2026-04-23T10:15:00Z",
            "stories": {"142": "in_flight", "140": "merged"},
            "epic": 123,
            "empty": {},
            "none": [],
        })),
    );
    let expected = r#"<!-- maverick epic-state snapshot -->

```maverick-state
{
  "empty": {},
  "epic": 123,
  "none": [],
  "stories": {
    "140": "merged",
    "142": "in_flight"
  },
  "updated_at": "2026-04-23T10:15:00Z"
}
```"#;
    assert_eq!(render_marker(&marker), expected);
}

/// `json.dumps` escapes every character outside printable ASCII (its
/// `ensure_ascii`), astral ones as a surrogate pair; a branch name or a
/// reason a person typed comes out as Maverick would write it.
#[test]
fn render_escapes_as_python_json_dumps_does() {
    let marker = Marker::new(
        MarkerKind::TaskProgress,
        object(json!({"branch": "feat/café-🦀", "note": "tab\there \u{7f} \"q\" \\ /"})),
    );
    let rendered = render_marker(&marker);
    assert!(rendered.is_ascii(), "{rendered}");
    // `"branch": "feat/caf\u00e9-\ud83e\udd80"`, `"note": "tab\there \u007f \"q\" \\ /"`.
    insta::assert_snapshot!("rendered_as_json_dumps_escapes", rendered);
    assert_eq!(parse_markers(&rendered), [Ok(marker)]);
}

#[test]
fn unknown_fields_survive_a_rewrite() {
    let original = only_marker("unknown-fields.md");
    let mut updated = original.clone();
    updated.payload.insert("phase".into(), json!("pushing"));
    let rewritten = replace_marker(&fixture("unknown-fields.md"), &updated);
    let reparsed = only_marker_of(&rewritten);
    assert_eq!(reparsed, updated);
    assert_eq!(
        reparsed.payload["future_field"],
        json!({"nested": [1, 2, 3]})
    );
    assert_eq!(reparsed.payload["x-plugin-note"], json!("kept on rewrite"));
    assert_eq!(
        reparsed.payload.get("schema").and_then(|v| v.as_u64()),
        Some(2)
    );
}

fn only_marker_of(body: &str) -> Marker {
    match parse_markers(body).as_slice() {
        [Ok(marker)] => marker.clone(),
        other => panic!("expected exactly one marker, got {other:?}"),
    }
}

// ------------------------------------------------------------- replace_marker

#[test]
fn replace_marker_keeps_surrounding_text() {
    let before = "Picking this up.\n\nSee also #12 — ünïcödé 🦀.\n\n";
    let after = "\nAnything after the marker is kept too.\n";
    let old = sample_marker(MarkerKind::Lease);
    let body = format!("{before}{}{after}", render_marker(&old));
    let mut new = old.clone();
    new.payload
        .insert("heartbeat_at".into(), json!("2026-04-23T10:00:00Z"));

    let replaced = replace_marker(&body, &new);
    assert_eq!(replaced, format!("{before}{}{after}", render_marker(&new)));
    assert_eq!(parse_markers(&replaced), [Ok(new)]);
}

#[test]
fn replace_marker_keeps_surrounding_text_with_crlf() {
    let before = "Heartbeat from the Windows runner.\r\n\r\n";
    let after = "\r\nStill working on it.\r\n";
    let old = sample_marker(MarkerKind::Lease);
    let body = format!(
        "{before}{}{after}",
        render_marker(&old).replace('\n', "\r\n")
    );
    assert_eq!(parse_markers(&body), [Ok(old.clone())]);

    let mut new = old.clone();
    new.payload
        .insert("expires_at".into(), json!("2026-04-23T10:30:00Z"));
    let replaced = replace_marker(&body, &new);
    assert_eq!(
        replaced,
        format!(
            "{before}{}{after}",
            render_marker(&new).replace('\n', "\r\n")
        )
    );
    assert_eq!(parse_markers(&replaced), [Ok(new)]);
}

#[test]
fn replace_marker_on_the_crlf_fixture_changes_only_the_block() {
    let body = fixture("crlf.md");
    let mut lease = only_marker("crlf.md");
    lease
        .payload
        .insert("heartbeat_at".into(), json!("2026-04-23T10:10:00Z"));
    let replaced = replace_marker(&body, &lease);
    assert!(replaced.starts_with("Heartbeat from the Windows runner.\r\n\r\n<!-- maverick lease -->\r\n\r\n```maverick-lease\r\n"));
    assert!(replaced.ends_with("}\r\n```\r\n\r\nStill working on it.\r\n"));
    assert_eq!(
        replaced.matches("\r\n").count(),
        replaced.matches('\n').count(),
        "a bare LF crept in"
    );
    assert_eq!(parse_markers(&replaced), [Ok(lease)]);
}

#[test]
fn replace_marker_replaces_only_the_first_block_of_its_kind() {
    let body = fixture("claim-and-lease.md");
    let mut lease = sample_marker(MarkerKind::Lease);
    lease
        .payload
        .insert("instance_id".into(), json!("someone-else"));
    let replaced = replace_marker(&body, &lease);
    let claim_end = body.find("```\n\n<!-- maverick lease -->").unwrap() + "```\n\n".len();
    assert_eq!(&replaced[..claim_end], &body[..claim_end]);
    // The body's own final newline stays.
    assert_eq!(
        &replaced[claim_end..],
        format!("{}\n", render_marker(&lease))
    );

    let state = sample_marker(MarkerKind::State);
    let twice = format!(
        "{}\nbetween\n\n{}",
        render_marker(&state),
        render_marker(&state)
    );
    let mut newer = state.clone();
    newer.payload.insert("epic".into(), json!(124));
    let replaced = replace_marker(&twice, &newer);
    assert_eq!(parse_markers(&replaced), [Ok(newer), Ok(state)]);
}

#[test]
fn replace_marker_appends_when_absent() {
    let claim = sample_marker(MarkerKind::Claim);
    let rendered = render_marker(&claim);
    assert_eq!(replace_marker("", &claim), rendered);
    assert_eq!(
        replace_marker("Taking it.", &claim),
        format!("Taking it.\n\n{rendered}")
    );
    assert_eq!(
        replace_marker("Taking it.\n", &claim),
        format!("Taking it.\n\n{rendered}")
    );
    assert_eq!(
        replace_marker("Taking it.\n\n", &claim),
        format!("Taking it.\n\n{rendered}")
    );
    assert_eq!(
        replace_marker("Taking it.\r\n", &claim),
        format!("Taking it.\r\n\r\n{}", rendered.replace('\n', "\r\n"))
    );

    let with_lease = fixture("claim-and-lease.md").replace("maverick-claim", "maverick-old-claim");
    let appended = replace_marker(&with_lease, &claim);
    assert!(appended.starts_with(&with_lease));
    let kinds: Vec<_> = parse_markers(&appended)
        .into_iter()
        .map(|m| m.unwrap().kind)
        .collect();
    assert_eq!(kinds, [MarkerKind::Lease, MarkerKind::Claim]);
}

#[test]
fn replace_marker_closes_an_open_fence_before_appending() {
    let body = "Log excerpt:\n\n````text\nerror: push rejected";
    let claim = sample_marker(MarkerKind::Claim);
    let replaced = replace_marker(body, &claim);
    assert_eq!(
        replaced,
        format!("{body}\n````\n\n{}", render_marker(&claim))
    );
    assert_eq!(parse_markers(&replaced), [Ok(claim)]);
}

#[test]
fn replace_marker_replaces_an_unterminated_block_to_the_end() {
    let body = fixture("unterminated.md");
    let claim = sample_marker(MarkerKind::Claim);
    let replaced = replace_marker(&body, &claim);
    assert!(body.ends_with('\n'));
    assert_eq!(replaced, format!("{}\n", render_marker(&claim)));
}

#[test]
fn replace_marker_keeps_a_missing_final_newline_missing() {
    let state = sample_marker(MarkerKind::State);
    let body = format!("Snapshot:\n\n{}", render_marker(&state).trim_end());
    let mut newer = state.clone();
    newer.payload.insert("epic".into(), json!(7));
    let replaced = replace_marker(&body, &newer);
    assert_eq!(
        replaced,
        format!("Snapshot:\n\n{}", render_marker(&newer).trim_end())
    );
}

// ------------------------------------------------------------------- fixtures

#[test]
fn fixture_claim_and_lease() {
    let parsed = parse_markers(&fixture("claim-and-lease.md"));
    let [Ok(claim), Ok(lease)] = parsed.as_slice() else {
        panic!("{parsed:?}");
    };
    assert_eq!(claim.kind, MarkerKind::Claim);
    assert_eq!(
        claim.payload.get("instance_id").and_then(|v| v.as_str()),
        Some("alice-mbp-3f9a12c0")
    );
    assert_eq!(
        claim.payload.get("host").and_then(|v| v.as_str()),
        Some("alice-mbp")
    );
    assert_eq!(
        claim.payload.get("generation").and_then(|v| v.as_u64()),
        Some(1)
    );
    assert_eq!(claim.payload["scope"], json!(["140", "142"]));
    assert_eq!(claim.marker_id(), Some("0b6f3c9e1d2a4f5b8c7d6e5f4a3b2c1d"));
    assert_eq!(lease.kind, MarkerKind::Lease);
    assert_eq!(
        lease.payload.get("instance_id").and_then(|v| v.as_str()),
        Some("alice-mbp-3f9a12c0")
    );
    assert_eq!(
        lease.payload.get("expires_at").and_then(|v| v.as_str()),
        Some("2026-04-23T10:08:12Z")
    );
    assert_eq!(lease.marker_id(), Some("9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b"));
}

#[test]
fn fixture_epic_state_maverick_renders_back_byte_for_byte() {
    let body = fixture("epic-state-maverick.md");
    let state = only_marker("epic-state-maverick.md");
    assert_eq!(state.kind, MarkerKind::State);
    assert_eq!(
        state.payload.get("epic").and_then(|v| v.as_u64()),
        Some(123)
    );
    assert_eq!(
        state.payload.get("updated_at").and_then(|v| v.as_str()),
        Some("2026-04-23T10:15:00Z")
    );
    assert_eq!(
        state.payload["stories"],
        json!({"140": "merged", "142": "in_flight", "145": "pending", "150": "blocked", "151": "ejected"})
    );
    assert_eq!(render_marker(&state), body);
    assert_eq!(replace_marker(&body, &state), body);
}

#[test]
fn fixture_dag() {
    let dag = only_marker("dag.md");
    assert_eq!(dag.kind, MarkerKind::Dag);
    assert_eq!(dag.payload.get("epic").and_then(|v| v.as_u64()), Some(123));
    assert_eq!(dag.payload["stories"]["150"]["deps"], json!(["140", "142"]));
    assert_eq!(dag.payload["stories"]["140"]["files"], json!(["src/a.rs"]));
    // Written back with the preamble Maverick's `gh-state write` gives it.
    assert_eq!(
        render_marker(&dag),
        format!(
            "<!-- maverick maverick-dag -->\n\n{}",
            fixture("dag.md").trim_end()
        )
    );
}

#[test]
fn fixture_malformed_json() {
    let parsed = parse_markers(&fixture("malformed-json.md"));
    let [Err(MarkerError::InvalidJson { kind, message })] = parsed.as_slice() else {
        panic!("{parsed:?}");
    };
    assert_eq!(*kind, MarkerKind::State);
    assert!(!message.is_empty());
    assert_eq!(
        find_marker(&fixture("malformed-json.md"), MarkerKind::State),
        None
    );
    let shown = parsed[0].as_ref().unwrap_err().to_string();
    insta::assert_snapshot!("malformed_json_shown", shown);
}

#[test]
fn fixture_not_an_object() {
    assert_eq!(
        parse_markers(&fixture("not-an-object.md")),
        [Err(MarkerError::NotAnObject {
            kind: MarkerKind::Lease
        })]
    );
}

#[test]
fn fixture_unterminated() {
    let parsed = parse_markers(&fixture("unterminated.md"));
    assert_eq!(
        parsed,
        [Err(MarkerError::Unterminated {
            kind: MarkerKind::Claim
        })]
    );
    assert_eq!(parsed[0].as_ref().unwrap_err().kind(), MarkerKind::Claim);
}

#[test]
fn fixture_fence_inside_code_block_yields_nothing() {
    assert_eq!(parse_markers(&fixture("fence-inside-code-block.md")), []);
}

#[test]
fn fixture_crlf() {
    let body = fixture("crlf.md");
    assert_eq!(
        body.matches("\r\n").count(),
        body.matches('\n').count(),
        "crlf.md lost its CRLF line ends"
    );
    let lease = only_marker("crlf.md");
    assert_eq!(lease.kind, MarkerKind::Lease);
    assert_eq!(
        lease.payload.get("instance_id").and_then(|v| v.as_str()),
        Some("win-runner-5c5c5c5c")
    );
    assert_eq!(lease.marker_id(), Some("c0ffee00c0ffee00c0ffee00c0ffee00"));
    assert_eq!(
        parse_markers(&body),
        parse_markers(&body.replace("\r\n", "\n"))
    );
}

#[test]
fn fixture_unknown_kind_is_skipped() {
    let state = only_marker("unknown-kind.md");
    assert_eq!(state.kind, MarkerKind::State);
    assert_eq!(state.payload["stories"], json!({}));
}

#[test]
fn fixture_unknown_fields() {
    let progress = only_marker("unknown-fields.md");
    assert_eq!(progress.kind, MarkerKind::TaskProgress);
    let keys: Vec<_> = progress.payload.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "branch",
            "comments",
            "future_field",
            "instance_id",
            "phase",
            "schema",
            "updated_at",
            "x-plugin-note"
        ]
    );
    assert_eq!(render_marker(&progress), fixture("unknown-fields.md"));
}

#[test]
fn fixture_blockquote_reply_yields_nothing() {
    assert_eq!(parse_markers(&fixture("blockquote-reply.md")), []);
}

#[test]
fn fixture_tilde_fence() {
    let parsed = parse_markers(&fixture("tilde-fence.md"));
    let [Ok(claim), Ok(dispatch)] = parsed.as_slice() else {
        panic!("{parsed:?}");
    };
    assert_eq!(claim.kind, MarkerKind::Claim);
    assert_eq!(
        claim.payload.get("instance_id").and_then(|v| v.as_str()),
        Some("carol-laptop-0a0b0c0d")
    );
    assert_eq!(claim.payload["scope"], json!(["145"]));
    assert_eq!(dispatch.kind, MarkerKind::Dispatch);
    assert_eq!(
        dispatch.payload.get("issue").and_then(|v| v.as_u64()),
        Some(145)
    );
}

#[test]
fn fixture_task_progress() {
    let progress = only_marker("task-progress.md");
    assert_eq!(progress.kind, MarkerKind::TaskProgress);
    assert_eq!(
        progress.payload.get("phase").and_then(|v| v.as_str()),
        Some("implement")
    );
    assert_eq!(
        progress.payload.get("branch").and_then(|v| v.as_str()),
        Some("story/140-parser")
    );
    assert_eq!(progress.payload["comments"]["tasks"], json!(125));
    assert_eq!(
        progress.marker_id(),
        Some("5d41402abc4b2a76b9719d911017c592")
    );
}

#[test]
fn fixture_bprop() {
    let bprop = only_marker("bprop.md");
    assert_eq!(bprop.kind, MarkerKind::Bprop);
    assert_eq!(
        bprop.payload.get("ejected").and_then(|v| v.as_str()),
        Some("142")
    );
    assert_eq!(bprop.bprop().unwrap().ejected.number(), Some(142));
    assert_eq!(bprop.payload["descendants"], json!(["150", "151"]));
    assert_eq!(render_marker(&bprop), fixture("bprop.md"));
}

/// Every fixture file, so that one added without an expectation fails here.
const FIXTURES: [&str; 14] = [
    "blockquote-reply.md",
    "bprop.md",
    "claim-and-lease.md",
    "crlf.md",
    "dag.md",
    "epic-state-maverick.md",
    "fence-inside-code-block.md",
    "malformed-json.md",
    "not-an-object.md",
    "task-progress.md",
    "tilde-fence.md",
    "unknown-fields.md",
    "unknown-kind.md",
    "unterminated.md",
];

#[test]
fn every_fixture_has_an_expectation() {
    let mut found: Vec<String> = std::fs::read_dir(fixture_dir())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".md") && name != "README.md")
        .collect();
    found.sort();
    assert_eq!(found, FIXTURES);
}

// ------------------------------------------------------------- size and depth

#[test]
fn payload_over_16_kib_is_too_large() {
    let filler = "x".repeat(17 * 1024);
    let body = format!("```maverick-state\n{{\"filler\": \"{filler}\"}}\n```\n");
    let bytes = filler.len() + "{\"filler\": \"\"}\n".len();
    assert_eq!(
        parse_markers(&body),
        [Err(MarkerError::TooLarge {
            kind: MarkerKind::State,
            bytes
        })]
    );

    // The limit is on the payload text, inclusive.
    let exact = "x".repeat(MAX_PAYLOAD_BYTES - "{\"filler\": \"\"}\n".len());
    let body = format!("```maverick-state\n{{\"filler\": \"{exact}\"}}\n```\n");
    assert!(matches!(parse_markers(&body).as_slice(), [Ok(_)]));

    // Too large is decided before parsing: invalid JSON over the limit is still TooLarge.
    let junk = format!(
        "```maverick-claim\n{}\n```\n",
        "[".repeat(MAX_PAYLOAD_BYTES + 1)
    );
    assert!(matches!(
        parse_markers(&junk).as_slice(),
        [Err(MarkerError::TooLarge {
            kind: MarkerKind::Claim,
            ..
        })]
    ));
}

#[test]
fn deep_nesting_is_invalid_json_not_a_stack_overflow() {
    let depth = MAX_PAYLOAD_BYTES / 2 - 8;
    let nested = format!("{{\"a\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
    let body = format!("```maverick-dag\n{nested}\n```\n");
    assert!(matches!(
        parse_markers(&body).as_slice(),
        [Err(MarkerError::InvalidJson {
            kind: MarkerKind::Dag,
            ..
        })]
    ));
}

#[test]
fn huge_body_with_many_markers_parses_in_one_pass() {
    let markers: Vec<String> = MarkerKind::ALL
        .into_iter()
        .map(|kind| render_marker(&sample_marker(kind)))
        .collect();
    let junk = "Some prose with `inline code`, ~~strike~~ and ``` not a fence ```, ünïcödé 🦀.\n\
                > quoted ```maverick-claim\n\
                \n\
                ```rust\nfn main() { println!(\"```maverick-state\"); }\n```\n\n\
                ~~~~\n```maverick-lease\n{\"not\": \"a marker\"}\n```\n~~~~\n\n";
    let malformed = "```maverick-state\n{\"epic\": \n```\n\n";
    let mut body = String::new();
    let (mut ok, mut err) = (0, 0);
    let mut round = 0;
    while body.len() < 5 * 1024 * 1024 {
        body.push_str(junk);
        body.push_str(&markers[round % markers.len()]);
        body.push('\n');
        ok += 1;
        if round % 10 == 0 {
            body.push_str(malformed);
            err += 1;
        }
        round += 1;
    }
    let parsed = parse_markers(&body);
    assert_eq!(parsed.iter().filter(|r| r.is_ok()).count(), ok);
    assert_eq!(parsed.iter().filter(|r| r.is_err()).count(), err);
    assert!(find_marker(&body, MarkerKind::Dispatch).is_some());

    // Degenerate shapes that a naive scanner handles in quadratic time.
    let one_long_line = "`".repeat(5 * 1024 * 1024);
    assert_eq!(parse_markers(&one_long_line), []);
    let never_closed = format!(
        "```maverick-claim\n{}",
        "```maverick-claim\n{\n".repeat(300_000)
    );
    assert_eq!(
        parse_markers(&never_closed),
        [Err(MarkerError::Unterminated {
            kind: MarkerKind::Claim
        })]
    );
    let fences_only = "```\n".repeat(1_000_000);
    assert_eq!(parse_markers(&fences_only), []);
    let appended = replace_marker(&never_closed, &sample_marker(MarkerKind::Lease));
    assert_eq!(parse_markers(&appended).len(), 2);
}

// ----------------------------------------------------------------------- fuzz

/// xorshift64*: deterministic, so a failing input can be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A char boundary of `text`, so that edits keep it a `String`.
    fn boundary(&mut self, text: &str) -> usize {
        let mut at = self.below(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        at
    }
}

const TOKENS: &[&str] = &[
    "```",
    "````",
    "~~~",
    "~~~~",
    "`",
    "```maverick-claim\n",
    "```maverick-state\n",
    "~~~maverick-lease\n",
    "```maverick-task-progress",
    "maverick-",
    "maverick-dag",
    "<!-- maverick claim -->\n",
    "{",
    "}",
    "[",
    "]",
    "\"",
    ":",
    ",",
    "\\",
    "\r",
    "\n",
    "\r\n",
    "\n```\n",
    "   ",
    "    ",
    "\t",
    "> ",
    "é",
    "日本",
    "🦀",
    "\u{feff}",
    "\0",
    "0",
    "-1e999",
];

fn random_bytes(rng: &mut Rng) -> String {
    let len = rng.below(512);
    let bytes: Vec<u8> = (0..len)
        .map(|_| match rng.below(4) {
            // Bias towards the bytes the parser cares about.
            0 => *rng.pick(b"`~\r\n{}[]\" >-"),
            _ => rng.next() as u8,
        })
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn mutate(rng: &mut Rng, bodies: &[String]) -> String {
    let mut text = rng.pick(bodies).clone();
    for _ in 0..1 + rng.below(8) {
        match rng.below(4) {
            0 | 1 => {
                let at = rng.boundary(&text);
                let token = *rng.pick(TOKENS);
                text.insert_str(at, token);
            }
            2 => {
                let a = rng.boundary(&text);
                let b = rng.boundary(&text);
                text.replace_range(a.min(b)..a.max(b), "");
            }
            _ => {
                let donor = rng.pick(bodies);
                let a = rng.boundary(donor);
                let b = rng.boundary(donor);
                let at = rng.boundary(&text);
                text.insert_str(at, &donor[a.min(b)..a.max(b)]);
            }
        }
    }
    text
}

#[test]
fn fuzz_parse_and_replace_never_panic() {
    let bodies: Vec<String> = FIXTURES.iter().map(|name| fixture(name)).collect();
    let markers: Vec<Marker> = MarkerKind::ALL.into_iter().map(sample_marker).collect();
    let mut rng = Rng(0x6d61_7665_7269_636b);
    // Outcomes seen, so that a generator that stopped reaching the parser's
    // interesting paths fails loudly instead of passing vacuously.
    let mut seen = [0usize; 5];

    for case in 0..20_000 {
        let input = if case % 4 == 0 {
            random_bytes(&mut rng)
        } else {
            mutate(&mut rng, &bodies)
        };
        let marker = rng.pick(&markers);
        let parsed = parse_markers(&input);
        assert!(parsed.len() <= input.len(), "case {case}");
        for outcome in &parsed {
            let slot = match outcome {
                Ok(_) => 0,
                Err(MarkerError::InvalidJson { .. }) => 1,
                Err(MarkerError::NotAnObject { .. }) => 2,
                Err(MarkerError::Unterminated { .. }) => 3,
                Err(MarkerError::TooLarge { .. }) => 4,
            };
            seen[slot] += 1;
        }

        // Whatever the body, the rewritten marker is there afterwards.
        let replaced = replace_marker(&input, marker);
        assert!(
            parse_markers(&replaced).contains(&Ok(marker.clone())),
            "case {case}: replace_marker lost the marker in {input:?}"
        );

        // A rendered marker between lines of noise that open no fence is
        // found; every third case keeps the whole test under two seconds in
        // debug builds.
        if case % 3 == 0 {
            let noise = input.replace(['`', '~'], "");
            let embedded = format!("{noise}\n\n{}\n{noise}", render_marker(marker));
            assert_eq!(
                find_marker(&embedded, marker.kind).as_ref(),
                Some(marker),
                "case {case}: {embedded:?}"
            );
        }
    }
    let [ok, invalid, not_object, unterminated, _too_large] = seen;
    assert!(
        ok > 500 && invalid > 500 && not_object > 10 && unterminated > 500,
        "{seen:?}"
    );
}
