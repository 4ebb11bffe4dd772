//! The OpenAI-compatible Chat Completions API (`POST {base}/chat/completions`): `tools` and
//! `tool_calls`, as spoken by OpenAI, Ollama, llama.cpp server, vLLM and OpenRouter.

use std::sync::atomic::{AtomicBool, Ordering};

use futures::future::BoxFuture;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};
use serde_json::{Value, json};

use super::http::Client;
use super::stream::{self, TextSink};
use super::{Block, Finish, Provider, ProviderError, Reply, Request, Role, Settings, Usage};

/// An OpenAI-compatible Chat Completions client.
pub(crate) struct OpenAi {
    client: Client,
    settings: Settings,
    /// The output limit goes in `max_completion_tokens`, not `max_tokens`: set once the server
    /// refused `max_tokens` and named it (OpenAI's reasoning models do; most other servers
    /// know only `max_tokens`, so that is what is tried first).
    completion_tokens: AtomicBool,
    /// Replies are asked for whole: set once the server refused a streamed request naming
    /// `stream` (an older OpenAI-compatible server), or by `--no-stream`.
    whole: AtomicBool,
    show: Option<TextSink>,
}

impl OpenAi {
    /// A client for `settings`, showing streamed text on `show`.
    pub(crate) fn new(client: Client, settings: Settings, show: Option<TextSink>) -> Self {
        let whole = AtomicBool::new(!settings.stream);
        Self { client, settings, completion_tokens: AtomicBool::new(false), whole, show }
    }

    fn body(&self, request: &Request<'_>) -> Value {
        let mut body = body(&self.settings.model, request);
        if self.completion_tokens.load(Ordering::Relaxed) {
            use_completion_tokens(&mut body);
        }
        if !self.whole.load(Ordering::Relaxed) {
            body["stream"] = true.into();
            body["stream_options"] = json!({"include_usage": true});
        }
        body
    }

    /// One request: streamed (assembled into a completion) unless the body asks otherwise.
    async fn send(&self, url: &str, body: &Value, request: &Request<'_>) -> Result<Value, ProviderError> {
        if body.get("stream").is_none() {
            return self.client.post(url, self.headers(), body).await;
        }
        let mut sink = stream::OpenAi::new(self.show.clone().filter(|_| request.show_text));
        self.client.post_stream(url, self.headers(), body, &mut sink).await?;
        Ok(sink.answer())
    }

    fn headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        let bearer = self.settings.api_key.as_deref().and_then(|k| HeaderValue::from_str(&format!("Bearer {k}")).ok());
        if let Some(bearer) = bearer {
            headers.insert(AUTHORIZATION, bearer);
        }
        headers
    }
}

impl Provider for OpenAi {
    fn label(&self) -> String {
        self.client.label().to_string()
    }

    fn complete<'a>(&'a self, request: Request<'a>) -> BoxFuture<'a, Result<Reply, ProviderError>> {
        Box::pin(async move {
            let url = format!("{}/chat/completions", self.settings.base_url.trim_end_matches('/'));
            let mut body = self.body(&request);
            let answer = match self.send(&url, &body, &request).await {
                Err(ProviderError::Rejected { message, .. }) if wants_completion_tokens(&body, &message) => {
                    self.completion_tokens.store(true, Ordering::Relaxed);
                    use_completion_tokens(&mut body);
                    self.send(&url, &body, &request).await?
                }
                Err(ProviderError::Rejected { message, .. }) if refuses_streaming(&body, &message) => {
                    self.whole.store(true, Ordering::Relaxed);
                    let body = self.body(&request);
                    self.send(&url, &body, &request).await?
                }
                answer => answer?,
            };
            reply(&answer).map_err(|detail| self.client.malformed(detail))
        })
    }
}

/// The request body.
pub(crate) fn body(model: &str, request: &Request<'_>) -> Value {
    let mut messages = vec![json!({"role": "system", "content": request.system})];
    for message in request.messages {
        match message.role {
            Role::Assistant => messages.push(assistant(&message.content)),
            Role::User => user(&message.content, &mut messages),
        }
    }
    if let Some(reminder) = request.reminder {
        messages.push(json!({"role": "user", "content": reminder}));
    }
    let tools: Vec<Value> = request
        .tools
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.schema}}))
        .collect();
    let mut body = json!({"model": model, "messages": messages});
    if !tools.is_empty() {
        body["tools"] = Value::Array(tools);
    }
    if let Some(max) = request.max_output_tokens {
        body["max_tokens"] = max.into();
    }
    body
}

