//! `apply_patch`: a unified diff or a `*** Begin Patch` envelope over one or more files, all
//! files or none.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::file::edit::{self, Diff, Landing, Text, diff, push_diff};
use crate::file::patch::{self, FilePatch};
use crate::session::ChangeKind;
use crate::{Call, Context, Effect, EffectKind, Lean, Lines, Operation, RESERVE, Reply, blocking, split_lines};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::write::{Existing, Kind, Replace, Target};

/// The `apply_patch` operation.
pub(super) struct ApplyPatch;

/// Arguments of `apply_patch`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// A unified diff (several files; `/dev/null` for new or deleted ones; renames) or a `*** Begin Patch` envelope.
    pub patch: String,
    /// Only preview; change nothing.
    pub dry_run: Option<bool>,
}

/// Structured result of `apply_patch`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// Each file the patch touched, in patch order.
    pub patched_files: Vec<Patched>,
    /// Whether this was a preview: nothing was written.
    pub dry_run: bool,
    /// The changes to files that existed, as unified-diff lines.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<String>,
}

/// One file of the patch.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Patched {
    /// The path, relative to the first root (the new path when moved).
    pub path: String,
    /// `created`, `modified`, `deleted` or `moved`.
    pub action: String,
    /// Lines added.
    pub lines_added: u64,
    /// Lines removed.
    pub lines_removed: u64,
}

/// Paths a patch touches, in the order the gate resolves them (a move adds its destination).
fn paths(files: &[FilePatch]) -> Vec<String> {
    let mut out = Vec::new();
    for file in files {
        out.push(file.path().to_string());
        if let FilePatch::Update { move_to: Some(to), .. } = file {
            out.push(to.clone());
        }
    }
    out
}

impl Operation for ApplyPatch {
    const NAME: &'static str = "apply_patch";
    const DESCRIPTION: &'static str = "Apply a unified diff or `*** Begin Patch`, all or none. Context must match exactly but may sit at other line numbers; on a failed hunk nothing changes and the error names the file, hunk and nearest near-match.";
    const KIND: EffectKind = EffectKind::Write { destructive: true, idempotent: false };
    type Args = Args;
    type Output = Output;
    const LEAN: Lean =
        Lean { details: &[], usual: &[], shadowed: &[], joined: &[("diff", "patch")], one_file_diff: false };

    fn effect(args: &Args) -> Effect {
        Effect::Write(patch::parse(&args.patch).map(|files| paths(&files)).unwrap_or_default())
    }

    /// The patch, unless it moves a file: what lands at a move's destination is the source's
    /// whole content, which the patch does not show (the gate then refuses a move onto a
    /// protected path instead of asking).
    fn written(args: &Args) -> Option<String> {
        let files = patch::parse(&args.patch).unwrap_or_default();
        let moves = files.iter().any(|file| matches!(file, FilePatch::Update { move_to: Some(_), .. }));
        (!moves).then(|| args.patch.clone())
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let files = patch::parse(&args.patch).map_err(|why| ToolError::EditFailed(format!("invalid patch: {why}")))?;
        let context = call.context;
        let targets = call.targets;
        blocking(move || {
            let plans = plan(&files, targets, &context)?;
            let dry_run = args.dry_run.unwrap_or(false);
            let mut shown = Lines::new(context.budget.saturating_sub(RESERVE));
            if dry_run {
                let mut rows = Vec::new();
                for plan in &plans {
                    let (change, row) = preview(plan);
                    add_diff(&mut shown, &change, &row);
                    rows.push(row);
                }
                let text = format!(
                    "[dry run: the patch applies to {} file(s); nothing was written]\n{}",
                    plans.len(),
                    shown.text()
                );
                let cut = shown.is_full();
                let data = Output { patched_files: rows, dry_run, diff: shown.into_vec() };
                return Ok(Reply { truncated: cut, ..Reply::new(text, data) });
            }
            land_all(plans, shown, &context)
        })
        .await
    }
}

