//! `create_directory`: like `mkdir -p`, inside the roots.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::ChangeKind;
use crate::{Call, Effect, EffectKind, Operation, Reply, blocking};
use toolbelt_mcp_core::error::ToolError;

/// The `create_directory` operation.
pub(super) struct CreateDirectory;

/// Arguments of `create_directory`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Relative to the first root, or absolute inside it. Default: the root (changes: all files).
    pub path: String,
}

/// Structured result of `create_directory`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The directory, relative to the first root.
    pub path: String,
    /// `created` or `exists`.
    pub action: String,
}

impl Operation for CreateDirectory {
    const NAME: &'static str = "create_directory";
    const DESCRIPTION: &'static str = "Make a directory with parents.";
    const KIND: EffectKind = EffectKind::Write { destructive: false, idempotent: true };
    type Args = Args;
    type Output = Output;

    fn effect(args: &Args) -> Effect {
        Effect::Write(vec![args.path.clone()])
    }

    async fn run(_args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let (mut target, context) = call.single_target()?;
        blocking(move || {
            let (made, created_dirs) = target.create_dir()?;
            let shown = target.shown().to_string();
            if !created_dirs.is_empty() {
                let kind = ChangeKind::MadeDirs(created_dirs);
                context.session.record(Self::NAME, target.real().to_path_buf(), shown.clone(), kind);
            }
            let (action, text) = if made {
                ("created", format!("[directory `{shown}` created]"))
            } else {
                ("exists", format!("[directory `{shown}` already exists; nothing changed]"))
            };
            Ok(Reply::new(text, Output { path: shown, action: action.into() }))
        })
        .await
    }
}
