//! What every write operation shares: text decoding that keeps a BOM and CRLF line endings,
//! the `expected_hash` check, unified diffs, and `commit` (undo blob, atomic write, history).

use std::borrow::Cow;
use std::path::PathBuf;

use schemars::JsonSchema;
use serde::Serialize;

use crate::session::ChangeKind;
use crate::{Context, Lines, RESERVE, Reply, split_lines};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::write::{Existing, Replace, Target};

/// Structured result of every write operation.
#[derive(Debug, Default, Serialize, JsonSchema)]
pub(super) struct WriteOutput {
    /// The path written, relative to the first root.
    pub path: String,
    /// `created`, `overwritten`, `modified`, `unchanged`, `reverted` or `removed`.
    pub action: String,
    /// Lines added by the change.
    pub lines_added: u64,
    /// Lines removed by the change.
    pub lines_removed: u64,
    /// sha256 of the file after the change; pass it as `expected_hash` to the next edit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_hash: Option<String>,
    /// Whether this was a preview: nothing was written.
    pub dry_run: bool,
    /// Replacements made (`replace_string` with `replace_all`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replacements: Option<u64>,
    /// The change as unified-diff lines (absent for a new file: its lines are the content sent).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
}

/// The lean view of every write operation's result: the diff as one text; the new hash and
/// the line counts (which the diff shows) are for programs, `modified` and one replacement
/// are the usual.
pub(super) const WRITE_LEAN: crate::Lean = crate::Lean {
    details: &["new_hash", "lines_added", "lines_removed"],
    usual: &[("action", "\"modified\""), ("replacements", "1")],
    shadowed: &[],
    joined: &[("diff", "patch")],
    one_file_diff: true,
};

/// A text file decoded for editing: UTF-8 body with CRLF folded to LF when the file uses
/// CRLF throughout, and whether it had a BOM; `encode` restores both.
#[derive(Debug)]
pub(super) struct Text {
    /// The editable body.
    pub body: String,
    bom: bool,
    crlf: bool,
}

impl Text {
    /// Decodes a file's bytes; refuses invalid UTF-8 (an edit would corrupt it).
    pub(super) fn decode(bytes: &[u8], shown: &str) -> Result<Self, ToolError> {
        let text = std::str::from_utf8(bytes).map_err(|err| {
            ToolError::EditFailed(format!(
                "`{shown}` is not valid UTF-8 (at byte {}); text edits could corrupt it. Replace it whole with `create_file` (`overwrite: true`) if that is intended",
                err.valid_up_to()
            ))
        })?;
        let (bom, text) = match text.strip_prefix('\u{feff}') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let crlf_count = text.matches("\r\n").count();
        let crlf = crlf_count > 0 && crlf_count == text.matches('\n').count();
        let body = if crlf { text.replace("\r\n", "\n") } else { text.to_string() };
        Ok(Self { body, bom, crlf })
    }

    /// Brings a string from the model to the body's line endings.
    pub(super) fn normalize<'a>(&self, s: &'a str) -> Cow<'a, str> {
        if self.crlf && s.contains('\r') { Cow::Owned(s.replace("\r\n", "\n")) } else { Cow::Borrowed(s) }
    }

    /// The file's bytes for a new body, with the original BOM and line endings.
    pub(super) fn encode(&self, body: &str) -> Vec<u8> {
        let mut out = Vec::with_capacity(body.len() + 3);
        if self.bom {
            out.extend_from_slice("\u{feff}".as_bytes());
        }
        if self.crlf {
            out.extend_from_slice(body.replace('\n', "\r\n").as_bytes());
        } else {
            out.extend_from_slice(body.as_bytes());
        }
        out
    }
}

/// sha256 of bytes, lowercase hex.
pub(super) fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

/// Fails if the caller's `expected_hash` is not the file's current sha256.
pub(super) fn check_expected(expected: Option<&str>, current: &[u8], shown: &str) -> Result<(), ToolError> {
    let Some(expected) = expected else { return Ok(()) };
    let expected = expected.trim().trim_start_matches("sha256:").to_ascii_lowercase();
    let actual = sha256_hex(current);
    if expected == actual { Ok(()) } else { Err(ToolError::StaleHash { path: shown.into(), expected, actual }) }
}

