//! The conditional-request cache every process of a clone shares.
//!
//! GitHub does not count a 304 answer to a conditional GET against the rate
//! limit. A cache that died with each process made every single-shot
//! command (`coord read`, a heartbeat, `status`) pay in full for what it
//! read a minute earlier; this one lives in the clone's common git dir, so
//! the next process sends the validators back and gets a 304.
//!
//! - One file per request URL, named by the SHA-256 of the URL, holding the
//!   answer's validators (`ETag`, `Last-Modified`), its `link` header and
//!   its body; never a request header, so never the token (and a body in
//!   which the token appears is not kept).
//! - Written to a temporary file and renamed over the old one: a reader
//!   sees the old entry or the new one. Concurrent writers of one URL
//!   leave whichever renamed last, which is as good as the other.
//! - A file that is torn, truncated, corrupt, from another version or
//!   for another URL (a hash collision) is ignored, never an error: the
//!   request then goes out unconditionally, as without a cache.
//! - Bounded: an entry over [`Limits::entry_bytes`] is not kept, and when
//!   the directory holds more than [`Limits::entries`] files or
//!   [`Limits::bytes`] bytes, the least recently used go (a hit touches its
//!   file). The sweep runs at a process's first write and every
//!   [`SWEEP_EVERY`] writes after it.
//! - Files are readable by their owner only: bodies of a private
//!   repository's issues are as private as the repository.

use std::cell::Cell;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The first line of every entry; a different one is another format.
const MAGIC: &[u8] = b"maverick-github-cache 1\n";
/// Writes between two sweeps of one process.
const SWEEP_EVERY: u32 = 256;
/// A temporary file this old was left by a process that died mid-write.
const ABANDONED_TEMP: Duration = Duration::from_secs(3600);

/// How much the cache may hold.
#[derive(Clone, Copy, Debug)]
pub(super) struct Limits {
    pub(super) entries: usize,
    pub(super) bytes: u64,
    pub(super) entry_bytes: usize,
}

impl Default for Limits {
    /// A few thousand issues and their comment pages; an epic's 100
    /// comments are a few hundred KiB.
    fn default() -> Limits {
        Limits {
            entries: 8192,
            bytes: 128 << 20,
            entry_bytes: 8 << 20,
        }
    }
}

/// What a GET answered, kept to be revalidated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct CachedGet {
    pub(super) etag: Option<String>,
    pub(super) last_modified: Option<String>,
    pub(super) link: Option<String>,
    pub(super) body: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    url: String,
    etag: Option<String>,
    last_modified: Option<String>,
    link: Option<String>,
    len: usize,
    sha256: String,
}

pub(super) struct SharedCache {
    dir: PathBuf,
    limits: Limits,
    writes: Cell<u32>,
}

impl SharedCache {
    pub(super) fn new(dir: PathBuf, limits: Limits) -> SharedCache {
        SharedCache {
            dir,
            limits,
            writes: Cell::new(0),
        }
    }

    fn path_of(&self, url: &str) -> PathBuf {
        self.dir.join(hex(&Sha256::digest(url.as_bytes())))
    }

    /// The entry for `url`, when there is a whole one.
    pub(super) fn load(&self, url: &str) -> Option<CachedGet> {
        let path = self.path_of(url);
        let bytes = fs::read(&path).ok()?;
        let entry = decode(url, &bytes);
        match &entry {
            // Recently used: the sweep keeps it longer.
            Some(_) => touch(&path),
            None => tracing::debug!("ignoring a damaged cache entry {}", path.display()),
        }
        entry
    }

    /// Keeps `entry` for `url`, unless it is too big or holds `secret`.
    /// Failing to write is no error: the cache is only an optimisation.
    pub(super) fn store(&self, url: &str, entry: &CachedGet, secret: &str) {
        if entry.body.len() > self.limits.entry_bytes || holds(&entry.body, secret) {
            return;
        }
        if let Err(e) = self.write(url, entry) {
            tracing::debug!("not caching {url}: {e}");
            return;
        }
        let writes = self.writes.get();
        self.writes.set(writes.wrapping_add(1));
        if writes % SWEEP_EVERY == 0 {
            self.sweep();
        }
    }

