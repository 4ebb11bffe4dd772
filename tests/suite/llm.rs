//! A scripted LLM provider on 127.0.0.1:0 for the agent tests. It speaks the Anthropic
//! Messages API (`/v1/messages`) and the OpenAI-compatible Chat Completions API
//! (`/v1/chat/completions`) and replays a fixture conversation from `fixtures/llm/`, checking
//! each request: its shape, that every tool call of the previous reply got its result, and
//! that the new messages contain what the fixture expects.

use std::collections::{BTreeSet, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Which wire format the agent is pointed at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wire {
    Anthropic,
    OpenAi,
}

impl Wire {
    pub(super) const BOTH: [Wire; 2] = [Wire::Anthropic, Wire::OpenAi];

    /// `--provider` value.
    pub(super) fn provider(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
        }
    }

    /// The key variable the agent reads.
    pub(super) fn key_env(self) -> &'static str {
        match self {
            Wire::Anthropic => "ANTHROPIC_API_KEY",
            Wire::OpenAi => "OPENAI_API_KEY",
        }
    }
}

/// The API key the scripted provider expects.
pub(super) const KEY: &str = "test-key-123";

#[derive(Default)]
struct Script {
    turns: VecDeque<Value>,
    requests: Vec<Value>,
    failures: Vec<String>,
    /// Tool call ids of the last reply, which the next request must answer.
    pending: BTreeSet<String>,
    replies: usize,
    /// Report input tokens as a quarter of the request's bytes (else a fixed 100).
    usage_from_size: bool,
    /// The reply to summary requests (requests without tools), and what they must hold.
    summary: Value,
    /// The summary requests received.
    summaries: Vec<Value>,
}

/// A running scripted provider.
pub(super) struct ScriptedLlm {
    pub wire: Wire,
    pub base_url: String,
    script: Arc<Mutex<Script>>,
}

impl ScriptedLlm {
    /// Serves `fixtures/llm/<name>.json` in `wire` format.
    pub(super) async fn start(name: &str, wire: Wire) -> Self {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/llm").join(format!("{name}.json"));
        let fixture: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        Self::start_with(&fixture, wire).await
    }

