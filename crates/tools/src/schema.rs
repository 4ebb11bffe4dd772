//! JSON Schemas for tools: schemars output turned into the one flat shape every host
//! accepts (no combinators, `$ref`, `format`, or type arrays), and merged per tool.

use schemars::JsonSchema;
use schemars::generate::{Contract, SchemaSettings};
use serde_json::{Map, Value, json};

/// Keys no published schema may contain anywhere (hosts reject them: see DESIGN.md §3).
const FORBIDDEN_KEYS: &[&str] =
    &["oneOf", "anyOf", "allOf", "not", "$ref", "$defs", "definitions", "format", "if", "then", "else", "nullable"];

/// A problem building a tool's schema; the golden test keeps these from shipping.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// Two operations declare the same field with different types.
    #[error(
        "field `{field}` has type {first} in one operation and {second} in `{operation}`; give it one type or rename it"
    )]
    Conflict {
        /// The field.
        field: String,
        /// The schema first seen.
        first: String,
        /// The other schema.
        second: String,
        /// The operation that disagrees.
        operation: &'static str,
    },
    /// The transform left a construct hosts reject.
    #[error("schema is not flat at `{at}`: {problem}")]
    NotFlat {
        /// JSON pointer-like location.
        at: String,
        /// What was found.
        problem: String,
    },
}

/// The schema of `T` as deserialised from arguments, flattened.
pub fn input_schema<T: JsonSchema>() -> Map<String, Value> {
    generate::<T>(Contract::Deserialize)
}

/// The schema of `T` as serialised into `structuredContent`, flattened.
pub fn output_schema<T: JsonSchema>() -> Map<String, Value> {
    generate::<T>(Contract::Serialize)
}

fn generate<T: JsonSchema>(contract: Contract) -> Map<String, Value> {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
        s.contract = contract;
    });
    let mut value = settings.into_generator().into_root_schema_for::<T>().to_value();
    flatten(&mut value);
    match value {
        Value::Object(mut map) => {
            // An operation without fields still lists (empty) properties.
            map.entry("properties").or_insert_with(|| Value::Object(Map::new()));
            map
        }
        _ => Map::new(),
    }
}

/// Rewrites schemars output in place into the flat dialect: nullable unions collapse to their
/// non-null branch, `null` leaves enums, and titles, formats, defaults and
/// `additionalProperties` go (the server validates strictly itself).
pub fn flatten(value: &mut Value) {
    let Value::Object(map) = value else { return };
    // A nullable field may be absent: results drop `null` fields (see `Reply::finish`).
    if let (Some(Value::Object(props)), Some(Value::Array(required))) = (map.get("properties"), map.get("required")) {
        let kept: Vec<Value> = required
            .iter()
            .filter(|name| name.as_str().and_then(|n| props.get(n)).is_none_or(|p| !is_nullable(p)))
            .cloned()
            .collect();
        map.insert("required".into(), Value::Array(kept));
    }
    for key in ["$schema", "title", "format", "$defs", "definitions", "additionalProperties"] {
        map.remove(key);
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = map.get(key) {
            let non_null: Vec<&Value> = branches.iter().filter(|b| !is_null_schema(b)).collect();
            if let [only] = non_null.as_slice() {
                let only = (*only).clone();
                map.remove(key);
                if let Value::Object(inner) = only {
                    for (k, v) in inner {
                        map.entry(k).or_insert(v);
                    }
                }
            }
        }
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(Value::Array(branches)) = map.get(key)
            && let Some((values, notes)) = literal_union(branches)
        {
            map.remove(key);
            map.insert("type".into(), json!("string"));
            map.insert("enum".into(), Value::Array(values));
            // The field's own description says what matters; the values' docs stand in only
            // when it has none (the enum lists the values either way).
            if !map.contains_key("description") && !notes.is_empty() {
                map.insert("description".into(), Value::String(notes));
            }
        }
    }
    if let Some(Value::Array(types)) = map.get("type") {
        let non_null: Vec<Value> = types.iter().filter(|t| t.as_str() != Some("null")).cloned().collect();
        if let [only] = non_null.as_slice() {
            map.insert("type".into(), only.clone());
        }
    }
    if let Some(Value::Array(options)) = map.get_mut("enum") {
        options.retain(|o| !o.is_null());
    }
    if map.get("const").is_some_and(Value::is_string)
        && !map.contains_key("enum")
        && let Some(c) = map.remove("const")
    {
        map.insert("enum".into(), Value::Array(vec![c]));
    }
    // Unsigned integers: `minimum: 0` says nothing a model needs, and every byte of a listing
    // counts (hosts cut long schemas; clients compile them).
    if map.get("minimum").and_then(Value::as_u64) == Some(0) {
        map.remove("minimum");
    }
    for (key, child) in map.iter_mut() {
        match child {
            // Its keys are field names (a field may be called `title`), its values schemas.
            Value::Object(fields) if key == "properties" => fields.values_mut().for_each(flatten),
            // An array's items: the field's own description says what they are.
            Value::Object(items) if key == "items" => {
                items.remove("description");
                flatten(child);
            }
            Value::Object(_) => flatten(child),
            Value::Array(items) => items.iter_mut().for_each(flatten),
            _ => {}
        }
    }
}

