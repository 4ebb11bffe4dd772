//! Writing inside the roots without following symlinks, even under a race. A write target
//! holds its parent directory open through `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`
//! from its root, so a directory swapped for a symlink after the check makes the call fail
//! instead of escaping; files land by temp file + fsync + rename, so a crash leaves the old
//! file or the new one, never a mix. Like `fs.rs`, it may call `std::fs`, but only through a
//! held directory handle (`/proc/self/fd/N/name`), never by re-walking a path.
#![allow(clippy::disallowed_methods)]

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, RenameFlags};

use crate::error::ToolError;
use crate::sandbox::paths::normalize;
use crate::sandbox::{Roots, fs};

pub use crate::sandbox::journal::TempJournal;

mod lock;
mod tree;

/// Suffix of our temp files; leftovers of a killed server are swept by [`TempJournal`].
pub const TEMP_SUFFIX: &str = ".toolbelt-tmp";

/// A path to write inside the roots: its deepest existing ancestor held open, the parent
/// directories still to create, and the final name.
#[derive(Debug)]
pub struct Target {
    dir: OwnedFd,
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

/// Whether a write may replace an existing file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Replace {
    /// Fail if something exists at the target (atomically: `RENAME_NOREPLACE`).
    Never,
    /// Replace it.
    Allowed,
}

impl Target {
    /// Resolves `input` for writing: inside a root, through no symlink that leads out, and
    /// not itself a symlink (writes never follow one).
    pub fn resolve(roots: &Roots, input: &str) -> Result<Self, ToolError> {
        let lexical = normalize(&roots.first().join(input));
        if !roots.contains(&lexical) {
            return Err(roots.outside(input));
        }
        let (Some(parent), Some(name)) = (lexical.parent(), lexical.file_name()) else {
            return Err(ToolError::BadTarget {
                path: input.into(),
                problem: "is a root directory itself; give a path inside it".into(),
            });
        };
        if roots.list().iter().any(|root| root == &lexical) {
            return Err(ToolError::BadTarget {
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
                        return Err(ToolError::io("resolve", input, err));
                    };
                    missing.push(component);
                    if !ancestor.pop() {
                        return Err(ToolError::io("resolve", input, err));
                    }
                }
                Err(err) => return Err(ToolError::io("resolve", input, err)),
            }
        };
        missing.reverse();
        let Some(root) = roots.list().iter().find(|root| ancestor_real.starts_with(root)) else {
            return Err(ToolError::SymlinkEscape { path: input.into(), target: ancestor_real, roots: roots.joined() });
        };
        if !fs::is_dir(&ancestor_real) {
            return Err(ToolError::NotADirectory { path: roots.show(&ancestor_real) });
        }
        let relative = ancestor_real.strip_prefix(root).unwrap_or(Path::new(""));
        let dir = crate::sandbox::beneath::open_dir(root, relative)
            .map_err(|err| ToolError::io("open the directory of", input, err))?;
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
        if target.missing.is_empty()
            && let Ok(stat) = rustix::fs::statat(&target.dir, &target.name, AtFlags::SYMLINK_NOFOLLOW)
            && FileType::from_raw_mode(stat.st_mode) == FileType::Symlink
        {
            let link = rustix::fs::readlinkat(&target.dir, &target.name, Vec::new())
                .map(|l| l.to_string_lossy().into_owned())
                .unwrap_or_default();
            return Err(ToolError::SymlinkTarget { path: target.shown, link });
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
    pub fn read_existing(&self, limit: u64) -> Result<Option<Existing>, ToolError> {
        if !self.missing.is_empty() {
            return Ok(None);
        }
        let held = match lock::lock_file(&self.dir, &self.name, lock::LOCK_WAIT) {
            Ok(Some(held)) => held,
            Ok(None) => return Ok(None),
            Err(lock::LockError::Busy) => {
                return Err(ToolError::Locked { path: self.shown.clone(), seconds: lock::LOCK_WAIT.as_secs() });
            }
            Err(lock::LockError::Io(err)) => return Err(ToolError::io("read", &self.shown, err.into())),
        };
        let stat = rustix::fs::fstat(&held.fd).map_err(|e| ToolError::io("read", &self.shown, e.into()))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => {}
            FileType::Directory => return Err(ToolError::IsADirectory { path: self.shown.clone() }),
            _ => {
                return Err(ToolError::BadTarget { path: self.shown.clone(), problem: "is not a regular file".into() });
            }
        }
        let size = stat.st_size as u64;
        if size > limit {
            return Err(ToolError::TooLarge {
                path: self.shown.clone(),
                size: crate::tools::file::human_size(size),
                limit: crate::tools::file::human_size(limit),
                what: "edits (set `max_edit_bytes` in the config file to raise it)",
            });
        }
        let bytes = read_from_start(&held.fd, limit).map_err(|e| ToolError::io("read", &self.shown, e))?;
        *self.held.lock().unwrap_or_else(|p| p.into_inner()) = Some((held, sha256(&bytes)));
        Ok(Some(Existing { bytes, mode: permission_bits(stat.st_mode) }))
    }

