//! `send_input`: type into a PTY session (text and named keys) and return what it printed.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::terminal::read_output::{QUIET, page};
use crate::terminal::{SessionState, describe_status, fit_output, millis};
use crate::{Call, Effect, EffectKind, Lean, Operation, Reply, split_lines};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_terminal::keys;
use toolbelt_mcp_terminal::session::Kind;

/// Default wait for the program's answer.
const WAIT_MS: u64 = 500;

/// The `send_input` operation.
pub(super) struct SendInput;

/// Arguments of `send_input`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// From start_session, run_command or list_sessions.
    pub session_id: String,
    /// Text to type.
    pub input: Option<String>,
    /// Keys to press first: `ctrl-c`, `enter`, `tab`, `up`, `f1`…
    #[serde(default)]
    pub keys: Vec<String>,
    /// Enter after `input` (default true).
    #[schemars(extend("default" = true))]
    pub press_enter: Option<bool>,
    /// Milliseconds to wait for output (default 500; read_output 0).
    #[schemars(extend("default" = 500))]
    pub wait_ms: Option<u64>,
}

/// Structured result of `send_input`.
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
    /// More output is waiting past `next` (read it with `read_output`).
    pub more: bool,
}

impl Operation for SendInput {
    const NAME: &'static str = "send_input";
    const DESCRIPTION: &'static str = "Type into a session; returns its output. Named `keys` and/or `input` (then Enter unless `press_enter: false`); waits until the program answered and its output is quiet, at most `wait_ms`.";
    const KIND: EffectKind = EffectKind::Exec;
    type Args = Args;
    type Output = Output;
    const LEAN: Lean = super::SESSION_LEAN;

    fn effect(args: &Args) -> Effect {
        let mut typed: String = args.keys.iter().map(|key| format!("<{key}> ")).collect();
        typed.push_str(args.input.as_deref().unwrap_or_default());
        Effect::Exec { command: typed, cwd: None, env: Vec::new(), stdin: None }
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let wait = millis("wait_ms", args.wait_ms.unwrap_or(WAIT_MS), 600_000)?;
        let context = call.context;
        let session = context.terminal(&args.session_id)?;
        // A session the user let run outside the sandbox runs what is typed into it there too
        // (a pager's `!cmd`, a shell): each input is its own escalation, asked with the text.
        if session.is_escalated() && !call.unsandboxed {
            return Err(ToolError::Denied {
                reason: format!(
                    "session `{}` runs outside the sandbox (an approved escalation), and what is typed into it runs there too",
                    args.session_id
                ),
                how_to_allow: "send the input with `escalate: true` and a `justification`: the user is asked each time, with the input shown".into(),
            });
        }
        // A call that may only read (the server, or the host's thread, is read-only now) types
        // nothing into a session started where it could write: the input could.
        if context.config.sandbox == toolbelt_mcp_sandbox::mode::SandboxMode::ReadOnly && session.is_writable() {
            return Err(ToolError::Denied {
                reason: format!(
                    "session `{}` was started under a sandbox that writes the roots, and this call may only read (the sandbox, or the host's thread, is read-only now): what is typed into it could write",
                    args.session_id
                ),
                how_to_allow: "read it with `read_output`, or start a new session, which runs read-only now".into(),
            });
        }
        if session.kind != Kind::Pty {
            return Err(ToolError::WrongSession {
                id: args.session_id,
                problem: "is a background command without a terminal, so it takes no input; run interactive programs with `start_session`".into(),
            });
        }
        if !session.is_running() {
            return Err(ToolError::WrongSession {
                id: args.session_id,
                problem: format!(
                    "has {}; read what it printed with `read_output`, or start a new one",
                    describe_status(session.status())
                ),
            });
        }
        let mut bytes = Vec::new();
        let application = session.application_cursor();
        for key in &args.keys {
            let key_bytes = keys::bytes(key, application).ok_or_else(|| ToolError::BadValue {
                field: "keys",
                value: format!("`{key}`"),
                expected: format!("key names: {}", keys::NAMES),
            })?;
            bytes.extend(key_bytes);
        }
        if let Some(input) = &args.input {
            bytes.extend(input.as_bytes());
            if args.press_enter.unwrap_or(true) {
                bytes.push(b'\r');
            }
        }
        if bytes.is_empty() {
            return Err(ToolError::BadValue {
                field: "input",
                value: "nothing".into(),
                expected: "`input` text and/or `keys` to press; to only read, use `read_output`".into(),
            });
        }
        // Unread output from before is returned too; the answer is waited for after the input.
        let since = session.cursor(0);
        let typed_at = session.out.total();
        match session.write(&bytes).await {
            Some(Ok(())) => {}
            Some(Err(err)) => {
                return Err(ToolError::WrongSession {
                    id: args.session_id,
                    problem: format!("did not take the input ({err}); check `read_output` for its status"),
                });
            }
            None => return Err(ToolError::Internal("a PTY session has no input".into())),
        }
        session.wait_for_answer(typed_at, args.input.as_deref().unwrap_or_default(), wait, QUIET).await;
        let budget = context.budget.saturating_sub(crate::RESERVE);
        let page = fit_output(budget, |max| page(&session, 0, since, max), |got| (got.text.as_str(), ""));
        let status = session.status();
        let mut text = page.text.clone();
        if page.more {
            text.push_str(&format!("\n… more output: `read_output {{session_id: \"{}\"}}`", session.id));
        }
        if !session.is_running() {
            text.push_str(&format!("\n[session {}]", describe_status(status)));
        }
        let data = Output {
            state: SessionState::of(Some(session.id.clone()), status),
            output: split_lines(&page.text),
            next: page.next,
            more: page.more,
        };
        Ok(Reply::new(text, data))
    }
}
