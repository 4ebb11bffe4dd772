//! Directory handles on Unix: a descriptor and the `*at` calls (rustix). Beneath a root,
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` on Linux, `openat` with `O_NOFOLLOW_ANY` of
//! a path of plain names (no `..`) on macOS: no symlink is followed anywhere on the way. Where
//! Linux lacks `openat2` (kernels before 5.6, qemu's user mode, container seccomp filters that
//! predate it), the same walk one plain name at a time, each opened with `O_NOFOLLOW`.

use std::ffi::{OsStr, OsString};
use std::fs::{File, Metadata};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use rustix::fs::{AtFlags, FileType, FlockOperation, Mode, OFlags, RenameFlags};
use rustix::io::Errno;

use super::{FileId, Kind, Replace, Stat};

#[cfg(target_os = "linux")]
const RESOLVE: rustix::fs::ResolveFlags = rustix::fs::ResolveFlags::BENEATH
    .union(rustix::fs::ResolveFlags::NO_SYMLINKS)
    .union(rustix::fs::ResolveFlags::NO_MAGICLINKS);

/// A handle that only names a file (Linux: `O_PATH`, which needs no read permission); macOS
/// has no `O_PATH`, so a handle opened for reading.
#[cfg(target_os = "linux")]
const HANDLE: OFlags = OFlags::PATH;
/// A handle that only names a file (Linux: `O_PATH`, which needs no read permission); macOS
/// has no `O_PATH`, so a handle opened for reading.
#[cfg(not(target_os = "linux"))]
const HANDLE: OFlags = OFlags::RDONLY;

/// A directory held open by its descriptor.
#[derive(Debug)]
pub struct DirHandle(OwnedFd);

impl DirHandle {
    /// Opens the directory at `path` (trusted: a configured root, or a test's own dir).
    pub fn open(path: &Path) -> io::Result<Self> {
        Ok(Self(rustix::fs::open(path, HANDLE | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?))
    }

    /// Opens `relative` beneath this directory with `flags` (`O_CLOEXEC` added), following no
    /// symlink anywhere; an empty `relative` is the directory itself.
    fn open_relative(&self, relative: &Path, flags: OFlags) -> io::Result<OwnedFd> {
        let relative = if relative.as_os_str().is_empty() { Path::new(".") } else { relative };
        #[cfg(target_os = "linux")]
        {
            use std::sync::atomic::{AtomicBool, Ordering};
            /// Set once `openat2` said `ENOSYS`: every later open walks name by name.
            static NO_OPENAT2: AtomicBool = AtomicBool::new(false);
            if !NO_OPENAT2.load(Ordering::Relaxed) {
                match rustix::fs::openat2(&self.0, relative, flags | OFlags::CLOEXEC, Mode::empty(), RESOLVE) {
                    Err(Errno::NOSYS) => NO_OPENAT2.store(true, Ordering::Relaxed),
                    opened => return Ok(opened?),
                }
            }
            open_by_names(&self.0, relative, flags)
        }
        // Without `..` (refused here) and with no symlink followed anywhere, a path of names
        // from the directory's handle cannot leave it.
        #[cfg(not(target_os = "linux"))]
        {
            super::plain(relative)?;
            let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW_ANY;
            Ok(rustix::fs::openat(&self.0, relative, flags, Mode::empty())?)
        }
    }

    /// The directory at `relative` beneath this one, for reading its entries and creating in it.
    pub fn open_beneath(&self, relative: &Path) -> io::Result<Self> {
        Ok(Self(self.open_relative(relative, OFlags::RDONLY | OFlags::DIRECTORY)?))
    }

    /// The file at `relative` beneath this one, for reading, without blocking on a FIFO.
    pub fn open_file_beneath(&self, relative: &Path) -> io::Result<File> {
        Ok(File::from(self.open_relative(relative, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK)?))
    }

    /// The metadata of `relative` beneath this directory itself: a symlink is described, not
    /// followed.
    pub fn metadata_beneath(&self, relative: &Path) -> io::Result<Metadata> {
        #[cfg(target_os = "linux")]
        {
            File::from(self.open_relative(relative, OFlags::PATH | OFlags::NOFOLLOW)?).metadata()
        }
        // `O_SYMLINK` opens a symlink itself; the directory it is in was opened beneath the
        // root first (`O_NOFOLLOW_ANY` would refuse the symlink at the end).
        #[cfg(not(target_os = "linux"))]
        {
            let (Some(parent), Some(name)) = (relative.parent(), relative.file_name()) else {
                return File::from(self.open_relative(relative, HANDLE)?).metadata();
            };
            let dir = self.open_relative(parent, HANDLE | OFlags::DIRECTORY)?;
            let flags = OFlags::RDONLY | OFlags::SYMLINK | OFlags::NONBLOCK | OFlags::CLOEXEC;
            File::from(rustix::fs::openat(&dir, name, flags, Mode::empty())?).metadata()
        }
    }

    /// What is at `name` (not following a symlink).
    pub fn stat(&self, name: &OsStr) -> io::Result<Stat> {
        let stat = rustix::fs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW)?;
        let kind = kind(FileType::from_raw_mode(stat.st_mode));
        Ok(Stat { kind, len: stat.st_size as u64, mode: mode_bits(stat.st_mode) })
    }

    /// What is at `name` (not following a symlink), with the version that tells a later change
    /// of it from this one.
    #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
    pub fn stat_version(&self, name: &OsStr) -> io::Result<(Stat, super::Version)> {
        let stat = rustix::fs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW)?;
        let kind = kind(FileType::from_raw_mode(stat.st_mode));
        let version = super::Version {
            dev: stat.st_dev as u64,
            ino: u64::from(stat.st_ino),
            size: stat.st_size as u64,
            mtime: (stat.st_mtime as i64, stat.st_mtime_nsec as i64),
            ctime: (stat.st_ctime as i64, stat.st_ctime_nsec as i64),
        };
        Ok((Stat { kind, len: stat.st_size as u64, mode: mode_bits(stat.st_mode) }, version))
    }

    /// The identity of what is at `name` (not following a symlink).
    pub fn identity(&self, name: &OsStr) -> io::Result<FileId> {
        let stat = rustix::fs::statat(&self.0, name, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(id_of(&stat))
    }

    /// The target text of the symlink `name`.
    pub fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
        let target = rustix::fs::readlinkat(&self.0, name, Vec::new())?;
        Ok(OsString::from_vec(target.into_bytes()).into())
    }

    /// Creates the directory `name` (the umask applies); `AlreadyExists` if something is there.
    pub fn create_dir(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::mkdirat(&self.0, name, Mode::from_raw_mode(0o777))?)
    }

    /// Opens the directory `name` (not through a symlink).
    pub fn open_dir(&self, name: &OsStr) -> io::Result<Self> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(Self(rustix::fs::openat(&self.0, name, flags, Mode::empty())?))
    }

    /// Opens the file `name` for reading (not through a symlink, not blocking on a FIFO).
    pub fn open_read(&self, name: &OsStr) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
        Ok(File::from(rustix::fs::openat(&self.0, name, flags, Mode::empty())?))
    }

    /// Creates the file `name` for writing, failing if anything is there; `mode` sets the
    /// permission bits exactly (else `0o666` less the umask).
    pub fn create_new(&self, name: &OsStr, mode: Option<u32>) -> io::Result<File> {
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = rustix::fs::openat(&self.0, name, flags, mode_of(mode.unwrap_or(0o666)))?;
        if let Some(mode) = mode {
            rustix::fs::fchmod(&fd, mode_of(mode))?;
        }
        Ok(File::from(fd))
    }

    /// Renames `from` here to `to` in `to_dir` (`RENAME_NOREPLACE` when it may not replace).
    pub fn rename(&self, from: &OsStr, to_dir: &Self, to: &OsStr, replace: Replace) -> io::Result<()> {
        let flags = match replace {
            Replace::Never => RenameFlags::NOREPLACE,
            Replace::Allowed => RenameFlags::empty(),
        };
        match rustix::fs::renameat_with(&self.0, from, &to_dir.0, to, flags) {
            Err(Errno::NOTEMPTY) => Err(io::Error::from(io::ErrorKind::AlreadyExists)),
            other => Ok(other?),
        }
    }

    /// Removes the file or symlink `name`.
    pub fn remove_file(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.0, name, AtFlags::empty())?)
    }

    /// Removes the empty directory `name`.
    pub fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.0, name, AtFlags::REMOVEDIR)?)
    }

    /// Creates a symlink `name` pointing at `target`.
    pub fn symlink(&self, target: &Path, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::symlinkat(target, &self.0, name)?)
    }

    /// The descriptor, for the staging layer's calls that no other caller needs (extended
    /// attributes, device numbers, times).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.0.as_fd()
    }

    /// Flushes the directory's entries to disk.
    pub fn sync(&self) -> io::Result<()> {
        Ok(rustix::fs::fsync(&self.0)?)
    }

    /// The names in the directory (`.` and `..` left out).
    pub fn entries(&self) -> io::Result<Vec<OsString>> {
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.0)? {
            let name = entry?.file_name().to_bytes().to_vec();
            if name != b"." && name != b".." {
                names.push(OsString::from_vec(name));
            }
        }
        Ok(names)
    }

    /// The names in the directory with what each is, from the directory itself (`d_type`);
    /// a name whose kind the filesystem does not record there is looked at (not followed).
    #[cfg(target_os = "linux")]
    pub fn typed_entries(&self) -> io::Result<Vec<(OsString, Kind)>> {
        let mut found = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.0)? {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            let name = OsString::from_vec(name.to_vec());
            let kind = match entry.file_type() {
                FileType::Unknown => self.stat(&name)?.kind,
                known => kind(known),
            };
            found.push((name, kind));
        }
        Ok(found)
    }
}

/// What a file type is, as [`Kind`] says it.
fn kind(file_type: FileType) -> Kind {
    match file_type {
        FileType::RegularFile => Kind::File,
        FileType::Directory => Kind::Dir,
        FileType::Symlink => Kind::Link,
        _ => Kind::Other,
    }
}

/// Opens `relative` beneath `dir` one plain name at a time, each with `O_NOFOLLOW`: what
/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)` does, for kernels without it. Every step
/// starts from the descriptor of the one before, so a directory swapped for a symlink on the
/// way is refused (`ELOOP`, as `openat2` says), never followed.
#[cfg(target_os = "linux")]
fn open_by_names(dir: &OwnedFd, relative: &Path, flags: OFlags) -> io::Result<OwnedFd> {
    use std::os::fd::AsFd;
    super::plain(relative)?;
    let names: Vec<&OsStr> = relative
        .components()
        .filter_map(|c| match c {
            std::path::Component::Normal(name) => Some(name),
            _ => None,
        })
        .collect();
    let flags = flags | OFlags::CLOEXEC | OFlags::NOFOLLOW;
    let Some((last, parents)) = names.split_last() else {
        return Ok(rustix::fs::openat(dir, ".", flags, Mode::empty())?);
    };
    // A symlink opened with `O_NOFOLLOW | O_DIRECTORY` is "not a directory": say what
    // `openat2` says of a symlink.
    let open = |at: std::os::fd::BorrowedFd<'_>, name: &OsStr, flags: OFlags| match rustix::fs::openat(
        at,
        name,
        flags,
        Mode::empty(),
    ) {
        Err(Errno::NOTDIR) if is_symlink(at, name) => Err(Errno::LOOP),
        other => other,
    };
    let mut held: Option<OwnedFd> = None;
    for name in parents {
        let at = held.as_ref().map_or(dir.as_fd(), |fd| fd.as_fd());
        held = Some(open(at, name, OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC)?);
    }
    let at = held.as_ref().map_or(dir.as_fd(), |fd| fd.as_fd());
    Ok(open(at, last, flags)?)
}

