//! Git dirs judged by what they are, not by name: any directory holding a `HEAD` (git's own
//! test for a git dir, `is_git_directory`, requires one, so every git dir is found, a `.git`
//! directory, a bare repository called anything, a submodule's or a worktree's). For each
//! change a command or a file operation makes under a root, [`judge`] says which changes
//! must not reach git:
//! - in a git dir: `config` and `config.worktree` adding or changing a key that is not on the
//!   allow-list (`gitconfig.rs`); a `commondir` (unless a worktree's, pointing at its own
//!   repository); anything in `hooks/` but samples; `info/` of an existing repository (a new
//!   one may have git's `info/exclude`); a rebase or cherry-pick todo holding `exec` lines;
//! - a directory named `.git` counts as a git dir whatever it holds;
//! - a directory that becomes a git dir (a `HEAD` appears) is judged whole: what offends and
//!   was written now is refused, and if something that offends was there before, the `HEAD`
//!   that would make git use it is refused;
//! - a `.git` symlink; a `.git` file that points outside the roots, at no git dir, or at one
//!   whose config or hooks would run something;
//! - anything at or beneath a path a repository's (or the user's) config names: the hooks
//!   directory, included files, programs given by path.
//!
//! Deleting never runs anything: deletions inside git dirs pass (undo can bring them back).

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use super::gitconfig::{self, Base};
use crate::handle::Kind;

/// The entries of a git dir that decide what git runs or where its configuration lives.
pub const CODE_ENTRIES: &[&str] = &["config", "config.worktree", "commondir", "hooks", "info", "modules", "worktrees"];

/// The most of a `packed-refs` or reftable file read to judge it (a repository with many
/// tags has megabytes of them); a larger one is refused.
const REFS_CAP: u64 = 64 << 20;

/// Why a replace ref is refused.
const REPLACE_REF: &str = "a replace ref: git would show one commit's content in place of another's everywhere (`git log -p`, `git show`), while `git push` sends the real one";

/// The most of a config, hook or todo file that is read to judge it; a larger one is refused.
pub const READ_CAP: u64 = 1 << 20;

/// A tree as it is (the real one) or as a command left it (the staged view), paths relative
/// to its root. Implementations never follow a symlink and never block (a FIFO is `Other`).
pub trait View {
    /// What is at `rel`, not following a symlink.
    fn kind(&self, rel: &Path) -> Option<Kind>;
    /// The bytes of the regular file at `rel` if it holds at most `cap`.
    fn read(&self, rel: &Path, cap: u64) -> Option<Vec<u8>>;
    /// The names in the directory at `rel`.
    fn entries(&self, rel: &Path) -> Vec<(std::ffi::OsString, Kind)>;
    /// The target of the symlink at `rel`, as written in it.
    fn link(&self, rel: &Path) -> Option<PathBuf>;
}

/// One change under a root: what is at `path` now (`None`: deleted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The path, relative to the root.
    pub path: PathBuf,
    /// What is there after (`None`: nothing).
    pub after: Option<Kind>,
}

/// A change that must not reach git, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The path, relative to the root.
    pub path: PathBuf,
    /// Why.
    pub why: String,
}

/// What the judge knows besides the two views.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// The root (absolute), to resolve `.git` files and configs' paths.
    pub root: PathBuf,
    /// The home directory (`~/` in configs).
    pub home: Option<PathBuf>,
    /// Paths the user's own git configs name (global, XDG, system): absolute.
    pub user_named: Vec<(PathBuf, String)>,
}

