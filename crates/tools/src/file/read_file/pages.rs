//! A text file's window, read with what the index knows of the file: from the nearest
//! checkpoint when the summary is trusted or the file's bytes check out against it (a grown
//! file's summary first taken up from where the last pass ended), else a full pass, whose
//! summary is kept for the next page.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use super::index::{self, Found, Identity, Key, Known, Summary};
use super::scan::{self, Pass, Scan, Start, Window, checked_hasher};

/// Bytes read at a time when checking a file against its summary: they stay in the core's L2
/// cache for the hash (1 MiB reads were no faster once the hash used AVX2).
const CHECK_CHUNK: usize = 256 * 1024;
/// Bytes a pass buffers.
const PASS_BUFFER: usize = 64 * 1024;

/// Scans the text file `handle` (at `path`, canonical, with `identity`) for `window`; `head`
/// holds its first bytes, already read. `None` when `stop` said so.
pub(super) fn scan_text(
    path: &Path,
    mut handle: File,
    head: Vec<u8>,
    identity: Identity,
    window: &Window,
    stop: &dyn Fn() -> bool,
) -> std::io::Result<Option<Scan>> {
    let key = Key::new(path, &identity);
    let began = SystemTime::now();
    let known = match index::find(&key, &identity) {
        Found::Trusted(known) => Some(known),
        Found::Check(known) => match checked(&mut handle, known, stop)? {
            Checked::Stopped => return Ok(None),
            Checked::Same(known) => {
                index::put(key.clone(), identity, known.clone(), began);
                Some(known)
            }
            Checked::Changed => None,
        },
        Found::Missing => None,
    };
    match known {
        Some(known) => window_pass(&key, &identity, handle, head, &known, window, stop),
        None => {
            handle.seek(SeekFrom::Start(head.len() as u64))?;
            let reader = BufReader::with_capacity(PASS_BUFFER, std::io::Cursor::new(head).chain(handle));
            let Some(mut scan) = scan::scan(reader, window, Pass::Full(Box::default()), stop)? else {
                return Ok(None);
            };
            if let Some(summary) = Summary::of(&mut scan) {
                index::put(key.clone(), identity, Known { summary: Arc::new(summary), resume: None }, began);
                if let Some((line, byte)) = scan.resume {
                    index::resume_at(&key, &identity, line, byte);
                }
            }
            Ok(Some(scan))
        }
    }
}

/// A later page of a file read before: only from the nearest checkpoint to the window.
fn window_pass(
    key: &Key,
    identity: &Identity,
    mut handle: File,
    mut head: Vec<u8>,
    known: &Known,
    window: &Window,
    stop: &dyn Fn() -> bool,
) -> std::io::Result<Option<Scan>> {
    let (first_line, byte) = known.start_for(window.offset);
    // The sniffed head is read already: start in it when the window does.
    match usize::try_from(byte).ok().filter(|&at| at <= head.len()) {
        Some(at) => {
            drop(head.drain(..at));
            handle.seek(SeekFrom::Start((at + head.len()) as u64))?;
        }
        None => {
            head.clear();
            handle.seek(SeekFrom::Start(byte))?;
        }
    }
    let reader = BufReader::with_capacity(PASS_BUFFER, std::io::Cursor::new(head).chain(handle));
    let Some(window_scan) = scan::scan(reader, window, Pass::Window { first_line }, stop)? else {
        return Ok(None);
    };
    if let Some((line, from_start)) = window_scan.resume {
        index::resume_at(key, identity, line, byte + from_start);
    }
    let summary = &known.summary;
    Ok(Some(Scan {
        total: summary.total,
        crlf: summary.crlf,
        lf: summary.lf,
        missing_final_newline: summary.missing_final_newline,
        sha256: summary.sha256.clone(),
        ..window_scan
    }))
}

/// What checking a file against a summary of its first bytes found.
enum Checked {
    /// Those bytes are unchanged: the summary, taken up to the file's end when it grew.
    Same(Known),
    /// They changed.
    Changed,
    /// `stop` said so.
    Stopped,
}

