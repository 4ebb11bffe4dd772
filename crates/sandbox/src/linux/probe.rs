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
}

/// Gathers the layers and prints them as JSON on stdout.
pub fn main() -> ExitCode {
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
    };
    let json = serde_json::to_string(&layers).unwrap_or_default();
    match writeln!(std::io::stdout(), "{json}") {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}
