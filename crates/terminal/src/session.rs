//! A background command or PTY session: its process group, its output log (and rendered
//! screen for a PTY), its status, and how to wait for output and end it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[cfg(unix)]
use tokio::io::AsyncWriteExt;
use tokio::sync::watch;

use crate::log::OutputLog;
use crate::process::{self, KILL_GRACE, Launch, Signal, Status, group_alive, signal_group};

/// What kind of session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A command started with `background: true`, or a finished foreground command kept for
    /// paging its output.
    Command,
    /// An interactive program on a PTY.
    Pty,
}

impl Kind {
    /// `command` or `pty`.
    pub fn word(self) -> &'static str {
        match self {
            Self::Command => "command",
            Self::Pty => "pty",
        }
    }
}

/// One session.
pub struct TermSession {
    /// Its id, e.g. `t3`.
    pub id: String,
    /// The `delegate` sub-agent that started it, when one did: only it (and the client) may
    /// use it.
    pub owner: std::sync::OnceLock<u64>,
    /// Its kind.
    pub kind: Kind,
    /// The command line it runs.
    pub command: String,
    /// Its working directory.
    pub cwd: PathBuf,
    /// When it started.
    pub started: Instant,
    /// Its process group.
    pub pgid: u32,
    /// Its output (stdout and stderr together, except for a kept foreground command).
    pub out: Arc<OutputLog>,
    /// A kept foreground command's stderr.
    pub err: Option<Arc<OutputLog>>,
    status: watch::Sender<Status>,
    ended_at: Mutex<Option<Instant>>,
    /// Where the next `read_output` without `since` starts, per stream.
    cursors: [AtomicU64; 2],
    #[cfg(unix)]
    input: Option<tokio::sync::Mutex<PtyInput>>,
    /// The PTY's controller side, to ask which process group holds the terminal.
    #[cfg(unix)]
    terminal: Option<std::os::fd::OwnedFd>,
    screen: Option<Arc<Mutex<vt100::Parser>>>,
    /// Started outside the sandbox by an approved escalation: what is typed into it is asked.
    escalated: std::sync::atomic::AtomicBool,
    /// Started under a sandbox that may write the roots: a call that may only read (a
    /// read-only host thread) types nothing into it.
    writable: std::sync::atomic::AtomicBool,
}

impl std::fmt::Debug for TermSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TermSession")
            .field("id", &self.id)
            .field("kind", &self.kind)
            .field("pgid", &self.pgid)
            .finish_non_exhaustive()
    }
}

/// The writing half of a PTY.
#[cfg(unix)]
type PtyInput = pty_process::OwnedWritePty;

/// Rows of scrollback the rendered screen keeps (output itself is in the log).
#[cfg(unix)]
const SCROLLBACK: usize = 0;

