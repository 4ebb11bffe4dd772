//! `add`: append items, numbered after the highest id.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::todo::{ListOutput, change};
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_store::TodoChange;
use toolbelt_mcp_store::todos::Draft;

/// The `add` operation.
pub(super) struct Add;

/// Arguments of `add`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// The list's name (default `default`).
    #[schemars(extend("default" = "default"))]
    pub list: Option<String>,
    /// The items, in order.
    pub todos: Vec<Draft>,
}

impl Operation for Add {
    const NAME: &'static str = "add";
    const DESCRIPTION: &'static str = "Append items. They get ids after the highest so far.";
    const KIND: EffectKind = EffectKind::Record { destructive: false, idempotent: false };
    type Args = Args;
    type Output = ListOutput;
    const LEAN: crate::Lean = super::TODO_LEAN;

    fn effect(_args: &Args) -> Effect {
        Effect::Record
    }

    async fn run(args: Args, call: Call) -> Result<Reply<ListOutput>, ToolError> {
        let items = args.todos;
        change(&call.context, args.list, TodoChange::Add(items)).await
    }
}
