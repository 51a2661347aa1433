//! The agent's tool-use guard (SPEC 11): which `git push` command lines an
//! agent's shell must not run, judged from the command text and this clone's
//! local records alone (no network, no git process beyond reading HEAD).
//!
//! Parsing is conservative: a command line this module cannot read with
//! confidence (unbalanced quotes, command substitution, variables in a
//! refspec) is allowed, and the pre-push hook stays the guard rail behind it.

use std::path::Path;

use crate::records::claim::{ClaimRecord, ClaimStore};
use crate::records::files::RecordError;
use crate::timefmt::Timestamp;
use crate::writer::prepush::BranchState;

/// One `git push` found in a shell command line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushCommand {
    /// `git -C DIR push …`
    pub dir: Option<String>,
    pub no_verify: bool,
    /// `--force`, `-f`, `--force-with-lease`, `--mirror`.
    pub force: bool,
    /// `--delete`, `-d`, `--prune`, `--mirror`.
    pub delete: bool,
    /// `--all`, `--branches`, `--mirror`: every local branch.
    pub every_branch: bool,
    pub remote: Option<String>,
    pub refspecs: Vec<Refspec>,
}

/// One refspec of a push, as far as the guard needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refspec {
    /// The destination branch (`refs/heads/` stripped); `None` for `HEAD`
    /// alone (the current branch) and for non-branch refs.
    pub branch: Option<String>,
    pub current_branch: bool,
    pub forced: bool,
    pub deletion: bool,
}

/// Splits a shell command line into words, command by command (`;`, `&&`,
/// `||`, `|`, `&`, newlines). `None` when the line holds what this reader
/// cannot follow (unbalanced quotes, `$(…)`, backquotes).
pub fn shell_commands(line: &str) -> Option<Vec<Vec<String>>> {
    let mut commands = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let end_word = |words: &mut Vec<String>, word: &mut String, in_word: &mut bool| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => word.push(chars.next()?),
                        '`' => return None,
                        '$' if chars.peek() == Some(&'(') => return None,
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some('\n') | None => {}
                    Some(c) => word.push(c),
                }
            }
            '`' => return None,
            '$' if chars.peek() == Some(&'(') => return None,
            ';' | '&' | '|' | '\n' | '(' | ')' => {
                end_word(&mut words, &mut word, &mut in_word);
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            '#' if !in_word => {
                // A comment runs to the end of the line.
                for c in chars.by_ref() {
                    if c == '\n' {
                        break;
                    }
                }
                end_word(&mut words, &mut word, &mut in_word);
                if !words.is_empty() {
                    commands.push(std::mem::take(&mut words));
                }
            }
            c if c.is_whitespace() => end_word(&mut words, &mut word, &mut in_word),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    end_word(&mut words, &mut word, &mut in_word);
    if !words.is_empty() {
        commands.push(words);
    }
    Some(commands)
}

/// git's options that come before the subcommand and take a value as the
/// next word.
const GIT_OPTIONS_WITH_VALUE: &[&str] = &["-C", "-c", "--git-dir", "--work-tree", "--namespace"];

/// `git push` options that take a value as the next word.
const PUSH_OPTIONS_WITH_VALUE: &[&str] =
    &["-o", "--push-option", "--repo", "--receive-pack", "--exec"];

