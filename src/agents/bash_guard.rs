//! The agent's tool-use guard (SPEC 11): which command lines an agent's
//! shell must not run, judged from the command as the shell will run it
//! (`agents::shell`), git's own option rules, and this clone's local records
//! (no network; a few `git config` reads at most).
//!
//! A push to a branch git maverick manages, on the repository it manages it
//! on, is denied when it skips the pre-push guard (`--no-verify` or any
//! unique prefix of it, `-c core.hooksPath=…`, `git send-pack`), forces, or
//! deletes, or when another instance of this clone holds the branch. Where
//! the answer depends on what only the running shell knows (`"$BRANCH"`,
//! `$(…)`, arguments `xargs` reads), the guard asks, with the reason, rather
//! than allow; everything else passes, and the pre-push hook stays the
//! guard rail behind it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::agents::shell::{self, Arg, Invocation, Piece};
use crate::git::{Git, GitEnv};
use crate::records::claim::ClaimRecord;
use crate::records::files::RecordError;
use crate::timefmt::Timestamp;
use crate::writer::prepush::{self, BranchState};
use maverick_core::ids::InstanceId;

/// How deep git aliases are followed (`git p` → `!git push …`).
const MAX_ALIAS_DEPTH: usize = 4;
/// The largest script file the guard reads (`sh FILE`, `. FILE`).
const MAX_SCRIPT: u64 = 64 * 1024;

/// The guard's answer to one command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Known only when the command runs: ask the person, with the reason.
    Ask(String),
    /// With the reason and the way out.
    Deny(String),
}

impl Verdict {
    /// Deny wins over ask, ask over allow.
    fn rank(&self) -> u8 {
        match self {
            Verdict::Allow => 0,
            Verdict::Ask(_) => 1,
            Verdict::Deny(_) => 2,
        }
    }
}

/// Where the session's command runs, and as whom.
pub struct Session<'a> {
    /// The session's working directory (the hook input's `cwd`).
    pub cwd: &'a Path,
    /// The instance the session acts as, resolved only when a push's
    /// verdict depends on it (resolving it reads git's config).
    pub me: &'a (dyn Fn() -> InstanceId + Sync),
    pub now: Timestamp,
    pub env: &'a GitEnv,
}

/// Yes, no, or known only when the command runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Tri {
    #[default]
    No,
    Maybe,
    Yes,
}

impl Tri {
    fn values(self) -> &'static [bool] {
        match self {
            Tri::No => &[false],
            Tri::Maybe => &[false, true],
            Tri::Yes => &[true],
        }
    }

    fn or(self, other: Tri) -> Tri {
        match (self, other) {
            (Tri::Yes, _) | (_, Tri::Yes) => Tri::Yes,
            (Tri::Maybe, _) | (_, Tri::Maybe) => Tri::Maybe,
            _ => Tri::No,
        }
    }

    /// What is certain becomes possible: an unknown argument may be any option.
    fn open(&mut self) {
        if *self == Tri::No {
            *self = Tri::Maybe;
        }
    }

    fn when(set: bool) -> Tri {
        if set {
            Tri::Yes
        } else {
            Tri::No
        }
    }
}

/// How a push skips the pre-push guard.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    NoVerify,
    HooksPath,
    SendPack,
}

/// Where a push goes.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Remote {
    /// A remote's name, a URL or a path, as git would take it.
    Named(String),
    /// None named: git's default for the current branch.
    Default,
    /// Known only when the command runs.
    Unknown,
}

/// A branch a push writes to, as far as the command line tells.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Dest {
    Branch(String),
    /// `HEAD`: the branch checked out where the push runs.
    Current,
    /// `refs/heads/*`-style patterns.
    Pattern(String),
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Target {
    dest: Dest,
    forced: Tri,
    deletion: Tri,
    /// False for a branch the push may write to, or not.
    certain: bool,
}

/// One push, as git will read its arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Push {
    skip: Tri,
    skip_how: Option<Skip>,
    /// How the line spells a setting that turns the hook off, for the reason.
    skip_spelled: Option<String>,
    force: Tri,
    delete: Tri,
    dry_run: bool,
    /// `--all`, `--branches`, `--mirror`: every branch.
    every_branch: bool,
    /// `--mirror`: also deletes the remote's branches this clone lacks.
    mirror: bool,
    /// `--prune`: remote branches with no local counterpart are deleted.
    prune: Tri,
    remote: Option<Remote>,
    targets: Vec<Target>,
    /// The line names what to push (refspecs, `tag NAME`, `--tags`), so
    /// git's default (the current branch) does not apply.
    refspecs_given: bool,
    /// Some branch the line does not name may be pushed.
    unknown_target: bool,
    /// How the line spells what leaves the push open, for the reason.
    unknowns: Vec<String>,
}

impl Push {
    fn unknown(&mut self, spelled: &str) {
        self.skip.open();
        self.force.open();
        self.delete.open();
        self.unknown_target = true;
        if !self.unknowns.iter().any(|u| u == spelled) {
            self.unknowns.push(spelled.to_owned());
        }
    }
}

