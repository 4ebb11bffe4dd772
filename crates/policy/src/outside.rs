//! Paths beyond the roots, as an escalated call names them, judged where they really lie
//! (symlinks resolved as the approved call will resolve them): a secret the agent never reads
//! (the user's `deny_read`, the default secrets such as `~/.ssh`, the server's own state and
//! config), and otherwise a place a grant may cover.

use std::path::{Path, PathBuf};

use toolbelt_mcp_core::config::sandbox::{Places, runtime_dir, secret_paths};
use toolbelt_mcp_sandbox::Roots;
use toolbelt_mcp_sandbox::write::Target;

use crate::Caller;

/// The real path of `input` (outside the roots), resolved against `/` as the approved call
/// resolves it; `None` when it does not resolve (then the normalized path stands).
pub(crate) fn real(caller: &Caller<'_>, input: &str, write: bool) -> Option<PathBuf> {
    let widened = Roots::new(vec![caller.roots.first().to_path_buf(), PathBuf::from("/")]);
    if write {
        Target::resolve(&widened, input).ok().map(|target| target.real().to_path_buf())
    } else {
        widened.resolve(input).ok().map(|resolved| resolved.real().to_path_buf())
    }
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
    fn a_read_grant_never_covers_a_home_or_a_top_level_dir() {
        assert_eq!(read_scope(Path::new("/home/u/notes.txt")), Path::new("/home/u/notes.txt"));
        assert_eq!(read_scope(Path::new("/root/notes.txt")), Path::new("/root/notes.txt"));
        assert_eq!(read_scope(Path::new("/etc/hosts")), Path::new("/etc/hosts"));
        assert_eq!(read_scope(Path::new("/usr/share/doc/x/README")), Path::new("/usr/share/doc/x"));
        assert_eq!(read_scope(Path::new("/home/u/src/a.rs")), Path::new("/home/u/src/a.rs"));
        assert_eq!(read_scope(Path::new("/home/u/src/other/a.rs")), Path::new("/home/u/src/other"));
    }
}
