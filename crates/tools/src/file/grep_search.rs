//! `grep_search`: ripgrep's engine (grep-searcher + grep-regex) over the parallel `ignore`
//! walker (a few files: the listing walk, on one thread), with deterministic, budgeted output
//! and true totals.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::file::glob::PathGlob;
use crate::{Call, Context, Effect, EffectKind, Lean, Lines, Operation, RESERVE, Reply, blocking, json_size};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::walk::{self, WalkOptions};
use toolbelt_mcp_sandbox::{Resolved, fs};

const DEFAULT_LIMIT: usize = 200;

/// Entries a search walks on its own thread before it searches with `ignore`'s parallel
/// walker instead (see [`walk::visit_parallel`]). In the `dist` build, 64 files of 2 KB took
/// 0.9 ms on one thread and 3.4 ms in parallel, 256 files 2.7 and 4.5 ms, 1,024 files 8.8 and
/// 8.4 ms; a larger walk reads up to this many entries twice.
const FEW: usize = 512;

/// Characters of a matching line shown before it is cut (minified files).
const MAX_LINE_CHARS: usize = 500;

/// The `grep_search` operation.
pub(super) struct GrepSearch;

/// What to return for the matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum OutputMode {
    /// Matching lines as `path:line:text` (context lines as `path-line-text`).
    Content,
    /// Paths of files with a match.
    Files,
    /// `path:count` of matches per file.
    Count,
}

/// Arguments of `grep_search`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// file_search: a glob (`*.rs` at any depth, `src/**/*.ts`, `{a,b}`, `!` inverts); grep_search: a regex (Rust syntax).
    pub pattern: String,
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
    pub path: Option<String>,
    /// Only files matching this glob; `!` excludes.
    pub glob: Option<String>,
    /// Ignore case.
    pub case_insensitive: Option<bool>,
    /// `pattern` is literal text.
    pub fixed_strings: Option<bool>,
    /// Matches may span lines.
    pub multiline: Option<bool>,
    /// Context lines around matches.
    pub context: Option<usize>,
    /// Context lines before matches.
    pub before: Option<usize>,
    /// Context lines after matches.
    pub after: Option<usize>,
    /// Default `content` (lines).
    #[schemars(extend("default" = "content"))]
    pub output: Option<OutputMode>,
    /// Max lines (read_file, default 2000), entries (list_dir, 1000), files (file_search, 500) or matches (grep_search, 200).
    #[schemars(range(min = 1))]
    #[schemars(extend("default" = 200))]
    pub limit: Option<usize>,
    /// Include dot-files.
    pub include_hidden: Option<bool>,
    /// Skip .gitignore'd files (default true).
    #[schemars(extend("default" = true))]
    pub respect_gitignore: Option<bool>,
}

/// Structured result of `grep_search`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// Where the search ran.
    pub path: String,
    /// Matches in all files, counted like `rg -c`: matching lines, or with `multiline` whole matches (not counted in `files` output, which stops at a file's first match).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_matches: Option<u64>,
    /// Files with at least one match.
    pub total_files: u64,
    /// Files searched (binary files are skipped).
    pub files_searched: u64,
    /// The files shown, with their match counts.
    pub file_matches: Vec<FileRow>,
    /// `content` output: the lines shown, as `path:line:text` (context lines `path-line-text`,
    /// `--` between groups), as in the text view.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
}

/// One file in the result.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct FileRow {
    /// Path relative to the first root.
    pub path: String,
    /// Matches in it (absent in `files` output).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<u64>,
}

impl Operation for GrepSearch {
    const NAME: &'static str = "grep_search";
    const DESCRIPTION: &'static str = "Search contents by regex. `output`: matching lines with paths and line numbers (`content`), file names (`files`) or counts (`count`); `glob` filters files; `context`/`before`/`after` add lines; `fixed_strings` for literal text. .gitignore-aware; binary files are skipped; totals are exact even when `limit` caps the list.";
    const KIND: EffectKind = EffectKind::Read;
    type Args = Args;
    type Output = Output;
    const LEAN: Lean = Lean {
        details: &["files_searched"],
        usual: &[("path", "\".\"")],
        shadowed: &[("file_matches", "lines")],
        joined: &[("lines", "text")],
        one_file_diff: false,
    };

