//! Reads and walks cannot leave the root, even while a directory inside it is swapped for a
//! symlink to an outside one as fast as the kernel allows: not a name, not a byte.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use super::common::{Client, Workspace, op};

/// How long the race runs: `TOOLBELT_RACE_SECS`, or 5 s in a plain `cargo test` (CI runs it for
/// 30 s, as root and as an unprivileged uid). It keeps both cores busy while it runs, the most
/// CPU of any test, and 3 s already caught a resolver that followed the swapped symlink in six
/// of the ten calls, every time.
fn race_time() -> Duration {
    let secs = std::env::var("TOOLBELT_RACE_SECS").ok().and_then(|s| s.parse().ok()).unwrap_or(5);
    Duration::from_secs(secs)
}

/// Files in `ws/ignored/bulk` (git-ignored): enough that a search of the whole root that
/// does not honour ignore files walks with `ignore`'s parallel walker; the others walk from
/// directory handles on their own thread.
const BULK: usize = 1100;

/// Lays out `ws/race/inner.txt` (inside) and an outside twin holding names and bytes that
/// must never come back, plus `ws/race_link`, the symlink the swapper exchanges with `race`,
/// and `ws/ignored/bulk`, files no search matches.
fn lay_out(ws: &Workspace) {
    std::fs::create_dir_all(ws.root.join("ignored/bulk")).unwrap();
    for n in 0..BULK {
        std::fs::write(ws.root.join(format!("ignored/bulk/{n}.dat")), "").unwrap();
    }
    let inside = ws.root.join("race");
    std::fs::create_dir_all(inside.join("deeper")).unwrap();
    std::fs::write(inside.join("inner.txt"), "MARK_IN inside bytes\n").unwrap();
    std::fs::write(inside.join("deeper/inner.txt"), "MARK_IN deeper bytes\n").unwrap();
    let twin = ws.outside.join("twin");
    std::fs::create_dir_all(twin.join("deeper")).unwrap();
    std::fs::write(twin.join("inner.txt"), "MARK_OUT leaked bytes\n").unwrap();
    std::fs::write(twin.join("deeper/inner.txt"), "MARK_OUT leaked deeper\n").unwrap();
    std::fs::write(twin.join("twinonly_name.txt"), "MARK_OUT name\n").unwrap();
    std::fs::write(twin.join("deeper/twinonly_deep.txt"), "MARK_OUT name\n").unwrap();
    std::os::unix::fs::symlink(&twin, ws.root.join("race_link")).unwrap();
}

/// Exchanges `race` and `race_link` (`renameat2(RENAME_EXCHANGE)`, atomic) until told to stop.
fn swap_until(root: &Path, stop: &AtomicBool, swaps: &AtomicU64) {
    let dir = rustix::fs::open(root, rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY, 0.into()).unwrap();
    while !stop.load(Ordering::Relaxed) {
        rustix::fs::renameat_with(&dir, "race", &dir, "race_link", rustix::fs::RenameFlags::EXCHANGE).unwrap();
        swaps.fetch_add(1, Ordering::Relaxed);
    }
    // Leave the directory where it belongs.
    if std::fs::symlink_metadata(root.join("race")).unwrap().file_type().is_symlink() {
        rustix::fs::renameat_with(&dir, "race", &dir, "race_link", rustix::fs::RenameFlags::EXCHANGE).unwrap();
    }
}

/// What must never appear in a reply: the outside twin's bytes and names.
fn leaked(text: &str) -> bool {
    text.contains("MARK_OUT") || text.contains("twinonly")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_and_walks_never_follow_a_directory_swapped_for_a_symlink() {
    let _heavy = super::common::HEAVY.lock().await;
    let ws = Workspace::new();
    lay_out(&ws);
    let client = Arc::new(Client::start(&ws, &[]).await);
    let calls = [
        op("read_file", json!({"path": "race/inner.txt"})),
        op("read_file", json!({"path": "race/deeper/inner.txt"})),
        op("list_dir", json!({"path": "race", "depth": 2})),
        op("list_dir", json!({"path": ".", "depth": 3})),
        op("file_search", json!({"pattern": "**/*.txt"})),
        op("file_search", json!({"pattern": "**/*.txt", "path": "race"})),
        op("file_search", json!({"pattern": "**/*.txt", "respect_gitignore": false})),
        op("grep_search", json!({"pattern": "MARK_", "include_hidden": true})),
        op("grep_search", json!({"pattern": "MARK_", "path": "race"})),
        op("grep_search", json!({"pattern": "MARK_", "include_hidden": true, "respect_gitignore": false})),
    ];
    let (stop, swaps) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
    let swapper = {
        let (root, stop, swaps) = (ws.root.clone(), stop.clone(), swaps.clone());
        std::thread::spawn(move || swap_until(&root, &stop, &swaps))
    };
    let deadline = Instant::now() + race_time();
    let workers = calls.into_iter().map(|call| {
        let client = client.clone();
        tokio::spawn(async move {
            let (mut answered, mut inside, mut leaks) = (0u64, 0u64, Vec::new());
            while Instant::now() < deadline {
                let reply = client.file(call.clone()).await;
                answered += 1;
                let both = format!("{}\n{}", reply.text, reply.structured);
                inside += u64::from(both.contains("MARK_IN") || both.contains("inner.txt"));
                if leaked(&both) && leaks.len() < 3 {
                    leaks.push(both);
                }
            }
            (call, answered, inside, leaks)
        })
    });
    let results = futures::future::join_all(workers).await;
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    let swaps = swaps.load(Ordering::Relaxed);
    assert!(swaps > 1000, "the swapper hardly ran: {swaps} swaps");
    let mut failures = Vec::new();
    for result in results {
        let (call, answered, inside, leaks) = result.unwrap();
        if !leaks.is_empty() {
            failures.push(format!("{call}: outside names or bytes came back:\n{}", leaks.join("\n---\n")));
        }
        // The race must really be run: calls answered, and some of them while the inside
        // directory was in place.
        if answered <= 10 || inside == 0 {
            failures.push(format!("{call}: {answered} calls, {inside} saw the inside"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    Arc::into_inner(client).unwrap().close().await;
}
