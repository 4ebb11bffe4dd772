//! The embedded SQLite store for todo lists and memories: one database file under the state
//! dir, opened on first use (so it costs nothing at start-up), in WAL mode with a busy
//! timeout, so every server process of the user can share it. Every change is one
//! `BEGIN IMMEDIATE` transaction: concurrent writers wait for each other instead of losing
//! updates.

mod error;
pub mod memory;
mod migrations;
pub mod search;
pub mod todo_rules;
pub mod todos;
pub mod workspace;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::broadcast;

pub use error::StoreError;

use crate::sandbox::fs;

/// The database's file name under the state dir.
pub const FILE_NAME: &str = "toolbelt.db";

/// How long a call waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The workspace key of the global scope (a workspace key is otherwise an absolute path).
pub const GLOBAL: &str = "";

/// The store, shared by every connection of the process.
#[derive(Debug)]
pub struct Store {
    path: PathBuf,
    connection: Mutex<Option<Connection>>,
    changes: broadcast::Sender<Changed>,
    adoptions: Mutex<Adoptions>,
}

/// Records kept under a root's path, to move to its workspace key (see [`Store::workspace_key`]).
#[derive(Debug, Default)]
struct Adoptions {
    pending: Vec<(String, String)>,
    done: std::collections::HashSet<(String, String)>,
}

/// A resource whose content changed (sent after the transaction committed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The workspace key it belongs to ([`GLOBAL`] for global memories).
    pub workspace: String,
    /// Its resource URI, e.g. `todo://default`.
    pub uri: String,
}

impl Store {
    /// The store kept in `state_dir`; nothing is opened until the first call.
    pub fn new(state_dir: &Path) -> Arc<Self> {
        let (changes, _) = broadcast::channel(256);
        let adoptions = Mutex::default();
        Arc::new(Self { path: state_dir.join(FILE_NAME), connection: Mutex::new(None), changes, adoptions })
    }

    /// The key of the todo lists and memories of `first_root`'s workspace, or of the one
    /// `named` ([`workspace::identity`]). When it is not the root's path, the records kept
    /// under the path (before workspaces followed git remotes) move to it at the next call
    /// that opens the database; a list or memory the key already has stays where it was.
    pub fn workspace_key(&self, named: Option<&str>, first_root: &Path) -> String {
        let identity = workspace::identity(named, first_root);
        if let Some(path) = identity.adopts {
            let pair = (path, identity.key.clone());
            let mut adoptions = self.adoptions.lock().unwrap_or_else(PoisonError::into_inner);
            if !adoptions.done.contains(&pair) && !adoptions.pending.contains(&pair) {
                adoptions.pending.push(pair);
            }
        }
        identity.key
    }

    /// Moves the records of the pending adoptions (once each; a failure is logged, not retried).
    fn adopt(&self, connection: &mut Connection) {
        let pending = std::mem::take(&mut self.adoptions.lock().unwrap_or_else(PoisonError::into_inner).pending);
        for (from, to) in pending {
            let moved = (|| -> rusqlite::Result<usize> {
                let transaction = connection.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
                let sql = "UPDATE OR IGNORE todo_lists SET workspace = ?2 WHERE workspace = ?1";
                let lists = transaction.execute(sql, [&from, &to])?;
                let sql = "UPDATE OR IGNORE memories SET workspace = ?2 WHERE workspace = ?1";
                let memories = transaction.execute(sql, [&from, &to])?;
                transaction.commit()?;
                Ok(lists + memories)
            })();
            match moved {
                Ok(0) => {}
                Ok(moved) => tracing::info!(from, to, moved, "todo lists and memories moved to the workspace's key"),
                Err(err) => {
                    tracing::warn!(from, to, %err, "cannot move todo lists and memories to the workspace's key")
                }
            }
            self.adoptions.lock().unwrap_or_else(PoisonError::into_inner).done.insert((from, to));
        }
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `work` on the connection off the async threads, opening (and migrating) the
    /// database first if needed. Raw SQLite errors come back naming the file, sorted by what
    /// the user can do about them; `action` says what was being done.
    pub async fn run<T, F>(self: &Arc<Self>, action: &'static str, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let store = self.clone();
        let joined = tokio::task::spawn_blocking(move || store.run_blocking(action, work)).await;
        joined.unwrap_or_else(|err| {
            Err(StoreError::Failed { path: self.path.clone(), action, message: format!("the worker failed: {err}") })
        })
    }

    /// [`Store::run`] on the calling thread.
    pub fn run_blocking<T>(
        &self,
        action: &'static str,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let busy = BUSY_TIMEOUT.as_secs();
        // A panic mid-call leaves no open transaction (dropping one rolls it back).
        let mut guard = self.connection.lock().unwrap_or_else(PoisonError::into_inner);
        let connection = match &mut *guard {
            Some(connection) => connection,
            slot => slot.insert(open(&self.path).map_err(|err| counted(err.at(&self.path, "opening it", busy)))?),
        };
        self.adopt(connection);
        work(connection).map_err(|err| counted(err.at(&self.path, action, busy)))
    }

    /// Hears about every change made through this store (in this process).
    pub fn subscribe(&self) -> broadcast::Receiver<Changed> {
        self.changes.subscribe()
    }

    /// Tells subscribers that `uri` of `workspace` changed.
    pub fn changed(&self, workspace: &str, uri: String) {
        // No receiver is fine: nobody subscribed.
        let _ = self.changes.send(Changed { workspace: workspace.to_string(), uri });
    }
}

/// Counts a failure of the store itself in the metrics (not a request it refused).
fn counted(err: StoreError) -> StoreError {
    if !err.is_rule() {
        crate::metrics::store_error();
    }
    err
}

/// Opens the database: creates its directory, sets WAL mode, the busy timeout and foreign
/// keys, and migrates it. A file whose write permission was removed is opened read-only.
fn open(path: &Path) -> Result<Connection, StoreError> {
    if let Some(dir) = path.parent() {
        fs::create_private_dir(dir).map_err(|err| StoreError::Open {
            path: path.to_path_buf(),
            reason: format!("cannot create its directory: {err}"),
        })?;
    }
    let write_protected = fs::is_write_protected(path);
    let mode = if write_protected {
        OpenFlags::SQLITE_OPEN_READ_ONLY
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
    };
    let mut connection = Connection::open_with_flags(path, mode | OpenFlags::SQLITE_OPEN_NO_MUTEX)?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    // Every statement the store runs stays prepared (there are about 30).
    connection.set_prepared_statement_cache_capacity(64);
    connection.pragma_update(None, "foreign_keys", true)?;
    if write_protected {
        // Reads work on a current schema; every write then fails as read-only.
        return match schema_is_current(&connection) {
            Ok(true) => Ok(connection),
            Ok(false) | Err(_) => Err(StoreError::ReadOnly { path: path.to_path_buf() }),
        };
    }
    // WAL: readers never block the writer; NORMAL sync is crash-safe in WAL mode (a power cut
    // may lose the last commits, never corrupt the file).
    use_wal(&connection)?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    migrations::migrate(&mut connection)?;
    Ok(connection)
}

/// Switches the database to WAL mode. When two processes create the database at once, the
/// switch can fail at once with "database is locked" (SQLite skips the busy handler where
/// waiting could deadlock), so it is retried until the busy timeout.
fn use_wal(connection: &Connection) -> Result<(), StoreError> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    loop {
        match connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(err) if is_busy(&err) && std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(err) => return Err(err.into()),
        }
    }
}

