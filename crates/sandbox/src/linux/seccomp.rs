//! The seccomp filter of every sandboxed command: sockets only of the families ordinary tools
//! use (`AF_UNIX`, `AF_INET`, `AF_INET6`, `AF_NETLINK`); anything else (`AF_PACKET`,
//! `AF_VSOCK`, which no network namespace confines, Bluetooth, …) and `io_uring` (which opens
//! sockets without `socket(2)`) fail with `EPERM`. No setuid or setgid file can be made (as
//! systemd's `RestrictSUIDSGID=`): `chmod`, `fchmod`, `fchmodat`, `fchmodat2` with either bit,
//! and `open`, `openat`, `creat`, `mknod`, `mknodat` creating with either, fail with `EPERM`;
//! `openat2`, whose mode seccomp cannot read, fails with `ENOSYS` (callers fall back to
//! `openat`), in a second filter. The network itself is cut by the network
//! namespace, not here, so loopback keeps working under `network = "deny"`. A syscall of
//! another architecture (i386's `socketcall`) kills the process (seccompiler's arch check);
//! x32 numbers are listed too.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter, SeccompRule, TargetArch,
};

/// Socket families a command may open.
const FAMILIES: [i32; 4] = [libc::AF_UNIX, libc::AF_INET, libc::AF_INET6, libc::AF_NETLINK];

/// The x32 ABI's syscalls are x86_64's numbers with this bit.
#[cfg(target_arch = "x86_64")]
const X32: i64 = 0x4000_0000;

/// `openat2` and `fchmodat2`: the same number on every architecture (the unified table).
const SYS_OPENAT2: i64 = 437;
const SYS_FCHMODAT2: i64 = 452;

/// The set-user-ID and set-group-ID bits of a mode.
const SETID: [u64; 2] = [libc::S_ISUID as u64, libc::S_ISGID as u64];

/// The filter, compiled.
pub fn program() -> Result<BpfProgram, String> {
    let arch = if cfg!(target_arch = "x86_64") {
        TargetArch::x86_64
    } else if cfg!(target_arch = "aarch64") {
        TargetArch::aarch64
    } else if cfg!(target_arch = "riscv64") {
        TargetArch::riscv64
    } else {
        return Err("seccomp filters are built for x86_64, aarch64 and riscv64 only".into());
    };
    let fail = |e: seccompiler::BackendError| format!("cannot build the seccomp filter: {e}");
    let other_family = FAMILIES
        .iter()
        .map(|family| SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Ne, *family as u64))
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?;
    let other_family = SeccompRule::new(other_family).map_err(fail)?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for (syscall, rule) in [
        (libc::SYS_socket, vec![other_family.clone()]),
        (libc::SYS_socketpair, vec![other_family]),
        (libc::SYS_io_uring_setup, Vec::new()),
        (libc::SYS_io_uring_enter, Vec::new()),
        (libc::SYS_io_uring_register, Vec::new()),
    ] {
        #[cfg(target_arch = "x86_64")]
        rules.insert(X32 | syscall, rule.clone());
        rules.insert(syscall, rule);
    }
    for (syscall, rule) in setid_rules().map_err(fail)? {
        #[cfg(target_arch = "x86_64")]
        rules.insert(X32 | syscall, rule.clone());
        rules.insert(syscall, rule);
    }
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
        .map_err(fail)?;
    BpfProgram::try_from(filter).map_err(fail)
}

