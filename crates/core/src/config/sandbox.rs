//! The sandbox's own settings: what commands may not read (`deny_read`) and the resource limits
//! of every command, with their defaults.

use std::path::{Path, PathBuf};

use crate::error::ConfigError;
use toolbelt_mcp_sandbox::contract::Limits;

/// Default most processes (and threads) of one command's user namespace: room for parallel
/// builds (`cargo`, `make -j`), not for a fork bomb.
pub const DEFAULT_MAX_PROCESSES: u64 = 4096;
/// Default largest file a command may write: 16 GiB.
pub const DEFAULT_MAX_FILE_BYTES: u64 = 16 << 30;
/// The smallest default address-space limit, whatever the machine's memory: 8 GiB (the JVM,
/// V8 and Go reserve large ranges they never touch).
pub const MIN_DEFAULT_MEMORY_BYTES: u64 = 8 << 30;

/// Secrets commands never see by default, relative to the home directory: keys and cloud
/// credentials, package registries' tokens, and the tokens agent hosts keep (Claude Code's
/// `~/.claude.json` holds the bearer tokens of the HTTP servers it was told to use, this one's
/// included).
pub const DEFAULT_DENY_READ: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".config/gcloud",
    ".azure",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".git-credentials",
    ".config/gh/hosts.yml",
    ".config/hub",
    ".claude.json",
    ".claude/.credentials.json",
    ".codex/auth.json",
    ".gemini/oauth_creds.json",
    ".qwen/oauth_creds.json",
    ".config/github-copilot",
    ".pgpass",
    ".vault-token",
    ".terraform.d/credentials.tfrc.json",
    ".cache/huggingface/token",
    ".m2/settings.xml",
    ".gradle/gradle.properties",
    ".my.cnf",
];

/// Sockets of the machine that grant more than the sandbox does, hidden by default: the
/// container engines' (a command that reaches one starts a container with the host's `/`
/// mounted), the system bus (polkit asks there), snapd's. Besides, the user's runtime dir
/// (`$XDG_RUNTIME_DIR`, else `/run/user/UID`): its session bus and systemd's socket run
/// anything as the user outside the sandbox (`systemd-run --user`), and it holds the
/// gpg-agent, keyring, ssh-agent, audio and display sockets. Sandboxed commands need none of
/// them: they reach other hosts through the proxy, not an ssh agent, and draw no windows.
pub const DEFAULT_DENY_SYSTEM: &[&str] = &[
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/dbus/system_bus_socket",
    "/var/run/dbus/system_bus_socket",
    "/run/snapd.socket",
    "/run/snapd-snap.socket",
];

/// The user's runtime dir: `$XDG_RUNTIME_DIR`, else `/run/user/UID` (Unix).
pub fn runtime_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(dir));
    }
    #[cfg(unix)]
    return Some(PathBuf::from(format!("/run/user/{}", rustix::process::getuid().as_raw())));
    #[cfg(not(unix))]
    None
}

/// Files this process holds secrets in that commands must never read, wherever they are (the
/// HTTP server's `--auth-token-file`): hidden even inside a root.
static SECRETS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// The files this process holds secrets in ([`hide_from_commands`]).
pub fn own_secrets() -> Vec<PathBuf> {
    SECRETS.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// Hides `path` from every command this process starts from now on.
pub fn hide_from_commands(path: &Path) {
    let real = toolbelt_mcp_sandbox::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    SECRETS.lock().unwrap_or_else(|p| p.into_inner()).push(real);
}

/// The sandbox settings as given (absolute paths).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxSettings {
    /// Paths commands may not read, listed by the user (hidden even inside a root).
    pub deny_read: Vec<PathBuf>,
    /// Whether the default secrets (`DEFAULT_DENY_READ`, the server's state and config
    /// dirs) are hidden too.
    pub deny_read_defaults: bool,
    /// Resource limits of every command.
    pub limits: Limits,
}

/// The limits from the config's `max_processes`, `max_memory_bytes` and `max_file_bytes`
/// (0: no limit), or their defaults.
pub fn limits(
    processes: Option<u64>,
    memory_bytes: Option<u64>,
    file_bytes: Option<u64>,
) -> Result<Limits, ConfigError> {
    if let Some(n) = processes.filter(|n| (1..64).contains(n)) {
        return Err(ConfigError::OutOfRange {
            key: "max_processes",
            value: n.to_string(),
            expected: "at least 64 (a shell and a build need a few dozen), or 0 for no limit",
        });
    }
    let machine = machine_memory();
    let limit = |given: Option<u64>, default: u64| match given {
        Some(0) => None,
        Some(n) => Some(n),
        None => Some(default),
    };
    Ok(Limits {
        processes: limit(processes, DEFAULT_MAX_PROCESSES),
        memory_bytes: limit(memory_bytes, machine.max(MIN_DEFAULT_MEMORY_BYTES)),
        file_bytes: limit(file_bytes, DEFAULT_MAX_FILE_BYTES),
    })
}

/// The machine's memory in bytes (the default address-space limit of a command).
#[cfg(target_os = "linux")]
fn machine_memory() -> u64 {
    let memory = rustix::system::sysinfo();
    u64::from(memory.mem_unit).saturating_mul(memory.totalram)
}

/// Unknown here: the limits are enforced by the Linux sandbox only, so the floor stands in.
#[cfg(not(target_os = "linux"))]
fn machine_memory() -> u64 {
    0
}

