//! A JSON Schema validator for the subset GitHub's published schemas use
//! (`shared/github-api/schemas/`): `type` (one or several, "null" included),
//! `nullable`, `enum`, `const`, `required`, `properties`,
//! `additionalProperties`, `items`, `prefixItems`, `minItems` / `maxItems`,
//! `minimum` / `maximum`, `anyOf` / `oneOf` / `allOf`, and `$ref`
//! to a JSON pointer in the same document (`#/$defs/…`, `#/definitions/…`,
//! `#/components/schemas/…`). Annotations (`format`, `title`, `default`…)
//! are ignored. Any other keyword is reported as unsupported rather than
//! silently passed, so a richer schema cannot make a test vacuous.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// `fixtures/github-api/`, copied from the project's shared/github-api (see its NOTICE.md).
pub fn github_api_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/github-api")
}

/// Reads a JSON file under `fixtures/github-api/`, or panics saying what is missing.
pub fn load_github_api_json(relative: &str) -> Value {
    let path = github_api_dir().join(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "cannot read {} ({error}): GitHub's schemas and recordings belong in \
             fixtures/github-api/",
            path.display()
        )
    });
    serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{} is not JSON: {error}", path.display()))
}

/// The schema of one command's `--json` output, `schemas/NAME.schema.json`.
pub fn command_schema(name: &str) -> Schema {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schemas")
        .join(format!("{name}.schema.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "no schema for `{name}` ({error}): every command's --json output has one in schemas/"
        )
    });
    let root = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{} is not JSON: {error}", path.display()));
    Schema::from_value(&format!("schemas/{name}.schema.json"), root)
}

pub struct Schema {
    name: String,
    root: Value,
}

