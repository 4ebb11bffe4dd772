//! What a command leaves in a repository for the user's own git to write later. A commit, a
//! branch, the index or a stash holds files; `git checkout -- .`, `git restore .`,
//! `git reset --hard`, `git stash pop` and `git checkout BRANCH` write them into the worktree,
//! outside any sandbox, without a question. So do the commits git's other state names:
//! `ORIG_HEAD` (`git reset --hard ORIG_HEAD`), a merge's autostash (`git merge --abort`), a
//! rebase's or cherry-pick's `orig-head` and `head` (`--abort`), `BISECT_START` (`git bisect
//! reset`), a reflog's lines (`git checkout -`, `@{1}`), `FETCH_HEAD`. So a change to any file
//! of a git dir but its objects (and what `gitdir.rs` judges: config, hooks, `info/`) is
//! judged by the commits it newly names, each as a whole checkout: a protected path (by name,
//! by place, or named by a config) whose content differs from what the worktree holds now, a
//! `.env` that sets what runs, or a symlink a program would write through. The index is read
//! entry by entry (`gitindex.rs`); a patch `git am` would apply is read for the paths it
//! changes. Offered means new: what `HEAD`, the index or the same ref held before is no
//! one's new offer. An operation's state (`rebase-merge/`, `rebase-apply/`, `sequencer/`,
//! `MERGE_*`, `BISECT_*`) is refused whole when a part of it is.
//!
//! A gitlink is judged as the checkout of its submodule's commit (`submodules.rs`). Trees
//! are read by the system's `git` (`probe.rs`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::gitindex;
use super::probe::{BLOB_CAP, Git};
use crate::handle::Kind;
use crate::protected::gitdir::{Change, View};

/// The most of an index read.
const INDEX_CAP: u64 = 256 << 20;
/// The most of any other state file read for the commits it names.
const STATE_CAP: u64 = 8 << 20;
/// The most commits one fold judges in one repository; past it the rest is refused.
const MAX_COMMITS: usize = 1000;

/// What the judge of offers is given.
pub(super) struct Offers<'a> {
    /// The root (absolute).
    pub root: &'a Path,
    /// The tree before the command.
    pub before: &'a dyn View,
    /// The tree as the command left it.
    pub after: &'a dyn View,
    /// The upper layer (absolute), where the command's new objects lie.
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

/// One thing a repository offers after the command: a commit a file names, or the index.
enum Offer {
    /// The commit `new` that `what` names, and the commit it named before.
    Commit { what: String, new: String, old: Option<String>, refuse: PathBuf },
    /// The index.
    Index { refuse: PathBuf },
    /// A patch `git am --continue` (or `git rebase --continue`) applies.
    Patch { refuse: PathBuf },
}

/// A repository as its worktree's git sees it: its own git dir (`.git`, or a linked
/// worktree's `.git/worktrees/NAME`), the common one (objects, shared refs), the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Unit {
    git_dir: PathBuf,
    common: PathBuf,
    worktree: PathBuf,
}

