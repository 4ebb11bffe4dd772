//! MCP Tasks (SEP-2663, the `io.modelcontextprotocol/tasks` extension). A call that may take
//! minutes (an operation marked `TASK`: `run_command`) from a client that declared the
//! extension, in `initialize` or in the request's `_meta`, becomes a task when it has not
//! ended within [`SHORTCUT`] (a quicker one answers as usual): the client gets a task id at
//! once, polls `tasks/get` (the result is inlined when it ends), answers an approval the call
//! asks for with `tasks/update` (the task is `input_required` meanwhile), and ends it with
//! `tasks/cancel`, which ends the command's process group as a cancelled call does.
//!
//! rmcp's `TaskManager` keeps the states. This file gives each task a public id of 128
//! random bits that only the session that made it can use (to any other, it is an unknown
//! task), bounds the unfinished tasks of a session, ends a session's tasks when it closes,
//! and tells session clients of each change of status (`notifications/tasks`). Tasks live in
//! this process's memory: a server that stops loses them (docs/ARCHITECTURE.md).

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
/// How often a task is looked at for a change of status to tell the client of.
const WATCH_EVERY: Duration = Duration::from_millis(200);

/// The tasks of every session of the process.
#[derive(Default)]
pub(crate) struct Tasks {
    manager: TaskManager,
    /// Public id → whose it is and rmcp's id.
    ids: Mutex<HashMap<String, Handle>>,
}

struct Handle {
    owner: String,
    inner: String,
}

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
}

impl Slot {
    pub(crate) fn new() -> Self {
        Self { task: Arc::new(watch::channel(None).0), cancel: CancellationToken::new() }
    }

    /// The task, once there is one; `None` if the call will never be one.
    async fn task(&self) -> Option<TaskContext> {
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
        let mut task = self.manager.spawn(options, move |context| {
            slot.set(context.clone());
            Box::pin(settle(context, running))
        });
        let handle = Handle { owner: owner.to_string(), inner: task.task_id.clone() };
        self.ids.lock().unwrap_or_else(PoisonError::into_inner).insert(public.clone(), handle);
        if let Some(peer) = peer {
            tokio::spawn(watch(self.manager.clone(), task.task_id.clone(), public.clone(), peer));
        }
        task.task_id = public;
        Ok(CreateTaskResult::new(task))
    }

    /// `tasks/get`: the task's state, its result or error inlined once it ended.
    pub(crate) fn get(&self, owner: &str, id: &str) -> Result<GetTaskResult, McpError> {
        let mut detailed = self.manager.get_task(&self.inner(owner, id)?).map_err(|_| unknown(id))?;
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
        self.manager.update_task(&self.inner(owner, id)?, answers).map_err(|_| unknown(id))
    }

    /// `tasks/cancel`: ends the task's call (its commands' process groups with it).
    pub(crate) fn cancel(&self, owner: &str, id: &str) -> Result<(), McpError> {
        self.manager.cancel_task(&self.inner(owner, id)?).map_err(|_| unknown(id))
    }

    /// Cancels every task of `owner` (its session closed).
    pub(crate) fn end_owner(&self, owner: &str) {
        let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        for handle in ids.values().filter(|handle| handle.owner == owner) {
            let _ = self.manager.cancel_task(&handle.inner);
        }
    }

    /// rmcp's id of `owner`'s task `id`.
    fn inner(&self, owner: &str, id: &str) -> Result<String, McpError> {
        let ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        match ids.get(id) {
            Some(handle) if handle.owner == owner => Ok(handle.inner.clone()),
            _ => Err(unknown(id)),
        }
    }

    /// How many of `owner`'s tasks have not ended; forgets the ids of tasks rmcp forgot.
    fn unfinished(&self, owner: &str) -> usize {
        let mut ids = self.ids.lock().unwrap_or_else(PoisonError::into_inner);
        ids.retain(|_, handle| self.manager.get_task(&handle.inner).is_ok());
        ids.values()
            .filter(|handle| handle.owner == owner)
            .filter(|handle| self.manager.get_task(&handle.inner).is_ok_and(|t| !t.task.status.is_terminal()))
            .count()
    }
}

/// The task's operation: the call's result, or its end when the task is cancelled. Dropped
/// when the task outlives its time to live: the call is cancelled then too.
async fn settle(task: TaskContext, mut running: Running) -> Result<CallToolResult, TaskExit> {
    let _stop = running.cancel.clone().drop_guard();
    tokio::select! {
        joined = &mut running.handle => joined.map_err(|err| {
            TaskExit::Error(McpError::internal_error(format!("the call ended abnormally: {err}"), None))
        }),
        () = task.cancelled() => {
            running.cancel.cancel();
            let _ = running.handle.await;
            Err(TaskExit::Cancelled)
        }
    }
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
pub(crate) fn approver(slot: Slot, timeout: Duration) -> Approver {
    let asked = Arc::new(AtomicUsize::new(0));
    Arc::new(move |question: Question| {
        let (slot, key) = (slot.clone(), format!("approval-{}", asked.fetch_add(1, Ordering::Relaxed)));
        Box::pin(async move {
            let started = Instant::now();
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
            Response { answer, took: Some(started.elapsed()) }
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
