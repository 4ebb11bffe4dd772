//! Commands and terminal sessions of one connection: the registry of background commands and
//! PTY sessions (ids, limits, age-out), the sandbox plan every command is started under, and
//! the shutdown that leaves no process behind.

#[cfg(unix)]
pub mod answer;
pub mod env;
pub mod foreground;
#[cfg(windows)]
pub mod jobs;
#[cfg(unix)]
pub mod keys;
pub mod log;
pub mod process;
pub mod session;
pub mod text;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::error::ToolError;
use crate::sandbox::exec::{Confinement, Plan};
use crate::sandbox::fs;
use crate::sandbox::guard::Finding;
use crate::terminal::process::{Signal, group_alive, signal_group};
use crate::terminal::session::TermSession;

/// Running commands' protected paths are checked at most this often.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// Ended sessions are forgotten after this long.
const ENDED_MAX_AGE: Duration = Duration::from_secs(3600);
/// At most this many ended sessions are kept listable…
const ENDED_MAX_COUNT: usize = 64;
/// …holding at most this much output in memory together (spilled output is on disk).
const ENDED_MAX_BYTES: usize = 64 * 1024 * 1024;

/// One connection's commands and sessions.
#[derive(Debug)]
pub struct Terminals {
    registry: Mutex<Registry>,
    /// Where foreground output spills: `<state>/output/<pid>-<n>`.
    pub spill_dir: PathBuf,
    /// The session's temp dir: its `tmp`, `var-tmp` and `shm` are its commands' `/tmp`,
    /// `/var/tmp` and `/dev/shm`.
    pub private_tmp: PathBuf,
    max_sessions: usize,
    /// Most bytes of output a session keeps in memory.
    pub ring_bytes: usize,
}

#[derive(Debug, Default)]
struct Registry {
    next: u64,
    sessions: BTreeMap<u64, Arc<TermSession>>,
    /// The confinements of process groups that may still run (sessions, and what foreground
    /// commands left behind), checked for protected paths they write.
    guarded: Vec<(u32, Confinement)>,
    /// When the running groups were last checked.
    last_sweep: Option<Instant>,
    /// Process groups of finished foreground commands that left processes running.
    lingering: Vec<u32>,
}

