//! `terminal_operations`: commands, background processes and interactive PTY sessions, every
//! one confined by the sandbox.

mod delegate;
mod kill_session;
mod list_sessions;
mod read_output;
mod run_command;
// Interactive sessions need a PTY, which the Windows build does not drive (ConPTY): there the
// operations are not offered at all, rather than asked for and then refused.
#[cfg(unix)]
mod send_input;
#[cfg(unix)]
mod start_session;

use std::collections::BTreeMap;
use std::ffi::OsString;

use crate::{Context, OperationDef, ToolDef};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::Resolved;
use toolbelt_mcp_sandbox::mode::SandboxMode;
use toolbelt_mcp_terminal::env::{self, Terminal};
use toolbelt_mcp_terminal::process::Launch;

/// What the tool is, as the model first reads it.
#[cfg(unix)]
const SUMMARY: &str = "Run commands and interactive terminals (PTY) in the workspace, under the sandbox. Long output keeps its head and tail; `read_output` pages the rest.";
/// What the tool is, as the model first reads it: on Windows nothing confines commands.
#[cfg(windows)]
const SUMMARY: &str = "Run commands in the workspace (the configured shell, `cmd.exe` by default). Windows has no sandbox here: commands run unconfined, and each one not known to be read-only is asked first. No PTY sessions on Windows. Long output keeps its head and tail; `read_output` pages the rest.";

/// The `terminal_operations` tool and its operations, in listing order.
pub const TOOL: ToolDef = ToolDef {
    name: "terminal_operations",
    title: "Terminal operations",
    summary: SUMMARY,
    operations: &[
        OperationDef::of::<run_command::RunCommand>(),
        #[cfg(unix)]
        OperationDef::of::<start_session::StartSession>(),
        #[cfg(unix)]
        OperationDef::of::<send_input::SendInput>(),
        OperationDef::of::<read_output::ReadOutput>(),
        OperationDef::of::<list_sessions::ListSessions>(),
        OperationDef::of::<kill_session::KillSession>(),
        OperationDef::of::<delegate::Delegate>(),
    ],
    granular_prefix: "",
};

/// A session's identity and state: part of every result about one session.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct SessionState {
    /// The session: pass it to `read_output`, `send_input` and `kill_session` (a finished command has one only when its output was cut).
    pub session_id: Option<String>,
    /// `running`, `exited` or `killed`.
    pub status: String,
    /// The exit code, once exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
}

impl SessionState {
    /// The state of session `id` (if any) with `status`.
    fn of(session_id: Option<String>, status: toolbelt_mcp_terminal::process::Status) -> Self {
        Self { session_id, status: status.word().into(), exit_code: status.code(), signal: status.signal() }
    }
}

/// The lean view of what a session's operations return: the output as one text; the cursors
/// and byte counts are for programs (the next read starts where this one ended by default).
pub(super) const SESSION_LEAN: crate::Lean = crate::Lean {
    details: &["from", "next", "total", "sandbox"],
    usual: &[("dropped", "0")],
    shadowed: &[],
    joined: &[("output", "text")],
    one_file_diff: false,
};

