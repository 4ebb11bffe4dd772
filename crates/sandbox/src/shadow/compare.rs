//! What a command changed, from the walk before it and the walk after: each change as undo
//! needs it, removals first, then what was made or rewritten.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::rel::Rel;
use super::{Key, MAX_DEPTH, Seen, Shadow, hash_at, merge_join, under_unreadable};
use crate::handle::{DirHandle, Kind};
use crate::undoable::{Recorded, Undoable};

/// How far a file's time may lag the clock a command's start was read from.
const TIME_MARGIN: std::time::Duration = std::time::Duration::from_millis(50);

impl Shadow {
    /// Adds to `out` what differs between the last walk and `walked`: removals first (a
    /// removed directory as one tree), then what was made or rewritten, directories before
    /// what they hold, so that undo, reverting in the opposite order, takes the new away
    /// before it puts the old back.
    pub(super) fn compare(
        &self,
        before: &BTreeMap<Key, Seen>,
        (unreadable, deep_before): (&[Key], &[Key]),
        handles: &[Option<DirHandle>],
        cap: u64,
        out: &mut Recorded,
    ) {
        let mut made = Vec::new();
        let mut removed_dirs: Vec<&Key> = Vec::new();
        // Less a margin: file times come from a clock that may lag by a tick.
        let started = out.command.as_ref().and_then(|command| command.started.checked_sub(TIME_MARGIN));
        // The files the last walk saw, by identity: a file that appears with a time before the
        // command started and none of these identities came from where nothing is recorded.
        let known = std::cell::OnceCell::new();
        let moved_in = |now: &Seen| {
            started.is_some_and(|started| before_time(now.version.mtime, started))
                && !known
                    .get_or_init(|| {
                        before
                            .values()
                            .map(|seen| (seen.version.dev, seen.version.ino))
                            .collect::<std::collections::HashSet<_>>()
                    })
                    .contains(&(now.version.dev, now.version.ino))
        };
        for (key, old, now) in merge_join(before.iter(), self.seen.iter()) {
            if under_unreadable(unreadable, key) {
                continue;
            }
            let path = || self.roots[key.0].join(key.1.as_path());
            if old.is_some_and(|old| old.ignored) || now.is_some_and(|now| now.ignored) {
                // Build output and dependencies: counted when made or removed, not recorded.
                let changed = match (old, now) {
                    (Some(old), Some(now)) => !old.same_kind(now),
                    _ => true,
                };
                out.ignored += usize::from(changed);
                continue;
            }
            let same = matches!((old, now), (Some(old), Some(now)) if old.same_kind(now));
            // Gone, or another kind now; within a removed directory, its tree says it.
            if let Some(old) = old.filter(|_| !same)
                && !removed_dirs.iter().any(|dir| dir.0 == key.0 && dir.1.holds(&key.1))
            {
                if old.kind == Kind::Dir {
                    removed_dirs.push(key);
                }
                match self.removal(before, deep_before, key, old) {
                    Ok(change) => out.changes.push(change),
                    Err(why) => out.left_out.push(format!("`{}` ({why})", path().display())),
                }
            }
            let (Some(now), Some(root)) = (now, &handles[key.0]) else { continue };
            match old.filter(|_| same) {
                Some(old) => {
                    if now.kind != Kind::File || (old.version == now.version && old.mode == now.mode && !old.racy) {
                        continue;
                    }
                    // Replaced by a file from where nothing is recorded: putting the old bytes back
                    // would lose the only copy of what came (`mv ignored/x here`).
                    if (old.version.dev, old.version.ino) != (now.version.dev, now.version.ino) && moved_in(now) {
                        out.left_out.push(format!(
                            "`{}` (replaced by a file with a time before the command started: moved here from a path not recorded, such as a git-ignored one, or copied with its times; `undo` leaves it, and what it held before is not recorded)",
                            path().display()
                        ));
                        continue;
                    }
                    let Some(sha256) = self.hash_now(now, root, key) else { continue };
                    match old.copy.and_then(|copy| self.read_copy(copy)) {
                        Some(before) if old.mode == now.mode && hex::encode(Sha256::digest(&before)) == sha256 => {}
                        Some(before) => made.push(Undoable::Modified { path: path(), before, mode: old.mode, sha256 }),
                        None => {
                            out.left_out.push(format!("`{}` (replaced a file: {})", path().display(), self.no_copy()))
                        }
                    }
                }
                None => match now.kind {
                    Kind::Dir => made.push(Undoable::MadeDir(path())),
                    // Undo would delete it, and nothing could bring back where it came from.
                    Kind::File | Kind::Link if moved_in(now) => out.left_out.push(format!(
                        "`{}` (appeared with a time before the command started: moved here from a path not recorded, such as a git-ignored one, or copied with its times; `undo` leaves it)",
                        path().display()
                    )),
                    Kind::File => match self.hash_now(now, root, key) {
                        Some(sha256) => made.push(Undoable::Created { path: path(), sha256 }),
                        None => {
                            out.left_out.push(format!("`{}` (made a file: it could not be read)", path().display()))
                        }
                    },
                    Kind::Link => made
                        .push(Undoable::CreatedLink { path: path(), target: now.target.clone().unwrap_or_default() }),
                    Kind::Other => {
                        out.left_out.push(format!("`{}` (made a special file: not recorded)", path().display()))
                    }
                },
            }
        }
        self.leave_out_deep(before, &mut made, out);
        out.changes.extend(made);
        if out.changes.iter().map(Undoable::bytes).sum::<u64>() > cap {
            out.too_large = true;
            out.changes.clear();
        }
    }