/// How long a diff may look for the smallest change before it settles for a coarser, still
/// correct one (a large file replaced by a dissimilar one would otherwise take quadratic time).
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_millis(100);

/// A unified diff as lines, with the lines added and removed.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(super) struct Diff {
    /// `---`/`+++` headers, then `@@` hunks with 3 lines of context.
    pub lines: Vec<String>,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
}

/// A diff changing more lines than this is summarised: counts and the first and last changed
/// regions (nobody reads 400,000 diff lines, and rendering them costs seconds).
const SUMMARY_OVER_LINES: u64 = 20_000;

/// Lines of each region a summary shows.
const REGION_LINES: usize = 20;

/// The unified diff from `old` (`None`: no file) to `new`: in full, or summarised when it is
/// too large or its deadline passed.
pub(super) fn diff(shown: &str, old: Option<&str>, new: &str) -> Diff {
    let before = old.unwrap_or("");
    let started = std::time::Instant::now();
    let text_diff = similar::TextDiff::configure().deadline(started + DIFF_DEADLINE).diff_lines(before, new);
    let (mut added, mut removed) = (0, 0);
    for op in text_diff.ops() {
        match op {
            similar::DiffOp::Insert { new_len, .. } => added += *new_len as u64,
            similar::DiffOp::Delete { old_len, .. } => removed += *old_len as u64,
            similar::DiffOp::Replace { old_len, new_len, .. } => {
                added += *new_len as u64;
                removed += *old_len as u64;
            }
            similar::DiffOp::Equal { .. } => {}
        }
    }
    let old_header = if old.is_some() { format!("a/{shown}") } else { "/dev/null".to_string() };
    let new_header = format!("b/{shown}");
    let mut unified = text_diff.unified_diff();
    unified.context_radius(3).header(&old_header, &new_header);
    let took_too_long = started.elapsed() >= DIFF_DEADLINE;
    if !took_too_long && added + removed <= SUMMARY_OVER_LINES {
        return Diff { lines: split_lines(&unified.to_string()), added, removed };
    }
    let why = if took_too_long { "the line-by-line diff took too long" } else { "too many to show line by line" };
    let mut lines = vec![
        format!("--- {old_header}"),
        format!("+++ {new_header}"),
        format!("@@ summary: -{removed} +{added} lines ({why}); the first and last changed regions follow @@"),
    ];
    let hunks: Vec<_> = unified.iter_hunks().collect();
    let render = |change: similar::Change<&str>| {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => '-',
            similar::ChangeTag::Insert => '+',
            similar::ChangeTag::Equal => ' ',
        };
        format!("{sign}{}", change.value().trim_end_matches(['\n', '\r']))
    };
    if let Some(first) = hunks.first() {
        lines.push(first.header().to_string());
        lines.extend(first.iter_changes().take(REGION_LINES).map(render));
    }
    if let Some(last) = hunks.last().filter(|_| hunks.len() > 1 || hunks[0].iter_changes().count() > REGION_LINES) {
        let changes: Vec<_> = last.iter_changes().collect();
        lines.push(format!("… (changed lines between the regions not shown) {}", last.header()));
        lines.extend(changes[changes.len().saturating_sub(REGION_LINES)..].iter().copied().map(render));
    }
    Diff { lines, added, removed }
}

/// Adds `diff` to `lines` while it fits; past that, one line saying how much was left out
/// and `how_to_see` it. Returns whether every line fitted.
pub(super) fn push_diff(lines: &mut Lines, diff: &[String], how_to_see: &str) -> bool {
    for (i, line) in diff.iter().enumerate() {
        if !lines.push(line.clone()) {
            lines.push_marker(format!("… {} more diff lines not shown; {how_to_see}", diff.len() - i));
            return false;
        }
    }
    true
}

