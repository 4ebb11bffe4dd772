//! Serving MCP over streamable HTTP (rmcp's service on axum): sessions for clients before
//! protocol 2026-07-28, sessionless requests for later ones, behind the front door in
//! [`guard`]. On `SIGTERM`/`SIGINT`/`SIGHUP` it stops accepting, gives calls in flight a grace
//! period, closes every session, ends every command and makes the audit log durable.

mod calls;
pub mod guard;
mod sessions;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use calls::CallCancel;
pub use sessions::SessionKey;

use crate::http::guard::{Guard, HEALTH};
use crate::http::sessions::Sessions;
use crate::signals::Signals;
use crate::{Server, Shared};
use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_core::config::http::HttpConfig;

/// The MCP endpoint.
pub const ENDPOINT: &str = "/mcp";
/// The Prometheus metrics (behind the bearer token, like [`ENDPOINT`]).
pub const METRICS: &str = "/metrics";
/// How long open connections get to finish once everything else has stopped.
const DRAIN: Duration = Duration::from_secs(2);

/// Serves MCP on `http.addr` until a signal asks it to stop.
pub async fn serve(config: Arc<Config>, http: HttpConfig) -> Result<(), String> {
    if config.network == toolbelt_mcp_sandbox::mode::Network::Host
        && config.sandbox != toolbelt_mcp_sandbox::mode::SandboxMode::FullAccess
    {
        return Err("`--network host` cannot be used with `serve --http`: commands would share this machine's loopback, where this server listens, and could call it themselves (and answer its questions); use `--network allow` (the default: other hosts through the proxy) and list the local services commands need with `--network-allow 127.0.0.1:PORT`".into());
    }
    super::check_state_dir(&config)?;
    super::sweep_leftovers(&config);
    let mut signals = Signals::new()?;
    let store = toolbelt_mcp_store::Store::open(config.store.as_ref().map(|s| s.url()), &config.state_dir)?;
    let shared = Shared::new(config.clone(), store, true);
    let sessions = Arc::new(Sessions::new(shared.clone(), http.max_sessions, http.idle_timeout));
    let stop_sessions = CancellationToken::new();
    let mcp_config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(http.allowed_hosts.clone())
        .with_allowed_origins(http.allowed_origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(http.max_body_bytes)
        .with_cancellation_token(stop_sessions.clone());
    let for_factory = shared.clone();
    let mcp = StreamableHttpService::new(move || Ok(Server::new(for_factory.clone())), sessions.clone(), mcp_config);
    let guard = Arc::new(Guard {
        token: http.token.clone(),
        sessions: sessions.clone(),
        in_flight: Arc::default(),
        max_body_bytes: http.max_body_bytes,
    });
    let metrics_shared = shared.clone();
    let app = Router::new()
        .route(HEALTH, get(|| async { "ok\n" }))
        .route(METRICS, get(move || metrics(metrics_shared.clone())))
        .route_service(ENDPOINT, mcp)
        .layer(axum::middleware::from_fn_with_state(guard, guard::guard));

    let listener = tokio::net::TcpListener::bind(http.addr).await.map_err(|err| {
        format!("cannot listen on `{}`: {err}; pick another address or port (port 0 picks a free one)", http.addr)
    })?;
    // The proxy never takes a command there, even where the user allowed loopback.
    #[cfg(unix)]
    if let Ok(bound) = listener.local_addr() {
        toolbelt_mcp_sandbox::proxy::note_own_listener(bound);
    }
    let local = listener.local_addr().map_err(|err| format!("cannot read the address listened on: {err}"))?;
    let _ = std::io::stderr().write_all(startup_lines(&format!("http://{local}{ENDPOINT}"), &http).as_bytes());

    tokio::spawn(reap_sessionless(shared.clone(), http.idle_timeout, stop_sessions.clone()));
    tokio::spawn(sessions.clone().reap(stop_sessions.clone()));
    let accepting = CancellationToken::new();
    let service = app.into_make_service_with_connect_info::<SocketAddr>();
    // Answers go out in several writes (headers, SSE events): without `TCP_NODELAY`, Nagle's
    // algorithm meets the client's delayed ACK and a call waits ~40 ms.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        if let Err(err) = tcp.set_nodelay(true) {
            tracing::debug!(%err, "cannot set TCP_NODELAY");
        }
    });
    let serving = axum::serve(listener, service).with_graceful_shutdown(accepting.clone().cancelled_owned());
    let mut serving = tokio::spawn(async move { serving.await });
    let outcome = tokio::select! {
        name = signals.next() => {
            tracing::warn!(signal = name, "shutting down: no new connections; calls in flight get {:?}", http.shutdown_grace);
            Ok(())
        }
        ended = &mut serving => ended.map_err(|e| e.to_string()).and_then(|r| r.map_err(|e| e.to_string()))
            .map_err(|err| format!("the HTTP server stopped: {err}")),
    };
    accepting.cancel();
    shared.calls().close();
    if tokio::time::timeout(http.shutdown_grace, shared.calls().wait()).await.is_err() {
        tracing::warn!(calls = shared.calls().len(), "calls still running after the grace period are cancelled");
    }
    // Every command ends (`SIGTERM`, then `SIGKILL`), so the calls still running answer...
    futures::future::join_all(shared.take_all_sessions().iter().map(|session| session.close())).await;
    let _ = tokio::time::timeout(DRAIN, shared.calls().wait()).await;
    // ...before the sessions and their streams close.
    stop_sessions.cancel();
    sessions.close_all().await;
    if tokio::time::timeout(DRAIN, serving).await.is_err() {
        tracing::debug!("connections still open after the drain period are dropped");
    }
    shared.audit().flush();
    outcome
}

