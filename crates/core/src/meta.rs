//! The `_meta` keys the server writes and its own client (the agent) reads.

/// The tool `_meta` key listing the `operation` values that only read (see
/// `ToolSpec::read_only_operations`); the agent runs such calls in parallel.
pub const READ_ONLY_OPERATIONS: &str = "toolbelt-mcp/readOnlyOperations";
