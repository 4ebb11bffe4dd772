//! What the folds of a running command took from its upper layer, entry by entry: the upper
//! entry's identity and change time when it was copied, a digest of what was copied (a file's
//! bytes, a link's target), and the real entry's stamp once the fold applied it. A later fold
//! takes an entry again only when the command changed it since: its content, kind or mode (a
//! `touch` or a new hard link alone is no change). The stamp answers cheaply on a live fold
//! (file systems keep coarse clocks, so an entry changed within a second of the fold, and every
//! entry at the final fold, is checked by its digest: a write through a memory mapping to a page
//! still dirty moves no timestamp). So what others wrote at such a path after a fold stands
//! (the agent's edit, the user's, an undo). A removal of something taken, by a whiteout or
//! where the overlay leaves none (the command made the directory), is applied only while the
//! real entry is still what the fold put there. Kept in the stage's `taken` file too, a line
//! per entry, for a later start that folds the stage of a server that died.

use std::collections::{BTreeMap, HashSet};
use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, StatxFlags};
use serde::{Deserialize, Serialize};

use crate::handle::{DirHandle, Kind};

/// An entry whose change time lies this close to the fold is racy: its digest is checked too.
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

    fn is_dir(&self) -> bool {
        u32::from(self.mode) & libc::S_IFMT == libc::S_IFDIR
    }

    /// The same directory (its times move with what is put in it): by its inode and birth;
    /// without a birth, never (one removed and made again may get the same inode).
    fn same_dir(&self, other: &Self) -> bool {
        self.btime.is_some() && self.ino == other.ino && self.btime == other.btime
    }
}

/// What a fold took at one path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seen {
    /// The upper entry's stamp when it was copied (`None`: it changed or went during the copy,
    /// so the next fold takes it again).
    stamp: Option<Stamp>,
    /// Its mode then (the permission bits and kind).
    mode: u16,
    /// Its stamp was racy: the digest decides.
    racy: bool,
    /// The xxh3-128 of what was taken (a file's bytes, a link's target; `None` for others).
    digest: Option<u128>,
    /// The real entry's stamp once the fold applied it (`None`: not applied); a directory is
    /// told by it, anything else by the copy's `stamp` (see [`Taken::real_is_ours`]).
    real: Option<Stamp>,
}

/// A line of the `taken` file: a path (its bytes) and what was taken there (`None`: forgotten).
#[derive(Serialize, Deserialize)]
struct Line {
    path: Vec<u8>,
    seen: Option<Seen>,
}

/// Whether a fold takes an entry again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Again {
    /// Not taken before: judged as it is.
    New,
    /// Taken, and the command has not changed it since.
    Unchanged,
    /// Taken, and the command changed its content (or kind) since.
    Changed,
    /// Taken, and the command changed only its mode since.
    Mode,
}

/// What earlier folds of one layer took, by path relative to the root.
#[derive(Debug, Default)]
pub struct Taken {
    seen: BTreeMap<PathBuf, Seen>,
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

    /// What the command did to the entry `name` of the upper directory `dir` (at `rel`) since a
    /// fold took it. `last`: the command has ended (every taken file's digest is checked).
    pub fn again(&mut self, rel: &Path, dir: &DirHandle, name: &OsStr, last: bool) -> Again {
        let again = self.again_of(rel, dir, name, last);
        // A racy entry found unchanged once its second is over is settled: its stamp answers.
        if again == Again::Unchanged
            && let Some(seen) = self.seen.get_mut(rel)
            && seen.racy
            && seen.stamp.is_some_and(|stamp| !stamp.racy(SystemTime::now()))
        {
            seen.racy = false;
        }
        again
    }

    fn again_of(&self, rel: &Path, dir: &DirHandle, name: &OsStr, last: bool) -> Again {
        let Some(seen) = self.seen.get(rel) else { return Again::New };
        let Some(now) = Stamp::of(dir, name) else { return Again::Changed };
        let same_stamp = seen.stamp == Some(now);
        if same_stamp && !seen.racy && (!last || seen.digest.is_none()) {
            return Again::Unchanged;
        }
        if (u32::from(now.mode) ^ u32::from(seen.mode)) & libc::S_IFMT != 0 {
            return Again::Changed;
        }
        let same_content = match seen.digest {
            Some(digest) => digest_of(dir, name).ok().flatten() == Some(digest),
            // A whiteout, a FIFO: nothing but its stamp to tell.
            None => same_stamp,
        };
        match (same_content, now.mode == seen.mode) {
            (true, true) => Again::Unchanged,
            (true, false) => Again::Mode,
            (false, _) => Again::Changed,
        }
    }

