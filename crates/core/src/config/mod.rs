//! `Config::resolve`: flags > environment > config file > defaults, validated once into an
//! immutable `Arc<Config>`.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::config::args::{Approval, CommonArgs, Fallback, ToolLayout};
use crate::config::audit::AuditSettings;
use crate::config::layer::{Combine, Layer};
use crate::env_vars;
use crate::error::ConfigError;
use toolbelt_mcp_sandbox::fs;
use toolbelt_mcp_sandbox::mode::{Network, SandboxMode};

pub mod args;
pub mod audit;
mod budget;
pub mod delegate;
pub mod http;
mod layer;
pub mod sandbox;
pub mod workspace;

pub use budget::OutputBudget;

/// Default text budget of one tool result, in bytes.
/// Smallest and largest accepted text budgets: big enough for a useful answer, small enough
/// to stay far below the 10 MiB message limit of common clients.
const BUDGET_RANGE: (usize, usize) = (1024, 4 * 1024 * 1024);
/// Default cap on one image returned by `read_file`: 3.75 MiB, so its base64 stays within
/// 5 MiB (the Anthropic API's per-image limit) and the message far below 10 MiB.
pub const DEFAULT_MAX_IMAGE_BYTES: usize = 3840 * 1024;
/// Largest file an edit reads and rewrites when the config does not say.
pub const DEFAULT_MAX_EDIT_BYTES: u64 = 10 * 1024 * 1024;
/// Default cap on the output one terminal session keeps in memory.
pub const DEFAULT_SESSION_OUTPUT_BYTES: usize = 8 * 1024 * 1024;
/// Default limit on terminal sessions running at once.
pub const DEFAULT_MAX_SESSIONS: usize = 16;
/// The audit log is rotated past this size.
pub const DEFAULT_AUDIT_BYTES: u64 = 10 * 1024 * 1024;
/// Default cap on the bytes of undo blobs one session keeps.
pub const DEFAULT_UNDO_BYTES: u64 = 256 * 1024 * 1024;
/// Default cap on the bytes of undo blobs all the sessions of one server keep together.
pub const DEFAULT_UNDO_TOTAL_BYTES: u64 = 1024 * 1024 * 1024;
/// Largest accepted image cap.
const MAX_IMAGE_LIMIT: usize = 7 * 1024 * 1024;

