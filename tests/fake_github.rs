//! The fake GitHub server against GitHub's own schemas and recorded traffic.
//! No product code: a tiny std-only HTTP client below talks to the fake.

use std::collections::BTreeSet;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use crate::support::fake_github::{parse_http_date, parse_rfc3339, FakeGithub, SecondaryLimits};
use crate::support::json_schema::{load_github_api_json, Schema};
use crate::support::mav::clock::Clock;
use serde_json::{json, Value};

const OWNER: &str = "octo-org";
const REPO: &str = "widgets";
const SHA: &str = "3dca65fa3e8d4b3da3f3d056c59aee1c50f41390";

// ---------------------------------------------------------------------------
// A minimal HTTP/1.1 client

pub(crate) struct Reply {
    pub(crate) status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|error| panic!("not JSON ({error}): {:?}", self.body))
    }

    /// The URL a `link` header gives for `rel`.
    fn link(&self, rel: &str) -> Option<String> {
        let wanted = format!("rel=\"{rel}\"");
        self.header("link")?.split(", ").find_map(|part| {
            let (url, relation) = part.split_once("; ")?;
            (relation == wanted).then(|| url.trim_matches(['<', '>']).to_string())
        })
    }
}

fn write_request(
    stream: &mut TcpStream,
    authority: &str,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> io::Result<()> {
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: fake-github-test\r\n\
         Accept: application/vnd.github+json\r\nX-GitHub-Api-Version: 2022-11-28\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    if let Some(body) = body {
        head.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.unwrap_or("").as_bytes())?;
    stream.flush()
}

fn read_reply(reader: &mut impl BufRead) -> io::Result<Reply> {
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidData, format!("status line {line:?}"))
        })?;
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').expect("a header line");
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let length = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .map_or(0, |(_, value)| {
            value.parse::<usize>().expect("content-length")
        });
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(Reply {
        status,
        headers,
        body: String::from_utf8(body).expect("a UTF-8 body"),
    })
}

/// One request on a fresh connection. `target` is a path or an absolute URL
/// on the fake (as `link` headers give).
fn send(
    fake: &FakeGithub,
    method: &str,
    target: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    timeout: Duration,
) -> io::Result<Reply> {
    let base = fake.url();
    let authority = base.trim_start_matches("http://").to_string();
    let target = target.strip_prefix(&base).unwrap_or(target);
    let mut stream = TcpStream::connect(&authority)?;
    stream.set_read_timeout(Some(timeout))?;
    let mut all_headers = vec![("Connection", "close")];
    all_headers.extend_from_slice(headers);
    write_request(&mut stream, &authority, method, target, &all_headers, body)?;
    read_reply(&mut BufReader::new(stream))
}

/// An authenticated request, as octocrab would send it.
pub(crate) fn api(fake: &FakeGithub, method: &str, target: &str, body: Option<Value>) -> Reply {
    api_with(fake, method, target, body, &[])
}

fn api_with(
    fake: &FakeGithub,
    method: &str,
    target: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Reply {
    let authorization = format!("Bearer {}", fake.token());
    let mut all_headers = vec![("Authorization", authorization.as_str())];
    all_headers.extend_from_slice(headers);
    let body = body.map(|body| body.to_string());
    send(
        fake,
        method,
        target,
        &all_headers,
        body.as_deref(),
        Duration::from_secs(10),
    )
    .unwrap_or_else(|error| panic!("{method} {target}: {error}"))
}

fn get(fake: &FakeGithub, target: &str) -> Reply {
    api(fake, "GET", target, None)
}

fn repo_path(rest: &str) -> String {
    format!("/repos/{OWNER}/{REPO}/{rest}")
}

fn numbers(list: &Value) -> Vec<u64> {
    list.as_array()
        .expect("an array")
        .iter()
        .map(|item| item["number"].as_u64().expect("a number"))
        .collect()
}

fn label_names(list: &Value) -> Vec<String> {
    list.as_array()
        .expect("an array")
        .iter()
        .map(|label| label["name"].as_str().expect("a name").to_string())
        .collect()
}

fn sorted_keys(object: &Value) -> Vec<String> {
    object
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect()
}

/// octocrab's `remove_label` percent-encodes every byte that is not alphanumeric.
fn encode_every_non_alphanumeric(name: &str) -> String {
    name.bytes()
        .map(|byte| match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => (byte as char).to_string(),
            _ => format!("%{byte:02X}"),
        })
        .collect()
}

fn schema(name: &str) -> Schema {
    Schema::load(name)
}

// ---------------------------------------------------------------------------
// The validator itself

#[test]
fn githubs_own_examples_validate_against_the_schemas() {
    for (example, schema_file) in [
        ("issue.json", "issue.trimmed.schema.json"),
        ("issue.json", "issue.schema.json"),
        ("issue-comment.json", "issue-comment.trimmed.schema.json"),
        ("issue-comment.json", "issue-comment.schema.json"),
        ("label.json", "label.schema.json"),
        ("check-run.json", "check-run.trimmed.schema.json"),
        (
            "combined-commit-status.json",
            "combined-commit-status.trimmed.schema.json",
        ),
    ] {
        schema(schema_file).assert_valid(&load_github_api_json(&format!("examples/{example}")));
    }
    for (example, schema_file) in [
        ("issue-items.json", "issue.trimmed.schema.json"),
        (
            "issue-comment-items.json",
            "issue-comment.trimmed.schema.json",
        ),
        ("label-items.json", "label.schema.json"),
        (
            "pull-request-simple-items.json",
            "pull-request-simple.trimmed.schema.json",
        ),
    ] {
        schema(schema_file)
            .assert_valid_items(&load_github_api_json(&format!("examples/{example}")));
    }
}

