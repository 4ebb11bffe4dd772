//! The embedded SQLite engine (the default): one database file under the state dir, opened
//! on first use (so it costs nothing at start-up), in WAL mode with a busy timeout, so every
//! server process of the user can share it. Every change is one `BEGIN IMMEDIATE`
//! transaction: concurrent writers wait for each other instead of losing updates.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use crate::backend::{Answer, Backend, MemoryEdit, TodoChange};
use crate::memory::{self, NewMemory};
use crate::search::{self, Query};
use crate::{StoreError, migrations, todos};
use toolbelt_mcp_sandbox::fs;

/// How long a call waits for another process's transaction before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The SQLite engine: the database file and its one connection.
#[derive(Debug, Clone)]
pub struct Sqlite {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    connection: Mutex<Option<Connection>>,
}

impl Sqlite {
    /// The database `path`; nothing is opened until the first call.
    pub fn new(path: PathBuf) -> Self {
        Self { inner: Arc::new(Inner { path, connection: Mutex::new(None) }) }
    }

    /// Runs `work` on the connection off the async threads, opening (and migrating) the
    /// database first if needed. Raw SQLite errors come back naming the file, sorted by what
    /// the user can do about them; `action` says what was being done.
    pub async fn run<T, F>(&self, action: &'static str, work: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let engine = self.clone();
        let joined = tokio::task::spawn_blocking(move || engine.run_blocking(action, work)).await;
        joined.unwrap_or_else(|err| {
            Err(StoreError::Failed {
                path: self.inner.path.clone(),
                action,
                message: format!("the worker failed: {err}"),
            })
        })
    }

    /// [`Sqlite::run`] on the calling thread.
    pub fn run_blocking<T>(
        &self,
        action: &'static str,
        work: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let (path, busy) = (&self.inner.path, BUSY_TIMEOUT.as_secs());
        // A panic mid-call leaves no open transaction (dropping one rolls it back).
        let mut guard = self.inner.connection.lock().unwrap_or_else(PoisonError::into_inner);
        let connection = match &mut *guard {
            Some(connection) => connection,
            slot => slot.insert(open(path).map_err(|err| err.at(path, "opening it", busy))?),
        };
        work(connection).map_err(|err| err.at(path, action, busy))
    }
}

/// Owned copies of a call's borrowed arguments, for the blocking thread.
fn own(text: &str) -> String {
    text.to_string()
}

impl Backend for Sqlite {
    fn location(&self) -> String {
        self.inner.path.display().to_string()
    }

