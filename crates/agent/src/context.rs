//! Keeping a long run within the model's context window. The size of the next request is
//! estimated in bytes and turned into tokens at the rate the provider's reported usage showed
//! for the previous request (`usage.input_tokens`, `usage.prompt_tokens`). Past a threshold
//! (80 % of the window) the conversation is compacted: old tool results first become one-line
//! stubs (tool, arguments, size); if that is not enough, the older turns are summarised by the
//! same model in one request sent without tools (`summary.rs`). The most recent turns stay
//! verbatim.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use serde_json::Value;

use super::provider::{Block, Message, Role, ToolDef};
use super::report::one_line;

/// The share of the window past which the conversation is compacted.
const THRESHOLD: f64 = 0.8;
/// The share the stubs must bring it under, else the older turns are summarised too (so that
/// compactions stay rare instead of trimming one result every turn).
const LOW_WATER: f64 = 0.6;
/// Bytes per token assumed until the provider has reported usage (code and JSON run about 3
/// to 4; fewer bytes per token is the safe side).
const FIRST_BYTES_PER_TOKEN: f64 = 3.0;
/// The model turns (with their tool results) always kept verbatim.
pub(crate) const KEEP_TURNS: usize = 2;
/// Tool results at most this long are kept as they are.
const STUB_ABOVE: usize = 240;
/// What an image is counted as (providers charge by pixels, not by base64 bytes: about 1,600
/// tokens for a large one).
const IMAGE_TOKENS: f64 = 1600.0;
/// The window of a model whose family is not known.
pub(crate) const UNKNOWN_WINDOW: u64 = 32_768;

/// The context window of `model`, by family; [`UNKNOWN_WINDOW`] for models not known here
/// (a local server's model: pass `--context-window`).
pub(crate) fn window_for(model: &str) -> u64 {
    let model = model.to_ascii_lowercase();
    let name = model.rsplit('/').next().unwrap_or(&model);
    let known: [(&str, u64); 9] = [
        ("claude", 200_000),
        ("gpt-4.1", 1_047_576),
        ("gpt-5", 400_000),
        ("gpt-4o", 128_000),
        ("gpt-4-turbo", 128_000),
        ("o1", 200_000),
        ("o3", 200_000),
        ("o4", 200_000),
        ("gemini", 1_048_576),
    ];
    known.iter().find(|(prefix, _)| name.starts_with(prefix)).map_or(UNKNOWN_WINDOW, |(_, window)| *window)
}

/// One compaction, as the summary and the transcript report it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Compaction {
    /// The turn it happened before.
    pub turn: u32,
    /// Estimated tokens of the next request before and after.
    pub before: u64,
    /// See `before`.
    pub after: u64,
    /// Tool results turned into stubs, and the bytes they held.
    pub elided: usize,
    /// See `elided`.
    pub elided_bytes: usize,
    /// Messages replaced by a summary (0: the stubs were enough).
    pub summarised_messages: usize,
    /// The summary's length in bytes.
    pub summary_bytes: usize,
    /// Bytes cut from the newest tool results (which alone did not fit).
    pub cut_bytes: usize,
}

/// The window, the rate of bytes per token, and what was compacted so far.
#[derive(Debug, Clone)]
pub(crate) struct Context {
    /// The model's context window, in tokens.
    pub window: u64,
    bytes_per_token: f64,
    /// Bytes of the system prompt and the tool definitions (sent with every request).
    fixed_bytes: usize,
    /// Every path a tool call named, over the whole run.
    pub files: BTreeSet<String>,
    /// The compactions so far.
    pub compactions: Vec<Compaction>,
}

impl Context {
    /// A context of `window` tokens for requests carrying `system` and `tools`.
    pub(crate) fn new(window: u64, system: &str, tools: &[ToolDef]) -> Self {
        Self {
            window,
            bytes_per_token: FIRST_BYTES_PER_TOKEN,
            fixed_bytes: fixed_bytes(system, tools),
            files: BTreeSet::new(),
            compactions: Vec::new(),
        }
    }

    /// The estimate past which the conversation is compacted.
    pub(crate) fn threshold(&self) -> u64 {
        (self.window as f64 * THRESHOLD) as u64
    }

    /// The tools offered changed (a server went away): `tools` is what is sent now.
    pub(crate) fn set_tools(&mut self, system: &str, tools: &[ToolDef]) {
        self.fixed_bytes = fixed_bytes(system, tools);
    }

    /// The estimate the stubs must bring a compacted request under, or a summary follows.
    pub(crate) fn low_water(&self) -> u64 {
        (self.window as f64 * LOW_WATER) as u64
    }

    /// About how many bytes of text make `tokens` tokens.
    pub(crate) fn bytes_for(&self, tokens: u64) -> usize {
        (tokens as f64 * self.bytes_per_token) as usize
    }

