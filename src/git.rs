//! The one builder for every git subprocess.
//!
//! Network operations and worktree changes always go through the `git` CLI so
//! that the user's credential helpers, ssh config and proxies just work; reads
//! go through it too (see the README for why there is no git library).

use std::ffi::{OsStr, OsString};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("could not run `{command}`: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{command}` failed ({status}){}", stderr_suffix(.stderr))]
    Failed {
        command: String,
        status: String,
        stderr: String,
    },
    #[error("`{command}` printed something that is not UTF-8")]
    NotUtf8 { command: String },
}

fn stderr_suffix(stderr: &str) -> String {
    let trimmed = stderr.trim();
    if trimmed.is_empty() {
        String::new()
    } else {
        format!(
            ": {}",
            trimmed.lines().take(6).collect::<Vec<_>>().join(" / ")
        )
    }
}

impl GitError {
    /// git's own words, for callers that sort failures by what git said.
    pub fn stderr(&self) -> &str {
        match self {
            GitError::Failed { stderr, .. } => stderr,
            _ => "",
        }
    }
}

/// A repository (or any directory) that git commands run in.
#[derive(Clone, Debug)]
pub struct Git {
    dir: PathBuf,
}

impl Git {
    pub fn new(dir: impl Into<PathBuf>) -> Git {
        Git { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn cmd<I, S>(&self, args: I) -> GitCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        GitCommand {
            dir: self.dir.clone(),
            args: args.into_iter().map(|a| a.as_ref().to_owned()).collect(),
            stdin: None,
            envs: Vec::new(),
        }
    }

    /// Runs `git ARGS` and returns its stdout without the trailing newline.
    pub fn read<I, S>(&self, args: I) -> Result<String, GitError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.cmd(args).read()
    }

    /// `git config --get KEY`, `None` when unset.
    pub fn config_get(&self, key: &str) -> Result<Option<String>, GitError> {
        let out = self.cmd(["config", "--get", key]).output_unchecked()?;
        match out.code {
            Some(0) => Ok(Some(out.stdout_text()?.trim_end_matches('\n').to_owned())),
            Some(1) => Ok(None),
            _ => Err(out.into_error()),
        }
    }

