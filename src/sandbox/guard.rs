//! The protected-path table made true for sandboxed commands. Before a command starts, what
//! the table protects and exists is bound read-only in its mount namespace (a repository's
//! `.git` is pinned, so it cannot be renamed away), and git's missing protected directories
//! (`hooks`, `info`, `modules`, `worktrees`) are created empty so they can be. What can be
//! neither bound nor created harmlessly (a `commondir` or `config.worktree` that does not
//! exist, an editor or shell file of a root, a new nested repository with code-running
//! config) is checked when the command ends: each one created or replaced is renamed aside
//! (`NAME.quarantined-…`, where nothing reads it) and reported.
//!
//! Scope: the roots' repositories and those up to two directories below them; deeper nested
//! repositories are protected from file operations only.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use crate::sandbox::contract::Bind;
use crate::sandbox::protected::{self, EDITOR_FILES, GIT_DIR_ENTRIES, GIT_USER_CONFIG, SHELL_CONFIG_DIRS, SHELL_FILES};

/// Directories below a root searched for repositories (the root itself is depth 0).
const DEPTH: usize = 2;
/// At most this many directories are read per root when searching.
const MAX_DIRS: usize = 256;
/// Directories never searched for repositories (build output and dependencies).
const SKIPPED: &[&str] = &[".git", "node_modules", "target", ".venv", "venv", "__pycache__", ".tox", "dist", "build"];
/// Git dir entries that may be created empty when missing: git treats an empty one like none.
const CREATABLE: &[&str] = &["hooks", "info", "modules", "worktrees"];

/// What a file was, to notice that it was created, replaced or changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    mtime: (i64, i64),
    size: u64,
}

impl Identity {
    fn of(path: &Path) -> Option<Self> {
        std::fs::symlink_metadata(path).ok().map(|meta| Self::from_meta(&meta))
    }

    fn from_meta(meta: &std::fs::Metadata) -> Self {
        let version = crate::sandbox::handle::Version::of(meta);
        Self { dev: version.dev, ino: version.ino, mtime: version.mtime, size: version.size }
    }
}

/// A protected path a command created, replaced or changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The path.
    pub path: PathBuf,
    /// Where it was moved (`None`: it could not be, or was left as it was).
    pub moved_to: Option<PathBuf>,
    /// Why it is protected.
    pub why: &'static str,
}

impl Finding {
    /// One line for the model and the user.
    pub fn describe(&self) -> String {
        match &self.moved_to {
            Some(to) => format!(
                "the command wrote `{}`, a protected path ({}); it was renamed to `{}`. To write it, ask for it with `escalate: true` and a justification",
                self.path.display(),
                self.why,
                to.display()
            ),
            None => format!(
                "the command wrote `{}`, a protected path ({}), and it could not be moved aside; check it before running git or opening the folder",
                self.path.display(),
                self.why
            ),
        }
    }
}

/// The protection of one command: binds to apply before it runs, and what to check after.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Guard {
    binds: Vec<Bind>,
    watched: Vec<(PathBuf, Option<Identity>, &'static str)>,
    /// The roots searched, and the `.git` entries found before the command.
    roots: Vec<PathBuf>,
    repos: Vec<PathBuf>,
}

impl Guard {
    /// Prepares the protection of the writable `roots` (canonical).
    pub fn prepare(roots: &[PathBuf]) -> Self {
        let mut guard = Self { roots: roots.to_vec(), ..Self::default() };
        for root in roots {
            for dot_git in find_repos(root) {
                guard.protect_repo(&dot_git);
                guard.repos.push(dot_git);
            }
            guard.protect_root_files(root);
        }
        guard
    }

    /// The paths to bind over themselves, in order.
    pub fn binds(&self) -> &[Bind] {
        &self.binds
    }

    /// After the command (or while a background one runs): protected paths created, replaced
    /// or changed since `prepare`, renamed aside. Nothing found is the usual answer.
    pub fn check(&self) -> Vec<Finding> {
        let mut findings = Vec::new();
        for (path, before, why) in &self.watched {
            let now = Identity::of(path);
            if now.is_some() && now != *before {
                findings.push(quarantine(path, why));
            }
        }
        for root in &self.roots {
            for dot_git in find_repos(root).into_iter().filter(|repo| !self.repos.contains(repo)) {
                findings.extend(check_new_repo(&dot_git));
            }
        }
        findings
    }

    /// Takes `written` (a path the server itself wrote, approved) as it is now: it is not a
    /// command's doing.
    pub fn accept(&mut self, written: &Path) {
        for (path, identity, _) in &mut self.watched {
            if path.starts_with(written) || written.starts_with(&*path) {
                *identity = Identity::of(path);
            }
        }
        if written.components().any(|c| c.as_os_str() == ".git") {
            let known = self.roots.iter().flat_map(|root| find_repos(root));
            let new: Vec<PathBuf> =
                known.filter(|repo| !self.repos.contains(repo) && written.starts_with(repo)).collect();
            self.repos.extend(new);
        }
    }