/// Where the default secrets lie: the home directory and the user's runtime dir.
#[derive(Debug, Clone, Copy, Default)]
pub struct Places<'a> {
    /// `$HOME`.
    pub home: Option<&'a Path>,
    /// `$XDG_RUNTIME_DIR` ([`runtime_dir`]).
    pub runtime: Option<&'a Path>,
}

/// Every path hidden from commands, whether it exists yet or not (a command's sandbox watches
/// the missing ones, and hides each the moment it appears): the user's `deny_read` entries,
/// the server's own secrets, state dir and config dir (wherever they lie), and unless turned
/// off the default secrets under `home` and the machine's sockets. An existing entry by its
/// real path. A default entry inside a root is left visible (the user put it there).
pub fn secret_paths(settings: &SandboxSettings, places: Places<'_>, own: &[&Path], roots: &[PathBuf]) -> Vec<PathBuf> {
    let mut secrets: Vec<PathBuf> = settings.deny_read.clone();
    secrets.extend(SECRETS.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned());
    // The server's own state and config: hidden always, inside a root too (the state dir
    // holds the generated HTTP token).
    for path in own {
        let real = toolbelt_mcp_sandbox::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        secrets.push(real);
    }
    if settings.deny_read_defaults {
        // An empty or relative `HOME` names no home: its entries would be relative paths.
        let under_home = places
            .home
            .filter(|home| home.is_absolute())
            .into_iter()
            .flat_map(|home| DEFAULT_DENY_READ.iter().map(move |entry| home.join(entry)));
        let system = DEFAULT_DENY_SYSTEM.iter().map(PathBuf::from).chain(places.runtime.map(Path::to_path_buf));
        for path in under_home.chain(system) {
            // Most defaults are missing: one `stat` skips them before any `realpath`.
            let real = if toolbelt_mcp_sandbox::fs::exists(&path) {
                toolbelt_mcp_sandbox::fs::canonicalize(&path).unwrap_or(path)
            } else {
                path
            };
            if !roots.iter().any(|root| real.starts_with(root)) {
                secrets.push(real);
            }
        }
    }
    secrets.sort();
    secrets.dedup();
    secrets
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn limits_default_and_zero_means_none() {
        let limits = limits(None, None, Some(0)).unwrap();
        assert_eq!(limits.processes, Some(DEFAULT_MAX_PROCESSES));
        assert!(limits.memory_bytes.unwrap() >= MIN_DEFAULT_MEMORY_BYTES);
        assert_eq!(limits.file_bytes, None);
        assert!(super::limits(Some(10), None, None).unwrap_err().to_string().contains("max_processes"));
    }

    /// The secrets that exist (the ones hidden when a command starts).
    fn hidden_paths(settings: &SandboxSettings, home: Option<&Path>, own: &[&Path], roots: &[PathBuf]) -> Vec<PathBuf> {
        let mut hidden = secret_paths(settings, Places { home, runtime: None }, own, roots);
        hidden.retain(|path| path.exists());
        hidden
    }

    #[test]
    fn missing_secrets_are_listed_to_be_watched() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        let settings = SandboxSettings { deny_read: vec![], deny_read_defaults: true, limits: Limits::default() };
        let runtime = home.join("run");
        let all = secret_paths(&settings, Places { home: Some(&home), runtime: Some(&runtime) }, &[], &[]);
        assert!(all.contains(&home.join(".config/gh/hosts.yml")) && all.contains(&home.join(".ssh")), "{all:?}");
        assert!(all.contains(&runtime) && all.contains(&PathBuf::from("/run/docker.sock")), "{all:?}");
        // (Other tests of this process may have added the server's own secrets.)
        assert!(DEFAULT_DENY_READ.iter().all(|entry| all.contains(&home.join(entry))), "{all:?}");
        assert!(DEFAULT_DENY_SYSTEM.iter().all(|entry| all.contains(&PathBuf::from(entry))), "{all:?}");
    }

    #[test]
    fn defaults_hide_existing_secrets_outside_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        std::fs::write(home.join(".netrc"), "machine x").unwrap();
        std::fs::create_dir_all(home.join("ws/.aws")).unwrap();
        let state = home.join("state");
        std::fs::create_dir(&state).unwrap();
        let listed = home.join("ws/secret.env");
        std::fs::write(&listed, "K=V").unwrap();
        let settings =
            SandboxSettings { deny_read: vec![listed.clone()], deny_read_defaults: true, limits: Limits::default() };
        let roots = vec![home.join("ws")];
        let hidden = hidden_paths(&settings, Some(&home), &[&state], &roots);
        assert_eq!(hidden, [home.join(".netrc"), home.join(".ssh"), state.clone(), listed.clone()]);
        // A root that is the home itself: its secrets are the user's to show.
        let at_home = hidden_paths(&settings, Some(&home), &[], std::slice::from_ref(&home));
        assert_eq!(at_home, std::slice::from_ref(&listed));
        let off = SandboxSettings { deny_read_defaults: false, ..settings };
        // The server's own state stays hidden whatever the defaults say, in a root too.
        assert_eq!(hidden_paths(&off, Some(&home), &[&state], &roots), [state.clone(), listed.clone()]);
        assert_eq!(hidden_paths(&off, Some(&home), &[&state], std::slice::from_ref(&home)), [state, listed]);
    }
}
