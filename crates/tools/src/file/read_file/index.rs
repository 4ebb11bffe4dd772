//! What a full pass learned about a text file (line count, line-ending census, sha256, where
//! every 1024th line starts), kept for the next pages of the same file: they read only from the
//! nearest checkpoint to the end of their window. Kept per file identity (device, inode, size,
//! mtime, ctime) and only for files last changed well before the pass began, so a later change
//! cannot hide behind a timestamp of the same clock tick ("racy" entries, as git calls them).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::scan::{CHECKPOINT_LINES, Scan};

/// Files remembered (the least recently read goes first).
const ENTRIES: usize = 64;

/// How long before a pass a file must have last changed for its summary to be kept.
const SETTLED: Duration = Duration::from_secs(2);

/// A file as it was when it was read (device, inode, size, mtime, ctime): any change makes
/// another identity.
pub(super) use toolbelt_mcp_sandbox::handle::Version as Identity;

/// The whole-file facts of a full pass.
#[derive(Debug, Clone, PartialEq, Eq)]
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
    checkpoints: Vec<u64>,
}

impl Summary {
    /// The whole-file facts of `scan` (a full pass).
    pub(super) fn of(scan: &Scan) -> Self {
        Self {
            total: scan.total,
            crlf: scan.crlf,
            lf: scan.lf,
            missing_final_newline: scan.missing_final_newline,
            sha256: scan.sha256.clone(),
            checkpoints: scan.checkpoints.clone(),
        }
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
    identity: Identity,
    summary: Arc<Summary>,
    resume: Option<(u64, u64)>,
}

static KEPT: Mutex<VecDeque<Kept>> = Mutex::new(VecDeque::new());

/// What is known of a file read before.
pub(super) struct Known {
    /// Its whole-file facts.
    pub summary: Arc<Summary>,
    resume: Option<(u64, u64)>,
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

/// Remembers that line `line` of the file with `identity` starts at byte `byte`, if the file's
/// summary is kept (so only for settled files, like the summary).
pub(super) fn resume_at(identity: Identity, line: u64, byte: u64) {
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(entry) = kept.iter_mut().find(|entry| entry.identity == identity) {
        entry.resume = Some((line, byte));
    }
}

/// What a full pass left of the file with `identity`, if it was kept.
pub(super) fn get(identity: &Identity) -> Option<Known> {
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let at = kept.iter().position(|entry| entry.identity == *identity)?;
    let entry = kept.remove(at)?;
    let known = Known { summary: entry.summary.clone(), resume: entry.resume };
    kept.push_front(entry);
    Some(known)
}

/// Keeps `summary` of the file with `identity`, read by a pass that began at `pass`, unless the
/// file changed too shortly before it.
pub(super) fn put(identity: Identity, summary: Summary, pass: SystemTime) {
    if !identity.settled_before(pass, SETTLED) {
        return;
    }
    let mut kept = KEPT.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    kept.retain(|entry| entry.identity != identity);
    kept.push_front(Kept { identity, summary: Arc::new(summary), resume: None });
    kept.truncate(ENTRIES);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(checkpoints: Vec<u64>) -> Summary {
        Summary { total: 0, crlf: 0, lf: 0, missing_final_newline: false, sha256: String::new(), checkpoints }
    }

    #[test]
    fn starts_at_the_nearest_checkpoint_before_the_line() {
        let s = summary(vec![100, 250]);
        assert_eq!(s.start_for(1), (1, 0));
        assert_eq!(s.start_for(CHECKPOINT_LINES), (1, 0));
        assert_eq!(s.start_for(CHECKPOINT_LINES + 1), (CHECKPOINT_LINES + 1, 100));
        assert_eq!(s.start_for(2 * CHECKPOINT_LINES + 7), (2 * CHECKPOINT_LINES + 1, 250));
        assert_eq!(s.start_for(50 * CHECKPOINT_LINES), (2 * CHECKPOINT_LINES + 1, 250), "past the last one");
    }

    #[test]
    fn the_next_page_starts_where_the_last_one_ended() {
        let identity = Identity { dev: 7, ino: 4_242_424, size: 10, mtime: (1, 0), ctime: (1, 0) };
        resume_at(identity, 1500, 180);
        assert!(get(&identity).is_none(), "no summary kept: nothing remembered");
        put(identity, summary(vec![100, 250]), SystemTime::now());
        assert_eq!(get(&identity).unwrap().start_for(1600), (CHECKPOINT_LINES + 1, 100), "no page read yet");
        resume_at(identity, 1500, 180);
        let known = get(&identity).unwrap();
        assert_eq!(known.start_for(1500), (1500, 180));
        assert_eq!(known.start_for(1600), (1500, 180), "nearer than the checkpoint");
        assert_eq!(known.start_for(1400), (CHECKPOINT_LINES + 1, 100), "past the line asked for");
        assert_eq!(known.start_for(2 * CHECKPOINT_LINES + 7), (2 * CHECKPOINT_LINES + 1, 250));
        let other = Identity { ino: 4_242_425, ..identity };
        put(other, summary(vec![100, 250]), SystemTime::now());
        assert_eq!(get(&other).unwrap().start_for(1600), (CHECKPOINT_LINES + 1, 100), "another file's page");
        put(identity, summary(vec![100, 250]), SystemTime::now());
        assert_eq!(get(&identity).unwrap().start_for(1600), (CHECKPOINT_LINES + 1, 100), "a new pass forgets it");
    }

    #[test]
    fn only_settled_files_are_kept_and_changes_miss() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        #[allow(clippy::disallowed_methods)]
        let file = std::fs::File::create(&path).unwrap();
        let fresh = Identity::of(&file.metadata().unwrap());
        put(fresh, summary(vec![1]), SystemTime::now());
        assert!(get(&fresh).is_none(), "changed just now: not kept");
        file.set_modified(SystemTime::now() - Duration::from_secs(60)).unwrap();
        // Setting the time changed the ctime: still too fresh.
        let set = Identity::of(&file.metadata().unwrap());
        put(set, summary(vec![2]), SystemTime::now());
        assert!(get(&set).is_none());
        put(set, summary(vec![3]), SystemTime::now() + Duration::from_secs(10));
        assert_eq!(get(&set).map(|k| k.summary.checkpoints.clone()), Some(vec![3]));
        assert!(get(&fresh).is_none(), "another identity");
    }
}