#[test]
fn the_validator_rejects_what_the_schemas_forbid() {
    let comment_schema = schema("issue-comment.trimmed.schema.json");
    let example = load_github_api_json("examples/issue-comment.json");
    let errors_for = |change: &dyn Fn(&mut Value)| {
        let mut instance = example.clone();
        change(&mut instance);
        comment_schema
            .validate(&instance)
            .expect_err("should not validate")
            .join("\n")
    };
    let missing = errors_for(&|c| {
        c.as_object_mut().unwrap().remove("node_id");
    });
    let wrong_type = errors_for(&|c| c["id"] = json!("2200000001"));
    let bad_enum = errors_for(&|c| c["author_association"] = json!("BOSS"));
    let nested = errors_for(&|c| c["user"]["site_admin"] = json!("no"));
    insta::assert_snapshot!(
        "schema_errors",
        format!(
            "without node_id:\n{missing}\n\"id\": \"2200000001\":\n{wrong_type}\n\
             \"author_association\": \"BOSS\":\n{bad_enum}\n\
             \"user\": {{\"site_admin\": \"no\"}}:\n{nested}\n"
        )
    );
    // nullable-simple-user admits null; a string in its place is wrong.
    let mut anonymous = example.clone();
    anonymous["user"] = Value::Null;
    comment_schema.assert_valid(&anonymous);

    let one_of = Schema::from_value(
        "inline",
        json!({"oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]}),
    );
    assert!(one_of.validate(&json!("x")).is_ok());
    assert!(
        one_of.validate(&Value::Null).is_err(),
        "null matches both branches"
    );
    let unsupported = Schema::from_value("inline", json!({"type": "string", "pattern": "^a"}));
    insta::assert_snapshot!(
        "schema_keyword_not_supported",
        unsupported.validate(&json!("a")).unwrap_err().join("\n")
    );
    let nullable = Schema::from_value("inline", json!({"type": "string", "nullable": true}));
    assert!(nullable.validate(&Value::Null).is_ok());
}

// ---------------------------------------------------------------------------
// Shapes

#[test]
fn every_answer_validates_against_githubs_schemas() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "Epic", &["epic"]);
    fake.create_pull(2, "Story", &["agent-pr"], SHA);
    fake.add_user("alice", "COLLABORATOR");
    fake.open_pull(4, "alice", "fix-1", "release-1", "Fixes #1");
    fake.add_comment_as(1, "alice", "seeded");
    fake.set_check_runs(
        SHA,
        &[
            ("ci", "completed", Some("success")),
            ("lint", "in_progress", None),
        ],
    );
    fake.set_commit_status(SHA, "success");
    let (issue, comment, label, pull) = (
        schema("issue.trimmed.schema.json"),
        schema("issue-comment.trimmed.schema.json"),
        schema("label.schema.json"),
        schema("pull-request-simple.trimmed.schema.json"),
    );
    let (error, validation) = (
        schema("basic-error.schema.json"),
        schema("validation-error.schema.json"),
    );

    let user = get(&fake, "/user");
    schema("simple-user.schema.json").assert_valid(&user.json());
    assert_eq!(user.json()["login"], "maverick-bot");
    let repo = get(&fake, &format!("/repos/{OWNER}/{REPO}")).json();
    assert_eq!(repo["id"], fake.repo_id());
    assert_eq!(repo["full_name"], format!("{OWNER}/{REPO}"));

    issue.assert_valid(&get(&fake, &repo_path("issues/1")).json());
    let pr_as_issue = get(&fake, &repo_path("issues/2")).json();
    issue.assert_valid(&pr_as_issue);
    assert!(pr_as_issue["pull_request"].is_object());
    issue.assert_valid_items(&get(&fake, &repo_path("issues?state=all")).json());
    let pulls = get(&fake, &repo_path("pulls?state=open&per_page=100")).json();
    pull.assert_valid_items(&pulls);
    let numbered = |n: u64| {
        pulls
            .as_array()
            .and_then(|all| all.iter().find(|p| p["number"] == n))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let (story, opened) = (numbered(2), numbered(4));
    assert_eq!(story["head"]["sha"], SHA);
    assert_eq!(story["draft"], false);
    // What tells whether a pull request closes an issue, as GitHub shows it.
    assert_eq!(
        [
            &opened["number"],
            &opened["user"]["login"],
            &opened["body"],
            &opened["head"]["ref"],
            &opened["base"]["ref"],
            &opened["base"]["repo"]["default_branch"],
            &opened["base"]["repo"]["full_name"],
            &story["body"],
            &story["base"]["ref"],
        ],
        [
            &json!(4),
            &json!("alice"),
            &json!("Fixes #1"),
            &json!("fix-1"),
            &json!("release-1"),
            &json!("main"),
            &json!(format!("{OWNER}/{REPO}")),
            &Value::Null,
            &json!("main"),
        ]
    );

    let created = api(
        &fake,
        "POST",
        &repo_path("issues/1/comments"),
        Some(json!({"body": "hi"})),
    );
    assert_eq!(created.status, 201);
    comment.assert_valid(&created.json());
    let id = created.json()["id"].as_u64().unwrap();
    assert!(created.json()["url"]
        .as_str()
        .unwrap()
        .starts_with(&fake.url()));
    let comment_path = repo_path(&format!("issues/comments/{id}"));
    for method in ["PATCH", "POST"] {
        let updated = api(&fake, method, &comment_path, Some(json!({"body": method})));
        assert_eq!(updated.status, 200, "{method}");
        comment.assert_valid(&updated.json());
    }
    comment.assert_valid(&get(&fake, &comment_path).json());
    comment.assert_valid_items(&get(&fake, &repo_path("issues/1/comments")).json());

    let added = api(
        &fake,
        "POST",
        &repo_path("issues/1/labels"),
        Some(json!({"labels": ["x"]})),
    );
    label.assert_valid_items(&added.json());
    label.assert_valid_items(&get(&fake, &repo_path("issues/1/labels")).json());
    let replaced = api(
        &fake,
        "PUT",
        &repo_path("issues/1/labels"),
        Some(json!({"labels": ["y", "z"]})),
    );
    label.assert_valid_items(&replaced.json());
    label.assert_valid_items(&api(&fake, "DELETE", &repo_path("issues/1/labels/y"), None).json());

    let assigned = api(
        &fake,
        "POST",
        &repo_path("issues/1/assignees"),
        Some(json!({"assignees": ["alice"]})),
    );
    issue.assert_valid(&assigned.json());
    let unassigned = api(
        &fake,
        "DELETE",
        &repo_path("issues/1/assignees"),
        Some(json!({"assignees": ["alice"]})),
    );
    issue.assert_valid(&unassigned.json());

    let runs = get(&fake, &repo_path(&format!("commits/{SHA}/check-runs"))).json();
    assert_eq!(runs["total_count"], 2);
    schema("check-run.trimmed.schema.json").assert_valid_items(&runs["check_runs"]);
    let status = get(&fake, &repo_path(&format!("commits/{SHA}/status"))).json();
    schema("combined-commit-status.trimmed.schema.json").assert_valid(&status);

    error.assert_valid(&get(&fake, &repo_path("issues/99")).json());
    error.assert_valid(&api(&fake, "DELETE", &repo_path("issues/1/labels/nope"), None).json());
    error.assert_valid(
        &send(&fake, "GET", "/user", &[], None, Duration::from_secs(5))
            .unwrap()
            .json(),
    );
    let missing_body = api(
        &fake,
        "POST",
        &repo_path("issues/1/comments"),
        Some(json!({})),
    );
    validation.assert_valid(&missing_body.json());
}

#[test]
fn label_answers_match_recorded_github_traffic() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "Issue without a label", &[]);
    let recorded = load_github_api_json("recorded/add-labels-to-issue.json");
    let add = &recorded[1];
    assert_eq!(add["method"], "post");

    let ours = api(
        &fake,
        "POST",
        &repo_path("issues/1/labels"),
        Some(add["body"].clone()),
    );
    assert_eq!(u64::from(ours.status), add["status"].as_u64().unwrap());
    let (ours_json, theirs) = (ours.json(), &add["response"]);
    assert_eq!(label_names(&ours_json), label_names(theirs));
    for (mine, recorded_label) in ours_json
        .as_array()
        .unwrap()
        .iter()
        .zip(theirs.as_array().unwrap())
    {
        assert_eq!(sorted_keys(mine), sorted_keys(recorded_label));
        for key in ["color", "default", "description"] {
            assert_eq!(mine[key], recorded_label[key], "{key}");
        }
    }
    for name in [
        "content-type",
        "etag",
        "date",
        "x-ratelimit-limit",
        "x-ratelimit-remaining",
        "x-ratelimit-reset",
        "x-ratelimit-used",
        "x-ratelimit-resource",
        "x-github-request-id",
    ] {
        assert!(
            add["headers"].get(name).is_some(),
            "recorded traffic lacks {name}"
        );
        if name != "etag" {
            assert!(
                ours.header(name).is_some(),
                "the fake's answer lacks {name}"
            );
        }
    }
    assert_eq!(
        ours.header("content-type"),
        add["headers"]["content-type"].as_str()
    );

    // Adding present labels is a no-op that still lists them all, in GitHub's spelling.
    let again = api(
        &fake,
        "POST",
        &repo_path("issues/1/labels"),
        Some(json!({"labels": ["foo"]})),
    );
    assert_eq!(again.status, 200);
    assert_eq!(label_names(&again.json()), ["Foo", "bAr", "baZ"]);

    let removed = api(&fake, "DELETE", &repo_path("issues/1/labels/bAr"), None);
    assert_eq!(removed.status, 200);
    assert_eq!(label_names(&removed.json()), ["Foo", "baZ"]);
    let gone = api(&fake, "DELETE", &repo_path("issues/1/labels/bAr"), None);
    assert_eq!(gone.status, 404);
    assert_eq!(gone.json()["message"], "Label does not exist");
    let basic_error_keys =
        sorted_keys(&load_github_api_json("schemas/basic-error.schema.json")["properties"]);
    let keys: BTreeSet<String> = sorted_keys(&gone.json()).into_iter().collect();
    let allowed: BTreeSet<String> = basic_error_keys.into_iter().collect();
    assert!(keys.is_subset(&allowed), "unexpected keys in {keys:?}");

    let error = &load_github_api_json("recorded/errors.json")[0];
    let ours = api(
        &fake,
        "POST",
        &repo_path("issues/1/comments"),
        Some(json!({"bdy": "typo"})),
    );
    assert_eq!(u64::from(ours.status), error["status"].as_u64().unwrap());
    let ours = ours.json();
    assert_eq!(ours["message"], error["response"]["message"]);
    for key in sorted_keys(&error["response"]) {
        assert!(ours.get(&key).is_some(), "the fake's 422 lacks {key}");
    }
    for key in sorted_keys(&error["response"]["errors"][0]) {
        assert!(
            ours["errors"][0].get(&key).is_some(),
            "the fake's 422 error lacks {key}"
        );
    }
}