impl TermSession {
    fn new(id: String, kind: Kind, command: String, cwd: PathBuf, pgid: u32, out: Arc<OutputLog>) -> Self {
        Self {
            id,
            owner: std::sync::OnceLock::new(),
            kind,
            command,
            cwd,
            started: Instant::now(),
            pgid,
            out,
            err: None,
            status: watch::channel(Status::Running).0,
            ended_at: Mutex::new(None),
            cursors: [AtomicU64::new(0), AtomicU64::new(0)],
            #[cfg(unix)]
            input: None,
            #[cfg(unix)]
            terminal: None,
            screen: None,
            escalated: std::sync::atomic::AtomicBool::new(false),
            writable: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// Records that the session runs outside the sandbox by an approved escalation.
    pub fn mark_escalated(&self) {
        self.escalated.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether the session runs outside the sandbox by an approved escalation.
    pub fn is_escalated(&self) -> bool {
        self.escalated.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Records that the session was started under a sandbox that may write the roots.
    pub fn mark_writable(&self) {
        self.writable.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether what is typed into the session may write (its sandbox, or an escalation).
    pub fn is_writable(&self) -> bool {
        self.writable.load(std::sync::atomic::Ordering::Relaxed) || self.is_escalated()
    }

    /// A finished foreground command, kept so its full output can be paged.
    pub fn finished(id: String, command: String, cwd: PathBuf, status: Status, logs: [Arc<OutputLog>; 2]) -> Self {
        let [out, err] = logs;
        let mut session = Self::new(id, Kind::Command, command, cwd, 0, out);
        session.err = Some(err);
        session.status.send_replace(status);
        *session.ended_at.get_mut().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
        session
    }

    /// Starts `launch` in the background, stdout and stderr merged into one log.
    pub fn start_background(
        id: String,
        launch: &Launch,
        command: String,
        stdin: Option<Vec<u8>>,
        ring_bytes: usize,
    ) -> std::io::Result<Arc<Self>> {
        let mut piped = launch.spawn_piped(stdin.is_some(), true)?;
        let out = Arc::new(OutputLog::new(ring_bytes));
        let session = Arc::new(Self::new(id, Kind::Command, command, launch.cwd.clone(), piped.pgid, out.clone()));
        if let (Some(input), Some(pipe)) = (stdin, piped.child.stdin.take()) {
            tokio::spawn(process::feed(pipe, input));
        }
        tokio::spawn(process::pump(piped.out, out, |_| {}));
        session.clone().watch_exit(launch.clone(), piped.child);
        Ok(session)
    }

    /// Starts `launch` on a PTY of `rows` × `cols`, rendering its screen as output arrives.
    #[cfg(unix)]
    pub fn start_pty(
        id: String,
        launch: &Launch,
        command: String,
        (rows, cols): (u16, u16),
        ring_bytes: usize,
    ) -> std::io::Result<Arc<Self>> {
        let (child, pgid, pty) = launch.spawn_pty(rows, cols)?;
        let terminal = std::os::fd::AsFd::as_fd(&pty).try_clone_to_owned()?;
        let (reader, writer) = pty.into_split();
        let out = Arc::new(OutputLog::new(ring_bytes));
        let size = |n: u16| std::num::NonZeroU16::new(n).unwrap_or(std::num::NonZeroU16::MIN);
        let screen = Arc::new(Mutex::new(vt100::Parser::new(size(rows), size(cols), SCROLLBACK)));
        let mut session = Self::new(id, Kind::Pty, command, launch.cwd.clone(), pgid, out.clone());
        session.input = Some(tokio::sync::Mutex::new(writer));
        session.terminal = Some(terminal);
        session.screen = Some(screen.clone());
        let session = Arc::new(session);
        tokio::spawn(process::pump(reader, out, move |bytes| {
            screen.lock().unwrap_or_else(|p| p.into_inner()).process(bytes);
        }));
        session.clone().watch_exit(launch.clone(), child);
        Ok(session)
    }

    /// Records the exit status when the leader exits.
    fn watch_exit(self: Arc<Self>, launch: Launch, mut child: tokio::process::Child) {
        let running = toolbelt_mcp_core::metrics::RunningCommand::start();
        tokio::spawn(async move {
            let _running = running;
            let status = launch.wait(&mut child).await.unwrap_or(Status::Exited(-1));
            *self.ended_at.lock().unwrap_or_else(|p| p.into_inner()) = Some(Instant::now());
            self.status.send_replace(status);
        });
    }

    /// The current status.
    pub fn status(&self) -> Status {
        *self.status.borrow()
    }

    /// Whether the leader is still running.
    pub fn is_running(&self) -> bool {
        self.status() == Status::Running
    }

    /// When it ended, if it has.
    pub fn ended_at(&self) -> Option<Instant> {
        *self.ended_at.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The log of `stream` (0 = stdout or the combined output, 1 = a kept command's stderr).
    pub fn log(&self, stream: usize) -> Option<&Arc<OutputLog>> {
        if stream == 0 { Some(&self.out) } else { self.err.as_ref() }
    }

    /// Where the next read of `stream` starts by default.
    pub fn cursor(&self, stream: usize) -> u64 {
        self.cursors[stream.min(1)].load(Ordering::Relaxed)
    }

    /// Moves the default read position of `stream`.
    pub fn set_cursor(&self, stream: usize, at: u64) {
        self.cursors[stream.min(1)].store(at, Ordering::Relaxed);
    }

    /// The rendered screen (PTY sessions): its text, cursor position and whether a
    /// full-screen program switched to the alternate screen.
    pub fn screen(&self) -> Option<(String, (u16, u16), bool)> {
        let parser = self.screen.as_ref()?.lock().unwrap_or_else(|p| p.into_inner());
        let screen = parser.screen();
        Some((screen.contents(), screen.cursor_position(), screen.alternate_screen()))
    }

    /// Whether the program asked for application cursor keys (arrow keys then send `ESC O`).
    #[cfg(unix)]
    pub fn application_cursor(&self) -> bool {
        self.screen.as_ref().is_some_and(|s| s.lock().unwrap_or_else(|p| p.into_inner()).screen().application_cursor())
    }

    /// Writes to the PTY. `None` if this session takes no input.
    #[cfg(unix)]
    pub async fn write(&self, bytes: &[u8]) -> Option<std::io::Result<()>> {
        let input = self.input.as_ref()?;
        let mut writer = input.lock().await;
        Some(writer.write_all(bytes).await.and(writer.flush().await))
    }

    /// Waits until output arrives past `since` or the session ends, for at most `wait`.
    pub async fn wait_for_output(&self, since: u64, wait: Duration) {
        let mut output = self.out.subscribe();
        let mut status = self.status.subscribe();
        let deadline = tokio::time::Instant::now() + wait;
        while self.out.total() <= since && !self.out.is_closed() && tokio::time::Instant::now() < deadline {
            tokio::select! {
                _ = output.changed() => {}
                _ = status.changed() => if !self.is_running() { break },
                _ = tokio::time::sleep_until(deadline) => break,
            }
        }
    }

    /// Whether a job other than the session's own process group holds its terminal: a
    /// command its shell started and has not finished (false for a session without a PTY).
    #[cfg(unix)]
    pub fn foreground_job(&self) -> bool {
        self.terminal
            .as_ref()
            .and_then(|fd| rustix::termios::tcgetpgrp(fd).ok())
            .is_some_and(|group| group.as_raw_nonzero().get().unsigned_abs() != self.pgid)
    }

    /// Waits until no output arrived for `quiet`, the session ended, or `wait` passed; the
    /// first output may take all of `wait`.
    pub async fn wait_until_quiet(&self, since: u64, wait: Duration, quiet: Duration) {
        let deadline = tokio::time::Instant::now() + wait;
        self.wait_for_output(since, wait).await;
        let mut output = self.out.subscribe();
        while self.is_running() && !self.out.is_closed() && tokio::time::Instant::now() < deadline {
            let settle = (tokio::time::Instant::now() + quiet).min(deadline);
            tokio::select! {
                changed = output.changed() => if changed.is_err() { break },
                _ = tokio::time::sleep_until(settle) => break,
            }
        }
    }

    /// Sends `signal` to the group. For a polite signal, `SIGKILL` follows after the grace
    /// period if the leader is still running; whatever is left of the group after the leader
    /// ended is killed too. Returns the final (or current) status.
    pub async fn kill(&self, signal: Signal) -> Status {
        if !self.is_running() && !group_alive(self.pgid) {
            return self.status();
        }
        signal_group(self.pgid, signal);
        if matches!(signal, Signal::STOP | Signal::CONT | Signal::USR1 | Signal::USR2) {
            return self.status();
        }
        if !self.wait_for_exit(KILL_GRACE).await {
            signal_group(self.pgid, Signal::KILL);
            self.wait_for_exit(Duration::from_secs(1)).await;
        }
        if group_alive(self.pgid) {
            signal_group(self.pgid, Signal::KILL);
        }
        // The group's end is what its last fold waits for: the caller's reply (and the undo
        // history) then holds what it wrote up to its end.
        crate::process::wait_group_gone(self.pgid, Duration::from_millis(10), Some(Duration::from_secs(1))).await;
        self.status()
    }

    /// Waits up to `wait` for the leader to exit; true if it did.
    pub async fn wait_for_exit(&self, wait: Duration) -> bool {
        let mut status = self.status.subscribe();
        let waited = tokio::time::timeout(wait, status.wait_for(|s| *s != Status::Running)).await;
        matches!(waited, Ok(Ok(_)))
    }

    /// Bytes of output held in memory.
    pub fn memory_bytes(&self) -> usize {
        self.out.memory_bytes() + self.err.as_ref().map_or(0, |e| e.memory_bytes())
    }

    /// Bytes of output spilled to disk.
    pub fn disk_bytes(&self) -> u64 {
        self.out.spilled_bytes() + self.err.as_ref().map_or(0, |e| e.spilled_bytes())
    }

    /// Drops spilled output (when the session is forgotten).
    pub fn discard(&self) {
        self.out.discard_spill();
        if let Some(err) = &self.err {
            err.discard_spill();
        }
    }
}
