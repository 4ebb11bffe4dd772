//! The tasks of protocol 2025-11-25 over stdio, as the official TypeScript (1.x) and Python
//! (1.x) SDK clients and VS Code speak them: `capabilities.tasks`, a `task` parameter asking a
//! `tools/call` to run as a task, `tasks/get`, `tasks/result` (waits, and puts the task's
//! questions to the client as `elicitation/create`), `tasks/list`, `tasks/cancel` (answering
//! the task), and `notifications/tasks/status`. rmcp parses only the extension of SEP-2663
//! (tasks.rs), so [`Bridge`] translates at the transport for a client that initialized without
//! declaring that extension: a `tools/call` with a `task` parameter carries [`ASKED`] and the
//! client's capabilities with the extension in `_meta` instead (it becomes a task at once);
//! `tasks/*` go to the server's `on_custom_request` under [`PREFIX`] ([`answer`] answers them
//! from the same `Tasks`); and the answers to `initialize` (`capabilities.tasks`), `tools/list`
//! (`execution.taskSupport`) and task calls, and task notifications, take the 2025-11-25
//! shapes. A client that declared the extension speaks it and is left alone.

use std::collections::HashMap;
use std::time::Duration;

use rmcp::model::{ElicitRequestParams, InputRequest, TaskPayload};
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use serde_json::{Map, Value, json};

use crate::tasks::Tasks;

/// The `_meta` key that says whether a 2025-11-25 `tools/call` asked to run as a task.
pub(crate) const ASKED: &str = "dev.toolbelt/taskAsked";
/// Where a 2025-11-25 `tasks/*` request goes: `dev.toolbelt/v1/tasks/get`, ….
pub(crate) const PREFIX: &str = "dev.toolbelt/v1/";
/// The `_meta` key of a request's own client capabilities (2026-07-28, which rmcp reads first).
const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key tying a message to its task (2025-11-25).
const RELATED: &str = "io.modelcontextprotocol/related-task";

/// What an answer to a remembered request must be turned into.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Reshape {
    Initialize,
    ToolsList,
    CreateTask,
}

/// One stdio connection's translation state.
#[derive(Debug, Default)]
pub(crate) struct Bridge {
    /// The client initialized without declaring the extension: it may speak 2025-11-25 tasks.
    on: bool,
    /// The capabilities it declared, with the extension: what its task calls declare.
    declared: Value,
    /// The tools that may run as tasks, as the client names them.
    task_tools: Vec<String>,
    /// Requests whose answers to reshape, by JSON-RPC id.
    pending: HashMap<String, Reshape>,
}

impl Bridge {
    /// A bridge for a connection whose tools named `task_tools` may run as tasks.
    pub(crate) fn new(task_tools: Vec<String>) -> Self {
        Self { task_tools, ..Self::default() }
    }

    /// A message from the client, rewritten if it needs to be (`None`: as it is).
    pub(crate) fn inbound(&mut self, line: &[u8]) -> Option<Vec<u8>> {
        let found = |pattern: &[u8]| memchr::memmem::find(line, pattern).is_some();
        let worth_reading =
            if self.on { found(b"\"task") || found(b"\"tools/list\"") } else { found(b"\"initialize\"") };
        if !worth_reading {
            return None;
        }
        let mut message: Value = serde_json::from_slice(line).ok()?;
        let id = message.get("id").map(Value::to_string);
        let method = message.get("method")?.as_str()?.to_string();
        let params = message.as_object_mut()?.entry("params").or_insert_with(|| json!({}));
        let params = params.as_object_mut()?;
        match method.as_str() {
            "initialize" => {
                let mut declared = params.get("capabilities")?.clone();
                if declared["extensions"].get(rmcp::model::TASKS_EXTENSION_ID).is_some() {
                    // It speaks the extension: nothing to translate.
                    return None;
                }
                declared["extensions"][rmcp::model::TASKS_EXTENSION_ID] = json!({});
                (self.on, self.declared) = (true, declared);
                self.pending.insert(id?, Reshape::Initialize);
                return None;
            }
            "tools/list" if self.on => {
                self.pending.insert(id?, Reshape::ToolsList);
                return None;
            }
            "tools/call" if self.on => {
                if !params.remove("task").is_some_and(|task| task.is_object()) {
                    return None;
                }
                let meta = params.entry("_meta").or_insert_with(|| json!({})).as_object_mut()?;
                meta.insert(ASKED.into(), Value::Bool(true));
                meta.insert(CLIENT_CAPABILITIES.into(), self.declared.clone());
                self.pending.insert(id?, Reshape::CreateTask);
            }
            "tasks/get" | "tasks/result" | "tasks/list" | "tasks/cancel" if self.on => {
                message["method"] = Value::String(format!("{PREFIX}{method}"));
            }
            _ => return None,
        }
        serde_json::to_vec(&message).ok()
    }

