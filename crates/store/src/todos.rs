//! Todo lists: items, their statuses, and the SQLite transactions that read and change a list.
//! Each list belongs to a workspace (`store::workspace`) and has a name (`default` unless given).

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::todo_rules::{self, Applied};
use crate::{StoreError, now_ms};

/// An item's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Not begun yet.
    NotStarted,
    /// Being worked on now (at most one item at a time).
    InProgress,
    /// Done.
    Completed,
    /// Waiting on something outside the list (needs a `blocked_reason`).
    Blocked,
}

impl Status {
    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotStarted => "not_started",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
            Self::Blocked => "blocked",
        }
    }

    pub(super) fn parse(word: &str) -> Self {
        match word {
            "in_progress" => Self::InProgress,
            "completed" => Self::Completed,
            "blocked" => Self::Blocked,
            _ => Self::NotStarted,
        }
    }
}

/// How much an item matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    /// Can wait.
    Low,
    /// The default.
    #[default]
    Medium,
    /// Soon.
    High,
    /// Before anything else.
    Critical,
}

impl Priority {
    /// The word stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Medium => "medium",
            Self::High => "high",
            Self::Critical => "critical",
        }
    }

    pub(super) fn parse(word: &str) -> Self {
        match word {
            "low" => Self::Low,
            "high" => Self::High,
            "critical" => Self::Critical,
            _ => Self::Medium,
        }
    }
}

/// One item of a list, as stored and returned.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Item {
    /// Its id, unique in the list.
    pub id: u32,
    /// What to do, in a few words.
    pub title: String,
    /// Details.
    pub description: Option<String>,
    /// `not_started`, `in_progress`, `completed` or `blocked`.
    pub status: Status,
    /// `low`, `medium`, `high` or `critical`.
    pub priority: Priority,
    /// Ids of the items that must be completed first.
    pub dependencies: Vec<u32>,
    /// What a `blocked` item waits for.
    pub blocked_reason: Option<String>,
    /// How far along it is, from 0 to 1.
    pub progress: Option<f64>,
}

/// An item as given to `write` or `add`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Draft {
    /// Default: next after the highest.
    pub id: Option<u32>,
    /// What to do.
    pub title: String,
    /// Details.
    pub description: Option<String>,
    /// Default `not_started`.
    pub status: Option<Status>,
    /// Default `medium`.
    pub priority: Option<Priority>,
    /// Ids to finish first.
    #[serde(default)]
    pub dependencies: Vec<u32>,
    /// What a `blocked` item waits for.
    pub blocked_reason: Option<String>,
    /// 0 to 1.
    pub progress: Option<f64>,
}

/// A change to one item, given to `update`: only the fields present change. The fields mean
/// what they do in [`Draft`]; they carry no docs of their own, which would repeat Draft's in
/// every `tools/list` (doc comments become schema descriptions).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Patch {
    /// The item.
    pub id: u32,
    pub status: Option<Status>,
    pub title: Option<String>,
    /// New details (`""` clears).
    pub description: Option<String>,
    pub priority: Option<Priority>,
    pub dependencies: Option<Vec<u32>>,
    pub blocked_reason: Option<String>,
    pub progress: Option<f64>,
}

/// A list as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct TodoList {
    /// Its name.
    pub name: String,
    /// Its items, in order.
    pub items: Vec<Item>,
    /// How many times it was saved (0: never).
    pub revision: i64,
    /// When it was last saved (ms since the epoch), if ever.
    pub updated_at: Option<i64>,
}

/// A list after a change: the list, what changed, and warnings that did not stop it.
#[derive(Debug, Clone)]
pub struct Saved {
    /// The list as now stored.
    pub list: TodoList,
    /// What the call changed, one line each.
    pub changes: Vec<String>,
    /// Things worth a look (e.g. an item in progress before its dependencies are done).
    pub warnings: Vec<String>,
}

/// One list of a workspace, for resource listings.
#[derive(Debug, Clone)]
pub struct Summary {
    /// Its name.
    pub name: String,
    /// Items in it.
    pub total: i64,
    /// Completed items.
    pub completed: i64,
}

