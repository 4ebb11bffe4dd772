//! The write side of `file_operations`: create, replace, multi-replace, insert, mkdir, undo,
//! changes; atomicity, preservation, confinement, stale hashes, concurrency.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use super::common::{Client, Workspace, op};
use super::read_file::sha256_hex;

fn read(ws: &Workspace, path: &str) -> Vec<u8> {
    std::fs::read(ws.root.join(path)).unwrap()
}

fn temp_files(dir: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walk(dir) {
        if entry.ends_with(".toolbelt-tmp") {
            found.push(entry);
        }
    }
    found
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path.display().to_string());
        }
    }
    out
}

#[tokio::test]
async fn create_file_new_overwrite_parents_and_dry_run() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.ok(op("create_file", json!({"path": "new/deep/hello.txt", "content": "hi\nthere\n"}))).await;
    assert_eq!(read(&ws, "new/deep/hello.txt"), b"hi\nthere\n");
    assert_eq!(
        reply.text,
        format!("[`new/deep/hello.txt` created (+2 -0); sha256 {}]\n", sha256_hex(b"hi\nthere\n")),
        "a new file's lines are not echoed back: the model just sent them"
    );
    let s = &reply.structured;
    assert!(s.get("diff").is_none(), "{s}");
    assert_eq!(
        (s["action"].as_str(), s["lines_added"].as_u64(), s["dry_run"].as_bool()),
        (Some("created"), Some(2), Some(false))
    );
    let exists = client.err(op("create_file", json!({"path": "new/deep/hello.txt", "content": "x"}))).await;
    assert!(exists.contains("`new/deep/hello.txt` already exists") && exists.contains("overwrite: true"), "{exists}");
    assert_eq!(read(&ws, "new/deep/hello.txt"), b"hi\nthere\n", "refused means untouched");
    let preview = client
        .ok(op(
            "create_file",
            json!({"path": "new/deep/hello.txt", "content": "hi\n", "overwrite": true, "dry_run": true}),
        ))
        .await;
    assert!(preview.text.starts_with("[dry run: `new/deep/hello.txt` would be overwritten (+0 -1); nothing was written]\n--- a/new/deep/hello.txt"), "{}", preview.text);
    assert_eq!(read(&ws, "new/deep/hello.txt"), b"hi\nthere\n");
    let over =
        client.ok(op("create_file", json!({"path": "new/deep/hello.txt", "content": "hi\n", "overwrite": true}))).await;
    assert_eq!(
        (over.structured["action"].as_str(), over.structured["lines_removed"].as_u64()),
        (Some("overwritten"), Some(1))
    );
    assert_eq!(read(&ws, "new/deep/hello.txt"), b"hi\n");
    let no_parents =
        client.err(op("create_file", json!({"path": "nope/x.txt", "content": "x", "create_parents": false}))).await;
    assert!(no_parents.contains("parent directory that does not exist"), "{no_parents}");
    assert!(!ws.root.join("nope").exists());
    let dir = client.err(op("create_file", json!({"path": "src", "content": "x", "overwrite": true}))).await;
    assert!(dir.contains("`src` is a directory"), "{dir}");
    assert!(temp_files(&ws.root).is_empty());
    client.close().await;
}

