//! The listing walk against `ignore`'s walker on generated trees, and what it declines.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;
use crate::Roots;

/// What `ignore`'s walker, set up by [`super::super::builder`] and sorted as `list_dir` sorts
/// it, keeps of `walked`.
fn reference(walked: &Resolved, options: WalkOptions) -> Vec<(PathBuf, usize, Kind)> {
    let mut builder = super::super::builder(walked, options);
    builder.sort_by_file_name(|a, b| a.cmp(b));
    let mut seen = Vec::new();
    for entry in builder.build().flatten().filter(|entry| entry.depth() > 0) {
        let kind = match entry.file_type() {
            Some(t) if t.is_dir() => Kind::Dir,
            Some(t) if t.is_file() => Kind::File,
            Some(t) if t.is_symlink() => Kind::Link,
            _ => Kind::Other,
        };
        seen.push((entry.path().to_path_buf(), entry.depth(), kind));
    }
    seen
}

/// Paths kept by a walk, for comparing two walkers in tests.
fn listed(root: &Root, walked: &Resolved, options: WalkOptions) -> Result<Vec<(PathBuf, usize, Kind)>, Declined> {
    let mut seen = Vec::new();
    walk(root, walked, options, None, &|| false, &mut |met| {
        if let Ok(met) = met {
            seen.push((met.path.to_path_buf(), met.depth, met.kind));
        }
    })?;
    Ok(seen)
}

/// The names (relative to `root`) the listing walk keeps of `from`, checked equal to what
/// `ignore`'s walker keeps.
fn kept(root: &Path, from: &str, options: WalkOptions) -> Vec<String> {
    let walked = resolved(root, from);
    let listed = listed(&Root::open(root).unwrap(), &walked, options.clone()).unwrap();
    assert_eq!(listed, reference(&walked, options), "from `{from}`");
    listed.iter().map(|(path, _, _)| path.strip_prefix(root).unwrap().display().to_string()).collect()
}

fn resolved(root: &Path, input: &str) -> Resolved {
    Roots::new(vec![root.to_path_buf()]).resolve(input).unwrap()
}

fn options(include_hidden: bool, respect_gitignore: bool, depth: usize) -> WalkOptions {
    WalkOptions { max_depth: Some(depth), ..WalkOptions::new(Some(include_hidden), Some(respect_gitignore), None) }
}

/// A temp root (canonical) and what is in it.
fn tree(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        if path.to_string_lossy().ends_with('/') {
            std::fs::create_dir_all(&path).unwrap();
        } else {
            std::fs::write(&path, text).unwrap();
        }
    }
    (tmp, root)
}

#[test]
fn the_rules_of_every_kind_of_file_and_the_directories_above_the_walked_one_apply() {
    let (_tmp, root) = tree(&[
        (".gitignore", "*.log\n/top-only\n"),
        (".ignore", "!keep.log\n"),
        (".git/info/exclude", "excluded*\n"),
        ("sub/.gitignore", "!again.log\nnested/\n"),
        ("sub/a.log", ""),
        ("sub/keep.log", ""),
        ("sub/again.log", ""),
        ("sub/excluded.txt", ""),
        ("sub/top-only", ""),
        ("sub/nested/inner.txt", ""),
        ("sub/.hidden", ""),
        ("sub/plain.txt", ""),
    ]);
    let kept_of_sub = kept(&root, "sub", options(false, true, 2));
    assert_eq!(kept_of_sub, ["sub/again.log", "sub/keep.log", "sub/plain.txt", "sub/top-only"]);
    assert_eq!(kept(&root, "sub", options(true, false, 3)).len(), 10);
}

#[test]
fn deeper_rules_win_over_the_walked_directorys() {
    let (_tmp, root) = tree(&[
        (".gitignore", "*.log\n"),
        (".ignore", "b/\n"),
        ("a/.gitignore", "!keep.log\n"),
        ("a/.ignore", "!b/\n"),
        ("a/keep.log", ""),
        ("a/other.log", ""),
        ("a/b/", ""),
        ("b/", ""),
    ]);
    assert_eq!(kept(&root, "", options(false, true, 3)), ["a", "a/b", "a/keep.log"]);
}

