//! The policy gate: `Gate::check` runs inside the one function that can call an operation's
//! `run`, so no operation skips it. It decides on the operation's declared effect: today it
//! confines every path to the roots and keeps protected paths unwritable (the approval table
//! comes with its own release).

use std::path::{Component, Path};

use crate::cli::SandboxMode;
use crate::error::ToolError;
use crate::sandbox::Resolved;
use crate::sandbox::write::Target;
use crate::tools::{Context, Effect};

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
}

impl Gate {
    /// Checks an effect against the session's roots; denies with a message naming the roots
    /// or the protection.
    pub fn check(effect: &Effect, context: &Context) -> Result<Approved, ToolError> {
        match effect {
            Effect::Read(paths) => {
                let subjects = paths.iter().map(|path| context.roots.resolve(path)).collect::<Result<_, _>>()?;
                Ok(Approved { subjects, targets: Vec::new(), cwd: None })
            }
            Effect::Write(_) | Effect::History if context.config.sandbox == SandboxMode::ReadOnly => {
                Err(ToolError::ReadOnlySandbox)
            }
            Effect::Write(paths) => {
                let mut targets = Vec::with_capacity(paths.len());
                for path in paths {
                    let target = Target::resolve(&context.roots, path)?;
                    if let Some(why) = protection(target.real(), context) {
                        return Err(ToolError::Protected { path: target.shown().into(), why });
                    }
                    targets.push(target);
                }
                Ok(Approved { subjects: Vec::new(), targets, cwd: None })
            }
            Effect::History | Effect::Control => Ok(Approved { subjects: Vec::new(), targets: Vec::new(), cwd: None }),
            Effect::Exec { cwd, .. } => {
                let cwd = match cwd {
                    Some(dir) => {
                        let resolved = context.roots.resolve(dir)?;
                        if !crate::sandbox::fs::is_dir(resolved.real()) {
                            return Err(ToolError::NotADirectory { path: dir.clone() });
                        }
                        Some(resolved)
                    }
                    None => None,
                };
                Ok(Approved { subjects: Vec::new(), targets: Vec::new(), cwd })
            }
        }
    }

    /// Whether `path` may be written by history replay (undo): the same protections apply.
    pub fn check_protected(path: &Path, shown: &str, context: &Context) -> Result<(), ToolError> {
        match protection(path, context) {
            Some(why) => Err(ToolError::Protected { path: shown.into(), why }),
            None => Ok(()),
        }
    }
}

/// Why a path may not be written, if it is protected: git hooks and config run code outside
/// any sandbox, and the server's own config and state decide its policy.
fn protection(path: &Path, context: &Context) -> Option<&'static str> {
    let names: Vec<&std::ffi::OsStr> =
        path.components().filter_map(|c| if let Component::Normal(n) = c { Some(n) } else { None }).collect();
    for window in names.windows(2) {
        if window[0] == ".git" && (window[1] == "hooks" || window[1] == "config") {
            return Some("git hooks and git config can run commands outside the sandbox");
        }
    }
    if path.starts_with(&context.config.state_dir) {
        return Some("it is the server's own state");
    }
    if context.config.config_file.as_deref().is_some_and(|file| path == file) {
        return Some("it is the server's own configuration");
    }
    None
}