#[tokio::test]
async fn writes_are_confined_and_never_follow_symlinks() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.root.join(".git/hooks")).unwrap();
    let client = Client::start(&ws, &[]).await;
    let cases = [
        (op("create_file", json!({"path": "../outside/new.txt", "content": "x"})), "outside the allowed roots"),
        (
            op("create_file", json!({"path": ws.outside.join("abs.txt").to_str().unwrap(), "content": "x"})),
            "outside the allowed roots",
        ),
        (op("create_file", json!({"path": "link_outside_dir/new.txt", "content": "x"})), "outside the allowed roots"),
        (op("create_file", json!({"path": "link_outside", "content": "x", "overwrite": true})), "is a symlink"),
        (
            op("create_file", json!({"path": "link_inside", "content": "x", "overwrite": true})),
            "writes never follow symlinks",
        ),
        (op("replace_string", json!({"path": "link_outside", "old_string": "top", "new_string": "x"})), "is a symlink"),
        (op("create_file", json!({"path": ".git/hooks/pre-commit", "content": "#!/bin/sh\n"})), "is protected"),
        (op("create_file", json!({"path": ".git/config", "content": "x"})), "is protected"),
        (op("create_directory", json!({"path": "../escape"})), "outside the allowed roots"),
    ];
    for (call, expected) in cases {
        let text = client.err(call.clone()).await;
        assert!(text.contains(expected), "{call}: {text}");
    }
    assert_eq!(std::fs::read_to_string(ws.outside.join("secret.txt")).unwrap(), "NEEDLE_OUTSIDE top secret\n");
    assert!(!ws.outside.join("new.txt").exists() && !ws.outside.join("abs.txt").exists());
    assert!(!ws.root.join(".git/hooks/pre-commit").exists());
    assert!(std::fs::symlink_metadata(ws.root.join("link_inside")).unwrap().file_type().is_symlink());
    assert_eq!(
        read(&ws, "src/lib.rs"),
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/workspace/src/lib.rs")).unwrap()
    );
    client.close().await;
}

#[tokio::test]
async fn replace_string_matches_exactly_and_explains_misses() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client
        .ok(op(
            "replace_string",
            json!({"path": "src/main.rs", "old_string": "greet(\"world\")", "new_string": "greet(\"there\")"}),
        ))
        .await;
    assert!(
        reply.text.contains("-    let greeting = greet(\"world\");\n+    let greeting = greet(\"there\");"),
        "{}",
        reply.text
    );
    let new_hash = reply.structured["new_hash"].as_str().unwrap().to_string();
    let on_disk = read(&ws, "src/main.rs");
    assert_eq!(new_hash, super::read_file::sha256_hex(&on_disk));
    let twice = client
        .err(op("replace_string", json!({"path": "src/main.rs", "old_string": "greet", "new_string": "hail"})))
        .await;
    assert!(twice.contains("occurs 4 times (at lines 2, 3, 6)") && twice.contains("replace_all"), "{twice}");
    let missing = client
        .err(op(
            "replace_string",
            json!({"path": "src/main.rs", "old_string": "fn greet(name: &String)", "new_string": "x"}),
        ))
        .await;
    assert!(
        missing.contains("was not found")
            && missing.contains("closest, lines 6-6")
            && missing.contains("     6\tfn greet(name: &str) -> String {"),
        "{missing}"
    );
    let spaced = client
        .err(op("replace_string", json!({"path": "src/main.rs", "old_string": "fn  main()  {", "new_string": "x"})))
        .await;
    assert!(spaced.contains("different whitespace or indentation"), "{spaced}");
    let all = client
        .ok(op(
            "replace_string",
            json!({"path": "src/main.rs", "old_string": "greet(", "new_string": "hail(", "replace_all": true}),
        ))
        .await;
    assert_eq!(all.structured["replacements"], 2);
    let stale = client.err(op("replace_string", json!({"path": "src/main.rs", "old_string": "hail(", "new_string": "x(", "replace_all": true, "expected_hash": new_hash}))).await;
    let current = super::read_file::sha256_hex(&read(&ws, "src/main.rs"));
    assert!(stale.contains("changed since it was read") && stale.contains(&format!("now {current}")), "{stale}");
    client.ok(op("replace_string", json!({"path": "src/main.rs", "old_string": "hail(\"there\")", "new_string": "hail(\"you\")", "expected_hash": current}))).await;
    let same =
        client.err(op("replace_string", json!({"path": "src/main.rs", "old_string": "x", "new_string": "x"}))).await;
    assert!(same.contains("are the same"), "{same}");
    let nofile =
        client.err(op("replace_string", json!({"path": "src/none.rs", "old_string": "x", "new_string": "y"}))).await;
    assert!(nofile.contains("`src/none.rs` does not exist"), "{nofile}");
    client.close().await;
}

