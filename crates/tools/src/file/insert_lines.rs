//! `insert_lines`: text inserted after a given line, keeping the file's line endings.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::file::edit::{self, WriteOutput};
use crate::{Call, Effect, EffectKind, Lean, Operation, Reply, blocking};
use toolbelt_mcp_core::error::ToolError;

/// The `insert_lines` operation.
pub(super) struct InsertLines;

/// Arguments of `insert_lines`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
    pub path: String,
    /// Insert after this line (0 = top).
    pub line: u64,
    /// Lines to insert.
    pub text: String,
    /// The sha256 from read_file: refuse if the file changed since.
    pub expected_hash: Option<String>,
    /// Only preview; change nothing.
    pub dry_run: Option<bool>,
}

impl Operation for InsertLines {
    const NAME: &'static str = "insert_lines";
    const DESCRIPTION: &'static str = "Insert lines after `line` (0 = top). Returns the diff.";
    const KIND: EffectKind = EffectKind::Write { destructive: true, idempotent: false };
    type Args = Args;
    type Output = WriteOutput;
    const LEAN: Lean = super::edit::WRITE_LEAN;

    fn effect(args: &Args) -> Effect {
        Effect::Write(vec![args.path.clone()])
    }

    fn written(args: &Args) -> Option<String> {
        Some(format!("at line {}:\n{}", args.line, args.text))
    }

    async fn run(args: Args, call: Call) -> Result<Reply<WriteOutput>, ToolError> {
        let (target, context) = call.single_target()?;
        blocking(move || {
            edit::edit_text(Self::NAME, target, &context, args.expected_hash.as_deref(), args.dry_run, |text, shown| {
                Ok((insert(&text.body, args.line, &text.normalize(&args.text), shown)?, None))
            })
        })
        .await
    }
}

/// `body` with `insertion` placed after line `line`, each ending in a newline as needed.
fn insert(body: &str, line: u64, insertion: &str, shown: &str) -> Result<String, ToolError> {
    let lines: Vec<&str> = body.split_inclusive('\n').collect();
    let total = lines.len() as u64;
    if line > total {
        return Err(ToolError::BadValue {
            field: "line",
            value: line.to_string(),
            expected: format!("`{shown}` has {total} lines: use 0 to {total}"),
        });
    }
    let offset: usize = lines.iter().take(line as usize).map(|l| l.len()).sum();
    let mut out = String::with_capacity(body.len() + insertion.len() + 2);
    out.push_str(&body[..offset]);
    if offset > 0 && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(insertion);
    let rest = &body[offset..];
    if !insertion.ends_with('\n') && (!rest.is_empty() || body.ends_with('\n')) {
        out.push('\n');
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::insert;

    #[test]
    fn inserts_at_top_middle_and_end() {
        assert_eq!(insert("a\nb\n", 0, "x", "f").unwrap(), "x\na\nb\n");
        assert_eq!(insert("a\nb\n", 1, "x\n", "f").unwrap(), "a\nx\nb\n");
        assert_eq!(insert("a\nb\n", 2, "x", "f").unwrap(), "a\nb\nx\n");
        assert_eq!(insert("a\nb", 2, "x", "f").unwrap(), "a\nb\nx", "no final newline stays so");
        assert_eq!(insert("", 0, "x", "f").unwrap(), "x");
        assert!(insert("a\n", 2, "x", "f").unwrap_err().to_string().contains("has 1 lines: use 0 to 1"));
    }
}
