//! The MCP server: the only layer (with `agent/`) that names rmcp types. It lists the
//! registry's tools, turns calls into `OperationDef::call`, and keeps per-connection state.

mod approve;
mod delegate;
mod hints;
mod host_sandbox;
pub mod http;
mod jsonrpc;
mod lines;
mod logging;
mod params;
mod prompts;
mod resources;
mod roots;
mod sampling;
mod signals;
mod skills;
pub mod stdio;
mod subscriptions;
mod tasks;
mod tasks_v1;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Instant;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ContentBlock, GetTaskParams,
    GetTaskResult, Implementation, InitializeRequestParams, InitializeResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, Tool, ToolAnnotations, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tokio_util::task::TaskTracker;

use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_core::meta::READ_ONLY_OPERATIONS;
use toolbelt_mcp_policy::audit::AuditLog;
use toolbelt_mcp_sandbox::Roots;
use toolbelt_mcp_store::Store;
use toolbelt_mcp_terminal::foreground::Progress;
use toolbelt_mcp_tools::session::Session;
use toolbelt_mcp_tools::{Context, Signals, ToolOutput, ToolSpec};

/// Guidance sent to clients in `initialize`.
const INSTRUCTIONS: &str = "Prefer these tools for files and commands: they stay in the workspace roots, run commands sandboxed, and make every edit undoable. file_operations: read_file, grep_search, replace_string, apply_patch. terminal_operations: run_command. Plan with todo_operations; remember across sessions with memory_operations (search it first). Results that were cut say how to see the rest.";

/// What every connection of the process shares: the configuration, the store, the tool
/// listing, the calls in flight, and (over HTTP) the state of sessionless requests and the
/// open sessions' state by transport session id.
pub struct Shared {
    config: Arc<Config>,
    store: Arc<Store>,
    /// The audit log's one writer.
    audit: AuditLog,
    /// The tool listings, built on first use: by whether they leave out file writes (the
    /// read-only sandbox) and hold `delegate` (a model source).
    tools: [OnceLock<Result<Vec<Tool>, String>>; 4],
    calls: TaskTracker,
    sessionless: Option<Arc<Session>>,
    /// When a request last used the sessionless state.
    sessionless_used: Mutex<Instant>,
    open: Mutex<HashMap<String, Arc<Session>>>,
    /// The user's home (canonical): never adopted as the workspace a host names.
    home: Option<std::path::PathBuf>,
    /// The calls running as MCP tasks, of every session.
    tasks: tasks::Tasks,
    /// Sub-agents started so far (each is numbered in its questions and transcript).
    delegations: std::sync::atomic::AtomicU64,
}

impl Shared {
    /// The shared part of a server. `sessionless` is the state of protocol 2026-07-28 requests
    /// when they carry no connection (HTTP); on stdio the connection's own state serves them.
    pub fn new(config: Arc<Config>, store: Arc<Store>, sessionless: bool) -> Arc<Self> {
        let sessionless = sessionless.then(|| Arc::new(Session::new(&config)));
        let (tools, calls, open) = (Default::default(), TaskTracker::new(), Mutex::default());
        let sessionless_used = Mutex::new(Instant::now());
        let audit = AuditLog::new(config.audit.clone());
        let home = toolbelt_mcp_core::config::workspace::home(&|key| std::env::var_os(key));
        let tasks = tasks::Tasks::default();
        let delegations = Default::default();
        Arc::new(Self {
            config,
            store,
            audit,
            tools,
            calls,
            sessionless,
            sessionless_used,
            open,
            home,
            tasks,
            delegations,
        })
    }

    /// The sessionless state, if no request has used it for `idle` (and no call runs).
    pub fn idle_sessionless(&self, idle: std::time::Duration) -> Option<Arc<Session>> {
        let used = *self.sessionless_used.lock().unwrap_or_else(PoisonError::into_inner);
        let idle = used.elapsed() >= idle && self.calls.is_empty();
        self.sessionless.clone().filter(|_| idle)
    }

    /// The audit log's writer.
    pub fn audit(&self) -> &AuditLog {
        &self.audit
    }

    /// The calls in flight (closed and awaited on shutdown).
    pub fn calls(&self) -> &TaskTracker {
        &self.calls
    }