/// Whether a refusal of `body` asks for `max_completion_tokens` instead of its `max_tokens`
/// (OpenAI: "Unsupported parameter: 'max_tokens' is not supported with this model. Use
/// 'max_completion_tokens' instead.").
fn wants_completion_tokens(body: &Value, message: &str) -> bool {
    body.get("max_tokens").is_some() && message.contains("max_completion_tokens")
}

/// Whether a refusal of a streamed `body` is about streaming (a server that knows neither
/// `stream` nor `stream_options`): the run then asks for whole replies.
fn refuses_streaming(body: &Value, message: &str) -> bool {
    body.get("stream").is_some() && message.to_ascii_lowercase().contains("stream")
}

/// Moves the output limit from `max_tokens` to `max_completion_tokens`.
fn use_completion_tokens(body: &mut Value) {
    if let Some(max) = body.as_object_mut().and_then(|fields| fields.remove("max_tokens")) {
        body["max_completion_tokens"] = max;
    }
}

fn assistant(content: &[Block]) -> Value {
    let text: Vec<&str> =
        content.iter().filter_map(|b| if let Block::Text { text } = b { Some(text.as_str()) } else { None }).collect();
    let calls: Vec<Value> = content
        .iter()
        .filter_map(|b| match b {
            Block::ToolCall { id, name, arguments, .. } => {
                // Malformed arguments are echoed as the model sent them.
                let arguments = arguments.as_str().map_or_else(|| arguments.to_string(), str::to_string);
                Some(json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}))
            }
            _ => None,
        })
        .collect();
    let mut message =
        json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { text.join("\n").into() }});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    message
}

/// A user message: each tool result becomes a `tool` message; text, and images the tools
/// returned (which `tool` messages cannot carry), follow in one user message.
fn user(content: &[Block], messages: &mut Vec<Value>) {
    let mut parts = Vec::new();
    for block in content {
        match block {
            Block::ToolResult { id, content, is_error } => {
                let mut text: Vec<String> = Vec::new();
                for inner in content {
                    match inner {
                        Block::Text { text: t } => text.push(t.clone()),
                        Block::Image { mime, data } => {
                            text.push(format!("[{mime} image: shown in the next message]"));
                            parts.push(image(mime, data));
                        }
                        _ => {}
                    }
                }
                let mut text = text.join("\n");
                if *is_error {
                    text = format!("Error: {text}");
                }
                messages.push(json!({"role": "tool", "tool_call_id": id, "content": text}));
            }
            Block::Text { text } => parts.push(json!({"type": "text", "text": text})),
            Block::Image { mime, data } => parts.push(image(mime, data)),
            Block::ToolCall { .. } => {}
        }
    }
    match parts.as_slice() {
        [] => {}
        [only] if only["type"] == "text" => messages.push(json!({"role": "user", "content": only["text"]})),
        _ => messages.push(json!({"role": "user", "content": parts})),
    }
}

fn image(mime: &str, data: &str) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}})
}

