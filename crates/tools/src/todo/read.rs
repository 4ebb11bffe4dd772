//! `read`: the list with its progress counts.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::todo::{ListOutput, list_name, reply};
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;

/// The `read` operation.
pub(super) struct Read;

/// Arguments of `read`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// The list's name (default `default`).
    #[schemars(extend("default" = "default"))]
    pub list: Option<String>,
}

impl Operation for Read {
    const NAME: &'static str = "read";
    const DESCRIPTION: &'static str = "Show the list.";
    const KIND: EffectKind = EffectKind::Read;
    const ON_WORKSPACE: bool = false;
    type Args = Args;
    type Output = ListOutput;
    const LEAN: crate::Lean = super::TODO_LEAN;

    fn effect(_args: &Args) -> Effect {
        Effect::Read(Vec::new())
    }

    async fn run(args: Args, call: Call) -> Result<Reply<ListOutput>, ToolError> {
        let name = list_name(args.list)?;
        let workspace = call.context.workspace();
        let list = call.context.store.todo_read(&workspace, &name).await?;
        Ok(reply(list, None, Vec::new()))
    }
}
