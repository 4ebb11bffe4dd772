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
#[cfg(unix)]
mod shadowed;
pub mod text;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::process::{Signal, group_alive, signal_group};
use crate::session::TermSession;
use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::exec::{Confinement, Plan};
use toolbelt_mcp_sandbox::fs;
use toolbelt_mcp_sandbox::guard::Finding;

/// Running commands' writes are folded (or their protected paths checked) at most this often.
const SWEEP_EVERY: Duration = Duration::from_millis(250);
/// How long a stopping server waits for the last folds of its commands' writes.
const FOLD_AT_EXIT: Duration = Duration::from_secs(10);
/// Ended sessions are forgotten after this long.
const ENDED_MAX_AGE: Duration = Duration::from_secs(3600);
/// At most this many ended sessions are kept listable…
const ENDED_MAX_COUNT: usize = 64;
/// …holding at most this much output in memory together…
const ENDED_MAX_BYTES: usize = 64 * 1024 * 1024;
/// …and at most this much spilled to disk (each stream's spill is capped too).
const ENDED_MAX_DISK: u64 = 1 << 30;

/// One connection's commands and sessions.
#[derive(Debug)]
pub struct Terminals {
    registry: Mutex<Registry>,
    /// Where foreground output spills: `<state>/output/<pid>-<n>`.
    pub spill_dir: PathBuf,
    /// The session's temp dir (`<temp>/toolbelt-mcp-<uid>/<pid>-<n>-<random>`, made at the
    /// first command): its `t/tmp`, `t/var-tmp` and `t/shm` are its commands' `/tmp`,
    /// `/var/tmp` and `/dev/shm` (on Linux in a tmpfs the session's holder keeps).
    private_tmp: std::sync::OnceLock<PathBuf>,
    /// The connection's number in this process.
    number: u64,
    /// The most its temp tmpfs may hold (0: plain directories on disk; Linux).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    temp_bytes: u64,
    /// The holder of its namespaces (and temp tmpfs), started with its first command.
    #[cfg(target_os = "linux")]
    holder: Mutex<Option<toolbelt_mcp_sandbox::linux::holder::Holder>>,
    max_sessions: usize,
    /// Most bytes of output a session keeps in memory.
    pub ring_bytes: usize,
    /// What running and ended commands wrote: their stages (or guards), and what folding them
    /// found, for the next call to report.
    staging: Arc<Staging>,
}

/// The commands whose writes are still to be folded (or checked), and what was found.
#[derive(Debug, Default)]
struct Staging {
    tracked: Mutex<Vec<Tracked>>,
    /// Lines for the next call's result: refused or failed changes of folds done in between.
    notes: Mutex<Vec<String>>,
    /// The server's own files: never written by a fold (Linux).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    own: Vec<PathBuf>,
    /// When the running ones were last folded.
    last_sweep: Mutex<Option<Instant>>,
    /// A live fold is under way: a call that finds one does not wait for it.
    folding: std::sync::atomic::AtomicBool,
    /// Held while ended groups are folded a last time: a call that finds such a fold under
    /// way (a group's watcher started it) waits for it, so its result and the history hold
    /// every group that had ended before it answered.
    finishing: tokio::sync::Mutex<()>,
    /// The most old content one fold's record for undo keeps (the session's undo cap).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    undo_cap: u64,
    /// Whether git-ignored paths are recorded for undo too.
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    undo_ignored: bool,
    /// What background commands' and sessions' folds applied, for undo: taken by the next call.
    #[cfg(unix)]
    records: Mutex<Vec<toolbelt_mcp_sandbox::undoable::Recorded>>,
    /// The copy of the roots that commands without a stage are compared with, for undo.
    #[cfg(unix)]
    shadowed: shadowed::Shadowed,
}

/// A process group whose writes are watched.
#[derive(Debug)]
struct Tracked {
    pgid: u32,
    confinement: Confinement,
    #[cfg(target_os = "linux")]
    stage: Option<Arc<toolbelt_mcp_sandbox::stage::Stage>>,
    /// A command without a stage whose writes the shadow records, as its records name it.
    #[cfg(unix)]
    recorded_as: Option<toolbelt_mcp_sandbox::undoable::Command>,
    /// Kept while the group runs: its proxy.
    #[cfg(unix)]
    link: Option<Arc<toolbelt_mcp_sandbox::proxy::Link>>,
}

