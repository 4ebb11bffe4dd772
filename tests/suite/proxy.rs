//! Commands and the network: a loopback of their own, and other hosts only through the
//! server's proxy, which resolves names itself and checks every address. First the
//! self-approval of the review (a command that calls its own HTTP server and answers the
//! question it is asked), then the proxy's rules and the spellings that tried to get round
//! sandbox-runtime's.

use std::io::{Read, Write};
use std::net::TcpListener;

use super::common::{Client, Workspace};
use super::http::HttpServer;

/// A one-shot-per-connection HTTP server on the machine's loopback answering `hello` (the
/// "test registry" of these tests): its port.
fn hello_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\nhello\n");
            });
        }
    });
    port
}

/// The script a command runs to call the server at `url` as a new MCP client with `token`:
/// initialize, then `run_command` escalated with a marker; it prints what it got.
const SELF_CALL: &str = r#"
import json, sys, urllib.request
url, token, marker = sys.argv[1], sys.argv[2], sys.argv[3]
def post(body, session=None):
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream", "authorization": "Bearer " + token}
    if session: headers["mcp-session-id"] = session
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers)
    with urllib.request.urlopen(request, timeout=5) as answer:
        return answer.headers.get("mcp-session-id"), answer.read().decode()
try:
    session, _ = post({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "inside", "version": "0"}}})
    post({"jsonrpc": "2.0", "method": "notifications/initialized"}, session)
    _, text = post({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "terminal_operations", "arguments": {"operation": "run_command", "command": "touch " + marker, "escalate": True, "justification": "x"}}}, session)
    print("REACHED", text[:300])
except Exception as err:
    print("BLOCKED", type(err).__name__, err)
"#;

#[tokio::test]
async fn a_command_cannot_call_its_own_server_or_approve_its_own_escalation() {
    let ws = Workspace::new();
    // The token in a file, as `--auth-token-file` takes it (here inside the root).
    let token = "inside-test-token-0123456789abcdef";
    let token_file = ws.root.join("token.txt");
    std::fs::write(&token_file, token).unwrap();
    // A token file is the user's alone, or the server refuses it.
    std::fs::set_permissions(&token_file, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    std::fs::write(ws.root.join("self_call.py"), SELF_CALL).unwrap();
    let server =
        HttpServer::start(&ws, &["--auth-token-file", token_file.to_str().unwrap()], &[("TOOLBELT_AUTH_TOKEN", token)])
            .await;
    let client = server.client().await;
    let marker = ws.outside.join("PWNED");
    // The token file is hidden from commands, wherever it is.
    let read = client.run("cat token.txt").await;
    assert!(read.is_error && !read.text.contains(token), "{}", read.text);
    // Given the token anyway, the command reaches nothing: not directly (its loopback is its
    // own), not through the proxy (the server's own address is never reached).
    let call = format!("python3 self_call.py {} {token} {}", server.url(), marker.display());
    for (how, env) in [("direct", "env -u HTTP_PROXY -u http_proxy"), ("proxied", "env")] {
        let reply = client.run(&format!("{env} {call}")).await;
        assert!(reply.text.contains("BLOCKED") && !reply.text.contains("REACHED"), "{how}: {}", reply.text);
    }
    assert!(!marker.exists(), "the escalated marker ran");
    drop(client);
    drop(server);

    // Even with the server's loopback port listed as allowed, the proxy never goes there.
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let allow = format!("127.0.0.1:{port}");
    let args = ["--auth-token-file", token_file.to_str().unwrap(), "--network-allow", &allow];
    let server = HttpServer::start_at_port(&ws, &port, &args, &[("TOOLBELT_AUTH_TOKEN", token)]).await;
    let client = server.client().await;
    let reply = client.run(&format!("curl -sS -m 5 --noproxy '' -x http://127.0.0.1:3128 {}", server.url())).await;
    assert!(reply.text.contains("own listening address"), "{}", reply.text);
    drop(client);
    drop(server);
}

#[tokio::test]
async fn the_machines_network_and_http_do_not_go_together() {
    let ws = Workspace::new();
    let out = std::process::Command::new(super::common::BIN)
        .args(["serve", "--http", "127.0.0.1:0", "--root", ws.root.to_str().unwrap(), "--network", "host"])
        .env("XDG_STATE_HOME", &ws.state_home)
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("`--network host` cannot be used with `serve --http`"),
        "{stderr}"
    );
}

