//! What a fold applied, in the form `undo` needs: for each change under the roots, what was
//! there before (taken from the stage's `old/` area before the stage is removed) and what is
//! there now (its hash, to refuse an undo when the path changed again). Build output and
//! dependencies (git-ignored paths) and git's own files (a git dir's objects and refs) are
//! left out and counted; so is everything when the old content is larger than the cap.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::fold::{Folded, What};
use crate::handle::{DirHandle, Kind};
use crate::protected::view::read_at;
pub use crate::undoable::{Recorded, Undoable};

use crate::undoable::MAX_TREE_ENTRIES;

impl super::Stage {
    /// The record of `folded` (this stage's last fold): old content at most `cap` bytes in all;
    /// git-ignored paths too when `ignored_too`.
    pub fn record(&self, folded: &Folded, cap: u64, ignored_too: bool) -> Recorded {
        let mut out = Recorded { command: Some(self.command.clone()), ..Recorded::default() };
        let Ok(old) = DirHandle::open(&self.dir.join("old")) else {
            out.left_out.push("the stage's old area could not be opened".into());
            return out;
        };
        let mut ignores = Ignores::default();
        let mut bytes = 0u64;
        for applied in &folded.applied {
            let Some((root, rel)) = self.layers.iter().find_map(|layer| {
                applied.path.strip_prefix(&layer.root).ok().map(|rel| (layer.root.as_path(), rel.to_path_buf()))
            }) else {
                continue;
            };
            if rel.components().any(|c| c.as_os_str() == ".git") {
                out.in_git_dirs += 1;
                continue;
            }
            if !ignored_too && ignores.ignored(root, &rel, applied.kind == Kind::Dir) {
                out.ignored += 1;
                continue;
            }
            let Ok(real) = DirHandle::open(root) else { continue };
            let slot = applied.old.as_ref().and_then(|old| old.file_name()).map(PathBuf::from);
            let recorded = match (applied.what, applied.kind) {
                (What::Created, Kind::Dir) => created_tree(&real, root, &rel),
                (What::Created, Kind::File) => created_file(&real, root, &rel).map(|change| vec![change]),
                (What::Created, Kind::Link) => created_link(&real, root, &rel).map(|change| vec![change]),
                (What::Modified, Kind::File) => slot.as_ref().and_then(|slot| {
                    let (before, mode) = (read_at(&old, slot, cap)?, mode_at(&old, slot)?);
                    let sha256 = sha256_at(&real, &rel)?;
                    Some(vec![Undoable::Modified { path: applied.path.clone(), before, mode, sha256 }])
                }),
                (What::Deleted, Kind::File) => slot.as_ref().and_then(|slot| {
                    let (before, mode) = (read_at(&old, slot, cap)?, mode_at(&old, slot)?);
                    Some(vec![Undoable::Removed { path: applied.path.clone(), before, mode }])
                }),
                (What::Deleted, Kind::Dir | Kind::Link) => {
                    slot.as_ref().and_then(|slot| removed_tree(&old, slot, &applied.path, cap)).map(|tree| vec![tree])
                }
                _ => None,
            };
            match recorded {
                Some(changes) => {
                    bytes += changes.iter().map(Undoable::bytes).sum::<u64>();
                    if bytes > cap {
                        out.too_large = true;
                        out.changes.clear();
                        return out;
                    }
                    out.changes.extend(changes);
                }
                None => out.left_out.push(format!(
                    "`{}` ({} {}: not recorded)",
                    applied.path.display(),
                    match applied.what {
                        What::Created => "made",
                        What::Modified => "replaced",
                        What::Deleted => "removed",
                    },
                    kind_word(applied.kind)
                )),
            }
        }
        out
    }
}

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::File => "a file",
        Kind::Dir => "a directory",
        Kind::Link => "a symlink",
        Kind::Other => "a special file",
    }
}

/// A file made: its hash now.
fn created_file(real: &DirHandle, root: &Path, rel: &Path) -> Option<Undoable> {
    Some(Undoable::Created { path: root.join(rel), sha256: sha256_at(real, rel)? })
}

/// A symlink made: where it points.
fn created_link(real: &DirHandle, root: &Path, rel: &Path) -> Option<Undoable> {
    let parent = real.open_beneath(rel.parent().unwrap_or(Path::new(""))).ok()?;
    Some(Undoable::CreatedLink { path: root.join(rel), target: parent.read_link(rel.file_name()?).ok()? })
}

