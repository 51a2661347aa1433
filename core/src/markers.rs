//! Marker blocks: the fenced JSON that carries maverick's state in comment
//! bodies (SPEC.md §3).
//!
//! A marker is a fenced code block tagged `maverick-<kind>`, normally after a
//! one-line HTML comment preamble:
//!
//! ````text
//! <!-- maverick epic-state snapshot -->
//!
//! ```maverick-state
//! {
//!   "epic": 123,
//!   "stories": {
//!     "140": "merged"
//!   },
//!   "updated_at": "2026-04-23T10:15:00Z"
//! }
//! ```
//! ````
//!
//! The format is the Maverick Python plugin's, so both tools read each
//! other's comments. Comment bodies come from anyone who can comment on an
//! issue, so parsing is total: every input yields markers or typed errors in
//! linear time, and never panics.

use std::fmt;
use std::ops::Range;
use std::str::FromStr;

use serde_json::{Map, Value};

/// Largest payload (the text between the fences) that is parsed at all.
pub const MAX_PAYLOAD_BYTES: usize = 16 * 1024;

/// The marker kinds maverick reads and writes; other `maverick-*` tags are ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MarkerKind {
    Dag,
    State,
    Claim,
    Lease,
    Bprop,
    TaskProgress,
    Dispatch,
    /// A claim its writer withdrew after losing a race: git maverick edits
    /// its own claim comment into one, so that no reader, Maverick's
    /// included, takes it for a claim any more (`maverick-withdrawn` is not
    /// `maverick-claim` to Maverick's fence pattern).
    Withdrawn,
}

impl MarkerKind {
    pub const ALL: [MarkerKind; 8] = [
        MarkerKind::Dag,
        MarkerKind::State,
        MarkerKind::Claim,
        MarkerKind::Lease,
        MarkerKind::Bprop,
        MarkerKind::TaskProgress,
        MarkerKind::Dispatch,
        MarkerKind::Withdrawn,
    ];

    /// The fence's info string, e.g. `maverick-state`.
    pub fn fence_tag(self) -> &'static str {
        match self {
            MarkerKind::Dag => "maverick-dag",
            MarkerKind::State => "maverick-state",
            MarkerKind::Claim => "maverick-claim",
            MarkerKind::Lease => "maverick-lease",
            MarkerKind::Bprop => "maverick-bprop",
            MarkerKind::TaskProgress => "maverick-task-progress",
            MarkerKind::Dispatch => "maverick-dispatch",
            MarkerKind::Withdrawn => "maverick-withdrawn",
        }
    }

    /// The short name used on the command line, e.g. `state`.
    pub fn name(self) -> &'static str {
        // Every fence tag is "maverick-" followed by the short name.
        &self.fence_tag()["maverick-".len()..]
    }

    /// Accepts the short name (`task-progress`) or the fence tag
    /// (`maverick-task-progress`).
    pub fn from_name(s: &str) -> Option<Self> {
        let short = s.strip_prefix("maverick-").unwrap_or(s);
        Self::ALL.into_iter().find(|kind| kind.name() == short)
    }

    /// The preamble's text without the comment delimiters; the Python plugin
    /// writes these exact lines, so they are kept byte for byte (its
    /// `gh-state write` of a dag names the fence tag after `maverick`).
    pub fn preamble(self) -> &'static str {
        match self {
            MarkerKind::Dag => "maverick maverick-dag",
            MarkerKind::State => "maverick epic-state snapshot",
            MarkerKind::Claim => "maverick claim",
            MarkerKind::Lease => "maverick lease",
            MarkerKind::Bprop => "maverick bprop",
            MarkerKind::TaskProgress => "maverick task-progress",
            MarkerKind::Dispatch => "maverick dispatch",
            MarkerKind::Withdrawn => "maverick claim withdrawn",
        }
    }

    fn from_fence_tag(tag: &str) -> Option<Self> {
        if !tag.starts_with("maverick-") {
            return None;
        }
        Self::ALL.into_iter().find(|kind| kind.fence_tag() == tag)
    }
}