    /// Whether the directory `name` of `dir` (at `rel`) is the one a fold took, not one made
    /// again at its place (by its inode and birth; without a birth, never).
    pub fn same_dir(&self, rel: &Path, dir: &DirHandle, name: &OsStr) -> bool {
        let Some(seen) = self.seen.get(rel).and_then(|seen| seen.stamp) else { return false };
        Stamp::of(dir, name).is_some_and(|now| seen.same_dir(&now))
    }

    /// Whether the command has left the mode of the directory `name` of `dir` (at `rel`) as a
    /// fold took it.
    pub fn mode_kept(&self, rel: &Path, dir: &DirHandle, name: &OsStr) -> bool {
        let (Some(seen), Some(now)) = (self.seen.get(rel), Stamp::of(dir, name)) else { return false };
        seen.mode == now.mode
    }

    /// Whether the real entry `name` of `real` (at `rel`) is still what a fold put there:
    /// nobody wrote it since. A directory is the same one (by the stamp taken once it was
    /// applied); anything else has the size, mode and modification time of what was copied
    /// (kept by the copy and the move), so a write during the fold itself is told apart too.
    pub fn real_is_ours(&self, rel: &Path, real: &DirHandle, name: &OsStr) -> bool {
        let Some(seen) = self.seen.get(rel) else { return false };
        let Some(now) = Stamp::of(real, name) else { return false };
        if now.is_dir() {
            return seen.real.is_some_and(|ours| ours.same_dir(&now));
        }
        seen.stamp.is_some_and(|copied| {
            seen.real.is_some() && (copied.size, copied.mode, copied.mtime) == (now.size, now.mode, now.mtime)
        })
    }

    /// Notes that a fold took `name` of the upper directory `dir` (at `rel`), copied to `name`
    /// in `into` (`None`: not copied): `before` is its stamp from before the copy. An entry
    /// written or gone during the copy keeps no stamp (the next fold takes it again) but stays
    /// known as taken.
    pub fn note(
        &mut self,
        rel: &Path,
        before: Option<Stamp>,
        dir: &DirHandle,
        name: &OsStr,
        into: Option<&DirHandle>,
        since: SystemTime,
    ) {
        let now = Stamp::of(dir, name);
        let stamp = before.filter(|before| now == Some(*before));
        let Some(mode) = stamp.or(now).or(before).map(|s| s.mode) else { return };
        let digest = into.and_then(|into| digest_of(into, name).ok().flatten());
        let racy = stamp.is_none_or(|stamp| stamp.racy(since));
        self.set(rel, Some(Seen { stamp, mode, racy, digest, real: None }));
    }

    /// Notes the real entry `name` of `real` (at `rel`) as a fold applied it.
    pub fn applied(&mut self, rel: &Path, real: &DirHandle, name: &OsStr) {
        let Some(mut seen) = self.seen.get(rel).cloned() else { return };
        seen.real = Stamp::of(real, name);
        self.set(rel, Some(seen));
    }

    /// The paths taken beneath `rel`, `rel` first when taken.
    pub fn beneath(&self, rel: &Path) -> Vec<PathBuf> {
        let under = self.seen.range(rel.to_path_buf()..).map(|(path, _)| path);
        under.take_while(|path| path.starts_with(rel)).cloned().collect()
    }

