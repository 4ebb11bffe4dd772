//! The staging layer: everything a sandboxed command writes under the roots lands in an
//! upper layer of its own (an overlay of each root, mounted in the command's mount namespace
//! by the helper), and reaches the real tree only through [`Stage::fold`], which lists every
//! change (the upper layer holds exactly those, so the cost follows what changed, not the
//! tree), judges them as a whole (`protected`) and applies what passes. That is the one point
//! every write of a command passes, whatever road it took: a renamed parent, a symlink, a
//! hard link, a new repository at any depth. What a change replaced or removed is kept in the
//! stage's `old/` area, for undo.
//!
//! A stage lives in `<state>/stage/<pid>-<n>` (or under the private temp dir when the state
//! dir lies in a root: an overlay's upper layer may not lie in its lower one). A server that
//! dies mid-command leaves its stages; the next start folds them (judged like any other) and
//! says so in its log.

mod cachetree;
pub mod fold;
mod gitindex;
pub mod layer;
mod objects;
mod offers;
mod probe;
pub mod record;
pub mod snapshot;
mod submodules;
pub mod taken;
pub mod tree;
pub mod view;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use fold::{Folded, LazyRules, Mode, Rules};

use crate::handle::DirHandle;

/// The manifest of a stage: what each of its layers stages (read back by a later start).
const MANIFEST: &str = "layers.json";
/// What the stage's command is: when it started (seconds since the epoch), a newline, and
/// its command line (read back by a later start, for the record it makes).
const COMMAND: &str = "command";
/// The suffix of a stage that was folded and is being removed.
const DONE: &str = ".done";
/// The suffix of a stage a later start is folding: if that start dies mid-fold, the next one
/// removes the stage instead of folding it again (a fold that kills its server must not kill
/// every later one).
const RECOVERING: &str = ".recovering";
/// In each layer's directory: what live folds took from its upper layer (`taken.rs`).
const TAKEN: &str = "taken";
/// Where a fold copies what a running command changed (`snapshot.rs`), in the stage's directory.
const SNAPSHOT: &str = "snapshot";

pub use crate::contract::StageLayer as Layer;

/// The staging of one command.
#[derive(Debug)]
pub struct Stage {
    dir: PathBuf,
    layers: Vec<Layer>,
    /// The command it stages and when it started, for its records.
    command: Command,
    /// What folds keep between them, under a lock that keeps them apart.
    folds: Mutex<Folds>,
}

/// What a stage's folds keep between them.
#[derive(Debug)]
struct Folds {
    /// The next number in the old area.
    next_old: u64,
    /// What earlier folds took from each layer.
    taken: Vec<taken::Taken>,
}

impl Stage {
    /// A new stage under `base` for `roots` (canonical, not nested in each other), for the
    /// command `line` (as the model wrote it).
    pub fn create(base: &Path, roots: &[PathBuf], line: &str) -> io::Result<Self> {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        crate::fs::create_private_dir(base)?;
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = base.join(format!("{}-{n}", std::process::id()));
        crate::fs::create_private_dir(&dir)?;
        let mut layers = Vec::new();
        for (i, root) in roots.iter().enumerate() {
            let layer = dir.join(i.to_string());
            let (upper, work) = (layer.join("upper"), layer.join("work"));
            for made in [&layer, &upper, &work] {
                crate::fs::create_private_dir(made)?;
            }
            layers.push(Layer { root: root.clone(), upper, work });
        }
        crate::fs::create_private_dir(&dir.join("old"))?;
        let manifest = serde_json::to_vec(&layers).map_err(io::Error::other)?;
        crate::fs::write_private(&dir, &dir.join(MANIFEST), &manifest)?;
        let command = Command { line: line.to_string(), started: std::time::SystemTime::now() };
        crate::fs::write_private(&dir, &dir.join(COMMAND), command.to_text().as_bytes())?;
        let taken = layers.iter().map(|_| taken::Taken::default()).collect();
        Ok(Self { dir, layers, command, folds: Mutex::new(Folds { next_old: 0, taken }) })
    }

