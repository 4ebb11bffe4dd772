//! The PostgreSQL statements of every store call. The rules are the same functions SQLite's
//! calls use (`todo_rules`, the memory checks); only the SQL differs. Every change is one
//! transaction that locks what it reads (`FOR UPDATE`, or the list row an upsert takes), so
//! servers on several machines queue instead of losing updates.

use tokio_postgres::{Client, GenericClient, Row};

use crate::backend::{MemoryEdit, TodoChange};
use crate::memory::{self, Collection, Memory, NewMemory, Stored};
use crate::search::{self, Found, Hit, Mode, Query};
use crate::todos::{Item, Priority, Saved, Status, Summary, TodoList};
use crate::{GLOBAL, StoreError, now_ms, todo_rules};

/// Why a call failed: a rule of the store, or the driver.
#[derive(Debug)]
pub(super) enum Failure {
    /// A rule broken, an unknown id.
    Store(StoreError),
    /// The database or the connection.
    Driver(tokio_postgres::Error),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(err: tokio_postgres::Error) -> Self {
        Self::Driver(err)
    }
}

impl From<StoreError> for Failure {
    fn from(err: StoreError) -> Self {
        Self::Store(err)
    }
}

const MEMORY_COLUMNS: &str = "id, workspace, collection, title, content, tags, created_at, updated_at";

/// The list `name` of `workspace` (empty if never written); `lock` takes its row for a change.
pub(super) async fn todo_read(
    client: &impl GenericClient,
    workspace: &str,
    name: &str,
) -> Result<TodoList, tokio_postgres::Error> {
    read_list(client, workspace, name, false).await
}

async fn read_list(
    client: &impl GenericClient,
    workspace: &str,
    name: &str,
    lock: bool,
) -> Result<TodoList, tokio_postgres::Error> {
    let sql = format!(
        "SELECT id, revision, updated_at FROM todo_lists WHERE workspace = $1 AND name = $2{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let Some(row) = client.query_opt(&sql, &[&workspace, &name]).await? else {
        return Ok(TodoList { name: name.to_string(), items: Vec::new(), revision: 0, updated_at: None });
    };
    let (list_id, revision, updated_at): (i64, i64, i64) = (row.get(0), row.get(1), row.get(2));
    let rows = client
        .query(
            "SELECT id, title, description, status, priority, dependencies, blocked_reason, progress
             FROM todo_items WHERE list_id = $1 ORDER BY position",
            &[&list_id],
        )
        .await?;
    let items = rows
        .iter()
        .map(|row| Item {
            id: u32::try_from(row.get::<_, i32>(0)).unwrap_or(0),
            title: row.get(1),
            description: row.get(2),
            status: Status::parse(row.get(3)),
            priority: Priority::parse(row.get(4)),
            dependencies: serde_json::from_str(row.get(5)).unwrap_or_default(),
            blocked_reason: row.get(6),
            progress: row.get(7),
        })
        .collect();
    Ok(TodoList { name: name.to_string(), items, revision, updated_at: Some(updated_at) })
}

/// One transaction: take the list's row, derive the new items, check every rule, save.
pub(super) async fn todo_change(
    client: &mut Client,
    workspace: &str,
    name: &str,
    change: TodoChange,
) -> Result<Saved, Failure> {
    let transaction = client.transaction().await?;
    // The upsert creates the list row if needed and locks it, so concurrent changes queue.
    let now = now_ms();
    transaction
        .execute(
            "INSERT INTO todo_lists (workspace, name, revision, updated_at) VALUES ($1, $2, 0, $3)
             ON CONFLICT (workspace, name) DO NOTHING",
            &[&workspace, &name, &now],
        )
        .await?;
    let current = read_list(&transaction, workspace, name, true).await?;
    let (applied, replacing) = match change {
        TodoChange::Write(drafts) => (todo_rules::replace(&current.items, drafts), true),
        TodoChange::Add(drafts) => (todo_rules::append(&current.items, drafts), false),
        TodoChange::Update(patches) => (todo_rules::patch(&current.items, name, patches), false),
    };
    let todo_rules::Applied { items, changes } = applied?;
    let warnings = todo_rules::check(&items, &current.items, replacing)?;
    let row = transaction
        .query_one(
            "UPDATE todo_lists SET revision = revision + 1, updated_at = $3 WHERE workspace = $1 AND name = $2
             RETURNING id, revision",
            &[&workspace, &name, &now],
        )
        .await?;
    let (list_id, revision): (i64, i64) = (row.get(0), row.get(1));
    save_items(&transaction, list_id, &current.items, &items).await?;
    transaction.commit().await?;
    let list = TodoList { name: name.to_string(), items, revision, updated_at: Some(now) };
    Ok(Saved { list, changes, warnings })
}

