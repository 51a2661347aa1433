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
    #[error("the worktree at {path} is in use: a git process holds {lock}")]
    InUse { path: PathBuf, lock: PathBuf },
    #[error("another git maverick resume (process {pid}) is making the worktree at {path}")]
    InUseByResume { path: PathBuf, pid: u32 },
    #[error("{path} is registered as a worktree, but its folder is missing; resume did not make it, so it leaves it alone")]
    NotOurs { path: PathBuf },
    #[error("the worktree at {path} carries git's \"initializing\" lock: a `git worktree add` runs there, or was killed; resume did not make it, so it leaves it alone")]
    Unfinished { path: PathBuf },
    #[error("{branch} is checked out in the worktree at {path}, whose folder is missing (moved, or on a disk not mounted)")]
    BranchInMissing { branch: String, path: PathBuf },
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

/// One step of `resume` on a worktree, journaled before it is taken (SPEC
/// 7): recovery undoes only what its own journal says it started.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub(crate) enum Step {
    /// `git worktree add` of `path` is under way (or was killed).
    Adding,
    /// The worktree was made and handed over: resume made it, but it is
    /// the user's now.
    Made,
    /// A half-made worktree of ours is being moved aside to `to`.
    MovingAside { to: PathBuf },
}

/// `resume`'s journal of the worktree at one path, under
/// `<common dir>/maverick/worktrees/`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct Journal {
    pub path: PathBuf,
    pub branch: String,
    /// The commit the worktree was made at.
    pub commit: String,
    #[serde(flatten)]
    pub step: Step,
    /// The `git maverick` process that took the step.
    pub pid: u32,
    pub at: Timestamp,
}

impl Journal {
    fn file(common_dir: &Path, path: &Path) -> PathBuf {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let key = fnv1a(&path.to_string_lossy()) as u32;
        common_dir
            .join("maverick")
            .join("worktrees")
            .join(format!("{name}-{key:08x}.json"))
    }

    /// The journal of the worktree at `path` for `branch`; none when there
    /// is none, or it is unreadable, or it names another path or branch:
    /// then resume made nothing there it could prove.
    pub(crate) fn load(common_dir: &Path, path: &Path, branch: &str) -> Option<Journal> {
        let text = std::fs::read(Self::file(common_dir, path)).ok()?;
        let journal: Journal = serde_json::from_slice(&text).ok()?;
        (same_path(&journal.path, path) && journal.branch == branch).then_some(journal)
    }

    /// Records `step` before it is taken.
    fn save(&mut self, common_dir: &Path, step: Step, now: Timestamp) -> Result<(), WorktreeError> {
        self.step = step;
        self.pid = std::process::id();
        self.at = now;
        let file = Self::file(common_dir, &self.path);
        let io = IoError::on("write", &file);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).map_err(IoError::on("create", dir))?;
        }
        let text = serde_json::to_vec_pretty(self).expect("a journal serialises");
        crate::records::files::write_atomically(&file, &text).map_err(io)?;
        Ok(())
    }

    /// Whether the process that took the step still runs (another resume
    /// at work right now), this one aside.
    fn taker_alive(&self) -> bool {
        if self.pid == std::process::id() {
            return false;
        }
        let Ok(pid) = libc::pid_t::try_from(self.pid) else {
            return false;
        };
        // SAFETY: signal 0 only checks that the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        // A process id is reused: where the system says which program a
        // process runs, one that is no git-maverick is not the taker.
        let program = std::fs::read_link(format!("/proc/{pid}/exe"));
        alive
            && match (program, std::env::current_exe()) {
                (Ok(program), Ok(me)) => same_path(&program, &me),
                _ => true,
            }
    }
}

/// A worktree of ours that goes aside before the branch's is made again.
#[derive(Clone, Debug)]
pub(crate) struct Aside {
    pub from: PathBuf,
    pub to: PathBuf,
    /// Still a registered worktree (moved with `git worktree move`, then
    /// detached); else a folder whose registration is gone.
    pub registered: bool,
    pub locked: bool,
}

/// What `apply` will do, decided before anything changes.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub branch: String,
    pub path: PathBuf,
    pub remote_head: String,
    /// A healthy worktree at `path` on the branch.
    pub existing: Option<Entry>,
    /// resume's journal of `path`, when it has one.
    pub journal: Option<Journal>,
    /// Our own worktree at `path` whose folder is gone: its one
    /// registration goes.
    pub remove_missing: bool,
    /// Our own half-made worktree at `path`, or its folder whose
    /// registration is gone: moved aside (never deleted: it may hold work),
    /// and cut off from the branch.
    pub move_aside: Option<Aside>,
    /// A move aside that a crash interrupted: the worktree already at this
    /// path is still to be detached and labelled.
    pub finish_aside: Option<PathBuf>,
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

