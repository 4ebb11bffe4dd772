//! Per-connection state: an id, the temp-file journal, and the history of file changes that
//! `undo` reverts and `changes` reports. Content before each change is kept as a blob under
//! the state dir (`undo/<session>/<seq>`), oldest dropped first past the size cap.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

use crate::error::ToolError;
use crate::sandbox::fs;
use crate::sandbox::write::TempJournal;

/// Default cap on the bytes of undo blobs one session keeps.
pub const DEFAULT_UNDO_BYTES: u64 = 256 * 1024 * 1024;

/// One connection's state.
#[derive(Debug)]
pub struct Session {
    /// Markers for temp files in flight.
    pub journal: TempJournal,
    /// Held by every writing call, so a session's edits never interleave (two edits of one
    /// file would otherwise both read the old content and one would be lost).
    pub writes: tokio::sync::Mutex<()>,
    history: Mutex<History>,
    undo_dir: PathBuf,
    cap: u64,
}

/// The changes made so far, oldest first.
#[derive(Debug, Default)]
struct History {
    changes: VecDeque<Change>,
    next_seq: u64,
    blob_bytes: u64,
    dropped: u64,
}

/// One recorded file change.
#[derive(Debug, Clone)]
pub struct Change {
    /// Order of the change in the session.
    pub seq: u64,
    /// The operation that made it.
    pub operation: &'static str,
    /// The absolute path changed.
    pub path: PathBuf,
    /// How the model saw the path.
    pub shown: String,
    /// The content before (`None`: the path did not exist as a file).
    pub before: Option<Before>,
    /// sha256 of the content after (`None`: a directory was created, not a file).
    pub after_sha256: Option<String>,
    /// Directories the change created, outermost first (removed by undo when empty).
    pub created_dirs: Vec<PathBuf>,
}

/// Content a change replaced.
#[derive(Debug, Clone)]
pub struct Before {
    blob: PathBuf,
    /// Its length.
    pub len: u64,
    /// Its permission bits.
    pub mode: u32,
}

impl Session {
    /// A new session storing undo blobs under `state_dir`, at most `cap` bytes.
    pub fn new(state_dir: &std::path::Path, cap: u64) -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = format!("{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let undo_dir = state_dir.join("undo").join(&id);
        Self {
            journal: TempJournal::new(state_dir),
            writes: tokio::sync::Mutex::new(()),
            history: Mutex::new(History::default()),
            undo_dir,
            cap,
        }
    }

    fn history(&self) -> std::sync::MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Keeps `content` (the state before a change) as a blob for undo.
    pub fn keep_before(&self, content: &[u8], mode: u32) -> Result<Before, ToolError> {
        let seq = {
            let mut history = self.history();
            history.next_seq += 1;
            history.next_seq
        };
        let blob = self.undo_dir.join(format!("{seq}.before"));
        fs::write_private(&self.undo_dir, &blob, content).map_err(|err| {
            ToolError::Internal(format!("cannot keep undo data in `{}`: {err}", self.undo_dir.display()))
        })?;
        Ok(Before { blob, len: content.len() as u64, mode })
    }

    /// Records a change made; drops the oldest ones past the size cap.
    pub fn record(&self, mut change: Change) {
        let mut history = self.history();
        history.next_seq += 1;
        change.seq = history.next_seq;
        history.blob_bytes += change.before.as_ref().map_or(0, |b| b.len);
        history.changes.push_back(change);
        while history.blob_bytes > self.cap && history.changes.len() > 1 {
            if let Some(old) = history.changes.pop_front() {
                history.blob_bytes -= old.before.as_ref().map_or(0, |b| b.len);
                history.dropped += 1;
                if let Some(before) = old.before {
                    let _ = fs::remove_file(&before.blob);
                }
            }
        }
    }

    /// Takes the last `steps` changes off the history, newest first.
    pub fn take_last(&self, steps: usize) -> Vec<Change> {
        let mut history = self.history();
        let keep = history.changes.len().saturating_sub(steps);
        let taken: Vec<Change> = history.changes.drain(keep..).rev().collect();
        history.blob_bytes -= taken.iter().map(|c| c.before.as_ref().map_or(0, |b| b.len)).sum::<u64>();
        taken
    }

    /// Puts changes back (an undo that failed part-way), oldest first.
    pub fn restore(&self, changes: Vec<Change>) {
        let mut history = self.history();
        for change in changes {
            history.blob_bytes += change.before.as_ref().map_or(0, |b| b.len);
            history.changes.push_back(change);
        }
    }

    /// All changes kept, oldest first, and how many were dropped for the size cap.
    pub fn changes(&self) -> (Vec<Change>, u64) {
        let history = self.history();
        (history.changes.iter().cloned().collect(), history.dropped)
    }

    /// Reads a blob back.
    pub fn read_before(&self, before: &Before) -> Result<Vec<u8>, ToolError> {
        fs::read_state_file(&before.blob)
            .map_err(|err| ToolError::Internal(format!("undo data `{}` is gone: {err}", before.blob.display())))
    }

    /// Forgets a blob once its change was undone.
    pub fn discard(&self, before: &Before) {
        let _ = fs::remove_file(&before.blob);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        fs::remove_state_dir(&self.undo_dir);
    }
}
