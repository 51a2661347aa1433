//! Local claim records: what this machine last confirmed about its own claims.
//!
//! The surface is the truth; these files are a cache that the pre-push hook
//! and `task done` read without a network call. They live in the common git
//! dir, so every linked worktree of a clone sees them.
//!
//! Which issue a branch belongs to is a claim record naming it, else the
//! one rule for branch names here (`issue_of_branch_name`), which `task`,
//! `resume`, `hydrate` and a damaged record's reach all use.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::records::branch::BranchStore;
use crate::records::files::{write_atomically, IoError, RecordError};
use crate::timefmt::Timestamp;
use maverick_core::ids::InstanceId;

/// "My claim, generation, branch, last confirmed."
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRecord {
    pub issue: u64,
    pub instance_id: InstanceId,
    pub generation: u64,
    #[serde(default)]
    pub branch: Option<String>,
    /// Every issue claimed together with this one (itself included).
    #[serde(default)]
    pub scope: Vec<u64>,
    pub surface: String,
    pub remote: String,
    pub claimed_at: Timestamp,
    /// When a claim or heartbeat last saw this instance hold the claim.
    pub last_confirmed: Timestamp,
    pub expires_at: Timestamp,
    /// Set when a heartbeat found the claim gone; kept so that a push names why.
    #[serde(default)]
    pub lost: Option<String>,
}

#[cfg(test)]
impl ClaimRecord {
    /// A claim record for unit tests: `instance`'s claim on `issue` at
    /// `generation`, on branch `maverick/<issue>-x` of the git surface,
    /// claimed and confirmed at 2026-11-30T10:00:00Z, lasting to `expires_at`.
    pub(crate) fn example(
        instance: &str,
        issue: u64,
        generation: u64,
        expires_at: &str,
    ) -> ClaimRecord {
        let at = Timestamp::parse("2026-11-30T10:00:00Z").unwrap();
        ClaimRecord {
            issue,
            instance_id: InstanceId::parse(instance).unwrap(),
            generation,
            branch: Some(format!("maverick/{issue}-x")),
            scope: vec![issue],
            surface: "git".to_owned(),
            remote: "origin".to_owned(),
            claimed_at: at,
            last_confirmed: at,
            expires_at: Timestamp::parse(expires_at).unwrap(),
            lost: None,
        }
    }
}

/// What a damaged claim record at `path` (`<instance>/<issue>.json`) holds.
fn claim_loss(path: &Path) -> String {
    let issue = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("N")
        .to_owned();
    format!(
        "only this clone's copy of a claim on #{issue}; the claim itself lives on the surface, \
         and `git maverick coord claim {issue}` by its holder writes the copy again"
    )
}

/// The claim records of one clone.
#[derive(Clone, Debug)]
pub struct ClaimStore {
    root: PathBuf,
}

impl ClaimStore {
    pub fn new(common_dir: &Path) -> ClaimStore {
        ClaimStore {
            root: common_dir.join("maverick").join("claims"),
        }
    }

    /// The last-seen records of the same clone.
    pub(crate) fn branch_store(&self) -> BranchStore {
        // `root` is `<common dir>/maverick/claims`.
        let common_dir = self.root.ancestors().nth(2).unwrap_or(&self.root);
        BranchStore::new(common_dir)
    }

    /// The directory of `instance`'s records. An id becomes a path only
    /// when it passes the strict rule (`InstanceId::parse`): an id kept as
    /// another writer wrote it (`InstanceId::of_marker`), or read from a
    /// hand-edited record, could lead out of the records (`../../x`).
    fn dir(&self, instance: &InstanceId) -> Result<PathBuf, RecordError> {
        let id = InstanceId::parse(instance.as_str())?;
        Ok(self.root.join(id.as_str()))
    }

    fn path(&self, instance: &InstanceId, issue: u64) -> Result<PathBuf, RecordError> {
        Ok(self.dir(instance)?.join(format!("{issue}.json")))
    }

