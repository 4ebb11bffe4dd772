//! Undo for commands where no staging layer stands between them and the roots (macOS, where
//! Seatbelt has none, and Linux with `stage_writes = false`): a private copy of the roots'
//! files, brought up to date before a command starts ([`Shadow::settle`]). At each defined
//! point after (the command's end, each call while it runs), the roots are walked again and
//! every entry whose kind, permission bits, symlink target, inode, size or times differ from
//! the last walk's is a change ([`Shadow::changes`]), its old bytes taken from the copy. Only
//! what changed since the last walk is copied again, so after the first walk a command costs
//! two walks of the tree's metadata and a copy of what it changed.
//!
//! Git dirs are not walked (a repository's history is git's to undo), nor git-ignored paths
//! unless asked (`undo_ignored`), nor the server's own state. Entries are opened beneath each
//! root's handle, never following a symlink.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::handle::{DirHandle, Kind, Version};
use crate::undoable::{Command, Recorded};
use pack::{Pack, Slot};
use rel::Rel;

mod compare;
mod pack;
mod rel;
mod rules;

/// An entry: its root (index) and its path beneath it.
type Key = (usize, Rel);

/// Entries walked at most: a larger tree is not recorded (the walk would cost more than the
/// commands).
const MAX_ENTRIES: usize = 200_000;

/// Directories below a root walked at most (as a fold looks no deeper): what a command
/// nests further down is not recorded.
const MAX_DEPTH: usize = 100;

/// A version no walk sees: an entry whose copy could not be taken compares unequal next time.
const UNKNOWN: Version = Version { dev: u64::MAX, ino: u64::MAX, size: u64::MAX, mtime: (-1, -1), ctime: (-1, -1) };

/// The copy of the roots and what the last walk saw.
#[derive(Debug)]
pub struct Shadow {
    /// The private directory the copies are kept in (in one pack).
    path: PathBuf,
    dir: DirHandle,
    roots: Vec<PathBuf>,
    /// Paths never walked (the server's own state and config).
    skip: Vec<PathBuf>,
    /// Whether git-ignored paths are walked too.
    ignored_too: bool,
    /// The largest file copied, and the most bytes copied in all.
    max_file: u64,
    max_total: u64,
    /// What the last walk saw, by root (its index) and path beneath it.
    seen: BTreeMap<Key, Seen>,
    /// Directories the last walk did not look into for the depth cap (they held more).
    deep: Vec<Key>,
    pack: Pack,
    /// Why the last walk could not be compared (the tree is too large), if so.
    cut: Option<String>,
}

/// One entry as a walk saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    kind: Kind,
    mode: u32,
    version: Version,
    /// A symlink's target.
    target: Option<PathBuf>,
    /// A regular file's copy, when one was taken.
    copy: Option<Slot>,
    /// Whether the file changed so shortly before it was copied that a change after could
    /// keep the same version (the same timestamp tick): its content is compared then.
    racy: bool,
    /// Git-ignored (build output, dependencies): kept as one entry, never looked into, and
    /// never recorded.
    ignored: bool,
}

impl Seen {
    /// Whether `now` is the same entry in kind (and, for a symlink, target).
    fn same_kind(&self, now: &Seen) -> bool {
        self.kind == now.kind && self.target == now.target
    }
}

/// What one walk found: every entry, and the directories that could not be read (what the
/// last walk saw beneath them stands).
struct Walked {
    found: BTreeMap<Key, Seen>,
    unreadable: Vec<Key>,
    /// Directories at the depth cap that hold something: not looked into.
    deep: Vec<Key>,
}

impl Shadow {
    /// A shadow of `roots` (canonical) kept in the new private directory `path`; `skip` lists
    /// paths never walked. Nothing is copied until [`Shadow::settle`].
    /// `caps`: the largest file copied and the most bytes copied in all (the undo caps).
    pub fn new(
        path: PathBuf,
        roots: Vec<PathBuf>,
        skip: Vec<PathBuf>,
        ignored_too: bool,
        (max_file, max_total): (u64, u64),
    ) -> io::Result<Self> {
        crate::fs::create_private_dir(&path)?;
        let dir = DirHandle::open(&path)?;
        let pack = Pack::create(&dir)?;
        Ok(Self {
            path,
            dir,
            roots,
            skip,
            ignored_too,
            max_file,
            max_total,
            seen: BTreeMap::new(),
            deep: Vec::new(),
            pack,
            cut: None,
        })
    }

