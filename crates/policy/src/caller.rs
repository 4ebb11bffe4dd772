//! Who a call comes from, as the gate sees it: the settings, the roots, what the user already
//! allowed, and how to ask the user or tell the client.

use crate::approvals::Approvals;
use crate::approve::Approver;
use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_core::effect::Notify;
use toolbelt_mcp_sandbox::Roots;

/// What the gate needs of a call's context (built by `tools::Context::caller`).
pub struct Caller<'a> {
    /// The resolved configuration.
    pub config: &'a Config,
    /// The session's roots at the time of the call.
    pub roots: &'a Roots,
    /// The connection's grants and pending questions.
    pub approvals: &'a Approvals,
    /// Asks the user (when the client supports elicitation).
    pub approver: Option<&'a Approver>,
    /// The client's name (`clientInfo.name`; empty when unknown), for host-specific advice.
    pub client: &'a str,
    /// Sends a message to the client's log (when it asked for messages).
    pub notify: Option<&'a Notify>,
}
