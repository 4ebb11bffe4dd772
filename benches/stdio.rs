//! Benchmark: drives `toolbelt-mcp serve` over raw newline-delimited JSON-RPC (and, in the `http`
//! section, `serve --http` under load) and prints markdown tables, every figure next to a
//! baseline measured in the same run.
//!
//! ```text
//! cargo bench --bench stdio -- [--bin PATH] [--also-bin NAME=PATH]... [--tree DIR] [--runs N] [--calls N] [--compare-cmd "CMD ARGS"]
//!                                [--compare-memory-cmd "CMD ARGS"] [--only SECTIONS] [--http-calls N]
//!                                [--agent-base PATH] [--scale-sizes N,N] [--list-dir REL]
//! ```
//!
//! * `--bin`: server binary (default: the `toolbelt-mcp` that cargo just built, `target/release/`).
//! * `--also-bin NAME=PATH` (repeatable): another build (e.g. `dist=target/dist/toolbelt-mcp`)
//!   measured in the same run in the `cold`, `ts` and `--tree` sections, each against the peer.
//! * `--only`: comma-separated sections to run: `cold`, `warm`, `writes`, `terminal`, `proxy`, `records`,
//!   `http`, `ts`, `lean`, `agent` (default all; the `--tree` section runs whenever `--tree` is given). `ts` runs
//!   `benches/ts/client_bench.mjs` (the official TypeScript SDK client, as hosts connect; needs
//!   `node` and `npm ci --prefix benches/ts`, else it says so and skips) on the server and the
//!   `--compare-cmd` peer, e.g. rust-mcp-filesystem (see benches/ts/README.md). `lean` runs
//!   `tests/hosts/lean_table.py`: characters the model reads per step, ours against Claude
//!   Code's own tools (Claude Code from the hosts' cache or npm; else it says so and skips).
//! * `--http-calls N`: calls per session in the `http` load (default 200; 32 sessions at once).
//! * `--agent-base PATH`: a baseline `toolbelt-mcp` for the `agent` section (the bundled agent's
//!   overhead per turn over 60 turns against a scripted endpoint), e.g. a release build of an
//!   earlier commit: `git worktree add /tmp/base COMMIT && cargo build --release --manifest-path
//!   /tmp/base/Cargo.toml --target-dir /tmp/base-target`.
//! * `scale` (only when named in `--only`): memory `store` and `search` at `--scale-sizes`
//!   memories (default `10000,1000000`) on SQLite and on PostgreSQL (a private server started
//!   from the system's binaries, as the tests do; skipped, saying why, without them), then
//!   eight server processes storing at once.
//! * `--runs`: cold-start runs (default 30). `--calls`: warm calls per request kind (default 1000).
//! * `--tree DIR`: a large source tree (~28k files) for grep/file_search against ripgrep (`rg` on
//!   PATH). Any big tree works; without network, build one from local sources, e.g.
//!   `mkdir /tmp/bigtree && cd /tmp/bigtree && cp -r ~/.cargo/registry/src/*/ crates &&
//!   cp -r /usr/include include && cp -r "$(python3 -c 'import os;print(os.path.dirname(os.__file__))')" py`,
//!   or with network `git clone --depth 1` any big repository (e.g. rust-lang/rust).
//!   Count mismatches with rg are printed loudly and make the program exit 1.
//! * `--list-dir REL`: with `--tree`, a big directory beneath it listed by us and by the
//!   `--compare-cmd` peer (default `kernel`, the Linux tree's, 131 entries in 20 subdirectories):
//!   the peer's one listing, and its calls for the same information (one more per subdirectory).
//! * `--compare-cmd "CMD ARGS"`: another MCP server measured in the same run (cold start and warm
//!   calls). The command is split on whitespace (no shell quoting); `{root}` is replaced by the
//!   bench workspace, else the workspace path is appended. Prefer a direct command over `npx`, e.g.
//!   `npm install --prefix /tmp/mcpfs @modelcontextprotocol/server-filesystem` then
//!   `--compare-cmd "node /tmp/mcpfs/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"`.
//! * `--compare-memory-cmd "CMD ARGS"`: the official memory server, measured in the todo and
//!   memory section (its `MEMORY_FILE_PATH` is set to a file in the bench workspace), e.g.
//!   `npm install --prefix /tmp/mcpmem @modelcontextprotocol/server-memory` then
//!   `--compare-memory-cmd "node /tmp/mcpmem/node_modules/@modelcontextprotocol/server-memory/dist/index.js"`.

