//! `agent --resume FILE`: the conversation a `--transcript` file recorded, rebuilt so a new
//! run can go on with it. Records are read in order (`message` adds one; `compaction` and
//! `resume` carry the whole conversation as it was then); a last line cut off by a crash is
//! left out, and a call whose result was never recorded gets one saying so. A file this
//! version cannot read is a clear error, never a panic.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::provider::{Block, Message, Role};

/// A transcript that cannot be resumed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ResumeError {
    /// The file cannot be read.
    #[error("cannot read the transcript `{path}`: {reason}; pass a file `--transcript` wrote")]
    Read {
        /// The file.
        path: String,
        /// Why.
        reason: String,
    },
    /// No conversation in it.
    #[error("`{path}` holds no conversation to resume; pass a file `--transcript` wrote")]
    Empty {
        /// The file.
        path: String,
    },
    /// A record this version cannot read.
    #[error(
        "line {line} of `{path}` is not a transcript record this version can read ({reason}); it may come from another version of toolbelt-mcp"
    )]
    Record {
        /// The file.
        path: String,
        /// The line, from 1.
        line: usize,
        /// What is wrong.
        reason: String,
    },
}

/// The servers a run was started with, recorded so a resumed run uses the same ones.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Invocation {
    /// `--mcp-config` files (absolute).
    #[serde(default)]
    pub mcp_config: Vec<PathBuf>,
    /// `--no-toolbelt`.
    #[serde(default)]
    pub no_toolbelt: bool,
    /// `--server-url`.
    #[serde(default)]
    pub server_url: Option<String>,
    /// `--server-cmd`.
    #[serde(default)]
    pub server_cmd: Option<String>,
}

impl Invocation {
    /// Whether it names no server at all (the default `serve` child only).
    pub(crate) fn is_default(&self) -> bool {
        *self == Self::default()
    }
}

/// A conversation ready to go on.
#[derive(Debug, Clone)]
pub(crate) struct Resumed {
    /// The messages, each tool call answered, roles alternating, ending with either role.
    pub messages: Vec<Message>,
    /// The task as the first run was given it.
    pub task: String,
    /// The servers of the first run, when it recorded them.
    pub invocation: Option<Invocation>,
    /// What was repaired, to say on stderr.
    pub notes: Vec<String>,
}

/// Reads the transcript at `path`.
pub(crate) fn load(path: &Path) -> Result<Resumed, ResumeError> {
    let shown = path.display().to_string();
    let bytes = toolbelt_mcp_sandbox::fs::read_user_file(path)
        .map_err(|e| ResumeError::Read { path: shown.clone(), reason: e.to_string() })?;
    parse(&String::from_utf8_lossy(&bytes), &shown)
}

/// Rebuilds the conversation of a transcript's `text` (`path` is for messages).
pub(crate) fn parse(text: &str, path: &str) -> Result<Resumed, ResumeError> {
    let lines: Vec<&str> = text.lines().collect();
    let (mut messages, mut task, mut invocation, mut notes) = (Vec::<Message>::new(), None, None, Vec::new());
    for (index, line) in lines.iter().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let number = index + 1;
        let record = |reason: String| ResumeError::Record { path: path.to_string(), line: number, reason };
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            // A crash cuts the line being written; a later run appending ends it first.
            notes.push(format!("line {number} was cut off (the run was stopped while writing it); left out"));
            continue;
        };
        match value.get("type").and_then(Value::as_str) {
            Some("start") => {
                if task.is_none() {
                    task = value.get("task").and_then(Value::as_str).map(str::to_string);
                }
                if let Some(recorded) = value.get("invocation") {
                    invocation = Some(
                        serde_json::from_value(recorded.clone()).map_err(|e| record(format!("its servers: {e}")))?,
                    );
                }
            }
            Some("message") => {
                let role: Role =
                    serde_json::from_value(value["role"].clone()).map_err(|e| record(format!("its role: {e}")))?;
                let content: Vec<Block> = serde_json::from_value(value["content"].clone())
                    .map_err(|e| record(format!("its content: {e}")))?;
                messages.push(Message { role, content });
            }
            Some("compaction" | "resume") => {
                messages = serde_json::from_value(value["messages"].clone())
                    .map_err(|e| record(format!("its messages: {e}")))?;
            }
            Some(_) => {}
            None => return Err(record("it has no `type`".into())),
        }
    }
    let messages = repair(messages, &mut notes);
    let Some(first) = messages.first() else { return Err(ResumeError::Empty { path: path.to_string() }) };
    let task = task.unwrap_or_else(|| first_text(first));
    Ok(Resumed { messages, task, invocation, notes })
}

/// `messages` with `prompt` as the user's next instruction.
pub(crate) fn continue_with(mut messages: Vec<Message>, prompt: &str) -> Vec<Message> {
    match messages.last_mut() {
        Some(last) if last.role == Role::User => last.content.push(Block::text(prompt)),
        _ => messages.push(Message { role: Role::User, content: vec![Block::text(prompt)] }),
    }
    messages
}

