//! The layout's two rules (issue 10, README "Layout"), read from the
//! source: no library module imports the command layer (`commands`, `cli`),
//! and the modules (one a file) import one another without a cycle, but
//! for clap's `cli` and `commands`.
//!
//! A module's imports are the `crate::…` paths (and `super::…` paths) its
//! file names outside its unit tests, resolved to the longest module path
//! they start with.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/writer/mod.rs` → `writer`, `src/writer/push.rs` → `writer::push`.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?.with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    match parts.as_slice() {
        [one] if one == "main" || one == "lib" => None,
        _ => Some(parts.join("::")),
    }
}

/// The code of a file without comments and without its unit tests.
fn code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path that follows `prefix` (`crate::`, `super::`), with a `use`
/// group's items each made a path of their own.
fn paths_after(code: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(rest.len());
        let base = rest[..end].trim_end_matches(':');
        if rest[end..].starts_with('{') && rest[..end].ends_with("::") {
            let close = rest[end..].find('}').map_or(rest.len(), |c| end + c);
            for item in rest[end + 1..close].split(',') {
                let item = item.trim().split([' ', ':']).next().unwrap_or_default();
                match item {
                    "" | "self" => out.push(base.to_owned()),
                    name => out.push(format!("{base}::{name}")),
                }
            }
        } else {
            out.push(base.to_owned());
        }
    }
    out
}

fn graph() -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeMap<String, PathBuf> = files
        .into_iter()
        .filter_map(|f| Some((module_of(&src, &f)?, f)))
        .collect();
    let resolve = |path: &str| {
        let parts: Vec<&str> = path.split("::").collect();
        (1..=parts.len())
            .rev()
            .map(|n| parts[..n].join("::"))
            .find(|m| modules.contains_key(m))
    };
    let mut graph = Graph::new();
    for (module, file) in &modules {
        let code = code(&std::fs::read_to_string(file).unwrap());
        let parent = module.rsplit_once("::").map(|(p, _)| p);
        let mut paths = paths_after(&code, "crate::");
        paths.extend(
            paths_after(&code, "super::")
                .into_iter()
                .map(|p| parent.map_or(p.clone(), |parent| format!("{parent}::{p}"))),
        );
        let imports = graph.entry(module.clone()).or_default();
        for target in paths.iter().filter_map(|p| resolve(p)) {
            // A module's own children, and its ancestors' items it names
            // through `super::`, are not imports between modules.
            let own = target == *module || target.starts_with(&format!("{module}::"));
            let ancestor = module.starts_with(&format!("{target}::"));
            if !own && !ancestor {
                imports.insert(target);
            }
        }
    }
    graph
}

fn in_command_layer(module: &str) -> bool {
    module == "cli" || module == "commands" || module.starts_with("commands::")
}

#[test]
fn no_library_module_imports_the_command_layer() {
    let graph = graph();
    assert!(
        graph.contains_key("writer::prepush") && graph.contains_key("commands::hook"),
        "the module graph was not read: {:?}",
        graph.keys().collect::<Vec<_>>()
    );
    let offenders: Vec<String> = graph
        .iter()
        .filter(|(module, _)| !in_command_layer(module))
        .flat_map(|(module, imports)| {
            imports
                .iter()
                .filter(|i| in_command_layer(i))
                .map(move |i| format!("{module} imports {i}"))
        })
        .collect();
    assert!(offenders.is_empty(), "{offenders:#?}");
}

/// Tarjan's strongly connected components with more than one module.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Walk<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            for w in self.graph.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.stack.contains(&w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let at = self.stack.iter().position(|m| *m == v).unwrap();
                let component: Vec<String> = self.stack.drain(at..).map(str::to_owned).collect();
                if component.len() > 1 {
                    self.out.push(component);
                }
            }
        }
    }
    let mut walk = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for module in graph.keys() {
        if !walk.index.contains_key(module.as_str()) {
            walk.visit(module);
        }
    }
    walk.out
}

#[test]
fn modules_import_one_another_without_a_cycle_but_cli_and_commands() {
    let graph = graph();
    let found: Vec<Vec<String>> = cycles(&graph)
        .into_iter()
        .filter(|component| !component.iter().all(|m| in_command_layer(m)))
        .collect();
    assert!(found.is_empty(), "import cycles: {found:#?}");
    // The check finds a cycle where there is one.
    let mut broken = graph.clone();
    broken
        .entry("git".into())
        .or_default()
        .insert("writer::prepush".into());
    assert!(
        cycles(&broken)
            .iter()
            .any(|c| c.iter().any(|folder| folder == "git")),
        "a cycle through git was not found"
    );
}

