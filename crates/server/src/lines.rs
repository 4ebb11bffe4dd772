//! The stdio transport: one JSON-RPC message per line each way. Unlike rmcp's, it answers a
//! line that is not valid JSON with a parse error (-32700) and an invalid request with -32600,
//! both with `"id": null` when the id cannot be read (rmcp ignores the first and answers the
//! second without an `id` key, which the Python SDK rejects). A client stuck sending garbage
//! (a program logging to our stdin) gets at most [`MAX_REPLIES`] answers in a row, not a storm.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};

use crate::jsonrpc;
use crate::tasks_v1::Bridge;

/// The longest line read (a `create_file` of 10 MiB is well under it); longer is refused.
const MAX_LINE: usize = 64 * 1024 * 1024;
/// Rejected lines answered in a row before the transport goes quiet until a valid message.
const MAX_REPLIES: usize = 16;

/// Lines in on `R`, lines out on `W`.
pub(crate) struct Lines<R, W> {
    read: R,
    /// The line read so far: kept across a cancelled `receive`, which rmcp polls in a select.
    line: Vec<u8>,
    /// Inside a line longer than [`MAX_LINE`], dropping it.
    discarding: bool,
    rejected_in_a_row: usize,
    write: Arc<tokio::sync::Mutex<W>>,
    /// Tasks as 2025-11-25 clients speak them (tasks_v1.rs).
    bridge: Arc<std::sync::Mutex<Bridge>>,
}

impl<R, W> Lines<R, W> {
    /// A transport reading `read` (buffered) and writing `write`.
    pub(crate) fn new(read: R, write: W) -> Self {
        let bridge = Arc::default();
        Self { read, line: Vec::new(), discarding: false, rejected_in_a_row: 0, write: Arc::new(write.into()), bridge }
    }

    /// The same, translating the tasks of 2025-11-25 clients through `bridge`.
    pub(crate) fn with_bridge(mut self, bridge: Bridge) -> Self {
        self.bridge = Arc::new(bridge.into());
        self
    }
}

impl<R: AsyncBufRead + Unpin + Send, W: AsyncWrite + Unpin + Send + 'static> Lines<R, W> {
    /// The next whole line, without its terminator; `None` at end of input.
    async fn next_line(&mut self) -> Option<Result<Vec<u8>, ()>> {
        loop {
            let buf = match self.read.fill_buf().await {
                Ok([]) if self.line.is_empty() && !self.discarding => return None,
                Ok([]) => return Some(self.take_line()),
                Ok(buf) => buf,
                Err(err) => {
                    tracing::debug!(%err, "reading stdin failed");
                    return None;
                }
            };
            let (take, complete) = match memchr::memchr(b'\n', buf) {
                Some(end) => (end + 1, true),
                None => (buf.len(), false),
            };
            if !self.discarding {
                self.line.extend_from_slice(&buf[..take]);
                if self.line.len() > MAX_LINE {
                    self.line.clear();
                    self.discarding = true;
                }
            }
            self.read.consume(take);
            if complete {
                return Some(self.take_line());
            }
        }
    }

    /// The line read (or `Err` for one that was too long), leaving room for the next.
    fn take_line(&mut self) -> Result<Vec<u8>, ()> {
        let too_long = std::mem::replace(&mut self.discarding, false);
        let mut line = std::mem::take(&mut self.line);
        while line.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
            line.pop();
        }
        if too_long { Err(()) } else { Ok(line) }
    }

    /// Answers a rejected line, unless too many were answered in a row.
    fn reply(&mut self, rejection: &jsonrpc::Rejection) {
        self.rejected_in_a_row += 1;
        if self.rejected_in_a_row > MAX_REPLIES {
            if self.rejected_in_a_row == MAX_REPLIES + 1 {
                tracing::warn!("many invalid lines on stdin in a row; not answering more until a valid message");
            }
            return;
        }
        let mut answer = rejection.to_json().to_string().into_bytes();
        answer.push(b'\n');
        // Spawned: a cancelled `receive` must not cut the answer in half.
        let write = self.write.clone();
        tokio::spawn(async move { write_line(&write, &answer).await });
    }
}

async fn write_line<W: AsyncWrite + Unpin>(write: &tokio::sync::Mutex<W>, line: &[u8]) -> std::io::Result<()> {
    let mut write = write.lock().await;
    write.write_all(line).await?;
    write.flush().await
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncBufRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        let mut bridge = self.bridge.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let line = if bridge.wants(&item) {
            serde_json::to_value(&item).and_then(|mut value| {
                bridge.outbound(&mut value);
                serde_json::to_vec(&value)
            })
        } else {
            serde_json::to_vec(&item)
        };
        drop(bridge);
        async move {
            let mut line = line.map_err(std::io::Error::other)?;
            line.push(b'\n');
            write_line(&write, &line).await
        }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            let line = match self.next_line().await? {
                Ok(line) => line,
                Err(()) => {
                    let rejection = jsonrpc::Rejection {
                        id: serde_json::Value::Null,
                        code: jsonrpc::INVALID_REQUEST,
                        message: format!("invalid request: a message over {MAX_LINE} bytes"),
                        owes_reply: true,
                    };
                    self.reply(&rejection);
                    continue;
                }
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let rewritten = self.bridge.lock().unwrap_or_else(std::sync::PoisonError::into_inner).inbound(&line);
            match jsonrpc::screen(rewritten.as_deref().unwrap_or(&line)) {
                Ok(message) => {
                    self.rejected_in_a_row = 0;
                    return Some(message);
                }
                Err(rejection) if rejection.owes_reply => self.reply(&rejection),
                Err(rejection) => tracing::debug!(message = rejection.message, "ignored an invalid notification"),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.write.lock().await.shutdown().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bad_lines_are_answered_and_good_ones_passed_on() {
        let input = b"not json\n\n{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}\r\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n";
        let (out, mut peer) = tokio::io::duplex(4096);
        let mut lines = Lines::new(tokio::io::BufReader::new(&input[..]), out);
        let message = lines.receive().await.unwrap();
        assert!(matches!(message, ClientJsonRpcMessage::Request(_)), "{message:?}");
        assert!(lines.receive().await.is_none(), "end of input");
        drop(lines);
        let mut answers = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut peer, &mut answers).await.unwrap();
        let answers: Vec<serde_json::Value> = answers.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(answers.len(), 2, "{answers:?}");
        assert_eq!(
            (answers[0]["id"].clone(), answers[0]["error"]["code"].clone()),
            (serde_json::Value::Null, serde_json::json!(-32700))
        );
        assert_eq!(answers[1]["error"]["code"], -32600);
    }

    #[tokio::test]
    async fn a_storm_of_garbage_gets_a_bounded_number_of_answers() {
        let input = "garbage\n".repeat(100);
        let (out, mut peer) = tokio::io::duplex(1 << 20);
        let mut lines = Lines::new(tokio::io::BufReader::new(input.as_bytes()), out);
        assert!(lines.receive().await.is_none());
        tokio::task::yield_now().await;
        drop(lines);
        let mut answers = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut peer, &mut answers).await.unwrap();
        assert_eq!(answers.lines().count(), MAX_REPLIES);
    }
}
