//! Which workspace todo lists and memories belong to, so that it means the same on every
//! machine: a name given (`--workspace`), else the first root's git remote (normalised, so
//! `git@host:a/b.git` and `https://host/a/b` are one workspace; a root below the repository's
//! top adds its relative path), else the first root's path. Read once per root and process.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex, PoisonError};

use toolbelt_mcp_sandbox::fs;

/// How many parent directories are searched for the repository's `.git`.
const MAX_DEPTH: usize = 64;

/// The workspace of a root, and the key it had before remotes were used (its path), whose
/// records are adopted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The key records are kept under.
    pub key: String,
    /// The first root's path, when the key is something else.
    pub adopts: Option<String>,
}

/// The identities found so far, by the name given and the root.
type Known = HashMap<(Option<String>, PathBuf), Identity>;

static KNOWN: LazyLock<Mutex<Known>> = LazyLock::new(Mutex::default);

/// The workspace of `first_root`, or the one `named` (cached: a remote changed later takes
/// effect at the next start, so a running server's records never split).
pub fn identity(named: Option<&str>, first_root: &Path) -> Identity {
    let cache_key = (named.map(str::to_string), first_root.to_path_buf());
    if let Some(known) = KNOWN.lock().unwrap_or_else(PoisonError::into_inner).get(&cache_key) {
        return known.clone();
    }
    let path = first_root.display().to_string();
    let key = named.map(str::to_string).or_else(|| remote_key(first_root)).unwrap_or_else(|| path.clone());
    let adopts = (key != path).then_some(path);
    let identity = Identity { key, adopts };
    KNOWN.lock().unwrap_or_else(PoisonError::into_inner).insert(cache_key, identity.clone());
    identity
}

/// `host/owner/repo` (and `:sub/dir` for a root below the top) from the repository's remote
/// `origin`, or its first remote; none for a root outside a repository, without a remote, or
/// whose remote is a local path.
fn remote_key(root: &Path) -> Option<String> {
    let (top, git) = find_git(root)?;
    let config = fs::read_small_text(&common_dir(&git).join("config")).ok()?;
    let remote = normalize(&remote_url(&config)?)?;
    let below = root.strip_prefix(&top).ok().filter(|rel| !rel.as_os_str().is_empty());
    Some(match below {
        Some(rel) => format!("{remote}:{}", rel.to_string_lossy().replace('\\', "/")),
        None => remote,
    })
}

/// The repository's top directory and its git dir, searching up from `root`.
fn find_git(root: &Path) -> Option<(PathBuf, PathBuf)> {
    root.ancestors().take(MAX_DEPTH).find_map(|dir| {
        let dot_git = dir.join(".git");
        if fs::is_dir(&dot_git) {
            return Some((dir.to_path_buf(), dot_git));
        }
        // A worktree or submodule: `.git` is a file naming the git dir.
        let text = fs::read_small_text(&dot_git).ok()?;
        let target = text.strip_prefix("gitdir:")?.trim();
        Some((dir.to_path_buf(), dir.join(target)))
    })
}

/// Where a git dir's shared files are: its `commondir` (a worktree's), else itself.
fn common_dir(git: &Path) -> PathBuf {
    match fs::read_small_text(&git.join("commondir")) {
        Ok(text) if !text.trim().is_empty() => git.join(text.trim()),
        _ => git.to_path_buf(),
    }
}

/// The URL of remote `origin` in a git config file's text, else of the first remote.
fn remote_url(config: &str) -> Option<String> {
    let mut section: Option<String> = None;
    let mut urls: Vec<(String, String)> = Vec::new();
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('#') || line.starts_with(';') || line.is_empty() {
            continue;
        }
        if let Some(header) = line.strip_prefix('[') {
            let header = header.split(']').next().unwrap_or_default().trim();
            section = header
                .strip_prefix("remote")
                .map(str::trim)
                .and_then(|name| name.strip_prefix('"')?.strip_suffix('"'))
                .map(str::to_string);
            continue;
        }
        let (Some(remote), Some((name, value))) = (&section, line.split_once('=')) else { continue };
        if name.trim().eq_ignore_ascii_case("url") && !urls.iter().any(|(r, _)| r == remote) {
            urls.push((remote.clone(), unquote(value.trim())));
        }
    }
    let origin = urls.iter().position(|(remote, _)| remote == "origin").unwrap_or(0);
    urls.into_iter().nth(origin).map(|(_, url)| url)
}

