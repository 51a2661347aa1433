//! What a shell command line runs (SPEC 11: the agent's Bash guard judges a
//! command as the shell will run it, not by its text).
//!
//! The line is parsed by a real shell grammar (`brush-parser`, POSIX and
//! bash) and walked as the shell would run it: every simple command in
//! sequences, pipelines, `if`/`case`/loops, `{ …; }` and `( … )`, function
//! bodies and command substitutions; wrappers that run their arguments as a
//! command (`timeout 60 git push`, `env`, `command`, `nice`, `xargs`, `sh -c
//! '…'`, `eval`) are unwrapped, and what only the running shell knows (a
//! variable from the environment, a command's output) stays unknown rather
//! than guessed. A here-document is data, unless a shell reads it as its
//! script. `cd` and variables assigned earlier on the line are followed.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use brush_parser::ast;
use brush_parser::word::{Parameter, ParameterExpr, WordPiece, WordPieceWithSource};

/// How deep scripts inside scripts are followed (`sh -c "eval '…'"`),
/// functions calling functions included.
const MAX_DEPTH: usize = 8;
/// How deeply one script's groups, subshells and compound commands may
/// nest: the grammar and the reading recurse once a level, so the guard
/// bounds it before either sees the script (no honest command line comes
/// near it; ~1,800 levels overflowed the stack).
const MAX_NESTING: usize = 100;
/// The longest script the guard reads.
const MAX_SCRIPT_LEN: usize = 256 * 1024;

/// One piece of an argument as the shell will expand it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Piece {
    Text(String),
    /// `$(git branch --show-current)` and its equivalents: the branch
    /// checked out where the command runs.
    CurrentBranch,
    /// Known only when the command runs: a variable from the environment,
    /// a command's output, `~`.
    Unknown,
}

/// One argument of a command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Arg {
    pub pieces: Vec<Piece>,
    /// How the command line spells it, for the guard's reasons.
    pub spelled: String,
}

impl Arg {
    pub(crate) fn text(text: &str) -> Arg {
        Arg {
            pieces: vec![Piece::Text(text.to_owned())],
            spelled: text.to_owned(),
        }
    }

    fn unknown(spelled: &str) -> Arg {
        Arg {
            pieces: vec![Piece::Unknown],
            spelled: spelled.to_owned(),
        }
    }

    /// The argument's value when the line alone tells it.
    pub(crate) fn literal(&self) -> Option<String> {
        let mut value = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => value.push_str(text),
                _ => return None,
            }
        }
        Some(value)
    }

    /// True when some piece is known only when the command runs.
    pub(crate) fn has_unknown(&self) -> bool {
        self.pieces.contains(&Piece::Unknown)
    }

    /// The literal text before the first piece that is not literal.
    pub(crate) fn known_prefix(&self) -> String {
        let mut prefix = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(text) => prefix.push_str(text),
                _ => break,
            }
        }
        prefix
    }

    /// The argument as script text for a shell that reads it again (`sh -c`,
    /// `eval`): what is not known becomes a variable the reader knows it
    /// cannot expand.
    fn as_script(&self, placeholders: &mut Vec<String>) -> String {
        let mut text = String::new();
        for piece in &self.pieces {
            match piece {
                Piece::Text(t) => text.push_str(t),
                Piece::CurrentBranch => text.push_str("$(git branch --show-current)"),
                Piece::Unknown => {
                    text.push_str(&format!("${{{PLACEHOLDER}{}}}", placeholders.len()));
                    placeholders.push(self.spelled.clone());
                }
            }
        }
        text
    }
}

/// The variable a re-read script uses for what the outer line did not know.
const PLACEHOLDER: &str = "__maverick_unknown_";

/// One program the line runs, with its arguments as far as they are known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Invocation {
    /// The program first.
    pub args: Vec<Arg>,
    /// Why more arguments come from elsewhere (`xargs` appends what it
    /// reads on stdin); `None` when the line names them all.
    pub more_args: Option<String>,
    /// Where it runs, relative to where the line starts; `None` when a `cd`
    /// went somewhere only the running shell knows.
    pub dir: Option<PathBuf>,
    /// Variables set for it on the line (`VAR=x cmd`, `export VAR=x`,
    /// `env VAR=x`), by name.
    pub env: BTreeMap<String, Arg>,
    /// Why what runs here cannot be read from the line at all (a shell fed
    /// from a pipe or a file, a script known only when it runs, scripts
    /// nested too deep); `None` for a program the line names.
    pub opaque: Option<String>,
}

impl Invocation {
    /// The program's name without its directory (`/usr/bin/git` → `git`).
    pub(crate) fn program(&self) -> Option<String> {
        let program = self.args.first()?.literal()?;
        Path::new(&program)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    }
}

/// A command line the guard does not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Unreadable {
    /// The grammar does not accept it (the shell would refuse it too, or
    /// the grammar lacks a corner of bash).
    #[error("the shell grammar cannot read it: {0}")]
    Grammar(String),
    /// Nested deeper than the guard reads, or too long.
    #[error("{0}")]
    TooBig(String),
}

/// Every program `line` runs, in order, wrappers taken off.
pub(crate) fn invocations(line: &str) -> Result<Vec<Invocation>, Unreadable> {
    let program = parse(line)?;
    let mut reader = Reader::default();
    let mut state = State {
        dir: Some(PathBuf::new()),
        ..State::default()
    };
    reader.program(&program, &mut state);
    Ok(reader.found)
}

fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions {
        // `!(…)` and friends only with `shopt -s extglob`.
        enable_extended_globbing: false,
        ..Default::default()
    }
}

fn parse(script: &str) -> Result<ast::Program, Unreadable> {
    if script.len() > MAX_SCRIPT_LEN {
        return Err(Unreadable::TooBig(format!(
            "it is longer than the {} KiB the guard reads",
            MAX_SCRIPT_LEN / 1024
        )));
    }
    if nesting(script) > MAX_NESTING {
        return Err(Unreadable::TooBig(format!(
            "its commands nest more than {MAX_NESTING} levels deep"
        )));
    }
    match parse_as_is(script) {
        Err(unreadable) => match without_heredoc_substitutions(script) {
            Some(rewritten) => parse_as_is(&rewritten),
            None => Err(unreadable),
        },
        program => program,
    }
}

/// The variable that stands for a here-document's text the guard left out.
const HEREDOC_TEXT: &str = "${__maverick_heredoc}";

