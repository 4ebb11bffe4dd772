//! The policy in force and the session's grants, as text: served as the `toolbelt://policy`
//! resource so the user (and the agent) can see what runs without asking.

use crate::config::Config;
use crate::policy::decide::Scope;
use crate::session::Session;

/// The report: policy, sandbox, fallback, forbidden rules, grants, audit log.
pub fn policy_report(config: &Config, session: &Session) -> String {
    let mut out = String::from("# toolbelt-mcp policy\n\n");
    out.push_str(&format!("- approval: `{}`\n", config.approval.as_str()));
    out.push_str(&format!("- sandbox: `{}`\n", config.sandbox.as_str()));
    let fallback = match config.approval_fallback {
        crate::cli::Fallback::Deny => "deny",
        crate::cli::Fallback::Allow => "allow",
    };
    out.push_str(&format!("- clients that cannot ask: `{fallback}`\n"));
    out.push_str(&format!("- unanswered questions are denied after {} s\n", config.approval_timeout.as_secs()));
    let audit = config.audit.path().map_or_else(|| "off".to_string(), |p| format!("`{}`", p.display()));
    out.push_str(&format!("- audit log: {audit}\n"));
    out.push_str("\n## Forbidden commands\n\n");
    if config.forbidden_commands.is_empty() {
        out.push_str("none\n");
    }
    for rule in &config.forbidden_commands {
        out.push_str(&format!("- `{}`\n", rule.join(" ")));
    }
    out.push_str(&format!("\n## Granted for this session ({})\n\n", session.id));
    let grants = session.grants();
    if grants.is_empty() {
        out.push_str("nothing yet (an \"allow for this session\" answer adds a grant here)\n");
    }
    for grant in grants {
        out.push_str(&format!("- {}\n", describe(&grant)));
    }
    out
}

/// A grant in words.
pub fn describe(scope: &Scope) -> String {
    match scope {
        Scope::ReadPath(path) => format!("reading anything under `{}`", path.display()),
        Scope::WritePath(path) => format!("changing anything under `{}`", path.display()),
        Scope::Command { prefix, unsandboxed: true } => {
            format!("commands starting with `{prefix}`, outside the sandbox")
        }
        Scope::Command { prefix, unsandboxed: false } => format!("commands starting with `{prefix}`"),
        Scope::Control => "signals to this session's processes".into(),
    }
}
