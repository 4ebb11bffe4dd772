//! `--store postgres://…` against a real PostgreSQL server the tests start (`pg.rs`): the todo
//! and memory rules and results, two servers on different state dirs sharing a plan and
//! memories, a subscriber hearing the other server's change through `LISTEN/NOTIFY`, and a
//! database that goes down and comes back while file operations keep working. (Eight servers
//! writing at once, on both engines: `todo.rs`.)

use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, ResourceUpdatedNotificationParam, SubscribeRequestParams};
use rmcp::service::NotificationContext;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::common::{BIN, Client, Workspace, op, unpack};
use super::pg;

/// A server on `ws` keeping its records in the database `url`.
async fn on(ws: &Workspace, url: &str) -> Client {
    Client::start(ws, &["--store", url]).await
}

fn titles(list: &Value) -> Vec<String> {
    list["todos"].as_array().unwrap().iter().map(|t| t["title"].as_str().unwrap().to_string()).collect()
}

#[tokio::test]
async fn the_rules_and_results_of_todos_and_memories_hold_on_postgres() {
    let Some(server) = pg::server() else { return };
    let url = server.database().await;
    let ws = Workspace::new();
    let client = on(&ws, &url).await;
    let empty = client.todo("read", json!({})).await;
    assert!(!empty.is_error && empty.structured["revision"] == 0, "{}", empty.text);

    let written = client
        .todo(
            "write",
            json!({"todos": [{"title": "plan"}, {"title": "build", "status": "in_progress"}, {"title": "ship"}]}),
        )
        .await;
    assert!(!written.is_error, "{}", written.text);
    let two = client.todo("update", json!({"updates": [{"id": 1, "status": "in_progress"}]})).await;
    assert!(two.is_error && two.text.contains("in_progress"), "one item in progress: {}", two.text);
    let blocked = client.todo("update", json!({"updates": [{"id": 3, "status": "blocked"}]})).await;
    assert!(blocked.is_error && blocked.text.contains("blocked_reason"), "{}", blocked.text);
    assert!(!client.todo("update", json!({"updates": [{"id": 2, "status": "completed"}]})).await.is_error);
    let dropped = client.todo("write", json!({"todos": [{"title": "plan"}]})).await;
    assert!(dropped.is_error && dropped.text.contains("build"), "completed items are kept: {}", dropped.text);
    assert!(!client.todo("update", json!({"updates": [{"id": 3, "status": "completed"}]})).await.is_error);
    let removed = client.todo("write", json!({"todos": [{"id": 2, "title": "build", "status": "completed"}, {"id": 3, "title": "ship", "status": "completed"}]})).await;
    assert!(!removed.is_error, "{}", removed.text);
    let added = client.todo("add", json!({"todos": [{"title": "again"}]})).await;
    assert_eq!(added.structured["todos"][2]["id"], 4, "ids are never reused: {}", added.text);
    assert_eq!(added.structured["revision"], 5);
    let cycle = client.todo("update", json!({"updates": [{"id": 4, "dependencies": [4]}]})).await;
    assert!(cycle.is_error, "{}", cycle.text);

    let stored = client
        .memory("store", json!({"content": "Deploys go through the staging cluster first", "title": "Deploy order", "tags": ["ops", "Deploy"]}))
        .await;
    assert!(!stored.is_error, "{}", stored.text);
    let id = stored.structured["id"].as_i64().unwrap();
    let again = client.memory("store", json!({"content": "Deploys go through the staging cluster first"})).await;
    assert_eq!((again.structured["id"].as_i64(), again.structured["duplicate"].as_bool()), (Some(id), Some(true)));
    for n in 0..25 {
        let content = format!("note {n} about the cache layer and its eviction");
        assert!(!client.memory("store", json!({"content": content, "collection": "cache"})).await.is_error);
    }
    let found = client.memory("search", json!({"query": "staging"})).await;
    assert_eq!(found.structured["total"], 1, "{}", found.text);
    assert!(found.text.contains("**staging**"), "snippets in bold: {}", found.text);
    let title_first = client.memory("search", json!({"query": "deploy"})).await;
    assert_eq!(title_first.structured["results"][0]["id"].as_i64(), Some(id), "{}", title_first.text);
    let paged = client.memory("search", json!({"query": "eviction", "limit": 10, "offset": 20})).await;
    assert_eq!(
        (paged.structured["total"].as_i64(), paged.structured["results"].as_array().map(Vec::len)),
        (Some(25), Some(5))
    );
    let tagged = client.memory("search", json!({"query": "cluster", "tags": ["deploy"]})).await;
    assert_eq!(tagged.structured["total"], 1, "{}", tagged.text);
    let any = client.memory("search", json!({"query": "staging eviction"})).await;
    assert_eq!((any.structured["total"].as_i64(), any.structured["query_mode"].as_str()), (Some(26), Some("any_word")));
    let phrase = client.memory("search", json!({"query": "\"staging cluster\""})).await;
    assert_eq!(phrase.structured["total"], 1, "{}", phrase.text);
    let nothing = client.memory("search", json!({"query": "***"})).await;
    assert!(nothing.is_error, "{}", nothing.text);
    let clash =
        client.memory("update", json!({"id": id, "content": "note 3 about the cache layer and its eviction"})).await;
    assert!(!clash.is_error, "another collection holds that content, not this one: {}", clash.text);
    let gone = client.memory("delete", json!({"id": id})).await;
    assert!(!gone.is_error, "{}", gone.text);
    assert!(client.memory("get", json!({"id": id})).await.is_error);
    let collections = client.memory("list_collections", json!({})).await;
    assert_eq!(collections.structured["collections"][0]["count"], 25, "{}", collections.text);
    client.close().await;
}

