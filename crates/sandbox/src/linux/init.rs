//! Init: PID 1 of a command's PID namespace, the helper's child (forked, not a new exec). It
//! mounts a `/proc` of its own namespace, drops every capability, applies Landlock and the seccomp filter (inherited by
//! everything after), starts the command as PID 2, passes on signals the command's group did
//! not get, reaps every orphan, and when the command ends kills whatever it left behind
//! (daemons, `setsid`, `nohup`, double forks all live in this namespace) and reports how it
//! ended to the helper.
#![allow(clippy::disallowed_methods)] // runs inside the command's sandbox, before the command

use std::ffi::OsString;
use std::io::Write;
use std::os::unix::net::UnixStream;

use nix::mount::{MsFlags, mount};
use nix::sys::signal::Signal;
use rustix::process::{Pid, WaitOptions};

use crate::landlock::{self, Rules};
use crate::linux::{InitArgs, SETUP_FAILED, Timings, caps, helper, report_setup_failure, seccomp};

/// Init, in the helper's child: runs the command and returns init's exit code. `report` is its
/// end of the status channel (close-on-exec, so the command never holds it: nothing the
/// command does can speak for init).
pub fn run(plan: &InitArgs, program: OsString, rest: Vec<OsString>, mut report: UnixStream) -> u8 {
    let mut timings = Timings::start("init");
    let _ = rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL));
    // Not dumpable: the command (same user, no capabilities) can then neither trace init nor
    // take its descriptors (`pidfd_getfd`: its report channel to the helper) nor read its
    // memory or `/proc/1` (its arguments).
    if let Err(err) = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable) {
        return report_setup_failure(&format!("cannot make the sandbox's init private: {err}"));
    }
    if helper_gone(&report) {
        return report_setup_failure("the sandbox helper exited before the command started");
    }
    if let Err(message) = confine(plan, &mut timings) {
        let _ = writeln!(report, "exit {SETUP_FAILED}");
        return report_setup_failure(&message);
    }
    // The helper started init with the forwarded signals blocked (so none is lost before the
    // loop waits for it); the command must start with none blocked, and a spawn keeps the
    // mask. Anything that arrives in between is found by the loop's first reap.
    let forwarded = helper::forwarded();
    let _ = forwarded.thread_unblock();
    let mut command = std::process::Command::new(&program);
    command.args(rest).current_dir(&plan.cwd);
    let child = command.spawn();
    let _ = forwarded.thread_block();
    let child = match child {
        Ok(child) => child,
        Err(err) => {
            let code = if err.kind() == std::io::ErrorKind::NotFound { 127 } else { 126 };
            let _ = writeln!(std::io::stderr(), "toolbelt-mcp: cannot run `{}`: {err}", program.to_string_lossy());
            let _ = writeln!(report, "exit {code}");
            return code;
        }
    };
    timings.step("spawn");
    // The command's output ends when the command (and all it left) does, not when init does.
    if let Ok(null) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/null") {
        let _ = rustix::stdio::dup2_stdin(&null);
        let _ = rustix::stdio::dup2_stdout(&null);
        let _ = rustix::stdio::dup2_stderr(&null);
    }
    let ended = supervise(child.id());
    timings.step("command");
    let _ = writeln!(report, "{ended}");
    0
}

/// `/proc`, capabilities, Landlock, seccomp: everything the command inherits.
fn confine(plan: &InitArgs, timings: &mut Timings) -> Result<(), String> {
    // A `/proc` of this PID namespace: the server and other commands are not in it. Where the
    // kernel refuses (a container that masks parts of `/proc`), the one there is stays.
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    if let Err(err) = mount(Some("proc"), "/proc", Some("proc"), flags, None::<&str>) {
        tracing::debug!(%err, "cannot mount a /proc of the command's own");
    }
    timings.step("proc");
    caps::drop_all()?;
    let rules = Rules { abi: plan.abi, writable: plan.writable.clone() };
    landlock::restrict(&rules).map_err(|e| format!("cannot apply the Landlock ruleset: {e}"))?;
    timings.step("landlock");
    seccomp::apply()?;
    timings.step("seccomp");
    Ok(())
}

/// Passes signals on to the command, reaps everything, and when the command (PID 2) ends,
/// kills the rest of the namespace and returns how the command ended (`exit N`/`signal N`).
fn supervise(command: u32) -> String {
    let Some(command_pid) = Pid::from_raw(command as i32) else { return "exit 126".into() };
    let mut ended = None;
    loop {
        // Reap whatever ended (orphans are ours too).
        while let Ok(Some((pid, status))) = rustix::process::wait(WaitOptions::NOHANG) {
            if pid == command_pid {
                ended = Some(match (status.exit_status(), status.terminating_signal()) {
                    (Some(code), _) => format!("exit {code}"),
                    (None, Some(signal)) => format!("signal {signal}"),
                    (None, None) => "exit 126".to_string(),
                });
            }
        }
        if let Some(ended) = ended {
            // Nothing the command started outlives it.
            let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(-1), Signal::SIGKILL);
            while rustix::process::wait(WaitOptions::empty()).is_ok() {}
            return ended;
        }
        match helper::forwarded().wait() {
            Ok(Signal::SIGCHLD) | Err(_) => {}
            // A signal to the command's group reached the command already, unless the
            // command leads a group of its own (an interactive shell does).
            Ok(signal) => {
                // (The group of the helper lies outside this namespace: it shows as 0 here.)
                let group = |pid| nix::unistd::getpgid(pid).ok().map(nix::unistd::Pid::as_raw);
                if group(Some(nix::unistd::Pid::from_raw(command as i32))) != group(None) {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(command as i32), signal);
                }
            }
        }
    }
}

/// Whether the helper's end of the status channel is closed (it died before the parent-death
/// signal was set; in the new PID namespace its pid shows as 0, so `getppid` cannot tell).
fn helper_gone(report: &UnixStream) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    // The helper never writes: readable means end of file.
    let mut ready = [PollFd::new(report, PollFlags::IN)];
    let now = Timespec { tv_sec: 0, tv_nsec: 0 };
    rustix::event::poll(&mut ready, Some(&now)).map_or(true, |n| n > 0)
}
