//! Command-line definitions (clap derive only; no behaviour lives here).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use toolbelt_mcp_agent::AgentArgs;
use toolbelt_mcp_core::config::args::{CommonArgs, HttpArgs};

/// A sandboxed MCP toolbelt: files, search, terminals, todos and memory in one server.
#[derive(Debug, Parser)]
#[command(name = "toolbelt-mcp", version, about, long_about = None)]
pub(crate) struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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

/// Flags of `toolbelt-mcp serve`.
#[derive(Debug, Default, Clone, Args)]
pub(crate) struct ServeArgs {
    /// The flags every command shares.
    #[command(flatten)]
    pub common: CommonArgs,
    /// Streamable HTTP instead of stdio.
    #[command(flatten)]
    pub http: HttpArgs,
}

/// Flags of `toolbelt-mcp schemas`.
#[derive(Debug, Args)]
pub(crate) struct SchemasArgs {
    /// Verify instead of writing: exit 1 if the files differ from what this binary generates.
    #[arg(long)]
    pub check: bool,
    /// The repository directory holding `schemas/` and `docs/TOOLS.md`.
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub dir: PathBuf,
}
