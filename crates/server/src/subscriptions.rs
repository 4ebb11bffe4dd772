//! `notifications/resources/updated` for subscribed todo lists and memory collections, through
//! legacy `resources/subscribe` or a 2026-07-28 `subscriptions/listen`. Changes made through
//! this process's store arrive at once (a broadcast after each commit); changes made by another
//! server process sharing the database are found by polling the subscribed resources' version
//! every second.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use rmcp::{Peer, RoleServer};
use tokio::sync::broadcast::error::RecvError;
use tokio_util::sync::CancellationToken;

use crate::Server;
use crate::resources::{Target, parse};
use toolbelt_mcp_store::{Changed, GLOBAL};

/// How often subscribed resources are checked for changes made by other processes.
const POLL: Duration = Duration::from_secs(1);

/// The URIs a connection watches, asked afresh at every poll.
pub(crate) type Watched = Arc<dyn Fn() -> Vec<String> + Send + Sync>;

/// The URIs a connection subscribed to with legacy `resources/subscribe`, and whether its
/// forwarding task runs.
#[derive(Debug, Default)]
pub(crate) struct Subscriptions {
    uris: Arc<Mutex<BTreeSet<String>>>,
    forwarding: std::sync::atomic::AtomicBool,
}

impl Subscriptions {
    /// Adds `uri`; starts forwarding changes to `peer` on the first subscription, until the
    /// connection's state is `closed`.
    pub(crate) fn subscribe(&self, server: &Server, uri: String, peer: Peer<RoleServer>, closed: CancellationToken) {
        self.uris.lock().unwrap_or_else(PoisonError::into_inner).insert(uri);
        if self.forwarding.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let uris = self.uris.clone();
        let watched: Watched =
            Arc::new(move || uris.lock().unwrap_or_else(PoisonError::into_inner).iter().cloned().collect());
        let mut changes = Changes::new(server, watched.clone());
        tokio::spawn(async move {
            loop {
                let uri = tokio::select! {
                    () = closed.cancelled() => return,
                    next = changes.next() => match next {
                        Some(uri) => uri,
                        None => return,
                    },
                };
                if watched().contains(&uri) {
                    let param = rmcp::model::ResourceUpdatedNotificationParam::new(uri);
                    if peer.notify_resource_updated(param).await.is_err() {
                        return;
                    }
                }
            }
        });
    }

    /// Removes `uri`.
    pub(crate) fn unsubscribe(&self, uri: &str) {
        self.uris.lock().unwrap_or_else(PoisonError::into_inner).remove(uri);
    }
}

/// The changes to a connection's workspace or the global scope: every one made through this
/// process's store, and those of other processes to the watched resources.
pub(crate) struct Changes {
    server: Server,
    receiver: tokio::sync::broadcast::Receiver<Changed>,
    watched: Watched,
    seen: BTreeMap<String, [i64; 3]>,
    poll: tokio::time::Interval,
}

impl Changes {
    /// Starts hearing about changes for `server`'s connection.
    pub(crate) fn new(server: &Server, watched: Watched) -> Self {
        let mut poll = tokio::time::interval(POLL);
        poll.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        Self { receiver: server.shared.store.subscribe(), server: server.clone(), watched, seen: BTreeMap::new(), poll }
    }

    /// The URI of the next change that concerns the connection (`None`: the store is gone).
    pub(crate) async fn next(&mut self) -> Option<String> {
        loop {
            tokio::select! {
                received = self.receiver.recv() => match received {
                    Ok(changed) => {
                        if changed.workspace == GLOBAL || changed.workspace == self.server.workspace().await {
                            // The poll must not report this change a second time.
                            if let Some(version) = self.version(&changed.uri).await {
                                self.seen.insert(changed.uri.clone(), version);
                            }
                            return Some(changed.uri);
                        }
                    }
                    Err(RecvError::Lagged(missed)) => tracing::debug!(missed, "resource change notifications dropped"),
                    Err(RecvError::Closed) => return None,
                },
                _ = self.poll.tick() => {
                    if let Some(uri) = self.polled().await {
                        return Some(uri);
                    }
                }
            }
        }
    }

    /// A watched resource whose version moved since the last look (a first look only records).
    async fn polled(&mut self) -> Option<String> {
        for uri in (self.watched)() {
            let Some(version) = self.version(&uri).await else { continue };
            if self.seen.insert(uri.clone(), version).is_some_and(|before| before != version) {
                return Some(uri);
            }
        }
        None
    }

    /// The current version of a todo list or memory collection, whoever changed it.
    async fn version(&self, uri: &str) -> Option<[i64; 3]> {
        let found = match parse(uri)? {
            Target::Policy | Target::Skill => return None,
            Target::Todo(name) => {
                let workspace = self.server.workspace().await;
                self.server.shared.store.todo_revision(&workspace, &name).await.map(|revision| [revision, 0, 0])
            }
            Target::Memory { global, collection } => {
                let workspace = if global { GLOBAL.to_string() } else { self.server.workspace().await };
                self.server.shared.store.memory_fingerprint(&workspace, &collection).await
            }
        };
        found.inspect_err(|err| tracing::debug!(%err, uri, "cannot check a resource for changes")).ok()
    }
}
