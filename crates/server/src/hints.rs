//! The hints hosts read in a tool's `_meta`. Claude Code (since 2.1.330) defers every MCP
//! tool behind its tool search unless the tool asks to stay loaded, and moves a result over
//! about 50,000 characters to a file unless the tool raises that cap: so each consolidated tool
//! (or each read tool of the granular layout: loading all of them costs context) asks to stay
//! loaded, and every tool's cap is the client's output budget. `host_tool_hints = false`
//! leaves both out.

use rmcp::model::{MetaObject, Tool};
use toolbelt_mcp_core::config::args::ToolLayout;

/// Claude Code: the tool is sent whole in the first request, not deferred.
const ALWAYS_LOAD: &str = "anthropic/alwaysLoad";
/// Claude Code: the characters of a result shown to the model before it goes to a file.
const MAX_RESULT_SIZE_CHARS: &str = "anthropic/maxResultSizeChars";
/// The most `anthropic/maxResultSizeChars` may ask for.
const MAX_RESULT_CEILING: usize = 500_000;

/// `tools` with the hints for a client whose output budget is `budget` bytes.
pub(crate) fn with_hints(tools: &[Tool], layout: ToolLayout, budget: usize) -> Vec<Tool> {
    // A result's text view stays within the budget; the cap leaves room for the lines a
    // result adds after it (where to go on, what was left out).
    let cap = (budget + budget / 4).min(MAX_RESULT_CEILING);
    tools
        .iter()
        .map(|tool| {
            let mut tool = tool.clone();
            let read_only = tool.annotations.as_ref().and_then(|a| a.read_only_hint) == Some(true);
            let meta = tool.meta.get_or_insert_with(|| MetaObject(Default::default()));
            if layout == ToolLayout::Consolidated || read_only {
                meta.0.insert(ALWAYS_LOAD.into(), true.into());
            }
            meta.0.insert(MAX_RESULT_SIZE_CHARS.into(), cap.into());
            tool
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn tool(name: &str, read_only: bool) -> Tool {
        let annotations = rmcp::model::ToolAnnotations::new().read_only(read_only);
        Tool::new(name.to_string(), "d", Arc::new(Default::default())).with_annotations(annotations)
    }

    #[test]
    fn consolidated_tools_stay_loaded_and_granular_only_the_read_ones() {
        let tools = [tool("read_file", true), tool("create_file", false)];
        let loaded = |tools: &[Tool]| -> Vec<bool> {
            tools.iter().map(|t| t.meta.as_ref().is_some_and(|m| m.0.get(ALWAYS_LOAD) == Some(&true.into()))).collect()
        };
        assert_eq!(loaded(&with_hints(&tools, ToolLayout::Consolidated, 40_000)), [true, true]);
        let granular = with_hints(&tools, ToolLayout::Granular, 40_000);
        assert_eq!(loaded(&granular), [true, false]);
        assert_eq!(granular[1].meta.as_ref().unwrap().0.get(MAX_RESULT_SIZE_CHARS), Some(&50_000.into()));
        let huge = with_hints(&tools, ToolLayout::Consolidated, 4 * 1024 * 1024);
        assert_eq!(huge[0].meta.as_ref().unwrap().0.get(MAX_RESULT_SIZE_CHARS), Some(&500_000.into()));
    }
}
