//! `toolbelt-mcp agent`: a coding agent that is an MCP client of `toolbelt-mcp serve` (or of
//! another server) and drives an LLM through its tools. This file wires the pieces: the task,
//! the provider, the connection, the loop, and what is printed at the end.

mod args;
mod calls;
mod client;
mod compact;
mod context;
pub mod delegate;
mod handler;
mod interrupt;
mod mcp_config;
mod names;
mod prompt;
mod provider;
mod report;
mod resume;
mod servers;
mod settings;
mod stdin;
mod summary;
mod tools;
mod turns;

use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use serde_json::json;

pub use crate::args::AgentArgs;
use provider::{Block, Message, Role};
use report::{Reporter, Transcript, thousands};
use turns::{Agent, Limits, Run, Stop};

/// The most bytes of text a result of an `--mcp-config` server brings the model without
/// `--output-budget` (the same default the toolbelt's own results have).
const DEFAULT_OUTPUT_BUDGET: usize = 64 * 1024;

/// Exit code: a setup or provider error.
const EXIT_ERROR: u8 = 1;
/// Exit code: `--max-turns` or `--max-tokens-total` reached.
const EXIT_LIMIT: u8 = 2;
/// Exit code: a question was declined, the run was interrupted, or a server that
/// `--require-servers` needs did not start or went away.
const EXIT_DENIED: u8 = 3;

/// Runs the agent; the exit code says how it ended.
pub fn main(args: &AgentArgs, local_token: &dyn Fn() -> Option<String>) -> ExitCode {
    // TLS for the provider and for `--server-url`: rustls with ring (see Cargo.toml).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let reporter = Arc::new(Reporter::new());
    let setup = match settings::Setup::resolve(args, &|key| std::env::var_os(key), local_token) {
        Ok(setup) => setup,
        Err(err) => return fail(&reporter, &err.to_string()),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build();
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(err) => return fail(&reporter, &format!("cannot start the async runtime: {err}")),
    };
    let outcome = runtime.block_on(run(args, setup, reporter.clone()));
    // A question may still be waiting for a line on stdin: do not wait for it.
    runtime.shutdown_background();
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(Failed::Setup(message)) => fail(&reporter, &message),
        Err(Failed::RequiredServer(message)) => {
            reporter.line(format_args!("toolbelt-mcp agent: {message}"));
            ExitCode::from(EXIT_DENIED)
        }
    }
}

fn fail(reporter: &Reporter, message: &str) -> ExitCode {
    reporter.line(format_args!("toolbelt-mcp agent: {message}"));
    ExitCode::from(EXIT_ERROR)
}

/// Why a run did not start.
enum Failed {
    /// A setup error (exit 1).
    Setup(String),
    /// A server `--require-servers` needs did not start (exit 3).
    RequiredServer(String),
}

impl From<String> for Failed {
    fn from(message: String) -> Self {
        Self::Setup(message)
    }
}

