//! Classifying a call's effect: each path it names, inside the roots or beyond them (judged
//! where it really lies, resolved once), each command line parsed, into the subjects the
//! decision table rules on; and what makes a path protected or hidden.

use std::path::{Path, PathBuf};

use crate::audit::Verdict;
use crate::decide::{Decision, Location, Policy, Request, Subject};
use crate::{Approved, Caller, command, decide, outside};
use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_core::effect::Effect;
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::write::Target;
use toolbelt_mcp_sandbox::{paths, protected};

/// Fills the verdict of a call whose paths did not resolve (missing, not a directory): what
/// the policy rules for the same call on paths inside the roots, `allow` by the policy for a
/// read under every approval but `always`; `invalid` when it would have asked.
pub(crate) fn record_unresolved(effect: &Effect, caller: &Caller<'_>, verdict: &mut Verdict) {
    let root = caller.roots.first();
    let shown = |input: &String| paths::normalize(&root.join(input));
    let subjects: Vec<Subject> = match effect {
        Effect::Read(inputs) => inputs.iter().map(|i| Subject::Read(shown(i), Location::Inside)).collect(),
        Effect::Write(inputs) => inputs
            .iter()
            .map(|i| {
                let path = shown(i);
                let location = protection(&path, caller).map_or(Location::Inside, |(l, _)| l);
                Subject::Write(path, location)
            })
            .collect(),
        Effect::Exec { cwd: Some(dir), .. } => vec![Subject::Read(shown(dir), Location::Inside)],
        _ => Vec::new(),
    };
    verdict.subjects = subjects.iter().filter_map(Subject::shown).collect();
    let policy = Policy {
        approval: caller.config.approval,
        sandbox: caller.config.sandbox,
        commands_confined: toolbelt_mcp_sandbox::backend::CONFINES_COMMANDS,
    };
    let request = Request { subjects, escalate: verdict.escalate, justification: verdict.justification.clone() };
    verdict.decision = match decide::decide(&policy, &request, &caller.approvals.grants()) {
        Decision::Allow => "allow",
        Decision::Deny { .. } => "deny",
        Decision::Ask { .. } => "invalid",
    };
}

/// A classified effect: its subjects, the resolution error of the first path outside the
/// roots, and the paths resolved inside the roots (kept, so an approved call needs no second
/// resolution).
pub(crate) struct Classified {
    pub(crate) subjects: Vec<Subject>,
    pub(crate) outside_error: Option<ToolError>,
    pub(crate) resolved: Approved,
    /// Every path was resolved (outside ones against `/`): the approved call uses these.
    pub(crate) complete: bool,
}