/// The option table of a git command, as `git push -h` lists it (git 2.47).
struct GitOption {
    long: &'static str,
    short: Option<char>,
    /// `--[no-]name`.
    negatable: bool,
    value: OptionValue,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OptionValue {
    None,
    /// As `--name=value` or the next word.
    Required,
    /// Only as `--name=value`.
    Optional,
}

const fn opt(long: &'static str, short: Option<char>, value: OptionValue) -> GitOption {
    GitOption {
        long,
        short,
        negatable: true,
        value,
    }
}

const PUSH_OPTIONS: &[GitOption] = &[
    opt("verbose", Some('v'), OptionValue::None),
    opt("quiet", Some('q'), OptionValue::None),
    opt("repo", None, OptionValue::Required),
    opt("all", None, OptionValue::None),
    opt("branches", None, OptionValue::None),
    opt("mirror", None, OptionValue::None),
    opt("delete", Some('d'), OptionValue::None),
    opt("tags", None, OptionValue::None),
    opt("dry-run", Some('n'), OptionValue::None),
    opt("porcelain", None, OptionValue::None),
    opt("force", Some('f'), OptionValue::None),
    opt("force-with-lease", None, OptionValue::Optional),
    opt("force-if-includes", None, OptionValue::None),
    opt("recurse-submodules", None, OptionValue::Required),
    opt("thin", None, OptionValue::None),
    opt("receive-pack", None, OptionValue::Required),
    opt("exec", None, OptionValue::Required),
    opt("set-upstream", Some('u'), OptionValue::None),
    opt("progress", None, OptionValue::None),
    opt("prune", None, OptionValue::None),
    opt("no-verify", None, OptionValue::None),
    opt("follow-tags", None, OptionValue::None),
    opt("signed", None, OptionValue::Optional),
    opt("atomic", None, OptionValue::None),
    opt("push-option", Some('o'), OptionValue::Required),
    GitOption {
        long: "ipv4",
        short: Some('4'),
        negatable: false,
        value: OptionValue::None,
    },
    GitOption {
        long: "ipv6",
        short: Some('6'),
        negatable: false,
        value: OptionValue::None,
    },
];

const SEND_PACK_OPTIONS: &[GitOption] = &[
    opt("verbose", Some('v'), OptionValue::None),
    opt("quiet", Some('q'), OptionValue::None),
    opt("receive-pack", None, OptionValue::Required),
    opt("exec", None, OptionValue::Required),
    opt("remote", None, OptionValue::Required),
    opt("all", None, OptionValue::None),
    opt("dry-run", Some('n'), OptionValue::None),
    opt("mirror", None, OptionValue::None),
    opt("force", Some('f'), OptionValue::None),
    opt("signed", None, OptionValue::Optional),
    opt("push-option", None, OptionValue::Required),
    opt("progress", None, OptionValue::None),
    opt("thin", None, OptionValue::None),
    opt("atomic", None, OptionValue::None),
    opt("stateless-rpc", None, OptionValue::None),
    opt("stdin", None, OptionValue::None),
    opt("helper-status", None, OptionValue::None),
    opt("force-with-lease", None, OptionValue::Optional),
];

/// What one option word set.
#[derive(Debug, PartialEq, Eq)]
enum OptionWord {
    /// The option's long name, whether it was negated, and its value.
    One(&'static str, bool, Option<String>),
    /// Several options match the abbreviation: git refuses it, unless the
    /// table is older than the git that runs it.
    Ambiguous(Vec<(&'static str, bool)>),
    /// Not an option of this command (a newer git's, or a typo git refuses).
    Unknown,
}

/// A long option as git's parse-options reads it: the exact name, its
/// `no-` form, or any unique prefix of either (`--no-verif`, `--forc…`).
fn long_option(
    table: &'static [GitOption],
    word: &str,
    next: &mut dyn FnMut() -> Option<String>,
) -> OptionWord {
    let (name, attached) = match word.split_once('=') {
        Some((name, value)) => (name, Some(value.to_owned())),
        None => (word, None),
    };
    let mut candidates: Vec<(&GitOption, bool)> = Vec::new();
    let mut exact = None;
    for option in table {
        // `--no-verify` is an option of its own whose negation is `--verify`.
        let positive_of_no = option.long.strip_prefix("no-");
        if name == option.long {
            exact = Some((option, false));
            break;
        }
        if option.negatable && name.strip_prefix("no-") == Some(option.long) {
            exact = Some((option, true));
            break;
        }
        if positive_of_no == Some(name) {
            exact = Some((option, true));
            break;
        }
        if option.long.starts_with(name) {
            candidates.push((option, false));
        }
        if option.negatable && format!("no-{}", option.long).starts_with(name) {
            candidates.push((option, true));
        }
        if positive_of_no.is_some_and(|p| p.starts_with(name)) {
            candidates.push((option, true));
        }
    }
    let (option, negated) = match (exact, candidates.as_slice()) {
        (Some(found), _) => found,
        (None, [one]) => *one,
        (None, []) => return OptionWord::Unknown,
        (None, many) => {
            return OptionWord::Ambiguous(many.iter().map(|(o, n)| (o.long, *n)).collect())
        }
    };
    let value = match (option.value, negated) {
        (OptionValue::None, _) | (_, true) => None,
        (OptionValue::Optional, false) => attached,
        (OptionValue::Required, false) => attached.or_else(next),
    };
    OptionWord::One(option.long, negated, value)
}

/// Applies one option to the push.
fn apply(push: &mut Push, long: &str, negated: bool, value: Option<&str>) {
    let set = Tri::when(!negated);
    match long {
        "no-verify" => {
            push.skip = set;
            push.skip_how = Some(Skip::NoVerify);
        }
        "force" | "force-with-lease" => push.force = set,
        "delete" => push.delete = set,
        "dry-run" => push.dry_run = !negated,
        "all" | "branches" => push.every_branch = !negated,
        "mirror" => {
            push.every_branch = !negated;
            push.mirror = !negated;
            push.force = set;
            push.delete = set;
        }
        "prune" => push.prune = set,
        "tags" => push.refspecs_given |= !negated,
        "repo" if push.remote.is_none() => {
            push.remote = value.map(|v| Remote::Named(v.to_owned()));
        }
        "stdin" => {
            push.unknown_target = true;
            push.unknowns.push("--stdin".to_owned());
        }
        _ => {}
    }
}

/// The options git takes before its subcommand, exactly spelled (git.c).
fn global_option_takes_value(word: &str) -> Option<bool> {
    Some(match word {
        "-C" | "-c" | "--git-dir" | "--work-tree" | "--namespace" | "--config-env"
        | "--attr-source" | "--super-prefix" | "--list-cmds" => true,
        "-p"
        | "--paginate"
        | "-P"
        | "--no-pager"
        | "--no-replace-objects"
        | "--bare"
        | "--literal-pathspecs"
        | "--glob-pathspecs"
        | "--noglob-pathspecs"
        | "--icase-pathspecs"
        | "--no-optional-locks"
        | "--no-lazy-fetch"
        | "--no-advice" => false,
        _ if word.starts_with("--exec-path=") => false,
        _ => return None,
    })
}

/// One git command line: the globals that matter to the guard and the
/// subcommand's words.
struct GitCall {
    /// `-C` directories, in order.
    dirs: Vec<Arg>,
    git_dir: Option<Arg>,
    /// `-c core.hooksPath=…` and friends, as spelled.
    hooks_override: Option<(Tri, String)>,
    /// Every `-c`/`--config-env` setting, for the git an alias runs.
    settings: Vec<Arg>,
    words: Vec<Arg>,
}

/// True when a `-c` or `--config-env` setting names `core.hooksPath`
/// (section and key are case-insensitive).
fn sets_hooks_path(setting: &str) -> bool {
    setting
        .split_once('=')
        .map_or(setting, |(key, _)| key)
        .eq_ignore_ascii_case("core.hooksPath")
}

/// What `git …` runs; `None` when git would print and stop (`--version`)
/// or refuse the line.
fn git_call(args: &[Arg], env: &BTreeMap<String, Arg>) -> Option<GitCall> {
    let mut call = GitCall {
        dirs: Vec::new(),
        git_dir: env.get("GIT_DIR").cloned(),
        hooks_override: None,
        settings: Vec::new(),
        words: Vec::new(),
    };
    // Hook managers' off switches, and config files the guard does not read.
    for (name, value) in env {
        let literal = value.literal();
        let off = match name.as_str() {
            "HUSKY" | "LEFTHOOK" => match literal.as_deref() {
                Some("0" | "false") => Some(Tri::Yes),
                Some(_) => None,
                None => Some(Tri::Maybe),
            },
            "GIT_CONFIG_GLOBAL" | "GIT_CONFIG_SYSTEM" | "GIT_CONFIG" | "XDG_CONFIG_HOME"
            | "HOME" => Some(Tri::Maybe),
            _ => None,
        };
        if let Some(tri) = off {
            call.hooks_override = Some((tri, format!("{name}={}", value.spelled)));
        }
    }
    // The environment's settings: GIT_CONFIG_PARAMETERS, GIT_CONFIG_KEY_<n>.
    for (name, value) in env {
        let names_hooks = match value.literal() {
            Some(text) => {
                if name == "GIT_CONFIG_PARAMETERS" {
                    text.to_ascii_lowercase().contains("core.hookspath")
                } else {
                    sets_hooks_path(&text)
                }
            }
            None => true,
        };
        if (name == "GIT_CONFIG_PARAMETERS" || name.starts_with("GIT_CONFIG_KEY_")) && names_hooks {
            let tri = if value.has_unknown() {
                Tri::Maybe
            } else {
                Tri::Yes
            };
            call.hooks_override = Some((tri, format!("{name}={}", value.spelled)));
        }
    }
    let mut rest = args[1..].iter();
    while let Some(arg) = rest.next() {
        let Some(word) = arg.literal() else {
            // Known only when it runs: treat it as the subcommand's, so
            // that a push after it still counts.
            call.words.push(arg.clone());
            call.words.extend(rest.cloned());
            return Some(call);
        };
        if !word.starts_with('-') {
            call.words.push(arg.clone());
            call.words.extend(rest.cloned());
            return Some(call);
        }
        let (name, attached) = match word.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name.to_owned(), Some(value)),
            _ => (word.clone(), None),
        };
        match global_option_takes_value(&name) {
            None => return None,
            Some(false) => {}
            Some(true) => {
                let value = match attached {
                    Some(v) => Arg::text(v),
                    None => rest.next()?.clone(),
                };
                if matches!(name.as_str(), "-c" | "--config-env") {
                    call.settings.push(Arg::text(&name));
                    call.settings.push(value.clone());
                }
                match name.as_str() {
                    "-C" => call.dirs.push(value),
                    "--git-dir" => call.git_dir = Some(value),
                    "-c" | "--config-env" => match value.literal() {
                        Some(setting) if sets_hooks_path(&setting) => {
                            call.hooks_override = Some((Tri::Yes, format!("{word} {setting}")));
                        }
                        // An included file may set core.hooksPath.
                        Some(setting)
                            if setting.to_ascii_lowercase().starts_with("include")
                                && call.hooks_override.is_none() =>
                        {
                            call.hooks_override = Some((Tri::Maybe, format!("{word} {setting}")));
                        }
                        Some(_) => {}
                        None => {
                            if call.hooks_override.is_none() {
                                call.hooks_override =
                                    Some((Tri::Maybe, format!("{word} {}", value.spelled)));
                            }
                        }
                    },
                    _ => {}
                }
            }
        }
    }
    None
}

/// A refspec as the line spells it (known text only).
fn refspec(text: &str, delete_all: bool) -> Option<Target> {
    if text.starts_with('^') {
        // A negative refspec pushes nothing.
        return None;
    }
    let (forced, spec) = match text.strip_prefix('+') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (src, dst) = match spec.split_once(':') {
        Some((src, "")) => (src, src),
        Some((src, dst)) => (src, dst),
        None => (spec, spec),
    };
    let deletion = delete_all || (src.is_empty() && spec.contains(':'));
    let dest = if matches!(dst, "HEAD" | "@") {
        Dest::Current
    } else {
        // git completes `heads/X` to refs/heads/X as it does `X`.
        let name = dst
            .strip_prefix("refs/heads/")
            .or_else(|| dst.strip_prefix("heads/"))
            .unwrap_or(dst);
        if name.starts_with("refs/") || name.is_empty() {
            return None;
        }
        if name.contains('*') {
            Dest::Pattern(name.to_owned())
        } else {
            Dest::Branch(name.to_owned())
        }
    };
    Some(Target {
        // A pattern writes the branches it matches on this side only.
        certain: !matches!(dest, Dest::Pattern(_)),
        dest,
        forced: Tri::when(forced),
        deletion: Tri::when(deletion),
    })
}

/// Reads a push's (or send-pack's) words after the subcommand.
fn read_push(words: &[Arg], more_args: Option<&str>, send_pack: bool) -> Push {
    let table = if send_pack {
        SEND_PACK_OPTIONS
    } else {
        PUSH_OPTIONS
    };
    let mut push = Push::default();
    if send_pack {
        push.skip = Tri::Yes;
        push.skip_how = Some(Skip::SendPack);
    }
    let positional = read_push_options(&mut push, table, words);
    if let Some(why) = more_args {
        push.unknown(why);
    }
    let mut positional = positional.into_iter();
    push.remote = Some(push_remote(&mut push, positional.next()));
    read_refspecs(&mut push, positional, send_pack);
    push
}

/// Applies the push's options as git reads them; returns its operands (the
/// remote and the refspecs) in order.
fn read_push_options(push: &mut Push, table: &'static [GitOption], words: &[Arg]) -> Vec<Arg> {
    let mut positional: Vec<Arg> = Vec::new();
    let mut options_end = false;
    let mut rest = words.iter().peekable();
    while let Some(arg) = rest.next() {
        let Some(word) = arg.literal() else {
            positional.push(arg.clone());
            continue;
        };
        if options_end || !word.starts_with('-') || word == "-" {
            positional.push(arg.clone());
            continue;
        }
        if word == "--" || word == "--end-of-options" {
            options_end = true;
            continue;
        }
        let mut next = || {
            rest.next()
                .map(|a| a.literal().unwrap_or_else(|| a.spelled.clone()))
        };
        if let Some(long) = word.strip_prefix("--") {
            match long_option(table, long, &mut next) {
                OptionWord::One(name, negated, value) => {
                    apply(push, name, negated, value.as_deref());
                }
                OptionWord::Ambiguous(candidates) => ambiguous_option(push, &word, &candidates),
                OptionWord::Unknown => {}
            }
            continue;
        }
        short_options(push, table, &word, &mut next);
    }
    positional
}

/// An abbreviation several long options share: git refuses it, unless it is
/// newer than this table and reads it as one of them: a risky one leaves the
/// push open.
fn ambiguous_option(push: &mut Push, word: &str, candidates: &[(&'static str, bool)]) {
    let mut risky = false;
    for (name, negated) in candidates {
        match (*name, negated) {
            ("no-verify", false) => {
                push.skip = push.skip.or(Tri::Maybe);
                push.skip_how.get_or_insert(Skip::NoVerify);
            }
            ("force" | "force-with-lease", false) => {
                push.force = push.force.or(Tri::Maybe);
            }
            ("delete", false) => push.delete = push.delete.or(Tri::Maybe),
            _ => continue,
        }
        risky = true;
    }
    if risky {
        let names: Vec<String> = candidates
            .iter()
            .map(|(n, neg)| format!("--{}{n}", if *neg { "no-" } else { "" }))
            .collect();
        push.unknowns.push(format!(
            "{word} (git may read it as {})",
            names.join(" or ")
        ));
    }
}

/// A cluster of short options: `-fu`, `-o value`, `-ovalue`.
fn short_options(
    push: &mut Push,
    table: &'static [GitOption],
    word: &str,
    next: &mut dyn FnMut() -> Option<String>,
) {
    for (i, c) in word[1..].char_indices() {
        let Some(option) = table.iter().find(|o| o.short == Some(c)) else {
            break;
        };
        if option.value == OptionValue::Required {
            let attached = &word[1 + i + c.len_utf8()..];
            if attached.is_empty() {
                next();
            }
            apply(push, option.long, false, Some(attached));
            break;
        }
        apply(push, option.long, false, None);
    }
}

/// The remote the push goes to: its first operand, else `--repo`'s, else the
/// default.
fn push_remote(push: &mut Push, first: Option<Arg>) -> Remote {
    match first {
        Some(first) => match first.literal() {
            Some(name) => Remote::Named(name),
            None => {
                push.unknown(&first.spelled);
                Remote::Unknown
            }
        },
        // `--repo` names it when no operand does.
        None => push.remote.take().unwrap_or(Remote::Default),
    }
}

/// The branches the refspecs after the remote write (`tag NAME` writes none).
fn read_refspecs(push: &mut Push, specs: impl Iterator<Item = Arg>, send_pack: bool) {
    let mut tag_next = false;
    for spec in specs {
        push.refspecs_given = true;
        if tag_next {
            tag_next = false;
            continue;
        }
        match spec.literal() {
            Some(text) if text == "tag" && !send_pack => tag_next = true,
            // `:` pushes every branch both sides have ("matching").
            Some(text) if text.trim_start_matches('+') == ":" => {
                push.every_branch = true;
                if text.starts_with('+') {
                    push.force = Tri::Yes;
                }
            }
            Some(text) => push.targets.extend(refspec(&text, push.delete == Tri::Yes)),
            None => {
                // `+HEAD:$B` still forces, `:$B` still deletes.
                let known = spec.known_prefix();
                push.unknown(&spec.spelled);
                push.targets.push(Target {
                    dest: Dest::Pattern("*".to_owned()),
                    forced: Tri::when(known.starts_with('+')),
                    deletion: Tri::when(known.trim_start_matches('+').starts_with(':')),
                    certain: false,
                });
            }
        }
    }
}

/// The clone one command runs in.
struct Place {
    git: Git,
    dir: PathBuf,
    common_dir: PathBuf,
    current: Option<Option<String>>,
    locations: BTreeMap<String, Option<String>>,
    managed: Option<Vec<String>>,
    local: BTreeMap<String, bool>,
}

impl Place {
    /// The clone at `dir` (or above it), or at `git_dir`; `None` outside a
    /// repository and in one where maverick never wrote anything.
    fn find(dir: &Path, git_dir: Option<&Path>, env: &GitEnv) -> Option<Place> {
        let common_dir = match git_dir {
            Some(git_dir) => prepush::common_dir_from(dir, env, &dir.join(git_dir)),
            None => dir
                .ancestors()
                .find_map(|d| prepush::locate_common_dir(d, env))?,
        };
        if prepush::maverick_absent(&common_dir) {
            return None;
        }
        let mut git_env = env.clone();
        if let Some(git_dir) = git_dir {
            git_env = git_env.set("GIT_DIR", dir.join(git_dir));
        }
        Some(Place {
            git: Git::new(dir, git_env),
            dir: dir.to_owned(),
            common_dir,
            current: None,
            locations: BTreeMap::new(),
            managed: None,
            local: BTreeMap::new(),
        })
    }

    fn current_branch(&mut self) -> Option<String> {
        if self.current.is_none() {
            self.current = Some(self.git.current_branch().ok().flatten());
        }
        self.current.clone().flatten()
    }

    /// Where a push to `remote` (a name, URL or path) goes, normalised.
    fn location(&mut self, remote: &str) -> Option<String> {
        if let Some(known) = self.locations.get(remote) {
            return known.clone();
        }
        let location = match self.git.push_url(remote) {
            Ok(url) => {
                // Only a relative path needs the worktree's top level (a
                // git process): a URL or an absolute path reads the same
                // from any directory.
                let normalise = crate::writer::location::normalise;
                let anywhere = normalise(&url, Path::new("/"));
                Some(if normalise(&url, Path::new("/a")) == anywhere {
                    anywhere
                } else {
                    normalise(&url, &prepush::toplevel(&self.git))
                })
            }
            // Not a remote's name: a URL or a path, as git takes it.
            Err(_) => Some(crate::writer::location::normalise(remote, &self.dir)),
        };
        self.locations.insert(remote.to_owned(), location.clone());
        location
    }

    /// The remote `git push` with none named goes to.
    fn default_remote(&mut self) -> String {
        let branch = self.current_branch();
        let mut keys = Vec::new();
        if let Some(b) = &branch {
            keys.push(format!("branch.{b}.pushRemote"));
        }
        keys.push("remote.pushDefault".to_owned());
        if let Some(b) = &branch {
            keys.push(format!("branch.{b}.remote"));
        }
        keys.iter()
            .find_map(|k| self.git.config_get(k).ok().flatten())
            .unwrap_or_else(|| "origin".to_owned())
    }

    /// Whether this clone has `branch` (what `--all` pushes).
    fn has_branch(&mut self, branch: &str) -> bool {
        let git = &self.git;
        *self.local.entry(branch.to_owned()).or_insert_with(|| {
            git.resolve_commit(&format!("refs/heads/{branch}"))
                .is_ok_and(|c| c.is_some())
        })
    }

    fn managed_branches(&mut self) -> Result<Vec<String>, RecordError> {
        if self.managed.is_none() {
            self.managed = Some(crate::records::claim::managed_branches(&self.common_dir)?);
        }
        Ok(self.managed.clone().unwrap_or_default())
    }

    /// Whether a push to `remote` reaches the repository `state` is
    /// managed on (its recorded location, or its claims' remote).
    fn reaches(&mut self, remote: &Remote, state: &BranchState) -> Tri {
        let name = match remote {
            Remote::Unknown => return Tri::Maybe,
            Remote::Named(name) => name.clone(),
            Remote::Default => self.default_remote(),
        };
        let Some(destination) = self.location(&name) else {
            return Tri::No;
        };
        let mut managed_on: Vec<String> = state
            .seen
            .as_ref()
            .and_then(|s| s.location.clone())
            .into_iter()
            .collect();
        for claim in &state.claims {
            managed_on.extend(self.location(&claim.remote));
        }
        if managed_on.is_empty() {
            managed_on.extend(self.location("origin"));
        }
        Tri::when(managed_on.contains(&destination))
    }
}

/// A claim record that still counts: not lost, lease not run out.
fn live(record: &ClaimRecord, now: Timestamp) -> bool {
    record.lost.is_none() && maverick_core::holding::lease_live(record.expires_at, now)
}

/// `*` in a refspec pattern matches any run of characters.
fn glob_matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        Some((head, tail)) => {
            name.len() >= head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail)
        }
        None => pattern == name,
    }
}

/// One way the push may go: a branch, and what is done to it.
struct World<'a> {
    branch: &'a str,
    state: &'a BranchState,
    skip: bool,
    force: bool,
    delete: bool,
    /// How the line turns the hook off, when it does so by a setting.
    skip_spelled: Option<&'a str>,
}