    fn effect(args: &Args) -> Effect {
        Effect::Read(vec![args.path.clone().unwrap_or_default()])
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let (target, context) = call.single()?;
        blocking(move || grep(&target, &args, &context)).await
    }
}

/// One line kept for display.
struct Line {
    number: u64,
    is_match: bool,
    /// Matches starting on this line (a `multiline` match spans lines but is counted once).
    starts: u64,
    text: String,
}

/// What one file produced.
struct FileHits {
    count: u64,
    lines: Vec<Line>,
}

/// The sink for one file: counts matches, keeps the lines of up to `keep` of them with context.
struct Collect<'a> {
    matcher: &'a RegexMatcher,
    multiline: bool,
    mode: OutputMode,
    keep: usize,
    hits: &'a mut FileHits,
    kept_matches: usize,
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        // In multiline mode the searcher hands over adjacent matches as one block; count (and
        // place) each match in it, as `rg -c` does. Otherwise each block is one matching line.
        if !self.multiline && self.mode != OutputMode::Content {
            self.hits.count += 1;
            return Ok(self.mode != OutputMode::Files);
        }
        let starts = if self.multiline { match_starts(self.matcher, mat.bytes())? } else { vec![0] };
        self.hits.count += starts.len().max(1) as u64;
        if self.mode == OutputMode::Files {
            return Ok(false);
        }
        if self.mode == OutputMode::Content && self.kept_matches < self.keep {
            self.kept_matches += starts.len().max(1);
            let first = mat.line_number().unwrap_or(0);
            let mut offset = 0;
            for (i, line) in mat.lines().enumerate() {
                let end = offset + line.len();
                let here = starts
                    .iter()
                    .filter(|&&s| s >= offset && s < end)
                    .count()
                    .max(usize::from(i == 0 && starts.is_empty()));
                self.hits.lines.push(Line {
                    number: first + i as u64,
                    is_match: true,
                    starts: here as u64,
                    text: shorten(line),
                });
                offset = end;
            }
        }
        Ok(true)
    }

    fn context(&mut self, _: &Searcher, ctx: &SinkContext<'_>) -> Result<bool, Self::Error> {
        if self.mode == OutputMode::Content && self.kept_matches < self.keep {
            self.hits.lines.push(Line {
                number: ctx.line_number().unwrap_or(0),
                is_match: false,
                starts: 0,
                text: shorten(ctx.bytes()),
            });
        }
        Ok(true)
    }
}

/// Byte offsets where matches start inside a multiline block.
fn match_starts(matcher: &RegexMatcher, block: &[u8]) -> Result<Vec<usize>, std::io::Error> {
    use grep_matcher::Matcher;
    let mut starts = Vec::new();
    matcher
        .find_iter(block, |m| {
            starts.push(m.start());
            true
        })
        .map_err(|err| std::io::Error::other(err.to_string()))?;
    Ok(starts)
}

/// The line without its terminator, cut at 500 characters.
fn shorten(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_end_matches(['\n', '\r']);
    match text.char_indices().nth(MAX_LINE_CHARS) {
        Some((cut, _)) => format!("{}… [+{} bytes]", &text[..cut], text.len() - cut),
        None => text.to_string(),
    }
}

fn matcher(args: &Args) -> Result<RegexMatcher, ToolError> {
    let mut builder = RegexMatcherBuilder::new();
    builder
        .case_insensitive(args.case_insensitive.unwrap_or(false))
        .fixed_strings(args.fixed_strings.unwrap_or(false))
        .multi_line(true);
    if args.multiline.unwrap_or(false) {
        builder.dot_matches_new_line(true);
    } else {
        builder.line_terminator(Some(b'\n'));
    }
    builder.build(&args.pattern).map_err(|err| {
        let mut message = err.to_string();
        if message.contains("\"\\n\" is not allowed") {
            message.push_str("; to match across lines set `multiline: true`");
        }
        ToolError::InvalidRegex { pattern: args.pattern.clone(), message }
    })
}