/// The top-level module (a folder of `src/`, or a file directly in it) each
/// module belongs to: `writer::prepush` → `writer`.
fn folder_graph(graph: &Graph) -> Graph {
    let top = |m: &str| m.split("::").next().unwrap_or(m).to_owned();
    let mut folders = Graph::new();
    for (module, imports) in graph {
        let from = top(module);
        let entry = folders.entry(from.clone()).or_default();
        entry.extend(imports.iter().map(|i| top(i)).filter(|to| *to != from));
    }
    folders
}

#[test]
fn folders_import_one_another_without_a_cycle_but_cli_and_commands() {
    let folders = folder_graph(&graph());
    for layer in [
        "records", "workflow", "coord", "durable", "writer", "surface", "agents",
    ] {
        assert!(
            folders.contains_key(layer),
            "no {layer} folder: {folders:#?}"
        );
    }
    let found: Vec<Vec<String>> = cycles(&folders)
        .into_iter()
        .filter(|component| !component.iter().all(|m| in_command_layer(m)))
        .collect();
    assert!(
        found.is_empty(),
        "import cycles between folders: {found:#?}"
    );
    // The promise folders sit below the workflows, and the local records
    // and the marker format below every promise and surface.
    for (from, to) in [
        ("coord", "workflow"),
        ("durable", "workflow"),
        ("writer", "workflow"),
        ("surface", "coord"),
        ("records", "coord"),
        ("records", "writer"),
        ("markers", "surface"),
        // The agents' Bash guard asks the writer's records and rules; no
        // promise, record or surface reaches up into it.
        ("writer", "agents"),
        ("coord", "agents"),
        ("durable", "agents"),
        ("records", "agents"),
        ("surface", "agents"),
        ("workflow", "agents"),
        ("git", "agents"),
    ] {
        assert!(
            !folders[from].contains(to),
            "{from} imports {to}, which sits above it"
        );
    }
    // The check finds a cycle between folders where there is one: a file of
    // `records` reaching up into `coord`.
    let mut broken = graph();
    broken
        .entry("records::claim".into())
        .or_default()
        .insert("coord::lease".into());
    assert!(
        cycles(&folder_graph(&broken))
            .iter()
            .any(|c| c.iter().any(|folder| folder == "records")),
        "a cycle through records was not found"
    );
}

/// The longest a function in `src/` may be, from its `fn` line to its
/// closing brace: a longer one is split into named steps.
const MAX_FUNCTION_LINES: usize = 120;

/// `text` with every comment, string literal and character literal blanked
/// out (newlines kept), so that the braces left are the code's.
fn code_only(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let blank = |out: &mut Vec<u8>, part: &[u8]| {
        out.extend(part.iter().map(|&b| if b == b'\n' { b'\n' } else { b' ' }));
    };
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        let end = if rest.starts_with(b"//") {
            rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            let mut j = 0;
            loop {
                if rest[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if rest[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break j;
                    }
                } else {
                    j += 1;
                }
            }
        } else if let Some(len) = raw_string_len(rest) {
            len
        } else if rest[0] == b'"' || rest.starts_with(b"b\"") {
            let mut j = if rest[0] == b'"' { 1 } else { 2 };
            while rest[j] != b'"' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else if rest[0] == b'\'' && rest.len() > 2 && (rest[1] == b'\\' || rest[2] == b'\'') {
            // A character literal ('x', '\n', '\'', '\u{7b}'), not a lifetime.
            let mut j = 1;
            while rest[j] != b'\'' {
                j += if rest[j] == b'\\' { 2 } else { 1 };
            }
            j + 1
        } else {
            out.push(rest[0]);
            i += 1;
            continue;
        };
        blank(&mut out, &rest[..end]);
        i += end;
    }
    String::from_utf8(out).expect("only ASCII was blanked")
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the
/// start of `rest`.
fn raw_string_len(rest: &[u8]) -> Option<usize> {
    let start = if rest.starts_with(b"br") {
        2
    } else if rest.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = rest[start..].iter().take_while(|&&b| b == b'#').count();
    if rest.get(start + hashes) != Some(&b'"') {
        return None;
    }
    let close: Vec<u8> = std::iter::once(b'"')
        .chain(std::iter::repeat_n(b'#', hashes))
        .collect();
    let body = start + hashes + 1;
    let end = rest[body..]
        .windows(close.len())
        .position(|w| w == close.as_slice())?;
    Some(body + end + close.len())
}

/// Every function with a body in `code` (as [`code_only`] leaves it): its
/// name and how many lines it spans, from its `fn` line to its closing brace.
fn function_lengths(code: &str) -> Vec<(String, usize)> {
    let bytes = code.as_bytes();
    let line_of = |at: usize| bytes[..at].iter().filter(|&&b| b == b'\n').count();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let mut found = Vec::new();
    let mut at = 0;
    while let Some(pos) = code[at..].find("fn ") {
        let start = at + pos;
        at = start + 3;
        if start > 0 && word(bytes[start - 1]) {
            continue;
        }
        let name: String = code[at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if name.is_empty() {
            continue;
        }
        // The body opens at the first `{` outside the signature's brackets;
        // a `;` first is a declaration without one.
        let mut depth = 0i32;
        let mut open = None;
        for (i, &b) in bytes.iter().enumerate().skip(at) {
            match b {
                b'(' | b'[' | b'<' => depth += 1,
                b')' | b']' => depth -= 1,
                b'>' if bytes[i - 1] != b'-' && bytes[i - 1] != b'=' => depth -= 1,
                b'{' if depth <= 0 => {
                    open = Some(i);
                    break;
                }
                b';' if depth <= 0 => break,
                _ => {}
            }
        }
        let Some(open) = open else { continue };
        let mut braces = 0;
        let close = (open..bytes.len()).find(|&i| {
            match bytes[i] {
                b'{' => braces += 1,
                b'}' => braces -= 1,
                _ => {}
            }
            braces == 0
        });
        if let Some(close) = close {
            found.push((name, line_of(close) - line_of(start) + 1));
        }
    }
    found
}

#[test]
fn no_function_runs_over_120_lines() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut long = Vec::new();
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let text = std::fs::read_to_string(file).unwrap();
        for (name, lines) in function_lengths(&code_only(&text)) {
            if lines > MAX_FUNCTION_LINES {
                long.push(format!("src/{rel}: {name} has {lines} lines"));
            }
        }
    }
    assert!(
        long.is_empty(),
        "functions over {MAX_FUNCTION_LINES} lines; split them into named steps: {long:#?}"
    );
}

