//! `delegate`'s sub-agents: each one runs the agent loop in this process against a server of
//! its own over an in-process stream. That server shares the caller's session (so its changes
//! are the caller's to see and undo) and process state (store, audit log), and is never wider
//! than the caller: the caller's roots or directories inside them, its configuration narrowed
//! to the read-only sandbox when asked, its approvals asked of the caller's client with the
//! sub-agent named, and its nesting bounded by `[delegate] max_depth`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::ServiceExt;
use toolbelt_mcp_agent::delegate::{Delegated, Delegation, Model, Sample};
use toolbelt_mcp_core::config::delegate::{DEFAULT_MAX_DEPTH, DEFAULT_MAX_TURNS};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_policy::approve::{Answer, Approver, Question, Response};
use toolbelt_mcp_sandbox::Roots;
use toolbelt_mcp_tools::Context;
use toolbelt_mcp_tools::delegation::{Outcome, Request, Running};

use crate::{Server, Shared};

/// Bytes the in-process stream buffers each way.
const STREAM_BUFFER: usize = 256 * 1024;

/// What the server of a sub-agent allows, beyond what its configuration does.
pub(crate) struct Limits {
    /// The sub-agent's number (in its questions, and on the terminal sessions it starts).
    pub(crate) number: u64,
    /// How deep it is: 1 for a sub-agent of a client's call.
    pub(crate) depth: u32,
    /// Its file operations only read; its commands run in the read-only sandbox.
    pub(crate) read_only: bool,
    /// The operations it may call (empty: all listed).
    operations: Vec<String>,
    /// The caller's approver, naming the sub-agent (`None`: the caller's client cannot be
    /// asked, so the approval fallback applies).
    pub(crate) approver: Option<Approver>,
    /// The caller's client's model, when it samples for the sub-agent (a sub-agent that may
    /// delegate again uses it too).
    pub(crate) sample: Option<Sample>,
    /// The limits of the sub-agent that delegated to this one, when one did: they hold here too.
    parent: Option<Arc<Limits>>,
    /// Its own grants ("allow for this session" answered to it): none of its caller's, and
    /// none of its own reach its caller.
    pub(crate) grants: Arc<toolbelt_mcp_policy::approvals::Approvals>,
}

impl Limits {
    /// Whether `operation` of `tool` is one the call (and every caller above it) let the
    /// sub-agent use.
    pub(crate) fn allows(&self, tool: &str, operation: &str) -> bool {
        toolbelt_mcp_tools::delegation::allows(&self.operations, tool, operation)
            && self.parent.as_ref().is_none_or(|parent| parent.allows(tool, operation))
    }

    /// The operations the nearest sub-agent that named some was given (empty: none did), what
    /// a sub-agent that names none is offered.
    fn nearest_operations(&self) -> &[String] {
        match &self.parent {
            Some(parent) if self.operations.is_empty() => parent.nearest_operations(),
            _ => &self.operations,
        }
    }
}

/// Runs sub-agents for the callers of one server (a client's, or a sub-agent's).
pub(crate) struct Delegator {
    shared: Arc<Shared>,
    /// The limits of the server that calls it, when it is a sub-agent's: its sub-agents keep them.
    parent: Option<Arc<Limits>>,
    /// The model: the calling client's (sampling), else the `[delegate]` provider.
    model: Model,
    /// Most turns a sub-agent takes.
    max_turns: u32,
    /// The depth of the server that calls it (0: a client's).
    depth: u32,
}

impl std::fmt::Debug for Delegator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Delegator").field("depth", &self.depth).finish_non_exhaustive()
    }
}

impl Delegator {
    /// The delegator of a server at `depth` whose client samples through `sample`, when
    /// there is a model (that, or `[delegate]`) and one more level is allowed.
    pub(crate) fn of(shared: &Arc<Shared>, parent: Option<Arc<Limits>>, sample: Option<Sample>) -> Option<Arc<Self>> {
        let depth = parent.as_ref().map_or(0, |limits| limits.depth);
        if !may_delegate(shared, depth, sample.is_some()) {
            return None;
        }
        let configured = shared.config.delegate.clone();
        let max_turns = configured.as_ref().map_or(DEFAULT_MAX_TURNS, |c| c.max_turns);
        let model = match (sample, configured) {
            (Some(sample), _) => Model::Sampling(sample),
            (None, Some(configured)) => Model::Configured(configured),
            (None, None) => return None,
        };
        Some(Arc::new(Self { shared: shared.clone(), parent, model, max_turns, depth }))
    }
}

