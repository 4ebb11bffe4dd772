//! The deployment recipes run as written: `deploy/Containerfile` (images cannot be pulled
//! here, so its last stage is read and the binary run the way it says: its user, entry point,
//! environment and volumes, with the volumes the only places that user may write, and its
//! health check) and `deploy/toolbelt-mcp.service` (`systemd-analyze verify` and its offline
//! exposure score, then `ExecStart` as the unit's user with its environment). Each checks a
//! task end to end over HTTP: a file written, a sandboxed command, a todo, a memory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rmcp::ServiceExt;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};

use super::common::{BIN, Client, loopback_http};

const TOKEN: &str = "deploy-test-token-0123456789abcdef";
/// The PATH container runtimes give a process whose image sets none.
const CONTAINER_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn recipe(name: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy").join(name)).unwrap()
}

fn skip(why: &str) {
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

/// A free TCP port on this machine.
pub(super) fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// The instructions of a Containerfile's last stage, `(INSTRUCTION, rest)`, continuation
/// lines joined.
fn last_stage(text: &str) -> Vec<(String, String)> {
    let joined = text.replace("\\\n", " ");
    let lines: Vec<&str> = joined.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect();
    let from = lines.iter().rposition(|l| l.starts_with("FROM ")).unwrap();
    lines[from..]
        .iter()
        .map(|l| {
            let (instruction, rest) = l.split_once(' ').unwrap();
            (instruction.to_string(), rest.trim().to_string())
        })
        .collect()
}

fn instruction<'a>(stage: &'a [(String, String)], name: &str) -> &'a str {
    &stage.iter().find(|(i, _)| i == name).unwrap_or_else(|| panic!("no {name}")).1
}

/// A served process (a recipe's, a replica, a proxy) and its HTTP port, stopped when dropped:
/// `SIGTERM` first, so that a parent ends its children (nginx's master its workers; `SIGKILL`
/// would leave them running), then `SIGKILL` if it lingers.
pub(super) struct Deployed {
    pub(super) child: std::process::Child,
    pub(super) port: u16,
}