#[test]
fn issue_pages_follow_the_recorded_link_shape() {
    let fake = FakeGithub::start(OWNER, REPO);
    for number in 1..=13 {
        fake.create_issue(number, &format!("Test issue {number}"), &[]);
    }
    let recorded = load_github_api_json("recorded/paginate-issues.json");
    let recorded_base = "https://api.github.com/repositories/1000/";
    let our_base = format!("{}/repositories/{}/", fake.url(), fake.repo_id());
    let mut target = repo_path("issues?per_page=3");
    for (page, entry) in recorded.as_array().unwrap().iter().enumerate() {
        let reply = get(&fake, &target);
        assert_eq!(reply.status, 200);
        assert_eq!(
            numbers(&reply.json()),
            numbers(&entry["response"]),
            "page {}",
            page + 1
        );
        let expected_link = entry["headers"]["link"]
            .as_str()
            .unwrap()
            .replace(recorded_base, &our_base);
        assert_eq!(
            reply.header("link"),
            Some(expected_link.as_str()),
            "page {}",
            page + 1
        );
        match reply.link("next") {
            Some(next) => target = next,
            None => assert_eq!(page + 1, recorded.as_array().unwrap().len()),
        }
    }
}

#[test]
fn two_hundred_fifty_comments_come_in_pages_of_one_hundred() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(7, "Epic", &[]);
    for index in 0..250 {
        fake.add_comment_as(7, "maverick-bot", &format!("comment {index}"));
    }
    let base = format!(
        "{}/repositories/{}/issues/7/comments",
        fake.url(),
        fake.repo_id()
    );
    let first = get(&fake, &repo_path("issues/7/comments?per_page=100"));
    assert_eq!(
        first.header("link"),
        Some(format!("<{base}?per_page=100&page=2>; rel=\"next\", <{base}?per_page=100&page=3>; rel=\"last\"").as_str())
    );
    let second = get(&fake, &first.link("next").unwrap());
    assert_eq!(
        second.header("link"),
        Some(
            format!(
                "<{base}?per_page=100&page=1>; rel=\"prev\", <{base}?per_page=100&page=3>; rel=\"next\", \
                 <{base}?per_page=100&page=3>; rel=\"last\", <{base}?per_page=100&page=1>; rel=\"first\""
            )
            .as_str()
        )
    );
    let third = get(&fake, &second.link("next").unwrap());
    assert_eq!(third.link("next"), None);
    assert!(third.link("prev").is_some() && third.link("first").is_some());

    let pages = [first.json(), second.json(), third.json()];
    assert_eq!(
        pages
            .iter()
            .map(|page| page.as_array().unwrap().len())
            .collect::<Vec<_>>(),
        [100, 100, 50]
    );
    let ids: Vec<u64> = pages
        .iter()
        .flat_map(|page| {
            page.as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_u64().unwrap())
        })
        .collect();
    assert!(ids[0] > 1 << 31, "ids pass 2^31: {}", ids[0]);
    assert!(
        ids.windows(2).all(|pair| pair[0] < pair[1]),
        "ascending ids"
    );
    assert!(
        ids.windows(2).any(|pair| pair[1] - pair[0] > 1),
        "ids have gaps, as on GitHub"
    );
    assert_eq!(pages[2][49]["body"], "comment 249");

    // Default page size 30; no link when everything fits on one page.
    assert_eq!(
        get(&fake, &repo_path("issues/7/comments"))
            .json()
            .as_array()
            .unwrap()
            .len(),
        30
    );
    fake.create_issue(8, "Small", &[]);
    fake.add_comment_as(8, "maverick-bot", "only");
    assert_eq!(
        get(&fake, &repo_path("issues/8/comments?per_page=100")).header("link"),
        None
    );
    // per_page is capped at 100, and the /repositories/{id} form answers the same.
    assert_eq!(
        get(&fake, &repo_path("issues/7/comments?per_page=500"))
            .json()
            .as_array()
            .unwrap()
            .len(),
        100
    );
    assert_eq!(
        get(&fake, &format!("{base}?per_page=100&page=3")).body,
        third.body
    );
}

