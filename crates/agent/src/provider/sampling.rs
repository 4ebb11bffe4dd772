//! The model of the MCP client that called `delegate`, through sampling with tools
//! (`sampling/createMessage`, SEP-1577): the conversation as sampling messages (`tool_use` and
//! `tool_result` blocks), the tools as MCP tools. The server sends the request (to the client
//! directly, or as a task's input request) and hands back the client's result; both are JSON
//! here, so this layer stays free of the protocol's types.

use std::sync::Arc;

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{Block, Finish, Message, Provider, ProviderError, Reply, Request, Role, Usage};

/// Output tokens per turn when the run sets none (the request requires a value).
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// Sends the params of one `sampling/createMessage` request; answers its result.
pub type Sample = Arc<dyn Fn(Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync>;

/// The client's model.
pub(crate) struct Sampling {
    sample: Sample,
}

impl Sampling {
    /// A provider sampling through `sample`.
    pub(crate) fn new(sample: Sample) -> Self {
        Self { sample }
    }
}

impl Provider for Sampling {
    fn label(&self) -> String {
        "the client (sampling)".into()
    }

    fn complete<'a>(&'a self, request: Request<'a>) -> BoxFuture<'a, Result<Reply, ProviderError>> {
        Box::pin(async move {
            let params = params(&request);
            let estimate = params.to_string().len() as u64 / 4;
            let result = (self.sample)(params).await.map_err(ProviderError::Sampling)?;
            reply(&result, estimate).map_err(ProviderError::Sampling)
        })
    }
}

/// The params of the request for `request`.
pub(crate) fn params(request: &Request<'_>) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message).collect();
    // A message of tool results may hold nothing else (SEP-1577): the reminder goes with the
    // system prompt of this request.
    let system = match request.reminder {
        Some(reminder) => format!("{}\n\n{reminder}", request.system),
        None => request.system.to_string(),
    };
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "inputSchema": t.schema}))
        .collect();
    json!({
        "messages": messages,
        "systemPrompt": system,
        "maxTokens": request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "tools": tools,
        "toolChoice": {"mode": "auto"},
    })
}

/// One message as sampling content. A tool result's images go as image blocks inside it.
fn message(message: &Message) -> Value {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    let content: Vec<Value> = message.content.iter().map(block).collect();
    json!({"role": role, "content": content})
}

fn block(block: &Block) -> Value {
    match block {
        Block::Text { text } => json!({"type": "text", "text": text}),
        Block::Image { mime, data } => json!({"type": "image", "mimeType": mime, "data": data}),
        Block::ToolCall { id, name, arguments, .. } => {
            let input = arguments.as_object().cloned().unwrap_or_default();
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Block::ToolResult { id, content, is_error } => {
            let content: Vec<Value> = content.iter().map(self::block).collect();
            json!({"type": "tool_result", "toolUseId": id, "content": content, "isError": is_error})
        }
    }
}

/// The client's result as the model's turn. It reports no token counts: they are estimated
/// (a quarter of the bytes each way) so that a token budget still stops a run.
pub(crate) fn reply(result: &Value, input_estimate: u64) -> Result<Reply, String> {
    if result.get("role").and_then(Value::as_str) != Some("assistant") {
        return Err(format!("its result is not an assistant message: {}", cut(result)));
    }
    let blocks: Vec<Value> = match &result["content"] {
        Value::Array(blocks) => blocks.clone(),
        Value::Object(_) => vec![result["content"].clone()],
        _ => return Err(format!("its result has no content: {}", cut(result))),
    };
    let mut content = Vec::with_capacity(blocks.len());
    for block in &blocks {
        match block["type"].as_str() {
            Some("text") => content.push(Block::text(block["text"].as_str().unwrap_or_default())),
            Some("tool_use") => {
                let (Some(id), Some(name)) = (block["id"].as_str(), block["name"].as_str()) else {
                    return Err(format!("a `tool_use` block lacks its id or name: {}", cut(block)));
                };
                let arguments = Value::Object(block["input"].as_object().cloned().unwrap_or_else(Map::new));
                content.push(Block::ToolCall { id: id.into(), name: name.into(), arguments, malformed: None });
            }
            // Images or audio from the model carry nothing the loop can act on.
            _ => {}
        }
    }
    let finish = match result["stopReason"].as_str() {
        Some("maxTokens") => Finish::Length,
        _ => Finish::Done,
    };
    let output = (blocks.iter().map(|b| b.to_string().len()).sum::<usize>() / 4) as u64;
    Ok(Reply { content, finish, usage: Usage { input: input_estimate, output } })
}

/// `value` on one line, cut for a message.
fn cut(value: &Value) -> String {
    let text = value.to_string();
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolDef;

    #[test]
    fn the_conversation_goes_as_sampling_messages_with_tools() {
        let messages = vec![
            Message { role: Role::User, content: vec![Block::text("fix it")] },
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: "c1".into(),
                    name: "file_operations".into(),
                    arguments: json!({"operation": "read_file", "path": "a"}),
                    malformed: None,
                }],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    id: "c1".into(),
                    content: vec![Block::text("a = 1")],
                    is_error: false,
                }],
            },
        ];
        let tools = [ToolDef {
            name: "file_operations".into(),
            description: "files".into(),
            schema: json!({"type": "object"}),
        }];
        let request = Request {
            system: "be brief",
            messages: &messages,
            tools: &tools,
            reminder: Some("the todo list"),
            max_output_tokens: None,
            show_text: false,
        };
        let params = params(&request);
        assert_eq!(params["systemPrompt"], "be brief\n\nthe todo list");
        assert_eq!(params["maxTokens"], DEFAULT_MAX_TOKENS);
        assert_eq!(params["tools"][0]["inputSchema"], json!({"type": "object"}));
        assert_eq!(params["messages"][1]["content"][0]["type"], "tool_use");
        assert_eq!(params["messages"][1]["content"][0]["input"]["path"], "a");
        let result = &params["messages"][2]["content"];
        assert_eq!(result[0]["toolUseId"], "c1");
        // A message of tool results holds nothing else.
        assert_eq!(result.as_array().unwrap().len(), 1);
    }

    #[test]
    fn the_clients_result_becomes_the_turn() {
        let result = json!({"role": "assistant", "model": "m", "stopReason": "toolUse", "content": [
            {"type": "text", "text": "reading"},
            {"type": "tool_use", "id": "t1", "name": "file_operations", "input": {"operation": "read_file"}}
        ]});
        let reply = reply(&result, 100).unwrap();
        assert_eq!(reply.content.len(), 2);
        assert!(matches!(&reply.content[1], Block::ToolCall { id, .. } if id == "t1"));
        assert_eq!((reply.finish, reply.usage.input), (Finish::Done, 100));
        let single = json!({"role": "assistant", "model": "m", "stopReason": "maxTokens", "content": {"type": "text", "text": "cut"}});
        assert_eq!(super::reply(&single, 0).unwrap().finish, Finish::Length);
        let err = super::reply(&json!({"role": "user", "content": []}), 0).unwrap_err();
        assert!(err.contains("not an assistant message"), "{err}");
    }
}
