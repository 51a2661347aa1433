//! Typed ids, each with one parse rule.
//!
//! - [`ObjectId`]: a full git object id, 40 hex digits (SHA-1) or 64
//!   (SHA-256), as git prints it; [`ObjectPrefix`]: an abbreviation of one,
//!   as a person types it or a tasks comment shows it.
//! - [`InstanceId`]: who holds a claim. The ids this instance acts as are
//!   path-safe ([`InstanceId::parse`]), because a clone keeps records named
//!   after them; an id read from another writer's marker is kept as written
//!   ([`InstanceId::of_marker`]).

use std::fmt;

/// The hash a repository names its objects with (`extensions.objectFormat`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectFormat {
    Sha1,
    Sha256,
}

impl ObjectFormat {
    /// How many hex digits a full id of this format has.
    pub const fn hex_len(self) -> usize {
        match self {
            ObjectFormat::Sha1 => 40,
            ObjectFormat::Sha256 => 64,
        }
    }

    fn of_len(len: usize) -> Option<ObjectFormat> {
        match len {
            40 => Some(ObjectFormat::Sha1),
            64 => Some(ObjectFormat::Sha256),
            _ => None,
        }
    }
}

/// Why a text is not an id.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("{0:?} is not a full object id (40 hex digits for SHA-1, 64 for SHA-256)")]
    NotObjectId(String),
    #[error(
        "{0:?} is not a commit id: {min} to 64 hex digits",
        min = ObjectPrefix::MIN_LEN
    )]
    NotObjectPrefix(String),
    #[error(
        "{0:?} is not a valid instance id: 1 to 64 of A-Z a-z 0-9 - _ ., not starting with . or -"
    )]
    NotInstanceId(String),
}