/// The resolved configuration, shared read-only by everything that serves calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Canonical root directories; relative paths resolve against the first.
    pub roots: Vec<PathBuf>,
    /// Whether the roots were given (flag, env or file). If not, a client's MCP roots replace
    /// the current-directory default.
    pub roots_explicit: bool,
    /// Why there is no default workspace (roots empty): no root was given, the host named no
    /// project, and the current directory is `/`, the home or a system directory. Calls answer
    /// with it until the client names a workspace (MCP roots, or a working dir in `_meta`).
    pub roots_refused: Option<String>,
    /// Where state lives (created on first use, not at startup).
    pub state_dir: PathBuf,
    /// How operations are exposed as tools.
    pub tool_layout: ToolLayout,
    /// Most bytes of text in one tool result.
    pub output_budget: OutputBudget,
    /// Most bytes of one image returned as image content.
    pub max_image_bytes: usize,
    /// Largest file an edit operation reads and rewrites.
    pub max_edit_bytes: u64,
    /// Most bytes of undo data one session keeps (oldest dropped first).
    pub max_undo_bytes: u64,
    /// Most bytes of undo data all the sessions of this server keep together (the oldest
    /// change of any session dropped first).
    pub max_undo_total_bytes: u64,
    /// Whether what commands write in git-ignored paths (build output, dependencies) is
    /// recorded for undo too.
    pub undo_ignored: bool,
    /// Whether what commands without a staging layer write (macOS; Linux with `stage_writes =
    /// false`) is recorded for undo, by comparing the roots with a copy before and after each
    /// command (two walks of the roots' metadata per command).
    pub undo_unstaged: bool,
    /// The config file that was read, if any.
    pub config_file: Option<PathBuf>,
    /// Where the default config file lives (`$XDG_CONFIG_HOME/toolbelt-mcp`), read or not:
    /// commands may not write it, so they cannot plant a config for the next start.
    pub config_dir: PathBuf,
    /// How commands are confined.
    pub sandbox: SandboxMode,
    /// Whether sandboxed commands may reach other hosts, and how.
    pub network: Network,
    /// The hosts commands may reach through the proxy besides (`allow`) or instead of
    /// (`allowlist`) every public one, as given (checked when resolved).
    pub network_allow: Vec<String>,
    /// Whether `allowlist` mode also lets commands reach the common package registries and
    /// forges (`toolbelt_mcp_sandbox::proxy::REGISTRIES`).
    pub network_allow_defaults: bool,
    /// Whether each tool carries the hints hosts read in its `_meta`: Claude Code's
    /// `anthropic/alwaysLoad` (not deferred behind tool search) and
    /// `anthropic/maxResultSizeChars` (the result cap raised to the client's output budget).
    pub host_tool_hints: bool,
    /// What commands may not read, and their resource limits.
    pub sandbox_settings: sandbox::SandboxSettings,
    /// Directories commands may also write in `workspace-write` mode (canonical).
    pub writable_roots: Vec<PathBuf>,
    /// The shell that runs commands (`SHELL -c COMMAND`) and interactive sessions.
    pub shell: String,
    /// Environment variables passed to commands beyond the defaults (`NAME` or `PREFIX*`).
    pub env_allow: Vec<String>,
    /// Most terminal sessions running at once.
    pub max_sessions: usize,
    /// Most bytes of output one terminal session keeps in memory (oldest dropped first).
    pub session_output_bytes: usize,
    /// When to ask the user.
    pub approval: Approval,
    /// What to do when a call needs approval and the client cannot ask.
    pub approval_fallback: Fallback,
    /// How long to wait for the user's answer before counting it as a denial.
    pub approval_timeout: std::time::Duration,
    /// Command prefixes denied under every policy, as argv, e.g. `["rm", "-rf", "/"]`.
    pub forbidden_commands: Vec<Vec<String>>,
    /// Whether the catastrophic defaults (`rm -r /`, `mkfs`, fork bombs, …) are forbidden too.
    pub forbid_catastrophic: bool,
    /// The most the commands of one session may keep in `/tmp`, `/var/tmp` and `/dev/shm`
    /// together (a tmpfs per session, Linux; 0: plain directories on disk, unbounded).
    pub max_temp_bytes: u64,
    /// Whether sandboxed commands' writes beneath the roots are staged, judged and recorded
    /// before they reach the real tree (Linux; `false`: commands write the roots directly).
    pub stage_writes: bool,
    /// The audit log (off when its path is `None`).
    pub audit: AuditSettings,
    /// The PostgreSQL database todo lists and memories are kept in (else SQLite in the state dir).
    pub store: Option<StoreUrl>,
    /// The workspace named for todo lists and memories (else the first root's git remote,
    /// else its path: `store::workspace`).
    pub workspace: Option<String>,
    /// The model `delegate` uses when the client offers none through sampling (`[delegate]`).
    pub delegate: Option<delegate::Delegate>,
}

/// Default most the commands of one session keep in their temp dirs: 2 GiB.
pub const DEFAULT_TEMP_BYTES: u64 = 2 << 30;

/// A store URL, which may hold a password: never shown by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct StoreUrl(String);

impl StoreUrl {
    /// The URL itself (for the driver only).
    pub fn url(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for StoreUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StoreUrl(…)")
    }
}

/// Reads an environment variable; injected so resolution is testable without touching the
/// process environment.
pub type EnvLookup<'a> = &'a dyn Fn(&str) -> Option<OsString>;

