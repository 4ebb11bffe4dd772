//! The agent's settings from its flags and environment: the task, the provider, the server to
//! connect to, how questions are answered and which tools are offered.

use std::ffi::OsString;
use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use super::client::Target;
use super::handler::Answering;
use super::mcp_config::{self, Declared};
use super::provider::{Kind, Settings};
use super::resume::{self, Invocation, Resumed};
use super::tools::Filter;
use crate::AgentArgs;
use toolbelt_mcp_core::config::args::CommonArgs;

/// The default Anthropic model.
pub(crate) const ANTHROPIC_MODEL: &str = "claude-sonnet-4-5";
/// The instruction of a resumed run given none.
const CONTINUE: &str = "Continue the task where you left off.";
/// The largest task read from stdin.
const TASK_LIMIT: u64 = 1024 * 1024;

/// A setting that cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SettingsError {
    /// No task.
    #[error("no task: pass it with `-p \"TASK\"` or pipe it on stdin")]
    NoTask,
    /// The task on stdin could not be read.
    #[error("cannot read the task from stdin: {0}; pass it with `-p \"TASK\"` instead")]
    Stdin(String),
    /// No provider could be chosen.
    #[error(
        "no model provider: set `ANTHROPIC_API_KEY` (or `OPENAI_API_KEY`), or pass `--provider openai --base-url URL --model M` for a local server"
    )]
    NoProvider,
    /// No model for an OpenAI-compatible API.
    #[error("`--provider openai` needs `--model`, e.g. `--model gpt-4.1` or `--model qwen3:8b` for Ollama")]
    NoModel,
    /// The key is missing where one is needed.
    #[error("no API key: `{0}` is not set; export it, or name another variable with `--api-key-env`")]
    NoKey(String),
    /// `--server-cmd` could not be split.
    #[error("cannot split `--server-cmd {0}` into words (unbalanced quotes?); quote it as a shell would")]
    ServerCmd(String),
    /// The current directory is gone.
    #[error("cannot find the current directory: {0}; pass `--root DIR`")]
    NoCurrentDir(String),
    /// The agent binary cannot find itself.
    #[error("cannot find this executable to start `serve`: {0}; pass `--server-cmd`")]
    NoExe(String),
    /// An `--mcp-config` file cannot be used.
    #[error(transparent)]
    McpConfig(#[from] mcp_config::ConfigError),
    /// The `--resume` transcript cannot be used.
    #[error(transparent)]
    Resume(#[from] resume::ResumeError),
    /// `--no-toolbelt` without another server.
    #[error("`--no-toolbelt` leaves no MCP server: add one with `--mcp-config FILE`")]
    NoServer,
}

/// Everything the agent needs before it connects.
#[derive(Debug, Clone)]
pub(crate) struct Setup {
    /// The task.
    pub task: String,
    /// The workspace root (for `AGENTS.md` and the prompt).
    pub root: PathBuf,
    /// The provider.
    pub provider: Settings,
    /// Most output tokens per turn.
    pub max_output_tokens: Option<u32>,
    /// How questions are answered.
    pub answering: Answering,
    /// The first server, whose tools keep their names: `serve`, `--server-url` or
    /// `--server-cmd`; `None` with `--no-toolbelt`.
    pub target: Option<Target>,
    /// The `--mcp-config` servers, in order (a name given twice: the later entry).
    pub servers: Vec<Declared>,
    /// The tool filter.
    pub filter: Filter,
    /// The conversation of `--resume`.
    pub resumed: Option<Resumed>,
    /// The servers this run uses, as the transcript records them.
    pub invocation: Invocation,
}

impl Setup {
    /// Resolves `args` with `env`, reading the task from stdin when `-p` is not given;
    /// `local_token` reads the token a server on this machine generated (the caller knows
    /// where state lives).
    pub(crate) fn resolve(
        args: &AgentArgs,
        env: &dyn Fn(&str) -> Option<OsString>,
        local_token: &dyn Fn() -> Option<String>,
    ) -> Result<Self, SettingsError> {
        let stdin_tty = std::io::stdin().is_terminal();
        let resumed = args.resume.as_deref().map(resume::load).transpose()?;
        let task = match &args.prompt {
            Some(task) => task.clone(),
            None if stdin_tty && resumed.is_some() => CONTINUE.to_string(),
            None if stdin_tty => return Err(SettingsError::NoTask),
            None => {
                let mut task = String::new();
                std::io::stdin()
                    .take(TASK_LIMIT)
                    .read_to_string(&mut task)
                    .map_err(|e| SettingsError::Stdin(e.to_string()))?;
                task
            }
        };
        let task = if task.trim().is_empty() && resumed.is_some() { CONTINUE.to_string() } else { task };
        if task.trim().is_empty() {
            return Err(SettingsError::NoTask);
        }
        let answering = if args.yes {
            Answering::Accept
        } else if stdin_tty {
            Answering::Terminal
        } else {
            Answering::Decline
        };
        let root = match args.common.roots.first() {
            Some(root) => toolbelt_mcp_sandbox::fs::canonicalize(root).unwrap_or_else(|_| root.clone()),
            None => std::env::current_dir().map_err(|e| SettingsError::NoCurrentDir(e.to_string()))?,
        };
        // A resumed run given no servers uses those of the run it continues.
        let mut invocation = Invocation {
            mcp_config: args
                .mcp_config
                .iter()
                .map(|f| toolbelt_mcp_sandbox::fs::canonicalize(f).unwrap_or_else(|_| f.clone()))
                .collect(),
            no_toolbelt: args.no_toolbelt,
            server_url: args.server_url.clone(),
            server_cmd: args.server_cmd.clone(),
        };
        if invocation.is_default()
            && let Some(recorded) = resumed.as_ref().and_then(|r| r.invocation.clone())
        {
            invocation = recorded;
        }
        let args = &AgentArgs {
            mcp_config: invocation.mcp_config.clone(),
            no_toolbelt: invocation.no_toolbelt,
            server_url: invocation.server_url.clone(),
            server_cmd: invocation.server_cmd.clone(),
            ..args.clone()
        };
        let target = if args.no_toolbelt { None } else { Some(target(args, env, local_token)?) };
        let servers = declared(&args.mcp_config, env)?;
        if target.is_none() && servers.is_empty() {
            return Err(SettingsError::NoServer);
        }
        let provider = provider(args, env)?;
        let filter = Filter { allow: args.allow_tools.clone(), deny: args.deny_tools.clone() };
        Ok(Self {
            task,
            root,
            provider,
            max_output_tokens: args.max_output_tokens,
            answering,
            target,
            servers,
            filter,
            resumed,
            invocation,
        })
    }
}

/// The servers of the `--mcp-config` files, in order; a name declared again replaces the
/// earlier entry (as a later config scope does in Claude Code).
fn declared(files: &[PathBuf], env: &dyn Fn(&str) -> Option<OsString>) -> Result<Vec<Declared>, SettingsError> {
    let mut all: Vec<Declared> = Vec::new();
    for file in files {
        for server in mcp_config::load(file, env)? {
            all.retain(|earlier| earlier.name != server.name);
            all.push(server);
        }
    }
    Ok(all)
}

/// The provider settings: the kind, model, URL and key.
pub(crate) fn provider(args: &AgentArgs, env: &dyn Fn(&str) -> Option<OsString>) -> Result<Settings, SettingsError> {
    let set = |name: &str| env(name).is_some_and(|v| !v.is_empty());
    let kind = match args.provider {
        Some(kind) => kind,
        None if set("ANTHROPIC_API_KEY") => Kind::Anthropic,
        None if set("OPENAI_API_KEY") || args.base_url.is_some() => Kind::Openai,
        None => return Err(SettingsError::NoProvider),
    };
    let (default_key, default_url) = match kind {
        Kind::Anthropic => ("ANTHROPIC_API_KEY", "https://api.anthropic.com"),
        Kind::Openai => ("OPENAI_API_KEY", "https://api.openai.com/v1"),
    };
    let key_env = args.api_key_env.clone().unwrap_or_else(|| default_key.to_string());
    let api_key = env(&key_env).map(|v| v.to_string_lossy().into_owned()).filter(|k| !k.is_empty());
    // A local server needs no key; the providers' own endpoints do.
    if api_key.is_none() && (args.base_url.is_none() || args.api_key_env.is_some()) {
        return Err(SettingsError::NoKey(key_env));
    }
    let model = match (&args.model, kind) {
        (Some(model), _) => model.clone(),
        (None, Kind::Anthropic) => ANTHROPIC_MODEL.to_string(),
        (None, Kind::Openai) => return Err(SettingsError::NoModel),
    };
    let base_url = args.base_url.clone().unwrap_or_else(|| default_url.to_string());
    Ok(Settings { kind, model, base_url, api_key, key_env, timeout: args.request_timeout, stream: !args.no_stream })
}

/// The server to connect to.
fn target(
    args: &AgentArgs,
    env: &dyn Fn(&str) -> Option<OsString>,
    local_token: &dyn Fn() -> Option<String>,
) -> Result<Target, SettingsError> {
    if let Some(url) = &args.server_url {
        let mut token = env(toolbelt_mcp_core::env_vars::AUTH_TOKEN.name)
            .map(|t| t.to_string_lossy().trim().to_string())
            .filter(|t| !t.is_empty());
        // A server on this machine generated its token into the state dir: use it.
        let local = ["http://127.0.0.1:", "http://localhost:", "http://[::1]:"].iter().any(|p| url.starts_with(p));
        if token.is_none() && local {
            token = local_token();
        }
        return Ok(Target::Url { url: url.clone(), token, headers: Vec::new() });
    }
    if let Some(command) = &args.server_cmd {
        let mut words =
            shlex::split(command).filter(|w| !w.is_empty()).ok_or_else(|| SettingsError::ServerCmd(command.clone()))?;
        let program = PathBuf::from(words.remove(0));
        return Ok(Target::Spawn { program, args: words, env: Vec::new(), cwd: None });
    }
    let program = std::env::current_exe().map_err(|e| SettingsError::NoExe(e.to_string()))?;
    Ok(Target::Spawn { program, args: serve_args(&args.common), env: Vec::new(), cwd: None })
}

/// The `serve` arguments repeating the agent's common flags.
pub(crate) fn serve_args(common: &CommonArgs) -> Vec<String> {
    let mut args = vec!["serve".to_string()];
    let mut flag = |name: &str, value: String| args.extend([format!("--{name}"), value]);
    for root in &common.roots {
        flag("root", root.display().to_string());
    }
    if let Some(config) = &common.config {
        flag("config", config.display().to_string());
    }
    if let Some(dir) = &common.state_dir {
        flag("state-dir", dir.display().to_string());
    }
    if let Some(layout) = common.tool_layout {
        flag("tool-layout", layout.as_str().into());
    }
    if let Some(budget) = common.output_budget {
        flag("output-budget", budget.to_string());
    }
    if let Some(sandbox) = common.sandbox {
        flag("sandbox", sandbox.as_str().into());
    }
    if let Some(approval) = common.approval {
        flag("approval", approval.as_str().into());
    }
    if let Some(log) = &common.audit_log {
        flag("audit-log", log.display().to_string());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    /// The agent's flags alone, parsed as `toolbelt-mcp agent` parses them.
    #[derive(Debug, Parser)]
    struct Agent {
        #[command(flatten)]
        args: AgentArgs,
    }

    fn parse(line: &[&str]) -> AgentArgs {
        Agent::parse_from(["toolbelt-mcp-agent"].iter().chain(line)).args
    }

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<OsString> {
        move |key| vars.iter().find(|(k, _)| *k == key).map(|(_, v)| OsString::from(v))
    }

    #[test]
    fn the_provider_follows_flags_then_keys() {
        let anthropic = provider(&parse(&[]), &env(&[("ANTHROPIC_API_KEY", "k")])).unwrap();
        assert_eq!((anthropic.kind, anthropic.model.as_str()), (Kind::Anthropic, ANTHROPIC_MODEL));
        assert_eq!(anthropic.base_url, "https://api.anthropic.com");
        let openai = provider(&parse(&["--model", "gpt"]), &env(&[("OPENAI_API_KEY", "k")])).unwrap();
        assert_eq!((openai.kind, openai.api_key.as_deref()), (Kind::Openai, Some("k")));
        let local = provider(&parse(&["--base-url", "http://127.0.0.1:1/v1", "--model", "q"]), &env(&[])).unwrap();
        assert_eq!((local.kind, local.api_key), (Kind::Openai, None));
        assert!(matches!(provider(&parse(&[]), &env(&[])), Err(SettingsError::NoProvider)));
        assert!(matches!(
            provider(&parse(&["--provider", "openai"]), &env(&[("OPENAI_API_KEY", "k")])),
            Err(SettingsError::NoModel)
        ));
        let named = parse(&["--provider", "anthropic", "--api-key-env", "MY_KEY"]);
        assert!(matches!(provider(&named, &env(&[])), Err(SettingsError::NoKey(name)) if name == "MY_KEY"));
        assert_eq!(provider(&named, &env(&[("MY_KEY", "s")])).unwrap().api_key.as_deref(), Some("s"));
    }

    #[test]
    fn the_serve_child_gets_the_common_flags() {
        let args =
            parse(&["--root", "/w", "--sandbox", "read-only", "--approval", "on-write", "--tool-layout", "granular"]);
        assert_eq!(
            serve_args(&args.common),
            ["serve", "--root", "/w", "--tool-layout", "granular", "--sandbox", "read-only", "--approval", "on-write"]
        );
        let cmd = parse(&["--server-cmd", "npx -y 'a b'"]);
        assert!(
            matches!(target(&cmd, &env(&[]), &|| None).unwrap(), Target::Spawn { program, args, .. } if program.as_os_str() == "npx" && args == ["-y", "a b"])
        );
        assert!(target(&parse(&["--server-cmd", "x 'y"]), &env(&[]), &|| None).is_err());
    }
}
