//! One writer per branch, held by the server (SPEC 8, "Where the server can
//! hold the rule"): the pre-push hook and the agents' guard can be skipped
//! (`--no-verify`, `core.hooksPath`, a libgit2 pusher); a rule the server
//! enforces cannot. This module decides what that rule is and where it
//! goes; `git maverick protect` installs, checks and removes it.
//!
//! - On GitHub: a repository ruleset named [`RULESET_NAME`] on the managed
//!   branches with the `deletion` and `non_fast_forward` rules, enforcement
//!   active. maverick finds its own ruleset by that name and updates it in
//!   place, so installing twice writes nothing the second time. A branch
//!   ruleset covers `refs/heads/*` only: the git surface's coordination refs
//!   (`refs/maverick/*`) on a GitHub remote are outside what any ruleset
//!   targets, and the status says so.
//! - On a bare repository the tool reaches as a path (`/srv/team.git`,
//!   `file://…`): the `update` hook in the hooks directory git resolves for
//!   that repository, with a marked block (as the pre-push installer keeps
//!   its own, [`hookfile`]) that refuses deleting, or moving other than
//!   forward, a managed branch or a coordination ref. The block needs only
//!   `sh` and `git merge-base --is-ancestor`, so it holds where git-maverick
//!   is not installed. maverick's own writes to `refs/maverick/*` are child
//!   commits pushed with a lease (fast-forwards) and are never deletions;
//!   the one exception, the tombstone that replaces the old layout's
//!   `refs/maverick/issues` once (see `surface::git::legacy`), is let
//!   through by its subject.
//! - Anywhere else (GitLab, Gitea, ssh): nothing maverick can write; the
//!   command says what the host's own branch protection needs.
//!
//! Which branches are managed: on a clone, the branches its claims and
//! last-seen records name (`prepush`); a server sees no clone's records, so
//! it protects by name: `maverick/*` (the branch names maverick gives and
//! `task done` reads an issue from) and every pattern of
//! `maverick.protectBranches`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use maverick_core::remote::{self, Location};

use crate::config::Settings;
use crate::git::{Git, GitError};
use crate::surface::git::{OLD_LAYOUT_REF, TOMBSTONE_MESSAGE};
use crate::surface::github::ApiRuleset;
use crate::writer::hookfile::{self, Change, HookFileError, Markers, Planned};
use crate::writer::location;

/// The name maverick's ruleset has on GitHub: how it finds its own.
pub(crate) const RULESET_NAME: &str = "git-maverick: one writer per managed branch";
/// The branches maverick names (`maverick/142-short-title`).
pub(crate) const DEFAULT_BRANCHES: &str = "maverick/*";
/// The git surface's coordination refs.
pub(crate) const COORDINATION_REFS: &str = "refs/maverick/*";
/// More branch patterns to protect, comma-separated.
pub(crate) const PATTERNS_KEY: &str = "maverick.protectBranches";
/// The rules maverick's ruleset holds: no deletion, no force push.
pub(crate) const RULES: [&str; 2] = ["deletion", "non_fast_forward"];

/// The server-side hook of a bare repository that holds the block.
pub(crate) const SERVER_HOOK: &str = "update";
pub(crate) const SERVER_MARKERS: Markers = Markers {
    begin: "# >>> git-maverick protect >>>",
    end: "# <<< git-maverick protect <<<",
};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ProtectError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("{PATTERNS_KEY} = {pattern:?} is not a branch pattern (letters, digits, '.', '_', '-', '/' and '*', as a branch name with * for any part)")]
    BadPattern { pattern: String },
    #[error("{path}: {source}")]
    Hook {
        path: PathBuf,
        #[source]
        source: HookFileError,
    },
}

