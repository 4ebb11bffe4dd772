//! The lean view of a structured result: what a model acts on and nothing more. Claude Code,
//! Codex, Copilot CLI and opencode hand the model only `JSON.stringify(structuredContent)`,
//! so every field there is paid for on every later turn. A result leaves out the operation's
//! name, whatever is `false`, empty or the usual value, and what only a program needs
//! (hashes, byte counts, timings); an array of lines becomes one text. `details: true` gives
//! the whole record (what the audit log and programs read), and the published `outputSchema`
//! describes both: no field of it is required, and each joined text is a property of its own.

use serde_json::{Map, Value};

/// How an operation's structured result is trimmed for the model.
#[derive(Debug, Clone, Copy)]
pub struct Lean {
    /// Fields only a program needs (hashes, byte counts, timings), left out.
    pub details: &'static [&'static str],
    /// Fields left out when they hold this value (as JSON text): the usual one, which the
    /// operation's description states. A field of each row of an array is `rows[].field`, of
    /// an object `object.field`, and every field of an object `object.*`.
    pub usual: &'static [(&'static str, &'static str)],
    /// Fields left out when another is there that says the same (`(field, the other)`).
    pub shadowed: &'static [(&'static str, &'static str)],
    /// Arrays of lines given as one text, each line ending with a newline: `(array, text)`.
    pub joined: &'static [(&'static str, &'static str)],
    /// The joined diff is of one file, named by `path` already: its `---`/`+++` lines go.
    pub one_file_diff: bool,
}

impl Lean {
    /// Only the rules every result follows.
    pub const PLAIN: Self = Self { details: &[], usual: &[], shadowed: &[], joined: &[], one_file_diff: false };
}

/// Trims `structured` (a finished result) to its lean view.
pub(crate) fn apply(structured: &mut Map<String, Value>, lean: &Lean) {
    structured.shift_remove("operation");
    for field in lean.details {
        structured.shift_remove(*field);
    }
    for (field, usual) in lean.usual {
        if let Ok(usual) = serde_json::from_str::<Value>(usual) {
            drop_usual(structured, field, &usual);
        }
    }
    for (field, other) in lean.shadowed {
        if structured.get(*other).is_some_and(|value| !empty(value)) {
            structured.shift_remove(*field);
        }
    }
    for (array, text) in lean.joined {
        if let Some(Value::Array(lines)) = structured.shift_remove(*array) {
            let mut joined = String::with_capacity(lines.iter().map(|l| l.as_str().map_or(0, str::len) + 1).sum());
            let header = |line: &str| line.starts_with("--- ") || line.starts_with("+++ ");
            let skip = if lean.one_file_diff {
                lines.iter().take(2).filter(|l| l.as_str().is_some_and(header)).count()
            } else {
                0
            };
            for line in &lines[skip..] {
                joined.push_str(line.as_str().unwrap_or_default());
                joined.push('\n');
            }
            structured.insert((*text).into(), Value::String(joined));
        }
    }
    structured.retain(|_, value| !empty(value));
    // Rows: each object in an array says nothing twice either.
    for value in structured.values_mut() {
        if let Value::Array(rows) = value {
            for row in rows {
                if let Value::Object(fields) = row {
                    fields.retain(|_, value| !empty(value));
                }
            }
        }
    }
}

/// Leaves out what `path` names (see [`Lean::usual`]) where it holds `usual`.
fn drop_usual(map: &mut Map<String, Value>, path: &str, usual: &Value) {
    if let Some((rows, rest)) = path.split_once("[].") {
        if let Some(Value::Array(items)) = map.get_mut(rows) {
            for item in items {
                if let Value::Object(row) = item {
                    drop_usual(row, rest, usual);
                }
            }
        }
    } else if let Some((object, rest)) = path.split_once('.') {
        if let Some(Value::Object(inner)) = map.get_mut(object) {
            if rest == "*" {
                inner.retain(|_, value| value != usual);
            } else {
                drop_usual(inner, rest, usual);
            }
        }
    } else if map.get(path) == Some(usual) {
        map.shift_remove(path);
    }
}

/// Whether a value says nothing: `false`, `null`, `""`, `[]` or `{}`.
fn empty(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => true,
        Value::String(text) => text.is_empty(),
        Value::Array(items) => items.is_empty(),
        Value::Object(fields) => fields.is_empty(),
        Value::Bool(true) | Value::Number(_) => false,
    }
}

