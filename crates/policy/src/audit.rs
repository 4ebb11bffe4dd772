//! The audit log: one JSON line per call (what was asked, what was decided and by whom, how
//! it ended), appended with one write, rotated by size. Never file contents, environment
//! values or command output.

use std::fs::File;
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value};

use toolbelt_mcp_core::config::audit::{AuditSettings, KEEP};
use toolbelt_mcp_sandbox::fs;

/// The audit log's writer: its settings and, between records, the open file. One per process
/// (`server::Shared`), shared by every call.
#[derive(Debug, Clone)]
pub struct AuditLog {
    settings: AuditSettings,
    open: Arc<Mutex<Option<(File, u64)>>>,
}

/// How the gate ruled on a call, filled in as it decides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// `allow`, `deny`, `ask` (a question the client answers in a later request), or
    /// `invalid` (the call never reached a decision: bad arguments, no such operation).
    pub decision: &'static str,
    /// `policy`, `grant`, `user` or `fallback`.
    pub decided_by: &'static str,
    /// The effect's kind: `read`, `write`, `exec`, `control`, `history`.
    pub effect: &'static str,
    /// Paths (absolute) and the command line.
    pub subjects: Vec<String>,
    /// The agent's justification for an escalation.
    pub justification: Option<String>,
    /// Whether the call asked to go beyond the sandbox.
    pub escalate: bool,
}

/// One call, as logged.
#[derive(Debug, Serialize)]
pub struct Record<'a> {
    /// RFC 3339, UTC, milliseconds.
    pub time: String,
    /// The connection's session id.
    pub session: &'a str,
    /// The JSON-RPC request id.
    pub request: &'a str,
    /// The tool called.
    pub tool: &'a str,
    /// The `delegate` sub-agent that made the call (its number), when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sub_agent: Option<u64>,
    /// The operation.
    pub operation: &'a str,
    /// The effect's kind.
    pub effect: &'a str,
    /// Paths and command.
    pub subjects: &'a [String],
    /// Whether it asked to go beyond the sandbox.
    pub escalate: bool,
    /// `allow`, `deny` or `invalid`.
    pub decision: &'a str,
    /// Who decided.
    pub decided_by: &'a str,
    /// The agent's justification.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub justification: Option<&'a str>,
    /// Wall time of the whole call.
    pub duration_ms: u64,
    /// `ok`, or `error:<kind>`.
    pub outcome: String,
    /// Bytes of text returned.
    pub bytes: usize,
    /// Whether the result was cut.
    pub truncated: bool,
    /// Files changed, with lines added and removed where the operation reports them.
    pub changed_files: Vec<Changed>,
}

/// A changed file.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct Changed {
    /// As the model saw it.
    pub path: String,
    /// Lines added.
    pub lines_added: u64,
    /// Lines removed.
    pub lines_removed: u64,
}

impl AuditLog {
    /// Makes the records written so far durable (at shutdown).
    pub fn flush(&self) {
        if let Some((file, _)) = self.open.lock().unwrap_or_else(std::sync::PoisonError::into_inner).as_mut()
            && let Err(err) = file.sync_data()
        {
            tracing::warn!(%err, "cannot flush the audit log");
        }
    }

    /// A writer for the log `settings` name.
    pub fn new(settings: AuditSettings) -> Self {
        Self { settings, open: Arc::new(Mutex::new(None)) }
    }

    /// Records a call that named no tool or operation of this server, whose `operation` was
    /// not a string, or that a sub-agent was not given: nothing was decided or run.
    pub fn refused(
        &self,
        (session, sub_agent): (&str, Option<u64>),
        request: &str,
        tool: &str,
        operation: &str,
        outcome: &str,
    ) {
        self.write(&Record {
            time: now(),
            session,
            request,
            tool,
            sub_agent,
            operation,
            effect: "",
            subjects: &[],
            escalate: false,
            decision: "invalid",
            decided_by: "",
            justification: None,
            duration_ms: 0,
            outcome: outcome.to_string(),
            bytes: 0,
            truncated: false,
            changed_files: Vec::new(),
        });
    }

