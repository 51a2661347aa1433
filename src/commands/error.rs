//! The command layer's error type and the exit codes of SPEC 10.
//!
//! "The protocol said no" (exit 3-9) is not an error: commands return it as
//! an `Outcome` of the command layer with its exit code. Errors here
//! are "the tool failed" (1) and "the command line is wrong" (2).

use std::fmt;

/// SPEC 10's exit codes; `exit_code` in the JSON contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Exit {
    Ok = 0,
    Error = 1,
    Usage = 2,
    Blocked = 3,
    HeldLive = 4,
    HeldStale = 5,
    LostRace = 6,
    ClaimLost = 7,
    Collision = 8,
    NoSlot = 9,
}

impl Exit {
    pub(crate) const ALL: [Exit; 10] = [
        Exit::Ok,
        Exit::Error,
        Exit::Usage,
        Exit::Blocked,
        Exit::HeldLive,
        Exit::HeldStale,
        Exit::LostRace,
        Exit::ClaimLost,
        Exit::Collision,
        Exit::NoSlot,
    ];

    pub(crate) fn code(self) -> u8 {
        self as u8
    }
}

impl From<Exit> for u8 {
    fn from(exit: Exit) -> u8 {
        exit.code()
    }
}

impl serde::Serialize for Exit {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u8(self.code())
    }
}

impl schemars::JsonSchema for Exit {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "ExitCode".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        let codes: Vec<u8> = Exit::ALL.iter().map(|e| e.code()).collect();
        schemars::json_schema!({
            "description": "0 ok, 1 error, 2 usage, 3 blocked, 4 held live, 5 held stale, 6 lost race, 7 claim lost, 8 collision, 9 no slot (SPEC 10)",
            "enum": codes,
        })
    }
}

/// What a program can switch on when a command fails: `error.code` in the
/// JSON contract (README, "JSON output"). A stable set: new codes may be
/// added; a code is never renamed or given another meaning.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ErrorCode {
    // The command line is wrong (exit 2); the message is clap's whole text.
    Usage,
    NoToken,
    BadToken,
    NotARepository,
    NoRemote,
    // The GitHub repository cannot be told from the remote, or does not exist.
    NoRepository,
    NoSuchIssue,
    // No usable answer from GitHub (connection, timeout, 5xx after retries).
    Network,
    RateLimited,
    // GitHub answered in a way maverick cannot use.
    Github,
    // A git process failed; the message keeps git's stderr.
    GitFailed,
    // git is older than maverick needs (the message names both versions).
    GitTooOld,
    // A setting (git config, environment) has a value maverick cannot use.
    BadConfig,
    // Other writers kept winning a compare-and-swap; running again helps.
    Contended,
    // Maverick's state on the surface or in a local record is damaged.
    Corrupt,
    // Anything else that failed.
    Failed,
}

/// What did not stop a command: a `warning:` line on stderr, and an
/// entry of `--json`'s `warnings`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(transparent)]
pub(crate) struct Warning(String);