    /// Whether `message` to the client may need reshaping (most need not: they are written
    /// without a detour through a JSON value). An error answering a remembered request
    /// forgets it.
    pub(crate) fn wants(&mut self, message: &rmcp::model::ServerJsonRpcMessage) -> bool {
        use rmcp::model::JsonRpcMessage;
        if !self.on {
            return false;
        }
        let key = |id: &rmcp::model::RequestId| serde_json::to_string(id).unwrap_or_default();
        match message {
            JsonRpcMessage::Response(response) => {
                !self.pending.is_empty() && self.pending.contains_key(&key(&response.id))
            }
            JsonRpcMessage::Notification(notification) => {
                matches!(notification.notification, rmcp::model::ServerNotification::TaskStatusNotification(_))
            }
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    self.pending.remove(&key(id));
                }
                false
            }
            JsonRpcMessage::Request(_) => false,
        }
    }

    /// A message to the client, reshaped if it answers a remembered request or tells of a task.
    pub(crate) fn outbound(&mut self, message: &mut Value) {
        if !self.on {
            return;
        }
        if message.get("method").and_then(Value::as_str) == Some("notifications/tasks") {
            message["method"] = json!("notifications/tasks/status");
            if let Some(params) = message.get("params").cloned() {
                message["params"] = v1_task(&params);
            }
            return;
        }
        let Some(reshape) = message.get("id").map(Value::to_string).and_then(|id| self.pending.remove(&id)) else {
            return;
        };
        let Some(result) = message.get_mut("result") else { return };
        match reshape {
            Reshape::Initialize => {
                result["capabilities"]["tasks"] =
                    json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
            }
            Reshape::ToolsList => {
                for tool in result["tools"].as_array_mut().into_iter().flatten() {
                    if tool["name"].as_str().is_some_and(|name| self.task_tools.iter().any(|t| t == name)) {
                        tool["execution"] = json!({"taskSupport": "optional"});
                    }
                }
            }
            Reshape::CreateTask if result.get("resultType").and_then(Value::as_str) == Some("task") => {
                *result = json!({ "task": v1_task(result) });
            }
            Reshape::CreateTask => {}
        }
    }
}

/// A task in the 2025-11-25 shape, from a SEP-2663 one (`ttlMs` → `ttl`, no inlined payload).
fn v1_task(task: &Value) -> Value {
    let mut shaped = Map::new();
    for (from, to) in [
        ("taskId", "taskId"),
        ("status", "status"),
        ("statusMessage", "statusMessage"),
        ("createdAt", "createdAt"),
        ("lastUpdatedAt", "lastUpdatedAt"),
        ("ttlMs", "ttl"),
        ("pollIntervalMs", "pollInterval"),
    ] {
        if let Some(value) = task.get(from) {
            shaped.insert(to.into(), value.clone());
        }
    }
    shaped.entry("ttl").or_insert(Value::Null);
    Value::Object(shaped)
}

/// A task of `tasks/*` in the 2025-11-25 shape.
fn v1_of(task: &rmcp::model::GetTaskResult) -> Value {
    v1_task(&serde_json::to_value(task).unwrap_or_default())
}

/// The tools that may run as tasks in `layout`, by the names the client sees.
pub(crate) fn task_tools(layout: toolbelt_mcp_core::config::args::ToolLayout) -> Vec<String> {
    use toolbelt_mcp_core::config::args::ToolLayout;
    let mut names = Vec::new();
    for tool in toolbelt_mcp_tools::TOOLS {
        for operation in tool.operations.iter().filter(|op| op.task) {
            names.push(match layout {
                ToolLayout::Consolidated => tool.name.to_string(),
                ToolLayout::Granular => tool.granular_name(operation),
            });
        }
    }
    names.dedup();
    names
}

