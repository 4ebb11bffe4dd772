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
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::handle::{DirHandle, Kind, Version};
use crate::protected::view::read_at;
use crate::undoable::{Command, Ignores, Recorded, Undoable};

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
    /// The private directory the copies are kept in, one file per copy, numbered.
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
    seen: BTreeMap<(usize, PathBuf), Seen>,
    /// The bytes the copies hold.
    copied: u64,
    next: u64,
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
    /// A regular file's copy (its number), when one was taken.
    copy: Option<u64>,
    /// Whether the file changed so shortly before it was copied that a change after could
    /// keep the same version (the same timestamp tick): its content is compared then.
    racy: bool,
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
    found: BTreeMap<(usize, PathBuf), Seen>,
    unreadable: Vec<(usize, PathBuf)>,
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
        Ok(Self {
            path,
            dir,
            roots,
            skip,
            ignored_too,
            max_file,
            max_total,
            seen: BTreeMap::new(),
            copied: 0,
            next: 0,
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

    /// What changed since the last walk, as `command`'s record (old content at most `cap`
    /// bytes in all); the copy then holds what is there now.
    pub fn changes(&mut self, command: Command, cap: u64) -> Recorded {
        self.step(Some((command, cap)))
    }

    fn step(&mut self, record: Option<(Command, u64)>) -> Recorded {
        let mut out = Recorded::default();
        let handles: Vec<Option<DirHandle>> = self.roots.iter().map(|root| DirHandle::open(root).ok()).collect();
        let walked = match self.walk(&handles) {
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
        if let Some((command, cap)) = record {
            out.command = Some(command);
            if let Some(why) = was_cut {
                // Nothing to compare with: the last walk was cut short.
                out.left_out.push(why);
            } else {
                self.compare(&walked, &handles, cap, &mut out);
            }
        }
        self.take(walked, &handles);
        out
    }

    /// Walks every root; `Err` says why the walk was given up.
    fn walk(&self, handles: &[Option<DirHandle>]) -> Result<Walked, String> {
        let mut walked = Walked { found: BTreeMap::new(), unreadable: Vec::new() };
        let mut ignores = Ignores::default();
        for (index, (root, handle)) in self.roots.iter().zip(handles).enumerate() {
            let Some(handle) = handle else {
                walked.unreadable.push((index, PathBuf::new()));
                continue;
            };
            let mut pending = vec![PathBuf::new()];
            while let Some(rel) = pending.pop() {
                let Ok(dir) = handle.open_beneath(&rel) else {
                    walked.unreadable.push((index, rel));
                    continue;
                };
                let Ok(names) = dir.entries() else {
                    walked.unreadable.push((index, rel));
                    continue;
                };
                for name in names {
                    if name == ".git" {
                        continue;
                    }
                    let path = rel.join(&name);
                    let Ok((stat, version)) = dir.stat_version(&name) else { continue };
                    let is_dir = stat.kind == Kind::Dir;
                    if is_dir && self.skip.iter().any(|skip| *skip == root.join(&path)) {
                        continue;
                    }
                    if !self.ignored_too && ignores.ignored(root, &path, is_dir) {
                        continue;
                    }
                    let target = (stat.kind == Kind::Link).then(|| dir.read_link(&name).ok()).flatten();
                    let seen = Seen { kind: stat.kind, mode: stat.mode, version, target, copy: None, racy: false };
                    walked.found.insert((index, path.clone()), seen);
                    if walked.found.len() > MAX_ENTRIES {
                        return Err(format!(
                            "the roots hold more than {MAX_ENTRIES} entries outside git-ignored paths: what commands write is not recorded for undo"
                        ));
                    }
                    if is_dir && path.components().count() < MAX_DEPTH {
                        pending.push(path);
                    }
                }
            }
        }
        Ok(walked)
    }

    /// Adds to `out` what differs between the last walk and `walked`: removals first (a
    /// removed directory as one tree), then what was made or rewritten, directories before
    /// what they hold, so that undo, reverting in the opposite order, takes the new away
    /// before it puts the old back.
    fn compare(&self, walked: &Walked, handles: &[Option<DirHandle>], cap: u64, out: &mut Recorded) {
        let mut bytes = 0u64;
        let mut keep = |out: &mut Recorded, change: Undoable| {
            bytes += change.bytes();
            out.changes.push(change);
        };
        let gone = |key: &(usize, PathBuf), old: &Seen| {
            !under_unreadable(&walked.unreadable, key) && walked.found.get(key).is_none_or(|now| !old.same_kind(now))
        };
        for (key, old) in &self.seen {
            if !gone(key, old) {
                continue;
            }
            // Within a removed directory: its tree says it.
            let parent = key.1.parent().filter(|parent| !parent.as_os_str().is_empty());
            if let Some(parent) = parent
                && let Some(above) = self.seen.get(&(key.0, parent.to_path_buf()))
                && gone(&(key.0, parent.to_path_buf()), above)
                && above.kind == Kind::Dir
            {
                continue;
            }
            let path = self.roots[key.0].join(&key.1);
            match old.kind {
                Kind::File => match old.copy.and_then(|copy| self.read_copy(copy)) {
                    Some(before) => keep(out, Undoable::Removed { path, before, mode: old.mode }),
                    None => out.left_out.push(format!("`{}` (removed a file: {})", path.display(), self.no_copy())),
                },
                Kind::Link => keep(
                    out,
                    Undoable::RemovedTree {
                        path: path.clone(),
                        dirs: Vec::new(),
                        files: Vec::new(),
                        links: vec![(path, old.target.clone().unwrap_or_default())],
                    },
                ),
                Kind::Dir => match self.removed_tree(key) {
                    Ok(tree) => keep(out, tree),
                    Err(why) => out.left_out.push(format!("`{}` (removed a directory: {why})", path.display())),
                },
                Kind::Other => {
                    out.left_out.push(format!("`{}` (removed a special file: not recorded)", path.display()))
                }
            }
        }
        for (key, now) in &walked.found {
            let path = self.roots[key.0].join(&key.1);
            let Some(root) = &handles[key.0] else { continue };
            match self.seen.get(key) {
                Some(old) if old.same_kind(now) => {
                    if now.kind != Kind::File || (old.version == now.version && old.mode == now.mode && !old.racy) {
                        continue;
                    }
                    let Some(sha256) = hash_at(root, &key.1) else { continue };
                    let before = old.copy.and_then(|copy| self.read_copy(copy));
                    match before {
                        Some(before) if old.mode == now.mode && hex::encode(Sha256::digest(&before)) == sha256 => {}
                        Some(before) => keep(out, Undoable::Modified { path, before, mode: old.mode, sha256 }),
                        None => {
                            out.left_out.push(format!("`{}` (replaced a file: {})", path.display(), self.no_copy()))
                        }
                    }
                }
                _ => match now.kind {
                    Kind::Dir => keep(out, Undoable::MadeDir(path)),
                    Kind::File => match hash_at(root, &key.1) {
                        Some(sha256) => keep(out, Undoable::Created { path, sha256 }),
                        None => out.left_out.push(format!("`{}` (made a file: it could not be read)", path.display())),
                    },
                    Kind::Link => {
                        keep(out, Undoable::CreatedLink { path, target: now.target.clone().unwrap_or_default() })
                    }
                    Kind::Other => {
                        out.left_out.push(format!("`{}` (made a special file: not recorded)", path.display()))
                    }
                },
            }
        }
        if bytes > cap {
            out.too_large = true;
            out.changes.clear();
        }
    }

    /// The removed directory at `key` as the last walk saw it, with the copies of its files.
    fn removed_tree(&self, key: &(usize, PathBuf)) -> Result<Undoable, String> {
        let root = &self.roots[key.0];
        let (mut dirs, mut files, mut links) = (Vec::new(), Vec::new(), Vec::new());
        let inside =
            self.seen.range(key.clone()..).take_while(|((index, rel), _)| *index == key.0 && rel.starts_with(&key.1));
        for ((_, rel), seen) in inside {
            let path = root.join(rel);
            match seen.kind {
                Kind::Dir => dirs.push(path),
                Kind::File => {
                    let before = seen.copy.and_then(|copy| self.read_copy(copy));
                    let before = before.ok_or_else(|| format!("`{}`: {}", path.display(), self.no_copy()))?;
                    files.push((path, before, seen.mode));
                }
                Kind::Link => links.push((path, seen.target.clone().unwrap_or_default())),
                Kind::Other => return Err(format!("`{}` is a special file", path.display())),
            }
            if dirs.len() + files.len() + links.len() > crate::undoable::MAX_TREE_ENTRIES {
                return Err("it held too many entries".into());
            }
        }
        dirs.sort_by_key(|dir| dir.components().count());
        Ok(Undoable::RemovedTree { path: root.join(&key.1), dirs, files, links })
    }

    /// Makes `walked` the state seen: files new or changed since are copied, copies of what
    /// is gone are removed. Beneath a directory that could not be read, the last walk stands.
    fn take(&mut self, walked: Walked, handles: &[Option<DirHandle>]) {
        let old = std::mem::take(&mut self.seen);
        let mut next: BTreeMap<(usize, PathBuf), Seen> = BTreeMap::new();
        let mut dropped = Vec::new();
        for (key, seen) in old {
            if under_unreadable(&walked.unreadable, &key) {
                next.insert(key, seen);
            } else if let Some(copy) = seen.copy {
                match walked.found.get(&key) {
                    Some(now) if now.kind == Kind::File && now.version == seen.version && !seen.racy => {
                        next.insert(key, Seen { copy: Some(copy), ..now.clone() });
                    }
                    _ => dropped.push(copy),
                }
            }
        }
        for copy in dropped {
            self.remove_copy(copy);
        }
        for (key, now) in walked.found {
            if next.contains_key(&key) {
                continue;
            }
            let mut now = now;
            if now.kind == Kind::File
                && let Some(root) = &handles[key.0]
            {
                match self.copy_in(root, &key.1) {
                    Copied::Kept(copy, version) => {
                        let racy = !version.settled_before(std::time::SystemTime::now(), version.racy_window());
                        (now.copy, now.version, now.racy) = (Some(copy), version, racy);
                    }
                    // Its later changes are said to be left out.
                    Copied::TooLarge => {}
                    Copied::Changing => now.version = UNKNOWN,
                }
            }
            next.insert(key, now);
        }
        self.seen = next;
    }

    /// Copies the regular file `rel` beneath `root` into a new numbered copy.
    fn copy_in(&mut self, root: &DirHandle, rel: &Path) -> Copied {
        let opened = root
            .open_beneath(rel.parent().unwrap_or(Path::new("")))
            .and_then(|parent| parent.open_read(rel.file_name().unwrap_or_default()));
        let Ok(mut file) = opened else { return Copied::Changing };
        let Ok(meta) = file.metadata() else { return Copied::Changing };
        if !meta.is_file() {
            return Copied::Changing;
        }
        if meta.len() > self.max_file || self.copied + meta.len() > self.max_total {
            return Copied::TooLarge;
        }
        let version = Version::of(&meta);
        let number = self.next;
        self.next += 1;
        let name = OsString::from(number.to_string());
        let Ok(mut copy) = self.dir.create_new(&name, Some(0o600)) else { return Copied::Changing };
        let copied = io::copy(&mut (&mut file).take(self.max_file + 1), &mut copy).ok();
        let after = file.metadata().ok().map(|meta| Version::of(&meta));
        if copied != Some(meta.len()) || after != Some(version) {
            let _ = self.dir.remove_file(&name);
            return Copied::Changing;
        }
        self.copied += meta.len();
        Copied::Kept(number, version)
    }

    /// Why a file has no copy, in words.
    fn no_copy(&self) -> String {
        format!(
            "no copy of it was kept: it was changing while it was copied, or larger than the undo caps allow (`max_undo_bytes` {} a file, `max_undo_total_bytes` {} for every copy)",
            self.max_file, self.max_total
        )
    }

    fn read_copy(&self, copy: u64) -> Option<Vec<u8>> {
        read_at(&self.dir, Path::new(&copy.to_string()), self.max_file)
    }

    fn remove_copy(&mut self, copy: u64) {
        let name = OsString::from(copy.to_string());
        if let Ok(stat) = self.dir.stat(&name) {
            self.copied = self.copied.saturating_sub(stat.len);
        }
        let _ = self.dir.remove_file(&name);
    }

    /// Drops every copy and what the walks saw.
    fn forget(&mut self) {
        let copies: Vec<u64> = self.seen.values().filter_map(|seen| seen.copy).collect();
        for copy in copies {
            self.remove_copy(copy);
        }
        self.seen.clear();
    }
}

/// Removes the shadows under `parent` (`<pid>-<n>`) whose server is gone (killed before it
/// could remove its own).
pub fn remove_stale(parent: &Path) {
    let listed = DirHandle::open(parent).and_then(|dir| dir.open_beneath(Path::new(""))).and_then(|dir| dir.entries());
    let Ok(names) = listed else { return };
    for name in names {
        let pid = name.to_str().and_then(|name| name.split_once('-')).and_then(|(pid, _)| pid.parse::<u32>().ok());
        if pid.is_some_and(|pid| !crate::fs::process_alive(pid)) {
            crate::fs::remove_state_dir(&parent.join(&name));
        }
    }
}

impl Drop for Shadow {
    fn drop(&mut self) {
        crate::fs::remove_state_dir(&self.path);
    }
}

/// What [`Shadow::copy_in`] did.
enum Copied {
    /// The copy's number and the version it holds.
    Kept(u64, Version),
    /// Not copied: larger than the caps allow.
    TooLarge,
    /// Not copied: it changed (or went) while it was copied, or is no regular file now.
    Changing,
}

/// Whether `key` lies beneath (or is) a directory the walk could not read.
fn under_unreadable(unreadable: &[(usize, PathBuf)], key: &(usize, PathBuf)) -> bool {
    unreadable.iter().any(|(index, dir)| *index == key.0 && key.1.starts_with(dir))
}

/// The sha256 (hex) of the regular file at `rel` beneath `root`, read as a stream.
fn hash_at(root: &DirHandle, rel: &Path) -> Option<String> {
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
#[path = "shadow_tests.rs"]
mod tests;
