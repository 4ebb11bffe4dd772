//! Small listings walked from directory handles (Linux): a directory's entries and those of its
//! subdirectories a few levels down, each directory opened beneath the root from its parent's
//! handle, with the rules of `ignore`'s walker as [`super::builder`] sets it up (hidden names,
//! `.git`, `.ignore`, `.gitignore`, `.git/info/exclude` and the global excludes, whether or
//! not the tree is a repository). `ignore`'s walker probes four names in every directory and
//! every directory above the walked one on each walk; this reads which ignore files a
//! directory holds from its entries. Anything it does not do the way `ignore` does is declined
//! (a `.git` file, an ignore file that is a symlink), and the caller walks with `ignore`
//! instead; a walk can also be given a budget of entries, to be run again elsewhere past it.

use std::ffi::OsStr;
use std::io::BufRead;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::{WalkOptions, above, excludes, parsed};
use crate::beneath::Root;
use crate::handle::{DirHandle, Kind, Version};
use crate::{Resolved, fs};

/// An entry met by [`walk`].
pub struct Met<'a> {
    /// The walked directory's real path joined with the names down to this entry.
    pub path: &'a Path,
    /// 1 for the walked directory's own entries.
    pub depth: usize,
    /// What it is (a symlink is not followed).
    pub kind: Kind,
    /// The directory it is in, open beneath the root.
    pub dir: &'a DirHandle,
    /// Its name in `dir`.
    pub name: &'a OsStr,
}

/// Why a listing walk did not finish.
#[derive(Debug, PartialEq, Eq)]
pub enum Declined {
    /// It read more entries than its budget, or went more than [`DEEPEST`] levels down.
    Larger,
    /// It met something only `ignore`'s walker handles (what, in words).
    Unusual(&'static str),
    /// `stop` said so (the call was cancelled).
    Stopped,
}

/// Levels a walk goes down before it is declined as [`Declined::Larger`]: each level keeps its
/// directory open, and `ignore`'s walker keeps none.
const DEEPEST: usize = 64;

/// The names of ignore files a directory may hold, in the order [`Rules`] keeps them.
const NAMES: [&[u8]; 3] = [b".ignore", b".gitignore", b".git"];

/// The rules one directory adds: its `.ignore`, its `.gitignore` and, when it holds a `.git`
/// directory, `.git/info/exclude`. `None` where there is no such file.
#[derive(Default)]
struct Rules([Option<Arc<Gitignore>>; 3]);

/// A walk in progress.
struct Walk<'v> {
    options: WalkOptions,
    /// Deepest level listed (the walked directory's entries are level 1).
    max_depth: usize,
    /// The rules of the walked directory and of each directory below it being walked.
    chain: Vec<Rules>,
    /// The rules of the directories above the walked one, up to `/`, nearest first.
    outer: Vec<Rules>,
    /// The global excludes (`core.excludesFile`), rooted where `ignore` roots them.
    global: Option<Arc<Gitignore>>,
    /// Entries left to read before the walk is declined as [`Declined::Larger`].
    left: usize,
    stop: &'v dyn Fn() -> bool,
    visit: &'v mut dyn FnMut(Result<Met<'_>, ()>),
}

