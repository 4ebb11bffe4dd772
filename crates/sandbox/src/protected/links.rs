//! Where a symlink a command made leads: a program the user runs later writes through it
//! (`git format-patch` writes `0001-<subject>.patch` where it stands, a shell's `>` follows
//! it, an editor saves through it), so a link must not lead to what is code-bearing. Where it
//! leads is found the way the kernel will find it, in the tree as the fold leaves it: each
//! symlink on the way followed before the `..` after it. A link that leads through a directory
//! not made yet is refused (what is made there later would decide where it leads), and so is
//! one beyond the roots to a directory the server can write (everything beneath it would be
//! reachable): every later link is judged when it is made, so no chain of them gets further.

use std::ffi::OsString;
use std::path::{Component, Path, PathBuf};

use crate::handle::Kind;
use crate::protected::gitdir::{self, View};

/// Most symlinks followed on the way (the kernel's own limit).
const MAX_HOPS: usize = 40;
/// Entries a directory replaced by a symlink may hold for the fold to look through them.
const MAX_LOOKED_AT: usize = 2000;

/// Where a link is, and what the fold knows around it.
pub struct Site<'a> {
    /// The root (absolute).
    pub root: &'a Path,
    /// The tree beneath it as the fold leaves it.
    pub view: &'a dyn View,
    /// The home directory.
    pub home: Option<&'a Path>,
    /// Why a path (absolute) is code-bearing by name or place (the fold's rules).
    pub by_name: &'a dyn Fn(&Path) -> Option<String>,
    /// The places protected by where they are, not by name (absolute): those the environment
    /// names, the targets of the home's own links, the paths git configs name, the server's
    /// own. A link to a directory holding one makes it reachable by another name.
    pub places: &'a [PathBuf],
}

/// Where a path leads.
#[derive(Debug, PartialEq, Eq)]
enum Leads {
    /// Beneath the root (relative to it), with what is there.
    Inside(PathBuf, Option<Kind>),
    /// Beyond the root, where it really lies (as far as it exists).
    Outside(PathBuf),
    /// Through a directory that does not exist yet (the path as written from there).
    Unmade(PathBuf),
    /// Round in a loop, or through more than [`MAX_HOPS`] links: nothing can be written.
    Nowhere,
    /// Through `/proc` (`/proc/self/cwd`, `/dev/fd`, `/dev/stdout` lead there): somewhere
    /// different for each process that follows it, so nowhere this judgement can know.
    Reader(PathBuf),
}

/// Why the symlink at `link` (relative to the root) pointing at `target` is refused, if it
/// is. A `..` after a name is refused: whether that name stays a directory or becomes a link
/// decides where it climbs to, and that can change after this judgement. `replaced`: it took
/// the place of a directory or of another link, so links made earlier through that place now
/// lead into what it points at.
pub fn refusal(site: &Site<'_>, link: &Path, target: &Path, replaced: bool) -> Option<String> {
    let from = link.parent().unwrap_or(Path::new(""));
    let mut named = false;
    for component in target.components() {
        match component {
            Component::Normal(_) => named = true,
            Component::ParentDir if named => {
                return Some(format!(
                    "a symlink a program you run later writes through: its target `{}` has a `..` after a name, so where it leads depends on whether that name stays a directory or becomes a link later (write the target without it)",
                    target.display()
                ));
            }
            _ => {}
        }
    }
    let why = match resolve(site, from, target) {
        Leads::Nowhere => return None,
        Leads::Unmade(rest) => format!(
            "it leads through `{}`, which does not exist yet: what is made there later would decide where it leads",
            rest.display()
        ),
        Leads::Inside(rel, kind) => {
            let real = site.root.join(&rel);
            let why = inside(site, link, &real, &rel, kind, replaced)?;
            format!("it leads to `{}` ({why})", real.display())
        }
        Leads::Reader(through) => format!(
            "it leads through `{}`, which means something different to each process that follows it (`/proc/self` is whoever writes through the link, its cwd the user's), so where it leads cannot be known",
            through.display()
        ),
        Leads::Outside(real) => {
            let why = outside(site, link, &real)?;
            format!("it leads to `{}` beyond the root ({why})", real.display())
        }
    };
    Some(format!(
        "a symlink a program you run later writes through (`git format-patch`, a shell's `>`, an editor): {why}"
    ))
}