/// Makes a recorded conversation one a provider takes: it starts with the user, roles
/// alternate (consecutive messages of one role are merged), and every tool call has a result
/// right after it (one the run never recorded says so).
fn repair(recorded: Vec<Message>, notes: &mut Vec<String>) -> Vec<Message> {
    let mut messages: Vec<Message> = Vec::new();
    for message in recorded.into_iter().skip_while(|m| m.role != Role::User) {
        match messages.last_mut() {
            Some(last) if last.role == message.role => last.content.extend(message.content),
            _ => messages.push(message),
        }
    }
    let mut i = 0;
    while i < messages.len() {
        if messages[i].role == Role::Assistant {
            let asked: Vec<String> = messages[i]
                .content
                .iter()
                .filter_map(|b| if let Block::ToolCall { id, .. } = b { Some(id.clone()) } else { None })
                .collect();
            if !asked.is_empty() {
                if messages.get(i + 1).is_none() {
                    messages.push(Message { role: Role::User, content: Vec::new() });
                }
                let next = &mut messages[i + 1];
                let answered: BTreeSet<String> = next
                    .content
                    .iter()
                    .filter_map(|b| if let Block::ToolResult { id, .. } = b { Some(id.clone()) } else { None })
                    .collect();
                let missing: Vec<Block> = asked
                    .into_iter()
                    .filter(|id| !answered.contains(id))
                    .map(|id| Block::ToolResult {
                        id,
                        content: vec![Block::text(
                            "the run stopped before this call's result was recorded; its effects are unknown: check before relying on them",
                        )],
                        is_error: true,
                    })
                    .collect();
                if !missing.is_empty() {
                    notes.push(format!("{} tool call(s) had no recorded result; the model is told so", missing.len()));
                    // Results come first in a user message.
                    let rest = std::mem::take(&mut next.content);
                    next.content = missing.into_iter().chain(rest).collect();
                }
            }
        }
        i += 1;
    }
    messages
}

fn first_text(message: &Message) -> String {
    message
        .content
        .iter()
        .find_map(|b| if let Block::Text { text } = b { Some(text.clone()) } else { None })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(value: Value) -> String {
        format!("{value}\n")
    }

    fn transcript() -> String {
        [
            line(json!({"type": "start", "task": "fix it", "invocation": {"mcp_config": ["/m.json"], "no_toolbelt": false}})),
            line(json!({"type": "message", "turn": 0, "role": "user", "content": [{"type": "text", "text": "fix it"}]})),
            line(json!({"type": "message", "turn": 1, "role": "assistant", "content": [
                {"type": "text", "text": "Reading."},
                {"type": "tool_call", "id": "c1", "name": "file_operations", "arguments": {"operation": "read_file", "path": "a"}}
            ]})),
        ]
        .concat()
    }

    #[test]
    fn a_run_cut_before_its_results_resumes_with_results_saying_so() {
        let text = transcript() + r#"{"type": "message", "turn": 1, "ro"#;
        let resumed = parse(&text, "t.jsonl").unwrap();
        assert_eq!(resumed.task, "fix it");
        assert_eq!(resumed.invocation.unwrap().mcp_config, [PathBuf::from("/m.json")]);
        assert_eq!(resumed.messages.len(), 3);
        let Block::ToolResult { id, is_error, .. } = &resumed.messages[2].content[0] else { panic!() };
        assert_eq!((id.as_str(), *is_error), ("c1", true));
        assert_eq!(resumed.notes.len(), 2, "{:?}", resumed.notes);
        let next = continue_with(resumed.messages, "go on");
        assert_eq!(next.len(), 3);
        assert_eq!(next[2].content.last(), Some(&Block::text("go on")));
    }

    #[test]
    fn a_compaction_replaces_what_came_before_and_roles_alternate() {
        let compacted = json!({"type": "compaction", "messages": [
            {"role": "user", "content": [{"type": "text", "text": "fix it, summarised"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Done."}]}
        ]});
        let text = transcript() + &line(compacted);
        let resumed = parse(&text, "t").unwrap();
        assert_eq!(resumed.messages.len(), 2);
        let next = continue_with(resumed.messages, "now test it");
        assert_eq!(next[2], Message { role: Role::User, content: vec![Block::text("now test it")] });
    }

    #[test]
    fn files_that_are_not_transcripts_fail_clearly() {
        assert!(matches!(parse("", "t"), Err(ResumeError::Empty { .. })));
        assert!(matches!(parse("not json at all\n", "t"), Err(ResumeError::Empty { .. })));
        let odd = line(json!({"type": "message", "role": "user", "content": [{"type": "hologram"}]}));
        let err = parse(&odd, "t").unwrap_err().to_string();
        assert!(
            err.starts_with("line 1 of `t` is not a transcript record this version can read (its content:"),
            "{err}"
        );
        let untyped = parse("{\"role\": \"user\"}\n", "t").unwrap_err().to_string();
        assert!(untyped.contains("it has no `type`"), "{untyped}");
    }
}
