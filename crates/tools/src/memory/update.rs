//! `update`: change a memory's content, title or tags.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::memory::{Scope, changed};
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_store::{memory, timestamp};

/// The `update` operation.
pub(super) struct Update;

/// Arguments of `update`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// The memory's id.
    pub id: i64,
    /// The text (max 100,000 bytes).
    pub content: Option<String>,
    /// A short title (`""` removes it).
    pub title: Option<String>,
    /// Tags, lowercased. search: all must match; update: replaces.
    pub tags: Option<Vec<String>>,
}

/// Structured result of `update`.
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
    /// Its tags.
    pub tags: Vec<String>,
    /// When it last changed (UTC): now.
    pub updated: String,
}

impl Operation for Update {
    const NAME: &'static str = "update";
    const DESCRIPTION: &'static str = "Change content, title or tags. The memory is re-indexed.";
    const KIND: EffectKind = EffectKind::Record { destructive: true, idempotent: true };
    type Args = Args;
    type Output = Output;
    const LEAN: crate::Lean = super::MEMORY_LEAN;

    fn effect(_args: &Args) -> Effect {
        Effect::Record
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let mut fields = Vec::new();
        let content = args.content.as_deref().map(memory::content).transpose()?;
        let title = args.title.as_deref().map(memory::title).transpose()?;
        let tags = args.tags.as_deref().map(memory::tags).transpose()?;
        for (name, given) in [("content", content.is_some()), ("title", title.is_some()), ("tags", tags.is_some())] {
            if given {
                fields.push(name);
            }
        }
        if fields.is_empty() {
            return Err(toolbelt_mcp_store::StoreError::Rule(
                "nothing to update; give at least one of `content`, `title` or `tags`".into(),
            )
            .into());
        }
        let workspace = call.context.workspace();
        let id = args.id;
        let updated = call.context.store.memory_update(&workspace, id, (content, title, tags)).await?;
        changed(&call.context, &updated.workspace, &updated.collection).await;
        let scope = Scope::of_key(&updated.workspace);
        let text = format!("updated memory {} in `{}` ({})", updated.id, updated.collection, fields.join(", "));
        let data = Output {
            id: updated.id,
            collection: updated.collection,
            scope,
            title: Some(updated.title).filter(|t| !t.is_empty()),
            tags: updated.tags,
            updated: timestamp(updated.updated_at),
        };
        Ok(Reply::new(text, data))
    }
}
