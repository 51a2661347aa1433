//! The pre-push guard (SPEC 8), one push from what git hands the hook to a
//! verdict: which of its updates write to branches this clone manages on
//! the repository pushed to, and whether each may go.
//!
//! The cost follows what is pushed. Tags, unmanaged branches and clones
//! without maverick leave after a few file stats: no git process, no
//! network. A managed branch asks git what it needs (the remote-tracking
//! ref's reflog, whether the push is a fast-forward, and `maverick.instance`
//! when the environment names no instance), never the network: the remote's
//! head on git's stdin comes from the remote's own advertisement.

use std::path::{Path, PathBuf};

use crate::clock::Clock;
use crate::config::{Overrides, Settings};
use crate::git::{Git, GitEnv, ReflogRead};
use crate::records::branch::BranchStore;
use crate::writer::location;
use crate::writer::prepush::{
    self, BranchState, Checked, PrePushError, RefUpdate, Refusal, SeenOn, Tracking,
};
use crate::writer::stamp;
use maverick_core::ids::InstanceId;

/// One push as the hook is told of it.
#[derive(Clone, Debug)]
pub(crate) struct PushInput {
    /// Where git runs the hook (the worktree's top level).
    pub cwd: PathBuf,
    /// The environment git gives the hook (`GIT_DIR` in a linked worktree).
    pub env: GitEnv,
    /// The remote's name, or its URL when the push named a URL.
    pub remote: String,
    pub url: Option<String>,
    pub updates: Vec<RefUpdate>,
    /// The updates do not carry the remote's head (pre-commit's variables
    /// do not): it is asked of the remote, for managed branches only.
    pub remote_heads_unknown: bool,
}

impl PushInput {
    /// git's hook: `REMOTE URL` and the ref lines on stdin.
    pub(crate) fn from_hook(
        cwd: PathBuf,
        env: GitEnv,
        remote: String,
        url: Option<String>,
        stdin: &[u8],
    ) -> Result<PushInput, PrePushError> {
        Ok(PushInput {
            cwd,
            env,
            remote,
            url,
            updates: prepush::parse_updates(stdin)?,
            remote_heads_unknown: false,
        })
    }

    /// pre-commit's hook: what it hands its hooks instead of git's stdin
    /// (it reads that itself), the first ref of the push without the
    /// remote's head, which pre-commit replaces with a local guess when it
    /// lacks the object. `None` when the variables are not there.
    pub(crate) fn from_pre_commit(
        cwd: PathBuf,
        env: GitEnv,
    ) -> Result<Option<PushInput>, PrePushError> {
        let var = |name: &str| env.get(name).and_then(|v| v.to_str()).map(str::to_owned);
        let Some(remote_ref) = var("PRE_COMMIT_REMOTE_BRANCH") else {
            return Ok(None);
        };
        let remote = var("PRE_COMMIT_REMOTE_NAME").unwrap_or_else(|| "origin".to_owned());
        let url = var("PRE_COMMIT_REMOTE_URL");
        let local_ref = var("PRE_COMMIT_LOCAL_BRANCH").unwrap_or_else(|| "HEAD".to_owned());
        let local_sha = match var("PRE_COMMIT_TO_REF") {
            Some(sha) => sha,
            None => Git::new(&cwd, env.clone()).commit_of(&local_ref)?,
        };
        Ok(Some(PushInput {
            cwd,
            env,
            remote,
            url,
            updates: vec![RefUpdate {
                local_ref,
                local_sha: Some(local_sha),
                remote_ref,
                remote_sha: None,
            }],
            remote_heads_unknown: true,
        }))
    }
}

/// What the guard decided of one push.
#[derive(Clone, Debug)]
pub(crate) struct Verdict {
    pub remote: String,
    /// The managed branches the push writes to, each checked.
    pub checked: Vec<String>,
    /// The pushing instance, when a managed branch needed it.
    pub instance_id: Option<InstanceId>,
    /// Empty: the push may go.
    pub refusals: Vec<Refusal>,
    /// Lines for the person pushing (a lease that ran out).
    pub warnings: Vec<String>,
}

