//! The agent loop as a library, for `delegate`: one run of a sub-agent against a server of
//! this process (reached over an in-process stream), its progress lines to a callback, stopped
//! by its caller's cancellation, its transcript in a file `--resume` can continue.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use toolbelt_mcp_core::config::delegate::{Delegate, DelegateProvider};

use crate::handler::{Answering, Handler};
use crate::provider::{self, Block, Kind, Message, Provider, Role, Settings};
use crate::report::{LineSink, Reporter, Transcript};
use crate::tools::{Filter, Listed, Toolset};
use crate::turns::{Agent, Limits};
use crate::{context, prompt, servers, settings};

/// How long one request to the model may take.
const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(600);

/// What a sub-agent's prompt adds: who reads its answer.
const SUB_AGENT: &str = "\n\nYou are a sub-agent: another agent handed you this task and reads your final answer \
instead of the user. Make that answer complete on its own: what you found or changed (with paths), how you \
verified it, and what is left open. Stay within the task; the tools refuse what you were not given.";

/// Why a sub-agent could not start.
#[derive(Debug, thiserror::Error)]
pub enum DelegateError {
    /// The key's variable is unset or empty.
    #[error("the environment variable `{0}` that `[delegate]` names holds no API key; set it where the server starts")]
    NoKey(String),
    /// The provider could not be built (a bad URL, TLS).
    #[error("the `[delegate]` provider cannot be used: {0}")]
    Provider(String),
    /// The transcript file could not be created.
    #[error("cannot create the sub-agent's transcript `{path}`: {error}; check that the state dir is writable")]
    Transcript {
        /// The file.
        path: PathBuf,
        /// Why not.
        error: std::io::Error,
    },
    /// The in-process server did not answer.
    #[error("{0}")]
    Server(String),
    /// Nothing the call allowed is offered to the sub-agent.
    #[error(
        "none of the operations given ({0}) is one the sub-agent's server offers it; name others (a read-only sub-agent has no file writes, and `delegate` is offered only where nesting allows)"
    )]
    NoTools(String),
}

pub use crate::provider::sampling::Sample;

/// Where a sub-agent's model comes from.
#[derive(Clone)]
pub enum Model {
    /// The calling client's, through sampling with tools.
    Sampling(Sample),
    /// The `[delegate]` provider.
    Configured(Delegate),
}

/// One sub-agent's run.
pub struct Delegation {
    /// What it is to do.
    pub task: String,
    /// The directory named in its prompt (whose `AGENTS.md` it reads).
    pub root: PathBuf,
    /// The stream to the server it works through.
    pub stream: tokio::io::DuplexStream,
    /// Most model turns.
    pub max_turns: u32,
    /// Most tokens, in and out.
    pub max_tokens: Option<u64>,
    /// The operations offered (`tool`, `tool.operation`, `operation`; `*` wildcards); empty: all.
    pub operations: Vec<String>,
    /// Its transcript file.
    pub transcript: PathBuf,
    /// Cancelled when the caller cancels.
    pub cancel: CancellationToken,
    /// Where its progress lines go.
    pub progress: Arc<dyn Fn(&str) + Send + Sync>,
}

/// How the run ended.
#[derive(Debug, Clone)]
pub struct Delegated {
    /// The model's last text.
    pub answer: String,
    /// `completed`, `max_turns`, `token_budget`, `interrupted` or `error`.
    pub stop: &'static str,
    /// Why, on an error.
    pub error: Option<String>,
    /// Model turns.
    pub turns: u32,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Tokens in and out.
    pub tokens: (u64, u64),
    /// `provider model`.
    pub model: String,
    /// The todo lists with items at the end, as markdown.
    pub todos: Option<String>,
}

