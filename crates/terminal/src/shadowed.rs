//! The session's shadow of its roots, for commands no staging layer records (macOS, and Linux
//! with `stage_writes = false`; see `toolbelt_mcp_sandbox::shadow`): settled before such a
//! command starts and before the server writes while one runs, compared at the defined points
//! after (the command's end, each call while it runs). Its work runs on a blocking thread.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use toolbelt_mcp_sandbox::shadow::Shadow;
use toolbelt_mcp_sandbox::undoable::{Command, Recorded};

/// Where the shadow goes and what it copies; the shadow itself, made on first use.
#[derive(Debug, Default)]
pub(crate) struct Shadowed {
    shadow: Arc<Mutex<Option<Shadow>>>,
    /// Its directory: `<state>/shadow/<pid>-<connection>`.
    dir: PathBuf,
    /// The server's own files, never walked.
    skip: Vec<PathBuf>,
    /// Whether git-ignored paths are recorded too.
    ignored_too: bool,
    /// The largest file copied and the most bytes copied in all (the undo caps).
    caps: (u64, u64),
}

impl Shadowed {
    /// The shadow of one connection (number `n`) under `state_dir`.
    pub(crate) fn new(
        state_dir: &std::path::Path,
        n: u64,
        skip: Vec<PathBuf>,
        ignored_too: bool,
        caps: (u64, u64),
    ) -> Self {
        let dir = state_dir.join("shadow").join(format!("{}-{n}", std::process::id()));
        Self { shadow: Arc::default(), dir, skip, ignored_too, caps }
    }

    /// Brings the shadow of `roots` up to date (made on first use, and again when the roots
    /// changed); says why when it cannot be made.
    pub(crate) async fn settle(&self, roots: &[PathBuf]) -> Result<(), String> {
        let (shadow, dir, skip, roots) = (self.shadow.clone(), self.dir.clone(), self.skip.clone(), roots.to_vec());
        let (ignored_too, caps) = (self.ignored_too, self.caps);
        let settled = tokio::task::spawn_blocking(move || {
            let mut held = shadow.lock().unwrap_or_else(|p| p.into_inner());
            if held.as_ref().is_none_or(|shadow| shadow.roots() != roots) {
                // The old one (and its copies) goes first: the new one takes its directory.
                *held = None;
                if let Some(parent) = dir.parent() {
                    toolbelt_mcp_sandbox::fs::create_private_dir(parent).map_err(|err| err.to_string())?;
                    // What servers killed before they could remove theirs left.
                    toolbelt_mcp_sandbox::shadow::remove_stale(parent);
                }
                *held = Some(Shadow::new(dir, roots, skip, ignored_too, caps).map_err(|err| err.to_string())?);
            }
            if let Some(shadow) = held.as_mut() {
                shadow.settle();
            }
            Ok(())
        })
        .await;
        settled.unwrap_or_else(|err| Err(err.to_string())).map_err(|err| {
            format!("what this command writes is not recorded for `undo`: the copy of the roots it is compared with could not be made ({err})")
        })
    }

    /// Takes what the server wrote at `paths` into the shadow (see `Shadow::absorb`).
    pub(crate) async fn absorb(&self, paths: Vec<PathBuf>) {
        let shadow = self.shadow.clone();
        let _ = tokio::task::spawn_blocking(move || {
            if let Some(shadow) = shadow.lock().unwrap_or_else(|p| p.into_inner()).as_mut() {
                shadow.absorb(&paths);
            }
        })
        .await;
    }

    /// What changed beneath the roots since the shadow was last settled or compared, as
    /// `command`'s record (old content at most `cap` bytes); `None` before any settle.
    pub(crate) async fn changes(&self, command: Command, cap: u64) -> Option<Recorded> {
        let shadow = self.shadow.clone();
        tokio::task::spawn_blocking(move || {
            shadow.lock().unwrap_or_else(|p| p.into_inner()).as_mut().map(|shadow| shadow.changes(command, cap))
        })
        .await
        .ok()
        .flatten()
    }
}
