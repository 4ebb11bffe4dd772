//! `toolbelt-mcp agent --mcp-config`: several MCP servers in one run. The README's config (the
//! official memory server from npm, pinned, through `npx`) and `fixtures/mcp/odd_server.py`
//! (tool names that need sanitising and cutting, a question, a big result, a tool that ends
//! the server, one that waits to be cancelled) are called by their qualified names; a server
//! that is missing or goes away is reported and the run goes on, or stops with
//! `--require-servers`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::agent::{Ran, agent, leftovers, project, run, run_with_env};
use super::common::Workspace;
use super::llm::{ScriptedLlm, Wire};

/// The fixture server's name in the configs: long, with characters tools may not have.
const ODD: &str = "odd fixture/server with a long name";
/// Its tools' prefix as the model sees it.
const ODD_QUALIFIED: &str = "odd_fixture_server_with_a_long_name__";

/// The `mcpServers` of the README's agent config (the official memory server through `npx`),
/// or `None` (after saying why) when npx is not there, which fails under `CI=true`.
fn readme_servers() -> Option<serde_json::Map<String, Value>> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let block = readme.split("<!-- agent-mcp-config:").nth(1).expect("the README's agent config block");
    let json = block.split("```json").nth(1).unwrap().split("```").next().unwrap();
    let config: Value = serde_json::from_str(json).expect("the README's agent config is JSON");
    let npx = std::process::Command::new("npx").arg("--version").output();
    if !npx.is_ok_and(|out| out.status.success()) {
        assert!(std::env::var_os("CI").is_none(), "npx is needed to run the README's agent config in CI");
        let _ = writeln!(std::io::stderr(), "skipped: no npx to run the README's agent config");
        return None;
    }
    Some(config["mcpServers"].as_object().unwrap().clone())
}

/// Processes of the memory server still running.
fn memory_servers_left() -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if cmdline.windows(13).any(|w| w == b"server-memory") && !super::common::gone(pid) {
            found.push(pid);
        }
    }
    found
}

/// Writes an MCP config holding `servers` next to the workspace; returns its path.
fn config(ws: &Workspace, servers: Value) -> PathBuf {
    let path = ws.state_home.with_file_name("mcp.json");
    std::fs::write(&path, serde_json::to_string_pretty(&json!({"mcpServers": servers})).unwrap()).unwrap();
    path
}

/// The fixture server's entry; the root on its command line lets [`leftovers`] see it.
fn odd_server(ws: &Workspace) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/mcp/odd_server.py");
    json!({"command": "python3", "args": [script, ws.root]})
}

/// The tool names of a request, in either wire format.
fn offered(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().unwrap();
    tools.iter().map(|t| t["name"].as_str().or(t["function"]["name"].as_str()).unwrap().to_string()).collect()
}