#[tokio::test]
async fn the_proxy_reaches_what_is_allowed_and_refuses_every_spelling_of_the_rest() {
    let ws = Workspace::new();
    let port = hello_server();
    let other = hello_server();
    let allowed = format!("127.0.0.1:{port}");
    let client = Client::start(&ws, &["--network-allow", &allowed]).await;
    let curl = |args: String| format!("curl -sS -m 5 --noproxy '' {args}; echo \" exit=$?\"");
    // Allowed exactly: through HTTP (plain and CONNECT) and SOCKS5.
    for how in [
        format!("-x http://127.0.0.1:3128 http://127.0.0.1:{port}/"),
        format!("-p -x http://127.0.0.1:3128 http://127.0.0.1:{port}/"),
        format!("-x socks5h://127.0.0.1:3128 http://127.0.0.1:{port}/"),
        format!("-x socks5://127.0.0.1:3128 http://127.0.0.1:{port}/"),
    ] {
        let reply = client.run(&curl(how.clone())).await;
        assert!(reply.text.contains("hello") && reply.text.contains("exit=0"), "{how}: {}", reply.text);
    }
    // Another port of the same address, spellings of loopback, the metadata address.
    for how in [
        format!("-x http://127.0.0.1:3128 http://127.0.0.1:{other}/"),
        format!("-x http://127.0.0.1:3128 http://localhost:{other}/"),
        format!("-x http://127.0.0.1:3128 http://LOCALHOST.:{other}/"),
        format!("-x http://127.0.0.1:3128 'http://[::ffff:127.0.0.1]:{other}/'"),
        format!("-x http://127.0.0.1:3128 http://2130706433:{other}/"),
        format!("-x http://127.0.0.1:3128 http://127.1:{other}/"),
        format!("-x socks5h://127.0.0.1:3128 http://127.0.0.1:{other}/"),
        "-x socks5h://127.0.0.1:3128 http://169.254.169.254/latest/meta-data/".to_string(),
        "-x http://127.0.0.1:3128 http://169.254.169.254/latest/meta-data/".to_string(),
    ] {
        let reply = client.run(&curl(how.clone())).await;
        assert!(!reply.text.contains("hello"), "{how}: {}", reply.text);
    }
    // A NUL in a SOCKS5 host name; a Host header naming another host than the URL.
    let python = format!(
        r#"python3 -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128)); s.sendall(b"\x05\x01\x00"); s.recv(2)
name = b"127.0.0.1\x00.example.com"
s.sendall(b"\x05\x01\x00\x03" + bytes([len(name)]) + name + ({port}).to_bytes(2, "big")); print("socks", s.recv(10)[1])
h = socket.create_connection(("127.0.0.1", 3128))
h.sendall(b"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: evil.example\r\n\r\n"); print("host", h.recv(200).split(b"\r\n")[0].decode())
'"#
    );
    let reply = client.run(&python).await;
    assert!(reply.text.contains("socks 7") || reply.text.contains("socks 2"), "{}", reply.text);
    assert!(reply.text.contains("host HTTP/1.1 400"), "{}", reply.text);
    // Ignoring the proxy leads nowhere: no route, no name resolution.
    let reply = client.run(&format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected; getent hosts example.com || echo no-dns; python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b\"x\", (\"8.8.8.8\", 53))' 2>&1 | tail -1")).await;
    assert!(
        !reply.text.contains("connected") && reply.text.contains("no-dns") && reply.text.contains("unreachable"),
        "{}",
        reply.text
    );
    // The result says what the proxy refused, and how to allow it.
    let reply = client.run(&curl(format!("-x http://127.0.0.1:3128 http://127.0.0.1:{other}/"))).await;
    assert!(
        reply.text.contains(&format!("127.0.0.1:{other}")) && reply.text.contains("network_allow"),
        "{}",
        reply.text
    );
    client.close().await;
}

