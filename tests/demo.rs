//! The README's first command must keep working: run the demo script
//! against the binary under test.

#[test]
fn the_readme_demo_runs_every_step_as_it_says() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh");
    let env = crate::support::TestEnv::new();
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(script).current_dir(env.path());
    env.apply_env(&mut cmd);
    cmd.env("MAVERICK_BIN", crate::support::BIN)
        .env("TMPDIR", env.path());
    let out = cmd.output().expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed\n{stdout}\n{stderr}");
    assert!(
        stdout.contains("demo finished: every step exited as expected"),
        "{stdout}"
    );
    assert!(
        stdout.contains("claim lost: #7 is held by bob (generation 2)"),
        "{stdout}"
    );
}
