//! The tools the model sees: every server's `tools/list` (the first server's under their own
//! names, the others' as `<server>__<tool>`), filtered by `--allow-tools` and `--deny-tools`
//! (`tool`, `tool.operation`, or a pattern such as `memory__*`), and the check every call
//! passes before it reaches its server. Also which calls only read, so they may run in
//! parallel.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::names;
use super::provider::ToolDef;
use toolbelt_mcp_core::meta::READ_ONLY_OPERATIONS;

/// The `--allow-tools` / `--deny-tools` lists.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    /// When not empty, only these (`tool`, `tool.operation`; `*` matches any characters).
    pub allow: Vec<String>,
    /// Never these.
    pub deny: Vec<String>,
}

impl Filter {
    /// Whether `tool` with `operation` (if it has one) passes.
    fn passes(&self, tool: &str, operation: Option<&str>) -> bool {
        let names = |list: &[String]| {
            list.iter().any(|entry| match entry.split_once('.') {
                Some((t, op)) => matches(t, tool) && operation.is_some_and(|o| matches(op, o)),
                None => matches(entry, tool),
            })
        };
        (self.allow.is_empty() || names(&self.allow)) && !names(&self.deny)
    }
}

/// Whether `name` is `pattern`, where `*` in `pattern` matches any characters.
fn matches(pattern: &str, name: &str) -> bool {
    if !pattern.contains('*') {
        return pattern == name;
    }
    globset::Glob::new(pattern).is_ok_and(|glob| glob.compile_matcher().is_match(name))
}

/// The tools of one server, as [`Toolset::new`] takes them.
pub(crate) struct Listed<'a> {
    /// The server's name when its tools are qualified (`None`: the first server).
    pub qualifier: Option<&'a str>,
    /// Its `tools/list`.
    pub tools: &'a [rmcp::model::Tool],
}

/// One offered tool.
#[derive(Debug, Clone)]
struct Entry {
    /// The index of its server in the list given to [`Toolset::new`].
    server: usize,
    /// Its name on that server.
    tool: String,
    /// The `operation` values offered, when the tool has an `operation` enum.
    operations: Option<Vec<String>>,
    /// The operations that only read (from the tool's `_meta`).
    read_only_operations: Vec<String>,
    /// The tool only reads (`readOnlyHint`).
    read_only: bool,
}

/// The tools offered to the model.
#[derive(Debug, Clone, Default)]
pub(crate) struct Toolset {
    /// Definitions for the provider.
    pub defs: Vec<ToolDef>,
    entries: HashMap<String, Entry>,
}

