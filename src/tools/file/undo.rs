//! `undo`: reverts this session's last file changes, byte for byte, refusing (unless
//! `force`) when a file was changed by someone else since.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::ToolError;
use crate::policy::Gate;
use crate::sandbox::write::{Replace, Target};
use crate::session::Change;
use crate::tools::file::edit::{diff, sha256_hex};
use crate::tools::{Call, Context, Effect, EffectKind, Operation, Reply, blocking};

/// The `undo` operation.
pub struct Undo;

/// Arguments of `undo`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// How many of the last changes to revert (default 1).
    #[schemars(range(min = 1))]
    pub steps: Option<usize>,
    /// Revert even files changed by someone else since (default false).
    pub force: Option<bool>,
}

/// Structured result of `undo`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Output {
    /// What was reverted, newest first.
    pub undone: Vec<Undone>,
    /// Changes still undoable.
    pub remaining: u64,
}

/// One reverted change.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Undone {
    /// The path, relative to the first root.
    pub path: String,
    /// The operation that had made the change.
    pub operation: String,
    /// `restored` (old content back) or `removed` (it had been created).
    pub action: String,
}

impl Operation for Undo {
    const NAME: &'static str = "undo";
    const DESCRIPTION: &'static str = "Revert this session's last `steps` file changes (default 1), byte for byte. Refuses if a file was changed by someone else since, unless `force: true`.";
    const KIND: EffectKind = EffectKind::Write { destructive: true, idempotent: false };
    type Args = Args;
    type Output = Output;

    fn effect(_args: &Args) -> Effect {
        Effect::History
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        ToolError::check_range("steps", args.steps, 1, usize::MAX, "at least 1")?;
        let context = call.context;
        blocking(move || {
            let changes = context.session.take_last(args.steps.unwrap_or(1));
            if changes.is_empty() {
                return Err(ToolError::EditFailed("nothing to undo: this session has made no file changes".into()));
            }
            match revert_all(&changes, args.force.unwrap_or(false), &context) {
                Ok(reply) => {
                    for change in &changes {
                        if let Some(before) = &change.before {
                            context.session.discard(before);
                        }
                    }
                    Ok(reply)
                }
                Err(err) => {
                    context.session.restore(changes.into_iter().rev().collect());
                    Err(err)
                }
            }
        })
        .await
    }
}

/// Checks every file first (so a refusal changes nothing), then reverts newest first.
fn revert_all(changes: &[Change], force: bool, context: &Context) -> Result<Reply<Output>, ToolError> {
    let mut seen = HashSet::new();
    let mut targets = Vec::with_capacity(changes.len());
    for change in changes {
        let target = Target::resolve(&context.roots, &change.path.to_string_lossy())?;
        Gate::check_protected(change.path.as_path(), &change.shown, context)?;
        if seen.insert(change.path.clone())
            && let Some(expected) = &change.after_sha256
            && !force
        {
            let now = target.read_existing(u64::MAX)?.map(|e| sha256_hex(&e.bytes));
            if now.as_deref() != Some(expected.as_str()) {
                let state = now.map_or("is gone".to_string(), |h| format!("now has sha256 {h}"));
                return Err(ToolError::EditFailed(format!(
                    "`{}` was changed by someone else since `{}` wrote it ({state}); undo refused and nothing was reverted. Pass `force: true` to revert it anyway",
                    change.shown, change.operation
                )));
            }
        }
        targets.push(target);
    }
    let mut text = String::new();
    let mut undone = Vec::new();
    for (change, mut target) in changes.iter().zip(targets) {
        let action = match &change.before {
            Some(before) => {
                let current = target.read_existing(u64::MAX)?;
                let current_text = current.as_ref().map(|c| String::from_utf8_lossy(&c.bytes).into_owned());
                let bytes = context.session.read_before(before)?;
                target.write_atomic(&bytes, Some(before.mode), Replace::Allowed, &context.session.journal)?;
                let (patch, _, _) = diff(&change.shown, current_text.as_deref(), &String::from_utf8_lossy(&bytes));
                text.push_str(&patch);
                "restored"
            }
            // A file the change created goes; a created directory goes with `created_dirs`.
            None if change.after_sha256.is_some() => {
                if target.read_existing(u64::MAX)?.is_some() {
                    target.remove_file()?;
                }
                "removed"
            }
            None => "removed",
        };
        for dir in change.created_dirs.iter().rev() {
            if let Ok(dir_target) = Target::resolve(&context.roots, &dir.to_string_lossy()) {
                dir_target.remove_empty_dir()?;
            }
        }
        undone.push(Undone { path: change.shown.clone(), operation: change.operation.into(), action: action.into() });
    }
    let remaining = context.session.changes().0.len() as u64;
    let list: Vec<String> = undone.iter().map(|u| format!("`{}` {} (was {})", u.path, u.action, u.operation)).collect();
    let text = format!("[undid {} change(s): {}; {remaining} more undoable]\n{text}", undone.len(), list.join(", "));
    Ok(Reply::new(text, Output { undone, remaining }))
}