impl Verdict {
    fn allowed(remote: &str) -> Verdict {
        Verdict {
            remote: remote.to_owned(),
            checked: Vec::new(),
            instance_id: None,
            refusals: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// The pushing instance, and maverick's remote as configured now when the
/// records do not say where the managed branches live.
struct Pusher {
    me: InstanceId,
    configured: Option<String>,
}

/// The common git dir and the worktree's git dir, from `.git` and what git
/// told the hook, without a git process where they can be told that way.
fn git_dirs(git: &Git, cwd: &Path) -> Result<(PathBuf, Option<PathBuf>), PrePushError> {
    let git_dir = prepush::locate_git_dir(cwd, git.env());
    let common_dir = match &git_dir {
        Some(dir) => prepush::common_dir_from(cwd, git.env(), dir),
        None => git.common_dir()?,
    };
    Ok((common_dir, git_dir))
}

/// Decides one push. `overrides` are the command line's settings, read only
/// when the records do not settle where a managed branch lives; `clock`
/// stamps the records and judges the leases.
pub(crate) fn check_push(
    input: PushInput,
    overrides: &Overrides,
    clock: &Clock,
) -> Result<Verdict, PrePushError> {
    let git = Git::new(&input.cwd, input.env.clone());
    let remote = input.remote.as_str();
    let branch_updates: Vec<&RefUpdate> = input
        .updates
        .iter()
        .filter(|u| u.branch().is_some())
        .collect();
    if branch_updates.is_empty() {
        return Ok(Verdict::allowed(remote));
    }
    let (common_dir, git_dir) = git_dirs(&git, &input.cwd)?;
    if prepush::maverick_absent(&common_dir) {
        return Ok(Verdict::allowed(remote));
    }
    let ahead = read_ahead(&git, &common_dir, remote, &branch_updates);
    let mut managed = Vec::new();
    for update in branch_updates {
        let branch = update.branch().expect("filtered to branches");
        let state = BranchState::load(&common_dir, branch)?;
        if state.managed() {
            managed.push((update.clone(), state));
        }
    }
    if managed.is_empty() {
        return Ok(Verdict::allowed(remote));
    }
    // A managed branch: whether this push goes to the repository it is
    // managed on (however the push spells it), and who pushes.
    let destination = location::normalise(input.url.as_deref().unwrap_or(remote), &input.cwd);
    let recorded = |state: &BranchState| state.seen.as_ref().and_then(|s| s.location.clone());
    let settled = managed
        .iter()
        .all(|(_, s)| recorded(s).as_deref() == Some(destination.as_str()));
    let pusher = pusher(&git, git_dir.as_deref(), &common_dir, settled, overrides)?;
    managed.retain(|(_, state)| {
        recorded(state).as_deref() == Some(destination.as_str())
            || pusher.configured.as_deref() == Some(destination.as_str())
    });
    if managed.is_empty() {
        return Ok(Verdict::allowed(remote));
    }
    if input.remote_heads_unknown {
        // Ask the remote (managed pushes only).
        let to = input.url.as_deref().unwrap_or(remote);
        for (update, _) in &mut managed {
            let branch = update.branch().unwrap_or_default().to_owned();
            update.remote_sha =
                git.remote_head(to, &branch, "read the remote's head of the branch pushed")?;
        }
    }
    decide(&git, &common_dir, remote, managed, pusher.me, clock, ahead)
}

/// A push of one branch this clone has a record of (most pushes of a
/// managed branch) starts git's read of its reflogs now, before its
/// records are read and the pusher is known: git starts on another core
/// meanwhile. The read is used only when it is the one the check makes
/// (a record that watches another remote reads more); else it is stopped.
/// A branch without a record here costs a stat and starts nothing; a
/// failure to start is left to the check, which starts the read again.
fn read_ahead(
    git: &Git,
    common_dir: &Path,
    remote: &str,
    updates: &[&RefUpdate],
) -> Option<ReflogRead> {
    let [update] = updates else {
        return None;
    };
    let branch = update.branch()?;
    if !BranchStore::new(common_dir).exists(branch) {
        return None;
    }
    Tracking::start(git, remote, branch, &update.local_ref)
        .ok()
        .flatten()
}

/// The pushing instance: the environment's, else this clone's, as its
/// stamp names it while what it was derived from is unchanged (a few
/// stats), else resolved by one `git config` and stamped again; maverick's
/// whole configuration only when the records do not settle where the
/// managed branches live (its remote's URL may have moved).
fn pusher(
    git: &Git,
    git_dir: Option<&Path>,
    common_dir: &Path,
    settled: bool,
    overrides: &Overrides,
) -> Result<Pusher, PrePushError> {
    let env_me = crate::config::instance_from_env().transpose()?;
    if settled {
        let me = match env_me {
            Some(me) => me,
            None => match git_dir.and_then(stamp::stamped) {
                Some(me) => me,
                None => stamp::resolve_and_stamp(git, git_dir, common_dir)?,
            },
        };
        return Ok(Pusher {
            me,
            configured: None,
        });
    }
    let (settings, _) = Settings::load_explained(git, overrides)?;
    let configured = SeenOn::of_settings(git, &settings).location;
    Ok(Pusher {
        me: env_me.unwrap_or(settings.instance),
        configured,
    })
}

/// Checks every managed update; records them all when none is refused.
fn decide(
    git: &Git,
    common_dir: &Path,
    remote: &str,
    managed: Vec<(RefUpdate, BranchState)>,
    me: InstanceId,
    clock: &Clock,
    mut ahead: Option<ReflogRead>,
) -> Result<Verdict, PrePushError> {
    let mut refusals = Vec::new();
    let mut checks = Vec::new();
    for (update, state) in &managed {
        let checked = Checked::read(git, state, remote, update, ahead.take())?;
        if let Some(refusal) = prepush::check_update(git, update, state, &checked, &me)? {
            refusals.push(refusal);
        }
        checks.push(checked);
    }
    let mut warnings = Vec::new();
    if refusals.is_empty() {
        let now = clock.now();
        for ((update, state), checked) in managed.iter().zip(&checks) {
            prepush::record_allowed(common_dir, update, state, checked, &me, now)?;
            warnings.extend(prepush::lease_warnings(&state.claims, &me, now));
        }
    }
    Ok(Verdict {
        remote: remote.to_owned(),
        checked: managed
            .iter()
            .filter_map(|(u, _)| u.branch().map(str::to_owned))
            .collect(),
        instance_id: Some(me),
        refusals,
        warnings,
    })
}