    /// Serves `fixture` (the shape of `fixtures/llm/*.json`; also `usage_from_size`,
    /// `summary`: `{"text", "expect"}`, and `pending`: call ids the first request answers) in
    /// `wire` format.
    pub(super) async fn start_with(fixture: &Value, wire: Wire) -> Self {
        let turns = fixture["turns"].as_array().unwrap().iter().cloned().collect();
        let script = Arc::new(Mutex::new(Script {
            turns,
            usage_from_size: fixture["usage_from_size"].as_bool().unwrap_or(false),
            summary: fixture["summary"].clone(),
            // A resumed run may open with results of calls an earlier run made.
            pending: fixture["pending"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
            ..Script::default()
        }));
        let app = axum::Router::new()
            .route("/v1/messages", axum::routing::post(anthropic))
            .route("/v1/chat/completions", axum::routing::post(openai))
            .with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        let base_url = match wire {
            Wire::Anthropic => format!("http://{addr}"),
            Wire::OpenAi => format!("http://{addr}/v1"),
        };
        Self { wire, base_url, script }
    }

    /// The request bodies received, in order.
    pub(super) fn requests(&self) -> Vec<Value> {
        self.script.lock().unwrap().requests.clone()
    }

    /// The summary requests (sent without tools) received, in order.
    pub(super) fn summaries(&self) -> Vec<Value> {
        self.script.lock().unwrap().summaries.clone()
    }

    /// Panics if a request broke an expectation or the script was not played to its end.
    pub(super) fn assert_played(&self) {
        let script = self.script.lock().unwrap();
        assert!(script.failures.is_empty(), "the scripted provider saw: {:#?}", script.failures);
        assert!(script.turns.is_empty(), "{} scripted turns were not asked for", script.turns.len());
    }
}

async fn anthropic(State(script): State<Arc<Mutex<Script>>>, headers: HeaderMap, body: String) -> Response {
    let size = body.len();
    let body: Value = serde_json::from_str(&body).unwrap_or_default();
    if body.get("tools").is_none() {
        return summarise(&script, body, size, Wire::Anthropic);
    }
    let mut problems = Vec::new();
    if headers.get("x-api-key").and_then(|v| v.to_str().ok()) != Some(KEY) {
        problems.push("no `x-api-key` with the key".to_string());
    }
    if headers.get("anthropic-version").is_none() {
        problems.push("no `anthropic-version`".into());
    }
    if !body["max_tokens"].is_u64() || !body["tools"][0]["input_schema"].is_object() {
        problems.push("no `max_tokens` or no tool with `input_schema`".into());
    }
    let last = body["messages"].as_array().and_then(|m| m.last()).cloned().unwrap_or_default();
    let answered = ids(&last, "tool_use_id");
    answer(&script, body.clone(), size, vec![last], answered, problems, Wire::Anthropic).await
}

async fn openai(State(script): State<Arc<Mutex<Script>>>, headers: HeaderMap, body: String) -> Response {
    let size = body.len();
    let body: Value = serde_json::from_str(&body).unwrap_or_default();
    if body.get("tools").is_none() {
        return summarise(&script, body, size, Wire::OpenAi);
    }
    let mut problems = Vec::new();
    let bearer = format!("Bearer {KEY}");
    if headers.get("authorization").and_then(|v| v.to_str().ok()) != Some(bearer.as_str()) {
        problems.push("no `Authorization: Bearer` with the key".to_string());
    }
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    if messages.first().map(|m| &m["role"]) != Some(&json!("system"))
        || !body["tools"][0]["function"]["parameters"].is_object()
    {
        problems.push("no system message first, or no tool with `function.parameters`".into());
    }
    let since = messages.iter().rposition(|m| m["role"] == "assistant").map_or(1, |i| i + 1);
    let new: Vec<Value> = messages[since.min(messages.len())..].to_vec();
    let answered = new.iter().flat_map(|m| ids(m, "tool_call_id")).collect();
    answer(&script, body.clone(), size, new, answered, problems, Wire::OpenAi).await
}

/// Every string value under `key` anywhere in `value`.
fn ids(value: &Value, key: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    walk(value, "", &mut |k, v| {
        if k == key
            && let Some(s) = v.as_str()
        {
            found.insert(s.to_string());
        }
    });
    found
}

/// All the text in `values`, joined.
fn texts(values: &[Value]) -> String {
    let mut all = String::new();
    for value in values {
        walk(value, "", &mut |_, v| {
            if let Some(s) = v.as_str() {
                all.push_str(s);
                all.push('\n');
            }
        });
    }
    all
}

/// Calls `f` with every scalar in `value` and the key it is under (`""` at the top).
fn walk(value: &Value, key: &str, f: &mut dyn FnMut(&str, &Value)) {
    match value {
        Value::Object(map) => map.iter().for_each(|(k, v)| walk(v, k, f)),
        Value::Array(items) => items.iter().for_each(|v| walk(v, key, f)),
        _ => f(key, value),
    }
}

/// A request without tools is the agent asking for a summary of older turns: it is answered
/// with the fixture's `summary`, checked against its `expect`, and takes no scripted turn.
fn summarise(script: &Mutex<Script>, body: Value, size: usize, wire: Wire) -> Response {
    let mut script = script.lock().unwrap();
    let text = texts(std::slice::from_ref(&body));
    let n = script.summaries.len() + 1;
    let expected: Vec<String> =
        script.summary["expect"].as_array().into_iter().flatten().filter_map(Value::as_str).map(String::from).collect();
    for expected in expected {
        if !text.contains(&expected) {
            script.failures.push(format!("summary request {n} lacks {expected:?}"));
        }
    }
    let stream = Streamed::of(&body, wire);
    script.summaries.push(body);
    let reply = script.summary["text"].as_str().unwrap_or("A summary of the earlier turns.").to_string();
    let tokens = if script.usage_from_size { size as u64 / 4 } else { 100 };
    stream.respond(wire, render(wire, Some(&reply), &[], tokens), None)
}

async fn answer(
    script: &Mutex<Script>,
    body: Value,
    size: usize,
    new: Vec<Value>,
    answered: BTreeSet<String>,
    mut problems: Vec<String>,
    wire: Wire,
) -> Response {
    let stream = Streamed::of(&body, wire);
    if let Some(problem) = stream.problem(wire) {
        problems.push(problem);
    }
    let (turn, n) = {
        let mut script = script.lock().unwrap();
        script.requests.push(body);
        let n = script.requests.len();
        let Some(turn) = script.turns.pop_front() else {
            script.failures.push(format!("request {n}: the script has no more turns"));
            return (StatusCode::BAD_REQUEST, "the script has no more turns").into_response();
        };
        if turn.get("status").is_none() {
            let text = texts(&new);
            for expected in turn["expect"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                if !text.contains(expected) {
                    let shown: String = text.chars().take(1500).collect();
                    problems.push(format!("the new messages lack {expected:?}; they begin:\n{shown}"));
                }
            }
            if answered != script.pending {
                problems.push(format!("results for {answered:?}, but the calls were {:?}", script.pending));
            }
        }
        script.failures.extend(problems.into_iter().map(|p| format!("request {n}: {p}")));
        (turn, n)
    };
    if let Some(ms) = turn["delay_ms"].as_u64() {
        tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
    }
    if let Some(status) = turn["status"].as_u64() {
        let mut response = (StatusCode::from_u16(status as u16).unwrap(), json_body(&turn["body"])).into_response();
        if let Some(after) = turn["retry_after"].as_str() {
            response.headers_mut().insert("retry-after", after.parse().unwrap());
        }
        return response;
    }
    let mut script = script.lock().unwrap();
    script.replies += 1;
    let reply = &turn["reply"];
    let broken = turn["stream_error"].as_str();
    let calls: Vec<(String, &Value)> = reply["calls"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, c)| (format!("call_{n}_{i}"), c))
        .collect();
    if broken.is_none() {
        script.pending = calls.iter().map(|(id, _)| id.clone()).collect();
    }
    let tokens = if script.usage_from_size { size as u64 / 4 } else { 100 };
    stream.respond(wire, render(wire, reply["text"].as_str(), &calls, tokens), broken)
}

