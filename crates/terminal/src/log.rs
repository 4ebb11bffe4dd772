//! One output stream of a command or session: every byte gets an absolute offset (the
//! cursor `read_output` pages with). The newest bytes stay in a ring in memory; a stream can
//! also spill what it received to a file, so output larger than the ring stays readable from
//! its first byte, up to a cap: past it the file keeps the head, the ring the tail, and what
//! lies between is dropped (and said to be: its size is known).

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use tokio::sync::watch;

use toolbelt_mcp_sandbox::fs;

/// A stream's bytes with absolute offsets; readers wait on `watch` for more.
#[derive(Debug)]
pub struct OutputLog {
    state: Mutex<State>,
    /// The total bytes received so far, with `u64::MAX` once the stream has ended.
    progress: watch::Sender<u64>,
}

#[derive(Debug)]
struct State {
    ring: VecDeque<u8>,
    /// The offset of `ring[0]`.
    start: u64,
    total: u64,
    cap: usize,
    spill: Spill,
    closed: bool,
}

/// Whether and where the stream is copied to a file.
#[derive(Debug)]
enum Spill {
    /// Only the ring.
    Never,
    /// Copy everything to `path` once more than `after` bytes arrived, at most `cap` bytes.
    After { after: u64, path: PathBuf, cap: u64 },
    /// Every byte so far is in the file (until `cap`).
    Active { file: File, path: PathBuf, cap: u64 },
    /// The file holds the first `head` bytes; later ones are in the ring only.
    Capped { file: File, path: PathBuf, head: u64 },
    /// Spilling failed: only the ring is left.
    Failed,
}

/// Bytes read from a log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chunk {
    /// The offset of the first byte returned (later than asked for if older bytes are gone).
    pub from: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Bytes between the offset asked for and `from` that are no longer kept.
    pub dropped: u64,
    /// The total received so far.
    pub total: u64,
}

impl OutputLog {
    /// A log keeping the newest `cap` bytes in memory, never spilling.
    pub fn new(cap: usize) -> Self {
        Self::with_spill(cap, None)
    }

    /// A log that copies its bytes to `path` once it outgrows `spill_after` bytes, keeping at
    /// most [`SPILL_CAP`] of them there.
    pub fn with_spill(cap: usize, spill: Option<(u64, PathBuf)>) -> Self {
        Self::with_spill_cap(cap, spill, SPILL_CAP)
    }

    /// [`Self::with_spill`] with the file's cap given.
    pub fn with_spill_cap(cap: usize, spill: Option<(u64, PathBuf)>, spill_cap: u64) -> Self {
        let spill = match spill {
            Some((after, path)) => Spill::After { after, path, cap: spill_cap },
            None => Spill::Never,
        };
        let state = State { ring: VecDeque::new(), start: 0, total: 0, cap: cap.max(1), spill, closed: false };
        Self { state: Mutex::new(state), progress: watch::channel(0).0 }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends bytes as they arrive.
    pub fn append(&self, bytes: &[u8]) {
        let total = {
            let mut state = self.lock();
            state.spill_if_due(bytes.len() as u64);
            state.cap_spill_if_due(bytes.len() as u64);
            if let Spill::Active { file, .. } = &mut state.spill {
                if file.write_all(bytes).is_ok() {
                    // The file holds everything: no second copy in memory.
                    state.total += bytes.len() as u64;
                    state.start = state.total;
                    let total = state.total;
                    drop(state);
                    self.progress.send_replace(total);
                    return;
                }
                tracing::warn!("spilling command output failed; only the newest output is kept");
                state.spill = Spill::Failed;
            }
            state.ring.extend(bytes);
            let excess = state.ring.len().saturating_sub(state.cap);
            if excess > 0 {
                state.ring.drain(..excess);
                state.start += excess as u64;
            }
            state.total += bytes.len() as u64;
            state.total
        };
        self.progress.send_replace(total);
    }

    /// Marks the end of the stream (EOF); waiters wake.
    pub fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        state.ring.shrink_to_fit();
        drop(state);
        self.progress.send_replace(u64::MAX);
    }

