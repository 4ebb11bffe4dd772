//! `delegate` end to end: the real server runs a sub-agent in its own process against a
//! scripted model (both wire formats) configured as `[delegate]`; the sub-agent's edit is the
//! caller's to see and undo, its questions reach the caller's client naming it, a read-only
//! delegation cannot write, cancelling the call ends its commands, its turn budget stops it
//! with a clear result, nesting is bounded, and without a model source the operation is absent.
//! A client that samples with tools (answering from a script here) is the model when it offers
//! one, with or without `[delegate]`.

#![allow(deprecated, reason = "sampling is deprecated by SEP-2577 but current hosts still offer it")]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestParams, CreateMessageResult,
    Implementation,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

use super::common::{BIN, Reply, Workspace};
use super::llm::{KEY, ScriptedLlm, Wire};
use super::policy::{Asker, call};

/// The variable the `[delegate]` table names for the key (by default).
const KEY_ENV: &str = "SUBAGENT_TEST_KEY";

/// The server on `ws` with `[delegate]` pointing at `llm` (none when `llm` is `None`) and
/// `extra` settings, its client answering with `handler`.
async fn start<H: ClientHandler>(
    ws: &Workspace,
    llm: Option<&ScriptedLlm>,
    extra: &str,
    handler: H,
) -> RunningService<RoleClient, H> {
    start_keyed(ws, llm, extra, KEY_ENV, "", handler).await
}

/// [`start`] with the key in `key_env`, and `more` in the `[delegate]` table.
async fn start_keyed<H: ClientHandler>(
    ws: &Workspace,
    llm: Option<&ScriptedLlm>,
    extra: &str,
    key_env: &str,
    more: &str,
    handler: H,
) -> RunningService<RoleClient, H> {
    let mut config = format!("{extra}\n");
    if let Some(llm) = llm {
        config.push_str(&format!(
            "[delegate]\nprovider = \"{}\"\nmodel = \"scripted\"\nbase_url = \"{}\"\napi_key_env = \"{key_env}\"\n{more}\n",
            llm.wire.provider(),
            llm.base_url
        ));
    }
    let file = ws.config_home.join("delegate.toml");
    std::fs::write(&file, config).unwrap();
    let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
        cmd.args(["serve", "--root", ws.root.to_str().unwrap(), "--config", file.to_str().unwrap()])
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home)
            .env(key_env, KEY)
            .env_remove("ANTHROPIC_API_KEY")
            .env_remove("OPENAI_API_KEY");
    }))
    .unwrap();
    handler.serve(transport).await.unwrap()
}

async fn delegate<H: ClientHandler>(service: &RunningService<RoleClient, H>, fields: Value) -> Reply {
    let mut args = json!({"operation": "delegate"});
    args.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
    call(service, "terminal_operations", args).await
}

