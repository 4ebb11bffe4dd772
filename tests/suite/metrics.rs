//! `GET /metrics` on the HTTP server: behind the token, parsed by the Prometheus project's own
//! Python parser, and its counters move with the calls (outcomes, approvals, running commands,
//! sessions, store failures) while no label ever holds a path or an argument.

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::json;

use super::common::{Workspace, loopback_http, wait_gone};
use super::http::{HttpServer, background_sleep, pid_of};

/// A name no label may ever hold: it is only ever a path and an argument of the calls below.
const SECRET: &str = "do-not-label-me-7f3a";

async fn scrape(server: &HttpServer, token: Option<&str>) -> (u16, String, String) {
    let mut request = loopback_http().get(format!("{}/metrics", server.base));
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let kind = response.headers().get("content-type").map(|v| v.to_str().unwrap().to_string()).unwrap_or_default();
    (status, kind, response.text().await.unwrap())
}

/// The value of the sample whose line starts with `series` (name and labels, exactly), 0 if none.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.split(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

fn calls(tool: &str, operation: &str, outcome: &str) -> String {
    format!("toolbelt_tool_calls_total{{tool=\"{tool}\",operation=\"{operation}\",outcome=\"{outcome}\"}}")
}

/// Parses the text with `prometheus_client`'s OpenMetrics parser (what a strict scraper
/// accepts); `false` when the parser is not installed outside CI.
fn parses_as_openmetrics(text: &str) -> bool {
    let script = "import sys\nfrom prometheus_client.openmetrics.parser import text_string_to_metric_families\n\
                  families = list(text_string_to_metric_families(sys.stdin.read()))\nprint(len(families))\n";
    let mut child = std::process::Command::new("python3")
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if stderr.contains("No module named 'prometheus_client'") && std::env::var_os("CI").is_none() {
        let message = "skipped the OpenMetrics parse: `pip install prometheus_client` to run it (CI installs it)";
        let _ = writeln!(std::io::stderr(), "{message}");
        return false;
    }
    assert!(out.status.success(), "the metrics do not parse as OpenMetrics: {stderr}\n{text}");
    let families: usize = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    assert!(families >= 7, "{families} families:\n{text}");
    true
}

#[tokio::test]
async fn metrics_need_the_token_parse_and_move_with_the_calls_without_naming_paths() {
    let ws = Workspace::new();
    let server = HttpServer::start(&ws, &[], &[]).await;
    let token = server.token.clone().expect("a generated token");
    let (status, _, text) = scrape(&server, None).await;
    assert_eq!(status, 401, "metrics are behind the token: {text}");
    assert_eq!(scrape(&server, Some("wrong")).await.0, 401);
    let (status, kind, before) = scrape(&server, Some(&token)).await;
    assert_eq!(status, 200, "{before}");
    assert!(kind.starts_with("application/openmetrics-text"), "{kind}");
    assert_eq!(sample(&before, "toolbelt_sessions_open"), 0.0, "{before}");

    // The store's database is garbage: todo calls fail, file calls go on.
    let database = ws.state_home.join("toolbelt-mcp/toolbelt.db");
    std::fs::create_dir_all(database.parent().unwrap()).unwrap();
    std::fs::write(&database, vec![b'x'; 4096]).unwrap();

    let client = server.client().await;
    assert!(!client.file(json!({"operation": "read_file", "path": "README.md"})).await.is_error);
    let missing = client.file(json!({"operation": "read_file", "path": format!("{SECRET}.txt")})).await;
    assert!(missing.is_error, "{}", missing.text);
    let outside = client.file(json!({"operation": "read_file", "path": format!("/{SECRET}/x")})).await;
    assert!(outside.is_error, "{}", outside.text);
    assert!(client.run(&format!("echo {SECRET}; exit 3")).await.is_error);
    let broken = client.todo("add", json!({"todos": [{"title": SECRET}]})).await;
    assert!(broken.is_error && broken.text.contains("unreadable"), "{}", broken.text);

    // A background command counts as running until it ends.
    let started = client.term("run_command", background_sleep()).await;
    let pid = pid_of(&started);
    let id = started.structured["session_id"].as_str().unwrap().to_string();
    let (_, _, during) = scrape(&server, Some(&token)).await;
    assert_eq!(sample(&during, "toolbelt_commands_running"), 1.0, "{during}");
    assert_eq!(sample(&during, "toolbelt_sessions_open"), 1.0, "{during}");
    assert!(!client.term("kill_session", json!({"session_id": id})).await.is_error);
    assert!(wait_gone(pid, 5).await);
    let deadline = Instant::now() + Duration::from_secs(5);
    let after = loop {
        let (_, _, text) = scrape(&server, Some(&token)).await;
        if sample(&text, "toolbelt_commands_running") == 0.0 || Instant::now() > deadline {
            break text;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(sample(&after, "toolbelt_commands_running"), 0.0, "{after}");

    assert_eq!(sample(&after, &calls("file_operations", "read_file", "ok")), 1.0, "{after}");
    assert_eq!(sample(&after, &calls("file_operations", "read_file", "not_found")), 1.0, "{after}");
    assert_eq!(sample(&after, &calls("file_operations", "read_file", "outside_roots")), 1.0, "{after}");
    assert_eq!(sample(&after, &calls("terminal_operations", "run_command", "exit_status")), 1.0, "{after}");
    assert_eq!(sample(&after, &calls("todo_operations", "add", "store")), 1.0, "{after}");
    assert_eq!(sample(&after, "toolbelt_store_errors_total"), 1.0, "{after}");
    let histogram = "toolbelt_tool_call_duration_seconds_count{tool=\"file_operations\",operation=\"read_file\"}";
    assert_eq!(sample(&after, histogram), 3.0, "{after}");
    assert!(sample(&after, "toolbelt_approvals_total{decision=\"allow\",by=\"policy\"}") >= 4.0, "{after}");
    assert_eq!(sample(&after, "toolbelt_approvals_total{decision=\"deny\",by=\"policy\"}"), 1.0, "{after}");
    assert!(sample(&after, "toolbelt_result_bytes_total") > 100.0, "{after}");
    assert!(!after.contains(SECRET) && !after.contains("README"), "a label names a path or an argument:\n{after}");
    parses_as_openmetrics(&after);

    client.close().await;
    let (_, _, closed) = scrape(&server, Some(&token)).await;
    assert_eq!(sample(&closed, "toolbelt_sessions_open"), 0.0, "{closed}");
}
