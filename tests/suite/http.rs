//! Streamable HTTP (`serve --http`): both protocol eras through rmcp's HTTP client, isolated
//! sessions, the front door (Host, Origin, token, body size, session limit), the idle
//! timeout, cancellation on disconnect, progress over SSE, and shutdown without orphans.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientCapabilities, ClientConfig, ClientRequest, Implementation,
    ProgressNotificationParam, ProtocolVersion,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use super::common::{BIN, Client, Workspace, gone, loopback_http, op, unpack, wait_gone};
use super::policy::Asker;

const TOKEN: &str = "test-token-0123456789abcdef";
/// A header list entry that makes `post` send no token.
const NO_TOKEN: (&str, &str) = ("authorization", "");

/// A `serve --http 127.0.0.1:0` server; killed when dropped.
pub(crate) struct HttpServer {
    child: tokio::process::Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// What it wrote on stderr so far.
    stderr: Arc<Mutex<Vec<String>>>,
    /// The bearer token it requires: given, or generated (read from its startup lines).
    pub token: Option<String>,
}

/// The token of each server started, by URL, so that raw requests carry it.
static TOKENS: Mutex<Vec<(String, String)>> = Mutex::new(Vec::new());

/// The `Authorization` header the server at `url` requires, if any.
pub(crate) fn bearer_for(url: &str) -> Option<String> {
    let tokens = TOKENS.lock().unwrap();
    tokens.iter().find(|(base, _)| url.starts_with(base.as_str())).map(|(_, token)| format!("Bearer {token}"))
}

impl HttpServer {
    pub(crate) async fn start(ws: &Workspace, extra: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_at(ws, "127.0.0.1:0", extra, env).await
    }

    /// A server on `127.0.0.1:port`.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) async fn start_at_port(ws: &Workspace, port: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        Self::start_at(ws, &format!("127.0.0.1:{port}"), extra, env).await
    }

    async fn start_at(ws: &Workspace, addr: &str, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut command = tokio::process::Command::new(BIN);
        command
            .args(["serve", "--http", addr, "--root", ws.root.to_str().unwrap()])
            .args(extra)
            .env_remove("TOOLBELT_AUTH_TOKEN")
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut next_line = async || {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.unwrap().unwrap();
            let line = line.expect("the server printed its URL before exiting");
            stderr.lock().unwrap().push(line.clone());
            line
        };
        let (base, generated) = loop {
            let line = next_line().await;
            if let Some(url) = line.split("serving MCP on ").nth(1) {
                let url = url.split_whitespace().next().unwrap().trim_end_matches(';');
                break (url.strip_suffix("/mcp").unwrap().to_string(), line.contains("(generated, kept in"));
            }
        };
        let mut token = env.iter().find(|(name, _)| *name == "TOOLBELT_AUTH_TOKEN").map(|(_, t)| t.to_string());
        if generated {
            // The next lines are host configs to paste, with the generated token.
            let line = next_line().await;
            let found = line.split("Authorization: Bearer ").nth(1).unwrap_or_else(|| panic!("{line}"));
            token = Some(found.split('"').next().unwrap().to_string());
        }
        if let Some(token) = &token {
            TOKENS.lock().unwrap().push((base.clone(), token.clone()));
        }
        let keep = stderr.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                keep.lock().unwrap().push(line);
            }
        });
        Self { child, base, stderr, token }
    }

    /// The MCP endpoint.
    pub(crate) fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    pub(crate) fn transport(&self, token: Option<&str>) -> StreamableHttpClientTransport<reqwest::Client> {
        let mut config = StreamableHttpClientTransportConfig::with_uri(self.url());
        if let Some(token) = token {
            config = config.auth_header(token);
        }
        StreamableHttpClientTransport::with_client(loopback_http(), config)
    }

    /// A transport with the server's own token.
    pub(crate) fn authed(&self) -> StreamableHttpClientTransport<reqwest::Client> {
        self.transport(self.token.as_deref())
    }

    /// A client that opens a session (protocol before 2026-07-28).
    pub(crate) async fn client(&self) -> Client {
        Client { service: ().serve(self.authed()).await.unwrap(), pid: None }
    }

    /// A protocol 2026-07-28 client (no session: every request stands alone).
    async fn modern(&self) -> RunningService<RoleClient, ClientConfig> {
        let info = ClientConfig::new(ClientCapabilities::default(), Implementation::new("modern", "0"));
        let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
        info.serve_with_lifecycle(self.authed(), lifecycle).await.unwrap()
    }

    fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.pid() as i32).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
    }

    fn logged(&self, needle: &str) -> bool {
        self.stderr.lock().unwrap().iter().any(|line| line.contains(needle))
    }

    /// Waits up to 5 s for a line of stderr holding `needle`.
    async fn logs(&self, needle: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.logged(needle) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.logged(needle)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        // Its port may serve another test's server next.
        TOKENS.lock().unwrap_or_else(std::sync::PoisonError::into_inner).retain(|(base, _)| *base != self.base);
    }
}

