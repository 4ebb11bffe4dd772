//! The sandbox: path confinement to the roots, the only module that touches the filesystem,
//! directory walking, and kernel sandbox (Landlock) support.

pub mod beneath;
pub mod contract;
pub mod exec;
pub mod fs;
pub mod guard;
pub mod journal;
pub mod landlock;
pub mod linux;
pub mod paths;
pub mod protected;
pub mod walk;
pub mod write;

pub use paths::{Resolved, Roots};
