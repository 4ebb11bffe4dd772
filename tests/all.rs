//! The one integration-test binary: every suite spawns the real `toolbelt-mcp` and speaks
//! MCP to it with rmcp's client, on a copy of `fixtures/workspace`.
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

mod suite;
