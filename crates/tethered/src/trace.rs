//! Tracing of job life cycles, behind the `tracing` feature.
//!
//! With the feature on, every job has a span (`tethered.job`, with its id and name) that is
//! entered while its closure runs, and events mark spawn, cancel (with the reason), return
//! (with the time from cancel to return), panic, detach and abandon. With the feature off,
//! every function here is an empty inline function and [`JobSpan`] is a zero-sized type.

use std::time::Duration;

use crate::reason::CancelReason;

/// The span of one job (zero-sized without the `tracing` feature).
#[derive(Debug, Default)]
pub(crate) struct JobSpan {
    #[cfg(feature = "tracing")]
    span: Option<tracing::Span>,
}

#[allow(unused_variables)]
impl JobSpan {
    #[inline]
    pub(crate) fn new(id: crate::JobId, name: Option<&str>) -> Self {
        JobSpan {
            #[cfg(feature = "tracing")]
            span: Some(tracing::debug_span!(
                "tethered.job",
                id = id.get(),
                name = name.unwrap_or("")
            )),
        }
    }

    /// Runs `f` inside the span.
    #[inline]
    pub(crate) fn in_scope<R>(&self, f: impl FnOnce() -> R) -> R {
        #[cfg(feature = "tracing")]
        if let Some(span) = &self.span {
            return span.in_scope(f);
        }
        f()
    }

    #[inline]
    pub(crate) fn spawned(&self) {
        #[cfg(feature = "tracing")]
        self.event(|| tracing::debug!("native job spawned"));
    }

    /// The job's token was cancelled (only the `tracing` feature records it).
    #[cfg(feature = "tracing")]
    pub(crate) fn cancelled(&self, reason: CancelReason) {
        self.event(|| tracing::debug!(%reason, "native job cancelled"));
    }

    /// The closure returned; `since_cancel` is how long after its cancel, if it was cancelled.
    #[cfg(feature = "tracing")]
    pub(crate) fn returned(&self, since_cancel: Option<Duration>) {
        #[cfg(feature = "tracing")]
        self.event(|| match since_cancel {
            Some(after) => tracing::debug!(
                cancel_to_return_us = after.as_micros() as u64,
                "native job returned after its cancel"
            ),
            None => tracing::debug!("native job returned"),
        });
    }

    #[inline]
    pub(crate) fn skipped(&self, reason: CancelReason) {
        #[cfg(feature = "tracing")]
        self.event(|| tracing::debug!(%reason, "native job skipped: cancelled before it started"));
    }

    #[inline]
    pub(crate) fn panicked(&self, message: Option<&str>) {
        #[cfg(feature = "tracing")]
        self.event(|| {
            tracing::warn!(
                message = message.unwrap_or("<non-string payload>"),
                "native job panicked"
            )
        });
    }

    #[inline]
    pub(crate) fn detached(&self) {
        #[cfg(feature = "tracing")]
        self.event(|| tracing::info!("native job detached: it runs on without a handle"));
    }

    #[inline]
    pub(crate) fn abandoned(&self, grace: Duration) {
        #[cfg(feature = "tracing")]
        self.event(|| {
            tracing::warn!(
                grace_ms = grace.as_millis() as u64,
                "native job abandoned: cancelled and still running after its grace; now detached"
            )
        });
    }

    #[inline]
    pub(crate) fn timer_failed(&self, error: &std::io::Error) {
        #[cfg(feature = "tracing")]
        self.event(|| {
            tracing::error!(
                %error,
                "native job's abandon timer could not start: the handle waits for the closure"
            )
        });
        #[cfg(not(feature = "tracing"))]
        let _ = error;
    }

    #[cfg(feature = "tracing")]
    fn event(&self, emit: impl FnOnce()) {
        match &self.span {
            Some(span) => span.in_scope(emit),
            None => emit(),
        }
    }
}
