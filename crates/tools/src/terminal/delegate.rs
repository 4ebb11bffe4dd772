//! `delegate`: hands a sub-task to a sub-agent with a fresh context, which works through this
//! server's own operations under the caller's roots, sandbox and approvals (or narrower ones),
//! and answers with its result, the files it changed (undoable here) and what it cost.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::delegation::{Outcome, Request};
use crate::session::ChangeKind;
use crate::{Call, Effect, EffectKind, Lean, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;

/// The `delegate` operation.
pub(super) struct Delegate;

/// Arguments of `delegate`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// What the sub-agent is to do, with everything it needs to know: it sees nothing of this conversation.
    pub task: String,
    /// Directories it may work in (inside the roots). Default: the roots.
    pub paths: Option<Vec<String>>,
    /// Only reads: no file, todo or memory writes; commands in the read-only sandbox, none outside it.
    pub read_only: Option<bool>,
    /// Operations it may call, e.g. `read_file`, `grep_search`, `file_operations.*`. Default: all.
    pub operations: Option<Vec<String>>,
    /// Most model turns (the server caps it).
    #[schemars(range(min = 1, max = 500))]
    pub max_turns: Option<u32>,
    /// Most tokens, in and out together.
    #[schemars(range(min = 1000))]
    pub max_tokens: Option<u64>,
}

/// Structured result of `delegate`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The sub-agent's final answer.
    pub answer: String,
    /// `completed`, `max_turns`, `token_budget`, `interrupted` or `error`.
    pub stop: String,
    /// Why it stopped, when on an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Files it changed, in order: `changes` shows them, `undo` with `steps` reverts them.
    pub changed_files: Vec<String>,
    /// `undo` steps that revert its changes (when nothing else changed files meanwhile).
    pub undo_steps: u64,
    /// Its todo lists with items when it ended, as markdown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub todos: Option<String>,
    /// Model turns taken.
    pub turns: u32,
    /// Tool calls made.
    pub tool_calls: usize,
    /// Calls that were denied.
    pub denied: usize,
    /// Tokens read by the model.
    pub input_tokens: u64,
    /// Tokens written by the model.
    pub output_tokens: u64,
    /// The model it ran on.
    pub model: String,
    /// Its transcript: `toolbelt-mcp agent --resume` continues it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transcript: Option<String>,
}

impl Operation for Delegate {
    const NAME: &'static str = "delegate";
    const DESCRIPTION: &'static str = "Hand a self-contained sub-task to a sub-agent with a fresh context. It works with these tools under the same roots, sandbox and approvals (narrower if asked) and answers with its result and the files it changed, which `undo` reverts.";
    const KIND: EffectKind = EffectKind::Exec;
    type Args = Args;
    type Output = Output;
    const TASK: bool = true;
    const NEEDS_MODEL: bool = true;
    const LEAN: Lean = Lean {
        details: &["transcript", "model"],
        usual: &[("denied", "0")],
        shadowed: &[],
        joined: &[],
        one_file_diff: false,
    };

    fn effect(args: &Args) -> Effect {
        // The paths are confined by the gate like any read; every call of the sub-agent is
        // gated on its own.
        Effect::Read(args.paths.clone().unwrap_or_default())
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        if args.task.trim().is_empty() {
            return Err(ToolError::BadValue {
                field: "task",
                value: "\"\"".into(),
                expected: "the sub-task, with everything the sub-agent needs to know".into(),
            });
        }
        if let Some(paths) = args.paths.as_ref().filter(|p| p.is_empty() || p.iter().any(|p| p.trim().is_empty())) {
            return Err(ToolError::BadValue {
                field: "paths",
                value: if paths.is_empty() { "[]".into() } else { "\"\"".into() },
                expected: "directories inside the roots, none of them blank (`.` for the first root), or no `paths` for the roots".into(),
            });
        }
        if let Some(operations) = &args.operations {
            let unknown = crate::delegation::unknown(operations);
            if operations.is_empty() || !unknown.is_empty() {
                let names: Vec<String> = unknown.iter().map(|u| format!("`{u}`")).collect();
                return Err(ToolError::BadValue {
                    field: "operations",
                    value: if operations.is_empty() { "[]".into() } else { names.join(", ") },
                    expected: "operations this server has (`read_file`, `grep_search`), whole tools (`file_operations`) or `tool.*`; no `operations` for all of them".into(),
                });
            }
        }
        let mut paths = Vec::with_capacity(call.subjects.len());
        for subject in &call.subjects {
            if !toolbelt_mcp_sandbox::fs::is_dir(subject.real()) {
                return Err(ToolError::NotADirectory { path: subject.shown().to_string() });
            }
            paths.push(subject.real().to_path_buf());
        }
        let context = call.context;
        let Some(delegator) = context.delegator.clone() else {
            return Err(ToolError::NoModel(
                "this server has no `[delegate]` provider configured and the client offers no sampling; run `toolbelt-mcp doctor` for how to enable it".into(),
            ));
        };
        let request = Request {
            task: args.task,
            paths,
            read_only: args.read_only.unwrap_or(false),
            operations: args.operations.unwrap_or_default(),
            max_turns: args.max_turns,
            max_tokens: args.max_tokens,
        };
        let before = context.session.call_count();
        let outcome = delegator.delegate(request, context.clone()).await?;
        let (changes, _) = context.session.changes();
        let mine: Vec<_> = changes.iter().filter(|change| change.call > before).collect();
        let mut steps: Vec<u64> = mine.iter().map(|change| change.call).collect();
        steps.dedup();
        let mut changed_files: Vec<String> = Vec::new();
        for change in &mine {
            let shown = match &change.kind {
                ChangeKind::Wrote { .. } => context.roots.show(&change.path),
                _ => format!("{} ({})", context.roots.show(&change.path), change.operation),
            };
            if !changed_files.contains(&shown) {
                changed_files.push(shown);
            }
        }
        Ok(reply(outcome, changed_files, steps.len() as u64))
    }
}

