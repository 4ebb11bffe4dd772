//! What a command changed under the roots, in the form `undo` needs, whichever mechanism saw
//! it: a staging layer's fold (Linux) or a shadow copy compared before and after (macOS, and
//! Linux without staging).

use std::path::{Path, PathBuf};

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
