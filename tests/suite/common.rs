//! Shared test harness: fixture workspaces and a real MCP client on the real binary.

use std::path::{Path, PathBuf};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::{ConfigureCommandExt, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

/// The binary under test.
pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_toolbelt-mcp");

/// Lines in the generated big file.
pub(crate) const BIG_LINES: usize = 50_000;

/// A copy of `fixtures/workspace` in a temp dir, with symlinks and a big file made here.
pub(crate) struct Workspace {
    _tmp: tempfile::TempDir,
    /// The workspace root (canonical).
    pub root: PathBuf,
    /// A directory outside the root holding `secret.txt`.
    pub outside: PathBuf,
    /// An empty config home so no user config leaks into tests.
    pub config_home: PathBuf,
    /// The state home (undo data, temp-file journal) of servers started here.
    pub state_home: PathBuf,
    /// The PostgreSQL database servers started here keep todos and memories in (`None`:
    /// SQLite in the state dir).
    pub store: Option<String>,
}

impl Workspace {
    pub(crate) fn new() -> Self {
        let tmp = tempfile::tempdir_in(scratch_base()).unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("ws");
        copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/workspace"), &root);
        let outside = base.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "NEEDLE_OUTSIDE top secret\n").unwrap();
        let config_home = base.join("config");
        std::fs::create_dir_all(&config_home).unwrap();
        let state_home = base.join("state");
        use std::os::unix::fs::symlink;
        symlink("src/lib.rs", root.join("link_inside")).unwrap();
        symlink(outside.join("secret.txt"), root.join("link_outside")).unwrap();
        symlink(&outside, root.join("link_outside_dir")).unwrap();
        symlink("does/not/exist", root.join("dangling")).unwrap();
        symlink("..", root.join("src/loop")).unwrap();
        let big: String = (1..=BIG_LINES).map(|n| format!("line {n} of the big file\n")).collect();
        std::fs::write(root.join("data/big.txt"), big).unwrap();
        Self { _tmp: tmp, root, outside, config_home, state_home, store: None }
    }

    /// A workspace whose servers keep their records in a new database of the test PostgreSQL
    /// server (`None`: no server, and the test is skipped, saying why).
    pub(crate) async fn on_postgres() -> Option<Self> {
        let url = super::pg::server()?.database().await;
        Some(Self { store: Some(url), ..Self::new() })
    }

    /// `TOOLBELT_STORE` for servers started here, if they use PostgreSQL.
    pub(crate) fn store_env(&self) -> Vec<(&'static str, &str)> {
        self.store.iter().map(|url| ("TOOLBELT_STORE", url.as_str())).collect()
    }
}

/// Defines each named test, an `async fn NAME(ws: Workspace)`, once per store engine:
/// `sqlite::NAME` and `postgres::NAME` (which says it skipped without a PostgreSQL server,
/// and fails in CI).
macro_rules! on_each_engine {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test]
                async fn $name() {
                    super::$name(crate::suite::common::Workspace::new()).await
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test]
                async fn $name() {
                    if let Some(ws) = crate::suite::common::Workspace::on_postgres().await {
                        super::$name(ws).await
                    }
                }
            )*
        }
    };
}
pub(crate) use on_each_engine;

/// Where workspaces are made: not under a temp dir, because sandboxed commands may write the
/// system temp dirs and the sandbox tests need an `outside` that nothing makes writable. That
/// is cargo's target temp dir, unless the checkout itself lives under a temp dir; then a
/// directory in `$HOME` whose name does not start with a dot (a dotted one is the home's own
/// Held by the tests that load the machine for long (the symlink-swap race) and by those that
/// time what they measure, so that one never runs beside the other.
pub(crate) static HEAVY: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// configuration, which the server protects).
fn scratch_base() -> PathBuf {
    // The unprivileged pass runs these tests as another user, who cannot write `target/`.
    if let Some(dir) = std::env::var_os("TOOLBELT_TEST_SCRATCH") {
        std::fs::create_dir_all(&dir).unwrap();
        return PathBuf::from(dir).canonicalize().unwrap();
    }
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).canonicalize().unwrap();
    let temps = [std::env::temp_dir(), "/tmp".into(), "/var/tmp".into(), "/dev/shm".into()];
    if !temps.iter().filter_map(|t| t.canonicalize().ok()).any(|t| target.starts_with(t)) {
        return target;
    }
    let home = PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join("toolbelt-mcp-tests");
    std::fs::create_dir_all(&home).unwrap();
    home
}

/// Copies a tree, turning `_gitignore` into `.gitignore`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let target = to.join(if name == "_gitignore" { ".gitignore".into() } else { name });
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// A connected MCP client talking to a spawned server.
pub(crate) struct Client {
    pub service: RunningService<RoleClient, ()>,
    /// The server's process id, when known.
    pub pid: Option<u32>,
}

/// A tool result in test-friendly form.
#[derive(Debug)]
pub(crate) struct Reply {
    pub text: String,
    pub structured: Value,
    pub is_error: bool,
    pub raw: CallToolResult,
}