    /// The roots it copies.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Takes what the roots hold now as the state later changes are measured from (what
    /// changed since the last walk is not a command's doing: the server's own edits, the
    /// user's).
    pub fn settle(&mut self) {
        self.step(None);
    }

    /// After the server itself wrote `paths` (absolute) while a command runs: what is at
    /// those paths (and the directories above them) now is taken as seen, so it is not
    /// recorded as the command's; everything else keeps what the last walk saw, so what the
    /// command wrote meanwhile is still recorded as its own.
    pub fn absorb(&mut self, paths: &[PathBuf]) {
        let within: Vec<Key> = paths
            .iter()
            .filter_map(|path| {
                self.roots.iter().enumerate().find_map(|(index, root)| {
                    let rel = path.strip_prefix(root).ok()?;
                    Some((index, rel.components().fold(Rel::default(), |rel, part| rel.join(part.as_os_str()))))
                })
            })
            .collect();
        if within.is_empty() || self.cut.is_some() {
            return;
        }
        let handles: Vec<Option<DirHandle>> = self.roots.iter().map(|root| DirHandle::open(root).ok()).collect();
        if let Ok(walked) = self.walk(&handles, true) {
            let related =
                |key: &Key| within.iter().any(|at| at.0 == key.0 && (at.1.holds(&key.1) || key.1.holds(&at.1)));
            self.take(walked, &handles, Some(&related));
            self.compact();
        }
    }

    /// What changed since the last walk, as `command`'s record (old content at most `cap`
    /// bytes in all); the copy then holds what is there now.
    pub fn changes(&mut self, command: Command, cap: u64) -> Recorded {
        self.step(Some((command, cap)))
    }

    fn step(&mut self, record: Option<(Command, u64)>) -> Recorded {
        let mut out = Recorded::default();
        let handles: Vec<Option<DirHandle>> = self.roots.iter().map(|root| DirHandle::open(root).ok()).collect();
        // A command's walk keeps what was git-ignored before it ignored (and what was not, not):
        // a command that edits a `.gitignore` changes what the next command's walk skips,
        // never what its own record holds.
        let walked = match self.walk(&handles, record.is_some()) {
            Ok(walked) => walked,
            Err(why) => {
                self.forget();
                if record.is_some() {
                    out.left_out.push(why.clone());
                }
                self.cut = Some(why);
                return out;
            }
        };
        let was_cut = self.cut.take();
        let unreadable = walked.unreadable.clone();
        let deep_before = std::mem::replace(&mut self.deep, walked.deep.clone());
        // Copied first, compared after: what a record says a file holds now is the copy the
        // next record starts from, byte for byte, however fast the command writes.
        let old = self.take(walked, &handles, None);
        if let Some((command, cap)) = record {
            out.command = Some(command);
            if let Some(why) = was_cut {
                // Nothing to compare with: the last walk was cut short.
                out.left_out.push(why);
            } else {
                self.compare(&old, (&unreadable, &deep_before), &handles, cap, &mut out);
            }
        }
        self.compact();
        out
    }

