//! `store`: remember a note; the same content in the same collection is stored once.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::memory::{Scope, changed, collection_name};
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_store::memory::{self, NewMemory};

/// The `store` operation.
pub(super) struct Store;

/// Arguments of `store`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// The text (max 100,000 bytes).
    pub content: String,
    /// A short title (`""` removes it).
    pub title: Option<String>,
    /// Tags, lowercased. search: all must match; update: replaces.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Default `default` (search: every one).
    #[schemars(extend("default" = "default"))]
    pub collection: Option<String>,
    /// Default `workspace`.
    #[serde(default)]
    pub scope: Scope,
}

/// Structured result of `store`.
#[derive(Debug, Serialize, JsonSchema)]
pub(super) struct Output {
    /// The memory's id.
    pub id: i64,
    /// Its collection.
    pub collection: String,
    /// Its scope.
    pub scope: Scope,
    /// The same content was already stored there; nothing changed.
    pub duplicate: bool,
}

impl Operation for Store {
    const NAME: &'static str = "store";
    const DESCRIPTION: &'static str = "Remember `content`; returns its id. With an optional title and tags; the same content in the same collection and scope returns the existing id.";
    const KIND: EffectKind = EffectKind::Record { destructive: false, idempotent: true };
    type Args = Args;
    type Output = Output;
    const LEAN: crate::Lean = super::MEMORY_LEAN;

    fn effect(_args: &Args) -> Effect {
        Effect::Record
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let new = NewMemory {
            content: memory::content(&args.content)?,
            title: memory::title(args.title.as_deref().unwrap_or_default())?,
            tags: memory::tags(&args.tags)?,
            collection: collection_name(args.collection)?,
        };
        let key = args.scope.key(&call.context);
        let stored = call.context.store.memory_store(&key, &new).await?;
        let text = if stored.duplicate {
            format!(
                "already stored as memory {} in `{}` ({} scope); nothing changed (`update` changes its title or tags)",
                stored.id,
                new.collection,
                args.scope.as_str()
            )
        } else {
            changed(&call.context, &key, &new.collection).await;
            format!("stored memory {} in `{}` ({} scope)", stored.id, new.collection, args.scope.as_str())
        };
        Ok(Reply::new(
            text,
            Output { id: stored.id, collection: new.collection, scope: args.scope, duplicate: stored.duplicate },
        ))
    }
}
