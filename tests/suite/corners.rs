//! Protocol corners, on both transports, as JSON-RPC 2.0 and MCP say: invalid params of a known
//! method are -32602; methods of capabilities not advertised are -32601; malformed JSON is a
//! parse error and batches and null ids invalid requests (HTTP: `400` with a JSON-RPC error);
//! a cancelled HTTP call ends its stream with an answer; logging is a capability.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use super::common::{BIN, Workspace, gone, loopback_http, wait_gone};
use super::http::HttpServer;

/// A server on stdio driven line by line.
struct LineServer {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl LineServer {
    fn start(ws: &Workspace) -> Self {
        let mut child = Command::new(BIN)
            .args(["serve", "--root", ws.root.to_str().unwrap()])
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let (input, output) = (child.stdin.take().unwrap(), BufReader::new(child.stdout.take().unwrap()));
        let mut server = Self { child, input, output };
        server.send_line(&initialize().to_string());
        let answer = server.read();
        assert!(answer["result"]["capabilities"]["logging"].is_object(), "logging is advertised: {answer}");
        server.send_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
        server
    }

    fn send_line(&mut self, line: &str) {
        writeln!(self.input, "{line}").unwrap();
        self.input.flush().unwrap();
    }

    /// The next message the server writes.
    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    /// The answer to `id`, skipping notifications.
    fn answer(&mut self, id: &Value) -> Value {
        loop {
            let message = self.read();
            if message.get("id") == Some(id) {
                return message;
            }
        }
    }
}

impl Drop for LineServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "corners", "version": "0"}}})
}

fn request(id: u64, method: &str, params: Option<Value>) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    message
}

/// (request, the error code and a fragment of its message) of every corner of methods.
fn method_corners() -> Vec<(Value, i64, &'static str)> {
    vec![
        (request(11, "tools/call", Some(json!({"arguments": {}}))), -32602, "missing field `name`"),
        (request(12, "tools/call", None), -32602, "`params` is required"),
        (request(13, "resources/read", Some(json!({}))), -32602, "missing field `uri`"),
        (request(14, "logging/setLevel", Some(json!({"level": "loud"}))), -32602, "unknown variant `loud`"),
        (request(15, "prompts/get", Some(json!({"name": "x"}))), -32602, "no prompt `x`"),
        (request(16, "prompts/get", Some(json!({"name": "plan"}))), -32602, "needs the argument `task`"),
        (
            request(17, "completion/complete", Some(json!({"ref": {"type": "ref/prompt", "name": "x"}}))),
            -32602,
            "missing field `argument`",
        ),
        (request(18, "no/such", None), -32601, "`no/such` is not a method this server offers"),
    ]
}

