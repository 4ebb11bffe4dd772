//! The command line: `schemas --check` (the golden test), `doctor`, startup errors.

use std::process::Command;

use super::common::{BIN, Workspace};

/// Runs the binary with `args` in `ws`'s config and state dirs: success, stdout, stderr.
pub(crate) fn run(args: &[&str], ws: &Workspace) -> (bool, String, String) {
    let out = Command::new(BIN)
        .args(args)
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .env("XDG_STATE_HOME", &ws.state_home)
        .env_remove("TOOLBELT_ROOT")
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn committed_schemas_and_tool_reference_match_the_binary() {
    let ws = Workspace::new();
    let (ok, stdout, _) = run(&["schemas", "--check", "--dir", env!("CARGO_MANIFEST_DIR")], &ws);
    assert!(ok, "run `cargo run -- schemas` and commit the result:\n{stdout}");
    // And the check really compares: a stale copy fails.
    let copy = ws.root.join("repo");
    std::fs::create_dir_all(copy.join("schemas")).unwrap();
    std::fs::write(copy.join("schemas/file_operations.json"), "{}\n").unwrap();
    let (ok, stdout, _) = run(&["schemas", "--check", "--dir", copy.to_str().unwrap()], &ws);
    assert!(!ok && stdout.contains("differs: schemas/file_operations.json"), "{stdout}");
    let (ok, _, _) = run(&["schemas", "--dir", copy.to_str().unwrap()], &ws);
    assert!(ok);
    assert!(run(&["schemas", "--check", "--dir", copy.to_str().unwrap()], &ws).0);
}

#[test]
fn doctor_reports_config_roots_and_landlock() {
    let ws = Workspace::new();
    let root = ws.root.display().to_string();
    let (ok, stdout, stderr) = run(&["doctor", "--root", &root, "--output-budget", "5000"], &ws);
    assert!(ok, "{stderr}");
    assert!(stdout.starts_with(&format!("toolbelt-mcp {}\n", env!("CARGO_PKG_VERSION"))), "{stdout}");
    assert!(stdout.contains(&format!("roots:\n  {root}\n")), "{stdout}");
    let launched = stdout.lines().find(|l| l.starts_with("launched by:   ")).unwrap_or_default();
    assert!(launched.ends_with(BIN), "{stdout}");
    assert!(stdout.contains("output budget: 5000 bytes"), "{stdout}");
    assert!(
        stdout.contains(
            "tool layout:   consolidated (file_operations, terminal_operations, todo_operations, memory_operations)"
        ),
        "{stdout}"
    );
    let database = ws.state_home.join("toolbelt-mcp/toolbelt.db");
    assert!(stdout.contains(&format!("database:      {} (not created yet", database.display())), "{stdout}");
    assert!(stdout.contains("max edit:      10485760 bytes per file"), "{stdout}");
    assert!(stdout.contains("undo data:     at most 268435456 bytes per session"), "{stdout}");
    assert!(stdout.contains("confinement:   Landlock, namespaces and seccomp: Landlock available"), "{stdout}");
    assert!(stdout.contains("sandbox:       workspace-write, checked by a probe run under it"), "{stdout}");
    for layer in
        ["pid (the command is PID 2", "an own /proc", "no capabilities", "no_new_privs", "seccomp filter", "Landlock ("]
    {
        assert!(stdout.contains(layer) && !stdout.contains(&format!("NOT {layer}")), "{layer}: {stdout}");
    }
    assert!(stdout.contains("network (loopback only; other hosts through the server's proxy)"), "{stdout}");
    assert!(
        stdout.contains("  network:     allow (other hosts through the server's proxy: every public address"),
        "{stdout}"
    );
    assert!(stdout.contains("  writable:\n") && stdout.contains(&format!("    {root}\n")), "{stdout}");
    assert!(stdout.contains("  limits:      4096 processes"), "{stdout}");
    let (ok, stdout, _) = run(&["doctor", "--root", &root, "--network", "deny"], &ws);
    assert!(ok && stdout.contains("network (loopback only)"), "{stdout}");
    let (ok, stdout, _) = run(&["doctor", "--root", &root, "--network", "host"], &ws);
    assert!(ok && stdout.contains("the machine's network"), "{stdout}");
    let (ok, stdout, _) = run(&["doctor", "--root", &root, "--sandbox", "full-access"], &ws);
    assert!(ok && stdout.contains("sandbox:       full-access (no sandbox"), "{stdout}");
}

#[test]
fn startup_errors_are_clear_and_exit_nonzero() {
    let ws = Workspace::new();
    let missing = ws.root.join("nope").display().to_string();
    let (ok, stdout, stderr) = run(&["serve", "--root", &missing], &ws);
    assert!(!ok && stdout.is_empty(), "stdout is reserved for the protocol");
    assert!(stderr.contains(&format!("root `{missing}` does not exist")), "{stderr}");
    let config = ws.root.join("bad.toml");
    std::fs::write(&config, "root = [\".\"]\n").unwrap();
    let (ok, _, stderr) = run(&["serve", "--config", config.to_str().unwrap()], &ws);
    assert!(!ok && stderr.contains("unknown field `root`"), "{stderr}");
    let (ok, stdout, _) = run(&["--version"], &ws);
    assert!(ok && stdout.contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn serves_stdin_that_is_not_a_pipe_and_answers_before_exiting_at_eof() {
    // Hosts give pipes (driven by epoll); a file or terminal on stdin takes the portable path.
    let ws = Workspace::new();
    let requests = ws.root.join("requests.jsonl");
    let lines = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"file_operations","arguments":{"operation":"read_file","path":"src/main.rs","limit":1}}}"#,
    ];
    std::fs::write(&requests, lines.join("\n") + "\n").unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--root", ws.root.to_str().unwrap()])
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .env("XDG_STATE_HOME", &ws.state_home)
        .stdin(std::fs::File::open(&requests).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let replies: Vec<serde_json::Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(replies.len(), 2, "{stdout}");
    let call = replies.iter().find(|r| r["id"] == 2).unwrap();
    assert_eq!(call["result"]["content"][0]["text"].as_str().unwrap().lines().next(), Some("1\tfn main() {"));
}

#[tokio::test]
async fn every_config_in_mcp_json_example_starts_and_lists_tools() {
    let ws = Workspace::new();
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/mcp.json.example")).unwrap();
    let example: serde_json::Value = serde_json::from_str(&text).unwrap();
    let servers = example["mcpServers"].as_object().unwrap();
    assert!(!servers.is_empty());
    for (name, server) in servers {
        if let Some(url) = server["url"].as_str() {
            // An HTTP host config: a server started here stands in for the URL.
            assert!(url.ends_with("/mcp") && server["type"] == "http", "{name}: {server}");
            let header = server["headers"]["Authorization"].as_str();
            let token = "example-token-0123456789abcdef";
            let env: &[(&str, &str)] = if header.is_some() { &[("TOOLBELT_AUTH_TOKEN", token)] } else { &[] };
            let http = super::http::HttpServer::start(&ws, &[], env).await;
            let bearer = header.map(|h| h.replace("${TOOLBELT_AUTH_TOKEN}", token));
            let token = bearer.as_deref().map(|b| b.strip_prefix("Bearer ").unwrap());
            let service = rmcp::ServiceExt::serve((), http.transport(token)).await.unwrap();
            assert_eq!(service.list_all_tools().await.unwrap().len(), 4, "{name}");
            service.cancel().await.unwrap();
            continue;
        }
        if server["command"].as_str().is_some_and(|command| command.ends_with(".exe")) {
            // A Windows config: CI runs it under Wine (tests/cross/wine_smoke.py).
            assert_eq!(server["command"], r"C:\absolute\path\to\toolbelt-mcp.exe", "{name}");
            continue;
        }
        let mut args: Vec<String> = server["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().replace("/absolute/path/to/your/project", ws.root.to_str().unwrap()))
            .collect();
        if server["command"] == "npx" {
            // The npm launcher runs the binary with the arguments after the package name
            // (CI runs this very config through npx: tests/npm/check.py).
            assert_eq!(args[..2], ["-y", "toolbelt-mcp"], "{name}");
            args.drain(..2);
        } else {
            assert_eq!(server["command"], "/absolute/path/to/toolbelt-mcp", "{name}");
        }
        let client = super::common::Client::spawn(&args, &ws.config_home, None).await;
        let tools = client.service.list_all_tools().await.unwrap();
        assert!(!tools.is_empty(), "{name}");
        client.close().await;
    }
}

#[test]
fn stdin_a_pipe_and_stdout_a_file_serve_a_slow_client() {
    // Only stdin is a pipe: it must stay blocking (it once became non-blocking, and the first
    // read, before the client wrote, failed with EAGAIN).
    use std::io::Write;
    let ws = Workspace::new();
    let out = ws.root.join("out.jsonl");
    let mut child = Command::new(BIN)
        .args(["serve", "--root", ws.root.to_str().unwrap()])
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .env("XDG_STATE_HOME", &ws.state_home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::fs::File::create(&out).unwrap())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
    writeln!(child.stdin.take().unwrap(), "{init}").unwrap();
    assert!(child.wait().unwrap().success());
    let answer: serde_json::Value =
        serde_json::from_str(std::fs::read_to_string(&out).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(answer["result"]["serverInfo"]["name"], "toolbelt-mcp");
}
