//! The prefixes of what maverick says on stderr (`error:`, `hint:`,
//! `warning:`), coloured as clap colours its own errors and tips, on the
//! same terms: only on a terminal, never under `NO_COLOR`, always under
//! `CLICOLOR_FORCE` (the decision is anstream's, clap's own), and never
//! with `--json`.

use clap::builder::styling::{AnsiColor, Style, Styles};

/// No colour for the rest of the process (`--json`: a program reads stderr
/// too).
pub(crate) fn never() {
    anstream::ColorChoice::Never.write_global();
}

/// Colour as git decides it: `--color[=WHEN]`, else git's `color.maverick`,
/// else `color.ui` (`always`; `never` or `false`; `auto` or `true`, the
/// default: a terminal, unless `NO_COLOR`), for every stream of the process,
/// clap's help and errors included.
pub(crate) fn choose(args: &[std::ffi::OsString]) {
    let flag = args
        .iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .filter_map(|a| a.to_str())
        .filter_map(|a| match a {
            "--color" => Some("always"),
            _ => a.strip_prefix("--color="),
        })
        .last()
        .map(str::to_owned);
    // The hooks git and Claude Code run answer no person: no config read.
    let hook = args.get(1).is_some_and(|a| a == "hook");
    let when = flag.or_else(|| {
        if hook {
            return None;
        }
        let git = crate::git::Git::new(
            std::env::current_dir().unwrap_or_default(),
            crate::git::GitEnv::inherit(),
        );
        // One `git config` process: the settings the command loads next
        // take their `maverick.*` keys from it too.
        let entries =
            crate::config::ConfigKeys::read_along(&git, r"^color\.(maverick|ui)$").ok()?;
        // The last value of a key wins, as in git; color.maverick over color.ui.
        ["color.maverick", "color.ui"].iter().find_map(|key| {
            entries
                .iter()
                .rev()
                .find(|e| e.key.eq_ignore_ascii_case(key))
                .map(|e| e.value.clone())
        })
    });
    match when.as_deref().map(str::to_ascii_lowercase).as_deref() {
        Some("always") => anstream::ColorChoice::Always.write_global(),
        Some("never" | "false") => never(),
        _ => {}
    }
}

/// Whether stderr gets colour.
fn stderr_in_colour() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
}

/// Whether stdout gets colour (never with `--json`: [`never`] was chosen).
pub(crate) fn stdout_in_colour() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
}

/// `text` (already made safe for a terminal) in the style of what needs a
/// person, `warning:`'s, when `colour`.
pub(crate) fn needs_a_person(text: &str, colour: bool) -> String {
    match style_of("warning:").filter(|_| colour) {
        Some(style) => format!("{style}{text}{style:#}"),
        None => text.to_owned(),
    }
}

/// `text` (already made safe for a terminal) on stderr, its prefixes
/// coloured when stderr takes colour.
pub(crate) fn eprint_lines(text: &str) {
    eprintln!("{}", prefixes(text, stderr_in_colour()));
}

/// The style of a line's prefix: clap's `error:` (its error style), clap's
/// `tip:` for `hint:` (its valid style), and yellow bold for `warning:`,
/// which clap has none of (cargo's and rustc's warning colour).
fn style_of(prefix: &str) -> Option<Style> {
    let styles = Styles::styled();
    match prefix {
        "error:" => Some(*styles.get_error()),
        "hint:" => Some(*styles.get_valid()),
        "warning:" => Some(Style::new().fg_color(Some(AnsiColor::Yellow.into())).bold()),
        _ => None,
    }
}

/// `text` (already made safe for a terminal) with each line's prefix
/// coloured when `colour`.
fn prefixes(text: &str, colour: bool) -> String {
    if !colour {
        return text.to_owned();
    }
    text.split('\n')
        .map(|line| {
            let prefix = line.split_once(' ').map_or(line, |(first, _)| first);
            match style_of(prefix) {
                Some(style) => format!("{style}{prefix}{style:#}{}", &line[prefix.len()..]),
                None => line.to_owned(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_prefixes_are_coloured() {
        assert_eq!(prefixes("error: x\nhint: y", false), "error: x\nhint: y");
        assert_eq!(
            prefixes("error: x\ncaused by: z\nhint: y\nwarning: w", true),
            "\x1b[1m\x1b[31merror:\x1b[0m x\ncaused by: z\n\x1b[32mhint:\x1b[0m y\n\x1b[1m\x1b[33mwarning:\x1b[0m w"
        );
    }
}
