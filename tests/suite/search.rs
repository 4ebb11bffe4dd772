//! `file_search` and `grep_search`: every field, filters, totals and ordering.

use serde_json::{Value, json};

use super::common::{Client, Workspace, op};

fn files(reply: &Value) -> Vec<String> {
    reply
        .get("files")
        .or(reply.get("file_matches"))
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().map_or_else(|| f["path"].as_str().unwrap().to_string(), str::to_string))
        .collect()
}

#[tokio::test]
async fn file_search_globs_filters_sorting_and_limits() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let rs = client.ok(op("file_search", json!({"pattern": "*.rs"}))).await;
    assert_eq!(files(&rs.structured), ["src/lib.rs", "src/main.rs"]);
    assert_eq!(rs.text, "src/lib.rs\nsrc/main.rs\n[2 files match `*.rs` under `.`, by path]");
    let all_rs = client.ok(op("file_search", json!({"pattern": "**/*.rs", "respect_gitignore": false}))).await;
    assert_eq!(files(&all_rs.structured), ["src/generated.rs", "src/lib.rs", "src/main.rs"]);
    let txt = client.ok(op("file_search", json!({"pattern": "*.txt"}))).await;
    assert_eq!(
        files(&txt.structured),
        ["data/big.txt", "data/crlf.txt", "data/latin1.txt", "données/été.txt", "src/nested/deep/notes.txt"]
    );
    let hidden = client.ok(op("file_search", json!({"pattern": "*.txt", "include_hidden": true}))).await;
    assert!(files(&hidden.structured).contains(&".hidden/config.txt".to_string()));
    let anchored = client.ok(op("file_search", json!({"pattern": "src/*.rs", "path": "."}))).await;
    assert_eq!(anchored.structured["total"], 2);
    let under = client.ok(op("file_search", json!({"pattern": "*.txt", "path": "src"}))).await;
    assert_eq!(files(&under.structured), ["src/nested/deep/notes.txt"]);
    let braces = client.ok(op("file_search", json!({"pattern": "*.{png,bin}"}))).await;
    assert_eq!(files(&braces.structured), ["data/blob.bin", "data/pixel.png"]);
    let capped = client.ok(op("file_search", json!({"pattern": "*.txt", "limit": 2}))).await;
    assert_eq!((capped.structured["total"].as_u64(), capped.structured["truncated"].as_bool()), (Some(5), Some(true)));
    assert_eq!(files(&capped.structured), ["data/big.txt", "data/crlf.txt"]);
    assert!(capped.text.contains("[5 files match `*.txt` under `.`; showing the first 2 by path"), "{}", capped.text);
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for name in ["data/big.txt", "data/crlf.txt", "data/latin1.txt", "données/été.txt"] {
        std::fs::File::options().write(true).open(ws.root.join(name)).unwrap().set_modified(old).unwrap();
    }
    std::fs::write(ws.root.join("src/nested/deep/notes.txt"), "fresh\n").unwrap();
    let newest = client.ok(op("file_search", json!({"pattern": "*.txt", "sort": "mtime", "limit": 1}))).await;
    assert_eq!(files(&newest.structured), ["src/nested/deep/notes.txt"]);
    let none = client.ok(op("file_search", json!({"pattern": "*.zig"}))).await;
    assert_eq!(
        (none.structured["total"].as_u64(), none.text.as_str()),
        (Some(0), "[no files match `*.zig` under `.`]")
    );
    let bad = client.err(op("file_search", json!({"pattern": "src/{a,b"}))).await;
    assert!(bad.contains("invalid glob `src/{a,b`"), "{bad}");
    let not_dir = client.err(op("file_search", json!({"pattern": "*", "path": "README.md"}))).await;
    assert!(not_dir.contains("not a directory"), "{not_dir}");
    client.close().await;
}

#[tokio::test]
async fn grep_content_respects_ignores_hidden_and_binaries() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.ok(op("grep_search", json!({"pattern": "NEEDLE_\\w+"}))).await;
    assert_eq!(
        reply.text,
        "données/été.txt:2:NEEDLE_UNICODE\nsrc/nested/deep/notes.txt:2:NEEDLE_DEEP one\nsrc/nested/deep/notes.txt:3:NEEDLE_DEEP two\n[3 matching lines in 2 files for regex `NEEDLE_\\w+` under `.` (10 files searched)]"
    );
    let s = &reply.structured;
    assert_eq!((s["total_matches"].as_u64(), s["total_files"].as_u64()), (Some(3), Some(2)));
    assert_eq!(
        s["file_matches"],
        json!([{"path": "données/été.txt", "matches": 1}, {"path": "src/nested/deep/notes.txt", "matches": 2}])
    );
    let everything = client
        .ok(op(
            "grep_search",
            json!({"pattern": "NEEDLE_", "include_hidden": true, "respect_gitignore": false, "output": "files"}),
        ))
        .await;
    assert_eq!(
        files(&everything.structured),
        [
            ".env",
            ".hidden/config.txt",
            "debug.log",
            "données/été.txt",
            "ignored/secret.txt",
            "src/generated.rs",
            "src/nested/deep/notes.txt"
        ]
    );
    assert!(!everything.text.contains("blob.bin"), "binary files are skipped");
    client.close().await;
}

