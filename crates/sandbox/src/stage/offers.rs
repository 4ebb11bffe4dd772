//! What a command leaves in a repository for the user's own git to write later. A commit, a
//! branch, the index or a stash holds files; `git checkout -- .`, `git restore .`,
//! `git reset --hard`, `git stash pop` and `git checkout BRANCH` write them into the worktree,
//! outside any sandbox, without a question. So a change to a repository's refs, `HEAD`, index
//! or stash is judged by what it newly offers: a protected path (code-bearing by name, place
//! or a config's naming) whose content differs from what the worktree holds now, a `.env`
//! that sets what runs, or a symlink a program would write through. Offered means new: what
//! the repository's `HEAD`, index or the same ref held before is no one's new offer.
//!
//! Trees are read by the system's `git` (`probe.rs`).

use std::path::{Path, PathBuf};

use super::gitindex;
use super::probe::{BLOB_CAP, Git};
use crate::handle::Kind;
use crate::protected::gitdir::{Change, View};

/// The most of an index read.
const INDEX_CAP: u64 = 256 << 20;

/// What the judge of offers is given.
pub(super) struct Offers<'a> {
    /// The root (absolute).
    pub root: &'a Path,
    /// The tree before the command.
    pub before: &'a dyn View,
    /// The tree as the command left it.
    pub after: &'a dyn View,
    /// The upper layer (absolute), where the command's new objects lie, and held open.
    pub upper: &'a Path,
    /// The upper layer, held open.
    pub upper_dir: &'a crate::handle::DirHandle,
    /// A private directory the judge may make its own git dir in.
    pub scratch: &'a Path,
    /// Why a path (relative to the root) is code-bearing, if it is.
    pub protected: &'a dyn Fn(&Path) -> Option<String>,
    /// Why a symlink at a path (relative to the root) with this target is refused, if it is.
    pub link: &'a dyn Fn(&Path, &Path) -> Option<String>,
}

/// One thing a repository offers after the command: a commit a ref names, or the index.
enum Offer {
    /// The commit `new` a ref (`what`) names, and the commit it named before.
    Commit { what: String, new: String, old: Option<String>, refuse: PathBuf },
    /// The index.
    Index { refuse: PathBuf },
}

