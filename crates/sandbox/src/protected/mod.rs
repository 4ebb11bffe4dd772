//! Code-bearing paths: what a program other than the agent will later run, or load as
//! configuration that makes it run something, when the user does something ordinary (runs
//! git, opens the folder, starts an agent host, builds, opens a shell). Nothing written under
//! the roots may create or change one without the user's approval: a file operation asks
//! (the policy), and what a sandboxed command wrote is judged before it reaches the real tree
//! (`stage/`; elsewhere `guard.rs`).
//!
//! The classes:
//! - git (`gitdir.rs`, `gitconfig.rs`): every git dir under the roots, whatever its name (a
//!   directory holding `HEAD`), its config by an allow-list of keys, hooks, `commondir`,
//!   `info/`, its submodules' and worktrees' git dirs (each judged as a git dir), `.git`
//!   files and symlinks, and the paths a repository's config names (`core.hooksPath`,
//!   includes, programs given by path);
//! - agent hosts, editors, hook managers, build tools, shells (`tables.rs`, by name at any
//!   depth);
//! - the user's own configs and `PATH` directories, when a root holds them;
//! - the server's own config, state and audit log (never written).
//!
//! Left out on purpose: `.gitmodules` (git runs no command it names: `update = !cmd` counts
//! only from `.git/config`), `.gitattributes` (it names drivers whose commands live in git
//! config), `package.json`, `Makefile`, build scripts and sources: the project's own code,
//! which runs when the user runs it, as any file the agent writes could.

pub mod env;
pub mod gitconfig;
pub mod gitdir;
pub mod links;
mod pattern;
pub mod places;
pub mod tables;
pub mod view;

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

pub use places::{EnvPlace, env_places};
pub use tables::{HOME_BIN, HOME_DATA, RULES, Shape};

/// Why a path is code-bearing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protection {
    /// Git reads it to decide what to run or where its configuration lives.
    Git,
    /// An agent host runs what it says (hooks, MCP servers, helpers).
    AgentHost,
    /// An editor or tool runs what it says when a folder is opened or entered.
    Editor,
    /// A git hook manager runs it when the user commits.
    HookManager,
    /// A build or package tool runs the programs it names.
    BuildTool,
    /// A shell runs it at start.
    Shell,
    /// The user's own configuration, or a directory on their `PATH`, in a home directory a
    /// root holds.
    UserConfig,
}

impl Protection {
    /// Why, for messages.
    pub fn why(self) -> &'static str {
        match self {
            Self::Git => "git reads it to decide which commands to run (hooks, fsmonitor, config), outside any sandbox",
            Self::AgentHost => "an agent host runs what it names (hooks, MCP servers, helpers), outside any sandbox",
            Self::Editor => "an editor or tool runs what it says when the folder is opened, outside any sandbox",
            Self::HookManager => "a git hook manager runs it when you commit, outside any sandbox",
            Self::BuildTool => "a build or package tool runs the programs it names, outside any sandbox",
            Self::Shell => "a shell runs it at start, outside any sandbox",
            Self::UserConfig => {
                "your own configuration or a directory on your PATH: programs run what it holds, outside any sandbox"
            }
        }
    }
}

/// The names of `path` (absolute or relative), without the root and `.`.
fn names(path: &Path) -> Vec<&OsStr> {
    path.components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect()
}

/// Whether the names of `rule`'s path occur in `names` where the rule says: for a file, as the
/// last names; for a tree, anywhere (the path is the directory or beneath it).
fn matches(rule_names: &[&str], names: &[&OsStr], shape: Shape) -> bool {
    let n = rule_names.len();
    if names.len() < n {
        return false;
    }
    let at = |start: usize| rule_names.iter().zip(&names[start..start + n]).all(|(r, name)| OsStr::new(r) == *name);
    match shape {
        Shape::File => at(names.len() - n),
        Shape::Tree => (0..=names.len() - n).any(at),
    }
}

/// Whether writing `path` (absolute) is code-bearing by name, and why: the `.git` entries of
/// a git dir named `.git`, and the rules of `tables.rs` that apply at any depth. Pure, so a
/// path that does not exist yet is protected as well as an existing one. (Git dirs of other
/// names and the paths configs name need the tree: `gitdir.rs`.)
pub fn classify(path: &Path) -> Option<Protection> {
    in_dot_git(path).or_else(|| classify_rule(path, None).map(|(protection, _)| protection))
}

