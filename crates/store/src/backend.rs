//! The contract of a store engine: what todo lists and memories need, with the same rules and
//! results on every engine (the rules themselves are engine-free: `todo_rules`, and the
//! checks of `memory`). SQLite (`sqlite.rs`) is the embedded default.

use std::future::Future;
use std::pin::Pin;

use crate::memory::{Collection, Memory, NewMemory, Stored};
use crate::search::{Found, Query};
use crate::todos::{Draft, Patch, Saved, Summary, TodoList};
use crate::{Changed, StoreError};

/// A boxed future, so the trait can be used as `dyn Backend`.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a store call returns.
pub type Answer<'a, T> = BoxFuture<'a, Result<T, StoreError>>;

/// A change to one todo list, applied in one transaction against the list as stored.
#[derive(Debug, Clone)]
pub enum TodoChange {
    /// Replace the list (completed items may not be dropped).
    Write(Vec<Draft>),
    /// Append items, numbered after the highest id.
    Add(Vec<Draft>),
    /// Change existing items.
    Update(Vec<Patch>),
}

/// The new fields of a memory (`None`: unchanged): content, title, tags.
pub type MemoryEdit = (Option<String>, Option<String>, Option<Vec<String>>);

/// A store engine. Every method names the workspace key it works in; memories are also
/// found by id, within that workspace or the global scope.
pub trait Backend: Send + Sync + std::fmt::Debug {
    /// Where the records are, for messages (never a password).
    fn location(&self) -> String;

    /// The list `name` (empty if never written).
    fn todo_read<'a>(&'a self, workspace: &'a str, name: &'a str) -> Answer<'a, TodoList>;
    /// Applies `change` to list `name` in one transaction, after checking every rule.
    fn todo_change<'a>(&'a self, workspace: &'a str, name: &'a str, change: TodoChange) -> Answer<'a, Saved>;
    /// How many times list `name` was saved (0: never).
    fn todo_revision<'a>(&'a self, workspace: &'a str, name: &'a str) -> Answer<'a, i64>;
    /// The workspace's lists, by name.
    fn todo_lists<'a>(&'a self, workspace: &'a str) -> Answer<'a, Vec<Summary>>;

    /// Stores a memory, or finds the same content already in its collection.
    fn memory_store<'a>(&'a self, workspace: &'a str, memory: &'a NewMemory) -> Answer<'a, Stored>;
    /// Memory `id`.
    fn memory_get<'a>(&'a self, workspace: &'a str, id: i64) -> Answer<'a, Memory>;
    /// Changes the given fields of memory `id`; returns it as stored.
    fn memory_update<'a>(&'a self, workspace: &'a str, id: i64, edit: MemoryEdit) -> Answer<'a, Memory>;
    /// Deletes memory `id`; returns what it was.
    fn memory_delete<'a>(&'a self, workspace: &'a str, id: i64) -> Answer<'a, Memory>;
    /// The workspace's collections, by name.
    fn memory_collections<'a>(&'a self, workspace: &'a str) -> Answer<'a, Vec<Collection>>;
    /// A value that changes whenever a memory of the collection changes.
    fn memory_fingerprint<'a>(&'a self, workspace: &'a str, collection: &'a str) -> Answer<'a, [i64; 3]>;
    /// The newest `limit` memories of a collection, newest first.
    fn memory_recent<'a>(&'a self, workspace: &'a str, collection: &'a str, limit: u32) -> Answer<'a, Vec<Memory>>;
    /// Ranked search.
    fn memory_search<'a>(&'a self, workspace: &'a str, query: &'a Query) -> Answer<'a, Found>;

    /// How many todo lists and memories there are; `None` when nothing was created yet
    /// (without creating anything).
    fn counts(&self) -> Answer<'_, Option<(i64, i64)>>;
    /// Moves the records of workspace `from` to `to`, keeping those `to` already has under
    /// the same list name or content; how many moved.
    fn adopt<'a>(&'a self, from: &'a str, to: &'a str) -> Answer<'a, usize>;

    /// Tells the other servers sharing these records that `changed` changed (nothing to do
    /// for an engine whose other users poll).
    fn announce<'a>(&'a self, _changed: &'a Changed) -> Answer<'a, ()> {
        Box::pin(async { Ok(()) })
    }

    /// Starts forwarding the changes other servers announce into `changes`.
    fn listen(&self, _changes: tokio::sync::broadcast::Sender<Changed>) {}
}
