//! The operation registry. One file per operation declares its name, description, `Args`,
//! effect and `run`; one line in its tool's list registers it. Schemas, descriptions,
//! annotations and dispatch are all derived from [`TOOLS`].

pub mod delegation;
pub mod file;
mod lean;
mod lenient;
pub mod memory;
mod output;
mod published;
pub mod schema;
pub mod session;
mod spec;
pub mod terminal;
pub mod todo;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::session::Session;
use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_policy::Gate;
use toolbelt_mcp_policy::audit::{self, Verdict};
use toolbelt_mcp_sandbox::write::Target;
use toolbelt_mcp_sandbox::{Resolved, Roots};

pub use lean::Lean;
pub use output::{Image, Lines, RESERVE, Reply, ToolOutput, json_size, split_lines, view_cost};
pub use spec::{Listing, ToolSpec, fields, generate, specs};
pub use toolbelt_mcp_core::effect::{Effect, Notify, Severity};
pub use toolbelt_mcp_core::units::push_decimal;

/// Every tool, in the order they are listed.
pub static TOOLS: &[ToolDef] = &[file::TOOL, terminal::TOOL, todo::TOOL, memory::TOOL];

/// The kind of an operation's effect, known without its arguments (for annotations).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EffectKind {
    /// Only reads.
    Read,
    /// Writes files.
    Write {
        /// May overwrite or remove existing content.
        destructive: bool,
        /// Repeating the call changes nothing more.
        idempotent: bool,
    },
    /// Runs commands or controls running ones: anything the sandbox allows.
    Exec,
    /// Changes the server's own records (todos, memories) in its database, not the workspace:
    /// listed even in the `read-only` sandbox.
    Record {
        /// May overwrite or remove a record.
        destructive: bool,
        /// Repeating the call changes nothing more.
        idempotent: bool,
    },
}

/// What a running operation gets: the gate-approved subjects and the call's context. Its fields
/// are private to this crate, so only `invoke::<O>` (after `Gate::check`) can make one: no
/// other crate can call an operation's `run` past the gate.
pub struct Call {
    /// A `Read` effect's paths, resolved and confined, in the order `effect` listed them.
    pub(crate) subjects: Vec<Resolved>,
    /// A `Write` effect's paths, confined and held open for writing, in order.
    pub(crate) targets: Vec<Target>,
    /// An `Exec` effect's working directory, confined (`None` when the call gave none).
    pub(crate) cwd: Option<Resolved>,
    /// The user approved running this command without the sandbox.
    pub(crate) unsandboxed: bool,
    /// Configuration and session state for this call.
    pub(crate) context: Arc<Context>,
}

impl Call {
    /// The one target of a single-path write, with the context.
    pub fn single_target(self) -> Result<(Target, Arc<Context>), ToolError> {
        let target = self.targets.into_iter().next();
        let target = target.ok_or_else(|| ToolError::Internal("the gate returned no target".into()))?;
        Ok((target, self.context))
    }

    /// The one subject of a single-path effect, with the context.
    pub fn single(self) -> Result<(Resolved, Arc<Context>), ToolError> {
        let subject = self.subjects.into_iter().next();
        let subject = subject.ok_or_else(|| ToolError::Internal("the gate returned no subject".into()))?;
        Ok((subject, self.context))
    }
}

/// Configuration and session state a call runs with.
#[derive(Debug, Clone)]
pub struct Context {
    /// The resolved configuration.
    pub config: Arc<Config>,
    /// The session's roots at the time of the call.
    pub roots: Arc<Roots>,
    /// The connection's state: its change history and terminal sessions.
    pub session: Arc<Session>,
    /// The todo and memory store, shared by every connection of the process.
    pub store: Arc<toolbelt_mcp_store::Store>,
    /// The audit log, one writer for the process.
    pub audit: toolbelt_mcp_policy::audit::AuditLog,
    /// This call's cancellation and progress reporting.
    pub signals: Signals,
    /// Bytes each view of this call's result may take (see `config::OutputBudget`).
    pub budget: usize,
    /// What runs `delegate`'s sub-agents, when this connection has a model source and its
    /// nesting allows one more level.
    pub delegator: Option<Arc<dyn delegation::Delegator>>,
    /// The `delegate` sub-agent making the call (its number), `None` for the client's own.
    pub sub_agent: Option<u64>,
    /// The grants this caller's questions make and use, when not the session's (a sub-agent's
    /// own: none of its caller's reach it, and none of its own reach its caller).
    pub grants: Option<Arc<toolbelt_mcp_policy::approvals::Approvals>>,
}

