//! The namespaces a command runs in: mount, PID and IPC always, network unless it shares the
//! machine's (`host`), and a user
//! namespace mapping only the caller's own ids whenever the caller is not root (root creates
//! the others directly and its init drops every capability instead). Then loopback is brought
//! up in a new network namespace with one netlink message.
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use nix::sched::{CloneFlags, unshare};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

/// What the kernel said, worded for the case at hand: this process inside another sandbox (a
/// seccomp filter and `no_new_privs` already on it, as Anthropic's sandbox-runtime `srt`,
/// bubblewrap or a container set), or user namespaces disabled on the machine.
pub fn blocked(what: &str, error: nix::Error) -> String {
    if inside_another_sandbox() {
        return format!(
            "cannot create {what} ({error}): this server runs inside another sandbox (a seccomp filter and no_new_privs are already set on it, as Anthropic's sandbox-runtime `srt`, bubblewrap or a container set), which does not let it make the namespaces its commands run in; run the server outside that sandbox, or start it with `--sandbox full-access` so that the outer sandbox alone confines its commands (under `srt` also set `\"allowAllUnixSockets\": true` in its `network` settings: the server reaches its commands' keeper over a Unix socket)"
        );
    }
    format!(
        "cannot create {what} ({error}); unprivileged user namespaces are disabled or blocked here (e.g. `kernel.unprivileged_userns_clone=0`, an AppArmor restriction, or a container's seccomp profile)"
    )
}

/// Whether this process already runs under someone else's seccomp filter with no_new_privs
/// (Anthropic's sandbox-runtime, bubblewrap, many containers): it then cannot make namespaces.
pub fn inside_another_sandbox() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| status.lines().find_map(|l| l.strip_prefix(name)).map(str::trim).unwrap_or_default();
    field("NoNewPrivs:") == "1" && field("Seccomp:") == "2"
}

/// Enters new mount and PID namespaces (and a network namespace of its own unless the command
/// shares the machine's, `own_network`). The PID namespace applies to the children created
/// from now on: the next one is its PID 1.
pub fn enter(own_network: bool) -> Result<(), String> {
    // IPC too: no SysV shared memory, semaphores or message queues of the user's other
    // processes (nor POSIX message queues) are reachable.
    let mut flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWIPC;
    if own_network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if rustix::process::geteuid().is_root() && unshare(flags).is_ok() {
        return Ok(());
    }
    let (uid, gid) = (rustix::process::getuid().as_raw(), rustix::process::getgid().as_raw());
    unshare(CloneFlags::CLONE_NEWUSER | flags).map_err(|e| blocked("the command's namespaces", e))?;
    map_ids(uid, gid)
}

/// Enters what a session's holder keeps (`holder.rs`): a user namespace mapping the caller's
/// own ids and a mount namespace (root: only a mount namespace), the machine's mounts made
/// slaves, so what the holder mounts stays in it while mounts made later on the machine still
/// reach it.
pub fn enter_holder() -> Result<(), String> {
    if rustix::process::geteuid().is_root() {
        unshare(CloneFlags::CLONE_NEWNS).map_err(|e| blocked("the session's mount namespace", e))?;
    } else {
        let (uid, gid) = (rustix::process::getuid().as_raw(), rustix::process::getgid().as_raw());
        unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNS)
            .map_err(|e| blocked("the session's namespaces", e))?;
        map_ids(uid, gid)?;
    }
    nix::mount::mount(
        None::<&str>,
        "/",
        None::<&str>,
        nix::mount::MsFlags::MS_REC | nix::mount::MsFlags::MS_SLAVE,
        None::<&str>,
    )
    .map_err(|e| format!("cannot make the session's mounts slaves: {e}"))
}

