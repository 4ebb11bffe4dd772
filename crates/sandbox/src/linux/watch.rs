//! Secrets that appear while a command runs: the helper, which lives in the command's mount
//! namespace until the command ends, watches (inotify) every secret path of the contract and
//! each existing directory above it up to the home directory, and on any change there hides
//! again every secret that is in view: one created after the command started (a `gh auth
//! login` in another terminal), or one replaced by a rename (`docker login` writes a new
//! `config.json` over the old one, and the kernel drops a mount whose file was renamed over
//! in another namespace). What it hides it hides as the start did: an empty unreadable tmpfs
//! over a directory, `/dev/null` over a file.
//!
//! The watch reacts within the time an event takes to arrive (well under a millisecond on an
//! idle machine), not before: a command that reads the path in a tight loop may win that
//! race once. `docs/SECURITY.md` says so.
#![allow(clippy::disallowed_methods)] // runs in the helper, in the command's mount namespace

use std::collections::HashSet;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::inotify::{self, CreateFlags, WatchFlags};

/// How far above a secret the watch reaches when no home directory bounds it.
const LEVELS: usize = 4;

/// The watch over a command's secrets.
pub struct Watch {
    fd: OwnedFd,
    secrets: Vec<PathBuf>,
    home: Option<PathBuf>,
    watched: HashSet<PathBuf>,
}

impl Watch {
    /// Starts watching `secrets` (the contract's `watch`), bounded by `home`. `None` when
    /// there is nothing to watch. Fails closed: without inotify (another process of the user
    /// holding every instance, say) the command does not start, since a secret that appeared
    /// while it ran would stay in view.
    pub fn start(secrets: &[PathBuf], home: Option<PathBuf>) -> Result<Option<Self>, String> {
        if secrets.is_empty() {
            return Ok(None);
        }
        let fd = inotify::init(CreateFlags::CLOEXEC | CreateFlags::NONBLOCK).map_err(|err| {
            format!(
                "cannot watch the hidden paths for secrets that appear while the command runs (inotify: {err}); end what holds this user's inotify instances (`fs.inotify.max_user_instances`), then run it again"
            )
        })?;
        let mut watch = Self { fd, secrets: secrets.to_vec(), home, watched: HashSet::new() };
        watch.rescan();
        Ok(Some(watch))
    }

    /// The descriptor to poll.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// After the descriptor polled readable: drains the events, then watches what now exists
    /// and hides every secret in view again.
    pub fn changed(&mut self) {
        let mut buffer = [MaybeUninit::<u8>::uninit(); 4096];
        let mut reader = inotify::Reader::new(&self.fd, &mut buffer);
        while reader.next().is_ok() {}
        self.rescan();
    }

    fn rescan(&mut self) {
        for secret in self.secrets.clone() {
            for dir in self.above(&secret) {
                if !self.watched.contains(&dir) && dir.is_dir() {
                    let flags = WatchFlags::CREATE
                        | WatchFlags::MOVED_TO
                        | WatchFlags::DELETE_SELF
                        | WatchFlags::MOVE_SELF
                        | WatchFlags::ONLYDIR;
                    if inotify::add_watch(&self.fd, &dir, flags).is_ok() {
                        self.watched.insert(dir);
                    }
                }
            }
            if in_view(&secret)
                && let Err(err) = super::mounts::hide(&secret, false)
            {
                tracing::debug!(%err, "a secret that appeared could not be hidden");
            }
        }
    }

    /// The directories above `secret` whose changes can bring it into view: its parent, and
    /// theirs up to the home directory (or [`LEVELS`] up, outside it).
    fn above(&self, secret: &Path) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        for dir in secret.ancestors().skip(1).take_while(|dir| dir.parent().is_some()) {
            dirs.push(dir.to_path_buf());
            let at_home = self.home.as_deref() == Some(dir);
            if at_home || (!self.home.as_deref().is_some_and(|home| secret.starts_with(home)) && dirs.len() >= LEVELS) {
                break;
            }
        }
        dirs
    }
}

/// Whether `path` shows something: it exists and is neither the empty tmpfs a hidden
/// directory gets nor the `/dev/null` a hidden file gets.
fn in_view(path: &Path) -> bool {
    let Ok(meta) = std::fs::metadata(path) else { return false };
    if meta.is_dir() {
        const TMPFS_MAGIC: i64 = 0x0102_1994;
        // `f_type` is an `i32` or an `i64`, by architecture.
        #[allow(clippy::unnecessary_cast)]
        let empty_tmpfs = rustix::fs::statfs(path).is_ok_and(|fs| fs.f_type as i64 == TMPFS_MAGIC)
            && matches!(meta.permissions().mode() & 0o7777, 0 | 0o111);
        return !empty_tmpfs;
    }
    let null = std::fs::metadata("/dev/null").map(|m| m.rdev()).ok();
    !(meta.file_type().is_char_device() && Some(meta.rdev()) == null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_reaches_up_to_home_and_no_further() {
        let watch = |home: Option<&str>| Watch {
            fd: inotify::init(CreateFlags::CLOEXEC).unwrap(),
            secrets: Vec::new(),
            home: home.map(PathBuf::from),
            watched: HashSet::new(),
        };
        let at_home = watch(Some("/home/u")).above(Path::new("/home/u/.config/gh/hosts.yml"));
        assert_eq!(at_home, [PathBuf::from("/home/u/.config/gh"), "/home/u/.config".into(), "/home/u".into()]);
        let elsewhere = watch(Some("/home/u")).above(Path::new("/srv/a/b/c/d/e/secret"));
        assert_eq!(elsewhere.len(), LEVELS);
        assert_eq!(watch(None).above(Path::new("/etc/secret")), [PathBuf::from("/etc")]);
    }

    #[test]
    fn a_plain_file_or_directory_is_in_view() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        assert!(in_view(&file) && in_view(dir.path()));
        assert!(!in_view(Path::new("/dev/null")) && !in_view(&dir.path().join("missing")));
    }
}