/// The effect's subjects with where they lie (and commands classified).
pub(crate) fn classify(effect: &Effect, caller: &Caller<'_>) -> Result<Classified, ToolError> {
    let roots = &caller.roots;
    let mut outside_error = None;
    let mut outside = |input: &str, err: toolbelt_mcp_sandbox::Error| {
        let path = match &err {
            toolbelt_mcp_sandbox::Error::OutsideRoots { .. } => paths::normalize(&roots.first().join(input)),
            toolbelt_mcp_sandbox::Error::SymlinkEscape { target, .. } => target.clone(),
            _ => return Err(ToolError::from(err)),
        };
        outside_error.get_or_insert(ToolError::from(err));
        Ok(path)
    };
    let mut subjects = Vec::new();
    let mut resolved = Approved { subjects: Vec::new(), targets: Vec::new(), cwd: None, unsandboxed: false };
    // Whether every path the effect names was resolved here (outside ones against `/`).
    let mut complete = true;
    match effect {
        Effect::Read(inputs) => {
            for input in inputs {
                subjects.push(match roots.resolve(input) {
                    Ok(path) => {
                        let location =
                            if hidden(path.real(), caller.config) { Location::Hidden } else { Location::Inside };
                        let subject = Subject::Read(path.real().to_path_buf(), location);
                        resolved.subjects.push(path);
                        subject
                    }
                    Err(err) => {
                        let path = outside(input, err)?;
                        let found = outside::resolve_read(caller, input);
                        let real = found.as_ref().map_or(path, |found| found.real().to_path_buf());
                        resolved.subjects.extend(found);
                        Subject::Read(real.clone(), read_location(&real, caller))
                    }
                });
            }
            complete = resolved.subjects.len() == inputs.len();
        }
        Effect::Write(inputs) => {
            for input in inputs {
                subjects.push(match Target::resolve(roots, input) {
                    Ok(target) => {
                        let location = protection(target.real(), caller).map_or(Location::Inside, |(l, _)| l);
                        let subject = Subject::Write(target.real().to_path_buf(), location);
                        resolved.targets.push(target);
                        subject
                    }
                    Err(err) => {
                        let path = outside(input, err)?;
                        let found = outside::resolve_write(caller, input);
                        let real = found.as_ref().map_or(path, |target| target.real().to_path_buf());
                        resolved.targets.extend(found);
                        let location = match protection(&real, caller) {
                            Some((Location::Protected, _)) => Location::OutsideProtected,
                            Some((location, _)) => location,
                            None if outside::secret(&real, caller) => Location::Hidden,
                            None if outside::beyond_the_user(&real) => Location::OutsideProtected,
                            None => Location::Outside,
                        };
                        Subject::Write(real, location)
                    }
                });
            }
            complete = resolved.targets.len() == inputs.len();
            let moved = moved_tree(&subjects, caller);
            subjects.extend(moved);
        }
        Effect::History => subjects.push(Subject::Write(roots.first().to_path_buf(), Location::Inside)),
        Effect::Control => subjects.push(Subject::Control),
        // The server's own records: nothing of the workspace is touched.
        Effect::Record => {}
        Effect::Exec { command, cwd, env, stdin } => {
            if let Some(dir) = cwd {
                subjects.push(match roots.resolve(dir) {
                    Ok(path) => {
                        if !toolbelt_mcp_sandbox::fs::is_dir(path.real()) {
                            return Err(ToolError::NotADirectory { path: dir.clone() });
                        }
                        let subject = Subject::Read(path.real().to_path_buf(), Location::Inside);
                        resolved.cwd = Some(path);
                        subject
                    }
                    Err(err) => {
                        let path = outside(dir, err)?;
                        let found = outside::resolve_read(caller, dir)
                            .filter(|found| toolbelt_mcp_sandbox::fs::is_dir(found.real()));
                        let real = found.as_ref().map_or(path, |found| found.real().to_path_buf());
                        complete = found.is_some();
                        resolved.cwd = found;
                        Subject::Read(real.clone(), read_location(&real, caller))
                    }
                });
            }
            let config = &caller.config;
            let home = std::env::var_os("HOME").map(PathBuf::from);
            let rules = command::Rules::new(&config.forbidden_commands, config.forbid_catastrophic, home, roots.list());
            let given = command::Given { env, stdin: stdin.as_deref() };
            let mut analysis = command::classify(command, given, &rules);
            let base =
                resolved.cwd.as_ref().map_or_else(|| roots.first().to_path_buf(), |dir| dir.real().to_path_buf());
            // What the agent can write (the roots, `writable_roots`) it can also change between
            // the check and the run: a file there is never what a grant covers.
            let writable: Vec<&Path> =
                roots.list().iter().chain(&config.writable_roots).map(PathBuf::as_path).collect();
            analysis.keys =
                analysis.keys.and_then(|keys| keys.iter().map(|key| bind_file_key(key, &base, &writable)).collect());
            subjects.push(Subject::Command(described(command, env, stdin.as_deref()), analysis.class, analysis.keys));
        }
    }
    Ok(Classified { subjects, outside_error, resolved, complete })
}

/// Most entries a moved directory may hold for each of their new paths to be judged.
const MOVED_TREE_MAX: usize = 10_000;