/// Records `notifications/resources/updated` with the time each arrived.
#[derive(Clone)]
struct Watcher(tokio::sync::mpsc::UnboundedSender<(String, Instant)>);

impl ClientHandler for Watcher {
    async fn on_resource_updated(&self, params: ResourceUpdatedNotificationParam, _: NotificationContext<RoleClient>) {
        let _ = self.0.send((params.uri, Instant::now()));
    }
}

#[tokio::test]
async fn two_servers_on_different_state_dirs_share_a_plan_and_hear_each_others_changes() {
    let Some(server) = pg::server() else { return };
    let url = server.database().await;
    let (a, b) = (Workspace::new(), Workspace::new());
    let workspace = ["--workspace", "github.com/acme/tool", "--store", &url];
    let on_a = Client::start(&a, &workspace).await;
    let (sender, mut updates) = tokio::sync::mpsc::unbounded_channel();
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.args(["serve", "--root", b.root.to_str().unwrap()])
            .args(workspace)
            .env("XDG_CONFIG_HOME", &b.config_home)
            .env("XDG_STATE_HOME", &b.state_home);
    }))
    .unwrap();
    let watcher = Watcher(sender).serve(transport).await.unwrap();
    #[allow(deprecated)]
    watcher.subscribe(SubscribeRequestParams::new("todo://default")).await.unwrap();

    let mut delays = Vec::new();
    for n in 0..5 {
        let added = on_a.todo("add", json!({"todos": [{"title": format!("step {n}")}]})).await;
        let done = Instant::now();
        assert!(!added.is_error, "{}", added.text);
        let (uri, heard) = tokio::time::timeout(Duration::from_secs(5), updates.recv())
            .await
            .expect("the other server's change")
            .unwrap();
        assert_eq!(uri, "todo://default");
        delays.push(heard.saturating_duration_since(done));
    }
    // Polling each second would put a round's delay anywhere in 0–1 s (three of five under
    // 100 ms: under 1%); a loaded machine may hold back a round or two.
    delays.sort();
    assert!(delays[2] < Duration::from_millis(100), "heard {delays:?} after the changes (polling would take ~1 s)");
    let params = CallToolRequestParams::new("todo_operations")
        .with_arguments(op("read", json!({})).as_object().unwrap().clone());
    let seen = unpack(watcher.call_tool(params).await.unwrap());
    assert_eq!(titles(&seen.structured).len(), 5, "{}", seen.text);
    assert!(!on_a.memory("store", json!({"content": "shared across machines"})).await.is_error);
    let params = CallToolRequestParams::new("memory_operations")
        .with_arguments(op("search", json!({"query": "machines"})).as_object().unwrap().clone());
    assert_eq!(unpack(watcher.call_tool(params).await.unwrap()).structured["total"], 1);
    assert!(!a.state_home.join("toolbelt-mcp/toolbelt.db").exists(), "no SQLite database was made");
    on_a.close().await;
    watcher.cancel().await.unwrap();
}

