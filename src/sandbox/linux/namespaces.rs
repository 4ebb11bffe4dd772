//! The namespaces a command runs in: mount and PID always, network when denied, and a user
//! namespace mapping only the caller's own ids whenever the caller is not root (root creates
//! the others directly and its init drops every capability instead). Then loopback is brought
//! up in a new network namespace with one netlink message.
#![allow(clippy::disallowed_methods)]

use std::path::Path;

use nix::sched::{CloneFlags, unshare};
use rustix::net::{AddressFamily, RecvFlags, SendFlags, SocketFlags, SocketType};

/// Enters new mount and PID namespaces (and a network namespace of its own unless the command
/// shares the machine's, `own_network`). The PID namespace applies to the children created
/// from now on: the next one is its PID 1.
pub fn enter(own_network: bool) -> Result<(), String> {
    let mut flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWPID;
    if own_network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if rustix::process::geteuid().is_root() && unshare(flags).is_ok() {
        return Ok(());
    }
    let (uid, gid) = (rustix::process::getuid().as_raw(), rustix::process::getgid().as_raw());
    unshare(CloneFlags::CLONE_NEWUSER | flags).map_err(|e| {
        format!(
            "cannot create the command's namespaces ({e}); unprivileged user namespaces are disabled or blocked here (e.g. `kernel.unprivileged_userns_clone=0`, an AppArmor restriction, or a container's seccomp profile)"
        )
    })?;
    let write = |file: &str, text: String| {
        std::fs::write(Path::new("/proc/self").join(file), text).map_err(|e| format!("cannot write `{file}`: {e}"))
    };
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))?;
    Ok(())
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
