//! What a full pass learned about a text file (line count, line-ending census, sha256, where
//! every 1024th line starts, how it ended), kept for the next pages of the same file: they read
//! only from the nearest checkpoint to the end of their window. Trusted as it is while the file
//! keeps its identity (device, inode, size, mtime, ctime) and was last changed more than its
//! racy window before the pass began (a later change cannot then hide behind a timestamp of the
//! same clock tick, as git's "racy" entries); otherwise, a file just written or one that grew,
//! only once the bytes the pass read still hash to what they did (xxh3, about ten times faster
//! than the pass), and a grown file's summary is taken up from its last line.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::scan::{CHECKPOINT_LINES, Scan, Tail};

/// Files remembered (the least recently read goes first).
const ENTRIES: usize = 64;

/// A file as it was when it was read (device, inode, size, mtime, ctime): any change makes
/// another identity.
pub(super) use toolbelt_mcp_sandbox::handle::Version as Identity;

/// Which file an entry is about: where it is and its device and inode (Windows: 0, so the
/// path tells files apart there).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Key {
    path: PathBuf,
    dev: u64,
    ino: u64,
}

impl Key {
    /// The file at `path` (canonical) with `identity`.
    pub(super) fn new(path: &Path, identity: &Identity) -> Self {
        Self { path: path.to_path_buf(), dev: identity.dev, ino: identity.ino }
    }
}

/// The whole-file facts of a full pass.
#[derive(Clone)]
pub(super) struct Summary {
    /// Lines.
    pub total: u64,
    /// CRLF line endings.
    pub crlf: u64,
    /// LF line endings.
    pub lf: u64,
    /// The last line has no newline.
    pub missing_final_newline: bool,
    /// sha256 (hex) of every byte.
    pub sha256: String,
    /// Byte offsets where lines `k * CHECKPOINT_LINES + 1` start (k = 1, 2, …).
    pub checkpoints: Vec<u64>,
    /// What the file is checked against, and where a grown file's pass starts.
    pub tail: Tail,
}

impl Summary {
    /// The whole-file facts of `scan` (a full pass), unless it was not one.
    pub(super) fn of(scan: &mut Scan) -> Option<Self> {
        Some(Self {
            total: scan.total,
            crlf: scan.crlf,
            lf: scan.lf,
            missing_final_newline: scan.missing_final_newline,
            sha256: scan.sha256.clone(),
            checkpoints: std::mem::take(&mut scan.checkpoints),
            tail: scan.tail.take()?,
        })
    }

    /// Where to start reading for line `line`: the number of a line at or before it, and the
    /// byte where that line starts.
    pub(super) fn start_for(&self, line: u64) -> (u64, u64) {
        let k = (line.saturating_sub(1) / CHECKPOINT_LINES).min(self.checkpoints.len() as u64);
        match k.checked_sub(1).and_then(|i| self.checkpoints.get(i as usize)) {
            Some(&byte) => (k * CHECKPOINT_LINES + 1, byte),
            None => (1, 0),
        }
    }
}

/// A file's summary as kept, with where its last page ended (the next line, and the byte
/// where it starts).
struct Kept {
    key: Key,
    identity: Identity,
    /// The file last changed more than its racy window before the pass began.
    settled: bool,
    summary: Arc<Summary>,
    resume: Option<(u64, u64)>,
}

static KEPT: Mutex<VecDeque<Kept>> = Mutex::new(VecDeque::new());

/// What is known of a file read before.
#[derive(Clone)]
pub(super) struct Known {
    /// Its whole-file facts.
    pub summary: Arc<Summary>,
    /// Where its last page ended.
    pub resume: Option<(u64, u64)>,
}

impl Known {
    /// Where to start reading for line `line`: the checkpoint at or before it, or where the
    /// last page ended when that is nearer, so pages read one after another each read only
    /// their own lines.
    pub(super) fn start_for(&self, line: u64) -> (u64, u64) {
        let checkpoint = self.summary.start_for(line);
        match self.resume {
            Some((next, byte)) if next <= line && next > checkpoint.0 => (next, byte),
            _ => checkpoint,
        }
    }
}

/// What the index holds of a file.
pub(super) enum Found {
    /// Its summary, trusted as it is.
    Trusted(Known),
    /// A summary of its first `summary.tail.len` bytes, to trust once they are checked.
    Check(Known),
    /// Nothing it could use.
    Missing,
}

/// What is kept of the file `key`, now at `identity`.
pub(super) fn find(key: &Key, identity: &Identity) -> Found {
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let Some(at) = kept.iter().position(|entry| entry.key == *key) else { return Found::Missing };
    let Some(entry) = kept.remove(at) else { return Found::Missing };
    let known = Known { summary: entry.summary.clone(), resume: entry.resume };
    let found = if entry.identity == *identity && entry.settled {
        Found::Trusted(known)
    } else if entry.summary.tail.len <= identity.size {
        Found::Check(known)
    } else {
        Found::Missing
    };
    kept.push_front(entry);
    found
}

