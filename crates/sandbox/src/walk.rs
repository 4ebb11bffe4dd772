//! Directory walking for list, glob and grep: the `ignore` walker configured once, so every
//! operation skips the same things and never follows a symlink out of a root.

use std::path::Path;

use ignore::WalkBuilder;

use crate::Error;
use crate::{Resolved, fs};

mod above;
mod excludes;
#[cfg(target_os = "linux")]
pub mod listing;
#[cfg(target_os = "linux")]
mod parsed;
#[cfg(target_os = "linux")]
mod worker;

/// What a walk includes.
#[derive(Debug, Clone)]
pub struct WalkOptions {
    /// Include dot-files and dot-directories (`.git` itself is always skipped).
    pub include_hidden: bool,
    /// Honour `.gitignore`, `.ignore`, `.git/info/exclude` and the global git excludes,
    /// whether or not the tree is a git repository.
    pub respect_gitignore: bool,
    /// Deepest level to descend to (1 = the directory's own entries).
    pub max_depth: Option<usize>,
    /// Paths left out with all they hold: what is hidden from the agent (`deny_read`, the
    /// server's own state and secrets), so a search never shows what `read_file` refuses.
    pub hidden: std::sync::Arc<[std::path::PathBuf]>,
}

impl WalkOptions {
    /// Options from an operation's optional flags: hidden entries skipped and ignore files
    /// honoured unless the call says otherwise.
    pub fn new(include_hidden: Option<bool>, respect_gitignore: Option<bool>, max_depth: Option<usize>) -> Self {
        Self {
            include_hidden: include_hidden.unwrap_or(false),
            respect_gitignore: respect_gitignore.unwrap_or(true),
            max_depth,
            hidden: std::sync::Arc::from(Vec::new()),
        }
    }

    /// The same, leaving out `hidden` and all it holds.
    pub fn hiding(mut self, hidden: Vec<std::path::PathBuf>) -> Self {
        self.hidden = std::sync::Arc::from(hidden);
        self
    }

    /// Whether `path` is left out.
    pub fn hides(&self, path: &std::path::Path) -> bool {
        self.hidden.iter().any(|hidden| path.starts_with(hidden))
    }
}

/// A walker over a confined directory: symlinks are reported, never followed.
pub fn builder(dir: &Resolved, options: WalkOptions) -> WalkBuilder {
    let mut builder = WalkBuilder::new(dir.real());
    let respect = options.respect_gitignore;
    let hidden = options.hidden.clone();
    builder
        .hidden(!options.include_hidden)
        .ignore(respect)
        .git_ignore(respect)
        // The global excludes are added below, found without re-reading git's config files.
        .git_global(false)
        .git_exclude(respect)
        .parents(respect)
        .require_git(false)
        .follow_links(false)
        .max_depth(options.max_depth)
        .filter_entry(move |entry| entry.file_name() != ".git" && !hidden.iter().any(|h| entry.path().starts_with(h)));
    // What `git_global` does (the same matcher: `ignore` roots both at the current directory,
    // and with `require_git(false)` both apply everywhere, after every other ignore file).
    if respect && let Some(global) = excludes::path().filter(|file| fs::is_file(file)) {
        // An unreadable or malformed file is skipped, as `git_global` skips it.
        let _ = builder.add_ignore(global);
    }
    builder
}

