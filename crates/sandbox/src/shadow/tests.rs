//! Tests of the shadow copy: what each kind of change a command makes is recorded as.

#![allow(clippy::disallowed_methods)]

use super::*;
use crate::undoable::Undoable;
use sha2::{Digest, Sha256};
use std::fs;
use std::os::unix::fs::PermissionsExt;

struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    shadow: Shadow,
    /// When "the command" started: before the first settle.
    started: std::time::SystemTime,
}

fn fixture(build: impl FnOnce(&Path)) -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let root = base.join("root");
    fs::create_dir(&root).unwrap();
    build(&root);
    let shadow = Shadow::new(base.join("shadow"), vec![root.clone()], Vec::new(), false, (1 << 20, 4 << 20)).unwrap();
    let started = std::time::SystemTime::now();
    let mut fixture = Fixture { _tmp: tmp, root, shadow, started };
    fixture.shadow.settle();
    fixture
}

fn command() -> Command {
    Command { line: "a command".into(), started: std::time::SystemTime::now() }
}

impl Fixture {
    fn changes(&mut self) -> Recorded {
        self.shadow.changes(Command { line: "a command".into(), started: self.started }, 1 << 30)
    }
}

fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

#[test]
fn nothing_changed_records_nothing_and_a_touch_is_no_change() {
    let mut f = fixture(|root| fs::write(root.join("a"), "one").unwrap());
    let recorded = f.changes();
    assert!(recorded.changes.is_empty() && recorded.left_out.is_empty(), "{recorded:?}");
    std::thread::sleep(std::time::Duration::from_millis(20));
    let file = fs::File::options().append(true).open(f.root.join("a")).unwrap();
    file.set_modified(std::time::SystemTime::now()).unwrap();
    let recorded = f.changes();
    assert!(recorded.changes.is_empty(), "same bytes, new time: {recorded:?}");
}

#[test]
fn a_rewrite_keeps_the_old_bytes_and_mode() {
    let mut f = fixture(|root| {
        fs::write(root.join("a.txt"), "old line\n").unwrap();
        fs::set_permissions(root.join("a.txt"), fs::Permissions::from_mode(0o640)).unwrap();
    });
    fs::write(f.root.join("a.txt"), "new line, longer\n").unwrap();
    let recorded = f.changes();
    assert_eq!(
        recorded.changes,
        vec![Undoable::Modified {
            path: f.root.join("a.txt"),
            before: b"old line\n".to_vec(),
            mode: 0o640,
            sha256: sha(b"new line, longer\n"),
        }]
    );
    assert_eq!(recorded.command.unwrap().line, "a command");
    // Measured from there on: a second look finds nothing new.
    assert!(f.changes().changes.is_empty());
}

#[test]
fn a_same_size_rewrite_in_the_same_tick_is_seen() {
    // Written, copied and written again at once: the version may not move; the content does.
    let mut f = fixture(|root| fs::write(root.join("a"), "aaaa").unwrap());
    fs::write(f.root.join("a"), "bbbb").unwrap();
    f.shadow.settle();
    fs::write(f.root.join("a"), "cccc").unwrap();
    let recorded = f.changes();
    assert_eq!(
        recorded.changes,
        vec![Undoable::Modified {
            path: f.root.join("a"),
            before: b"bbbb".to_vec(),
            mode: 0o644,
            sha256: sha(b"cccc")
        }]
    );
}

#[test]
fn a_removed_tree_keeps_its_files_links_and_binary_bytes() {
    let binary: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    let mut f = fixture(|root| {
        fs::create_dir_all(root.join("tree/inner")).unwrap();
        fs::write(root.join("tree/inner/data.bin"), &binary).unwrap();
        fs::write(root.join("tree/top.txt"), "top").unwrap();
        std::os::unix::fs::symlink("inner/data.bin", root.join("tree/link")).unwrap();
    });
    fs::remove_dir_all(f.root.join("tree")).unwrap();
    let recorded = f.changes();
    let [Undoable::RemovedTree { path, dirs, files, links }] = &recorded.changes[..] else {
        panic!("one tree: {recorded:?}")
    };
    assert_eq!(path, &f.root.join("tree"));
    assert_eq!(dirs, &vec![f.root.join("tree"), f.root.join("tree/inner")]);
    let mut files = files.clone();
    files.sort();
    assert_eq!(
        files,
        vec![
            (f.root.join("tree/inner/data.bin"), binary, 0o644),
            (f.root.join("tree/top.txt"), b"top".to_vec(), 0o644)
        ]
    );
    assert_eq!(links, &vec![(f.root.join("tree/link"), PathBuf::from("inner/data.bin"))]);
}

