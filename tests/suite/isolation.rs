//! Sandbox v2, one test per way out the review found, each tried as it was found and shown
//! closed, with normal work checked alongside: the network under `deny` (MPTCP, UDP, raw,
//! packet and vsock sockets; loopback inside still works), processes outliving the command or
//! the server, the server's environment, device nodes and capabilities, other sessions'
//! output, `rm -fr /`, secrets in the home directory, and resource limits. They run as root
//! and (in CI's second pass) as an unprivileged user.

use std::time::Duration;

use serde_json::json;

use super::common::{Client, JOB_PID, SELF_PID, Workspace, gone, host_pid, wait_gone};

/// Whether this process is root (some layers only matter, or only bind, for root).
fn root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Writes `script` into the root and runs it with python3; its stdout lines.
async fn python(client: &Client, ws: &Workspace, name: &str, script: &str) -> Vec<String> {
    std::fs::write(ws.root.join(name), script).unwrap();
    let reply = client.run(&format!("python3 {name}")).await;
    assert!(!reply.is_error, "{}", reply.text);
    reply.joined("stdout").lines().map(str::to_string).collect()
}

/// Every socket kind a command might use to leave, tried under `network = "deny"`.
const SOCKETS: &str = r#"
import errno, socket, sys
port = int(sys.argv[1]) if len(sys.argv) > 1 else int(open("port").read())
def attempt(name, make, action):
    try:
        s = make()
    except OSError as e:
        print(f"{name}: open {errno.errorcode.get(e.errno, e.errno)}"); return
    try:
        action(s); print(f"{name}: ok")
    except OSError as e:
        print(f"{name}: {errno.errorcode.get(e.errno, e.errno)}")
    finally:
        s.close()
attempt("tcp", lambda: socket.socket(), lambda s: s.connect(("127.0.0.1", port)))
attempt("mptcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262), lambda s: s.connect(("127.0.0.1", port)))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM), lambda s: s.sendto(b"x", ("192.0.2.1", 53)))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW), lambda s: None)
attempt("vsock", lambda: socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM), lambda s: None)
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen()
client = socket.create_connection(server.getsockname()); peer, _ = server.accept()
client.sendall(b"ping"); print("loopback:", peer.recv(4).decode())
print("interfaces:", ",".join(sorted(l.split(":")[0].strip() for l in open("/proc/net/dev").readlines()[2:])))
"#;

#[tokio::test]
async fn network_deny_holds_for_every_socket_kind_and_keeps_loopback() {
    let ws = Workspace::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    std::fs::write(ws.root.join("port"), listener.local_addr().unwrap().port().to_string()).unwrap();
    let client = Client::start(&ws, &["--network", "deny"]).await;
    let lines = python(&client, &ws, "sockets.py", SOCKETS).await;
    let expect = [
        "tcp: ECONNREFUSED",
        "mptcp: ECONNREFUSED",
        "udp: ENETUNREACH",
        "packet: open EPERM",
        "vsock: open EPERM",
        "loopback: ping",
        "interfaces: lo",
    ];
    for (line, want) in lines.iter().zip(expect) {
        // MPTCP may be compiled out of the kernel: then it cannot be opened at all.
        assert!(
            line == want || (want.starts_with("mptcp") && line.starts_with("mptcp: open")),
            "{line} ≠ {want}: {lines:?}"
        );
    }
    assert_eq!(lines.len(), expect.len(), "{lines:?}");
    assert!(listener.accept().is_err(), "nothing reached the host's loopback server");
    client.close().await;

    // The default (`allow`): its own loopback too, the rest only through the proxy.
    let proxied = Client::start(&ws, &[]).await;
    let lines = python(&proxied, &ws, "sockets.py", SOCKETS).await;
    assert_eq!(lines[0], "tcp: ECONNREFUSED", "{lines:?}");
    assert_eq!(lines[3..5], ["packet: open EPERM", "vsock: open EPERM"], "{lines:?}");
    proxied.close().await;

    // `host`: the machine's network is reachable, and still no packet or vsock sockets.
    let open = Client::start(&ws, &["--network", "host"]).await;
    let lines = python(&open, &ws, "sockets.py", SOCKETS).await;
    assert_eq!(lines[0], "tcp: ok", "{lines:?}");
    assert_eq!(lines[3..5], ["packet: open EPERM", "vsock: open EPERM"], "{lines:?}");
    open.close().await;
}