fn is_hex(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A full object id, lower-case hex.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectId(String);

impl ObjectId {
    /// A full id of either format, in any case (kept lower-case).
    pub fn parse(text: &str) -> Result<ObjectId, IdError> {
        match ObjectFormat::of_len(text.len()) {
            Some(_) if is_hex(text) => Ok(ObjectId(text.to_ascii_lowercase())),
            _ => Err(IdError::NotObjectId(text.to_owned())),
        }
    }

    pub fn format(&self) -> ObjectFormat {
        ObjectFormat::of_len(self.0.len()).expect("parsed as 40 or 64 digits")
    }

    /// Git's name for "no object": all zeros (a ref that does not exist, on
    /// the pre-push hook's stdin).
    pub fn is_null(&self) -> bool {
        self.0.bytes().all(|b| b == b'0')
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The seven-digit abbreviation a tasks comment shows.
    pub fn short(&self) -> &str {
        &self.0[..ObjectPrefix::SHOWN_LEN]
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// An abbreviated (or full) object id of either format.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjectPrefix(String);

impl ObjectPrefix {
    /// Git's own minimum abbreviation (`core.abbrev`, `--short=4`).
    pub const MIN_LEN: usize = 4;
    /// The length maverick writes, and the shortest it recognises inside a
    /// person's text (a four-digit word like `cafe` is more often a word).
    pub const SHOWN_LEN: usize = 7;

    /// What a person may type: 4 to 64 hex digits, any case (kept lower-case).
    pub fn parse(text: &str) -> Result<ObjectPrefix, IdError> {
        Self::parse_at_least(text, Self::MIN_LEN)
            .ok_or_else(|| IdError::NotObjectPrefix(text.to_owned()))
    }

    /// An id written in prose (a tasks comment's `` (`3f2c1aa`) ``): lower-case
    /// hex only, as git prints it, at least [`Self::SHOWN_LEN`] digits.
    pub fn in_text(text: &str) -> Option<ObjectPrefix> {
        let lower = text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        Self::parse_at_least(text, Self::SHOWN_LEN).filter(|_| lower)
    }

    fn parse_at_least(text: &str, min: usize) -> Option<ObjectPrefix> {
        let max = ObjectFormat::Sha256.hex_len();
        ((min..=max).contains(&text.len()) && is_hex(text))
            .then(|| ObjectPrefix(text.to_ascii_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `id` starts with this prefix.
    pub fn matches(&self, id: &ObjectId) -> bool {
        id.as_str().starts_with(&self.0)
    }
}

impl fmt::Display for ObjectPrefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who holds a claim: an agent session's derived id, a configured name, or
/// a clone's generated `<host>-<8 hex>`. A string on disk and on the wire
/// (its JSON and its schema are a string's).
#[derive(
    Clone,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct InstanceId(String);

/// A string's schema, inlined: the schemas of the JSON output name no type
/// of their own for an id.
impl schemars::JsonSchema for InstanceId {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> std::borrow::Cow<'static, str> {
        String::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(generator)
    }
}

impl InstanceId {
    /// An id this instance acts as or keeps a record under (configuration,
    /// the environment, a clone's own file): [`valid_instance_id`] or an
    /// error.
    pub fn parse(text: &str) -> Result<InstanceId, IdError> {
        if valid_instance_id(text) {
            Ok(InstanceId(text.to_owned()))
        } else {
            Err(IdError::NotInstanceId(text.to_owned()))
        }
    }

    /// The instance of an agent session, derived as Maverick derives it: the
    /// first 10 hex digits of the SHA-256 of the session id, exactly as
    /// given (no trimming, no case folding), so one session is one instance
    /// whichever tool it runs (SPEC 2).
    pub fn of_session(session: &str) -> InstanceId {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(session.as_bytes());
        InstanceId(digest[..5].iter().map(|b| format!("{b:02x}")).collect())
    }

    /// An id as another writer's marker or record carries it, kept as
    /// written. Maverick takes `MAVERICK_INSTANCE_ID` as given, any text,
    /// so its claims may name ids [`valid_instance_id`] refuses; refusing
    /// them would hide a live claim and invite double work. Such an id is
    /// only compared and printed, never made a path.
    pub fn of_marker(text: impl Into<String>) -> InstanceId {
        InstanceId(text.into())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl PartialEq<str> for InstanceId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for InstanceId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl From<InstanceId> for String {
    fn from(id: InstanceId) -> String {
        id.0
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The one rule for an instance id: 1 to 64 of `A-Z a-z 0-9 - _ .`, not
/// starting with `.` or `-` (it names files and must never be an option).
pub fn valid_instance_id(id: &str) -> bool {
    (1..=64).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.starts_with(['.', '-'])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA1: &str = "3f2c1aa0d6b1f1c3b1e4a7a3d8f0c2b9e5a6d7c8";
    const SHA256: &str = "3f2c1aa0d6b1f1c3b1e4a7a3d8f0c2b9e5a6d7c83f2c1aa0d6b1f1c3b1e4a7a3";

    #[test]
    fn full_ids_of_both_formats() {
        assert_eq!(ObjectId::parse(SHA1).unwrap().format(), ObjectFormat::Sha1);
        assert_eq!(
            ObjectId::parse(SHA256).unwrap().format(),
            ObjectFormat::Sha256
        );
        assert_eq!(
            ObjectId::parse(&SHA1.to_uppercase()).unwrap().as_str(),
            SHA1
        );
        for bad in [
            "",
            "3f2c1aa",
            &SHA1[..39],
            &SHA256[..63],
            &format!("{SHA1}0"),
        ] {
            assert!(ObjectId::parse(bad).is_err(), "{bad}");
        }
        assert!(ObjectId::parse(&"z".repeat(40)).is_err());
        assert!(ObjectId::parse(&"0".repeat(64)).unwrap().is_null());
        assert!(!ObjectId::parse(SHA1).unwrap().is_null());
        assert_eq!(ObjectId::parse(SHA256).unwrap().short(), "3f2c1aa");
    }

    #[test]
    fn prefixes_from_four_digits_to_a_full_sha256() {
        for good in ["3f2c", "3F2C1AA", SHA1, SHA256] {
            let prefix = ObjectPrefix::parse(good).unwrap();
            assert!(prefix.matches(&ObjectId::parse(SHA256).unwrap()), "{good}");
        }
        for bad in ["3f2", "3f2g", "", &format!("{SHA256}0")] {
            assert!(ObjectPrefix::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prefixes_in_text_are_lower_case_and_seven_digits_or_more() {
        assert!(ObjectPrefix::in_text("3f2c1aa").is_some());
        assert!(ObjectPrefix::in_text(SHA256).is_some());
        assert!(ObjectPrefix::in_text("cafe").is_none());
        assert!(ObjectPrefix::in_text("3F2C1AA").is_none());
        assert!(ObjectPrefix::in_text(&format!("{SHA256}0")).is_none());
    }

    #[test]
    fn instance_ids() {
        assert_eq!(InstanceId::of_session("").as_str(), "e3b0c44298");
        assert_eq!(InstanceId::of_session("abc").as_str(), "ba7816bf8f");
        assert_eq!(
            InstanceId::of_session("9F1C-77aa-bb").as_str(),
            "eb3463a043"
        );
        assert!(InstanceId::parse("laptop-1a2b3c4d").is_ok());
        assert!(InstanceId::parse("claude_A.1").is_ok());
        for bad in ["", ".x", "-x", "a b", "ci runner/7", &"a".repeat(65)] {
            assert!(InstanceId::parse(bad).is_err(), "{bad}");
        }
    }
}
