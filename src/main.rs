//! Entry point: parse the command line, set up logging on stderr, run the subcommand.

mod cli;
mod commands;
mod config;
mod error;
mod policy;
mod sandbox;
mod schema;
mod server;
mod session;
mod store;
mod terminal;
mod tools;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command, CommonArgs};
use crate::config::Config;

fn main() -> ExitCode {
    // A sandboxed command's re-exec: confine this (still single-threaded) process, then exec.
    let mut args = std::env::args_os();
    if args.nth(1).is_some_and(|first| first == sandbox::exec::SUBCOMMAND) {
        return sandbox::exec::child_main(args.collect());
    }
    let cli = Cli::parse();
    init_logging();
    let outcome = match &cli.command {
        Command::Serve(args) => resolve(args).and_then(|config| {
            // One connection: a single-threaded scheduler avoids cross-thread wake-ups per
            // message; file work runs on the blocking pool and grep on its own threads.
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("cannot start the async runtime: {e}"))?;
            runtime.block_on(server::stdio::serve(config)).map(|()| true)
        }),
        Command::Doctor(args) => resolve(args).and_then(|config| commands::doctor::run(&config)).map(|()| true),
        Command::Schemas(args) => commands::schemas::run(args),
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            let _ = writeln!(std::io::stderr(), "toolbelt-mcp: {message}");
            ExitCode::FAILURE
        }
    }
}

fn resolve(args: &CommonArgs) -> Result<std::sync::Arc<Config>, String> {
    let cwd = std::env::current_dir().map_err(|e| error::ConfigError::NoCurrentDir(e).to_string())?;
    Config::resolve(args, &|key| std::env::var_os(key), &cwd).map_err(|e| e.to_string())
}

/// Logs go to stderr (stdout is the protocol); `RUST_LOG` sets the level (default `warn`).
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