/// Whether `name` in `dir` is a symlink.
#[cfg(target_os = "linux")]
fn is_symlink(dir: std::os::fd::BorrowedFd<'_>, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink)
}

/// The identity of an open file.
pub fn file_identity(file: &File) -> io::Result<FileId> {
    let stat = rustix::fs::fstat(file)?;
    Ok(id_of(&stat))
}

/// Device and inode of a `stat` (`dev_t` is signed on macOS: the bits are what identify).
#[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
fn id_of(stat: &rustix::fs::Stat) -> FileId {
    (stat.st_dev as u64, u64::from(stat.st_ino))
}

/// Reads at `offset` without moving the file position.
pub fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

/// Takes an exclusive `flock` on `file` without waiting: `Ok(false)` if another holder has
/// it; `Ok(true)` too on a file system without locks (no worse than before).
pub fn try_lock(file: &File) -> io::Result<bool> {
    match rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) | Err(Errno::NOLCK | Errno::OPNOTSUPP) => Ok(true),
        Err(Errno::WOULDBLOCK | Errno::INTR) => Ok(false),
        Err(err) => Err(err.into()),
    }
}

/// The permission bits of a raw `st_mode` (`mode_t` is 16 bits on macOS, 32 on Linux).
#[allow(clippy::useless_conversion)]
fn mode_bits(raw: rustix::fs::RawMode) -> u32 {
    u32::from(raw) & 0o7777
}