/// The changes of `changes` (each under `known.root`) that must not reach git, judged on the
/// tree before (`before`) and after (`after`).
pub fn judge(known: &Known, before: &dyn View, after: &dyn View, changes: &[Change]) -> Vec<Refusal> {
    let mut judge = Judge::new(known, before, after);
    let changed: std::collections::BTreeSet<&Path> = changes.iter().map(|c| c.path.as_path()).collect();
    let mut new_git_dirs = std::collections::BTreeSet::new();
    for change in changes {
        if let Some((dir, inner)) = judge.git_dir_of(&change.path) {
            let new = judge.after.kind(&dir.join("HEAD")).is_some() && judge.before.kind(&dir.join("HEAD")).is_none();
            if new {
                new_git_dirs.insert(dir.clone());
            }
            judge.in_git_dir(change, &dir, &inner, new);
            if change.after == Some(Kind::Link) {
                // Git writes files in its dir with plain opens (`COMMIT_EDITMSG`, filled from
                // an agent's `SQUASH_MSG`; `ORIG_HEAD`; a rebase's todo): through a symlink
                // there, the user's next commit would write wherever it points (a shell's rc
                // file, the repository's own config). Git makes none itself.
                judge.refuse(
                    &change.path,
                    "a symlink inside a git dir: git writes its files there and would write through it, wherever it points".into(),
                );
            }
        }
        let root_repository = (change.path == Path::new(".git") && change.after != Some(Kind::Dir))
            || ((change.path == Path::new(".git/HEAD") || change.path == Path::new(".git/config"))
                && change.after != Some(Kind::File)
                && judge.before.kind(&change.path).is_some());
        if root_repository && judge.before.kind(Path::new(".git/HEAD")).is_some() {
            // The root's own repository: its history, and the remote that names the workspace
            // whose todos and memories a server started here sees (a new one in its place
            // could name any).
            judge.refuse(
                &change.path,
                "the root's repository (`.git`, its `HEAD` and `config`, the remotes that name the workspace) is never removed or replaced by a command; do it yourself if you mean to".into(),
            );
        }
        if change.path.file_name().is_some_and(|n| n == ".git") && change.after.is_some() {
            judge.dot_git(change);
        }
        judge.named_by_configs(change);
    }
    for dir in new_git_dirs {
        judge.whole_new_git_dir(&dir, &changed);
    }
    judge.refused.into_iter().map(|(path, why)| Refusal { path, why }).collect()
}

/// Whether a path that the config of a repository around `rel` (in `view`), or the user's
/// own config, names lies at or above `rel`: hooks, includes, programs given by path.
pub fn named(known: &Known, view: &dyn View, rel: &Path) -> bool {
    let mut judge = Judge::new(known, view, view);
    judge.named_by_configs(&Change { path: rel.to_path_buf(), after: Some(Kind::File) });
    !judge.refused.is_empty()
}

/// Asks, path after path, whether the configs of the repositories around it (before) or the
/// user's own name it: [`named`] for many paths, each repository's config read once.
pub struct Namer<'a>(std::cell::RefCell<Judge<'a>>);

impl<'a> Namer<'a> {
    /// A namer over `view`.
    pub fn new(known: &'a Known, view: &'a dyn View) -> Self {
        Self(std::cell::RefCell::new(Judge::new(known, view, view)))
    }

    /// Why a config names `rel` (or a directory above it), if one does.
    pub fn names(&self, rel: &Path) -> Option<String> {
        let mut judge = self.0.borrow_mut();
        judge.refused.clear();
        judge.named_by_configs(&Change { path: rel.to_path_buf(), after: Some(Kind::File) });
        judge.refused.values().next().cloned()
    }
}

struct Judge<'a> {
    known: &'a Known,
    before: &'a dyn View,
    after: &'a dyn View,
    refused: BTreeMap<PathBuf, String>,
    /// Paths named by the configs of the repository a directory lies in (memoized by directory).
    named: BTreeMap<PathBuf, Vec<(PathBuf, String)>>,
    /// The nearest git dir at or above each directory asked about (memoized: every change
    /// asks about all of its ancestors).
    nearest: std::cell::RefCell<std::collections::HashMap<PathBuf, Option<PathBuf>>>,
}

impl<'a> Judge<'a> {
    fn new(known: &'a Known, before: &'a dyn View, after: &'a dyn View) -> Self {
        Self { known, before, after, refused: BTreeMap::new(), named: BTreeMap::new(), nearest: Default::default() }
    }

