//! `update`: change some fields of existing items.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::todo::{ListOutput, change};
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_store::TodoChange;
use toolbelt_mcp_store::todos::Patch;

/// The `update` operation.
pub(super) struct Update;

/// Arguments of `update`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// The list's name (default `default`).
    #[schemars(extend("default" = "default"))]
    pub list: Option<String>,
    /// Changes by id; only given fields change.
    pub updates: Vec<Patch>,
}

impl Operation for Update {
    const NAME: &'static str = "update";
    const DESCRIPTION: &'static str = "Change items by id. E.g. `[{\"id\": 2, \"status\": \"completed\"}, {\"id\": 3, \"status\": \"in_progress\"}]`: all changes apply together.";
    const KIND: EffectKind = EffectKind::Record { destructive: true, idempotent: true };
    type Args = Args;
    type Output = ListOutput;
    const LEAN: crate::Lean = super::TODO_LEAN;

    fn effect(_args: &Args) -> Effect {
        Effect::Record
    }

    async fn run(args: Args, call: Call) -> Result<Reply<ListOutput>, ToolError> {
        let items = args.updates;
        change(&call.context, args.list, TodoChange::Update(items)).await
    }
}