/// Makes a published output schema describe the lean view as well as the whole record: no
/// field required (any may be left out), and each joined text a string property beside its
/// array.
pub(crate) fn publish(schema: &mut Map<String, Value>, lean: &Lean) {
    schema.remove("required");
    let Some(Value::Object(props)) = schema.get_mut("properties") else { return };
    for (array, text) in lean.joined {
        let what = props
            .get(*array)
            .and_then(|field| field.get("description"))
            .and_then(Value::as_str)
            .unwrap_or("the lines")
            .trim_end_matches('.')
            .to_string();
        let description = format!("{what}, as one text (the lean view; `details: true` gives `{array}` as an array).");
        props.insert((*text).into(), serde_json::json!({"type": "string", "description": description}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const READ: Lean = Lean {
        details: &["sha256", "size"],
        usual: &[("kind", "\"text\""), ("line_endings", "\"lf\"")],
        shadowed: &[("file_matches", "lines")],
        joined: &[("lines", "text")],
        one_file_diff: false,
    };

    #[test]
    fn the_lean_view_keeps_what_a_model_acts_on() {
        let mut structured = json!({
            "operation": "read_file", "path": "README.md", "kind": "text", "size": 32, "sha256": "61ed",
            "total_lines": 3, "line_endings": "lf", "lines": ["1\t# Demo", "2\tx"], "truncated": false,
            "exit_code": 0, "file_matches": [{"path": "a"}], "empty": [], "note": "",
        });
        let Value::Object(map) = &mut structured else { unreachable!() };
        apply(map, &READ);
        assert_eq!(
            structured,
            json!({"path": "README.md", "total_lines": 3, "text": "1\t# Demo\n2\tx\n", "exit_code": 0})
        );
    }

    #[test]
    fn an_unusual_value_and_a_cut_result_stay() {
        let mut structured =
            json!({"kind": "image", "line_endings": "crlf", "truncated": true, "file_matches": [{"path": "a"}]});
        let Value::Object(map) = &mut structured else { unreachable!() };
        apply(map, &READ);
        assert_eq!(
            structured,
            json!({"kind": "image", "line_endings": "crlf", "truncated": true, "file_matches": [{"path": "a"}]})
        );
    }

    #[test]
    fn rows_lose_their_usual_and_empty_fields() {
        const TODOS: Lean = Lean {
            details: &[],
            usual: &[("todos[].priority", "\"medium\""), ("counts.*", "0")],
            shadowed: &[],
            joined: &[],
            one_file_diff: false,
        };
        let mut structured = json!({
            "counts": {"total": 2, "completed": 0, "in_progress": 1},
            "todos": [
                {"id": 1, "title": "a", "priority": "medium", "dependencies": []},
                {"id": 2, "title": "b", "priority": "high", "dependencies": [1], "blocked": false},
            ],
        });
        let Value::Object(map) = &mut structured else { unreachable!() };
        apply(map, &TODOS);
        assert_eq!(
            structured,
            json!({
                "counts": {"total": 2, "in_progress": 1},
                "todos": [{"id": 1, "title": "a"}, {"id": 2, "title": "b", "priority": "high", "dependencies": [1]}],
            })
        );
    }

    #[test]
    fn a_one_file_diff_loses_its_header_lines() {
        const EDIT: Lean =
            Lean { details: &[], usual: &[], shadowed: &[], joined: &[("diff", "patch")], one_file_diff: true };
        let mut structured = json!({"path": "a.py", "diff": ["--- a/a.py", "+++ b/a.py", "@@ -1 +1 @@", "-x", "+y"]});
        let Value::Object(map) = &mut structured else { unreachable!() };
        apply(map, &EDIT);
        assert_eq!(structured, json!({"path": "a.py", "patch": "@@ -1 +1 @@\n-x\n+y\n"}));
    }

    #[test]
    fn the_published_schema_describes_both_views() {
        let mut schema = json!({
            "type": "object",
            "properties": {"lines": {"type": "array", "items": {"type": "string"}, "description": "The window's lines."}},
            "required": ["lines"],
        });
        let Value::Object(map) = &mut schema else { unreachable!() };
        publish(map, &READ);
        assert!(map.get("required").is_none());
        assert_eq!(map["properties"]["text"]["type"], "string");
        assert!(
            map["properties"]["text"]["description"].as_str().unwrap().starts_with("The window's lines, as one text")
        );
    }
}