#[tokio::test]
async fn a_database_that_goes_down_fails_only_store_calls_and_is_reconnected_when_back() {
    let Some(server) = pg::private_server("down") else { return };
    let url = server.url("postgres");
    let ws = Workspace::new();
    let client = on(&ws, &url).await;
    assert!(!client.todo("add", json!({"todos": [{"title": "before"}]})).await.is_error);
    server.stop();
    let down = client.todo("read", json!({})).await;
    assert!(down.is_error && down.text.contains("cannot be reached"), "{}", down.text);
    assert!(down.text.contains("file and terminal operations still work"), "{}", down.text);
    assert!(!down.text.contains("password"), "{}", down.text);
    let file = client.file(json!({"operation": "read_file", "path": "README.md"})).await;
    assert!(!file.is_error, "files work while the database is down: {}", file.text);
    server.launch().unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    let back = loop {
        let read = client.todo("read", json!({})).await;
        if !read.is_error || Instant::now() > deadline {
            break read;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(!back.is_error, "reconnected by itself: {}", back.text);
    assert_eq!(titles(&back.structured), ["before"]);
    client.close().await;
}

#[test]
fn a_store_that_is_not_postgres_is_refused_at_start_without_showing_a_password() {
    let ws = Workspace::new();
    let out = std::process::Command::new(BIN)
        .args(["serve", "--root", ws.root.to_str().unwrap(), "--store", "mysql://bob:hunter2@db/x"])
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .env("XDG_STATE_HOME", &ws.state_home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("postgres://"), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[tokio::test]
async fn searches_fold_accents_and_case_beyond_ascii_and_keep_every_character() {
    let Some(server) = pg::server() else { return };
    let url = server.database().await;
    let ws = Workspace::new();
    let client = on(&ws, &url).await;
    for content in [
        "Le café est fermé le dimanche; la crème brûlée est délicieuse.",
        "Сборка проекта занимает три минуты на CI.",
        "日本語のメモ: ビルドは cargo で行う 🚀",
    ] {
        assert!(!client.memory("store", json!({"content": content})).await.is_error);
    }
    let accents = client.memory("search", json!({"query": "cafe creme"})).await;
    assert_eq!(accents.structured["total"], 1, "diacritics are folded: {}", accents.text);
    let snippet = accents.structured["results"][0]["snippet"].as_str().unwrap().to_string();
    assert!(snippet.contains("**café**"), "{snippet}");
    let cyrillic = client.memory("search", json!({"query": "сборка"})).await;
    assert_eq!(cyrillic.structured["total"], 1, "case folding beyond ASCII: {}", cyrillic.text);
    let japanese = client.memory("search", json!({"query": "cargo"})).await;
    let id = &japanese.structured["results"][0]["id"];
    let got = client.memory("get", json!({"id": id})).await;
    assert_eq!(got.structured["content"], "日本語のメモ: ビルドは cargo で行う 🚀");
    client.close().await;
}
