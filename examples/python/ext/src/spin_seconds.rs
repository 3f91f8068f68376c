//! `spin_seconds`: CPU-bound native work of a given length, for the MCP example server
//! (`examples/mcp-python`), and `spin_returns`, when and how the last of them returned.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tethered::{CancelReason, JobOptions};

/// The longest `spin_seconds` accepts.
const MAX_SECONDS: f64 = 3600.0;

/// Every this many steps (some 25 µs) the loop yields its time slice: still a core's worth of
/// work, but 200 of them on 2 cores leave the server's own threads the CPU when they wake
/// (without it, under Linux's EEVDF scheduler each wake-up waits behind about half the
/// spinning threads' slices: some 1 ms per spinning thread for every request the server reads).
const YIELD_EVERY: u64 = 1024;

/// How many returns [`spin_returns`] keeps.
const KEPT: usize = 256;

/// One return of a `spin_seconds` loop: when, `"done"` or `"stopped"`, and the token's reason.
type Return = (Instant, &'static str, Option<CancelReason>);

/// The last [`KEPT`] returns, oldest first.
static RETURNS: Mutex<VecDeque<Return>> = Mutex::new(VecDeque::new());

fn record(outcome: &'static str, reason: Option<CancelReason>) {
    let at = Instant::now();
    let mut returns = RETURNS.lock().unwrap_or_else(PoisonError::into_inner);
    if returns.len() == KEPT {
        returns.pop_front();
    }
    returns.push_back((at, outcome, reason));
}

/// `await spin_seconds(seconds)`: a busy loop on a native thread that looks at its token every
/// step (one atomic load) and returns `"done"` once `seconds` have passed, or `"stopped"` when
/// its token was cancelled (the awaiting coroutine then raises anyway). `ValueError` at the
/// call unless `seconds` is finite and from 0 to 3600.
#[pyfunction]
pub(crate) fn spin_seconds(py: Python<'_>, seconds: f64) -> PyResult<Bound<'_, PyAny>> {
    if !seconds.is_finite() || !(0.0..=MAX_SECONDS).contains(&seconds) {
        return Err(PyValueError::new_err(format!(
            "seconds must be a finite number from 0 to {MAX_SECONDS}, not {seconds}"
        )));
    }
    let length = Duration::from_secs_f64(seconds);
    let options = JobOptions::new().name("spin-seconds");
    tethered_pyo3::spawn_native_with(py, options, move |token| {
        let started = Instant::now();
        let mut steps = 0u64;
        let outcome = loop {
            if token.is_cancelled() {
                break "stopped";
            }
            if started.elapsed() >= length {
                break "done";
            }
            steps += 1;
            if steps % YIELD_EVERY == 0 {
                std::thread::yield_now();
            }
        };
        record(outcome, token.reason());
        outcome
    })
}

/// `spin_returns()`: the last 256 returns of `spin_seconds` loops, oldest first, as
/// `(returned_at, outcome, reason)`: `returned_at` in `time.monotonic()` seconds (the clock
/// is `CLOCK_MONOTONIC`, which other processes on the machine read too), `outcome` `"done"` or
/// `"stopped"`, `reason` the token's (`"Dropped"`, `"Timeout"`, `"Shutdown"`...) or `None`.
#[pyfunction]
pub(crate) fn spin_returns(py: Python<'_>) -> PyResult<Vec<(f64, &'static str, Option<String>)>> {
    let returns: Vec<Return> = RETURNS
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .iter()
        .copied()
        .collect();
    // `time.monotonic()` and `Instant::now()` read together: both are CLOCK_MONOTONIC.
    let monotonic: f64 = py.import("time")?.call_method0("monotonic")?.extract()?;
    let now = Instant::now();
    Ok(returns
        .into_iter()
        .map(|(at, outcome, reason)| {
            let returned_at = monotonic - now.saturating_duration_since(at).as_secs_f64();
            (
                returned_at,
                outcome,
                reason.map(|reason| format!("{reason:?}")),
            )
        })
        .collect())
}
