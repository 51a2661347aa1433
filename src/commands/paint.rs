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

/// Whether stderr gets colour.
fn stderr_in_colour() -> bool {
    anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never
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