/// `script` with each `$(cat <<'EOF' … EOF\n)` (Claude Code's commit
/// message style) replaced by a variable: the grammar cannot read a
/// here-document in a command substitution inside double quotes, and the
/// document is only `cat`'s data. A document whose delimiter is unquoted
/// and that holds a substitution (which would run) is left alone; `None`
/// when nothing was replaced.
fn without_heredoc_substitutions(script: &str) -> Option<String> {
    const OPEN: &str = "$(cat <<";
    let mut out = String::new();
    let mut rest = script;
    let mut changed = false;
    while let Some(at) = rest.find(OPEN) {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        match heredoc_substitution(&from[OPEN.len()..]) {
            Some(len) => {
                out.push_str(HEREDOC_TEXT);
                rest = &from[OPEN.len() + len..];
                changed = true;
            }
            None => {
                out.push_str(OPEN);
                rest = &from[OPEN.len()..];
            }
        }
    }
    out.push_str(rest);
    changed.then_some(out)
}

/// The length of `-'EOF'\n…\nEOF\n)` at the start of `text` (what follows
/// `$(cat <<`), when it is one here-document and the substitution's end.
fn heredoc_substitution(text: &str) -> Option<usize> {
    let body = text.strip_prefix('-').unwrap_or(text);
    let trimmed = body.trim_start_matches(' ');
    let (delimiter, quoted, after) = match trimmed.chars().next()? {
        q @ ('\'' | '"') => {
            let end = trimmed[1..].find(q)? + 1;
            (
                &trimmed[1..end],
                Some(&trimmed[..=end]),
                &trimmed[end + 1..],
            )
        }
        _ => {
            let end = trimmed
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(trimmed.len());
            (&trimmed[..end], None, &trimmed[end..])
        }
    };
    let newline = after.find('\n')?;
    if delimiter.is_empty() || !after[..newline].trim().is_empty() {
        return None;
    }
    let document = &after[newline + 1..];
    let mut offset = 0;
    for line in document.split_inclusive('\n') {
        let line_text = line.trim_end_matches('\n').trim_start_matches('\t');
        // The grammar hands a substitution's text back with the delimiter
        // quoted at its end as at its start.
        if line_text == delimiter || Some(line_text) == quoted {
            let inside = &document[..offset];
            if quoted.is_none() && (inside.contains("$(") || inside.contains('`')) {
                return None;
            }
            let closing = &document[offset + line.len()..];
            let blank = closing.len() - closing.trim_start().len();
            closing[blank..].starts_with(')').then_some(())?;
            let end = text.len() - closing.len() + blank + 1;
            return Some(end);
        }
        offset += line.len();
    }
    None
}

/// An upper bound of how deeply `script`'s constructs nest: brackets and
/// braces of any kind, and the compound commands' keywords, quoted or not.
fn nesting(script: &str) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut word = String::new();
    for c in script.chars().chain([' ']) {
        if c.is_ascii_alphanumeric() || c == '_' {
            word.push(c);
            continue;
        }
        match word.as_str() {
            "if" | "case" | "for" | "while" | "until" | "select" => depth += 1,
            "fi" | "esac" | "done" => depth = depth.saturating_sub(1),
            _ => {}
        }
        word.clear();
        match c {
            '(' | '{' | '[' => depth += 1,
            ')' | '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        deepest = deepest.max(depth);
    }
    deepest
}

fn parse_as_is(script: &str) -> Result<ast::Program, Unreadable> {
    brush_parser::Parser::new(
        std::io::BufReader::new(script.as_bytes()),
        &options(),
        &brush_parser::SourceInfo::default(),
    )
    .parse_program()
    .map_err(|e| Unreadable::Grammar(e.to_string()))
}

/// What the shell knows at one point of the line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    dir: Option<PathBuf>,
    /// Variables assigned earlier on the line.
    vars: BTreeMap<String, Arg>,
    /// Those of them exported to the commands it runs.
    exported: BTreeMap<String, Arg>,
}

impl State {
    /// What holds after one of several paths ran (an `if`, a loop that ran
    /// or not, `a || b`): what they agree on, the rest unknown.
    fn merge(&mut self, other: &State) {
        if self.dir != other.dir {
            self.dir = None;
        }
        for (vars, theirs) in [
            (&mut self.vars, &other.vars),
            (&mut self.exported, &other.exported),
        ] {
            for (name, value) in theirs {
                if vars.get(name) != Some(value) {
                    vars.insert(name.clone(), Arg::unknown(&format!("${name}")));
                }
            }
            for (name, value) in vars.iter_mut() {
                if !theirs.contains_key(name) {
                    *value = Arg::unknown(&format!("${name}"));
                }
            }
        }
    }

    fn cd(&mut self, target: Option<&Arg>) {
        let to = target.and_then(Arg::literal);
        self.dir = match (to, self.dir.take()) {
            (Some(to), Some(dir)) if to != "-" && !to.is_empty() => Some(dir.join(to)),
            _ => None,
        };
    }

    fn assign(&mut self, name: &str, value: Arg, export: bool) {
        if export || self.exported.contains_key(name) {
            self.exported.insert(name.to_owned(), value.clone());
        }
        self.vars.insert(name.to_owned(), value);
    }
}

#[derive(Default)]
struct Reader {
    found: Vec<Invocation>,
    depth: usize,
    /// The functions the line defines, by name: their bodies run where
    /// they are called, and only there.
    functions: BTreeMap<String, ast::FunctionBody>,
    /// True while reading a command that reads a pipe.
    piped: bool,
}

/// What a command reads on its standard input.
enum Stdin {
    /// A here-document or here-string: the line tells.
    Line(Arg),
    /// A file or a pipe.
    Elsewhere,
}

impl Reader {
    fn program(&mut self, program: &ast::Program, state: &mut State) {
        for list in &program.complete_commands {
            self.list(list, state);
        }
    }

    /// Another script (`sh -c`, `eval`, a heredoc a shell reads, a command
    /// substitution), read in `state`; what the outer line did not know
    /// stays unknown, spelled as the outer line spelled it.
    fn script(&mut self, text: &str, placeholders: &[String], state: &mut State) {
        let before = self.found.len();
        if self.depth >= MAX_DEPTH {
            self.opaque(
                text,
                format!("it runs scripts inside scripts more than {MAX_DEPTH} deep"),
                state,
            );
            return;
        }
        match parse(text) {
            Ok(program) => {
                self.depth += 1;
                self.program(&program, state);
                self.depth -= 1;
            }
            Err(Unreadable::TooBig(why)) => self.opaque(text, why, state),
            // The guard sees it as a program it cannot read.
            Err(Unreadable::Grammar(_)) => self.found.push(Invocation {
                args: vec![Arg::unknown(text)],
                more_args: None,
                dir: state.dir.clone(),
                env: state.exported.clone(),
                opaque: None,
            }),
        }
        if placeholders.is_empty() {
            return;
        }
        for invocation in &mut self.found[before..] {
            let program = invocation.args.first().map(|a| a.spelled.clone());
            if program.is_some_and(|p| p.contains(&format!("${{{PLACEHOLDER}"))) {
                // `sh -c "$(cat f)"`, `eval "$CMD"`: what runs is known only
                // when the shell runs it.
                invocation.opaque =
                    Some("the script it runs is known only when the shell runs it".to_owned());
            }
            for arg in invocation
                .args
                .iter_mut()
                .chain(invocation.env.values_mut())
            {
                for (i, spelled) in placeholders.iter().enumerate().rev() {
                    let form = format!("${{{PLACEHOLDER}{i}}}");
                    arg.spelled = arg.spelled.replace(&form, spelled);
                }
            }
        }
    }

