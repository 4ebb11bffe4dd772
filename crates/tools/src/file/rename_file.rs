//! `rename_file`: moves a file or directory inside the roots, never silently replacing.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::ChangeKind;
use crate::{Call, Effect, EffectKind, Operation, Reply, blocking};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::write::{Kind, Replace};

/// The `rename_file` operation.
pub(super) struct RenameFile;

/// Arguments of `rename_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
    pub path: String,
    /// The new path.
    pub destination: String,
    /// Replace an existing file.
    pub overwrite: Option<bool>,
    /// Create missing parents (default true).
    #[schemars(extend("default" = true))]
    pub create_parents: Option<bool>,
    /// Only preview; change nothing.
    pub dry_run: Option<bool>,
}

/// Structured result of `rename_file`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The new path, relative to the first root.
    pub path: String,
    /// The old path.
    pub from: String,
    /// Whether a file at the destination was replaced (kept for `undo`).
    pub replaced: bool,
    /// Whether this was a preview: nothing was moved.
    pub dry_run: bool,
}

impl Operation for RenameFile {
    const NAME: &'static str = "rename_file";
    const DESCRIPTION: &'static str = "Move or rename. Refuses to replace an existing file unless `overwrite: true` (the replaced file is kept for `undo`); parents are created.";
    const KIND: EffectKind = EffectKind::Write { destructive: true, idempotent: false };
    type Args = Args;
    type Output = Output;

    fn effect(args: &Args) -> Effect {
        Effect::Write(vec![args.path.clone(), args.destination.clone()])
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let context = call.context;
        let mut targets = call.targets.into_iter();
        let (Some(source), Some(mut destination)) = (targets.next(), targets.next()) else {
            return Err(ToolError::Internal("the gate returned no targets".into()));
        };
        blocking(move || {
            let (from, to) = (source.shown().to_string(), destination.shown().to_string());
            let moving = source.kind().ok_or_else(|| ToolError::NotFound { path: from.clone() })?;
            if source.real() == destination.real() {
                return Err(ToolError::BadTarget { path: to, problem: "is the same path as `path`".into() });
            }
            if moving == Kind::Dir && destination.real().starts_with(source.real()) {
                return Err(ToolError::BadTarget {
                    path: to,
                    problem: format!("is inside `{from}`, the directory being moved"),
                });
            }
            let overwrite = args.overwrite.unwrap_or(false);
            let replaced = match destination.kind() {
                None => None,
                Some(Kind::File) if overwrite && moving != Kind::Dir => {
                    destination.read_existing(context.config.max_undo_bytes)?
                }
                Some(Kind::Dir) => {
                    return Err(ToolError::AlreadyExists {
                        path: to,
                        what: "a directory: give the full new path, including the name",
                    });
                }
                Some(_) => return Err(ToolError::AlreadyExists { path: to, what: "a file" }),
            };
            if !args.create_parents.unwrap_or(true) && destination.has_missing_parents() {
                return Err(ToolError::BadTarget {
                    path: to,
                    problem: "has a parent directory that does not exist; set `create_parents: true`".into(),
                });
            }
            let data = Output {
                path: to.clone(),
                from: from.clone(),
                replaced: replaced.is_some(),
                dry_run: args.dry_run.unwrap_or(false),
            };
            let note = if replaced.is_some() { " (replacing the file there; `undo` restores it)" } else { "" };
            if data.dry_run {
                return Ok(Reply::new(
                    format!("[dry run: would rename `{from}` to `{to}`{note}; nothing was moved]"),
                    data,
                ));
            }
            let kept = replaced.map(|r| context.session.keep_before(&r.bytes, r.mode)).transpose()?;
            let replace = if kept.is_some() { Replace::Allowed } else { Replace::Never };
            let created_dirs = source.rename_to(&mut destination, replace)?;
            let kind = ChangeKind::Renamed {
                from: source.real().to_path_buf(),
                from_shown: from.clone(),
                replaced: kept,
                created_dirs,
            };
            context.session.record(Self::NAME, destination.real().to_path_buf(), to.clone(), kind);
            Ok(Reply::new(format!("[renamed `{from}` to `{to}`{note}]"), data))
        })
        .await
    }
}
