//! Path confinement: every path a tool uses is resolved here against the roots, with `..`
//! folded, symlinks resolved, and containment checked component by component.

use std::path::{Component, Path, PathBuf};

use crate::error::ToolError;
use crate::sandbox::fs;

/// The canonical root directories of a session. Relative paths resolve against the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Roots {
    roots: Vec<PathBuf>,
}

/// A path that passed confinement: it exists, and its real location is inside a root.
/// Only this module creates one, so holding one proves the check was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    real: PathBuf,
    shown: String,
}

impl Resolved {
    /// The canonical path (no symlinks, no `..`).
    pub fn real(&self) -> &Path {
        &self.real
    }

    /// How to show the path to the model: relative to the first root when inside it.
    pub fn shown(&self) -> &str {
        &self.shown
    }
}

impl Roots {
    /// Wraps already-canonical roots (see `Config::resolve`). `roots` must not be empty.
    pub fn new(roots: Vec<PathBuf>) -> Self {
        Self { roots }
    }

    /// The roots in order.
    pub fn list(&self) -> &[PathBuf] {
        &self.roots
    }

    /// The root relative paths resolve against.
    pub fn first(&self) -> &Path {
        self.roots.first().map(PathBuf::as_path).unwrap_or(Path::new("/"))
    }

    /// Whether `path` (canonical) lies inside a root, comparing whole components.
    pub fn contains(&self, path: &Path) -> bool {
        self.roots.iter().any(|root| path.starts_with(root))
    }

    /// Resolves a path given by the model to an existing location inside the roots.
    pub fn resolve(&self, input: &str) -> Result<Resolved, ToolError> {
        let joined = self.first().join(input);
        let lexical = normalize(&joined);
        if !self.contains(&lexical) {
            return Err(self.outside(input));
        }
        let real = fs::canonicalize(&lexical).map_err(|err| ToolError::io("resolve", input, err))?;
        if !self.contains(&real) {
            return Err(ToolError::SymlinkEscape { path: input.to_string(), target: real, roots: self.joined() });
        }
        Ok(Resolved { shown: self.show(&real), real })
    }

    /// How to show an absolute path found inside the roots: relative to the first root when
    /// inside it (`.` for the root itself), else absolute.
    pub fn show(&self, path: &Path) -> String {
        match path.strip_prefix(self.first()) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string_lossy().into_owned(),
        }
    }

    /// The roots as a list for messages: "`/a`, `/b`".
    pub fn joined(&self) -> String {
        self.roots.iter().map(|r| format!("`{}`", r.display())).collect::<Vec<_>>().join(", ")
    }

    /// The error for a path outside every root.
    pub fn outside(&self, input: &str) -> ToolError {
        ToolError::OutsideRoots {
            path: input.to_string(),
            roots: self.joined(),
            first_root: self.first().display().to_string(),
        }
    }
}

/// Folds `.` and `..` without touching the filesystem; `..` never climbs above `/`.
pub(crate) fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::Prefix(_) | Component::RootDir => out.push(component.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn setup() -> (tempfile::TempDir, Roots, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/file.txt"), "x").unwrap();
        std::fs::create_dir_all(base.join("root-evil")).unwrap();
        std::fs::write(base.join("root-evil/secret"), "s").unwrap();
        std::fs::write(base.join("outside.txt"), "o").unwrap();
        std::os::unix::fs::symlink(base.join("outside.txt"), root.join("escape")).unwrap();
        std::os::unix::fs::symlink(root.join("sub/file.txt"), root.join("inside")).unwrap();
        std::os::unix::fs::symlink(base.join("root-evil"), root.join("sub/dirlink")).unwrap();
        (tmp, Roots::new(vec![root.clone()]), root)
    }

    #[test]
    fn resolves_relative_and_absolute_inside() {
        let (_tmp, roots, root) = setup();
        let r = roots.resolve("sub/file.txt").unwrap();
        assert_eq!((r.real(), r.shown()), (root.join("sub/file.txt").as_path(), "sub/file.txt"));
        let r = roots.resolve(root.join("sub/./file.txt").to_str().unwrap()).unwrap();
        assert_eq!(r.shown(), "sub/file.txt");
        assert_eq!(roots.resolve("").unwrap().shown(), ".");
        assert_eq!(roots.resolve("sub/..").unwrap().shown(), ".");
        assert_eq!(roots.resolve("inside").unwrap().shown(), "sub/file.txt");
    }

    #[test]
    fn refuses_dotdot_prefix_tricks_and_symlinks_out() {
        let (_tmp, roots, root) = setup();
        for bad in ["../outside.txt", "sub/../../outside.txt", "/etc/passwd"] {
            assert!(matches!(roots.resolve(bad), Err(ToolError::OutsideRoots { .. })), "{bad}");
        }
        // `/x/root-evil` shares a string prefix with `/x/root` but is not inside it.
        let evil = root.parent().unwrap().join("root-evil/secret");
        assert!(matches!(roots.resolve(evil.to_str().unwrap()), Err(ToolError::OutsideRoots { .. })));
        assert!(matches!(roots.resolve("escape"), Err(ToolError::SymlinkEscape { .. })));
        assert!(matches!(roots.resolve("sub/dirlink/secret"), Err(ToolError::SymlinkEscape { .. })));
        assert!(matches!(roots.resolve("missing"), Err(ToolError::NotFound { .. })));
    }

    #[test]
    fn normalize_folds_dots() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../..")), PathBuf::from("/"));
    }
}
