//! How a command line is written so that a shell reads it back as it was.

/// `word` as a shell reads it back: as it is when that is safe, else in
/// single quotes (`'it'\''s'`), so a printed command line can be pasted.
pub fn quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_-./:=@%+,".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        return word.to_owned();
    }
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn words_are_quoted_only_when_a_shell_would_read_them_otherwise() {
        assert_eq!(quote("origin"), "origin");
        assert_eq!(quote("maverick/7-x"), "maverick/7-x");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote("$HOME"), "'$HOME'");
    }
}
