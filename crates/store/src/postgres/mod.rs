//! The PostgreSQL engine (`--store postgres://…`), for a team whose servers run on several
//! machines: a small pool of connections (tokio-postgres through deadpool), the schema
//! migrated on first use under an advisory lock (so servers starting together migrate once),
//! a stored `tsvector` searched with `websearch_to_tsquery`, and changes announced to every
//! server with `NOTIFY`. A database that is down fails the todo and memory calls that need it,
//! with a message saying so; the pool reconnects by itself when it is back.

mod listen;
mod migrations;
mod queries;
mod url;

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime, Timeouts};
use tokio::sync::OnceCell;
use tokio_postgres::NoTls;

use crate::backend::{Answer, Backend, MemoryEdit, TodoChange};
use crate::memory::{Collection, Memory, NewMemory, Stored};
use crate::search::{Found, Query};
use crate::todos::{Saved, Summary, TodoList};
use crate::{Changed, StoreError};

pub use url::parse;

/// Connections kept open per server.
const POOL_SIZE: usize = 4;
/// How long a call waits to connect or for a free connection.
const WAIT: Duration = Duration::from_secs(5);

/// The PostgreSQL engine.
#[derive(Clone)]
pub struct Postgres {
    inner: Arc<Inner>,
}

struct Inner {
    pool: Pool,
    config: tokio_postgres::Config,
    location: String,
    migrated: OnceCell<()>,
    /// This process's mark on the changes it announces (it hears its own from the store).
    origin: String,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres").field("location", &self.inner.location).finish_non_exhaustive()
    }
}

impl Postgres {
    /// The engine for `url` (nothing is connected until the first call).
    pub fn new(url: &str) -> Result<Self, String> {
        let (config, location) = parse(url)?;
        let manager =
            Manager::from_config(config.clone(), NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
        let timeouts = Timeouts { wait: Some(WAIT), create: Some(WAIT), recycle: Some(WAIT) };
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .timeouts(timeouts)
            .runtime(Runtime::Tokio1)
            .build()
            .map_err(|err| format!("cannot set up the connection pool for `{location}`: {err}"))?;
        let origin = format!("{}-{}", std::process::id(), crate::now_ms());
        Ok(Self { inner: Arc::new(Inner { pool, config, location, migrated: OnceCell::new(), origin }) })
    }

    /// A pooled connection to a migrated database.
    async fn client(&self, action: &'static str) -> Result<deadpool_postgres::Object, StoreError> {
        // Migrated first, holding no connection: concurrent first calls wait for the one
        // migrating without taking the pool's connections from it.
        self.inner
            .migrated
            .get_or_try_init(|| async {
                let mut client = self.inner.pool.get().await.map_err(|err| self.no_connection(action, err))?;
                migrations::migrate(&mut client).await.map_err(|err| self.failed(action, &err))
            })
            .await?;
        self.inner.pool.get().await.map_err(|err| self.no_connection(action, err))
    }

    /// Why no connection could be had: every one busy, or the server out of reach.
    fn no_connection(&self, action: &'static str, err: deadpool_postgres::PoolError) -> StoreError {
        match err {
            deadpool_postgres::PoolError::Timeout(deadpool_postgres::TimeoutType::Wait) => StoreError::Engine {
                location: self.inner.location.clone(),
                action,
                message: format!("its {POOL_SIZE} connections stayed busy for {} s; retry the call", WAIT.as_secs()),
            },
            err => self.unavailable(&err.to_string()),
        }
    }

    fn unavailable(&self, reason: &str) -> StoreError {
        StoreError::Unavailable { location: self.inner.location.clone(), reason: reason.to_string() }
    }

    /// A driver error as a store error: a closed connection means the server is unavailable.
    fn failed(&self, action: &'static str, err: &tokio_postgres::Error) -> StoreError {
        if err.is_closed() || (err.as_db_error().is_none() && err.to_string().contains("connect")) {
            return self.unavailable(&err.to_string());
        }
        let message = match err.as_db_error() {
            Some(db) => format!("{} ({})", db.message(), db.code().code()),
            None => err.to_string(),
        };
        StoreError::Engine { location: self.inner.location.clone(), action, message }
    }

    /// Runs `work` on a pooled connection; driver errors become store errors naming `action`.
    async fn run<T>(
        &self,
        action: &'static str,
        work: impl AsyncFnOnce(&mut tokio_postgres::Client) -> Result<T, queries::Failure>,
    ) -> Result<T, StoreError> {
        let mut client = self.client(action).await?;
        work(&mut client).await.map_err(|failure| match failure {
            queries::Failure::Store(err) => err,
            queries::Failure::Driver(err) => self.failed(action, &err),
        })
    }
}

impl Backend for Postgres {
    fn location(&self) -> String {
        self.inner.location.clone()
    }

