//! What an answer to a question means. A client may "answer" without any person seeing the
//! question: Claude Code `-p` cancels it, Codex `exec` declines it within milliseconds. Telling
//! the model "the user denied it" then would be false, and it would stop; instead such an
//! answer, a cancelled question and a timeout count as "nobody was asked": the configured
//! fallback applies, and the model is told how the user can allow such calls, for its host.

use std::time::Duration;

use crate::approve::Answer;
use toolbelt_mcp_core::config::args::Fallback;
use toolbelt_mcp_core::error::ToolError;

/// No person reads a question and answers it faster than this.
pub const INSTANT: Duration = Duration::from_millis(250);

/// The most characters of a user's note passed on to the agent (a note is a sentence or
/// two; a client could send megabytes, which every result holding it would keep).
pub const NOTE_CHARS: usize = 2_000;

/// `note`, cut to [`NOTE_CHARS`] characters, saying how much was left out.
pub fn bounded_note(note: String) -> String {
    match note.char_indices().nth(NOTE_CHARS) {
        None => note,
        Some((end, _)) => format!("{}… ({} more characters cut)", &note[..end], note[end..].chars().count()),
    }
}

/// What the gate does with an answer.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Run the call (and, with `grant`, remember the scope for the session).
    Allow {
        /// "Allow for this session" was chosen.
        grant: bool,
    },
    /// A person declined.
    Declined(Option<String>),
    /// Nobody decided: why not.
    NotAsked(String),
}

/// The meaning of `answer`; `asked_for` is how long the answer took, when known.
pub fn outcome(answer: Answer, asked_for: Option<Duration>, timeout: Duration) -> Outcome {
    match answer {
        Answer::AllowOnce => Outcome::Allow { grant: false },
        Answer::AllowSession => Outcome::Allow { grant: true },
        Answer::Deny(note) => match asked_for {
            Some(took) if took < INSTANT => Outcome::NotAsked(format!(
                "the client answered \"deny\" after {} ms, before anyone could read the question (a headless client declining on its own)",
                took.as_millis()
            )),
            _ => Outcome::Declined(note.map(bounded_note)),
        },
        Answer::Cancelled => {
            Outcome::NotAsked("the client cancelled the question (it could not show it, or it was dismissed)".into())
        }
        Answer::TimedOut => Outcome::NotAsked(format!("no answer within {} s", timeout.as_secs())),
        Answer::Pending { .. } => Outcome::NotAsked("the question is still open".into()),
    }
}

/// The error for a call nobody decided on, or `None` when the fallback allows it.
pub fn not_asked(reason: String, why: String, fallback: Fallback, how_to_allow: String) -> Option<ToolError> {
    match fallback {
        Fallback::Allow => None,
        Fallback::Deny => Some(ToolError::NotAsked { reason, why, how_to_allow }),
    }
}

/// How the user can allow such calls, for the host `client` names (its `clientInfo.name`),
/// after `server_side` (the server's own settings).
pub fn how_to_allow(client: &str, server_side: &str) -> String {
    let host_side = if client.starts_with("claude-code") {
        " In Claude Code, an `Elicitation` hook matching this server can answer the question (`{\"hookSpecificOutput\": {\"hookEventName\": \"Elicitation\", \"action\": \"accept\", \"content\": {\"decision\": \"allow_once\"}}}`); `--allowedTools` only covers Claude Code's own prompt."
    } else if client.starts_with("codex") {
        " Codex `exec` declines every server question: run the task in interactive `codex`; `default_tools_approval_mode = \"approve\"` only covers Codex's own prompt."
    } else if client.starts_with("qwen") || client.starts_with("gemini") {
        " Qwen Code and Gemini CLI cannot show server questions; `trust: true` only covers their own prompt."
    } else {
        ""
    };
    format!("{server_side}.{host_side}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instant_denials_cancels_and_timeouts_are_not_a_persons_answer() {
        let timeout = Duration::from_secs(300);
        let fast = outcome(Answer::Deny(None), Some(Duration::from_millis(3)), timeout);
        assert!(matches!(&fast, Outcome::NotAsked(why) if why.contains("after 3 ms")), "{fast:?}");
        let slow = outcome(Answer::Deny(Some("no".into())), Some(Duration::from_secs(4)), timeout);
        assert_eq!(slow, Outcome::Declined(Some("no".into())));
        assert_eq!(outcome(Answer::Deny(None), None, timeout), Outcome::Declined(None), "unknown timing: a person");
        let Outcome::Declined(Some(long)) = outcome(Answer::Deny(Some("n".repeat(9_000))), None, timeout) else {
            panic!("declined with a note")
        };
        assert_eq!(long, format!("{}… (7000 more characters cut)", "n".repeat(NOTE_CHARS)));
        assert!(matches!(outcome(Answer::Cancelled, None, timeout), Outcome::NotAsked(_)));
        let late = outcome(Answer::TimedOut, None, timeout);
        assert!(matches!(&late, Outcome::NotAsked(why) if why == "no answer within 300 s"), "{late:?}");
        assert_eq!(outcome(Answer::AllowSession, None, timeout), Outcome::Allow { grant: true });
    }

    #[test]
    fn hosts_get_their_own_fix() {
        assert!(how_to_allow("claude-code", "set x").contains("`Elicitation` hook"));
        assert!(how_to_allow("codex-mcp-client", "set x").contains("interactive `codex`"));
        assert_eq!(how_to_allow("some-editor", "set x"), "set x.");
        assert!(not_asked("r".into(), "w".into(), Fallback::Allow, String::new()).is_none());
    }
}