impl Terminals {
    /// The registry for one connection.
    pub fn new(config: &Config) -> Self {
        static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let pid = std::process::id();
        Self {
            registry: Mutex::new(Registry::default()),
            spill_dir: config.state_dir.join("output").join(format!("{pid}-{n}")),
            private_tmp: std::env::temp_dir().join(format!("toolbelt-mcp-{pid}-{n}")),
            max_sessions: config.max_sessions,
            ring_bytes: config.session_output_bytes,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The confinement for a command started now, creating the session's temp dir.
    pub fn confinement(&self, config: &Config, roots: &[PathBuf]) -> Result<Option<Confinement>, ToolError> {
        // The state dir exists before any command runs, so it is protected from the first;
        // the spill dir too, as the one part of it the session's commands may read.
        for dir in [&self.private_tmp, &config.state_dir, &self.spill_dir] {
            fs::create_private_dir(dir).map_err(|err| {
                ToolError::Internal(format!("cannot create the directory `{}`: {err}", dir.display()))
            })?;
        }
        let mut own_files = vec![config.state_dir.clone(), config.config_dir.clone()];
        own_files.extend(config.config_file.clone());
        own_files.extend(config.audit.files());
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let own: [&Path; 2] = [&config.state_dir, &config.config_dir];
        let hidden = crate::config::sandbox::hidden_paths(&config.sandbox_settings, home.as_deref(), &own, roots);
        let visible = [self.spill_dir.clone()];
        let plan = Plan {
            mode: config.sandbox,
            roots,
            writable_roots: &config.writable_roots,
            temp: &self.private_tmp,
            own_files: &own_files,
            hidden: &hidden,
            visible: &visible,
            network: config.network,
            limits: config.sandbox_settings.limits,
        };
        let confinement = Confinement::plan(&plan).map_err(|err| ToolError::Sandbox(err.to_string()))?;
        // A config dir a command could create (it lies in a writable dir) is created empty
        // first, so it can be bound read-only like an existing one.
        let writable = confinement.as_ref().map_or(&[][..], |c| &c.contract().writable[..]);
        if !fs::exists(&config.config_dir)
            && writable.iter().any(|dir| config.config_dir.starts_with(dir))
            && fs::create_private_dir(&config.config_dir).is_ok()
        {
            return Confinement::plan(&plan).map_err(|err| ToolError::Sandbox(err.to_string()));
        }
        Ok(confinement)
    }

    /// A new session id number (foreground commands reserve one for their spill files).
    pub fn reserve(&self) -> u64 {
        let mut registry = self.lock();
        registry.next += 1;
        registry.next
    }

    /// Refuses a new session when the limit of running ones is reached.
    pub fn check_capacity(&self) -> Result<(), ToolError> {
        let mut registry = self.lock();
        registry.prune();
        let running = registry.sessions.values().filter(|s| s.is_running()).count();
        if running >= self.max_sessions {
            return Err(ToolError::TooManySessions { limit: self.max_sessions });
        }
        Ok(())
    }

    /// Registers a started (or finished, for paging) session under its number.
    pub fn insert(&self, number: u64, session: Arc<TermSession>) {
        self.lock().sessions.insert(number, session);
    }

    /// Keeps checking what the process group `pgid` writes to protected paths while any of
    /// it runs (a group already gone gets one check, at the next sweep).
    pub fn guard(&self, pgid: u32, confinement: Option<&Confinement>) {
        if let Some(confinement) = confinement {
            self.lock().guarded.push((pgid, confinement.clone()));
        }
    }

    /// Protected paths the guarded groups wrote since they started (or since the last sweep),
    /// renamed aside; groups that ended get their last check at once and are dropped. Running
    /// ones are checked at most every `SWEEP_EVERY` (a PTY conversation calls many times a
    /// second).
    pub fn sweep_guards(&self) -> Vec<Finding> {
        let guarded = {
            let mut registry = self.lock();
            if registry.guarded.is_empty() {
                return Vec::new();
            }
            let (keep, ended): (Vec<_>, Vec<_>) =
                std::mem::take(&mut registry.guarded).into_iter().partition(|(pgid, _)| group_alive(*pgid));
            registry.guarded = keep.clone();
            let due = registry.last_sweep.is_none_or(|at| at.elapsed() >= SWEEP_EVERY);
            if due {
                registry.last_sweep = Some(Instant::now());
            }
            ended.into_iter().chain(keep.into_iter().filter(|_| due)).collect::<Vec<_>>()
        };
        guarded.iter().flat_map(|(_, confinement)| confinement.check()).collect()
    }

    /// After the server itself wrote protected paths (approved): what is there now is not the
    /// sessions' doing.
    pub fn accept_writes(&self, written: &[PathBuf]) {
        for (_, confinement) in &mut self.lock().guarded {
            for path in written {
                confinement.accept(path);
            }
        }
    }

    /// Remembers a foreground command's group that still has processes after it ended.
    pub fn linger(&self, pgid: u32) {
        let mut registry = self.lock();
        registry.lingering.retain(|g| group_alive(*g));
        registry.lingering.push(pgid);
    }

    /// The session with this id, or an error listing the ids there are.
    pub fn get(&self, id: &str) -> Result<Arc<TermSession>, ToolError> {
        let mut registry = self.lock();
        registry.prune();
        let found = registry.sessions.values().find(|s| s.id == id).cloned();
        found.ok_or_else(|| ToolError::NoSession {
            id: id.to_string(),
            known: registry.sessions.values().map(|s| format!("`{}`", s.id)).collect::<Vec<_>>().join(", "),
        })
    }

    /// Every session, oldest first.
    pub fn list(&self) -> Vec<Arc<TermSession>> {
        let mut registry = self.lock();
        registry.prune();
        registry.sessions.values().cloned().collect()
    }

    /// Forgets a session (its output and spill files). It must have ended.
    pub fn remove(&self, id: &str) {
        let mut registry = self.lock();
        registry.sessions.retain(|_, s| {
            let keep = s.id != id;
            if !keep {
                s.discard();
            }
            keep
        });
    }

    /// Ends everything: every process (see [`Terminals::end_processes`]), then spilled output
    /// and the private temp dir.
    pub async fn shutdown(&self) {
        self.end_processes().await;
        self.remove_scratch();
    }

    /// Ends every process started here: `SIGTERM` to every group, `SIGKILL` to what is left
    /// after a second. Returns how many groups there were.
    pub async fn end_processes(&self) -> usize {
        let groups = self.live_groups();
        for pgid in &groups {
            signal_group(*pgid, Signal::TERM);
        }
        let deadline = Instant::now() + Duration::from_secs(1);
        while Instant::now() < deadline && groups.iter().any(|g| group_alive(*g)) {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for pgid in &groups {
            signal_group(*pgid, Signal::KILL);
        }
        groups.len()
    }

    /// The process groups that may still have processes: running sessions' and the ones
    /// finished foreground commands left behind.
    fn live_groups(&self) -> Vec<u32> {
        let registry = self.lock();
        let running = registry.sessions.values().filter(|s| s.is_running()).map(|s| s.pgid);
        running.chain(registry.lingering.iter().copied()).collect()
    }

    /// Removes spilled output and the private temp dir.
    pub fn remove_scratch(&self) {
        fs::remove_state_dir(&self.spill_dir);
        fs::remove_state_dir(&self.private_tmp);
    }
}

impl Drop for Terminals {
    fn drop(&mut self) {
        // The last resort when the connection ends without `shutdown` (a panic, a dropped
        // runtime): nothing it started may outlive it.
        for pgid in self.live_groups() {
            signal_group(pgid, Signal::KILL);
        }
    }
}

impl Registry {
    /// Forgets ended sessions past the age limit, and the oldest past the count and memory
    /// limits.
    fn prune(&mut self) {
        let now = Instant::now();
        let mut ended: Vec<(u64, Instant, usize)> =
            self.sessions.iter().filter_map(|(n, s)| s.ended_at().map(|at| (*n, at, s.memory_bytes()))).collect();
        ended.sort_by_key(|(_, at, _)| *at);
        let (mut count, mut bytes) = (ended.len(), ended.iter().map(|(_, _, b)| b).sum::<usize>());
        for (number, at, memory) in ended {
            let over = count > ENDED_MAX_COUNT || bytes > ENDED_MAX_BYTES || now.duration_since(at) > ENDED_MAX_AGE;
            if !over {
                break;
            }
            if let Some(session) = self.sessions.remove(&number) {
                session.discard();
            }
            count -= 1;
            bytes -= memory;
        }
    }
}

/// Removes spilled output and private temp dirs left by servers that are no longer running.
pub fn sweep_dead_servers_output_and_temp(state_dir: &Path) -> usize {
    fs::remove_dirs_of_dead_servers(&state_dir.join("output"), "")
        + fs::remove_dirs_of_dead_servers(&std::env::temp_dir(), "toolbelt-mcp-")
}
