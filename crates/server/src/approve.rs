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

use toolbelt_mcp_policy::approve::{Answer, Approver, Question, Response};

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
pub(crate) fn approver(peer: &Peer<RoleServer>, timeout: Duration) -> Option<Approver> {
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

/// The process's key for `requestState` (HMAC-SHA256, a random 32-byte secret made at first
/// use): a state this process did not make cannot pass for one, and a restart voids them all.
fn codec() -> Option<&'static rmcp::model::RequestStateCodec> {
    static CODEC: std::sync::OnceLock<Option<rmcp::model::RequestStateCodec>> = std::sync::OnceLock::new();
    CODEC
        .get_or_init(|| {
            let mut key = [0u8; 32];
            getrandom::fill(&mut key).ok()?;
            rmcp::model::RequestStateCodec::try_new(key.to_vec()).ok()
        })
        .as_ref()
}

/// An approver for a protocol 2026-07-28 call. The question goes out as an input-required
/// result whose `requestState` is sealed with the process's key, bound to `binding` (the
/// session, the tool and a digest of the call's full arguments) and to the question's text,
/// valid for `ttl`, and naming a nonce the session keeps. A retried call's answer is taken
/// only when its state opens with the same binding and question and its nonce is one the
/// session has not used yet (it is used up then); otherwise the answer is ignored and the
/// question put again. So an answer can be neither forged, nor moved to another call or
/// question, nor replayed.
pub(crate) fn input_required_approver(
    responses: Option<InputResponses>,
    state: Option<String>,
    questions: Arc<toolbelt_mcp_tools::session::Session>,
    binding: String,
    ttl: Duration,
) -> Option<Approver> {
    let codec = codec()?;
    Some(Arc::new(move |question: Question| {
        let bound = format!("{binding}\n{}", question.message());
        let answered = (|| {
            let value = responses.as_ref()?.get(KEY)?;
            let nonce = codec.open_with(state.as_deref()?, bound.as_bytes()).ok()?;
            let took = questions.approvals.take_question(&String::from_utf8(nonce).ok()?)?;
            Some(Response { answer: answer_of_result(value), took: Some(took) })
        })();
        let response = answered.unwrap_or_else(|| {
            let mut nonce = [0u8; 16];
            let _ = getrandom::fill(&mut nonce);
            let nonce = hex::encode(nonce);
            questions.approvals.note_question(&nonce);
            let options = rmcp::model::SealOptions::new().associated_data(bound.as_bytes()).ttl(ttl);
            let state = codec.seal_with(nonce.as_bytes(), &options);
            Response { answer: Answer::Pending { message: question.message(), state }, took: None }
        });
        Box::pin(async move { response })
    }))
}

/// What an approval's `requestState` is bound to: the session, the tool and a digest of the
/// call's full arguments (keys sorted, so a client that reorders them on the retry still
/// matches).
pub(crate) fn binding(
    session: &str,
    tool: &str,
    arguments: Option<&serde_json::Map<String, serde_json::Value>>,
) -> String {
    use sha2::Digest;
    fn sorted(value: &serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(map) => {
                let ordered: std::collections::BTreeMap<&String, serde_json::Value> =
                    map.iter().map(|(k, v)| (k, sorted(v))).collect();
                serde_json::to_value(ordered).unwrap_or_default()
            }
            serde_json::Value::Array(items) => serde_json::Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let arguments = arguments.map(|map| sorted(&serde_json::Value::Object(map.clone()))).unwrap_or_default();
    let digest = sha2::Sha256::digest(arguments.to_string().as_bytes());
    format!("{session}\n{tool}\n{}", hex::encode(digest))
}

/// The answer in an echoed elicitation result.
pub(crate) fn answer_of_result(value: &serde_json::Value) -> Answer {
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
pub(crate) fn input_required(message: String, state: String) -> Result<InputRequiredResult, String> {
    let mut requests = InputRequests::new();
    requests.insert(KEY.into(), form(message)?);
    Ok(InputRequiredResult::new(Some(requests), Some(state)))
}

/// The approval form asking `message`, as an input request (of a call or of a task).
pub(crate) fn form(message: String) -> Result<InputRequest, String> {
    let schema = ElicitationSchema::from_type::<ApprovalForm>().map_err(|e| e.to_string())?;
    let params = ElicitRequestParams::FormElicitationParams { meta: None, message, requested_schema: schema };
    Ok(InputRequest::Elicitation(ElicitRequest::new(params)))
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