/// The `git push` a command's words run, if they run one.
pub fn parse_push(words: &[String]) -> Option<PushCommand> {
    let mut rest = words.iter().map(String::as_str).peekable();
    // Variable assignments and wrappers in front of the command.
    while let Some(word) = rest.peek() {
        let assignment = word.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
        if assignment || matches!(*word, "env" | "command" | "exec" | "time" | "nice" | "sudo") {
            rest.next();
        } else {
            break;
        }
    }
    let program = rest.next()?;
    if Path::new(program).file_name()? != "git" {
        return None;
    }
    let mut push = PushCommand::default();
    loop {
        let word = rest.next()?;
        if word == "push" {
            break;
        }
        if !word.starts_with('-') {
            return None;
        }
        if GIT_OPTIONS_WITH_VALUE.contains(&word) {
            let value = rest.next()?;
            if word == "-C" {
                push.dir = Some(value.to_owned());
            }
        }
    }
    let mut positional = Vec::new();
    let mut options_end = false;
    while let Some(word) = rest.next() {
        if options_end || !word.starts_with('-') || word == "-" {
            positional.push(word);
            continue;
        }
        if word == "--" {
            options_end = true;
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let name = long.split_once('=').map_or(long, |(n, _)| n);
            match name {
                "no-verify" => push.no_verify = true,
                "force" | "force-with-lease" => push.force = true,
                "delete" | "prune" => push.delete = true,
                "all" | "branches" => push.every_branch = true,
                "mirror" => {
                    push.force = true;
                    push.delete = true;
                    push.every_branch = true;
                }
                _ if !long.contains('=') && PUSH_OPTIONS_WITH_VALUE.contains(&word) => {
                    rest.next();
                }
                _ => {}
            }
            continue;
        }
        // A cluster of short options: `-fu`, `-uo value`.
        for (i, c) in word[1..].char_indices() {
            match c {
                'f' => push.force = true,
                'd' => push.delete = true,
                'o' => {
                    if i + 2 == word.len() {
                        rest.next();
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    let mut positional = positional.into_iter();
    push.remote = positional.next().map(str::to_owned);
    for spec in positional {
        push.refspecs.push(parse_refspec(spec, push.delete)?);
    }
    Some(push)
}

/// `None` when the refspec holds what a shell or git would expand
/// (variables, globs, `@{…}`): the guard cannot tell where it goes.
fn parse_refspec(spec: &str, delete: bool) -> Option<Refspec> {
    if spec.contains(['$', '*', '{']) {
        return None;
    }
    let (forced, spec) = match spec.strip_prefix('+') {
        Some(rest) => (true, rest),
        None => (false, spec),
    };
    let (src, dst) = spec.split_once(':').unwrap_or((spec, spec));
    let deletion = delete || src.is_empty();
    let current_branch = dst == "HEAD" || dst == "@";
    let branch = if current_branch {
        None
    } else if let Some(name) = dst.strip_prefix("refs/heads/") {
        Some(name.to_owned())
    } else if dst.starts_with("refs/") || dst.is_empty() {
        None
    } else {
        Some(dst.to_owned())
    };
    Some(Refspec {
        branch,
        current_branch,
        forced,
        deletion,
    })
}

/// Why a push is denied: the reason the model reads, with the way out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denial {
    pub branch: Option<String>,
    pub reason: String,
}

/// What the guard knows about this clone.
pub struct GuardContext<'a> {
    pub common_dir: &'a Path,
    /// The instance the session acts as.
    pub me: &'a str,
    /// The branch checked out where the push runs, if any.
    pub current_branch: Option<String>,
    pub now: Timestamp,
}

/// A claim record that still counts: not lost, lease not run out.
fn live(record: &ClaimRecord, now: Timestamp) -> bool {
    record.lost.is_none() && record.expires_at > now
}

/// Every branch this clone manages (a claim record or a last-seen record).
fn managed_branches(common_dir: &Path) -> Result<Vec<String>, RecordError> {
    let mut branches: Vec<String> = ClaimStore::new(common_dir)
        .all()?
        .into_iter()
        .filter_map(|r| r.branch)
        .collect();
    let dir = common_dir.join("maverick").join("branches");
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(hex) = name.to_str().and_then(|n| {
                n.strip_suffix(".json").or_else(|| {
                    n.strip_suffix(crate::records::branch::LOG_EXTENSION)
                        .and_then(|n| n.strip_suffix('.'))
                })
            }) else {
                continue;
            };
            let bytes: Option<Vec<u8>> = (0..hex.len())
                .step_by(2)
                .map(|i| {
                    hex.get(i..i + 2)
                        .and_then(|h| u8::from_str_radix(h, 16).ok())
                })
                .collect();
            if let Some(branch) = bytes.and_then(|b| String::from_utf8(b).ok()) {
                branches.push(branch);
            }
        }
    }
    branches.sort();
    branches.dedup();
    Ok(branches)
}

/// The guard's verdict on one `git push`: `None` allows it.
pub fn judge(push: &PushCommand, ctx: &GuardContext<'_>) -> Result<Option<Denial>, RecordError> {
    if crate::writer::prepush::maverick_absent(ctx.common_dir) {
        return Ok(None);
    }
    if push.no_verify {
        return Ok(Some(Denial {
            branch: None,
            reason: "`git push --no-verify` skips git maverick's pre-push guard (one writer per \
                     branch) in a clone whose branches it manages. Push without --no-verify; if \
                     the guard refuses, stop and report what it printed."
                .to_owned(),
        }));
    }
    // The branches this push writes to, and whether it forces or deletes each.
    let mut targets: Vec<(String, bool, bool)> = Vec::new();
    if push.every_branch {
        for branch in managed_branches(ctx.common_dir)? {
            targets.push((branch, push.force, push.delete));
        }
    }
    for spec in &push.refspecs {
        let branch = if spec.current_branch {
            ctx.current_branch.clone()
        } else {
            spec.branch.clone()
        };
        if let Some(branch) = branch {
            targets.push((branch, push.force || spec.forced, spec.deletion));
        }
    }
    if push.refspecs.is_empty() && !push.every_branch {
        if let Some(branch) = &ctx.current_branch {
            targets.push((branch.clone(), push.force, push.delete));
        }
    }
    for (branch, force, delete) in targets {
        let state = BranchState::load(ctx.common_dir, &branch)?;
        if !state.managed() {
            continue;
        }
        let remote_named = push.remote.as_deref();
        let to_record_remote = state
            .claims
            .iter()
            .all(|c| remote_named.is_none_or(|r| r == c.remote));
        if !to_record_remote {
            continue;
        }
        if delete {
            return Ok(Some(Denial {
                reason: format!(
                    "`git push` would delete {branch}, a branch git maverick manages (a claim or \
                     a last-seen record): deleting it loses the pushed work another machine \
                     resumes from. Release the claim instead (git maverick coord release ISSUE)."
                ),
                branch: Some(branch),
            }));
        }
        if force {
            return Ok(Some(Denial {
                reason: format!(
                    "a forced push to {branch} (--force, -f, +refspec or --force-with-lease) \
                     overwrites the branch git maverick manages: only fast-forward pushes are \
                     allowed there. Fetch, rebase your commits on the remote head, and push \
                     without force; if the remote head moved behind your back, stop and report."
                ),
                branch: Some(branch),
            }));
        }
        let mine = state
            .claims
            .iter()
            .any(|c| c.instance_id == ctx.me && live(c, ctx.now));
        if let Some(other) = state
            .claims
            .iter()
            .find(|c| c.instance_id != ctx.me && live(c, ctx.now))
        {
            if !mine {
                return Ok(Some(Denial {
                    reason: format!(
                        "{branch} is held by instance {} (issue #{}, lease until {}); this \
                         session is instance {}. Do not push to another instance's branch: pick \
                         another issue, or wait for its lease to run out and take it over \
                         (git maverick coord takeover {}).",
                        other.instance_id, other.issue, other.expires_at, ctx.me, other.issue
                    ),
                    branch: Some(branch),
                }));
            }
        }
    }
    Ok(None)
}

/// Every `git push` a shell command line runs; none when the line cannot be
/// read with confidence.
pub fn pushes_in(line: &str) -> Vec<PushCommand> {
    shell_commands(line)
        .unwrap_or_default()
        .iter()
        .filter_map(|words| parse_push(words))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push_of(line: &str) -> Option<PushCommand> {
        pushes_in(line).into_iter().next()
    }

    #[test]
    fn reads_pushes_inside_command_lines() {
        let p = push_of("cd x && git push --no-verify origin main").unwrap();
        assert!(p.no_verify);
        assert_eq!(p.remote.as_deref(), Some("origin"));
        let p = push_of("GIT_TRACE=1 git -C ../wt push -fu origin 'feat/x'").unwrap();
        assert!(p.force);
        assert_eq!(p.dir.as_deref(), Some("../wt"));
        assert_eq!(p.refspecs[0].branch.as_deref(), Some("feat/x"));
        let p = push_of("git push origin +HEAD:refs/heads/b :old").unwrap();
        assert!(p.refspecs[0].forced);
        assert_eq!(p.refspecs[0].branch.as_deref(), Some("b"));
        assert!(p.refspecs[1].deletion);
        assert_eq!(p.refspecs[1].branch.as_deref(), Some("old"));
        let p = push_of("git push --force-with-lease=main:abc origin main").unwrap();
        assert!(p.force);
        let p = push_of("git push -o ci.skip origin b").unwrap();
        assert_eq!(p.remote.as_deref(), Some("origin"));
        assert_eq!(p.refspecs.len(), 1);
    }

    #[test]
    fn leaves_what_it_cannot_read() {
        assert!(shell_commands("git push \"$(echo origin)\"").is_none());
        assert!(shell_commands("echo 'unbalanced").is_none());
        assert!(push_of("echo git push --force").is_none());
        assert!(push_of("git log --format=push").is_none());
        assert!(push_of("git commit -m 'git push -f'").is_none());
        // A refspec the shell expands: no confident match.
        assert!(push_of("git push origin $BRANCH").is_none());
    }
}
