//! The protected-path table made true for sandboxed commands. Before a command starts, what
//! the table protects and exists is bound read-only in its mount namespace (a repository's
//! `.git` is pinned, so it cannot be renamed away), and git's missing protected directories
//! (`hooks`, `info`, `modules`, `worktrees`) are created empty so they can be. What can be
//! neither bound nor created harmlessly (a `commondir` or `config.worktree` that does not
//! exist, an editor or shell file of a root, a new nested repository with code-running
//! config) is checked when the command ends: each one created or replaced is renamed aside
//! (`NAME.quarantined-…`, where nothing reads it) and reported.
//!
//! This is the protection of commands that write the roots directly: on macOS (Seatbelt has
//! no staging layer; its profile also denies the code-bearing names at any depth), and on
//! Linux with `stage_writes = false`. Where commands are staged (`stage/`, the Linux
//! default), every write is judged when it is folded instead, and nothing here runs.
//!
//! Scope: the roots' repositories and those up to two directories below them; deeper nested
//! repositories are protected from file operations only.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use crate::contract::Bind;
use crate::handle::{DirHandle, Kind, Replace};
use crate::protected::gitdir::CODE_ENTRIES as GIT_DIR_ENTRIES;
use crate::protected::{self, RULES};

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
    /// The identity of `path` itself, seen from its root without following a symlink.
    fn of(roots: &[PathBuf], path: &Path) -> Option<Self> {
        meta_beneath(roots, path).map(|meta| Self::from_meta(&meta))
    }

    fn from_meta(meta: &std::fs::Metadata) -> Self {
        let version = crate::handle::Version::of(meta);
        Self { dev: version.dev, ino: version.ino, mtime: version.mtime, size: version.size }
    }
}

/// The root of `roots` that holds `path` (the deepest).
fn root_of<'a>(roots: &'a [PathBuf], path: &Path) -> Option<&'a PathBuf> {
    roots.iter().filter(|root| path.starts_with(root)).max_by_key(|root| root.as_os_str().len())
}

/// The metadata of `path` itself (absolute, beneath one of `roots`), opened from its root's
/// handle with no symlink followed anywhere on the way: a planted symlink leads nowhere.
fn meta_beneath(roots: &[PathBuf], path: &Path) -> Option<std::fs::Metadata> {
    let root = root_of(roots, path)?;
    crate::beneath::Root::open(root).ok()?.symlink_metadata(path).ok()
}