impl Offers<'_> {
    /// The changes (paths in git dirs) to refuse, and why.
    pub(super) fn judge(&self, changes: &[Change]) -> Vec<(PathBuf, String)> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        for change in changes {
            if let Some(dir) = dot_git_of(&change.path)
                && !dirs.contains(&dir)
                && is_state(change.path.strip_prefix(&dir).unwrap_or(&change.path))
            {
                dirs.push(dir);
            }
        }
        let mut refused = Vec::new();
        for dir in dirs {
            let inner: Vec<PathBuf> = changes
                .iter()
                .filter_map(|c| c.path.strip_prefix(&dir).ok().map(Path::to_path_buf))
                .filter(|inner| is_state(inner))
                .collect();
            refused.extend(self.repository(&dir, &inner));
        }
        refused
    }

    /// The offers of the repository whose git dir is `dir` (its changed state files `inner`).
    fn repository(&self, dir: &Path, inner: &[PathBuf]) -> Vec<(PathBuf, String)> {
        let worktree = dir.parent().unwrap_or(Path::new("")).to_path_buf();
        if let Some(table) = inner.iter().find(|p| p.starts_with("reftable")) {
            return vec![(
                dir.join(table),
                "a reftable repository's refs cannot be read here to judge what they offer your git to write later"
                    .into(),
            )];
        }
        let old_head = resolve(self.before, dir, "HEAD");
        let hash_len = if old_head.as_ref().or(resolve(self.after, dir, "HEAD").as_ref()).is_some_and(|h| h.len() == 64)
        {
            32
        } else {
            20
        };
        let mut offers = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for path in inner {
            let text = path.to_string_lossy().into_owned();
            if path == Path::new("HEAD") || path.starts_with("refs") {
                names.push(text);
            } else if path == Path::new("packed-refs") {
                names.extend(packed_changes(self.before, self.after, dir));
            } else if path == Path::new("index") {
                offers.push(Offer::Index { refuse: dir.join("index") });
            } else if path == Path::new("logs/refs/stash") {
                for new in new_log_entries(self.before, self.after, &dir.join(path)) {
                    offers.push(Offer::Commit { what: "a stash".into(), new, old: None, refuse: dir.join(path) });
                }
            }
        }
        for name in names {
            let (old, new) = (resolve(self.before, dir, &name), resolve(self.after, dir, &name));
            if let Some(new) = new.filter(|new| Some(new) != old.as_ref()) {
                let refuse = if self.after.kind(&dir.join(&name)).is_some() || name == "HEAD" {
                    dir.join(&name)
                } else {
                    dir.join("packed-refs")
                };
                offers.push(Offer::Commit { what: format!("`{name}`"), new, old, refuse });
            }
        }
        if offers.is_empty() {
            return Vec::new();
        }
        let git = match Git::new(self, dir) {
            Ok(git) => git,
            Err(why) => {
                return offers.into_iter().map(|offer| (offer.refuse().to_path_buf(), why.clone())).collect();
            }
        };
        let mut refused = Vec::new();
        for offer in offers {
            let found = match &offer {
                Offer::Commit { what, new, old, .. } => {
                    let mut commits = vec![new.clone()];
                    if what.contains("stash") {
                        // A stash's index and untracked files are commits of their own.
                        commits.extend(["^2", "^3"].iter().filter_map(|parent| git.commit(&format!("{new}{parent}"))));
                    }
                    commits.iter().find_map(|commit| {
                        let offered = match git.changed(old_head.as_deref(), commit) {
                            Ok(offered) => offered,
                            Err(why) => return Some(why),
                        };
                        let offered = match old.as_deref().filter(|old| Some(*old) != old_head.as_deref()) {
                            Some(old) => match git.changed(Some(old), commit) {
                                Ok(also) => offered.into_iter().filter(|entry| also.contains(entry)).collect(),
                                Err(why) => return Some(why),
                            },
                            None => offered,
                        };
                        self.first_refused(&git, &worktree, &offered).map(|why| format!("{what} holds {why}"))
                    })
                }
                Offer::Index { .. } => {
                    self.index(&git, dir, &worktree, hash_len).map(|why| format!("the index holds {why}"))
                }
            };
            if let Some(why) = found {
                refused.push((
                    offer.refuse().to_path_buf(),
                    format!("{why}: your own git would write it there later (`git checkout -- .`, `git restore`, `git reset --hard`, `git stash pop`), outside the sandbox"),
                ));
            }
        }
        refused
    }

    /// What the index newly offers: entries that differ from the index before.
    fn index(&self, git: &Git, dir: &Path, worktree: &Path, hash_len: usize) -> Option<String> {
        let read = |view: &dyn View| view.read(&dir.join("index"), INDEX_CAP);
        let after = read(self.after)?;
        let Some(now) = gitindex::entries(&after, hash_len) else {
            return Some("entries this judge cannot read (a split index, or a malformed one)".into());
        };
        let was = read(self.before).and_then(|bytes| gitindex::entries(&bytes, hash_len)).unwrap_or_default();
        let offered: Vec<Entry> = now
            .into_iter()
            .filter(|(key, value)| was.get(key) != Some(value))
            .map(|((path, _), (mode, id))| Entry {
                mode,
                id,
                path: PathBuf::from(String::from_utf8_lossy(&path).into_owned()),
            })
            .collect();
        self.first_refused(git, worktree, &offered)
    }

    /// Why the first of `offered` (paths in the worktree `worktree`) may not be offered.
    fn first_refused(&self, git: &Git, worktree: &Path, offered: &[Entry]) -> Option<String> {
        for entry in offered {
            let rel = worktree.join(&entry.path);
            let shown = entry.path.display();
            if entry.mode & 0o170000 == 0o120000 {
                let target = git.blob(&entry.id)?;
                let target = PathBuf::from(String::from_utf8_lossy(&target).into_owned());
                if let Some(why) = (self.link)(&rel, &target) {
                    return Some(format!("`{shown}` as a symlink to `{}`: {why}", target.display()));
                }
                continue;
            }
            let dotenv = rel.file_name().is_some_and(crate::protected::env::is_dotenv_name);
            let protected = (self.protected)(&rel);
            if protected.is_none() && !dotenv {
                continue;
            }
            let Some(content) = git.blob(&entry.id) else {
                return Some(format!("`{shown}`, whose content cannot be read to judge it"));
            };
            if let Some(why) = protected {
                let now = self.after.read(&rel, BLOB_CAP as u64);
                if now.as_deref() != Some(&content[..]) || self.after.kind(&rel) != Some(Kind::File) {
                    return Some(format!("`{shown}` with content other than the file has ({why})"));
                }
            } else if let Some(why) = crate::protected::env::judge_dotenv(&content) {
                return Some(format!("`{shown}`, a `.env`: {why}"));
            }
        }
        None
    }
}

