//! The seccomp filter of every sandboxed command: sockets only of the families ordinary tools
//! use (`AF_UNIX`, `AF_INET`, `AF_INET6`, `AF_NETLINK`); anything else (`AF_PACKET`,
//! `AF_VSOCK`, which no network namespace confines, Bluetooth, …) and `io_uring` (which opens
//! sockets without `socket(2)`) fail with `EPERM`. The network itself is cut by the network
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
    let filter = SeccompFilter::new(rules, SeccompAction::Allow, SeccompAction::Errno(libc::EPERM as u32), arch)
        .map_err(fail)?;
    BpfProgram::try_from(filter).map_err(fail)
}

/// Installs the filter on the calling thread (and what it starts). Sets `no_new_privs`.
pub fn apply() -> Result<(), String> {
    let program = program()?;
    seccompiler::apply_filter(&program).map_err(|e| format!("cannot install the seccomp filter: {e}"))
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
}