#[test]
fn label_filters_are_anded_and_include_pull_requests() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "only a", &["a"]);
    fake.create_issue(2, "a and b", &["a", "b"]);
    fake.create_pull(3, "pr with a and b", &["a", "b"], SHA);
    fake.create_issue(4, "closed", &["a", "b"]);
    fake.close(4);

    let open = get(&fake, &repo_path("issues?labels=a,b&state=open")).json();
    assert_eq!(numbers(&open), [3, 2]);
    assert!(open[0]["pull_request"].is_object() && open[1].get("pull_request").is_none());
    assert_eq!(
        numbers(&get(&fake, &repo_path("issues?labels=A%2CB&state=all")).json()),
        [4, 3, 2]
    );
    assert_eq!(
        numbers(&get(&fake, &repo_path("issues?labels=b&state=closed")).json()),
        [4]
    );
    assert_eq!(
        numbers(&get(&fake, &repo_path("issues?direction=asc")).json()),
        [1, 2, 3]
    );
    assert_eq!(
        numbers(&get(&fake, &repo_path("pulls?state=open")).json()),
        [3]
    );

    api(
        &fake,
        "POST",
        &repo_path("issues/2/assignees"),
        Some(json!({"assignees": ["maverick-bot"]})),
    );
    assert_eq!(
        numbers(&get(&fake, &repo_path("issues?labels=a&assignee=none")).json()),
        [3, 1]
    );
    assert_eq!(
        numbers(&get(&fake, &repo_path("issues?assignee=maverick-bot")).json()),
        [2]
    );
}

#[test]
fn labels_with_punctuation_are_removed_by_their_encoded_names() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(5, "Story", &["claude-in-progress"]);
    let labels = ["blocked-by:#12", "needs review"];
    api(
        &fake,
        "POST",
        &repo_path("issues/5/labels"),
        Some(json!({"labels": labels})),
    );
    assert_eq!(
        fake.labels(5),
        ["claude-in-progress", "blocked-by:#12", "needs review"]
    );

    for name in labels {
        let path = repo_path(&format!(
            "issues/5/labels/{}",
            encode_every_non_alphanumeric(name)
        ));
        let removed = api(&fake, "DELETE", &path, None);
        assert_eq!(removed.status, 200, "{name}");
        assert!(
            label_names(&removed.json()).iter().all(|l| l != name),
            "{name} is still there"
        );
        assert_eq!(
            api(&fake, "DELETE", &path, None).status,
            404,
            "{name} twice"
        );
    }
    assert_eq!(fake.labels(5), ["claude-in-progress"]);
    // The repository's label keeps a URL of its own, percent-encoded.
    let added = api(
        &fake,
        "POST",
        &repo_path("issues/5/labels"),
        Some(json!(["blocked-by:#12"])),
    );
    assert!(added.json()[1]["url"]
        .as_str()
        .unwrap()
        .ends_with("/labels/blocked-by%3A%2312"));

    let replaced = api(
        &fake,
        "PUT",
        &repo_path("issues/5/labels"),
        Some(json!({"labels": ["agent-wip"]})),
    );
    assert_eq!(label_names(&replaced.json()), ["agent-wip"]);
    assert_eq!(
        api(&fake, "DELETE", &repo_path("issues/5/labels"), None).status,
        204
    );
    assert!(fake.labels(5).is_empty());
    assert_eq!(
        api(
            &fake,
            "POST",
            &repo_path("issues/404/labels"),
            Some(json!(["x"]))
        )
        .status,
        404
    );
}

#[test]
fn unknown_assignees_are_silently_ignored() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "Story", &[]);
    let assigned = api(
        &fake,
        "POST",
        &repo_path("issues/1/assignees"),
        Some(json!({"assignees": ["maverick-bot", "no-such-user"]})),
    );
    assert_eq!(assigned.status, 201);
    assert_eq!(assigned.json()["assignees"][0]["login"], "maverick-bot");
    assert_eq!(assigned.json()["assignees"].as_array().unwrap().len(), 1);
    assert_eq!(fake.assignees(1), ["maverick-bot"]);
    let removed = api(
        &fake,
        "DELETE",
        &repo_path("issues/1/assignees"),
        Some(json!({"assignees": ["maverick-bot"]})),
    );
    assert_eq!(removed.status, 200);
    assert!(removed.json()["assignee"].is_null());
    assert!(fake.assignees(1).is_empty());
}

// ---------------------------------------------------------------------------
// Comments, clock, lag

#[test]
fn comments_are_created_updated_and_deleted() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(3, "Story", &[]);
    let created = api(
        &fake,
        "POST",
        &repo_path("issues/3/comments"),
        Some(json!({"body": "claim"})),
    );
    let comment = created.json();
    let id = comment["id"].as_u64().unwrap();
    assert!(id > 1 << 31);
    assert_eq!(comment["user"]["login"], "maverick-bot");
    assert_eq!(comment["author_association"], "MEMBER");
    assert_eq!(created.header("location"), comment["url"].as_str());
    assert_eq!(comment["created_at"], comment["updated_at"]);
    // The Date header and created_at come from the same clock, to the second.
    let date = parse_http_date(created.header("date").unwrap()).unwrap();
    assert!((date - parse_rfc3339(comment["created_at"].as_str().unwrap()).unwrap()).abs() <= 1);

    fake.advance_clock(90);
    let path = repo_path(&format!("issues/comments/{id}"));
    let updated = api(&fake, "POST", &path, Some(json!({"body": "lease"}))).json();
    assert_eq!(updated["body"], "lease");
    assert_eq!(updated["created_at"], comment["created_at"]);
    let bumped = parse_rfc3339(updated["updated_at"].as_str().unwrap()).unwrap()
        - parse_rfc3339(comment["updated_at"].as_str().unwrap()).unwrap();
    assert!((90..=92).contains(&bumped), "updated_at moved {bumped}s");
    assert_eq!(fake.comments(3)[0].body, "lease");

    fake.add_user("rival", "COLLABORATOR");
    fake.set_authenticated_user("rival");
    let theirs = api(
        &fake,
        "POST",
        &repo_path("issues/3/comments"),
        Some(json!({"body": "mine"})),
    )
    .json();
    assert_eq!(theirs["user"]["login"], "rival");
    assert_eq!(theirs["author_association"], "COLLABORATOR");
    let stranger = fake.add_comment_as(3, "stranger", "forged claim");
    let listed = get(&fake, &repo_path("issues/3/comments")).json();
    assert_eq!(listed[2]["id"], stranger);
    assert_eq!(listed[2]["author_association"], "NONE");
    assert_eq!(get(&fake, &repo_path("issues/3")).json()["comments"], 3);

    assert_eq!(api(&fake, "DELETE", &path, None).status, 204);
    assert_eq!(get(&fake, &path).status, 404);
    assert_eq!(
        api(&fake, "PATCH", &path, Some(json!({"body": "x"}))).status,
        404
    );
    assert_eq!(
        fake.comments(3)
            .iter()
            .map(|c| c.user.as_str())
            .collect::<Vec<_>>(),
        ["rival", "stranger"]
    );
    assert_eq!(
        api(
            &fake,
            "POST",
            &repo_path("issues/99/comments"),
            Some(json!({"body": "x"}))
        )
        .status,
        404
    );
}