#[tokio::test]
async fn nothing_a_command_starts_outlives_it_or_the_server() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    // Left behind by a foreground command in every way there is: each would leave a marker.
    let escapes = [
        "(sleep 1; touch m-bg) &",
        "setsid sh -c 'sleep 1; touch m-setsid' &",
        "python3 -c 'import os,time; os.setpgid(0,0); time.sleep(1); open(\"m-setpgid\",\"w\")' &",
        "nohup sh -c 'sleep 1; touch m-nohup' >/dev/null 2>&1 &",
        "( (sleep 1; touch m-daemon) & ) &",
    ];
    let reply = client.run(&format!("{} echo left", escapes.join(" "))).await;
    assert!(!reply.is_error && reply.text.contains("left"), "{}", reply.text);
    // A background session's own setsid child, ended with the session.
    let bg = client
        .term("run_command", json!({"command": format!("setsid sleep 300 & echo {JOB_PID}; wait"), "background": true}))
        .await;
    let escaped = host_pid(bg.joined("stdout").as_str());
    let id = bg.structured["session_id"].as_str().unwrap().to_string();
    assert!(!client.term("kill_session", json!({"session_id": id})).await.is_error);
    assert!(wait_gone(escaped, 5).await, "a setsid child outlived its session");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for marker in ["m-bg", "m-setsid", "m-setpgid", "m-nohup", "m-daemon"] {
        assert!(!ws.root.join(marker).exists(), "{marker}: a process outlived its command");
    }
    client.close().await;

    // A PTY's background job and a daemonised process, after the server is SIGKILLed.
    let client = Client::start(&ws, &[]).await;
    let pty = client.term("start_session", json!({})).await;
    let id = pty.structured["session_id"].as_str().unwrap().to_string();
    let input = format!("sleep 300 & echo job={JOB_PID}");
    let typed = client.term("send_input", json!({"session_id": id, "input": input, "wait_ms": 500})).await;
    let out = typed.joined("output");
    let job = host_pid(out.split("job=").last().unwrap().split_whitespace().next().unwrap());
    let daemon = client
        .term("run_command", json!({"command": format!("setsid nohup sleep 300 >/dev/null 2>&1 & echo {JOB_PID}; sleep 300"), "background": true}))
        .await;
    let daemon = host_pid(daemon.joined("stdout").as_str());
    assert!(!gone(job) && !gone(daemon));
    let server = rustix::process::Pid::from_raw(client.pid.unwrap() as i32).unwrap();
    rustix::process::kill_process(server, rustix::process::Signal::KILL).unwrap();
    for pid in [job, daemon] {
        assert!(wait_gone(pid, 5).await, "process {pid} outlived the SIGKILLed server");
    }
}

#[tokio::test]
async fn the_servers_environment_and_processes_are_out_of_reach() {
    let ws = Workspace::new();
    let secret = "sk-fake-0123456789";
    let client = Client::start_with_env(&ws, &[], &[("FAKE_API_KEY", secret), ("AWS_SECRET_ACCESS_KEY", secret)]).await;
    let probe =
        "cat /proc/$PPID/environ /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sk-fake; ps -e -o pid= | wc -l";
    let reply = client.run(probe).await;
    let lines: Vec<String> = reply.joined("stdout").lines().map(str::to_string).collect();
    assert_eq!(lines[0], "0", "a command read the server's secrets: {}", reply.text);
    assert!(lines[1].trim().parse::<u32>().unwrap() <= 6, "the command sees only its own namespace: {}", reply.text);
    let server_pid = client.pid.unwrap();
    let reach = client.run(&format!("kill -0 {server_pid} || cat /proc/{server_pid}/environ")).await;
    assert!(reach.is_error && !reach.text.contains(secret), "{}", reach.text);
    // And from a PTY session.
    let pty = client.term("start_session", json!({})).await;
    let id = pty.structured["session_id"].as_str().unwrap().to_string();
    let typed = client
        .term("send_input", json!({"session_id": id, "input": "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sk-fake", "wait_ms": 500}))
        .await;
    // The count comes when the shell gets to it: on a loaded machine, after the first wait.
    let mut output = typed.joined("output");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !output.lines().any(|l| l.trim().parse::<u32>().is_ok()) && std::time::Instant::now() < deadline {
        output.push_str(&client.term("read_output", json!({"session_id": id, "wait_ms": 500})).await.joined("output"));
    }
    let count = output.lines().map(str::trim).find(|l| l.parse::<u32>().is_ok());
    assert_eq!(count, Some("0"), "a session read the server's secrets: {output}");
    client.close().await;
}