impl Config {
    /// Resolves flags, environment, the config file and defaults, canonicalising the roots.
    pub fn resolve(args: &CommonArgs, env: EnvLookup<'_>, cwd: &Path) -> Result<Arc<Self>, ConfigError> {
        let (file, config_file) = load_file(args, env)?;
        let file = file.anchored(config_file.as_deref().and_then(Path::parent));
        let settings = Layer::from_flags(args, cwd).combine(Layer::from_env(env, cwd)?).combine(file);

        let roots_explicit = settings.roots.is_some();
        let (given_roots, roots_refused) = match settings.roots.clone() {
            Some(roots) => (roots, None),
            None => match workspace::fallback(env, cwd) {
                Ok(dir) => (vec![dir], None),
                Err(why) => (Vec::new(), Some(why)),
            },
        };
        let roots = canonical_roots(given_roots)?;

        let state_dir = settings
            .state_dir
            .clone()
            .unwrap_or_else(|| xdg_dir(env, "XDG_STATE_HOME", ".local/state").join("toolbelt-mcp"));
        let tool_layout = settings.tool_layout.unwrap_or_default();
        let output_budget = settings.output_budget;
        if let Some(bytes) = output_budget
            && !(BUDGET_RANGE.0..=BUDGET_RANGE.1).contains(&bytes)
        {
            return Err(ConfigError::OutOfRange {
                key: "output_budget",
                value: bytes.to_string(),
                expected: "between 1024 and 4194304 bytes",
            });
        }
        let host_tool_hints = settings.host_tool_hints.unwrap_or(true);
        let output_budget =
            output_budget.map_or(OutputBudget::PerHost { hinted: host_tool_hints }, OutputBudget::Fixed);
        let max_image_bytes = settings.max_image_bytes.unwrap_or(DEFAULT_MAX_IMAGE_BYTES);
        if max_image_bytes > MAX_IMAGE_LIMIT {
            return Err(ConfigError::OutOfRange {
                key: "max_image_bytes",
                value: max_image_bytes.to_string(),
                expected: "at most 7340032 (7 MiB; its base64 must stay under the 10 MiB message limit of common clients)",
            });
        }

        let sandbox = settings.sandbox.unwrap_or_default();
        let network = settings.network.unwrap_or_default();
        let network_allow = settings.network_allow.0;
        #[cfg(unix)]
        for entry in &network_allow {
            toolbelt_mcp_sandbox::proxy::Allowed::parse(entry)
                .map_err(|problem| ConfigError::NetworkAllow { value: entry.clone(), problem })?;
        }
        let sandbox_settings = sandbox::SandboxSettings {
            deny_read: settings.deny_read.0.into_iter().map(|p| fs::canonicalize(&p).unwrap_or(p)).collect(),
            deny_read_defaults: settings.deny_read_defaults.unwrap_or(true),
            limits: sandbox::limits(settings.max_processes, settings.max_memory_bytes, settings.max_file_bytes)?,
        };
        let writable_roots = canonical_dirs(settings.writable_roots.unwrap_or_default(), |path, problem| {
            ConfigError::BadWritableRoot { path, problem }
        })?;
        let max_sessions = settings.max_sessions.unwrap_or(DEFAULT_MAX_SESSIONS);
        if !(1..=256).contains(&max_sessions) {
            return Err(ConfigError::OutOfRange {
                key: "max_sessions",
                value: max_sessions.to_string(),
                expected: "between 1 and 256",
            });
        }
        let session_output_bytes = settings.session_output_bytes.unwrap_or(DEFAULT_SESSION_OUTPUT_BYTES);
        if !(64 * 1024..=1024 * 1024 * 1024).contains(&session_output_bytes) {
            return Err(ConfigError::OutOfRange {
                key: "session_output_bytes",
                value: session_output_bytes.to_string(),
                expected: "between 65536 and 1073741824 bytes",
            });
        }
        let approval = settings.approval.unwrap_or_default();
        let approval_timeout_s = settings.approval_timeout_s.unwrap_or(300);
        if !(1..=86_400).contains(&approval_timeout_s) {
            return Err(ConfigError::OutOfRange {
                key: "approval_timeout_s",
                value: approval_timeout_s.to_string(),
                expected: "between 1 and 86400 seconds",
            });
        }
        let forbidden_commands = settings.forbidden_commands.unwrap_or_default();
        if let Some(bad) =
            forbidden_commands.iter().find(|rule| rule.is_empty() || rule.iter().any(|w| w.trim().is_empty()))
        {
            return Err(ConfigError::OutOfRange {
                key: "forbidden_commands",
                value: format!("{bad:?}"),
                expected: "non-empty lists of non-empty words, e.g. [[\"rm\", \"-rf\", \"/\"], [\"git\", \"push\", \"--force\"]]",
            });
        }
        let audit_path = Some(settings.audit_log.unwrap_or_else(|| state_dir.join("audit.jsonl")))
            .filter(|path| path.file_name().is_none_or(|name| name != "off"));
        if let Some(path) = &audit_path {
            check_audit_path(path, &state_dir, roots.iter().chain(&writable_roots))?;
        }
        let audit = AuditSettings::new(audit_path, settings.audit_log_max_bytes.unwrap_or(DEFAULT_AUDIT_BYTES));
        let shell = match settings.shell {
            Some(shell) if !shell.trim().is_empty() => shell,
            Some(_) => {
                return Err(ConfigError::OutOfRange {
                    key: "shell",
                    value: "\"\"".into(),
                    expected: "a program such as `bash` or `/bin/zsh`",
                });
            }
            None => default_shell(env),
        };

        let workspace = settings.workspace;
        if let Some(name) = &workspace {
            check_workspace(name)?;
        }
        let store = match settings.store.filter(|url| !url.is_empty() && url != "sqlite") {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => Some(StoreUrl(url)),
            Some(other) => {
                let shown = other.split('@').next_back().unwrap_or_default();
                return Err(ConfigError::OutOfRange {
                    key: "store",
                    value: format!("…{shown}"),
                    expected: "`sqlite` (the default: the state dir's database) or a PostgreSQL URL such as `postgres://toolbelt@db.internal:5432/toolbelt`",
                });
            }
            None => None,
        };

        Ok(Arc::new(Self {
            roots,
            roots_explicit,
            roots_refused,
            state_dir,
            tool_layout,
            output_budget,
            max_image_bytes,
            max_edit_bytes: settings.max_edit_bytes.unwrap_or(DEFAULT_MAX_EDIT_BYTES),
            max_undo_bytes: settings.max_undo_bytes.unwrap_or(DEFAULT_UNDO_BYTES),
            max_undo_total_bytes: settings.max_undo_total_bytes.unwrap_or(DEFAULT_UNDO_TOTAL_BYTES),
            undo_ignored: settings.undo_ignored.unwrap_or(false),
            undo_unstaged: settings.undo_unstaged.unwrap_or(true),
            config_file,
            config_dir: xdg_dir(env, "XDG_CONFIG_HOME", ".config").join("toolbelt-mcp"),
            sandbox,
            network,
            network_allow,
            network_allow_defaults: settings.network_allow_defaults.unwrap_or(true),
            host_tool_hints,
            sandbox_settings,
            writable_roots,
            shell,
            env_allow: settings.env_allow.unwrap_or_default(),
            max_sessions,
            session_output_bytes,
            approval,
            approval_fallback: settings.approval_fallback.unwrap_or_default(),
            approval_timeout: std::time::Duration::from_secs(approval_timeout_s),
            forbidden_commands,
            forbid_catastrophic: settings.forbid_catastrophic.unwrap_or(true),
            stage_writes: settings.stage_writes.unwrap_or(true),
            max_temp_bytes: settings.max_temp_bytes.unwrap_or(DEFAULT_TEMP_BYTES),
            audit,
            workspace,
            store,
            delegate: settings.delegate.map(delegate::DelegateTable::resolve).transpose()?,
        }))
    }
}

