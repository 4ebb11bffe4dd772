//! The session's shadow of its roots, for commands no staging layer records (macOS, and Linux
//! with `stage_writes = false`; see `toolbelt_mcp_sandbox::shadow`): settled before such a
//! command starts and before the server writes while one runs, compared at the defined points
//! after (the command's end, each call while it runs). Its work runs on a blocking thread.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::Terminals;
use crate::process::group_alive;

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
                    toolbelt_mcp_sandbox::fs::remove_dirs_of_dead_servers(parent, "");
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

impl Terminals {
    /// Before a command that no stage records starts (`launch.recorded_as`): the shadow of
    /// `roots` is brought up to date, so what it writes is measured from now. When it cannot
    /// be, the call's result says why.
    pub async fn before_unstaged(&self, roots: &[PathBuf]) {
        // What commands still running wrote since their last look is theirs: recorded now,
        // which brings the shadow up to date too (rather than taken in as nobody's).
        if self.before_own_write().await {
            return;
        }
        if let Err(why) = self.staging.shadowed.settle(roots).await {
            self.staging.notes.lock().unwrap_or_else(|p| p.into_inner()).push(why);
        }
    }

    /// What a command no stage records (`command`) changed since [`Terminals::before_unstaged`]
    /// (or the last look), for undo (old content at most the session's undo cap).
    pub async fn unstaged_changes(
        &self,
        command: toolbelt_mcp_sandbox::undoable::Command,
    ) -> Option<toolbelt_mcp_sandbox::undoable::Recorded> {
        self.staging.shadowed.changes(command, self.staging.undo_cap).await
    }

    /// Before a write of the server's own while commands no stage records run: what they
    /// wrote so far is recorded as theirs. Returns whether any such command runs.
    pub async fn before_own_write(&self) -> bool {
        let Some(command) = self.running_unstaged() else { return false };
        let recorded = self.staging.shadowed.changes(command, self.staging.undo_cap).await;
        self.staging.keep_record(recorded);
        true
    }

    /// After that write: what the server wrote at `written` (absolute paths; every path of
    /// the roots when it cannot say) is taken into the shadow, so it is not recorded as a
    /// command's, while what the commands wrote elsewhere meanwhile still is.
    pub async fn after_own_write(&self, roots: &[PathBuf], written: Vec<PathBuf>) {
        if written.is_empty() {
            if let Err(why) = self.staging.shadowed.settle(roots).await {
                self.staging.notes.lock().unwrap_or_else(|p| p.into_inner()).push(why);
            }
        } else {
            self.staging.shadowed.absorb(written).await;
        }
    }

    /// A running command no stage records, as its records name it.
    fn running_unstaged(&self) -> Option<toolbelt_mcp_sandbox::undoable::Command> {
        let tracked = self.staging.tracked.lock().unwrap_or_else(|p| p.into_inner());
        tracked.iter().filter(|t| group_alive(t.pgid)).find_map(|t| t.recorded_as.clone())
    }
}
