//! The git surface at fleet scale (issue 27): one ref per issue, so writes
//! to different issues never meet; reads that fetch only what they need;
//! and the conversion of the old layout (every issue in one commit at
//! `refs/maverick/issues`). Real binaries, a real bare origin, many
//! processes at once.

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Stdio};

use serde::Deserialize;
use serde_json::Value;

use crate::support::mav::timefmt::Timestamp;
use crate::support::{Repo, Run, TestEnv};

/// Starts `args` in every (repo, args) pair at once; waits for all of them.
fn all_at_once(runs: &[(&Repo<'_>, Vec<String>)]) -> Vec<(String, Run)> {
    let children: Vec<(String, Vec<String>, Child)> = runs
        .iter()
        .map(|(repo, args)| {
            let words: Vec<&str> = args.iter().map(String::as_str).collect();
            let child = repo
                .command(&words)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("git-maverick starts");
            (repo.instance.clone(), args.clone(), child)
        })
        .collect();
    children
        .into_iter()
        .map(|(name, args, child)| {
            let words: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = child.wait_with_output().expect("git-maverick finishes");
            (name, Run::from_output(&words, out))
        })
        .collect()
}

fn words(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Who holds `issue`, as a fresh clone reads it (`None`: nobody).
fn holder(referee: &Repo<'_>, issue: u64) -> Option<String> {
    let read = referee.maverick(&["coord", "read", &issue.to_string(), "--json"]);
    assert!([0, 4].contains(&read.code), "{}", read.screen());
    read.json()["holder"]["instance_id"]
        .as_str()
        .map(str::to_owned)
}

/// The git commands a `-vv` run logged (its DEBUG lines; `-v`'s plain lines
/// say the same with a reason) that start with `git SUBCOMMAND`.
fn logged<'r>(run: &'r Run, subcommand: &str) -> Vec<&'r str> {
    let prefix = format!("git {subcommand} ");
    run.stderr
        .lines()
        .filter(|line| line.starts_with("DEBUG "))
        .filter_map(|line| line.find(&prefix).map(|at| &line[at..]))
        .map(|command| command.split(" dir=").next().unwrap_or(command))
        .collect()
}

/// The fetch of these issues' refs (and nothing else), as `-vv` logs it.
fn fetch_of(issues: &[u64]) -> String {
    let refspecs: Vec<String> = issues
        .iter()
        .map(|n| format!("+refs/maverick/issue/{n}:refs/maverick-cache/origin/issue/{n}"))
        .collect();
    format!(
        "git fetch --no-tags --prune --no-write-fetch-head --quiet --no-recurse-submodules \
         --no-auto-maintenance --end-of-options origin {}",
        refspecs.join(" ")
    )
}

/// This clone's copies of the remote's surface refs.
fn cached_refs(repo: &Repo<'_>) -> BTreeSet<String> {
    repo.git(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/maverick-cache/",
    ])
    .lines()
    .map(str::to_owned)
    .collect()
}

