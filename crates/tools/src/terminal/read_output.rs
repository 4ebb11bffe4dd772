//! `read_output`: a session's output from a cursor (waiting for more if asked), its status,
//! or the rendered screen of a PTY session.

use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::terminal::{SessionState, describe_status, fit_output, millis};
use crate::{Call, Effect, EffectKind, Lean, Operation, Reply, split_lines};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_terminal::session::{Kind, TermSession};
use toolbelt_mcp_terminal::text;

/// Output is "quiet" when nothing arrived for this long.
pub(super) const QUIET: Duration = Duration::from_millis(50);

/// The `read_output` operation.
pub(super) struct ReadOutput;

/// Arguments of `read_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// From start_session, run_command or list_sessions.
    pub session_id: String,
    /// Byte cursor (a result's `next`; 0 = start; default: after the last read).
    pub since: Option<u64>,
    /// Milliseconds to wait for output (default 500; read_output 0).
    #[schemars(extend("default" = 0))]
    pub wait_ms: Option<u64>,
    /// Max bytes (default: the output budget).
    pub max_bytes: Option<u64>,
    /// Return the rendered PTY screen.
    #[serde(default)]
    pub screen: bool,
    /// Default `stdout`.
    #[schemars(extend("default" = "stdout"))]
    pub stream: Option<String>,
}

/// Structured result of `read_output`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The session and its state.
    #[serde(flatten)]
    pub state: SessionState,
    /// The lines read (escape sequences stripped), or the screen's lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub output: Vec<String>,
    /// The cursor this output starts at.
    pub from: u64,
    /// The cursor after this output: the next read starts here by default.
    pub next: u64,
    /// Bytes received so far.
    pub total: u64,
    /// Bytes before `from` that are no longer kept (older than the session's output buffer).
    pub dropped: u64,
    /// More output is waiting past `next` (read it with `read_output`).
    pub more: bool,
    /// The output held bytes that are not UTF-8 text (shown with replacement characters).
    pub binary: bool,
}

/// A page of a session's output.
pub(super) struct Page {
    /// The text.
    pub text: String,
    /// Its first byte's cursor.
    pub from: u64,
    /// The cursor after it.
    pub next: u64,
    /// Bytes gone before `from`.
    pub dropped: u64,
    /// Whether more is waiting.
    pub more: bool,
    /// Whether it held non-text bytes.
    pub binary: bool,
    /// Bytes received so far.
    pub total: u64,
}

/// Reads up to `max` bytes of `stream` from `since`, ending on a line end when more
/// follows, and moves the session's default cursor past it.
pub(super) fn page(session: &TermSession, stream: usize, since: u64, max: usize) -> Page {
    let Some(log) = session.log(stream) else {
        return Page { text: String::new(), from: 0, next: 0, dropped: 0, more: false, binary: false, total: 0 };
    };
    let mut chunk = log.read(since, max.max(1));
    let end = chunk.from + chunk.bytes.len() as u64;
    let more = end < chunk.total;
    if more && let Some(nl) = memchr::memrchr(b'\n', &chunk.bytes) {
        chunk.bytes.truncate(nl + 1);
    }
    let next = chunk.from + chunk.bytes.len() as u64;
    session.set_cursor(stream, next);
    let (text, binary) = text::to_text(&chunk.bytes);
    Page { text, from: chunk.from, next, dropped: chunk.dropped, more: next < chunk.total, binary, total: chunk.total }
}

impl Operation for ReadOutput {
    const NAME: &'static str = "read_output";
    const DESCRIPTION: &'static str = "Read a session's output or screen. From a cursor (default: where the last read ended), with its status; waits up to `wait_ms` for more; `screen: true` returns a PTY's rendered screen.";
    const KIND: EffectKind = EffectKind::Read;
    type Args = Args;
    type Output = Output;
    const LEAN: Lean = super::SESSION_LEAN;

    fn effect(_args: &Args) -> Effect {
        Effect::Read(Vec::new())
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let wait = millis("wait_ms", args.wait_ms.unwrap_or(0), 600_000)?;
        let context = call.context;
        let session = context.terminal(&args.session_id)?;
        let stream = match args.stream.as_deref() {
            None | Some("stdout") => 0,
            Some("stderr") if session.err.is_some() => 1,
            Some("stderr") => {
                return Err(ToolError::WrongSession {
                    id: args.session_id,
                    problem: "has one output stream (stdout and stderr together); leave out `stream`".into(),
                });
            }
            Some(other) => {
                return Err(ToolError::BadValue {
                    field: "stream",
                    value: format!("`{other}`"),
                    expected: "`stdout` or `stderr`".into(),
                });
            }
        };
        let budget = context.budget.saturating_sub(crate::RESERVE);
        if args.screen {
            return screen(&session, wait).await;
        }
        let since = args.since.unwrap_or_else(|| session.cursor(stream));
        if wait > Duration::ZERO && stream == 0 {
            session.wait_for_output(since, wait).await;
        }
        let max = args.max_bytes.map_or(budget, |m| (m as usize).min(budget));
        let page = fit_output(max, |max| page(&session, stream, since, max), |got| (got.text.as_str(), ""));
        let status = session.status();
        let mut text = String::new();
        if page.dropped > 0 {
            text.push_str(&format!(
                "[{} older bytes are no longer kept; showing from cursor {}]\n",
                page.dropped, page.from
            ));
        }
        text.push_str(if page.text.is_empty() { "(no new output)" } else { &page.text });
        if !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(&format!(
            "[session `{}` {}; cursor {} of {}",
            session.id,
            describe_status(status),
            page.next,
            page.total
        ));
        text.push_str(if page.more { "; more output waiting: call `read_output` again]" } else { "]" });
        let data = Output {
            state: SessionState::of(Some(session.id.clone()), status),
            output: split_lines(&page.text),
            from: page.from,
            next: page.next,
            total: page.total,
            dropped: page.dropped,
            more: page.more,
            binary: page.binary,
        };
        Ok(Reply::new(text, data))
    }
}

/// The rendered screen of a PTY session.
async fn screen(session: &TermSession, wait: Duration) -> Result<Reply<Output>, ToolError> {
    if session.kind != Kind::Pty {
        return Err(ToolError::WrongSession {
            id: session.id.clone(),
            problem: "has no terminal screen (it is a command with plain output); leave out `screen`".into(),
        });
    }
    if wait > Duration::ZERO {
        session.wait_until_quiet(session.cursor(0), wait, QUIET).await;
    }
    let (contents, (row, col), alternate) = session.screen().unwrap_or_default();
    let status = session.status();
    let total = session.out.total();
    let text = format!(
        "{contents}\n[screen of session `{}` ({}), cursor at row {}, column {}{}]",
        session.id,
        describe_status(status),
        row + 1,
        col + 1,
        if alternate { ", full-screen program" } else { "" }
    );
    let data = Output {
        state: SessionState::of(Some(session.id.clone()), status),
        output: split_lines(&contents),
        from: total,
        next: total,
        total,
        dropped: 0,
        more: false,
        binary: false,
    };
    Ok(Reply::new(text, data))
}
