//! Section 5 of the stdio bench: todo and memory calls (SQLite in WAL mode), against the pipe
//! floor (`cat` echoing the same request bytes) and, with `--compare-memory-cmd`, the official
//! memory server doing the same work in the same run.

use std::path::Path;

use serde_json::{Value, json};

use super::{Peer, WARMUP, time_round_trips};

/// Memories stored before the search rows.
const MEMORIES: usize = 10_000;
const TOPICS: [&str; 5] = ["parser", "network", "storage", "render", "deploy"];

fn note(i: usize) -> String {
    format!("note {i}: the {} module needs work item {i}; see ticket T{i}", TOPICS[i % TOPICS.len()])
}

/// Median and p90 of `cat` echoing `line`, in µs: the floor of any stdio round trip.
fn pipe_floor(line: &str, calls: usize) -> (f64, f64) {
    let mut cat = Peer::spawn(&["cat".to_string()]);
    time_round_trips(&mut cat, calls, |c| {
        c.write_line(line);
        c.read_line();
    })
}

fn row(label: &str, process: &str, (med, p90): (f64, f64), floor: f64) {
    println!("| {label} | {process} | {med:.1} µs | {p90:.1} µs | {:.1}× |", med / floor);
}

/// Section 5: `todo update`, `memory store` and `memory search` over 10,000 memories.
pub(crate) fn record_calls(bin: &Path, ws: &Path, calls: usize, compare: Option<&str>) {
    println!("\n## Todos and memories, {calls} calls after {WARMUP} warm-up\n");
    println!("| call | process | median | p90 | median / floor |");
    println!("|---|---|---:|---:|---:|");
    let state = ws.join("records-state");
    let _ = std::fs::remove_dir_all(&state);
    let argv = [
        bin.display().to_string(),
        "serve".into(),
        "--root".into(),
        ws.display().to_string(),
        "--state-dir".into(),
        state.display().to_string(),
    ];
    let mut p = Peer::spawn(&argv);
    p.handshake();

    let todos: Vec<Value> = (1..=10).map(|n| json!({"title": format!("step {n}")})).collect();
    p.tool("todo_operations", &json!({"operation": "write", "todos": todos}));
    let update = |n: usize| json!({"operation": "update", "updates": [{"id": 1 + n % 10, "progress": (n % 100) as f64 / 100.0}]});
    let floor =
        pipe_floor(&p.request_line("tools/call", json!({"name": "todo_operations", "arguments": update(0)})).1, calls);
    row("todo `update` (list of 10)", "`cat` echo of the same bytes (floor)", floor, floor.0);
    let mut n = 0;
    let timed = time_round_trips(&mut p, calls, |p| {
        n += 1;
        p.tool("todo_operations", &update(n));
    });
    row("todo `update` (list of 10)", "toolbelt-mcp", timed, floor.0);

    let store = |i: usize| json!({"operation": "store", "content": note(i), "tags": [TOPICS[i % TOPICS.len()]]});
    let floor =
        pipe_floor(&p.request_line("tools/call", json!({"name": "memory_operations", "arguments": store(0)})).1, calls);
    row("memory `store`", "`cat` echo of the same bytes (floor)", floor, floor.0);
    let mut i = 0;
    let timed = time_round_trips(&mut p, calls, |p| {
        let r = p.tool("memory_operations", &store(i));
        assert_ne!(r["structuredContent"]["duplicate"], true);
        i += 1;
    });
    row("memory `store`", "toolbelt-mcp", timed, floor.0);
    while i < MEMORIES {
        p.tool("memory_operations", &store(i));
        i += 1;
    }
    let searches = [
        ("one match", json!({"operation": "search", "query": "T4242"}), 1),
        ("11 matches", json!({"operation": "search", "query": "T424*"}), 11),
        ("2,000 matches, top 10", json!({"operation": "search", "query": "storage"}), 2000),
    ];
    for (what, args, total) in &searches {
        let label = format!("memory `search` over {MEMORIES}, {what}");
        let floor =
            pipe_floor(&p.request_line("tools/call", json!({"name": "memory_operations", "arguments": args})).1, calls);
        row(&label, "`cat` echo of the same bytes (floor)", floor, floor.0);
        let timed = time_round_trips(&mut p, calls, |p| {
            let r = p.tool("memory_operations", args);
            assert_eq!(r["structuredContent"]["total"], *total, "{r}");
        });
        row(&label, "toolbelt-mcp", timed, floor.0);
    }
    if let Some(cmd) = compare {
        official(cmd, ws, calls);
    }
}

/// The official memory server (`@modelcontextprotocol/server-memory`) doing the same: one
/// entity per `create_entities`, then `search_nodes` over 10,000 entities.
fn official(cmd: &str, ws: &Path, calls: usize) {
    let file = ws.join("official-memory.jsonl");
    let _ = std::fs::remove_file(&file);
    let mut argv = vec!["env".to_string(), format!("MEMORY_FILE_PATH={}", file.display())];
    argv.extend(cmd.split_whitespace().map(String::from));
    let mut p = Peer::spawn(&argv);
    p.handshake();
    let entity = |i: usize| json!({"entities": [{"name": format!("note {i}"), "entityType": TOPICS[i % TOPICS.len()], "observations": [note(i)]}]});
    let floor =
        pipe_floor(&p.request_line("tools/call", json!({"name": "create_entities", "arguments": entity(0)})).1, calls);
    let mut i = 0;
    let timed = time_round_trips(&mut p, calls, |p| {
        p.tool("create_entities", &entity(i));
        i += 1;
    });
    row("memory `store`", &format!("`{cmd}` `create_entities`"), timed, floor.0);
    while i < MEMORIES {
        let batch: Vec<Value> = (i..(i + 500).min(MEMORIES))
            .flat_map(|n| entity(n)["entities"].as_array().cloned().unwrap_or_default())
            .collect();
        i += batch.len();
        p.tool("create_entities", &json!({"entities": batch}));
    }
    for (what, query, total) in
        [("one match", "T4242", 1), ("11 matches", "T424", 11), ("2,000 matches, top 10", "storage", 2000)]
    {
        let args = json!({"query": query});
        let floor =
            pipe_floor(&p.request_line("tools/call", json!({"name": "search_nodes", "arguments": args})).1, calls);
        let runs = calls.min(100);
        let mut bytes = 0;
        let timed = time_round_trips(&mut p, runs, |p| {
            let r = p.tool("search_nodes", &args);
            let text = r["content"][0]["text"].as_str().unwrap_or_default();
            bytes = text.len();
            assert!(text.matches("\"name\"").count() >= total, "{query}: fewer than {total} entities");
        });
        let label = format!("memory `search` over {MEMORIES}, {what}");
        row(&label, &format!("`{cmd}` `search_nodes` ({bytes} bytes returned, {runs} calls)"), timed, floor.0);
    }
    let _ = std::fs::remove_file(&file);
}
