//! `changes`: what this session changed, each file's first state against its current one.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::file::edit::{diff, push_diff, sha256_hex};
use crate::session::{Change, ChangeKind};
use crate::{Call, Context, Effect, EffectKind, Lean, Lines, Operation, RESERVE, Reply, blocking};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::paths::normalize;
use toolbelt_mcp_sandbox::write::Target;

/// The `changes` operation.
pub(super) struct Changes;

/// Arguments of `changes`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
    pub path: Option<String>,
}

/// Structured result of `changes`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// Files changed, in the order first changed.
    pub changed_files: Vec<FileChange>,
    /// Old changes dropped from the undo history to keep it within its size cap.
    pub dropped: u64,
    /// The combined diff (created files included), as unified-diff lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
}

/// One file's net change.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct FileChange {
    /// The path, relative to the first root.
    pub path: String,
    /// `created`, `modified`, `deleted`, `renamed from …`, `directory created` or `directory deleted (N files)`.
    pub action: String,
    /// Lines added since the session first touched it.
    pub lines_added: u64,
    /// Lines removed since.
    pub lines_removed: u64,
    /// Changes recorded for it.
    pub changes: u64,
    /// The commands that changed it (each line and when it started), when commands did.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<String>,
}

impl Operation for Changes {
    const NAME: &'static str = "changes";
    const DESCRIPTION: &'static str =
        "This session's changes as one diff. Each file's first state against its current one.";
    const KIND: EffectKind = EffectKind::Read;
    type Args = Args;
    type Output = Output;
    const LEAN: Lean = Lean {
        details: &[],
        usual: &[("dropped", "0")],
        shadowed: &[],
        joined: &[("diff", "patch")],
        one_file_diff: false,
    };

    /// A read of the first root, whatever `path` names (a deleted file's history too): the
    /// session's records are read, nothing is written, so a read-only sandbox allows it.
    fn effect(_args: &Args) -> Effect {
        Effect::Read(vec![".".into()])
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let context = call.context;
        blocking(move || report(args.path.as_deref(), &context)).await
    }
}

fn report(only: Option<&str>, context: &Context) -> Result<Reply<Output>, ToolError> {
    let (all, dropped) = context.session.changes();
    let wanted = only.map(|p| normalize(&context.roots.first().join(p)));
    // Each path's changes, oldest first, the paths in the order of their first change (a
    // command that wrote 20,000 files is listed in one pass, not one per path).
    let mut order: Vec<&std::path::Path> = Vec::new();
    let mut by_path: std::collections::HashMap<&std::path::Path, Vec<&Change>> = std::collections::HashMap::new();
    // A sub-agent sees the changes within its own roots only (its `paths`).
    let visible = |path: &std::path::Path| context.sub_agent.is_none() || context.roots.contains(path);
    for change in &all {
        if wanted.as_ref().is_none_or(|w| *w == change.path) && visible(&change.path) {
            let history = by_path.entry(change.path.as_path()).or_default();
            if history.is_empty() {
                order.push(&change.path);
            }
            history.push(change);
        }
    }
    let mut files = Vec::new();
    let mut shown = Lines::new(context.budget.saturating_sub(RESERVE));
    for path in order {
        let history = by_path.remove(path).unwrap_or_default();
        let (Some(first), Some(last)) = (history.first(), history.last()) else { continue };
        let count = history.len() as u64;
        let mut commands: Vec<String> = Vec::new();
        for by in history.iter().filter_map(|change| change.by.as_deref()) {
            if !commands.iter().any(|seen| seen == by) {
                commands.push(by.to_string());
            }
        }
        let mut entry = FileChange {
            path: first.shown.clone(),
            action: String::new(),
            lines_added: 0,
            lines_removed: 0,
            changes: count,
            commands,
        };
        entry.action = match &last.kind {
            ChangeKind::MadeDirs(_) => "directory created".into(),
            ChangeKind::Linked { target } => format!("symlink created (to `{}`)", target.display()),
            ChangeKind::RemovedTree { files, .. } => format!("directory deleted ({} files)", files.len()),
            ChangeKind::Renamed { from_shown, .. } => format!("renamed from `{from_shown}`"),
            ChangeKind::Wrote { .. } | ChangeKind::Removed(_) => {
                let before = match &first.kind {
                    ChangeKind::Wrote { before, .. } => {
                        before.as_ref().map(|b| context.session.read_before(b)).transpose()?
                    }
                    ChangeKind::Removed(before) => Some(context.session.read_before(before)?),
                    _ => None,
                };
                let now = Target::resolve(&context.roots, &path.to_string_lossy())
                    .ok()
                    .and_then(|t| t.read_existing(u64::MAX).ok().flatten())
                    .map(|e| e.bytes);
                let action = match (&before, &now) {
                    (None, Some(_)) => "created",
                    (Some(_), None) => "deleted",
                    (None, None) => "created and deleted",
                    (Some(_), Some(_)) => "modified",
                };
                // A binary file is shown by its size and hash, not as a diff.
                let binary = |bytes: &Option<Vec<u8>>| {
                    bytes.as_ref().is_some_and(|b| b.contains(&0) || std::str::from_utf8(b).is_err())
                };
                if binary(&before) || binary(&now) {
                    let state = |bytes: &Option<Vec<u8>>| {
                        bytes.as_ref().map_or("nothing".to_string(), |b| {
                            format!("{} bytes, sha256 {}", b.len(), &sha256_hex(b)[..16])
                        })
                    };
                    entry.action = format!("{action}, binary: {} before, {} now", state(&before), state(&now));
                    files.push(entry);
                    continue;
                }
                let old = before.as_ref().map(|b| String::from_utf8_lossy(b).into_owned());
                let new = now.as_ref().map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default();
                let change = diff(&first.shown, old.as_deref(), &new);
                if !shown.is_full() {
                    let how = format!("narrow it with `changes {{path: \"{}\"}}` or read the file", first.shown);
                    push_diff(&mut shown, &change.lines, &how);
                }
                entry.lines_added = change.added;
                entry.lines_removed = change.removed;
                action.into()
            }
        };
        files.push(entry);
    }
    let mut text = match files.len() {
        0 => "[no file changes in this session]".to_string(),
        n => {
            let list: Vec<String> = files
                .iter()
                .map(|f| {
                    let by =
                        if f.commands.is_empty() { String::new() } else { format!(" by {}", f.commands.join(", ")) };
                    format!("`{}` {} (+{} -{}){by}", f.path, f.action, f.lines_added, f.lines_removed)
                })
                .collect();
            format!("[{n} path(s) changed: {}]", list.join(", "))
        }
    };
    if dropped > 0 {
        text.push_str(&format!(
            "\n[{dropped} older change(s) were dropped from the undo history to stay within its size cap]"
        ));
    }
    text.push('\n');
    text.push_str(&shown.text());
    let cut = shown.is_full();
    Ok(Reply { truncated: cut, ..Reply::new(text, Output { changed_files: files, dropped, diff: shown.into_vec() }) })
}
