//! Mixed teams (issues 13 and 31): git maverick and Maverick, the Python
//! plugin, on the same issues.
//!
//! Maverick is the real one: PyPI's `maverick-harness` 5.1.1 (its `maverick`
//! CLI, as its skills call it), which shells out to the real `gh` (Debian's
//! 2.23), routed to the fake GitHub with `GH_HOST=github.localhost` and the
//! fake as HTTP(S) proxy (`FakeGithub::gh_env`): nothing leaves the loopback
//! interface. `scripts/test.sh` installs both; without them these tests fail and
//! say so. Races between the two tools are staged by holding back one
//! process's answer at the fake (`FakeGithub::hold_answer`) while the other
//! acts, so every interleaving is the one the test names, with no sleep.
//!
//! What Maverick writes is also kept, byte for byte, in `fixtures/maverick/`
//! (see its README); the tests at the end plant those bodies on both
//! surfaces and check what git maverick makes of them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::OnceLock;
use std::thread::JoinHandle;

use crate::support::fake_github::HeldRequest;
use crate::support::mav::markers::{parse_markers, Marker, MarkerKind};
use crate::support::mav::timefmt::Timestamp;
use crate::support::screen::{screen, screen_naming, screens};
use crate::support::{path_with_bin, Repo, Run, Surface, TestEnv, GITHUB_REPO};
use serde_json::{json, Value};

/// The Maverick instances of the tests: the first 10 hex digits of the
/// SHA-256 of their Claude Code session ids, `maverick-session-7`, `-8`, `-9`.
const MAVERICK: &str = "b21d80a410";
const MAVERICK_SESSION: &str = "maverick-session-7";
const MAVERICK_2: &str = "746d2ea6c0";
const LABEL: &str = "claude-in-progress";
/// Past Maverick's ten-minute lease and git maverick's default ttl.
const PAST_A_LEASE: u64 = 11 * 60;
/// The Maverick release this suite was written against.
const MAVERICK_VERSION: &str = "maverick 5.1.1";

// ---------------------------------------------------------- the real tools

/// Fails the test, with the way out, when the real Maverick or gh is not
/// installed: these tests must not pass without them.
fn require_tools() {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    let checked = CHECKED.get_or_init(|| {
        let path = path_with_bin();
        let found =
            |program: &str| std::env::split_paths(&path).any(|dir| dir.join(program).is_file());
        let install = "`scripts/test.sh` installs them: `apt-get install gh`, and `pip install \
                       maverick-harness==5.1.1` into its tools venv \
                       (~/.cache/git-maverick-ci/venv, whose bin/ must be on PATH)";
        for program in ["gh", "maverick", "faketime"] {
            if !found(program) {
                return Err(format!(
                    "`{program}` is not on PATH: the Maverick interop tests drive the real \
                     Maverick CLI and the gh it calls; {install}"
                ));
            }
        }
        let out = Command::new("maverick")
            .arg("--version")
            .env("PATH", &path)
            .output()
            .map_err(|e| format!("maverick --version: {e}"))?;
        let version = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        if version != MAVERICK_VERSION {
            return Err(format!(
                "these tests are written against {MAVERICK_VERSION}, found {version:?}; {install}"
            ));
        }
        Ok(())
    });
    if let Err(why) = checked {
        panic!("{why}");
    }
}

/// Debian's libfaketime, which the `faketime` wrapper preloads.
fn libfaketime() -> &'static Path {
    static FOUND: OnceLock<PathBuf> = OnceLock::new();
    FOUND.get_or_init(|| {
        let multiarch = std::fs::read_dir("/usr/lib")
            .into_iter()
            .flatten()
            .map(|e| e.unwrap().path().join("faketime"));
        ["/usr/local/lib/faketime", "/usr/lib/faketime"]
            .into_iter()
            .map(PathBuf::from)
            .chain(multiarch)
            .map(|dir| dir.join("libfaketime.so.1"))
            .find(|lib| lib.is_file())
            .expect("libfaketime.so.1 is installed with faketime (apt-get install faketime)")
    })
}

/// One Maverick instance: the real CLI in an agent session of its own, with
/// a HOME of its own (where it keeps `~/.maverick`), or the person's HOME.
struct Maverick<'a> {
    env: &'a TestEnv,
    home: PathBuf,
    /// `CLAUDE_CODE_SESSION_ID`, which names the instance; none: env-less.
    session: Option<String>,
    extra: Vec<(&'static str, String)>,
}

