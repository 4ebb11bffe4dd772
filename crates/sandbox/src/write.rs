//! Writing inside the roots without following symlinks, even under a race. A write target
//! holds its parent directory open, opened beneath its root (`beneath.rs`), so a directory
//! swapped for a symlink after the check makes the call fail instead of escaping; files land
//! by temp file + fsync + rename, so a crash leaves the old file or the new one, never a mix.
//! Every change goes through the held directory handle (`handle.rs`), never by re-walking a
//! path.
#![allow(clippy::disallowed_methods)]

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Error;
use crate::handle::{self, DirHandle};
use crate::paths::normalize;
use crate::{Roots, fs};

pub use crate::handle::{Kind, Replace};
use crate::journal::TempJournal;

mod lock;
mod tree;

pub use crate::journal::TEMP_SUFFIX;

/// A path to write inside the roots: its deepest existing ancestor held open, the parent
/// directories still to create, and the final name.
#[derive(Debug)]
pub struct Target {
    dir: DirHandle,
    missing: Vec<OsString>,
    name: OsString,
    real: PathBuf,
    shown: String,
    /// The edit lock on the file `read_existing` read, and the sha256 of what it read; held
    /// until the target is dropped, after the commit.
    held: std::sync::Mutex<Option<(lock::Held, [u8; 32])>>,
}

/// A regular file's current content, read through the target's directory handle.
#[derive(Debug, Clone)]
pub struct Existing {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Permission bits.
    pub mode: u32,
}

impl Target {
    /// Resolves `input` for writing: inside a root, through no symlink that leads out, and
    /// not itself a symlink (writes never follow one).
    pub fn resolve(roots: &Roots, input: &str) -> Result<Self, Error> {
        Self::open(roots, input, false)
    }

    /// [`Target::resolve`], but the entry may be a symlink (never followed): what undo uses
    /// to remove a link a command made.
    pub fn resolve_entry(roots: &Roots, input: &str) -> Result<Self, Error> {
        Self::open(roots, input, true)
    }

    fn open(roots: &Roots, input: &str, link_ok: bool) -> Result<Self, Error> {
        let lexical = normalize(&roots.first().join(input));
        crate::paths::windows_names(input, &lexical)?;
        if !roots.contains(&lexical) {
            return Err(roots.outside(input));
        }
        let (Some(parent), Some(name)) = (lexical.parent(), lexical.file_name()) else {
            return Err(Error::BadTarget {
                path: input.into(),
                problem: "is a root directory itself; give a path inside it".into(),
            });
        };
        if roots.list().iter().any(|root| root == &lexical) {
            return Err(Error::BadTarget {
                path: input.into(),
                problem: "is a root directory itself; give a path inside it".into(),
            });
        }
        // The deepest existing ancestor, resolved; what is below it will be created.
        let mut missing = Vec::new();
        let mut ancestor = parent.to_path_buf();
        let ancestor_real = loop {
            match fs::canonicalize(&ancestor) {
                Ok(real) => break real,
                Err(err) if err.kind() == io::ErrorKind::NotFound => {
                    let Some(component) = ancestor.file_name().map(OsStr::to_os_string) else {
                        return Err(Error::io("resolve", input, err));
                    };
                    missing.push(component);
                    if !ancestor.pop() {
                        return Err(Error::io("resolve", input, err));
                    }
                }
                Err(err) => return Err(Error::io("resolve", input, err)),
            }
        };
        missing.reverse();
        let Some(root) = roots.list().iter().find(|root| ancestor_real.starts_with(root)) else {
            return Err(Error::SymlinkEscape { path: input.into(), target: ancestor_real, roots: roots.joined() });
        };
        if !fs::is_dir(&ancestor_real) {
            return Err(Error::NotADirectory { path: roots.show(&ancestor_real) });
        }
        let relative = ancestor_real.strip_prefix(root).unwrap_or(Path::new(""));
        let dir =
            crate::beneath::open_dir(root, relative).map_err(|err| Error::io("open the directory of", input, err))?;
        let mut real = ancestor_real.clone();
        real.extend(&missing);
        real.push(name);
        let target = Self {
            dir,
            missing,
            name: name.to_os_string(),
            shown: roots.show(&real),
            real,
            held: std::sync::Mutex::new(None),
        };
        if target.kind() == Some(Kind::Link) && !link_ok {
            let link = target.dir.read_link(&target.name).map(|l| l.to_string_lossy().into_owned()).unwrap_or_default();
            return Err(Error::SymlinkTarget { path: target.shown, link });
        }
        Ok(target)
    }