/// Decides how to bring the worktree of `branch` to `remote_head`; a
/// worktree of ours in the way is to be moved aside under a name stamped
/// `now`. Only resume's own journal makes a worktree ours: git's lock files
/// say that some git is (or was) at work there, not whose work it is.
pub(crate) fn plan(
    git: &Git,
    path: &Path,
    branch: &str,
    remote_head: &str,
    now: Timestamp,
) -> Result<Plan, WorktreeError> {
    let refname = format!("refs/heads/{branch}");
    let common_dir = git.common_dir()?;
    let journal = Journal::load(&common_dir, path, branch);
    let mut entries = list(git)?;
    // A move aside a crash cut short: that worktree is no longer the
    // branch's, whatever its HEAD says until it is detached.
    let finish_aside = match &journal {
        Some(Journal {
            step: Step::MovingAside { to },
            ..
        }) if entries.iter().any(|e| same_path(&e.path, to) && !e.stale()) => {
            entries.retain(|e| !same_path(&e.path, to));
            Some(to.clone())
        }
        _ => None,
    };
    let at_path = entries
        .iter()
        .position(|e| same_path(&e.path, path))
        .map(|at| entries.remove(at));
    let local = local_branch(git, branch, remote_head)?;
    let mut plan = Plan {
        branch: branch.to_owned(),
        path: path.to_owned(),
        remote_head: remote_head.to_owned(),
        existing: None,
        journal: journal.clone(),
        remove_missing: false,
        move_aside: None,
        finish_aside,
        local,
    };
    // The branch checked out in a healthy worktree elsewhere (the main one,
    // where a restarted session finds it): that is its worktree. git would
    // not check it out twice, and nothing needs making.
    let elsewhere = entries
        .iter()
        .find(|e| e.branch.as_deref() == Some(&refname));
    match elsewhere {
        Some(e) if e.stale() => {
            return Err(WorktreeError::BranchInMissing {
                branch: branch.to_owned(),
                path: e.path.clone(),
            })
        }
        Some(e) => {
            plan.path = e.path.clone();
            plan.existing = Some(e.clone());
            return in_use_check(git, plan);
        }
        _ => {}
    }
    let ours = journal.is_some();
    match at_path {
        Some(entry) if entry.stale() => {
            if !ours {
                return Err(WorktreeError::NotOurs {
                    path: path.to_owned(),
                });
            }
            plan.remove_missing = true;
        }
        Some(entry) if entry.branch.as_deref() != Some(&refname) => {
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
        Some(entry) => match &journal {
            // Our `git worktree add` never finished (killed while it ran):
            // its index may delete every file (issue 29), so it is rebuilt,
            // never reused; unless the resume that runs it is still at work.
            Some(j) if matches!(j.step, Step::Adding | Step::MovingAside { .. }) => {
                if j.taker_alive() {
                    return Err(WorktreeError::InUseByResume {
                        path: path.to_owned(),
                        pid: j.pid,
                    });
                }
                plan.move_aside = Some(Aside {
                    from: path.to_owned(),
                    to: aside_path(path, now),
                    registered: true,
                    locked: entry.locked,
                });
            }
            _ if entry.locked && entry.lock_reason == "initializing" => {
                return Err(WorktreeError::Unfinished {
                    path: path.to_owned(),
                });
            }
            _ => {
                plan.existing = Some(entry);
                return in_use_check(git, plan);
            }
        },
        None => plan.move_aside = folder_in_the_way(path, journal.is_some(), now)?,
    }
    Ok(plan)
}

/// A folder at `path` that git does not list: nothing (absent or empty),
/// a folder of ours whose registration is gone (moved aside), or anything
/// else, which is not resume's to move.
fn folder_in_the_way(
    path: &Path,
    ours: bool,
    now: Timestamp,
) -> Result<Option<Aside>, WorktreeError> {
    let occupied = || WorktreeError::PathOccupied {
        path: path.to_owned(),
    };
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            let empty = std::fs::read_dir(path)
                .map(|mut d| d.next().is_none())
                .unwrap_or(false);
            if empty {
                return Ok(None);
            }
            if !(ours && path.join(".git").is_file()) {
                return Err(occupied());
            }
            Ok(Some(Aside {
                from: path.to_owned(),
                to: aside_path(path, now),
                registered: false,
                locked: false,
            }))
        }
        Ok(_) => Err(occupied()),
        Err(_) => Ok(None),
    }
}

