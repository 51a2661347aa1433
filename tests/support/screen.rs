//! A finished run as a snapshot keeps it: [`screen`] (a maverick run) and
//! [`git_screen`] (a git command, e.g. a push through the pre-push hook)
//! give the exit status, stdout (a JSON output pretty-printed) and stderr,
//! with what differs from run to run or machine to machine replaced by a
//! placeholder, so one snapshot holds for every run, every machine and,
//! where the screens agree, every surface and kind of repository:
//!
//! - the test's temp dir: `[ROOT]`; object names: `[oid]` (40 or 64 hex
//!   digits, so SHA-1 and SHA-256 repos agree) and `[short-oid]`
//!   ([`TestEnv::normalise`], the one path and object-name normaliser);
//! - timestamps (`2026-12-03T16:04:37Z`, with fractions or an offset):
//!   `[TIME]`;
//! - durations (`14m`, `2h5m`, `1d`, `3s`, `120ms`, `0.25s`): `[DUR]`;
//! - the fake GitHub's port (`127.0.0.1:43517`): `127.0.0.1:[PORT]`;
//! - comment ids (`comment 2200000001` on GitHub, `comment 1` on git):
//!   `comment [ID]`; process ids (`pid 4242`, `process 4242`): `pid [PID]`,
//!   `process [PID]`;
//! - the system's error numbers (`os error 111`, which is 61 on macOS):
//!   `os error [ERRNO]`.
//!
//! Issue numbers, exit statuses, counts and words made of hex letters stay.
//! A duration that is the same on every run (a setting, a value the test
//! typed) stays as printed where the test names it ([`screen_keeping`]).

use std::process::Output;

use super::{Run, TestEnv};

/// What a person saw of a maverick run, normalised for a snapshot.
pub fn screen(env: &TestEnv, run: &Run) -> String {
    screen_naming(env, run, &[])
}

/// [`screen`], with each given value (an object name the test knows, say)
/// shown as its name first, so the snapshot tells which one was printed.
pub fn screen_naming(env: &TestEnv, run: &Run, names: &[(&str, &str)]) -> String {
    layout(env, run.code, &run.stdout, &run.stderr, names)
}

/// [`screen`] of the stderr lines `keep` keeps: for a line that a race or
/// another program decides (the wrapped command's own output, a shell's
/// report of a killed child), which the test checks on its own or not at all.
pub fn screen_of_lines(env: &TestEnv, run: &Run, keep: impl Fn(&str) -> bool) -> String {
    let stderr: String = run
        .stderr
        .lines()
        .filter(|l| keep(l))
        .map(|l| format!("{l}\n"))
        .collect();
    layout(env, run.code, &run.stdout, &stderr, &[])
}

/// [`screen`], with each given text (a fixed duration such as `at least
/// 1s` or `maxClockSkew is 5m`) kept as printed: the placeholders above
/// are not applied inside it.
pub fn screen_keeping(env: &TestEnv, run: &Run, kept: &[&str]) -> String {
    let token = |i: usize| format!("\u{1}kept{i}\u{1}");
    let names: Vec<(&str, String)> = kept
        .iter()
        .enumerate()
        .map(|(i, k)| (*k, token(i)))
        .collect();
    let names: Vec<(&str, &str)> = names.iter().map(|(k, t)| (*k, t.as_str())).collect();
    let mut text = screen_naming(env, run, &names);
    for (i, k) in kept.iter().enumerate() {
        text = text.replace(&token(i), k);
    }
    text
}

/// What a person saw of a git command (a push the hook checked), normalised.
pub fn git_screen(env: &TestEnv, out: &Output) -> String {
    git_screen_naming(env, out, &[])
}

/// [`git_screen`], with each given value shown as its name.
pub fn git_screen_naming(env: &TestEnv, out: &Output, names: &[(&str, &str)]) -> String {
    layout(
        env,
        out.status.code().unwrap_or(-1),
        &String::from_utf8_lossy(&out.stdout),
        &String::from_utf8_lossy(&out.stderr),
        names,
    )
}

/// Several screens as one snapshot, each under the command that made it.
pub fn screens(parts: &[(&str, String)]) -> String {
    parts
        .iter()
        .map(|(command, screen)| format!("$ {command}\n{screen}"))
        .collect::<Vec<_>>()
        .join("\n")
}

fn layout(env: &TestEnv, code: i32, stdout: &str, stderr: &str, names: &[(&str, &str)]) -> String {
    let stdout = pretty_json(stdout).unwrap_or_else(|| stdout.to_owned());
    let mut text = format!("[exit status: {code}]\n");
    for (name, stream) in [("stdout", stdout.as_str()), ("stderr", stderr)] {
        if stream.is_empty() {
            text.push_str(&format!("--- {name}: empty\n"));
        } else {
            text.push_str(&format!("--- {name}\n{stream}"));
            if !stream.ends_with('\n') {
                text.push_str("\n[no newline at end]\n");
            }
        }
    }
    for (value, name) in names {
        text = replace_word(&text, value, name);
    }
    normalise(env, &text)
}

