//! One layer of settings (the flags, the environment or the config file), every key optional
//! and every path already absolute, and the one merge that stacks them: the higher layer's
//! value wins where it has one; lists that add up (`network_allow`, `deny_read`) are joined.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde::Deserialize;

use crate::config::EnvLookup;
use crate::config::args::{Approval, CommonArgs, Fallback, ToolLayout};
use crate::env_vars::{self, EnvVar};
use crate::error::ConfigError;
use toolbelt_mcp_sandbox::mode::{Network, SandboxMode};

/// Stacking two layers: `self` is the higher one.
pub(crate) trait Combine {
    /// `self` where it has a value, else `lower`'s.
    fn combine(self, lower: Self) -> Self;
}

impl<T> Combine for Option<T> {
    fn combine(self, lower: Self) -> Self {
        self.or(lower)
    }
}

/// A list every layer adds to (the lower layer's entries first).
#[derive(Debug, Default, Clone, PartialEq, Deserialize)]
#[serde(transparent)]
pub(crate) struct Joined<T>(pub(crate) Vec<T>);

impl<T> Combine for Joined<T> {
    fn combine(self, lower: Self) -> Self {
        let mut all = lower.0;
        all.extend(self.0);
        Self(all)
    }
}

/// Declares the layer's keys once: the struct a config file deserializes into (an unknown key
/// is an error naming it) and its merge, key by key.
macro_rules! layer {
    ($($(#[$doc:meta])* $key:ident: $ty:ty,)*) => {
        /// The keys a config file may hold, which the flags and the environment may also set.
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct Layer {
            $($(#[$doc])* #[serde(default)] pub(crate) $key: $ty,)*
        }

        impl Combine for Layer {
            fn combine(self, lower: Self) -> Self {
                Self { $($key: self.$key.combine(lower.$key),)* }
            }
        }
    };
}

layer! {
    roots: Option<Vec<PathBuf>>,
    state_dir: Option<PathBuf>,
    tool_layout: Option<ToolLayout>,
    output_budget: Option<usize>,
    max_image_bytes: Option<usize>,
    max_edit_bytes: Option<u64>,
    max_undo_bytes: Option<u64>,
    max_undo_total_bytes: Option<u64>,
    undo_ignored: Option<bool>,
    undo_unstaged: Option<bool>,
    sandbox: Option<SandboxMode>,
    network: Option<Network>,
    network_allow: Joined<String>,
    network_allow_defaults: Option<bool>,
    host_tool_hints: Option<bool>,
    writable_roots: Option<Vec<PathBuf>>,
    shell: Option<String>,
    env_allow: Option<Vec<String>>,
    max_sessions: Option<usize>,
    session_output_bytes: Option<usize>,
    approval: Option<Approval>,
    approval_fallback: Option<Fallback>,
    approval_timeout_s: Option<u64>,
    forbidden_commands: Option<Vec<Vec<String>>>,
    forbid_catastrophic: Option<bool>,
    stage_writes: Option<bool>,
    max_temp_bytes: Option<u64>,
    deny_read: Joined<PathBuf>,
    deny_read_defaults: Option<bool>,
    max_processes: Option<u64>,
    max_memory_bytes: Option<u64>,
    max_file_bytes: Option<u64>,
    audit_log: Option<PathBuf>,
    audit_log_max_bytes: Option<u64>,
    workspace: Option<String>,
    store: Option<String>,
    delegate: Option<crate::config::delegate::DelegateTable>,
}

impl Layer {
    /// The flags' layer; relative paths resolve against `cwd`.
    pub(crate) fn from_flags(args: &CommonArgs, cwd: &Path) -> Self {
        Self {
            roots: non_empty(args.roots.iter().map(|r| cwd.join(r)).collect()),
            state_dir: args.state_dir.as_ref().map(|dir| cwd.join(dir)),
            tool_layout: args.tool_layout,
            output_budget: args.output_budget,
            sandbox: args.sandbox,
            network: args.network,
            network_allow: Joined(args.network_allow.clone()),
            deny_read: Joined(args.deny_read.iter().map(|p| cwd.join(p)).collect()),
            approval: args.approval,
            audit_log: args.audit_log.as_ref().map(|path| cwd.join(path)),
            workspace: args.workspace.clone(),
            store: args.store.clone(),
            ..Self::default()
        }
    }

    /// The environment's layer; relative paths resolve against `cwd`.
    pub(crate) fn from_env(env: EnvLookup<'_>, cwd: &Path) -> Result<Self, ConfigError> {
        let path = |var: EnvVar| env(var.name).map(|value| cwd.join(value));
        let text = |var: EnvVar| env(var.name).map(|value| value.to_string_lossy().into_owned());
        Ok(Self {
            roots: env(env_vars::ROOT.name)
                .and_then(|value| non_empty(std::env::split_paths(&value).map(|r| cwd.join(r)).collect())),
            state_dir: path(env_vars::STATE_DIR),
            tool_layout: choice(env, env_vars::TOOL_LAYOUT)?,
            output_budget: env(env_vars::OUTPUT_BUDGET.name)
                .map(|value| {
                    value.to_str().and_then(|v| v.parse().ok()).ok_or_else(|| bad(env_vars::OUTPUT_BUDGET, &value))
                })
                .transpose()?,
            sandbox: choice(env, env_vars::SANDBOX)?,
            network: choice(env, env_vars::NETWORK)?,
            approval: choice(env, env_vars::APPROVAL)?,
            audit_log: path(env_vars::AUDIT_LOG),
            workspace: text(env_vars::WORKSPACE),
            store: text(env_vars::STORE),
            ..Self::default()
        })
    }

    /// The config file's layer, its relative paths made relative to the file's directory.
    pub(crate) fn anchored(mut self, file_dir: Option<&Path>) -> Self {
        let anchor = |path: PathBuf| match file_dir {
            Some(dir) if path.is_relative() => dir.join(path),
            _ => path,
        };
        self.roots = self.roots.and_then(|roots| non_empty(roots.into_iter().map(anchor).collect()));
        self.state_dir = self.state_dir.map(anchor);
        self.writable_roots = self.writable_roots.map(|dirs| dirs.into_iter().map(anchor).collect());
        self.deny_read = Joined(self.deny_read.0.into_iter().map(anchor).collect());
        self.audit_log = self.audit_log.map(anchor);
        self
    }
}

/// `None` for an empty list (an empty `roots` sets nothing).
fn non_empty<T>(list: Vec<T>) -> Option<Vec<T>> {
    (!list.is_empty()).then_some(list)
}

/// One of a setting's named values (`read-only`, …), read from `var`.
fn choice<T: ValueEnum>(env: EnvLookup<'_>, var: EnvVar) -> Result<Option<T>, ConfigError> {
    let Some(value) = env(var.name) else { return Ok(None) };
    value.to_str().and_then(|v| T::from_str(v, false).ok()).map(Some).ok_or_else(|| bad(var, &value))
}

fn bad(var: EnvVar, value: &OsString) -> ConfigError {
    ConfigError::BadEnv { name: var.name, value: value.to_string_lossy().into_owned(), expected: var.values }
}