impl Client {
    /// Starts `toolbelt-mcp serve --root <ws> <extra…>`.
    pub(crate) async fn start(ws: &Workspace, extra: &[&str]) -> Self {
        let mut args = vec!["serve".to_string(), "--root".into(), ws.root.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        Self::spawn_with_env(&args, &ws.config_home, None, &ws.store_env()).await
    }

    /// Starts the binary with exactly these arguments.
    pub(crate) async fn spawn(args: &[String], config_home: &Path, cwd: Option<&Path>) -> Self {
        Self::spawn_with_env(args, config_home, cwd, &[]).await
    }

    /// Starts `serve --root <ws> <extra…>` with extra environment variables.
    pub(crate) async fn start_with_env(ws: &Workspace, extra: &[&str], env: &[(&str, &str)]) -> Self {
        let mut args = vec!["serve".to_string(), "--root".into(), ws.root.display().to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut env = env.to_vec();
        env.extend(ws.store_env());
        Self::spawn_with_env(&args, &ws.config_home, None, &env).await
    }

    /// Starts the binary with these arguments and extra environment variables.
    pub(crate) async fn spawn_with_env(
        args: &[String],
        config_home: &Path,
        cwd: Option<&Path>,
        env: &[(&str, &str)],
    ) -> Self {
        let transport = TokioChildProcess::new(tokio::process::Command::new(BIN).configure(|cmd| {
            cmd.envs(env.iter().copied());
            cmd.args(args)
                .env("XDG_CONFIG_HOME", config_home)
                .env("XDG_STATE_HOME", config_home.with_file_name("state"))
                .env_remove("TOOLBELT_ROOT")
                .env_remove("TOOLBELT_STATE_DIR")
                .env_remove("RUST_LOG");
            if let Some(dir) = cwd {
                cmd.current_dir(dir);
            }
        }))
        .unwrap();
        let pid = transport.id();
        Self { service: ().serve(transport).await.unwrap(), pid }
    }

    /// Calls a tool and unpacks the result.
    pub(crate) async fn call(&self, tool: &str, args: Value) -> Reply {
        let params = CallToolRequestParams::new(tool.to_string()).with_arguments(with_details(&args));
        let raw = self.service.call_tool(params).await.unwrap();
        unpack(raw)
    }

    /// Calls `tool` with `args` and `meta` as the request's `_meta` (what a host adds).
    #[cfg(target_os = "linux")]
    pub(crate) async fn call_with_meta(&self, tool: &str, args: Value, meta: Value) -> Reply {
        let mut params = CallToolRequestParams::new(tool.to_string()).with_arguments(with_details(&args));
        let Value::Object(meta) = meta else { panic!("`_meta` is an object: {meta}") };
        params.meta = Some(rmcp::model::RequestMetaObject(rmcp::model::MetaObject(meta)));
        unpack(self.service.call_tool(params).await.unwrap())
    }

    /// Calls `file_operations`.
    pub(crate) async fn file(&self, args: Value) -> Reply {
        self.call("file_operations", args).await
    }

    /// Calls `terminal_operations` with `operation` and its fields.
    pub(crate) async fn term(&self, operation: &str, fields: Value) -> Reply {
        self.call("terminal_operations", op(operation, fields)).await
    }

    /// Calls `todo_operations` with `operation` and its fields.
    pub(crate) async fn todo(&self, operation: &str, fields: Value) -> Reply {
        self.call("todo_operations", op(operation, fields)).await
    }

    /// Calls `memory_operations` with `operation` and its fields.
    pub(crate) async fn memory(&self, operation: &str, fields: Value) -> Reply {
        self.call("memory_operations", op(operation, fields)).await
    }

    /// Runs a foreground command and returns the result (error or not).
    pub(crate) async fn run(&self, command: &str) -> Reply {
        self.term("run_command", json!({ "command": command })).await
    }

    /// Calls `file_operations` and asserts success.
    pub(crate) async fn ok(&self, args: Value) -> Reply {
        let reply = self.file(args.clone()).await;
        assert!(!reply.is_error, "{args} failed: {}", reply.text);
        reply
    }

    /// Calls `file_operations` and asserts an `isError` result; returns its text.
    pub(crate) async fn err(&self, args: Value) -> String {
        let reply = self.file(args.clone()).await;
        assert!(reply.is_error, "{args} should fail but gave: {}", reply.text);
        assert!(reply.structured.is_null(), "errors carry no structured content");
        reply.text
    }

    /// The server's peak resident memory (VmHWM), in KiB.
    pub(crate) fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid.unwrap())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    }

    pub(crate) async fn close(self) {
        self.service.cancel().await.unwrap();
    }
}

/// `args` asking for the whole record (`details: true`) unless they say otherwise: the suite
/// checks every field; the lean view has tests of its own (`lean.rs`).
pub(crate) fn with_details(args: &Value) -> serde_json::Map<String, Value> {
    let mut args = args.as_object().unwrap().clone();
    args.entry("details").or_insert(Value::Bool(true));
    args
}

