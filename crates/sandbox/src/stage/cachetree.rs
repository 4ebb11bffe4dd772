//! The index's cached trees (its `TREE` extension) checked against its entries. `git commit`
//! writes a directory's tree id from the cache when the cache says it is valid, without
//! building it from the entries again; a command that forged one would have the user's next
//! commit record files the index does not list (a hook in `.githooks/`, say), with `git
//! status` clean. Each valid cached tree must be the tree the entries beneath it make.

use std::collections::BTreeMap;

use sha1::Digest;

/// A directory's entries as a tree object holds them: name → (mode, raw id).
type Dir = BTreeMap<Vec<u8>, (u32, Vec<u8>)>;

/// The first directory (relative, `""` for the top) whose cached tree id is not what the
/// index's entries make, or `None` when every valid one is. `entries` are the stage-0
/// entries (path, mode, hex id); `extension` the `TREE` extension's data.
pub(super) fn first_forged(entries: &[(Vec<u8>, u32, String)], extension: &[u8], hash_len: usize) -> Option<String> {
    let sha256 = hash_len == 32;
    let mut cached = Vec::new();
    let mut at = 0;
    if !read_node(extension, &mut at, Vec::new(), hash_len, &mut cached) {
        return Some("(an unreadable cache)".into());
    }
    // Every directory's entries, files and subtrees, built from the bottom up.
    let mut dirs: BTreeMap<Vec<u8>, Dir> = BTreeMap::new();
    for (path, mode, id) in entries {
        let Ok(raw) = hex::decode(id) else { return Some("(an unreadable entry)".into()) };
        let (dir, name) = split(path);
        dirs.entry(dir.to_vec()).or_default().insert(name.to_vec(), (*mode, raw));
        // Every ancestor exists as a directory.
        let mut parent = dir;
        while !parent.is_empty() {
            let (up, _) = split(parent);
            dirs.entry(up.to_vec()).or_default();
            parent = up;
        }
    }
    let mut made: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut order: Vec<Vec<u8>> = dirs.keys().cloned().collect();
    // Deepest first, so each subtree's id is known before its parent's.
    order.sort_by_key(|dir| {
        std::cmp::Reverse(dir.iter().filter(|b| **b == b'/').count() + usize::from(!dir.is_empty()))
    });
    for dir in order {
        let mut listing: Vec<(Vec<u8>, u32, Vec<u8>)> =
            dirs[&dir].iter().map(|(name, (mode, id))| (name.clone(), *mode, id.clone())).collect();
        for (sub, id) in made.iter().filter(|(sub, _)| split(sub).0 == dir.as_slice() && !sub.is_empty()) {
            listing.push((split(sub).1.to_vec(), 0o40000, id.clone()));
        }
        // Git's order: a directory's name sorts as if it ended in `/`.
        listing.sort_by_key(|entry| sort_key(&entry.0, entry.1));
        let mut body = Vec::new();
        for (name, mode, id) in &listing {
            let mode = if *mode == 0o40000 { "40000".to_string() } else { format!("{mode:o}") };
            body.extend_from_slice(mode.as_bytes());
            body.push(b' ');
            body.extend_from_slice(name);
            body.push(0);
            body.extend_from_slice(id);
        }
        let mut object = format!("tree {}\0", body.len()).into_bytes();
        object.extend_from_slice(&body);
        let id = if sha256 { sha2::Sha256::digest(&object).to_vec() } else { sha1::Sha1::digest(&object).to_vec() };
        made.insert(dir, id);
    }
    for (dir, id) in cached {
        let built = made.get(&dir).map(hex::encode);
        if built.as_deref() != Some(id.as_str()) {
            return Some(String::from_utf8_lossy(&dir).into_owned());
        }
    }
    None
}

/// `dir/name` split at its last `/` (`""` for a top-level name).
fn split(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|b| *b == b'/') {
        Some(at) => (&path[..at], &path[at + 1..]),
        None => (&[], path),
    }
}

fn sort_key(name: &[u8], mode: u32) -> Vec<u8> {
    let mut key = name.to_vec();
    if mode == 0o40000 {
        key.push(b'/');
    }
    key
}

/// Reads one cache node (and its subtrees) at `at` of `data`, its full path under `prefix`;
/// pushes each valid one's (path, hex id). `false` when the data is malformed.
fn read_node(data: &[u8], at: &mut usize, prefix: Vec<u8>, hash_len: usize, out: &mut Vec<(Vec<u8>, String)>) -> bool {
    let Some(end) = data.get(*at..).and_then(|rest| rest.iter().position(|b| *b == 0)) else { return false };
    let name = &data[*at..*at + end];
    *at += end + 1;
    let path = match (prefix.is_empty(), name.is_empty()) {
        (_, true) => prefix,
        (true, false) => name.to_vec(),
        (false, false) => [prefix.as_slice(), b"/", name].concat(),
    };
    let Some(line_end) = data.get(*at..).and_then(|rest| rest.iter().position(|b| *b == b'\n')) else { return false };
    let line = String::from_utf8_lossy(&data[*at..*at + line_end]).into_owned();
    *at += line_end + 1;
    let mut numbers = line.split(' ');
    let (Some(Ok(count)), Some(Ok(subtrees))) =
        (numbers.next().map(str::parse::<i64>), numbers.next().map(str::parse::<usize>))
    else {
        return false;
    };
    if count >= 0 {
        let Some(id) = data.get(*at..*at + hash_len) else { return false };
        out.push((path.clone(), hex::encode(id)));
        *at += hash_len;
    }
    (0..subtrees).all(|_| read_node(data, at, path.clone(), hash_len, out))
}