    /// Fails if the file this target read was replaced or changed since (by a program that
    /// does not take our lock: an editor, a command); nothing to check if it read none.
    fn check_unchanged_since_read(&self) -> Result<(), ToolError> {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let Some((held, read)) = held.as_ref() else { return Ok(()) };
        let now = if held.still_at(&self.dir, &self.name) {
            read_from_start(&held.fd, u64::MAX).map(|bytes| sha256(&bytes)).ok()
        } else {
            None
        };
        if now.as_ref() == Some(read) {
            return Ok(());
        }
        Err(ToolError::StaleHash {
            path: self.shown.clone(),
            expected: hex(read),
            actual: now.map_or_else(|| "a different file".to_string(), |now| hex(&now)),
        })
    }

    /// Whether a directory exists at the target.
    pub fn is_dir(&self) -> bool {
        self.missing.is_empty()
            && rustix::fs::statat(&self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|s| FileType::from_raw_mode(s.st_mode) == FileType::Directory)
    }

    /// Creates the missing parent directories; returns those created, outermost first.
    pub fn create_parents(&mut self) -> Result<Vec<PathBuf>, ToolError> {
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
            match rustix::fs::mkdirat(&self.dir, &component, Mode::from_raw_mode(0o777)) {
                Ok(()) => created.push(full),
                Err(rustix::io::Errno::EXIST) => {}
                Err(err) => return Err(ToolError::io("create the directory", &self.shown, err.into())),
            }
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            self.dir = rustix::fs::openat(&self.dir, &component, flags, Mode::empty())
                .map_err(|err| ToolError::io("open the new directory of", &self.shown, err.into()))?;
        }
        Ok(created)
    }

    /// Creates the target as a directory (and its parents). `Ok(false)` if it already was one.
    pub fn create_dir(&mut self) -> Result<(bool, Vec<PathBuf>), ToolError> {
        let mut created = self.create_parents()?;
        match rustix::fs::mkdirat(&self.dir, &self.name, Mode::from_raw_mode(0o777)) {
            Ok(()) => {
                created.push(self.real.clone());
                Ok((true, created))
            }
            Err(rustix::io::Errno::EXIST) if self.is_dir() => Ok((false, created)),
            Err(rustix::io::Errno::EXIST) => Err(ToolError::AlreadyExists { path: self.shown.clone(), what: "a file" }),
            Err(err) => Err(ToolError::io("create the directory", &self.shown, err.into())),
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
    ) -> Result<Vec<PathBuf>, ToolError> {
        let created = self.create_parents()?;
        let temp = temp_name(&self.name);
        if let Some(parent) = self.real.parent() {
            journal.note_dir(parent);
        }
        let outcome = self.write_temp_and_rename(&temp, bytes, mode, replace);
        if outcome.is_err() {
            let _ = rustix::fs::unlinkat(&self.dir, &temp, AtFlags::empty());
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
    ) -> Result<(), ToolError> {
        let io_err = |action, err: rustix::io::Errno| ToolError::io(action, &self.shown, err.into());
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.dir, temp, flags, mode_of(mode.unwrap_or(0o666)))
            .map_err(|e| io_err("create a temp file for", e))?;
        if let Some(mode) = mode {
            rustix::fs::fchmod(&fd, mode_of(mode)).map_err(|e| io_err("set the permissions of", e))?;
        }
        let mut file = std::fs::File::from(fd);
        file.write_all(bytes).map_err(|e| ToolError::io("write", &self.shown, e))?;
        rustix::fs::fsync(&file).map_err(|e| io_err("flush", e))?;
        self.check_unchanged_since_read()?;
        let rename_flags = match replace {
            Replace::Never => RenameFlags::NOREPLACE,
            Replace::Allowed => RenameFlags::empty(),
        };
        match rustix::fs::renameat_with(&self.dir, temp, &self.dir, &self.name, rename_flags) {
            Ok(()) => {}
            Err(rustix::io::Errno::EXIST) => {
                return Err(ToolError::AlreadyExists { path: self.shown.clone(), what: "something" });
            }
            Err(e) => return Err(io_err("replace", e)),
        }
        rustix::fs::fsync(&self.dir).map_err(|e| io_err("flush the directory of", e))
    }

    /// Removes the file at the target (used by undo of a creation).
    pub fn remove_file(&self) -> Result<(), ToolError> {
        self.check_unchanged_since_read()?;
        rustix::fs::unlinkat(&self.dir, &self.name, AtFlags::empty())
            .map_err(|e| ToolError::io("remove", &self.shown, e.into()))
    }

    /// Removes the directory at the target if it is empty; `Ok(false)` if it is not.
    pub fn remove_empty_dir(&self) -> Result<bool, ToolError> {
        match rustix::fs::unlinkat(&self.dir, &self.name, AtFlags::REMOVEDIR) {
            Ok(()) => Ok(true),
            Err(rustix::io::Errno::NOTEMPTY | rustix::io::Errno::EXIST | rustix::io::Errno::NOENT) => Ok(false),
            Err(e) => Err(ToolError::io("remove the directory", &self.shown, e.into())),
        }
    }
}

