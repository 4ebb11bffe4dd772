//! MCP resources: the policy (`toolbelt://policy`), the workspace's todo lists
//! (`todo://{list}`) and memory collections (`memory://{collection}`,
//! `memory://global/{collection}`): listing, templates and reading. Subscriptions are in
//! `subscriptions.rs`.

use rmcp::ErrorData as McpError;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};

use crate::Server;
use toolbelt_mcp_store::{GLOBAL, StoreError, memory};
use toolbelt_mcp_tools::session::Session;
use toolbelt_mcp_tools::{memory as memory_tool, todo};

/// The resource showing the policy and the session's grants.
pub(crate) const POLICY_URI: &str = "toolbelt://policy";

/// Memories shown when a collection is read as a resource.
const COLLECTION_PAGE: u32 = 50;

/// A resource this server has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// `toolbelt://policy`.
    Policy,
    /// The skill's `SKILL.md` (`skills.rs`).
    Skill,
    /// `todo://{list}`.
    Todo(String),
    /// `memory://{collection}` or `memory://global/{collection}`.
    Memory {
        /// The global scope's collection.
        global: bool,
        /// Its name.
        collection: String,
    },
}

/// What `uri` names, if it is one of ours (names checked as the tools check them).
pub(crate) fn parse(uri: &str) -> Option<Target> {
    if uri == POLICY_URI {
        return Some(Target::Policy);
    }
    if uri == crate::skills::SKILL_URI {
        return Some(Target::Skill);
    }
    let named = |name: &str| toolbelt_mcp_store::check_name("name", name).is_ok().then(|| name.to_string());
    if let Some(list) = uri.strip_prefix("todo://") {
        return named(list).map(Target::Todo);
    }
    let rest = uri.strip_prefix("memory://")?;
    match rest.strip_prefix("global/") {
        Some(collection) => named(collection).map(|collection| Target::Memory { global: true, collection }),
        None => named(rest).map(|collection| Target::Memory { global: false, collection }),
    }
}

fn not_found(uri: &str) -> McpError {
    McpError::resource_not_found(
        format!(
            "no resource `{uri}`; this server has `{POLICY_URI}`, `todo://{{list}}`, `memory://{{collection}}` and `memory://global/{{collection}}` (see `resources/list`)"
        ),
        // SEP-2164: the error names the URI it could not find.
        Some(serde_json::json!({ "uri": uri })),
    )
}

fn store_error(err: &StoreError) -> McpError {
    McpError::internal_error(err.to_string(), None)
}

/// The resources to list: the policy, the workspace's todo lists (`default` always) and the
/// memory collections of the workspace and the global scope.
pub(crate) async fn list(server: &Server) -> Vec<Resource> {
    let policy = Resource::new(POLICY_URI, "policy")
        .with_title("Policy and grants")
        .with_description("The approval policy, sandbox, forbidden commands and what this session granted")
        .with_mime_type("text/markdown");
    // The skill's SKILL.md, named and described as its frontmatter (SEP-2640).
    let skill = crate::skills::skill();
    let skill_md = Resource::new(crate::skills::SKILL_URI, skill.name())
        .with_title("Skill: using the toolbelt")
        .with_description(&skill.frontmatter.description)
        .with_mime_type("text/markdown");
    let mut listed = vec![policy, skill_md];
    let workspace = server.workspace().await;
    let workspace_key = workspace.clone();
    let store = &server.shared.store;
    let found = async {
        let lists = store.todo_lists(&workspace).await?;
        let local = store.memory_collections(&workspace).await?;
        let global = store.memory_collections(GLOBAL).await?;
        Ok::<_, toolbelt_mcp_store::StoreError>((lists, local, global))
    }
    .await;
    let (lists, local, global) = match found {
        Ok(found) => found,
        Err(err) => {
            // The policy stays listed; reading a todo or memory resource reports the error.
            tracing::warn!(%err, "cannot list todo and memory resources");
            (Vec::new(), Vec::new(), Vec::new())
        }
    };
    if !lists.iter().any(|l| l.name == "default") {
        listed.push(todo_resource("default", "empty".into()));
    }
    for list in lists {
        listed.push(todo_resource(&list.name, format!("{} of {} completed", list.completed, list.total)));
    }
    for (scope, key, collections) in [("workspace", workspace_key.as_str(), local), ("global", GLOBAL, global)] {
        for collection in collections {
            let uri = memory_tool::uri(key, &collection.name);
            listed.push(
                Resource::new(&uri, format!("memory {}", collection.name))
                    .with_title(format!("Memories: {} ({scope})", collection.name))
                    .with_description(format!("{} memories, newest first", collection.count))
                    .with_mime_type("text/markdown"),
            );
        }
    }
    listed
}