#[test]
fn sixteen_clones_claim_sixteen_issues_at_once_and_all_hold() {
    let env = TestEnv::new();
    let agents: Vec<Repo<'_>> = (0..16)
        .map(|i| env.clone(&format!("agent-{i:02}")))
        .collect();
    let referee = env.clone("referee");
    let runs: Vec<(&Repo<'_>, Vec<String>)> = agents
        .iter()
        .enumerate()
        .map(|(i, a)| (a, words(&["coord", "claim", &(100 + i).to_string()])))
        .collect();
    for (name, run) in all_at_once(&runs) {
        assert_eq!(run.code, 0, "{name}: {}", run.screen());
    }
    for (i, agent) in agents.iter().enumerate() {
        assert_eq!(
            holder(&referee, 100 + i as u64).as_deref(),
            Some(agent.instance.as_str())
        );
    }
    // One ref per issue on origin, and nothing else: this remote never had
    // the old single ref, so it gets no tombstone.
    let refs = env.surface_refs().unwrap();
    let issue_refs = refs
        .lines()
        .filter(|l| l.contains("refs/maverick/issue/"))
        .count();
    assert_eq!(issue_refs, 16, "{refs}");
    assert_eq!(refs.lines().count(), 16, "{refs}");
}

/// A scope claim is one atomic push: racers whose scopes overlap in a chain
/// (1-2, 2-3, 3-4, …) each hold all of their scope or none of it, and no
/// issue has two holders.
#[test]
fn overlapping_scope_claims_at_once_hold_all_or_nothing() {
    let env = TestEnv::new();
    let racers: Vec<Repo<'_>> = (0..8).map(|i| env.clone(&format!("racer-{i}"))).collect();
    let referee = env.clone("referee");
    let scope = |i: usize| (10 + i as u64, 11 + i as u64);
    let runs: Vec<(&Repo<'_>, Vec<String>)> = racers
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (a, b) = scope(i);
            (
                r,
                words(&[
                    "coord",
                    "claim",
                    &a.to_string(),
                    "--scope",
                    &format!("{a},{b}"),
                ]),
            )
        })
        .collect();
    let results = all_at_once(&runs);
    let holders: BTreeMap<u64, Option<String>> =
        (10..=18).map(|n| (n, holder(&referee, n))).collect();
    let mut winners = 0;
    for (i, (name, run)) in results.iter().enumerate() {
        let (a, b) = scope(i);
        let held = [a, b].map(|n| holders[&n].as_deref() == Some(name.as_str()));
        match run.code {
            0 => {
                winners += 1;
                assert_eq!(
                    held,
                    [true, true],
                    "{name} won but does not hold {a} and {b}"
                );
            }
            4 => assert_eq!(
                held,
                [false, false],
                "{name} lost but holds part of {a},{b}"
            ),
            _ => panic!("{name}: {}", run.screen()),
        }
    }
    assert!(winners >= 1, "{results:#?}");
}

/// SPEC 9 with a free slot for everyone: twelve agents dispatching at once
/// all get a slot, each on an issue of its own; none gives up (exit 6).
#[test]
fn twelve_agents_dispatching_with_twelve_free_slots_get_twelve_issues() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    for n in 1..=12 {
        alice
            .maverick(&["coord", "label", "add", &n.to_string(), "agent-ready"])
            .expect(0);
    }
    let agents: Vec<Repo<'_>> = (0..12)
        .map(|i| env.clone(&format!("agent-{i:02}")))
        .collect();
    let runs: Vec<(&Repo<'_>, Vec<String>)> = agents
        .iter()
        .map(|a| (a, words(&["dispatch", "--slots", "12", "--json"])))
        .collect();
    let results = all_at_once(&runs);
    let mut issues = BTreeSet::new();
    for (name, run) in &results {
        assert_eq!(run.code, 0, "{name}: {}", run.screen());
        let issue = run.json()["issue"].as_u64().unwrap();
        assert!(
            issues.insert(issue),
            "#{issue} dispatched twice: {results:#?}"
        );
    }
    assert_eq!(issues, (1..=12).collect::<BTreeSet<u64>>());
    let status = alice
        .maverick(&["dispatch", "status", "--slots", "12", "--json"])
        .json();
    assert_eq!(status["busy"], 12);
}

/// `coord read` brings the one issue's ref, never the others.
#[test]
fn a_read_fetches_only_the_issue_it_reads() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    // (A clone made later would share origin's objects, local clones do.)
    let bob = env.clone("bob");
    alice.maverick(&["coord", "claim", "5"]).expect(0);
    alice.maverick(&["coord", "claim", "6"]).expect(0);
    let read = bob.maverick(&["-vv", "coord", "read", "5"]);
    read.expect(4);
    assert_eq!(logged(&read, "fetch"), [fetch_of(&[5])], "{}", read.stderr);
    assert_eq!(
        cached_refs(&bob),
        BTreeSet::from(["refs/maverick-cache/origin/issue/5".to_owned()])
    );
    // Nothing moved: the next read asks where the refs are and fetches nothing.
    let again = bob.maverick(&["-vv", "coord", "read", "5"]);
    again.expect(4);
    assert_eq!(
        logged(&again, "fetch"),
        Vec::<&str>::new(),
        "{}",
        again.stderr
    );
    assert_eq!(logged(&again, "ls-remote").len(), 1, "{}", again.stderr);
}

