//! Starting commands (through the sandbox re-exec unless in `full-access`), each in its own
//! process group (Windows: its own Job Object, `jobs.rs`), and signalling those groups.

#[cfg(target_os = "linux")]
pub mod keep;

use std::ffi::OsString;
use std::io;
use std::path::PathBuf;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

#[cfg(unix)]
pub use rustix::process::Signal;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Child;

#[cfg(windows)]
pub use crate::jobs::Signal;

use crate::log::OutputLog;
use toolbelt_mcp_sandbox::exec::Confinement;

/// How long a signalled group has to exit before it gets `SIGKILL`.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// What to start, where, with what environment and confinement.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program (a shell).
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// The working directory (inside the roots).
    pub cwd: PathBuf,
    /// The complete environment.
    pub env: Vec<(OsString, OsString)>,
    /// The sandbox, or `None` in `full-access` mode.
    pub confinement: Option<Confinement>,
    /// Where its writes beneath the roots are staged (Linux, `workspace-write`).
    #[cfg(target_os = "linux")]
    pub stage: Option<Arc<toolbelt_mcp_sandbox::stage::Stage>>,
    /// A command whose writes no stage records (macOS; Linux with `stage_writes = false`), as
    /// the shadow's records name it: compared with the shadow of the roots at its end.
    #[cfg(unix)]
    pub recorded_as: Option<toolbelt_mcp_sandbox::undoable::Command>,
    /// Its way to other hosts (the proxy; `allow` and `allowlist` networks). Held as long as
    /// the command may run.
    #[cfg(unix)]
    pub link: Option<Arc<toolbelt_mcp_sandbox::proxy::Link>>,
    /// The session's namespace holder, whose temp tmpfs the command joins.
    #[cfg(target_os = "linux")]
    pub join: Option<u32>,
    /// The keeper an unsandboxed command runs under (Linux): nothing it starts outlives the
    /// server.
    #[cfg(target_os = "linux")]
    pub kept: Option<Arc<keep::Kept>>,
}

/// A started piped command.
pub struct Piped {
    /// The process (the group leader).
    pub child: Child,
    /// Its process group.
    pub pgid: u32,
    /// stdout (with stderr too when merged).
    pub out: Output,
    /// stderr, when kept apart.
    pub err: Option<Output>,
}

/// A command's output stream: a pipe read by the runtime's own poller on Unix.
#[cfg(unix)]
pub type Output = tokio::net::unix::pipe::Receiver;
/// A command's output stream: stdout, stderr, or both read as they come (Windows).
#[cfg(windows)]
pub type Output = std::pin::Pin<Box<dyn AsyncRead + Send>>;

/// How a process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Still running.
    Running,
    /// Exited with a code.
    Exited(i32),
    /// Ended by a signal.
    Signaled(i32),
}

impl Status {
    /// The status of a finished process.
    pub fn of(status: ExitStatus) -> Self {
        #[cfg(unix)]
        let signal = std::os::unix::process::ExitStatusExt::signal(&status);
        #[cfg(windows)]
        let signal = None;
        match (status.code(), signal) {
            (Some(code), _) => Self::Exited(code),
            (None, Some(signal)) => Self::Signaled(signal),
            (None, None) => Self::Exited(-1),
        }
    }

    /// `running`, `exited`, or `killed`.
    pub fn word(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Exited(_) => "exited",
            Self::Signaled(_) => "killed",
        }
    }

    /// The exit code, if it exited.
    pub fn code(self) -> Option<i32> {
        if let Self::Exited(code) = self { Some(code) } else { None }
    }

    /// The signal, if one ended it.
    pub fn signal(self) -> Option<i32> {
        if let Self::Signaled(signal) = self { Some(signal) } else { None }
    }
}

