//! The output budget: how many bytes one view of a tool result may take. Hosts differ in what
//! they show the model whole, so unless the user sets a budget, each client gets one that its
//! host passes on uncut (measured with each host, see `tests/hosts/`).

/// Bytes a view may take for a client no row of [`HOSTS`] names.
pub(super) const DEFAULT_OUTPUT_BUDGET: usize = 32 * 1024;

/// Per host (by the prefix of the `clientInfo.name` it sends): the budget, and why.
pub(super) const HOSTS: &[(&str, usize, &str)] = &[
    (
        "claude-code",
        100_000,
        "Claude Code shows a result whole up to the tool's `anthropic/maxResultSizeChars`, which the server sets to match (2.1.330: 197,157 characters passed whole; without it 98,109 went to a file); 100,000 is about the 25,000 tokens Claude Code allows a tool result by default",
    ),
    (
        "codex-mcp-client",
        9_000,
        "Codex cuts a tool result to about 10 KB (its model-visible output limit) keeping head and tail",
    ),
    (
        "qwen-cli-mcp-client",
        12_000,
        "Qwen Code shows both views of a result together and moves over about 27 KB to a file",
    ),
    (
        "copilot-cli",
        10_000,
        "GitHub Copilot CLI shows both views of a result together and moves one over about 20 KB to a file (1.0.102: a result of 21.2 KB went to a file, one of 17,782 characters did not)",
    ),
    (
        "gemini-cli-mcp-client",
        12_000,
        "Gemini CLI, which Qwen Code derives from, shows both views of a result together",
    ),
];

/// Claude Code's budget when its tools carry no `anthropic/maxResultSizeChars`
/// (`host_tool_hints = false`): it moves a result over about 50,000 characters to a file and
/// shows the model a 2 KB preview.
const CLAUDE_CODE_UNHINTED: usize = 40_000;

/// How big one view of a tool result may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputBudget {
    /// Set by the user (flag, environment or config file): every client gets it.
    Fixed(usize),
    /// Chosen per client from [`HOSTS`], else [`DEFAULT_OUTPUT_BUDGET`]; `hinted`: the tools
    /// carry the hosts' `_meta` hints (`host_tool_hints`), which let Claude Code show more.
    PerHost {
        /// Whether the tools raise Claude Code's result cap.
        hinted: bool,
    },
}

impl OutputBudget {
    /// The budget for a client that named itself `client` (`None`: it did not say).
    pub fn for_client(self, client: Option<&str>) -> usize {
        match self {
            Self::Fixed(bytes) => bytes,
            Self::PerHost { hinted: false } if client.is_some_and(|name| name.starts_with("claude-code")) => {
                CLAUDE_CODE_UNHINTED
            }
            Self::PerHost { .. } => client
                .and_then(|name| HOSTS.iter().find(|(prefix, _, _)| name.starts_with(prefix)))
                .map_or(DEFAULT_OUTPUT_BUDGET, |(_, bytes, _)| *bytes),
        }
    }

    /// How `doctor` shows it.
    pub fn describe(self) -> String {
        match self {
            Self::Fixed(bytes) => format!("{bytes} bytes per result"),
            Self::PerHost { hinted } => {
                let hosts: Vec<String> = HOSTS
                    .iter()
                    .map(|(name, _, _)| format!("{name} {}", Self::PerHost { hinted }.for_client(Some(name))))
                    .collect();
                format!("per host: {}; others {DEFAULT_OUTPUT_BUDGET} bytes", hosts.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_get_what_they_show_whole() {
        let per_host = OutputBudget::PerHost { hinted: true };
        assert_eq!(per_host.for_client(Some("claude-code")), 100_000);
        let unhinted = OutputBudget::PerHost { hinted: false };
        assert_eq!(unhinted.for_client(Some("claude-code")), 40_000, "no raised cap: what Claude Code shows whole");
        assert_eq!(unhinted.for_client(Some("codex-mcp-client")), 9_000);
        assert!(unhinted.describe().starts_with("per host: claude-code 40000, codex-mcp-client 9000"));
        assert_eq!(per_host.for_client(Some("codex-mcp-client")), 9_000);
        assert_eq!(per_host.for_client(Some("qwen-cli-mcp-client-toolbelt")), 12_000, "Qwen adds the server's name");
        assert_eq!(per_host.for_client(Some("copilot-cli")), 10_000);
        assert_eq!(per_host.for_client(Some("Visual Studio Code")), DEFAULT_OUTPUT_BUDGET);
        assert_eq!(per_host.for_client(None), DEFAULT_OUTPUT_BUDGET);
        assert_eq!(OutputBudget::Fixed(5000).for_client(Some("claude-code")), 5000, "the user's choice wins");
        assert!(per_host.describe().starts_with("per host: claude-code 100000, codex-mcp-client 9000"));
    }
}