/// What a move of a directory (`rename_file`'s effect: `[from, to]`, as their real paths)
/// creates beneath its destination, each protected path judged as if written there: renaming
/// `c3/` to `.cargo/` writes `.cargo/config.toml`. A tree too large to judge is asked about
/// whole.
fn moved_tree(subjects: &[Subject], caller: &Caller<'_>) -> Vec<Subject> {
    let [Subject::Write(from, _), Subject::Write(to, _)] = subjects else { return Vec::new() };
    let Some(tree) = toolbelt_mcp_sandbox::fs::tree_beneath(from, MOVED_TREE_MAX) else {
        return vec![Subject::Write(to.clone(), Location::Protected)];
    };
    let mut found: Vec<Subject> = tree
        .iter()
        .map(|rel| to.join(rel))
        .filter_map(|path| protection(&path, caller).map(|(location, _)| Subject::Write(path, location)))
        .collect();
    // A symlink moved with it leads somewhere else from its new place (`../x` one level up).
    let links = std::iter::once(PathBuf::new()).chain(tree).filter_map(|rel| {
        let target = toolbelt_mcp_sandbox::fs::read_link(&from.join(&rel)).ok()?;
        let at = if rel.as_os_str().is_empty() { to.clone() } else { to.join(&rel) };
        link_leads_badly(&at, &target, caller).then_some(Subject::Write(at, Location::Protected))
    });
    found.extend(links);
    found
}

/// Whether a symlink pointing at `target`, moved or put back to `at` (absolute), would lead
/// into what is code-bearing (judged as a command's new link is: `sandbox::protected::links`).
pub(crate) fn link_leads_badly(at: &Path, target: &Path, caller: &Caller<'_>) -> bool {
    use toolbelt_mcp_sandbox::protected::links::{Site, refusal};
    let Some(root) = caller.roots.list().iter().filter(|root| at.starts_with(root)).max_by_key(|r| r.as_os_str().len())
    else {
        return true;
    };
    let Ok(dir) = toolbelt_mcp_sandbox::handle::DirHandle::open(root) else { return true };
    let view = toolbelt_mcp_sandbox::protected::view::Real::new(dir);
    let by_name = |path: &Path| protection(path, caller).map(|(_, why)| why.to_string());
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let places: Vec<PathBuf> = protected::env_places()
        .into_iter()
        .filter(|place| place.guards(root))
        .map(|place| place.path)
        .chain(protected::home_link_targets(home.as_deref()).into_iter().map(|(target, _)| target))
        .chain([caller.config.state_dir.clone(), caller.config.config_dir.clone()])
        .collect();
    let site = Site { root, view: &view, home: home.as_deref(), by_name: &by_name, places: &places };
    let Ok(rel) = at.strip_prefix(root) else { return true };
    refusal(&site, rel, target, false).is_some()
}

/// A grant key naming a file by the path a line gave (`./build.sh`, `bash deploy.sh`), bound to
/// the file itself: its resolved path and a digest of its content (at most 1 MiB read; a larger
/// file by its device, inode, size and times). `None` when the file cannot be read as one, or
/// lies where the agent can write (`writable`): it could change the file between this check
/// and the run (a concurrent write, a rename), so nothing is granted then and each run asks.
fn bind_file_key(key: &str, base: &Path, writable: &[&Path]) -> Option<String> {
    let Some(at) = key.find(command::FILE_KEY) else { return Some(key.to_string()) };
    let typed = &key[at + command::FILE_KEY.len()..];
    let path = toolbelt_mcp_sandbox::paths::normalize(&base.join(typed));
    let real = toolbelt_mcp_sandbox::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    if writable.iter().any(|place| path.starts_with(place) || real.starts_with(place)) {
        return None;
    }
    let identity = match toolbelt_mcp_sandbox::fs::read_trusted_config(&path) {
        Some(bytes) => {
            use sha2::Digest;
            format!("sha256 {}", hex::encode(&sha2::Sha256::digest(&bytes)[..12]))
        }
        None => {
            let version =
                toolbelt_mcp_sandbox::fs::version(&path).filter(|_| toolbelt_mcp_sandbox::fs::is_file(&path))?;
            format!(
                "file {}:{}, {} bytes, changed {}.{}",
                version.dev, version.ino, version.size, version.ctime.0, version.ctime.1
            )
        }
    };
    Some(format!("{}{} ({identity})", &key[..at], path.display()))
}

/// The command as the user is asked about it: its line, the environment it is given (it
/// changes what runs) and how much it reads on stdin (shown whole in the question).
fn described(line: &str, env: &[String], stdin: Option<&str>) -> String {
    let mut text = line.to_string();
    if !env.is_empty() {
        text = format!("{} {text}", env.join(" "));
    }
    if let Some(stdin) = stdin {
        text.push_str(&format!(" (given {} characters on stdin)", stdin.chars().count()));
    }
    text
}

