//! Streamed replies: each wire format's server-sent events assembled into the answer its
//! non-streamed API would have sent, so one parser (`anthropic::reply`, `openai::reply`)
//! reads both. Text is handed to the terminal as it arrives; tool-call arguments are joined
//! from their deltas.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::http::{Interrupted, Sink};

/// Where streamed text goes as it arrives (the terminal), when it is shown.
pub(crate) type TextSink = Arc<dyn Fn(&str) + Send + Sync>;

fn parse(data: &str) -> Result<Option<Value>, Interrupted> {
    if data.trim().is_empty() {
        return Ok(None);
    }
    serde_json::from_str(data).map(Some).map_err(|e| Interrupted::Malformed(format!("an event that is not JSON: {e}")))
}

/// Most content blocks or tool calls one reply may have: an index past it, or one that skips
/// ahead of those seen, is refused (a reply of a few bytes naming index 4294967295 would
/// otherwise make room for that many).
const MAX_PARTS: usize = 512;

/// The slot for part `index` of a reply with `len` parts so far, if it is the next one or one
/// seen before.
fn slot(index: u64, len: usize, what: &str) -> Result<usize, Interrupted> {
    match usize::try_from(index) {
        Ok(index) if index <= len && index < MAX_PARTS => Ok(index),
        _ => Err(Interrupted::Malformed(format!(
            "a {what} with index `{index}` after {len} of them (indexes count up from 0, at most {MAX_PARTS})"
        ))),
    }
}

fn error_event(value: &Value) -> Interrupted {
    let message = value.pointer("/error/message").and_then(Value::as_str).unwrap_or("an error event");
    Interrupted::Retry(format!("the stream reported: {message}"))
}

/// An Anthropic Messages stream (`message_start`, `content_block_*`, `message_delta`,
/// `message_stop`) assembled into a message.
pub(crate) struct Anthropic {
    content: Vec<Value>,
    /// The `partial_json` of each block, joined.
    inputs: Vec<String>,
    stop_reason: Value,
    usage: Map<String, Value>,
    done: bool,
    show: Option<TextSink>,
}

impl Anthropic {
    /// An assembly showing text on `show`.
    pub(crate) fn new(show: Option<TextSink>) -> Self {
        Self { content: Vec::new(), inputs: Vec::new(), stop_reason: Value::Null, usage: Map::new(), done: false, show }
    }

    /// The message as the non-streamed API returns it.
    pub(crate) fn answer(&self) -> Value {
        json!({"content": self.content, "stop_reason": self.stop_reason, "usage": self.usage})
    }

    fn block(&mut self, value: &Value) -> Result<usize, Interrupted> {
        let index = value
            .get("index")
            .and_then(Value::as_u64)
            .ok_or_else(|| Interrupted::Malformed("a content block event without `index`".into()))?;
        let index = slot(index, self.content.len(), "content block")?;
        if self.content.len() <= index {
            self.content.resize(index + 1, Value::Null);
            self.inputs.resize(index + 1, String::new());
        }
        Ok(index)
    }
}

impl Sink for Anthropic {
    fn reset(&mut self) {
        *self = Self::new(self.show.take());
    }

