//! Per-connection state: an id, the temp-file journal, its terminal sessions, and the history of file changes that
//! `undo` reverts and `changes` reports. Content before each change is kept as a blob under
//! the state dir (`undo/<session>/<seq>`), oldest dropped first past the size cap.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Mutex;

use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::fs;
use toolbelt_mcp_sandbox::journal::TempJournal;
use toolbelt_mcp_terminal::Terminals;

#[cfg(unix)]
mod commands;
#[cfg(target_os = "linux")]
pub use commands::adopt_later;
mod ledger;

/// Stamps changes in the order they were made, across sessions: the oldest goes first.
static NEXT_STAMP: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// One connection's state.
#[derive(Debug)]
pub struct Session {
    /// Markers for temp files in flight.
    pub journal: TempJournal,
    /// Held by every writing call, so a session's edits never interleave (two edits of one
    /// file would otherwise both read the old content and one would be lost).
    pub writes: tokio::sync::Mutex<()>,
    /// Its id (`<pid>-<n>`), in the audit log and state paths.
    pub id: String,
    /// Its background commands and PTY sessions.
    pub terminals: Terminals,
    /// Cancelled when the connection ends: tasks serving it (subscriptions) stop.
    pub closed: tokio_util::sync::CancellationToken,
    /// What the user allowed for the rest of the session, and the questions awaiting answers.
    pub approvals: toolbelt_mcp_policy::approvals::Approvals,
    history: std::sync::Arc<Mutex<History>>,
    undo_dir: PathBuf,
    cap: u64,
    total_cap: u64,
}

/// The changes made so far, oldest first.
#[derive(Debug, Default)]
struct History {
    changes: VecDeque<Change>,
    next_blob: u64,
    memory_bytes: u64,
    call: u64,
    blob_bytes: u64,
    dropped: u64,
}

impl History {
    /// The stamp of the oldest change that may be dropped: not one of the latest call.
    fn oldest_droppable(&self) -> Option<u64> {
        self.changes.front().filter(|change| change.call != self.call).map(|change| change.stamp)
    }

    /// Drops the oldest change and lets go of its blobs; returns their bytes.
    fn drop_oldest(&mut self) -> u64 {
        let Some(old) = self.changes.pop_front() else { return 0 };
        let bytes = old.kind.blob_bytes();
        self.blob_bytes -= bytes;
        self.dropped += 1;
        for before in old.kind.blobs() {
            self.release(before);
        }
        bytes
    }

    /// Lets go of a blob (dropped from history or undone).
    fn release(&mut self, before: &Before) {
        match &before.blob {
            Blob::Memory(_) => self.memory_bytes = self.memory_bytes.saturating_sub(before.len),
            Blob::Disk(path) => {
                let _ = fs::remove_file(path);
            }
        }
    }
}

/// One recorded change of one path.
#[derive(Debug, Clone)]
pub struct Change {
    /// The call that made it: one `undo` step reverts every change of one call.
    pub call: u64,
    /// The operation that made it.
    pub operation: &'static str,
    /// The absolute path changed (for a rename, the new path).
    pub path: PathBuf,
    /// How the model saw the path.
    pub shown: String,
    /// What happened.
    pub kind: ChangeKind,
    /// The command that made it (its line and when it started), when a command did.
    pub by: Option<std::sync::Arc<str>>,
    /// When it was made, in order across the sessions of the process (the oldest is dropped
    /// first past the process-wide cap).
    stamp: u64,
}

/// What a change did, with what undo needs to revert it.
#[derive(Debug, Clone)]
pub enum ChangeKind {
    /// File content written; `before: None` means the file was created.
    Wrote {
        /// The content replaced.
        before: Option<Before>,
        /// sha256 of what was written.
        after_sha256: String,
        /// Parent directories created for it, outermost first.
        created_dirs: Vec<PathBuf>,
    },
    /// Directories created, outermost first.
    MadeDirs(Vec<PathBuf>),
    /// A symlink made (by a command), pointing at `target`.
    Linked {
        /// Where it points.
        target: PathBuf,
    },
    /// A file removed; its content.
    Removed(Before),
    /// A directory tree removed.
    RemovedTree {
        /// Its directories, outermost first (the removed directory itself included).
        dirs: Vec<PathBuf>,
        /// Its files and their content.
        files: Vec<(PathBuf, Before)>,
        /// Its symlinks and their targets.
        links: Vec<(PathBuf, PathBuf)>,
    },
    /// Renamed from `from` to the change's `path`.
    Renamed {
        /// The old path.
        from: PathBuf,
        /// How the model saw the old path.
        from_shown: String,
        /// The file at the destination that the rename replaced.
        replaced: Option<Before>,
        /// Parent directories created for the destination, outermost first.
        created_dirs: Vec<PathBuf>,
    },
}