impl Warning {
    pub(crate) fn new(text: impl Into<String>) -> Warning {
        Warning(text.into())
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A source of a command error, shared (jj's `CommandError` keeps an
/// `Arc<dyn Error>` the same way).
pub(crate) type Source = std::sync::Arc<dyn std::error::Error + Send + Sync + 'static>;

/// The command layer's error: the library error that stopped the command,
/// with its source chain, and what the command layer adds (the exit code,
/// the code a program switches on, the way out). The printed `error:`,
/// `caused by:` and `hint:` lines and the JSON `error` object are both
/// derived from it.
#[derive(Debug)]
pub(crate) struct CommandError {
    pub exit: Exit,
    pub code: ErrorCode,
    pub source: Source,
    pub hints: Vec<String>,
    /// What did not stop the command before it failed, shown on stderr as
    /// it happened; `--json`'s `warnings`.
    pub warnings: Vec<Warning>,
}

/// The command layer's own message, when no library error stands behind it.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Message(pub String);

/// A library error told in the command's words: the message says what the
/// command was doing and embeds the inner error's; the causes are the
/// inner error's own.
#[derive(Debug)]
struct Reworded {
    message: String,
    inner: Source,
}

impl fmt::Display for Reworded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Reworded {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner.source()
    }
}

impl CommandError {
    pub(crate) fn new(exit: Exit, message: impl Into<String>) -> CommandError {
        CommandError::from_error(exit, Message(message.into()))
    }

    pub(crate) fn tool(message: impl Into<String>) -> CommandError {
        CommandError::new(Exit::Error, message)
    }

    pub(crate) fn usage(message: impl Into<String>) -> CommandError {
        CommandError::new(Exit::Usage, message)
    }

    /// Sets the code, except that git being too old (found in the cause
    /// chain) stays what a program sees, whatever wrapped it.
    pub(crate) fn code(mut self, code: ErrorCode) -> CommandError {
        if self.code != ErrorCode::GitTooOld {
            self.code = code;
        }
        self
    }

    pub(crate) fn hint(mut self, hint: impl Into<String>) -> CommandError {
        self.hints.push(hint.into());
        self
    }

    /// Warnings a person saw on stderr before the command failed.
    pub(crate) fn shown(mut self, warnings: &[Warning]) -> CommandError {
        self.warnings.extend_from_slice(warnings);
        self
    }

    /// Builds an error from a library error, which it keeps as its source.
    pub(crate) fn from_error(
        exit: Exit,
        err: impl std::error::Error + Send + Sync + 'static,
    ) -> CommandError {
        CommandError::from_source(exit, std::sync::Arc::new(err))
    }

    fn from_source(exit: Exit, source: Source) -> CommandError {
        let mut hints = Vec::new();
        let mut code = default_code(exit);
        let top: &(dyn std::error::Error + 'static) = &*source;
        for e in std::iter::successors(Some(top), |e| e.source()) {
            if let Some(crate::git::GitTooOld { needed, .. }) = e.downcast_ref() {
                hints.push(format!(
                    "install git {needed} or newer (`git --version` names the git first on PATH)"
                ));
                code = ErrorCode::GitTooOld;
            }
        }
        CommandError {
            exit,
            code,
            source,
            hints,
            warnings: Vec::new(),
        }
    }

    /// The same error told in the command's words (`message` embeds the
    /// error's own): the code, the hints and the causes stay.
    pub(crate) fn reworded(mut self, message: impl Into<String>) -> CommandError {
        self.source = std::sync::Arc::new(Reworded {
            message: message.into(),
            inner: self.source,
        });
        self
    }

    /// `error.message`: the error itself.
    pub(crate) fn message(&self) -> String {
        self.source.to_string()
    }

    /// `error.causes`: its sources, outermost first.
    pub(crate) fn causes(&self) -> Vec<String> {
        let top: &(dyn std::error::Error + 'static) = &*self.source;
        std::iter::successors(top.source(), |e| e.source())
            .map(|e| e.to_string())
            .collect()
    }
}

fn default_code(exit: Exit) -> ErrorCode {
    match exit {
        Exit::Usage => ErrorCode::Usage,
        _ => ErrorCode::Failed,
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = self.message();
        write!(f, "error: {message}")?;
        for cause in self.causes() {
            // Display of thiserror's transparent wrappers repeats the cause.
            if !message.contains(cause.as_str()) {
                write!(f, "\ncaused by: {cause}")?;
            }
        }
        for hint in &self.hints {
            write!(f, "\nhint: {hint}")?;
        }
        Ok(())
    }
}

impl From<crate::config::ConfigError> for CommandError {
    fn from(err: crate::config::ConfigError) -> Self {
        use crate::config::ConfigError;
        let hint = match &err {
            ConfigError::NoRemote { remote } => Some(format!(
                "add one (`git remote add {remote} URL`), or name another with `git config maverick.remote NAME`"
            )),
            ConfigError::BadInstance(_) => {
                Some("set MAVERICK_INSTANCE or `git config maverick.instance` to a simple name".to_owned())
            }
            ConfigError::Duration { key, .. } => Some(format!("fix it with `git config maverick.{key} 10m`")),
            ConfigError::BadGhRepo(_) => {
                Some("set GH_REPO=OWNER/NAME (as gh reads it), or unset it".to_owned())
            }
            _ => None,
        };
        let (exit, code) = match err {
            ConfigError::BadRepo(_) => (Exit::Usage, ErrorCode::Usage),
            ConfigError::NoRemote { .. } => (Exit::Error, ErrorCode::NoRemote),
            ConfigError::Git(_) => (Exit::Error, ErrorCode::GitFailed),
            _ => (Exit::Error, ErrorCode::BadConfig),
        };
        let mut e = CommandError::from_error(exit, err).code(code);
        e.hints.extend(hint);
        e
    }
}

impl From<crate::git::GitError> for CommandError {
    fn from(err: crate::git::GitError) -> Self {
        CommandError::from_error(Exit::Error, err).code(ErrorCode::GitFailed)
    }
}

impl From<crate::surface::SurfaceError> for CommandError {
    fn from(err: crate::surface::SurfaceError) -> Self {
        use crate::surface::SurfaceError;
        let hint = match &err {
            SurfaceError::PushRejected { .. } => Some(
                "the remote must accept pushes to refs/maverick/*; allow them, or use `git config maverick.surface github`",
            ),
            SurfaceError::Contended { .. } => Some("another writer kept winning; run the command again"),
            SurfaceError::NotDamaged { .. } => Some(
                "`git maverick coord reset ISSUE --force` resets it anyway, dropping its claims, labels and comments (they stay reachable under the backup ref it names)",
            ),
            SurfaceError::NoSuchIssue(_) => Some(
                "on GitHub an issue must exist before it is claimed: check the number and the repository (-R OWNER/NAME)",
            ),
            _ => None,
        };
        let code = match &err {
            SurfaceError::Git(_) | SurfaceError::PushRejected { .. } => ErrorCode::GitFailed,
            SurfaceError::NoSuchIssue(_) | SurfaceError::NoSuchComment { .. } => {
                ErrorCode::NoSuchIssue
            }
            SurfaceError::Contended { .. } => ErrorCode::Contended,
            SurfaceError::Corrupt { .. } | SurfaceError::Damaged(_) => ErrorCode::Corrupt,
            SurfaceError::NotDamaged { .. } => ErrorCode::Failed,
            SurfaceError::Github(github) => github_code(github),
            SurfaceError::Other(_) => ErrorCode::Failed,
        };
        let github_hint = match &err {
            SurfaceError::Github(github) => github.hint(),
            _ => None,
        };
        let damage_hint = match &err {
            SurfaceError::Damaged(damage) => Some(damage.way_out()),
            _ => None,
        };
        let mut e = CommandError::from_error(Exit::Error, err).code(code);
        e.hints.extend(hint.map(str::to_owned));
        e.hints.extend(github_hint);
        e.hints.extend(damage_hint);
        e
    }
}

fn github_code(err: &crate::surface::github::GithubError) -> ErrorCode {
    use crate::surface::github::GithubError;
    match err {
        GithubError::NoToken | GithubError::NoEnterpriseToken { .. } => ErrorCode::NoToken,
        GithubError::BadToken { .. } | GithubError::Unauthorized { .. } => ErrorCode::BadToken,
        GithubError::NoRepo { .. } | GithubError::NoSuchRepo { .. } => ErrorCode::NoRepository,
        GithubError::BadUrl { .. } => ErrorCode::BadConfig,
        GithubError::RateLimited { .. } => ErrorCode::RateLimited,
        GithubError::Unavailable { .. } | GithubError::Client(_) => ErrorCode::Network,
        GithubError::Status { .. }
        | GithubError::BadAnswer { .. }
        | GithubError::Assignees { .. }
        | GithubError::LabelLeftBehind { .. } => ErrorCode::Github,
    }
}

impl From<crate::coord::lease::LeaseError> for CommandError {
    fn from(err: crate::coord::lease::LeaseError) -> Self {
        match err {
            crate::coord::lease::LeaseError::Surface(e) => e.into(),
            other => CommandError::from_error(Exit::Error, other),
        }
    }
}

impl From<crate::records::files::RecordError> for CommandError {
    fn from(err: crate::records::files::RecordError) -> Self {
        let hint = err.hint();
        let mut e = CommandError::from_error(Exit::Error, err);
        e.hints.extend(hint);
        e
    }
}

impl From<crate::coord::claims::ClaimsError> for CommandError {
    fn from(err: crate::coord::claims::ClaimsError) -> Self {
        match err {
            crate::coord::claims::ClaimsError::Lease(e) => e.into(),
            crate::coord::claims::ClaimsError::Record(e) => e.into(),
            crate::coord::claims::ClaimsError::Git(e) => e.into(),
            crate::coord::claims::ClaimsError::Seen(e) => e.into(),
        }
    }
}

impl From<crate::writer::push::PushError> for CommandError {
    fn from(err: crate::writer::push::PushError) -> Self {
        use crate::writer::push::PushError;
        let (exit, hint) = match err {
            PushError::Collision { .. } => (
                Exit::Collision,
                "stop and report; do not merge or overwrite".to_owned(),
            ),
            PushError::NotFastForward { .. } => (
                Exit::Collision,
                "claimed branches move forward only: add commits on top of the remote head"
                    .to_owned(),
            ),
            PushError::NotHolder { ref hint, .. } => (Exit::ClaimLost, hint.clone()),
            PushError::Git(e) => return CommandError::from_error(Exit::Error, e),
            PushError::Record(e) => {
                let hint = e.hint();
                let mut out = CommandError::from_error(Exit::Error, e);
                out.hints.extend(hint);
                return out;
            }
            PushError::Refused { .. } => (
                Exit::Error,
                "see what the remote (or a pre-push hook) said above".to_owned(),
            ),
        };
        CommandError::from_error(exit, err).hint(hint)
    }
}

impl From<crate::durable::state::StateError> for CommandError {
    fn from(err: crate::durable::state::StateError) -> Self {
        use crate::durable::state::StateError;
        use crate::markers::MarkerKind;
        match err {
            StateError::Surface(e) => e.into(),
            StateError::NotState(_) | StateError::TooLarge { .. } => {
                CommandError::from_error(Exit::Usage, err)
            }
            StateError::Unreadable(ref why) => {
                let hint = match why.kind() {
                    MarkerKind::State | MarkerKind::Dag => "give `epic` (the epic's issue number) and `stories` (a JSON object); `updated_at` is stamped for you",
                    _ => "give the field the error names as docs/storage.md describes it, or leave it out",
                };
                CommandError::from_error(Exit::Usage, err).hint(hint)
            }
            StateError::Contended { .. } | StateError::ReadBack { .. } => {
                CommandError::from_error(Exit::Error, err).hint("run the command again")
            }
        }
    }
}

impl From<crate::writer::worktree::WorktreeError> for CommandError {
    fn from(err: crate::writer::worktree::WorktreeError) -> Self {
        use crate::writer::worktree::WorktreeError;
        let hint = match &err {
            WorktreeError::PathTaken { path, .. } | WorktreeError::PathOccupied { path } => {
                Some(format!(
                    "move {} away (or set maverick.worktreeDir) and resume again",
                    path.display()
                ))
            }
            _ => None,
        };
        let mut e = match err {
            WorktreeError::Git(git) => CommandError::from(git),
            other => CommandError::from_error(Exit::Error, other),
        };
        e.hints.extend(hint);
        e
    }
}

impl From<crate::writer::hookfile::HookFileError> for CommandError {
    fn from(err: crate::writer::hookfile::HookFileError) -> Self {
        use crate::writer::hookfile::HookFileError;
        let manual = "`git-maverick hook pre-push \"$@\"` (it reads the same stdin; pass it on \
                      if the hook reads it too)";
        let hint = match &err {
            HookFileError::Symlink { .. } => Some(format!(
                "edit the file it points to, or call maverick from the hook yourself: {manual}"
            )),
            HookFileError::NotExecutable { path } => Some(format!(
                "make it executable (chmod +x {}) if it should run, or remove it; then install again",
                path.display()
            )),
            HookFileError::NotShell { .. } => Some(format!(
                "call maverick from that hook yourself, in its own language: {manual}"
            )),
            HookFileError::Unbalanced { path, .. } => Some(format!(
                "fix or delete the maverick lines in {} by hand, then install again",
                path.display()
            )),
            _ => None,
        };
        let mut e = CommandError::from_error(Exit::Error, err);
        e.hints.extend(hint);
        e
    }
}

impl From<crate::writer::prepush::SeenError> for CommandError {
    fn from(err: crate::writer::prepush::SeenError) -> Self {
        use crate::writer::prepush::SeenError;
        match err {
            SeenError::Git(e) => e.into(),
            SeenError::Record(e) => e.into(),
        }
    }
}

impl From<crate::writer::prepush::PrePushError> for CommandError {
    fn from(err: crate::writer::prepush::PrePushError) -> Self {
        use crate::writer::prepush::PrePushError;
        match err {
            PrePushError::Git(e) => e.into(),
            PrePushError::Record(e) => e.into(),
            PrePushError::Config(e) => e.into(),
            other => CommandError::from_error(Exit::Error, other),
        }
    }
}

impl From<crate::writer::hookmanager::ManagerError> for CommandError {
    fn from(err: crate::writer::hookmanager::ManagerError) -> Self {
        use crate::writer::hookmanager::ManagerError;
        match err {
            ManagerError::Git(e) => e.into(),
            ManagerError::HookFile(e) => e.into(),
            ManagerError::Worktree(e) => e.into(),
        }
    }
}

impl From<crate::coord::dispatch::DispatchError> for CommandError {
    fn from(err: crate::coord::dispatch::DispatchError) -> Self {
        use crate::coord::dispatch::DispatchError;
        match err {
            DispatchError::Surface(e) => e.into(),
            DispatchError::SelfPull(_) => CommandError::from_error(Exit::Usage, err)
                .hint("name the pull request with --pr N, not the issue"),
            other => CommandError::from_error(Exit::Error, other),
        }
    }
}

impl From<crate::workflow::hydrate::HydrateError> for CommandError {
    fn from(err: crate::workflow::hydrate::HydrateError) -> Self {
        use crate::workflow::hydrate::HydrateError;
        match err {
            HydrateError::Surface(e) => e.into(),
            HydrateError::Git(e) => e.into(),
            HydrateError::Unreadable { issue, ref source } => {
                let kind = source.kind().name();
                CommandError::from_error(Exit::Error, err).hint(format!(
                    "show it with `git maverick state get {kind} {issue}` and rewrite it with `git maverick state put {kind} {issue} FILE`"
                ))
            }
            other => CommandError::from_error(Exit::Error, other),
        }
    }
}

impl From<crate::durable::tasks::TaskError> for CommandError {
    fn from(err: crate::durable::tasks::TaskError) -> Self {
        use crate::durable::tasks::TaskError;
        match err {
            TaskError::Surface(e) => e.into(),
            TaskError::Git(e) => e.into(),
            TaskError::Record(e) => e.into(),
            TaskError::State(e) => e.into(),
            TaskError::OutOfRange { .. } | TaskError::NoTasks => {
                CommandError::from_error(Exit::Usage, err)
            }
            TaskError::NoTasksComment { issue } => CommandError::from_error(Exit::Error, err).hint(
                format!("write it with `git maverick task init {issue} FILE` (one task per line)"),
            ),
            TaskError::AlreadyInitialised { issue, .. } => {
                CommandError::from_error(Exit::Error, err).hint(format!(
                    "leave it, or rewrite it with `git maverick task init {issue} FILE --replace`"
                ))
            }
            TaskError::Contended { .. } => {
                CommandError::from_error(Exit::Error, err).hint("run the command again")
            }
        }
    }
}

impl From<crate::workflow::task_done::DoneError> for CommandError {
    fn from(err: crate::workflow::task_done::DoneError) -> Self {
        use crate::workflow::task_done::DoneError;
        let again = "run `git maverick task done` again";
        let message = err.to_string();
        match err {
            DoneError::NothingStaged => CommandError::from_error(Exit::Error, err).hint(format!(
                "stage the task's changes with `git add PATH…`, then {again}"
            )),
            DoneError::UnpushedOther { unpushed, .. } => CommandError::from_error(Exit::Usage, err)
                .hint(format!(
                    "run `git maverick task done` to push task {unpushed} first"
                )),
            DoneError::AllChecked { issue, .. } | DoneError::AllCommitted { issue, .. } => {
                CommandError::from_error(Exit::Error, err).hint(format!(
                    "to add work to a task, name it: `git maverick task done --task N`; to add tasks, `git maverick task init {issue} FILE --replace`"
                ))
            }
            DoneError::NotConventional { .. } => CommandError::from_error(Exit::Usage, err)
                .hint("nothing was committed; pass -m \"type(scope): subject\""),
            DoneError::MassDelete { .. } => CommandError::from_error(Exit::Error, err).hint(format!(
                "nothing was committed; check `git status` (after an interrupted `git maverick resume`, run it again to rebuild the worktree); if the deletion is meant, {again} with --allow-mass-delete"
            )),
            DoneError::Commit(e) => CommandError::from_error(Exit::Error, e).hint(format!(
                "nothing was committed or pushed; fix what git says and {again}"
            )),
            DoneError::Push { source, .. } => CommandError::from_error(Exit::Error, *source)
                .reworded(message)
                .hint("fix the cause and run `git maverick task done` again: it pushes the commit it left"),
            DoneError::CheckOff { issue, source, .. } => CommandError::from(*source)
                .reworded(message)
                .hint(format!(
                    "the commit is safe on the remote; `git maverick task list {issue}` checks it off from its trailer"
                )),
            DoneError::Task(e) => e.into(),
            DoneError::Git(e) => e.into(),
            DoneError::Surface(e) => e.into(),
            DoneError::Record(e) => e.into(),
            DoneError::Claims(e) => e.into(),
        }
    }
}

impl From<crate::coord::hold::HoldError> for CommandError {
    fn from(err: crate::coord::hold::HoldError) -> Self {
        match err {
            crate::coord::hold::HoldError::Claims(e) => e.into(),
            other => CommandError::from_error(Exit::Error, other),
        }
    }
}

impl From<crate::coord::hold::TimingError> for CommandError {
    fn from(err: crate::coord::hold::TimingError) -> Self {
        use crate::coord::hold::TimingError;
        let hint = match err {
            TimingError::ZeroHeartbeat => {
                "set --heartbeat-interval (maverick.heartbeatInterval) to a positive duration"
            }
            TimingError::TtlTooShort { .. } => {
                "raise --lease-ttl, or lower --heartbeat-interval or --grace"
            }
        };
        CommandError::from_error(Exit::Usage, err).hint(hint)
    }
}
