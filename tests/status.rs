//! `git maverick status` end to end: the real binary, real clones of a
//! bare origin, on both surfaces (`on_surfaces!`).

use crate::support::json_schema;

use std::io::{BufRead as _, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::screen::{normalise, screens};

/// What a person sees, with the table's column gaps cut to two spaces: the
/// padding follows the widest cell, and a duration's width ("9s", "10s")
/// changes with how long a test took, which the snapshot shows as [DUR].
/// Alignment itself is asserted on the raw output
/// (`colour_marks_the_rows_that_need_a_person_and_columns_line_up`).
fn screen(env: &TestEnv, run: &Run) -> String {
    unpadded(&crate::support::screen::screen(env, run))
}

fn screen_naming(env: &TestEnv, run: &Run, names: &[(&str, &str)]) -> String {
    unpadded(&crate::support::screen::screen_naming(env, run, names))
}
use crate::support::{Repo, Run, Surface, TestEnv};
use serde_json::{json, Value};

const EPIC: u64 = 123;
const BRANCH: &str = "maverick/141-parser";
const PULL: u64 = 901;

const FIVE_TASKS: &str = "\
Parse marker blocks
Upsert markers in place
Verify after writing
Document the format
Release it
";

/// The status schema, validated with the suite's validator.
fn schema() -> json_schema::Schema {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/status.schema.json");
    let text = std::fs::read_to_string(&path).expect("schemas/status.schema.json exists");
    let value: Value = serde_json::from_str(&text).expect("the schema is JSON");
    assert_eq!(
        value["$schema"], "https://json-schema.org/draft/2020-12/schema",
        "a draft 2020-12 schema"
    );
    json_schema::Schema::from_value("status.schema.json", value)
}

fn input_file(s: &TestEnv, name: &str, text: &str) -> String {
    let path = s.path().join(name);
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_owned()
}

fn put(s: &TestEnv, repo: &Repo<'_>, kind: &str, issue: u64, payload: Value) {
    let file = input_file(s, &format!("{kind}-{issue}.json"), &payload.to_string());
    repo.maverick(&["state", "put", kind, &issue.to_string(), &file])
        .expect(0);
}

/// The team: alpha (the instance looking) holds #141 with 2/5 tasks done
/// and its branch pushed (on GitHub, with a pull request whose CI fails);
/// bravo's lease on #142 went stale; #143 is blocked by #141; charlie holds
/// a dispatch claim on #144; #145 waits; #140 is merged and #146 ejected.
/// All of them stories of epic #123.
struct Team<'a> {
    alpha: Repo<'a>,
    bravo: Repo<'a>,
    charlie: Repo<'a>,
}

fn team(s: &TestEnv) -> Team<'_> {
    let alpha = s.clone("alpha");
    let bravo = s.clone("bravo");
    let charlie = s.clone("charlie");
    put(
        s,
        &alpha,
        "dag",
        EPIC,
        json!({"epic": EPIC, "stories": {
            "140": {"deps": []},
            "141": {"deps": ["140"]},
            "142": {"deps": ["140"]},
            "143": {"deps": ["141"]},
            "144": {"deps": []},
            "145": {"deps": ["142", "143"]},
            "146": {"deps": []},
        }}),
    );
    put(
        s,
        &alpha,
        "state",
        EPIC,
        json!({"epic": EPIC, "stories": {"140": "merged", "146": "ejected"}}),
    );
    alpha.maverick(&["coord", "read", "140"]);
    s.close(&alpha, 140);

    stale_then_live(s, &alpha, &bravo);
    alpha.git(&["switch", "--quiet", "-c", BRANCH]);
    let head = alpha.commit_file("src/parser.rs", "// parser\n", "feat(parser): start");
    alpha.git(&["push", "--quiet", "origin", BRANCH]);
    let tasks = input_file(s, "tasks.md", FIVE_TASKS);
    alpha
        .maverick(&["task", "init", "141", &tasks, "--branch", BRANCH])
        .expect(0);
    alpha.maverick(&["task", "check", "141", "1"]).expect(0);
    alpha.maverick(&["task", "check", "141", "2"]).expect(0);
    if s.name() == "github" {
        let fake = s.github();
        fake.create_pull_from(PULL, "Parser", &[], BRANCH, &head);
        fake.set_check_runs(
            &head,
            &[
                ("lint", "completed", Some("success")),
                ("test", "completed", Some("failure")),
            ],
        );
    }

    alpha
        .maverick(&["coord", "block", "143", "--by", "141"])
        .expect(0);
    alpha
        .maverick(&["coord", "label", "add", "144", "agent-ready"])
        .expect(0);
    charlie.maverick(&["dispatch"]).expect(0);
    Team {
        alpha,
        bravo,
        charlie,
    }
}

