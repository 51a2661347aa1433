//! Maverick's own push (`push::cas_push`), the compare-and-swap the remote
//! enforces, against a real bare origin with the hook installed.
//!
//! `cas_push` runs git with the environment its `Git` carries: the test
//! passes a hermetic one explicitly and leaves its own process alone.

use crate::support::mav::branch_record::BranchStore;
use crate::support::mav::clock::Clock;
use crate::support::mav::git::{Git, GitEnv};
use crate::support::mav::push::{cas_push, cas_push_last_seen, PushError, Pusher};
use crate::support::{RepoKind, TestEnv};
use maverick_core::ids::InstanceId;

/// `instance`'s push of #142's branch.
fn by(instance: &str) -> Pusher<'static> {
    static CLOCK: std::sync::OnceLock<Clock> = std::sync::OnceLock::new();
    // A test's handful of ids, kept for the pushes that borrow them.
    let instance = Box::leak(Box::new(InstanceId::parse(instance).unwrap()));
    Pusher {
        issue: Some(142),
        instance,
        clock: CLOCK.get_or_init(Clock::system),
    }
}

use crate::support::STORY_BRANCH as BRANCH;

on_every_repo_kind!(cas_push_refuses_a_remote_that_moved_and_a_rewrite);

fn cas_push_refuses_a_remote_that_moved_and_a_rewrite(kind: RepoKind) {
    let env = TestEnv::with_repo_kind(kind);
    let a = env.claimed_clone("a");
    let home = env.path().join("cas-home");
    std::fs::create_dir_all(&home).unwrap();
    let git_env = GitEnv::empty()
        .set("HOME", &home)
        .set("GIT_CONFIG_GLOBAL", home.join("no-global-config"))
        .set("GIT_CONFIG_NOSYSTEM", "1")
        .set("LC_ALL", "C")
        .set("TZ", "UTC")
        // The pre-push hook runs `git-maverick` from PATH, as this instance.
        .set("PATH", crate::support::path_with_bin())
        .set("MAVERICK_INSTANCE", "a");
    let git = Git::new(&a.dir, git_env);
    let store = BranchStore::new(&git.common_dir().unwrap());
    // The claim recorded the branch's absence on origin as last seen.
    assert_eq!(store.get(BRANCH).unwrap().unwrap().last_seen, None);

    let first = a.commit_file("one.rs", "1\n", "feat: one");
    let pushed = cas_push(&git, "origin", "HEAD", BRANCH, None, by("a")).unwrap();
    assert_eq!(pushed, first);
    assert_eq!(env.origin_head(BRANCH), Some(first.clone()));
    assert_eq!(
        store.get(BRANCH).unwrap().unwrap().last_seen,
        Some(first.clone())
    );

    // The holder fetches; another clone pushes; the holder's swap fails.
    a.git(&["fetch", "--quiet", "origin"]);
    let b = env.clone("b");
    b.git(&["switch", "--quiet", BRANCH]);
    let intruder = b.commit_file("b.rs", "b\n", "feat: someone else");
    b.git(&["push", "--quiet", "origin", BRANCH]);
    a.commit_file("two.rs", "2\n", "feat: two");
    let err = cas_push(&git, "origin", "HEAD", BRANCH, Some(&first), by("a")).unwrap_err();
    assert!(matches!(err, PushError::Collision { .. }), "{err:?}");
    assert!(err.to_string().contains("someone else pushed"), "{err}");
    assert_eq!(env.origin_head(BRANCH), Some(intruder.clone()));
    // Not retried, not merged: last seen stays where this writer saw it.
    assert_eq!(
        store.get(BRANCH).unwrap().unwrap().last_seen,
        Some(first.clone())
    );

    // A rewrite of what was pushed is refused before any push, even with a
    // lease that matches (git would force it).
    a.git(&["reset", "--quiet", "--hard", "main"]);
    a.commit_file("one.rs", "rewritten\n", "feat: one, rewritten");
    let err = cas_push(&git, "origin", "HEAD", BRANCH, Some(&intruder), by("a")).unwrap_err();
    assert!(matches!(err, PushError::NotFastForward { .. }), "{err:?}");
    assert_eq!(env.origin_head(BRANCH), Some(intruder.clone()));

    // Only the holder pushes a managed branch.
    a.git(&["fetch", "--quiet", "origin"]);
    a.git(&["reset", "--quiet", "--hard", &intruder]);
    let mine = a.commit_file("three.rs", "3\n", "feat: three");
    let err = cas_push(
        &git,
        "origin",
        "HEAD",
        BRANCH,
        Some(&intruder),
        by("intruder"),
    )
    .unwrap_err();
    assert!(matches!(err, PushError::NotHolder { .. }), "{err:?}");

    // Even the holder's push is refused by its hook while this clone has
    // not accepted the intruder's head as last seen...
    let err = cas_push(&git, "origin", "HEAD", BRANCH, Some(&intruder), by("a")).unwrap_err();
    assert!(matches!(err, PushError::Refused { .. }), "{err:?}");
    assert!(err.to_string().contains("moved on the remote"), "{err}");
    // ...until whoever owns the work decides to build on it.
    crate::support::mav::prepush::record_seen(
        &git.common_dir().unwrap(),
        BRANCH,
        Some(&intruder),
        Some(142),
        &InstanceId::parse("a").unwrap(),
        &maverick::writer::prepush::SeenOn::of_remote(&git, "origin"),
        env.clock().now(),
    )
    .unwrap();
    // On top of the head it now expects, the holder's push goes through.
    let pushed = cas_push(&git, "origin", "HEAD", BRANCH, Some(&intruder), by("a")).unwrap();
    assert_eq!(pushed, mine);
    assert_eq!(env.origin_head(BRANCH), Some(mine.clone()));
    // And a plain `git push` after it raises no false alarm.
    let next = a.commit_file("four.rs", "4\n", "feat: four");
    let out = a.git_as_instance(&["push", "--quiet", "origin", BRANCH], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(env.origin_head(BRANCH), Some(next.clone()));
    // The plain push left its head pending; maverick's next push finds it.
    let fifth = a.commit_file("five.rs", "5\n", "feat: five");
    let pushed = cas_push_last_seen(&git, "origin", "HEAD", BRANCH, by("a")).unwrap();
    assert_eq!(pushed, fifth);
    assert_eq!(
        store.get(BRANCH).unwrap().unwrap().last_seen,
        Some(fifth.clone())
    );
    // A plain push, then someone else's: maverick's push sees the collision.
    let sixth = a.commit_file("six.rs", "6\n", "feat: six");
    let out = a.git_as_instance(&["push", "--quiet", "origin", BRANCH], &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    b.git(&["pull", "--quiet", "--ff-only", "origin", BRANCH]);
    let late = b.commit_file("late.rs", "late\n", "feat: late intrusion");
    b.git(&["push", "--quiet", "origin", BRANCH]);
    a.commit_file("seven.rs", "7\n", "feat: seven");
    let err = cas_push_last_seen(&git, "origin", "HEAD", BRANCH, by("a")).unwrap_err();
    assert!(matches!(err, PushError::Collision { .. }), "{err:?}");
    assert!(err.to_string().contains(&sixth), "{err}");
    assert_eq!(env.origin_head(BRANCH), Some(late));
}
