//! Windows has no process groups to signal: each command is put in a Job Object of its own,
//! created kill-on-close, so ending the job (dropping its handle) ends every process the
//! command started, and nothing outlives the server (its handles close when it dies).
//! Processes a command starts before it is assigned (the first instants) are not in it.

use std::collections::HashMap;
use std::io;
use std::sync::{Mutex, MutexGuard, OnceLock};

use win32job::{ExtendedLimitInfo, Job};

/// A signal the terminal names. Windows delivers none of them: `TERM`, `KILL`, `INT`, `HUP`
/// and `QUIT` end the command's job; the others cannot be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Signal(i32);

impl Signal {
    /// Hang-up.
    pub const HUP: Self = Self(1);
    /// Interrupt.
    pub const INT: Self = Self(2);
    /// Quit.
    pub const QUIT: Self = Self(3);
    /// Kill.
    pub const KILL: Self = Self(9);
    /// User signal 1.
    pub const USR1: Self = Self(10);
    /// User signal 2.
    pub const USR2: Self = Self(12);
    /// Terminate.
    pub const TERM: Self = Self(15);
    /// Continue.
    pub const CONT: Self = Self(18);
    /// Stop.
    pub const STOP: Self = Self(19);

    /// Whether sending it ends the process (all that Windows can do).
    fn ends(self) -> bool {
        matches!(self, Self::HUP | Self::INT | Self::QUIT | Self::KILL | Self::TERM)
    }
}

/// The jobs of running commands, by the PID of the process started.
fn jobs() -> MutexGuard<'static, HashMap<u32, Job>> {
    static JOBS: OnceLock<Mutex<HashMap<u32, Job>>> = OnceLock::new();
    JOBS.get_or_init(Mutex::default).lock().unwrap_or_else(|p| p.into_inner())
}

/// Puts `child` in a new kill-on-close job; returns its PID, the key of the job.
pub fn adopt(child: &tokio::process::Child) -> io::Result<u32> {
    let gone = || io::Error::other("the command exited before it could be tracked");
    let pid = child.id().ok_or_else(gone)?;
    let handle = child.raw_handle().ok_or_else(gone)?;
    let mut limits = ExtendedLimitInfo::new();
    limits.limit_kill_on_job_close();
    let job = Job::create_with_limit_info(&limits).map_err(io::Error::other)?;
    job.assign_process(handle as isize).map_err(io::Error::other)?;
    jobs().insert(pid, job);
    Ok(pid)
}

/// "Sends" `signal` to the command `pid`: a signal that ends a process closes its job,
/// which ends all its processes. False if it is gone or the signal cannot be sent.
pub fn signal(pid: u32, signal: Signal) -> bool {
    signal.ends() && jobs().remove(&pid).is_some()
}

/// Whether any process of the command `pid`'s job is still running.
pub fn alive(pid: u32) -> bool {
    let mut jobs = jobs();
    let running = jobs.get(&pid).is_some_and(|job| job.query_process_id_list().is_ok_and(|pids| !pids.is_empty()));
    if !running {
        jobs.remove(&pid);
    }
    running
}