/// The denial for one way the push may go; `None` allows it.
fn deny(
    world: &World<'_>,
    how: Option<Skip>,
    me: &dyn Fn() -> InstanceId,
    now: Timestamp,
) -> Option<String> {
    let branch = world.branch;
    if world.skip {
        return Some(match how {
            Some(Skip::SendPack) => format!(
                "`git send-pack` never runs the pre-push hook, so git maverick's guard (one \
                 writer per branch) would not check this push to {branch}, a branch it manages. \
                 Use `git push`; if the guard refuses, stop and report what it printed."
            ),
            Some(Skip::HooksPath) => format!(
                "`{}` on this push points git at other hooks or turns them off, so git \
                 maverick's pre-push guard (one writer per branch) would not run for {branch}, a \
                 branch it manages. Push without it; if the guard refuses, stop and report what \
                 it printed.",
                world.skip_spelled.unwrap_or("-c core.hooksPath=…")
            ),
            _ => format!(
                "`git push --no-verify` skips git maverick's pre-push guard (one writer per \
                 branch) for {branch}, a branch it manages. Push without --no-verify; if the \
                 guard refuses, stop and report what it printed."
            ),
        });
    }
    if world.delete {
        return Some(format!(
            "`git push` would delete {branch}, a branch git maverick manages (a claim or a \
             last-seen record): deleting it loses the pushed work another machine resumes \
             from. Release the claim instead (git maverick coord release ISSUE)."
        ));
    }
    if world.force {
        return Some(format!(
            "a forced push to {branch} (--force, -f, +refspec or --force-with-lease) overwrites \
             the branch git maverick manages: only fast-forward pushes are allowed there. \
             Fetch, rebase your commits on the remote head, and push without force; if the \
             remote head moved behind your back, stop and report."
        ));
    }
    let claims = &world.state.claims;
    if claims.is_empty() {
        return None;
    }
    // Who may push is the pre-push hook's own judgement (the claim records
    // it refuses on): the guard asks it instead of a rule of its own.
    let me = me();
    let (kind, what, hint) = prepush::check_holder(branch, claims, &me).err()?;
    // Said as the hook says it, but for a branch another instance holds
    // live while this one never held it: there, who holds it and the way
    // to take it over once its lease runs out.
    let holder = (kind == prepush::RefusalKind::NotHolder)
        .then(|| claims.iter().find(|c| c.instance_id != me && live(c, now)))
        .flatten();
    Some(match holder {
        Some(other) => format!(
            "{branch} is held by instance {} (issue #{}, lease until {}); this session is \
             instance {me}. Do not push to another instance's branch: pick another issue, or \
             wait for its lease to run out and take it over (git maverick coord takeover {}).",
            other.instance_id, other.issue, other.expires_at, other.issue
        ),
        None => format!("{what}: the pre-push guard refuses this push. {hint}"),
    })
}

