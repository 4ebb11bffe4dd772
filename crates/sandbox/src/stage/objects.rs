//! What a command writes in a git dir's object store must be what its names say. Git reads
//! objects by id without hashing them again, so a loose object or a pack index that lies
//! would change what an existing commit, tree or blob holds (the user's `git reset --hard`
//! would check out the lie, with no ref changed for the judge of offers to see), and derived
//! files git trusts over the objects (a commit-graph's root trees, a multi-pack index, a
//! bitmap, a reverse index, alternates) would do the same. So every loose object is inflated
//! and hashed, every pack index is checked against its pack by the system's `git verify-pack`,
//! and derived files are never taken from a command (git works without them, or rebuilds
//! them). When an object fails, nothing of that repository's changes is applied (a `git gc`
//! half applied would lose objects).

use std::io::Read;
use std::path::{Path, PathBuf};

use sha1::Digest;

use super::probe::Git;
use crate::handle::Kind;
use crate::protected::gitdir::{Change, View};

/// The largest loose object inflated to check it.
const LOOSE_CAP: u64 = 256 << 20;

/// Why the objects a fold would put in the object store `objects` (relative to the root)
/// may not be applied: the paths to refuse and why. `changes` is every change of the fold;
/// new pack indexes are read from the upper layer `upper`.
pub(super) fn judge(
    objects: &Path,
    after: &dyn View,
    git: Option<&Git>,
    upper: &Path,
    changes: &[Change],
    sha256: bool,
) -> Vec<(PathBuf, String)> {
    let mut derived = Vec::new();
    let mut broken: Option<String> = None;
    for change in changes {
        let Ok(inner) = change.path.strip_prefix(objects) else { continue };
        if change.after != Some(Kind::File) {
            if matches!(change.after, Some(Kind::Link | Kind::Other)) {
                broken.get_or_insert(format!("`{}` is not a regular file", change.path.display()));
            }
            continue;
        }
        let name = inner.to_string_lossy();
        if let Some(why) = derived_file(&name) {
            derived.push((change.path.clone(), why));
            continue;
        }
        if let Some(id) = loose_id(inner) {
            if let Err(why) = check_loose(after, &change.path, &id, sha256) {
                broken.get_or_insert(why);
            }
        } else if name.starts_with("pack/") && name.ends_with(".idx") {
            match git.map(|git| git.verify_pack(&upper.join(&change.path))) {
                Some(Ok(())) => {}
                Some(Err(why)) => {
                    broken.get_or_insert(format!(
                        "the pack index `{}` does not match its pack: {why}",
                        change.path.display()
                    ));
                }
                None => {
                    broken.get_or_insert("a pack cannot be checked here (no `git`)".into());
                }
            }
        }
    }
    if let Some(why) = broken {
        let why = format!(
            "an object a command wrote is not what its name says ({why}); nothing of this repository's changes is applied"
        );
        let git_dir = objects.parent().unwrap_or(objects);
        return changes
            .iter()
            .filter(|change| change.path.starts_with(git_dir))
            .map(|change| (change.path.clone(), why.clone()))
            .collect();
    }
    derived
}

/// Why a file of the object store is never taken from a command: what git derives from the
/// objects and then trusts over them.
fn derived_file(name: &str) -> Option<String> {
    let derived = name == "info/commit-graph"
        || name.starts_with("info/commit-graphs/")
        || name == "info/alternates"
        || name == "info/http-alternates"
        || name.starts_with("pack/multi-pack-index")
        || (name.starts_with("pack/") && (name.ends_with(".bitmap") || name.ends_with(".rev")));
    derived.then(|| {
        format!("`{name}` is derived from the objects and git trusts it over them (a commit's tree, an object's place): git rebuilds it, a command's is not taken")
    })
}

/// The id a loose object's path names (`ab/cdef…`), if it is one.
pub(super) fn loose_id(inner: &Path) -> Option<String> {
    let mut parts = inner.components();
    let dir = parts.next()?.as_os_str().to_str()?;
    let file = parts.next()?.as_os_str().to_str()?;
    if parts.next().is_some() || dir.len() != 2 || !matches!(file.len(), 38 | 62) {
        return None;
    }
    let id = format!("{dir}{file}");
    id.bytes().all(|b| b.is_ascii_hexdigit()).then(|| id.to_ascii_lowercase())
}

/// Checks the loose object at `path` hashes to `id`.
fn check_loose(after: &dyn View, path: &Path, id: &str, sha256: bool) -> Result<(), String> {
    let shown = path.display();
    let bytes = after.read(path, LOOSE_CAP).ok_or_else(|| format!("`{shown}` cannot be read"))?;
    let mut inflated = Vec::new();
    flate2::read::ZlibDecoder::new(&bytes[..])
        .take(LOOSE_CAP + 1)
        .read_to_end(&mut inflated)
        .map_err(|err| format!("`{shown}` is not a zlib stream: {err}"))?;
    let hashed = if sha256 || id.len() == 64 {
        hex::encode(sha2::Sha256::digest(&inflated))
    } else {
        hex::encode(sha1::Sha1::digest(&inflated))
    };
    if hashed != id {
        return Err(format!("`{shown}` holds the object {hashed}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_files_are_named_and_objects_are_not() {
        for name in [
            "info/commit-graph",
            "info/commit-graphs/graph-1.graph",
            "info/alternates",
            "pack/multi-pack-index",
            "pack/pack-1.bitmap",
            "pack/pack-1.rev",
        ] {
            assert!(derived_file(name).is_some(), "{name}");
        }
        for name in ["pack/pack-1.pack", "pack/pack-1.idx", "ab/cdef", "info/packs", "pack/pack-1.keep"] {
            assert!(derived_file(name).is_none(), "{name}");
        }
        assert_eq!(loose_id(Path::new("ab/0123456789012345678901234567890123456789")), None);
        assert_eq!(
            loose_id(Path::new("ab/01234567890123456789012345678901234567")).as_deref(),
            Some("ab01234567890123456789012345678901234567")
        );
    }
}
