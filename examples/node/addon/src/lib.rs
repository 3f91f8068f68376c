//! The example Node.js addon of `tethered-napi`: native work a JavaScript `AbortSignal` stops,
//! the functions the JavaScript suite (`crates/tethered-napi/tests/js`) drives, and the naive
//! napi-rs `AsyncTask` it compares them with.
//!
//! `src/work.rs` is the native work, plain Rust; `src/exports.rs` is the `#[napi]` surface,
//! the only module where the macro's generated `unsafe` is allowed.

pub mod exports;
mod work;
