//! Whether the server's own state and secrets are the user's alone: a state dir, a token file
//! or a directory above them that another local user owns or may write would let that user
//! plant a token, a database or a stage the next start folds, and so drive the server.
#![allow(clippy::disallowed_methods)]

use std::io;
use std::path::Path;

/// Why another local user could change `path` (or read it, when `secret`), if they could:
/// it or a directory above it is owned by someone other than this user and root, or is
/// writable by others (by the group too, unless it is this user's own group), without the
/// sticky bit that keeps others from renaming what is not theirs; or `path` is a symlink. A
/// path not made yet is judged by the directories above it. `None` when only this user (and
/// root) can. Windows: the profile's ACLs apply; `None`.
#[cfg(unix)]
pub fn others_control(path: &Path, secret: bool) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = rustix::process::geteuid().as_raw();
    let gid = rustix::process::getegid().as_raw();
    // A path not made yet is judged by the directories above it.
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if meta.file_type().is_symlink() {
            return Some(format!("`{}` is a symbolic link", path.display()));
        }
        let mode = meta.mode();
        let group_write = mode & 0o020 != 0 && meta.gid() != gid;
        if meta.uid() != uid && meta.uid() != 0 {
            return Some(format!("`{}` belongs to uid {}, not to this user (uid {uid})", path.display(), meta.uid()));
        }
        if mode & 0o002 != 0 || group_write {
            return Some(format!("`{}` is writable by other users (mode {:o})", path.display(), mode & 0o7777));
        }
        if secret && mode & 0o004 != 0 {
            return Some(format!("`{}` is readable by every user (mode {:o})", path.display(), mode & 0o7777));
        }
    }
    let mut above = path.parent();
    while let Some(dir) = above.filter(|dir| !dir.as_os_str().is_empty()) {
        above = dir.parent();
        // A symlink on the way that another user owns: they can point it elsewhere (in a
        // sticky directory such as /tmp, only they can).
        if let Ok(link) = std::fs::symlink_metadata(dir)
            && link.file_type().is_symlink()
            && link.uid() != uid
            && link.uid() != 0
        {
            return Some(format!(
                "`{}` above it is a symbolic link of uid {}, who could point it elsewhere",
                dir.display(),
                link.uid()
            ));
        }
        let Ok(meta) = std::fs::metadata(dir) else { continue };
        let mode = meta.mode();
        let sticky = mode & 0o1000 != 0;
        let others_write = mode & 0o002 != 0 || (mode & 0o020 != 0 && meta.gid() != gid);
        if meta.uid() != uid && meta.uid() != 0 {
            return Some(format!(
                "the directory `{}` above it belongs to uid {}, who could replace what it holds",
                dir.display(),
                meta.uid()
            ));
        }
        if others_write && !sticky {
            return Some(format!(
                "the directory `{}` above it is writable by other users (mode {:o}) without the sticky bit",
                dir.display(),
                mode & 0o7777
            ));
        }
    }
    None
}

/// Windows: the profile's ACLs keep the user's files to the user.
#[cfg(not(unix))]
pub fn others_control(_path: &Path, _secret: bool) -> Option<String> {
    None
}

/// [`others_control`] as an error that says what to do.
pub fn check(path: &Path, secret: bool) -> io::Result<()> {
    match others_control(path, secret) {
        None => Ok(()),
        Some(why) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{why}: another local user could change the server's state or secrets there and so drive it; use a directory of your own (`chmod go-w`, `chown`), or another path"
            ),
        )),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_private_dir_passes_and_a_shared_one_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(others_control(&dir, false), None);
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(others_control(&dir, false).unwrap().contains("writable by other users"));
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        let token = dir.join("token");
        std::fs::write(&token, "x").unwrap();
        std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(others_control(&token, true).unwrap().contains("readable by every user"));
        assert_eq!(others_control(&token, false), None);
        let link = dir.join("link");
        std::os::unix::fs::symlink(&token, &link).unwrap();
        assert!(others_control(&link, false).unwrap().contains("symbolic link"));
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        std::fs::create_dir(open.join("state")).unwrap();
        assert!(others_control(&open.join("state"), false).unwrap().contains("above it"));
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o1777)).unwrap();
        assert_eq!(others_control(&open.join("state"), false), None, "a sticky dir such as /tmp");
    }

    /// A state dir reached through a symlink another user owns (in a sticky dir such as
    /// /tmp): they point it elsewhere whenever they like. Only root can give a link to
    /// another user, so run unprivileged this checks that one's own link passes.
    #[test]
    fn a_symlink_above_that_another_user_owns_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        std::fs::create_dir(&real).unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).unwrap();
        let link = tmp.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(others_control(&link.join("state"), false), None, "one's own link");
        if rustix::process::geteuid().is_root() {
            std::os::unix::fs::lchown(&link, Some(65534), Some(65534)).unwrap();
            let why = others_control(&link.join("state"), false).unwrap();
            assert!(why.contains("symbolic link of uid 65534"), "{why}");
        }
    }
}
