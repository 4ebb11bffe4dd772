//! `run_command`: a shell command under the sandbox, in the foreground (waited for, with a
//! time limit, progress and cancellation) or in the background (a session to poll).

use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::terminal::{
    SessionState, describe_status, env_pairs, fit_output, launch, millis, sandbox_label, shell_command,
};
use crate::{Call, Effect, EffectKind, Lean, Operation, Reply, split_lines};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::exec::{SETUP_FAILED, SETUP_PREFIX};
use toolbelt_mcp_terminal::env::Terminal;
use toolbelt_mcp_terminal::foreground::{self, Watch};
use toolbelt_mcp_terminal::log::OutputLog;
use toolbelt_mcp_terminal::process::Status;
use toolbelt_mcp_terminal::session::TermSession;
use toolbelt_mcp_terminal::text;

/// Default and largest time limit.
const TIMEOUT_MS: (u64, u64) = (120_000, 600_000);
/// Default and largest time limit of a command run as an MCP task: nobody waits on the call.
const TASK_TIMEOUT_MS: (u64, u64) = (1_800_000, crate::LONGEST_TASK_MS);
/// Default wait for a background command's first output.
const BACKGROUND_WAIT_MS: u64 = 500;

/// The `run_command` operation.
pub(super) struct RunCommand;

/// Arguments of `run_command`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Command line for `bash -c`.
    pub command: String,
    /// Working directory (default: the first root).
    pub cwd: Option<String>,
    /// Extra `NAME=value` variables.
    #[serde(default)]
    pub env: Vec<String>,
    /// Text for stdin.
    pub stdin: Option<String>,
    /// Time limit (default 120000, max 600000; in a task 1800000, max 7200000); then the process group is ended.
    #[schemars(extend("default" = 120000))]
    pub timeout_ms: Option<u64>,
    /// Return a `session_id` at once (servers, watchers).
    #[serde(default)]
    pub background: bool,
    /// Milliseconds to wait for output (default 500; read_output 0).
    #[schemars(extend("default" = 500))]
    pub wait_ms: Option<u64>,
}

/// Structured result of `run_command`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The session and its state.
    #[serde(flatten)]
    pub state: SessionState,
    /// Its stdout lines as shown (head and tail when cut, with a line saying what was left out); for a background command, stdout and stderr together.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stdout: Vec<String>,
    /// Its stderr lines as shown (head and tail when cut).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stderr: Vec<String>,
    /// Bytes the command wrote to stdout (all of them, shown or not).
    pub stdout_bytes: u64,
    /// Bytes it wrote to stderr.
    pub stderr_bytes: u64,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// It hit `timeout_ms` and was ended.
    pub timed_out: bool,
    /// The request was cancelled and the command ended.
    pub cancelled: bool,
    /// The output held bytes that are not UTF-8 text (shown with replacement characters).
    pub binary: bool,
    /// The sandbox mode it ran under.
    pub sandbox: String,
}

impl Operation for RunCommand {
    const NAME: &'static str = "run_command";
    const DESCRIPTION: &'static str = "Run a command: exit code, stdout, stderr. A non-zero exit is an error result that still carries the output; `background: true` returns a `session_id` at once for long-running programs.";
    const KIND: EffectKind = EffectKind::Exec;
    type Args = Args;
    type Output = Output;
    const TASK: bool = true;
    const LEAN: Lean = Lean {
        details: &["stdout_bytes", "stderr_bytes", "duration_ms", "sandbox"],
        usual: &[("status", "\"exited\"")],
        shadowed: &[],
        joined: &[("stdout", "output"), ("stderr", "errors")],
        one_file_diff: false,
    };

