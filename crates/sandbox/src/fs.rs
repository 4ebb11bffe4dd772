//! The only place that calls `std::fs`: clippy's `disallowed-methods` bans it everywhere else,
//! so every file access goes through these functions, most of which take a `Resolved` path.
#![allow(clippy::disallowed_methods)]

use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crate::{Resolved, beneath};

/// Largest config-like file read whole (config files, committed schemas, the README).
const SMALL_FILE_LIMIT: u64 = 4 * 1024 * 1024;

/// `realpath(3)`: resolves every symlink and `..`; fails if the path does not exist.
/// Windows: without the `\\?\` prefix where the plain form means the same (`C:\x`,
/// `\\server\share\x`, shorter than `MAX_PATH`), as users write paths and roots show.
pub fn canonicalize(path: &Path) -> io::Result<PathBuf> {
    let real = std::fs::canonicalize(path)?;
    #[cfg(windows)]
    if let Some(text) = real.to_str()
        && text.len() < 260
    {
        if let Some(rest) = text.strip_prefix(r"\\?\UNC\") {
            return Ok(PathBuf::from(format!(r"\\{rest}")));
        }
        if let Some(rest) = text.strip_prefix(r"\\?\")
            && rest.as_bytes().get(1) == Some(&b':')
        {
            return Ok(PathBuf::from(rest));
        }
    }
    Ok(real)
}

/// Whether `path` is a regular file (following symlinks).
pub fn is_file(path: &Path) -> bool {
    path.is_file()
}

/// The device and inode of what is at `path` (following symlinks), if anything: what a Landlock
/// rule made from the path holds on to.
#[cfg(target_os = "linux")]
pub fn inode(path: &Path) -> Option<(u64, u64)> {
    version(path).map(|version| (version.dev, version.ino))
}

/// The version (identity and times) of what is at `path`, following symlinks, if anything.
pub fn version(path: &Path) -> Option<crate::handle::Version> {
    std::fs::metadata(path).ok().map(|meta| crate::handle::Version::of(&meta))
}

/// The version of what is at `path` itself (a symlink is not followed), if anything: a dangling
/// symlink has one.
pub fn version_here(path: &Path) -> Option<crate::handle::Version> {
    std::fs::symlink_metadata(path).ok().map(|meta| crate::handle::Version::of(&meta))
}

/// Whether `path` exists (following symlinks).
pub fn exists(path: &Path) -> bool {
    path.exists()
}

/// Whether `path` is a regular file someone may run (an execute bit set; following symlinks).
pub fn is_program(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.extension().is_some_and(|ext| ext.eq_ignore_ascii_case("exe")) && path.is_file()
    }
}

/// Whether `path` is a directory (following symlinks).
pub fn is_dir(path: &Path) -> bool {
    path.is_dir()
}

/// Every entry beneath the directory `dir`, as paths relative to it (symlinks listed, never
/// followed): what a move of `dir` would put beneath its destination. Empty when `dir` is not a
/// directory (a file or a symlink moves alone); `None` when it holds more than `max` entries
/// or a part cannot be read.
pub fn tree_beneath(dir: &Path, max: usize) -> Option<Vec<PathBuf>> {
    if !std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.is_dir()) {
        return Some(Vec::new());
    }
    let mut found = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(rel) = pending.pop() {
        for entry in std::fs::read_dir(dir.join(&rel)).ok()? {
            let entry = entry.ok()?;
            let path = rel.join(entry.file_name());
            if entry.file_type().ok()?.is_dir() {
                pending.push(path.clone());
            }
            found.push(path);
            if found.len() > max {
                return None;
            }
        }
    }
    Some(found)
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

/// Reads a small text file whole (config file, schemas, README): at most 4 MiB, a regular
/// file only, opened without blocking (a FIFO in its place is refused, never waited on).
pub fn read_small_text(path: &Path) -> io::Result<String> {
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!("`{}` is not a regular file", path.display())));
    }
    let mut text = String::new();
    file.take(SMALL_FILE_LIMIT + 1).read_to_string(&mut text)?;
    if text.len() as u64 > SMALL_FILE_LIMIT {
        return Err(io::Error::other("file is larger than 4 MiB"));
    }
    Ok(text)
}

