//! Opens beneath a root from the root's own handle, with no symlink allowed anywhere on the
//! way, so neither a symlink nor a directory swapped for one after a path was checked can lead
//! out of it (how each OS does it: `handle.rs`). Reads, walks and writes all open their
//! subjects through here.

use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};

use crate::handle::DirHandle;

/// A root held open: everything beneath it is opened from this handle.
#[derive(Debug)]
pub struct Root {
    path: PathBuf,
    dir: DirHandle,
}

impl Root {
    /// Opens the root `path` (canonical, trusted: the configured root).
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(Self { path: path.to_path_buf(), dir: DirHandle::open(path)? })
    }

    /// `path` relative to the root; an error when it does not lie beneath it.
    fn relative<'a>(&self, path: &'a Path) -> io::Result<&'a Path> {
        path.strip_prefix(&self.path).map_err(|_| {
            let message = format!("`{}` is not beneath `{}`", path.display(), self.path.display());
            io::Error::new(io::ErrorKind::PermissionDenied, message)
        })
    }

    /// A directory beneath the root (relative path) as a handle for reading its entries and
    /// creating in it.
    pub fn open_dir(&self, relative: &Path) -> io::Result<DirHandle> {
        self.dir.open_beneath(relative)
    }

    /// The directory at `path` (absolute) beneath the root, as a handle: its entries are then
    /// described by name, one call each.
    pub fn open_dir_at(&self, path: &Path) -> io::Result<DirHandle> {
        self.dir.open_beneath(self.relative(path)?)
    }

    /// A file beneath the root (absolute `path`), opened for reading without blocking on a
    /// FIFO; with its metadata, taken from the open handle.
    pub fn open_read(&self, path: &Path) -> io::Result<(File, Metadata)> {
        let file = self.open_file(path)?;
        let meta = file.metadata()?;
        Ok((file, meta))
    }

    /// [`Self::open_read`] without the metadata: a walker's file, known to be regular.
    pub fn open_file(&self, path: &Path) -> io::Result<File> {
        self.dir.open_file_beneath(self.relative(path)?)
    }

    /// The metadata of `path` (absolute) itself: a symlink is described, not followed.
    pub fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.dir.metadata_beneath(self.relative(path)?)
    }
}

/// A directory beneath `root` (relative path) as a handle.
pub fn open_dir(root: &Path, relative: &Path) -> io::Result<DirHandle> {
    Root::open(root)?.open_dir(relative)
}

#[cfg(test)]
#[cfg(unix)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::ffi::OsStr;

    #[test]
    fn no_symlink_anywhere_on_the_way() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (root, outside) = (base.join("root"), base.join("outside"));
        std::fs::create_dir_all(root.join("dir")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("dir/f"), "in").unwrap();
        std::fs::write(outside.join("f"), "out").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("swapped")).unwrap();
        std::os::unix::fs::symlink("dir/f", root.join("link")).unwrap();
        let held = Root::open(&root).unwrap();
        let (mut file, meta) = held.open_read(&root.join("dir/f")).unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut file, &mut text).unwrap();
        assert_eq!((text.as_str(), meta.len()), ("in", 2));
        assert!(held.open_read(&root.join("swapped/f")).is_err(), "a directory symlink on the way");
        assert!(held.open_read(&root.join("link")).is_err(), "a symlink at the end");
        assert!(held.open_read(&outside.join("f")).is_err(), "not beneath the root");
        assert!(held.open_read(&root.join("dir/../../outside/f")).is_err(), "`..` out of the root");
        assert!(held.symlink_metadata(&root.join("link")).unwrap().file_type().is_symlink());
        assert!(held.symlink_metadata(&root.join("swapped/f")).is_err());
        assert!(held.symlink_metadata(&root).unwrap().is_dir());
        assert_eq!(held.open_dir_at(&root).unwrap().read_link(OsStr::new("link")).unwrap(), Path::new("dir/f"));
        assert_eq!(held.open_dir_at(&root.join("dir")).unwrap().stat(OsStr::new("f")).unwrap().len, 2);
        assert!(held.open_dir_at(&root.join("swapped")).is_err(), "a directory symlink");
        assert!(held.open_dir_at(&outside).is_err(), "not beneath the root");
        assert!(open_dir(&root, Path::new("dir")).is_ok());
        assert!(open_dir(&root, Path::new("swapped")).is_err());
    }

    #[test]
    fn a_fifo_does_not_block() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        assert!(std::process::Command::new("mkfifo").arg(root.join("fifo")).status().unwrap().success());
        let (_file, meta) = Root::open(&root).unwrap().open_read(&root.join("fifo")).unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_fifo(&meta.file_type()));
    }
}