    fn bind_or_watch(&mut self, path: PathBuf, why: &'static str) {
        match std::fs::symlink_metadata(&path) {
            // A symlink cannot be bound (the bind would land on its target): watched instead.
            Ok(meta) if !meta.file_type().is_symlink() => self.binds.push(Bind::ReadOnly(path)),
            Ok(meta) => self.watched.push((path, Some(Identity::from_meta(&meta)), why)),
            Err(_) => self.watched.push((path, None, why)),
        }
    }

    fn protect_repo(&mut self, dot_git: &Path) {
        let why = protected::Protection::Git.why();
        if !dot_git.is_dir() {
            // A `.git` file pointing at a git dir elsewhere (worktree, submodule).
            self.bind_or_watch(dot_git.to_path_buf(), why);
            return;
        }
        self.binds.push(Bind::Pinned(dot_git.to_path_buf()));
        for entry in GIT_DIR_ENTRIES {
            let path = dot_git.join(entry);
            if std::fs::symlink_metadata(&path).is_err()
                && CREATABLE.contains(entry)
                && std::fs::create_dir(&path).is_err()
            {
                self.watched.push((path, None, why));
                continue;
            }
            self.bind_or_watch(path, why);
        }
    }

    fn protect_root_files(&mut self, root: &Path) {
        let tables = [
            (GIT_USER_CONFIG, protected::Protection::Git),
            (EDITOR_FILES, protected::Protection::Editor),
            (SHELL_FILES, protected::Protection::Shell),
            (SHELL_CONFIG_DIRS, protected::Protection::Shell),
        ];
        for (table, protection) in tables {
            for entry in table {
                self.bind_or_watch(root.join(entry), protection.why());
            }
        }
    }
}

/// The `.git` entries of `root` and of directories up to `DEPTH` below it.
fn find_repos(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut level = vec![root.to_path_buf()];
    let mut read = 0;
    for depth in 0..=DEPTH {
        let mut next = Vec::new();
        for dir in level {
            let listing = if depth < DEPTH && read < MAX_DIRS {
                read += 1;
                std::fs::read_dir(&dir).ok()
            } else {
                None
            };
            // A directory read shows its `.git` among its entries; the others are asked.
            let Some(entries) = listing else {
                let dot_git = dir.join(".git");
                if std::fs::symlink_metadata(&dot_git).is_ok() {
                    found.push(dot_git);
                }
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                if name == ".git" {
                    found.push(entry.path());
                } else if entry.file_type().is_ok_and(|t| t.is_dir()) && !SKIPPED.iter().any(|skip| name == *skip) {
                    next.push(entry.path());
                }
            }
        }
        level = next;
    }
    found
}

/// A repository that appeared during the command: its entries that make git run something
/// (a `commondir`, hooks that are not samples, config keys naming commands) renamed aside.
fn check_new_repo(dot_git: &Path) -> Vec<Finding> {
    let why = protected::Protection::Git.why();
    if !dot_git.is_dir() {
        return Vec::new();
    }
    let mut findings = Vec::new();
    for name in ["commondir", "config.worktree"] {
        if std::fs::symlink_metadata(dot_git.join(name)).is_ok() {
            findings.push(quarantine(&dot_git.join(name), why));
        }
    }
    let config = dot_git.join("config");
    if std::fs::read_to_string(&config).is_ok_and(|text| runs_commands(&text).is_some())
        || std::fs::symlink_metadata(&config).is_ok_and(|m| m.file_type().is_symlink())
    {
        findings.push(quarantine(&config, why));
    }
    let hooks = dot_git.join("hooks");
    let live_hook = std::fs::read_dir(&hooks)
        .map(|entries| entries.flatten().any(|e| !e.file_name().to_string_lossy().ends_with(".sample")))
        .unwrap_or(false);
    if live_hook || std::fs::symlink_metadata(&hooks).is_ok_and(|m| m.file_type().is_symlink()) {
        findings.push(quarantine(&hooks, why));
    }
    findings
}

/// The first key of a git config text that makes git run a command or read config or hooks
/// from elsewhere, as `section.key`.
pub fn runs_commands(config: &str) -> Option<String> {
    const CORE: &[&str] = &[
        "fsmonitor",
        "hookspath",
        "sshcommand",
        "pager",
        "editor",
        "askpass",
        "gitproxy",
        "alternaterefscommand",
        "worktree",
    ];
    const SECTIONS: &[&str] = &["alias", "filter", "include", "includeif", "pager", "credential", "gpg"];
    const LAST_KEYS: &[&str] =
        &["textconv", "command", "cmd", "driver", "program", "helper", "uploadpack", "receivepack", "packobjectshook"];
    let mut section = String::new();
    for line in config.lines() {
        let line = line.trim();
        if let Some(header) = line.strip_prefix('[') {
            let header = header.split(']').next().unwrap_or_default();
            section = header.split(|c: char| c.is_whitespace() || c == '"').next().unwrap_or_default().to_lowercase();
            continue;
        }
        let key = line.split(['=', ' ', '\t']).next().unwrap_or_default().to_lowercase();
        if key.is_empty() || key.starts_with(['#', ';']) {
            continue;
        }
        let dangerous = (section == "core" && CORE.contains(&key.as_str()))
            || SECTIONS.contains(&section.as_str())
            || LAST_KEYS.contains(&key.as_str())
            || (section == "diff" && key == "external")
            || (section == "sequence" && key == "editor")
            || (section == "submodule" && key == "update")
            || (section == "extensions" && key == "worktreeconfig");
        if dangerous {
            return Some(format!("{section}.{key}"));
        }
    }
    None
}