/// `dispatch` learns from `ls-remote` which refs moved and fetches those
/// only, once, however many reads it makes (a list, the issues in full, the
/// settle after its claim). (`status` brings the surface with the branches
/// in its one fetch: `status::one_git_fetch_per_view`.)
#[test]
fn a_dispatch_fetches_only_what_moved_and_once() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    for n in 1..=4 {
        alice
            .maverick(&["coord", "label", "add", &n.to_string(), "agent-ready"])
            .expect(0);
    }
    alice.maverick(&["coord", "claim", "5"]).expect(0);
    let bob = env.clone("bob");
    bob.maverick(&["status"]).expect(0);
    alice
        .maverick(&["coord", "label", "add", "1", "blocked-by:#9"])
        .expect(0);
    let dispatch = bob.maverick(&["-vv", "dispatch", "--json"]);
    dispatch.expect(0);
    assert_eq!(dispatch.json()["issue"], 2);
    // #1 moved since bob's status; #2-#5 did not.
    assert_eq!(
        logged(&dispatch, "fetch"),
        [fetch_of(&[1])],
        "{}",
        dispatch.stderr
    );
}

/// The old layout as the previous git-maverick wrote it (by its own `coord
/// claim 6`, `coord release 6`, `coord claim 7 --branch maverick/7-old` and
/// `coord label add 8 agent-ready`), pushed to origin's
/// `refs/maverick/issues`, its stamps moved to a minute before the test's
/// clock, so alice's lease on #7 is live.
pub(crate) fn old_layout(env: &TestEnv) -> String {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/git-surface-v1");
    let meta: Value =
        serde_json::from_slice(&std::fs::read(fixture.join("meta.json")).unwrap()).unwrap();
    let written = Timestamp::parse(meta["clock"].as_str().unwrap()).unwrap();
    // The fixture's stamps, moved to a minute before the test's clock.
    let shift = env.clock().now().0 - 60 - written.0;
    let dir = env.path().join("old-layout");
    env.git_in(env.path(), &["init", "--quiet", dir.to_str().unwrap()]);
    for file in ["meta.json", "issue-6.json", "issue-7.json", "issue-8.json"] {
        let text = std::fs::read_to_string(fixture.join(file)).unwrap();
        std::fs::write(dir.join(file), shift_stamps(&text, shift)).unwrap();
    }
    env.git_in(&dir, &["add", "-A"]);
    env.git_in(&dir, &["commit", "--quiet", "-m", "maverick: #8 by alice"]);
    let origin = env.origin.to_str().unwrap();
    env.git_in(
        &dir,
        &["push", "--quiet", origin, "HEAD:refs/maverick/issues"],
    );
    env.git_in(&env.origin, &["rev-parse", "refs/maverick/issues"])
}

