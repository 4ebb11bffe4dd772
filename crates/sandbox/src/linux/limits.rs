//! Resource limits of a command, set by the helper once its user namespace exists (so the
//! process count is that namespace's own, not the user's whole machine) and inherited by
//! everything the command starts. No core files ever.

use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};

use crate::contract::Limits;

/// Applies `limits` (soft and hard alike, never above a hard limit already in force) and
/// `RLIMIT_CORE = 0`.
pub fn apply(limits: &Limits) -> Result<(), String> {
    let set = |resource: Resource, value: Option<u64>, name: &str| {
        let value = match (value, getrlimit(resource).maximum) {
            (Some(wanted), Some(hard)) => Some(wanted.min(hard)),
            (wanted, _) => wanted,
        };
        let limit = Rlimit { current: value, maximum: value };
        setrlimit(resource, limit).map_err(|e| format!("cannot set {name}: {e}"))
    };
    set(Resource::Core, Some(0), "RLIMIT_CORE")?;
    if let Some(n) = limits.processes {
        set(Resource::Nproc, Some(n), "RLIMIT_NPROC")?;
    }
    if let Some(n) = limits.memory_bytes {
        set(Resource::As, Some(n), "RLIMIT_AS")?;
    }
    if let Some(n) = limits.file_bytes {
        set(Resource::Fsize, Some(n), "RLIMIT_FSIZE")?;
    }
    Ok(())
}