fn todo_resource(name: &str, state: String) -> Resource {
    Resource::new(todo::uri(name), format!("todo {name}"))
        .with_title(format!("Todo list: {name}"))
        .with_description(format!("The workspace's todo list `{name}` ({state}), as JSON and markdown"))
        .with_mime_type("application/json")
}

/// The resource templates: a todo list or a memory collection by name.
pub(crate) fn templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new("todo://{list}", "todo list")
            .with_title("Todo list")
            .with_description("A todo list of this workspace, as JSON and markdown; subscribe to hear of changes")
            .with_mime_type("application/json"),
        ResourceTemplate::new("memory://{collection}", "memory collection")
            .with_title("Memory collection")
            .with_description("The newest memories of a collection of this workspace")
            .with_mime_type("text/markdown"),
        ResourceTemplate::new("memory://global/{collection}", "global memory collection")
            .with_title("Global memory collection")
            .with_description("The newest memories of a collection shared by every workspace")
            .with_mime_type("text/markdown"),
    ]
}

/// The contents of `uri`.
pub(crate) async fn read(server: &Server, uri: &str, session: &Session) -> Result<Vec<ResourceContents>, McpError> {
    match parse(uri).ok_or_else(|| not_found(uri))? {
        Target::Skill => Ok(vec![ResourceContents::text(crate::skills::SKILL_MD, uri).with_mime_type("text/markdown")]),
        Target::Policy => {
            let text =
                toolbelt_mcp_policy::report::policy_report(&server.shared.config, &session.id, &session.approvals);
            Ok(vec![ResourceContents::text(text, uri).with_mime_type("text/markdown")])
        }
        Target::Todo(name) => {
            let workspace = server.workspace().await;
            let list = server.shared.store.todo_read(&workspace, &name).await;
            let list = list.map_err(|err| store_error(&err))?;
            let json = serde_json::json!({
                "list": list.name,
                "workspace": workspace,
                "revision": list.revision,
                "counts": todo::Counts::of(&list.items),
                "todos": list.items,
            });
            Ok(vec![
                ResourceContents::text(json.to_string(), uri).with_mime_type("application/json"),
                ResourceContents::text(todo::markdown(&list), uri).with_mime_type("text/markdown"),
            ])
        }
        Target::Memory { global, collection } => {
            let key = if global { GLOBAL.to_string() } else { server.workspace().await };
            let store = &server.shared.store;
            let found = async {
                let recent = store.memory_recent(&key, &collection, COLLECTION_PAGE).await?;
                Ok::<_, toolbelt_mcp_store::StoreError>((recent, store.memory_collections(&key).await?))
            }
            .await;
            let (memories, collections) = found.map_err(|err| store_error(&err))?;
            let total = collections.iter().find(|c| c.name == collection).map_or(0, |c| c.count);
            Ok(vec![
                ResourceContents::text(collection_markdown(&collection, &memories, total), uri)
                    .with_mime_type("text/markdown"),
            ])
        }
    }
}

/// A collection as markdown: its newest memories, each cut to a preview.
fn collection_markdown(collection: &str, memories: &[memory::Memory], total: i64) -> String {
    let mut text = format!("# Memories: `{collection}`\n\n{total} memories");
    if total > memories.len() as i64 {
        text.push_str(&format!(", the newest {} shown (search with `memory_operations`)", memories.len()));
    }
    text.push('\n');
    for memory in memories {
        let title = if memory.title.is_empty() { String::new() } else { format!(" {}", memory.title) };
        let tags = if memory.tags.is_empty() { String::new() } else { format!(" [{}]", memory.tags.join(", ")) };
        let preview: String = memory.content.chars().take(400).collect();
        let more = if preview.len() < memory.content.len() { "…" } else { "" };
        text.push_str(&format!(
            "\n## #{}{title}{tags}\n_updated {}_\n\n{preview}{more}\n",
            memory.id,
            toolbelt_mcp_store::timestamp(memory.updated_at)
        ));
    }
    text
}

/// Whether `uri` can be subscribed to (a todo list or a memory collection).
pub(crate) fn subscribable(uri: &str) -> bool {
    matches!(parse(uri), Some(Target::Todo(_) | Target::Memory { .. }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_parse() {
        assert_eq!(parse("todo://default"), Some(Target::Todo("default".into())));
        assert_eq!(parse("memory://notes"), Some(Target::Memory { global: false, collection: "notes".into() }));
        assert_eq!(parse("memory://global/notes"), Some(Target::Memory { global: true, collection: "notes".into() }));
        assert_eq!(parse(POLICY_URI), Some(Target::Policy));
        for bad in ["todo://", "todo://a/b", "memory://global/", "file:///etc/passwd", "memory://../x"] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert!(subscribable("todo://x") && !subscribable(POLICY_URI));
    }
}