    /// Writes `record` under its own instance's directory; refused, with
    /// nothing written, when its id may not name one.
    pub(crate) fn save(&self, record: &ClaimRecord) -> Result<(), RecordError> {
        let path = self.path(&record.instance_id, record.issue)?;
        let mut bytes = serde_json::to_vec_pretty(record).expect("plain data serializes");
        bytes.push(b'\n');
        write_atomically(&path, &bytes)
            .map_err(IoError::on("write", &path))
            .map_err(RecordError::from)
    }

    pub fn load(
        &self,
        instance: &InstanceId,
        issue: u64,
    ) -> Result<Option<ClaimRecord>, RecordError> {
        self.read_record(&self.path(instance, issue)?)
    }

    pub(crate) fn remove(&self, instance: &InstanceId, issue: u64) -> Result<(), RecordError> {
        let path = self.path(instance, issue)?;
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(IoError::on("remove", &path)(e).into())
            }
            _ => Ok(()),
        }
    }

    /// Every record of one instance, by issue number.
    pub(crate) fn of_instance(
        &self,
        instance: &InstanceId,
    ) -> Result<Vec<ClaimRecord>, RecordError> {
        let mut records = self.read_dir_records(&self.dir(instance)?)?;
        records.sort_by_key(|r| r.issue);
        Ok(records)
    }

    /// Every record of every instance of this clone that names `branch`.
    pub(crate) fn for_branch(&self, branch: &str) -> Result<Vec<ClaimRecord>, RecordError> {
        let mut all = self.all()?;
        all.retain(|record| record.branch.as_deref() == Some(branch));
        Ok(all)
    }

    /// Every record of every instance of this clone that can be read, and
    /// the damaged ones apart: a damaged record must stop only what it is
    /// about (SPEC 8), which its caller decides.
    pub(crate) fn all_readable(
        &self,
    ) -> Result<(Vec<ClaimRecord>, Vec<DamagedClaim>), RecordError> {
        let mut found = Vec::new();
        let mut damaged = Vec::new();
        for dir in self.instance_dirs()? {
            for path in json_files(&dir)? {
                match self.read_record(&path) {
                    Ok(Some(record)) => found.push(record),
                    Ok(None) => {}
                    Err(error @ RecordError::Damaged { .. }) => {
                        let text = std::fs::read(&path).unwrap_or_default();
                        damaged.push(DamagedClaim {
                            issue: path
                                .file_stem()
                                .and_then(|s| s.to_str())
                                .and_then(|s| s.parse().ok()),
                            branch: branch_in_damaged(&text),
                            error,
                        });
                    }
                    Err(other) => return Err(other),
                }
            }
        }
        Ok((found, damaged))
    }

    fn instance_dirs(&self) -> Result<Vec<PathBuf>, RecordError> {
        match std::fs::read_dir(&self.root) {
            Ok(entries) => Ok(entries.flatten().map(|e| e.path()).collect()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(source) => Err(IoError::on("read", &self.root)(source).into()),
        }
    }

    /// Every record of every instance of this clone.
    pub(crate) fn all(&self) -> Result<Vec<ClaimRecord>, RecordError> {
        let mut found = Vec::new();
        for dir in self.instance_dirs()? {
            found.extend(self.read_dir_records(&dir)?);
        }
        Ok(found)
    }

    fn read_dir_records(&self, dir: &Path) -> Result<Vec<ClaimRecord>, RecordError> {
        let mut records = Vec::new();
        for path in json_files(dir)? {
            records.extend(self.read_record(&path)?);
        }
        Ok(records)
    }

    /// The record at `path`; damaged when it does not parse, or when its
    /// instance id fails the strict rule or is not the name of the
    /// directory it sits in: a later save of the record goes where its id
    /// says, and the holder checks trust that id.
    fn read_record(&self, path: &Path) -> Result<Option<ClaimRecord>, RecordError> {
        let damaged = |detail: String| RecordError::Damaged {
            path: path.to_owned(),
            detail,
            loses: claim_loss(path),
        };
        let bytes = match std::fs::read(path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(IoError::on("read", path)(source).into()),
        };
        let record: ClaimRecord =
            serde_json::from_slice(&bytes).map_err(|e| damaged(e.to_string()))?;
        match self.dir(&record.instance_id) {
            Ok(dir) if Some(dir.as_path()) == path.parent() => Ok(Some(record)),
            Ok(_) => Err(damaged(format!(
                "its instance id {:?} is not the name of the directory it is in",
                record.instance_id.as_str()
            ))),
            Err(RecordError::NotPathSafe(e)) => Err(damaged(e.to_string())),
            Err(other) => Err(other),
        }
    }
}