    fn todo_read<'a>(&'a self, workspace: &'a str, name: &'a str) -> Answer<'a, todos::TodoList> {
        let (workspace, name) = (own(workspace), own(name));
        Box::pin(self.run("reading a todo list", move |c| todos::read(c, &workspace, &name)))
    }

    fn todo_change<'a>(&'a self, workspace: &'a str, name: &'a str, change: TodoChange) -> Answer<'a, todos::Saved> {
        let (workspace, name) = (own(workspace), own(name));
        let action = match &change {
            TodoChange::Write(_) => "saving a todo list",
            TodoChange::Add(_) => "adding to a todo list",
            TodoChange::Update(_) => "updating a todo list",
        };
        Box::pin(self.run(action, move |c| match change {
            TodoChange::Write(drafts) => todos::write(c, &workspace, &name, drafts),
            TodoChange::Add(drafts) => todos::add(c, &workspace, &name, drafts),
            TodoChange::Update(patches) => todos::update(c, &workspace, &name, patches),
        }))
    }

    fn todo_revision<'a>(&'a self, workspace: &'a str, name: &'a str) -> Answer<'a, i64> {
        let (workspace, name) = (own(workspace), own(name));
        Box::pin(self.run("checking a todo list for changes", move |c| todos::revision(c, &workspace, &name)))
    }

    fn todo_lists<'a>(&'a self, workspace: &'a str) -> Answer<'a, Vec<todos::Summary>> {
        let workspace = own(workspace);
        Box::pin(self.run("listing todo lists", move |c| todos::lists(c, &workspace)))
    }

    fn memory_store<'a>(&'a self, workspace: &'a str, new: &'a NewMemory) -> Answer<'a, memory::Stored> {
        let (workspace, new) = (own(workspace), new.clone());
        Box::pin(self.run("storing a memory", move |c| memory::store(c, &workspace, &new)))
    }

    fn memory_get<'a>(&'a self, workspace: &'a str, id: i64) -> Answer<'a, memory::Memory> {
        let workspace = own(workspace);
        Box::pin(self.run("reading a memory", move |c| memory::get(c, &workspace, id)))
    }

    fn memory_update<'a>(&'a self, workspace: &'a str, id: i64, edit: MemoryEdit) -> Answer<'a, memory::Memory> {
        let workspace = own(workspace);
        Box::pin(self.run("updating a memory", move |c| memory::update(c, &workspace, id, edit)))
    }

    fn memory_delete<'a>(&'a self, workspace: &'a str, id: i64) -> Answer<'a, memory::Memory> {
        let workspace = own(workspace);
        Box::pin(self.run("deleting a memory", move |c| memory::delete(c, &workspace, id)))
    }

    fn memory_collections<'a>(&'a self, workspace: &'a str) -> Answer<'a, Vec<memory::Collection>> {
        let workspace = own(workspace);
        Box::pin(self.run("listing memory collections", move |c| memory::collections(c, &workspace)))
    }

    fn memory_fingerprint<'a>(&'a self, workspace: &'a str, collection: &'a str) -> Answer<'a, [i64; 3]> {
        let (workspace, collection) = (own(workspace), own(collection));
        Box::pin(
            self.run("checking a memory collection for changes", move |c| {
                memory::fingerprint(c, &workspace, &collection)
            }),
        )
    }

    fn memory_recent<'a>(
        &'a self,
        workspace: &'a str,
        collection: &'a str,
        limit: u32,
    ) -> Answer<'a, Vec<memory::Memory>> {
        let (workspace, collection) = (own(workspace), own(collection));
        Box::pin(self.run("reading a memory collection", move |c| memory::recent(c, &workspace, &collection, limit)))
    }

    fn memory_search<'a>(&'a self, workspace: &'a str, query: &'a Query) -> Answer<'a, search::Found> {
        let (workspace, query) = (own(workspace), query.clone());
        Box::pin(self.run("searching memories", move |c| search::search(c, &workspace, &query)))
    }

    fn counts(&self) -> Answer<'_, Option<(i64, i64)>> {
        Box::pin(async move {
            if !fs::exists(&self.inner.path) {
                return Ok(None);
            }
            self.run("counting its contents", |c| {
                let count =
                    |table: &str| c.query_row(&format!("SELECT count(*) FROM {table}"), [], |row| row.get::<_, i64>(0));
                Ok(Some((count("todo_lists")?, count("memories")?)))
            })
            .await
        })
    }

    fn adopt<'a>(&'a self, from: &'a str, to: &'a str) -> Answer<'a, usize> {
        let (from, to) = (own(from), own(to));
        Box::pin(self.run("moving records to the workspace's key", move |c| {
            let transaction = c.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            let sql = "UPDATE OR IGNORE todo_lists SET workspace = ?2 WHERE workspace = ?1";
            let lists = transaction.execute(sql, [&from, &to])?;
            let sql = "UPDATE OR IGNORE memories SET workspace = ?2 WHERE workspace = ?1";
            let memories = transaction.execute(sql, [&from, &to])?;
            transaction.commit()?;
            Ok(lists + memories)
        }))
    }
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
    if !write_protected {
        // Created private, whatever the directory's mode (a state dir the user made is often
        // 0755): SQLite gives its WAL and shared-memory files the database file's mode.
        match fs::create_private_file(path) {
            Err(err) if err.kind() != std::io::ErrorKind::AlreadyExists => {
                let reason = format!("cannot create it: {err}");
                return Err(StoreError::Open { path: path.to_path_buf(), reason });
            }
            _ => {}
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_lazily_migrates_and_names_the_file_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state").join(crate::FILE_NAME);
        let store = Sqlite::new(path.clone());
        assert!(!fs::exists(&path), "nothing is opened before the first call");
        let mode: String =
            store.run_blocking("reading", |c| Ok(c.query_row("PRAGMA journal_mode", [], |r| r.get(0))?)).unwrap();
        assert_eq!(mode, "wal");
        let err = store.run_blocking("testing", |c| Ok(c.execute("INSERT INTO nowhere VALUES (1)", [])?)).unwrap_err();
        assert!(err.to_string().contains("failed while testing"), "{err}");
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");
    }

    #[cfg(unix)]
    #[test]
    fn the_database_and_its_wal_are_private_in_a_shared_directory() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        #[allow(clippy::disallowed_methods)]
        std::fs::create_dir(&state).unwrap();
        #[allow(clippy::disallowed_methods)]
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = state.join(crate::FILE_NAME);
        let store = Sqlite::new(path.clone());
        store.run_blocking("writing", |c| Ok(c.execute("CREATE TABLE t (x)", [])?)).unwrap();
        for name in
            [crate::FILE_NAME.to_string(), format!("{}-wal", crate::FILE_NAME), format!("{}-shm", crate::FILE_NAME)]
        {
            #[allow(clippy::disallowed_methods)]
            let mode = std::fs::metadata(state.join(&name)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "`{name}`");
        }
    }

    #[test]
    fn four_connections_creating_the_database_at_once_all_open_it() {
        // Without the retry in `use_wal`, about one round in ten failed with "database is locked".
        for _ in 0..50 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(crate::FILE_NAME);
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
