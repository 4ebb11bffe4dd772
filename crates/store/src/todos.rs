//! Todo lists: items, their statuses, and the SQLite transactions that read and change a list.
//! Each list belongs to a workspace (`store::workspace`) and has a name (`default` unless given).

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};

pub use crate::todo_list::{Draft, Item, Patch, Priority, Saved, Status, Summary, TodoList};
use crate::todo_rules::{self, Applied};
use crate::{StoreError, now_ms};

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
