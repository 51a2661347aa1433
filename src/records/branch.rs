//! The last-seen records of managed branches (SPEC 8): what this clone's
//! writer last saw of each branch's remote head. They live in the common git
//! dir, so every linked worktree of a clone sees them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::records::files::{replace_file, IoError, RecordError};
use crate::timefmt::Timestamp;

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
    pub updated_at: Timestamp,
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
    /// Per remote name, how many entries its remote-tracking ref's reflog
    /// for this branch had when this record was written (as `git reflog`
    /// lists them): an `update by push` entry after those is a push this
    /// clone made since (`prepush::expected`). Records of earlier versions
    /// kept byte lengths under `push_log`, which is no longer read.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub reflog_entries: std::collections::BTreeMap<String, u64>,
    /// Per remote name, the newest entry of that reflog when this record
    /// was written (none when it was empty): found again among the newest
    /// few entries, it marks what came since without reading the whole
    /// reflog. Records of earlier versions have only the counts; they are
    /// read by count and get these at their next write.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub reflog_newest: std::collections::BTreeMap<String, ReflogMark>,
}

/// One reflog entry as git prints it: the commit it set the ref to, when,
/// and its message. Two entries alike in all three are one as far as the
/// records can tell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReflogMark {
    pub commit: String,
    /// Seconds since the epoch, as git prints them (`--date=unix`).
    pub at: String,
    pub message: String,
}

/// The last-seen records of one clone, one file per branch, and beside it
/// the hook's log: the pre-push hook writes a record on every push, and
/// replacing a file by rename is the dearest step of a push's hook (on ext4
/// it flushes the new file and frees the old one's blocks, ~0.5 ms here),
/// so the hook appends the whole record as one line instead. The last whole
/// line of the log is the record; a full write folds the log back into the
/// record file.
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

    /// Every branch with a record or a log here: the names [`Self::path`]
    /// wrote, read back (a long name's directories included).
    pub(crate) fn branches(&self) -> Vec<String> {
        fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                let Some(name) = name.to_str() else {
                    continue;
                };
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    walk(&entry.path(), &format!("{prefix}{name}"), out);
                    continue;
                }
                let Some(hex) = name.strip_suffix(".json").or_else(|| {
                    name.strip_suffix(LOG_EXTENSION)
                        .and_then(|n| n.strip_suffix('.'))
                }) else {
                    continue;
                };
                let hex = format!("{prefix}{hex}");
                let bytes: Option<Vec<u8>> = (0..hex.len())
                    .step_by(2)
                    .map(|i| {
                        hex.get(i..i + 2)
                            .and_then(|h| u8::from_str_radix(h, 16).ok())
                    })
                    .collect();
                if let Some(branch) = bytes.and_then(|b| String::from_utf8(b).ok()) {
                    out.push(branch);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.root, "", &mut out);
        out
    }

    /// The hook's log of `branch`'s records, newest last.
    fn log_path(&self, branch: &str) -> PathBuf {
        self.path(branch).with_extension(LOG_EXTENSION)
    }

    /// Whether `branch` has a record or a log here (a stat or two; what
    /// they hold is [`Self::get`]'s to read).
    pub(crate) fn exists(&self, branch: &str) -> bool {
        self.log_path(branch).exists() || self.path(branch).exists()
    }

    pub fn get(&self, branch: &str) -> Result<Option<BranchRecord>, RecordError> {
        let log = self.log_path(branch);
        if let Some(bytes) = read_if_there(&log)? {
            // A line without its newline is a write that died half-way:
            // the one before it stands.
            if let Some(end) = bytes.iter().rposition(|&b| b == b'\n') {
                let last = bytes[..end]
                    .rsplit(|&b| b == b'\n')
                    .next()
                    .unwrap_or_default();
                return parse(last, log, branch).map(Some);
            }
        }
        let path = self.path(branch);
        match read_if_there(&path)? {
            Some(bytes) => parse(&bytes, path, branch).map(Some),
            None => Ok(None),
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

    /// A synced write replaces the record file; the hook's unsynced one
    /// appends to the log, folded back once the log grows long. Either
    /// way the newest record is readable after a crash at any step: the
    /// log gets the record before the record file does, and goes after.
    fn write(&self, record: &BranchRecord, sync: bool) -> Result<(), RecordError> {
        let log = self.log_path(&record.branch);
        let logged = match std::fs::metadata(&log) {
            Ok(meta) => Some(meta.len()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(io_error("read", log, source)),
        };
        if !sync || logged.is_some() {
            let mut line = serde_json::to_vec(record).expect("plain data serializes");
            line.push(b'\n');
            append(&log, &line, sync).map_err(|source| io_error("write", log.clone(), source))?;
            if !sync && logged.unwrap_or(0) + (line.len() as u64) < LOG_FOLD_AT {
                return Ok(());
            }
        }
        let path = self.path(&record.branch);
        let mut bytes = serde_json::to_vec_pretty(record).expect("plain data serializes");
        bytes.push(b'\n');
        replace_file(&path, &bytes, sync).map_err(|source| io_error("write", path, source))?;
        remove_if_there(&log)
    }

    pub(crate) fn remove(&self, branch: &str) -> Result<(), RecordError> {
        // The log first: a record file left alone by a crash is older.
        remove_if_there(&self.log_path(branch))?;
        remove_if_there(&self.path(branch))
    }
}

/// The hook's log file: `<hex>.pushes` beside `<hex>.json`.
pub(crate) const LOG_EXTENSION: &str = "pushes";

/// A log this long (some 60 pushes' records) is folded into the record file.
const LOG_FOLD_AT: u64 = 16 * 1024;

fn io_error(action: &'static str, path: PathBuf, source: std::io::Error) -> RecordError {
    IoError {
        action,
        path,
        source,
    }
    .into()
}

fn read_if_there(path: &Path) -> Result<Option<Vec<u8>>, RecordError> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(io_error("read", path.to_owned(), source)),
    }
}

