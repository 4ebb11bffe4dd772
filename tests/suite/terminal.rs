//! `run_command` in the foreground: exit codes, streams, stdin, env, cwd, time limits,
//! cancellation, progress, huge and binary output.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ProgressNotificationParam};
use rmcp::service::{NotificationContext, PeerRequestOptions};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::json;

use super::common::{BIN, Client, Workspace, op, wait_gone};

#[tokio::test]
async fn exit_codes_streams_stdin_env_and_cwd() {
    let ws = Workspace::new();
    let client = Client::start_with_env(&ws, &[], &[("DEPLOY_TOKEN", "hunter2"), ("PLAIN_VAR", "x")]).await;

    let ok = client.run("echo out; echo err >&2").await;
    assert!(!ok.is_error, "{}", ok.text);
    let s = &ok.structured;
    assert_eq!(
        (s["exit_code"].as_i64(), ok.joined("stdout").as_str(), ok.joined("stderr").as_str()),
        (Some(0), "out\n", "err\n")
    );
    assert_eq!((s["status"].as_str(), s["sandbox"].as_str()), (Some("exited"), Some("workspace-write")));
    assert!(ok.text.contains("--- stdout (4 bytes) ---\nout\n") && ok.text.contains("--- stderr (4 bytes) ---\nerr\n"));

    let failed = client.run("echo partial; exit 3").await;
    assert!(failed.is_error, "a non-zero exit is an error result");
    assert_eq!(failed.structured["exit_code"], 3, "it still carries the output: {}", failed.text);
    assert_eq!(failed.joined("stdout"), "partial\n");

    let fed = client.term("run_command", json!({"command": "tr a-z A-Z", "stdin": "hello\n"})).await;
    assert_eq!(fed.joined("stdout"), "HELLO\n");
    let no_stdin = client.term("run_command", json!({"command": "cat; echo done", "timeout_ms": 5000})).await;
    assert_eq!(no_stdin.joined("stdout"), "done\n", "stdin is /dev/null, so `cat` does not wait");

    let env = client
        .term(
            "run_command",
            json!({"command": "echo \"$GREETING ${DEPLOY_TOKEN:-dropped} ${PLAIN_VAR:-dropped} $PAGER\"", "env": ["GREETING=hi"]}),
        )
        .await;
    assert_eq!(env.joined("stdout"), "hi dropped dropped cat\n", "secrets and unlisted variables are dropped");

    let sub = client.term("run_command", json!({"command": "pwd", "cwd": "src"})).await;
    assert_eq!(sub.joined("stdout").as_str().trim_end(), ws.root.join("src").to_str().unwrap());
    let outside = client.term("run_command", json!({"command": "pwd", "cwd": ws.outside.to_str().unwrap()})).await;
    assert!(outside.is_error && outside.text.contains("outside the allowed roots"), "{}", outside.text);
    let not_dir = client.term("run_command", json!({"command": "pwd", "cwd": "README.md"})).await;
    assert!(not_dir.is_error && not_dir.text.contains("not a directory"), "{}", not_dir.text);

    let empty = client.term("run_command", json!({"command": "  "})).await;
    assert!(empty.is_error && empty.text.contains("`command`"), "{}", empty.text);
    let long = client.term("run_command", json!({"command": "true", "timeout_ms": 700_000})).await;
    assert!(long.is_error && long.text.contains("at most 600000"), "{}", long.text);
    let unknown = client.term("run_command", json!({"command": "true", "shell": "zsh"})).await;
    assert!(
        unknown.is_error && unknown.text.contains("`shell` = \"zsh\" is a field of `start_session`"),
        "{}",
        unknown.text
    );
    let bad_env = client.term("run_command", json!({"command": "true", "env": ["NOEQUALS"]})).await;
    assert!(bad_env.is_error && bad_env.text.contains("`env`"), "{}", bad_env.text);
    client.close().await;
}

#[tokio::test]
async fn timeout_ends_the_whole_process_tree_and_keeps_partial_output() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    // A grandchild that ignores SIGTERM: only the SIGKILL after the grace period ends it. If
    // it survived, it would leave a marker 3 s later.
    let started = Instant::now();
    let reply = client
        .term(
            "run_command",
            json!({"command": "trap '' TERM; (sleep 3; touch survived) & echo grandchild started; wait", "timeout_ms": 400}),
        )
        .await;
    let elapsed = started.elapsed();
    assert!(reply.is_error, "{}", reply.text);
    assert_eq!(reply.structured["timed_out"], true);
    assert!(reply.text.contains("timed out after"), "{}", reply.text);
    assert!(reply.joined("stdout").contains("grandchild started"), "partial output is kept: {}", reply.text);
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert!(!ws.root.join("survived").exists(), "the grandchild survived the timeout");
    assert!(elapsed < Duration::from_secs(10), "took {elapsed:?}");
    client.close().await;
}

