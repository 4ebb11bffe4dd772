//! The protected paths: the one table that file operations (writing one asks), commands (bound
//! read-only in their mount namespace, Linux; denied by the Seatbelt profile, macOS) and the
//! docs all use. A path is protected when writing it can make code run outside any sandbox the
//! next time the user (or their editor, or their shell) does something ordinary, or when it is
//! the server's own configuration or state.
//!
//! Decided and left out, with why:
//! - `.gitmodules`: git runs no command it names (`update = !cmd` is honoured from
//!   `.git/config` only), and submodule URLs are fetched only when the user asks.
//! - `.gitattributes`: it names filter and diff drivers, whose commands live in git config.
//! - `.tool-versions`: it only names versions; `mise.toml` can run commands and is listed.
//! - `package.json`, `Makefile`, scripts: they run only when the user runs them, as any file
//!   the agent writes could.

use std::ffi::OsStr;
use std::path::{Component, Path};

/// Why a path is protected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Git reads it to decide what to run or where its configuration lives.
    Git,
    /// An editor or tool runs what it says when a folder is opened or entered.
    Editor,
    /// A shell runs it at start.
    Shell,
}

impl Protection {
    /// Why, for messages.
    pub fn why(self) -> &'static str {
        match self {
            Self::Git => "git reads it to decide which commands to run (hooks, fsmonitor, config), outside any sandbox",
            Self::Editor => "an editor or tool runs what it says when the folder is opened, outside any sandbox",
            Self::Shell => "a shell runs it at start, outside any sandbox",
        }
    }
}

/// Entries of a git directory (`.git`, or one under `modules/` or `worktrees/`) that decide
/// what git runs: hooks, config (fsmonitor, pager, filters, `core.hooksPath`), the worktree
/// config, the pointer to another common dir, `info/` (attributes, sparse patterns), and the
/// git dirs of submodules and linked worktrees (each with all of the above).
pub const GIT_DIR_ENTRIES: &[&str] =
    &["config", "config.worktree", "commondir", "hooks", "info", "modules", "worktrees"];

/// Git's own config files of a user, relative to a home directory that is (or is in) a root:
/// they can set everything `.git/config` can.
pub const GIT_USER_CONFIG: &[&str] = &[".gitconfig", ".config/git"];

/// Editor and tool files that run code when a folder is opened or entered, relative to the
/// folder: VS Code settings (interpreter and tool paths) and tasks (`runOn: folderOpen`),
/// JetBrains project settings (run configurations, startup tasks), direnv and mise.
pub const EDITOR_FILES: &[&str] = &[
    ".vscode/settings.json",
    ".vscode/tasks.json",
    ".vscode/launch.json",
    ".idea",
    ".envrc",
    ".mise.toml",
    "mise.toml",
    ".mise.local.toml",
    "mise.local.toml",
    ".config/mise",
];

/// Shell startup files of every common shell, by name (at any depth: a dotfiles repository or
/// a home directory as a root).
pub const SHELL_FILES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".logout",
    ".xonshrc",
    ".inputrc",
];

/// Shell startup files under a config directory, relative to the home directory.
pub const SHELL_CONFIG_DIRS: &[&str] =
    &[".config/fish", ".config/nushell", ".config/xonsh", ".config/powershell", ".config/zsh"];

/// Whether writing `path` (absolute) is protected, and why. Pure: by name only, so a path
/// that does not exist yet is protected as well as an existing one.
pub fn classify(path: &Path) -> Option<Protection> {
    let names: Vec<&OsStr> =
        path.components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect();
    for (i, name) in names.iter().enumerate() {
        if *name == ".git" {
            // The `.git` entry itself (a directory, or a file pointing to a git dir anywhere).
            let Some(next) = names.get(i + 1) else { return Some(Protection::Git) };
            if GIT_DIR_ENTRIES.iter().any(|entry| *next == *entry) {
                return Some(Protection::Git);
            }
        }
    }
    let text = path.to_string_lossy();
    if GIT_USER_CONFIG.iter().any(|file| ends_with_components(&text, file) || contains_dir(&text, file)) {
        return Some(Protection::Git);
    }
    if EDITOR_FILES.iter().any(|file| ends_with_components(&text, file) || contains_dir(&text, file)) {
        return Some(Protection::Editor);
    }
    if names.last().is_some_and(|name| SHELL_FILES.iter().any(|rc| *name == *rc)) {
        return Some(Protection::Shell);
    }
    if SHELL_CONFIG_DIRS.iter().any(|dir| contains_dir(&text, dir)) {
        return Some(Protection::Shell);
    }
    None
}