pub(crate) fn unpack(raw: CallToolResult) -> Reply {
    let text = raw.content.iter().filter_map(|c| c.as_text()).map(|t| t.text.clone()).collect::<Vec<_>>().join("\n");
    let reply = Reply {
        text,
        structured: raw.structured_content.clone().unwrap_or(Value::Null),
        is_error: raw.is_error == Some(true),
        raw,
    };
    check_views(&reply);
    reply
}

/// The payload fields of structured results: arrays of lines the text view shows too.
const PAYLOADS: [&str; 6] = ["lines", "diff", "stdout", "stderr", "output", "files"];

/// Every result of every test holds this: both views carry the payload (hosts show the
/// model one or the other), line for line. Each line is looked for after the one before it
/// (where the text shows them), and only then anywhere: searching the whole text for each of
/// a page's 800 lines took 10 of the 17 s the 9 MB paging test ran in a debug build.
fn check_views(reply: &Reply) {
    for field in PAYLOADS {
        let Some(lines) = reply.structured.get(field).and_then(Value::as_array) else { continue };
        let mut from = 0;
        for line in lines {
            let line = line.as_str().unwrap_or_else(|| panic!("`{field}` holds strings: {line}"));
            let line = line.trim_end();
            if let Some(at) = reply.text[from..].find(line) {
                from += at + line.len();
                continue;
            }
            assert!(
                reply.text.contains(line),
                "the text view lacks a line of `{field}`: {line:?}\ntext:\n{}",
                reply.text
            );
        }
    }
}

impl Reply {
    /// A payload field of the structured view (an array of lines) as text, a newline after
    /// each line; empty when absent.
    pub(crate) fn joined(&self, field: &str) -> String {
        let lines = self.structured.get(field).and_then(Value::as_array).cloned().unwrap_or_default();
        lines.iter().map(|l| format!("{}\n", l.as_str().unwrap_or_default())).collect()
    }
}

/// `{"operation": op, ...fields}`.
pub(crate) fn op(operation: &str, fields: Value) -> Value {
    let mut map = fields.as_object().cloned().unwrap_or_default();
    map.insert("operation".into(), json!(operation));
    Value::Object(map)
}

/// Shell words printing the shell's pid as the host sees it can be found: `PID:pid:[NS]`, the
/// pid inside the command's PID namespace and that namespace (see [`host_pid`]).
pub(crate) const SELF_PID: &str = "$$:$(readlink /proc/$$/ns/pid)";
/// The same for the last background job (`$!`) (the isolation tests, Linux).
#[cfg(target_os = "linux")]
pub(crate) const JOB_PID: &str = "$!:$(readlink /proc/$!/ns/pid)";

/// The host pid of the process whose whole command line is `argv`, waiting up to `secs` for it
/// to start: how a test finds a sandboxed command's process (what the command writes in the
/// root reaches the real tree only when it ends, so it cannot report a pid through a file).
pub(crate) async fn process_with_args(argv: &[&str], secs: u64) -> u32 {
    let wanted: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            if std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| line == wanted) {
                return pid;
            }
        }
        assert!(std::time::Instant::now() < deadline, "no process `{}` started", argv.join(" "));
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// A `sleep` of about `secs` seconds that no other test runs (its fraction is unique in this
/// process), for [`process_with_args`] to find: the command line and its argument.
pub(crate) fn unique_sleep(secs: u64) -> (String, String) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let arg = format!("{secs}.{:03}{n:04}", std::process::id() % 1000);
    (format!("exec sleep {arg}"), arg)
}

/// The host pid of a process a sandboxed command reported with [`SELF_PID`] or [`JOB_PID`]:
/// the one in that PID namespace with that pid there.
pub(crate) fn host_pid(reported: &str) -> u32 {
    let (inner, namespace) = reported.trim().split_once(':').unwrap_or_else(|| panic!("not a pid report: {reported}"));
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        let last = status.lines().find_map(|l| l.strip_prefix("NSpid:")).and_then(|ids| ids.split_whitespace().last());
        if last == Some(inner)
            && std::fs::read_link(format!("/proc/{pid}/ns/pid")).is_ok_and(|ns| ns.to_string_lossy() == namespace)
        {
            return pid;
        }
    }
    panic!("no process {inner} in {namespace}")
}

/// Whether process `pid` is gone (or a zombie waiting for its parent).
pub(crate) fn gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat.rsplit(')').next().is_some_and(|rest| rest.trim_start().starts_with('Z')),
    }
}

/// Waits up to `secs` for `pid` to be gone.
pub(crate) async fn wait_gone(pid: u32, secs: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline && !gone(pid) {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    gone(pid)
}

/// An HTTP client for the plain-HTTP loopback servers the tests start. It trusts no
/// certificate, so building it does not load and decode the system's root store, which the
/// default client does each time (a debug build spent seconds of CPU on it in one test of
/// 200 sessions).
pub(crate) fn loopback_http() -> reqwest::Client {
    // reqwest is built without a default TLS provider (the agent installs ring's).
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder().tls_certs_only([]).build().unwrap()
}

/// Runs git in `dir` as the user would (outside any sandbox), with a fixed identity; its
/// stdout. Fails the test when git fails. Linux only: the suites that use it run only there.
#[cfg(target_os = "linux")]
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}
