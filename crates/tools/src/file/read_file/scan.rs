//! One streaming pass over a text file: the window's numbered lines, and over the whole file
//! (a full pass) the line count, line-ending census, sha256 and where every
//! [`CHECKPOINT_LINES`]th line starts; or, when those are known (`index.rs`), a pass from the
//! nearest checkpoint that stops after the window. A full pass may begin where an earlier one
//! left a file that has grown since ([`Start`]).

use std::io::BufRead;

use sha2::{Digest, Sha256};
use twox_hash::XxHash3_128 as Xxh3;

use crate::{Lines, RESERVE, push_decimal};

/// Characters of one line shown before it is cut.
pub(super) const MAX_LINE_CHARS: usize = 2000;
/// Bytes of one line kept while scanning (enough for 2000 characters of any UTF-8).
pub(super) const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;
/// Lines between two checkpoints of a full pass.
pub(super) const CHECKPOINT_LINES: u64 = 1024;
/// Bytes scanned between two looks at `stop`.
const STOP_EVERY_BYTES: usize = 1 << 20;

/// Which lines to show, within what budget.
pub(super) struct Window {
    /// First line shown, 1-based.
    pub offset: u64,
    /// Most lines shown.
    pub limit: u64,
    /// Bytes of the result.
    pub budget: usize,
}

/// What a pass found. After a window pass only the window's fields are set.
#[derive(Default)]
pub(super) struct Scan {
    pub lines: Lines,
    pub total: u64,
    pub shown_end: u64,
    pub stopped_for_budget: bool,
    pub sha256: String,
    pub crlf: u64,
    pub lf: u64,
    pub missing_final_newline: bool,
    pub lossy: bool,
    pub long_lines: u64,
    /// Byte offsets where lines `k * CHECKPOINT_LINES + 1` start (k = 1, 2, …): full pass only.
    pub checkpoints: Vec<u64>,
    /// The line after the last one shown, and where it starts counted from the pass's first
    /// byte (a full pass's: the file's): where the next page begins.
    pub resume: Option<(u64, u64)>,
    /// Where a later pass can take the file up if it grows: full pass only.
    pub tail: Option<Tail>,
}

/// Where a full pass begins: the file's first byte, or the start of the last line an earlier
/// pass did not see end, with what that pass knew of the bytes before it.
#[derive(Clone)]
pub(super) struct Start {
    /// The byte it begins at.
    pub byte: u64,
    /// Lines before it.
    pub lines: u64,
    /// CRLF line endings before it.
    pub crlf: u64,
    /// LF line endings before it.
    pub lf: u64,
    /// The sha256 of the bytes before it, not yet finished.
    pub sha256: Sha256,
    /// Their xxh3, not yet finished.
    pub xxh3: Xxh3,
    /// Byte offsets where lines `k * CHECKPOINT_LINES + 1` start, before it.
    pub checkpoints: Vec<u64>,
}

/// The hasher that checks a file's bytes unchanged: xxh3 with a seed drawn once per process,
/// so bytes cannot be made ahead of time to collide with others under it.
pub(super) fn checked_hasher() -> Xxh3 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let seed = *SEED.get_or_init(|| {
        use std::hash::{BuildHasher, Hasher};
        std::collections::hash_map::RandomState::new().build_hasher().finish()
    });
    Xxh3::with_seed(seed)
}

impl Default for Start {
    fn default() -> Self {
        Self {
            byte: 0,
            lines: 0,
            crlf: 0,
            lf: 0,
            sha256: Sha256::new(),
            xxh3: checked_hasher(),
            checkpoints: Vec::new(),
        }
    }
}

/// How a full pass left the file: what a later one checks the file against before trusting
/// anything of this one, and where it starts if the file grew.
#[derive(Clone)]
pub(super) struct Tail {
    /// Bytes read: the file's size then.
    pub len: u64,
    /// Their xxh3-128.
    pub xxh3: u128,
    /// The start of the last line when no newline ended it (the next bytes may continue it),
    /// else the end. Its `checkpoints` are left empty: the summary holds them.
    pub resume: Start,
}

/// The whole file (from [`Start`]) or, from a checkpoint, only as far as the window.
pub(super) enum Pass {
    /// Every byte from `Start` on: hashed, every line counted.
    Full(Box<Start>),
    /// From the start of line `first_line` to the end of the window.
    Window { first_line: u64 },
}

