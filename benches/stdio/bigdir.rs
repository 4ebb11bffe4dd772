//! Section `--tree` (with `--list-dir REL`, default `kernel` when the tree has one): `list_dir`
//! of a big directory with subdirectories (the Linux tree's `kernel/`), ours against the
//! `--compare-cmd` peer in the same run: its one `list_directory` (names and kinds only) and the
//! calls it needs for the same information (that listing, then one per subdirectory for their
//! entry counts, which ours gives in one call).

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use super::{Peer, ms, stats};

/// Calls timed per row, after ten to warm up.
const CALLS: usize = 200;

/// Prints the big-directory rows for `rel` beneath `tree`.
pub(crate) fn big_dir(bin: &Path, compare: Option<&str>, tree: &Path, rel: &str) {
    let dir = tree.join(rel);
    if !dir.is_dir() {
        println!("\n(no `{rel}` in the tree: big-directory rows skipped)");
        return;
    }
    let root = tree.display().to_string();
    let mut ours = Peer::spawn(&[bin.display().to_string(), "serve".into(), "--root".into(), root.clone()]);
    ours.handshake();
    let listed = json!({"operation": "list_dir", "path": rel});
    let (ours_ms, result) = timed(&mut ours, "file_operations", &listed);
    let entries = result["structuredContent"]["entries"].as_array().cloned().unwrap_or_default();
    let subdirs: Vec<String> =
        entries.iter().filter(|e| e["kind"] == "dir").filter_map(|e| e["path"].as_str().map(String::from)).collect();
    println!(
        "\n## A big directory: `list_dir` of `{rel}` ({} entries, {} subdirectories), median of {CALLS}\n",
        entries.len(),
        subdirs.len()
    );
    println!("| server | what it returns | ms | ours / it |");
    println!("|---|---|---:|---:|");
    println!("| toolbelt-mcp | kinds, sizes, each subdirectory's entry count, one call | {ours_ms:.3} | 1.00× |");
    let Some(compare) = compare else {
        println!("\n(no `--compare-cmd`: the peer's rows are skipped)");
        return;
    };
    let argv: Vec<String> = compare.split_whitespace().map(|a| a.replace("{root}", &root)).collect();
    let argv = if compare.contains("{root}") { argv } else { [argv, vec![root.clone()]].concat() };
    let mut peer = Peer::spawn(&argv);
    if !peer.handshake().iter().any(|t| t == "list_directory") {
        println!("\n(the peer has no `list_directory`: its rows are skipped)");
        return;
    }
    let one = json!({"path": dir.display().to_string()});
    let (peer_ms, _) = timed(&mut peer, "list_directory", &one);
    println!("| `{compare}` | names and kinds, one call | {peer_ms:.3} | {:.2}× |", ours_ms / peer_ms);
    // The same information: the listing, then each subdirectory's listing to count it.
    let mut same = Vec::new();
    for i in 0..CALLS / 4 + 3 {
        let t = Instant::now();
        peer.tool("list_directory", &one);
        for sub in &subdirs {
            peer.tool("list_directory", &json!({"path": tree.join(sub).display().to_string()}));
        }
        if i >= 3 {
            same.push(ms(t.elapsed()));
        }
    }
    let same_ms = stats(same).0;
    println!(
        "| `{compare}` | the same counts: 1 + {} calls (median of {}) | {same_ms:.3} | {:.2}× |",
        subdirs.len(),
        CALLS / 4,
        ours_ms / same_ms
    );
}

/// The median ms of [`CALLS`] calls of `tool` with `args` (after ten), and the last result.
fn timed(server: &mut Peer, tool: &str, args: &Value) -> (f64, Value) {
    let mut times = Vec::new();
    let mut result = Value::Null;
    for i in 0..CALLS + 10 {
        let t = Instant::now();
        result = server.tool(tool, args);
        if i >= 10 {
            times.push(ms(t.elapsed()));
        }
    }
    (stats(times).0, result)
}
