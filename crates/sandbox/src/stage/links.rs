//! Where a symlink a command made leads: a program the user runs later writes through it
//! (`git format-patch` writes `0001-<subject>.patch` where it stands, a shell's `>` follows
//! it, an editor saves through it), so a link must not lead to what is code-bearing: a
//! protected path in the roots (a hook, a config), and beyond the roots the user's own
//! configuration (shell startup files, dot-directories of the home), a place the environment
//! names, the server's own files, or, beyond the user's own files, a place the server can
//! write (`/etc/profile.d` for a root server).

use std::path::{Path, PathBuf};

/// Why a symlink at `link` (absolute, beneath `root`) pointing at `target` (its text) is
/// refused, if it is. `by_name` judges a path by name and place (the fold's rules) and
/// `home` is the home directory.
///
/// An existing program is not refused (a venv's `bin/python -> /usr/bin/python3`, or into
/// uv's or pyenv's interpreters in the home): nothing writes to a program's name but an
/// installer, and an installer replaces the link.
pub fn refusal(
    root: &Path,
    link: &Path,
    target: &Path,
    home: Option<&Path>,
    by_name: impl Fn(&Path) -> Option<String>,
) -> Option<String> {
    let written = if target.is_absolute() { target.to_path_buf() } else { link.parent()?.join(target) };
    let lexical = crate::paths::normalize(&written);
    let real = crate::protected::places::real_as_far_as_it_exists(&lexical).unwrap_or(lexical);
    if crate::fs::is_program(&real) {
        return None;
    }
    let why = crate::protected::in_dot_git(&real)
        .map(|protection| protection.why().to_string())
        .or_else(|| by_name(&real))
        .or_else(|| {
            real.starts_with(root)
                .then(|| crate::protected::judge_write(&[root.to_path_buf()], &real, home).map(str::to_string))
                .flatten()
        })
        .or_else(|| (!real.starts_with(root) && beyond_the_user(&real, home) && writable(&real)).then(|| {
            "it lies beyond your own files, where the system and other users' programs read what is written, and the server could write there".to_string()
        }))?;
    Some(format!(
        "a symlink to `{}`: a program you run later writes through it (`git format-patch`, a shell's `>`, an editor) into what is code-bearing ({why})",
        real.display()
    ))
}

/// Whether `path` lies anywhere but the home directory and the temp dirs.
fn beyond_the_user(path: &Path, home: Option<&Path>) -> bool {
    let temps = [std::env::temp_dir(), PathBuf::from("/tmp"), PathBuf::from("/var/tmp")];
    let home = home.filter(|home| home.is_absolute() && *home != Path::new("/"));
    !(home.is_some_and(|home| path.starts_with(home)) || temps.iter().any(|dir| path.starts_with(dir)))
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
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn judge(root: &Path, link: &str, target: &str, home: &Path) -> Option<String> {
        let by_name = |path: &Path| {
            crate::protected::classify_rule(path, Some(home)).map(|(protection, _)| protection.why().to_string())
        };
        refusal(root, &root.join(link), Path::new(target), Some(home), by_name)
    }

    #[test]
    fn a_link_to_configuration_is_refused_and_one_to_a_program_or_data_passes() {
        let scratch = tempfile::tempdir().unwrap();
        let home = scratch.path().join("home");
        let root = home.join("proj");
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(home.join(".bashrc"), "# rc\n").unwrap();
        let python = home.join(".local/share/uv/python/bin/python3.12");
        std::fs::create_dir_all(python.parent().unwrap()).unwrap();
        std::fs::write(&python, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&python, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();

        for (link, target) in [
            ("0001-Fix-typo.patch", "../.bashrc"),
            ("0001-Fix-typo.patch", home.join(".bashrc").to_str().unwrap()),
            ("deep/out.txt", "../../.config/fish/config.fish"),
            ("hook.patch", ".git/hooks/pre-commit"),
            ("sub/hook.patch", "../.git/hooks/post-checkout"),
            ("cfg", "../.ssh/authorized_keys"),
        ] {
            assert!(judge(&root, link, target, &home).is_some(), "{link} -> {target}");
        }
        for (link, target) in [
            (".venv/bin/python", python.to_str().unwrap()),
            ("notes.md", "../notes.md"),
            ("build", "/tmp/build-cache"),
            ("src/lib.rs", "../README.md"),
        ] {
            assert_eq!(judge(&root, link, target, &home), None, "{link} -> {target}");
        }
    }
}