fn is_busy(err: &rusqlite::Error) -> bool {
    matches!(err.sqlite_error_code(), Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked))
}

/// Whether a read-only database can be used as it is (it needs no migration).
fn schema_is_current(connection: &Connection) -> Result<bool, StoreError> {
    let version: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
    Ok(version == migrations::LATEST as i64)
}

/// Milliseconds since the Unix epoch, for `updated_at` columns.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// An `updated_at` value as RFC 3339 UTC, to the second.
pub fn timestamp(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0));
    humantime::format_rfc3339_seconds(time).to_string()
}

/// Checks a list or collection name: it becomes part of a resource URI.
pub fn check_name(field: &'static str, name: &str) -> Result<(), StoreError> {
    let mut chars = name.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    if first_ok && name.len() <= 64 && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')) {
        return Ok(());
    }
    Err(StoreError::Rule(format!(
        "`{field}` = `{name}` is not a valid name: use 1 to 64 letters, digits, `_`, `-` or `.`, starting with a letter or digit (e.g. `release-1.2`)"
    )))
}

/// Helpers for the store's unit tests.
#[cfg(test)]
pub mod testing {
    use rusqlite::Connection;

    use crate::store::memory::NewMemory;

    /// A migrated in-memory database.
    pub fn connection() -> Connection {
        let mut connection = Connection::open_in_memory().unwrap();
        crate::store::migrations::migrate(&mut connection).unwrap();
        connection
    }

    /// A memory of collection `notes` with these tags.
    pub fn note(content: &str, tags: &[&str]) -> NewMemory {
        NewMemory {
            content: content.into(),
            title: String::new(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            collection: "notes".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_lazily_migrates_and_names_the_file_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::new(&dir.path().join("state"));
        assert!(!fs::exists(store.path()), "nothing is opened before the first call");
        let mode: String =
            store.run_blocking("reading", |c| Ok(c.query_row("PRAGMA journal_mode", [], |r| r.get(0))?)).unwrap();
        assert_eq!(mode, "wal");
        let err = store.run_blocking("testing", |c| Ok(c.execute("INSERT INTO nowhere VALUES (1)", [])?)).unwrap_err();
        assert!(err.to_string().contains("failed while testing"), "{err}");
        assert!(err.to_string().contains(&store.path().display().to_string()), "{err}");
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("list", "release-1.2_b").is_ok());
        for bad in ["", "-x", "a/b", "a b", &"x".repeat(65)] {
            assert!(check_name("list", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(timestamp(86_400_000), "1970-01-02T00:00:00Z");
    }

    #[test]
    fn four_connections_creating_the_database_at_once_all_open_it() {
        // Without the retry in `use_wal`, about one round in ten failed with "database is locked".
        for _ in 0..50 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(FILE_NAME);
            let barrier = Arc::new(std::sync::Barrier::new(4));
            let openers: Vec<_> = (0..4)
                .map(|_| {
                    let (path, barrier) = (path.clone(), barrier.clone());
                    std::thread::spawn(move || {
                        barrier.wait();
                        open(&path).map(|_| ())
                    })
                })
                .collect();
            for opener in openers {
                opener.join().unwrap().unwrap();
            }
        }
    }
}
