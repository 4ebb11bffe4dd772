//! `list_sessions`: the connection's background commands and PTY sessions.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::terminal::describe_status;
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;

/// The `list_sessions` operation.
pub(super) struct ListSessions;

/// Arguments of `list_sessions` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {}

/// Structured result of `list_sessions`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// Sessions, oldest first.
    pub sessions: Vec<Row>,
}

/// One session.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Row {
    /// Its id.
    pub session_id: String,
    /// `command` (background, or a finished command kept for paging) or `pty`.
    pub kind: String,
    /// The command line or program.
    pub command: String,
    /// Its working directory, relative to the first root.
    pub cwd: String,
    /// `running`, `exited` or `killed`.
    pub status: String,
    /// The exit code, once exited.
    pub exit_code: Option<i32>,
    /// Seconds since it started.
    pub age_s: u64,
    /// Bytes of output so far.
    pub bytes: u64,
}

impl Operation for ListSessions {
    const NAME: &'static str = "list_sessions";
    const DESCRIPTION: &'static str = "List sessions. Ended ones stay listed for an hour.";
    const KIND: EffectKind = EffectKind::Read;
    type Args = Args;
    type Output = Output;

    fn effect(_args: &Args) -> Effect {
        Effect::Read(Vec::new())
    }

    async fn run(_args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let context = call.context;
        let sessions = context.terminals();
        let mut text = if sessions.is_empty() {
            "no sessions; start one with `run_command` (`background: true`) or `start_session`".to_string()
        } else {
            format!("{} sessions:", sessions.len())
        };
        let mut rows = Vec::with_capacity(sessions.len());
        for session in sessions {
            let status = session.status();
            let row = Row {
                session_id: session.id.clone(),
                kind: session.kind.word().into(),
                command: session.command.clone(),
                cwd: context.roots.show(&session.cwd),
                status: status.word().into(),
                exit_code: status.code(),
                age_s: session.started.elapsed().as_secs(),
                bytes: session.out.total() + session.err.as_ref().map_or(0, |e| e.total()),
            };
            text.push_str(&format!(
                "\n- `{}` {} `{}` in `{}`: {}, {} s old, {} bytes of output",
                row.session_id,
                row.kind,
                row.command,
                row.cwd,
                describe_status(status),
                row.age_s,
                row.bytes
            ));
            rows.push(row);
        }
        Ok(Reply::new(text, Output { sessions: rows }))
    }
}
