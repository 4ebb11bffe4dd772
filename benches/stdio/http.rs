//! Section 6 of the bench: a bounded load on `serve --http` over loopback. `SESSIONS` MCP
//! sessions at once, each making `calls` calls (`read_file` and `grep_search` in turn), under
//! a time limit; the floor is `GET /health` under the same concurrency (the HTTP stack, no
//! MCP). Afterwards the server's open file descriptors, threads and child processes are
//! counted against their values before the load.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

/// Sessions at once.
pub(crate) const SESSIONS: usize = 32;
/// The whole load stops by itself after this long.
const LIMIT: Duration = Duration::from_secs(180);

/// What the server holds, from `/proc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Held {
    fds: usize,
    threads: usize,
    children: usize,
}

fn held(pid: u32) -> Held {
    let count = |dir: String| std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0);
    let children = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| {
            stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().nth(1)) == Some(&pid.to_string())
        })
        .count();
    Held { fds: count(format!("/proc/{pid}/fd")), threads: count(format!("/proc/{pid}/task")), children }
}

/// Latencies (ms) and errors of one load.
struct Load {
    latencies: Vec<f64>,
    errors: Vec<String>,
    wall: Duration,
    stopped: bool,
}

impl Load {
    fn percentile(&self, p: f64) -> f64 {
        let mut v = self.latencies.clone();
        v.sort_by(|a, b| a.total_cmp(b));
        v.get(((v.len().max(1) - 1) as f64 * p).round() as usize).copied().unwrap_or(f64::NAN)
    }

    fn row(&self, label: &str, floor: Option<&Load>) {
        let throughput = self.latencies.len() as f64 / self.wall.as_secs_f64();
        let ratio =
            floor.map_or("1.0×".to_string(), |f| format!("{:.1}×", self.percentile(0.99) / f.percentile(0.99)));
        println!(
            "| {label} | {} | {} | {throughput:.0} req/s | {:.2} ms | {:.2} ms | {ratio} |{}",
            self.latencies.len(),
            self.errors.len(),
            self.percentile(0.5),
            self.percentile(0.99),
            if self.stopped { " stopped by the time limit" } else { "" }
        );
    }
}

/// Section 6: 32 sessions × `calls` calls over HTTP, against `GET /health` under the same load.
pub(crate) fn http_load(bin: &Path, ws: &Path, calls: usize) {
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a runtime");
    runtime.block_on(run(bin, ws, calls));
}

