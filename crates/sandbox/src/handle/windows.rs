//! Directory handles on Windows: a capability `Dir` (cap-std), which resolves every name from
//! the held handle and never lets a path, a symlink or a junction lead out of it. Walks open
//! one plain name at a time without following a reparse point, as the Unix side does.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::path::{Component, Path, PathBuf};

use cap_fs_ext::{DirExt, FollowSymlinks, MetadataExt, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions};

use super::{FileId, Kind, Replace, Stat};

/// A directory held open by a capability handle.
#[derive(Debug)]
pub struct DirHandle(Dir);

impl DirHandle {
    /// Opens the directory at `path` (trusted: a configured root, or a test's own dir).
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(Self(Dir::open_ambient_dir(path, cap_std::ambient_authority())?))
    }

    /// The directory at `relative` beneath this one, opened one plain name at a time, none of
    /// them through a symlink or junction.
    pub fn open_beneath(&self, relative: &Path) -> io::Result<Self> {
        super::plain(relative)?;
        let mut dir = self.0.try_clone()?;
        for component in relative.components() {
            if let Component::Normal(name) = component {
                dir = dir.open_dir_nofollow(name)?;
            }
        }
        Ok(Self(dir))
    }

    /// `relative` split into the directory it is in (opened beneath this one) and its name.
    fn parent_of<'a>(&self, relative: &'a Path) -> io::Result<(Self, &'a OsStr)> {
        let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "the root itself has no name"));
        };
        Ok((self.open_beneath(parent)?, name))
    }

    /// The file at `relative` beneath this one, for reading.
    pub fn open_file_beneath(&self, relative: &Path) -> io::Result<File> {
        let (dir, name) = self.parent_of(relative)?;
        dir.open_read(name)
    }

    /// The metadata of `relative` beneath this directory itself: a symlink is described, not
    /// followed.
    pub fn metadata_beneath(&self, relative: &Path) -> io::Result<Metadata> {
        if relative.as_os_str().is_empty() {
            return self.0.try_clone()?.into_std_file().metadata();
        }
        let (dir, name) = self.parent_of(relative)?;
        if dir.stat(name)?.kind == Kind::Dir {
            return dir.0.open_dir_nofollow(name)?.into_std_file().metadata();
        }
        // Not following: a symlink is opened as itself (`FILE_FLAG_OPEN_REPARSE_POINT`).
        let options = OpenOptions::new().read(true).follow(FollowSymlinks::No).clone();
        dir.0.open_with(name, &options)?.into_std().metadata()
    }

    /// What is at `name` (not following a symlink).
    pub fn stat(&self, name: &OsStr) -> io::Result<Stat> {
        let meta = self.0.symlink_metadata(name)?;
        let file_type = meta.file_type();
        let kind = if file_type.is_symlink() {
            Kind::Link
        } else if file_type.is_dir() {
            Kind::Dir
        } else if file_type.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        let mode = if meta.permissions().readonly() { 0o444 } else { 0o666 };
        Ok(Stat { kind, len: meta.len(), mode })
    }

    /// The identity of what is at `name` (not following a symlink).
    pub fn identity(&self, name: &OsStr) -> io::Result<FileId> {
        file_identity(&self.open_read(name)?)
    }

    /// The target text of the symlink `name`.
    pub fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
        self.0.read_link(name)
    }

    /// Creates the directory `name`; `AlreadyExists` if something is there.
    pub fn create_dir(&self, name: &OsStr) -> io::Result<()> {
        self.0.create_dir(name)
    }

    /// Opens the directory `name` (not through a symlink or junction).
    pub fn open_dir(&self, name: &OsStr) -> io::Result<Self> {
        Ok(Self(self.0.open_dir_nofollow(name)?))
    }

    /// Opens the file `name` for reading (not through a symlink).
    pub fn open_read(&self, name: &OsStr) -> io::Result<File> {
        let file = self.0.open_with(name, OpenOptions::new().read(true).follow(FollowSymlinks::No))?;
        Ok(file.into_std())
    }

    /// Creates the file `name` for writing, failing if anything is there; a `mode` without
    /// the owner's write bit makes it read-only (Windows has no other permission bits).
    pub fn create_new(&self, name: &OsStr, mode: Option<u32>) -> io::Result<File> {
        let options = OpenOptions::new().write(true).create_new(true).follow(FollowSymlinks::No).clone();
        let file = self.0.open_with(name, &options)?.into_std();
        if mode.is_some_and(|mode| mode & 0o200 == 0) {
            let mut permissions = file.metadata()?.permissions();
            permissions.set_readonly(true);
            file.set_permissions(permissions)?;
        }
        Ok(file)
    }

    /// Renames `from` here to `to` in `to_dir`. Without replacing, a file is hard-linked to
    /// its new name (which fails if one is there) and then unlinked from the old one; a
    /// directory is renamed after a check that the name is free.
    pub fn rename(&self, from: &OsStr, to_dir: &Self, to: &OsStr, replace: Replace) -> io::Result<()> {
        if replace == Replace::Allowed {
            return self.0.rename(from, &to_dir.0, to);
        }
        if self.stat(from)?.kind == Kind::Dir {
            if to_dir.0.symlink_metadata(to).is_ok() {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            return self.0.rename(from, &to_dir.0, to);
        }
        self.0.hard_link(from, &to_dir.0, to)?;
        self.0.remove_file(from)
    }

    /// Removes the file or symlink `name`.
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        self.0.remove_file_or_symlink(name)
    }

    /// Removes the empty directory `name`.
    pub fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        self.0.remove_dir(name)
    }

    /// Creates a symlink `name` pointing at `target` (a file symlink; Windows asks for
    /// developer mode or the privilege to create one).
    pub fn symlink(&self, target: &Path, name: &OsStr) -> io::Result<()> {
        self.0.symlink_file(target, name)
    }

    /// Windows cannot flush a directory's entries; the rename itself is durable on NTFS.
    pub fn sync(&self) -> io::Result<()> {
        Ok(())
    }

    /// The names in the directory.
    pub fn entries(&self) -> io::Result<Vec<OsString>> {
        self.0.entries()?.map(|entry| entry.map(|e| e.file_name())).collect()
    }
}

/// The identity of an open file: its volume serial number and file index.
pub fn file_identity(file: &File) -> io::Result<FileId> {
    let meta = cap_std::fs::File::from_std(file.try_clone()?).metadata()?;
    Ok((meta.dev(), meta.ino()))
}

/// Reads at `offset` (the file position moves; callers read by offset only).
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::windows::fs::FileExt::seek_read(file, buf, offset)
}

/// Takes an exclusive lock on `file` without waiting: `Ok(false)` if another holder has it.
pub fn try_lock(file: &File) -> io::Result<bool> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(err)) => Err(err),
    }
}
