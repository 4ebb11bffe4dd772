//! `memory_operations`: notes the agent keeps across sessions, per workspace or global, in
//! named collections, searched by relevance (SQLite FTS5, BM25) with small snippets.

mod delete;
mod get;
mod list_collections;
mod search;
mod store;
mod update;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{Context, OperationDef, ToolDef};
use toolbelt_mcp_store::GLOBAL;

/// The `memory_operations` tool and its operations, in listing order.
pub const TOOL: ToolDef = ToolDef {
    name: "memory_operations",
    title: "Memory operations",
    summary: "Remember facts across sessions and search them (ranked, with snippets); per workspace or `global`, in collections.",
    operations: &[
        OperationDef::of::<store::Store>(),
        OperationDef::of::<search::Search>(),
        OperationDef::of::<get::Get>(),
        OperationDef::of::<update::Update>(),
        OperationDef::of::<delete::Delete>(),
        OperationDef::of::<list_collections::ListCollections>(),
    ],
    granular_prefix: "memory_",
};

/// The collection used when a call names none.
const DEFAULT_COLLECTION: &str = "default";

/// The lean view of a memory result: the usual scope, collection and query mode go (each
/// stated in its argument's description), in every row too.
pub(super) const MEMORY_LEAN: crate::Lean = crate::Lean {
    details: &[],
    usual: &[
        ("scope", "\"workspace\""),
        ("collection", "\"default\""),
        ("query_mode", "\"fts\""),
        ("results[].collection", "\"default\""),
    ],
    shadowed: &[],
    joined: &[],
    one_file_diff: false,
};

/// Whose memories.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// This workspace's (its first root), the default.
    #[default]
    Workspace,
    /// Shared by every workspace of this user.
    Global,
}

impl Scope {
    /// The store's key for this scope in `context`'s workspace.
    fn key(self, context: &Context) -> String {
        match self {
            Self::Workspace => context.workspace(),
            Self::Global => GLOBAL.to_string(),
        }
    }

    /// The scope of a stored workspace key.
    fn of_key(key: &str) -> Self {
        if key == GLOBAL { Self::Global } else { Self::Workspace }
    }

    /// `workspace` or `global`.
    fn as_str(self) -> &'static str {
        match self {
            Self::Workspace => "workspace",
            Self::Global => "global",
        }
    }
}

/// The collection a call names, checked, or the default one.
fn collection_name(collection: Option<String>) -> Result<String, toolbelt_mcp_core::error::ToolError> {
    let name = collection.unwrap_or_else(|| DEFAULT_COLLECTION.to_string());
    toolbelt_mcp_store::check_name("collection", &name)?;
    Ok(name)
}

/// The resource URI of a collection: `memory://notes`, or `memory://global/notes`.
pub fn uri(scope_key: &str, collection: &str) -> String {
    if scope_key == GLOBAL { format!("memory://global/{collection}") } else { format!("memory://{collection}") }
}

/// Tells subscribers that a collection changed.
async fn changed(context: &Context, scope_key: &str, collection: &str) {
    context.store.changed(scope_key, uri(scope_key, collection)).await;
}

/// `title` or nothing, for text.
fn titled(title: &str) -> String {
    if title.is_empty() { String::new() } else { format!(" \"{title}\"") }
}