async fn run(bin: &Path, ws: &Path, calls: usize) {
    let mut server = tokio::process::Command::new(bin)
        .args(["serve", "--http", "127.0.0.1:0", "--root"])
        .arg(ws)
        .env("XDG_STATE_HOME", ws.join(".state"))
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn the server");
    let pid = server.id().expect("a pid");
    let mut lines = BufReader::new(server.stderr.take().expect("stderr")).lines();
    let url = loop {
        let line = lines.next_line().await.expect("stderr").expect("the server printed its URL");
        if let Some(rest) = line.split("serving MCP on ").nth(1) {
            break rest.split_whitespace().next().expect("a URL").trim_end_matches(';').to_string();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let base = url.trim_end_matches("/mcp").to_string();
    // One call first, so what the process opens once (the audit log) is counted before.
    let warm = drive_one(&url).await;
    assert!(warm.is_ok(), "a first call failed: {warm:?}");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let before = held(pid);

    let deadline = Instant::now() + LIMIT;
    let floor = drive(calls, deadline, Target::Health(format!("{base}/health"))).await;
    let mcp = drive(calls, deadline, Target::Mcp(url.clone())).await;
    // Closed connections and idle blocking threads (kept 10 s by tokio) take a moment to go.
    let settle = Instant::now();
    let mut after = held(pid);
    while settle.elapsed() < Duration::from_secs(15) && (after.fds > before.fds || after.threads > before.threads) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        after = held(pid);
    }

    println!("\n## Streamable HTTP load: {SESSIONS} sessions × {calls} calls on loopback\n");
    println!("| load | requests | errors | throughput | p50 | p99 | p99 / floor p99 |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    floor.row("`GET /health`, same concurrency (floor)", None);
    mcp.row("`read_file` 1 KB and `grep_search` in turn", Some(&floor));
    println!(
        "\nserver before → {:.1} s after the load: {} → {} open fds, {} → {} threads, {} → {} child processes",
        settle.elapsed().as_secs_f64(),
        before.fds,
        after.fds,
        before.threads,
        after.threads,
        before.children,
        after.children
    );
    for error in floor.errors.iter().chain(&mcp.errors).take(5) {
        println!("error: {error}");
    }
    let leaked = after.fds > before.fds || after.children > before.children;
    if leaked || !mcp.errors.is_empty() || !floor.errors.is_empty() {
        println!("\n**HTTP LOAD FAILED: errors or leaked descriptors/processes (see above).**");
    }
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("a pid");
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM to the server");
    let exit = tokio::time::timeout(Duration::from_secs(15), server.wait()).await;
    println!("server after SIGTERM: {:?}", exit.map(|status| status.map(|s| s.to_string())));
}

/// One session with one call.
async fn drive_one(url: &str) -> Result<(), String> {
    let client = reqwest::Client::new();
    let session = open(&client, url).await?;
    call(&client, url, &session, 0).await?;
    client.delete(url).header("mcp-session-id", &session).send().await.map(drop).map_err(|e| e.to_string())
}

/// What a worker asks.
#[derive(Clone)]
enum Target {
    /// `GET` this URL.
    Health(String),
    /// Open a session at this endpoint, call, close it.
    Mcp(String),
}

/// Runs `SESSIONS` workers of `calls` requests each, at once.
async fn drive(calls: usize, deadline: Instant, target: Target) -> Load {
    let started = Instant::now();
    let workers: Vec<_> =
        (0..SESSIONS).map(|_| tokio::spawn(worker(reqwest::Client::new(), calls, deadline, target.clone()))).collect();
    let mut load = Load { latencies: Vec::new(), errors: Vec::new(), wall: Duration::ZERO, stopped: false };
    for worker in workers {
        let (latencies, errors, stopped) = worker.await.expect("a worker");
        load.latencies.extend(latencies);
        load.errors.extend(errors);
        load.stopped |= stopped;
    }
    load.wall = started.elapsed();
    load
}

async fn worker(
    client: reqwest::Client,
    calls: usize,
    deadline: Instant,
    target: Target,
) -> (Vec<f64>, Vec<String>, bool) {
    let (mut latencies, mut errors) = (Vec::with_capacity(calls), Vec::new());
    let session = match &target {
        Target::Mcp(url) => match open(&client, url).await {
            Ok(session) => Some(session),
            Err(err) => return (latencies, vec![err], false),
        },
        Target::Health(_) => None,
    };
    for n in 0..calls {
        if Instant::now() > deadline {
            return (latencies, errors, true);
        }
        let t = Instant::now();
        let done = match (&target, &session) {
            (Target::Mcp(url), Some(session)) => call(&client, url, session, n).await,
            (Target::Health(url), _) => health(&client, url).await,
            (Target::Mcp(_), None) => Err("no session".into()),
        };
        match done {
            Ok(()) => latencies.push(t.elapsed().as_secs_f64() * 1e3),
            Err(err) => errors.push(err),
        }
    }
    if let (Target::Mcp(url), Some(session)) = (&target, &session) {
        let closed = client.delete(url).header("mcp-session-id", session).send().await;
        if let Err(err) =
            closed.map_err(|e| e.to_string()).and_then(|r| r.error_for_status().map_err(|e| e.to_string()))
        {
            errors.push(format!("closing the session: {err}"));
        }
    }
    (latencies, errors, false)
}

async fn health(client: &reqwest::Client, url: &str) -> Result<(), String> {
    let response = client.get(url).send().await.map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("/health answered {}", response.status()));
    }
    response.text().await.map(drop).map_err(|e| e.to_string())
}

/// `initialize` and `notifications/initialized`; returns the session id.
async fn open(client: &reqwest::Client, url: &str) -> Result<String, String> {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "http-bench", "version": "0"}}});
    let response = request(client, url, None, &init).send().await.map_err(|e| e.to_string())?;
    let session = response
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| format!("initialize answered {} without a session", response.status()))?
        .to_string();
    response.text().await.map_err(|e| e.to_string())?;
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let response = request(client, url, Some(&session), &initialized).send().await.map_err(|e| e.to_string())?;
    response.error_for_status().map_err(|e| e.to_string())?;
    Ok(session)
}

/// One call, `read_file` or `grep_search` by turn; its result must not be an error.
async fn call(client: &reqwest::Client, url: &str, session: &str, n: usize) -> Result<(), String> {
    let arguments = if n.is_multiple_of(2) {
        json!({"operation": "read_file", "path": "small.txt"})
    } else {
        json!({"operation": "grep_search", "pattern": "abcdef"})
    };
    let body = json!({"jsonrpc": "2.0", "id": n + 1, "method": "tools/call",
        "params": {"name": "file_operations", "arguments": arguments}});
    let response = request(client, url, Some(session), &body).send().await.map_err(|e| e.to_string())?;
    let status = response.status();
    let text = response.text().await.map_err(|e| e.to_string())?;
    // The answer comes as JSON or as server-sent events; find the message with our id.
    let reply = text
        .lines()
        .map(|line| line.strip_prefix("data:").unwrap_or(line).trim())
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .find(|message| message["id"] == json!(n + 1))
        .ok_or_else(|| format!("call {n}: {status} without an answer: {text:.200}"))?;
    match reply.get("result") {
        Some(result) if result["isError"] != json!(true) => Ok(()),
        _ => Err(format!("call {n} failed: {reply}")),
    }
}

fn request(client: &reqwest::Client, url: &str, session: Option<&str>, body: &Value) -> reqwest::RequestBuilder {
    let mut builder = client
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(body.to_string());
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session).header("mcp-protocol-version", "2025-06-18");
    }
    builder
}
