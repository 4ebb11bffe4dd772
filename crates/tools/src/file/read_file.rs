//! `read_file`: a window of numbered lines, streamed so a huge file is never held in memory
//! (`scan.rs`), the next pages of a file read before only from the nearest checkpoint
//! (`index.rs`, `pages.rs`), whether it is settled, just written or growing; images as image
//! content; other binaries refused with their type and size.

use std::io::Read;

use base64::Engine;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

mod index;
mod pages;
mod scan;

use scan::{Scan, Window};

use crate::file::human_size;
use crate::{Call, Effect, EffectKind, Image, Lean, Operation, Reply, blocking_unless_short};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::{Resolved, fs};

/// Lines shown when `limit` is not given.
const DEFAULT_LIMIT: u64 = 2000;
/// Bytes sniffed to tell text from binary.
const SNIFF_BYTES: usize = 8192;
/// Files up to this size are read on the async thread that took the call: reading one costs
/// less than handing the work to a blocking thread and back (about 20 µs a call on a 1 KB
/// file, measured), while larger files stream on a blocking thread.
const INLINE_BYTES: u64 = 16 * 1024;
/// Image types returned as MCP image content.
const IMAGE_TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The `read_file` operation.
pub(super) struct ReadFile;

/// Arguments of `read_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
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
pub(super) struct Output {
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
    const DESCRIPTION: &'static str = "Read numbered lines. `offset` (1-based) and `limit` (default 2000) pick a window; lines over 2000 characters are cut. `details: true` adds the file's sha256, which edits accept as `expected_hash`. Images (png, jpeg, gif, webp) come back as images; other binary files are refused with their type and size.";
    const KIND: EffectKind = EffectKind::Read;
    type Args = Args;
    type Output = Output;
    const LEAN: Lean = Lean {
        details: &["sha256", "size"],
        usual: &[("kind", "\"text\""), ("line_endings", "\"lf\""), ("start_line", "1")],
        shadowed: &[],
        joined: &[("lines", "text")],
        one_file_diff: false,
    };

    fn effect(args: &Args) -> Effect {
        Effect::Read(vec![args.path.clone()])
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        ToolError::check_range("offset", args.offset.map(|o| o as usize), 1, usize::MAX, "lines are numbered from 1")?;
        ToolError::check_range("limit", args.limit.map(|l| l as usize), 1, usize::MAX, "at least 1 line")?;
        let (file, context) = call.single()?;
        let (handle, meta) = open(&file)?;
        let inline = meta.len() <= INLINE_BYTES;
        let work = move || {
            read(&file, handle, &meta, &args, context.budget, context.config.max_image_bytes, &|| {
                context.signals.cancel.is_cancelled()
            })
        };
        blocking_unless_short(inline, work).await
    }
}

/// Opens a file to read (never blocking on a FIFO) and checks it is a regular file.
fn open(file: &Resolved) -> Result<(std::fs::File, std::fs::Metadata), ToolError> {
    let (handle, meta) = fs::open_read(file).map_err(|err| ToolError::io("read", file.shown(), err))?;
    if meta.is_dir() {
        return Err(ToolError::IsADirectory { path: file.shown().into() });
    }
    if !meta.is_file() {
        return Err(ToolError::BadTarget {
            path: file.shown().into(),
            problem: "is not a regular file (a FIFO, socket or device); only files are read".into(),
        });
    }
    Ok((handle, meta))
}

fn read(
    file: &Resolved,
    mut handle: std::fs::File,
    meta: &std::fs::Metadata,
    args: &Args,
    budget: usize,
    max_image: usize,
    stop: &dyn Fn() -> bool,
) -> Result<Reply<Output>, ToolError> {
    let shown = file.shown().to_string();
    let io_err = |err| ToolError::io("read", &shown, err);
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
        let sha256 = hex::encode(Sha256::digest(&bytes));
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
    let window =
        Window { offset: args.offset.unwrap_or(1).max(1), limit: args.limit.unwrap_or(DEFAULT_LIMIT).max(1), budget };
    let identity = index::Identity::of(meta);
    let scan = pages::scan_text(file.real(), handle, head, identity, &window, stop)
        .map_err(io_err)?
        .ok_or(ToolError::Cancelled)?;
    if scan.total > 0 && window.offset > scan.total {
        return Err(ToolError::OffsetPastEnd { path: shown, offset: window.offset, total: scan.total });
    }
    Ok(render(shown, size, &window, scan))
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
