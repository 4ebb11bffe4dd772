//! Section `scale` of the stdio bench: memory `store` and `search` at 10,000 and 1,000,000
//! memories on each engine (SQLite in the state dir; PostgreSQL on a private Unix socket,
//! started from the system's binaries like the tests do), then eight server processes storing
//! at once. The memories are bulk-loaded with SQL (a million MCP calls would take the bench
//! an hour); every timed call goes through MCP.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{Peer, ms, pg, stats, time_round_trips};

const TOPICS: [&str; 5] = ["parser", "network", "storage", "render", "deploy"];
/// The workspace the bench's servers use (`--workspace`), so bulk rows land in it.
const WORKSPACE: &str = "bench";
/// Stores each of the eight concurrent writers makes.
const PER_WRITER: usize = 200;

/// The content of bulk note `i`, as SQL over a column `i`.
const NOTE_SQL: &str = "'note ' || i || ': the ' || (ARRAY['parser','network','storage','render','deploy'])[(i % 5) + 1] || ' module needs work item ' || i || '; see ticket T' || i";
const SQLITE_NOTE_SQL: &str = "'note ' || i || ': the ' || (CASE i % 5 WHEN 0 THEN 'parser' WHEN 1 THEN 'network' WHEN 2 THEN 'storage' WHEN 3 THEN 'render' ELSE 'deploy' END) || ' module needs work item ' || i || '; see ticket T' || i";

/// One engine under test.
enum Engine {
    Sqlite,
    Postgres(String),
}

impl Engine {
    fn name(&self) -> &'static str {
        match self {
            Self::Sqlite => "SQLite",
            Self::Postgres(_) => "PostgreSQL (Unix socket)",
        }
    }
}

fn server_argv(bin: &Path, ws: &Path, state: &Path, engine: &Engine) -> Vec<String> {
    let mut argv = vec![
        bin.display().to_string(),
        "serve".into(),
        "--root".into(),
        ws.display().to_string(),
        "--state-dir".into(),
        state.display().to_string(),
        "--workspace".into(),
        WORKSPACE.into(),
    ];
    if let Engine::Postgres(url) = engine {
        argv.extend(["--store".into(), url.clone()]);
    }
    argv
}

/// Adds memories `from..to` to the engine's database with SQL.
fn bulk_load(engine: &Engine, state: &Path, from: usize, to: usize, runtime: &tokio::runtime::Runtime) {
    match engine {
        Engine::Sqlite => {
            let db = rusqlite::Connection::open(state.join("toolbelt.db")).unwrap();
            db.busy_timeout(std::time::Duration::from_secs(30)).unwrap();
            let sql = format!(
                "WITH RECURSIVE n(i) AS (SELECT ?2 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?3)
                 INSERT INTO memories (workspace, collection, title, content, tags, hash, created_at, updated_at)
                 SELECT ?1, 'notes', '', {SQLITE_NOTE_SQL},
                        '[\"' || (CASE i % 5 WHEN 0 THEN 'parser' WHEN 1 THEN 'network' WHEN 2 THEN 'storage' WHEN 3 THEN 'render' ELSE 'deploy' END) || '\"]',
                        'bulk' || i, i, i FROM n"
            );
            db.execute(&sql, rusqlite::params![WORKSPACE, from as i64, to as i64]).unwrap();
            db.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')", []).unwrap();
        }
        Engine::Postgres(url) => runtime.block_on(async {
            let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
            tokio::spawn(connection);
            let sql = format!(
                "INSERT INTO memories (workspace, collection, title, content, tags, hash, created_at, updated_at)
                 SELECT $1, 'notes', '', {NOTE_SQL},
                        '[\"' || (ARRAY['parser','network','storage','render','deploy'])[(i % 5) + 1] || '\"]',
                        'bulk' || i, i, i FROM generate_series($2::bigint, $3::bigint - 1) AS i"
            );
            client.execute(&sql, &[&WORKSPACE, &(from as i64), &(to as i64)]).await.unwrap();
            client.batch_execute("VACUUM ANALYZE memories").await.unwrap();
        }),
    }
}

fn row(engine: &Engine, size: usize, call: &str, (med, p90): (f64, f64)) {
    println!("| {} | {size} | {call} | {:.2} ms | {:.2} ms |", engine.name(), med / 1e3, p90 / 1e3);
}