impl fmt::Display for MarkerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A marker kind name that is none of [`MarkerKind::ALL`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownMarkerKind(pub String);

impl fmt::Display for UnknownMarkerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown marker kind `{}` (expected one of:", self.0)?;
        for (index, kind) in MarkerKind::ALL.into_iter().enumerate() {
            let separator = if index == 0 { " " } else { ", " };
            write!(f, "{separator}{kind}")?;
        }
        f.write_str(")")
    }
}

impl std::error::Error for UnknownMarkerKind {}

impl FromStr for MarkerKind {
    type Err = UnknownMarkerKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::from_name(s).ok_or_else(|| UnknownMarkerKind(s.to_owned()))
    }
}

/// One marker block: its kind and its JSON object, unknown fields included,
/// so that rewriting a marker written by a newer tool loses nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Marker {
    pub kind: MarkerKind,
    pub payload: Map<String, Value>,
}

impl Marker {
    pub fn new(kind: MarkerKind, payload: Map<String, Value>) -> Self {
        Marker { kind, payload }
    }

    /// The payload's `marker_id`, whatever its kind (every kind carries
    /// one when git maverick wrote it): what tells a comment a retried POST
    /// created twice. The kind's own fields: [`crate::payloads`].
    pub fn marker_id(&self) -> Option<&str> {
        self.payload.get("marker_id")?.as_str()
    }

    /// When the marker was written, as its `updated_at` says (every kind
    /// that is upserted carries one), read alone: a payload whose other
    /// fields do not fit its kind still says when it was written.
    pub fn updated_at(&self) -> Option<crate::timefmt::Timestamp> {
        crate::timefmt::Timestamp::parse(self.payload.get("updated_at")?.as_str()?)
    }
}

/// Why one `maverick-<kind>` block did not yield a marker.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MarkerError {
    #[error("`{}` payload is {bytes} bytes, over the {MAX_PAYLOAD_BYTES}-byte limit", .kind.fence_tag())]
    TooLarge { kind: MarkerKind, bytes: usize },
    #[error("`{}` payload is not valid JSON: {message}", .kind.fence_tag())]
    InvalidJson { kind: MarkerKind, message: String },
    #[error("`{}` payload is not a JSON object", .kind.fence_tag())]
    NotAnObject { kind: MarkerKind },
    #[error("`{}` block is never closed: no closing fence before the end of the comment", .kind.fence_tag())]
    Unterminated { kind: MarkerKind },
}

impl MarkerError {
    pub fn kind(&self) -> MarkerKind {
        match self {
            MarkerError::TooLarge { kind, .. }
            | MarkerError::InvalidJson { kind, .. }
            | MarkerError::NotAnObject { kind }
            | MarkerError::Unterminated { kind } => *kind,
        }
    }
}

/// Every block of a known kind, in order of appearance. Unknown
/// `maverick-*` tags and ordinary code blocks are skipped.
pub fn parse_markers(body: &str) -> Vec<Result<Marker, MarkerError>> {
    scan(body).blocks.iter().map(MarkerBlock::parse).collect()
}

/// The marker of `kind` in a comment: its first block of the kind, as
/// Maverick reads it (SPEC 3), so both tools see one value per comment.
/// `None` when there is no such block or the first one is malformed.
pub fn find_marker(body: &str, kind: MarkerKind) -> Option<Marker> {
    scan(body)
        .blocks
        .iter()
        .find(|block| block.kind == kind)
        .and_then(|block| block.parse().ok())
}

/// The markers a comment holds, one per kind, in order of appearance: of
/// each kind its first block, as [`find_marker`] reads it (none of the kind
/// when that block is malformed).
pub fn first_of_each_kind(body: &str) -> Vec<Marker> {
    let mut seen = Vec::new();
    scan(body)
        .blocks
        .iter()
        .filter(|block| {
            let first = !seen.contains(&block.kind);
            seen.push(block.kind);
            first
        })
        .filter_map(|block| block.parse().ok())
        .collect()
}