/// Refuses a workspace name that is empty, too long or holds control characters.
fn check_workspace(name: &str) -> Result<(), ConfigError> {
    if name.trim().is_empty() || name.len() > 256 || name.chars().any(char::is_control) {
        return Err(ConfigError::OutOfRange {
            key: "workspace",
            value: format!("{name:?}"),
            expected: "1 to 256 characters without control characters, e.g. `github.com/acme/tool` or `team-x`",
        });
    }
    Ok(())
}

/// Refuses an audit log the agent could empty or delete (inside a root or writable root,
/// where its commands and file operations write, unless in the state dir, which both keep
/// out of the agent's reach) and one that is a symbolic link (records would be appended to
/// whatever it points at).
fn check_audit_path<'a>(
    path: &Path,
    state_dir: &Path,
    writable: impl Iterator<Item = &'a PathBuf>,
) -> Result<(), ConfigError> {
    let problem = |problem: String| ConfigError::AuditLog { path: path.to_path_buf(), problem };
    if fs::read_link(path).is_ok() {
        return Err(problem(
            "is a symbolic link, and the log is never written through one; give the real file's path".into(),
        ));
    }
    let real = path
        .parent()
        .and_then(|dir| fs::canonicalize(dir).ok())
        .map_or_else(|| path.to_path_buf(), |dir| dir.join(path.file_name().unwrap_or_default()));
    let state_dir = fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_path_buf());
    if real.starts_with(&state_dir) || path.starts_with(&state_dir) {
        return Ok(());
    }
    if let Some(dir) = writable.into_iter().find(|dir| real.starts_with(dir)) {
        return Err(problem(format!(
            "lies inside `{}`, where the agent's commands could empty or delete it; put it outside the roots (the default is the state dir) or set `audit_log = \"off\"`",
            dir.display()
        )));
    }
    Ok(())
}

