//! `__sandbox-probe`: run as a sandboxed command by `doctor`, it reports from the inside which
//! layers hold (what the kernel actually gave the command, not what the server asked for).
#![allow(clippy::disallowed_methods)] // runs inside the command's sandbox, before the command

use std::io::Write;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};

/// The hidden subcommand.
pub const PROBE_SUBCOMMAND: &str = "__sandbox-probe";

/// What a command sees of its sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layers {
    /// Its own pid (2 under the sandbox's init).
    pub pid: u32,
    /// Whether `/proc` is its namespace's own (PID 1 there is the sandbox's init).
    pub own_proc: bool,
    /// Network interfaces it sees (`lo` only when the network is denied).
    pub interfaces: Vec<String>,
    /// Effective capabilities, as the kernel shows them (`CapEff`, hex).
    pub capabilities: String,
    /// `no_new_privs`.
    pub no_new_privs: bool,
    /// A seccomp filter is installed.
    pub seccomp: bool,
    /// Writing outside the writable dirs fails.
    pub writes_confined: bool,
    /// Its user id.
    pub uid: u32,
    /// Limits: processes, address space and file size (`None`: unlimited), core size.
    pub limits: [Option<u64>; 4],
    /// What the proxy on the command's loopback did with each destination asked for.
    #[serde(default)]
    pub proxy: Vec<ProxyProbe>,
}

/// One destination tried through the command's proxy, from inside its sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyProbe {
    /// `host:port`, as asked.
    pub destination: String,
    /// The proxy opened a tunnel to it.
    pub reached: bool,
    /// How long the answer took, or what went wrong (the proxy's reason when it refused).
    pub detail: String,
}

/// The probe's argument that names a destination to try through the proxy.
pub const PROXY_ARG: &str = "--proxy";

/// Asks the proxy on this sandbox's loopback for a tunnel to `destination` (`host:port`).
fn through_proxy(destination: &str) -> ProxyProbe {
    use std::io::Read;
    use std::time::{Duration, Instant};
    let started = Instant::now();
    let outcome = (|| -> std::io::Result<(bool, String)> {
        let address = std::net::SocketAddr::from(([127, 0, 0, 1], crate::proxy::PORT));
        let mut stream = std::net::TcpStream::connect_timeout(&address, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(15)))?;
        write!(stream, "CONNECT {destination} HTTP/1.1\r\nHost: {destination}\r\n\r\n")?;
        let mut answer = vec![0u8; 4096];
        let mut read = 0;
        while read < answer.len() {
            let n = stream.read(&mut answer[read..])?;
            if n == 0 {
                break;
            }
            read += n;
            // A tunnel stays open after its head; a refusal closes after its reason.
            let text = String::from_utf8_lossy(&answer[..read]);
            if text.starts_with("HTTP/1.1 200") && text.contains("\r\n\r\n") {
                break;
            }
        }
        let text = String::from_utf8_lossy(&answer[..read]).into_owned();
        if text.starts_with("HTTP/1.1 200") || text.starts_with("HTTP/1.0 200") {
            return Ok((true, String::new()));
        }
        let reason = text.split("\r\n\r\n").nth(1).unwrap_or_default().lines().next().unwrap_or_default().trim();
        let status = text.lines().next().unwrap_or("no answer").trim();
        Ok((false, if reason.is_empty() { status.to_string() } else { reason.to_string() }))
    })();
    match outcome {
        Ok((true, _)) => ProxyProbe {
            destination: destination.into(),
            reached: true,
            detail: format!("{} ms", started.elapsed().as_millis()),
        },
        Ok((false, why)) => ProxyProbe { destination: destination.into(), reached: false, detail: why },
        Err(err) => ProxyProbe { destination: destination.into(), reached: false, detail: err.to_string() },
    }
}

/// Gathers the layers (and tries the destinations named after [`PROXY_ARG`] through the
/// proxy) and prints them as JSON on stdout.
pub fn main(args: Vec<std::ffi::OsString>) -> ExitCode {
    let mut destinations = Vec::new();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        if arg == PROXY_ARG
            && let Some(destination) = args.next()
        {
            destinations.push(destination.to_string_lossy().into_owned());
        }
    }
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status.lines().find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string())).unwrap_or_default()
    };
    let init = std::fs::read("/proc/1/cmdline").unwrap_or_default();
    // Init is the helper's forked child: PID 1 of a `/proc` of the command's own shows it.
    let own_proc = init.split(|b| *b == 0).nth(1).is_some_and(|arg| arg == super::HELPER_SUBCOMMAND.as_bytes());
    let interfaces = std::fs::read_to_string("/proc/net/dev")
        .unwrap_or_default()
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next().map(|n| n.trim().to_string()))
        .collect();
    let probe = std::path::Path::new("/.toolbelt-mcp-probe");
    let writes_confined = std::fs::create_dir(probe).is_err();
    if !writes_confined {
        let _ = std::fs::remove_dir(probe);
    }
    let limit = |r| rustix::process::getrlimit(r).current;
    use rustix::process::Resource;
    let layers = Layers {
        pid: std::process::id(),
        own_proc,
        interfaces,
        capabilities: field("CapEff:"),
        no_new_privs: field("NoNewPrivs:") == "1",
        seccomp: field("Seccomp:") == "2",
        writes_confined,
        uid: rustix::process::getuid().as_raw(),
        limits: [limit(Resource::Nproc), limit(Resource::As), limit(Resource::Fsize), limit(Resource::Core)],
        proxy: destinations.iter().map(|d| through_proxy(d)).collect(),
    };
    let json = serde_json::to_string(&layers).unwrap_or_default();
    match writeln!(std::io::stdout(), "{json}") {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}