#[tokio::test]
async fn edits_keep_line_endings_bom_permissions_and_final_newline() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("win.txt"), "\u{feff}one\r\ntwo\r\nthree\r\n").unwrap();
    std::fs::set_permissions(ws.root.join("win.txt"), std::fs::Permissions::from_mode(0o751)).unwrap();
    std::fs::write(ws.root.join("tail.txt"), "a\nb").unwrap();
    let client = Client::start(&ws, &[]).await;
    client
        .ok(op("replace_string", json!({"path": "win.txt", "old_string": "two\nthree", "new_string": "2\n3\n3.5"})))
        .await;
    assert_eq!(read(&ws, "win.txt"), "\u{feff}one\r\n2\r\n3\r\n3.5\r\n".as_bytes());
    assert_eq!(std::fs::metadata(ws.root.join("win.txt")).unwrap().permissions().mode() & 0o7777, 0o751);
    client.ok(op("insert_lines", json!({"path": "win.txt", "line": 0, "text": "zero"}))).await;
    assert_eq!(read(&ws, "win.txt"), "\u{feff}zero\r\none\r\n2\r\n3\r\n3.5\r\n".as_bytes());
    client.ok(op("replace_string", json!({"path": "tail.txt", "old_string": "b", "new_string": "c"}))).await;
    assert_eq!(read(&ws, "tail.txt"), b"a\nc");
    let latin = client
        .err(op("replace_string", json!({"path": "data/latin1.txt", "old_string": "lait", "new_string": "milk"})))
        .await;
    assert!(latin.contains("not valid UTF-8 (at byte 3)"), "{latin}");
    assert_eq!(read(&ws, "data/latin1.txt"), b"caf\xe9 au lait\nna\xefve\n");
    let png = read(&ws, "data/pixel.png");
    let binary = client.err(op("insert_lines", json!({"path": "data/pixel.png", "line": 0, "text": "x"}))).await;
    assert!(binary.contains("not valid UTF-8"), "{binary}");
    assert_eq!(read(&ws, "data/pixel.png"), png, "binary files are never half-edited");
    client.close().await;
}

#[tokio::test]
async fn multi_replace_and_insert_lines() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let original = read(&ws, "src/lib.rs");
    let failed = client
        .err(op(
            "multi_replace",
            json!({"path": "src/lib.rs", "edits": [
                {"old_string": "pub depth: usize", "new_string": "pub depth: u32"},
                {"old_string": "NotThere", "new_string": "x"}
            ]}),
        ))
        .await;
    assert!(failed.contains("edit 1 (0-based) failed, nothing was written"), "{failed}");
    assert_eq!(read(&ws, "src/lib.rs"), original);
    let reply = client
        .ok(op(
            "multi_replace",
            json!({"path": "src/lib.rs", "edits": [
                {"old_string": "pub depth: usize", "new_string": "pub depth: u32"},
                {"old_string": "depth: u32", "new_string": "depth: u64"},
                {"old_string": "ParseError", "new_string": "Error", "replace_all": true}
            ]}),
        ))
        .await;
    assert_eq!(reply.structured["replacements"], 1 + 1 + 3);
    let text = String::from_utf8(read(&ws, "src/lib.rs")).unwrap();
    assert!(text.contains("pub depth: u64") && !text.contains("ParseError"), "{text}");
    assert!(
        client.err(op("multi_replace", json!({"path": "src/lib.rs", "edits": []}))).await.contains("`edits` is empty")
    );
    client.ok(op("insert_lines", json!({"path": "src/main.rs", "line": 4, "text": "\n// between\n"}))).await;
    let main = String::from_utf8(read(&ws, "src/main.rs")).unwrap();
    assert!(main.contains("}\n\n// between\n\nfn greet"), "{main}");
    let end = client.ok(op("insert_lines", json!({"path": "src/main.rs", "line": 10, "text": "// end"}))).await;
    assert!(String::from_utf8(read(&ws, "src/main.rs")).unwrap().ends_with("}\n// end\n"), "{}", end.text);
    let past = client.err(op("insert_lines", json!({"path": "src/main.rs", "line": 99, "text": "x"}))).await;
    assert!(past.contains("`line` = 99 is out of range: `src/main.rs` has 11 lines: use 0 to 11"), "{past}");
    client.close().await;
}

