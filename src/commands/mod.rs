//! The non-serving subcommands: `schemas` and `doctor`. They write reports to stdout, which
//! is theirs (only `serve` reserves stdout for the protocol).

pub(crate) mod doctor;
mod doctor_sandbox;
pub(crate) mod schemas;
