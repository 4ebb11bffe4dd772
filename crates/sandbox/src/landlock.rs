//! Linux Landlock: what the kernel supports (`doctor`, and the check before every sandboxed
//! command), and the ruleset a sandboxed command runs under (applied by the sandbox's init).

use std::path::PathBuf;

use landlock::{
    ABI, Access, AccessFs, CompatLevel, Compatible, LandlockStatus, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

/// The first ABI that can scope signals and abstract Unix sockets to the sandbox.
pub const SCOPE_ABI: u8 = 6;

/// The kernel's Landlock support.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LandlockSupport {
    /// Human-readable status, e.g. `available: ABI 7` or `not enabled by the kernel`.
    pub status: String,
    /// The ABI this build can use with this kernel; `None` when Landlock is unavailable.
    pub abi: Option<u8>,
}

/// Probes Landlock by enforcing a permissive ruleset on a short-lived thread (Landlock
/// restricts only the calling thread), so the calling process itself stays unrestricted.
pub fn probe() -> LandlockSupport {
    let outcome = std::thread::spawn(|| -> Result<LandlockStatus, String> {
        let access = AccessFs::from_all(ABI::V1);
        let root = PathFd::new("/").map_err(|e| e.to_string())?;
        let status = Ruleset::default()
            .handle_access(access)
            .and_then(|r| r.create())
            .and_then(|r| r.add_rule(PathBeneath::new(root, access)))
            .and_then(|r| r.restrict_self())
            .map_err(|e| e.to_string())?;
        Ok(status.landlock)
    })
    .join();
    match outcome {
        Ok(Ok(status)) => describe(status),
        Ok(Err(err)) => LandlockSupport { status: format!("unavailable ({err})"), abi: None },
        Err(_) => LandlockSupport { status: "probe failed".into(), abi: None },
    }
}

/// The probe, run once per process (the kernel does not change under us).
pub fn support() -> &'static LandlockSupport {
    static SUPPORT: std::sync::OnceLock<LandlockSupport> = std::sync::OnceLock::new();
    SUPPORT.get_or_init(probe)
}

fn describe(status: LandlockStatus) -> LandlockSupport {
    match status {
        LandlockStatus::NotEnabled => {
            LandlockSupport { status: "not enabled by the kernel (boot with lsm=landlock)".into(), abi: None }
        }
        LandlockStatus::NotImplemented => {
            LandlockSupport { status: "not implemented by this kernel".into(), abi: None }
        }
        LandlockStatus::Available { effective_abi, kernel_abi } => {
            let abi = effective_abi as u8;
            let status = match kernel_abi {
                Some(kernel) => format!("available: kernel ABI {kernel} (this build uses up to ABI {abi})"),
                None => format!("available: ABI {abi}"),
            };
            LandlockSupport { status, abi: Some(abi) }
        }
    }
}

/// What a sandboxed command may do, as Landlock sees it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rules {
    /// The ABI to build the ruleset for (the parent's probe); the child refuses if the
    /// kernel cannot enforce all of it.
    pub abi: u8,
    /// Directories (and files) the command may write beneath.
    pub writable: Vec<PathBuf>,
}

/// Device files every sandboxed command may read and write (never block devices).
const DEVICES: &[&str] =
    &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts"];

/// Restricts the calling thread (and what it execs): read and execute everywhere, write only
/// beneath `rules.writable` and the harmless devices (never create a device node: no
/// `MAKE_CHAR`/`MAKE_BLOCK` anywhere), no signals to processes outside the sandbox, and no
/// connecting to abstract Unix sockets outside it. Fails unless fully enforced.
pub fn restrict(rules: &Rules) -> Result<(), String> {
    let abi = ABI::from(i32::from(rules.abi));
    let all = AccessFs::from_all(abi);
    let write = all & !(AccessFs::MakeChar | AccessFs::MakeBlock);
    let read = AccessFs::from_read(abi);
    let mut ruleset = Ruleset::default().set_compatibility(CompatLevel::HardRequirement).handle_access(all);
    if rules.abi >= SCOPE_ABI {
        ruleset = ruleset.and_then(|r| r.scope(Scope::Signal | Scope::AbstractUnixSocket));
    }
    let devices = DEVICES.iter().filter(|d| crate::fs::exists(std::path::Path::new(d)));
    let status = ruleset
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], read)))
        .and_then(|r| r.add_rules(path_beneath_rules(devices, write)))
        .and_then(|r| r.add_rules(path_beneath_rules(&rules.writable, write)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| e.to_string())?;
    match status.ruleset {
        RulesetStatus::FullyEnforced if status.no_new_privs => Ok(()),
        other => Err(format!("the kernel enforced the ruleset only as `{other:?}`")),
    }
}

