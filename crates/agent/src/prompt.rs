//! The system prompt: a built-in one describing how to work with the toolbelt, plus the
//! root's `AGENTS.md` when there is one.

use std::path::Path;

/// Most of `AGENTS.md` that goes into the prompt.
const AGENTS_MD_LIMIT: usize = 200_000;

/// The built-in part.
const BUILT_IN: &str = "\
You are a coding agent working in the directory `{root}` through the tools of an MCP server. \
Everything you do goes through those tools; the server enforces a sandbox and an approval \
policy on every call.

How to work:
- Look before you change: list, search and read the relevant files first.
- Make focused changes, then verify them (run the tests or the build) before you finish.
- For a task with several steps, keep a todo list with the todo tool if there is one, and keep \
it current: the list is shown back to you before each turn.
- Independent reads can be asked for in one turn; they run at once.
- A call that is denied or fails tells you why: adapt (another way, a smaller change) instead \
of repeating it.
- When the task is done, or cannot be done, answer without calling a tool. That answer is what \
the user reads: say what you changed, how you verified it, and anything left open. Be brief.";

/// The system prompt for work in `root`, with `agents_md` (the file's text) appended.
pub(crate) fn system_prompt(root: &Path, agents_md: Option<&str>) -> String {
    let mut prompt = BUILT_IN.replace("{root}", &root.display().to_string());
    if let Some(text) = agents_md.map(str::trim).filter(|t| !t.is_empty()) {
        let cut = match text.char_indices().nth(AGENTS_MD_LIMIT) {
            Some((at, _)) => format!("{}\n[AGENTS.md cut at {AGENTS_MD_LIMIT} characters]", &text[..at]),
            None => text.to_string(),
        };
        prompt.push_str(&format!("\n\nThe project's AGENTS.md (instructions from its maintainers):\n\n{cut}"));
    }
    prompt
}

/// The text of `root/AGENTS.md`, if it is there and readable.
pub(crate) fn read_agents_md(root: &Path) -> Option<String> {
    let path = root.join("AGENTS.md");
    toolbelt_mcp_sandbox::fs::is_file(&path).then(|| toolbelt_mcp_sandbox::fs::read_small_text(&path).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_md_is_appended_when_present() {
        let plain = system_prompt(Path::new("/w"), None);
        assert!(plain.contains("directory `/w`"));
        assert!(!plain.contains("AGENTS.md"));
        let with = system_prompt(Path::new("/w"), Some("Run `make check`.\n"));
        assert!(with.ends_with("instructions from its maintainers):\n\nRun `make check`."));
        assert_eq!(system_prompt(Path::new("/w"), Some("  \n")), plain);
    }
}
