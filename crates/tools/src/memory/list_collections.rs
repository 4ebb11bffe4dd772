//! `list_collections`: the collections of a scope, with counts and last change.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::memory::Scope;
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_store::timestamp;

/// The `list_collections` operation.
pub(super) struct ListCollections;

/// Arguments of `list_collections`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// Default `workspace`.
    #[serde(default)]
    pub scope: Scope,
}

/// Structured result of `list_collections`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The scope listed.
    pub scope: Scope,
    /// Its collections, by name.
    pub collections: Vec<Row>,
}

/// One collection.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Row {
    /// Its name.
    pub name: String,
    /// Memories in it.
    pub count: i64,
    /// When one of them last changed (UTC).
    pub updated: String,
}

impl Operation for ListCollections {
    const NAME: &'static str = "list_collections";
    const DESCRIPTION: &'static str = "Collections with counts. And when each last changed.";
    const KIND: EffectKind = EffectKind::Read;
    const ON_WORKSPACE: bool = false;
    type Args = Args;
    type Output = Output;

    fn effect(_args: &Args) -> Effect {
        Effect::Read(Vec::new())
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let workspace = args.scope.key(&call.context);
        let found = call.context.store.memory_collections(&workspace).await?;
        let mut text = if found.is_empty() {
            format!("no memories in the {} scope yet; `store` one", args.scope.as_str())
        } else {
            format!("{} collections in the {} scope:", found.len(), args.scope.as_str())
        };
        let collections: Vec<Row> =
            found.into_iter().map(|c| Row { name: c.name, count: c.count, updated: timestamp(c.updated_at) }).collect();
        for row in &collections {
            text.push_str(&format!("\n- `{}`: {} (updated {})", row.name, row.count, row.updated));
        }
        Ok(Reply::new(text, Output { scope: args.scope, collections }))
    }
}