/// The stack the judgement runs on: the grammar and the reading recurse
/// once a nesting level, and `shell` bounds the levels well inside this.
const JUDGE_STACK: usize = 64 * 1024 * 1024;

/// Judges one command line the agent's shell is about to run. Nothing in
/// the line can crash it: its nesting is bounded before it is parsed, it
/// runs on a stack of its own, and a panic is an `ask`, never an allow.
pub fn judge(line: &str, session: &Session<'_>) -> Result<Verdict, RecordError> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("bash-guard".to_owned())
            .stack_size(JUDGE_STACK)
            .spawn_scoped(scope, || judge_here(line, session));
        match worker {
            Ok(worker) => worker.join().unwrap_or_else(|_| {
                Ok(Verdict::Ask(
                    "git maverick's guard failed on this command line, so it cannot tell \
                     whether it pushes past the pre-push guard. Run the push as a plain \
                     command of its own."
                        .to_owned(),
                ))
            }),
            Err(_) => judge_here(line, session),
        }
    })
}

fn judge_here(line: &str, session: &Session<'_>) -> Result<Verdict, RecordError> {
    let mut judge = Judge {
        session,
        depth: 0,
        aliases: BTreeMap::new(),
        me: std::cell::OnceCell::new(),
    };
    match shell::invocations(line) {
        Ok(invocations) => judge.all(&invocations),
        Err(unreadable) => judge.unreadable(line, &unreadable),
    }
}

struct Judge<'s, 'a> {
    session: &'s Session<'a>,
    depth: usize,
    /// Aliases the line itself sets (`git config alias.p push && git p`).
    aliases: BTreeMap<String, String>,
    /// The session's instance, once a verdict needed it.
    me: std::cell::OnceCell<InstanceId>,
}

/// The words that make a program's arguments a possible push: the guard
/// asks about a program it does not know when its words name one.
fn mentions_push(text: &str) -> bool {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .any(|w| {
            matches!(
                w,
                "push" | "send-pack" | "git-push" | "git-send-pack" | "pre-push" | "receive-pack"
            ) || w.eq_ignore_ascii_case("hookspath")
        })
}

/// Programs that run no other program and change no hook: their arguments
/// may say "push" freely (`grep -rn push`, `gh pr create --body "…push…"`,
/// whose own `git push` runs the hook; `cargo test push`).
fn runs_nothing(program: &str) -> bool {
    matches!(
        program,
        "echo"
            | "printf"
            | "cat"
            | "grep"
            | "egrep"
            | "fgrep"
            | "rg"
            | "ag"
            | "ls"
            | "head"
            | "tail"
            | "wc"
            | "sort"
            | "uniq"
            | "cut"
            | "tr"
            | "diff"
            | "cmp"
            | "comm"
            | "stat"
            | "file"
            | "test"
            | "["
            | "true"
            | "false"
            | "pwd"
            | "date"
            | "basename"
            | "dirname"
            | "realpath"
            | "readlink"
            | "which"
            | "type"
            | "jq"
            | "less"
            | "more"
            | "sleep"
            | "mkdir"
            | "touch"
            | "wait"
            | "read"
            | "exit"
            | "return"
            | "set"
            | "shift"
            | "gh"
            | "cargo"
            | "rustc"
            | "rustfmt"
            | "clippy-driver"
    )
}

/// The shells whose script file the guard reads.
fn is_shell(program: &str) -> bool {
    matches!(
        program,
        "." | "source" | "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash"
    )
}

/// The program's name without its directory, also when the directory is
/// known only when it runs (`"$(git --exec-path)/git-push"`).
fn program_name(invocation: &Invocation) -> Option<String> {
    if let Some(name) = invocation.program() {
        return Some(name);
    }
    match invocation.args.first()?.pieces.last()? {
        Piece::Text(tail) => tail
            .rsplit_once('/')
            .map(|(_, name)| name.to_owned())
            .filter(|n| !n.is_empty()),
        _ => None,
    }
}

/// Variables and settings whose value git runs as a command.
const GIT_RUNS_ENV: &[&str] = &[
    "GIT_EDITOR",
    "GIT_SEQUENCE_EDITOR",
    "EDITOR",
    "VISUAL",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_PAGER",
    "PAGER",
    "GIT_ASKPASS",
    "SSH_ASKPASS",
    "GIT_EXTERNAL_DIFF",
];
const GIT_RUNS_SETTINGS: &[&str] = &[
    "core.editor",
    "sequence.editor",
    "core.pager",
    "core.sshcommand",
    "core.askpass",
    "diff.external",
];

/// Settings that, written to this clone's config, change whether or how the
/// next push runs the pre-push hook or where it goes.
fn risky_setting(key: &str, value: Option<&str>) -> bool {
    let key = key.to_ascii_lowercase();
    key == "core.hookspath"
        || key.starts_with("include.")
        || key.starts_with("includeif.")
        || (key.starts_with("remote.") && (key.ends_with(".push") || key.ends_with(".mirror")))
        || (key == "push.default" && value.is_none_or(|v| matches!(v, "upstream" | "tracking")))
        || (key.starts_with("alias.") && value.is_none_or(mentions_push))
}

/// Damerau–Levenshtein distance within 2 of `push`: what git's
/// help.autocorrect may run as `git push`.
fn near_push(name: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (name.chars().collect(), "push".chars().collect());
    if a.len().abs_diff(b.len()) > 2 {
        return false;
    }
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            d[i][j] = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                d[i][j] = d[i][j].min(d[i - 2][j - 2] + 1);
            }
        }
    }
    d[a.len()][b.len()] <= 2
}

impl Judge<'_, '_> {
    fn all(&mut self, invocations: &[Invocation]) -> Result<Verdict, RecordError> {
        let mut verdict = Verdict::Allow;
        for invocation in invocations {
            let next = self.invocation(invocation)?;
            if next.rank() > verdict.rank() {
                verdict = next;
            }
            if matches!(verdict, Verdict::Deny(_)) {
                break;
            }
        }
        Ok(verdict)
    }

