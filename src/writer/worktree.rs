//! One worktree per branch (SPEC 7): at `<worktreeDir>/<branch with / replaced>`
//! under the main worktree, never outside it whatever the branch is called;
//! reused when healthy (wherever the branch is already checked out), repaired
//! when its directory or registration is gone.

use std::path::{Component, Path, PathBuf};

use crate::git::{Git, GitError};
use crate::records::files::IoError;
use crate::timefmt::Timestamp;

/// Longest directory name made from a branch name, in bytes; longer names
/// are cut and get a hash of the whole name, so two stay apart.
const MAX_DIR_NAME: usize = 96;

fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// One path component made from a branch name: `/` (and anything a path
/// could trip on) becomes `-`; never empty, `.`, `..` or dash- or dot-led.
pub(crate) fn dir_name(branch: &str) -> String {
    let mut name: String = branch
        .chars()
        .map(|c| {
            if c == '/' || c == '\\' || c == '\0' || c.is_control() {
                '-'
            } else {
                c
            }
        })
        .collect();
    if name.starts_with(['.', '-']) || name.is_empty() {
        name.insert(0, '_');
    }
    if name.len() > MAX_DIR_NAME {
        let mut cut = MAX_DIR_NAME - 17;
        while !name.is_char_boundary(cut) {
            cut -= 1;
        }
        name = format!("{}-{:016x}", &name[..cut], fnv1a(branch));
    }
    name
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum WorktreeError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("the worktree path for {branch:?} would leave {dir}")]
    Escapes { branch: String, dir: PathBuf },
    #[error("{path} is the worktree of {other}, not of {branch}")]
    PathTaken {
        branch: String,
        path: PathBuf,
        other: String,
    },
    #[error("{path} exists and is not a worktree of this repository")]
    PathOccupied { path: PathBuf },
    #[error(transparent)]
    Io(#[from] IoError),
    #[error(transparent)]
    Confine(#[from] crate::records::files::ConfineError),
}

/// `<root>/<worktree_dir>/<dir_name(branch)>`, checked to be one level
/// below the worktree dir.
pub(crate) fn worktree_path(
    root: &Path,
    worktree_dir: &Path,
    branch: &str,
) -> Result<PathBuf, WorktreeError> {
    let dir = root.join(worktree_dir);
    let name = dir_name(branch);
    let mut components = Path::new(&name).components();
    match (components.next(), components.next()) {
        // Inside the repository, or inside the directory the configuration
        // names outside it: no symbolic link on the way (SPEC 7).
        (Some(Component::Normal(_)), None) if worktree_dir.is_relative() => Ok(
            crate::records::files::inside(root, &worktree_dir.join(&name))?,
        ),
        (Some(Component::Normal(_)), None) => {
            Ok(crate::records::files::inside(&dir, Path::new(&name))?)
        }
        _ => Err(WorktreeError::Escapes {
            branch: branch.to_owned(),
            dir,
        }),
    }
}

/// Where the worktree of `branch` goes: its readable path, unless a live
/// worktree of another branch holds it (`a/b` and `a-b` both read `a-b`);
/// then the readable name with a hash of the branch. A worktree of the
/// branch already at either place is where it stays.
pub(crate) fn choose_path(
    git: &Git,
    root: &Path,
    worktree_dir: &Path,
    branch: &str,
) -> Result<PathBuf, WorktreeError> {
    let primary = worktree_path(root, worktree_dir, branch)?;
    let fallback =
        primary.with_file_name(format!("{}-{:08x}", dir_name(branch), fnv1a(branch) as u32));
    let refname = format!("refs/heads/{branch}");
    let entries = list(git)?;
    let live = || entries.iter().filter(|e| !e.stale());
    if let Some(own) = live().find(|e| {
        e.branch.as_deref() == Some(&refname)
            && (same_path(&e.path, &primary) || same_path(&e.path, &fallback))
    }) {
        return Ok(if same_path(&own.path, &primary) {
            primary
        } else {
            fallback
        });
    }
    let taken =
        live().any(|e| same_path(&e.path, &primary) && e.branch.as_deref() != Some(&refname));
    Ok(if taken { fallback } else { primary })
}

/// One entry of `git worktree list --porcelain`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry {
    pub path: PathBuf,
    pub head: Option<String>,
    /// `refs/heads/…`, `None` when detached.
    pub branch: Option<String>,
    pub bare: bool,
    pub locked: bool,
    /// Why it is locked, as git lists it (`initializing` while `git
    /// worktree add` runs).
    pub lock_reason: String,
    pub prunable: bool,
}