/// The longest any operation runs as an MCP task (`run_command`'s largest `timeout_ms` there):
/// a task's time to live is longer.
pub const LONGEST_TASK_MS: u64 = 7_200_000;

/// How a running call hears that it was cancelled, and reports progress.
#[derive(Clone, Default)]
pub struct Signals {
    /// Cancelled when the client cancels the request.
    pub cancel: tokio_util::sync::CancellationToken,
    /// Sends a progress notification (when the client asked for them).
    pub progress: Option<Arc<toolbelt_mcp_terminal::foreground::Progress>>,
    /// Asks the user (when the client supports elicitation).
    pub approver: Option<toolbelt_mcp_policy::approve::Approver>,
    /// The JSON-RPC request id, for the audit log.
    pub request: String,
    /// The tool called, for the audit log.
    pub tool: String,
    /// The client's name (`clientInfo.name`; empty when unknown), for host-specific advice.
    pub client: String,
    /// Sends a message to the client's log (when it asked for messages).
    pub notify: Option<Arc<Notify>>,
    /// The call runs as an MCP task (the client polls for its result), so the limits of long
    /// work apply: see [`Operation::TASK`].
    pub task: bool,
}

impl Context {
    /// Who is calling, as the gate needs to know it.
    pub fn caller(&self) -> toolbelt_mcp_policy::Caller<'_> {
        toolbelt_mcp_policy::Caller {
            config: &self.config,
            roots: &self.roots,
            approvals: self.grants.as_deref().unwrap_or(&self.session.approvals),
            approver: self.signals.approver.as_ref(),
            client: &self.signals.client,
            notify: self.signals.notify.as_deref(),
        }
    }

    /// The terminal session `id`, if this caller may use it: a sub-agent sees only the
    /// sessions it started (the client sees all of them).
    pub fn terminal(&self, id: &str) -> Result<Arc<toolbelt_mcp_terminal::session::TermSession>, ToolError> {
        let found = self.session.terminals.get(id).ok().filter(|session| self.sees(session));
        found.ok_or_else(|| {
            // Only the sessions this caller may use are named.
            let known = self.terminals().iter().map(|s| format!("`{}`", s.id)).collect::<Vec<_>>().join(", ");
            ToolError::NoSession { id: id.to_string(), known }
        })
    }

    /// The terminal sessions this caller may use, oldest first.
    pub fn terminals(&self) -> Vec<Arc<toolbelt_mcp_terminal::session::TermSession>> {
        self.session.terminals.list().into_iter().filter(|s| self.sees(s)).collect()
    }

    /// Registers a session this caller started under `number`.
    pub fn keep_terminal(&self, number: u64, session: Arc<toolbelt_mcp_terminal::session::TermSession>) {
        if let Some(sub_agent) = self.sub_agent {
            let _ = session.owner.set(sub_agent);
        }
        self.session.terminals.insert(number, session);
    }

    fn sees(&self, session: &toolbelt_mcp_terminal::session::TermSession) -> bool {
        self.sub_agent.is_none() || session.owner.get() == self.sub_agent.as_ref()
    }

    /// The key of this workspace's todo lists and memories (`store::workspace`).
    pub fn workspace(&self) -> String {
        self.store.workspace_key(self.config.workspace.as_deref(), self.roots.first())
    }
}

impl std::fmt::Debug for Signals {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signals").field("cancelled", &self.cancel.is_cancelled()).finish_non_exhaustive()
    }
}