/// Whether a request asked for a streamed reply, and with usage.
#[derive(Debug, Clone, Copy)]
struct Streamed {
    on: bool,
    usage: bool,
}

impl Streamed {
    fn of(body: &Value, wire: Wire) -> Self {
        let on = body["stream"] == true;
        let usage = match wire {
            Wire::Anthropic => on,
            Wire::OpenAi => body.pointer("/stream_options/include_usage") == Some(&Value::Bool(true)),
        };
        Self { on, usage }
    }

    fn problem(self, wire: Wire) -> Option<String> {
        (wire == Wire::OpenAi && self.on && !self.usage)
            .then(|| "a streamed request without `stream_options.include_usage`".to_string())
    }

    /// `rendered` as JSON, or as the server-sent events of its wire format (cut by an error
    /// event halfway when `broken` says so).
    fn respond(self, wire: Wire, rendered: Value, broken: Option<&str>) -> Response {
        if !self.on {
            return json_body(&rendered).into_response();
        }
        let mut events = match wire {
            Wire::Anthropic => anthropic_events(&rendered),
            Wire::OpenAi => openai_events(&rendered, self.usage),
        };
        if let Some(message) = broken {
            events.truncate(events.len() / 2);
            events.push(match wire {
                Wire::Anthropic => sse(
                    Some("error"),
                    &json!({"type": "error", "error": {"type": "overloaded_error", "message": message}}),
                ),
                Wire::OpenAi => sse(None, &json!({"error": {"message": message, "type": "server_error"}})),
            });
        }
        ([(axum::http::header::CONTENT_TYPE, "text/event-stream")], events.concat()).into_response()
    }
}

