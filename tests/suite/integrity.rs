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

/// Servers killed (`SIGKILL`) in the middle of their work leave undo blobs, spilled output and
/// private temp dirs; the next server removes them all and keeps only its own.
#[tokio::test]
async fn what_killed_servers_left_is_removed_by_the_next_start() {
    let ws = Workspace::new();
    let state = ws.state_home.join("toolbelt-mcp");
    // Its own temp dir: other tests' servers sweep the shared one at their start.
    let temp = ws.state_home.join("system-tmp");
    std::fs::create_dir_all(&temp).unwrap();
    let env = [("TMPDIR", temp.to_str().unwrap())];
    let big: String =
        (0..40_000).map(|i| format!("line {i} of a file large enough for its undo data to go to disk\n")).collect();
    std::fs::write(ws.root.join("big.txt"), &big).unwrap();
    let mut killed = Vec::new();
    for round in 0..4 {
        let client = Client::start_with_env(&ws, &[], &env).await;
        client.ok(op("insert_lines", json!({"path": "big.txt", "line": 0, "text": format!("round {round}")}))).await;
        let spilled = client.run("seq 1 200000").await;
        assert!(!spilled.is_error, "{}", spilled.text);
        let pid = client.pid.unwrap();
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
        assert!(super::common::wait_gone(pid, 10).await);
        let left = dirs_of(&state.join("undo"), pid) * dirs_of(&state.join("output"), pid) * dirs_of(&temp, pid);
        assert!(left > 0, "server {pid} left nothing to collect: the test proves nothing");
        killed.push(pid);
        drop(client);
    }
    let next = Client::start_with_env(&ws, &[], &env).await;
    next.run("true").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let left = |pid: u32| dirs_of(&state.join("undo"), pid) + dirs_of(&state.join("output"), pid) + dirs_of(&temp, pid);
    while killed.iter().any(|pid| left(*pid) > 0) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    for pid in &killed {
        assert_eq!(left(*pid), 0, "server {pid}'s leftovers are still there");
    }
    // The live server's own are kept.
    assert!(dirs_of(&state.join("output"), next.pid.unwrap()) > 0);
    next.close().await;
}

/// Entries of `dir` that belong to server `pid` (`PID-N` or `toolbelt-mcp-PID-N`).
fn dirs_of(dir: &std::path::Path, pid: u32) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let name = name.strip_prefix("toolbelt-mcp-").unwrap_or(&name).to_string();
            name.split('-').next() == Some(pid.to_string().as_str())
        })
        .count()
}