/// Whether Maverick finds a block of `kind` in `body`, malformed or not:
/// its pattern is ``` ```KIND\s*\n(.*?)\n``` ``` searched anywhere in the
/// text (Maverick 5.1.1, `gh_state.py` `_fence_pattern`), so it also finds a
/// block quoted inside another code block and misses `~~~` fences, an info
/// string after the tag, and a blockquoted or indented closing fence.
pub fn maverick_reads_block(body: &str, kind: MarkerKind) -> bool {
    let opener = format!("```{}", kind.fence_tag());
    // One search for the last closing line keeps this linear in the body.
    let Some(last_close) = body.rfind("\n```") else {
        return false;
    };
    body.match_indices(&opener).any(|(at, _)| {
        let start = at + opener.len();
        let rest = &body[start..];
        let blank = rest.len() - rest.trim_start().len();
        // `\s*\n`: the whitespace after the tag must hold a newline; the
        // payload may start after the first one, and ends at a later
        // newline followed by three backticks.
        rest[..blank]
            .find('\n')
            .is_some_and(|newline| last_close > start + newline)
    })
}

/// The fields of a typed payload as a marker's map, to write as they are
/// or to merge into a payload read back (whose unknown fields stay).
pub fn payload_of(fields: &impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(fields) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

/// The preamble, a blank line and the fenced payload, byte for byte as the
/// Python plugin writes it (`gh_state.format_marker` after its preamble):
/// `json.dumps(indent=2, sort_keys=True)`, which escapes every non-ASCII
/// character, and no newline after the closing fence. A body either tool
/// rewrites therefore changes only where the payload does.
pub fn render_marker(marker: &Marker) -> String {
    render_with_preamble(marker, marker.kind.preamble())
}

/// [`render_marker`] with another preamble, such as Maverick's
/// `maverick lease released: REASON`.
pub fn render_with_preamble(marker: &Marker, preamble: &str) -> String {
    format!(
        "<!-- {preamble} -->\n\n```{}\n{}\n```",
        marker.kind.fence_tag(),
        python_json(&marker.payload)
    )
}

/// Python's `json.dumps(value, indent=2, sort_keys=True)`.
fn python_json(payload: &Map<String, Value>) -> String {
    // Keys come out sorted because serde_json's `Map` is a `BTreeMap` unless
    // its `preserve_order` feature is on; a test pins this.
    let mut out = Vec::new();
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, PythonFormatter::new());
    serde::Serialize::serialize(payload, &mut serializer)
        .expect("a map with string keys always serializes");
    String::from_utf8(out).expect("the formatter writes ASCII")
}

/// serde_json's pretty printer with Python's `ensure_ascii`: every
/// character outside printable ASCII becomes `\uXXXX` (a surrogate pair
/// above the BMP), as `json.dumps` writes it.
struct PythonFormatter(serde_json::ser::PrettyFormatter<'static>);

impl PythonFormatter {
    fn new() -> Self {
        PythonFormatter(serde_json::ser::PrettyFormatter::with_indent(b"  "))
    }
}

impl serde_json::ser::Formatter for PythonFormatter {
    fn begin_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn begin_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + std::io::Write>(&mut self, w: &mut W) -> std::io::Result<()> {
        self.0.end_object_value(w)
    }
    fn write_string_fragment<W: ?Sized + std::io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> std::io::Result<()> {
        for c in fragment.chars() {
            if matches!(c, ' '..='~') {
                w.write_all(&[c as u8])?;
            } else {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(w, "\\u{unit:04x}")?;
                }
            }
        }
        Ok(())
    }
}

/// Replace the first block of the marker's kind (its preamble included) with
/// the rendering of `marker`, keeping every other byte of `body`; append the
/// rendering when there is no such block.
///
/// An unterminated block of the kind runs to the end of the body, as it does
/// when GitHub renders it, so the whole of it is replaced. When the body ends
/// inside some other open fence, that fence is closed before appending, or
/// the new marker would be swallowed by it.
pub fn replace_marker(body: &str, marker: &Marker) -> String {
    let scanned = scan(body);
    let first = scanned.blocks.iter().find(|b| b.kind == marker.kind);
    replace_block(body, &scanned, first, marker)
}

