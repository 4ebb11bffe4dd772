//! Where the workspace is when no root was given: the directory the host names, never a guess
//! that hands the agent the disk. Hosts start servers in `/` (Claude Desktop) or the home
//! (the Claude Code desktop app); serving either would make all of it writable.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use toolbelt_mcp_sandbox::fs;

/// The environment variable Claude Code sets to the project for the servers it starts.
pub const CLAUDE_PROJECT_DIR: &str = "CLAUDE_PROJECT_DIR";

/// Trees no directory of which is a workspace unless given by name: the system's own.
const SYSTEM_TREES: &[&str] = &[
    "/bin",
    "/boot",
    "/dev",
    "/etc",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/proc",
    "/run",
    "/sbin",
    "/sys",
    "/usr",
    "/System",
    "/Library",
    "/private/etc",
    "/private/var",
    "/private/tmp",
];

/// Directories that are never a workspace unless given by name (their subdirectories may be):
/// the parents of users' and services' files, and shared temp dirs.
const SYSTEM_DIRS: &[&str] = &[
    "/home",
    "/media",
    "/mnt",
    "/opt",
    "/root",
    "/srv",
    "/tmp",
    "/var",
    "/var/cache",
    "/var/lib",
    "/var/log",
    "/var/tmp",
    "/Applications",
    "/Users",
    "/Volumes",
    "/private",
];

/// Windows directories (compared without case) that are never a workspace unless given.
const WINDOWS_DIRS: &[&str] = &["windows", "program files", "program files (x86)", "programdata", "users"];

/// What `dir` (canonical) is, when it may not be a workspace by default: the file system's
/// root, the user's home, or a system directory.
pub fn never_by_default(dir: &Path, home: Option<&Path>) -> Option<&'static str> {
    if dir.parent().is_none() {
        return Some("the file system's root");
    }
    if home.is_some_and(|home| home == dir) {
        return Some("your home directory");
    }
    if home.is_some_and(|home| home.starts_with(dir)) {
        return Some("a directory that holds your home directory");
    }
    if SYSTEM_DIRS.iter().any(|system| dir == Path::new(system))
        || SYSTEM_TREES.iter().any(|tree| dir.starts_with(tree))
    {
        return Some("a system directory");
    }
    // `C:\Windows`, `C:\Users`, …: one component below a drive's root.
    let mut components = dir.components();
    let below_drive = matches!(components.next(), Some(std::path::Component::Prefix(_)))
        && matches!(components.next(), Some(std::path::Component::RootDir))
        && components.clone().count() == 1;
    if below_drive
        && let Some(name) = components.next().and_then(|c| c.as_os_str().to_str())
        && WINDOWS_DIRS.contains(&name.to_ascii_lowercase().as_str())
    {
        return Some("a system directory");
    }
    None
}

/// Why the existing directory `dir` may not be a workspace by default, if it may not: what
/// [`never_by_default`] says, or that other users may write in it.
pub fn refused(dir: &Path, home: Option<&Path>) -> Option<&'static str> {
    never_by_default(dir, home).or_else(|| fs::others_may_write(dir).then_some("a directory other users may write"))
}

/// The user's home, canonical, if the environment names one that exists.
pub fn home(env: &dyn Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
    let named = env("HOME").or_else(|| env("USERPROFILE")).filter(|home| !home.is_empty())?;
    fs::canonicalize(Path::new(&named)).ok()
}

/// A directory a host names (an absolute path or a `file://` URI), canonical, if it exists
/// and may be a workspace.
pub fn host_dir(named: &str, home: Option<&Path>) -> Option<PathBuf> {
    let path = match named.strip_prefix("file://") {
        Some(rest) => {
            let rest = rest.strip_prefix("localhost").unwrap_or(rest);
            PathBuf::from(percent_encoding::percent_decode_str(rest).decode_utf8().ok()?.as_ref())
        }
        None => PathBuf::from(named),
    };
    if !path.is_absolute() {
        return None;
    }
    let canonical = fs::canonicalize(&path).ok()?;
    (fs::is_dir(&canonical) && refused(&canonical, home).is_none()).then_some(canonical)
}