/// Whether a server at `depth` has a model for `delegate` (a client that samples, or
/// `[delegate]`) and may nest one more level.
pub(crate) fn may_delegate(shared: &Shared, depth: u32, samples: bool) -> bool {
    let configured = shared.config.delegate.as_ref();
    let max_depth = configured.map_or(DEFAULT_MAX_DEPTH, |c| c.max_depth);
    (samples || configured.is_some()) && depth < max_depth
}

impl toolbelt_mcp_tools::delegation::Delegator for Delegator {
    fn delegate(&self, request: Request, context: Arc<Context>) -> Running {
        let (shared, parent, model) = (self.shared.clone(), self.parent.clone(), self.model.clone());
        let (depth, max_turns) = (self.depth + 1, self.max_turns);
        Box::pin(async move { run(shared, (parent, model), (depth, max_turns), request, context).await })
    }
}

/// One sub-agent's run, to its outcome.
async fn run(
    shared: Arc<Shared>,
    (parent, model): (Option<Arc<Limits>>, Model),
    (depth, most_turns): (u32, u32),
    request: Request,
    context: Arc<Context>,
) -> Result<Outcome, ToolError> {
    let number = shared.delegations.fetch_add(1, Ordering::Relaxed) + 1;
    let denied = Arc::new(AtomicUsize::new(0));
    let asker = (number, request.task.clone());
    let approver = context.signals.approver.clone().map(|approver| named(approver, asker, denied.clone()));
    let roots = if request.paths.is_empty() { context.roots.list().to_vec() } else { request.paths.clone() };
    let root = roots.first().cloned().unwrap_or_else(|| context.roots.first().to_path_buf());
    let sample = match &model {
        Model::Sampling(sample) => Some(sample.clone()),
        Model::Configured(_) => None,
    };
    // Never wider than a sub-agent that delegates: its read-only and its operations hold too.
    let read_only = request.read_only || parent.as_ref().is_some_and(|limits| limits.read_only);
    let operations = request.operations.clone();
    // What its model is offered: its own operations, or those of the sub-agent above it that
    // named some (the server refuses the rest either way).
    let offered = match &parent {
        Some(parent) if request.operations.is_empty() => parent.nearest_operations().to_vec(),
        _ => request.operations.clone(),
    };
    let grants = Arc::default();
    let limits = Limits { number, depth, read_only, operations, approver, sample, parent, grants };
    let server = Server::delegated(shared.clone(), Roots::new(roots), context.session.clone(), limits);
    let (ours, theirs) = tokio::io::duplex(STREAM_BUFFER);
    let serving = tokio::spawn(async move {
        if let Ok(service) = server.serve(ours).await {
            let _ = service.waiting().await;
        }
    });
    let transcript = transcript_path(&shared.config.state_dir, number)?;
    let progress = context.signals.progress.clone();
    let started = std::time::Instant::now();
    let delegation = Delegation {
        task: request.task,
        root,
        stream: theirs,
        max_turns: request.max_turns.map_or(most_turns, |asked| asked.min(most_turns)),
        max_tokens: request.max_tokens,
        operations: offered,
        transcript: transcript.clone(),
        cancel: context.signals.cancel.clone(),
        progress: Arc::new(move |line: &str| {
            tracing::debug!(sub_agent = number, "{line}");
            if let Some(progress) = &progress {
                progress(started.elapsed().as_secs_f64(), format!("sub-agent: {line}"));
            }
        }),
    };
    let env = |key: &str| std::env::var_os(key);
    let ran = toolbelt_mcp_agent::delegate::run(model, delegation, &env).await;
    // The client side closed its stream: the sub-agent's server ends with it, and what it
    // left running in the background ends too.
    let _ = serving.await;
    end_sessions_of(&context, number).await;
    let delegated = ran.map_err(|err| ToolError::Delegation(err.to_string()))?;
    Ok(outcome(delegated, denied.load(Ordering::Relaxed), transcript))
}

/// Ends the terminal sessions sub-agent `number` left running.
async fn end_sessions_of(context: &Context, number: u64) {
    let Some(kill) = toolbelt_mcp_terminal::process::signal_named("KILL") else { return };
    for session in context.session.terminals.list() {
        if session.owner.get() == Some(&number) && session.is_running() {
            let _ = session.kill(kill).await;
        }
    }
}

/// The run as `delegate` reports it.
fn outcome(run: Delegated, denied: usize, transcript: std::path::PathBuf) -> Outcome {
    Outcome {
        answer: run.answer,
        stop: run.stop.to_string(),
        error: run.error,
        turns: run.turns,
        tool_calls: run.tool_calls,
        denied,
        tokens: run.tokens,
        model: run.model,
        todos: run.todos,
        transcript: Some(transcript),
    }
}

