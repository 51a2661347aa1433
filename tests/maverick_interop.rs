//! Mixed teams (issue 13): git maverick and Maverick, the Python plugin, on
//! the same issues. Maverick is not installed: its comments are the hand-made
//! fixtures of `fixtures/maverick/`, planted on the surface the way its CLI
//! writes them (a small double below, built from the facts in SPEC.md §3),
//! and its verdict is a model of its rule: the holder is the instance of the
//! newest claim comment. Every test runs on both surfaces.

use crate::support::mav::markers::{parse_markers, Marker, MarkerKind};
use crate::support::mav::timefmt::Timestamp;
use crate::support::{Repo, Run, StoredComment, Surface, TestEnv};
use serde_json::{json, Value};

/// The Maverick instance of the fixtures: the first 10 hex digits of the
/// SHA-256 of `MAVERICK_SESSION`.
const MAVERICK: &str = "b21d80a410";
const MAVERICK_SESSION: &str = "maverick-session-7";
/// A second Maverick session's instance (`maverick-session-8`).
const MAVERICK_2: &str = "746d2ea6c0";
/// The GitHub login Maverick's `gh` writes as: a member, like the team.
const MAVERICK_LOGIN: &str = "dana";
const LABEL: &str = "claude-in-progress";
/// Past Maverick's ten-minute lease and git maverick's default ttl.
const PAST_A_LEASE: u64 = 11 * 60;

on_both_surfaces!(
    every_mixed_interleaving_ends_with_at_most_one_holder,
    a_session_running_both_tools_is_one_instance,
    a_lease_maverick_patched_over_a_git_maverick_comment_counts_for_maverick,
    a_holder_without_a_lease_lives_the_ttl_its_claim_declared,
    state_put_refuses_what_maverick_cannot_read,
    maverick_state_markers_read_and_update_in_place,
    a_comment_with_two_blocks_of_a_kind_reads_the_first,
);

fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/maverick/{name}.md", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The first block of `kind` in a comment, as Maverick reads it (a model
/// of its parser, written apart from the code under test).
fn maverick_reads(body: &str, kind: MarkerKind) -> Option<Marker> {
    parse_markers(body)
        .into_iter()
        .find(|m| match m {
            Ok(m) => m.kind == kind,
            Err(e) => e.kind() == kind,
        })?
        .ok()
}

/// Maverick's rule: the holder is the instance of the newest comment with a
/// claim, whoever wrote it.
fn maverick_holder(comments: &[StoredComment]) -> Option<String> {
    comments.iter().rev().find_map(|c| {
        maverick_reads(&c.body, MarkerKind::Claim)
            .and_then(|m| m.str_field("instance_id").map(str::to_owned))
    })
}

/// Maverick's CLI, as the facts of SPEC.md §3 describe what it writes.
struct MaverickCli<'a> {
    setup: &'a TestEnv,
    /// Labels are labels whoever sets them: set through this clone.
    labeller: &'a Repo<'a>,
    instance: &'static str,
}

impl MaverickCli<'_> {
    fn label(&self, issue: u64, verb: &str) {
        let n = issue.to_string();
        self.labeller
            .maverick(&["coord", "label", verb, &n, LABEL])
            .expect(0);
    }

    fn body(&self, name: &str, issue: u64) -> String {
        fixture(name)
            .replace(MAVERICK, self.instance)
            .replace("\"142\"", &format!("\"{issue}\""))
    }

    /// Claims `issue` (a takeover of `takeover_of` when given): label, a new
    /// claim comment, the lease upserted, a re-read. True when it won.
    fn claim(&self, issue: u64, takeover_of: Option<&str>) -> bool {
        self.label(issue, "add");
        let body = match takeover_of {
            Some(prior) => self.body("takeover", issue).replace(
                "\"takeover_of\": \"alice\"",
                &format!("\"takeover_of\": \"{prior}\""),
            ),
            None => self.body("claim", issue),
        };
        self.setup.add_comment(issue, MAVERICK_LOGIN, &body);
        self.upsert_lease(issue, "lease");
        self.holds(issue)
    }

    /// PATCHes the newest comment that carries a lease block, whoever wrote
    /// it; creates one when there is none.
    fn upsert_lease(&self, issue: u64, fixture_name: &str) -> u64 {
        let body = self.body(fixture_name, issue);
        let newest = self.setup.comments(issue).into_iter().rev().find(|c| {
            parse_markers(&c.body).iter().any(|m| match m {
                Ok(m) => m.kind == MarkerKind::Lease,
                Err(e) => e.kind() == MarkerKind::Lease,
            })
        });
        match newest {
            Some(c) => {
                self.setup.edit_comment(issue, c.id, &body);
                c.id
            }
            None => self.setup.add_comment(issue, MAVERICK_LOGIN, &body),
        }
    }

    fn release(&self, issue: u64) {
        self.setup
            .add_comment(issue, MAVERICK_LOGIN, &self.body("release", issue));
        self.label(issue, "remove");
    }

    fn holds(&self, issue: u64) -> bool {
        maverick_holder(&self.setup.comments(issue)).as_deref() == Some(self.instance)
    }
}

