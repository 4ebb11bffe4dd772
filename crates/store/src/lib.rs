//! Todo lists and memories: the [`Store`] every connection of the process shares, in front
//! of an engine ([`Backend`]: SQLite, embedded, by default), plus the rules every engine
//! applies alike (`todo_rules`, the checks in `memory`), the workspace keys (`workspace`) and
//! the change notices subscriptions hear.

pub mod backend;
mod error;
pub mod memory;
mod migrations;
pub mod postgres;
pub mod search;
mod sqlite;
pub mod todo_list;
pub mod todo_rules;
pub mod todos;
pub mod workspace;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::broadcast;

pub use backend::{Backend, MemoryEdit, TodoChange};
pub use error::StoreError;
pub use sqlite::Sqlite;

use crate::memory::{Collection, Memory, NewMemory, Stored};
use crate::search::{Found, Query};
use crate::todos::{Saved, Summary, TodoList};

/// The database's file name under the state dir.
pub const FILE_NAME: &str = "toolbelt.db";

/// The workspace key of the global scope (a workspace key is otherwise a path or a name).
pub const GLOBAL: &str = "";

/// The store, shared by every connection of the process.
#[derive(Debug)]
pub struct Store {
    backend: Box<dyn Backend>,
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
    /// The SQLite store kept in `state_dir`; nothing is opened until the first call.
    pub fn new(state_dir: &Path) -> Arc<Self> {
        Self::with(Box::new(Sqlite::new(state_dir.join(FILE_NAME))))
    }

    /// The store kept by `backend`.
    pub fn with(backend: Box<dyn Backend>) -> Arc<Self> {
        let (changes, _) = broadcast::channel(256);
        backend.listen(changes.clone());
        Arc::new(Self { backend, changes, adoptions: Mutex::default() })
    }

    /// The store `url` names (`postgres://…`), else the SQLite one in `state_dir`.
    pub fn open(url: Option<&str>, state_dir: &Path) -> Result<Arc<Self>, String> {
        match url {
            Some(url) => Ok(Self::with(Box::new(postgres::Postgres::new(url)?))),
            None => Ok(Self::new(state_dir)),
        }
    }

    /// Where the records are, for messages.
    pub fn location(&self) -> String {
        self.backend.location()
    }

    /// The key of the todo lists and memories of `first_root`'s workspace, or of the one
    /// `named` ([`workspace::identity`]). When it is not the root's path, the records kept
    /// under the path (before workspaces followed git remotes) move to it before the next
    /// call; a list or memory the key already has stays where it was.
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
    async fn adopt_pending(&self) {
        let pending = std::mem::take(&mut self.adoptions.lock().unwrap_or_else(PoisonError::into_inner).pending);
        for (from, to) in pending {
            match self.backend.adopt(&from, &to).await {
                Ok(0) => {}
                Ok(moved) => tracing::info!(from, to, moved, "todo lists and memories moved to the workspace's key"),
                Err(err) => {
                    tracing::warn!(from, to, %err, "cannot move todo lists and memories to the workspace's key")
                }
            }
            self.adoptions.lock().unwrap_or_else(PoisonError::into_inner).done.insert((from, to));
        }
    }

    /// Runs one call on the engine: pending adoptions first; failures of the store itself
    /// counted in the metrics (not requests it refused).
    async fn call<'a, T>(
        &'a self,
        answer: impl FnOnce(&'a dyn Backend) -> backend::Answer<'a, T>,
    ) -> Result<T, StoreError> {
        self.adopt_pending().await;
        answer(self.backend.as_ref()).await.inspect_err(|err| {
            if !err.is_rule() {
                toolbelt_mcp_core::metrics::store_error();
            }
        })
    }

    /// The list `name` of `workspace` (empty if never written).
    pub async fn todo_read(&self, workspace: &str, name: &str) -> Result<TodoList, StoreError> {
        self.call(|b| b.todo_read(workspace, name)).await
    }

    /// Applies `change` to list `name` in one transaction, after checking every rule.
    pub async fn todo_change(&self, workspace: &str, name: &str, change: TodoChange) -> Result<Saved, StoreError> {
        self.call(|b| b.todo_change(workspace, name, change)).await
    }

    /// How many times list `name` was saved (0: never).
    pub async fn todo_revision(&self, workspace: &str, name: &str) -> Result<i64, StoreError> {
        self.call(|b| b.todo_revision(workspace, name)).await
    }

    /// The workspace's lists, by name.
    pub async fn todo_lists(&self, workspace: &str) -> Result<Vec<Summary>, StoreError> {
        self.call(|b| b.todo_lists(workspace)).await
    }

    /// Stores a memory, or finds the same content already in its collection.
    pub async fn memory_store(&self, workspace: &str, memory: &NewMemory) -> Result<Stored, StoreError> {
        self.call(|b| b.memory_store(workspace, memory)).await
    }

    /// Memory `id` of `workspace` or the global scope.
    pub async fn memory_get(&self, workspace: &str, id: i64) -> Result<Memory, StoreError> {
        self.call(|b| b.memory_get(workspace, id)).await
    }

    /// Changes the given fields of memory `id`; returns it as stored.
    pub async fn memory_update(&self, workspace: &str, id: i64, edit: MemoryEdit) -> Result<Memory, StoreError> {
        self.call(|b| b.memory_update(workspace, id, edit)).await
    }

    /// Deletes memory `id`; returns what it was.
    pub async fn memory_delete(&self, workspace: &str, id: i64) -> Result<Memory, StoreError> {
        self.call(|b| b.memory_delete(workspace, id)).await
    }

    /// The workspace's collections, by name.
    pub async fn memory_collections(&self, workspace: &str) -> Result<Vec<Collection>, StoreError> {
        self.call(|b| b.memory_collections(workspace)).await
    }

    /// A value that changes whenever a memory of the collection changes.
    pub async fn memory_fingerprint(&self, workspace: &str, collection: &str) -> Result<[i64; 3], StoreError> {
        self.call(|b| b.memory_fingerprint(workspace, collection)).await
    }

    /// The newest `limit` memories of a collection, newest first.
    pub async fn memory_recent(
        &self,
        workspace: &str,
        collection: &str,
        limit: u32,
    ) -> Result<Vec<Memory>, StoreError> {
        self.call(|b| b.memory_recent(workspace, collection, limit)).await
    }

    /// Ranked search.
    pub async fn memory_search(&self, workspace: &str, query: &Query) -> Result<Found, StoreError> {
        self.call(|b| b.memory_search(workspace, query)).await
    }

    /// How many todo lists and memories there are (`None`: nothing created yet).
    pub async fn counts(&self) -> Result<Option<(i64, i64)>, StoreError> {
        self.backend.counts().await
    }

    /// Hears about every change made through this store (in this process).
    pub fn subscribe(&self) -> broadcast::Receiver<Changed> {
        self.changes.subscribe()
    }

    /// Tells subscribers that `uri` of `workspace` changed, and the other servers sharing
    /// the records (a failure to tell them is logged: they also poll what they watch).
    pub async fn changed(&self, workspace: &str, uri: String) {
        let changed = Changed { workspace: workspace.to_string(), uri };
        if let Err(err) = self.backend.announce(&changed).await {
            tracing::debug!(%err, "cannot announce a change to other servers");
        }
        // No receiver is fine: nobody subscribed.
        let _ = self.changes.send(changed);
    }
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

    use crate::memory::NewMemory;

    /// A migrated in-memory database.
    pub fn connection() -> Connection {
        let mut connection = Connection::open_in_memory().unwrap();
        crate::migrations::migrate(&mut connection).unwrap();
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
}