    /// Bytes held in memory.
    pub fn memory_bytes(&self) -> usize {
        self.lock().ring.len()
    }

    /// Bytes kept in the spill file.
    pub fn spilled_bytes(&self) -> u64 {
        let state = self.lock();
        match &state.spill {
            Spill::Active { .. } => state.total,
            Spill::Capped { head, .. } => *head,
            _ => 0,
        }
    }

    /// Total bytes received so far.
    pub fn total(&self) -> u64 {
        self.lock().total
    }

    /// Whether the stream has ended.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }

    /// The spill file, if everything is in one.
    #[cfg(test)]
    pub fn spill_path(&self) -> Option<PathBuf> {
        match &self.lock().spill {
            Spill::Active { path, .. } => Some(path.clone()),
            _ => None,
        }
    }

    /// A receiver that changes whenever bytes arrive or the stream ends.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.progress.subscribe()
    }

    /// Up to `max` bytes from offset `from`.
    pub fn read(&self, from: u64, max: usize) -> Chunk {
        let state = self.lock();
        let total = state.total;
        let from = from.min(total);
        if let Spill::Active { file, .. } = &state.spill {
            let len = (total - from).min(max as u64) as usize;
            let mut bytes = vec![0; len];
            if toolbelt_mcp_sandbox::handle::read_exact_at(file, &mut bytes, from).is_ok() {
                return Chunk { from, bytes, dropped: 0, total };
            }
        }
        if let Spill::Capped { file, head, .. } = &state.spill
            && from < *head
        {
            let len = (head - from).min(max as u64) as usize;
            let mut bytes = vec![0; len];
            if toolbelt_mcp_sandbox::handle::read_exact_at(file, &mut bytes, from).is_ok() {
                return Chunk { from, bytes, dropped: 0, total };
            }
        }
        let start = from.max(state.start);
        let skip = (start - state.start) as usize;
        let bytes: Vec<u8> = state.ring.iter().skip(skip).take(max).copied().collect();
        Chunk { from: start, bytes, dropped: start - from, total }
    }

    /// The whole stream as far as it is kept: the spill file, else the ring.
    pub fn head_and_tail(&self, head: usize, tail: usize) -> (Chunk, Option<Chunk>) {
        let total = self.total();
        if total as usize <= head + tail {
            return (self.read(0, head + tail), None);
        }
        (self.read(0, head), Some(self.read(total - tail as u64, tail)))
    }

    /// Newlines between offsets `from` and `to`, if those bytes are still kept.
    pub fn count_newlines(&self, from: u64, to: u64) -> Option<u64> {
        let mut count = 0;
        let mut at = from;
        while at < to {
            let chunk = self.read(at, (to - at).min(1 << 20) as usize);
            if chunk.dropped > 0 || chunk.bytes.is_empty() {
                return None;
            }
            count += memchr::memchr_iter(b'\n', &chunk.bytes).count() as u64;
            at += chunk.bytes.len() as u64;
        }
        Some(count)
    }

    /// Removes the spill file (when the session is forgotten).
    pub fn discard_spill(&self) {
        let mut state = self.lock();
        if let Spill::Active { path, .. } | Spill::Capped { path, .. } = &state.spill {
            let _ = fs::remove_file(path);
        }
        state.spill = Spill::Failed;
    }
}

impl State {
    /// Starts spilling when `incoming` more bytes would pass the threshold: the ring still
    /// holds every byte so far (the threshold is below the ring's cap), so it goes first.
    fn spill_if_due(&mut self, incoming: u64) {
        let Spill::After { after, path, cap } = &self.spill else { return };
        let cap = *cap;
        if self.total + incoming <= *after {
            return;
        }
        let path = path.clone();
        if self.start > 0 {
            self.spill = Spill::Failed;
            return;
        }
        let opened = path.parent().map_or(Ok(()), fs::create_private_dir).and_then(|()| fs::create_spill_file(&path));
        self.spill = match opened {
            Ok(mut file) => {
                let (a, b) = self.ring.as_slices();
                match file.write_all(a).and_then(|()| file.write_all(b)) {
                    Ok(()) => {
                        self.ring = VecDeque::new();
                        self.start = self.total;
                        Spill::Active { file, path, cap }
                    }
                    Err(_) => Spill::Failed,
                }
            }
            Err(err) => {
                tracing::warn!(path = %path.display(), %err, "cannot create the spill file");
                Spill::Failed
            }
        };
    }
}