/// Answers a 2025-11-25 `tasks/*` request (`method` without [`PREFIX`]) for `owner`.
pub(crate) async fn answer(
    tasks: &Tasks,
    owner: &str,
    method: &str,
    params: &Value,
    peer: &Peer<RoleServer>,
    ask_for: Duration,
) -> Result<Value, McpError> {
    let id = || {
        params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| McpError::invalid_params("`taskId` is required", None))
    };
    match method {
        "tasks/get" => Ok(v1_of(&tasks.get(owner, id()?)?)),
        "tasks/list" => Ok(json!({ "tasks": tasks.list(owner).iter().map(v1_of).collect::<Vec<_>>() })),
        "tasks/cancel" => {
            let id = id()?;
            if tasks.get(owner, id)?.task.task.status.is_terminal() {
                return Err(McpError::invalid_params(
                    format!("task `{id}` has already ended: nothing to cancel"),
                    None,
                ));
            }
            tasks.cancel(owner, id)?;
            // Cancelling is cooperative: give the call up to 5 s to end its commands.
            let mut now = tasks.get(owner, id)?;
            for _ in 0..50 {
                if now.task.task.status.is_terminal() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
                now = tasks.get(owner, id)?;
            }
            Ok(v1_of(&now))
        }
        "tasks/result" => result(tasks, owner, id()?, peer, ask_for).await,
        _ => Err(McpError::new(
            rmcp::model::ErrorCode::METHOD_NOT_FOUND,
            format!("method not found: `{method}` is not a method this server offers"),
            None,
        )),
    }
}