    /// Forgets `rel` and what lies beneath it (the command removed it).
    pub fn forget(&mut self, rel: &Path) {
        let gone: Vec<PathBuf> = self
            .seen
            .range(rel.to_path_buf()..)
            .map(|(path, _)| path)
            .take_while(|path| path.starts_with(rel))
            .cloned()
            .collect();
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

/// Whether the upper entry `name` of `upper` changed at or after the real entry `name` of
/// `real` (by their change times, which nobody sets): a command's write older than the real
/// entry's last change is not put over it. True when the real one is not there.
pub fn newer(upper: &DirHandle, real: &DirHandle, name: &OsStr) -> bool {
    match (Stamp::of(upper, name), Stamp::of(real, name)) {
        (Some(upper), Some(real)) => upper.ctime >= real.ctime,
        (_, None) => true,
        (None, Some(_)) => false,
    }
}

/// The xxh3-128 of a regular file's bytes or a symlink's target; `None` for anything else.
fn digest_of(dir: &DirHandle, name: &OsStr) -> io::Result<Option<u128>> {
    let mut hasher = twox_hash::XxHash3_128::new();
    match dir.stat(name)?.kind {
        Kind::File => {
            let mut file = dir.open_read(name)?;
            let mut buf = vec![0u8; 256 * 1024];
            loop {
                let n = file.read(&mut buf)?;
                if n == 0 {
                    break;
                }
                hasher.write(&buf[..n]);
            }
        }
        Kind::Link => hasher.write(dir.read_link(name)?.as_os_str().as_bytes()),
        Kind::Dir | Kind::Other => return Ok(None),
    }
    Ok(Some(hasher.finish_128()))
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
    fn a_rewrite_is_seen_and_a_touch_is_not() {
        let tmp = tempfile::tempdir().unwrap();
        let (upper, into) = (tmp.path().join("upper"), tmp.path().join("into"));
        std::fs::create_dir_all(&upper).unwrap();
        std::fs::create_dir_all(&into).unwrap();
        std::fs::write(upper.join("a"), "one\n").unwrap();
        std::fs::write(into.join("a"), "one\n").unwrap();
        let (up, snap, a) = (dir(&upper), dir(&into), OsStr::new("a"));
        let mut taken = Taken::default();
        let rel = Path::new("a");
        taken.note(rel, Stamp::of(&up, a), &up, a, Some(&snap), SystemTime::now());
        assert_eq!(taken.again(rel, &up, a, false), Again::Unchanged);
        assert_eq!(taken.again(rel, &up, a, true), Again::Unchanged);
        // Same size, at once: the digest tells it apart even if the clock did not move.
        std::fs::write(upper.join("a"), "two\n").unwrap();
        assert_eq!(taken.again(rel, &up, a, false), Again::Changed);
        std::fs::write(upper.join("a"), "one\n").unwrap();
        assert_eq!(taken.again(rel, &up, a, false), Again::Unchanged, "written back: a touch");
        std::fs::set_permissions(upper.join("a"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert_eq!(taken.again(rel, &up, a, false), Again::Mode);
        assert_eq!(taken.again(Path::new("b"), &up, a, false), Again::New);
    }

    #[test]
    fn a_real_entry_is_ours_until_somebody_writes_it() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("x"), "x\n").unwrap();
        let here = dir(tmp.path());
        let (x, rel) = (OsStr::new("x"), Path::new("x"));
        let mut taken = Taken::default();
        taken.note(rel, Stamp::of(&here, x), &here, x, Some(&here), SystemTime::now());
        assert!(!taken.real_is_ours(rel, &here, x), "not applied yet");
        taken.applied(rel, &here, x);
        assert!(taken.real_is_ours(rel, &here, x));
        std::fs::remove_file(tmp.path().join("x")).unwrap();
        std::fs::write(tmp.path().join("x"), "another\n").unwrap();
        assert!(!taken.real_is_ours(rel, &here, x));
    }

    #[test]
    fn what_was_taken_is_read_back_from_its_file() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("x"), "x\n").unwrap();
        std::fs::create_dir(tmp.path().join("d")).unwrap();
        let here = dir(tmp.path());
        let mut taken = Taken::default();
        let x = OsStr::new("x");
        let an_hour_on = SystemTime::now() + Duration::from_secs(3600);
        taken.note(Path::new("d/x"), Stamp::of(&here, x), &here, x, Some(&here), an_hour_on);
        taken.note(Path::new("gone"), Stamp::of(&here, x), &here, x, Some(&here), an_hour_on);
        taken.note(Path::new("gone/deeper"), Stamp::of(&here, x), &here, x, Some(&here), an_hour_on);
        taken.note(Path::new("gone2"), Stamp::of(&here, x), &here, x, Some(&here), an_hour_on);
        taken.forget(Path::new("gone"));
        assert!(taken.has(Path::new("gone2")), "only what lies beneath is forgotten");
        let file = tmp.path().join("taken");
        taken.save(tmp.path(), &file).unwrap();
        std::fs::OpenOptions::new().append(true).open(&file).unwrap().write_all(b"{\"path\":[1,").unwrap();
        let mut back = Taken::load(&file);
        assert!(back.has(Path::new("d/x")) && !back.has(Path::new("gone")) && !back.has(Path::new("gone/deeper")));
        assert!(back.holds_in(Path::new("d")));
        assert_eq!(back.again(Path::new("d/x"), &here, x, false), Again::Unchanged);
    }
}