/// The branch patterns the server protects, `maverick/*` first, without
/// `refs/heads/`.
pub(crate) fn branch_patterns(git: &Git) -> Result<Vec<String>, ProtectError> {
    let mut patterns = vec![DEFAULT_BRANCHES.to_owned()];
    let configured = git.config_get(PATTERNS_KEY)?.unwrap_or_default();
    for pattern in crate::config::split_list(&configured) {
        let pattern = pattern
            .strip_prefix("refs/heads/")
            .unwrap_or(&pattern)
            .to_owned();
        if !valid_pattern(&pattern) {
            return Err(ProtectError::BadPattern { pattern });
        }
        if !patterns.contains(&pattern) {
            patterns.push(pattern);
        }
    }
    Ok(patterns)
}

/// A branch name with `*` for any part: what both a shell `case` and
/// GitHub's fnmatch read the same way, with nothing a shell would expand.
fn valid_pattern(pattern: &str) -> bool {
    pattern
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/' | b'*'))
        && crate::git::is_valid_branch_name(&pattern.replace('*', "x"))
}

/// Whether `branch` matches `pattern` as the update hook's `case` and the
/// ruleset's `**/*` read it: `*` stands for any run of characters.
pub(crate) fn covers(pattern: &str, branch: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or_default();
    let Some(mut rest) = branch.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The branches this clone manages (its claims and last-seen records, the
/// pre-push guard's rule) that no protected pattern covers: the server
/// does not hold the rule for them.
pub(crate) fn uncovered(git: &Git, patterns: &[String]) -> Vec<String> {
    let Ok(common_dir) = git.common_dir() else {
        return Vec::new();
    };
    crate::records::claim::managed_branches(&common_dir)
        .unwrap_or_default()
        .into_iter()
        .filter(|b| !patterns.iter().any(|p| covers(p, b)))
        .collect()
}

/// Where the remote's branches live, and so who can hold the rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Host {
    /// A GitHub repository, `OWNER/NAME`.
    Github { repo: String },
    /// A repository on this machine's file system.
    Path { path: PathBuf },
    /// Anything else: the remote's location (host and path).
    Elsewhere { location: String },
}

impl Host {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Host::Github { .. } => "github",
            Host::Path { .. } => "path",
            Host::Elsewhere { .. } => "elsewhere",
        }
    }

    pub(crate) fn location(&self) -> String {
        match self {
            Host::Github { repo } => repo.clone(),
            Host::Path { path } => path.display().to_string(),
            Host::Elsewhere { location } => location.clone(),
        }
    }
}

/// The host of the remote's branches: GitHub when the settings name a
/// GitHub repository (the remote's URL, `-R`, `maverick.repo`), else the
/// path a push to the remote goes to, else elsewhere.
pub(crate) fn host(git: &Git, settings: &Settings) -> Result<Host, ProtectError> {
    if let Some(repo) = &settings.repo {
        return Ok(Host::Github { repo: repo.clone() });
    }
    // The URL the settings resolved (`git remote get-url --push`) already.
    let url = match &settings.remote_url {
        Some(url) => url.clone(),
        None => git.push_url(&settings.remote)?,
    };
    // What the URL names is the core's one rule; only finding a local
    // repository on disk (relative to the top level, PATH or PATH.git) is
    // done here.
    match remote::locate(&url) {
        location @ Location::Network { .. } => Ok(Host::Elsewhere {
            location: location.network_name().unwrap_or_default(),
        }),
        Location::Local { path } => {
            let base = crate::writer::prepush::toplevel(git);
            Ok(Host::Path {
                path: location::resolve_local(Path::new(&path), &base),
            })
        }
    }
}

// ---------------------------------------------------------------------------
// GitHub

/// The GitHub fnmatch pattern of a branch pattern: a `*` as the last part
/// is `**/*`, so that `maverick/*` covers `maverick/a/b` as git's and a
/// shell's matching do.
pub(crate) fn github_ref_pattern(branch_pattern: &str) -> String {
    match branch_pattern.strip_suffix("/*") {
        Some(prefix) => format!("refs/heads/{prefix}/**/*"),
        None => format!("refs/heads/{branch_pattern}"),
    }
}