/// A claim record that does not parse, with what can still be told of it.
#[derive(Debug)]
pub(crate) struct DamagedClaim {
    /// From its file name.
    pub issue: Option<u64>,
    /// A `"branch": "…"` still legible in it.
    pub branch: Option<String>,
    pub error: RecordError,
}

impl DamagedClaim {
    /// Whether it may be about `branch`: it names it, or its issue is the
    /// branch's (by the branch's own record or its `maverick/N-…` name).
    pub(crate) fn may_name(&self, branch: &str, issue_of_branch: Option<u64>) -> bool {
        match &self.branch {
            Some(b) => b == branch,
            None => {
                let by_name = issue_of_branch_name(branch);
                self.issue.is_some() && (self.issue == issue_of_branch || self.issue == by_name)
            }
        }
    }
}

/// The issue a branch name carries, the one rule every command uses: the
/// leading number of the branch's last path component, followed by nothing,
/// `-` or `_` (`maverick/142-short-title`, `team/7-infra/142-parser`,
/// `maverick/142_parser`, `142`). Folders above it (`team/7-infra/`) group
/// branches; the last component is the branch's own name.
pub(crate) fn issue_of_branch_name(branch: &str) -> Option<u64> {
    let last = branch.rsplit('/').next()?;
    let digits = last.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 12 {
        return None;
    }
    if !matches!(last.as_bytes().get(digits), None | Some(b'-' | b'_')) {
        return None;
    }
    last[..digits].parse().ok().filter(|n| *n > 0)
}

/// The branch a damaged record still spells out, if any.
fn branch_in_damaged(text: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(text);
    let at = text.find("\"branch\"")?;
    let rest = text[at + "\"branch\"".len()..]
        .trim_start()
        .strip_prefix(':')?;
    let rest = rest.trim_start().strip_prefix('"')?;
    let end = rest.find('"')?;
    Some(rest[..end].to_owned()).filter(|b| !b.contains('\\'))
}

fn json_files(dir: &Path) -> Result<Vec<PathBuf>, RecordError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(IoError::on("read", dir)(source).into()),
    };
    Ok(entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect())
}