impl Drop for Deployed {
    fn drop(&mut self) {
        // Only a process not yet reaped: its pid could be another's by now.
        if let Ok(None) = self.child.try_wait() {
            let pid = rustix::process::Pid::from_child(&self.child);
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `argv` as `uid:gid` with exactly `env` (`env -i`), as a container runtime or systemd
/// would start it.
fn run_as(uid: u32, gid: u32, env: &[(String, String)], argv: &[String]) -> std::process::Child {
    let mut command = Command::new("setpriv");
    command.args([format!("--reuid={uid}"), format!("--regid={gid}"), "--clear-groups".into()]);
    command.arg("env").arg("-i");
    command.args(env.iter().map(|(k, v)| format!("{k}={v}")));
    command.args(argv);
    command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    command.spawn().unwrap()
}

/// A directory the recipe's user owns (a volume, a state dir).
fn owned_dir(path: &Path, uid: u32, gid: u32) {
    std::fs::create_dir_all(path).unwrap();
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).unwrap();
}

/// The workspace volume: a git repository with one file, owned by the recipe's user.
fn workspace(path: &Path, uid: u32, gid: u32) {
    owned_dir(path, uid, gid);
    std::fs::write(path.join("README.md"), "# team project\n").unwrap();
    let out = Command::new("git").args(["init", "-q"]).current_dir(path).output().unwrap();
    assert!(out.status.success());
    let out = Command::new("chown").args(["-R", &format!("{uid}:{gid}")]).arg(path).output().unwrap();
    assert!(out.status.success());
}

/// Waits until `GET /health` answers (or the process died).
pub(super) async fn healthy(deployed: &mut Deployed) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let health = loopback_http().get(format!("http://127.0.0.1:{}/health", deployed.port)).send().await;
        if health.is_ok_and(|r| r.status().is_success()) {
            return;
        }
        assert!(
            deployed.child.try_wait().unwrap().is_none(),
            "the process on port {} exited before serving",
            deployed.port
        );
        assert!(Instant::now() < deadline, "port {} not healthy within 15 s", deployed.port);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// An MCP client of the server at `port` over HTTP, with `token`.
pub(super) async fn connect(port: u16, token: &str) -> Client {
    let config =
        StreamableHttpClientTransportConfig::with_uri(format!("http://127.0.0.1:{port}/mcp")).auth_header(token);
    Client {
        service: ().serve(StreamableHttpClientTransport::with_client(loopback_http(), config)).await.unwrap(),
        pid: None,
    }
}

/// A task end to end through the server at `port`: a file, a sandboxed command, a todo and a
/// memory; the file and the command's output land in `workspace`, owned by `uid`.
async fn task(port: u16, workspace: &Path, uid: u32) {
    let client = connect(port, TOKEN).await;
    let made = client.file(json!({"operation": "create_file", "path": "notes/plan.md", "content": "ship it\n"})).await;
    assert!(!made.is_error, "{}", made.text);
    let ran = client.run("git status --short > notes/status.txt").await;
    assert!(!ran.is_error, "a sandboxed command runs: {}", ran.text);
    let added = client.todo("add", json!({"todos": [{"title": "deployed"}]})).await;
    assert!(!added.is_error, "{}", added.text);
    let stored = client.memory("store", json!({"content": "the team server runs from the recipe"})).await;
    assert!(!stored.is_error, "{}", stored.text);
    let found: Value = client.memory("search", json!({"query": "recipe"})).await.structured;
    assert_eq!(found["total"], 1, "{found}");
    client.close().await;
    let status = std::fs::read_to_string(workspace.join("notes/status.txt")).unwrap();
    assert!(status.contains("notes/"), "{status}");
    use std::os::unix::fs::MetadataExt;
    assert_eq!(std::fs::metadata(workspace.join("notes/plan.md")).unwrap().uid(), uid);
}

/// Files `uid` owns under `dirs` (what it wrote outside its volumes).
fn owned_by(uid: u32, dirs: &[&str]) -> Vec<String> {
    let out = Command::new("find").args(dirs).args(["-xdev", "-uid", &uid.to_string()]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

#[tokio::test]
async fn the_container_recipe_runs_as_written_with_only_its_volumes_writable() {
    if !rustix::process::geteuid().is_root() {
        return skip("running as the recipe's user needs root (the CI's root pass runs it)");
    }
    let stage = last_stage(&recipe("Containerfile"));
    let (uid, gid) = instruction(&stage, "USER").split_once(':').unwrap();
    let (uid, gid): (u32, u32) = (uid.parse().unwrap(), gid.parse().unwrap());
    let volumes: Vec<String> = serde_json::from_str(instruction(&stage, "VOLUME")).unwrap();
    let entrypoint: Vec<String> = serde_json::from_str(instruction(&stage, "ENTRYPOINT")).unwrap();
    let health = instruction(&stage, "HEALTHCHECK");
    let health: Vec<String> = serde_json::from_str(health.split(" CMD ").nth(1).unwrap()).unwrap();
    let exposed: u16 = instruction(&stage, "EXPOSE").parse().unwrap();

    // The volumes live under a directory of the test; paths in the recipe are mapped there.
    let tmp = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let host = |path: &str| -> String {
        match volumes.iter().find(|v| path == v.as_str() || path.starts_with(&format!("{v}/"))) {
            Some(_) => format!("{}{path}", tmp.path().display()),
            None => path.to_string(),
        }
    };
    for volume in &volumes {
        let dir = PathBuf::from(host(volume));
        if volume == "/workspace" {
            workspace(&dir, uid, gid);
        } else {
            owned_dir(&dir, uid, gid);
        }
    }
    let port = free_port();
    let on_port = |s: &str| s.replace(&exposed.to_string(), &port.to_string());
    let mut env: Vec<(String, String)> = instruction(&stage, "ENV")
        .split_whitespace()
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap();
            (k.to_string(), host(v))
        })
        .collect();
    env.push(("PATH".into(), CONTAINER_PATH.into()));
    env.push(("TOOLBELT_AUTH_TOKEN".into(), TOKEN.into()));
    let mut argv: Vec<String> = entrypoint.iter().map(|a| on_port(&host(a))).collect();
    argv[0] = BIN.to_string();
    let mut deployed = Deployed { child: run_as(uid, gid, &env, &argv), port };
    healthy(&mut deployed).await;
    let check: Vec<String> = health.iter().map(|a| on_port(a)).collect();
    let status = run_as(uid, gid, &env, &check).wait().unwrap();
    assert!(status.success(), "the HEALTHCHECK command fails: {check:?}");

    let workspace_dir = PathBuf::from(host("/workspace"));
    task(port, &workspace_dir, uid).await;
    let state = PathBuf::from(host("/state"));
    assert!(state.join("toolbelt.db").is_file(), "todos and memories are in the state volume");
    assert!(state.join("audit.jsonl").is_file(), "so is the audit log");
    let stray = owned_by(uid, &["/var/tmp", "/dev/shm", "/home", "/root", "/etc", "/srv", "/opt"]);
    let stray: Vec<&String> = stray.iter().filter(|p| !p.starts_with(&tmp.path().display().to_string())).collect();
    assert!(stray.is_empty(), "written outside the volumes (and /tmp, a tmpfs in the recipe): {stray:?}");
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(deployed.child.id() as i32).unwrap(),
        rustix::process::Signal::TERM,
    )
    .ok();
    let deadline = Instant::now() + Duration::from_secs(10);
    while deployed.child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "SIGTERM stops the container's process");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The `[Service]` settings of a unit, in order (`Environment=` repeats).
fn service_settings(unit: &str) -> Vec<(String, String)> {
    let mut in_service = false;
    let mut settings = Vec::new();
    for line in unit.lines().map(str::trim) {
        if line.starts_with('[') {
            in_service = line == "[Service]";
        } else if in_service
            && !line.starts_with('#')
            && let Some((key, value)) = line.split_once('=')
        {
            settings.push((key.to_string(), value.to_string()));
        }
    }
    settings
}

#[tokio::test]
async fn the_systemd_unit_verifies_keeps_its_exposure_low_and_runs_as_written() {
    if !rustix::process::geteuid().is_root() {
        return skip("running as the unit's user needs root (the CI's root pass runs it)");
    }
    if Command::new("systemd-analyze").arg("--version").output().is_err() {
        return skip("no systemd-analyze to check the unit with");
    }
    let unit = recipe("toolbelt-mcp.service");
    let tmp = tempfile::tempdir_in("/var/tmp").unwrap();
    std::fs::set_permissions(tmp.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let copy = tmp.path().join("toolbelt-mcp.service");
    std::fs::write(&copy, unit.replace("/usr/local/bin/toolbelt-mcp", BIN)).unwrap();
    let verified = Command::new("systemd-analyze").arg("verify").arg(&copy).output().unwrap();
    assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stderr));
    let security = Command::new("systemd-analyze").args(["security", "--offline=true"]).arg(&copy).output().unwrap();
    let report = String::from_utf8_lossy(&security.stdout);
    let exposure: f64 = report
        .lines()
        .find_map(|l| {
            l.split("Overall exposure level for toolbelt-mcp.service: ").nth(1)?.split(' ').next()?.parse().ok()
        })
        .unwrap_or_else(|| panic!("no exposure level in: {report}"));
    assert!(exposure <= 4.5, "the unit's exposure grew to {exposure}:\n{report}");

