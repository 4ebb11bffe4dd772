//! Cancelling the calls of a client that disconnects. A session's call answers on the SSE
//! stream of its `POST`; when that stream is dropped before it ends (the client closed the
//! connection or died), the session is sent `notifications/cancelled` for the call, which
//! ends its command. Requests without a session (protocol 2026-07-28) are cancelled by rmcp
//! itself.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::{Stream, StreamExt};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::SessionManager;

use crate::server::http::sessions::Sessions;

/// The fields of a JSON-RPC message that say whether it is a request, and which.
#[derive(serde::Deserialize)]
struct Envelope {
    id: Option<serde_json::Value>,
    method: Option<serde::de::IgnoredAny>,
}

/// The id of the JSON-RPC request in a body, if it is one request (not a notification).
pub fn request_id(body: &Bytes) -> Option<serde_json::Value> {
    let message: Envelope = serde_json::from_slice(body).ok()?;
    message.method?;
    message.id
}

/// `response`, whose end before completion cancels request `id` of `session`.
pub fn watch(response: Response, sessions: Arc<Sessions>, session: String, id: serde_json::Value) -> Response {
    let (parts, body) = response.into_parts();
    let on_drop = move || {
        let notice = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the client disconnected"},
        });
        let Ok(message) = serde_json::from_value::<ClientJsonRpcMessage>(notice) else { return };
        tokio::spawn(async move {
            let session: Arc<str> = session.into();
            if let Err(err) = sessions.accept_message(&session, message).await {
                tracing::debug!(%err, "the cancellation of a disconnected call was not delivered");
            }
            tracing::info!(session = %session, "client disconnected mid-call; the call was cancelled");
        });
    };
    let stream = Watched { inner: body.into_data_stream(), finished: false, on_drop: Some(Box::new(on_drop)) };
    Response::from_parts(parts, Body::from_stream(stream))
}

/// A body stream that runs `on_drop` if dropped before its end.
struct Watched<S> {
    inner: S,
    finished: bool,
    on_drop: Option<Box<dyn FnOnce() + Send>>,
}

impl<S: Stream + Unpin> Stream for Watched<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        if let Poll::Ready(None) = next {
            self.finished = true;
        }
        next
    }
}

impl<S> Drop for Watched<S> {
    fn drop(&mut self) {
        if !self.finished
            && let Some(on_drop) = self.on_drop.take()
        {
            on_drop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_requests_have_an_id_to_cancel() {
        let id = |text: &'static str| request_id(&Bytes::from_static(text.as_bytes()));
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#), Some(serde_json::json!(7)));
        assert_eq!(id(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), None);
        assert_eq!(id(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#), None);
        assert_eq!(id("nonsense"), None);
    }

    #[tokio::test]
    async fn a_stream_dropped_early_runs_its_hook_once_and_a_finished_one_never() {
        let ran = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let hook = |ran: &Arc<std::sync::atomic::AtomicUsize>| {
            let ran = ran.clone();
            Some(Box::new(move || {
                ran.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }) as Box<dyn FnOnce() + Send>)
        };
        let mut finished = Watched { inner: futures::stream::iter([1, 2]), finished: false, on_drop: hook(&ran) };
        while finished.next().await.is_some() {}
        drop(finished);
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 0);
        let mut early = Watched { inner: futures::stream::iter([1, 2]), finished: false, on_drop: hook(&ran) };
        assert_eq!(early.next().await, Some(1));
        drop(early);
        assert_eq!(ran.load(std::sync::atomic::Ordering::SeqCst), 1);
    }
}