/// Permission bits (the low 12 bits of `bits`) as a [`Mode`].
fn mode_of(bits: u32) -> Mode {
    // At most 0o7777: fits every platform's `mode_t`.
    Mode::from_bits_truncate((bits & 0o7777) as rustix::fs::RawMode)
}

#[cfg(test)]
#[cfg(target_os = "linux")]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    /// The name-by-name walk (kernels without `openat2`) opens and refuses exactly what
    /// `openat2` does, with the same error, for every kind of path a caller can pass.
    #[test]
    fn the_walk_without_openat2_agrees_with_openat2() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let (root, outside) = (base.join("root"), base.join("outside"));
        std::fs::create_dir_all(root.join("dir/deeper")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("dir/f"), "in").unwrap();
        std::fs::write(root.join("dir/deeper/g"), "in").unwrap();
        std::fs::write(outside.join("f"), "out").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("swapped")).unwrap();
        std::os::unix::fs::symlink("dir/f", root.join("link")).unwrap();
        std::os::unix::fs::symlink("dir", root.join("dirlink")).unwrap();
        std::os::unix::fs::symlink("/proc/self/cwd", root.join("magic")).unwrap();
        let dir = DirHandle::open(&root).unwrap();
        let paths = [
            "",
            ".",
            "dir",
            "dir/f",
            "./dir/./f",
            "dir/deeper/g",
            "dir/missing",
            "missing/f",
            "swapped",
            "swapped/f",
            "link",
            "dirlink",
            "dirlink/f",
            "magic",
            "magic/f",
            "dir/f/x",
            "..",
            "dir/../dir/f",
            "../outside/f",
            "/etc/passwd",
        ];
        let flag_sets = [
            OFlags::RDONLY,
            OFlags::RDONLY | OFlags::DIRECTORY,
            OFlags::PATH | OFlags::NOFOLLOW,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK,
        ];
        for path in paths {
            for flags in flag_sets {
                let relative = Path::new(path);
                let relative_or_dot = if path.is_empty() { Path::new(".") } else { relative };
                let by_kernel =
                    rustix::fs::openat2(&dir.0, relative_or_dot, flags | OFlags::CLOEXEC, Mode::empty(), RESOLVE)
                        .map_err(io::Error::from);
                let by_names = open_by_names(&dir.0, relative, flags);
                match (&by_kernel, &by_names) {
                    (Ok(a), Ok(b)) => assert_eq!(
                        file_identity(&File::from(a.try_clone().unwrap())).unwrap(),
                        file_identity(&File::from(b.try_clone().unwrap())).unwrap(),
                        "{path} {flags:?}: another file"
                    ),
                    // `..` and absolute paths: the walk refuses them before any call, as not
                    // plain (callers resolve `..` first; `openat2` allows one that stays beneath).
                    (_, Err(b)) if path.contains("..") || path.starts_with('/') => {
                        assert_eq!(b.kind(), io::ErrorKind::PermissionDenied, "{path} {flags:?}");
                        let stays_beneath = path == "dir/../dir/f" && !flags.contains(OFlags::DIRECTORY);
                        assert_eq!(by_kernel.is_ok(), stays_beneath, "{path} {flags:?}: {by_kernel:?}");
                    }
                    (Err(a), Err(b)) => assert_eq!(a.raw_os_error(), b.raw_os_error(), "{path} {flags:?}: {a} / {b}"),
                    _ => panic!("{path} {flags:?}: openat2 {by_kernel:?}, the walk {by_names:?}"),
                }
            }
        }
    }
}
