//! The database schema, as an ordered list of migrations; `PRAGMA user_version` records how
//! many have run. Append new migrations, never edit old ones.

use rusqlite::{Connection, TransactionBehavior};

use crate::StoreError;

/// Migration `n` (0-based) brings `user_version` from `n` to `n + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: todo lists, memories and their full-text index.
    "
    CREATE TABLE todo_lists (
        id INTEGER PRIMARY KEY,
        workspace TEXT NOT NULL,
        name TEXT NOT NULL,
        revision INTEGER NOT NULL DEFAULT 0,
        updated_at INTEGER NOT NULL,
        UNIQUE (workspace, name)
    );
    CREATE TABLE todo_items (
        list_id INTEGER NOT NULL REFERENCES todo_lists (id) ON DELETE CASCADE,
        id INTEGER NOT NULL CHECK (id > 0),
        position INTEGER NOT NULL,
        title TEXT NOT NULL,
        description TEXT,
        status TEXT NOT NULL CHECK (status IN ('not_started', 'in_progress', 'completed', 'blocked')),
        priority TEXT NOT NULL CHECK (priority IN ('low', 'medium', 'high', 'critical')),
        dependencies TEXT NOT NULL DEFAULT '[]',
        blocked_reason TEXT,
        progress REAL CHECK (progress IS NULL OR (progress >= 0 AND progress <= 1)),
        PRIMARY KEY (list_id, id)
    ) WITHOUT ROWID;
    CREATE TABLE memories (
        id INTEGER PRIMARY KEY,
        workspace TEXT NOT NULL,
        collection TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        content TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        hash TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (workspace, collection, hash)
    );
    CREATE INDEX memories_by_collection ON memories (workspace, collection, updated_at);
    CREATE VIRTUAL TABLE memories_fts USING fts5 (
        title, content, tags,
        content = 'memories', content_rowid = 'id',
        tokenize = 'unicode61 remove_diacritics 2'
    );
    CREATE TRIGGER memories_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, title, content, tags) VALUES (new.id, new.title, new.content, new.tags);
    END;
    CREATE TRIGGER memories_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, title, content, tags)
            VALUES ('delete', old.id, old.title, old.content, old.tags);
    END;
    CREATE TRIGGER memories_update AFTER UPDATE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, title, content, tags)
            VALUES ('delete', old.id, old.title, old.content, old.tags);
        INSERT INTO memories_fts (rowid, title, content, tags) VALUES (new.id, new.title, new.content, new.tags);
    END;
    ",
];

/// The schema version this build creates.
pub(crate) const LATEST: usize = MIGRATIONS.len();

/// Runs the migrations the database lacks, in one transaction (so two servers starting
/// together migrate once), or refuses a database newer than this build.
pub(crate) fn migrate(connection: &mut Connection) -> Result<(), StoreError> {
    let current = version(connection)?;
    if current == LATEST as i64 {
        return Ok(());
    }
    if current > LATEST as i64 {
        return Err(too_new(connection, current));
    }
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    // Another process may have migrated while this one waited for the lock.
    let current = version(&transaction)?;
    if current > LATEST as i64 {
        return Err(too_new(&transaction, current));
    }
    for migration in MIGRATIONS.iter().skip(usize::try_from(current).unwrap_or(0)) {
        transaction.execute_batch(migration)?;
    }
    transaction.pragma_update(None, "user_version", LATEST as i64)?;
    transaction.commit()?;
    Ok(())
}

fn version(connection: &Connection) -> Result<i64, StoreError> {
    Ok(connection.query_row("PRAGMA user_version", [], |row| row.get(0))?)
}

fn too_new(connection: &Connection, found: i64) -> StoreError {
    let path = connection.path().unwrap_or_default().into();
    StoreError::TooNew { path, found, known: LATEST }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrates_once_and_refuses_newer_schemas() {
        let mut connection = Connection::open_in_memory().unwrap();
        migrate(&mut connection).unwrap();
        assert_eq!(version(&connection).unwrap(), LATEST as i64);
        migrate(&mut connection).unwrap();
        connection.execute("INSERT INTO memories (workspace, collection, content, hash, created_at, updated_at) VALUES ('w', 'c', 'hello world', 'h', 0, 0)", []).unwrap();
        let hits: i64 = connection
            .query_row("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'hello'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(hits, 1);
        connection.pragma_update(None, "user_version", LATEST as i64 + 1).unwrap();
        assert!(matches!(migrate(&mut connection), Err(StoreError::TooNew { .. })));
    }
}
