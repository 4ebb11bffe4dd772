//! `undo`: reverts this session's last writing calls, byte for byte, refusing (unless
//! `force`) when a path was changed by someone else since.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::file::edit::sha256_hex;
use crate::session::{Before, Change, ChangeKind};
use crate::{Call, Context, Effect, EffectKind, Operation, Reply, blocking};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_policy::Gate;
use toolbelt_mcp_sandbox::write::{Kind, Replace, Target};

/// The `undo` operation.
pub(super) struct Undo;

/// Arguments of `undo`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Calls to revert (default 1).
    #[schemars(range(min = 1))]
    #[schemars(extend("default" = 1))]
    pub steps: Option<usize>,
    /// Even paths others changed since.
    pub force: Option<bool>,
}

/// Structured result of `undo`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// What was reverted, newest first.
    pub undone: Vec<Undone>,
    /// Changes still undoable.
    pub remaining: u64,
}

/// One reverted change.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Undone {
    /// The path, relative to the first root.
    pub path: String,
    /// The operation that had made the change.
    pub operation: String,
    /// `restored`, `removed` (it had been created) or `renamed back`.
    pub action: String,
}

impl Operation for Undo {
    const NAME: &'static str = "undo";
    const DESCRIPTION: &'static str = "Revert this session's last writes. `steps` calls (default 1), byte for byte; refuses, reverting nothing, if a path was changed by someone else since, unless `force: true`.";
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
                    context.session.discard(&changes);
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

fn target(context: &Context, path: &std::path::Path) -> Result<Target, ToolError> {
    Ok(Target::resolve(&context.roots, &path.to_string_lossy())?)
}

/// The entry at `path`, which may be a symlink (never followed).
fn entry(context: &Context, path: &std::path::Path) -> Result<Target, ToolError> {
    Ok(Target::resolve_entry(&context.roots, &path.to_string_lossy())?)
}

/// Checks every change against the disk first (so a refusal changes nothing), then reverts
/// newest first. A change whose path lies at or under a path a newer change of the same batch
/// touches is not checked: reverting that newer change decides its state.
fn revert_all(changes: &[Change], force: bool, context: &Context) -> Result<Reply<Output>, ToolError> {
    let mut touched: HashSet<&std::path::Path> = HashSet::new();
    // The files checked stay locked until they are written back: no edit of another process
    // can land between the check and the revert (and be overwritten by it).
    let mut checked: Vec<Option<Target>> = Vec::with_capacity(changes.len());
    for change in changes {
        if !context.roots.contains(&change.path) {
            return Err(ToolError::EditFailed(format!(
                "`{}` lies outside this session's roots (a sub-agent's are its `paths`), so its change is not this agent's to revert; nothing was reverted. Undo that step from the agent that started this one",
                change.shown
            )));
        }
        Gate::check_protected(&change.path, &change.shown, &context.caller())?;
        if let ChangeKind::RemovedTree { dirs, files, links } = &change.kind {
            // Each path the tree puts back is judged as a write now (the place may have become
            // a git dir since), and it is never merged into what stands there again.
            let paths = dirs.iter().chain(files.iter().map(|(path, _)| path)).chain(links.iter().map(|(path, _)| path));
            for path in paths {
                Gate::check_protected(path, &change.shown, &context.caller())?;
            }
            for (path, link) in links {
                Gate::check_link(path, link, &change.shown, &context.caller())?;
            }
            if force && target(context, &change.path)?.kind().is_some() {
                return Err(ToolError::EditFailed(format!(
                    "`{}` exists again, and a deleted directory is never put back into what stands there now (it could have become a git dir, whose files would then run); nothing was reverted. Move or remove `{}` first, then undo",
                    change.shown, change.shown
                )));
            }
        }
        let decided = change.path.ancestors().any(|a| touched.contains(a));
        checked.push(if !decided && !force { check_unchanged(change, context)? } else { None });
        touched.insert(&change.path);
        if let ChangeKind::Renamed { from, .. } = &change.kind {
            touched.insert(from);
        }
    }
    let mut undone = Vec::new();
    for (change, held) in changes.iter().zip(checked) {
        let action = revert_checked(change, context, held)?;
        undone.push(Undone { path: change.shown.clone(), operation: change.operation.into(), action: action.into() });
    }
    let remaining = context.session.changes().0.len() as u64;
    let list: Vec<String> = undone.iter().map(|u| format!("`{}` {} (was {})", u.path, u.action, u.operation)).collect();
    let text = format!("[undid {} change(s): {}; {remaining} more undoable]", undone.len(), list.join(", "));
    Ok(Reply::new(text, Output { undone, remaining }))
}

/// Refuses when the path is no longer as the change left it. A file written is returned
/// locked (as read), for the revert to write back.
fn check_unchanged(change: &Change, context: &Context) -> Result<Option<Target>, ToolError> {
    let now = match change.kind {
        ChangeKind::Linked { .. } => entry(context, &change.path)?,
        _ => target(context, &change.path)?,
    };
    let problem = match &change.kind {
        ChangeKind::Wrote { after_sha256, .. } => match now.read_existing(u64::MAX) {
            Ok(Some(existing)) if &sha256_hex(&existing.bytes) == after_sha256 => return Ok(Some(now)),
            Ok(Some(existing)) => Some(format!("now has sha256 {}", sha256_hex(&existing.bytes))),
            Ok(None) => Some("is gone".into()),
            Err(err) => Some(err.to_string()),
        },
        ChangeKind::Removed(_) | ChangeKind::RemovedTree { .. } => now.kind().map(|_| "exists again".into()),
        ChangeKind::Renamed { from, .. } => match (now.kind(), target(context, from)?.kind()) {
            (Some(_), None) => None,
            (None, _) => Some("is gone".into()),
            (Some(_), Some(_)) => Some("has something at its old path again".into()),
        },
        ChangeKind::MadeDirs(_) => None,
        ChangeKind::Linked { target: made } => match now.link_target() {
            Some(points) if points == *made => None,
            Some(points) => Some(format!("points at `{}` now", points.display())),
            None => Some("is no longer the symlink it made".into()),
        },
    };
    match problem {
        None => Ok(None),
        Some(state) => Err(ToolError::EditFailed(format!(
            "`{}` was changed by someone else since `{}` ({state}); undo refused and nothing was reverted. Pass `force: true` to revert it anyway",
            change.shown, change.operation
        ))),
    }
}

/// Reverts one change (also used by `apply_patch` to roll back a half-applied patch).
pub(super) fn revert(change: &Change, context: &Context) -> Result<&'static str, ToolError> {
    revert_checked(change, context, None)
}