/// A directory made with what it holds: the directories first, then the files and symlinks
/// (anything else in it leaves the whole out).
fn created_tree(real: &DirHandle, root: &Path, rel: &Path) -> Option<Vec<Undoable>> {
    let mut dirs = vec![rel.to_path_buf()];
    let mut files = Vec::new();
    let mut links = Vec::new();
    let mut at = 0;
    while at < dirs.len() {
        let dir = dirs[at].clone();
        at += 1;
        let handle = real.open_beneath(&dir).ok()?;
        for (name, kind) in handle.typed_entries().ok()? {
            match kind {
                Kind::Dir => dirs.push(dir.join(name)),
                Kind::File => files.push(dir.join(name)),
                Kind::Link => links.push(dir.join(name)),
                Kind::Other => return None,
            }
            if dirs.len() + files.len() + links.len() > MAX_TREE_ENTRIES {
                return None;
            }
        }
    }
    let mut out: Vec<Undoable> = dirs.iter().map(|dir| Undoable::MadeDir(root.join(dir))).collect();
    for file in files {
        out.push(created_file(real, root, &file)?);
    }
    for link in links {
        out.push(created_link(real, root, &link)?);
    }
    Some(out)
}

/// A removed directory tree (or symlink) kept at `slot` in the old area, as it was at `path`.
fn removed_tree(old: &DirHandle, slot: &Path, path: &Path, cap: u64) -> Option<Undoable> {
    let mut tree =
        Undoable::RemovedTree { path: path.to_path_buf(), dirs: Vec::new(), files: Vec::new(), links: Vec::new() };
    let Undoable::RemovedTree { dirs, files, links, .. } = &mut tree else { return None };
    let parent = slot.parent().unwrap_or(Path::new(""));
    let name = slot.file_name()?;
    let top = old.open_beneath(parent).ok()?;
    let kind = top.stat(name).ok()?.kind;
    if kind == Kind::Link {
        links.push((path.to_path_buf(), top.read_link(name).ok()?));
        return Some(tree);
    }
    let mut pending = vec![(slot.to_path_buf(), path.to_path_buf())];
    let mut seen = 0;
    while let Some((at, real)) = pending.pop() {
        dirs.push(real.clone());
        let handle = old.open_beneath(&at).ok()?;
        for (entry, kind) in handle.typed_entries().ok()? {
            seen += 1;
            if seen > MAX_TREE_ENTRIES {
                return None;
            }
            let (from, to) = (at.join(&entry), real.join(&entry));
            match kind {
                Kind::Dir => pending.push((from, to)),
                Kind::File => files.push((to, read_at(old, &from, cap)?, mode_at(old, &from)?)),
                Kind::Link => links.push((to, handle.read_link(&entry).ok()?)),
                Kind::Other => return None,
            }
        }
    }
    // Outermost first.
    dirs.sort_by_key(|dir| dir.components().count());
    Some(tree)
}

/// The permission bits of the entry at `rel` beneath `dir`.
fn mode_at(dir: &DirHandle, rel: &Path) -> Option<u32> {
    let parent = dir.open_beneath(rel.parent().unwrap_or(Path::new(""))).ok()?;
    Some(parent.stat(rel.file_name()?).ok()?.mode & 0o7777)
}

/// The sha256 (hex) of the regular file at `rel` beneath `dir`.
fn sha256_at(dir: &DirHandle, rel: &Path) -> Option<String> {
    crate::shadow::hash_at(dir, rel)
}

/// Each root's git-ignore rules, read as they are met (`.gitignore` in each directory on the
/// way, the repository's `info/exclude`).
#[derive(Default)]
struct Ignores {
    by_dir: HashMap<PathBuf, Option<ignore::gitignore::Gitignore>>,
}

impl Ignores {
    /// Whether `rel` (beneath `root`) is git-ignored, by a `.gitignore` above it.
    fn ignored(&mut self, root: &Path, rel: &Path, is_dir: bool) -> bool {
        let mut dirs: Vec<&Path> = rel.ancestors().skip(1).collect();
        dirs.reverse();
        for dir in dirs {
            let rules = self.by_dir.entry(root.join(dir)).or_insert_with(|| rules_in(root, dir));
            if let Some(rules) = rules
                && let Ok(inner) = rel.strip_prefix(dir)
                && rules.matched_path_or_any_parents(inner, is_dir).is_ignore()
            {
                return true;
            }
        }
        false
    }
}

/// The rules of `dir`'s `.gitignore` (and, at a repository's top, its `info/exclude`).
fn rules_in(root: &Path, dir: &Path) -> Option<ignore::gitignore::Gitignore> {
    let real = DirHandle::open(root).ok()?;
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root.join(dir));
    let mut any = false;
    for file in [dir.join(".gitignore"), dir.join(".git/info/exclude")] {
        if let Some(bytes) = read_at(&real, &file, 1 << 20) {
            for line in String::from_utf8_lossy(&bytes).lines() {
                any |= builder.add_line(None, line).is_ok();
            }
        }
    }
    any.then(|| builder.build().ok()).flatten()
}
