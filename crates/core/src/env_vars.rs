//! Every `TOOLBELT_*` environment variable anything in this repository reads, declared once
//! with what it does (the README's table of them is checked against this list by a test).

/// An environment variable the program, its tests or its launcher read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvVar {
    /// Its name.
    pub name: &'static str,
    /// What it does, as the README's table says it.
    pub doc: &'static str,
    /// The values it takes, as an error names them when a value is not one.
    pub values: &'static str,
    /// Who sets it.
    pub audience: Audience,
}

/// Who sets an environment variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// The user, as the flag or config key of the same name (the configuration table lists it).
    User,
    /// The npm launcher, for `doctor`.
    Launcher,
    /// Whoever runs the tests, benches and CI.
    Tests,
}

/// The directories the tools may use.
pub const ROOT: EnvVar = EnvVar {
    name: "TOOLBELT_ROOT",
    doc: "the directories the tools may use (`--root`)",
    values: "directories separated by `:` (`;` on Windows)",
    audience: Audience::User,
};
/// The config file.
pub const CONFIG: EnvVar = EnvVar {
    name: "TOOLBELT_CONFIG",
    doc: "the TOML config file to read (`--config`); it must exist",
    values: "a file path",
    audience: Audience::User,
};
/// Where state lives.
pub const STATE_DIR: EnvVar = EnvVar {
    name: "TOOLBELT_STATE_DIR",
    doc: "where state lives (`--state-dir`)",
    values: "a directory path",
    audience: Audience::User,
};
/// Where todo lists and memories are kept.
pub const STORE: EnvVar = EnvVar {
    name: "TOOLBELT_STORE",
    doc: "where todo lists and memories are kept (`--store`)",
    values: "`sqlite` or a PostgreSQL URL",
    audience: Audience::User,
};
/// The workspace todo lists and memories belong to.
pub const WORKSPACE: EnvVar = EnvVar {
    name: "TOOLBELT_WORKSPACE",
    doc: "the workspace todo lists and memories belong to (`--workspace`)",
    values: "1 to 256 characters without control characters",
    audience: Audience::User,
};
/// How operations are exposed as tools.
pub const TOOL_LAYOUT: EnvVar = EnvVar {
    name: "TOOLBELT_TOOL_LAYOUT",
    doc: "how operations are exposed as tools (`--tool-layout`)",
    values: "`consolidated` or `granular`",
    audience: Audience::User,
};
/// Most bytes of text in one tool result.
pub const OUTPUT_BUDGET: EnvVar = EnvVar {
    name: "TOOLBELT_OUTPUT_BUDGET",
    doc: "most bytes of text one tool result carries (`--output-budget`)",
    values: "a number of bytes, e.g. `32768`",
    audience: Audience::User,
};
/// How commands are confined.
pub const SANDBOX: EnvVar = EnvVar {
    name: "TOOLBELT_SANDBOX",
    doc: "how commands are confined (`--sandbox`)",
    values: "`read-only`, `workspace-write` or `full-access`",
    audience: Audience::User,
};
/// How commands reach other hosts.
pub const NETWORK: EnvVar = EnvVar {
    name: "TOOLBELT_NETWORK",
    doc: "how commands reach other hosts (`--network`)",
    values: "`allow`, `allowlist`, `deny` or `host`",
    audience: Audience::User,
};
/// When to ask the user.
pub const APPROVAL: EnvVar = EnvVar {
    name: "TOOLBELT_APPROVAL",
    doc: "when to ask the user (`--approval`)",
    values: "`never`, `on-request`, `on-write` or `always`",
    audience: Audience::User,
};
/// Where the audit log goes.
pub const AUDIT_LOG: EnvVar = EnvVar {
    name: "TOOLBELT_AUDIT_LOG",
    doc: "where the audit log goes, or `off` (`--audit-log`)",
    values: "a file path or `off`",
    audience: Audience::User,
};
/// The HTTP bearer token, for the server and for the agent connecting to one.
pub const AUTH_TOKEN: EnvVar = EnvVar {
    name: "TOOLBELT_AUTH_TOKEN",
    doc: "the bearer token of `serve --http` (instead of `--auth-token-file`), and the one `agent --server-url` sends",
    values: "a token of printable ASCII characters without spaces",
    audience: Audience::User,
};
/// Set by the npm launcher so `doctor` can say how the binary was started.
pub const LAUNCHER: EnvVar = EnvVar {
    name: "TOOLBELT_LAUNCHER",
    doc: "set by the npm launcher: `doctor` reports it as how the binary was started",
    values: "a description of the launcher",
    audience: Audience::Launcher,
};
/// Prints how long each step of setting up a sandboxed command took.
pub const SANDBOX_TIMINGS: EnvVar = EnvVar {
    name: "TOOLBELT_SANDBOX_TIMINGS",
    doc: "when set, each step of a sandboxed command's setup prints its time on stderr (Linux)",
    values: "any value",
    audience: Audience::Tests,
};
/// How long the read-race test runs.
pub const RACE_SECS: EnvVar = EnvVar {
    name: "TOOLBELT_RACE_SECS",
    doc: "how long the read-race test runs, in seconds (5; CI: 30)",
    values: "a number of seconds",
    audience: Audience::Tests,
};
/// Where the integration suite makes its workspaces.
pub const TEST_SCRATCH: EnvVar = EnvVar {
    name: "TOOLBELT_TEST_SCRATCH",
    doc: "where the integration suite makes its workspaces (default: `target/tmp`, or `~/toolbelt-mcp-tests` when the checkout is under a temp dir)",
    values: "a directory path",
    audience: Audience::Tests,
};
/// The RustSec advisory database the advisories test reads.
pub const ADVISORY_DB: EnvVar = EnvVar {
    name: "TOOLBELT_ADVISORY_DB",
    doc: "the RustSec advisory database the advisories test checks `Cargo.lock` against (default `audit/advisory-db`)",
    values: "a directory path",
    audience: Audience::Tests,
};
/// Rewrites the Seatbelt profile snapshots instead of comparing with them.
pub const UPDATE_SNAPSHOTS: EnvVar = EnvVar {
    name: "TOOLBELT_UPDATE_SNAPSHOTS",
    doc: "when set, the Seatbelt profile tests rewrite their snapshots instead of comparing",
    values: "any value",
    audience: Audience::Tests,
};
/// The binary the real-host tests drive.
pub const BIN: EnvVar = EnvVar {
    name: "TOOLBELT_BIN",
    doc: "the binary `tests/hosts/run.py` drives (default `target/release/toolbelt-mcp`)",
    values: "an executable path",
    audience: Audience::Tests,
};
/// Where the real-host tests keep the hosts they install.
pub const HOSTS_CACHE: EnvVar = EnvVar {
    name: "TOOLBELT_HOSTS_CACHE",
    doc: "where `tests/hosts/run.py` keeps the hosts it installs (default `~/.cache/toolbelt-hosts`)",
    values: "a directory path",
    audience: Audience::Tests,
};