/// Whether `path` is a `.git` entry, or one of the entries of a `.git` directory where git
/// reads config or hooks (for a file operation, which asks; a command's writes are judged by
/// what the git dir holds instead, `gitdir.rs`).
pub fn in_dot_git(path: &Path) -> Option<Protection> {
    let names = names(path);
    for (i, name) in names.iter().enumerate() {
        if *name == ".git" {
            let next = names.get(i + 1);
            if next.is_none_or(|next| gitdir::CODE_ENTRIES.iter().any(|entry| *next == *entry)) {
                return Some(Protection::Git);
            }
        }
    }
    None
}

/// The rules of `tables.rs` that match `path` at any depth, and the home directory's own
/// (when `home` is given and `path` lies beneath it), with the reason of the rule that
/// matched. Git's own files are not among them (`gitdir.rs` judges those).
pub fn classify_rule(path: &Path, home: Option<&Path>) -> Option<(Protection, &'static str)> {
    let names = names(path);
    if names.last().is_some_and(|name| name.to_string_lossy().ends_with(".code-workspace")) {
        return Some((
            Protection::Editor,
            "VS Code and its forks: a workspace file's settings, tasks (some run when it opens) and launch configurations",
        ));
    }
    for rule in RULES {
        let rule_names: Vec<&str> = rule.path.split('/').collect();
        if matches(&rule_names, &names, rule.shape) {
            return Some((rule.protection, rule.reason));
        }
    }
    let in_home = home.and_then(|home| path.strip_prefix(home).ok()).map(self::names)?;
    let starts = |list: &[&str]| {
        list.iter().any(|entry| {
            let entry: Vec<&str> = entry.split('/').collect();
            in_home.len() >= entry.len() && entry.iter().zip(&in_home).all(|(e, n)| OsStr::new(e) == *n)
        })
    };
    let dotted = in_home.first().is_some_and(|first| first.to_string_lossy().starts_with('.'));
    if (dotted && !starts(HOME_DATA)) || starts(HOME_BIN) {
        return Some((Protection::UserConfig, "a file of your home directory's configuration or PATH"));
    }
    None
}

/// Whether a code-bearing path of `tables.rs` would lie beneath `path` if `path` were a
/// directory (`.cargo` for `.cargo/config.toml`, `.config` for `.config/fish`): a symlink of
/// that name would make the code-bearing path resolve into what it points at, which no rule
/// names. The reason is the rule's.
pub fn could_hold(path: &Path) -> Option<(Protection, &'static str)> {
    let names = names(path);
    RULES.iter().find_map(|rule| {
        let rule_names: Vec<&str> = rule.path.split('/').collect();
        (1..rule_names.len())
            .any(|k| matches(&rule_names[..k], &names, Shape::File))
            .then_some((rule.protection, rule.reason))
    })
}

/// Why a file operation's write of `path` (absolute, beneath one of `roots`) is code-bearing
/// beyond its name: it lies in a git dir (one of any name: a directory holding `HEAD`)
/// where git reads config or hooks, it would make a directory a git dir (`HEAD`), a
/// repository's config (or the user's) names it, or it is a `.env` (which Gemini CLI, Qwen
/// Code and direnv's `dotenv` load into a process's environment).
pub fn judge_write(roots: &[PathBuf], path: &Path, home: Option<&Path>) -> Option<&'static str> {
    use gitdir::View;
    let root = roots.iter().filter(|root| path.starts_with(root)).max_by_key(|root| root.as_os_str().len())?;
    let rel = path.strip_prefix(root).ok()?;
    if rel.file_name().is_some_and(env::is_dotenv_name) {
        return Some(
            "a `.env` file (or a sibling: `.env.local`, `*.env`, `.flaskenv`): programs that load it (Gemini CLI, Qwen Code, direnv, dotenv) take the variables that decide what they run from it",
        );
    }
    let real = view::Real::new(crate::handle::DirHandle::open(root).ok()?);
    if rel.file_name().is_some_and(|name| name == "HEAD") && real.kind(rel).is_none() {
        return Some("a `HEAD` makes its directory a git dir, whose config and hooks git then runs");
    }
    for dir in rel.ancestors().skip(1) {
        if real.kind(&dir.join("HEAD")).is_some() {
            let inner = rel.strip_prefix(dir).ok()?;
            let first = inner.components().next()?.as_os_str();
            if gitdir::CODE_ENTRIES.iter().any(|entry| OsStr::new(entry) == first) {
                return Some("it lies in a git dir where git reads its config and hooks");
            }
            break;
        }
    }
    let known = gitdir::Known {
        root: root.clone(),
        home: home.map(Path::to_path_buf),
        user_named: gitdir::user_named(home, &|file| crate::fs::read_trusted_config(file)),
    };
    gitdir::named(&known, &real, rel)
        .then_some("a repository's git config (or yours) names it: git runs or reads it (hooks, includes, programs)")
}