#[test]
fn the_ignore_files_above_the_root_apply_as_ignores_walker_reads_them() {
    let (_tmp, outer) = tree(&[
        (".gitignore", "*.log\n!keep.log\n"),
        (".git/info/exclude", "excluded*\n"),
        ("ws/.ignore", "!again.log\n"),
        ("ws/a.log", ""),
        ("ws/keep.log", ""),
        ("ws/again.log", ""),
        ("ws/excluded.txt", ""),
        ("ws/sub/b.log", ""),
        ("ws/sub/plain.txt", ""),
    ]);
    let root = outer.join("ws");
    assert_eq!(kept(&root, "", options(false, true, 2)), ["again.log", "keep.log", "sub", "sub/plain.txt"]);
    assert_eq!(kept(&root, "sub", options(false, true, 2)), ["sub/plain.txt"]);
}

#[test]
fn a_symlink_on_any_road_to_an_ignore_file_is_declined() {
    let (_tmp, root) = tree(&[
        ("d/.git/info/real", "x\n"),
        ("e/.git/elsewhere/exclude", "x\n"),
        ("f/sub/file", ""),
        ("real", "file\n"),
    ]);
    std::os::unix::fs::symlink("real", root.join("d/.git/info/exclude")).unwrap();
    std::os::unix::fs::symlink("elsewhere", root.join("e/.git/info")).unwrap();
    // In a directory above the walked one (inside the root).
    std::os::unix::fs::symlink("../real", root.join("f/.gitignore")).unwrap();
    let held = Root::open(&root).unwrap();
    let declined =
        |input: &str| walk(&held, &resolved(&root, input), options(false, true, 2), None, &|| false, &mut |_| {}).err();
    assert_eq!(declined("d"), Some(Declined::Unusual("a symlinked ignore file")));
    assert_eq!(declined("e"), Some(Declined::Unusual("a symlinked `.git/info`")));
    assert_eq!(declined("f/sub"), Some(Declined::Unusual("a symlinked ignore file")));
    // Each is read by `ignore`'s walker instead, which follows them.
    assert_eq!(reference(&resolved(&root, "f/sub"), options(false, true, 2)), []);
}

#[test]
fn what_only_ignores_walker_does_is_declined() {
    let (_tmp, root) = tree(&[("a/.git", "gitdir: ../elsewhere\n"), ("b/real", "x\n"), ("c/file", "")]);
    std::os::unix::fs::symlink("real", root.join("b/.gitignore")).unwrap();
    let held = Root::open(&root).unwrap();
    let declined = |input: &str, respect: bool, budget: usize| {
        walk(&held, &resolved(&root, input), options(false, respect, 2), Some(budget), &|| false, &mut |_| {}).err()
    };
    assert_eq!(declined("a", true, 100), Some(Declined::Unusual("a `.git` that is not a directory")));
    assert_eq!(declined("b", true, 100), Some(Declined::Unusual("a symlinked ignore file")));
    // Without ignore files honoured, neither matters.
    assert_eq!(declined("a", false, 100), None);
    assert_eq!(declined("b", false, 100), None);
    // Seven entries in all (`a`, `b`, `c` and the four in them), each directory's counted as
    // it is read.
    assert_eq!(declined("", false, 7), None);
    assert_eq!(declined("", false, 6), Some(Declined::Larger));
    assert_eq!(declined("", false, 3), Some(Declined::Larger));
    assert_eq!(declined("c", false, 1), None);
    let stopped = walk(&held, &resolved(&root, ""), options(false, false, 2), None, &|| true, &mut |_| {});
    assert_eq!(stopped, Err(Declined::Stopped));
    // Asked before each directory is read: the third time, `b` was met but is not read.
    let (asked, mut seen) = (std::cell::Cell::new(0), Vec::new());
    let stop = || {
        asked.set(asked.get() + 1);
        asked.get() > 2
    };
    let stopped = walk(&held, &resolved(&root, ""), options(true, false, 2), None, &stop, &mut |met| {
        seen.push(met.map(|met| met.name.to_owned()).ok());
    });
    assert_eq!(stopped, Err(Declined::Stopped));
    assert_eq!(seen, [Some("a".into()), Some("b".into())]);
}

