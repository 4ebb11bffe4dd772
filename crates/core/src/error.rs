//! Error types at the crate's boundaries: what a tool call tells the model, and what startup tells the user.

use std::path::PathBuf;

/// A failure the model can act on. Every variant reaches the model as the text of an
/// `isError` tool result, so each message says what was wrong and what to send instead.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The arguments did not fit the operation's fields.
    #[error("invalid arguments for `{operation}`: {message}. Accepted fields: {accepted}")]
    InvalidArguments {
        /// The operation whose arguments were wrong.
        operation: &'static str,
        /// What serde (or a check) found.
        message: String,
        /// The operation's fields, required ones marked.
        accepted: String,
    },
    /// A field whose value is out of its range.
    #[error("`{field}` = {value} is out of range: {expected}")]
    BadValue {
        /// The field.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// No `operation` field, or one this tool does not have.
    #[error("{problem}. Set `operation` to one of: {accepted}")]
    BadOperation {
        /// What was wrong with the `operation` field.
        problem: String,
        /// The tool's operations.
        accepted: String,
    },
    /// A path that lies outside every root.
    #[error(
        "`{path}` is outside the allowed roots ({roots}); use a path inside them (relative paths start at `{first_root}`), or set `escalate: true` with a `justification` to ask the user"
    )]
    OutsideRoots {
        /// The path as given.
        path: String,
        /// The roots, comma separated.
        roots: String,
        /// The root that relative paths resolve against.
        first_root: String,
    },
    /// A path inside a root that leads outside through a symlink.
    #[error(
        "`{path}` is a symlink (or goes through one) that resolves to `{target}`, outside the allowed roots ({roots}); only paths that stay inside the roots can be used, unless you set `escalate: true` with a `justification` to ask the user"
    )]
    SymlinkEscape {
        /// The path as given.
        path: String,
        /// Where it really points.
        target: PathBuf,
        /// The roots, comma separated.
        roots: String,
    },
    /// A write target that cannot be one.
    #[error("`{path}` {problem}")]
    BadTarget {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A write aimed at a symlink (writes never follow one).
    #[error(
        "`{path}` is a symlink (to `{link}`); writes never follow symlinks: write to the file it points to instead"
    )]
    SymlinkTarget {
        /// The path as given.
        path: String,
        /// The link's target text.
        link: String,
    },
    /// Something already exists where a new file or directory was to be created.
    #[error("`{path}` already exists ({what}); set `overwrite: true` to replace a file, or pick another name")]
    AlreadyExists {
        /// The path.
        path: String,
        /// What is there.
        what: &'static str,
    },
    /// A protected path met while replaying history (`undo`), which never asks the user.
    #[error("`{path}` is protected ({why}); `undo` does not change it. Ask the user to make the change")]
    Protected {
        /// The path.
        path: String,
        /// Why it is protected.
        why: &'static str,
    },
    /// The file changed since the caller read it.
    #[error(
        "`{path}` changed since it was read (expected sha256 {expected}, now {actual}); read it again and redo the edit"
    )]
    StaleHash {
        /// The path.
        path: String,
        /// The hash the caller gave.
        expected: String,
        /// The current hash.
        actual: String,
    },
    /// Another process held the file's edit lock for the whole wait.
    #[error(
        "`{path}` is being edited by another process (it held the file's edit lock for {seconds} s); try again in a moment"
    )]
    Locked {
        /// The path.
        path: String,
        /// How long this call waited.
        seconds: u64,
    },
    /// An edit whose text was not found, or found too often.
    #[error("{0}")]
    EditFailed(String),
    /// Nothing exists at the path.
    #[error("`{path}` does not exist; check the name with `list_dir` or `file_search`")]
    NotFound {
        /// The path as given.
        path: String,
    },
    /// A directory where a file was needed.
    #[error("`{path}` is a directory; use `list_dir` to see its entries or `read_file` on a file inside it")]
    IsADirectory {
        /// The path as given.
        path: String,
    },
    /// A file where a directory was needed.
    #[error("`{path}` is not a directory; use `read_file` to read it or give its parent directory")]
    NotADirectory {
        /// The path as given.
        path: String,
    },
    /// A binary file asked for as text.
    #[error(
        "`{path}` is a binary file ({kind}, {size}) and cannot be shown as text; read a text file instead (images png/jpeg/gif/webp are returned as images)"
    )]
    Binary {
        /// The path as given.
        path: String,
        /// The detected type.
        kind: String,
        /// Its size, human readable.
        size: String,
    },
    /// A file too large for what was asked.
    #[error("`{path}` is {size}, over the {limit} limit for {what}")]
    TooLarge {
        /// The path as given.
        path: String,
        /// Its size, human readable.
        size: String,
        /// The limit, human readable.
        limit: String,
        /// What the limit applies to.
        what: &'static str,
    },
    /// A line window that starts after the end of the file.
    #[error("`offset` {offset} is past the end of `{path}`, which has {total} lines; use an offset from 1 to {total}")]
    OffsetPastEnd {
        /// The path as given.
        path: String,
        /// The requested 1-based line.
        offset: u64,
        /// Lines in the file.
        total: u64,
    },
    /// A glob that does not parse.
    #[error("invalid glob `{pattern}`: {message}; globs look like `**/*.rs` or `src/*.{{js,ts}}`")]
    InvalidGlob {
        /// The glob as given.
        pattern: String,
        /// The parser's message.
        message: String,
    },
    /// A regex that does not parse.
    #[error(
        "invalid regex `{pattern}`:\n{message}\nfix the pattern (Rust regex syntax), or set `fixed_strings: true` to search for it literally"
    )]
    InvalidRegex {
        /// The pattern as given.
        pattern: String,
        /// The parser's message.
        message: String,
    },
    /// The operating system refused an access.
    #[error("cannot {action} `{path}`: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The path as given.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A bug on our side; the model can only retry or report it.
    /// The policy refuses the call.
    #[error("denied: {reason}; {how_to_allow}")]
    Denied {
        /// Why.
        reason: String,
        /// What would allow it.
        how_to_allow: String,
    },
    /// The call needs the user's approval and the client cannot ask.
    #[error(
        "denied: {reason}, which needs the user's approval, and this client cannot ask the user (it does not support MCP elicitation). {how_to_allow}"
    )]
    NoApprover {
        /// What needed approval.
        reason: String,
        /// What the user can change.
        how_to_allow: String,
    },
    /// A person declined.
    #[error("the user denied it: {reason}{}; do not retry the same call, ask the user or take another way", note.as_ref().map(|n| format!(" (their note: {n})")).unwrap_or_default())]
    UserDenied {
        /// What was asked.
        reason: String,
        /// The user's note to the agent.
        note: Option<String>,
    },
    /// The call needs the user's approval and nobody decided: the client cancelled the
    /// question, answered it before any person could read it, or no answer came in time.
    #[error(
        "not run: this needs the user's approval ({reason}), but nobody was asked: {why}. {how_to_allow} Tell the user; do not retry the same call until they change a setting"
    )]
    NotAsked {
        /// What needed approval.
        reason: String,
        /// Why no person decided.
        why: String,
        /// What the user can change, on the server and in their host.
        how_to_allow: String,
    },
    /// The user must be asked first: the transport turns this into an input-required result
    /// (protocol 2026-07-28) and the client retries with the answer.
    #[error("this call needs the user's approval: {message}")]
    InputRequired {
        /// The question.
        message: String,
        /// The state the client echoes with its answer.
        state: String,
    },
    /// A command that cannot be confined as the sandbox mode requires (so it did not run).
    #[error("{0}")]
    Sandbox(String),
    /// A command or session that could not be started.
    #[error(
        "cannot start `{program}`: {source}; check the `shell` setting (or the `shell` field) names an installed program"
    )]
    Spawn {
        /// The program.
        program: String,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// The limit on running sessions is reached.
    #[error(
        "{limit} sessions are already running, the limit; end one with `kill_session` (see `list_sessions`), or raise `max_sessions` in the config"
    )]
    TooManySessions {
        /// The limit.
        limit: usize,
    },
    /// A session id that is not (or no longer) known.
    #[error(
        "no session `{id}`; the sessions are: {known}. Ended sessions are forgotten after an hour or with `kill_session {{remove: true}}`"
    )]
    NoSession {
        /// The id given.
        id: String,
        /// The ids there are.
        known: String,
    },
    /// An operation that needs another kind of session.
    #[error("session `{id}` {problem}")]
    WrongSession {
        /// The session.
        id: String,
        /// What it cannot do, and what to do instead.
        problem: String,
    },
    /// The todo and memory store failed, or a request broke one of its rules.
    #[error(transparent)]
    Store(StoreFailure),
    /// The client cancelled the call and it stopped.
    #[error("cancelled: the client cancelled this call and it stopped; call it again to get the answer")]
    Cancelled,
    /// `delegate` has no model to run its sub-agent with.
    #[error("`delegate` has no model: {0}")]
    NoModel(String),
    /// The sub-agent could not start.
    #[error("the sub-agent did not start: {0}")]
    Delegation(String),
    #[error("internal error: {0}; this is a bug in toolbelt-mcp, please report it")]
    Internal(String),
}

