//! Serving one connection over stdin/stdout.
//!
//! When stdin and stdout are pipes (as every MCP host spawns servers), they are driven by the
//! runtime's epoll loop directly; tokio's portable `stdin`/`stdout` would hand every read and
//! write to a blocking thread, a wake-up each way per message. Anything else (a terminal, a
//! file) falls back to those.

use std::os::fd::AsFd;
use std::sync::Arc;

use rmcp::ServiceExt;
use tokio::net::unix::pipe;

use crate::config::Config;
use crate::server::Server;

/// Serves MCP on stdio until the client disconnects (stdin closes).
pub async fn serve(config: Arc<Config>) -> Result<(), String> {
    // Temp files a killed server left behind are removed off the startup path.
    let journal = crate::sandbox::write::TempJournal::new(&config.state_dir);
    tokio::task::spawn_blocking(move || {
        let removed = journal.sweep();
        if removed > 0 {
            tracing::info!(removed, "removed temp files left by a server that was killed mid-write");
        }
    });
    let server = Server::new(config);
    let service = match pipes() {
        Some(pipes) => server.serve(pipes).await,
        None => server.serve(rmcp::transport::stdio()).await,
    }
    .map_err(|err| format!("the MCP handshake failed: {err}"))?;
    service.waiting().await.map_err(|err| format!("the server stopped with an error: {err}"))?;
    Ok(())
}

/// Non-blocking handles on stdin and stdout, if both are pipes.
fn pipes() -> Option<(pipe::Receiver, pipe::Sender)> {
    let input = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let output = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    Some((pipe::Receiver::from_owned_fd(input).ok()?, pipe::Sender::from_owned_fd(output).ok()?))
}
