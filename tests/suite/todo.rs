//! `todo_operations` over MCP: every operation and rule, persistence across restarts, two
//! server processes writing at once, the `todo://` resource with subscriptions, and a
//! read-only or unreadable database.

use std::time::Duration;

use rmcp::model::CallToolRequestParams;
use rmcp::model::{
    ReadResourceRequestParams, ResourceContents, ResourceUpdatedNotificationParam, SubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::common::{BIN, Client, Reply, Workspace, on_each_engine, op, unpack};

/// The database file of servers started on `ws`.
fn database(ws: &Workspace) -> std::path::PathBuf {
    ws.state_home.join("toolbelt-mcp/toolbelt.db")
}

/// Ids and statuses of a result's list.
fn statuses(reply: &Value) -> Vec<(u64, String)> {
    reply["todos"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["id"].as_u64().unwrap(), t["status"].as_str().unwrap().to_string()))
        .collect()
}

/// Calls `todo_operations`, expecting a rule error that mentions every one of `needles`, and
/// checks that the list did not change.
async fn refused(client: &Client, operation: &str, fields: Value, needles: &[&str]) {
    let before = client.todo("read", json!({})).await.structured;
    let reply = client.todo(operation, fields.clone()).await;
    assert!(reply.is_error, "{operation} {fields} should fail: {}", reply.text);
    for needle in needles {
        assert!(reply.text.contains(needle), "`{needle}` missing from: {}", reply.text);
    }
    let after = client.todo("read", json!({})).await.structured;
    assert_eq!(before, after, "a refused call changes nothing");
}

