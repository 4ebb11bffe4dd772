//! Cancelling a session's calls. rmcp, told `notifications/cancelled` for a call, closes the
//! call's SSE stream with nothing on it and drops the answer; since the stream was primed as
//! resumable, a client then polls it every few seconds, for ever. So the front door takes the
//! cancellation of a session's `tools/call` itself: it cancels the call through a token of
//! its own and keeps the notice from rmcp, and the call ends with an answer (-32800, request
//! cancelled, as the Python SDK's server does) that rmcp sends and keeps for a resume. A call
//! whose client disconnects is cancelled the same way. Other requests of a session are
//! cancelled on disconnect with a notice to rmcp; requests without a session (protocol
//! 2026-07-28) are cancelled by rmcp itself when their connection drops.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::{Stream, StreamExt};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::SessionManager;
use tokio_util::sync::CancellationToken;

use crate::http::sessions::Sessions;

/// Put into the HTTP request of a session's `tools/call`: cancelled when the client cancels
/// the call or disconnects. rmcp hands the request's parts to the handler.
#[derive(Debug, Clone)]
pub struct CallCancel(pub CancellationToken);

/// The session calls in flight, by session and request id.
#[derive(Default)]
pub struct InFlight(Mutex<HashMap<(String, String), CancellationToken>>);

impl InFlight {
    /// A token for call `id` of `session`.
    pub fn register(&self, session: &str, id: &serde_json::Value) -> CancellationToken {
        let token = CancellationToken::new();
        self.calls().insert((session.to_string(), id.to_string()), token.clone());
        token
    }

    /// Cancels call `id` of `session`; false when no such call is in flight.
    pub fn cancel(&self, session: &str, id: &serde_json::Value) -> bool {
        let token = self.calls().remove(&(session.to_string(), id.to_string()));
        token.inspect(CancellationToken::cancel).is_some()
    }

    /// Forgets call `id` of `session` (its answer was sent).
    pub fn forget(&self, session: &str, id: &serde_json::Value) {
        self.calls().remove(&(session.to_string(), id.to_string()));
    }

    fn calls(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), CancellationToken>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a session's `POST` carries, as far as cancelling goes.
#[derive(Debug, PartialEq)]
pub(super) enum Posted {
    /// A `tools/call` request with this id.
    Call(serde_json::Value),
    /// Another request with this id.
    Request(serde_json::Value),
    /// `notifications/cancelled` for the request with this id.
    Cancel(serde_json::Value),
    /// Anything else.
    Other,
}

/// The fields of a JSON-RPC message that matter here.
#[derive(serde::Deserialize)]
struct Envelope {
    id: Option<serde_json::Value>,
    method: Option<String>,
    params: Option<CancelParams>,
}

#[derive(serde::Deserialize)]
struct CancelParams {
    #[serde(rename = "requestId")]
    request_id: Option<serde_json::Value>,
}

/// What `body` carries.
pub(super) fn classify(body: &Bytes) -> Posted {
    let Ok(message) = serde_json::from_slice::<Envelope>(body) else { return Posted::Other };
    match (message.method.as_deref(), message.id) {
        (Some("tools/call"), Some(id)) => Posted::Call(id),
        (Some(_), Some(id)) => Posted::Request(id),
        (Some("notifications/cancelled"), None) => {
            message.params.and_then(|p| p.request_id).map_or(Posted::Other, Posted::Cancel)
        }
        _ => Posted::Other,
    }
}

/// `response`, the answer stream of request `id` of `session`: when it is dropped before its
/// end (the client went away), a call is cancelled through `in_flight` (so it still ends with
/// an answer kept for a resume) and any other request through a notice to rmcp.
pub(super) fn watch(
    response: Response,
    (in_flight, sessions): (Arc<InFlight>, Arc<Sessions>),
    session: String,
    id: serde_json::Value,
    call: bool,
) -> Response {
    let (parts, body) = response.into_parts();
    let on_end = move |finished: bool| {
        if finished {
            in_flight.forget(&session, &id);
            return;
        }
        if call && in_flight.cancel(&session, &id) {
            tracing::info!(session = %session, "client disconnected mid-call; the call was cancelled");
            return;
        }
        let notice = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "the client disconnected"},
        });
        let Ok(message) = serde_json::from_value::<ClientJsonRpcMessage>(notice) else { return };
        tokio::spawn(async move {
            let session: Arc<str> = session.into();
            if let Err(err) = sessions.accept_message(&session, message).await {
                tracing::debug!(%err, "the cancellation of a disconnected request was not delivered");
            }
        });
    };
    let stream = Watched { inner: body.into_data_stream(), finished: false, on_end: Some(Box::new(on_end)) };
    Response::from_parts(parts, Body::from_stream(stream))
}

/// A body stream that runs `on_end` once: with `true` at its end, with `false` if dropped
/// before it.
struct Watched<S> {
    inner: S,
    finished: bool,
    on_end: Option<Box<dyn FnOnce(bool) + Send>>,
}

impl<S: Stream + Unpin> Stream for Watched<S> {
    type Item = S::Item;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let next = self.inner.poll_next_unpin(cx);
        if let Poll::Ready(None) = next {
            self.finished = true;
            if let Some(on_end) = self.on_end.take() {
                on_end(true);
            }
        }
        next
    }
}

impl<S> Drop for Watched<S> {
    fn drop(&mut self) {
        if let Some(on_end) = self.on_end.take() {
            on_end(self.finished);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posts_are_sorted_for_cancelling() {
        let posted = |text: &'static str| classify(&Bytes::from_static(text.as_bytes()));
        assert_eq!(posted(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#), Posted::Call(serde_json::json!(7)));
        assert_eq!(
            posted(r#"{"jsonrpc":"2.0","id":"a","method":"tools/list"}"#),
            Posted::Request(serde_json::json!("a"))
        );
        let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#;
        assert_eq!(posted(cancel), Posted::Cancel(serde_json::json!(7)));
        assert_eq!(posted(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Posted::Other);
        assert_eq!(posted(r#"{"jsonrpc":"2.0","id":7,"result":{}}"#), Posted::Other);
        assert_eq!(posted("nonsense"), Posted::Other);
    }

    #[tokio::test]
    async fn a_stream_ends_once_finished_or_dropped_early() {
        let ends = Arc::new(Mutex::new(Vec::new()));
        let hook = |ends: &Arc<Mutex<Vec<bool>>>| {
            let ends = ends.clone();
            Some(Box::new(move |finished| ends.lock().unwrap().push(finished)) as Box<dyn FnOnce(bool) + Send>)
        };
        let mut finished = Watched { inner: futures::stream::iter([1, 2]), finished: false, on_end: hook(&ends) };
        while finished.next().await.is_some() {}
        drop(finished);
        let mut early = Watched { inner: futures::stream::iter([1, 2]), finished: false, on_end: hook(&ends) };
        assert_eq!(early.next().await, Some(1));
        drop(early);
        assert_eq!(*ends.lock().unwrap(), [true, false]);
    }

    #[test]
    fn cancelling_a_call_cancels_its_token_once() {
        let in_flight = InFlight::default();
        let token = in_flight.register("s", &serde_json::json!(3));
        assert!(!in_flight.cancel("other", &serde_json::json!(3)));
        assert!(in_flight.cancel("s", &serde_json::json!(3)) && token.is_cancelled());
        assert!(!in_flight.cancel("s", &serde_json::json!(3)), "forgotten once cancelled");
    }
}
