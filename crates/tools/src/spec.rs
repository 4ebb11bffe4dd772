//! Tool listings derived from the registry: names, descriptions, flat schemas, annotations.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::schema::{self, Part, SchemaError};
use crate::{EffectKind, EscalationArgs, OperationDef, TOOLS, ToolDef};
use toolbelt_mcp_core::config::args::ToolLayout;

/// A tool as listed to clients, free of any protocol type (the server converts it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolSpec {
    /// Tool name.
    pub name: String,
    /// Human-readable title.
    pub title: String,
    /// Description for the model.
    pub description: String,
    /// Flat input schema.
    pub input_schema: Map<String, Value>,
    /// Flat output schema of `structuredContent`.
    pub output_schema: Map<String, Value>,
    /// Behaviour hints.
    pub annotations: Annotations,
    /// The `operation` values that only read (consolidated tools, which mix reads and
    /// writes): listed in the tool's `_meta` so clients can run such calls in parallel.
    #[serde(skip)]
    pub read_only_operations: Vec<&'static str>,
}

/// MCP tool annotations, exact for what the tool's operations can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    /// Nothing is modified.
    pub read_only_hint: bool,
    /// Something may be destroyed.
    pub destructive_hint: bool,
    /// Repeating a call has no further effect.
    pub idempotent_hint: bool,
    /// Reaches beyond the local machine.
    pub open_world_hint: bool,
}

impl Annotations {
    /// Exact for one kind; for several, what holds for all of them.
    fn of(kinds: impl Iterator<Item = EffectKind>) -> Self {
        let mut all =
            Self { read_only_hint: true, destructive_hint: false, idempotent_hint: true, open_world_hint: false };
        for kind in kinds {
            match kind {
                EffectKind::Read => {}
                EffectKind::Write { destructive, idempotent } => {
                    all.read_only_hint = false;
                    all.destructive_hint |= destructive;
                    all.idempotent_hint &= idempotent;
                }
                EffectKind::Record { destructive, idempotent } => {
                    all.read_only_hint = false;
                    all.destructive_hint |= destructive;
                    all.idempotent_hint &= idempotent;
                }
                EffectKind::Exec => {
                    all.read_only_hint = false;
                    all.destructive_hint = true;
                    all.idempotent_hint = false;
                    all.open_world_hint = true;
                }
            }
        }
        all
    }
}

/// Which operations a listing holds beside the ones every listing has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Listing {
    /// The `read-only` sandbox: operations that write files are left out.
    pub read_only: bool,
    /// The connection has a model source: operations that run a model (`delegate`) are in.
    pub with_model: bool,
}

impl Listing {
    /// What `schemas/` publishes: every operation but those that need a model.
    pub const PUBLISHED: Self = Self { read_only: false, with_model: false };

    /// Whether `op` is in this listing.
    fn lists(self, op: &OperationDef) -> bool {
        (!self.read_only || !matches!(op.kind, EffectKind::Write { .. })) && (self.with_model || !op.needs_model)
    }
}

/// The tools a layout lists, in fixed order with deterministic text. The published listings
/// are embedded at build time (see `published`); others are generated.
pub fn specs(layout: ToolLayout, listing: Listing) -> Result<Vec<ToolSpec>, SchemaError> {
    if listing == Listing::PUBLISHED
        && let Some(specs) = super::published::listing(layout)
    {
        return Ok(specs);
    }
    generate(layout, listing)
}

/// The tools a layout lists, generated from the registry (what `schemas/` publishes).
pub fn generate(layout: ToolLayout, listing: Listing) -> Result<Vec<ToolSpec>, SchemaError> {
    let listed = move |op: &&OperationDef| listing.lists(op);
    match layout {
        ToolLayout::Consolidated => {
            TOOLS.iter().map(|tool| consolidated(tool, tool.operations.iter().filter(listed).collect())).collect()
        }
        ToolLayout::Granular => {
            TOOLS.iter().flat_map(|t| t.operations.iter().filter(listed).map(move |op| granular(t, op))).collect()
        }
    }
}