impl ChangeKind {
    /// Bytes of undo blobs it holds.
    fn blob_bytes(&self) -> u64 {
        match self {
            Self::Wrote { before, .. } | Self::Renamed { replaced: before, .. } => before.as_ref().map_or(0, |b| b.len),
            Self::Removed(before) => before.len,
            Self::RemovedTree { files, .. } => files.iter().map(|(_, b)| b.len).sum(),
            Self::MadeDirs(_) | Self::Linked { .. } => 0,
        }
    }

    /// Its blobs, to delete when the change is dropped or undone.
    fn blobs(&self) -> Vec<&Before> {
        match self {
            Self::Wrote { before, .. } | Self::Renamed { replaced: before, .. } => before.iter().collect(),
            Self::Removed(before) => vec![before],
            Self::RemovedTree { files, .. } => files.iter().map(|(_, b)| b).collect(),
            Self::MadeDirs(_) | Self::Linked { .. } => Vec::new(),
        }
    }
}

/// Content a change replaced or removed, kept for undo.
#[derive(Debug, Clone)]
pub struct Before {
    blob: Blob,
    /// Its length.
    pub len: u64,
    /// Its permission bits.
    pub mode: u32,
}

/// Where kept content lives: small blobs in memory, the rest under the state dir.
#[derive(Debug, Clone)]
enum Blob {
    Memory(std::sync::Arc<Vec<u8>>),
    Disk(PathBuf),
}

/// Blobs up to this size stay in memory…
const MEMORY_BLOB: usize = 256 * 1024;
/// …while the session holds less than this in memory.
const MEMORY_TOTAL: u64 = 16 * 1024 * 1024;

