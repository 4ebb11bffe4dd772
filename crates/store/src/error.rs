//! What can go wrong in the store, each with the database file it concerns and a next step.

use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// A store failure, or a request that broke one of the store's rules.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A raw SQLite error, before [`StoreError::at`] names the file (never leaves the store).
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// The database could not be opened or its directory created.
    #[error(
        "cannot open the todo and memory database `{path}`: {reason}; check that the state dir is writable, or start the server with another `--state-dir`"
    )]
    Open {
        /// The database file.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// The database file (or its directory) is read-only.
    #[error(
        "the todo and memory database `{path}` is read-only, so nothing was changed; make it writable again (`chmod u+w {path}`) or start the server with another `--state-dir`"
    )]
    ReadOnly {
        /// The database file.
        path: PathBuf,
    },
    /// The file is not a SQLite database, or is damaged.
    #[error(
        "the todo and memory database `{path}` is unreadable ({reason}); it was left untouched: move it aside (`mv {path} {path}.bad`) and a new one is created on the next call, or restore it from a backup"
    )]
    Corrupt {
        /// The database file.
        path: PathBuf,
        /// What SQLite said.
        reason: String,
    },
    /// Another process held the database locked for longer than the busy timeout.
    #[error("the todo and memory database `{path}` stayed locked by another process for {seconds} s; retry the call")]
    Busy {
        /// The database file.
        path: PathBuf,
        /// The busy timeout.
        seconds: u64,
    },
    /// A newer toolbelt-mcp migrated the database past what this build knows.
    #[error(
        "the todo and memory database `{path}` has schema version {found}, newer than this build knows ({known}); upgrade toolbelt-mcp, or start it with another `--state-dir`"
    )]
    TooNew {
        /// The database file.
        path: PathBuf,
        /// Its `user_version`.
        found: i64,
        /// The newest version this build can migrate to.
        known: usize,
    },
    /// Any other SQLite failure.
    #[error("the todo and memory database `{path}` failed while {action}: {message}")]
    Failed {
        /// The database file.
        path: PathBuf,
        /// What was being done.
        action: &'static str,
        /// What SQLite said.
        message: String,
    },
    /// A database server cannot be reached (down, a wrong address, a refused login).
    #[error(
        "the todo and memory database `{location}` cannot be reached ({reason}); file and terminal operations still work: check that it is running and that `--store` is right, then retry (the server reconnects by itself)"
    )]
    Unavailable {
        /// The database, without a password.
        location: String,
        /// What failed.
        reason: String,
    },
    /// A database server failed while doing something.
    #[error("the todo and memory database `{location}` failed while {action}: {message}")]
    Engine {
        /// The database, without a password.
        location: String,
        /// What was being done.
        action: &'static str,
        /// What the server said.
        message: String,
    },
    /// The request broke a rule; the message names the item and what to send instead.
    #[error("{0}")]
    Rule(String),
    /// The request names something that does not exist; the message says what does.
    #[error("{0}")]
    NotFound(String),
}

impl StoreError {
    /// Whether the request was at fault (a rule broken, an unknown id), not the store.
    pub fn is_rule(&self) -> bool {
        matches!(self, Self::Rule(_) | Self::NotFound(_))
    }

    /// Names the database file in a raw SQLite error, and sorts it by what the user can do.
    pub fn at(self, path: &Path, action: &'static str, busy_seconds: u64) -> Self {
        let Self::Sqlite(err) = self else { return self };
        let path = path.to_path_buf();
        match err.sqlite_error_code() {
            Some(ErrorCode::ReadOnly) => Self::ReadOnly { path },
            Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
                Self::Corrupt { path, reason: err.to_string() }
            }
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => Self::Busy { path, seconds: busy_seconds },
            Some(ErrorCode::CannotOpen | ErrorCode::PermissionDenied) => Self::Open { path, reason: err.to_string() },
            _ => Self::Failed { path, action, message: err.to_string() },
        }
    }
}

/// The store's failure as the model is told it.
impl From<StoreError> for toolbelt_mcp_core::error::ToolError {
    fn from(err: StoreError) -> Self {
        Self::Store(toolbelt_mcp_core::error::StoreFailure { rule: err.is_rule(), message: err.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sqlite(code: i32) -> StoreError {
        StoreError::Sqlite(rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(code), None))
    }

    #[test]
    fn raw_errors_are_sorted_and_name_the_file() {
        let path = Path::new("/s/toolbelt.db");
        let read_only = sqlite(rusqlite::ffi::SQLITE_READONLY).at(path, "saving", 5);
        assert!(matches!(read_only, StoreError::ReadOnly { .. }));
        assert!(read_only.to_string().contains("`/s/toolbelt.db` is read-only"), "{read_only}");
        assert!(matches!(sqlite(rusqlite::ffi::SQLITE_NOTADB).at(path, "x", 5), StoreError::Corrupt { .. }));
        assert!(matches!(sqlite(rusqlite::ffi::SQLITE_BUSY).at(path, "x", 5), StoreError::Busy { seconds: 5, .. }));
        let other = sqlite(rusqlite::ffi::SQLITE_FULL).at(path, "saving", 5);
        assert!(other.to_string().contains("failed while saving"), "{other}");
        assert!(matches!(StoreError::Rule("r".into()).at(path, "x", 5), StoreError::Rule(_)));
    }
}
