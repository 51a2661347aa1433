//! Local records: what this machine last confirmed about its own claims.
//!
//! The surface is the truth; these files are a cache that the pre-push hook
//! and `task done` read without a network call. They live in the common git
//! dir, so every linked worktree of a clone sees them.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::timefmt::Timestamp;

/// "My claim, generation, branch, last confirmed."
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClaimRecord {
    pub issue: u64,
    pub instance_id: String,
    pub generation: u64,
    #[serde(default)]
    pub branch: Option<String>,
    /// Every issue claimed together with this one (itself included).
    #[serde(default)]
    pub scope: Vec<u64>,
    pub surface: String,
    pub remote: String,
    pub claimed_at: String,
    /// When a claim or heartbeat last saw this instance hold the claim.
    pub last_confirmed: String,
    pub expires_at: String,
    /// Set when a heartbeat found the claim gone; kept so that a push names why.
    #[serde(default)]
    pub lost: Option<String>,
}

impl ClaimRecord {
    pub fn confirmed_at(&self) -> Option<Timestamp> {
        Timestamp::parse(&self.last_confirmed)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("could not {action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the local record {path} is damaged: {detail}")]
    Damaged { path: PathBuf, detail: String },
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
    pub fn branch_store(&self) -> BranchStore {
        let maverick_dir = self.root.parent().unwrap_or(&self.root);
        BranchStore {
            root: maverick_dir.join("branches"),
        }
    }

    fn path(&self, instance: &str, issue: u64) -> PathBuf {
        // Instance ids are validated to be path-safe (config::valid_instance_id).
        self.root.join(instance).join(format!("{issue}.json"))
    }

    pub fn save(&self, record: &ClaimRecord) -> Result<(), RecordError> {
        let path = self.path(&record.instance_id, record.issue);
        let mut bytes = serde_json::to_vec_pretty(record).expect("plain data serializes");
        bytes.push(b'\n');
        write_atomically(&path, &bytes).map_err(|source| RecordError::Io {
            action: "write",
            path,
            source,
        })
    }

    pub fn load(&self, instance: &str, issue: u64) -> Result<Option<ClaimRecord>, RecordError> {
        read_record(&self.path(instance, issue))
    }

    pub fn remove(&self, instance: &str, issue: u64) -> Result<(), RecordError> {
        let path = self.path(instance, issue);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RecordError::Io {
                action: "remove",
                path,
                source: e,
            }),
            _ => Ok(()),
        }
    }

    /// Every record of one instance, by issue number.
    pub fn of_instance(&self, instance: &str) -> Result<Vec<ClaimRecord>, RecordError> {
        let mut records = read_dir_records(&self.root.join(instance))?;
        records.sort_by_key(|r| r.issue);
        Ok(records)
    }

    /// Every record of every instance of this clone that names `branch`.
    pub fn for_branch(&self, branch: &str) -> Result<Vec<ClaimRecord>, RecordError> {
        let mut all = self.all()?;
        all.retain(|record| record.branch.as_deref() == Some(branch));
        Ok(all)
    }

    /// Every record of every instance of this clone.
    pub fn all(&self) -> Result<Vec<ClaimRecord>, RecordError> {
        let mut found = Vec::new();
        let entries = match std::fs::read_dir(&self.root) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
            Err(source) => {
                return Err(RecordError::Io {
                    action: "read",
                    path: self.root.clone(),
                    source,
                })
            }
        };
        for entry in entries.flatten() {
            found.extend(read_dir_records(&entry.path())?);
        }
        Ok(found)
    }
}

fn read_dir_records(dir: &Path) -> Result<Vec<ClaimRecord>, RecordError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(RecordError::Io {
                action: "read",
                path: dir.to_owned(),
                source,
            })
        }
    };
    let mut records = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json") {
            if let Some(record) = read_record(&path)? {
                records.push(record);
            }
        }
    }
    Ok(records)
}

fn read_record(path: &Path) -> Result<Option<ClaimRecord>, RecordError> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| RecordError::Damaged {
                path: path.to_owned(),
                detail: e.to_string(),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(RecordError::Io {
            action: "read",
            path: path.to_owned(),
            source,
        }),
    }
}