#[tokio::test]
async fn create_directory_undo_and_changes() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let made = client.ok(op("create_directory", json!({"path": "a/b/c"}))).await;
    assert_eq!(made.structured["action"], "created");
    assert!(ws.root.join("a/b/c").is_dir());
    assert_eq!(client.ok(op("create_directory", json!({"path": "a/b"}))).await.structured["action"], "exists");
    assert!(client.err(op("create_directory", json!({"path": "README.md"}))).await.contains("already exists"));
    client.ok(op("create_file", json!({"path": "a/b/c/new.txt", "content": "one\n"}))).await;
    client
        .ok(op(
            "replace_string",
            json!({"path": "README.md", "old_string": "# Fixture workspace", "new_string": "# Changed"}),
        ))
        .await;
    client
        .ok(op(
            "replace_string",
            json!({"path": "README.md", "old_string": "# Changed", "new_string": "# Changed twice"}),
        ))
        .await;
    let changes = client.ok(op("changes", json!({}))).await;
    let files = changes.structured["changed_files"].as_array().unwrap();
    let summary: Vec<(String, String, u64)> = files
        .iter()
        .map(|f| {
            (f["path"].as_str().unwrap().into(), f["action"].as_str().unwrap().into(), f["changes"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("a/b/c".into(), "directory created".into(), 1),
            ("a/b/c/new.txt".into(), "created".into(), 1),
            ("README.md".into(), "modified".into(), 2)
        ]
    );
    assert!(
        changes.text.contains("-# Fixture workspace\n+# Changed twice\n"),
        "one combined diff per file: {}",
        changes.text
    );
    let only = client.ok(op("changes", json!({"path": "README.md"}))).await;
    assert_eq!(only.structured["changed_files"].as_array().unwrap().len(), 1);
    // Undo two README edits, byte for byte.
    let undone = client.ok(op("undo", json!({"steps": 2}))).await;
    assert_eq!(undone.structured["undone"].as_array().unwrap().len(), 2);
    assert_eq!(
        read(&ws, "README.md"),
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/workspace/README.md")).unwrap()
    );
    // Undo the creation: the file goes, and so do the directories that only it needed.
    client.ok(op("undo", json!({}))).await;
    assert!(!ws.root.join("a/b/c/new.txt").exists());
    client.ok(op("undo", json!({}))).await;
    assert!(!ws.root.join("a").exists(), "directories created by the session are removed when empty");
    let nothing = client.err(op("undo", json!({}))).await;
    assert!(nothing.contains("nothing to undo"), "{nothing}");
    client.close().await;
}

#[tokio::test]
async fn undo_refuses_after_outside_changes_unless_forced() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    client.ok(op("replace_string", json!({"path": "src/main.rs", "old_string": "world", "new_string": "moon"}))).await;
    client.ok(op("create_file", json!({"path": "notes.md", "content": "mine\n"}))).await;
    std::fs::write(ws.root.join("src/main.rs"), "edited by a human\n").unwrap();
    let refused = client.err(op("undo", json!({"steps": 2}))).await;
    assert!(
        refused.contains("`src/main.rs` was changed by someone else") && refused.contains("nothing was reverted"),
        "{refused}"
    );
    assert!(ws.root.join("notes.md").exists(), "refusal reverts nothing");
    client.ok(op("undo", json!({"steps": 2, "force": true}))).await;
    assert!(!ws.root.join("notes.md").exists());
    assert_eq!(
        read(&ws, "src/main.rs"),
        std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/workspace/src/main.rs")).unwrap()
    );
    client.close().await;
}

#[tokio::test]
async fn concurrent_edits_of_one_file_all_land() {
    let ws = Workspace::new();
    let body: String = (0..20).map(|i| format!("token{i}\n")).collect();
    std::fs::write(ws.root.join("many.txt"), &body).unwrap();
    let client = std::sync::Arc::new(Client::start(&ws, &[]).await);
    let mut tasks = Vec::new();
    for i in 0..20 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            client.ok(op("replace_string", json!({"path": "many.txt", "old_string": format!("token{i}\n"), "new_string": format!("done{i}\n")}))).await
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let expected: String = (0..20).map(|i| format!("done{i}\n")).collect();
    assert_eq!(String::from_utf8(read(&ws, "many.txt")).unwrap(), expected, "no edit may be lost");
}