/// A raw `initialize` POST.
fn initialize_body() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
}

async fn post(url: &str, body: &Value, headers: &[(&str, &str)]) -> (u16, String, reqwest::header::HeaderMap) {
    let mut request = loopback_http()
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    for (name, value) in headers.iter().filter(|(_, value)| !value.is_empty()) {
        request = request.header(*name, *value);
    }
    // The server's token, unless the caller sends its own (or none: an empty `authorization`).
    if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("authorization"))
        && let Some(bearer) = bearer_for(url)
    {
        request = request.header("authorization", bearer);
    }
    let response = request.send().await.unwrap();
    let (status, headers) = (response.status().as_u16(), response.headers().clone());
    (status, response.text().await.unwrap_or_default(), headers)
}

/// A session opened by hand (no `GET` stream, as a client that only posts): its id.
pub(crate) async fn raw_session(url: &str) -> String {
    let (status, text, headers) = post(url, &initialize_body(), &[]).await;
    assert_eq!(status, 200, "{text}");
    let id = headers["mcp-session-id"].to_str().unwrap().to_string();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(url, &initialized, &[("mcp-session-id", &id)]).await.0, 202);
    id
}

/// A `tools/call` of `terminal_operations` in a raw session: the status and the answer.
async fn raw_call(url: &str, session: &str, fields: Value) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "terminal_operations", "arguments": super::common::with_details(&op("run_command", fields))}});
    let (status, text, _) = post(url, &body, &[("mcp-session-id", session)]).await;
    (status, text)
}

/// The pid a [`background_sleep`] printed, in a raw answer.
fn raw_pid(answer: &str) -> u32 {
    let pid = answer.split("\"stdout\":[\"").nth(1).and_then(|rest| rest.split('"').next());
    super::common::host_pid(pid.unwrap_or_else(|| panic!("no pid in {answer}")))
}

#[tokio::test]
async fn both_protocol_eras_list_and_call_and_health_answers() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    let health = loopback_http().get(format!("{}/health", server.base)).send().await.unwrap();
    assert_eq!((health.status().as_u16(), health.text().await.unwrap()), (200, "ok\n".to_string()));

    let legacy = server.client().await;
    let tools = legacy.service.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names, ["file_operations", "terminal_operations", "todo_operations", "memory_operations"]);
    let read = legacy.file(json!({"operation": "read_file", "path": "README.md"})).await;
    assert!(!read.is_error && read.text.contains("Fixture"), "{}", read.text);

    let modern = server.modern().await;
    assert_eq!(modern.peer().list_all_tools().await.unwrap().len(), 4);
    let args = op("grep_search", json!({"pattern": "fn "})).as_object().unwrap().clone();
    let found = unpack(
        modern.peer().call_tool(CallToolRequestParams::new("file_operations").with_arguments(args)).await.unwrap(),
    );
    assert!(!found.is_error && found.text.contains("src/lib.rs"), "{}", found.text);
    legacy.close().await;
    modern.cancel().await.unwrap();
    assert!(server.logs("session opened").await, "a line per session opened");
    assert!(!server.logged("http request"), "requests are logged at `debug` only");
}

