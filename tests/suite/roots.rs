//! MCP roots: used when no root is configured, refreshed on change, ignored when `--root`.
#![allow(deprecated, reason = "roots are deprecated by SEP-2577 but still sent by current hosts")]

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, ListRootsResult, Root};
use rmcp::service::RequestContext;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::json;

use super::common::{BIN, Workspace, op, unpack};

/// A client that offers MCP roots.
#[derive(Clone)]
struct RootsClient {
    roots: Arc<Mutex<Vec<PathBuf>>>,
}

impl ClientHandler for RootsClient {
    fn get_info(&self) -> ClientConfig {
        #[allow(deprecated)]
        let capabilities = ClientCapabilities::builder().enable_roots().enable_roots_list_changed().build();
        ClientConfig::new(capabilities, Implementation::new("roots-test", "1"))
    }

    #[allow(deprecated)]
    async fn list_roots(&self, _: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        let roots = self.roots.lock().unwrap().iter().map(|p| Root::new(format!("file://{}", p.display()))).collect();
        Ok(ListRootsResult::new(roots))
    }
}

async fn start(
    handler: RootsClient,
    args: &[String],
    cwd: &std::path::Path,
    ws: &Workspace,
) -> rmcp::service::RunningService<RoleClient, RootsClient> {
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.args(args)
            .current_dir(cwd)
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home)
            .env_remove("TOOLBELT_ROOT");
    }))
    .unwrap();
    handler.serve(transport).await.unwrap()
}

async fn read(service: &rmcp::service::RunningService<RoleClient, RootsClient>, path: &str) -> super::common::Reply {
    let params = rmcp::model::CallToolRequestParams::new("file_operations")
        .with_arguments(op("read_file", json!({"path": path})).as_object().unwrap().clone());
    unpack(service.call_tool(params).await.unwrap())
}

#[tokio::test]
async fn client_roots_replace_the_default_and_follow_changes() {
    let ws = Workspace::new();
    let handler = RootsClient { roots: Arc::new(Mutex::new(vec![ws.root.join("src")])) };
    // Started in data/ with no --root: the client's root (src/) wins over the cwd.
    let service = start(handler.clone(), &["serve".into()], &ws.root.join("data"), &ws).await;
    let reply = read(&service, "main.rs").await;
    assert!(!reply.is_error && reply.text.contains("fn main()"), "{}", reply.text);
    assert!(read(&service, "crlf.txt").await.is_error, "the cwd is no longer a root");
    // The client switches roots and says so.
    *handler.roots.lock().unwrap() = vec![ws.root.join("data")];
    #[allow(deprecated)]
    service.notify_roots_list_changed().await.unwrap();
    let mut switched = false;
    for _ in 0..50 {
        if !read(&service, "crlf.txt").await.is_error {
            switched = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(switched, "roots/list_changed was not followed");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn explicit_root_wins_over_client_roots() {
    let ws = Workspace::new();
    let handler = RootsClient { roots: Arc::new(Mutex::new(vec![ws.root.join("src")])) };
    let args = vec!["serve".to_string(), "--root".into(), ws.root.display().to_string()];
    let service = start(handler, &args, &ws.root, &ws).await;
    assert!(!read(&service, "src/main.rs").await.is_error);
    assert!(read(&service, "main.rs").await.is_error);
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn without_roots_support_the_cwd_is_the_root() {
    let ws = Workspace::new();
    let client = super::common::Client::spawn(&["serve".into()], &ws.config_home, Some(&ws.root.join("src"))).await;
    let reply = client.ok(op("read_file", json!({"path": "main.rs"}))).await;
    assert_eq!(reply.structured["path"], "main.rs");
    client.close().await;
}

/// A client with no roots, started in `cwd` with `home` as its home and `env` added; the
/// project dir Claude Code would set is removed unless `env` names it.
async fn start_plain(
    cwd: &std::path::Path,
    home: &std::path::Path,
    env: &[(&str, &std::path::Path)],
    ws: &Workspace,
) -> rmcp::service::RunningService<RoleClient, ()> {
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.arg("serve")
            .current_dir(cwd)
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home)
            .env_remove("TOOLBELT_ROOT")
            .env_remove("CLAUDE_PROJECT_DIR");
        for (key, value) in env {
            cmd.env(key, value);
        }
    }))
    .unwrap();
    ().serve(transport).await.unwrap()
}

/// `read_file` of `path`, with `meta` as the call's `_meta`.
async fn read_with_meta(
    service: &rmcp::service::RunningService<RoleClient, ()>,
    path: &str,
    meta: serde_json::Value,
) -> super::common::Reply {
    let mut params = rmcp::model::CallToolRequestParams::new("file_operations")
        .with_arguments(op("read_file", json!({"path": path})).as_object().unwrap().clone());
    if let serde_json::Value::Object(meta) = meta {
        params.meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(meta)));
    }
    unpack(service.call_tool(params).await.unwrap())
}

