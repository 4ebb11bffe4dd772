//! `toolbelt-mcp agent` on long runs: a 60-turn task that reads a 3 KB file every turn
//! completes within a 32,000-token window (old tool results become stubs, then older turns a
//! summary asked for without tools), and no request to the provider exceeds the window as the
//! provider counts it (a quarter of the request's bytes, reported as usage).

use serde_json::{Value, json};

use super::agent::{project, run};
use super::llm::{ScriptedLlm, Wire};

const TASK: &str = "read big.txt 60 times, noting each time";
const WINDOW: u64 = 32_000;

/// 60 turns each reading `big.txt` with 1.6 KB of notes, then an answer.
fn long_task() -> Value {
    let notes = "a note the model wrote about what it read and what it will do next; ".repeat(24);
    let mut turns: Vec<Value> = (1..=60)
        .map(|n| {
            json!({
                "expect": [if n == 1 { TASK } else { "line 60 of big.txt" }],
                "reply": {
                    "text": format!("Step {n}: {notes}"),
                    "calls": [{"name": "file_operations", "arguments": {"operation": "read_file", "path": "big.txt"}}]
                }
            })
        })
        .collect();
    turns.push(json!({"expect": ["line 60 of big.txt"], "reply": {"text": "Read big.txt 60 times."}}));
    json!({
        "usage_from_size": true,
        "summary": {"text": "SUMMARY-OF-EARLIER-TURNS: big.txt was read again and again.", "expect": [TASK, "big.txt"]},
        "turns": turns
    })
}

#[tokio::test]
async fn a_60_turn_task_completes_within_a_32k_window_in_both_wire_formats() {
    for wire in Wire::BOTH {
        let ws = project();
        let big: String = (1..=60).map(|n| format!("line {n} of big.txt: some text to fill it to 3 KB\n")).collect();
        assert!((2800..3400).contains(&big.len()));
        std::fs::write(ws.root.join("big.txt"), big).unwrap();
        let llm = ScriptedLlm::start_with(&long_task(), wire).await;
        let window = WINDOW.to_string();
        let ran = run(&ws, &llm, TASK, &["--context-window", &window, "--max-turns", "70", "--json"]).await;
        assert_eq!(ran.code, 0, "{wire:?}: {}", ran.stderr);
        llm.assert_played();
        let requests = llm.requests();
        assert_eq!(requests.len(), 61);
        for (n, request) in requests.iter().chain(&llm.summaries()).enumerate() {
            let tokens = request.to_string().len() as u64 / 4;
            assert!(tokens <= WINDOW, "{wire:?}: request {n} is {tokens} tokens, over the window");
        }
        // Both steps ran: stubs, then a summary that carried the task and the files touched.
        assert!(!llm.summaries().is_empty(), "{wire:?}: no summary was asked for\n{}", ran.stderr);
        assert!(ran.stderr.contains("old tool result(s)") && ran.stderr.contains("became a summary"), "{}", ran.stderr);
        let last = requests.last().unwrap().to_string();
        assert!(last.contains("SUMMARY-OF-EARLIER-TURNS") && last.contains(TASK), "{wire:?}");
        assert!(last.contains("Files touched so far: big.txt"), "{wire:?}");
        let summary: Value = serde_json::from_str(&ran.stdout).unwrap();
        assert_eq!(summary["context_window"], WINDOW);
        let compactions = summary["compactions"].as_array().unwrap();
        assert!(compactions.iter().all(|c| c["after"].as_u64() < c["before"].as_u64()), "{compactions:?}");
        assert!(compactions.iter().any(|c| c["summarised_messages"].as_u64() > Some(0)), "{compactions:?}");
    }
}

#[tokio::test]
async fn a_result_bigger_than_the_window_is_cut_to_fit_instead_of_sent_whole() {
    let ws = project();
    let huge: String = (1..=1500).map(|n| format!("line {n} of huge.txt with some words in it\n")).collect();
    std::fs::write(ws.root.join("huge.txt"), &huge).unwrap();
    let fixture = json!({
        "usage_from_size": true,
        "turns": [
            {"expect": ["read huge.txt"], "reply": {"calls": [{"name": "file_operations", "arguments": {"operation": "read_file", "path": "huge.txt"}}]}},
            {"expect": ["line 1 of huge.txt", "cut by the agent to fit the context window"], "reply": {"text": "It was too big; read less."}}
        ]
    });
    let llm = ScriptedLlm::start_with(&fixture, Wire::Anthropic).await;
    let ran =
        run(&ws, &llm, "read huge.txt", &["--context-window", "12000", "--output-budget", "200000", "--json"]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    llm.assert_played();
    for request in llm.requests() {
        assert!(request.to_string().len() / 4 <= 12_000, "a request over the window");
    }
    assert!(ran.stderr.contains("the newest results lost"), "{}", ran.stderr);
    let read = ran.stderr.lines().find(|l| l.contains("▸ file_operations read_file")).unwrap();
    assert!(read.contains("line 1 of huge.txt"), "{read}");
    // The whole file (60 KB: about 15,000 tokens as the provider counts) was read, and cut.
    let whole = llm.requests()[1].to_string();
    assert!(!whole.contains("line 1500 of huge.txt"), "the result was not cut");
}
