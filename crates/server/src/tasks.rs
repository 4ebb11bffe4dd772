//! MCP Tasks (SEP-2663, the `io.modelcontextprotocol/tasks` extension). A call that may take
//! minutes (an operation marked `TASK`: `run_command`) from a client that declared the
//! extension, in `initialize` or in the request's `_meta`, becomes a task when it has not
//! ended within [`SHORTCUT`] (a quicker one answers as usual): the client gets a task id at
//! once, polls `tasks/get` (the result is inlined when it ends), answers an approval the call
//! asks for with `tasks/update` (the task is `input_required` meanwhile), and ends it with
//! `tasks/cancel`, which ends the command's process group as a cancelled call does.
//!
//! A `TaskManager` of rmcp's keeps each task's state, one manager per task so that a task can
//! be forgotten (with its result) whenever this file decides. This file gives each task a
//! public id of 128 random bits that only the session that made it can use (to any other, it
//! is an unknown task), bounds the unfinished tasks of a session and the finished ones it
//! keeps, forgets a task its time to live after it was made, ends a session's tasks when it
//! closes, and tells session clients of each change of status (`notifications/tasks`). Tasks
//! live in this process's memory: a server that stops loses them (docs/ARCHITECTURE.md).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use rmcp::model::{
    CallToolResult, CreateTaskResult, GetTaskResult, InputResponses, Notification, ServerNotification, TaskStatus,
    TaskStatusNotificationParams,
};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions};
use rmcp::{ErrorData as McpError, Peer, RoleServer};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use toolbelt_mcp_policy::approve::{Answer, Approver, Question, Response};
use toolbelt_mcp_terminal::foreground::Progress;

use crate::approve;

/// How long a call runs before it becomes a task.
pub(crate) const SHORTCUT: Duration = Duration::from_secs(1);
/// How long a task stays to be read after the longest call could have ended.
const RETENTION_MS: u64 = 600_000;
/// A task's time to live: past it, an unfinished task is ended and reported failed, and a
/// finished one is forgotten one more such span after it ended.
const TTL_MS: u64 = toolbelt_mcp_tools::LONGEST_TASK_MS + RETENTION_MS;
/// The polling interval suggested to clients.
const POLL_INTERVAL_MS: u64 = 1_000;
/// The most unfinished tasks one session may have; its further calls run the usual way.
pub(crate) const MAX_OPEN: usize = 16;
/// The most finished tasks kept for one session: past them, its oldest are forgotten early.
const MAX_FINISHED: usize = 64;
/// How often a task is looked at for a change of status to tell the client of.
const WATCH_EVERY: Duration = Duration::from_millis(200);

/// The tasks of every session of the process.
#[derive(Default)]
pub(crate) struct Tasks {
    /// Public id → the task.
    ids: Mutex<HashMap<String, Handle>>,
}

struct Handle {
    owner: String,
    /// The task's own manager, and rmcp's id of it there.
    manager: TaskManager,
    inner: String,
    created: Instant,
    /// When the client was first shown the question the task asks now.
    seen: Seen,
    /// The questions already put to the client by a `tasks/result` (2025-11-25).
    claimed: Mutex<std::collections::HashSet<String>>,
}

impl Handle {
    /// Whether the task ended (rmcp ends one past its time to live when looked at).
    fn finished(&self) -> bool {
        self.manager.running_task_count() == 0
    }
}

/// When a task's current question was first shown to its client.
type Seen = Arc<Mutex<Option<Instant>>>;

/// A call under way that may become a task: its result to come and its cancellation.
pub(crate) struct Running {
    pub handle: JoinHandle<CallToolResult>,
    pub cancel: CancellationToken,
}

/// What a call that may become a task shares with it: where it finds its task once it is
/// one, and its cancellation.
#[derive(Clone)]
pub(crate) struct Slot {
    task: Arc<watch::Sender<Option<TaskContext>>>,
    /// Cancels the call: before it is a task, the request's cancellation; after, the task's.
    pub cancel: CancellationToken,
    seen: Seen,
}

impl Slot {
    pub(crate) fn new() -> Self {
        Self { task: Arc::new(watch::channel(None).0), cancel: CancellationToken::new(), seen: Seen::default() }
    }

    /// The task, once there is one; `None` if the call will never be one.
    pub(crate) async fn task(&self) -> Option<TaskContext> {
        let mut seen = self.task.subscribe();
        seen.wait_for(Option::is_some).await.ok()?.clone()
    }

