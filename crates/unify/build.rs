//! Empty: cargo resolves a crate's `[build-dependencies]` (here `syn`'s features, for the
//! workspace's proc macros) only when the crate has a build script.

fn main() {}