/// Where the home directory's own configuration really lies when it is a symlink (a dotfiles
/// repository: `~/.bashrc -> ~/dotfiles/bashrc`, `~/.config/nvim -> ~/dotfiles/nvim`): each
/// link of `home`'s dotted entries and of `~/.config`'s, as (its target, the link). What is
/// written at or beneath such a target is that configuration.
pub fn home_link_targets(home: Option<&Path>) -> Vec<(PathBuf, PathBuf)> {
    let Some(home) = home.filter(|home| home.is_absolute()) else { return Vec::new() };
    let config = home.join(".config");
    let dotted = crate::fs::file_names(home)
        .into_iter()
        .filter(|name| name.to_string_lossy().starts_with('.'))
        .map(|name| home.join(name));
    let configs = crate::fs::file_names(&config).into_iter().map(|name| config.join(name));
    dotted
        .chain(configs)
        .filter(|link| crate::fs::read_link(link).is_ok())
        .filter_map(|link| crate::fs::canonicalize(&link).ok().map(|target| (target, link)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn hosts_editors_hook_managers_build_tools_and_shells() {
        for (path, protection) in [
            ("/ws/.claude/settings.json", Protection::AgentHost),
            ("/ws/pkg/.claude/settings.local.json", Protection::AgentHost),
            ("/ws/.claude/commands/x.md", Protection::AgentHost),
            ("/ws/.mcp.json", Protection::AgentHost),
            ("/ws/.codex/config.toml", Protection::AgentHost),
            ("/ws/.gemini/settings.json", Protection::AgentHost),
            ("/ws/.vscode/settings.json", Protection::Editor),
            ("/ws/.vscode/mcp.json", Protection::Editor),
            ("/ws/.idea/workspace.xml", Protection::Editor),
            ("/ws/.idea", Protection::Editor),
            ("/ws/.envrc", Protection::Editor),
            ("/ws/sub/mise.toml", Protection::Editor),
            ("/ws/.husky/pre-commit", Protection::HookManager),
            ("/ws/.pre-commit-config.yaml", Protection::HookManager),
            ("/ws/.cargo/config.toml", Protection::BuildTool),
            ("/home/u/.bashrc", Protection::Shell),
            ("/ws/dotfiles/.zshenv", Protection::Shell),
            ("/home/u/.config/fish/config.fish", Protection::Shell),
            ("/home/u/.config/fish/conf.d/evil.fish", Protection::Shell),
            ("/ws/.tool-versions", Protection::Editor),
            ("/ws/.clinerules/hooks/PreToolUse", Protection::AgentHost),
            ("/ws/.direnv/python-3.11/bin/git", Protection::Editor),
        ] {
            assert_eq!(classify(Path::new(path)), Some(protection), "{path}");
        }
        for path in [
            "/ws/.vscode/extensions.json",
            "/ws/notes/bashrc.txt",
            "/ws/my.idea/x",
            "/ws/.claude/CLAUDE.md",
            "/ws/src/.envrc.example",
        ] {
            assert_eq!(classify(Path::new(path)), None, "{path}");
        }
    }

    #[test]
    fn home_rules_apply_beneath_the_home_only() {
        let home = Path::new("/home/u");
        for path in [
            "/home/u/.ssh/config",
            "/home/u/.config/systemd/user/x.service",
            "/home/u/.local/bin/git",
            "/home/u/.gitconfig",
        ] {
            assert!(classify_rule(Path::new(path), Some(home)).is_some(), "{path}");
        }
        assert!(classify_rule(Path::new("/ws/.ssh/config"), Some(home)).is_none());
        // Caches hold code that runs later (corepack's package managers, pre-commit's hooks).
        for cached in
            ["/home/u/.cache/node/corepack/v1/pnpm/9.0.0/bin/pnpm.cjs", "/home/u/.cargo/registry/src/x/build.rs"]
        {
            assert!(classify_rule(Path::new(cached), Some(home)).is_some(), "{cached}");
        }
        assert!(classify_rule(Path::new("/home/u/.local/share/Trash/files/x"), Some(home)).is_none());
        assert!(classify_rule(Path::new("/home/u/go/pkg/mod/x/y.go"), Some(home)).is_some());
        assert!(classify_rule(Path::new("/home/u/Library/LaunchAgents/x.plist"), Some(home)).is_some());
        assert!(classify_rule(Path::new("/home/u/projects/app/main.rs"), Some(home)).is_none());
        assert!(classify_rule(Path::new("/home/u/.local/share/x"), Some(home)).is_some(), "a dot-directory");
        assert!(classify_rule(Path::new("/home/u/bin/git"), Some(home)).is_some(), "on PATH");
        assert!(classify_rule(Path::new("/home/u/project/notes.txt"), Some(home)).is_none());
    }
}