/// `tasks/result`: waits for the task to end, putting its questions to the client meanwhile.
async fn result(
    tasks: &Tasks,
    owner: &str,
    id: &str,
    peer: &Peer<RoleServer>,
    ask_for: Duration,
) -> Result<Value, McpError> {
    loop {
        let detailed = tasks.get(owner, id)?.task;
        match detailed.payload {
            TaskPayload::Completed { result } => {
                let mut result = Value::Object(result);
                result["_meta"][RELATED] = json!({ "taskId": id });
                return Ok(result);
            }
            TaskPayload::Failed { error } => {
                let message = error.get("message").and_then(Value::as_str).unwrap_or("the task failed");
                return Err(McpError::internal_error(message.to_string(), Some(Value::Object(error))));
            }
            TaskPayload::Cancelled => {
                return Err(McpError::invalid_params(format!("task `{id}` was cancelled: it has no result"), None));
            }
            TaskPayload::InputRequired { input_requests } => {
                for (key, request) in input_requests {
                    // Each question is put once, whichever `tasks/result` of the task saw it.
                    if !matches!(request, InputRequest::Elicitation(_) | InputRequest::CreateMessage(_))
                        || !tasks.claim(owner, id, &key)?
                    {
                        continue;
                    }
                    // A task that ends meanwhile (cancelled) withdraws the question.
                    let answer = tokio::select! {
                        answer = put(peer, request, id, ask_for) => answer,
                        () = ended(tasks, owner, id) => break,
                    };
                    tasks.update(owner, id, [(key, answer)].into_iter().collect())?;
                }
            }
            // `working`, and any status a later rmcp adds: wait.
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Puts a task's input request to the client: a question (`elicitation/create`) or a turn of
/// a sub-agent's model (`sampling/createMessage`); answers what the client said.
#[allow(deprecated, reason = "sampling is deprecated by SEP-2577 but current hosts still offer it")]
async fn put(peer: &Peer<RoleServer>, request: InputRequest, id: &str, ask_for: Duration) -> Value {
    let answer = match request {
        InputRequest::Elicitation(elicit) => peer
            .create_elicitation_with_timeout(with_related(elicit.params, id), Some(ask_for))
            .await
            .map(|answer| serde_json::to_value(answer).unwrap_or_default()),
        InputRequest::CreateMessage(sample) => {
            peer.create_message(sample.params).await.map(|result| serde_json::to_value(result).unwrap_or_default())
        }
        _ => return json!({ "action": "cancel" }),
    };
    answer.unwrap_or_else(|err| {
        tracing::debug!(%err, "a task's input request was not answered");
        json!({ "action": "cancel" })
    })
}

/// Resolves once task `id` has ended (or is gone).
async fn ended(tasks: &Tasks, owner: &str, id: &str) {
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if tasks.get(owner, id).map_or(true, |task| task.task.task.status.is_terminal()) {
            return;
        }
    }
}

/// An elicitation tied to task `id` (2025-11-25's related-task `_meta`).
fn with_related(mut params: ElicitRequestParams, id: &str) -> ElicitRequestParams {
    let related = [(RELATED.to_string(), json!({ "taskId": id }))].into_iter().collect();
    if let ElicitRequestParams::FormElicitationParams { meta, .. } = &mut params {
        *meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(related)));
    }
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inbound(bridge: &mut Bridge, message: Value) -> Value {
        let line = serde_json::to_vec(&message).unwrap();
        bridge.inbound(&line).map_or(message, |new| serde_json::from_slice(&new).unwrap())
    }

    #[test]
    fn a_2025_client_is_told_of_tasks_and_an_extension_client_is_left_alone() {
        let mut bridge = Bridge::new(vec!["terminal_operations".into()]);
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "x", "task": {}}});
        assert_eq!(inbound(&mut bridge, call.clone()), call, "nothing changes before `initialize`");
        let init =
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"capabilities": {"elicitation": {}}}});
        inbound(&mut bridge, init);
        assert!(bridge.on);
        let mut answer = json!({"jsonrpc": "2.0", "id": 0, "result": {"capabilities": {}}});
        bridge.outbound(&mut answer);
        assert!(answer["result"]["capabilities"]["tasks"]["requests"]["tools"]["call"].is_object());

        let mut modern = Bridge::new(vec![]);
        let ext = json!({"capabilities": {"extensions": {rmcp::model::TASKS_EXTENSION_ID: {}}}});
        inbound(&mut modern, json!({"id": 0, "method": "initialize", "params": ext}));
        assert!(!modern.on);
        let get = json!({"id": 3, "method": "tasks/get", "params": {"taskId": "a"}});
        assert_eq!(inbound(&mut modern, get.clone()), get);
    }

    #[test]
    fn calls_that_ask_say_so_and_task_methods_go_to_the_bridge() {
        let mut bridge = Bridge::new(vec!["terminal_operations".into()]);
        inbound(&mut bridge, json!({"id": 0, "method": "initialize", "params": {"capabilities": {"elicitation": {}}}}));
        let asked =
            inbound(&mut bridge, json!({"id": 1, "method": "tools/call", "params": {"name": "t", "task": {"ttl": 5}}}));
        assert_eq!(asked["params"]["_meta"][ASKED], json!(true));
        let declared = &asked["params"]["_meta"][CLIENT_CAPABILITIES];
        assert!(
            declared["elicitation"].is_object() && declared["extensions"][rmcp::model::TASKS_EXTENSION_ID].is_object()
        );
        assert!(asked["params"].get("task").is_none());
        let not = json!({"id": 2, "method": "tools/call", "params": {"name": "t"}});
        assert_eq!(inbound(&mut bridge, not.clone()), not);
        let get = inbound(&mut bridge, json!({"id": 3, "method": "tasks/get", "params": {"taskId": "a"}}));
        assert_eq!(get["method"], json!(format!("{PREFIX}tasks/get")));

        let mut created = json!({"id": 1, "result": {"resultType": "task", "taskId": "a", "status": "working", "createdAt": "t", "lastUpdatedAt": "t", "ttlMs": 9, "pollIntervalMs": 1}});
        bridge.outbound(&mut created);
        assert_eq!(
            created["result"],
            json!({"task": {"taskId": "a", "status": "working", "createdAt": "t", "lastUpdatedAt": "t", "ttl": 9, "pollInterval": 1}})
        );
        let mut note = json!({"method": "notifications/tasks", "params": {"taskId": "a", "status": "completed", "ttlMs": 9, "result": {"content": []}}});
        bridge.outbound(&mut note);
        assert_eq!(
            note,
            json!({"method": "notifications/tasks/status", "params": {"taskId": "a", "status": "completed", "ttl": 9}})
        );
    }

    #[test]
    fn tools_that_may_run_as_tasks_say_so() {
        let names = task_tools(toolbelt_mcp_core::config::args::ToolLayout::Consolidated);
        assert_eq!(names, ["terminal_operations"]);
        let names = task_tools(toolbelt_mcp_core::config::args::ToolLayout::Granular);
        assert_eq!(names, ["run_command", "delegate"]);
        let mut bridge = Bridge::new(names);
        inbound(&mut bridge, json!({"id": 0, "method": "initialize", "params": {"capabilities": {}}}));
        inbound(&mut bridge, json!({"id": "l", "method": "tools/list"}));
        let mut listed = json!({"id": "l", "result": {"tools": [{"name": "run_command"}, {"name": "read_file"}]}});
        bridge.outbound(&mut listed);
        assert_eq!(listed["result"]["tools"][0]["execution"]["taskSupport"], json!("optional"));
        assert!(listed["result"]["tools"][1].get("execution").is_none());
    }
}