/// The operations of `terminal_operations` as listed.
async fn terminal_operations<H: ClientHandler>(service: &RunningService<RoleClient, H>) -> Vec<String> {
    let tools = service.list_all_tools().await.unwrap();
    let terminal = tools.iter().find(|t| t.name == "terminal_operations").unwrap();
    let schema = serde_json::to_value(&terminal.input_schema).unwrap();
    schema["properties"]["operation"]["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().into()).collect()
}

/// The tool names and operations offered to the model in a request.
fn offered(request: &Value) -> String {
    request["tools"].to_string()
}

#[tokio::test]
async fn a_delegated_edit_is_the_callers_to_see_and_undo() {
    for wire in Wire::BOTH {
        let ws = Workspace::new();
        std::fs::write(ws.root.join("answer.txt"), "answer = 41\n").unwrap();
        let script = json!({"turns": [
            {"expect": ["Fix the answer"],
             "reply": {"calls": [{"name": "file_operations", "arguments":
                {"operation": "replace_string", "path": "answer.txt", "old_string": "41", "new_string": "42"}}]}},
            {"expect": ["answer.txt"], "reply": {"text": "Set the answer to 42."}}
        ]});
        let llm = ScriptedLlm::start_with(&script, wire).await;
        let service = start(&ws, Some(&llm), "", ()).await;
        assert!(terminal_operations(&service).await.contains(&"delegate".to_string()), "{wire:?}: listed");
        let done = delegate(&service, json!({"task": "Fix the answer in answer.txt: it must be 42."})).await;
        assert!(!done.is_error, "{wire:?}: {}", done.text);
        llm.assert_played();
        assert_eq!(done.structured["stop"], "completed", "{wire:?}");
        assert_eq!(done.structured["answer"], "Set the answer to 42.");
        assert_eq!(done.structured["changed_files"], json!(["answer.txt"]), "{}", done.text);
        assert_eq!(done.structured["turns"], 2);
        assert!(done.text.contains("`undo` with `steps: 1`"), "{}", done.text);
        assert_eq!(std::fs::read_to_string(ws.root.join("answer.txt")).unwrap(), "answer = 42\n");
        // Nesting is bounded: the sub-agent was not offered `delegate`.
        let first = &llm.requests()[0];
        assert!(offered(first).contains("replace_string") && !offered(first).contains("\"delegate\""), "{first}");
        // Its transcript is kept for `--resume`.
        let transcript = done.structured["transcript"].as_str().unwrap();
        assert!(transcript.starts_with(ws.state_home.to_str().unwrap()), "{transcript}");
        let kept = std::fs::read_to_string(transcript).unwrap();
        assert!(kept.contains("\"type\":\"end\"") && kept.contains("Set the answer to 42."), "{kept}");
        // What the sub-agent read is in it: the user's alone to read.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(transcript).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{transcript}");
        }
        // The audit log names the sub-agent on its calls.
        let audit = std::fs::read_to_string(ws.state_home.join("toolbelt-mcp/audit.jsonl")).unwrap();
        let by_sub_agent =
            audit.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).find(|r| r["sub_agent"].is_u64());
        let by_sub_agent = by_sub_agent.expect("a record of the sub-agent");
        assert_eq!(by_sub_agent["operation"], "replace_string", "{audit}");
        // The caller sees the change and undoes it.
        let changes = call(&service, "file_operations", json!({"operation": "changes"})).await;
        assert!(changes.text.contains("answer.txt"), "{}", changes.text);
        let undone = call(&service, "file_operations", json!({"operation": "undo", "steps": 1})).await;
        assert!(!undone.is_error, "{}", undone.text);
        assert_eq!(std::fs::read_to_string(ws.root.join("answer.txt")).unwrap(), "answer = 41\n");
        service.cancel().await.unwrap();
    }
}

