//! Commands under the sandbox, as the server sees them: `Confinement::plan` turns the policy's
//! tables (roots, protected paths, deny-read, limits, network) into a [`Contract`], and `wrap`
//! runs a program as `toolbelt-mcp __sandbox-exec CONTRACT -- PROGRAM ARGS…`, a re-exec of
//! this binary that enforces it (`linux/`) before the program starts. The server never
//! confines itself.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use crate::backend;
use crate::contract::{Bind, Contract, Limits, PerCommand, TEMP_DIRS};
use crate::fs;
use crate::guard::{Finding, Guard};
use crate::mode::{Network, SandboxMode};

pub use crate::contract::{SETUP_FAILED, SETUP_PREFIX};

/// Everything that decides what a command may do.
#[derive(Debug, Clone)]
pub struct Plan<'a> {
    /// The sandbox mode.
    pub mode: SandboxMode,
    /// The session's roots (canonical).
    pub roots: &'a [PathBuf],
    /// Configured extra writable directories (canonical).
    pub writable_roots: &'a [PathBuf],
    /// The session's temp dir (its `tmp`, `var-tmp` and `shm` are created here).
    pub temp: &'a Path,
    /// The server's own state dir, config dir and file, audit log: read-only wherever they are.
    pub own_files: &'a [PathBuf],
    /// What commands may not read.
    pub hidden: &'a [PathBuf],
    /// Every secret path, existing or not (watched while a command runs).
    pub watched: &'a [PathBuf],
    /// What stays visible inside a hidden path (the session's own output dir).
    pub visible: &'a [PathBuf],
    /// Whether commands may reach other hosts.
    pub network: Network,
    /// Resource limits.
    pub limits: Limits,
    /// Where commands' writes beneath the roots are staged (`stage/`), or `None`: commands
    /// write the roots directly, and the protected paths are bound and checked (`guard.rs`).
    pub stage_base: Option<&'a Path>,
}

/// The confinement of one command: its contract, and how what it writes is judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    contract: Contract,
    /// Where each command's stage is made (Linux, `workspace-write`).
    stage_base: Option<PathBuf>,
    /// The roots a stage covers (canonical, none inside another).
    staged: Vec<PathBuf>,
    /// Without a stage: the protected paths of the writable roots (its binds are in the
    /// contract).
    guard: Option<Guard>,
}