    fn set(&self, task: TaskContext) {
        self.task.send_replace(Some(task));
    }
}

impl Tasks {
    /// Whether `owner` may start another task.
    pub(crate) fn has_room(&self, owner: &str) -> bool {
        self.unfinished(owner) < MAX_OPEN
    }

    /// Makes the call `running` a task of `owner`; gives the call back when `owner` has no
    /// room left. `peer`: the session to tell of changes of status (none for sessionless
    /// requests, which poll).
    pub(crate) fn start(
        &self,
        owner: &str,
        slot: Slot,
        running: Running,
        peer: Option<Peer<RoleServer>>,
    ) -> Result<CreateTaskResult, Running> {
        // Without randomness for an unguessable id, or room, the call goes on the usual way.
        let Some(public) = new_id().filter(|_| self.has_room(owner)) else { return Err(running) };
        let options = TaskOptions::new()
            .with_ttl_ms(TTL_MS)
            .with_poll_interval_ms(POLL_INTERVAL_MS)
            .with_status_message("running");
        let manager = TaskManager::new();
        let seen = slot.seen.clone();
        let mut task = manager.spawn(options, move |context| {
            slot.set(context.clone());
            Box::pin(settle(context, running))
        });
        if let Some(peer) = peer {
            tokio::spawn(watch(manager.clone(), task.task_id.clone(), public.clone(), peer));
        }
        let inner = std::mem::replace(&mut task.task_id, public.clone());
        let claimed = Mutex::default();
        let handle = Handle { owner: owner.to_string(), manager, inner, created: Instant::now(), seen, claimed };
        self.ids.lock().unwrap_or_else(PoisonError::into_inner).insert(public, handle);
        Ok(CreateTaskResult::new(task))
    }

    /// `tasks/get`: the task's state, its result or error inlined once it ended.
    pub(crate) fn get(&self, owner: &str, id: &str) -> Result<GetTaskResult, McpError> {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        prune(&mut ids);
        let handle = owned(&ids, owner, id)?;
        let mut detailed = handle.manager.get_task(&handle.inner).map_err(|_| unknown(id))?;
        if detailed.task.status == TaskStatus::InputRequired {
            handle.seen.lock().unwrap_or_else(PoisonError::into_inner).get_or_insert_with(Instant::now);
        }
        detailed.task.task_id = id.to_string();
        Ok(GetTaskResult::new(detailed))
    }

    /// Every task of `owner` that is still known, oldest first.
    pub(crate) fn list(&self, owner: &str) -> Vec<GetTaskResult> {
        let ids: Vec<String> = {
            let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
            ids.iter().filter(|(_, handle)| handle.owner == owner).map(|(id, _)| id.clone()).collect()
        };
        let mut listed: Vec<GetTaskResult> = ids.iter().filter_map(|id| self.get(owner, id).ok()).collect();
        listed.sort_by(|a, b| a.task.task.created_at.cmp(&b.task.task.created_at));
        listed
    }

    /// `tasks/update`: answers to the questions the task asks.
    pub(crate) fn update(&self, owner: &str, id: &str, answers: InputResponses) -> Result<(), McpError> {
        let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        let handle = owned(&ids, owner, id)?;
        handle.manager.update_task(&handle.inner, answers).map_err(|_| unknown(id))
    }

    /// Whether the question `key` of `owner`'s task `id` is still to be put to the client (it
    /// is then taken: a second `tasks/result` does not put it again).
    pub(crate) fn claim(&self, owner: &str, id: &str, key: &str) -> Result<bool, McpError> {
        let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        let handle = owned(&ids, owner, id)?;
        Ok(handle.claimed.lock().unwrap_or_else(PoisonError::into_inner).insert(key.to_string()))
    }

    /// `tasks/cancel`: ends the task's call (its commands' process groups with it).
    pub(crate) fn cancel(&self, owner: &str, id: &str) -> Result<(), McpError> {
        let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        let handle = owned(&ids, owner, id)?;
        handle.manager.cancel_task(&handle.inner).map_err(|_| unknown(id))
    }

    /// Cancels every task of `owner` (its session closed).
    pub(crate) fn end_owner(&self, owner: &str) {
        let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        for handle in ids.values().filter(|handle| handle.owner == owner) {
            let _ = handle.manager.cancel_task(&handle.inner);
        }
    }