impl Entry {
    /// Its directory is gone, or git says its registration is stale.
    pub(crate) fn stale(&self) -> bool {
        !self.bare && (self.prunable || !self.path.is_dir())
    }
}

pub(crate) fn list(git: &Git) -> Result<Vec<Entry>, GitError> {
    let listing = git.worktree_list()?;
    let mut entries = Vec::new();
    let mut current: Option<Entry> = None;
    for field in listing.split(|b| *b == 0) {
        let field = String::from_utf8_lossy(field);
        if field.is_empty() {
            entries.extend(current.take());
            continue;
        }
        let (key, value) = field.split_once(' ').unwrap_or((&field, ""));
        if key == "worktree" {
            entries.extend(current.take());
            current = Some(Entry {
                path: PathBuf::from(value),
                ..Entry::default()
            });
            continue;
        }
        let Some(entry) = current.as_mut() else {
            continue;
        };
        match key {
            "HEAD" => entry.head = Some(value.to_owned()),
            "branch" => entry.branch = Some(value.to_owned()),
            "bare" => entry.bare = true,
            "locked" => {
                entry.locked = true;
                entry.lock_reason = value.to_owned();
            }
            "prunable" => entry.prunable = true,
            _ => {}
        }
    }
    entries.extend(current);
    Ok(entries)
}

/// The main worktree's root (the first entry git lists).
pub(crate) fn main_root(git: &Git) -> Result<PathBuf, GitError> {
    match list(git)?.into_iter().next() {
        Some(entry) => Ok(entry.path),
        None => Ok(git.dir().to_owned()),
    }
}

pub(crate) fn same_path(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| {
        std::fs::canonicalize(p).unwrap_or_else(|_| match (p.parent(), p.file_name()) {
            (Some(parent), Some(name)) => std::fs::canonicalize(parent)
                .map(|c| c.join(name))
                .unwrap_or_else(|_| p.to_owned()),
            _ => p.to_owned(),
        })
    };
    a == b || canon(a) == canon(b)
}

/// Makes git ignore the worktree dir through `info/exclude` (not the
/// project's `.gitignore`). Returns whether the file changed.
pub(crate) fn exclude(common_dir: &Path, worktree_dir: &Path) -> Result<bool, WorktreeError> {
    let inside = worktree_dir.is_relative()
        && worktree_dir
            .components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if !inside {
        return Ok(false);
    }
    let relative: Vec<String> = worktree_dir
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let pattern = match relative.first() {
        Some(first) if first == ".maverick" => "/.maverick/".to_owned(),
        Some(_) => format!("/{}/", relative.join("/")),
        None => return Ok(false),
    };
    exclude_pattern(common_dir, &pattern, "git maverick's worktrees")
}

/// Adds `pattern` (`/…`, anchored at the top level) to `.git/info/exclude`
/// under a `# why` line, unless it is there; true when it was added.
pub(crate) fn exclude_pattern(
    common_dir: &Path,
    pattern: &str,
    why: &str,
) -> Result<bool, WorktreeError> {
    let path = common_dir.join("info").join("exclude");
    let io = |action| {
        let io = IoError::on(action, &path);
        move |source| WorktreeError::from(io(source))
    };
    let existing = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(io("read")(e)),
    };
    if existing
        .lines()
        .any(|l| l.trim() == pattern || l.trim() == &pattern[1..])
    {
        return Ok(false);
    }
    let mut text = existing;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&format!("# {why}\n"));
    text.push_str(pattern);
    text.push('\n');
    crate::records::files::write_atomically(&path, text.as_bytes()).map_err(io("write"))?;
    Ok(true)
}

/// Where the local branch stands against the remote head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum LocalBranch {
    Absent,
    AtRemote,
    /// Behind the remote head, with nothing of its own: it may fast-forward.
    Behind {
        local: String,
    },
    /// It has commits the remote lacks (`%h %s` lines): it is never moved.
    Ahead {
        local: String,
        commits: Vec<String>,
    },
}

/// What `apply` will do, decided before anything changes.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub branch: String,
    pub path: PathBuf,
    pub remote_head: String,
    /// A healthy worktree at `path` on the branch.
    pub existing: Option<Entry>,
    /// Stale registrations to prune first (a deleted worktree directory).
    pub prune: bool,
    /// A leftover directory at `path` whose registration is gone, or a
    /// half-made worktree there: it is moved aside (never deleted: it may
    /// hold uncommitted work).
    pub move_aside: Option<PathBuf>,
    /// Worktrees whose lock goes before the prune: git's "initializing"
    /// lock of a half-made one, or any lock of one whose directory is gone.
    pub unlock: Vec<PathBuf>,
    pub local: LocalBranch,
}