async fn every_operation_and_rule(ws: Workspace) {
    let client = Client::start(&ws, &[]).await;

    let empty = client.todo("read", json!({})).await;
    assert!(!empty.is_error, "{}", empty.text);
    assert_eq!(empty.structured["revision"], 0);
    assert_eq!(empty.structured["counts"]["total"], 0);
    assert!(empty.text.contains("todo list `default` is empty"), "{}", empty.text);
    assert!(!database(&ws).exists() || empty.structured["todos"] == json!([]));

    // Records have no sandbox to go beyond: asking to escalate is refused, reads included.
    let escalated = json!({"escalate": true, "justification": "want more"});
    refused(&client, "read", escalated.clone(), &["`escalate` has nothing to do here"]).await;
    refused(
        &client,
        "add",
        json!({"todos": [{"title": "x"}], "escalate": true, "justification": "j"}),
        &["nothing to do here"],
    )
    .await;
    let search = client.memory("search", json!({"query": "x", "escalate": true, "justification": "j"})).await;
    assert!(search.is_error && search.text.contains("nothing to do here"), "{}", search.text);

    let plan = json!({"todos": [
        {"title": "Read the parser", "status": "completed"},
        {"title": "Write the fix", "status": "in_progress", "priority": "high", "dependencies": [1], "progress": 0.25},
        {"title": "Run the tests", "dependencies": [2], "description": "cargo test\nthen clippy"},
    ]});
    let written = client.todo("write", plan).await;
    assert!(!written.is_error, "{}", written.text);
    let s = &written.structured;
    assert_eq!(statuses(s), [(1, "completed".into()), (2, "in_progress".into()), (3, "not_started".into())]);
    assert_eq!(s["counts"], json!({"total": 3, "completed": 1, "in_progress": 1, "not_started": 1, "blocked": 0}));
    assert_eq!((s["revision"].as_i64(), s["list"].as_str()), (Some(1), Some("default")));
    assert!(written.text.contains("todo list `default`: 1 of 3 items completed"), "{}", written.text);
    assert!(written.text.contains("[>] 2. Write the fix (high, 25%) — after 1"), "{}", written.text);
    assert!(written.text.contains("[ ] 3. Run the tests — after 2\n    cargo test…"), "{}", written.text);

    let added = client
        .todo("add", json!({"todos": [{"title": "Deploy", "dependencies": [3]}, {"title": "Tell the team"}]}))
        .await;
    assert!(!added.is_error, "{}", added.text);
    assert_eq!(statuses(&added.structured).iter().map(|(id, _)| *id).collect::<Vec<_>>(), [1, 2, 3, 4, 5]);
    assert!(added.text.starts_with("added 2 items (ids 4, 5)"), "{}", added.text);

    let moved = client
        .todo("update", json!({"updates": [{"id": 2, "status": "completed"}, {"id": 3, "status": "in_progress"}]}))
        .await;
    assert!(!moved.is_error, "{}", moved.text);
    assert_eq!(moved.structured["counts"]["completed"], 2);
    assert_eq!(moved.structured["todos"][1]["progress"], 1.0, "completing sets progress to done");
    assert!(moved.text.contains("item 2: status in_progress → completed"), "{}", moved.text);
    let blocked = client
        .todo(
            "update",
            json!({"updates": [{"id": 4, "status": "blocked", "blocked_reason": "waiting for the deploy key"}]}),
        )
        .await;
    assert!(!blocked.is_error, "{}", blocked.text);
    assert!(blocked.text.contains("[!] 4. Deploy — after 3 — blocked: waiting for the deploy key"), "{}", blocked.text);
    let warned =
        client.todo("update", json!({"updates": [{"id": 5, "title": "Tell the whole team", "priority": "low"}]})).await;
    assert!(warned.structured.get("warnings").is_none(), "{}", warned.text);

    // Every rule, each refused with the item named and nothing changed.
    refused(
        &client,
        "update",
        json!({"updates": [{"id": 5, "status": "in_progress"}]}),
        &[
            "item 3 (\"Run the tests\") and item 5 (\"Tell the whole team\") are both `in_progress`",
            "\n\nunchanged todo list `default`: 2 of 5 items completed, 1 in progress, 1 blocked, 1 not started\n[x] 1.",
        ],
    )
    .await;
    refused(
        &client,
        "add",
        json!({"todos": [{"title": "x", "status": "blocked"}]}),
        &["item 6 (\"x\") is `blocked` without a `blocked_reason`"],
    )
    .await;
    refused(
        &client,
        "add",
        json!({"todos": [{"title": "x", "dependencies": [42]}]}),
        &["item 6 (\"x\") depends on item 42, which is not in the list (ids: 1, 2, 3, 4, 5, 6)"],
    )
    .await;
    refused(&client, "update", json!({"updates": [{"id": 1, "dependencies": [4]}]}), &["cycle: 1 → 4 → 3 → 2 → 1"])
        .await;
    refused(&client, "update", json!({"updates": [{"id": 3, "progress": 1.5}]}), &["`progress` 1.5", "from 0 to 1"])
        .await;
    refused(
        &client,
        "update",
        json!({"updates": [{"id": 9, "status": "completed"}]}),
        &["no item 9 in list `default` (ids: 1, 2, 3, 4, 5)", "unchanged todo list `default`"],
    )
    .await;
    refused(
        &client,
        "write",
        json!({"todos": [{"title": "Start over"}]}),
        &["`write` would drop completed item 1 (\"Read the parser\")", "another `list` name"],
    )
    .await;
    refused(&client, "write", json!({"todos": [{"id": 1, "title": "Something else", "status": "completed"}, {"id": 2, "title": "Write the fix"}]}), &[
        "`write` would drop completed item 1 (\"Read the parser\")",
    ])
    .await;
    refused(&client, "add", json!({"todos": [{"title": "x", "id": 2}]}), &["item 2 already exists"]).await;
    refused(&client, "add", json!({"todos": [{"title": ""}]}), &["empty `title`"]).await;
    refused(
        &client,
        "add",
        json!({"todos": [{"title": "x", "blocked_reason": "r"}]}),
        &["has a `blocked_reason` but is `not_started`"],
    )
    .await;
    refused(
        &client,
        "add",
        json!({"todos": [{"title": "x", "status": "done"}]}),
        &["unknown variant `done`", "Accepted fields"],
    )
    .await;
    refused(&client, "read", json!({"list": "../etc"}), &["`list` = `../etc` is not a valid name"]).await;
    refused(&client, "update", json!({"updates": []}), &["`updates` is empty"]).await;

    // Lists are separate by name, and keeping completed items lets `write` replace the rest.
    let other = client.todo("write", json!({"list": "release", "todos": [{"title": "Tag it"}]})).await;
    assert_eq!(
        (other.structured["list"].as_str(), other.structured["counts"]["total"].as_u64()),
        (Some("release"), Some(1))
    );
    let kept = client
        .todo(
            "write",
            json!({"todos": [
                {"id": 1, "title": "Read the parser", "status": "completed"},
                {"id": 2, "title": "Write the fix", "status": "completed"},
                {"title": "Ship it"},
            ]}),
        )
        .await;
    assert!(!kept.is_error, "{}", kept.text);
    assert_eq!(
        statuses(&kept.structured).iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [1, 2, 6],
        "ids are never reused"
    );
    assert!(kept.text.contains("dropped 3 earlier items"), "{}", kept.text);
    assert_eq!(client.todo("read", json!({"list": "release"})).await.structured["counts"]["total"], 1);
    client.close().await;
}

