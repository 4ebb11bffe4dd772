//! Git's index file read for what it offers: each path's mode and object id (versions 2, 3
//! and 4; `git checkout -- .` and `git restore .` write these into the worktree). A split
//! index, whose entries live in another file, cached trees that are not what the entries make
//! (`cachetree.rs`), or anything malformed give `None`: the caller then refuses the index as
//! one it cannot read.

use std::collections::BTreeMap;

/// Each entry's path (bytes, as git stores it) with its mode and object id (hex), at stage 0
/// and every other stage (a conflict's sides are offered too).
pub(super) type Entries = BTreeMap<(Vec<u8>, u16), (u32, String)>;

/// The entries of the index `bytes`, object ids `hash_len` bytes long (20 for SHA-1, 32 for
/// SHA-256).
pub(super) fn entries(bytes: &[u8], hash_len: usize) -> Option<Entries> {
    if bytes.get(..4)? != b"DIRC" {
        return None;
    }
    let version = u32::from_be_bytes(bytes.get(4..8)?.try_into().ok()?);
    let count = u32::from_be_bytes(bytes.get(8..12)?.try_into().ok()?) as usize;
    if !(2..=4).contains(&version) {
        return None;
    }
    let mut out = Entries::new();
    let mut at = 12;
    let mut previous: Vec<u8> = Vec::new();
    for _ in 0..count {
        let start = at;
        let mode = u32::from_be_bytes(bytes.get(at + 24..at + 28)?.try_into().ok()?);
        at += 40;
        let id = hex::encode(bytes.get(at..at + hash_len)?);
        at += hash_len;
        let flags = u16::from_be_bytes(bytes.get(at..at + 2)?.try_into().ok()?);
        at += 2;
        let stage = (flags >> 12) & 0b11;
        if flags & 0x4000 != 0 {
            if version < 3 {
                return None;
            }
            at += 2;
        }
        let path = if version == 4 {
            let (strip, used) = varint(bytes.get(at..)?)?;
            at += used;
            let end = at + bytes.get(at..)?.iter().position(|b| *b == 0)?;
            let keep = previous.len().checked_sub(strip)?;
            let mut path = previous[..keep].to_vec();
            path.extend_from_slice(&bytes[at..end]);
            at = end + 1;
            path
        } else {
            let end = at + bytes.get(at..)?.iter().position(|b| *b == 0)?;
            let path = bytes[at..end].to_vec();
            // Padded with NULs to a multiple of eight bytes from the entry's start.
            at = start + (end - start + 8) / 8 * 8;
            path
        };
        previous.clone_from(&path);
        out.insert((path, stage), (mode, id));
    }
    // A split index keeps its entries in a shared file this one only amends.
    if extension(bytes.get(at..)?, hash_len, b"link").is_some() {
        return None;
    }
    // The cached trees `git commit` trusts must be what the entries make.
    if let Some(tree) = extension(bytes.get(at..)?, hash_len, b"TREE") {
        let stage0: Vec<(Vec<u8>, u32, String)> = out
            .iter()
            .filter(|((_, stage), _)| *stage == 0)
            .map(|((path, _), (mode, id))| (path.clone(), *mode, id.clone()))
            .collect();
        if super::cachetree::first_forged(&stage0, tree, hash_len).is_some() {
            return None;
        }
    }
    Some(out)
}

/// Git's offset varint (index v4's prefix lengths): the value and how many bytes it took.
fn varint(bytes: &[u8]) -> Option<(usize, usize)> {
    let mut used = 0;
    let mut byte = *bytes.get(used)?;
    used += 1;
    let mut value = usize::from(byte & 0x7f);
    while byte & 0x80 != 0 {
        byte = *bytes.get(used)?;
        used += 1;
        value = value.checked_add(1)?.checked_mul(128)?.checked_add(usize::from(byte & 0x7f))?;
    }
    Some((value, used))
}

/// The data of the extension `name` among those after the entries (each a four-byte name,
/// a length, its data; the file's checksum last), if there is one.
fn extension<'a>(mut rest: &'a [u8], hash_len: usize, name: &[u8]) -> Option<&'a [u8]> {
    while rest.len() > hash_len + 8 {
        let size = u32::from_be_bytes(rest[4..8].try_into().ok()?) as usize;
        let data = rest.get(8..8 + size)?;
        if &rest[..4] == name {
            return Some(data);
        }
        rest = rest.get(8 + size..)?;
    }
    None
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::process::Command;

    fn git(dir: &std::path::Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .current_dir(dir)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    /// Every version git writes reads back as `git ls-files -s` lists it.
    #[test]
    fn the_index_reads_as_git_lists_it() {
        for version in ["2", "3", "4"] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            git(root, &["init", "-q"]);
            std::fs::create_dir_all(root.join("src/deep")).unwrap();
            for (name, text) in [("a.txt", "a\n"), ("src/lib.rs", "x\n"), ("src/deep/long-name-here.rs", "y\n")] {
                std::fs::write(root.join(name), text).unwrap();
            }
            std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
            git(root, &["add", "-A"]);
            git(root, &["update-index", "--index-version", version]);
            if version == "3" {
                git(root, &["update-index", "--skip-worktree", "a.txt"]);
            }
            let listed = Command::new("git").args(["ls-files", "-s"]).current_dir(root).output().unwrap().stdout;
            let want: Vec<String> = String::from_utf8(listed).unwrap().lines().map(str::to_string).collect();
            let bytes = std::fs::read(root.join(".git/index")).unwrap();
            let got: Vec<String> = entries(&bytes, 20)
                .unwrap()
                .into_iter()
                .map(|((path, stage), (mode, id))| {
                    format!("{mode:o} {id} {stage}\t{}", String::from_utf8(path).unwrap())
                })
                .collect();
            assert_eq!(got, want, "version {version}");
        }
    }

    /// The cached trees `git commit` writes are read and match; one forged is refused.
    #[test]
    fn cached_trees_must_be_what_the_entries_make() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        git(root, &["init", "-q"]);
        std::fs::create_dir_all(root.join(".githooks/deep")).unwrap();
        for (name, text) in
            [("a", "a\n"), (".githooks/pre-commit", "#!/bin/sh\n"), (".githooks/deep/x", "x\n"), ("z-b", "b\n")]
        {
            std::fs::write(root.join(name), text).unwrap();
        }
        std::os::unix::fs::symlink("a", root.join("link")).unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-qm", "init"]);
        let bytes = std::fs::read(root.join(".git/index")).unwrap();
        let at = bytes.windows(4).position(|w| w == b"TREE").expect("git wrote cached trees");
        assert!(entries(&bytes, 20).is_some(), "the trees git cached match its entries");
        // The `.githooks` tree's id, changed by one bit.
        let data = &bytes[at + 8..];
        let node = data.windows(10).position(|w| w == b".githooks\0").unwrap();
        let id_at = at + 8 + node + data[node..].iter().position(|b| *b == b'\n').unwrap() + 1;
        let mut forged = bytes.clone();
        forged[id_at] ^= 1;
        assert!(entries(&forged, 20).is_none(), "a forged cached tree is not read");
    }

    #[test]
    fn malformed_or_split_indexes_are_not_read() {
        assert!(entries(b"DIRC\0\0\0\x02\0\0\0\x05", 20).is_none());
        assert!(entries(b"JUNK", 20).is_none());
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q"]);
        std::fs::write(dir.path().join("a"), "a\n").unwrap();
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["update-index", "--split-index"]);
        let bytes = std::fs::read(dir.path().join(".git/index")).unwrap();
        assert!(entries(&bytes, 20).is_none());
    }
}