/// The reply in an answer.
pub(crate) fn reply(answer: &Value) -> Result<Reply, String> {
    let choice = answer.pointer("/choices/0").ok_or("no `choices[0]`")?;
    let message = choice.get("message").ok_or("no `choices[0].message`")?;
    let mut content = Vec::new();
    if let Some(text) = message.get("content").and_then(Value::as_str).filter(|t| !t.is_empty()) {
        content.push(Block::text(text));
    }
    for (n, call) in message.get("tool_calls").and_then(Value::as_array).into_iter().flatten().enumerate() {
        let function = call.get("function").ok_or("a tool call without `function`")?;
        let name = function.get("name").and_then(Value::as_str).ok_or("a tool call without `function.name`")?;
        // Some local servers leave out ids or send the arguments as an object.
        let id = call.get("id").and_then(Value::as_str).filter(|id| !id.is_empty());
        let id = id.map_or_else(|| format!("call_{n}"), str::to_string);
        let (arguments, malformed) = match function.get("arguments") {
            Some(Value::String(raw)) => super::parse_arguments(raw),
            Some(object @ Value::Object(_)) => (object.clone(), None),
            None | Some(Value::Null) => (json!({}), None),
            Some(other) => {
                (other.clone(), Some(format!("the arguments are JSON {}, not an object", super::kind_of(other))))
            }
        };
        content.push(Block::ToolCall { id, name: name.into(), arguments, malformed });
    }
    let finish = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("length") => Finish::Length,
        Some("content_filter") => Finish::Refused,
        _ => Finish::Done,
    };
    let tokens = |key: &str| answer.pointer(&format!("/usage/{key}")).and_then(Value::as_u64).unwrap_or(0);
    Ok(Reply { content, finish, usage: Usage { input: tokens("prompt_tokens"), output: tokens("completion_tokens") } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Message;

    #[test]
    fn tool_results_become_tool_messages_and_images_a_user_message() {
        let messages = vec![
            Message { role: Role::User, content: vec![Block::text("look")] },
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: "c1".into(),
                    name: "shot".into(),
                    arguments: json!({}),
                    malformed: None,
                }],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    id: "c1".into(),
                    content: vec![Block::text("done"), Block::Image { mime: "image/png".into(), data: "AAAA".into() }],
                    is_error: true,
                }],
            },
        ];
        let request = Request {
            system: "sys",
            messages: &messages,
            tools: &[],
            reminder: Some("todo"),
            max_output_tokens: Some(99),
            show_text: true,
        };
        let body = body("m", &request);
        let sent = body["messages"].as_array().unwrap();
        assert_eq!(sent[0], json!({"role": "system", "content": "sys"}));
        assert_eq!(sent[1], json!({"role": "user", "content": "look"}));
        assert_eq!(sent[2]["tool_calls"][0]["function"]["arguments"], "{}");
        assert_eq!(sent[3]["role"], "tool");
        assert_eq!(sent[3]["content"], "Error: done\n[image/png image: shown in the next message]");
        assert_eq!(sent[4]["content"][0]["image_url"]["url"], "data:image/png;base64,AAAA");
        assert_eq!(sent[5], json!({"role": "user", "content": "todo"}));
        assert_eq!(body["max_tokens"], 99);
        assert!(body.get("tools").is_none());
        let refusal = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.";
        assert!(wants_completion_tokens(&body, refusal));
        assert!(!wants_completion_tokens(&body, "model `m` does not exist"));
        let mut moved = body.clone();
        use_completion_tokens(&mut moved);
        assert_eq!((moved.get("max_tokens"), &moved["max_completion_tokens"]), (None, &json!(99)));
        assert!(!wants_completion_tokens(&moved, refusal), "asked once: a second refusal is an error");
    }

    #[test]
    fn a_server_refusing_streams_is_asked_whole() {
        let streamed = json!({"model": "m", "stream": true, "stream_options": {"include_usage": true}});
        assert!(refuses_streaming(&streamed, "Unrecognized request argument supplied: stream_options"));
        assert!(!refuses_streaming(&streamed, "model `m` not found"));
        assert!(!refuses_streaming(&json!({"model": "m"}), "stream_options"), "asked once: whole is final");
    }

    #[test]
    fn an_answer_becomes_a_reply_whatever_the_server_leaves_out() {
        let answer = json!({
            "choices": [{"message": {"content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "x", "arguments": "{\"p\":1}"}},
                {"function": {"name": "y", "arguments": {"q": 2}}},
                {"id": "c", "function": {"name": "z", "arguments": "{oops"}}
            ]}, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 3}
        });
        let reply = reply(&answer).unwrap();
        assert_eq!(reply.usage, Usage { input: 12, output: 3 });
        assert!(
            matches!(&reply.content[1], Block::ToolCall { id, arguments, .. } if id == "call_1" && arguments["q"] == 2)
        );
        assert!(matches!(&reply.content[2], Block::ToolCall { malformed: Some(_), .. }));
        assert!(super::reply(&json!({"choices": []})).is_err());
    }
}
