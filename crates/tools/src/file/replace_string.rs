//! `replace_string`: one exact, unique replacement (or all of them), returned as a diff.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::file::edit::{self, WriteOutput};
use crate::file::matching;
use crate::{Call, Effect, EffectKind, Lean, Operation, Reply, blocking};
use toolbelt_mcp_core::error::ToolError;

/// The `replace_string` operation.
pub(super) struct ReplaceString;

/// Arguments of `replace_string`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
    pub path: String,
    /// Exact text, without line numbers; unique unless `replace_all`.
    pub old_string: String,
    /// Its replacement.
    pub new_string: String,
    /// Replace every occurrence.
    pub replace_all: Option<bool>,
    /// The sha256 from read_file: refuse if the file changed since.
    pub expected_hash: Option<String>,
    /// Only preview; change nothing.
    pub dry_run: Option<bool>,
}

impl Operation for ReplaceString {
    const NAME: &'static str = "replace_string";
    const DESCRIPTION: &'static str = "Replace exact text. `old_string` must be unique unless `replace_all`; on no match the nearest text is shown with line numbers. Keeps line endings, BOM and permissions; returns the diff.";
    const KIND: EffectKind = EffectKind::Write { destructive: true, idempotent: false };
    type Args = Args;
    type Output = WriteOutput;
    const LEAN: Lean = super::edit::WRITE_LEAN;

    fn effect(args: &Args) -> Effect {
        Effect::Write(vec![args.path.clone()])
    }

    fn written(args: &Args) -> Option<String> {
        Some(format!("in place of:\n{}\n---\nthis:\n{}", args.old_string, args.new_string))
    }

    async fn run(args: Args, call: Call) -> Result<Reply<WriteOutput>, ToolError> {
        let (target, context) = call.single_target()?;
        blocking(move || {
            edit::edit_text(Self::NAME, target, &context, args.expected_hash.as_deref(), args.dry_run, |text, shown| {
                let (old, new) = (text.normalize(&args.old_string), text.normalize(&args.new_string));
                let (body, count) = matching::replace(&text.body, &old, &new, args.replace_all.unwrap_or(false))
                    .map_err(|why| ToolError::EditFailed(format!("`{shown}`: {why}")))?;
                Ok((body, Some(count)))
            })
        })
        .await
    }
}