    /// The nearest git dir at or above the directory `dir`, remembered.
    fn nearest_git_dir(&self, dir: &Path) -> Option<PathBuf> {
        if let Some(found) = self.nearest.borrow().get(dir) {
            return found.clone();
        }
        // Up to the first ancestor already known (iterative: a deep tree must not recurse).
        let mut unknown: Vec<&Path> = Vec::new();
        let mut known: Option<PathBuf> = None;
        for candidate in dir.ancestors() {
            if let Some(found) = self.nearest.borrow().get(candidate) {
                known = found.clone();
                break;
            }
            unknown.push(candidate);
        }
        let mut nearest = self.nearest.borrow_mut();
        for candidate in unknown.into_iter().rev() {
            if self.holds_head(candidate) {
                known = Some(candidate.to_path_buf());
            }
            nearest.insert(candidate.to_path_buf(), known.clone());
        }
        known
    }

    fn refuse(&mut self, path: &Path, why: String) {
        self.refused.entry(path.to_path_buf()).or_insert(why);
    }

    /// Why a `core.worktree` value in the git dir `dir` must not reach git: checkouts write
    /// there, so it must name a directory inside the root and outside every git dir (`.`
    /// would make `git checkout` write into the git dir itself, `../..` outside the root).
    fn worktree_outside(&self, dir: &Path, value: &[u8]) -> Option<String> {
        let text = String::from_utf8_lossy(value).into_owned();
        let git_dir = self.known.root.join(dir);
        let target = crate::paths::normalize(&git_dir.join(&text));
        let shown = || format!("`core.worktree = {text}`");
        if !target.starts_with(&self.known.root) {
            return Some(format!("{} points outside the root: git would check files out there", shown()));
        }
        let relative = target.strip_prefix(&self.known.root).unwrap_or(&target);
        // Inside this git dir, inside anything named `.git`, or inside a directory holding a
        // `HEAD` (a git dir of another name).
        let inside_git_dir = target.starts_with(&git_dir)
            || relative.components().any(|c| c.as_os_str() == ".git")
            || self.nearest_git_dir(relative).is_some();
        if inside_git_dir {
            return Some(format!("{} points into a git dir: git would check files out over its hooks", shown()));
        }
        // The worktree must be this repository's own: the directory holding it as `.git`, or
        // one whose `.git` file points back at it (a submodule's); any other directory (the
        // root's, another repository's) would have the user's git check this repository's
        // files out over it, unjudged.
        let own = relative.join(".git") == dir || {
            let pointer = relative.join(".git");
            self.after.read(&pointer, 4096).and_then(|text| {
                let text = String::from_utf8(text).ok()?;
                let named = text.strip_prefix("gitdir:")?.trim().to_string();
                let absolute = crate::paths::normalize(&self.known.root.join(relative).join(named));
                Some(absolute == git_dir)
            }) == Some(true)
        };
        if !own {
            return Some(format!(
                "{} names a directory that is not this repository's worktree (its `.git` does not point back here): git would check this repository's files out over it",
                shown()
            ));
        }
        None
    }

    /// Whether `dir` is a git dir, before or after: it holds a `HEAD`, or it is named `.git`
    /// (git looks for one there; what it holds is judged before it holds a `HEAD` too).
    fn holds_head(&self, dir: &Path) -> bool {
        let head = dir.join("HEAD");
        dir.file_name().is_some_and(|n| n == ".git")
            || self.after.kind(&head).is_some()
            || self.before.kind(&head).is_some()
    }

    /// The nearest git dir at or above `path` (a directory holding `HEAD`, before or after),
    /// and `path` within it.
    fn git_dir_of(&self, path: &Path) -> Option<(PathBuf, PathBuf)> {
        let is_dir = |p: &Path| self.after.kind(p) == Some(Kind::Dir) || self.before.kind(p) == Some(Kind::Dir);
        let start = if is_dir(path) { Some(path) } else { path.parent() };
        let dir = start.and_then(|start| self.nearest_git_dir(start))?;
        let inner = path.strip_prefix(&dir).unwrap_or(path).to_path_buf();
        Some((dir, inner))
    }