/// A change ready to land.
pub(super) struct Landing<'a> {
    /// The operation making it.
    pub operation: &'static str,
    /// Where.
    pub target: Target,
    /// What is there now (`None`: nothing).
    pub before: Option<Existing>,
    /// The new bytes.
    pub bytes: Vec<u8>,
    /// May it replace an existing file (checked atomically)?
    pub replace: Replace,
    /// Only preview.
    pub dry_run: bool,
    /// Action word for the result (`created`, `modified`, …).
    pub action: &'static str,
    /// `replace_string`'s count.
    pub replacements: Option<u64>,
    /// The diff when the caller already knows it (`apply_patch`).
    pub known_diff: Option<Diff>,
    /// The call's context.
    pub context: &'a Context,
}

/// The shared road of text edits: the file must exist; `expected_hash` is checked; the body
/// (BOM and CRLF folded away) goes through `transform`, which returns the new body and an
/// optional replacement count; the result is encoded back and committed.
pub(super) fn edit_text(
    operation: &'static str,
    target: Target,
    context: &Context,
    expected_hash: Option<&str>,
    dry_run: Option<bool>,
    transform: impl FnOnce(&Text, &str) -> Result<(String, Option<u64>), ToolError>,
) -> Result<Reply<WriteOutput>, ToolError> {
    let before = target
        .read_existing(context.config.max_edit_bytes)?
        .ok_or_else(|| ToolError::NotFound { path: target.shown().into() })?;
    check_expected(expected_hash, &before.bytes, target.shown())?;
    let text = Text::decode(&before.bytes, target.shown())?;
    let (body, replacements) = transform(&text, target.shown())?;
    let bytes = text.encode(&body);
    commit(Landing {
        operation,
        target,
        before: Some(before),
        bytes,
        replace: Replace::Allowed,
        dry_run: dry_run.unwrap_or(false),
        action: "modified",
        replacements,
        known_diff: None,
        context,
    })
}