    fn effect(args: &Args) -> Effect {
        Effect::Exec {
            command: args.command.clone(),
            cwd: args.cwd.clone(),
            env: args.env.clone(),
            stdin: args.stdin.clone(),
        }
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        if args.command.trim().is_empty() {
            return Err(ToolError::BadValue {
                field: "command",
                value: "\"\"".into(),
                expected: "a command line, e.g. `cargo test`".into(),
            });
        }
        let limits = if call.context.signals.task { TASK_TIMEOUT_MS } else { TIMEOUT_MS };
        let timeout = millis("timeout_ms", args.timeout_ms.unwrap_or(limits.0), limits.1)?;
        let wait = millis("wait_ms", args.wait_ms.unwrap_or(BACKGROUND_WAIT_MS), TIMEOUT_MS.1)?;
        let context = call.context;
        #[cfg_attr(windows, allow(unused_mut))]
        let mut launch = launch(
            &context,
            (call.cwd, call.unsandboxed),
            &args.command,
            shell_command(&context, &args.command),
            &env_pairs(&args.env)?,
            Terminal::Pipes,
        )?;
        let terminals = &context.session.terminals;
        let sandbox = sandbox_label(&context, &launch);
        let budget = context.budget.saturating_sub(crate::RESERVE);
        let stdin = args.stdin.map(String::into_bytes);
        let spawn_error = |source| ToolError::Spawn { program: context.config.shell.clone(), source };
        // Without a stage, what it writes is measured from the roots as they are now.
        #[cfg(unix)]
        if launch.recorded_as.is_some() {
            terminals.before_unstaged(context.roots.list()).await;
        }

        if args.background {
            terminals.check_capacity()?;
            let number = terminals.reserve();
            let id = format!("t{number}");
            let session = TermSession::start_background(id.clone(), &launch, args.command, stdin, terminals.ring_bytes)
                .map_err(spawn_error)?;
            context.keep_terminal(number, session.clone());
            terminals.track(session.pgid, &launch);
            session.wait_for_exit(wait).await;
            let how = format!("page with `read_output` {{session_id: \"{id}\"}}");
            let (shown, _, binary) =
                fit_output(budget, |max| excerpt(&session.out, max, &how), |got| (got.0.as_str(), ""));
            session.set_cursor(0, session.out.total());
            let status = session.status();
            let text = format!(
                "started in the background as session `{id}` ({}); output so far:\n{}\nPoll with `read_output {{session_id: \"{id}\"}}`, end with `kill_session`.",
                describe_status(status),
                if shown.is_empty() { "(none yet)" } else { &shown }
            );
            let data = Output {
                state: SessionState::of(Some(id), status),
                stdout: split_lines(&shown),
                stderr: Vec::new(),
                stdout_bytes: session.out.total(),
                stderr_bytes: 0,
                duration_ms: session.started.elapsed().as_millis() as u64,
                timed_out: false,
                cancelled: false,
                binary,
                sandbox,
            };
            return Ok(Reply::new(text, data));
        }

        let number = terminals.reserve();
        let id = format!("t{number}");
        let spill_after = (context.budget as u64).min(terminals.ring_bytes as u64 / 2);
        let log = |stream: &str| {
            let path = terminals.spill_dir.join(format!("{id}.{stream}"));
            Arc::new(OutputLog::with_spill(terminals.ring_bytes, Some((spill_after, path))))
        };
        let logs = [log("stdout"), log("stderr")];
        let watch = Watch {
            timeout,
            cancel: &context.signals.cancel,
            closed: &context.session.closed,
            progress: context.signals.progress.as_deref(),
        };
        let finished = foreground::run(&launch, stdin, &logs, watch).await;
        // What it wrote is folded now, whatever happened to it (the stage is removed after).
        #[cfg(target_os = "linux")]
        let folded = match launch.stage.take() {
            Some(stage) => {
                // One undo step: what the command changed, recorded before the stage goes.
                let _serial = context.session.writes.lock().await;
                let (mut lines, recorded) = terminals.fold_ended_recorded(stage, context.session.undo_cap()).await;
                if let Some(recorded) = recorded {
                    lines.extend(context.session.record_command(recorded, context.roots.first(), true));
                }
                lines
            }
            None => Vec::new(),
        };
        #[cfg(not(target_os = "linux"))]
        let folded: Vec<String> = Vec::new();
        // Without a stage: one undo step of what the roots' shadow says changed.
        #[cfg(unix)]
        let folded = match launch.recorded_as.clone() {
            Some(command) => {
                let mut folded = folded;
                let _serial = context.session.writes.lock().await;
                if let Some(recorded) = terminals.unstaged_changes(command).await {
                    folded.extend(context.session.record_command(recorded, context.roots.first(), true));
                }
                folded
            }
            None => folded,
        };
        #[cfg(unix)]
        let folded = {
            let mut folded = folded;
            if let Some(link) = &launch.link {
                folded.extend(toolbelt_mcp_terminal::describe_refused(&link.refused()));
            }
            folded
        };
        let finished = finished.map_err(spawn_error)?;
        if let Some(pgid) = finished.lingering {
            terminals.linger(pgid);
        }
        // Without a stage: checked by this call's sweep, and on while what it left behind runs.
        #[cfg(target_os = "linux")]
        let staged = launch.stage.is_some();
        #[cfg(not(target_os = "linux"))]
        let staged = false;
        if !staged {
            // What it left running is compared with the shadow at later calls; nothing left,
            // nothing more to compare.
            #[cfg(unix)]
            if finished.lingering.is_none() {
                launch.recorded_as = None;
            }
            terminals.track(finished.lingering.unwrap_or(0), &launch);
        }
        let (out_total, err_total) = (logs[0].total(), logs[1].total());
        if finished.status == Status::Exited(i32::from(SETUP_FAILED)) {
            let stderr = text::to_text(&logs[1].read(0, 4096).bytes).0;
            if stderr.starts_with(SETUP_PREFIX) {
                return Err(ToolError::Sandbox(stderr.trim_end().to_string()));
            }
        }
        let page = |stream: &str| format!("page with `read_output` {{session_id: \"{id}\", stream: \"{stream}\"}}");
        let (out_page, err_page) = (page("stdout"), page("stderr"));
        let both = |room| {
            let (out_share, err_share) = shares(out_total as usize, err_total as usize, room);
            (excerpt(&logs[0], out_share, &out_page), excerpt(&logs[1], err_share, &err_page))
        };
        let ((stdout, out_cut, out_binary), (stderr, err_cut, err_binary)) =
            fit_output(budget, both, |(out, err)| (out.0.as_str(), err.0.as_str()));
        let kept = out_cut || err_cut;
        if kept {
            let session =
                TermSession::finished(id.clone(), args.command, launch.cwd.clone(), finished.status, logs.clone());
            context.keep_terminal(number, Arc::new(session));
        }
        let duration_ms = finished.duration.as_millis() as u64;
        let headline = match (finished.timed_out, finished.cancelled) {
            _ if finished.closed => format!(
                "ended after {duration_ms} ms because the session closed (the server is shutting down, or the session was idle or deleted); the process group was ended"
            ),
            (true, _) => format!(
                "timed out after {duration_ms} ms; the process group was ended ({})",
                describe_status(finished.status)
            ),
            (_, true) => format!("cancelled after {duration_ms} ms; the process group was ended"),
            _ => format!("{} in {duration_ms} ms", describe_status(finished.status)),
        };
        let mut text = headline;
        if finished.lingering.is_some() {
            text.push_str("; processes it started in the background are still running (unsandboxed: they end when the server exits; use `run_command` with `background: true` to manage them)");
        }
        for (name, shown, total) in [("stdout", &stdout, out_total), ("stderr", &stderr, err_total)] {
            if total > 0 {
                text.push_str(&format!("\n--- {name} ({total} bytes) ---\n{shown}"));
                if !shown.ends_with('\n') {
                    text.push('\n');
                }
            }
        }
        if out_total + err_total == 0 {
            text.push_str("\n(no output)");
        }
        let is_error = finished.status != Status::Exited(0) || finished.timed_out || finished.cancelled;
        let data = Output {
            state: SessionState::of(kept.then_some(id), finished.status),
            stdout: split_lines(&stdout),
            stderr: split_lines(&stderr),
            stdout_bytes: out_total,
            stderr_bytes: err_total,
            duration_ms,
            timed_out: finished.timed_out,
            cancelled: finished.cancelled,
            binary: out_binary || err_binary,
            sandbox,
        };
        Ok(Reply { truncated: kept, is_error, ..Reply::new(text, data) }.warn(&folded))
    }
}