    /// One change inside the git dir `dir` (`inner` is its path there).
    fn in_git_dir(&mut self, change: &Change, dir: &Path, inner: &Path, new: bool) {
        let Some(first) = inner.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned()) else {
            return;
        };
        let depth = inner.components().count();
        let Some(after) = change.after else { return };
        match (first.as_str(), depth) {
            ("config" | "config.worktree", 1) => {
                let now = self.after.read(&change.path, READ_CAP);
                let Some(now) = now else {
                    let what = if after == Kind::File { "larger than 1 MiB" } else { "not a regular file" };
                    return self.refuse(&change.path, format!("a git config that is {what}"));
                };
                let was = if new { None } else { self.before.read(&change.path, READ_CAP) };
                // What an existing repository is (bare or not, its object format, where its
                // worktree lies) is set when it is made: changed later, the user's git stops
                // working or checks files out somewhere else.
                let fixed = was.as_deref().map(|was| {
                    gitconfig::changed_keys(
                        was,
                        &now,
                        &[
                            "core.worktree",
                            "core.bare",
                            "core.repositoryformatversion",
                            "extensions.objectformat",
                            "extensions.refstorage",
                            "extensions.worktreeconfig",
                            "extensions.partialclone",
                        ],
                    )
                });
                if let Some(why) = gitconfig::judge_change(was.as_deref(), &now) {
                    self.refuse(&change.path, why);
                } else if dir == Path::new(".git")
                    && let Some(url) = gitconfig::new_remote_urls(was.as_deref(), &now)
                        .first()
                        .or(gitconfig::removed_remote_urls(was.as_deref(), &now).first())
                        .cloned()
                {
                    // The root's own repository: its remote names the workspace whose todos and
                    // memories the next start sees, so no command adds, changes or removes one,
                    // in a repository that was there or in a new one (`git init` then
                    // `git remote add`, `git clone URL .`): the user does.
                    self.refuse(
                        &change.path,
                        format!("`{url}` changes which repository this root is, and so whose todos and memories a server started here sees"),
                    );
                } else if let Some(why) = was.as_deref().and_then(|was| gitconfig::repointed_pulls(was, &now)) {
                    self.refuse(&change.path, why);
                } else if let Some(key) = fixed.and_then(|keys| keys.into_iter().next()) {
                    self.refuse(
                        &change.path,
                        format!("`{key}` of an existing repository changed: it is set when the repository is made (the user's git would stop working, or check files out somewhere else)"),
                    );
                } else if let Some(why) = gitconfig::new_worktrees(was.as_deref(), &now)
                    .iter()
                    .find_map(|value| self.worktree_outside(dir, value))
                {
                    self.refuse(&change.path, why);
                }
            }
            ("commondir", 1) if !self.worktree_commondir(dir, &change.path) => {
                self.refuse(&change.path, "a `commondir` makes git take its config from another git dir".into());
            }
            ("hooks", 1) if after != Kind::Dir => {
                self.refuse(&change.path, "the hooks directory replaced by something else".into());
            }
            ("hooks", _) if depth > 1 => {
                let sample = inner.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".sample"));
                if !(sample && after == Kind::File && depth == 2) {
                    self.refuse(&change.path, "a hook: git runs it".into());
                }
            }
            ("info", _) => {
                let exclude = depth == 2 && inner.ends_with("exclude") && after == Kind::File;
                if !(new && ((depth == 1 && after == Kind::Dir) || exclude)) {
                    self.refuse(&change.path, "the repository's `info/` (attributes name the drivers git runs)".into());
                }
            }
            // A submodule's or worktree's git dir is judged as one once it holds a `HEAD` (then
            // it is the nearest git dir); before, what is written into it waits for that.
            ("modules" | "worktrees", _) if depth > 1 => {
                self.refuse(&change.path, "a submodule's or worktree's git dir that is not a repository yet".into());
            }
            // Git puts a replace ref's object in place of the one it names in every command:
            // `git log -p` would show the user one commit's content while `git push` sends
            // another's. Nothing an agent does needs one (as with `info/grafts`).
            ("refs", _) if inner.starts_with("refs/replace") && after != Kind::Dir => {
                self.refuse(&change.path, REPLACE_REF.into());
            }
            ("packed-refs", 1) if self.new_replace_refs(&change.path) => {
                self.refuse(&change.path, REPLACE_REF.into());
            }
            ("reftable", 2) if self.reftable_names_replace(&change.path) => {
                self.refuse(&change.path, REPLACE_REF.into());
            }
            // `shallow` cuts history where it names: what came before those commits vanishes
            // from `git log` (a clone made now may have one).
            ("shallow", 1) if !new => {
                self.refuse(
                    &change.path,
                    "`shallow` of an existing repository: it hides the history before the commits it names".into(),
                );
            }
            ("rebase-merge" | "sequencer", 2) | ("rebase-apply", 2) => {
                let name = inner.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                if matches!(name.as_str(), "git-rebase-todo" | "todo" | "done") && self.has_exec_lines(&change.path) {
                    self.refuse(
                        &change.path,
                        "a todo list with `exec` lines, which `git rebase --continue` runs".into(),
                    );
                }
                if matches!(name.as_str(), "strategy" | "opts")
                    && let Some(strategy) = self.foreign_strategy(&change.path, name == "opts")
                {
                    self.refuse(
                        &change.path,
                        format!("a merge strategy `{strategy}` that is not one of git's own: `git rebase --continue` and `git cherry-pick --continue` would run `git-merge-{strategy}`, a program"),
                    );
                }
            }
            _ => {}
        }
    }

    /// Whether `packed-refs` at `path` names a replace ref it did not name before (or cannot
    /// be read).
    fn new_replace_refs(&self, path: &Path) -> bool {
        let Some(after) = self.after.read(path, REFS_CAP) else { return true };
        let before = self.before.read(path, REFS_CAP).unwrap_or_default();
        let replaces = |text: &[u8]| -> Vec<Vec<u8>> {
            text.split(|b| *b == b'\n')
                .filter(|line| line.windows(14).any(|w| w == b" refs/replace/"))
                .map(<[u8]>::to_vec)
                .collect()
        };
        let was = replaces(&before);
        replaces(&after).iter().any(|line| !was.contains(line))
    }

    /// Whether a reftable table at `path` may hold a replace ref: ref names are stored with
    /// the prefix they share with the one before (`refs/remotes/…` then `refs/replace/…`
    /// keeps `place/`), so the tail is looked for (or the table cannot be read).
    fn reftable_names_replace(&self, path: &Path) -> bool {
        let Some(after) = self.after.read(path, REFS_CAP) else { return true };
        after.windows(6).any(|w| w == b"place/")
    }

    /// The merge strategy a rebase's `strategy` file (or a sequencer's `opts`, `in_opts`)
    /// names, when it is not one of git's built-in ones (or the file cannot be read).
    fn foreign_strategy(&self, path: &Path, in_opts: bool) -> Option<String> {
        const BUILT_IN: &[&str] = &["ort", "recursive", "resolve", "octopus", "ours", "subtree"];
        let Some(bytes) = self.after.read(path, READ_CAP) else { return Some("(unreadable)".into()) };
        let text = String::from_utf8_lossy(&bytes);
        let named: Vec<String> = if in_opts {
            let Ok(entries) = gitconfig::parse(&bytes) else { return Some("(unparsable options)".into()) };
            entries
                .iter()
                .filter(|entry| entry.name == b"options.strategy")
                .map(|entry| String::from_utf8_lossy(entry.value.as_deref().unwrap_or_default()).into_owned())
                .collect()
        } else {
            vec![text.trim().to_string()]
        };
        named.into_iter().find(|strategy| !BUILT_IN.contains(&strategy.trim()))
    }

    /// Whether the todo file at `path` (after) has `exec`/`x` lines (or cannot be read).
    fn has_exec_lines(&self, path: &Path) -> bool {
        let Some(bytes) = self.after.read(path, READ_CAP) else { return true };
        bytes.split(|b| *b == b'\n').any(|line| {
            let word = line.trim_ascii_start().split(|b| b.is_ascii_whitespace()).next().unwrap_or_default();
            word == b"exec" || word == b"x"
        })
    }

    /// Whether the `commondir` at `path` in `dir` is a linked worktree's: `dir` is
    /// `REPO/worktrees/NAME` and it points at `REPO`.
    fn worktree_commondir(&self, dir: &Path, path: &Path) -> bool {
        let (Some(parent), Some(repo)) = (dir.parent(), dir.parent().and_then(Path::parent)) else { return false };
        if parent.file_name().is_none_or(|n| n != "worktrees") {
            return false;
        }
        let Some(text) = self.after.read(path, 4096) else { return false };
        let target = String::from_utf8_lossy(&text).trim_end_matches(['\n', '\r']).to_string();
        let resolved = crate::paths::normalize(&self.known.root.join(dir).join(&target));
        // Git takes the config and hooks of the directory `commondir` names whether it holds a
        // `HEAD` or not; only a repository's (judged as a git dir) passes.
        resolved == self.known.root.join(repo) && self.holds_head_after(repo)
    }

    /// A `.git` entry written: a symlink is refused; a file must point at a git dir in the
    /// roots whose config and hooks pass as a new one's would.
    fn dot_git(&mut self, change: &Change) {
        match change.after {
            Some(Kind::Dir) | None => {}
            Some(Kind::Link) => {
                self.refuse(&change.path, "a `.git` symlink makes git use the git dir it points at".into())
            }
            Some(Kind::Other) => self.refuse(&change.path, "a `.git` that is not a file or directory".into()),
            Some(Kind::File) => {
                let Some(target) = self.gitdir_target(&change.path) else {
                    return self
                        .refuse(&change.path, "a `.git` file that does not point at a git dir in the roots".into());
                };
                if !self.holds_head_after(&target) {
                    return self.refuse(
                        &change.path,
                        format!("a `.git` file pointing at `{}`, which is not a git dir", target.display()),
                    );
                }
                // The root's own `.git` as a file would make another git dir the root's
                // repository, and its remote the root's workspace.
                if change.path == Path::new(".git") {
                    return self.refuse(
                        &change.path,
                        "a `.git` file at the root would make another git dir the root's repository (and its remote the workspace whose todos and memories a server started here sees); do it yourself if you mean to".into(),
                    );
                }
                // The worktree it makes: a path its repository's config names relative to it
                // (`core.hooksPath = .githooks`) that holds something already would run.
                let worktree = change.path.parent().unwrap_or(Path::new("")).to_path_buf();
                let named = self.named_in(&worktree);
                if let Some((path, key)) =
                    named.iter().find(|(path, _)| path.starts_with(&worktree) && self.after.kind(path).is_some())
                {
                    return self.refuse(
                        &change.path,
                        format!(
                            "it makes `{}` a worktree whose repository's `{key}` names `{}`, which holds files already: git would run them",
                            worktree.display(),
                            path.display()
                        ),
                    );
                }
                // Whatever in the target offends (written now and refused, or there before), the
                // pointer that would make git use it is refused too.
                if let Some((path, why)) = self.offences(&target, true).into_iter().next() {
                    self.refuse(
                        &change.path,
                        format!(
                            "a `.git` file pointing at a git dir whose `{}` would run something: {why}",
                            path.display()
                        ),
                    );
                }
            }
        }
    }

    fn holds_head_after(&self, dir: &Path) -> bool {
        self.after.kind(&dir.join("HEAD")).is_some()
    }

    /// The git dir a `.git` file points at, relative to the root, if it lies in this root.
    fn gitdir_target(&self, dot_git: &Path) -> Option<PathBuf> {
        let text = self.after.read(dot_git, 4096)?;
        let text = String::from_utf8(text).ok()?;
        let target = text.strip_prefix("gitdir:")?.trim();
        let base = self.known.root.join(dot_git.parent().unwrap_or(Path::new("")));
        let absolute = crate::paths::normalize(&base.join(target));
        let relative = absolute.strip_prefix(&self.known.root).ok()?;
        Some(relative.to_path_buf())
    }

    /// A directory that became a git dir: everything in it that would run something. What was
    /// written now is refused by the per-change rules; what was there before makes its `HEAD`
    /// refused, so git never takes the directory for a repository.
    fn whole_new_git_dir(&mut self, dir: &Path, changed: &std::collections::BTreeSet<&Path>) {
        for (path, why) in self.offences(dir, true) {
            if !changed.contains(path.as_path()) {
                let head = dir.join("HEAD");
                self.refuse(
                    &head,
                    format!(
                        "it makes `{}` a git dir while its `{}` would run something: {why}",
                        dir.display(),
                        path.display()
                    ),
                );
                return;
            }
        }
    }

    /// What in the git dir `dir` (after) would run something, judged as a new repository's
    /// (`whole`: nothing before counts), following a `commondir` to the config it names.
    fn offences(&self, dir: &Path, whole: bool) -> Vec<(PathBuf, String)> {
        let mut found = Vec::new();
        for name in ["config", "config.worktree"] {
            let path = dir.join(name);
            match self.after.kind(&path) {
                None => {}
                Some(_) => match self.after.read(&path, READ_CAP) {
                    Some(bytes) => {
                        let before = if whole { None } else { self.before.read(&path, READ_CAP) };
                        if let Some(why) = gitconfig::judge_change(before.as_deref(), &bytes) {
                            found.push((path, why));
                        }
                    }
                    None => found.push((path, "a git config that cannot be read".into())),
                },
            }
        }
        if self.after.kind(&dir.join("commondir")).is_some() && !self.worktree_commondir(dir, &dir.join("commondir")) {
            found.push((dir.join("commondir"), "a `commondir`".into()));
        }
        let hooks = dir.join("hooks");
        match self.after.kind(&hooks) {
            None => {}
            Some(Kind::Dir) => {
                for (name, kind) in self.after.entries(&hooks) {
                    if !(kind == Kind::File && name.to_string_lossy().ends_with(".sample")) {
                        found.push((hooks.join(&name), "a hook".into()));
                    }
                }
            }
            Some(_) => found.push((hooks, "a hooks path that is not a directory".into())),
        }
        for (name, _) in self.after.entries(&dir.join("info")) {
            if name != "exclude" {
                found.push((dir.join("info").join(&name), "an `info/` file".into()));
            }
        }
        // Git writes its files here with plain opens (`COMMIT_EDITMSG`, `*_HEAD`, a rebase's
        // state): a symlink among them, made before the directory became a git dir, would
        // have the user's git write where it points. (`objects/` is git's own content;
        // submodules' and worktrees' git dirs are judged as git dirs themselves.)
        for (name, kind) in self.after.entries(dir) {
            let path = dir.join(&name);
            match kind {
                Kind::Link => found.push((path, "a symlink, which git would write through".into())),
                Kind::Dir if !["objects", "modules", "worktrees"].iter().any(|own| name == *own) => {
                    for (inner, kind) in self.after.entries(&path) {
                        if kind == Kind::Link {
                            found.push((path.join(inner), "a symlink, which git would write through".into()));
                        }
                    }
                }
                _ => {}
            }
        }
        found
    }

    /// A change at or beneath a path the configs of the repositories around it (or the
    /// user's own) name: hooks, includes, programs.
    fn named_by_configs(&mut self, change: &Change) {
        let absolute = self.known.root.join(&change.path);
        for (named, key) in self.known.user_named.iter() {
            if absolute.starts_with(named) {
                let why = format!("`{}` names it in your git config", key);
                self.refuse(&change.path, why);
                return;
            }
        }
        for dir in change.path.ancestors().skip(1) {
            let named = self.named_in(dir);
            if let Some((_, key)) = named.iter().find(|(path, _)| change.path.starts_with(path)) {
                let why = format!("the repository's `{key}` names it: git runs or reads it");
                self.refuse(&change.path, why);
                return;
            }
        }
    }

    /// The paths (relative to the root) that the config of the repository whose worktree top
    /// is `dir` names, if `dir` has a `.git` (before: what the user set up).
    fn named_in(&mut self, dir: &Path) -> Vec<(PathBuf, String)> {
        if let Some(found) = self.named.get(dir) {
            return found.clone();
        }
        let mut found = Vec::new();
        // The worktree's `.git` as it was, or as the command left it (a linked worktree it
        // made shares its repository's config, whose relative paths name files in it too).
        let dot_git = dir.join(".git");
        let view_of = |path: &Path| if self.before.kind(path).is_some() { self.before } else { self.after };
        let dot_git_view = view_of(&dot_git);
        let git_dir = match dot_git_view.kind(&dot_git) {
            Some(Kind::Dir) => Some(dot_git),
            Some(Kind::File) => dot_git_view.read(&dot_git, 4096).and_then(|text| {
                let text = String::from_utf8(text).ok()?;
                let target = text.strip_prefix("gitdir:")?.trim().to_string();
                let absolute = crate::paths::normalize(&self.known.root.join(dir).join(target));
                absolute.strip_prefix(&self.known.root).ok().map(Path::to_path_buf)
            }),
            _ => None,
        };
        if let Some(git_dir) = git_dir {
            // A linked worktree's git dir names the repository's own in `commondir`.
            let commondir = git_dir.join("commondir");
            let common = view_of(&commondir).read(&commondir, 4096).and_then(|text| {
                let text = String::from_utf8(text).ok()?;
                let absolute = crate::paths::normalize(&self.known.root.join(&git_dir).join(text.trim()));
                absolute.strip_prefix(&self.known.root).ok().map(Path::to_path_buf)
            });
            let configs = [git_dir.join("config"), git_dir.join("config.worktree")]
                .into_iter()
                .chain(common.iter().map(|common| common.join("config")));
            for config in configs {
                let Some(bytes) = view_of(&config).read(&config, READ_CAP) else { continue };
                let Ok(entries) = gitconfig::parse(&bytes) else { continue };
                let file_dir = config.parent().unwrap_or(&git_dir).to_path_buf();
                for named in gitconfig::named_paths(&entries) {
                    let base = match named.base {
                        Base::Worktree => dir.to_path_buf(),
                        Base::ConfigFile => file_dir.clone(),
                    };
                    if let Some(path) = self.relative_named(&base, &named.path) {
                        found.push((path, named.key.clone()));
                    }
                }
            }
        }
        self.named.insert(dir.to_path_buf(), found.clone());
        found
    }

    /// A path a config names, relative to the root if it lies in it (`~/` expanded,
    /// relative ones from `base`).
    fn relative_named(&self, base: &Path, named: &Path) -> Option<PathBuf> {
        let absolute =
            expand(named, self.known.home.as_deref()).unwrap_or_else(|| self.known.root.join(base).join(named));
        let absolute = crate::paths::normalize(&absolute);
        let relative = absolute.strip_prefix(&self.known.root).ok()?;
        // The root itself named (a hooks path of `.`) would make everything code: it names
        // nothing that narrow, so it is left to the other rules.
        (relative.components().next().is_some() && !relative.components().any(|c| c == Component::ParentDir))
            .then(|| relative.to_path_buf())
    }
}