// Multi-threaded: the test polls the directory synchronously while the request is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_mid_write_leaves_old_or_new_and_the_next_start_sweeps_temp_files() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("big.bin"), b"old\n").unwrap();
    // 12 MiB: under rmcp's 16 MiB message limit and the 10 MiB edit cap is raised for it.
    let config = ws.config_home.join("big.toml");
    std::fs::write(&config, "max_edit_bytes = 16777216\n").unwrap();
    let size = 12 * 1024 * 1024;
    let content = "x".repeat(size);
    let client = Client::start(&ws, &["--config", config.to_str().unwrap()]).await;
    let pid = client.pid.unwrap();
    let peer = client.service.peer().clone();
    let call = tokio::spawn(async move {
        let params = rmcp::model::CallToolRequestParams::new("file_operations").with_arguments(
            op("create_file", json!({"path": "big.bin", "content": content, "overwrite": true}))
                .as_object()
                .unwrap()
                .clone(),
        );
        let _ = peer.call_tool(params).await;
    });
    let in_root = |ws: &Workspace| {
        std::fs::read_dir(&ws.root)
            .unwrap()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().ends_with(".toolbelt-tmp"))
    };
    let mut seen_temp = false;
    for _ in 0..200_000 {
        if in_root(&ws) {
            seen_temp = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_micros(50));
    }
    assert!(seen_temp, "the write's temp file never appeared");
    std::process::Command::new("kill").args(["-9", &pid.to_string()]).status().unwrap();
    let _ = call.await;
    let bytes = read(&ws, "big.bin");
    assert!(bytes == b"old\n" || bytes.len() == size, "partial file of {} bytes", bytes.len());
    assert!(!temp_files(&ws.root).is_empty(), "the kill landed mid-write");
    // The next server removes what the killed one left.
    let next = Client::start(&ws, &[]).await;
    let mut swept = false;
    for _ in 0..200 {
        if temp_files(&ws.root).is_empty() {
            swept = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(swept, "temp files left: {:?}", temp_files(&ws.root));
    next.close().await;
}

#[tokio::test]
async fn annotations_follow_what_operations_do() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let tool = serde_json::to_value(&client.service.list_all_tools().await.unwrap()[0]).unwrap();
    assert_eq!(
        (tool["annotations"]["readOnlyHint"].as_bool(), tool["annotations"]["destructiveHint"].as_bool()),
        (Some(false), Some(true))
    );
    client.close().await;
    let granular = Client::start(&ws, &["--tool-layout", "granular"]).await;
    for tool in granular.service.list_all_tools().await.unwrap() {
        let value = serde_json::to_value(&tool).unwrap();
        let read_only = matches!(
            tool.name.as_ref(),
            "read_file"
                | "list_dir"
                | "file_search"
                | "grep_search"
                | "changes"
                | "read_output"
                | "list_sessions"
                | "todo_read"
                | "memory_search"
                | "memory_get"
                | "memory_list_collections"
        );
        assert_eq!(value["annotations"]["readOnlyHint"], read_only, "{}", tool.name);
        let idempotent = read_only
            || matches!(
                tool.name.as_ref(),
                "create_directory" | "todo_write" | "todo_update" | "memory_store" | "memory_update"
            );
        assert_eq!(value["annotations"]["idempotentHint"], idempotent, "{}", tool.name);
    }
    granular.close().await;
}

