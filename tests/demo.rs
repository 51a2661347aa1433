//! The README's first command must keep working: run the demo script as a
//! newcomer does, letting it build the binary itself, with cargo's target
//! directory elsewhere (CARGO_TARGET_DIR, as CI and many users set it).

use std::path::{Path, PathBuf};

/// The target directory cargo built the binary under test in:
/// `<target>/debug/git-maverick`.
fn target_dir() -> PathBuf {
    let bin = Path::new(crate::support::BIN);
    let profile = bin.parent().expect("the binary is in a profile directory");
    profile
        .parent()
        .expect("the profile directory is in the target directory")
        .to_owned()
}

/// Where cargo and rustup keep their state: the test's HOME is a temp dir,
/// so name the real ones.
fn tool_home(var: &str, dir: &str) -> PathBuf {
    std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(dir))
}

/// Whether cargo (or this crate's build script) set `name` for the test
/// process, as opposed to the user's own environment (CARGO_HOME,
/// CARGO_TARGET_DIR, CARGO_PROFILE_*, ... stay).
fn cargo_set_for_tests(name: &str) -> bool {
    matches!(
        name,
        "CARGO"
            | "CARGO_MANIFEST_DIR"
            | "CARGO_MANIFEST_PATH"
            | "CARGO_CRATE_NAME"
            | "CARGO_BIN_NAME"
            | "CARGO_PRIMARY_PACKAGE"
            | "CARGO_TARGET_TMPDIR"
            | "CARGO_RUSTC_CURRENT_DIR"
            | "OUT_DIR"
            | "MAVERICK_BUILD_COMMIT"
            | "MAVERICK_BUILD_EPOCH"
    ) || name.starts_with("CARGO_PKG_")
        || name.starts_with("CARGO_BIN_EXE_")
}

#[test]
fn the_readme_demo_builds_and_runs_every_step_as_it_says() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh");
    let env = crate::support::TestEnv::new();
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(script).current_dir(env.path());
    env.apply_env(&mut cmd);
    // No MAVERICK_BIN: the script runs `cargo build` and must find the
    // binary where cargo put it, not in the clone's target/debug.
    // A newcomer's shell has none of the variables cargo sets for this test
    // process (CARGO_MANIFEST_DIR, CARGO_PKG_*, the build script's
    // MAVERICK_BUILD_*, ...). Build scripts (ring's, maverick's) name some
    // of them as inputs, so inheriting them made the script's `cargo build`
    // rebuild ring, rustls and octocrab, a minute of CPU in the test phase.
    for (var, _) in std::env::vars_os() {
        let name = var.to_string_lossy();
        if cargo_set_for_tests(&name) {
            cmd.env_remove(&var);
        }
    }
    cmd.env_remove("MAVERICK_BIN")
        .env("CARGO_TARGET_DIR", target_dir())
        .env("CARGO_HOME", tool_home("CARGO_HOME", ".cargo"))
        .env("RUSTUP_HOME", tool_home("RUSTUP_HOME", ".rustup"))
        // The build is up to date; no test talks to the internet.
        .env("CARGO_NET_OFFLINE", "true")
        .env("TMPDIR", env.path());
    let out = cmd.output().expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed\n{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("git-maverick: {}\n", crate::support::BIN)),
        "the demo ran the binary cargo built under CARGO_TARGET_DIR\n{stdout}"
    );
    assert!(
        stdout.contains("demo finished: every step exited as expected"),
        "{stdout}"
    );
    assert!(
        stdout.contains("claim lost: #7 is held by bob (generation 2)"),
        "{stdout}"
    );
}
