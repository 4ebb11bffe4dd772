//! What a command wrote, put in the session's history beside the file operations' changes:
//! one undo step per command, reverted with the same rules (`undo` refuses when a path
//! changed again since).

use std::path::{Path, PathBuf};
use std::sync::Arc;
#[cfg(target_os = "linux")]
use std::sync::Mutex;

use toolbelt_mcp_sandbox::undoable::{Recorded, Undoable};

use super::{ChangeKind, Session};

/// Records of commands whose server was killed mid-command, folded by a later start, that no
/// session has taken into its history yet.
#[cfg(target_os = "linux")]
static RECOVERED: Mutex<Vec<Recorded>> = Mutex::new(Vec::new());

/// Keeps `records` (of commands a killed server ran, folded at this start) for the next
/// session's history: its first call takes them, as one undo step each.
#[cfg(target_os = "linux")]
pub fn adopt_later(records: Vec<Recorded>) {
    if !records.is_empty() {
        RECOVERED.lock().unwrap_or_else(|p| p.into_inner()).extend(records);
    }
}

/// How a change's command is shown: its line and when it started.
fn by(recorded: &Recorded) -> Option<Arc<str>> {
    let command = recorded.command.as_ref()?;
    let started = humantime::format_rfc3339_seconds(command.started);
    Some(Arc::from(format!("`{}` at {started}", command.line).as_str()))
}

impl Session {
    /// Takes into this session's history the records a start recovered (see [`adopt_later`]),
    /// under the session's write lock: those whose paths all lie in `roots` (the first shows
    /// paths relative to it); the others (the server was started with other roots since) are
    /// left out, with a line for the call's result saying so: undo works within the roots only.
    #[cfg(target_os = "linux")]
    pub async fn adopt_recovered(&self, roots: &[PathBuf]) -> Vec<String> {
        let mut lines = Vec::new();
        let Some(first) = roots.first() else { return lines };
        if RECOVERED.lock().unwrap_or_else(|p| p.into_inner()).is_empty() {
            return lines;
        }
        let _serial = self.writes.lock().await;
        let records = std::mem::take(&mut *RECOVERED.lock().unwrap_or_else(|p| p.into_inner()));
        for recorded in records {
            let inside = recorded.changes.iter().all(|change| roots.iter().any(|root| change.path().starts_with(root)));
            if inside {
                self.record_command(recorded, first, false);
            } else {
                let line = recorded.command.as_ref().map_or("", |command| command.line.as_str());
                lines.push(format!(
                    "what `{line}`, a command of a server that was killed, wrote lies outside this server's roots: it is not offered to `undo`"
                ));
            }
        }
        lines
    }

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
        let by = by(&recorded);
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
                    self.record_by("run_command", path, shown, kind, by.clone());
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