impl Offers<'_> {
    /// The changes (paths in git dirs) to refuse, and why.
    pub(super) fn judge(&self, changes: &[Change]) -> Vec<(PathBuf, String)> {
        let mut refused = self.object_stores(changes);
        let mut units: Vec<(Unit, Vec<PathBuf>)> = Vec::new();
        for change in changes {
            if change.after.is_none() {
                continue;
            }
            let Some(unit) = self.unit_of(&change.path) else { continue };
            let Ok(inner) = change.path.strip_prefix(&unit.git_dir) else { continue };
            if !is_judged(inner) {
                continue;
            }
            let inner = inner.to_path_buf();
            match units.iter_mut().find(|(known, _)| *known == unit) {
                Some((_, files)) => files.push(inner),
                None => units.push((unit, vec![inner])),
            }
        }
        for (unit, files) in units {
            refused.extend(self.repository(&unit, &files));
        }
        refused
    }

    /// What the object stores the command wrote in may not take (`objects.rs`).
    fn object_stores(&self, changes: &[Change]) -> Vec<(PathBuf, String)> {
        let mut stores: Vec<PathBuf> = Vec::new();
        for change in changes {
            let Some(store) = self.object_store_of(&change.path) else { continue };
            if !stores.contains(&store) {
                stores.push(store);
            }
        }
        let mut refused = Vec::new();
        for store in stores {
            let git_dir = store.parent().unwrap_or(&store).to_path_buf();
            let sha256 = self.object_format_is_sha256(&git_dir);
            let git = Git::new(self, &git_dir, sha256).ok();
            refused.extend(super::objects::judge(&store, self.after, git.as_ref(), self.upper, changes, sha256));
        }
        refused
    }

    /// The object store a path lies in, if it does: the last `objects` directory above it
    /// that is a git dir's (in a `.git`, or beside a `HEAD`: `vend.git/objects`), or whose
    /// entry is shaped like an object store's (`XX/<id>`, `pack/`, `info/`), whatever the
    /// directory holding it is called or is yet: git takes a store from any git dir, and a
    /// directory can become one later.
    fn object_store_of(&self, path: &Path) -> Option<PathBuf> {
        // Most changes lie in no `objects` directory: nothing to collect for them.
        if !path.components().any(|c| c.as_os_str() == "objects") {
            return None;
        }
        let names: Vec<&std::ffi::OsStr> = path.components().map(|c| c.as_os_str()).collect();
        (0..names.len().saturating_sub(1)).rev().find_map(|at| {
            if names[at] != "objects" {
                return None;
            }
            let store: PathBuf = names[..=at].iter().collect();
            let rest: PathBuf = names[at + 1..].iter().collect();
            let shaped =
                super::objects::loose_id(&rest).is_some() || names[at + 1] == "pack" || names[at + 1] == "info";
            let git_dir = store.parent().unwrap_or(Path::new(""));
            let head = git_dir.join("HEAD");
            let in_git_dir = dot_git_of(path).is_some_and(|dot| store.starts_with(dot))
                || self.after.kind(&head) == Some(Kind::File)
                || self.before.kind(&head) == Some(Kind::File);
            (shaped || in_git_dir).then_some(store)
        })
    }

    /// Whether the repository whose git dir is `git_dir` names its objects by SHA-256.
    fn object_format_is_sha256(&self, git_dir: &Path) -> bool {
        let config = git_dir.join("config");
        let bytes =
            self.after.read(&config, 1 << 20).or_else(|| self.before.read(&config, 1 << 20)).unwrap_or_default();
        crate::protected::gitconfig::parse(&bytes).unwrap_or_default().iter().any(|entry| {
            entry.name == b"extensions.objectformat"
                && entry.value.as_deref().is_some_and(|value| value.eq_ignore_ascii_case(b"sha256"))
        })
    }

    /// The repository a path in a git dir belongs to: a `.git` directory's, or a linked
    /// worktree's (`.git/worktrees/NAME/…`, whose worktree its `gitdir` file names).
    fn unit_of(&self, path: &Path) -> Option<Unit> {
        let common = dot_git_of(path)?;
        let inner = path.strip_prefix(&common).ok()?;
        let mut parts = inner.components();
        let first = parts.next()?.as_os_str();
        if first == "modules" {
            return None;
        }
        if first == "worktrees" {
            let name = parts.next()?.as_os_str();
            parts.next()?;
            let git_dir = common.join("worktrees").join(name);
            let pointer = git_dir.join("gitdir");
            let view = if self.after.kind(&pointer).is_some() { self.after } else { self.before };
            let text = String::from_utf8(view.read(&pointer, 4096)?).ok()?;
            let dot_git = crate::paths::normalize(&self.root.join(&git_dir).join(text.trim()));
            let worktree = dot_git.parent()?.strip_prefix(self.root).ok()?.to_path_buf();
            return Some(Unit { git_dir, common, worktree });
        }
        // Where its files are checked out: beside it, or where `core.worktree` says.
        let worktree =
            self.configured_worktree(&common).unwrap_or_else(|| common.parent().unwrap_or(Path::new("")).to_path_buf());
        Some(Unit { git_dir: common.clone(), common, worktree })
    }

    /// The worktree a git dir's config names (`core.worktree`, relative to the git dir),
    /// relative to the root, if it names one there.
    fn configured_worktree(&self, git_dir: &Path) -> Option<PathBuf> {
        let config = git_dir.join("config");
        let bytes = self.after.read(&config, 1 << 20).or_else(|| self.before.read(&config, 1 << 20))?;
        let entries = crate::protected::gitconfig::parse(&bytes).ok()?;
        let value = entries.iter().rev().find(|entry| entry.name == b"core.worktree")?.value.clone()?;
        let named = PathBuf::from(String::from_utf8_lossy(&value).into_owned());
        let absolute = crate::paths::normalize(&self.root.join(git_dir).join(named));
        absolute.strip_prefix(self.root).ok().map(Path::to_path_buf)
    }

    /// The offers of one repository (its changed files `files`, relative to its git dir).
    fn repository(&self, unit: &Unit, files: &[PathBuf]) -> Vec<(PathBuf, String)> {
        let dir = &unit.git_dir;
        if let Some(table) = files.iter().find(|p| p.starts_with("reftable")) {
            return vec![(
                dir.join(table),
                "a reftable repository's refs cannot be read here to judge what they offer your git to write later"
                    .into(),
            )];
        }
        // What the worktree was checked out from: a linked worktree made now starts from its
        // repository's.
        let main = Unit { git_dir: unit.common.clone(), common: unit.common.clone(), worktree: PathBuf::new() };
        let old_head = resolve(self.before, unit, "HEAD").or_else(|| resolve(self.before, &main, "HEAD"));
        let hash_len =
            if old_head.as_ref().or(resolve(self.after, unit, "HEAD").as_ref()).is_some_and(|h| h.len() == 64) {
                32
            } else {
                20
            };
        let mut offers = Vec::new();
        let mut names: Vec<String> = Vec::new();
        for path in files {
            let text = path.to_string_lossy().into_owned();
            if path == Path::new("HEAD") || path.starts_with("refs") {
                names.push(text);
            } else if path == Path::new("packed-refs") {
                names.extend(packed_changes(self.before, self.after, &unit.common));
            } else if path == Path::new("index") {
                offers.push(Offer::Index { refuse: dir.join("index") });
            } else if path.starts_with("rebase-apply") {
                offers.push(Offer::Patch { refuse: dir.join(path) });
                offers.extend(self.named_commits(dir, path));
            } else {
                offers.extend(self.named_commits(dir, path));
            }
        }
        for name in names {
            let (old, new) = (resolve(self.before, unit, &name), resolve(self.after, unit, &name));
            if let Some(new) = new.filter(|new| Some(new) != old.as_ref()) {
                let loose =
                    [dir, &unit.common].into_iter().map(|d| d.join(&name)).find(|p| self.after.kind(p).is_some());
                let refuse = loose.unwrap_or_else(|| unit.common.join("packed-refs"));
                offers.push(Offer::Commit { what: format!("`{name}`"), new, old, refuse });
            }
        }
        if offers.is_empty() {
            return Vec::new();
        }
        let git = match Git::new(self, &unit.common, hash_len == 32) {
            Ok(git) => git,
            Err(why) => {
                return offers.into_iter().map(|offer| (offer.refuse().to_path_buf(), why.clone())).collect();
            }
        };
        let mut judged: HashMap<String, Option<String>> = HashMap::new();
        let mut refused = Vec::new();
        for offer in offers {
            let found = match &offer {
                Offer::Commit { what, new, old, .. } => {
                    if !is_hex(new) {
                        Some(format!(
                            "{what}, larger than {} MiB, too large to read for the commits it names",
                            STATE_CAP >> 20
                        ))
                    } else if judged.len() >= MAX_COMMITS && !judged.contains_key(new) {
                        Some(format!("{what} names more than {MAX_COMMITS} commits, more than are judged"))
                    } else if old.is_none() && judged.contains_key(new) {
                        judged[new].clone().map(|why| format!("{what} names a commit that holds {why}"))
                    } else {
                        let why = self.commit(&git, unit, old_head.as_deref(), new, old.as_deref());
                        if old.is_none() {
                            judged.insert(new.clone(), why.clone());
                        }
                        why.map(|why| format!("{what} names a commit that holds {why}"))
                    }
                }
                Offer::Index { .. } => {
                    self.index(&git, unit, old_head.as_deref(), hash_len).map(|why| format!("the index holds {why}"))
                }
                Offer::Patch { refuse } => self.patch(unit, refuse).map(|why| format!("a patch that changes {why}")),
            };
            if let Some(why) = found {
                refused.push((
                    offer.refuse().to_path_buf(),
                    format!("{why}: your own git would write it there later (`git checkout -- .`, `git reset --hard`, `git stash pop`, an operation's `--abort` or `--continue`, `git checkout -`), outside the sandbox"),
                ));
            }
        }
        refused
    }

    /// Why the commit `new` (with its stash parents, when it is a stash) may not be offered:
    /// judged against the old `HEAD` and, when it replaced `old`, against that too.
    fn commit(&self, git: &Git, unit: &Unit, old_head: Option<&str>, new: &str, old: Option<&str>) -> Option<String> {
        let mut commits = vec![new.to_string()];
        // A stash's (or an autostash's) index and untracked files are commits of their own.
        commits.extend(["^2", "^3"].iter().filter_map(|parent| git.commit(&format!("{new}{parent}"))));
        commits.iter().find_map(|commit| {
            let offered = match git.changed(old_head, commit) {
                Ok(offered) => offered,
                Err(why) => return Some(why),
            };
            let offered = match old.filter(|old| Some(*old) != old_head) {
                Some(old) => match git.changed(Some(old), commit) {
                    Ok(also) => offered.into_iter().filter(|entry| also.contains(entry)).collect(),
                    Err(why) => return Some(why),
                },
                None => offered,
            };
            self.first_refused(git, &unit.common, &unit.worktree, &offered, 0)
        })
    }

    /// The commits a state file (`path` in the git dir `dir`) names that it did not name
    /// before: every object id in it (a reflog line's, a todo's `pick`, `ORIG_HEAD`'s).
    fn named_commits(&self, dir: &Path, path: &Path) -> Vec<Offer> {
        let file = dir.join(path);
        let refuse = file.clone();
        let what = format!("`{}`", path.display());
        let Some(after) = self.after.read(&file, STATE_CAP) else {
            if self.after.kind(&file) == Some(Kind::File) {
                return vec![Offer::Commit { what, new: String::new(), old: None, refuse }];
            }
            return Vec::new();
        };
        let was = self.before.read(&file, STATE_CAP).map(|b| object_ids(&b)).unwrap_or_default();
        let mut ids = object_ids(&after);
        ids.retain(|id| !was.contains(id));
        ids.dedup();
        ids.into_iter()
            .map(|new| Offer::Commit { what: what.clone(), new, old: None, refuse: refuse.clone() })
            .collect()
    }

    /// Why a patch in `rebase-apply/` may not be applied: it changes a protected path.
    fn patch(&self, unit: &Unit, file: &Path) -> Option<String> {
        let bytes = self.after.read(file, STATE_CAP)?;
        let text = String::from_utf8_lossy(&bytes);
        for line in text.lines() {
            let named = line
                .strip_prefix("+++ b/")
                .or_else(|| line.strip_prefix("--- a/"))
                .or_else(|| line.strip_prefix("diff --git a/").and_then(|rest| rest.split(" b/").next()));
            let Some(named) = named else { continue };
            let rel = unit.worktree.join(named.trim());
            if let Some(why) = (self.protected)(&rel) {
                return Some(format!("`{}` ({why})", named.trim()));
            }
            if rel.file_name().is_some_and(crate::protected::env::is_dotenv_name) {
                return Some(format!("`{}`, a `.env`", named.trim()));
            }
        }
        None
    }

    /// What the index newly offers: entries that differ from the index before.
    fn index(&self, git: &Git, unit: &Unit, old_head: Option<&str>, hash_len: usize) -> Option<String> {
        let read = |view: &dyn View| view.read(&unit.git_dir.join("index"), INDEX_CAP);
        let after = read(self.after)?;
        let Some(now) = gitindex::entries(&after, hash_len) else {
            return Some("entries this judge cannot read (a split index, cached trees that are not what its entries make: `git commit` would record them, or a malformed one)".into());
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
            .filter(|entry| self.worth_judging(&unit.worktree.join(&entry.path), entry.mode))
            .collect();
        if offered.is_empty() {
            return None;
        }
        // What the commit checked out holds is no new offer either.
        let checked_out = match old_head.map(|head| git.changed(None, head)) {
            Some(Ok(entries)) => entries,
            Some(Err(why)) => return Some(why),
            None => Vec::new(),
        };
        let offered: Vec<Entry> = offered.into_iter().filter(|entry| !checked_out.contains(entry)).collect();
        self.first_refused(git, &unit.common, &unit.worktree, &offered, 0)
    }

    /// Whether an offered entry (at `rel`, with `mode`) could be refused at all: a symlink, a
    /// gitlink, a `.env`, or a protected path (the rest is never read).
    pub(super) fn worth_judging(&self, rel: &Path, mode: u32) -> bool {
        matches!(mode & 0o170000, 0o120000 | 0o160000)
            || rel.file_name().is_some_and(crate::protected::env::is_dotenv_name)
            || (self.protected)(rel).is_some()
    }

    /// Why the first of `offered` (paths in the worktree `worktree`, of the repository whose
    /// git dir `home` holds its submodules' under `modules/`) may not be offered; `depth`:
    /// how many submodules deep it lies.
    pub(super) fn first_refused(
        &self,
        git: &Git,
        home: &Path,
        worktree: &Path,
        offered: &[Entry],
        depth: usize,
    ) -> Option<String> {
        for entry in offered {
            let rel = worktree.join(&entry.path);
            let shown = entry.path.display();
            if entry.mode & 0o170000 == 0o160000 {
                if let Some(why) = self.gitlink(git, home, &rel, &entry.id, depth) {
                    return Some(why);
                }
                continue;
            }
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
            Self::Commit { refuse, .. } | Self::Index { refuse } | Self::Patch { refuse } => refuse,
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

/// Whether a file in a git dir (relative to it) is judged here: everything but the objects
/// (judged by what names them), what `gitdir.rs` judges (config, hooks, `info/`, pointers,
/// submodules' and worktrees' own dirs, `shallow`), messages and locks.
fn is_judged(inner: &Path) -> bool {
    let Some(first) = inner.components().next().map(|c| c.as_os_str().to_string_lossy().into_owned()) else {
        return false;
    };
    let skipped = matches!(
        first.as_str(),
        "objects"
            | "config"
            | "config.worktree"
            | "hooks"
            | "info"
            | "modules"
            | "worktrees"
            | "commondir"
            | "gitdir"
            | "shallow"
            | "description"
            | "COMMIT_EDITMSG"
            | "MERGE_MSG"
            | "SQUASH_MSG"
            | "TAG_EDITMSG"
            | "gc.log"
            | "gc.pid"
    );
    !skipped && !first.ends_with(".lock")
}

/// The operation whose state `path` (relative to the root) is part of: a git dir's (or a
/// linked worktree's) `rebase-merge/`, `rebase-apply/`, `sequencer/`, or its `MERGE_*` and
/// `BISECT_*` files together. Such a state is applied whole or not at all.
pub(super) fn state_group(path: &Path) -> Option<PathBuf> {
    let mut dir = dot_git_of(path)?;
    let mut inner = path.strip_prefix(&dir).ok()?.components();
    let mut first = inner.next()?.as_os_str().to_string_lossy().into_owned();
    if first == "worktrees" {
        dir = dir.join("worktrees").join(inner.next()?.as_os_str());
        first = inner.next()?.as_os_str().to_string_lossy().into_owned();
    }
    match first.as_str() {
        "rebase-merge" | "rebase-apply" | "sequencer" => Some(dir.join(first)),
        name if name.starts_with("MERGE_") || name == "AUTO_MERGE" => Some(dir.join("MERGE_*")),
        name if name.starts_with("BISECT_") => Some(dir.join("BISECT_*")),
        _ => None,
    }
}

/// The object ids (hex, 40 or 64 digits, standing alone) in `bytes`, in order.
fn object_ids(bytes: &[u8]) -> Vec<String> {
    bytes
        .split(|b| !b.is_ascii_hexdigit())
        .filter(|word| matches!(word.len(), 40 | 64))
        .map(|word| String::from_utf8_lossy(word).to_ascii_lowercase())
        .filter(|id| id.bytes().any(|b| b != b'0'))
        .collect()
}

/// The commit (hex) `name` names for the repository `unit` in `view`: a loose ref in its own
/// git dir or the common one (followed when symbolic), else `packed-refs`.
fn resolve(view: &dyn View, unit: &Unit, name: &str) -> Option<String> {
    let mut name = name.to_string();
    'follow: for _ in 0..5 {
        for dir in [&unit.git_dir, &unit.common] {
            if let Some(bytes) = view.read(&dir.join(&name), 4096) {
                let text = String::from_utf8_lossy(&bytes).trim().to_string();
                match text.strip_prefix("ref:") {
                    Some(target) => {
                        name = target.trim().to_string();
                        continue 'follow;
                    }
                    None => return is_hex(&text).then_some(text),
                }
            }
        }
        return packed(view, &unit.common).into_iter().find(|(_, n)| *n == name).map(|(id, _)| id);
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

pub(super) fn is_hex(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}