/// Runs `work` on a thread of its own whose reads, and those of every thread it starts (the
/// parallel walker's), the kernel confines (Landlock) to `walked`'s root and the ignore files
/// above it: a directory swapped for a symlink mid-walk then reads as unreadable instead of
/// listing what it points to. Without Landlock the walk runs unconfined and the visitors below
/// re-check each entry instead (file contents are opened beneath the root anyway:
/// [`fs::walk_root`]). A new thread each time, as `work` borrows from the caller; see
/// [`confined_kept`] for work that owns what it uses.
pub fn confined<T: Send>(walked: &Resolved, work: impl FnOnce() -> T + Send) -> Result<T, Error> {
    let root = walked.root();
    let above = above::ignore_files(root);
    #[cfg(target_os = "linux")]
    {
        let outcome = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    crate::landlock::restrict_reads(&[root], &above).map_err(|err| {
                        Error::Internal(format!("cannot confine the walk to `{}`: {err}", root.display()))
                    })?;
                    Ok(work())
                })
                .join()
        });
        outcome.unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    }
    // No kernel confinement of one thread's reads here: `Recheck` does the work.
    #[cfg(not(target_os = "linux"))]
    {
        let _ = above;
        Ok(work())
    }
}

/// [`confined`] for work that owns what it uses, awaited: it runs on a confined thread kept
/// from an earlier walk of the same root (when the root and the ignore files above it are still
/// the same files), so a small listing pays neither a thread nor a ruleset, and the async
/// thread hands it over directly. Without Landlock it runs on a blocking thread.
async fn confined_kept<T: Send + 'static>(
    walked: &Resolved,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, Error> {
    #[cfg(target_os = "linux")]
    if crate::backend::confines_walks() {
        let root = walked.root();
        let above = above::ignore_files(root);
        let inodes =
            std::iter::once(root).chain(above.iter().map(std::path::PathBuf::as_path)).map(fs::inode).collect();
        let confinement = worker::Confinement { root: root.to_path_buf(), above, inodes };
        return worker::run(confinement, work)
            .await
            .map_err(|err| Error::Internal(format!("cannot confine the walk to `{}`: {err}", root.display())));
    }
    let _ = walked;
    tokio::task::spawn_blocking(work).await.map_err(|err| Error::Internal(format!("the walk failed: {err}")))
}

/// Where the kernel cannot confine a walk ([`confined`]: no Landlock), each entry is checked
/// beneath the root before it is passed on, so a name listed through a directory swapped for
/// a symlink is dropped (it is not there beneath the root).
struct Recheck(Option<crate::beneath::Root>);

impl Recheck {
    fn new(walked: &Resolved) -> Result<Self, Error> {
        if crate::backend::confines_walks() {
            return Ok(Self(None));
        }
        let root = fs::walk_root(walked).map_err(|e| Error::io("walk", walked.shown(), e))?;
        Ok(Self(Some(root)))
    }

    fn keeps(&self, entry: &ignore::DirEntry) -> bool {
        self.0.as_ref().is_none_or(|root| entry.depth() == 0 || root.symlink_metadata(entry.path()).is_ok())
    }
}

/// Visits the entries of a walk of `walked` in its order (`builder`'s sort), confined to its
/// root, until `stop` says so (then `Cancelled`), passing each to `visit` with `state`, which
/// is returned at the end; an entry that could not be read is passed as `Err`.
pub async fn visit_in_order<S: Send + 'static>(
    walked: &Resolved,
    builder: &WalkBuilder,
    stop: impl Fn() -> bool + Send + 'static,
    state: S,
    visit: impl Fn(&mut S, Result<&ignore::DirEntry, &ignore::Error>) + Send + 'static,
) -> Result<S, Error> {
    let recheck = Recheck::new(walked)?;
    // Built here, unconfined: building reads the global git excludes (`core.excludesFile`).
    let walk = builder.build();
    let (state, stopped) = confined_kept(walked, move || {
        let mut state = state;
        for entry in walk {
            if stop() {
                return (state, true);
            }
            match &entry {
                Ok(entry) if !recheck.keeps(entry) => {}
                Ok(entry) => visit(&mut state, Ok(entry)),
                Err(err) => visit(&mut state, Err(err)),
            }
        }
        (state, stop())
    })
    .await?;
    if stopped { Err(Error::Cancelled) } else { Ok(state) }
}