    /// True when the session runs in a clone maverick manages branches in.
    fn managed_here(&self) -> bool {
        Place::find(self.session.cwd, None, self.session.env).is_some()
    }

    /// A line the guard does not read: one too deep or too long is asked
    /// about in a clone maverick manages; one the grammar cannot read, when
    /// it mentions a push (else it is left to the shell, which refuses what
    /// it cannot parse either, and the pre-push hook).
    fn unreadable(&self, line: &str, why: &shell::Unreadable) -> Result<Verdict, RecordError> {
        let fails_closed = matches!(why, shell::Unreadable::TooBig(_)) || mentions_push(line);
        Ok(if fails_closed && self.managed_here() {
            Verdict::Ask(format!(
                "git maverick cannot read this command line as a shell would ({why}), so it \
                 cannot tell whether a push in it skips the pre-push guard, forces or deletes \
                 a branch it manages. Write the push as a plain command of its own."
            ))
        } else {
            Verdict::Allow
        })
    }

    /// What runs at this point is not on the line (`why`): asked about in a
    /// clone maverick manages.
    fn opaque(&self, why: &str) -> Result<Verdict, RecordError> {
        if !self.managed_here() {
            return Ok(Verdict::Allow);
        }
        Ok(Verdict::Ask(format!(
            "git maverick cannot see what this command line runs: {why}. If it pushes past the \
             pre-push guard, forces or deletes a branch git maverick manages, it must not run. \
             Run the commands themselves, the push as a plain command of its own."
        )))
    }

    fn invocation(&mut self, invocation: &Invocation) -> Result<Verdict, RecordError> {
        if let Some(why) = &invocation.opaque {
            return self.opaque(why);
        }
        if invocation.args.first().and_then(Arg::literal).as_deref() == Some(".") {
            return self.script_file(".", invocation);
        }
        let Some(program) = program_name(invocation) else {
            return self.unknown_program(invocation);
        };
        if let Some(sub) = program.strip_prefix("git-") {
            // git's own commands by their own names: `git-push`,
            // `$(git --exec-path)/git-push`, `git-maverick run`.
            let mut args = vec![Arg::text("git"), Arg::text(sub)];
            args.extend(invocation.args[1..].iter().cloned());
            let as_git = Invocation {
                args,
                ..invocation.clone()
            };
            return self.invocation(&as_git);
        }
        if program != "git" {
            if is_shell(&program) {
                return self.script_file(&program, invocation);
            }
            if runs_nothing(&program) {
                return Ok(Verdict::Allow);
            }
            return self.unknown_program(invocation);
        }
        let Some(call) = git_call(&invocation.args, &invocation.env) else {
            return Ok(Verdict::Allow);
        };
        // Where it runs.
        let mut dir = invocation.dir.as_ref().map(|d| self.session.cwd.join(d));
        for d in &call.dirs {
            dir = match (dir, d.literal()) {
                (Some(dir), Some(d)) => Some(dir.join(d)),
                _ => None,
            };
        }
        let git_dir = match &call.git_dir {
            None => Some(None),
            Some(arg) => arg.literal().map(|d| Some(PathBuf::from(d))),
        };
        let Some(first) = call.words.first() else {
            return Ok(Verdict::Allow);
        };
        let place = match (&dir, &git_dir) {
            (Some(dir), Some(git_dir)) => Place::find(dir, git_dir.as_deref(), self.session.env),
            _ => None,
        };
        let Some(sub) = first.literal() else {
            // `git $CMD …`: a push only if the words say so.
            return self.unknown_program(invocation);
        };
        // The commands git itself runs for this one (an editor, a pager).
        let runs = self.git_runs(&call, invocation, dir.as_deref())?;
        if matches!(runs, Verdict::Deny(_)) {
            return Ok(runs);
        }
        let own = self.git_command(&sub, &call, invocation, dir.as_deref(), place, &git_dir)?;
        Ok(if runs.rank() > own.rank() { runs } else { own })
    }

    /// `git SUB …`, judged by what SUB is.
    fn git_command(
        &mut self,
        sub: &str,
        call: &GitCall,
        invocation: &Invocation,
        dir: Option<&Path>,
        place: Option<Place>,
        git_dir: &Option<Option<PathBuf>>,
    ) -> Result<Verdict, RecordError> {
        let send_pack = match sub {
            "push" => false,
            "send-pack" => true,
            "maverick" => return self.maverick(call, invocation),
            "config" => return self.config(call),
            "rebase" | "bisect" | "submodule" => return self.git_exec(sub, call, invocation, dir),
            _ => {
                let Some(mut place) = place else {
                    // A directory only the shell knows: its aliases are
                    // unknown, but git's own commands are never aliases.
                    if is_builtin(sub) {
                        return Ok(Verdict::Allow);
                    }
                    return self.opaque(&format!(
                        "`git {sub}` in a directory the shell names only when it runs: an alias \
                         there is not read"
                    ));
                };
                return self.alias(&mut place, sub, call, invocation);
            }
        };
        let known_place = dir.is_some() && git_dir.is_some();
        let mut place = place;
        // `$(git branch --show-current)` is the branch checked out there
        // (asked of git only when a word needs it).
        let asks_current = call.words[1..]
            .iter()
            .any(|a| a.pieces.contains(&Piece::CurrentBranch));
        let current = place
            .as_mut()
            .filter(|_| asks_current)
            .and_then(Place::current_branch);
        let words: Vec<Arg> = call.words[1..]
            .iter()
            .map(|arg| resolve_current(arg, current.as_deref()))
            .collect();
        let mut push = read_push(&words, invocation.more_args.as_deref(), send_pack);
        if let Some((tri, spelled)) = &call.hooks_override {
            push.skip = push.skip.or(*tri);
            if push.skip_how.is_none() || *tri == Tri::Yes {
                push.skip_how = Some(Skip::HooksPath);
                push.skip_spelled = Some(spelled.clone());
            }
            if *tri == Tri::Maybe {
                push.unknowns.push(spelled.clone());
            }
        }
        // Settings that choose where a refspec without `:DST` (or none at
        // all) writes: remote.NAME.push maps it, push.default=upstream sends
        // it to the branch's upstream.
        for setting in call.settings.iter().filter_map(Arg::literal) {
            let key = setting.split_once('=').map_or(setting.as_str(), |(k, _)| k);
            let key = key.to_ascii_lowercase();
            if key == "push.default" || (key.starts_with("remote.") && key.ends_with(".push")) {
                push.unknown(&format!("-c {setting}"));
            }
        }
        match place {
            Some(mut place) => self.push(&mut place, &push),
            None if known_place => Ok(Verdict::Allow),
            None => self.unknown_place(&push),
        }
    }

    /// `git maverick run … -- CMD` runs CMD: judged as CMD. `git maverick
    /// hook uninstall` takes the pre-push guard away.
    fn maverick(
        &mut self,
        call: &GitCall,
        invocation: &Invocation,
    ) -> Result<Verdict, RecordError> {
        let words: Vec<Option<String>> = call.words[1..].iter().map(Arg::literal).collect();
        match words.first().cloned().flatten().as_deref() {
            Some("run") => {
                let Some(at) = words.iter().position(|w| w.as_deref() == Some("--")) else {
                    return Ok(Verdict::Allow);
                };
                // The command is read again as a shell would run it.
                let words: Vec<String> = call.words[at + 2..]
                    .iter()
                    .map(|a| match a.literal() {
                        Some(l) => maverick_core::shell::quote(&l),
                        None => a.spelled.clone(),
                    })
                    .collect();
                let dir = invocation.dir.as_ref().map(|d| self.session.cwd.join(d));
                self.script_text(&words.join(" "), invocation, dir.as_deref())
            }
            Some("hook") if words.get(1).cloned().flatten().as_deref() == Some("uninstall") => {
                self.opaque("`git maverick hook uninstall` takes the pre-push guard out, so the pushes after it are not checked")
            }
            _ => Ok(Verdict::Allow),
        }
    }

    /// `git config KEY VALUE` (and `set`, `--add`, `--unset`…) on a setting
    /// that decides whether the pre-push hook runs or what a push writes:
    /// asked about. An alias it sets is remembered for the rest of the line.
    fn config(&mut self, call: &GitCall) -> Result<Verdict, RecordError> {
        let mut writes = false;
        let mut operands = Vec::new();
        for word in &call.words[1..] {
            match word.literal() {
                Some(w) if w.starts_with('-') => {
                    writes |= matches!(
                        w.as_str(),
                        "--add"
                            | "--replace-all"
                            | "--unset"
                            | "--unset-all"
                            | "--rename-section"
                            | "--remove-section"
                            | "--edit"
                            | "-e"
                    );
                }
                other => operands.push(other),
            }
        }
        let mut operands = operands.into_iter();
        let mut key = operands.next().flatten();
        if matches!(
            key.as_deref(),
            Some("set" | "unset" | "edit" | "rename-section" | "remove-section")
        ) {
            writes = true;
            key = operands.next().flatten();
        }
        let value = operands.next();
        writes |= value.is_some();
        let Some(key) = key.filter(|_| writes) else {
            return Ok(Verdict::Allow);
        };
        let value = value.flatten();
        if let (Some(name), Some(v)) = (key.to_ascii_lowercase().strip_prefix("alias."), &value) {
            self.aliases.insert(name.to_owned(), v.clone());
            return Ok(Verdict::Allow);
        }
        if !risky_setting(&key, value.as_deref()) {
            return Ok(Verdict::Allow);
        }
        self.opaque(&format!(
            "`git config {key}` changes whether git runs the pre-push hook, or what a push \
             writes, for every push after it"
        ))
    }