/// How to start `program args…` for a call: in `cwd` (default: the first root), with the
/// command environment plus `extra`, under the session's sandbox (unless the user approved
/// running it `unsandboxed`); `line` is how its records name it (the command line).
fn launch(
    context: &Context,
    (cwd, unsandboxed): (Option<Resolved>, bool),
    line: &str,
    (program, args): (OsString, Vec<OsString>),
    extra: &BTreeMap<String, String>,
    terminal: Terminal,
) -> Result<Launch, ToolError> {
    env::check_names(extra).map_err(|problem| ToolError::BadValue {
        field: "env",
        value: "{…}".into(),
        expected: format!("variable names and values: {problem}"),
    })?;
    let terminals = &context.session.terminals;
    let confinement = if unsandboxed { None } else { terminals.confinement(&context.config, context.roots.list())? };
    let mut environment = env::build(std::env::vars_os(), &context.config.env_allow, terminal, extra);
    // The `[delegate]` provider's key never reaches a command, whatever its name or `env_allow`
    // (a call's own `env` may still set the name: its value is the model's, not the key).
    if let Some(delegate) = &context.config.delegate
        && !extra.contains_key(&delegate.api_key_env)
    {
        environment.retain(|(name, _)| name.to_str() != Some(delegate.api_key_env.as_str()));
    }
    // A sandboxed command's `/tmp` is the session's own, and the only temp dir it may write.
    if confinement.is_some() && !extra.contains_key("TMPDIR") {
        environment.retain(|(name, _)| name != "TMPDIR");
        environment.push(("TMPDIR".into(), "/tmp".into()));
    }
    let cwd = cwd.map_or_else(|| context.roots.first().to_path_buf(), |dir| dir.real().to_path_buf());
    // Only Linux stages a command's writes (and records them by its line).
    #[cfg(target_os = "linux")]
    let stage = match &confinement {
        Some(confinement) => {
            confinement.stage(line).map_err(|err| ToolError::Sandbox(err.to_string()))?.map(std::sync::Arc::new)
        }
        None => None,
    };
    #[cfg(target_os = "linux")]
    let staged = stage.is_some();
    #[cfg(not(target_os = "linux"))]
    let staged = false;
    // Without a stage, a sandboxed command that may write the roots is recorded by comparing
    // them with their shadow (settled by the caller just before it starts).
    #[cfg(unix)]
    let recorded_as = (confinement.is_some()
        && !staged
        && context.config.undo_unstaged
        && context.config.sandbox != toolbelt_mcp_sandbox::mode::SandboxMode::ReadOnly)
        .then(|| toolbelt_mcp_sandbox::undoable::Command {
            line: line.to_string(),
            started: std::time::SystemTime::now(),
        });
    #[cfg(windows)]
    let _ = (line, staged);
    #[cfg(target_os = "linux")]
    let join = match &confinement {
        Some(_) => terminals.holder()?,
        None => None,
    };
    #[cfg(unix)]
    let link = match &confinement {
        Some(_) if context.config.network.proxied() => {
            // A destination the rules do not list is put to the user, the connection held.
            let asker = toolbelt_mcp_policy::network::asker(toolbelt_mcp_policy::network::NetworkAsk {
                approver: context.signals.approver.clone(),
                grants: context.grants.as_deref().unwrap_or(&context.session.approvals).network_grants(),
                command: line.to_string(),
                timeout: context.config.approval_timeout,
                audit: context.audit.clone(),
                session: context.session.id.clone(),
                request: context.signals.request.clone(),
            });
            let link = terminals.proxy_link(&context.config, Some(asker))?;
            for (name, value) in link.environment() {
                if !extra.contains_key(&name) {
                    environment.retain(|(set, _)| *set != *name);
                    environment.push((name.into(), value.into()));
                }
            }
            Some(link)
        }
        _ => None,
    };
    // Without the sandbox, a keeper: nothing the command starts outlives the server.
    #[cfg(target_os = "linux")]
    let kept = match &confinement {
        None => Some(toolbelt_mcp_terminal::process::keep::kept(&context.config.state_dir).map_err(|err| {
            if err.kind() == std::io::ErrorKind::PermissionDenied
                && toolbelt_mcp_sandbox::linux::namespaces::inside_another_sandbox()
            {
                return ToolError::Sandbox(format!(
                    "cannot start the keeper of commands run without the sandbox ({err}): this server runs inside another sandbox that blocks Unix sockets (Anthropic's sandbox-runtime `srt` does by default); allow them there (`srt`: `\"allowAllUnixSockets\": true` in its `network` settings)"
                ));
            }
            ToolError::Sandbox(format!(
                "cannot start the keeper of commands run without the sandbox ({err}); check that the state dir `{}` is writable",
                context.config.state_dir.display()
            ))
        })?),
        Some(_) => None,
    };
    Ok(Launch {
        program,
        args,
        cwd,
        env: environment,
        confinement,
        #[cfg(target_os = "linux")]
        stage,
        #[cfg(unix)]
        recorded_as,
        #[cfg(unix)]
        link,
        #[cfg(target_os = "linux")]
        join,
        #[cfg(target_os = "linux")]
        kept,
    })
}

/// `NAME=value` strings as a map, or an error naming the entry without `=`.
fn env_pairs(entries: &[String]) -> Result<BTreeMap<String, String>, ToolError> {
    entries
        .iter()
        .map(|entry| match entry.split_once('=') {
            Some((name, value)) => Ok((name.to_string(), value.to_string())),
            None => Err(ToolError::BadValue {
                field: "env",
                value: format!("`{entry}`"),
                expected: "`NAME=value` strings, e.g. `[\"RUST_LOG=debug\"]`".into(),
            }),
        })
        .collect()
}

/// The sandbox a command ran under, for results.
fn sandbox_label(context: &Context, launch: &Launch) -> String {
    match (&launch.confinement, context.config.sandbox) {
        (None, mode) if mode != SandboxMode::FullAccess => "full-access (approved escalation)".into(),
        (_, mode) => mode.as_str().into(),
    }
}

/// The shell running `command` non-interactively: `SHELL -c COMMAND`.
fn shell_command(context: &Context, command: &str) -> (OsString, Vec<OsString>) {
    let shell = &context.config.shell;
    (shell.into(), toolbelt_mcp_terminal::process::shell_args(shell, command))
}

/// Milliseconds field within `max`.
fn millis(field: &'static str, value: u64, max: u64) -> Result<std::time::Duration, ToolError> {
    if value > max {
        return Err(ToolError::BadValue {
            field,
            value: value.to_string(),
            expected: format!("at most {max} milliseconds"),
        });
    }
    Ok(std::time::Duration::from_millis(value))
}

/// A status in words for the model: `running`, `exited with code 0`, `killed by signal 15`.
fn describe_status(status: toolbelt_mcp_terminal::process::Status) -> String {
    use toolbelt_mcp_terminal::process::Status;
    match status {
        Status::Running => "running".into(),
        Status::Exited(code) => format!("exited with code {code}"),
        Status::Signaled(signal) => format!("killed by signal {signal}"),
    }
}

/// Reads output with `read(max_bytes)`, shrinking `max_bytes` until the texts it gives fit
/// `budget` in both views together (JSON escapes of tabs, quotes and control characters make
/// the structured view larger than the bytes read).
fn fit_output<T>(budget: usize, mut read: impl FnMut(usize) -> T, texts: impl Fn(&T) -> (&str, &str)) -> T {
    let mut max = budget;
    loop {
        let got = read(max);
        let (first, second) = texts(&got);
        let cost: usize = first.lines().chain(second.lines()).map(crate::view_cost).sum();
        if cost <= budget || max < 64 {
            return got;
        }
        max = max.saturating_mul(budget) / cost.max(1) * 9 / 10;
    }
}
