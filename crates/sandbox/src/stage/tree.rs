//! Whole entries moved, copied and removed through directory handles only (never a path
//! walked again, never a symlink followed), for the fold: the same file system takes a
//! rename, another one a copy (content, permission bits, modification time).

use std::ffi::{OsStr, OsString};
use std::io::{self, Read, Write};

use rustix::fs::{AtFlags, Mode, RenameFlags, Timestamps};

use crate::handle::{DirHandle, Kind, Replace};

/// How deep a tree may nest (each level holds a directory open).
const MAX_DEPTH: usize = 256;

/// Removes `name` in `dir`, a file, a symlink or a whole directory tree of any depth: each
/// directory met is emptied with its subdirectories moved up into the top one under fresh
/// names, so at most two directories are open at once and nothing recurses (a command may
/// leave thousands of nested directories).
pub fn remove(dir: &DirHandle, name: &OsStr) -> io::Result<()> {
    if dir.stat(name)?.kind != Kind::Dir {
        return dir.remove_file(name);
    }
    // A directory without write or search permission (a command's `chmod 0`) is opened up
    // first: it is being removed anyway.
    let open_up = |parent: &DirHandle, child: &OsStr| {
        let _ = rustix::fs::chmodat(parent.fd(), child, Mode::from_raw_mode(0o700), AtFlags::empty());
    };
    open_up(dir, name);
    let top = dir.open_dir(name)?;
    let mut fresh = 0u64;
    loop {
        let entries = top.entries()?;
        if entries.is_empty() {
            break;
        }
        for entry in entries {
            if top.stat(&entry)?.kind != Kind::Dir {
                top.remove_file(&entry)?;
                continue;
            }
            open_up(&top, &entry);
            let inner = top.open_dir(&entry)?;
            for child in inner.entries()? {
                if inner.stat(&child)?.kind != Kind::Dir {
                    inner.remove_file(&child)?;
                    continue;
                }
                open_up(&inner, &child);
                loop {
                    fresh += 1;
                    let moved = OsString::from(format!(".rm{fresh}"));
                    match inner.rename(&child, &top, &moved, Replace::Never) {
                        Ok(()) => break,
                        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => continue,
                        Err(err) => return Err(err),
                    }
                }
            }
            drop(inner);
            top.remove_dir(&entry)?;
        }
    }
    drop(top);
    dir.remove_dir(name)
}

/// Moves `name` in `from` to `to_name` in `to`: a rename on one file system (`Replace::Never`),
/// else a copy and the removal of the original. Returns whether it was a rename.
pub fn relocate(from: &DirHandle, name: &OsStr, to: &DirHandle, to_name: &OsStr) -> io::Result<bool> {
    match from.rename(name, to, to_name, Replace::Never) {
        Ok(()) => Ok(true),
        Err(err) if err.raw_os_error() == Some(rustix::io::Errno::XDEV.raw_os_error()) => {
            copy(from, name, to, to_name)?;
            remove(from, name)?;
            Ok(false)
        }
        Err(err) => Err(err),
    }
}

/// Swaps what is at `a` in `dir` and at `b` in `dir` at once (`RENAME_EXCHANGE`): a reader sees
/// the old entry or the new one, never neither.
pub fn exchange(dir: &DirHandle, a: &OsStr, b: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::renameat_with(dir.fd(), a, dir.fd(), b, RenameFlags::EXCHANGE)?)
}

/// Copies `name` in `from` to the new `to_name` in `to`: a file (content, permission bits,
/// modification time), a symlink (its target), a directory tree, or a FIFO; a socket or a
/// device is skipped (nothing of it can be copied).
pub fn copy(from: &DirHandle, name: &OsStr, to: &DirHandle, to_name: &OsStr) -> io::Result<()> {
    copy_at(from, name, to, to_name, 0)
}

fn copy_at(from: &DirHandle, name: &OsStr, to: &DirHandle, to_name: &OsStr, depth: usize) -> io::Result<()> {
    let stat = rustix::fs::statat(from.fd(), name, AtFlags::SYMLINK_NOFOLLOW)?;
    let mode = Mode::from_raw_mode(stat.st_mode & 0o7777);
    let times = times_of(&stat);
    match from.stat(name)?.kind {
        Kind::File => {
            let mut source = from.open_read(name)?;
            let mut target = to.create_new(to_name, Some(0o600))?;
            io::copy(&mut (&mut source).take(u64::MAX), &mut target)?;
            target.flush()?;
            rustix::fs::fchmod(&target, mode)?;
            rustix::fs::futimens(&target, &times)?;
        }
        Kind::Link => to.symlink(&from.read_link(name)?, to_name)?,
        Kind::Dir => {
            if depth > MAX_DEPTH {
                return Err(io::Error::other(format!("directories nest more than {MAX_DEPTH} deep")));
            }
            to.create_dir(to_name)?;
            let (source, target) = (from.open_dir(name)?, to.open_dir(to_name)?);
            for child in source.entries()? {
                copy_at(&source, &child, &target, &child, depth + 1)?;
            }
            rustix::fs::chmodat(to.fd(), to_name, mode, AtFlags::empty())?;
            let _ = rustix::fs::utimensat(to.fd(), to_name, &times, AtFlags::SYMLINK_NOFOLLOW);
        }
        Kind::Other => {
            if rustix::fs::FileType::from_raw_mode(stat.st_mode) == rustix::fs::FileType::Fifo {
                rustix::fs::mknodat(to.fd(), to_name, rustix::fs::FileType::Fifo, mode, 0)?;
            }
        }
    }
    Ok(())
}