#[tokio::test]
async fn a_sub_agents_question_reaches_the_callers_client_naming_it() {
    let ws = Workspace::new();
    let script = json!({"turns": [
        {"expect": ["Write a marker"],
         "reply": {"calls": [{"name": "terminal_operations", "arguments":
            {"operation": "run_command", "command": "echo made > marker.txt"}}]}},
        {"expect": ["denied"], "reply": {"text": "The user said no."}}
    ]});
    let llm = ScriptedLlm::start_with(&script, Wire::Anthropic).await;
    let asker = Asker::default();
    asker.answer(&["deny"]);
    let service = start(&ws, Some(&llm), "approval = \"on-write\"", asker.clone()).await;
    let done = delegate(&service, json!({"task": "Write a marker file."})).await;
    llm.assert_played();
    let messages = asker.messages();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert!(messages[0].starts_with("The agent's sub-agent 1 (`delegate`) wants to run"), "{}", messages[0]);
    assert!(
        messages[0].contains("Sub-agent 1's task") && messages[0].contains("Write a marker file."),
        "{}",
        messages[0]
    );
    assert!(messages[0].contains("echo made > marker.txt"), "{}", messages[0]);
    assert_eq!(done.structured["denied"], 1, "{}", done.text);
    assert!(!ws.root.join("marker.txt").exists());
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn a_read_only_delegation_cannot_write() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("keep.txt"), "kept\n").unwrap();
    let script = json!({"turns": [
        {"expect": ["Look around"],
         "reply": {"calls": [{"name": "terminal_operations", "arguments":
            {"operation": "run_command", "command": "echo x > keep.txt; echo y > new.txt"}}]}},
        {"expect": [], "reply": {"calls": [{"name": "file_operations", "arguments":
            {"operation": "create_file", "path": "new.txt", "content": "y"}}]}},
        {"expect": [], "reply": {"calls": [{"name": "memory_operations", "arguments":
            {"operation": "store", "content": "planted by a read-only sub-agent"}}]}},
        {"expect": ["read-only sub-agent does not"], "reply": {"calls": [{"name": "terminal_operations", "arguments":
            {"operation": "run_command", "command": "echo z > esc.txt", "escalate": true, "justification": "needed"}}]}},
        {"expect": ["runs nothing outside the sandbox"], "reply": {"text": "Nothing could be written."}}
    ]});
    let llm = ScriptedLlm::start_with(&script, Wire::OpenAi).await;
    let service = start(&ws, Some(&llm), "approval = \"never\"", ()).await;
    let done = delegate(&service, json!({"task": "Look around.", "read_only": true})).await;
    llm.assert_played();
    assert_eq!(done.structured["changed_files"], json!([]), "{}", done.text);
    assert_eq!(std::fs::read_to_string(ws.root.join("keep.txt")).unwrap(), "kept\n");
    assert!(!ws.root.join("new.txt").exists());
    // It was offered no file write, and the write it tried anyway was refused.
    let requests = llm.requests();
    assert!(!offered(&requests[0]).contains("create_file"), "{}", offered(&requests[0]));
    service.cancel().await.unwrap();
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelling_the_call_ends_the_sub_agents_commands() {
    use super::common::{process_with_args, unique_sleep, wait_gone};
    let ws = Workspace::new();
    let (sleep, arg) = unique_sleep(60);
    let command = format!("({sleep}); echo late > late.txt");
    let script = json!({"turns": [
        {"expect": ["Wait"],
         "reply": {"calls": [{"name": "terminal_operations", "arguments":
            {"operation": "run_command", "command": command, "timeout_ms": 120000}}]}}
    ]});
    let llm = ScriptedLlm::start_with(&script, Wire::Anthropic).await;
    let service = start(&ws, Some(&llm), "approval = \"never\"", ()).await;
    let args = json!({"operation": "delegate", "task": "Wait a minute."}).as_object().unwrap().clone();
    let params = CallToolRequestParams::new("terminal_operations").with_arguments(args);
    let request = service.call_tool(params);
    let wanted = ["sleep", arg.as_str()];
    let pid = tokio::select! {
        ended = request => panic!("the call ended before its command started: {ended:?}"),
        pid = process_with_args(&wanted, 30) => pid,
    };
    // The call's future was dropped: rmcp sent `notifications/cancelled`.
    assert!(wait_gone(pid, 10).await, "the sub-agent's command outlived the cancelled call");
    assert!(!ws.root.join("late.txt").exists());
    // The server is still there.
    let listed = call(&service, "terminal_operations", json!({"operation": "list_sessions"})).await;
    assert!(!listed.is_error, "{}", listed.text);
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn the_turn_budget_stops_it_with_a_clear_result() {
    let ws = Workspace::new();
    let script = json!({"turns": [
        {"expect": ["Count"], "reply": {"calls": [{"name": "file_operations", "arguments":
            {"operation": "list_dir", "path": "."}}]}}
    ]});
    let llm = ScriptedLlm::start_with(&script, Wire::OpenAi).await;
    let service = start(&ws, Some(&llm), "", ()).await;
    let done = delegate(&service, json!({"task": "Count the files.", "max_turns": 1})).await;
    llm.assert_played();
    assert_eq!(done.structured["stop"], "max_turns", "{}", done.text);
    assert!(done.text.contains("ran out of turns") && done.text.contains("raise `max_turns`"), "{}", done.text);
    service.cancel().await.unwrap();

    // Tokens: the first turn reads more than the budget (a quarter of its request's bytes).
    let script = json!({"usage_from_size": true, "turns": [
        {"expect": ["Count"], "reply": {"calls": [{"name": "file_operations", "arguments":
            {"operation": "list_dir", "path": "."}}]}}
    ]});
    let llm = ScriptedLlm::start_with(&script, Wire::Anthropic).await;
    let service = start(&ws, Some(&llm), "", ()).await;
    let done = delegate(&service, json!({"task": "Count the files.", "max_tokens": 1000})).await;
    llm.assert_played();
    assert_eq!(done.structured["stop"], "token_budget", "{}", done.text);
    assert!(done.text.contains("raise `max_tokens`"), "{}", done.text);
    assert!(done.structured["input_tokens"].as_u64().unwrap() > 1000, "{}", done.text);
    service.cancel().await.unwrap();
}

/// Keeps the progress messages a client hears.
#[derive(Clone, Default)]
struct Heard(Arc<Mutex<Vec<String>>>);

impl ClientHandler for Heard {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _context: rmcp::service::NotificationContext<RoleClient>,
    ) {
        self.0.lock().unwrap().push(params.message.unwrap_or_default());
    }
}