    /// Estimated tokens of a request with `messages` and `reminder`.
    pub(crate) fn estimate(&self, messages: &[Message], reminder: Option<&str>) -> u64 {
        let bytes = self.bytes(messages, reminder);
        (bytes as f64 / self.bytes_per_token).ceil() as u64 + self.images(messages)
    }

    /// Learns the rate from a request of `messages` that the provider counted as `tokens`.
    pub(crate) fn calibrate(&mut self, messages: &[Message], reminder: Option<&str>, tokens: u64) {
        let text_tokens = tokens.saturating_sub(self.images(messages));
        if text_tokens > 0 {
            let rate = self.bytes(messages, reminder) as f64 / text_tokens as f64;
            // Clamped: a provider that counts oddly (or not at all) must not make the
            // estimate absurd either way.
            self.bytes_per_token = rate.clamp(1.5, 6.0);
        }
    }

    fn bytes(&self, messages: &[Message], reminder: Option<&str>) -> usize {
        self.fixed_bytes + messages.iter().map(message_bytes).sum::<usize>() + reminder.map_or(0, str::len)
    }

    fn images(&self, messages: &[Message]) -> u64 {
        let images = messages.iter().flat_map(|m| &m.content).map(image_count).sum::<usize>();
        (images as f64 * IMAGE_TOKENS) as u64
    }

