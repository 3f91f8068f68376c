//! The faults a loom model's negative control puts back: each fixed race of the supervisor and
//! the pool keeps its old code path behind a name here, taken only in a loom build whose
//! `TETHERED_LOOM_FAULT` names it, so `loom-tests/` can show that its model finds the bug.
//! In every other build, [`put_back`] is `false` and the old path is dead code the compiler
//! drops.

/// Whether the loom build under test runs with the fault `name` put back.
#[cfg(tethered_loom)]
pub(crate) fn put_back(name: &str) -> bool {
    std::env::var("TETHERED_LOOM_FAULT").is_ok_and(|fault| fault == name)
}

/// Whether the loom build under test runs with the fault `name` put back: never, outside loom.
#[cfg(not(tethered_loom))]
#[inline(always)]
pub(crate) fn put_back(_name: &str) -> bool {
    false
}
