//! Nothing lost across processes: several servers (several hosts open on one repository)
//! editing the same files take turns, and nothing one wrote is lost to another.

use serde_json::json;

use super::common::{Client, Workspace, op};

/// Three servers, each inserting its own 200 lines into one file as fast as it can.
#[tokio::test]
async fn edits_from_three_server_processes_lose_nothing() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("shared.txt"), "").unwrap();
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(Client::start(&ws, &[]).await);
    }
    let edits = clients.iter().enumerate().map(|(server, client)| async move {
        for i in 0..200 {
            let line = format!("server {server} edit {i}");
            let reply = client.file(op("insert_lines", json!({"path": "shared.txt", "line": 0, "text": line}))).await;
            assert!(!reply.is_error, "{line}: {}", reply.text);
        }
    });
    futures::future::join_all(edits).await;
    let text = std::fs::read_to_string(ws.root.join("shared.txt")).unwrap();
    let lines: std::collections::HashSet<&str> = text.lines().collect();
    assert_eq!(text.lines().count(), 600, "edits were lost");
    for server in 0..3 {
        for i in 0..200 {
            assert!(
                lines.contains(format!("server {server} edit {i}").as_str()),
                "server {server} edit {i} is missing"
            );
        }
    }
    for client in clients {
        client.close().await;
    }
}

/// The same through `apply_patch`, each patch touching two files the other servers touch too.
#[tokio::test]
async fn overlapping_patches_from_three_server_processes_lose_nothing() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("a.txt"), "end a\n").unwrap();
    std::fs::write(ws.root.join("b.txt"), "end b\n").unwrap();
    let mut clients = Vec::new();
    for _ in 0..3 {
        clients.push(Client::start(&ws, &[]).await);
    }
    let edits = clients.iter().enumerate().map(|(server, client)| async move {
        for i in 0..60 {
            let patch = format!(
                "*** Begin Patch\n*** Update File: a.txt\n@@\n+a {server} {i}\n end a\n*** Update File: b.txt\n@@\n+b {server} {i}\n end b\n*** End Patch\n"
            );
            let reply = client.file(op("apply_patch", json!({"patch": patch}))).await;
            assert!(!reply.is_error, "{server} {i}: {}", reply.text);
        }
    });
    futures::future::join_all(edits).await;
    for (file, letter) in [("a.txt", 'a'), ("b.txt", 'b')] {
        let text = std::fs::read_to_string(ws.root.join(file)).unwrap();
        assert_eq!(text.lines().count(), 181, "{file}: patches were lost");
        for server in 0..3 {
            for i in 0..60 {
                assert!(text.contains(&format!("{letter} {server} {i}\n")), "{file}: {server} {i} is missing");
            }
        }
    }
    for client in clients {
        client.close().await;
    }
}
