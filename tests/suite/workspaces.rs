//! Which workspace todo lists and memories belong to: two clones of one repository (remote
//! URLs spelled differently) share them, another repository does not, `--workspace` names one,
//! and records kept under a root's path follow it once it has a remote, losing nothing.

use std::path::Path;

use serde_json::json;

use super::common::{BIN, Client, Workspace};

/// Makes `root` a git repository, with remote `origin` at `url` if given.
fn git_init(root: &Path, url: Option<&str>) {
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").args(args).current_dir(root).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    git(&["init", "-q"]);
    if let Some(url) = url {
        git(&["remote", "add", "origin", url]);
    }
}

/// A server on `ws` keeping its records in `state`.
async fn server(ws: &Workspace, state: &Path, extra: &[&str]) -> Client {
    let mut args = vec!["--state-dir", state.to_str().unwrap()];
    args.extend(extra);
    Client::start(ws, &args).await
}

/// The titles of the default todo list.
async fn titles(client: &Client) -> Vec<String> {
    let list = client.todo("read", json!({})).await;
    assert!(!list.is_error, "{}", list.text);
    list.structured["todos"].as_array().unwrap().iter().map(|t| t["title"].as_str().unwrap().to_string()).collect()
}

/// How many memories a search for `word` finds.
async fn found(client: &Client, word: &str) -> u64 {
    let reply = client.memory("search", json!({"query": word})).await;
    assert!(!reply.is_error, "{}", reply.text);
    reply.structured["total"].as_u64().unwrap()
}

/// `(workspace, count)` of the rows of `table`.
fn keys(state: &Path, table: &str) -> Vec<(String, i64)> {
    let db = rusqlite::Connection::open(state.join("toolbelt.db")).unwrap();
    let sql = format!("SELECT workspace, count(*) FROM {table} GROUP BY workspace ORDER BY workspace");
    let mut statement = db.prepare(&sql).unwrap();
    statement.query_map([], |row| Ok((row.get(0)?, row.get(1)?))).unwrap().map(Result::unwrap).collect()
}

#[tokio::test]
async fn two_clones_of_one_repository_share_plans_and_memories_and_others_do_not() {
    let (a, b, other) = (Workspace::new(), Workspace::new(), Workspace::new());
    let state = a.state_home.join("shared");
    git_init(&a.root, Some("git@github.com:acme/tool.git"));
    git_init(&b.root, Some("https://github.com/acme/tool"));
    git_init(&other.root, Some("git@github.com:acme/other.git"));

    let on_a = server(&a, &state, &[]).await;
    assert!(!on_a.todo("add", json!({"todos": [{"title": "ship the release"}]})).await.is_error);
    let stored = on_a.memory("store", json!({"content": "the build uses zigbuild for macOS"})).await;
    assert!(!stored.is_error, "{}", stored.text);
    on_a.close().await;

    let on_b = server(&b, &state, &[]).await;
    assert_eq!(titles(&on_b).await, ["ship the release"], "the other clone shares the plan");
    assert_eq!(found(&on_b, "zigbuild").await, 1, "and the memories");
    on_b.close().await;

    let on_other = server(&other, &state, &[]).await;
    assert!(titles(&on_other).await.is_empty(), "another repository has its own");
    assert_eq!(found(&on_other, "zigbuild").await, 0);
    on_other.close().await;
    // A name given explicitly wins over the remote; the normalised remote is a name too.
    let named = server(&other, &state, &["--workspace", "github.com/acme/tool"]).await;
    assert_eq!(titles(&named).await, ["ship the release"]);
    named.close().await;
    let env_named =
        Client::start_with_env(&other, &["--state-dir", state.to_str().unwrap()], &[("TOOLBELT_WORKSPACE", "team-x")])
            .await;
    assert!(titles(&env_named).await.is_empty());
    env_named.close().await;
    assert_eq!(keys(&state, "todo_lists"), [("github.com/acme/tool".to_string(), 1)]);
}

#[tokio::test]
async fn records_kept_under_the_path_follow_the_root_to_its_remote_and_none_are_lost() {
    let (first, second) = (Workspace::new(), Workspace::new());
    let state = first.state_home.join("shared");
    git_init(&first.root, None);
    git_init(&second.root, None);
    for (ws, title) in [(&first, "from the first clone"), (&second, "from the second clone")] {
        let client = server(ws, &state, &[]).await;
        assert!(!client.todo("add", json!({"todos": [{"title": title}]})).await.is_error);
        let memory = format!("{title} remembers gravel");
        assert!(!client.memory("store", json!({"content": memory})).await.is_error);
        assert!(!client.memory("store", json!({"content": "a shared fact about gravel"})).await.is_error);
        client.close().await;
    }
    let path_key = |ws: &Workspace| ws.root.display().to_string();
    assert_eq!(keys(&state, "todo_lists"), {
        let mut both = vec![(path_key(&first), 1), (path_key(&second), 1)];
        both.sort();
        both
    });

    // Both get the remote (credentials in the URL never reach the key).
    let remote = |ws: &Workspace, url: &str| {
        let out = std::process::Command::new("git")
            .args(["remote", "add", "origin", url])
            .current_dir(&ws.root)
            .output()
            .unwrap();
        assert!(out.status.success());
    };
    remote(&first, "https://ci-bot:tok3n@Git.Example.com/acme/tool.git");
    remote(&second, "git@git.example.com:acme/tool");
    let client = server(&first, &state, &[]).await;
    assert_eq!(titles(&client).await, ["from the first clone"], "the list followed the root");
    assert_eq!(found(&client, "gravel").await, 2);
    client.close().await;
    let client = server(&second, &state, &[]).await;
    assert_eq!(titles(&client).await, ["from the first clone"], "the workspace's list is the first one adopted");
    assert_eq!(found(&client, "gravel").await, 3, "its own memory joined, the duplicate fact did not");
    client.close().await;
    let lists = keys(&state, "todo_lists");
    assert_eq!(lists, [(path_key(&second), 1), ("git.example.com/acme/tool".to_string(), 1)], "nothing lost");
    let memories = keys(&state, "memories");
    assert_eq!(memories, [(path_key(&second), 1), ("git.example.com/acme/tool".to_string(), 3)]);
    let all = format!("{lists:?}{memories:?}");
    assert!(!all.contains("tok3n") && !all.contains("ci-bot"), "{all}");
}

#[test]
fn an_empty_workspace_name_is_refused_at_start() {
    let ws = Workspace::new();
    let out = std::process::Command::new(BIN)
        .args(["serve", "--root", ws.root.to_str().unwrap(), "--workspace", " "])
        .env("XDG_CONFIG_HOME", &ws.config_home)
        .env("XDG_STATE_HOME", &ws.state_home)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("workspace") && stderr.contains("e.g."), "{stderr}");
}
