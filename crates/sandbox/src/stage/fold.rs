//! Folding a command's upper layer into the real tree. The upper layer holds exactly what the
//! command changed under a root, so every change is listed at a cost proportional to it, then
//! judged as a whole (`protected`: git dirs at any depth, hosts', editors' and shells' files,
//! the paths configs name, the server's own files), and what passes is applied through the
//! root's handle, never following a symlink: the new entry is put beside its name and swapped
//! in at once (`RENAME_EXCHANGE`), and what it replaced (or what was removed) moves to the
//! stage's `old/` area, where undo finds it. A refused change never reaches the real tree.
//!
//! The layer folded is one nothing writes any more: an ended command's upper layer, or the
//! snapshot a live fold took of a running one's (`snapshot.rs`). Entries are moved out of it
//! when it and the root share a file system (no copy), copied otherwise.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use super::tree;
use super::view::{Merged, Real, Upper, upper_in};
use crate::handle::{DirHandle, Kind};
use crate::protected::gitdir::{self, Change, Known, View};

/// Files up to this size are compared byte for byte when their size and time match.
const COMPARE_LIMIT: u64 = 64 << 20;

/// How many directories below its root a change may lie. Nothing deeper is applied (or even
/// looked at): a command that nests thousands of directories costs the fold nothing more.
pub const MAX_DEPTH: usize = 100;

/// What the judge knows besides the trees.
#[derive(Debug, Clone, Default)]
pub struct Rules {
    /// The home directory: its own rules apply when a root holds it.
    pub home: Option<PathBuf>,
    /// Never written or removed: the server's own config, state dir and audit log.
    pub own: Vec<PathBuf>,
    /// The places the environment names: `PATH` and module search paths, and the paths of
    /// variables that place configuration (`XDG_CONFIG_HOME`, `CARGO_HOME`, `BASH_ENV`, …).
    pub env_places: Vec<crate::protected::EnvPlace>,
    /// Where the home directory's configuration links to (a dotfiles repository).
    pub home_links: Vec<(PathBuf, PathBuf)>,
    /// Paths the user's git configs name.
    pub user_named: Vec<(PathBuf, String)>,
}

/// The rules of a fold, made (from the environment and the user's configs) only when it has
/// a change to judge: most folds of a running command find nothing new.
pub type LazyRules<'a> = std::cell::LazyCell<Rules, Box<dyn FnOnce() -> Rules + 'a>>;

impl Rules {
    /// The places protected where they lie, for links beneath `root` (see `links::Site`).
    pub fn places(&self, root: &Path) -> Vec<PathBuf> {
        let env = self.env_places.iter().filter(|place| place.guards(root)).map(|place| place.path.clone());
        let links = self.home_links.iter().map(|(target, _)| target.clone());
        let named = self.user_named.iter().map(|(path, _)| path.clone());
        env.chain(links).chain(named).chain(self.own.iter().cloned()).collect()
    }

    /// The rules of a fold, the server's `own` files never written: the home
    /// directory, `PATH` and the user's git configs taken from this process's environment.
    pub fn new(own: Vec<PathBuf>) -> Self {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let read = |path: &Path| crate::fs::read_trusted_config(path);
        let home_links = crate::protected::home_link_targets(home.as_deref());
        Self {
            user_named: gitdir::user_named(home.as_deref(), &read),
            home,
            own,
            env_places: crate::protected::env_places(),
            home_links,
        }
    }
}

/// Whether the command still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// It runs: what it changed is taken out of its upper layer first (`snapshot.rs`), and
    /// the layer is left as it is.
    Live,
    /// It ended: its upper layer is folded itself.
    Final,
}

/// What a change did to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum What {
    /// It did not exist.
    Created,
    /// It existed and was replaced.
    Modified,
    /// It was removed.
    Deleted,
}

/// A change applied to the real tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The path (absolute).
    pub path: PathBuf,
    /// What happened to it.
    pub what: What,
    /// What is there now (for a deletion, what was there).
    pub kind: Kind,
    /// Where what it replaced or removed was kept (in the stage's `old/` area).
    pub old: Option<PathBuf>,
}

