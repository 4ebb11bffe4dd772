//! `__sandbox-exec`: the helper the server starts for each sandboxed command. Single-threaded
//! from `main` on, it leaves the server's session (`setsid`: no controlling terminal to
//! inject keystrokes into), dies with the server, enters the command's namespaces, builds its
//! view of the filesystem and sets its limits, then forks init, PID 1 of the new PID
//! namespace (`init.rs`), and waits for its report. It ends as the command ended: with its exit
//! code, or by its signal.

use std::ffi::OsString;
use std::io::{BufRead, Read, Write};
use std::os::unix::net::UnixStream;
use std::process::ExitCode;

use nix::sys::signal::{SigSet, Signal};
use rustix::process::{Pid, WaitOptions};

use crate::contract::Contract;
use crate::linux::watch::Watch;
use crate::linux::{InitArgs, Timings, init, limits, mounts, namespaces, setup_failed};

/// The helper's entry point. Returns only to exit.
pub fn main(args: Vec<OsString>) -> ExitCode {
    let mut timings = Timings::start("helper");
    let (contract, program, rest) = match parse(args) {
        Ok(parsed) => parsed,
        Err(message) => return setup_failed(&message),
    };
    // If the server dies abruptly, its commands die with it (and never start if it is gone).
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    if rustix::process::getppid().map(|p| p.as_raw_nonzero().get() as u32) != Some(contract.parent) {
        return setup_failed("the server exited before the command started");
    }
    // A PTY session's helper leads its session already; a piped one leaves the server's.
    let _ = rustix::process::setsid();
    timings.step("parse");
    let (status, init, watch) = match prepare(&contract, program, rest, &mut timings) {
        Ok(started) => started,
        Err(message) => return setup_failed(&message),
    };
    let ended = wait(status, init, watch);
    timings.step("wait");
    ended
}

/// Namespaces, the view, limits, the status channel and init (forked: in the child this never
/// returns). Returns the helper's end of the status channel, init's pid and the watch over the
/// secrets.
fn prepare(
    contract: &Contract,
    program: OsString,
    rest: Vec<OsString>,
    timings: &mut Timings,
) -> Result<(UnixStream, Pid, Option<Watch>), String> {
    match contract.join {
        Some(holder) => namespaces::join(holder, contract.network.own_namespace())?,
        None => namespaces::enter(contract.network.own_namespace())?,
    }
    timings.step("namespaces");
    if contract.network.own_namespace() {
        namespaces::loopback_up()?;
        timings.step("loopback");
    }
    // The proxy listens on the command's own loopback, served by the server (before the
    // mounts hide the state dir, where the server's socket is).
    if let Some(proxy) = &contract.proxy {
        crate::proxy::register::hand_over(&proxy.socket, &proxy.token, proxy.port)?;
        timings.step("proxy");
    }
    let temps = mounts::apply(contract)?;
    // From here to the command's end, a secret that appears is hidden too.
    let watch = Watch::start(&contract.watch, std::env::var_os("HOME").map(std::path::PathBuf::from))?;
    timings.step("mounts");
    limits::apply(&contract.limits)?;
    // Init reports how the command ended over a socket pair made here (close-on-exec: the
    // command never holds it, so nothing it does can speak for init).
    let (status, report) = UnixStream::pair().map_err(|e| format!("cannot open the status channel: {e}"))?;
    let mut writable = contract.writable.clone();
    writable.extend(temps);
    let plan = InitArgs { abi: contract.abi, writable, cwd: contract.cwd.clone() };
    // Init starts with these blocked (it waits for them); it unblocks them for the command.
    forwarded().thread_block().map_err(|e| format!("cannot block signals: {e}"))?;
    match fork::fork() {
        Ok(fork::Fork::Child) => {
            // Init and the command never hold the watch: what they hold, a command could
            // take (`pidfd_getfd`) and switch off.
            drop(status);
            drop(watch);
            std::process::exit(i32::from(init::run(&plan, program, rest, report)))
        }
        Ok(fork::Fork::Parent(pid)) => {
            drop(report);
            timings.step("fork-init");
            let pid = Pid::from_raw(pid).ok_or("the kernel gave init no pid")?;
            Ok((status, pid, watch))
        }
        Err(err) => Err(format!("cannot start the sandbox's init: {err}")),
    }
}

/// Signals the helper and init block and wait for: children ending, and the ones the server
/// sends a command's group (init passes them on to a command that left the group).
pub fn forwarded() -> SigSet {
    let mut set = SigSet::empty();
    for signal in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
        Signal::SIGQUIT,
        Signal::SIGUSR1,
        Signal::SIGUSR2,
    ] {
        set.add(signal);
    }
    set
}

/// Waits for init's report of how the command ended, and ends the same way. The report comes
/// once the command and everything it left are gone; init's own exit (and its namespace's
/// teardown) is not waited for: init dies with the helper (parent-death signal).
fn wait(status: UnixStream, init: Pid, mut watch: Option<Watch>) -> ExitCode {
    // Until the report comes, secrets that appear are hidden as they do.
    while let Some(watching) = watch.as_mut() {
        use rustix::event::{PollFd, PollFlags};
        let (reported, changed) = {
            let events = watching.fd();
            let mut ready = [PollFd::new(&status, PollFlags::IN), PollFd::new(&events, PollFlags::IN)];
            match rustix::event::poll(&mut ready, None) {
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break,
                Ok(_) => {}
            }
            (!ready[0].revents().is_empty(), !ready[1].revents().is_empty())
        };
        if reported {
            break;
        }
        if changed {
            watching.changed();
        }
    }
    drop(watch);
    let mut report = String::new();
    let _ = std::io::BufReader::new(status.take(64)).read_line(&mut report);
    let mut words = report.split_whitespace();
    let number = |w: Option<&str>| w.and_then(|n| n.parse::<i32>().ok());
    match (words.next(), number(words.next())) {
        (Some("exit"), Some(code)) => ExitCode::from(code as u8),
        (Some("signal"), Some(signal)) => end_by(signal),
        // No report: init itself was killed (its signal is the command's end) or failed.
        _ => match rustix::process::waitpid(Some(init), WaitOptions::empty()) {
            Ok(Some((_, ended))) => match (ended.exit_status(), ended.terminating_signal()) {
                (Some(code), _) => ExitCode::from(code as u8),
                (None, Some(signal)) => end_by(signal),
                (None, None) => ExitCode::from(super::SETUP_FAILED),
            },
            _ => ExitCode::from(super::SETUP_FAILED),
        },
    }
}

/// Ends this process by `signal` (so the server sees the command's signal), or with
/// `128 + signal` when the signal does not end a process.
fn end_by(signal: i32) -> ExitCode {
    if let Ok(signal) = Signal::try_from(signal) {
        // Only this one: another pending (blocked) signal must not end the helper instead.
        let mut only = SigSet::empty();
        only.add(signal);
        let _ = only.thread_unblock();
        let _ = std::io::stderr().flush();
        let _ = nix::sys::signal::raise(signal);
    }
    ExitCode::from((128 + signal) as u8)
}

fn parse(args: Vec<OsString>) -> Result<(Contract, OsString, Vec<OsString>), String> {
    let mut args = args.into_iter();
    let contract = args.next().ok_or("no contract")?;
    let contract: Contract = serde_json::from_str(&contract.to_string_lossy())
        .map_err(|e| format!("the sandbox contract does not parse: {e}"))?;
    if args.next().is_none_or(|sep| sep != "--") {
        return Err("no `--` before the program".into());
    }
    let program = args.next().ok_or("no program after `--`")?;
    Ok((contract, program, args.collect()))
}
