//! What `delegate` asks of the layer that can run a sub-agent (the server, which holds the
//! agent loop and the model sources): the request as the gate let it through, and what the
//! run came to. The tools layer names no agent or protocol type.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;

use toolbelt_mcp_core::error::ToolError;

/// A sub-task for a sub-agent, with the limits the call set.
#[derive(Debug, Clone)]
pub struct Request {
    /// What the sub-agent is to do.
    pub task: String,
    /// The directories it may work in (confined to the caller's roots by the gate); empty:
    /// the caller's roots.
    pub paths: Vec<PathBuf>,
    /// Its file operations only read and its commands run in the read-only sandbox.
    pub read_only: bool,
    /// The operations it may call (`read_file`, `terminal_operations.run_command`, `file_*`);
    /// empty: every one this server lists.
    pub operations: Vec<String>,
    /// Most model turns.
    pub max_turns: Option<u32>,
    /// Most tokens, in and out together.
    pub max_tokens: Option<u64>,
}

/// How a sub-agent's run ended.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Its last text.
    pub answer: String,
    /// `completed`, `max_turns`, `token_budget`, `interrupted` (cancelled) or `error`.
    pub stop: String,
    /// Why, when it stopped on an error.
    pub error: Option<String>,
    /// Model turns taken.
    pub turns: u32,
    /// Tool calls made, and how many of them were refused or failed.
    pub tool_calls: usize,
    /// Its calls that were denied (by the policy or the user).
    pub denied: usize,
    /// Tokens read and written.
    pub tokens: (u64, u64),
    /// The model, as `provider model`, or `the client (sampling)`.
    pub model: String,
    /// The todo lists with items when it ended, as markdown.
    pub todos: Option<String>,
    /// Its transcript (`toolbelt-mcp agent --resume` continues it), when kept.
    pub transcript: Option<PathBuf>,
}

/// A boxed future of a delegation.
pub type Running = Pin<Box<dyn Future<Output = Result<Outcome, ToolError>> + Send>>;

/// The layer that runs sub-agents for this connection.
pub trait Delegator: Send + Sync + std::fmt::Debug {
    /// Runs `request` as the caller of `context`, never with more than the caller may do.
    fn delegate(&self, request: Request, context: Arc<crate::Context>) -> Running;
}