#[test]
fn stdio_answers_every_corner_as_json_rpc_says() {
    let ws = Workspace::new();
    let mut server = LineServer::start(&ws);
    for (message, code, fragment) in method_corners() {
        server.send_line(&message.to_string());
        let answer = server.answer(&message["id"]);
        assert_eq!(answer["error"]["code"], code, "{message}: {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(fragment), "{message}: {answer}");
    }
    let malformed = [
        (r#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#, json!(null), -32700),
        ("not json at all", json!(null), -32700),
        (r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#, json!(null), -32600),
        (r#"[{"jsonrpc":"2.0","id":7,"method":"tools/list"}]"#, json!(null), -32600),
        (r#"{"jsonrpc":"1.0","id":8,"method":"ping"}"#, json!(8), -32600),
    ];
    for (line, id, code) in malformed {
        server.send_line(line);
        let answer = server.read();
        assert_eq!((answer["id"].clone(), answer["error"]["code"].as_i64()), (id, Some(code)), "{line}: {answer}");
    }
    // The connection survives them all, and logging works: a level, then a warning.
    server.send_line(&request(20, "logging/setLevel", Some(json!({"level": "warning"}))).to_string());
    assert_eq!(server.answer(&json!(20))["result"], json!({}));
    let moved = ws.root.with_file_name("moved-away");
    std::fs::rename(&ws.root, &moved).unwrap();
    let call = request(21, "tools/call", Some(json!({"name": "todo_operations", "arguments": {"operation": "read"}})));
    server.send_line(&call.to_string());
    let mut notices = Vec::new();
    loop {
        let message = server.read();
        if message["id"] == json!(21) {
            break;
        }
        notices.push(message);
    }
    std::fs::rename(&moved, &ws.root).unwrap();
    let warning =
        notices.iter().find(|n| n["method"] == "notifications/message").unwrap_or_else(|| panic!("{notices:?}"));
    assert_eq!(warning["params"]["level"], "warning");
    assert!(warning["params"]["data"].as_str().unwrap().contains("no longer exists"), "{warning}");
}

/// A raw JSON POST: the status and the body.
async fn post_raw(url: &str, body: &str, session: Option<&str>) -> (u16, String) {
    let mut request = loopback_http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    if let Some(bearer) = super::http::bearer_for(url) {
        request = request.header("authorization", bearer);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap_or_default())
}

/// The JSON-RPC message of an SSE (or JSON) answer that has an `id`.
fn answer_in(body: &str) -> Value {
    let datas = body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim).filter(|d| !d.is_empty());
    let messages: Vec<Value> =
        datas.chain(std::iter::once(body.trim())).filter_map(|d| serde_json::from_str(d).ok()).collect();
    messages.into_iter().find(|m| m.get("id").is_some()).unwrap_or_else(|| panic!("no answer in {body:?}"))
}

#[tokio::test]
async fn http_answers_every_corner_as_json_rpc_says() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    let url = server.url();
    let session = super::http::raw_session(&url).await;
    for (message, code, fragment) in method_corners() {
        let (status, body) = post_raw(&url, &message.to_string(), Some(&session)).await;
        let answer = answer_in(&body);
        assert_eq!(answer["error"]["code"], code, "{message}: {status} {answer}");
        assert!(answer["error"]["message"].as_str().unwrap().contains(fragment), "{message}: {answer}");
    }
    let malformed = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#,
        r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#,
        r#"[{"jsonrpc":"2.0","id":7,"method":"tools/list"}]"#,
        r#"{"foo":1}"#,
    ];
    for body in malformed {
        for in_session in [None, Some(session.as_str())] {
            let (status, text) = post_raw(&url, body, in_session).await;
            assert_eq!(status, 400, "{body}: {text}");
            let error: Value = serde_json::from_str(&text).unwrap();
            assert!(error["id"].is_null() && error["error"]["code"].as_i64().is_some(), "{body}: {text}");
        }
    }
}

/// A cancelled call over HTTP: its stream ends with an answer (-32800), not empty (after which
/// clients poll it for ever), and its command is gone.
#[tokio::test]
async fn a_cancelled_http_call_ends_its_stream_with_an_answer() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    let url = server.url();
    let session = super::http::raw_session(&url).await;
    let (command, arg) = super::common::unique_sleep(100);
    let call = json!({"jsonrpc": "2.0", "id": 42, "method": "tools/call", "params": {
        "name": "terminal_operations", "arguments": {"operation": "run_command", "command": command}}});
    let (url2, session2) = (url.clone(), session.clone());
    let answered = tokio::spawn(async move { post_raw(&url2, &call.to_string(), Some(&session2)).await });
    let pid = super::common::process_with_args(&["sleep", &arg], 10).await;
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42}});
    assert_eq!(post_raw(&url, &cancel.to_string(), Some(&session)).await.0, 202);
    let (status, body) = tokio::time::timeout(Duration::from_secs(10), answered).await.unwrap().unwrap();
    let answer = answer_in(&body);
    assert_eq!(
        (status, answer["id"].clone(), answer["error"]["code"].clone()),
        (200, json!(42), json!(-32800)),
        "{body}"
    );
    assert!(wait_gone(pid, 5).await && gone(pid), "the cancelled command {pid} is gone");
}