async fn run(args: &AgentArgs, setup: settings::Setup, reporter: Arc<Reporter>) -> Result<u8, Failed> {
    let started = Instant::now();
    let notify_to = reporter.clone();
    let notify: provider::http::Notify = Arc::new(move |line| notify_to.line(format_args!("  {line}")));
    // Streamed text is shown as it arrives on a terminal; elsewhere each turn's text is one
    // line after it.
    let show_to = reporter.clone();
    let show: Option<provider::stream::TextSink> =
        reporter.is_tty().then(|| Arc::new(move |text: &str| show_to.stream_text(text)) as provider::stream::TextSink);
    let provider = provider::build(setup.provider.clone(), notify, show).map_err(|e| e.to_string())?;
    let mut transcript = open_transcript(args)
        .map_err(|e| format!("cannot create the transcript file: {e}; pass a writable `--transcript` path"))?;
    let mut interrupts = interrupt::Interrupts::listen().map_err(|e| format!("cannot listen for Ctrl-C: {e}"))?;
    let denied = Arc::new(AtomicUsize::new(0));
    let handler = handler::Handler::new(setup.answering, reporter.clone(), denied.clone());
    let budget = args.common.output_budget.unwrap_or(DEFAULT_OUTPUT_BUDGET);
    let servers = servers::Servers::open(
        setup.target.as_ref(),
        &setup.servers,
        &handler,
        budget,
        args.require_servers,
        &reporter,
    )
    .await
    .map_err(|err| match err {
        servers::OpenError::First(message) => Failed::Setup(message),
        servers::OpenError::Required(message) => Failed::RequiredServer(message),
    })?;
    if !servers.any_running() {
        let message = "no MCP server is running (the lines above say why); fix the `--mcp-config` entries";
        return Err(Failed::Setup(message.into()));
    }
    let listed: Vec<tools::Listed<'_>> = servers
        .list
        .iter()
        .map(|s| tools::Listed { qualifier: (!s.first).then_some(s.name.as_str()), tools: s.tools() })
        .collect();
    let mut tools = tools::Toolset::new(&listed, &setup.filter);
    if tools.defs.is_empty() {
        let listed = tool_names(&servers);
        servers.close().await;
        return Err(format!(
            "no tool is left to offer the model (the servers have {listed}); loosen `--allow-tools` / `--deny-tools`"
        )
        .into());
    }
    let offered: Vec<String> = tools.names().iter().map(|n| n.to_string()).collect();
    let first_task = setup.resumed.as_ref().map_or_else(|| setup.task.clone(), |r| r.task.clone());
    let system = prompt::system_prompt(&setup.root, prompt::read_agents_md(&setup.root).as_deref());
    reporter.line(format_args!(
        "agent: {} · {} · {} tools · {}",
        provider.label(),
        servers.label(),
        tools.defs.len(),
        setup.root.display()
    ));
    transcript.write(
        &reporter,
        &json!({
            "type": "start", "provider": provider.label(), "server": servers.label(), "servers": servers.summary(),
            "tools": offered, "system": system, "task": first_task, "invocation": setup.invocation,
            "resumed_from": args.resume,
        }),
    );
    let limits = Limits {
        max_turns: args.max_turns,
        max_tokens_total: args.max_tokens_total,
        max_output_tokens: setup.max_output_tokens,
    };
    let window = args.context_window.unwrap_or_else(|| context::window_for(&setup.provider.model));
    let instruction = setup.task.clone();
    let context = context::Context::new(window, &system, &tools.defs);
    let mut agent = Agent {
        provider: provider.as_ref(),
        servers: &servers,
        tools: &mut tools,
        require_servers: args.require_servers,
        reporter: &reporter,
        transcript: &mut transcript,
        interrupts: &mut interrupts,
        denied: denied.clone(),
        system: &system,
        limits,
        task: &first_task,
        instruction: &instruction,
        context,
        cancel_question: handler.cancel(),
    };
    let messages = match setup.resumed {
        Some(resumed) => {
            reporter.line(format_args!(
                "agent: resuming {} earlier messages from `{}`",
                resumed.messages.len(),
                args.resume.as_deref().unwrap_or_else(|| std::path::Path::new("")).display()
            ));
            for note in &resumed.notes {
                reporter.line(format_args!("agent: the transcript: {note}"));
            }
            let messages = resume::continue_with(resumed.messages, &instruction);
            let from = args.resume.as_ref().map(|p| p.display().to_string());
            agent.transcript.write(&reporter, &json!({"type": "resume", "from": from, "messages": messages}));
            messages
        }
        None => {
            let first = Message { role: Role::User, content: vec![Block::text(&instruction)] };
            agent
                .transcript
                .write(&reporter, &json!({"type": "message", "turn": 0, "role": "user", "content": first.content}));
            vec![first]
        }
    };
    let outcome = agent.run(messages).await;
    let compactions = serde_json::to_value(&agent.context.compactions).unwrap_or_default();
    drop(agent);
    let server_summary = servers.summary();
    servers.close().await;
    let denied = denied.load(Ordering::Relaxed);
    let code = exit_code(&outcome.stop, denied);
    let mut summary = summary(&outcome, denied, code, started, &provider.label(), &offered);
    summary["servers"] = server_summary;
    summary["context_window"] = window.into();
    summary["compactions"] = compactions;
    transcript.write(&reporter, &json!({"type": "end", "summary": summary}));
    report_end(&reporter, &outcome, denied, code, started);
    let mut out = std::io::stdout().lock();
    // On a terminal the answer was streamed there already.
    let shown = reporter.take_streamed() && std::io::IsTerminal::is_terminal(&out);
    let printed = if args.json {
        writeln!(out, "{summary}")
    } else if outcome.final_answer.is_empty() || shown {
        Ok(())
    } else {
        writeln!(out, "{}", outcome.final_answer)
    };
    printed.map_err(|e| format!("cannot write to stdout: {e}"))?;
    Ok(code)
}

