//! Ignore files already parsed, kept by the version of the file they were read from: building
//! a `Gitignore` compiles its patterns (a 30-line `.gitignore` costs about 1.2 million
//! instructions, six times the rest of a small `list_dir`), and a project's ignore files are
//! read on every walk but change rarely. A file changed since is parsed again; one changed
//! within the last [`SETTLED`] is parsed every time, as a change in the same clock tick could
//! leave its version as it was.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, SystemTime};

use ignore::gitignore::Gitignore;

use crate::handle::Version;

/// How long before a read the file must have last changed for its rules to be kept.
const SETTLED: Duration = Duration::from_secs(2);

/// Ignore files kept at most (the least recently used goes first).
const KEPT: usize = 64;

/// What one ignore file is kept as: its patterns compiled, rooted where they were.
struct Entry {
    /// The directory its patterns are rooted at.
    rooted: PathBuf,
    version: Version,
    rules: Arc<Gitignore>,
    /// When it was last used, on [`Kept::clock`].
    used: u64,
}

/// Kept rules, by the ignore file's path (one rooting each: a file read rooted elsewhere
/// replaces it).
#[derive(Default)]
struct Kept {
    entries: HashMap<PathBuf, Entry>,
    clock: u64,
}

/// A bounded store of parsed ignore files.
#[derive(Default)]
struct Cache(Mutex<Kept>);

/// The server's store.
static CACHE: LazyLock<Cache> = LazyLock::new(Cache::default);

/// The rules of the ignore `file` rooted at `rooted`, whose version is `version` now: the
/// kept ones if that version was seen, else `parse`'s (kept when the file has settled).
/// `None` when `parse` has none (an unreadable file).
pub(super) fn rules(
    file: &Path,
    rooted: &Path,
    version: Version,
    parse: impl FnOnce() -> Option<Gitignore>,
) -> Option<Arc<Gitignore>> {
    CACHE.rules(file, rooted, version, SETTLED, parse)
}

impl Cache {
    /// [`rules`], keeping only files last changed `settled` before the read. The patterns are
    /// parsed outside the lock: two walks may both parse a file new to the store.
    fn rules(
        &self,
        file: &Path,
        rooted: &Path,
        version: Version,
        settled: Duration,
        parse: impl FnOnce() -> Option<Gitignore>,
    ) -> Option<Arc<Gitignore>> {
        if let Ok(mut kept) = self.0.lock() {
            kept.clock += 1;
            let clock = kept.clock;
            if let Some(entry) = kept.entries.get_mut(file)
                && entry.version == version
                && entry.rooted == rooted
            {
                entry.used = clock;
                return Some(Arc::clone(&entry.rules));
            }
        }
        let now = SystemTime::now();
        let rules = Arc::new(parse()?);
        if version.settled_before(now, settled)
            && let Ok(mut kept) = self.0.lock()
        {
            if kept.entries.len() >= KEPT && !kept.entries.contains_key(file) {
                let oldest = kept.entries.iter().min_by_key(|(_, entry)| entry.used).map(|(path, _)| path.clone());
                if let Some(oldest) = oldest {
                    kept.entries.remove(&oldest);
                }
            }
            let entry = Entry { rooted: rooted.to_path_buf(), version, rules: Arc::clone(&rules), used: kept.clock };
            kept.entries.insert(file.to_path_buf(), entry);
        }
        Some(rules)
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use ignore::gitignore::GitignoreBuilder;

    fn version(file: &Path) -> Version {
        Version::of(&std::fs::metadata(file).unwrap())
    }

    /// The rules of `file` through the cache (kept at once when `settled` is zero), and how
    /// many times it was parsed (0 or 1).
    fn read(cache: &Cache, file: &Path, settled: Duration) -> (Arc<Gitignore>, usize) {
        let dir = file.parent().unwrap();
        let mut parsed = 0;
        let rules = cache.rules(file, dir, version(file), settled, || {
            parsed += 1;
            let mut builder = GitignoreBuilder::new(dir);
            builder.add(file);
            builder.build().ok()
        });
        (rules.unwrap(), parsed)
    }

    fn ignores(rules: &Gitignore, dir: &Path, name: &str) -> bool {
        rules.matched(dir.join(name), false).is_ignore()
    }

    #[test]
    fn a_file_is_parsed_once_until_it_changes_even_to_the_same_size_and_time() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::default();
        let dir = tmp.path();
        let file = dir.join(".gitignore");
        std::fs::write(&file, "*.log\n").unwrap();
        let (first, parsed) = read(&cache, &file, Duration::ZERO);
        assert_eq!(parsed, 1);
        assert!(ignores(&first, dir, "a.log"));
        let (again, parsed) = read(&cache, &file, Duration::ZERO);
        assert_eq!(parsed, 0, "the kept rules are used");
        assert!(Arc::ptr_eq(&first, &again));
        // The same size, the old modification time put back: the change time still differs.
        let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::fs::write(&file, "*.tmp\n").unwrap();
        std::fs::File::options().write(true).open(&file).unwrap().set_modified(mtime).unwrap();
        let (changed, parsed) = read(&cache, &file, Duration::ZERO);
        assert_eq!(parsed, 1);
        assert!(ignores(&changed, dir, "a.tmp") && !ignores(&changed, dir, "a.log"));
    }

    #[test]
    fn a_file_changed_just_now_is_parsed_every_time() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::default();
        let file = tmp.path().join(".ignore");
        std::fs::write(&file, "build/\n").unwrap();
        assert_eq!(read(&cache, &file, Duration::from_secs(3600)).1, 1);
        assert_eq!(read(&cache, &file, Duration::from_secs(3600)).1, 1, "not kept: it may change unseen");
    }

    #[test]
    fn the_same_file_rooted_elsewhere_gets_rules_rooted_there() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::default();
        let file = tmp.path().join("exclude");
        std::fs::write(&file, "/top\n").unwrap();
        let parse = |root: &Path| {
            let mut builder = GitignoreBuilder::new(root);
            builder.add(&file);
            builder.build().ok()
        };
        let (one, two) = (tmp.path().join("one"), tmp.path().join("two"));
        for root in [&one, &two, &one] {
            let rules = cache.rules(&file, root, version(&file), Duration::ZERO, || parse(root)).unwrap();
            assert!(rules.matched(root.join("top"), false).is_ignore(), "rooted at `{}`", root.display());
        }
    }

    #[test]
    fn no_more_than_the_bound_is_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::default();
        for n in 0..KEPT + 8 {
            let file = tmp.path().join(format!("{n}.gitignore"));
            std::fs::write(&file, "x\n").unwrap();
            read(&cache, &file, Duration::ZERO);
        }
        let kept = cache.0.lock().unwrap().entries.len();
        assert!(kept <= KEPT, "{kept} kept");
        // The most recent is still there.
        let last = tmp.path().join(format!("{}.gitignore", KEPT + 7));
        assert_eq!(read(&cache, &last, Duration::ZERO).1, 0);
    }
}
