//! The tools the model sees: the server's `tools/list`, filtered by `--allow-tools` and
//! `--deny-tools` (names `tool` or `tool.operation`), and the check every call passes before
//! it reaches the server. Also which calls only read, so they may run in parallel.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::provider::ToolDef;
use crate::server::READ_ONLY_OPERATIONS;

/// The `--allow-tools` / `--deny-tools` lists.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// When not empty, only these (`tool` or `tool.operation`).
    pub allow: Vec<String>,
    /// Never these.
    pub deny: Vec<String>,
}

impl Filter {
    /// Whether `tool` with `operation` (if it has one) passes.
    fn passes(&self, tool: &str, operation: Option<&str>) -> bool {
        let names = |list: &[String]| {
            list.iter().any(|entry| match entry.split_once('.') {
                Some((t, op)) => t == tool && Some(op) == operation,
                None => entry == tool,
            })
        };
        (self.allow.is_empty() || names(&self.allow)) && !names(&self.deny)
    }
}

/// One offered tool.
#[derive(Debug, Clone)]
struct Entry {
    /// The `operation` values offered, when the tool has an `operation` enum.
    operations: Option<Vec<String>>,
    /// The operations that only read (from the tool's `_meta`).
    read_only_operations: Vec<String>,
    /// The tool only reads (`readOnlyHint`).
    read_only: bool,
}

/// The tools offered to the model.
#[derive(Debug, Clone, Default)]
pub struct Toolset {
    /// Definitions for the provider.
    pub defs: Vec<ToolDef>,
    entries: HashMap<String, Entry>,
}

impl Toolset {
    /// The server's `tools` as `filter` leaves them. A consolidated tool keeps only the
    /// operations that pass (its `operation` enum is narrowed); a tool left with none is
    /// not offered.
    pub fn new(tools: &[rmcp::model::Tool], filter: &Filter) -> Self {
        let mut set = Self::default();
        for tool in tools {
            let mut schema = Value::Object((*tool.input_schema).clone());
            let enumerated = schema.pointer_mut("/properties/operation/enum").and_then(Value::as_array_mut);
            let operations = match enumerated {
                Some(values) => {
                    values.retain(|v| v.as_str().is_some_and(|op| filter.passes(&tool.name, Some(op))));
                    if values.is_empty() {
                        continue;
                    }
                    Some(values.iter().filter_map(Value::as_str).map(str::to_string).collect())
                }
                None if filter.passes(&tool.name, None) => None,
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
            set.entries.insert(tool.name.to_string(), Entry { operations, read_only_operations, read_only });
            let description = tool.description.as_deref().unwrap_or_default().to_string();
            set.defs.push(ToolDef { name: tool.name.to_string(), description, schema });
        }
        set
    }

    /// The names offered, for messages.
    pub fn names(&self) -> Vec<&str> {
        self.defs.iter().map(|d| d.name.as_str()).collect()
    }

    /// Whether the model may call `name` with `arguments`; the error says what it may call.
    pub fn check(&self, name: &str, arguments: &Map<String, Value>) -> Result<(), String> {
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
    pub fn is_read_only(&self, name: &str, arguments: &Map<String, Value>) -> bool {
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

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn filters_narrow_operations_and_drop_empty_tools() {
        let tools = [tool("files", &["read", "write"], &["read"]), tool("shell", &["run"], &[])];
        let filter = Filter { allow: vec![], deny: vec!["files.write".into(), "shell".into()] };
        let set = Toolset::new(&tools, &filter);
        assert_eq!(set.names(), ["files"]);
        assert_eq!(set.defs[0].schema["properties"]["operation"]["enum"], json!(["read"]));
        assert!(set.check("files", &args(json!({"operation": "read"}))).is_ok());
        let refused = set.check("files", &args(json!({"operation": "write"}))).unwrap_err();
        assert_eq!(refused, "`files` operation `write` is not available to this agent; use one of: `read`");
        assert!(set.check("shell", &Map::new()).unwrap_err().contains("there is no tool `shell`"));

        let only = Filter { allow: vec!["shell".into()], deny: vec![] };
        assert_eq!(Toolset::new(&tools, &only).names(), ["shell"]);
    }

    #[test]
    fn read_only_comes_from_meta_or_annotations() {
        let tools = [tool("files", &["read", "write"], &["read"])];
        let set = Toolset::new(&tools, &Filter::default());
        assert!(set.is_read_only("files", &args(json!({"operation": "read"}))));
        assert!(!set.is_read_only("files", &args(json!({"operation": "write"}))));
        assert!(!set.is_read_only("nope", &Map::new()));
        let annotated = rmcp::model::Tool::new("look", "d", std::sync::Arc::new(Map::new()))
            .with_annotations(rmcp::model::ToolAnnotations::new().read_only(true));
        assert!(Toolset::new(&[annotated], &Filter::default()).is_read_only("look", &Map::new()));
    }
}
