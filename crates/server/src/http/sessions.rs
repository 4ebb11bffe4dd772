//! The HTTP session manager: rmcp's local one, plus what rmcp leaves out. The link between a
//! transport session and its toolbelt state, so that closing a session (`DELETE`, idleness,
//! eviction or shutdown) ends the commands it started. Its activity: a session with a request
//! in flight or an open `GET` stream (a client still connected) is never idle, and one idle
//! for the timeout is closed. A limit on open sessions that never locks anyone out: most hosts
//! never send `DELETE`, so at the limit a new session takes the place of the least recently
//! used one that has nothing running; only when every session is busy is the answer `503`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};
use rmcp::transport::streamable_http_server::{SessionId, SessionManager};
use tokio_util::sync::CancellationToken;

use crate::Shared;

/// Put into the extensions of a session's `initialize` request: the server registers its
/// state under this transport session id.
#[derive(Debug, Clone)]
pub struct SessionKey(pub String);

/// Why a session could not be served.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// The limit on open sessions is reached and every session is busy.
    #[error(
        "this server already serves its maximum of {0} MCP sessions and every one has a call or a command running; retry later, or start it with a higher `--max-http-sessions`"
    )]
    Full(usize),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// What a session is doing.
#[derive(Debug, Clone, Copy)]
struct Activity {
    /// When a request last came or a stream last ended.
    last: Instant,
    /// Requests waiting for their answer.
    requests: usize,
    /// Open standalone (`GET`) or resumed streams: a client still connected.
    streams: usize,
}

impl Activity {
    fn new() -> Self {
        Self { last: Instant::now(), requests: 0, streams: 0 }
    }
}

/// Sessions' activity, shared with the streams that keep it up to date.
#[derive(Default)]
struct Activities(Mutex<HashMap<String, Activity>>);

impl Activities {
    fn with<T>(&self, id: &str, change: impl FnOnce(&mut Activity) -> T) -> Option<T> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).get_mut(id).map(change)
    }

    fn snapshot(&self) -> Vec<(String, Activity)> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).iter().map(|(id, a)| (id.clone(), *a)).collect()
    }
}

/// Counts a stream as a request (its answer) or a connection while it lives.
struct Open {
    activities: Arc<Activities>,
    id: String,
    request: bool,
}

impl Open {
    fn new(activities: &Arc<Activities>, id: &str, request: bool) -> Self {
        activities.with(id, |a| {
            a.last = Instant::now();
            if request { a.requests += 1 } else { a.streams += 1 }
        });
        Self { activities: activities.clone(), id: id.to_string(), request }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        let request = self.request;
        self.activities.with(&self.id, |a| {
            a.last = Instant::now();
            if request { a.requests = a.requests.saturating_sub(1) } else { a.streams = a.streams.saturating_sub(1) }
        });
    }
}

/// Sessions of one HTTP server.
pub struct Sessions {
    inner: LocalSessionManager,
    shared: Arc<Shared>,
    max: usize,
    idle: Duration,
    activities: Arc<Activities>,
    /// Held while a session is created, so concurrent creations cannot pass the limit.
    creating: tokio::sync::Mutex<()>,
}

impl Sessions {
    /// At most `max` sessions; one idle for `idle` is closed (see [`Sessions::reap`]).
    pub fn new(shared: Arc<Shared>, max: usize, idle: Duration) -> Self {
        let mut session_config = SessionConfig::default();
        // Idleness is judged here (rmcp's own timer counts only messages, so it would close a
        // session whose long call or connected client sends none).
        session_config.keep_alive = None;
        let mut inner = LocalSessionManager::default();
        inner.session_config = session_config;
        let activities = Arc::default();
        Self { inner, shared, max, idle, activities, creating: tokio::sync::Mutex::new(()) }
    }

    /// How many sessions are open.
    pub async fn count(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// The most sessions served at once.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Whether a new session can be had: below the limit, or one can be evicted.
    pub async fn has_room(&self) -> bool {
        self.count().await < self.max || self.evictable().is_some()
    }

    /// The least recently used session with no request in flight and no running command,
    /// preferring one no client is connected to.
    fn evictable(&self) -> Option<String> {
        self.activities
            .snapshot()
            .into_iter()
            .filter(|(id, a)| a.requests == 0 && !self.runs_commands(id))
            .min_by_key(|(_, a)| (a.streams > 0, a.last))
            .map(|(id, _)| id)
    }

    /// Whether the session's state has a command running.
    fn runs_commands(&self, id: &str) -> bool {
        self.shared.session_of(id).is_some_and(|session| session.terminals.list().iter().any(|t| t.is_running()))
    }

    /// Closes sessions idle for the timeout (no request, no open stream, nothing in flight),
    /// until `stop`.
    pub async fn reap(self: Arc<Self>, stop: CancellationToken) {
        let period = (self.idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(30));
        let mut tick = tokio::time::interval(period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            let idle = self
                .activities
                .snapshot()
                .into_iter()
                .filter(|(_, a)| a.requests == 0 && a.streams == 0 && a.last.elapsed() >= self.idle);
            for (id, _) in idle.collect::<Vec<_>>() {
                tracing::info!(session = %id, idle = ?self.idle, "session idle; closing it");
                let _ = self.close_session(&SessionId::from(id)).await;
            }
        }
    }

    /// Closes every session (shutdown); their state is ended by the caller.
    pub async fn close_all(&self) {
        let ids: Vec<SessionId> = self.inner.sessions.read().await.keys().cloned().collect();
        for id in ids {
            if let Err(err) = self.inner.close_session(&id).await {
                tracing::debug!(%err, session = %id, "closing a session failed");
            }
        }
    }

    fn touch(&self, id: &SessionId) {
        self.activities.with(id, |a| a.last = Instant::now());
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _creating = self.creating.lock().await;
        if self.count().await >= self.max {
            let Some(oldest) = self.evictable() else {
                return Err(SessionsError::Full(self.max));
            };
            tracing::info!(session = %oldest, max = self.max, "session limit reached; closing the least recently used idle session");
            let _ = self.close_session(&SessionId::from(oldest)).await;
        }
        let (id, transport) = self.inner.create_session().await?;
        self.activities.0.lock().unwrap_or_else(PoisonError::into_inner).insert(id.to_string(), Activity::new());
        tracing::info!(session = %id, "session opened");
        Ok((id, transport))
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        if let ClientJsonRpcMessage::Request(request) = &mut message {
            request.request.extensions_mut().insert(SessionKey(id.to_string()));
        }
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.activities.0.lock().unwrap_or_else(PoisonError::into_inner).remove(id.as_ref());
        let closed = self.inner.close_session(id).await;
        // Called on `DELETE`, when the idle timeout ends the session, and when its service
        // stops: the first ends its state.
        if let Some(session) = self.shared.take_session(id) {
            tracing::info!(session = %id, "session closed; ending its commands");
            session.close().await;
        }
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let open = Open::new(&self.activities, id, true);
        Ok(self.inner.create_stream(id, message).await?.map(move |event| {
            let _ = &open;
            event
        }))
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        self.touch(id);
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let open = Open::new(&self.activities, id, false);
        Ok(self.inner.create_standalone_stream(id).await?.map(move |event| {
            let _ = &open;
            event
        }))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let open = Open::new(&self.activities, id, false);
        Ok(self.inner.resume(id, last_event_id).await?.map(move |event| {
            let _ = &open;
            event
        }))
    }
}