#[test]
fn the_date_header_follows_the_fakes_clock() {
    let fake = FakeGithub::start(OWNER, REPO);
    let before = parse_http_date(get(&fake, "/user").header("date").unwrap()).unwrap();
    fake.advance_clock(3600);
    let after = parse_http_date(get(&fake, "/user").header("date").unwrap()).unwrap();
    assert!(
        (3600..=3602).contains(&(after - before)),
        "moved {}s",
        after - before
    );
    assert_eq!(
        parse_rfc3339(&fake.now()).map(|now| (now - after).abs() <= 1),
        Some(true)
    );
}

#[test]
fn list_lag_hides_fresh_writes_until_the_clock_moves() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "Story", &["epic"]);
    fake.add_comment_as(1, "maverick-bot", "seeded before the lag");
    fake.set_list_lag(Duration::from_secs(5));

    let created = api(
        &fake,
        "POST",
        &repo_path("issues/1/comments"),
        Some(json!({"body": "claim"})),
    );
    assert_eq!(
        created.json()["body"],
        "claim",
        "the write's own answer is fresh"
    );
    let id = created.json()["id"].as_u64().unwrap();
    let labelled = api(
        &fake,
        "POST",
        &repo_path("issues/1/labels"),
        Some(json!(["claude-in-progress"])),
    );
    assert_eq!(
        label_names(&labelled.json()),
        ["epic", "claude-in-progress"]
    );

    let listed = get(&fake, &repo_path("issues/1/comments")).json();
    assert_eq!(
        listed.as_array().unwrap().len(),
        1,
        "the new comment is not listed yet"
    );
    assert_eq!(
        label_names(&get(&fake, &repo_path("issues/1")).json()["labels"]),
        ["epic"]
    );
    assert_eq!(
        label_names(&get(&fake, &repo_path("issues/1/labels")).json()),
        ["epic"]
    );
    assert!(get(&fake, &repo_path("issues?labels=claude-in-progress"))
        .json()
        .as_array()
        .unwrap()
        .is_empty());
    assert_eq!(fake.comments(1).len(), 2, "the truth has it");
    assert_eq!(
        get(&fake, &repo_path(&format!("issues/comments/{id}"))).status,
        200,
        "no get lag by default"
    );

    fake.advance_clock(5);
    assert_eq!(
        get(&fake, &repo_path("issues/1/comments")).json()[1]["id"],
        id
    );
    assert_eq!(
        numbers(&get(&fake, &repo_path("issues?labels=claude-in-progress")).json()),
        [1]
    );

    // An edit lags too: the list shows the old body until the lag has passed.
    api(
        &fake,
        "PATCH",
        &repo_path(&format!("issues/comments/{id}")),
        Some(json!({"body": "lease"})),
    );
    assert_eq!(
        get(&fake, &repo_path("issues/1/comments")).json()[1]["body"],
        "claim"
    );
    fake.set_get_lag(Duration::from_secs(2));
    assert_eq!(
        get(&fake, &repo_path(&format!("issues/comments/{id}"))).json()["body"],
        "claim"
    );
    fake.advance_clock(5);
    assert_eq!(
        get(&fake, &repo_path("issues/1/comments")).json()[1]["body"],
        "lease"
    );
    assert_eq!(
        get(&fake, &repo_path(&format!("issues/comments/{id}"))).json()["body"],
        "lease"
    );
}

// ---------------------------------------------------------------------------
// Protocol details

#[test]
fn etags_answer_304_without_spending_rate_limit() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "Story", &[]);
    let path = repo_path("issues/1/comments?per_page=100");
    let first = get(&fake, &path);
    let etag = first.header("etag").unwrap().to_string();
    assert!(etag.starts_with("W/\""), "{etag}");
    let remaining = |reply: &Reply| {
        reply
            .header("x-ratelimit-remaining")
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };

    let cached = api_with(&fake, "GET", &path, None, &[("If-None-Match", &etag)]);
    assert_eq!(cached.status, 304);
    assert!(cached.body.is_empty());
    assert_eq!(cached.header("etag"), Some(etag.as_str()));
    assert_eq!(remaining(&cached), remaining(&first), "a 304 is free");
    let again = get(&fake, &path);
    assert_eq!(remaining(&again), remaining(&first) - 1, "a 200 costs one");
    assert_eq!(
        again.header("etag"),
        Some(etag.as_str()),
        "same content, same etag"
    );

    api(
        &fake,
        "POST",
        &repo_path("issues/1/comments"),
        Some(json!({"body": "new"})),
    );
    let changed = api_with(&fake, "GET", &path, None, &[("If-None-Match", &etag)]);
    assert_eq!(changed.status, 200);
    assert_ne!(changed.header("etag"), Some(etag.as_str()));
    assert_eq!(changed.json().as_array().unwrap().len(), 1);
}

