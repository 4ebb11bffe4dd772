//! What commands write is listed by `changes` and reverted by `undo`, one step per command,
//! byte for byte, with the file operations' rules (a path changed again since makes `undo`
//! refuse); git-ignored paths (build output) are left out and the result says so.

use std::os::unix::fs::PermissionsExt;

use serde_json::json;

use super::common::{Client, Workspace};

fn undo(force: bool) -> serde_json::Value {
    json!({"operation": "undo", "force": force})
}

#[tokio::test]
async fn a_commands_edits_are_listed_and_undone() {
    let ws = Workspace::new();
    let lib = ws.root.join("src/lib.rs");
    let before = std::fs::read(&lib).unwrap();
    let client = Client::start(&ws, &[]).await;

    // `sed -i` on one file: listed with its diff, restored byte for byte.
    let reply = client.run("sed -i 's/fn /fn renamed_/' src/lib.rs").await;
    assert!(!reply.is_error, "{}", reply.text);
    let changes = client.file(json!({"operation": "changes"})).await;
    assert!(changes.text.contains("src/lib.rs") && changes.text.contains("+"), "{}", changes.text);
    assert!(changes.text.contains("renamed_"), "{}", changes.text);
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert!(undone.text.contains("run_command"), "{}", undone.text);
    assert_eq!(std::fs::read(&lib).unwrap(), before);

    // `rm -r` of a tree holding a symlink and a binary file.
    std::fs::create_dir_all(ws.root.join("tree/sub")).unwrap();
    let binary: Vec<u8> = (0..=255u8).cycle().take(70_000).collect();
    std::fs::write(ws.root.join("tree/sub/blob.bin"), &binary).unwrap();
    std::fs::set_permissions(ws.root.join("tree/sub/blob.bin"), std::fs::Permissions::from_mode(0o640)).unwrap();
    std::fs::write(ws.root.join("tree/a.txt"), "a\n").unwrap();
    std::os::unix::fs::symlink("a.txt", ws.root.join("tree/link")).unwrap();
    assert!(!client.run("rm -r tree").await.is_error);
    assert!(!ws.root.join("tree").exists());
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert_eq!(std::fs::read(ws.root.join("tree/sub/blob.bin")).unwrap(), binary);
    let mode = std::fs::metadata(ws.root.join("tree/sub/blob.bin")).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    assert_eq!(std::fs::read_link(ws.root.join("tree/link")).unwrap(), std::path::Path::new("a.txt"));

    // `mv` of a directory, and a new 20 MB binary from a script: one step, both undone.
    let reply = client.run("mv tree moved && python3 -c \"open('big.bin','wb').write(bytes(range(256))*81920)\"").await;
    assert!(!reply.is_error, "{}", reply.text);
    assert!(ws.root.join("moved/sub/blob.bin").exists() && ws.root.join("big.bin").exists());
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert!(!ws.root.join("moved").exists() && !ws.root.join("big.bin").exists(), "{}", undone.text);
    assert_eq!(std::fs::read(ws.root.join("tree/sub/blob.bin")).unwrap(), binary);

    // Changed again by hand after the command: undo refuses, reverting nothing.
    assert!(!client.run("echo one >> notes.txt").await.is_error);
    std::fs::write(ws.root.join("notes.txt"), "by hand\n").unwrap();
    let refused = client.file(undo(false)).await;
    assert!(refused.is_error && refused.text.contains("changed by someone else"), "{}", refused.text);
    assert_eq!(std::fs::read_to_string(ws.root.join("notes.txt")).unwrap(), "by hand\n");
    client.close().await;
}

#[tokio::test]
async fn build_output_is_left_out_and_said() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join(".gitignore"), "target/\n").unwrap();
    let client = Client::start(&ws, &[]).await;
    let reply = client.run("mkdir -p target/debug && echo x > target/debug/out && echo kept > kept.txt").await;
    assert!(reply.text.contains("git-ignored paths"), "{}", reply.text);
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert!(!ws.root.join("kept.txt").exists());
    assert!(ws.root.join("target/debug/out").exists(), "build output is not undone");
    client.close().await;

    // `undo_ignored = true` records it too.
    let config = ws.outside.join("undo.toml");
    std::fs::write(&config, "undo_ignored = true\n").unwrap();
    let client = Client::start(&ws, &["--config", config.to_str().unwrap()]).await;
    let reply = client.run("mkdir -p target/release && echo y > target/release/out").await;
    assert!(!reply.text.contains("git-ignored"), "{}", reply.text);
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error && !ws.root.join("target/release").exists(), "{}", undone.text);
    client.close().await;
}