/// Writes the rows that differ between `before` and `after`.
async fn save_items(
    client: &impl GenericClient,
    list_id: i64,
    before: &[Item],
    after: &[Item],
) -> Result<(), tokio_postgres::Error> {
    let kept: std::collections::BTreeSet<u32> = after.iter().map(|i| i.id).collect();
    for gone in before.iter().filter(|old| !kept.contains(&old.id)) {
        let id = i32::try_from(gone.id).unwrap_or(i32::MAX);
        client.execute("DELETE FROM todo_items WHERE list_id = $1 AND id = $2", &[&list_id, &id]).await?;
    }
    for (position, item) in after.iter().enumerate() {
        if before.get(position) == Some(item) {
            continue;
        }
        let dependencies = serde_json::to_string(&item.dependencies).unwrap_or_else(|_| "[]".into());
        let (id, position) = (i32::try_from(item.id).unwrap_or(i32::MAX), i32::try_from(position).unwrap_or(i32::MAX));
        client
            .execute(
                "INSERT INTO todo_items (list_id, id, position, title, description, status, priority, dependencies, blocked_reason, progress)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
                 ON CONFLICT (list_id, id) DO UPDATE SET position = excluded.position, title = excluded.title,
                     description = excluded.description, status = excluded.status, priority = excluded.priority,
                     dependencies = excluded.dependencies, blocked_reason = excluded.blocked_reason, progress = excluded.progress",
                &[
                    &list_id,
                    &id,
                    &position,
                    &item.title,
                    &item.description,
                    &item.status.as_str(),
                    &item.priority.as_str(),
                    &dependencies,
                    &item.blocked_reason,
                    &item.progress,
                ],
            )
            .await?;
    }
    Ok(())
}

/// How many times list `name` was saved (0: never).
pub(super) async fn todo_revision(
    client: &impl GenericClient,
    workspace: &str,
    name: &str,
) -> Result<i64, tokio_postgres::Error> {
    let row = client
        .query_opt("SELECT revision FROM todo_lists WHERE workspace = $1 AND name = $2", &[&workspace, &name])
        .await?;
    Ok(row.map_or(0, |row| row.get(0)))
}

/// The workspace's lists, by name.
pub(super) async fn todo_lists(
    client: &impl GenericClient,
    workspace: &str,
) -> Result<Vec<Summary>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT l.name, count(i.id), count(CASE WHEN i.status = 'completed' THEN 1 END)
             FROM todo_lists l LEFT JOIN todo_items i ON i.list_id = l.id
             WHERE l.workspace = $1 GROUP BY l.id, l.name ORDER BY l.name",
            &[&workspace],
        )
        .await?;
    Ok(rows.iter().map(|row| Summary { name: row.get(0), total: row.get(1), completed: row.get(2) }).collect())
}

fn memory_row(row: &Row) -> Memory {
    Memory {
        id: row.get(0),
        workspace: row.get(1),
        collection: row.get(2),
        title: row.get(3),
        content: row.get(4),
        tags: memory::parse_tags(row.get(5)),
        created_at: row.get(6),
        updated_at: row.get(7),
    }
}

