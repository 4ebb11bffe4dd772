//! The decision table: a pure function from a request (what a call would do, classified),
//! the policy and the session's grants to allow, ask or deny. No I/O, no protocol: the gate
//! classifies, this decides, the approver asks.
//!
//! | subject                                   | `never` | `on-request` | `on-write` | `always` |
//! |-------------------------------------------|---------|--------------|------------|----------|
//! | forbidden command (config rule or default) | deny   | deny         | deny       | deny     |
//! | environment that changes what runs, not escalated | deny | deny (1) | deny (1)  | deny (1) |
//! | environment that changes what runs, escalated | deny | ask         | ask        | ask      |
//! | command not checkable against the rules   | deny    | ask          | ask        | ask      |
//! | escalated call without a justification    | deny    | deny         | deny       | deny     |
//! | the server's own config or state written  | deny    | deny         | deny       | deny     |
//! | a path listed in `deny_read`, read or written | deny | deny        | deny       | deny     |
//! | path outside the roots, not escalated     | deny    | deny (1)     | deny (1)   | deny (1) |
//! | path outside the roots, escalated         | deny    | ask          | ask        | ask      |
//! | code-bearing path outside the roots written, escalated | deny | ask (2) | ask (2) | ask (2) |
//! | protected path written                    | deny    | ask          | ask        | ask      |
//! | command run unsandboxed (escalated)       | deny    | ask          | ask        | ask      |
//! | file write inside the roots (read-only sandbox, not escalated) | deny | deny (1) | deny (1) | deny (1) |
//! | file write inside the roots (read-only sandbox, escalated)     | deny | ask | ask | ask |
//! | read inside the roots                     | allow   | allow        | allow      | ask      |
//! | write inside the roots                    | allow   | allow        | ask        | ask      |
//! | known-safe read-only command              | allow   | allow        | allow      | ask      |
//! | any other command (sandboxed)             | allow   | allow        | ask        | ask      |
//! | control of the session's own processes    | allow   | allow        | allow      | ask      |
//!
//! (1) the message says that `escalate: true` with a `justification` can ask the user.
//! (2) every time: no grant covers it. A grant for a write outside the roots covers that path
//! alone; one for a read, the file's directory when it lies four or more levels deep.
//! A row that asks is allowed at once when a grant of this session covers it, except a
//! protected path and a command that cannot be checked: those ask every time. A command grant
//! covers a line only when every simple command of it is granted (`git status`, `cargo test`:
//! the program and, for tools that have one, its subcommand). The strictest row over all of a
//! call's subjects wins (deny over ask over allow).

use std::path::{Path, PathBuf};

use toolbelt_mcp_core::config::args::Approval;
use toolbelt_mcp_sandbox::mode::SandboxMode;

use crate::visible::code;

/// Where a path lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// Inside a root, not protected.
    Inside,
    /// Outside every root.
    Outside,
    /// Outside every root, where code or settings lie that programs run later (a shell's rc
    /// file, `~/.config`, a directory on `PATH`): asked every time, never granted.
    OutsideProtected,
    /// Inside a root, but protected: git hooks and git config (they run code outside any
    /// sandbox).
    Protected,
    /// The server's own config or state: the agent can never change its own policy.
    Own,
    /// Listed in `deny_read`: neither read nor written, by file operations or commands.
    Hidden,
}

/// What a command line is, by its parsed shell grammar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommandClass {
    /// Every simple command is on the read-only list with safe arguments.
    KnownSafe,
    /// Anything else (including what does not parse).
    Other,
    /// Matches a forbidden rule (named).
    Forbidden(String),
    /// What it runs cannot be checked against the forbidden rules until it runs (why).
    Unresolved(String),
    /// It sets an environment variable that changes which code runs (named).
    DangerousEnv(String),
}

/// One thing a call touches, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A path read.
    Read(PathBuf, Location),
    /// A path created, changed or removed.
    Write(PathBuf, Location),
    /// A command line (or input typed into a running session), its class, and what a grant
    /// for it would be (`None`: it cannot be granted).
    Command(String, CommandClass, Option<Vec<String>>),
    /// A signal to one of the session's own processes.
    Control,
}