/// `value` to `name` where it stands as a word of its own (not the start
/// of a longer object name or number).
fn replace_word(text: &str, value: &str, name: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    let inside = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
    while let Some(at) = rest.find(value) {
        let before = rest[..at].chars().last().or(out.chars().last());
        let after = rest[at + value.len()..].chars().next();
        out.push_str(&rest[..at]);
        if inside(before) || inside(after) {
            out.push_str(value);
        } else {
            out.push_str(name);
        }
        rest = &rest[at + value.len()..];
    }
    out.push_str(rest);
    out
}

/// A stream that is one JSON value, pretty-printed (keys in order, as
/// serde_json's map keeps them); `None` when it is not.
fn pretty_json(stream: &str) -> Option<String> {
    let trimmed = stream.trim();
    if !trimmed.starts_with(['{', '[']) {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(trimmed).ok()?;
    Some(serde_json::to_string_pretty(&value).expect("JSON prints") + "\n")
}

/// Every placeholder of this module's doc, applied to `text`.
pub fn normalise(env: &TestEnv, text: &str) -> String {
    let text = env.normalise(&marker_ids(&without_colour(text)));
    let text = ports(&text);
    let text = numbered(&text, "comment ", "[ID]");
    let text = numbered(&text, "\"comment_id\": ", "\"[ID]\"");
    let text = numbered(&text, "pid ", "[PID]");
    let text = numbered(&text, "os error ", "[ERRNO]");
    let text = numbered(&text, "(process ", "[PID]");
    let text = hosts(&text);
    let text = holder_hosts(&text);
    let text = words(&text);
    spelled_durations(&text)
}

/// A number followed by a spelled-out unit (`0.02 seconds`, as hook
/// managers time themselves): the number to `[DUR]`.
fn spelled_durations(text: &str) -> String {
    let mut out = text.to_owned();
    for unit in [" seconds", " second", " ms"] {
        let mut rest = out.as_str();
        let mut done = String::with_capacity(out.len());
        while let Some(at) = rest.find(unit) {
            let before = &rest[..at];
            let number = before.len()
                - before
                    .trim_end_matches(|c: char| c.is_ascii_digit() || c == '.')
                    .len();
            let starts_word = before[..before.len() - number]
                .chars()
                .last()
                .is_none_or(|c| !c.is_ascii_alphanumeric());
            if number > 0 && starts_word {
                done.push_str(&before[..before.len() - number]);
                done.push_str("[DUR]");
            } else {
                done.push_str(before);
            }
            done.push_str(unit);
            rest = &rest[at + unit.len()..];
        }
        done.push_str(rest);
        out = done;
    }
    out
}

/// Marker ids (32 random hex digits, `markers::new_marker_id`) to
/// `[marker-id]`, before object names would take them for abbreviated ones.
fn marker_ids(text: &str) -> String {
    super::replace_words(text, |word| {
        let id = word.len() == 32 && word.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        id.then_some("[marker-id]")
    })
}

/// Terminal colours (`ESC [ ... m`, as lefthook prints them even to a
/// pipe) taken out: a snapshot keeps the text.
fn without_colour(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\u{1b}[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let end = after
            .find(|c: char| c.is_ascii_alphabetic())
            .map_or(after.len(), |i| i + 1);
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The machine's name, which records carry (`"host": "..."`), to `[HOST]`.
fn hosts(text: &str) -> String {
    let key = "\"host\": \"";
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(key) {
        let after = &rest[at + key.len()..];
        let Some(end) = after.find('"') else { break };
        out.push_str(&rest[..at + key.len()]);
        out.push_str("[HOST]");
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The machine's name where a holder is shown (`alice on vm as
/// @octocat`) to `[HOST]`.
fn holder_hosts(text: &str) -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let host = host.trim().split('.').next().unwrap_or_default();
    if host.is_empty() {
        return text.to_owned();
    }
    let key = format!(" on {host}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(&key) {
        let after = &rest[at + key.len()..];
        out.push_str(&rest[..at]);
        if after.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '-') {
            out.push_str(&key);
        } else {
            out.push_str(" on [HOST]");
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// `127.0.0.1:PORT` and `localhost:PORT` to `[PORT]`.
fn ports(text: &str) -> String {
    let text = numbered(text, "127.0.0.1:", "[PORT]");
    numbered(&text, "localhost:", "[PORT]")
}

/// The digits right after each `prefix` to `placeholder`.
fn numbered(text: &str, prefix: &str, placeholder: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let after = &rest[at + prefix.len()..];
        let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        out.push_str(&rest[..at + prefix.len()]);
        if digits > 0 {
            out.push_str(placeholder);
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// Timestamps and durations, word by word: a word is a run of characters
/// other than space, quotes, brackets and separators.
fn words(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut word = String::new();
    let is_word = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | ':' | '.' | '+');
    for c in text.chars() {
        if is_word(c) {
            word.push(c);
        } else {
            out.push_str(&placeholder(&word));
            word.clear();
            out.push(c);
        }
    }
    out.push_str(&placeholder(&word));
    out
}

fn placeholder(word: &str) -> String {
    // Trailing punctuation of a sentence stays outside the placeholder.
    let core = word.trim_end_matches(['.', ':']);
    let tail = &word[core.len()..];
    if is_timestamp(core) {
        format!("[TIME]{tail}")
    } else if is_version(core) {
        format!("v[VERSION]{tail}")
    } else if is_duration(core) {
        format!("[DUR]{tail}")
    } else {
        word.to_owned()
    }
}

/// A tool's version, `v2.2.2` (a hook manager's banner; the registries'
/// newest is what `scripts/test.sh` installs).
fn is_version(word: &str) -> bool {
    word.strip_prefix('v').is_some_and(|v| {
        v.split('.').count() >= 2
            && v.split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
    })
}

/// `YYYY-MM-DDTHH:MM:SS`, then optional fractions, then `Z` or an offset.
fn is_timestamp(word: &str) -> bool {
    let b = word.as_bytes();
    let digits = |range: std::ops::Range<usize>| range.into_iter().all(|i| b[i].is_ascii_digit());
    b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
}

/// A duration: digits and units (`h`, `m`, `s`, `ms`), e.g. `14m`, `2h5m`,
/// `120ms`, `0.25s`; a bare number is not one.
fn is_duration(word: &str) -> bool {
    let mut rest = word;
    let mut parts = 0;
    while !rest.is_empty() {
        let number = rest.len()
            - rest
                .trim_start_matches(|c: char| c.is_ascii_digit() || c == '.')
                .len();
        if number == 0 || rest[..number].starts_with('.') || rest[..number].ends_with('.') {
            return false;
        }
        rest = &rest[number..];
        let unit = ["ms", "d", "h", "m", "s"]
            .into_iter()
            .find(|u| rest.starts_with(u));
        match unit {
            Some(unit) => rest = &rest[unit.len()..],
            None => return false,
        }
        parts += 1;
    }
    parts > 0
}

#[test]
fn what_changes_from_run_to_run_becomes_a_placeholder() {
    let env = TestEnv::new();
    let text = "lease 9m left (expires 2026-12-03T16:04:37Z, 2026-12-03T16:04:37.123+00:00.)\n\
                took 120ms, 0.25s or 2h5m; 3 tasks, #142, v1.2, 5m-ish, m5\n\
                \u{1b}[38;2;56;56;56m lefthook v2.2.2\u{1b}[m\n\
                done in 0.02 seconds, 12 ms\n\
                GET http://127.0.0.1:43517/repos: comment 2200000001 by pid 4242 (process 4243, os error 111)\n\
                marker 0123456789abcdef0123456789abcdef, \"host\": \"vm\"\n";
    assert_eq!(
        normalise(&env, text),
        "lease [DUR] left (expires [TIME], [TIME].)\n\
         took [DUR], [DUR] or [DUR]; 3 tasks, #142, v[VERSION], 5m-ish, m5\n\
         \u{20}lefthook v[VERSION]\n\
         done in [DUR] seconds, [DUR] ms\n\
         GET http://127.0.0.1:[PORT]/repos: comment [ID] by pid [PID] (process [PID], os error [ERRNO])\n\
         marker [marker-id], \"host\": \"[HOST]\"\n"
    );
}

#[test]
fn a_kept_text_escapes_the_placeholders() {
    let env = TestEnv::new();
    let run = Run {
        args: vec![],
        code: 2,
        stdout: String::new(),
        stderr: "'500ms': at least 1s; 3s left\n".to_owned(),
    };
    assert_eq!(
        screen_keeping(&env, &run, &["'500ms'", "at least 1s"]),
        "[exit status: 2]\n--- stdout: empty\n--- stderr\n'500ms': at least 1s; [DUR] left\n"
    );
}

#[test]
fn a_named_value_is_named_only_as_a_word_of_its_own() {
    assert_eq!(
        replace_word("d739c9f d739c9f0e1 (d739c9f) xd739c9f", "d739c9f", "[two]"),
        "[two] d739c9f0e1 ([two]) xd739c9f"
    );
}

#[test]
fn a_screen_has_the_exit_status_both_streams_and_pretty_json() {
    let env = TestEnv::new();
    let run = Run {
        args: vec![],
        code: 3,
        stdout: "{\"ok\":false,\"at\":\"2026-12-03T16:04:37Z\"}\n".to_owned(),
        stderr: String::new(),
    };
    assert_eq!(
        screen(&env, &run),
        "[exit status: 3]\n--- stdout\n{\n  \"at\": \"[TIME]\",\n  \"ok\": false\n}\n--- stderr: empty\n"
    );
}
