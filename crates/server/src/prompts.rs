//! MCP prompts worth a slash command (`/mcp__toolbelt__review_changes` in Claude Code), each
//! built from the workspace's real state through the same gate as a tool call, and the
//! completions of their arguments and of the resource templates' names.

use rmcp::ErrorData as McpError;
use rmcp::RoleServer;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CompletionInfo, GetPromptResult,
    Prompt, PromptArgument, PromptMessage, Reference, Role,
};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};
use toolbelt_mcp_core::config::args::ToolLayout;
use toolbelt_mcp_store::GLOBAL;

use crate::Server;

/// Review what this session changed.
const REVIEW: &str = "review_changes";
/// Plan a task into a todo list.
const PLAN: &str = "plan";
/// Recall what memory holds about a topic.
const RECALL: &str = "recall";

/// The prompts, as `prompts/list` gives them.
pub(crate) fn list() -> Vec<Prompt> {
    let arg = |name: &str, description: &str, required: bool| {
        PromptArgument::new(name).with_description(description).with_required(required)
    };
    vec![
        Prompt::new(
            REVIEW,
            Some("Review the changes this session made (the undo ledger's diff, commands' writes included)"),
            Some(vec![arg("path", "Only changes under this path (default: all)", false)]),
        )
        .with_title("Review this session's changes"),
        Prompt::new(
            PLAN,
            Some("Plan a task into the workspace's todo list, starting from what the list holds now"),
            Some(vec![arg("task", "What to plan", true), arg("list", "The todo list (default: `default`)", false)]),
        )
        .with_title("Plan a task as todos"),
        Prompt::new(
            RECALL,
            Some("What memory holds about a topic (this workspace's and the global memories)"),
            Some(vec![arg("topic", "What to recall", true)]),
        )
        .with_title("Recall from memory"),
    ]
}

/// The tool and arguments that run `operation` of `tool` in `layout`.
fn call(layout: ToolLayout, tool: &str, operation: &str, mut args: Map<String, Value>) -> CallToolRequestParams {
    let name = match layout {
        ToolLayout::Consolidated => {
            args.insert("operation".into(), operation.into());
            tool.to_string()
        }
        ToolLayout::Granular => match tool {
            "todo_operations" => format!("todo_{operation}"),
            "memory_operations" => format!("memory_{operation}"),
            _ => operation.to_string(),
        },
    };
    CallToolRequestParams::new(name).with_arguments(args)
}

/// The text of an operation's result, run as a tool call (the gate, the audit log); what
/// went wrong, said plainly, when it did not complete.
async fn run(server: &Server, context: &RequestContext<RoleServer>, params: CallToolRequestParams) -> (bool, String) {
    match ServerHandler::call_tool(server, params, context.clone()).await {
        Ok(CallToolResponse::Complete(result)) => {
            let text = result.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.as_str()).collect::<Vec<_>>();
            (result.is_error != Some(true), text.join("\n"))
        }
        Ok(_) => (false, "it needs the user's approval first (the approval policy asks even for reads)".into()),
        Err(err) => (false, err.message.to_string()),
    }
}

/// An argument as text, if given and not blank.
fn argument<'a>(arguments: &'a Option<Map<String, Value>>, name: &str) -> Option<&'a str> {
    arguments.as_ref()?.get(name)?.as_str().map(str::trim).filter(|v| !v.is_empty())
}

