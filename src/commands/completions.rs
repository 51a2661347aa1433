//! `git maverick completions bash|zsh|fish`: clap's completion scripts,
//! wired into git's own completion.

use clap::{Args, ValueEnum};
use clap_complete::Shell;
use schemars::JsonSchema;
use serde::Serialize;

use super::Outcome;
use crate::commands::error::{CommandError, Exit};

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

/// The command tree the completions offer: `cmd` without its hidden
/// subcommands (the hooks git and Claude Code run), which clap_complete
/// would otherwise offer. Names, arguments, aliases and help are all a
/// completion script reads. (clap takes `'static` names: this process
/// prints one script and ends, so they are leaked.)
fn completable(cmd: &clap::Command) -> clap::Command {
    let leak = |text: &str| -> &'static str { Box::leak(text.into()) };
    let mut out = clap::Command::new(leak(cmd.get_name()))
        .disable_help_subcommand(true)
        .propagate_version(cmd.is_propagate_version_set())
        .args(cmd.get_arguments().cloned())
        .visible_aliases(cmd.get_visible_aliases().map(leak));
    if let Some(about) = cmd.get_about() {
        out = out.about(about.clone());
    }
    if let Some(version) = cmd.get_version() {
        out = out.version(leak(version));
    }
    out.subcommands(
        cmd.get_subcommands()
            .filter(|sub| !sub.is_hide_set())
            .map(completable),
    )
}

/// In clap's bash script every word of a command (its flags, then its
/// subcommands) is offered for an empty word, and bash lists them sorted,
/// flags first: `git maverick <TAB>` would open on two screens of global
/// flags. As git's own completion does, flags come only for a word that
/// starts with `-`, or where the command takes nothing else.
fn subcommands_first(script: &str) -> String {
    const OFFER: &str = r#"COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )"#;
    const FILTERED: &str =
        r#"COMPREPLY=( $(compgen -W "$(_git__maverick_words "${opts}" "${cur}")" -- "${cur}") )"#;
    script.replace(OFFER, FILTERED) + WORDS_FILTER
}

/// The words of `opts` to offer for the word `cur`.
const WORDS_FILTER: &str = r#"
# The words of $1 to offer for the word $2: flags only for a word that
# starts with `-`, or where nothing but flags is left.
_git__maverick_words() {
    local word words=()
    if [[ $2 != -* ]]; then
        for word in $1; do
            [[ $word == -* ]] || words+=("$word")
        done
    fi
    if [[ ${#words[@]} -eq 0 ]]; then
        printf '%s\n' "$1"
    else
        printf '%s\n' "${words[*]}"
    fi
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
    let mut cmd = completable(&super::help::command());
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cmd, "git-maverick", &mut script);
    if shell == Shell::Bash {
        // clap_complete names the top function after the binary with `-` as
        // `__` (`_git__maverick`, cmd `git__maverick`) but the subcommands'
        // case labels with `-` as `__subcmd__`: no subcommand of a hyphenated
        // binary would complete. One spelling for both.
        let text =
            String::from_utf8_lossy(&script).replace("git__subcmd__maverick__", "git__maverick__");
        script = subcommands_first(&text).into_bytes();
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