/// Walks `walked` (a directory beneath `root`'s path) down to `options.max_depth` levels
/// (all when `None`), in the order of `ignore`'s walker sorted by file name, passing each entry it
/// keeps to `visit`, and `Err(())` for each directory that could not be read. A directory's
/// entries count against `budget` as it is read; `stop` is asked before each directory. A
/// walk that does not finish may have visited some entries: the caller starts again.
pub fn walk(
    root: &Root,
    walked: &Resolved,
    options: WalkOptions,
    budget: Option<usize>,
    stop: &dyn Fn() -> bool,
    visit: &mut dyn FnMut(Result<Met<'_>, ()>),
) -> Result<(), Declined> {
    let (outer, global) =
        if options.respect_gitignore { (outer_rules(root, walked)?, global_rules()) } else { (Vec::new(), None) };
    let top = root.open_dir_at(walked.real()).map_err(|_| Declined::Unusual("the directory cannot be opened"))?;
    // Only hidden paths beneath the walked directory (or above it) can hide an entry: the
    // rest are not compared with every entry.
    let mut options = options;
    let here = walked.real();
    let hidden: Vec<_> =
        options.hidden.iter().filter(|h| h.starts_with(here) || here.starts_with(h)).cloned().collect();
    options.hidden = std::sync::Arc::from(hidden);
    let max_depth = options.max_depth.unwrap_or(usize::MAX);
    let left = budget.unwrap_or(usize::MAX);
    let mut walk = Walk { options, max_depth, chain: Vec::new(), outer, global, left, stop, visit };
    walk.directory(&top, walked.real(), 1)
}

impl Walk<'_> {
    /// Visits the entries of the directory `handle` at `path`, at level `depth`, and below.
    fn directory(&mut self, handle: &DirHandle, path: &Path, depth: usize) -> Result<(), Declined> {
        if (self.stop)() {
            return Err(Declined::Stopped);
        }
        if depth > DEEPEST {
            return Err(Declined::Larger);
        }
        let Ok(mut entries) = handle.typed_entries() else {
            (self.visit)(Err(()));
            return Ok(());
        };
        self.left = self.left.checked_sub(entries.len()).ok_or(Declined::Larger)?;
        entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        let rules = if self.options.respect_gitignore {
            let kinds = NAMES.map(|name| {
                let found = entries.binary_search_by(|(n, _)| n.as_bytes().cmp(name));
                found.ok().map(|at| entries[at].1)
            });
            rules_of(handle, path, kinds)?
        } else {
            Rules::default()
        };
        self.chain.push(rules);
        let outcome = self.entries(handle, path, depth, &entries);
        self.chain.pop();
        outcome
    }

    /// Visits `entries` (sorted) of the directory `handle` at `path`, at level `depth`, and
    /// what is below those that are directories.
    fn entries(
        &mut self,
        handle: &DirHandle,
        path: &Path,
        depth: usize,
        entries: &[(std::ffi::OsString, Kind)],
    ) -> Result<(), Declined> {
        for (name, kind) in entries {
            let entry = path.join(name);
            if !self.keeps(name, &entry, *kind) {
                continue;
            }
            (self.visit)(Ok(Met { path: &entry, depth, kind: *kind, dir: handle, name }));
            if *kind == Kind::Dir && depth < self.max_depth {
                match handle.open_dir(name) {
                    Ok(sub) => self.directory(&sub, &entry, depth + 1)?,
                    Err(_) => (self.visit)(Err(())),
                }
            }
        }
        Ok(())
    }

    /// Whether the walk keeps the entry `name` at `path`: what `ignore`'s `matched_dir_entry`
    /// and the builder's `.git` filter say.
    fn keeps(&self, name: &OsStr, path: &Path, kind: Kind) -> bool {
        if name == ".git" || self.options.hides(path) {
            return false;
        }
        let matched = if self.options.respect_gitignore { self.matched(path, kind == Kind::Dir) } else { Match::None };
        if matched.is_ignore() {
            return false;
        }
        !(matched.is_none() && !self.options.include_hidden && name.as_bytes().starts_with(b"."))
    }

    /// `ignore`'s `matched_ignore` without git required: for each kind of file, the rules of the
    /// deepest directory that has a say, then `.ignore` over `.gitignore` over
    /// `.git/info/exclude` over the global excludes.
    fn matched(&self, path: &Path, is_dir: bool) -> Match<()> {
        let mut found = [Match::None, Match::None, Match::None];
        for rules in self.chain.iter().rev().chain(&self.outer) {
            for (found, rules) in found.iter_mut().zip(&rules.0) {
                if found.is_none()
                    && let Some(rules) = rules
                {
                    *found = rules.matched(path, is_dir).map(|_| ());
                }
            }
        }
        let global = self.global.as_ref().map_or(Match::None, |rules| rules.matched(path, is_dir).map(|_| ()));
        let [ignore, git, exclude] = found;
        ignore.or(git).or(exclude).or(global)
    }
}

/// The rules of the directories from the walked one's parent up to `/`, nearest first.
fn outer_rules(root: &Root, walked: &Resolved) -> Result<Vec<Rules>, Declined> {
    let mut outer = Vec::new();
    for dir in walked.real().ancestors().skip(1).take_while(|dir| dir.starts_with(walked.root())) {
        let handle = root.open_dir_at(dir).map_err(|_| Declined::Unusual("a directory above cannot be opened"))?;
        let [ignore, git, dot_git] = NAMES.map(|name| kind_of(&handle, OsStr::from_bytes(name)));
        let kinds = [ignore?, git?, dot_git?];
        outer.push(rules_of(&handle, dir, kinds)?);
    }
    // Above the root: the ignore files there that exist (following symlinks, as `ignore` reads
    // them, and as the confined walker thread may read them), read by path as `ignore` does.
    let above = above::ignore_files(walked.root());
    if !above.is_empty() {
        for dir in walked.root().ancestors().skip(1) {
            let rules = [".ignore", ".gitignore", ".git/info/exclude"].map(|name| {
                let file = dir.join(name);
                above.contains(&file).then(|| rules_at(dir, &file)).flatten()
            });
            outer.push(Rules(rules));
        }
    }
    Ok(outer)
}

/// The rules of the ignore file `file` above the root, relative to `dir`, as `ignore` builds
/// them (an unreadable file or line is skipped).
fn rules_at(dir: &Path, file: &Path) -> Option<Arc<Gitignore>> {
    parsed::rules(file, dir, fs::version(file)?, || {
        let mut builder = GitignoreBuilder::new(dir);
        let _ = builder.add(file);
        builder.build().ok()
    })
}