impl<'a> Maverick<'a> {
    fn in_session(env: &'a TestEnv, session: &str) -> Maverick<'a> {
        let home = env.path().join(format!("home-{session}"));
        std::fs::create_dir_all(&home).unwrap();
        Maverick {
            env,
            home,
            session: Some(session.to_owned()),
            extra: Vec::new(),
        }
    }

    /// Maverick run by the person the tests' git maverick runs as: their
    /// HOME, no session.
    fn envless(env: &'a TestEnv) -> Maverick<'a> {
        Maverick {
            env,
            home: env.home().to_owned(),
            session: None,
            extra: Vec::new(),
        }
    }

    /// `maverick ARGS` as its skills run it, through gh, to the fake GitHub,
    /// on the environment's clock (the real libfaketime, when it was moved).
    fn command(&self, args: &[&str]) -> Command {
        require_tools();
        static MAVERICK: OnceLock<PathBuf> = OnceLock::new();
        let maverick = MAVERICK.get_or_init(|| {
            crate::support::on_path("maverick").expect("require_tools found maverick")
        });
        let mut cmd = Command::new(maverick);
        cmd.args(args).current_dir(&self.home);
        self.env.apply_env(&mut cmd);
        let offset = self.env.clock_offset();
        if offset != 0 {
            // libfaketime itself, as the `faketime` wrapper loads it, but
            // without the wrapper's named semaphore, which a killed earlier
            // run can leave behind under a pid this run reuses.
            cmd.env("LD_PRELOAD", libfaketime())
                .env("FAKETIME", format!("{offset:+}s"));
        }
        cmd.env("HOME", &self.home)
            .env("GH_CONFIG_DIR", self.home.join(".config/gh"))
            .env_remove("GITHUB_API_URL")
            .env_remove("NO_PROXY")
            .env_remove("no_proxy");
        for (var, value) in self.env.github().gh_env() {
            cmd.env(var, value);
        }
        if let Some(session) = &self.session {
            cmd.env("CLAUDE_CODE_SESSION_ID", session);
        }
        for (var, value) in &self.extra {
            cmd.env(var, value);
        }
        cmd
    }

    fn run(&self, args: &[&str]) -> Run {
        let mut named = vec!["maverick"];
        named.extend(args);
        Run::from_output(&named, self.command(args).output().expect("maverick runs"))
    }

    fn coord(&self, verb: &str, issue: u64, more: &[&str]) -> Run {
        let n = issue.to_string();
        let mut args = vec!["coord", verb, GITHUB_REPO, &n];
        args.extend(more);
        self.run(&args)
    }

    fn spawn_coord(&self, verb: &'static str, issue: u64) -> Spawned {
        let n = issue.to_string();
        let args = ["coord", verb, GITHUB_REPO, &n];
        spawn(&["maverick", "coord", verb], self.command(&args))
    }

    /// `coord read`: the snapshot Maverick's skills decide from.
    fn read(&self, issue: u64) -> Value {
        let run = self.coord("read", issue, &[]);
        run.expect(0);
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
    }

    /// Who Maverick takes to hold the issue (see [`names`]).
    fn names(&self, issue: u64) -> Option<String> {
        names(&self.read(issue))
    }
}

/// Who Maverick takes to hold an issue, from its `coord read`: the newest
/// claim, when the label is on and the newest lease is live (its skills'
/// "held"); none when it reads the issue as free or stale.
fn names(read: &Value) -> Option<String> {
    (read["in_progress"] == true && read["lease_live"] == true)
        .then(|| read["claim"]["instance_id"].as_str().unwrap().to_owned())
}

/// A process running in the background while the test stages the rest.
struct Spawned {
    args: Vec<&'static str>,
    handle: JoinHandle<Output>,
}

fn spawn(args: &[&'static str], mut cmd: Command) -> Spawned {
    Spawned {
        args: args.to_vec(),
        handle: std::thread::spawn(move || cmd.output().expect("the process runs")),
    }
}

impl Spawned {
    fn finish(self) -> Run {
        Run::from_output(&self.args, self.handle.join().expect("the runner thread"))
    }
}

// ---------------------------------------------------------------- the team

/// A mixed team on the fake GitHub: alice and carol run git maverick, dave
/// (git maverick too) only reads and claims last; three Maverick sessions,
/// the third of which only reads and claims last.
struct Team<'a> {
    env: &'a TestEnv,
    alice: Repo<'a>,
    carol: Repo<'a>,
    dave: Repo<'a>,
    maverick: Maverick<'a>,
    maverick_2: Maverick<'a>,
    maverick_3: Maverick<'a>,
}

fn team(env: &TestEnv) -> Team<'_> {
    require_tools();
    // The label exists in the repository, as Maverick's `gh issue edit`
    // needs (it adds only labels the repository has).
    env.github().create_label(LABEL);
    let claimant = |name: &str| {
        let repo = env.clone(name);
        // A held answer must not time out while the other tool acts.
        repo.git(&["config", "maverick.httpTimeout", "120s"]);
        repo
    };
    Team {
        env,
        alice: claimant("alice"),
        carol: claimant("carol"),
        dave: env.clone("dave"),
        maverick: Maverick::in_session(env, MAVERICK_SESSION),
        maverick_2: Maverick::in_session(env, "maverick-session-8"),
        maverick_3: Maverick::in_session(env, "maverick-session-9"),
    }
}

impl Team<'_> {
    /// The holder git maverick names, read by dave, and its decision.
    fn git_maverick_names(&self, issue: u64) -> (Option<String>, Value) {
        let view = self
            .dave
            .maverick(&["coord", "read", &issue.to_string(), "--json"])
            .json();
        let holder = view["holder"]["instance_id"].as_str().map(str::to_owned);
        (holder, view)
    }

    /// Both tools name `who` as the live holder of `issue`, and a third
    /// instance of each is turned away naming it: git maverick's (dave's
    /// claim: exit 4, `who` the holder of its view) and Maverick's (a
    /// third session's `coord claim`: exit 2, "already claimed by instance
    /// WHO with live lease", which it says exactly when its `coord read`
    /// names WHO: the newest claim, the label on, the newest lease live).
    /// Returns git maverick's view of the issue.
    #[track_caller]
    fn assert_both_name(&self, issue: u64, who: &str, when: &str) -> Value {
        let n = issue.to_string();
        let refused = self.dave.maverick(&["coord", "claim", &n, "--json"]);
        refused.expect(4);
        let view = refused.json()["issues"][0].clone();
        assert_eq!(
            view["holder"]["instance_id"], who,
            "{when}: git maverick's holder: {view}"
        );
        assert_eq!(view["decision"], "held", "{when}: {view}");
        let third = self.maverick_3.coord("claim", issue, &[]);
        third.expect(2);
        assert_eq!(
            third.stderr,
            format!("claim rejected: #{issue} already claimed by instance {who} with live lease\n"),
            "{when}: Maverick's holder"
        );
        view
    }

    /// `git maverick coord claim ISSUE` by alice, in the background.
    fn alice_claims(&self, issue: u64) -> Spawned {
        claims_in_background(&self.alice, issue, &[])
    }

    /// Every release marker alice wrote on `issue`.
    fn alice_releases(&self, issue: u64) -> Vec<(String, String)> {
        self.env
            .releases(issue)
            .into_iter()
            .filter(|(who, _)| who == "alice")
            .collect()
    }
}

/// `git maverick coord claim ISSUE [MORE…] --json` by `repo`, in the background.
fn claims_in_background(repo: &Repo<'_>, issue: u64, more: &[&str]) -> Spawned {
    let n = issue.to_string();
    let mut args = vec!["coord", "claim", &n, "--json"];
    args.extend(more);
    spawn(&["coord", "claim", "--json"], repo.command(&args))
}

/// A request git maverick (not gh) sent.
fn from_git_maverick(r: &HeldRequest<'_>) -> bool {
    !r.is_from_gh()
}

fn path_of<'r>(r: &HeldRequest<'r>) -> &'r str {
    r.path.split('?').next().unwrap_or(r.path)
}