struct Team<'a> {
    setup: &'a TestEnv,
    alice: &'a Repo<'a>,
    carol: &'a Repo<'a>,
    maverick: MaverickCli<'a>,
    maverick_2: MaverickCli<'a>,
}

impl Team<'_> {
    fn alice(&self, args: &[&str], code: i32) {
        self.alice.maverick(args).expect(code);
    }

    /// What git maverick decides, read by a third instance.
    fn read(&self, issue: u64) -> Value {
        self.carol
            .maverick(&["coord", "read", &issue.to_string(), "--json"])
            .json()
    }

    fn alice_holds(&self, issue: u64) -> bool {
        let run = self
            .alice
            .maverick(&["coord", "read", &issue.to_string(), "--json"]);
        run.json()["decision"] == "ours"
    }
}

/// One interleaving and what both tools must make of it.
struct Row {
    name: &'static str,
    play: fn(&Team<'_>, u64),
    /// The holder git maverick names, and its generation and writer.
    git_holder: Option<&'static str>,
    generation: u64,
    writer: &'static str,
    /// The holder Maverick's rule names.
    maverick_holder: Option<&'static str>,
}

fn every_mixed_interleaving_ends_with_at_most_one_holder(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let setup = &env;
    let alice = setup.clone("alice");
    let carol = setup.clone("carol");
    let team = Team {
        setup,
        alice: &alice,
        carol: &carol,
        maverick: MaverickCli {
            setup,
            labeller: &carol,
            instance: MAVERICK,
        },
        maverick_2: MaverickCli {
            setup,
            labeller: &carol,
            instance: MAVERICK_2,
        },
    };
    let rows = [
        Row {
            name: "git maverick claims, then Maverick claims without seeing it",
            play: |t, n| {
                let n_ = n.to_string();
                t.alice(&["coord", "claim", &n_], 0);
                assert!(t.maverick.claim(n, None), "latest wins, to Maverick");
                // Its lease went over alice's lease comment; alice hears at
                // its next heartbeat.
                t.alice(&["coord", "heartbeat", &n_], 7);
            },
            git_holder: Some(MAVERICK),
            generation: 2,
            writer: "maverick",
            maverick_holder: Some(MAVERICK),
        },
        Row {
            name: "Maverick claims, then git maverick claims",
            play: |t, n| {
                assert!(t.maverick.claim(n, None));
                t.alice(&["coord", "claim", &n.to_string()], 4);
            },
            git_holder: Some(MAVERICK),
            generation: 1,
            writer: "maverick",
            maverick_holder: Some(MAVERICK),
        },
        Row {
            // The one race the two rules read differently: git maverick's
            // claim of the same generation lands after Maverick's, which
            // its guard did not see. Earliest wins to git maverick, so
            // alice withdraws; Maverick, re-reading later, names alice and
            // yields too. Nobody works on it twice; the label waits for
            // Maverick's lease to run out (then it is stale: a takeover).
            name: "Maverick claims; a git maverick claim that raced it lands after",
            play: |t, n| {
                assert!(t.maverick.claim(n, None));
                let scratch = n + 1000;
                t.alice(&["coord", "claim", &scratch.to_string()], 0);
                for c in t.setup.comments(scratch) {
                    let body = c
                        .body
                        .replace(&format!("\"{scratch}\""), &format!("\"{n}\""));
                    t.setup.add_comment(n, &c.author, &body);
                }
                t.alice(&["coord", "release", &scratch.to_string()], 0);
                // alice's settle (here its heartbeat) finds it lost.
                t.alice(&["coord", "heartbeat", &n.to_string()], 7);
            },
            git_holder: Some(MAVERICK),
            generation: 1,
            writer: "maverick",
            maverick_holder: Some("alice"),
        },
        Row {
            name: "git maverick takes over a stale Maverick claim",
            play: |t, n| {
                let n_ = n.to_string();
                assert!(t.maverick.claim(n, None));
                t.alice(&["coord", "claim", &n_], 4);
                t.setup.advance_clock(PAST_A_LEASE);
                t.alice(&["coord", "claim", &n_], 5);
                t.alice(&["coord", "takeover", &n_], 0);
            },
            git_holder: Some("alice"),
            generation: 2,
            writer: "git-maverick",
            maverick_holder: Some("alice"),
        },
        Row {
            name: "Maverick takes over a stale git maverick claim",
            play: |t, n| {
                let n_ = n.to_string();
                t.alice(&["coord", "claim", &n_], 0);
                t.setup.advance_clock(PAST_A_LEASE);
                assert!(t.maverick.claim(n, Some("alice")));
                t.alice(&["coord", "heartbeat", &n_], 7);
            },
            git_holder: Some(MAVERICK),
            generation: 2,
            writer: "maverick",
            maverick_holder: Some(MAVERICK),
        },
        Row {
            name: "git maverick releases, then Maverick claims",
            play: |t, n| {
                let n_ = n.to_string();
                t.alice(&["coord", "claim", &n_], 0);
                t.alice(&["coord", "release", &n_, "--reason", "merged"], 0);
                // Its lease goes over alice's release comment.
                assert!(t.maverick.claim(n, None));
                t.alice(&["coord", "claim", &n_], 4);
            },
            git_holder: Some(MAVERICK),
            generation: 2,
            writer: "maverick",
            maverick_holder: Some(MAVERICK),
        },
        Row {
            name: "Maverick releases, then git maverick claims",
            play: |t, n| {
                assert!(t.maverick.claim(n, None));
                t.maverick.release(n);
                t.alice(&["coord", "claim", &n.to_string()], 0);
            },
            git_holder: Some("alice"),
            generation: 2,
            writer: "git-maverick",
            maverick_holder: Some("alice"),
        },
        Row {
            name: "two Maverick instances race: the newest claim wins, as Maverick reads it",
            play: |t, n| {
                assert!(t.maverick.claim(n, None));
                assert!(t.maverick_2.claim(n, None));
                t.alice(&["coord", "claim", &n.to_string()], 4);
            },
            git_holder: Some(MAVERICK_2),
            generation: 2,
            writer: "maverick",
            maverick_holder: Some(MAVERICK_2),
        },
    ];
    for (i, row) in rows.iter().enumerate() {
        let issue = 201 + i as u64;
        let name = row.name;
        (row.play)(&team, issue);
        let comments = setup.comments(issue);
        let view = team.read(issue);
        let git_holder = view["holder"]["instance_id"].as_str();
        assert_eq!(git_holder, row.git_holder, "{name}: git maverick's holder");
        assert_eq!(view["generation"], row.generation, "{name}: generation");
        assert_eq!(view["holder"]["writer"], row.writer, "{name}: writer");
        let theirs = maverick_holder(&comments);
        assert_eq!(
            theirs.as_deref(),
            row.maverick_holder,
            "{name}: Maverick's holder"
        );
        // Each instance's own verdict: at most one thinks it holds the issue.
        let believers: Vec<&str> = [
            ("alice", team.alice_holds(issue)),
            (MAVERICK, team.maverick.holds(issue)),
            (MAVERICK_2, team.maverick_2.holds(issue)),
        ]
        .into_iter()
        .filter(|(_, holds)| *holds)
        .map(|(who, _)| who)
        .collect();
        assert!(believers.len() <= 1, "{name}: {believers:?} all hold it");
        if row.git_holder == row.maverick_holder {
            assert_eq!(
                believers,
                row.git_holder.into_iter().collect::<Vec<_>>(),
                "{name}: the holder both tools name is the one working"
            );
            // A live holder: its lease, wherever it sits, is its own.
            assert_eq!(view["decision"], "held", "{name}: {view}");
            assert_eq!(view["lease"]["instance_id"], json!(row.git_holder));
        } else {
            assert!(believers.is_empty(), "{name}: {believers:?}");
        }
    }
}

fn a_session_running_both_tools_is_one_instance(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let setup = &env;
    let carol = setup.clone("carol");
    let maverick = MaverickCli {
        setup,
        labeller: &carol,
        instance: MAVERICK,
    };
    assert!(maverick.claim(142, None));
    for var in ["CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID"] {
        let mut cmd = carol.maverick_command(&["coord", "read", "142", "--json"]);
        let run = Run::from_output(
            &["coord", "read"],
            cmd.env(var, MAVERICK_SESSION).output().unwrap(),
        );
        run.expect(0);
        let json = run.json();
        assert_eq!(json["instance_id"], MAVERICK, "{var}");
        assert_eq!(json["decision"], "ours", "{var}: Maverick's claim is ours");
    }
    // MAVERICK_INSTANCE_ID, Maverick's own variable, beats the session.
    let mut cmd = carol.maverick_command(&["coord", "read", "142", "--json"]);
    cmd.env("CLAUDE_SESSION_ID", MAVERICK_SESSION)
        .env("MAVERICK_INSTANCE_ID", "pinned-1");
    let run = Run::from_output(&["coord", "read"], cmd.output().unwrap());
    run.expect(4);
    assert_eq!(run.json()["instance_id"], "pinned-1");
}

/// Makes sure the issue has a record to comment on, on either surface.
fn touch(repo: &Repo<'_>, issue: u64) {
    let n = issue.to_string();
    for verb in ["add", "remove"] {
        repo.maverick(&["coord", "label", verb, &n, "touched"])
            .expect(0);
    }
}

/// The comment id of the issue's git maverick lease (the newest comment
/// with a lease block).
fn lease_comment(setup: &TestEnv, issue: u64) -> StoredComment {
    setup
        .comments(issue)
        .into_iter()
        .rev()
        .find(|c| maverick_reads(&c.body, MarkerKind::Lease).is_some())
        .expect("a lease comment")
}

fn a_lease_maverick_patched_over_a_git_maverick_comment_counts_for_maverick(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let setup = &env;
    let alice = setup.clone("alice");
    let carol = setup.clone("carol");
    let maverick = MaverickCli {
        setup,
        labeller: &carol,
        instance: MAVERICK,
    };
    alice.maverick(&["coord", "claim", "142"]).expect(0);
    let theirs = lease_comment(setup, 142);
    setup.advance_clock(PAST_A_LEASE);
    assert!(maverick.claim(142, Some("alice")));
    // Maverick's lease went over alice's comment, whole.
    let patched = lease_comment(setup, 142);
    assert_eq!(patched.id, theirs.id);
    assert_eq!(patched.body, fixture("lease"));
    // A heartbeat later it PATCHes the same comment again.
    maverick.upsert_lease(142, "lease-over-git-maverick");
    assert_eq!(
        setup.comments(142)[..]
            .iter()
            .find(|c| c.id == theirs.id)
            .unwrap()
            .body,
        fixture("lease-over-git-maverick")
    );

    let view = carol
        .maverick(&["coord", "read", "142", "--json"])
        .expect(4)
        .json();
    assert_eq!(view["holder"]["instance_id"], MAVERICK);
    assert_eq!(view["lease"]["instance_id"], MAVERICK);
    assert_eq!(view["lease"]["comment_id"], theirs.id);
    // Ten minutes from the PATCH, on the surface's clock.
    let now = Timestamp::parse(view["now"].as_str().unwrap()).unwrap();
    let expires = Timestamp::parse(view["expires_at"].as_str().unwrap()).unwrap();
    assert!(expires > now, "{view}");
    assert!(expires.since(now).as_secs() <= 600, "{view}");
    // alice's claim is over, and it never writes into Maverick's lease.
    alice.maverick(&["coord", "heartbeat", "142"]).expect(7);
    assert_eq!(
        lease_comment(setup, 142).body,
        fixture("lease-over-git-maverick")
    );

    // The other way round: a lease PATCHed into the holder's comment no
    // longer keeps the holder alive. alice holds #143; Maverick's lease
    // lands on alice's lease comment (its upsert on another claim of the
    // issue, say) and alice is judged by its claim alone.
    alice.maverick(&["coord", "claim", "143"]).expect(0);
    setup.advance_clock(300);
    maverick.upsert_lease(143, "lease");
    setup.advance_clock(301);
    let view = carol
        .maverick(&["coord", "read", "143", "--json"])
        .expect(5)
        .json();
    assert_eq!(view["holder"]["instance_id"], "alice");
    assert_eq!(view["lease"]["comment_id"], Value::Null, "{view}");
}

fn a_holder_without_a_lease_lives_the_ttl_its_claim_declared(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let setup = &env;
    let alice = setup.clone("alice");
    let carol = setup.clone("carol");
    let maverick = MaverickCli {
        setup,
        labeller: &carol,
        instance: MAVERICK,
    };
    // alice declares 20 minutes; her lease is then overwritten.
    alice
        .maverick(&["coord", "claim", "142", "--lease-ttl", "20m"])
        .expect(0);
    let claim = setup.comments(142)[0].body.clone();
    assert!(claim.contains("\"lease_ttl\": 1200"), "{claim}");
    maverick.upsert_lease(142, "lease");
    setup.advance_clock(PAST_A_LEASE);
    // Eleven minutes on, a reader whose own ttl is 10 minutes still sees
    // alice's 20.
    let view = carol
        .maverick(&["coord", "read", "142", "--json"])
        .expect(4)
        .json();
    assert_eq!(view["holder"]["instance_id"], "alice");

    // Maverick's claim with no lease yet lives Maverick's ten minutes from
    // the claim, whatever ttl the reader sets for itself.
    maverick.label(150, "add");
    setup.add_comment(150, MAVERICK_LOGIN, &maverick.body("claim", 150));
    let read = |ttl: &str| carol.maverick(&["coord", "read", "150", "--lease-ttl", ttl, "--json"]);
    assert_eq!(read("1h").expect(4).json()["holder"]["writer"], "maverick");
    setup.advance_clock(PAST_A_LEASE);
    read("1h").expect(5);
    read("1m").expect(5);
}

fn state_put_refuses_what_maverick_cannot_read(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let setup = &env;
    let alice = setup.clone("alice");
    let put = |kind: &str, payload: &str| {
        let path = alice.dir.join("payload.json");
        std::fs::write(&path, payload).unwrap();
        alice.maverick(&["state", "put", kind, "120", path.to_str().unwrap()])
    };
    for (kind, payload, named) in [
        ("state", r#"{"stories": {"142": "in_flight"}}"#, "`epic`"),
        ("state", r#"{"epic": 120}"#, "`stories`"),
        ("dag", r#"{"stories": {}}"#, "`epic`"),
        ("dag", r#"{"epic": 120}"#, "`stories`"),
        (
            "state",
            r#"{"epic": "the big one", "stories": {}}"#,
            "`epic`",
        ),
        ("state", r#"{"epic": 120, "stories": ["142"]}"#, "`stories`"),
    ] {
        let run = put(kind, payload);
        run.expect(2);
        assert!(
            run.stderr.starts_with("error: ")
                && run.stderr.contains(named)
                && run.stderr.contains(&format!("maverick-{kind}"))
                && run.stderr.contains("hint: "),
            "{kind} {payload}:\n{}",
            run.stderr
        );
        assert!(setup.comments(120).is_empty(), "{kind} {payload} wrote");
    }
    // What Maverick can read is written, with fields it does not know kept.
    put(
        "state",
        r#"{"epic": 120, "stories": {"142": "in_flight"}, "owner_note": "keep"}"#,
    )
    .expect(0);
    // An update that names no epic keeps the one there.
    put("state", r#"{"stories": {"142": "merged"}}"#).expect(0);
    let comments = setup.comments(120);
    assert_eq!(comments.len(), 1);
    let state = maverick_reads(&comments[0].body, MarkerKind::State).unwrap();
    assert_eq!(state.payload["epic"], 120);
    assert_eq!(state.payload["stories"], json!({"142": "merged"}));
    assert_eq!(state.payload["owner_note"], "keep");
    assert!(state.str_field("updated_at").is_some());
    // `--replace` is checked too: it would drop the epic.
    let path = alice.dir.join("payload.json");
    std::fs::write(&path, r#"{"stories": {}}"#).unwrap();
    alice
        .maverick(&[
            "state",
            "put",
            "state",
            "120",
            path.to_str().unwrap(),
            "--replace",
        ])
        .expect(2);
    assert_eq!(setup.comments(120)[0].body, comments[0].body);
}

fn maverick_state_markers_read_and_update_in_place(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let setup = &env;
    let alice = setup.clone("alice");
    touch(&alice, 120);
    for name in ["dag", "state", "bprop"] {
        setup.add_comment(120, MAVERICK_LOGIN, &fixture(name));
    }
    touch(&alice, 142);
    setup.add_comment(142, MAVERICK_LOGIN, &fixture("task-progress"));
    for (kind, issue, name) in [
        ("dag", "120", "dag"),
        ("state", "120", "state"),
        ("bprop", "120", "bprop"),
        ("task-progress", "142", "task-progress"),
    ] {
        let got = alice
            .maverick(&["state", "get", kind, issue, "--json"])
            .expect(0)
            .json();
        let want = maverick_reads(&fixture(name), MarkerKind::from_name(kind).unwrap()).unwrap();
        assert_eq!(got["marker"], Value::Object(want.payload), "{kind}");
    }
    // One story moves: Maverick's comment is PATCHed, in Maverick's shape.
    alice
        .maverick(&["state", "story", "120", "150", "in_flight"])
        .expect(0);
    let comments = setup.comments(120);
    assert_eq!(comments.len(), 3);
    let state = maverick_reads(&comments[1].body, MarkerKind::State).unwrap();
    assert_eq!(
        state.payload["stories"],
        json!({"140": "merged", "142": "in_flight", "150": "in_flight"})
    );
    assert!(comments[1]
        .body
        .starts_with("<!-- maverick epic-state snapshot -->\n\n"));
    // The dag keeps Maverick's shape: no preamble.
    let path = alice.dir.join("dag.json");
    std::fs::write(&path, r#"{"stories": {"151": {"deps": ["150"]}}}"#).unwrap();
    alice
        .maverick(&["state", "put", "dag", "120", path.to_str().unwrap()])
        .expect(0);
    let dag = &setup.comments(120)[0].body;
    assert!(dag.starts_with("```maverick-dag\n"), "{dag}");
    assert_eq!(
        maverick_reads(dag, MarkerKind::Dag).unwrap().payload["epic"],
        120
    );
}

fn a_comment_with_two_blocks_of_a_kind_reads_the_first(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let setup = &env;
    let alice = setup.clone("alice");
    let carol = setup.clone("carol");
    let maverick = MaverickCli {
        setup,
        labeller: &carol,
        instance: MAVERICK,
    };
    // A claim comment that quotes another claim after its own.
    maverick.label(142, "add");
    let second = fixture("claim").replace(MAVERICK, "mallory-0001");
    let id = setup.add_comment(
        142,
        MAVERICK_LOGIN,
        &format!("{}\nAs mallory once wrote:\n\n{second}", fixture("claim")),
    );
    let view = alice
        .maverick(&["coord", "read", "142", "--json"])
        .expect(4)
        .json();
    assert_eq!(view["holder"]["instance_id"], MAVERICK);
    assert_eq!(view["holder"]["comment_id"], id);

    // Two state blocks: both tools read the first, and an update goes there.
    let first = fixture("state");
    let other = first.replace("\"140\": \"merged\"", "\"140\": \"ejected\"");
    touch(&alice, 120);
    setup.add_comment(120, MAVERICK_LOGIN, &format!("{first}\n{other}"));
    let got = alice
        .maverick(&["state", "get", "state", "120", "--json"])
        .expect(0)
        .json();
    assert_eq!(got["marker"]["stories"]["140"], "merged");
    alice
        .maverick(&["state", "story", "120", "150", "merged"])
        .expect(0);
    let body = setup.comments(120)[0].body.clone();
    let blocks: Vec<Marker> = parse_markers(&body).into_iter().flatten().collect();
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].payload["stories"]["150"], "merged");
    assert_eq!(blocks[0].payload["stories"]["140"], "merged");
    assert_eq!(blocks[1].payload["stories"]["140"], "ejected", "left alone");
}