/// Logging never blocks the server: with every request logged (`RUST_LOG=debug`) and stderr
/// piped to nobody who reads it, a thousand requests are answered (the pipe holds ~64 KiB:
/// written in place, the log stalled every request after about the 110th).
#[tokio::test]
async fn a_stderr_nobody_reads_never_stalls_the_server() {
    let ws = Workspace::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut child = tokio::process::Command::new(BIN)
        .args(["serve", "--http", &format!("127.0.0.1:{port}"), "--no-auth", "--root", ws.root.to_str().unwrap()])
        .env("RUST_LOG", "debug")
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .env("XDG_STATE_HOME", &ws.state_home)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while loopback_http().get(format!("{base}/health")).send().await.is_err() {
        assert!(Instant::now() < deadline, "the server did not start");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    for n in 0..1000 {
        let request = loopback_http()
            .post(format!("{base}/mcp"))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .body(ping.to_string())
            .send();
        let answered = tokio::time::timeout(Duration::from_secs(5), request).await;
        assert!(matches!(answered, Ok(Ok(_))), "request {n} was not answered: {answered:?}");
    }
    let _ = child.kill().await;
}

#[tokio::test]
async fn sessions_keep_their_commands_and_changes_to_themselves() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    let (a, b) = (server.client().await, server.client().await);
    let started = a.term("run_command", background_sleep()).await;
    let pid = pid_of(&started);
    let id = started.structured["session_id"].as_str().unwrap().to_string();
    assert_eq!(a.term("list_sessions", json!({})).await.structured["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(b.term("list_sessions", json!({})).await.structured["sessions"].as_array().unwrap().len(), 0);
    let foreign = b.term("read_output", json!({"session_id": id})).await;
    assert!(foreign.is_error, "session b must not see a's command: {}", foreign.text);
    assert!(!a.file(json!({"operation": "create_file", "path": "by-a.txt", "content": "a"})).await.is_error);
    let undo_b = b.file(json!({"operation": "undo"})).await;
    assert!(undo_b.is_error, "b has nothing to undo: {}", undo_b.text);
    assert!(ws.root.join("by-a.txt").exists());
    assert!(!a.file(json!({"operation": "undo"})).await.is_error);
    assert!(!ws.root.join("by-a.txt").exists());
    // Todo lists are shared by workspace, as on stdio.
    assert!(!a.todo("add", json!({"todos": [{"title": "shared"}]})).await.is_error);
    assert_eq!(b.todo("read", json!({})).await.structured["todos"][0]["title"], "shared");
    // Closing a's session (HTTP DELETE) ends its command; b is untouched.
    a.close().await;
    assert!(wait_gone(pid, 5).await, "closing the session must end its command {pid}");
    assert!(!b.run("true").await.is_error);
    b.close().await;
}

#[tokio::test]
async fn a_grant_for_the_session_stays_in_its_session() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &["--approval", "on-write"], &[]).await;
    let (asker_a, asker_b) = (Asker::default(), Asker::default());
    let a = asker_a.clone().serve(server.authed()).await.unwrap();
    let b = asker_b.clone().serve(server.authed()).await.unwrap();
    let create = |path: &str| {
        let args = op("create_file", json!({"path": path, "content": "x"})).as_object().unwrap().clone();
        CallToolRequestParams::new("file_operations").with_arguments(args)
    };
    asker_a.answer(&["allow_session"]);
    assert!(!unpack(a.peer().call_tool(create("notes/a1.txt")).await.unwrap()).is_error);
    assert!(!unpack(a.peer().call_tool(create("notes/a2.txt")).await.unwrap()).is_error);
    assert_eq!(asker_a.asked(), 1, "asked over HTTP once; the grant covers the second write");
    let refused = unpack(b.peer().call_tool(create("notes/b1.txt")).await.unwrap());
    assert_eq!(asker_b.asked(), 1, "the other session is asked: a's grant is not its own");
    assert!(refused.is_error && !ws.root.join("notes/b1.txt").exists(), "{}", refused.text);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();

    // A 2026-07-28 client is asked through an input-required result and retries with the answer.
    let asker = Asker::default();
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let modern = asker.clone().serve_with_lifecycle(server.authed(), lifecycle).await.unwrap();
    asker.answer(&["allow_once"]);
    let made = unpack(modern.call_tool(create("modern.txt")).await.unwrap());
    assert!(!made.is_error && ws.root.join("modern.txt").exists(), "{}", made.text);
    assert_eq!(asker.asked(), 1);
    modern.cancel().await.unwrap();
}