/// The ruleset maverick writes, as `POST`/`PUT rulesets` take it.
pub(crate) fn ruleset_body(patterns: &[String]) -> Value {
    let include: Vec<String> = patterns.iter().map(|p| github_ref_pattern(p)).collect();
    json!({
        "name": RULESET_NAME,
        "target": "branch",
        "enforcement": "active",
        "bypass_actors": [],
        "conditions": { "ref_name": { "include": include, "exclude": [] } },
        "rules": RULES.iter().map(|rule| json!({ "type": rule })).collect::<Vec<_>>(),
    })
}

/// What a ruleset found under maverick's name lacks of the one it would
/// write; empty when it holds the rule.
pub(crate) fn ruleset_gaps(found: &ApiRuleset, patterns: &[String]) -> Vec<String> {
    let mut gaps = Vec::new();
    if found.enforcement != "active" {
        gaps.push(format!(
            "its enforcement is {:?}, not \"active\"",
            found.enforcement
        ));
    }
    if found.target.as_deref().is_some_and(|t| t != "branch") {
        gaps.push(format!(
            "it targets {:?}, not branches",
            found.target.as_deref().unwrap_or("")
        ));
    }
    let types: Vec<&str> = found
        .rules
        .iter()
        .flatten()
        .filter_map(|r| r.get("type").and_then(Value::as_str))
        .collect();
    for rule in RULES {
        if !types.contains(&rule) {
            gaps.push(format!("it has no {rule} rule"));
        }
    }
    let ref_name = found.conditions.as_ref().and_then(|c| c.get("ref_name"));
    let list = |key: &str| -> Vec<String> {
        ref_name
            .and_then(|r| r.get(key))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    };
    let include = list("include");
    for pattern in patterns {
        let wanted = github_ref_pattern(pattern);
        if !include.contains(&wanted) {
            gaps.push(format!("it does not include {wanted}"));
        }
    }
    for excluded in list("exclude") {
        gaps.push(format!("it excludes {excluded}"));
    }
    gaps
}

// ---------------------------------------------------------------------------
// A repository reached as a path

/// The `update` hook git runs for the repository at `path` (its
/// `core.hooksPath` respected).
pub(crate) fn server_hook_path(git: &Git, path: &Path) -> Result<PathBuf, ProtectError> {
    Ok(git.at(path).git_path("hooks")?.join(SERVER_HOOK))
}

/// The block of the `update` hook: git runs it once per ref a push
/// updates, with the ref, its old and its new object name. All zeros is
/// "none" (a creation or a deletion), whatever the hash's length.
pub(crate) fn server_block(patterns: &[String]) -> String {
    let mut cases: Vec<String> = patterns.iter().map(|p| format!("refs/heads/{p}")).collect();
    cases.push(COORDINATION_REFS.to_owned());
    let cases = cases.join("|");
    format!(
        r#"{begin}
# One writer per branch, held by this repository: `git maverick protect install`
# put this block here and `git maverick protect remove` takes it out; the rest
# of this file is yours. It needs sh and git alone, not git-maverick.
case "$1" in
{cases})
	case "$3" in
	*[!0]*) ;;
	*)
		echo "error: $1 is protected (git maverick protect): deleting it is refused" >&2
		exit 1 ;;
	esac
	case "$2" in
	*[!0]*)
		if ! git merge-base --is-ancestor "$2" "$3" 2>/dev/null &&
			! {{ [ "$1" = {old_layout} ] &&
				[ "$(git log -1 --format=%s "$3" 2>/dev/null)" = "{tombstone}" ]; }}; then
			echo "error: $1 is protected (git maverick protect): a non-fast-forward update is refused" >&2
			echo "hint: fetch, build on the remote head, and push without --force" >&2
			exit 1
		fi ;;
	esac ;;
esac
{end}
"#,
        begin = SERVER_MARKERS.begin,
        end = SERVER_MARKERS.end,
        old_layout = OLD_LAYOUT_REF,
        tombstone = TOMBSTONE_MESSAGE,
    )
}

/// What the repository's `update` hook holds of the rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum HookState {
    /// This version's block for these patterns, in an executable hook.
    Current,
    /// A block for other patterns, or of another version.
    Outdated,
    /// The block is there, but git does not run the file.
    NotExecutable,
    /// No block.
    Absent,
}