    /// How many of `owner`'s tasks have not ended.
    fn unfinished(&self, owner: &str) -> usize {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        prune(&mut ids);
        ids.values().filter(|handle| handle.owner == owner && !handle.finished()).count()
    }
}

/// `owner`'s task `id`.
fn owned<'a>(ids: &'a HashMap<String, Handle>, owner: &str, id: &str) -> Result<&'a Handle, McpError> {
    ids.get(id).filter(|handle| handle.owner == owner).ok_or_else(|| unknown(id))
}

/// Forgets finished tasks past their time to live, and each session's oldest finished tasks
/// past [`MAX_FINISHED`] (their results go with them).
fn prune(ids: &mut HashMap<String, Handle>) {
    let ttl = Duration::from_millis(TTL_MS);
    ids.retain(|_, handle| handle.created.elapsed() < ttl || !handle.finished());
    let mut finished: HashMap<&str, Vec<(Instant, &str)>> = HashMap::new();
    for (id, handle) in ids.iter().filter(|(_, handle)| handle.finished()) {
        finished.entry(handle.owner.as_str()).or_default().push((handle.created, id.as_str()));
    }
    let mut forget: Vec<String> = Vec::new();
    for (_, mut tasks) in finished {
        if tasks.len() > MAX_FINISHED {
            tasks.sort();
            forget.extend(tasks[..tasks.len() - MAX_FINISHED].iter().map(|(_, id)| id.to_string()));
        }
    }
    for id in forget {
        ids.remove(&id);
    }
}

/// The task's operation: the call's result, or its end when the task is cancelled. Dropped
/// when the task outlives its time to live: the call is cancelled then too.
async fn settle(task: TaskContext, mut running: Running) -> Result<CallToolResult, TaskExit> {
    let _stop = running.cancel.clone().drop_guard();
    let settled = tokio::select! {
        joined = &mut running.handle => joined.map_err(|err| {
            TaskExit::Error(McpError::internal_error(format!("the call ended abnormally: {err}"), None))
        }),
        () = task.cancelled() => {
            running.cancel.cancel();
            let _ = running.handle.await;
            Err(TaskExit::Cancelled)
        }
    };
    task.set_status_message(match &settled {
        Ok(result) if result.is_error == Some(true) => "ended with an error",
        Ok(_) => "done",
        Err(TaskExit::Cancelled) => "cancelled",
        Err(TaskExit::Error(_)) => "failed",
    });
    settled
}

/// Tells `peer` of each change of status of task `inner` (public id `id`) until it ends.
async fn watch(manager: TaskManager, inner: String, id: String, peer: Peer<RoleServer>) {
    let mut told = TaskStatus::Working;
    loop {
        tokio::time::sleep(WATCH_EVERY).await;
        let Ok(mut detailed) = manager.get_task(&inner) else { return };
        let status = detailed.task.status;
        if status != told {
            detailed.task.task_id = id.clone();
            let note = Notification::new(TaskStatusNotificationParams::new(detailed));
            if let Err(err) = peer.send_notification(ServerNotification::TaskStatusNotification(note)).await {
                tracing::debug!(%err, "task status notification not sent");
                return;
            }
            told = status;
        }
        if told.is_terminal() {
            return;
        }
    }
}

/// Progress of a call that may become a task: its task's status message.
pub(crate) fn progress(slot: Slot) -> Arc<Progress> {
    Arc::new(move |_elapsed: f64, message: String| {
        if let Some(task) = slot.task.borrow().as_ref() {
            task.set_status_message(message);
        }
    })
}

