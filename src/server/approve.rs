//! The approver over MCP: the gate's question as an `elicitation/create` form (allow once,
//! allow for this session, deny, and a note back to the agent), for clients that declared
//! form elicitation.

use std::sync::Arc;
use std::time::Duration;

use rmcp::service::{ElicitationError, ElicitationMode};
use rmcp::{Peer, RoleServer, ServiceError};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::policy::approve::{Answer, Approver, Question};

/// The form the user fills in (elicitation forms take flat primitive fields only).
#[derive(Debug, Deserialize, JsonSchema)]
struct ApprovalForm {
    /// `allow_once`, `allow_session` (also allow similar calls for the rest of this session) or `deny`.
    decision: Choice,
    /// An optional note for the agent (e.g. what to do instead).
    #[serde(default)]
    note: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(inline)]
enum Choice {
    AllowOnce,
    AllowSession,
    Deny,
}

rmcp::elicit_safe!(ApprovalForm);

/// An approver asking through `peer`, if the client can answer form elicitations.
pub fn approver(peer: &Peer<RoleServer>, timeout: Duration) -> Option<Approver> {
    if !peer.supported_elicitation_modes().contains(&ElicitationMode::Form) {
        return None;
    }
    let peer = peer.clone();
    Some(Arc::new(move |question: Question| {
        let peer = peer.clone();
        Box::pin(async move { ask(&peer, &question, timeout).await })
    }))
}

async fn ask(peer: &Peer<RoleServer>, question: &Question, timeout: Duration) -> Answer {
    match peer.elicit_with_timeout::<ApprovalForm>(question.message(), Some(timeout)).await {
        Ok(Some(form)) => match form.decision {
            Choice::AllowOnce => Answer::AllowOnce,
            Choice::AllowSession => Answer::AllowSession,
            Choice::Deny => Answer::Deny(Some(form.note).filter(|n| !n.trim().is_empty())),
        },
        Ok(None) | Err(ElicitationError::UserDeclined | ElicitationError::UserCancelled) => Answer::Deny(None),
        Err(ElicitationError::Service(ServiceError::Timeout { .. })) => Answer::TimedOut,
        Err(err) => {
            tracing::warn!(%err, "asking the user failed; the call is denied");
            Answer::Deny(Some(format!("the question could not be asked ({err})")))
        }
    }
}
