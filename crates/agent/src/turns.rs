//! The loop: ask the model, run the tool calls it asks for through MCP (`calls.rs`),
//! feed the results back, until it answers without a tool call or a limit stops it.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::json;

use super::context::Context;
use super::interrupt::{Interrupts, Signal};
use super::provider::{Block, Finish, Message, Provider, Request, Role, Usage};
use super::report::{Reporter, Ticker, Transcript, one_line, thousands};
use super::servers::Servers;
use super::tools::Toolset;

/// What bounds a run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// Most model turns.
    pub max_turns: u32,
    /// Most tokens (in + out) over the run.
    pub max_tokens_total: Option<u64>,
    /// Most output tokens per turn.
    pub max_output_tokens: Option<u32>,
}

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The model answered without a tool call.
    Completed,
    /// `--max-turns` was reached with tool calls still asked for.
    MaxTurns,
    /// `--max-tokens-total` was used up.
    TokenBudget,
    /// Ctrl-C (twice, or with nothing to cancel) or SIGTERM.
    Interrupted,
    /// The provider failed, or every server went away.
    Error(String),
    /// A server `--require-servers` needs went away.
    ServerLost(String),
}

impl Stop {
    /// The name in summaries.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::MaxTurns => "max_turns",
            Self::TokenBudget => "token_budget",
            Self::Interrupted => "interrupted",
            Self::Error(_) => "error",
            Self::ServerLost(_) => "server_lost",
        }
    }
}

/// One tool call, as the summary lists it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CallRecord {
    /// The turn that asked for it.
    pub turn: u32,
    /// The tool.
    pub tool: String,
    /// Its `operation`, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    /// Its arguments on one line, cut.
    pub arguments: String,
    /// `ok`, `error`, `denied`, `rejected` (malformed or not offered) or `cancelled`.
    pub outcome: &'static str,
    /// How long it took.
    pub ms: u64,
}

/// What a run did.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// The model's last text.
    pub final_answer: String,
    /// Why it stopped.
    pub stop: Stop,
    /// Model turns taken.
    pub turns: u32,
    /// Every tool call.
    pub calls: Vec<CallRecord>,
    /// Tokens used.
    pub usage: Usage,
}

/// Everything the loop works with.
pub(crate) struct Agent<'a> {
    /// The model.
    pub provider: &'a dyn Provider,
    /// The MCP servers.
    pub servers: &'a Servers,
    /// What the model may call (a server that goes away takes its tools with it).
    pub tools: &'a mut Toolset,
    /// Whether a server going away stops the run (`--require-servers`).
    pub require_servers: bool,
    /// Progress on stderr.
    pub reporter: &'a Reporter,
    /// The JSONL transcript.
    pub transcript: &'a mut Transcript,
    /// Ctrl-C and SIGTERM.
    pub interrupts: &'a mut Interrupts,
    /// Questions the user (or the headless default) said no to.
    pub denied: Arc<AtomicUsize>,
    /// The system prompt.
    pub system: &'a str,
    /// The bounds.
    pub limits: Limits,
    /// The task as first given (kept whole through compactions).
    pub task: &'a str,
    /// The user's latest instruction (the task, or the prompt of a resumed run).
    pub instruction: &'a str,
    /// The context window and what was compacted.
    pub context: Context,
    /// Cancels a question waiting on the terminal (Ctrl-C during a call that asks).
    pub cancel_question: super::stdin::Cancel,
}