/// Joins the user (unless root) and mount namespaces of the session's holder `pid`, then
/// enters new mount, PID and IPC namespaces (and network unless `own_network` is false)
/// inside them: the command sees the holder's mounts (its temp tmpfs) and changes none.
pub fn join(pid: u32, own_network: bool) -> Result<(), String> {
    use std::os::fd::AsFd;
    let open = |kind: &str| {
        std::fs::File::open(format!("/proc/{pid}/ns/{kind}"))
            .map_err(|e| format!("cannot reach the session's namespaces ({kind}: {e}); the session may have ended"))
    };
    let (user, mnt) = (open("user")?, open("mnt")?);
    if !rustix::process::geteuid().is_root() {
        nix::sched::setns(user.as_fd(), CloneFlags::CLONE_NEWUSER)
            .map_err(|e| format!("cannot join the session's user namespace: {e}"))?;
    }
    nix::sched::setns(mnt.as_fd(), CloneFlags::CLONE_NEWNS)
        .map_err(|e| format!("cannot join the session's mount namespace: {e}"))?;
    let mut flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID | CloneFlags::CLONE_NEWIPC;
    if own_network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(|e| format!("cannot create the command's namespaces ({e})"))
}

/// Maps only the caller's own ids in its new user namespace.
fn map_ids(uid: u32, gid: u32) -> Result<(), String> {
    let write = |file: &str, text: String| {
        std::fs::write(Path::new("/proc/self").join(file), text).map_err(|e| format!("cannot write `{file}`: {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))
}

/// `RTM_NEWLINK` asking for `IFF_UP` on interface 1 (`lo` in a new network namespace):
/// `nlmsghdr` (16 bytes) then `ifinfomsg` (16 bytes), native endian.
fn link_up_message() -> [u8; 32] {
    const RTM_NEWLINK: u16 = 16;
    const NLM_F_REQUEST: u16 = 1;
    const NLM_F_ACK: u16 = 4;
    const IFF_UP: u32 = 1;
    let mut msg = [0u8; 32];
    msg[0..4].copy_from_slice(&32u32.to_ne_bytes());
    msg[4..6].copy_from_slice(&RTM_NEWLINK.to_ne_bytes());
    msg[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    msg[8..12].copy_from_slice(&1u32.to_ne_bytes());
    // ifinfomsg: family AF_UNSPEC, pad, type 0, then index, flags, change.
    msg[20..24].copy_from_slice(&1i32.to_ne_bytes());
    msg[24..28].copy_from_slice(&IFF_UP.to_ne_bytes());
    msg[28..32].copy_from_slice(&IFF_UP.to_ne_bytes());
    msg
}

/// Brings up loopback in the current (new) network namespace, so the command can serve and
/// reach its own local servers; the kernel gives it 127.0.0.1 and ::1 when it comes up.
pub fn loopback_up() -> Result<(), String> {
    let fail = |what: &str, e: rustix::io::Errno| format!("cannot bring up loopback ({what}: {e})");
    let socket = rustix::net::socket_with(AddressFamily::NETLINK, SocketType::RAW, SocketFlags::CLOEXEC, None)
        .map_err(|e| fail("socket", e))?;
    let kernel = rustix::net::netlink::SocketAddrNetlink::new(0, 0);
    rustix::net::sendto(&socket, &link_up_message(), SendFlags::empty(), &kernel).map_err(|e| fail("send", e))?;
    let mut reply = [0u8; 256];
    let (_, n) = rustix::net::recv(&socket, &mut reply[..], RecvFlags::empty()).map_err(|e| fail("receive", e))?;
    // NLMSG_ERROR (2) carries the result: 0 is the acknowledgement, else a negated errno.
    let kind = u16::from_ne_bytes([reply[4], reply[5]]);
    let code = if n >= 20 { i32::from_ne_bytes([reply[16], reply[17], reply[18], reply[19]]) } else { -1 };
    if kind != 2 || code != 0 {
        return Err(format!("cannot bring up loopback (netlink answered type {kind}, error {code})"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_message_asks_for_lo_up_with_an_ack() {
        let msg = link_up_message();
        assert_eq!(u32::from_ne_bytes(msg[0..4].try_into().unwrap()), 32);
        assert_eq!(u16::from_ne_bytes(msg[4..6].try_into().unwrap()), 16);
        assert_eq!(u16::from_ne_bytes(msg[6..8].try_into().unwrap()), 5);
        assert_eq!(i32::from_ne_bytes(msg[20..24].try_into().unwrap()), 1);
        assert_eq!(u32::from_ne_bytes(msg[24..28].try_into().unwrap()), 1);
    }
}
