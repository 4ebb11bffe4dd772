//! `start_session`: an interactive shell (or REPL) on a PTY under the sandbox.

use std::collections::BTreeMap;
use std::ffi::OsString;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::terminal::read_output::{QUIET, page};
use crate::terminal::{SessionState, describe_status, env_pairs, fit_output, launch, millis, sandbox_label};
use crate::{Call, Effect, EffectKind, Lean, Operation, Reply, split_lines};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_terminal::env::Terminal;
use toolbelt_mcp_terminal::session::TermSession;

/// Default wait for the first prompt.
const WAIT_MS: u64 = 500;

/// The `start_session` operation.
pub(super) struct StartSession;

/// Arguments of `start_session`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// The program (default: the shell), e.g. `python3`.
    pub shell: Option<String>,
    /// Working directory (default: the first root).
    pub cwd: Option<String>,
    /// Extra `NAME=value` variables.
    #[serde(default)]
    pub env: Vec<String>,
    /// Width (default 120).
    #[schemars(extend("default" = 120))]
    pub cols: Option<u16>,
    /// Height (default 40).
    #[schemars(extend("default" = 40))]
    pub rows: Option<u16>,
    /// Milliseconds to wait for output (default 500; read_output 0).
    #[schemars(extend("default" = 500))]
    pub wait_ms: Option<u64>,
}

/// Structured result of `start_session`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The session and its state.
    #[serde(flatten)]
    pub state: SessionState,
    /// New output lines (escape sequences stripped).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub output: Vec<String>,
    /// The cursor after this output: the next read starts here by default.
    pub next: u64,
    /// The sandbox mode it runs under.
    pub sandbox: String,
}

impl Operation for StartSession {
    const NAME: &'static str = "start_session";
    const DESCRIPTION: &'static str = "Start a shell or REPL on a terminal. Its state persists across `send_input` calls; returns a `session_id` and the first output.";
    const KIND: EffectKind = EffectKind::Exec;
    type Args = Args;
    type Output = Output;
    const LEAN: Lean = super::SESSION_LEAN;

    fn effect(args: &Args) -> Effect {
        Effect::Exec {
            command: args.shell.clone().unwrap_or_default(),
            cwd: args.cwd.clone(),
            env: args.env.clone(),
            stdin: None,
        }
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let cols = args.cols.unwrap_or(120);
        let rows = args.rows.unwrap_or(40);
        for (field, value) in [("cols", cols), ("rows", rows)] {
            if !(2..=1000).contains(&value) {
                return Err(ToolError::BadValue { field, value: value.to_string(), expected: "from 2 to 1000".into() });
            }
        }
        let wait = millis("wait_ms", args.wait_ms.unwrap_or(WAIT_MS), 600_000)?;
        let context = call.context;
        let shell = args.shell.filter(|s| !s.trim().is_empty()).unwrap_or_else(|| context.config.shell.clone());
        let mut env = env_pairs(&args.env)?;
        let program = interactive(&shell, &mut env);
        let line = format!("{shell} (a terminal session)");
        let launch = launch(&context, (call.cwd, call.unsandboxed), &line, program, &env, Terminal::Pty)?;
        let terminals = &context.session.terminals;
        terminals.check_capacity()?;
        // Without a stage, what it writes is measured from the roots as they are now.
        #[cfg(unix)]
        if launch.recorded_as.is_some() {
            terminals.before_unstaged(context.roots.list()).await;
        }
        let number = terminals.reserve();
        let id = format!("t{number}");
        let session = TermSession::start_pty(id.clone(), &launch, shell.clone(), (rows, cols), terminals.ring_bytes)
            .map_err(|source| ToolError::Spawn { program: shell.clone(), source })?;
        if call.unsandboxed {
            session.mark_escalated();
        }
        if context.config.sandbox != toolbelt_mcp_sandbox::mode::SandboxMode::ReadOnly {
            session.mark_writable();
        }
        context.keep_terminal(number, session.clone());
        terminals.track(session.pgid, &launch);
        session.wait_until_quiet(0, wait, QUIET).await;
        let budget = context.budget.saturating_sub(crate::RESERVE);
        let page = fit_output(budget, |max| page(&session, 0, 0, max), |got| (got.text.as_str(), ""));
        let status = session.status();
        let text = format!(
            "session `{id}` started: `{shell}` on a {cols}×{rows} terminal ({})\n{}",
            describe_status(status),
            page.text
        );
        let data = Output {
            state: SessionState::of(Some(id), status),
            output: split_lines(&page.text),
            next: page.next,
            sandbox: sandbox_label(&context, &launch),
        };
        Ok(Reply::new(text, data))
    }
}

/// The program and arguments for an interactive `shell`: bash without rc files and with a
/// plain `$ ` prompt (predictable output), a command line through `sh -c exec`.
fn interactive(shell: &str, env: &mut BTreeMap<String, String>) -> (OsString, Vec<OsString>) {
    if shell.trim().contains(char::is_whitespace) {
        return ("/bin/sh".into(), vec!["-c".into(), format!("exec {shell}").into()]);
    }
    if shell.rsplit('/').next() == Some("bash") {
        env.entry("PS1".into()).or_insert_with(|| "$ ".into());
        return (shell.into(), vec!["--noprofile".into(), "--norc".into(), "-i".into()]);
    }
    (shell.into(), Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interactive_programs() {
        let mut env = BTreeMap::new();
        let (program, args) = interactive("bash", &mut env);
        assert_eq!((program.to_str(), args.len(), env["PS1"].as_str()), (Some("bash"), 3, "$ "));
        let (program, args) = interactive("python3 -q", &mut env);
        assert_eq!((program.to_str(), args[1].to_str()), (Some("/bin/sh"), Some("exec python3 -q")));
        assert_eq!(interactive("python3", &mut env), ("python3".into(), vec![]));
    }
}