#[test]
fn a_moved_directory_is_removed_there_and_made_here() {
    let mut f = fixture(|root| {
        fs::create_dir(root.join("from")).unwrap();
        fs::write(root.join("from/f"), "x").unwrap();
    });
    fs::rename(f.root.join("from"), f.root.join("to")).unwrap();
    let recorded = f.changes();
    assert_eq!(
        recorded.changes,
        vec![
            Undoable::RemovedTree {
                path: f.root.join("from"),
                dirs: vec![f.root.join("from")],
                files: vec![(f.root.join("from/f"), b"x".to_vec(), 0o644)],
                links: Vec::new(),
            },
            Undoable::MadeDir(f.root.join("to")),
            Undoable::Created { path: f.root.join("to/f"), sha256: sha(b"x") },
        ]
    );
}

#[test]
fn a_file_replaced_by_a_symlink_is_a_removal_then_a_link() {
    let mut f = fixture(|root| fs::write(root.join("a"), "text").unwrap());
    fs::remove_file(f.root.join("a")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", f.root.join("a")).unwrap();
    let recorded = f.changes();
    assert_eq!(
        recorded.changes,
        vec![
            Undoable::Removed { path: f.root.join("a"), before: b"text".to_vec(), mode: 0o644 },
            Undoable::CreatedLink { path: f.root.join("a"), target: PathBuf::from("/etc/passwd") },
        ]
    );
}

#[test]
fn git_dirs_ignored_paths_and_skipped_dirs_are_not_walked() {
    let mut f = fixture(|root| {
        fs::create_dir_all(root.join(".git/objects")).unwrap();
        fs::write(root.join(".gitignore"), "target/\n").unwrap();
        fs::create_dir(root.join("target")).unwrap();
    });
    fs::write(f.root.join(".git/objects/new"), "x").unwrap();
    fs::write(f.root.join("target/out.o"), "x").unwrap();
    fs::write(f.root.join("kept.rs"), "x").unwrap();
    let recorded = f.changes();
    assert_eq!(recorded.changes, vec![Undoable::Created { path: f.root.join("kept.rs"), sha256: sha(b"x") }]);

    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    fs::create_dir(root.join("state")).unwrap();
    let mut shadow =
        Shadow::new(root.join("state/shadow"), vec![root.clone()], vec![root.join("state")], false, (1 << 20, 1 << 22))
            .unwrap();
    shadow.settle();
    fs::write(root.join("state/db"), "x").unwrap();
    assert!(shadow.changes(command(), 1 << 30).changes.is_empty(), "the server's own state is not a change");
}

#[test]
fn a_file_over_the_cap_is_left_out_with_the_reason() {
    let mut f = fixture(|root| fs::write(root.join("big"), vec![b'x'; 2 << 20]).unwrap());
    fs::write(f.root.join("big"), "small now").unwrap();
    let recorded = f.changes();
    assert!(recorded.changes.is_empty(), "{recorded:?}");
    assert!(recorded.left_out[0].contains("`max_undo_bytes` 1048576"), "{:?}", recorded.left_out);
    // A record whose old bytes are more than the record's cap keeps nothing.
    fs::write(f.root.join("small"), "y").unwrap();
    f.shadow.settle();
    fs::write(f.root.join("small"), "zz").unwrap();
    assert!(f.shadow.changes(command(), 0).too_large);
}

#[test]
fn a_root_that_cannot_be_opened_is_not_taken_as_emptied() {
    // What the last walk saw beneath a directory that cannot be read stands (a root moved
    // away, a directory a command made unreadable): it is not recorded as removed.
    let mut f = fixture(|root| {
        fs::create_dir(root.join("d")).unwrap();
        fs::write(root.join("d/f"), "x").unwrap();
    });
    let moved = f.root.with_file_name("moved");
    fs::rename(&f.root, &moved).unwrap();
    let recorded = f.changes();
    assert!(recorded.changes.is_empty() && recorded.left_out.is_empty(), "{recorded:?}");
    fs::rename(&moved, &f.root).unwrap();
    fs::remove_file(f.root.join("d/f")).unwrap();
    let recorded = f.changes();
    assert_eq!(
        recorded.changes,
        vec![Undoable::Removed { path: f.root.join("d/f"), before: b"x".to_vec(), mode: 0o644 }]
    );
}

#[test]
fn the_copies_go_with_the_shadow() {
    let f = fixture(|root| fs::write(root.join("a"), "x").unwrap());
    let dir = f.shadow.path.clone();
    assert_eq!(fs::read_dir(&dir).unwrap().count(), 1, "one pack");
    let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!((mode(&dir), mode(&dir.join("pack"))), (0o700, 0o600), "for the server's user alone");
    drop(f.shadow);
    assert!(!dir.exists());
}

#[test]
fn a_tree_deeper_than_the_cap_is_left_out_whole() {
    let mut f = fixture(|_| {});
    let deep: PathBuf = (0..MAX_DEPTH + 5).map(|_| "d").collect();
    fs::create_dir_all(f.root.join(&deep)).unwrap();
    fs::write(f.root.join(&deep).join("f"), "x").unwrap();
    fs::write(f.root.join("beside"), "y").unwrap();
    let recorded = f.changes();
    assert_eq!(recorded.changes, vec![Undoable::Created { path: f.root.join("beside"), sha256: sha(b"y") }]);
    assert_eq!(recorded.left_out.len(), 1, "{:?}", recorded.left_out);
    assert!(recorded.left_out[0].starts_with(&format!("`{}` (made a tree more than 100", f.root.join("d").display())));
}

#[test]
fn a_gitignore_the_command_changes_does_not_change_what_its_record_holds() {
    // `local/` was ignored before the command: dropping the rule shows it, but the command
    // made none of it.
    let mut f = fixture(|root| {
        fs::write(root.join(".gitignore"), "local/\n").unwrap();
        fs::create_dir(root.join("local")).unwrap();
        fs::write(root.join("local/notes.txt"), "mine").unwrap();
    });
    fs::write(f.root.join(".gitignore"), "dist/\n").unwrap();
    let recorded = f.changes();
    assert_eq!(recorded.changes.len(), 1, "{recorded:?}");
    assert_eq!(recorded.changes[0].path(), f.root.join(".gitignore"));
    // The next command starts from the new rules: `local/` is plain content now.
    f.shadow.settle();
    fs::write(f.root.join("local/notes.txt"), "edited").unwrap();
    assert_eq!(f.changes().changes[0].path(), f.root.join("local/notes.txt"));

    // A command that ignores what it writes is recorded all the same.
    let mut f = fixture(|root| {
        fs::create_dir(root.join("src")).unwrap();
        fs::write(root.join("src/main.py"), "print(1)").unwrap();
    });
    fs::write(f.root.join(".gitignore"), "src/\n").unwrap();
    fs::write(f.root.join("src/main.py"), "pwned").unwrap();
    let recorded = f.changes();
    let paths: Vec<&Path> = recorded.changes.iter().map(Undoable::path).collect();
    assert_eq!(paths, vec![f.root.join(".gitignore").as_path(), f.root.join("src/main.py").as_path()]);
}

#[test]
fn build_output_made_or_removed_is_counted_not_recorded() {
    let mut f = fixture(|root| {
        fs::write(root.join(".gitignore"), "target/\nnode_modules/\n").unwrap();
        fs::create_dir(root.join("node_modules")).unwrap();
    });
    fs::create_dir(f.root.join("target")).unwrap();
    fs::write(f.root.join("target/out"), "x").unwrap();
    fs::remove_dir(f.root.join("node_modules")).unwrap();
    let recorded = f.changes();
    assert!(recorded.changes.is_empty(), "{recorded:?}");
    assert_eq!(recorded.ignored, 2);
}

#[test]
fn what_the_server_wrote_is_absorbed_and_what_the_command_wrote_is_not() {
    let mut f = fixture(|root| fs::write(root.join("shared"), "one").unwrap());
    fs::write(f.root.join("by_command"), "c").unwrap();
    fs::create_dir(f.root.join("made")).unwrap();
    fs::write(f.root.join("made/by_server"), "s").unwrap();
    fs::write(f.root.join("shared"), "two").unwrap();
    f.shadow.absorb(&[f.root.join("made/by_server"), f.root.join("shared")]);
    let recorded = f.changes();
    assert_eq!(recorded.changes, vec![Undoable::Created { path: f.root.join("by_command"), sha256: sha(b"c") }]);
}

#[test]
fn a_file_moved_in_from_where_nothing_is_recorded_is_left_out_not_offered_to_undo() {
    // Undo would delete it, and the ignored place it came from is not recorded: it stays.
    let mut f = fixture(|root| {
        fs::write(root.join(".gitignore"), "local/\n").unwrap();
        fs::create_dir(root.join("local")).unwrap();
        fs::write(root.join("local/notes.txt"), "mine").unwrap();
        fs::write(root.join("seen.txt"), "seen").unwrap();
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for name in ["local/notes.txt", "seen.txt"] {
            fs::File::options().append(true).open(root.join(name)).unwrap().set_modified(old).unwrap();
        }
    });
    fs::create_dir(f.root.join("src")).unwrap();
    fs::rename(f.root.join("local/notes.txt"), f.root.join("src/notes.txt")).unwrap();
    // A move within what is recorded keeps its old time too, but its old place is recorded.
    fs::rename(f.root.join("seen.txt"), f.root.join("src/seen.txt")).unwrap();
    let recorded = f.changes();
    let paths: Vec<&Path> = recorded.changes.iter().map(Undoable::path).collect();
    assert_eq!(
        paths,
        vec![f.root.join("seen.txt").as_path(), f.root.join("src").as_path(), f.root.join("src/seen.txt").as_path()]
    );
    assert!(
        recorded.left_out[0]
            .starts_with(&format!("`{}` (appeared with a time before", f.root.join("src/notes.txt").display()))
    );
}

#[test]
fn removing_a_tree_deeper_than_the_cap_is_said_not_recorded() {
    let deep: PathBuf = std::iter::once("top").chain((0..MAX_DEPTH + 5).map(|_| "d")).collect();
    let mut f = fixture(|root| {
        fs::create_dir_all(root.join(&deep)).unwrap();
        fs::write(root.join(&deep).join("leaf"), "x").unwrap();
    });
    fs::remove_dir_all(f.root.join("top")).unwrap();
    let recorded = f.changes();
    assert!(recorded.changes.is_empty(), "{recorded:?}");
    assert!(recorded.left_out[0].contains("held a tree more than 100 directories deep"), "{:?}", recorded.left_out);
}

#[test]
fn a_file_moved_over_another_from_where_nothing_is_recorded_is_left_out() {
    // Putting the old bytes back would lose the only copy of what came.
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    let mut f = fixture(|root| {
        fs::write(root.join(".gitignore"), "local/\n").unwrap();
        fs::create_dir(root.join("local")).unwrap();
        fs::write(root.join("local/precious.txt"), "precious").unwrap();
        fs::File::options().append(true).open(root.join("local/precious.txt")).unwrap().set_modified(old).unwrap();
        fs::write(root.join("existing.txt"), "old").unwrap();
    });
    fs::rename(f.root.join("local/precious.txt"), f.root.join("existing.txt")).unwrap();
    let recorded = f.changes();
    assert!(recorded.changes.is_empty(), "{recorded:?}");
    let said = format!("`{}` (replaced by a file with a time before", f.root.join("existing.txt").display());
    assert!(recorded.left_out[0].starts_with(&said), "{:?}", recorded.left_out);
    // Rewritten in place, a file keeps its identity: an ordinary change, whatever its time.
    fs::write(f.root.join("existing.txt"), "rewritten").unwrap();
    fs::File::options().append(true).open(f.root.join("existing.txt")).unwrap().set_modified(old).unwrap();
    let recorded = f.changes();
    assert_eq!(recorded.changes.len(), 1, "{recorded:?}");
    assert!(matches!(&recorded.changes[0], Undoable::Modified { before, .. } if before == b"precious"));
}