/// An entry a walk found, as the visitors of [`visit_parallel`] see it.
pub struct Found<'a> {
    /// The walked path joined with the names down to it.
    pub path: &'a Path,
    /// 0 for the walked path itself, 1 for a directory's own entries.
    pub depth: usize,
    /// Whether it is a regular file (a symlink is not followed).
    pub is_file: bool,
}

/// What a walk of a few entries found on the calling thread: each entry's path, depth and
/// whether it is a file, and how many directories could not be read; `None` when it has more
/// than `budget` entries, or something only `ignore`'s walker handles (see [`listing`]).
#[cfg(target_os = "linux")]
type Few = Option<(Vec<(std::path::PathBuf, usize, bool)>, u64)>;

/// The entries of `walked` (a directory or a file beneath `root`) when they are few: walked
/// from directory handles on this thread, as `ignore`'s walker would keep them.
#[cfg(target_os = "linux")]
fn few(
    walked: &Resolved,
    root: &crate::beneath::Root,
    options: WalkOptions,
    budget: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Few, Error> {
    let meta = root.symlink_metadata(walked.real()).map_err(|e| Error::io("walk", walked.shown(), e))?;
    if !meta.is_dir() {
        // `ignore`'s walker yields a file it is given, whatever the ignore files say.
        return Ok(Some((vec![(walked.real().to_path_buf(), 0, meta.is_file())], 0)));
    }
    let (mut found, mut errors) = (Vec::new(), 0);
    let outcome = listing::walk(root, walked, options, Some(budget), stop, &mut |met| match met {
        Ok(met) => found.push((met.path.to_path_buf(), met.depth, met.kind == crate::handle::Kind::File)),
        Err(()) => errors += 1,
    });
    match outcome {
        Ok(()) => Ok(Some((found, errors))),
        Err(listing::Declined::Stopped) => Err(Error::Cancelled),
        Err(listing::Declined::Larger | listing::Declined::Unusual(_)) => Ok(None),
    }
}

/// Threads for parallel walks: one per core, like ripgrep, capped at 12.
pub fn threads() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get().min(12))
}

