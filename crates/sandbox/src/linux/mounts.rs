//! The command's view of the filesystem, built in its private mount namespace (before
//! Landlock, which then forbids changing it), in this order:
//! 0. each staged root gets its overlay (`stage/`): the real root below, the command's upper
//!    layer above, so every write beneath the root lands in the upper layer;
//! 1. handles to what must stay visible (roots, the session's output dir) are opened;
//! 2. the session's temp stand-ins are bound over `/tmp`, `/var/tmp` and `/dev/shm`;
//! 3. each hidden path gets an empty, unreadable view: a mode-0 tmpfs over a directory,
//!    `/dev/null` without device access over a file;
//! 4. what must stay visible and was covered by 2 or 3 is bound back at its own path;
//! 5. the protected paths are bound read-only over themselves (`.git` pinned: a mount point
//!    cannot be renamed or removed).
//!
//! Every bind gets `nosuid` and `nodev`. A hidden directory's tmpfs is read-only at the end.
#![allow(clippy::disallowed_methods)]

use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use nix::mount::{MsFlags, mount};
use rustix::fs::{Mode, OFlags, StatVfsMountFlags, statvfs};

use crate::contract::{Bind, Contract, StageLayer};

/// A path that stays visible, with a handle opened before anything covered it.
struct Kept {
    path: PathBuf,
    handle: OwnedFd,
    is_dir: bool,
}

/// Builds the command's view (see the module doc). Runs in the helper, in its new mount
/// namespace, single-threaded. Returns the system temp dirs now replaced by the session's.
pub fn apply(contract: &Contract) -> Result<Vec<PathBuf>, String> {
    mount(None::<&str>, "/", None::<&str>, MsFlags::MS_REC | MsFlags::MS_PRIVATE, None::<&str>)
        .map_err(|e| format!("cannot make the mount namespace private: {e}"))?;
    for layer in &contract.stage {
        stage_root(layer)?;
    }
    let temps: Vec<(PathBuf, PathBuf)> = unique_temp_dirs(contract);
    let covered: Vec<&Path> =
        temps.iter().map(|(system, _)| system.as_path()).chain(contract.hidden.iter().map(PathBuf::as_path)).collect();
    let kept = keep(contract.visible.iter().chain(&contract.writable), &covered)?;
    // The stand-ins may lie in a system temp dir: held open before the first one is covered.
    let stand_ins =
        temps.iter().map(|(system, own)| Ok((system, open_path(own)?))).collect::<Result<Vec<_>, String>>()?;
    for (system, own) in &stand_ins {
        bind(&fd_path(own), system, false)?;
    }
    // What a stand-in covered is out of view already; what is left is hidden.
    let in_view = |path: &Path| std::fs::symlink_metadata(path).is_ok();
    let hidden: Vec<&PathBuf> = contract.hidden.iter().filter(|p| in_view(p)).collect();
    for path in &hidden {
        let has_kept = kept.iter().any(|k| k.path.starts_with(path) && k.path != **path);
        hide(path, has_kept)?;
    }
    for kept in &kept {
        show(kept)?;
        // What stays visible only to be read (the session's output dir, which the server
        // fills from outside) is read-only, even where the command's temp rules would let it
        // write (a state dir under `/tmp`).
        if !contract.writable.contains(&kept.path) {
            bind_read_only(&kept.path)?;
        }
    }
    for path in hidden.iter().filter(|p| p.is_dir()) {
        let flags =
            MsFlags::MS_REMOUNT | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
        mount(None::<&str>, path.as_path(), None::<&str>, flags, None::<&str>)
            .map_err(|e| format!("cannot make the view of `{}` read-only: {e}", path.display()))?;
    }
    private_ptys()?;
    for item in &contract.binds {
        match item {
            Bind::ReadOnly(path) if in_view(path) => bind(path, path, true)?,
            Bind::Pinned(path) if in_view(path) => bind(path, path, false)?,
            // Out of view (under a covered temp dir): nothing there to protect.
            _ => {}
        }
    }
    Ok(temps.into_iter().map(|(system, _)| system).collect())
}