/// A config value without its quotes and trailing comment.
fn unquote(value: &str) -> String {
    if let Some(quoted) = value.strip_prefix('"') {
        return quoted.split('"').next().unwrap_or_default().to_string();
    }
    value.split([' ', '\t', '#', ';']).next().unwrap_or_default().to_string()
}

/// A remote URL as `host/path`: scheme, user, password and port dropped, the host in lower
/// case, `.git` and trailing slashes removed. `None` for a local path or `file://` URL (the
/// same path means nothing on another machine).
pub fn normalize(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = if let Some((scheme, rest)) = url.split_once("://") {
        if scheme.eq_ignore_ascii_case("file") {
            return None;
        }
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        (authority, path)
    } else {
        // scp-like `user@host:path`; a `:` after a `/` (or none) is a local path.
        let (authority, path) = url.split_once(':')?;
        // `C:/repos/x` is a Windows path.
        if authority.contains('/') || authority.len() < 2 {
            return None;
        }
        (authority, path)
    };
    let host = host.rsplit('@').next().unwrap_or(host);
    let host = match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    };
    let path = path.trim_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path).trim_end_matches('/');
    if host.is_empty() || path.is_empty() {
        return None;
    }
    Some(format!("{}/{path}", host.to_ascii_lowercase()))
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn one_repository_by_every_kind_of_remote_url() {
        let same = [
            "git@github.com:acme/tool.git",
            "https://github.com/acme/tool",
            "https://github.com/acme/tool.git/",
            "ssh://git@github.com:22/acme/tool.git",
            "https://user:s3cret@GitHub.com/acme/tool",
            "git://github.com/acme/tool",
        ];
        for url in same {
            assert_eq!(normalize(url).as_deref(), Some("github.com/acme/tool"), "{url}");
        }
        assert_eq!(
            normalize("git@gitlab.example:group/sub/proj.git").as_deref(),
            Some("gitlab.example/group/sub/proj")
        );
        for local in ["/srv/git/tool.git", "../tool", "file:///srv/git/tool.git", "C:/repos/tool", "./a:b", ""] {
            assert_eq!(normalize(local), None, "{local}");
        }
        assert!(!normalize("https://user:s3cret@host/a/b").unwrap().contains("s3cret"), "credentials are dropped");
    }

    #[test]
    fn origin_first_else_the_first_remote() {
        let config = "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = git@h:up/r.git\n[remote \"origin\"]\n\turl = \"https://h/me/r\" # mine\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n";
        assert_eq!(remote_url(config).as_deref(), Some("https://h/me/r"));
        let config = "[remote \"fork\"]\n  url = git@h:fork/r.git ; comment\n[remote \"other\"]\nurl=git@h:o/r\n";
        assert_eq!(remote_url(config).as_deref(), Some("git@h:fork/r.git"));
        assert_eq!(remote_url("[core]\nurl = x\n"), None, "only remotes' urls count");
    }

    #[test]
    fn a_root_below_the_top_a_worktree_and_a_repository_without_a_remote() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join(".git/worktrees/wt")).unwrap();
        std::fs::create_dir_all(repo.join("crates/core")).unwrap();
        std::fs::write(repo.join(".git/config"), "[remote \"origin\"]\n\turl = git@github.com:acme/tool.git\n")
            .unwrap();
        assert_eq!(remote_key(&repo).as_deref(), Some("github.com/acme/tool"));
        assert_eq!(remote_key(&repo.join("crates/core")).as_deref(), Some("github.com/acme/tool:crates/core"));
        let worktree = dir.path().join("wt");
        std::fs::create_dir_all(&worktree).unwrap();
        std::fs::write(worktree.join(".git"), format!("gitdir: {}\n", repo.join(".git/worktrees/wt").display()))
            .unwrap();
        std::fs::write(repo.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        assert_eq!(remote_key(&worktree).as_deref(), Some("github.com/acme/tool"));
        let bare = dir.path().join("plain");
        std::fs::create_dir_all(bare.join(".git")).unwrap();
        std::fs::write(bare.join(".git/config"), "[core]\n").unwrap();
        assert_eq!(remote_key(&bare), None);
        let plain = identity(None, &bare);
        assert_eq!((plain.key, plain.adopts), (bare.display().to_string(), None));
        let named = identity(Some("team-x"), &repo);
        assert_eq!((named.key.as_str(), named.adopts), ("team-x", Some(repo.display().to_string())));
    }
}