    /// What runs at this point cannot be read from the line, for `why`.
    fn opaque(&mut self, spelled: &str, why: String, state: &State) {
        self.found.push(Invocation {
            args: vec![Arg::unknown(spelled)],
            more_args: None,
            dir: state.dir.clone(),
            env: state.exported.clone(),
            opaque: Some(why),
        });
    }

    /// A call of a function the line defined: its body runs here.
    fn call(&mut self, body: &ast::FunctionBody, spelled: &str, state: &mut State) {
        if self.depth >= MAX_DEPTH {
            let why = format!("its functions call functions more than {MAX_DEPTH} deep");
            self.opaque(spelled, why, state);
            return;
        }
        let ast::FunctionBody(body, redirects) = body;
        for redirect in redirects.iter().flat_map(|r| &r.0) {
            self.redirect(redirect, state);
        }
        self.depth += 1;
        self.compound(body, state);
        self.depth -= 1;
    }

    fn list(&mut self, list: &ast::CompoundList, state: &mut State) {
        for ast::CompoundListItem(and_or, separator) in &list.0 {
            if matches!(separator, ast::SeparatorOperator::Async) {
                // `cmd &` runs in a subshell: what it changes stays there.
                self.and_or(and_or, &mut state.clone());
            } else {
                self.and_or(and_or, state);
            }
        }
    }

    fn and_or(&mut self, list: &ast::AndOrList, state: &mut State) {
        self.pipeline(&list.first, state);
        for next in &list.additional {
            match next {
                // `cd dir && git push`: the push runs in dir.
                ast::AndOr::And(pipeline) => self.pipeline(pipeline, state),
                ast::AndOr::Or(pipeline) => {
                    let mut other = state.clone();
                    self.pipeline(pipeline, &mut other);
                    state.merge(&other);
                }
            }
        }
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, state: &mut State) {
        if let [command] = pipeline.seq.as_slice() {
            self.command(command, state);
            return;
        }
        // Every part of a pipeline runs in a subshell of its own, reading
        // what the part before it writes.
        let piped = self.piped;
        for (i, command) in pipeline.seq.iter().enumerate() {
            self.piped = piped || i > 0;
            self.command(command, &mut state.clone());
        }
        self.piped = piped;
    }

    fn command(&mut self, command: &ast::Command, state: &mut State) {
        match command {
            ast::Command::Simple(simple) => self.simple(simple, state),
            ast::Command::Compound(compound, redirects) => {
                if let Some(redirects) = redirects {
                    for redirect in &redirects.0 {
                        self.redirect(redirect, state);
                    }
                }
                self.compound(compound, state);
            }
            // The body runs where the function is called, if it is.
            ast::Command::Function(function) => {
                self.functions
                    .insert(function.fname.value.clone(), function.body.clone());
            }
            ast::Command::ExtendedTest(test) => self.test_expr(&test.expr, state),
        }
    }