impl Launch {
    /// The command line as spawned: wrapped in `__sandbox-exec` when confined.
    fn command(&self) -> tokio::process::Command {
        let (program, args) = match &self.confinement {
            Some(confinement) => {
                #[cfg(target_os = "linux")]
                let per_command = toolbelt_mcp_sandbox::contract::PerCommand {
                    join: self.join,
                    stage: self.stage.as_ref().map_or_else(Vec::new, |stage| stage.layers().to_vec()),
                    proxy: self.link.as_ref().map(|link| link.contract()),
                };
                #[cfg(all(unix, not(target_os = "linux")))]
                let per_command = toolbelt_mcp_sandbox::contract::PerCommand {
                    proxy: self.link.as_ref().map(|link| link.contract()),
                    ..Default::default()
                };
                #[cfg(not(unix))]
                let per_command = toolbelt_mcp_sandbox::contract::PerCommand::default();
                let wrapped = confinement.wrap(&self.program, &self.args, &self.cwd, per_command);
                (wrapped.program, wrapped.args)
            }
            #[cfg(target_os = "linux")]
            None if self.kept.is_some() => {
                let kept = self.kept.as_ref().map(|kept| kept.command(&self.program, &self.args));
                let (program, args) = kept.unwrap_or_default();
                (program, args)
            }
            None => (PathBuf::from(&self.program), self.args.clone()),
        };
        let mut command = tokio::process::Command::new(program);
        // `cmd /s /c "LINE"` runs LINE exactly as typed (it strips the outer quotes).
        #[cfg(windows)]
        if is_cmd_line(&args) {
            let line = format!("/d /s /c \"{}\"", args[3].to_string_lossy());
            command.raw_arg(line);
        } else {
            command.args(&args);
        }
        #[cfg(unix)]
        command.args(&args);
        command.current_dir(&self.cwd).env_clear().envs(self.env.iter().map(|(k, v)| (k, v)));
        command.kill_on_drop(false);
        command
    }

    /// Whether the server gives the command its process group (everything but the Linux
    /// sandbox's helper, which starts a session and, with its PID namespace, ends all it ran).
    pub fn gets_own_group(&self) -> bool {
        self.confinement.is_none() || !toolbelt_mcp_sandbox::backend::OWN_SESSION
    }

    /// Starts the command in a new process group with stdout and stderr on pipes (one pipe
    /// for both when `merged`), stdin from `/dev/null` unless `stdin` is piped.
    #[cfg(unix)]
    pub fn spawn_piped(&self, stdin: bool, merged: bool) -> io::Result<Piped> {
        let mut command = self.command();
        // The Linux sandbox's helper starts a session of its own (`setsid`, which a group
        // leader cannot); any other command gets a group of its own here.
        if self.gets_own_group() {
            command.process_group(0);
        }
        command.stdin(if stdin { Stdio::piped() } else { Stdio::null() });
        let (out_read, out_write) = io::pipe()?;
        let err = if merged {
            command.stderr(out_write.try_clone()?);
            None
        } else {
            let (err_read, err_write) = io::pipe()?;
            command.stderr(err_write);
            Some(err_read)
        };
        command.stdout(out_write);
        let child = command.spawn()?;
        // The write ends now live only in the child (dropped here with `command`).
        drop(command);
        let pgid = child.id().ok_or_else(|| io::Error::other("the command exited before it could be tracked"))?;
        self.track(pgid);
        let receiver = |read: io::PipeReader| Output::from_owned_fd(std::os::fd::OwnedFd::from(read));
        let out = receiver(out_read)?;
        let err = err.map(receiver).transpose()?;
        Ok(Piped { child, pgid, out, err })
    }

    /// Starts the command in a Job Object of its own with stdout and stderr piped (read as
    /// one stream when `merged`), stdin closed unless `stdin` is piped; no console window.
    #[cfg(windows)]
    pub fn spawn_piped(&self, stdin: bool, merged: bool) -> io::Result<Piped> {
        use futures::StreamExt;
        use tokio_util::io::{ReaderStream, StreamReader};
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        const CREATE_NO_WINDOW: u32 = 0x0800_0000;
        let mut command = self.command();
        command.creation_flags(CREATE_NEW_PROCESS_GROUP | CREATE_NO_WINDOW);
        command.stdin(if stdin { Stdio::piped() } else { Stdio::null() });
        command.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn()?;
        let pgid = crate::jobs::adopt(&child)?;
        let missing = || io::Error::other("the command's output pipe is missing");
        let stdout = child.stdout.take().ok_or_else(missing)?;
        let stderr = child.stderr.take().ok_or_else(missing)?;
        let (out, err): (Output, Option<Output>) = if merged {
            let both = futures::stream::select(ReaderStream::new(stdout), ReaderStream::new(stderr));
            (Box::pin(StreamReader::new(both.boxed())), None)
        } else {
            (Box::pin(stdout), Some(Box::pin(stderr)))
        };
        Ok(Piped { child, pgid, out, err })
    }