/// What the client's shared cache relies on, as GitHub behaves: every GET
/// answer carries a weak ETag (and cache headers), a single resource also a
/// `Last-Modified`; `If-None-Match` wins over `If-Modified-Since`; a 304 has
/// no body and is not counted; an issue's `updated_at` (so its ETag, and the
/// ETag of every list page it is on) moves with a new comment, a label or
/// an assignee, and answers to writes carry strong ETags.
#[test]
fn conditional_requests_answer_as_github_does() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "Story", &[]);
    fake.create_issue(2, "Other", &[]);
    let issue_path = repo_path("issues/1");
    let list_path = repo_path("issues?state=open&per_page=100");
    let first = get(&fake, &issue_path);
    let etag = first.header("etag").unwrap().to_string();
    assert!(etag.starts_with("W/\""), "{etag}");
    assert_eq!(
        first.header("cache-control"),
        Some("private, max-age=60, s-maxage=60")
    );
    assert_eq!(
        first.header("vary"),
        Some("Accept, Authorization, Cookie, X-GitHub-OTP, Accept-Encoding")
    );
    let modified = first.header("last-modified").unwrap().to_string();
    assert_eq!(
        parse_http_date(&modified),
        parse_rfc3339(first.json()["updated_at"].as_str().unwrap()),
        "Last-Modified is the issue's updated_at"
    );

    fake.reset_count();
    let by_date = api_with(
        &fake,
        "GET",
        &issue_path,
        None,
        &[("If-Modified-Since", &modified)],
    );
    assert_eq!(by_date.status, 304);
    assert!(by_date.body.is_empty() && by_date.header("content-type").is_none());
    assert_eq!(by_date.header("etag"), Some(etag.as_str()));
    // A stale ETag wins over a date that still matches.
    let both = api_with(
        &fake,
        "GET",
        &issue_path,
        None,
        &[
            ("If-None-Match", "W/\"0\""),
            ("If-Modified-Since", &modified),
        ],
    );
    assert_eq!(both.status, 200);
    assert_eq!(fake.not_modified_count(), 1);
    assert_eq!(fake.counted_requests(), 1, "the 304 was free, the 200 not");
    let recorded = fake.requests();
    assert!(!recorded[0].counted && recorded[1].counted);
    assert_eq!(
        recorded[0].if_modified_since.as_deref(),
        Some(modified.as_str())
    );

    // Lists have no Last-Modified: a date alone gets the whole list.
    let list = get(&fake, &list_path);
    let list_etag = list.header("etag").unwrap().to_string();
    assert!(list.header("last-modified").is_none());
    let dated = api_with(
        &fake,
        "GET",
        &list_path,
        None,
        &[("If-Modified-Since", "Fri, 01 Jan 2100 00:00:00 GMT")],
    );
    assert_eq!(dated.status, 200);
    let list_again = |fake: &FakeGithub, etag: &str| {
        api_with(fake, "GET", &list_path, None, &[("If-None-Match", etag)]).status
    };
    assert_eq!(list_again(&fake, &list_etag), 304);

    // A new comment on #2 moves its updated_at: its ETag and the list's change.
    fake.advance_clock(5);
    let before = get(&fake, &repo_path("issues/2"));
    api(
        &fake,
        "POST",
        &repo_path("issues/2/comments"),
        Some(json!({"body": "news"})),
    );
    let after = get(&fake, &repo_path("issues/2"));
    assert_ne!(after.json()["updated_at"], before.json()["updated_at"]);
    assert_ne!(after.header("etag"), before.header("etag"));
    assert_eq!(list_again(&fake, &list_etag), 200);
    let list_etag = get(&fake, &list_path).header("etag").unwrap().to_string();

    // So does a label; an answer to a write carries a strong ETag.
    fake.advance_clock(5);
    let labelled = api(
        &fake,
        "POST",
        &repo_path("issues/1/labels"),
        Some(json!({"labels": ["agent-wip"]})),
    );
    assert!(labelled.header("etag").unwrap().starts_with('"'));
    let relabelled = get(&fake, &issue_path);
    assert_ne!(relabelled.json()["updated_at"], first.json()["updated_at"]);
    assert_eq!(
        api_with(&fake, "GET", &issue_path, None, &[("If-None-Match", &etag)]).status,
        200
    );
    assert_eq!(list_again(&fake, &list_etag), 200);
    let list_etag = get(&fake, &list_path).header("etag").unwrap().to_string();

    // Editing a comment changes the comment list's ETag; the issue's only
    // where the fake is told edits touch issues (GitHub does not document it).
    let comments_path = repo_path("issues/2/comments");
    let comments = get(&fake, &comments_path);
    let id = comments.json()[0]["id"].as_u64().unwrap();
    fake.advance_clock(5);
    api(
        &fake,
        "PATCH",
        &repo_path(&format!("issues/comments/{id}")),
        Some(json!({"body": "edited"})),
    );
    let comments_etag = comments.header("etag").unwrap();
    let status = |path: &str, etag: &str| {
        api_with(&fake, "GET", path, None, &[("If-None-Match", etag)]).status
    };
    assert_eq!(status(&comments_path, comments_etag), 200);
    assert_eq!(list_again(&fake, &list_etag), 304);
    fake.set_comment_edits_touch_issues(true);
    fake.advance_clock(5);
    api(
        &fake,
        "PATCH",
        &repo_path(&format!("issues/comments/{id}")),
        Some(json!({"body": "edited again"})),
    );
    assert_eq!(list_again(&fake, &list_etag), 200);
}

#[test]
fn tokens_are_checked_and_never_echoed() {
    let fake = FakeGithub::start(OWNER, REPO);
    let token = fake.token().to_string();
    let five = Duration::from_secs(5);
    let missing = send(&fake, "GET", "/user", &[], None, five).unwrap();
    assert_eq!(missing.status, 401);
    assert_eq!(missing.json()["message"], "Bad credentials");
    let wrong = send(
        &fake,
        "GET",
        "/user",
        &[("Authorization", "Bearer ghp_wrong")],
        None,
        five,
    )
    .unwrap();
    assert_eq!(wrong.status, 401);
    let scheme_token = format!("token {token}");
    let with_token = send(
        &fake,
        "GET",
        "/user",
        &[("Authorization", &scheme_token)],
        None,
        five,
    )
    .unwrap();
    assert_eq!(with_token.status, 200);
    assert_eq!(get(&fake, "/user").status, 200);

    let requests = fake.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(
        requests
            .iter()
            .map(|r| (r.status, r.had_authorization))
            .collect::<Vec<_>>(),
        [(401, false), (401, true), (200, true), (200, true)]
    );
    for reply in [&missing, &wrong, &with_token] {
        assert!(
            !reply.body.contains(&token) && !reply.headers.iter().any(|(_, v)| v.contains(&token))
        );
    }
    fake.reset_count();
    assert_eq!(fake.request_count(), 0);
}

#[test]
fn bad_requests_get_githubs_error_bodies() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "Story", &[]);
    let authorization = format!("Bearer {}", fake.token());
    let malformed = send(
        &fake,
        "POST",
        &repo_path("issues/1/comments"),
        &[("Authorization", &authorization)],
        Some("{\"body\": "),
        Duration::from_secs(5),
    )
    .unwrap();
    assert_eq!(malformed.status, 400);
    assert_eq!(malformed.json()["message"], "Problems parsing JSON");

    let missing = api(
        &fake,
        "POST",
        &repo_path("issues/1/comments"),
        Some(json!({"text": "x"})),
    );
    assert_eq!(missing.status, 422);
    assert_eq!(missing.json()["errors"][0]["field"], "body");
    let huge = api(
        &fake,
        "POST",
        &repo_path("issues/1/comments"),
        Some(json!({"body": "x".repeat(65537)})),
    );
    assert_eq!(huge.status, 422);
    assert!(fake.comments(1).is_empty());

    let unknown_issue = get(&fake, &repo_path("issues/2"));
    assert_eq!(unknown_issue.status, 404);
    assert_eq!(
        unknown_issue.json(),
        json!({"message": "Not Found", "documentation_url": "https://docs.github.com/rest/issues/issues#get-an-issue", "status": "404"})
    );
    for path in [
        "/nope".to_string(),
        "/repos/someone/else/issues/1".to_string(),
        repo_path("milestones"),
    ] {
        let reply = get(&fake, &path);
        assert_eq!(reply.status, 404, "{path}");
        assert_eq!(reply.json()["message"], "Not Found");
    }
}

