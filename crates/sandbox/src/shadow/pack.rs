//! Where a shadow keeps its copies: one file (`pack`) they are appended to and read back from
//! by offset, so that copying a tree of small files costs a read and a write each, not a new
//! file each (28,000 files: one new inode against 28,000). A dropped copy is counted; when
//! more than half the pack is dropped (and that is over 16 MiB), the live copies are written
//! to a new pack that replaces it.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

use crate::handle::{DirHandle, Replace};

/// The pack's name in the shadow's directory, and its replacement's while it is written.
const PACK: &str = "pack";
const PACK_NEW: &str = "pack.new";
/// Dropped bytes the pack carries before it is written anew.
const COMPACT_AFTER: u64 = 16 << 20;
/// Bytes read and written at a time.
const CHUNK: usize = 1 << 20;

/// A copy's place in the pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    at: u64,
    len: u64,
}

/// The pack of a shadow.
#[derive(Debug)]
pub(super) struct Pack {
    write: File,
    read: File,
    /// Where the next copy goes.
    end: u64,
    dropped: u64,
    buf: Vec<u8>,
}

impl Pack {
    /// A new, empty pack in `dir`.
    pub(super) fn create(dir: &DirHandle) -> io::Result<Self> {
        Self::create_named(dir, OsStr::new(PACK))
    }

    fn create_named(dir: &DirHandle, name: &OsStr) -> io::Result<Self> {
        let write = dir.create_new(name, Some(0o600))?;
        let read = dir.open_read(name)?;
        Ok(Self { write, read, end: 0, dropped: 0, buf: Vec::new() })
    }

    /// The bytes its live copies hold.
    pub(super) fn live(&self) -> u64 {
        self.end - self.dropped
    }

    /// Appends what `from` holds, which must be `len` bytes exactly; `None` when it was not
    /// (the file changed while it was read).
    pub(super) fn append(&mut self, from: &mut File, len: u64) -> io::Result<Option<Slot>> {
        self.buf.resize(CHUNK, 0);
        let at = self.end;
        let mut copied = 0u64;
        loop {
            let read = match from.read(&mut self.buf) {
                Ok(read) => read,
                Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
                Err(err) => return Err(err),
            };
            if read == 0 {
                break;
            }
            if copied + read as u64 > len {
                return Ok(None);
            }
            self.write.write_all_at(&self.buf[..read], at + copied)?;
            copied += read as u64;
        }
        if copied != len {
            return Ok(None);
        }
        self.end += len;
        Ok(Some(Slot { at, len }))
    }

    /// The bytes of the copy in `slot`.
    pub(super) fn read(&self, slot: Slot) -> Option<Vec<u8>> {
        let mut bytes = vec![0; usize::try_from(slot.len).ok()?];
        crate::handle::read_exact_at(&self.read, &mut bytes, slot.at).ok()?;
        Some(bytes)
    }

    /// Counts the copy in `slot` as dropped.
    pub(super) fn drop_slot(&mut self, slot: Slot) {
        self.dropped += slot.len;
    }

    /// Whether enough of it is dropped to write it anew.
    pub(super) fn wants_compacting(&self) -> bool {
        self.dropped > COMPACT_AFTER && self.dropped > self.live()
    }

    /// Writes the copies in `slots` (every live one) to a new pack in `dir` that replaces
    /// this one, and moves each slot to its new place.
    pub(super) fn compact<'a>(&mut self, dir: &DirHandle, slots: impl Iterator<Item = &'a mut Slot>) -> io::Result<()> {
        let _ = dir.remove_file(OsStr::new(PACK_NEW));
        let mut new = Self::create_named(dir, OsStr::new(PACK_NEW))?;
        let mut moved = Vec::new();
        for slot in slots {
            let bytes = self.read(*slot).ok_or_else(|| io::Error::other("a copy could not be read back"))?;
            new.write.write_all_at(&bytes, new.end)?;
            let to = Slot { at: new.end, len: slot.len };
            new.end += slot.len;
            moved.push((slot, to));
        }
        dir.rename(OsStr::new(PACK_NEW), dir, OsStr::new(PACK), Replace::Allowed)?;
        for (slot, to) in moved {
            *slot = to;
        }
        new.buf = std::mem::take(&mut self.buf);
        *self = new;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn copies_are_read_back_and_survive_a_compaction() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = DirHandle::open(tmp.path()).unwrap().open_beneath(std::path::Path::new("")).unwrap();
        let mut pack = Pack::create(&dir).unwrap();
        let mut slots = Vec::new();
        for (n, size) in [(0u8, 10usize), (1, 3 << 20), (2, 0), (3, 7)] {
            let path = tmp.path().join(format!("f{n}"));
            std::fs::write(&path, vec![n; size]).unwrap();
            let mut file = File::open(&path).unwrap();
            slots.push(pack.append(&mut file, size as u64).unwrap().unwrap());
        }
        // A file that is not the length it was said to be is refused.
        let mut file = File::open(tmp.path().join("f0")).unwrap();
        assert_eq!(pack.append(&mut file, 9).unwrap(), None);
        assert_eq!(pack.read(slots[1]).unwrap(), vec![1; 3 << 20]);
        pack.drop_slot(slots[1]);
        assert_eq!(pack.live(), 17);
        let mut kept = [slots[0], slots[2], slots[3]];
        pack.compact(&dir, kept.iter_mut()).unwrap();
        assert_eq!(pack.live(), 17);
        assert_eq!(std::fs::metadata(tmp.path().join(PACK)).unwrap().len(), 17);
        assert!(!tmp.path().join(PACK_NEW).exists());
        assert_eq!(pack.read(kept[0]).unwrap(), vec![0; 10]);
        assert_eq!(pack.read(kept[1]).unwrap(), Vec::<u8>::new());
        assert_eq!(pack.read(kept[2]).unwrap(), vec![3; 7]);
    }
}
