//! `kill_session`: signal a session's process group (then `SIGKILL` after a grace period),
//! and optionally forget it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::terminal::{SessionState, describe_status};
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_terminal::process::signal_named;

/// The `kill_session` operation.
pub(super) struct KillSession;

/// Arguments of `kill_session`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// From start_session, run_command or list_sessions.
    pub session_id: String,
    /// `TERM` (default, `KILL` after 2 s), `INT`, `HUP`, `KILL`, `STOP`, `CONT`…
    #[schemars(extend("default" = "TERM"))]
    pub signal: Option<String>,
    /// Also forget it.
    #[serde(default)]
    pub remove: bool,
}

/// Structured result of `kill_session`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The session and its state.
    #[serde(flatten)]
    pub state: SessionState,
    /// It was forgotten.
    pub removed: bool,
}

impl Operation for KillSession {
    const NAME: &'static str = "kill_session";
    const DESCRIPTION: &'static str = "Signal a session's process group. Default `TERM`, then `KILL`; reports the final status; `remove: true` also forgets it.";
    const KIND: EffectKind = EffectKind::Exec;
    type Args = Args;
    type Output = Output;

    fn effect(_args: &Args) -> Effect {
        Effect::Control
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let name = args.signal.as_deref().unwrap_or("TERM");
        let signal = signal_named(name).ok_or_else(|| ToolError::BadValue {
            field: "signal",
            value: format!("`{name}`"),
            expected: "`TERM`, `INT`, `HUP`, `QUIT`, `KILL`, `USR1`, `USR2`, `STOP` or `CONT`".into(),
        })?;
        let terminals = &call.context.session.terminals;
        let session = call.context.terminal(&args.session_id)?;
        let was_running = session.is_running();
        let status = session.kill(signal).await;
        let removed = args.remove && !session.is_running();
        if removed {
            terminals.remove(&session.id);
        }
        let mut text = if was_running {
            format!(
                "sent SIG{} to session `{}`: now {}",
                name.trim().trim_start_matches("SIG").to_ascii_uppercase(),
                session.id,
                describe_status(status)
            )
        } else {
            format!("session `{}` had already {}", session.id, describe_status(status))
        };
        if removed {
            text.push_str("; removed");
        } else if args.remove {
            text.push_str("; not removed because it is still running (send `KILL`)");
        }
        let data = Output { state: SessionState::of(Some(session.id.clone()), status), removed };
        Ok(Reply::new(text, data))
    }
}