/// Reads the config file named by `--config`, `TOOLBELT_CONFIG`, or the XDG default (which
/// may be absent; the others must exist).
fn load_file(args: &CommonArgs, env: EnvLookup<'_>) -> Result<(Layer, Option<PathBuf>), ConfigError> {
    let explicit = args.config.clone().or_else(|| env(env_vars::CONFIG.name).map(PathBuf::from));
    let path = match explicit {
        Some(path) => path,
        None => {
            let default = xdg_dir(env, "XDG_CONFIG_HOME", ".config").join("toolbelt-mcp/config.toml");
            if !fs::is_file(&default) {
                return Ok((Layer::default(), None));
            }
            default
        }
    };
    // A config another user may write sets the sandbox and the approval policy for them.
    toolbelt_mcp_sandbox::owned::check(&path, false)
        .map_err(|source| ConfigError::ReadFile { path: path.clone(), source })?;
    let text = fs::read_small_text(&path).map_err(|source| ConfigError::ReadFile { path: path.clone(), source })?;
    let file = toml::from_str(&text)
        .map_err(|err| ConfigError::ParseFile { path: path.clone(), message: err.message().to_string() })?;
    Ok((file, Some(path)))
}

fn canonical_roots(given: Vec<PathBuf>) -> Result<Vec<PathBuf>, ConfigError> {
    canonical_dirs(given, |path, problem| ConfigError::BadRoot { path, problem })
}

/// Canonical, existing, distinct directories, in the order given.
fn canonical_dirs(
    given: Vec<PathBuf>,
    bad: impl Fn(PathBuf, String) -> ConfigError,
) -> Result<Vec<PathBuf>, ConfigError> {
    let mut roots: Vec<PathBuf> = Vec::with_capacity(given.len());
    for path in given {
        let canonical = fs::canonicalize(&path).map_err(|err| {
            let problem = match err.kind() {
                std::io::ErrorKind::NotFound => "does not exist".into(),
                _ => format!("cannot be resolved ({err})"),
            };
            bad(path.clone(), problem)
        })?;
        if !fs::is_dir(&canonical) {
            return Err(bad(path, "is not a directory".into()));
        }
        if !roots.contains(&canonical) {
            roots.push(canonical);
        }
    }
    Ok(roots)
}