#[tokio::test]
async fn a_plain_call_reports_the_sub_agents_progress() {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    let ws = Workspace::new();
    let script = json!({"turns": [
        {"expect": ["Look"], "delay_ms": 300, "reply": {"calls": [{"name": "file_operations", "arguments":
            {"operation": "list_dir", "path": "."}}]}},
        {"expect": [], "reply": {"text": "Looked."}}
    ]});
    let llm = ScriptedLlm::start_with(&script, Wire::OpenAi).await;
    let heard = Heard::default();
    let service = start(&ws, Some(&llm), "", heard.clone()).await;
    let args = json!({"operation": "delegate", "task": "Look around."}).as_object().unwrap().clone();
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("terminal_operations").with_arguments(args),
    ));
    let handle = service.send_cancellable_request(request, PeerRequestOptions::no_options()).await.unwrap();
    handle.await_response().await.unwrap();
    llm.assert_played();
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let heard = heard.0.lock().unwrap().clone();
    assert!(heard.iter().any(|m| m.starts_with("sub-agent: turn 1")), "{heard:?}");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn without_a_model_source_it_is_absent() {
    let ws = Workspace::new();
    let service = start(&ws, None, "", ()).await;
    assert!(!terminal_operations(&service).await.contains(&"delegate".to_string()));
    let refused = delegate(&service, json!({"task": "Anything."})).await;
    assert!(refused.is_error && refused.text.contains("toolbelt-mcp doctor"), "{}", refused.text);
    service.cancel().await.unwrap();
}

/// A client that samples with tools, answering each `sampling/createMessage` with the next
/// scripted result (and recording the requests), and declines every question.
#[derive(Clone, Default)]
struct Sampler {
    replies: Arc<Mutex<VecDeque<Value>>>,
    asked: Arc<Mutex<Vec<Value>>>,
}

impl ClientHandler for Sampler {
    fn get_info(&self) -> ClientConfig {
        let caps = ClientCapabilities::builder().enable_sampling().enable_sampling_tools().build();
        ClientConfig::new(caps, Implementation::new("sampler", "0"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.asked.lock().unwrap().push(serde_json::to_value(&params).unwrap());
        let reply = self.replies.lock().unwrap().pop_front();
        let reply = reply.ok_or_else(|| ErrorData::internal_error("the script has no more replies", None))?;
        Ok(serde_json::from_value(reply).unwrap())
    }
}

#[tokio::test]
async fn a_client_that_samples_is_the_sub_agents_model() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("answer.txt"), "answer = 41\n").unwrap();
    let sampler = Sampler::default();
    sampler.replies.lock().unwrap().extend([
        json!({"role": "assistant", "model": "host-model", "stopReason": "toolUse", "content": [
            {"type": "tool_use", "id": "u1", "name": "file_operations",
             "input": {"operation": "replace_string", "path": "answer.txt", "old_string": "41", "new_string": "42"}}]}),
        json!({"role": "assistant", "model": "host-model", "stopReason": "endTurn",
               "content": [{"type": "text", "text": "Fixed through sampling."}]}),
    ]);
    // No `[delegate]`: the client's sampling is the only model, and enough to list it.
    let service = start(&ws, None, "", sampler.clone()).await;
    assert!(terminal_operations(&service).await.contains(&"delegate".to_string()));
    let done = delegate(&service, json!({"task": "Fix answer.txt: it must say 42."})).await;
    assert!(!done.is_error, "{}", done.text);
    assert_eq!(done.structured["answer"], "Fixed through sampling.", "{}", done.text);
    assert_eq!(done.structured["model"], "the client (sampling)");
    assert_eq!(done.structured["changed_files"], json!(["answer.txt"]));
    assert_eq!(std::fs::read_to_string(ws.root.join("answer.txt")).unwrap(), "answer = 42\n");
    let asked = sampler.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    // The first request: the task, the system prompt and the tools, without `delegate`.
    assert!(asked[0]["messages"][0].to_string().contains("Fix answer.txt"), "{}", asked[0]);
    assert!(asked[0]["systemPrompt"].as_str().unwrap().contains("coding agent"));
    let tools = asked[0]["tools"].to_string();
    assert!(tools.contains("file_operations") && !tools.contains("\"delegate\""), "{tools}");
    // The second carries the tool's result, tied to its use.
    let result = &asked[1]["messages"][2]["content"][0];
    assert_eq!(result["type"], "tool_result", "{}", asked[1]);
    assert_eq!(result["toolUseId"], "u1");
    let undone = call(&service, "file_operations", json!({"operation": "undo", "steps": 1})).await;
    assert!(!undone.is_error, "{}", undone.text);
    assert_eq!(std::fs::read_to_string(ws.root.join("answer.txt")).unwrap(), "answer = 41\n");
    service.cancel().await.unwrap();
}

