//! `multi_replace`: several replacements in one file, applied in order, all or none.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::file::edit::{self, WriteOutput};
use crate::file::matching;
use crate::{Call, Effect, EffectKind, Lean, Operation, Reply, blocking};
use toolbelt_mcp_core::error::ToolError;

/// The `multi_replace` operation.
pub(super) struct MultiReplace;

/// One replacement of a `multi_replace`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Edit {
    /// Exact text; unique unless `replace_all`.
    pub old_string: String,
    /// Its replacement.
    pub new_string: String,
    /// Replace every occurrence.
    pub replace_all: Option<bool>,
}

/// Arguments of `multi_replace`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
    pub path: String,
    /// In order, each on the previous result.
    pub edits: Vec<Edit>,
    /// The sha256 from read_file: refuse if the file changed since.
    pub expected_hash: Option<String>,
    /// Only preview; change nothing.
    pub dry_run: Option<bool>,
}

impl Operation for MultiReplace {
    const NAME: &'static str = "multi_replace";
    const DESCRIPTION: &'static str = "Several replacements, all or none. Each edit applies to the result of the previous; if one fails nothing is written and the error names it. Returns one diff.";
    const KIND: EffectKind = EffectKind::Write { destructive: true, idempotent: false };
    type Args = Args;
    type Output = WriteOutput;
    const LEAN: Lean = super::edit::WRITE_LEAN;

    fn effect(args: &Args) -> Effect {
        Effect::Write(vec![args.path.clone()])
    }

    fn written(args: &Args) -> Option<String> {
        let edits: Vec<String> = args
            .edits
            .iter()
            .map(|edit| format!("in place of:\n{}\n---\nthis:\n{}", edit.old_string, edit.new_string))
            .collect();
        Some(edits.join("\n===\n"))
    }

    async fn run(args: Args, call: Call) -> Result<Reply<WriteOutput>, ToolError> {
        let (target, context) = call.single_target()?;
        blocking(move || {
            if args.edits.is_empty() {
                return Err(ToolError::EditFailed(
                    "`edits` is empty; give at least one {old_string, new_string}".into(),
                ));
            }
            edit::edit_text(Self::NAME, target, &context, args.expected_hash.as_deref(), args.dry_run, |text, shown| {
                let mut body = text.body.clone();
                let mut total = 0;
                for (index, one) in args.edits.iter().enumerate() {
                    let (old, new) = (text.normalize(&one.old_string), text.normalize(&one.new_string));
                    let (next, count) = matching::replace(&body, &old, &new, one.replace_all.unwrap_or(false))
                        .map_err(|why| {
                            ToolError::EditFailed(format!(
                                "`{shown}`: edit {index} (0-based) failed, nothing was written: {why}"
                            ))
                        })?;
                    body = next;
                    total += count;
                }
                Ok((body, Some(total)))
            })
        })
        .await
    }
}