    /// Remembers the state of the transport session `key` until [`Shared::take_session`].
    fn register_session(&self, key: String, session: Arc<Session>) {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).insert(key, session);
    }

    /// How many transport sessions are open.
    pub fn open_sessions(&self) -> usize {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).len()
    }

    /// The state of the transport session `key`.
    pub fn session_of(&self, key: &str) -> Option<Arc<Session>> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner).get(key).cloned()
    }

    /// The state of the transport session `key`, forgotten.
    /// Its tasks are cancelled.
    pub fn take_session(&self, key: &str) -> Option<Arc<Session>> {
        let session = self.open.lock().unwrap_or_else(PoisonError::into_inner).remove(key)?;
        self.tasks.end_owner(&session.id);
        Some(session)
    }

    /// Every state that may hold running commands: open sessions' and the sessionless one.
    pub fn take_all_sessions(&self) -> Vec<Arc<Session>> {
        let mut all: Vec<Arc<Session>> =
            self.open.lock().unwrap_or_else(PoisonError::into_inner).drain().map(|(_, s)| s).collect();
        all.extend(self.sessionless.clone());
        all
    }
}

/// One MCP connection (or, over HTTP, one session or one sessionless request): its roots and
/// state, over what the process shares.
#[derive(Clone)]
pub struct Server {
    shared: Arc<Shared>,
    roots: Arc<roots::SessionRoots>,
    session: Arc<OnceLock<Arc<Session>>>,
    subscriptions: Arc<subscriptions::Subscriptions>,
    log_level: logging::LogLevel,
    /// Roots already reported missing to the client's log.
    missing_roots: Arc<Mutex<Vec<std::path::PathBuf>>>,
    /// Set on the server of a `delegate` sub-agent: what more it limits, and whom it asks.
    delegated: Option<Arc<delegate::Limits>>,
    /// The client declared sampling with tools in `initialize`.
    samples: Arc<std::sync::atomic::AtomicBool>,
}

impl Server {
    /// A server for one connection.
    pub fn new(shared: Arc<Shared>) -> Self {
        let roots = Arc::new(roots::SessionRoots::new(
            Roots::new(shared.config.roots.clone()),
            shared.config.roots_refused.clone(),
        ));
        Self {
            shared,
            roots,
            session: Arc::default(),
            subscriptions: Arc::default(),
            log_level: logging::LogLevel::default(),
            missing_roots: Arc::default(),
            delegated: None,
            samples: Arc::default(),
        }
    }

    /// The server of a `delegate` sub-agent: `roots` (the caller's, or inside them) and the
    /// caller's `session`, within `limits`.
    fn delegated(shared: Arc<Shared>, roots: Roots, session: Arc<Session>, limits: delegate::Limits) -> Self {
        let roots = Arc::new(roots::SessionRoots::new(roots, None));
        Self {
            shared,
            roots,
            session: Arc::new(OnceLock::from(session)),
            subscriptions: Arc::default(),
            log_level: logging::LogLevel::default(),
            missing_roots: Arc::default(),
            delegated: Some(Arc::new(limits)),
            samples: Arc::default(),
        }
    }

    /// What runs `delegate` for a call whose client samples through `sample` (a sub-agent's
    /// server: its caller's client), when there is a model and nesting allows one more level.
    fn delegator(
        &self,
        sample: Option<toolbelt_mcp_agent::delegate::Sample>,
    ) -> Option<Arc<dyn toolbelt_mcp_tools::delegation::Delegator>> {
        let sample = sample.or_else(|| self.delegated.as_ref().and_then(|limits| limits.sample.clone()));
        delegate::Delegator::of(&self.shared, self.delegated.clone(), sample)
            .map(|d| d as Arc<dyn toolbelt_mcp_tools::delegation::Delegator>)
    }

    /// Whether a listing for a client that `samples` (see [`samples`]) holds `delegate`.
    fn lists_delegate(&self, samples: bool) -> bool {
        let depth = self.delegated.as_ref().map_or(0, |limits| limits.depth);
        let samples = samples
            || self.samples.load(std::sync::atomic::Ordering::Relaxed)
            || self.delegated.as_ref().is_some_and(|limits| limits.sample.is_some());
        delegate::may_delegate(&self.shared, depth, samples)
    }

    /// The workspace key of todo lists and memories (`store::workspace`).
    async fn workspace(&self) -> String {
        let roots = self.roots.current().await;
        self.shared.store.workspace_key(self.shared.config.workspace.as_deref(), roots.first())
    }

    /// The connection's own state (created on first use).
    pub fn session(&self) -> Arc<Session> {
        self.session.get_or_init(|| Arc::new(Session::new(&self.shared.config))).clone()
    }