/// A client that runs tasks and samples with tools: inside a task, sampling must come as the
/// task's input request, so `sampling/createMessage` sent to it directly is counted as wrong.
#[derive(Clone, Default)]
struct TaskSampler {
    sampled_directly: Arc<Mutex<usize>>,
}

impl ClientHandler for TaskSampler {
    fn get_info(&self) -> ClientConfig {
        let caps = ClientCapabilities::builder().enable_tasks().enable_sampling().enable_sampling_tools().build();
        ClientConfig::new(caps, Implementation::new("task-sampler", "0"))
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        *self.sampled_directly.lock().unwrap() += 1;
        Err(ErrorData::internal_error("inside a task, sample through the task", None))
    }
}

/// Polls task `id` until its payload is not `working`.
async fn settled<H: ClientHandler>(service: &RunningService<RoleClient, H>, id: &str) -> rmcp::model::TaskPayload {
    use rmcp::model::{GetTaskParams, TaskPayload};
    for _ in 0..300 {
        let got = service.get_task(GetTaskParams::new(id)).await.unwrap();
        if !matches!(got.task.payload, TaskPayload::Working) {
            return got.task.payload;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("task `{id}` kept working for 30 s");
}

#[tokio::test]
async fn delegate_runs_as_a_task_and_samples_through_it() {
    use rmcp::model::{CallToolResponse, InputRequest, InputResponses, TaskPayload, UpdateTaskParams};
    let ws = Workspace::new();
    std::fs::write(ws.root.join("answer.txt"), "answer = 41\n").unwrap();
    let client = TaskSampler::default();
    let service = start(&ws, None, "", client.clone()).await;
    let args = json!({"operation": "delegate", "task": "Fix answer.txt: 42."}).as_object().unwrap().clone();
    let params = CallToolRequestParams::new("terminal_operations").with_arguments(args);
    let CallToolResponse::Task(created) = service.call_tool_once(params).await.unwrap() else {
        panic!("a delegation that waits for its model becomes a task");
    };
    let id = created.task.task_id;
    let turns = [
        json!({"role": "assistant", "model": "m", "stopReason": "toolUse", "content": [
            {"type": "tool_use", "id": "u1", "name": "file_operations",
             "input": {"operation": "replace_string", "path": "answer.txt", "old_string": "41", "new_string": "42"}}]}),
        json!({"role": "assistant", "model": "m", "stopReason": "endTurn",
               "content": [{"type": "text", "text": "Done in a task."}]}),
    ];
    for turn in turns {
        let TaskPayload::InputRequired { input_requests } = settled(&service, &id).await else {
            panic!("the task asks its client to sample");
        };
        let (key, request) = input_requests.iter().next().expect("one input request");
        assert!(matches!(request, InputRequest::CreateMessage(_)), "{request:?}");
        let mut answer = InputResponses::new();
        answer.insert(key.clone(), turn);
        service.update_task(UpdateTaskParams::new(&id, answer)).await.unwrap();
    }
    let TaskPayload::Completed { result } = settled(&service, &id).await else { panic!("the task completes") };
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("Done in a task.") && text.contains("answer.txt"), "{text}");
    assert_eq!(std::fs::read_to_string(ws.root.join("answer.txt")).unwrap(), "answer = 42\n");
    assert_eq!(*client.sampled_directly.lock().unwrap(), 0);
    service.cancel().await.unwrap();
}

#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_sub_agent_sees_only_its_own_terminal_sessions_and_they_end_with_it() {
    use super::common::{process_with_args, unique_sleep};
    let ws = Workspace::new();
    let (theirs, their_arg) = unique_sleep(60);
    let script = json!({"turns": [
        {"expect": ["Tidy up"], "reply": {"calls": [{"name": "terminal_operations", "arguments":
            {"operation": "kill_session", "session_id": "t1", "signal": "KILL"}}]}},
        {"expect": ["no session"], "reply": {"calls": [{"name": "terminal_operations", "arguments":
            {"operation": "run_command", "command": theirs, "background": true}}]}},
        {"expect": [], "reply": {"text": "Left one running."}}
    ]});
    let llm = ScriptedLlm::start_with(&script, Wire::OpenAi).await;
    let service = start(&ws, Some(&llm), "approval = \"never\"", ()).await;
    let (mine, my_arg) = unique_sleep(60);
    let started =
        call(&service, "terminal_operations", json!({"operation": "run_command", "command": mine, "background": true}))
            .await;
    assert!(started.text.contains("session `t1`"), "{}", started.text);
    let my_pid = process_with_args(&["sleep", &my_arg], 20).await;
    let done = delegate(&service, json!({"task": "Tidy up the sessions."})).await;
    llm.assert_played();
    assert!(!done.is_error, "{}", done.text);
    // The caller's session was out of its reach, and is still running.
    assert!(!super::common::gone(my_pid));
    let listed = call(&service, "terminal_operations", json!({"operation": "list_sessions"})).await;
    assert!(listed.text.contains("`t1`") && listed.text.contains("running"), "{}", listed.text);
    // What the sub-agent left running ended with it.
    let wanted: Vec<u8> = ["sleep", their_arg.as_str()].iter().flat_map(|a| a.bytes().chain([0])).collect();
    let running = || {
        std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline")).is_ok_and(|line| line == wanted)
                && !entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()).is_some_and(super::common::gone)
        })
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while running() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(!running(), "the sub-agent's background command outlived it");
    let theirs_listed = done.text.clone();
    assert!(theirs_listed.contains("Left one running."), "{theirs_listed}");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn the_agent_resumes_a_delegations_transcript() {
    let ws = Workspace::new();
    std::fs::write(ws.root.join("answer.txt"), "answer = 41\n").unwrap();
    let script = json!({"turns": [
        {"expect": ["Fix the answer"], "reply": {"calls": [{"name": "file_operations", "arguments":
            {"operation": "replace_string", "path": "answer.txt", "old_string": "41", "new_string": "42"}}]}},
        {"expect": [], "reply": {"text": "Set the answer to 42."}}
    ]});
    let llm = ScriptedLlm::start_with(&script, Wire::OpenAi).await;
    let service = start(&ws, Some(&llm), "", ()).await;
    let done = delegate(&service, json!({"task": "Fix the answer in answer.txt: it must be 42."})).await;
    service.cancel().await.unwrap();
    let transcript = done.structured["transcript"].as_str().unwrap().to_string();
    let next = json!({"turns": [{"expect": ["Now say what you did"], "reply": {"text": "I changed 41 to 42."}}]});
    let resumed = ScriptedLlm::start_with(&next, Wire::OpenAi).await;
    let ran = super::agent::run(&ws, &resumed, "Now say what you did.", &["--resume", &transcript]).await;
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    resumed.assert_played();
    // The resumed run's model saw the delegation's conversation.
    let first = resumed.requests()[0].to_string();
    assert!(first.contains("Fix the answer in answer.txt") && first.contains("Set the answer to 42."), "{first}");
    assert!(ran.stdout.contains("I changed 41 to 42."), "{}", ran.stdout);
}