/// git maverick adding the label to `issue`: the first write of its claim,
/// after the read its guard judged.
fn git_maverick_labels(issue: u64) -> impl Fn(&HeldRequest<'_>) -> bool + Send + 'static {
    move |r| {
        from_git_maverick(r)
            && r.method == "POST"
            && path_of(r).ends_with(&format!("/issues/{issue}/labels"))
    }
}

/// Whether a request writes a comment (`{"body": ...}`) holding a marker
/// block of `kind`.
fn writes_a_marker(r: &HeldRequest<'_>, kind: MarkerKind) -> bool {
    serde_json::from_str::<Value>(r.body).is_ok_and(|request| {
        request["body"]
            .as_str()
            .is_some_and(|body| first_block(body, kind).is_some())
    })
}

/// Maverick posting a claim comment.
fn maverick_posts_a_claim(r: &HeldRequest<'_>) -> bool {
    r.is_from_gh() && r.method == "POST" && writes_a_marker(r, MarkerKind::Claim)
}

/// Maverick writing its lease (a new comment or a PATCH): the last write
/// of its claim, before its re-read.
fn maverick_writes_a_lease(r: &HeldRequest<'_>) -> bool {
    r.is_from_gh() && writes_a_marker(r, MarkerKind::Lease)
}

// ------------------------------------------------------------- mixed races

/// alice's claim comment is posted first; Maverick, which read the issue
/// before alice's lease, claims after it; alice's settle finds
/// Maverick's claim one generation above hers (Maverick's "latest
/// wins"), loses (exit 6) and withdraws by editing her claim comment:
/// no release marker, so Maverick still reads Maverick's live lease and
/// a third Maverick keeps off.
#[test]
fn git_maverick_claims_first_and_loses_the_settle_to_a_later_maverick_claim() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let issue = 201;
    let hold = env.github().hold_answer(move |r| {
        from_git_maverick(r)
            && r.method == "POST"
            && path_of(r).ends_with(&format!("/issues/{issue}/comments"))
            && writes_a_marker(r, MarkerKind::Claim)
    });
    let alice = t.alice_claims(issue);
    hold.wait_until_holding();
    t.maverick.coord("claim", issue, &[]).expect(0);
    hold.release();
    let alice = alice.finish();
    alice.expect(6);
    assert_eq!(alice.json()["winner"], MAVERICK, "{}", alice.stdout);

    // alice's claim comment no longer reads as a claim, to either tool.
    let first = &env.comments(issue)[0];
    let kinds: Vec<MarkerKind> = parse_markers(&first.body)
        .into_iter()
        .map(|m| m.expect("a marker that parses").kind)
        .collect();
    assert_eq!(kinds, [MarkerKind::Withdrawn], "{}", first.body);
    assert!(
        t.alice_releases(issue).is_empty(),
        "{:?}",
        env.releases(issue)
    );
    assert_eq!(env.labels(issue), [LABEL]);
    let view = t.assert_both_name(issue, MAVERICK, "after the race");
    // The withdrawn claim still counts: Maverick's is one above it.
    assert_eq!(view["generation"], 2, "{view}");

    // Each side's next heartbeat: Maverick's renews, alice's finds the
    // claim lost and writes nothing.
    let before = env.comments(issue).len();
    t.maverick.coord("heartbeat", issue, &[]).expect(0);
    t.alice
        .maverick(&["coord", "heartbeat", &issue.to_string()])
        .expect(7);
    assert_eq!(env.comments(issue).len(), before, "a heartbeat posted");
    assert!(t.alice_releases(issue).is_empty());
    t.assert_both_name(issue, MAVERICK, "after both heartbeats");
}

/// Maverick reads the labels before alice claims and writes after
/// alice's whole claim (claim, lease, settle: exit 0). Its later claim
/// holds for both tools; alice learns at her next heartbeat (exit 7).
#[test]
fn git_maverick_claims_first_and_loses_at_its_heartbeat() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let issue = 202;
    let hold = env.github().hold_answer(move |r| {
        r.is_from_gh()
            && path_of(r) == "/graphql"
            && r.body.contains("IssueByNumber")
            && r.body.contains(&format!("\"number\":{issue}"))
    });
    let maverick = t.maverick.spawn_coord("claim", issue);
    hold.wait_until_holding();
    t.alice
        .maverick(&["coord", "claim", &issue.to_string()])
        .expect(0);
    hold.release();
    maverick.finish().expect(0);

    t.assert_both_name(issue, MAVERICK, "after the race");
    t.maverick.coord("heartbeat", issue, &[]).expect(0);
    let lost = t
        .alice
        .maverick(&["coord", "heartbeat", &issue.to_string()]);
    insta::assert_snapshot!(
        "heartbeat_lost_to_a_maverick_claim",
        screen_naming(&env, &lost, &[(MAVERICK, "[maverick-instance]")])
    );
    assert!(
        t.alice_releases(issue).is_empty(),
        "{:?}",
        env.releases(issue)
    );
    let view = t.assert_both_name(issue, MAVERICK, "after both heartbeats");
    assert_eq!(view["holder"]["writer"], "maverick", "{view}");
    assert_eq!(view["generation"], 2, "one above alice's claim: {view}");
}

/// alice reads the issue free and adds the label; before her claim
/// comment, Maverick claims it whole (exit 0). alice's claim comes
/// after: the newest claim, so Maverick names alice, and git maverick
/// lets it stand over the Maverick claim it raced. Maverick's next
/// heartbeat finds the claim lost (exit 3) and writes nothing.
#[test]
fn maverick_claims_first_and_a_racing_git_maverick_claim_stands() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let issue = 203;
    let hold = env.github().hold_answer(git_maverick_labels(issue));
    let alice = t.alice_claims(issue);
    hold.wait_until_holding();
    t.maverick.coord("claim", issue, &[]).expect(0);
    hold.release();
    alice.finish().expect(0);

    t.assert_both_name(issue, "alice", "after the race");
    let before = env.comments(issue).len();
    let lost = t.maverick.coord("heartbeat", issue, &[]);
    lost.expect(3);
    assert_eq!(
        lost.stderr,
        format!("claim lost: #{issue} claim now held by another instance\n")
    );
    let n = issue.to_string();
    let renewed = t.alice.maverick(&["coord", "heartbeat", &n, "--json"]);
    renewed.expect(0);
    assert_eq!(renewed.json()["result"], "renewed");
    assert_eq!(env.comments(issue).len(), before, "a heartbeat posted");
    let view = t.assert_both_name(issue, "alice", "after both heartbeats");
    assert_eq!(view["generation"], 1, "{view}");

    // Where they still differ: Maverick's session end releases every issue
    // its session claimed, this lost one too, from under alice.
    let swept = t
        .maverick
        .run(&["coord", "release-all", "--reason", "session-end"]);
    swept.expect(0);
    assert_eq!(
        swept.stdout,
        format!("released {GITHUB_REPO}#{issue}\n1 claim(s) released\n")
    );
    assert_eq!(t.maverick_3.names(issue), None);
    assert_eq!(t.git_maverick_names(issue).0, None);
    t.alice.maverick(&["coord", "heartbeat", &n]).expect(7);
    // gh went nowhere but the fake GitHub: no tunnel was ever asked for.
    let requests = env.github().requests();
    assert!(requests
        .iter()
        .all(|r| r.method != "CONNECT" && r.path.starts_with('/')));
}

/// As above, but Maverick's own re-read comes after alice's claim:
/// Maverick's claim says "race lost" (exit 2) at once, and leaves its
/// comments behind (Maverick releases nothing when it loses).
#[test]
fn maverick_claims_first_and_learns_at_its_claim_that_git_maverick_won() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let issue = 204;
    let alice_label = env.github().hold_answer(git_maverick_labels(issue));
    let alice = t.alice_claims(issue);
    alice_label.wait_until_holding();
    let maverick_lease = env.github().hold_answer(maverick_writes_a_lease);
    let maverick = t.maverick.spawn_coord("claim", issue);
    maverick_lease.wait_until_holding();
    alice_label.release();
    alice.finish().expect(0);
    maverick_lease.release();
    let lost = maverick.finish();
    lost.expect(2);
    assert_eq!(
        lost.stderr,
        format!("claim rejected: #{issue} race lost — superseded by claim from instance alice\n")
    );
    t.assert_both_name(issue, "alice", "after the race");
    t.maverick.coord("heartbeat", issue, &[]).expect(3);
    t.alice
        .maverick(&["coord", "heartbeat", &issue.to_string()])
        .expect(0);
    t.assert_both_name(issue, "alice", "after both heartbeats");
}