impl ToolError {
    /// Checks that a numeric field, when given, is within `min..=max`.
    pub fn check_range(
        field: &'static str,
        value: Option<usize>,
        min: usize,
        max: usize,
        expected: &'static str,
    ) -> Result<(), Self> {
        match value {
            Some(v) if v < min || v > max => {
                Err(Self::BadValue { field, value: v.to_string(), expected: expected.into() })
            }
            _ => Ok(()),
        }
    }

    /// Wraps an I/O error with the path and action, mapping "not found" and "is a directory"
    /// to their own, more helpful variants.
    pub fn io(action: &'static str, path: &str, source: std::io::Error) -> Self {
        match source.kind() {
            std::io::ErrorKind::NotFound => Self::NotFound { path: path.into() },
            std::io::ErrorKind::IsADirectory => Self::IsADirectory { path: path.into() },
            std::io::ErrorKind::NotADirectory => Self::NotADirectory { path: path.into() },
            _ => Self::Io { action, path: path.into(), source },
        }
    }
}

/// A problem with the configuration, reported at startup before anything is served.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// An audit log path the agent could change or that would write somewhere else.
    #[error("audit log `{path}` {problem}")]
    AuditLog {
        /// The log as given.
        path: PathBuf,
        /// What is wrong with it, and what to do.
        problem: String,
    },
    /// A root that does not exist or is not a directory.
    #[error("root `{path}` {problem}; pass an existing directory with `--root DIR`")]
    BadRoot {
        /// The root as given.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// A `writable_roots` entry that does not exist or is not a directory.
    #[error("writable root `{path}` {problem}; list existing directories in `writable_roots`")]
    BadWritableRoot {
        /// The directory as given.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// The config file could not be read.
    #[error("cannot read config file `{path}`: {source}; fix the path given to `--config` (or `TOOLBELT_CONFIG`)")]
    ReadFile {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The config file is not valid TOML for our keys.
    #[error("invalid config file `{path}`: {message}")]
    ParseFile {
        /// The file.
        path: PathBuf,
        /// What the parser said, including unknown keys.
        message: String,
    },
    /// An environment variable with a value we cannot use.
    #[error("invalid value `{value}` in environment variable `{name}`: {expected}")]
    BadEnv {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
        /// What it should be.
        expected: &'static str,
    },
    /// A value out of range.
    #[error("invalid `{key}` = {value}: {expected}")]
    OutOfRange {
        /// The setting.
        key: &'static str,
        /// The value given.
        value: String,
        /// What is accepted.
        expected: &'static str,
    },
    /// A `network_allow` entry that names no host.
    #[error(
        "invalid `network_allow` entry `{value}`: {problem}; write `name`, `*.domain`, an address or `[IPv6]`, each with an optional `:port`"
    )]
    NetworkAllow {
        /// The entry.
        value: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A `serve --http` setting that cannot be used; the message says what to send instead.
    #[error("{0}")]
    Http(String),
    /// No current directory and no root given.
    #[error("cannot determine the current directory ({0}); pass `--root DIR`")]
    NoCurrentDir(#[source] std::io::Error),
}

/// The sandbox's facts in the model's words (the same texts and next steps as ever).
impl From<toolbelt_mcp_sandbox::Error> for ToolError {
    fn from(err: toolbelt_mcp_sandbox::Error) -> Self {
        use crate::units::human_size;
        use toolbelt_mcp_sandbox::Error as E;
        match err {
            E::OutsideRoots { path, roots, first_root } => Self::OutsideRoots { path, roots, first_root },
            E::SymlinkEscape { path, target, roots } => Self::SymlinkEscape { path, target, roots },
            E::BadTarget { path, problem } => Self::BadTarget { path, problem },
            E::SymlinkTarget { path, link } => Self::SymlinkTarget { path, link },
            E::AlreadyExists { path, what } => Self::AlreadyExists { path, what },
            E::StaleHash { path, expected, actual } => Self::StaleHash { path, expected, actual },
            E::Locked { path, seconds } => Self::Locked { path, seconds },
            E::NotFound { path } => Self::NotFound { path },
            E::IsADirectory { path } => Self::IsADirectory { path },
            E::NotADirectory { path } => Self::NotADirectory { path },
            E::TooLarge { path, size, limit, what } => Self::TooLarge {
                path,
                size: size.map_or_else(|| format!("over {}", human_size(limit)), human_size),
                limit: human_size(limit),
                what,
            },
            E::Io { action, path, source } => Self::Io { action, path, source },
            E::Cancelled => Self::Cancelled,
            E::Internal(message) => Self::Internal(message),
        }
    }
}

/// A failure of the todo and memory store in its own words (what happened and what to do),
/// and whether it is a rule the request broke rather than the store failing.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct StoreFailure {
    /// The store's text.
    pub message: String,
    /// A rule the request broke (a bad name, a full list): the model's to fix, not the
    /// server's failure.
    pub rule: bool,
}

impl StoreFailure {
    /// Whether a request broke one of the store's rules.
    pub fn is_rule(&self) -> bool {
        self.rule
    }
}