/// A union of string literals (documented enum variants) as its values and their docs:
/// `[{"const": "path", "description": "By path."}, …]` → `(["path", …], "`path`: By path.; …")`.
fn literal_union(branches: &[Value]) -> Option<(Vec<Value>, String)> {
    let mut values = Vec::new();
    let mut notes = Vec::new();
    for branch in branches.iter().filter(|b| !is_null_schema(b)) {
        let literal = match (branch.get("const"), branch.get("enum").and_then(Value::as_array)) {
            (Some(c), _) if c.is_string() => c.clone(),
            (None, Some(options)) if options.len() == 1 && options[0].is_string() => options[0].clone(),
            _ => return None,
        };
        if let Some(doc) = branch.get("description").and_then(Value::as_str) {
            notes.push(format!("`{}`: {doc}", literal.as_str().unwrap_or_default()));
        }
        values.push(literal);
    }
    (!values.is_empty()).then(|| (values, notes.join("; ")))
}

/// Whether a schema admits `null` (a type list with `null`, or a union with a null branch).
fn is_nullable(schema: &Value) -> bool {
    let typed = schema.get("type").and_then(Value::as_array).is_some_and(|t| t.iter().any(|t| t == "null"));
    let union = ["anyOf", "oneOf"]
        .iter()
        .filter_map(|key| schema.get(*key).and_then(Value::as_array))
        .any(|branches| branches.iter().any(is_null_schema));
    typed || union
}

fn is_null_schema(value: &Value) -> bool {
    value.get("type").and_then(Value::as_str) == Some("null")
}

/// One operation's part in a merged tool schema.
pub struct Part<'a> {
    /// The operation name.
    pub operation: &'static str,
    /// Its flattened object schema.
    pub schema: &'a Map<String, Value>,
}