/// Keeps `known` of the file `key` at `identity`, read or checked by a pass that began at
/// `pass`.
pub(super) fn put(key: Key, identity: Identity, known: Known, pass: SystemTime) {
    let settled = identity.settled_before(pass, identity.racy_window());
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    kept.retain(|entry| entry.key != key);
    kept.push_front(Kept { key, identity, settled, summary: known.summary, resume: known.resume });
    kept.truncate(ENTRIES);
}

/// Remembers that line `line` of the file `key` at `identity` starts at byte `byte`, if its
/// summary is kept.
pub(super) fn resume_at(key: &Key, identity: &Identity, line: u64, byte: u64) {
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(entry) = kept.iter_mut().find(|entry| entry.key == *key && entry.identity == *identity) {
        entry.resume = Some((line, byte));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::file::read_file::scan::Start;

    fn known(checkpoints: Vec<u64>, len: u64) -> Known {
        let tail = Tail { len, xxh3: 0, resume: Start::default() };
        let summary = Summary {
            total: 0,
            crlf: 0,
            lf: 0,
            missing_final_newline: false,
            sha256: String::new(),
            checkpoints,
            tail,
        };
        Known { summary: Arc::new(summary), resume: None }
    }

    fn trusted(found: Found) -> Option<Known> {
        match found {
            Found::Trusted(known) => Some(known),
            _ => None,
        }
    }

    #[test]
    fn starts_at_the_nearest_checkpoint_before_the_line() {
        let s = known(vec![100, 250], 300).summary;
        assert_eq!(s.start_for(1), (1, 0));
        assert_eq!(s.start_for(CHECKPOINT_LINES), (1, 0));
        assert_eq!(s.start_for(CHECKPOINT_LINES + 1), (CHECKPOINT_LINES + 1, 100));
        assert_eq!(s.start_for(2 * CHECKPOINT_LINES + 7), (2 * CHECKPOINT_LINES + 1, 250));
        assert_eq!(s.start_for(50 * CHECKPOINT_LINES), (2 * CHECKPOINT_LINES + 1, 250), "past the last one");
    }

    #[test]
    fn the_next_page_starts_where_the_last_one_ended() {
        let identity = Identity { dev: 7, ino: 4_242_424, size: 10, mtime: (1, 5), ctime: (1, 5) };
        let key = Key::new(Path::new("/kept/a"), &identity);
        resume_at(&key, &identity, 1500, 180);
        assert!(matches!(find(&key, &identity), Found::Missing), "no summary kept: nothing remembered");
        put(key.clone(), identity, known(vec![100, 250], 10), SystemTime::now());
        assert_eq!(trusted(find(&key, &identity)).unwrap().start_for(1600), (CHECKPOINT_LINES + 1, 100));
        resume_at(&key, &identity, 1500, 180);
        let found = trusted(find(&key, &identity)).unwrap();
        assert_eq!(found.start_for(1500), (1500, 180));
        assert_eq!(found.start_for(1600), (1500, 180), "nearer than the checkpoint");
        assert_eq!(found.start_for(1400), (CHECKPOINT_LINES + 1, 100), "past the line asked for");
        assert_eq!(found.start_for(2 * CHECKPOINT_LINES + 7), (2 * CHECKPOINT_LINES + 1, 250));
        let other = Identity { ino: 4_242_425, ..identity };
        let other_key = Key::new(Path::new("/kept/a"), &other);
        put(other_key.clone(), other, known(vec![100, 250], 10), SystemTime::now());
        assert_eq!(trusted(find(&other_key, &other)).unwrap().start_for(1600), (CHECKPOINT_LINES + 1, 100));
        assert_eq!(trusted(find(&key, &identity)).unwrap().start_for(1600), (1500, 180), "another inode's entry");
        put(key.clone(), identity, known(vec![100, 250], 10), SystemTime::now());
        assert_eq!(trusted(find(&key, &identity)).unwrap().start_for(1600), (CHECKPOINT_LINES + 1, 100), "a new pass");
    }

    #[test]
    fn racy_or_moved_files_are_checked_and_shrunk_ones_missed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        #[allow(clippy::disallowed_methods)]
        let file = std::fs::File::create(&path).unwrap();
        file.set_len(10).unwrap();
        let fresh = Identity::of(&file.metadata().unwrap());
        let key = Key::new(&path, &fresh);
        put(key.clone(), fresh, known(vec![1], 10), SystemTime::now());
        assert!(matches!(find(&key, &fresh), Found::Check(_)), "changed just now: checked before it is trusted");
        let later = SystemTime::now() + fresh.racy_window() + Duration::from_millis(1);
        put(key.clone(), fresh, known(vec![2], 10), later);
        assert_eq!(trusted(find(&key, &fresh)).map(|k| k.summary.checkpoints.clone()), Some(vec![2]));
        let grown = Identity { size: 20, mtime: (fresh.mtime.0 + 1, 0), ..fresh };
        assert!(matches!(find(&key, &grown), Found::Check(_)), "grown: its first bytes are checked");
        let shrunk = Identity { size: 9, ..grown };
        assert!(matches!(find(&key, &shrunk), Found::Missing), "shorter than what was read: read again");
        let elsewhere = Key::new(&dir.path().join("g"), &fresh);
        assert!(matches!(find(&elsewhere, &fresh), Found::Missing), "another path");
    }
}