/// The hooks directory `core.hooksPath` names in the git config of the repository at `repo`
/// (its `.git/config`), made absolute; writing beneath it writes hooks.
pub fn hooks_path(repo: &Path) -> Option<std::path::PathBuf> {
    let config = crate::sandbox::fs::read_small_text(&repo.join(".git/config")).ok()?;
    let mut in_core = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_core = line.trim_start_matches('[').trim_end_matches(']').trim().eq_ignore_ascii_case("core");
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        if in_core && key.trim().eq_ignore_ascii_case("hookspath") {
            let value = value.trim().trim_matches('"');
            let expanded = match value.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME").map(|home| Path::new(&home).join(rest))?,
                None => Path::new(value).to_path_buf(),
            };
            return Some(crate::sandbox::paths::normalize(&repo.join(expanded)));
        }
    }
    None
}

/// Whether `path` ends with the components of `tail` (`/x/.vscode/tasks.json` ends with
/// `.vscode/tasks.json`).
fn ends_with_components(path: &str, tail: &str) -> bool {
    path.strip_suffix(tail).is_some_and(|head| head.is_empty() || head.ends_with('/'))
}

/// Whether `path` is `dir` (as trailing components) or lies beneath it.
fn contains_dir(path: &str, dir: &str) -> bool {
    ends_with_components(path, dir) || path.match_indices(&format!("/{dir}/")).next().is_some()
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn hooks_path_is_read_from_the_repository_config() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        std::fs::write(dir.path().join(".git/config"), "[core]\n\tbare = false\n[Core]\n\thooksPath = .husky\n")
            .unwrap();
        assert_eq!(hooks_path(dir.path()), Some(dir.path().join(".husky")));
        std::fs::write(dir.path().join(".git/config"), "[remote \"x\"]\n\thooksPath = nope\n").unwrap();
        assert_eq!(hooks_path(dir.path()), None);
    }

    #[test]
    fn git_internals_at_any_depth() {
        for path in [
            "/ws/.git/config",
            "/ws/.git/config.worktree",
            "/ws/.git/commondir",
            "/ws/.git/hooks/pre-commit",
            "/ws/.git/info/attributes",
            "/ws/.git/modules/sub/config",
            "/ws/.git/modules/sub/hooks/post-checkout",
            "/ws/.git/worktrees/wt/commondir",
            "/ws/vendor/lib/.git/config",
            "/ws/sub/.git",
            "/ws/.git",
            "/home/u/.gitconfig",
            "/home/u/.config/git/config",
            "/home/u/.config/git/attributes",
        ] {
            assert_eq!(classify(Path::new(path)), Some(Protection::Git), "{path}");
        }
        for path in [
            "/ws/.git/objects/ab/cdef",
            "/ws/.git/refs/heads/main",
            "/ws/.git/index",
            "/ws/.gitmodules",
            "/ws/.gitattributes",
            "/ws/docs/evil/config",
            "/ws/src/config.rs",
        ] {
            assert_eq!(classify(Path::new(path)), None, "{path}");
        }
    }

    #[test]
    fn editor_and_shell_files() {
        for (path, protection) in [
            ("/ws/.vscode/settings.json", Protection::Editor),
            ("/ws/.vscode/tasks.json", Protection::Editor),
            ("/ws/.idea/workspace.xml", Protection::Editor),
            ("/ws/.idea", Protection::Editor),
            ("/ws/.envrc", Protection::Editor),
            ("/ws/sub/mise.toml", Protection::Editor),
            ("/home/u/.bashrc", Protection::Shell),
            ("/ws/dotfiles/.zshenv", Protection::Shell),
            ("/home/u/.config/fish/config.fish", Protection::Shell),
            ("/home/u/.config/fish/conf.d/evil.fish", Protection::Shell),
        ] {
            assert_eq!(classify(Path::new(path)), Some(protection), "{path}");
        }
        for path in ["/ws/.vscode/extensions.json", "/ws/notes/bashrc.txt", "/ws/.tool-versions", "/ws/my.idea/x"] {
            assert_eq!(classify(Path::new(path)), None, "{path}");
        }
    }
}
