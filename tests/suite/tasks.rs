//! MCP Tasks (SEP-2663) through rmcp's client: a long `run_command` becomes a task, a quick one
//! answers at once, `tasks/get` inlines the result, `tasks/cancel` ends the command's process
//! group, an approval is `input_required` and answered with `tasks/update`, session clients
//! hear `notifications/tasks`, and clients that did not declare tasks see none of it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientCapabilities, ClientConfig, ElicitRequestParams, ElicitResult,
    ElicitationAction, GetTaskParams, Implementation, InputRequest, InputResponses, TaskPayload, TaskStatus,
    TaskStatusNotificationParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient};
use serde_json::{Value, json};

use super::common::Workspace;
use super::policy::start;

/// A client that runs tasks; it answers elicitations (which a task must not send) by counting them.
#[derive(Clone, Default)]
struct TaskClient {
    elicits: bool,
    elicited: Arc<Mutex<usize>>,
    heard: Arc<Mutex<Vec<(String, TaskStatus)>>>,
}

impl ClientHandler for TaskClient {
    fn get_info(&self) -> ClientConfig {
        let caps = ClientCapabilities::builder().enable_tasks();
        let caps = if self.elicits { caps.enable_elicitation().build() } else { caps.build() };
        ClientConfig::new(caps, Implementation::new("task-client", "0"))
    }

    async fn create_elicitation(
        &self,
        _request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        *self.elicited.lock().unwrap() += 1;
        Ok(ElicitResult::new(ElicitationAction::Decline))
    }

    async fn on_task_status(&self, params: TaskStatusNotificationParams, _context: NotificationContext<RoleClient>) {
        self.heard.lock().unwrap().push((params.task.task.task_id.clone(), params.task.task.status));
    }
}

async fn run_once<H: ClientHandler>(service: &RunningService<RoleClient, H>, fields: Value) -> CallToolResponse {
    let mut args = json!({"operation": "run_command"});
    args.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
    let params = CallToolRequestParams::new("terminal_operations").with_arguments(args.as_object().unwrap().clone());
    service.call_tool_once(params).await.unwrap()
}

