//! LLM providers behind one small trait: the conversation in a provider-neutral form, and the
//! two wire formats that carry it (Anthropic Messages, OpenAI-compatible Chat Completions).

pub(crate) mod anthropic;
pub(crate) mod http;
pub(crate) mod openai;
pub(crate) mod sampling;
mod sse_lines;
pub(crate) mod stream;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub(crate) use http::ProviderError;

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Role {
    /// The task, tool results and reminders.
    User,
    /// The model.
    Assistant,
}

/// One piece of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Block {
    /// Plain text.
    Text {
        /// The text.
        text: String,
    },
    /// An image (from a tool result), base64-encoded.
    Image {
        /// Its MIME type, e.g. `image/png`.
        mime: String,
        /// The base64 data.
        data: String,
    },
    /// The model asks for a tool call.
    ToolCall {
        /// The provider's id of the call, echoed in its result.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments (an object when well-formed).
        arguments: Value,
        /// Why the arguments could not be used, when the model sent malformed ones (the raw
        /// text is then kept in `arguments` as a string).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        malformed: Option<String>,
    },
    /// The answer to a tool call.
    ToolResult {
        /// The id of the call answered.
        id: String,
        /// Text and images.
        content: Vec<Block>,
        /// Whether the call failed.
        is_error: bool,
    },
}

impl Block {
    /// A text block.
    pub(crate) fn text(text: impl Into<String>) -> Self {
        Self::Text { text: text.into() }
    }
}

/// One message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Message {
    /// Who said it.
    pub role: Role,
    /// What was said.
    pub content: Vec<Block>,
}

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToolDef {
    /// The tool's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its JSON Schema (an object schema).
    pub schema: Value,
}

/// Everything one model turn needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Request<'a> {
    /// The system prompt.
    pub system: &'a str,
    /// The conversation so far (the last message is the user's).
    pub messages: &'a [Message],
    /// The tools offered.
    pub tools: &'a [ToolDef],
    /// Text added to the last user message for this request only (the todo reminder).
    pub reminder: Option<&'a str>,
    /// Most tokens the model may write in this turn.
    pub max_output_tokens: Option<u32>,
    /// Whether streamed text is shown as it arrives (not for the agent's own requests).
    pub show_text: bool,
}

/// Why the model stopped writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Finish {
    /// It finished its turn (a final answer, or tool calls to run).
    Done,
    /// It hit the output-token limit.
    Length,
    /// It refused or was filtered.
    Refused,
}

/// Tokens a turn used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub(crate) struct Usage {
    /// Prompt tokens (cache reads and writes included).
    pub input: u64,
    /// Generated tokens.
    pub output: u64,
}

/// The model's answer in one turn.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Reply {
    /// Text and tool calls, in order.
    pub content: Vec<Block>,
    /// Why it stopped.
    pub finish: Finish,
    /// Tokens used.
    pub usage: Usage,
}

/// An LLM API.
pub(crate) trait Provider: Send + Sync {
    /// The provider and model, for progress lines and the summary (e.g. `anthropic claude-…`).
    fn label(&self) -> String;
    /// Asks the model for its next turn (retrying what is worth retrying).
    fn complete<'a>(&'a self, request: Request<'a>) -> BoxFuture<'a, Result<Reply, ProviderError>>;
}

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// The Anthropic Messages API (`/v1/messages`).
    Anthropic,
    /// The OpenAI-compatible Chat Completions API (`/chat/completions`): OpenAI, Ollama,
    /// llama.cpp server, vLLM, OpenRouter.
    Openai,
}

impl Kind {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::Openai => "openai",
        }
    }
}

/// What a provider needs to be built.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The wire format.
    pub kind: Kind,
    /// The model name.
    pub model: String,
    /// The API's base URL (without the endpoint path).
    pub base_url: String,
    /// The API key, when there is one.
    pub api_key: Option<String>,
    /// The environment variable the key is read from (named in errors).
    pub key_env: String,
    /// How long one HTTP request may take.
    pub timeout: std::time::Duration,
    /// Whether replies are streamed (`--no-stream` turns it off).
    pub stream: bool,
}

/// The provider `settings` describe; retries are shown through `notify`, streamed text
/// through `show`.
pub(crate) fn build(
    settings: Settings,
    notify: http::Notify,
    show: Option<stream::TextSink>,
) -> Result<Box<dyn Provider>, ProviderError> {
    let client = http::Client::new(&settings)?.with_notify(notify);
    Ok(match settings.kind {
        Kind::Anthropic => Box::new(anthropic::Anthropic::new(client, settings, show)),
        Kind::Openai => Box::new(openai::OpenAi::new(client, settings, show)),
    })
}

/// Parses tool-call arguments sent as JSON text: the object, or the raw text and why not.
pub(crate) fn parse_arguments(raw: &str) -> (Value, Option<String>) {
    let raw = if raw.trim().is_empty() { "{}" } else { raw };
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => (value, None),
        Ok(other) => {
            (Value::String(raw.to_string()), Some(format!("the arguments are JSON {}, not an object", kind_of(&other))))
        }
        Err(err) => (Value::String(raw.to_string()), Some(format!("the arguments are not valid JSON ({err})"))),
    }
}

/// The JSON kind of `value`, for messages.
pub(crate) fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_parse_or_say_why_not() {
        assert_eq!(parse_arguments(r#"{"a":1}"#), (serde_json::json!({"a":1}), None));
        assert_eq!(parse_arguments("  "), (serde_json::json!({}), None));
        let (raw, why) = parse_arguments(r#"{"a":"#);
        assert_eq!(raw, Value::String(r#"{"a":"#.into()));
        assert!(why.unwrap().starts_with("the arguments are not valid JSON"));
        let (_, why) = parse_arguments("[1]");
        assert_eq!(why.unwrap(), "the arguments are JSON an array, not an object");
    }
}
