//! This OS's command sandbox as the rest of the server sees it: whether it works here, and the
//! program line that runs a command under a [`Contract`]. Linux: Landlock, namespaces and
//! seccomp (`linux/`, through the `__sandbox-exec` re-exec of this binary); macOS: Seatbelt
//! (the profile `seatbelt.rs` generates, through `/usr/bin/sandbox-exec`); elsewhere (Windows):
//! none, so commands run unconfined and the policy asks for every one not known to be
//! read-only.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use crate::contract::Contract;

/// The backend's name, for `doctor` and messages.
#[cfg(target_os = "linux")]
pub const NAME: &str = "Landlock, namespaces and seccomp";
/// The backend's name, for `doctor` and messages.
#[cfg(target_os = "macos")]
pub const NAME: &str = "Seatbelt (/usr/bin/sandbox-exec)";
/// The backend's name, for `doctor` and messages.
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub const NAME: &str = "none";

/// What a user can do when the backend is unavailable (the middle of an error message).
#[cfg(target_os = "linux")]
pub const REMEDY: &str = "use a kernel with Landlock (5.13 or later, `lsm=landlock`)";
/// What a user can do when the backend is unavailable (the middle of an error message).
#[cfg(target_os = "macos")]
pub const REMEDY: &str = "run the server outside any other sandbox, where `/usr/bin/sandbox-exec` can apply a profile";
/// What a user can do when the backend is unavailable (the middle of an error message).
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub const REMEDY: &str = "this OS has no command sandbox in toolbelt-mcp yet";

/// Whether this OS has a command sandbox at all. Without one (Windows), commands run
/// unconfined in every mode, and the policy asks before each that is not known to be
/// read-only.
pub const CONFINES_COMMANDS: bool = cfg!(any(target_os = "linux", target_os = "macos"));

/// Whether the wrapped command starts a session of its own (the Linux helper's `setsid`);
/// otherwise the server starts it in a process group of its own.
pub const OWN_SESSION: bool = cfg!(target_os = "linux");

/// The level a contract records (Linux: the Landlock ABI; 0 elsewhere), or why commands
/// cannot be confined here.
pub fn level() -> Result<u8, String> {
    #[cfg(target_os = "linux")]
    {
        let support = crate::landlock::support();
        support.abi.ok_or_else(|| format!("Landlock is {}", support.status))
    }
    #[cfg(target_os = "macos")]
    {
        crate::seatbelt::probe().clone().map(|()| 0)
    }
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        Err("this OS has no command sandbox in toolbelt-mcp: commands run unconfined, and each one not known to be read-only is asked first (denied when the client cannot ask)".to_string())
    }
}

/// The backend's state, for `doctor`.
pub fn status() -> String {
    match level() {
        #[cfg(target_os = "linux")]
        Ok(_) => format!("{NAME}: Landlock {}", crate::landlock::support().status),
        #[cfg(not(target_os = "linux"))]
        Ok(_) => format!("{NAME}: available"),
        Err(why) => format!("{NAME}: {why}"),
    }
}

/// Whether the kernel confines a walk's reads to its root (Linux with Landlock); otherwise
/// each name a walk reports is re-checked beneath the root.
pub fn confines_walks() -> bool {
    #[cfg(target_os = "linux")]
    {
        crate::landlock::support().abi.is_some()
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

/// The program and arguments that run `program args…` under `contract`.
pub fn wrap(contract: &Contract, program: &OsStr, args: &[OsString]) -> (PathBuf, Vec<OsString>) {
    #[cfg(target_os = "macos")]
    {
        crate::seatbelt::command(contract, program, args)
    }
    #[cfg(target_os = "linux")]
    {
        // The contract holds plain paths and numbers: it always serialises.
        let json = serde_json::to_string(contract).unwrap_or_default();
        let mut argv: Vec<OsString> = vec![crate::contract::HELPER_SUBCOMMAND.into(), json.into(), "--".into()];
        argv.push(program.to_os_string());
        argv.extend(args.iter().cloned());
        // `/proc/self/exe` is this very binary, even if the file was replaced since it started.
        (PathBuf::from("/proc/self/exe"), argv)
    }
    // Not reached: `level` refuses every sandboxed command on this OS before one is wrapped.
    #[cfg(not(any(target_os = "linux", target_os = "macos")))]
    {
        let _ = contract;
        (PathBuf::from(program), args.to_vec())
    }
}
