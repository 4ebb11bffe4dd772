//! The Linux enforcement of the sandbox contract, applied in the order a command meets it:
//! the helper (`helper.rs`: session, parent death, namespaces, the filesystem view, limits)
//! then init (`init.rs`: `/proc`, capabilities, Landlock, seccomp, the command as PID 2).
//! The helper is a re-exec of this binary, dispatched in `main` before anything else runs, so
//! it is single-threaded and needs no `pre_exec` hook (no `unsafe`); init is its forked child
//! (a fork of a single-threaded process is sound, and saves a second exec).

pub mod caps;
pub mod helper;
pub mod holder;
pub mod init;
pub mod keeper;
pub mod limits;
pub mod mounts;
pub mod namespaces;
pub mod probe;
pub mod seccomp;
pub mod watch;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

pub use crate::contract::{HELPER_SUBCOMMAND, SETUP_FAILED, SETUP_PREFIX};

/// What the helper tells init.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitArgs {
    /// The Landlock ABI to enforce.
    pub abi: u8,
    /// Everything the command may write, as it is seen now (temp dirs by their system paths).
    pub writable: Vec<PathBuf>,
    /// The command's working directory.
    pub cwd: PathBuf,
}

/// Reports a setup failure on stderr (the command's) and exits with [`SETUP_FAILED`].
pub fn setup_failed(message: &str) -> ExitCode {
    ExitCode::from(report_setup_failure(message))
}

/// Reports a setup failure on stderr (the command's); returns [`SETUP_FAILED`].
pub fn report_setup_failure(message: &str) -> u8 {
    let _ = writeln!(std::io::stderr(), "{SETUP_PREFIX} {message}; the command was not run");
    SETUP_FAILED
}

/// Per-step timing of the helper and init, for the bench's per-layer report: with
/// `TOOLBELT_SANDBOX_TIMINGS` set, each step prints `timing PROCESS STEP MICROSECONDS` (since
/// the previous step) on stderr.
pub struct Timings {
    process: &'static str,
    last: Option<std::time::Instant>,
}

impl Timings {
    /// Starts timing `process` (`helper` or `init`), if asked to.
    pub fn start(process: &'static str) -> Self {
        let on = std::env::var_os("TOOLBELT_SANDBOX_TIMINGS").is_some();
        Self { process, last: on.then(std::time::Instant::now) }
    }

    /// Reports the time since the previous step as `step`.
    pub fn step(&mut self, step: &str) {
        if let Some(last) = self.last {
            let _ = writeln!(std::io::stderr(), "timing {} {step} {}", self.process, last.elapsed().as_micros());
            self.last = Some(std::time::Instant::now());
        }
    }
}
