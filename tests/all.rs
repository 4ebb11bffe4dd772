//! The one integration-test binary: every suite spawns the real `toolbelt-mcp` and speaks
//! MCP to it with rmcp's client, on a copy of `fixtures/workspace`.
//!
//! Unix only: the suites drive POSIX shells, signals and PTYs. The Windows build is checked
//! by `tests/cross/wine_smoke.py` (the official Python SDK against the binary under Wine).
#![cfg(unix)]
#![allow(clippy::disallowed_methods, clippy::unwrap_used, clippy::expect_used)]

mod suite;
