//! The sandbox's two settings a user names (on the command line and in config files): how
//! commands are confined, and how they reach other hosts.

use serde::Deserialize;

/// How commands are confined (Landlock), and whether file writes are offered at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Read and execute everywhere; write nowhere but a private temp dir (file writes are
    /// not offered).
    ReadOnly,
    /// Also write inside the roots, the system temp dir and `writable_roots`.
    #[default]
    WorkspaceWrite,
    /// No Landlock: commands run with the server's own rights.
    FullAccess,
}

impl SandboxMode {
    /// The name used on the command line and in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ReadOnly => "read-only",
            Self::WorkspaceWrite => "workspace-write",
            Self::FullAccess => "full-access",
        }
    }
}

/// Whether sandboxed commands may reach other hosts, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, serde::Serialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum Network {
    /// A network namespace of its own, and a proxy (HTTP and SOCKS5, resolving names itself)
    /// to every public address: loopback, private, link-local and metadata addresses only
    /// when listed in `network_allow`.
    #[default]
    Allow,
    /// The same, but only to the hosts `network_allow` lists.
    Allowlist,
    /// A network namespace of its own with only loopback up: nothing outside the command is
    /// reachable (local servers it starts itself are).
    Deny,
    /// The machine's network, as the server has it: every service on this machine's loopback
    /// too. Not with `serve --http` (a command could then reach the server itself).
    Host,
}

impl Network {
    /// The name used on the command line and in config files.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Allowlist => "allowlist",
            Self::Deny => "deny",
            Self::Host => "host",
        }
    }

    /// Whether commands get a network namespace of their own (all but `host`).
    pub fn own_namespace(self) -> bool {
        self != Self::Host
    }

    /// Whether commands reach other hosts through the proxy (`allow`, `allowlist`).
    pub fn proxied(self) -> bool {
        matches!(self, Self::Allow | Self::Allowlist)
    }
}

/// What `allowlist` mode lets commands reach besides `network_allow`, unless the user drops it
/// (`network_allow_defaults = false`): the common package registries and forges, on 443.
pub const REGISTRIES: &[&str] = &[
    "registry.npmjs.org:443",
    "registry.yarnpkg.com:443",
    "pypi.org:443",
    "files.pythonhosted.org:443",
    "crates.io:443",
    "index.crates.io:443",
    "static.crates.io:443",
    "static.rust-lang.org:443",
    "proxy.golang.org:443",
    "sum.golang.org:443",
    "repo.maven.apache.org:443",
    "repo1.maven.org:443",
    "plugins.gradle.org:443",
    "rubygems.org:443",
    "index.rubygems.org:443",
    "api.nuget.org:443",
    "github.com:443",
    "codeload.github.com:443",
    "objects.githubusercontent.com:443",
    "raw.githubusercontent.com:443",
    "gitlab.com:443",
];