/// The provider `[delegate]` describes, with its key from `env`.
fn settings(config: &Delegate, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Settings, DelegateError> {
    let api_key = env(&config.api_key_env).map(|v| v.to_string_lossy().into_owned()).filter(|k| !k.is_empty());
    // A local server (a base URL and no key variable named) needs no key.
    if api_key.is_none() && config.base_url.is_none() {
        return Err(DelegateError::NoKey(config.api_key_env.clone()));
    }
    let (kind, default_url) = match config.provider {
        DelegateProvider::Anthropic => (Kind::Anthropic, "https://api.anthropic.com"),
        DelegateProvider::Openai => (Kind::Openai, "https://api.openai.com/v1"),
    };
    Ok(Settings {
        kind,
        model: config.model.clone().unwrap_or_else(|| settings::ANTHROPIC_MODEL.to_string()),
        base_url: config.base_url.clone().unwrap_or_else(|| default_url.to_string()),
        api_key,
        key_env: config.api_key_env.clone(),
        timeout: REQUEST_TIMEOUT,
        stream: true,
    })
}

/// Whether `[delegate]` can run: its key is set (or a local endpoint needs none).
pub fn check(config: &Delegate, env: &dyn Fn(&str) -> Option<OsString>) -> Result<String, String> {
    settings(config, env).map(|s| format!("{} {}", s.kind.name(), s.model)).map_err(|e| e.to_string())
}

/// Runs `delegation` with `model` to its end (a configured provider's key from `env`).
pub async fn run(
    model: Model,
    delegation: Delegation,
    env: &(dyn Fn(&str) -> Option<OsString> + Sync),
) -> Result<Delegated, DelegateError> {
    let sink: LineSink = delegation.progress.clone();
    let reporter = Arc::new(Reporter::to_sink(sink.clone()));
    let (provider, model): (Box<dyn Provider>, String) = match model {
        Model::Sampling(sample) => {
            let provider = provider::sampling::Sampling::new(sample);
            let label = provider.label();
            (Box::new(provider), label)
        }
        Model::Configured(config) => {
            let _ = rustls::crypto::ring::default_provider().install_default();
            let settings = settings(&config, env)?;
            let notify: provider::http::Notify = Arc::new(move |line| sink(&line));
            let label = format!("{} {}", settings.kind.name(), settings.model);
            let built = provider::build(settings, notify, None).map_err(|e| DelegateError::Provider(e.to_string()))?;
            (built, label)
        }
    };
    let mut transcript = Transcript::create_private(&delegation.transcript)
        .map_err(|error| DelegateError::Transcript { path: delegation.transcript.clone(), error })?;
    let denied = Arc::new(AtomicUsize::new(0));
    // Its server asks the caller's client itself: nothing reaches this handler to answer.
    let handler = Handler::new(Answering::Decline, reporter.clone(), denied.clone());
    let servers = servers::Servers::in_process(delegation.stream, &handler).await.map_err(DelegateError::Server)?;
    let filter =
        Filter { allow: delegation.operations.iter().flat_map(|op| qualified(op)).collect(), deny: Vec::new() };
    let listed: Vec<Listed<'_>> = servers.list.iter().map(|s| Listed { qualifier: None, tools: s.tools() }).collect();
    let mut tools = Toolset::new(&listed, &filter);
    if tools.defs.is_empty() {
        servers.close().await;
        let given: Vec<String> = delegation.operations.iter().map(|op| format!("`{op}`")).collect();
        return Err(DelegateError::NoTools(given.join(", ")));
    }
    let mut system = prompt::system_prompt(&delegation.root, prompt::read_agents_md(&delegation.root).as_deref());
    system.push_str(SUB_AGENT);
    transcript.write(
        &reporter,
        &json!({"type": "start", "provider": model, "server": servers.label(), "tools": tools.names(),
                "system": system, "task": delegation.task, "delegated": true}),
    );
    let mut interrupts = crate::interrupt::Interrupts::on_cancel(delegation.cancel.clone());
    let window = context::window_for(&model);
    let context = context::Context::new(window, &system, &tools.defs);
    let mut agent = Agent {
        provider: provider.as_ref(),
        servers: &servers,
        tools: &mut tools,
        require_servers: true,
        reporter: &reporter,
        transcript: &mut transcript,
        interrupts: &mut interrupts,
        denied,
        system: &system,
        limits: Limits {
            max_turns: delegation.max_turns,
            max_tokens_total: delegation.max_tokens,
            max_output_tokens: None,
        },
        task: &delegation.task,
        instruction: &delegation.task,
        context,
        cancel_question: handler.cancel(),
    };
    let first = Message { role: Role::User, content: vec![Block::text(&delegation.task)] };
    agent.transcript.write(&reporter, &json!({"type": "message", "turn": 0, "role": "user", "content": first.content}));
    let outcome = agent.run(vec![first]).await;
    drop(agent);
    let todos = servers.todo_reminder().await;
    servers.close().await;
    let error = match &outcome.stop {
        crate::turns::Stop::Error(message) | crate::turns::Stop::ServerLost(message) => Some(message.clone()),
        _ => None,
    };
    let stop = match outcome.stop.name() {
        "server_lost" => "error",
        other => other,
    };
    transcript.write(
        &reporter,
        &json!({"type": "end", "summary": {"final_answer": outcome.final_answer, "stop_reason": stop, "error": error,
                "turns": outcome.turns, "tool_calls": outcome.calls,
                "tokens": {"input": outcome.usage.input, "output": outcome.usage.output}, "provider": model}}),
    );
    Ok(Delegated {
        answer: outcome.final_answer,
        stop,
        error,
        turns: outcome.turns,
        tool_calls: outcome.calls.len(),
        tokens: (outcome.usage.input, outcome.usage.output),
        model,
        todos,
    })
}

/// An entry of the call's `operations` as the tool filter reads it: a bare operation matches
/// it in any tool (`read_file` → `*.read_file`) and as a tool of the granular layout.
fn qualified(entry: &str) -> Vec<String> {
    if entry.contains('.') || entry.ends_with("_operations") {
        vec![entry.to_string()]
    } else {
        vec![entry.to_string(), format!("*.{entry}")]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Delegate {
        let table: toolbelt_mcp_core::config::delegate::DelegateTable = toml::from_str(text).unwrap();
        table.resolve().unwrap()
    }

    #[test]
    fn the_key_comes_from_the_named_variable_only() {
        let config = table("provider = \"openai\"\nmodel = \"m\"\napi_key_env = \"MY_KEY\"");
        let none = |_: &str| None;
        let err = settings(&config, &none).unwrap_err().to_string();
        assert!(err.contains("`MY_KEY`"), "{err}");
        let set = |name: &str| (name == "MY_KEY").then(|| OsString::from("k"));
        let settings = settings(&config, &set).unwrap();
        assert_eq!((settings.api_key.as_deref(), settings.model.as_str()), (Some("k"), "m"));
        let local = table("provider = \"openai\"\nmodel = \"m\"\nbase_url = \"http://127.0.0.1:1/v1\"");
        assert!(check(&local, &none).is_ok());
    }

    #[test]
    fn bare_operations_match_in_any_tool() {
        assert_eq!(qualified("read_file"), ["read_file", "*.read_file"]);
        assert_eq!(qualified("file_operations.*"), ["file_operations.*"]);
        assert_eq!(qualified("file_operations"), ["file_operations"]);
    }
}
