//! Never more than the host allows: when a call carries the host's own sandbox state (Codex's
//! `codex/sandbox-state-meta`, sent to servers that declare it), the stricter of the host's and
//! ours applies to that call. A read-only thread gets read-only file operations and a read-only
//! command sandbox; a thread without network gets commands without network.

use std::path::{Path, PathBuf};
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
    /// `roots`: the call's, which a write entry of the profile must cover to let it write.
    pub(crate) fn from_meta(meta: &Map<String, Value>, roots: &[PathBuf]) -> Option<Self> {
        let state = meta.get(CODEX_SANDBOX_STATE)?;
        let profile = state.get("permissionProfile").filter(|p| !p.is_null()).map(|p| Self::of_profile(p, roots));
        let policy = state.get("sandboxPolicy").filter(|p| !p.is_null()).map(Self::of_policy);
        Some(match (profile, policy) {
            // Both said: the stricter of the two, field by field.
            (Some(a), Some(b)) => {
                Self { read_only: a.read_only || b.read_only, no_network: a.no_network || b.no_network }
            }
            (Some(one), None) | (None, Some(one)) => one,
            (None, None) => Self::STRICT,
        })
    }

    const STRICT: Self = Self { read_only: true, no_network: true };
    const NONE: Self = Self { read_only: false, no_network: false };

    /// Codex's permission profile: `disabled` (no sandbox), or `managed` with a file system
    /// (`unrestricted`, or `restricted` with read and write entries) and a network (`enabled`
    /// or `restricted`).
    fn of_profile(profile: &Value, roots: &[PathBuf]) -> Self {
        match profile.get("type").and_then(Value::as_str) {
            Some("disabled") => Self::NONE,
            Some("managed") => {
                let file_system = profile.get("file_system").or_else(|| profile.get("fileSystem"));
                let read_only = match file_system.and_then(|fs| fs.get("type")).and_then(Value::as_str) {
                    Some("unrestricted") => false,
                    Some("restricted") => !file_system
                        .and_then(|fs| fs.get("entries"))
                        .and_then(Value::as_array)
                        .is_some_and(|entries| entries.iter().any(|entry| writes_the_roots(entry, roots))),
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

/// Whether a profile entry lets the thread write where this server's roots are: `write` access
/// to the file system's root, to the thread's working directory, or to a path that holds every
/// root. An entry for elsewhere (the temp dirs), of an unknown kind, or without a path, does not.
fn writes_the_roots(entry: &Value, roots: &[PathBuf]) -> bool {
    if entry.get("access").and_then(Value::as_str) != Some("write") {
        return false;
    }
    let Some(path) = entry.get("path") else { return false };
    match path.get("type").and_then(Value::as_str) {
        Some("special") => matches!(
            path.get("value").and_then(|v| v.get("kind")).and_then(Value::as_str),
            Some("root" | "current_working_directory")
        ),
        Some("path") => path.get("path").and_then(Value::as_str).is_some_and(|named| {
            let named = Path::new(named);
            // Where it really is (roots are canonical): `/var` is `/private/var` on macOS.
            let named = toolbelt_mcp_sandbox::fs::canonicalize(named).unwrap_or_else(|_| named.to_path_buf());
            named.is_absolute() && !roots.is_empty() && roots.iter().all(|root| root.starts_with(&named))
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn limits(state: Value) -> Option<HostLimits> {
        HostLimits::from_meta(json!({ CODEX_SANDBOX_STATE: state }).as_object().unwrap(), &[PathBuf::from("/w/p")])
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
        // A write entry widens only where it covers the roots: not elsewhere, not of an unknown
        // kind, not without a path.
        let read = json!({"access": "read", "path": {"type": "special", "value": {"kind": "root"}}});
        for entry in [
            json!({"access": "write"}),
            json!({"access": "write", "path": {"type": "special", "value": {"kind": "nonsense"}}}),
            json!({"access": "write", "path": {"type": "special", "value": {"kind": "slash_tmp"}}}),
            json!({"access": "write", "path": {"type": "path", "path": "/elsewhere"}}),
            json!({"access": "write", "path": {"type": "path", "path": "/w/p/sub"}}),
            json!({"access": "write", "path": {"type": "path", "path": "w"}}),
        ] {
            assert_eq!(
                limits(managed(vec![read.clone(), entry.clone()], "enabled")).map(|l| l.read_only),
                Some(true),
                "{entry}"
            );
        }
        for path in ["/w/p", "/w", "/"] {
            let entry = json!({"access": "write", "path": {"type": "path", "path": path}});
            assert_eq!(
                limits(managed(vec![read.clone(), entry], "enabled")).map(|l| l.read_only),
                Some(false),
                "{path}"
            );
        }
        // Both keys: the stricter wins.
        let both = json!({"permissionProfile": {"type": "disabled"}, "sandboxPolicy": {"type": "read-only"}});
        assert_eq!(limits(both), Some(HostLimits::STRICT));
        // What cannot be read never widens.
        assert_eq!(limits(json!({"permissionProfile": {"type": "something-new"}})), Some(HostLimits::STRICT));
        assert_eq!(limits(json!({"sandboxCwd": "/w"})), Some(HostLimits::STRICT));
        assert_eq!(HostLimits::from_meta(&Map::new(), &[]), None);
    }
}