fn task_id(response: CallToolResponse) -> String {
    match response {
        CallToolResponse::Task(created) => created.task.task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// Polls task `id` until `done` holds of its payload (or 30 s pass).
async fn poll<H: ClientHandler>(
    service: &RunningService<RoleClient, H>,
    id: &str,
    done: impl Fn(&TaskPayload) -> bool,
) -> TaskPayload {
    for _ in 0..300 {
        let got = service.get_task(GetTaskParams::new(id)).await.unwrap();
        assert_eq!(got.task.task.task_id, id);
        if done(&got.task.payload) {
            return got.task.payload;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task `{id}` did not get there in 30 s");
}

fn text_of(payload: &TaskPayload) -> (String, bool) {
    let TaskPayload::Completed { result } = payload else { panic!("not completed: {payload:?}") };
    let text = result["content"][0]["text"].as_str().unwrap_or_default().to_string();
    (text, result.get("isError").and_then(Value::as_bool).unwrap_or(false))
}

#[tokio::test]
async fn a_long_command_becomes_a_task_a_quick_one_answers_at_once() {
    let ws = Workspace::new();
    let client = TaskClient::default();
    let service = start(&ws, "", client.clone()).await;

    let quick = run_once(&service, json!({"command": "echo quick"})).await;
    let CallToolResponse::Complete(quick) = quick else { panic!("a quick command answers at once: {quick:?}") };
    assert!(format!("{:?}", quick.content).contains("quick"));

    let id = task_id(run_once(&service, json!({"command": "sleep 2; echo long-done"})).await);
    assert_eq!(id.len(), 32, "128 bits in hex: {id}");
    assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
    let working = service.get_task(GetTaskParams::new(&id)).await.unwrap();
    assert_eq!(working.task.task.status, TaskStatus::Working);
    assert!(working.task.task.ttl_ms.is_some_and(|ttl| ttl > 7_200_000), "outlives the longest command");
    let done = poll(&service, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
    let (text, is_error) = text_of(&done);
    assert!(text.contains("long-done") && !is_error, "{text}");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let heard = client.heard.lock().unwrap().clone();
    assert!(heard.contains(&(id.clone(), TaskStatus::Completed)), "told of the end: {heard:?}");

    let unknown = service.get_task(GetTaskParams::new("0123456789abcdef0123456789abcdef")).await.unwrap_err();
    assert!(unknown.to_string().contains("unknown task"), "{unknown}");
    service.cancel().await.unwrap();
}

/// Linux: the command's process is found in `/proc`.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn cancelling_a_task_ends_its_command() {
    use super::common::{process_with_args, unique_sleep, wait_gone};
    use rmcp::model::CancelTaskParams;
    let ws = Workspace::new();
    let service = start(&ws, "", TaskClient::default()).await;
    let (sleep, arg) = unique_sleep(60);
    let command = format!("({sleep}); echo late > late.txt");
    let id = task_id(run_once(&service, json!({ "command": command })).await);
    let pid = process_with_args(&["sleep", &arg], 20).await;
    service.cancel_task(CancelTaskParams::new(&id)).await.unwrap();
    poll(&service, &id, |p| matches!(p, TaskPayload::Cancelled)).await;
    assert!(wait_gone(pid, 10).await, "the command's process ended with its task");
    assert!(!ws.root.join("late.txt").exists());
    // Cancelling again, once it ended, is the same empty acknowledgement.
    service.cancel_task(CancelTaskParams::new(&id)).await.unwrap();
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn an_approval_in_a_task_is_input_required_and_answered_with_update() {
    let ws = Workspace::new();
    let client = TaskClient { elicits: true, ..TaskClient::default() };
    let service = start(&ws, "approval = \"always\"\n", client.clone()).await;
    // A person takes a moment; a client declining the instant it sees the question is not one.
    let cases = [
        ("allow_once", 0, true, "exited with code 0"),
        ("deny", 400, false, "(their note: not now)"),
        ("deny", 0, false, "before anyone could read the question"),
    ];
    for (n, (decision, think_ms, expect_file, says)) in cases.into_iter().enumerate() {
        let marker = format!("{decision}-{n}.txt");
        let id = task_id(run_once(&service, json!({"command": format!("echo yes > {marker}")})).await);
        let asked = poll(&service, &id, |p| matches!(p, TaskPayload::InputRequired { .. })).await;
        let TaskPayload::InputRequired { input_requests } = asked else { unreachable!() };
        let (key, request) = input_requests.iter().next().expect("one question");
        let InputRequest::Elicitation(elicit) = request else { panic!("an elicitation form: {request:?}") };
        assert!(format!("{elicit:?}").contains("run_command"), "{elicit:?}");
        tokio::time::sleep(Duration::from_millis(think_ms)).await;
        let mut answer = InputResponses::new();
        answer.insert(key.clone(), json!({"action": "accept", "content": {"decision": decision, "note": "not now"}}));
        service.update_task(UpdateTaskParams::new(&id, answer)).await.unwrap();
        let done = poll(&service, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
        let (text, is_error) = text_of(&done);
        assert_eq!(is_error, !expect_file, "{decision}: {text}");
        assert_eq!(ws.root.join(&marker).exists(), expect_file, "{decision}: {text}");
        assert!(text.contains(says), "{decision} after {think_ms} ms: {text}");
    }
    assert_eq!(*client.elicited.lock().unwrap(), 0, "a task asks through the task, not elicitation/create");
    service.cancel().await.unwrap();
}

#[tokio::test]
async fn a_client_without_tasks_gets_a_plain_result() {
    let ws = Workspace::new();
    let service = start(&ws, "", ()).await;
    let plain = run_once(&service, json!({"command": "sleep 2; echo plain"})).await;
    let CallToolResponse::Complete(plain) = plain else { panic!("no task without the extension: {plain:?}") };
    assert!(format!("{:?}", plain.content).contains("plain"));
    // Over stdio, `tasks/get` is also the method of protocol 2025-11-25's tasks (tasks_v1.rs).
    let unknown = service.get_task(GetTaskParams::new("0123456789abcdef0123456789abcdef")).await.unwrap_err();
    assert!(unknown.to_string().contains("unknown task"), "{unknown}");
    service.cancel().await.unwrap();

    // A 2026-07-28 client that did not declare the extension: no task methods (-32021).
    use rmcp::model::ProtocolVersion;
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
    let transport = TokioChildProcess::new(tokio::process::Command::new(super::common::BIN).configure(|cmd| {
        cmd.args(["serve", "--root", ws.root.to_str().unwrap()])
            .env("XDG_CONFIG_HOME", &ws.config_home)
            .env("XDG_STATE_HOME", &ws.state_home);
    }))
    .unwrap();
    let lifecycle = ClientLifecycleMode::Discover { preferred_versions: vec![ProtocolVersion::V_2026_07_28] };
    let modern = ().serve_with_lifecycle(transport, lifecycle).await.unwrap();
    let refused = modern.get_task(GetTaskParams::new("0123456789abcdef0123456789abcdef")).await.unwrap_err();
    assert!(refused.to_string().contains("-32021"), "{refused}");
    modern.cancel().await.unwrap();
}

/// Over HTTP: a task per session (another session's id is unknown), and only the extension:
/// the stdio translation's internal methods are unknown.
#[tokio::test]
async fn over_http_a_task_is_its_sessions_and_only_the_extension_is_served() {
    use rmcp::ServiceExt;
    use rmcp::model::{ClientRequest, CustomRequest};
    let ws = Workspace::new();
    let server = super::http::HttpServer::start(&ws, &[], &[]).await;
    let owner = TaskClient::default().serve(server.authed()).await.unwrap();
    let other = TaskClient::default().serve(server.authed()).await.unwrap();
    let id = task_id(run_once(&owner, json!({"command": "sleep 2; echo over-http"})).await);
    let stranger = other.get_task(GetTaskParams::new(&id)).await.unwrap_err();
    assert!(stranger.to_string().contains("unknown task"), "{stranger}");
    let done = poll(&owner, &id, |p| matches!(p, TaskPayload::Completed { .. })).await;
    assert!(text_of(&done).0.contains("over-http"));
    let internal = ClientRequest::CustomRequest(CustomRequest::new("dev.toolbelt/v1/tasks/list", Some(json!({}))));
    let refused = owner.send_request(internal).await.unwrap_err();
    assert!(refused.to_string().contains("-32601") || refused.to_string().contains("not a method"), "{refused}");
    owner.cancel().await.unwrap();
    other.cancel().await.unwrap();
}
