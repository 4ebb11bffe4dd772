//! The proxy section of the stdio bench: an HTTP GET of 1 MB from a server on the machine's
//! loopback, by `curl` inside `run_command`, with the machine's network (`--network host`)
//! against the same GET through the server's proxy (`--network allowlist`, the server listed),
//! and the bench's own `curl` as the floor, in the same run.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

use serde_json::json;

use super::{Peer, ms, stats, time_round_trips};

/// Bytes each GET fetches.
const SIZE: usize = 1 << 20;

/// A server answering every connection with [`SIZE`] bytes: its port.
fn megabyte_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the bench's HTTP server");
    let port = listener.local_addr().expect("its address").port();
    std::thread::spawn(move || {
        let body = vec![b'a'; SIZE];
        for stream in listener.incoming().flatten() {
            let body = body.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut buf = [0u8; 4096];
                let _ = stream.read(&mut buf);
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {SIZE}\r\nConnection: close\r\n\r\n");
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&body);
            });
        }
    });
    port
}

/// Section: 1 MB over HTTP, direct and through the proxy.
pub(crate) fn proxy_calls(bin: &Path, ws: &Path, calls: usize) {
    let calls = calls.min(100);
    let port = megabyte_server();
    let url = format!("http://127.0.0.1:{port}/");
    println!("\n## 1 MB over HTTP from a command, {calls} calls after {} warm-up\n", super::WARMUP);
    println!("| GET | process | median | p90 | median / host |");
    println!("|---|---|---:|---:|---:|");
    let mut floor = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        let out = Command::new("curl").args(["-sS", "-o", "/dev/null", &url]).output().expect("run curl");
        assert!(out.status.success(), "the bench's own curl failed");
        floor.push(ms(t.elapsed()) * 1e3);
    }
    let (fmed, fp90) = stats(floor);
    println!("| direct | the bench runs `curl` (floor) | {fmed:.1} µs | {fp90:.1} µs | — |");
    let root = ws.display().to_string();
    let listed = format!("127.0.0.1:{port}");
    let mut host = None;
    for (mode, extra, curl) in [
        ("host", vec![], format!("curl -sS --noproxy '*' -o /dev/null -w '%{{size_download}}' {url}")),
        (
            "allowlist",
            vec!["--network-allow".to_string(), listed.clone()],
            format!("curl -sS --noproxy '' -x http://127.0.0.1:3128 -o /dev/null -w '%{{size_download}}' {url}"),
        ),
    ] {
        let mut argv = vec![bin.display().to_string(), "serve".into(), "--root".into(), root.clone()];
        argv.extend(["--network".to_string(), mode.to_string()]);
        argv.extend(extra);
        let mut p = Peer::spawn(&argv);
        p.handshake();
        let (med, p90) = time_round_trips(&mut p, calls, |p| {
            let r =
                p.tool("terminal_operations", &json!({"operation": "run_command", "command": curl, "details": true}));
            let out = r["structuredContent"]["stdout"].to_string();
            assert!(out.contains(&SIZE.to_string()), "{mode}: {r}");
        });
        let base = *host.get_or_insert(med);
        println!(
            "| `run_command` with `curl` | toolbelt-mcp, `--network {mode}` | {med:.1} µs | {p90:.1} µs | {:.2}× |",
            med / base
        );
    }
}
