//! Asking the user about a destination a command's network rules do not list: the proxy holds
//! the connection while the question is open. "Allow once" lets the command reach it for the
//! rest of its run, "allow for this session" every command of the session; a decline, or
//! nobody to ask (no elicitation, a cancelled or instant answer, no answer in time), refuses
//! it, saying how to list it. Each decision is in the audit log.

use std::sync::{Arc, PoisonError};
use std::time::Instant;

use crate::approvals::NetworkGrants;
use crate::approve::{Answer, Approver, Question};
use crate::ask::{self, Outcome};
use crate::audit::{AuditLog, Record};

/// Who asks, and what the answers are logged with.
#[derive(Clone)]
pub struct NetworkAsk {
    /// Asks the user, when the client can.
    pub approver: Option<Approver>,
    /// The session's grants.
    pub grants: NetworkGrants,
    /// The command's line, shown in the question.
    pub command: String,
    /// How long a question may stay open.
    pub timeout: std::time::Duration,
    /// The audit log, and the session and request the command came with.
    pub audit: AuditLog,
    /// The connection's session id.
    pub session: String,
    /// The request that started the command.
    pub request: String,
}

/// The proxy's asker for one command: `None` for a destination allowed, else why not.
pub fn asker(ask: NetworkAsk) -> toolbelt_mcp_sandbox::proxy::Asker {
    let ask = Arc::new(ask);
    Arc::new(move |host: String, port: u16, what: Option<&'static str>| {
        let ask = ask.clone();
        Box::pin(async move { ask.decide(&host, port, what).await })
    })
}

impl NetworkAsk {
    async fn decide(&self, host: &str, port: u16, what: Option<&str>) -> Option<String> {
        let listed = format!("add `network_allow = [\"{host}:{port}\"]` to the config to let commands reach it");
        let granted =
            self.grants.lock().unwrap_or_else(PoisonError::into_inner).iter().any(|(h, p)| h == host && *p == port);
        if granted {
            self.log(host, port, "allow", "grant");
            return None;
        }
        let Some(approver) = &self.approver else {
            self.log(host, port, "deny", "fallback");
            return Some(format!(
                "not on the list of hosts commands may reach, and this client cannot ask the user: {listed}"
            ));
        };
        let question = Question {
            operation: "run_command",
            reason: format!(
                "the command `{}` connects to `{host}:{port}`{}, which `network_allow` does not list",
                self.command,
                what.map(|what| format!(" ({what})")).unwrap_or_default()
            ),
            details: Vec::new(),
            stdin: None,
            written: None,
            justification: None,
            session_scope: format!("connections to `{host}:{port}` by every command of this session"),
            sub_agent: None,
        };
        let started = Instant::now();
        let response = approver(question).await;
        let took = response.took.or_else(|| Some(started.elapsed()));
        if let Answer::Pending { .. } = response.answer {
            self.log(host, port, "deny", "fallback");
            return Some(format!(
                "not on the list of hosts commands may reach, and this client answers questions only with a retried call, which a running command cannot wait for: {listed}"
            ));
        }
        let answer = response.answer;
        match ask::outcome(answer, took, self.timeout) {
            Outcome::Allow { grant } => {
                if grant {
                    self.grants.lock().unwrap_or_else(PoisonError::into_inner).push((host.to_string(), port));
                }
                self.log(host, port, "allow", "user");
                None
            }
            Outcome::Declined(note) => {
                self.log(host, port, "deny", "user");
                let note = note.map(|note| format!(" (their note: {note})")).unwrap_or_default();
                Some(format!("the user declined it{note}"))
            }
            Outcome::NotAsked(why) => {
                self.log(host, port, "deny", "fallback");
                Some(format!("not on the list of hosts commands may reach, and nobody was asked ({why}): {listed}"))
            }
        }
    }

    fn log(&self, host: &str, port: u16, decision: &str, decided_by: &str) {
        let subjects = [format!("{host}:{port}"), self.command.clone()];
        self.audit.write(&Record {
            time: crate::audit::now(),
            session: &self.session,
            request: &self.request,
            tool: "terminal_operations",
            // The command's own record names the sub-agent that ran it, when one did.
            sub_agent: None,
            operation: "network",
            effect: "network",
            subjects: &subjects,
            escalate: false,
            decision,
            decided_by,
            justification: None,
            duration_ms: 0,
            outcome: "ok".into(),
            bytes: 0,
            truncated: false,
            changed_files: Vec::new(),
        });
    }
}
