//! Cross-process edit locks. A read-modify-write holds an exclusive `flock` on the file it
//! read from the read to the commit, so two server processes (two hosts open on one
//! repository) editing one file take turns instead of losing each other's edits. `flock`
//! rather than a POSIX record lock: it works on a read-only descriptor (a file the user made
//! read-only can still be replaced), and like an OFD lock it belongs to the open file, so two
//! sessions of one HTTP server exclude each other too. Writes land by rename, so a waiter
//! that gets the lock checks the name still leads to the file it locked and, if not, locks
//! the new one. (Windows: std's `LockFileEx`, let go of just before the rename, since Windows
//! replaces no file another handle holds open.)
#![allow(clippy::disallowed_methods)]

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::time::{Duration, Instant};

use crate::handle::{self, DirHandle, FileId};

/// How long an edit waits for another process's edit of the same file.
pub(super) const LOCK_WAIT: Duration = Duration::from_secs(5);

/// A held lock on the file that was at a name when it was taken.
#[derive(Debug)]
pub(super) struct Held {
    /// The locked file, open read-only (the edit reads through it).
    pub file: File,
    id: FileId,
}

/// Why a lock was not taken.
#[derive(Debug)]
pub(super) enum LockError {
    /// Another process held it for the whole wait.
    Busy,
    /// Opening or locking failed.
    Io(io::Error),
}

/// Locks the file at `name` in `dir`; `Ok(None)` if there is none (nothing to read, so
/// nothing to lose). Waits at most `wait` for another holder.
pub(super) fn lock_file(dir: &DirHandle, name: &OsStr, wait: Duration) -> Result<Option<Held>, LockError> {
    let deadline = Instant::now() + wait;
    let mut pause = Duration::from_millis(1);
    loop {
        let file = match dir.open_read(name) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(LockError::Io(err)),
        };
        loop {
            match handle::try_lock(&file) {
                Ok(true) => break,
                Ok(false) if Instant::now() < deadline => {
                    // Edits hold the lock for milliseconds (diffs have a deadline).
                    std::thread::sleep(pause);
                    pause = (pause * 2).min(Duration::from_millis(20));
                }
                Ok(false) => return Err(LockError::Busy),
                Err(err) => return Err(LockError::Io(err)),
            }
        }
        let id = handle::file_identity(&file).map_err(LockError::Io)?;
        let held = Held { file, id };
        if held.still_at(dir, name) {
            return Ok(Some(held));
        }
        // The holder replaced the file (or removed it): lock what is there now.
    }
}

impl Held {
    /// Whether `name` in `dir` is still the locked file.
    pub(super) fn still_at(&self, dir: &DirHandle, name: &OsStr) -> bool {
        dir.identity(name).is_ok_and(|now| now == self.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir_fd(path: &std::path::Path) -> DirHandle {
        DirHandle::open(path).unwrap()
    }

    #[test]
    fn a_second_holder_waits_then_gives_up() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f"), "x").unwrap();
        let dir = dir_fd(tmp.path());
        let first = lock_file(&dir, OsStr::new("f"), LOCK_WAIT).unwrap().unwrap();
        let started = Instant::now();
        let second = lock_file(&dir, OsStr::new("f"), Duration::from_millis(60));
        assert!(matches!(second, Err(LockError::Busy)), "{second:?}");
        assert!(started.elapsed() >= Duration::from_millis(60));
        drop(first);
        assert!(lock_file(&dir, OsStr::new("f"), Duration::from_millis(60)).unwrap().is_some());
        assert!(lock_file(&dir, OsStr::new("missing"), LOCK_WAIT).unwrap().is_none());
    }

    #[test]
    fn a_waiter_follows_a_replaced_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("f"), "old").unwrap();
        let dir = dir_fd(tmp.path());
        let first = lock_file(&dir, OsStr::new("f"), LOCK_WAIT).unwrap().unwrap();
        let path = tmp.path().to_path_buf();
        let waiter = std::thread::spawn(move || {
            let dir = dir_fd(&path);
            let held = lock_file(&dir, OsStr::new("f"), LOCK_WAIT).unwrap().unwrap();
            std::io::read_to_string(held.file).unwrap()
        });
        std::thread::sleep(Duration::from_millis(30));
        // The holder commits by rename, then lets go of the old file.
        std::fs::write(tmp.path().join("f.new"), "new").unwrap();
        std::fs::rename(tmp.path().join("f.new"), tmp.path().join("f")).unwrap();
        assert!(!first.still_at(&dir, OsStr::new("f")));
        drop(first);
        assert_eq!(waiter.join().unwrap(), "new");
    }
}