/// Reverts one change; `held` is its file as the check read and locked it, if it was checked.
fn revert_checked(change: &Change, context: &Context, held: Option<Target>) -> Result<&'static str, ToolError> {
    let session = &context.session;
    let write_back = |path: &std::path::Path, before: &Before| -> Result<(), ToolError> {
        let bytes = session.read_before(before)?;
        target(context, path)?.write_atomic(&bytes, Some(before.mode), Replace::Allowed, &session.journal)?;
        Ok(())
    };
    let action = match &change.kind {
        ChangeKind::Wrote { before: Some(before), created_dirs, .. } => {
            // Unchecked (`force`): locked here all the same, so a concurrent edit is not
            // torn by it.
            let mut file = match held {
                Some(file) => file,
                None => {
                    let file = target(context, &change.path)?;
                    file.read_existing(u64::MAX)?;
                    file
                }
            };
            let bytes = session.read_before(before)?;
            file.write_atomic(&bytes, Some(before.mode), Replace::Allowed, &session.journal)?;
            remove_dirs(created_dirs, context)?;
            "restored"
        }
        ChangeKind::Wrote { before: None, created_dirs, .. } => {
            let now = target(context, &change.path)?;
            if now.kind() == Some(Kind::File) {
                now.remove_file()?;
            }
            remove_dirs(created_dirs, context)?;
            "removed"
        }
        ChangeKind::MadeDirs(dirs) => {
            remove_dirs(dirs, context)?;
            "removed"
        }
        ChangeKind::Linked { .. } => {
            let now = entry(context, &change.path)?;
            if now.link_target().is_some() {
                now.remove_file()?;
            }
            "removed"
        }
        ChangeKind::Removed(before) => {
            write_back(&change.path, before)?;
            "restored"
        }
        ChangeKind::RemovedTree { dirs, files, links } => {
            for dir in dirs {
                target(context, dir)?.create_dir()?;
            }
            for (path, before) in files {
                write_back(path, before)?;
            }
            for (path, link) in links {
                target(context, path)?.symlink(link)?;
            }
            "restored"
        }
        ChangeKind::Renamed { from, replaced, created_dirs, .. } => {
            let mut old = target(context, from)?;
            target(context, &change.path)?.rename_to(&mut old, Replace::Never)?;
            if let Some(before) = replaced {
                write_back(&change.path, before)?;
            }
            remove_dirs(created_dirs, context)?;
            "renamed back"
        }
    };
    Ok(action)
}

/// Removes directories a change created, innermost first, where they are empty.
fn remove_dirs(dirs: &[std::path::PathBuf], context: &Context) -> Result<(), ToolError> {
    for dir in dirs.iter().rev() {
        if let Ok(dir_target) = target(context, dir) {
            dir_target.remove_empty_dir()?;
        }
    }
    Ok(())
}