/// A background command's and a PTY session's writes are recorded at their folds (each call
/// folds what running commands wrote, and a command's end does): listed and undone too.
#[tokio::test]
async fn background_commands_and_sessions_are_recorded_at_their_folds() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let started = client
        .term("run_command", json!({"command": "echo made > bg.txt; sleep 0.3", "background": true, "wait_ms": 0}))
        .await;
    assert!(!started.is_error, "{}", started.text);
    let id = started.structured["session_id"].as_str().unwrap().to_string();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while client.term("read_output", json!({"session_id": id, "wait_ms": 200})).await.structured["status"] == "running"
        && std::time::Instant::now() < deadline
    {}
    // The next call takes the record of the command's last fold.
    let changes = client.file(json!({"operation": "changes"})).await;
    assert!(changes.text.contains("bg.txt"), "{}", changes.text);
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error && !ws.root.join("bg.txt").exists(), "{}", undone.text);

    let shell = client.term("start_session", json!({})).await;
    let sh = shell.structured["session_id"].as_str().unwrap().to_string();
    let typed = client.term("send_input", json!({"session_id": sh, "input": "echo typed > pty.txt; echo done"})).await;
    assert!(typed.joined("output").contains("done"), "{}", typed.text);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut listed = String::new();
    while std::time::Instant::now() < deadline {
        // Each call folds the running session's writes (at most every 250 ms).
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        listed = client.file(json!({"operation": "changes"})).await.text;
        if listed.contains("pty.txt") {
            break;
        }
    }
    assert!(listed.contains("pty.txt"), "{listed}");
    assert!(ws.root.join("pty.txt").exists());
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error && !ws.root.join("pty.txt").exists(), "{}", undone.text);
    client.close().await;
}

/// A formatter rewriting 200 files, `git checkout -- .` undoing file-operation edits, and a
/// command ended by its time limit: each one step, undone byte for byte.
#[tokio::test]
async fn many_files_a_checkout_and_a_timeout_are_one_step_each() {
    let ws = Workspace::new();
    let dir = ws.root.join("many");
    std::fs::create_dir_all(&dir).unwrap();
    for n in 0..200 {
        std::fs::write(dir.join(format!("f{n:03}.py")), format!("x   =  {n}\n")).unwrap();
    }
    let git = |args: &[&str]| {
        let ok = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
            .args(args)
            .current_dir(&ws.root)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&["commit", "-qm", "init"]);
    let client = Client::start(&ws, &[]).await;

    let reply = client.run("for f in many/*.py; do sed -i 's/   =  / = /' \"$f\"; done").await;
    assert!(!reply.is_error, "{}", reply.text);
    assert_eq!(std::fs::read_to_string(dir.join("f007.py")).unwrap(), "x = 7\n");
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert_eq!(undone.structured["undone"].as_array().map(Vec::len), Some(200), "{}", undone.text);
    for n in [0, 99, 199] {
        assert_eq!(std::fs::read_to_string(dir.join(format!("f{n:03}.py"))).unwrap(), format!("x   =  {n}\n"));
    }

    // File-operation edits, thrown away with `git checkout -- .`, then that undone: the
    // edits are back.
    let edited = client
        .file(json!({"operation": "replace_string", "path": "many/f001.py", "old_string": "1", "new_string": "one"}))
        .await;
    assert!(!edited.is_error, "{}", edited.text);
    assert!(!client.run("git checkout -- .").await.is_error);
    assert_eq!(std::fs::read_to_string(dir.join("f001.py")).unwrap(), "x   =  1\n");
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert_eq!(std::fs::read_to_string(dir.join("f001.py")).unwrap(), "x   =  one\n");

    // Ended by its time limit: what it wrote before is recorded all the same.
    let timed =
        client.term("run_command", json!({"command": "echo partial > cut.txt; sleep 30", "timeout_ms": 500})).await;
    assert!(timed.text.contains("timed out"), "{}", timed.text);
    assert!(ws.root.join("cut.txt").exists());
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error && !ws.root.join("cut.txt").exists(), "{}", undone.text);
    client.close().await;
}

/// What `changes` lists, once it lists `path` (each call folds running commands' writes, at
/// most every 250 ms); fails the test after 15 s.
async fn changes_listing(client: &Client, path: &str) -> super::common::Reply {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        let changes = client.file(json!({"operation": "changes"})).await;
        if changes.text.contains(path) || std::time::Instant::now() > deadline {
            assert!(changes.text.contains(path), "`{path}` is not listed: {}", changes.text);
            return changes;
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    }
}