/// What is at a target, not following a symlink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symlink.
    Link,
    /// Something else (socket, device, fifo).
    Other,
}

impl Target {
    /// What exists at the target, if anything.
    pub fn kind(&self) -> Option<Kind> {
        if !self.missing.is_empty() {
            return None;
        }
        let stat = rustix::fs::statat(&self.dir, &self.name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        Some(match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Dir,
            FileType::Symlink => Kind::Link,
            _ => Kind::Other,
        })
    }

    /// Creates a symlink at the target (undo of a removed tree).
    pub fn symlink(&mut self, link: &Path) -> Result<(), ToolError> {
        self.create_parents()?;
        rustix::fs::symlinkat(link, &self.dir, &self.name)
            .map_err(|e| ToolError::io("create the symlink", &self.shown, e.into()))
    }

    /// Renames the target to `destination` (a file or a whole directory); returns the parent
    /// directories it created for the destination.
    pub fn rename_to(&self, destination: &mut Target, replace: Replace) -> Result<Vec<PathBuf>, ToolError> {
        let created = destination.create_parents()?;
        let flags = match replace {
            Replace::Never => RenameFlags::NOREPLACE,
            Replace::Allowed => RenameFlags::empty(),
        };
        match rustix::fs::renameat_with(&self.dir, &self.name, &destination.dir, &destination.name, flags) {
            Ok(()) => {}
            Err(rustix::io::Errno::EXIST | rustix::io::Errno::NOTEMPTY) => {
                return Err(ToolError::AlreadyExists { path: destination.shown.clone(), what: "something" });
            }
            Err(e) => return Err(ToolError::io("rename", &self.shown, e.into())),
        }
        let _ = rustix::fs::fsync(&destination.dir);
        let _ = rustix::fs::fsync(&self.dir);
        Ok(created)
    }
}

/// The whole file behind `fd`, from its start, up to `limit` bytes (one more shows it was
/// larger).
fn read_from_start(fd: &OwnedFd, limit: u64) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut offset = 0u64;
    while offset <= limit {
        let n = rustix::io::pread(fd, &mut chunk, offset)?;
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

fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

/// `.name.<pid>.<n>.toolbelt-tmp`, short enough for any file system.
fn temp_name(name: &OsStr) -> OsString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let bytes = name.as_bytes();
    let stem = String::from_utf8_lossy(&bytes[..bytes.len().min(100)]).into_owned();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    OsString::from(format!(".{stem}.{}.{n}{TEMP_SUFFIX}", std::process::id()))
}

/// The permission bits of a raw `st_mode` (`mode_t` is 16 bits on macOS, 32 on Linux).
#[allow(clippy::useless_conversion)]
pub fn permission_bits(raw: rustix::fs::RawMode) -> u32 {
    u32::from(raw) & 0o7777
}

/// Permission bits (the low 12 bits of `bits`) as a [`Mode`].
fn mode_of(bits: u32) -> Mode {
    // At most 0o7777: fits every platform's `mode_t`.
    Mode::from_bits_truncate((bits & 0o7777) as rustix::fs::RawMode)
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
            let err = target.write_atomic(b"ours\n", None, Replace::Allowed, &journal).unwrap_err().to_string();
            assert!(err.contains("changed since it was read"), "{err}");
            assert!(std::fs::read_to_string(&file).unwrap().contains("theirs"));
            let err = target.remove_file().unwrap_err().to_string();
            assert!(err.contains("changed since it was read"), "{err}");
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
        let dir = rustix::fs::open(file.parent().unwrap(), OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let busy = lock::lock_file(&dir, OsStr::new("f.txt"), std::time::Duration::from_millis(20));
        assert!(matches!(busy, Err(lock::LockError::Busy)), "{busy:?}");
        target.write_atomic(b"two\n", None, Replace::Allowed, &journal).unwrap();
        drop(target);
        assert_eq!(other.read_existing(u64::MAX).unwrap().unwrap().bytes, b"two\n");
    }
}