    /// A tree made deeper than the walk looks is left out whole (undo could not take away
    /// what it never saw below the cap), from the outermost directory the command made.
    fn leave_out_deep(&self, before: &BTreeMap<Key, Seen>, made: &mut Vec<Undoable>, out: &mut Recorded) {
        for deep in &self.deep {
            let mut top = deep.1.clone();
            while let Some(parent) = top.parent().filter(|parent| !before.contains_key(&(deep.0, parent.clone()))) {
                top = parent;
            }
            if before.contains_key(&(deep.0, top.clone())) {
                // Made by nobody now: what lies below the cap was there before.
                continue;
            }
            let top = self.roots[deep.0].join(top.as_path());
            made.retain(|change| !change.path().starts_with(&top));
            out.left_out.push(format!(
                "`{}` (made a tree more than {MAX_DEPTH} directories deep: not recorded)",
                top.display()
            ));
        }
    }

    /// The sha256 (hex) of what the file at `key` holds now: of its new copy, else (too large
    /// to copy, or changing) of the file itself.
    fn hash_now(&self, now: &Seen, root: &DirHandle, key: &Key) -> Option<String> {
        match now.copy.and_then(|copy| self.read_copy(copy)) {
            Some(bytes) => Some(hex::encode(Sha256::digest(&bytes))),
            None => hash_at(root, key.1.as_path()),
        }
    }

    /// What the last walk (`before`) saw at `key`, which is gone, as undo needs it.
    fn removal(
        &self,
        before: &BTreeMap<Key, Seen>,
        deep_before: &[Key],
        key: &Key,
        old: &Seen,
    ) -> Result<Undoable, String> {
        let path = self.roots[key.0].join(key.1.as_path());
        match old.kind {
            Kind::File => match old.copy.and_then(|copy| self.read_copy(copy)) {
                Some(before) => Ok(Undoable::Removed { path, before, mode: old.mode }),
                None => Err(format!("removed a file: {}", self.no_copy())),
            },
            Kind::Link => Ok(Undoable::RemovedTree {
                path: path.clone(),
                dirs: Vec::new(),
                files: Vec::new(),
                links: vec![(path, old.target.clone().unwrap_or_default())],
            }),
            Kind::Dir if deep_before.iter().any(|deep| deep.0 == key.0 && key.1.holds(&deep.1)) => Err(format!(
                "removed a directory that held a tree more than {MAX_DEPTH} directories deep: not recorded"
            )),
            Kind::Dir => self.removed_tree(before, key).map_err(|why| format!("removed a directory: {why}")),
            Kind::Other => Err("removed a special file: not recorded".into()),
        }
    }

    /// The removed directory at `key` as the last walk saw it, with the copies of its files.
    fn removed_tree(&self, before: &BTreeMap<Key, Seen>, key: &Key) -> Result<Undoable, String> {
        let root = &self.roots[key.0];
        let (mut dirs, mut files, mut links) = (vec![root.join(key.1.as_path())], Vec::new(), Vec::new());
        let (start, end) = key.1.held_range();
        let held = before.range((key.0, start)..(key.0, end));
        // What was git-ignored in it (and so never looked into) is not put back.
        let mut ignored: Vec<&Rel> = Vec::new();
        for ((_, rel), seen) in held {
            if seen.ignored || ignored.iter().any(|dir| dir.holds(rel)) {
                ignored.push(rel);
                continue;
            }
            let path = root.join(rel.as_path());
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
        Ok(Undoable::RemovedTree { path: root.join(key.1.as_path()), dirs, files, links })
    }
}

/// Whether a file time `(seconds, nanoseconds)` lies before `at`.
fn before_time((secs, nanos): (i64, i64), at: std::time::SystemTime) -> bool {
    let Ok(at) = at.duration_since(std::time::UNIX_EPOCH) else { return false };
    secs < 0 || std::time::Duration::new(secs as u64, nanos.clamp(0, 999_999_999) as u32) < at
}