impl State {
    /// Stops the file at its cap when `incoming` more bytes would pass it: from then on the
    /// file is the head and the ring the tail.
    fn cap_spill_if_due(&mut self, incoming: u64) {
        let Spill::Active { cap, .. } = &self.spill else { return };
        if self.total + incoming <= *cap {
            return;
        }
        let Spill::Active { file, path, .. } = std::mem::replace(&mut self.spill, Spill::Failed) else { return };
        self.spill = Spill::Capped { file, path, head: self.total };
        self.start = self.total;
    }
}

/// The most of one stream its spill file keeps (the head; the ring keeps the tail).
pub const SPILL_CAP: u64 = 64 << 20;

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn ring_keeps_the_newest_bytes_with_offsets() {
        let log = OutputLog::new(8);
        log.append(b"0123456789");
        log.append(b"ab");
        let chunk = log.read(0, 100);
        assert_eq!((chunk.from, chunk.dropped, chunk.total), (4, 4, 12));
        assert_eq!(chunk.bytes, b"456789ab");
        assert_eq!(log.read(10, 1).bytes, b"a");
        assert_eq!(log.read(99, 5), Chunk { from: 12, bytes: vec![], dropped: 0, total: 12 });
    }

    #[test]
    fn spill_keeps_everything_from_the_first_byte() {
        let dir = tempfile::tempdir().unwrap();
        let log = OutputLog::with_spill(16, Some((8, dir.path().join("out/1.stdout"))));
        log.append(b"hello ");
        assert_eq!(log.spill_path(), None);
        for _ in 0..10 {
            log.append(b"world ");
        }
        assert!(log.spill_path().is_some());
        let chunk = log.read(0, 11);
        assert_eq!((chunk.bytes.as_slice(), chunk.dropped), (&b"hello world"[..], 0));
        let (head, tail) = log.head_and_tail(5, 6);
        assert_eq!((head.bytes, tail.unwrap().bytes), (b"hello".to_vec(), b"world ".to_vec()));
        log.discard_spill();
        assert_eq!(std::fs::read_dir(dir.path().join("out")).unwrap().count(), 0);
    }

    #[test]
    fn a_spill_stops_at_its_cap_keeping_the_head_and_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("1.stdout");
        let log = OutputLog::with_spill_cap(16, Some((8, path.clone())), 32);
        for i in 0..100u8 {
            log.append(&[b'a' + i % 26; 4]);
        }
        assert_eq!(log.total(), 400);
        assert!(std::fs::metadata(&path).unwrap().len() <= 32, "the file stops at its cap");
        assert_eq!(log.read(0, 8).bytes, b"aaaabbbb", "the head stays readable");
        let tail = log.read(396, 4);
        assert_eq!((tail.bytes.as_slice(), tail.dropped), (&[b'a' + 99 % 26; 4][..], 0));
        let middle = log.read(100, 4);
        assert!(middle.dropped > 0 && middle.from > 100, "{middle:?}");
        assert_eq!(log.count_newlines(0, 400), None, "what was dropped cannot be counted");
    }

    #[tokio::test]
    async fn waiters_see_new_bytes_and_the_end() {
        let log = std::sync::Arc::new(OutputLog::new(64));
        let mut rx = log.subscribe();
        let writer = log.clone();
        tokio::spawn(async move {
            writer.append(b"x");
            writer.close();
        });
        rx.changed().await.unwrap();
        while !log.is_closed() {
            rx.changed().await.unwrap();
        }
        assert_eq!(log.total(), 1);
    }
}