fn consolidated(tool: &ToolDef, operations: Vec<&OperationDef>) -> Result<ToolSpec, SchemaError> {
    let inputs: Vec<_> = operations.iter().map(|op| (op.name, (op.input_schema)())).collect();
    let fields_by_operation: Vec<String> =
        operations.iter().zip(&inputs).map(|(op, (_, input))| format!("{}({})", op.name, field_list(input))).collect();
    let operation_doc = format!("Each one's fields (* required): {}.", fields_by_operation.join("; "));
    let mut input_schema = schema::merge(&parts(&inputs), &operation_doc, &[])?;
    if operations.iter().any(|op| op.can_escalate()) {
        add_escalation(&mut input_schema);
    }
    add_details(&mut input_schema);
    let mut output_schema = envelope_schema();
    schema::strip_defaults(&mut input_schema);
    schema::check_flat(&input_schema)?;
    schema::check_flat(&output_schema)?;
    identify(&mut output_schema);
    let mut description = format!("{}\nOperations:", tool.summary);
    for op in &operations {
        description.push_str(&format!("\n- {}: {}", op.name, first_sentence(op.description)));
    }
    Ok(ToolSpec {
        name: tool.name.into(),
        title: tool.title.into(),
        description,
        input_schema,
        output_schema,
        annotations: Annotations::of(operations.iter().map(|op| op.kind)),
        read_only_operations: operations
            .iter()
            .filter(|op| matches!(op.kind, EffectKind::Read))
            .map(|op| op.name)
            .collect(),
    })
}

/// The fields every result of a consolidated tool may carry (see `Reply::finish`), published
/// in its output schema's description (`envelope_schema`). Its operations' own fields differ,
/// and a flat merge of them would describe a shape no result has; they are in docs/TOOLS.md and
/// in the granular tools' schemas.
#[derive(schemars::JsonSchema, Serialize)]
struct Envelope {
    /// The operation that ran (with `details: true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    operation: Option<String>,
    /// Whether anything was left out to fit the output budget or a limit (the lean view
    /// has it only when true).
    #[serde(skip_serializing_if = "Option::is_none")]
    truncated: Option<bool>,
    /// What was left out, and how to see it.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// A consolidated tool's output schema: an object, with the envelope's fields named in its
/// description and no typed properties. Clients compile output schemas at every start (the
/// TypeScript SDK one AJV validator per schema, in the host's start-up path): the envelope with
/// its three typed properties took 0.80 ms to compile, this one 0.31 ms (the SDK's own validator,
/// a warm Node process), and the types told a validator nothing our results could fail.
fn envelope_schema() -> Map<String, Value> {
    let mut schema = schema::output_schema::<Envelope>();
    let fields: Vec<String> = match schema.insert("properties".into(), Value::Object(Map::new())) {
        Some(Value::Object(props)) => props
            .iter()
            .map(|(name, field)| {
                let kind = field["type"].as_str().unwrap_or("value");
                let doc = field["description"].as_str().unwrap_or_default().split_whitespace().collect::<Vec<_>>();
                format!("`{name}` ({kind}): {}", doc.join(" ").trim_end_matches('.'))
            })
            .collect(),
        _ => Vec::new(),
    };
    let description = format!(
        "A result holds its operation's own fields (docs/TOOLS.md lists them) and may carry {}.",
        fields.join("; ")
    );
    schema.insert("description".into(), Value::String(description));
    schema
}

fn parts<'a>(schemas: &'a [(&'static str, Map<String, Value>)]) -> Vec<Part<'a>> {
    schemas.iter().map(|(operation, schema)| Part { operation, schema }).collect()
}

fn granular(tool: &ToolDef, op: &OperationDef) -> Result<ToolSpec, SchemaError> {
    let name = tool.granular_name(op);
    let mut input_schema = (op.input_schema)();
    schema::strip_defaults(&mut input_schema);
    if op.can_escalate() {
        add_escalation(&mut input_schema);
    }
    add_details(&mut input_schema);
    let mut output_schema =
        schema::merge(&[Part { operation: op.name, schema: &(op.output_schema)() }], "The operation that ran.", &[])?;
    add_truncated(&mut output_schema);
    add_note(&mut output_schema);
    crate::lean::publish(&mut output_schema, &op.lean);
    schema::outline(&mut output_schema);
    schema::strip_defaults(&mut input_schema);
    schema::strip_defaults(&mut output_schema);
    schema::check_flat(&input_schema)?;
    schema::check_flat(&output_schema)?;
    identify(&mut output_schema);
    Ok(ToolSpec {
        title: title_case(&name),
        name,
        description: op.description.into(),
        input_schema,
        output_schema,
        annotations: Annotations::of(std::iter::once(op.kind)),
        read_only_operations: Vec::new(),
    })
}

/// Adds `escalate` and `justification`, which every operation that touches the workspace
/// accepts (the gate reads them).
fn add_escalation(schema: &mut Map<String, Value>) {
    let common = schema::input_schema::<EscalationArgs>();
    let (Some(Value::Object(props)), Some(Value::Object(extra))) =
        (schema.get_mut("properties"), common.get("properties"))
    else {
        return;
    };
    for (name, field) in extra {
        props.insert(name.clone(), field.clone());
    }
}

/// `details`, which every operation accepts (see `lean.rs`).
#[derive(schemars::JsonSchema, serde::Deserialize)]
struct DetailsArg {
    /// Return the whole record: the operation's name, hashes, byte counts, timings, lines as arrays, `false` and empty fields. Default: the lean view a model needs.
    #[allow(dead_code)]
    details: Option<bool>,
}

/// Adds `details` to an input schema.
fn add_details(schema: &mut Map<String, Value>) {
    let common = schema::input_schema::<DetailsArg>();
    if let (Some(Value::Object(props)), Some(Value::Object(extra))) =
        (schema.get_mut("properties"), common.get("properties"))
    {
        props.extend(extra.clone());
    }
}

/// The first sentence of an operation's description: its line in a consolidated tool's.
fn first_sentence(description: &str) -> &str {
    description.find(". ").map_or(description, |end| &description[..=end])
}

/// Names an output schema by its content (`$id`, a URN with its hash): a client that caches
/// compiled schemas by `$id` (the TypeScript SDK's AJV validator does) compiles the four
/// consolidated tools' one shared schema once, not four times, at each start (0.6 ms against
/// 1.5–2.9 ms, `benches/ts`), and two different schemas never share a name.
fn identify(schema: &mut Map<String, Value>) {
    let text = Value::Object(schema.clone()).to_string();
    let hash = twox_hash::XxHash3_64::oneshot(text.as_bytes());
    schema.insert("$id".into(), json!(format!("urn:toolbelt-mcp:output:{hash:016x}")));
}

/// Adds `note`, which any result may carry (see `Reply::cut`).
fn add_note(schema: &mut Map<String, Value>) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert("note".into(), json!({"type": "string"}));
    }
}

fn add_truncated(schema: &mut Map<String, Value>) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props.insert("truncated".into(), json!({"type": "boolean", "description": "Whether anything was left out to fit the output budget or a limit."}));
    }
    schema.insert("required".into(), json!(["operation", "truncated"]));
}