#![allow(
    clippy::expect_used,
    clippy::unwrap_used,
    clippy::print_stdout,
    clippy::print_stderr,
    clippy::disallowed_methods,
    reason = "a benchmark binary: it prints its report and stops loudly on a broken setup"
)]

#[path = "stdio/agent.rs"]
mod agent;
#[path = "stdio/bigdir.rs"]
mod bigdir;
// The HTTP and terminal sections signal the server and open PTYs: Unix only.
#[cfg(unix)]
#[path = "stdio/http.rs"]
mod http;
#[path = "stdio/lean.rs"]
mod lean;
#[path = "stdio/records.rs"]
mod records;
// Commands' network namespaces and the proxy: Linux only.
#[cfg(target_os = "linux")]
#[path = "stdio/proxy.rs"]
mod proxy;
#[cfg(unix)]
#[path = "stdio/scale.rs"]
mod scale;
// The PostgreSQL server the tests start, for the `scale` section (Unix: its watchdog is sh).
#[cfg(unix)]
#[allow(dead_code)]
#[path = "../tests/suite/pg.rs"]
mod pg;
#[cfg(unix)]
#[path = "stdio/terminal.rs"]
mod terminal;
#[path = "stdio/ts.rs"]
mod ts;
#[path = "stdio/writes.rs"]
mod writes;

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

/// Longest wait for any single response before the bench gives up.
const TIMEOUT: Duration = Duration::from_secs(120);
/// Warm-up calls before each timed latency loop.
const WARMUP: usize = 100;
/// Timed runs per tree query.
const TREE_RUNS: usize = 5;

/// Command-line options.
struct Opts {
    bin: PathBuf,
    /// Other builds measured beside `bin` in the cold, `ts` and tree sections (`NAME=PATH`).
    also: Vec<(String, PathBuf)>,
    tree: Option<PathBuf>,
    list_dir: String,
    runs: usize,
    calls: usize,
    compare: Option<String>,
    compare_memory: Option<String>,
    only: Option<String>,
    http_calls: usize,
    agent_base: Option<PathBuf>,
    scale_sizes: Vec<usize>,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        bin: PathBuf::from(env!("CARGO_BIN_EXE_toolbelt-mcp")),
        also: Vec::new(),
        tree: None,
        list_dir: "kernel".into(),
        runs: 30,
        calls: 1000,
        compare: None,
        compare_memory: None,
        only: None,
        http_calls: 200,
        agent_base: None,
        scale_sizes: vec![10_000, 1_000_000],
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_else(|| panic!("{a} needs a value"));
        match a.as_str() {
            "--bench" => {} // appended by `cargo bench`
            "--bin" => o.bin = PathBuf::from(val()),
            "--also-bin" => {
                let pair = val();
                let (name, path) =
                    pair.split_once('=').expect("--also-bin takes NAME=PATH, e.g. dist=target/dist/toolbelt-mcp");
                o.also.push((name.to_string(), PathBuf::from(path)));
            }
            "--tree" => o.tree = Some(PathBuf::from(val())),
            "--list-dir" => o.list_dir = val(),
            "--runs" => o.runs = val().parse().expect("--runs takes a number"),
            "--calls" => o.calls = val().parse().expect("--calls takes a number"),
            "--compare-cmd" => o.compare = Some(val()),
            "--compare-memory-cmd" => o.compare_memory = Some(val()),
            "--only" => o.only = Some(val()),
            "--http-calls" => o.http_calls = val().parse().expect("--http-calls takes a number"),
            "--agent-base" => o.agent_base = Some(PathBuf::from(val())),
            "--scale-sizes" => {
                o.scale_sizes = val().split(',').map(|n| n.trim().parse().expect("--scale-sizes: numbers")).collect();
            }
            other => panic!("unknown argument {other:?} (see the doc comment in benches/stdio.rs)"),
        }
    }
    o
}

