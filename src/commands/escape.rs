//! What a person's terminal gets: text from anywhere (issue titles, instance
//! ids and hosts from the surface, labels, git's messages, a command line)
//! with its control characters made visible, so that no title can set the
//! window's title, erase a line, move the cursor or write the clipboard
//! (OSC 52). Applied once, where the command layer prints for people
//! ([`super::finish`], `status --watch`, `run`'s start line); `--json` and
//! the answers agent hooks read are printed exactly.

use std::borrow::Cow;
use std::fmt::Write as _;

/// Where a newline may pass.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Newlines {
    /// One line of output: a newline inside it is surface text that would
    /// forge a line of its own, and is escaped.
    Escape,
    /// A block of lines (an error with its causes and hints, git's stderr).
    Keep,
}

/// `text` with every character a terminal would act on written out
/// instead: C0 controls but tab (and newline where [`Newlines::Keep`]
/// allows it), ESC, which starts every escape sequence, DEL, C1 controls
/// (0x80-0x9f, among them the one-byte CSI and OSC), and the bidirectional
/// overrides and isolates that reorder what a line seems to say. They read
/// `\x1b`, `\x7f`, `\u{9b}`, `\u{202e}`. Borrowed when there is none.
pub(crate) fn for_terminal(text: &str, newlines: Newlines) -> Cow<'_, str> {
    let unsafe_char = |c: char| match c {
        '\t' => false,
        '\n' => newlines == Newlines::Escape,
        c => c.is_control() || is_bidi_control(c),
    };
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !unsafe_char(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    Cow::Owned(out)
}

/// The explicit bidirectional formatting characters (Unicode's embeddings,
/// overrides and isolates, and the marks that steer them).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_written_out() {
        let line = |t| for_terminal(t, Newlines::Escape).into_owned();
        assert_eq!(
            line("plain text, ünïcode, 日本"),
            "plain text, ünïcode, 日本"
        );
        assert!(matches!(
            for_terminal("a\tb", Newlines::Escape),
            Cow::Borrowed(_)
        ));
        // OSC 52 (clipboard), a title change, line erasure, CR overwrite.
        assert_eq!(line("\x1b]52;c;ZXZpbA==\x07t"), "\\x1b]52;c;ZXZpbA==\\x07t");
        assert_eq!(line("\x1b]0;owned\x1b\\"), "\\x1b]0;owned\\x1b\\");
        assert_eq!(line("a\x1b[2K\rb"), "a\\x1b[2K\\x0db");
        assert_eq!(line("del\x7f c1\u{9b}2J"), "del\\x7f c1\\u{9b}2J");
        assert_eq!(line("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(line("one\ntwo"), "one\\x0atwo");
        assert_eq!(
            for_terminal("error: x\nhint: y\x1b[31m", Newlines::Keep),
            "error: x\nhint: y\\x1b[31m"
        );
    }
}
