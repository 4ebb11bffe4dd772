//! What the folds of a running command took from its upper layer, entry by entry: the entry's
//! identity and change time when it was copied (and, for one changed in the last second, a
//! digest of what was copied: file systems keep coarse clocks, so a write just after the copy
//! may leave the change time as it was). A later fold skips an entry the command has not
//! written since, so what others wrote there after a fold stands (the agent's edit, the
//! user's, an undo); and it knows what the command removed of what it had made, where the
//! overlay leaves no whiteout. Kept in the stage's `taken` file too, a line per entry, for a
//! later start that folds the stage of a server that died.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, StatxFlags};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::handle::{DirHandle, Kind};

/// An entry whose change time lies this close to the fold is racy: its content is hashed too.
const RACY: Duration = Duration::from_secs(1);

/// Who an entry is and when it last changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    ino: u64,
    size: u64,
    mode: u16,
    ctime: (i64, u32),
    mtime: (i64, u32),
    /// Its birth, where the file system keeps one.
    btime: Option<(i64, u32)>,
}

impl Stamp {
    /// The stamp of `name` in `dir`, not following a symlink.
    pub fn of(dir: &DirHandle, name: &OsStr) -> Option<Self> {
        let mask = StatxFlags::BASIC_STATS | StatxFlags::BTIME;
        let st = rustix::fs::statx(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW, mask).ok()?;
        let time = |t: rustix::fs::StatxTimestamp| (t.tv_sec, t.tv_nsec);
        let born = StatxFlags::from_bits_retain(st.stx_mask).contains(StatxFlags::BTIME);
        Some(Self {
            ino: st.stx_ino,
            size: st.stx_size,
            mode: st.stx_mode,
            ctime: time(st.stx_ctime),
            mtime: time(st.stx_mtime),
            btime: born.then(|| time(st.stx_btime)),
        })
    }

    /// Whether it changed within [`RACY`] of `since`.
    fn racy(&self, since: SystemTime) -> bool {
        let Ok(secs) = u64::try_from(self.ctime.0) else { return false };
        UNIX_EPOCH + Duration::new(secs, self.ctime.1) + RACY >= since
    }
}

/// What a fold took at one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    stamp: Stamp,
    /// The digest of what was taken, when its stamp was racy (a file's bytes, a link's target).
    digest: Option<[u8; 32]>,
}

/// A line of the `taken` file: a path (its bytes) and what was taken there (`None`: forgotten).
#[derive(Serialize, Deserialize)]
struct Line {
    path: Vec<u8>,
    seen: Option<Seen>,
}

/// What earlier folds of one layer took, by path relative to the root.
#[derive(Debug, Default)]
pub struct Taken {
    seen: HashMap<PathBuf, Seen>,
    /// The directories holding something taken (where a fold looks for what the command
    /// removed).
    parents: HashSet<PathBuf>,
    /// What changed since the last [`Self::save`].
    unsaved: Vec<(PathBuf, Option<Seen>)>,
}

impl Taken {
    /// Whether nothing was taken yet.
    pub fn is_empty(&self) -> bool {
        self.seen.is_empty()
    }

    /// Whether something was taken at `rel` (whatever happened to it since).
    pub fn has(&self, rel: &Path) -> bool {
        self.seen.contains_key(rel)
    }

    /// Whether something was taken right in the directory `rel`.
    pub fn holds_in(&self, rel: &Path) -> bool {
        self.parents.contains(rel)
    }

    /// Whether the entry `name` of the upper directory `dir` (at `rel`) is what a fold took:
    /// the command has not written it since.
    pub fn unchanged(&self, rel: &Path, dir: &DirHandle, name: &OsStr) -> bool {
        let Some(seen) = self.seen.get(rel) else { return false };
        if Stamp::of(dir, name) != Some(seen.stamp) {
            return false;
        }
        seen.digest.is_none() || digest(dir, name).ok().flatten() == seen.digest
    }

    /// Whether the upper directory `name` of `dir` (at `rel`) is the one a fold took, not one
    /// made again at its place (by its inode and birth; without a birth, never).
    pub fn same_dir(&self, rel: &Path, dir: &DirHandle, name: &OsStr) -> bool {
        let (Some(seen), Some(now)) = (self.seen.get(rel), Stamp::of(dir, name)) else { return false };
        seen.stamp.btime.is_some() && seen.stamp.ino == now.ino && seen.stamp.btime == now.btime
    }

    /// Notes that a fold took `name` of the upper directory `dir` (at `rel`), copied to `copy`
    /// in `into`: `before` is its stamp from before the copy. An entry written during the copy
    /// is forgotten (the next fold takes it again); a racy one keeps the copy's digest.
    pub fn note(
        &mut self,
        rel: &Path,
        before: Option<Stamp>,
        dir: &DirHandle,
        name: &OsStr,
        into: &DirHandle,
        since: SystemTime,
    ) {
        let stable = before.filter(|before| Stamp::of(dir, name) == Some(*before));
        let seen = stable.and_then(|stamp| {
            let digest = if stamp.racy(since) { digest(into, name).ok()? } else { None };
            Some(Seen { stamp, digest })
        });
        self.set(rel, seen);
    }

