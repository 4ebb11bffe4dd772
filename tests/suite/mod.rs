//! Test suites, one per area.

mod agent;
mod cli;
pub mod common;
mod confinement;
mod corners;
mod escapes;
pub mod http;
mod integrity;
mod isolation;
mod list_dir;
mod llm;
mod memory;
pub mod policy;
mod protocol;
mod read_file;
mod read_races;
mod roots;
mod sandbox;
mod search;
mod sessions;
mod terminal;
mod todo;
mod write;