async fn lists_persist_across_restarts_per_workspace(ws: Workspace) {
    let client = Client::start(&ws, &[]).await;
    let written = client.todo("write", json!({"list": "plan", "todos": [{"title": "Survive a restart"}]})).await;
    assert!(!written.is_error, "{}", written.text);
    client.close().await;

    let again = Client::start(&ws, &[]).await;
    let read = again.todo("read", json!({"list": "plan"})).await;
    assert_eq!(read.structured["todos"][0]["title"], "Survive a restart");
    assert_eq!(read.structured["revision"], 1);
    again.close().await;

    // Another root, same state dir: its own lists.
    let elsewhere = ws.root.join("src");
    let args = ["serve".to_string(), "--root".into(), elsewhere.display().to_string()];
    let other = Client::spawn_with_env(&args, &ws.config_home, None, &ws.store_env()).await;
    assert_eq!(other.todo("read", json!({"list": "plan"})).await.structured["counts"]["total"], 0);
    other.close().await;
}

async fn two_servers_add_at_once_without_losing_any(ws: Workspace) {
    let (a, b) = (Client::start(&ws, &[]).await, Client::start(&ws, &[]).await);
    let adds = async |client: &Client, who: &str| {
        for n in 0..25 {
            let reply = client.todo("add", json!({"todos": [{"title": format!("{who} {n}")}]})).await;
            assert!(!reply.is_error, "{}", reply.text);
            let stored = client.memory("store", json!({"content": format!("{who} remembers {n}")})).await;
            assert!(!stored.is_error, "{}", stored.text);
        }
    };
    tokio::join!(adds(&a, "a"), adds(&b, "b"));
    let list = a.todo("read", json!({})).await.structured;
    let ids: Vec<u64> = statuses(&list).iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, (1..=50).collect::<Vec<_>>(), "every add got its own id and none was lost");
    assert_eq!(list["revision"], 50);
    let collections = b.memory("list_collections", json!({})).await.structured;
    assert_eq!(collections["collections"][0]["count"], 50, "{collections}");
    a.close().await;
    b.close().await;
}

/// Records `notifications/resources/updated`.
#[derive(Clone)]
struct Watcher(tokio::sync::mpsc::UnboundedSender<String>);

impl ClientHandler for Watcher {
    async fn on_resource_updated(&self, params: ResourceUpdatedNotificationParam, _: NotificationContext<RoleClient>) {
        let _ = self.0.send(params.uri);
    }
}

/// Calls `todo_operations` on a client with its own handler.
async fn todo_on<H: ClientHandler>(service: &RunningService<RoleClient, H>, operation: &str, fields: Value) -> Reply {
    let params = CallToolRequestParams::new("todo_operations")
        .with_arguments(op(operation, fields).as_object().unwrap().clone());
    unpack(service.call_tool(params).await.unwrap())
}

fn text_of(contents: &ResourceContents) -> (String, String) {
    match contents {
        ResourceContents::TextResourceContents { text, mime_type, .. } => {
            (mime_type.clone().unwrap_or_default(), text.clone())
        }
        other => panic!("not text: {other:?}"),
    }
}