    /// `git rebase -x CMD`, `git bisect run CMD…`, `git submodule foreach
    /// CMD`: the commands git runs, judged as scripts.
    fn git_exec(
        &mut self,
        sub: &str,
        call: &GitCall,
        invocation: &Invocation,
        dir: Option<&Path>,
    ) -> Result<Verdict, RecordError> {
        let words: Vec<&Arg> = call.words[1..].iter().collect();
        let mut scripts: Vec<&Arg> = Vec::new();
        let literal = |a: &Arg| a.literal().unwrap_or_default();
        match sub {
            "rebase" => {
                let mut rest = words.iter();
                while let Some(word) = rest.next() {
                    let w = literal(word);
                    // `--exec`, or an abbreviation git takes for it (`--ex`,
                    // `--exe`), with its command as `=CMD` or the next word.
                    let long = w
                        .strip_prefix("--")
                        .map(|l| l.split_once('=').unwrap_or((l, "")));
                    // Short options bundled (`-ix CMD`, `-xCMD`): what follows
                    // the `x` is the command, else the next word is.
                    let short = w
                        .strip_prefix('-')
                        .filter(|s| !s.starts_with('-'))
                        .and_then(|s| s.split_once('x'));
                    let inline = match (long, short) {
                        (Some((name, value)), _) if name.len() >= 2 && "exec".starts_with(name) => {
                            Some(value)
                        }
                        (_, Some((_, value))) => Some(value),
                        _ => None,
                    };
                    match inline {
                        Some("") if !w.contains('=') => scripts.extend(rest.next().copied()),
                        Some(text) => return self.script_text(text, invocation, dir),
                        None => {}
                    }
                }
            }
            "bisect" if words.first().map(|w| literal(w)).as_deref() == Some("run") => {
                let text: Vec<String> = words[1..].iter().map(|a| a.spelled.clone()).collect();
                return self.script_text(&text.join(" "), invocation, dir);
            }
            "submodule" => {
                if let Some(at) = words.iter().position(|w| literal(w) == "foreach") {
                    let rest: Vec<&&Arg> = words[at + 1..]
                        .iter()
                        .skip_while(|w| literal(w).starts_with('-'))
                        .collect();
                    let text: Vec<String> = rest.iter().map(|a| a.spelled.clone()).collect();
                    return self.script_text(&text.join(" "), invocation, dir);
                }
            }
            _ => {}
        }
        let mut verdict = Verdict::Allow;
        for script in scripts {
            let next = match script.literal() {
                Some(text) => self.script_text(&text, invocation, dir)?,
                None => self.opaque(&format!(
                    "git runs `{}`, known only when it runs",
                    script.spelled
                ))?,
            };
            if next.rank() > verdict.rank() {
                verdict = next;
            }
        }
        Ok(verdict)
    }

    /// A command git runs through a shell, where `invocation` runs.
    fn script_text(
        &mut self,
        text: &str,
        invocation: &Invocation,
        dir: Option<&Path>,
    ) -> Result<Verdict, RecordError> {
        let Some(dir) = dir.map(Path::to_owned) else {
            return if mentions_push(text) {
                self.opaque(&format!(
                    "git runs `{text}` in a directory known only when it runs"
                ))
            } else {
                Ok(Verdict::Allow)
            };
        };
        if self.depth >= MAX_ALIAS_DEPTH {
            return self.opaque("git commands run git commands more than four deep");
        }
        self.nested(text, &dir, invocation, |_| {})
    }

    /// What git runs for this command besides itself: an editor, a pager,
    /// an ssh command, named by the environment or `-c`.
    fn git_runs(
        &mut self,
        call: &GitCall,
        invocation: &Invocation,
        dir: Option<&Path>,
    ) -> Result<Verdict, RecordError> {
        let mut commands: Vec<String> = GIT_RUNS_ENV
            .iter()
            .filter_map(|name| invocation.env.get(*name))
            .map(|value| value.literal().unwrap_or_else(|| value.spelled.clone()))
            .collect();
        for setting in call.settings.iter().filter_map(Arg::literal) {
            if let Some((key, value)) = setting.split_once('=') {
                let key = key.to_ascii_lowercase();
                if GIT_RUNS_SETTINGS.contains(&key.as_str()) || key.starts_with("pager.") {
                    commands.push(value.to_owned());
                }
            }
        }
        let mut verdict = Verdict::Allow;
        for command in commands {
            let next = self.script_text(&command, invocation, dir)?;
            if next.rank() > verdict.rank() {
                verdict = next;
            }
        }
        Ok(verdict)
    }

    /// A script file a shell runs (`sh push.sh`, `bash -e ./ci.sh`,
    /// `. ./env.sh`, `source env.sh`): what it runs, read from the file as it
    /// is now. A file that is not there (yet) or not readable is left to the
    /// pre-push hook, as any program the guard cannot see into; one named by
    /// what only the running shell knows (`<(…)`, `"$F"`) is asked about.
    fn script_file(
        &mut self,
        program: &str,
        invocation: &Invocation,
    ) -> Result<Verdict, RecordError> {
        let operands = &invocation.args[1..];
        let file = match program {
            "." | "source" => operands.first(),
            _ => {
                // The first operand after the options (`-o NAME` and
                // `--rcfile FILE` take the next word).
                let mut words = operands.iter();
                loop {
                    let Some(word) = words.next() else { break None };
                    match word.literal() {
                        Some(l)
                            if matches!(
                                l.as_str(),
                                "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file"
                            ) =>
                        {
                            words.next();
                        }
                        Some(l) if l.starts_with(['-', '+']) && l != "-" => {}
                        _ => break Some(word),
                    }
                }
            }
        };
        let Some(file) = file else {
            return Ok(Verdict::Allow);
        };
        let (Some(file), Some(dir)) = (file.literal(), &invocation.dir) else {
            return self.opaque(&format!(
                "`{program} {}` runs a script the shell names only when it runs it",
                file.spelled
            ));
        };
        if self.depth >= MAX_ALIAS_DEPTH {
            return self.opaque("its scripts run scripts more than four deep");
        }
        let dir = self.session.cwd.join(dir);
        let path = dir.join(&file);
        let meta = match std::fs::metadata(&path) {
            // No such script: the shell fails to run it too.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Verdict::Allow),
            meta => meta,
        };
        let small = meta.is_ok_and(|m| m.is_file() && m.len() <= MAX_SCRIPT);
        let Some(text) = small.then(|| std::fs::read_to_string(&path).ok()).flatten() else {
            return self.opaque(&format!(
                "`{program} {file}` runs a script git maverick does not read (over 64 KiB, not \
                 a file, or unreadable)"
            ));
        };
        self.nested(&text, &dir, invocation, |_| {})
    }

    /// Judges another script `invocation` runs (a script file, a git
    /// alias), started in `dir` with `invocation`'s variables; `adjust`
    /// amends each program it runs.
    fn nested(
        &mut self,
        script: &str,
        dir: &Path,
        invocation: &Invocation,
        mut adjust: impl FnMut(&mut Invocation),
    ) -> Result<Verdict, RecordError> {
        let mut invocations = match shell::invocations(script) {
            Ok(invocations) => invocations,
            Err(unreadable) => return self.unreadable(script, &unreadable),
        };
        for inner in &mut invocations {
            inner.dir = inner.dir.as_ref().map(|d| dir.join(d));
            let mut env = invocation.env.clone();
            env.append(&mut inner.env);
            inner.env = env;
            adjust(inner);
        }
        self.depth += 1;
        let verdict = self.all(&invocations);
        self.depth -= 1;
        verdict
    }