/// Runs a command that writes three files, then sleeps, and `SIGKILL`s its server meanwhile:
/// what it wrote is left staged.
async fn killed_mid_command(ws: &Workspace) {
    std::fs::write(ws.root.join("keep.txt"), "old\n").unwrap();
    std::fs::write(ws.root.join("gone.txt"), "still here\n").unwrap();
    let client = Client::start(ws, &[]).await;
    let pid = client.pid.unwrap();
    let command = "printf 'new\\n' > keep.txt; rm gone.txt; echo made > made.txt; sleep 60";
    tokio::select! {
        reply = client.term("run_command", json!({"command": command, "timeout_ms": 120_000})) => {
            panic!("the command ended before its server was killed: {}", reply.text)
        }
        () = async {
            tokio::time::sleep(std::time::Duration::from_secs(3)).await;
            let pid = rustix::process::Pid::from_raw(pid as i32).unwrap();
            rustix::process::kill_process(pid, rustix::process::Signal::KILL).unwrap();
        } => {}
    }
    assert!(super::common::wait_gone(pid, 10).await);
    drop(client);
    // Staged, not applied: the server died before the fold.
    assert_eq!(std::fs::read_to_string(ws.root.join("keep.txt")).unwrap(), "old\n");
}

/// The next start with other roots folds it all the same (it names its own roots), but does
/// not offer it to `undo`, whose paths stay within the roots: its first call says so.
#[tokio::test]
async fn a_killed_servers_command_outside_the_next_ones_roots_is_said_not_offered() {
    let ws = Workspace::new();
    killed_mid_command(&ws).await;
    let other = ws.outside.join("other-root");
    std::fs::create_dir_all(&other).unwrap();
    let args = ["serve".to_string(), "--root".into(), other.display().to_string()];
    let next = Client::spawn_with_env(&args, &ws.config_home, None, &ws.store_env()).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut said = String::new();
    while std::time::Instant::now() < deadline && !said.contains("outside this server's roots") {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        said = next.file(json!({"operation": "changes"})).await.text;
    }
    assert!(said.contains("outside this server's roots") && said.contains("printf"), "{said}");
    assert_eq!(std::fs::read_to_string(ws.root.join("keep.txt")).unwrap(), "new\n");
    next.close().await;
}

/// Starts `command` in the background; its session's id.
async fn background(client: &Client, command: &str) -> String {
    let started = client.term("run_command", json!({"command": command, "background": true, "wait_ms": 300})).await;
    assert!(!started.is_error, "{}", started.text);
    started.structured["session_id"].as_str().unwrap().to_string()
}

/// Undoes step after step until nothing is left; each must succeed.
async fn undo_all(client: &Client) {
    for _ in 0..500 {
        let undone = client.file(undo(false)).await;
        if undone.is_error {
            assert!(undone.text.contains("nothing to undo"), "{}", undone.text);
            return;
        }
    }
    panic!("undo never ran out of steps");
}

/// A server `SIGKILL`ed mid-command: the next start folds what the command wrote (judged like
/// any fold), and its first session lists it, by the command's line, and undoes it.
#[tokio::test]
async fn a_killed_servers_command_is_folded_then_listed_and_undone_by_the_next() {
    let ws = Workspace::new();
    killed_mid_command(&ws).await;

    let next = Client::start(&ws, &[]).await;
    let changes = changes_listing(&next, "keep.txt").await;
    assert!(changes.text.contains("made.txt") && changes.text.contains("gone.txt"), "{}", changes.text);
    assert!(changes.text.contains("by `printf"), "the command's line is not shown: {}", changes.text);
    assert_eq!(std::fs::read_to_string(ws.root.join("keep.txt")).unwrap(), "new\n");
    let undone = next.file(undo(false)).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert_eq!(std::fs::read_to_string(ws.root.join("keep.txt")).unwrap(), "old\n");
    assert_eq!(std::fs::read_to_string(ws.root.join("gone.txt")).unwrap(), "still here\n");
    assert!(!ws.root.join("made.txt").exists(), "{}", undone.text);
    next.close().await;
}