#[tokio::test]
async fn a_nested_sub_agent_is_no_wider_than_the_one_that_started_it() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.root.join("a")).unwrap();
    let turn = |calls: Value| json!({"role": "assistant", "model": "m", "stopReason": "toolUse", "content": calls});
    let text = |t: &str| json!({"role": "assistant", "model": "m", "stopReason": "endTurn", "content": [{"type": "text", "text": t}]});
    let sampler = Sampler::default();
    sampler.replies.lock().unwrap().extend([
        turn(json!([{"type": "tool_use", "id": "o1", "name": "terminal_operations", "input":
            {"operation": "delegate", "task": "inner work", "operations": ["file_operations.*", "terminal_operations.*"]}}])),
        turn(json!([{"type": "tool_use", "id": "i1", "name": "file_operations", "input":
            {"operation": "create_file", "path": "inner.txt", "content": "x"}}])),
        turn(json!([{"type": "tool_use", "id": "i2", "name": "terminal_operations", "input":
            {"operation": "run_command", "command": "echo hi > inner_cmd.txt"}}])),
        text("inner done"),
        text("outer done"),
    ]);
    // `[delegate]` allows two levels; the client samples for both.
    let llm = ScriptedLlm::start_with(&json!({"turns": []}), Wire::OpenAi).await;
    let service = start_keyed(&ws, Some(&llm), "approval = \"never\"", KEY_ENV, "max_depth = 2", sampler.clone()).await;
    let outer = json!({"task": "outer", "read_only": true, "paths": ["a"], "operations": ["read_file", "run_command", "delegate"]});
    let done = delegate(&service, outer).await;
    assert!(!done.is_error, "{}", done.text);
    assert_eq!(done.structured["answer"], "outer done", "{}", done.text);
    assert_eq!(done.structured["changed_files"], json!([]), "{}", done.text);
    assert!(!ws.root.join("a/inner.txt").exists() && !ws.root.join("a/inner_cmd.txt").exists());
    // The inner one was offered only what the outer one had, and its writes were refused.
    let asked = sampler.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 5, "{asked:?}");
    let inner_tools = asked[1]["tools"].to_string();
    assert!(inner_tools.contains("read_file") && !inner_tools.contains("create_file"), "{inner_tools}");
    assert!(!inner_tools.contains("memory_operations"), "{inner_tools}");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn the_provider_key_never_reaches_a_command_and_bad_limits_are_refused() {
    let ws = Workspace::new();
    std::fs::create_dir(ws.root.join("a")).unwrap();
    std::fs::write(ws.root.join("secret.cfg"), "DB_PASSWORD=hunter2\n").unwrap();
    let script = json!({"turns": [
        {"expect": ["Show"], "reply": {"calls": [
            {"name": "terminal_operations", "arguments": {"operation": "run_command", "command": "env; echo END"}},
            {"name": "file_operations", "arguments": {"operation": "changes"}},
            {"name": "file_operations", "arguments": {"operation": "undo", "steps": 1}}]}},
        {"expect": ["END"], "reply": {"text": "shown"}}
    ]});
    let llm = ScriptedLlm::start_with(&script, Wire::OpenAi).await;
    // A name that does not look like a secret, and `env_allow` letting it through.
    let extra = "approval = \"never\"\nenv_allow = [\"LC_PROVIDER\"]";
    let service = start_keyed(&ws, Some(&llm), extra, "LC_PROVIDER", "", ()).await;
    // The caller deletes a file outside the sub-agent's `paths`: its diff is not the sub-agent's to see.
    let deleted = call(&service, "file_operations", json!({"operation": "delete_file", "path": "secret.cfg"})).await;
    assert!(!deleted.is_error, "{}", deleted.text);
    for (fields, says) in [
        (json!({"task": "x", "operations": []}), "`operations`"),
        (json!({"task": "x", "operations": ["nonsense"]}), "`nonsense`"),
        (json!({"task": "x", "paths": []}), "`paths`"),
        (json!({"task": "x", "paths": ["a", ""]}), "none of them blank"),
    ] {
        let refused = delegate(&service, fields.clone()).await;
        assert!(refused.is_error && refused.text.contains(says), "{fields}: {}", refused.text);
    }
    let done = delegate(&service, json!({"task": "Show the environment.", "paths": ["a"]})).await;
    llm.assert_played();
    assert!(!done.is_error, "{}", done.text);
    let seen = llm.requests()[1].to_string();
    assert!(seen.contains("END"), "the command ran: {seen}");
    assert!(!seen.contains(KEY), "the key reached the sub-agent's command");
    assert!(!seen.contains("hunter2"), "`changes` showed the sub-agent a file outside its paths");
    assert!(seen.contains("outside this session's roots"), "the caller's step is not the sub-agent's to undo: {seen}");
    assert!(!ws.root.join("secret.cfg").exists(), "the sub-agent's undo put the caller's deletion back");
    service.cancel().await.unwrap();
}