    /// Walks every root; `Err` says why the walk was given up. With `sticky`, an entry the
    /// last walk saw is ignored when it was ignored then, whatever the rules say now.
    fn walk(&self, handles: &[Option<DirHandle>], sticky: bool) -> Result<Walked, String> {
        let mut walked = Walked { found: BTreeMap::new(), unreadable: Vec::new(), deep: Vec::new() };
        for (index, (root, handle)) in self.roots.iter().zip(handles).enumerate() {
            let Some(handle) = handle else {
                walked.unreadable.push((index, Rel::default()));
                continue;
            };
            let mut pending = vec![(Rel::default(), None)];
            while let Some((rel, outer)) = pending.pop() {
                let Ok(dir) = handle.open_beneath(rel.as_path()) else {
                    walked.unreadable.push((index, rel));
                    continue;
                };
                let Ok(names) = dir.entries() else {
                    walked.unreadable.push((index, rel));
                    continue;
                };
                let rules = if self.ignored_too { None } else { rules::enter(outer, root, &rel, &dir) };
                for name in names {
                    if name == ".git" {
                        continue;
                    }
                    let path = rel.join(&name);
                    let Ok((stat, version)) = dir.stat_version(&name) else { continue };
                    let is_dir = stat.kind == Kind::Dir;
                    if is_dir && self.skip.iter().any(|skip| *skip == root.join(path.as_path())) {
                        continue;
                    }
                    let key = (index, path);
                    let before = if sticky { self.seen.get(&key).map(|seen| seen.ignored) } else { None };
                    let ignored = before.unwrap_or_else(|| rules::ignored(rules.as_deref(), &key.1, is_dir));
                    let target = (stat.kind == Kind::Link).then(|| dir.read_link(&name).ok()).flatten();
                    let seen =
                        Seen { kind: stat.kind, mode: stat.mode, version, target, copy: None, racy: false, ignored };
                    if is_dir && !ignored {
                        if key.1.depth() < MAX_DEPTH {
                            pending.push((key.1.clone(), rules.clone()));
                        } else if dir
                            .open_dir(&name)
                            .and_then(|deep| deep.entries())
                            .is_ok_and(|names| !names.is_empty())
                        {
                            walked.deep.push(key.clone());
                        }
                    }
                    walked.found.insert(key, seen);
                    if walked.found.len() > MAX_ENTRIES {
                        return Err(format!(
                            "the roots hold more than {MAX_ENTRIES} entries outside git-ignored paths: what commands write is not recorded for undo"
                        ));
                    }
                }
            }
        }
        Ok(walked)
    }

    /// Makes `walked` the state seen: files new or changed since are copied, copies of what
    /// is gone are removed. Beneath a directory that could not be read, the last walk stands;
    /// with `only`, it stands for every entry `only` does not name. Returns what was seen
    /// before; its copies stay readable until [`Shadow::compact`].
    fn take(
        &mut self,
        walked: Walked,
        handles: &[Option<DirHandle>],
        only: Option<&dyn Fn(&Key) -> bool>,
    ) -> BTreeMap<Key, Seen> {
        let before = std::mem::take(&mut self.seen);
        let mut next: Vec<(Key, Seen)> = Vec::with_capacity(walked.found.len());
        let (mut dropped, mut to_copy) = (Vec::new(), Vec::new());
        for (key, old, now) in merge_join(before.iter(), walked.found.iter()) {
            let key = key.clone();
            if under_unreadable(&walked.unreadable, &key) || only.is_some_and(|only| !only(&key)) {
                next.extend(old.map(|old| (key, old.clone())));
                continue;
            }
            let dropped_copy = old.as_ref().and_then(|old| old.copy);
            match (old, now) {
                (Some(old), Some(now))
                    if old.copy.is_some() && now.kind == Kind::File && now.version == old.version && !old.racy =>
                {
                    next.push((key, Seen { copy: old.copy, ..now.clone() }));
                }
                (_, now) => {
                    dropped.extend(dropped_copy);
                    if let Some(now) = now {
                        if now.kind == Kind::File && !now.ignored {
                            to_copy.push(next.len());
                        }
                        next.push((key, now.clone()));
                    }
                }
            }
        }
        for copy in dropped {
            self.remove_copy(copy);
        }
        for at in to_copy {
            let (key, now) = &mut next[at];
            let Some(root) = &handles[key.0] else { continue };
            match self.copy_in(root, key.1.as_path()) {
                Copied::Kept(copy, version) => {
                    let racy = !version.settled_before(std::time::SystemTime::now(), version.racy_window());
                    (now.copy, now.version, now.racy) = (Some(copy), version, racy);
                }
                // Its later changes are said to be left out.
                Copied::TooLarge => {}
                Copied::Changing => now.version = UNKNOWN,
            }
        }
        // In order already: the map is built from it without sorting.
        self.seen = next.into_iter().collect();
        before
    }

