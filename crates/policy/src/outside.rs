//! Paths beyond the roots, as an escalated call names them, judged where they really lie
//! (symlinks resolved as the approved call will resolve them): a secret the agent never reads
//! (the user's `deny_read`, the default secrets such as `~/.ssh`, the server's own state and
//! config), and otherwise a place a grant may cover.

use std::path::{Path, PathBuf};

use toolbelt_mcp_core::config::sandbox::{Places, runtime_dir, secret_paths};
use toolbelt_mcp_sandbox::write::Target;
use toolbelt_mcp_sandbox::{Resolved, Roots};

use crate::Caller;

/// `input` (outside the roots) resolved against `/` once, as the approved call will use it:
/// the question names its real path, and the operation gets this same resolution (a write
/// target holds its directory open), so a symlink swapped while the user reads changes
/// nothing. `None` when it does not resolve (the call is then resolved after the answer).
fn widened(caller: &Caller<'_>) -> Roots {
    Roots::new(vec![caller.roots.first().to_path_buf(), PathBuf::from("/")])
}

/// [`widened`] resolution of a path to read.
pub(crate) fn resolve_read(caller: &Caller<'_>, input: &str) -> Option<Resolved> {
    widened(caller).resolve(input).ok()
}

/// [`widened`] resolution of a path to write.
pub(crate) fn resolve_write(caller: &Caller<'_>, input: &str) -> Option<Target> {
    Target::resolve(&widened(caller), input).ok()
}

/// Whether `path` is a secret hidden from commands: what they could never read, file
/// operations never read or write either, escalated or not.
pub(crate) fn secret(path: &Path, caller: &Caller<'_>) -> bool {
    let config = caller.config;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let runtime = runtime_dir();
    let places = Places { home: home.as_deref(), runtime: runtime.as_deref() };
    let own: [&Path; 2] = [&config.state_dir, &config.config_dir];
    secret_paths(&config.sandbox_settings, places, &own, caller.roots.list()).iter().any(|s| path.starts_with(s))
}

/// Whether a write to `path` outside the roots lies beyond the user's own files: anywhere
/// but their home directory and the temp dirs (`/etc`, `/usr`, `/var/spool`, `/opt`, a mount),
/// where what is written is read by the system and other users' programs (cron, profile
/// scripts, units, interpreters' module dirs). Such a write is asked every time, never granted.
pub(crate) fn beyond_the_user(path: &Path) -> bool {
    let home = std::env::var_os("HOME").map(PathBuf::from).filter(|home| home.is_absolute() && home != Path::new("/"));
    let temps = toolbelt_mcp_sandbox::protected::links::temp_dirs();
    let own = home.iter().chain(&temps).any(|dir| path.starts_with(dir));
    !own
}

/// What a read grant for `path` outside the roots covers: its directory, unless that lies
/// fewer than four levels deep (`/`, `/etc`, a home directory, `~/src`), where the file alone
/// is granted: one answer about a note in the home directory is not an answer about
/// everything beside it.
pub(crate) fn read_scope(path: &Path) -> PathBuf {
    match path.parent() {
        Some(dir) if dir.components().count() > 4 => dir.to_path_buf(),
        _ => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_the_home_and_the_temp_dirs_is_the_system() {
        for path in ["/etc/cron.d/x", "/usr/local/lib/python3/dist-packages/x.pth", "/opt/app/run.sh", "/srv/x"] {
            assert!(beyond_the_user(Path::new(path)), "{path}");
        }
        assert!(!beyond_the_user(&std::env::temp_dir().join("x")));
        assert!(!beyond_the_user(Path::new("/var/tmp/x")));
    }

    #[test]
    fn a_read_grant_never_covers_a_home_or_a_top_level_dir() {
        assert_eq!(read_scope(Path::new("/home/u/notes.txt")), Path::new("/home/u/notes.txt"));
        assert_eq!(read_scope(Path::new("/root/notes.txt")), Path::new("/root/notes.txt"));
        assert_eq!(read_scope(Path::new("/etc/hosts")), Path::new("/etc/hosts"));
        assert_eq!(read_scope(Path::new("/usr/share/doc/x/README")), Path::new("/usr/share/doc/x"));
        assert_eq!(read_scope(Path::new("/home/u/src/a.rs")), Path::new("/home/u/src/a.rs"));
        assert_eq!(read_scope(Path::new("/home/u/src/other/a.rs")), Path::new("/home/u/src/other"));
    }
}
