//! `delete`: forget a memory.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::memory::{Scope, changed, titled};
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;

/// The `delete` operation.
pub(super) struct Delete;

/// Arguments of `delete`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// The memory's id.
    pub id: i64,
}

/// Structured result of `delete`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The memory's id.
    pub id: i64,
    /// Its collection.
    pub collection: String,
    /// Its scope.
    pub scope: Scope,
    /// Its title.
    pub title: Option<String>,
    /// It is gone.
    pub deleted: bool,
}

impl Operation for Delete {
    const NAME: &'static str = "delete";
    const DESCRIPTION: &'static str = "Forget a memory.";
    const KIND: EffectKind = EffectKind::Record { destructive: true, idempotent: false };
    type Args = Args;
    type Output = Output;
    const LEAN: crate::Lean = super::MEMORY_LEAN;

    fn effect(_args: &Args) -> Effect {
        Effect::Record
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let workspace = call.context.workspace();
        let gone = call.context.store.memory_delete(&workspace, args.id).await?;
        changed(&call.context, &gone.workspace, &gone.collection).await;
        let scope = Scope::of_key(&gone.workspace);
        let text = format!(
            "deleted memory {}{} from `{}` ({} scope)",
            gone.id,
            titled(&gone.title),
            gone.collection,
            scope.as_str()
        );
        let data = Output {
            id: gone.id,
            collection: gone.collection,
            scope,
            title: Some(gone.title).filter(|t| !t.is_empty()),
            deleted: true,
        };
        Ok(Reply::new(text, data))
    }
}
