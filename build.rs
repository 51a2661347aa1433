//! Stamps the binary with the commit it was built from and that commit's
//! time, for `git maverick --version`.
//!
//! From a clone, git says both. From a crate tarball (no `.git`), cargo's
//! `.cargo_vcs_info.json` names the commit and `SOURCE_DATE_EPOCH` (when a
//! packager sets it) gives the time. Where git cannot run (a `cross` build
//! container), `MAVERICK_BUILD_COMMIT` and `SOURCE_DATE_EPOCH` say them.
//! Neither is required: the version alone is a valid answer, and a build
//! never fails for want of them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    println!("cargo:rerun-if-env-changed=MAVERICK_BUILD_COMMIT");
    let manifest_dir =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let (commit, epoch) = match from_git(&manifest_dir) {
        Some((commit, epoch)) => (Some(commit), Some(epoch)),
        None => (
            from_vcs_info(&manifest_dir).or_else(|| {
                std::env::var("MAVERICK_BUILD_COMMIT")
                    .ok()
                    .filter(|c| c.len() >= 7 && c.chars().all(|c| c.is_ascii_hexdigit()))
            }),
            None,
        ),
    };
    let epoch = epoch.or_else(|| {
        std::env::var("SOURCE_DATE_EPOCH")
            .ok()
            .filter(|e| e.trim().parse::<i64>().is_ok())
    });
    let short = commit.as_deref().map(|c| &c[..c.len().min(7)]);
    println!(
        "cargo:rustc-env=MAVERICK_BUILD_COMMIT={}",
        short.unwrap_or_default()
    );
    println!(
        "cargo:rustc-env=MAVERICK_BUILD_EPOCH={}",
        epoch.as_deref().map(str::trim).unwrap_or_default()
    );
}

/// The commit and its committer time (Unix seconds) when `dir` is the top of
/// a clone; asks cargo to run this again when HEAD moves.
fn from_git(dir: &Path) -> Option<(String, String)> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("LC_ALL", "C")
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    // Only this crate's own repository: a tarball unpacked inside some other
    // clone must not take that clone's HEAD.
    let top = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    if top.canonicalize().ok()? != dir.canonicalize().ok()? {
        return None;
    }
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    watched.extend(git(&["symbolic-ref", "--quiet", "HEAD"]));
    for name in watched {
        // A path that does not exist would make cargo run this script (and
        // rebuild the crate) every time: a clone without packed refs, a
        // linked worktree whose branch is packed.
        let path = git(&["rev-parse", "--path-format=absolute", "--git-path", &name]);
        if let Some(path) = path.filter(|p| Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    let line = git(&["log", "-1", "--format=%H %ct", "HEAD"])?;
    let (commit, epoch) = line.split_once(' ')?;
    Some((commit.to_owned(), epoch.to_owned()))
}

/// The commit `cargo package` recorded in the tarball:
/// `{"git": {"sha1": "…"}, …}`, one field, read without a JSON parser.
fn from_vcs_info(dir: &Path) -> Option<String> {
    let text = std::fs::read_to_string(dir.join(".cargo_vcs_info.json")).ok()?;
    let start = text.find("\"sha1\"")? + "\"sha1\"".len();
    let rest = text[start..].trim_start().strip_prefix(':')?.trim_start();
    let rest = rest.strip_prefix('"')?;
    let sha = &rest[..rest.find('"')?];
    (sha.len() >= 7 && sha.chars().all(|c| c.is_ascii_hexdigit())).then(|| sha.to_owned())
}
