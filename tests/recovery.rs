//! Recovery that never makes things worse, and nothing trusted that should
//! not be (issue 29): what the surface says reaches a terminal only
//! escaped; a token goes only to the host the repository is on; a claim
//! without a lease is judged by its age; and the crash cases (a kill inside
//! `git worktree add`, a push the remote took before its tracking ref was
//! written) recover with the documented commands, through the failpoints.

use crate::support::{Repo, Run, Surface, TestEnv};
use serde_json::json;

on_both_surfaces!(surface_text_reaches_the_terminal_escaped);

// -- Terminal escapes from the surface ---------------------------------------

/// An instance id that sets the window title, erases the line and returns
/// the cursor, and a host that writes the clipboard (OSC 52).
const HOSTILE_INSTANCE: &str = "eve\x1b]0;pwned\x07\x1b[2K\rbob";
const HOSTILE_HOST: &str = "box\x1b]52;c;cm0gLXJmIH4K\x07";
/// A task title with a one-byte CSI (C1) that clears the screen, a DEL and
/// a cursor-up, and a right-to-left override.
const HOSTILE_TITLE: &str = "Parse\u{9b}2J blocks\x7f\x1b[1A \u{202e}exe.txt";

/// Every character a terminal acts on, in what a person was shown.
fn terminal_controls(text: &str) -> Vec<char> {
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t')
                || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        })
        .collect()
}

#[track_caller]
fn assert_escaped(run: &Run, shown: &[&str]) {
    let screen = run.screen();
    assert_eq!(terminal_controls(&screen), Vec::<char>::new(), "{screen:?}");
    for text in shown {
        assert!(screen.contains(text), "{text:?} not in {screen:?}");
    }
}

fn surface_text_reaches_the_terminal_escaped(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let carol = env.clone("carol");
    // A claim whose holder's id and host carry escape sequences, as anyone
    // with write access (or a broken client) could post one.
    let claim = json!({
        "instance_id": HOSTILE_INSTANCE,
        "host": HOSTILE_HOST,
        "scope": ["150"],
        "claimed_at": "2026-11-30T10:00:00Z",
    });
    carol
        .maverick(&["coord", "label", "add", "150", "claude-in-progress"])
        .expect(0);
    env.add_comment(
        150,
        "dana",
        &format!(
            "<!-- maverick claim -->\n\n```maverick-claim\n{}\n```\n",
            serde_json::to_string_pretty(&claim).unwrap()
        ),
    );
    // And a tasks comment whose title carries more.
    env.add_comment(
        150,
        "dana",
        &format!("## Tasks\n- [ ] **{HOSTILE_TITLE}** — the detail\n- [ ] **Two**\n"),
    );

    let escaped_instance = "eve\\x1b]0;pwned\\x07\\x1b[2K\\x0dbob";
    let read = carol.maverick(&["coord", "read", "150"]);
    read.expect(4);
    assert_escaped(&read, &[escaped_instance]);

    let list = carol.maverick(&["task", "list", "150"]);
    list.expect(0);
    assert_escaped(
        &list,
        &["Parse\\u{9b}2J blocks\\x7f\\x1b[1A \\u{202e}exe.txt"],
    );

    let status = carol.maverick(&["status"]);
    status.expect(0);
    assert_escaped(&status, &[escaped_instance]);

    // An error that quotes what the surface holds is escaped too.
    let takeover = carol.maverick(&["coord", "takeover", "150"]);
    assert_ne!(takeover.code, 0, "{}", takeover.screen());
    assert_escaped(&takeover, &[]);

    // JSON stays exact: a program gets the very bytes the surface holds.
    let json = carol.maverick(&["--json", "coord", "read", "150"]);
    json.expect(4);
    let json = json.json();
    assert_eq!(json["holder"]["instance_id"], HOSTILE_INSTANCE);
    assert_eq!(json["holder"]["host"], HOSTILE_HOST);
    let list = carol
        .maverick(&["--json", "task", "list", "150"])
        .expect(0)
        .json();
    assert_eq!(list["tasks"][0]["title"], HOSTILE_TITLE, "{list}");
}

// -- A claim whose lease was never written -----------------------------------

on_both_surfaces!(a_claim_without_a_lease_is_judged_by_its_age);

/// Runs `git maverick ARGS` in `repo` set to die at `point`, and checks
/// that it died there by SIGKILL, as `kill -9` would have killed it.
#[track_caller]
fn crash_at(repo: &Repo<'_>, point: &str, args: &[&str]) {
    use std::os::unix::process::ExitStatusExt as _;
    assert!(
        crate::support::mav::failpoint::ALL.contains(&point),
        "{point}"
    );
    let out = repo
        .command(args)
        .env(crate::support::mav::failpoint::ENV, point)
        .output()
        .expect("git-maverick runs");
    assert_eq!(
        out.status.signal(),
        Some(9),
        "{point}: {args:?} did not die there ({:?})\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn a_claim_without_a_lease_is_judged_by_its_age(surface: Surface) {
    let env = TestEnv::with_surface(surface);
    let alpha = env.clone("alpha");
    let beta = env.clone("beta");
    // alpha dies between its claim comment and its lease (on the git
    // surface the two are one compare-and-swap, so a claim comment without
    // a lease is one Maverick's claimer left: planted as Maverick writes it).
    match surface {
        Surface::Github => crash_at(
            &alpha,
            "claim-after-claim-comment",
            &["--lease-ttl", "2m", "coord", "claim", "5"],
        ),
        Surface::Git => {
            beta.maverick(&["coord", "label", "add", "5", "claude-in-progress"])
                .expect(0);
            let claim = json!({
                "instance_id": "alpha",
                "host": "devbox",
                "scope": ["5"],
                "claimed_at": "2026-11-30T10:00:00Z",
                "lease_ttl": 120,
            });
            env.add_comment(
                5,
                "alpha",
                &format!(
                    "<!-- maverick claim -->\n\n```maverick-claim\n{}\n```\n",
                    serde_json::to_string_pretty(&claim).unwrap()
                ),
            );
        }
    }
    let leases = env
        .comment_bodies(5)
        .iter()
        .filter(|b| b.contains("```maverick-lease"))
        .count();
    assert_eq!(leases, 0, "{:?}", env.comment_bodies(5));

    // Younger than the ttl its claim declares (2 minutes): held, whatever
    // ttl the reader sets for itself, and never taken over.
    for ttl in ["1s", "1h"] {
        let read = beta.maverick(&["--json", "--lease-ttl", ttl, "coord", "read", "5"]);
        read.expect(4);
        let read = read.json();
        assert_eq!(read["holder"]["instance_id"], "alpha", "{read}");
        assert_eq!(read["lease"]["heartbeat_at"], serde_json::Value::Null);
    }
    beta.maverick(&["coord", "claim", "5"]).expect(4);
    beta.maverick(&["coord", "takeover", "5"]).expect(4);

    // Older than the ttl: stale, and taken over as the README says.
    env.advance_clock(121);
    for ttl in ["1s", "1h"] {
        beta.maverick(&["--lease-ttl", ttl, "coord", "read", "5"])
            .expect(5);
    }
    beta.maverick(&["coord", "takeover", "5"]).expect(0);
    let read = alpha.maverick(&["--json", "coord", "read", "5"]).json();
    assert_eq!(read["holder"]["instance_id"], "beta");
}