#[tokio::test]
async fn delete_file_and_directories_then_undo_byte_for_byte() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.root.join("tree/sub")).unwrap();
    std::fs::write(ws.root.join("tree/sub/a.bin"), b"\x00\x01\xffbinary\x00").unwrap();
    std::fs::set_permissions(ws.root.join("tree/sub/a.bin"), std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(ws.root.join("tree/b.txt"), "bee\n").unwrap();
    std::fs::create_dir_all(ws.root.join("tree/empty")).unwrap();
    std::os::unix::fs::symlink("b.txt", ws.root.join("tree/link")).unwrap();
    let client = Client::start(&ws, &[]).await;
    let blob = read(&ws, "data/blob.bin");
    let gone = client.ok(op("delete_file", json!({"path": "data/blob.bin"}))).await;
    assert!(gone.text.starts_with("[deleted file `data/blob.bin` (1.1 KiB"), "{}", gone.text);
    assert!(!ws.root.join("data/blob.bin").exists());
    let refused = client.err(op("delete_file", json!({"path": "tree"}))).await;
    assert!(refused.contains("`tree` is a directory holding 5 entries; set `recursive: true`"), "{refused}");
    let preview = client.ok(op("delete_file", json!({"path": "tree", "recursive": true, "dry_run": true}))).await;
    assert!(preview.text.starts_with("[dry run: would delete directory `tree` (2 files"), "{}", preview.text);
    assert!(ws.root.join("tree").exists());
    let tree = client.ok(op("delete_file", json!({"path": "tree", "recursive": true}))).await;
    assert_eq!(
        (tree.structured["kind"].as_str(), tree.structured["files_removed"].as_u64()),
        (Some("directory"), Some(2))
    );
    assert!(!ws.root.join("tree").exists());
    client.ok(op("delete_file", json!({"path": "src/nested/deep/notes.txt"}))).await;
    client.ok(op("delete_file", json!({"path": "src/nested/deep"}))).await;
    assert!(client.err(op("delete_file", json!({"path": "nothing-here"}))).await.contains("does not exist"));
    let changes = client.ok(op("changes", json!({}))).await;
    assert!(
        changes.text.contains("`tree` directory deleted (2 files)") && changes.text.contains("`data/blob.bin` deleted"),
        "{}",
        changes.text
    );
    client.ok(op("undo", json!({"steps": 4}))).await;
    assert_eq!(read(&ws, "data/blob.bin"), blob);
    assert_eq!(read(&ws, "tree/sub/a.bin"), b"\x00\x01\xffbinary\x00");
    assert_eq!(std::fs::metadata(ws.root.join("tree/sub/a.bin")).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(read(&ws, "tree/b.txt"), b"bee\n");
    assert!(ws.root.join("tree/empty").is_dir());
    assert_eq!(std::fs::read_link(ws.root.join("tree/link")).unwrap(), std::path::PathBuf::from("b.txt"));
    assert_eq!(read(&ws, "src/nested/deep/notes.txt"), b"deep file\nNEEDLE_DEEP one\nNEEDLE_DEEP two\n");
    client.close().await;
}

#[tokio::test]
async fn rename_files_and_directories_then_undo() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let lib = read(&ws, "src/lib.rs");
    let main = read(&ws, "src/main.rs");
    let moved = client.ok(op("rename_file", json!({"path": "src/lib.rs", "destination": "src/core/parser.rs"}))).await;
    assert_eq!(
        (moved.structured["path"].as_str(), moved.structured["from"].as_str()),
        (Some("src/core/parser.rs"), Some("src/lib.rs"))
    );
    assert_eq!(read(&ws, "src/core/parser.rs"), lib);
    let clash =
        client.err(op("rename_file", json!({"path": "src/main.rs", "destination": "src/core/parser.rs"}))).await;
    assert!(clash.contains("`src/core/parser.rs` already exists"), "{clash}");
    let over = client
        .ok(op("rename_file", json!({"path": "src/main.rs", "destination": "src/core/parser.rs", "overwrite": true})))
        .await;
    assert_eq!(over.structured["replaced"], true);
    assert_eq!(read(&ws, "src/core/parser.rs"), main);
    client.ok(op("rename_file", json!({"path": "src/core", "destination": "lib/core"}))).await;
    assert!(ws.root.join("lib/core/parser.rs").exists() && !ws.root.join("src/core").exists());
    let into_itself = client.err(op("rename_file", json!({"path": "lib", "destination": "lib/inner/lib"}))).await;
    assert!(into_itself.contains("inside `lib`"), "{into_itself}");
    let outside =
        client.err(op("rename_file", json!({"path": "README.md", "destination": "../outside/stolen.md"}))).await;
    assert!(outside.contains("outside the allowed roots"), "{outside}");
    let dry = client
        .ok(op("rename_file", json!({"path": "README.md", "destination": "docs/README.md", "dry_run": true})))
        .await;
    assert!(dry.text.starts_with("[dry run: would rename") && ws.root.join("README.md").exists());
    client.ok(op("undo", json!({"steps": 3}))).await;
    assert_eq!(read(&ws, "src/lib.rs"), lib);
    assert_eq!(read(&ws, "src/main.rs"), main);
    assert!(!ws.root.join("src/core").exists() && !ws.root.join("lib").exists(), "created parents go with the undo");
    client.close().await;
}

