//! Asking the user: the question the gate puts, the answers it accepts, and the approver the
//! server provides (MCP elicitation) when the client can ask. Free of protocol types.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// What the user is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The operation, e.g. `create_file`.
    pub operation: &'static str,
    /// Why it needs approval (paths, the command, what is beyond the sandbox).
    pub reason: String,
    /// The agent's justification, if it gave one.
    pub justification: Option<String>,
    /// What "allow for this session" would cover, in words.
    pub session_scope: String,
}

impl Question {
    /// The message shown to the user.
    pub fn message(&self) -> String {
        let mut message = format!("The agent wants to run `{}`: {}.", self.operation, self.reason);
        if let Some(why) = &self.justification {
            message.push_str(&format!("\nIts justification: {why}"));
        }
        message.push_str(&format!("\n\"Allow for this session\" covers {}.", self.session_scope));
        message
    }
}

/// The user's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Run it this once.
    AllowOnce,
    /// Run it, and calls in the same scope for the rest of the session.
    AllowSession,
    /// Do not run it, with an optional note for the agent.
    Deny(Option<String>),
    /// The question was cancelled or dismissed: nobody decided.
    Cancelled,
    /// No answer in time.
    TimedOut,
    /// The client must ask and retry the call with the answer (protocol 2026-07-28
    /// multi-round-trip requests): the question's text and the state to echo.
    Pending {
        /// The question, as shown to the user.
        message: String,
        /// Ties the answer to this question (echoed by the client).
        state: String,
    },
}

/// An answer, and how long it took when the approver saw it come (`None` for an answer that
/// came with a retried call).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The answer.
    pub answer: Answer,
    /// How long after the question it came.
    pub took: Option<std::time::Duration>,
}

/// Asks the user through the client.
pub type Approver = Arc<dyn Fn(Question) -> Pin<Box<dyn Future<Output = Response> + Send>> + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_operation_reason_justification_and_scope() {
        let question = Question {
            operation: "run_command",
            reason: "`make deploy` would run without the sandbox (escalated)".into(),
            justification: Some("deploys need the network".into()),
            session_scope: "commands starting with `make`, outside the sandbox".into(),
        };
        let message = question.message();
        assert!(message.starts_with("The agent wants to run `run_command`: `make deploy` would run"), "{message}");
        assert!(message.contains("Its justification: deploys need the network"));
        assert!(message.contains("covers commands starting with `make`"));
    }
}