/// Mounts the overlay that stages the writes beneath `layer.root`: the root itself below (its
/// handle, opened before the mount covers it), the command's upper and work directories
/// above. Paths go in as `/proc/self/fd/N`, so no character of a root's path needs escaping.
fn stage_root(layer: &StageLayer) -> Result<(), String> {
    let (lower, upper, work) = (open_path(&layer.root)?, open_path(&layer.upper)?, open_path(&layer.work)?);
    let data = crate::stage::layer::mount_data(&fd_path(&lower), &fd_path(&upper), &fd_path(&work));
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    let mounted = mount(Some("overlay"), &layer.root, Some("overlay"), flags, Some(data.as_str()));
    // Kernels before 5.10 have no `volatile`: the mount then syncs its upper layer when it goes.
    let mounted = match mounted {
        Err(nix::Error::EINVAL) => {
            let data = data.replace(",volatile", "");
            mount(Some("overlay"), &layer.root, Some("overlay"), flags, Some(data.as_str()))
        }
        other => other,
    };
    mounted.map_err(|e| {
        format!(
            "cannot stage the command's writes beneath `{}` (an overlay mount failed: {e}); overlayfs in a user namespace needs Linux 5.11 or later, and a file system for the state dir that keeps extended attributes; or set `stage_writes = false` to let commands write the roots directly (then nothing they write is judged or recorded)",
            layer.root.display()
        )
    })
}

/// The system temp dirs that exist, each once (`/var/tmp` may be a link to `/tmp`), with the
/// session's stand-in for it.
fn unique_temp_dirs(contract: &Contract) -> Vec<(PathBuf, PathBuf)> {
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut temps = Vec::new();
    for (system, own) in contract.temp_dirs() {
        let Ok(real) = system.canonicalize() else { continue };
        if !seen.contains(&real) && own.is_dir() {
            seen.push(real.clone());
            temps.push((real, own));
        }
    }
    temps
}

/// Handles to the paths that lie under a covered one (and are not the stand-ins themselves).
fn keep<'a>(paths: impl Iterator<Item = &'a PathBuf>, covered: &[&Path]) -> Result<Vec<Kept>, String> {
    let mut kept: Vec<Kept> = Vec::new();
    for path in paths {
        if !covered.iter().any(|c| path.starts_with(c)) || kept.iter().any(|k| k.path == *path) {
            continue;
        }
        let Ok(meta) = std::fs::metadata(path) else { continue };
        kept.push(Kept { path: path.clone(), handle: open_path(path)?, is_dir: meta.is_dir() });
    }
    // Shallow first, so a kept directory is in place before one kept inside it.
    kept.sort_by_key(|k| k.path.components().count());
    Ok(kept)
}

/// An empty view of `path`: a tmpfs (mode 0, or 0111 when something inside stays visible:
/// traversable, never listed, even by its owner)
/// over a directory, `/dev/null` without device access over a file.
pub(super) fn hide(path: &Path, has_kept: bool) -> Result<(), String> {
    let fail = |e: nix::Error| format!("cannot hide `{}`: {e}", path.display());
    if path.is_dir() {
        let mode = if has_kept { "mode=0111,size=64k" } else { "mode=0,size=4k" };
        mount(
            Some("tmpfs"),
            path,
            Some("tmpfs"),
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
            Some(mode),
        )
        .map_err(fail)
    } else {
        mount(Some("/dev/null"), path, None::<&str>, MsFlags::MS_BIND, None::<&str>).map_err(fail)?;
        let flags = MsFlags::MS_BIND
            | MsFlags::MS_REMOUNT
            | MsFlags::MS_RDONLY
            | MsFlags::MS_NOSUID
            | MsFlags::MS_NODEV
            | MsFlags::MS_NOEXEC
            | locked_flags(path);
        mount(None::<&str>, path, None::<&str>, flags, None::<&str>).map_err(fail)
    }
}

