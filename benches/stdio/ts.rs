//! Section `ts`: the host's view, through the official TypeScript SDK client (the client stack
//! of Claude Code, Claude Desktop and VS Code): runs `benches/ts/client_bench.mjs` on the server
//! and, with `--compare-cmd`, the peer, and prints its figures with the peer's in the same run.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};

/// A number at `pointer` in `value`, shown in ms with `digits` decimals, or `–`.
fn ms_at(value: &Value, pointer: &str, digits: usize) -> String {
    value.pointer(pointer).and_then(Value::as_f64).map_or("–".into(), |ms| format!("{ms:.digits$} ms"))
}

fn ratio_at(value: &Value, pointer: &str) -> String {
    value.pointer(pointer).and_then(Value::as_f64).map_or("–".into(), |r| format!("{r:.2}×"))
}

fn met(value: &Value, pointer: &str) -> &'static str {
    match value.pointer(pointer).and_then(Value::as_bool) {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "–",
    }
}

/// Runs the TypeScript client bench on `bin`, the other builds `also` (name and path) and
/// `compare` (a command with `{root}`), all in one run.
pub(crate) fn ts_client(
    bin: &Path,
    also: &[(String, std::path::PathBuf)],
    compare: Option<&str>,
    runs: usize,
    calls: usize,
) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/ts");
    let node = Command::new("node").arg("--version").output();
    if node.is_err() || !dir.join("node_modules/@modelcontextprotocol/sdk").exists() {
        println!("\n## Through the TypeScript SDK client\n\nskipped: needs `node` and `npm ci --prefix benches/ts`");
        return;
    }
    let mut cmd = Command::new("node");
    cmd.arg(dir.join("client_bench.mjs"));
    cmd.args(["--server", &format!("{} serve --root {{root}} --state-dir {{state}}", bin.display())]);
    cmd.args(["--kind", "toolbelt", "--name", "toolbelt-mcp"]);
    for (name, path) in also {
        cmd.args(["--server", &format!("{} serve --root {{root}} --state-dir {{state}}", path.display())]);
        cmd.args(["--kind", "toolbelt", "--name", &format!("toolbelt-mcp ({name})")]);
    }
    if let Some(peer) = compare {
        cmd.args(["--server", peer, "--kind", "auto", "--name", "peer"]);
    }
    cmd.args(["--runs", &runs.min(30).to_string(), "--calls", &calls.min(500).to_string()]);
    let out = cmd.stderr(Stdio::piped()).output().expect("run node benches/ts/client_bench.mjs");
    if !out.status.success() {
        eprintln!("{}", String::from_utf8_lossy(&out.stderr));
        panic!("the TypeScript client bench failed ({})", out.status);
    }
    let report: Value = serde_json::from_slice(&out.stdout).expect("client_bench.mjs prints one JSON object");
    let servers = report["servers"].as_array().cloned().unwrap_or_default();
    println!(
        "\n## Through the TypeScript SDK client ({} {}), medians\n",
        report["sdk_version"].as_str().unwrap_or("?"),
        report["node_version"].as_str().unwrap_or("?")
    );
    println!(
        "| server | tools/list | cold: spawn → connect → listTools | read_file 1 KB | list_dir | read an 8 MB file completely (calls) |"
    );
    println!("|---|---:|---:|---:|---:|---:|");
    let floor = ms_at(&report, "/cold/spawn_true/median_ms", 2);
    for s in &servers {
        let name = if s["name"] == "peer" {
            format!("`{}`", compare.unwrap_or_default())
        } else {
            s["name"].as_str().unwrap_or("toolbelt-mcp").to_string()
        };
        println!(
            "| {name} | {} B | {} | {} | {} | {} ({}) |",
            s["tools_list_bytes"],
            ms_at(s, "/cold/total/median_ms", 2),
            ms_at(s, "/warm/read_file/sdk/median_ms", 3),
            ms_at(s, "/warm/list_dir/sdk/median_ms", 3),
            ms_at(s, "/big/sdk/total/median_ms", 0),
            s.pointer("/big/sdk/calls").map_or("–".into(), Value::to_string),
        );
    }
    for s in servers.iter().filter(|s| s.pointer("/big/modes/fresh").is_some()) {
        println!(
            "\n{}, the 8 MB file paged through: settled {}, written just before {}, growing between pages {} (medians).",
            s["name"].as_str().unwrap_or("toolbelt-mcp"),
            ms_at(s, "/big/sdk/total/median_ms", 0),
            ms_at(s, "/big/modes/fresh/sdk/total/median_ms", 0),
            ms_at(s, "/big/modes/growing/sdk/total/median_ms", 0),
        );
    }
    println!("\nBaseline in the same run: `/bin/true` spawn {floor}.");
    // Each build against the peer (the bench's first ratio compares the first build with the
    // next server, which is another build when there are several).
    let against_peer = report["ratios"].as_array().into_iter().flatten().filter(|r| r["denominator"] == "peer");
    for r in against_peer {
        println!("\n| {} / peer | ratio | target |\n|---|---:|---|", r["numerator"].as_str().unwrap_or("?"));
        println!(
            "| cold start | {} | ≤ 1.0× ({}) |",
            ratio_at(r, "/cold_total_median"),
            met(r, "/targets/cold_at_or_below")
        );
        println!(
            "| read_file | {} | ≤ 1.0× ({}) |",
            ratio_at(r, "/read_file_median"),
            met(r, "/targets/read_file_at_or_below")
        );
        println!(
            "| list_dir | {} | ≤ 1.0× ({}) |",
            ratio_at(r, "/list_dir_median"),
            met(r, "/targets/list_dir_at_or_below")
        );
        println!(
            "| complete read of 8 MB, settled (the peer: one read) | {} | ≤ 2× ({}) |",
            ratio_at(r, "/big_read_total_median"),
            met(r, "/targets/big_read_within_2x")
        );
        println!(
            "| the same, written just before | {} | ≤ 2× ({}) |",
            ratio_at(r, "/big_fresh_total_median"),
            met(r, "/targets/big_fresh_within_2x")
        );
        println!(
            "| the same, growing between pages | {} | ≤ 2× ({}) |",
            ratio_at(r, "/big_growing_total_median"),
            met(r, "/targets/big_growing_within_2x")
        );
    }
}
