//! The temp-file journal: where a killed server may have left temp files, so the next start
//! can remove them.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};

use crate::fs;

/// Suffix of our temp files; leftovers of a killed server are swept by [`TempJournal`].
pub const TEMP_SUFFIX: &str = ".toolbelt-tmp";

/// Where a killed server may have left temp files: each process lists, in
/// `<state>/tmp/<pid>`, every directory it has written a temp file in (once per directory),
/// so the next start can remove that process's temp files without scanning the roots.
#[derive(Debug)]
pub struct TempJournal {
    dir: PathBuf,
    known: std::sync::Mutex<std::collections::HashSet<PathBuf>>,
}

impl TempJournal {
    /// A journal in `state_dir/tmp` (created on first use).
    pub fn new(state_dir: &Path) -> Self {
        Self { dir: state_dir.join("tmp"), known: std::sync::Mutex::new(std::collections::HashSet::new()) }
    }

    /// Records that this process writes temp files in `dir`. Best effort: a journal that cannot
    /// be written only loses the clean-up after a crash, never the write itself.
    pub fn note_dir(&self, dir: &Path) {
        let mut known = self.known.lock().unwrap_or_else(|p| p.into_inner());
        if known.contains(dir) {
            return;
        }
        let mut line = path_bytes(dir);
        line.push(b'\n');
        let list = self.dir.join(std::process::id().to_string());
        if fs::append_private(&self.dir, &list, &line).is_ok() {
            known.insert(dir.to_path_buf());
        }
    }

    /// Removes the temp files of servers that are no longer running. Returns how many.
    pub fn sweep(&self) -> usize {
        let mut removed = 0;
        for (list, contents) in fs::read_small_files(&self.dir) {
            let Some(pid) = list.file_name().and_then(|n| n.to_str()).and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            if pid == std::process::id() || fs::process_alive(pid) {
                continue;
            }
            let ours = format!(".{pid}.");
            for dir in contents.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let dir = &path_of(dir);
                for name in fs::file_names(dir) {
                    let name_str = name.to_string_lossy();
                    if name_str.ends_with(TEMP_SUFFIX)
                        && name_str.contains(&ours)
                        && fs::remove_file(&dir.join(&name)).is_ok()
                    {
                        removed += 1;
                    }
                }
            }
            let _ = fs::remove_file(&list);
        }
        removed
    }
}

/// A path as the bytes of one journal line (Unix: its own bytes; Windows: UTF-8).
fn path_bytes(path: &Path) -> Vec<u8> {
    #[cfg(unix)]
    {
        std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec()
    }
    #[cfg(windows)]
    {
        path.to_string_lossy().into_owned().into_bytes()
    }
}

/// The path a journal line names.
fn path_of(line: &[u8]) -> PathBuf {
    #[cfg(unix)]
    {
        PathBuf::from(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(line))
    }
    #[cfg(windows)]
    {
        PathBuf::from(String::from_utf8_lossy(line).into_owned())
    }
}
