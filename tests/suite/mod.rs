//! Test suites, one per area. The Linux sandbox's layers (`confinement`, `isolation`,
//! `sandbox`) are tested on Linux; the Seatbelt backend's on macOS (`macos`).

mod agent;
mod agent_context;
mod agent_resume;
mod agent_servers;
pub(crate) mod cli;
#[cfg(target_os = "linux")]
mod command_undo;
mod command_undo_unstaged;
pub(crate) mod common;
#[cfg(target_os = "linux")]
mod confinement;
mod corners;
mod delegate;
pub(crate) mod deploy;
mod env_vars;
mod escapes;
#[cfg(target_os = "linux")]
mod hardening;
#[cfg(target_os = "linux")]
mod host_sandbox;
pub(crate) mod http;
mod install_manifests;
mod integrity;
#[cfg(target_os = "linux")]
mod isolation;
mod layers;
mod lean;
mod list_dir;
mod llm;
#[cfg(target_os = "macos")]
mod macos;
#[cfg(target_os = "linux")]
mod mediation;
mod memory;
mod metrics;
mod pg;
pub(crate) mod policy;
mod postgres;
mod prompts;
mod protocol;
#[cfg(target_os = "linux")]
mod proxy;
mod read_file;
mod read_races;
mod review;
mod review2;
mod review3;
mod review4;
#[cfg(target_os = "linux")]
mod review5;
#[cfg(target_os = "linux")]
mod review6;
#[cfg(target_os = "linux")]
mod review7;
#[cfg(target_os = "linux")]
mod review8;
mod roots;
#[cfg(target_os = "linux")]
mod sandbox;
mod search;
mod sessions;
mod tasks;
mod team;
mod terminal;
mod todo;
mod workspaces;
mod write;