/// Binds a kept path back at its own place, making the mount point first.
fn show(kept: &Kept) -> Result<(), String> {
    let fail = |what: &str, e: String| format!("cannot keep `{}` visible ({what}: {e})", kept.path.display());
    if kept.is_dir {
        std::fs::create_dir_all(&kept.path).map_err(|e| fail("mkdir", e.to_string()))?;
    } else {
        if let Some(parent) = kept.path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| fail("mkdir", e.to_string()))?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&kept.path)
            .map_err(|e| fail("create", e.to_string()))?;
    }
    mount(Some(&fd_path(&kept.handle)), &kept.path, None::<&str>, MsFlags::MS_BIND | MsFlags::MS_REC, None::<&str>)
        .map_err(|e| fail("bind", e.to_string()))
}

/// Gives the command a devpts of its own: the terminals of the machine (another program's, the
/// host's where it draws its questions, the user's shell) are not in it, so the command can
/// neither write escape sequences to them nor read what is typed there. New terminals it opens
/// (`/dev/ptmx`: `script`, `tmux`, `expect`) are made in it. Its own terminal, if it was
/// started on one, stays open and is still `/dev/tty`. Where a devpts cannot be mounted, the
/// machine's is hidden instead (no new terminals then).
fn private_ptys() -> Result<(), String> {
    let pts = Path::new("/dev/pts");
    if std::fs::symlink_metadata(pts).is_err() {
        return Ok(());
    }
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC;
    let mounted = mount(Some("devpts"), pts, Some("devpts"), flags, Some("newinstance,ptmxmode=0666,mode=0600"));
    match mounted {
        Ok(()) if std::fs::symlink_metadata("/dev/ptmx").is_ok() => {
            bind(Path::new("/dev/pts/ptmx"), Path::new("/dev/ptmx"), false)
        }
        Ok(()) => Ok(()),
        Err(_) => hide(pts, false),
    }
}

/// Makes the bind at `path` read-only (keeping `nosuid`, `nodev` and what the mount locked).
fn bind_read_only(path: &Path) -> Result<(), String> {
    let flags = MsFlags::MS_BIND
        | MsFlags::MS_REMOUNT
        | MsFlags::MS_RDONLY
        | MsFlags::MS_NOSUID
        | MsFlags::MS_NODEV
        | locked_flags(path);
    mount(None::<&str>, path, None::<&str>, flags, None::<&str>)
        .map_err(|e| format!("cannot make `{}` read-only: {e}", path.display()))
}

/// A handle to `path` that names it whatever covers it later.
fn open_path(path: &Path) -> Result<OwnedFd, String> {
    rustix::fs::open(path, OFlags::PATH | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| format!("cannot open `{}`: {e}", path.display()))
}

/// The path of a handle, usable as a bind's source.
fn fd_path(handle: &OwnedFd) -> PathBuf {
    PathBuf::from(format!("/proc/self/fd/{}", handle.as_raw_fd()))
}

/// Binds `source` over `target` with `nosuid` and `nodev` (and read-only when asked).
fn bind(source: &Path, target: &Path, read_only: bool) -> Result<(), String> {
    mount(Some(source), target, None::<&str>, MsFlags::MS_BIND, None::<&str>)
        .map_err(|e| format!("cannot bind `{}`: {e}", target.display()))?;
    let mut flags =
        MsFlags::MS_BIND | MsFlags::MS_REMOUNT | MsFlags::MS_NOSUID | MsFlags::MS_NODEV | locked_flags(target);
    if read_only {
        flags |= MsFlags::MS_RDONLY;
    }
    mount(None::<&str>, target, None::<&str>, flags, None::<&str>)
        .map_err(|e| format!("cannot set the flags of `{}`: {e}", target.display()))
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
        (StatVfsMountFlags::RDONLY, MsFlags::MS_RDONLY),
    ];
    pairs.iter().filter(|(have, _)| stat.f_flag.contains(*have)).fold(MsFlags::empty(), |acc, (_, flag)| acc | *flag)
}