    fn event(&mut self, _kind: &str, data: &str) -> Result<bool, Interrupted> {
        let Some(value) = parse(data)? else { return Ok(false) };
        match value.get("type").and_then(Value::as_str).unwrap_or_default() {
            "message_start" => {
                if let Some(usage) = value.pointer("/message/usage").and_then(Value::as_object) {
                    self.usage.extend(usage.clone());
                }
            }
            "content_block_start" => {
                let index = self.block(&value)?;
                self.content[index] = value.get("content_block").cloned().unwrap_or(Value::Null);
            }
            "content_block_delta" => {
                let index = self.block(&value)?;
                let delta = &value["delta"];
                match delta.get("type").and_then(Value::as_str) {
                    Some("text_delta") => {
                        let text = delta["text"].as_str().unwrap_or_default();
                        if let Some(show) = &self.show {
                            show(text);
                        }
                        let joined = format!("{}{text}", self.content[index]["text"].as_str().unwrap_or_default());
                        self.content[index]["text"] = joined.into();
                    }
                    Some("input_json_delta") => {
                        self.inputs[index].push_str(delta["partial_json"].as_str().unwrap_or_default())
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let index = self.block(&value)?;
                let raw = std::mem::take(&mut self.inputs[index]);
                if self.content[index]["type"] == "tool_use" && !raw.trim().is_empty() {
                    // Arguments that are not JSON are kept as text: the reply says why.
                    self.content[index]["input"] = serde_json::from_str(&raw).unwrap_or(Value::String(raw));
                }
            }
            "message_delta" => {
                if let Some(reason) = value.pointer("/delta/stop_reason").filter(|r| !r.is_null()) {
                    self.stop_reason = reason.clone();
                }
                if let Some(usage) = value.get("usage").and_then(Value::as_object) {
                    self.usage.extend(usage.clone());
                }
            }
            "message_stop" => {
                self.done = true;
                return Ok(true);
            }
            "error" => return Err(error_event(&value)),
            _ => {}
        }
        Ok(false)
    }

    fn finished(&self) -> bool {
        self.done
    }
}

/// An OpenAI-compatible Chat Completions stream (`chat.completion.chunk`s, then `[DONE]`)
/// assembled into a completion.
pub(crate) struct OpenAi {
    text: String,
    /// Each tool call by its `index`: id, name, arguments joined.
    calls: Vec<(String, String, String)>,
    finish: Value,
    usage: Value,
    show: Option<TextSink>,
}

impl OpenAi {
    /// An assembly showing text on `show`.
    pub(crate) fn new(show: Option<TextSink>) -> Self {
        Self { text: String::new(), calls: Vec::new(), finish: Value::Null, usage: Value::Null, show }
    }

    /// The completion as the non-streamed API returns it.
    pub(crate) fn answer(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": if self.text.is_empty() { Value::Null } else { self.text.clone().into() }});
        if !self.calls.is_empty() {
            let calls: Vec<Value> = self
                .calls
                .iter()
                .map(|(id, name, arguments)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": arguments}}))
                .collect();
            message["tool_calls"] = Value::Array(calls);
        }
        json!({"choices": [{"index": 0, "message": message, "finish_reason": self.finish}], "usage": self.usage})
    }
}

impl Sink for OpenAi {
    fn reset(&mut self) {
        *self = Self::new(self.show.take());
    }

    fn event(&mut self, _kind: &str, data: &str) -> Result<bool, Interrupted> {
        if data.trim() == "[DONE]" {
            return Ok(true);
        }
        let Some(value) = parse(data)? else { return Ok(false) };
        if value.get("error").is_some() {
            return Err(error_event(&value));
        }
        if value.get("usage").is_some_and(Value::is_object) {
            self.usage = value["usage"].clone();
        }
        let Some(choice) = value.get("choices").and_then(Value::as_array).and_then(|c| c.first()) else {
            return Ok(false);
        };
        let delta = &choice["delta"];
        if let Some(text) = delta.get("content").and_then(Value::as_str) {
            if let Some(show) = &self.show {
                show(text);
            }
            self.text.push_str(text);
        }
        for call in delta.get("tool_calls").and_then(Value::as_array).into_iter().flatten() {
            let index = call.get("index").and_then(Value::as_u64).unwrap_or(self.calls.len() as u64);
            let index = slot(index, self.calls.len(), "tool call")?;
            if self.calls.len() <= index {
                self.calls.resize(index + 1, Default::default());
            }
            let (id, name, arguments) = &mut self.calls[index];
            if let Some(given) = call.get("id").and_then(Value::as_str) {
                *id = given.to_string();
            }
            if let Some(part) = call.pointer("/function/name").and_then(Value::as_str) {
                name.push_str(part);
            }
            if let Some(part) = call.pointer("/function/arguments").and_then(Value::as_str) {
                arguments.push_str(part);
            }
        }
        if let Some(reason) = choice.get("finish_reason").filter(|r| !r.is_null()) {
            self.finish = reason.clone();
        }
        Ok(false)
    }

    fn finished(&self) -> bool {
        // Servers that end the stream without `[DONE]` have said why the reply ended.
        !self.finish.is_null()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn shown() -> (TextSink, Arc<Mutex<String>>) {
        let seen = Arc::new(Mutex::new(String::new()));
        let into = seen.clone();
        (Arc::new(move |t: &str| into.lock().unwrap().push_str(t)), seen)
    }

    #[test]
    fn an_anthropic_stream_becomes_the_message_it_streams() {
        let (show, seen) = shown();
        let mut sink = Anthropic::new(Some(show));
        let events = [
            json!({"type": "message_start", "message": {"usage": {"input_tokens": 120, "cache_read_input_tokens": 30}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Reading "}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "it."}}),
            json!({"type": "content_block_stop", "index": 0}),
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "t1", "name": "f", "input": {}}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": \"a"}}),
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ".rs\"}"}}),
            json!({"type": "content_block_stop", "index": 1}),
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 42}}),
        ];
        for event in &events {
            assert_eq!(sink.event("", &event.to_string()), Ok(false));
        }
        assert!(!sink.finished());
        assert_eq!(sink.event("message_stop", r#"{"type": "message_stop"}"#), Ok(true));
        let reply = super::super::anthropic::reply(&sink.answer()).unwrap();
        assert_eq!(reply.content[0], super::super::Block::text("Reading it."));
        assert!(
            matches!(&reply.content[1], super::super::Block::ToolCall { id, arguments, .. } if id == "t1" && arguments == &json!({"path": "a.rs"}))
        );
        assert_eq!((reply.usage.input, reply.usage.output), (150, 42));
        assert_eq!(*seen.lock().unwrap(), "Reading it.");
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        assert_eq!(
            sink.event("error", &overloaded.to_string()),
            Err(Interrupted::Retry("the stream reported: Overloaded".into()))
        );
    }

    #[test]
    fn an_openai_stream_becomes_the_completion_it_streams() {
        let (show, seen) = shown();
        let mut sink = OpenAi::new(Some(show));
        let chunks = [
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let me "}}]}),
            json!({"choices": [{"index": 0, "delta": {"content": "look."}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"pa"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "th\": \"b\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            json!({"choices": [], "usage": {"prompt_tokens": 9, "completion_tokens": 3}}),
        ];
        for chunk in &chunks {
            assert_eq!(sink.event("", &chunk.to_string()), Ok(false));
        }
        assert!(sink.finished());
        assert_eq!(sink.event("", "[DONE]"), Ok(true));
        let reply = super::super::openai::reply(&sink.answer()).unwrap();
        assert_eq!(reply.content[0], super::super::Block::text("Let me look."));
        assert!(
            matches!(&reply.content[1], super::super::Block::ToolCall { id, name, arguments, .. } if id == "c1" && name == "read" && arguments == &json!({"path": "b"}))
        );
        assert_eq!((reply.usage.input, reply.usage.output), (9, 3));
        assert_eq!(*seen.lock().unwrap(), "Let me look.");
        sink.reset();
        assert_eq!(sink.answer()["choices"][0]["message"]["content"], Value::Null);
        assert!(matches!(sink.event("", "{not json"), Err(Interrupted::Malformed(_))));
    }

    #[test]
    fn an_index_that_skips_ahead_is_refused_not_made_room_for() {
        let call = |index: u64| {
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": "c", "function": {"name": "f"}}]}}]})
                .to_string()
        };
        let mut sink = OpenAi::new(None);
        assert_eq!(sink.event("", &call(0)), Ok(false));
        assert_eq!(sink.event("", &call(1)), Ok(false));
        assert_eq!(sink.event("", &call(0)), Ok(false), "one seen before");
        for far in [3, 1_000_000, u64::from(u32::MAX), u64::MAX] {
            assert!(
                matches!(sink.event("", &call(far)), Err(Interrupted::Malformed(m)) if m.contains("index")),
                "{far}"
            );
        }
        assert!(sink.calls.len() == 2);
        let mut sink = Anthropic::new(None);
        let block = |index: u64| {
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
                .to_string()
        };
        assert_eq!(sink.event("", &block(0)), Ok(false));
        assert!(matches!(sink.event("", &block(4_294_967_295)), Err(Interrupted::Malformed(_))));
        assert_eq!(sink.content.len(), 1);
        let mut many = OpenAi::new(None);
        for index in 0..MAX_PARTS as u64 {
            assert_eq!(many.event("", &call(index)), Ok(false));
        }
        assert!(matches!(many.event("", &call(MAX_PARTS as u64)), Err(Interrupted::Malformed(_))), "at most MAX_PARTS");
    }
}
