//! `memory_operations` over MCP: every operation, scopes, dedupe, ranked and paged search with
//! FTS syntax and unicode, 10,000 memories, and the `memory://` resources (with a 2026-07-28
//! `subscriptions/listen` subscriber).

use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, ProtocolVersion, ReadResourceRequestParams,
    ResourceContents, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use serde_json::{Value, json};

use super::common::{BIN, Client, Workspace, on_each_engine, unpack};

/// Calls `memory_operations`, asserting success.
async fn ok(client: &Client, operation: &str, fields: Value) -> Value {
    let reply = client.memory(operation, fields.clone()).await;
    assert!(!reply.is_error, "{operation} {fields}: {}", reply.text);
    reply.structured
}

/// Calls `memory_operations`, asserting an error; returns its text.
async fn err(client: &Client, operation: &str, fields: Value) -> String {
    let reply = client.memory(operation, fields.clone()).await;
    assert!(reply.is_error, "{operation} {fields} should fail: {}", reply.text);
    reply.text
}

fn ids(found: &Value) -> Vec<i64> {
    found["results"].as_array().unwrap().iter().map(|r| r["id"].as_i64().unwrap()).collect()
}

async fn every_operation_with_scopes_and_dedupe(ws: Workspace) {
    let client = Client::start(&ws, &[]).await;

    let build = ok(&client, "store", json!({"content": "Build with `cargo build --release`; the binary lands in target/release.", "title": "How to build", "tags": ["Build", "cargo"], "collection": "howto"})).await;
    let id = build["id"].as_i64().unwrap();
    assert_eq!(
        (build["collection"].as_str(), build["scope"].as_str(), build["duplicate"].as_bool()),
        (Some("howto"), Some("workspace"), Some(false))
    );
    let again = client.memory("store", json!({"content": "  Build with `cargo build --release`; the binary lands in target/release.\n", "collection": "howto"})).await;
    assert_eq!((again.structured["id"].as_i64(), again.structured["duplicate"].as_bool()), (Some(id), Some(true)));
    assert!(again.text.contains(&format!("already stored as memory {id}")), "{}", again.text);
    let elsewhere = ok(&client, "store", json!({"content": "Build with `cargo build --release`; the binary lands in target/release.", "collection": "other"})).await;
    assert_ne!(elsewhere["id"].as_i64(), Some(id), "dedupe is per collection");
    let decision = ok(&client, "store", json!({"content": "We chose SQLite FTS5 over an embedding index: no model download, BM25 is good enough for notes.", "tags": ["decision"]})).await;
    let global = ok(&client, "store", json!({"content": "The user prefers concise answers and British spelling.", "scope": "global", "collection": "prefs"})).await;
    assert_eq!(global["scope"], "global");

    let got = client.memory("get", json!({"id": id})).await;
    assert_eq!(got.structured["content"], "Build with `cargo build --release`; the binary lands in target/release.");
    assert_eq!(got.structured["tags"], json!(["build", "cargo"]));
    assert_eq!(got.structured["title"], "How to build");
    assert!(got.text.contains("memory") && got.text.contains("\"How to build\" [build, cargo]"), "{}", got.text);

    let found = client.memory("search", json!({"query": "release binary"})).await;
    assert!(!found.is_error, "{}", found.text);
    assert_eq!(found.structured["total"], 2);
    assert_eq!(found.structured["query_mode"], "fts");
    let first = &found.structured["results"][0];
    assert!(first["snippet"].as_str().unwrap().contains("**release**"), "{first}");
    assert!(first.get("content").is_none(), "results are snippets, not whole memories");
    assert!(found.text.contains("2 memories match `release binary`"), "{}", found.text);
    let titled = ok(&client, "search", json!({"query": "build"})).await;
    assert_eq!(ids(&titled)[0], id, "a title match ranks first");
    assert_eq!(
        ids(&ok(&client, "search", json!({"query": "build", "collection": "other"})).await),
        [elsewhere["id"].as_i64().unwrap()]
    );
    assert_eq!(ids(&ok(&client, "search", json!({"query": "build", "tags": ["CARGO"]})).await), [id]);
    assert_eq!(
        ok(&client, "search", json!({"query": "british"})).await["total"],
        0,
        "global memories stay out of workspace searches"
    );
    assert_eq!(
        ids(&ok(&client, "search", json!({"query": "british", "scope": "global"})).await),
        [global["id"].as_i64().unwrap()]
    );
    let any = ok(&client, "search", json!({"query": "sqlite tarball"})).await;
    assert_eq!((any["query_mode"].as_str(), ids(&any)), (Some("any_word"), vec![decision["id"].as_i64().unwrap()]));

    let updated = ok(&client, "update", json!({"id": id, "content": "Build with `make`.", "tags": ["make"]})).await;
    assert_eq!(updated["tags"], json!(["make"]));
    assert_eq!(ok(&client, "search", json!({"query": "make"})).await["total"], 1, "re-indexed");
    assert_eq!(ids(&ok(&client, "search", json!({"query": "release"})).await), [elsewhere["id"].as_i64().unwrap()]);
    assert!(err(&client, "update", json!({"id": id})).await.contains("nothing to update"));
    assert!(
        err(&client, "update", json!({"id": elsewhere["id"], "content": "Build with `make`.", "collection": "x"}))
            .await
            .contains("`collection` = \"x\" is a field of `store`, `search`, not of `update`")
    );

    let collections = ok(&client, "list_collections", json!({})).await;
    let names: Vec<(&str, i64)> = collections["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["count"].as_i64().unwrap()))
        .collect();
    assert_eq!(names, [("default", 1), ("howto", 1), ("other", 1)]);
    assert_eq!(ok(&client, "list_collections", json!({"scope": "global"})).await["collections"][0]["name"], "prefs");

    let deleted = ok(&client, "delete", json!({"id": id})).await;
    assert_eq!(deleted["deleted"], true);
    assert!(
        err(&client, "get", json!({"id": id}))
            .await
            .contains(&format!("no memory {id} in this workspace or the global scope"))
    );
    assert!(err(&client, "delete", json!({"id": id})).await.contains("no memory"));

    // Bad input, each with what to send instead.
    assert!(err(&client, "store", json!({"content": "   "})).await.contains("`content` is empty"));
    assert!(
        err(&client, "store", json!({"content": "x".repeat(100_001)})).await.contains("over the 100000-byte limit")
    );
    assert!(
        err(&client, "store", json!({"content": "x", "collection": "a b"}))
            .await
            .contains("`collection` = `a b` is not a valid name")
    );
    assert!(err(&client, "store", json!({"content": "x", "scope": "team"})).await.contains("unknown variant `team`"));
    assert!(err(&client, "search", json!({"query": "x", "limit": 0})).await.contains("1 to 100"));
    assert!(err(&client, "search", json!({"query": "!!! ???"})).await.contains("no words to search for"));
    client.close().await;

    // Another workspace sees the global memory but not this one's.
    let args = ["serve".to_string(), "--root".into(), ws.root.join("src").display().to_string()];
    let other = Client::spawn_with_env(&args, &ws.config_home, None, &ws.store_env()).await;
    assert!(err(&other, "get", json!({"id": decision["id"]})).await.contains("no memory"));
    assert_eq!(ok(&other, "get", json!({"id": global["id"]})).await["scope"], "global");
    assert_eq!(ok(&other, "search", json!({"query": "concise", "scope": "global"})).await["total"], 1);
    other.close().await;
}

#[tokio::test]
async fn fts_syntax_characters_and_unicode() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    ok(
        &client,
        "store",
        json!({"content": "Deploy the staging build with ./deploy.sh --env=staging, then tail the logs."}),
    )
    .await;
    ok(&client, "store", json!({"content": "Le café est fermé le dimanche; la crème brûlée est délicieuse."})).await;
    ok(&client, "store", json!({"content": "Сборка проекта занимает три минуты на CI."})).await;
    ok(&client, "store", json!({"content": "日本語のメモ: ビルドは cargo で行う 🚀"})).await;
    ok(&client, "store", json!({"content": "The parser handles near-miss tokens and pre-release versions."})).await;

    for (query, reads_as_fts) in [
        ("\"staging build\"", true),
        ("stag*", true),
        ("staging NOT dimanche", true),
        ("NEAR(staging logs, 10)", true),
        ("deploy.sh", false),
        ("NEAR", true),
        ("\"unbalanced staging", false),
        ("staging*)", false),
        ("-staging", false),
        ("--env=staging", false),
        ("(staging", false),
        ("env:staging", false),
        ("near-miss", false),
        ("pre-release \"", false),
    ] {
        let found = client.memory("search", json!({"query": query})).await;
        assert!(!found.is_error, "`{query}` must not fail: {}", found.text);
        let mode = found.structured["query_mode"].as_str().unwrap();
        assert_eq!(mode == "fts", reads_as_fts, "`{query}` read as {mode}: {}", found.text);
        assert!(found.structured["total"].as_i64().unwrap() >= 1, "`{query}` finds its memory: {}", found.text);
    }
    let near = ok(&client, "search", json!({"query": "NEAR"})).await;
    assert_eq!(near["total"], 1, "the word `near` itself: {near}");
    let hyphen = ok(&client, "search", json!({"query": "near-miss"})).await;
    assert!(hyphen["results"][0]["snippet"].as_str().unwrap().contains("**near**-**miss**"), "{hyphen}");

    let accents = ok(&client, "search", json!({"query": "cafe creme"})).await;
    assert_eq!(accents["total"], 1, "diacritics are folded: {accents}");
    assert!(accents["results"][0]["snippet"].as_str().unwrap().contains("**café**"), "{accents}");
    let cyrillic = ok(&client, "search", json!({"query": "сборка"})).await;
    assert_eq!(cyrillic["total"], 1, "case folding beyond ASCII: {cyrillic}");
    let japanese = ok(&client, "search", json!({"query": "cargo"})).await;
    assert!(japanese["results"][0]["snippet"].as_str().unwrap().contains("🚀"), "{japanese}");
    let got = ok(&client, "get", json!({"id": japanese["results"][0]["id"]})).await;
    assert_eq!(got["content"], "日本語のメモ: ビルドは cargo で行う 🚀");
    client.close().await;
}

