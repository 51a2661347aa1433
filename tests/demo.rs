//! The README's demo must keep working: run scripts/demo.sh as a newcomer
//! does after installing, and check that it runs the binary already there
//! (installed on PATH, else the clone's build under CARGO_TARGET_DIR)
//! instead of building a second one.

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

/// A PATH without any git-maverick, whose `cargo` only records that it
/// ran and fails: the demo must not build when a binary is there.
fn path_with_refusing_cargo(env: &crate::support::TestEnv) -> (std::ffi::OsString, PathBuf) {
    use std::os::unix::fs::PermissionsExt as _;
    let bin = env.path().join("bin-refusing-cargo");
    std::fs::create_dir_all(&bin).unwrap();
    let ran = env.path().join("cargo-ran");
    let cargo = bin.join("cargo");
    std::fs::write(
        &cargo,
        format!("#!/bin/sh\necho \"$@\" >> '{}'\nexit 1\n", ran.display()),
    )
    .unwrap();
    std::fs::set_permissions(&cargo, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut dirs = vec![bin];
    let path = std::env::var_os("PATH").expect("PATH is set");
    dirs.extend(std::env::split_paths(&path).filter(|d| !d.join("git-maverick").exists()));
    (std::env::join_paths(dirs).unwrap(), ran)
}

/// Runs scripts/demo.sh as a reader does after README's install line, with
/// `path` and `target` (CARGO_TARGET_DIR); its stdout.
fn run_demo(env: &crate::support::TestEnv, path: &std::ffi::OsStr, target: &Path) -> String {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(script).current_dir(env.path());
    env.apply_env(&mut cmd);
    cmd.env_remove("MAVERICK_BIN")
        .env("PATH", path)
        .env("CARGO_TARGET_DIR", target)
        .env("TMPDIR", env.path());
    let out = cmd.output().expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("demo finished: every step exited as expected"),
        "{stdout}"
    );
    // The holder with the machine its claim names.
    assert!(
        stdout.contains("claim lost: #7 is held by bob on ") && stdout.contains(" (generation 2)"),
        "{stdout}"
    );
    stdout
}

/// README's install line put `git-maverick` on PATH: the demo runs that
/// one, says so on its first line, and builds nothing.
#[test]
fn the_readme_demo_runs_the_installed_binary_and_builds_nothing() {
    let env = crate::support::TestEnv::new();
    let (path, cargo_ran) = path_with_refusing_cargo(&env);
    let installed = env.path().join("installed-bin");
    std::fs::create_dir_all(&installed).unwrap();
    std::os::unix::fs::symlink(crate::support::BIN, installed.join("git-maverick")).unwrap();
    let mut dirs = vec![installed.clone()];
    dirs.extend(std::env::split_paths(&path));
    let path = std::env::join_paths(dirs).unwrap();
    let empty_target = env.path().join("no-target");
    let stdout = run_demo(&env, &path, &empty_target);
    let first = stdout.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "demo: running {}/git-maverick (the git-maverick on PATH, git-maverick ",
            installed.display()
        )),
        "{stdout}"
    );
    assert!(!cargo_ran.exists(), "the demo ran cargo\n{stdout}");
}

/// No git-maverick on PATH: the demo takes the clone's build under
/// CARGO_TARGET_DIR (as cargo put it there), still without building.
#[test]
fn the_readme_demo_runs_the_clones_build_when_nothing_is_installed() {
    let env = crate::support::TestEnv::new();
    let (path, cargo_ran) = path_with_refusing_cargo(&env);
    let target = target_dir();
    let stdout = run_demo(&env, &path, &target);
    let first = stdout.lines().next().unwrap_or_default();
    let release = target.join("release/git-maverick");
    let expected = if release.exists() {
        format!(
            "demo: running {} (this clone's release build",
            release.display()
        )
    } else {
        format!(
            "demo: running {} (this clone's debug build",
            crate::support::BIN
        )
    };
    assert!(first.starts_with(&expected), "{stdout}");
    assert!(!cargo_ran.exists(), "the demo ran cargo\n{stdout}");
}