/// One operation of a tool. Implement it in `src/tools/<tool>/<operation>.rs`.
pub trait Operation: Send + Sync + 'static {
    /// The operation's name (`operation` value, and tool name in the granular layout).
    const NAME: &'static str;
    /// One or two sentences for the model.
    const DESCRIPTION: &'static str;
    /// Its kind of effect.
    const KIND: EffectKind;
    /// Whether it acts on the workspace (files, commands), so that a call may ask to go beyond
    /// the sandbox (`escalate`). Todos and memories are the server's own records: their
    /// operations, reads included, have no sandbox to go beyond.
    const ON_WORKSPACE: bool = !matches!(Self::KIND, EffectKind::Record { .. });
    /// Its arguments; field docs become the schema's descriptions.
    type Args: DeserializeOwned + JsonSchema + Send + 'static;
    /// Its structured result (`structuredContent`, beside the text).
    type Output: Serialize + JsonSchema + Send + 'static;
    /// How its structured result is trimmed for the model unless the call asks for
    /// `details` (see `lean.rs`).
    const LEAN: Lean = Lean::PLAIN;
    /// Whether a call may take minutes, so that it runs as an MCP task when the client
    /// supports tasks (a call that ends quickly still answers at once).
    const TASK: bool = false;
    /// Whether it runs a model (`delegate`): listed only where the connection has a model
    /// source.
    const NEEDS_MODEL: bool = false;
    /// The effect these arguments would have.
    fn effect(args: &Self::Args) -> Effect;
    /// What these arguments would write into a file (new content, the text put in place, a
    /// patch), shown to the user when the call is asked about. `None`: nothing to show.
    fn written(_args: &Self::Args) -> Option<String> {
        None
    }
    /// Does the work. Called only by [`invoke`], after the gate approved.
    fn run(args: Self::Args, call: Call) -> impl Future<Output = Result<Reply<Self::Output>, ToolError>> + Send;
}

type BoxedCall = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send>>;

/// An operation's `invoke`: its arguments, its tool's operations, the call's context.
type Invoke = fn(Map<String, Value>, &'static [OperationDef], Arc<Context>) -> BoxedCall;

/// An operation with its types erased, as registered in a [`ToolDef`].
pub struct OperationDef {
    /// See [`Operation::NAME`].
    pub name: &'static str,
    /// See [`Operation::DESCRIPTION`].
    pub description: &'static str,
    /// See [`Operation::KIND`].
    pub kind: EffectKind,
    /// See [`Operation::ON_WORKSPACE`].
    on_workspace: bool,
    /// The flattened schema of its arguments.
    pub input_schema: fn() -> Map<String, Value>,
    /// The flattened schema of its structured result.
    pub output_schema: fn() -> Map<String, Value>,
    /// See [`Operation::LEAN`].
    pub lean: Lean,
    /// See [`Operation::TASK`].
    pub task: bool,
    /// See [`Operation::NEEDS_MODEL`].
    pub needs_model: bool,
    invoke: Invoke,
}

impl OperationDef {
    /// Registers operation `O`.
    pub const fn of<O: Operation>() -> Self {
        Self {
            name: O::NAME,
            description: O::DESCRIPTION,
            kind: O::KIND,
            on_workspace: O::ON_WORKSPACE,
            input_schema: crate::schema::input_schema::<O::Args>,
            output_schema: crate::schema::output_schema::<O::Output>,
            lean: O::LEAN,
            task: O::TASK,
            needs_model: O::NEEDS_MODEL,
            invoke: invoke::<O>,
        }
    }

    /// Whether its calls may ask to go beyond the sandbox (`escalate`): see
    /// [`Operation::ON_WORKSPACE`].
    pub fn can_escalate(&self) -> bool {
        self.on_workspace
    }

    /// Parses the arguments, passes the gate, runs the operation, enforces the budget.
    /// `siblings` are the operations of its tool in the consolidated layout (whose fields a
    /// call may carry at their defaults), empty in the granular one.
    pub async fn call(
        &self,
        args: Map<String, Value>,
        siblings: &'static [OperationDef],
        context: Arc<Context>,
    ) -> Result<ToolOutput, ToolError> {
        (self.invoke)(args, siblings, context).await
    }
}

/// A tool: a family of operations exposed together in the consolidated layout.
pub struct ToolDef {
    /// The tool name, e.g. `file_operations`.
    pub name: &'static str,
    /// A human-readable title.
    pub title: &'static str,
    /// What the tool is for, before the generated list of operations.
    pub summary: &'static str,
    /// Its operations, in listing order.
    pub operations: &'static [OperationDef],
    /// Put before an operation's name to make its tool name in the granular layout
    /// (`todo_` + `read`); empty when the names are distinct already (`read_file`).
    pub granular_prefix: &'static str,
}

impl ToolDef {
    /// The tool name of `operation` in the granular layout.
    pub fn granular_name(&self, operation: &OperationDef) -> String {
        format!("{}{}", self.granular_prefix, operation.name)
    }
}

/// The one function that calls `run`: strict parse, the gate, then the operation.
fn invoke<O: Operation>(
    mut args: Map<String, Value>,
    siblings: &'static [OperationDef],
    context: Arc<Context>,
) -> BoxedCall {
    Box::pin(async move {
        let started = std::time::Instant::now();
        let mut verdict = Verdict { decision: "invalid", ..Verdict::default() };
        let (details, mut outcome) = match take_details(&mut args) {
            Ok(details) => (details, gate_and_run::<O>(args, siblings, context.clone(), &mut verdict).await),
            Err(err) => (true, Err(err)),
        };
        // The audit record is made from the whole record; the model gets the lean view.
        audit::<O>(&context, &verdict, started.elapsed(), &outcome);
        if let (Ok(output), false) = (&mut outcome, details) {
            lean::apply(&mut output.structured, &O::LEAN);
        }
        outcome
    })
}

/// Takes `details` out of a call's arguments: whether the result is the whole record.
fn take_details(args: &mut Map<String, Value>) -> Result<bool, ToolError> {
    match args.remove("details") {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(details)) => Ok(details),
        Some(other) => Err(ToolError::BadValue {
            field: "details",
            value: other.to_string(),
            expected: "`true` for the whole record (hashes, byte counts, timings, lines as arrays) or `false`".into(),
        }),
    }
}

