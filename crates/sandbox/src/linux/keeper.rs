//! `__keep`: the keeper of a command that runs without the sandbox (an escalated command the
//! user approved, or every command of a server whose sandbox is off). The server starts it in
//! the command's place; it makes itself the subreaper of everything the command starts, so a
//! daemon that double-forks, calls `setsid` or leaves the group still has the keeper as its
//! ancestor, and it holds a connection to the server. When the command ends it tells the
//! server how, and stays while anything the command left runs; when the server ends that
//! connection (a session killed) or the connection breaks (the server exited, even by
//! `SIGKILL`), it ends every process beneath it: `SIGTERM` first when the server is gone,
//! then each one stopped and killed until none is left.
//!
//! Signals that reach the keeper go on to the command when the command leads a group of its
//! own (an interactive shell does), and to whatever the command left once it has ended.
//! Processes that changed user (`sudo`) cannot be signalled by the server's user: they are
//! the one thing a keeper cannot end.
#![allow(clippy::disallowed_methods)] // the keeper reads `/proc` and runs the command as given

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use tokio::io::AsyncReadExt;
use tokio::signal::unix::{SignalKind, signal};

/// The hidden subcommand: `__keep SOCKET TOKEN -- PROGRAM ARGS…`.
pub const KEEP_SUBCOMMAND: &str = "__keep";

/// The line the server sends to end everything the command left (a session killed).
pub const END: &str = "end";

/// How long processes get to go after `SIGTERM` when the server is gone.
const GRACE: Duration = Duration::from_secs(1);

/// What the keeper is told on its command line.
struct Told {
    socket: PathBuf,
    token: String,
    program: OsString,
    rest: Vec<OsString>,
}

fn parse(mut args: impl Iterator<Item = OsString>) -> Option<Told> {
    let socket = PathBuf::from(args.next()?);
    let token = args.next()?.into_string().ok()?;
    if args.next()? != "--" {
        return None;
    }
    Some(Told { socket, token, program: args.next()?, rest: args.collect() })
}

/// The keeper's entry point. Exits as the command did when nothing it left still runs.
pub fn main(args: impl Iterator<Item = OsString>) -> ExitCode {
    let failed = |message: &str| {
        let _ = writeln!(std::io::stderr(), "toolbelt-mcp: {message}");
        ExitCode::from(crate::linux::SETUP_FAILED)
    };
    let Some(told) = parse(args) else { return failed("the command's keeper was started without its arguments") };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return failed(&format!("the command's keeper cannot start ({err})")),
    };
    match runtime.block_on(keep(told)) {
        Ok(code) => code,
        Err(message) => failed(&message),
    }
}

async fn keep(told: Told) -> Result<ExitCode, String> {
    rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
        .map_err(|e| format!("cannot keep track of the command's processes ({e})"))?;
    let control = crate::proxy::register::connect(&told.socket, &told.token)
        .map_err(|e| format!("the command's keeper cannot reach the server ({e})"))?;
    control.set_nonblocking(true).map_err(|e| e.to_string())?;
    let mut reader =
        tokio::net::UnixStream::from_std(control.try_clone().map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
    let mut report = control;
    // Handlers before the command starts: nothing sent to the group can end the keeper.
    let handle = |kind: SignalKind| signal(kind).map_err(|e| format!("the command's keeper cannot take signals ({e})"));
    let (mut term, mut int, mut hup) =
        (handle(SignalKind::terminate())?, handle(SignalKind::interrupt())?, handle(SignalKind::hangup())?);
    let (mut quit, mut usr1, mut usr2) =
        (handle(SignalKind::quit())?, handle(SignalKind::user_defined1())?, handle(SignalKind::user_defined2())?);
    let mut children = handle(SignalKind::child())?;
    let command = match std::process::Command::new(&told.program).args(&told.rest).spawn() {
        Ok(child) => Pid::from_raw(child.id() as i32),
        Err(err) => {
            let code = if err.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
            let _ = writeln!(std::io::stderr(), "toolbelt-mcp: cannot run `{}`: {err}", told.program.to_string_lossy());
            let _ = writeln!(report, "exit {code}");
            return Ok(ExitCode::from(code));
        }
    };
    // The command's output ends when the command (and what it left) closes it, not the keeper.
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdin(&null);
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
    }
    let mut ended: Option<(&str, i32)> = None;
    let mut buffer = [0u8; 64];
    loop {
        // Reap whatever ended (orphans are the keeper's now).
        let left = reap(command, &mut ended, &mut report);
        if let (Some((how, n)), false) = (ended, left) {
            return Ok(ExitCode::from(if how == "exit" { n as u8 } else { 128 + n as u8 }));
        }
        let forward = |signal: Signal| pass_on(signal, command, ended.is_some());
        tokio::select! {
            _ = children.recv() => {}
            _ = usr1.recv() => forward(Signal::SIGUSR1),
            _ = usr2.recv() => forward(Signal::SIGUSR2),
            _ = term.recv() => forward(Signal::SIGTERM),
            _ = int.recv() => forward(Signal::SIGINT),
            _ = hup.recv() => forward(Signal::SIGHUP),
            _ = quit.recv() => forward(Signal::SIGQUIT),
            read = reader.read(&mut buffer) => {
                // The server ended the connection (it exited, however) or said to end it all.
                let gone = !matches!(read, Ok(n) if n > 0 && buffer[..n].starts_with(END.as_bytes()));
                end_all(gone);
                return Ok(ExitCode::from(137));
            }
        }
    }
}

