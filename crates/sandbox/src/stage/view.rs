//! The two views a staged command's writes are judged on: the real tree (`Real`, a root held
//! open) and the tree as the command left it (`Merged`: its upper layer over the real tree,
//! read the way overlayfs reads it: a whiteout hides a name, an opaque directory hides what
//! was beneath it). Nothing is followed through a symlink, and nothing but a regular file is
//! ever opened for reading (a FIFO or a device is described, never read).

use std::ffi::{OsStr, OsString};
use std::path::{Component, Path};

use crate::handle::{DirHandle, Kind};
use crate::protected::gitdir::View;
use crate::protected::view::parent_and_name;
pub use crate::protected::view::{Real, read_at};

/// What the upper layer holds at a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upper {
    /// Nothing: the lower layer shows through.
    Absent,
    /// A whiteout: the name is gone.
    Whiteout,
    /// A directory; `opaque` hides the lower directory's entries.
    Dir {
        /// Whether it hides what the lower layer has there.
        opaque: bool,
    },
    /// Something else (a file, a symlink, a FIFO…), which hides the lower layer's.
    Other(Kind),
}

/// What the upper layer `upper` holds at `rel`.
pub fn upper_at(upper: &DirHandle, rel: &Path) -> Upper {
    let Some((parent, name)) = parent_and_name(upper, rel) else { return Upper::Absent };
    upper_in(&parent, name)
}

/// What the upper directory `parent` holds at `name`.
pub fn upper_in(parent: &DirHandle, name: &OsStr) -> Upper {
    match whiteout_or_kind(parent, name) {
        None => Upper::Absent,
        Some(None) => Upper::Whiteout,
        Some(Some(Kind::Dir)) => {
            Upper::Dir { opaque: parent.open_dir(name).is_ok_and(|d| super::layer::is_opaque(&d)) }
        }
        Some(Some(kind)) => Upper::Other(kind),
    }
}

/// `None` if nothing is at `name`; `Some(None)` for a whiteout (a character device 0:0);
/// else its kind.
fn whiteout_or_kind(parent: &DirHandle, name: &OsStr) -> Option<Option<Kind>> {
    let stat = parent.stat(name).ok()?;
    if stat.kind == Kind::Other && super::layer::is_whiteout(parent, name) {
        return Some(None);
    }
    Some(Some(stat.kind))
}

/// The tree as a staged command left it: `upper` over `lower`.
#[derive(Debug)]
pub struct Merged<'a> {
    /// The real tree.
    pub lower: &'a Real,
    /// The command's upper layer for this root.
    pub upper: &'a DirHandle,
    /// What the upper layer holds at each path looked up so far: a judge asks about every
    /// ancestor of every change, and each answer costs a few system calls.
    seen: std::cell::RefCell<std::collections::HashMap<std::path::PathBuf, Upper>>,
}

impl<'a> Merged<'a> {
    /// `upper` over `lower` (the upper layer must not change while this view is used).
    pub fn new(lower: &'a Real, upper: &'a DirHandle) -> Self {
        Self { lower, upper, seen: std::cell::RefCell::default() }
    }

    /// What the upper layer holds at `rel`, remembered.
    fn upper_at(&self, rel: &Path) -> Upper {
        if let Some(found) = self.seen.borrow().get(rel) {
            return *found;
        }
        let found = upper_at(self.upper, rel);
        self.seen.borrow_mut().insert(rel.to_path_buf(), found);
        found
    }
}

/// Where a path of the merged tree comes from.
enum Source {
    Gone,
    Upper(Kind),
    Lower,
}

impl Merged<'_> {
    /// Resolves `rel` through the layers as overlayfs does.
    fn source(&self, rel: &Path) -> Source {
        let mut lower_shows = true;
        let mut prefix = std::path::PathBuf::new();
        let names: Vec<&OsStr> =
            rel.components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect();
        for (i, name) in names.iter().enumerate() {
            prefix.push(name);
            let last = i + 1 == names.len();
            match self.upper_at(&prefix) {
                Upper::Whiteout => return Source::Gone,
                Upper::Dir { opaque } => {
                    if last {
                        return Source::Upper(Kind::Dir);
                    }
                    if opaque {
                        lower_shows = false;
                    }
                }
                Upper::Other(kind) => return if last { Source::Upper(kind) } else { Source::Gone },
                Upper::Absent => {
                    if !lower_shows {
                        return Source::Gone;
                    }
                    return Source::Lower;
                }
            }
        }
        if names.is_empty() { Source::Upper(Kind::Dir) } else { Source::Lower }
    }
}

impl View for Merged<'_> {
    fn kind(&self, rel: &Path) -> Option<Kind> {
        match self.source(rel) {
            Source::Gone => None,
            Source::Upper(kind) => Some(kind),
            Source::Lower => self.lower.kind(rel),
        }
    }

    fn read(&self, rel: &Path, cap: u64) -> Option<Vec<u8>> {
        match self.source(rel) {
            Source::Gone => None,
            Source::Upper(_) => read_at(self.upper, rel, cap),
            Source::Lower => self.lower.read(rel, cap),
        }
    }

    fn entries(&self, rel: &Path) -> Vec<(OsString, Kind)> {
        match self.source(rel) {
            Source::Gone => Vec::new(),
            Source::Lower => self.lower.entries(rel),
            Source::Upper(Kind::Dir) => {
                let opaque = matches!(self.upper_at(rel), Upper::Dir { opaque: true });
                let Ok(dir) = self.upper.open_beneath(rel) else { return Vec::new() };
                let mut found: Vec<(OsString, Kind)> = Vec::new();
                let mut hidden: Vec<OsString> = Vec::new();
                for (name, _) in dir.typed_entries().unwrap_or_default() {
                    match upper_in(&dir, &name) {
                        Upper::Whiteout => hidden.push(name),
                        Upper::Dir { .. } => found.push((name, Kind::Dir)),
                        Upper::Other(kind) => found.push((name, kind)),
                        Upper::Absent => {}
                    }
                }
                if !opaque {
                    for (name, kind) in self.lower.entries(rel) {
                        if !hidden.contains(&name) && !found.iter().any(|(n, _)| *n == name) {
                            found.push((name, kind));
                        }
                    }
                }
                found
            }
            Source::Upper(_) => Vec::new(),
        }
    }

    fn link(&self, rel: &Path) -> Option<std::path::PathBuf> {
        match self.source(rel) {
            Source::Gone => None,
            Source::Upper(Kind::Link) => {
                let (parent, name) = crate::protected::view::parent_and_name(self.upper, rel)?;
                parent.read_link(name).ok()
            }
            Source::Upper(_) => None,
            Source::Lower => self.lower.link(rel),
        }
    }
}
