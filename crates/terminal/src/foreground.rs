//! A foreground command: started, watched until it exits, times out or is cancelled (then
//! its whole process group is ended), reporting progress every second while it runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::process::Child;
use tokio_util::sync::CancellationToken;

use crate::log::OutputLog;
use crate::process::{self, GroupGuard, KILL_GRACE, Launch, Signal, Status, group_alive, signal_group};

/// How long output may keep arriving after the command exited (from processes it left
/// running that still hold its pipes) before the result is returned without it.
const DRAIN: Duration = Duration::from_millis(250);

/// Reports progress: seconds elapsed, and a message.
pub type Progress = dyn Fn(f64, String) + Send + Sync;

/// What ends a foreground command early, and who hears about its progress.
pub struct Watch<'a> {
    /// The time limit.
    pub timeout: Duration,
    /// The call's cancellation.
    pub cancel: &'a CancellationToken,
    /// The end of the connection's state (a closed HTTP session, a server shutting down).
    pub closed: &'a CancellationToken,
    /// Progress notifications, when the client asked for them.
    pub progress: Option<&'a Progress>,
}

/// How a foreground command ended.
#[derive(Debug)]
pub struct Finished {
    /// Its exit status.
    pub status: Status,
    /// It hit the time limit and was ended.
    pub timed_out: bool,
    /// The call was cancelled and it was ended.
    pub cancelled: bool,
    /// The connection's state ended (and so did the command).
    pub closed: bool,
    /// Wall time.
    pub duration: Duration,
    /// The process group, if processes it started are still running.
    pub lingering: Option<u32>,
}

/// Runs `launch` with `stdin`, its stdout and stderr going to `logs`.
pub async fn run(
    launch: &Launch,
    stdin: Option<Vec<u8>>,
    logs: &[Arc<OutputLog>; 2],
    watch: Watch<'_>,
) -> std::io::Result<Finished> {
    let started = Instant::now();
    let mut piped = launch.spawn_piped(stdin.is_some(), false)?;
    let pgid = piped.pgid;
    let mut guard = GroupGuard::new(pgid);
    let _running = toolbelt_mcp_core::metrics::RunningCommand::start();
    if let (Some(input), Some(pipe)) = (stdin, piped.child.stdin.take()) {
        tokio::spawn(process::feed(pipe, input));
    }
    let mut pumps = vec![tokio::spawn(process::pump(piped.out, logs[0].clone(), |_| {}))];
    if let Some(err) = piped.err {
        pumps.push(tokio::spawn(process::pump(err, logs[1].clone(), |_| {})));
    }
    let deadline = tokio::time::sleep(watch.timeout);
    tokio::pin!(deadline);
    let first_tick = tokio::time::Instant::now() + Duration::from_secs(1);
    let mut ticker = tokio::time::interval_at(first_tick, Duration::from_secs(1));
    let (status, timed_out, cancelled, closed) = loop {
        tokio::select! {
            exit = launch.wait(&mut piped.child) => break (exit?, false, false, false),
            () = &mut deadline => break (end_group(launch, &mut piped.child, pgid).await, true, false, false),
            () = watch.cancel.cancelled() => break (end_group(launch, &mut piped.child, pgid).await, false, true, false),
            () = watch.closed.cancelled() => break (end_group(launch, &mut piped.child, pgid).await, false, true, true),
            _ = ticker.tick() => {
                if let Some(progress) = watch.progress {
                    let bytes = logs[0].total() + logs[1].total();
                    let elapsed = started.elapsed().as_secs_f64();
                    progress(elapsed, format!("running for {elapsed:.0} s, {bytes} bytes of output so far"));
                }
            }
        }
    };
    let aborts: Vec<_> = pumps.iter().map(|p| p.abort_handle()).collect();
    if tokio::time::timeout(DRAIN, futures_join(pumps)).await.is_err() {
        aborts.iter().for_each(tokio::task::AbortHandle::abort);
        logs.iter().for_each(|log| log.close());
    }
    guard.disarm();
    // A command confined on Linux: its namespace ends with it (its init, finishing, may still
    // be in the helper's group for a moment: that is not a process left behind).
    let lingering = (launch.gets_own_group() && group_alive(pgid)).then_some(pgid);
    Ok(Finished { status, timed_out, cancelled, closed, duration: started.elapsed(), lingering })
}

async fn futures_join(tasks: Vec<tokio::task::JoinHandle<()>>) {
    for task in tasks {
        let _ = task.await;
    }
}

/// `SIGTERM` to the group, `SIGKILL` after the grace period, and `SIGKILL` to whatever of
/// the group outlived its leader (a grandchild that ignores `SIGTERM`).
async fn end_group(launch: &Launch, child: &mut Child, pgid: u32) -> Status {
    signal_group(pgid, Signal::TERM);
    let status = match tokio::time::timeout(KILL_GRACE, launch.wait(child)).await {
        Ok(Ok(status)) => status,
        _ => {
            signal_group(pgid, Signal::KILL);
            launch.wait(child).await.unwrap_or(Status::Signaled(9))
        }
    };
    if group_alive(pgid) {
        signal_group(pgid, Signal::KILL);
    }
    status
}
