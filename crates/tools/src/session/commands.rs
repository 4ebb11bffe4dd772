//! What a command wrote, put in the session's history beside the file operations' changes:
//! one undo step per command, reverted with the same rules (`undo` refuses when a path
//! changed again since).

use std::path::{Path, PathBuf};

use toolbelt_mcp_sandbox::stage::record::{Recorded, Undoable};

use super::{ChangeKind, Session};

impl Session {
    /// The most old content one command's record may keep (the session's undo cap).
    pub fn undo_cap(&self) -> u64 {
        self.cap
    }

    /// Records what a command changed (`recorded`) as one undo step; `root` shows paths
    /// relative to it. Returns a line for the result when something was left out (and why;
    /// git-ignored paths only when `say_ignored`), or nothing.
    pub fn record_command(&self, recorded: Recorded, root: &Path, say_ignored: bool) -> Vec<String> {
        let mut lines = Vec::new();
        if recorded.too_large {
            lines.push(format!(
                "what this command replaced or removed is more than the undo cap ({} bytes): its changes cannot be undone with `undo`",
                self.cap
            ));
            return lines;
        }
        let shown = |path: &Path| path.strip_prefix(root).unwrap_or(path).display().to_string();
        let count = recorded.changes.len();
        if count > 0 {
            self.begin_call();
        }
        for change in recorded.changes {
            let kept = |bytes: &[u8], mode: u32| self.keep_before(bytes, mode);
            let (path, kind): (PathBuf, Result<ChangeKind, _>) = match change {
                Undoable::MadeDir(path) => (path.clone(), Ok(ChangeKind::MadeDirs(vec![path]))),
                Undoable::CreatedLink { path, target } => (path, Ok(ChangeKind::Linked { target })),
                Undoable::Created { path, sha256 } => {
                    (path, Ok(ChangeKind::Wrote { before: None, after_sha256: sha256, created_dirs: Vec::new() }))
                }
                Undoable::Modified { path, before, mode, sha256 } => (
                    path,
                    kept(&before, mode).map(|before| ChangeKind::Wrote {
                        before: Some(before),
                        after_sha256: sha256,
                        created_dirs: Vec::new(),
                    }),
                ),
                Undoable::Removed { path, before, mode } => (path, kept(&before, mode).map(ChangeKind::Removed)),
                Undoable::RemovedTree { path, dirs, files, links } => {
                    let files: Result<Vec<_>, _> =
                        files.into_iter().map(|(file, bytes, mode)| kept(&bytes, mode).map(|b| (file, b))).collect();
                    (path, files.map(|files| ChangeKind::RemovedTree { dirs, files, links }))
                }
            };
            match kind {
                Ok(kind) => {
                    let shown = shown(&path);
                    self.record("run_command", path, shown, kind);
                }
                Err(err) => lines.push(format!("`{}` could not be recorded for undo: {err}", shown(&path))),
            }
        }
        if recorded.ignored > 0 && say_ignored {
            lines.push(format!(
                "{} change{} in git-ignored paths (build output, dependencies) not recorded for undo",
                recorded.ignored,
                if recorded.ignored == 1 { "" } else { "s" }
            ));
        }
        if !recorded.left_out.is_empty() {
            lines.push(format!("not recorded for undo: {}", recorded.left_out.join(", ")));
        }
        lines
    }
}
