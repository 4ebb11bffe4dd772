//! Whole directory trees at a write target: read (for undo) and removed, both through the
//! target's held directory handle, never by walking its path again.

use std::ffi::OsStr;
use std::io::Read;
use std::path::PathBuf;

use super::Target;
use crate::Error;
use crate::handle::{self, DirHandle, Kind};

/// How deep a tree may nest for undo and removal (each level holds a directory open).
const MAX_DEPTH: usize = 256;

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
    /// Reads the directory tree at the target (never following symlinks), stopping once its
    /// files exceed `limit` bytes.
    pub fn read_tree(&self, limit: u64) -> Result<Tree, Error> {
        let mut tree = Tree::default();
        let io_err = |e| Error::io("read", &self.shown, e);
        let top = self.dir.open_dir(&self.name).map_err(io_err)?;
        let mut pending = vec![(top, self.real.clone(), 0)];
        while let Some((dir, real, depth)) = pending.pop() {
            if depth > MAX_DEPTH {
                return Err(self.too_deep());
            }
            tree.dirs.push(real.clone());
            let mut names = dir.entries().map_err(io_err)?;
            names.sort();
            for name in names {
                let real_child = real.join(&name);
                match dir.stat(&name).map_err(io_err)?.kind {
                    Kind::Dir => pending.push((dir.open_dir(&name).map_err(io_err)?, real_child, depth + 1)),
                    Kind::Link => tree.links.push((real_child, dir.read_link(&name).map_err(io_err)?)),
                    Kind::File => {
                        let mut file = dir.open_read(&name).map_err(io_err)?;
                        let meta = file.metadata().map_err(io_err)?;
                        if tree.bytes() + meta.len() > limit {
                            return Err(Error::TooLarge {
                                path: self.shown.clone(),
                                size: None,
                                limit,
                                what: "what one session keeps for undo (delete smaller parts, or raise `max_undo_bytes`)",
                            });
                        }
                        let mut bytes = Vec::with_capacity(meta.len() as usize);
                        file.read_to_end(&mut bytes).map_err(io_err)?;
                        tree.files.push((real_child, bytes, handle::permission_bits(&meta)));
                    }
                    Kind::Other => {
                        return Err(Error::BadTarget {
                            path: self.shown.clone(),
                            problem: format!(
                                "holds `{}`, which is not a file, directory or symlink",
                                name.to_string_lossy()
                            ),
                        });
                    }
                }
            }
        }
        tree.dirs.sort();
        Ok(tree)
    }

    /// Removes the directory tree at the target (symlinks inside are removed, not followed).
    pub fn remove_tree(&self) -> Result<(), Error> {
        let io_err = |e| Error::io("remove", &self.shown, e);
        let top = self.dir.open_dir(&self.name).map_err(io_err)?;
        self.empty_dir(&top, 0)?;
        drop(top);
        self.dir.remove_dir(&self.name).map_err(io_err)
    }

    /// Removes everything in `dir`, depth first, through handles only.
    fn empty_dir(&self, dir: &DirHandle, depth: usize) -> Result<(), Error> {
        if depth > MAX_DEPTH {
            return Err(self.too_deep());
        }
        let io_err = |e| Error::io("remove", &self.shown, e);
        for name in dir.entries().map_err(io_err)? {
            let name: &OsStr = &name;
            if dir.stat(name).map_err(io_err)?.kind == Kind::Dir {
                self.empty_dir(&dir.open_dir(name).map_err(io_err)?, depth + 1)?;
                dir.remove_dir(name).map_err(io_err)?;
            } else {
                dir.remove_file(name).map_err(io_err)?;
            }
        }
        Ok(())
    }

    fn too_deep(&self) -> Error {
        Error::BadTarget {
            path: self.shown.clone(),
            problem: format!("nests directories more than {MAX_DEPTH} deep; remove its deepest parts first"),
        }
    }
}
