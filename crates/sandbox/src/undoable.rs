//! What a command changed under the roots, in the form `undo` needs, whichever mechanism saw
//! it: a staging layer's fold (Linux) or a shadow copy compared before and after (macOS, and
//! Linux without staging). Build output and dependencies (git-ignored paths) are left out
//! unless asked for; the rules for telling them are here too.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::handle::DirHandle;
use crate::protected::view::read_at;

/// Entries of a tree recorded at most (a removed or created tree larger is left out).
pub const MAX_TREE_ENTRIES: usize = 20_000;

/// A command whose writes are recorded: its line and when it started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The command line, as the model wrote it.
    pub line: String,
    /// When it started.
    pub started: std::time::SystemTime,
}

/// One change a command made, with what undo needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Undoable {
    /// A directory made (empty when undone, it is removed).
    MadeDir(PathBuf),
    /// A regular file made; `sha256` of its content now.
    Created {
        /// The path (absolute).
        path: PathBuf,
        /// The hash of what it holds now.
        sha256: String,
    },
    /// A symlink made.
    CreatedLink {
        /// The path (absolute).
        path: PathBuf,
        /// Where it points.
        target: PathBuf,
    },
    /// A regular file rewritten.
    Modified {
        /// The path (absolute).
        path: PathBuf,
        /// What it held.
        before: Vec<u8>,
        /// Its permission bits before.
        mode: u32,
        /// The hash of what it holds now.
        sha256: String,
    },
    /// A regular file removed.
    Removed {
        /// The path (absolute).
        path: PathBuf,
        /// What it held.
        before: Vec<u8>,
        /// Its permission bits.
        mode: u32,
    },
    /// A directory tree (or a lone symlink) removed.
    RemovedTree {
        /// The path (absolute).
        path: PathBuf,
        /// Its directories, outermost first (itself included when it was one).
        dirs: Vec<PathBuf>,
        /// Its files with their content and permission bits.
        files: Vec<(PathBuf, Vec<u8>, u32)>,
        /// Its symlinks and their targets.
        links: Vec<(PathBuf, PathBuf)>,
    },
}

impl Undoable {
    /// The path it changed (absolute).
    pub fn path(&self) -> &Path {
        match self {
            Self::MadeDir(path)
            | Self::Created { path, .. }
            | Self::CreatedLink { path, .. }
            | Self::Modified { path, .. }
            | Self::Removed { path, .. }
            | Self::RemovedTree { path, .. } => path,
        }
    }

    /// Bytes of old content it keeps.
    pub fn bytes(&self) -> u64 {
        match self {
            Self::Modified { before, .. } | Self::Removed { before, .. } => before.len() as u64,
            Self::RemovedTree { files, .. } => files.iter().map(|(_, b, _)| b.len() as u64).sum(),
            Self::MadeDir(_) | Self::Created { .. } | Self::CreatedLink { .. } => 0,
        }
    }
}

/// What a fold's record holds.
#[derive(Debug, Default)]
pub struct Recorded {
    /// The changes, in the order undo must see them (directories before what they hold).
    pub changes: Vec<Undoable>,
    /// Changes left out because they lie in git-ignored paths (build output, dependencies).
    pub ignored: usize,
    /// Changes left out because they lie in a git dir (git's own history).
    pub in_git_dirs: usize,
    /// Changes that cannot be recorded (what they are, and why).
    pub left_out: Vec<String>,
    /// Whether the old content was more than the cap: nothing is recorded then.
    pub too_large: bool,
    /// The command that made the changes, and when it started.
    pub command: Option<Command>,
}

/// Each root's git-ignore rules, read as they are met (`.gitignore` in each directory on the
/// way, the repository's `info/exclude`).
#[derive(Default)]
pub struct Ignores {
    by_dir: HashMap<PathBuf, Option<ignore::gitignore::Gitignore>>,
}

impl Ignores {
    /// Whether `rel` (beneath `root`) is git-ignored, by a `.gitignore` above it.
    pub fn ignored(&mut self, root: &Path, rel: &Path, is_dir: bool) -> bool {
        let mut dirs: Vec<&Path> = rel.ancestors().skip(1).collect();
        dirs.reverse();
        for dir in dirs {
            let rules = self.by_dir.entry(root.join(dir)).or_insert_with(|| rules_in(root, dir));
            if let Some(rules) = rules
                && let Ok(inner) = rel.strip_prefix(dir)
                && rules.matched_path_or_any_parents(inner, is_dir).is_ignore()
            {
                return true;
            }
        }
        false
    }
}

/// The rules of `dir`'s `.gitignore` (and, at a repository's top, its `info/exclude`).
fn rules_in(root: &Path, dir: &Path) -> Option<ignore::gitignore::Gitignore> {
    let real = DirHandle::open(root).ok()?;
    let mut builder = ignore::gitignore::GitignoreBuilder::new(root.join(dir));
    let mut any = false;
    for file in [dir.join(".gitignore"), dir.join(".git/info/exclude")] {
        if let Some(bytes) = read_at(&real, &file, 1 << 20) {
            for line in String::from_utf8_lossy(&bytes).lines() {
                any |= builder.add_line(None, line).is_ok();
            }
        }
    }
    any.then(|| builder.build().ok()).flatten()
}
