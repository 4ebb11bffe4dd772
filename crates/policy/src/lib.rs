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
mod classify;
pub mod command;
pub mod decide;
#[cfg(unix)]
pub mod network;
mod outside;
pub mod redact;
pub mod report;
pub mod visible;

use std::path::{Path, PathBuf};

use crate::approve::{Answer, Question};
use crate::ask::Outcome;
use crate::audit::Verdict;
use crate::decide::{Decision, Location, Policy, Request, Subject};
use toolbelt_mcp_core::config::args::Fallback;
use toolbelt_mcp_core::effect::{Effect, Severity};
use toolbelt_mcp_core::error::ToolError;
use toolbelt_mcp_sandbox::write::Target;
use toolbelt_mcp_sandbox::{Resolved, Roots};

pub use caller::Caller;
use classify::{Classified, classify, protection, record_unresolved};
pub use classify::{hidden, hidden_paths};

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
                    sub_agent: None,
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

    /// Refuses to put back a symlink at `path` pointing at `target` when it would lead into
    /// what is code-bearing (judged as a command's new link is: the tree may have changed
    /// since it was removed).
    pub fn check_link(path: &Path, target: &Path, shown: &str, caller: &Caller<'_>) -> Result<(), ToolError> {
        if classify::link_leads_badly(path, target, caller) {
            return Err(ToolError::Protected {
                path: shown.into(),
                why: "a symlink put back there would lead into what is code-bearing, which a program you run later writes through",
            });
        }
        Ok(())
    }
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