/// Splits `budget` between two streams: each gets what it needs, the larger the rest.
fn shares(out: usize, err: usize, budget: usize) -> (usize, usize) {
    if out + err <= budget {
        return (out, err);
    }
    let half = budget / 2;
    match (out <= half, err <= half) {
        (true, _) => (out, budget - out),
        (_, true) => (budget - err, err),
        _ => (half, budget - half),
    }
}

/// A stream's text within `budget` bytes: all of it, or its head and tail with a marker
/// saying how many bytes and lines were left out and `how_to_see` them. Returns the text,
/// whether it was cut, and whether the output held non-text bytes.
pub(super) fn excerpt(log: &OutputLog, budget: usize, how_to_see: &str) -> (String, bool, bool) {
    let total = log.total();
    if total as usize <= budget {
        let (shown, binary) = text::to_text(&log.read(0, budget).bytes);
        return (shown, false, binary);
    }
    let room = budget.saturating_sub(200 + how_to_see.len());
    let (head, tail) = log.head_and_tail(room / 3, room - room / 3);
    let mut head_bytes = head.bytes;
    if let Some(nl) = memchr::memrchr(b'\n', &head_bytes).filter(|nl| head_bytes.len() - nl <= 200) {
        head_bytes.truncate(nl + 1);
    }
    let mut tail_chunk = tail.unwrap_or_else(|| log.read(total, 0));
    if let Some(nl) = memchr::memchr(b'\n', &tail_chunk.bytes).filter(|nl| *nl < 200) {
        tail_chunk.bytes.drain(..=nl);
        tail_chunk.from += nl as u64 + 1;
    }
    let omitted_from = head_bytes.len() as u64;
    let omitted = tail_chunk.from.saturating_sub(omitted_from);
    let lines = log.count_newlines(omitted_from, tail_chunk.from);
    let (head_text, head_binary) = text::to_text(&head_bytes);
    let (tail_text, tail_binary) = text::to_text(&tail_chunk.bytes);
    let lines = lines.map_or_else(String::new, |n| format!(" / {n} lines"));
    let sep = if head_text.is_empty() || head_text.ends_with('\n') { "" } else { "\n" };
    let shown = format!("{head_text}{sep}… {omitted} bytes{lines} omitted; {how_to_see} …\n{tail_text}");
    (shown, true, head_binary || tail_binary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_give_small_streams_all_they_need() {
        assert_eq!(shares(10, 20, 100), (10, 20));
        assert_eq!(shares(10, 500, 100), (10, 90));
        assert_eq!(shares(500, 10, 100), (90, 10));
        assert_eq!(shares(500, 500, 100), (50, 50));
    }

    #[test]
    fn excerpt_keeps_head_and_tail_and_counts_what_is_left_out() {
        let log = OutputLog::new(1 << 20);
        let text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        log.append(text.as_bytes());
        let (shown, cut, binary) = excerpt(&log, 4096, "page it");
        assert!(cut && !binary && shown.len() <= 4096, "{}", shown.len());
        assert!(shown.starts_with("line 0\n") && shown.ends_with("line 9999\n"), "{shown}");
        let marker = shown.lines().find(|l| l.starts_with('…')).unwrap();
        let omitted: usize = marker.split_whitespace().nth(1).unwrap().parse().unwrap();
        let lines: usize = marker.split_whitespace().nth(4).unwrap().parse().unwrap();
        assert_eq!(shown.len() - marker.len() - 1 + omitted, text.len(), "{marker}");
        assert_eq!(lines, 10_000 - (shown.lines().count() - 1), "{marker}");
    }
}
