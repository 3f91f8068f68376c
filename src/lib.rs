//! Examples and cross-runtime integration tests for the `tethered` crates; nothing to use here.
//! The README below is compiled as doc tests, so its examples cannot rot.
#![doc = include_str!("../README.md")]

// The core crate's README is compiled as doc tests here, next to this README's.
#[cfg(doctest)]
#[doc = include_str!("../crates/tethered/README.md")]
struct CoreReadmeDoctests;