    fn write(&self, url: &str, entry: &CachedGet) -> std::io::Result<()> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)?;
        let header = Header {
            url: url.to_owned(),
            etag: entry.etag.clone(),
            last_modified: entry.last_modified.clone(),
            link: entry.link.clone(),
            len: entry.body.len(),
            sha256: hex(&Sha256::digest(&entry.body)),
        };
        let mut bytes = MAGIC.to_vec();
        serde_json::to_writer(&mut bytes, &header)?;
        bytes.push(b'\n');
        bytes.extend_from_slice(&entry.body);
        let path = self.path_of(url);
        // Named for this process and this write: two surfaces of one
        // process (threads) never share a temporary file either.
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let serial = WRITES.fetch_add(1, Ordering::Relaxed);
        let tmp =
            crate::records::files::temp_beside(&path)?.with_extension(format!("{serial}.tmp"));
        let written = fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .and_then(|mut file| file.write_all(&bytes));
        // No fsync: a cache entry lost to a crash costs one request.
        match written.and_then(|()| fs::rename(&tmp, &path)) {
            Ok(()) => Ok(()),
            Err(e) => {
                let _ = fs::remove_file(&tmp);
                Err(e)
            }
        }
    }

    /// Removes the least recently used entries while the cache is over its
    /// limits (down to three quarters of them, so that sweeps stay rare),
    /// and temporary files abandoned by dead writers.
    fn sweep(&self) {
        let Ok(listing) = fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut entries: Vec<(SystemTime, u64, PathBuf)> = Vec::new();
        for dirent in listing.flatten() {
            let Ok(meta) = dirent.metadata() else {
                continue;
            };
            let used = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let path = dirent.path();
            if dirent.file_name().to_string_lossy().starts_with('.') {
                if now.duration_since(used).unwrap_or_default() > ABANDONED_TEMP {
                    let _ = fs::remove_file(&path);
                }
                continue;
            }
            entries.push((used, meta.len(), path));
        }
        let mut bytes: u64 = entries.iter().map(|(_, len, _)| len).sum();
        if entries.len() <= self.limits.entries && bytes <= self.limits.bytes {
            return;
        }
        entries.sort();
        let keep_entries = self.limits.entries * 3 / 4;
        let keep_bytes = self.limits.bytes / 4 * 3;
        let mut count = entries.len();
        for (_, len, path) in entries {
            if count <= keep_entries && bytes <= keep_bytes {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                count -= 1;
                bytes = bytes.saturating_sub(len);
            }
        }
    }
}

/// The entry in `bytes`, if it is whole and for `url`.
fn decode(url: &str, bytes: &[u8]) -> Option<CachedGet> {
    let rest = bytes.strip_prefix(MAGIC)?;
    let newline = rest.iter().position(|b| *b == b'\n')?;
    let header: Header = serde_json::from_slice(&rest[..newline]).ok()?;
    let body = &rest[newline + 1..];
    let whole = header.url == url
        && header.len == body.len()
        && header.sha256 == hex(&Sha256::digest(body));
    whole.then(|| CachedGet {
        etag: header.etag,
        last_modified: header.last_modified,
        link: header.link,
        body: body.to_vec(),
    })
}

