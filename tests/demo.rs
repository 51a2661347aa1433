//! The README's first command must keep working: run the demo script as a
//! newcomer does, without a binary given, so that the script builds it
//! with cargo and runs the executable cargo names (wherever
//! CARGO_TARGET_DIR, `build.target-dir` or `build.target` put it, never a
//! guessed target/debug).
//!
//! The `cargo` the script finds answers as `cargo build
//! --message-format=json-render-diagnostics` does, naming the binary under
//! test: a real `cargo build` of the binary alone resolves the
//! dependencies' features without the dev-dependencies, so it is a second
//! build of maverick and much of its tree (minutes of a CI run), while what
//! the script relies on is cargo's documented message format.

use std::path::Path;

/// What `cargo build --message-format=json-render-diagnostics` prints for
/// the bin target, as cargo does (one JSON object a line; the script
/// takes the executable of the last compiler-artifact), then the end.
fn cargo_messages(bin: &str) -> String {
    format!(
        concat!(
            r#"{{"reason":"compiler-artifact","package_id":"path+file://{root}#git-maverick@0.1.0","#,
            r#""manifest_path":"{root}/Cargo.toml","target":{{"kind":["bin"],"crate_types":["bin"],"#,
            r#""name":"git-maverick","src_path":"{root}/src/main.rs","edition":"2021","doc":true,"#,
            r#""doctest":false,"test":true}},"profile":{{"opt_level":"1","debuginfo":1,"#,
            r#""debug_assertions":true,"overflow_checks":true,"test":false}},"features":[],"#,
            r#""filenames":["{bin}"],"executable":"{bin}","fresh":true}}"#,
            "\n",
            r#"{{"reason":"build-finished","success":true}}"#,
            "\n"
        ),
        root = env!("CARGO_MANIFEST_DIR"),
        bin = bin
    )
}

/// A `cargo` that records its arguments and answers as cargo does.
fn fake_cargo(dir: &Path, bin: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("messages"), cargo_messages(bin)).unwrap();
    let script = dir.join("cargo");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{d}/args'\ncat '{d}/messages'\n",
            d = dir.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn the_readme_demo_builds_and_runs_every_step_as_it_says() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/demo.sh");
    let env = crate::support::TestEnv::new();
    let cargo = env.path().join("cargo-bin");
    fake_cargo(&cargo, crate::support::BIN);
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(script).current_dir(env.path());
    env.apply_env(&mut cmd);
    let path = std::env::join_paths(std::iter::once(cargo.clone()).chain(std::env::split_paths(
        &std::env::var_os("PATH").expect("PATH is set"),
    )))
    .unwrap();
    // No MAVERICK_BIN: the script builds, and runs what cargo names.
    cmd.env_remove("MAVERICK_BIN")
        .env("PATH", path)
        .env("TMPDIR", env.path());
    let out = cmd.output().expect("bash runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "demo failed\n{stdout}\n{stderr}");
    let args = std::fs::read_to_string(cargo.join("args")).expect("the script ran cargo");
    assert_eq!(
        args,
        format!(
            "build --quiet --locked --manifest-path {}/Cargo.toml --bin git-maverick \
             --message-format=json-render-diagnostics\n",
            env!("CARGO_MANIFEST_DIR")
        ),
        "the script builds the binary once, locked, from its own checkout"
    );
    assert!(
        stdout.contains(&format!("git-maverick: {}\n", crate::support::BIN)),
        "the demo ran the binary cargo named\n{stdout}"
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
