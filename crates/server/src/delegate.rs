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
}

impl Limits {
    /// Whether `operation` of `tool` is one the call let the sub-agent use.
    pub(crate) fn allows(&self, tool: &str, operation: &str) -> bool {
        self.operations.is_empty()
            || self.operations.iter().any(|entry| match entry.split_once('.') {
                Some((t, op)) => (t == tool || t == "*") && (op == operation || op == "*"),
                None => entry == operation || entry == tool,
            })
    }
}

/// Runs sub-agents for the callers of one server (a client's, or a sub-agent's).
pub(crate) struct Delegator {
    shared: Arc<Shared>,
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
    pub(crate) fn of(shared: &Arc<Shared>, depth: u32, sample: Option<Sample>) -> Option<Arc<Self>> {
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
        Some(Arc::new(Self { shared: shared.clone(), model, max_turns, depth }))
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
        let (shared, model, depth, max_turns) =
            (self.shared.clone(), self.model.clone(), self.depth + 1, self.max_turns);
        Box::pin(async move { run(shared, model, (depth, max_turns), request, context).await })
    }
}

/// One sub-agent's run, to its outcome.
async fn run(
    shared: Arc<Shared>,
    model: Model,
    (depth, most_turns): (u32, u32),
    request: Request,
    context: Arc<Context>,
) -> Result<Outcome, ToolError> {
    let number = shared.delegations.fetch_add(1, Ordering::Relaxed) + 1;
    let label = format!("sub-agent {number} (`delegate`: {})", headline(&request.task));
    let denied = Arc::new(AtomicUsize::new(0));
    let approver = context.signals.approver.clone().map(|asker| named(asker, label.clone(), denied.clone()));
    let roots = if request.paths.is_empty() { context.roots.list().to_vec() } else { request.paths.clone() };
    let root = roots.first().cloned().unwrap_or_else(|| context.roots.first().to_path_buf());
    let sample = match &model {
        Model::Sampling(sample) => Some(sample.clone()),
        Model::Configured(_) => None,
    };
    let limits = Limits {
        number,
        depth,
        read_only: request.read_only,
        operations: request.operations.clone(),
        approver,
        sample,
    };
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
        operations: request.operations,
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

/// The task's first line, cut, to name the sub-agent in questions.
fn headline(task: &str) -> String {
    let line = task.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default();
    match line.char_indices().nth(60) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line.to_string(),
    }
}

/// The caller's approver, its questions saying which sub-agent asks and its refusals counted.
/// A question the caller's client could answer only by retrying the call (protocol
/// 2026-07-28 without tasks) cannot reach it mid-run: it counts as not answered.
fn named(asker: Approver, label: String, denied: Arc<AtomicUsize>) -> Approver {
    Arc::new(move |mut question: Question| {
        question.reason = format!("for its {label}, {}", question.reason);
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

    fn limits(operations: &[&str]) -> Limits {
        Limits {
            number: 1,
            depth: 1,
            read_only: false,
            operations: operations.iter().map(|s| s.to_string()).collect(),
            approver: None,
            sample: None,
        }
    }

    #[test]
    fn operations_name_an_operation_a_tool_or_both() {
        assert!(limits(&[]).allows("file_operations", "create_file"));
        let reads = limits(&["read_file", "grep_search"]);
        assert!(reads.allows("file_operations", "read_file") && reads.allows("read_file", "read_file"));
        assert!(!reads.allows("file_operations", "create_file"));
        let files = limits(&["file_operations.*"]);
        assert!(files.allows("file_operations", "replace_string"));
        assert!(!files.allows("terminal_operations", "run_command"));
        let tool = limits(&["terminal_operations"]);
        assert!(tool.allows("terminal_operations", "run_command") && !tool.allows("file_operations", "read_file"));
        assert!(limits(&["*.run_command"]).allows("terminal_operations", "run_command"));
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
        let approver = named(parent, "sub-agent 1 (`delegate`: fix it)".into(), denied.clone());
        let question = Question {
            operation: "run_command",
            reason: "`make` needs approval".into(),
            details: Vec::new(),
            stdin: None,
            written: None,
            justification: None,
            session_scope: "`make`".into(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let response = runtime.block_on(approver(question));
        assert_eq!(response.answer, Answer::Deny(None));
        assert_eq!(denied.load(Ordering::Relaxed), 1);
        assert!(asked.lock().unwrap()[0].contains("for its sub-agent 1 (`delegate`: fix it)"), "{:?}", asked);
        assert_eq!(headline("\n  Fix the tests\nthen more"), "Fix the tests");
    }
}