    /// How to show the path to the model.
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// The absolute path the write lands at.
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// The current regular file at the target, if any, read whole up to `limit` bytes. The
    /// target keeps it locked against other processes' edits until it is dropped, and a
    /// commit checks it still holds what was read.
    pub fn read_existing(&self, limit: u64) -> Result<Option<Existing>, Error> {
        if !self.missing.is_empty() {
            return Ok(None);
        }
        let held = match lock::lock_file(&self.dir, &self.name, lock::LOCK_WAIT) {
            Ok(Some(held)) => held,
            Ok(None) => return Ok(None),
            Err(lock::LockError::Busy) => {
                return Err(Error::Locked { path: self.shown.clone(), seconds: lock::LOCK_WAIT.as_secs() });
            }
            Err(lock::LockError::Io(err)) => return Err(Error::io("read", &self.shown, err)),
        };
        let meta = held.file.metadata().map_err(|e| Error::io("read", &self.shown, e))?;
        if meta.is_dir() {
            return Err(Error::IsADirectory { path: self.shown.clone() });
        }
        if !meta.is_file() {
            return Err(Error::BadTarget { path: self.shown.clone(), problem: "is not a regular file".into() });
        }
        let size = meta.len();
        if size > limit {
            return Err(Error::TooLarge {
                path: self.shown.clone(),
                size: Some(size),
                limit,
                what: "edits (set `max_edit_bytes` in the config file to raise it)",
            });
        }
        let bytes = read_from_start(&held.file, limit).map_err(|e| Error::io("read", &self.shown, e))?;
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = Some((held, sha256(&bytes)));
        Ok(Some(Existing { bytes, mode: handle::permission_bits(&meta) }))
    }