#[tokio::test]
async fn many_connections_and_a_slow_client_do_not_stall_the_proxy() {
    let ws = Workspace::new();
    let port = hello_server();
    let client = Client::start(&ws, &["--network-allow", &format!("127.0.0.1:{port}")]).await;
    let script = format!(
        r#"python3 -c '
import socket, threading
slow = socket.create_connection(("127.0.0.1", 3128)); slow.sendall(b"GET http://127.0.0.1:{port}/ HTTP/1.1\r\n")
ok = []
def one():
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(b"GET http://127.0.0.1:{port}/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n")
    data = b""
    while True:
        got = s.recv(4096)
        if not got: break
        data += got
    ok.append(b"hello" in data)
threads = [threading.Thread(target=one) for _ in range(200)]
[t.start() for t in threads]; [t.join() for t in threads]
print("served", sum(ok))
'"#
    );
    let reply = client.run(&script).await;
    assert!(reply.text.contains("served 200"), "{}", reply.text);
    client.close().await;
}

/// In `allowlist` mode a destination not listed is put to the user while the connection waits:
/// allowed once, the command reaches it for the rest of its run and the next command is asked
/// again; allowed for the session, no command asks again; declined, it is refused with the
/// user's word. Each decision is in the audit log. A client that cannot ask refuses it,
/// saying how to list it.
#[tokio::test]
async fn an_unlisted_destination_is_asked_and_the_answer_holds_as_said() {
    let ws = Workspace::new();
    let port = hello_server();
    let audit = ws.outside.join("audit.jsonl");
    let config = format!("network = \"allowlist\"\naudit_log = \"{}\"\n", audit.display());
    let asker = super::policy::Asker::default();
    let service = super::policy::start(&ws, &config, asker.clone()).await;
    let get =
        format!("curl -sS -m 20 --noproxy '' -x http://127.0.0.1:3128 http://127.0.0.1:{port}/; echo \" exit=$?\"");
    let twice = format!("{get}; {get}");
    let run = |command: &str| super::policy::run(&service, serde_json::json!({ "command": command }));

    asker.answer(&["allow_once"]);
    let reply = run(&twice).await;
    assert_eq!(reply.text.matches("hello").count(), 2, "{}", reply.text);
    assert_eq!(asker.asked(), 1, "asked once for the command's two connections");
    let message = asker.messages().pop().unwrap();
    assert!(message.contains(&format!("127.0.0.1:{port}")) && message.contains("network_allow"), "{message}");
    assert!(message.contains("a loopback address (this machine)"), "{message}");

    asker.answer(&["deny"]);
    let reply = run(&get).await;
    assert!(!reply.text.contains("hello") && reply.text.contains("declined"), "{}", reply.text);
    assert_eq!(asker.asked(), 2, "the next command is asked again");

    asker.answer(&["allow_session"]);
    assert!(run(&get).await.text.contains("hello"));
    assert!(run(&get).await.text.contains("hello"));
    assert_eq!(asker.asked(), 3, "allowed for the session: not asked again");
    service.cancel().await.unwrap();

    let log = std::fs::read_to_string(&audit).unwrap();
    let decisions: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .filter(|record| record["operation"] == "network")
        .collect();
    let said: Vec<(&str, &str)> =
        decisions.iter().map(|r| (r["decision"].as_str().unwrap(), r["decided_by"].as_str().unwrap())).collect();
    assert_eq!(said, [("allow", "user"), ("deny", "user"), ("allow", "user"), ("allow", "grant")], "{log}");

    // Nobody to ask: refused, saying how to list it.
    let client = Client::start(&ws, &["--network", "allowlist"]).await;
    let reply = client.run(&get).await;
    assert!(!reply.text.contains("hello") && reply.text.contains("cannot ask the user"), "{}", reply.text);
    client.close().await;
}