#[tokio::test]
async fn wrong_host_and_foreign_origin_get_403_with_the_flag_to_use() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &["--allow-origin", "https://app.example.com"], &[]).await;
    let url = server.url();
    let (status, text, _) = post(&url, &initialize_body(), &[("host", "evil.example:80")]).await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("`Host: evil.example:80`") && text.contains("--allow-host"), "{text}");
    let (status, text, _) = post(&url, &initialize_body(), &[("origin", "http://evil.example")]).await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("`Origin: http://evil.example`") && text.contains("--allow-origin"), "{text}");
    for allowed in ["http://localhost:3000", "https://app.example.com"] {
        let (status, text, _) = post(&url, &initialize_body(), &[("origin", allowed)]).await;
        assert_eq!(status, 200, "{allowed}: {text}");
    }
    let (status, _, _) = post(&url, &initialize_body(), &[("host", "localhost")]).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_token_is_required_on_every_request_but_health() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[("TOOLBELT_AUTH_TOKEN", TOKEN)]).await;
    let url = server.url();
    let (status, text, headers) = post(&url, &initialize_body(), &[NO_TOKEN]).await;
    assert_eq!(status, 401, "{text}");
    assert!(text.contains("Authorization: Bearer"), "{text}");
    assert!(headers.get("www-authenticate").unwrap().to_str().unwrap().starts_with("Bearer"));
    let wrong = format!("Bearer {TOKEN}x");
    assert_eq!(post(&url, &initialize_body(), &[("authorization", &wrong)]).await.0, 401);
    assert_eq!(post(&url, &initialize_body(), &[("authorization", "Bearer ")]).await.0, 401);
    let health = loopback_http().get(format!("{}/health", server.base)).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200, "health needs no token");

    let refused = ().serve(server.transport(None)).await;
    assert!(refused.is_err(), "an rmcp client without the token is refused");
    let client = Client { service: ().serve(server.transport(Some(TOKEN))).await.unwrap(), pid: None };
    assert!(!client.file(json!({"operation": "list_dir"})).await.is_error);
    client.close().await;
}

/// Finding 7 of the policy review: a loopback server without a token was open to every local
/// user (uid 65534 ran commands as the server's uid). Now a token is generated by default.
#[tokio::test]
async fn a_loopback_server_needs_its_generated_token_even_from_another_local_user() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    let token = server.token.clone().expect("a token was generated and printed");
    assert_eq!(token.len(), 64);
    let file = ws.state_home.join("toolbelt-mcp/http-token");
    assert_eq!(std::fs::read_to_string(&file).unwrap().trim(), token);
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(server.logs("claude mcp add --transport http toolbelt").await, "a config to paste is printed");
    assert!(server.logs("\"headers\":{\"Authorization\":\"Bearer ").await, "JSON with headers is printed");
    assert_eq!(post(&server.url(), &initialize_body(), &[NO_TOKEN]).await.0, 401);
    assert_eq!(post(&server.url(), &initialize_body(), &[]).await.0, 200, "with the printed token");

    // Another local user: a request without the token, from uid 65534 (when we can be it).
    if rustix::process::geteuid().is_root() {
        let body = initialize_body().to_string();
        let port = server.base.rsplit(':').next().unwrap();
        let script = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port}; printf 'POST /mcp HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\nContent-Type: application/json\\r\\nAccept: application/json, text/event-stream\\r\\nContent-Length: {}\\r\\nConnection: close\\r\\n\\r\\n%s' '{body}' >&3; head -1 <&3 | cut -d' ' -f2",
            body.len()
        );
        let out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/bash", "-c", &script])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "401", "{}", String::from_utf8_lossy(&out.stderr));
    }
    drop(server);

    // `--no-auth` opts out on loopback, with a warning naming the risk.
    let open = HttpServer::start(&ws, &["--no-auth"], &[]).await;
    assert!(open.token.is_none());
    assert!(open.logs("any process of any user of this machine can run commands here").await);
    assert_eq!(post(&open.url(), &initialize_body(), &[NO_TOKEN]).await.0, 200);
}