/// Visits every entry of a walk of `walked` (held open as `root`) with `options`, until `stop` says so (the call was
/// cancelled: then `Cancelled`). A walk of at most `few` entries (Linux) runs on this thread
/// from directory handles: `ignore`'s parallel walker costs a millisecond more (its threads, the
/// confinement, and a 1 ms sleep of an idle thread before the walk can end). A larger one runs
/// on several threads, confined to the root. Each thread gets its own state from `make` (a
/// buffer, a searcher), passed to `visit` for each entry; the states are returned when the walk
/// ends. Walk errors (unreadable directories) are counted, not fatal.
pub fn visit_parallel<S, M, F>(
    walked: &Resolved,
    root: &crate::beneath::Root,
    options: WalkOptions,
    few: usize,
    stop: &(dyn Fn() -> bool + Sync),
    make: M,
    visit: F,
) -> Result<(Vec<S>, u64), Error>
where
    S: Send,
    M: Fn() -> S + Sync,
    F: Fn(&Found<'_>, &mut S) + Sync,
{
    use ignore::{ParallelVisitor, ParallelVisitorBuilder, WalkState};
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Shared<'a, S, M, F> {
        make: &'a M,
        visit: &'a F,
        stop: &'a (dyn Fn() -> bool + Sync),
        recheck: Recheck,
        states: Mutex<Vec<S>>,
        errors: AtomicU64,
    }
    struct Visitor<'s, 'a, S, M, F> {
        shared: &'s Shared<'a, S, M, F>,
        state: Option<S>,
    }
    impl<S: Send, M: Sync, F: Fn(&Found<'_>, &mut S) + Sync> ParallelVisitor for Visitor<'_, '_, S, M, F> {
        fn visit(&mut self, entry: Result<ignore::DirEntry, ignore::Error>) -> WalkState {
            if (self.shared.stop)() {
                return WalkState::Quit;
            }
            match (entry, self.state.as_mut()) {
                (Ok(entry), Some(state)) if self.shared.recheck.keeps(&entry) => {
                    let is_file = entry.file_type().is_some_and(|t| t.is_file());
                    (self.shared.visit)(&Found { path: entry.path(), depth: entry.depth(), is_file }, state)
                }
                (Ok(_), Some(_)) => {}
                _ => {
                    self.shared.errors.fetch_add(1, Ordering::Relaxed);
                }
            }
            WalkState::Continue
        }
    }
    impl<S, M, F> Drop for Visitor<'_, '_, S, M, F> {
        fn drop(&mut self) {
            if let (Some(state), Ok(mut states)) = (self.state.take(), self.shared.states.lock()) {
                states.push(state);
            }
        }
    }
    impl<'s, S: Send, M: Fn() -> S + Sync, F: Fn(&Found<'_>, &mut S) + Sync> ParallelVisitorBuilder<'s>
        for &'s Shared<'_, S, M, F>
    {
        fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
            Box::new(Visitor { shared: *self, state: Some((self.make)()) })
        }
    }

    #[cfg(target_os = "linux")]
    if let Some((found, errors)) = self::few(walked, root, options.clone(), few, stop)? {
        let mut state = make();
        for (path, depth, is_file) in &found {
            if stop() {
                return Err(Error::Cancelled);
            }
            visit(&Found { path, depth: *depth, is_file: *is_file }, &mut state);
        }
        return Ok((vec![state], errors));
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (root, few);
    let recheck = Recheck::new(walked)?;
    let shared =
        Shared { make: &make, visit: &visit, stop, recheck, states: Mutex::new(Vec::new()), errors: AtomicU64::new(0) };
    // Built here, unconfined: building reads the global git excludes (`core.excludesFile`).
    let walk = builder(walked, options).threads(threads()).build_parallel();
    confined(walked, || walk.visit(&mut &shared))?;
    if stop() {
        return Err(Error::Cancelled);
    }
    let errors = shared.errors.load(Ordering::Relaxed);
    Ok((shared.states.into_inner().unwrap_or_default(), errors))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::Roots;

    /// The names an in-order walk of `root` lists, ignore files honoured.
    fn names(root: &std::path::Path) -> Vec<String> {
        let walked = Roots::new(vec![root.to_path_buf()]).resolve(".").unwrap();
        let builder = builder(&walked, WalkOptions::new(None, None, Some(1)));
        let visit = |names: &mut Vec<String>, entry: Result<&ignore::DirEntry, &ignore::Error>| match entry {
            Ok(entry) if entry.depth() > 0 => names.push(entry.file_name().to_string_lossy().into_owned()),
            Ok(_) => {}
            Err(err) => names.push(format!("error: {err}")),
        };
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let mut names = runtime.block_on(visit_in_order(&walked, &builder, || false, Vec::new(), visit)).unwrap();
        names.sort();
        names
    }

    #[test]
    fn a_kept_walker_sees_an_ignore_file_saved_anew_and_a_root_made_again() {
        let tmp = tempfile::tempdir().unwrap();
        let parent = tmp.path().canonicalize().unwrap();
        let root = parent.join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("a.txt"), "a").unwrap();
        std::fs::write(root.join("b.txt"), "b").unwrap();
        std::fs::write(parent.join(".gitignore"), "a.txt\n").unwrap();
        assert_eq!(names(&root), ["b.txt"]);
        // Saved the way editors do: a new file renamed over the old one (another inode).
        std::fs::write(parent.join(".gitignore.new"), "b.txt\n").unwrap();
        std::fs::rename(parent.join(".gitignore.new"), parent.join(".gitignore")).unwrap();
        assert_eq!(names(&root), ["a.txt"]);
        // The root itself made again at the same path.
        std::fs::rename(&root, parent.join("old-root")).unwrap();
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join("c.txt"), "c").unwrap();
        assert_eq!(names(&root), ["c.txt"]);
    }
}
