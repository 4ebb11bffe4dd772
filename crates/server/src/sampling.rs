//! The calling client's model, for `delegate`: `sampling/createMessage` with tools (SEP-1577)
//! sent to the client directly, or, in a call that became a task, put as the task's input
//! request (`input_required` until `tasks/update` brings the client's result). The agent
//! layer gives and takes JSON; the protocol's types are named here only.

#![allow(deprecated, reason = "sampling is deprecated by SEP-2577 but current hosts still offer it")]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use rmcp::model::{ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, InputRequest};
use rmcp::{Peer, RoleServer};
use serde_json::Value;
use toolbelt_mcp_agent::delegate::Sample;

use crate::tasks::Slot;

/// Whether a client's capabilities offer sampling with tools.
pub(crate) fn offers_tools(capabilities: &ClientCapabilities) -> bool {
    capabilities.sampling.as_ref().is_some_and(|sampling| sampling.tools.is_some())
}

/// Samples by asking the client over its connection.
pub(crate) fn direct(peer: Peer<RoleServer>) -> Sample {
    Arc::new(move |params: Value| {
        let peer = peer.clone();
        Box::pin(async move {
            let params = parse(params)?;
            let result =
                peer.create_message(params).await.map_err(|err| format!("`sampling/createMessage` failed: {err}"))?;
            serde_json::to_value(result).map_err(|err| err.to_string())
        })
    })
}

/// Samples through the task the call became: each request is an input request of its own.
pub(crate) fn in_task(slot: Slot) -> Sample {
    let asked = Arc::new(AtomicUsize::new(0));
    Arc::new(move |params: Value| {
        let (slot, key) = (slot.clone(), format!("sample-{}", asked.fetch_add(1, Ordering::Relaxed)));
        Box::pin(async move {
            let request = InputRequest::CreateMessage(CreateMessageRequest::new(parse(params)?));
            let Some(task) = slot.task().await else {
                return Err("the call is not a task, so the client cannot be asked to sample".to_string());
            };
            task.request_input(key, request).await.map_err(|_| "the task ended before the client sampled".to_string())
        })
    })
}

fn parse(params: Value) -> Result<CreateMessageRequestParams, String> {
    serde_json::from_value(params).map_err(|err| format!("cannot build the sampling request: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_params_are_a_sampling_request() {
        let params = serde_json::json!({
            "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                         {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}]},
                         {"role": "user", "content": [{"type": "tool_result", "toolUseId": "t", "content": [{"type": "text", "text": "ok"}], "isError": false}]}],
            "systemPrompt": "s", "maxTokens": 10, "tools": [{"name": "x", "description": "d", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": "auto"}
        });
        let parsed = parse(params).unwrap();
        assert!(parsed.validate().is_ok(), "{:?}", parsed.validate());
        assert_eq!(parsed.tools.map(|t| t.len()), Some(1));
        let caps: ClientCapabilities = serde_json::from_value(serde_json::json!({"sampling": {"tools": {}}})).unwrap();
        assert!(offers_tools(&caps));
        assert!(!offers_tools(&ClientCapabilities::default()));
    }
}