fn searcher(args: &Args) -> Searcher {
    let context = args.context.unwrap_or(0);
    SearcherBuilder::new()
        // Only shown lines need their numbers: counting every line of every file searched is
        // a tenth of a search of the kernel's tree (`rg -c` counts none either).
        .line_number(args.output.unwrap_or(OutputMode::Content) == OutputMode::Content)
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .multi_line(args.multiline.unwrap_or(false))
        .before_context(args.before.unwrap_or(context))
        .after_context(args.after.unwrap_or(context))
        .build()
}

/// Results kept across threads: the files with the smallest paths whose matches fill `limit`.
struct Kept {
    files: BTreeMap<String, FileHits>,
    rows: usize,
}

fn grep(target: &Resolved, args: &Args, context: &Context) -> Result<Reply<Output>, ToolError> {
    let (roots, budget) = (&*context.roots, context.budget);
    let stop = || context.signals.cancel.is_cancelled();
    ToolError::check_range("limit", args.limit, 1, usize::MAX, "at least 1")?;
    let matcher = matcher(args)?;
    let glob = args.glob.as_deref().map(PathGlob::new).transpose()?;
    let mode = args.output.unwrap_or(OutputMode::Content);
    let multiline = args.multiline.unwrap_or(false);
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let options = WalkOptions::new(args.include_hidden, args.respect_gitignore, None)
        .hiding(toolbelt_mcp_policy::hidden_paths(&context.config));
    let held = fs::walk_root(target).map_err(|e| ToolError::io("search", target.shown(), e))?;
    let base = if held.symlink_metadata(target.real()).map_err(|e| ToolError::io("search", target.shown(), e))?.is_dir()
    {
        target.real().to_path_buf()
    } else {
        target.real().parent().map(|p| p.to_path_buf()).unwrap_or_default()
    };
    let kept = Mutex::new(Kept { files: BTreeMap::new(), rows: 0 });
    let (total_matches, total_files, searched) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let (_, _errors) = walk::visit_parallel(
        target,
        &held,
        options,
        FEW,
        &stop,
        || searcher(args),
        |entry, searcher: &mut Searcher| {
            if !entry.is_file {
                return;
            }
            if let (Some(glob), Ok(relative)) = (&glob, entry.path.strip_prefix(&base))
                && entry.depth > 0
                && !glob.is_match(relative)
            {
                return;
            }
            let Ok(file) = held.open_file(entry.path) else {
                return;
            };
            searched.fetch_add(1, Ordering::Relaxed);
            let mut hits = FileHits { count: 0, lines: Vec::new() };
            let mut sink =
                Collect { matcher: &matcher, multiline, mode, keep: limit, hits: &mut hits, kept_matches: 0 };
            if searcher.search_file(&matcher, &file, &mut sink).is_err() || hits.count == 0 {
                return;
            }
            total_matches.fetch_add(hits.count, Ordering::Relaxed);
            total_files.fetch_add(1, Ordering::Relaxed);
            if let Ok(mut kept) = kept.lock() {
                keep(&mut kept, roots.show(entry.path), hits, limit);
            }
        },
    )?;
    let kept = kept.into_inner().map_err(|_| ToolError::Internal("a search thread panicked".into()))?;
    let totals = Totals {
        matches: total_matches.into_inner(),
        files: total_files.into_inner(),
        searched: searched.into_inner(),
    };
    Ok(render(target.shown(), args, mode, limit, budget, kept, totals))
}

/// Adds a file's hits, then drops the largest paths no longer needed to fill `limit` rows.
fn keep(kept: &mut Kept, path: String, hits: FileHits, limit: usize) {
    kept.rows += row_count(&hits, limit);
    kept.files.insert(path, hits);
    while let Some((_, last)) = kept.files.last_key_value() {
        let last_rows = row_count(last, limit);
        if kept.rows - last_rows < limit {
            break;
        }
        kept.rows -= last_rows;
        kept.files.pop_last();
    }
}

/// Rows a file fills: its matches (content output, at most `limit`), else one.
fn row_count(hits: &FileHits, limit: usize) -> usize {
    if hits.lines.is_empty() { 1 } else { (hits.count as usize).min(limit) }
}

struct Totals {
    matches: u64,
    files: u64,
    searched: u64,
}

