//! MCP logging: the server's warnings (a root that vanished, a database error, a command the
//! sandbox could not confine, roots the client sent that cannot be used) as
//! `notifications/message`, which hosts show in their server logs. A client before protocol
//! 2026-07-28 picks the level with `logging/setLevel` (nothing is sent until it does); a
//! 2026-07-28 request carries it in `_meta` (nothing is sent for a request without it).
//! Messages name what happened and what to do; never file contents, arguments or secrets.
#![allow(deprecated, reason = "logging is deprecated by SEP-2577 but current hosts still show it")]

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam, ProtocolVersion};
use rmcp::service::{Peer, RequestContext};
use rmcp::{RoleServer, model::RequestMetaObject};

use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_tools::{Notify, Severity};

/// The level a connection asked for with `logging/setLevel` (`None`: it did not ask).
#[derive(Default, Clone)]
pub(crate) struct LogLevel(Arc<Mutex<Option<LoggingLevel>>>);

impl LogLevel {
    /// Records the level the client asked for.
    pub(crate) fn set(&self, level: LoggingLevel) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
    }

    fn get(&self) -> Option<LoggingLevel> {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Severity in the order the MCP levels (syslog's) give it; `LoggingLevel` has no order.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

fn level_of(severity: Severity) -> LoggingLevel {
    match severity {
        Severity::Info => LoggingLevel::Info,
        Severity::Notice => LoggingLevel::Notice,
        Severity::Warning => LoggingLevel::Warning,
        Severity::Error => LoggingLevel::Error,
    }
}

/// Where a connection's (or a request's) log messages go, at what level.
#[derive(Clone)]
pub(crate) struct Logger {
    peer: Peer<RoleServer>,
    wanted: Option<LoggingLevel>,
}

impl Logger {
    /// For a request: its own `_meta` level (protocol 2026-07-28), else the connection's.
    pub(crate) fn for_request(context: &RequestContext<RoleServer>, connection: &LogLevel) -> Self {
        Self { peer: context.peer.clone(), wanted: wanted(&context.meta, connection) }
    }

    /// For the connection, outside any request.
    pub(crate) fn for_connection(peer: &Peer<RoleServer>, connection: &LogLevel) -> Self {
        Self { peer: peer.clone(), wanted: connection.get() }
    }

    /// Sends `message` if the client asked for `severity` or less.
    pub(crate) fn log(&self, severity: Severity, message: String) {
        let level = level_of(severity);
        if self.wanted.is_none_or(|min| rank(level) < rank(min)) {
            return;
        }
        let param = LoggingMessageNotificationParam::new(level, message.into()).with_logger("toolbelt-mcp");
        let peer = self.peer.clone();
        tokio::spawn(async move {
            if let Err(err) = peer.notify_logging_message(param).await {
                tracing::debug!(%err, "log message not sent");
            }
        });
    }

    /// As a call's notifier.
    pub(crate) fn notifier(self) -> Option<Arc<Notify>> {
        self.wanted?;
        Some(Arc::new(move |severity, message| self.log(severity, message)))
    }
}

/// The level wanted for a request: a 2026-07-28 request's own (none without one).
fn wanted(meta: &RequestMetaObject, connection: &LogLevel) -> Option<LoggingLevel> {
    if meta.protocol_version().is_some_and(|v| v >= ProtocolVersion::V_2026_07_28) {
        meta.log_level()
    } else {
        connection.get()
    }
}

/// What a failed call should tell the client's log, if anything: failures of the server, not
/// of the model's request.
pub(crate) fn about_failure(error: &ToolError) -> Option<(Severity, String)> {
    match error {
        ToolError::Store(err) if !err.is_rule() => {
            Some((Severity::Error, format!("the todo and memory store failed: {err}")))
        }
        ToolError::Sandbox(why) => {
            Some((Severity::Warning, format!("a command was refused because it could not be confined: {why}")))
        }
        ToolError::Internal(why) => Some((Severity::Error, format!("internal error: {why}"))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_like_syslog() {
        assert!(rank(LoggingLevel::Warning) > rank(LoggingLevel::Notice));
        assert!(rank(LoggingLevel::Emergency) > rank(LoggingLevel::Error));
        assert_eq!(level_of(Severity::Warning), LoggingLevel::Warning);
    }
}
