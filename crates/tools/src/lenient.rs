//! Arguments as models send them. A consolidated tool publishes one merged schema, and models
//! fill in its fields: `null` for what they leave out, `1.0` for a line number, another
//! operation's fields at their defaults. The strict parse refuses all of that, so a call that
//! fails it is prepared here and parsed again: nulls are absent, whole numbers are integers
//! where the schema wants one, and fields of the tool's other operations are dropped when
//! empty or at a default. What is left that the operation does not take is refused, naming
//! the operations that do take it.

use serde_json::{Map, Value};

use crate::OperationDef;
use toolbelt_mcp_core::error::ToolError;

/// Fields every operation of the tool accepts (the gate reads them before the parse).
const COMMON: [&str; 2] = ["escalate", "justification"];

/// Prepares `args` of `op` for a second strict parse. `siblings` are the operations of the
/// same tool (empty in the granular layout, where every operation is a tool of its own).
pub(crate) fn prepare(
    op: &OperationDef,
    siblings: &[OperationDef],
    args: &mut Map<String, Value>,
) -> Result<(), ToolError> {
    args.retain(|_, value| !value.is_null());
    let own = (op.input_schema)();
    let own_fields = properties(&own);
    let mut foreign = Vec::new();
    for key in args.keys() {
        if own_fields.contains_key(key) || COMMON.contains(&key.as_str()) {
            continue;
        }
        let takers: Vec<(&'static str, Option<Value>)> = siblings
            .iter()
            .filter(|other| other.name != op.name)
            .filter_map(|other| {
                let schema = (other.input_schema)();
                properties(&schema).get(key).map(|field| (other.name, field.get("default").cloned()))
            })
            .collect();
        if takers.is_empty() {
            continue; // No operation has it: the strict parse names it as unknown.
        }
        foreign.push((key.clone(), takers));
    }
    for (key, takers) in foreign {
        let value = &args[&key];
        let harmless = is_empty(value) || takers.iter().any(|(_, default)| default.as_ref() == Some(value));
        if harmless {
            args.remove(&key);
            continue;
        }
        let names: Vec<String> = takers.iter().map(|(name, _)| format!("`{name}`")).collect();
        return Err(ToolError::InvalidArguments {
            operation: op.name,
            message: format!("`{key}` = {value} is a field of {}, not of `{}`", names.join(", "), op.name),
            accepted: super::spec::accepted_fields(&own),
        });
    }
    whole_numbers(args, &own_fields);
    Ok(())
}

/// An object schema's properties (empty when it has none).
fn properties(schema: &Map<String, Value>) -> Map<String, Value> {
    schema.get("properties").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// What a model sends for "nothing": `false`, `0`, `""`, `[]`, `{}`.
fn is_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
    }
}

/// Turns `2.0` into `2` wherever `fields` (a properties map) wants an integer, inside arrays
/// of objects too; nulls inside objects become absent fields.
fn whole_numbers(args: &mut Map<String, Value>, fields: &Map<String, Value>) {
    for (key, value) in args.iter_mut() {
        if let Some(field) = fields.get(key) {
            coerce(value, field);
        }
    }
}

fn coerce(value: &mut Value, field: &Value) {
    match (value, field.get("type").and_then(Value::as_str)) {
        (value @ Value::Number(_), Some("integer")) => {
            if let Some(whole) = value.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15) {
                *value = Value::from(whole as i64);
            }
        }
        (Value::Array(items), Some("array")) => {
            if let Some(item) = field.get("items") {
                items.iter_mut().for_each(|v| coerce(v, item));
            }
        }
        (Value::Object(inner), Some("object")) => {
            inner.retain(|_, v| !v.is_null());
            whole_numbers(inner, &field.get("properties").and_then(Value::as_object).cloned().unwrap_or_default());
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::file::TOOL;

    fn op(name: &str) -> &'static OperationDef {
        TOOL.operations.iter().find(|op| op.name == name).unwrap()
    }

    fn prepared(name: &str, args: Value) -> Result<Value, String> {
        let mut map = args.as_object().unwrap().clone();
        prepare(op(name), TOOL.operations, &mut map).map_err(|e| e.to_string())?;
        Ok(Value::Object(map))
    }

    #[test]
    fn other_operations_fields_at_their_defaults_are_dropped() {
        let sloppy = json!({"path": "x", "overwrite": false, "depth": 1, "respect_gitignore": true, "content": "", "escalate": null});
        assert_eq!(prepared("read_file", sloppy).unwrap(), json!({"path": "x"}));
        let err = prepared("read_file", json!({"path": "x", "overwrite": true})).unwrap_err();
        assert!(
            err.contains("`overwrite` = true is a field of `create_file`, `rename_file`, not of `read_file`"),
            "{err}"
        );
        assert!(err.contains("Accepted fields: `path` (required), `offset`, `limit`"), "{err}");
        assert_eq!(prepared("read_file", json!({"path": "x", "bogus": 1})).unwrap()["bogus"], 1, "left to the parse");
    }

    #[test]
    fn whole_numbers_become_integers_and_nulls_absent() {
        assert_eq!(
            prepared("read_file", json!({"path": "x", "offset": 1.0, "limit": null})).unwrap(),
            json!({"path": "x", "offset": 1})
        );
        assert_eq!(
            prepared("read_file", json!({"path": "x", "offset": 1.5})).unwrap()["offset"],
            1.5,
            "a fraction stays, and fails"
        );
        let edits = json!({"path": "x", "edits": [{"old_string": "a", "new_string": "b", "replace_all": null}]});
        assert_eq!(prepared("multi_replace", edits).unwrap()["edits"], json!([{"old_string": "a", "new_string": "b"}]));
    }
}
