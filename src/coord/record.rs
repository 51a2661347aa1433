//! Local claim records: what this machine last confirmed about its own claims.
//!
//! The surface is the truth; these files are a cache that the pre-push hook
//! and `task done` read without a network call. They live in the common git
//! dir, so every linked worktree of a clone sees them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{write_atomically, RecordError};
use crate::timefmt::Timestamp;
use crate::writer::branch_record::BranchStore;

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
        // `root` is `<common dir>/maverick/claims`.
        let common_dir = self.root.ancestors().nth(2).unwrap_or(&self.root);
        BranchStore::new(common_dir)
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
