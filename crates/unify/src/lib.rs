//! No code: this crate's manifest names the features the whole workspace builds its shared
//! dependencies with, so a crate tested alone (`cargo test -p …`) reuses what `cargo test` built.