/// An operation's fields in schema order, each with whether it is required.
pub fn fields(schema: &Map<String, Value>) -> Vec<(String, bool)> {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(Value::Object(props)) = schema.get("properties") else { return Vec::new() };
    props.keys().map(|k| (k.clone(), required.contains(&k.as_str()))).collect()
}

/// `path*, offset, limit`: the operation's fields, required ones starred.
fn field_list(schema: &Map<String, Value>) -> String {
    fields(schema).into_iter().map(|(k, req)| if req { format!("{k}*") } else { k }).collect::<Vec<_>>().join(",")
}

/// The accepted-fields clause of an argument error: "`path` (required), `offset`, `limit`".
pub(crate) fn accepted_fields(schema: &Map<String, Value>) -> String {
    let list: Vec<String> = fields(schema)
        .into_iter()
        .map(|(k, req)| if req { format!("`{k}` (required)") } else { format!("`{k}`") })
        .collect();
    if list.is_empty() { "none".into() } else { list.join(", ") }
}

fn title_case(name: &str) -> String {
    let mut words: Vec<String> = name.split('_').map(str::to_string).collect();
    if let Some(first) = words.first_mut() {
        let mut chars = first.chars();
        *first = chars.next().map(|c| c.to_uppercase().chain(chars).collect()).unwrap_or_default();
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    const TERMINAL_OPERATIONS: [&str; 6] =
        ["run_command", "start_session", "send_input", "read_output", "list_sessions", "kill_session"];
    /// No PTY sessions on Windows: `start_session` and `send_input` are not offered there.
    #[cfg(windows)]
    const TERMINAL_OPERATIONS: [&str; 4] = ["run_command", "read_output", "list_sessions", "kill_session"];

    const FILE_OPERATIONS: [&str; 14] = [
        "read_file",
        "list_dir",
        "file_search",
        "grep_search",
        "create_file",
        "replace_string",
        "multi_replace",
        "insert_lines",
        "apply_patch",
        "rename_file",
        "delete_file",
        "create_directory",
        "undo",
        "changes",
    ];

    const RECORD_OPERATIONS: [&str; 10] = [
        "todo_read",
        "todo_write",
        "todo_add",
        "todo_update",
        "memory_store",
        "memory_search",
        "memory_get",
        "memory_update",
        "memory_delete",
        "memory_list_collections",
    ];

    #[test]
    fn every_layout_lists_flat_deterministic_tools() {
        for layout in [ToolLayout::Consolidated, ToolLayout::Granular] {
            let first = specs(layout, Listing::PUBLISHED).unwrap();
            assert_eq!(first, specs(layout, Listing::PUBLISHED).unwrap());
            for tool in &first {
                schema::check_flat(&tool.input_schema).unwrap();
                schema::check_flat(&tool.output_schema).unwrap();
            }
        }
        let granular = specs(ToolLayout::Granular, Listing::PUBLISHED).unwrap();
        let names: Vec<&str> = granular.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, [&FILE_OPERATIONS[..], &TERMINAL_OPERATIONS[..], &RECORD_OPERATIONS[..]].concat());
        for tool in &granular {
            let reads = matches!(
                tool.name.as_str(),
                "read_file"
                    | "list_dir"
                    | "file_search"
                    | "grep_search"
                    | "changes"
                    | "read_output"
                    | "list_sessions"
                    | "todo_read"
                    | "memory_search"
                    | "memory_get"
                    | "memory_list_collections"
            );
            assert_eq!(tool.annotations.read_only_hint, reads, "{}", tool.name);
            let adds = matches!(tool.name.as_str(), "create_directory" | "todo_add" | "memory_store");
            assert_eq!(tool.annotations.destructive_hint, !reads && !adds, "{}", tool.name);
            let exec = TERMINAL_OPERATIONS.contains(&tool.name.as_str()) && !reads;
            assert_eq!(tool.annotations.open_world_hint, exec, "{}", tool.name);
        }
        assert_eq!(granular[0].title, "Read file");
    }

    #[test]
    fn consolidated_file_operations_shape() {
        let tools = specs(ToolLayout::Consolidated, Listing::PUBLISHED).unwrap();
        let file = &tools[0];
        assert_eq!(file.name, "file_operations");
        assert_eq!(file.input_schema["required"], json!(["operation"]));
        assert_eq!(file.input_schema["properties"]["operation"]["enum"], json!(FILE_OPERATIONS));
        assert!(file.description.contains("\n- read_file: Read numbered lines."), "{}", file.description);
        let operation = file.input_schema["properties"]["operation"]["description"].as_str().unwrap();
        assert!(operation.contains("read_file(path*,offset,limit); list_dir("), "{operation}");
        // Escalation is offered where there is a sandbox to go beyond: not on the records' tools.
        let offers = |tool: &ToolSpec| tool.input_schema["properties"].get("escalate").is_some();
        assert_eq!(tools.iter().map(offers).collect::<Vec<_>>(), [true, true, false, false]);
        assert!(
            !file.annotations.read_only_hint && file.annotations.destructive_hint && !file.annotations.idempotent_hint
        );
    }

    #[test]
    fn read_only_sandbox_lists_no_file_writes() {
        let tools = specs(ToolLayout::Consolidated, Listing { read_only: true, with_model: false }).unwrap();
        let file = &tools[0];
        let listed = &file.input_schema["properties"]["operation"]["enum"];
        assert_eq!(listed, &json!(["read_file", "list_dir", "file_search", "grep_search", "changes"]));
        assert!(file.annotations.read_only_hint);
        assert_eq!(tools[1].input_schema["properties"]["operation"]["enum"], json!(TERMINAL_OPERATIONS));
        let todo_ops = &tools[2].input_schema["properties"]["operation"]["enum"];
        assert_eq!(todo_ops, &json!(["read", "write", "add", "update"]), "todos are the server's records, not files");
        let granular = specs(ToolLayout::Granular, Listing { read_only: true, with_model: false }).unwrap();
        assert!(granular.iter().all(|t| t.name != "create_file" && t.name != "undo"));
    }

    #[test]
    fn accepted_fields_marks_required() {
        let schema = json!({"type": "object", "properties": {"path": {}, "limit": {}}, "required": ["path"]});
        assert_eq!(accepted_fields(schema.as_object().unwrap()), "`path` (required), `limit`");
    }
}