/// What `apply` did.
#[derive(Clone, Debug, Default, serde::Serialize, schemars::JsonSchema)]
pub(crate) struct Applied {
    pub created: bool,
    pub repaired: bool,
    pub fast_forwarded: bool,
    pub moved_aside: Option<PathBuf>,
}

fn local_branch(git: &Git, branch: &str, remote_head: &str) -> Result<LocalBranch, GitError> {
    let Some(local) = git.resolve_commit(&format!("refs/heads/{branch}"))? else {
        return Ok(LocalBranch::Absent);
    };
    if local == remote_head {
        return Ok(LocalBranch::AtRemote);
    }
    let commits = git.oneline_log(&format!("{remote_head}..{local}"))?;
    Ok(if commits.is_empty() {
        LocalBranch::Behind { local }
    } else {
        LocalBranch::Ahead { local, commits }
    })
}

/// Decides how to bring the worktree of `branch` to `remote_head`; a stale
/// directory in the way is to be moved aside under a name stamped `now`.
pub(crate) fn plan(
    git: &Git,
    path: &Path,
    branch: &str,
    remote_head: &str,
    now: Timestamp,
) -> Result<Plan, WorktreeError> {
    let refname = format!("refs/heads/{branch}");
    let entries = list(git)?;
    let (mut stale, mut live): (Vec<Entry>, Vec<Entry>) =
        entries.into_iter().partition(Entry::stale);
    // A half-made worktree of the branch at its path is rebuilt, never
    // reused: its index may delete every file (issue 29).
    let half_made = match live
        .iter()
        .position(|e| same_path(&e.path, path) && e.branch.as_deref() == Some(&refname))
    {
        Some(at) if is_half_made(git, &live[at])? => Some(live.remove(at)),
        _ => None,
    };
    let ours = |e: &Entry| same_path(&e.path, path) || e.branch.as_deref() == Some(&refname);
    let mut prune = stale.iter().any(ours);
    let mut unlock: Vec<PathBuf> = stale
        .iter()
        .filter(|e| ours(e) && e.locked)
        .map(|e| e.path.clone())
        .collect();
    if let Some(entry) = half_made {
        prune = true;
        if entry.locked {
            unlock.push(entry.path.clone());
        }
        stale.push(entry);
    }
    let live: Vec<Entry> = if prune {
        live.retain(|e| !stale.iter().any(|s| s.path == e.path));
        live
    } else {
        // Stale entries we leave alone still hold their branch.
        live.into_iter().chain(stale).collect()
    };
    // The branch checked out in a healthy worktree elsewhere (the main one,
    // where a restarted session finds it): that is its worktree. git would
    // not check it out twice, and nothing needs making.
    if let Some(elsewhere) = live
        .iter()
        .find(|e| e.branch.as_deref() == Some(&refname) && !same_path(&e.path, path))
    {
        return Ok(Plan {
            branch: branch.to_owned(),
            path: elsewhere.path.clone(),
            remote_head: remote_head.to_owned(),
            existing: Some(elsewhere.clone()),
            prune,
            move_aside: None,
            unlock,
            local: local_branch(git, branch, remote_head)?,
        });
    }
    let existing = live.iter().find(|e| same_path(&e.path, path)).cloned();
    if let Some(entry) = &existing {
        if entry.branch.as_deref() != Some(&refname) {
            return Err(WorktreeError::PathTaken {
                branch: branch.to_owned(),
                path: path.to_owned(),
                other: entry
                    .branch
                    .as_deref()
                    .map_or("a detached HEAD".to_owned(), |b| {
                        b.trim_start_matches("refs/heads/").to_owned()
                    }),
            });
        }
    }
    let mut move_aside = None;
    if existing.is_none() {
        match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_dir() => {
                let empty = std::fs::read_dir(path)
                    .map(|mut d| d.next().is_none())
                    .unwrap_or(false);
                if !empty {
                    if path.join(".git").is_file() {
                        move_aside = Some(aside_path(path, now));
                    } else {
                        return Err(WorktreeError::PathOccupied {
                            path: path.to_owned(),
                        });
                    }
                }
            }
            Ok(_) => {
                return Err(WorktreeError::PathOccupied {
                    path: path.to_owned(),
                })
            }
            Err(_) => {}
        }
    }
    Ok(Plan {
        branch: branch.to_owned(),
        path: path.to_owned(),
        remote_head: remote_head.to_owned(),
        existing,
        prune,
        move_aside,
        unlock,
        local: local_branch(git, branch, remote_head)?,
    })
}