    /// The stage left at `dir` by a server that is gone.
    fn open(dir: &Path) -> Option<Self> {
        let manifest = crate::fs::read_state_file(&dir.join(MANIFEST)).ok()?;
        let mut layers: Vec<Layer> = serde_json::from_slice(&manifest).ok()?;
        // Each layer lies in the stage's directory, which may have been renamed since.
        for (i, layer) in layers.iter_mut().enumerate() {
            layer.upper = dir.join(i.to_string()).join("upper");
            layer.work = dir.join(i.to_string()).join("work");
        }
        let next = crate::fs::file_names(&dir.join("old")).len() as u64 + 1_000_000;
        let command = crate::fs::read_state_file(&dir.join(COMMAND))
            .ok()
            .and_then(|text| Command::from_text(&String::from_utf8_lossy(&text)))
            .unwrap_or_else(|| Command {
                line: "(a command of an earlier server)".into(),
                started: std::time::UNIX_EPOCH,
            });
        let taken = (0..layers.len()).map(|i| taken::Taken::load(&dir.join(i.to_string()).join(TAKEN))).collect();
        Some(Self { dir: dir.to_path_buf(), layers, command, folds: Mutex::new(Folds { next_old: next, taken }) })
    }

    /// The command it stages and when that started.
    pub fn command(&self) -> &Command {
        &self.command
    }

    /// Its layers, one per staged root.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// Judges what the command wrote so far and applies what passes (see the module doc).
    pub fn fold(&self, rules: &LazyRules<'_>, mode: Mode) -> Folded {
        let since = std::time::SystemTime::now();
        let mut folds = self.folds.lock().unwrap_or_else(|p| p.into_inner());
        let Folds { next_old, taken } = &mut *folds;
        let mut folded = Folded::default();
        let old_path = self.dir.join("old");
        let old = match DirHandle::open(&old_path) {
            Ok(old) => old,
            Err(err) => {
                folded.failed.push(format!("cannot open the stage's old area `{}`: {err}", old_path.display()));
                return folded;
            }
        };
        for (i, (layer, taken)) in self.layers.iter().zip(taken.iter_mut()).enumerate() {
            let area = fold::OldArea { dir: &old, path: &old_path, next: &mut *next_old };
            if mode == Mode::Final && taken.is_empty() {
                fold::fold_layer(&layer.root, &layer.upper, area, rules, &mut folded);
                continue;
            }
            // A running command keeps writing its layer: what it changed is taken out first,
            // and that copy is what is judged and applied. So is an ended one's when earlier
            // folds took from it: what they took and it left as it was is not applied again.
            let snap = self.dir.join(SNAPSHOT);
            remove_dir(&snap);
            // Readable handles (`open` only names a directory).
            let readable = |dir: &Path| DirHandle::open(dir)?.open_beneath(Path::new(""));
            let took = readable(&layer.upper)
                .and_then(|upper| Ok((upper, readable(&layer.root)?, readable(&self.dir)?)))
                .and_then(|(upper, real, stage)| {
                    let into = (&stage, std::ffi::OsStr::new(SNAPSHOT));
                    snapshot::take(&upper, &real, into, taken, (since, mode == Mode::Final))
                });
            let applied_before = folded.applied.len();
            match took {
                Ok(true) => {
                    fold::fold_layer(&layer.root, &snap, area, rules, &mut folded);
                    note_applied(taken, &layer.root, &folded.applied[applied_before..]);
                    remove_dir(&snap);
                }
                // Nothing new: nothing was written, nothing is to fold.
                Ok(false) => {}
                Err(err) => {
                    folded.failed.push(format!(
                        "cannot take the changes of a running command under `{}`: {err}",
                        layer.root.display()
                    ));
                    remove_dir(&snap);
                }
            }
            let layer_dir = self.dir.join(i.to_string());
            if mode == Mode::Live
                && let Err(err) = taken.save(&layer_dir, &layer_dir.join(TAKEN))
            {
                tracing::warn!("cannot keep what a fold took from `{}`: {err}", layer.upper.display());
            }
        }
        folded
    }

    /// Removes the stage (its leftovers: refused entries, the old area): renamed to
    /// `NAME.done` at once (a later start removes such a one without folding it again), then
    /// deleted on a thread of its own, so a command that removed a large tree does not wait for
    /// its deletion.
    pub fn discard(self) {
        let mut done = self.dir.clone().into_os_string();
        done.push(DONE);
        let dir = match crate::fs::rename_state(&self.dir, std::path::Path::new(&done)) {
            Ok(()) => PathBuf::from(done),
            Err(_) => self.dir,
        };
        let _ = std::thread::Builder::new().name("stage-discard".into()).spawn(move || remove_dir(&dir));
    }
}