/// A test registry (`fixtures/registry/serve.py`: git's dumb HTTP, a PyPI simple index, an npm
/// registry) on the machine's loopback, ended with the test.
struct Registry {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Registry {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/registry/serve.py");
        let mut child = std::process::Command::new("python3")
            .args([script, dir.path().to_str().unwrap()])
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line).unwrap();
        let port = line.trim().parse().unwrap_or_else(|_| panic!("the registry said {line:?}"));
        Self { child, port, _dir: dir }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// With `allowlist` and the registry listed, `git clone`, `pip download`, `npm install` and
/// `cargo fetch` inside the sandbox reach it through the proxy with the settings the server gives them;
/// another port of the same machine is refused (nobody to ask), and the result says so.
#[tokio::test]
async fn git_pip_npm_and_cargo_reach_a_listed_registry_through_the_proxy() {
    let ws = Workspace::new();
    let registry = Registry::start();
    let port = registry.port;
    let other = hello_server();
    let listed = format!("127.0.0.1:{port}");
    let client = Client::start(&ws, &["--network", "allowlist", "--network-allow", &listed]).await;
    // A crate that depends on the registry's `hello`, for `cargo fetch`.
    std::fs::create_dir_all(ws.root.join("crate/src")).unwrap();
    std::fs::write(ws.root.join("crate/src/lib.rs"), "").unwrap();
    std::fs::write(
        ws.root.join("crate/Cargo.toml"),
        "[package]\nname = \"fetcher\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\nhello = { version = \"1\", registry = \"test\" }\n\n[workspace]\n",
    )
    .unwrap();
    // The registry is on 127.0.0.1, which `NO_PROXY` exempts: dropped for these tests only.
    let env = "env -u NO_PROXY -u no_proxy";
    let base = format!("http://127.0.0.1:{port}");
    for (tool, command, expected) in [
        ("git", format!("{env} git clone -q {base}/git/hello.git && cat hello/README"), "hello from the test registry"),
        (
            "pip",
            format!(
                "{env} python3 -m pip download -q --no-cache-dir --no-deps --index-url {base}/pypi/simple hello -d dl && ls dl"
            ),
            "hello-1.0-py3-none-any.whl",
        ),
        (
            "npm",
            format!(
                "{env} npm install --cache /tmp/npm-cache --no-audit --no-fund --registry {base}/npm/ hello && cat node_modules/hello/index.js"
            ),
            "module.exports = 'hello'",
        ),
        (
            "cargo",
            format!(
                "{env} CARGO_HOME=/tmp/cargo-home cargo fetch --manifest-path crate/Cargo.toml --config 'registries.test.index=\"sparse+{base}/cargo/index/\"' && ls /tmp/cargo-home/registry/cache/*/"
            ),
            "hello-1.0.0.crate",
        ),
    ] {
        // Cargo is a rustup install in root's home here: a uid that cannot run it leaves it out
        // (CI runs this suite as root, where it must work).
        if tool == "cargo" && std::process::Command::new("cargo").arg("--version").output().is_err() {
            assert!(std::env::var_os("CI").is_none(), "cargo is needed for the proxy's `cargo fetch` check in CI");
            eprintln!("cargo cannot be run by this uid: the `cargo fetch` check is left out");
            continue;
        }
        let reply = client.term("run_command", serde_json::json!({"command": command, "timeout_ms": 120_000})).await;
        assert!(!reply.is_error && reply.text.contains(expected), "{tool}: {}", reply.text);
    }
    let refused = client
        .run(&format!("{env} git clone -q http://127.0.0.1:{other}/git/hello.git elsewhere; echo \" exit=$?\""))
        .await;
    assert!(
        refused.text.contains(&format!("127.0.0.1:{other}")) && refused.text.contains("network_allow"),
        "{}",
        refused.text
    );
    assert!(!ws.root.join("elsewhere").exists());
    client.close().await;
}

/// `doctor` tries the proxy live from inside the sandbox: a listed destination is reached
/// through it, the cloud metadata address is refused with the proxy's reason.
#[test]
fn doctor_probes_the_proxy_from_inside_the_sandbox() {
    let ws = Workspace::new();
    let port = hello_server();
    let listed = format!("127.0.0.1:{port}");
    let root = ws.root.to_str().unwrap().to_string();
    let proxy_line = |network: &[&str]| {
        let (ok, stdout, stderr) = super::cli::run(&[&["doctor", "--root", &root], network].concat(), &ws);
        assert!(ok, "{stdout}\n{stderr}");
        stdout.lines().find(|l| l.trim_start().starts_with("proxy:")).unwrap_or_else(|| panic!("{stdout}")).to_string()
    };
    let line = proxy_line(&["--network", "allowlist", "--network-allow", &listed]);
    assert!(line.contains(&format!("`{listed}` reached (")), "{line}");
    assert!(line.contains("`169.254.169.254:80` not reached: toolbelt-mcp proxy: not on the list"), "{line}");
    // With every public host allowed, the metadata address is still refused, for what it is.
    let line = proxy_line(&["--network", "allow"]);
    assert!(line.contains("`169.254.169.254:80` not reached: ") && line.contains("link-local"), "{line}");
}
