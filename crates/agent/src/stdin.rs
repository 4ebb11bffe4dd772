//! Lines typed on the terminal for the server's questions, read so that a cancelled question
//! (Ctrl-C) stops reading: the next line goes to the next question, not to a reader left
//! behind. On Unix stdin is polled every 100 ms and read byte by byte (no buffer keeps a line
//! from the next reader); elsewhere it is a plain blocking read.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// Cancels the question being asked on the terminal: it is declined, and stdin is no longer
/// read for it.
#[derive(Debug, Clone, Default)]
pub(crate) struct Cancel(Arc<AtomicU64>);

impl Cancel {
    /// Cancels whatever is being asked now.
    pub(crate) fn now(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    /// A check that turns true once [`Cancel::now`] is called after this.
    pub(crate) fn watch(&self) -> impl Fn() -> bool + Send + 'static {
        let (shared, at) = (self.0.clone(), self.0.load(Ordering::SeqCst));
        move || shared.load(Ordering::SeqCst) != at
    }
}

/// One line from stdin without its end; `None` at the end of input, or once `cancelled`.
#[cfg(unix)]
pub(crate) fn line(cancelled: &dyn Fn() -> bool) -> Option<String> {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    use rustix::io::Errno;
    let stdin = rustix::stdio::stdin();
    let tick = Timespec { tv_sec: 0, tv_nsec: 100_000_000 };
    let mut bytes = Vec::new();
    loop {
        if cancelled() {
            return None;
        }
        let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
        match poll(&mut fds, Some(&tick)) {
            Ok(0) | Err(Errno::INTR) => continue,
            Ok(_) => {}
            Err(_) => return None,
        }
        let mut byte = [0u8; 1];
        match rustix::io::read(stdin, &mut byte) {
            Ok(0) => return None,
            Ok(_) if byte[0] == b'\n' => return Some(String::from_utf8_lossy(&bytes).into_owned()),
            Ok(_) => bytes.push(byte[0]),
            Err(Errno::INTR | Errno::AGAIN) => {}
            Err(_) => return None,
        }
    }
}

/// One line from stdin without its end; `None` at the end of input. (Windows: a console read
/// cannot be polled here, so a cancelled question's reader takes the next line.)
#[cfg(not(unix))]
pub(crate) fn line(_cancelled: &dyn Fn() -> bool) -> Option<String> {
    let mut line = String::new();
    match std::io::stdin().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_watch_sees_only_later_cancels() {
        let cancel = Cancel::default();
        cancel.now();
        let watch = cancel.watch();
        assert!(!watch());
        cancel.now();
        assert!(watch());
        assert!(!cancel.watch()());
    }
}