/// A dev-server-like background command writing every 100 ms while a foreground command
/// edits: each is listed by its own line, the foreground one's diff is right, and every step
/// undoes (newest first) back to the state before either ran.
#[tokio::test]
async fn a_dev_server_writing_beside_a_foreground_command_is_recorded_and_undone() {
    let ws = Workspace::new();
    let lib = ws.root.join("src/lib.rs");
    let before = std::fs::read(&lib).unwrap();
    let client = Client::start(&ws, &[]).await;
    let server = "i=0; while true; do i=$((i+1)); echo \"served $i\" > served.txt; sleep 0.1; done";
    let id = background(&client, server).await;
    let edited = client.run("sleep 0.5; sed -i 's/fn /fn edited_/' src/lib.rs; sleep 0.5").await;
    assert!(!edited.is_error, "{}", edited.text);
    let changes = changes_listing(&client, "served.txt").await;
    assert!(changes.text.contains("by `sleep 0.5; sed -i"), "{}", changes.text);
    assert!(changes.text.contains("by `i=0; while true"), "{}", changes.text);
    assert!(changes.text.contains("+pub fn edited_parse"), "{}", changes.text);
    // Others see the background command's writes at each fold (one may catch the file
    // between the shell's truncation and its write: the next fold brings the write).
    let mut seen = std::fs::read_to_string(ws.root.join("served.txt")).unwrap();
    for _ in 0..10 {
        if !seen.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        client.file(json!({"operation": "changes"})).await;
        seen = std::fs::read_to_string(ws.root.join("served.txt")).unwrap();
    }
    assert!(seen.starts_with("served "), "{seen}");
    let killed = client.term("kill_session", json!({"session_id": id})).await;
    assert!(!killed.is_error, "{}", killed.text);
    undo_all(&client).await;
    assert_eq!(std::fs::read(&lib).unwrap(), before);
    assert!(!ws.root.join("served.txt").exists());
    client.close().await;
}

/// A PTY session editing a file with `vi` (written in place, `backupcopy=yes`): listed by the
/// session, with the diff, and undone byte for byte.
#[tokio::test]
async fn a_vi_edit_in_a_terminal_session_is_recorded_and_undone() {
    let ws = Workspace::new();
    let doc = ws.root.join("doc.txt");
    std::fs::write(&doc, "old line\nsecond\n").unwrap();
    let client = Client::start(&ws, &[]).await;
    let shell = client.term("start_session", json!({})).await;
    let sh = shell.structured["session_id"].as_str().unwrap().to_string();
    let input = |text: &str| json!({"session_id": sh, "input": text, "wait_ms": 800});
    client.term("send_input", input("vi -u NONE -n -c 'set backupcopy=yes' doc.txt")).await;
    client.term("send_input", input(":%s/old/new/")).await;
    client.term("send_input", input(":wq")).await;
    let done = client.term("send_input", input("echo vi-$((40+2))")).await;
    // On a loaded machine vi may take longer than a wait to leave: read on until the shell says.
    let mut seen = done.joined("output");
    for _ in 0..20 {
        if seen.contains("vi-42") {
            break;
        }
        seen.push_str(&client.term("read_output", json!({"session_id": sh, "wait_ms": 500})).await.joined("output"));
    }
    assert!(seen.contains("vi-42"), "{seen}");
    let changes = changes_listing(&client, "doc.txt").await;
    assert!(changes.text.contains("+new line") && changes.text.contains("-old line"), "{}", changes.text);
    assert!(changes.text.contains("(a terminal session)"), "{}", changes.text);
    assert_eq!(std::fs::read_to_string(&doc).unwrap(), "new line\nsecond\n");
    let undone = client.file(undo(false)).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert_eq!(std::fs::read_to_string(&doc).unwrap(), "old line\nsecond\n");
    client.close().await;
}