    /// Starts the command on a new PTY (as a session leader, so its own process group).
    #[cfg(unix)]
    pub fn spawn_pty(&self, rows: u16, cols: u16) -> io::Result<(Child, u32, pty_process::Pty)> {
        let (pty, pts) = pty_process::open().map_err(io::Error::other)?;
        pty.resize(pty_process::Size::new(rows, cols)).map_err(io::Error::other)?;
        let child = pty_process::Command::from(self.command()).spawn(pts).map_err(io::Error::other)?;
        let pgid = child.id().ok_or_else(|| io::Error::other("the session exited before it could be tracked"))?;
        self.track(pgid);
        Ok((child, pgid, pty))
    }

    /// Remembers the keeper that leads group `pgid`, if the command has one.
    #[cfg(unix)]
    fn track(&self, _pgid: u32) {
        #[cfg(target_os = "linux")]
        if let Some(kept) = &self.kept {
            keep::track(_pgid, kept);
        }
    }

    /// How the command ended, once it has: its exit, or what its keeper says of it (the
    /// keeper stays while what the command left runs).
    pub async fn wait(&self, child: &mut Child) -> io::Result<Status> {
        #[cfg(target_os = "linux")]
        if let Some(kept) = &self.kept {
            return kept.wait(child).await;
        }
        child.wait().await.map(Status::of)
    }
}

/// The arguments that make `shell` run `command`: `-c COMMAND` (POSIX shells, Git Bash);
/// `cmd.exe` gets `/d /s /c COMMAND` (no AutoRun; its own quoting rules: see
/// [`Launch::command`]) and PowerShell `-NoProfile -NonInteractive -Command COMMAND`.
pub fn shell_args(shell: &str, command: &str) -> Vec<OsString> {
    let name = std::path::Path::new(shell).file_stem().map(|s| s.to_string_lossy().to_ascii_lowercase());
    match name.as_deref() {
        Some("cmd") => vec!["/d".into(), "/s".into(), "/c".into(), command.into()],
        Some("powershell" | "pwsh") => {
            vec!["-NoProfile".into(), "-NonInteractive".into(), "-Command".into(), command.into()]
        }
        _ => vec!["-c".into(), command.into()],
    }
}

/// Whether `args` are `cmd.exe`'s (see [`shell_args`]): its command line is passed as it is,
/// since cmd does not parse the quoting other programs use.
#[cfg_attr(unix, allow(dead_code))]
fn is_cmd_line(args: &[OsString]) -> bool {
    args.len() == 4 && args[..3] == ["/d", "/s", "/c"]
}

/// Copies a stream into a log until it ends.
pub async fn pump(mut reader: impl AsyncRead + Unpin, log: Arc<OutputLog>, mut also: impl FnMut(&[u8])) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                also(&buf[..n]);
                log.append(&buf[..n]);
            }
        }
    }
    log.close();
}

/// Writes `input` to a child's stdin and closes it (a command that does not read it is fine).
pub async fn feed(mut stdin: tokio::process::ChildStdin, input: Vec<u8>) {
    let _ = stdin.write_all(&input).await;
    let _ = stdin.shutdown().await;
}

/// Sends `signal` to every process of group `pgid` (or to its leader, in the moment before a
/// sandbox helper has made the group). False if the group is gone.
#[cfg(unix)]
pub fn signal_group(pgid: u32, signal: Signal) -> bool {
    use rustix::process::Pid;
    // An unsandboxed command's keeper ends the group and whatever left it; `SIGKILL` would
    // end the keeper first.
    #[cfg(target_os = "linux")]
    if signal == Signal::KILL && keep::end(pgid) {
        return true;
    }
    let Some(pid) = Pid::from_raw(pgid as i32) else { return false };
    rustix::process::kill_process_group(pid, signal).is_ok() || rustix::process::kill_process(pid, signal).is_ok()
}

/// Waits until no process of group `pgid` is left, looking every `poll`, for at most `within`
/// (`None`: as long as it takes); true when it is gone.
pub async fn wait_group_gone(pgid: u32, poll: std::time::Duration, within: Option<std::time::Duration>) -> bool {
    let deadline = within.map(|within| tokio::time::Instant::now() + within);
    while group_alive(pgid) {
        if deadline.is_some_and(|deadline| tokio::time::Instant::now() >= deadline) {
            return false;
        }
        tokio::time::sleep(poll).await;
    }
    true
}

