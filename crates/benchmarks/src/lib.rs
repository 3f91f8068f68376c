//! criterion benchmarks of the tethered crates; see `benches/` and BENCHMARKS.md.