/// Reads a small config file of the user's own (`~/.gitconfig` and the like: a symlink is
/// followed, as the program that reads it follows it) without blocking on a FIFO, and only a
/// regular file of at most 1 MiB; `None` otherwise.
pub fn read_trusted_config(path: &Path) -> Option<Vec<u8>> {
    const CAP: u64 = 1 << 20;
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
    let file = options.open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > CAP {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(CAP + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= CAP).then_some(bytes)
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
    private_dirs().create(dir)?;
    let mut file = private(OpenOptions::new().write(true).create(true).truncate(true)).open(path)?;
    file.write_all(contents)
}

/// Creates a private file (mode 0600, directory 0700) holding `contents`; fails with
/// `AlreadyExists` when it is there (another process made it first).
pub fn write_new_private(dir: &Path, path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    private_dirs().create(dir)?;
    let mut file = private(OpenOptions::new().write(true).create_new(true)).open(path)?;
    file.write_all(contents)?;
    file.sync_all()
}

/// Renames a state-dir entry (the server's own bookkeeping, never a tool's subject).
pub fn rename_state(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::rename(from, to)
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
    let mut removed = 0;
    for name in file_names(dir) {
        let text = name.to_string_lossy();
        let Some(pid) = text.strip_prefix(prefix).and_then(|rest| rest.split('-').next()?.parse::<u32>().ok()) else {
            continue;
        };
        let path = dir.join(&name);
        let ours = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir() && owned_by_me(&m));
        if ours && pid != std::process::id() && !process_alive(pid) {
            removed += usize::from(std::fs::remove_dir_all(&path).is_ok());
        }
    }
    removed
}

/// Whether this user owns what `meta` describes (Windows: what is in the user's own state
/// dir is theirs).
fn owned_by_me(meta: &Metadata) -> bool {
    #[cfg(unix)]
    {
        std::os::unix::fs::MetadataExt::uid(meta) == rustix::process::geteuid().as_raw()
    }
    #[cfg(windows)]
    {
        let _ = meta;
        true
    }
}

/// Whether process `pid` is still running. Unix: a null signal (`EPERM` means it runs as
/// someone else); on Linux a zombie (dead, its parent has not yet collected its exit status)
/// is not running, though it answers the signal. Windows cannot ask without more code than a
/// sweep is worth: every process counts as running, so nothing is swept there.
pub fn process_alive(pid: u32) -> bool {
    #[cfg(unix)]
    {
        let Some(raw) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
        let answers = !matches!(rustix::process::test_kill_process(raw), Err(rustix::io::Errno::SRCH));
        #[cfg(target_os = "linux")]
        if answers && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| is_zombie(&stat)) {
            return false;
        }
        answers
    }
    #[cfg(windows)]
    {
        let _ = pid;
        true
    }
}

/// Whether any process of group `pgid` runs, zombies aside (Linux: read from `/proc`; a
/// group's zombie is still a member to `kill(-pgid, 0)`). Elsewhere: whether the group
/// answers a null signal.
pub fn group_running(pgid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        let Ok(entries) = std::fs::read_dir("/proc") else { return true };
        entries.flatten().any(|entry| {
            let name = entry.file_name();
            let Some(pid) = name.to_str().filter(|name| name.bytes().all(|b| b.is_ascii_digit())) else {
                return false;
            };
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
            // After the name in parentheses: state, ppid, pgrp.
            let Some((_, rest)) = stat.rsplit_once(')') else { return false };
            let mut fields = rest.split_whitespace();
            let (state, pgrp) = (fields.next(), fields.nth(1));
            state != Some("Z") && pgrp.and_then(|pgrp| pgrp.parse::<u32>().ok()) == Some(pgid)
        })
    }
    #[cfg(unix)]
    #[cfg(not(target_os = "linux"))]
    {
        i32::try_from(pgid)
            .ok()
            .and_then(rustix::process::Pid::from_raw)
            .is_some_and(|pid| rustix::process::test_kill_process_group(pid).is_ok())
    }
    #[cfg(windows)]
    {
        let _ = pgid;
        true
    }
}