    /// The state a request works on: a protocol 2026-07-28 request over HTTP has no
    /// connection and uses the sessionless state; any other, the connection's own.
    fn session_for(&self, meta: &rmcp::model::RequestMetaObject) -> Arc<Session> {
        let modern = is_modern(meta);
        match &self.shared.sessionless {
            Some(sessionless) if modern => {
                *self.shared.sessionless_used.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
                sessionless.clone()
            }
            _ => self.session(),
        }
    }

    /// Runs `call` as a task of `owner` once it has run for `shortcut`; a call that ends
    /// sooner answers as usual, and so does one whose session has no room for a task.
    /// Until it is a task, the request's cancellation (`request`, or the HTTP front door's)
    /// cancels it; after, only `tasks/cancel` does.
    async fn call_as_task(
        &self,
        call: impl Future<Output = CallToolResult> + Send + 'static,
        (slot, shortcut): (tasks::Slot, std::time::Duration),
        owner: &str,
        (request, peer): (tokio_util::sync::CancellationToken, Option<rmcp::Peer<RoleServer>>),
        front_door: Option<tokio_util::sync::CancellationToken>,
    ) -> Result<CallToolResponse, McpError> {
        let (front_door, cancel) = (front_door.unwrap_or_default(), slot.cancel.clone());
        let mut handle = tokio::spawn(call);
        let asked_to_stop = async {
            tokio::select! {
                () = request.cancelled() => {}
                () = front_door.cancelled() => {}
            }
        };
        tokio::select! {
            joined = &mut handle => return joined.map(Into::into).map_err(ended_abnormally),
            () = tokio::time::sleep(shortcut) => {}
            () = asked_to_stop => {
                cancel.cancel();
                let _ = handle.await;
                return Err(McpError::new(rmcp::model::ErrorCode(-32800), "request cancelled", None));
            }
        }
        match self.shared.tasks.start(owner, slot, tasks::Running { handle, cancel }, peer) {
            Ok(created) => Ok(CallToolResponse::Task(created)),
            Err(running) => running.handle.await.map(Into::into).map_err(ended_abnormally),
        }
    }

    /// Tells the client's log, once per root, that a root no longer exists.
    fn report_missing_roots(&self, roots: &Roots, logger: &logging::Logger) {
        for root in roots.list() {
            if toolbelt_mcp_sandbox::fs::is_dir(root) {
                continue;
            }
            let mut reported = self.missing_roots.lock().unwrap_or_else(PoisonError::into_inner);
            if !reported.contains(root) {
                reported.push(root.clone());
                let message = format!(
                    "the root `{}` no longer exists (moved or deleted); calls on it fail until it is back or the server restarts with another `--root`",
                    root.display()
                );
                tracing::warn!("{message}");
                logger.log(toolbelt_mcp_tools::Severity::Warning, message);
            }
        }
    }

    /// The registry's tools as rmcp tools, built on first use and kept.
    fn tools(&self, samples: bool) -> Result<&Vec<Tool>, McpError> {
        let config = &self.shared.config;
        let listing = toolbelt_mcp_tools::Listing {
            read_only: config.sandbox == toolbelt_mcp_sandbox::mode::SandboxMode::ReadOnly
                || self.delegated.as_ref().is_some_and(|limits| limits.read_only),
            with_model: self.lists_delegate(samples),
        };
        let slot = &self.shared.tools[usize::from(listing.read_only) * 2 + usize::from(listing.with_model)];
        let built = slot.get_or_init(|| {
            toolbelt_mcp_tools::specs(config.tool_layout, listing)
                .map(|specs| specs.into_iter().map(to_rmcp_tool).collect())
                .map_err(|e| e.to_string())
        });
        built.as_ref().map_err(|err| McpError::internal_error(format!("tool schemas are invalid: {err}"), None))
    }
}

/// How often a running server looks again for what killed servers left.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(600);

/// Refuses to start on a state dir another local user controls (it, or a directory above it,
/// is theirs or writable by them without the sticky bit): they could plant the stages the
/// next start folds, the database or the token there, and so drive this server.
pub fn check_state_dir(config: &Config) -> Result<(), String> {
    match toolbelt_mcp_sandbox::owned::others_control(&config.state_dir, false) {
        Some(why) => Err(format!(
            "the state dir `{}` is not this user's alone: {why}; another local user could plant what the server reads back there and so drive it; use a directory of your own (`--state-dir DIR`, or `chmod go-w` the directory named)",
            config.state_dir.display()
        )),
        None => Ok(()),
    }
}

