//! The ignore files above a walked root that exist: what a confined walk may read besides the
//! root. Looking for them takes four `statx` for each directory above the root on every walk;
//! a root with none of them above is remembered with those directories as they were, so the
//! next walk looks at each directory once instead (three `statx` for `/home/me/project`, not
//! twelve).

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use crate::fs;
use crate::handle::Version;

/// The ignore files a walk reads above its root (`parents`).
const NAMES: [&str; 4] = [".gitignore", ".ignore", ".git", ".git/info/exclude"];

/// How long before a look the directories above must have last changed for it to be kept.
const SETTLED: Duration = Duration::from_secs(2);

/// Roots remembered at most (the oldest goes first).
const ROOTS: usize = 8;

/// Roots with none of [`NAMES`] in the directories above them, and those directories as they
/// were. Creating one of them there changes its directory (its modification and change times),
/// so a remembered root is looked at again; `.git/info/exclude` needs a `.git` first.
static BARE: Mutex<Vec<(PathBuf, Vec<Version>)>> = Mutex::new(Vec::new());

/// The ignore files above `root` (canonical) that exist, following symlinks as `ignore` does.
pub(super) fn ignore_files(root: &Path) -> Vec<PathBuf> {
    look(root, SETTLED)
}

/// [`ignore_files`], keeping only looks at directories last changed `settled` before it: a
/// change within the same clock tick as the look could otherwise go unseen.
fn look(root: &Path, settled: Duration) -> Vec<PathBuf> {
    let now = SystemTime::now();
    let dirs = || root.ancestors().skip(1);
    // `None` when a directory above cannot be looked at: then nothing is remembered.
    let versions: Option<Vec<Version>> = dirs().map(fs::version_here).collect();
    if let Some(versions) = &versions
        && BARE.lock().is_ok_and(|bare| bare.iter().any(|(bare, seen)| bare == root && seen == versions))
    {
        return Vec::new();
    }
    let mut anything = false;
    let mut found = Vec::new();
    for file in dirs().flat_map(|dir| NAMES.iter().map(move |name| dir.join(name))) {
        // Anything there (a directory, a dangling symlink) keeps the root from being remembered.
        if fs::version_here(&file).is_some() {
            anything = true;
            if fs::is_file(&file) {
                found.push(file);
            }
        }
    }
    let Ok(mut bare) = BARE.lock() else { return found };
    bare.retain(|(bare, _)| bare != root);
    if let Some(versions) = versions
        && !anything
        && versions.iter().all(|version| version.settled_before(now, settled))
    {
        if bare.len() >= ROOTS {
            bare.remove(0);
        }
        bare.push((root.to_path_buf(), versions));
    }
    found
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Sets `dir`'s modification time back to `when`.
    fn set_mtime(dir: &Path, when: SystemTime) {
        std::fs::File::open(dir).unwrap().set_modified(when).unwrap();
    }

    fn remembered(root: &Path) -> bool {
        BARE.lock().unwrap().iter().any(|(bare, _)| bare == root)
    }

    #[test]
    fn a_file_created_above_is_found_even_with_the_old_modification_time() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("above/root");
        std::fs::create_dir_all(&root).unwrap();
        let above = root.parent().unwrap().to_path_buf();
        let old = SystemTime::now() - Duration::from_secs(60);
        set_mtime(&above, old);
        // Nothing above: remembered (every directory changed before now).
        assert!(look(&root, Duration::ZERO).is_empty());
        assert!(remembered(&root));
        assert!(look(&root, Duration::ZERO).is_empty());
        // A `.gitignore` appears, and the directory's modification time is put back: its change
        // time still differs.
        std::fs::write(above.join(".gitignore"), "*.log\n").unwrap();
        set_mtime(&above, old);
        assert_eq!(look(&root, Duration::ZERO), [above.join(".gitignore")]);
        assert!(!remembered(&root), "a root with an ignore file above is looked at every time");
        // A `.git` directory above: its `info/exclude` is found, and nothing is remembered.
        std::fs::remove_file(above.join(".gitignore")).unwrap();
        std::fs::create_dir_all(above.join(".git/info")).unwrap();
        assert_eq!(look(&root, Duration::ZERO), Vec::<PathBuf>::new());
        std::fs::write(above.join(".git/info/exclude"), "x\n").unwrap();
        assert_eq!(look(&root, Duration::ZERO), [above.join(".git/info/exclude")]);
    }

    #[test]
    fn recently_changed_directories_are_not_remembered() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("fresh");
        std::fs::create_dir_all(&root).unwrap();
        assert!(look(&root, Duration::from_secs(3600)).is_empty());
        assert!(!remembered(&root));
    }
}
