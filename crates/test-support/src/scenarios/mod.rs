//! Scenario drivers for the adapters whose runtimes work alike (smol and async-std): each
//! scenario is written once against [`Runtime`](crate::Runtime), runs the real runtime through
//! it, and shows the naive code's leak next to the adapter's fix. An adapter's test is one call.

pub mod aborted_task;
pub mod errors;
pub mod pool_exhaustion;
pub mod select;
pub mod shutdown;
pub mod soak;
pub mod timeout;