/// The default workspace when no root was given: the project dir Claude Code names, else the
/// current directory; `Err` with the reason when the current directory is one that is never
/// served by default.
pub fn fallback(env: &dyn Fn(&str) -> Option<OsString>, cwd: &Path) -> Result<PathBuf, String> {
    let home = home(env);
    if let Some(project) = env(CLAUDE_PROJECT_DIR).and_then(|dir| dir.into_string().ok())
        && let Some(dir) = host_dir(&project, home.as_deref())
    {
        return Ok(dir);
    }
    let cwd = fs::canonicalize(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    match refused(&cwd, home.as_deref()) {
        Some(what) => Err(refusal(&cwd, what)),
        None => Ok(cwd),
    }
}

/// What a call answers when the server has no workspace, with the config line that fixes it.
fn refusal(dir: &Path, what: &str) -> String {
    format!(
        "no workspace: the server was started in `{}` ({what}) without `--root`, and the client named no project (no MCP roots, no `CLAUDE_PROJECT_DIR`, no working directory in the call's `_meta`); serving it would let the agent change anything under it. Name the project in the server's arguments: `serve --root /path/to/project` (Claude Desktop: `args` in `claude_desktop_config.json`; Claude Code: `claude mcp add toolbelt -- toolbelt-mcp serve --root /path/to/project`; Codex: `args` under `[mcp_servers.toolbelt]` in `~/.codex/config.toml`), or set `TOOLBELT_ROOT`",
        dir.display()
    )
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn env_of(pairs: Vec<(&'static str, PathBuf)>) -> impl Fn(&str) -> Option<OsString> {
        move |key| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| v.clone().into_os_string())
    }

    #[test]
    fn the_root_the_home_and_system_dirs_are_never_a_default() {
        let home = Path::new("/home/someone");
        assert_eq!(never_by_default(Path::new("/"), Some(home)), Some("the file system's root"));
        assert_eq!(never_by_default(home, Some(home)), Some("your home directory"));
        for system in ["/usr", "/etc", "/tmp", "/Users", "/var", "/var/tmp", "/var/lib", "/usr/local", "/dev/shm"] {
            assert_eq!(never_by_default(Path::new(system), Some(home)), Some("a system directory"), "{system}");
        }
        for above in ["/home", "/home/"] {
            let what = never_by_default(Path::new(above), Some(home));
            assert_eq!(what, Some("a directory that holds your home directory"), "{above}");
        }
        assert_eq!(
            never_by_default(Path::new("/data/users"), Some(Path::new("/data/users/someone"))),
            Some("a directory that holds your home directory"),
            "an ancestor of a home anywhere"
        );
        for project in ["/home/someone/project", "/tmp/work", "/var/www/site", "/opt/app", "/srv/site"] {
            assert_eq!(never_by_default(Path::new(project), Some(home)), None, "{project}");
        }
    }

    #[test]
    fn the_project_dir_wins_over_the_current_dir_and_the_home_is_refused_with_the_fix() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().canonicalize().unwrap();
        let project = home.join("project");
        std::fs::create_dir(&project).unwrap();
        let env = env_of(vec![("HOME", home.clone()), (CLAUDE_PROJECT_DIR, project.clone())]);
        assert_eq!(fallback(&env, &home), Ok(project.clone()));
        let env = env_of(vec![("HOME", home.clone())]);
        let refused = fallback(&env, &home).unwrap_err();
        assert!(refused.contains("(your home directory)") && refused.contains("--root /path/to/project"), "{refused}");
        assert_eq!(fallback(&env, &project), Ok(project.clone()));
        // A project dir that is the home itself, or missing, or relative, names nothing.
        for named in [home.clone(), home.join("missing"), PathBuf::from("project")] {
            let env = env_of(vec![("HOME", home.clone()), (CLAUDE_PROJECT_DIR, named)]);
            assert!(fallback(&env, &home).is_err());
        }
    }

    #[test]
    fn hosts_name_dirs_as_paths_or_file_uris() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("with space");
        std::fs::create_dir(&dir).unwrap();
        let canonical = dir.canonicalize().unwrap();
        assert_eq!(host_dir(dir.to_str().unwrap(), None), Some(canonical.clone()));
        let uri = format!("file://{}", tmp.path().join("with%20space").display());
        assert_eq!(host_dir(&uri, None), Some(canonical));
        assert_eq!(host_dir("relative/dir", None), None);
        assert_eq!(host_dir("/", None), None, "the root is not a workspace even when a host names it");
    }
}
