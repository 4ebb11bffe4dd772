//! A still-running command's changes, taken out of its upper layer before they are judged.
//! The command keeps writing its upper layer while a live fold reads it, so judging that layer
//! and then copying from it would apply bytes nobody judged (a config swapped between the two,
//! a directory that gained a `.git` after it was listed). A live fold therefore first copies
//! what changed (every entry that differs from the real tree, every whiteout, every opaque
//! directory whole) into a snapshot in the stage's private directory, which no command can
//! reach, and then folds the snapshot as it would fold an ended command's layer: what is
//! judged is exactly what is applied. Entries that change again later are taken by a later
//! fold.

use std::ffi::OsStr;
use std::io;
use std::path::Path;
use std::time::SystemTime;

use rustix::fs::{FileType, Mode};

use super::fold::{MAX_DEPTH, changed};
use super::taken::{Again, Stamp, Taken, newer};
use super::tree;
use super::view::{Upper, upper_in};
use crate::handle::{DirHandle, Kind};

/// How a directory's entries are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The real tree has the directory: an entry is taken when it differs from the real one.
    Compare,
    /// It has not: every entry is taken.
    New,
    /// The directory replaces the real one whole (an opaque one, taken the first time): every
    /// entry is taken, even one taken before.
    Replace,
}

/// Copies the changes of the upper layer `upper` (over the root `real`) into the directory
/// `name` of `parent`, made when the first change is copied (a fold that finds nothing new
/// writes nothing), in the overlay's own format (whiteouts, opaque directories). What `taken`
/// says earlier folds took, and the command has not written since, is left out (what others
/// wrote there since stands); what the command removed of what they took, where the overlay
/// left no whiteout, is taken as a whiteout; a removal only while the real entry is still what
/// a fold put there. `taken` then holds what this take copied; `since` is when the fold began;
/// `last`: the command has ended. Returns whether the snapshot was made.
pub fn take(
    upper: &DirHandle,
    real: &DirHandle,
    (parent, name): (&DirHandle, &OsStr),
    taken: &mut Taken,
    (since, last): (SystemTime, bool),
) -> io::Result<bool> {
    let parent = Target { made: std::cell::OnceCell::from(parent.open_beneath(Path::new(""))?), parent: None };
    let into = Target { made: std::cell::OnceCell::new(), parent: Some((&parent, name, 0o700)) };
    Take { taken, since, last }.dir(upper, Some(real), &into, Path::new(""), 0, Scope::Compare)?;
    Ok(into.made().is_some())
}

/// A directory of the snapshot, made when the first change beneath it is copied: a directory
/// that holds no change and is as the real one is costs no `mkdir` and `rmdir` at each fold.
struct Target<'p> {
    made: std::cell::OnceCell<DirHandle>,
    /// Its parent, its name there, and its mode until it is final.
    parent: Option<(&'p Target<'p>, &'p OsStr, u32)>,
}

impl Target<'_> {
    /// The directory, made (with its parents) when it is not there yet.
    fn dir(&self) -> io::Result<&DirHandle> {
        if let Some(made) = self.made.get() {
            return Ok(made);
        }
        let Some((parent, name, mode)) = self.parent else { return Err(io::Error::other("a snapshot without a top")) };
        let parent = parent.dir()?;
        parent.create_dir(name)?;
        let _ = tree::set_mode(parent, name, mode | 0o700);
        let opened = parent.open_dir(name)?;
        Ok(self.made.get_or_init(|| opened))
    }

    /// The directory if it was made.
    fn made(&self) -> Option<&DirHandle> {
        self.made.get()
    }
}

struct Take<'a> {
    taken: &'a mut Taken,
    since: SystemTime,
    last: bool,
}

