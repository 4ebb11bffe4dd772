//! Protected paths inside writable directories, for `__sandbox-exec`: Landlock can only
//! allow, never carve a read-only hole into a writable tree, so the command gets a private
//! mount namespace in which each protected path is bind-mounted read-only over itself.
//! A repository's `.git` is also bound over itself (read-write), so it cannot be renamed or
//! removed to get rid of its protected hooks and config. Landlock, applied afterwards,
//! forbids the command to unmount any of it.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use nix::sched::{CloneFlags, unshare};
use rustix::fs::{StatVfsMountFlags, statvfs};

/// A path to bind over itself in the command's mount namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bind {
    /// Read-only: writes fail with `EROFS`; renames and removal with `EBUSY`.
    ReadOnly(PathBuf),
    /// Writable, but a mount point: it cannot be renamed or removed (`EBUSY`).
    Pinned(PathBuf),
}

/// Enters a private mount namespace (with a user namespace when not root) and applies the
/// binds in order. Must run single-threaded, before Landlock.
pub fn apply(binds: &[Bind]) -> Result<(), String> {
    enter_namespace()?;
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(|e| format!("cannot make the mount namespace private: {e}"))?;
    for bind in binds {
        let (path, read_only) = match bind {
            Bind::ReadOnly(path) => (path, true),
            Bind::Pinned(path) => (path, false),
        };
        mount(Some(path), path, None::<&str>, MsFlags::MS_BIND, None::<&str>)
            .map_err(|e| format!("cannot bind `{}`: {e}", path.display()))?;
        if read_only {
            let flags = MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | locked_flags(path);
            mount(None::<&str>, path, None::<&str>, flags, None::<&str>)
                .map_err(|e| format!("cannot make `{}` read-only: {e}", path.display()))?;
        }
    }
    Ok(())
}

/// Root gets a mount namespace directly; anyone else first enters a user namespace that
/// maps only their own uid and gid (so files keep their owners and nothing gains rights).
fn enter_namespace() -> Result<(), String> {
    if rustix::process::geteuid().is_root() && unshare(CloneFlags::CLONE_NEWNS).is_ok() {
        return Ok(());
    }
    let (uid, gid) = (rustix::process::getuid().as_raw(), rustix::process::getgid().as_raw());
    unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS).map_err(|e| {
        format!(
            "cannot create a user and mount namespace ({e}); unprivileged user namespaces are disabled or blocked here"
        )
    })?;
    let write = |file: &str, text: String| {
        std::fs::write(Path::new("/proc/self").join(file), text).map_err(|e| format!("cannot write `{file}`: {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))
}

/// The flags a remount must keep: in a user namespace the original mount's `nosuid`, `nodev`,
/// `noexec` and atime flags are locked, and dropping them fails with `EPERM`.
fn locked_flags(path: &Path) -> MsFlags {
    let Ok(stat) = statvfs(path) else { return MsFlags::empty() };
    let pairs = [
        (StatVfsMountFlags::NOSUID, MsFlags::MS_NOSUID),
        (StatVfsMountFlags::NODEV, MsFlags::MS_NODEV),
        (StatVfsMountFlags::NOEXEC, MsFlags::MS_NOEXEC),
        (StatVfsMountFlags::NOATIME, MsFlags::MS_NOATIME),
        (StatVfsMountFlags::NODIRATIME, MsFlags::MS_NODIRATIME),
        (StatVfsMountFlags::RELATIME, MsFlags::MS_RELATIME),
    ];
    pairs.iter().filter(|(have, _)| stat.f_flag.contains(*have)).fold(MsFlags::empty(), |acc, (_, flag)| acc | *flag)
}
