//! Commands no staging layer records (`stage_writes = false` here; every command on macOS)
//! are recorded by comparing the roots with their shadow copy: the same `changes` and `undo`,
//! byte for byte, one step per command; the server's own edits while one runs are not taken
//! as the command's.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use super::common::{Client, Workspace};

fn undo() -> serde_json::Value {
    json!({"operation": "undo", "force": false})
}

async fn unstaged(ws: &Workspace) -> Client {
    let config = ws.outside.join("unstaged.toml");
    std::fs::write(&config, "stage_writes = false\n").unwrap();
    Client::start(ws, &["--config", config.to_str().unwrap()]).await
}

#[tokio::test]
async fn without_a_stage_a_commands_writes_are_listed_and_undone() {
    let ws = Workspace::new();
    let lib = ws.root.join("src/lib.rs");
    let before = std::fs::read(&lib).unwrap();
    let client = unstaged(&ws).await;

    let reply = client.run("sed -i 's/fn /fn renamed_/' src/lib.rs").await;
    assert!(!reply.is_error, "{}", reply.text);
    let changes = client.file(json!({"operation": "changes"})).await;
    assert!(changes.text.contains("src/lib.rs") && changes.text.contains("renamed_"), "{}", changes.text);
    let undone = client.file(undo()).await;
    assert!(!undone.is_error && undone.text.contains("run_command"), "{}", undone.text);
    assert_eq!(std::fs::read(&lib).unwrap(), before);

    // `rm -r` of a tree with a symlink and a binary file with its own mode.
    std::fs::create_dir_all(ws.root.join("tree/sub")).unwrap();
    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    std::fs::write(ws.root.join("tree/sub/blob.bin"), &binary).unwrap();
    std::fs::set_permissions(ws.root.join("tree/sub/blob.bin"), std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::write(ws.root.join("tree/a.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink("a.txt", ws.root.join("tree/link")).unwrap();
    assert!(!client.run("rm -r tree").await.is_error);
    assert!(!ws.root.join("tree").exists());
    let undone = client.file(undo()).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert_eq!(std::fs::read(ws.root.join("tree/sub/blob.bin")).unwrap(), binary);
    let mode = std::fs::metadata(ws.root.join("tree/sub/blob.bin")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert_eq!(std::fs::read_link(ws.root.join("tree/link")).unwrap(), std::path::Path::new("a.txt"));

    // `mv` of a directory and a new 20 MB binary from a script: one step, both undone.
    let reply = client.run("mv tree moved && python3 -c \"open('big.bin','wb').write(bytes(range(256))*81920)\"").await;
    assert!(!reply.is_error, "{}", reply.text);
    let undone = client.file(undo()).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert!(!ws.root.join("moved").exists() && !ws.root.join("big.bin").exists(), "{}", undone.text);
    assert_eq!(std::fs::read(ws.root.join("tree/sub/blob.bin")).unwrap(), binary);

    // Changed again by hand since: undo refuses and reverts nothing.
    assert!(!client.run("echo one >> notes.txt").await.is_error);
    std::fs::write(ws.root.join("notes.txt"), "by hand\n").unwrap();
    let refused = client.file(undo()).await;
    assert!(refused.is_error && refused.text.contains("changed by someone else"), "{}", refused.text);
    assert_eq!(std::fs::read_to_string(ws.root.join("notes.txt")).unwrap(), "by hand\n");

    // Build output (git-ignored) is not recorded, nor undone.
    std::fs::write(ws.root.join(".gitignore"), "target/\n").unwrap();
    assert!(!client.run("mkdir -p target && echo x > target/out && echo kept > kept.txt").await.is_error);
    let undone = client.file(undo()).await;
    assert!(!undone.is_error && !ws.root.join("kept.txt").exists(), "{}", undone.text);
    assert!(ws.root.join("target/out").exists(), "build output is not undone");
    client.close().await;
}

/// A background command is recorded at each call while it runs and at its end; an edit the
/// server makes meanwhile stays the server's (undoing the command leaves it).
#[tokio::test]
async fn without_a_stage_a_background_command_is_recorded_and_own_edits_stay_apart() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("mine.txt"), "mine\n").unwrap();
    let client = unstaged(&ws).await;
    let started = client
        .term(
            "run_command",
            json!({"command": "while [ ! -e go ]; do sleep 0.05; done; echo made > bg.txt", "background": true, "wait_ms": 0}),
        )
        .await;
    assert!(!started.is_error, "{}", started.text);
    let id = started.structured["session_id"].as_str().unwrap().to_string();
    let edited = client
        .file(json!({"operation": "replace_string", "path": "mine.txt", "old_string": "mine", "new_string": "edited"}))
        .await;
    assert!(!edited.is_error, "{}", edited.text);
    std::fs::write(ws.root.join("go"), "").unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while client.term("read_output", json!({"session_id": id, "wait_ms": 200})).await.structured["status"] == "running"
        && std::time::Instant::now() < deadline
    {}
    // Its end is a defined point: recorded then (not at the next call's end), so the first
    // `changes` after it lists what it wrote, even where its namespace's init is left a zombie
    // that no PID 1 reaps.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let changes = client.file(json!({"operation": "changes"})).await;
    assert!(changes.text.contains("bg.txt"), "{}", changes.text);
    // The newest step is the command's: `bg.txt` (and the test's own `go`) go, the edit stays.
    let undone = client.file(undo()).await;
    assert!(!undone.is_error && !ws.root.join("bg.txt").exists(), "{}", undone.text);
    assert_eq!(std::fs::read_to_string(ws.root.join("mine.txt")).unwrap(), "edited\n");
    // The step before is the edit's.
    let undone = client.file(undo()).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert_eq!(std::fs::read_to_string(ws.root.join("mine.txt")).unwrap(), "mine\n");
    client.close().await;
}

/// A background command appending to a file while the server makes files between: every
/// step undoes in turn, newest first, the command's appends included (none is taken in with
/// the server's own write).
#[tokio::test]
async fn without_a_stage_server_writes_between_a_commands_appends_keep_every_step_undoable() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("log"), "start\n").unwrap();
    let client = unstaged(&ws).await;
    let started = client
        .term(
            "run_command",
            json!({"command": "for i in $(seq 60); do echo $i >> log; sleep 0.02; done", "background": true, "wait_ms": 0}),
        )
        .await;
    assert!(!started.is_error, "{}", started.text);
    let id = started.structured["session_id"].as_str().unwrap().to_string();
    for n in 0..6 {
        let made =
            client.file(json!({"operation": "create_file", "path": format!("made{n}.txt"), "content": "x\n"})).await;
        assert!(!made.is_error, "{}", made.text);
        tokio::time::sleep(std::time::Duration::from_millis(60)).await;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while client.term("read_output", json!({"session_id": id, "wait_ms": 200})).await.structured["status"] == "running"
        && std::time::Instant::now() < deadline
    {}
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let mut steps = 0;
    loop {
        let undone = client.file(undo()).await;
        if undone.is_error {
            assert!(undone.text.contains("nothing to undo"), "step {steps}: {}", undone.text);
            break;
        }
        steps += 1;
        assert!(steps < 100, "{}", undone.text);
    }
    assert_eq!(std::fs::read_to_string(ws.root.join("log")).unwrap(), "start\n");
    assert!((0..6).all(|n| !ws.root.join(format!("made{n}.txt")).exists()));
    client.close().await;
}

/// `undo_unstaged = false`: no copy is made and what such commands write is not recorded.
#[tokio::test]
async fn undo_unstaged_false_records_nothing_and_keeps_no_copy() {
    let ws = Workspace::new();
    let config = ws.outside.join("off.toml");
    let state = ws.outside.join("state");
    std::fs::write(
        &config,
        format!("stage_writes = false\nundo_unstaged = false\nstate_dir = \"{}\"\n", state.display()),
    )
    .unwrap();
    let client = Client::start(&ws, &["--config", config.to_str().unwrap()]).await;
    assert!(!client.run("echo made > made.txt").await.is_error);
    let changes = client.file(json!({"operation": "changes"})).await;
    assert!(!changes.text.contains("made.txt"), "{}", changes.text);
    assert!(!state.join("shadow").exists(), "no copy of the roots");
    client.close().await;
}

/// A command started while a background one runs: what the background one wrote before is
/// recorded as its own first, not taken in as nobody's; every write is undone in the end.
#[tokio::test]
async fn without_a_stage_a_command_started_beside_a_running_one_leaves_its_writes_recorded() {
    let ws = Workspace::new();
    let client = unstaged(&ws).await;
    let started = client
        .term("run_command", json!({"command": "echo x > x; sleep 1; echo y > y", "background": true, "wait_ms": 0}))
        .await;
    assert!(!started.is_error, "{}", started.text);
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    assert!(!client.run("echo f > f").await.is_error);
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let changes = client.file(json!({"operation": "changes"})).await;
    for name in ["`x`", "`y`", "`f`"] {
        assert!(changes.text.contains(name), "{name}: {}", changes.text);
    }
    while !client.file(undo()).await.is_error {}
    assert!(["x", "y", "f"].iter().all(|name| !ws.root.join(name).exists()));
    client.close().await;
}
