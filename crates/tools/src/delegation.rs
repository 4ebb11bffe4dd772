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

/// Whether `entry` of a call's `operations` names `operation` of `tool`: `operation` in any
/// tool, `tool` whole, `tool.operation`, `tool.*` or `*.operation` (`tool` is the name the
/// call used: a consolidated tool, or in the granular layout the operation's own tool).
pub fn entry_allows(entry: &str, tool: &str, operation: &str) -> bool {
    match entry.split_once('.') {
        Some((t, op)) => (t == tool || t == "*") && (op == operation || op == "*"),
        None => entry == operation || entry == tool,
    }
}

/// Whether `operations` (empty: no limit) lets `operation` of `tool` be called.
pub fn allows(operations: &[String], tool: &str, operation: &str) -> bool {
    operations.is_empty() || operations.iter().any(|entry| entry_allows(entry, tool, operation))
}

/// The entries of `operations` that name no operation this server has, in either layout.
pub fn unknown(operations: &[String]) -> Vec<&str> {
    operations
        .iter()
        .filter(|entry| {
            !crate::TOOLS.iter().any(|tool| {
                tool.operations.iter().any(|op| {
                    entry_allows(entry, tool.name, op.name) || entry_allows(entry, &tool.granular_name(op), op.name)
                })
            })
        })
        .map(String::as_str)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> Vec<String> {
        entries.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn entries_name_an_operation_a_tool_or_both() {
        assert!(allows(&[], "file_operations", "create_file"));
        let reads = list(&["read_file", "grep_search"]);
        assert!(allows(&reads, "file_operations", "read_file") && allows(&reads, "read_file", "read_file"));
        assert!(!allows(&reads, "file_operations", "create_file"));
        assert!(allows(&list(&["file_operations.*"]), "file_operations", "replace_string"));
        assert!(!allows(&list(&["file_operations.*"]), "terminal_operations", "run_command"));
        let tool = list(&["terminal_operations"]);
        assert!(allows(&tool, "terminal_operations", "run_command") && !allows(&tool, "file_operations", "read_file"));
        assert!(allows(&list(&["*.run_command"]), "terminal_operations", "run_command"));
        assert!(!allows(&list(&["Read_File"]), "file_operations", "read_file"), "names are exact");
    }

    #[test]
    fn unknown_entries_are_named() {
        let given = list(&["read_file", "todo_operations.*", "memory_store", "nonsense", "file_operations.nope"]);
        assert_eq!(unknown(&given), ["nonsense", "file_operations.nope"]);
    }
}