/// `bash` if it is on `PATH`, else `/bin/sh` (Windows: `%COMSPEC%`, else `cmd.exe`).
#[cfg(windows)]
fn default_shell(env: EnvLookup<'_>) -> String {
    env("COMSPEC").and_then(|s| s.into_string().ok()).unwrap_or_else(|| "cmd.exe".into())
}

/// `bash` if it is on `PATH`, else `/bin/sh`.
#[cfg(unix)]
fn default_shell(env: EnvLookup<'_>) -> String {
    let path = env("PATH").unwrap_or_else(|| OsString::from("/usr/bin:/bin"));
    let found = std::env::split_paths(&path).any(|dir| fs::is_file(&dir.join("bash")));
    if found { "bash".into() } else { "/bin/sh".into() }
}

/// `$VAR` if set and absolute, else `$HOME/fallback`.
/// The state dir a flag or `TOOLBELT_STATE_DIR` names, else the XDG default (the config
/// file's `state_dir` aside): where a local HTTP server keeps its generated token.
pub fn plain_state_dir(flag: Option<&Path>, env: EnvLookup<'_>, cwd: &Path) -> PathBuf {
    match (flag, env(env_vars::STATE_DIR.name)) {
        (Some(dir), _) => cwd.join(dir),
        (None, Some(dir)) => cwd.join(dir),
        (None, None) => xdg_dir(env, "XDG_STATE_HOME", ".local/state").join("toolbelt-mcp"),
    }
}

fn xdg_dir(env: EnvLookup<'_>, var: &str, fallback: &str) -> PathBuf {
    match env(var).map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir,
        _ => home_dir(env, fallback),
    }
}