    fn test_expr(&mut self, expr: &ast::ExtendedTestExpr, state: &mut State) {
        use ast::ExtendedTestExpr as E;
        match expr {
            E::And(a, b) | E::Or(a, b) => {
                self.test_expr(a, state);
                self.test_expr(b, state);
            }
            E::Not(a) | E::Parenthesized(a) => self.test_expr(a, state),
            E::UnaryTest(_, word) => {
                self.word(word, state);
            }
            E::BinaryTest(_, left, right) => {
                self.word(left, state);
                self.word(right, state);
            }
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, state: &mut State) {
        use ast::CompoundCommand as C;
        match compound {
            C::BraceGroup(group) => self.list(&group.list, state),
            C::Subshell(subshell) => self.list(&subshell.list, &mut state.clone()),
            C::IfClause(clause) => {
                self.list(&clause.condition, state);
                let mut after = state.clone();
                let mut then = state.clone();
                self.list(&clause.then, &mut then);
                after.merge(&then);
                let mut otherwise = state.clone();
                for branch in clause.elses.iter().flatten() {
                    if let Some(condition) = &branch.condition {
                        self.list(condition, &mut otherwise);
                    }
                    let mut body = otherwise.clone();
                    self.list(&branch.body, &mut body);
                    after.merge(&body);
                }
                after.merge(&otherwise);
                *state = after;
            }
            C::CaseClause(clause) => {
                self.word(&clause.value, state);
                let mut after = state.clone();
                for item in &clause.cases {
                    for pattern in &item.patterns {
                        self.word(pattern, state);
                    }
                    if let Some(body) = &item.cmd {
                        let mut branch = state.clone();
                        self.list(body, &mut branch);
                        after.merge(&branch);
                    }
                }
                *state = after;
            }
            C::ForClause(clause) => {
                for value in clause.values.iter().flatten() {
                    self.word(value, state);
                }
                let mut body = state.clone();
                let name = &clause.variable_name;
                body.assign(name, Arg::unknown(&format!("${name}")), false);
                self.list(&clause.body.list, &mut body);
                state.merge(&body);
            }
            C::WhileClause(clause) | C::UntilClause(clause) => {
                let ast::WhileOrUntilClauseCommand(condition, body, _) = clause;
                let mut inside = state.clone();
                self.list(condition, &mut inside);
                self.list(&body.list, &mut inside);
                state.merge(&inside);
            }
            C::Arithmetic(arithmetic) => {
                self.arithmetic(&arithmetic.expr, state);
                // bash runs `( ( cmd ) )` as two subshells when it is no
                // arithmetic; the grammar reads it as `(( … ))`.
                self.subshells(&arithmetic.expr.value, state);
            }
            C::ArithmeticForClause(clause) => {
                for expr in [&clause.initializer, &clause.condition, &clause.updater]
                    .into_iter()
                    .flatten()
                {
                    self.arithmetic(expr, state);
                }
                let mut body = state.clone();
                self.list(&clause.body.list, &mut body);
                state.merge(&body);
            }
        }
    }

    /// The text of an arithmetic command or expansion, read as the
    /// subshells bash runs when it is no arithmetic: as it is, or with the
    /// parenthesis the grammar took for the arithmetic's.
    fn subshells(&mut self, text: &str, state: &State) {
        for script in [text.to_owned(), format!("({text}"), format!("{text})")] {
            if parse_as_is(&script).is_ok() {
                self.script(&script, &[], &mut state.clone());
                return;
            }
        }
        self.script(text, &[], &mut state.clone());
    }

    /// An arithmetic expression runs the command substitutions in it.
    fn arithmetic(&mut self, expr: &ast::UnexpandedArithmeticExpr, state: &State) {
        self.expanded_text(&expr.value, state);
    }

    /// Text the shell expands as inside double quotes (an unquoted
    /// here-document, an arithmetic expression): its value, after running
    /// the command substitutions in it.
    fn expanded_text(&mut self, text: &str, state: &State) -> Arg {
        // Inside double quotes `"` needs a backslash, and a backslash before
        // what it does not escape in a here-document stays literal.
        let mut quoted = String::from("\"");
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.peek() {
                    Some('$' | '`' | '\\' | '\n') => {
                        quoted.push('\\');
                        quoted.extend(chars.next());
                    }
                    _ => quoted.push_str("\\\\"),
                },
                '"' => quoted.push_str("\\\""),
                c => quoted.push(c),
            }
        }
        quoted.push('"');
        self.word(&ast::Word::new(&quoted), state)
    }

    /// A redirection's words are expanded (command substitutions run);
    /// returns what it feeds the command on stdin, if anything.
    fn redirect(&mut self, redirect: &ast::IoRedirect, state: &State) -> Option<Stdin> {
        match redirect {
            ast::IoRedirect::File(fd, kind, target) => {
                use ast::IoFileRedirectKind as K;
                let reads = matches!(fd, None | Some(0))
                    && matches!(kind, K::Read | K::ReadAndWrite | K::DuplicateInput);
                match target {
                    ast::IoFileRedirectTarget::Filename(word)
                    | ast::IoFileRedirectTarget::Duplicate(word) => {
                        self.word(word, state);
                    }
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, subshell) => {
                        self.list(&subshell.list, &mut state.clone());
                    }
                    ast::IoFileRedirectTarget::Fd(_) => {}
                }
                reads.then_some(Stdin::Elsewhere)
            }
            ast::IoRedirect::HereDocument(fd, doc) => {
                let text = if doc.requires_expansion {
                    self.expanded_text(&doc.doc.value, state)
                } else {
                    Arg::text(&doc.doc.value)
                };
                matches!(fd, None | Some(0)).then_some(Stdin::Line(text))
            }
            ast::IoRedirect::HereString(fd, word) => {
                let text = self.word(word, state);
                matches!(fd, None | Some(0)).then_some(Stdin::Line(text))
            }
            ast::IoRedirect::OutputAndError(word, _) => {
                self.word(word, state);
                None
            }
        }
    }

    fn simple(&mut self, command: &ast::SimpleCommand, state: &mut State) {
        let mut env = state.exported.clone();
        let mut assignments = Vec::new();
        let mut args = Vec::new();
        let mut stdin = self.piped.then_some(Stdin::Elsewhere);
        for item in command.prefix.iter().flat_map(|p| &p.0) {
            match item {
                ast::CommandPrefixOrSuffixItem::AssignmentWord(assignment, _) => {
                    if let Some((name, value)) = self.assignment(assignment, state) {
                        assignments.push((name, value));
                    }
                }
                ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                    if let Some(text) = self.redirect(redirect, state) {
                        stdin = Some(text);
                    }
                }
                ast::CommandPrefixOrSuffixItem::Word(word) => args.push(self.word(word, state)),
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                    self.list(&subshell.list, &mut state.clone());
                    args.push(Arg::unknown("<(…)"));
                }
            }
        }
        if let Some(name) = &command.word_or_name {
            args.push(self.word(name, state));
        }
        for item in command.suffix.iter().flat_map(|s| &s.0) {
            match item {
                ast::CommandPrefixOrSuffixItem::Word(word) => args.push(self.word(word, state)),
                ast::CommandPrefixOrSuffixItem::IoRedirect(redirect) => {
                    if let Some(text) = self.redirect(redirect, state) {
                        stdin = Some(text);
                    }
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(_, word) => {
                    // `export NAME=value` and the like.
                    args.push(self.word(word, state));
                }
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, subshell) => {
                    self.list(&subshell.list, &mut state.clone());
                    args.push(Arg::unknown("<(…)"));
                }
            }
        }
        if args.is_empty() {
            // Assignments alone set the shell's own variables.
            for (name, value) in assignments {
                state.assign(&name, value, false);
            }
            return;
        }
        env.extend(assignments);
        self.run(args, env, None, stdin.as_ref(), state);
    }

    fn assignment(&mut self, assignment: &ast::Assignment, state: &State) -> Option<(String, Arg)> {
        let ast::AssignmentName::VariableName(name) = &assignment.name else {
            return None;
        };
        let value = match &assignment.value {
            ast::AssignmentValue::Scalar(word) if !assignment.append => self.word(word, state),
            ast::AssignmentValue::Scalar(word) => {
                self.word(word, state);
                Arg::unknown(&format!("${name}"))
            }
            ast::AssignmentValue::Array(items) => {
                for (key, value) in items {
                    if let Some(key) = key {
                        self.word(key, state);
                    }
                    self.word(value, state);
                }
                Arg::unknown(&format!("${name}"))
            }
        };
        Some((name.clone(), value))
    }

    /// Runs `args` as the shell would: builtins that change the shell,
    /// wrappers taken off, other shells' scripts read.
    fn run(
        &mut self,
        mut args: Vec<Arg>,
        mut env: BTreeMap<String, Arg>,
        mut more_args: Option<String>,
        stdin: Option<&Stdin>,
        state: &mut State,
    ) {
        let mut dir = state.dir.clone();
        while let Some(program) = args.first().and_then(Arg::literal) {
            if let Some(body) = self.functions.get(&program).cloned() {
                self.call(&body, &program, state);
                return;
            }
            let name = Path::new(&program)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let rest = &args[1..];
            match name.as_str() {
                "cd" | "pushd" => {
                    let option = |a: &&Arg| {
                        a.literal()
                            .is_some_and(|l| l.len() > 1 && l.starts_with('-'))
                    };
                    state.cd(rest.iter().find(|a| !option(a)));
                    return;
                }
                "popd" => {
                    state.dir = None;
                    return;
                }
                "export" | "declare" | "typeset" | "local" | "readonly" => {
                    let export = name == "export"
                        || rest.iter().any(|a| {
                            a.literal()
                                .is_some_and(|l| l.starts_with('-') && l.contains('x'))
                        });
                    for arg in rest {
                        if let Some((name, value)) = split_assignment(arg) {
                            state.assign(&name, value, export);
                        } else if let Some(name) = arg.literal().filter(|_| export) {
                            if let Some(value) = state.vars.get(&name).cloned() {
                                state.exported.insert(name, value);
                            }
                        }
                    }
                    return;
                }
                "unset" => {
                    for name in rest.iter().filter_map(Arg::literal) {
                        state.vars.remove(&name);
                        state.exported.remove(&name);
                    }
                    return;
                }
                "trap" => {
                    self.trap(rest, state);
                    return;
                }
                "eval" => {
                    self.eval(rest, state);
                    return;
                }
                "sh" | "bash" | "dash" | "zsh" | "ksh" | "mksh" | "ash" => {
                    let child = State {
                        dir: dir.clone(),
                        vars: env.clone(),
                        exported: env.clone(),
                    };
                    self.shell(args, env, more_args, stdin, child);
                    return;
                }
                "flock" | "su" | "runuser" | "script" => {
                    let child = State {
                        dir: dir.clone(),
                        vars: env.clone(),
                        exported: env.clone(),
                    };
                    if self.command_runner(&name, &args, child) {
                        return;
                    }
                }
                _ => {}
            }
            match unwrap(&name, rest) {
                Some(Unwrapped {
                    command,
                    env: set,
                    dir: moved,
                    more_args: appended,
                    runs,
                }) => {
                    if !runs {
                        return;
                    }
                    env.extend(set);
                    if let Some(to) = moved {
                        dir = match (to.literal(), dir) {
                            (Some(to), Some(dir)) => Some(dir.join(to)),
                            _ => None,
                        };
                    }
                    more_args = more_args.or(appended);
                    args = command;
                    if args.is_empty() {
                        return;
                    }
                }
                None => break,
            }
        }
        self.program_runs(args, more_args, dir, env);
    }

    /// A program the line names runs with `args`.
    fn program_runs(
        &mut self,
        args: Vec<Arg>,
        more_args: Option<String>,
        dir: Option<PathBuf>,
        env: BTreeMap<String, Arg>,
    ) {
        self.found.push(Invocation {
            args,
            more_args,
            dir,
            env,
            opaque: None,
        });
    }

    /// `flock … -c CMD`, `su -c CMD`, `runuser -c CMD`, `script -qc CMD`:
    /// CMD read as a shell's script; `su` and `script` without one start a
    /// shell on standard input. False when `args` run a command as
    /// wrappers do (`flock FILE CMD…`, `runuser -u USER -- CMD…`).
    fn command_runner(&mut self, name: &str, args: &[Arg], mut child: State) -> bool {
        if let Some(script) = command_option(name, &args[1..]) {
            let mut placeholders = Vec::new();
            let text = script.as_script(&mut placeholders);
            self.script(&text, &placeholders, &mut child);
            return true;
        }
        if !matches!(name, "su" | "script") {
            return false;
        }
        let spelled = args
            .iter()
            .map(|a| a.spelled.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let why = format!("`{spelled}` starts a shell that reads its commands from standard input");
        self.opaque(&spelled, why, &child);
        true
    }

    /// `trap 'CMD' EXIT`: CMD runs in this shell, later.
    fn trap(&mut self, args: &[Arg], state: &mut State) {
        let mut operands = args.iter().filter(|a| a.literal().as_deref() != Some("--"));
        if let (Some(action), Some(_)) = (operands.next(), operands.next()) {
            self.eval(std::slice::from_ref(action), state);
        }
    }

    /// `eval ARGS`: the words joined, read again in this very shell.
    fn eval(&mut self, words: &[Arg], state: &mut State) {
        let mut placeholders = Vec::new();
        let text = words
            .iter()
            .map(|a| a.as_script(&mut placeholders))
            .collect::<Vec<_>>()
            .join(" ");
        self.script(&text, &placeholders, state);
    }

    /// A shell (`sh`, `bash`, …) run with `args`: the script it reads, as
    /// far as the line shows it.
    fn shell(
        &mut self,
        args: Vec<Arg>,
        env: BTreeMap<String, Arg>,
        more_args: Option<String>,
        stdin: Option<&Stdin>,
        mut child: State,
    ) {
        let spelled = args
            .iter()
            .map(|a| a.spelled.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        // A non-interactive shell first sources the file BASH_ENV (or ENV) names.
        for startup in ["BASH_ENV", "ENV"] {
            if let Some(file) = env.get(startup) {
                self.found.push(Invocation {
                    args: vec![Arg::text("."), file.clone()],
                    more_args: None,
                    dir: child.dir.clone(),
                    env: env.clone(),
                    opaque: None,
                });
            }
        }
        let script = match (shell_script(&args[1..]), stdin) {
            (ShellRuns::Script(script), _) => script,
            (ShellRuns::Stdin, Some(Stdin::Line(script))) => script.clone(),
            (ShellRuns::Stdin, _) => {
                let why = format!(
                    "`{spelled}` reads its commands from standard input (a pipe, a file or the \
                     terminal), which the guard cannot see"
                );
                self.opaque(&spelled, why, &child);
                return;
            }
            (ShellRuns::File, _) => {
                self.program_runs(args, more_args, child.dir, env);
                return;
            }
        };
        let mut placeholders = Vec::new();
        let text = script.as_script(&mut placeholders);
        self.script(&text, &placeholders, &mut child);
    }

    /// A word as the shell expands it; command substitutions in it are read
    /// (they run too).
    fn word(&mut self, word: &ast::Word, state: &State) -> Arg {
        let mut pieces = Vec::new();
        match brush_parser::word::parse(&word.value, &options()) {
            Ok(parsed) => self.pieces(&parsed, false, state, &mut pieces),
            Err(_) => pieces.push(Piece::Unknown),
        }
        Arg {
            pieces: merge_text(pieces),
            spelled: word.value.clone(),
        }
    }

    fn pieces(
        &mut self,
        parsed: &[WordPieceWithSource],
        quoted: bool,
        state: &State,
        out: &mut Vec<Piece>,
    ) {
        for piece in parsed {
            match &piece.piece {
                WordPiece::Text(text) => {
                    // `{a,b}` becomes two words, `{1..3}` three.
                    let braces = !quoted
                        && text.contains('{')
                        && text.contains('}')
                        && (text.contains(',') || text.contains(".."));
                    out.push(if braces {
                        Piece::Unknown
                    } else {
                        Piece::Text(text.clone())
                    });
                }
                WordPiece::SingleQuotedText(text) => out.push(Piece::Text(text.clone())),
                WordPiece::AnsiCQuotedText(text) => out.push(if text.contains('\\') {
                    Piece::Unknown
                } else {
                    Piece::Text(text.clone())
                }),
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => {
                    self.pieces(inner, true, state, out);
                }
                WordPiece::EscapeSequence(escaped) => {
                    let c = escaped.strip_prefix('\\').unwrap_or(escaped);
                    let kept = quoted && !matches!(c, "$" | "`" | "\"" | "\\" | "\n");
                    out.push(Piece::Text(match (kept, c) {
                        (true, _) => escaped.clone(),
                        (false, "\n") => String::new(),
                        (false, c) => c.to_owned(),
                    }));
                }
                WordPiece::TildePrefix(_) => out.push(Piece::Unknown),
                WordPiece::ArithmeticExpression(expr) => {
                    // `$( (cmd) )` may be read as `$(( … ))`.
                    self.subshells(&expr.value, state);
                    out.push(Piece::Unknown);
                }
                WordPiece::ParameterExpansion(expr) => {
                    out.push(self.parameter(expr, quoted, state))
                }
                WordPiece::CommandSubstitution(text) => out.push(self.substitution(text, state)),
                WordPiece::BackquotedCommandSubstitution(text) => {
                    let mut unescaped = String::new();
                    let mut chars = text.chars().peekable();
                    while let Some(c) = chars.next() {
                        if c == '\\' && matches!(chars.peek(), Some('$' | '`' | '\\')) {
                            unescaped.extend(chars.next());
                        } else {
                            unescaped.push(c);
                        }
                    }
                    out.push(self.substitution(&unescaped, state));
                }
            }
        }
    }

    fn parameter(&mut self, expr: &ParameterExpr, quoted: bool, state: &State) -> Piece {
        let ParameterExpr::Parameter {
            parameter: Parameter::Named(name),
            indirect: false,
        } = expr
        else {
            return Piece::Unknown;
        };
        let Some(value) = state.vars.get(name) else {
            return Piece::Unknown;
        };
        match value.pieces.as_slice() {
            // Unquoted, a value with blanks is split into several words.
            [Piece::Text(text)] if quoted || !text.contains(char::is_whitespace) => {
                Piece::Text(text.clone())
            }
            [Piece::CurrentBranch] => Piece::CurrentBranch,
            _ => Piece::Unknown,
        }
    }

    /// `$(…)`: its commands run (in a subshell); its value is known for the
    /// ways of asking for the current branch.
    fn substitution(&mut self, text: &str, state: &State) -> Piece {
        // `$(cat <<'EOF' … EOF)`: a here-document's text, nothing runs.
        if let Some(document) = text.trim_start().strip_prefix("cat <<") {
            for closed in [format!("{document})"), format!("{document}\n)")] {
                if heredoc_substitution(&closed) == Some(closed.len()) {
                    return Piece::Unknown;
                }
            }
        }
        let before = self.found.len();
        self.script(text, &[], &mut state.clone());
        let asks_branch = match &self.found[before..] {
            [one] => {
                let words: Option<Vec<String>> = one.args.iter().map(Arg::literal).collect();
                let words = words.unwrap_or_default();
                let words: Vec<&str> = words.iter().map(String::as_str).collect();
                one.dir == state.dir
                    && matches!(
                        words.as_slice(),
                        ["git", "branch", "--show-current"]
                            | ["git", "rev-parse", "--abbrev-ref", "HEAD"]
                            | ["git", "symbolic-ref", "--short", "HEAD"]
                            | ["git", "symbolic-ref", "--short", "-q", "HEAD"]
                            | ["git", "symbolic-ref", "-q", "--short", "HEAD"]
                    )
            }
            _ => false,
        };
        if asks_branch {
            Piece::CurrentBranch
        } else {
            Piece::Unknown
        }
    }
}

/// Adjacent literal pieces as one.
fn merge_text(pieces: Vec<Piece>) -> Vec<Piece> {
    let mut merged: Vec<Piece> = Vec::new();
    for piece in pieces {
        match (merged.last_mut(), piece) {
            (Some(Piece::Text(last)), Piece::Text(text)) => last.push_str(&text),
            (_, piece) => merged.push(piece),
        }
    }
    if merged.is_empty() {
        merged.push(Piece::Text(String::new()));
    }
    merged
}

/// `NAME=value` as an argument (`export NAME=value`, `env NAME=value`).
fn split_assignment(arg: &Arg) -> Option<(String, Arg)> {
    let Some(Piece::Text(first)) = arg.pieces.first() else {
        return None;
    };
    let (name, value) = first.split_once('=')?;
    let valid = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return None;
    }
    let mut pieces = vec![Piece::Text(value.to_owned())];
    pieces.extend(arg.pieces[1..].iter().cloned());
    Some((
        name.to_owned(),
        Arg {
            pieces: merge_text(pieces),
            spelled: arg.spelled.clone(),
        },
    ))
}