fn sse(event: Option<&str>, data: &Value) -> String {
    match event {
        Some(event) => format!("event: {event}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// `text` in two pieces (at a character boundary), as deltas come.
fn halves(text: &str) -> [&str; 2] {
    let mut middle = text.len() / 2;
    while !text.is_char_boundary(middle) {
        middle += 1;
    }
    [&text[..middle], &text[middle..]]
}

/// An Anthropic message as its stream: start, each block in two deltas, delta, stop.
fn anthropic_events(message: &Value) -> Vec<String> {
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    start["usage"]["output_tokens"] = 1.into();
    let mut events = vec![sse(Some("message_start"), &json!({"type": "message_start", "message": start}))];
    for (index, block) in message["content"].as_array().unwrap().iter().enumerate() {
        let (opened, parts, kind, key) = if block["type"] == "text" {
            (json!({"type": "text", "text": ""}), block["text"].as_str().unwrap().to_string(), "text_delta", "text")
        } else {
            let input = &block["input"];
            let raw = input.as_str().map_or_else(|| input.to_string(), str::to_string);
            let opened = json!({"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}});
            (opened, raw, "input_json_delta", "partial_json")
        };
        events.push(sse(
            Some("content_block_start"),
            &json!({"type": "content_block_start", "index": index, "content_block": opened}),
        ));
        for part in halves(&parts) {
            let delta = json!({"type": "content_block_delta", "index": index, "delta": {"type": kind, key: part}});
            events.push(sse(Some("content_block_delta"), &delta));
        }
        events.push(sse(Some("content_block_stop"), &json!({"type": "content_block_stop", "index": index})));
    }
    let usage = json!({"output_tokens": message["usage"]["output_tokens"]});
    let delta = json!({"type": "message_delta", "delta": {"stop_reason": message["stop_reason"]}, "usage": usage});
    events.push(sse(Some("message_delta"), &delta));
    events.push(sse(Some("message_stop"), &json!({"type": "message_stop"})));
    events
}

/// A chat completion as its chunks: text in two, each call's arguments in two, the finish,
/// the usage when asked for, `[DONE]`.
fn openai_events(completion: &Value, usage: bool) -> Vec<String> {
    let chunk = |delta: Value, finish: Value| {
        sse(
            None,
            &json!({"object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}),
        )
    };
    let message = &completion["choices"][0]["message"];
    let mut events = vec![chunk(json!({"role": "assistant"}), Value::Null)];
    if let Some(text) = message["content"].as_str() {
        for part in halves(text) {
            events.push(chunk(json!({"content": part}), Value::Null));
        }
    }
    for (index, call) in message["tool_calls"].as_array().into_iter().flatten().enumerate() {
        let [first, rest] = halves(call["function"]["arguments"].as_str().unwrap());
        let opened = json!({"index": index, "id": call["id"], "type": "function", "function": {"name": call["function"]["name"], "arguments": first}});
        events.push(chunk(json!({"tool_calls": [opened]}), Value::Null));
        events.push(chunk(json!({"tool_calls": [{"index": index, "function": {"arguments": rest}}]}), Value::Null));
    }
    events.push(chunk(json!({}), completion["choices"][0]["finish_reason"].clone()));
    if usage {
        events
            .push(sse(None, &json!({"object": "chat.completion.chunk", "choices": [], "usage": completion["usage"]})));
    }
    events.push("data: [DONE]\n\n".to_string());
    events
}

fn json_body(value: &Value) -> impl IntoResponse {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], value.to_string())
}

/// A reply in the wire format; a call with `raw_arguments` sends them as they are.
fn render(wire: Wire, text: Option<&str>, calls: &[(String, &Value)], input_tokens: u64) -> Value {
    match wire {
        Wire::Anthropic => {
            let mut content: Vec<Value> = text.map(|t| json!({"type": "text", "text": t})).into_iter().collect();
            for (id, call) in calls {
                let input = call.get("raw_arguments").cloned().unwrap_or_else(|| call["arguments"].clone());
                content.push(json!({"type": "tool_use", "id": id, "name": call["name"], "input": input}));
            }
            json!({
                "id": "msg_1", "type": "message", "role": "assistant", "model": "scripted", "content": content,
                "stop_reason": if calls.is_empty() { "end_turn" } else { "tool_use" },
                "usage": {"input_tokens": input_tokens, "output_tokens": 20}
            })
        }
        Wire::OpenAi => {
            let tool_calls: Vec<Value> = calls
                .iter()
                .map(|(id, call)| {
                    let arguments =
                        call.get("raw_arguments").cloned().unwrap_or_else(|| json!(call["arguments"].to_string()));
                    json!({"id": id, "type": "function", "function": {"name": call["name"], "arguments": arguments}})
                })
                .collect();
            let mut message = json!({"role": "assistant", "content": text});
            if !tool_calls.is_empty() {
                message["tool_calls"] = Value::Array(tool_calls);
            }
            json!({
                "id": "chatcmpl-1", "object": "chat.completion", "model": "scripted",
                "choices": [{"index": 0, "message": message, "finish_reason": if calls.is_empty() { "stop" } else { "tool_calls" }}],
                "usage": {"prompt_tokens": input_tokens, "completion_tokens": 20, "total_tokens": input_tokens + 20}
            })
        }
    }
}