#[tokio::test]
async fn refuses_to_start_on_a_public_address_without_a_token() {
    let ws = Workspace::new();
    let output = tokio::process::Command::new(BIN)
        .args(["serve", "--http", "0.0.0.0:0", "--root", ws.root.to_str().unwrap()])
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .env_remove("TOOLBELT_AUTH_TOKEN")
        .output()
        .await
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("refusing to serve `0.0.0.0:0` without a bearer token"), "{stderr}");
    assert!(stderr.contains("--auth-token-file"), "{stderr}");

    let token_file = ws.config_home.join("token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    // A token file is the user's alone, or the server refuses it.
    std::fs::set_permissions(&token_file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let public =
        HttpServer::start_at(&ws, "0.0.0.0:0", &["--auth-token-file", token_file.to_str().unwrap()], &[]).await;
    let url = public.url().replace("0.0.0.0", "127.0.0.1");
    let bearer = format!("Bearer {TOKEN}");
    assert_eq!(post(&url, &initialize_body(), &[NO_TOKEN]).await.0, 401);
    assert_eq!(post(&url, &initialize_body(), &[("authorization", &bearer)]).await.0, 200);
}

#[tokio::test]
async fn bodies_over_the_limit_get_413() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &["--max-body-bytes", "4096"], &[]).await;
    let client = server.client().await;
    let big = client.file(json!({"operation": "create_file", "path": "small.txt", "content": "x".repeat(1000)})).await;
    assert!(!big.is_error, "{}", big.text);
    let mut body = initialize_body();
    body["params"]["clientInfo"]["name"] = json!("x".repeat(8000));
    let (status, text, _) = post(&server.url(), &body, &[]).await;
    assert_eq!(status, 413, "{text}");
    client.close().await;
}

/// Most hosts never send `DELETE`: at the limit, a new session takes the place of the least
/// recently used one that has nothing running; only when every session is busy is it `503`.
#[tokio::test]
async fn the_session_limit_evicts_the_least_recently_used_idle_session() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &["--max-http-sessions", "3"], &[]).await;
    let url = server.url();
    let (busy, oldest, recent) = (raw_session(&url).await, raw_session(&url).await, raw_session(&url).await);
    let pid = raw_pid(&raw_call(&url, &busy, background_sleep()).await.1);
    assert_eq!(raw_call(&url, &oldest, json!({"command": "true"})).await.0, 200);
    assert_eq!(raw_call(&url, &recent, json!({"command": "true"})).await.0, 200);
    let newcomer = raw_session(&url).await;
    assert!(server.logs("closing the least recently used idle session").await);
    assert_eq!(raw_call(&url, &busy, json!({"command": "true"})).await.0, 200, "the session running a command is kept");
    assert!(!gone(pid));
    assert_eq!(raw_call(&url, &recent, json!({"command": "true"})).await.0, 200, "the more recent one is kept");
    assert_eq!(raw_call(&url, &oldest, json!({"command": "true"})).await.0, 404, "the least recently used is closed");
    // Every session busy: only then a new one is refused.
    for session in [&recent, &newcomer] {
        raw_call(&url, session, background_sleep()).await;
    }
    let (status, text, _) = post(&server.url(), &initialize_body(), &[]).await;
    assert_eq!(status, 503, "{text}");
    assert!(text.contains("maximum of 3 MCP sessions") && text.contains("has a call or a command running"), "{text}");
    // Requests of open sessions and of 2026-07-28 clients (no session) are still served.
    let modern = server.modern().await;
    assert_eq!(modern.peer().list_all_tools().await.unwrap().len(), 4);
    modern.cancel().await.unwrap();
}

/// 200 clients that initialize and go away without `DELETE` (as Claude Code, Qwen Code, the
/// Inspector and the TS SDK's `close()` do) never lock out the 201st.
#[tokio::test]
async fn two_hundred_abandoned_sessions_do_not_block_the_next() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    for n in 0..200 {
        let (status, text, headers) = post(&server.url(), &initialize_body(), &[]).await;
        assert_eq!(status, 200, "initialize {n}: {text}");
        assert!(headers.contains_key("mcp-session-id"));
    }
    let client = server.client().await;
    assert!(!client.run("echo 201").await.is_error, "the 201st session is served");
    client.close().await;
}

/// A session nobody uses (no request, no connected stream) is closed after the idle timeout,
/// and its commands with it; a client that keeps its `GET` stream open is still connected.
#[tokio::test]
async fn an_idle_session_is_closed_and_its_commands_killed() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &["--idle-timeout", "2s"], &[]).await;
    let connected = server.client().await;
    let kept = pid_of(&connected.term("run_command", background_sleep()).await);
    let abandoned = raw_session(&server.url()).await;
    let pid = raw_pid(&raw_call(&server.url(), &abandoned, background_sleep()).await.1);
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!gone(pid), "still running before the timeout");
    assert!(wait_gone(pid, 8).await, "the idle session's command {pid} survived");
    assert!(server.logs("session idle; closing it").await, "{:?}", server.stderr.lock().unwrap());
    assert!(!gone(kept) && !connected.run("true").await.is_error, "a connected client's session stays");
    connected.close().await;
}