fn remove_if_there(path: &Path) -> Result<(), RecordError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(io_error("remove", path.to_owned(), e))
        }
        _ => Ok(()),
    }
}

fn parse(bytes: &[u8], path: PathBuf, branch: &str) -> Result<BranchRecord, RecordError> {
    serde_json::from_slice(bytes).map_err(|e| RecordError::Damaged {
        path,
        detail: e.to_string(),
        loses: format!(
            "the head of {branch} this clone last saw; `git maverick resume {branch}` \
             records the remote's head again (check first that it is where you left it)"
        ),
    })
}

/// One line onto the end of `path` in one write: appends do not interleave.
/// A last line cut short (a full disk, a power cut) is ended first, so the
/// new record starts a line of its own and stays readable.
fn append(path: &Path, line: &[u8], sync: bool) -> std::io::Result<()> {
    use std::io::Write as _;
    let open = || {
        std::fs::OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .open(path)
    };
    let mut file = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(path.parent().unwrap_or(Path::new(".")))?;
            open()?
        }
        other => other?,
    };
    if ends_mid_line(&file)? {
        file.write_all(&[b"\n", line].concat())?;
    } else {
        file.write_all(line)?;
    }
    if sync {
        file.sync_all()?;
    }
    Ok(())
}

/// Whether the file's last byte is not a newline (an empty file is not).
fn ends_mid_line(file: &std::fs::File) -> std::io::Result<bool> {
    let len = file.metadata()?.len();
    if len == 0 {
        return Ok(false);
    }
    let mut last = [0u8; 1];
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileExt as _;
        file.read_exact_at(&mut last, len - 1)?;
    }
    #[cfg(not(unix))]
    {
        use std::io::{Read as _, Seek as _};
        let mut file = file;
        file.seek(std::io::SeekFrom::Start(len - 1))?;
        file.read_exact(&mut last)?;
    }
    Ok(last[0] != b'\n')
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
        let mut listed = store.branches();
        listed.sort();
        let mut want = vec![long.to_owned(), long[..95].to_owned(), "a".to_owned()];
        want.sort();
        assert_eq!(listed, want);
        store.remove(long).unwrap();
        assert_eq!(store.get(long).unwrap(), None);
    }

    fn record(last_seen: &str) -> BranchRecord {
        BranchRecord {
            branch: "maverick/7-x".to_owned(),
            last_seen: Some(last_seen.to_owned()),
            ..BranchRecord::default()
        }
    }

    #[test]
    fn the_hooks_writes_append_and_a_full_write_folds_them_back() {
        let dir = tempfile::tempdir().unwrap();
        let store = BranchStore::new(dir.path());
        store.set(&record("a")).unwrap();
        let json = store.path("maverick/7-x");
        let log = store.log_path("maverick/7-x");
        let before = std::fs::read(&json).unwrap();
        store.set_unsynced(&record("b")).unwrap();
        store.set_unsynced(&record("c")).unwrap();
        assert_eq!(
            std::fs::read(&json).unwrap(),
            before,
            "the record file is not rewritten"
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 2);
        assert_eq!(store.get("maverick/7-x").unwrap(), Some(record("c")));
        store.set(&record("d")).unwrap();
        assert!(!log.exists());
        assert_eq!(store.get("maverick/7-x").unwrap(), Some(record("d")));
    }

    #[test]
    fn a_line_cut_short_leaves_the_one_before_and_a_long_log_is_folded() {
        let dir = tempfile::tempdir().unwrap();
        let store = BranchStore::new(dir.path());
        store.set_unsynced(&record("a")).unwrap();
        let log = store.log_path("maverick/7-x");
        let mut text = std::fs::read_to_string(&log).unwrap();
        text.push_str("{\"branch\":\"maverick/7-x\",\"last_se");
        std::fs::write(&log, &text).unwrap();
        assert_eq!(store.get("maverick/7-x").unwrap(), Some(record("a")));
        // The next record starts a line of its own: the torn one poisons nothing.
        store.set_unsynced(&record("b")).unwrap();
        assert_eq!(store.get("maverick/7-x").unwrap(), Some(record("b")));
        store.set_unsynced(&record("c")).unwrap();
        assert_eq!(store.get("maverick/7-x").unwrap(), Some(record("c")));
        // A whole line that is not a record is damage, named by its file.
        std::fs::write(&log, "not json\n").unwrap();
        let err = store.get("maverick/7-x").unwrap_err();
        assert!(err.to_string().contains(".pushes"), "{err}");
        std::fs::remove_file(&log).unwrap();
        for n in 0..200 {
            store.set_unsynced(&record(&n.to_string())).unwrap();
        }
        assert!(std::fs::metadata(&log).map_or(0, |m| m.len()) < LOG_FOLD_AT);
        assert_eq!(store.get("maverick/7-x").unwrap(), Some(record("199")));
    }
}