/// Two Maverick sessions race: the first one's re-read sees the
/// second's claim and gives up; git maverick names the second too.
#[test]
fn two_maverick_sessions_race_and_git_maverick_names_the_newest() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let issue = 205;
    let first_claim = env.github().hold_answer(maverick_posts_a_claim);
    let first = t.maverick.spawn_coord("claim", issue);
    first_claim.wait_until_holding();
    t.maverick_2.coord("claim", issue, &[]).expect(0);
    first_claim.release();
    let lost = first.finish();
    lost.expect(2);
    assert_eq!(
        lost.stderr,
        format!(
            "claim rejected: #{issue} race lost — superseded by claim from instance {MAVERICK_2}\n"
        )
    );
    t.assert_both_name(issue, MAVERICK_2, "after the race");
    t.maverick.coord("heartbeat", issue, &[]).expect(3);
    t.maverick_2.coord("heartbeat", issue, &[]).expect(0);
    let view = t.assert_both_name(issue, MAVERICK_2, "after both heartbeats");
    assert_eq!(view["generation"], 2, "{view}");
    assert_eq!(view["holder"]["writer"], "maverick", "{view}");
}

/// Maverick claims first; alice's claim races it and stands. Maverick's
/// lease upsert looked for the newest lease block before alice's claim,
/// so its lease is a new comment after alice's: the lease every Maverick
/// reads. alice's heartbeats renew there (a new lease comment), not in her
/// own older one, so Maverick keeps reading alice's issue as held past
/// Maverick's own ten minutes.
#[test]
fn git_maverick_renews_where_maverick_reads_the_lease() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let issue = 209;
    let alice_label = env.github().hold_answer(git_maverick_labels(issue));
    let alice = t.alice_claims(issue);
    alice_label.wait_until_holding();
    // Maverick's lookup for the newest lease comment, after its claim.
    let claimed = AtomicBool::new(false);
    let lookup = env.github().hold_answer(move |r| {
        if maverick_posts_a_claim(r) {
            claimed.store(true, SeqCst);
        }
        claimed.load(SeqCst)
            && r.is_from_gh()
            && r.method == "GET"
            && path_of(r).ends_with(&format!("/issues/{issue}/comments"))
    });
    let maverick = t.maverick.spawn_coord("claim", issue);
    lookup.wait_until_holding();
    alice_label.release();
    alice.finish().expect(0);
    lookup.release();
    maverick.finish().expect(2);
    let newest = lease_comment(&env, issue);
    let lease = first_block(&newest.body, MarkerKind::Lease).unwrap();
    assert_eq!(
        lease.payload.get("instance_id").and_then(|v| v.as_str()),
        Some(MAVERICK),
        "Maverick's lease is the newest: {}",
        newest.body
    );
    t.assert_both_name(issue, "alice", "after the race");

    env.advance_clock(5 * 60);
    let n = issue.to_string();
    t.alice.maverick(&["coord", "heartbeat", &n]).expect(0);
    let renewed = lease_comment(&env, issue);
    assert!(renewed.id > newest.id, "renewed in a new comment");
    let lease = first_block(&renewed.body, MarkerKind::Lease).unwrap();
    assert_eq!(
        lease.payload.get("instance_id").and_then(|v| v.as_str()),
        Some("alice"),
        "{}",
        renewed.body
    );
    t.maverick.coord("heartbeat", issue, &[]).expect(3);
    // Past Maverick's ten minutes from its lease: still alice's, live.
    env.advance_clock(6 * 60);
    t.assert_both_name(issue, "alice", "eleven minutes on");
}

/// A git maverick takeover (carol) races a Maverick takeover of alice's
/// stale claim: Maverick writes its takeover comment and its plain claim,
/// carol's claim lands after both, and Maverick's re-read sees it. Both
/// tools name carol: Maverick's two comments are one step, which carol's
/// claim (one above alice's) matches and, coming later, supersedes.
#[test]
fn a_git_maverick_takeover_that_races_a_maverick_takeover_stands() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let issue = 210;
    let n = issue.to_string();
    t.alice.maverick(&["coord", "claim", &n]).expect(0);
    env.advance_clock(PAST_A_LEASE);
    let carol_label = env.github().hold_answer(git_maverick_labels(issue));
    let carol = claims_in_background(&t.carol, issue, &["--takeover"]);
    carol_label.wait_until_holding();
    let maverick_lease = env.github().hold_answer(maverick_writes_a_lease);
    let maverick = t.maverick.spawn_coord("takeover", issue);
    maverick_lease.wait_until_holding();
    carol_label.release();
    let carol = carol.finish();
    carol.expect(0);
    assert_eq!(carol.json()["generation"], 2);
    maverick_lease.release();
    let lost = maverick.finish();
    lost.expect(2);
    assert_eq!(
        lost.stderr,
        format!(
            "takeover rejected: #{issue} race lost — superseded by claim from instance carol\n"
        )
    );
    t.assert_both_name(issue, "carol", "after the race");
    t.maverick.coord("heartbeat", issue, &[]).expect(3);
    t.carol.maverick(&["coord", "heartbeat", &n]).expect(0);
    t.alice.maverick(&["coord", "heartbeat", &n]).expect(7);
    t.assert_both_name(issue, "carol", "after the heartbeats");
}

// -------------------------------------------------- takeovers and releases

/// Maverick's takeover: a takeover comment, then a plain claim, and its
/// lease PATCHed over alice's lease comment. git maverick counts the
/// pair as one generation; alice's next heartbeat finds the claim lost.
#[test]
fn maverick_takes_over_a_stale_git_maverick_claim() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let issue = 206;
    let n = issue.to_string();
    t.alice.maverick(&["coord", "claim", &n]).expect(0);
    let alice_lease = lease_comment(&env, issue);
    t.maverick.coord("takeover", issue, &[]).expect(2);
    env.advance_clock(PAST_A_LEASE);
    assert_eq!(t.maverick_3.names(issue), None, "stale to Maverick too");
    t.maverick.coord("takeover", issue, &[]).expect(0);

    let comments = env.comments(issue);
    let takeover = &comments[comments.len() - 2];
    assert!(
        takeover.body.starts_with(&format!(
            "<!-- maverick takeover -->\nTaking over #{issue} from instance `alice` — prior lease stale.\n\n```maverick-claim\n"
        )),
        "{}",
        takeover.body
    );
    // Its lease went over alice's comment, whole.
    let patched = lease_comment(&env, issue);
    assert_eq!(patched.id, alice_lease.id);
    assert!(patched
        .body
        .starts_with("<!-- maverick lease -->\n\n```maverick-lease\n"));

    let view = t.assert_both_name(issue, MAVERICK, "after the takeover");
    assert_eq!(
        view["generation"], 2,
        "the takeover pair is one step: {view}"
    );
    assert_eq!(view["holder"]["writer"], "maverick");
    assert_eq!(view["lease"]["comment_id"], alice_lease.id, "{view}");
    let lost = t.alice.maverick(&["coord", "heartbeat", &n]);
    lost.expect(7);
    t.maverick.coord("heartbeat", issue, &[]).expect(0);
    t.assert_both_name(issue, MAVERICK, "after both heartbeats");
}

