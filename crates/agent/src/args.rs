//! The flags of `toolbelt-mcp agent` (clap derive only).

use std::path::PathBuf;

use clap::Args;

use toolbelt_mcp_core::config::args::CommonArgs;

/// Flags of `toolbelt-mcp agent`.
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// The flags every command shares; they are passed on to the `serve` child.
    #[command(flatten)]
    pub common: CommonArgs,
    /// The task. Without it, the task is read from stdin (when stdin is not a terminal).
    #[arg(short = 'p', long = "prompt", value_name = "TASK")]
    pub prompt: Option<String>,
    /// The API: `anthropic` (Messages API) or `openai` (Chat Completions, also Ollama,
    /// llama.cpp, vLLM, OpenRouter). Default: `anthropic` when `ANTHROPIC_API_KEY` is set,
    /// else `openai` when `OPENAI_API_KEY` or `--base-url` is given.
    #[arg(long, value_enum, value_name = "API")]
    pub provider: Option<crate::provider::Kind>,
    /// The model (default for `anthropic`: `claude-sonnet-4-5`; required for `openai`).
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The API's base URL, e.g. `http://localhost:11434/v1` for Ollama (default:
    /// `https://api.anthropic.com` or `https://api.openai.com/v1`).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (default `ANTHROPIC_API_KEY` or
    /// `OPENAI_API_KEY`).
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,
    /// Most model turns (one turn is one model reply).
    #[arg(long, value_name = "N", default_value_t = 30)]
    pub max_turns: u32,
    /// Stop once this many tokens (input + output, over all turns) are used.
    #[arg(long, value_name = "N")]
    pub max_tokens_total: Option<u64>,
    /// The model's context window in tokens (default: known per model family, e.g. 200000
    /// for Claude; 32768 for models not known). Past 80 % of it the conversation is
    /// compacted.
    #[arg(long, value_name = "TOKENS", value_parser = clap::value_parser!(u64).range(4096..))]
    pub context_window: Option<u64>,
    /// Ask for whole replies instead of streamed ones (for a provider that cannot stream).
    #[arg(long)]
    pub no_stream: bool,
    /// Most tokens the model may write per turn (default for `anthropic`: 8192).
    #[arg(long, value_name = "N")]
    pub max_output_tokens: Option<u32>,
    /// How long one request to the model may take (e.g. `90s`, `10m`).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, default_value = "10m")]
    pub request_timeout: std::time::Duration,
    /// Offer only these tools (comma-separated or repeated; `tool` or `tool.operation`).
    #[arg(long = "allow-tools", value_name = "NAMES", value_delimiter = ',')]
    pub allow_tools: Vec<String>,
    /// Never offer these tools (comma-separated or repeated; `tool` or `tool.operation`).
    #[arg(long = "deny-tools", value_name = "NAMES", value_delimiter = ',')]
    pub deny_tools: Vec<String>,
    /// Accept every question the server asks (approvals) without asking. Without it, a
    /// terminal asks you, and a headless run declines.
    #[arg(long)]
    pub yes: bool,
    /// Print one JSON summary on stdout instead of the final answer.
    #[arg(long)]
    pub json: bool,
    /// Write the whole conversation to this file as JSON lines.
    #[arg(long, value_name = "FILE")]
    pub transcript: Option<PathBuf>,
    /// Continue the run a `--transcript` file recorded: its messages (compacted if they no
    /// longer fit), its servers unless others are given, and `-p` as the next instruction
    /// (default: continue). Pass the same file as `--transcript` to append to it.
    #[arg(long, value_name = "FILE")]
    pub resume: Option<PathBuf>,
    /// Use the streamable HTTP MCP server at this URL instead of starting one (a bearer
    /// token is taken from `TOOLBELT_AUTH_TOKEN`).
    #[arg(long, value_name = "URL", conflicts_with = "server_cmd")]
    pub server_url: Option<String>,
    /// Start this MCP server (stdio) instead of `toolbelt-mcp serve`, e.g.
    /// `--server-cmd "npx -y @modelcontextprotocol/server-filesystem ."`.
    #[arg(long, value_name = "CMD")]
    pub server_cmd: Option<String>,
    /// More MCP servers, from a `{"mcpServers": {…}}` JSON file as Claude Desktop, Cursor and
    /// Claude Code (`.mcp.json`) write it (repeatable). Their tools reach the model as
    /// `<server>__<tool>`.
    #[arg(long = "mcp-config", value_name = "FILE")]
    pub mcp_config: Vec<PathBuf>,
    /// Do not start `toolbelt-mcp serve`: use only the `--mcp-config` servers.
    #[arg(long, conflicts_with_all = ["server_url", "server_cmd"])]
    pub no_toolbelt: bool,
    /// Stop (exit 3) when an `--mcp-config` server fails to start or goes away, instead of
    /// going on without it.
    #[arg(long)]
    pub require_servers: bool,
}