/// Previews or performs a change: keeps the old content for undo, writes atomically, records
/// it in the session's history, and answers with the diff.
pub(super) fn commit(landing: Landing<'_>) -> Result<Reply<WriteOutput>, ToolError> {
    let Landing { operation, mut target, before, bytes, replace, dry_run, action, replacements, known_diff, context } =
        landing;
    let shown = target.shown().to_string();
    let change = known_diff.unwrap_or_else(|| {
        let old_text = before.as_ref().map(|b| String::from_utf8_lossy(&b.bytes).into_owned());
        diff(&shown, old_text.as_deref(), &String::from_utf8_lossy(&bytes))
    });
    let unchanged = before.as_ref().is_some_and(|b| b.bytes == bytes);
    let action = if unchanged { "unchanged" } else { action };
    let new_hash = sha256_hex(&bytes);
    let mut shown_diff = Lines::new(context.budget.saturating_sub(RESERVE));
    if before.is_some() && !unchanged {
        push_diff(&mut shown_diff, &change.lines, &format!("see them with `changes {{path: \"{shown}\"}}`"));
    }
    let cut = shown_diff.is_full();
    let counts = format!("+{} -{}", change.added, change.removed);
    let mut data = WriteOutput {
        path: shown.clone(),
        action: action.into(),
        lines_added: change.added,
        lines_removed: change.removed,
        new_hash: Some(new_hash.clone()),
        dry_run,
        replacements,
        diff: Vec::new(),
    };
    if unchanged {
        data.lines_added = 0;
        data.lines_removed = 0;
        let text = format!("[`{shown}` unchanged: the new content equals the old; sha256 {new_hash}]");
        return Ok(Reply::new(text, data));
    }
    let text = if dry_run {
        format!("[dry run: `{shown}` would be {action} ({counts}); nothing was written]\n{}", shown_diff.text())
    } else {
        let session = &context.session;
        let kept = before.as_ref().map(|b| session.keep_before(&b.bytes, b.mode)).transpose()?;
        let mode = before.as_ref().map(|b| b.mode);
        let created_dirs: Vec<PathBuf> = target.write_atomic(&bytes, mode, replace, &session.journal)?;
        let kind = ChangeKind::Wrote { before: kept, after_sha256: new_hash.clone(), created_dirs };
        session.record(operation, target.real().to_path_buf(), shown.clone(), kind);
        format!("[`{shown}` {action} ({counts}); sha256 {new_hash}]\n{}", shown_diff.text())
    };
    data.diff = shown_diff.into_vec();
    Ok(Reply { truncated: cut, ..Reply::new(text, data) })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_round_trips_bom_and_crlf() {
        let bytes = "\u{feff}a\r\nb\r\n".as_bytes();
        let text = Text::decode(bytes, "f").unwrap();
        assert_eq!(text.body, "a\nb\n");
        assert_eq!(text.normalize("x\r\ny"), "x\ny");
        assert_eq!(text.encode(&text.body), bytes);
        assert_eq!(text.encode("a\nc\n"), "\u{feff}a\r\nc\r\n".as_bytes());
        // Mixed endings are kept byte for byte.
        let mixed = Text::decode(b"a\r\nb\n", "f").unwrap();
        assert_eq!(mixed.encode(&mixed.body), b"a\r\nb\n");
        assert!(Text::decode(b"caf\xe9", "f").unwrap_err().to_string().contains("not valid UTF-8 (at byte 3)"));
    }

    #[test]
    fn expected_hash_accepts_prefix_and_case() {
        let hash = sha256_hex(b"x");
        assert_eq!(hash, "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881", "lowercase hex");
        check_expected(Some(&format!("sha256:{}", hash.to_uppercase())), b"x", "f").unwrap();
        let err = check_expected(Some("abc"), b"x", "f").unwrap_err().to_string();
        assert!(err.contains(&format!("now {hash}")), "{err}");
    }

    #[test]
    fn diff_has_headers_and_counts() {
        let change = diff("f.txt", Some("a\nb\n"), "a\nc\n");
        assert_eq!(change.lines, ["--- a/f.txt", "+++ b/f.txt", "@@ -1,2 +1,2 @@", " a", "-b", "+c"]);
        assert_eq!((change.added, change.removed), (1, 1));
        let created = diff("n.txt", None, "x\n");
        assert_eq!(created.lines[..2], ["--- /dev/null", "+++ b/n.txt"]);
        assert_eq!(created.added, 1);
    }

    #[test]
    fn a_huge_dissimilar_diff_is_summarised_quickly() {
        let old: String = (0..200_000).map(|n| format!("old line {n}\n")).collect();
        let new: String = (0..200_000).map(|n| format!("{n} is a new line\n")).collect();
        let started = std::time::Instant::now();
        let change = diff("big.txt", Some(&old), &new);
        assert!(started.elapsed() < std::time::Duration::from_secs(3), "{:?}", started.elapsed());
        assert_eq!((change.added, change.removed), (200_000, 200_000));
        assert!(change.lines[2].starts_with("@@ summary: -200000 +200000 lines"), "{:?}", &change.lines[..3]);
        assert!(change.lines.len() < 50, "{}", change.lines.len());
        assert!(change.lines.contains(&"-old line 0".to_string()), "{:#?}", change.lines);
        assert!(change.lines.contains(&"+199999 is a new line".to_string()), "{:#?}", change.lines);
    }

    #[test]
    fn large_dissimilar_diffs_stay_fast() {
        let old: String = (0..50_000).map(|i| format!("old line {i}\n")).collect();
        let new: String = (0..150_000).map(|i| format!("new {} {i}\n", i * 7)).collect();
        let started = std::time::Instant::now();
        let change = diff("big.txt", Some(&old), &new);
        assert!(started.elapsed() < std::time::Duration::from_secs(3), "{:?}", started.elapsed());
        assert_eq!((change.added, change.removed), (150_000, 50_000));
    }

    #[test]
    fn push_diff_stops_with_a_marker() {
        let change = diff("f.txt", Some(&"a\n".repeat(500)), &"b\n".repeat(500));
        let mut lines = Lines::new(400);
        assert!(!push_diff(&mut lines, &change.lines, "see `changes`"));
        let shown = lines.into_vec();
        let last = shown.last().unwrap();
        assert!(last.starts_with("… ") && last.ends_with("more diff lines not shown; see `changes`"), "{last}");
    }
}