#[test]
fn git_maverick_takes_over_a_stale_maverick_claim() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let issue = 207;
    let n = issue.to_string();
    // Maverick keeps its scope as typed: "207, 208" gives " 208".
    t.maverick
        .coord("claim", issue, &["--scope", "207, 208"])
        .expect(0);
    let (_, view) = t.git_maverick_names(issue);
    assert_eq!(view["holder"]["scope"], json!([207, 208]), "{view}");
    t.alice.maverick(&["coord", "claim", &n]).expect(4);
    env.advance_clock(PAST_A_LEASE);
    t.alice.maverick(&["coord", "claim", &n]).expect(5);
    let took = t.alice.maverick(&["coord", "takeover", &n, "--json"]);
    took.expect(0);
    assert_eq!(took.json()["generation"], 2);
    t.assert_both_name(issue, "alice", "after the takeover");
    t.maverick.coord("heartbeat", issue, &[]).expect(3);
    t.alice.maverick(&["coord", "heartbeat", &n]).expect(0);
    t.assert_both_name(issue, "alice", "after both heartbeats");
}

#[test]
fn each_tool_claims_after_the_other_released() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let issue = 208;
    let n = issue.to_string();
    // Maverick releases (label first, then its release comment).
    t.maverick.coord("claim", issue, &[]).expect(0);
    t.maverick
        .coord("release", issue, &["--reason", "merged"])
        .expect(0);
    let release = env.comments(issue).last().unwrap().body.clone();
    assert!(
        release.starts_with("<!-- maverick lease released: merged -->\n\n```maverick-lease\n"),
        "{release}"
    );
    let (holder, view) = t.git_maverick_names(issue);
    assert_eq!(
        (holder, &view["decision"]),
        (None, &json!("free")),
        "{view}"
    );
    t.alice.maverick(&["coord", "claim", &n]).expect(0);
    t.assert_both_name(issue, "alice", "after alice's claim");

    // alice releases; Maverick claims, its lease PATCHed over alice's
    // release comment (the newest lease block).
    t.alice
        .maverick(&["coord", "release", &n, "--reason", "merged"])
        .expect(0);
    assert_eq!(t.alice_releases(issue), [("alice".into(), "merged".into())]);
    assert_eq!(t.maverick_3.names(issue), None);
    t.maverick_2.coord("claim", issue, &[]).expect(0);
    t.assert_both_name(issue, MAVERICK_2, "after Maverick's claim");
    t.alice.maverick(&["coord", "heartbeat", &n]).expect(7);
}

/// The comment that carries the issue's newest lease block: Maverick's
/// upsert target.
fn lease_comment(env: &TestEnv, issue: u64) -> crate::support::StoredComment {
    env.comments(issue)
        .into_iter()
        .rev()
        .find(|c| first_block(&c.body, MarkerKind::Lease).is_some())
        .expect("a lease comment")
}

// -------------------------------------------------------------- one person

/// A Claude Code session that runs both tools is one instance; in a
/// Kiro session started inside it, Kiro's session names it, for both;
/// `MAVERICK_INSTANCE_ID` beats both sessions, for both.
#[test]
fn one_session_is_one_instance_whichever_tool_runs() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let read_in = |issue: u64, vars: &[(&str, &str)]| {
        let mut cmd = t
            .carol
            .maverick_command(&["coord", "read", &issue.to_string(), "--json"]);
        for (var, value) in vars {
            cmd.env(var, value);
        }
        let run = Run::from_output(&["coord", "read", "--json"], cmd.output().unwrap());
        run.json()
    };

    let claimed = t.maverick.coord("claim", 210, &[]);
    claimed.expect(0);
    let payload: Value = serde_json::from_str(&claimed.stdout).unwrap();
    assert_eq!(payload["instance_id"], MAVERICK);
    for var in ["CLAUDE_CODE_SESSION_ID", "CLAUDE_SESSION_ID"] {
        let view = read_in(210, &[(var, MAVERICK_SESSION)]);
        assert_eq!(view["instance_id"], MAVERICK, "{var}");
        assert_eq!(view["decision"], "ours", "{var}: Maverick's claim is ours");
    }

    let kiro = [
        ("KIRO_SESSION_ID", "kiro-1"),
        ("CLAUDE_CODE_SESSION_ID", MAVERICK_SESSION),
    ];
    let mut in_kiro = Maverick::in_session(&env, "claude-in-kiro");
    in_kiro.session = None;
    in_kiro.extra = kiro.iter().map(|(k, v)| (*k, v.to_string())).collect();
    let claimed = in_kiro.coord("claim", 211, &[]);
    claimed.expect(0);
    let kiro_instance = serde_json::from_str::<Value>(&claimed.stdout).unwrap()["instance_id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(kiro_instance, "1272d7054e", "sha256(\"kiro-1\")");
    let view = read_in(211, &kiro);
    assert_eq!(view["instance_id"], kiro_instance.as_str());
    assert_eq!(view["decision"], "ours");

    let pinned = [
        ("MAVERICK_INSTANCE_ID", "pinned-1"),
        ("KIRO_SESSION_ID", "kiro-1"),
    ];
    let mut as_pinned = Maverick::in_session(&env, "pinned");
    as_pinned.extra = pinned.iter().map(|(k, v)| (*k, v.to_string())).collect();
    as_pinned.coord("claim", 212, &[]).expect(0);
    let view = read_in(212, &pinned);
    assert_eq!(view["instance_id"], "pinned-1");
    assert_eq!(view["decision"], "ours");
    assert_eq!(read_in(211, &pinned)["decision"], "held");
}

/// Maverick takes `MAVERICK_INSTANCE_ID` as any text, so its claim may
/// name an id git maverick would refuse as its own (a space, an apostrophe):
/// that claim still holds the issue for git maverick, under the id as
/// written, never dropped as unreadable (which would invite double work).
#[test]
fn a_maverick_claim_under_an_id_git_maverick_refuses_still_holds() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let odd = "Alice's laptop";
    let mut as_odd = Maverick::in_session(&env, "odd");
    as_odd.extra = vec![("MAVERICK_INSTANCE_ID", odd.to_owned())];
    as_odd.coord("claim", 213, &[]).expect(0);
    let read = t.carol.maverick(&["coord", "read", "213", "--json"]);
    read.expect(4);
    let view = read.json();
    assert_eq!(view["decision"], "held", "{view}");
    assert_eq!(view["holder"]["instance_id"], odd, "{view}");
    t.carol.maverick(&["coord", "claim", "213"]).expect(4);
}

