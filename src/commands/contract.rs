//! The `--json` contract (SPEC 10, README "JSON output"), typed once: the
//! fields every object carries, the error object, warnings, and what a
//! command comes to before it is printed.
//!
//! Every command's object is an [`Envelope`] around the command's own
//! output type; `schemas/` is generated from those types
//! ([`super::schemas`]), so what a program reads is what the schema says.

use std::fmt;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};

pub(crate) use crate::commands::error::Warning;
use crate::commands::error::{CommandError, ErrorCode, Exit};

/// The version of the JSON contract (`schemas/`, README "JSON output"):
/// additive fields keep it; a rename or a removal bumps it.
pub(crate) const SCHEMA_VERSION: u32 = 1;

/// `schema_version`: always [`SCHEMA_VERSION`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SchemaVersion;

impl Serialize for SchemaVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u32(SCHEMA_VERSION)
    }
}

impl JsonSchema for SchemaVersion {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "SchemaVersion".into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "const": SCHEMA_VERSION })
    }
}

// One `--json` object: the contract's fields, and the command's own
// (`body`) beside them. `C` is the type of `exit_code`: SPEC 10's codes
// ([`Exit`]), or a wrapped program's own status (`run`).
#[derive(Debug, Serialize, JsonSchema)]
#[schemars(inline)]
pub(crate) struct Envelope<T, C = Exit> {
    pub schema_version: SchemaVersion,
    /// Whether the exit code is 0.
    pub ok: bool,
    pub exit_code: C,
    /// What did not stop the command, each also a `warning:` line on stderr.
    pub warnings: Vec<Warning>,
    #[serde(flatten)]
    pub body: T,
}

impl<T, C: Copy + Into<u8>> Envelope<T, C> {
    pub(crate) fn new(exit_code: C, warnings: Vec<Warning>, body: T) -> Envelope<T, C> {
        Envelope {
            schema_version: SchemaVersion,
            ok: exit_code.into() == 0,
            exit_code,
            warnings,
            body,
        }
    }
}

/// What a failed command prints with `--json`.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Failure {
    pub error: ErrorObject,
}

/// `error`: what a program switches on (`code`), what failed and why, and
/// the way out.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ErrorObject {
    pub code: ErrorCode,
    pub message: String,
    /// The error's sources, outermost first.
    pub causes: Vec<String>,
    /// Commands that get the user out.
    pub hints: Vec<String>,
}

impl Failure {
    pub(crate) fn of(err: &CommandError) -> Envelope<Failure> {
        Envelope::new(
            err.exit,
            err.warnings.clone(),
            Failure {
                error: ErrorObject {
                    code: err.code,
                    message: err.message(),
                    causes: err.causes(),
                    hints: err.hints.clone(),
                },
            },
        )
    }
}

// A command's answer, for its schema: its own object, or a failure.
#[derive(JsonSchema)]
#[serde(untagged)]
#[allow(dead_code)]
pub(crate) enum Answer<T, C = Exit> {
    /// The command's own object: it ran, and the exit code is its verdict.
    Done(Envelope<T, C>),
    /// The command failed (the `error` object).
    Failed(Envelope<Failure>),
}

/// A line on stderr after a command's own output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Note {
    /// `warning: …`; also in `--json`'s `warnings`.
    Warning(Warning),
    /// `hint: …`: the way out.
    Hint(String),
    /// Any other line, with no prefix.
    Text(String),
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Warning(w) => write!(f, "warning: {w}"),
            Note::Hint(h) => write!(f, "hint: {h}"),
            Note::Text(t) => f.write_str(t),
        }
    }
}

/// What a command came to: an exit code, its `--json` output, and what a
/// person reads instead.
#[derive(Debug)]
pub(crate) struct Outcome<T, C = Exit> {
    pub exit: C,
    pub output: T,
    /// For stdout, without `--json`.
    pub lines: Vec<String>,
    /// For stderr: why a protocol verdict is not 0, warnings, the way out.
    pub notes: Vec<Note>,
    /// The output's own warnings, shown among `lines` or also in `notes`.
    pub warnings: Vec<Warning>,
    /// Warnings shown on stderr as they happened (loading the settings).
    pub shown: Vec<Warning>,
    /// The lines are for a program (an agent hook's JSON answer): printed
    /// exactly, not escaped for a terminal.
    pub exact: bool,
}

impl<T, C> Outcome<T, C> {
    pub(crate) fn new(exit: C, output: T) -> Outcome<T, C> {
        Outcome {
            exit,
            output,
            lines: Vec::new(),
            notes: Vec::new(),
            warnings: Vec::new(),
            shown: Vec::new(),
            exact: false,
        }
    }

    pub(crate) fn line(mut self, line: impl Into<String>) -> Self {
        self.lines.push(line.into());
        self
    }

    /// A line for a program to read on stdout, printed exactly: the
    /// outcome's lines are then all such lines.
    pub(crate) fn exact_line(mut self, line: impl Into<String>) -> Self {
        self.exact = true;
        self.line(line)
    }

    /// A line on stderr, with no prefix.
    pub(crate) fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(Note::Text(note.into()));
        self
    }

    /// `hint: …` on stderr.
    pub(crate) fn hint(mut self, hint: impl Into<String>) -> Self {
        self.notes.push(Note::Hint(hint.into()));
        self
    }

    /// `warning: …` on stderr, and in `--json`'s `warnings`.
    pub(crate) fn warn(mut self, warning: Warning) -> Self {
        self.notes.push(Note::Warning(warning));
        self
    }

    /// The output's own warnings, for `--json` (a person sees them among
    /// the lines, or as notes).
    pub(crate) fn own_warnings(mut self, warnings: impl IntoIterator<Item = Warning>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// Warnings a person saw on stderr as they happened.
    pub(crate) fn shown(mut self, warnings: &[Warning]) -> Self {
        self.shown.extend_from_slice(warnings);
        self
    }

    /// `--json`'s `warnings`: the output's own, those shown as they
    /// happened, then the notes', each once.
    pub(crate) fn all_warnings(&self) -> Vec<Warning> {
        let notes = self.notes.iter().filter_map(|n| match n {
            Note::Warning(w) => Some(w),
            _ => None,
        });
        let mut all: Vec<Warning> = Vec::new();
        for warning in self.warnings.iter().chain(&self.shown).chain(notes) {
            if !all.contains(warning) {
                all.push(warning.clone());
            }
        }
        all
    }

    /// The same outcome with another output.
    pub(crate) fn map<U>(self, f: impl FnOnce(T) -> U) -> Outcome<U, C> {
        Outcome {
            exit: self.exit,
            output: f(self.output),
            lines: self.lines,
            notes: self.notes,
            warnings: self.warnings,
            shown: self.shown,
            exact: self.exact,
        }
    }

    /// The same outcome with another kind of exit code.
    pub(crate) fn map_exit<D>(self, f: impl FnOnce(C) -> D) -> Outcome<T, D> {
        Outcome {
            exit: f(self.exit),
            output: self.output,
            lines: self.lines,
            notes: self.notes,
            warnings: self.warnings,
            shown: self.shown,
            exact: self.exact,
        }
    }
}
