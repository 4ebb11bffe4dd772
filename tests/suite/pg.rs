//! A real PostgreSQL server for the tests, started once per test process from the system's
//! binaries (`initdb` into a temp dir, `postgres` on a private Unix socket, as the `postgres`
//! user when the tests run as root), stopped by a watchdog when the test process exits; each
//! test gets a database of its own. Without the binaries a test says it skipped and why; in CI
//! (`CI=true`) that fails instead.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The database superuser the cluster is made with.
const SUPERUSER: &str = "toolbelt";

/// A running server: its socket directory and port.
pub(super) struct PgServer {
    pub socket_dir: PathBuf,
    pub port: u16,
    data: PathBuf,
}

static SERVER: OnceLock<Result<PgServer, String>> = OnceLock::new();
static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// The directory holding `initdb` and `postgres`: on `PATH`, else Debian's versioned dir.
fn bin_dir() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .find(|dir| dir.join("postgres").is_file() && dir.join("initdb").is_file())
        // `/usr/local/bin` may link a few of them: the real directory has them all.
        .and_then(|dir| Some(dir.join("postgres").canonicalize().ok()?.parent()?.to_path_buf()))
        .filter(|dir| dir.join("pg_isready").is_file() && dir.join("pg_ctl").is_file());
    on_path.or_else(|| {
        let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .ok()?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|bin| bin.join("postgres").is_file())
            .collect();
        versions.sort();
        versions.pop()
    })
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Runs a PostgreSQL program as the cluster's owner.
fn as_owner(program: &Path) -> Command {
    if is_root() {
        let mut command = Command::new("runuser");
        command.args(["-u", "postgres", "--"]).arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn start(base: &Path) -> Result<PgServer, String> {
    let bin = bin_dir().ok_or("no PostgreSQL binaries (`initdb`, `postgres`) on PATH or in /usr/lib/postgresql; install Debian's `postgresql` package")?;
    let _ = std::fs::remove_dir_all(base);
    let (data, socket_dir) = (base.join("data"), base.join("socket"));
    std::fs::create_dir_all(&socket_dir).map_err(|e| e.to_string())?;
    if is_root() {
        let owner = Command::new("chown").args(["-R", "postgres:postgres"]).arg(base).status();
        if !owner.is_ok_and(|s| s.success()) {
            return Err("cannot give the cluster's directory to the `postgres` user".into());
        }
    }
    let init = as_owner(&bin.join("initdb"))
        .args(["-D"])
        .arg(&data)
        .args(["-U", SUPERUSER, "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C.UTF-8"])
        .output()
        .map_err(|e| format!("cannot run initdb: {e}"))?;
    if !init.status.success() {
        return Err(format!("initdb failed: {}", String::from_utf8_lossy(&init.stderr)));
    }
    let server = PgServer { socket_dir, port: 5432, data };
    server.launch()?;
    Ok(server)
}

/// The test server, or why there is none (then the caller skips; in CI it panics).
pub(super) fn server() -> Option<&'static PgServer> {
    // A short path: a Unix socket's path is limited to about 100 bytes.
    match SERVER.get_or_init(|| start(Path::new(&format!("/tmp/toolbelt-pg-{}", std::process::id())))) {
        Ok(server) => Some(server),
        Err(why) => {
            assert!(std::env::var_os("CI").is_none(), "PostgreSQL is required in CI: {why}");
            let _ = writeln!(std::io::stderr(), "skipped: {why}");
            None
        }
    }
}

impl PgServer {
    /// The URL of database `name`.
    pub(super) fn url(&self, name: &str) -> String {
        format!("postgres://{SUPERUSER}@/{name}?host={}&port={}", self.socket_dir.display(), self.port)
    }

    /// A new empty database; its URL.
    pub(super) async fn database(&self) -> String {
        let name = format!("t{}_{}", std::process::id(), DATABASES.fetch_add(1, Ordering::Relaxed));
        let client = self.connect("postgres").await;
        client.batch_execute(&format!("CREATE DATABASE {name}")).await.unwrap();
        self.url(&name)
    }

    /// A connection to database `name` (for checks).
    pub(super) async fn connect(&self, name: &str) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.url(name), tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        client
    }

    /// Starts `postgres` under a watchdog that stops it when the test process is gone, and
    /// waits for its socket.
    pub(super) fn launch(&self) -> Result<(), String> {
        let bin = bin_dir().ok_or("no PostgreSQL binaries")?;
        let script = format!(
            "\"$0\" -D \"$1\" -k \"$2\" -p {} -c listen_addresses= -c fsync=off -c max_connections=200 & pg=$!; \
             while [ -d /proc/{pid} ] && kill -0 $pg 2>/dev/null; do sleep 0.2; done; kill -INT $pg 2>/dev/null; wait $pg; \
             [ -d /proc/{pid} ] || rm -rf \"$3\"",
            self.port,
            pid = std::process::id()
        );
        let mut shell = as_owner(Path::new("/bin/sh"));
        shell.args(["-c", &script]).arg(bin.join("postgres")).arg(&self.data).arg(&self.socket_dir);
        shell.arg(self.data.parent().unwrap_or(&self.data));
        shell.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        shell.spawn().map_err(|e| format!("cannot start postgres: {e}"))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = as_owner(&bin.join("pg_isready"))
                .arg("-h")
                .arg(&self.socket_dir)
                .args(["-p", &self.port.to_string(), "-q"])
                .status();
            if ready.is_ok_and(|s| s.success()) {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err("postgres was not ready within 30 s".into());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server (`pg_ctl stop -m fast`): for tests of a database that goes away.
    pub(super) fn stop(&self) {
        let bin = bin_dir().unwrap();
        let out = as_owner(&bin.join("pg_ctl")).args(["stop", "-m", "fast", "-D"]).arg(&self.data).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

/// A cluster of one's own (for a test that stops and restarts it), or `None` (skipped).
pub(super) fn private_server(tag: &str) -> Option<PgServer> {
    server()?;
    match start(Path::new(&format!("/tmp/toolbelt-pg-{}-{tag}", std::process::id()))) {
        Ok(server) => Some(server),
        Err(why) => panic!("cannot start a second PostgreSQL cluster: {why}"),
    }
}