#[derive(Debug, Default)]
struct Registry {
    next: u64,
    sessions: BTreeMap<u64, Arc<TermSession>>,
    /// Process groups of finished foreground commands that left processes running.
    lingering: Vec<u32>,
}

impl Terminals {
    /// The registry for one connection.
    pub fn new(config: &Config) -> Self {
        let mut own = vec![config.state_dir.clone(), config.config_dir.clone()];
        own.extend(config.config_file.clone());
        own.extend(config.audit.files());
        static CONNECTIONS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = CONNECTIONS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let pid = std::process::id();
        Self {
            registry: Mutex::new(Registry::default()),
            spill_dir: config.state_dir.join("output").join(format!("{pid}-{n}")),
            private_tmp: std::sync::OnceLock::new(),
            number: n,
            temp_bytes: config.max_temp_bytes,
            #[cfg(target_os = "linux")]
            holder: Mutex::new(None),
            max_sessions: config.max_sessions,
            ring_bytes: config.session_output_bytes,
            staging: Arc::new(Staging {
                #[cfg(unix)]
                shadowed: shadowed::Shadowed::new(
                    &config.state_dir,
                    n,
                    own.clone(),
                    config.undo_ignored,
                    (config.max_undo_bytes, config.max_undo_total_bytes),
                ),
                own,
                undo_cap: config.max_undo_bytes,
                undo_ignored: config.undo_ignored,
                ..Staging::default()
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The session's temp dir, made on first use (see the field).
    fn private_tmp(&self) -> Result<&PathBuf, ToolError> {
        if let Some(dir) = self.private_tmp.get() {
            return Ok(dir);
        }
        let made = fs::create_session_temp(self.number)
            .map_err(|err| ToolError::Sandbox(format!("cannot create the session's private temp dir: {err}")))?;
        Ok(self.private_tmp.get_or_init(|| made))
    }

    /// The commands' temp dir of the session: `<private temp>/t`.
    fn command_temp(&self) -> Result<PathBuf, ToolError> {
        Ok(self.private_tmp()?.join("t"))
    }

    /// The pid of the session's namespace holder, started now if it is not running (Linux,
    /// unless the temp tmpfs is off).
    #[cfg(target_os = "linux")]
    pub fn holder(&self) -> Result<Option<u32>, ToolError> {
        if self.temp_bytes == 0 {
            return Ok(None);
        }
        let mut holder = self.holder.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(running) = holder.as_ref() {
            return Ok(Some(running.pid()));
        }
        let temp = self.command_temp()?;
        fs::create_private_dir(&temp)
            .map_err(|err| ToolError::Sandbox(format!("cannot create `{}`: {err}", temp.display())))?;
        let started = toolbelt_mcp_sandbox::linux::holder::Holder::start(&temp, self.temp_bytes).map_err(|err| {
            // Without namespaces at all, keeping temp files on disk would not help: say only why.
            if err.contains("namespace") {
                ToolError::Sandbox(err)
            } else {
                ToolError::Sandbox(format!(
                    "{err}; set `max_temp_bytes = 0` to keep the commands' temp files on disk instead"
                ))
            }
        })?;
        let pid = started.pid();
        *holder = Some(started);
        Ok(Some(pid))
    }

    /// The confinement for a command started now, creating the session's temp dir.
    pub fn confinement(&self, config: &Config, roots: &[PathBuf]) -> Result<Option<Confinement>, ToolError> {
        let private_tmp = self.private_tmp()?.clone();
        let command_temp = self.command_temp()?;
        // The state dir exists before any command runs, so it is protected from the first;
        // the spill dir too, as the one part of it the session's commands may read.
        for dir in [&command_temp, &config.state_dir, &self.spill_dir] {
            fs::create_private_dir(dir).map_err(|err| {
                ToolError::Internal(format!("cannot create the directory `{}`: {err}", dir.display()))
            })?;
        }
        let mut own_files = vec![config.state_dir.clone(), config.config_dir.clone()];
        own_files.extend(config.config_file.clone());
        own_files.extend(config.audit.files());
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let own: [&Path; 2] = [&config.state_dir, &config.config_dir];
        let runtime = toolbelt_mcp_core::config::sandbox::runtime_dir();
        let places = toolbelt_mcp_core::config::sandbox::Places { home: home.as_deref(), runtime: runtime.as_deref() };
        let watched = toolbelt_mcp_core::config::sandbox::secret_paths(&config.sandbox_settings, places, &own, roots);
        let hidden: Vec<PathBuf> = watched.iter().filter(|path| fs::exists(path)).cloned().collect();
        let visible = [self.spill_dir.clone()];
        #[cfg(target_os = "linux")]
        let stage_base = if config.stage_writes {
            let base = toolbelt_mcp_sandbox::stage::base(&config.state_dir, &private_tmp, roots);
            Some(base.ok_or_else(|| {
                ToolError::Sandbox(format!(
                    "cannot stage commands' writes: the state dir `{}` and the temp dir `{}` both lie in a root (or hold one); set `state_dir` outside the roots, or `stage_writes = false`",
                    config.state_dir.display(),
                    private_tmp.display()
                ))
            })?)
        } else {
            None
        };
        #[cfg(not(target_os = "linux"))]
        let stage_base: Option<PathBuf> = {
            let _staged_beside = private_tmp;
            None
        };
        let plan = Plan {
            mode: config.sandbox,
            roots,
            writable_roots: &config.writable_roots,
            temp: &command_temp,
            own_files: &own_files,
            hidden: &hidden,
            watched: &watched,
            visible: &visible,
            network: config.network,
            limits: config.sandbox_settings.limits,
            stage_base: stage_base.as_deref(),
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

    /// A new link to the proxy for one command, under the config's network rules: on Linux
    /// served on the command's own loopback (its listener handed over from its network
    /// namespace), elsewhere on a port of the machine's loopback, behind a password.
    #[cfg(unix)]
    pub fn proxy_link(
        &self,
        config: &Config,
        asker: Option<toolbelt_mcp_sandbox::proxy::Asker>,
    ) -> Result<Arc<toolbelt_mcp_sandbox::proxy::Link>, ToolError> {
        let failed = |err: std::io::Error| {
            ToolError::Sandbox(format!(
                "cannot start the network proxy for commands ({err}); check that the state dir `{}` is writable, or run with `--network deny`",
                config.state_dir.display()
            ))
        };
        let defaults: &[&str] =
            if config.network == toolbelt_mcp_sandbox::mode::Network::Allowlist && config.network_allow_defaults {
                toolbelt_mcp_sandbox::proxy::REGISTRIES
            } else {
                &[]
            };
        let rules = toolbelt_mcp_sandbox::proxy::Rules {
            public: config.network == toolbelt_mcp_sandbox::mode::Network::Allow,
            allowed: config
                .network_allow
                .iter()
                .map(String::as_str)
                .chain(defaults.iter().copied())
                .filter_map(|e| toolbelt_mcp_sandbox::proxy::Allowed::parse(e).ok())
                .collect(),
            own: toolbelt_mcp_sandbox::proxy::own_listeners(),
        };
        #[cfg(target_os = "linux")]
        return toolbelt_mcp_sandbox::proxy::hub(&config.state_dir)
            .and_then(|hub| hub.link(rules, asker))
            .map_err(failed);
        #[cfg(not(target_os = "linux"))]
        toolbelt_mcp_sandbox::proxy::loopback_link(rules, asker).map_err(failed)
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

    /// Keeps watching what the process group `pgid` writes while any of it runs: its stage is
    /// folded at every call (and once more when the group is gone), or, without one, its
    /// protected paths are checked and the roots compared with their shadow.
    pub fn track(&self, pgid: u32, launch: &crate::process::Launch) {
        let Some(confinement) = launch.confinement.clone() else { return };
        let tracked = Tracked {
            pgid,
            confinement,
            #[cfg(target_os = "linux")]
            stage: launch.stage.clone(),
            #[cfg(unix)]
            recorded_as: launch.recorded_as.clone(),
            #[cfg(unix)]
            link: launch.link.clone(),
        };
        self.staging.tracked.lock().unwrap_or_else(|p| p.into_inner()).push(tracked);
        #[cfg(target_os = "linux")]
        let staged = launch.stage.is_some();
        #[cfg(all(unix, not(target_os = "linux")))]
        let staged = false;
        #[cfg(unix)]
        if staged || (launch.recorded_as.is_some() && pgid != 0) {
            // The end of the group is a defined point: folded (or compared with the shadow)
            // then, not at the next call.
            let staging = self.staging.clone();
            tokio::spawn(async move {
                crate::process::wait_group_gone(pgid, Duration::from_millis(50), None).await;
                staging.finish_ended().await;
            });
        }
    }

    /// Folds what tracked commands wrote: the stages of groups that ended are folded a last
    /// time and removed; running ones are folded live (copied from, kept) at most every
    /// `SWEEP_EVERY`; without a stage, protected paths are checked. Returns what the folds
    /// refused or could not apply, with what was found since the last call.
    pub async fn sweep(&self) -> Vec<String> {
        self.staging.finish_ended().await;
        let due = {
            let mut last = self.staging.last_sweep.lock().unwrap_or_else(|p| p.into_inner());
            let due = last.is_none_or(|at| at.elapsed() >= SWEEP_EVERY);
            if due {
                *last = Some(Instant::now());
            }
            due
        };
        let idle = !self.staging.folding.swap(true, std::sync::atomic::Ordering::AcqRel);
        if due && idle {
            self.staging.fold_running().await;
        }
        if idle {
            self.staging.folding.store(false, std::sync::atomic::Ordering::Release);
        }
        std::mem::take(&mut *self.staging.notes.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// What the folds of background commands and sessions applied since the last call, for
    /// undo (each fold one step).
    #[cfg(unix)]
    pub fn take_records(&self) -> Vec<toolbelt_mcp_sandbox::undoable::Recorded> {
        std::mem::take(&mut *self.staging.records.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// After the server itself wrote protected paths (approved): what is there now is not the
    /// sessions' doing.
    pub fn accept_writes(&self, written: &[PathBuf]) {
        for tracked in self.staging.tracked.lock().unwrap_or_else(|p| p.into_inner()).iter_mut() {
            for path in written {
                tracked.confinement.accept(path);
            }
        }
    }

    /// Folds the stage of a command that ended (foreground: at once, on a blocking thread)
    /// and removes it; returns what it refused or could not apply, in words.
    #[cfg(target_os = "linux")]
    pub async fn fold_ended(&self, stage: Arc<toolbelt_mcp_sandbox::stage::Stage>) -> Vec<String> {
        self.staging.fold(stage, toolbelt_mcp_sandbox::stage::Mode::Final, None).await.0
    }

    /// [`Terminals::fold_ended`], and the record of what was applied, for undo (old content
    /// at most `cap` bytes in all), taken before the stage is removed.
    #[cfg(target_os = "linux")]
    pub async fn fold_ended_recorded(
        &self,
        stage: Arc<toolbelt_mcp_sandbox::stage::Stage>,
        cap: u64,
    ) -> (Vec<String>, Option<toolbelt_mcp_sandbox::stage::record::Recorded>) {
        self.staging.fold(stage, toolbelt_mcp_sandbox::stage::Mode::Final, Some(cap)).await
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

    /// Ends everything: every process (see [`Terminals::end_processes`]), the last folds of
    /// what they wrote, then spilled output and the private temp dir.
    pub async fn shutdown(&self) {
        self.end_processes().await;
        // The last folds, bounded: a server asked to stop stops; a stage not folded by then
        // is folded by the next start.
        if tokio::time::timeout(FOLD_AT_EXIT, self.staging.finish_all()).await.is_err() {
            tracing::warn!(
                "the last folds of commands' writes took over {FOLD_AT_EXIT:?}; the next start finishes them"
            );
        }
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

    /// Removes spilled output, the holder (and its tmpfs) and the private temp dir.
    pub fn remove_scratch(&self) {
        fs::remove_state_dir(&self.spill_dir);
        #[cfg(target_os = "linux")]
        drop(self.holder.lock().unwrap_or_else(|p| p.into_inner()).take());
        if let Some(dir) = self.private_tmp.get() {
            fs::remove_state_dir(dir);
        }
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

impl Staging {
    /// Folds `stage` on a blocking thread; a final fold removes it afterwards.
    #[cfg(target_os = "linux")]
    async fn fold(
        &self,
        stage: Arc<toolbelt_mcp_sandbox::stage::Stage>,
        mode: toolbelt_mcp_sandbox::stage::Mode,
        record: Option<u64>,
    ) -> (Vec<String>, Option<toolbelt_mcp_sandbox::stage::record::Recorded>) {
        let own = self.own.clone();
        let ignored_too = self.undo_ignored;
        let folded = tokio::task::spawn_blocking(move || {
            // The judge's rules: the server's own files, the home directory, `PATH`, the
            // user's git configs (read again for each fold that has a change: the user may
            // change them).
            let rules: toolbelt_mcp_sandbox::stage::LazyRules =
                std::cell::LazyCell::new(Box::new(move || toolbelt_mcp_sandbox::stage::Rules::new(own)));
            let folded = stage.fold(&rules, mode);
            let recorded = record.map(|cap| stage.record(&folded, cap, ignored_too));
            if mode == toolbelt_mcp_sandbox::stage::Mode::Final {
                // The last holder removes it (a background session's watcher and a sweep may
                // both have held it).
                if let Ok(stage) = Arc::try_unwrap(stage) {
                    stage.discard();
                }
            }
            (folded, recorded)
        })
        .await;
        match folded {
            Ok((folded, recorded)) => (describe_fold(&folded), recorded),
            Err(err) => (vec![format!("the fold of a command's writes failed: {err}")], None),
        }
    }

    /// Takes the tracked groups that ended out of the list and folds (or checks) them a last
    /// time.
    async fn finish_ended(&self) {
        let _finishing = self.finishing.lock().await;
        let ended: Vec<Tracked> = {
            let mut tracked = self.tracked.lock().unwrap_or_else(|p| p.into_inner());
            let (ended, running) = std::mem::take(&mut *tracked).into_iter().partition(|t| !group_alive(t.pgid));
            *tracked = running;
            ended
        };
        self.finish(ended).await;
    }

    /// Folds (or checks) every tracked group a last time (the server is shutting down).
    async fn finish_all(&self) {
        let _finishing = self.finishing.lock().await;
        let all = std::mem::take(&mut *self.tracked.lock().unwrap_or_else(|p| p.into_inner()));
        self.finish(all).await;
    }

    async fn finish(&self, ended: Vec<Tracked>) {
        let mut notes = Vec::new();
        for tracked in ended {
            #[cfg(unix)]
            if let Some(link) = &tracked.link {
                notes.extend(describe_refused(&link.refused()));
            }
            #[cfg(target_os = "linux")]
            if let Some(stage) = tracked.stage {
                let (lines, recorded) =
                    self.fold(stage, toolbelt_mcp_sandbox::stage::Mode::Final, Some(self.undo_cap)).await;
                notes.extend(lines);
                self.keep_record(recorded);
                continue;
            }
            notes.extend(tracked.confinement.check().iter().map(Finding::describe));
            #[cfg(unix)]
            if let Some(command) = tracked.recorded_as {
                let recorded = self.shadowed.changes(command, self.undo_cap).await;
                self.keep_record(recorded);
            }
        }
        self.notes.lock().unwrap_or_else(|p| p.into_inner()).extend(notes);
    }

    /// Keeps a fold's record for the next call to put in the history (one that applied
    /// nothing is dropped).
    #[cfg(unix)]
    fn keep_record(&self, recorded: Option<toolbelt_mcp_sandbox::undoable::Recorded>) {
        let Some(recorded) = recorded else { return };
        if recorded.changes.is_empty() && recorded.left_out.is_empty() && !recorded.too_large {
            return;
        }
        self.records.lock().unwrap_or_else(|p| p.into_inner()).push(recorded);
    }

    /// Folds the running groups' stages live (or checks their protected paths).
    async fn fold_running(&self) {
        #[cfg(target_os = "linux")]
        let stages: Vec<Arc<toolbelt_mcp_sandbox::stage::Stage>> = {
            let tracked = self.tracked.lock().unwrap_or_else(|p| p.into_inner());
            tracked.iter().filter_map(|t| t.stage.clone()).collect()
        };
        #[cfg(target_os = "linux")]
        for stage in stages {
            let (notes, recorded) =
                self.fold(stage, toolbelt_mcp_sandbox::stage::Mode::Live, Some(self.undo_cap)).await;
            self.notes.lock().unwrap_or_else(|p| p.into_inner()).extend(notes);
            self.keep_record(recorded);
        }
        // Without a stage: what the shadow finds changed, under the first such command that runs.
        #[cfg(unix)]
        {
            let running = {
                let tracked = self.tracked.lock().unwrap_or_else(|p| p.into_inner());
                tracked.iter().filter_map(|t| t.recorded_as.clone()).next()
            };
            if let Some(command) = running {
                let recorded = self.shadowed.changes(command, self.undo_cap).await;
                self.keep_record(recorded);
            }
        }
        let findings: Vec<String> = {
            let tracked = self.tracked.lock().unwrap_or_else(|p| p.into_inner());
            tracked
                .iter()
                .filter(|t| !t.confinement.stages())
                .flat_map(|t| t.confinement.check())
                .map(|f| f.describe())
                .collect()
        };
        self.notes.lock().unwrap_or_else(|p| p.into_inner()).extend(findings);
    }
}

/// The destinations a command's proxy refused, as one line (nothing when none was).
#[cfg(unix)]
pub fn describe_refused(refused: &[String]) -> Vec<String> {
    if refused.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "the network proxy refused: {}. Commands reach other hosts only through it (`HTTPS_PROXY` is set); allow a host with `network_allow = [\"HOST:PORT\"]` in the server's config",
        refused.join("; ")
    )]
}

/// What a fold refused or could not apply, a line each (nothing when all went through).
#[cfg(target_os = "linux")]
pub fn describe_fold(folded: &toolbelt_mcp_sandbox::stage::Folded) -> Vec<String> {
    /// Refusals shown with what was written (the rest by path and reason, then by count).
    const WITH_DIFF: usize = 5;
    const LISTED: usize = 40;
    let mut lines = Vec::new();
    let refused = &folded.refused;
    if !refused.is_empty() {
        lines.push(format!(
            "{} change{} the command made {} not applied (each would make code run outside the sandbox later); to make one, run the command again with `escalate: true` and a justification (the user is asked):",
            refused.len(),
            if refused.len() == 1 { "" } else { "s" },
            if refused.len() == 1 { "was" } else { "were" },
        ));
    }
    for (i, refused) in refused.iter().take(LISTED).enumerate() {
        let mut line = format!("- `{}`: {}", refused.shown.display(), refused.why);
        if let (true, Some(diff)) = (i < WITH_DIFF, &refused.diff) {
            line.push_str(&format!("; it wrote:\n{diff}"));
        }
        lines.push(line);
    }
    if refused.len() > LISTED {
        lines.push(format!("- and {} more", refused.len() - LISTED));
    }
    for failed in &folded.failed {
        lines.push(format!("a change the command made could not be applied: {failed}"));
    }
    lines
}

impl Registry {
    /// Forgets ended sessions past the age limit, and the oldest past the count and memory
    /// limits.
    fn prune(&mut self) {
        let now = Instant::now();
        let mut ended: Vec<(u64, Instant, usize, u64)> = self
            .sessions
            .iter()
            .filter_map(|(n, s)| s.ended_at().map(|at| (*n, at, s.memory_bytes(), s.disk_bytes())))
            .collect();
        ended.sort_by_key(|(_, at, _, _)| *at);
        let mut count = ended.len();
        let mut bytes = ended.iter().map(|(_, _, b, _)| b).sum::<usize>();
        let mut disk = ended.iter().map(|(_, _, _, d)| d).sum::<u64>();
        for (number, at, memory, spilled) in ended {
            let over = count > ENDED_MAX_COUNT
                || bytes > ENDED_MAX_BYTES
                || disk > ENDED_MAX_DISK
                || now.duration_since(at) > ENDED_MAX_AGE;
            if !over {
                break;
            }
            if let Some(session) = self.sessions.remove(&number) {
                session.discard();
            }
            count -= 1;
            bytes -= memory;
            disk -= spilled;
        }
    }
}

/// Folds the stages of commands that servers which are gone left (under the state dir and
/// their private temp dirs), judged as any fold is, and records what they applied (old
/// content at most `cap` bytes; git-ignored paths too when `ignored_too`).
#[cfg(target_os = "linux")]
pub fn recover_stages(
    state_dir: &Path,
    own: &[PathBuf],
    cap: u64,
    ignored_too: bool,
) -> toolbelt_mcp_sandbox::stage::Recovered {
    let rules: toolbelt_mcp_sandbox::stage::LazyRules =
        std::cell::LazyCell::new(Box::new(|| toolbelt_mcp_sandbox::stage::Rules::new(own.to_vec())));
    let recover = |base: &Path| toolbelt_mcp_sandbox::stage::recover(base, &rules, cap, ignored_too);
    let mut out = recover(&state_dir.join("stage"));
    let sessions = fs::session_temp_base();
    for name in fs::file_names(&sessions) {
        let alive =
            name.to_string_lossy().split('-').next().and_then(|p| p.parse::<u32>().ok()).is_some_and(fs::process_alive);
        if !alive {
            let more = recover(&sessions.join(name).join("stage"));
            out.said.extend(more.said);
            out.records.extend(more.records);
        }
    }
    out
}

/// Removes spilled output and private temp dirs left by servers that are no longer running.
pub fn sweep_dead_servers_output_and_temp(state_dir: &Path) -> usize {
    fs::remove_dirs_of_dead_servers(&state_dir.join("output"), "")
        + fs::remove_dirs_of_dead_servers(&fs::session_temp_base(), "")
}