impl Agent<'_> {
    /// Runs the conversation `messages` (ending with the user's message) to its end.
    pub(crate) async fn run(&mut self, mut messages: Vec<Message>) -> Run {
        let mut run = Run {
            final_answer: String::new(),
            stop: Stop::Completed,
            turns: 0,
            calls: Vec::new(),
            usage: Usage::default(),
        };
        loop {
            if let Some(stop) = self.servers_gone() {
                run.stop = stop;
                break;
            }
            if run.turns >= self.limits.max_turns {
                run.stop = Stop::MaxTurns;
                break;
            }
            if self.limits.max_tokens_total.is_some_and(|max| run.usage.input + run.usage.output >= max) {
                run.stop = Stop::TokenBudget;
                break;
            }
            let reminder = self.servers.todo_reminder().await.map(|list| {
                format!("<reminder>\nThe current todo list (keep it current as you work):\n\n{list}</reminder>")
            });
            let turn = run.turns + 1;
            if let Some(text) = &reminder {
                self.transcript.write(self.reporter, &json!({"type": "reminder", "turn": turn, "text": text}));
            }
            if let Err(stop) = self.fit(&mut messages, reminder.as_deref(), turn, &mut run).await {
                run.stop = stop;
                break;
            }
            let request = Request {
                system: self.system,
                messages: &messages,
                tools: &self.tools.defs,
                reminder: reminder.as_deref(),
                max_output_tokens: self.limits.max_output_tokens,
                show_text: true,
            };
            let started = Instant::now();
            let reply = match Self::ask(self.provider, self.reporter, self.interrupts, request, turn).await {
                Some(Ok(reply)) => reply,
                Some(Err(err)) => {
                    run.stop = Stop::Error(err);
                    break;
                }
                None => {
                    run.stop = Stop::Interrupted;
                    break;
                }
            };
            run.turns = turn;
            self.context.calibrate(&messages, reminder.as_deref(), reply.usage.input);
            self.context.note_files(&reply.content);
            run.usage.input += reply.usage.input;
            run.usage.output += reply.usage.output;
            self.reporter.line(format_args!(
                "turn {turn} · {:.1} s · {} in / {} out tokens",
                started.elapsed().as_secs_f64(),
                thousands(reply.usage.input),
                thousands(reply.usage.output)
            ));
            self.transcript.write(
                self.reporter,
                &json!({"type": "message", "turn": turn, "role": "assistant", "content": reply.content, "usage": reply.usage, "finish": reply.finish}),
            );
            let text: Vec<String> = reply
                .content
                .iter()
                .filter_map(|b| if let Block::Text { text } = b { Some(text.clone()) } else { None })
                .collect();
            if !text.is_empty() {
                run.final_answer = text.join("\n");
            }
            let asked: Vec<Block> =
                reply.content.iter().filter(|b| matches!(b, Block::ToolCall { .. })).cloned().collect();
            let finish = reply.finish;
            messages.push(Message { role: Role::Assistant, content: reply.content });
            if asked.is_empty() {
                match finish {
                    Finish::Length => self.reporter.line(
                        "agent: the model hit its output limit; its answer may be cut (raise `--max-output-tokens`)",
                    ),
                    Finish::Refused => self.reporter.line("agent: the model refused or its answer was filtered"),
                    Finish::Done => {}
                }
                break;
            }
            if !text.is_empty() && !self.reporter.take_streamed() {
                self.reporter.line(format_args!("  {}", one_line(&text.join(" "), 200)));
            }
            if turn >= self.limits.max_turns {
                run.stop = Stop::MaxTurns;
                break;
            }
            let (results, interrupted) = self.run_calls(turn, asked, &mut run.calls).await;
            self.transcript
                .write(self.reporter, &json!({"type": "message", "turn": turn, "role": "user", "content": results}));
            messages.push(Message { role: Role::User, content: results });
            if interrupted {
                run.stop = Stop::Interrupted;
                break;
            }
        }
        run
    }

    /// Reports the servers that went away since the last turn and stops offering their tools;
    /// the run stops when none is left, or with `--require-servers`.
    fn servers_gone(&mut self) -> Option<Stop> {
        let mut stop = None;
        for index in self.servers.newly_gone() {
            let name = &self.servers.list[index].name;
            self.tools.remove_server(index);
            self.context.set_tools(self.system, &self.tools.defs);
            let required = self.require_servers;
            self.reporter.line(format_args!(
                "agent: the MCP server `{name}` went away during the run; {}",
                if required { "stopping (`--require-servers`)" } else { "going on without its tools" }
            ));
            if required {
                stop = Some(Stop::ServerLost(format!(
                    "the MCP server `{name}` went away during the run (`--require-servers`)"
                )));
            }
        }
        if stop.is_none() && (!self.servers.any_running() || self.tools.defs.is_empty()) {
            stop = Some(Stop::Error(format!(
                "the MCP server ({}) went away during the run; its messages above say why",
                self.servers.label()
            )));
        }
        stop
    }

    /// Asks the model, showing a live line meanwhile; `None` when interrupted.
    pub(super) async fn ask(
        provider: &dyn Provider,
        reporter: &Reporter,
        interrupts: &mut Interrupts,
        request: Request<'_>,
        turn: u32,
    ) -> Option<Result<super::provider::Reply, String>> {
        let mut ticker = Ticker::new();
        let mut tick = tokio::time::interval(tick_period(reporter));
        let reply = provider.complete(request);
        tokio::pin!(reply);
        loop {
            tokio::select! {
                reply = &mut reply => {
                    reporter.clear_live();
                    return Some(reply.map_err(|e| e.to_string()));
                }
                signal = interrupts.next() => {
                    reporter.line(match signal {
                        Signal::Interrupt => "agent: Ctrl-C while the model was thinking: stopping",
                        Signal::Terminate => "agent: terminated: stopping",
                    });
                    return None;
                }
                _ = tick.tick() => ticker.tick(reporter, &format!("turn {turn}: waiting for the model")),
            }
        }
    }
}

/// How often the live line is redrawn (or, off a terminal, checked).
pub(super) fn tick_period(reporter: &Reporter) -> Duration {
    if reporter.is_tty() { Duration::from_millis(100) } else { Duration::from_secs(1) }
}