/// Outside an agent session Maverick keeps its instance in the per-user
/// `~/.maverick/instance_id`, and rewrites it for each session it runs.
/// That file names Maverick's session, not every shell: a clone's own id
/// never moves under its live claims because Maverick ran (SPEC 2), while a
/// session variable still makes both tools one instance.
#[test]
fn a_clone_keeps_its_instance_when_maverick_runs_beside_it() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let person = Maverick::envless(&env);
    let file = env.home().join(".maverick/instance_id");
    let envless =
        |args: &[&str]| Run::from_output(args, t.carol.maverick_command(args).output().unwrap());
    let instance_setting = || {
        let config = envless(&["config", "--json"]).json();
        let setting = config["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == "instance")
            .cloned()
            .unwrap_or_else(|| panic!("no instance setting: {config}"));
        (
            setting["value"].as_str().unwrap().to_owned(),
            setting["from"].as_str().unwrap().to_owned(),
        )
    };
    // The person claims with git maverick outside any session.
    let (own, _) = instance_setting();
    envless(&["coord", "claim", "221"]).expect(0);
    assert!(!file.exists());

    // Maverick runs on the same account and writes its instance file.
    let claimed = person.coord("claim", 220, &[]);
    claimed.expect(0);
    let id = std::fs::read_to_string(&file).expect("Maverick keeps its instance there");
    assert_eq!(id.trim().len(), 10, "{id:?}");
    assert_ne!(own, id.trim());

    // The clone is still its own instance: its heartbeat keeps its claim.
    let (value, from) = instance_setting();
    assert_eq!(value, own, "the clone's id moved under its live claim");
    insta::assert_snapshot!("instance_kept_beside_maverick", env.normalise(&from));
    envless(&["coord", "heartbeat", "221"]).expect(0);
    // And Maverick's claim is another instance's, never the shell's.
    let view = envless(&["coord", "read", "220", "--json"]).json();
    assert_eq!(view["holder"]["instance_id"], id.trim(), "{view}");
    assert_eq!(view["decision"], "held", "{view}");
    let _ = envless(&["coord", "release", "220", "--reason", "abort"]);
    let view = envless(&["coord", "read", "220", "--json"]).json();
    assert_eq!(view["holder"]["instance_id"], id.trim(), "{view}");

    // git maverick's own settings still come first.
    t.carol.git(&["config", "maverick.instance", "carol-desk"]);
    let view = envless(&["coord", "read", "220", "--json"]).json();
    assert_eq!(view["instance_id"], "carol-desk");
    t.carol.git(&["config", "--unset", "maverick.instance"]);
    // A session names one instance for both tools.
    let mut cmd = t
        .carol
        .maverick_command(&["coord", "read", "220", "--json"]);
    cmd.env("CLAUDE_CODE_SESSION_ID", MAVERICK_SESSION);
    let view = Run::from_output(&["coord", "read"], cmd.output().unwrap()).json();
    assert_eq!(view["instance_id"], MAVERICK);
}

// ----------------------------------------------------------- durable state

/// `maverick-state` on an epic: git maverick's comment is Maverick's
/// too (`state show`, and `state set` updates that comment in place),
/// and the other way round.
#[test]
fn epic_state_written_by_either_tool_reads_in_the_other() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let file = env.input_file(
        "state.json",
        r#"{"epic": 120, "stories": {"140": "merged", "142": "in_flight"}}"#,
    );
    t.alice
        .maverick(&["state", "put", "state", "120", &file])
        .expect(0);
    let shown = t.maverick.run(&["state", "show", GITHUB_REPO, "120"]);
    shown.expect(0);
    let state: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(
        state["stories"],
        json!({"140": "merged", "142": "in_flight"})
    );

    t.maverick
        .run(&["state", "set", GITHUB_REPO, "120", "150", "in_flight"])
        .expect(0);
    let comments = env.comments(120);
    assert_eq!(comments.len(), 1, "updated in place");
    assert!(comments[0]
        .body
        .starts_with("<!-- maverick epic-state snapshot -->\n\n```maverick-state\n"));
    let got = t
        .alice
        .maverick(&["state", "get", "state", "120", "--json"])
        .expect(0)
        .json();
    assert_eq!(
        got["marker"]["stories"],
        json!({"140": "merged", "142": "in_flight", "150": "in_flight"})
    );

    // git maverick's update keeps the comment, and Maverick reads it.
    t.alice
        .maverick(&["state", "story", "120", "150", "merged"])
        .expect(0);
    assert_eq!(env.comments(120).len(), 1);
    let shown = t.maverick.run(&["state", "show", GITHUB_REPO, "120"]);
    let state: Value = serde_json::from_str(&shown.stdout).unwrap();
    assert_eq!(state["stories"]["150"], "merged");
}

// ---------------------------------------------- how Maverick reads markers

