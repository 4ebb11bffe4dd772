//! The flags every command that resolves a configuration shares, the HTTP transport's flags,
//! and the settings' enums the policy and the tools read (clap derives only; what they mean is
//! decided elsewhere).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Deserialize;

use toolbelt_mcp_sandbox::mode::{Network, SandboxMode};

/// Flags shared by every command that resolves a configuration.
#[derive(Debug, Default, Clone, Args)]
pub struct CommonArgs {
    /// A directory the tools may use (repeatable; one `--root` may also take several, as an
    /// MCP Bundle's list of directories arrives). Default: the client's MCP roots if it
    /// offers them, else the current directory. Env: `TOOLBELT_ROOT` (`:`-separated).
    #[arg(long = "root", value_name = "DIR", num_args = 1..)]
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

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::CommonArgs;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        common: CommonArgs,
    }

    fn roots(args: &[&str]) -> Vec<String> {
        let cli = Cli::try_parse_from(std::iter::once("serve").chain(args.iter().copied())).unwrap();
        cli.common.roots.iter().map(|root| root.display().to_string()).collect()
    }

    #[test]
    fn one_root_flag_takes_several_directories_and_repeats() {
        assert_eq!(roots(&["--root", "/a"]), ["/a"]);
        assert_eq!(roots(&["--root", "/a", "/b c", "--sandbox", "read-only"]), ["/a", "/b c"]);
        assert_eq!(roots(&["--root", "/a", "--root", "/b"]), ["/a", "/b"]);
        assert!(Cli::try_parse_from(["serve", "--root"]).is_err());
    }
}
