//! Commands under the sandbox. The server never confines itself: each command runs as
//! `toolbelt-mcp __sandbox-exec [rules] -- PROGRAM ARGS…`, a re-exec of this binary that
//! binds the protected paths read-only (see `mounts`), applies the Landlock ruleset and
//! `no_new_privs`, and then execs the program. The child is single-threaded throughout, so
//! no `pre_exec` hook (and no `unsafe`) is needed.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::SandboxMode;
use crate::sandbox::fs;
use crate::sandbox::guard::{Finding, Guard};
use crate::sandbox::landlock::{self, NET_ABI, Rules};
use crate::sandbox::mounts::{self, Bind};

/// The hidden subcommand that applies the sandbox and execs.
pub const SUBCOMMAND: &str = "__sandbox-exec";
/// The exit status of a command the sandbox could not set up (like a shell's "cannot run").
pub const SETUP_FAILED: u8 = 126;
/// How the child reports a setup failure on stderr, so the server can recognise it.
pub const SETUP_PREFIX: &str = "toolbelt-mcp sandbox:";

/// Everything that decides what a command may write.
#[derive(Debug, Clone)]
pub struct Plan<'a> {
    /// The sandbox mode.
    pub mode: SandboxMode,
    /// The session's roots (canonical).
    pub roots: &'a [PathBuf],
    /// Configured extra writable directories (canonical).
    pub writable_roots: &'a [PathBuf],
    /// This server's private temp dir (writable in every sandboxed mode).
    pub private_tmp: &'a Path,
    /// The server's own state dir and config file: read-only wherever they are.
    pub own_files: &'a [PathBuf],
    /// Deny TCP connect and bind.
    pub deny_network: bool,
}

/// The confinement of one command, ready to be passed to `__sandbox-exec`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Confinement {
    rules: Rules,
    binds: Vec<Bind>,
    /// The protected paths of the writable roots (its binds are in `binds`).
    guard: Guard,
}

/// Why a command cannot be sandboxed (it is then not run).
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// Landlock is unavailable.
    #[error(
        "Landlock is {0}, so the command cannot be confined and was not run; use a kernel with Landlock, or run the server with `--sandbox full-access` to run commands unconfined"
    )]
    NoLandlock(String),
    /// The kernel is too old for `network = "deny"`.
    #[error(
        "`network = \"deny\"` needs Landlock ABI {NET_ABI} (Linux 6.7) but this kernel offers ABI {0}, so the command was not run; remove `network = \"deny\"` from the config to run it with network access"
    )]
    NoNetworkRules(u8),
}

impl Confinement {
    /// The confinement for `plan`, or `None` in `full-access` mode (no sandbox).
    pub fn plan(plan: &Plan<'_>) -> Result<Option<Self>, SandboxError> {
        if plan.mode == SandboxMode::FullAccess {
            return Ok(None);
        }
        let support = landlock::support();
        let abi = support.abi.ok_or_else(|| SandboxError::NoLandlock(support.status.clone()))?;
        if plan.deny_network && abi < NET_ABI {
            return Err(SandboxError::NoNetworkRules(abi));
        }
        let mut writable = vec![plan.private_tmp.to_path_buf()];
        let mut repos = Vec::new();
        if plan.mode == SandboxMode::WorkspaceWrite {
            repos.extend(plan.roots.iter().chain(plan.writable_roots).cloned());
            writable.extend(repos.iter().cloned());
            for temp in [std::env::temp_dir(), PathBuf::from("/tmp"), PathBuf::from("/var/tmp"), "/dev/shm".into()] {
                if let Ok(real) = fs::canonicalize(&temp) {
                    writable.push(real);
                }
            }
        }
        writable.sort();
        writable.dedup();
        let guard = Guard::prepare(&repos);
        let mut binds = guard.binds().to_vec();
        binds.extend(own_binds(plan.own_files, &writable));
        Ok(Some(Self { rules: Rules { abi, writable, deny_network: plan.deny_network }, binds, guard }))
    }

    /// The program and arguments that run `program args…` under this confinement.
    pub fn wrap(&self, program: &OsStr, args: &[OsString]) -> (PathBuf, Vec<OsString>) {
        let mut argv: Vec<OsString> = vec![SUBCOMMAND.into(), "--abi".into(), self.rules.abi.to_string().into()];
        if self.rules.deny_network {
            argv.push("--deny-network".into());
        }
        for path in &self.rules.writable {
            argv.extend(["--write".into(), path.clone().into_os_string()]);
        }
        for bind in &self.binds {
            let (flag, path) = match bind {
                Bind::Pinned(path) => ("--pin", path),
                Bind::ReadOnly(path) => ("--read-only", path),
            };
            argv.extend([flag.into(), path.clone().into_os_string()]);
        }
        argv.push("--".into());
        argv.push(program.to_os_string());
        argv.extend(args.iter().cloned());
        // `/proc/self/exe` is this very binary, even if the file was replaced since it started.
        (PathBuf::from("/proc/self/exe"), argv)
    }

    /// The directories the command may write.
    pub fn writable(&self) -> &[PathBuf] {
        &self.rules.writable
    }

    /// The paths bound over themselves: read-only ones, and pinned ones (a mount point,
    /// so it cannot be renamed or removed).
    pub fn binds(&self) -> &[Bind] {
        &self.binds
    }

