//! The summary of older turns, when stubs for old tool results are not enough to fit the
//! context: what the summary request says (the older messages as a plain transcript, so it
//! can be sent without tools), and the message that replaces those turns (the task, the
//! latest instruction, the summary and the files touched, which the agent adds itself rather
//! than trusting the summary to keep them).

use std::collections::BTreeSet;

use super::provider::{Block, Message, Role};
use super::report::one_line;

/// The system prompt of the summary request.
pub(crate) const SYSTEM: &str = "You compact the conversation of a coding agent so that it can go on within its context \
window. You are given the earlier part of the conversation as a transcript. Write a summary that the agent will read \
instead of those turns. Keep: the task and the user's latest instruction; the decisions made and why; every file \
read, created or changed, with what was learned or done to it; commands run and what they showed, briefly; the open \
todo list; what remains to be done next. Be factual and specific (names, paths, values); leave out pleasantries. \
Plain text, at most about 600 words.";
/// Most tokens the summary may take.
pub(crate) const MAX_TOKENS: u32 = 2048;
/// The longest text block of the transcript shown whole.
const TEXT_CUT: usize = 4000;
/// The longest tool result shown (they are mostly stubs by then).
const RESULT_CUT: usize = 1200;

/// The user message of the summary request: `old` as a transcript within `budget` bytes,
/// with the task, the latest instruction, the files touched and the todo list.
pub(crate) fn request_text(
    task: &str,
    instruction: &str,
    old: &[Message],
    files: &BTreeSet<String>,
    todo: Option<&str>,
    budget: usize,
) -> String {
    let mut transcript = String::new();
    for message in old {
        transcript.push_str(match message.role {
            Role::User => "\n## user\n",
            Role::Assistant => "\n## assistant\n",
        });
        for block in &message.content {
            render(block, &mut transcript);
        }
    }
    let transcript = fit(&transcript, budget);
    let mut text = format!("The task: {task}\n");
    if instruction != task {
        text.push_str(&format!("The user's latest instruction: {instruction}\n"));
    }
    text.push_str(&format!("Files touched so far: {}\n", listed(files)));
    if let Some(todo) = todo {
        text.push_str(&format!("The todo list now:\n{todo}\n"));
    }
    text.push_str("\nThe earlier conversation:\n");
    text.push_str(&transcript);
    text.push_str("\n\nWrite the summary now.");
    text
}

/// The message that replaces the summarised turns (it comes first, from the user).
pub(crate) fn replacement(task: &str, instruction: &str, summary: &str, files: &BTreeSet<String>) -> Message {
    let mut text = task.to_string();
    text.push_str(
        "\n\n<earlier-turns>\nThe agent compacted the earlier turns of this run to fit the context window; this \
         summary replaces them.\n\n",
    );
    text.push_str(summary.trim());
    text.push_str(&format!("\n\nFiles touched so far: {}\n", listed(files)));
    if instruction != task {
        text.push_str(&format!("The user's latest instruction: {instruction}\n"));
    }
    text.push_str("</earlier-turns>");
    Message { role: Role::User, content: vec![Block::text(text)] }
}

fn listed(files: &BTreeSet<String>) -> String {
    if files.is_empty() { "none".into() } else { files.iter().map(String::as_str).collect::<Vec<_>>().join(", ") }
}

fn render(block: &Block, out: &mut String) {
    match block {
        Block::Text { text } => {
            out.push_str(&cut(text, TEXT_CUT));
            out.push('\n');
        }
        Block::Image { mime, .. } => out.push_str(&format!("[an image, {mime}]\n")),
        Block::ToolCall { name, arguments, .. } => {
            out.push_str(&format!("→ called {name} {}\n", one_line(&arguments.to_string(), 300)));
        }
        Block::ToolResult { content, is_error, .. } => {
            out.push_str(if *is_error { "← error: " } else { "← result: " });
            let inner: Vec<&str> = content
                .iter()
                .map(|block| if let Block::Text { text } = block { text.as_str() } else { "[an image]" })
                .collect();
            out.push_str(&cut(&inner.join("\n"), RESULT_CUT));
            out.push('\n');
        }
    }
}

/// `text` cut to `limit` bytes at a character boundary, saying so.
fn cut(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_string();
    }
    let end = (0..=limit).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    format!("{}[… {} more bytes]", &text[..end], text.len() - end)
}

/// `transcript` within `budget` bytes: its start (a third) and its end (the rest) when it is
/// longer, the middle said to be left out.
fn fit(transcript: &str, budget: usize) -> String {
    if transcript.len() <= budget {
        return transcript.to_string();
    }
    let head = (0..=budget / 3).rev().find(|&i| transcript.is_char_boundary(i)).unwrap_or(0);
    let tail_from = transcript.len() - (budget - head);
    let tail = (tail_from..transcript.len()).find(|&i| transcript.is_char_boundary(i)).unwrap_or(transcript.len());
    format!(
        "{}\n[… {} bytes of the conversation left out here …]\n{}",
        &transcript[..head],
        tail - head,
        &transcript[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn old() -> Vec<Message> {
        vec![
            Message { role: Role::User, content: vec![Block::text("fix the parser")] },
            Message {
                role: Role::Assistant,
                content: vec![
                    Block::text("Reading it."),
                    Block::ToolCall {
                        id: "1".into(),
                        name: "file_operations".into(),
                        arguments: json!({"operation": "read_file", "path": "src/parse.rs"}),
                        malformed: None,
                    },
                ],
            },
            Message {
                role: Role::User,
                content: vec![Block::ToolResult {
                    id: "1".into(),
                    content: vec![Block::text("x".repeat(5000))],
                    is_error: false,
                }],
            },
        ]
    }

    #[test]
    fn the_request_carries_the_task_files_todo_and_a_bounded_transcript() {
        let files: BTreeSet<String> = ["src/parse.rs".to_string()].into();
        let text = request_text("fix the parser", "fix the parser", &old(), &files, Some("- [ ] add a test"), 100_000);
        assert!(text.starts_with("The task: fix the parser\nFiles touched so far: src/parse.rs\n"), "{text}");
        assert!(text.contains("- [ ] add a test") && !text.contains("latest instruction"));
        assert!(text.contains(r#"→ called file_operations {"operation":"read_file","path":"src/parse.rs"}"#));
        assert!(text.contains("[… 3800 more bytes]"), "results are cut");
        let small = request_text("t", "now this", &old(), &files, None, 300);
        assert!(small.contains("The user's latest instruction: now this"));
        assert!(small.contains("bytes of the conversation left out here"), "{small}");
        assert!(small.len() < 700, "{}", small.len());
    }

    #[test]
    fn the_replacement_keeps_the_task_and_files_whatever_the_summary_says() {
        let files: BTreeSet<String> = ["a.rs".to_string(), "b.rs".to_string()].into();
        let message = replacement("the task", "the task", "  it went well  ", &files);
        assert_eq!(message.role, Role::User);
        let Block::Text { text } = &message.content[0] else { panic!() };
        assert!(text.starts_with("the task\n\n<earlier-turns>"));
        assert!(text.contains("\n\nit went well\n\nFiles touched so far: a.rs, b.rs\n</earlier-turns>"), "{text}");
    }

    #[test]
    fn cutting_respects_characters() {
        assert_eq!(cut("ééé", 3), "é[… 4 more bytes]");
        let fitted = fit(&"é".repeat(100), 30);
        assert!(fitted.contains("left out here"), "{fitted}");
    }
}
