//! `create_file`: a new file (or, with `overwrite`, a replaced one), written atomically.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::file::edit::{self, Landing, WriteOutput};
use crate::{Call, Effect, EffectKind, Lean, Operation, Reply, blocking};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::write::Replace;

/// The `create_file` operation.
pub(super) struct CreateFile;

/// Arguments of `create_file`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
    pub path: String,
    /// The file's whole content.
    pub content: String,
    /// Replace an existing file.
    pub overwrite: Option<bool>,
    /// Create missing parents (default true).
    #[schemars(extend("default" = true))]
    pub create_parents: Option<bool>,
    /// Only preview; change nothing.
    pub dry_run: Option<bool>,
}

impl Operation for CreateFile {
    const NAME: &'static str = "create_file";
    const DESCRIPTION: &'static str = "Write a whole file. Refuses to replace an existing file unless `overwrite: true` (then returns the diff); parent directories are created.";
    const KIND: EffectKind = EffectKind::Write { destructive: true, idempotent: false };
    type Args = Args;
    type Output = WriteOutput;
    const LEAN: Lean = super::edit::WRITE_LEAN;

    fn effect(args: &Args) -> Effect {
        Effect::Write(vec![args.path.clone()])
    }

    fn written(args: &Args) -> Option<String> {
        Some(args.content.clone())
    }

    async fn run(args: Args, call: Call) -> Result<Reply<WriteOutput>, ToolError> {
        let (target, context) = call.single_target()?;
        blocking(move || {
            if !args.create_parents.unwrap_or(true) && target.has_missing_parents() {
                return Err(ToolError::BadTarget {
                    path: target.shown().into(),
                    problem:
                        "has a parent directory that does not exist; set `create_parents: true` or create it first"
                            .into(),
                });
            }
            let limit = context.config.max_edit_bytes;
            if args.content.len() as u64 > limit {
                return Err(ToolError::TooLarge {
                    path: target.shown().into(),
                    size: crate::file::human_size(args.content.len() as u64),
                    limit: crate::file::human_size(limit),
                    what: "written files (set `max_edit_bytes` in the config file to raise it)",
                });
            }
            let overwrite = args.overwrite.unwrap_or(false);
            let before = target.read_existing(context.config.max_edit_bytes)?;
            if before.is_some() && !overwrite {
                return Err(ToolError::AlreadyExists { path: target.shown().into(), what: "a file" });
            }
            let action = if before.is_some() { "overwritten" } else { "created" };
            edit::commit(Landing {
                operation: Self::NAME,
                target,
                before,
                bytes: args.content.into_bytes(),
                replace: if overwrite { Replace::Allowed } else { Replace::Never },
                dry_run: args.dry_run.unwrap_or(false),
                action,
                replacements: None,
                known_diff: None,
                context: &context,
            })
        })
        .await
    }
}