/// Maverick finds a marker with a pattern, not by Markdown: a claim
/// quoted inside another code block is a claim to it, a `~~~` fence is
/// nothing, and one malformed block of a kind stops every command on
/// the issue. git maverick reads by CommonMark and skips what it cannot
/// parse. (README, "Moving from Maverick".)
#[test]
fn maverick_reads_markers_by_its_pattern() {
    let env = TestEnv::with_surface(Surface::Github);
    let t = team(&env);
    let comments_fixture = |name: &str| {
        let path = format!("{}/fixtures/comments/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let n = |issue: u64| issue.to_string();

    for issue in 230..=236 {
        touch(&t.carol, issue);
    }
    env.add_comment(230, "dana", &comments_fixture("fence-inside-code-block.md"));
    let read = t.maverick.read(230);
    assert_eq!(read["claim"]["instance_id"], "example-00000000", "{read}");
    let (holder, view) = t.git_maverick_names(230);
    assert_eq!((holder, &view["decision"]), (None, &json!("free")));

    env.add_comment(231, "dana", &comments_fixture("tilde-fence.md"));
    assert_eq!(t.maverick.read(231)["claim"], Value::Null);
    t.carol
        .maverick(&["coord", "label", "add", &n(231), LABEL])
        .expect(0);
    let (holder, _) = t.git_maverick_names(231);
    assert_eq!(holder.as_deref(), Some("carol-laptop-0a0b0c0d"));

    // A malformed block of a kind stops every Maverick command that reads
    // the kind on that issue (exit 1, a traceback); git maverick skips it.
    env.add_comment(232, "dana", &comments_fixture("malformed-json.md"));
    let crashed = t.maverick.run(&["state", "show", GITHUB_REPO, "232"]);
    crashed.expect(1);
    insta::assert_snapshot!(
        "maverick_state_show_of_malformed_json",
        crashed.stderr.lines().last().unwrap()
    );
    let broken_claim =
        comments_fixture("malformed-json.md").replace("maverick-state", "maverick-claim");
    env.add_comment(233, "dana", &broken_claim);
    t.alice.maverick(&["coord", "claim", &n(233)]).expect(0);
    let crashed = t.maverick.coord("claim", 233, &[]);
    crashed.expect(1);
    insta::assert_snapshot!(
        "maverick_claim_over_malformed_json",
        crashed.stderr.lines().last().unwrap()
    );
    t.carol.maverick(&["coord", "read", &n(233)]).expect(4);
    // A lease whose payload is an array: Maverick's read fails on it.
    env.add_comment(234, "dana", &comments_fixture("not-an-object.md"));
    let crashed = t.maverick.coord("read", 234, &[]);
    crashed.expect(1);
    insta::assert_snapshot!(
        "maverick_read_of_a_lease_that_is_an_array",
        crashed.stderr.lines().last().unwrap()
    );
    t.alice.maverick(&["coord", "claim", &n(234)]).expect(0);

    // A block cut short is nothing to Maverick (its pattern needs the
    // closing fence), and an error git maverick skips.
    env.add_comment(236, "dana", &comments_fixture("unterminated.md"));
    assert_eq!(t.maverick.read(236)["claim"], Value::Null);

    // What git maverick writes, Maverick reads as written (the races
    // above): whole-second `Z` stamps (a `.000Z` one would read as stale
    // at once).
    t.alice.maverick(&["coord", "claim", &n(235)]).expect(0);
    let lease = first_block(&lease_comment(&env, 235).body, MarkerKind::Lease).unwrap();
    let expires = lease.payload["expires_at"].as_str().unwrap();
    assert!(Timestamp::parse(expires).is_some(), "{expires}");
    assert!(expires.len() == 20 && expires.ends_with('Z'), "{expires}");
    // A `.000Z` stamp is expired to Maverick however far ahead it is.
    touch(&t.carol, 237);
    t.carol
        .maverick(&["coord", "label", "add", &n(237), LABEL])
        .expect(0);
    plant(&env, 237, "claim", MAVERICK_2);
    let far = fixture("lease")
        .replace(MAVERICK, MAVERICK_2)
        .replace("2026-11-30T10:10:00Z", "2099-01-01T00:00:00.000Z");
    env.add_comment(237, "dana", &far);
    let read = t.maverick.read(237);
    assert_eq!(read["lease_live"], false, "{read}");

    // Any label that starts with `blocked-by:#` blocks a Maverick claim;
    // git maverick's block labels name an issue.
    touch(&t.carol, 238);
    t.carol
        .maverick(&["coord", "label", "add", &n(238), "blocked-by:#later"])
        .expect(0);
    let blocked = t.maverick.coord("claim", 238, &[]);
    blocked.expect(2);
    insta::assert_snapshot!("maverick_claim_of_a_blocked_issue", blocked.stderr);
    t.alice.maverick(&["coord", "claim", &n(238)]).expect(0);
}

// ---------------------------------------------- fixtures, on both surfaces

/// A body of `fixtures/maverick/`: what Maverick 5.1.1 writes.
fn fixture(name: &str) -> String {
    let path = format!("{}/fixtures/maverick/{name}.md", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The first block of `kind` in a comment.
fn first_block(body: &str, kind: MarkerKind) -> Option<Marker> {
    parse_markers(body)
        .into_iter()
        .find(|m| match m {
            Ok(m) => m.kind == kind,
            Err(e) => e.kind() == kind,
        })?
        .ok()
}

/// Plants a Maverick body on `issue`, for `instance` and `issue`, as a
/// member's comment (Maverick writes as the person's gh login).
fn plant(env: &TestEnv, issue: u64, name: &str, instance: &str) -> u64 {
    let body = fixture(name)
        .replace(MAVERICK, instance)
        .replace("\"142\"", &format!("\"{issue}\""));
    env.add_comment(issue, "dana", &body)
}

on_both_surfaces!(
    every_fixture_is_what_maverick_writes,
    a_holder_without_a_lease_lives_the_ttl_its_claim_declared,
    state_put_refuses_what_maverick_cannot_read,
    maverick_state_markers_read_and_update_in_place,
    a_comment_with_two_blocks_of_a_kind_reads_the_first,
);

/// `fixtures/maverick/` is what the installed Maverick writes: its
/// `generate.py`, run with Maverick's own Python, gives the same bytes.
#[test]
fn fixtures_are_what_maverick_writes_byte_for_byte() {
    require_tools();
    let maverick = std::env::split_paths(&path_with_bin())
        .map(|dir| dir.join("maverick"))
        .find(|p| p.is_file())
        .unwrap();
    let script = std::fs::read_to_string(&maverick).unwrap();
    let python = script
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("#!"))
        .expect("the maverick console script names its Python");
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/maverick");
    let out = tempfile::tempdir().unwrap();
    let generated = out.path().join("bodies");
    let run = Command::new(python.trim())
        .arg(dir.join("generate.py"))
        .arg(&generated)
        .env_remove("MAVERICK_INSTANCE_ID")
        .env_remove("KIRO_SESSION_ID")
        .env_remove("CLAUDE_SESSION_ID")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let names = |dir: &Path| {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with(".md") && n != "README.md")
            .collect();
        names.sort();
        names
    };
    assert_eq!(names(&dir), names(&generated));
    for name in names(&dir) {
        assert_eq!(
            std::fs::read(dir.join(&name)).unwrap(),
            std::fs::read(generated.join(&name)).unwrap(),
            "{name}"
        );
    }
}

/// Each fixture parses as the kind Maverick wrote, with its preamble and
/// no newline after the closing fence.
fn every_fixture_is_what_maverick_writes(_surface: Surface) {
    for (name, kind, preamble) in [
        ("claim", MarkerKind::Claim, "<!-- maverick claim -->\n\n"),
        ("claim-scope", MarkerKind::Claim, "<!-- maverick claim -->\n\n"),
        ("claim-over-stale", MarkerKind::Claim, "<!-- maverick claim -->\n\n"),
        ("takeover", MarkerKind::Claim, "<!-- maverick takeover -->\nTaking over #161 from instance `alice` — prior lease stale.\n\n"),
        ("takeover-reason", MarkerKind::Claim, "<!-- maverick takeover -->\nTaking over #162"),
        ("takeover-claim", MarkerKind::Claim, "<!-- maverick claim -->\n\n"),
        ("lease", MarkerKind::Lease, "<!-- maverick lease -->\n\n"),
        ("lease-heartbeat", MarkerKind::Lease, "<!-- maverick lease -->\n\n"),
        ("lease-over-git-maverick", MarkerKind::Lease, "<!-- maverick lease -->\n\n"),
        ("release", MarkerKind::Lease, "<!-- maverick lease released: merged -->\n\n"),
        ("state", MarkerKind::State, "<!-- maverick epic-state snapshot -->\n\n"),
        ("dag", MarkerKind::Dag, "<!-- maverick maverick-dag -->\n\n"),
        ("bprop", MarkerKind::Bprop, "<!-- maverick bprop -->\n\n"),
        ("bprop-walked", MarkerKind::Bprop, "<!-- maverick bprop -->\n\n"),
        ("task-progress", MarkerKind::TaskProgress, "<!-- maverick task-progress -->\n\n"),
    ] {
        let body = fixture(name);
        assert!(body.starts_with(preamble), "{name}: {body}");
        assert!(body.ends_with("\n}\n```"), "{name}: ends with a newline");
        let marker = first_block(&body, kind).unwrap_or_else(|| panic!("{name}"));
        assert!(marker.payload.get("generation").and_then(|v| v.as_u64()).is_none(), "{name}");
        // git maverick renders the same payload byte for byte (the
        // takeover's preamble is two lines of Maverick's own).
        if !name.starts_with("takeover") || name == "takeover-claim" {
            let preamble = body[5..body.find(" -->").unwrap()].to_owned();
            let rendered = crate::support::mav::markers::render_marker(&marker);
            let expected = body.replacen(&format!("<!-- {preamble} -->"), &format!("<!-- {} -->", kind.preamble()), 1);
            assert_eq!(rendered, expected, "{name}");
        }
    }
    let progress = first_block(&fixture("task-progress"), MarkerKind::TaskProgress).unwrap();
    assert_eq!(progress.payload["phase"], "implement");
    let takeover = first_block(&fixture("takeover"), MarkerKind::Claim).unwrap();
    assert_eq!(takeover.payload.get("host"), None, "no host, no scope");
    assert_eq!(takeover.payload["takeover_of"], "alice");
    // The tasks comment is the agent's Markdown, checked off in place.
    assert!(fixture("tasks").starts_with("## Tasks\n\n- [ ] **"));
    assert_eq!(
        fixture("tasks-checked").lines().nth(2),
        Some("- [x] **Parse the marker fences** — Accept the fence Maverick writes.")
    );
    assert!(fixture("blocked-notice").starts_with("⛔ **Blocked by #142**"));
}

fn a_holder_without_a_lease_lives_the_ttl_its_claim_declared(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let setup = &env;
    let alice = setup.clone("alice");
    let carol = setup.clone("carol");
    // alice declares 20 minutes; her lease is then overwritten by
    // Maverick's upsert (the newest lease comment, whoever wrote it).
    alice
        .maverick(&["coord", "claim", "142", "--lease-ttl", "20m"])
        .expect(0);
    let claim = first_block(&setup.comments(142)[0].body, MarkerKind::Claim).unwrap();
    assert_eq!(claim.payload["lease_ttl"], 1200);
    let lease = lease_comment(setup, 142);
    setup.edit_comment(142, lease.id, &fixture("lease"));
    setup.advance_clock(PAST_A_LEASE);
    // Eleven minutes on, a reader whose own ttl is 10 minutes still sees
    // alice's 20.
    let view = carol
        .maverick(&["coord", "read", "142", "--json"])
        .expect(4)
        .json();
    assert_eq!(view["holder"]["instance_id"], "alice");
    assert_eq!(view["lease"]["comment_id"], Value::Null, "{view}");

    // Maverick's claim with no lease yet lives Maverick's ten minutes from
    // the claim, whatever ttl the reader sets for itself.
    carol
        .maverick(&["coord", "label", "add", "150", LABEL])
        .expect(0);
    plant(setup, 150, "claim", MAVERICK);
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
    let mut refused = Vec::new();
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
        // The error names the field (`named`) and the marker kind.
        let command = format!("git maverick state put {kind} 120 '{payload}'    # {named}");
        refused.push((command, screen(setup, &run)));
        assert!(setup.comments(120).is_empty(), "{kind} {payload} wrote");
    }
    let refused: Vec<(&str, String)> = refused
        .iter()
        .map(|(c, s)| (c.as_str(), s.clone()))
        .collect();
    insta::assert_snapshot!("state_put_of_what_maverick_cannot_read", screens(&refused));
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
    let state = first_block(&comments[0].body, MarkerKind::State).unwrap();
    assert_eq!(state.payload["epic"], 120);
    assert_eq!(state.payload["stories"], json!({"142": "merged"}));
    assert_eq!(state.payload["owner_note"], "keep");
    assert!(state
        .payload
        .get("updated_at")
        .and_then(|v| v.as_str())
        .is_some());
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

/// Makes sure the issue has a record to comment on, on either surface.
fn touch(repo: &Repo<'_>, issue: u64) {
    let n = issue.to_string();
    for verb in ["add", "remove"] {
        repo.maverick(&["coord", "label", verb, &n, "touched"])
            .expect(0);
    }
}

fn maverick_state_markers_read_and_update_in_place(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let setup = &env;
    let alice = setup.clone("alice");
    touch(&alice, 120);
    for name in ["dag", "state", "bprop"] {
        setup.add_comment(120, "dana", &fixture(name));
    }
    touch(&alice, 142);
    setup.add_comment(142, "dana", &fixture("task-progress"));
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
        let want = first_block(&fixture(name), MarkerKind::from_name(kind).unwrap()).unwrap();
        assert_eq!(got["marker"], Value::Object(want.payload), "{kind}");
    }
    // One story moves: Maverick's comment is PATCHed, in Maverick's shape.
    alice
        .maverick(&["state", "story", "120", "150", "in_flight"])
        .expect(0);
    let comments = setup.comments(120);
    assert_eq!(comments.len(), 3);
    let state = first_block(&comments[1].body, MarkerKind::State).unwrap();
    assert_eq!(
        state.payload["stories"],
        json!({"140": "merged", "142": "in_flight", "150": "in_flight"})
    );
    assert!(comments[1]
        .body
        .starts_with("<!-- maverick epic-state snapshot -->\n\n```maverick-state\n"));
    assert!(
        comments[1].body.ends_with("\n}\n```"),
        "as Maverick ends it"
    );
    // The dag keeps Maverick's shape: its `gh-state write` preamble.
    let path = alice.dir.join("dag.json");
    std::fs::write(&path, r#"{"stories": {"151": {"deps": ["150"]}}}"#).unwrap();
    alice
        .maverick(&["state", "put", "dag", "120", path.to_str().unwrap()])
        .expect(0);
    let dag = &setup.comments(120)[0].body;
    assert!(
        dag.starts_with("<!-- maverick maverick-dag -->\n\n```maverick-dag\n"),
        "{dag}"
    );
    assert_eq!(
        first_block(dag, MarkerKind::Dag).unwrap().payload["epic"],
        120
    );
}

fn a_comment_with_two_blocks_of_a_kind_reads_the_first(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let setup = &env;
    let alice = setup.clone("alice");
    let carol = setup.clone("carol");
    // A claim comment that quotes another claim after its own.
    carol
        .maverick(&["coord", "label", "add", "142", LABEL])
        .expect(0);
    let second = fixture("claim").replace(MAVERICK, "mallory-0001");
    let id = setup.add_comment(
        142,
        "dana",
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
    setup.add_comment(120, "dana", &format!("{first}\n{other}"));
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
