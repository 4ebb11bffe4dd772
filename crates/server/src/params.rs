//! Why the params of a request rmcp could not type were invalid: rmcp's request enum is
//! untagged, so a known method with bad params falls through to a custom request and its
//! serde error is lost. Parsing them again as the method's params recovers it.

use serde::de::DeserializeOwned;
use serde_json::Value;

/// Methods protocol 2026-07-28 removed (SEP-2575): method not found for a request of that era.
pub(crate) const REMOVED_IN_2026: [&str; 5] =
    ["initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"];

/// What was wrong with `params`, if `method` is one this server serves; `None` for a method
/// it does not serve (which stays "method not found", whatever its params).
#[allow(deprecated, reason = "logging/setLevel is deprecated by SEP-2577 but current hosts still send it")]
pub(crate) fn why_invalid(method: &str, params: Option<Value>) -> Option<String> {
    use rmcp::model::{
        CallToolRequestParams, CancelTaskParams, CompleteRequestParams, GetPromptRequestParams, GetTaskParams,
        InitializeRequestParams, PaginatedRequestParams, ReadResourceRequestParams, SetLevelRequestParams,
        SubscribeRequestParams, UpdateTaskParams,
    };
    Some(match method {
        "tools/call" => why::<CallToolRequestParams>(params),
        "resources/read" => why::<ReadResourceRequestParams>(params),
        "prompts/get" => why::<GetPromptRequestParams>(params),
        "completion/complete" => why::<CompleteRequestParams>(params),
        "resources/subscribe" | "resources/unsubscribe" => why::<SubscribeRequestParams>(params),
        "initialize" => why::<InitializeRequestParams>(params),
        "logging/setLevel" => why::<SetLevelRequestParams>(params),
        "tasks/get" => why::<GetTaskParams>(params),
        "tasks/update" => why::<UpdateTaskParams>(params),
        "tasks/cancel" => why::<CancelTaskParams>(params),
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            params.map_or_else(|| "not accepted".into(), |p| why::<PaginatedRequestParams>(Some(p)))
        }
        _ => return None,
    })
}

fn why<T: DeserializeOwned>(params: Option<Value>) -> String {
    match params {
        None => "`params` is required".into(),
        Some(params) => {
            serde_json::from_value::<T>(params).err().map_or_else(|| "not accepted".into(), |err| err.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn known_methods_say_what_is_wrong() {
        assert_eq!(why_invalid("tools/call", Some(json!({"arguments": {}}))).unwrap(), "missing field `name`");
        assert_eq!(why_invalid("resources/read", Some(json!({}))).unwrap(), "missing field `uri`");
        assert_eq!(why_invalid("tools/call", None).unwrap(), "`params` is required");
        assert!(why_invalid("logging/setLevel", Some(json!({"level": "loud"}))).unwrap().contains("unknown variant"));
        assert_eq!(why_invalid("prompts/get", Some(json!({}))).unwrap(), "missing field `name`");
        assert_eq!(why_invalid("tasks/get", Some(json!({}))).unwrap(), "missing field `taskId`");
        assert!(why_invalid("tasks/update", Some(json!({"taskId": 5}))).unwrap().contains("invalid type"));
        assert_eq!(why_invalid("no/such", None), None);
    }
}
