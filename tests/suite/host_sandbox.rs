//! Never more than the host allows: a call carrying Codex's sandbox state gets the stricter of
//! the host's sandbox and ours (file writes, the command sandbox, the network), and the server
//! declares the capability Codex sends that state to.

use serde_json::{Value, json};

use super::common::{Client, Workspace, op};

/// Codex's `_meta` for a thread whose profile reads everything and writes `writes` entries,
/// with the network `network` (`enabled` or `restricted`).
fn codex_meta(ws: &Workspace, write: bool, network: &str) -> Value {
    let mut entries = vec![json!({"access": "read", "path": {"type": "special", "value": {"kind": "root"}}})];
    if write {
        entries.push(
            json!({"access": "write", "path": {"type": "special", "value": {"kind": "current_working_directory"}}}),
        );
    }
    json!({"codex/sandbox-state-meta": {
        "permissionProfile": {"type": "managed", "network": network, "file_system": {"type": "restricted", "entries": entries}},
        "sandboxCwd": format!("file://{}", ws.root.display()),
    }})
}

#[tokio::test]
async fn a_read_only_codex_thread_writes_nothing_and_a_networkless_one_gets_no_network() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let info = client.service.peer_info().unwrap();
    let experimental = info.capabilities.experimental.as_ref().map(|e| e.keys().cloned().collect::<Vec<_>>());
    assert_eq!(
        experimental,
        Some(vec!["codex/sandbox-state-meta".to_string()]),
        "Codex sends its state only when declared"
    );

    // Read-only: a file write is refused, a command writes nothing, reads still work.
    let read_only = codex_meta(&ws, false, "restricted");
    let write = op("create_file", json!({"path": "host-marker.txt", "content": "x"}));
    let refused = client.call_with_meta("file_operations", write.clone(), read_only.clone()).await;
    assert!(refused.is_error && refused.text.contains("read-only"), "{}", refused.text);
    assert!(!ws.root.join("host-marker.txt").exists());
    let touched = client
        .call_with_meta(
            "terminal_operations",
            op("run_command", json!({"command": "touch cmd-marker"})),
            read_only.clone(),
        )
        .await;
    assert!(!ws.root.join("cmd-marker").exists(), "a read-only thread's command wrote: {}", touched.text);
    let read = client
        .call_with_meta("file_operations", op("read_file", json!({"path": "src/main.rs"})), read_only.clone())
        .await;
    assert!(!read.is_error, "{}", read.text);

    // A terminal started where it could write takes no input from a read-only call; an undo
    // (of a change made before) is a write too.
    let started = client.call_with_meta("terminal_operations", op("start_session", json!({})), json!({})).await;
    assert!(!started.is_error, "{}", started.text);
    let id = started.structured["session_id"].as_str().unwrap().to_string();
    let typed = client
        .call_with_meta(
            "terminal_operations",
            op("send_input", json!({"session_id": id, "input": "touch pty-marker"})),
            read_only.clone(),
        )
        .await;
    assert!(typed.is_error && typed.text.contains("may only read"), "{}", typed.text);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(!ws.root.join("pty-marker").exists());
    assert!(!client.file(op("create_file", json!({"path": "undo-marker.txt", "content": "x"}))).await.is_error);
    let undo = client.call_with_meta("file_operations", op("undo", json!({})), read_only.clone()).await;
    assert!(undo.is_error && undo.text.contains("read-only"), "{}", undo.text);
    assert!(ws.root.join("undo-marker.txt").exists(), "the read-only undo removed nothing");

    // Writable without network: the write lands; the command has no proxy to reach out by.
    let networkless = codex_meta(&ws, true, "restricted");
    let written = client.call_with_meta("file_operations", write.clone(), networkless.clone()).await;
    assert!(!written.is_error, "{}", written.text);
    assert!(ws.root.join("host-marker.txt").exists());
    let env = |meta: Value| {
        let client = &client;
        async move {
            let reply = client
                .call_with_meta(
                    "terminal_operations",
                    op("run_command", json!({"command": "env | grep -c '^HTTPS_PROXY=' || true"})),
                    meta,
                )
                .await;
            assert!(!reply.is_error, "{}", reply.text);
            reply.joined("stdout").trim().to_string()
        }
    };
    assert_eq!(env(networkless).await, "0", "a networkless thread's command was given the proxy");
    // The same server without the host's state, and with a thread that has network: ours applies.
    assert_eq!(env(json!({})).await, "1", "our default (the proxy) applies without host state");
    assert_eq!(env(codex_meta(&ws, true, "enabled")).await, "1");
    // The host's full access widens nothing of ours: the file write outside the roots is still refused.
    let outside = client
        .call_with_meta(
            "file_operations",
            op("create_file", json!({"path": "/tmp/toolbelt-host-sandbox-outside.txt", "content": "x"})),
            json!({"codex/sandbox-state-meta": {"permissionProfile": {"type": "disabled"}}}),
        )
        .await;
    assert!(outside.is_error && outside.text.contains("outside"), "{}", outside.text);
    assert!(!std::path::Path::new("/tmp/toolbelt-host-sandbox-outside.txt").exists());
    client.close().await;
}