impl Take<'_> {
    /// What the command did to an entry a fold took before (in a directory that replaces the
    /// real one, every entry is taken as new).
    fn again(&mut self, scope: Scope, at: &Path, upper: &DirHandle, name: &OsStr) -> Again {
        if scope == Scope::Replace { Again::New } else { self.taken.again(at, upper, name, self.last) }
    }

    fn dir(
        &mut self,
        upper: &DirHandle,
        real: Option<&DirHandle>,
        into: &Target<'_>,
        rel: &Path,
        depth: usize,
        scope: Scope,
    ) -> io::Result<()> {
        let names = upper.entries()?;
        for name in &names {
            let (name, at) = (name.as_os_str(), rel.join(name));
            let real_kind = real.and_then(|r| r.stat(name).ok()).map(|s| s.kind);
            match upper_in(upper, name) {
                Upper::Absent => {}
                Upper::Whiteout => {
                    let again = self.again(scope, &at, upper, name);
                    if again == Again::Unchanged || (real_kind.is_none() && scope == Scope::Compare) {
                        continue;
                    }
                    let before = Stamp::of(upper, name);
                    // A real entry somebody wrote after the removal is theirs: kept (one a fold
                    // put there and nobody wrote since is the command's to remove).
                    let ours = real.is_some_and(|r| self.taken.real_is_ours(&at, r, name));
                    if real.is_none_or(|r| ours || newer(upper, r, name)) {
                        whiteout(into.dir()?, name)?;
                    }
                    self.taken.note(&at, before, upper, name, into.made(), self.since);
                }
                Upper::Dir { opaque } => {
                    self.subdir(upper, real, real_kind, into, name, &at, depth, (scope, opaque))?
                }
                Upper::Other(kind) => {
                    let again = self.again(scope, &at, upper, name);
                    let before = Stamp::of(upper, name);
                    let take = match again {
                        Again::Unchanged => false,
                        // Only the mode changed: not over what somebody wrote since.
                        Again::Mode => real.is_some_and(|r| self.taken.real_is_ours(&at, r, name)),
                        // Not over a real entry somebody changed after the command's write.
                        Again::New | Again::Changed => {
                            scope != Scope::Compare
                                || (changed(upper, name, real, real_kind, kind)
                                    && real
                                        .is_none_or(|r| newer(upper, r, name) || self.taken.real_is_ours(&at, r, name)))
                        }
                    };
                    if take {
                        copy_entry(upper, name, into.dir()?)?;
                        self.taken.note(&at, before, upper, name, into.made(), self.since);
                    } else if again == Again::Mode {
                        self.taken.note(&at, before, upper, name, None, self.since);
                    }
                }
            }
        }
        if scope == Scope::Compare && self.taken.holds_in(rel) {
            let names: std::collections::HashSet<&OsStr> = names.iter().map(|n| n.as_os_str()).collect();
            self.removed(&names, real, into, rel)?;
        }
        Ok(())
    }

    /// Takes the upper directory `name` (at `at`); `scope` is its parent's, `opaque` its own.
    #[allow(clippy::too_many_arguments)]
    fn subdir(
        &mut self,
        upper: &DirHandle,
        real: Option<&DirHandle>,
        real_kind: Option<Kind>,
        into: &Target<'_>,
        name: &OsStr,
        at: &Path,
        depth: usize,
        (scope, opaque): (Scope, bool),
    ) -> io::Result<()> {
        let Ok(inner) = upper.open_dir(name) else { return Ok(()) };
        // An opaque directory replaces the real one the first time; once taken, what others
        // put in it since stands, and it is compared like any other.
        let again = scope != Scope::Replace && self.taken.same_dir(at, upper, name);
        let replaces = scope == Scope::Replace || (opaque && !again);
        let upper_mode = tree::mtime_and_mode(upper, name).ok().map(|(_, mode)| mode);
        // A mode the command left as a fold took it is not applied again over the real one's
        // (somebody may have changed that since).
        let real_mode = real.filter(|_| real_kind == Some(Kind::Dir)).and_then(|r| tree::mtime_and_mode(r, name).ok());
        let real_mode = real_mode.map(|(_, mode)| mode);
        let keep_real_mode = real_mode.is_some() && !replaces && self.taken.mode_kept(at, upper, name);
        let unchanged_mode = keep_real_mode || (upper_mode.is_some() && upper_mode == real_mode);
        // One taken before that others removed since is not made again unless the command
        // wrote beneath it.
        let removed_by_others = real_kind.is_none() && again;
        // A directory that is a change itself is made at once; one that holds no change and is
        // as the real one is (or was removed by others) only when something beneath it is.
        let itself = replaces || !(unchanged_mode || removed_by_others);
        let copy = Target { made: std::cell::OnceCell::new(), parent: Some((into, name, upper_mode.unwrap_or(0o700))) };
        if itself {
            let made = copy.dir()?;
            if replaces && opaque {
                mark_opaque(made)?;
            }
        }
        // One level past the deepest applied, so the fold sees what it refuses.
        if depth > MAX_DEPTH {
            return copy.dir().map(|_| ());
        }
        let real_inner =
            if real_kind == Some(Kind::Dir) && !replaces { real.and_then(|r| r.open_dir(name).ok()) } else { None };
        let inner_scope = match (replaces, &real_inner) {
            (true, _) => Scope::Replace,
            (false, None) => Scope::New,
            (false, Some(_)) => Scope::Compare,
        };
        self.dir(&inner, real_inner.as_ref(), &copy, at, depth + 1, inner_scope)?;
        if copy.made().is_none() {
            return Ok(());
        }
        let mode = if keep_real_mode { real_mode } else { upper_mode };
        if let Some(mode) = mode {
            let _ = tree::set_mode(into.dir()?, name, mode);
        }
        let stamp = Stamp::of(upper, name);
        self.taken.note(at, stamp, upper, name, Some(into.dir()?), self.since);
        Ok(())
    }

    /// Whiteouts for what earlier folds took into the real directory `rel` that the command
    /// has removed since without the overlay leaving a whiteout (it made the directory, so
    /// the overlay sees nothing beneath it to hide): absent from the upper directory's `names`.
    fn removed(
        &mut self,
        names: &std::collections::HashSet<&OsStr>,
        real: Option<&DirHandle>,
        into: &Target<'_>,
        rel: &Path,
    ) -> io::Result<()> {
        let Some(real) = real else { return Ok(()) };
        for name in real.entries()? {
            let at = rel.join(&name);
            if names.contains(name.as_os_str()) || !self.taken.has(&at) {
                continue;
            }
            // What a fold put there and somebody wrote since is theirs: kept.
            if self.taken.real_is_ours(&at, real, &name) {
                whiteout(into.dir()?, &name)?;
            }
            self.taken.forget(&at);
        }
        Ok(())
    }
}