/// Whether a `/proc/PID/stat` line is a zombie's: its state, after the command name in
/// parentheses (which may hold spaces and parentheses itself), is `Z`.
#[cfg(target_os = "linux")]
fn is_zombie(stat: &str) -> bool {
    stat.rsplit_once(')').is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
}

/// Private directories: mode 0700 on Unix (Windows: the user profile's own ACLs apply).
fn private_dirs() -> std::fs::DirBuilder {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
}

/// `options` for a private file: mode 0600 on Unix (Windows: the profile's ACLs apply).
fn private(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(options, 0o600);
    options
}

/// The OS error of a refused symlink (`ELOOP`; Windows: `ERROR_CANT_RESOLVE_FILENAME`).
#[cfg(unix)]
const LOOP: i32 = libc::ELOOP;
#[cfg(windows)]
const LOOP: i32 = 1921;

/// Creates (or truncates) a file the CLI user named, such as the agent's `--transcript`: the
/// user's own choice, not a tool operation, so it is not confined to a root.
pub fn create_user_file(path: &Path) -> io::Result<File> {
    File::create(path)
}

/// Opens a file the CLI user named for appending, creating it (the agent's `--transcript`
/// when it is also the `--resume` file).
pub fn append_user_file(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new().append(true).create(true).open(path)
}

/// Reads a file the CLI user named, whole (the agent's `--resume` transcript).
pub fn read_user_file(path: &Path) -> io::Result<Vec<u8>> {
    std::fs::read(path)
}

/// Appends to a small private file (mode 0600) in `dir`, creating `dir` (mode 0700) if needed.
pub fn append_private(dir: &Path, path: &Path, contents: &[u8]) -> io::Result<()> {
    use std::io::Write;
    private_dirs().create(dir)?;
    let mut file = private(OpenOptions::new().append(true).create(true)).open(path)?;
    file.write_all(contents)
}

/// The names in a directory (state bookkeeping: the temp-file sweep); empty if unreadable.
pub fn file_names(dir: &Path) -> Vec<std::ffi::OsString> {
    std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

/// Creates a session's private temp dir: `<system temp>/toolbelt-mcp-<uid>/<pid>-<n>-<random>`,
/// each level mode 0700 and made new (`mkdir` fails when something is there), the per-user
/// level accepted only when it is a directory (not a symlink) that this user owns and nobody
/// else may enter: another local user cannot make the name first, guess it, read what is in
/// it, or point it elsewhere.
#[cfg(unix)]
pub fn create_session_temp(n: u64) -> io::Result<PathBuf> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let uid = rustix::process::geteuid().as_raw();
    let temp = std::env::temp_dir();
    let base = temp.join(format!("toolbelt-mcp-{uid}"));
    let mut builder = std::fs::DirBuilder::new();
    builder.mode(0o700);
    // A `TMPDIR` that does not exist yet (Anthropic's sandbox-runtime sets `/tmp/claude` and
    // leaves it to be made): made, this user's alone.
    if !temp.exists() {
        builder.recursive(true).create(&temp).map_err(|err| {
            io::Error::new(err.kind(), format!("the temp dir `{}` (TMPDIR) does not exist and cannot be made: {err}; set TMPDIR to a directory you may write", temp.display()))
        })?;
        builder.recursive(false);
    }
    match builder.create(&base) {
        Ok(()) => {}
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
        Err(err) => return Err(err),
    }
    let meta = std::fs::symlink_metadata(&base)?;
    if !meta.is_dir() || meta.uid() != uid || meta.permissions().mode() & 0o077 != 0 {
        let message = format!(
            "`{}` is not a directory of this user's that only it may enter (another user may have made it); remove it, or set TMPDIR to a directory of your own",
            base.display()
        );
        return Err(io::Error::new(io::ErrorKind::PermissionDenied, message));
    }
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
    let dir = base.join(format!("{}-{n}-{}", std::process::id(), hex::encode(random)));
    builder.create(&dir)?;
    Ok(dir)
}

/// A session's private temp dir (Windows: beneath the user's own temp dir, which the profile's
/// ACLs keep to the user).
#[cfg(windows)]
pub fn create_session_temp(n: u64) -> io::Result<PathBuf> {
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(|e| io::Error::other(e.to_string()))?;
    let dir = session_temp_base().join(format!("{}-{n}-{}", std::process::id(), hex::encode(random)));
    std::fs::create_dir_all(session_temp_base())?;
    std::fs::create_dir(&dir)?;
    Ok(dir)
}