/// Whether any process of group `pgid` is still there.
#[cfg(unix)]
pub fn group_alive(pgid: u32) -> bool {
    use rustix::process::Pid;
    Pid::from_raw(pgid as i32).is_some_and(|pid| {
        // The leader (this server's child, reaped as it ends) answers: the group runs. Past
        // it, a zombie left in the group (a PID namespace's init whose parent ended first,
        // handed to a PID 1 that does not reap, as in many containers) answers too: only a
        // member that runs counts.
        rustix::process::test_kill_process(pid).is_ok()
            || (rustix::process::test_kill_process_group(pid).is_ok() && toolbelt_mcp_sandbox::fs::group_running(pgid))
    })
}

/// Ends the job of command `pgid` if `signal` is one that ends a process (Windows).
#[cfg(windows)]
pub fn signal_group(pgid: u32, signal: Signal) -> bool {
    crate::jobs::signal(pgid, signal)
}

/// Whether any process of command `pgid`'s job is still there (Windows).
#[cfg(windows)]
pub fn group_alive(pgid: u32) -> bool {
    crate::jobs::alive(pgid)
}

/// The signal named `name` (`TERM`, `SIGINT`, `kill`, …), if it is one we send.
pub fn signal_named(name: &str) -> Option<Signal> {
    let upper = name.trim().to_ascii_uppercase();
    Some(match upper.strip_prefix("SIG").unwrap_or(&upper) {
        "TERM" => Signal::TERM,
        "KILL" => Signal::KILL,
        "INT" => Signal::INT,
        "HUP" => Signal::HUP,
        "QUIT" => Signal::QUIT,
        "USR1" => Signal::USR1,
        "USR2" => Signal::USR2,
        "STOP" => Signal::STOP,
        "CONT" => Signal::CONT,
        _ => return None,
    })
}

/// Kills group `pgid` with `SIGKILL` when dropped unless disarmed: a call that is dropped
/// mid-way (the server shutting down) leaves no process behind.
pub struct GroupGuard {
    pgid: Option<u32>,
}

impl GroupGuard {
    /// Guards `pgid`.
    pub fn new(pgid: u32) -> Self {
        Self { pgid: Some(pgid) }
    }

    /// The group ended normally: nothing to kill.
    pub fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        if let Some(pgid) = self.pgid {
            signal_group(pgid, Signal::KILL);
        }
    }
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;

    #[test]
    fn each_shell_gets_its_own_way_of_running_a_line() {
        assert_eq!(shell_args("bash", "ls"), ["-c", "ls"]);
        assert_eq!(shell_args("cmd.exe", "dir"), ["/d", "/s", "/c", "dir"]);
        assert!(is_cmd_line(&shell_args("CMD.EXE", "echo \"a b\"")));
        assert_eq!(shell_args("pwsh", "Get-ChildItem")[2..], ["-Command", "Get-ChildItem"]);
        assert!(!is_cmd_line(&shell_args("sh", "x")));
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_named("term"), Some(Signal::TERM));
        assert_eq!(signal_named("SIGKILL"), Some(Signal::KILL));
        assert_eq!(signal_named("bogus"), None);
    }

    #[tokio::test]
    async fn piped_unconfined_command_runs_in_its_own_group() {
        let launch = Launch {
            program: "sh".into(),
            args: vec!["-c".into(), "echo out; echo err >&2; exit 3".into()],
            cwd: std::env::temp_dir(),
            env: vec![("PATH".into(), "/usr/bin:/bin".into())],
            confinement: None,
            #[cfg(target_os = "linux")]
            stage: None,
            #[cfg(unix)]
            recorded_as: None,
            #[cfg(unix)]
            link: None,
            #[cfg(target_os = "linux")]
            join: None,
            #[cfg(target_os = "linux")]
            kept: None,
        };
        let mut piped = launch.spawn_piped(false, false).unwrap();
        assert_ne!(piped.pgid, std::process::id());
        let (out, err) = (Arc::new(OutputLog::new(1024)), Arc::new(OutputLog::new(1024)));
        let status = piped.child.wait().await.unwrap();
        pump(piped.out, out.clone(), |_| {}).await;
        pump(piped.err.unwrap(), err.clone(), |_| {}).await;
        assert_eq!(Status::of(status), Status::Exited(3));
        assert_eq!((out.read(0, 99).bytes, err.read(0, 99).bytes), (b"out\n".to_vec(), b"err\n".to_vec()));
    }
}