/// Copies one non-directory entry; one that vanished or changed kind meanwhile is left for a
/// later fold.
fn copy_entry(upper: &DirHandle, name: &OsStr, into: &DirHandle) -> io::Result<()> {
    match tree::copy(upper, name, into, name) {
        Ok(()) => Ok(()),
        Err(err) if matches!(err.kind(), io::ErrorKind::NotFound | io::ErrorKind::AlreadyExists) => {
            let _ = tree::remove(into, name);
            Ok(())
        }
        Err(err) if err.raw_os_error() == Some(rustix::io::Errno::ISDIR.raw_os_error()) => Ok(()),
        Err(err) => Err(err),
    }
}

/// A whiteout (a character device 0:0, which the kernel lets anyone make) at `name`.
fn whiteout(dir: &DirHandle, name: &OsStr) -> io::Result<()> {
    Ok(rustix::fs::mknodat(dir.fd(), name, FileType::CharacterDevice, Mode::empty(), 0)?)
}

/// Marks the directory `dir` opaque, as overlayfs does in `userxattr` mode.
fn mark_opaque(dir: &DirHandle) -> io::Result<()> {
    Ok(rustix::fs::fsetxattr(dir.fd(), "user.overlay.opaque", b"y", rustix::fs::XattrFlags::empty())?)
}
