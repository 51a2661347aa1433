//! GitHub's closing keywords: the issues a pull request's description says
//! it closes (`Fixes #142`, `closes: acme/widgets#7`,
//! `Resolves https://github.com/acme/widgets/issues/9`).
//!
//! As GitHub reads them: one of close, closes, closed, fix, fixes, fixed,
//! resolve, resolves, resolved, in any case, as a word of its own, with an
//! optional colon, then whitespace and one reference; each reference needs
//! its own keyword (`Fixes #1, #2` closes only #1). A reference is `#N`,
//! `OWNER/REPO#N` or the issue's URL, and counts only when it names the
//! pull request's own repository. Whether the keywords link at all (the
//! pull request's base must be the default branch) is the caller's to judge.

const KEYWORDS: [&str; 9] = [
    "close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved",
];

/// The issues of the repository `full_name` (`OWNER/REPO`, whose web
/// address is `html_url`) that `body` closes with a keyword, in the order
/// written, each once.
pub fn closing_issues(body: &str, full_name: &str, html_url: &str) -> Vec<u64> {
    let mut found = Vec::new();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut rest = body;
    let mut prev: Option<char> = None;
    while !rest.is_empty() {
        let start_of_word = !prev.is_some_and(word);
        if start_of_word {
            if let Some(after) = keyword(rest) {
                if let Some(n) = reference(after, full_name, html_url) {
                    if !found.contains(&n) {
                        found.push(n);
                    }
                }
            }
        }
        let c = rest.chars().next().unwrap_or_default();
        prev = Some(c);
        rest = &rest[c.len_utf8()..];
    }
    found
}

/// The text after a closing keyword at the start of `text`, its optional
/// colon and the whitespace that must follow.
fn keyword(text: &str) -> Option<&str> {
    let len = text
        .find(|c: char| !c.is_ascii_alphabetic())
        .unwrap_or(text.len());
    let candidate = &text[..len];
    if !KEYWORDS.iter().any(|k| k.eq_ignore_ascii_case(candidate)) {
        return None;
    }
    let after = &text[len..];
    let after = after.strip_prefix(':').unwrap_or(after);
    let trimmed = after.trim_start();
    (trimmed.len() < after.len()).then_some(trimmed)
}

/// The issue number of a reference to this repository at the start of
/// `text`: `#N`, `OWNER/REPO#N` or `HTML_URL/issues/N`.
fn reference(text: &str, full_name: &str, html_url: &str) -> Option<u64> {
    let html_url = html_url.trim_end_matches('/');
    let digits = if let Some(d) = text.strip_prefix('#') {
        d
    } else if let Some(d) = strip_prefix_ignore_case(text, &format!("{html_url}/issues/")) {
        d
    } else {
        let (repo, d) = text.split_once('#')?;
        if !repo.eq_ignore_ascii_case(full_name) {
            return None;
        }
        d
    };
    let len = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    let after = digits[len..].chars().next();
    if len == 0 || after.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '/') {
        return None;
    }
    digits[..len].parse().ok().filter(|&n| n > 0)
}

fn strip_prefix_ignore_case<'t>(text: &'t str, prefix: &str) -> Option<&'t str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

#[cfg(test)]
mod tests {
    use super::closing_issues;

    fn closes(body: &str) -> Vec<u64> {
        closing_issues(body, "acme/widgets", "https://github.com/acme/widgets")
    }

    #[test]
    fn every_keyword_in_any_case_with_an_optional_colon() {
        let body = "close #1\nCloses #2\nCLOSED #3\nfix #4\nFixes: #5\nfixed #6\n\
                    resolve #7\nResolves #8\nresolved:  #9";
        assert_eq!(closes(body), [1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn a_keyword_is_a_word_of_its_own_followed_by_whitespace() {
        assert!(closes("prefixes #1, unfixed #2, fixes#3, fixesx #4").is_empty());
        assert_eq!(closes("(fixes #5) and\tfixes\t#6."), [5, 6]);
    }

    #[test]
    fn without_a_keyword_a_mention_closes_nothing() {
        assert!(closes("see #142; relates to #7; part of acme/widgets#9").is_empty());
    }

    #[test]
    fn each_reference_needs_its_own_keyword() {
        assert_eq!(closes("Fixes #1, #2 and fixes #3"), [1, 3]);
    }

    #[test]
    fn references_to_this_repository_count_in_every_form() {
        assert_eq!(
            closes(
                "fixes acme/widgets#10, fixes ACME/Widgets#11, \
                 fixes https://github.com/acme/widgets/issues/12 fixes #10"
            ),
            [10, 11, 12]
        );
    }

    #[test]
    fn references_to_other_repositories_or_things_do_not() {
        let body = "fixes other/widgets#1, fixes acme/widgets-x#2, \
                    fixes https://github.com/other/widgets/issues/3, \
                    fixes https://github.com/acme/widgets/pull/4, fixes #5abc, fixes #0, \
                    fixes #, fixes https://github.com/acme/widgets/issues/6/x";
        assert!(closes(body).is_empty(), "{:?}", closes(body));
    }

    #[test]
    fn the_web_address_is_the_repositorys_own() {
        let enterprise = closing_issues(
            "Fixes https://ghe.example.com/acme/widgets/issues/4 and fixes https://github.com/acme/widgets/issues/5",
            "acme/widgets",
            "https://ghe.example.com/acme/widgets/",
        );
        assert_eq!(enterprise, [4]);
    }

    #[test]
    fn odd_text_is_read_without_panicking() {
        assert_eq!(closes("fixé #1 ✓fixes #2 fixes"), [2]);
        assert_eq!(closes("✓ fixes #2"), [2]);
        assert!(closes("").is_empty());
    }
}