#[tokio::test]
async fn no_device_nodes_no_capabilities_no_kernel_consoles() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    for attempt in ["mknod blk b 8 0", "mknod chr c 1 3", "exec 3>/dev/kmsg", "exec 3>/dev/tty0", "exec 3>/dev/console"]
    {
        let reply = client.run(attempt).await;
        assert!(reply.is_error, "`{attempt}` worked (root: {})", root());
    }
    assert!(!ws.root.join("blk").exists() && !ws.root.join("chr").exists());
    let caps = client.run("grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status").await;
    let stdout = caps.joined("stdout");
    for line in stdout.lines() {
        let value = line.split_whitespace().nth(1).unwrap();
        // Without root there is no CAP_SETPCAP to empty the bounding set (and no need).
        if !line.starts_with("CapBnd") || root() {
            assert!(value.chars().all(|c| c == '0'), "{line}");
        }
    }
    client.close().await;
}

#[tokio::test]
async fn rm_fr_slash_destroys_only_the_throwaway_root_and_its_own_temp() {
    let ws = Workspace::new();
    let marker = format!("toolbelt-survivor-{}", std::process::id());
    let planted: Vec<std::path::PathBuf> =
        ["/tmp", "/var/tmp", "/dev/shm"].iter().map(|d| std::path::Path::new(d).join(&marker)).collect();
    for path in &planted {
        std::fs::write(path, "keep me").unwrap();
    }
    std::fs::write(ws.config_home.join("danger.toml"), "forbid_catastrophic = false\n").unwrap();
    let config = ws.config_home.join("danger.toml");
    let client = Client::start(&ws, &["--config", config.to_str().unwrap()]).await;
    // First prove the confinement holds, so `rm` can never run unconfined.
    let probe = client.run(&format!("touch /etc/{marker} || touch /usr/{marker}; ls /tmp/{marker}")).await;
    assert!(probe.is_error && !std::path::Path::new("/etc").join(&marker).exists(), "{}", probe.text);
    assert!(probe.text.contains("No such file"), "the system /tmp is not the command's: {}", probe.text);
    let wipe = client.run("cd / && rm -fr / --no-preserve-root; echo done").await;
    assert!(wipe.text.contains("done"), "{}", wipe.text);
    for path in &planted {
        assert_eq!(std::fs::read_to_string(path).unwrap(), "keep me", "{} was destroyed", path.display());
        std::fs::remove_file(path).unwrap();
    }
    assert!(ws.outside.join("secret.txt").exists(), "outside the root survives");
    assert!(!ws.root.join("README.md").exists(), "the root itself was the command's to destroy");
    client.close().await;
}

#[tokio::test]
async fn secrets_in_the_home_and_deny_read_paths_are_hidden() {
    let ws = Workspace::new();
    let home = ws.outside.join("home");
    for dir in [".ssh", ".aws", ".config/gcloud"] {
        std::fs::create_dir_all(home.join(dir)).unwrap();
    }
    std::fs::write(home.join(".ssh/id_ed25519"), "PRIVATE KEY").unwrap();
    std::fs::write(home.join(".aws/credentials"), "aws_secret").unwrap();
    std::fs::write(home.join(".netrc"), "machine x password y").unwrap();
    std::fs::write(home.join("notes.txt"), "ordinary").unwrap();
    std::fs::write(ws.root.join("secret.env"), "TOKEN=1").unwrap();
    let home_env = home.to_str().unwrap();
    let listed = ws.root.join("secret.env");
    let client = Client::start_with_env(&ws, &["--deny-read", listed.to_str().unwrap()], &[("HOME", home_env)]).await;
    for attempt in ["cat ~/.ssh/id_ed25519", "ls ~/.ssh", "cat ~/.aws/credentials", "cat ~/.netrc", "cat secret.env"] {
        let reply = client.run(attempt).await;
        assert!(reply.is_error && reply.text.contains("Permission denied"), "`{attempt}`: {}", reply.text);
    }
    let ordinary = client.run("cat ~/notes.txt").await;
    assert!(!ordinary.is_error && ordinary.text.contains("ordinary"), "{}", ordinary.text);
    // The state dir (todos, memories, other sessions' output) is hidden too.
    let state = ws.config_home.with_file_name("state").join("toolbelt-mcp");
    let listing = client.run(&format!("ls {}", state.display())).await;
    assert!(listing.is_error, "{}", listing.text);
    // File operations refuse a deny_read path inside the root.
    let read = client.file(json!({"operation": "read_file", "path": "secret.env"})).await;
    assert!(read.is_error && read.text.contains("deny_read"), "{}", read.text);
    client.close().await;
}

