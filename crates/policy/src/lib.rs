//! The policy gate: `Gate::check` runs inside the one function that can call an operation's
//! `run`, so no operation skips it. It classifies the operation's declared effect (paths
//! inside, outside or protected; commands by their shell grammar), lets the pure decision
//! table (`decide`) rule, asks the user through the approver when the table says ask (or
//! applies the configured fallback when the client cannot ask), and hands the operation only
//! what was approved.

pub mod approvals;
pub mod approve;
pub mod ask;
pub mod audit;
mod caller;
pub mod command;
pub mod decide;
mod outside;
pub mod redact;
pub mod report;
pub mod visible;

use std::path::{Path, PathBuf};

use crate::approve::{Answer, Question};
use crate::ask::Outcome;
use crate::audit::Verdict;
use crate::decide::{Decision, Location, Policy, Request, Subject};
use toolbelt_mcp_core::config::Config;
use toolbelt_mcp_core::config::args::Fallback;
use toolbelt_mcp_core::effect::{Effect, Severity};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::write::Target;
use toolbelt_mcp_sandbox::{Resolved, Roots, paths, protected};

pub use caller::Caller;

/// The gate every call passes before its operation runs.
pub struct Gate;

/// What the gate let through: the only paths the operation receives.
pub struct Approved {
    /// Resolved paths of a `Read` effect.
    pub subjects: Vec<Resolved>,
    /// Write targets of a `Write` effect.
    pub targets: Vec<Target>,
    /// The working directory of an `Exec` effect, if it named one.
    pub cwd: Option<Resolved>,
    /// An escalated command approved to run without the sandbox.
    pub unsandboxed: bool,
}

/// The call's request to go beyond the sandbox.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Escalation {
    /// `escalate: true`.
    pub escalate: bool,
    /// Why.
    pub justification: Option<String>,
}

impl Gate {
    /// Classifies, decides, asks if needed, then resolves what the operation may touch.
    /// `written` is what a file operation would write, shown in a question.
    pub async fn check(
        operation: &'static str,
        effect: &Effect,
        written: Option<&str>,
        escalation: &Escalation,
        caller: &Caller<'_>,
        verdict: &mut Verdict,
    ) -> Result<Approved, ToolError> {
        let config = &caller.config;
        verdict.effect = effect.kind();
        verdict.escalate = escalation.escalate;
        verdict.justification.clone_from(&escalation.justification);
        verdict.decision = "deny";
        verdict.decided_by = "policy";
        let Classified { subjects, outside_error, resolved, complete } = match classify(effect, caller) {
            Ok(classified) => classified,
            Err(err) => {
                // The call failed before anything was decided (a path that does not exist, a
                // cwd that is a file): record what the policy rules for such a call.
                record_unresolved(effect, caller, verdict);
                return Err(err);
            }
        };
        verdict.subjects =
            subjects.iter().filter_map(Subject::shown).map(|s| redact::redact(&s).into_owned()).collect();
        let request =
            Request { subjects, escalate: escalation.escalate, justification: escalation.justification.clone() };
        let policy = Policy {
            approval: config.approval,
            sandbox: config.sandbox,
            commands_confined: toolbelt_mcp_sandbox::backend::CONFINES_COMMANDS,
        };
        let grants = caller.approvals.grants();
        let decision = decide::decide(&policy, &request, &grants);
        // Allowed with grants but not without them: a grant decided (only re-decided when the
        // session has grants at all).
        if decision == Decision::Allow
            && !grants.is_empty()
            && !matches!(decide::decide(&policy, &request, &[]), Decision::Allow)
        {
            verdict.decided_by = "grant";
        }
        match decision {
            Decision::Allow => {}
            // A path outside the roots, not escalated: the resolution's own error explains it best.
            Decision::Deny { .. } if !escalation.escalate && outside_error.is_some() => {
                return Err(outside_error.unwrap_or_else(|| ToolError::Internal("no error kept".into())));
            }
            Decision::Deny { reason, how_to_allow } => return Err(ToolError::Denied { reason, how_to_allow }),
            Decision::Ask { reason, scope } => {
                refuse_unseen_move(effect, written, &request.subjects)?;
                let question = Question {
                    operation,
                    reason: reason.clone(),
                    details: details(effect, &resolved, caller),
                    stdin: shown_stdin(effect)?,
                    written: shown_written(written, &request.subjects)?,
                    justification: escalation.justification.clone(),
                    session_scope: report::describe(&scope),
                };
                verdict.decided_by = if caller.approver.is_some() { "user" } else { "fallback" };
                let how_to_allow = || ask::how_to_allow(caller.client, &fallback_hint(caller));
                let Some(approver) = caller.approver else {
                    if config.approval_fallback == Fallback::Allow {
                        verdict.decision = "allow";
                        return resolve_approved(effect, escalation, caller, resolved, outside_error, complete);
                    }
                    return Err(ToolError::NoApprover { reason, how_to_allow: how_to_allow() });
                };
                let response = approver(question).await;
                let took = response.took;
                let answer = match response.answer {
                    Answer::Pending { message, state } => {
                        verdict.decision = "ask";
                        return Err(ToolError::InputRequired { message, state });
                    }
                    answer => answer,
                };
                match ask::outcome(answer, took, config.approval_timeout) {
                    Outcome::Allow { grant } => {
                        if grant {
                            caller.approvals.grant(scope);
                        }
                    }
                    Outcome::Declined(note) => return Err(ToolError::UserDenied { reason, note }),
                    Outcome::NotAsked(why) => {
                        verdict.decided_by = "fallback";
                        if let Some(notify) = caller.notify {
                            let fallback = if config.approval_fallback == Fallback::Allow { "allow" } else { "deny" };
                            notify(
                                Severity::Notice,
                                format!(
                                    "`{operation}` needed the user's approval but nobody was asked ({why}); the fallback `{fallback}` decided"
                                ),
                            );
                        }
                        if let Some(err) = ask::not_asked(reason, why, config.approval_fallback, how_to_allow()) {
                            return Err(err);
                        }
                    }
                }
            }
        }
        verdict.decision = "allow";
        resolve_approved(effect, escalation, caller, resolved, outside_error, complete)
    }