async fn resource_reads_and_notifies_subscribers(ws: Workspace) {
    let (sender, mut updates) = tokio::sync::mpsc::unbounded_channel();
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.args(["serve", "--root", ws.root.to_str().unwrap()])
            .envs(ws.store_env())
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home);
    }))
    .unwrap();
    let service = Watcher(sender).serve(transport).await.unwrap();
    let caps = service.peer_info().unwrap().capabilities.resources.clone().unwrap();
    assert_eq!(caps.subscribe, Some(true));

    let listed = service.list_all_resources().await.unwrap();
    assert!(listed.iter().any(|r| r.uri == "todo://default"), "{listed:?}");
    let templates = service.list_all_resource_templates().await.unwrap();
    assert!(templates.iter().any(|t| t.uri_template == "todo://{list}"), "{templates:?}");

    #[allow(deprecated)]
    service.subscribe(SubscribeRequestParams::new("todo://default")).await.unwrap();
    let written = todo_on(&service, "write", json!({"todos": [{"title": "Watch me", "status": "in_progress"}]})).await;
    assert!(!written.is_error, "{}", written.text);
    let heard = tokio::time::timeout(Duration::from_secs(5), updates.recv()).await.expect("an update notification");
    assert_eq!(heard.as_deref(), Some("todo://default"));
    todo_on(&service, "write", json!({"list": "other", "todos": [{"title": "Unwatched"}]})).await;

    let read = service.read_resource(ReadResourceRequestParams::new("todo://default")).await.unwrap();
    let contents = read.contents;
    let (json_type, json_text) = text_of(&contents[0]);
    assert_eq!(json_type, "application/json");
    let json: Value = serde_json::from_str(&json_text).unwrap();
    assert_eq!(json["todos"][0]["title"], "Watch me");
    assert_eq!(json["workspace"], ws.root.display().to_string());
    let (md_type, markdown) = text_of(&contents[1]);
    assert_eq!(md_type, "text/markdown");
    assert!(markdown.contains("- [>] 1. Watch me"), "{markdown}");
    let listed = service.list_all_resources().await.unwrap();
    assert!(listed.iter().any(|r| r.uri == "todo://other"), "{listed:?}");
    let missing = service.read_resource(ReadResourceRequestParams::new("todo://no/such")).await.unwrap_err();
    assert!(missing.to_string().contains("no resource `todo://no/such`"), "{missing}");

    todo_on(&service, "update", json!({"updates": [{"id": 1, "status": "completed"}]})).await;
    let heard = tokio::time::timeout(Duration::from_secs(5), updates.recv()).await.expect("a second notification");
    assert_eq!(heard.as_deref(), Some("todo://default"), "the unsubscribed list sent nothing");

    // Another server process on the same database: its change is found by polling.
    let other = Client::start(&ws, &[]).await;
    let added = other.todo("add", json!({"todos": [{"title": "From the other window"}]})).await;
    assert!(!added.is_error, "{}", added.text);
    let heard =
        tokio::time::timeout(Duration::from_secs(5), updates.recv()).await.expect("a cross-process notification");
    assert_eq!(heard.as_deref(), Some("todo://default"));
    other.close().await;
    assert!(
        tokio::time::timeout(Duration::from_millis(2500), updates.recv()).await.is_err(),
        "one change, one notification"
    );
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn read_only_or_unreadable_database_is_a_clear_error() {
    use std::os::unix::fs::PermissionsExt;
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    client.todo("write", json!({"todos": [{"title": "Before"}]})).await;
    client.close().await;

    let db = database(&ws);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o444)).unwrap();
    let client = Client::start(&ws, &[]).await;
    let read = client.todo("read", json!({})).await;
    assert_eq!(read.structured["todos"][0]["title"], "Before", "reads still work: {}", read.text);
    let refused = client.todo("add", json!({"todos": [{"title": "After"}]})).await;
    assert!(refused.is_error, "{}", refused.text);
    assert!(refused.text.contains(&format!("`{}` is read-only", db.display())), "{}", refused.text);
    assert!(refused.text.contains("chmod u+w"), "{}", refused.text);
    let memory = client.memory("store", json!({"content": "x"})).await;
    assert!(memory.is_error && memory.text.contains("is read-only"), "{}", memory.text);
    client.close().await;
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();

    // Not a database at all: named, explained, and left as it was.
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", db.display()));
    }
    let garbage = b"this is not a sqlite database, it is a grocery list".repeat(100);
    std::fs::write(&db, &garbage).unwrap();
    let client = Client::start(&ws, &[]).await;
    let broken = client.todo("read", json!({})).await;
    assert!(broken.is_error, "{}", broken.text);
    assert!(broken.text.contains(&format!("`{}` is unreadable", db.display())), "{}", broken.text);
    assert!(broken.text.contains("move it aside"), "{}", broken.text);
    assert!(client.memory("search", json!({"query": "x"})).await.is_error);
    let files = client.file(json!({"operation": "list_dir", "path": "."})).await;
    assert!(!files.is_error, "other tools keep working");
    client.close().await;
    assert_eq!(std::fs::read(&db).unwrap(), garbage, "never reset or overwritten");
}

async fn eight_servers_writing_one_list_and_one_collection_at_once_lose_nothing(ws: Workspace) {
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(Client::start(&ws, &[]).await);
    }
    let writes = clients.iter().enumerate().map(|(n, client)| async move {
        for round in 0..5 {
            let added = client.todo("add", json!({"todos": [{"title": format!("{n}-{round}")}]})).await;
            assert!(!added.is_error, "{}", added.text);
            let content = format!("memory {n}-{round}");
            assert!(!client.memory("store", json!({"content": content})).await.is_error);
        }
    });
    futures::future::join_all(writes).await;
    let list = clients[0].todo("read", json!({})).await.structured;
    let mut ids: Vec<u64> = list["todos"].as_array().unwrap().iter().map(|t| t["id"].as_u64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..=40).collect::<Vec<_>>(), "every add got its own id and none was lost");
    assert_eq!(list["revision"], 40);
    let collections = clients[1].memory("list_collections", json!({})).await.structured;
    assert_eq!(collections["collections"][0]["count"], 40, "{collections}");
    for client in clients {
        client.close().await;
    }
}

on_each_engine!(
    every_operation_and_rule,
    lists_persist_across_restarts_per_workspace,
    two_servers_add_at_once_without_losing_any,
    eight_servers_writing_one_list_and_one_collection_at_once_lose_nothing,
    resource_reads_and_notifies_subscribers
);