    /// Forgets `rel` and what lies beneath it (the command removed it).
    pub fn forget(&mut self, rel: &Path) {
        let Some(seen) = self.seen.get(rel) else { return };
        if u32::from(seen.stamp.mode) & libc::S_IFMT != libc::S_IFDIR {
            self.set(rel, None);
            return;
        }
        let gone: Vec<PathBuf> = self.seen.keys().filter(|path| path.starts_with(rel)).cloned().collect();
        for path in gone {
            self.set(&path, None);
        }
    }

    fn set(&mut self, rel: &Path, seen: Option<Seen>) {
        match &seen {
            Some(seen) => {
                self.seen.insert(rel.to_path_buf(), seen.clone());
                if let Some(parent) = rel.parent() {
                    self.parents.insert(parent.to_path_buf());
                }
            }
            None => {
                self.seen.remove(rel);
            }
        }
        self.unsaved.push((rel.to_path_buf(), seen));
    }

    /// Appends what changed since the last save to the file `path` in the stage's private
    /// directory `dir`, a JSON line per path.
    pub fn save(&mut self, dir: &Path, path: &Path) -> io::Result<()> {
        if self.unsaved.is_empty() {
            return Ok(());
        }
        let mut text = Vec::new();
        for (rel, seen) in self.unsaved.drain(..) {
            let line = Line { path: rel.into_os_string().into_vec(), seen };
            serde_json::to_writer(&mut text, &line).map_err(io::Error::other)?;
            text.push(b'\n');
        }
        crate::fs::append_private(dir, path, &text)
    }

    /// What the file `path` holds (the last line of a path wins; a torn last line is skipped).
    pub fn load(path: &Path) -> Self {
        let mut taken = Self::default();
        let Ok(text) = crate::fs::read_state_file(path) else { return taken };
        for line in text.split(|b| *b == b'\n') {
            let Ok(line) = serde_json::from_slice::<Line>(line) else { continue };
            let rel = PathBuf::from(std::ffi::OsString::from_vec(line.path));
            taken.set(&rel, line.seen);
        }
        taken.unsaved.clear();
        taken
    }
}

/// The digest of a regular file's bytes or a symlink's target; `None` for anything else.
fn digest(dir: &DirHandle, name: &OsStr) -> io::Result<Option<[u8; 32]>> {
    let mut hasher = Sha256::new();
    match dir.stat(name)?.kind {
        Kind::File => {
            let mut file = dir.open_read(name)?;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hasher.update(&buf[..n]);
            }
        }
        Kind::Link => hasher.update(dir.read_link(name)?.as_os_str().as_bytes()),
        Kind::Dir | Kind::Other => return Ok(None),
    }
    Ok(Some(hasher.finalize().into()))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use std::io::Write;

    use super::*;

    fn dir(path: &Path) -> DirHandle {
        DirHandle::open(path).unwrap().open_beneath(Path::new("")).unwrap()
    }

    #[test]
    fn a_rewrite_is_seen_even_within_the_clocks_grain() {
        let tmp = tempfile::tempdir().unwrap();
        let (upper, into) = (tmp.path().join("upper"), tmp.path().join("into"));
        std::fs::create_dir_all(&upper).unwrap();
        std::fs::create_dir_all(&into).unwrap();
        std::fs::write(upper.join("a"), "one\n").unwrap();
        std::fs::write(into.join("a"), "one\n").unwrap();
        let (up, snap) = (dir(&upper), dir(&into));
        let mut taken = Taken::default();
        let rel = Path::new("a");
        let before = Stamp::of(&up, OsStr::new("a"));
        taken.note(rel, before, &up, OsStr::new("a"), &snap, SystemTime::now());
        assert!(taken.unchanged(rel, &up, OsStr::new("a")));
        // Same size, at once: the digest tells it apart even if the clock did not move.
        std::fs::write(upper.join("a"), "two\n").unwrap();
        assert!(!taken.unchanged(rel, &up, OsStr::new("a")));
        assert!(!taken.unchanged(Path::new("b"), &up, OsStr::new("a")));
    }

    #[test]
    fn what_was_taken_is_read_back_from_its_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("x"), "x\n").unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        let here = dir(tmp.path());
        let mut taken = Taken::default();
        let an_hour_on = SystemTime::now() + Duration::from_secs(3600);
        taken.note(Path::new("d/x"), Stamp::of(&here, OsStr::new("x")), &here, OsStr::new("x"), &here, an_hour_on);
        taken.note(Path::new("gone"), Stamp::of(&here, OsStr::new("x")), &here, OsStr::new("x"), &here, an_hour_on);
        taken.forget(Path::new("gone"));
        let file = tmp.path().join("taken");
        taken.save(tmp.path(), &file).unwrap();
        std::fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"{\"path\":[1,").unwrap();
        let back = Taken::load(&file);
        assert!(back.has(Path::new("d/x")) && !back.has(Path::new("gone")));
        assert!(back.holds_in(Path::new("d")));
        assert!(back.unchanged(Path::new("d/x"), &here, OsStr::new("x")));
    }
}