const ANNOTATIONS: &[&str] = &[
    "$schema",
    "$id",
    "$comment",
    "$defs",
    "definitions",
    "components",
    "title",
    "description",
    "format",
    "default",
    "example",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

impl Schema {
    /// A schema file in `fixtures/github-api/schemas/`, such as `issue.trimmed.schema.json`.
    pub fn load(file: &str) -> Schema {
        Schema::from_value(file, load_github_api_json(&format!("schemas/{file}")))
    }

    pub fn from_value(name: &str, root: Value) -> Schema {
        Schema {
            name: name.to_string(),
            root,
        }
    }

    /// Every violation, each prefixed with the JSON pointer of the offending value.
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<String>> {
        let mut errors = Vec::new();
        self.check(&self.root, instance, "", &mut errors, 0);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    pub fn assert_valid(&self, instance: &Value) {
        if let Err(errors) = self.validate(instance) {
            let shown: String = instance.to_string().chars().take(2000).collect();
            panic!(
                "does not validate against {}:\n  {}\ninstance: {shown}",
                self.name,
                errors.join("\n  ")
            );
        }
    }

    /// Every item of an array answer validates against the schema.
    pub fn assert_valid_items(&self, instance: &Value) {
        let items = instance
            .as_array()
            .unwrap_or_else(|| panic!("expected an array of {}, got {instance}", self.name));
        for item in items {
            self.assert_valid(item);
        }
    }

    fn check(
        &self,
        schema: &Value,
        instance: &Value,
        at: &str,
        errors: &mut Vec<String>,
        depth: usize,
    ) {
        if depth > 64 {
            errors.push(format!("{at}: $ref nesting too deep in {}", self.name));
            return;
        }
        let schema = match schema {
            Value::Bool(true) => return,
            Value::Bool(false) => {
                errors.push(format!("{at}: no value is allowed here"));
                return;
            }
            Value::Object(schema) => schema,
            _ => {
                errors.push(format!("{at}: the schema is not an object"));
                return;
            }
        };
        for (keyword, value) in schema {
            match keyword.as_str() {
                "$ref" => match value.as_str().and_then(|pointer| self.resolve(pointer)) {
                    Some(target) => self.check(target, instance, at, errors, depth + 1),
                    None => errors.push(format!("{at}: unresolvable $ref {value}")),
                },
                "type" => {
                    let nullable = schema.get("nullable") == Some(&Value::Bool(true));
                    let allowed: Vec<&str> = match value {
                        Value::String(name) => vec![name.as_str()],
                        Value::Array(names) => names.iter().filter_map(Value::as_str).collect(),
                        _ => Vec::new(),
                    };
                    let matches = allowed.iter().any(|name| type_matches(name, instance))
                        || (nullable && instance.is_null());
                    if !matches {
                        errors.push(format!(
                            "{at}: expected {value}, got {}",
                            describe(instance)
                        ));
                    }
                }
                "nullable" => {}
                "enum" => {
                    let options = value.as_array().map(Vec::as_slice).unwrap_or_default();
                    let nullable = schema.get("nullable") == Some(&Value::Bool(true));
                    if !(options.contains(instance) || nullable && instance.is_null()) {
                        errors.push(format!("{at}: {instance} is not one of {value}"));
                    }
                }
                "const" => {
                    if instance != value {
                        errors.push(format!("{at}: expected {value}, got {instance}"));
                    }
                }
                "required" => {
                    if let Some(object) = instance.as_object() {
                        for name in value
                            .as_array()
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                        {
                            if !object.contains_key(name) {
                                errors.push(format!("{at}: missing required property {name:?}"));
                            }
                        }
                    }
                }
                "properties" => {
                    if let (Some(object), Some(properties)) =
                        (instance.as_object(), value.as_object())
                    {
                        for (name, property) in properties {
                            if let Some(field) = object.get(name) {
                                let path = format!("{at}/{}", escape_pointer(name));
                                self.check(property, field, &path, errors, depth + 1);
                            }
                        }
                    }
                }
                "additionalProperties" => {
                    if let Some(object) = instance.as_object() {
                        let declared = schema.get("properties").and_then(Value::as_object);
                        for (name, field) in object {
                            if declared.is_some_and(|declared| declared.contains_key(name)) {
                                continue;
                            }
                            let path = format!("{at}/{}", escape_pointer(name));
                            self.check(value, field, &path, errors, depth + 1);
                        }
                    }
                }
                "items" => {
                    // Beyond `prefixItems`, when the schema has them (2020-12).
                    let skip = schema
                        .get("prefixItems")
                        .and_then(Value::as_array)
                        .map_or(0, Vec::len);
                    if let Some(items) = instance.as_array() {
                        for (index, item) in items.iter().enumerate().skip(skip) {
                            self.check(value, item, &format!("{at}/{index}"), errors, depth + 1);
                        }
                    }
                }
                "prefixItems" => {
                    if let (Some(items), Some(prefix)) = (instance.as_array(), value.as_array()) {
                        for (index, (item, schema)) in items.iter().zip(prefix).enumerate() {
                            self.check(schema, item, &format!("{at}/{index}"), errors, depth + 1);
                        }
                    }
                }
                "minItems" | "maxItems" => {
                    if let (Some(items), Some(bound)) = (instance.as_array(), value.as_u64()) {
                        let len = items.len() as u64;
                        let fits = if keyword == "minItems" {
                            len >= bound
                        } else {
                            len <= bound
                        };
                        if !fits {
                            errors.push(format!("{at}: {len} items, {keyword} is {bound}"));
                        }
                    }
                }
                "minimum" | "maximum" => {
                    if let (Some(number), Some(bound)) = (instance.as_f64(), value.as_f64()) {
                        let fits = if keyword == "minimum" {
                            number >= bound
                        } else {
                            number <= bound
                        };
                        if !fits {
                            errors.push(format!("{at}: {instance} is beyond {keyword} {value}"));
                        }
                    }
                }
                "allOf" | "anyOf" | "oneOf" => {
                    let branches = value.as_array().map(Vec::as_slice).unwrap_or_default();
                    let failures: Vec<Vec<String>> = branches
                        .iter()
                        .map(|branch| {
                            let mut branch_errors = Vec::new();
                            self.check(branch, instance, at, &mut branch_errors, depth + 1);
                            branch_errors
                        })
                        .collect();
                    let passed = failures.iter().filter(|failure| failure.is_empty()).count();
                    match keyword.as_str() {
                        "allOf" => errors.extend(failures.into_iter().flatten()),
                        "anyOf" if passed == 0 => errors.push(format!(
                            "{at}: matches no branch of anyOf: {}",
                            failures.concat().join("; ")
                        )),
                        "oneOf" if passed != 1 => errors.push(format!(
                            "{at}: matches {passed} branches of oneOf, not exactly one: {}",
                            failures.concat().join("; ")
                        )),
                        _ => {}
                    }
                }
                keyword if ANNOTATIONS.contains(&keyword) || keyword.starts_with("x-") => {}
                keyword => errors.push(format!(
                    "{at}: keyword {keyword:?} is not supported by this validator"
                )),
            }
        }
    }

    /// A local JSON pointer such as `#/$defs/simple-user`.
    fn resolve(&self, reference: &str) -> Option<&Value> {
        let pointer = reference.strip_prefix('#')?;
        if pointer.is_empty() {
            return Some(&self.root);
        }
        self.root.pointer(pointer)
    }
}

fn type_matches(name: &str, instance: &Value) -> bool {
    match name {
        "null" => instance.is_null(),
        "boolean" => instance.is_boolean(),
        "string" => instance.is_string(),
        "number" => instance.is_number(),
        "integer" => match instance {
            Value::Number(number) => {
                number.is_i64()
                    || number.is_u64()
                    || number.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        },
        "array" => instance.is_array(),
        "object" => instance.is_object(),
        _ => false,
    }
}

fn describe(instance: &Value) -> String {
    let kind = match instance {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let text = instance.to_string();
    let shown: String = text.chars().take(80).collect();
    let ellipsis = if shown.len() < text.len() { "..." } else { "" };
    format!("{kind} {shown}{ellipsis}")
}

fn escape_pointer(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}