#[tokio::test]
async fn idle_sessionless_commands_are_ended_too() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &["--idle-timeout", "2s"], &[]).await;
    let modern = server.modern().await;
    let pid = sessionless_background(&modern).await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!gone(pid), "still running before the timeout");
    assert!(wait_gone(pid, 8).await, "the idle sessionless command {pid} survived");
    assert!(server.logs("their commands were ended").await, "{:?}", server.stderr.lock().unwrap());
    // The state itself stays usable.
    let listed = modern.peer().call_tool(
        CallToolRequestParams::new("terminal_operations")
            .with_arguments(op("list_sessions", json!({})).as_object().unwrap().clone()),
    );
    assert!(!unpack(listed.await.unwrap()).is_error);
    modern.cancel().await.unwrap();
}

/// Counts progress notifications.
#[derive(Clone, Default)]
struct Progress(Arc<AtomicUsize>);

impl ClientHandler for Progress {
    async fn on_progress(&self, _params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn run_request(command: &str) -> ClientRequest {
    let args = op("run_command", json!({ "command": command })).as_object().unwrap().clone();
    ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("terminal_operations").with_arguments(args),
    ))
}

/// `run_command` fields of a background `sleep 300` that prints its pid first.
pub(crate) fn background_sleep() -> Value {
    json!({"command": format!("echo {}; exec sleep 300", super::common::SELF_PID), "background": true, "details": true})
}

/// The pid a [`background_sleep`] printed.
pub(crate) fn pid_of(started: &super::common::Reply) -> u32 {
    assert!(!started.is_error, "{}", started.text);
    super::common::host_pid(started.joined("stdout").as_str())
}

/// A [`background_sleep`] started by a 2026-07-28 client (no session); its pid.
async fn sessionless_background(modern: &RunningService<RoleClient, ClientConfig>) -> u32 {
    let args = op("run_command", background_sleep()).as_object().unwrap().clone();
    let params = CallToolRequestParams::new("terminal_operations").with_arguments(args);
    pid_of(&unpack(modern.peer().call_tool(params).await.unwrap()))
}

/// A foreground `sleep` of about 300 s that no other test runs: its argument (to find its
/// process) and the command.
fn sleep_writing_pid(_ws: &Workspace, _name: &str) -> (String, String) {
    let (command, arg) = super::common::unique_sleep(300);
    (arg, command)
}

/// The host pid of the unique `sleep` with argument `arg`.
async fn read_pid(arg: &str) -> u32 {
    super::common::process_with_args(&["sleep", arg], 10).await
}

#[tokio::test]
async fn long_calls_stream_progress_and_a_dropped_client_cancels_them() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    let counter = Progress::default();
    let service = counter.clone().serve(server.authed()).await.unwrap();
    let handle =
        service.send_cancellable_request(run_request("sleep 2.3; echo done"), PeerRequestOptions::no_options()).await;
    handle.unwrap().await_response().await.unwrap();
    assert!(counter.0.load(Ordering::SeqCst) >= 2, "progress notifications arrive over SSE while it runs");

    let (pid_file, command) = sleep_writing_pid(&ws, "cancelled");
    let _pending = service.send_cancellable_request(run_request(&command), PeerRequestOptions::no_options()).await;
    let pid = read_pid(&pid_file).await;
    // The client goes away without a word: its connection closes.
    drop(_pending);
    drop(service);
    assert!(wait_gone(pid, 10).await, "the call of a client that disconnected kept running ({pid})");
}

#[tokio::test]
async fn a_2026_client_that_goes_away_mid_call_cancels_it() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    let modern = server.modern().await;
    let (pid_file, command) = sleep_writing_pid(&ws, "modern");
    let pending = modern.send_cancellable_request(run_request(&command), PeerRequestOptions::no_options()).await;
    let pid = read_pid(&pid_file).await;
    assert!(!gone(pid));
    drop(pending);
    drop(modern);
    assert!(wait_gone(pid, 10).await, "the sessionless call of a client that went away kept running ({pid})");
}