    /// Whether `path` may be written by history replay (undo): the same protections apply.
    pub fn check_protected(path: &Path, shown: &str, caller: &Caller<'_>) -> Result<(), ToolError> {
        match protection(path, caller) {
            Some((_, why)) => Err(ToolError::Protected { path: shown.into(), why }),
            None => Ok(()),
        }
    }
}

/// Fills the verdict of a call whose paths did not resolve (missing, not a directory): what
/// the policy rules for the same call on paths inside the roots, `allow` by the policy for a
/// read under every approval but `always`; `invalid` when it would have asked.
fn record_unresolved(effect: &Effect, caller: &Caller<'_>, verdict: &mut Verdict) {
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
struct Classified {
    subjects: Vec<Subject>,
    outside_error: Option<ToolError>,
    resolved: Approved,
    /// Every path was resolved (outside ones against `/`): the approved call uses these.
    complete: bool,
}

/// The effect's subjects with where they lie (and commands classified).
fn classify(effect: &Effect, caller: &Caller<'_>) -> Result<Classified, ToolError> {
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
                        let real = match outside::resolve_read(caller, input) {
                            Some(found) => {
                                let real = found.real().to_path_buf();
                                resolved.subjects.push(found);
                                real
                            }
                            None => path,
                        };
                        let secret = outside::secret(&real, caller);
                        Subject::Read(real, if secret { Location::Hidden } else { Location::Outside })
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
                        let real = match outside::resolve_write(caller, input) {
                            Some(target) => {
                                let real = target.real().to_path_buf();
                                resolved.targets.push(target);
                                real
                            }
                            None => path,
                        };
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
                        let real = match outside::resolve_read(caller, dir) {
                            Some(found) if toolbelt_mcp_sandbox::fs::is_dir(found.real()) => {
                                let real = found.real().to_path_buf();
                                resolved.cwd = Some(found);
                                real
                            }
                            _ => {
                                complete = false;
                                path
                            }
                        };
                        let secret = outside::secret(&real, caller);
                        Subject::Read(real, if secret { Location::Hidden } else { Location::Outside })
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
    tree.iter()
        .map(|rel| to.join(rel))
        .filter_map(|path| protection(&path, caller).map(|(location, _)| Subject::Write(path, location)))
        .collect()
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

/// The most of a command's stdin a question shows; a longer stdin is refused rather than
/// asked about, since the user could not read what runs.
pub const MAX_SHOWN_STDIN: usize = 4000;

/// The lines a question adds about what would run: a command's working directory (always,
/// the default one too) and each environment entry it sets.
fn details(effect: &Effect, resolved: &Approved, caller: &Caller<'_>) -> Vec<String> {
    let Effect::Exec { env, .. } = effect else { return Vec::new() };
    let dir = resolved.cwd.as_ref().map_or_else(|| caller.roots.first().to_path_buf(), |dir| dir.real().to_path_buf());
    let mut details = vec![format!("Working directory: `{}`", dir.display())];
    if !env.is_empty() {
        let entries: Vec<String> = env.iter().map(|entry| format!("`{entry}`")).collect();
        details.push(format!("Environment it sets: {}", entries.join(", ")));
    }
    details
}

/// A command's stdin for the question, whole; an error when it is too long to show.
fn shown_stdin(effect: &Effect) -> Result<Option<String>, ToolError> {
    let Effect::Exec { stdin: Some(stdin), .. } = effect else { return Ok(None) };
    let count = stdin.chars().count();
    if count > MAX_SHOWN_STDIN {
        return Err(ToolError::Denied {
            reason: format!(
                "the command's stdin is {count} characters, more than the {MAX_SHOWN_STDIN} a question can show the user whole"
            ),
            how_to_allow: "write it to a file under the roots with `create_file`, then run the command with that file (`bash script.sh`, `python3 job.py`, `cmd < input.txt`) so the user can read it before approving".into(),
        });
    }
    Ok(Some(stdin.clone()))
}

/// Refuses a move (`rename_file`, or an `apply_patch` that moves a file: a `Write` of several
/// paths that says nothing of what it writes) touching a protected path, from or onto it: what
/// would land is a file the question cannot show whole, and the agent could change it while
/// the user reads. Writing the file with `create_file`, or a patch without a move, shows its
/// content; the user moves a protected file themselves.
fn refuse_unseen_move(effect: &Effect, written: Option<&str>, subjects: &[Subject]) -> Result<(), ToolError> {
    let Effect::Write(inputs) = effect else { return Ok(()) };
    let onto_protected = subjects
        .iter()
        .any(|subject| matches!(subject, Subject::Write(_, Location::Protected | Location::OutsideProtected)));
    if written.is_some() || inputs.len() < 2 || !onto_protected {
        return Ok(());
    }
    Err(ToolError::Denied {
        reason: "the move would put a file on a protected path, and a question cannot show what would land there (the agent could change it while the user reads)".into(),
        how_to_allow: "write the file there with `create_file` (or `apply_patch`), so the user sees its content when asked".into(),
    })
}

/// What a file operation would write, for the question: whole, or, when it is longer than a
/// question can show, nothing, except for a protected path (code the user would run later),
/// which is then refused: the user must see all of it to answer.
fn shown_written(written: Option<&str>, subjects: &[Subject]) -> Result<Option<String>, ToolError> {
    let Some(text) = written else { return Ok(None) };
    let count = text.chars().count();
    if count <= MAX_SHOWN_STDIN {
        return Ok(Some(text.to_string()));
    }
    let protected = subjects
        .iter()
        .any(|subject| matches!(subject, Subject::Write(_, Location::Protected | Location::OutsideProtected)));
    if !protected {
        return Ok(None);
    }
    Err(ToolError::Denied {
        reason: format!(
            "what would be written to a protected path is {count} characters, more than the {MAX_SHOWN_STDIN} a question can show the user whole"
        ),
        how_to_allow: "write less at a time (smaller edits), or ask the user to make the change".into(),
    })
}

/// Resolves an approved effect against `roots`.
fn resolve(effect: &Effect, roots: &Roots, escalated: bool) -> Result<Approved, ToolError> {
    let mut approved = Approved { subjects: Vec::new(), targets: Vec::new(), cwd: None, unsandboxed: false };
    match effect {
        Effect::Read(paths) => {
            approved.subjects = paths.iter().map(|path| roots.resolve(path)).collect::<Result<_, _>>()?;
        }
        Effect::Write(paths) => {
            approved.targets = paths.iter().map(|path| Target::resolve(roots, path)).collect::<Result<_, _>>()?;
        }
        Effect::History | Effect::Control | Effect::Record => {}
        Effect::Exec { cwd, .. } => {
            if let Some(dir) = cwd {
                let resolved = roots.resolve(dir)?;
                if !toolbelt_mcp_sandbox::fs::is_dir(resolved.real()) {
                    return Err(ToolError::NotADirectory { path: dir.clone() });
                }
                approved.cwd = Some(resolved);
            }
            approved.unsandboxed = escalated;
        }
    }
    Ok(approved)
}

/// What an allowed call may touch: what classifying it resolved, or, for an approved
/// escalation beyond the roots, its paths resolved against `/` too.
fn resolve_approved(
    effect: &Effect,
    escalation: &Escalation,
    caller: &Caller<'_>,
    resolved: Approved,
    outside_error: Option<ToolError>,
    complete: bool,
) -> Result<Approved, ToolError> {
    if outside_error.is_none() || complete {
        // Everything was resolved when the call was classified (beyond the roots too, against
        // `/`): the call gets exactly what the question named.
        return Ok(Approved { unsandboxed: escalation.escalate && matches!(effect, Effect::Exec { .. }), ..resolved });
    }
    let widened = Roots::new(vec![caller.roots.first().to_path_buf(), PathBuf::from("/")]);
    resolve(effect, &widened, escalation.escalate)
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

/// What the user can change on the server so that such calls run without a question.
fn fallback_hint(caller: &Caller<'_>) -> String {
    let file = caller
        .config
        .config_file
        .as_ref()
        .map_or_else(|| format!("{}/config.toml", caller.config.config_dir.display()), |f| f.display().to_string());
    format!(
        "The user can allow such calls without a question by adding `approval_fallback = \"allow\"` to `{file}`, or by restarting the server with a looser `--approval` policy"
    )
}

/// Why a path is protected, if it is: the protected-path table (`sandbox::protected`: git
/// internals at any depth, editor and shell startup files; writing them asks, and no grant
/// covers them), a root repository's `core.hooksPath`, and the server's own config, state and
/// audit log (never written).
fn protection(path: &Path, caller: &Caller<'_>) -> Option<(Location, &'static str)> {
    let config = &caller.config;
    if hidden(path, config) {
        return Some((
            Location::Hidden,
            "it is hidden from the agent (`deny_read`, or the server's own state and secrets)",
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
    if protected::path_dirs().iter().any(|dir| path.starts_with(dir) || dir.starts_with(path)) {
        return Some((
            Location::Protected,
            "it is on your PATH or a module search path, or holds such a directory: programs run what is put there by name",
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
