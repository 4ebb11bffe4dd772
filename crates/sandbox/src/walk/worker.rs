//! Walker threads kept confined (Linux): an in-order walk runs on a thread that Landlock
//! confined to the walked root and the ignore files above it, and the thread is kept for the
//! next walk under the same confinement, so a listing pays neither a new thread nor a new
//! ruleset (a `clone3` and five Landlock and `open` calls each time, before).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::{Mutex, mpsc};
use std::time::Duration;

/// What a confined thread may read: everything beneath `root`, and the files in `above`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Confinement {
    /// The walked root.
    pub root: PathBuf,
    /// The ignore files above the root that exist (read by the walker's `parents`).
    pub above: Vec<PathBuf>,
    /// The device and inode of the root and of each file in `above`, as they were when this was
    /// made: a rule holds the inode its path led to, so a root made again or an ignore file
    /// saved by renaming a new one over it needs another thread.
    pub inodes: Vec<Option<(u64, u64)>>,
}

/// A job for a worker: it runs the work and sends back its outcome.
type Job = Box<dyn FnOnce() + Send>;

/// A worker waiting for its next job.
struct Idle {
    confinement: Confinement,
    jobs: mpsc::Sender<Job>,
}

/// Workers kept between walks, newest last.
static IDLE: Mutex<Vec<Idle>> = Mutex::new(Vec::new());

/// How many workers are kept waiting; one more is dropped (and its thread ends).
const KEPT: usize = 4;

/// How long a worker waits for a job before its thread ends.
const IDLE_FOR: Duration = Duration::from_secs(120);

/// Runs `work` on a worker confined to `confinement` and returns what it returned; a panic in
/// `work` comes back as an error (the worker goes on), so it fails the call, not the server's
/// task that awaits it. The caller's thread is free while the worker walks (the async
/// runtime's thread hands the job straight to the worker: no blocking thread between them).
/// When the caller stops waiting (a cancelled call), the worker finishes its job and ends
/// instead of being kept.
pub(super) async fn run<T: Send + 'static>(
    confinement: Confinement,
    work: impl FnOnce() -> T + Send + 'static,
) -> Result<T, String> {
    let (done, outcome) = tokio::sync::oneshot::channel();
    let mut job: Job = Box::new(move || {
        let _ = done.send(catch_unwind(AssertUnwindSafe(work)));
    });
    let jobs = loop {
        let jobs = match take(&confinement) {
            Some(jobs) => jobs,
            None => spawn(&confinement)?,
        };
        // A worker whose thread ended while idle hands the job back: try the next one.
        match jobs.send(job) {
            Ok(()) => break jobs,
            Err(mpsc::SendError(returned)) => job = returned,
        }
    };
    let result = outcome.await.map_err(|_| "the walker thread ended before its walk did".to_string());
    keep(confinement, jobs);
    result?.map_err(|panic| {
        let message =
            panic.downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| panic.downcast_ref::<String>().cloned());
        format!("the walk panicked: {}", message.unwrap_or_else(|| "no message".into()))
    })
}

/// An idle worker under exactly `confinement`, taken out of the pool.
fn take(confinement: &Confinement) -> Option<mpsc::Sender<Job>> {
    let mut idle = IDLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let at = idle.iter().rposition(|worker| &worker.confinement == confinement)?;
    Some(idle.remove(at).jobs)
}

/// Puts a worker back in the pool, dropping the oldest past [`KEPT`].
fn keep(confinement: Confinement, jobs: mpsc::Sender<Job>) {
    let mut idle = IDLE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    idle.push(Idle { confinement, jobs });
    if idle.len() > KEPT {
        idle.remove(0);
    }
}

/// Starts a worker: its thread confines itself, says whether that worked, then runs jobs
/// until it has waited [`IDLE_FOR`] or its sender is dropped.
fn spawn(confinement: &Confinement) -> Result<mpsc::Sender<Job>, String> {
    let (jobs, queue) = mpsc::channel::<Job>();
    let (ready, confined) = mpsc::sync_channel(1);
    let Confinement { root, above, .. } = confinement.clone();
    std::thread::Builder::new()
        .name("toolbelt-walk".into())
        .spawn(move || {
            let outcome = crate::landlock::restrict_reads(&[root.as_path()], &above);
            let enforced = matches!(outcome, Ok(true));
            let _ = ready.send(outcome);
            while enforced && let Ok(job) = queue.recv_timeout(IDLE_FOR) {
                job();
            }
        })
        .map_err(|err| format!("cannot start a walker thread: {err}"))?;
    match confined.recv() {
        Ok(Ok(true)) => Ok(jobs),
        Ok(Ok(false)) => Err("Landlock is not available to confine the walk".into()),
        Ok(Err(err)) => Err(err),
        Err(_) => Err("the walker thread ended before confining itself".into()),
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    /// Waits for [`run`] here, as an async caller would.
    fn run<T: Send + 'static>(
        confinement: Confinement,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, String> {
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(super::run(confinement, work))
    }

    fn confinement(root: &std::path::Path) -> Confinement {
        Confinement { root: root.to_path_buf(), above: Vec::new(), inodes: Vec::new() }
    }

    #[test]
    fn a_worker_reads_its_root_only_and_is_kept_for_the_next_walk() {
        let inside = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(inside.path().join("in.txt"), "in").unwrap();
        std::fs::write(outside.path().join("out.txt"), "out").unwrap();
        let (inside_file, outside_file) = (inside.path().join("in.txt"), outside.path().join("out.txt"));
        let reads = move || {
            let thread = std::thread::current().id();
            (std::fs::read_to_string(&inside_file).is_ok(), std::fs::read_to_string(&outside_file).is_ok(), thread)
        };
        let first = run(confinement(inside.path()), reads.clone()).unwrap();
        assert_eq!((first.0, first.1), (true, false), "the worker reads beneath its root only");
        let second = run(confinement(inside.path()), reads).unwrap();
        assert_eq!(second.2, first.2, "the same thread serves the next walk of the root");
        // The caller's thread stays unconfined.
        assert!(std::fs::read_to_string(outside.path().join("out.txt")).is_ok());
    }

    #[test]
    fn another_confinement_gets_another_thread() {
        let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(two.path().join("f"), "x").unwrap();
        let file = two.path().join("f");
        let thread = || std::thread::current().id();
        let first = run(confinement(one.path()), thread).unwrap();
        let (second, readable) =
            run(confinement(two.path()), move || (std::thread::current().id(), std::fs::read(&file).is_ok())).unwrap();
        assert_ne!(first, second);
        assert!(readable, "the second worker is confined to its own root, not the first's");
    }

    #[test]
    fn a_panic_fails_the_walk_and_the_worker_goes_on() {
        let root = tempfile::tempdir().unwrap();
        let failed = run(confinement(root.path()), || panic!("walk failed")).unwrap_err();
        assert_eq!(failed, "the walk panicked: walk failed");
        assert_eq!(run(confinement(root.path()), || 7).unwrap(), 7);
    }
}