/// Where a shell's script comes from.
enum ShellRuns {
    /// `sh -c SCRIPT`.
    Script(Arg),
    /// A script file, the first operand.
    File,
    /// Standard input: `-s`, or no operand at all.
    Stdin,
}

/// Where the shell run with `args` reads its script.
fn shell_script(args: &[Arg]) -> ShellRuns {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let Some(word) = arg.literal() else {
            return ShellRuns::File;
        };
        if word == "--" || word == "-" {
            break;
        }
        let Some(flags) = word.strip_prefix('-').or_else(|| word.strip_prefix('+')) else {
            // The first operand is a script file.
            return ShellRuns::File;
        };
        if flags.starts_with('-') {
            // --login, --norc, --rcfile FILE…
            if matches!(word.as_str(), "--rcfile" | "--init-file") {
                rest.next();
            }
            continue;
        }
        if word.starts_with('-') && flags.contains('c') {
            return ShellRuns::Script(rest.next().cloned().unwrap_or_else(|| Arg::text("")));
        }
        if word.starts_with('-') && flags.contains('s') {
            // The script is stdin; the operands are its arguments.
            return ShellRuns::Stdin;
        }
        if flags.contains(['o', 'O']) {
            rest.next();
        }
    }
    match rest.next() {
        Some(_) => ShellRuns::File,
        None => ShellRuns::Stdin,
    }
}