fn touch(path: &Path) {
    if let Ok(file) = fs::File::options().write(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// Whether `secret` (when there is one) occurs in `body`.
fn holds(body: &[u8], secret: &str) -> bool {
    !secret.is_empty() && String::from_utf8_lossy(body).contains(secret)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(body: &str) -> CachedGet {
        CachedGet {
            etag: Some("W/\"abc\"".into()),
            last_modified: Some("Mon, 30 Nov 2026 10:15:00 GMT".into()),
            link: None,
            body: body.as_bytes().to_vec(),
        }
    }

    fn cache(dir: &Path, limits: Limits) -> SharedCache {
        SharedCache::new(dir.join("github-cache"), limits)
    }

    #[test]
    fn an_entry_comes_back_whole_in_another_process() {
        let dir = tempfile::tempdir().unwrap();
        let url = "http://127.0.0.1:1/repos/a/b/issues/1";
        cache(dir.path(), Limits::default()).store(url, &entry("{\"number\":1}"), "ghp_x");
        let other = cache(dir.path(), Limits::default());
        assert_eq!(other.load(url), Some(entry("{\"number\":1}")));
        assert_eq!(other.load("http://127.0.0.1:1/repos/a/b/issues/2"), None);
    }

    #[test]
    fn torn_corrupt_or_foreign_entries_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let url = "http://127.0.0.1:1/repos/a/b/issues/1";
        let shared = cache(dir.path(), Limits::default());
        shared.store(url, &entry("{\"number\":1,\"title\":\"x\"}"), "");
        let path = shared.path_of(url);
        let whole = fs::read(&path).unwrap();
        // Cut short, one byte flipped, another URL's entry under this name,
        // garbage, empty: each reads as no entry, never an error.
        let mut flipped = whole.clone();
        *flipped.last_mut().unwrap() ^= 1;
        let foreign = String::from_utf8(whole.clone())
            .unwrap()
            .replace("issues/1", "issues/9");
        for damaged in [
            whole[..whole.len() - 3].to_vec(),
            whole[..10].to_vec(),
            flipped,
            foreign.into_bytes(),
            b"\xff\xfe not a cache entry".to_vec(),
            Vec::new(),
        ] {
            fs::write(&path, &damaged).unwrap();
            assert_eq!(shared.load(url), None);
        }
        // A directory where the cache should be is no error either.
        let blocked = tempfile::tempdir().unwrap();
        fs::write(blocked.path().join("github-cache"), "a file").unwrap();
        let blocked = cache(blocked.path(), Limits::default());
        blocked.store(url, &entry("{}"), "");
        assert_eq!(blocked.load(url), None);
    }

    #[test]
    fn the_token_is_never_kept() {
        let dir = tempfile::tempdir().unwrap();
        let shared = cache(dir.path(), Limits::default());
        let url = "http://127.0.0.1:1/user";
        shared.store(
            url,
            &entry("{\"echo\":\"Bearer ghp_SECRET\"}"),
            "ghp_SECRET",
        );
        assert_eq!(shared.load(url), None);
        assert!(!shared.dir.exists() || fs::read_dir(&shared.dir).unwrap().next().is_none());
    }

    #[test]
    fn the_cache_stays_within_its_limits_and_keeps_what_was_used_last() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            entries: 8,
            bytes: 1 << 20,
            entry_bytes: 64,
        };
        let url = |n: usize| format!("http://127.0.0.1:1/repos/a/b/issues/{n}");
        let first = cache(dir.path(), limits);
        first.store(&url(0), &entry("{\"n\":0}"), "");
        // Older than everything written after it, until it is read again.
        let old = SystemTime::now() - Duration::from_secs(60);
        for n in 1..8 {
            first.store(&url(n), &entry(&format!("{{\"n\":{n}}}")), "");
            fs::File::options()
                .write(true)
                .open(first.path_of(&url(n)))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        assert!(first.load(&url(0)).is_some());
        // Too big to keep.
        first.store(&url(99), &entry(&"x".repeat(65)), "");
        assert_eq!(first.load(&url(99)), None);
        // Every process sweeps at its first write.
        for n in 8..20 {
            assert!(first.load(&url(0)).is_some(), "the entry in use is kept");
            cache(dir.path(), limits).store(&url(n), &entry(&format!("{{\"n\":{n}}}")), "");
            let files = fs::read_dir(&first.dir).unwrap().count();
            assert!(files <= limits.entries, "{files} files");
        }
        assert!(first.load(&url(19)).is_some(), "the newest is kept");
        assert_eq!(first.load(&url(1)), None, "the least recently used went");
    }
}