    /// The directory shared by all worktrees of this repository.
    pub fn common_dir(&self) -> Result<PathBuf, GitError> {
        let dir = self.read(["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
        Ok(PathBuf::from(dir))
    }

    /// The branch checked out here; `None` on a detached HEAD.
    pub fn current_branch(&self) -> Result<Option<String>, GitError> {
        let out = self
            .cmd(["symbolic-ref", "--quiet", "--short", "HEAD"])
            .output_unchecked()?;
        Ok(out
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    }

    /// This worktree's own git directory.
    pub fn git_dir(&self) -> Result<PathBuf, GitError> {
        let dir = self.read(["rev-parse", "--path-format=absolute", "--git-dir"])?;
        Ok(PathBuf::from(dir))
    }
}

/// One git invocation, built up and then run.
#[derive(Debug)]
pub struct GitCommand {
    dir: PathBuf,
    args: Vec<OsString>,
    stdin: Option<Vec<u8>>,
    envs: Vec<(OsString, OsString)>,
}

/// What a finished git process left behind.
#[derive(Debug)]
pub struct GitOutput {
    pub command: String,
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl GitOutput {
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    pub fn stdout_text(&self) -> Result<&str, GitError> {
        std::str::from_utf8(&self.stdout).map_err(|_| GitError::NotUtf8 {
            command: self.command.clone(),
        })
    }

    pub fn into_error(self) -> GitError {
        GitError::Failed {
            command: self.command,
            status: match self.code {
                Some(code) => format!("exit {code}"),
                None => "killed by a signal".to_owned(),
            },
            stderr: self.stderr,
        }
    }
}

impl GitCommand {
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_owned());
        self
    }

    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_owned()));
        self
    }

    pub fn stdin(mut self, input: impl Into<Vec<u8>>) -> Self {
        self.stdin = Some(input.into());
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.as_ref().to_owned(), value.as_ref().to_owned()));
        self
    }

    fn display(&self) -> String {
        let mut s = String::from("git");
        for a in &self.args {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
        }
        s
    }

    /// Runs the command and returns its output whatever the exit status.
    pub fn output_unchecked(self) -> Result<GitOutput, GitError> {
        let command = self.display();
        tracing::debug!(dir = %self.dir.display(), "{command}");
        let mut cmd = Command::new("git");
        // Messages we match on must be git's English ones; fsmonitor daemons
        // must not be spawned by a tool that runs in hooks.
        cmd.arg("-c")
            .arg("core.fsmonitor=false")
            .args(&self.args)
            .current_dir(&self.dir)
            .env("LC_ALL", "C")
            .env("LANGUAGE", "C")
            .env("GIT_TERMINAL_PROMPT", "0")
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().map_err(|source| GitError::Spawn {
            command: command.clone(),
            source,
        })?;
        if let Some(input) = self.stdin {
            let mut pipe = child.stdin.take().expect("stdin was piped");
            // A writer thread: git may fill its stdout pipe before reading all of stdin.
            let writer = std::thread::spawn(move || {
                let _ = pipe.write_all(&input);
            });
            let out = child.wait_with_output();
            let _ = writer.join();
            return finish(command, out);
        }
        finish(command, child.wait_with_output())
    }

    /// Runs the command; a non-zero exit is an error carrying git's stderr.
    pub fn output(self) -> Result<GitOutput, GitError> {
        let out = self.output_unchecked()?;
        if out.success() {
            Ok(out)
        } else {
            Err(out.into_error())
        }
    }

    /// Runs the command and returns stdout without its trailing newline.
    pub fn read(self) -> Result<String, GitError> {
        let out = self.output()?;
        let text = out.stdout_text()?;
        Ok(text.strip_suffix('\n').unwrap_or(text).to_owned())
    }
}

fn finish(
    command: String,
    out: std::io::Result<std::process::Output>,
) -> Result<GitOutput, GitError> {
    let out = out.map_err(|source| GitError::Spawn {
        command: command.clone(),
        source,
    })?;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    if !stderr.is_empty() {
        tracing::debug!("{command}: {}", stderr.trim_end());
    }
    Ok(GitOutput {
        command,
        code: out.status.code(),
        stdout: out.stdout,
        stderr,
    })
}

/// True when `name` is a full ref name git would accept (`git check-ref-format`),
/// checked in-process because hostile names must never reach a command line
/// unchecked.
pub fn is_valid_branch_name(name: &str) -> bool {
    if name.is_empty()
        || name.starts_with('-')
        || name.starts_with('/')
        || name.ends_with('/')
        || name.ends_with('.')
        || name.ends_with(".lock")
        || name == "@"
        || name.contains("..")
        || name.contains("@{")
        || name.contains("//")
    {
        return false;
    }
    if name
        .split('/')
        .any(|part| part.starts_with('.') || part.ends_with(".lock"))
    {
        return false;
    }
    !name.chars().any(|c| {
        c.is_ascii_control()
            || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\' | '\u{7f}')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names() {
        for ok in [
            "main",
            "maverick/142-short-title",
            "a/b/c/d",
            "ünïcode/ß",
            "x.y",
        ] {
            assert!(is_valid_branch_name(ok), "{ok}");
        }
        for bad in [
            "", "-x", "a..b", "a/", "/a", "a.lock", "a b", "a~1", "a^", "a:b", "a?", "a*", "a[",
            "a\\b", ".hidden", "a/.b", "a@{1}", "@", "a//b", "a\u{1}",
        ] {
            assert!(!is_valid_branch_name(bad), "{bad:?}");
        }
    }
}