/// `text` with every stamp (`2026-12-03T14:23:31Z`) moved by `secs`.
fn shift_stamps(text: &str, secs: i64) -> String {
    const SHAPE: &[u8] = b"dddd-dd-ddTdd:dd:ddZ";
    let stamp_at = |at: usize| {
        let bytes = text.as_bytes().get(at..at + SHAPE.len())?;
        let shaped = bytes.iter().zip(SHAPE).all(|(b, s)| match s {
            b'd' => b.is_ascii_digit(),
            other => b == other,
        });
        shaped.then(|| Timestamp::parse(&text[at..at + SHAPE.len()]))?
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while at < text.len() {
        if let Some(stamp) = stamp_at(at) {
            out.push_str(&Timestamp(stamp.0 + secs).to_string());
            at += SHAPE.len();
        } else {
            let c = text[at..].chars().next().unwrap();
            out.push(c);
            at += c.len_utf8();
        }
    }
    out
}

fn origin_ref(env: &TestEnv, refname: &str) -> Option<String> {
    let out = env.git_output_in(&env.origin, &["rev-parse", "--verify", "--quiet", refname]);
    out.status
        .success()
        .then(|| String::from_utf8(out.stdout).unwrap().trim().to_owned())
}

#[test]
fn the_old_layout_is_read_as_it_is_until_a_write() {
    let env = TestEnv::new();
    let old = old_layout(&env);
    let bob = env.clone("bob");
    let read = bob.maverick(&["coord", "read", "7", "--json"]);
    read.expect(4);
    let json = read.json();
    assert_eq!(json["holder"]["instance_id"], "alice");
    assert_eq!(json["holder"]["branch"], "maverick/7-old");
    bob.maverick(&["coord", "read", "6"]).expect(0);
    let listed = bob.maverick(&["dispatch", "status", "--json"]).json();
    assert_eq!(listed["frontier"][0]["issue"], 8, "{listed}");
    // A refused claim writes nothing, so it converts nothing.
    bob.maverick(&["coord", "claim", "7"]).expect(4);
    assert_eq!(origin_ref(&env, "refs/maverick/issues"), Some(old));
    assert_eq!(
        env.surface_refs().unwrap().lines().count(),
        1,
        "{:?}",
        env.surface_refs()
    );
}

#[test]
fn the_first_write_converts_the_old_layout_and_loses_no_claim() {
    let env = TestEnv::new();
    let old = old_layout(&env);
    let old_7 = env.git_in(&env.origin, &["show", "refs/maverick/issues:issue-7.json"]);
    let old_7: Value = serde_json::from_str(&old_7).unwrap();
    let bob = env.clone("bob");
    bob.maverick(&["coord", "claim", "9"]).expect(0);
    // Every issue of the old commit has its own ref, with what it held.
    for n in [6, 7, 8, 9] {
        assert!(
            origin_ref(&env, &format!("refs/maverick/issue/{n}")).is_some(),
            "#{n}: {:?}",
            env.surface_refs()
        );
    }
    let new_7 = env.stored_issue(7).unwrap();
    assert_eq!(new_7["comments"], old_7["comments"]);
    assert_eq!(new_7["labels"], old_7["labels"]);
    assert_eq!(env.labels(8), ["agent-ready"]);
    // The old history is kept, and the old ref is the tombstone.
    assert_eq!(origin_ref(&env, "refs/maverick/archive/issues"), Some(old));
    let tombstone = env.git_in(&env.origin, &["show", "refs/maverick/issues:meta.json"]);
    assert!(tombstone.contains("upgrade git-maverick"), "{tombstone}");
    // Alice still holds #7: others see it held, her heartbeat keeps it.
    let carol = env.clone("carol");
    assert_eq!(holder(&carol, 7).as_deref(), Some("alice"));
    let alice = env.clone("alice");
    alice.maverick(&["coord", "heartbeat", "7"]).expect(0);
    carol.maverick(&["coord", "claim", "7"]).expect(4);
    // Comment ids go on above the old counter (meta.json's next_comment_id),
    // on the issues converted and on the new ones.
    alice
        .maverick(&["coord", "release", "7", "--reason", "merged"])
        .expect(0);
    let counter = old_counter();
    let ids: Vec<u64> = env.comments(7).iter().map(|c| c.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert!(*ids.last().unwrap() >= counter, "{ids:?}");
    assert!(env.comments(9).iter().all(|c| c.id >= counter));
    carol.maverick(&["coord", "claim", "7"]).expect(0);
}

fn old_counter() -> u64 {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/git-surface-v1");
    let meta: Value =
        serde_json::from_slice(&std::fs::read(fixture.join("meta.json")).unwrap()).unwrap();
    meta["next_comment_id"].as_u64().unwrap()
}

/// New binaries racing to make the first write each convert or find it
/// converted: every claim lands, and alice's claim from before survives.
#[test]
fn first_writes_at_once_over_the_old_layout_lose_nothing() {
    let env = TestEnv::new();
    old_layout(&env);
    let agents: Vec<Repo<'_>> = (0..6).map(|i| env.clone(&format!("agent-{i}"))).collect();
    let runs: Vec<(&Repo<'_>, Vec<String>)> = agents
        .iter()
        .enumerate()
        .map(|(i, a)| (a, words(&["coord", "claim", &(20 + i).to_string()])))
        .collect();
    for (name, run) in all_at_once(&runs) {
        assert_eq!(run.code, 0, "{name}: {}", run.screen());
    }
    let referee = env.clone("referee");
    for (i, agent) in agents.iter().enumerate() {
        assert_eq!(
            holder(&referee, 20 + i as u64).as_deref(),
            Some(agent.instance.as_str())
        );
    }
    assert_eq!(holder(&referee, 7).as_deref(), Some("alice"));
    assert_eq!(env.labels(8), ["agent-ready"]);
}

/// The files of the old layout as the previous git-maverick parsed them
/// (`surface/git.rs` before issue 27): what it does with the tombstone.
#[allow(dead_code)]
#[derive(Debug, Deserialize)]
struct OldMeta {
    format: u32,
    next_comment_id: u64,
    clock: Option<String>,
}

#[allow(dead_code)]
#[derive(Debug, Deserialize)]
struct OldIssue {
    number: u64,
    #[serde(default)]
    labels: Vec<String>,
}

/// What the previous git-maverick did with the commit at
/// `refs/maverick/issues`, step for step: every write parsed `meta.json`
/// (a missing one was a fresh surface), every list (`status`, `dispatch`)
/// parsed each `issue-*.json` the tree names, and a read of issue `n`
/// parsed `issue-<n>.json` (a missing one was an issue nobody wrote to).
struct OldBinary<'e> {
    env: &'e TestEnv,
}

impl OldBinary<'_> {
    /// The file at the old ref, `None` when there is none.
    fn file(&self, name: &str) -> Option<String> {
        let out = self.env.git_output_in(
            &self.env.origin,
            &["show", &format!("refs/maverick/issues:{name}")],
        );
        out.status
            .success()
            .then(|| String::from_utf8(out.stdout).unwrap())
    }

    fn write(&self) -> Result<(), String> {
        match self.file("meta.json") {
            Some(meta) => serde_json::from_str::<OldMeta>(&meta)
                .map(drop)
                .map_err(|e| format!("meta.json: {e}")),
            None => Ok(()),
        }
    }

    fn list(&self) -> Result<Vec<u64>, String> {
        let names = self.env.git_in(
            &self.env.origin,
            &["ls-tree", "--name-only", "refs/maverick/issues"],
        );
        let mut numbers = Vec::new();
        for name in names.lines().filter(|n| n.starts_with("issue-")) {
            let issue = serde_json::from_str::<OldIssue>(&self.file(name).unwrap())
                .map_err(|e| format!("{name}: {e}"))?;
            numbers.push(issue.number);
        }
        Ok(numbers)
    }

    fn read(&self, n: u64) -> Result<Option<OldIssue>, String> {
        let name = format!("issue-{n}.json");
        self.file(&name)
            .map(|json| serde_json::from_str::<OldIssue>(&json).map_err(|e| format!("{name}: {e}")))
            .transpose()
    }
}

/// An older binary meeting the tombstone stops with words that say to
/// upgrade on every write, every list and every read of an issue that had
/// state before the conversion (or that the converting write touched),
/// instead of reading an empty surface. (Checked by hand with the previous
/// binary too: README "How state is stored".)
#[test]
fn the_tombstone_stops_an_older_binary_with_words_that_say_upgrade() {
    let env = TestEnv::new();
    old_layout(&env);
    let old = OldBinary { env: &env };
    // Over the old layout the older binary works.
    old.write().unwrap();
    assert_eq!(old.list().unwrap(), [6, 7, 8]);
    assert_eq!(old.read(7).unwrap().unwrap().number, 7);
    let bob = env.clone("bob");
    bob.maverick(&["coord", "claim", "12345"]).expect(0);
    let upgrade = |result: Result<String, String>, what: &str| {
        let error = result.expect_err(&format!("an older binary's {what} went through"));
        assert!(error.contains("upgrade git-maverick"), "{what}: {error}");
    };
    upgrade(old.write().map(|_| String::new()), "write");
    upgrade(old.list().map(|l| format!("{l:?}")), "list");
    for n in [6, 7, 8, 12345] {
        upgrade(
            old.read(n).map(|i| format!("{i:?}")),
            &format!("read of #{n}"),
        );
    }
    // The tombstone is small: one file under a handful of names.
    let names = env.git_in(&env.origin, &["ls-tree", "refs/maverick/issues"]);
    assert_eq!(names.lines().count(), 6, "{names}");
    let blobs: BTreeSet<&str> = names
        .lines()
        .map(|l| l.split_whitespace().nth(2).unwrap())
        .collect();
    assert_eq!(blobs.len(), 1, "{names}");
}

/// A fresh remote never gets the old ref: its first write pushes its
/// issue's ref and nothing else.
#[test]
fn a_fresh_remote_gets_no_tombstone() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    alice.maverick(&["coord", "read", "3"]).expect(0);
    assert_eq!(env.surface_refs(), None, "a read writes nothing");
    alice
        .maverick(&["coord", "label", "add", "3", "agent-ready"])
        .expect(0);
    assert!(origin_ref(&env, "refs/maverick/issue/3").is_some());
    assert_eq!(origin_ref(&env, "refs/maverick/issues"), None);
    assert_eq!(origin_ref(&env, "refs/maverick/archive/issues"), None);
    assert_eq!(env.surface_refs().unwrap().lines().count(), 1);
}