/// Renames `path` aside, next to itself (same filesystem, so it always can be), to
/// `NAME.quarantined-SECONDS`.
fn quarantine(path: &Path, why: &'static str) -> Finding {
    let seconds = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".quarantined-{seconds}"));
    let to = path.with_file_name(name);
    let moved = std::fs::symlink_metadata(&to).is_err() && std::fs::rename(path, &to).is_ok();
    tracing::warn!(path = %path.display(), moved, "a command wrote a protected path");
    Finding { path: path.to_path_buf(), moved_to: moved.then_some(to), why }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
        (dir, root)
    }

    #[test]
    fn existing_entries_are_bound_and_missing_directories_created() {
        let (_dir, root) = repo();
        std::fs::create_dir_all(root.join("packages/a/.git")).unwrap();
        std::fs::write(root.join(".envrc"), "use nix").unwrap();
        let guard = Guard::prepare(std::slice::from_ref(&root));
        let git = root.join(".git");
        for bind in [
            Bind::Pinned(git.clone()),
            Bind::ReadOnly(git.join("config")),
            Bind::ReadOnly(git.join("hooks")),
            Bind::ReadOnly(git.join("info")),
            Bind::ReadOnly(git.join("modules")),
            Bind::ReadOnly(git.join("worktrees")),
            Bind::Pinned(root.join("packages/a/.git")),
            Bind::ReadOnly(root.join(".envrc")),
        ] {
            assert!(guard.binds().contains(&bind), "{bind:?} in {:?}", guard.binds());
        }
        assert!(git.join("worktrees").is_dir(), "created empty so it can be bound");
        assert!(!guard.binds().contains(&Bind::ReadOnly(git.join("commondir"))), "missing: watched");
        assert!(guard.check().is_empty());
    }

    #[test]
    fn created_protected_files_are_moved_aside() {
        let (_dir, root) = repo();
        let guard = Guard::prepare(std::slice::from_ref(&root));
        std::fs::write(root.join(".git/commondir"), "../docs/evil").unwrap();
        std::fs::create_dir(root.join(".vscode")).unwrap();
        std::fs::write(root.join(".vscode/settings.json"), "{}").unwrap();
        let found = guard.check();
        let paths: Vec<_> = found.iter().map(|f| f.path.clone()).collect();
        assert_eq!(paths, [root.join(".git/commondir"), root.join(".vscode/settings.json")]);
        assert!(!root.join(".git/commondir").exists());
        assert!(found.iter().all(|f| f.moved_to.as_ref().is_some_and(|to| to.exists())));
        assert!(found[0].describe().contains("escalate: true"));
    }

    #[test]
    fn new_repositories_lose_only_what_runs_commands() {
        let (_dir, root) = repo();
        let guard = Guard::prepare(std::slice::from_ref(&root));
        let plain = root.join("vendor/lib/.git");
        std::fs::create_dir_all(plain.join("hooks")).unwrap();
        std::fs::write(plain.join("hooks/pre-commit.sample"), "").unwrap();
        std::fs::write(plain.join("config"), "[remote \"origin\"]\n\turl = x\n[user]\n\temail = a@b\n").unwrap();
        let evil = root.join("sub/.git");
        std::fs::create_dir_all(evil.join("hooks")).unwrap();
        std::fs::write(evil.join("hooks/post-checkout"), "#!/bin/sh\n").unwrap();
        std::fs::write(evil.join("config"), "[core]\n\tfsmonitor = \"touch /tmp/x; false\"\n").unwrap();
        let found = guard.check();
        let paths: Vec<_> = found.iter().map(|f| f.path.clone()).collect();
        assert_eq!(paths, [evil.join("config"), evil.join("hooks")]);
        assert!(plain.join("config").exists());
    }

    #[test]
    fn config_keys_that_run_commands() {
        for text in [
            "[core]\n\tfsmonitor = x",
            "[Core]\n\tsshCommand = x",
            "[alias]\n\tst = !sh",
            "[filter \"lfs\"]\n\tclean = x",
            "[diff \"x\"]\n\ttextconv = cat",
            "[include]\n\tpath = ../x",
            "[includeIf \"gitdir:/\"]\n\tpath = x",
            "[credential]\n\thelper = store",
            "[submodule \"s\"]\n\tupdate = !sh",
            "[core]\n\tworktree = /elsewhere",
        ] {
            assert!(runs_commands(text).is_some(), "{text}");
        }
        for text in [
            "[core]\n\tbare = false\n\tfilemode = true",
            "[remote \"o\"]\n\turl = x",
            "[user]\n\tname = n",
            "# [alias]",
        ] {
            assert_eq!(runs_commands(text), None, "{text}");
        }
    }
}