impl Subject {
    /// The path or command line, for the audit log (`None` for a signal).
    pub fn shown(&self) -> Option<String> {
        match self {
            Self::Read(path, _) | Self::Write(path, _) => Some(path.display().to_string()),
            Self::Command(line, _, _) => Some(line.clone()),
            Self::Control => None,
        }
    }
}

/// What a call asks to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// Its subjects.
    pub subjects: Vec<Subject>,
    /// The call asked to go beyond the sandbox.
    pub escalate: bool,
    /// Why, in the agent's words.
    pub justification: Option<String>,
}

/// The policy in force.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// When to ask.
    pub approval: Approval,
    /// The sandbox mode.
    pub sandbox: SandboxMode,
    /// Whether this OS's sandbox confines commands (false on Windows: every command that is
    /// not known to be read-only is then asked, whatever the mode).
    pub commands_confined: bool,
}

/// What a grant covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Reads at or beneath a path.
    ReadPath(PathBuf),
    /// Writes at or beneath a path.
    WritePath(PathBuf),
    /// Lines whose every simple command is one of these (`git status`, `cargo test`: program
    /// and subcommand), escalated or not, as granted.
    Command {
        /// The granted commands.
        keys: Vec<String>,
        /// Granted to run outside the sandbox.
        unsandboxed: bool,
    },
    /// Nothing beyond this one call: a protected path, or a command that cannot be checked.
    Once,
    /// Signals to the session's processes.
    Control,
}

/// The session's standing permissions ("allow for this session").
pub type Grants = [Scope];

/// The outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Run it.
    Allow,
    /// Ask the user; `scope` is what "allow for this session" would grant.
    Ask {
        /// What needs approval, for the question.
        reason: String,
        /// The grant an "allow for this session" answer creates.
        scope: Scope,
    },
    /// Refuse.
    Deny {
        /// Why.
        reason: String,
        /// What would allow it (a flag, a config line, `escalate`).
        how_to_allow: String,
    },
}

impl Decision {
    fn severity(&self) -> u8 {
        match self {
            Self::Allow => 0,
            Self::Ask { .. } => 1,
            Self::Deny { .. } => 2,
        }
    }
}

const ESCALATE_HINT: &str =
    "set `escalate: true` with a `justification` to ask the user (a policy of `never` refuses even then)";

/// Decides a request: the strictest outcome over its subjects.
pub fn decide(policy: &Policy, request: &Request, grants: &Grants) -> Decision {
    if request.escalate && request.justification.as_deref().is_none_or(|j| j.trim().is_empty()) {
        return deny(
            "`escalate: true` needs a `justification`".into(),
            "add a `justification` saying why the call must go beyond the sandbox",
        );
    }
    let mut worst = Decision::Allow;
    for subject in &request.subjects {
        let decision = match one(policy, request.escalate, subject) {
            Decision::Ask { scope, .. } if granted(grants, &scope) => Decision::Allow,
            other => other,
        };
        if decision.severity() > worst.severity() {
            worst = decision;
        }
    }
    if request.subjects.is_empty() && policy.approval == Approval::Always {
        return ask("every call asks under `--approval always`".into(), Scope::Control);
    }
    worst
}