/// A change that was not applied, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    /// The path (absolute).
    pub path: PathBuf,
    /// The path relative to its root.
    pub shown: PathBuf,
    /// Why.
    pub why: String,
    /// What the command wrote there, as a diff against the real file, when both are text.
    pub diff: Option<String>,
}

/// The outcome of one fold.
#[derive(Debug, Default)]
pub struct Folded {
    /// What reached the real tree.
    pub applied: Vec<Applied>,
    /// What did not, and why.
    pub refused: Vec<Refused>,
    /// What could not be applied (an I/O error), in words.
    pub failed: Vec<String>,
}

/// One layer's fold.
pub struct Fold<'a> {
    root: &'a Path,
    /// The upper layer's path (git reads a command's new objects there).
    upper_path: &'a Path,
    real: Real,
    upper: DirHandle,
    old: &'a DirHandle,
    old_path: &'a Path,
    next_old: &'a mut u64,
    refused: BTreeMap<PathBuf, String>,
    /// Directories at [`MAX_DEPTH`] with something in them: refused, not entered.
    too_deep: Vec<PathBuf>,
    out: &'a mut Folded,
}

/// Where the old entries go, and their next number.
pub struct OldArea<'a> {
    /// The area, held open.
    pub dir: &'a DirHandle,
    /// Its path.
    pub path: &'a Path,
    /// The next free number in it.
    pub next: &'a mut u64,
}

/// Folds the upper layer `upper` of the root `root` into it, judging by `rules`.
pub fn fold_layer(root: &Path, upper: &Path, old: OldArea<'_>, rules: &LazyRules<'_>, out: &mut Folded) {
    let upper_path = upper;
    let opened = DirHandle::open(root).and_then(|r| Ok((r, DirHandle::open(upper)?)));
    let (real, upper) = match opened {
        Ok(handles) => handles,
        Err(err) => {
            out.failed.push(format!("cannot open `{}` or its staged changes: {err}", root.display()));
            return;
        }
    };
    let mut fold = Fold {
        root,
        upper_path,
        real: Real::new(real),
        upper,
        old: old.dir,
        old_path: old.path,
        next_old: old.next,
        refused: BTreeMap::new(),
        too_deep: Vec::new(),
        out,
    };
    let mut changes = Vec::new();
    let top = fold.upper.open_beneath(Path::new(""));
    if let Ok(top) = top {
        let mut deep = Vec::new();
        fold.scan(&top, Some(fold.real.handle()), Path::new(""), &mut changes, &mut deep);
        fold.too_deep = deep;
    }
    // What lies too deep is refused whether or not anything else changed (the scan lists no
    // change beneath it, so a fold of only that would otherwise judge nothing).
    fold.refuse_too_deep();
    if !changes.is_empty() {
        fold.judge(std::cell::LazyCell::force(rules), &changes);
    }
    if let Ok(top) = fold.upper.open_beneath(Path::new("")) {
        let real_top = fold.real.handle().open_beneath(Path::new(""));
        match real_top {
            Ok(real_top) => fold.apply(&top, &real_top, Path::new(""), false),
            Err(err) => fold.out.failed.push(format!("cannot open `{}`: {err}", root.display())),
        }
    }
    let refused = std::mem::take(&mut fold.refused);
    for (path, why) in refused {
        let diff = fold.diff(&path);
        fold.out.refused.push(Refused { path: root.join(&path), shown: path, why, diff });
    }
}

