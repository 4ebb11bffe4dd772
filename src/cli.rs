//! Command-line definitions (clap derive only; no behaviour lives here).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use serde::Deserialize;

/// A sandboxed MCP toolbelt: files, search, terminals, todos and memory in one server.
#[derive(Debug, Parser)]
#[command(name = "toolbelt-mcp", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the MCP server on stdio (stdout carries only the protocol; logs go to stderr), or
    /// on streamable HTTP with `--http ADDR`.
    Serve(ServeArgs),
    /// Write the published tool schemas to `schemas/` (or verify them with `--check`).
    Schemas(SchemasArgs),
    /// Report the resolved configuration, roots, state dir and Landlock support.
    Doctor(CommonArgs),
    /// Run a coding agent on a task: an LLM (Anthropic or any OpenAI-compatible API) using
    /// the tools of `toolbelt-mcp serve` (started as a child) or of another MCP server.
    /// Progress goes to stderr, the final answer to stdout. Exit codes: 0 done, 1 error,
    /// 2 max turns or token budget reached, 3 denied or interrupted.
    Agent(AgentArgs),
}

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
    pub provider: Option<crate::agent::provider::Kind>,
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

/// Flags shared by every command that resolves a configuration.
#[derive(Debug, Default, Clone, Args)]
pub struct CommonArgs {
    /// A directory the tools may use (repeatable). Default: the client's MCP roots if it
    /// offers them, else the current directory. Env: `TOOLBELT_ROOT` (`:`-separated).
    #[arg(long = "root", value_name = "DIR")]
    pub roots: Vec<PathBuf>,
    /// TOML config file. Default: `$XDG_CONFIG_HOME/toolbelt-mcp/config.toml` if it exists.
    /// Env: `TOOLBELT_CONFIG`.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where state lives. Default: `$XDG_STATE_HOME/toolbelt-mcp`. Env: `TOOLBELT_STATE_DIR`.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// `consolidated` (one tool per family) or `granular` (one tool per operation).
    /// Env: `TOOLBELT_TOOL_LAYOUT`.
    #[arg(long, value_enum, value_name = "LAYOUT")]
    pub tool_layout: Option<ToolLayout>,
    /// Most bytes of text one tool result may carry (default 65536).
    /// Env: `TOOLBELT_OUTPUT_BUDGET`.
    #[arg(long, value_name = "BYTES")]
    pub output_budget: Option<usize>,
    /// How commands are confined: `read-only`, `workspace-write` (default) or `full-access`.
    /// Env: `TOOLBELT_SANDBOX`.
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<SandboxMode>,
    /// How sandboxed commands reach other hosts: `allow` (default: through the server's proxy,
    /// every public host), `allowlist` (only `--network-allow` hosts), `deny` (loopback only)
    /// or `host` (the machine's network, not with `--http`). Env: `TOOLBELT_NETWORK`.
    #[arg(long, value_enum, value_name = "ACCESS")]
    pub network: Option<Network>,
    /// A host commands may reach through the proxy: `name`, `*.domain`, an address, each with
    /// an optional `:port` (repeatable; added to the config's `network_allow`). A loopback or
    /// private address is reachable only when listed exactly.
    #[arg(long = "network-allow", value_name = "HOST")]
    pub network_allow: Vec<String>,
    /// A file or directory sandboxed commands may not read (repeatable; added to the config's
    /// `deny_read` and the default secrets such as `~/.ssh`).
    #[arg(long = "deny-read", value_name = "PATH")]
    pub deny_read: Vec<PathBuf>,
    /// When to ask the user: `never`, `on-request` (default: only escalations and protected
    /// paths), `on-write` (also every write and every command not known to be read-only) or
    /// `always`. Env: `TOOLBELT_APPROVAL`.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub approval: Option<Approval>,
    /// Where todo lists and memories are kept: a PostgreSQL URL
    /// (`postgres://user@host:port/db`, `postgres://user@/db?host=/run/postgresql`) shared by a
    /// team's servers. Default: SQLite in the state dir. Env: `TOOLBELT_STORE`.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// The workspace todo lists and memories belong to (the same name on every machine shares
    /// them). Default: the first root's git remote, else its path. Env: `TOOLBELT_WORKSPACE`.
    #[arg(long, value_name = "NAME")]
    pub workspace: Option<String>,
    /// Where to write the audit log (JSON lines), or `off`. Default:
    /// `<state dir>/audit.jsonl`. Env: `TOOLBELT_AUDIT_LOG`.
    #[arg(long, value_name = "FILE|off")]
    pub audit_log: Option<PathBuf>,
}

/// Flags of `toolbelt-mcp serve`.
#[derive(Debug, Default, Clone, Args)]
pub struct ServeArgs {
    /// The flags every command shares.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Streamable HTTP instead of stdio.
    #[command(flatten)]
    pub http: HttpArgs,
}