/// An old ref that is not the old layout nor the tombstone is a clear
/// error on read and on write, and nothing is written over it.
#[test]
fn a_damaged_old_ref_is_a_clear_error_and_nothing_is_written() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    // A blob where the old layout's commit should be.
    let origin = env.origin.to_str().unwrap();
    let file = env.input_file("not-a-commit", "not a commit\n");
    let blob = alice.git(&["hash-object", "-w", &file]);
    alice.git(&[
        "push",
        "--quiet",
        origin,
        &format!("{blob}:refs/maverick/issues"),
    ]);
    for args in [["coord", "read", "3"], ["coord", "claim", "3"]] {
        let run = alice.maverick(&args);
        run.expect(1);
        assert!(
            run.stderr.contains("refs/maverick/issues") && run.stderr.contains("not a commit"),
            "{}",
            run.stderr
        );
    }
    assert_eq!(origin_ref(&env, "refs/maverick/issue/3"), None);
    // Damaged JSON in the old layout's meta.json: the same.
    let dir = env.path().join("damaged");
    env.git_in(env.path(), &["init", "--quiet", dir.to_str().unwrap()]);
    std::fs::write(dir.join("meta.json"), "{not json").unwrap();
    env.git_in(&dir, &["add", "-A"]);
    env.git_in(&dir, &["commit", "--quiet", "-m", "damaged"]);
    env.git_in(
        &dir,
        &[
            "push",
            "--quiet",
            "--force",
            origin,
            "HEAD:refs/maverick/issues",
        ],
    );
    let run = alice.maverick(&["coord", "claim", "3"]);
    run.expect(1);
    assert!(run.stderr.contains("meta.json"), "{}", run.stderr);
    assert_eq!(origin_ref(&env, "refs/maverick/issue/3"), None);
}