/// Streams `reader` once as `pass` says, keeping the window's lines; gives up (`None`) when
/// `stop` says so.
pub(super) fn scan(
    mut reader: impl BufRead,
    window: &Window,
    pass: Pass,
    stop: &dyn Fn() -> bool,
) -> std::io::Result<Option<Scan>> {
    let mut since_look = 0usize;
    let mut consumed = 0u64;
    let mut out = Scan { lines: Lines::new(window.budget.saturating_sub(RESERVE)), ..Scan::default() };
    // A full pass's hashes, and the last line's start as it was when the line began.
    let mut hashes = None;
    let mut line_start: Option<Start> = None;
    match pass {
        Pass::Window { first_line } => out.total = first_line.saturating_sub(1),
        Pass::Full(start) => {
            let Start { byte, lines, crlf, lf, sha256, xxh3, checkpoints } = *start;
            (consumed, out.total, out.crlf, out.lf, out.checkpoints) = (byte, lines, crlf, lf, checkpoints);
            hashes = Some((sha256, xxh3));
        }
    }
    let full = hashes.is_some();
    let mut line: Vec<u8> = Vec::new();
    let mut line_len: usize = 0;
    let last = window.offset.saturating_add(window.limit - 1);
    let finish_line = |line: &mut Vec<u8>, line_len: &mut usize, out: &mut Scan| {
        out.total += 1;
        let n = out.total;
        let ending = if line.ends_with(b"\r\n") {
            out.crlf += 1;
            2
        } else if line.ends_with(b"\n") {
            out.lf += 1;
            1
        } else {
            out.missing_final_newline = true;
            0
        };
        if n >= window.offset && n <= last && !out.stopped_for_budget {
            let body = &line[..line.len() - ending.min(line.len())];
            let rendered = render_line(n, body, *line_len - ending, out);
            if out.lines.push(rendered) {
                out.shown_end = n;
            } else {
                out.stopped_for_budget = true;
            }
        }
        line.clear();
        *line_len = 0;
    };
    loop {
        if !full && (out.total >= last || out.stopped_for_budget) {
            return Ok(Some(out));
        }
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let (take, complete) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if let Some((sha256, xxh3)) = hashes.as_mut() {
            if line_len == 0 && !complete {
                // A line the buffer does not hold whole: if the file ends in it, a grown
                // file's pass starts here.
                let (lines, crlf, lf) = (out.total, out.crlf, out.lf);
                let (sha256, xxh3) = (sha256.clone(), xxh3.clone());
                line_start = Some(Start { byte: consumed, lines, crlf, lf, sha256, xxh3, checkpoints: Vec::new() });
            }
            sha256.update(&buf[..take]);
            xxh3.write(&buf[..take]);
        }
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        if complete && take > room {
            line.extend_from_slice(if buf[..take].ends_with(b"\r\n") { b"\r\n" } else { b"\n" });
        }
        line_len += take;
        reader.consume(take);
        consumed += take as u64;
        since_look += take;
        if since_look >= STOP_EVERY_BYTES {
            since_look = 0;
            if stop() {
                return Ok(None);
            }
        }
        if complete {
            finish_line(&mut line, &mut line_len, &mut out);
            if out.shown_end == out.total {
                out.resume = Some((out.total + 1, consumed));
            }
            if full && out.total.is_multiple_of(CHECKPOINT_LINES) {
                out.checkpoints.push(consumed);
            }
        }
    }
    let ended_mid_line = line_len > 0;
    if ended_mid_line {
        finish_line(&mut line, &mut line_len, &mut out);
    }
    if let Some((sha256, xxh3)) = hashes {
        let resume = match line_start.filter(|_| ended_mid_line) {
            Some(start) => start,
            None => Start {
                byte: consumed,
                lines: out.total,
                crlf: out.crlf,
                lf: out.lf,
                sha256: sha256.clone(),
                xxh3: xxh3.clone(),
                checkpoints: Vec::new(),
            },
        };
        out.tail = Some(Tail { len: consumed, xxh3: xxh3.finish_128(), resume });
        out.sha256 = hex::encode(sha256.finalize());
    }
    Ok(Some(out))
}

