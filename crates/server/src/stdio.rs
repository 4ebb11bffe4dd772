//! Serving one connection over stdin/stdout, until stdin closes or a signal (`SIGTERM`,
//! `SIGINT`, `SIGHUP`; Windows: Ctrl-C, Ctrl-Break, console close) arrives; then every
//! command the connection started is ended.
//!
//! When stdin and stdout are pipes (as hosts written in Rust, Python or Go spawn servers) or
//! Unix stream sockets (as Node's `child_process` does, so Claude Code, Claude Desktop, VS Code,
//! Cursor and Qwen Code), they are driven by the runtime's epoll loop directly; tokio's
//! portable `stdin`/`stdout` would hand every read and write to a blocking thread, a wake-up
//! each way per message. Anything else (a terminal, a file, Windows) falls back to those.
//! Either way messages go through [`Lines`], which answers malformed input as JSON-RPC asks.

use std::sync::Arc;

use rmcp::ServiceExt;
use tokio::io::BufReader;

use crate::lines::Lines;
use crate::signals::Signals;
use crate::{Server, Shared};
use toolbelt_mcp_core::config::Config;

/// Serves MCP on stdio until the client disconnects (stdin closes).
pub async fn serve(config: Arc<Config>) -> Result<(), String> {
    super::check_state_dir(&config)?;
    super::sweep_leftovers(&config);
    let mut signals = Signals::new()?;
    let store = toolbelt_mcp_store::Store::open(config.store.as_ref().map(|s| s.url()), &config.state_dir)?;
    let layout = config.tool_layout;
    let bridge = || crate::tasks_v1::Bridge::new(crate::tasks_v1::task_tools(layout));
    let server = Server::new(Shared::new(config, store, false));
    let session = server.session();
    let service = match stdio() {
        #[cfg(unix)]
        Stdio::Pipes(input, output) => {
            server.serve(Lines::new(BufReader::new(input), output).with_bridge(bridge())).await
        }
        #[cfg(unix)]
        Stdio::Sockets(input, output) => {
            server.serve(Lines::new(BufReader::new(input), output).with_bridge(bridge())).await
        }
        Stdio::Portable => {
            server
                .serve(Lines::new(BufReader::new(tokio::io::stdin()), tokio::io::stdout()).with_bridge(bridge()))
                .await
        }
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

/// How stdin and stdout are driven.
enum Stdio {
    /// Both are pipes, read and written by the runtime's epoll loop.
    #[cfg(unix)]
    Pipes(tokio::net::unix::pipe::Receiver, tokio::net::unix::pipe::Sender),
    /// Both are Unix stream sockets (Node's `child_process` stdio), read and written by the
    /// runtime's epoll loop.
    #[cfg(unix)]
    Sockets(tokio::net::UnixStream, tokio::net::UnixStream),
    /// tokio's portable handles: each read and write on a blocking thread.
    Portable,
}

/// Non-blocking handles on stdin and stdout when both are pipes or both Unix stream sockets.
/// Both are checked before either is touched: making one non-blocking (which changes the open
/// file, shared with the parent) and then falling back to blocking reads on it would fail with
/// `EAGAIN`.
#[cfg(unix)]
fn stdio() -> Stdio {
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use tokio::net::unix::pipe;
    let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Pipe,
        Socket,
    }
    let kind = |fd: BorrowedFd<'_>| {
        let file_type = rustix::fs::fstat(fd).ok().map(|st| rustix::fs::FileType::from_raw_mode(st.st_mode));
        let stream_socket = || {
            rustix::net::getsockname(fd).is_ok_and(|addr| addr.address_family() == rustix::net::AddressFamily::UNIX)
                && rustix::net::sockopt::socket_type(fd).is_ok_and(|kind| kind == rustix::net::SocketType::STREAM)
        };
        match file_type {
            Some(rustix::fs::FileType::Fifo) => Some(Kind::Pipe),
            Some(rustix::fs::FileType::Socket) if stream_socket() => Some(Kind::Socket),
            _ => None,
        }
    };
    let owned = |fd: BorrowedFd<'_>| fd.try_clone_to_owned().ok();
    let both = kind(stdin.as_fd()).filter(|&k| kind(stdout.as_fd()) == Some(k));
    let handles = || Some((owned(stdin.as_fd())?, owned(stdout.as_fd())?));
    let socket = |fd: OwnedFd| {
        let socket = std::os::unix::net::UnixStream::from(fd);
        socket.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(socket).ok()
    };
    let driven = match both {
        Some(Kind::Pipe) => handles().and_then(|(input, output)| {
            Some(Stdio::Pipes(pipe::Receiver::from_owned_fd(input).ok()?, pipe::Sender::from_owned_fd(output).ok()?))
        }),
        Some(Kind::Socket) => {
            handles().and_then(|(input, output)| Some(Stdio::Sockets(socket(input)?, socket(output)?)))
        }
        None => None,
    };
    driven.unwrap_or(Stdio::Portable)
}

/// Windows: the portable handles serve (tokio has no anonymous-pipe driver there).
#[cfg(windows)]
fn stdio() -> Stdio {
    Stdio::Portable
}
