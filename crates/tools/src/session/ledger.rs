//! The undo data of every session of this process counted together: past the process-wide cap
//! (`max_undo_total_bytes`), the oldest change of whichever session holds it is dropped first,
//! so a server with many connections (HTTP) keeps its state dir bounded, not each session.

use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::History;

/// The histories of the live sessions of this process.
static HISTORIES: Mutex<Vec<Weak<Mutex<History>>>> = Mutex::new(Vec::new());

/// Held by the one session evicting at a time (two would count each other's drops twice).
static EVICTING: Mutex<()> = Mutex::new(());

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Counts `history` in from now on (until its session is dropped).
pub(super) fn register(history: &Arc<Mutex<History>>) {
    let mut histories = lock(&HISTORIES);
    histories.retain(|weak| weak.strong_count() > 0);
    histories.push(Arc::downgrade(history));
}

/// Drops the oldest changes of any session until the process holds at most `cap` bytes of undo
/// data. The change of a session's latest call is never dropped (that call may still be
/// recording). Call it holding no history lock.
pub(super) fn enforce(cap: u64) {
    let _serial = lock(&EVICTING);
    let live: Vec<Arc<Mutex<History>>> = lock(&HISTORIES).iter().filter_map(Weak::upgrade).collect();
    let mut total: u64 = live.iter().map(|history| lock(history).blob_bytes).sum();
    while total > cap {
        let oldest = live
            .iter()
            .filter_map(|history| lock(history).oldest_droppable().map(|stamp| (stamp, history)))
            .min_by_key(|(stamp, _)| *stamp);
        let Some((_, history)) = oldest else { break };
        let freed = lock(history).drop_oldest();
        total = total.saturating_sub(freed);
    }
}
