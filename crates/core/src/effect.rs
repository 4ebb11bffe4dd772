//! The words a call and the gate share: what an operation does to the world (`Effect`), and
//! how a message to the client's log is sent (`Severity`, `Notify`).

/// What an operation does to the world, with its subjects. The gate decides on this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Reads the given paths (as the model gave them; the gate resolves them).
    Read(Vec<String>),
    /// Creates, changes or removes the given paths.
    Write(Vec<String>),
    /// Changes files the session's own history names (undo): each is confined at run time.
    History,
    /// Runs a command line under the sandbox (a new process, or input typed into a running
    /// session), in `cwd` when given (confined to the roots).
    Exec {
        /// The command line or input.
        command: String,
        /// The working directory as the model gave it.
        cwd: Option<String>,
        /// `NAME=value` entries added to its environment.
        env: Vec<String>,
        /// Text written to its stdin.
        stdin: Option<String>,
    },
    /// Acts on a running session of this connection (sends it a signal).
    Control,
    /// Changes the server's own records (todo lists, memories), never a file of the workspace.
    Record,
}

impl Effect {
    /// `read`, `write`, `history`, `exec` or `control`, for the audit log.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Read(_) => "read",
            Self::Write(_) => "write",
            Self::History => "history",
            Self::Exec { .. } => "exec",
            Self::Control => "control",
            Self::Record => "record",
        }
    }
}

/// How serious a message to the client's log is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Normal but significant.
    Notice,
    /// Something is wrong, work goes on.
    Warning,
    /// A call failed for a reason on the server's side.
    Error,
}

/// Sends a message to the client's log.
pub type Notify = dyn Fn(Severity, String) + Send + Sync;
