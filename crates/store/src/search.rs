//! Searching memories: SQLite FTS5 with BM25 ranking, a page at a time, each hit with a
//! highlighted snippet; text that is not valid FTS5 syntax is searched as plain words.

use rusqlite::types::Value as SqlValue;
use rusqlite::{Connection, ErrorCode, params};

use crate::StoreError;
use crate::memory::{parse_tags, tags_json};

/// Results one search may return.
pub const MAX_LIMIT: u32 = 100;
/// Matches scored at most per search: the newest (highest ids). Scoring is what a common word
/// costs (about 1.7 µs a match here, 3.3 µs on PostgreSQL: 0.3 and 0.7 s for a word in 200,000
/// of a million memories); past this many, the best of the newest are returned and
/// [`Found::capped`] says so.
pub const RANK_WINDOW: u32 = 10_000;
/// BM25 weights of the indexed columns: title, content, tags.
const RANK: &str = "bm25(memories_fts, 4.0, 1.0, 2.0)";

/// A search.
#[derive(Debug, Clone)]
pub struct Query {
    /// FTS5 query text (or plain words).
    pub text: String,
    /// Only this collection.
    pub collection: Option<String>,
    /// Only memories with every one of these tags.
    pub tags: Vec<String>,
    /// Results per page.
    pub limit: u32,
    /// Results to skip.
    pub offset: u32,
}

/// How the query text was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// As FTS5 syntax.
    Fts,
    /// As plain words, all required (the text was not valid FTS5 syntax).
    Plain,
    /// As plain words, any of them (no memory had all of them).
    AnyWord,
}

impl Mode {
    /// `fts`, `plain` or `any_word`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fts => "fts",
            Self::Plain => "plain",
            Self::AnyWord => "any_word",
        }
    }
}

/// One search result: a snippet, never the whole content.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The memory's id.
    pub id: i64,
    /// Its collection.
    pub collection: String,
    /// Its title.
    pub title: String,
    /// Its tags.
    pub tags: Vec<String>,
    /// The best-matching part of its content, matches in `**bold**`.
    pub snippet: String,
    /// Relevance (BM25, higher is better).
    pub score: f64,
    /// Characters of content.
    pub chars: i64,
    /// When it last changed.
    pub updated_at: i64,
}

/// A page of search results.
#[derive(Debug, Clone)]
pub struct Found {
    /// The page.
    pub hits: Vec<Hit>,
    /// Matches in all, at most [`RANK_WINDOW`].
    pub total: i64,
    /// More than [`RANK_WINDOW`] match: `total` counts and ranks the newest of them only.
    pub capped: bool,
    /// How the query was read.
    pub mode: Mode,
}

impl Found {
    /// A page from the number of matches counted up to one past the window.
    pub fn new(hits: Vec<Hit>, counted: i64, window: u32, mode: Mode) -> Self {
        let window = i64::from(window);
        Self { hits, total: counted.min(window), capped: counted > window, mode }
    }
}

/// Searches `workspace`: the text as FTS5 syntax first; if SQLite rejects it, as plain words
/// (all required); if several plain words match nothing together, any of them.
pub fn search(connection: &Connection, workspace: &str, query: &Query) -> Result<Found, StoreError> {
    search_within(connection, workspace, query, RANK_WINDOW)
}