    fn todo_read<'a>(&'a self, workspace: &'a str, name: &'a str) -> Answer<'a, TodoList> {
        Box::pin(self.run("reading a todo list", async move |c| Ok(queries::todo_read(&*c, workspace, name).await?)))
    }

    fn todo_change<'a>(&'a self, workspace: &'a str, name: &'a str, change: TodoChange) -> Answer<'a, Saved> {
        Box::pin(
            self.run("changing a todo list", async move |c| queries::todo_change(c, workspace, name, change).await),
        )
    }

    fn todo_revision<'a>(&'a self, workspace: &'a str, name: &'a str) -> Answer<'a, i64> {
        Box::pin(self.run("checking a todo list for changes", async move |c| {
            Ok(queries::todo_revision(&*c, workspace, name).await?)
        }))
    }

    fn todo_lists<'a>(&'a self, workspace: &'a str) -> Answer<'a, Vec<Summary>> {
        Box::pin(self.run("listing todo lists", async move |c| Ok(queries::todo_lists(&*c, workspace).await?)))
    }

    fn memory_store<'a>(&'a self, workspace: &'a str, memory: &'a NewMemory) -> Answer<'a, Stored> {
        Box::pin(self.run("storing a memory", async move |c| queries::memory_store(c, workspace, memory).await))
    }

    fn memory_get<'a>(&'a self, workspace: &'a str, id: i64) -> Answer<'a, Memory> {
        Box::pin(self.run("reading a memory", async move |c| queries::memory_get(&*c, workspace, id).await))
    }

    fn memory_update<'a>(&'a self, workspace: &'a str, id: i64, edit: MemoryEdit) -> Answer<'a, Memory> {
        Box::pin(self.run("updating a memory", async move |c| queries::memory_update(c, workspace, id, edit).await))
    }

    fn memory_delete<'a>(&'a self, workspace: &'a str, id: i64) -> Answer<'a, Memory> {
        Box::pin(self.run("deleting a memory", async move |c| queries::memory_delete(c, workspace, id).await))
    }

    fn memory_collections<'a>(&'a self, workspace: &'a str) -> Answer<'a, Vec<Collection>> {
        Box::pin(
            self.run("listing memory collections", async move |c| {
                Ok(queries::memory_collections(&*c, workspace).await?)
            }),
        )
    }

    fn memory_fingerprint<'a>(&'a self, workspace: &'a str, collection: &'a str) -> Answer<'a, [i64; 3]> {
        Box::pin(self.run("checking a memory collection for changes", async move |c| {
            Ok(queries::memory_fingerprint(&*c, workspace, collection).await?)
        }))
    }

    fn memory_recent<'a>(&'a self, workspace: &'a str, collection: &'a str, limit: u32) -> Answer<'a, Vec<Memory>> {
        Box::pin(self.run("reading a memory collection", async move |c| {
            Ok(queries::memory_recent(&*c, workspace, collection, limit).await?)
        }))
    }

    fn memory_search<'a>(&'a self, workspace: &'a str, query: &'a Query) -> Answer<'a, Found> {
        Box::pin(self.run("searching memories", async move |c| queries::memory_search(&*c, workspace, query).await))
    }

    fn counts(&self) -> Answer<'_, Option<(i64, i64)>> {
        Box::pin(self.run("counting its contents", async move |c| Ok(Some(queries::counts(&*c).await?))))
    }

    fn adopt<'a>(&'a self, from: &'a str, to: &'a str) -> Answer<'a, usize> {
        Box::pin(
            self.run("moving records to the workspace's key", async move |c| Ok(queries::adopt(c, from, to).await?)),
        )
    }

    fn listen(&self, changes: tokio::sync::broadcast::Sender<Changed>) {
        let weak = Arc::downgrade(&self.inner);
        listen::spawn(self.inner.config.clone(), self.inner.origin.clone(), changes, move || weak.strong_count() > 0);
    }

    fn announce<'a>(&'a self, changed: &'a Changed) -> Answer<'a, ()> {
        let payload = listen::payload(&self.inner.origin, changed);
        Box::pin(self.run("announcing a change", async move |c| {
            c.execute("SELECT pg_notify($1, $2)", &[&listen::CHANNEL, &payload]).await?;
            Ok(())
        }))
    }
}
