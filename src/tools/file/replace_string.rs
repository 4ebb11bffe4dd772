//! `replace_string`: one exact, unique replacement (or all of them), returned as a diff.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::error::ToolError;
use crate::tools::file::edit::{self, WriteOutput};
use crate::tools::file::matching;
use crate::tools::{Call, Effect, EffectKind, Operation, Reply, blocking};

/// The `replace_string` operation.
pub struct ReplaceString;

/// Arguments of `replace_string`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    /// The file to edit.
    pub path: String,
    /// The exact text to replace (as `read_file` shows it, without line numbers); must occur once unless `replace_all`.
    pub old_string: String,
    /// The replacement text.
    pub new_string: String,
    /// Replace every occurrence (default false).
    pub replace_all: Option<bool>,
    /// The sha256 `read_file` returned; the edit fails if the file changed since.
    pub expected_hash: Option<String>,
    /// Only show the diff the call would make; write nothing (default false).
    pub dry_run: Option<bool>,
}

impl Operation for ReplaceString {
    const NAME: &'static str = "replace_string";
    const DESCRIPTION: &'static str = "Replace `old_string` with `new_string` in a file: an exact match that must be unique unless `replace_all`. On no match, shows the closest regions with line numbers; keeps line endings, BOM and permissions; returns the diff.";
    const KIND: EffectKind = EffectKind::Write { destructive: true, idempotent: false };
    type Args = Args;
    type Output = WriteOutput;

    fn effect(args: &Args) -> Effect {
        Effect::Write(vec![args.path.clone()])
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