/// Flags of the streamable HTTP transport (`serve --http`).
#[derive(Debug, Default, Clone, Args)]
pub struct HttpArgs {
    /// Serve streamable HTTP on this address instead of stdio, e.g. `127.0.0.1:8765` (port 0
    /// picks a free port; the URL is printed on stderr). A non-loopback address needs a
    /// bearer token.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,
    /// File holding the bearer token every HTTP request must carry
    /// (`Authorization: Bearer TOKEN`). Env: `TOOLBELT_AUTH_TOKEN` (the token itself).
    #[arg(long, value_name = "FILE", requires = "http")]
    pub auth_token_file: Option<PathBuf>,
    /// Serve a loopback address without a token (any local user's process could then run
    /// commands as this user). Without it, and without a token given, one is generated into
    /// the state dir (`http-token`, mode 0600) and printed with ready-to-paste host configs.
    #[arg(long)]
    pub no_auth: bool,
    /// Also accept this `Host` (name or `name:port`) besides the loopback names, e.g. the
    /// name a reverse proxy or the team uses (repeatable).
    #[arg(long = "allow-host", value_name = "HOST", requires = "http")]
    pub allow_hosts: Vec<String>,
    /// Also accept requests from this browser `Origin`, e.g. `https://app.example.com`
    /// (repeatable; loopback origins are always accepted).
    #[arg(long = "allow-origin", value_name = "ORIGIN", requires = "http")]
    pub allow_origins: Vec<String>,
    /// Most MCP sessions open at once (default 32); at the limit a new session replaces the
    /// least recently used idle one, and only when every one is busy is the answer `503`.
    #[arg(long, value_name = "N", requires = "http")]
    pub max_http_sessions: Option<usize>,
    /// A session with no request and no connected stream for this long is closed and its
    /// commands killed (default `10m`; e.g. `90s`, `2h`).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, requires = "http")]
    pub idle_timeout: Option<std::time::Duration>,
    /// Largest request body accepted, in bytes (default 4 MiB); larger gets `413`.
    #[arg(long, value_name = "BYTES", requires = "http")]
    pub max_body_bytes: Option<usize>,
    /// On `SIGTERM`/`SIGINT`, how long calls in flight may take to finish before they are
    /// cancelled and every command is killed (default `10s`).
    #[arg(long, value_name = "DURATION", value_parser = humantime::parse_duration, requires = "http")]
    pub shutdown_grace: Option<std::time::Duration>,
}

/// Flags of `toolbelt-mcp schemas`.
#[derive(Debug, Args)]
pub struct SchemasArgs {
    /// Verify instead of writing: exit 1 if the files differ from what this binary generates.
    #[arg(long)]
    pub check: bool,
    /// The repository directory holding `schemas/` and `docs/TOOLS.md`.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}

/// How commands are confined (Landlock), and whether file writes are offered at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read and execute everywhere; write nowhere but a private temp dir (file writes are
    /// not offered).
    ReadOnly,
    /// Also write inside the roots, the system temp dir and `writable_roots`.
    #[default]
    WorkspaceWrite,
    /// No Landlock: commands run with the server's own rights.
    FullAccess,
}

impl SandboxMode {
    /// The name used on the command line and in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::FullAccess => "full-access",
        }
    }
}

/// When a call needs the user's approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Approval {
    /// Nothing asks; what the sandbox forbids is denied.
    Never,
    /// Everything inside the sandbox runs; escalations and protected paths ask.
    #[default]
    OnRequest,
    /// Also every write and every command not known to be read-only asks.
    OnWrite,
    /// Every call asks.
    Always,
}

impl Approval {
    /// The name used on the command line and in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Never => "never",
            Self::OnRequest => "on-request",
            Self::OnWrite => "on-write",
            Self::Always => "always",
        }
    }
}

/// What happens when a call needs approval and the client cannot ask the user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Fallback {
    /// Deny, saying how the user can allow it.
    #[default]
    Deny,
    /// Allow (trusted automation).
    Allow,
}

/// Whether sandboxed commands may reach other hosts, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// A network namespace of its own, and a proxy (HTTP and SOCKS5, resolving names itself)
    /// to every public address: loopback, private, link-local and metadata addresses only
    /// when listed in `network_allow`.
    #[default]
    Allow,
    /// The same, but only to the hosts `network_allow` lists.
    Allowlist,
    /// A network namespace of its own with only loopback up: nothing outside the command is
    /// reachable (local servers it starts itself are).
    Deny,
    /// The machine's network, as the server has it: every service on this machine's loopback
    /// too. Not with `serve --http` (a command could then reach the server itself).
    Host,
}

impl Network {
    /// The name used on the command line and in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Allowlist => "allowlist",
            Self::Deny => "deny",
            Self::Host => "host",
        }
    }

    /// Whether commands get a network namespace of their own (all but `host`).
    pub fn own_namespace(self) -> bool {
        self != Self::Host
    }

    /// Whether commands reach other hosts through the proxy (`allow`, `allowlist`).
    pub fn proxied(self) -> bool {
        matches!(self, Self::Allow | Self::Allowlist)
    }
}

/// How the operations are exposed as MCP tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ToolLayout {
    /// One tool per family (`file_operations`, …) with an `operation` field.
    #[default]
    Consolidated,
    /// One tool per operation (`read_file`, …) with exact annotations.
    Granular,
}

impl ToolLayout {
    /// The name used on the command line and in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Consolidated => "consolidated",
            Self::Granular => "granular",
        }
    }
}
