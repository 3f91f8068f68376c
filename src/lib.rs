//! Examples and cross-runtime integration tests for the `tethered` crates; nothing to use here.
