//! `todo_operations`: a validated plan the agent keeps per workspace, stored in the server's
//! database (so it survives restarts) and exposed as the resource `todo://{list}`.

mod add;
mod read;
mod update;
mod write;

use schemars::JsonSchema;
use serde::Serialize;

use crate::{Context, OperationDef, Reply, ToolDef};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_store::todo_rules::{percent, plural};
use toolbelt_mcp_store::todos::{Item, Priority, Status, TodoList};
use toolbelt_mcp_store::{StoreError, TodoChange};

/// The `todo_operations` tool and its operations, in listing order.
pub const TOOL: ToolDef = ToolDef {
    name: "todo_operations",
    title: "Todo operations",
    summary: "Plan multi-step work: a todo list per workspace, kept across restarts. Checked: one `in_progress` item, `blocked` needs `blocked_reason`, dependencies exist without cycles, `write` keeps completed items.",
    operations: &[
        OperationDef::of::<read::Read>(),
        OperationDef::of::<write::Write>(),
        OperationDef::of::<add::Add>(),
        OperationDef::of::<update::Update>(),
    ],
    granular_prefix: "todo_",
};

/// The list used when a call names none.
const DEFAULT_LIST: &str = "default";

/// The lean view of a list: the default list's name, a row's usual priority and the counts
/// that are zero go.
pub(super) const TODO_LEAN: crate::Lean = crate::Lean {
    details: &[],
    usual: &[("list", "\"default\""), ("todos[].priority", "\"medium\""), ("counts.*", "0")],
    shadowed: &[],
    joined: &[],
    one_file_diff: false,
};

/// Every todo operation's result: the whole list as it now stands.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListOutput {
    /// The list's name.
    pub list: String,
    /// How many times it has been saved (0: never).
    pub revision: i64,
    /// Its items by status.
    pub counts: Counts,
    /// Its items, in order.
    pub todos: Vec<Item>,
    /// What this call changed.
    pub changes: Option<Vec<String>>,
    /// What looks off without breaking a rule (e.g. work started before its dependencies are done).
    pub warnings: Option<Vec<String>>,
}

/// Items by status.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Counts {
    /// All items.
    pub total: usize,
    /// `completed` ones.
    pub completed: usize,
    /// `in_progress` ones.
    pub in_progress: usize,
    /// `not_started` ones.
    pub not_started: usize,
    /// `blocked` ones.
    pub blocked: usize,
}

impl Counts {
    /// The counts of `items`.
    pub fn of(items: &[Item]) -> Self {
        let count = |status| items.iter().filter(|i| i.status == status).count();
        Self {
            total: items.len(),
            completed: count(Status::Completed),
            in_progress: count(Status::InProgress),
            not_started: count(Status::NotStarted),
            blocked: count(Status::Blocked),
        }
    }
}

/// The list a call names, checked, or the default one.
fn list_name(list: Option<String>) -> Result<String, ToolError> {
    let name = list.unwrap_or_else(|| DEFAULT_LIST.to_string());
    toolbelt_mcp_store::check_name("list", &name)?;
    Ok(name)
}

/// The resource URI of a list.
pub fn uri(list: &str) -> String {
    format!("todo://{list}")
}

/// A reply showing `list`, after what changed and before the warnings.
fn reply(list: TodoList, changes: Option<Vec<String>>, warnings: Vec<String>) -> Reply<ListOutput> {
    let mut text = String::new();
    for change in changes.iter().flatten() {
        text.push_str(change);
        text.push('\n');
    }
    text.push_str(&render(&list));
    for warning in &warnings {
        text.push_str(&format!("\nwarning: {warning}"));
    }
    let data = ListOutput {
        counts: Counts::of(&list.items),
        list: list.name,
        revision: list.revision,
        todos: list.items,
        changes,
        warnings: (!warnings.is_empty()).then_some(warnings),
    };
    Reply::new(text, data)
}

/// Runs one change of list `list` (`action` says what, for errors) and replies with the list
/// as saved (subscribers of its resource hear of it), or with why it was refused.
async fn change(context: &Context, list: Option<String>, apply: TodoChange) -> Result<Reply<ListOutput>, ToolError> {
    let name = list_name(list)?;
    let workspace = context.workspace();
    match context.store.todo_change(&workspace, &name, apply).await {
        Ok(saved) => {
            context.store.changed(&workspace, uri(&saved.list.name)).await;
            Ok(reply(saved.list, Some(saved.changes), saved.warnings))
        }
        Err(err) => Err(refused(context, name, err).await),
    }
}

