//! `__sandbox-hold`: one process per session that holds the namespaces its commands' temp
//! dirs live in. It enters a user namespace of its own (root: only a mount namespace, made a
//! slave of the machine's so nothing it mounts goes back), mounts a tmpfs of at most the
//! configured size on the session's temp dir (`tmp`, `var-tmp`, `shm` inside: the commands'
//! `/tmp`, `/var/tmp`, `/dev/shm`), says `ready`, and waits until the server closes its stdin
//! (or dies). Every command of the session enters its namespaces first (`namespaces::join`),
//! so their temp files live in that tmpfs from one command to the next, in memory the size
//! bounds, never on the machine's disk, and are gone when the session is.
#![allow(clippy::disallowed_methods)] // runs in its own namespaces, on paths the server made
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use nix::mount::{MsFlags, mount};
use serde::{Deserialize, Serialize};

/// The hidden subcommand.
pub const HOLD_SUBCOMMAND: &str = "__sandbox-hold";

/// What the holder is told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    /// The session's temp dir: the tmpfs goes on it.
    pub temp: PathBuf,
    /// The tmpfs's size in bytes.
    pub bytes: u64,
    /// The server's pid (a holder whose server is gone does not start).
    pub parent: u32,
}

/// The holder's entry point: `__sandbox-hold HOLD_JSON`.
pub fn main(mut args: impl Iterator<Item = std::ffi::OsString>) -> ExitCode {
    let said = |message: &str| {
        let _ = writeln!(std::io::stdout(), "error {message}");
        ExitCode::FAILURE
    };
    let Some(hold) = args.next().and_then(|json| serde_json::from_str::<Hold>(&json.to_string_lossy()).ok()) else {
        return said("no valid hold");
    };
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    if rustix::process::getppid().map(|p| p.as_raw_nonzero().get() as u32) != Some(hold.parent) {
        return said("the server exited first");
    }
    if let Err(message) = hold_namespaces(&hold) {
        return said(&message);
    }
    let _ = writeln!(std::io::stdout(), "ready");
    let _ = std::io::stdout().flush();
    // Until the server closes stdin (the session ended) or dies (the parent-death signal).
    let _ = std::io::stdin().read_to_end(&mut Vec::new());
    ExitCode::SUCCESS
}

fn hold_namespaces(hold: &Hold) -> Result<(), String> {
    super::namespaces::enter_holder()?;
    let data = format!("size={},mode=0700", hold.bytes.max(1 << 20));
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV;
    mount(Some("tmpfs"), &hold.temp, Some("tmpfs"), flags, Some(data.as_str()))
        .map_err(|e| format!("cannot mount the session's temp tmpfs on `{}`: {e}", hold.temp.display()))?;
    for (_, own) in crate::contract::TEMP_DIRS {
        std::fs::create_dir(hold.temp.join(own))
            .map_err(|e| format!("cannot create `{own}` in the temp tmpfs: {e}"))?;
    }
    Ok(())
}

/// A session's holder, as the server keeps it.
#[derive(Debug)]
pub struct Holder {
    child: std::process::Child,
}

impl Holder {
    /// Starts the holder of the session whose temp dir is `temp` (which must exist, empty),
    /// with a tmpfs of `bytes`, and waits for it to be ready.
    pub fn start(temp: &Path, bytes: u64) -> Result<Self, String> {
        let hold = Hold { temp: temp.to_path_buf(), bytes, parent: std::process::id() };
        let json = serde_json::to_string(&hold).map_err(|e| e.to_string())?;
        let mut child = std::process::Command::new("/proc/self/exe")
            .arg(HOLD_SUBCOMMAND)
            .arg(json)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start the session's namespace holder: {e}"))?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("the holder has no stdout")?;
        let _ = std::io::BufReader::new(stdout).read_line(&mut line);
        if line.trim() != "ready" {
            let _ = child.kill();
            let _ = child.wait();
            let why = line.trim().strip_prefix("error ").unwrap_or("it exited").to_string();
            return Err(format!("cannot give the session its temp dirs ({why})"));
        }
        Ok(Self { child })
    }

    /// Its pid: commands join its namespaces.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        // Closing stdin ends it; the kill is for one that does not read.
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