/// [`search`], scoring the newest `window` matches at most.
fn search_within(connection: &Connection, workspace: &str, query: &Query, window: u32) -> Result<Found, StoreError> {
    let words = words(&query.text);
    if words.is_empty() {
        return Err(StoreError::Rule(format!(
            "`query` `{}` has no words to search for; give words (FTS5 syntax works too: `deploy AND staging`, `\"exact phrase\"`, `pars*`)",
            query.text
        )));
    }
    let quoted: Vec<String> = words.iter().map(|w| format!("\"{w}\"")).collect();
    let (mut mode, mut page) = match ranked(connection, workspace, query, &query.text, window) {
        Ok(page) => (Mode::Fts, page),
        Err(err) if is_query_error(&err) => {
            (Mode::Plain, ranked(connection, workspace, query, &quoted.join(" "), window)?)
        }
        Err(err) => return Err(err.into()),
    };
    if page.1 == 0 && words.len() > 1 && (mode == Mode::Plain || !has_operators(&query.text)) {
        mode = Mode::AnyWord;
        page = ranked(connection, workspace, query, &quoted.join(" OR "), window)?;
    }
    let (ids, counted, fts) = page;
    let mut snippet = connection.prepare_cached(
        "SELECT m.collection, m.title, m.tags, length(m.content), m.updated_at,
                snippet(memories_fts, 1, '**', '**', '…', 24)
         FROM memories_fts CROSS JOIN memories m ON m.id = memories_fts.rowid
         WHERE memories_fts MATCH ?1 AND memories_fts.rowid = ?2",
    )?;
    let mut hits = Vec::with_capacity(ids.len());
    for (id, score) in ids {
        let hit = snippet.query_row(params![fts, id], |row| {
            Ok(Hit {
                id,
                collection: row.get(0)?,
                title: row.get(1)?,
                tags: parse_tags(&row.get::<_, String>(2)?),
                chars: row.get(3)?,
                updated_at: row.get(4)?,
                snippet: row.get(5)?,
                score: (-score * 100.0).round() / 100.0,
            })
        })?;
        hits.push(hit);
    }
    Ok(Found::new(hits, counted, window, mode))
}

/// One page of (id, bm25) for an FTS5 query, the matches counted up to one past the window,
/// and the query run.
type Page = (Vec<(i64, f64)>, i64, String);

fn ranked(connection: &Connection, workspace: &str, query: &Query, fts: &str, window: u32) -> rusqlite::Result<Page> {
    let (matches, mut values) = matching(workspace, query, fts);
    // FTS5 hands the matches over newest first (it consumes the `ORDER BY rowid DESC`), so the
    // walk stops one past the window and only those rows are scored. Its ranking function
    // cannot sit beside a window function: score in a materialized step, then count and page.
    let n = values.len();
    let sql = format!(
        "WITH newest AS MATERIALIZED (SELECT m.id AS id, {RANK} AS score {matches} ORDER BY memories_fts.rowid DESC LIMIT ?{w}),
              window AS (SELECT id, score FROM newest ORDER BY id DESC LIMIT ?{w} - 1)
         SELECT id, score, (SELECT count(*) FROM newest) FROM window ORDER BY score, id LIMIT ?{l} OFFSET ?{o}",
        w = n + 1,
        l = n + 2,
        o = n + 3
    );
    let mut statement = connection.prepare_cached(&sql)?;
    values.extend([
        SqlValue::Integer(i64::from(window) + 1),
        SqlValue::Integer(query.limit.into()),
        SqlValue::Integer(query.offset.into()),
    ]);
    let mut total = 0;
    let mut page = Vec::new();
    let mut rows = statement.query(rusqlite::params_from_iter(&values))?;
    while let Some(row) = rows.next()? {
        total = row.get(2)?;
        page.push((row.get(0)?, row.get(1)?));
    }
    if page.is_empty() && query.offset > 0 {
        // Past the last page: count the matches on their own, up to one past the window.
        values.truncate(values.len() - 2);
        let sql = format!("SELECT count(*) FROM (SELECT 1 {matches} LIMIT ?{})", n + 1);
        total = connection.prepare_cached(&sql)?.query_row(rusqlite::params_from_iter(&values), |r| r.get(0))?;
    }
    Ok((page, total, fts.to_string()))
}

/// The `FROM … WHERE …` of the memories of `workspace` matching `fts` and the query's
/// collection and tags, with its parameters. The full-text index drives the join (`CROSS
/// JOIN` keeps SQLite from scanning the workspace's memories and probing the index for each);
/// the unary `+` keeps the column filters off the table's index, which also spares a re-prepare
/// of the statement at every call (SQLite's STAT4 planner re-plans when a bound value could
/// change an index choice).
fn matching(workspace: &str, query: &Query, fts: &str) -> (String, Vec<SqlValue>) {
    let mut sql = String::from(
        "FROM memories_fts CROSS JOIN memories m ON m.id = memories_fts.rowid WHERE memories_fts MATCH ?1 AND +m.workspace = ?2",
    );
    let mut values = vec![SqlValue::Text(fts.to_string()), SqlValue::Text(workspace.to_string())];
    if let Some(collection) = &query.collection {
        values.push(SqlValue::Text(collection.clone()));
        sql.push_str(&format!(" AND +m.collection = ?{}", values.len()));
    }
    if !query.tags.is_empty() {
        values.push(SqlValue::Text(tags_json(&query.tags)));
        let n = values.len();
        sql.push_str(&format!(
            " AND (SELECT count(*) FROM json_each(m.tags) WHERE value IN (SELECT value FROM json_each(?{n}))) = json_array_length(?{n})"
        ));
    }
    (sql, values)
}