/// The approver of a call that may become a task: the question waits for the task, which
/// asks it as an input request (`input_required` until `tasks/update` answers, or `timeout`).
/// The answer's time is counted from when `tasks/get` first showed the question, so a client
/// that declines on its own is told apart from a person as for any question.
pub(crate) fn approver(slot: Slot, timeout: Duration) -> Approver {
    let asked = Arc::new(AtomicUsize::new(0));
    Arc::new(move |question: Question| {
        let (slot, key) = (slot.clone(), format!("approval-{}", asked.fetch_add(1, Ordering::Relaxed)));
        Box::pin(async move {
            let answer = match (slot.task().await, approve::form(question.message())) {
                (Some(task), Ok(form)) => match tokio::time::timeout(timeout, task.request_input(key, form)).await {
                    Ok(Ok(value)) => approve::answer_of_result(&value),
                    Ok(Err(_)) => Answer::Cancelled,
                    Err(_) => Answer::TimedOut,
                },
                (None, _) => Answer::Cancelled,
                (Some(_), Err(err)) => {
                    tracing::warn!(%err, "cannot build the approval form; nobody decided");
                    Answer::Cancelled
                }
            };
            // How long after the client was first shown the question it answered (an answer
            // to a question it never looked at took no time at all).
            let seen = slot.seen.lock().unwrap_or_else(PoisonError::into_inner).take();
            Response { answer, took: Some(seen.map_or(Duration::ZERO, |seen| seen.elapsed())) }
        })
    })
}

/// A fresh public task id: 128 random bits, hex; `None` without system randomness.
fn new_id() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(hex::encode(bytes))
}

fn unknown(id: &str) -> McpError {
    McpError::invalid_params(
        format!(
            "unknown task `{id}`: it never existed, belongs to another session, or ended long enough ago to be forgotten"
        ),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_128_random_bits_in_hex() {
        let (a, b) = (new_id().expect("random"), new_id().expect("random"));
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[tokio::test]
    async fn a_task_is_only_its_owners() {
        let tasks = Tasks::default();
        let running = Running {
            handle: tokio::spawn(async { CallToolResult::success(vec![]) }),
            cancel: CancellationToken::new(),
        };
        let created = tasks.start("alice", Slot::new(), running, None).ok().expect("room");
        let id = created.task.task_id.clone();
        assert!(tasks.get("alice", &id).is_ok());
        for err in [
            tasks.get("mallory", &id).err(),
            tasks.cancel("mallory", &id).err(),
            tasks.update("mallory", &id, InputResponses::new()).err(),
        ] {
            let err = err.expect("refused");
            assert_eq!(err.code, rmcp::model::ErrorCode::INVALID_PARAMS);
            assert_eq!(err.message, unknown(&id).message);
        }
    }

    #[tokio::test]
    async fn a_session_has_a_bounded_number_of_unfinished_tasks() {
        let tasks = Tasks::default();
        // Calls that run until cancelled.
        let never = || {
            let cancel = CancellationToken::new();
            let heard = cancel.clone();
            let handle = tokio::spawn(async move {
                heard.cancelled().await;
                CallToolResult::error(vec![])
            });
            Running { handle, cancel }
        };
        for _ in 0..MAX_OPEN {
            assert!(tasks.start("alice", Slot::new(), never(), None).is_ok());
        }
        assert!(tasks.start("alice", Slot::new(), never(), None).is_err(), "the 17th is refused");
        assert!(tasks.start("bob", Slot::new(), never(), None).is_ok(), "another session has its own room");
        tasks.end_owner("alice");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(tasks.has_room("alice"), "cancelled tasks leave room");
    }

    #[tokio::test]
    async fn a_session_keeps_a_bounded_number_of_finished_tasks() {
        let tasks = Tasks::default();
        let done = || Running {
            handle: tokio::spawn(async { CallToolResult::success(vec![]) }),
            cancel: CancellationToken::new(),
        };
        let mut made = Vec::new();
        for _ in 0..MAX_FINISHED + 6 {
            made.push(tasks.start("alice", Slot::new(), done(), None).ok().expect("room").task.task_id);
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(tasks.list("alice").len(), MAX_FINISHED, "the oldest finished are forgotten");
        assert!(tasks.get("alice", &made[0]).is_err() && tasks.get("alice", made.last().unwrap()).is_ok());
    }

    #[tokio::test]
    async fn cancelling_a_task_cancels_its_call() {
        let tasks = Tasks::default();
        let cancel = CancellationToken::new();
        let seen = cancel.clone();
        let handle = tokio::spawn(async move {
            seen.cancelled().await;
            CallToolResult::error(vec![])
        });
        let id = tasks
            .start("alice", Slot::new(), Running { handle, cancel: cancel.clone() }, None)
            .ok()
            .expect("room")
            .task
            .task_id;
        tasks.cancel("alice", &id).expect("cancelled");
        tokio::time::timeout(Duration::from_secs(5), cancel.cancelled()).await.expect("the call hears it");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(tasks.get("alice", &id).expect("still there").task.task.status, TaskStatus::Cancelled);
    }
}