impl Session {
    /// A new session for `config`: undo blobs under its state dir (at most `max_undo_bytes`),
    /// and no terminal sessions yet.
    pub fn new(config: &toolbelt_mcp_core::config::Config) -> Self {
        let (state_dir, cap) = (&config.state_dir, config.max_undo_bytes);
        let history = std::sync::Arc::new(Mutex::new(History::default()));
        ledger::register(&history);
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = format!("{}-{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        let undo_dir = state_dir.join("undo").join(&id);
        Self {
            id: id.clone(),
            journal: TempJournal::new(state_dir),
            writes: tokio::sync::Mutex::new(()),
            history,
            undo_dir,
            cap,
            total_cap: config.max_undo_total_bytes,
            terminals: Terminals::new(config),
            approvals: toolbelt_mcp_policy::approvals::Approvals::default(),
            closed: tokio_util::sync::CancellationToken::new(),
        }
    }

    /// Ends the connection's state: its tasks stop and every command it started is ended
    /// (`SIGTERM`, then `SIGKILL` after a second).
    pub async fn close(&self) {
        self.closed.cancel();
        self.terminals.shutdown().await;
    }

    fn history(&self) -> std::sync::MutexGuard<'_, History> {
        self.history.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Starts a writing call: the changes it records form one undo step.
    pub fn begin_call(&self) {
        self.history().call += 1;
    }

    /// How many writing calls began so far: changes of later calls have a higher `call`.
    pub fn call_count(&self) -> u64 {
        self.history().call
    }

    /// Keeps `content` (the state before a change) for undo: in memory when small, else as a
    /// file under the state dir (written once, read back only if undone).
    pub fn keep_before(&self, content: &[u8], mode: u32) -> Result<Before, ToolError> {
        let len = content.len() as u64;
        let seq = {
            let mut history = self.history();
            history.next_blob += 1;
            if content.len() <= MEMORY_BLOB && history.memory_bytes + len <= MEMORY_TOTAL {
                history.memory_bytes += len;
                return Ok(Before { blob: Blob::Memory(std::sync::Arc::new(content.to_vec())), len, mode });
            }
            history.next_blob
        };
        let path = self.undo_dir.join(format!("{seq}.before"));
        fs::write_private(&self.undo_dir, &path, content).map_err(|err| {
            ToolError::Internal(format!("cannot keep undo data in `{}`: {err}", self.undo_dir.display()))
        })?;
        Ok(Before { blob: Blob::Disk(path), len, mode })
    }

    /// Records a change made by the current call; drops the oldest calls' changes past the
    /// session's cap, then, past the process-wide cap, the oldest changes of any session.
    pub fn record(&self, operation: &'static str, path: PathBuf, shown: String, kind: ChangeKind) {
        self.record_by(operation, path, shown, kind, None);
    }

    /// [`Self::record`] for a change a command made: `by` names it.
    pub fn record_by(
        &self,
        operation: &'static str,
        path: PathBuf,
        shown: String,
        kind: ChangeKind,
        by: Option<std::sync::Arc<str>>,
    ) {
        let grew = {
            let mut history = self.history();
            let call = history.call;
            let bytes = kind.blob_bytes();
            history.blob_bytes += bytes;
            let stamp = NEXT_STAMP.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            history.changes.push_back(Change { call, operation, path, shown, kind, by, stamp });
            while history.blob_bytes > self.cap && history.oldest_droppable().is_some() {
                history.drop_oldest();
            }
            bytes > 0
        };
        if grew {
            ledger::enforce(self.total_cap);
        }
    }

    /// Takes the changes of the last `steps` calls off the history, newest first.
    pub fn take_last(&self, steps: usize) -> Vec<Change> {
        let mut history = self.history();
        let mut calls = 0;
        let mut keep = history.changes.len();
        let mut last_call = None;
        while keep > 0 {
            let call = history.changes[keep - 1].call;
            if last_call != Some(call) {
                if calls == steps {
                    break;
                }
                calls += 1;
                last_call = Some(call);
            }
            keep -= 1;
        }
        let taken: Vec<Change> = history.changes.drain(keep..).rev().collect();
        history.blob_bytes -= taken.iter().map(|c| c.kind.blob_bytes()).sum::<u64>();
        taken
    }

    /// Puts changes back (an undo that was refused), oldest first.
    pub fn restore(&self, changes: Vec<Change>) {
        let mut history = self.history();
        for change in changes {
            history.blob_bytes += change.kind.blob_bytes();
            history.changes.push_back(change);
        }
    }

    /// Forgets the blobs of changes that were undone.
    pub fn discard(&self, changes: &[Change]) {
        let mut history = self.history();
        for change in changes {
            for before in change.kind.blobs() {
                history.release(before);
            }
        }
    }

    /// All changes kept, oldest first, and how many were dropped for the size cap.
    pub fn changes(&self) -> (Vec<Change>, u64) {
        let history = self.history();
        (history.changes.iter().cloned().collect(), history.dropped)
    }

    /// Reads a blob back.
    pub fn read_before(&self, before: &Before) -> Result<Vec<u8>, ToolError> {
        match &before.blob {
            Blob::Memory(bytes) => Ok(bytes.as_ref().clone()),
            Blob::Disk(path) => fs::read_state_file(path)
                .map_err(|err| ToolError::Internal(format!("undo data `{}` is gone: {err}", path.display()))),
        }
    }
}

/// Removes the undo blobs of sessions whose server was killed (a clean exit removes its own).
pub fn sweep_undo(state_dir: &std::path::Path) -> usize {
    fs::remove_dirs_of_dead_servers(&state_dir.join("undo"), "")
}

impl Drop for Session {
    fn drop(&mut self) {
        fs::remove_state_dir(&self.undo_dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(session: &Session, path: &str) {
        session.begin_call();
        let before = session.keep_before(&[b'a'; 1000], 0o644).unwrap();
        let kind = ChangeKind::Wrote { before: Some(before), after_sha256: String::new(), created_dirs: Vec::new() };
        session.record("create_file", PathBuf::from(path), path.to_string(), kind);
    }

    fn paths(session: &Session) -> (Vec<String>, u64) {
        let (changes, dropped) = session.changes();
        (changes.into_iter().map(|c| c.shown).collect(), dropped)
    }

    #[test]
    fn the_oldest_change_of_any_session_goes_first_past_the_process_cap() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_str().unwrap().to_string();
        let env = move |key: &str| (key == "HOME").then(|| std::ffi::OsString::from(&home));
        let config = toolbelt_mcp_core::config::Config::resolve(
            &toolbelt_mcp_core::config::args::CommonArgs::default(),
            &env,
            tmp.path(),
        )
        .unwrap();
        let mut config = (*config).clone();
        (config.max_undo_bytes, config.max_undo_total_bytes) = (10_000, 2_500);
        let (one, two) = (Session::new(&config), Session::new(&config));
        kept(&one, "one-a");
        kept(&one, "one-b");
        kept(&two, "two-a");
        assert_eq!(paths(&one), (vec!["one-b".to_string()], 1), "the oldest change of all went");
        assert_eq!(paths(&two), (vec!["two-a".to_string()], 0));
        // `one`'s last call is never dropped: the next oldest droppable change is `two`'s.
        kept(&two, "two-b");
        assert_eq!(paths(&one), (vec!["one-b".to_string()], 1));
        assert_eq!(paths(&two), (vec!["two-b".to_string()], 1));
        // A session that is gone no longer counts.
        drop(one);
        kept(&two, "two-c");
        assert_eq!(paths(&two), (vec!["two-b".to_string(), "two-c".to_string()], 1));
    }
}
