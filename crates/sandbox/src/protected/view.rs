//! The real tree beneath a root as the code-bearing judge reads it: opened from the root's
//! handle, no symlink followed anywhere, and nothing but a regular file opened for reading
//! (a FIFO or a device is described, never read), at most a cap of it.

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::Path;

use super::gitdir::View;
use crate::handle::{DirHandle, Kind};

/// The real tree beneath a root.
#[derive(Debug)]
pub struct Real {
    dir: DirHandle,
}

impl Real {
    /// The tree beneath `dir`.
    pub fn new(dir: DirHandle) -> Self {
        Self { dir }
    }

    /// The root's handle.
    pub fn handle(&self) -> &DirHandle {
        &self.dir
    }
}

/// `dir/rel`'s parent held open and the name in it (`None`: `rel` is the directory itself, or
/// a parent cannot be opened beneath it without a symlink).
pub fn parent_and_name<'a>(dir: &DirHandle, rel: &'a Path) -> Option<(DirHandle, &'a OsStr)> {
    let name = rel.file_name()?;
    let parent = rel.parent().unwrap_or(Path::new(""));
    Some((dir.open_beneath(parent).ok()?, name))
}

/// What is at `rel` beneath `dir` (not following a symlink; the directory itself for `""`).
pub fn kind_at(dir: &DirHandle, rel: &Path) -> Option<Kind> {
    if rel.as_os_str().is_empty() {
        return Some(Kind::Dir);
    }
    let (parent, name) = parent_and_name(dir, rel)?;
    parent.stat(name).ok().map(|stat| stat.kind)
}

/// The bytes of the regular file at `rel` beneath `dir` if it holds at most `cap`: opened
/// without following a symlink and without blocking (a FIFO is not read), its type checked
/// on the open handle.
pub fn read_at(dir: &DirHandle, rel: &Path, cap: u64) -> Option<Vec<u8>> {
    let (parent, name) = parent_and_name(dir, rel)?;
    let file = parent.open_read(name).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > cap {
        return None;
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(cap + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= cap).then_some(bytes)
}

/// The entries of the directory at `rel` beneath `dir`.
pub fn entries_at(dir: &DirHandle, rel: &Path) -> Vec<(OsString, Kind)> {
    let Ok(dir) = dir.open_beneath(rel) else { return Vec::new() };
    #[cfg(target_os = "linux")]
    {
        dir.typed_entries().unwrap_or_default()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let names = dir.entries().unwrap_or_default();
        names.into_iter().filter_map(|name| dir.stat(&name).ok().map(|stat| (name, stat.kind))).collect()
    }
}

impl View for Real {
    fn kind(&self, rel: &Path) -> Option<Kind> {
        kind_at(&self.dir, rel)
    }

    fn read(&self, rel: &Path, cap: u64) -> Option<Vec<u8>> {
        read_at(&self.dir, rel, cap)
    }

    fn entries(&self, rel: &Path) -> Vec<(OsString, Kind)> {
        entries_at(&self.dir, rel)
    }

    fn link(&self, rel: &Path) -> Option<std::path::PathBuf> {
        let (parent, name) = parent_and_name(&self.dir, rel)?;
        parent.read_link(name).ok()
    }
}