#[tokio::test]
async fn limits_stop_memory_and_file_bombs() {
    let ws = Workspace::new();
    let config = ws.config_home.join("limits.toml");
    std::fs::write(&config, "max_memory_bytes = 1073741824\nmax_file_bytes = 1048576\nmax_processes = 64\n").unwrap();
    let client = Client::start(&ws, &["--config", config.to_str().unwrap()]).await;
    let memory = client.run("python3 -c 'b = bytearray(2 << 30)'").await;
    assert!(memory.is_error && memory.text.contains("MemoryError"), "{}", memory.text);
    let file = client.run("head -c 2000000 /dev/zero > big").await;
    assert!(file.is_error, "{}", file.text);
    assert!(std::fs::metadata(ws.root.join("big")).unwrap().len() <= 1_048_576);
    let limits = client.run("ulimit -u; ulimit -c").await;
    assert_eq!(limits.joined("stdout"), "64\n0\n", "{}", limits.text);
    if !root() {
        // The kernel exempts root from the process count; anyone else meets it.
        let bomb = client.run("for i in $(seq 100); do sleep 5 & done 2>&1 | head -1; wait").await;
        assert!(bomb.text.contains("Resource temporarily unavailable"), "{}", bomb.text);
    }
    let normal = client.run("echo fine").await;
    assert!(!normal.is_error, "{}", normal.text);
    // What the call sets reaches the command through the helper.
    let set = client.term("run_command", json!({"command": "echo \"$CALL_SET\"", "env": ["CALL_SET=64MiB"]})).await;
    assert_eq!(set.joined("stdout"), "64MiB\n", "{}", set.text);
    client.close().await;
}

#[tokio::test]
async fn normal_work_still_works_inside() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &["--network", "deny"]).await;
    let work = client
        .run(&format!(
            "git init -q && git add README.md && git -c user.name=t -c user.email=t@t commit -qm x && python3 -c 'print(6*7)' && echo $TMPDIR && mktemp && echo {SELF_PID}"
        ))
        .await;
    assert!(!work.is_error && work.text.contains("42") && work.text.contains("/tmp\n"), "{}", work.text);
    let pty = client.term("start_session", json!({})).await;
    let id = pty.structured["session_id"].as_str().unwrap().to_string();
    let less = client.term("send_input", json!({"session_id": id, "input": "less README.md", "wait_ms": 800})).await;
    assert!(less.joined("output").contains("Fixture workspace"), "a full-screen program on the PTY: {}", less.text);
    client.term("send_input", json!({"session_id": id, "input": "q", "press_enter": false})).await;
    client.close().await;
}

#[tokio::test]
async fn http_sessions_do_not_see_each_others_output() {
    let ws = Workspace::new();
    let server = super::http::HttpServer::start(&ws, &[], &[]).await;
    let connect =
        || async { Client { service: rmcp::ServiceExt::serve((), server.authed()).await.unwrap(), pid: None } };
    let (a, b) = (connect().await, connect().await);
    // Session A's long output spills to the state dir.
    let spilled = a.run("seq 1 300000").await;
    assert!(spilled.structured["truncated"] == true, "{}", spilled.text);
    let output = ws.state_home.join("toolbelt-mcp/output");
    let spills: Vec<_> = walk(&output).into_iter().filter(|p| p.extension().is_some_and(|e| e == "stdout")).collect();
    assert!(!spills.is_empty(), "A's output was spilled under {}", output.display());
    // Session B's commands cannot find it, by path or by search.
    for spill in &spills {
        let read = b.run(&format!("cat {} | tail -1", spill.display())).await;
        assert!(!read.text.contains("300000"), "{}", read.text);
    }
    let search = b.run(&format!("grep -rl 299999 {} 2>&1; ls {} 2>&1", output.display(), output.display())).await;
    assert!(!search.text.contains(".stdout"), "{}", search.text);
    a.close().await;
    b.close().await;
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}
