//! Section `agent`: the bundled agent's own overhead per turn over a 60-turn run, next to a
//! baseline agent binary (`--agent-base PATH`, e.g. a build of an earlier commit) in the same
//! run. A scripted Anthropic endpoint on loopback answers at once (streamed when asked, whole
//! otherwise): 60 turns that each read a 3 KB file, then an answer. The overhead is the time
//! from the first request to the last, less the tool calls (as the agent's `--json` summary
//! reports them, in whole milliseconds) and the endpoint's own handling: request building,
//! HTTP, reply parsing, the todo reminder, compaction checks and the loop itself.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Turns that call a tool (the run has one more, the answer).
const TURNS: usize = 60;
/// Runs per binary (alternating), medians shown.
const RUNS: usize = 5;

/// When each request arrived and its answer left, and the tool calls asked for so far.
#[derive(Default)]
struct Log {
    served: Vec<(Instant, Instant)>,
    calls: usize,
}

async fn messages(State(log): State<Arc<Mutex<Log>>>, body: String) -> Response {
    let arrived = Instant::now();
    let body: Value = serde_json::from_str(&body).unwrap_or_default();
    // A summary request (no tools) gets a summary; the rest follow the script.
    let content = if body.get("tools").is_none() {
        json!([{"type": "text", "text": "Summary: small.txt was read many times."}])
    } else if log.lock().unwrap().calls < TURNS {
        let n = {
            let mut log = log.lock().unwrap();
            log.calls += 1;
            log.calls
        };
        let input = json!({"operation": "read_file", "path": "small.txt"});
        json!([{"type": "tool_use", "id": format!("t{n}"), "name": "file_operations", "input": input}])
    } else {
        json!([{"type": "text", "text": "Read it 60 times."}])
    };
    let stop = if content[0]["type"] == "tool_use" { "tool_use" } else { "end_turn" };
    let usage = json!({"input_tokens": body.to_string().len() / 4, "output_tokens": 20});
    let response = if body["stream"] == true {
        let events = events(&content, stop, &usage);
        ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], events).into_response()
    } else {
        let message =
            json!({"type": "message", "role": "assistant", "content": content, "stop_reason": stop, "usage": usage});
        ([(axum::http::header::CONTENT_TYPE, "application/json")], message.to_string()).into_response()
    };
    log.lock().unwrap().served.push((arrived, Instant::now()));
    response
}

/// The reply as Anthropic's server-sent events.
fn events(content: &Value, stop: &str, usage: &Value) -> String {
    let sse = |kind: &str, data: Value| format!("event: {kind}\ndata: {data}\n\n");
    let start = json!({"type": "message", "role": "assistant", "content": [], "usage": usage});
    let mut out = sse("message_start", json!({"type": "message_start", "message": start}));
    for (index, block) in content.as_array().unwrap().iter().enumerate() {
        let (opened, delta) = if block["type"] == "text" {
            (json!({"type": "text", "text": ""}), json!({"type": "text_delta", "text": block["text"]}))
        } else {
            let opened = json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}});
            (opened, json!({"type": "input_json_delta", "partial_json": block["input"].to_string()}))
        };
        out += &sse(
            "content_block_start",
            json!({"type": "content_block_start", "index": index, "content_block": opened}),
        );
        out += &sse("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": delta}));
        out += &sse("content_block_stop", json!({"type": "content_block_stop", "index": index}));
    }
    out += &sse("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage}));
    out + &sse("message_stop", json!({"type": "message_stop"}))
}

/// One run of `bin agent` with `extra` flags: overhead per turn (ms) and the run's turns.
fn run_once(rt: &tokio::runtime::Runtime, bin: &Path, ws: &Path, extra: &[&str]) -> (f64, u64) {
    let log = Arc::new(Mutex::new(Log::default()));
    let app = axum::Router::new().route("/v1/messages", axum::routing::post(messages)).with_state(log.clone());
    let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = rt.spawn(async move { axum::serve(listener, app).await });
    let state = tempfile::tempdir().unwrap();
    let out = Command::new(bin)
        .args(["agent", "--root", ws.to_str().unwrap(), "--provider", "anthropic", "--base-url", &url])
        .args(["--model", "claude-bench", "-p", "read small.txt 60 times", "--max-turns", "70", "--json"])
        .args(extra)
        .env("ANTHROPIC_API_KEY", "bench")
        .env("XDG_STATE_HOME", state.path())
        .env("XDG_CONFIG_HOME", state.path())
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("run the agent");
    server.abort();
    let summary: Value =
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(summary["stop_reason"], "completed", "{}", String::from_utf8_lossy(&out.stderr));
    let tools_ms: u64 = summary["tool_calls"].as_array().unwrap().iter().map(|c| c["ms"].as_u64().unwrap()).sum();
    let served = std::mem::take(&mut log.lock().unwrap().served);
    let (first, last) = (served[0].0, served[served.len() - 1].0);
    let handling: f64 = served[..served.len() - 1].iter().map(|(a, b)| (*b - *a).as_secs_f64() * 1e3).sum();
    let between = (last - first).as_secs_f64() * 1e3;
    let turns = summary["turns"].as_u64().unwrap();
    ((between - handling - tools_ms as f64) / (turns - 1) as f64, turns)
}

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The section: the agent at `bin` and, when given, the baseline agent at `base`.
pub(crate) fn agent_turns(bin: &Path, base: Option<&Path>, ws: &Path) {
    std::fs::write(ws.join("small.txt"), "a line of the small file, read again and again\n".repeat(64)).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut rows: Vec<(String, Vec<&str>, Option<&Path>)> = vec![
        ("this build".into(), vec![], Some(bin)),
        ("this build, `--no-stream`".into(), vec!["--no-stream"], Some(bin)),
        ("this build, `--context-window 32000` (compacts)".into(), vec!["--context-window", "32000"], Some(bin)),
    ];
    if let Some(base) = base {
        rows.push((format!("baseline `{}`", base.display()), vec![], Some(base)));
    }
    let mut results: Vec<Vec<f64>> = vec![Vec::new(); rows.len()];
    for _ in 0..RUNS {
        for (i, (_, extra, bin)) in rows.iter().enumerate() {
            let (overhead, turns) = run_once(&rt, bin.unwrap(), ws, extra);
            assert_eq!(turns as usize, TURNS + 1);
            results[i].push(overhead);
        }
    }
    println!(
        "\n## The agent's own overhead per turn ({TURNS} tool turns and an answer, {RUNS} runs each, alternating, medians)\n"
    );
    println!("| agent | overhead per turn | target ≤ 5 ms |");
    println!("|---|---:|---|");
    let base_median = base.map(|_| median(results[rows.len() - 1].clone()));
    for (i, (name, _, _)) in rows.iter().enumerate() {
        let m = median(results[i].clone());
        let vs = base_median
            .filter(|_| i + 1 < rows.len())
            .map(|b| format!(" ({:.2}× baseline)", m / b))
            .unwrap_or_default();
        println!("| {name} | {m:.2} ms{vs} | {} |", if m <= 5.0 { "met" } else { "**missed**" });
    }
    println!(
        "\nTool calls are subtracted as the agent reports them, in whole milliseconds (truncated): the overhead is over-stated by up to 1 ms a turn, alike for every row."
    );
}
