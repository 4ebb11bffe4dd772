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