/// Removes, off the startup path and then every `SWEEP_EVERY`, what servers that were killed
/// left: temp files of interrupted writes, undo blobs, spilled output and private temp dirs.
pub fn sweep_leftovers(config: &Config) {
    let state_dir = config.state_dir.clone();
    #[cfg(target_os = "linux")]
    let (cap, ignored_too) = (config.max_undo_bytes, config.undo_ignored);
    let mut own = vec![config.state_dir.clone(), config.config_dir.clone()];
    own.extend(config.config_file.clone());
    own.extend(config.audit.files());
    tokio::spawn(async move {
        let mut every = tokio::time::interval(SWEEP_EVERY);
        loop {
            every.tick().await;
            let state_dir = state_dir.clone();
            // What a command wrote before its server was killed is folded first (judged like
            // any fold), so the temp dirs' sweep below finds nothing of it to remove.
            // Its record goes to the next session's history, for `changes` and `undo`.
            #[cfg(target_os = "linux")]
            {
                let (state_dir, own) = (state_dir.clone(), own.clone());
                if let Ok(recovered) = tokio::task::spawn_blocking(move || {
                    toolbelt_mcp_terminal::recover_stages(&state_dir, &own, cap, ignored_too)
                })
                .await
                {
                    for line in recovered.said {
                        tracing::warn!("{line}");
                    }
                    toolbelt_mcp_tools::session::adopt_later(recovered.records);
                }
            }
            let swept = tokio::task::spawn_blocking(move || {
                let temp_files = toolbelt_mcp_sandbox::journal::TempJournal::new(&state_dir).sweep();
                let dirs = toolbelt_mcp_tools::session::sweep_undo(&state_dir)
                    + toolbelt_mcp_terminal::sweep_dead_servers_output_and_temp(&state_dir);
                (temp_files, dirs)
            });
            if let Ok((temp_files, dirs)) = swept.await
                && temp_files + dirs > 0
            {
                tracing::info!(temp_files, dirs, "removed what servers that were killed left behind");
            }
        }
    });
}

fn to_rmcp_tool(spec: ToolSpec) -> Tool {
    // The title is the tool's own `title`: a second copy in the annotations only costs bytes.
    let annotations = ToolAnnotations::new()
        .read_only(spec.annotations.read_only_hint)
        .destructive(spec.annotations.destructive_hint)
        .idempotent(spec.annotations.idempotent_hint)
        .open_world(spec.annotations.open_world_hint);
    let tool = Tool::new(spec.name, spec.description, Arc::new(spec.input_schema))
        .with_title(spec.title)
        .with_raw_output_schema(Arc::new(spec.output_schema))
        .with_annotations(annotations);
    if spec.read_only_operations.is_empty() {
        return tool;
    }
    let mut meta = rmcp::model::JsonObject::new();
    meta.insert(READ_ONLY_OPERATIONS.into(), spec.read_only_operations.into());
    tool.with_meta(rmcp::model::MetaObject(meta))
}

fn to_result(output: ToolOutput) -> CallToolResult {
    let mut content = vec![ContentBlock::text(output.text)];
    content.extend(output.images.into_iter().map(|image| ContentBlock::image(image.base64, image.mime_type)));
    let mut result = if output.is_error { CallToolResult::error(content) } else { CallToolResult::success(content) };
    result.structured_content = Some(serde_json::Value::Object(output.structured));
    result
}

/// A call's outcome as the result of its task (which asks its questions itself).
fn task_result(outcome: Result<ToolOutput, ToolError>) -> CallToolResult {
    match outcome {
        Ok(output) => to_result(output),
        Err(err) => error_result(&err),
    }
}

/// What a retried (protocol 2026-07-28) call carries: the client's answers and the echoed state.
struct Retry {
    input_responses: Option<rmcp::model::InputResponses>,
    request_state: Option<String>,
    /// The tool and its arguments, which an answer is bound to.
    tool: String,
    arguments: Option<rmcp::model::JsonObject>,
}