/// The directory `path` (absolute, beneath one of `roots`) as a handle, opened without
/// following a symlink.
fn dir_beneath(roots: &[PathBuf], path: &Path) -> Option<DirHandle> {
    let root = root_of(roots, path)?;
    crate::beneath::Root::open(root).ok()?.open_dir_at(path).ok()
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
            let now = Identity::of(&self.roots, path);
            if now.is_some() && now != *before {
                findings.push(quarantine(&self.roots, path, why));
            }
        }
        for root in &self.roots {
            for dot_git in find_repos(root).into_iter().filter(|repo| !self.repos.contains(repo)) {
                findings.extend(check_new_repo(&self.roots, &dot_git));
            }
        }
        findings
    }

    /// Takes `written` (a path the server itself wrote, approved) as it is now: it is not a
    /// command's doing.
    pub fn accept(&mut self, written: &Path) {
        let roots = self.roots.clone();
        for (path, identity, _) in &mut self.watched {
            if path.starts_with(written) || written.starts_with(&*path) {
                *identity = Identity::of(&roots, path);
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
        match meta_beneath(&self.roots, &path) {
            // Bound, and watched too: a parent renamed away (the bind goes with it) and made
            // again holds a new file at the path.
            Some(meta) if !meta.file_type().is_symlink() => {
                self.binds.push(Bind::ReadOnly(path.clone()));
                self.watched.push((path, Some(Identity::from_meta(&meta)), why));
            }
            // A symlink cannot be bound (the bind would land on its target): watched instead.
            Some(meta) => self.watched.push((path, Some(Identity::from_meta(&meta)), why)),
            None => self.watched.push((path, None, why)),
        }
    }

    fn protect_repo(&mut self, dot_git: &Path) {
        let why = protected::Protection::Git.why();
        let Some(dir) = dir_beneath(&self.roots, dot_git) else {
            // A `.git` file pointing at a git dir elsewhere (worktree, submodule).
            self.bind_or_watch(dot_git.to_path_buf(), why);
            return;
        };
        self.binds.push(Bind::Pinned(dot_git.to_path_buf()));
        for entry in GIT_DIR_ENTRIES {
            let path = dot_git.join(entry);
            let name = std::ffi::OsStr::new(entry);
            if dir.stat(name).is_err() && CREATABLE.contains(entry) && dir.create_dir(name).is_err() {
                self.watched.push((path, None, why));
                continue;
            }
            self.bind_or_watch(path, why);
        }
    }

    fn protect_root_files(&mut self, root: &Path) {
        for rule in RULES {
            self.bind_or_watch(root.join(rule.path), rule.protection.why());
        }
    }
}

/// The `.git` entries of `root` and of directories up to `DEPTH` below it, found through
/// directory handles (a symlinked directory is never entered).
fn find_repos(root: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(top) = DirHandle::open(root).and_then(|r| r.open_beneath(Path::new(""))) else { return found };
    let mut level = vec![(top, root.to_path_buf())];
    let mut read = 0;
    for depth in 0..=DEPTH {
        let mut next = Vec::new();
        for (dir, path) in level {
            let listing = if depth < DEPTH && read < MAX_DIRS {
                read += 1;
                dir.entries().ok()
            } else {
                None
            };
            // A directory read shows its `.git` among its entries; the others are asked.
            let Some(names) = listing else {
                if dir.stat(std::ffi::OsStr::new(".git")).is_ok() {
                    found.push(path.join(".git"));
                }
                continue;
            };
            for name in names {
                if name == ".git" {
                    found.push(path.join(&name));
                } else if !SKIPPED.iter().any(|skip| name == *skip)
                    && let Ok(sub) = dir.open_dir(&name)
                {
                    next.push((sub, path.join(&name)));
                }
            }
        }
        level = next;
    }
    found
}

/// A repository that appeared during the command: its entries that make git run something
/// (a `commondir`, hooks that are not samples, config keys not on the allow-list) renamed
/// aside. Read through handles: nothing followed, nothing blocking, at most 1 MiB.
fn check_new_repo(roots: &[PathBuf], dot_git: &Path) -> Vec<Finding> {
    let why = protected::Protection::Git.why();
    let Some(dir) = dir_beneath(roots, dot_git) else { return Vec::new() };
    let mut findings = Vec::new();
    for name in ["commondir", "config.worktree"] {
        if dir.stat(std::ffi::OsStr::new(name)).is_ok() {
            findings.push(quarantine(roots, &dot_git.join(name), why));
        }
    }
    if let Ok(stat) = dir.stat(std::ffi::OsStr::new("config")) {
        let text = protected::view::read_at(&dir, Path::new("config"), protected::gitdir::READ_CAP);
        let offends = text.is_none_or(|text| protected::gitconfig::judge_change(None, &text).is_some());
        if offends || stat.kind != Kind::File {
            findings.push(quarantine(roots, &dot_git.join("config"), why));
        }
    }
    let hooks = std::ffi::OsStr::new("hooks");
    let live_hook = dir
        .open_dir(hooks)
        .and_then(|h| h.entries())
        .map(|names| names.iter().any(|n| !n.to_string_lossy().ends_with(".sample")))
        .unwrap_or(false);
    if live_hook || dir.stat(hooks).is_ok_and(|s| s.kind == Kind::Link) {
        findings.push(quarantine(roots, &dot_git.join("hooks"), why));
    }
    findings
}

/// Renames `path` aside, next to itself (same directory, opened from its root without
/// following a symlink, so never a file elsewhere), to `NAME.quarantined-SECONDS`.
fn quarantine(roots: &[PathBuf], path: &Path, why: &'static str) -> Finding {
    let seconds = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let name = path.file_name().unwrap_or_default().to_os_string();
    let mut aside = name.clone();
    aside.push(format!(".quarantined-{seconds}"));
    let to = path.with_file_name(&aside);
    let parent = path.parent().and_then(|parent| dir_beneath(roots, parent));
    let moved = parent.is_some_and(|dir| dir.rename(&name, &dir, &aside, Replace::Never).is_ok());
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
    fn a_new_repository_config_is_judged_by_the_allow_list() {
        let (_dir, root) = repo();
        let guard = Guard::prepare(std::slice::from_ref(&root));
        let evil = root.join("sub/.git");
        std::fs::create_dir_all(&evil).unwrap();
        std::fs::write(evil.join("config"), "[core] fsmonitor = x\n").unwrap();
        assert_eq!(guard.check().iter().map(|f| f.path.clone()).collect::<Vec<_>>(), [evil.join("config")]);
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_parent_is_never_followed() {
        let (dir, root) = repo();
        let elsewhere = dir.path().canonicalize().unwrap().join("elsewhere");
        std::fs::create_dir_all(elsewhere.join(".vscode")).unwrap();
        std::fs::write(elsewhere.join(".vscode/settings.json"), "{}").unwrap();
        let guard = Guard::prepare(std::slice::from_ref(&root));
        std::os::unix::fs::symlink(elsewhere.join(".vscode"), root.join(".vscode")).unwrap();
        let found = guard.check();
        assert!(found.iter().all(|f| f.moved_to.is_none()), "{found:?}");
        assert!(elsewhere.join(".vscode/settings.json").exists(), "a file outside was moved");
    }

    #[test]
    fn a_bound_file_made_again_under_a_renamed_parent_is_found() {
        let (_dir, root) = repo();
        std::fs::create_dir(root.join(".vscode")).unwrap();
        std::fs::write(root.join(".vscode/settings.json"), "{}").unwrap();
        let guard = Guard::prepare(std::slice::from_ref(&root));
        std::fs::rename(root.join(".vscode"), root.join(".vscode.old")).unwrap();
        std::fs::create_dir(root.join(".vscode")).unwrap();
        std::fs::write(root.join(".vscode/settings.json"), "{\"x\": 1}").unwrap();
        let found = guard.check();
        assert_eq!(found.iter().map(|f| f.path.clone()).collect::<Vec<_>>(), [root.join(".vscode/settings.json")]);
    }
}