/// Writes through a temporary file and a rename, so a crash leaves the old
/// file or the new one, never half of one.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    replace_file(path, bytes, true)
}

fn replace_file(path: &Path, bytes: &[u8], sync: bool) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("record");
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(bytes)?;
    if sync {
        file.sync_all()?;
    }
    drop(file);
    std::fs::rename(&tmp, path)
}

/// The remote head of a managed branch as this clone's writer last saw it
/// (SPEC 8): recorded when it claimed, created or resumed the worktree, or
/// made its own last push. A plain fetch does not move it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchRecord {
    pub branch: String,
    /// The remote's head, `None` when the branch did not exist there yet.
    pub last_seen: Option<String>,
    #[serde(default)]
    pub issue: Option<u64>,
    #[serde(default)]
    pub instance_id: Option<String>,
    pub updated_at: String,
    /// Commits the pre-push hook let a plain `git push` send that no later
    /// push has confirmed yet. git has no post-push hook, so the hook cannot
    /// know whether the push it allowed went through; the remote showing one
    /// of these next time means it did (see `prepush`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<String>,
}

/// The last-seen records of one clone, one file per branch.
#[derive(Clone, Debug)]
pub struct BranchStore {
    root: PathBuf,
}

impl BranchStore {
    pub fn new(common_dir: &Path) -> BranchStore {
        BranchStore {
            root: common_dir.join("maverick").join("branches"),
        }
    }

    /// Branch names may hold anything git allows; file names hold only hex.
    /// A file name holds 255 bytes at most, so a long name's hex is cut into
    /// directories of 200 digits (`<200>/<rest>.json` never meets `<200>.json`).
    fn path(&self, branch: &str) -> PathBuf {
        let hex: String = branch.bytes().map(|b| format!("{b:02x}")).collect();
        let mut path = self.root.clone();
        let mut rest = hex.as_str();
        while rest.len() > 200 {
            path.push(&rest[..200]);
            rest = &rest[200..];
        }
        path.join(format!("{rest}.json"))
    }

    pub fn get(&self, branch: &str) -> Result<Option<BranchRecord>, RecordError> {
        let path = self.path(branch);
        match std::fs::read(&path) {
            Ok(bytes) => {
                serde_json::from_slice(&bytes)
                    .map(Some)
                    .map_err(|e| RecordError::Damaged {
                        path,
                        detail: e.to_string(),
                    })
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(RecordError::Io {
                action: "read",
                path,
                source,
            }),
        }
    }

    pub fn set(&self, record: &BranchRecord) -> Result<(), RecordError> {
        self.write(record, true)
    }

    /// `set` without waiting for the disk: for the pre-push hook, which
    /// writes on every push. A crash that loses the write fails safe: the
    /// next push sees a head it has no record of and refuses it.
    pub fn set_unsynced(&self, record: &BranchRecord) -> Result<(), RecordError> {
        self.write(record, false)
    }

    fn write(&self, record: &BranchRecord, sync: bool) -> Result<(), RecordError> {
        let path = self.path(&record.branch);
        let mut bytes = serde_json::to_vec_pretty(record).expect("plain data serializes");
        bytes.push(b'\n');
        replace_file(&path, &bytes, sync).map_err(|source| RecordError::Io {
            action: "write",
            path,
            source,
        })
    }

    pub fn remove(&self, branch: &str) -> Result<(), RecordError> {
        let path = self.path(branch);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RecordError::Io {
                action: "remove",
                path,
                source: e,
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_branch_names_have_records() {
        let dir = tempfile::tempdir().unwrap();
        let store = BranchStore::new(dir.path());
        let long = format!("deep/{}", "x/".repeat(300));
        let long = long.trim_end_matches('/');
        for branch in [long, &long[..95], "a"] {
            store
                .set(&BranchRecord {
                    branch: branch.to_owned(),
                    last_seen: Some(branch.len().to_string()),
                    ..BranchRecord::default()
                })
                .unwrap();
        }
        for branch in [long, &long[..95], "a"] {
            let record = store.get(branch).unwrap().unwrap();
            assert_eq!(record.last_seen, Some(branch.len().to_string()));
        }
        store.remove(long).unwrap();
        assert_eq!(store.get(long).unwrap(), None);
    }
}