/// Counts progress notifications.
#[derive(Clone, Default)]
struct Progress(Arc<AtomicUsize>);

impl ClientHandler for Progress {
    async fn on_progress(&self, _params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn progress_while_running_and_cancellation_kills_the_group() {
    let ws = Workspace::new();
    let counter = Progress::default();
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.args(["serve", "--root", ws.root.to_str().unwrap()]).env("XDG_CONFIG_HOME", &ws.config_home);
        cmd.env("XDG_STATE_HOME", &ws.state_home);
    }))
    .unwrap();
    let service = counter.clone().serve(transport).await.unwrap();
    let call = |fields: serde_json::Value| {
        let args = op("run_command", fields).as_object().unwrap().clone();
        ClientRequest::CallToolRequest(CallToolRequest::new(
            CallToolRequestParams::new("terminal_operations").with_arguments(args),
        ))
    };
    let options = PeerRequestOptions::no_options;

    let handle =
        service.send_cancellable_request(call(json!({"command": "sleep 2.3; echo done"})), options()).await.unwrap();
    handle.await_response().await.unwrap();
    assert!(counter.0.load(Ordering::SeqCst) >= 2, "one progress notification per second of running");

    let (command, arg) = super::common::unique_sleep(300);
    let handle = service.send_cancellable_request(call(json!({ "command": command })), options()).await.unwrap();
    let pid = super::common::process_with_args(&["sleep", &arg], 5).await;
    handle.cancel(Some("test".into())).await.unwrap();
    assert!(wait_gone(pid, 5).await, "the cancelled command {pid} kept running");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn ten_megabytes_of_output_stay_within_budget_and_page_completely() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    // 100,000 lines of 100 bytes.
    let reply = client.run("head -c 9900000 /dev/zero | tr '\\0' a | fold -w 99; echo; echo tail-marker >&2").await;
    assert!(!reply.is_error, "{}", &reply.text[..200.min(reply.text.len())]);
    assert!(reply.text.len() <= 64 * 1024, "{} bytes", reply.text.len());
    let structured_size = serde_json::to_string(&reply.structured).unwrap().len();
    assert!(structured_size <= 64 * 1024, "the structured view is held to the budget too: {structured_size}");
    let s = &reply.structured;
    assert_eq!((s["stdout_bytes"].as_u64(), s["truncated"].as_bool()), (Some(10_000_000), Some(true)));
    assert!(reply.text.contains("bytes / ") && reply.text.contains("lines omitted"), "marker with counts");
    assert!(reply.joined("stderr").contains("tail-marker"), "the small stream is shown whole");
    let id = s["session_id"].as_str().unwrap().to_string();

    let (mut since, mut total, mut pages) = (0u64, 0usize, 0);
    loop {
        let page = client.term("read_output", json!({"session_id": id, "since": since, "stream": "stdout"})).await;
        assert!(!page.is_error && page.text.len() <= 64 * 1024, "{}", page.text.len());
        assert!(serde_json::to_string(&page.structured).unwrap().len() <= 64 * 1024);
        let out = page.joined("output");
        assert!(out.lines().all(|l| l.len() == 99 && l.bytes().all(|b| b == b'a')), "page {pages} is exact");
        total += out.len();
        since = page.structured["next"].as_u64().unwrap();
        pages += 1;
        if !page.structured["more"].as_bool().unwrap() {
            break;
        }
    }
    assert_eq!((total, since), (10_000_000, 10_000_000), "every byte was readable in {pages} pages");
    let err = client.term("read_output", json!({"session_id": id, "stream": "stderr", "since": 0})).await;
    assert_eq!(err.joined("output"), "tail-marker\n");
    client.close().await;
}

#[tokio::test]
async fn binary_and_escape_sequences_become_plain_text() {
    let ws = Workspace::new();
    let client = Client::start(&ws, &[]).await;
    let reply = client.run("printf 'a\\000b\\377c\\n'; printf '\\033[1;31mred\\033[0m\\n'").await;
    let s = &reply.structured;
    assert_eq!(s["binary"], true);
    let out = reply.joined("stdout");
    assert!(out.starts_with("ab\u{fffd}c\n") && out.ends_with("red\n"), "{out:?}");
    assert_eq!(s["stdout_bytes"], 21);
    client.close().await;
}