/// `flock … -c CMD`, `su -c CMD`, `runuser -c CMD`, `script -qc CMD`: the
/// command they hand a shell.
fn command_option(program: &str, args: &[Arg]) -> Option<Arg> {
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        let word = arg.literal()?;
        if word == "--" {
            return None;
        }
        if let Some(value) = word.strip_prefix("--command=") {
            return Some(Arg::text(value));
        }
        if word == "--command" {
            return rest.next().cloned();
        }
        let Some(flags) = word.strip_prefix('-').filter(|f| !f.starts_with('-')) else {
            continue;
        };
        if let Some(at) = flags.find('c') {
            // `script -qc CMD`; flock's `-c` takes no attached value either.
            let attached = &flags[at + 1..];
            if program != "flock" && !attached.is_empty() {
                return Some(Arg::text(attached));
            }
            return rest.next().cloned();
        }
    }
    None
}

/// What a wrapper runs.
struct Unwrapped {
    command: Vec<Arg>,
    env: Vec<(String, Arg)>,
    dir: Option<Arg>,
    more_args: Option<String>,
    /// False when the wrapper only looks the command up (`command -v`).
    runs: bool,
}

/// The options of a wrapper: those that take a value as the next word, and
/// those (long, `=`) that take one only attached.
struct WrapperOptions {
    /// Short options that take a value (attached or the next word).
    short_values: &'static str,
    /// Long options that take a value as the next word when not given with `=`.
    long_values: &'static [&'static str],
    /// Leading operands before the command (`timeout DURATION`).
    operands: usize,
}

