//! `read_file`: a window of numbered lines, streamed so a huge file is never held in memory;
//! images as image content; other binaries refused with their type and size.

use std::io::{BufRead, BufReader, Read};

use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::ToolError;
use crate::sandbox::{Resolved, fs};
use crate::tools::file::human_size;
use crate::tools::{Call, Effect, EffectKind, Image, Lines, Operation, RESERVE, Reply, blocking};

/// Lines shown when `limit` is not given.
const DEFAULT_LIMIT: u64 = 2000;
/// Characters of one line shown before it is cut.
const MAX_LINE_CHARS: usize = 2000;
/// Bytes of one line kept while scanning (enough for 2000 characters of any UTF-8).
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;
/// Bytes sniffed to tell text from binary.
const SNIFF_BYTES: usize = 8192;
/// Image types returned as MCP image content.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The `read_file` operation.
pub struct ReadFile;

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// Relative to the first root (or absolute inside it). Default for list_dir, file_search, grep_search: the root; changes: all files.
    pub path: String,
    /// First line, 1-based.
    #[schemars(range(min = 1))]
    #[schemars(extend("default" = 1))]
    pub offset: Option<u64>,
    /// Max lines (read_file, default 2000), entries (list_dir, 1000), files (file_search, 500) or matches (grep_search, 200).
    #[schemars(range(min = 1))]
    #[schemars(extend("default" = 2000))]
    pub limit: Option<u64>,
}

/// Structured result of `read_file`.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Output {
    /// The file, relative to the first root when inside it.
    pub path: String,
    /// `text` or `image`.
    pub kind: String,
    /// Size in bytes.
    pub size: u64,
    /// sha256 (hex) of the whole file; edits accept it as `expected_hash`.
    pub sha256: String,
    /// Lines in the whole file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_lines: Option<u64>,
    /// First line shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_line: Option<u64>,
    /// Last line shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<u64>,
    /// The `offset` to continue from, when lines after the window remain.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// `lf`, `crlf`, `mixed` or `none`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line_endings: Option<String>,
    /// Present (true) when the file ends without a newline.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_final_newline: Option<bool>,
    /// Present (true) when invalid UTF-8 was shown as U+FFFD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lossy_utf8: Option<bool>,
    /// Lines shown cut at 2000 characters, when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub long_lines_cut: Option<u64>,
    /// MIME type of an image.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// The window's lines, each `NUMBER<tab>TEXT` (the text view shows the same lines).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
}

impl Operation for ReadFile {
    const NAME: &'static str = "read_file";
    const DESCRIPTION: &'static str = "Read numbered lines, with the file's sha256. `offset` (1-based) and `limit` (default 2000) pick a window; lines over 2000 characters are cut. Pass the sha256 as `expected_hash` to edits. Images (png, jpeg, gif, webp) come back as images; other binary files are refused with their type and size.";
    const KIND: EffectKind = EffectKind::Read;
    type Args = Args;
    type Output = Output;

    fn effect(args: &Args) -> Effect {
        Effect::Read(vec![args.path.clone()])
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let (file, context) = call.single()?;
        blocking(move || {
            read(&file, &args, context.budget, context.config.max_image_bytes, &|| {
                context.signals.cancel.is_cancelled()
            })
        })
        .await
    }
}

