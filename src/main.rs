//! Entry point: parse the command line, set up logging on stderr, run the subcommand.

mod cli;
mod commands;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use clap::Parser;

use crate::cli::{Cli, Command};
use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_core::config::args::CommonArgs;
use toolbelt_mcp_core::config::http::HttpConfig;

fn main() -> ExitCode {
    // A sandboxed command's helper (which forks the init of its namespaces) and the doctor's
    // probe: still single-threaded here.
    #[cfg(target_os = "linux")]
    let mut args = std::env::args_os();
    #[cfg(target_os = "linux")]
    match args.nth(1) {
        Some(first) if first == toolbelt_mcp_sandbox::linux::HELPER_SUBCOMMAND => {
            return toolbelt_mcp_sandbox::linux::helper::main(args.collect());
        }
        Some(first) if first == toolbelt_mcp_sandbox::linux::probe::PROBE_SUBCOMMAND => {
            return toolbelt_mcp_sandbox::linux::probe::main(args.collect());
        }
        Some(first) if first == toolbelt_mcp_sandbox::linux::holder::HOLD_SUBCOMMAND => {
            return toolbelt_mcp_sandbox::linux::holder::main(args);
        }
        Some(first) if first == toolbelt_mcp_sandbox::linux::keeper::KEEP_SUBCOMMAND => {
            return toolbelt_mcp_sandbox::linux::keeper::main(args);
        }
        _ => {}
    }
    let cli = Cli::parse();
    if let Command::Agent(args) = &cli.command {
        // The agent's stderr is its progress display: warnings only, whatever `RUST_LOG` says
        // of the other commands.
        let _logging = init_logging("warn");
        // With `--server-url` on this machine and no token given: the one a local server
        // generated into its state dir.
        let local_token = || {
            let cwd = std::env::current_dir().unwrap_or_default();
            let env = |key: &str| std::env::var_os(key);
            let state_dir = toolbelt_mcp_core::config::plain_state_dir(args.common.state_dir.as_deref(), &env, &cwd);
            toolbelt_mcp_core::config::http::generated_token_in(&state_dir)
        };
        return toolbelt_mcp_agent::main(args, &local_token);
    }
    let http = matches!(&cli.command, Command::Serve(args) if args.http.http.is_some());
    // Over HTTP, a line per session opened and closed at `info` (each request at `debug`); on
    // stdio, warnings only.
    let _logging = init_logging(if http { "warn,toolbelt_mcp_server::http=info" } else { "warn" });
    let outcome = match &cli.command {
        Command::Serve(args) => resolve(&args.common).and_then(|config| serve(config, &args.http)),
        Command::Doctor(args) => resolve(args).and_then(|config| commands::doctor::run(&config)).map(|()| true),
        Command::Schemas(args) => commands::schemas::run(args),
        Command::Agent(_) => Ok(true),
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

/// Serves on stdio, or on HTTP when `--http` is given.
fn serve(config: std::sync::Arc<Config>, args: &toolbelt_mcp_core::config::args::HttpArgs) -> Result<bool, String> {
    // No process of this user (a command run with `full-access`, another program) may read
    // the server's environment, memory or open files through `/proc`; nor dump its core.
    #[cfg(target_os = "linux")]
    if let Err(err) = rustix::process::set_dumpable_behavior(rustix::process::DumpableBehavior::NotDumpable) {
        tracing::warn!(%err, "cannot make the server non-dumpable");
    }
    let http = HttpConfig::resolve(args, &|key| std::env::var_os(key), &config.state_dir).map_err(|e| e.to_string())?;
    let runtime = match http {
        // Many sessions at once: a worker thread per core.
        Some(_) => tokio::runtime::Builder::new_multi_thread().enable_all().build(),
        // One connection: a single-threaded scheduler avoids cross-thread wake-ups per
        // message; file work runs on the blocking pool and grep on its own threads.
        None => tokio::runtime::Builder::new_current_thread().enable_all().build(),
    }
    .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    let served = match http {
        Some(http) => runtime.block_on(toolbelt_mcp_server::http::serve(config, http)),
        None => runtime.block_on(toolbelt_mcp_server::stdio::serve(config)),
    };
    // A blocking task still running (a read the kernel holds) does not keep the process from
    // exiting: the runtime waits for it no longer than this.
    runtime.shutdown_timeout(std::time::Duration::from_secs(2));
    served.map(|()| true)
}

fn resolve(args: &CommonArgs) -> Result<std::sync::Arc<Config>, String> {
    let cwd =
        std::env::current_dir().map_err(|e| toolbelt_mcp_core::error::ConfigError::NoCurrentDir(e).to_string())?;
    Config::resolve(args, &|key| std::env::var_os(key), &cwd).map_err(|e| e.to_string())
}

/// Logs go to stderr (stdout is the protocol); `RUST_LOG` sets the filter (default: `default`).
/// They never block the server: lines are queued (at most `LOG_QUEUE`) for a thread that
/// writes them, and when whoever reads stderr stops reading, the newest are dropped and
/// counted, not waited for. The returned guard flushes the queue when the process ends.
fn init_logging(default: &str) -> tracing_appender::non_blocking::WorkerGuard {
    // The queue is allocated whole at start, 32 bytes a line: 4,096 lines were 32 pages that
    // every start wrote, for a backlog only a stalled reader of stderr builds.
    const LOG_QUEUE: usize = 512;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_QUEUE)
        .lossy(true)
        .thread_name("log-writer")
        .finish(std::io::stderr());
    toolbelt_mcp_core::metrics::watch_dropped_logs(writer.error_counter());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(writer)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    guard
}