#[tokio::test]
async fn grep_flags_context_and_output_modes() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("regex.txt"), "a.b(c\naxb(c\nA.B(C\n").unwrap();
    let client = Client::start(&ws, &[]).await;
    let fixed = client.ok(op("grep_search", json!({"pattern": "a.b(", "fixed_strings": true}))).await;
    assert!(fixed.text.starts_with("regex.txt:1:a.b(c\n["), "{}", fixed.text);
    let insensitive =
        client.ok(op("grep_search", json!({"pattern": "a.b(", "fixed_strings": true, "case_insensitive": true}))).await;
    assert_eq!(insensitive.structured["total_matches"], 2);
    let bad = client.err(op("grep_search", json!({"pattern": "a.b("}))).await;
    assert!(
        bad.contains("invalid regex `a.b(`") && bad.contains("unclosed group") && bad.contains("fixed_strings"),
        "{bad}"
    );
    let multi = client
        .ok(op("grep_search", json!({"pattern": "pub struct Parser \\{\\n\\s+pub depth", "multiline": true})))
        .await;
    assert_eq!(multi.structured["total_files"], 1);
    assert!(
        multi.text.contains("src/lib.rs:3:pub struct Parser {\nsrc/lib.rs:4:    pub depth: usize,\n"),
        "{}",
        multi.text
    );
    std::fs::write(ws.root.join("pairs.txt"), "a\nb\na\nb\n").unwrap();
    let pairs = client.ok(op("grep_search", json!({"pattern": "a\\nb", "multiline": true, "path": "pairs.txt"}))).await;
    assert_eq!(pairs.structured["total_matches"], 2, "counted per match, like `rg -U -c`");
    assert_eq!(pairs.text.lines().filter(|l| l.starts_with("pairs.txt:")).count(), 4, "{}", pairs.text);
    assert!(pairs.text.contains("[2 matches in 1 files"), "{}", pairs.text);
    let first_pair = client
        .ok(op("grep_search", json!({"pattern": "a\\nb", "multiline": true, "path": "pairs.txt", "limit": 1})))
        .await;
    assert_eq!(first_pair.text.lines().filter(|l| l.starts_with("pairs.txt:")).count(), 2, "{}", first_pair.text);
    let single_line = client.err(op("grep_search", json!({"pattern": "Parser \\{\\n\\s+pub"}))).await;
    assert!(single_line.contains("set `multiline: true`"), "{single_line}");
    let context =
        client.ok(op("grep_search", json!({"pattern": "UnexpectedEnd\\)", "context": 1, "path": "src"}))).await;
    assert_eq!(
        context.text.lines().take(3).collect::<Vec<_>>(),
        [
            "src/lib.rs-14-    if input.is_empty() {",
            "src/lib.rs:15:        return Err(ParseError::UnexpectedEnd);",
            "src/lib.rs-16-    }"
        ]
    );
    let before = client
        .ok(op("grep_search", json!({"pattern": "^fn greet", "before": 2, "after": 0, "path": "src/main.rs"})))
        .await;
    assert_eq!(
        before.text.lines().take(3).collect::<Vec<_>>(),
        ["src/main.rs-4-}", "src/main.rs-5-", "src/main.rs:6:fn greet(name: &str) -> String {"]
    );
    let globbed = client.ok(op("grep_search", json!({"pattern": "fn ", "glob": "main.rs", "output": "count"}))).await;
    assert_eq!(globbed.text.lines().next(), Some("src/main.rs:2"));
    assert_eq!(globbed.structured["file_matches"], json!([{"path": "src/main.rs", "matches": 2}]));
    let excluded = client.ok(op("grep_search", json!({"pattern": "fn ", "glob": "!main.rs", "output": "count"}))).await;
    assert_eq!(excluded.structured["file_matches"], json!([{"path": "src/lib.rs", "matches": 1}]));
    let files_mode = client.ok(op("grep_search", json!({"pattern": "fn ", "output": "files"}))).await;
    assert_eq!(files(&files_mode.structured), ["src/lib.rs", "src/main.rs"]);
    assert!(files_mode.structured.get("total_matches").is_none());
    let missing = client.err(op("grep_search", json!({"pattern": "x", "path": "nope"}))).await;
    assert!(missing.contains("`nope` does not exist"), "{missing}");
    client.close().await;
}

#[tokio::test]
async fn grep_limits_report_true_totals_deterministically() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let capped = client.ok(op("grep_search", json!({"pattern": "big file", "limit": 3}))).await;
    assert_eq!(
        (capped.structured["total_matches"].as_u64(), capped.structured["truncated"].as_bool()),
        (Some(50_000), Some(true))
    );
    assert_eq!(
        capped.text.lines().take(3).collect::<Vec<_>>(),
        [
            "data/big.txt:1:line 1 of the big file",
            "data/big.txt:2:line 2 of the big file",
            "data/big.txt:3:line 3 of the big file"
        ]
    );
    assert!(
        capped.text.contains("[50000 matching lines in 1 files") && capped.text.contains("showing 3 matching lines"),
        "{}",
        capped.text
    );
    let first = client.ok(op("grep_search", json!({"pattern": "e", "limit": 7}))).await;
    for _ in 0..3 {
        assert_eq!(client.ok(op("grep_search", json!({"pattern": "e", "limit": 7}))).await.text, first.text);
    }
    client.close().await;
}
