//! The lean view: what hosts that hand the model `JSON.stringify(structuredContent)` (Claude
//! Code, Codex, Copilot CLI, opencode) put in its context, step by step, held to fixed
//! budgets, so a field that bloats results fails here. The budgets sum to 1.5× what Claude
//! Code's own tools (`Read`, `Grep`, `Edit`, `Bash`) handed the model for the same five steps
//! (411 characters, measured with Claude Code 2.1.332: issue "Lean results"); the same-run
//! comparison through Claude Code itself is `tests/hosts/lean_table.py`.

use std::process::Command;

use serde_json::{Value, json};

use super::common::{Client, Reply, Workspace};

/// Claude Code's own tools, the same five steps (read, grep, edit, `git diff --stat`, a
/// missing file), characters handed to the model.
const CLAUDE_CODE_OWN: usize = 411;

/// What the model reads of a result: the structured view as `JSON.stringify` writes it, or
/// the text of an error (which carries no structured view).
fn model_view(reply: &Reply) -> String {
    if reply.structured.is_null() { reply.text.clone() } else { serde_json::to_string(&reply.structured).unwrap() }
}

fn lean(mut args: Value) -> Value {
    args["details"] = json!(false);
    args
}

#[tokio::test]
async fn five_small_steps_fit_their_budgets() {
    let ws = Workspace::new();
    let dir = ws.root.join("demo");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("README.md"), "# Demo\nREADME-MARKER-5521\nSee src/app.py.\n").unwrap();
    std::fs::write(dir.join("src/app.py"), "def widget():\n    return 1\n\n# the widget factory\n").unwrap();
    let git = |args: &[&str]| {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "init"]);
    let client = Client::start(&ws, &[]).await;
    let steps = [
        ("read a 3-line README", "file_operations", json!({"operation": "read_file", "path": "demo/README.md"}), 120),
        (
            "grep (2 matches)",
            "file_operations",
            json!({"operation": "grep_search", "pattern": "widget", "path": "demo"}),
            140,
        ),
        (
            "replace one string",
            "file_operations",
            json!({"operation": "replace_string", "path": "demo/src/app.py", "old_string": "return 1", "new_string": "return 2"}),
            170,
        ),
        (
            "git diff --stat",
            "terminal_operations",
            json!({"operation": "run_command", "command": "git diff --stat", "cwd": "demo"}),
            110,
        ),
        ("read a missing file", "file_operations", json!({"operation": "read_file", "path": "demo/missing.txt"}), 100),
    ];
    let mut total = 0;
    let mut report = Vec::new();
    for (name, tool, args, budget) in steps {
        let reply = client.call(tool, lean(args)).await;
        let view = model_view(&reply);
        report.push(format!("{name}: {} chars (budget {budget}): {view}", view.len()));
        assert!(view.len() <= budget, "{name}: {} chars over its budget {budget}: {view}", view.len());
        total += view.len();
    }
    let report = report.join("\n");
    assert!(
        total * 2 <= CLAUDE_CODE_OWN * 3,
        "{total} chars, over 1.5× Claude Code's own {CLAUDE_CODE_OWN}:\n{report}"
    );
    // What the model acts on is there: the text, the matching lines, the diff, the output.
    for needle in
        ["README-MARKER-5521", "demo/src/app.py:1:def widget", "+    return 2", "1 file changed", "missing.txt"]
    {
        assert!(report.contains(needle), "{needle} missing:\n{report}");
    }
    // The whole record is a call away.
    let whole = client
        .call("file_operations", json!({"operation": "read_file", "path": "demo/README.md", "details": true}))
        .await;
    assert_eq!(whole.structured["operation"], "read_file");
    assert_eq!(whole.structured["sha256"].as_str().map(str::len), Some(64));
    assert_eq!(whole.structured["lines"][1], "2\tREADME-MARKER-5521");
    let bad = client
        .call("file_operations", json!({"operation": "read_file", "path": "demo/README.md", "details": "yes"}))
        .await;
    assert!(bad.is_error && bad.text.contains("details"), "{}", bad.text);
    client.close().await;
}

/// A paged read of a large file costs the model little more than the text itself (the line
/// numbers, the JSON escapes of tabs and newlines, and where to go on): within 1.1×.
#[tokio::test]
async fn a_paged_read_is_within_a_tenth_of_its_text() {
    let ws = Workspace::new();
    let line = |i: usize| format!("line {i:06}: {}\n", "lorem ipsum dolor sit amet ".repeat(3));
    let whole: String = (1..=20_000).map(line).collect();
    std::fs::write(ws.root.join("big.txt"), &whole).unwrap();
    let client = Client::start(&ws, &[]).await;
    let mut offset: Option<u64> = None;
    let mut pages = 0;
    loop {
        let mut args = json!({"operation": "read_file", "path": "big.txt"});
        if let Some(at) = offset {
            args["offset"] = json!(at);
        }
        let reply = client.call("file_operations", lean(args)).await;
        assert!(!reply.is_error, "{}", reply.text);
        let view = model_view(&reply);
        let first = reply.structured["start_line"].as_u64().unwrap_or(1) as usize;
        let last = reply.structured["end_line"].as_u64().unwrap() as usize;
        let text: usize = (first..=last).map(|i| line(i).len()).sum();
        assert!(
            view.len() * 10 <= text * 11,
            "page {pages} (lines {first}..={last}): {} chars for {text} of text",
            view.len()
        );
        pages += 1;
        match reply.structured["next_offset"].as_u64() {
            Some(next) => offset = Some(next),
            None => break,
        }
    }
    assert!(pages > 1, "a {} byte file came in one page", whole.len());
    client.close().await;
}