/// Node's `child_process` (so Claude Code, Claude Desktop, VS Code, Cursor, Qwen Code) gives a
/// server Unix stream sockets, not pipes, for stdin and stdout; a socket-activated or inetd-style
/// launcher gives one socket as both. The server serves over either with its runtime's own
/// thread: no thread of it ever sits in a blocking read of stdin (as one does with tokio's
/// portable stdin, a hand-off per message), and it ends when the client closes.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn serves_over_the_unix_sockets_node_hosts_give_it_from_its_own_thread() {
    use rmcp::ServiceExt;
    use rmcp::model::CallToolRequestParams;
    use std::os::fd::OwnedFd;
    use std::os::unix::net::UnixStream;
    let ws = Workspace::new();
    for one_socket in [false, true] {
        // What the client holds (read, write) and what the server gets (stdin, stdout).
        let (client_read, client_write, stdin, stdout): (UnixStream, UnixStream, OwnedFd, OwnedFd) = if one_socket {
            let (ours, theirs) = UnixStream::pair().unwrap();
            let theirs_too = theirs.try_clone().unwrap();
            (ours.try_clone().unwrap(), ours, theirs.into(), theirs_too.into())
        } else {
            let (ours_in, theirs_in) = UnixStream::pair().unwrap();
            let (ours_out, theirs_out) = UnixStream::pair().unwrap();
            (ours_out, ours_in, theirs_in.into(), theirs_out.into())
        };
        let mut child = tokio::process::Command::new(BIN)
            .args(["serve", "--root", ws.root.to_str().unwrap()])
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home)
            .stdin(Stdio::from(stdin))
            .stdout(Stdio::from(stdout))
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let pid = child.id().unwrap();
        client_read.set_nonblocking(true).unwrap();
        client_write.set_nonblocking(true).unwrap();
        let transport = (
            tokio::net::UnixStream::from_std(client_read).unwrap(),
            tokio::net::UnixStream::from_std(client_write).unwrap(),
        );
        let client = ().serve(transport).await.unwrap();
        let read = CallToolRequestParams::new("file_operations").with_arguments(
            json!({"operation": "read_file", "path": "src/main.rs", "details": true}).as_object().unwrap().clone(),
        );
        for _ in 0..20 {
            let result = client.call_tool(read.clone()).await.unwrap();
            let structured = result.structured_content.unwrap();
            assert_eq!(structured["lines"][0], "1\tfn main() {", "{structured}");
        }
        // Idle now: does any thread of it wait in `read(0, …)`? Looked at ten times over 100 ms,
        // so a reader thread between two reads is not missed.
        const READ: &str = if cfg!(target_arch = "aarch64") { "63" } else { "0" };
        for _ in 0..10 {
            let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
            let reading_stdin: Vec<String> = tasks
                .filter_map(|task| std::fs::read_to_string(task.unwrap().path().join("syscall")).ok())
                .filter(|syscall| syscall.split(' ').take(2).eq([READ, "0x0"]))
                .collect();
            assert!(
                reading_stdin.is_empty(),
                "one socket: {one_socket}; a thread blocks reading stdin: {reading_stdin:?}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        client.cancel().await.unwrap();
        let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.unwrap().unwrap();
        assert!(status.success(), "one socket: {one_socket}: {status}");
    }
}

/// A client that asks `server/discover` (protocol 2026-07-28) and then initializes a session on
/// the same stdio connection, as Claude Code does, gets both answered and then serves calls.
#[test]
fn discover_then_initialize_on_one_stdio_connection() {
    let ws = Workspace::new();
    let mut server = LineServer::start(&ws);
    let discover = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}}});
    server.send_line(&discover.to_string());
    let discovered = server.answer(&json!(1));
    let versions = discovered["result"]["supportedVersions"].as_array().unwrap().clone();
    assert!(versions.contains(&json!("2026-07-28")) && versions.contains(&json!("2025-11-25")), "{discovered}");
    let mut init = initialize();
    init["id"] = json!(2);
    server.send_line(&init.to_string());
    let initialized = server.answer(&json!(2));
    assert_eq!(initialized["result"]["protocolVersion"], "2025-06-18", "{initialized}");
    server.send_line(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string());
    server.send_line(&request(3, "tools/list", None).to_string());
    let tools = server.answer(&json!(3));
    assert_eq!(tools["result"]["tools"].as_array().map(Vec::len), Some(4), "{tools}");
}