/// The call's cancellation, progress notifications when the client sent a progress token, and
/// the approver when the client can answer elicitations.
fn signals(
    context: &RequestContext<RoleServer>,
    timeout: std::time::Duration,
    responses: Retry,
    logger: logging::Logger,
    session: &Arc<toolbelt_mcp_tools::session::Session>,
) -> Signals {
    let progress = context.meta.get_progress_token().map(|token| {
        let peer = context.peer.clone();
        let send: Arc<Progress> = Arc::new(move |elapsed: f64, message: String| {
            let (peer, param) =
                (peer.clone(), ProgressNotificationParam::new(token.clone(), elapsed).with_message(message));
            tokio::spawn(async move {
                if let Err(err) = peer.notify_progress(param).await {
                    tracing::debug!(%err, "progress notification not sent");
                }
            });
        });
        send
    });
    // Protocol 2026-07-28 forbids server-to-client requests: ask through an input-required
    // result instead, if the request says its client can answer elicitations.
    let modern = is_modern(&context.meta);
    let approver = if modern {
        let elicits = context.meta.client_capabilities().is_some_and(|c| c.elicitation.is_some());
        let binding = approve::binding(&session.id, &responses.tool, responses.arguments.as_ref());
        elicits
            .then(|| {
                approve::input_required_approver(
                    responses.input_responses,
                    responses.request_state,
                    session.clone(),
                    binding,
                    timeout,
                )
            })
            .flatten()
    } else {
        approve::approver(&context.peer, timeout)
    };
    let client = client_name(context).unwrap_or_default();
    Signals {
        cancel: context.ct.clone(),
        progress,
        approver,
        request: context.id.to_string(),
        tool: String::new(),
        client,
        notify: logger.notifier(),
        task: false,
    }
}

/// The name the client gave itself: in `initialize`, or (protocol 2026-07-28) in the request.
fn client_name(context: &RequestContext<RoleServer>) -> Option<String> {
    let from_request = context.meta.client_info().map(|info| info.name);
    from_request.or_else(|| context.peer.peer_info().map(|info| info.client_info.name.clone()))
}

/// The cancellation the HTTP front door gave a session's call (see `http::CallCancel`).
fn front_door_cancel(context: &RequestContext<RoleServer>) -> Option<tokio_util::sync::CancellationToken> {
    let parts = context.extensions.get::<axum::http::request::Parts>()?;
    parts.extensions.get::<http::CallCancel>().map(|cancel| cancel.0.clone())
}

/// Whether a request is of protocol 2026-07-28 or later (no connection of its own).
/// Whether the client of a request can be asked to sample with tools during a call: it
/// declared so, and (protocol 2026-07-28, which has no requests to the client mid-call) it
/// runs tasks, whose input requests carry the sampling.
fn samples(context: &RequestContext<RoleServer>) -> bool {
    let capabilities = context.client_capabilities();
    let offers = capabilities.as_ref().is_some_and(sampling::offers_tools);
    offers && (!is_modern(&context.meta) || capabilities.is_some_and(|caps| caps.supports_tasks()))
}

fn is_modern(meta: &rmcp::model::RequestMetaObject) -> bool {
    meta.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

fn ended_abnormally(err: tokio::task::JoinError) -> McpError {
    McpError::internal_error(format!("the call ended abnormally: {err}"), None)
}

fn error_result(error: &ToolError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(error.to_string())])
}