/// `7\tthe line`, cut at 2000 characters with a marker.
fn render_line(number: u64, body: &[u8], full_len: usize, out: &mut Scan) -> String {
    let text = match std::str::from_utf8(body) {
        Ok(text) => std::borrow::Cow::Borrowed(text),
        Err(err) if err.error_len().is_none() && body.len() < full_len => {
            // Cut in the middle of a character by the byte cap, not invalid.
            std::borrow::Cow::Borrowed(std::str::from_utf8(&body[..err.valid_up_to()]).unwrap_or_default())
        }
        Err(_) => {
            out.lossy = true;
            String::from_utf8_lossy(body)
        }
    };
    // A line of at most MAX_LINE_CHARS bytes has at most as many characters: most lines are
    // shown whole without counting them (this runs for every line a page shows).
    let cut = if text.len() <= MAX_LINE_CHARS { None } else { text.char_indices().nth(MAX_LINE_CHARS) };
    match cut {
        Some((cut_at, _)) => {
            out.long_lines += 1;
            let omitted = full_len.saturating_sub(cut_at);
            format!("{number}\t{}… [line cut: {omitted} more bytes]", &text[..cut_at])
        }
        None => numbered(number, &text),
    }
}

/// `number`, a tab, then `text`: what `format!("{number}\t{text}")` gives, without the
/// formatting machinery (a page of short lines spent more there than in reading the file).
fn numbered(number: u64, text: &str) -> String {
    let mut line = String::with_capacity(21 + text.len());
    push_decimal(&mut line, number);
    line.push('\t');
    line.push_str(text);
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_lines_read_as_formatted() {
        for number in [0, 1, 9, 10, 99, 100, 12_345, u64::MAX] {
            for text in ["", "plain", "tab\tand é"] {
                assert_eq!(numbered(number, text), format!("{number}\t{text}"));
            }
        }
    }

    fn scan_str(text: &str, offset: u64, limit: u64, budget: usize) -> Scan {
        scan(text.as_bytes(), &Window { offset, limit, budget }, Pass::Full(Box::default()), &|| false)
            .unwrap()
            .unwrap()
    }

    #[test]
    fn counts_lines_and_windows() {
        let s = scan_str("a\nb\nc\n", 2, 1, 10_000);
        assert_eq!((s.total, s.shown_end, s.lf, s.missing_final_newline), (3, 2, 3, false));
        assert_eq!(s.lines.text(), "2\tb\n");
        let s = scan_str("a\r\nb", 1, 10, 10_000);
        assert_eq!((s.total, s.crlf, s.missing_final_newline), (2, 1, true));
        assert_eq!(s.lines.text(), "1\ta\n2\tb\n");
        assert_eq!(scan_str("", 1, 10, 10_000).total, 0);
        assert_eq!(s.sha256, "18745f36a05e29072709042d6062ce54f1b08ff36c27ba80c39f81fb010c8ce2");
    }

    #[test]
    fn cuts_long_lines_and_stops_at_budget() {
        let long = "x".repeat(MAX_LINE_BYTES * 3);
        let s = scan_str(&format!("{long}\nend\n"), 1, 10, 100_000);
        assert_eq!(s.long_lines, 1);
        assert!(s.lines.text().contains(&format!("… [line cut: {} more bytes]", long.len() - MAX_LINE_CHARS)));
        assert!(s.lines.text().ends_with("\n2\tend\n"));
        let many = "line\n".repeat(1000);
        let s = scan_str(&many, 1, 2000, 2048);
        assert!(s.stopped_for_budget && s.lines.text().len() <= 2048 - RESERVE && s.total == 1000);
    }

    #[test]
    fn a_window_says_where_the_next_one_starts() {
        let s = scan_str("a\nbb\nccc\ndddd\n", 2, 2, 10_000);
        assert_eq!(s.resume, Some((4, 9)), "line 4 starts at byte 9");
        let from_line_3 = scan(
            &b"ccc\ndddd\n"[..],
            &Window { offset: 3, limit: 1, budget: 10_000 },
            Pass::Window { first_line: 3 },
            &|| false,
        )
        .unwrap()
        .unwrap();
        assert_eq!(from_line_3.resume, Some((4, 4)), "counted from where the pass began");
        let many = "line\n".repeat(1000);
        let cut = scan_str(&many, 1, 2000, 2048);
        let (next, byte) = cut.resume.unwrap();
        assert_eq!((next, byte), (cut.shown_end + 1, cut.shown_end * 5), "after the last line the budget let in");
    }

    #[test]
    fn invalid_utf8_is_lossy_and_noted() {
        let s = scan(
            &b"ok\n\xff\xfe bad\n"[..],
            &Window { offset: 1, limit: 10, budget: 10_000 },
            Pass::Full(Box::default()),
            &|| false,
        )
        .unwrap()
        .unwrap();
        assert!(s.lossy && s.lines.text().contains('\u{fffd}'));
    }
}
