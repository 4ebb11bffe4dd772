//! Path confinement across every operation: `..`, absolute paths, symlinks out, cycles, and
//! trees with tens of thousands of files under a small file-descriptor limit.

use serde_json::json;

use super::common::{Client, Workspace, op};

#[tokio::test]
async fn dotdot_and_absolute_paths_outside_are_refused_everywhere() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let outside_abs = ws.outside.join("secret.txt").display().to_string();
    let cases = [
        op("read_file", json!({"path": "../outside/secret.txt"})),
        op("read_file", json!({"path": "src/../../outside/secret.txt"})),
        op("read_file", json!({"path": outside_abs})),
        op("read_file", json!({"path": "/etc/passwd"})),
        op("list_dir", json!({"path": ".."})),
        op("file_search", json!({"pattern": "*", "path": "../outside"})),
        op("grep_search", json!({"pattern": "NEEDLE", "path": "../outside"})),
    ];
    for case in cases {
        let text = client.err(case.clone()).await;
        assert!(
            text.contains("is outside the allowed roots") && text.contains(&ws.root.display().to_string()),
            "{case}: {text}"
        );
        assert!(!text.contains("top secret"));
    }
    // A sibling whose name extends the root's is not inside it.
    let sibling = format!("{}-evil/x", ws.root.display());
    assert!(client.err(op("read_file", json!({"path": sibling}))).await.contains("outside the allowed roots"));
    client.close().await;
}

#[tokio::test]
async fn symlinks_never_lead_out() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    for case in [
        op("read_file", json!({"path": "link_outside"})),
        op("read_file", json!({"path": "link_outside_dir/secret.txt"})),
        op("list_dir", json!({"path": "link_outside_dir"})),
        op("file_search", json!({"pattern": "*", "path": "link_outside_dir"})),
        op("grep_search", json!({"pattern": "NEEDLE", "path": "link_outside"})),
    ] {
        let text = client.err(case.clone()).await;
        assert!(text.contains("resolves to") && text.contains("outside the allowed roots"), "{case}: {text}");
        assert!(!text.contains("top secret"));
    }
    // Walks over the root do not follow them either.
    let grep = client
        .ok(op("grep_search", json!({"pattern": "NEEDLE_OUTSIDE", "include_hidden": true, "respect_gitignore": false})))
        .await;
    assert_eq!(grep.structured["total_matches"], 0);
    let found = client.ok(op("file_search", json!({"pattern": "secret.txt", "respect_gitignore": false}))).await;
    assert_eq!(found.structured["files"], json!(["ignored/secret.txt"]));
    // A symlink that stays inside is usable and shows its real path.
    let inside = client.ok(op("read_file", json!({"path": "link_inside"}))).await;
    assert_eq!(inside.structured["path"], "src/lib.rs");
    // A cycle (src/loop -> ..) is listed, never walked.
    let grep = client.ok(op("grep_search", json!({"pattern": "fn main"}))).await;
    assert_eq!(grep.structured["total_matches"], 1);
    let all = client.ok(op("file_search", json!({"pattern": "**/*.rs"}))).await;
    assert_eq!(all.structured["total"], 2);
    client.close().await;
}

#[tokio::test]
async fn a_swapped_in_symlink_is_not_followed() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    client.ok(op("read_file", json!({"path": "src/main.rs"}))).await;
    std::fs::remove_file(ws.root.join("src/main.rs")).unwrap();
    std::os::unix::fs::symlink(ws.outside.join("secret.txt"), ws.root.join("src/main.rs")).unwrap();
    let text = client.err(op("read_file", json!({"path": "src/main.rs"}))).await;
    assert!(text.contains("outside the allowed roots") && !text.contains("top secret"), "{text}");
    client.close().await;
}

#[tokio::test]
async fn tens_of_thousands_of_files_under_a_small_fd_limit() {
    let ws = Workspace::new();
    let tree = ws.root.join("many");
    for d in 0..300 {
        let dir = tree.join(format!("d{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            std::fs::write(dir.join(format!("f{f:03}.txt")), format!("needle {d} {f}\n")).unwrap();
        }
    }
    // 64 descriptors: one leaked handle per directory or file would fail fast.
    let command = format!("ulimit -n 64 && exec {} serve --root {}", super::common::BIN, ws.root.display());
    let args = vec!["-c".to_string(), command];
    let transport = rmcp::transport::TokioChildProcess::new(rmcp::transport::ConfigureCommandExt::configure(
        tokio::process::Command::new("sh"),
        |cmd| {
            cmd.args(&args).env("XDG_CONFIG_HOME", &ws.config_home).env("XDG_STATE_HOME", &ws.state_home);
        },
    ))
    .unwrap();
    let client = super::common::Client { service: rmcp::ServiceExt::serve((), transport).await.unwrap(), pid: None };
    let found = client.ok(op("file_search", json!({"pattern": "*.txt", "path": "many", "limit": 5}))).await;
    assert_eq!(found.structured["total"], 30_000);
    let grep =
        client.ok(op("grep_search", json!({"pattern": "needle", "path": "many", "output": "count", "limit": 5}))).await;
    assert_eq!(
        (grep.structured["total_matches"].as_u64(), grep.structured["total_files"].as_u64()),
        (Some(30_000), Some(30_000))
    );
    let listed = client.ok(op("list_dir", json!({"path": "many", "depth": 2, "limit": 10}))).await;
    assert_eq!(listed.structured["total"], 30_300);
    client.close().await;
}
