//! `get`: one memory, whole.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::memory::{Scope, titled};
use crate::{Call, Effect, EffectKind, Operation, Reply};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_store::timestamp;

/// The `get` operation.
pub(super) struct Get;

/// Arguments of `get`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Args {
    /// The memory's id.
    pub id: i64,
}

/// Structured result of `get`.
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
    /// Its whole content.
    pub content: String,
    /// When it was stored (UTC).
    pub created: String,
    /// When it last changed (UTC).
    pub updated: String,
}

impl Operation for Get {
    const NAME: &'static str = "get";
    const DESCRIPTION: &'static str = "One memory whole. Content, title, tags, collection and times.";
    const KIND: EffectKind = EffectKind::Read;
    const ON_WORKSPACE: bool = false;
    type Args = Args;
    type Output = Output;
    const LEAN: crate::Lean = super::MEMORY_LEAN;

    fn effect(_args: &Args) -> Effect {
        Effect::Read(Vec::new())
    }

    async fn run(args: Args, call: Call) -> Result<Reply<Output>, ToolError> {
        let workspace = call.context.workspace();
        let found = call.context.store.memory_get(&workspace, args.id).await?;
        let scope = Scope::of_key(&found.workspace);
        let tags = if found.tags.is_empty() { String::new() } else { format!(" [{}]", found.tags.join(", ")) };
        let text = format!(
            "memory {} in `{}` ({} scope){}{tags}, updated {}\n\n{}",
            found.id,
            found.collection,
            scope.as_str(),
            titled(&found.title),
            timestamp(found.updated_at),
            found.content
        );
        let data = Output {
            id: found.id,
            collection: found.collection,
            scope,
            title: Some(found.title).filter(|t| !t.is_empty()),
            tags: found.tags,
            content: found.content,
            created: timestamp(found.created_at),
            updated: timestamp(found.updated_at),
        };
        Ok(Reply::new(text, data))
    }
}
