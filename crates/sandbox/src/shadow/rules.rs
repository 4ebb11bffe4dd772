//! The git-ignore rules a walk of the shadow meets: each directory's `.gitignore` (and, where
//! a repository starts, its `.git/info/exclude`), chained from the innermost out, read once
//! per walk through the directory's own handle.

use std::path::Path;
use std::rc::Rc;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::rel::Rel;
use crate::handle::DirHandle;
use crate::protected::view::read_at;

/// The rules of one directory and those of the directories above it.
pub(super) struct Rules {
    dir: Rel,
    matcher: Gitignore,
    outer: Option<Rc<Rules>>,
}

/// The rules within `dir` (at `rel` beneath `root`, open as `handle`): `outer`, and its own
/// in front when it has any.
pub(super) fn enter(outer: Option<Rc<Rules>>, root: &Path, rel: &Rel, handle: &DirHandle) -> Option<Rc<Rules>> {
    let mut builder = GitignoreBuilder::new(root.join(rel.as_path()));
    let mut any = false;
    for file in [".gitignore", ".git/info/exclude"] {
        if let Some(bytes) = read_at(handle, Path::new(file), 1 << 20) {
            for line in String::from_utf8_lossy(&bytes).lines() {
                any |= builder.add_line(None, line).is_ok();
            }
        }
    }
    match any.then(|| builder.build().ok()).flatten() {
        Some(matcher) => Some(Rc::new(Rules { dir: rel.clone(), matcher, outer })),
        None => outer,
    }
}

/// Whether `rel` is ignored by `rules`: the innermost rule that names it decides.
pub(super) fn ignored(rules: Option<&Rules>, rel: &Rel, is_dir: bool) -> bool {
    let mut at = rules;
    while let Some(rules) = at {
        match rules.matcher.matched(rel.below(&rules.dir), is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => at = rules.outer.as_deref(),
        }
    }
    false
}