/// Where the conformance run keeps the suite and Node 22 it installs.
pub const CONFORMANCE_CACHE: EnvVar = EnvVar {
    name: "TOOLBELT_CONFORMANCE_CACHE",
    doc: "where `tests/conformance/run.py` keeps the conformance suite and Node 22 it installs (default `~/.cache/toolbelt-conformance`)",
    values: "a directory path",
    audience: Audience::Tests,
};

/// Where `npm/link-ordered.py` keeps the symbols of the binary it links.
pub const KEEP_SYMBOLS: EnvVar = EnvVar {
    name: "TOOLBELT_KEEP_SYMBOLS",
    doc: "where `npm/link-ordered.py` keeps a copy of the binary it links, symbols and all (for `npm/collect-link-order.py`)",
    values: "a file path",
    audience: Audience::Tests,
};
/// The linker `npm/link-ordered.py` hands the link to.
pub const REAL_LINKER: EnvVar = EnvVar {
    name: "TOOLBELT_REAL_LINKER",
    doc: "the linker `npm/link-ordered.py` hands the link to (default `cc`)",
    values: "a program",
    audience: Audience::Tests,
};
/// Whether `npm/link-ordered.py` fails a link it cannot lay out.
pub const LAYOUT_STRICT: EnvVar = EnvVar {
    name: "TOOLBELT_LAYOUT_STRICT",
    doc: "`1`: `npm/link-ordered.py` fails a link whose start-up layout cannot be made (stale list, no lld) instead of linking plainly (the packaged builds set it)",
    values: "`1`",
    audience: Audience::Tests,
};

/// All of them, in the README's order.
pub const ALL: &[EnvVar] = &[
    ROOT,
    CONFIG,
    STATE_DIR,
    STORE,
    WORKSPACE,
    TOOL_LAYOUT,
    OUTPUT_BUDGET,
    SANDBOX,
    NETWORK,
    APPROVAL,
    AUDIT_LOG,
    AUTH_TOKEN,
    LAUNCHER,
    SANDBOX_TIMINGS,
    RACE_SECS,
    TEST_SCRATCH,
    ADVISORY_DB,
    UPDATE_SNAPSHOTS,
    BIN,
    HOSTS_CACHE,
    CONFORMANCE_CACHE,
    KEEP_SYMBOLS,
    REAL_LINKER,
    LAYOUT_STRICT,
];

/// The README's table of them: one row per variable, `| name | doc |`.
pub fn readme_table() -> String {
    let mut table = String::from("| variable | what it does |\n|---|---|\n");
    for var in ALL {
        table.push_str(&format!("| `{}` | {} |\n", var.name, var.doc));
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_distinct_and_prefixed() {
        for (i, var) in ALL.iter().enumerate() {
            assert!(var.name.starts_with("TOOLBELT_"), "{}", var.name);
            assert!(ALL[..i].iter().all(|other| other.name != var.name), "{} twice", var.name);
            assert!(!var.doc.is_empty() && !var.values.is_empty(), "{}", var.name);
        }
    }
}