/// Restricts the calling thread (and the threads it starts) to reading files and listing
/// directories beneath `dirs` and reading `files`; everything else it may still do. Returns
/// whether the kernel enforces it (`false` without Landlock); an error when Landlock is there
/// but the ruleset could not be applied.
pub fn restrict_reads(dirs: &[&std::path::Path], files: &[PathBuf]) -> Result<bool, String> {
    if support().abi.is_none() {
        return Ok(false);
    }
    let read = AccessFs::ReadFile | AccessFs::ReadDir;
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(read)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(dirs, read)))
        .and_then(|r| r.add_rules(path_beneath_rules(files, AccessFs::ReadFile)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| e.to_string())?;
    match status.ruleset {
        RulesetStatus::FullyEnforced => Ok(true),
        other => Err(format!("the kernel enforced the read ruleset only as `{other:?}`")),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn describes_each_status() {
        let current = describe(LandlockStatus::Available { effective_abi: ABI::V6, kernel_abi: None });
        assert_eq!((current.status.as_str(), current.abi), ("available: ABI 6", Some(6)));
        let newer = describe(LandlockStatus::Available { effective_abi: ABI::V6, kernel_abi: Some(12) });
        assert_eq!(newer.status, "available: kernel ABI 12 (this build uses up to ABI 6)");
        assert_eq!(describe(LandlockStatus::NotEnabled).abi, None);
        assert_eq!(describe(LandlockStatus::NotImplemented).abi, None);
    }

    #[test]
    fn probe_sees_the_kernel_landlock() {
        // These machines' kernels enforce Landlock ABI 7; a failure here means the probe is wrong.
        let support = probe();
        assert!(support.abi.is_some_and(|abi| abi >= SCOPE_ABI), "{support:?}");
    }

    #[test]
    fn restrict_confines_writes_on_a_thread() {
        let abi = probe().abi.unwrap();
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("in");
        std::fs::create_dir(&inside).unwrap();
        let rules = Rules { abi, writable: vec![inside.clone()] };
        let base = dir.path().to_path_buf();
        let outcome = std::thread::spawn(move || {
            restrict(&rules).unwrap();
            let ok = std::fs::write(inside.join("a"), "x").is_ok();
            let denied = std::fs::write(base.join("b"), "x").unwrap_err().kind();
            (ok, denied)
        })
        .join()
        .unwrap();
        assert_eq!(outcome, (true, std::io::ErrorKind::PermissionDenied));
    }

    #[test]
    fn restrict_reads_confines_reads_on_a_thread() {
        let dir = tempfile::tempdir().unwrap();
        let inside = dir.path().join("in");
        std::fs::create_dir(&inside).unwrap();
        std::fs::write(inside.join("a"), "x").unwrap();
        std::fs::write(dir.path().join("allowed"), "y").unwrap();
        std::fs::write(dir.path().join("other"), "z").unwrap();
        let base = dir.path().to_path_buf();
        let outcome = std::thread::spawn(move || {
            assert!(restrict_reads(&[inside.as_path()], &[base.join("allowed")]).unwrap());
            let nested = std::thread::spawn({
                let base = base.clone();
                move || std::fs::read_dir(&base).is_err()
            });
            (
                std::fs::read(inside.join("a")).is_ok(),
                std::fs::read(base.join("allowed")).is_ok(),
                std::fs::read(base.join("other")).is_err(),
                nested.join().unwrap(),
                std::fs::write(base.join("written"), "w").is_ok(),
            )
        })
        .join()
        .unwrap();
        assert_eq!(outcome, (true, true, true, true, true));
        // The rest of the process is not confined.
        assert!(std::fs::read(dir.path().join("other")).is_ok());
    }
}