// --- a branch two claims share (issue 37) ----------------------------------

/// Two claims of one clone on one branch (a story and its follow-up):
/// releasing one keeps the branch's last-seen record for the other, whose
/// plain fast-forward push then goes through; releasing the last one
/// leaves the branch unguarded.
#[test]
fn releasing_one_of_two_claims_on_a_branch_keeps_the_others_record() {
    use crate::support::{allowed, push, STORY_BRANCH};
    let env = TestEnv::new();
    let a = env.claimed_clone("a");
    a.maverick(&["coord", "claim", "143", "--branch", STORY_BRANCH])
        .expect(0);
    a.commit_file("parser.rs", "fn parse() {}\n", "feat: parser");
    allowed(&push(&a, &["--quiet", "-u", "origin", STORY_BRANCH]));

    a.maverick(&["coord", "release", "142", "--reason", "merged"])
        .expect(0);
    let head = a.commit_file("lexer.rs", "fn lex() {}\n", "feat: lexer");
    allowed(&push(&a, &["--quiet", "origin", STORY_BRANCH]));
    assert_eq!(env.origin_head(STORY_BRANCH), Some(head));
    // The hook still guards the branch for #143: a force push is refused.
    a.git(&["reset", "--quiet", "--hard", "HEAD~1"]);
    let forced = push(&a, &["--force", "origin", STORY_BRANCH]);
    assert!(!forced.status.success(), "a force push went through");

    a.maverick(&["coord", "release", "143", "--reason", "merged"])
        .expect(0);
    allowed(&push(&a, &["--quiet", "--force", "origin", STORY_BRANCH]));
}