    /// Writes the pack anew when enough of it was dropped.
    fn compact(&mut self) {
        if self.pack.wants_compacting() {
            let slots = self.seen.values_mut().filter_map(|seen| seen.copy.as_mut());
            if let Err(err) = self.pack.compact(&self.dir, slots) {
                // The copies cannot be trusted now: the next walk starts afresh, and the next
                // record says why it has nothing to compare with.
                self.forget();
                self.cut = Some(format!(
                    "the copy of the roots could not be rewritten ({err}): what commands wrote since is not recorded for undo"
                ));
            }
        }
    }

    /// Copies the regular file `rel` beneath `root` into the pack.
    fn copy_in(&mut self, root: &DirHandle, rel: &Path) -> Copied {
        let opened = root
            .open_beneath(rel.parent().unwrap_or(Path::new("")))
            .and_then(|parent| parent.open_read(rel.file_name().unwrap_or_default()));
        let Ok(mut file) = opened else { return Copied::Changing };
        let Ok(meta) = file.metadata() else { return Copied::Changing };
        if !meta.is_file() {
            return Copied::Changing;
        }
        if meta.len() > self.max_file || self.pack.live() + meta.len() > self.max_total {
            return Copied::TooLarge;
        }
        let version = Version::of(&meta);
        let Ok(Some(slot)) = self.pack.append(&mut file, meta.len()) else { return Copied::Changing };
        if file.metadata().ok().map(|meta| Version::of(&meta)) != Some(version) {
            self.pack.drop_slot(slot);
            return Copied::Changing;
        }
        Copied::Kept(slot, version)
    }

    /// Why a file has no copy, in words.
    fn no_copy(&self) -> String {
        format!(
            "no copy of it was kept: it was changing while it was copied, or larger than the undo caps allow (`max_undo_bytes` {} a file, `max_undo_total_bytes` {} for every copy)",
            self.max_file, self.max_total
        )
    }

    fn read_copy(&self, copy: Slot) -> Option<Vec<u8>> {
        self.pack.read(copy)
    }

    fn remove_copy(&mut self, copy: Slot) {
        self.pack.drop_slot(copy);
    }

    /// Drops every copy and what the walks saw.
    fn forget(&mut self) {
        let copies: Vec<Slot> = self.seen.values().filter_map(|seen| seen.copy).collect();
        for copy in copies {
            self.remove_copy(copy);
        }
        self.seen.clear();
    }
}

impl Drop for Shadow {
    fn drop(&mut self) {
        crate::fs::remove_state_dir(&self.path);
    }
}

/// What [`Shadow::copy_in`] did.
enum Copied {
    /// Where the copy is and the version it holds.
    Kept(Slot, Version),
    /// Not copied: larger than the caps allow.
    TooLarge,
    /// Not copied: it changed (or went) while it was copied, or is no regular file now.
    Changing,
}

/// The keys of two ordered sequences in order, with what each holds for it.
fn merge_join<K: Ord, V>(
    a: impl Iterator<Item = (K, V)>,
    b: impl Iterator<Item = (K, V)>,
) -> impl Iterator<Item = (K, Option<V>, Option<V>)> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || {
        let order = match (a.peek(), b.peek()) {
            (None, None) => return None,
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some((ka, _)), Some((kb, _))) => ka.cmp(kb),
        };
        match order {
            std::cmp::Ordering::Less => a.next().map(|(key, value)| (key, Some(value), None)),
            std::cmp::Ordering::Greater => b.next().map(|(key, value)| (key, None, Some(value))),
            std::cmp::Ordering::Equal => {
                let ((key, old), (_, now)) = (a.next()?, b.next()?);
                Some((key, Some(old), Some(now)))
            }
        }
    })
}

/// Whether `key` lies beneath (or is) a directory the walk could not read.
fn under_unreadable(unreadable: &[Key], key: &Key) -> bool {
    unreadable.iter().any(|(index, dir)| *index == key.0 && dir.holds(&key.1))
}

/// The sha256 (hex) of the regular file at `rel` beneath `root`, read as a stream.
pub(crate) fn hash_at(root: &DirHandle, rel: &Path) -> Option<String> {
    let parent = root.open_beneath(rel.parent().unwrap_or(Path::new(""))).ok()?;
    let mut file = parent.open_read(rel.file_name()?).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => hasher.update(&buf[..n]),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return None,
        }
    }
    Some(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests;