    /// Fails if the file this target read was replaced or changed since (by a program that
    /// does not take our lock: an editor, a command); nothing to check if it read none.
    fn check_unchanged_since_read(&self) -> Result<(), Error> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let Some((held, read)) = held.as_ref() else { return Ok(()) };
        let now = if held.still_at(&self.dir, &self.name) {
            read_from_start(&held.file, u64::MAX).map(|bytes| sha256(&bytes)).ok()
        } else {
            None
        };
        if now.as_ref() == Some(read) {
            return Ok(());
        }
        Err(Error::StaleHash {
            path: self.shown.clone(),
            expected: hex::encode(read),
            actual: now.map_or_else(|| "a different file".to_string(), hex::encode),
        })
    }

    /// Whether a directory exists at the target.
    pub fn is_dir(&self) -> bool {
        self.kind() == Some(Kind::Dir)
    }

    /// Creates the missing parent directories; returns those created, outermost first.
    pub fn create_parents(&mut self) -> Result<Vec<PathBuf>, Error> {
        let mut created = Vec::new();
        let mut path = self.real.clone();
        path.pop();
        let mut parents: Vec<PathBuf> = Vec::new();
        for _ in &self.missing {
            parents.push(path.clone());
            path.pop();
        }
        parents.reverse();
        for (component, full) in std::mem::take(&mut self.missing).into_iter().zip(parents) {
            match self.dir.create_dir(&component) {
                Ok(()) => created.push(full),
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(Error::io("create the directory", &self.shown, err)),
            }
            self.dir = self
                .dir
                .open_dir(&component)
                .map_err(|err| Error::io("open the new directory of", &self.shown, err))?;
        }
        Ok(created)
    }

    /// Creates the target as a directory (and its parents). `Ok(false)` if it already was one.
    pub fn create_dir(&mut self) -> Result<(bool, Vec<PathBuf>), Error> {
        let mut created = self.create_parents()?;
        match self.dir.create_dir(&self.name) {
            Ok(()) => {
                created.push(self.real.clone());
                Ok((true, created))
            }
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists && self.is_dir() => Ok((false, created)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                Err(Error::AlreadyExists { path: self.shown.clone(), what: "a file" })
            }
            Err(err) => Err(Error::io("create the directory", &self.shown, err)),
        }
    }

    /// Writes `bytes` atomically: a temp file beside the target, fsync, rename over it, fsync
    /// of the directory. `mode` sets the permission bits exactly (else the umask applies).
    /// Returns the parent directories it had to create.
    pub fn write_atomic(
        &mut self,
        bytes: &[u8],
        mode: Option<u32>,
        replace: Replace,
        journal: &TempJournal,
    ) -> Result<Vec<PathBuf>, Error> {
        let created = self.create_parents()?;
        let temp = temp_name(&self.name);
        if let Some(parent) = self.real.parent() {
            journal.note_dir(parent);
        }
        let outcome = self.write_temp_and_rename(&temp, bytes, mode, replace);
        if outcome.is_err() {
            let _ = self.dir.remove_file(&temp);
        }
        outcome.map(|()| created)
    }

    /// Whether some parent directories do not exist yet.
    pub fn has_missing_parents(&self) -> bool {
        !self.missing.is_empty()
    }

    fn write_temp_and_rename(
        &self,
        temp: &OsStr,
        bytes: &[u8],
        mode: Option<u32>,
        replace: Replace,
    ) -> Result<(), Error> {
        let io_err = |action, err| Error::io(action, &self.shown, err);
        let mut file = self.dir.create_new(temp, mode).map_err(|e| io_err("create a temp file for", e))?;
        file.write_all(bytes).map_err(|e| io_err("write", e))?;
        file.sync_all().map_err(|e| io_err("flush", e))?;
        drop(file);
        self.check_unchanged_since_read()?;
        // Windows cannot replace a file another handle holds open: let go of the lock now.
        #[cfg(windows)]
        drop(self.held.lock().unwrap_or_else(|p| p.into_inner()).take());
        match self.dir.rename(temp, &self.dir, &self.name, replace) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(Error::AlreadyExists { path: self.shown.clone(), what: "something" });
            }
            Err(e) => return Err(io_err("replace", e)),
        }
        self.dir.sync().map_err(|e| io_err("flush the directory of", e))
    }

    /// Removes the file at the target (used by undo of a creation).
    pub fn remove_file(&self) -> Result<(), Error> {
        self.check_unchanged_since_read()?;
        #[cfg(windows)]
        drop(self.held.lock().unwrap_or_else(|p| p.into_inner()).take());
        self.dir.remove_file(&self.name).map_err(|e| Error::io("remove", &self.shown, e))
    }

    /// Removes the directory at the target if it is empty; `Ok(false)` if it is not.
    pub fn remove_empty_dir(&self) -> Result<bool, Error> {
        match self.dir.remove_dir(&self.name) {
            Ok(()) => Ok(true),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::DirectoryNotEmpty | io::ErrorKind::AlreadyExists | io::ErrorKind::NotFound
                ) =>
            {
                Ok(false)
            }
            Err(e) => Err(Error::io("remove the directory", &self.shown, e)),
        }
    }
}

impl Target {
    /// What exists at the target, if anything.
    pub fn kind(&self) -> Option<Kind> {
        if !self.missing.is_empty() {
            return None;
        }
        self.dir.stat(&self.name).ok().map(|stat| stat.kind)
    }

    /// Where the symlink at the target points, if it is one (never followed).
    pub fn link_target(&self) -> Option<PathBuf> {
        if !self.missing.is_empty() {
            return None;
        }
        self.dir.read_link(&self.name).ok()
    }