/// The reply: the answer first, then what it did and cost.
fn reply(outcome: Outcome, changed_files: Vec<String>, undo_steps: u64) -> Reply<Output> {
    let mut text = match (&outcome.stop[..], &outcome.error) {
        ("completed", _) => String::from("The sub-agent finished."),
        ("max_turns", _) => String::from("The sub-agent ran out of turns before it finished (raise `max_turns`)."),
        ("token_budget", _) => {
            String::from("The sub-agent used up its token budget before it finished (raise `max_tokens`).")
        }
        ("interrupted", _) => String::from("The sub-agent was stopped."),
        (_, Some(error)) => format!("The sub-agent stopped on an error: {error}"),
        (stop, None) => format!("The sub-agent stopped: {stop}."),
    };
    if !outcome.answer.is_empty() {
        text.push_str(&format!("\n\nIts answer:\n{}", outcome.answer));
    }
    if changed_files.is_empty() {
        text.push_str("\n\nIt changed no file.");
    } else {
        text.push_str(&format!(
            "\n\nIt changed {} file(s): {}. `changes` shows the diff; `undo` with `steps: {undo_steps}` reverts them.",
            changed_files.len(),
            changed_files.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    if let Some(todos) = &outcome.todos {
        text.push_str(&format!("\n\nIts todo list:\n{todos}"));
    }
    text.push_str(&format!(
        "\n\n{} turn(s), {} tool call(s){}, {} in / {} out tokens on {}.",
        outcome.turns,
        outcome.tool_calls,
        if outcome.denied > 0 { format!(" ({} denied)", outcome.denied) } else { String::new() },
        outcome.tokens.0,
        outcome.tokens.1,
        outcome.model
    ));
    let output = Output {
        answer: outcome.answer,
        stop: outcome.stop,
        error: outcome.error,
        changed_files,
        undo_steps,
        todos: outcome.todos,
        turns: outcome.turns,
        tool_calls: outcome.tool_calls,
        denied: outcome.denied,
        input_tokens: outcome.tokens.0,
        output_tokens: outcome.tokens.1,
        model: outcome.model,
        transcript: outcome.transcript.map(|p| p.display().to_string()),
    };
    let mut reply = Reply::new(text, output);
    reply.is_error = reply.data.error.is_some();
    reply
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reply_says_how_it_ended_and_how_to_undo() {
        let outcome = Outcome {
            answer: "done: renamed it".into(),
            stop: "completed".into(),
            turns: 3,
            tool_calls: 2,
            tokens: (1200, 80),
            model: "openai m".into(),
            ..Outcome::default()
        };
        let reply = reply(outcome, vec!["src/a.rs".into()], 1);
        assert!(reply.text.starts_with("The sub-agent finished."), "{}", reply.text);
        assert!(reply.text.contains("done: renamed it"));
        assert!(reply.text.contains("`undo` with `steps: 1`"), "{}", reply.text);
        assert!(!reply.is_error);
        let failed =
            Outcome { stop: "error".into(), error: Some("the provider said 401".into()), ..Outcome::default() };
        let reply = super::reply(failed, Vec::new(), 0);
        assert!(reply.is_error && reply.text.contains("401") && reply.text.contains("changed no file"));
        let budget = Outcome { stop: "token_budget".into(), ..Outcome::default() };
        assert!(super::reply(budget, Vec::new(), 0).text.contains("raise `max_tokens`"));
    }
}
