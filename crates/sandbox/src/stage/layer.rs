//! What overlayfs writes into an upper layer, read back: whiteouts (character devices 0:0)
//! for removed names, the `overlay.opaque` attribute on a directory that replaced one, and
//! the bookkeeping attributes (`overlay.origin`, `overlay.impure`) that are stripped from
//! what is moved into the real tree. Staged mounts use `userxattr` (in a user namespace the
//! kernel requires it; a root server uses it too, so one format is read), so the attributes
//! are `user.overlay.*`; `trusted.overlay.*` is read as well.

use std::ffi::OsStr;
use std::path::Path;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use crate::handle::DirHandle;

/// The overlay attributes' prefixes.
const PREFIXES: [&[u8]; 2] = [b"user.overlay.", b"trusted.overlay."];

/// Whether `name` in `dir` is a whiteout: a character device numbered 0:0.
pub fn is_whiteout(dir: &DirHandle, name: &OsStr) -> bool {
    rustix::fs::statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::CharacterDevice && stat.st_rdev == 0)
}

/// Whether the directory `dir` is opaque (it replaced a lower directory whole).
pub fn is_opaque(dir: &DirHandle) -> bool {
    PREFIXES.iter().any(|prefix| {
        let name = [*prefix, b"opaque"].concat();
        let mut value = [0u8; 4];
        let name = String::from_utf8_lossy(&name).into_owned();
        matches!(rustix::fs::fgetxattr(dir.fd(), name.as_str(), &mut value[..]), Ok(n) if value[..n] == *b"y")
    })
}

/// Removes the overlay's attributes from `name` in `dir` (a file or directory moved into the
/// real tree); a name that cannot be opened (a symlink, a file without read permission) keeps
/// them, which is harmless.
pub fn strip(dir: &DirHandle, name: &OsStr) {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let Ok(fd) = rustix::fs::openat(dir.fd(), name, flags, Mode::empty()) else { return };
    let mut list = vec![0u8; 4096];
    let Ok(len) = rustix::fs::flistxattr(&fd, &mut list[..]) else { return };
    for attr in list[..len].split(|b| *b == 0).filter(|a| PREFIXES.iter().any(|p| a.starts_with(p))) {
        let _ = rustix::fs::fremovexattr(&fd, String::from_utf8_lossy(attr).as_ref());
    }
}

/// The mount data of an overlay of `lower` with `upper` and `work`, given as `/proc/self/fd/N`
/// paths of handles held open by the caller (no escaping of `,` or `:` in a root's path is
/// then needed). `volatile`: the upper layer is not synced when the mount goes, which would
/// sync its whole file system at every command's end; the fold does not need it on disk.
pub fn mount_data(lower: &Path, upper: &Path, work: &Path) -> String {
    format!("lowerdir={},upperdir={},workdir={},userxattr,volatile", lower.display(), upper.display(), work.display())
}
