//! `git maverick completions bash|zsh|fish`: clap's completion scripts,
//! wired into git's own completion.

use clap::{Args, ValueEnum};
use clap_complete::Shell;
use schemars::JsonSchema;
use serde::Serialize;

use super::Outcome;
use crate::error::{CommandError, Exit};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CompletionShell {
    Bash,
    Zsh,
    Fish,
}

#[derive(Debug, Args)]
#[command(after_help = "Install: \
    bash: `git maverick completions bash > ~/.local/share/bash-completion/completions/git-maverick` \
    (git's completion then completes `git maverick <TAB>` too); \
    zsh: `git maverick completions zsh > \"${fpath[1]}/_git-maverick\"`; \
    fish: `git maverick completions fish > ~/.config/fish/completions/git-maverick.fish`")]
pub(crate) struct CompletionsArgs {
    /// The shell to complete in
    #[arg(value_name = "SHELL")]
    pub shell: CompletionShell,
}

/// git's bash completion calls `_git_maverick` for `git maverick <TAB>`, with
/// its own `words`/`cword` (and `__git_cmd_idx`, the index of `maverick`):
/// hand clap's function the line as if `git-maverick` had been typed.
const GIT_BASH_BRIDGE: &str = r#"
# `git maverick <TAB>` through git's own completion.
_git_maverick() {
    local idx=${__git_cmd_idx:-1}
    local COMP_WORDS=(git-maverick "${words[@]:idx+1}")
    local COMP_CWORD=$((cword - idx))
    _git__maverick git-maverick "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
}
"#;

/// `completions SHELL --json`: the completion script.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct CompletionsOutput {
    pub shell: CompletionShell,
    pub script: String,
}

pub(crate) fn run(
    json: bool,
    args: CompletionsArgs,
) -> Result<Outcome<CompletionsOutput>, CommandError> {
    let shell = match args.shell {
        CompletionShell::Bash => Shell::Bash,
        CompletionShell::Zsh => Shell::Zsh,
        CompletionShell::Fish => Shell::Fish,
    };
    let mut cmd = super::help::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "git-maverick", &mut script);
    if shell == Shell::Bash {
        // clap_complete names the top function after the binary with `-` as
        // `__` (`_git__maverick`, cmd `git__maverick`) but the subcommands'
        // case labels with `-` as `__subcmd__`: no subcommand of a hyphenated
        // binary would complete. One spelling for both.
        let text =
            String::from_utf8_lossy(&script).replace("git__subcmd__maverick__", "git__maverick__");
        script = text.into_bytes();
        script.extend_from_slice(GIT_BASH_BRIDGE.as_bytes());
    }
    let output = CompletionsOutput {
        shell: args.shell,
        script: String::from_utf8_lossy(&script).into_owned(),
    };
    if !json {
        super::help::print_raw(&script);
    }
    Ok(Outcome::new(Exit::Ok, output))
}
