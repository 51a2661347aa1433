//! The last-seen records of managed branches (SPEC 8): what this clone's
//! writer last saw of each branch's remote head. They live in the common git
//! dir, so every linked worktree of a clone sees them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::files::{replace_file, RecordError};

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
    /// The normalised location of the remote this head was seen on
    /// (`location::normalise`): the hook checks pushes to it, however the
    /// push spells it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Per remote name, how long its remote-tracking ref's reflog for this
    /// branch was when this record was written: an `update by push` line
    /// after that is a push this clone made since (`prepush::expected`).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub push_log: std::collections::BTreeMap<String, u64>,
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
                        loses: format!(
                            "the head of {branch} this clone last saw; `git maverick resume {branch}` \
                             records the remote's head again (check first that it is where you left it)"
                        ),
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

    pub(crate) fn set(&self, record: &BranchRecord) -> Result<(), RecordError> {
        self.write(record, true)
    }

    /// `set` without waiting for the disk: for the pre-push hook, which
    /// writes on every push. A crash that loses the write fails safe: the
    /// next push sees a head it has no record of and refuses it.
    pub(crate) fn set_unsynced(&self, record: &BranchRecord) -> Result<(), RecordError> {
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

    pub(crate) fn remove(&self, branch: &str) -> Result<(), RecordError> {
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
