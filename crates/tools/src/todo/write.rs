//! `write`: replace the whole list (completed items must stay).

use schemars::JsonSchema;
use serde::Deserialize;

use crate::todo::{ListOutput, change};
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_store::TodoChange;
use toolbelt_mcp_store::todos::Draft;

/// The `write` operation.
pub(super) struct Write;

/// Arguments of `write`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// The list's name (default `default`).
    #[schemars(extend("default" = "default"))]
    pub list: Option<String>,
    /// The items, in order.
    pub todos: Vec<Draft>,
}

impl Operation for Write {
    const NAME: &'static str = "write";
    const DESCRIPTION: &'static str = "Replace the list. Ids left out are numbered after the highest; completed items must stay (start another plan under a new `list` name instead).";
    const KIND: EffectKind = EffectKind::Record { destructive: true, idempotent: true };
    type Args = Args;
    type Output = ListOutput;
    const LEAN: crate::Lean = super::TODO_LEAN;

    fn effect(_args: &Args) -> Effect {
        Effect::Record
    }

    async fn run(args: Args, call: Call) -> Result<Reply<ListOutput>, ToolError> {
        let items = args.todos;
        change(&call.context, args.list, TodoChange::Write(items)).await
    }
}
