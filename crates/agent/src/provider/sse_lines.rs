//! A provider's streamed reply cut into lines before the server-sent-events parser sees it,
//! one line an item, each ending in `\n` (CRLF and a lone CR too): that parser scans its whole
//! buffer again for each chunk that does not end a line, and copies what follows each line it
//! takes, so a reply of one endless line (or of a chunk of many lines) cost it time growing with
//! the square of the reply. Here each byte is looked at once, and the bytes are counted against
//! the reply's cap before they are held.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::{Stream, StreamExt};

/// Cuts `bytes` into lines; past `cap` bytes in all it ends, with `over` set.
pub(crate) fn lines<S, B, E>(bytes: S, cap: usize, over: Arc<AtomicBool>) -> impl Stream<Item = Result<Vec<u8>, E>>
where
    S: Stream<Item = Result<B, E>> + Unpin,
    B: AsRef<[u8]>,
{
    let state = (bytes, Splitter::default(), VecDeque::new(), false);
    futures::stream::unfold(state, move |(mut bytes, mut splitter, mut ready, mut done)| {
        let over = over.clone();
        async move {
            loop {
                if let Some(line) = ready.pop_front() {
                    return Some((Ok(line), (bytes, splitter, ready, done)));
                }
                if done {
                    return None;
                }
                match bytes.next().await {
                    Some(Ok(chunk)) => {
                        let chunk = chunk.as_ref();
                        splitter.seen = splitter.seen.saturating_add(chunk.len());
                        if splitter.seen > cap {
                            over.store(true, Ordering::Relaxed);
                            done = true;
                        } else {
                            splitter.push(chunk, &mut ready);
                        }
                    }
                    Some(Err(err)) => {
                        done = true;
                        return Some((Err(err), (bytes, splitter, ready, done)));
                    }
                    None => {
                        done = true;
                        ready.extend(splitter.finish());
                    }
                }
            }
        }
    })
}

/// The bytes of a line not ended yet, and how many bytes came in all.
#[derive(Default)]
struct Splitter {
    pending: Vec<u8>,
    /// Bytes of `pending` already looked at for a line end.
    scanned: usize,
    seen: usize,
}

impl Splitter {
    /// Adds `chunk`, putting each line it ends into `ready`.
    fn push(&mut self, chunk: &[u8], ready: &mut VecDeque<Vec<u8>>) {
        self.pending.extend_from_slice(chunk);
        let mut start = 0;
        let mut at = self.scanned;
        while let Some(found) = memchr::memchr2(b'\n', b'\r', &self.pending[at..]) {
            let end = at + found;
            let after = match self.pending[end] {
                b'\r' if end + 1 == self.pending.len() => break, // a CRLF may be split here
                b'\r' if self.pending[end + 1] == b'\n' => end + 2,
                _ => end + 1,
            };
            let mut line = self.pending[start..end].to_vec();
            line.push(b'\n');
            ready.push_back(line);
            start = after;
            at = after;
        }
        self.pending.drain(..start);
        self.scanned = self.pending.len().saturating_sub(usize::from(self.pending.last() == Some(&b'\r')));
    }

    /// What is left when the bytes end: a line no newline ended (a lone CR ends one).
    fn finish(&mut self) -> Option<Vec<u8>> {
        let mut rest = std::mem::take(&mut self.pending);
        if rest.last() == Some(&b'\r') {
            rest.pop();
            rest.push(b'\n');
        }
        (!rest.is_empty()).then_some(rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> (Vec<String>, bool) {
        let over = Arc::new(AtomicBool::new(false));
        let stream = futures::stream::iter(chunks.iter().map(|c| Ok::<_, ()>(c.to_vec())).collect::<Vec<_>>());
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let lines: Vec<String> = runtime
            .block_on(lines(stream, 64, over.clone()).collect::<Vec<_>>())
            .into_iter()
            .map(|line| String::from_utf8(line.unwrap()).unwrap())
            .collect();
        (lines, over.load(Ordering::Relaxed))
    }

    #[test]
    fn lines_end_in_lf_whatever_ended_them_and_wherever_the_chunks_cut() {
        let want = vec!["data: a\n", "\n", "data: b\n", "event: x\n", "data: c\n", "\n"];
        let whole: &[u8] = b"data: a\r\n\r\ndata: b\revent: x\ndata: c\n\n";
        assert_eq!(split(&[whole]).0, want);
        // Every place a chunk can end, a CRLF split across two chunks included.
        for cut in 1..whole.len() {
            assert_eq!(split(&[&whole[..cut], &whole[cut..]]).0, want, "cut at {cut}");
        }
        let one_byte_chunks: Vec<&[u8]> = whole.chunks(1).collect();
        assert_eq!(split(&one_byte_chunks).0, want);
    }

    #[test]
    fn the_rest_comes_at_the_end_and_the_cap_ends_the_stream() {
        assert_eq!(split(&[b"data: a\ndata: unfinished"]).0, vec!["data: a\n", "data: unfinished"]);
        assert_eq!(split(&[b"data: a\r"]).0, vec!["data: a\n"], "a lone CR at the end ends the line");
        let (lines, over) = split(&[b"data: a\n", &[b'x'; 40], &[b'y'; 40]]);
        assert!(over, "80 bytes past a cap of 64");
        assert_eq!(lines, vec!["data: a\n"], "nothing past the cap is passed on");
    }

    #[test]
    fn an_endless_line_is_looked_at_once() {
        let mut splitter = Splitter::default();
        let mut ready = VecDeque::new();
        for _ in 0..1000 {
            splitter.push(&[b'x'; 1000], &mut ready);
            assert_eq!(splitter.scanned, splitter.pending.len(), "only the new bytes are scanned next");
        }
        assert!(ready.is_empty());
        splitter.push(b"\n", &mut ready);
        assert_eq!(ready.pop_front().map(|line| line.len()), Some(1_000_001));
        assert!(splitter.pending.is_empty() && splitter.scanned == 0);
    }
}