/// Parse, gate, run, budget: everything of a call but its audit record.
async fn gate_and_run<O: Operation>(
    args: Map<String, Value>,
    siblings: &'static [OperationDef],
    context: Arc<Context>,
    verdict: &mut Verdict,
) -> Result<ToolOutput, ToolError> {
    let (args, escalation) = split_escalation::<O>(args)?;
    let args = parse::<O>(args, siblings)?;
    let session = context.session.clone();
    // What a killed server's commands wrote, folded at this start: the first call takes it.
    #[cfg(target_os = "linux")]
    let adopted = session.adopt_recovered(context.roots.list()).await;
    let _serial = match O::KIND {
        EffectKind::Write { .. } => {
            let guard = session.writes.lock().await;
            session.begin_call();
            Some(guard)
        }
        EffectKind::Read | EffectKind::Exec | EffectKind::Record { .. } => None,
    };
    let written = O::written(&args);
    let approved =
        Gate::check(O::NAME, &O::effect(&args), written.as_deref(), &escalation, &context.caller(), verdict).await?;
    let budget = context.budget;
    #[cfg(unix)]
    let first_root = context.roots.first().to_path_buf();
    // Protected paths this call may write with approval: not a command's doing afterwards.
    let protected_writes: Vec<std::path::PathBuf> = approved
        .targets
        .iter()
        .map(|target| target.real().to_path_buf())
        .filter(|path| toolbelt_mcp_sandbox::protected::classify(path).is_some())
        .collect();
    let cancel = context.signals.cancel.clone();
    // A write of the server's own while commands no stage records run: not theirs.
    #[cfg(unix)]
    let own_write = match O::KIND {
        EffectKind::Write { .. } if session.terminals.before_own_write().await => {
            let written: Vec<std::path::PathBuf> =
                approved.targets.iter().map(|target| target.real().to_path_buf()).collect();
            Some((context.roots.list().to_vec(), written))
        }
        _ => None,
    };
    // What ended commands' last folds (or comparisons) recorded goes into the history before
    // this call runs, so that `changes` lists it and `undo` sees it.
    #[cfg(unix)]
    let taken_before = {
        let mut lines = Vec::new();
        let records = session.terminals.take_records();
        if !records.is_empty() {
            let _held = if _serial.is_none() { Some(session.writes.lock().await) } else { None };
            for recorded in records {
                lines.extend(session.record_command(recorded, &first_root, false));
            }
            // This call's own change is a step of its own, not part of the commands' last one.
            if _serial.is_some() {
                session.begin_call();
            }
        }
        lines
    };
    let call = Call {
        subjects: approved.subjects,
        targets: approved.targets,
        cwd: approved.cwd,
        unsandboxed: approved.unsandboxed,
        context,
    };
    let reply = match O::KIND {
        // A read has no effect to finish: a cancelled one answers at once (its walk or scan
        // sees the same token and stops too). Writes finish what they started (their diff has
        // a deadline), so nothing lands after the call was answered.
        EffectKind::Read => tokio::select! {
            reply = O::run(args, call) => reply,
            () = cancel.cancelled() => Err(ToolError::Cancelled),
        },
        _ => O::run(args, call).await,
    };
    let terminals = &session.terminals;
    #[cfg(unix)]
    if let Some((roots, written)) = own_write {
        terminals.after_own_write(&roots, written).await;
    }
    if !protected_writes.is_empty() {
        terminals.accept_writes(&protected_writes);
    }
    // Every call folds what running commands wrote (nothing to do when none runs).
    #[cfg_attr(not(target_os = "linux"), allow(unused_mut))]
    let mut found = terminals.sweep().await;
    #[cfg(target_os = "linux")]
    found.extend(adopted);
    #[cfg(unix)]
    found.extend(taken_before);
    // What background commands and sessions wrote, each fold one undo step.
    #[cfg(unix)]
    let found = {
        let mut found = found;
        let records = terminals.take_records();
        if !records.is_empty() {
            let _held = if _serial.is_none() { Some(session.writes.lock().await) } else { None };
            for recorded in records {
                found.extend(session.record_command(recorded, &first_root, false));
            }
        }
        found
    };
    let reply = reply?.warn(&found);
    reply.finish(O::NAME, budget)
}

