//! The Anthropic Messages API (`POST {base}/v1/messages`): `tool_use` and `tool_result`
//! blocks, prompt caching on the system prompt and the newest message.

use futures::future::BoxFuture;
use reqwest::header::{HeaderMap, HeaderValue};
use serde_json::{Map, Value, json};

use super::http::Client;
use super::stream::{self, TextSink};
use super::{Block, Finish, Message, Provider, ProviderError, Reply, Request, Role, Settings, Usage};

/// The API version header this client speaks.
const VERSION: &str = "2023-06-01";
/// Output tokens per turn when `--max-output-tokens` is not given (the API requires a value).
const DEFAULT_MAX_TOKENS: u32 = 8192;

/// An Anthropic Messages API client.
pub(crate) struct Anthropic {
    client: Client,
    settings: Settings,
    show: Option<TextSink>,
}

impl Anthropic {
    /// A client for `settings`, showing streamed text on `show`.
    pub(crate) fn new(client: Client, settings: Settings, show: Option<TextSink>) -> Self {
        Self { client, settings, show }
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert("anthropic-version", HeaderValue::from_static(VERSION));
        if let Some(key) = self.settings.api_key.as_deref().and_then(|k| HeaderValue::from_str(k).ok()) {
            headers.insert("x-api-key", key);
        }
        headers
    }
}

impl Provider for Anthropic {
    fn label(&self) -> String {
        self.client.label().to_string()
    }

    fn complete<'a>(&'a self, request: Request<'a>) -> BoxFuture<'a, Result<Reply, ProviderError>> {
        Box::pin(async move {
            let url = format!("{}/v1/messages", self.settings.base_url.trim_end_matches('/'));
            let mut body = body(&self.settings.model, &request);
            let answer = if self.settings.stream {
                body["stream"] = true.into();
                let mut sink = stream::Anthropic::new(self.show.clone().filter(|_| request.show_text));
                self.client.post_stream(&url, self.headers(), &body, &mut sink).await?;
                sink.answer()
            } else {
                self.client.post(&url, self.headers(), &body).await?
            };
            reply(&answer).map_err(|detail| self.client.malformed(detail))
        })
    }
}

/// The request body.
pub(crate) fn body(model: &str, request: &Request<'_>) -> Value {
    let mut messages: Vec<Value> = request.messages.iter().map(message).collect();
    if let Some(content) = messages.last_mut().and_then(|m| m["content"].as_array_mut()) {
        // Cache the conversation up to its newest block, so the next turn reads it back; the
        // reminder comes after that point, since the next turn will not repeat it.
        if let Some(last) = content.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
        }
        if let Some(reminder) = request.reminder {
            content.push(json!({"type": "text", "text": reminder}));
        }
    }
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.schema}))
        .collect();
    let mut body = json!({
        "model": model,
        "max_tokens": request.max_output_tokens.unwrap_or(DEFAULT_MAX_TOKENS),
        "system": [{"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}],
        "messages": messages,
    });
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    body
}

fn message(message: &Message) -> Value {
    let role = match message.role {
        Role::User => "user",
        Role::Assistant => "assistant",
    };
    json!({"role": role, "content": message.content.iter().map(block).collect::<Vec<_>>()})
}

fn block(block: &Block) -> Value {
    match block {
        Block::Text { text } => json!({"type": "text", "text": text}),
        Block::Image { mime, data } => {
            json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
        }
        Block::ToolCall { id, name, arguments, .. } => {
            // Malformed arguments are echoed as an empty object: the API takes objects only.
            let input = if arguments.is_object() { arguments.clone() } else { Value::Object(Map::new()) };
            json!({"type": "tool_use", "id": id, "name": name, "input": input})
        }
        Block::ToolResult { id, content, is_error } => json!({
            "type": "tool_result",
            "tool_use_id": id,
            "content": content.iter().map(self::block).collect::<Vec<_>>(),
            "is_error": is_error,
        }),
    }
}

/// The reply in an answer.
pub(crate) fn reply(answer: &Value) -> Result<Reply, String> {
    let blocks = answer.get("content").and_then(Value::as_array).ok_or("no `content` array")?;
    let mut content = Vec::new();
    for item in blocks {
        match item.get("type").and_then(Value::as_str) {
            Some("text") => content.push(Block::text(item["text"].as_str().unwrap_or_default())),
            Some("tool_use") => {
                let id = item["id"].as_str().ok_or("a `tool_use` block without `id`")?;
                let name = item["name"].as_str().ok_or("a `tool_use` block without `name`")?;
                let input = item.get("input").cloned().unwrap_or(Value::Null);
                let malformed = (!input.is_object())
                    .then(|| format!("the arguments are JSON {}, not an object", super::kind_of(&input)));
                content.push(Block::ToolCall { id: id.into(), name: name.into(), arguments: input, malformed });
            }
            // Thinking and server-tool blocks are not replayed.
            _ => {}
        }
    }
    let finish = match answer.get("stop_reason").and_then(Value::as_str) {
        Some("max_tokens") => Finish::Length,
        Some("refusal") => Finish::Refused,
        _ => Finish::Done,
    };
    let tokens = |key: &str| answer.pointer(&format!("/usage/{key}")).and_then(Value::as_u64).unwrap_or(0);
    let input = tokens("input_tokens") + tokens("cache_creation_input_tokens") + tokens("cache_read_input_tokens");
    Ok(Reply { content, finish, usage: Usage { input, output: tokens("output_tokens") } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::ToolDef;

    #[test]
    fn a_conversation_with_tools_becomes_a_messages_body() {
        let messages = vec![
            Message { role: Role::User, content: vec![Block::text("fix it")] },
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: "t1".into(),
                    name: "file_operations".into(),
                    arguments: json!({"operation": "read_file"}),
                    malformed: None,
                }],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult { id: "t1".into(), content: vec![Block::text("hi")], is_error: false }],
            },
        ];
        let tools = [ToolDef {
            name: "file_operations".into(),
            description: "files".into(),
            schema: json!({"type": "object"}),
        }];
        let request = Request {
            system: "sys",
            messages: &messages,
            tools: &tools,
            reminder: Some("todo"),
            max_output_tokens: None,
            show_text: true,
        };
        let body = body("m", &request);
        assert_eq!(body["max_tokens"], 8192);
        assert_eq!(body["system"][0]["text"], "sys");
        assert_eq!(body["tools"][0]["input_schema"], json!({"type": "object"}));
        assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
        let last = &body["messages"][2]["content"];
        assert_eq!(last[0]["tool_use_id"], "t1");
        assert_eq!(last[0]["content"][0]["text"], "hi");
        assert_eq!(last[0]["cache_control"], json!({"type": "ephemeral"}));
        assert_eq!(last[1], json!({"type": "text", "text": "todo"}));
    }

    #[test]
    fn an_answer_becomes_a_reply() {
        let answer = json!({
            "content": [
                {"type": "text", "text": "reading"},
                {"type": "tool_use", "id": "t2", "name": "x", "input": {"a": 1}},
                {"type": "tool_use", "id": "t3", "name": "x", "input": "oops"}
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 7}
        });
        let reply = reply(&answer).unwrap();
        assert_eq!(reply.usage, Usage { input: 15, output: 7 });
        assert_eq!(reply.content.len(), 3);
        assert!(matches!(&reply.content[2], Block::ToolCall { malformed: Some(m), .. } if m.contains("a string")));
        assert!(super::reply(&json!({"id": 1})).is_err());
    }
}