impl Toolset {
    /// The servers' tools as `filter` leaves them. A consolidated tool keeps only the
    /// operations that pass (its `operation` enum is narrowed); a tool left with none is
    /// not offered.
    pub(crate) fn new(servers: &[Listed<'_>], filter: &Filter) -> Self {
        let mut set = Self::default();
        let taken: HashSet<String> = servers
            .iter()
            .filter(|s| s.qualifier.is_none())
            .flat_map(|s| s.tools.iter().map(|t| t.name.to_string()))
            .collect();
        let qualified: Vec<(&str, &str)> = servers
            .iter()
            .filter_map(|s| s.qualifier.map(|q| (q, s.tools)))
            .flat_map(|(q, tools)| tools.iter().map(move |t| (q, t.name.as_ref())))
            .collect();
        let mut assigned = names::assign(&qualified, &taken).into_iter();
        let named = servers
            .iter()
            .enumerate()
            .flat_map(|(index, server)| server.tools.iter().map(move |tool| (index, server.qualifier.is_some(), tool)));
        let named: Vec<(usize, String, &rmcp::model::Tool)> = named
            .map(|(index, qualified, tool)| {
                let name = if qualified { assigned.next().unwrap_or_default() } else { tool.name.to_string() };
                (index, name, tool)
            })
            .collect();
        for (server, name, tool) in named {
            let mut schema = Value::Object((*tool.input_schema).clone());
            let enumerated = schema.pointer_mut("/properties/operation/enum").and_then(Value::as_array_mut);
            let operations = match enumerated {
                Some(values) => {
                    values.retain(|v| v.as_str().is_some_and(|op| filter.passes(&name, Some(op))));
                    if values.is_empty() {
                        continue;
                    }
                    Some(values.iter().filter_map(Value::as_str).map(str::to_string).collect())
                }
                None if filter.passes(&name, None) => None,
                None => continue,
            };
            let read_only_operations = tool
                .meta
                .as_ref()
                .and_then(|meta| meta.0.get(READ_ONLY_OPERATIONS))
                .and_then(Value::as_array)
                .map(|ops| ops.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default();
            let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint).unwrap_or(false);
            let entry = Entry { server, tool: tool.name.to_string(), operations, read_only_operations, read_only };
            set.entries.insert(name.clone(), entry);
            let description = tool.description.as_deref().unwrap_or_default().to_string();
            set.defs.push(ToolDef { name, description, schema });
        }
        set
    }

    /// The server (its index) and the tool's own name there, for a name the model called.
    pub(crate) fn route(&self, name: &str) -> Option<(usize, &str)> {
        self.entries.get(name).map(|e| (e.server, e.tool.as_str()))
    }

    /// Stops offering the tools of the server at `index` (it went away).
    pub(crate) fn remove_server(&mut self, index: usize) {
        self.entries.retain(|_, entry| entry.server != index);
        let entries = &self.entries;
        self.defs.retain(|def| entries.contains_key(&def.name));
    }

    /// The names offered, for messages.
    pub(crate) fn names(&self) -> Vec<&str> {
        self.defs.iter().map(|d| d.name.as_str()).collect()
    }

    /// Whether the model may call `name` with `arguments`; the error says what it may call.
    pub(crate) fn check(&self, name: &str, arguments: &Map<String, Value>) -> Result<(), String> {
        let Some(entry) = self.entries.get(name) else {
            return Err(format!(
                "there is no tool `{name}` here; call one of: {}",
                self.names().iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            ));
        };
        let Some(operations) = &entry.operations else { return Ok(()) };
        match arguments.get("operation").and_then(Value::as_str) {
            Some(op) if operations.iter().any(|o| o == op) => Ok(()),
            Some(op) => Err(format!(
                "`{name}` operation `{op}` is not available to this agent; use one of: {}",
                operations.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(", ")
            )),
            // The server says what is missing.
            None => Ok(()),
        }
    }

    /// Whether a call of `name` with `arguments` only reads.
    pub(crate) fn is_read_only(&self, name: &str, arguments: &Map<String, Value>) -> bool {
        let Some(entry) = self.entries.get(name) else { return false };
        let operation = arguments.get("operation").and_then(Value::as_str);
        entry.read_only || operation.is_some_and(|op| entry.read_only_operations.iter().any(|o| o == op))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, ops: &[&str], read_only: &[&str]) -> rmcp::model::Tool {
        let schema = json!({"type": "object", "properties": {"operation": {"type": "string", "enum": ops}}});
        let mut meta = rmcp::model::JsonObject::new();
        meta.insert(READ_ONLY_OPERATIONS.into(), json!(read_only));
        rmcp::model::Tool::new(name.to_string(), "d", std::sync::Arc::new(schema.as_object().unwrap().clone()))
            .with_meta(rmcp::model::MetaObject(meta))
    }

    fn first(tools: &[rmcp::model::Tool]) -> [Listed<'_>; 1] {
        [Listed { qualifier: None, tools }]
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn filters_narrow_operations_and_drop_empty_tools() {
        let tools = [tool("files", &["read", "write"], &["read"]), tool("shell", &["run"], &[])];
        let filter = Filter { allow: vec![], deny: vec!["files.write".into(), "shell".into()] };
        let set = Toolset::new(&first(&tools), &filter);
        assert_eq!(set.names(), ["files"]);
        assert_eq!(set.defs[0].schema["properties"]["operation"]["enum"], json!(["read"]));
        assert!(set.check("files", &args(json!({"operation": "read"}))).is_ok());
        let refused = set.check("files", &args(json!({"operation": "write"}))).unwrap_err();
        assert_eq!(refused, "`files` operation `write` is not available to this agent; use one of: `read`");
        assert!(set.check("shell", &Map::new()).unwrap_err().contains("there is no tool `shell`"));

        let only = Filter { allow: vec!["shell".into()], deny: vec![] };
        assert_eq!(Toolset::new(&first(&tools), &only).names(), ["shell"]);
    }

    #[test]
    fn other_servers_tools_are_qualified_routed_filtered_by_pattern_and_removed() {
        let own = [tool("files", &["read"], &["read"])];
        let plain = |name: &str| rmcp::model::Tool::new(name.to_string(), "d", std::sync::Arc::new(Map::new()));
        let memory = [plain("read_graph"), plain("files")];
        let odd = [plain("do.it")];
        let servers = [
            Listed { qualifier: None, tools: &own },
            Listed { qualifier: Some("memory"), tools: &memory },
            Listed { qualifier: Some("odd one"), tools: &odd },
        ];
        let mut set = Toolset::new(&servers, &Filter::default());
        assert_eq!(set.names(), ["files", "memory__read_graph", "memory__files", "odd_one__do_it"]);
        assert_eq!(set.route("memory__files"), Some((1, "files")));
        assert_eq!(set.route("odd_one__do_it"), Some((2, "do.it")));
        assert_eq!(set.route("files"), Some((0, "files")));

        let deny = Filter { allow: vec![], deny: vec!["memory__*".into()] };
        assert_eq!(Toolset::new(&servers, &deny).names(), ["files", "odd_one__do_it"]);
        let allow = Filter { allow: vec!["files.read".into(), "*__read_*".into()], deny: vec![] };
        assert_eq!(Toolset::new(&servers, &allow).names(), ["files", "memory__read_graph"]);

        set.remove_server(1);
        assert_eq!(set.names(), ["files", "odd_one__do_it"]);
        assert!(set.check("memory__files", &Map::new()).is_err());
    }

    #[test]
    fn read_only_comes_from_meta_or_annotations() {
        let tools = [tool("files", &["read", "write"], &["read"])];
        let set = Toolset::new(&first(&tools), &Filter::default());
        assert!(set.is_read_only("files", &args(json!({"operation": "read"}))));
        assert!(!set.is_read_only("files", &args(json!({"operation": "write"}))));
        assert!(!set.is_read_only("nope", &Map::new()));
        let annotated = rmcp::model::Tool::new("look", "d", std::sync::Arc::new(Map::new()))
            .with_annotations(rmcp::model::ToolAnnotations::new().read_only(true));
        assert!(Toolset::new(&first(&[annotated]), &Filter::default()).is_read_only("look", &Map::new()));
    }
}