/// A terminal session that wrote files and then waits: what others write at those paths after
/// a fold took the session's copies stands (the agent's edit, the user's), at every later fold,
/// live or the last; what the session writes or removes later is still applied.
#[tokio::test]
async fn a_running_commands_old_write_never_overwrites_a_later_one() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("gone.txt"), "old\n").unwrap();
    let client = Client::start(&ws, &[]).await;
    let shell = client.term("start_session", json!({})).await;
    let sh = shell.structured["session_id"].as_str().unwrap().to_string();
    let type_in = async |line: &str, marker: &str| {
        let mut seen =
            client.term("send_input", json!({"session_id": sh, "input": line, "wait_ms": 500})).await.joined("output");
        for _ in 0..20 {
            if seen.contains(marker) {
                return;
            }
            seen.push_str(
                &client.term("read_output", json!({"session_id": sh, "wait_ms": 500})).await.joined("output"),
            );
        }
        panic!("`{marker}` never came: {seen}");
    };
    type_in(
        "echo from-command > shared.txt; rm gone.txt; mkdir fresh; echo f > fresh/f.txt; echo step-$((0+1))",
        "step-1",
    )
    .await;
    changes_listing(&client, "fresh/f.txt").await;
    assert_eq!(std::fs::read_to_string(ws.root.join("shared.txt")).unwrap(), "from-command\n");
    assert!(!ws.root.join("gone.txt").exists());
    // Others write the same paths after the fold.
    let content =
        json!({"operation": "create_file", "path": "shared.txt", "content": "from-agent\n", "overwrite": true});
    let wrote = client.file(content).await;
    assert!(!wrote.is_error, "{}", wrote.text);
    std::fs::write(ws.root.join("gone.txt"), "made again by hand\n").unwrap();
    std::fs::write(ws.root.join("fresh/by-hand.txt"), "mine\n").unwrap();
    std::fs::set_permissions(ws.root.join("fresh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    // The session goes on: it removes a file it made (the overlay leaves no whiteout in a
    // directory it made), writes another, and touches one (no change of content).
    type_in("rm fresh/f.txt; echo g > fresh/g.txt; touch shared.txt; echo step-$((1+1))", "step-2").await;
    let expect = || {
        let mode = std::fs::metadata(ws.root.join("fresh")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750, "the user's mode of a directory the session made stands");
        assert_eq!(std::fs::read_to_string(ws.root.join("shared.txt")).unwrap(), "from-agent\n");
        assert_eq!(std::fs::read_to_string(ws.root.join("gone.txt")).unwrap(), "made again by hand\n");
        assert_eq!(std::fs::read_to_string(ws.root.join("fresh/by-hand.txt")).unwrap(), "mine\n");
        assert!(!ws.root.join("fresh/f.txt").exists());
    };
    changes_listing(&client, "fresh/g.txt").await;
    for _ in 0..3 {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        client.file(json!({"operation": "changes"})).await;
        expect();
    }
    let killed = client.term("kill_session", json!({"session_id": sh})).await;
    assert!(!killed.is_error, "{}", killed.text);
    client.file(json!({"operation": "changes"})).await;
    expect();
    assert_eq!(std::fs::read_to_string(ws.root.join("fresh/g.txt")).unwrap(), "g\n");
    client.close().await;
}

/// A server `SIGKILL`ed while a background command it folded runs: the next start's fold of
/// that command leaves what others wrote after the live fold.
#[tokio::test]
async fn a_killed_servers_running_command_does_not_overwrite_a_later_write() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    background(&client, "echo from-command > shared.txt; sleep 60").await;
    changes_listing(&client, "shared.txt").await;
    std::fs::write(ws.root.join("shared.txt"), "by hand\n").unwrap();
    let pid = client.pid.unwrap();
    rustix::process::kill_process(rustix::process::Pid::from_raw(pid as i32).unwrap(), rustix::process::Signal::KILL)
        .unwrap();
    assert!(super::common::wait_gone(pid, 10).await);
    drop(client);
    let next = Client::start(&ws, &[]).await;
    next.file(json!({"operation": "changes"})).await;
    assert_eq!(std::fs::read_to_string(ws.root.join("shared.txt")).unwrap(), "by hand\n");
    next.close().await;
}

/// A command that only copies files up (`touch`, a `sed -i` that matches nothing) and goes on
/// running: the user's later edits of those files stand at every fold, live and final, since
/// the command's copies are older than them.
#[tokio::test]
async fn a_copy_the_command_left_never_overwrites_a_later_edit() {
    let ws = Workspace::new();
    for name in ["p.txt", "q.txt"] {
        std::fs::write(ws.root.join(name), "orig\n").unwrap();
    }
    let client = Client::start(&ws, &[]).await;
    let id = background(&client, "touch p.txt; sed -i 's/zzz/y/' q.txt; echo marker > m.txt; sleep 30").await;
    changes_listing(&client, "m.txt").await;
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    for name in ["p.txt", "q.txt"] {
        std::fs::write(ws.root.join(name), "the user's edit\n").unwrap();
    }
    for _ in 0..3 {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        client.file(json!({"operation": "changes"})).await;
    }
    let killed = client.term("kill_session", json!({"session_id": id})).await;
    assert!(!killed.is_error, "{}", killed.text);
    client.file(json!({"operation": "changes"})).await;
    for name in ["p.txt", "q.txt"] {
        assert_eq!(std::fs::read_to_string(ws.root.join(name)).unwrap(), "the user's edit\n", "{name}");
    }
    client.close().await;
}
