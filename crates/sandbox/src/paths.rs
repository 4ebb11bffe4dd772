//! Path confinement: every path a tool uses is resolved here against the roots, with `..`
//! folded, symlinks resolved, and containment checked component by component.

use std::path::{Component, Path, PathBuf};

use crate::Error;
use crate::fs;

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
    root: PathBuf,
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

    /// The root it lies in (the innermost, when roots nest): what its opens stay beneath.
    pub fn root(&self) -> &Path {
        &self.root
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

    /// Whether `path` (canonical) lies inside a root, comparing whole components (Windows:
    /// case-insensitively, as its file systems do).
    pub fn contains(&self, path: &Path) -> bool {
        self.roots.iter().any(|root| beneath(path, root))
    }

    /// Resolves a path given by the model to an existing location inside the roots.
    pub fn resolve(&self, input: &str) -> Result<Resolved, Error> {
        let joined = self.first().join(input);
        let lexical = normalize(&joined);
        windows_names(input, &lexical)?;
        if !self.contains(&lexical) {
            return Err(self.outside(input));
        }
        let real = fs::canonicalize(&lexical).map_err(|err| Error::io("resolve", input, err))?;
        if !self.contains(&real) {
            return Err(Error::SymlinkEscape { path: input.to_string(), target: real, roots: self.joined() });
        }
        let root = self.roots.iter().filter(|root| beneath(&real, root)).max_by_key(|root| root.as_os_str().len());
        let root = root.cloned().unwrap_or_else(|| real.clone());
        Ok(Resolved { shown: self.show(&real), real, root })
    }

    /// How to show an absolute path found inside the roots: relative to the first root when
    /// inside it (`.` for the root itself), else absolute.
    pub fn show(&self, path: &Path) -> String {
        if let Some(shown) = show_plain(path, self.first()) {
            return shown;
        }
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
    pub fn outside(&self, input: &str) -> Error {
        Error::OutsideRoots {
            path: input.to_string(),
            roots: self.joined(),
            first_root: self.first().display().to_string(),
        }
    }
}

/// [`Roots::show`] for the paths walks make (the root, a `/`, then plain names), by comparing
/// bytes: `None` for anything else, which the component-wise comparison then handles (a listing
/// shows every entry through here, and `strip_prefix` parses both paths each time).
fn show_plain(path: &Path, root: &Path) -> Option<String> {
    if !cfg!(unix) {
        return None;
    }
    let (path, root) = (path.as_os_str().as_encoded_bytes(), root.as_os_str().as_encoded_bytes());
    let rest = path.strip_prefix(root)?;
    let rest = if root.ends_with(b"/") { rest } else { rest.strip_prefix(b"/")? };
    if rest.is_empty() || rest.split(|&byte| byte == b'/').any(|name| name.is_empty() || name == b".") {
        return None;
    }
    Some(String::from_utf8_lossy(rest).into_owned())
}

/// Whether `path` is `root` or lies beneath it, by whole components (Windows: ignoring case).
fn beneath(path: &Path, root: &Path) -> bool {
    if cfg!(windows) {
        let fold =
            |p: &Path| p.components().map(|c| c.as_os_str().to_string_lossy().to_lowercase()).collect::<Vec<_>>();
        let (path, root) = (fold(path), fold(root));
        path.len() >= root.len() && path[..root.len()] == root[..]
    } else {
        path.starts_with(root)
    }
}

/// Names Windows would read as something else: an alternate data stream (`file.txt:stream`),
/// a device (`CON`, `NUL`, `COM1`, also with an extension), or a name whose trailing dots or
/// spaces Windows drops (so it names another file); and characters no Windows name may hold.
/// Checked on the lexical path (after the prefix) of every path a tool is given, on Windows.
pub(crate) fn windows_names(input: &str, lexical: &Path) -> Result<(), Error> {
    if !cfg!(windows) {
        return Ok(());
    }
    for component in lexical.components() {
        if let Component::Normal(name) = component
            && let Some(problem) = windows_name_problem(&name.to_string_lossy())
        {
            return Err(Error::BadTarget { path: input.to_string(), problem });
        }
    }
    Ok(())
}

/// What is wrong with `name` as a Windows file name, if anything (see [`windows_names`]).
fn windows_name_problem(name: &str) -> Option<String> {
    const DEVICES: &[&str] = &["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"];
    let stem = name.split('.').next().unwrap_or_default().trim_end().to_ascii_uppercase();
    let numbered = |prefix: &str| {
        stem.strip_prefix(prefix).is_some_and(|n| {
            let mut chars = n.chars();
            matches!((chars.next(), chars.next()), (Some('0'..='9' | '¹' | '²' | '³'), None))
        })
    };
    Some(if name.contains(':') {
        "names an alternate data stream (`name:stream`); give a plain file name".to_string()
    } else if DEVICES.contains(&stem.as_str()) || numbered("COM") || numbered("LPT") {
        format!("uses `{stem}`, a Windows device name; choose another name")
    } else if name.ends_with(['.', ' ']) {
        "ends with a dot or a space, which Windows drops (it would name another file)".to_string()
    } else if name.contains(['<', '>', '"', '|', '?', '*']) || name.chars().any(|c| c < ' ') {
        "holds a character Windows file names cannot (`<>\"|?*` or a control character)".to_string()
    } else {
        return None;
    })
}

/// Folds `.` and `..` without touching the filesystem; `..` never climbs above `/`.
pub fn normalize(path: &Path) -> PathBuf {
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
#[cfg(unix)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    pub(super) fn setup() -> (tempfile::TempDir, Roots, PathBuf) {
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
    fn showing_by_bytes_agrees_with_comparing_components() {
        let slow = |path: &str, root: &str| match Path::new(path).strip_prefix(root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".to_string(),
            Ok(rel) => rel.to_string_lossy().into_owned(),
            Err(_) => path.to_string(),
        };
        let cases = [
            ("/w/a.txt", "/w"),
            ("/w/src/lib.rs", "/w"),
            ("/w", "/w"),
            ("/w/", "/w"),
            ("/wx/a", "/w"),
            ("/w//a", "/w"),
            ("/w/./a", "/w"),
            ("/w/a/.", "/w"),
            ("/w/a/../b", "/w"),
            ("/w/..", "/w"),
            ("/a/b", "/"),
            ("/", "/"),
            ("/other/w/a", "/w"),
            ("/w/sp ace/ü.txt", "/w"),
        ];
        for (path, root) in cases {
            let roots = Roots::new(vec![PathBuf::from(root)]);
            assert_eq!(roots.show(Path::new(path)), slow(path, root), "`{path}` under `{root}`");
        }
        assert_eq!(show_plain(Path::new("/w/a/b"), Path::new("/w")).as_deref(), Some("a/b"), "the fast path is taken");
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
            assert!(matches!(roots.resolve(bad), Err(Error::OutsideRoots { .. })), "{bad}");
        }
        // `/x/root-evil` shares a string prefix with `/x/root` but is not inside it.
        let evil = root.parent().unwrap().join("root-evil/secret");
        assert!(matches!(roots.resolve(evil.to_str().unwrap()), Err(Error::OutsideRoots { .. })));
        assert!(matches!(roots.resolve("escape"), Err(Error::SymlinkEscape { .. })));
        assert!(matches!(roots.resolve("sub/dirlink/secret"), Err(Error::SymlinkEscape { .. })));
        assert!(matches!(roots.resolve("missing"), Err(Error::NotFound { .. })));
    }

    #[test]
    fn normalize_folds_dots() {
        assert_eq!(normalize(Path::new("/a/./b/../c")), PathBuf::from("/a/c"));
        assert_eq!(normalize(Path::new("/../..")), PathBuf::from("/"));
    }
}