    /// Creates a symlink at the target (undo of a removed tree).
    pub fn symlink(&mut self, link: &Path) -> Result<(), Error> {
        self.create_parents()?;
        self.dir.symlink(link, &self.name).map_err(|e| Error::io("create the symlink", &self.shown, e))
    }

    /// Renames the target to `destination` (a file or a whole directory); returns the parent
    /// directories it created for the destination.
    pub fn rename_to(&self, destination: &mut Target, replace: Replace) -> Result<Vec<PathBuf>, Error> {
        let created = destination.create_parents()?;
        match self.dir.rename(&self.name, &destination.dir, &destination.name, replace) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                return Err(Error::AlreadyExists { path: destination.shown.clone(), what: "something" });
            }
            Err(e) => return Err(Error::io("rename", &self.shown, e)),
        }
        let _ = destination.dir.sync();
        let _ = self.dir.sync();
        Ok(created)
    }
}

/// The whole of `file`, from its start, up to `limit` bytes (one more shows it was larger).
fn read_from_start(file: &std::fs::File, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut offset = 0u64;
    while offset <= limit {
        let n = handle::read_at(file, &mut chunk, offset)?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
        offset += n as u64;
    }
    Ok(bytes)
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

/// `.name.<pid>.<n>.toolbelt-tmp`, short enough for any file system.
fn temp_name(name: &OsStr) -> OsString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = name.to_string_lossy();
    let mut cut = name.len().min(100);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let stem = &name[..cut];
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    OsString::from(format!(".{stem}.{}.{n}{TEMP_SUFFIX}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup(content: &str) -> (tempfile::TempDir, Roots, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let file = root.join("f.txt");
        std::fs::write(&file, content).unwrap();
        (tmp, Roots::new(vec![root]), file)
    }

    #[test]
    fn a_change_by_a_program_without_the_lock_is_never_overwritten() {
        let journal_dir = tempfile::tempdir().unwrap();
        let journal = TempJournal::new(journal_dir.path());
        // In place (an append, an editor saving over the file), then by rename.
        for replace_by_rename in [false, true] {
            let (_tmp, roots, file) = setup("one\n");
            let mut target = Target::resolve(&roots, "f.txt").unwrap();
            let read = target.read_existing(u64::MAX).unwrap().unwrap();
            assert_eq!(read.bytes, b"one\n");
            if replace_by_rename {
                std::fs::write(file.with_extension("new"), "theirs\n").unwrap();
                std::fs::rename(file.with_extension("new"), &file).unwrap();
            } else {
                use std::io::Write;
                std::fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"theirs\n").unwrap();
            }
            let err = target.write_atomic(b"ours\n", None, Replace::Allowed, &journal).unwrap_err();
            assert!(matches!(err, Error::StaleHash { .. }), "{err}");
            assert!(std::fs::read_to_string(&file).unwrap().contains("theirs"));
            let err = target.remove_file().unwrap_err();
            assert!(matches!(err, Error::StaleHash { .. }), "{err}");
            assert!(file.exists());
        }
    }

    #[test]
    fn an_unchanged_file_is_replaced_and_the_lock_is_held_until_then() {
        let journal_dir = tempfile::tempdir().unwrap();
        let journal = TempJournal::new(journal_dir.path());
        let (_tmp, roots, file) = setup("one\n");
        let mut target = Target::resolve(&roots, "f.txt").unwrap();
        target.read_existing(u64::MAX).unwrap().unwrap();
        let other = Target::resolve(&roots, "f.txt").unwrap();
        let dir = DirHandle::open(file.parent().unwrap()).unwrap();
        let busy = lock::lock_file(&dir, OsStr::new("f.txt"), std::time::Duration::from_millis(20));
        assert!(matches!(busy, Err(lock::LockError::Busy)), "{busy:?}");
        target.write_atomic(b"two\n", None, Replace::Allowed, &journal).unwrap();
        drop(target);
        assert_eq!(other.read_existing(u64::MAX).unwrap().unwrap().bytes, b"two\n");
    }
}
