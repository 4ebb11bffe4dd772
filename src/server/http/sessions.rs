//! The HTTP session manager: rmcp's local one, plus a limit on open sessions and the link
//! between a transport session and its toolbelt state, so that closing a session (`DELETE`,
//! the idle timeout, or shutdown) ends the commands it started.

use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, GetExtensions, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::ServerSseMessage;
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError, SessionConfig,
};

use rmcp::transport::streamable_http_server::{SessionId, SessionManager};

use crate::server::Shared;

/// Put into the extensions of a session's `initialize` request: the server registers its
/// state under this transport session id.
#[derive(Debug, Clone)]
pub struct SessionKey(pub String);

/// Why a session could not be served.
#[derive(Debug, thiserror::Error)]
pub enum SessionsError {
    /// The limit on open sessions is reached.
    #[error(
        "this server already serves its maximum of {0} MCP sessions; retry later, close unused sessions, or start it with a higher `--max-http-sessions`"
    )]
    Full(usize),
    /// rmcp's session manager failed.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
}

/// Sessions of one HTTP server.
pub struct Sessions {
    inner: LocalSessionManager,
    shared: Arc<Shared>,
    max: usize,
    /// Held while a session is created, so concurrent creations cannot pass the limit.
    creating: tokio::sync::Mutex<()>,
}

impl Sessions {
    /// At most `max` sessions; one with no request for `idle` is closed.
    pub fn new(shared: Arc<Shared>, max: usize, idle: Duration) -> Self {
        let mut session_config = SessionConfig::default();
        session_config.keep_alive = Some(idle);
        let mut inner = LocalSessionManager::default();
        inner.session_config = session_config;
        Self { inner, shared, max, creating: tokio::sync::Mutex::new(()) }
    }

    /// How many sessions are open.
    pub async fn count(&self) -> usize {
        self.inner.sessions.read().await.len()
    }

    /// The most sessions served at once.
    pub fn max(&self) -> usize {
        self.max
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
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let _creating = self.creating.lock().await;
        if self.count().await >= self.max {
            return Err(SessionsError::Full(self.max));
        }
        let (id, transport) = self.inner.create_session().await?;
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
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }
}