/// Stores `memory`, or finds the same content already in its collection.
pub(super) async fn memory_store(client: &mut Client, workspace: &str, memory: &NewMemory) -> Result<Stored, Failure> {
    let hash = memory::hash(&memory.content);
    let now = now_ms();
    let tags = memory::tags_json(&memory.tags);
    // One statement: an insert that yields to the same content stored at the same moment.
    let inserted = client
        .query_opt(
            "INSERT INTO memories (workspace, collection, title, content, tags, hash, created_at, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7) ON CONFLICT (workspace, collection, hash) DO NOTHING RETURNING id",
            &[&workspace, &memory.collection, &memory.title, &memory.content, &tags, &hash, &now],
        )
        .await?;
    if let Some(row) = inserted {
        return Ok(Stored { id: row.get(0), duplicate: false });
    }
    let row = client
        .query_one(
            "SELECT id FROM memories WHERE workspace = $1 AND collection = $2 AND hash = $3",
            &[&workspace, &memory.collection, &hash],
        )
        .await?;
    Ok(Stored { id: row.get(0), duplicate: true })
}

/// Memory `id`, if it belongs to `workspace` or the global scope.
pub(super) async fn memory_get(client: &impl GenericClient, workspace: &str, id: i64) -> Result<Memory, Failure> {
    get_memory(client, workspace, id, false).await
}

async fn get_memory(client: &impl GenericClient, workspace: &str, id: i64, lock: bool) -> Result<Memory, Failure> {
    let sql = format!(
        "SELECT {MEMORY_COLUMNS} FROM memories WHERE id = $1 AND workspace IN ($2, $3){}",
        if lock { " FOR UPDATE" } else { "" }
    );
    let row = client.query_opt(&sql, &[&id, &workspace, &GLOBAL]).await?;
    row.as_ref().map(memory_row).ok_or_else(|| Failure::Store(memory::not_found(id)))
}

/// Changes the given fields of memory `id`; returns it as now stored.
pub(super) async fn memory_update(
    client: &mut Client,
    workspace: &str,
    id: i64,
    edit: MemoryEdit,
) -> Result<Memory, Failure> {
    let (content, title, tags) = edit;
    let transaction = client.transaction().await?;
    let mut memory = get_memory(&transaction, workspace, id, true).await?;
    if let Some(content) = content {
        memory.content = content;
    }
    memory.title = title.unwrap_or(memory.title);
    memory.tags = tags.unwrap_or(memory.tags);
    memory.updated_at = now_ms();
    let hash = memory::hash(&memory.content);
    let clash = transaction
        .query_opt(
            "SELECT id FROM memories WHERE workspace = $1 AND collection = $2 AND hash = $3 AND id != $4",
            &[&memory.workspace, &memory.collection, &hash, &id],
        )
        .await?;
    if let Some(other) = clash {
        let other: i64 = other.get(0);
        return Err(Failure::Store(StoreError::Rule(format!(
            "memory {other} already holds this content in collection `{}`; delete one of the two instead",
            memory.collection
        ))));
    }
    transaction
        .execute(
            "UPDATE memories SET title = $2, content = $3, tags = $4, hash = $5, updated_at = $6 WHERE id = $1",
            &[&id, &memory.title, &memory.content, &memory::tags_json(&memory.tags), &hash, &memory.updated_at],
        )
        .await?;
    transaction.commit().await?;
    Ok(memory)
}

/// Deletes memory `id`; returns what it was.
pub(super) async fn memory_delete(client: &mut Client, workspace: &str, id: i64) -> Result<Memory, Failure> {
    let sql = format!("DELETE FROM memories WHERE id = $1 AND workspace IN ($2, $3) RETURNING {MEMORY_COLUMNS}");
    let row = client.query_opt(&sql, &[&id, &workspace, &GLOBAL]).await?;
    row.as_ref().map(memory_row).ok_or_else(|| Failure::Store(memory::not_found(id)))
}

