//! Screening one incoming JSON-RPC message before rmcp sees it, as JSON-RPC 2.0 and MCP want:
//! invalid JSON is a parse error (-32700), and a batch, a `null` id, a wrong `jsonrpc` or a
//! shape no MCP message has is an invalid request (-32600), each answered with an error whose
//! `id` is the request's when readable, else `null`. (rmcp answers these over HTTP with `415`
//! and a text body, and on stdio stays silent on parse errors: see docs/ARCHITECTURE.md.)

use rmcp::model::{CallToolRequest, ClientJsonRpcMessage, JsonRpcMessage, JsonRpcRequest};
use serde_json::{Value, json};

/// JSON-RPC 2.0's code for invalid JSON.
pub(crate) const PARSE_ERROR: i64 = -32700;
/// JSON-RPC 2.0's code for a message that is not a valid request.
pub(crate) const INVALID_REQUEST: i64 = -32600;

/// Why a message was refused, ready to answer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rejection {
    /// The request's id, or `null` when it could not be read.
    pub id: Value,
    /// [`PARSE_ERROR`] or [`INVALID_REQUEST`].
    pub code: i64,
    /// What was wrong, and what to send instead.
    pub message: String,
    /// Whether the message was a request (a reply is owed); a notification or a response that
    /// is malformed gets none (JSON-RPC 2.0 §4.1), but unparseable input always gets one.
    pub owes_reply: bool,
}

impl Rejection {
    /// The JSON-RPC error answering it.
    pub(crate) fn to_json(&self) -> Value {
        json!({"jsonrpc": "2.0", "id": self.id, "error": {"code": self.code, "message": self.message}})
    }
}

/// The message in `bytes` if rmcp can take it; else why not.
pub(crate) fn screen(bytes: &[u8]) -> Result<ClientJsonRpcMessage, Rejection> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let value: Value = serde_json::from_slice(bytes).map_err(|err| Rejection {
        id: Value::Null,
        code: PARSE_ERROR,
        message: format!("parse error: the message is not valid JSON ({err}); send one JSON-RPC message per line"),
        owes_reply: true,
    })?;
    let invalid = |id: Value, owes_reply: bool, why: &str| Rejection {
        id,
        code: INVALID_REQUEST,
        message: format!("invalid request: {why}"),
        owes_reply,
    };
    let object = match &value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(invalid(
                Value::Null,
                true,
                "JSON-RPC batches are not supported (MCP removed them in 2025-06-18); send one message per request",
            ));
        }
        _ => return Err(invalid(Value::Null, true, "a JSON-RPC message is an object")),
    };
    let id = object.get("id");
    let readable = id.filter(|id| id.is_string() || id.is_i64() || id.is_u64()).cloned();
    let is_request = object.contains_key("method") && id.is_some();
    let owes_reply = is_request || (!object.contains_key("method") && !object.contains_key("result"));
    let echo = readable.clone().unwrap_or(Value::Null);
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(echo, owes_reply, "`jsonrpc` must be \"2.0\""));
    }
    if id.is_some() && readable.is_none() {
        return Err(invalid(Value::Null, owes_reply, "`id` must be a string or an integer (MCP forbids `null`)"));
    }
    if object.get("method").is_some_and(|method| !method.is_string()) {
        return Err(invalid(echo, owes_reply, "`method` must be a string"));
    }
    if is_request && let Some(call) = as_tool_call(object, &value) {
        return Ok(call);
    }
    serde_json::from_value(value).map_err(|err| invalid(echo, owes_reply, &format!("not an MCP message ({err})")))
}

/// A `tools/call` request (nearly every message of a session), read as one directly: rmcp's
/// `ClientRequest` is an untagged enum that tries thirteen other request types first and
/// writes an error for each (a quarter of a small call's work). `None` for anything else, and
/// for a call this cannot read, which the general path then reads or refuses as before.
fn as_tool_call(object: &serde_json::Map<String, Value>, value: &Value) -> Option<ClientJsonRpcMessage> {
    use serde::Deserialize;
    if object.get("method").and_then(Value::as_str) != Some("tools/call")
        || object.contains_key("result")
        || object.contains_key("error")
    {
        return None;
    }
    let call = JsonRpcRequest::<CallToolRequest>::deserialize(value).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest { jsonrpc: call.jsonrpc, id: call.id, request: call.request.into() }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(text: &str) -> Rejection {
        screen(text.as_bytes()).unwrap_err()
    }

    #[test]
    fn a_tool_call_read_directly_is_what_the_general_path_reads() {
        let calls = [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"file_operations"}}"#,
            r#"{"method":"tools/call","params":{"name":"t","arguments":{"operation":"read_file","path":"a","n":[1,2.5,null]}},"jsonrpc":"2.0","id":"x-1"}"#,
            r#"{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":"p","io.x/y":{"z":1}},"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","task":{"ttl":1000},"extra":true},"stray":1}"#,
            r#"{"jsonrpc":"2.0","id":3.0,"method":"tools/call","params":{"name":"t"}}"#,
        ];
        for text in calls {
            let value: Value = serde_json::from_str(text).unwrap();
            let general: Result<ClientJsonRpcMessage, _> = serde_json::from_value(value.clone());
            let direct = as_tool_call(value.as_object().unwrap(), &value);
            assert!(direct.is_some(), "{text}");
            assert_eq!(
                serde_json::to_value(direct.unwrap()).unwrap(),
                serde_json::to_value(general.unwrap()).unwrap(),
                "{text}"
            );
        }
        // What it cannot read goes the general way, with the general path's answer.
        for text in [
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t"},"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/list"}"#,
        ] {
            let value: Value = serde_json::from_str(text).unwrap();
            assert!(as_tool_call(value.as_object().unwrap(), &value).is_none(), "{text}");
        }
        assert!(
            screen(br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"t"},"result":{}}"#).is_err()
        );
    }

    #[test]
    fn bad_messages_get_the_errors_json_rpc_names() {
        let truncated = refused(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list""#);
        assert_eq!((truncated.code, truncated.id.clone(), truncated.owes_reply), (PARSE_ERROR, Value::Null, true));
        let batch = refused(r#"[{"jsonrpc":"2.0","id":7,"method":"tools/list"}]"#);
        assert!(batch.code == INVALID_REQUEST && batch.message.contains("batches are not supported"));
        let null_id = refused(r#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#);
        assert_eq!((null_id.code, null_id.id), (INVALID_REQUEST, Value::Null));
        let old = refused(r#"{"jsonrpc":"1.0","id":8,"method":"ping"}"#);
        assert_eq!((old.id.clone(), old.to_json()["error"]["code"].clone()), (json!(8), json!(-32600)));
        assert!(!refused(r#"{"jsonrpc":"1.0","method":"notifications/x"}"#).owes_reply, "a notification gets none");
        assert!(screen(br#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#).is_ok());
        assert!(screen(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"ping\"}").is_ok());
    }
}
