//! How a command's proxy listener reaches the server: the helper, inside the command's new
//! network namespace, listens on the proxy port of its own loopback, and hands that listening
//! socket to the server over a Unix socket in the state dir (`SCM_RIGHTS`, before the state
//! dir is hidden from the command), naming the command by its token. The server accepts on it
//! from then on: connections come from inside the namespace, and the server, outside it,
//! makes the onward ones. Paths go through `/proc/self/fd/N/NAME`, so a long state dir never
//! meets the 108-byte limit of a socket's address.

use std::io::{self, IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};

/// The most a registration's token may be.
const TOKEN_MAX: usize = 128;

/// `dir/name` spelled through a handle of `dir`: `/proc/self/fd/N/name`, short whatever `dir`
/// is. The handle must stay open while the path is used. (Elsewhere than Linux, where no
/// command registers a proxy, the path as it is.)
#[cfg(target_os = "linux")]
fn short_path(path: &Path) -> io::Result<(Option<OwnedFd>, PathBuf)> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::other(format!("`{}` is not a socket path", path.display())));
    };
    let handle =
        rustix::fs::open(dir, rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC, rustix::fs::Mode::empty())?;
    let short = PathBuf::from(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&handle))).join(name);
    Ok((Some(handle), short))
}

#[cfg(not(target_os = "linux"))]
fn short_path(path: &Path) -> io::Result<(Option<OwnedFd>, PathBuf)> {
    Ok((None, path.to_path_buf()))
}

/// Received descriptors are closed on exec (Linux; elsewhere no flag asks for it).
#[cfg(target_os = "linux")]
const RECEIVE_FLAGS: RecvFlags = RecvFlags::CMSG_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const RECEIVE_FLAGS: RecvFlags = RecvFlags::empty();

/// Binds the registration socket at `path` (a stale one from a dead server is replaced).
pub fn bind(path: &Path) -> io::Result<UnixListener> {
    let (_dir, short) = short_path(path)?;
    let _ = crate::fs::remove_file(&short);
    UnixListener::bind(&short)
}

/// In the helper: listens on `127.0.0.1:port` of the command's network namespace and hands
/// the listening socket to the server at `socket` as the command `token`'s, waiting for the
/// server to take it.
pub fn hand_over(socket: &Path, token: &str, port: u16) -> Result<(), String> {
    let fail = |what: &str, e: io::Error| format!("cannot give the command its network proxy ({what}: {e})");
    let listener = std::net::TcpListener::bind((std::net::Ipv4Addr::LOCALHOST, port)).map_err(|e| fail("listen", e))?;
    let (_dir, short) = short_path(socket).map_err(|e| fail("open the server's socket", e))?;
    let mut stream = UnixStream::connect(&short).map_err(|e| fail("reach the server", e))?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    let fds = [listener.as_fd()];
    control.push(SendAncillaryMessage::ScmRights(&fds));
    let message = format!("{token}\n");
    rustix::net::sendmsg(&stream, &[IoSlice::new(message.as_bytes())], &mut control, SendFlags::empty())
        .map_err(|e| fail("send", e.into()))?;
    let mut answer = [0u8; 3];
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).map_err(|e| fail("wait", e))?;
    stream.read_exact(&mut answer).map_err(|e| fail("hear back", e))?;
    if &answer != b"ok\n" {
        return Err("cannot give the command its network proxy: the server did not take it".into());
    }
    Ok(())
}

/// A command's keeper (`linux/keeper.rs`) reaching the server at `socket` as the command
/// `token`'s: the connection it keeps, once the server said it took it.
pub fn connect(socket: &Path, token: &str) -> io::Result<UnixStream> {
    let (_dir, short) = short_path(socket)?;
    let mut stream = UnixStream::connect(&short)?;
    stream.write_all(format!("{token}\n").as_bytes())?;
    let mut answer = [0u8; 3];
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    stream.read_exact(&mut answer)?;
    stream.set_read_timeout(None)?;
    if &answer != b"ok\n" {
        return Err(io::Error::other("the server did not take the registration"));
    }
    Ok(stream)
}

/// On the server: the token a keeper's connection names (one line, read within ten seconds).
pub fn receive_token(stream: &UnixStream) -> io::Result<String> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() <= TOKEN_MAX {
        let mut reader = stream;
        if reader.read(&mut byte)? == 0 || byte[0] == b'\n' {
            break;
        }
        line.push(byte[0]);
    }
    stream.set_read_timeout(None)?;
    String::from_utf8(line).map_err(|_| io::Error::other("a registration's token is not text"))
}

/// On the server: one registration read from `stream`: the command's token and its listening
/// socket.
pub fn receive(stream: &UnixStream) -> io::Result<(String, OwnedFd)> {
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10)))?;
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    let mut bytes = [0u8; TOKEN_MAX + 1];
    let received = rustix::net::recvmsg(stream, &mut [IoSliceMut::new(&mut bytes)], &mut control, RECEIVE_FLAGS)?;
    let mut fd = None;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            for received in fds {
                fd.get_or_insert(received);
            }
        }
    }
    let text = std::str::from_utf8(&bytes[..received.bytes]).map_err(io::Error::other)?;
    let token = text.strip_suffix('\n').ok_or_else(|| io::Error::other("a registration without its token"))?;
    let fd = fd.ok_or_else(|| io::Error::other("a registration without a socket"))?;
    Ok((token.to_string(), fd))
}

/// On the server: answers a registration.
pub fn answer(mut stream: &UnixStream, taken: bool) {
    let _ = stream.write_all(if taken { b"ok\n" } else { b"no\n" });
}