/// The prompt `name` with `arguments`, its text built from the workspace's state now.
pub(crate) async fn get(
    server: &Server,
    context: &RequestContext<RoleServer>,
    name: &str,
    arguments: &Option<Map<String, Value>>,
) -> Result<GetPromptResult, McpError> {
    let layout = server.shared.config.tool_layout;
    let missing = |arg: &str| McpError::invalid_params(format!("the prompt `{name}` needs the argument `{arg}`"), None);
    let text = match name {
        REVIEW => {
            let mut args = Map::new();
            if let Some(path) = argument(arguments, "path") {
                args.insert("path".into(), path.into());
            }
            let (ok, changes) = run(server, context, call(layout, "file_operations", "changes", args)).await;
            if ok {
                format!(
                    "Review the changes this session made in the workspace. Below is the undo ledger's account: each file's first state against its current one, with the commands that wrote it. For each file say what changed and whether it is right: bugs, leftovers (debug output, commented-out code, stray files), missing tests, and anything that does not match the task. Propose concrete fixes. A change the user rejects can be taken back with `undo` (file_operations).\n\n{changes}"
                )
            } else {
                format!(
                    "Review the changes this session made in the workspace. The ledger could not be read here ({changes}); call `changes` (file_operations) and review each file's diff: bugs, leftovers, missing tests, and anything that does not match the task."
                )
            }
        }
        PLAN => {
            let task = argument(arguments, "task").ok_or_else(|| missing("task"))?;
            let list = argument(arguments, "list").unwrap_or("default");
            let read = call(layout, "todo_operations", "read", Map::from_iter([("list".to_string(), json!(list))]));
            let (ok, now) = run(server, context, read).await;
            let now = if ok { now } else { format!("(could not be read: {now})") };
            format!(
                "Plan this task into the todo list `{list}` before starting on it:\n\n{task}\n\nThe list holds now:\n\n{now}\n\nWrite 3 to 8 concrete steps, each one checkable when done, in the order they will be done, with `todo_operations` (`write` replaces the list: keep the items that still stand, completed ones included). Mark the first step `in_progress`, then begin."
            )
        }
        RECALL => {
            let topic = argument(arguments, "topic").ok_or_else(|| missing("topic"))?;
            let mut found = Vec::new();
            for scope in ["workspace", "global"] {
                let args = Map::from_iter([("query".to_string(), json!(topic)), ("scope".to_string(), json!(scope))]);
                let (_, text) = run(server, context, call(layout, "memory_operations", "search", args)).await;
                found.push(format!("### {scope}\n\n{text}"));
            }
            format!(
                "Here is what memory holds about \"{topic}\" (this workspace's memories, then the global ones):\n\n{}\n\nUse what is relevant. Where a memory is outdated or wrong, correct it with `memory_operations` (`update`, or `delete`); where something worth keeping about this topic is missing, `store` it.",
                found.join("\n\n")
            )
        }
        other => {
            let names: Vec<String> = list().iter().map(|p| format!("`{}`", p.name)).collect();
            return Err(McpError::invalid_params(
                format!("no prompt `{other}`; this server has {}", names.join(", ")),
                None,
            ));
        }
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]))
}

/// Values for the argument being completed: a prompt's `list`, `topic` or `path`, or a
/// resource template's `{list}` or `{collection}`; those starting with what was typed.
pub(crate) async fn complete(server: &Server, request: &CompleteRequestParams) -> Result<CompleteResult, McpError> {
    let store = &server.shared.store;
    let workspace = server.workspace().await;
    let wanted = (&request.r#ref, request.argument.name.as_str());
    let candidates: Vec<String> = match wanted {
        (Reference::Prompt(p), "list") if p.name == PLAN => lists(store, &workspace).await,
        (Reference::Resource(r), "list") if r.uri == "todo://{list}" => lists(store, &workspace).await,
        (Reference::Resource(r), "collection") if r.uri == "memory://{collection}" => {
            collections(store, &workspace).await
        }
        (Reference::Resource(r), "collection") if r.uri == "memory://global/{collection}" => {
            collections(store, GLOBAL).await
        }
        (Reference::Prompt(p), "topic") if p.name == RECALL => topics(store, &workspace).await,
        _ => Vec::new(),
    };
    let typed = request.argument.value.to_lowercase();
    let mut values: Vec<String> = candidates.into_iter().filter(|v| v.to_lowercase().starts_with(&typed)).collect();
    values.sort();
    values.dedup();
    let total = values.len();
    values.truncate(CompletionInfo::MAX_VALUES);
    let mut info = CompletionInfo::new(values).map_err(|err| McpError::internal_error(err, None))?;
    info.total = u32::try_from(total).ok();
    info.has_more = Some(total > CompletionInfo::MAX_VALUES);
    Ok(CompleteResult::new(info))
}

async fn lists(store: &toolbelt_mcp_store::Store, workspace: &str) -> Vec<String> {
    let mut names: Vec<String> =
        store.todo_lists(workspace).await.unwrap_or_default().into_iter().map(|l| l.name).collect();
    names.push("default".into());
    names
}

async fn collections(store: &toolbelt_mcp_store::Store, key: &str) -> Vec<String> {
    store.memory_collections(key).await.unwrap_or_default().into_iter().map(|c| c.name).collect()
}

/// Titles and tags of the newest memories of this workspace and the global scope.
async fn topics(store: &toolbelt_mcp_store::Store, workspace: &str) -> Vec<String> {
    let mut topics = Vec::new();
    for key in [workspace, GLOBAL] {
        for collection in collections(store, key).await {
            for memory in store.memory_recent(key, &collection, 100).await.unwrap_or_default() {
                topics.extend(memory.tags);
                if !memory.title.is_empty() {
                    topics.push(memory.title);
                }
            }
        }
    }
    topics
}