/// Notes in `taken` the real entries beneath `root` as the fold applied them (`applied`).
fn note_applied(taken: &mut taken::Taken, root: &Path, applied: &[fold::Applied]) {
    if applied.is_empty() {
        return;
    }
    let Ok(real) = DirHandle::open(root) else { return };
    for applied in applied {
        let Ok(rel) = applied.path.strip_prefix(root) else { continue };
        // A directory made whole brings what was taken beneath it.
        let made = if applied.kind == crate::handle::Kind::Dir { taken.beneath(rel) } else { vec![rel.to_path_buf()] };
        for rel in made {
            let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else { continue };
            if let Ok(dir) = real.open_beneath(parent) {
                taken.applied(&rel, &dir, name);
            }
        }
    }
}

pub use crate::undoable::Command;

impl Command {
    /// Its form in the stage: the start in seconds since the epoch, a newline, the line.
    fn to_text(&self) -> String {
        let secs = self.started.duration_since(std::time::UNIX_EPOCH).map_or(0, |since| since.as_secs());
        format!("{secs}\n{}", self.line)
    }

    /// Reads [`Self::to_text`]'s form back.
    fn from_text(text: &str) -> Option<Self> {
        let (secs, line) = text.split_once('\n')?;
        let started = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.parse().ok()?);
        Some(Self { line: line.to_string(), started })
    }
}

/// Removes a stage's directory, opening up what overlayfs left without permissions (its work
/// directory's `work`).
fn remove_dir(dir: &Path) {
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else { return };
    if let Ok(parent) = DirHandle::open(parent) {
        let _ = tree::remove(&parent, name);
    }
}

/// Where the stages of a server go: `<state>/stage`, unless that lies in a root or a root in
/// it (an overlay's layers may not overlap), then `<fallback>/stage`; `None` if both overlap.
pub fn base(state_dir: &Path, fallback: &Path, roots: &[PathBuf]) -> Option<PathBuf> {
    let overlaps = |dir: &Path| roots.iter().any(|root| dir.starts_with(root) || root.starts_with(dir));
    [state_dir, fallback].into_iter().map(|dir| dir.join("stage")).find(|dir| !overlaps(dir))
}

/// What a start made of the stages that servers which were killed left.
#[derive(Debug, Default)]
pub struct Recovered {
    /// A line per stage for the log.
    pub said: Vec<String>,
    /// The records of what their folds applied, for the next session's `changes` and `undo`.
    pub records: Vec<record::Recorded>,
}

/// Folds the stages that servers which are gone left under `base` (each judged as any fold
/// is), records what each applied (old content at most `cap` bytes, git-ignored paths too
/// when `ignored_too`), then removes them.
pub fn recover(base: &Path, rules: &LazyRules<'_>, cap: u64, ignored_too: bool) -> Recovered {
    let mut out = Recovered::default();
    for name in crate::fs::file_names(base) {
        let text = name.to_string_lossy();
        let Some(pid) = text.split('-').next().and_then(|p| p.parse::<u32>().ok()) else { continue };
        if pid == std::process::id() || crate::fs::process_alive(pid) {
            continue;
        }
        let dir = base.join(&name);
        if text.ends_with(DONE) {
            remove_dir(&dir);
            continue;
        }
        if text.ends_with(RECOVERING) {
            out.said.push(format!(
                "removed without folding the stage of a command of server {pid}: a start that folded it before ended mid-fold; what it held was not applied"
            ));
            remove_dir(&dir);
            continue;
        }
        let mut recovering = dir.clone().into_os_string();
        recovering.push(RECOVERING);
        let dir = match crate::fs::rename_state(&dir, Path::new(&recovering)) {
            Ok(()) => PathBuf::from(recovering),
            Err(_) => continue,
        };
        if let Some(stage) = Stage::open(&dir) {
            let folded = stage.fold(rules, Mode::Final);
            if folded.applied.is_empty() && folded.refused.is_empty() && folded.failed.is_empty() {
                remove_dir(&dir);
                continue;
            }
            let recorded = stage.record(&folded, cap, ignored_too);
            let undoable = !recorded.too_large && !recorded.changes.is_empty();
            out.said.push(format!(
                "finished the fold of `{}`, a command of server {pid} that ended mid-command: {} changes applied, {} refused, {} failed; {}",
                stage.command.line,
                folded.applied.len(),
                folded.refused.len(),
                folded.failed.len(),
                if undoable {
                    "the next session's `changes` lists what it applied and `undo` reverts it"
                } else {
                    "nothing of it can be undone with `undo`"
                }
            ));
            if undoable {
                out.records.push(recorded);
            }
        }
        remove_dir(&dir);
    }
    out
}
