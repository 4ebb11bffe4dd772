//! Serving one connection over stdin/stdout, until stdin closes or a signal (`SIGTERM`,
//! `SIGINT`, `SIGHUP`; Windows: Ctrl-C, Ctrl-Break, console close) arrives; then every
//! command the connection started is ended.
//!
//! When stdin and stdout are pipes on Unix (as every MCP host spawns servers), they are driven
//! by the runtime's epoll loop directly; tokio's portable `stdin`/`stdout` would hand every
//! read and write to a blocking thread, a wake-up each way per message. Anything else (a
//! terminal, a file, Windows) falls back to those. Either way messages go through [`Lines`], which answers malformed
//! input as JSON-RPC asks.

use std::sync::Arc;

use rmcp::ServiceExt;
use tokio::io::BufReader;

use crate::config::Config;
use crate::server::lines::Lines;
use crate::server::signals::Signals;
use crate::server::{Server, Shared};

/// Serves MCP on stdio until the client disconnects (stdin closes).
pub async fn serve(config: Arc<Config>) -> Result<(), String> {
    super::sweep_leftovers(&config);
    let mut signals = Signals::new()?;
    let store = crate::store::Store::open(config.store.as_ref().map(|s| s.url()), &config.state_dir)?;
    let server = Server::new(Shared::new(config, store, false));
    let session = server.session();
    let service = match pipes() {
        Some((input, output)) => server.serve(Lines::new(BufReader::new(input), output)).await,
        None => server.serve(Lines::new(BufReader::new(tokio::io::stdin()), tokio::io::stdout())).await,
    };
    let outcome = match service {
        Ok(service) => tokio::select! {
            stopped = service.waiting() => stopped.map(drop).map_err(|err| format!("the server stopped with an error: {err}")),
            _ = signals.next() => Ok(()),
        },
        Err(err) => Err(format!("the MCP handshake failed: {err}")),
    };
    // Stdin closed, a signal, or a failed handshake: no command may outlive the server.
    session.close().await;
    outcome
}

/// Non-blocking handles on stdin and stdout, if both are pipes. Both are checked before
/// either is touched: making one non-blocking (which changes the open file, shared with the
/// parent) and then falling back to blocking reads on it would fail with `EAGAIN`.
#[cfg(unix)]
fn pipes() -> Option<(tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender)> {
    use std::os::fd::AsFd;
    use tokio::net::unix::pipe;
    let is_pipe = |fd: std::os::fd::BorrowedFd<'_>| {
        rustix::fs::fstat(fd)
            .is_ok_and(|st| rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Fifo)
    };
    if !is_pipe(std::io::stdin().as_fd()) || !is_pipe(std::io::stdout().as_fd()) {
        return None;
    }
    let input = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    let output = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    Some((pipe::Receiver::from_owned_fd(input).ok()?, pipe::Sender::from_owned_fd(output).ok()?))
}

/// Windows: the portable handles serve (tokio has no anonymous-pipe driver there).
#[cfg(windows)]
fn pipes() -> Option<(tokio::io::Stdin, tokio::io::Stdout)> {
    None
}
