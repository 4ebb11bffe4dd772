//! The policy in force and the session's grants, as text: served as the `toolbelt://policy`
//! resource so the user (and the agent) can see what runs without asking.

use crate::approvals::Approvals;
use crate::decide::Scope;
use toolbelt_mcp_core::config::Config;

/// The report: policy, sandbox, fallback, forbidden rules, grants, audit log.
pub fn policy_report(config: &Config, session_id: &str, approvals: &Approvals) -> String {
    let mut out = String::from("# toolbelt-mcp policy\n\n");
    out.push_str(&format!("- approval: `{}`\n", config.approval.as_str()));
    out.push_str(&format!("- sandbox: `{}`\n", config.sandbox.as_str()));
    let fallback = match config.approval_fallback {
        toolbelt_mcp_core::config::args::Fallback::Deny => "deny",
        toolbelt_mcp_core::config::args::Fallback::Allow => "allow",
    };
    out.push_str(&format!("- clients that cannot ask: `{fallback}`\n"));
    out.push_str(&format!("- unanswered questions are denied after {} s\n", config.approval_timeout.as_secs()));
    let audit = config.audit.path().map_or_else(|| "off".to_string(), |p| format!("`{}`", p.display()));
    out.push_str(&format!("- audit log: {audit}\n"));
    out.push_str("\n## Forbidden commands\n\n");
    let rules = forbidden_rules(config);
    if rules.is_empty() {
        out.push_str("none\n");
    }
    for rule in rules {
        out.push_str(&format!("- {rule}\n"));
    }
    out.push_str(&format!("\n## Granted for this session ({session_id})\n\n"));
    let grants = approvals.grants();
    if grants.is_empty() {
        out.push_str("nothing yet (an \"allow for this session\" answer adds a grant here)\n");
    }
    for grant in grants {
        out.push_str(&format!("- {}\n", describe(&grant)));
    }
    out
}

/// Every forbidden rule in force, in words: the catastrophic defaults (unless turned off) and
/// the user's `forbidden_commands`.
pub fn forbidden_rules(config: &Config) -> Vec<String> {
    let mut rules = Vec::new();
    if config.forbid_catastrophic {
        rules.extend(crate::command::CATASTROPHIC.iter().map(|r| format!("`{r}` (default)")));
    }
    rules.extend(config.forbidden_commands.iter().map(|r| format!("`{}`", r.join(" "))));
    rules
}

/// What no command grant covers, said with every one.
const COMMAND_GRANT_LIMITS: &str = ", never a line that sets a variable that changes what runs (`GIT_SSH_COMMAND`, `LD_PRELOAD`) or passes an option that runs another program or loads config from the line (`git -c`, `--upload-pack`, `ssh -o`), and a script named by its path only while its content is unchanged";

/// A grant in words.
pub fn describe(scope: &Scope) -> String {
    let list = |keys: &[String]| keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ");
    match scope {
        Scope::ReadPath(path) => format!("reading anything under `{}`", path.display()),
        Scope::WritePath(path) => format!("changing anything under `{}`", path.display()),
        Scope::Command { keys, unsandboxed: true } => {
            format!("command lines made only of {}, outside the sandbox{COMMAND_GRANT_LIMITS}", list(keys))
        }
        Scope::Command { keys, unsandboxed: false } => {
            format!("command lines made only of {}{COMMAND_GRANT_LIMITS}", list(keys))
        }
        Scope::Once => "nothing more: this asks every time".into(),
        Scope::Control => "signals to this session's processes".into(),
    }
}
