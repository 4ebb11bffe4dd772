//! A gitlink (a submodule's entry) that a repository offers is a checkout waiting to happen:
//! `git checkout --recurse-submodules`, or any checkout with `submodule.recurse` set, writes
//! the tree of the commit it names at its path, outside the sandbox. So it is judged as that
//! checkout: the commit is read from a git dir that holds it (the repository's own objects, a
//! module git dir under its `modules/`, the path's own `.git`) and each of its entries judged
//! at its place, submodules in it too (at most [`MAX_DEPTH`] deep). A commit that no git dir
//! here holds cannot be judged and is refused. A commit's id fixes what it holds, so the
//! commit judged now is what any later checkout of that gitlink writes, from whichever git
//! dir it comes then.

use std::path::{Path, PathBuf};

use super::offers::{Offers, is_hex};
use super::probe::Git;
use crate::handle::Kind;

/// How many submodules deep a gitlink is judged; deeper ones are refused.
const MAX_DEPTH: usize = 3;
/// How many directories under a `modules/` are looked at for module git dirs.
const MAX_SCANNED: usize = 256;

impl Offers<'_> {
    /// Why the gitlink at `rel` (relative to the root), naming the commit `id`, may not be
    /// offered: what that commit holds, judged at `rel`. `git` reads the repository's objects;
    /// `home` is its git dir (whose `modules/` holds its submodules'); `depth`: how many
    /// submodules deep `rel` lies.
    pub(super) fn gitlink(&self, git: &Git, home: &Path, rel: &Path, id: &str, depth: usize) -> Option<String> {
        let shown = rel.display();
        if !is_hex(id) {
            return Some(format!("`{shown}`, a submodule entry with a malformed commit id"));
        }
        if depth >= MAX_DEPTH {
            return Some(format!("`{shown}`, a submodule more than {MAX_DEPTH} deep, too deep to judge"));
        }
        let sha256 = id.len() == 64;
        let refused = |git: &Git, home: &Path| {
            let entries = match git.changed(None, id) {
                Ok(entries) => entries,
                Err(why) => return Some(why),
            };
            let worth: Vec<_> =
                entries.into_iter().filter(|entry| self.worth_judging(&rel.join(&entry.path), entry.mode)).collect();
            self.first_refused(git, home, rel, &worth, depth + 1)
                .map(|why| format!("`{shown}`, a submodule whose commit holds {why}"))
        };
        if git.commit(id).is_some() {
            return refused(git, home);
        }
        for dir in self.module_git_dirs(home, rel) {
            let Ok(module) = Git::new(self, &dir, sha256) else { continue };
            if module.commit(id).is_some() {
                return refused(&module, &dir);
            }
        }
        Some(format!(
            "`{shown}`, a submodule at commit `{id}` that no git dir here holds: what your git would check out there (`git checkout --recurse-submodules`, `submodule.recurse`) cannot be judged; run the git command that made it yourself"
        ))
    }

    /// The git dirs (relative to the root) a submodule at `rel` of the repository whose git
    /// dir is `home` could be checked out from: the path's own `.git` (a directory, or the
    /// one a `.git` file names inside the root), and every git dir under `home/modules/`.
    fn module_git_dirs(&self, home: &Path, rel: &Path) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        let own = rel.join(".git");
        match self.after.kind(&own) {
            Some(Kind::Dir) => dirs.push(own),
            Some(Kind::File) => {
                let named = self.after.read(&own, 4096).map(|b| String::from_utf8_lossy(&b).into_owned());
                if let Some(target) = named.as_deref().and_then(|text| text.trim().strip_prefix("gitdir:")) {
                    let absolute = crate::paths::normalize(&self.root.join(rel).join(target.trim()));
                    if let Ok(inside) = absolute.strip_prefix(self.root)
                        && self.after.kind(inside) == Some(Kind::Dir)
                    {
                        dirs.push(inside.to_path_buf());
                    }
                }
            }
            _ => {}
        }
        let mut queue = vec![home.join("modules")];
        let mut scanned = 0;
        while let Some(dir) = queue.pop() {
            scanned += 1;
            if scanned > MAX_SCANNED {
                break;
            }
            let names = self.after.entries(&dir);
            let is_git_dir = names.iter().any(|(name, kind)| name == "HEAD" && *kind == Kind::File)
                && names.iter().any(|(name, kind)| name == "objects" && *kind == Kind::Dir);
            if is_git_dir {
                dirs.push(dir.clone());
                // Its own submodules' lie in its `modules/`.
                queue.push(dir.join("modules"));
                continue;
            }
            // A module's name may hold slashes: its git dir lies deeper.
            queue.extend(names.into_iter().filter(|(_, kind)| *kind == Kind::Dir).map(|(name, _)| dir.join(name)));
        }
        dirs
    }
}