async fn ten_thousand_memories_stay_ranked_and_paged(ws: Workspace) {
    let client = Client::start(&ws, &[]).await;
    let topics = ["parser", "network", "storage", "render", "deploy"];
    for batch in 0..100 {
        let mut calls = tokio::task::JoinSet::new();
        for n in 0..100 {
            let i = batch * 100 + n;
            let topic = topics[i % topics.len()];
            let content = format!("note {i}: the {topic} module needs work item {i}; see ticket T{i}");
            let args =
                json!({"operation": "store", "content": content, "tags": [topic], "collection": format!("c{}", i % 3)});
            let params =
                CallToolRequestParams::new("memory_operations").with_arguments(args.as_object().unwrap().clone());
            let peer = client.service.peer().clone();
            calls.spawn(async move { unpack(peer.call_tool(params).await.unwrap()) });
        }
        for reply in calls.join_all().await {
            assert!(!reply.is_error, "{}", reply.text);
        }
    }
    let counted: i64 = ok(&client, "list_collections", json!({})).await["collections"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["count"].as_i64().unwrap())
        .sum();
    assert_eq!(counted, 10_000);

    let found = client.memory("search", json!({"query": "storage"})).await;
    assert_eq!(found.structured["total"], 2000);
    assert_eq!(found.structured["results"].as_array().unwrap().len(), 10, "small by default");
    assert_eq!(found.structured["next_offset"], 10);
    assert!(found.text.len() < 4000, "a page stays small: {} bytes", found.text.len());
    let exact = ok(&client, "search", json!({"query": "T4242"})).await;
    assert_eq!(exact["total"], 1);
    assert!(exact["results"][0]["snippet"].as_str().unwrap().contains("**T4242**"), "{exact}");
    let last = ok(
        &client,
        "search",
        json!({"query": "storage", "collection": "c1", "tags": ["storage"], "limit": 100, "offset": 600}),
    )
    .await;
    assert_eq!(last["total"], 667);
    assert_eq!(last["results"].as_array().unwrap().len(), 67);
    assert!(last.get("next_offset").is_none(), "{last}");

    // A word in every memory: 10,000 match, all counted and ranked.
    let every = ok(&client, "search", json!({"query": "module"})).await;
    assert_eq!(every["total"], 10_000);
    assert!(every.get("capped").is_none(), "{}", every["total"]);
    // One more: only the newest 10,000 are scored (a common word would otherwise score them
    // all), the best of them first, and the result says so.
    let best = ok(&client, "store", json!({"content": "module module module: the newest and the best match"})).await;
    let capped = client.memory("search", json!({"query": "module"})).await;
    assert_eq!((&capped.structured["total"], &capped.structured["capped"]), (&json!(10_000), &json!(true)));
    assert_eq!(capped.structured["results"][0]["id"], best["id"], "{}", capped.text);
    assert_eq!(capped.structured["next_offset"], 10);
    assert!(
        capped.text.starts_with("more than 10000 memories match `module`, the newest 10000 ranked")
            && capped.text.contains("add words, a `collection` or `tags`"),
        "{}",
        capped.text
    );
    let beyond = ok(&client, "search", json!({"query": "module", "offset": 10_000})).await;
    assert_eq!(
        (&beyond["total"], &beyond["capped"], beyond["results"].as_array().unwrap().len()),
        (&json!(10_000), &json!(true), 0)
    );
    client.close().await;
}