#[tokio::test]
async fn started_in_the_home_or_the_root_with_no_workspace_named_it_refuses_with_the_fix() {
    let ws = Workspace::new();
    // The workspace's own dir plays the home: a server started there serves nothing.
    let home = ws.root.clone();
    let service = start_plain(&home, &home, &[], &ws).await;
    let reply = read_with_meta(&service, "src/main.rs", json!({})).await;
    assert!(reply.is_error, "{}", reply.text);
    assert!(reply.text.contains("no workspace") && reply.text.contains("(your home directory)"), "{}", reply.text);
    assert!(reply.text.contains("serve --root /path/to/project"), "the fix is named: {}", reply.text);
    let absolute = read_with_meta(&service, &home.join("src/main.rs").display().to_string(), json!({})).await;
    assert!(absolute.is_error && absolute.text.contains("no workspace"), "{}", absolute.text);
    service.cancel().await.unwrap();
    // Started in a directory that holds the home (a parent of it), or named one by the host.
    let above = home.parent().unwrap().to_path_buf();
    let service = start_plain(&above, &home, &[], &ws).await;
    let reply = read_with_meta(&service, "main.rs", json!({})).await;
    assert!(reply.is_error && reply.text.contains("(a directory that holds your home directory)"), "{}", reply.text);
    let named = read_with_meta(&service, "main.rs", json!({"agent-working-dir": above.display().to_string()})).await;
    assert!(named.is_error && named.text.contains("no workspace"), "{}", named.text);
    service.cancel().await.unwrap();
    // Started in `/`.
    let service = start_plain(std::path::Path::new("/"), &home, &[], &ws).await;
    let reply = read_with_meta(&service, "etc/hostname", json!({})).await;
    assert!(reply.is_error && reply.text.contains("(the file system's root)"), "{}", reply.text);
    service.cancel().await.unwrap();
    // `doctor` says the same.
    let doctor = std::process::Command::new(BIN)
        .arg("doctor")
        .current_dir(&home)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .env("XDG_STATE_HOME", &ws.state_home)
        .env_remove("TOOLBELT_ROOT")
        .env_remove("CLAUDE_PROJECT_DIR")
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&doctor.stdout);
    assert!(report.contains("none: no workspace") && report.contains("(your home directory)"), "{report}");
}

#[tokio::test]
async fn the_host_names_the_workspace_claude_codes_project_dir_codex_and_goose_meta() {
    let ws = Workspace::new();
    let home = ws.root.clone();
    let project = ws.root.join("src");
    // Claude Code: `CLAUDE_PROJECT_DIR`.
    let service = start_plain(&home, &home, &[("CLAUDE_PROJECT_DIR", &project)], &ws).await;
    let reply = read_with_meta(&service, "main.rs", json!({})).await;
    assert!(!reply.is_error && reply.text.contains("fn main()"), "{}", reply.text);
    service.cancel().await.unwrap();
    // Codex: the call's sandbox state names the dir as a file URI; Goose: as a path.
    for meta in [
        json!({"codex/sandbox-state-meta": {"sandboxCwd": format!("file://{}", project.display()), "permissionProfile": {"type": "disabled"}}}),
        json!({"agent-working-dir": project.display().to_string()}),
    ] {
        let service = start_plain(&home, &home, &[], &ws).await;
        let reply = read_with_meta(&service, "main.rs", meta.clone()).await;
        assert!(!reply.is_error && reply.text.contains("fn main()"), "{meta}: {}", reply.text);
        // Named once, kept for the connection's next calls.
        let again = read_with_meta(&service, "main.rs", json!({})).await;
        assert!(!again.is_error, "{}", again.text);
        // The home itself, named by a host, is still not a workspace; nor a missing dir.
        let service2 = start_plain(&home, &home, &[], &ws).await;
        for named in [home.display().to_string(), home.join("missing").display().to_string()] {
            let refused = read_with_meta(&service2, "main.rs", json!({"agent-working-dir": named})).await;
            assert!(refused.is_error && refused.text.contains("no workspace"), "{}", refused.text);
        }
        service2.cancel().await.unwrap();
        service.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn client_roots_that_are_the_disk_or_a_system_dir_are_ignored() {
    let ws = Workspace::new();
    let roots = vec![PathBuf::from("/"), PathBuf::from("/etc"), ws.root.join("src")];
    let handler = RootsClient { roots: Arc::new(Mutex::new(roots)) };
    let service = start(handler, &["serve".into()], &ws.root.join("data"), &ws).await;
    let reply = read(&service, "main.rs").await;
    assert!(!reply.is_error && reply.text.contains("fn main()"), "the usable root is kept: {}", reply.text);
    let etc = read(&service, "/etc/hostname").await;
    assert!(etc.is_error, "`/` and `/etc` are not roots: {}", etc.text);
    service.cancel().await.unwrap();
}