/// Every branch this clone manages (a claim record or a last-seen record).
pub(crate) fn managed_branches(common_dir: &Path) -> Result<Vec<String>, RecordError> {
    let mut branches: Vec<String> = ClaimStore::new(common_dir)
        .all()?
        .into_iter()
        .filter_map(|r| r.branch)
        .collect();
    branches.extend(crate::records::branch::BranchStore::new(common_dir).branches());
    branches.sort();
    branches.dedup();
    Ok(branches)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn branch_names() {
        assert_eq!(issue_of_branch_name("maverick/142-short-title"), Some(142));
        assert_eq!(issue_of_branch_name("feat/42-x"), Some(42));
        assert_eq!(issue_of_branch_name("142"), Some(142));
        assert_eq!(issue_of_branch_name("main"), None);
        assert_eq!(issue_of_branch_name("maverick/v2-thing"), None);
        assert_eq!(issue_of_branch_name("maverick/12abc"), None);
        assert_eq!(issue_of_branch_name("maverick/0-x"), None);
        // The last component decides, however deep the folders are.
        assert_eq!(issue_of_branch_name("team/7-infra/142-parser"), Some(142));
        assert_eq!(issue_of_branch_name("maverick/142_parser"), Some(142));
        assert_eq!(issue_of_branch_name("a/b/142-x"), Some(142));
        assert_eq!(issue_of_branch_name("story/140"), Some(140));
        assert_eq!(issue_of_branch_name("142-x"), Some(142));
        assert_eq!(issue_of_branch_name("team/7-infra/parser"), None);
        assert_eq!(issue_of_branch_name("maverick/x-142"), None);
        assert_eq!(issue_of_branch_name("maverick/142.x"), None);
    }

    fn record(instance: InstanceId, issue: u64) -> ClaimRecord {
        ClaimRecord {
            instance_id: instance,
            ..ClaimRecord::example("a", issue, 1, "2026-11-30T10:00:00Z")
        }
    }

    /// Every file under `dir`, relative to it.
    fn tree(dir: &Path) -> Vec<String> {
        let mut found = Vec::new();
        let mut todo = vec![dir.to_owned()];
        while let Some(d) = todo.pop() {
            for entry in std::fs::read_dir(&d).unwrap().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    todo.push(path);
                } else {
                    let relative = path.strip_prefix(dir).unwrap();
                    found.push(relative.to_string_lossy().into_owned());
                }
            }
        }
        found.sort();
        found
    }

    #[test]
    fn an_id_that_is_not_path_safe_or_not_its_directory_is_a_damaged_record_and_never_saved() {
        let common = tempfile::tempdir().unwrap();
        let store = ClaimStore::new(common.path());
        let alice = InstanceId::parse("alice").unwrap();
        store.save(&record(alice.clone(), 5)).unwrap();
        // Hand-edited: the id leads out of the records, or names another.
        let dir = common.path().join("maverick/claims/alice");
        let mut escaping = serde_json::to_value(record(alice.clone(), 7)).unwrap();
        escaping["instance_id"] = "../../x".into();
        std::fs::write(dir.join("7.json"), escaping.to_string()).unwrap();
        let mut other = serde_json::to_value(record(alice.clone(), 8)).unwrap();
        other["instance_id"] = "bob".into();
        std::fs::write(dir.join("8.json"), other.to_string()).unwrap();
        let before = tree(common.path());

        for (issue, detail) in [
            (7, "\"../../x\" is not a valid instance id"),
            (
                8,
                "its instance id \"bob\" is not the name of the directory",
            ),
        ] {
            let err = store.load(&alice, issue).unwrap_err();
            assert!(
                matches!(&err, RecordError::Damaged { path, detail: d, .. }
                    if path.ends_with(format!("alice/{issue}.json")) && d.contains(detail)),
                "{err}"
            );
            assert!(err.hint().unwrap().contains("it is safe to remove"));
        }
        // Sorted apart, each with what it is about; the sound one is read.
        let (found, damaged) = store.all_readable().unwrap();
        assert_eq!(found, vec![record(alice.clone(), 5)]);
        let mut about: Vec<_> = damaged
            .iter()
            .map(|d| (d.issue, d.branch.clone()))
            .collect();
        about.sort();
        assert_eq!(
            about,
            vec![
                (Some(7), Some("maverick/7-x".to_owned())),
                (Some(8), Some("maverick/8-x".to_owned()))
            ]
        );

        // A record whose id may not name a directory is refused, unwritten.
        let escaping = record(InstanceId::of_marker("../../x"), 7);
        assert!(matches!(
            store.save(&escaping),
            Err(RecordError::NotPathSafe(_))
        ));
        assert!(store.load(&InstanceId::of_marker("../x"), 7).is_err());
        assert_eq!(tree(common.path()), before);
    }

    #[test]
    fn a_record_written_before_its_times_were_typed_reads_and_writes_back_the_same() {
        // As earlier versions wrote it, stamps as RFC 3339 text.
        let old = r#"{
  "issue": 142,
  "instance_id": "alice",
  "generation": 2,
  "branch": "maverick/142-parser",
  "scope": [
    142
  ],
  "surface": "git",
  "remote": "origin",
  "claimed_at": "2026-11-30T10:00:00Z",
  "last_confirmed": "2026-11-30T10:02:00Z",
  "expires_at": "2026-11-30T10:12:00Z",
  "lost": null
}"#;
        let record: ClaimRecord = serde_json::from_str(old).unwrap();
        assert_eq!(
            record.expires_at,
            Timestamp::parse("2026-11-30T10:12:00Z").unwrap()
        );
        assert_eq!(serde_json::to_string_pretty(&record).unwrap(), old);
        // A stamp that is not a time is a damaged record, not a guess.
        let bad = old.replace("2026-11-30T10:12:00Z", "soon");
        assert!(serde_json::from_str::<ClaimRecord>(&bad).is_err());
    }
}