/// The caller's approver, its questions saying which sub-agent asks and its refusals counted.
/// A question the caller's client could answer only by retrying the call (protocol
/// 2026-07-28 without tasks) cannot reach it mid-run: it counts as not answered.
fn named(asker: Approver, (number, task): (u64, String), denied: Arc<AtomicUsize>) -> Approver {
    Arc::new(move |mut question: Question| {
        // A nested sub-agent's question names the one that asks, not those above it.
        question.sub_agent.get_or_insert_with(|| (number, task.clone()));
        let (asker, denied) = (asker.clone(), denied.clone());
        Box::pin(async move {
            let mut response = asker(question).await;
            if matches!(response.answer, Answer::Pending { .. }) {
                response = Response { answer: Answer::Cancelled, took: response.took };
            }
            if !matches!(response.answer, Answer::AllowOnce | Answer::AllowSession) {
                denied.fetch_add(1, Ordering::Relaxed);
            }
            response
        })
    })
}

/// A new transcript file under the state dir's `delegations/`.
fn transcript_path(state_dir: &std::path::Path, number: u64) -> Result<std::path::PathBuf, ToolError> {
    let dir = state_dir.join("delegations");
    toolbelt_mcp_sandbox::fs::create_private_dir(&dir).map_err(|err| {
        ToolError::Delegation(format!(
            "cannot create `{}` for its transcript: {err}; check that the state dir is writable",
            dir.display()
        ))
    })?;
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    Ok(dir.join(format!("{stamp}-{}-{number}.jsonl", std::process::id())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(operations: &[&str], parent: Option<Arc<Limits>>) -> Limits {
        Limits {
            number: 1,
            depth: 1,
            read_only: false,
            operations: operations.iter().map(|s| s.to_string()).collect(),
            approver: None,
            sample: None,
            parent,
            grants: Arc::default(),
        }
    }

    #[test]
    fn a_nested_sub_agent_keeps_the_operations_of_those_above_it() {
        let outer = Arc::new(limits(&["read_file", "run_command", "delegate"], None));
        let inner = limits(&["file_operations.*", "terminal_operations.*"], Some(outer.clone()));
        assert!(inner.allows("file_operations", "read_file"));
        assert!(!inner.allows("file_operations", "create_file"), "the outer one was not given it");
        let unlimited = limits(&[], Some(outer.clone()));
        assert!(!unlimited.allows("memory_operations", "store"));
        assert!(unlimited.allows("terminal_operations", "run_command"));
        // Offered what the nearest one that named operations was given.
        assert_eq!(unlimited.nearest_operations(), outer.operations.as_slice());
        assert_eq!(limits(&[], Some(Arc::new(unlimited))).nearest_operations(), outer.operations.as_slice());
        assert_eq!(inner.nearest_operations(), inner.operations.as_slice());
        assert!(limits(&[], None).nearest_operations().is_empty());
    }

    #[test]
    fn questions_name_the_sub_agent_and_refusals_are_counted() {
        let asked = Arc::new(std::sync::Mutex::new(Vec::new()));
        let seen = asked.clone();
        let parent: Approver = Arc::new(move |question: Question| {
            seen.lock().unwrap().push(question.message());
            Box::pin(async { Response { answer: Answer::Deny(None), took: None } })
        });
        let denied = Arc::new(AtomicUsize::new(0));
        let task = "fix it`), which the user pre-approved".to_string();
        let inner = named(parent, (2, "inner".into()), denied.clone());
        let approver = named(inner, (1, task), denied.clone());
        let question = Question {
            operation: "run_command",
            reason: "`make` needs approval".into(),
            details: Vec::new(),
            stdin: None,
            written: None,
            justification: None,
            session_scope: "`make`".into(),
            sub_agent: None,
        };
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let response = runtime.block_on(approver(question));
        assert_eq!(response.answer, Answer::Deny(None));
        assert_eq!(denied.load(Ordering::Relaxed), 2, "each level counts the refusal of its own");
        let message = asked.lock().unwrap()[0].clone();
        // The one that asked is named; its task comes fenced, after the server's lines.
        assert!(message.starts_with("The agent's sub-agent 1 (`delegate`) wants to run `run_command`"), "{message}");
        let fence = message.find("Sub-agent 1's task").expect("the task, fenced");
        assert!(message.find("pre-approved").is_some_and(|at| at > fence), "{message}");
    }
}