/// Answers `GET /metrics`: every counter of `toolbelt_mcp_core::metrics`, with the open sessions counted now.
async fn metrics(shared: Arc<Shared>) -> impl axum::response::IntoResponse {
    toolbelt_mcp_core::metrics::set_sessions_open(shared.open_sessions());
    (
        [(axum::http::header::CONTENT_TYPE, toolbelt_mcp_core::metrics::CONTENT_TYPE)],
        toolbelt_mcp_core::metrics::render(),
    )
}

/// What the server says when it listens: its URL, whether and how requests are
/// authenticated, and host configs to paste (with the generated token: nobody else has it).
fn startup_lines(url: &str, http: &HttpConfig) -> String {
    use toolbelt_mcp_core::config::http::TokenSource;
    let bearer = match (&http.token, &http.token_source) {
        (Some(token), TokenSource::Generated(_)) => format!("Bearer {}", token.reveal()),
        (Some(_), _) => "Bearer $TOOLBELT_AUTH_TOKEN".to_string(),
        (None, _) => String::new(),
    };
    let mut text = match &http.token_source {
        TokenSource::Generated(file) => format!(
            "toolbelt-mcp: serving MCP on {url}; every request needs the bearer token (generated, kept in `{}`)\n",
            file.display()
        ),
        TokenSource::Given => format!("toolbelt-mcp: serving MCP on {url}; every request needs the bearer token\n"),
        TokenSource::None => {
            #[cfg(unix)]
            let who = format!("uid {}", rustix::process::getuid().as_raw());
            #[cfg(windows)]
            let who = "your user".to_string();
            return format!(
                "toolbelt-mcp: serving MCP on {url} without a token (--no-auth)\ntoolbelt-mcp: warning: any process of any user of this machine can run commands here as {who}; drop `--no-auth` to require a token\n"
            );
        }
    };
    let json = serde_json::json!({"mcpServers": {"toolbelt": {"type": "http", "url": url, "headers": {"Authorization": bearer}}}});
    text.push_str(&format!(
        "toolbelt-mcp: Claude Code: claude mcp add --transport http toolbelt {url} --header \"Authorization: {bearer}\"\n"
    ));
    text.push_str(&format!("toolbelt-mcp: JSON config (.mcp.json, Cursor): {json}\n"));
    text
}

/// The idle timeout for requests without a session (protocol 2026-07-28): when none has come
/// for `idle`, the commands they started are ended, as a session's would be.
async fn reap_sessionless(shared: Arc<Shared>, idle: Duration, stop: CancellationToken) {
    let mut tick = tokio::time::interval((idle / 4).clamp(Duration::from_millis(250), Duration::from_secs(60)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        if let Some(sessionless) = shared.idle_sessionless(idle) {
            let ended = sessionless.terminals.end_processes().await;
            if ended > 0 {
                tracing::info!(groups = ended, "no sessionless request for {idle:?}; their commands were ended");
            }
        }
    }
}