/// Whether `path` is hidden from the agent: it lies in a path the user listed in
/// `deny_read` (the defaults hide secrets outside the roots, which file operations cannot
/// reach anyway), in the server's state dir (its generated HTTP token, other sessions'
/// records, the todo and memory database), or is a file the server holds a secret in (the
/// HTTP server's `--auth-token-file`), wherever those lie, inside a root too.
pub fn hidden(path: &Path, config: &Config) -> bool {
    hidden_paths(config).iter().any(|hidden| path.starts_with(hidden))
}

/// What [`hidden`] hides, as paths (for the walks of `list_dir`, `grep_search` and
/// `file_search`, which leave them out).
pub fn hidden_paths(config: &Config) -> Vec<PathBuf> {
    let mut paths = config.sandbox_settings.deny_read.clone();
    paths.push(config.state_dir.clone());
    paths.extend(toolbelt_mcp_core::config::sandbox::own_secrets());
    paths
}

/// Where a read of `path` outside the roots lies: a secret ([`outside::secret`]) or plainly outside.
fn read_location(path: &Path, caller: &Caller<'_>) -> Location {
    if outside::secret(path, caller) { Location::Hidden } else { Location::Outside }
}

/// Why a path is protected, if it is: the protected-path table (`sandbox::protected`: git
/// internals at any depth, editor and shell startup files; writing them asks, and no grant
/// covers them), a root repository's `core.hooksPath`, and the server's own config, state and
/// audit log (never written).
pub(crate) fn protection(path: &Path, caller: &Caller<'_>) -> Option<(Location, &'static str)> {
    let config = &caller.config;
    if hidden(path, config) {
        return Some((
            Location::Hidden,
            "it is hidden from the agent (`deny_read`, or the server's own state and secrets)",
        ));
    }
    // A directory above a hidden path: moved, removed or replaced, what it hides would lie
    // at a path nothing hides any more.
    if hidden_paths(config).iter().any(|hidden| hidden.starts_with(path) && hidden != path) {
        return Some((
            Location::Hidden,
            "it holds a path hidden from the agent (`deny_read`, or the server's own state and secrets); moved or removed, that would be hidden no more",
        ));
    }
    if path.starts_with(&config.state_dir) {
        return Some((Location::Own, "it is the server's own state"));
    }
    if config.config_file.as_deref().is_some_and(|file| path == file) || path.starts_with(&config.config_dir) {
        return Some((Location::Own, "it is the server's own configuration"));
    }
    if config.audit.is_log_file(path) {
        return Some((Location::Own, "it is the server's audit log"));
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    if let Some(protection) = protected::in_dot_git(path) {
        return Some((Location::Protected, protection.why()));
    }
    if path.components().any(|c| c.as_os_str() == ".git") {
        return Some((
            Location::Protected,
            "it lies in a git dir: git reads what is there (`HEAD`, refs and objects say which repository this is and what is checked out)",
        ));
    }
    if protected::home_link_targets(home.as_deref()).iter().any(|(target, _)| path.starts_with(target)) {
        return Some((
            Location::Protected,
            "your home directory's configuration links to it (a dotfiles repository): your shell, git or editor reads it",
        ));
    }
    let root =
        caller.roots.list().iter().filter(|root| path.starts_with(root)).max_by_key(|root| root.as_os_str().len());
    if protected::env_places().iter().any(|place| {
        root.is_none_or(|root| place.guards(root)) && (path.starts_with(&place.path) || place.path.starts_with(path))
    }) {
        return Some((
            Location::Protected,
            "your environment names it or a directory holding it (`PATH`, a module search path, or a variable that places configuration: `XDG_CONFIG_HOME`, `CARGO_HOME`, `BASH_ENV`, …): programs run or load as configuration what is there",
        ));
    }
    if let Some((protection, _)) = protected::classify_rule(path, home.as_deref()) {
        return Some((Location::Protected, protection.why()));
    }
    if let Some(why) = protected::judge_write(caller.roots.list(), path, home.as_deref()) {
        return Some((Location::Protected, why));
    }
    None
}