/// Why a link to `real` (`rel` beneath the root) is refused: code-bearing by name or place,
/// or, when it replaced a directory or a link, a directory holding a repository or a
/// protected place.
fn inside(site: &Site<'_>, link: &Path, real: &Path, rel: &Path, kind: Option<Kind>, replaced: bool) -> Option<String> {
    let by_rules = crate::protected::in_dot_git(real)
        .map(|protection| protection.why().to_string())
        .or_else(|| (site.by_name)(real))
        .or_else(|| crate::protected::judge_write(&[site.root.to_path_buf()], real, site.home).map(str::to_string));
    if by_rules.is_some() || kind != Some(Kind::Dir) {
        return by_rules;
    }
    if link.starts_with(rel) {
        return Some("a directory above the link: paths through it reach whatever the root holds".into());
    }
    if site.view.kind(&rel.join("HEAD")).is_some() {
        return Some("a git dir: its hooks and config would be reachable by another name".into());
    }
    if let Some(place) = site.places.iter().find(|place| place.starts_with(real)) {
        return Some(format!("it holds `{}`, protected where it lies", place.display()));
    }
    if !replaced {
        return None;
    }
    holds_protected(site, rel)
}

/// Why a directory (relative to the root) may not stand where another was: it holds a
/// repository, or something code-bearing by place, within [`MAX_LOOKED_AT`] entries.
fn holds_protected(site: &Site<'_>, rel: &Path) -> Option<String> {
    let mut pending = vec![rel.to_path_buf()];
    let mut looked_at = 0;
    while let Some(dir) = pending.pop() {
        for (name, kind) in site.view.entries(&dir) {
            looked_at += 1;
            if looked_at > MAX_LOOKED_AT {
                return Some(format!("it holds more than {MAX_LOOKED_AT} entries, too many to look through"));
            }
            let path = dir.join(&name);
            if name == "HEAD" {
                return Some(format!("`{}` holds a repository", dir.display()));
            }
            if let Some(why) = (site.by_name)(&site.root.join(&path)) {
                return Some(format!("`{}`: {why}", path.display()));
            }
            if kind == Kind::Dir {
                pending.push(path);
            }
        }
    }
    None
}

/// Why a link at `link` to `real` beyond the root is refused: a git dir's code, a
/// code-bearing path (but an existing program the link is named after: a venv's
/// `bin/python -> …/python3.12`), a directory the server can write (outside the temp dirs),
/// or a file beyond the user's own files the server can write.
fn outside(site: &Site<'_>, link: &Path, real: &Path) -> Option<String> {
    if crate::protected::in_dot_git(real).is_some() || in_git_dir(real) {
        return Some("it lies in a git dir, where git reads config and runs hooks".into());
    }
    // `python -> python3.12`, `pip -> pip3`: the program's own name, or it with a version.
    let named_after = link.file_name().zip(real.file_name()).is_some_and(|(link, real)| {
        let (link, real) = (link.to_string_lossy(), real.to_string_lossy());
        real.strip_prefix(&*link).is_some_and(|version| version.chars().all(|c| c.is_ascii_digit() || c == '.'))
    });
    let program = named_after && crate::fs::is_program(real) && crate::protected::classify_rule(real, None).is_none();
    if let Some(why) = (site.by_name)(real).filter(|_| !program) {
        return Some(why);
    }
    // The temp dirs hold no one's configuration (but a home directory placed there).
    let home = site.home.is_some_and(|home| real.starts_with(home) || home.starts_with(real));
    let temp = temp_dirs().iter().any(|dir| real.starts_with(dir)) && !home;
    if site.root.starts_with(real) {
        return Some("a directory above the root: paths through it reach whatever the root holds".into());
    }
    if let Some(place) = site.places.iter().find(|place| place.starts_with(real)) {
        return Some(format!("it holds `{}`, protected where it lies", place.display()));
    }
    if crate::fs::is_dir(real) && !temp && writable(real) {
        return Some(
            "a directory the server can write: everything beneath it would be reachable through the link".into(),
        );
    }
    if !program && !home && !temp && writable(real) {
        return Some(
            "beyond your own files, where the system and other users' programs read what is written, and the server could write there"
                .into(),
        );
    }
    None
}