impl Fold<'_> {
    /// Lists the changes beneath `rel` (its upper directory `upper`, its real directory `real`
    /// when there is one).
    fn scan(
        &self,
        upper: &DirHandle,
        real: Option<&DirHandle>,
        rel: &Path,
        out: &mut Vec<Change>,
        deep: &mut Vec<PathBuf>,
    ) {
        for (name, _) in upper.typed_entries().unwrap_or_default() {
            let path = rel.join(&name);
            let real_kind = real.and_then(|r| r.stat(&name).ok()).map(|s| s.kind);
            match upper_in(upper, &name) {
                Upper::Absent => {}
                Upper::Whiteout => {
                    if real_kind.is_some() && real.is_some_and(|r| super::taken::newer(upper, r, &name)) {
                        out.push(Change { path, after: None });
                    }
                }
                Upper::Dir { opaque } => {
                    if real_kind != Some(Kind::Dir) {
                        out.push(Change { path: path.clone(), after: Some(Kind::Dir) });
                    }
                    let Ok(inner) = upper.open_dir(&name) else { continue };
                    if path.components().count() >= MAX_DEPTH {
                        if !inner.entries().unwrap_or_default().is_empty() {
                            deep.push(path);
                        }
                        continue;
                    }
                    let real_inner =
                        if real_kind == Some(Kind::Dir) { real.and_then(|r| r.open_dir(&name).ok()) } else { None };
                    if opaque && let Some(real_inner) = &real_inner {
                        let kept: Vec<OsString> = inner.entries().unwrap_or_default();
                        for (child, _) in real_inner.typed_entries().unwrap_or_default() {
                            if !kept.contains(&child) {
                                out.push(Change { path: path.join(&child), after: None });
                            }
                        }
                    }
                    self.scan(&inner, real_inner.as_ref(), &path, out, deep);
                }
                Upper::Other(kind) => {
                    if differs(upper, &name, real, real_kind, kind) {
                        out.push(Change { path, after: Some(kind) });
                    }
                }
            }
        }
    }

    /// Refuses the directories the scan found beneath its depth limit, with what they hold.
    fn refuse_too_deep(&mut self) {
        for path in std::mem::take(&mut self.too_deep) {
            self.refused.insert(
                path,
                format!("it lies {MAX_DEPTH} directories below the root, the deepest a command's writes are applied"),
            );
        }
    }

    /// Judges the changes as a whole: git's files by what they are, the rest by name and path.
    fn judge(&mut self, rules: &Rules, changes: &[Change]) {
        let known =
            Known { root: self.root.to_path_buf(), home: rules.home.clone(), user_named: rules.user_named.clone() };
        let merged = Merged::new(&self.real, &self.upper);
        // The places protected where they lie, once for every link of this fold.
        let places = rules.places(self.root);
        for refusal in gitdir::judge(&known, &self.real, &merged, changes) {
            self.refused.insert(refusal.path, refusal.why);
        }
        let namer = gitdir::Namer::new(&known, &self.real);
        let protected =
            |rel: &Path| refusal_by_name(rules, self.root, &self.root.join(rel)).or_else(|| namer.names(rel));
        let by_name = |path: &Path| refusal_by_name(rules, self.root, path);
        // Where links lead, judged in the tree as the fold leaves it (for every link of the fold).
        let site = crate::protected::links::Site {
            root: self.root,
            view: &merged,
            home: rules.home.as_deref(),
            by_name: &by_name,
            places: &places,
        };
        let link = |rel: &Path, target: &Path| crate::protected::links::refusal(&site, rel, target, false);
        let offers = super::offers::Offers {
            root: self.root,
            before: &self.real,
            after: &merged,
            upper: self.upper_path,
            upper_dir: &self.upper,
            scratch: self.old_path.parent().unwrap_or(self.old_path),
            protected: &protected,
            link: &link,
        };
        for (path, why) in offers.judge(changes) {
            self.refused.entry(path).or_insert(why);
        }
        // An operation's state (a rebase's, a merge's…) is applied whole or not at all.
        let groups: Vec<PathBuf> = self.refused.keys().filter_map(|path| super::offers::state_group(path)).collect();
        for change in changes {
            if let Some(group) = super::offers::state_group(&change.path)
                && groups.contains(&group)
            {
                self.refused.entry(change.path.clone()).or_insert_with(|| {
                    format!(
                        "part of the state of an operation in progress (`{}`) that is refused in part",
                        group.display()
                    )
                });
            }
        }
        for change in changes {
            let absolute = self.root.join(&change.path);
            let named_dotenv = change.path.file_name().is_some_and(crate::protected::env::is_dotenv_name);
            if change.after == Some(Kind::Link)
                && let Some(place) =
                    rules.env_places.iter().find(|place| place.guards(self.root) && place.path.starts_with(&absolute))
            {
                self.refused.entry(change.path.clone()).or_insert_with(|| {
                    format!(
                        "a symlink at or above `{}`: programs would read whatever it points at ({})",
                        place.path.display(),
                        place.why()
                    )
                });
            }
            if named_dotenv && change.after == Some(Kind::Link) {
                self.refused.entry(change.path.clone()).or_insert_with(|| {
                    "a `.env` that is a symlink: the programs that load it read whatever it points at".to_string()
                });
            }
            let dotenv = change.after == Some(Kind::File) && named_dotenv;
            if dotenv {
                let text = merged.read(&change.path, gitdir::READ_CAP);
                let why = text.map_or_else(
                    || Some("a `.env` larger than 1 MiB".to_string()),
                    |text| crate::protected::env::judge_dotenv(&text),
                );
                if let Some(why) = why {
                    self.refused.entry(change.path.clone()).or_insert(format!("a `.env`: {why}"));
                }
            }
            if change.after == Some(Kind::Other) {
                self.refused.entry(change.path.clone()).or_insert_with(|| {
                    "a FIFO, socket or device never reaches the real tree (a program reading it would wait for ever; one bound to a process means nothing once it ended)".to_string()
                });
                continue;
            }
            let why = match change.after {
                Some(Kind::Link) => refusal_by_name(rules, self.root, &absolute)
                    .or_else(|| {
                        crate::protected::could_hold(&absolute).map(|(protection, reason)| {
                            format!(
                                "a symlink where code-bearing files are looked for, which would then be read from where it points ({reason}; {})",
                                protection.why()
                            )
                        })
                    })
                    .or_else(|| {
                        let target = merged.link(&change.path)?;
                        let before = self.real.kind(&change.path);
                        let replaced = matches!(before, Some(Kind::Dir | Kind::Link));
                        crate::protected::links::refusal(&site, &change.path, &target, replaced)
                    }),
                None => rules
                    .own
                    .iter()
                    .any(|own| own.starts_with(&absolute) || absolute.starts_with(own))
                    .then(|| "it holds the server's own configuration or state".to_string()),
                Some(_) => refusal_by_name(rules, self.root, &absolute),
            };
            if let Some(why) = why {
                self.refused.entry(change.path.clone()).or_insert(why);
            }
        }
    }

    /// Whether `path` or a directory above it was refused.
    fn is_refused(&self, path: &Path) -> bool {
        self.refused.keys().any(|refused| path.starts_with(refused))
    }

    /// Whether something at or beneath `path` was refused.
    fn refused_beneath(&self, path: &Path) -> bool {
        self.refused.keys().any(|refused| refused.starts_with(path))
    }

    /// Applies the changes beneath `rel`: `upper` and `real` are its directories; `opaque`
    /// says the upper one replaced the real one (whose other entries are then removed).
    fn apply(&mut self, upper: &DirHandle, real: &DirHandle, rel: &Path, opaque: bool) {
        // Nothing beneath the scan's depth limit was judged, so nothing there is applied, even
        // if a refusal of it were missing.
        if rel.components().count() >= MAX_DEPTH {
            return;
        }
        let names: Vec<OsString> = upper.entries().unwrap_or_default();
        if opaque {
            for (child, kind) in real.typed_entries().unwrap_or_default() {
                if !names.contains(&child) {
                    self.delete(real, &child, &rel.join(&child), kind);
                }
            }
        }
        for name in names {
            let path = rel.join(&name);
            let real_kind = real.stat(&name).ok().map(|s| s.kind);
            match upper_in(upper, &name) {
                Upper::Absent => {}
                Upper::Whiteout => {
                    if let Some(kind) = real_kind
                        && super::taken::newer(upper, real, &name)
                    {
                        self.delete(real, &name, &path, kind);
                    }
                }
                Upper::Dir { opaque } => {
                    if self.is_refused(&path) {
                        continue;
                    }
                    let Ok(inner) = upper.open_dir(&name) else { continue };
                    if real_kind == Some(Kind::Dir) {
                        match real.open_dir(&name) {
                            Ok(real_inner) => {
                                self.sync_mode(upper, real, &name);
                                self.apply(&inner, &real_inner, &path, opaque);
                            }
                            Err(err) => self.fail(&path, "open", &err),
                        }
                        continue;
                    }
                    if !self.refused_beneath(&path) {
                        drop(inner);
                        self.put(upper, &name, real, &path, real_kind, Kind::Dir);
                        continue;
                    }
                    // Built here entry by entry: something beneath is refused.
                    let temp = tree::temp_name(&name);
                    if let Err(err) = real.create_dir(&temp) {
                        self.fail(&path, "create", &err);
                        continue;
                    }
                    if let Some(mode) = tree::mtime_and_mode(upper, &name).ok().map(|(_, m)| m) {
                        let _ = tree::set_mode(real, &temp, mode & !tree::NEVER_FOLDED);
                    }
                    self.swap_in(real, &temp, &name, &path, real_kind, Kind::Dir);
                    match real.open_dir(&name) {
                        Ok(real_inner) => self.apply(&inner, &real_inner, &path, false),
                        Err(err) => self.fail(&path, "open", &err),
                    }
                }
                Upper::Other(kind) => {
                    if self.is_refused(&path) || !differs(upper, &name, Some(real), real_kind, kind) {
                        continue;
                    }
                    self.put(upper, &name, real, &path, real_kind, kind);
                }
            }
        }
    }

    /// Gives the real directory `name` the upper one's permission bits if they differ, never
    /// adding write for group or others ([`tree::NEVER_FOLDED`]).
    fn sync_mode(&self, upper: &DirHandle, real: &DirHandle, name: &OsStr) {
        if let (Ok((_, want)), Ok((_, have))) = (tree::mtime_and_mode(upper, name), tree::mtime_and_mode(real, name))
            && want != have
        {
            // Group or other write it had before stays; none is added.
            let _ = tree::set_mode(real, name, (want & !tree::NEVER_FOLDED) | (want & have & tree::NEVER_FOLDED));
        }
    }

    /// Puts the upper entry `name` at `name` in `real`: moved beside it (copied from another
    /// file system), then swapped in.
    fn put(
        &mut self,
        upper: &DirHandle,
        name: &OsStr,
        real: &DirHandle,
        path: &Path,
        before: Option<Kind>,
        kind: Kind,
    ) {
        let temp = tree::temp_name(name);
        let placed = tree::relocate(upper, name, real, &temp).map(|_| ());
        if let Err(err) = placed {
            let _ = tree::remove(real, &temp);
            return self.fail(path, "write", &err);
        }
        super::layer::strip(real, &temp);
        // A setuid or setgid file, or anything writable by group or others, never reaches the
        // real tree from a command (a copied-up one it changed would keep its bits, with the
        // command's content; `chmod 777 .git/hooks` would let another user plant a hook).
        tree::clear_setid(real, &temp);
        self.swap_in(real, &temp, name, path, before, kind);
    }

    /// Swaps the entry at `temp` in `real` in as `name`; what was there goes to the old area.
    fn swap_in(&mut self, real: &DirHandle, temp: &OsStr, name: &OsStr, path: &Path, before: Option<Kind>, kind: Kind) {
        let what = if before.is_some() { What::Modified } else { What::Created };
        let swapped = match before {
            Some(_) => tree::exchange(real, temp, name),
            None => real.rename(temp, real, name, crate::handle::Replace::Never),
        };
        if let Err(err) = swapped {
            let _ = tree::remove(real, temp);
            return self.fail(path, "replace", &err);
        }
        let old = if before.is_some() { self.retire(real, temp, path) } else { None };
        self.out.applied.push(Applied { path: self.root.join(path), what, kind, old });
    }

    /// Removes `name` (at `path`) from the real directory `real` into the old area, except
    /// what must not be removed beneath it (the server's own files), which stays.
    fn delete(&mut self, real: &DirHandle, name: &OsStr, path: &Path, kind: Kind) {
        if self.is_refused(path) {
            return;
        }
        if kind == Kind::Dir && self.refused_beneath(path) {
            if let Ok(inner) = real.open_dir(name) {
                for (child, child_kind) in inner.typed_entries().unwrap_or_default() {
                    self.delete(&inner, &child, &path.join(&child), child_kind);
                }
            }
            return;
        }
        let old = self.retire(real, name, path);
        if old.is_some() {
            self.out.applied.push(Applied { path: self.root.join(path), what: What::Deleted, kind, old });
        }
    }

    /// Moves `name` in `real` to the old area; returns where it went.
    fn retire(&mut self, real: &DirHandle, name: &OsStr, path: &Path) -> Option<PathBuf> {
        *self.next_old += 1;
        let slot = OsString::from(self.next_old.to_string());
        match tree::relocate(real, name, self.old, &slot) {
            Ok(_) => Some(self.old_path.join(slot)),
            Err(err) => {
                self.fail(path, "move aside", &err);
                None
            }
        }
    }

    fn fail(&mut self, path: &Path, what: &str, err: &std::io::Error) {
        self.out.failed.push(format!("cannot {what} `{}`: {err}", self.root.join(path).display()));
    }

    /// What the command wrote at `path` against the real file, as a short unified diff, when
    /// both are small text files (a new file counts as empty before).
    fn diff(&self, path: &Path) -> Option<String> {
        const CAP: u64 = 64 * 1024;
        let merged = Merged::new(&self.real, &self.upper);
        let after = merged.read(path, CAP)?;
        let before = if self.real.kind(path).is_some() { self.real.read(path, CAP)? } else { Vec::new() };
        let (after, before) = (String::from_utf8(after).ok()?, String::from_utf8(before).ok()?);
        let diff = similar::TextDiff::from_lines(&before, &after);
        let shown = path.display().to_string();
        let text = diff.unified_diff().context_radius(1).header(&shown, &shown).to_string();
        let mut lines: Vec<&str> = text.lines().take(24).collect();
        if text.lines().count() > lines.len() {
            lines.push("…");
        }
        Some(lines.join("\n"))
    }
}