// --- a damaged issue ref (issue 37) ----------------------------------------

/// Pushes a commit whose issue.json does not parse to `refs/maverick/issue/N`
/// on the origin; returns the commit.
fn damage_issue_ref(env: &TestEnv, issue: u64) -> String {
    let dir = env.path().join(format!("damage-{issue}"));
    env.git_in(env.path(), &["init", "--quiet", dir.to_str().unwrap()]);
    std::fs::write(dir.join("issue.json"), "{\"format\": 2, \"comments\": [tru").unwrap();
    env.git_in(&dir, &["add", "-A"]);
    env.git_in(&dir, &["commit", "--quiet", "-m", "damaged"]);
    let origin = env.origin.to_str().unwrap();
    let refspec = format!("+HEAD:refs/maverick/issue/{issue}");
    env.git_in(&dir, &["push", "--quiet", origin, &refspec]);
    env.git_in(&dir, &["rev-parse", "HEAD"])
}

/// One damaged issue ref stops only that issue: `status`, `dispatch` and
/// `coord` go on with every other issue and name the damaged ref with the
/// way out, and `coord reset N` (a compare-and-swap, refused for a healthy
/// issue unless forced) frees it and keeps the damaged commit reachable.
#[test]
fn a_damaged_issue_ref_stops_only_its_issue_and_coord_reset_frees_it() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    alice.maverick(&["coord", "claim", "6"]).expect(0);
    let damaged = damage_issue_ref(&env, 5);
    let names = |text: &str| env.normalise(text).replace(&damaged, "[damaged]");

    let status = bob.maverick(&["status"]);
    status.expect(0);
    assert!(
        status.stderr.contains("refs/maverick/issue/5")
            && status.stderr.contains("git maverick coord reset 5"),
        "{}",
        status.screen()
    );
    assert!(status.stdout.contains("#6"), "{}", status.screen());
    let dispatch = bob.maverick(&["dispatch", "--json"]);
    assert_ne!(dispatch.code, 1, "{}", dispatch.screen());
    assert!(
        dispatch.json()["warnings"]
            .to_string()
            .contains("coord reset 5"),
        "{}",
        dispatch.screen()
    );

    let read = bob.maverick(&["coord", "read", "5"]);
    insta::assert_snapshot!("damaged_issue_read", names(&read.screen()));
    read.expect(1);
    bob.maverick(&["coord", "read", "6"]).expect(4);
    bob.maverick(&["coord", "claim", "7"]).expect(0);
    bob.maverick(&["coord", "claim", "5"]).expect(1);

    // A healthy issue is not reset unless forced.
    let healthy = bob.maverick(&["coord", "reset", "6"]);
    healthy.expect(1);
    assert!(healthy.stderr.contains("--force"), "{}", healthy.screen());
    assert_eq!(holder(&bob, 6).as_deref(), Some("alice"));

    let reset = bob.maverick(&["coord", "reset", "5"]);
    insta::assert_snapshot!("damaged_issue_reset", names(&reset.screen()));
    reset.expect(0);
    let backup = format!("refs/maverick/backup/issue-5-{damaged}");
    assert_eq!(origin_ref(&env, &backup), Some(damaged.clone()));
    assert_ne!(
        origin_ref(&env, "refs/maverick/issue/5"),
        Some(damaged.clone())
    );
    assert_eq!(holder(&bob, 5), None);
    let status = alice.maverick(&["status"]);
    status.expect(0);
    assert!(!status.stderr.contains("issue/5"), "{}", status.screen());
    alice.maverick(&["coord", "claim", "5"]).expect(0);
    // Reset twice: the ref is healthy now, so the second is refused.
    bob.maverick(&["coord", "reset", "5"]).expect(1);
    let forced = bob.maverick(&["coord", "reset", "5", "--force", "--json"]);
    forced.expect(0);
    assert_eq!(forced.json()["was_damaged"], false);
    assert_eq!(holder(&bob, 5), None);
}

