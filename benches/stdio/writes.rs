//! Section 3 of the stdio bench: write latency (atomic, fsynced) against the cost of doing
//! the same atomic write in-process, measured in the same run.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::{Peer, Server, ms, stats, time_round_trips};

/// In-process floor: temp file, write, fsync, rename, directory fsync of `bytes`.
fn atomic_write_floor(dir: &Path, bytes: &[u8], calls: usize) -> (f64, f64) {
    let mut v = Vec::with_capacity(calls);
    let dir_handle = std::fs::File::open(dir).expect("open bench dir");
    for i in 0..calls {
        let t = Instant::now();
        let tmp = dir.join(format!(".floor{i}.tmp"));
        let mut f = std::fs::File::create(&tmp).expect("create temp");
        f.write_all(bytes).expect("write temp");
        f.sync_all().expect("fsync temp");
        std::fs::rename(&tmp, dir.join(format!("floor{i}.txt"))).expect("rename");
        dir_handle.sync_all().expect("fsync dir");
        v.push(ms(t.elapsed()) * 1e3);
    }
    stats(v)
}

/// A 5,000-line file and two 20-hunk patches that turn it into a variant and back.
fn patch_pair(root: &Path) -> (String, String) {
    let body: String = (1..=5000).map(|n| format!("line {n} of the patched file\n")).collect();
    std::fs::write(root.join("big5k.txt"), &body).expect("write big5k.txt");
    let hunks = |forward: bool| -> String {
        let mut patch = String::from("--- a/big5k.txt\n+++ b/big5k.txt\n");
        for h in 0..20 {
            let n = 100 + h * 245;
            let (old, new) = (format!("line {n} of the patched file"), format!("LINE {n} CHANGED"));
            let (minus, plus) = if forward { (old, new) } else { (new, old) };
            patch.push_str(&format!("@@ -{},7 +{},7 @@\n", n - 3, n - 3));
            for c in n - 3..n {
                patch.push_str(&format!(" line {c} of the patched file\n"));
            }
            patch.push_str(&format!("-{minus}\n+{plus}\n"));
            for c in n + 1..=n + 3 {
                patch.push_str(&format!(" line {c} of the patched file\n"));
            }
        }
        patch
    };
    (hunks(true), hunks(false))
}

/// Section 3: create_file 4 KB, replace_string on 1 KB, apply_patch 20 hunks on 5k lines.
pub(crate) fn write_calls(servers: &[Server], ws: &Path, calls: usize) {
    println!("\n## Writes (atomic, fsynced), {calls} calls after {} warm-up\n", super::WARMUP);
    println!("| call | process | median | p90 | median / floor |");
    println!("|---|---|---:|---:|---:|");
    let content = "0123456789abcdef".repeat(256); // 4 KiB
    let floor_dir = ws.join("floor");
    std::fs::create_dir_all(&floor_dir).expect("floor dir");
    let (fmed, fp90) = atomic_write_floor(&floor_dir, content.as_bytes(), calls);
    println!("| atomic write 4 KB | in-process temp+write+fsync+rename (floor) | {fmed:.1} µs | {fp90:.1} µs | 1.0× |");
    for (index, s) in servers.iter().enumerate() {
        let (forward, backward) = patch_pair(ws);
        let filler = "filler line for the 1 KB edit target, not matched\n".repeat(19);
        std::fs::write(ws.join("edit1k.txt"), format!("{filler}token: alpha alpha\n")).expect("write edit1k.txt");
        let mut p = Peer::spawn(&s.argv);
        let tools = p.handshake();
        let mut n = 0usize;
        // Each edit undoes the previous one, so every call finds its text.
        let mut flip = false;
        let mut toggle = move || {
            flip = !flip;
            if flip { ("alpha alpha", "beta beta") } else { ("beta beta", "alpha alpha") }
        };
        if tools.iter().any(|t| t == "file_operations") {
            let (med, p90) = time_round_trips(&mut p, calls, |p| {
                n += 1;
                let args =
                    json!({"operation": "create_file", "path": format!("created-{index}/{n}.txt"), "content": content});
                p.tool("file_operations", &args);
            });
            println!("| create_file 4 KB | {} | {med:.1} µs | {p90:.1} µs | {:.1}× |", s.name, med / fmed);
            let (med, p90) = time_round_trips(&mut p, calls, |p| {
                let (old, new) = toggle();
                let args =
                    json!({"operation": "replace_string", "path": "edit1k.txt", "old_string": old, "new_string": new});
                p.tool("file_operations", &args);
            });
            println!("| replace_string on 1 KB | {} | {med:.1} µs | {p90:.1} µs | {:.1}× |", s.name, med / fmed);
            let mut forward_next = true;
            let (med, p90) = time_round_trips(&mut p, calls.min(200), |p| {
                let patch = if forward_next { &forward } else { &backward };
                forward_next = !forward_next;
                p.tool("file_operations", &json!({"operation": "apply_patch", "patch": patch}));
            });
            println!(
                "| apply_patch 20 hunks on 5k lines | {} | {med:.1} µs | {p90:.1} µs | {:.1}× |",
                s.name,
                med / fmed
            );
        } else if tools.iter().any(|t| t == "write_file") {
            let (med, p90) = time_round_trips(&mut p, calls, |p| {
                n += 1;
                let path = ws.join(format!("other-{n}.txt")).display().to_string();
                p.tool("write_file", &json!({"path": path, "content": content}));
            });
            println!(
                "| create_file 4 KB | {} (`write_file`) | {med:.1} µs | {p90:.1} µs | {:.1}× |",
                s.name,
                med / fmed
            );
            if tools.iter().any(|t| t == "edit_file") {
                let path = ws.join("edit1k.txt").display().to_string();
                let (med, p90) = time_round_trips(&mut p, calls, |p| {
                    let (old, new) = toggle();
                    let args = json!({"path": path, "edits": [{"oldText": old, "newText": new}]});
                    p.tool("edit_file", &args);
                });
                println!(
                    "| replace_string on 1 KB | {} (`edit_file`) | {med:.1} µs | {p90:.1} µs | {:.1}× |",
                    s.name,
                    med / fmed
                );
            }
        }
    }
}