/// The options of the wrapper `program`; `None` when it is no wrapper.
fn wrapper_options(program: &str) -> Option<WrapperOptions> {
    let options = match program {
        "timeout" => WrapperOptions {
            short_values: "ks",
            long_values: &["--kill-after", "--signal"],
            operands: 1,
        },
        "env" => WrapperOptions {
            short_values: "uCS",
            long_values: &["--unset", "--chdir", "--split-string"],
            operands: 0,
        },
        "nice" => WrapperOptions {
            short_values: "n",
            long_values: &["--adjustment"],
            operands: 0,
        },
        "xargs" => WrapperOptions {
            short_values: "adEILnPs",
            long_values: &[
                "--arg-file",
                "--delimiter",
                "--max-lines",
                "--max-args",
                "--max-procs",
                "--max-chars",
                "--process-slot-var",
            ],
            operands: 0,
        },
        "sudo" | "doas" => WrapperOptions {
            short_values: "CDghpRrtTUu",
            long_values: &[
                "--close-from",
                "--chdir",
                "--group",
                "--host",
                "--prompt",
                "--chroot",
                "--role",
                "--type",
                "--command-timeout",
                "--other-user",
                "--user",
            ],
            operands: 0,
        },
        "stdbuf" => WrapperOptions {
            short_values: "ioe",
            long_values: &["--input", "--output", "--error"],
            operands: 0,
        },
        "ionice" => WrapperOptions {
            short_values: "cn",
            long_values: &["--class", "--classdata"],
            operands: 0,
        },
        "time" => WrapperOptions {
            short_values: "fo",
            long_values: &["--format", "--output"],
            operands: 0,
        },
        "exec" => WrapperOptions {
            short_values: "a",
            long_values: &[],
            operands: 0,
        },
        // `flock [-w SECONDS] FILE CMD…` (`-c CMD` is read as a shell's).
        "flock" => WrapperOptions {
            short_values: "wE",
            long_values: &["--timeout", "--conflict-exit-code"],
            operands: 1,
        },
        // `taskset [-c] MASK CMD…`, `chrt [-o|-f|-r…] PRIORITY CMD…`.
        "taskset" => WrapperOptions {
            short_values: "",
            long_values: &[],
            operands: 1,
        },
        "chrt" => WrapperOptions {
            short_values: "TPD",
            long_values: &["--sched-runtime", "--sched-period", "--sched-deadline"],
            operands: 1,
        },
        "runuser" => WrapperOptions {
            short_values: "ugGsw",
            long_values: &[
                "--user",
                "--group",
                "--supp-group",
                "--shell",
                "--whitelist-environment",
            ],
            operands: 0,
        },
        "command" | "builtin" | "nohup" | "setsid" | "chronic" | "unbuffer" | "coproc" => {
            WrapperOptions {
                short_values: "",
                long_values: &[],
                operands: 0,
            }
        }
        _ => return None,
    };
    Some(options)
}

/// `timeout`, `env`, `nice`, `xargs` and the like: the command they run.
/// `None` when `program` is no wrapper.
fn unwrap(program: &str, args: &[Arg]) -> Option<Unwrapped> {
    let options = wrapper_options(program)?;
    let mut unwrapped = Unwrapped {
        command: Vec::new(),
        env: Vec::new(),
        dir: None,
        more_args: None,
        runs: true,
    };
    let mut replace: Option<String> = None;
    let mut rest = args.iter();
    let mut operands = options.operands;
    while let Some(arg) = rest.next() {
        if matches!(program, "env" | "sudo") {
            if let Some((name, value)) = split_assignment(arg) {
                unwrapped.env.push((name, value));
                continue;
            }
        }
        let Some(word) = arg.literal() else {
            // An option or the command, known only when it runs.
            unwrapped.command.push(arg.clone());
            break;
        };
        if word == "--" {
            continue;
        }
        if let Some(long) = word.strip_prefix("--") {
            let (name, attached, value) = long_option(long, options.long_values, &mut rest);
            match (program, name) {
                ("env", "chdir") => unwrapped.dir = value,
                ("env", "split-string") => split_string(&mut unwrapped, value),
                ("xargs", "replace") => replace = Some(attached.unwrap_or_else(|| "{}".to_owned())),
                _ => {}
            }
            continue;
        }
        if program == "nice" && word.len() > 1 && word[1..].chars().all(|c| c.is_ascii_digit()) {
            // nice -10 cmd
            continue;
        }
        if let Some(flags) = word.strip_prefix('-').filter(|f| !f.is_empty()) {
            short_options(
                program,
                flags,
                options.short_values,
                &mut rest,
                &mut unwrapped,
                &mut replace,
            );
            continue;
        }
        if operands > 0 {
            operands -= 1;
            continue;
        }
        unwrapped.command.push(arg.clone());
        break;
    }
    unwrapped.command.extend(rest.cloned());
    if program == "xargs" {
        xargs_arguments(&mut unwrapped, replace.as_deref());
    }
    Some(unwrapped)
}