#[tokio::test]
async fn sigterm_finishes_then_kills_everything_and_exits() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &["--shutdown-grace", "1s"], &[]).await;
    let client = server.client().await;
    let bg_pid = pid_of(&client.term("run_command", background_sleep()).await);
    let (pid_file, command) = sleep_writing_pid(&ws, "fg");
    let peer = client.service.peer().clone();
    let running = tokio::spawn(async move { peer.send_request(run_request(&command)).await });
    let fg_pid = read_pid(&pid_file).await;
    let modern = server.modern().await;
    let sessionless_pid = sessionless_background(&modern).await;

    let started = Instant::now();
    let server_pid = server.pid();
    server.signal(rustix::process::Signal::TERM);
    assert!(wait_gone(server_pid, 10).await, "the server exits after SIGTERM");
    assert!(started.elapsed() < Duration::from_secs(8), "took {:?}", started.elapsed());
    for pid in [bg_pid, fg_pid, sessionless_pid] {
        assert!(gone(pid), "process {pid} outlived the server");
    }
    assert!(server.logs("shutting down").await);
    // The call in flight was answered before the server went away.
    let answered = tokio::time::timeout(Duration::from_secs(5), running).await.expect("an answer").unwrap().unwrap();
    let text = format!("{answered:?}");
    assert!(text.contains("because the session closed"), "{text}");
}

#[tokio::test]
async fn a_connection_dropped_mid_call_cancels_the_call() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    let (status, _, headers) = post(&server.url(), &initialize_body(), &[]).await;
    assert_eq!(status, 200);
    let session = headers.get("mcp-session-id").unwrap().to_str().unwrap().to_string();
    let with_session = [("mcp-session-id", session.as_str()), ("mcp-protocol-version", "2025-06-18")];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert_eq!(post(&server.url(), &initialized, &with_session).await.0, 202);
    let (pid_file, command) = sleep_writing_pid(&ws, "dropped");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "terminal_operations", "arguments": {"operation": "run_command", "command": command}}});
    let mut request = loopback_http()
        .post(server.url())
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(call.to_string());
    for (name, value) in with_session {
        request = request.header(name, value);
    }
    request = request.header("authorization", bearer_for(&server.url()).unwrap());
    let response = request.send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let pid = read_pid(&pid_file).await;
    drop(response);
    assert!(wait_gone(pid, 10).await, "the call of a dropped connection kept running ({pid})");
    let deleted = loopback_http()
        .delete(server.url())
        .header("mcp-session-id", &session)
        .header("authorization", bearer_for(&server.url()).unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status().as_u16(), 204, "a closed session answers 204 No Content");
    assert_eq!(post(&server.url(), &initialized, &with_session).await.0, 404, "the session is gone");
}

/// Protocol 2026-07-28 removed `initialize`, `ping`, `logging/setLevel` and resource
/// subscriptions (SEP-2575): a request of that era for one is an unknown method (HTTP 404,
/// -32601), as the official conformance suite checks; a resource that is not there names its
/// URI in the error's data (SEP-2164).
#[tokio::test]
async fn removed_methods_are_unknown_to_a_2026_request_and_a_missing_resource_names_its_uri() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "removed-methods-test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let era = |method| [("mcp-protocol-version", "2026-07-28"), ("mcp-method", method)];
    for method in ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"] {
        let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": {"_meta": meta}});
        let (status, text, _) = post(&server.url(), &body, &era(method)).await;
        let answer = first_json(&text);
        assert_eq!((status, answer["error"]["code"].as_i64()), (404, Some(-32601)), "{method}: {text}");
        assert_eq!(answer["id"], 7, "{method}: the error carries the request's id");
    }
    let read = json!({"jsonrpc": "2.0", "id": 8, "method": "resources/read",
        "params": {"uri": "test://nowhere", "_meta": meta}});
    let (_, text, _) = post(
        &server.url(),
        &read,
        &[("mcp-name", "test://nowhere"), era("resources/read")[0], era("resources/read")[1]],
    )
    .await;
    assert_eq!(first_json(&text)["error"]["data"]["uri"], "test://nowhere", "{text}");
}

/// The first JSON-RPC message of a body, plain JSON or server-sent events.
fn first_json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| {
        let data = text.lines().filter_map(|line| line.strip_prefix("data:")).find(|d| !d.trim().is_empty());
        serde_json::from_str(data.unwrap_or("null").trim()).unwrap_or(Value::Null)
    })
}
