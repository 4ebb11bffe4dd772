//! The PostgreSQL schema, as an append-only list of migrations recorded in
//! `toolbelt_schema`; applied in one transaction under an advisory lock, so servers starting
//! together migrate once, and a database newer than this build is refused.

/// Migration `n` (0-based) brings the version from `n` to `n + 1`.
const MIGRATIONS: &[&str] = &[
    // 1: todo lists, memories and their weighted full-text vector (title A, tags B, content C;
    // the `toolbelt` configuration made by `search_configuration`, like SQLite's `unicode61`
    // with `remove_diacritics`: no stemming, no stop words, accents folded).
    "
    CREATE TABLE todo_lists (
        id BIGSERIAL PRIMARY KEY,
        workspace TEXT NOT NULL,
        name TEXT NOT NULL,
        revision BIGINT NOT NULL DEFAULT 0,
        updated_at BIGINT NOT NULL,
        UNIQUE (workspace, name)
    );
    CREATE TABLE todo_items (
        list_id BIGINT NOT NULL REFERENCES todo_lists (id) ON DELETE CASCADE,
        id INTEGER NOT NULL CHECK (id > 0),
        position INTEGER NOT NULL,
        title TEXT NOT NULL,
        description TEXT,
        status TEXT NOT NULL CHECK (status IN ('not_started', 'in_progress', 'completed', 'blocked')),
        priority TEXT NOT NULL CHECK (priority IN ('low', 'medium', 'high', 'critical')),
        dependencies TEXT NOT NULL DEFAULT '[]',
        blocked_reason TEXT,
        progress DOUBLE PRECISION CHECK (progress IS NULL OR (progress >= 0 AND progress <= 1)),
        PRIMARY KEY (list_id, id)
    );
    CREATE TABLE memories (
        id BIGSERIAL PRIMARY KEY,
        workspace TEXT NOT NULL,
        collection TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        content TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        hash TEXT NOT NULL,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        search TSVECTOR GENERATED ALWAYS AS (
            setweight(to_tsvector('toolbelt', title), 'A')
            || setweight(to_tsvector('toolbelt', tags), 'B')
            || setweight(to_tsvector('toolbelt', content), 'C')
        ) STORED,
        UNIQUE (workspace, collection, hash)
    );
    CREATE INDEX memories_by_collection ON memories (workspace, collection, updated_at);
    CREATE INDEX memories_search ON memories USING GIN (search);
    ",
];

/// The lock every server takes to migrate (`pg_advisory_xact_lock` key).
const LOCK: i64 = 0x746f_6f6c_6265_6c74; // "toolbelt"

/// Applies the migrations the database lacks, or refuses one newer than this build.
pub(super) async fn migrate(client: &mut deadpool_postgres::Object) -> Result<(), tokio_postgres::Error> {
    let transaction = client.transaction().await?;
    transaction.execute("SELECT pg_advisory_xact_lock($1)", &[&LOCK]).await?;
    transaction.batch_execute("CREATE TABLE IF NOT EXISTS toolbelt_schema (version INTEGER NOT NULL)").await?;
    let version: Option<i32> =
        transaction.query_opt("SELECT max(version) FROM toolbelt_schema", &[]).await?.and_then(|row| row.get(0));
    let version = usize::try_from(version.unwrap_or(0)).unwrap_or(0);
    if version > MIGRATIONS.len() {
        // Raised by the server, so it reaches the caller as the database's own message.
        let message = format!(
            "the schema version is {version}, newer than this build knows ({}); upgrade toolbelt-mcp",
            MIGRATIONS.len()
        );
        return transaction
            .batch_execute(&format!("DO $$ BEGIN RAISE EXCEPTION '{}'; END $$", message.replace('\'', "''")))
            .await;
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(version) {
        if index == 0 {
            search_configuration(&transaction).await?;
        }
        transaction.batch_execute(sql).await?;
        let applied = i32::try_from(index + 1).unwrap_or(i32::MAX);
        transaction.execute("INSERT INTO toolbelt_schema (version) VALUES ($1)", &[&applied]).await?;
    }
    transaction.commit().await
}

/// The text search configuration `toolbelt`: `simple` words with accents folded by the
/// `unaccent` extension, or plain `simple` words where the extension cannot be had (not
/// installed, or not allowed to this user): searches then match accents exactly.
async fn search_configuration(transaction: &deadpool_postgres::Transaction<'_>) -> Result<(), tokio_postgres::Error> {
    transaction.batch_execute("SAVEPOINT unaccent").await?;
    let folded = transaction.batch_execute("CREATE EXTENSION IF NOT EXISTS unaccent").await;
    let dictionaries = match folded {
        Ok(()) => "unaccent, simple",
        Err(err) => {
            tracing::warn!(%err, "no `unaccent` extension: memory searches will not fold accents");
            transaction.batch_execute("ROLLBACK TO SAVEPOINT unaccent").await?;
            "simple"
        }
    };
    transaction
        .batch_execute(&format!(
            "CREATE TEXT SEARCH CONFIGURATION toolbelt (COPY = simple);
             ALTER TEXT SEARCH CONFIGURATION toolbelt
                 ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part WITH {dictionaries};"
        ))
        .await
}