/// The per-user directory of every session's temp dir (`create_session_temp`).
pub fn session_temp_base() -> PathBuf {
    #[cfg(unix)]
    let uid = rustix::process::geteuid().as_raw();
    #[cfg(not(unix))]
    let uid = 0;
    std::env::temp_dir().join(format!("toolbelt-mcp-{uid}"))
}

/// Creates a private directory (mode 0700, parents too) for server state or scratch space,
/// and checks that no other user controls it or a directory above it (`owned.rs`): one made
/// before by another user would be used as it is.
pub fn create_private_dir(dir: &Path) -> io::Result<()> {
    private_dirs().create(dir)?;
    crate::owned::check(dir, false)
}

/// Whether other users may write in the directory `path` (`o+w`, as `/tmp`, `/var/tmp` and
/// `/dev/shm` are): never a workspace by default.
pub fn others_may_write(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & 0o002 != 0)
    }
    #[cfg(windows)]
    {
        let _ = path;
        false
    }
}

/// Whether `path` exists with its owner's write permission removed (`chmod a-w`): the store
/// then opens it read-only, honouring that even for root, whom the kernel would let write.
pub fn is_write_protected(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|meta| meta.permissions().mode() & 0o200 == 0)
    }
    #[cfg(windows)]
    {
        std::fs::metadata(path).is_ok_and(|meta| meta.permissions().readonly())
    }
}

/// Creates a new private file (mode 0600) to write, failing if anything is at `path` (a
/// planted symlink is not followed): a sub-agent's transcript in the state dir.
pub fn create_private_file(path: &Path) -> io::Result<File> {
    private(OpenOptions::new().write(true).create_new(true)).open(path)
}

/// Creates a new private file (mode 0600) for reading and appending: spilled command output
/// (appended, so reading at an offset never moves where the next write lands).
pub fn create_spill_file(path: &Path) -> io::Result<File> {
    private(OpenOptions::new().read(true).append(true).create_new(true)).open(path)
}

/// Opens a log file for appending (`O_APPEND`, so concurrent writers never interleave inside
/// one write), creating it (mode 0600) and its directory (0700); returns it with its size.
pub fn open_log(path: &Path) -> io::Result<(File, u64)> {
    if let Some(dir) = path.parent() {
        private_dirs().create(dir)?;
    }
    // Never through a symlink (records appended to whatever it points at), and never
    // blocking on a FIFO: the log must be a regular file of its own.
    let mut options = OpenOptions::new();
    private(options.append(true).create(true));
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    #[cfg(windows)]
    if std::fs::symlink_metadata(path).is_ok_and(|meta| meta.file_type().is_symlink()) {
        return Err(io::Error::from_raw_os_error(LOOP));
    }
    let file = options.open(path).map_err(|err| match err.raw_os_error() {
        Some(LOOP) => {
            io::Error::other(format!("`{}` is a symbolic link; the log is never written through one", path.display()))
        }
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

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_dead_process_not_yet_collected_is_not_running() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Dead but not collected (no `wait` yet): a zombie, which answers a null signal.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| is_zombie(&stat)) {
            assert!(std::time::Instant::now() < deadline, "`true` did not end");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(!process_alive(pid), "a zombie counted as running: its leftovers would be kept");
        child.wait().unwrap();
        assert!(process_alive(std::process::id()));
        // The state follows the last `)`: a command name may hold both.
        assert!(is_zombie("42 (a) Z) Z 1 2") && !is_zombie("42 (Z) S 1 2"));
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod private_file_tests {
    use super::*;

    #[test]
    fn a_private_file_is_new_and_never_made_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "kept").unwrap();
        #[cfg(unix)]
        {
            let planted = dir.path().join("planted.jsonl");
            std::os::unix::fs::symlink(&target, &planted).unwrap();
            assert_eq!(create_private_file(&planted).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        }
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "kept", "the link's target is untouched");
        assert_eq!(create_private_file(&target).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        let fresh = dir.path().join("fresh.jsonl");
        create_private_file(&fresh).unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777, 0o600);
        }
    }
}