#[test]
fn check_runs_and_commit_status_report_ci() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.set_check_runs(
        SHA,
        &[
            ("build", "completed", Some("failure")),
            ("test", "queued", None),
        ],
    );
    fake.set_commit_status(SHA, "pending");
    let runs = get(&fake, &repo_path(&format!("commits/{SHA}/check-runs"))).json();
    let summary: Vec<(String, String, Value)> = runs["check_runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            (
                run["name"].as_str().unwrap().into(),
                run["status"].as_str().unwrap().into(),
                run["conclusion"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("build".into(), "completed".into(), json!("failure")),
            ("test".into(), "queued".into(), Value::Null)
        ]
    );
    assert_eq!(
        get(&fake, &repo_path(&format!("commits/{SHA}/status"))).json()["state"],
        "pending"
    );

    let unknown = "0123456789abcdef0123456789abcdef01234567";
    assert_eq!(
        get(&fake, &repo_path(&format!("commits/{unknown}/check-runs"))).json()["total_count"],
        0
    );
    let status = get(&fake, &repo_path(&format!("commits/{unknown}/status"))).json();
    assert_eq!(
        (status["state"].clone(), status["total_count"].clone()),
        (json!("pending"), json!(0))
    );
}

// ---------------------------------------------------------------------------
// Faults

#[test]
fn injected_failures_answer_then_recover() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "Story", &[]);
    fake.fail_next(2, 502);
    let post = || {
        api(
            &fake,
            "POST",
            &repo_path("issues/1/comments"),
            Some(json!({"body": "claim"})),
        )
    };
    let failed = post();
    assert_eq!(failed.status, 502);
    schema("basic-error.schema.json").assert_valid(&failed.json());
    assert_eq!(post().status, 502);
    assert!(
        fake.comments(1).is_empty(),
        "a plain failure writes nothing"
    );
    assert_eq!(post().status, 201);

    // GitHub sometimes commits a write and still answers 5xx; a retry duplicates it.
    fake.fail_next_after_commit(1, 502);
    assert_eq!(post().status, 502);
    assert_eq!(fake.comments(1).len(), 2);

    fake.fail_always(503);
    assert_eq!(get(&fake, "/user").status, 503);
    assert_eq!(get(&fake, "/user").status, 503);
    fake.clear_faults();
    assert_eq!(get(&fake, "/user").status, 200);
}

#[test]
fn rate_limits_answer_403_with_the_headers_to_wait_on() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.secondary_rate_limit_next(1, 7);
    let secondary = get(&fake, "/user");
    assert_eq!(secondary.status, 403);
    assert_eq!(secondary.header("retry-after"), Some("7"));
    insta::assert_snapshot!(
        "secondary_rate_limit_answer",
        serde_json::to_string_pretty(&secondary.json()).unwrap()
    );
    assert_eq!(get(&fake, "/user").status, 200);

    fake.primary_rate_limit_next(1, 120);
    let primary = get(&fake, "/user");
    assert_eq!(primary.status, 403);
    assert_eq!(primary.header("x-ratelimit-remaining"), Some("0"));
    let reset: i64 = primary
        .header("x-ratelimit-reset")
        .unwrap()
        .parse()
        .unwrap();
    let date = parse_http_date(primary.header("date").unwrap()).unwrap();
    assert!(
        (119..=121).contains(&(reset - date)),
        "reset {reset}, date {date}"
    );
    assert!(primary.json()["message"]
        .as_str()
        .unwrap()
        .starts_with("API rate limit exceeded"));
    let after = get(&fake, "/user");
    assert_eq!(after.status, 200);
    assert_ne!(after.header("x-ratelimit-remaining"), Some("0"));
}

/// GitHub's secondary limits, per token, on the fake's clock (which a
/// test moves): content-generating requests a minute and an hour, points a
/// minute, concurrent requests; each breach answered as GitHub documents.
#[test]
fn secondary_limits_answer_per_token_on_the_test_clock() {
    let clock = Clock::manual();
    let fake = FakeGithub::start_with_clock(OWNER, REPO, clock.clone());
    fake.create_issue(1, "Story", &[]);
    let limits = SecondaryLimits {
        points_per_minute: 1000,
        content_per_minute: 3,
        content_per_hour: 5,
        concurrent: 100,
        edits_are_content: true,
        unnamed: false,
    };
    fake.set_secondary_limits(Some(limits));
    let comment = |text: &str| {
        api(
            &fake,
            "POST",
            &repo_path("issues/1/comments"),
            Some(json!({ "body": text })),
        )
    };
    for n in 0..3 {
        assert_eq!(comment(&format!("c{n}")).status, 201);
    }
    // The fourth within the minute: 403, retry-after until the first leaves it.
    let limited = comment("c3");
    assert_eq!(limited.status, 403, "{}", limited.body);
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((59..=61).contains(&retry), "retry-after {retry}");
    assert!(limited.json()["message"]
        .as_str()
        .unwrap()
        .contains("secondary rate limit"));
    // Reads are not content; a comment edit is, under the strict reading.
    assert_eq!(get(&fake, &repo_path("issues/1")).status, 200);
    let id = fake.comments(1)[0].id;
    let edit = |text: &str| {
        api(
            &fake,
            "PATCH",
            &repo_path(&format!("issues/comments/{id}")),
            Some(json!({ "body": text })),
        )
    };
    assert_eq!(edit("edited").status, 403);
    assert_eq!(
        fake.comments(1).len(),
        3,
        "a limited request writes nothing"
    );

    // A minute later on the test clock (no test sleeps): two more, then the
    // hour's five are spent, answered with the reset to wait for.
    clock.advance(Duration::from_secs(retry)).unwrap();
    assert_eq!(comment("c3").status, 201);
    assert_eq!(comment("c4").status, 201);
    let hourly = comment("c5");
    assert_eq!(hourly.status, 403);
    assert_eq!(hourly.header("x-ratelimit-remaining"), Some("0"));
    let reset: i64 = hourly.header("x-ratelimit-reset").unwrap().parse().unwrap();
    let date = parse_http_date(hourly.header("date").unwrap()).unwrap();
    assert!(
        (3500..=3601).contains(&(reset - date)),
        "reset in {} s",
        reset - date
    );

    // The lenient reading lets comment edits through.
    fake.set_secondary_limits(Some(SecondaryLimits {
        edits_are_content: false,
        content_per_hour: 0,
        ..limits
    }));
    assert_eq!(edit("edited").status, 200);
    assert_eq!(comment("c6").status, 403);

    // Points: 5 a write, 1 a read; past the minute's, a 429 with retry-after.
    fake.set_secondary_limits(Some(SecondaryLimits {
        points_per_minute: 11,
        content_per_minute: 100,
        content_per_hour: 100,
        ..limits
    }));
    assert_eq!(comment("p1").status, 201);
    assert_eq!(comment("p2").status, 201);
    assert_eq!(get(&fake, "/user").status, 200);
    let points = get(&fake, "/user");
    assert_eq!(points.status, 429);
    assert!(points.header("retry-after").is_some());

    // c3, c4, the edit, p1 and p2 in one minute; the edit only strictly.
    assert_eq!(fake.secondary_peaks().content_per_minute, (5, 4));
}