    /// Adds the paths the tool calls of `blocks` name to [`Context::files`].
    pub(crate) fn note_files(&mut self, blocks: &[Block]) {
        for block in blocks {
            if let Block::ToolCall { arguments, .. } = block {
                for key in ["path", "paths", "file", "files", "cwd"] {
                    match arguments.get(key) {
                        Some(Value::String(path)) => {
                            self.files.insert(path.clone());
                        }
                        Some(Value::Array(paths)) => {
                            self.files.extend(paths.iter().filter_map(Value::as_str).map(str::to_string));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
}

/// The index of the first message kept verbatim: the assistant message [`KEEP_TURNS`] turns
/// back (or 1, after the task, when the run is shorter).
pub(crate) fn keep_from(messages: &[Message]) -> usize {
    let assistants: Vec<usize> = (0..messages.len()).filter(|&i| messages[i].role == Role::Assistant).collect();
    assistants.len().checked_sub(KEEP_TURNS).map_or(1, |i| assistants[i]).max(1)
}

/// Turns the tool results of `messages[..before]` longer than a stub into one: the tool, its
/// arguments and the result's size. Returns how many, and the bytes they held.
pub(crate) fn elide(messages: &mut [Message], before: usize) -> (usize, usize) {
    let mut calls: HashMap<String, String> = HashMap::new();
    let (mut count, mut bytes) = (0, 0);
    for message in messages.iter_mut().take(before) {
        for block in &mut message.content {
            match block {
                Block::ToolCall { id, name, arguments, .. } => {
                    let shown = match arguments {
                        Value::String(raw) => one_line(raw, 120),
                        other => one_line(&other.to_string(), 120),
                    };
                    calls.insert(id.clone(), format!("{name} {shown}"));
                }
                Block::ToolResult { id, content, is_error } => {
                    let held: usize = content.iter().map(block_bytes).sum();
                    if held <= STUB_ABOVE {
                        continue;
                    }
                    let call = calls.get(id.as_str()).map_or("a tool call", String::as_str);
                    let outcome = if *is_error { "an error of" } else { "a result of" };
                    let stub = format!(
                        "[elided by the agent to fit the context window: {call} → {outcome} {held} bytes; call it again if it is still needed]"
                    );
                    *content = vec![Block::text(stub)];
                    count += 1;
                    bytes += held;
                }
                _ => {}
            }
        }
    }
    (count, bytes)
}

/// Cuts the tool results of the last message by at least `excess` bytes in all (the longest
/// text first), each cut saying how much was left out. Returns the bytes removed.
pub(crate) fn cut_last(messages: &mut [Message], excess: usize) -> usize {
    let Some(last) = messages.last_mut() else { return 0 };
    let mut texts: Vec<&mut String> = last
        .content
        .iter_mut()
        .filter_map(|b| if let Block::ToolResult { content, .. } = b { Some(content) } else { None })
        .flatten()
        .filter_map(|b| if let Block::Text { text } = b { Some(text) } else { None })
        .collect();
    texts.sort_by_key(|t| std::cmp::Reverse(t.len()));
    let mut removed = 0;
    for text in texts {
        if removed >= excess {
            break;
        }
        // Room for the note, too.
        let want = (excess - removed + 160).min(text.len());
        let mut keep = text.len() - want;
        while !text.is_char_boundary(keep) {
            keep -= 1;
        }
        let gone = text.len() - keep;
        text.truncate(keep);
        text.push_str(&format!(
            "\n[… {gone} more bytes cut by the agent to fit the context window; ask for a smaller part]"
        ));
        removed += gone.saturating_sub(100);
    }
    removed
}

/// Bytes every request carries: the system prompt and the tool definitions.
fn fixed_bytes(system: &str, tools: &[ToolDef]) -> usize {
    system.len() + tools.iter().map(|t| 32 + t.name.len() + t.description.len() + json_len(&t.schema)).sum::<usize>()
}

/// Bytes a message adds to a request (roughly what its wire form carries).
fn message_bytes(message: &Message) -> usize {
    16 + message.content.iter().map(block_bytes).sum::<usize>()
}

fn block_bytes(block: &Block) -> usize {
    match block {
        Block::Text { text } => text.len() + 16,
        // Counted in `Context::images` instead.
        Block::Image { .. } => 32,
        Block::ToolCall { id, name, arguments, .. } => 48 + id.len() + name.len() + json_len(arguments),
        Block::ToolResult { id, content, .. } => 48 + id.len() + content.iter().map(block_bytes).sum::<usize>(),
    }
}

fn image_count(block: &Block) -> usize {
    match block {
        Block::Image { .. } => 1,
        Block::ToolResult { content, .. } => content.iter().map(image_count).sum(),
        _ => 0,
    }
}

/// The length of `value` as JSON, without building the string.
fn json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn turn(n: usize, result: &str) -> [Message; 2] {
        let id = format!("c{n}");
        [
            Message {
                role: Role::Assistant,
                content: vec![Block::ToolCall {
                    id: id.clone(),
                    name: "file_operations".into(),
                    arguments: json!({"operation": "read_file", "path": format!("f{n}.txt")}),
                    malformed: None,
                }],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult { id, content: vec![Block::text(result)], is_error: false }],
            },
        ]
    }

    fn conversation(turns: usize, result: &str) -> Vec<Message> {
        let mut messages = vec![Message { role: Role::User, content: vec![Block::text("the task")] }];
        for n in 0..turns {
            messages.extend(turn(n, result));
        }
        messages
    }

    #[test]
    fn windows_are_known_by_family() {
        assert_eq!(window_for("claude-sonnet-4-5"), 200_000);
        assert_eq!(window_for("openai/gpt-4.1-mini"), 1_047_576);
        assert_eq!(window_for("gpt-4o"), 128_000);
        assert_eq!(window_for("qwen3:8b"), UNKNOWN_WINDOW);
    }

    #[test]
    fn the_estimate_follows_the_reported_usage() {
        let messages = conversation(3, &"x".repeat(3000));
        let mut context = Context::new(32_000, "system", &[]);
        let first = context.estimate(&messages, None);
        assert!((3000..4000).contains(&first), "{first}");
        // The provider counted 4 bytes a token: the estimate follows.
        let bytes = context.bytes(&messages, None);
        context.calibrate(&messages, None, (bytes / 4) as u64);
        let after = context.estimate(&messages, None);
        assert!(after.abs_diff((bytes / 4) as u64) <= 1, "{after}");
        // Nonsense usage is clamped.
        context.calibrate(&messages, None, 1);
        assert_eq!(context.estimate(&messages, None), (bytes as f64 / 6.0).ceil() as u64);
    }

    #[test]
    fn old_results_become_stubs_and_recent_turns_stay_verbatim() {
        let mut messages = conversation(5, &"line of a file\n".repeat(200));
        let keep = keep_from(&messages);
        assert_eq!(keep, 7, "the last two turns (messages 7..11) stay");
        let (count, bytes) = elide(&mut messages, keep);
        assert_eq!((count, bytes), (3, 3 * (3000 + 16)));
        let Block::ToolResult { content, .. } = &messages[2].content[0] else { panic!() };
        let Block::Text { text } = &content[0] else { panic!() };
        assert!(
            text.contains(r#"file_operations {"operation":"read_file","path":"f0.txt"} → a result of 3016 bytes"#),
            "{text}"
        );
        let Block::ToolResult { content, .. } = &messages[8].content[0] else { panic!() };
        assert_eq!(content, &vec![Block::text("line of a file\n".repeat(200))]);
        // A second pass finds nothing more to elide.
        assert_eq!(elide(&mut messages, keep), (0, 0));
    }

    #[test]
    fn the_newest_results_are_cut_to_fit_saying_so() {
        let mut messages = conversation(1, &"é".repeat(5000));
        let removed = cut_last(&mut messages, 4000);
        assert!(removed >= 4000, "{removed}");
        let Block::ToolResult { content, .. } = &messages[2].content[0] else { panic!() };
        let Block::Text { text } = &content[0] else { panic!() };
        assert!(text.len() < 10_000 - 4000 + 200, "{}", text.len());
        assert!(text.ends_with("more bytes cut by the agent to fit the context window; ask for a smaller part]"));
    }

    #[test]
    fn files_named_by_calls_are_collected() {
        let mut context = Context::new(1000, "", &[]);
        let messages = conversation(2, "r");
        for message in &messages {
            context.note_files(&message.content);
        }
        assert_eq!(context.files.iter().collect::<Vec<_>>(), ["f0.txt", "f1.txt"]);
    }
}