/// Store and search timings at each size, then eight writers at once, for one engine.
fn engine_rows(
    bin: &Path,
    ws: &Path,
    engine: &Engine,
    sizes: &[usize],
    calls: usize,
    runtime: &tokio::runtime::Runtime,
) {
    let state = ws.join(match engine {
        Engine::Sqlite => "scale-sqlite",
        Engine::Postgres(_) => "scale-postgres",
    });
    let _ = std::fs::remove_dir_all(&state);
    let argv = server_argv(bin, ws, &state, engine);
    let mut p = Peer::spawn(&argv);
    p.handshake();
    // The first call creates the schema.
    p.tool("memory_operations", &json!({"operation": "store", "content": "schema", "collection": "setup"}));
    let mut loaded = 0;
    let mut stored = 0;
    for &size in sizes {
        let started = Instant::now();
        bulk_load(engine, &state, loaded, size, runtime);
        eprintln!("{}: loaded {} memories in {:.1} s", engine.name(), size - loaded, started.elapsed().as_secs_f64());
        loaded = size;
        let timed = time_round_trips(&mut p, calls, |p| {
            stored += 1;
            let content = format!("fresh note {stored} about the {} module", TOPICS[stored % 5]);
            let r =
                p.tool("memory_operations", &json!({"operation": "store", "content": content, "collection": "fresh"}));
            assert_ne!(r["structuredContent"]["duplicate"], true);
        });
        row(engine, size, "`store`", timed);
        let searches = [
            ("`search`, one match (`T1234`)", "T1234", Some(1)),
            ("`search`, three words, one match (`parser item T1230`)", "parser item T1230", Some(1)),
            ("`search`, common word (`storage`, 20 % of rows), top 10 of the newest 10,000", "storage", None),
        ];
        for (label, query, total) in searches {
            let args = json!({"operation": "search", "query": query, "collection": "notes"});
            let runs = if total.is_none() { calls.min(50) } else { calls };
            let timed = time_round_trips(&mut p, runs, |p| {
                let r = p.tool("memory_operations", &args);
                let found = r["structuredContent"]["total"].as_u64().unwrap_or(0) as usize;
                match total {
                    Some(total) => assert_eq!(found, total, "{query}: {r}"),
                    // A fifth of the rows match: counted and ranked up to the window.
                    None => {
                        let window = 10_000;
                        assert_eq!(found, (size / 5).min(window), "{query}: {r}");
                        assert_eq!(r["structuredContent"]["capped"] == true, size / 5 > window, "{query}: {r}");
                    }
                }
            });
            row(engine, size, label, timed);
        }
    }
    drop(p);
    // Eight server processes storing at once into the same collection.
    let size = loaded;
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let argv = argv.clone();
            std::thread::spawn(move || {
                let mut p = Peer::spawn(&argv);
                p.handshake();
                let mut times = Vec::with_capacity(PER_WRITER);
                for n in 0..PER_WRITER {
                    let content = format!("writer {w} note {n}");
                    let t = Instant::now();
                    p.tool(
                        "memory_operations",
                        &json!({"operation": "store", "content": content, "collection": "race"}),
                    );
                    times.push(ms(t.elapsed()));
                }
                times
            })
        })
        .collect();
    let started = Instant::now();
    let times: Vec<f64> = writers.into_iter().flat_map(|w| w.join().unwrap()).collect();
    let wall = started.elapsed().as_secs_f64();
    let (med, p90) = stats(times);
    println!(
        "| {} | {size} | `store`, 8 server processes at once ({} stores, {:.0}/s together) | {med:.2} ms | {p90:.2} ms |",
        engine.name(),
        8 * PER_WRITER,
        (8 * PER_WRITER) as f64 / wall
    );
    let _ = std::fs::remove_dir_all(&state);
}

/// Section `scale`.
pub(crate) fn scale(bin: &Path, ws: &Path, sizes: &[usize], calls: usize) {
    println!("\n## Memories at scale, {calls} calls per row (50 for the common word)\n");
    println!("| engine | memories | call | median | p90 |");
    println!("|---|---:|---|---:|---:|");
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let mut engines = vec![Engine::Sqlite];
    match runtime.block_on(async { Some(pg::server()?.database().await) }) {
        Some(url) => engines.push(Engine::Postgres(url)),
        None => println!("\nPostgreSQL: skipped (no server could be started; see stderr)\n"),
    }
    for engine in &engines {
        engine_rows(bin, ws, engine, sizes, calls, &runtime);
    }
}
