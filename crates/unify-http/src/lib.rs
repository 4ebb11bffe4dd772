//! No code: this crate's manifest names the features the binary builds its HTTP and TLS
//! stack with, so the server or the agent tested alone (`cargo test -p …`) reuses them.