    /// A program the guard does not know, or one only the running shell
    /// knows (`$GIT push`, `./g push`, `python3 -c …`): asked about when its
    /// words name a push in a clone maverick manages.
    fn unknown_program(&self, invocation: &Invocation) -> Result<Verdict, RecordError> {
        let names_push = invocation
            .args
            .iter()
            .any(|a| mentions_push(&a.spelled) || a.literal().is_some_and(|l| mentions_push(&l)));
        if !names_push || !self.managed_here() {
            return Ok(Verdict::Allow);
        }
        let spelled = invocation
            .args
            .iter()
            .map(|a| a.spelled.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let spelled: String = spelled.chars().take(200).collect();
        Ok(Verdict::Ask(format!(
            "git maverick cannot tell what `{spelled}` runs: if it is a `git push` that \
             forces, deletes or skips the pre-push guard on a branch git maverick manages, it \
             must not run. Spell the git command out."
        )))
    }

    /// A push whose directory only the running shell knows: asked about
    /// when it forces, deletes or skips the guard, and the session is in a
    /// clone maverick manages.
    fn unknown_place(&self, push: &Push) -> Result<Verdict, RecordError> {
        if Place::find(self.session.cwd, None, self.session.env).is_none() {
            return Ok(Verdict::Allow);
        }
        let risky = [push.skip, push.force, push.delete, push.prune]
            .into_iter()
            .chain(push.targets.iter().flat_map(|t| [t.forced, t.deletion]))
            .any(|t| t != Tri::No);
        if !risky || push.dry_run {
            return Ok(Verdict::Allow);
        }
        Ok(Verdict::Ask(
            "this push runs in a directory the shell only knows when it runs it (a `cd`, `-C` \
             or `--git-dir` with a variable), and it may force, delete or skip the pre-push \
             guard: git maverick cannot tell whether it writes to a branch it manages. Spell the \
             directory out."
                .to_owned(),
        ))
    }

    /// `git NAME …` where NAME may be an alias of a push.
    fn alias(
        &mut self,
        place: &mut Place,
        name: &str,
        call: &GitCall,
        invocation: &Invocation,
    ) -> Result<Verdict, RecordError> {
        if is_builtin(name) {
            return Ok(Verdict::Allow);
        }
        if self.depth >= MAX_ALIAS_DEPTH {
            return self.opaque("its git aliases run aliases more than four deep");
        }
        // `-c alias.NAME=…` on this very command, then what the line set,
        // then the clone's config.
        let key = format!("alias.{}", name.to_ascii_lowercase());
        let from_line = call
            .settings
            .iter()
            .rev()
            .filter_map(Arg::literal)
            .find_map(|s| {
                let (k, v) = s.split_once('=')?;
                k.eq_ignore_ascii_case(&key).then(|| v.to_owned())
            })
            .or_else(|| self.aliases.get(&name.to_ascii_lowercase()).cloned());
        let value = match from_line {
            Some(value) => value,
            None => match place.git.config_get(&format!("alias.{name}")) {
                Ok(Some(value)) => value,
                Err(_) => {
                    return self.opaque(&format!(
                        "git's configuration did not answer whether `git {name}` is an alias"
                    ))
                }
                _ if near_push(name) => return self.autocorrected(place, name, call, invocation),
                _ => return Ok(Verdict::Allow),
            },
        };
        let args: Vec<String> = call.words[1..]
            .iter()
            .map(|a| match a.literal() {
                Some(l) => maverick_core::shell::quote(&l),
                None => a.spelled.clone(),
            })
            .collect();
        // git runs a shell alias as `sh -c 'ALIAS "$@"' ALIAS ARGS…` at
        // the top of the worktree, and a git alias as git with the words
        // of ALIAS in front of ARGS.
        let (script, dir) = match value.strip_prefix('!') {
            Some(shell) => (
                with_positionals(&format!("{shell} \"$@\""), &args),
                prepush::toplevel(&place.git),
            ),
            None => (format!("git {value} {}", args.join(" ")), place.dir.clone()),
        };
        let shell_alias = value.starts_with('!');
        self.nested(&script, &dir, invocation, |inner| {
            if shell_alias {
                return;
            }
            // `git -c … ALIAS`: the settings hold for the alias's git.
            let mut args = vec![inner.args[0].clone()];
            args.extend(call.settings.iter().cloned());
            args.extend(inner.args.drain(1..));
            inner.args = args;
        })
    }

    /// `git psuh …`, which git runs as `git push …` when help.autocorrect
    /// is on: judged as that push, and asked about rather than denied.
    fn autocorrected(
        &mut self,
        place: &mut Place,
        name: &str,
        call: &GitCall,
        invocation: &Invocation,
    ) -> Result<Verdict, RecordError> {
        self.aliases
            .insert(name.to_ascii_lowercase(), "push".to_owned());
        let verdict = self.alias(place, name, call, invocation)?;
        self.aliases.remove(&name.to_ascii_lowercase());
        Ok(match verdict {
            Verdict::Allow => Verdict::Allow,
            Verdict::Ask(reason) | Verdict::Deny(reason) => Verdict::Ask(format!(
                "git runs `git {name}` as `git push` when help.autocorrect is on, and then: \
                 {reason}"
            )),
        })
    }

    /// Every way the push may go, judged: deny when a branch it certainly
    /// writes to is denied whatever the shell fills in, ask when some way is
    /// denied, allow otherwise.
    fn push(&mut self, place: &mut Place, push: &Push) -> Result<Verdict, RecordError> {
        if push.dry_run {
            return Ok(Verdict::Allow);
        }
        let remote = push.remote.clone().unwrap_or(Remote::Default);
        let managed = place.managed_branches()?;
        let mut candidates: Vec<(String, Tri, Tri, bool)> = Vec::new();
        for target in &push.targets {
            let Target {
                forced,
                deletion,
                certain,
                ..
            } = *target;
            match &target.dest {
                Dest::Branch(b) => candidates.push((b.clone(), forced, deletion, certain)),
                Dest::Current => {
                    if let Some(b) = place.current_branch() {
                        candidates.push((b, forced, deletion, certain));
                    }
                }
                Dest::Pattern(p) => {
                    for b in managed.iter().filter(|b| glob_matches(p, b)) {
                        candidates.push((b.clone(), forced, deletion, certain));
                    }
                }
            }
        }
        if push.targets.is_empty() && !push.every_branch && !push.refspecs_given {
            // git's default: the current branch.
            if let Some(b) = place.current_branch() {
                candidates.push((b, Tri::No, Tri::No, true));
            }
        }
        for b in &managed {
            // `--all` pushes this clone's branches; `--mirror` also deletes
            // the remote's others.
            if push.every_branch && (push.mirror || place.has_branch(b)) {
                candidates.push((b.clone(), Tri::No, Tri::No, true));
            }
            if push.unknown_target {
                candidates.push((b.clone(), Tri::No, Tri::No, false));
            }
            if push.prune == Tri::Yes {
                // Deleted when the remote has it and this clone does not.
                candidates.push((b.clone(), Tri::No, Tri::Yes, false));
            }
        }
        let mut feared: Option<String> = None;
        for (branch, forced, deletion, certain) in &candidates {
            let state = BranchState::load(&place.common_dir, branch)?;
            if !state.managed() {
                continue;
            }
            let mut denied = Vec::new();
            let mut allowed = false;
            for &reaches in place.reaches(&remote, &state).values() {
                for &skip in push.skip.values() {
                    for &force in push.force.or(*forced).values() {
                        for &delete in push.delete.or(*deletion).values() {
                            let world = World {
                                branch,
                                state: &state,
                                skip,
                                force,
                                delete,
                                skip_spelled: push.skip_spelled.as_deref(),
                            };
                            let (session, cache) = (self.session, &self.me);
                            let me = || cache.get_or_init(|| (session.me)()).clone();
                            match reaches
                                .then(|| deny(&world, push.skip_how, &me, self.session.now))
                                .flatten()
                            {
                                Some(reason) => denied.push(reason),
                                None => allowed = true,
                            }
                        }
                    }
                }
            }
            match denied.into_iter().next() {
                Some(reason) if *certain && !allowed => return Ok(Verdict::Deny(reason)),
                Some(reason) => {
                    feared.get_or_insert(reason);
                }
                None => {}
            }
        }
        let Some(reason) = feared else {
            return Ok(Verdict::Allow);
        };
        let mut depends = Vec::new();
        if !push.unknowns.is_empty() {
            let spelled: Vec<String> = push.unknowns.iter().map(|u| format!("`{u}`")).collect();
            depends.push(format!(
                "{}, which the shell only knows when it runs the command",
                spelled.join(", ")
            ));
        }
        if push
            .targets
            .iter()
            .any(|t| matches!(t.dest, Dest::Pattern(_)))
        {
            depends.push("which of this clone's branches a refspec pattern matches".to_owned());
        }
        if push.prune == Tri::Yes {
            depends.push("which branches --prune deletes on the remote".to_owned());
        }
        Ok(Verdict::Ask(format!(
            "git maverick cannot tell from the command line alone whether this push is allowed: \
             it depends on {}. If it goes as feared: {reason} Spell the remote, branches and \
             options out to get a clear answer.",
            depends.join("; and on ")
        )))
    }
}

/// `arg` with `$(git branch --show-current)` replaced by the branch (or
/// left unknown on a detached HEAD).
fn resolve_current(arg: &Arg, current: Option<&str>) -> Arg {
    let pieces = arg
        .pieces
        .iter()
        .map(|p| match (p, current) {
            (Piece::CurrentBranch, Some(branch)) => Piece::Text(branch.to_owned()),
            (Piece::CurrentBranch, None) => Piece::Unknown,
            (p, _) => p.clone(),
        })
        .collect::<Vec<_>>();
    let mut merged: Vec<Piece> = Vec::new();
    for piece in pieces {
        match (merged.last_mut(), piece) {
            (Some(Piece::Text(last)), Piece::Text(text)) => last.push_str(&text),
            (_, piece) => merged.push(piece),
        }
    }
    Arg {
        pieces: merged,
        spelled: arg.spelled.clone(),
    }
}

/// A shell alias's script with its positional parameters filled in.
fn with_positionals(script: &str, args: &[String]) -> String {
    let all = args.join(" ");
    let mut text = script.to_owned();
    for form in [
        "\"$@\"", "\"${@}\"", "\"$*\"", "\"${*}\"", "$@", "${@}", "$*", "${*}",
    ] {
        text = text.replace(form, &all);
    }
    for n in (1..=9).rev() {
        let arg = args.get(n - 1).map_or("", String::as_str);
        for form in [
            format!("\"${n}\""),
            format!("\"${{{n}}}\""),
            format!("${{{n}}}"),
            format!("${n}"),
        ] {
            text = text.replace(&form, arg);
        }
    }
    text
}

/// git's own commands, which no alias can shadow (and the common ones:
/// no `git config` read for them).
fn is_builtin(name: &str) -> bool {
    matches!(
        name,
        "add"
            | "am"
            | "apply"
            | "bisect"
            | "blame"
            | "branch"
            | "bundle"
            | "cat-file"
            | "checkout"
            | "cherry-pick"
            | "clean"
            | "clone"
            | "commit"
            | "config"
            | "describe"
            | "diff"
            | "fetch"
            | "for-each-ref"
            | "format-patch"
            | "gc"
            | "grep"
            | "help"
            | "init"
            | "log"
            | "ls-files"
            | "ls-remote"
            | "ls-tree"
            | "maverick"
            | "merge"
            | "merge-base"
            | "mv"
            | "notes"
            | "pull"
            | "range-diff"
            | "rebase"
            | "reflog"
            | "remote"
            | "reset"
            | "restore"
            | "rev-list"
            | "rev-parse"
            | "revert"
            | "rm"
            | "shortlog"
            | "show"
            | "show-ref"
            | "sparse-checkout"
            | "stash"
            | "status"
            | "submodule"
            | "switch"
            | "symbolic-ref"
            | "tag"
            | "update-ref"
            | "version"
            | "worktree"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(instance: &str, expires_at: &str) -> ClaimRecord {
        ClaimRecord::example(instance, 7, 1, expires_at)
    }

    /// The guard denies a plain push exactly when the pre-push hook's
    /// holder check would refuse it: another's stale claim is refused,
    /// and so denied; a lapsed claim of ours beside another's live one
    /// passes the hook (with a warning), and so is allowed.
    #[test]
    fn a_plain_push_is_denied_where_the_hooks_holder_check_refuses() {
        let now = Timestamp::parse("2026-11-30T11:00:00Z").unwrap();
        let (stale, live) = ("2026-11-30T10:10:00Z", "2026-11-30T12:00:00Z");
        let verdict = |claims: Vec<ClaimRecord>| {
            let state = BranchState { claims, seen: None };
            let world = World {
                branch: "maverick/7-x",
                state: &state,
                skip: false,
                force: false,
                delete: false,
                skip_spelled: None,
            };
            deny(&world, None, &|| InstanceId::parse("me").unwrap(), now)
        };
        assert!(verdict(vec![record("other", stale)]).is_some());
        assert!(verdict(vec![record("me", stale), record("other", live)]).is_none());
        assert!(verdict(vec![record("other", live)]).is_some());
        assert!(verdict(vec![record("me", live)]).is_none());
        assert!(verdict(Vec::new()).is_none());
        // Another instance took our claim over (a newer generation): said as
        // the hook says a lost claim, never as a lease to wait out and take over.
        let taken = ClaimRecord::example("other", 7, 2, live);
        let said = verdict(vec![record("me", live), taken]).expect("denied");
        assert!(!said.contains("take it over"), "{said}");
        assert!(verdict(vec![record("other", live)]).is_some_and(|s| s.contains("take it over")));
    }

    fn push_of(line: &str) -> Push {
        let invocations = shell::invocations(line).expect("readable");
        let (invocation, call) = invocations
            .iter()
            .filter(|i| i.program().as_deref() == Some("git"))
            .filter_map(|i| Some((i, git_call(&i.args, &i.env)?)))
            .find(|(_, call)| {
                let sub = call.words.first().and_then(Arg::literal);
                matches!(sub.as_deref(), Some("push" | "send-pack"))
            })
            .unwrap_or_else(|| panic!("no push in {line}: {invocations:?}"));
        let sub = call.words[0].literal().unwrap();
        let words: Vec<Arg> = call.words[1..]
            .iter()
            .map(|a| resolve_current(a, Some("current")))
            .collect();
        let mut push = read_push(&words, invocation.more_args.as_deref(), sub == "send-pack");
        if let Some((tri, _)) = call.hooks_override {
            push.skip = push.skip.or(tri);
        }
        push
    }

    #[test]
    fn reads_options_as_git_does() {
        for (line, skip) in [
            ("git push --no-verify origin main", Tri::Yes),
            ("git push --no-verif origin main", Tri::Yes),
            ("git push --no-veri origin main", Tri::Yes),
            ("git push --no-verify --verify origin main", Tri::No),
            ("git push --no-verify --veri origin main", Tri::No),
            ("git push --no-no-verify origin main", Tri::No),
            ("git push --no-ver origin main", Tri::Maybe),
            ("git -c core.hooksPath=/dev/null push origin main", Tri::Yes),
            ("git -c CORE.HOOKSPATH=x push origin main", Tri::Yes),
            ("git --config-env=core.hooksPath=H push", Tri::Yes),
            (
                "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.hooksPath GIT_CONFIG_VALUE_0=/x git push",
                Tri::Yes,
            ),
            ("git send-pack ../origin.git main", Tri::Yes),
            ("git push origin main", Tri::No),
        ] {
            assert_eq!(push_of(line).skip, skip, "{line}");
        }
        for (line, force) in [
            ("git push --forc origin main", Tri::Maybe),
            ("git push --force-w origin main", Tri::Yes),
            ("git push -fu origin main", Tri::Yes),
            ("git push --force --no-force origin main", Tri::No),
            ("git push origin main --force", Tri::Yes),
            ("git push -- origin --force", Tri::No),
        ] {
            assert_eq!(push_of(line).force, force, "{line}");
        }
        let p = push_of("git push -o ci.skip --repo=up b");
        assert_eq!(p.remote, Some(Remote::Named("b".to_owned())));
        assert!(p.targets.is_empty());
        let p = push_of("git push --rep up");
        assert_eq!(p.remote, Some(Remote::Named("up".to_owned())));
        let p = push_of("git push --del origin x");
        assert_eq!(p.delete, Tri::Yes);
        assert_eq!(p.targets[0].deletion, Tri::Yes);
        let p = push_of("git push origin +HEAD:refs/heads/b :old tag v1 ^refs/heads/n");
        assert_eq!(p.targets.len(), 2);
        assert_eq!(p.targets[0].dest, Dest::Branch("b".to_owned()));
        assert_eq!(p.targets[0].forced, Tri::Yes);
        assert_eq!(p.targets[1].deletion, Tri::Yes);
        let p = push_of("git push origin 'refs/heads/*:refs/heads/*'");
        assert_eq!(p.targets[0].dest, Dest::Pattern("*".to_owned()));
    }

    #[test]
    fn follows_the_shell() {
        for line in [
            "timeout 60 git push --no-verify",
            "env -i A=b nice -n 5 command git push --no-verify",
            "if true; then git push --no-verify; fi",
            "{ git status; git push --no-verify; }",
            "cd sub && git push --no-verify",
            "sh -c 'git push --no-verify'",
            "bash -lc \"git push --no-verify\"",
            "eval 'git push' --no-verify",
            "echo $(git push --no-verify)",
            "bash <<'EOF'\ngit push --no-verify\nEOF",
            "for i in 1; do git push --no-verify; done",
            "f() { git push --no-verify; }; f",
            "echo main | xargs git push --no-verify origin",
        ] {
            assert_eq!(push_of(line).skip, Tri::Yes, "{line}");
        }
        // Data, not commands.
        for line in [
            "cat > notes.md <<'EOF'\ngit push --no-verify\nEOF",
            "cat <<EOF\ngit push --no-verify\nEOF",
            "echo 'git push --no-verify'",
            "git commit -m 'git push --no-verify'",
            "command -v git push --no-verify",
        ] {
            let invocations = shell::invocations(line).unwrap();
            assert!(
                invocations.iter().all(|i| {
                    i.program().as_deref() != Some("git")
                        || i.args.get(1).and_then(Arg::literal).as_deref() != Some("push")
                }),
                "{line}: {invocations:?}"
            );
        }
        // What only the running shell knows stays unknown.
        let p = push_of("git push origin \"$BRANCH\"");
        assert!(p.unknown_target);
        assert_eq!(p.unknowns, ["\"$BRANCH\""]);
        let p = push_of("B=feat/x; git push -f origin \"$B\"");
        assert_eq!(p.targets[0].dest, Dest::Branch("feat/x".to_owned()));
        assert!(!p.unknown_target);
        let p = push_of("git push origin \"$(git branch --show-current)\"");
        assert!(!p.unknown_target, "{p:?}");
        let p = push_of("echo main | xargs git push origin");
        assert!(p.unknown_target);
        let p = push_of("git push -f origin +HEAD:$B");
        assert_eq!(p.force, Tri::Yes);
    }
}
