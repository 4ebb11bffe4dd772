//! The only place that calls `std::fs`: clippy's `disallowed-methods` bans it everywhere else,
//! so every file access goes through these functions, most of which take a `Resolved` path.
#![allow(clippy::disallowed_methods)]

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::sandbox::{Resolved, beneath};

/// Largest config-like file read whole (config files, committed schemas, the README).
const SMALL_FILE_LIMIT: u64 = 4 * 1024 * 1024;

/// `realpath(3)`: resolves every symlink and `..`; fails if the path does not exist.
pub fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    std::fs::canonicalize(path)
}

/// Whether `path` is a regular file (following symlinks).
pub fn is_file(path: &Path) -> bool {
    path.is_file()
}

/// Whether `path` exists (following symlinks).
pub fn exists(path: &Path) -> bool {
    path.exists()
}

/// Whether `path` is a directory (following symlinks).
pub fn is_dir(path: &Path) -> bool {
    path.is_dir()
}

/// Opens a confined file for reading, beneath its root without following a symlink anywhere
/// on the way (a directory swapped for one after the check makes it fail), without blocking
/// on a FIFO; with the metadata of what was opened.
pub fn open_read(path: &Resolved) -> io::Result<(File, Metadata)> {
    beneath::Root::open(path.root())?.open_read(path.real())
}

/// The root of a walk held open: the walker opens, describes and re-checks the entries it
/// meets through it (see [`beneath::Root`]).
pub fn walk_root(walked: &Resolved) -> io::Result<beneath::Root> {
    beneath::Root::open(walked.root())
}

/// The target text of a symlink (not followed): the config file's own check.
pub fn read_link(path: &Path) -> io::Result<PathBuf> {
    std::fs::read_link(path)
}

/// Reads a small text file whole (config file, schemas, README): at most 4 MiB.
pub fn read_small_text(path: &Path) -> io::Result<String> {
    let file = File::open(path)?;
    let mut text = String::new();
    file.take(SMALL_FILE_LIMIT + 1).read_to_string(&mut text)?;
    if text.len() as u64 > SMALL_FILE_LIMIT {
        return Err(io::Error::other("file is larger than 4 MiB"));
    }
    Ok(text)
}

/// Writes a repository file for `toolbelt-mcp schemas` (not a tool operation: the CLI user
/// chose the directory), creating its parent directory.
pub fn write_repo_file(path: &Path, contents: &str) -> io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, contents)
}

/// Writes a small private file (mode 0600) in `dir`, creating `dir` (mode 0700) if needed.
pub fn write_private(dir: &Path, path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut file = OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)?;
    file.write_all(contents)
}

/// Creates a private file (mode 0600, directory 0700) holding `contents`; fails with
/// `AlreadyExists` when it is there (another process made it first).
pub fn write_new_private(dir: &Path, path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

/// Removes a file (state-dir bookkeeping, never a tool's subject).
pub fn remove_file(path: &Path) -> io::Result<()> {
    std::fs::remove_file(path)
}

/// The files of a state-dir folder with their contents (small files only; unreadable ones
/// are skipped).
pub fn read_small_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let path = entry.path();
            let bytes = std::fs::read(&path).ok()?;
            (bytes.len() < 64 * 1024).then_some((path, bytes))
        })
        .collect()
}

/// Reads a state-dir file whole (undo blobs).
pub fn read_state_file(path: &Path) -> io::Result<Vec<u8>> {
    std::fs::read(path)
}

/// Removes a state-dir folder and what is in it (a finished session's undo blobs).
pub fn remove_state_dir(path: &Path) {
    let _ = std::fs::remove_dir_all(path);
}

/// Removes the folders in `dir` named `{prefix}{pid}-…` whose server process `pid` is gone
/// (a killed server's undo blobs, spilled output, private temp dirs) and that this user owns;
/// returns how many went.
pub fn remove_dirs_of_dead_servers(dir: &Path, prefix: &str) -> usize {
    use std::os::unix::fs::MetadataExt;
    let me = rustix::process::geteuid().as_raw();
    let mut removed = 0;
    for name in file_names(dir) {
        let text = name.to_string_lossy();
        let Some(pid) = text.strip_prefix(prefix).and_then(|rest| rest.split('-').next()?.parse::<u32>().ok()) else {
            continue;
        };
        let path = dir.join(&name);
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            removed += usize::from(std::fs::remove_dir_all(&path).is_ok());
        }
    }
    removed
}

/// Creates (or truncates) a file the CLI user named, such as the agent's `--transcript`: the
/// user's own choice, not a tool operation, so it is not confined to a root.
pub fn create_user_file(path: &Path) -> io::Result<File> {
    File::create(path)
}

/// Appends to a small private file (mode 0600) in `dir`, creating `dir` (mode 0700) if needed.
pub fn append_private(dir: &Path, path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    let mut file = OpenOptions::new().append(true).create(true).mode(0o600).open(path)?;
    file.write_all(contents)
}

/// The names in a directory (state bookkeeping: the temp-file sweep); empty if unreadable.
pub fn file_names(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

/// Creates a private directory (mode 0700, parents too) for server state or scratch space.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Whether `path` exists with its owner's write permission removed (`chmod a-w`): the store
/// then opens it read-only, honouring that even for root, whom the kernel would let write.
pub fn is_write_protected(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & 0o200 == 0)
}

/// Creates a new private file (mode 0600) for reading and writing: spilled command output.
pub fn create_spill_file(path: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).custom_flags(libc::O_CLOEXEC).open(path)
}

/// Opens a log file for appending (`O_APPEND`, so concurrent writers never interleave inside
/// one write), creating it (mode 0600) and its directory (0700); returns it with its size.
pub fn open_log(path: &Path) -> io::Result<(File, u64)> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(dir) = path.parent() {
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    // Never through a symlink (records appended to whatever it points at), and never
    // blocking on a FIFO: the log must be a regular file of its own.
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|err| match err.raw_os_error() {
            Some(libc::ELOOP) => io::Error::other(format!(
                "`{}` is a symbolic link; the log is never written through one",
                path.display()
            )),
            _ => err,
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other(format!("`{}` is not a regular file", path.display())));
    }
    Ok((file, meta.len()))
}

/// Rotates a log: `path` becomes `path.1`, `.1` becomes `.2`, … up to `.keep`.
pub fn rotate_log(path: &Path, keep: u32) -> io::Result<()> {
    let numbered = |n: u32| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    };
    for n in (1..keep).rev() {
        let _ = std::fs::rename(numbered(n), numbered(n + 1));
    }
    std::fs::rename(path, numbered(1))
}