/// Whether the bytes `known`'s full pass read are still the file's first ones; if so, its
/// summary taken up from where that pass left the file's last line to the file's end.
fn checked(handle: &mut File, known: Known, stop: &dyn Fn() -> bool) -> std::io::Result<Checked> {
    let tail = &known.summary.tail;
    handle.seek(SeekFrom::Start(0))?;
    let mut hasher = checked_hasher();
    let mut buf = Spare::take();
    let buf = &mut buf.0;
    let mut left = tail.len;
    while left > 0 {
        if stop() {
            return Ok(Checked::Stopped);
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let read = match read_some(handle, &mut buf[..want])? {
            0 => return Ok(Checked::Changed),
            read => read,
        };
        hasher.write(&buf[..read]);
        left -= read as u64;
    }
    if hasher.finish_128() != tail.xxh3 {
        return Ok(Checked::Changed);
    }
    // The bytes past the last pass's end (none when the file did not grow), from the start of
    // its last line, which they may continue.
    let mut peek = [0u8; 1];
    if read_some(handle, &mut peek)? == 0 {
        return Ok(Checked::Same(known));
    }
    let start = Start { checkpoints: known.summary.checkpoints.clone(), ..tail.resume.clone() };
    handle.seek(SeekFrom::Start(start.byte))?;
    let reader = BufReader::with_capacity(PASS_BUFFER, &mut *handle);
    // A window past any line: this pass only learns the whole file's facts.
    let nothing = Window { offset: u64::MAX, limit: 1, budget: 0 };
    let Some(mut scan) = scan::scan(reader, &nothing, Pass::Full(Box::new(start)), stop)? else {
        return Ok(Checked::Stopped);
    };
    Ok(match Summary::of(&mut scan) {
        Some(summary) => Checked::Same(Known { summary: Arc::new(summary), resume: known.resume }),
        None => Checked::Changed,
    })
}

/// The check's read buffer, kept for the next check (256 KiB held once a grown file was read):
/// a fresh one is zeroed every page, 4.5 % of the server's time paging a growing file with the
/// 1 MiB buffer before; kept, those pages took 1.58–1.92 ms against 2.20–2.32 ms (same runs).
struct Spare(Vec<u8>);

static SPARE: std::sync::Mutex<Vec<u8>> = std::sync::Mutex::new(Vec::new());

impl Spare {
    fn take() -> Self {
        let kept = std::mem::take(&mut *SPARE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        Self(if kept.len() == CHECK_CHUNK { kept } else { vec![0; CHECK_CHUNK] })
    }
}

impl Drop for Spare {
    fn drop(&mut self) {
        *SPARE.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = std::mem::take(&mut self.0);
    }
}

/// Reads what one call gives, past interruptions.
fn read_some(handle: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    loop {
        match handle.read(buf) {
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use std::io::Write;
    use std::time::Duration;

    use proptest::prelude::*;

    use super::*;

    /// A page as `read_file` reads it: the first 8 KiB sniffed, then the index.
    fn page(path: &Path, offset: u64, limit: u64) -> Scan {
        page_as(path, Identity::of(&std::fs::metadata(path).unwrap()), offset, limit)
    }

    /// The same, the file taken to have `identity`.
    fn page_as(path: &Path, identity: Identity, offset: u64, limit: u64) -> Scan {
        let mut handle = File::open(path).unwrap();
        let mut head = Vec::new();
        (&mut handle).take(8192).read_to_end(&mut head).unwrap();
        let window = Window { offset, limit, budget: 1 << 20 };
        scan_text(path, handle, head, identity, &window, &|| false).unwrap().unwrap()
    }

    /// The same page from a full pass over the file as it is.
    fn truth(path: &Path, offset: u64, limit: u64) -> Scan {
        let bytes = std::fs::read(path).unwrap();
        let window = Window { offset, limit, budget: 1 << 20 };
        scan::scan(&bytes[..], &window, Pass::Full(Box::default()), &|| false).unwrap().unwrap()
    }

    fn assert_same(path: &Path, offset: u64, limit: u64, what: &str) {
        let (got, want) = (page(path, offset, limit), truth(path, offset, limit));
        let facts = |s: &Scan| (s.total, s.crlf, s.lf, s.missing_final_newline, s.sha256.clone(), s.shown_end);
        assert_eq!(facts(&got), facts(&want), "{what}: offset {offset}, limit {limit}");
        assert_eq!(got.lines.text(), want.lines.text(), "{what}: offset {offset}, limit {limit}");
    }

    fn append(path: &Path, bytes: &[u8]) {
        std::fs::OpenOptions::new().append(true).open(path).unwrap().write_all(bytes).unwrap();
    }

    fn lines(from: usize, to: usize) -> String {
        (from..to).map(|n| format!("line {n} {}\n", "x".repeat(n % 37))).collect()
    }

    fn found(path: &Path) -> Found {
        let identity = Identity::of(&std::fs::metadata(path).unwrap());
        index::find(&Key::new(path, &identity), &identity)
    }

    #[test]
    fn a_fresh_file_pages_right_and_its_summary_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fresh.log");
        std::fs::write(&path, lines(1, 5000)).unwrap();
        for offset in (1..5000).step_by(700) {
            assert_same(&path, offset, 700, "fresh");
        }
        assert!(matches!(found(&path), Found::Trusted(_) | Found::Check(_)), "kept while racy, to be checked");
        std::thread::sleep(Identity::of(&std::fs::metadata(&path).unwrap()).racy_window() + Duration::from_millis(5));
        assert_same(&path, 4000, 10, "settled");
        assert!(matches!(found(&path), Found::Trusted(_)), "checked after its racy window: trusted");
        assert_same(&path, 100, 10, "trusted");
    }

    #[test]
    fn a_rewrite_in_the_same_tick_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("same.txt");
        let (a, b) = (lines(1, 3000), lines(1, 3000).replace("line 2999", "LINE 2999"));
        assert_eq!(a.len(), b.len());
        for round in 0..20 {
            std::fs::write(&path, &a).unwrap();
            assert_same(&path, 2990, 20, "before");
            // In place, the same size, within microseconds: most often the same timestamps.
            let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            file.write_all(b.as_bytes()).unwrap();
            drop(file);
            assert_same(&path, 2990, 20, &format!("rewritten in place, round {round}"));
            assert!(page(&path, 2999, 1).lines.text().contains("LINE 2999"));
        }
        // Where the kernel gives the rewrite fine timestamps (multigrain, Linux 6.13+) the
        // identity moves anyway: here it does not, as on a filesystem of coarse stamps.
        std::fs::write(&path, &a).unwrap();
        let stamped = Identity::of(&std::fs::metadata(&path).unwrap());
        let as_stamped = |offset| {
            let scan = page_as(&path, stamped, offset, 1);
            (scan.lines.text(), scan.sha256)
        };
        assert!(as_stamped(2999).0.contains("line 2999"));
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().write_all(b.as_bytes()).unwrap();
        let (text, sha256) = as_stamped(2999);
        assert!(text.contains("LINE 2999"), "the same identity, other bytes: seen");
        assert_eq!(sha256, truth(&path, 1, 1).sha256, "and the whole file's hash is the new one");
    }

    #[test]
    fn a_growing_file_is_taken_up_where_it_ended() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grow.log");
        std::fs::write(&path, lines(1, 3000)).unwrap();
        assert_same(&path, 1, 500, "first page");
        // Appended mid-line, a CRLF split across two writes, then whole lines.
        for (n, piece) in
            [&b"partial"[..], b" more\r", b"\nnext\r\n", lines(3000, 6000).as_bytes(), b"end"].into_iter().enumerate()
        {
            append(&path, piece);
            let size = std::fs::metadata(&path).unwrap().len();
            assert_same(&path, 2995, 20, &format!("after append {n}"));
            let (Found::Check(known) | Found::Trusted(known)) = found(&path) else { panic!("append {n}: not kept") };
            assert_eq!(known.summary.tail.len, size, "append {n}: taken up to the end");
            let want = truth(&path, 1, 1);
            assert_eq!(known.summary.checkpoints, want.checkpoints, "append {n}: checkpoints");
        }
        assert_same(&path, 5990, 100, "the last page");
    }

    #[test]
    fn a_changed_prefix_or_a_shorter_file_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("changed.txt");
        std::fs::write(&path, lines(1, 2000)).unwrap();
        assert_same(&path, 1500, 10, "first");
        std::fs::write(&path, lines(1, 2000).replacen("line 5 ", "line five ", 1) + "appended\n").unwrap();
        assert_same(&path, 1500, 10, "prefix changed and grown");
        std::fs::write(&path, lines(1, 1000)).unwrap();
        assert_same(&path, 990, 20, "shorter");
        std::fs::write(&path, "").unwrap();
        assert_same(&path, 1, 20, "empty");
        append(&path, b"one\r\ntwo");
        assert_same(&path, 1, 20, "grown from empty");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Any run of appends, in-place rewrites and truncations, each followed by a page
        /// anywhere: every page is what a full pass over the file as it is shows.
        #[test]
        fn pages_match_a_full_pass_whatever_happens_between_them(
            steps in prop::collection::vec(
                (0u8..4, prop::collection::vec(prop::sample::select(&b"ab\r\n\n\n"[..]), 0..3000), 1u64..1500, 1u64..300),
                1..12,
            ),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("p.txt");
            std::fs::write(&path, lines(1, 1500)).unwrap();
            for (what, bytes, offset, limit) in steps {
                match what {
                    0 | 1 => append(&path, &bytes),
                    2 => {
                        let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                        file.write_all(&bytes).unwrap();
                    }
                    _ => std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(bytes.len() as u64).unwrap(),
                }
                let total = truth(&path, 1, 1).total.max(1);
                assert_same(&path, offset.min(total), limit, "after a step");
            }
        }
    }
}
