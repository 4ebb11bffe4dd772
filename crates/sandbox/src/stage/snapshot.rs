//! A still-running command's changes, taken out of its upper layer before they are judged.
//! The command keeps writing its upper layer while a live fold reads it, so judging that layer
//! and then copying from it would apply bytes nobody judged (a config swapped between the two,
//! a directory that gained a `.git` after it was listed). A live fold therefore first copies
//! what changed (every entry that differs from the real tree, every whiteout, every opaque
//! directory whole) into a snapshot in the stage's private directory, which no command can
//! reach, and then folds the snapshot as it would fold an ended command's layer: what is
//! judged is exactly what is applied. Entries that change again later are taken by a later
//! fold.

use std::ffi::OsStr;
use std::io;

use rustix::fs::{FileType, Mode};

use super::fold::{MAX_DEPTH, changed};
use super::tree;
use super::view::{Upper, upper_in};
use crate::handle::{DirHandle, Kind};

/// Copies the changes of the upper layer `upper` (over the root `real`) into the new, empty
/// directory `into`, in the overlay's own format (whiteouts, opaque directories).
pub fn take(upper: &DirHandle, real: &DirHandle, into: &DirHandle) -> io::Result<()> {
    take_dir(upper, Some(real), into, 0, false)
}

fn take_dir(
    upper: &DirHandle,
    real: Option<&DirHandle>,
    into: &DirHandle,
    depth: usize,
    whole: bool,
) -> io::Result<()> {
    for name in upper.entries()? {
        let real_kind = real.and_then(|r| r.stat(&name).ok()).map(|s| s.kind);
        match upper_in(upper, &name) {
            Upper::Absent => {}
            Upper::Whiteout => {
                if real_kind.is_some() || whole {
                    whiteout(into, &name)?;
                }
            }
            Upper::Dir { opaque } => {
                let Ok(inner) = upper.open_dir(&name) else { continue };
                into.create_dir(&name)?;
                if let Ok((_, mode)) = tree::mtime_and_mode(upper, &name) {
                    let _ = tree::set_mode(into, &name, mode | 0o700);
                }
                let copy = into.open_dir(&name)?;
                if opaque {
                    mark_opaque(&copy)?;
                }
                // One level past the deepest applied, so the fold sees what it refuses.
                if depth > MAX_DEPTH {
                    continue;
                }
                let real_inner = if real_kind == Some(Kind::Dir) && !opaque {
                    real.and_then(|r| r.open_dir(&name).ok())
                } else {
                    None
                };
                take_dir(&inner, real_inner.as_ref(), &copy, depth + 1, whole || opaque || real_inner.is_none())?;
                let unchanged_mode = real_kind == Some(Kind::Dir)
                    && matches!((tree::mtime_and_mode(upper, &name), real.map(|r| tree::mtime_and_mode(r, &name))),
                        (Ok((_, a)), Some(Ok((_, b)))) if a == b);
                // A directory that holds no change and is as the real one was: left out, so a
                // large tree applied before costs nothing the next time.
                if !opaque && unchanged_mode && copy.entries()?.is_empty() {
                    drop(copy);
                    into.remove_dir(&name)?;
                    continue;
                }
                if let Ok((_, mode)) = tree::mtime_and_mode(upper, &name) {
                    let _ = tree::set_mode(into, &name, mode);
                }
            }
            Upper::Other(kind) => {
                if whole || changed(upper, &name, real, real_kind, kind) {
                    copy_entry(upper, &name, into)?;
                }
            }
        }
    }
    Ok(())
}

/// Copies one non-directory entry; one that vanished or changed kind meanwhile is left for a
/// later fold.
fn copy_entry(upper: &DirHandle, name: &OsStr, into: &DirHandle) -> io::Result<()> {
    match tree::copy(upper, name, into, name) {
        Ok(()) => Ok(()),
        Err(err) if matches!(err.kind(), io::ErrorKind::NotFound | io::ErrorKind::AlreadyExists) => {
            let _ = tree::remove(into, name);
            Ok(())
        }
        Err(err) if err.raw_os_error() == Some(rustix::io::Errno::ISDIR.raw_os_error()) => Ok(()),
        Err(err) => Err(err),
    }
}

/// A whiteout (a character device 0:0, which the kernel lets anyone make) at `name`.
fn whiteout(dir: &DirHandle, name: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::mknodat(dir.fd(), name, FileType::CharacterDevice, Mode::empty(), 0)?)
}

/// Marks the directory `dir` opaque, as overlayfs does in `userxattr` mode.
fn mark_opaque(dir: &DirHandle) -> io::Result<()> {
    Ok(rustix::fs::fsetxattr(dir.fd(), "user.overlay.opaque", b"y", rustix::fs::XattrFlags::empty())?)
}
