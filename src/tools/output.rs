//! What an operation returns, and the output budget every result is held to.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::ToolError;

/// An operation's result before the budget: text for the model, structured data for programs.
pub struct Reply<O> {
    /// The text the model reads.
    pub text: String,
    /// Metadata and compact rows (never a second copy of large text in `text`).
    pub data: O,
    /// Images, returned as MCP image content after the text.
    pub images: Vec<Image>,
    /// Whether the operation already left something out (e.g. a line window cut short).
    pub truncated: bool,
    /// A failure that still carries a full result (a command that exited non-zero).
    pub is_error: bool,
}

/// An image as MCP image content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// e.g. `image/png`.
    pub mime_type: &'static str,
    /// The image bytes, base64.
    pub base64: String,
}

/// A finished, budget-checked tool result, free of any protocol type.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    /// The text content.
    pub text: String,
    /// The `structuredContent` object: `operation`, the operation's fields, `truncated`.
    pub structured: Map<String, Value>,
    /// Image contents.
    pub images: Vec<Image>,
    /// Whether the result reports a failure (`isError`) while carrying its data.
    pub is_error: bool,
}

impl<O: Serialize> Reply<O> {
    /// A text reply with its structured data.
    pub fn new(text: String, data: O) -> Self {
        Self { text, data, images: Vec::new(), truncated: false, is_error: false }
    }

    /// Applies the output budget to the text and builds the structured object.
    pub fn finish(self, operation: &'static str, budget: usize) -> Result<ToolOutput, ToolError> {
        let fields = match serde_json::to_value(self.data) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(ToolError::Internal(format!("`{operation}` produced non-object data `{other}`")));
            }
            Err(err) => {
                return Err(ToolError::Internal(format!("`{operation}` data did not serialise: {err}")));
            }
        };
        let (text, cut) = cut_to_budget(self.text, budget);
        let mut structured = Map::with_capacity(fields.len() + 2);
        structured.insert("operation".into(), Value::from(operation));
        // Published schemas have no nullable types (hosts reject them), so an absent value is
        // an absent field: a `null` would fail clients that validate against `outputSchema`.
        structured.extend(fields.into_iter().filter(|(_, value)| !value.is_null()).map(|(key, mut value)| {
            drop_nulls(&mut value);
            (key, value)
        }));
        structured.insert("truncated".into(), Value::Bool(self.truncated || cut));
        Ok(ToolOutput { text, structured, images: self.images, is_error: self.is_error })
    }
}

/// Removes `null` fields from every object inside `value` (rows, items), as from the top.
fn drop_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, field| !field.is_null());
            map.values_mut().for_each(drop_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_nulls),
        _ => {}
    }
}

/// Keeps at most `budget` bytes of `text` (on a character boundary), saying what was cut.
pub fn cut_to_budget(text: String, budget: usize) -> (String, bool) {
    if text.len() <= budget {
        return (text, false);
    }
    // The marker is under 200 bytes whatever the numbers, so the result stays within budget.
    let mut end = budget.saturating_sub(200);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let marker = format!(
        "\n… [output cut: {end} of {} bytes shown; narrow the request (offset/limit, a smaller path, a glob) to see the rest]",
        text.len()
    );
    let mut cut = text;
    cut.truncate(end);
    cut.push_str(&marker);
    (cut, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Data {
        count: u32,
        absent: Option<u32>,
    }

    #[test]
    fn finish_orders_fields_and_keeps_budget() {
        let out = Reply::new("é".repeat(5000), Data { count: 3, absent: None }).finish("op", 2000).unwrap();
        assert!(out.text.len() <= 2000, "{}", out.text.len());
        let shown = out.text.find("\n…").unwrap();
        assert!(out.text.contains(&format!("output cut: {shown} of 10000 bytes shown")), "{}", out.text);
        let keys: Vec<&String> = out.structured.keys().collect();
        assert_eq!(keys, ["operation", "count", "truncated"]);
        assert_eq!(out.structured["truncated"], true);
        let nested = Reply::new(String::new(), serde_json::json!({"rows": [{"a": 1, "b": null}], "c": {"d": null}}));
        let nested = nested.finish("op", 2000).unwrap();
        assert_eq!(
            Value::Object(nested.structured),
            serde_json::json!({"operation": "op", "rows": [{"a": 1}], "c": {}, "truncated": false})
        );
        let small = Reply::new("hi".into(), Data { count: 1, absent: None }).finish("op", 2000).unwrap();
        assert_eq!((small.text.as_str(), &small.structured["truncated"]), ("hi", &Value::Bool(false)));
    }
}