/// A refused change as an error that also shows the list as it stands (unchanged), so the
/// agent corrects its picture along with its request.
async fn refused(context: &Context, name: String, err: StoreError) -> ToolError {
    let workspace = context.workspace();
    let shown = match &err {
        StoreError::Rule(_) | StoreError::NotFound(_) => context.store.todo_read(&workspace, &name).await.ok(),
        _ => None,
    };
    match (shown, err) {
        (Some(list), StoreError::Rule(message)) => {
            StoreError::Rule(format!("{message}\n\nunchanged {}", render(&list))).into()
        }
        (Some(list), StoreError::NotFound(message)) => {
            StoreError::NotFound(format!("{message}\n\nunchanged {}", render(&list))).into()
        }
        (_, err) => err.into(),
    }
}

/// The list as compact text: a summary line, then one line per item.
pub fn render(list: &TodoList) -> String {
    let counts = Counts::of(&list.items);
    if list.items.is_empty() {
        return format!("todo list `{}` is empty; `write` or `add` items to plan the work", list.name);
    }
    let mut text = format!(
        "todo list `{}`: {} of {} completed, {} in progress, {} blocked, {} not started",
        list.name,
        counts.completed,
        plural(counts.total, "item"),
        counts.in_progress,
        counts.blocked,
        counts.not_started
    );
    for item in &list.items {
        let mark = match item.status {
            Status::Completed => "[x]",
            Status::InProgress => "[>]",
            Status::Blocked => "[!]",
            Status::NotStarted => "[ ]",
        };
        text.push_str(&format!("\n{mark} {}. {}", item.id, item.title));
        let mut notes = Vec::new();
        if item.priority != Priority::Medium {
            notes.push(item.priority.as_str().to_string());
        }
        if let Some(progress) = item.progress.filter(|_| item.status != Status::Completed) {
            notes.push(percent(progress));
        }
        if !notes.is_empty() {
            text.push_str(&format!(" ({})", notes.join(", ")));
        }
        if !item.dependencies.is_empty() {
            let ids: Vec<String> = item.dependencies.iter().map(u32::to_string).collect();
            text.push_str(&format!(" — after {}", ids.join(", ")));
        }
        if let Some(reason) = &item.blocked_reason {
            text.push_str(&format!(" — blocked: {reason}"));
        }
        if let Some(description) = &item.description {
            let first = description.lines().next().unwrap_or_default();
            let short: String = first.chars().take(120).collect();
            let more = if short.len() < description.len() { "…" } else { "" };
            text.push_str(&format!("\n    {short}{more}"));
        }
    }
    text
}

/// The list as markdown, for the `todo://{list}` resource.
pub fn markdown(list: &TodoList) -> String {
    let mut text = format!("# Todo list `{}`\n\n", list.name);
    for line in render(list).lines().skip(1) {
        match line.strip_prefix("    ") {
            Some(detail) => text.push_str(&format!("  {detail}\n")),
            None => text.push_str(&format!("- {line}\n")),
        }
    }
    if list.items.is_empty() {
        text.push_str("(empty)\n");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: u32, status: Status) -> Item {
        Item {
            id,
            title: format!("step {id}"),
            description: None,
            status,
            priority: Priority::Medium,
            dependencies: Vec::new(),
            blocked_reason: None,
            progress: None,
        }
    }

    #[test]
    fn renders_compactly() {
        let mut blocked = item(3, Status::Blocked);
        blocked.blocked_reason = Some("needs keys".into());
        blocked.dependencies = vec![1];
        let mut doing = item(2, Status::InProgress);
        doing.priority = Priority::High;
        doing.progress = Some(0.4);
        doing.description = Some("parse the header\nthen the body".into());
        let list = TodoList {
            name: "default".into(),
            items: vec![item(1, Status::Completed), doing, blocked],
            revision: 2,
            updated_at: None,
        };
        assert_eq!(
            render(&list),
            "todo list `default`: 1 of 3 items completed, 1 in progress, 1 blocked, 0 not started\n[x] 1. step 1\n[>] 2. step 2 (high, 40%)\n    parse the header…\n[!] 3. step 3 — after 1 — blocked: needs keys"
        );
        assert!(markdown(&list).starts_with("# Todo list `default`\n\n- [x] 1. step 1\n"), "{}", markdown(&list));
    }
}
