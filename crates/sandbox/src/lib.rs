//! The sandbox: path confinement to the roots, the only module that touches the filesystem,
//! directory walking, and the command sandbox of each OS (`backend.rs`: Landlock and
//! namespaces on Linux, Seatbelt on macOS).

pub mod backend;
pub mod beneath;
pub mod contract;
pub mod error;
pub mod exec;
pub mod fs;
pub mod guard;
pub mod handle;
pub mod journal;
#[cfg(target_os = "linux")]
pub mod landlock;
#[cfg(target_os = "linux")]
pub mod linux;
pub mod mode;
pub mod owned;
pub mod paths;
pub mod protected;
#[cfg(unix)]
pub mod proxy;
// Compiled everywhere: the profile generator is pure, and its snapshot tests run on Linux CI.
#[cfg_attr(not(target_os = "macos"), allow(dead_code))]
pub mod seatbelt;
#[cfg(unix)]
pub mod shadow;
#[cfg(target_os = "linux")]
pub mod stage;
pub mod undoable;
pub mod walk;
pub mod write;

pub use paths::{Resolved, Roots};

pub use error::Error;