/// Where `target`, written in a link in `from` (relative to the root), leads.
fn resolve(site: &Site<'_>, from: &Path, target: &Path) -> Leads {
    let mut at: Vec<OsString> = Vec::new();
    let mut pending: Vec<OsString> = Vec::new();
    let mut hops = 0;
    if !start(site.root, from, target, &mut at, &mut pending) {
        return outside_at(site.root, target);
    }
    while let Some(name) = pending.pop() {
        if name == "." {
            continue;
        }
        if name == ".." {
            if at.pop().is_none() {
                let above = site.root.parent().unwrap_or(site.root).to_path_buf();
                return outside_at(site.root, &pending.iter().rev().fold(above, |path, name| path.join(name)));
            }
            continue;
        }
        at.push(name);
        let rel: PathBuf = at.iter().collect();
        match site.view.kind(&rel) {
            Some(Kind::Link) => {
                hops += 1;
                let Some(next) = site.view.link(&rel).filter(|_| hops <= MAX_HOPS) else { return Leads::Nowhere };
                at.pop();
                let from: PathBuf = at.iter().collect();
                let rest: Vec<OsString> = std::mem::take(&mut pending);
                at.clear();
                if !start(site.root, &from, &next, &mut at, &mut pending) {
                    let whole = rest.iter().rev().fold(next.clone(), |path, name| path.join(name));
                    return outside_at(site.root, &whole);
                }
                // What came after the link goes on from where it led.
                let mut rest = rest;
                rest.append(&mut pending);
                pending = rest;
            }
            Some(kind) if pending.is_empty() => return Leads::Inside(rel, Some(kind)),
            Some(Kind::Dir) => {}
            Some(_) | None if pending.iter().any(|name| name != ".") => {
                let rest = pending.iter().rev().fold(rel, |path, name| path.join(name));
                return Leads::Unmade(rest);
            }
            kind => return Leads::Inside(rel, kind),
        }
    }
    Leads::Inside(at.iter().collect(), Some(Kind::Dir))
}

/// Sets `at` and `pending` to begin resolving `target` (written in `from`): `false` when it
/// is absolute and beyond the root.
fn start(root: &Path, from: &Path, target: &Path, at: &mut Vec<OsString>, pending: &mut Vec<OsString>) -> bool {
    let names = |path: &Path| -> Vec<OsString> {
        path.components()
            .filter_map(|component| match component {
                Component::Normal(name) => Some(name.to_os_string()),
                Component::ParentDir => Some(OsString::from("..")),
                Component::CurDir => Some(OsString::from(".")),
                Component::RootDir | Component::Prefix(_) => None,
            })
            .collect()
    };
    if target.is_absolute() {
        let Ok(rel) = target.strip_prefix(root) else { return false };
        *pending = names(rel).into_iter().rev().collect();
    } else {
        *at = names(from);
        *pending = names(target).into_iter().rev().collect();
    }
    true
}

/// Where `path` (absolute, beyond the root or above it) really lies, as far as it exists;
/// beneath the root again when it leads back there.
fn outside_at(root: &Path, path: &Path) -> Leads {
    if let Some(through) = through_proc(path) {
        return Leads::Reader(through);
    }
    let real = crate::protected::places::real_as_far_as_it_exists(path).unwrap_or_else(|| path.to_path_buf());
    match real.strip_prefix(root) {
        Ok(rel) => {
            let root = crate::handle::DirHandle::open(root).ok();
            let kind = root.and_then(|dir| crate::protected::view::kind_at(&dir, rel));
            Leads::Inside(rel.to_path_buf(), kind)
        }
        Err(_) => Leads::Outside(real),
    }
}

/// The first place on the way to `path` (absolute), each symlink followed as the kernel
/// follows it, that lies in `/proc`: its meaning there depends on the process that follows it
/// (`/proc/self`, `/proc/thread-self`, a pid's `cwd`, `root` or `fd`), so the judge's own view
/// of it says nothing of where the user's program will land.
fn through_proc(path: &Path) -> Option<PathBuf> {
    let proc = Path::new("/proc");
    let mut at = PathBuf::from("/");
    let mut pending: Vec<PathBuf> = path.components().rev().map(|c| PathBuf::from(c.as_os_str())).collect();
    let mut hops = 0;
    while let Some(next) = pending.pop() {
        match next.to_str() {
            Some("/") => at = PathBuf::from("/"),
            Some(".") => {}
            Some("..") => {
                at.pop();
            }
            _ => {
                let here = at.join(&next);
                if here.starts_with(proc) {
                    return Some(here);
                }
                match crate::fs::read_link(&here) {
                    Ok(target) if hops < MAX_HOPS => {
                        hops += 1;
                        pending.extend(target.components().rev().map(|c| PathBuf::from(c.as_os_str())));
                    }
                    _ => at = here,
                }
            }
        }
    }
    None
}

