//! The Seatbelt backend, for real, on macOS (`cargo test` on a Mac; CI runs on Linux, where
//! this file is not compiled and the profile is covered by the generator's snapshot tests).
//! Each protection is tried the way an agent would get around it: writes outside the roots,
//! through a symlink, protected paths at the root and deeper, moving a protected directory
//! away, a hidden path read, the shared temp dir, a new network connection, one that does not
//! go through the proxy.

use super::common::{Client, Workspace};

fn git_init(ws: &Workspace) {
    let status = std::process::Command::new("git").args(["init", "-q"]).current_dir(&ws.root).status().unwrap();
    assert!(status.success());
}

fn denied(reply: &super::common::Reply) -> bool {
    reply.is_error && reply.joined("stderr").contains("Operation not permitted")
}

#[tokio::test]
async fn commands_write_beneath_the_roots_only() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let inside =
        client.run("echo made > made.txt && mkdir -p new/dir && mv made.txt new/dir/ && cat new/dir/made.txt").await;
    assert!(!inside.is_error, "{}", inside.text);
    let target = ws.outside.join("escaped.txt");
    let outside = client.run(&format!("echo x > '{}'", target.display())).await;
    assert!(denied(&outside), "{}", outside.text);
    assert!(!target.exists());
    let through_link = client.run("echo x > link_outside_dir/escaped.txt").await;
    assert!(through_link.is_error, "{}", through_link.text);
    assert!(!target.exists(), "a symlink inside the root cannot be written through");
    let reads = client.run(&format!("cat '{}'", ws.outside.join("secret.txt").display())).await;
    assert!(!reads.is_error, "reading outside is allowed: {}", reads.text);
    client.close().await;
}

#[tokio::test]
async fn the_temp_dir_is_the_sessions_own() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let own = client.run("f=$(mktemp) && echo ok > \"$f\" && cat \"$f\" && echo \"$TMPDIR\"").await;
    assert!(!own.is_error, "{}", own.text);
    let tmpdir = own.joined("stdout").lines().nth(1).unwrap_or_default().to_string();
    assert!(tmpdir.contains("/toolbelt-mcp-") && tmpdir.ends_with("/tmp"), "TMPDIR is the session's: {tmpdir}");
    let marker = format!("/private/tmp/toolbelt-macos-test-{}", std::process::id());
    let shared = client.run(&format!("echo x > {marker}")).await;
    assert!(denied(&shared), "the shared /tmp is not writable: {}", shared.text);
    assert!(!std::path::Path::new(&marker).exists());
    client.close().await;
}

#[tokio::test]
async fn protected_paths_stay_read_only_and_in_place() {
    let ws = Workspace::new();
    git_init(&ws);
    std::fs::create_dir_all(ws.root.join("deep/er")).unwrap();
    let client = Client::start(&ws, &[]).await;
    for attempt in [
        "echo '[core] fsmonitor = touch /tmp/pwned' >> .git/config",
        "echo 'touch /tmp/pwned' > .git/hooks/pre-commit",
        "echo x > .git/commondir",
        "echo 'touch /tmp/pwned' > .bashrc",
        "echo 'touch /tmp/pwned' > deep/er/.zshrc",
        "mkdir -p sub/.vscode && echo '{}' > sub/.vscode/settings.json",
        "echo x > .envrc",
    ] {
        let reply = client.run(attempt).await;
        assert!(reply.is_error, "`{attempt}` was allowed: {}", reply.text);
    }
    for moved in ["mv .git .git-moved", "mv .git/hooks .git/hooks-moved", "rm -rf .git"] {
        let reply = client.run(moved).await;
        assert!(reply.is_error, "`{moved}` was allowed: {}", reply.text);
        assert!(ws.root.join(".git/hooks").is_dir() && ws.root.join(".git/config").is_file());
    }
    let config = std::fs::read_to_string(ws.root.join(".git/config")).unwrap();
    assert!(!config.contains("pwned"), "{config}");
    let commit =
        client.run("git add -A && git -c user.name=t -c user.email=t@t commit -qm x && git log --oneline").await;
    assert!(!commit.is_error, "git itself works: {}", commit.text);
    client.close().await;
}

#[tokio::test]
async fn a_hidden_path_cannot_be_read() {
    let ws = Workspace::new();
    let secret = ws.outside.join("secret.txt");
    let hidden = ws.outside.display().to_string();
    let client = Client::start(&ws, &["--deny-read", &hidden]).await;
    let read = client.run(&format!("cat '{}'", secret.display())).await;
    assert!(read.is_error && !read.text.contains("NEEDLE_OUTSIDE"), "{}", read.text);
    client.close().await;
}

#[tokio::test]
async fn network_deny_keeps_commands_to_loopback() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &["--network", "deny"]).await;
    // A listener and a client on loopback work; a connection to another host is refused by
    // the profile before any packet leaves (no network needed to tell).
    let local = client
        .run("python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); c=socket.create_connection(s.getsockname()); print('local ok')\"")
        .await;
    assert_eq!(local.joined("stdout"), "local ok\n", "{}", local.text);
    let remote =
        client.run("python3 -c \"import socket; socket.create_connection(('192.0.2.1', 9), timeout=2)\"").await;
    assert!(remote.is_error, "{}", remote.text);
    assert!(remote.joined("stderr").contains("Operation not permitted"), "{}", remote.text);
    let allowed = Client::start(&ws, &["--network", "allow"]).await;
    let socket = allowed.run("python3 -c \"import socket; socket.socket(); print('socket ok')\"").await;
    assert_eq!(socket.joined("stdout"), "socket ok\n", "{}", socket.text);
    allowed.close().await;
    client.close().await;
}

#[tokio::test]
async fn network_allow_reaches_other_hosts_only_through_the_proxy() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &["--network", "allow"]).await;
    // A connection of its own to another host is refused by the profile.
    let direct =
        client.run("python3 -c \"import socket; socket.create_connection(('192.0.2.1', 9), timeout=2)\"").await;
    assert!(direct.is_error && direct.joined("stderr").contains("Operation not permitted"), "{}", direct.text);
    // The proxy answers on the port the variables name, with the password they carry: a
    // loopback destination is refused by its rules (403), and without the password by the
    // proxy itself (407).
    let through = client.run("curl -s -o /dev/null -w '%{http_code}' -x \"$HTTP_PROXY\" http://127.0.0.1:9/").await;
    assert_eq!(through.joined("stdout"), "403", "{}", through.text);
    assert!(through.text.contains("127.0.0.1:9"), "the result names what was refused: {}", through.text);
    let bare = client
        .run("curl -s -o /dev/null -w '%{http_code}' -x \"http://127.0.0.1:${HTTP_PROXY##*:}\" http://127.0.0.1:9/")
        .await;
    assert_eq!(bare.joined("stdout"), "407", "{}", bare.text);
    client.close().await;
}