async fn collections_are_resources_with_modern_subscriptions(ws: Workspace) {
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.args(["serve", "--root", ws.root.to_str().unwrap()])
            .envs(ws.store_env())
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home);
    }))
    .unwrap();
    let info = ClientConfig::new(ClientCapabilities::default(), rmcp::model::Implementation::new("test", "0"));
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let service = info.serve_with_lifecycle(transport, lifecycle).await.unwrap();
    let filter = SubscriptionFilter::builder().resource_subscription("memory://notes").build();
    let mut subscription = service.peer().listen(filter).await.unwrap();

    let store = |content: &str, collection: &str| {
        let args = json!({"operation": "store", "content": content, "collection": collection});
        let params = CallToolRequestParams::new("memory_operations").with_arguments(args.as_object().unwrap().clone());
        let peer = service.peer().clone();
        async move { unpack(peer.call_tool(params).await.unwrap()) }
    };
    assert!(!store("ignored: another collection", "misc").await.is_error);
    assert!(!store("remember the milk", "notes").await.is_error);
    let heard =
        tokio::time::timeout(Duration::from_secs(5), subscription.next()).await.expect("a notification").unwrap();
    match heard {
        Some(ServerNotification::ResourceUpdatedNotification(update)) => {
            assert_eq!(update.params.uri, "memory://notes")
        }
        other => panic!("expected an update of memory://notes, got {other:?}"),
    }

    let listed = service.peer().list_all_resources().await.unwrap();
    let uris: Vec<&str> = listed.iter().map(|r| r.uri.as_str()).collect();
    assert!(uris.contains(&"memory://notes") && uris.contains(&"memory://misc"), "{uris:?}");
    let read = service.peer().read_resource(ReadResourceRequestParams::new("memory://notes")).await.unwrap();
    let ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else { panic!("text") };
    assert!(text.contains("# Memories: `notes`") && text.contains("remember the milk"), "{text}");
    drop(subscription);
    service.cancel().await.unwrap();
}

on_each_engine!(
    every_operation_with_scopes_and_dedupe,
    ten_thousand_memories_stay_ranked_and_paged,
    collections_are_resources_with_modern_subscriptions
);