/// A wrapper's long option (the word after `--`): its name, the value given
/// with `=`, and its value (that one, or the next word when the option takes
/// one).
fn long_option<'a>(
    long: &'a str,
    long_values: &[&str],
    rest: &mut std::slice::Iter<'_, Arg>,
) -> (&'a str, Option<String>, Option<Arg>) {
    let (name, attached) = match long.split_once('=') {
        Some((name, value)) => (name, Some(value.to_owned())),
        None => (long, None),
    };
    let takes_value = long_values.contains(&format!("--{name}").as_str());
    let value = match (&attached, takes_value) {
        (Some(v), _) => Some(Arg::text(v)),
        (None, true) => rest.next().cloned(),
        (None, false) => None,
    };
    (name, attached, value)
}

/// A wrapper's cluster of short options (`-k5`, `-n 10`, `-vp`) and what they
/// change in what it runs. The first option that takes a value ends the
/// cluster: its value is the rest of the word, or else the next word.
fn short_options(
    program: &str,
    flags: &str,
    short_values: &str,
    rest: &mut std::slice::Iter<'_, Arg>,
    unwrapped: &mut Unwrapped,
    replace: &mut Option<String>,
) {
    for (i, flag) in flags.char_indices() {
        if program == "command" && matches!(flag, 'v' | 'V') {
            unwrapped.runs = false;
        }
        if program == "xargs" && matches!(flag, 'i' | 'e' | 'l') {
            // Optional values, attached only.
            if flag == 'i' {
                let value = &flags[i + 1..];
                *replace = Some(if value.is_empty() {
                    "{}".to_owned()
                } else {
                    value.to_owned()
                });
            }
            break;
        }
        if short_values.contains(flag) {
            let attached = &flags[i + flag.len_utf8()..];
            let value = if attached.is_empty() {
                rest.next().cloned()
            } else {
                Some(Arg::text(attached))
            };
            match (program, flag) {
                ("env", 'C') => unwrapped.dir = value,
                ("env", 'S') => split_string(unwrapped, value),
                ("xargs", 'I') => *replace = value.and_then(|v| v.literal()),
                _ => {}
            }
            break;
        }
    }
}

/// `env -S STRING`: the words of the string start the command.
fn split_string(unwrapped: &mut Unwrapped, value: Option<Arg>) {
    if let Some(split) = value {
        unwrapped.command.extend(split_words(&split));
    }
}

/// `xargs`: with `-I MARKER`, the arguments holding the marker are known only
/// when it runs; without, it adds arguments from its standard input. Alone, it
/// runs `echo`.
fn xargs_arguments(unwrapped: &mut Unwrapped, replace: Option<&str>) {
    match replace {
        Some(marker) => {
            for arg in unwrapped.command.iter_mut().skip(1) {
                if arg.literal().is_some_and(|l| l.contains(marker)) {
                    *arg = Arg::unknown(&arg.spelled);
                }
            }
        }
        None => {
            unwrapped.more_args =
                Some("xargs adds arguments read from its standard input".to_owned());
        }
    }
    if unwrapped.command.is_empty() {
        // xargs alone runs echo.
        unwrapped.runs = false;
    }
}

/// `env -S STRING`: the string split into words as a shell would.
fn split_words(string: &Arg) -> Vec<Arg> {
    let Some(text) = string.literal() else {
        return vec![Arg::unknown(&string.spelled)];
    };
    let mut reader = Reader::default();
    match parse(&text) {
        Ok(program) => {
            let state = State::default();
            let mut words = Vec::new();
            for list in &program.complete_commands {
                for ast::CompoundListItem(and_or, _) in &list.0 {
                    for command in &and_or.first.seq {
                        if let ast::Command::Simple(simple) = command {
                            for word in
                                simple.word_or_name.iter().chain(
                                    simple.suffix.iter().flat_map(|s| &s.0).filter_map(
                                        |i| match i {
                                            ast::CommandPrefixOrSuffixItem::Word(w) => Some(w),
                                            _ => None,
                                        },
                                    ),
                                )
                            {
                                words.push(reader.word(word, &state));
                            }
                        }
                    }
                }
            }
            words
        }
        Err(_) => vec![Arg::unknown(&string.spelled)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn programs(line: &str) -> Vec<String> {
        invocations(line)
            .unwrap()
            .iter()
            .map(|i| {
                let words: Vec<&str> = i.args.iter().map(|a| a.spelled.as_str()).collect();
                match &i.opaque {
                    Some(_) => format!("opaque {}", words.join(" ")),
                    None => words.join(" "),
                }
            })
            .collect()
    }

    #[test]
    fn a_heredoc_commit_message_is_data() {
        for line in [
            "git commit -m \"$(cat <<'EOF'\nfix: push it\n\nnever git push -f.\nEOF\n)\"",
            "echo n >> a && git commit -q -m \"$(cat <<'EOF'\ndocs: how to push\n\nRun git push origin b, never git push -f.\nEOF\n)\"",
            "git commit -m \"$(cat <<EOF\nchore: push-per-task\nEOF\n)\"",
        ] {
            let found = programs(line);
            assert!(found.iter().all(|p| !p.starts_with("cat")), "{line}: {found:?}");
            assert!(found.iter().any(|p| p.starts_with("git commit")), "{line}: {found:?}");
        }
    }

    #[test]
    fn nested_subshells_are_no_arithmetic() {
        for line in [
            "( ( git push x ) )",
            "((git push x) )",
            "( ( ( git push x ) ) )",
            "echo $( (git push x) )",
        ] {
            let found = programs(line);
            assert!(found.iter().any(|p| p == "git push x"), "{line}: {found:?}");
        }
    }

    #[test]
    fn what_cannot_be_read_is_opaque_and_nothing_overflows() {
        for line in [
            "bash -s < f",
            "cat f | bash",
            "sh -c \"$(cat f)\"",
            "eval \"$CMD\"",
            &format!("{}git push{}", "eval ".repeat(12), ""),
        ] {
            let found = programs(line);
            assert!(
                found.iter().any(|p| p.starts_with("opaque")),
                "{line}: {found:?}"
            );
        }
        for line in [
            format!("{}git push; {}", "{ ".repeat(5000), "}; ".repeat(5000)),
            format!(
                "{}git push{}",
                "if true; then ".repeat(3000),
                "; fi".repeat(3000)
            ),
            format!("{}git push{}", "$(".repeat(3000), ")".repeat(3000)),
        ] {
            assert!(
                matches!(invocations(&line), Err(Unreadable::TooBig(_))),
                "{}",
                &line[..40]
            );
        }
        // A function runs where it is called, and only there.
        assert_eq!(programs("f() { git push; }"), Vec::<String>::new());
        assert_eq!(programs("f() { git push; }; f"), ["git push"]);
    }
}
