//! The HTTP front door, around rmcp's service: `/health`, the bearer token, the session limit,
//! actionable `403`s for a refused `Host` or `Origin`, and one log line per request.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::calls::{self, CallCancel, InFlight, Posted};
use crate::http::sessions::Sessions;
use crate::jsonrpc;
use toolbelt_mcp_core::config::http::Token;

/// The path of the health check (no token, no details).
pub const HEALTH: &str = "/health";
const SESSION_HEADER: &str = "mcp-session-id";
const TOO_LARGE: &str = "the request body is larger than this server accepts (`--max-body-bytes`); send less at once";

/// What the front door checks against.
pub struct Guard {
    /// The bearer token, if one is configured.
    pub token: Option<Token>,
    /// The sessions (for the limit).
    pub sessions: Arc<Sessions>,
    /// The sessions' calls in flight (to cancel them).
    pub in_flight: Arc<InFlight>,
    /// The largest body read when a request must be looked into.
    pub max_body_bytes: usize,
}

/// Checks and logs one request.
pub async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let (method, path) = (request.method().clone(), request.uri().path().to_string());
    let peer = request.extensions().get::<ConnectInfo<SocketAddr>>().map(|info| info.0.to_string());
    let asked_session = header_text(request.headers(), SESSION_HEADER);
    let response = check(&guard, request, next).await;
    let session = asked_session.or_else(|| header_text(response.headers(), SESSION_HEADER));
    tracing::debug!(
        %method,
        path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_secs_f64() * 1000.0,
        peer = peer.as_deref().unwrap_or("-"),
        session = session.as_deref().unwrap_or("-"),
        "http request"
    );
    response
}

async fn check(guard: &Guard, mut request: Request, next: Next) -> Response {
    if request.uri().path() == HEALTH {
        return next.run(request).await;
    }
    if let Some(token) = &guard.token
        && !bearer(request.headers()).is_some_and(|presented| token.matches(presented.as_bytes()))
    {
        let mut response = refuse(
            StatusCode::UNAUTHORIZED,
            "unauthorized: send the server's token as `Authorization: Bearer TOKEN` (the token in the server's `--auth-token-file` or `TOOLBELT_AUTH_TOKEN`)",
        );
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"toolbelt-mcp\""));
        return response;
    }
    // Every JSON POST is screened here: rmcp answers malformed JSON, batches and null ids with
    // `415` and a text body; JSON-RPC wants a parse error or an invalid request.
    let mut body = None;
    if request.method() == Method::POST && is_json(request.headers()) {
        let (parts, stream) = request.into_parts();
        let Ok(bytes) = axum::body::to_bytes(stream, guard.max_body_bytes).await else {
            return refuse(StatusCode::PAYLOAD_TOO_LARGE, TOO_LARGE);
        };
        if let Err(rejection) = jsonrpc::screen(&bytes) {
            let answer = rejection.to_json().to_string();
            return (StatusCode::BAD_REQUEST, [(header::CONTENT_TYPE, "application/json")], answer).into_response();
        }
        body = Some(bytes.clone());
        request = Request::from_parts(parts, Body::from(bytes));
    }
    let may_open_session = request.method() == Method::POST && !request.headers().contains_key(SESSION_HEADER);
    if may_open_session && body.as_ref().is_some_and(is_initialize) && !guard.sessions.has_room().await {
        let message = format!(
            "this server already serves its maximum of {} MCP sessions and every one has a call or a command running; retry later, or start it with a higher `--max-http-sessions`",
            guard.sessions.max()
        );
        return refuse(StatusCode::SERVICE_UNAVAILABLE, &message);
    }
    let host = header_text(request.headers(), header::HOST.as_str());
    let origin = header_text(request.headers(), header::ORIGIN.as_str());
    let session = header_text(request.headers(), SESSION_HEADER);
    // A session's request: note its id, to cancel it if the client cancels or disconnects.
    let mut watched = None;
    if let (Some(session), Some(body)) = (session, &body) {
        match calls::classify(body) {
            Posted::Call(id) => {
                let token = guard.in_flight.register(&session, &id);
                request.extensions_mut().insert(CallCancel(token));
                watched = Some((session, id, true));
            }
            Posted::Request(id) => watched = Some((session, id, false)),
            Posted::Cancel(id) if guard.in_flight.cancel(&session, &id) => {
                // The call now ends with an answer on its own stream; rmcp must not see this
                // notice, or it closes that stream empty and drops the answer.
                return StatusCode::ACCEPTED.into_response();
            }
            Posted::Cancel(_) | Posted::Other => {}
        }
    }
    let deleting = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    if deleting && response.status() == StatusCode::ACCEPTED {
        // rmcp answers a closed session with 202; clients (the Python SDK) expect 200 or 204.
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    if let Some((session, id, call)) = watched {
        if is_event_stream(response.headers()) {
            let registry = (guard.in_flight.clone(), guard.sessions.clone());
            return calls::watch(response, registry, session, id, call);
        }
        guard.in_flight.forget(&session, &id);
    }
    if response.status() != StatusCode::FORBIDDEN {
        return response;
    }
    // rmcp refused the `Host` or `Origin` (DNS-rebinding protection): say how to allow it.
    let said = axum::body::to_bytes(response.into_body(), 4096).await.unwrap_or_default();
    let message = if String::from_utf8_lossy(&said).contains("Host") {
        let host = host.unwrap_or_default();
        format!(
            "forbidden: this server does not answer to `Host: {host}` (protection against DNS rebinding); connect through `localhost` or `127.0.0.1`, or, if this name is yours, start the server with `--allow-host {host}`"
        )
    } else {
        let origin = origin.unwrap_or_default();
        format!(
            "forbidden: requests from the web page at `Origin: {origin}` are refused (only pages served from this machine may call it); if that page should use this server, start it with `--allow-origin {origin}`"
        )
    };
    refuse(StatusCode::FORBIDDEN, &message)
}

/// The token of an `Authorization: Bearer TOKEN` header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(header::AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

fn is_json(headers: &HeaderMap) -> bool {
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default();
    content_type.split(';').next().is_some_and(|kind| kind.trim().eq_ignore_ascii_case("application/json"))
}

fn is_event_stream(headers: &HeaderMap) -> bool {
    headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.starts_with("text/event-stream"))
}

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_string)
}

/// Whether a body is an `initialize` request.
fn is_initialize(body: &Bytes) -> bool {
    #[derive(serde::Deserialize)]
    struct Method {
        method: Option<String>,
    }
    serde_json::from_slice::<Method>(body).is_ok_and(|m| m.method.as_deref() == Some("initialize"))
}

fn refuse(status: StatusCode, message: &str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], format!("{message}\n")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(&headers), None);
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer abc"));
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("bearer  abc "));
        assert_eq!(bearer(&headers), Some("abc"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&headers), None);
    }

    #[test]
    fn initialize_requests_are_recognised() {
        assert!(is_initialize(&Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"initialize"}"#)));
        assert!(!is_initialize(&Bytes::from_static(br#"{"method":"tools/list"}"#)));
        assert!(!is_initialize(&Bytes::from_static(b"not json")));
    }
}