fn summary(ran: &Ran) -> Value {
    serde_json::from_str(&ran.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", ran.stdout, ran.stderr))
}

#[tokio::test]
async fn three_servers_are_called_by_qualified_names_in_both_wire_formats() {
    let Some(readme) = readme_servers() else { return };
    for wire in Wire::BOTH {
        let ws = project();
        let graph = ws.state_home.with_file_name("memory.jsonl");
        let mut servers = readme.clone();
        servers.insert(ODD.into(), odd_server(&ws));
        servers.insert("missing".into(), json!({"command": "/nonexistent/mcp-server"}));
        servers.insert("unset".into(), json!({"command": "node", "args": ["${TEST_SURELY_UNSET_VARIABLE}"]}));
        let file = config(&ws, Value::Object(servers));
        let llm = ScriptedLlm::start("multi_server", wire).await;
        let ran = run_with_env(
            &ws,
            &llm,
            "remember the project",
            &["--mcp-config", file.to_str().unwrap(), "--yes", "--json", "--output-budget", "4096"],
            &[("AGENT_MEMORY_FILE", graph.to_str().unwrap())],
        )
        .await;
        assert_eq!(ran.code, 0, "{wire:?}: {}", ran.stderr);
        llm.assert_played();
        let names = offered(&llm.requests()[0]);
        for expected in [
            "file_operations",
            "memory__create_entities",
            "memory__search_nodes",
            "odd_fixture_server_with_a_long_name__echo_text_v1",
            "odd_fixture_server_with_a_long_name__look_up_the_weathe_db6bdb0c",
        ] {
            assert!(names.iter().any(|n| n == expected), "{wire:?}: {expected} not in {names:?}");
        }
        assert!(names.iter().all(|n| n.len() <= 64 && !n.contains(['.', '/', ' '])), "{names:?}");
        // The memory server really stored it, in the file its config entry named.
        assert!(std::fs::read_to_string(&graph).unwrap().contains("uses qualified tool names"));
        // The fixture's question was answered, and said who asked.
        assert!(ran.stderr.contains(&format!("? [{ODD}] may the fixture go on? → accepted")), "{}", ran.stderr);
        assert!(ran.stderr.contains("MCP server `missing` did not start"), "{}", ran.stderr);
        assert!(ran.stderr.contains("`${TEST_SURELY_UNSET_VARIABLE}` is not set"), "{}", ran.stderr);
        let servers = summary(&ran)["servers"].clone();
        let statuses: Vec<(&str, &str)> = servers
            .as_array()
            .unwrap()
            .iter()
            .map(|s| (s["name"].as_str().unwrap(), s["status"].as_str().unwrap()))
            .collect();
        assert_eq!(
            statuses,
            [
                ("toolbelt-mcp", "running"),
                ("memory", "running"),
                (ODD, "running"),
                ("missing", "failed"),
                ("unset", "failed")
            ]
        );
        assert!(leftovers(&ws.root).is_empty());
        assert!(memory_servers_left().is_empty(), "memory servers left: {:?}", memory_servers_left());
    }
}

#[tokio::test]
async fn a_server_that_goes_away_is_reported_and_the_run_goes_on() {
    let ws = project();
    let file = config(&ws, json!({ODD: odd_server(&ws)}));
    let llm = ScriptedLlm::start("server_goes_away", Wire::Anthropic).await;
    let ran = run(&ws, &llm, "end the fixture", &["--mcp-config", file.to_str().unwrap(), "--json"]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    llm.assert_played();
    assert!(
        ran.stderr.contains(&format!("the MCP server `{ODD}` went away during the run; going on")),
        "{}",
        ran.stderr
    );
    // Its tools are no longer offered once it is gone.
    let requests = llm.requests();
    assert!(offered(&requests[0]).iter().any(|n| n.starts_with(ODD_QUALIFIED)));
    assert!(!offered(&requests[2]).iter().any(|n| n.starts_with(ODD_QUALIFIED)), "{:?}", offered(&requests[2]));
    assert_eq!(summary(&ran)["servers"][1]["status"], "gone");
}

#[tokio::test]
async fn require_servers_stops_with_exit_3_on_a_missing_or_departed_server() {
    let ws = project();
    let file = config(&ws, json!({ODD: odd_server(&ws), "missing": {"command": "/nonexistent/mcp-server"}}));
    let llm = ScriptedLlm::start("server_goes_away_required", Wire::OpenAi).await;
    let ran = run(&ws, &llm, "end the fixture", &["--mcp-config", file.to_str().unwrap(), "--require-servers"]).await;
    assert_eq!(ran.code, 3, "{}", ran.stderr);
    assert!(ran.stderr.contains("the MCP server `missing` did not start"), "{}", ran.stderr);
    assert!(llm.requests().is_empty(), "the model was asked before the servers were all there");

    let file = config(&ws, json!({ODD: odd_server(&ws)}));
    let ran =
        run(&ws, &llm, "end the fixture", &["--mcp-config", file.to_str().unwrap(), "--require-servers", "--json"])
            .await;
    assert_eq!(ran.code, 3, "{}", ran.stderr);
    llm.assert_played();
    let summary = summary(&ran);
    assert_eq!((summary["stop_reason"].as_str(), summary["exit_code"].as_u64()), (Some("server_lost"), Some(3)));
    assert!(summary["error"].as_str().unwrap().contains("went away during the run (`--require-servers`)"), "{summary}");
}

#[tokio::test]
async fn no_toolbelt_offers_only_the_configured_servers() {
    let ws = project();
    let file = config(&ws, json!({ODD: odd_server(&ws)}));
    let llm = ScriptedLlm::start("no_toolbelt", Wire::OpenAi).await;
    let ran = run(&ws, &llm, "say hello", &["--mcp-config", file.to_str().unwrap(), "--no-toolbelt"]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    llm.assert_played();
    let names = offered(&llm.requests()[0]);
    assert!(names.iter().all(|n| n.starts_with(ODD_QUALIFIED)), "{names:?}");
    assert_eq!(names.len(), 7);

    let ran = run(&ws, &llm, "say hello", &["--no-toolbelt"]).await;
    assert_eq!(ran.code, 1);
    assert!(ran.stderr.contains("`--no-toolbelt` leaves no MCP server"), "{}", ran.stderr);
}

#[tokio::test]
async fn an_http_entry_takes_its_token_from_the_environment_and_shows_its_progress() {
    let ws = project();
    // The server works elsewhere, so that the check for processes left on `ws` is not about it.
    let elsewhere = project();
    let server = super::http::HttpServer::start(&elsewhere, &[], &[]).await;
    let token = server.token.clone().unwrap();
    let entry =
        json!({"type": "http", "url": server.url(), "headers": {"Authorization": "Bearer ${REMOTE_MCP_TOKEN}"}});
    let file = config(&ws, json!({"remote": entry}));
    let llm = ScriptedLlm::start("http_entry", Wire::Anthropic).await;
    let args = ["--mcp-config", file.to_str().unwrap(), "--no-toolbelt"];
    let ran = run_with_env(&ws, &llm, "run the slow check remotely", &args, &[("REMOTE_MCP_TOKEN", &token)]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    llm.assert_played();
    assert_eq!(ran.stdout, "The slow check is done, remotely.\n");
    assert!(ran.stderr.contains("[remote] progress 1"), "{}", ran.stderr);

    // A wrong token: the server refuses, and no server is left to work with.
    let ran = run_with_env(&ws, &llm, "run the slow check remotely", &args, &[("REMOTE_MCP_TOKEN", "wrong")]).await;
    assert_eq!(ran.code, 1, "{}", ran.stderr);
    assert!(ran.stderr.contains("MCP server `remote` did not start"), "{}", ran.stderr);
    assert!(ran.stderr.contains("no MCP server is running"), "{}", ran.stderr);
}

#[tokio::test]
async fn a_resumed_run_uses_the_servers_of_the_run_it_continues() {
    let ws = project();
    let file = config(&ws, json!({ODD: odd_server(&ws)}));
    let transcript = ws.state_home.with_file_name("run.jsonl");
    let llm = ScriptedLlm::start("no_toolbelt", Wire::OpenAi).await;
    let args = ["--mcp-config", file.to_str().unwrap(), "--no-toolbelt", "--transcript", transcript.to_str().unwrap()];
    assert_eq!(run(&ws, &llm, "say hello", &args).await.code, 0);
    // No server flags this time: the recorded ones are used.
    let again = ScriptedLlm::start("resume_third", Wire::OpenAi).await;
    let ran = run(&ws, &again, "is it done?", &["--resume", transcript.to_str().unwrap()]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    again.assert_played();
    let names = offered(&again.requests()[0]);
    assert!(names.iter().all(|n| n.starts_with(ODD_QUALIFIED)) && names.len() == 7, "{names:?}");
}

#[tokio::test]
async fn ctrl_c_cancels_a_call_on_a_configured_server_too() {
    let ws = project();
    let file = config(&ws, json!({ODD: odd_server(&ws)}));
    let llm = ScriptedLlm::start("server_cancel", Wire::Anthropic).await;
    let mut child =
        agent(&ws, &llm, "wait for the fixture", &["--mcp-config", file.to_str().unwrap()]).spawn().unwrap();
    let marker = ws.root.join("wait.marker");
    let seen = |what: &str| std::fs::read_to_string(&marker).unwrap_or_default().contains(what);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !seen("waiting") {
        assert!(std::time::Instant::now() < deadline, "the call never reached the fixture");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pid = rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait()).await.expect("the agent hangs").unwrap();
    assert_eq!(status.code(), Some(0));
    llm.assert_played();
    // The fixture heard `notifications/cancelled` for its call.
    assert!(seen("cancelled"), "{:?}", std::fs::read_to_string(&marker));
    assert!(leftovers(&ws.root).is_empty(), "processes left: {:?}", leftovers(&ws.root));
}

#[tokio::test]
async fn a_configured_server_gets_its_entrys_env_but_never_the_provider_key() {
    let ws = project();
    let mut entry = odd_server(&ws);
    entry["env"] = json!({"FIXTURE_SETTING": "from-the-entry"});
    let file = config(&ws, json!({ODD: entry}));
    let llm = ScriptedLlm::start("server_env", Wire::Anthropic).await;
    // The key is in the agent's environment (ANTHROPIC_API_KEY, the wire's own) and another
    // provider's key too: neither reaches the server.
    let ran = run_with_env(
        &ws,
        &llm,
        "show the environment",
        &["--mcp-config", file.to_str().unwrap()],
        &[("OPENAI_API_KEY", "sk-other")],
    )
    .await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    llm.assert_played();
}