fn replace_block(
    body: &str,
    scanned: &Scan<'_>,
    block: Option<&MarkerBlock<'_>>,
    marker: &Marker,
) -> String {
    if let Some(block) = block {
        let mut rendered = with_line_ending(render_marker(marker), block.crlf);
        if block.ends_with_newline {
            rendered.push_str(if block.crlf { "\r\n" } else { "\n" });
        }
        let mut out = String::with_capacity(body.len() + rendered.len());
        out.push_str(&body[..block.span.start]);
        out.push_str(&rendered);
        out.push_str(&body[block.span.end..]);
        return out;
    }

    let crlf = uses_crlf(body);
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut out = String::with_capacity(body.len() + 256);
    out.push_str(body);
    if let Some(fence) = scanned.open_fence {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push_str(eol);
        }
        for _ in 0..fence.len {
            out.push(char::from(fence.ch));
        }
        out.push_str(eol);
    }
    if !out.is_empty() {
        if !out.ends_with('\n') {
            out.push_str(eol);
        }
        if !ends_with_blank_line(&out) {
            out.push_str(eol);
        }
    }
    out.push_str(&with_line_ending(render_marker(marker), crlf));
    out
}

/// A fence as opened: the character and how many of it, since only a run at
/// least as long closes it.
#[derive(Clone, Copy, Debug)]
struct Fence {
    ch: u8,
    len: usize,
}

/// A `maverick-<known kind>` block as found in a body.
#[derive(Debug)]
struct MarkerBlock<'a> {
    kind: MarkerKind,
    /// From the preamble (or the opening fence when there is none) through
    /// the closing fence's line ending; to the end of the body when
    /// unterminated.
    span: Range<usize>,
    /// The text between the fences; `None` when the fence is never closed.
    payload: Option<&'a str>,
    crlf: bool,
    ends_with_newline: bool,
}

impl MarkerBlock<'_> {
    fn parse(&self) -> Result<Marker, MarkerError> {
        let kind = self.kind;
        let payload = self.payload.ok_or(MarkerError::Unterminated { kind })?;
        if payload.len() > MAX_PAYLOAD_BYTES {
            return Err(MarkerError::TooLarge {
                kind,
                bytes: payload.len(),
            });
        }
        match serde_json::from_str(payload) {
            Ok(Value::Object(map)) => Ok(Marker::new(kind, map)),
            Ok(_) => Err(MarkerError::NotAnObject { kind }),
            Err(err) => Err(MarkerError::InvalidJson {
                kind,
                message: err.to_string(),
            }),
        }
    }
}

#[derive(Debug, Default)]
struct Scan<'a> {
    blocks: Vec<MarkerBlock<'a>>,
    /// The fence still open at the end of the body, of whatever tag.
    open_fence: Option<Fence>,
}

/// One line of a body: `text` without its `\n` or `\r\n`.
struct Line<'a> {
    start: usize,
    end: usize,
    text: &'a str,
    crlf: bool,
    has_newline: bool,
}

fn lines(body: &str) -> Lines<'_> {
    Lines { body, pos: 0 }
}

/// Like `str::split_inclusive('\n')`, but also yielding offsets and the
/// line ending, which every caller needs.
struct Lines<'a> {
    body: &'a str,
    pos: usize,
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        let bytes = self.body.as_bytes();
        let start = self.pos;
        if start >= bytes.len() {
            return None;
        }
        // A byte search: `str::find`'s generic searcher is the simulator's
        // hottest loop in the unoptimised test build.
        let newline = bytes[start..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |at| start + at);
        let has_newline = newline < bytes.len();
        let crlf = has_newline && newline > start && bytes[newline - 1] == b'\r';
        let text_end = if crlf { newline - 1 } else { newline };
        self.pos = if has_newline { newline + 1 } else { newline };
        // `\n` and `\r` are ASCII, so every index here is a char boundary.
        Some(Line {
            start,
            end: self.pos,
            text: &self.body[start..text_end],
            crlf,
            has_newline,
        })
    }
}