/// bravo claims #142 and its lease runs out (the surface's clock moves 14
/// minutes past its ttl); then alpha claims #141, live.
fn stale_then_live(s: &TestEnv, alpha: &Repo<'_>, bravo: &Repo<'_>) {
    bravo
        .maverick(&["coord", "claim", "142", "--branch", "maverick/142-lexer"])
        .expect(0);
    s.advance_clock(600 + 14 * 60 + 5);
    alpha
        .maverick(&["coord", "claim", "141", "--branch", BRANCH])
        .expect(0);
}

/// The word after the first `before` in `text`: a duration the screen's
/// normaliser shows as `[DUR]`, for a test that knows what it must be.
fn word_after<'a>(text: &'a str, before: &str) -> Option<&'a str> {
    text.split(before).nth(1)?.split_whitespace().next()
}

fn issue_numbers(json: &Value) -> Vec<u64> {
    json["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["issue"].as_u64().unwrap())
        .collect()
}

fn row(json: &Value, issue: u64) -> Value {
    json["issues"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["issue"] == issue)
        .cloned()
        .unwrap_or_else(|| panic!("no row for #{issue} in {json:#}"))
}

fn the_screen_puts_what_needs_a_person_first(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let t = team(s);
    // Half a minute passes, so alpha's ten-minute lease has 9m and some
    // seconds left however fast the setup ran (in the same second as the
    // claim, it showed "10m left").
    s.advance_clock(30);
    let run = t.alpha.maverick(&["status"]);
    // What needs a person first: the stale lease (and on GitHub, alpha's
    // failing CI), each marked; then live work, then what waits; a free
    // issue (#145) is not a row.
    insta::assert_snapshot!(format!("status_screen_{}", s.name()), screen(s, &run));
    // The durations the snapshot shows as [DUR]: bravo's lease 14 minutes
    // past its ttl, alpha's with 9 minutes left.
    assert_eq!(word_after(&run.stdout, "stale for "), Some("14m"));
    assert_eq!(word_after(&run.stdout, "lease "), Some("9m"));

    // Another instance sees the same team, with itself marked.
    let seen_by_bravo = t.bravo.maverick(&["status"]);
    insta::assert_snapshot!(
        format!("status_screen_seen_by_bravo_{}", s.name()),
        screen(s, &seen_by_bravo)
    );
}

fn json_validates_against_the_schema(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let t = team(s);
    let schema = schema();
    let json = t.alpha.maverick(&["--json", "status"]).expect(0).json();
    schema.assert_valid(&json);
    assert_eq!(json["schema_version"], 1);
    assert_eq!(json["instance_id"], "alpha");
    assert_eq!(json["surface"], s.name());
    let order = issue_numbers(&json);
    // What needs a person first (the stale lease; on GitHub alpha's failing
    // CI too), then live work, then what waits.
    assert_eq!(order, [142, 141, 144, 143]);
    let ours = row(&json, 141);
    assert_eq!(ours["state"], "ours");
    assert_eq!(ours["holder"]["instance_id"], "alpha");
    assert_eq!(ours["holder"]["ours"], true);
    assert_eq!(ours["generation"], 1);
    assert_eq!(ours["lease"]["live"], true);
    assert_eq!(ours["branch"]["name"], BRANCH);
    assert_eq!(
        ours["branch"]["head"].as_str().unwrap(),
        s.origin_head(BRANCH).unwrap()
    );
    assert_eq!(ours["tasks"]["done"], 2);
    assert_eq!(ours["tasks"]["total"], 5);
    assert_eq!(ours["tasks"]["next_task"]["number"], 3);
    let stale = row(&json, 142);
    assert_eq!(stale["state"], "stale");
    assert_eq!(stale["lease"]["live"], false);
    assert_eq!(
        stale["lease"]["takeover"],
        "git maverick coord takeover 142"
    );
    assert_eq!(stale["attention"], json!(["stale lease"]));
    assert_eq!(row(&json, 143)["blocked_by"], json!([141]));
    let dispatched = row(&json, 144);
    assert_eq!(dispatched["dispatch"]["instance_id"], "charlie");
    assert_eq!(dispatched["dispatch"]["verdict"], "holds");
    assert_eq!(json["dispatch"]["used"], 1);
    assert_eq!(json["dispatch"]["holders"][0]["issue"], 144);
    if s.name() == "github" {
        assert_eq!(ours["pull"]["number"], PULL);
        assert_eq!(ours["pull"]["ci"], "failure");
        assert_eq!(ours["attention"], json!(["CI failing"]));
        assert_eq!(json["totals"]["needs_attention"], 2);
    } else {
        assert_eq!(ours["pull"], Value::Null);
        assert_eq!(json["totals"]["needs_attention"], 1);
    }
    assert_eq!(
        json["totals"],
        json!({"issues": 4, "ours": 1, "held": 0, "stale": 1, "lapsed": 0, "blocked": 1, "orphan": 0, "pull": 0,
               "dispatch": 1, "needs_attention": json["totals"]["needs_attention"]})
    );

    // With an epic, and from each instance's side, the schema holds too.
    let with_epic = t
        .charlie
        .maverick(&["--json", "status", "--epic", "123"])
        .expect(0)
        .json();
    schema.assert_valid(&with_epic);
    let mine = t
        .bravo
        .maverick(&["--json", "status", "--mine"])
        .expect(0)
        .json();
    schema.assert_valid(&mine);
    // bravo's own lease lapsed: lost as anyone's is (`coord read` exits 5),
    // so its row is `lapsed` and marked, with the command that takes it back.
    let own = row(&mine, 142);
    assert_eq!(own["state"], "lapsed", "{own:#}");
    assert_eq!(own["holder"]["ours"], true);
    assert_eq!(own["lease"]["takeover"], "git maverick coord claim 142");
    assert_eq!(
        own["attention"],
        json!(["your lease lapsed: anyone may take it over"])
    );
    assert_eq!(mine["totals"]["lapsed"], 1);
    // The schema is no rubber stamp.
    let mut broken = json.clone();
    broken["issues"][0]["state"] = json!("sleeping");
    assert!(schema.validate(&broken).is_err());
    let mut broken = json.clone();
    broken["issues"][0]
        .as_object_mut()
        .unwrap()
        .remove("holder");
    assert!(schema.validate(&broken).is_err());
}

fn mine_shows_only_this_instances_claims(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let t = team(s);
    let alpha = t
        .alpha
        .maverick(&["--json", "status", "--mine"])
        .expect(0)
        .json();
    assert_eq!(issue_numbers(&alpha), [141]);
    assert_eq!(alpha["mine"], true);
    let bravo = t
        .bravo
        .maverick(&["--json", "status", "--mine"])
        .expect(0)
        .json();
    assert_eq!(issue_numbers(&bravo), [142]);
    let charlie = t
        .charlie
        .maverick(&["--json", "status", "--mine"])
        .expect(0)
        .json();
    assert_eq!(issue_numbers(&charlie), [144]);
    assert_eq!(charlie["dispatch"]["holders"][0]["ours"], true);
    let charlies = t.charlie.maverick(&["status", "--mine"]);
    let nobody = s.clone("delta");
    let nobodys = nobody.maverick(&["status", "--mine"]);
    insta::assert_snapshot!(
        format!("status_mine_{}", s.name()),
        screens(&[
            ("git maverick status --mine (charlie)", screen(s, &charlies)),
            ("git maverick status --mine (delta)", screen(s, &nobodys)),
        ])
    );
}

fn epic_lists_stories_in_dag_order_by_wave(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let t = team(s);
    let json = t
        .alpha
        .maverick(&["--json", "status", "--epic", "#123"])
        .expect(0)
        .json();
    let waves: Vec<Vec<u64>> = json["epic"]["waves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            w["stories"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["issue"].as_u64().unwrap())
                .collect()
        })
        .collect();
    assert_eq!(
        waves,
        [vec![140, 144, 146], vec![141, 142], vec![143], vec![145]]
    );
    let states: Vec<(u64, String)> = json["epic"]["waves"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["stories"].as_array().unwrap().clone())
        .map(|s| {
            (
                s["issue"].as_u64().unwrap(),
                s["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        states,
        [
            (140, "merged"),
            (144, "pending"),
            (146, "ejected"),
            (141, "in_flight"),
            (142, "in_flight"),
            (143, "blocked"),
            (145, "pending"),
        ]
        .map(|(n, s)| (n, s.to_owned()))
    );

    let run = t.alpha.maverick(&["status", "--epic", "123"]);
    run.expect(0);
    let epic: Vec<&str> = run
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("epic #123"))
        .collect();
    assert_eq!(
        epic,
        [
            "epic #123: 7 stories in 4 waves",
            "wave 1",
            "  #140 merged",
            "  #144 pending",
            "  #146 ejected",
            "wave 2",
            if s.name() == "github" {
                "  #141 in flight by alpha (you), after #140, tasks 2/5, PR #901 CI failure"
            } else {
                "  #141 in flight by alpha (you), after #140, tasks 2/5"
            },
            "  #142 in flight by bravo (stale), after #140",
            "wave 3",
            "  #143 blocked, after #141, blocked by #141",
            "wave 4",
            "  #145 pending, after #142 #143",
        ]
    );

    // Not an epic: a clear error and the way out.
    let run = t.alpha.maverick(&["status", "--epic", "141"]);
    insta::assert_snapshot!("status_of_an_issue_that_is_no_epic", screen(s, &run));
}

fn dot_draws_the_epic_and_svg_renders_it(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let t = team(s);
    let run = t
        .alpha
        .maverick(&["status", "--epic", "123", "--format", "dot"]);
    run.expect(0);
    // The same picture from either surface.
    insta::assert_snapshot!("status_dot", run.stdout);

    let svg = t
        .alpha
        .maverick(&["status", "--epic", "123", "--format", "svg"]);
    if graphviz_installed() {
        svg.expect(0);
        assert!(svg.stdout.contains("<svg"), "{}", svg.screen());
        for node in ["#140", "#141", "#145", "alpha (you)", "wave 4"] {
            assert!(svg.stdout.contains(node), "{node} missing from the SVG");
        }
    }
    // Without graphviz on PATH, whatever the machine has: the way out.
    let mut cmd = t
        .alpha
        .command(&["status", "--epic", "123", "--format", "svg"]);
    let git_dir = std::path::Path::new(
        &String::from_utf8(
            std::process::Command::new("sh")
                .args(["-c", "dirname \"$(command -v git)\""])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap()
        .trim()
        .to_owned(),
    )
    .to_owned();
    let only_git = s.path().join("only-git");
    std::fs::create_dir_all(&only_git).unwrap();
    std::os::unix::fs::symlink(git_dir.join("git"), only_git.join("git")).unwrap();
    cmd.env("PATH", &only_git);
    let out = Run::from_output(&["status"], cmd.output().unwrap());
    if !graphviz_installed() {
        assert_eq!(screen(s, &svg), screen(s, &out));
    }

    // DOT needs an epic; a usage error says how.
    let run = t.alpha.maverick(&["status", "--format", "dot"]);
    insta::assert_snapshot!(
        "status_svg_without_graphviz_and_dot_without_an_epic",
        screens(&[
            (
                "git maverick status --epic 123 --format svg (no dot on PATH)",
                screen(s, &out)
            ),
            ("git maverick status --format dot", screen(s, &run)),
        ])
    );
}

fn graphviz_installed() -> bool {
    std::process::Command::new("dot")
        .arg("-V")
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Spawns `status ARGS` with piped stdout; lines arrive on the receiver.
/// A watch's screen with each column gap cut to two spaces: its durations
/// depend on how long a round took, and a column is as wide as its widest
/// duration. (How columns line up is
/// `colour_marks_the_rows_that_need_a_person_and_columns_line_up`'s.)
fn unpadded(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for piece in text.split("   ") {
        if !out.is_empty() && !out.ends_with("  ") {
            out.push_str("  ");
        }
        out.push_str(piece.trim_start_matches(' '));
    }
    out
}

fn spawn_watch(repo: &Repo<'_>, args: &[&str]) -> (Watcher, mpsc::Receiver<String>) {
    let mut child = repo
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    (Watcher(child), rx)
}

/// A spawned `status --watch`, killed should the test fail before it
/// interrupts it.
struct Watcher(Child);

impl Drop for Watcher {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The watch interval the tests give: real time never brings a round
/// within a test; moving the clock does.
const WATCH_SECS: u64 = 60;

/// Collects the lines of `rounds` rounds of a `status --watch` (a round
/// ends with a line that satisfies `ends_round`), moving the clock one
/// interval on after each round but the last: the next round comes when
/// its time does.
fn watch_rounds(
    s: &TestEnv,
    rx: &mpsc::Receiver<String>,
    rounds: usize,
    ends_round: impl Fn(&str) -> bool,
) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut lines = Vec::new();
    let mut done = 0;
    while done < rounds {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) => {
                if ends_round(&line) {
                    done += 1;
                    if done < rounds {
                        s.advance_clock(WATCH_SECS);
                    }
                }
                lines.push(line);
            }
            Err(_) => panic!("fewer than {rounds} rounds; got:\n{}", lines.join("\n")),
        }
    }
    lines
}

fn interrupt(watcher: &mut Watcher) -> i32 {
    let rc = unsafe { libc::kill(watcher.0.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(rc, 0);
    watcher
        .0
        .wait()
        .unwrap()
        .code()
        .expect("exited, not killed")
}

fn watch_redraws_until_ctrl_c(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let t = team(s);
    let (mut child, rx) = spawn_watch(&t.alpha, &["status", "--watch", "1m"]);
    let header = format!("{} surface, ", s.name());
    let lines = watch_rounds(s, &rx, 2, str::is_empty);
    // Not a terminal: plain appended blocks, no escape sequences.
    assert!(lines.iter().all(|l| !l.contains('\x1b')));
    let blocks: Vec<&[String]> = lines.split(|l| l.is_empty()).collect();
    assert!(blocks.len() >= 2);
    for block in &blocks[..2] {
        assert!(block[0].starts_with(&header), "{block:?}");
    }
    insta::assert_snapshot!(
        format!("status_watch_{}", s.name()),
        unpadded(&normalise(s, &(lines.join("\n") + "\n")))
    );
    // A change shows in the next block.
    t.alpha
        .maverick(&["coord", "unblock", "143", "--by", "141"])
        .expect(0);
    s.advance_clock(WATCH_SECS);
    let next = watch_rounds(s, &rx, 1, str::is_empty);
    assert!(next.iter().any(|l| l.starts_with("3 issues")), "{next:#?}");
    assert_eq!(interrupt(&mut child), 130, "Ctrl-C ends the watch with 130");

    // --json: one object a line, each valid.
    let (mut child, rx) = spawn_watch(&t.alpha, &["--json", "status", "--watch", "1m"]);
    let lines = watch_rounds(s, &rx, 2, |l| l.starts_with('{'));
    let schema = schema();
    for line in &lines {
        schema.assert_valid(&serde_json::from_str(line).unwrap());
    }
    assert_eq!(interrupt(&mut child), 130);
}

/// On a terminal (a real pseudo-terminal), each round homes the cursor and
/// clears the screen: a redraw in place.
fn watch_redraws_in_place_on_a_terminal(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    use std::io::Read as _;
    use std::os::fd::FromRawFd as _;
    let t = team(s);
    let (mut master, mut slave) = (0, 0);
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    // The child gets the slave as its stdout only, never the master.
    for fd in [master, slave] {
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    let slave = unsafe { std::fs::File::from_raw_fd(slave) };
    let mut master = unsafe { std::fs::File::from_raw_fd(master) };
    let mut child = Watcher(
        t.alpha
            .command(&["status", "--watch", "1m"])
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    drop(slave);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    let clear = "\x1b[H\x1b[2J";
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut seen = String::new();
    let round_end = "every 1m; Ctrl-C to stop";
    // Two rounds, the clock moved on one interval after the first.
    while seen.matches(round_end).count() < 2 {
        let chunk = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|_| panic!("fewer than 2 redraws:\n{seen}"));
        let before = seen.matches(round_end).count();
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if before == 0 && seen.matches(round_end).count() > 0 {
            s.advance_clock(WATCH_SECS);
        }
    }
    let rounds: Vec<String> = seen
        .split(clear)
        .skip(1)
        .map(|round| round.replace("\r\n", "\n"))
        .collect();
    assert_eq!(rounds.len(), 2, "{seen}");
    // Each redraw in place is the whole screen, ending with the interval.
    for round in &rounds {
        assert!(round.trim_end().ends_with(round_end), "{round:?}");
    }
    insta::assert_snapshot!(
        format!("status_watch_on_a_terminal_{}", s.name()),
        unpadded(&normalise(
            s,
            &rounds.join("[cursor home, screen cleared]\n")
        ))
    );
    assert_eq!(interrupt(&mut child), 130);
}

fn a_head_moved_behind_the_holders_back_is_a_collision(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let t = team(s);
    // Before: alpha's own plain push is no collision.
    let before = t.alpha.maverick(&["--json", "status"]).expect(0).json();
    let expected = if s.name() == "github" {
        json!(["CI failing"])
    } else {
        json!([])
    };
    assert_eq!(row(&before, 141)["attention"], expected);
    // bravo pushes onto alpha's branch, around every guard.
    t.bravo.git(&["fetch", "--quiet", "origin"]);
    t.bravo.git(&["switch", "--quiet", BRANCH]);
    let foreign = t
        .bravo
        .commit_file("src/parser.rs", "// rewritten\n", "fix(parser): mine now");
    t.bravo.git(&["push", "--quiet", "origin", BRANCH]);

    let json = t.alpha.maverick(&["--json", "status"]).expect(0).json();
    let ours = row(&json, 141);
    let collision = format!(
        "collision: {BRANCH} moved on the remote to {} behind this writer's back",
        &foreign[..7]
    );
    let mut attention = vec![json!(collision)];
    attention.extend(expected.as_array().unwrap().iter().cloned());
    assert_eq!(ours["attention"], json!(attention), "{ours:#}");
    assert_eq!(ours["branch"]["head"], foreign.as_str());
    let run = t.alpha.maverick(&["status"]);
    insta::assert_snapshot!(
        format!("status_after_a_collision_{}", s.name()),
        screen_naming(s, &run, &[(&foreign[..7], "[foreign]")])
    );
    // It is alpha's branch: bravo, who holds nothing there, sees no collision.
    let theirs = t.bravo.maverick(&["--json", "status"]).expect(0).json();
    assert_eq!(row(&theirs, 141)["attention"], expected);
}

fn one_git_fetch_per_view(surface: Surface) {
    let s = &TestEnv::with_surface(surface);
    let t = team(s);
    let trace = s.path().join("trace.txt");
    let mut cmd = t.alpha.command(&["status", "--epic", "123"]);
    cmd.env("GIT_TRACE", &trace);
    let out = Run::from_output(&["status"], cmd.output().unwrap());
    out.expect(0);
    let trace = std::fs::read_to_string(&trace).unwrap();
    // The git commands maverick ran (`built-in: git ...` lines of the trace).
    let commands: Vec<&str> = trace
        .lines()
        .filter_map(|l| l.split_once("built-in: ").map(|(_, command)| command))
        .collect();
    let fetches: Vec<&str> = commands
        .iter()
        .copied()
        .filter(|c| c.starts_with("git fetch "))
        .collect();
    // The one fetch brings the branches too (and on git, the surface's
    // refs: one per issue, and the old single ref a migration reads).
    let surface_refs = if s.name() == "git" {
        " '+refs/maverick/issue/*:refs/maverick-cache/origin/issue/*' \
         '+refs/maverick/issues*:refs/maverick-cache/origin/issues*'"
    } else {
        ""
    };
    assert_eq!(
        fetches,
        [format!(
            "git fetch --no-tags --prune --no-write-fetch-head --quiet --no-recurse-submodules \
             --no-auto-maintenance --end-of-options origin \
             '+refs/heads/*:refs/remotes/origin/*'{surface_refs}"
        )],
        "{trace}"
    );
    assert!(
        commands.iter().all(|c| !c.starts_with("git ls-remote")),
        "no other network call: {commands:#?}"
    );
}

/// `--color=always` colours what needs a person (the stale row's mark,
/// its takeover hint and its note) and leaves a live row plain; `--json`
/// and `--color=never` have no colour; the columns line up.
#[test]
fn colour_marks_the_rows_that_need_a_person_and_columns_line_up() {
    let s = &TestEnv::with_surface(Surface::Git);
    let alpha = s.clone("alpha");
    let bravo = s.clone("bravo");
    stale_then_live(s, &alpha, &bravo);

    let coloured = alpha.maverick(&["status", "--color=always"]);
    coloured.expect(0);
    let line = |text: &str, issue: &str| -> String {
        text.lines()
            .find(|l| l.contains(issue))
            .unwrap_or_else(|| panic!("no row for {issue} in {text}"))
            .to_owned()
    };
    let stale = line(&coloured.stdout, "#142");
    let live = line(&coloured.stdout, "#141");
    assert!(
        stale.starts_with("\x1b[1m\x1b[33m! #142\x1b[0m"),
        "{stale:?}"
    );
    assert!(
        stale.contains(
            "\x1b[1m\x1b[33mstale for 14m (take over: git maverick coord takeover 142)\x1b[0m"
        ),
        "{stale:?}"
    );
    assert!(
        stale.ends_with("\x1b[1m\x1b[33m<- stale lease\x1b[0m"),
        "{stale:?}"
    );
    assert!(!live.contains('\x1b'), "{live:?}");
    for plain in [
        alpha.maverick(&["status", "--color=never"]),
        alpha.maverick(&["--json", "status", "--color=always"]),
    ] {
        assert!(!plain.expect(0).stdout.contains('\x1b'), "{}", plain.stdout);
    }

    // The two rows, as a person sees them: each column starts where the
    // one above it starts.
    let screen = alpha.maverick(&["status"]);
    let stale = line(&screen.expect(0).stdout, "#142");
    let live = line(&screen.stdout, "#141");
    assert_eq!(
        [&stale[..28], &live[..28]],
        [
            "! #142  stale  bravo        ",
            "  #141  ours   alpha (you)  "
        ],
        "{}",
        screen.stdout
    );
    let at = |row: &str, what: &str| row.find(what).unwrap_or_else(|| panic!("{what} in {row}"));
    assert_eq!(at(&stale, "gen 1"), at(&live, "gen 1"));
    assert_eq!(at(&stale, "stale for"), at(&live, "lease "));
    assert_eq!(
        at(&stale, "maverick/142-lexer"),
        at(&live, "maverick/141-parser")
    );
    assert!(
        !live.ends_with(' '),
        "the last cell is not padded: {live:?}"
    );
}

on_both_surfaces!(
    the_screen_puts_what_needs_a_person_first,
    json_validates_against_the_schema,
    mine_shows_only_this_instances_claims,
    epic_lists_stories_in_dag_order_by_wave,
    dot_draws_the_epic_and_svg_renders_it,
    watch_redraws_until_ctrl_c,
    watch_redraws_in_place_on_a_terminal,
    a_head_moved_behind_the_holders_back_is_a_collision,
    one_git_fetch_per_view,
);

/// The GitHub budget, counted in the fake's request log: for 10 claimed
/// issues, each with a pull request, one list of the repository's labels,
/// one list of the issues labelled in-progress (the only label of a line
/// the repository has), one list of the repository's recent comments
/// (every comment of the ten is recent, and the issue list's count of each
/// says so: no issue's comments are read on their own), one list of pull
/// requests and one CI read (combined status and check runs, two requests)
/// per head: 1 + 1 + 1 + 1 + 10 × 2 = 24 requests. Watching, every unchanged read after the first is a 304, which
/// costs no rate limit.
#[test]
fn github_budget_for_ten_claimed_issues() {
    let s = &TestEnv::with_surface(Surface::Github);
    let alpha = s.clone("alpha");
    let scope: Vec<String> = (202..=210).map(|n| n.to_string()).collect();
    alpha
        .maverick(&[
            "coord",
            "claim",
            "201",
            "--scope",
            &scope.join(","),
            "--branch",
            "maverick/201-all",
        ])
        .expect(0);
    let fake = s.github();
    for n in 201..=210u64 {
        let sha = format!("{n:040x}");
        fake.create_pull_from(n + 100, "work", &[], &format!("maverick/{n}-work"), &sha);
        fake.set_check_runs(&sha, &[("test", "completed", Some("success"))]);
    }
    fake.reset_count();
    let json = alpha.maverick(&["--json", "status"]).expect(0).json();
    assert_eq!(json["issues"].as_array().unwrap().len(), 10);
    assert!(json["issues"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["pull"]["ci"] == "success"));
    let requests = fake.requests();
    let paths: Vec<String> = requests
        .iter()
        .map(|r| format!("{} {} {}", r.method, r.path, r.status))
        .collect();
    let count = |part: &str| requests.iter().filter(|r| r.path.contains(part)).count();
    assert_eq!(count("/labels?"), 1, "{paths:#?}");
    assert_eq!(count("/issues?"), 1, "{paths:#?}");
    assert_eq!(count("/pulls?"), 1, "{paths:#?}");
    assert_eq!(count("/issues/comments?"), 1, "{paths:#?}");
    assert_eq!(count("/comments"), 1, "{paths:#?}");
    assert_eq!(count("/status"), 10, "{paths:#?}");
    assert_eq!(count("/check-runs"), 10, "{paths:#?}");
    assert_eq!(requests.len(), 24, "{paths:#?}");
    assert!(
        requests.iter().all(|r| r.method == "GET"),
        "status never writes"
    );

    // Watching, in a new process: the status above left its ETags and its
    // copies of the comments in the clone's shared cache. The first round
    // pays for one list of the repository's recent comments (which brings
    // the copies up to date); every other read, of every round, is
    // answered 304 and costs no rate limit.
    fake.reset_count();
    let (mut child, rx) = spawn_watch(&alpha, &["status", "--watch", "1m"]);
    watch_rounds(s, &rx, 3, str::is_empty);
    assert_eq!(interrupt(&mut child), 130);
    let requests = fake.requests();
    let paid: Vec<String> = requests
        .iter()
        .filter(|r| r.counted)
        .map(|r| format!("{} {} {}", r.method, r.path, r.status))
        .collect();
    assert!(
        paid.len() == 1 && paid[0].starts_with("GET /repos/acme/widgets/issues/comments?"),
        "{paid:#?}"
    );
    assert!(
        requests.iter().filter(|r| r.status == 304).count() >= 3 * 22,
        "three rounds of 304s"
    );
}
