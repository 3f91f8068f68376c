//! What the tethered adapters' scenario tests share, so that each adapter proves the same
//! things against its real runtime with the same bounds.
//!
//! - [`Probe`] times a tethered job's closure from its cancel to its return;
//!   [`Naive`] runs the baseline blocking jobs, which only the test's stop flag ends, and
//!   asserts their leak.
//! - [`bounded`], [`Watchdog`], [`wait_for`] and [`wait_until`] bound every wait by
//!   [`PATIENCE`], so a broken behaviour fails a test instead of hanging the suite.
//! - [`cpu_share_over`] reads the process's CPU time; [`report`] prints a scenario's median and
//!   worst cancel-to-return time and checks them against [`RETURN_BOUND`].
//! - [`run_bounded`] runs another language's suite (pytest, `node --test`) and kills it at
//!   a limit.
//! - [`scenarios`] holds whole scenarios written once against the [`Runtime`] trait.
//!
//! A tethered closure on a plain thread, cancelled and timed:
//!
//! ```
//! use std::thread;
//! use tethered::{CancelReason, CancelSource};
//! use tethered_test_support::{Probe, report};
//!
//! let probe = Probe::new();
//! let source = CancelSource::new();
//! let (job, token) = (probe.spinning_job(), source.token());
//! let closure = thread::spawn(move || job(token));
//! probe.wait_started();
//! source.cancel(CancelReason::Requested);
//! // Prints "[threads] doc example: cancel-to-return over 1 closure(s): median …, worst …"
//! // and fails if the closure took more than RETURN_BOUND.
//! report("threads", "doc example", [probe.cancel_to_return()]);
//! assert_eq!(probe.reason(), Some(CancelReason::Requested));
//! closure.join().unwrap();
//! ```
//!
//! Not published: a dev-dependency of the adapter crates only.

mod bounds;
#[cfg(unix)]
mod command;
mod cpu;
#[cfg(unix)]
mod fork;
mod naive;
mod panics;
mod probe;
mod report;
mod rng;
mod runtime;
pub mod scenarios;
mod wait;
mod work;

pub use bounds::{PATIENCE, RETURN_BOUND};
#[cfg(unix)]
pub use command::{Finished, run_bounded};
pub use cpu::cpu_share_over;
#[cfg(unix)]
pub use fork::in_forked_child;
pub use naive::Naive;
pub use panics::count_planned_panics;
pub use probe::Probe;
pub use report::report;
pub use rng::XorShift;
pub use runtime::Runtime;
pub use wait::{Watchdog, bounded, wait_for, wait_until};
pub use work::spin_until;