impl Offer {
    fn refuse(&self) -> &Path {
        match self {
            Self::Commit { refuse, .. } | Self::Index { refuse } => refuse,
        }
    }
}

/// A path a tree or the index offers, with its mode and object id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) mode: u32,
    pub(super) id: String,
    pub(super) path: PathBuf,
}

/// The `.git` directory a path lies in (a worktree's repository), if it does.
fn dot_git_of(path: &Path) -> Option<PathBuf> {
    let mut dir = PathBuf::new();
    for component in path.components() {
        dir.push(component);
        if component.as_os_str() == ".git" {
            return (dir != path).then_some(dir);
        }
    }
    None
}

/// Whether a path in a git dir holds what decides what git offers to write: `HEAD`, a ref,
/// `packed-refs`, the index, the stash's log, a reftable.
fn is_state(inner: &Path) -> bool {
    inner == Path::new("HEAD")
        || inner == Path::new("index")
        || inner == Path::new("packed-refs")
        || inner == Path::new("logs/refs/stash")
        || inner.starts_with("refs")
        || inner.starts_with("reftable")
}

/// The commit (hex) `name` names in the git dir `dir` of `view`: a loose ref (followed when
/// symbolic), else `packed-refs`.
pub(super) fn resolve(view: &dyn View, dir: &Path, name: &str) -> Option<String> {
    let mut name = name.to_string();
    for _ in 0..5 {
        if let Some(bytes) = view.read(&dir.join(&name), 4096) {
            let text = String::from_utf8_lossy(&bytes).trim().to_string();
            match text.strip_prefix("ref:") {
                Some(target) => name = target.trim().to_string(),
                None => return is_hex(&text).then_some(text),
            }
            continue;
        }
        return packed(view, dir).into_iter().find(|(_, n)| *n == name).map(|(id, _)| id);
    }
    None
}

/// The refs of `packed-refs`: (id, name).
fn packed(view: &dyn View, dir: &Path) -> Vec<(String, String)> {
    let bytes = view.read(&dir.join("packed-refs"), 64 << 20).unwrap_or_default();
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| line.split_once(' '))
        .filter(|(id, _)| is_hex(id))
        .map(|(id, name)| (id.to_string(), name.trim().to_string()))
        .collect()
}

/// The names whose value `packed-refs` changed (or added).
fn packed_changes(before: &dyn View, after: &dyn View, dir: &Path) -> Vec<String> {
    let was = packed(before, dir);
    packed(after, dir).into_iter().filter(|entry| !was.contains(entry)).map(|(_, name)| name).collect()
}

/// The commits a reflog gained (each line's new id).
fn new_log_entries(before: &dyn View, after: &dyn View, path: &Path) -> Vec<String> {
    let ids = |view: &dyn View| -> Vec<String> {
        let bytes = view.read(path, 64 << 20).unwrap_or_default();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(|line| line.split(' ').nth(1).filter(|id| is_hex(id)).map(str::to_string))
            .collect()
    };
    let was = ids(before);
    ids(after).into_iter().filter(|id| !was.contains(id)).collect()
}

pub(super) fn is_hex(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}