/// Writes the call's audit record.
fn audit<O: Operation>(
    context: &Context,
    verdict: &Verdict,
    elapsed: std::time::Duration,
    outcome: &Result<ToolOutput, ToolError>,
) {
    let (result, bytes, truncated, changed_files) = match outcome {
        Ok(output) => {
            let truncated = output.structured.get("truncated").and_then(Value::as_bool).unwrap_or(false);
            let changed = match O::KIND {
                EffectKind::Write { .. } if !output.is_error => audit::changed_files(&output.structured),
                _ => Vec::new(),
            };
            let result = if output.is_error { "error:ExitStatus".to_string() } else { "ok".to_string() };
            (result, output.text.len(), truncated, changed)
        }
        Err(err) => {
            (format!("error:{}", audit::error_kind(&format!("{err:?}"))), err.to_string().len(), false, Vec::new())
        }
    };
    let outcome_label =
        result.strip_prefix("error:").map_or_else(|| "ok".to_string(), toolbelt_mcp_core::metrics::outcome_label);
    toolbelt_mcp_core::metrics::tool_call(tool_label(&context.signals.tool), O::NAME, outcome_label, elapsed, bytes);
    if verdict.decision != "invalid" {
        toolbelt_mcp_core::metrics::approval(verdict.decision, verdict.decided_by);
    }
    context.audit.write(&audit::Record {
        time: audit::now(),
        session: &context.session.id,
        request: &context.signals.request,
        tool: &context.signals.tool,
        sub_agent: context.sub_agent,
        operation: O::NAME,
        effect: verdict.effect,
        subjects: &verdict.subjects,
        escalate: verdict.escalate,
        decision: verdict.decision,
        decided_by: verdict.decided_by,
        justification: verdict.justification.as_deref(),
        duration_ms: audit::millis(elapsed),
        outcome: result,
        bytes,
        truncated,
        changed_files,
    });
}

/// The consolidated name of the tool a call named (`read_file` in the granular layout is
/// `file_operations`), for metrics labels: a name from the registry, never the request's text.
fn tool_label(requested: &str) -> &'static str {
    let found = TOOLS.iter().find(|t| {
        t.name == requested
            || requested.strip_prefix(t.granular_prefix).is_some_and(|op| t.operations.iter().any(|o| o.name == op))
    });
    found.map_or("other", |t| t.name)
}

/// The fields every operation accepts: `escalate` and `justification`.
#[derive(Debug, Default, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EscalationArgs {
    /// Ask the user to allow what the sandbox refuses; needs `justification`.
    #[serde(default)]
    pub escalate: bool,
    /// Why, for the user.
    pub justification: Option<String>,
}

/// Takes `escalate` and `justification` out of a call's arguments.
fn split_escalation<O: Operation>(
    mut args: Map<String, Value>,
) -> Result<(Map<String, Value>, toolbelt_mcp_policy::Escalation), ToolError> {
    let mut common = Map::new();
    for key in ["escalate", "justification"] {
        if let Some(value) = args.remove(key).filter(|value| !value.is_null()) {
            common.insert(key.into(), value);
        }
    }
    let parsed: EscalationArgs =
        serde_json::from_value(Value::Object(common)).map_err(|err| ToolError::InvalidArguments {
            operation: O::NAME,
            message: err.to_string(),
            accepted: spec::accepted_fields(&crate::schema::input_schema::<O::Args>()),
        })?;
    if parsed.escalate && !O::ON_WORKSPACE {
        return Err(ToolError::InvalidArguments {
            operation: O::NAME,
            message: "`escalate` has nothing to do here: todos and memories are the server's own records, outside any sandbox".into(),
            accepted: spec::accepted_fields(&crate::schema::input_schema::<O::Args>()),
        });
    }
    Ok((args, toolbelt_mcp_policy::Escalation { escalate: parsed.escalate, justification: parsed.justification }))
}

