//! Whole directory trees at a write target: read (for undo) and removed, both through the
//! target's held directory handle, never by walking its path again.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::PathBuf;

use rustix::fs::{Mode, OFlags};

use super::Target;
use crate::error::ToolError;

/// A directory tree read before it is removed.
#[derive(Debug, Default)]
pub struct Tree {
    /// Its directories (absolute), outermost first, itself included.
    pub dirs: Vec<PathBuf>,
    /// Its regular files with content and permission bits.
    pub files: Vec<(PathBuf, Vec<u8>, u32)>,
    /// Its symlinks with their targets.
    pub links: Vec<(PathBuf, PathBuf)>,
}

impl Tree {
    /// Bytes of file content.
    pub fn bytes(&self) -> u64 {
        self.files.iter().map(|(_, b, _)| b.len() as u64).sum()
    }
}

impl Target {
    /// The target reached through the held directory handle, not by walking the path again.
    fn handle_path(&self) -> PathBuf {
        PathBuf::from(format!("/proc/self/fd/{}", self.dir.as_raw_fd())).join(&self.name)
    }

    /// Reads the directory tree at the target (never following symlinks), stopping once its
    /// files exceed `limit` bytes.
    pub fn read_tree(&self, limit: u64) -> Result<Tree, ToolError> {
        let mut tree = Tree::default();
        let io_err = |e| ToolError::io("read", &self.shown, e);
        let mut pending = vec![(self.handle_path(), self.real.clone())];
        while let Some((dir, real)) = pending.pop() {
            tree.dirs.push(real.clone());
            let mut entries: Vec<_> =
                std::fs::read_dir(&dir).map_err(io_err)?.collect::<Result<_, _>>().map_err(io_err)?;
            entries.sort_by_key(|e| e.file_name());
            for entry in entries {
                let (path, real_child) = (entry.path(), real.join(entry.file_name()));
                let file_type = entry.file_type().map_err(io_err)?;
                if file_type.is_dir() {
                    pending.push((path, real_child));
                } else if file_type.is_symlink() {
                    tree.links.push((real_child, std::fs::read_link(&path).map_err(io_err)?));
                } else if file_type.is_file() {
                    let meta = std::fs::symlink_metadata(&path).map_err(io_err)?;
                    if tree.bytes() + meta.len() > limit {
                        return Err(ToolError::TooLarge {
                            path: self.shown.clone(),
                            size: format!("over {}", crate::tools::file::human_size(limit)),
                            limit: crate::tools::file::human_size(limit),
                            what: "what one session keeps for undo (delete smaller parts, or raise `max_undo_bytes`)",
                        });
                    }
                    let file =
                        rustix::fs::open(&path, OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
                            .map_err(|e| io_err(e.into()))?;
                    let mut bytes = Vec::with_capacity(meta.len() as usize);
                    std::fs::File::from(file).read_to_end(&mut bytes).map_err(io_err)?;
                    tree.files.push((
                        real_child,
                        bytes,
                        std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o7777,
                    ));
                } else {
                    return Err(ToolError::BadTarget {
                        path: self.shown.clone(),
                        problem: format!(
                            "holds `{}`, which is not a file, directory or symlink",
                            entry.file_name().to_string_lossy()
                        ),
                    });
                }
            }
        }
        tree.dirs.sort();
        Ok(tree)
    }

    /// Removes the directory tree at the target (symlinks inside are removed, not followed).
    pub fn remove_tree(&self) -> Result<(), ToolError> {
        std::fs::remove_dir_all(self.handle_path()).map_err(|e| ToolError::io("remove", &self.shown, e))
    }
}
