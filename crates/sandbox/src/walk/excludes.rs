//! The global git excludes file (`core.excludesFile`), looked up once and again only when one
//! of git's config files changed: `ignore`'s own `git_global` reads and parses all of them for
//! every walk (13 system calls and about 16,000 instructions a `list_dir`).

use std::path::PathBuf;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, SystemTime};

use crate::fs;
use crate::handle::Version;

/// How long before a lookup git's config files must have last changed for it to be kept.
const SETTLED: Duration = Duration::from_secs(2);

/// A lookup: git's config files as they were (`None`: absent), and the file they named.
type Lookup = (Vec<Option<Version>>, Option<PathBuf>);

/// git's config files, from the environment the server started with (it never changes its own).
static CONFIG_FILES: LazyLock<Vec<PathBuf>> = LazyLock::new(config_files);

/// The last lookup kept.
static KEPT: Mutex<Option<Lookup>> = Mutex::new(None);

/// The global excludes file, as `ignore::gitignore::gitconfig_excludes_path` finds it (it may
/// not exist): looked up again only when one of git's config files is not as it was.
pub(super) fn path() -> Option<PathBuf> {
    let now = SystemTime::now();
    let versions: Vec<Option<Version>> = CONFIG_FILES.iter().map(|file| fs::version(file)).collect();
    if let Some((seen, path)) = KEPT.lock().ok().as_deref().and_then(Option::as_ref)
        && *seen == versions
    {
        return path.clone();
    }
    let path = ignore::gitignore::gitconfig_excludes_path();
    // Files changed within the same clock tick as the lookup could change again unseen.
    if versions.iter().flatten().all(|version| version.settled_before(now, SETTLED))
        && let Ok(mut kept) = KEPT.lock()
    {
        *kept = Some((versions, path.clone()));
    }
    path
}

/// git's config files that `ignore` reads for `core.excludesFile`, every one it may read:
/// `$GIT_CONFIG_GLOBAL`, `~/.gitconfig`, `$XDG_CONFIG_HOME/git/config` (else
/// `~/.config/git/config`) and `$GIT_CONFIG_SYSTEM` (else `/etc/gitconfig`).
fn config_files() -> Vec<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
    let home = std::env::home_dir();
    let mut files = Vec::with_capacity(4);
    files.extend(var("GIT_CONFIG_GLOBAL"));
    files.extend(home.as_ref().map(|home| home.join(".gitconfig")));
    files.extend(
        var("XDG_CONFIG_HOME").or_else(|| home.map(|home| home.join(".config"))).map(|dir| dir.join("git/config")),
    );
    files.push(var("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lookup_is_ignores_own() {
        assert_eq!(path(), ignore::gitignore::gitconfig_excludes_path());
        // Again, from what was kept (or looked up again when a config file is recent).
        assert_eq!(path(), ignore::gitignore::gitconfig_excludes_path());
    }

    #[test]
    fn every_config_file_ignore_reads_is_watched() {
        let files = config_files();
        assert!(files.iter().any(|f| f.ends_with("git/config")), "{files:?}");
        assert!(files.last().is_some_and(|f| f.ends_with("gitconfig")), "{files:?}");
    }
}
