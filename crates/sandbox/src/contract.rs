//! The sandbox contract: everything that decides what a confined command may do, whatever
//! enforces it (Linux: namespaces, mounts, Landlock, seccomp and rlimits in `linux/`; macOS:
//! the Seatbelt profile `seatbelt.rs` generates from it). The server builds it from the
//! policy's tables (`exec::Confinement::plan`) and hands it whole to the platform's backend,
//! so every backend enforces the same lists.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::mode::Network;

/// The hidden subcommand of the Linux sandbox's helper.
#[cfg(target_os = "linux")]
pub const HELPER_SUBCOMMAND: &str = "__sandbox-exec";
/// The exit status of a command the sandbox could not set up (like a shell's "cannot run").
pub const SETUP_FAILED: u8 = 126;
/// How a setup failure is reported on stderr, so the server can recognise it.
pub const SETUP_PREFIX: &str = "toolbelt-mcp sandbox:";

/// A path to bind over itself in the command's view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Bind {
    /// Read-only: writes fail with `EROFS`; renames and removal with `EBUSY`.
    ReadOnly(PathBuf),
    /// Writable, but a mount point: it cannot be renamed or removed (`EBUSY`).
    Pinned(PathBuf),
}

/// One staged root: the real directory, and the command's upper and work directories (the
/// overlay the helper mounts over the root, `stage/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageLayer {
    /// The root (canonical): the overlay's lower layer, and where it is mounted.
    pub root: PathBuf,
    /// Where the command's writes land.
    pub upper: PathBuf,
    /// Overlayfs's own work directory (same file system as `upper`).
    pub work: PathBuf,
}

/// How a command's helper hands its proxy listener to the server (`proxy/register.rs`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyLink {
    /// The server's registration socket.
    pub socket: PathBuf,
    /// The command's token.
    pub token: String,
    /// The port of the command's loopback to listen on.
    pub port: u16,
}

/// What differs between two commands of one session: where a command's writes are staged and
/// how it reaches the network.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerCommand {
    /// The session's namespace holder, if it has one.
    pub join: Option<u32>,
    /// Its staged roots.
    pub stage: Vec<StageLayer>,
    /// Its proxy.
    pub proxy: Option<ProxyLink>,
}

/// Resource limits of every process of a command (`None`: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Limits {
    /// Processes and threads of the user inside the command's user namespace (`RLIMIT_NPROC`).
    pub processes: Option<u64>,
    /// Address space of one process, in bytes (`RLIMIT_AS`).
    pub memory_bytes: Option<u64>,
    /// Largest file a process may write, in bytes (`RLIMIT_FSIZE`).
    pub file_bytes: Option<u64>,
}

/// What one sandboxed command may do.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contract {
    /// The Landlock ABI the server probed (the helper refuses if the kernel offers less); 0
    /// where the backend is not Landlock.
    pub abi: u8,
    /// Directories the command may write beneath (roots, writable roots), besides its
    /// temp dirs.
    pub writable: Vec<PathBuf>,
    /// Protected paths inside writable ones, bound in this order.
    pub binds: Vec<Bind>,
    /// Paths whose contents the command cannot see (deny-read): an empty, unreadable view.
    pub hidden: Vec<PathBuf>,
    /// Every secret path, existing or not: the helper watches them while the command runs and
    /// hides each that appears or is replaced (Linux).
    #[serde(default)]
    pub watch: Vec<PathBuf>,
    /// Paths that stay visible where something above them is hidden or replaced (the roots,
    /// the session's own output dir).
    pub visible: Vec<PathBuf>,
    /// The session's temp dir: its `tmp`, `var-tmp` and `shm` become the command's `/tmp`,
    /// `/var/tmp` and `/dev/shm`.
    pub temp: PathBuf,
    /// Whether the command may reach other hosts (`Deny`: loopback only).
    pub network: Network,
    /// Resource limits.
    pub limits: Limits,
    /// The server's pid: a helper whose parent is already gone does not run the command.
    pub parent: u32,
    /// The command's working directory.
    pub cwd: PathBuf,
    /// The roots whose writes are staged (an overlay each, mounted first); empty when the
    /// command writes the roots directly.
    #[serde(default)]
    pub stage: Vec<StageLayer>,
    /// Where the command's proxy listener goes (`allow` and `allowlist` networks).
    #[serde(default)]
    pub proxy: Option<ProxyLink>,
    /// The session's namespace holder, whose namespaces (and temp tmpfs) the command joins.
    #[serde(default)]
    pub join: Option<u32>,
}

/// The system temp dirs a command gets its own of, with the name of its stand-in under the
/// session's temp dir.
pub const TEMP_DIRS: [(&str, &str); 3] = [("/tmp", "tmp"), ("/var/tmp", "var-tmp"), ("/dev/shm", "shm")];

impl Contract {
    /// The session's stand-ins for the system temp dirs, with the dir each replaces (Linux:
    /// bound over them).
    #[cfg(target_os = "linux")]
    pub fn temp_dirs(&self) -> impl Iterator<Item = (&'static std::path::Path, PathBuf)> + '_ {
        TEMP_DIRS.iter().map(|(system, own)| (std::path::Path::new(*system), self.temp.join(own)))
    }
}