/// A query SQLite rejected (FTS5 syntax, an unknown column filter), not a failing database.
fn is_query_error(err: &rusqlite::Error) -> bool {
    let rusqlite::Error::SqliteFailure(failure, Some(message)) = err else { return false };
    failure.code == ErrorCode::Unknown
        && ["fts5", "syntax error", "no such column", "unterminated string", "unknown special query"]
            .iter()
            .any(|known| message.contains(known))
}

/// The words FTS5's `unicode61` tokenizer would see: runs of letters and digits.
pub(super) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_string).collect()
}

/// Whether the text uses FTS5 operators, so "any word" would change what was asked.
pub(super) fn has_operators(text: &str) -> bool {
    text.contains(['"', '*', ':', '(', ')', '^', '+'])
        || text.split_whitespace().any(|w| matches!(w, "AND" | "OR" | "NOT") || w.starts_with("NEAR"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::store;
    use crate::testing::{connection, note};

    fn query(text: &str) -> Query {
        Query { text: text.into(), collection: None, tags: Vec::new(), limit: 10, offset: 0 }
    }

    #[test]
    fn searches_rank_snippet_and_fall_back() {
        let mut c = connection();
        store(&mut c, "/w", &note("deploy with the staging script, then check the logs", &["ops"])).unwrap();
        store(&mut c, "/w", &note("tests run with cargo test", &["ci"])).unwrap();
        let found = search(&c, "/w", &query("staging")).unwrap();
        assert_eq!((found.total, found.mode), (1, Mode::Fts));
        assert!(found.hits[0].snippet.contains("**staging**"), "{:?}", found.hits[0]);
        for text in ["\"staging", "staging*)", "-staging", "NEAR(staging", "nocolumn:staging"] {
            let found = search(&c, "/w", &query(text)).unwrap();
            assert!(matches!(found.mode, Mode::Plain | Mode::AnyWord) && found.total == 1, "{text}: {found:?}");
        }
        let near = search(&c, "/w", &query("NEAR(staging logs, 5)")).unwrap();
        assert_eq!((near.mode, near.total), (Mode::Fts, 1));
        let any = search(&c, "/w", &query("staging cargo")).unwrap();
        assert_eq!((any.mode, any.total), (Mode::AnyWord, 2));
        let tagged = search(&c, "/w", &Query { tags: vec!["ci".into()], ..query("cargo OR staging") }).unwrap();
        assert_eq!(tagged.total, 1);
        assert!(search(&c, "/w", &query("***")).is_err());
        let past = search(&c, "/w", &Query { offset: 5, ..query("cargo") }).unwrap();
        assert_eq!((past.hits.len(), past.total), (0, 1));
    }

    #[test]
    fn a_common_word_ranks_the_newest_matches_only_and_says_so() {
        let mut c = connection();
        // The oldest is the best match (the word three times): outside the window, it is not ranked.
        store(&mut c, "/w", &note("storage storage storage", &[])).unwrap();
        for n in 0..7 {
            store(&mut c, "/w", &note(&format!("note {n} about storage and other things"), &[])).unwrap();
        }
        store(&mut c, "/other", &note("storage in another workspace", &[])).unwrap();
        let found = search_within(&c, "/w", &query("storage"), 5).unwrap();
        assert_eq!((found.total, found.capped, found.hits.len()), (5, true, 5), "{found:?}");
        assert!(found.hits.iter().all(|h| h.id >= 4 && h.id <= 8), "the newest five of /w: {found:?}");
        let past = search_within(&c, "/w", &Query { offset: 5, ..query("storage") }, 5).unwrap();
        assert_eq!((past.hits.len(), past.total, past.capped), (0, 5, true));
        let exact = search_within(&c, "/w", &query("storage"), 8).unwrap();
        assert_eq!((exact.total, exact.capped), (8, false));
        assert_eq!(exact.hits[0].id, 1, "within the window the best match leads: {exact:?}");
    }
}