/// A single pass over the lines, tracking only "inside which fence": the
/// CommonMark rules that decide where a marker is, and nothing that could
/// make the pass superlinear.
fn scan(body: &str) -> Scan<'_> {
    struct Open {
        fence: Fence,
        kind: Option<MarkerKind>,
        span_start: usize,
        payload_start: usize,
        crlf: bool,
    }

    let mut scanned = Scan::default();
    let mut open: Option<Open> = None;
    // Where a `<!-- maverick … -->` line that only blank lines separate from
    // the next fence starts: it belongs to that fence's block.
    let mut preamble_start: Option<usize> = None;

    for line in lines(body) {
        match &open {
            Some(current) => {
                if closes(line.text, current.fence) {
                    if let Some(kind) = current.kind {
                        scanned.blocks.push(MarkerBlock {
                            kind,
                            span: current.span_start..line.end,
                            payload: Some(&body[current.payload_start..line.start]),
                            crlf: current.crlf,
                            ends_with_newline: line.has_newline,
                        });
                    }
                    open = None;
                }
            }
            None => {
                if let Some((fence, info)) = opening_fence(line.text) {
                    let kind = MarkerKind::from_fence_tag(fence_tag(info));
                    open = Some(Open {
                        fence,
                        kind,
                        span_start: preamble_start.unwrap_or(line.start),
                        payload_start: line.end,
                        crlf: line.crlf,
                    });
                    preamble_start = None;
                } else if is_preamble(line.text) {
                    preamble_start = Some(line.start);
                } else if !line.text.trim_ascii().is_empty() {
                    preamble_start = None;
                }
            }
        }
    }

    if let Some(current) = open {
        if let Some(kind) = current.kind {
            scanned.blocks.push(MarkerBlock {
                kind,
                span: current.span_start..body.len(),
                payload: None,
                crlf: current.crlf,
                ends_with_newline: body.ends_with('\n'),
            });
        }
        scanned.open_fence = Some(current.fence);
    }
    scanned
}

/// The line without its indentation, when that is at most three spaces:
/// four would make an indented code block, and a `>` makes a block quote,
/// neither of which opens or closes a fence.
fn strip_fence_indent(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    let mut indent = 0;
    while indent < bytes.len() && bytes[indent] == b' ' {
        if indent == 3 {
            return None;
        }
        indent += 1;
    }
    Some(&line[indent..])
}

fn fence_run(rest: &str, ch: u8) -> usize {
    let bytes = rest.as_bytes();
    let mut len = 0;
    while len < bytes.len() && bytes[len] == ch {
        len += 1;
    }
    len
}

fn opening_fence(line: &str) -> Option<(Fence, &str)> {
    let rest = strip_fence_indent(line)?;
    let ch = *rest.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = fence_run(rest, ch);
    if len < 3 {
        return None;
    }
    // The run is ASCII, so `len` is a char boundary.
    let info = rest[len..].trim_ascii();
    // CommonMark: a backtick in a backtick fence's info string makes the line
    // inline code, not a fence.
    if ch == b'`' && info.as_bytes().contains(&b'`') {
        return None;
    }
    Some((Fence { ch, len }, info))
}

/// The info string's first word, which names the language or, for us, the kind.
fn fence_tag(info: &str) -> &str {
    let end = info
        .as_bytes()
        .iter()
        .position(u8::is_ascii_whitespace)
        .unwrap_or(info.len());
    &info[..end]
}

fn closes(line: &str, fence: Fence) -> bool {
    let Some(rest) = strip_fence_indent(line) else {
        return false;
    };
    let len = fence_run(rest, fence.ch);
    len >= fence.len && rest[len..].trim_ascii().is_empty()
}

fn is_preamble(line: &str) -> bool {
    line.trim_ascii()
        .strip_prefix("<!--")
        .and_then(|inner| inner.strip_suffix("-->"))
        .is_some_and(|inner| inner.trim_start().starts_with("maverick"))
}

fn uses_crlf(body: &str) -> bool {
    body.find('\n').is_some_and(|at| body[..at].ends_with('\r'))
}

fn ends_with_blank_line(text: &str) -> bool {
    text.ends_with("\n\n") || text.ends_with("\n\r\n")
}