/// The comment ids `issue`'s record on origin holds now.
fn comment_ids(env: &TestEnv, issue: u64) -> Vec<u64> {
    let stored = env.stored_issue(issue).expect("a healthy record");
    stored["comments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_u64().unwrap())
        .collect()
}

/// Pushes, on top of `refs/maverick/issue/N`, a commit whose issue.json is
/// `text` (a write cut short, a hand edit): damage with a history behind it.
fn damage_on_top(env: &TestEnv, issue: u64, text: &str) {
    let dir = env.path().join(format!("damage-on-top-{issue}"));
    let origin = env.origin.to_str().unwrap();
    let refname = format!("refs/maverick/issue/{issue}");
    let _ = std::fs::remove_dir_all(&dir);
    env.git_in(env.path(), &["init", "--quiet", dir.to_str().unwrap()]);
    env.git_in(&dir, &["fetch", "--quiet", origin, &refname]);
    env.git_in(&dir, &["checkout", "--quiet", "FETCH_HEAD"]);
    std::fs::write(dir.join("issue.json"), text).unwrap();
    env.git_in(&dir, &["commit", "--quiet", "-am", "damaged"]);
    env.git_in(
        &dir,
        &["push", "--quiet", origin, &format!("HEAD:{refname}")],
    );
}

/// After `coord reset`, an issue's comment ids go on past every id it gave
/// before (issue: they restarted at 1, so a marker written after a reset
/// could carry the id of one before it, which readers keying by comment id
/// confuse): forced on a healthy record, on a damaged one whose history is
/// readable, and on one whose damaged file still names its ids. The claim
/// after each reset is the one `coord read` and `status` answer with.
#[test]
fn comment_ids_go_on_past_a_reset() {
    let env = TestEnv::new();
    let alice = env.clone("alice");
    let bob = env.clone("bob");
    let mut highest = 0;
    let claim_and_release = |issue: u64| {
        alice
            .maverick(&["coord", "claim", &issue.to_string()])
            .expect(0);
        alice
            .maverick(&["coord", "release", &issue.to_string(), "--reason", "abort"])
            .expect(0);
    };
    claim_and_release(5);
    claim_and_release(5);
    let before = comment_ids(&env, 5);
    assert!(before.len() >= 4, "{before:?}");
    for (how, damage) in [
        ("forced", None),
        (
            "damaged, history readable",
            Some("{\"format\": 2, \"comments\": [tru"),
        ),
        (
            "damaged, ids still named",
            Some("{\"format\": 2, \"next_comment_id\": 90, \"labels\": 7}"),
        ),
    ] {
        highest = highest.max(*comment_ids(&env, 5).iter().max().unwrap());
        let mut reset = vec!["coord", "reset", "5"];
        match damage {
            Some(text) => damage_on_top(&env, 5, text),
            None => reset.push("--force"),
        }
        if damage.is_some_and(|t| t.contains("90")) {
            highest = highest.max(89);
        }
        bob.maverick(&reset).expect(0);
        bob.maverick(&["coord", "claim", "5"]).expect(0);
        let after = comment_ids(&env, 5);
        assert!(
            after.iter().all(|id| *id > highest),
            "{how}: ids after the reset {after:?} must be past {highest}"
        );
        assert_eq!(holder(&alice, 5).as_deref(), Some("bob"), "{how}");
        let status = alice.maverick(&["status", "--json"]).expect(0).json();
        assert_eq!(status["issues"][0]["issue"], 5, "{how}: {status}");
        assert_eq!(status["issues"][0]["holder"]["instance_id"], "bob", "{how}");
        bob.maverick(&["coord", "release", "5", "--reason", "abort"])
            .expect(0);
        highest = *comment_ids(&env, 5).iter().max().unwrap();
    }
}
