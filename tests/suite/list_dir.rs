//! `list_dir`: tree order, depth, filters, counts, symlinks, limits.

use serde_json::{Value, json};

use super::common::{Client, Workspace, op};

fn paths(reply: &Value) -> Vec<String> {
    reply["entries"].as_array().unwrap().iter().map(|e| e["path"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn lists_one_level_with_kinds_sizes_counts_and_links() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.ok(op("list_dir", json!({}))).await;
    assert_eq!(
        paths(&reply.structured),
        ["README.md", "dangling", "data", "données", "link_inside", "link_outside", "link_outside_dir", "src"]
    );
    let text = &reply.text;
    assert!(text.starts_with("`.`: 8 entries\n"), "{text}");
    assert!(text.contains("src/ (4 entries)\n"), "lib.rs, main.rs, nested, loop; generated.rs is git-ignored: {text}");
    assert!(text.contains("README.md ("), "{text}");
    assert!(text.contains("link_inside -> src/lib.rs (symlink inside the roots)"), "{text}");
    assert!(
        text.contains("link_outside -> ") && text.contains("(symlink leading outside the roots: unusable)"),
        "{text}"
    );
    assert!(text.contains("dangling -> does/not/exist (broken symlink)"), "{text}");
    let entries = reply.structured["entries"].as_array().unwrap();
    let src = entries.iter().find(|e| e["path"] == "src").unwrap();
    assert_eq!((src["kind"].as_str(), src["children"].as_u64()), (Some("dir"), Some(4)));
    let readme = entries.iter().find(|e| e["path"] == "README.md").unwrap();
    let size = std::fs::metadata(ws.root.join("README.md")).unwrap().len();
    assert_eq!((readme["kind"].as_str(), readme["size"].as_u64()), (Some("file"), Some(size)));
    let outside = entries.iter().find(|e| e["path"] == "link_outside_dir").unwrap();
    assert_eq!((outside["kind"].as_str(), outside["leads"].as_str()), (Some("symlink"), Some("outside")));
    client.close().await;
}

#[tokio::test]
async fn depth_filters_and_limits() {
    let ws = Workspace::new();
    std::fs::create_dir_all(ws.root.join(".git/objects")).unwrap();
    std::fs::write(ws.root.join(".git/HEAD"), "ref: x").unwrap();
    let client = Client::start(&ws, &[]).await;
    let deep = client.ok(op("list_dir", json!({"path": "src", "depth": 3}))).await;
    assert_eq!(
        paths(&deep.structured),
        ["src/lib.rs", "src/loop", "src/main.rs", "src/nested", "src/nested/deep", "src/nested/deep/notes.txt"]
    );
    assert!(deep.text.contains("nested/ (1 entries)\n  deep/ (1 entries)\n    notes.txt ("), "{}", deep.text);
    let hidden = client.ok(op("list_dir", json!({"include_hidden": true}))).await;
    let names = paths(&hidden.structured);
    assert!(
        names.contains(&".env".to_string())
            && names.contains(&".hidden".to_string())
            && names.contains(&".gitignore".to_string())
    );
    assert!(!names.iter().any(|n| n == ".git"), "`.git` is never listed: {names:?}");
    let all = client.ok(op("list_dir", json!({"respect_gitignore": false}))).await;
    let names = paths(&all.structured);
    assert!(names.contains(&"ignored".to_string()) && names.contains(&"debug.log".to_string()), "{names:?}");
    let limited = client.ok(op("list_dir", json!({"depth": 3, "limit": 3}))).await;
    assert_eq!(limited.structured["entries"].as_array().unwrap().len(), 3);
    assert_eq!(limited.structured["truncated"], true);
    let total = limited.structured["total"].as_u64().unwrap();
    assert!(total > 10, "{total}");
    assert!(limited.text.contains(&format!("… {} more entries not shown", total - 3)), "{}", limited.text);
    let file = client.err(op("list_dir", json!({"path": "README.md"}))).await;
    assert!(file.contains("`README.md` is not a directory"), "{file}");
    client.close().await;
}

#[tokio::test]
async fn symlink_cycles_do_not_loop() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.ok(op("list_dir", json!({"depth": 10}))).await;
    let names = paths(&reply.structured);
    assert!(names.contains(&"src/loop".to_string()));
    assert!(!names.iter().any(|n| n.starts_with("src/loop/")), "the cycle was followed: {names:?}");
    client.close().await;
}