/// Past the concurrent requests' limit, a bare 403 that names no time; a
/// client that sends again on the same connection before the time a limit
/// answer named is counted as not heeding it.
#[test]
fn concurrency_past_the_limit_is_refused_and_unheeded_answers_are_counted() {
    let clock = Clock::manual();
    let fake = FakeGithub::start_with_clock(OWNER, REPO, clock.clone());
    fake.create_issue(1, "Story", &[]);
    fake.set_secondary_limits(Some(SecondaryLimits {
        concurrent: 1,
        ..SecondaryLimits::github()
    }));
    fake.slow_next(1, Duration::from_secs(30));
    thread::scope(|scope| {
        let slow = scope.spawn(|| get(&fake, "/user").status);
        while fake.slowed_requests() < 1 {
            thread::sleep(Duration::from_millis(5));
        }
        let crowded = get(&fake, "/user");
        assert_eq!(crowded.status, 403, "{}", crowded.body);
        assert_eq!(crowded.header("retry-after"), None);
        assert_ne!(crowded.header("x-ratelimit-remaining"), Some("0"));
        clock.advance(Duration::from_secs(31)).unwrap();
        assert_eq!(slow.join().unwrap(), 200);
    });
    assert_eq!(fake.secondary_peaks().concurrent, 2);

    fake.set_secondary_limits(Some(SecondaryLimits {
        content_per_minute: 0,
        ..SecondaryLimits::github()
    }));
    fake.reset_count();
    let authority = fake.url().trim_start_matches("http://").to_string();
    let authorization = format!("Bearer {}", fake.token());
    let mut stream = TcpStream::connect(&authority).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let target = repo_path("issues/1/comments");
    let headers = [("Authorization", authorization.as_str())];
    for _ in 0..2 {
        write_request(
            &mut stream,
            &authority,
            "POST",
            &target,
            &headers,
            Some("{\"body\":\"x\"}"),
        )
        .unwrap();
        assert_eq!(read_reply(&mut reader).unwrap().status, 403);
    }
    let peaks = fake.secondary_peaks();
    assert_eq!((peaks.limit_answers, peaks.unheeded), (2, 1));
}

#[test]
fn slow_answers_outlast_a_client_timeout() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.slow_next(1, Duration::from_millis(600));
    let authorization = format!("Bearer {}", fake.token());
    let started = Instant::now();
    let timed_out = send(
        &fake,
        "GET",
        "/user",
        &[("Authorization", &authorization)],
        None,
        Duration::from_millis(100),
    );
    assert!(timed_out.is_err(), "the client gave up first");
    assert!(started.elapsed() < Duration::from_millis(550));
    let next = send(
        &fake,
        "GET",
        "/user",
        &[("Authorization", &authorization)],
        None,
        Duration::from_millis(500),
    );
    assert_eq!(next.unwrap().status, 200, "only the next request is slow");
}

// ---------------------------------------------------------------------------
// Transport and concurrency

#[test]
fn one_connection_serves_keep_alive_and_chunked_requests() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "Story", &[]);
    let authority = fake.url().trim_start_matches("http://").to_string();
    let authorization = format!("Bearer {}", fake.token());
    let mut stream = TcpStream::connect(&authority).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());

    write_request(
        &mut stream,
        &authority,
        "GET",
        "/user",
        &[("Authorization", &authorization)],
        None,
    )
    .unwrap();
    let first = read_reply(&mut reader).unwrap();
    assert_eq!(
        (first.status, first.header("connection")),
        (200, Some("keep-alive"))
    );

    let body = r#"{"body": "sent in chunks"}"#;
    let (head, tail) = body.split_at(10);
    let chunked = format!(
        "POST {} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: {authorization}\r\n\
         Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{head}\r\n{:x};ext=1\r\n{tail}\r\n0\r\n\r\n",
        repo_path("issues/1/comments"),
        head.len(),
        tail.len()
    );
    stream.write_all(chunked.as_bytes()).unwrap();
    let second = read_reply(&mut reader).unwrap();
    assert_eq!(second.status, 201, "{}", second.body);
    assert_eq!(fake.comments(1)[0].body, "sent in chunks");

    write_request(
        &mut stream,
        &authority,
        "GET",
        "/user",
        &[("Authorization", &authorization), ("Connection", "close")],
        None,
    )
    .unwrap();
    assert_eq!(
        read_reply(&mut reader).unwrap().header("connection"),
        Some("close")
    );
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest).unwrap();
    assert!(rest.is_empty(), "the server closed the connection");
}

#[test]
fn concurrent_comments_get_unique_ascending_ids() {
    let fake = FakeGithub::start(OWNER, REPO);
    fake.create_issue(1, "Epic", &[]);
    let created: Vec<u64> = thread::scope(|scope| {
        let workers: Vec<_> = (0..8)
            .map(|worker| {
                let fake = &fake;
                scope.spawn(move || {
                    (0..25)
                        .map(|index| {
                            let body = json!({"body": format!("worker {worker} comment {index}")});
                            let reply =
                                api(fake, "POST", &repo_path("issues/1/comments"), Some(body));
                            assert_eq!(reply.status, 201);
                            reply.json()["id"].as_u64().unwrap()
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|worker| worker.join().unwrap())
            .collect()
    });
    let unique: BTreeSet<u64> = created.iter().copied().collect();
    assert_eq!(unique.len(), 200);
    let mut listed = Vec::new();
    let mut next = Some(repo_path("issues/1/comments?per_page=100"));
    while let Some(target) = next {
        let reply = get(&fake, &target);
        listed.extend(
            reply
                .json()
                .as_array()
                .unwrap()
                .iter()
                .map(|c| c["id"].as_u64().unwrap()),
        );
        next = reply.link("next");
    }
    assert_eq!(
        listed,
        unique.into_iter().collect::<Vec<_>>(),
        "every comment once, ascending"
    );
}

#[test]
fn dropping_the_fake_stops_it() {
    let fake = FakeGithub::start(OWNER, REPO);
    let url = fake.url();
    let authority = url.trim_start_matches("http://").to_string();
    let mut idle = TcpStream::connect(&authority).unwrap();
    idle.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    drop(fake);
    let mut buffer = [0; 1];
    assert!(
        matches!(idle.read(&mut buffer), Ok(0) | Err(_)),
        "idle connections are closed"
    );
    let refused = TcpStream::connect(&authority).and_then(|mut stream| {
        stream.set_read_timeout(Some(Duration::from_secs(2)))?;
        stream.write_all(b"GET /user HTTP/1.1\r\nHost: x\r\n\r\n")?;
        stream.read(&mut buffer)
    });
    assert!(
        matches!(refused, Ok(0) | Err(_)),
        "no more answers after drop"
    );
}