/// The rules that refuse making a setuid or setgid file, by syscall: the mode argument has
/// either bit (and, for the `open`s, `O_CREAT` is set: without it the mode is not read).
fn setid_rules() -> Result<Vec<(i64, Vec<SeccompRule>)>, seccompiler::BackendError> {
    let has_bit =
        |arg: u8, bit: u64| SeccompCondition::new(arg, SeccompCmpArgLen::Dword, SeccompCmpOp::MaskedEq(bit), bit);
    let mode_at = |arg: u8| -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        SETID.iter().map(|bit| SeccompRule::new(vec![has_bit(arg, *bit)?])).collect()
    };
    let creating_at = |flags: u8, mode: u8| -> Result<Vec<SeccompRule>, seccompiler::BackendError> {
        let create = libc::O_CREAT as u64;
        SETID.iter().map(|bit| SeccompRule::new(vec![has_bit(flags, create)?, has_bit(mode, *bit)?])).collect()
    };
    #[allow(unused_mut)]
    let mut rules = vec![
        (libc::SYS_fchmod, mode_at(1)?),
        (libc::SYS_fchmodat, mode_at(2)?),
        (SYS_FCHMODAT2, mode_at(2)?),
        (libc::SYS_openat, creating_at(2, 3)?),
        (libc::SYS_mknodat, mode_at(2)?),
    ];
    #[cfg(target_arch = "x86_64")]
    rules.extend([
        (libc::SYS_chmod, mode_at(1)?),
        (libc::SYS_open, creating_at(1, 2)?),
        (libc::SYS_creat, mode_at(1)?),
        (libc::SYS_mknod, mode_at(1)?),
    ]);
    Ok(rules)
}

/// The second filter: `openat2` fails with `ENOSYS` (its mode is in a struct seccomp cannot
/// read; every caller falls back to `openat` on `ENOSYS`).
fn openat2_program(arch: TargetArch) -> Result<BpfProgram, String> {
    let fail = |e: seccompiler::BackendError| format!("cannot build the seccomp filter: {e}");
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(SYS_OPENAT2, Vec::new());
    #[cfg(target_arch = "x86_64")]
    rules.insert(X32 | SYS_OPENAT2, Vec::new());
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::ENOSYS as u32), arch)
        .map_err(fail)?;
    BpfProgram::try_from(filter).map_err(fail)
}

/// Installs the filters on the calling thread (and what it starts). Sets `no_new_privs`.
pub fn apply() -> Result<(), String> {
    let program = program()?;
    let arch =
        TargetArch::try_from(std::env::consts::ARCH).map_err(|e| format!("cannot build the seccomp filter: {e}"))?;
    let openat2 = openat2_program(arch)?;
    seccompiler::apply_filter(&program).map_err(|e| format!("cannot install the seccomp filter: {e}"))?;
    seccompiler::apply_filter(&openat2).map_err(|e| format!("cannot install the seccomp filter: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_refuses_other_families_and_io_uring_on_a_thread() {
        let outcome = std::thread::spawn(|| {
            apply().unwrap();
            let open = |family| {
                rustix::net::socket(family, rustix::net::SocketType::DGRAM, None)
                    .map(drop)
                    .map_err(|e| e.raw_os_error())
            };
            (
                open(rustix::net::AddressFamily::UNIX),
                open(rustix::net::AddressFamily::INET),
                open(rustix::net::AddressFamily::PACKET),
                open(rustix::net::AddressFamily::VSOCK),
            )
        })
        .join()
        .unwrap();
        assert_eq!(outcome, (Ok(()), Ok(()), Err(libc::EPERM), Err(libc::EPERM)));
    }

    #[test]
    #[allow(clippy::disallowed_methods)]
    fn no_setuid_or_setgid_file_can_be_made() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().to_path_buf();
        let outcome = std::thread::spawn(move || {
            apply().unwrap();
            let errno = |r: rustix::io::Result<()>| r.map_err(|e| e.raw_os_error());
            let at = |name: &str| path.join(name);
            let open = |name: &str, mode: u32| {
                errno(
                    rustix::fs::open(
                        at(name),
                        rustix::fs::OFlags::CREATE | rustix::fs::OFlags::WRONLY,
                        rustix::fs::Mode::from_raw_mode(mode),
                    )
                    .map(drop),
                )
            };
            let plain = open("plain", 0o755);
            let setuid = open("setuid", 0o4755);
            let setgid = open("setgid", 0o2755);
            let chmod = |mode: u32| errno(rustix::fs::chmod(at("plain"), rustix::fs::Mode::from_raw_mode(mode)));
            (plain, setuid, setgid, chmod(0o700), chmod(0o4700), chmod(0o2700))
        })
        .join()
        .unwrap();
        let eperm = Err(libc::EPERM);
        assert_eq!(outcome, (Ok(()), eperm, eperm, Ok(()), eperm, eperm));
    }
}
