//! Section 4 of the stdio bench: commands and PTY sessions, each against the same work done
//! directly by the bench process (spawn and wait, or a PTY round trip) in the same run.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use super::{Peer, ms, stats, time_round_trips};

/// A command printing 1,000,000 bytes (10,000 lines of 99 `a` and a newline).
const MEGABYTE: &str = "head -c 990000 /dev/zero | tr '\\0' a | fold -w 99; echo";

/// Median and p90 of `calls` direct runs of `bash -c command`, output read whole.
fn spawn_floor(command: &str, calls: usize) -> (f64, f64) {
    let mut v = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        let out = Command::new("bash").args(["-c", command]).stdin(Stdio::null()).output().expect("spawn bash");
        assert!(out.status.success());
        v.push(ms(t.elapsed()) * 1e3);
    }
    stats(v)
}

/// Median and p90 of a round trip through `cat` on a PTY opened by the bench itself.
fn pty_floor(calls: usize) -> (f64, f64) {
    let (mut pty, pts) = pty_process::blocking::open().expect("open a pty");
    let mut child = pty_process::blocking::Command::new("cat").spawn(pts).expect("spawn cat on a pty");
    let mut buf = [0u8; 4096];
    let mut v = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        pty.write_all(b"x\r").expect("write to pty");
        // The line discipline echoes `x` and cat prints it back: wait for the second one.
        let mut seen = 0;
        while seen < 2 {
            let n = pty.read(&mut buf).expect("read pty");
            seen += buf[..n].iter().filter(|b| **b == b'x').count();
        }
        v.push(ms(t.elapsed()) * 1e3);
    }
    let _ = child.kill();
    let _ = child.wait();
    stats(v)
}

/// A session's output in a result: the lean view's `text`, or the whole record's lines joined.
fn output(result: &Value) -> String {
    let structured = &result["structuredContent"];
    if let Some(text) = structured["text"].as_str() {
        return text.trim_end_matches('\n').to_string();
    }
    let lines = structured["output"].as_array().cloned().unwrap_or_default();
    lines.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("\n")
}

fn run(p: &mut Peer, command: &str) -> Value {
    let r = p.tool("terminal_operations", &json!({"operation": "run_command", "command": command, "details": true}));
    let text = r["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.len() <= 64 * 1024, "a result over the budget: {} bytes", text.len());
    r
}

/// Section 4: `run_command "echo hi"`, 1 MB of output, and a PTY round trip.
pub(crate) fn terminal_calls(bin: &Path, ws: &Path, calls: usize) {
    let calls = calls.min(300);
    println!("\n## Commands and PTY sessions, {calls} calls after {} warm-up\n", super::WARMUP);
    println!("| call | process | median | p90 | median / floor |");
    println!("|---|---|---:|---:|---:|");
    let root = ws.display().to_string();
    let (fmed, fp90) = spawn_floor("echo hi", calls);
    println!("| `echo hi` | bench spawns `bash -c` directly (floor) | {fmed:.1} µs | {fp90:.1} µs | 1.0× |");
    // A root that is a git repository makes each command bind `.git/hooks` and `.git/config`
    // read-only in a private mount namespace; a plain directory needs no namespace.
    let repo = ws.join("repo");
    std::fs::create_dir_all(repo.join(".git/hooks")).expect("create repo");
    std::fs::write(repo.join(".git/config"), "").expect("write git config");
    let variants = [
        ("workspace-write", &root, "plain directory"),
        ("workspace-write", &repo.display().to_string(), "git repository: mount namespace"),
        ("full-access", &root, "no sandbox"),
    ];
    for (mode, dir, what) in variants {
        let argv =
            [bin.display().to_string(), "serve".into(), "--root".into(), dir.clone(), "--sandbox".into(), mode.into()];
        let mut p = Peer::spawn(&argv);
        p.handshake();
        let (med, p90) = time_round_trips(&mut p, calls, |p| {
            run(p, "echo hi");
        });
        println!(
            "| `run_command \"echo hi\"` | toolbelt-mcp, `--sandbox {mode}`, {what} | {med:.1} µs | {p90:.1} µs | {:.1}× |",
            med / fmed
        );
    }

    let big_calls = calls.min(100);
    let (bmed, bp90) = spawn_floor(MEGABYTE, big_calls);
    println!("| 1 MB of output | bench spawns `bash -c` directly (floor) | {bmed:.1} µs | {bp90:.1} µs | 1.0× |");
    let mut p = Peer::spawn(&[bin.display().to_string(), "serve".into(), "--root".into(), root.clone()]);
    p.handshake();
    let (med, p90) = time_round_trips(&mut p, big_calls, |p| {
        let r = run(p, MEGABYTE);
        assert_eq!(r["structuredContent"]["stdout_bytes"], 1_000_000);
    });
    println!(
        "| 1 MB of output (cut to the 64 KiB budget) | toolbelt-mcp, `run_command` | {med:.1} µs | {p90:.1} µs | {:.1}× |",
        med / bmed
    );

    let (pmed, pp90) = pty_floor(calls);
    println!("| PTY round trip through `cat` | bench on its own PTY (floor) | {pmed:.1} µs | {pp90:.1} µs | 1.0× |");
    let started = p.tool("terminal_operations", &json!({"operation": "start_session", "shell": "cat", "wait_ms": 0}));
    let id = started["structuredContent"]["session_id"].as_str().expect("a session id").to_string();
    let (med, p90) = time_round_trips(&mut p, calls, |p| {
        let sent = p.tool(
            "terminal_operations",
            &json!({"operation": "send_input", "session_id": id, "input": "x", "wait_ms": 0}),
        );
        let mut seen = output(&sent).matches('x').count();
        while seen < 2 {
            let r =
                p.tool("terminal_operations", &json!({"operation": "read_output", "session_id": id, "wait_ms": 1000}));
            seen += output(&r).matches('x').count();
        }
    });
    println!(
        "| PTY round trip through `cat` | toolbelt-mcp, `send_input` + `read_output` | {med:.1} µs | {p90:.1} µs | {:.1}× |",
        med / pmed
    );
    // As a model calls it: `send_input` with its default wait, which returns with the answer.
    let (med, p90) = time_round_trips(&mut p, calls, |p| {
        let sent = p.tool("terminal_operations", &json!({"operation": "send_input", "session_id": id, "input": "y"}));
        assert_eq!(output(&sent).matches('y').count(), 2, "the echo and cat's answer: {sent}");
    });
    println!(
        "| PTY round trip through `cat` | toolbelt-mcp, `send_input` with default arguments (target ≤ 5 ms) | {med:.1} µs | {p90:.1} µs | {:.1}× |",
        med / pmed
    );
}
