//! The policy gate: `Gate::check` runs inside the one function that can call an operation's
//! `run`, so no operation skips it. It decides on the operation's declared effect; today it
//! confines every path to the roots (the approval table comes with its own release).

use crate::error::ToolError;
use crate::sandbox::{Resolved, Roots};
use crate::tools::Effect;

/// The gate every call passes before its operation runs.
pub struct Gate;

impl Gate {
    /// Checks an effect against the session's roots. Returns the resolved subjects, which
    /// are the only paths the operation receives; denies with a message naming the roots.
    pub fn check(effect: &Effect, roots: &Roots) -> Result<Vec<Resolved>, ToolError> {
        match effect {
            Effect::Read(paths) => paths.iter().map(|path| roots.resolve(path)).collect(),
        }
    }
}