impl ServerHandler for Server {
    #[allow(deprecated, reason = "logging is deprecated by SEP-2577 but current hosts still show it")]
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                // Codex then sends its sandbox state on every call (host_sandbox.rs).
                .enable_experimental_with(
                    [(host_sandbox::CODEX_SANDBOX_STATE.to_string(), rmcp::model::JsonObject::new())].into(),
                )
                .enable_logging()
                .enable_completions()
                .enable_prompts()
                .enable_tools()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_skills()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("toolbelt-mcp", env!("CARGO_PKG_VERSION")).with_title("toolbelt-mcp"))
        .with_instructions(INSTRUCTIONS)
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.shared.tasks.get(&self.session_for(&context.meta).id, &request.task_id)
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let owner = self.session_for(&context.meta).id.clone();
        self.shared.tasks.update(&owner, &request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.shared.tasks.cancel(&self.session_for(&context.meta).id, &request.task_id)
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        context.peer.set_peer_info(request.clone());
        if let Some(http::SessionKey(key)) = context.extensions.get::<http::SessionKey>() {
            self.shared.register_session(key.clone(), self.session());
        }
        if !self.shared.config.roots_explicit && request.capabilities.roots.is_some() {
            self.roots.expect_client_roots();
        }
        if sampling::offers_tools(&request.capabilities) {
            self.samples.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.roots.awaiting_client() {
            let (roots, peer, level) = (self.roots.clone(), context.peer.clone(), self.log_level.clone());
            let home = self.shared.home.clone();
            tokio::spawn(async move {
                roots.fetch(&peer, &logging::Logger::for_connection(&peer, &level), home.as_deref()).await
            });
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        if !self.shared.config.roots_explicit {
            let (roots, peer, level) = (self.roots.clone(), context.peer.clone(), self.log_level.clone());
            let home = self.shared.home.clone();
            tokio::spawn(async move {
                roots.fetch(&peer, &logging::Logger::for_connection(&peer, &level), home.as_deref()).await
            });
        }
    }

    #[allow(deprecated, reason = "logging is deprecated by SEP-2577 but current hosts still show it")]
    async fn set_level(
        &self,
        request: rmcp::model::SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.log_level.set(request.level);
        Ok(())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        Ok(rmcp::model::ListPromptsResult::with_all_items(prompts::list()))
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        prompts::get(self, &context, &request.name, &request.arguments).await.map(Into::into)
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListSkillsResult, McpError> {
        Ok(rmcp::model::ListSkillsResult::with_all_items(vec![skills::skill()]))
    }

    async fn get_skill(
        &self,
        request: rmcp::model::GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetSkillResult, McpError> {
        if request.uri != skills::SKILL_URI {
            return Err(McpError::invalid_params(
                format!("no skill at `{}`; this server serves `{}`", request.uri, skills::SKILL_URI),
                None,
            ));
        }
        Ok(rmcp::model::GetSkillResult::new(skills::skill()))
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        prompts::complete(self, &request).await
    }

    /// rmcp hands over, as a custom request, every method it does not know and every known
    /// method whose params did not parse (its request enum is untagged): the latter are
    /// invalid params (-32602) with what was wrong, not an unknown method (-32601).
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        let rmcp::model::CustomRequest { method, params, .. } = request;
        // The stdio transport's translation of 2025-11-25 tasks (tasks_v1.rs) names these; over
        // HTTP, which serves the extension only, they are unknown like any other.
        let over_http = context.extensions.get::<axum::http::request::Parts>().is_some();
        if let Some(v1) = method.strip_prefix(tasks_v1::PREFIX).filter(|_| !over_http) {
            let owner = self.session_for(&context.meta).id.clone();
            let params = params.unwrap_or_default();
            let timeout = self.shared.config.approval_timeout;
            let answer = tasks_v1::answer(&self.shared.tasks, &owner, v1, &params, &context.peer, timeout).await?;
            return Ok(rmcp::model::CustomResult::new(answer));
        }
        // Methods protocol 2026-07-28 removed are unknown to a request of that era (HTTP 404).
        let modern = is_modern(&context.meta);
        let params = if modern && params::REMOVED_IN_2026.contains(&method.as_str()) { None } else { Some(params) };
        match params.and_then(|params| params::why_invalid(&method, params)) {
            Some(why) => Err(McpError::invalid_params(format!("invalid params for `{method}`: {why}"), None)),
            None => Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: `{method}` is not a method this server offers"),
                None,
            )),
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let config = &self.shared.config;
        let tools = self.tools(samples(&context))?;
        if !config.host_tool_hints {
            return Ok(ListToolsResult::with_all_items(tools.clone()));
        }
        let budget = config.output_budget.for_client(client_name(&context).as_deref());
        Ok(ListToolsResult::with_all_items(hints::with_hints(tools, config.tool_layout, budget)))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(resources::list(self).await))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(resources::templates()))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let contents = resources::read(self, &request.uri, &self.session_for(&context.meta)).await?;
        Ok(ReadResourceResponse::Complete(ReadResourceResult::new(contents)))
    }

    #[allow(deprecated, reason = "clients before protocol 2026-07-28 subscribe this way")]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if !resources::subscribable(&request.uri) {
            return Err(McpError::invalid_params(
                format!(
                    "`{}` cannot be subscribed to; subscribe to `todo://{{list}}` or `memory://{{collection}}`",
                    request.uri
                ),
                None,
            ));
        }
        self.subscriptions.subscribe(self, request.uri, context.peer, self.session().closed.clone());
        Ok(())
    }

    #[allow(deprecated, reason = "clients before protocol 2026-07-28 unsubscribe this way")]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscriptions.unsubscribe(&request.uri);
        Ok(())
    }

    fn accepted_subscription_filter(&self, requested: &SubscriptionFilter) -> Option<SubscriptionFilter> {
        let uris = requested.resource_subscriptions.iter().flatten().filter(|uri| resources::subscribable(uri));
        Some(SubscriptionFilter::builder().resource_subscriptions(uris.cloned().collect::<Vec<_>>()).build())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), McpError> {
        let wanted = context.accepted().resource_subscriptions.clone().unwrap_or_default();
        let watched = wanted.clone();
        let mut changes = subscriptions::Changes::new(self, Arc::new(move || watched.clone()));
        loop {
            let uri = tokio::select! {
                () = context.cancelled() => return Ok(()),
                next = changes.next() => match next {
                    Some(uri) => uri,
                    None => return Ok(()),
                },
            };
            if wanted.contains(&uri) && context.sink().notify_resource_updated(uri).await.is_err() {
                return Ok(());
            }
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Every tool this server may list, `delegate` included.
        self.tools(true).ok()?.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let started = Instant::now();
        let front_door = front_door_cancel(&context);
        // What an approval's answer is bound to: the call's arguments as the client sent them.
        let sent_arguments = request.arguments.clone();
        let mut args = request.arguments.unwrap_or_default();
        let config = &self.shared.config;
        let named = args.get("operation").map(|op| op.as_str().map_or_else(|| op.to_string(), str::to_string));
        // A call that names nothing this server has is recorded too: probing is worth seeing.
        let refused = |outcome: &str| {
            let session = self.session_for(&context.meta);
            let operation = named.as_deref().unwrap_or_default();
            let who = (session.id.as_str(), self.delegated.as_ref().map(|limits| limits.number));
            self.shared.audit.refused(who, &context.id.to_string(), &request.name, operation, outcome);
        };
        let (operation, siblings) = match toolbelt_mcp_tools::dispatch(config.tool_layout, &request.name, &mut args) {
            Ok(Some(found)) => found,
            Ok(None) => {
                refused("error:UnknownTool");
                let names: Vec<String> =
                    self.tools(samples(&context))?.iter().map(|t| format!("`{}`", t.name)).collect();
                return Err(McpError::invalid_params(
                    format!("unknown tool `{}`; this server has {}", request.name, names.join(", ")),
                    None,
                ));
            }
            Err(err) => {
                refused(&format!("error:{}", toolbelt_mcp_policy::audit::error_kind(&format!("{err:?}"))));
                return Ok(error_result(&err).into());
            }
        };
        if let Some(limits) = &self.delegated
            && !limits.allows(&request.name, operation.name)
        {
            refused("error:NotDelegated");
            let text = format!(
                "`{}` is not among the operations this sub-agent was given; use those listed, or answer with what you found",
                operation.name
            );
            return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
        }
        // A read-only sub-agent changes nothing: no records either, and nothing outside the sandbox.
        if self.delegated.as_ref().is_some_and(|limits| limits.read_only) {
            let records = matches!(operation.kind, toolbelt_mcp_tools::EffectKind::Record { .. });
            let escalates = args.get("escalate").is_some_and(|v| v.as_bool() != Some(false));
            if records || escalates {
                refused("error:ReadOnlyDelegation");
                let text = if records {
                    format!(
                        "`{}` changes todo lists or memories, which a read-only sub-agent does not; answer with what you found",
                        operation.name
                    )
                } else {
                    "a read-only sub-agent runs nothing outside the sandbox (`escalate`); answer with what you found"
                        .to_string()
                };
                return Ok(CallToolResult::error(vec![ContentBlock::text(text)]).into());
            }
        }
        if !config.roots_explicit
            && self.delegated.is_none()
            && let Some(named) = roots::host_working_dir(&context.meta)
        {
            self.roots.adopt_host_dir(named, self.shared.home.as_deref());
        }
        let roots = self.roots.current().await;
        if let Some(why) = self.roots.refusal() {
            refused("error:NoWorkspace");
            return Ok(CallToolResult::error(vec![ContentBlock::text(why)]).into());
        }
        // The host's own sandbox, when the call carries it: the stricter side applies.
        let narrowed =
            host_sandbox::HostLimits::from_meta(&context.meta, roots.list()).map(|limits| limits.apply(config));
        let config = narrowed.as_ref().unwrap_or(config);
        // A read-only sub-agent: read-only file operations and a read-only command sandbox.
        let read_only = self
            .delegated
            .as_ref()
            .filter(|limits| limits.read_only)
            .map(|_| host_sandbox::HostLimits { read_only: true, no_network: false }.apply(config));
        let config = read_only.as_ref().unwrap_or(config);
        let retry = Retry {
            input_responses: request.input_responses.clone(),
            request_state: request.request_state.clone(),
            tool: request.name.to_string(),
            arguments: sent_arguments,
        };
        let logger = logging::Logger::for_request(&context, &self.log_level);
        self.report_missing_roots(&roots, &logger);
        let session = self.session_for(&context.meta);
        let mut signals = Signals {
            tool: request.name.to_string(),
            ..signals(&context, config.approval_timeout, retry, logger.clone(), &session)
        };
        // A sub-agent's questions go to its caller's client, naming it.
        if let Some(limits) = &self.delegated {
            signals.approver = limits.approver.clone();
        }
        // A long call of a client that runs tasks may become one (tasks.rs); a 2025-11-25
        // client's call does when it asked to, at once (tasks_v1.rs).
        let asked = context.meta.get(tasks_v1::ASKED).and_then(serde_json::Value::as_bool);
        let task = (operation.task
            && asked.unwrap_or_else(|| context.client_capabilities().is_some_and(|caps| caps.supports_tasks()))
            && self.shared.tasks.has_room(&session.id))
        .then(tasks::Slot::new);
        let shortcut = if asked == Some(true) { std::time::Duration::ZERO } else { tasks::SHORTCUT };
        // The request's own cancellation, and the session to tell of the task's changes
        // (a 2026-07-28 request has none: its client polls).
        let request_side =
            task.is_some().then(|| (context.ct.clone(), (!is_modern(&context.meta)).then(|| context.peer.clone())));
        if let Some(slot) = &task {
            let elicits = context.client_capabilities().is_some_and(|caps| caps.elicitation.is_some());
            signals.task = true;
            signals.cancel = slot.cancel.clone();
            signals.progress = Some(tasks::progress(slot.clone()));
            signals.approver = elicits.then(|| tasks::approver(slot.clone(), config.approval_timeout));
        }
        // The client's model for `delegate`: asked as the task's input request in a task, else
        // directly (a 2026-07-28 request outside a task cannot be asked anything mid-call).
        let samples = samples(&context);
        let sample = match &task {
            Some(slot) if samples => Some(sampling::in_task(slot.clone())),
            None if samples && !is_modern(&context.meta) => Some(sampling::direct(context.peer.clone())),
            _ => None,
        };
        let budget = config.output_budget.for_client(client_name(&context).as_deref());
        let context = Arc::new(Context {
            config: config.clone(),
            roots,
            session,
            store: self.shared.store.clone(),
            audit: self.shared.audit.clone(),
            signals,
            budget,
            delegator: self.delegator(sample),
            sub_agent: self.delegated.as_ref().map(|limits| limits.number),
            grants: self.delegated.as_ref().map(|limits| limits.grants.clone()),
        });
        if let (Some(slot), Some(request_side)) = (task, request_side) {
            let owner = context.session.id.clone();
            let call = self
                .shared
                .calls
                .track_future(async move { task_result(operation.call(args, siblings, context).await) });
            return self.call_as_task(call, (slot, shortcut), &owner, request_side, front_door).await;
        }
        // A session's call over HTTP can be cancelled by the front door (see http/calls.rs):
        // it cancels the call here, and the call answers "request cancelled".
        if let Some(token) = &front_door {
            let (token, call) = (token.clone(), context.signals.cancel.clone());
            tokio::spawn(async move {
                tokio::select! {
                    () = token.cancelled() => call.cancel(),
                    () = call.cancelled() => {}
                }
            });
        }
        // Tracked so that a graceful shutdown lets it finish.
        let outcome = self.shared.calls.track_future(operation.call(args, siblings, context)).await;
        if front_door.is_some_and(|token| token.is_cancelled()) {
            return Err(McpError::new(rmcp::model::ErrorCode(-32800), "request cancelled", None));
        }
        let elapsed = started.elapsed();
        match outcome {
            Ok(output) => {
                tracing::debug!(tool = %request.name, operation = operation.name, ?elapsed, bytes = output.text.len(), "call ok");
                Ok(to_result(output).into())
            }
            Err(ToolError::InputRequired { message, state }) => match approve::input_required(message, state) {
                Ok(asked) => Ok(CallToolResponse::InputRequired(asked)),
                Err(err) => Err(McpError::internal_error(format!("cannot build the approval form: {err}"), None)),
            },
            Err(err) => {
                tracing::debug!(tool = %request.name, operation = operation.name, ?elapsed, error = %err, "call failed");
                if let Some((severity, message)) = logging::about_failure(&err) {
                    logger.log(severity, message);
                }
                Ok(error_result(&err).into())
            }
        }
    }
}