    /// Appends `record`. A log that cannot be written is reported on stderr and does not fail
    /// the call.
    pub fn write(&self, record: &Record<'_>) {
        let Some(path) = self.settings.path() else { return };
        let mut line = match serde_json::to_vec(record) {
            Ok(line) => line,
            Err(err) => {
                tracing::warn!(%err, "audit record did not serialise");
                return;
            }
        };
        line.push(b'\n');
        if let Err(err) = self.append(path, &line) {
            tracing::warn!(path = %path.display(), %err, "cannot write the audit log");
            *self.open.lock().unwrap_or_else(|p| p.into_inner()) = None;
        }
    }

    /// One `write` of `line`, rotating first once the file has outgrown `max_bytes` (as far as
    /// this process has seen: other servers sharing the file add to it unseen).
    fn append(&self, path: &std::path::Path, line: &[u8]) -> std::io::Result<()> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.as_ref().is_some_and(|(_, size)| *size > self.settings.max_bytes) {
            *open = None;
            fs::rotate_log(path, KEEP)?;
        }
        if open.is_none() {
            *open = Some(fs::open_log(path)?);
        }
        let Some((file, size)) = open.as_mut() else { return Ok(()) };
        file.write_all(line)?;
        *size += line.len() as u64;
        Ok(())
    }
}

/// RFC 3339 in UTC with milliseconds.
pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Milliseconds, saturating.
pub fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// The files a write's structured result names: its `path` with `lines_added`/`lines_removed`,
/// and the same in any array of rows (`apply_patch`'s `files`, `undo`'s `reverted`).
pub fn changed_files(structured: &Map<String, Value>) -> Vec<Changed> {
    let row = |map: &Map<String, Value>| {
        let path = map.get("path")?.as_str()?.to_string();
        let count = |key: &str| map.get(key).and_then(Value::as_u64).unwrap_or(0);
        Some(Changed { path, lines_added: count("lines_added"), lines_removed: count("lines_removed") })
    };
    let mut changed: Vec<Changed> = row(structured).into_iter().collect();
    for value in structured.values() {
        if let Value::Array(rows) = value {
            changed.extend(rows.iter().filter_map(Value::as_object).filter_map(row));
        }
    }
    changed
}

/// A `ToolError`'s variant name, for the `outcome` field.
pub fn error_kind(debug: &str) -> &str {
    let end = debug.find(|c: char| !c.is_alphanumeric()).unwrap_or(debug.len());
    &debug[..end]
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rows_and_kinds() {
        let single = json!({"operation": "replace_string", "path": "a.rs", "lines_added": 2, "lines_removed": 1});
        assert_eq!(
            changed_files(single.as_object().unwrap()),
            [Changed { path: "a.rs".into(), lines_added: 2, lines_removed: 1 }]
        );
        let patch = json!({"files": [{"path": "x", "lines_added": 1}, {"path": "y", "lines_removed": 3}], "total": 2});
        assert_eq!(changed_files(patch.as_object().unwrap()).len(), 2);
        assert_eq!(error_kind("OutsideRoots { path: \"x\" }"), "OutsideRoots");
        assert_eq!(error_kind("ReadOnly"), "ReadOnly");
    }

    #[test]
    fn appends_lines_and_rotates() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::new(AuditSettings::new(Some(dir.path().join("a/audit.jsonl")), 300));
        let record = Record {
            time: now(),
            session: "1-0",
            request: "7",
            tool: "file_operations",
            sub_agent: None,
            operation: "read_file",
            effect: "read",
            subjects: &["/ws/a".into()],
            escalate: false,
            decision: "allow",
            decided_by: "policy",
            justification: None,
            duration_ms: 1,
            outcome: "ok".into(),
            bytes: 10,
            truncated: false,
            changed_files: vec![],
        };
        for _ in 0..6 {
            log.write(&record);
        }
        let text = std::fs::read_to_string(dir.path().join("a/audit.jsonl")).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        assert_eq!(first["operation"], "read_file");
        assert!(first["time"].as_str().unwrap().ends_with('Z'));
        assert!(dir.path().join("a/audit.jsonl.1").exists(), "rotated past 300 bytes");
    }
}