pub(crate) fn server_hook_state(hook: &Path, patterns: &[String]) -> HookState {
    let Some(block) = hookfile::marked_block(hook, SERVER_MARKERS) else {
        return HookState::Absent;
    };
    let runs = std::fs::metadata(hook).is_ok_and(|m| crate::programs::executable(&m));
    match (runs, block == server_block(patterns)) {
        (false, _) => HookState::NotExecutable,
        (true, true) => HookState::Current,
        (true, false) => HookState::Outdated,
    }
}

/// What installing the block for `patterns` makes of the hook, unwritten.
pub(crate) fn plan_install(hook: &Path, patterns: &[String]) -> Result<Planned, ProtectError> {
    hookfile::plan_marked(hook, SERVER_MARKERS, &server_block(patterns)).map_err(on(hook))
}

/// What removing the block makes of the hook, unwritten.
pub(crate) fn plan_remove(hook: &Path) -> Result<Planned, ProtectError> {
    hookfile::plan_unmarked(hook, SERVER_MARKERS).map_err(on(hook))
}

pub(crate) fn write(hook: &Path, planned: &Planned) -> Result<Change, ProtectError> {
    hookfile::write_planned(hook, planned).map_err(on(hook))?;
    Ok(planned.change)
}

fn on(hook: &Path) -> impl Fn(HookFileError) -> ProtectError + '_ {
    move |source| ProtectError::Hook {
        path: hook.to_owned(),
        source,
    }
}

// ---------------------------------------------------------------------------
// What is known without asking

/// What `protect install|status|remove` last found, kept in the clone
/// (`maverick/protection.json`): what `hook status`, `status` and `coord
/// claim` report of a GitHub remote without a request of their own.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct ProtectionRecord {
    pub host: String,
    pub location: String,
    pub enforced: bool,
    pub checked_at: String,
}

fn record_path(common_dir: &Path) -> PathBuf {
    common_dir.join("maverick").join("protection.json")
}

/// Whether `protect install|status|remove` ever ran from this clone: a
/// file's existence, before anything costs a git process.
pub(crate) fn checked_here(common_dir: &Path) -> bool {
    record_path(common_dir).exists()
}

/// Keeps what a check found. A record that cannot be written costs only
/// the next cheap report, so it is not an error.
pub(crate) fn remember(common_dir: &Path, record: &ProtectionRecord) {
    let path = record_path(common_dir);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Ok(bytes) = serde_json::to_vec(record) {
        let _ = crate::records::files::write_atomically(&path, &bytes);
    }
}

/// What this clone knows of the server's rule, from local files alone.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct ServerProtection {
    /// `github`, `path` or `elsewhere`.
    pub host: String,
    pub location: String,
    /// Whether the server refuses force pushes and deletions of the managed
    /// branches; null when this clone cannot tell without asking.
    pub enforced: Option<bool>,
    /// When `protect install|status|remove` last ran from this clone (a
    /// repository reached as a path is read now; GitHub is as of then).
    pub checked_at: Option<String>,
}

impl ServerProtection {
    /// One line for people.
    pub(crate) fn describe(&self) -> String {
        let at = match (self.host.as_str(), self.checked_at.as_deref()) {
            ("github", Some(t)) => {
                format!(" (as of {t}; `git maverick protect status` checks again)")
            }
            _ => String::new(),
        };
        match self.enforced {
            Some(true) => format!(
                "server: on: {} refuses force pushes and deletions of managed branches{at}",
                self.location
            ),
            Some(false) => format!(
                "server: off: {} does not refuse force pushes or deletions of managed branches{at}; `git maverick protect install` turns it on",
                self.location
            ),
            None => format!(
                "server: unknown for {} (`git maverick protect status` asks)",
                self.location
            ),
        }
    }
}

impl ServerProtection {
    /// Whether `status` shows it: when the rule is on, or this clone has
    /// used `protect`; a team that never did is not told on every view.
    pub(crate) fn worth_a_line(&self) -> bool {
        self.enforced == Some(true) || self.checked_at.is_some()
    }
}