fn render(
    shown: &str,
    args: &Args,
    mode: OutputMode,
    limit: usize,
    budget: usize,
    kept: Kept,
    totals: Totals,
) -> Reply<Output> {
    let mut lines = Lines::new(budget.saturating_sub(RESERVE));
    let mut rows = Vec::new();
    let mut shown_rows = 0usize;
    'files: for (path, hits) in &kept.files {
        if shown_rows >= limit {
            break;
        }
        let row = FileRow { path: path.clone(), matches: (mode != OutputMode::Files).then_some(hits.count) };
        match mode {
            OutputMode::Files | OutputMode::Count => {
                let line = if mode == OutputMode::Files { path.clone() } else { format!("{path}:{}", hits.count) };
                if !lines.push_costed(line, json_size(&row) + 1) {
                    break;
                }
                shown_rows += 1;
            }
            OutputMode::Content => {
                // Both the lines and the per-file rows reach the structured view.
                if !lines.charge(json_size(&row) + 1) {
                    break;
                }
                let mut previous: Option<u64> = None;
                let first = lines.count();
                for line in &hits.lines {
                    if line.starts > 0 && shown_rows >= limit {
                        break;
                    }
                    if previous.is_some_and(|p| line.number > p + 1) && !lines.push("--".into()) {
                        break;
                    }
                    let sep = if line.is_match { ':' } else { '-' };
                    if !lines.push(format!("{path}{sep}{}{sep}{}", line.number, line.text)) {
                        break;
                    }
                    shown_rows += line.starts as usize;
                    previous = Some(line.number);
                }
                if lines.count() == first {
                    break 'files;
                }
            }
        }
        rows.push(row);
        if lines.is_full() {
            break;
        }
    }
    let shown_total = match mode {
        OutputMode::Content => totals.matches,
        _ => totals.files,
    };
    let truncated = lines.is_full() || (shown_rows as u64) < shown_total;
    let what = if args.fixed_strings.unwrap_or(false) { "string" } else { "regex" };
    let matches = if args.multiline.unwrap_or(false) { "matches" } else { "matching lines" };
    let mut summary = match mode {
        OutputMode::Files => format!(
            "[{} files match {what} `{}` under `{shown}` ({} files searched)",
            totals.files, args.pattern, totals.searched
        ),
        _ => format!(
            "[{} {matches} in {} files for {what} `{}` under `{shown}` ({} files searched)",
            totals.matches, totals.files, args.pattern, totals.searched
        ),
    };
    let note = truncated.then(|| {
        let unit = if mode == OutputMode::Content { matches } else { "files" };
        format!("showing {shown_rows} {unit}: narrow `path` or `glob`, use `output: \"files\"`, or raise `limit`")
    });
    if let Some(note) = &note {
        summary.push_str(&format!("; {note}"));
    }
    summary.push(']');
    let mut text = lines.text();
    text.push_str(&summary);
    let data = Output {
        path: shown.into(),
        total_matches: (mode != OutputMode::Files).then_some(totals.matches),
        total_files: totals.files,
        files_searched: totals.searched,
        file_matches: rows,
        lines: if mode == OutputMode::Content { lines.into_vec() } else { Vec::new() },
    };
    Reply::new(text, data).cut(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hits(count: u64) -> FileHits {
        FileHits {
            count,
            lines: (0..count).map(|n| Line { number: n + 1, is_match: true, starts: 1, text: String::new() }).collect(),
        }
    }

    #[test]
    fn keep_retains_smallest_paths_filling_the_limit() {
        let mut kept = Kept { files: BTreeMap::new(), rows: 0 };
        for (path, n) in [("d", 3), ("b", 2), ("a", 1), ("c", 5)] {
            keep(&mut kept, path.into(), hits(n), 4);
        }
        let paths: Vec<&str> = kept.files.keys().map(String::as_str).collect();
        assert_eq!(paths, ["a", "b", "c"], "a+b = 3 rows < 4, so c is still needed");
        assert_eq!(kept.rows, 1 + 2 + 4, "c fills at most `limit` rows");
    }

    #[test]
    fn shorten_cuts_long_lines() {
        let long = "y".repeat(MAX_LINE_CHARS + 10);
        assert_eq!(shorten(format!("{long}\r\n").as_bytes()), format!("{}… [+10 bytes]", "y".repeat(MAX_LINE_CHARS)));
        assert_eq!(shorten(b"short\n"), "short");
    }
}
