//! A path beneath a root as its bytes. Compared byte by byte (a `memcmp`, where a `Path`
//! compares component by component), which keeps a directory before what it holds and what
//! it holds in one range: from `dir/` to `dir0` (`0` follows `/`).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// A path beneath a root (empty: the root itself), `/`-separated.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Rel(Vec<u8>);

impl Rel {
    /// As a path.
    pub(super) fn as_path(&self) -> &Path {
        Path::new(OsStr::from_bytes(&self.0))
    }

    /// The entry `name` in this directory.
    pub(super) fn join(&self, name: &OsStr) -> Rel {
        let mut bytes = Vec::with_capacity(self.0.len() + 1 + name.len());
        if !self.0.is_empty() {
            bytes.extend_from_slice(&self.0);
            bytes.push(b'/');
        }
        bytes.extend_from_slice(name.as_bytes());
        Rel(bytes)
    }

    /// The directory it is in, unless that is the root.
    pub(super) fn parent(&self) -> Option<Rel> {
        let at = self.0.iter().rposition(|byte| *byte == b'/')?;
        Some(Rel(self.0[..at].to_vec()))
    }

    /// How many names deep it lies.
    pub(super) fn depth(&self) -> usize {
        if self.0.is_empty() { 0 } else { 1 + self.0.iter().filter(|byte| **byte == b'/').count() }
    }

    /// Whether it is `other` or holds it.
    pub(super) fn holds(&self, other: &Rel) -> bool {
        self.0.is_empty()
            || other.0 == self.0
            || (other.0.starts_with(&self.0) && other.0.get(self.0.len()) == Some(&b'/'))
    }

    /// What it holds lies in `start..end` of this order.
    pub(super) fn held_range(&self) -> (Rel, Rel) {
        let (mut start, mut end) = (self.0.clone(), self.0.clone());
        start.push(b'/');
        end.push(b'/' + 1);
        (Rel(start), Rel(end))
    }

    /// The part of it below `dir` (which holds it), as a path.
    pub(super) fn below(&self, dir: &Rel) -> &Path {
        let skip = if dir.0.is_empty() { 0 } else { (dir.0.len() + 1).min(self.0.len()) };
        Path::new(OsStr::from_bytes(&self.0[skip..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(text: &str) -> Rel {
        Rel::default().join(OsStr::new(text))
    }

    #[test]
    fn a_directory_comes_before_what_it_holds_which_lies_in_one_range() {
        let (dir, inside, beside) = (rel("a"), rel("a").join(OsStr::new("x")), rel("a.txt"));
        assert!(dir < inside && dir < beside);
        let (start, end) = dir.held_range();
        assert!(start <= inside && inside < end);
        assert!(!(start <= beside && beside < end), "`a.txt` sorts between `a` and `a/` but is not in `a`");
        assert!(dir.holds(&inside) && dir.holds(&dir) && !dir.holds(&beside));
        assert_eq!(inside.parent(), Some(dir.clone()));
        assert_eq!(dir.parent(), None);
        assert_eq!((Rel::default().depth(), dir.depth(), inside.depth()), (0, 1, 2));
        assert_eq!(inside.below(&dir), Path::new("x"));
        assert_eq!(inside.below(&Rel::default()), Path::new("a/x"));
    }
}
