//! [`JobPanic`]: a panic caught on a native thread, and [`PanicPolicy`]: what a panic does.

use std::any::Any;
use std::fmt;

use crate::sync::DataMutex;

/// A panic caught on a native thread: its message and payload. An error whose `Display` is
/// the panic's message.
///
/// Dropping it drops the payload contained: a panic from the payload's own `Drop` is counted in
/// [`stats()`](crate::stats)`.drop_panics`, never unwound into the caller.
pub struct JobPanic {
    message: Option<String>,
    // Only here to make the error `Sync`; never contended. `None` once taken.
    payload: DataMutex<Option<Box<dyn Any + Send + 'static>>>,
}

impl JobPanic {
    /// A panic caught elsewhere (`std::panic::catch_unwind`, a `JoinError` of tokio), from its
    /// payload.
    ///
    /// ```
    /// let payload = std::panic::catch_unwind(|| panic!("boom")).unwrap_err();
    /// let panic = tethered::JobPanic::new(payload);
    /// assert_eq!(panic.message(), Some("boom"));
    /// ```
    pub fn new(payload: Box<dyn Any + Send + 'static>) -> Self {
        let message = if let Some(text) = payload.downcast_ref::<&'static str>() {
            Some((*text).to_owned())
        } else {
            payload.downcast_ref::<String>().cloned()
        };
        JobPanic {
            message,
            payload: DataMutex::new(Some(payload)),
        }
    }

    /// The panic message, when the payload is a string (as with `panic!("...")`).
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The payload, e.g. for [`std::panic::resume_unwind`].
    ///
    /// # Panics
    ///
    /// Never: a `JobPanic` holds its payload until this takes it or the value is dropped.
    pub fn into_payload(self) -> Box<dyn Any + Send + 'static> {
        self.take_payload()
            .expect("a `JobPanic` holds its payload until it is taken or dropped")
    }

    fn take_payload(&self) -> Option<Box<dyn Any + Send + 'static>> {
        crate::sync::lock_data(&self.payload).take()
    }
}

impl Drop for JobPanic {
    fn drop(&mut self) {
        // A payload's `Drop` is user code: a panic in it is counted in `drop_panics`.
        crate::contain::drop_contained(self.take_payload());
    }
}

/// The panic's message, or says that its payload is not a string.
impl fmt::Display for JobPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.message {
            Some(message) => f.write_str(message),
            None => f.write_str("a panic whose payload is not a string"),
        }
    }
}

impl std::error::Error for JobPanic {}

impl fmt::Debug for JobPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobPanic")
            .field("message", &self.message)
            .finish_non_exhaustive()
    }
}

/// What a panic in a job's closure does.
///
/// ```
/// use tethered::{JobOptions, NativeError, PanicPolicy};
///
/// // The default: the panic is caught on the native thread and the handle reports it.
/// let job = tethered::spawn(JobOptions::new(), |_| -> u32 { panic!("bad input") })?;
/// assert!(matches!(job.join_blocking(), Err(NativeError::Panicked(_))));
/// let _strict = JobOptions::new().panic(PanicPolicy::Abort); // a panic ends the process
/// # Ok::<(), tethered::SpawnError>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PanicPolicy {
    /// Catch the panic on the native thread and hand it to the caller: the handle resolves to
    /// [`NativeError::Panicked`](crate::NativeError::Panicked) (in Rust), raises pyo3's
    /// `PanicException` (in Python), or rejects with an error whose `code` is
    /// `ERR_NATIVE_PANIC` (in JavaScript). Counted in [`stats()`](crate::stats)`.panicked`.
    #[default]
    Catch,
    /// Abort the process once the panic hook has reported the panic: for work whose panic
    /// means that state shared with the rest of the process can no longer be trusted.
    Abort,
}