/// The row for one subject.
fn one(policy: &Policy, escalate: bool, subject: &Subject) -> Decision {
    let never = policy.approval == Approval::Never;
    let always = policy.approval == Approval::Always;
    let on_write = policy.approval == Approval::OnWrite;
    let beyond = |what: String, scope: Scope| {
        if never {
            deny(
                format!("{what}, and the approval policy is `never`"),
                "restart the server with `--approval on-request`",
            )
        } else if escalate {
            ask(format!("{what} (escalated)"), scope)
        } else {
            deny(what, ESCALATE_HINT)
        }
    };
    // The subject as the question shows it: a code span its own backticks cannot close.
    let shown = match subject {
        Subject::Command(line, _, _) => code(line),
        Subject::Read(path, _) | Subject::Write(path, _) => code(&path.display().to_string()),
        Subject::Control => String::new(),
    };
    match subject {
        Subject::Command(_, CommandClass::Forbidden(rule), _) => deny(
            format!("the command matches the forbidden rule `{rule}`"),
            "remove the rule from `forbidden_commands` in the config (the catastrophic defaults: `forbid_catastrophic = false`)",
        ),
        Subject::Command(_, CommandClass::DangerousEnv(name), _) => {
            beyond(format!("{shown} would run with `{name}` set, which changes which code runs"), Scope::Once)
        }
        Subject::Command(line, CommandClass::Unresolved(why), _) if never => deny(
            format!(
                "{shown} cannot be checked against the forbidden rules ({why}), and the approval policy is `never`"
            ),
            "write the command so every program and argument is literal, or restart the server with `--approval on-request`",
        ),
        Subject::Command(_, CommandClass::Unresolved(why), _) => {
            ask(format!("{shown} cannot be checked against the forbidden rules: {why}"), Scope::Once)
        }
        Subject::Read(_, Location::Hidden) | Subject::Write(_, Location::Hidden) => deny(
            format!(
                "{shown} is hidden from the agent (listed in `deny_read`, or the server's own state and secrets): it may neither read nor write it"
            ),
            "a path of `deny_read` can be removed from the config (or from `--deny-read`); the server's own files stay hidden",
        ),
        Subject::Write(_, Location::Own) => deny(
            format!("{shown} is the server's own configuration or state, which the agent can never change"),
            "ask the user to change it",
        ),
        // Outside the roots a read grant covers the file's directory only where that is deep
        // enough not to be a home or system directory, and a write grant the path alone.
        Subject::Read(path, Location::Outside | Location::OutsideProtected) => {
            beyond(format!("{shown} is outside the roots"), Scope::ReadPath(crate::outside::read_scope(path)))
        }
        Subject::Write(path, Location::Outside) => {
            beyond(format!("{shown} is outside the roots"), Scope::WritePath(path.clone()))
        }
        Subject::Write(_, Location::OutsideProtected) => beyond(
            format!(
                "{shown} is outside the roots, where programs later run or load what is written (shell startup files, configuration, `PATH` directories)"
            ),
            Scope::Once,
        ),
        Subject::Write(path, Location::Protected) if never => deny(
            format!("{shown} is protected and the approval policy is `never`"),
            "make the change yourself, or restart the server with `--approval on-request`",
        ),
        // Read-only (the server's, or the host thread's for this call) wins over asking.
        Subject::Write(_, Location::Protected) if policy.sandbox == SandboxMode::ReadOnly => {
            beyond(format!("the sandbox is `read-only`, and {shown} (protected) would be written"), Scope::Once)
        }
        Subject::Write(_, Location::Protected) => ask(format!("{shown} is protected"), Scope::Once),
        Subject::Write(path, Location::Inside) if policy.sandbox == SandboxMode::ReadOnly => {
            beyond(format!("the sandbox is `read-only`, and {shown} would be written"), Scope::WritePath(parent(path)))
        }
        Subject::Command(line, _, keys) if escalate => {
            beyond(format!("{shown} would run without the sandbox"), UNSANDBOXED)
        }
        Subject::Command(line, CommandClass::Other, _) if !policy.commands_confined && never => deny(
            format!(
                "{shown} is not known to be read-only, nothing confines commands on this OS, and the approval policy is `never`"
            ),
            "run only read-only commands, or restart the server with `--approval on-request` so such commands are asked",
        ),
        Subject::Command(line, CommandClass::Other, keys) if !policy.commands_confined => {
            ask(format!("{shown} is not known to be read-only, and nothing confines commands on this OS"), UNSANDBOXED)
        }
        // In `full-access` nothing confines a command: no grant covers one (as for an
        // escalated line).
        Subject::Command(_, class, _)
            if policy.sandbox == SandboxMode::FullAccess && (always || (on_write && *class == CommandClass::Other)) =>
        {
            ask(format!("{shown} would run without a sandbox (the mode is `full-access`)"), UNSANDBOXED)
        }
        _ if always => {
            ask(format!("every call asks under `--approval always`: {}", describe(subject)), scope_of(subject))
        }
        Subject::Write(path, Location::Inside) if on_write => {
            ask(format!("{shown} would be written"), Scope::WritePath(parent(path)))
        }
        Subject::Command(line, CommandClass::Other, keys) if on_write => {
            ask(format!("{shown} is not known to be read-only"), command_scope(keys, false))
        }
        _ => Decision::Allow,
    }
}

