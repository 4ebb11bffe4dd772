//! What went wrong in the sandbox, as facts: the path as given, what the kernel said, which
//! limit was met, in numbers. The sandbox words nothing for the model: `ToolError` (in
//! `error.rs`, which holds every message the model can see) turns each into its text and
//! next step.

use std::path::PathBuf;

/// A failure of the sandbox's path, walk or write layers.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path that lies outside every root.
    #[error("`{path}` is outside the roots ({roots})")]
    OutsideRoots {
        /// The path as given.
        path: String,
        /// The roots, comma separated.
        roots: String,
        /// The root that relative paths resolve against.
        first_root: String,
    },
    /// A path inside a root that leads outside through a symlink.
    #[error("`{path}` resolves through a symlink to `{}`, outside the roots", target.display())]
    SymlinkEscape {
        /// The path as given.
        path: String,
        /// Where it really points.
        target: PathBuf,
        /// The roots, comma separated.
        roots: String,
    },
    /// A write target that cannot be one.
    #[error("`{path}` {problem}")]
    BadTarget {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A write aimed at a symlink.
    #[error("`{path}` is a symlink to `{link}`")]
    SymlinkTarget {
        /// The path as given.
        path: String,
        /// The link's target text.
        link: String,
    },
    /// Something already exists where a new entry was to be made.
    #[error("`{path}` already exists ({what})")]
    AlreadyExists {
        /// The path.
        path: String,
        /// What is there.
        what: &'static str,
    },
    /// The file changed since the caller read it.
    #[error("`{path}` has sha256 {actual}, not {expected}")]
    StaleHash {
        /// The path.
        path: String,
        /// The hash the caller gave.
        expected: String,
        /// The current hash.
        actual: String,
    },
    /// Another process held the file's edit lock for the whole wait.
    #[error("`{path}` stayed locked for {seconds} s")]
    Locked {
        /// The path.
        path: String,
        /// How long the wait was.
        seconds: u64,
    },
    /// Nothing exists at the path.
    #[error("`{path}` does not exist")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// A directory where a file was needed.
    #[error("`{path}` is a directory")]
    IsADirectory {
        /// The path as given.
        path: String,
    },
    /// A file where a directory was needed.
    #[error("`{path}` is not a directory")]
    NotADirectory {
        /// The path as given.
        path: String,
    },
    /// Over a size limit: `size` when it is known, else only that it is over `limit`.
    #[error("`{path}` is over the {limit}-byte limit for {what}")]
    TooLarge {
        /// The path as given.
        path: String,
        /// Its size in bytes, when known.
        size: Option<u64>,
        /// The limit in bytes.
        limit: u64,
        /// What the limit applies to.
        what: &'static str,
    },
    /// Any other I/O failure.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path as given.
        path: String,
        /// What the kernel said.
        #[source]
        source: std::io::Error,
    },
    /// The walk was stopped (the call was cancelled).
    #[error("cancelled")]
    Cancelled,
    /// A bug.
    #[error("{0}")]
    Internal(String),
}

impl Error {
    /// An I/O error with the path and action, "not found", "is a directory" and "not a
    /// directory" kept apart.
    pub fn io(action: &'static str, path: &str, source: std::io::Error) -> Self {
        match source.kind() {
            std::io::ErrorKind::NotFound => Self::NotFound { path: path.into() },
            std::io::ErrorKind::IsADirectory => Self::IsADirectory { path: path.into() },
            std::io::ErrorKind::NotADirectory => Self::NotADirectory { path: path.into() },
            _ => Self::Io { action, path: path.into(), source },
        }
    }
}