/// Rendered markers use `\n`; a CRLF body gets `\r\n` so its line endings
/// stay uniform. JSON strings escape newlines, so every `\n` is a line end.
fn with_line_ending(rendered: String, crlf: bool) -> String {
    if crlf {
        rendered.replace('\n', "\r\n")
    } else {
        rendered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updated_at_is_read_alone() {
        let marker =
            |payload: Value| Marker::new(MarkerKind::Dag, payload.as_object().unwrap().clone());
        // A story of the wrong type does not hide when the marker was written.
        let odd = marker(serde_json::json!({"stories": 7, "updated_at": "2026-12-01T10:00:00Z"}));
        assert_eq!(
            odd.updated_at(),
            crate::timefmt::Timestamp::parse("2026-12-01T10:00:00Z")
        );
        assert_eq!(
            marker(serde_json::json!({"updated_at": 5})).updated_at(),
            None
        );
        assert_eq!(marker(serde_json::json!({})).updated_at(), None);
    }

    #[test]
    fn names_and_tags_round_trip() {
        for kind in MarkerKind::ALL {
            assert_eq!(kind.fence_tag(), format!("maverick-{}", kind.name()));
            assert_eq!(MarkerKind::from_name(kind.name()), Some(kind));
            assert_eq!(MarkerKind::from_name(kind.fence_tag()), Some(kind));
            assert_eq!(kind.to_string().parse::<MarkerKind>(), Ok(kind));
            assert!(kind.preamble().starts_with("maverick "));
        }
        assert_eq!(MarkerKind::from_name("maverick-"), None);
        assert_eq!(MarkerKind::from_name("State"), None);
        let err = "nope".parse::<MarkerKind>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown marker kind `nope` (expected one of: dag, state, claim, lease, bprop, task-progress, dispatch, withdrawn)"
        );
    }

    #[test]
    fn opening_fences_follow_commonmark() {
        assert!(opening_fence("```maverick-claim").is_some());
        assert!(opening_fence("   ~~~~ maverick-claim extra").is_some());
        assert!(opening_fence("    ```maverick-claim").is_none());
        assert!(opening_fence("> ```maverick-claim").is_none());
        assert!(opening_fence("``maverick-claim").is_none());
        assert!(opening_fence("```maverick-claim` inline").is_none());
        assert!(opening_fence("~~~ `ok` for tildes").is_some());
        assert!(opening_fence("").is_none());
    }

    #[test]
    fn closing_fence_needs_a_long_enough_run_of_the_same_char() {
        let backticks = Fence { ch: b'`', len: 4 };
        assert!(closes("````", backticks));
        assert!(closes("   `````  \t", backticks));
        assert!(!closes("```", backticks));
        assert!(!closes("~~~~", backticks));
        assert!(!closes("```` text", backticks));
        assert!(!closes("    ````", backticks));
    }

    #[test]
    fn lines_strip_lf_and_crlf_only() {
        let collected: Vec<_> = lines("a\r\nb\nc\r")
            .map(|l| (l.text, l.crlf, l.has_newline))
            .collect();
        assert_eq!(
            collected,
            [("a", true, true), ("b", false, true), ("c\r", false, false)]
        );
    }

    /// Each body against Maverick 5.1.1's own pattern, as Python's `re`
    /// answers for ```` ```maverick-lease\s*\n(.*?)\n``` ```` (DOTALL).
    #[test]
    fn maverick_reads_blocks_as_its_pattern_finds_them() {
        for (body, found) in [
            ("```maverick-lease\n{}\n```", true),
            ("```maverick-lease   \n{}\n```", true),
            ("```maverick-lease\r\n{}\r\n```", true),
            ("see: ```maverick-lease\n{}\n```", true),
            ("````maverick-lease\n{}\n````", true),
            ("````markdown\n```maverick-lease\n{}\n```\n````", true),
            ("```maverick-lease\n\n```", true),
            ("```maverick-lease\n\n\n{}\n```", true),
            ("```maverick-lease\n```", false),
            ("~~~maverick-lease\n{}\n~~~", false),
            ("```maverick-lease json\n{}\n```", false),
            ("``` maverick-lease\n{}\n```", false),
            ("```Maverick-Lease\n{}\n```", false),
            ("```maverick-leasex\n{}\n```", false),
            ("```maverick-lease\n{}```", false),
            ("```maverick-lease\n{}\n", false),
            ("> ```maverick-lease\n> {}\n> ```", false),
            ("    ```maverick-lease\n    {}\n    ```", false),
        ] {
            assert_eq!(
                maverick_reads_block(body, MarkerKind::Lease),
                found,
                "{body:?}"
            );
        }
        assert!(!maverick_reads_block(
            "```maverick-withdrawn\n{}\n```",
            MarkerKind::Claim
        ));
    }
}
