//! The approver over MCP: the gate's question as an elicitation form (allow once, allow for
//! this session, deny, and a note back to the agent). Clients before protocol 2026-07-28 get
//! an `elicitation/create` request during the call; 2026-07-28 clients get an input-required
//! result and retry the call with the answer (multi-round-trip requests).

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, ElicitationAction, ElicitationSchema, InputRequest,
    InputRequests, InputRequiredResult, InputResponses,
};
use rmcp::service::{ElicitationError, ElicitationMode};
use rmcp::{Peer, RoleServer, ServiceError};
use schemars::JsonSchema;
use serde::Deserialize;

use crate::policy::approve::{Answer, Approver, Question, Response};

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

/// The key of the approval question among a call's input requests.
const KEY: &str = "approval";

/// An approver for a protocol 2026-07-28 call: it takes the answer the client sent with this
/// (retried) call, if it answers this very question, else asks for input.
pub fn input_required_approver(responses: Option<InputResponses>, state: Option<String>) -> Approver {
    Arc::new(move |question: Question| {
        let fingerprint = question.fingerprint();
        let answer = match (responses.as_ref().and_then(|r| r.get(KEY)), state.as_deref()) {
            (Some(value), Some(echoed)) if echoed == fingerprint => answer_of_result(value),
            _ => Answer::Pending { message: question.message(), state: fingerprint },
        };
        Box::pin(async move { Response { answer, took: None } })
    })
}

/// The answer in an echoed elicitation result.
fn answer_of_result(value: &serde_json::Value) -> Answer {
    match serde_json::from_value::<ElicitResult>(value.clone()) {
        Ok(result) if result.action == ElicitationAction::Accept => {
            match result.content.map(serde_json::from_value::<ApprovalForm>) {
                Some(Ok(form)) => answer_of(form),
                _ => Answer::Deny(Some("the answer did not fill in the form".into())),
            }
        }
        Ok(result) if result.action == ElicitationAction::Decline => Answer::Deny(None),
        Ok(_) => Answer::Cancelled,
        Err(err) => Answer::Deny(Some(format!("the answer was not an elicitation result ({err})"))),
    }
}

/// The input-required result asking `message`, echoing `state`.
pub fn input_required(message: String, state: String) -> Result<InputRequiredResult, String> {
    let schema = ElicitationSchema::from_type::<ApprovalForm>().map_err(|e| e.to_string())?;
    let params = ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
    let mut requests = InputRequests::new();
    requests.insert(KEY.into(), InputRequest::Elicitation(ElicitRequest::new(params)));
    Ok(InputRequiredResult::new(Some(requests), Some(state)))
}

fn answer_of(form: ApprovalForm) -> Answer {
    match form.decision {
        Choice::AllowOnce => Answer::AllowOnce,
        Choice::AllowSession => Answer::AllowSession,
        Choice::Deny => Answer::Deny(Some(form.note).filter(|n| !n.trim().is_empty())),
    }
}

async fn ask(peer: &Peer<RoleServer>, question: &Question, timeout: Duration) -> Response {
    let asked = std::time::Instant::now();
    let answer = match peer.elicit_with_timeout::<ApprovalForm>(question.message(), Some(timeout)).await {
        Ok(Some(form)) => answer_of(form),
        Ok(None) | Err(ElicitationError::UserDeclined) => Answer::Deny(None),
        Err(ElicitationError::UserCancelled) => Answer::Cancelled,
        Err(ElicitationError::Service(ServiceError::Timeout { .. })) => Answer::TimedOut,
        Err(err) => {
            tracing::warn!(%err, "asking the user failed; nobody decided");
            Answer::Cancelled
        }
    };
    Response { answer, took: Some(asked.elapsed()) }
}
