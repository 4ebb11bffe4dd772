//! `toolbelt-mcp doctor`: what this server would run with, and what the kernel offers.

use std::io::Write;

use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_sandbox::{backend, fs};
use toolbelt_mcp_tools as tools;

/// Prints the report.
pub(crate) fn run(config: &Config) -> Result<(), String> {
    let listing = tools::Listing {
        read_only: config.sandbox == toolbelt_mcp_sandbox::mode::SandboxMode::ReadOnly,
        with_model: config.delegate.is_some(),
    };
    let tools = tools::specs(config.tool_layout, listing).map_err(|e| e.to_string())?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let mut report = String::new();
    report.push_str(&format!("toolbelt-mcp {}\n", env!("CARGO_PKG_VERSION")));
    let exe = std::env::current_exe().ok();
    report.push_str(&format!("launched by:   {}\n", launch_method(&|key| std::env::var_os(key), exe.as_deref())));
    report.push_str(&format!(
        "config file:   {}\n",
        config.config_file.as_ref().map_or("none".to_string(), |p| p.display().to_string())
    ));
    report.push_str("roots:\n");
    for root in &config.roots {
        report.push_str(&format!("  {}\n", root.display()));
    }
    if let Some(why) = &config.roots_refused {
        report.push_str(&format!("  none: {why}\n"));
    } else if !config.roots_explicit {
        let from = if std::env::var_os(toolbelt_mcp_core::config::workspace::CLAUDE_PROJECT_DIR).is_some_and(|dir| {
            config.roots.first().is_some_and(|root| {
                toolbelt_mcp_sandbox::fs::canonicalize(std::path::Path::new(&dir)).ok().as_ref() == Some(root)
            })
        }) {
            "`CLAUDE_PROJECT_DIR`"
        } else {
            "the current directory"
        };
        report.push_str(&format!(
            "  ({from}; a client's MCP roots, or a working directory a host names in a call, replace it)\n"
        ));
    }
    let state = if fs::is_dir(&config.state_dir) { "exists" } else { "not created yet" };
    report.push_str(&format!("state dir:     {} ({state})\n", config.state_dir.display()));
    report.push_str(&format!("database:      {}\n", database_report(config)));
    report.push_str(&format!("tool layout:   {} ({})\n", config.tool_layout.as_str(), names.join(", ")));
    report.push_str(&format!("output budget: {}\n", config.output_budget.describe()));
    report.push_str(&format!("max image:     {} bytes\n", config.max_image_bytes));
    report.push_str(&format!("max edit:      {} bytes per file\n", config.max_edit_bytes));
    report.push_str(&format!(
        "undo data:     at most {} bytes per session, {} for all the sessions of the server\n",
        config.max_undo_bytes, config.max_undo_total_bytes
    ));
    report.push_str(&format!("delegate:      {}\n", delegate_report(config)));
    report.push_str(&format!("confinement:   {}\n", backend::status()));
    report.push_str(&sandbox_report(config));
    std::io::stdout().lock().write_all(report.as_bytes()).map_err(|e| e.to_string())
}

/// Whether `delegate` is offered, with which model, and how to enable it when it is not.
fn delegate_report(config: &Config) -> String {
    let Some(delegate) = &config.delegate else {
        return "listed for clients that sample with tools (their model); for every client, add a `[delegate]` table to the config file (`provider`, `model`, `api_key_env`; see the README)".into();
    };
    let nesting = match delegate.max_depth {
        1 => "sub-agents cannot delegate".to_string(),
        depth => format!("nesting up to {depth} levels"),
    };
    match toolbelt_mcp_agent::delegate::check(delegate, &|key| std::env::var_os(key)) {
        Ok(model) => format!(
            "on: the client's model when it samples with tools, else {model} ({} turns at most, {nesting})",
            delegate.max_turns
        ),
        Err(problem) => format!("configured but cannot run: {problem}"),
    }
}

/// How this process was started: the npm launcher (it sets `TOOLBELT_LAUNCHER`), cargo
/// (`cargo run` and `cargo test` set `CARGO`), or the binary run directly; with its path.
fn launch_method(env: &dyn Fn(&str) -> Option<std::ffi::OsString>, exe: Option<&std::path::Path>) -> String {
    let binary = exe.map_or_else(|| "(unknown path)".to_string(), |p| p.display().to_string());
    match (env(toolbelt_mcp_core::env_vars::LAUNCHER.name), env("CARGO")) {
        (Some(launcher), _) => format!("{}; binary {binary}", launcher.to_string_lossy()),
        (None, Some(_)) => format!("cargo (`CARGO` is set); binary {binary}"),
        (None, None) => format!("the binary itself, {binary}"),
    }
}

/// The todo and memory database: where it is and what it holds, or why it cannot be read.
fn database_report(config: &Config) -> String {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => return format!("cannot start a runtime to read the database: {err}"),
    };
    let _entered = runtime.enter();
    let store = match toolbelt_mcp_store::Store::open(config.store.as_ref().map(|s| s.url()), &config.state_dir) {
        Ok(store) => store,
        Err(err) => return err,
    };
    let location = store.location();
    match runtime.block_on(store.counts()) {
        Ok(None) => format!("{location} (not created yet: made on the first todo or memory call)"),
        Ok(Some((lists, memories))) => format!("{location} ({lists} todo lists, {memories} memories)"),
        Err(err) => format!("{location}: {err}"),
    }
}

/// What a command would run under (see `doctor_sandbox`), then the policy.
fn sandbox_report(config: &Config) -> String {
    let mut out = super::doctor_sandbox::report(config);
    out.push_str(&format!(
        "approval:      {} (clients without elicitation: {}; unanswered after {} s: deny)\n",
        config.approval.as_str(),
        match config.approval_fallback {
            toolbelt_mcp_core::config::args::Fallback::Deny => "deny",
            toolbelt_mcp_core::config::args::Fallback::Allow => "allow",
        },
        config.approval_timeout.as_secs()
    ));
    out.push_str(&format!(
        "audit log:     {}\n",
        config.audit.path().map_or_else(|| "off".to_string(), |p| p.display().to_string())
    ));
    for rule in toolbelt_mcp_policy::report::forbidden_rules(config) {
        out.push_str(&format!("forbidden:     {rule}\n"));
    }
    out.push_str(&format!("shell:         {}\n", config.shell));
    out.push_str(&format!(
        "sessions:      at most {} running, {} bytes of output kept each\n",
        config.max_sessions, config.session_output_bytes
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsString;
    use std::path::Path;

    #[test]
    fn the_launch_method_names_npm_cargo_or_the_binary() {
        let exe = Some(Path::new("/opt/toolbelt-mcp"));
        let npm =
            |key: &str| (key == "TOOLBELT_LAUNCHER").then(|| OsString::from("npm launcher toolbelt-mcp@1.2.3 (/x.js)"));
        assert_eq!(launch_method(&npm, exe), "npm launcher toolbelt-mcp@1.2.3 (/x.js); binary /opt/toolbelt-mcp");
        let cargo = |key: &str| (key == "CARGO").then(|| OsString::from("/usr/bin/cargo"));
        assert_eq!(launch_method(&cargo, exe), "cargo (`CARGO` is set); binary /opt/toolbelt-mcp");
        assert_eq!(launch_method(&|_| None, exe), "the binary itself, /opt/toolbelt-mcp");
        assert_eq!(launch_method(&|_| None, None), "the binary itself, (unknown path)");
    }
}