#[test]
fn function_lengths_are_read_past_strings_comments_and_nested_blocks() {
    let code = code_only(
        r##"
/// fn not_a_function() {
fn outer(x: Vec<u8>) -> Result<(), String> {
    let s = "{ unbalanced";
    let c = '{';
    let q = '\'';
    let r = r#"}"#;
    // }
    /* } /* nested } */ } */
    if x.is_empty() {
        return Ok(());
    }
    fn inner<'a>(y: &'a str) -> &'a str { y }
    Ok(())
}
trait T { fn declared(&self); }
fn where_clause<F>(f: F) where F: Fn() -> u8 {
    f();
}
"##,
    );
    assert_eq!(
        function_lengths(&code),
        [
            ("outer".to_owned(), 13),
            ("inner".to_owned(), 1),
            ("where_clause".to_owned(), 3)
        ]
    );
}

/// The core crate (core/) is pure: handed the time and the facts, it
/// returns verdicts. Its direct dependencies are held to this list, none of
/// which can read a file, a socket, a process or the clock (chrono only
/// without its `clock` feature).
const CORE_DEPENDENCIES: [&str; 6] = [
    "chrono",
    "schemars",
    "serde",
    "serde_json",
    "sha2",
    "thiserror",
];

/// `[dependencies]` of a manifest: each crate's name and its line.
fn dependencies(manifest: &str) -> Vec<(String, String)> {
    let mut in_deps = false;
    let mut found = Vec::new();
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if !in_deps || line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some((name, _)) = line.split_once('=') {
            found.push((name.trim().trim_matches('"').to_owned(), line.to_owned()));
        }
    }
    found
}

#[test]
fn the_core_crate_depends_on_nothing_that_does_io() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("core/Cargo.toml")).unwrap();
    let deps = dependencies(&manifest);
    assert!(
        !deps.is_empty(),
        "core/Cargo.toml has no [dependencies] read"
    );
    for (name, line) in &deps {
        assert!(
            CORE_DEPENDENCIES.contains(&name.as_str()),
            "the pure core gained a dependency outside its list: {line}"
        );
        assert!(
            !line.contains("clock") && !line.contains("\"now\""),
            "the core may not read the clock: {line}"
        );
    }
    assert!(
        !manifest.contains("[dev-dependencies]") && !manifest.contains("[build-dependencies]"),
        "the core has no build script or dev-dependencies to hide I/O in"
    );
    assert!(!root.join("core/build.rs").exists());
}

#[test]
fn the_core_crate_names_no_io_in_its_source() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("core/src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    assert!(files.len() >= 4, "core/src read: {files:?}");
    let forbidden = [
        "std::fs",
        "std::net",
        "std::process",
        "std::env",
        "std::thread",
        "std::io::std",
        "SystemTime",
        "Instant",
        "Utc::now",
        "Local::now",
        "println!",
        "eprintln!",
        "print!(",
        "eprint!(",
        "unsafe ",
    ];
    for file in &files {
        let text = code(&std::fs::read_to_string(file).unwrap());
        for word in forbidden {
            assert!(!text.contains(word), "{} names {word}", file.display());
        }
    }
    let lib = std::fs::read_to_string(root.join("lib.rs")).unwrap();
    assert!(lib.contains("#![forbid(unsafe_code)]"));
}