/// The `--transcript` file: appended to when it is the `--resume` file, else created.
fn open_transcript(args: &AgentArgs) -> std::io::Result<Transcript> {
    let same = |a: &std::path::Path, b: &std::path::Path| {
        let canonical =
            |p: &std::path::Path| toolbelt_mcp_sandbox::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        canonical(a) == canonical(b)
    };
    match (&args.transcript, &args.resume) {
        (Some(path), Some(resumed)) if same(path, resumed) => Transcript::append(path),
        (path, _) => Transcript::create(path.as_deref()),
    }
}

/// The tools every server listed, for a message.
fn tool_names(servers: &servers::Servers) -> String {
    let names: Vec<String> = servers.list.iter().flat_map(|s| s.tools()).map(|t| format!("`{}`", t.name)).collect();
    if names.is_empty() { "none".into() } else { names.join(", ") }
}

/// How a run maps to the exit code.
fn exit_code(stop: &Stop, denied: usize) -> u8 {
    match stop {
        Stop::Completed if denied == 0 => 0,
        Stop::Completed | Stop::Interrupted | Stop::ServerLost(_) => EXIT_DENIED,
        Stop::MaxTurns | Stop::TokenBudget => EXIT_LIMIT,
        Stop::Error(_) => EXIT_ERROR,
    }
}

/// The `--json` summary (also the transcript's last line).
fn summary(
    run: &Run,
    denied: usize,
    code: u8,
    started: Instant,
    provider: &str,
    tools: &[String],
) -> serde_json::Value {
    json!({
        "final_answer": run.final_answer,
        "stop_reason": run.stop.name(),
        "error": match &run.stop { Stop::Error(message) | Stop::ServerLost(message) => Some(message), _ => None },
        "exit_code": code,
        "turns": run.turns,
        "tool_calls": run.calls,
        "denied": denied,
        "tokens": {"input": run.usage.input, "output": run.usage.output},
        "duration_ms": started.elapsed().as_millis() as u64,
        "provider": provider,
        "tools": tools,
    })
}

/// The last stderr lines: how it ended, and why when it was not a plain success.
fn report_end(reporter: &Reporter, run: &Run, denied: usize, code: u8, started: Instant) {
    reporter.line(format_args!(
        "agent: {} · {} turns · {} tool calls · {} in / {} out tokens · {:.1} s · exit {code}",
        run.stop.name(),
        run.turns,
        run.calls.len(),
        thousands(run.usage.input),
        thousands(run.usage.output),
        started.elapsed().as_secs_f64()
    ));
    match &run.stop {
        Stop::Error(message) | Stop::ServerLost(message) => {
            reporter.line(format_args!("toolbelt-mcp agent: {message}"))
        }
        Stop::MaxTurns => {
            reporter.line("agent: the turn limit was reached before the model finished; raise `--max-turns`")
        }
        Stop::TokenBudget => {
            reporter.line("agent: the token budget was used up before the model finished; raise `--max-tokens-total`")
        }
        Stop::Completed | Stop::Interrupted => {}
    }
    if denied > 0 {
        reporter.line(format_args!(
            "agent: {denied} question(s) from the server were declined; pass `--yes` to accept them, or run on a terminal to answer"
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_stop() {
        assert_eq!(exit_code(&Stop::Completed, 0), 0);
        assert_eq!(exit_code(&Stop::Completed, 1), 3);
        assert_eq!(exit_code(&Stop::Interrupted, 0), 3);
        assert_eq!(exit_code(&Stop::MaxTurns, 2), 2);
        assert_eq!(exit_code(&Stop::TokenBudget, 0), 2);
        assert_eq!(exit_code(&Stop::Error("x".into()), 0), 1);
        assert_eq!(exit_code(&Stop::ServerLost("x".into()), 0), 3);
    }
}