/// Whether `path` lies where a git dir beyond the roots reads config or runs hooks: beneath a
/// directory holding `HEAD`, in one of its code-bearing entries (`hooks/`, `config`, …).
fn in_git_dir(path: &Path) -> bool {
    path.ancestors().skip(1).any(|dir| {
        crate::fs::is_file(&dir.join("HEAD"))
            && path
                .strip_prefix(dir)
                .ok()
                .and_then(|inner| inner.components().next())
                .is_some_and(|first| gitdir::CODE_ENTRIES.iter().any(|entry| first.as_os_str() == *entry))
    })
}

/// The temp dirs: what is written there is no one's configuration.
pub fn temp_dirs() -> [PathBuf; 3] {
    [std::env::temp_dir(), PathBuf::from("/tmp"), PathBuf::from("/var/tmp")]
}

/// Whether this process could write `path`, or create it (its nearest existing ancestor).
fn writable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        let existing = path.ancestors().find(|dir| rustix::fs::access(*dir, rustix::fs::Access::EXISTS).is_ok());
        existing.is_some_and(|dir| rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok())
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        true
    }
}

#[cfg(test)]
#[cfg(unix)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::protected::view::Real;

    struct Fixture {
        _scratch: tempfile::TempDir,
        home: PathBuf,
        root: PathBuf,
    }

    fn fixture() -> Fixture {
        let scratch = tempfile::tempdir().unwrap();
        let home = scratch.path().canonicalize().unwrap().join("home");
        let root = home.join("proj");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::create_dir_all(root.join("x/y")).unwrap();
        std::fs::create_dir_all(home.join(".vim/plugin")).unwrap();
        std::fs::write(home.join(".bashrc"), "# rc\n").unwrap();
        let python = home.join(".local/share/uv/python/bin/python3.12");
        std::fs::create_dir_all(python.parent().unwrap()).unwrap();
        std::fs::write(&python, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        Fixture { _scratch: scratch, home, root }
    }

    fn judge(fixture: &Fixture, link: &str, target: &str) -> Option<String> {
        let home = fixture.home.clone();
        let by_name = move |path: &Path| {
            crate::protected::classify_rule(path, Some(&home)).map(|(protection, _)| protection.why().to_string())
        };
        let view = Real::new(crate::handle::DirHandle::open(&fixture.root).unwrap());
        let site = Site { root: &fixture.root, view: &view, home: Some(&fixture.home), by_name: &by_name, places: &[] };
        refusal(&site, Path::new(link), Path::new(target), false)
    }

    #[test]
    fn a_link_into_configuration_is_refused_and_one_to_a_program_or_data_passes() {
        let f = fixture();
        let python = f.home.join(".local/share/uv/python/bin/python3.12");
        for (link, target) in [
            ("0001-Fix-typo.patch", "../.bashrc"),
            ("0001-Fix-typo.patch", f.home.join(".bashrc").to_str().unwrap()),
            ("deep/out.txt", "../../.config/fish/config.fish"),
            ("hook.patch", ".git/hooks/pre-commit"),
            ("x/hook.patch", "../.git/hooks/post-checkout"),
            ("cfg", "../.ssh/authorized_keys"),
            ("homedir", ".."),
            ("fix.patch", python.to_str().unwrap()),
        ] {
            assert!(judge(&f, link, target).is_some(), "{link} -> {target}");
        }
        let elsewhere = tempfile::tempdir().unwrap();
        for (link, target) in [
            (".venv/bin/python", python.to_str().unwrap()),
            ("notes.md", "../notes.md"),
            ("build", elsewhere.path().to_str().unwrap()),
            ("src/lib.rs", "../README.md"),
            ("loop", "loop"),
        ] {
            assert_eq!(judge(&f, link, target), None, "{link} -> {target}");
        }
    }

    #[test]
    fn a_link_is_followed_before_the_dots_after_it() {
        let f = fixture();
        // `d -> x/y`: `d/..` is `x`, not the root.
        std::os::unix::fs::symlink("x/y", f.root.join("d")).unwrap();
        std::os::unix::fs::symlink("../../../.vim/plugin", f.root.join("x/y/up")).unwrap();
        let why = judge(&f, "0001.patch", "d/up/fix.vim").unwrap();
        assert!(why.contains(".vim/plugin/fix.vim"), "{why}");
        // A `..` after a name: refused whatever it leads to now (the name may become a link).
        let why = judge(&f, "0002.patch", "d/../../notes.md").unwrap();
        assert!(why.contains("after a name"), "{why}");
        assert!(judge(&f, "0003.patch", "x/../notes.md").is_some());
        assert!(judge(&f, "0004.patch", "../notes.md").is_none());
    }

    #[test]
    fn only_a_link_named_after_its_program_counts_as_one() {
        let f = fixture();
        let python = f.home.join(".local/share/uv/python/bin/python3.12");
        for (link, ok) in
            [(".venv/bin/python", true), (".venv/bin/python3", true), (".venv/bin/p", false), (".venv/bin/py", false)]
        {
            assert_eq!(judge(&f, link, python.to_str().unwrap()).is_none(), ok, "{link}");
        }
    }

    #[test]
    fn a_link_through_proc_is_refused_whatever_the_judge_sees_there() {
        let f = fixture();
        // `/proc/self/cwd` is the cwd of whoever writes through the link (the user's program
        // in the root), not the judge's; `/dev/fd` and `/dev/stdout` lead into `/proc/self`.
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/proc/self/cwd", elsewhere.path().join("here")).unwrap();
        let via = elsewhere.path().join("here/bashrc");
        for target in [
            "/proc/self/cwd/bashrc",
            "/proc/thread-self/cwd/tools/mytool",
            "/proc/1/root/etc/x",
            "/dev/fd/3/bashrc",
            "/dev/stdout",
            "../../../../../../../../proc/self/cwd/bashrc",
            via.to_str().unwrap(),
        ] {
            let why = judge(&f, "0001-Update-notes.patch", target).unwrap_or_default();
            assert!(why.contains("/proc") && why.contains("cannot be known"), "{target}: {why}");
        }
        assert_eq!(judge(&f, "build", elsewhere.path().to_str().unwrap()), None);
    }

    #[test]
    fn a_link_through_a_directory_not_made_yet_is_refused() {
        let f = fixture();
        let why = judge(&f, "0001-Add-later.patch", "u2/.vim/plugin/later.vim").unwrap();
        assert!(why.contains("does not exist yet"), "{why}");
        assert_eq!(judge(&f, "new.txt", "x/y/new.txt"), None, "only the last name missing");
    }

    #[test]
    fn a_directory_replaced_by_a_link_to_one_holding_a_repository_is_refused() {
        let f = fixture();
        std::fs::create_dir_all(f.root.join("vendor/lib.git")).unwrap();
        std::fs::write(f.root.join("vendor/lib.git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let home = f.home.clone();
        let by_name = move |path: &Path| {
            crate::protected::classify_rule(path, Some(&home)).map(|(protection, _)| protection.why().to_string())
        };
        let view = Real::new(crate::handle::DirHandle::open(&f.root).unwrap());
        let site = Site { root: &f.root, view: &view, home: Some(&f.home), by_name: &by_name, places: &[] };
        assert!(refusal(&site, Path::new("x"), Path::new("vendor"), true).is_some());
        assert!(refusal(&site, Path::new("x"), Path::new("vendor"), false).is_none());
        // A fresh link to the repository itself, or to a directory above it.
        assert!(refusal(&site, Path::new("x"), Path::new("vendor/lib.git"), false).is_some());
        assert!(refusal(&site, Path::new("notes/cur"), Path::new(".."), false).is_some());
        assert!(refusal(&site, Path::new("notes/cur"), Path::new("../.."), false).is_some());
        // A directory holding a place protected where it lies.
        let places = [f.root.join("dotfiles/bashrc")];
        std::fs::create_dir_all(f.root.join("dotfiles")).unwrap();
        let site = Site { places: &places, ..site };
        assert!(refusal(&site, Path::new("notes/cur"), Path::new("../dotfiles"), false).is_some());
    }
}