#[tokio::test]
async fn apply_patch_unified_multi_file_with_drift_adds_deletes_and_undo() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let main_before = read(&ws, "src/main.rs");
    let crlf_before = read(&ws, "data/crlf.txt");
    // The main.rs hunk claims line 1 but sits at line 6 (drift); crlf.txt keeps CRLF.
    let patch = "diff --git a/src/main.rs b/src/main.rs\n--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,3 +1,3 @@\n fn greet(name: &str) -> String {\n-    format!(\"Hello, {name}!\")\n+    format!(\"Hi, {name}!\")\n }\ndiff --git a/data/crlf.txt b/data/crlf.txt\n--- a/data/crlf.txt\n+++ b/data/crlf.txt\n@@ -2,2 +2,2 @@\n second line\n-third line\n+3rd line\ndiff --git a/notes/new.md b/notes/new.md\nnew file mode 100644\n--- /dev/null\n+++ b/notes/new.md\n@@ -0,0 +1,2 @@\n+# New\n+text\ndiff --git a/data/latin1.txt b/data/latin1.txt\ndeleted file mode 100644\n--- a/data/latin1.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n";
    let preview = client.ok(op("apply_patch", json!({"patch": patch, "dry_run": true}))).await;
    assert!(
        preview.text.starts_with("[dry run: the patch applies to 4 file(s); nothing was written]"),
        "{}",
        preview.text
    );
    assert_eq!(read(&ws, "src/main.rs"), main_before);
    let reply = client.ok(op("apply_patch", json!({"patch": patch}))).await;
    let actions: Vec<(String, String)> = reply.structured["patched_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (f["path"].as_str().unwrap().into(), f["action"].as_str().unwrap().into()))
        .collect();
    assert_eq!(
        actions,
        [
            ("src/main.rs".into(), "modified".into()),
            ("data/crlf.txt".into(), "modified".into()),
            ("notes/new.md".into(), "created".into()),
            ("data/latin1.txt".into(), "deleted".into())
        ]
    );
    assert!(String::from_utf8(read(&ws, "src/main.rs")).unwrap().contains("format!(\"Hi, {name}!\")"));
    assert_eq!(read(&ws, "data/crlf.txt"), b"first line\r\nsecond line\r\n3rd line\r\n");
    assert_eq!(read(&ws, "notes/new.md"), b"# New\ntext\n");
    assert!(!ws.root.join("data/latin1.txt").exists());
    // One undo step reverts the whole patch.
    client.ok(op("undo", json!({}))).await;
    assert_eq!(read(&ws, "src/main.rs"), main_before);
    assert_eq!(read(&ws, "data/crlf.txt"), crlf_before);
    assert!(!ws.root.join("notes").exists());
    assert_eq!(read(&ws, "data/latin1.txt"), b"caf\xe9 au lait\nna\xefve\n");
    client.close().await;
}