/// Reaps every child that ended, reporting the command's end once. Returns whether any child
/// is left.
fn reap(command: Pid, ended: &mut Option<(&'static str, i32)>, report: &mut UnixStream) -> bool {
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => return true,
            Ok(status) => {
                if status.pid() == Some(command) && ended.is_none() {
                    *ended = match status {
                        WaitStatus::Exited(_, code) => Some(("exit", code)),
                        WaitStatus::Signaled(_, signal, _) => Some(("signal", signal as i32)),
                        _ => None,
                    };
                    if let Some((how, n)) = ended {
                        let _ = writeln!(report, "{how} {n}");
                    }
                }
            }
            Err(_) => return false,
        }
    }
}

/// A signal the keeper got: the command's group got it too, unless the command leads a group
/// of its own; once the command has ended, what it left gets it.
fn pass_on(signal: Signal, command: Pid, command_ended: bool) {
    if command_ended {
        for pid in descendants() {
            let _ = kill(pid, signal);
        }
        return;
    }
    let group = |pid| nix::unistd::getpgid(pid).ok();
    if group(Some(command)) != group(None) {
        let _ = kill(command, signal);
    }
}

/// Ends every process beneath the keeper: `SIGTERM` and a grace period first when the server
/// is `gone` (a killed session got its `SIGTERM` from the server already), then, round after
/// round, each one stopped (so it cannot fork) and killed, until none is left or only ones
/// it may not signal remain.
fn end_all(gone: bool) {
    if gone {
        for pid in descendants() {
            let _ = kill(pid, Signal::SIGTERM);
        }
        let deadline = Instant::now() + GRACE;
        while Instant::now() < deadline && !descendants().is_empty() {
            reap_quietly();
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    for _ in 0..100 {
        let found = descendants();
        let signalled: Vec<Pid> = found.into_iter().filter(|pid| kill(*pid, Signal::SIGSTOP).is_ok()).collect();
        if signalled.is_empty() {
            return;
        }
        for pid in &signalled {
            let _ = kill(*pid, Signal::SIGKILL);
        }
        reap_quietly();
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Reaps every child that ended, saying nothing.
fn reap_quietly() {
    while matches!(waitpid(None, Some(WaitPidFlag::WNOHANG)), Ok(status) if status != WaitStatus::StillAlive) {}
}

/// Every process beneath this one, from `/proc` (parents read from each `stat`).
pub fn descendants() -> Vec<Pid> {
    let own = std::process::id() as i32;
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<i32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        if let Some(parent) = parent_in_stat(&stat) {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut seen = HashSet::new();
    let mut queue = vec![own];
    while let Some(pid) = queue.pop() {
        for &child in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
            if seen.insert(child) {
                found.push(Pid::from_raw(child));
                queue.push(child);
            }
        }
    }
    found
}

/// The parent pid in a `/proc/PID/stat` line (after the command name, which may hold spaces
/// and parentheses: the last `)` ends it).
fn parent_in_stat(stat: &str) -> Option<i32> {
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_past_any_command_name() {
        assert_eq!(parent_in_stat("42 (sh) S 7 42 42 0"), Some(7));
        assert_eq!(parent_in_stat("42 (a) b) (c) R 9 1"), Some(9));
        assert_eq!(parent_in_stat("garbage"), None);
    }

    #[test]
    fn the_arguments_need_socket_token_and_program() {
        let args = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>().into_iter();
        let told = parse(args(&["/s", "t", "--", "sh", "-c", "x"])).expect("parsed");
        assert_eq!((told.token.as_str(), told.program.to_str(), told.rest.len()), ("t", Some("sh"), 2));
        assert!(parse(args(&["/s", "t", "sh"])).is_none());
        assert!(parse(args(&["/s", "t", "--"])).is_none());
    }
}