/// The collections of `workspace`, by name.
pub(super) async fn memory_collections(
    client: &impl GenericClient,
    workspace: &str,
) -> Result<Vec<Collection>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT collection, count(*), max(updated_at) FROM memories WHERE workspace = $1
             GROUP BY collection ORDER BY collection",
            &[&workspace],
        )
        .await?;
    Ok(rows.iter().map(|row| Collection { name: row.get(0), count: row.get(1), updated_at: row.get(2) }).collect())
}

/// A value that changes whenever a memory of the collection changes.
pub(super) async fn memory_fingerprint(
    client: &impl GenericClient,
    workspace: &str,
    collection: &str,
) -> Result<[i64; 3], tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT count(*), coalesce(max(updated_at), 0), coalesce(max(id), 0) FROM memories
             WHERE workspace = $1 AND collection = $2",
            &[&workspace, &collection],
        )
        .await?;
    Ok([row.get(0), row.get(1), row.get(2)])
}

/// The newest `limit` memories of a collection, newest first.
pub(super) async fn memory_recent(
    client: &impl GenericClient,
    workspace: &str,
    collection: &str,
    limit: u32,
) -> Result<Vec<Memory>, tokio_postgres::Error> {
    let sql = format!(
        "SELECT {MEMORY_COLUMNS} FROM memories WHERE workspace = $1 AND collection = $2
         ORDER BY updated_at DESC, id DESC LIMIT $3"
    );
    let rows = client.query(&sql, &[&workspace, &collection, &i64::from(limit)]).await?;
    Ok(rows.iter().map(memory_row).collect())
}

/// Searches `workspace`: the text as web search syntax (`"a phrase"`, `or`, `-word`); if it
/// holds no words PostgreSQL indexes, as plain words; if several words match nothing
/// together and no operator was used, any of them.
pub(super) async fn memory_search(
    client: &impl GenericClient,
    workspace: &str,
    query: &Query,
) -> Result<Found, Failure> {
    let words = search::words(&query.text);
    if words.is_empty() {
        return Err(Failure::Store(StoreError::Rule(format!(
            "`query` `{}` has no words to search for; give words (web search syntax works too: `deploy staging`, `\"exact phrase\"`, `deploy or release`, `-staging`)",
            query.text
        ))));
    }
    let quoted: Vec<String> = words.iter().map(|w| format!("'{}'", w.to_lowercase())).collect();
    let parsed: bool =
        client.query_one("SELECT numnode(websearch_to_tsquery('toolbelt', $1)) > 0", &[&query.text]).await?.get(0);
    let (mut mode, mut tsquery) = if parsed {
        (Mode::Fts, ("websearch_to_tsquery('toolbelt', $1)", query.text.clone()))
    } else {
        (Mode::Plain, ("to_tsquery('toolbelt', $1)", quoted.join(" & ")))
    };
    let mut page = ranked(client, workspace, query, tsquery.0, &tsquery.1).await?;
    if page.1 == 0 && words.len() > 1 && (mode == Mode::Plain || !search::has_operators(&query.text)) {
        mode = Mode::AnyWord;
        tsquery = ("to_tsquery('toolbelt', $1)", quoted.join(" | "));
        page = ranked(client, workspace, query, tsquery.0, &tsquery.1).await?;
    }
    let (hits, counted) = page;
    Ok(Found::new(hits, counted, search::RANK_WINDOW, mode))
}