/// Deserialises an operation's own fields (never `operation` itself), strictly; arguments
/// that fail are prepared as models send them (see `lenient`) and parsed once more.
fn parse<O: Operation>(args: Map<String, Value>, siblings: &'static [OperationDef]) -> Result<O::Args, ToolError> {
    use serde::Deserialize;
    let value = Value::Object(args);
    if let Ok(parsed) = O::Args::deserialize(&value) {
        return Ok(parsed);
    }
    let Value::Object(mut args) = value else { return Err(ToolError::Internal("arguments are an object".into())) };
    lenient::prepare(&OperationDef::of::<O>(), siblings, &mut args)?;
    serde_json::from_value(Value::Object(args)).map_err(|err| ToolError::InvalidArguments {
        operation: O::NAME,
        message: err.to_string(),
        accepted: spec::accepted_fields(&crate::schema::input_schema::<O::Args>()),
    })
}

/// Runs blocking filesystem work off the async threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    tokio::task::spawn_blocking(work).await.map_err(|err| ToolError::Internal(format!("worker failed: {err}")))?
}

/// Runs filesystem work known to be short (`short`: a small file's read) on the async thread
/// that took the call, which costs less than handing it to a blocking thread and back; other
/// work goes to [`blocking`]. Either way a panic fails the call, not the server.
pub async fn blocking_unless_short<T: Send + 'static>(
    short: bool,
    work: impl FnOnce() -> Result<T, ToolError> + Send + 'static,
) -> Result<T, ToolError> {
    if !short {
        return blocking(work).await;
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
        .map_err(|_| ToolError::Internal("worker failed: it panicked".into()))?
}

/// Finds the operation a call names, with its tool's operations (consolidated layout; none in
/// the granular one). `Ok(None)` means no such tool (a protocol error).
pub fn dispatch(
    layout: toolbelt_mcp_core::config::args::ToolLayout,
    tool: &str,
    args: &mut Map<String, Value>,
) -> Result<Option<(&'static OperationDef, &'static [OperationDef])>, ToolError> {
    use toolbelt_mcp_core::config::args::ToolLayout;
    match layout {
        ToolLayout::Granular => Ok(TOOLS.iter().find_map(|t| {
            let operation = tool.strip_prefix(t.granular_prefix)?;
            t.operations.iter().find(|op| op.name == operation).map(|op| (op, &[][..]))
        })),
        ToolLayout::Consolidated => {
            let Some(def) = TOOLS.iter().find(|t| t.name == tool) else {
                return Ok(None);
            };
            let accepted = def.operations.iter().map(|op| format!("`{}`", op.name)).collect::<Vec<_>>().join(", ");
            let name = match args.remove("operation") {
                Some(Value::String(name)) => name,
                Some(other) => {
                    return Err(ToolError::BadOperation {
                        problem: format!("`operation` must be a string, not `{other}`"),
                        accepted,
                    });
                }
                None => {
                    return Err(ToolError::BadOperation {
                        problem: format!("`{tool}` needs an `operation` field"),
                        accepted,
                    });
                }
            };
            let found = def.operations.iter().find(|op| op.name == name);
            found.map(|op| Some((op, def.operations))).ok_or_else(|| ToolError::BadOperation {
                problem: format!("`{tool}` has no operation `{name}`"),
                accepted,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_work_runs_on_the_calling_thread_and_a_panic_fails_the_call_either_way() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let here = std::thread::current().id();
        let thread = || Ok(std::thread::current().id());
        assert_eq!(runtime.block_on(blocking_unless_short(true, thread)).unwrap(), here);
        assert_ne!(runtime.block_on(blocking_unless_short(false, thread)).unwrap(), here);
        for short in [true, false] {
            let failed = runtime.block_on(blocking_unless_short(short, || -> Result<(), ToolError> { panic!("boom") }));
            assert!(matches!(failed, Err(ToolError::Internal(_))), "{failed:?}");
        }
    }
}