/// A field of a merged schema: its schema without description, and who uses it how.
struct Field {
    name: String,
    schema: Map<String, Value>,
    users: Vec<(&'static str, String)>,
}

/// Merges operations' object schemas into one flat tool schema: `operation` (a required
/// string enum) first, then every field in first-seen order, optional, with a description
/// naming the operations that use it.
pub fn merge(
    parts: &[Part<'_>],
    operation_description: &str,
    extra_required: &[&str],
) -> Result<Map<String, Value>, SchemaError> {
    let names: Vec<Value> = parts.iter().map(|p| json!(p.operation)).collect();
    let mut properties = Map::new();
    properties
        .insert("operation".into(), json!({"type": "string", "enum": names, "description": operation_description}));
    let mut fields: Vec<Field> = Vec::new();
    for part in parts {
        let Some(Value::Object(props)) = part.schema.get("properties") else {
            continue;
        };
        for (name, schema) in props {
            let mut schema = schema.as_object().cloned().unwrap_or_default();
            strip_defaults(&mut schema);
            let description = match schema.remove("description") {
                Some(Value::String(d)) => d,
                _ => String::new(),
            };
            match fields.iter_mut().find(|f| &f.name == name) {
                Some(Field { schema: existing, users, .. }) => {
                    if *existing != schema {
                        return Err(SchemaError::Conflict {
                            field: name.clone(),
                            first: Value::Object(existing.clone()).to_string(),
                            second: Value::Object(schema).to_string(),
                            operation: part.operation,
                        });
                    }
                    users.push((part.operation, description));
                }
                None => fields.push(Field { name: name.clone(), schema, users: vec![(part.operation, description)] }),
            }
        }
    }
    for Field { name, mut schema, users } in fields {
        schema.insert("description".into(), Value::String(describe_users(&users)));
        properties.insert(name, Value::Object(schema));
    }
    let mut required = vec![json!("operation")];
    required.extend(extra_required.iter().map(|r| json!(r)));
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    root.insert("properties".into(), Value::Object(properties));
    root.insert("required".into(), Value::Array(required));
    Ok(root)
}

/// The text once when the operations agree (the `operation` field says which take it), else
/// one clause per distinct text: "[a, b] text. [c] other."
fn describe_users(users: &[(&'static str, String)]) -> String {
    let mut groups: Vec<(Vec<&str>, &str)> = Vec::new();
    for (op, text) in users {
        match groups.iter_mut().find(|(_, t)| *t == text.as_str()) {
            Some((ops, _)) => ops.push(op),
            None => groups.push((vec![op], text)),
        }
    }
    match groups.as_slice() {
        [(_, text)] => (*text).to_string(),
        _ => groups.iter().map(|(ops, text)| format!("[{}] {text}", ops.join(", "))).collect::<Vec<_>>().join(" "),
    }
}

/// Removes `default` everywhere: the descriptions say it, and the server keeps it only to
/// tell a harmless field of another operation (see `tools::lenient`).
pub fn strip_defaults(schema: &mut Map<String, Value>) {
    schema.remove("default");
    for child in schema.values_mut() {
        match child {
            Value::Object(inner) => strip_defaults(inner),
            Value::Array(items) => items.iter_mut().filter_map(Value::as_object_mut).for_each(strip_defaults),
            _ => {}
        }
    }
}

/// Reduces an output schema to its outline: each top-level field with its type and nothing
/// more (no descriptions, no item types, no nested fields). Hosts validate results against it
/// and clients compile it, so its size is paid at every start; the fields are documented in
/// full in docs/TOOLS.md.
pub fn outline(schema: &mut Map<String, Value>) {
    schema.remove("description");
    let Some(Value::Object(props)) = schema.get_mut("properties") else { return };
    for field in props.values_mut() {
        if let Value::Object(field) = field {
            field.retain(|key, _| key == "type");
        }
    }
}

/// Fails if `schema` holds anything a host might reject: see [`FORBIDDEN_KEYS`], type
/// arrays, or a root that is not an object with `properties`.
pub fn check_flat(schema: &Map<String, Value>) -> Result<(), SchemaError> {
    if schema.get("type").and_then(Value::as_str) != Some("object") || !schema.contains_key("properties") {
        return Err(SchemaError::NotFlat {
            at: "/".into(),
            problem: "root must be `type: object` with `properties`".into(),
        });
    }
    check_node(&Value::Object(schema.clone()), "")
}

fn check_node(value: &Value, at: &str) -> Result<(), SchemaError> {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let is_schema_keyword = !at.ends_with("/properties");
                if is_schema_keyword && FORBIDDEN_KEYS.contains(&key.as_str()) {
                    return Err(SchemaError::NotFlat {
                        at: format!("{at}/{key}"),
                        problem: format!("`{key}` is not allowed"),
                    });
                }
                if is_schema_keyword && key == "type" && !child.is_string() {
                    return Err(SchemaError::NotFlat {
                        at: format!("{at}/type"),
                        problem: "type must be a single string".into(),
                    });
                }
                check_node(child, &format!("{at}/{key}"))?;
            }
            Ok(())
        }
        Value::Array(items) => items.iter().enumerate().try_for_each(|(i, v)| check_node(v, &format!("{at}/{i}"))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(dead_code)]
    #[derive(JsonSchema, serde::Deserialize)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        /// Quickly.
        Fast,
        /// Carefully.
        Slow,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        /// The path.
        path: String,
        /// How many.
        limit: Option<u64>,
        /// Which way.
        mode: Option<Mode>,
        /// Items.
        items: Option<Vec<Item>>,
    }

    #[allow(dead_code)]
    #[derive(JsonSchema, serde::Deserialize)]
    struct Item {
        /// A flag.
        flag: Option<bool>,
        /// A field named like a schema keyword.
        title: String,
    }

    #[test]
    fn flattens_schemars_output() {
        let schema = input_schema::<Sample>();
        check_flat(&schema).unwrap();
        let props = &schema["properties"];
        assert_eq!(props["limit"], json!({"type": "integer", "description": "How many."}));
        assert_eq!(props["mode"]["type"], "string");
        assert_eq!(props["mode"]["enum"], json!(["fast", "slow"]));
        assert_eq!(props["mode"]["description"], "Which way.", "the enum lists the values");
        assert_eq!(props["items"]["items"]["properties"]["flag"]["type"], "boolean");
        assert_eq!(props["items"]["items"]["properties"]["title"]["type"], "string", "fields keep keyword names");
        assert_eq!(props["items"]["items"]["required"], json!(["title"]));
        assert_eq!(schema["required"], json!(["path"]));
    }

    #[test]
    fn merge_names_users_and_rejects_conflicts() {
        let a = input_schema::<Sample>();
        let b: Map<String, Value> = serde_json::from_value(json!({
            "type": "object", "properties": {"path": {"type": "string", "description": "Other."}}
        }))
        .unwrap();
        let merged =
            merge(&[Part { operation: "a", schema: &a }, Part { operation: "b", schema: &b }], "op", &[]).unwrap();
        check_flat(&merged).unwrap();
        assert_eq!(merged["properties"]["path"]["description"], "[a] The path. [b] Other.");
        assert_eq!(merged["properties"]["limit"]["description"], "How many.");
        assert_eq!(merged["properties"]["operation"]["enum"], json!(["a", "b"]));
        let keys: Vec<&String> = merged["properties"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["operation", "path", "limit", "mode", "items"]);
        let c: Map<String, Value> =
            serde_json::from_value(json!({"type": "object", "properties": {"path": {"type": "integer"}}})).unwrap();
        let d: Map<String, Value> = serde_json::from_value(
            json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}}}),
        )
        .unwrap();
        let err = merge(&[Part { operation: "a", schema: &a }, Part { operation: "d", schema: &d }], "op", &[]);
        assert!(err.unwrap_err().to_string().contains("field `items`"), "arrays of different items conflict");
        assert!(merge(&[Part { operation: "a", schema: &a }, Part { operation: "c", schema: &c }], "op", &[]).is_err());
    }

    #[test]
    fn outline_keeps_each_top_level_field_with_its_type_only() {
        let mut schema: Map<String, Value> = serde_json::from_value(json!({
            "type": "object", "description": "result",
            "properties": {
                "lines": {"type": "array", "items": {"type": "string"}, "description": "the lines"},
                "rows": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}},
                "total": {"type": "integer", "minimum": 0, "description": "how many"}
            },
            "required": ["total"]
        }))
        .unwrap();
        outline(&mut schema);
        assert_eq!(
            Value::Object(schema),
            json!({
                "type": "object",
                "properties": {"lines": {"type": "array"}, "rows": {"type": "array"}, "total": {"type": "integer"}},
                "required": ["total"]
            })
        );
    }

    #[test]
    fn check_flat_catches_each_forbidden_form() {
        let bad = [
            json!({"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}),
            json!({"type": "object", "properties": {"a": {"type": ["string", "null"]}}}),
            json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/x"}}}),
            json!({"type": "object", "properties": {"a": {"type": "integer", "format": "uint64"}}}),
            json!({"oneOf": [], "type": "object", "properties": {}}),
            json!({"type": "object"}),
        ];
        for schema in bad {
            assert!(check_flat(schema.as_object().unwrap()).is_err(), "{schema}");
        }
        // A *property* named like a keyword is fine.
        let ok = json!({"type": "object", "properties": {"format": {"type": "string"}}});
        check_flat(ok.as_object().unwrap()).unwrap();
    }
}