/// A child process spoken to line by line; stdout is read by a thread so reads can time out.
struct Peer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
}

impl Peer {
    fn spawn(argv: &[String]) -> Peer {
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {argv:?}: {e}"));
        let stdin = child.stdin.take().expect("stdin is piped");
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Peer { child, stdin, lines, next_id: 1 }
    }

    fn write_line(&mut self, line: &str) {
        self.stdin.write_all(line.as_bytes()).expect("write to child");
        self.stdin.write_all(b"\n").expect("write to child");
        self.stdin.flush().expect("flush to child");
    }

    fn read_line(&self) -> String {
        self.lines.recv_timeout(TIMEOUT).unwrap_or_else(|e| panic!("no line from child within {TIMEOUT:?}: {e}"))
    }

    /// Serialized request line with a fresh id.
    fn request_line(&mut self, method: &str, params: Value) -> (u64, String) {
        let id = self.next_id;
        self.next_id += 1;
        (id, json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string())
    }

    /// Sends a request and returns its `result`, skipping notifications and refusing server requests.
    fn call(&mut self, method: &str, params: Value) -> Value {
        let (id, line) = self.request_line(method, params);
        self.write_line(&line);
        loop {
            let msg: Value = serde_json::from_str(&self.read_line()).expect("child printed invalid JSON");
            if msg.get("method").is_some() {
                if let Some(rid) = msg.get("id") {
                    let err = json!({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "unsupported"}});
                    self.write_line(&err.to_string());
                }
                continue;
            }
            if msg["id"] == json!(id) {
                if let Some(e) = msg.get("error") {
                    panic!("{method} failed: {e}");
                }
                return msg["result"].clone();
            }
        }
    }

    /// `tools/call` that must succeed (`isError` absent or false).
    fn tool(&mut self, name: &str, args: &Value) -> Value {
        let r = self.call("tools/call", json!({"name": name, "arguments": args}));
        assert!(r["isError"] != json!(true), "{name} {args} returned isError: {r}");
        r
    }

    /// MCP handshake; returns the tool names from `tools/list`.
    fn handshake(&mut self) -> Vec<String> {
        let info = json!({"name": "stdio-bench", "version": "0"});
        self.call("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": info}));
        self.write_line(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        let list = self.call("tools/list", json!({}));
        let tools = list["tools"].as_array().expect("tools/list has tools");
        tools.iter().filter_map(|t| t["name"].as_str().map(String::from)).collect()
    }

    /// A field of /proc/PID/status (e.g. VmRSS, VmHWM) in KiB.
    fn proc_kib(&self, key: &str) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        let line = status.lines().find(|l| l.starts_with(key)).unwrap_or("");
        line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).unwrap_or(0)
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Milliseconds as f64.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// (median, p90) of samples in ms.
fn stats(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.9))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// One server under test: display name and argv.
#[derive(Clone)]
struct Server {
    name: String,
    argv: Vec<String>,
}

/// Temp workspace with a 1 KB file, a small directory and a small project with a `.gitignore`
/// (64 source files of 2 KB, two holding `NEEDLE`, and ignored `target/` and `node_modules/`);
/// removed on drop.
struct Workspace(PathBuf);

/// A project's `.gitignore` as they usually are: Rust, Node and Python leftovers, editors, logs.
const GITIGNORE: &str = "/target/\n**/*.rs.bk\nnode_modules/\nnpm-debug.log*\nyarn-error.log*\ndist/\n\
build/\ncoverage/\n*.tsbuildinfo\n.eslintcache\n__pycache__/\n*.py[cod]\n.venv/\n*.egg-info/\n\
.pytest_cache/\n.idea/\n.vscode/\n*.swp\n*~\n.DS_Store\nThumbs.db\n.env\n.env.local\n*.log\n";