/// One page of hits for a tsquery expression over `$1`, and the matches counted up to one past
/// the window. Only the newest matches within the window are scored. The expression is
/// written out where it is used, not computed once in a CTE: planning then sees how many rows
/// match (PostgreSQL evaluates it for the estimate), so a common word walks the primary key
/// backwards and stops at the window, scoring as it goes, while a rare one takes its few rows
/// from the GIN index. Behind a CTE the planner guessed 5,000 matches for any query and took
/// every match of a common word from the heap (0.3 s for 200,000).
async fn ranked(
    client: &impl GenericClient,
    workspace: &str,
    query: &Query,
    tsquery: &str,
    text: &str,
) -> Result<(Vec<Hit>, i64), tokio_postgres::Error> {
    let tags = memory::tags_json(&query.tags);
    let sql = format!(
        "WITH newest AS MATERIALIZED (
             SELECT m.id, m.collection, m.title, m.tags, m.content, m.updated_at, ts_rank_cd(m.search, {tsquery}, 32) AS score
             FROM memories m
             WHERE m.search @@ {tsquery} AND m.workspace = $2
               AND ($3::text IS NULL OR m.collection = $3)
               AND ($4::text = '[]' OR m.tags::jsonb @> $4::jsonb)
             ORDER BY m.id DESC LIMIT $7
         )
         SELECT id, collection, title, tags, char_length(content)::bigint, updated_at,
                ts_headline('toolbelt', content, {tsquery}, 'StartSel=**, StopSel=**, MaxWords=24, MinWords=12, ShortWord=1, HighlightAll=false'),
                score::float8, (SELECT count(*) FROM newest)
         FROM (SELECT * FROM newest ORDER BY id DESC LIMIT $7 - 1) w ORDER BY score DESC, id LIMIT $5 OFFSET $6"
    );
    let collection = query.collection.as_deref();
    let (limit, offset) = (i64::from(query.limit), i64::from(query.offset));
    let window = i64::from(search::RANK_WINDOW) + 1;
    let rows = client.query(&sql, &[&text, &workspace, &collection, &tags, &limit, &offset, &window]).await?;
    let mut total = rows.first().map_or(0, |row| row.get::<_, i64>(8));
    if rows.is_empty() && query.offset > 0 {
        let count = format!(
            "SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.search @@ {tsquery} AND m.workspace = $2
             AND ($3::text IS NULL OR m.collection = $3) AND ($4::text = '[]' OR m.tags::jsonb @> $4::jsonb) LIMIT $5) c"
        );
        total = client.query_one(&count, &[&text, &workspace, &collection, &tags, &window]).await?.get(0);
    }
    let hits = rows
        .iter()
        .map(|row| Hit {
            id: row.get(0),
            collection: row.get(1),
            title: row.get(2),
            tags: memory::parse_tags(row.get(3)),
            chars: row.get(4),
            updated_at: row.get(5),
            snippet: row.get(6),
            score: (row.get::<_, f64>(7) * 1000.0).round() / 1000.0,
        })
        .collect();
    Ok((hits, total))
}

/// How many todo lists and memories there are.
pub(super) async fn counts(client: &impl GenericClient) -> Result<(i64, i64), tokio_postgres::Error> {
    let row =
        client.query_one("SELECT (SELECT count(*) FROM todo_lists), (SELECT count(*) FROM memories)", &[]).await?;
    Ok((row.get(0), row.get(1)))
}

/// Moves workspace `from`'s records to `to`, keeping what `to` already has.
pub(super) async fn adopt(client: &mut Client, from: &str, to: &str) -> Result<usize, tokio_postgres::Error> {
    let transaction = client.transaction().await?;
    let lists = transaction
        .execute(
            "UPDATE todo_lists l SET workspace = $2 WHERE workspace = $1
             AND NOT EXISTS (SELECT 1 FROM todo_lists o WHERE o.workspace = $2 AND o.name = l.name)",
            &[&from, &to],
        )
        .await?;
    let memories = transaction
        .execute(
            "UPDATE memories m SET workspace = $2 WHERE workspace = $1
             AND NOT EXISTS (SELECT 1 FROM memories o WHERE o.workspace = $2 AND o.collection = m.collection AND o.hash = m.hash)",
            &[&from, &to],
        )
        .await?;
    transaction.commit().await?;
    Ok(usize::try_from(lists + memories).unwrap_or(usize::MAX))
}
