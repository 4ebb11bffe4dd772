//! The settings and the shared words of toolbelt-mcp: the configuration resolved from flags,
//! environment and files (`config`), every error the model can see (`error`), what a call does
//! to the world (`effect`), every `TOOLBELT_*` variable (`env_vars`), the `_meta` keys (`meta`), the Prometheus counters (`metrics`) and
//! how sizes are written (`units`). It does no work of its own but resolving the configuration.

pub mod config;
pub mod effect;
pub mod env_vars;
pub mod error;
pub mod meta;
pub mod metrics;
pub mod units;