/// Whether the regular files `a` in `da` and `b` in `db` hold the same bytes (read in
/// pieces, stopping at the first difference).
pub fn same_content(da: &DirHandle, a: &OsStr, db: &DirHandle, b: &OsStr) -> io::Result<bool> {
    let (mut fa, mut fb) = (da.open_read(a)?, db.open_read(b)?);
    let (mut ba, mut bb) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    loop {
        let n = read_full(&mut fa, &mut ba)?;
        let m = read_full(&mut fb, &mut bb)?;
        if n != m || ba[..n] != bb[..m] {
            return Ok(false);
        }
        if n == 0 {
            return Ok(true);
        }
    }
}

fn read_full(file: &mut std::fs::File, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}

/// A name for a temporary entry in a directory, unique in this process: `.NAME.PID.N.toolbelt-stage`.
pub fn temp_name(name: &OsStr) -> OsString {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut temp = OsString::from(".");
    temp.push(name);
    temp.push(format!(".{}.{n}{}", std::process::id(), crate::write::TEMP_SUFFIX));
    temp
}

/// The times and permission bits of `name` in `dir` (not following a symlink).
pub fn mtime_and_mode(dir: &DirHandle, name: &OsStr) -> io::Result<((i64, i64), u32)> {
    let stat = rustix::fs::statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW)?;
    #[allow(clippy::unnecessary_cast)]
    Ok(((stat.st_mtime as i64, stat.st_mtime_nsec as i64), stat.st_mode & 0o7777))
}

/// Permission bits a command's write never brings into the real tree: set-user-ID and
/// set-group-ID (a file another user runs as this one), and write for group and others (a
/// file or directory, `.git/hooks` say, that another local user could then plant code in).
pub const NEVER_FOLDED: u32 = 0o022;

/// Takes [`NEVER_FOLDED`] bits, and set-user-ID and set-group-ID of regular files, off `name`
/// in `dir`, and off everything beneath it when it is a directory.
pub fn clear_setid(dir: &DirHandle, name: &OsStr) {
    clear_setid_at(dir, name, 0);
}

fn clear_setid_at(dir: &DirHandle, name: &OsStr, depth: usize) {
    clear_setid_file(dir, name);
    if depth <= MAX_DEPTH
        && let Ok(inner) = dir.open_dir(name)
    {
        for child in inner.entries().unwrap_or_default() {
            clear_setid_at(&inner, &child, depth + 1);
        }
    }
}

fn clear_setid_file(dir: &DirHandle, name: &OsStr) {
    let Ok(stat) = rustix::fs::statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW) else { return };
    let kind = rustix::fs::FileType::from_raw_mode(stat.st_mode);
    #[allow(clippy::unnecessary_cast)]
    let mode = stat.st_mode as u32 & 0o7777;
    let never = match kind {
        rustix::fs::FileType::RegularFile => NEVER_FOLDED | libc::S_ISUID | libc::S_ISGID,
        rustix::fs::FileType::Directory => NEVER_FOLDED,
        _ => return,
    };
    if mode & never != 0 {
        let _ = rustix::fs::chmodat(dir.fd(), name, Mode::from_raw_mode((mode & !never) as _), AtFlags::empty());
    }
    drop_system_attributes(dir, name);
}

/// Takes every extended attribute but `user.*` off `name`: POSIX ACLs (a default ACL on a
/// directory gives what is later made in it to other users, whatever its mode), file
/// capabilities, security labels. What the fold brings is content, mode and times.
fn drop_system_attributes(dir: &DirHandle, name: &OsStr) {
    let flags = rustix::fs::OFlags::RDONLY
        | rustix::fs::OFlags::NOFOLLOW
        | rustix::fs::OFlags::NONBLOCK
        | rustix::fs::OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::openat(dir.fd(), name, flags, Mode::empty()) else { return };
    let mut list = vec![0u8; 4096];
    let Ok(len) = rustix::fs::flistxattr(&fd, &mut list[..]) else { return };
    for attribute in list[..len].split(|b| *b == 0).filter(|a| !a.is_empty() && !a.starts_with(b"user.")) {
        let _ = rustix::fs::fremovexattr(&fd, String::from_utf8_lossy(attribute).as_ref());
    }
}

pub fn set_mode(dir: &DirHandle, name: &OsStr, mode: u32) -> io::Result<()> {
    Ok(rustix::fs::chmodat(dir.fd(), name, Mode::from_raw_mode(mode), AtFlags::empty())?)
}

/// The access and modification times of a `stat`, to set on a copy.
#[allow(clippy::unnecessary_cast, clippy::useless_conversion)]
fn times_of(stat: &rustix::fs::Stat) -> Timestamps {
    let time = |sec: i64, nsec: i64| rustix::fs::Timespec { tv_sec: sec, tv_nsec: nsec as _ };
    Timestamps {
        last_access: time(stat.st_atime as i64, stat.st_atime_nsec as i64),
        last_modification: time(stat.st_mtime as i64, stat.st_mtime_nsec as i64),
    }
}