impl Workspace {
    fn create() -> Workspace {
        let root = std::env::temp_dir().join(format!("toolbelt-bench-{}", std::process::id()));
        std::fs::create_dir_all(root.join("smalldir/sub")).expect("create workspace");
        let line = "0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKL\n"; // 51 bytes
        std::fs::write(root.join("small.txt"), line.repeat(20)).expect("write small.txt"); // 1020 B
        for i in 0..10 {
            std::fs::write(root.join(format!("smalldir/file{i}.txt")), line).expect("write smalldir");
        }
        std::fs::write(root.join("smalldir/sub/nested.txt"), line).expect("write nested");
        for dir in ["project/src", "project/target/debug", "project/node_modules/x"] {
            std::fs::create_dir_all(root.join(dir)).expect("create project");
        }
        std::fs::write(root.join("project/.gitignore"), GITIGNORE).expect("write .gitignore");
        for name in ["file0.txt", "README.md", "Cargo.toml", "build.log", "src/main.rs"] {
            std::fs::write(root.join("project").join(name), line).expect("write project");
        }
        for n in 0..64 {
            let dir = root.join(format!("project/src/m{}", n / 16));
            std::fs::create_dir_all(&dir).expect("create project/src");
            let needle = if n % 32 == 0 { "NEEDLE here\n" } else { "" };
            std::fs::write(dir.join(format!("f{n}.rs")), line.repeat(40) + needle).expect("write project/src");
        }
        for n in 0..16 {
            for dir in ["project/target/debug", "project/node_modules/x"] {
                std::fs::write(root.join(dir).join(format!("f{n}.rs")), line.repeat(40)).expect("write ignored");
            }
        }
        // A project's ignore files were written long before it is listed (toolbelt-mcp keeps
        // the rules of those that have not changed for 2 s).
        std::thread::sleep(std::time::Duration::from_millis(2100));
        Workspace(root.canonicalize().expect("canonical workspace"))
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Section 1: cold start of each server, interleaved with `/bin/true` spawns.
/// Cold starts of `servers` in turns, each against `/bin/true` and, when `peer` (the last
/// server is the peer), against the peer.
fn cold_start(servers: &[Server], runs: usize, peer: bool) {
    let mut floor = Vec::new();
    let mut per: Vec<(Vec<f64>, Vec<u64>)> = servers.iter().map(|_| (Vec::new(), Vec::new())).collect();
    for _ in 0..runs {
        let t = Instant::now();
        Command::new("/bin/true").status().expect("spawn /bin/true");
        floor.push(ms(t.elapsed()));
        for (s, (times, rss)) in servers.iter().zip(per.iter_mut()) {
            let t = Instant::now();
            let mut p = Peer::spawn(&s.argv);
            p.handshake();
            times.push(ms(t.elapsed()));
            rss.push(p.proc_kib("VmRSS:"));
        }
    }
    let (fmed, fp90) = stats(floor);
    println!("\n## Cold start (spawn → initialize → tools/list), {runs} runs\n");
    let peer_median = peer.then(|| per.last().map(|(times, _)| stats(times.clone()).0)).flatten();
    println!("| process | median | p90 | median / baseline | median / peer | idle RSS (median) |");
    println!("|---|---:|---:|---:|---:|---:|");
    println!("| `/bin/true` spawn+wait (baseline) | {fmed:.2} ms | {fp90:.2} ms | 1.0× | – | – |");
    for (s, (times, mut rss)) in servers.iter().zip(per) {
        let (med, p90) = stats(times);
        rss.sort();
        let to_peer = peer_median.map_or("–".into(), |p| format!("{:.2}×", med / p));
        println!(
            "| {} | {med:.2} ms | {p90:.2} ms | {:.1}× | {to_peer} | {} |",
            s.name,
            med / fmed,
            mib(rss[rss.len() / 2])
        );
    }
}

/// Request params for the warm calls, chosen by the tools the server lists (a peer without a
/// search tool is not asked the last ones).
fn warm_requests(tools: &[String], ws: &Path) -> Vec<(&'static str, Value)> {
    let abs = |p: &str| ws.join(p).display().to_string();
    let has = |n: &str| tools.iter().any(|t| t == n);
    if has("file_operations") {
        let read = json!({"operation": "read_file", "path": "small.txt"});
        let list = json!({"operation": "list_dir", "path": "smalldir"});
        let project = json!({"operation": "list_dir", "path": "project"});
        let glob = json!({"operation": "file_search", "pattern": "**/*.rs", "path": "project"});
        let grep = json!({"operation": "grep_search", "pattern": "NEEDLE", "path": "project"});
        return vec![
            ("read_file 1 KB", json!({"name": "file_operations", "arguments": read})),
            ("list_dir small dir", json!({"name": "file_operations", "arguments": list})),
            ("list_dir project with .gitignore", json!({"name": "file_operations", "arguments": project})),
            ("file_search `**/*.rs` in the project", json!({"name": "file_operations", "arguments": glob})),
            ("grep_search `NEEDLE` in the project", json!({"name": "file_operations", "arguments": grep})),
        ];
    }
    let read = if has("read_text_file") { "read_text_file" } else { "read_file" };
    assert!(has(read) && has("list_directory"), "unknown server: tools {tools:?}");
    let mut requests = vec![
        ("read_file 1 KB", json!({"name": read, "arguments": {"path": abs("small.txt")}})),
        ("list_dir small dir", json!({"name": "list_directory", "arguments": {"path": abs("smalldir")}})),
        ("list_dir project with .gitignore", json!({"name": "list_directory", "arguments": {"path": abs("project")}})),
    ];
    // rust-mcp-filesystem's searches (the official server's `search_files` matches otherwise).
    if has("search_files_content") {
        let (glob, grep) = (json!({"pattern": "**/*.rs"}), json!({"pattern": "**/*.rs", "query": "NEEDLE"}));
        for (label, name, mut arguments) in [
            ("file_search `**/*.rs` in the project", "search_files", glob),
            ("grep_search `NEEDLE` in the project", "search_files_content", grep),
        ] {
            arguments["path"] = json!(abs("project"));
            requests.push((label, json!({"name": name, "arguments": arguments})));
        }
    }
    requests
}

/// Times `calls` round trips of one pre-serialized line (after `WARMUP` untimed ones).
fn time_round_trips(peer: &mut Peer, calls: usize, mut one: impl FnMut(&mut Peer)) -> (f64, f64) {
    for _ in 0..WARMUP {
        one(peer);
    }
    let mut v = Vec::with_capacity(calls);
    for _ in 0..calls {
        let t = Instant::now();
        one(peer);
        v.push(ms(t.elapsed()) * 1e3);
    }
    stats(v)
}

/// Section 2: warm per-call latency, with `cat` echoing the same bytes as the pipe floor.
fn warm_calls(servers: &[Server], ws: &Path, calls: usize) {
    println!("\n## Warm per-call latency, {calls} calls after {WARMUP} warm-up\n");
    println!("| call | process | median | p90 | median / `cat` |");
    println!("|---|---|---:|---:|---:|");
    let mut floors: Vec<f64> = Vec::new();
    for (si, s) in servers.iter().enumerate() {
        let mut p = Peer::spawn(&s.argv);
        let tools = p.handshake();
        for (ci, (label, params)) in warm_requests(&tools, ws).into_iter().enumerate() {
            let r = p.tool(params["name"].as_str().expect("name"), &params["arguments"]);
            let text = r["content"][0]["text"].as_str().unwrap_or("");
            let expected = ["0123456789", "file0", "f0.rs", "NEEDLE"];
            assert!(expected.iter().any(|word| text.contains(word)), "{label}: unexpected {r}");
            if si == 0 {
                let (_, line) = p.request_line("tools/call", params.clone());
                let mut cat = Peer::spawn(&["cat".to_string()]);
                let (cmed, cp90) = time_round_trips(&mut cat, calls, |c| {
                    c.write_line(&line);
                    c.read_line();
                });
                println!("| {label} | `cat` echo of the same bytes (baseline) | {cmed:.1} µs | {cp90:.1} µs | 1.0× |");
                floors.push(cmed);
            }
            let (med, p90) = time_round_trips(&mut p, calls, |p| {
                p.call("tools/call", params.clone());
            });
            println!("| {label} | {} | {med:.1} µs | {p90:.1} µs | {:.1}× |", s.name, med / floors[ci]);
        }
    }
}

/// Runs `rg` in `dir` and returns (wall ms, stdout).
fn run_rg(dir: &Path, args: &[&str]) -> (f64, String) {
    let t = Instant::now();
    let out = Command::new("rg").args(args).current_dir(dir).output().expect("run rg (is ripgrep installed?)");
    let wall = ms(t.elapsed());
    assert!(out.status.code().is_some_and(|c| c <= 1), "rg {args:?} failed: {out:?}");
    (wall, String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Section 3: grep_search / file_search on a big tree versus ripgrep. Returns false on a count mismatch.
fn tree_runs(bin: &Path, tree: &Path) -> bool {
    let tree = tree.canonicalize().expect("--tree must exist");
    let argv = [bin.display().to_string(), "serve".into(), "--root".into(), tree.display().to_string()];
    let mut p = Peer::spawn(&argv);
    p.handshake();
    let mut ok = true;
    println!("\n## Big tree `{}`: median of {TREE_RUNS} (after 1 warm-up)\n", tree.display());
    println!("| query | toolbelt-mcp | rg | ours / rg | ours count | rg count | counts |");
    println!("|---|---:|---:|---:|---:|---:|---|");
    // (label, pattern, case_insensitive, fixed_strings)
    let greps = [
        ("literal `fn `", "fn ", false, true),
        (r"regex `\b[A-Z][a-z]+Error\b`", r"\b[A-Z][a-z]+Error\b", false, false),
        ("case-insensitive `todo`", "todo", true, false),
    ];
    for (label, pat, ci, fixed) in greps {
        let args = json!({"operation": "grep_search", "pattern": pat, "path": ".", "output": "count", "case_insensitive": ci, "fixed_strings": fixed});
        let mut rg_args = vec!["--no-require-git", "-c"];
        rg_args.extend(ci.then_some("-i"));
        rg_args.extend(fixed.then_some("-F"));
        rg_args.extend(["--", pat]);
        let (ours, r, theirs, out) = race(&mut p, &args, &tree, &rg_args);
        let (lines, files) = (r["total_matches"].as_u64(), r["total_files"].as_u64());
        let rg_lines: u64 = out.lines().filter_map(|l| l.rsplit_once(':')?.1.parse::<u64>().ok()).sum();
        let rg_files = out.lines().count() as u64;
        let same = lines == Some(rg_lines) && files == Some(rg_files);
        ok &= same;
        let ours_c = format!("{} lines / {} files", opt(lines), opt(files));
        println!(
            "| grep {label} | {ours:.1} ms | {theirs:.1} ms | {:.2}× | {ours_c} | {rg_lines} lines / {rg_files} files | {} |",
            ours / theirs,
            verdict(same)
        );
    }
    for glob in ["**/*.rs", "*.md"] {
        let args = json!({"operation": "file_search", "pattern": glob, "path": "."});
        let (ours, r, theirs, out) = race(&mut p, &args, &tree, &["--no-require-git", "--files", "-g", glob]);
        let (total, rg_total) = (r["total"].as_u64(), out.lines().count() as u64);
        let same = total == Some(rg_total);
        ok &= same;
        println!(
            "| file_search `{glob}` | {ours:.1} ms | {theirs:.1} ms | {:.2}× | {} files | {rg_total} files | {} |",
            ours / theirs,
            opt(total),
            verdict(same)
        );
    }
    println!("\nServer peak RSS after the tree runs (VmHWM): {}", mib(p.proc_kib("VmHWM:")));
    ok
}

/// Interleaved timing of one server call and one rg invocation: (ours ms, structuredContent, rg ms, rg stdout).
fn race(p: &mut Peer, args: &Value, tree: &Path, rg_args: &[&str]) -> (f64, Value, f64, String) {
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let (mut sc, mut out) = (Value::Null, String::new());
    for i in 0..=TREE_RUNS {
        let t = Instant::now();
        let r = p.tool("file_operations", args);
        let wall = ms(t.elapsed());
        let (rg_wall, rg_out) = run_rg(tree, rg_args);
        if i > 0 {
            ours.push(wall);
            theirs.push(rg_wall);
        }
        (sc, out) = (r["structuredContent"].clone(), rg_out);
    }
    (stats(ours).0, sc, stats(theirs).0, out)
}

fn opt(v: Option<u64>) -> String {
    v.map_or("missing".into(), |n| n.to_string())
}

fn verdict(same: bool) -> &'static str {
    if same { "identical" } else { "**MISMATCH**" }
}

fn main() {
    // reqwest is built without a default TLS provider (the agent installs ring's).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let o = parse_opts();
    assert!(o.bin.exists(), "server binary {} not found (build with `cargo build --release`)", o.bin.display());
    let ws = Workspace::create();
    let root = ws.0.display().to_string();
    for (name, path) in &o.also {
        assert!(path.exists(), "the `{name}` build {} not found", path.display());
    }
    let mut servers = vec![Server {
        name: "toolbelt-mcp".into(),
        argv: vec![o.bin.display().to_string(), "serve".into(), "--root".into(), root.clone()],
    }];
    // The other builds, cold starts only (the warm sections compare one build with the peer).
    let builds: Vec<Server> = o
        .also
        .iter()
        .map(|(name, path)| Server {
            name: format!("toolbelt-mcp ({name})"),
            argv: vec![path.display().to_string(), "serve".into(), "--root".into(), root.clone()],
        })
        .collect();
    if let Some(cmd) = &o.compare {
        let mut argv: Vec<String> = cmd.split_whitespace().map(|a| a.replace("{root}", &root)).collect();
        if !cmd.contains("{root}") {
            argv.push(root.clone());
        }
        servers.push(Server { name: format!("`{cmd}`"), argv });
    }
    println!("# toolbelt-mcp stdio bench\n\nbinary: `{}`", o.bin.display());
    for (name, path) in &o.also {
        println!("and the `{name}` build: `{}`", path.display());
    }
    let run = |section: &str| o.only.as_deref().is_none_or(|only| only.split(',').any(|s| s == section));
    if run("cold") {
        let mut cold: Vec<Server> = servers.iter().take(1).chain(&builds).cloned().collect();
        cold.extend(servers.iter().skip(1).cloned());
        cold_start(&cold, o.runs, o.compare.is_some());
    }
    if run("warm") {
        warm_calls(&servers, &ws.0, o.calls);
    }
    if run("writes") {
        writes::write_calls(&servers, &ws.0, o.calls);
    }
    #[cfg(unix)]
    if run("terminal") {
        terminal::terminal_calls(&o.bin, &ws.0, o.calls);
    }
    #[cfg(target_os = "linux")]
    if run("proxy") {
        proxy::proxy_calls(&o.bin, &ws.0, o.calls);
    }
    if run("records") {
        records::record_calls(&o.bin, &ws.0, o.calls, o.compare_memory.as_deref());
    }
    #[cfg(unix)]
    if run("http") {
        http::http_load(&o.bin, &ws.0, o.http_calls);
    }
    if run("ts") {
        ts::ts_client(&o.bin, &o.also, o.compare.as_deref(), o.runs, o.calls);
    }
    if run("lean") {
        lean::lean_table(&o.bin);
    }
    if run("agent") {
        agent::agent_turns(&o.bin, o.agent_base.as_deref(), &ws.0);
    }
    // Opt-in: loading a million memories per engine takes minutes.
    #[cfg(unix)]
    if o.only.as_deref().is_some_and(|only| only.split(',').any(|s| s == "scale")) {
        scale::scale(&o.bin, &ws.0, &o.scale_sizes, o.calls);
    }
    let mut counts_ok = true;
    if let Some(tree) = &o.tree {
        let every_build =
            std::iter::once(("", o.bin.as_path())).chain(o.also.iter().map(|(n, p)| (n.as_str(), p.as_path())));
        for (name, bin) in every_build {
            if !name.is_empty() {
                println!("\n# The `{name}` build: `{}`", bin.display());
            }
            counts_ok &= tree_runs(bin, tree);
            bigdir::big_dir(bin, o.compare.as_deref(), &tree.canonicalize().expect("--tree must exist"), &o.list_dir);
        }
    }
    drop(ws);
    if !counts_ok {
        println!("\n**COUNT MISMATCH between toolbelt-mcp and rg: see the table above.**");
        eprintln!("!!!!!!!! COUNT MISMATCH between toolbelt-mcp and rg (see the table above) !!!!!!!!");
        std::process::exit(1);
    }
}