fn describe(subject: &Subject) -> String {
    match subject {
        Subject::Read(path, _) => format!("read {}", code(&path.display().to_string())),
        Subject::Write(path, _) => format!("write {}", code(&path.display().to_string())),
        Subject::Command(line, _, _) => format!("run {}", code(line)),
        Subject::Control => "signal a session".into(),
    }
}

fn scope_of(subject: &Subject) -> Scope {
    match subject {
        Subject::Read(path, _) => Scope::ReadPath(parent(path)),
        Subject::Write(path, _) => Scope::WritePath(parent(path)),
        Subject::Command(_, _, keys) => command_scope(keys, false),
        Subject::Control => Scope::Control,
    }
}

/// The grant a command's "allow for this session" creates (nothing, if it cannot be granted).
fn command_scope(keys: &Option<Vec<String>>, unsandboxed: bool) -> Scope {
    match keys {
        Some(keys) if !keys.is_empty() => Scope::Command { keys: keys.clone(), unsandboxed },
        _ => Scope::Once,
    }
}

/// What "allow for this session" covers for a command that would run outside the sandbox
/// (escalated, or on an OS that confines no command): nothing. Whatever such a line reads or
/// runs besides its own words — a Makefile, `node_modules/.bin`, a module beside it, a file
/// named in it that is now a symlink out of the roots — the agent can change between two runs,
/// and no grant can see that; so each run is asked.
const UNSANDBOXED: Scope = Scope::Once;

/// Whether the grants cover `wanted`: a path grant covers paths beneath it; command grants
/// cover a line when every one of its commands is granted (an unsandboxed grant covers
/// sandboxed runs too); nothing covers `Once`.
fn granted(grants: &Grants, wanted: &Scope) -> bool {
    if let Scope::Command { keys, unsandboxed } = wanted {
        return keys.iter().all(|key| {
            grants.iter().any(|grant| match grant {
                Scope::Command { keys: granted, unsandboxed: gu } => granted.contains(key) && (*gu || !*unsandboxed),
                _ => false,
            })
        });
    }
    grants.iter().any(|grant| match (grant, wanted) {
        (Scope::ReadPath(g), Scope::ReadPath(w)) => w.starts_with(g),
        (Scope::WritePath(g), Scope::WritePath(w) | Scope::ReadPath(w)) => w.starts_with(g),
        (Scope::Control, Scope::Control) => true,
        _ => false,
    })
}

/// The directory a path grant covers: the path's parent (a file's directory).
fn parent(path: &Path) -> PathBuf {
    path.parent().map_or_else(|| path.to_path_buf(), Path::to_path_buf)
}

fn ask(reason: String, scope: Scope) -> Decision {
    Decision::Ask { reason, scope }
}