/// Property tests (CI runs them with many more cases: `PROPTEST_CASES`; failing inputs are
/// kept under `proptest-regressions/`).
#[cfg(test)]
#[cfg(unix)]
#[allow(clippy::disallowed_methods)]
mod fuzz {
    use super::*;
    use proptest::prelude::*;

    /// The unit tests' root (symlinks in and out, a sibling sharing its prefix), with more
    /// symlinks climbing out.
    fn layout() -> (tempfile::TempDir, Roots, PathBuf) {
        let (tmp, roots, root) = super::tests::setup();
        std::fs::create_dir_all(root.join("sub/deeper")).unwrap();
        std::os::unix::fs::symlink("..", root.join("sub/up")).unwrap();
        std::os::unix::fs::symlink("../..", root.join("sub/upup")).unwrap();
        std::os::unix::fs::symlink("/", root.join("slash")).unwrap();
        (tmp, roots, root)
    }

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("..".to_string()),
            Just(".".to_string()),
            Just(String::new()),
            Just("sub".to_string()),
            Just("deeper".to_string()),
            Just("file.txt".to_string()),
            Just("escape".to_string()),
            Just("inside".to_string()),
            Just("dirlink".to_string()),
            Just("up".to_string()),
            Just("upup".to_string()),
            Just("slash".to_string()),
            Just("root-evil".to_string()),
            Just("secret".to_string()),
            Just("etc".to_string()),
            "[a-z~\\\\]{1,3}".prop_map(String::from),
        ]
    }

    proptest! {
        /// Whatever path the model gives, what resolves lies inside the root, symlinks and all.
        #[test]
        fn fuzz_resolved_paths_stay_inside(
            absolute in any::<bool>(),
            segments in proptest::collection::vec(segment(), 0..8),
        ) {
            let (_tmp, roots, root) = layout();
            let relative = segments.join("/");
            let input = if absolute { format!("{}/{relative}", root.display()) } else { relative };
            if let Ok(resolved) = roots.resolve(&input) {
                let real = resolved.real();
                prop_assert!(real.starts_with(&root), "`{}` resolved to `{}`", input, real.display());
                prop_assert_eq!(std::fs::canonicalize(real).unwrap(), real.to_path_buf());
                prop_assert_eq!(resolved.root(), root.as_path());
            }
        }
    }
}

#[cfg(test)]
mod windows_name_tests {
    use super::windows_name_problem as problem;

    #[test]
    fn names_windows_reads_as_something_else_are_refused() {
        for bad in [
            "a.txt:stream",
            "x::$DATA",
            "CON",
            "nul",
            "Aux.txt",
            "com1",
            "LPT9.log",
            "COM¹",
            "CONIN$",
            "trail.",
            "trail ",
            "a?b",
            "a*b",
            "a|b",
        ] {
            assert!(problem(bad).is_some(), "`{bad}` must be refused");
        }
        for good in ["a.txt", "console.log", "com10", "LPT", "nul_device.rs", ".gitignore", "con-fig", "a b.txt"] {
            assert_eq!(problem(good), None, "`{good}` is an ordinary name");
        }
    }
}