    /// Protected paths the command created or replaced so far (renamed aside).
    pub fn check(&self) -> Vec<Finding> {
        self.guard.check()
    }

    /// Takes `written`, which the server itself wrote, as it is now (see [`Guard::accept`]).
    pub fn accept(&mut self, written: &Path) {
        self.guard.accept(written);
    }
}

/// The server's own files a command could otherwise write (state, config, audit log): bound
/// read-only where they lie in a writable directory.
fn own_binds(own_files: &[PathBuf], writable: &[PathBuf]) -> Vec<Bind> {
    let mut binds = Vec::new();
    for own in own_files {
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

/// The `__sandbox-exec` entry point: apply the confinement, then exec. Returns only on failure.
pub fn child_main(args: Vec<OsString>) -> ExitCode {
    let fail = |message: String| {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "{SETUP_PREFIX} {message}; the command was not run");
        ExitCode::from(SETUP_FAILED)
    };
    let (confinement, program, rest) = match parse(args) {
        Ok(parsed) => parsed,
        Err(message) => return fail(message),
    };
    // If the server dies abruptly, its commands' shells die with it.
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    if !confinement.binds.is_empty()
        && let Err(message) = mounts::apply(&confinement.binds)
    {
        return fail(message);
    }
    if let Err(message) = landlock::restrict(&confinement.rules) {
        return fail(format!("cannot apply the Landlock ruleset: {message}"));
    }
    let err = std::process::Command::new(&program).args(rest).exec();
    let _ = std::io::Write::write_all(
        &mut std::io::stderr(),
        format!("toolbelt-mcp: cannot run `{}`: {err}\n", program.to_string_lossy()).as_bytes(),
    );
    ExitCode::from(if err.kind() == std::io::ErrorKind::NotFound { 127 } else { SETUP_FAILED })
}

fn parse(args: Vec<OsString>) -> Result<(Confinement, OsString, Vec<OsString>), String> {
    let mut rules = Rules::default();
    let mut binds = Vec::new();
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("`{}` needs a value", flag.to_string_lossy()));
        match flag.to_str() {
            Some("--abi") => {
                let raw = value()?;
                rules.abi = raw.to_str().and_then(|v| v.parse().ok()).ok_or("`--abi` needs a number")?;
            }
            Some("--deny-network") => rules.deny_network = true,
            Some("--write") => rules.writable.push(value()?.into()),
            Some("--pin") => binds.push(Bind::Pinned(value()?.into())),
            Some("--read-only") => binds.push(Bind::ReadOnly(value()?.into())),
            Some("--") => {
                let program = args.next().ok_or("no program after `--`")?;
                return Ok((Confinement { rules, binds, guard: Guard::default() }, program, args.collect()));
            }
            _ => return Err(format!("unknown argument `{}`", flag.to_string_lossy())),
        }
    }
    Err("no `--` before the program".into())
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn wrap_and_parse_round_trip() {
        let confinement = Confinement {
            rules: Rules { abi: 7, writable: vec!["/w".into(), "/tmp".into()], deny_network: true },
            binds: vec![Bind::Pinned("/w/.git".into()), Bind::ReadOnly("/w/.git/hooks".into())],
            guard: Guard::default(),
        };
        let (program, argv) = confinement.wrap(OsStr::new("bash"), &["-c".into(), "echo --write x".into()]);
        assert_eq!(program, PathBuf::from("/proc/self/exe"));
        assert_eq!(argv[0], SUBCOMMAND);
        let (parsed, program, rest) = parse(argv[1..].to_vec()).unwrap();
        assert_eq!(parsed, confinement);
        assert_eq!((program.as_os_str(), rest), (OsStr::new("bash"), vec!["-c".into(), "echo --write x".into()]));
        assert!(parse(vec!["--bogus".into()]).unwrap_err().contains("--bogus"));
        assert!(parse(vec!["--abi".into()]).unwrap_err().contains("needs a value"));
    }

    #[test]
    fn plans_writable_dirs_and_protected_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "").unwrap();
        let state = root.join("state");
        std::fs::create_dir(&state).unwrap();
        let own = vec![state.clone(), root.join("missing.toml")];
        let roots = vec![root.clone()];
        let private_tmp = root.join("tmp");
        let mut plan = Plan {
            mode: SandboxMode::WorkspaceWrite,
            roots: &roots,
            writable_roots: &[],
            private_tmp: &private_tmp,
            own_files: &own,
            deny_network: false,
        };
        let c = Confinement::plan(&plan).unwrap().unwrap();
        assert!(c.writable().contains(&root) && c.writable().contains(&private_tmp));
        let git = root.join(".git");
        for bind in [Bind::Pinned(git.clone()), Bind::ReadOnly(git.join("hooks")), Bind::ReadOnly(git.join("config"))] {
            assert!(c.binds.contains(&bind), "{bind:?}");
        }
        assert_eq!(c.binds.last(), Some(&Bind::ReadOnly(state)), "own files after the repositories");
        plan.mode = SandboxMode::ReadOnly;
        let c = Confinement::plan(&plan).unwrap().unwrap();
        assert_eq!(c.writable(), std::slice::from_ref(&private_tmp));
        plan.mode = SandboxMode::FullAccess;
        assert!(Confinement::plan(&plan).unwrap().is_none());
    }
}