/// `$HOME/fallback` (`/` without a home).
#[cfg(unix)]
fn home_dir(env: EnvLookup<'_>, fallback: &str) -> PathBuf {
    env("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("/")).join(fallback)
}

/// Windows: config in `%APPDATA%` (roaming), state in `%LOCALAPPDATA%`, else the profile.
#[cfg(windows)]
fn home_dir(env: EnvLookup<'_>, fallback: &str) -> PathBuf {
    let var = if fallback == ".config" { "APPDATA" } else { "LOCALAPPDATA" };
    let profile = || env("USERPROFILE").map(|p| PathBuf::from(p).join(fallback));
    env(var).map(PathBuf::from).or_else(profile).unwrap_or_else(std::env::temp_dir)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> + use<> {
        let map: HashMap<String, OsString> = pairs.iter().map(|(k, v)| (k.to_string(), OsString::from(v))).collect();
        move |key| map.get(key).cloned()
    }

    fn dirs() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let a = tmp.path().join("a");
        let b = tmp.path().join("b");
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        (tmp, a.canonicalize().unwrap(), b.canonicalize().unwrap())
    }

    #[test]
    fn defaults_use_cwd_and_xdg_dirs() {
        let (tmp, a, _) = dirs();
        let home = tmp.path().to_str().unwrap();
        let config = Config::resolve(&CommonArgs::default(), &env_of(&[("HOME", home)]), &a).unwrap();
        assert_eq!(config.roots, vec![a]);
        assert!(!config.roots_explicit);
        assert_eq!(config.state_dir, tmp.path().join(".local/state/toolbelt-mcp"));
        assert_eq!(config.output_budget, OutputBudget::PerHost { hinted: true });
        assert_eq!(config.tool_layout, ToolLayout::Consolidated);
        assert_eq!(config.config_file, None);
    }

    #[test]
    fn flags_beat_env_beat_file() {
        let (tmp, a, b) = dirs();
        let file = tmp.path().join("c.toml");
        std::fs::write(
            &file,
            "roots = [\"b\"]\noutput_budget = 2000\ntool_layout = \"granular\"\nstate_dir = \"st\"\n",
        )
        .unwrap();
        let file_str = file.to_str().unwrap();
        // File only: relative paths resolve against the file's directory.
        let env = env_of(&[("TOOLBELT_CONFIG", file_str)]);
        let config = Config::resolve(&CommonArgs::default(), &env, &a).unwrap();
        assert_eq!(config.roots, vec![b.clone()]);
        assert!(config.roots_explicit);
        assert_eq!(config.output_budget, OutputBudget::Fixed(2000));
        assert_eq!(config.tool_layout, ToolLayout::Granular);
        assert_eq!(config.state_dir, tmp.path().join("st"));
        // Env beats file.
        let env = env_of(&[
            ("TOOLBELT_CONFIG", file_str),
            ("TOOLBELT_ROOT", a.to_str().unwrap()),
            ("TOOLBELT_OUTPUT_BUDGET", "3000"),
            ("TOOLBELT_TOOL_LAYOUT", "consolidated"),
        ]);
        let config = Config::resolve(&CommonArgs::default(), &env, &a).unwrap();
        assert_eq!((config.roots.clone(), config.output_budget), (vec![a.clone()], OutputBudget::Fixed(3000)));
        assert_eq!(config.tool_layout, ToolLayout::Consolidated);
        // Flags beat env.
        let args = CommonArgs {
            roots: vec![b.clone(), a.clone(), b.clone()],
            output_budget: Some(4000),
            tool_layout: Some(ToolLayout::Granular),
            ..CommonArgs::default()
        };
        let config = Config::resolve(&args, &env, &a).unwrap();
        assert_eq!(config.roots, vec![b, a], "duplicates are dropped, order kept");
        assert_eq!(config.output_budget, OutputBudget::Fixed(4000));
        assert_eq!(config.tool_layout, ToolLayout::Granular);
    }

    #[test]
    fn unknown_file_key_is_named() {
        let (tmp, a, _) = dirs();
        let file = tmp.path().join("c.toml");
        std::fs::write(&file, "rootz = [\"b\"]\n").unwrap();
        let args = CommonArgs { config: Some(file), ..CommonArgs::default() };
        let err = Config::resolve(&args, &env_of(&[]), &a).unwrap_err().to_string();
        assert!(err.contains("unknown field `rootz`"), "{err}");
    }

    #[test]
    fn bad_values_are_errors() {
        let (tmp, a, _) = dirs();
        let missing = CommonArgs { roots: vec![tmp.path().join("nope")], ..CommonArgs::default() };
        let err = Config::resolve(&missing, &env_of(&[]), &a).unwrap_err().to_string();
        assert!(err.contains("does not exist") && err.contains("nope"), "{err}");
        let small = CommonArgs { output_budget: Some(10), ..CommonArgs::default() };
        let err = Config::resolve(&small, &env_of(&[]), &a).unwrap_err().to_string();
        assert!(err.contains("output_budget"), "{err}");
        let err = Config::resolve(&CommonArgs::default(), &env_of(&[("TOOLBELT_TOOL_LAYOUT", "flat")]), &a)
            .unwrap_err()
            .to_string();
        assert!(err.contains("TOOLBELT_TOOL_LAYOUT"), "{err}");
        let huge = tmp.path().join("huge.toml");
        std::fs::write(&huge, "max_image_bytes = 99999999\n").unwrap();
        let args = CommonArgs { config: Some(huge), ..CommonArgs::default() };
        let err = Config::resolve(&args, &env_of(&[]), &a).unwrap_err().to_string();
        assert!(err.contains("max_image_bytes") && err.contains("7 MiB"), "{err}");
        let no_file = CommonArgs { config: Some(tmp.path().join("none.toml")), ..CommonArgs::default() };
        assert!(Config::resolve(&no_file, &env_of(&[]), &a).is_err());
        let file = tmp.path().join("f");
        std::fs::write(&file, "").unwrap();
        let not_dir = CommonArgs { roots: vec![file], ..CommonArgs::default() };
        let err = Config::resolve(&not_dir, &env_of(&[]), &a).unwrap_err().to_string();
        assert!(err.contains("not a directory"), "{err}");
    }
}
