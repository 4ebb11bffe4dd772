//! Never more than the host allows: when a call carries the host's own sandbox state (Codex's
//! `codex/sandbox-state-meta`, sent to servers that declare it), the stricter of the host's and
//! ours applies to that call. A read-only thread gets read-only file operations and a read-only
//! command sandbox; a thread without network gets commands without network.

use std::sync::Arc;

use serde_json::{Map, Value};
use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_sandbox::mode::{Network, SandboxMode};

/// The `_meta` key (and experimental capability) of Codex's sandbox state.
pub(crate) const CODEX_SANDBOX_STATE: &str = "codex/sandbox-state-meta";

/// What the host's sandbox allows a call, as far as it limits ours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HostLimits {
    /// The host lets the thread write nothing.
    pub(crate) read_only: bool,
    /// The host lets the thread's commands reach no network.
    pub(crate) no_network: bool,
}

impl HostLimits {
    /// The limits a call's `_meta` states, if it carries the host's sandbox state. A state this
    /// server cannot read limits the call to read-only without network: it never widens.
    pub(crate) fn from_meta(meta: &Map<String, Value>) -> Option<Self> {
        let state = meta.get(CODEX_SANDBOX_STATE)?;
        if let Some(profile) = state.get("permissionProfile").filter(|p| !p.is_null()) {
            return Some(Self::of_profile(profile));
        }
        if let Some(policy) = state.get("sandboxPolicy").filter(|p| !p.is_null()) {
            return Some(Self::of_policy(policy));
        }
        Some(Self::STRICT)
    }

    const STRICT: Self = Self { read_only: true, no_network: true };
    const NONE: Self = Self { read_only: false, no_network: false };

    /// Codex's permission profile: `disabled` (no sandbox), or `managed` with a file system
    /// (`unrestricted`, or `restricted` with read and write entries) and a network (`enabled`
    /// or `restricted`).
    fn of_profile(profile: &Value) -> Self {
        match profile.get("type").and_then(Value::as_str) {
            Some("disabled") => Self::NONE,
            Some("managed") => {
                let file_system = profile.get("file_system").or_else(|| profile.get("fileSystem"));
                let read_only = match file_system.and_then(|fs| fs.get("type")).and_then(Value::as_str) {
                    Some("unrestricted") => false,
                    Some("restricted") => !file_system
                        .and_then(|fs| fs.get("entries"))
                        .and_then(Value::as_array)
                        .is_some_and(|entries| entries.iter().any(|e| e.get("access") == Some(&Value::from("write")))),
                    _ => true,
                };
                let no_network = profile.get("network").and_then(Value::as_str) != Some("enabled");
                Self { read_only, no_network }
            }
            _ => Self::STRICT,
        }
    }

    /// The older sandbox policy: `danger-full-access`, `read-only`, `workspace-write` or
    /// `external-sandbox` (the last two with `network_access`).
    fn of_policy(policy: &Value) -> Self {
        let network = policy.get("network_access").or_else(|| policy.get("networkAccess"));
        let network_on =
            network.and_then(Value::as_bool).unwrap_or(false) || network.and_then(Value::as_str) == Some("enabled");
        match policy.get("type").and_then(Value::as_str) {
            Some("danger-full-access") => Self::NONE,
            Some("workspace-write") | Some("external-sandbox") => Self { read_only: false, no_network: !network_on },
            _ => Self::STRICT,
        }
    }

    /// `config` narrowed to these limits (the same `Arc` when they narrow nothing).
    pub(crate) fn apply(self, config: &Arc<Config>) -> Arc<Config> {
        let sandbox = if self.read_only { SandboxMode::ReadOnly } else { config.sandbox };
        let network = if self.no_network && config.network != Network::Deny { Network::Deny } else { config.network };
        if sandbox == config.sandbox && network == config.network {
            return config.clone();
        }
        Arc::new(Config { sandbox, network, ..(**config).clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits(state: Value) -> Option<HostLimits> {
        HostLimits::from_meta(json!({ CODEX_SANDBOX_STATE: state }).as_object().unwrap())
    }

    #[test]
    fn codex_profiles_and_policies_map_to_the_stricter_side() {
        let read = json!({"access": "read", "path": {"type": "special", "value": {"kind": "root"}}});
        let write =
            json!({"access": "write", "path": {"type": "special", "value": {"kind": "current_working_directory"}}});
        let managed = |entries: Vec<Value>, network: &str| json!({"permissionProfile": {"type": "managed", "network": network, "file_system": {"type": "restricted", "entries": entries}}});
        assert_eq!(limits(managed(vec![read.clone()], "restricted")), Some(HostLimits::STRICT));
        assert_eq!(
            limits(managed(vec![read.clone(), write], "restricted")),
            Some(HostLimits { read_only: false, no_network: true })
        );
        assert_eq!(limits(managed(vec![read], "enabled")), Some(HostLimits { read_only: true, no_network: false }));
        assert_eq!(limits(json!({"permissionProfile": {"type": "disabled"}})), Some(HostLimits::NONE));
        assert_eq!(
            limits(
                json!({"permissionProfile": {"type": "managed", "network": "enabled", "file_system": {"type": "unrestricted"}}})
            ),
            Some(HostLimits::NONE)
        );
        assert_eq!(limits(json!({"sandboxPolicy": {"type": "read-only"}})), Some(HostLimits::STRICT));
        assert_eq!(
            limits(json!({"sandboxPolicy": {"type": "workspace-write", "network_access": true}})),
            Some(HostLimits::NONE)
        );
        assert_eq!(limits(json!({"sandboxPolicy": {"type": "danger-full-access"}})), Some(HostLimits::NONE));
        // What cannot be read never widens.
        assert_eq!(limits(json!({"permissionProfile": {"type": "something-new"}})), Some(HostLimits::STRICT));
        assert_eq!(limits(json!({"sandboxCwd": "/w"})), Some(HostLimits::STRICT));
        assert_eq!(HostLimits::from_meta(&Map::new()), None);
    }
}