/// `path` made absolute when it is absolute already or starts with `~/`.
fn expand(path: &Path, home: Option<&Path>) -> Option<PathBuf> {
    if path.is_absolute() {
        return Some(path.to_path_buf());
    }
    let rest = path.strip_prefix("~").ok()?;
    home.map(|home| home.join(rest))
}

/// The paths the user's own git configs name (the global `~/.gitconfig`, the XDG
/// `git/config` and the system `/etc/gitconfig`), absolute, with the key that names each,
/// read through `read` (a capped, non-blocking read of a trusted file).
pub fn user_named(home: Option<&Path>, read: &dyn Fn(&Path) -> Option<Vec<u8>>) -> Vec<(PathBuf, String)> {
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".config")))
        .map(|dir| dir.join("git/config"));
    let files: Vec<PathBuf> =
        home.map(|h| h.join(".gitconfig")).into_iter().chain(xdg).chain([PathBuf::from("/etc/gitconfig")]).collect();
    let mut found = Vec::new();
    for file in files {
        let Some(bytes) = read(&file) else { continue };
        let Ok(entries) = gitconfig::parse(&bytes) else { continue };
        for named in gitconfig::named_paths(&entries) {
            let absolute = expand(&named.path, home).or_else(|| match named.base {
                Base::ConfigFile => file.parent().map(|dir| dir.join(&named.path)),
                // A relative hooks path or program is relative to each repository: the
                // per-repository check covers it.
                Base::Worktree => None,
            });
            if let Some(absolute) = absolute {
                found.push((crate::paths::normalize(&absolute), named.key));
            }
        }
    }
    found
}