fn deny(reason: String, how_to_allow: &str) -> Decision {
    Decision::Deny { reason, how_to_allow: how_to_allow.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    const POLICIES: [Approval; 4] = [Approval::Never, Approval::OnRequest, Approval::OnWrite, Approval::Always];

    /// `A`llow, a`S`k or `D`eny.
    fn kind(decision: &Decision) -> char {
        match decision {
            Decision::Allow => 'A',
            Decision::Ask { .. } => 'S',
            Decision::Deny { .. } => 'D',
        }
    }

    /// The grant keys of a line, as the classifier would give them (its program, and the
    /// subcommand of `git` and `cargo`).
    fn keys(line: &str) -> Option<Vec<String>> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let key = match words.as_slice() {
            [p @ ("git" | "cargo"), sub, ..] => format!("{p} {sub}"),
            [p, ..] => p.to_string(),
            [] => return None,
        };
        Some(vec![key])
    }

    fn request(subject: Subject, escalate: bool) -> Request {
        Request { subjects: vec![subject], escalate, justification: escalate.then(|| "needed for the build".into()) }
    }

    /// Each row of the module's table: the subject, escalated or not, the sandbox, and the
    /// expected outcome under `never`, `on-request`, `on-write`, `always`.
    #[test]
    fn the_table_row_by_row() {
        let inside = || PathBuf::from("/ws/src/lib.rs");
        let outside = || PathBuf::from("/etc/hosts");
        let hooks = || PathBuf::from("/ws/.git/hooks/pre-commit");
        let forbidden = || CommandClass::Forbidden("rm -rf /".into());
        let ww = SandboxMode::WorkspaceWrite;
        let rows: Vec<(&str, Subject, bool, SandboxMode, &str)> = vec![
            ("forbidden command", Subject::Command("rm -rf /".into(), forbidden(), None), false, ww, "DDDD"),
            ("forbidden command, escalated", Subject::Command("rm -rf /".into(), forbidden(), None), true, ww, "DDDD"),
            ("read outside", Subject::Read(outside(), Location::Outside), false, ww, "DDDD"),
            ("read outside, escalated", Subject::Read(outside(), Location::Outside), true, ww, "DSSS"),
            ("write outside", Subject::Write(outside(), Location::Outside), false, ww, "DDDD"),
            ("write outside, escalated", Subject::Write(outside(), Location::Outside), true, ww, "DSSS"),
            ("write protected", Subject::Write(hooks(), Location::Protected), false, ww, "DSSS"),
            ("write own config", Subject::Write("/ws/.tb.toml".into(), Location::Own), false, ww, "DDDD"),
            ("read a deny_read path", Subject::Read("/ws/.env".into(), Location::Hidden), true, ww, "DDDD"),
            ("write a deny_read path", Subject::Write("/ws/.env".into(), Location::Hidden), true, ww, "DDDD"),
            ("write own config, escalated", Subject::Write("/ws/.tb.toml".into(), Location::Own), true, ww, "DDDD"),
            ("write protected, escalated", Subject::Write(hooks(), Location::Protected), true, ww, "DSSS"),
            (
                "unsandboxed command",
                Subject::Command("make".into(), CommandClass::Other, keys("make")),
                true,
                ww,
                "DSSS",
            ),
            (
                "unsandboxed safe command",
                Subject::Command("ls".into(), CommandClass::KnownSafe, keys("ls")),
                true,
                ww,
                "DSSS",
            ),
            (
                "write in read-only sandbox",
                Subject::Write(inside(), Location::Inside),
                false,
                SandboxMode::ReadOnly,
                "DDDD",
            ),
            (
                "write in read-only, escalated",
                Subject::Write(inside(), Location::Inside),
                true,
                SandboxMode::ReadOnly,
                "DSSS",
            ),
            (
                "write protected in read-only sandbox",
                Subject::Write(hooks(), Location::Protected),
                false,
                SandboxMode::ReadOnly,
                "DDDD",
            ),
            (
                "write protected in read-only, escalated",
                Subject::Write(hooks(), Location::Protected),
                true,
                SandboxMode::ReadOnly,
                "DSSS",
            ),
            ("read inside", Subject::Read(inside(), Location::Inside), false, ww, "AAAS"),
            (
                "read inside, read-only sandbox",
                Subject::Read(inside(), Location::Inside),
                false,
                SandboxMode::ReadOnly,
                "AAAS",
            ),
            ("write inside", Subject::Write(inside(), Location::Inside), false, ww, "AASS"),
            (
                "write inside, full access",
                Subject::Write(inside(), Location::Inside),
                false,
                SandboxMode::FullAccess,
                "AASS",
            ),
            (
                "known-safe command",
                Subject::Command("git status".into(), CommandClass::KnownSafe, keys("git status")),
                false,
                ww,
                "AAAS",
            ),
            (
                "other command",
                Subject::Command("cargo test".into(), CommandClass::Other, keys("cargo test")),
                false,
                ww,
                "AASS",
            ),
            ("control", Subject::Control, false, ww, "AAAS"),
            (
                "dangerous env",
                Subject::Command("ls".into(), CommandClass::DangerousEnv("BASH_ENV".into()), None),
                false,
                ww,
                "DDDD",
            ),
            (
                "dangerous env, escalated",
                Subject::Command("ls".into(), CommandClass::DangerousEnv("BASH_ENV".into()), None),
                true,
                ww,
                "DSSS",
            ),
            (
                "unresolved command",
                Subject::Command("$X".into(), CommandClass::Unresolved("x".into()), None),
                false,
                ww,
                "DSSS",
            ),
        ];
        for (name, subject, escalate, sandbox, expected) in rows {
            let got: String = POLICIES
                .iter()
                .map(|approval| {
                    kind(&decide(
                        &Policy { approval: *approval, sandbox, commands_confined: true },
                        &request(subject.clone(), escalate),
                        &[],
                    ))
                })
                .collect();
            assert_eq!(got, expected, "row `{name}` (never, on-request, on-write, always)");
        }
    }

    #[test]
    fn escalation_needs_a_justification_and_denials_say_how() {
        let policy =
            Policy { approval: Approval::OnRequest, sandbox: SandboxMode::WorkspaceWrite, commands_confined: true };
        let subject = Subject::Write("/etc/x".into(), Location::Outside);
        let bare = Request { subjects: vec![subject.clone()], escalate: true, justification: Some("  ".into()) };
        let Decision::Deny { reason, how_to_allow } = decide(&policy, &bare, &[]) else { panic!("must deny") };
        assert!(reason.contains("justification") && how_to_allow.contains("justification"));
        let Decision::Deny { how_to_allow, .. } = decide(&policy, &request(subject, false), &[]) else { panic!() };
        assert!(how_to_allow.contains("escalate: true"), "{how_to_allow}");
    }

    #[test]
    fn the_strictest_subject_wins() {
        let policy =
            Policy { approval: Approval::OnRequest, sandbox: SandboxMode::WorkspaceWrite, commands_confined: true };
        let mixed = Request {
            subjects: vec![
                Subject::Read("/ws/a".into(), Location::Inside),
                Subject::Write("/ws/.git/config".into(), Location::Protected),
                Subject::Write("/etc/x".into(), Location::Outside),
            ],
            escalate: false,
            justification: None,
        };
        assert_eq!(kind(&decide(&policy, &mixed, &[])), 'D');
        let empty = Request { subjects: vec![], escalate: false, justification: None };
        assert_eq!(kind(&decide(&policy, &empty, &[])), 'A');
        let always = Policy { approval: Approval::Always, ..policy };
        assert_eq!(kind(&decide(&always, &empty, &[])), 'S', "`always` asks even for calls without subjects");
    }

    #[test]
    fn without_a_command_sandbox_every_command_not_known_read_only_is_asked() {
        let run = |line: &str, class| request(Subject::Command(line.into(), class, keys(line)), false);
        for sandbox in [SandboxMode::ReadOnly, SandboxMode::WorkspaceWrite, SandboxMode::FullAccess] {
            let got: String = POLICIES
                .iter()
                .map(|approval| {
                    let policy = Policy { approval: *approval, sandbox, commands_confined: false };
                    let other = kind(&decide(&policy, &run("cargo build", CommandClass::Other), &[]));
                    let safe = kind(&decide(&policy, &run("git status", CommandClass::KnownSafe), &[]));
                    format!("{other}{safe}")
                })
                .collect();
            // never, on-request, on-write, always: the unknown command is denied or asked,
            // the read-only one runs (asked only under `always`).
            assert_eq!(got, "DASASASS", "{sandbox:?}");
        }
        let policy =
            Policy { approval: Approval::OnRequest, sandbox: SandboxMode::WorkspaceWrite, commands_confined: false };
        let Decision::Ask { reason, scope } = decide(&policy, &run("cargo build", CommandClass::Other), &[]) else {
            panic!("asks")
        };
        assert!(reason.contains("nothing confines commands"), "{reason}");
        let grants = [scope];
        // Nothing confines it: nothing is granted for the session, the same line is asked again.
        assert_eq!(grants[0], Scope::Once);
        assert_eq!(kind(&decide(&policy, &run("cargo build", CommandClass::Other), &grants)), 'S');
    }

    #[test]
    fn grants_cover_their_scope_only() {
        let policy =
            Policy { approval: Approval::OnWrite, sandbox: SandboxMode::WorkspaceWrite, commands_confined: true };
        let write = |p: &str| request(Subject::Write(p.into(), Location::Inside), false);
        let Decision::Ask { scope, .. } = decide(&policy, &write("/ws/src/a.rs"), &[]) else { panic!("asks") };
        assert_eq!(scope, Scope::WritePath("/ws/src".into()));
        let grants = [scope];
        assert_eq!(kind(&decide(&policy, &write("/ws/src/deep/b.rs"), &grants)), 'A');
        assert_eq!(kind(&decide(&policy, &write("/ws/srcx/b.rs"), &grants)), 'S', "component-wise prefix");
        let run =
            |line: &str, escalate| request(Subject::Command(line.into(), CommandClass::Other, keys(line)), escalate);
        let Decision::Ask { scope, .. } = decide(&policy, &run("cargo test --all", false), &[]) else { panic!() };
        assert_eq!(scope, Scope::Command { keys: vec!["cargo test".into()], unsandboxed: false });
        let cargo = [scope];
        assert_eq!(kind(&decide(&policy, &run("cargo test --release", false), &cargo)), 'A');
        assert_eq!(kind(&decide(&policy, &run("cargo publish", false), &cargo)), 'S', "another subcommand");
        assert_eq!(kind(&decide(&policy, &run("cargo-evil x", false), &cargo)), 'S');
        assert_eq!(
            kind(&decide(&policy, &run("cargo test", true), &cargo)),
            'S',
            "a sandboxed grant does not cover escalation"
        );
        // A line is covered only when every command of it is granted.
        let two = Subject::Command(
            "git status; curl x".into(),
            CommandClass::Other,
            Some(vec!["git status".into(), "curl".into()]),
        );
        let git = [Scope::Command { keys: vec!["git status".into()], unsandboxed: false }];
        assert_eq!(kind(&decide(&policy, &request(two, false), &git)), 'S');
        // What cannot be granted asks every time.
        let unresolved = Subject::Command("$X".into(), CommandClass::Unresolved("a variable".into()), None);
        let Decision::Ask { scope, .. } = decide(&policy, &request(unresolved.clone(), false), &git) else { panic!() };
        assert_eq!(scope, Scope::Once);
        assert_eq!(kind(&decide(&policy, &request(unresolved, false), &[Scope::Once])), 'S');
        let protected = request(Subject::Write("/ws/.git/config".into(), Location::Protected), false);
        let everything_written = [Scope::WritePath("/ws".into())];
        assert_eq!(
            kind(&decide(&policy, &protected, &everything_written)),
            'S',
            "no directory grant covers a protected path"
        );
        let forbidden =
            request(Subject::Command("rm -rf /".into(), CommandClass::Forbidden("rm -r /".into()), None), false);
        let everything = [Scope::Command { keys: vec!["rm".into()], unsandboxed: true }];
        assert_eq!(kind(&decide(&policy, &forbidden, &everything)), 'D', "no grant lifts a forbidden rule");
    }
}