    // ExecStart as the unit's user (a uid of the test's), its paths under the test's dir.
    let (uid, gid) = (10002, 10002);
    let settings = service_settings(&unit);
    let host = |word: &str| -> String {
        if ["/srv/", "/var/lib/", "/etc/"].iter().any(|p| word.starts_with(p)) {
            format!("{}{word}", tmp.path().display())
        } else {
            word.to_string()
        }
    };
    let port = free_port();
    let exec: Vec<String> =
        settings.iter().find(|(k, _)| k == "ExecStart").unwrap().1.split_whitespace().map(host).collect();
    let mut argv: Vec<String> =
        exec.iter().map(|a| a.replace("127.0.0.1:8765", &format!("127.0.0.1:{port}"))).collect();
    argv[0] = BIN.to_string();
    let workspace_dir = PathBuf::from(host("/srv/toolbelt/workspace"));
    workspace(&workspace_dir, uid, gid);
    let state = PathBuf::from(host("/var/lib/toolbelt-mcp"));
    owned_dir(&state, uid, gid);
    let token = PathBuf::from(host("/etc/toolbelt-mcp/token"));
    std::fs::create_dir_all(token.parent().unwrap()).unwrap();
    std::fs::write(&token, TOKEN).unwrap();
    std::os::unix::fs::chown(&token, Some(uid), Some(gid)).unwrap();
    std::fs::set_permissions(&token, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let database = match super::pg::server() {
        Some(server) => Some(server.database().await),
        None => None,
    };
    let mut env: Vec<(String, String)> = vec![("PATH".into(), CONTAINER_PATH.into())];
    for (_, value) in settings.iter().filter(|(k, _)| k == "Environment") {
        let (name, value) = value.split_once('=').unwrap();
        let value = match (name, &database) {
            // The unit's database, on the test's PostgreSQL server.
            ("TOOLBELT_STORE", Some(url)) => url.clone(),
            ("TOOLBELT_STORE", None) => continue,
            _ => host(value),
        };
        env.push((name.to_string(), value));
    }
    let mut deployed = Deployed { child: run_as(uid, gid, &env, &argv), port };
    healthy(&mut deployed).await;
    task(port, &workspace_dir, uid).await;
    if database.is_none() {
        assert!(state.join("toolbelt.db").is_file());
    }
    assert!(state.join("audit.jsonl").is_file(), "the state directory holds the audit log");
}