/// Why a command cannot be sandboxed (it is then not run).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// This OS's sandbox is unavailable (Linux: no Landlock; macOS: no `sandbox-exec`).
    #[error(
        "{0}, so the command cannot be confined and was not run; {next}, or run the server with `--sandbox full-access` to run commands unconfined",
        next = backend::REMEDY
    )]
    Unavailable(String),
    /// The session's temp dir could not be made.
    #[error("cannot create the command's temp dir `{path}`: {source}; check that the system temp dir is writable")]
    Temp {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// A command line wrapped for the sandbox ([`Confinement::wrap`]).
#[derive(Debug)]
pub struct Wrapped {
    /// What to spawn.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
}

impl Confinement {
    /// The confinement for `plan`, or `None` in `full-access` mode (no sandbox). Creates the
    /// session's temp dirs, and the missing protected git directories (see `guard`).
    pub fn plan(plan: &Plan<'_>) -> Result<Option<Self>, SandboxError> {
        // Without a command sandbox (Windows) commands run unconfined; the policy has asked.
        if plan.mode == SandboxMode::FullAccess || !backend::CONFINES_COMMANDS {
            return Ok(None);
        }
        let abi = backend::level().map_err(SandboxError::Unavailable)?;
        for (_, own) in TEMP_DIRS {
            let path = plan.temp.join(own);
            fs::create_private_dir(&path).map_err(|source| SandboxError::Temp { path, source })?;
        }
        let mut writable = Vec::new();
        if plan.mode == SandboxMode::WorkspaceWrite {
            writable.extend(plan.roots.iter().chain(plan.writable_roots).cloned());
        }
        writable.sort();
        writable.dedup();
        let stage_base = plan.stage_base.filter(|_| STAGES && plan.mode == SandboxMode::WorkspaceWrite);
        let staged: Vec<PathBuf> = match stage_base {
            Some(_) => outermost(plan.roots),
            None => Vec::new(),
        };
        let guard = stage_base.is_none().then(|| Guard::prepare(&writable));
        let mut binds = guard.as_ref().map_or_else(Vec::new, |g| g.binds().to_vec());
        binds.extend(own_binds(plan.own_files, &writable));
        let mut visible: Vec<PathBuf> = plan.roots.to_vec();
        visible.extend(plan.visible.iter().cloned());
        let contract = Contract {
            abi,
            writable,
            binds,
            hidden: plan.hidden.to_vec(),
            watch: plan.watched.to_vec(),
            visible,
            // Seatbelt matches real paths (macOS: `/tmp` is `/private/tmp`).
            temp: fs::canonicalize(plan.temp).unwrap_or_else(|_| plan.temp.to_path_buf()),
            network: plan.network,
            limits: plan.limits,
            parent: std::process::id(),
            cwd: PathBuf::from("/"),
            stage: Vec::new(),
            proxy: None,
            join: None,
        };
        Ok(Some(Self { contract, stage_base: stage_base.map(Path::to_path_buf), staged, guard }))
    }

    /// A new stage for one command (its upper layers, empty), when writes are staged; `line`
    /// is the command line its records show.
    #[cfg(target_os = "linux")]
    pub fn stage(&self, line: &str) -> Result<Option<crate::stage::Stage>, SandboxError> {
        let Some(base) = &self.stage_base else { return Ok(None) };
        crate::stage::Stage::create(base, &self.staged, line)
            .map(Some)
            .map_err(|source| SandboxError::Temp { path: base.clone(), source })
    }

    /// Whether what commands write is staged (and judged when folded) rather than checked by
    /// the guard.
    pub fn stages(&self) -> bool {
        self.stage_base.is_some()
    }

    /// What runs `program args…` in `cwd` under this confinement: the program and arguments
    /// to spawn.
    pub fn wrap(&self, program: &OsStr, args: &[OsString], cwd: &Path, per_command: PerCommand) -> Wrapped {
        let contract = Contract {
            cwd: cwd.to_path_buf(),
            stage: per_command.stage,
            proxy: per_command.proxy,
            join: per_command.join,
            ..self.contract.clone()
        };
        let (program, args) = backend::wrap(&contract, program, args);
        Wrapped { program, args }
    }

    /// The contract (for `doctor`).
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// Without a stage: protected paths the command created or replaced so far (renamed
    /// aside).
    pub fn check(&self) -> Vec<Finding> {
        self.guard.as_ref().map_or_else(Vec::new, Guard::check)
    }

    /// Takes `written`, which the server itself wrote, as it is now (see [`Guard::accept`]).
    pub fn accept(&mut self, written: &Path) {
        if let Some(guard) = &mut self.guard {
            guard.accept(written);
        }
    }
}

/// Whether this build stages commands' writes (overlayfs: Linux).
const STAGES: bool = cfg!(target_os = "linux");

/// The roots that no other root holds: staging one stages what lies beneath it.
fn outermost(roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut kept: Vec<PathBuf> = Vec::new();
    let mut sorted = roots.to_vec();
    sorted.sort();
    for root in sorted {
        if !kept.iter().any(|k| root.starts_with(k)) {
            kept.push(root);
        }
    }
    kept
}

/// The server's own files a command could otherwise write (state, config, audit log): bound
/// read-only where they lie in a writable directory.
fn own_binds(own_files: &[PathBuf], writable: &[PathBuf]) -> Vec<Bind> {
    let mut binds = Vec::new();
    // (Most are missing: the rotated audit logs. Nothing to bind, and no `realpath` to pay.)
    for own in own_files.iter().filter(|own| fs::exists(own)) {
        let real = fs::canonicalize(own).unwrap_or_else(|_| own.clone());
        if fs::exists(&real)
            && writable.iter().any(|dir| real.starts_with(dir))
            && !binds.contains(&Bind::ReadOnly(real.clone()))
        {
            binds.push(Bind::ReadOnly(real));
        }
    }
    binds
}

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn plans_writable_dirs_protected_paths_and_the_contract() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        let state = root.join("state");
        std::fs::create_dir(&state).unwrap();
        let own = vec![state.clone(), root.join("missing.toml")];
        let roots = vec![root.clone()];
        let temp = root.join("tmp");
        let mut plan = Plan {
            mode: SandboxMode::WorkspaceWrite,
            roots: &roots,
            writable_roots: &[],
            temp: &temp,
            own_files: &own,
            hidden: &[],
            watched: &[],
            visible: &[],
            network: Network::Deny,
            limits: Limits::default(),
            stage_base: None,
        };
        let c = Confinement::plan(&plan).unwrap().unwrap();
        assert_eq!(c.contract.writable, roots);
        assert!(temp.join("tmp").is_dir() && temp.join("var-tmp").is_dir() && temp.join("shm").is_dir());
        let git = root.join(".git");
        for bind in [Bind::Pinned(git.clone()), Bind::ReadOnly(git.join("hooks")), Bind::ReadOnly(git.join("config"))] {
            assert!(c.contract.binds.contains(&bind), "{bind:?}");
        }
        assert_eq!(c.contract.binds.last(), Some(&Bind::ReadOnly(state)), "own files after the repositories");
        let wrapped = c.wrap(OsStr::new("bash"), &["-c".into(), "echo x".into()], &root, PerCommand::default());
        let (program, argv) = (wrapped.program, wrapped.args);
        assert_eq!(program, PathBuf::from("/proc/self/exe"));
        assert_eq!(argv[0], crate::contract::HELPER_SUBCOMMAND);
        let sent: Contract = serde_json::from_str(argv[1].to_str().unwrap()).unwrap();
        assert_eq!((sent.cwd, sent.network, sent.parent), (root.clone(), Network::Deny, std::process::id()));
        assert_eq!(argv[2..], ["--", "bash", "-c", "echo x"]);
        plan.mode = SandboxMode::ReadOnly;
        let c = Confinement::plan(&plan).unwrap().unwrap();
        assert!(c.contract.writable.is_empty(), "read-only: only the temp dirs");
        plan.mode = SandboxMode::FullAccess;
        assert!(Confinement::plan(&plan).unwrap().is_none());
    }
}