#[tokio::test]
async fn apply_patch_is_all_or_nothing_and_explains_the_failing_hunk() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let main_before = read(&ws, "src/main.rs");
    let patch = "--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,1 +1,1 @@\n-fn main() {\n+fn main() -> () {\n--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -3,2 +3,2 @@\n pub struct Parser {\n-    pub depth: u8,\n+    pub depth: u16,\n";
    let err = client.err(op("apply_patch", json!({"patch": patch}))).await;
    assert!(err.contains("`src/lib.rs`: hunk 1: its context and removed lines do not match the file"), "{err}");
    assert!(err.contains("nearest, lines 3-4") && err.contains("     4\t    pub depth: usize,"), "{err}");
    assert!(err.contains("no file was changed"), "{err}");
    assert_eq!(read(&ws, "src/main.rs"), main_before, "the first file must be unchanged");
    let outside = client
        .err(op("apply_patch", json!({"patch": "--- /dev/null\n+++ b/../outside/x.txt\n@@ -0,0 +1 @@\n+x\n"})))
        .await;
    assert!(outside.contains("outside the allowed roots"), "{outside}");
    let garbage = client.err(op("apply_patch", json!({"patch": "please change main.rs"}))).await;
    assert!(garbage.contains("invalid patch: the patch holds no file changes"), "{garbage}");
    let exists =
        client.err(op("apply_patch", json!({"patch": "--- /dev/null\n+++ b/README.md\n@@ -0,0 +1 @@\n+x\n"}))).await;
    assert!(exists.contains("`README.md` already exists"), "{exists}");
    let started = std::time::Instant::now();
    let twice = "--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,1 +1,1 @@\n-fn main() {\n+fn main() -> () {\n--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,1 +1,1 @@\n-fn main() {\n+fn main() {}\n";
    let err = client.err(op("apply_patch", json!({"patch": twice}))).await;
    assert!(err.contains("`src/main.rs` appears more than once in the patch"), "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "it waited on its own lock");
    assert_eq!(read(&ws, "src/main.rs"), main_before);
    client.close().await;
}

#[tokio::test]
async fn apply_patch_envelope_add_update_move_delete() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let patch = "*** Begin Patch\n*** Add File: docs/guide.md\n+# Guide\n+step one\n*** Update File: src/lib.rs\n*** Move to: src/parser.rs\n@@ pub fn parse(input: &str) -> Result<Parser, ParseError> {\n     if input.is_empty() {\n-        return Err(ParseError::UnexpectedEnd);\n+        return Err(ParseError::BadToken(' '));\n     }\n*** Delete File: src/nested/deep/notes.txt\n*** End Patch\n";
    let reply = client.ok(op("apply_patch", json!({"patch": patch}))).await;
    assert_eq!(reply.structured["patched_files"].as_array().unwrap().len(), 4, "add, moved (write + delete), delete");
    assert_eq!(read(&ws, "docs/guide.md"), b"# Guide\nstep one\n");
    assert!(!ws.root.join("src/lib.rs").exists());
    assert!(String::from_utf8(read(&ws, "src/parser.rs")).unwrap().contains("BadToken(' ')"));
    assert!(!ws.root.join("src/nested/deep/notes.txt").exists());
    client.ok(op("undo", json!({}))).await;
    assert!(
        ws.root.join("src/lib.rs").exists()
            && !ws.root.join("src/parser.rs").exists()
            && !ws.root.join("docs").exists()
    );
    client.close().await;
}

#[tokio::test]
async fn edits_refuse_files_over_the_size_limit() {
    let ws = Workspace::new();
    let config = ws.config_home.join("small.toml");
    std::fs::write(&config, "max_edit_bytes = 1000\n").unwrap();
    let client = Client::start(&ws, &["--config", config.to_str().unwrap()]).await;
    let before = read(&ws, "data/big.txt");
    let text = client
        .err(op("replace_string", json!({"path": "data/big.txt", "old_string": "line 1 ", "new_string": "x"})))
        .await;
    assert!(text.contains("`data/big.txt` is 1.3 MiB, over the 1000 B limit for edits"), "{text}");
    let big = client.err(op("create_file", json!({"path": "new.txt", "content": "y".repeat(2000)}))).await;
    assert!(big.contains("over the 1000 B limit for written files"), "{big}");
    assert_eq!(read(&ws, "data/big.txt"), before);
    assert!(!ws.root.join("new.txt").exists());
    client.close().await;
}