/// One file's change, checked and computed, ready to land.
enum Plan {
    Write { target: Target, before: Option<Existing>, bytes: Vec<u8>, action: &'static str, known_diff: Option<Diff> },
    Delete { target: Target, before: Existing },
}

/// Computes every file's new content; any problem fails the whole patch before a write.
fn plan(files: &[FilePatch], targets: Vec<Target>, context: &Context) -> Result<Vec<Plan>, ToolError> {
    let limit = context.config.max_edit_bytes;
    // Each file once: a second section would edit the original again and undo the first
    // (and wait on the edit lock the first holds).
    let mut seen = std::collections::HashSet::new();
    for target in &targets {
        if !seen.insert(target.real().to_path_buf()) {
            return Err(ToolError::EditFailed(format!(
                "`{}` appears more than once in the patch; put all of its hunks in one section. No file was changed",
                target.shown()
            )));
        }
    }
    let mut targets = targets.into_iter();
    let mut next =
        || targets.next().ok_or_else(|| ToolError::Internal("the gate returned fewer targets than paths".into()));
    let mut plans = Vec::new();
    for file in files {
        match file {
            FilePatch::Add { content, .. } => {
                let target = next()?;
                if target.kind().is_some() {
                    return Err(ToolError::AlreadyExists {
                        path: target.shown().into(),
                        what: "the patch adds it as a new file",
                    });
                }
                plans.push(Plan::Write {
                    target,
                    before: None,
                    bytes: content.clone().into_bytes(),
                    action: "created",
                    known_diff: None,
                });
            }
            FilePatch::Delete { .. } => {
                let target = next()?;
                let before =
                    target.read_existing(limit)?.ok_or_else(|| ToolError::NotFound { path: target.shown().into() })?;
                plans.push(Plan::Delete { target, before });
            }
            FilePatch::Update { hunks, move_to, .. } => {
                let source = next()?;
                let before =
                    source.read_existing(limit)?.ok_or_else(|| ToolError::NotFound { path: source.shown().into() })?;
                let text = Text::decode(&before.bytes, source.shown())?;
                let applied = patch::apply(&text.body, hunks).map_err(|why| {
                    ToolError::EditFailed(format!("`{}`: {why}; no file was changed", source.shown()))
                })?;
                let bytes = text.encode(&applied.body);
                if move_to.is_some() {
                    let destination = next()?;
                    if destination.kind().is_some() {
                        return Err(ToolError::AlreadyExists {
                            path: destination.shown().into(),
                            what: "the patch moves a file there",
                        });
                    }
                    plans.push(Plan::Write {
                        target: destination,
                        before: None,
                        bytes,
                        action: "moved",
                        known_diff: None,
                    });
                    plans.push(Plan::Delete { target: source, before });
                } else {
                    let shown = source.shown();
                    let mut lines = vec![format!("--- a/{shown}"), format!("+++ b/{shown}")];
                    lines.extend(split_lines(&applied.diff));
                    let known_diff = Some(Diff { lines, added: applied.added, removed: applied.removed });
                    plans.push(Plan::Write {
                        target: source,
                        before: Some(before),
                        bytes,
                        action: "modified",
                        known_diff,
                    });
                }
            }
        }
    }
    Ok(plans)
}

/// A planned change's diff and result row.
fn preview(plan: &Plan) -> (Diff, Patched) {
    match plan {
        Plan::Write { target, known_diff: Some(change), action, .. } => {
            (change.clone(), row(target.shown(), action, change))
        }
        Plan::Write { target, before, bytes, action, known_diff: None } => {
            describe(target.shown(), before.as_ref().map(|b| b.bytes.as_slice()), bytes, action)
        }
        Plan::Delete { target, before } => describe(target.shown(), Some(&before.bytes), b"", "deleted"),
    }
}

fn row(shown: &str, action: &str, change: &Diff) -> Patched {
    Patched { path: shown.into(), action: action.into(), lines_added: change.added, lines_removed: change.removed }
}

/// The diff and the result row of one file's change.
fn describe(shown: &str, old: Option<&[u8]>, new: &[u8], action: &str) -> (Diff, Patched) {
    let old = old.map(|b| String::from_utf8_lossy(b).into_owned());
    let change = diff(shown, old.as_deref(), &String::from_utf8_lossy(new));
    let row = row(shown, action, &change);
    (change, row)
}

/// Adds a modified file's diff to the result (a created, moved or deleted file is its
/// counts alone: its lines are the patch's own, or gone).
fn add_diff(shown: &mut Lines, change: &Diff, row: &Patched) {
    if row.action == "modified" && !shown.is_full() {
        push_diff(shown, &change.lines, &format!("see them with `changes {{path: \"{}\"}}`", row.path));
    }
}

/// Lands the plans in order; if one fails, reverts what this call already changed.
fn land_all(plans: Vec<Plan>, mut shown: Lines, context: &Context) -> Result<Reply<Output>, ToolError> {
    let mut rows = Vec::new();
    for plan in plans {
        let landed = match plan {
            Plan::Write { target, before, bytes, action, known_diff } => {
                let replace = if before.is_some() { Replace::Allowed } else { Replace::Never };
                let path = target.shown().to_string();
                let landing = Landing {
                    operation: ApplyPatch::NAME,
                    target,
                    before,
                    bytes,
                    replace,
                    dry_run: false,
                    action,
                    replacements: None,
                    known_diff,
                    context,
                };
                edit::commit(landing)
                    .map(|reply| {
                        let data = reply.data;
                        let change = Diff { lines: data.diff, added: data.lines_added, removed: data.lines_removed };
                        let row = row(&data.path, action, &change);
                        (change, row)
                    })
                    .map_err(|err| (path, err))
            }
            Plan::Delete { target, before } => {
                let (change, row) = describe(target.shown(), Some(&before.bytes), b"", "deleted");
                delete(&target, &before, context)
                    .map(|()| (change, row))
                    .map_err(|err| (target.shown().to_string(), err))
            }
        };
        match landed {
            Ok((change, row)) => {
                add_diff(&mut shown, &change, &row);
                rows.push(row);
            }
            Err((path, err)) => {
                let applied = context.session.take_last(1);
                for change in &applied {
                    let _ = super::undo::revert(change, context);
                }
                context.session.discard(&applied);
                return Err(ToolError::EditFailed(format!(
                    "the patch failed at `{path}` ({err}); the files it had already changed were restored"
                )));
            }
        }
    }
    let summary: Vec<String> =
        rows.iter().map(|r| format!("`{}` {} (+{} -{})", r.path, r.action, r.lines_added, r.lines_removed)).collect();
    let text = format!("[patch applied: {}]\n{}", summary.join(", "), shown.text());
    let cut = shown.is_full();
    let data = Output { patched_files: rows, dry_run: false, diff: shown.into_vec() };
    Ok(Reply { truncated: cut, ..Reply::new(text, data) })
}

fn delete(target: &Target, before: &Existing, context: &Context) -> Result<(), ToolError> {
    if target.kind() != Some(Kind::File) {
        return Err(ToolError::NotFound { path: target.shown().into() });
    }
    let kept = context.session.keep_before(&before.bytes, before.mode)?;
    target.remove_file()?;
    context.session.record(
        ApplyPatch::NAME,
        target.real().to_path_buf(),
        target.shown().into(),
        ChangeKind::Removed(kept),
    );
    Ok(())
}