#[test]
fn a_walk_deeper_than_it_keeps_directories_open_is_declined() {
    let (_tmp, root) = tree(&[]);
    let deep = root.join(["d"; DEEPEST + 1].join("/"));
    std::fs::create_dir_all(&deep).unwrap();
    std::fs::write(deep.join("bottom.txt"), "").unwrap();
    let held = Root::open(&root).unwrap();
    let walked = resolved(&root, "");
    let walk_to = |max_depth: Option<usize>| {
        let options = WalkOptions { max_depth, ..options(false, true, 1) };
        let mut met = 0;
        walk(&held, &walked, options, None, &|| false, &mut |_| met += 1).map(|()| met)
    };
    assert_eq!(walk_to(Some(DEEPEST)), Ok(DEEPEST));
    assert_eq!(walk_to(None), Err(Declined::Larger), "`ignore`'s walker takes the rest");
    assert_eq!(reference(&walked, WalkOptions { max_depth: None, ..options(false, true, 1) }).len(), DEEPEST + 2);
}

/// A name in a generated tree: few, so that rules at different levels meet the same names.
fn name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["a", "b", "x.log", "keep.log", ".env", "y.txt"])
}

/// A line of a generated ignore file.
fn pattern() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "*.log",
        "!keep.log",
        "!*.log",
        "a",
        "!a",
        "b/",
        "!b/",
        "y.txt",
        "!y.txt",
        ".env",
        "!.env",
        "/x.log",
        "**/b",
        "a/**",
        "!/a",
        "#x.log",
        "",
        "\u{feff}*.txt",
        "[xy].*",
        "a/*.log",
        "!b/keep.log",
    ])
}

/// A generated tree: paths of files (a trailing `/`: a directory), and ignore files with
/// their lines.
fn layout() -> impl Strategy<Value = (Vec<String>, Vec<(String, Vec<&'static str>)>)> {
    let path = prop::collection::vec(name(), 1..4).prop_map(|names| names.join("/"));
    let files = prop::collection::vec((path, any::<bool>()), 1..24)
        .prop_map(|paths| paths.into_iter().map(|(p, dir)| if dir { format!("{p}/") } else { p }).collect());
    let dir = prop::sample::select(vec!["", "a/", "b/", "a/b/", "b/a/"]);
    let file = prop::sample::select(vec![".gitignore", ".ignore", ".git/info/exclude"]);
    let ignore = (dir, file).prop_map(|(dir, file)| format!("{dir}{file}"));
    let ignores = prop::collection::vec((ignore, prop::collection::vec(pattern(), 0..5)), 0..6);
    (files, ignores)
}

proptest! {
    /// On any tree, with any options, the listing walk keeps what `ignore`'s walker keeps, in
    /// the same order.
    #[test]
    fn fuzz_listing_walks_keep_what_ignores_walker_keeps(
        (files, ignores) in layout(),
        hidden in any::<bool>(),
        respect in any::<bool>(),
        depth in 1usize..4,
        from in prop::sample::select(vec!["", "a", "b", "a/b"]),
        unbounded in any::<bool>(),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        for path in &files {
            let full = root.join(path.trim_end_matches('/'));
            // A name used as both a file and a directory: the first one made stays.
            if std::fs::create_dir_all(full.parent().unwrap()).is_err() || full.exists() {
                continue;
            }
            if path.ends_with('/') { std::fs::create_dir(&full).unwrap() } else { std::fs::write(&full, "").unwrap() }
        }
        for (path, lines) in &ignores {
            let full = root.join(path);
            if std::fs::create_dir_all(full.parent().unwrap()).is_ok() && !full.is_dir() {
                std::fs::write(&full, lines.join("\n")).unwrap();
            }
        }
        if root.join("a").is_dir() && !root.join("a/link").exists() {
            std::os::unix::fs::symlink("../b", root.join("a/link")).unwrap();
        }
        // Walked from the root when the subdirectory was not made.
        let from = if root.join(from).is_dir() { from } else { "" };
        let walked = resolved(&root, from);
        let options = WalkOptions { max_depth: (!unbounded).then_some(depth), ..options(hidden, respect, depth) };
        let held = Root::open(&root).unwrap();
        let listed = listed(&held, &walked, options.clone());
        prop_assert_eq!(listed, Ok(reference(&walked, options)), "files {:?}, ignores {:?}", files, ignores);
    }
}