/// A worktree `git worktree add` never finished (killed while it ran): git's
/// own "initializing" lock on it, a stale `index.lock`, or an index without
/// a single file of HEAD's.
fn is_half_made(git: &Git, entry: &Entry) -> Result<bool, GitError> {
    if entry.locked && entry.lock_reason == "initializing" {
        return Ok(true);
    }
    let here = git.at(&entry.path);
    if here.git_path("index.lock")?.exists() {
        return Ok(true);
    }
    let (deleted, tracked) = here.staged_deletions()?;
    Ok(tracked > 0 && deleted.len() == tracked)
}

fn aside_path(path: &Path, now: Timestamp) -> PathBuf {
    let stamp = now.0;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (0..)
        .map(|n| {
            let suffix = if n == 0 {
                String::new()
            } else {
                format!("-{n}")
            };
            path.with_file_name(format!("{name}.stale-{stamp}{suffix}"))
        })
        .find(|p| !p.exists())
        .expect("some name is free")
}

/// Carries out a plan whose local branch is not ahead of the remote.
pub(crate) fn apply(git: &Git, plan: &Plan, remote: &str) -> Result<Applied, WorktreeError> {
    let mut applied = Applied::default();
    let branch = plan.branch.as_str();
    let refname = format!("refs/heads/{branch}");
    let head = plan.remote_head.as_str();
    for locked in &plan.unlock {
        git.worktree_unlock(locked)?;
    }
    if let Some(aside) = &plan.move_aside {
        std::fs::rename(&plan.path, aside).map_err(IoError::on("move aside", &plan.path))?;
        applied.repaired = true;
        applied.moved_aside = Some(aside.clone());
    }
    // After the move: a half-made worktree's registration goes with it.
    if plan.prune {
        git.worktree_prune()?;
        applied.repaired = true;
    }
    if let Some(parent) = plan.path.parent() {
        std::fs::create_dir_all(parent).map_err(IoError::on("create", parent))?;
    }
    match (&plan.existing, &plan.local) {
        (_, LocalBranch::Ahead { .. }) => {
            unreachable!("a branch ahead of its remote is refused before apply")
        }
        (Some(_), LocalBranch::Behind { .. }) => {
            git.at(&plan.path).merge_ff_only(head)?;
            applied.fast_forwarded = true;
        }
        (Some(_), _) => {}
        (None, LocalBranch::Absent) => {
            git.worktree_add_new_branch(&plan.path, branch, head)?;
            crate::failpoint::hit("resume-after-worktree-add");
            git.config_set(&format!("branch.{branch}.remote"), remote)?;
            git.config_set(&format!("branch.{branch}.merge"), &refname)?;
            applied.created = true;
        }
        (None, local) => {
            if let LocalBranch::Behind { local } = local {
                // A compare-and-swap on the local ref: nothing moves it meanwhile.
                git.update_ref(
                    &refname,
                    head,
                    Some(local),
                    "git maverick resume: fast-forward",
                )?;
                applied.fast_forwarded = true;
            }
            git.worktree_add(&plan.path, branch)?;
            crate::failpoint::hit("resume-after-worktree-add");
            applied.created = true;
        }
    }
    Ok(applied)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dir_names_stay_one_component() {
        let root = Path::new("/repo");
        let dir = Path::new(".maverick/worktrees");
        for branch in [
            "maverick/142-x",
            "a/b/c/d/e/f/g/h/i/j/k",
            "ünïcode/ß/日本",
            "x/-y",
            "-x",
            ".x",
            "..",
            "a/../../b",
            "",
            &"deep/".repeat(200),
        ] {
            let path = worktree_path(root, dir, branch).unwrap();
            assert_eq!(path.parent(), Some(root.join(dir).as_path()), "{branch:?}");
            let name = path.file_name().unwrap().to_str().unwrap();
            assert!(name.len() <= MAX_DIR_NAME, "{branch:?}");
            assert!(!name.starts_with(['.', '-']), "{branch:?}");
        }
        assert_eq!(dir_name("maverick/142-x"), "maverick-142-x");
        assert_ne!(dir_name(&"a/".repeat(100)), dir_name(&"a-".repeat(100)));
    }
}