/// A worktree to be reused is left alone while a git process holds its
/// index lock, if resume would have to move its branch.
fn in_use_check(git: &Git, plan: Plan) -> Result<Plan, WorktreeError> {
    if matches!(plan.local, LocalBranch::Behind { .. }) {
        if let Some(existing) = &plan.existing {
            let lock = git.at(&existing.path).git_path("index.lock")?;
            if lock.exists() {
                return Err(WorktreeError::InUse {
                    path: existing.path.clone(),
                    lock,
                });
            }
        }
    }
    Ok(plan)
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

/// The note a moved-aside worktree carries, in a file of its own and (for
/// a registered one) as its lock reason.
pub(crate) const ASIDE_NOTE: &str = "MAVERICK-MOVED-ASIDE.txt";

fn aside_note(aside: &Aside, branch: &str, now: Timestamp) -> String {
    let (to, from) = (aside.to.display(), aside.from.display());
    let how = if aside.registered {
        format!(
            "It is a detached worktree now: a commit made here is on no branch, and\n\
             `git push` from here pushes nothing to {branch}.\n"
        )
    } else {
        "git no longer works here: its registration was gone, so its .git file\n\
         was pointed at nothing (the old one is kept as .git.moved-aside).\n"
            .to_owned()
    };
    format!(
        "git maverick resume moved this folder aside at {now}: it was the\n\
         worktree of {branch} at {from}, which resume began to make and never\n\
         finished. Nothing in it was deleted.\n\n{how}\n\
         To get files back, copy them into the worktree of {branch}:\n\
         \x20   cp -R {to}/FILE {from}/FILE\n\
         or compare first: git diff --no-index {from} {to}\n\
         When nothing in it is needed any more: git worktree remove --force --force {to}\n\
         (or, if git no longer knows it: rm -rf {to}).\n"
    )
}

/// Cuts a moved-aside worktree off from the branch: detached HEAD, and a
/// lock whose reason says where it came from.
fn secure_aside(
    git: &Git,
    aside: &Aside,
    branch: &str,
    now: Timestamp,
) -> Result<(), WorktreeError> {
    let note = aside_note(aside, branch, now);
    let note_path = aside.to.join(ASIDE_NOTE);
    std::fs::write(&note_path, &note).map_err(IoError::on("write", &note_path))?;
    if !aside.registered {
        let gitfile = aside.to.join(".git");
        let kept = aside.to.join(".git.moved-aside");
        if !kept.exists() {
            std::fs::rename(&gitfile, &kept).map_err(IoError::on("move aside", &gitfile))?;
        }
        let nowhere = format!(
            "gitdir: {}\n",
            aside.to.join(".git-moved-aside-by-maverick").display()
        );
        std::fs::write(&gitfile, nowhere).map_err(IoError::on("write", &gitfile))?;
        return Ok(());
    }
    let here = git.at(&aside.to);
    if let Some(commit) = here.resolve_commit("HEAD")? {
        here.detach_head(&commit, "git maverick resume: moved aside")?;
    }
    let entry = list(git)?
        .into_iter()
        .find(|e| same_path(&e.path, &aside.to));
    if !entry.is_some_and(|e| e.locked) {
        let reason = format!(
            "moved aside by git maverick resume from {}; see {ASIDE_NOTE}",
            aside.from.display()
        );
        git.worktree_lock(&aside.to, &reason)?;
    }
    Ok(())
}

/// Carries out a plan whose local branch is not ahead of the remote,
/// journaling each step before it is taken.
pub(crate) fn apply(
    git: &Git,
    plan: &Plan,
    remote: &str,
    now: Timestamp,
) -> Result<Applied, WorktreeError> {
    let mut applied = Applied::default();
    let branch = plan.branch.as_str();
    let refname = format!("refs/heads/{branch}");
    let head = plan.remote_head.as_str();
    let common_dir = git.common_dir()?;
    let mut journal = plan.journal.clone().unwrap_or_else(|| Journal {
        path: plan.path.clone(),
        branch: branch.to_owned(),
        commit: head.to_owned(),
        step: Step::Made,
        pid: std::process::id(),
        at: now,
    });
    if let Some(to) = &plan.finish_aside {
        let aside = Aside {
            from: plan.path.clone(),
            to: to.clone(),
            registered: true,
            locked: false,
        };
        secure_aside(git, &aside, branch, now)?;
        applied.repaired = true;
        applied.moved_aside = Some(to.clone());
    }
    if plan.remove_missing {
        git.worktree_remove_missing(&plan.path)?;
        applied.repaired = true;
    }
    if let Some(aside) = &plan.move_aside {
        journal.save(
            &common_dir,
            Step::MovingAside {
                to: aside.to.clone(),
            },
            now,
        )?;
        if aside.registered {
            if aside.locked {
                git.worktree_unlock(&aside.from)?;
            }
            git.worktree_move(&aside.from, &aside.to)?;
        } else {
            std::fs::rename(&aside.from, &aside.to)
                .map_err(IoError::on("move aside", &aside.from))?;
        }
        crate::failpoint::hit("resume-after-move-aside");
        secure_aside(git, aside, branch, now)?;
        applied.repaired = true;
        applied.moved_aside = Some(aside.to.clone());
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
            return Ok(applied);
        }
        (Some(_), _) => return Ok(applied),
        (None, _) => {}
    }
    journal.commit = head.to_owned();
    journal.save(&common_dir, Step::Adding, now)?;
    crate::failpoint::hit("resume-after-journal");
    match &plan.local {
        LocalBranch::Absent => {
            git.worktree_add_new_branch(&plan.path, branch, head)?;
            crate::failpoint::hit("resume-after-worktree-add");
            git.config_set(&format!("branch.{branch}.remote"), remote)?;
            git.config_set(&format!("branch.{branch}.merge"), &refname)?;
        }
        local => {
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
        }
    }
    journal.save(&common_dir, Step::Made, now)?;
    applied.created = true;
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