/// What a fold lists and applies (both ask this, so nothing is applied unjudged): an entry
/// that differs from the real one ([`changed`]) and changed at or after it (a write older than
/// the real entry's last change, such as a copy a command made and left while somebody edited
/// the file, is not put over it).
fn differs(upper: &DirHandle, name: &OsStr, real: Option<&DirHandle>, real_kind: Option<Kind>, kind: Kind) -> bool {
    changed(upper, name, real, real_kind, kind) && real.is_none_or(|r| super::taken::newer(upper, r, name))
}

/// Whether the upper entry `name` (of `kind`) differs from what the real directory holds:
/// a file copied up and left as it was (same size, time and mode, and, when small enough, the
/// same bytes) is no change.
pub(super) fn changed(
    upper: &DirHandle,
    name: &OsStr,
    real: Option<&DirHandle>,
    real_kind: Option<Kind>,
    kind: Kind,
) -> bool {
    let Some(real) = real else { return true };
    if real_kind != Some(kind) {
        return true;
    }
    match kind {
        Kind::File => {
            let (Ok(a), Ok(b)) = (upper.stat(name), real.stat(name)) else { return true };
            let (Ok(ta), Ok(tb)) = (tree::mtime_and_mode(upper, name), tree::mtime_and_mode(real, name)) else {
                return true;
            };
            if a.len != b.len || ta.1 != tb.1 {
                return true;
            }
            if ta.0 == tb.0 && a.len > COMPARE_LIMIT {
                return false;
            }
            !tree::same_content(upper, name, real, name).unwrap_or(false)
        }
        Kind::Link => upper.read_link(name).ok() != real.read_link(name).ok(),
        Kind::Dir | Kind::Other => false,
    }
}

/// Why writing `path` (absolute, beneath `root`) is refused by name or place: a code-bearing
/// name (hosts, editors, hook managers, build tools, shells, the user's own configs), a place
/// the environment names (`PATH`, `XDG_CONFIG_HOME`, …), or the server's own files.
pub fn refusal_by_name(rules: &Rules, root: &Path, path: &Path) -> Option<String> {
    if rules.own.iter().any(|own| path.starts_with(own)) {
        return Some("it is the server's own configuration or state".into());
    }
    if let Some((protection, reason)) = crate::protected::classify_rule(path, rules.home.as_deref()) {
        return Some(format!("{reason} ({})", protection.why()));
    }
    if let Some((_, link)) = rules.home_links.iter().find(|(target, _)| path.starts_with(target)) {
        return Some(format!(
            "`{}` links to it: your shell, git or editor reads it as your own configuration",
            link.display()
        ));
    }
    if let Some(place) = rules.env_places.iter().find(|place| place.guards(root) && path.starts_with(&place.path)) {
        return Some(place.why());
    }
    None
}