/// What is at `name` in `dir`, if anything; declined when that cannot be told.
fn kind_of(dir: &DirHandle, name: &OsStr) -> Result<Option<Kind>, Declined> {
    match dir.stat(name) {
        Ok(stat) => Ok(Some(stat.kind)),
        Err(err) if matches!(err.kind(), std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory) => Ok(None),
        Err(_) => Err(Declined::Unusual("an ignore file cannot be looked at")),
    }
}

/// The rules of the directory `dir` at `path`, which holds the [`NAMES`] of the kinds given.
fn rules_of(dir: &DirHandle, path: &Path, kinds: [Option<Kind>; 3]) -> Result<Rules, Declined> {
    let [ignore, git, dot_git] = kinds;
    let exclude = match dot_git {
        None => None,
        Some(Kind::Dir) => exclude_rules(dir, path)?,
        Some(_) => return Err(Declined::Unusual("a `.git` that is not a directory")),
    };
    let ignore = file_rules(dir, OsStr::new(".ignore"), ignore, path, &path.join(".ignore"))?;
    let git = file_rules(dir, OsStr::new(".gitignore"), git, path, &path.join(".gitignore"))?;
    Ok(Rules([ignore, git, exclude]))
}

/// The rules of `.git/info/exclude` in the directory `dir` at `path`, which holds a `.git`
/// directory: relative to `path`, as `ignore` reads them.
fn exclude_rules(dir: &DirHandle, path: &Path) -> Result<Option<Arc<Gitignore>>, Declined> {
    let Ok(git) = dir.open_dir(OsStr::new(".git")) else { return Ok(None) };
    let info = match kind_of(&git, OsStr::new("info"))? {
        Some(Kind::Dir) => git.open_dir(OsStr::new("info")).ok(),
        Some(Kind::Link) => return Err(Declined::Unusual("a symlinked `.git/info`")),
        _ => None,
    };
    let Some(info) = info else { return Ok(None) };
    let kind = kind_of(&info, OsStr::new("exclude"))?;
    file_rules(&info, OsStr::new("exclude"), kind, path, &path.join(".git/info/exclude"))
}

/// The rules of the ignore file `name` (of `kind`, if there) in `dir`, whose path is `file`,
/// with its patterns relative to `rooted`.
fn file_rules(
    dir: &DirHandle,
    name: &OsStr,
    kind: Option<Kind>,
    rooted: &Path,
    file: &Path,
) -> Result<Option<Arc<Gitignore>>, Declined> {
    match kind {
        None => Ok(None),
        // `ignore` reads a directory of that name as a file that fails: no rules.
        Some(Kind::Dir) => Ok(None),
        Some(Kind::File) => Ok(read_rules(dir, name, rooted, file)),
        Some(Kind::Link) => Err(Declined::Unusual("a symlinked ignore file")),
        // A FIFO, socket or device: `ignore` would wait on it for ever; it is read as empty.
        Some(Kind::Other) => Ok(None),
    }
}

/// The rules of the file `name` in `dir`, whose path is `file`, rooted at `rooted`: parsed
/// again only when the file changed since they were kept. `None` when it cannot be read
/// (`ignore` then has no rules from it either).
fn read_rules(dir: &DirHandle, name: &OsStr, rooted: &Path, file: &Path) -> Option<Arc<Gitignore>> {
    use std::io::Read;
    let mut opened = dir.open_read(name).ok()?;
    let version = Version::of(&opened.metadata().ok()?);
    parsed::rules(file, rooted, version, || {
        let mut text = Vec::new();
        opened.read_to_end(&mut text).ok()?;
        Some(parse(rooted, file, &text))
    })
}

/// A gitignore file's rules, rooted at `dir`, read line by line as `GitignoreBuilder::add`
/// reads them: a leading byte-order mark dropped, a malformed pattern skipped, and nothing
/// after a line that is not UTF-8.
fn parse(dir: &Path, file: &Path, text: &[u8]) -> Gitignore {
    let mut builder = GitignoreBuilder::new(dir);
    for (number, line) in text.lines().enumerate() {
        let Ok(line) = line else { break };
        let line = if number == 0 { line.trim_start_matches('\u{feff}') } else { &line };
        let _ = builder.add_line(Some(file.to_path_buf()), line);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// The global excludes file's rules, built as `WalkBuilder::add_ignore` builds them (rooted at
/// the current directory); none when there is no such file.
fn global_rules() -> Option<Arc<Gitignore>> {
    let file = excludes::path().filter(|file| fs::is_file(file))?;
    rules_at(&std::env::current_dir().ok()?, &file)
}

#[cfg(test)]
#[path = "listing_tests.rs"]
mod tests;