fn read(
    file: &Resolved,
    args: &Args,
    budget: usize,
    max_image: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Reply<Output>, ToolError> {
    ToolError::check_range("offset", args.offset.map(|o| o as usize), 1, usize::MAX, "lines are numbered from 1")?;
    ToolError::check_range("limit", args.limit.map(|l| l as usize), 1, usize::MAX, "at least 1 line")?;
    let shown = file.shown().to_string();
    let io_err = |err| ToolError::io("read", &shown, err);
    let (mut handle, meta) = fs::open_read(file).map_err(io_err)?;
    if meta.is_dir() {
        return Err(ToolError::IsADirectory { path: shown });
    }
    if !meta.is_file() {
        return Err(ToolError::BadTarget {
            path: shown,
            problem: "is not a regular file (a FIFO, socket or device); only files are read".into(),
        });
    }
    let mut head = Vec::with_capacity(SNIFF_BYTES);
    (&mut handle).take(SNIFF_BYTES as u64).read_to_end(&mut head).map_err(io_err)?;
    let detected = infer::get(&head);
    let size = meta.len();
    if let Some(kind) = detected.filter(|k| IMAGE_TYPES.contains(&k.mime_type())) {
        if size > max_image as u64 {
            return Err(ToolError::TooLarge {
                path: shown,
                size: human_size(size),
                limit: human_size(max_image as u64),
                what: "images",
            });
        }
        let mut bytes = head;
        handle.read_to_end(&mut bytes).map_err(io_err)?;
        let sha256 = hex(&Sha256::digest(&bytes));
        let text = format!("[image `{shown}`: {}, {}; sha256 {sha256}]", kind.mime_type(), human_size(size));
        let data = Output {
            path: shown,
            kind: "image".into(),
            size,
            sha256,
            mime_type: Some(kind.mime_type().into()),
            ..Output::default()
        };
        let image =
            Image { mime_type: kind.mime_type(), base64: base64::engine::general_purpose::STANDARD.encode(&bytes) };
        return Ok(Reply { images: vec![image], ..Reply::new(text, data) });
    }
    let binary_type =
        detected.filter(|k| !matches!(k.matcher_type(), infer::MatcherType::Text)).map(|k| k.mime_type().to_string());
    if binary_type.is_some() || memchr::memchr(0, &head).is_some() {
        return Err(ToolError::Binary {
            path: shown,
            kind: binary_type.unwrap_or_else(|| "binary data".into()),
            size: human_size(size),
        });
    }
    let reader = BufReader::with_capacity(64 * 1024, std::io::Cursor::new(head).chain(handle));
    let window =
        Window { offset: args.offset.unwrap_or(1).max(1), limit: args.limit.unwrap_or(DEFAULT_LIMIT).max(1), budget };
    let scan = scan(reader, &window, stop).map_err(io_err)?.ok_or(ToolError::Cancelled)?;
    if scan.total > 0 && window.offset > scan.total {
        return Err(ToolError::OffsetPastEnd { path: shown, offset: window.offset, total: scan.total });
    }
    Ok(render(shown, size, &window, scan))
}

/// Which lines to show, within what budget.
struct Window {
    offset: u64,
    limit: u64,
    budget: usize,
}

/// What one pass over the file found.
#[derive(Default)]
struct Scan {
    lines: Lines,
    total: u64,
    shown_end: u64,
    stopped_for_budget: bool,
    sha256: String,
    crlf: u64,
    lf: u64,
    missing_final_newline: bool,
    lossy: bool,
    long_lines: u64,
}

/// Bytes scanned between two looks at `stop`.
const STOP_EVERY_BYTES: usize = 1 << 20;

/// Streams the file once: hashes every byte, counts every line, keeps the window's lines;
/// gives up (`None`) when `stop` says so.
fn scan(mut reader: impl BufRead, window: &Window, stop: &dyn Fn() -> bool) -> std::io::Result<Option<Scan>> {
    let mut since_look = 0usize;
    let mut hasher = Sha256::new();
    let mut out = Scan { lines: Lines::new(window.budget.saturating_sub(RESERVE)), ..Scan::default() };
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
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            break;
        }
        let (take, complete) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        hasher.update(&buf[..take]);
        let room = MAX_LINE_BYTES.saturating_sub(line.len());
        line.extend_from_slice(&buf[..take.min(room)]);
        if complete && take > room {
            line.extend_from_slice(if buf[..take].ends_with(b"\r\n") { b"\r\n" } else { b"\n" });
        }
        line_len += take;
        reader.consume(take);
        since_look += take;
        if since_look >= STOP_EVERY_BYTES {
            since_look = 0;
            if stop() {
                return Ok(None);
            }
        }
        if complete {
            finish_line(&mut line, &mut line_len, &mut out);
        }
    }
    if line_len > 0 {
        finish_line(&mut line, &mut line_len, &mut out);
    }
    out.sha256 = hex(&hasher.finalize());
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
    let mut chars = text.char_indices();
    match chars.nth(MAX_LINE_CHARS) {
        Some((cut_at, _)) => {
            out.long_lines += 1;
            let omitted = full_len.saturating_sub(cut_at);
            format!("{number}\t{}… [line cut: {omitted} more bytes]", &text[..cut_at])
        }
        None => format!("{number}\t{text}"),
    }
}

fn render(shown: String, size: u64, window: &Window, scan: Scan) -> Reply<Output> {
    let mut text = scan.lines.text();
    let has_window = scan.shown_end >= window.offset;
    let next_offset = (scan.shown_end < scan.total && has_window).then_some(scan.shown_end + 1);
    let line_endings = match (scan.crlf, scan.lf) {
        (0, 0) => "none",
        (_, 0) => "crlf",
        (0, _) => "lf",
        _ => "mixed",
    };
    let mut notes = Vec::new();
    if scan.total == 0 {
        notes.push(format!("`{shown}` is empty"));
    } else if has_window {
        notes.push(format!("`{shown}` lines {}-{} of {}", window.offset, scan.shown_end, scan.total));
    } else {
        notes.push(format!("`{shown}`: line {} alone exceeds the output budget", window.offset));
    }
    let more = next_offset.map(|next| {
        let why = if scan.stopped_for_budget { "output budget reached; " } else { "" };
        format!("{why}more: offset={next}")
    });
    notes.extend(more.clone());
    if matches!(line_endings, "crlf" | "mixed") {
        notes.push(format!("{} line endings", line_endings.to_uppercase()));
    }
    if scan.missing_final_newline {
        notes.push("no final newline".into());
    }
    if scan.lossy {
        notes.push("invalid UTF-8 shown as U+FFFD".into());
    }
    notes.push(format!("sha256 {}", scan.sha256));
    text.push_str(&format!("[{}]", notes.join("; ")));
    let truncated = scan.stopped_for_budget || scan.long_lines > 0;
    let data = Output {
        path: shown,
        kind: "text".into(),
        size,
        sha256: scan.sha256,
        total_lines: Some(scan.total),
        start_line: has_window.then_some(window.offset),
        end_line: has_window.then_some(scan.shown_end),
        next_offset,
        line_endings: Some(line_endings.into()),
        missing_final_newline: scan.missing_final_newline.then_some(true),
        lossy_utf8: scan.lossy.then_some(true),
        long_lines_cut: (scan.long_lines > 0).then_some(scan.long_lines),
        mime_type: None,
        lines: scan.lines.into_vec(),
    };
    let note = if scan.stopped_for_budget { more } else { None };
    Reply { truncated, ..Reply::new(text, data) }.cut(note)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan_str(text: &str, offset: u64, limit: u64, budget: usize) -> Scan {
        scan(text.as_bytes(), &Window { offset, limit, budget }, &|| false).unwrap().unwrap()
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
        assert_eq!(s.sha256, hex(&Sha256::digest(b"a\r\nb")));
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
    fn invalid_utf8_is_lossy_and_noted() {
        let s = scan(&b"ok\n\xff\xfe bad\n"[..], &Window { offset: 1, limit: 10, budget: 10_000 }, &|| false)
            .unwrap()
            .unwrap();
        assert!(s.lossy && s.lines.text().contains('\u{fffd}'));
    }
}
