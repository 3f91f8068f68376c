//! The faults a loom model's negative control puts back: a fixed race of the core keeps its old
//! code path behind a name here, taken only in a loom build whose `TETHERED_LOOM_FAULT` names
//! it, so `loom-tests/` can show that its model finds the bug. Built only under
//! `--cfg tethered_loom`.

/// Whether the loom build under test runs with the fault `name` put back.
pub(crate) fn put_back(name: &str) -> bool {
    std::env::var("TETHERED_LOOM_FAULT").is_ok_and(|fault| fault == name)
}