/// The server's rule as far as local files tell: a repository reached as
/// a path by its hook (a file read), GitHub by the record of the last
/// check (no request), elsewhere not at all.
pub(crate) fn known(git: &Git, settings: &Settings) -> Option<ServerProtection> {
    let host = host(git, settings).ok()?;
    let mut known = ServerProtection {
        host: host.kind().to_owned(),
        location: host.location(),
        enforced: None,
        checked_at: None,
    };
    let record: Option<ProtectionRecord> = git
        .common_dir()
        .ok()
        .and_then(|dir| std::fs::read(record_path(&dir)).ok())
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .filter(|r: &ProtectionRecord| r.location == known.location);
    known.checked_at = record.as_ref().map(|r| r.checked_at.clone());
    match &host {
        Host::Path { path } => {
            let patterns = branch_patterns(git).ok()?;
            let hook = server_hook_path(git, path).ok()?;
            known.enforced = Some(server_hook_state(&hook, &patterns) == HookState::Current);
        }
        Host::Github { .. } => known.enforced = record.map(|r| r.enforced),
        Host::Elsewhere { .. } => {}
    }
    Some(known)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_read_as_branch_names() {
        assert!(valid_pattern("maverick/*"));
        assert!(valid_pattern("agent/*/wip"));
        assert!(valid_pattern("release"));
        for bad in ["a b", "$(rm)", "x;y", "a..b", "-x", "/x", "a|b", "a\"b", ""] {
            assert!(!valid_pattern(bad), "{bad:?}");
        }
    }

    #[test]
    fn patterns_cover_as_a_shell_case_does() {
        assert!(covers("maverick/*", "maverick/142-x"));
        assert!(covers("maverick/*", "maverick/a/b"));
        assert!(!covers("maverick/*", "maverick"));
        assert!(!covers("maverick/*", "feature/maverick/1"));
        assert!(covers("agent/*/wip", "agent/7/wip"));
        assert!(!covers("agent/*/wip", "agent/7/wipe"));
        assert!(covers("release", "release") && !covers("release", "release2"));
    }

    #[test]
    fn github_patterns_cover_nested_branches() {
        assert_eq!(github_ref_pattern("maverick/*"), "refs/heads/maverick/**/*");
        assert_eq!(github_ref_pattern("release"), "refs/heads/release");
    }

    #[test]
    fn a_ruleset_of_our_own_is_checked_field_by_field() {
        let patterns = vec![DEFAULT_BRANCHES.to_owned()];
        let mut found: ApiRuleset = serde_json::from_value(json!({
            "id": 7, "name": RULESET_NAME, "target": "branch", "enforcement": "active",
            "conditions": ruleset_body(&patterns)["conditions"].clone(),
            "rules": [{"type": "deletion"}, {"type": "non_fast_forward"}]
        }))
        .unwrap();
        assert!(ruleset_gaps(&found, &patterns).is_empty());
        found.enforcement = "evaluate".to_owned();
        found.rules = Some(vec![json!({"type": "deletion"})]);
        assert_eq!(
            ruleset_gaps(&found, &patterns),
            [
                "its enforcement is \"evaluate\", not \"active\"",
                "it has no non_fast_forward rule"
            ]
        );
        let more = vec![DEFAULT_BRANCHES.to_owned(), "agent/*".to_owned()];
        found.enforcement = "active".to_owned();
        found.rules = None;
        assert_eq!(ruleset_gaps(&found, &more).len(), 3);
    }

    #[test]
    fn the_block_names_every_pattern_and_the_coordination_refs() {
        let block = server_block(&["maverick/*".to_owned(), "agent/*".to_owned()]);
        assert!(block.contains("\nrefs/heads/maverick/*|refs/heads/agent/*|refs/maverick/*)\n"));
        assert!(
            block.starts_with(SERVER_MARKERS.begin)
                && block.ends_with(&format!("{}\n", SERVER_MARKERS.end))
        );
    }
}