/// The list `name` of `workspace` (empty if it was never written).
pub fn read(connection: &Connection, workspace: &str, name: &str) -> Result<TodoList, StoreError> {
    let row = connection
        .prepare_cached("SELECT id, revision, updated_at FROM todo_lists WHERE workspace = ?1 AND name = ?2")?
        .query_row(params![workspace, name], |row| Ok((row.get::<_, i64>(0)?, row.get(1)?, row.get(2)?)))
        .optional()?;
    let Some((list_id, revision, updated_at)) = row else {
        return Ok(TodoList { name: name.to_string(), items: Vec::new(), revision: 0, updated_at: None });
    };
    let mut statement = connection.prepare_cached(
        "SELECT id, title, description, status, priority, dependencies, blocked_reason, progress
         FROM todo_items WHERE list_id = ?1 ORDER BY position",
    )?;
    let items = statement
        .query_map([list_id], |row| {
            let dependencies: String = row.get(5)?;
            Ok(Item {
                id: row.get(0)?,
                title: row.get(1)?,
                description: row.get(2)?,
                status: Status::parse(&row.get::<_, String>(3)?),
                priority: Priority::parse(&row.get::<_, String>(4)?),
                dependencies: serde_json::from_str(&dependencies).unwrap_or_default(),
                blocked_reason: row.get(6)?,
                progress: row.get(7)?,
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(TodoList { name: name.to_string(), items, revision, updated_at: Some(updated_at) })
}

/// Replaces the list with `drafts` (completed items may not be dropped).
pub fn write(
    connection: &mut Connection,
    workspace: &str,
    name: &str,
    drafts: Vec<Draft>,
) -> Result<Saved, StoreError> {
    change(connection, workspace, name, true, |current| todo_rules::replace(current, drafts))
}

/// Appends `drafts`, giving them ids after the highest.
pub fn add(connection: &mut Connection, workspace: &str, name: &str, drafts: Vec<Draft>) -> Result<Saved, StoreError> {
    change(connection, workspace, name, false, |current| todo_rules::append(current, drafts))
}

/// Applies `patches` to existing items.
pub fn update(
    connection: &mut Connection,
    workspace: &str,
    name: &str,
    patches: Vec<Patch>,
) -> Result<Saved, StoreError> {
    change(connection, workspace, name, false, |current| todo_rules::patch(current, name, patches))
}

/// How many times list `name` was saved (0: never): changes whoever saves it.
pub fn revision(connection: &Connection, workspace: &str, name: &str) -> Result<i64, StoreError> {
    let found = connection
        .prepare_cached("SELECT revision FROM todo_lists WHERE workspace = ?1 AND name = ?2")?
        .query_row(params![workspace, name], |row| row.get(0))
        .optional()?;
    Ok(found.unwrap_or(0))
}

/// The workspace's lists that have items or were saved, by name.
pub fn lists(connection: &Connection, workspace: &str) -> Result<Vec<Summary>, StoreError> {
    let mut statement = connection.prepare_cached(
        "SELECT l.name, count(i.id), count(CASE WHEN i.status = 'completed' THEN 1 END)
         FROM todo_lists l LEFT JOIN todo_items i ON i.list_id = l.id
         WHERE l.workspace = ?1 GROUP BY l.id ORDER BY l.name",
    )?;
    let rows = statement
        .query_map([workspace], |row| Ok(Summary { name: row.get(0)?, total: row.get(1)?, completed: row.get(2)? }))?;
    Ok(rows.collect::<Result<Vec<_>, _>>()?)
}

/// Writes the rows that differ between `before` and `after` (a typical `update` touches one).
fn save_items(connection: &Connection, list_id: i64, before: &[Item], after: &[Item]) -> Result<(), StoreError> {
    let kept: std::collections::BTreeSet<u32> = after.iter().map(|i| i.id).collect();
    let mut remove = connection.prepare_cached("DELETE FROM todo_items WHERE list_id = ?1 AND id = ?2")?;
    for gone in before.iter().filter(|old| !kept.contains(&old.id)) {
        remove.execute(params![list_id, gone.id])?;
    }
    let mut upsert = connection.prepare_cached(
        "INSERT INTO todo_items (list_id, id, position, title, description, status, priority, dependencies, blocked_reason, progress)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
         ON CONFLICT (list_id, id) DO UPDATE SET position = excluded.position, title = excluded.title,
             description = excluded.description, status = excluded.status, priority = excluded.priority,
             dependencies = excluded.dependencies, blocked_reason = excluded.blocked_reason, progress = excluded.progress",
    )?;
    for (position, item) in after.iter().enumerate() {
        if before.get(position) == Some(item) {
            continue;
        }
        let dependencies = serde_json::to_string(&item.dependencies).unwrap_or_else(|_| "[]".into());
        upsert.execute(params![
            list_id,
            item.id,
            position as i64,
            item.title,
            item.description,
            item.status.as_str(),
            item.priority.as_str(),
            dependencies,
            item.blocked_reason,
            item.progress,
        ])?;
    }
    Ok(())
}

/// One transaction: read the list, derive the new items, check every rule, save.
fn change(
    connection: &mut Connection,
    workspace: &str,
    name: &str,
    replacing: bool,
    derive: impl FnOnce(&[Item]) -> Result<Applied, StoreError>,
) -> Result<Saved, StoreError> {
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current = read(&transaction, workspace, name)?;
    let Applied { items, changes } = derive(&current.items)?;
    let warnings = todo_rules::check(&items, &current.items, replacing)?;
    let now = now_ms();
    let (list_id, revision): (i64, i64) = transaction
        .prepare_cached(
            "INSERT INTO todo_lists (workspace, name, revision, updated_at) VALUES (?1, ?2, 1, ?3)
         ON CONFLICT (workspace, name) DO UPDATE SET revision = revision + 1, updated_at = excluded.updated_at
         RETURNING id, revision",
        )?
        .query_row(params![workspace, name, now], |row| Ok((row.get(0)?, row.get(1)?)))?;
    save_items(&transaction, list_id, &current.items, &items)?;
    transaction.commit()?;
    let list = TodoList { name: name.to_string(), items, revision, updated_at: Some(now) };
    Ok(Saved { list, changes, warnings })
}
