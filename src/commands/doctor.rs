//! `toolbelt-mcp doctor`: what this server would run with, and what the kernel offers.

use std::io::Write;

use crate::config::Config;
use crate::sandbox::{fs, landlock};
use crate::tools;

/// Prints the report.
pub fn run(config: &Config) -> Result<(), String> {
    let landlock = landlock::probe();
    let tools = tools::specs(config.tool_layout).map_err(|e| e.to_string())?;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    let mut report = String::new();
    report.push_str(&format!("toolbelt-mcp {}\n", env!("CARGO_PKG_VERSION")));
    report.push_str(&format!(
        "config file:   {}\n",
        config.config_file.as_ref().map_or("none".to_string(), |p| p.display().to_string())
    ));
    report.push_str("roots:\n");
    for root in &config.roots {
        report.push_str(&format!("  {}\n", root.display()));
    }
    if !config.roots_explicit {
        report.push_str("  (the current directory; a client that offers MCP roots replaces it)\n");
    }
    let state = if fs::is_dir(&config.state_dir) { "exists" } else { "not created yet" };
    report.push_str(&format!("state dir:     {} ({state})\n", config.state_dir.display()));
    report.push_str(&format!("tool layout:   {} ({})\n", config.tool_layout.as_str(), names.join(", ")));
    report.push_str(&format!("output budget: {} bytes per result\n", config.output_budget));
    report.push_str(&format!("max image:     {} bytes\n", config.max_image_bytes));
    report.push_str(&format!("max edit:      {} bytes per file\n", config.max_edit_bytes));
    report.push_str(&format!("undo data:     at most {} bytes per session\n", config.max_undo_bytes));
    report.push_str(&format!("landlock:      {}\n", landlock.status));
    std::io::stdout().lock().write_all(report.as_bytes()).map_err(|e| e.to_string())
}
