//! [`Link`]: one native job tied to one asyncio future.
//!
//! ```text
//!   asyncio side (loop thread, GIL)                 native side (job thread, no GIL)
//!   awaiter cancelled ──▶ cancel(stop, msg) ──▶ abort.cancel(reason, cause) ──▶ token.is_cancelled()
//!   fut freed unsettled ──▶ callback dropped ──▶ abort.cancel(Dropped)
//!   loop closed / interpreter exit ──▶ loop token ──▶ abort.cancel(Shutdown)
//!   resolve(fut, ..) ◀── loop.call_soon_threadsafe ◀── job thread or delivery thread ◀── waker: handle ready
//! ```
//!
//! The job's [`AbortableNative`] handle, in the link's [`Tie`] (its state apart from Python),
//! is polled with a waker that is the link itself: the core wakes it from the thread that
//! finished the job, which polls again and takes the result. It is converted under the GIL and
//! handed to the loop on the job's own thread if that thread has just run the closure, else on
//! the crate's delivery thread (`delivery.rs`): a thread that finished the job by cancelling it
//! never takes the GIL.
//!
//! # Invariants
//!
//! 1. The outcome is taken from the handle once (the tie's invariant 1), and delivered at most
//!    once; `resolve` then settles the future only if it is still pending, on the loop thread.
//! 2. The link holds the future weakly, and its loop not at all: a future nobody references
//!    any more is freed, its done callback with it, and that cancels the job with
//!    [`CancelReason::Dropped`].
//! 3. No lock of the link is held while cancelling, dropping the loop registration, or
//!    calling into Python.
//! 4. Once the future is done or freed (`wanted` is false), the outcome is dropped without
//!    attaching to the interpreter: a cancelled job's thread never waits for the GIL.

use std::sync::Arc;
use std::task::{Wake, Waker};

use pyo3::prelude::*;
use pyo3::types::{PyCFunction, PyWeakrefMethods, PyWeakrefReference};
use tethered::{AbortableNative, CancelReason, CancelToken, Cause, NativeError};

use crate::delivery::{self, Call};
use crate::exit;
use crate::glue::glue;
use crate::outcome::{self, Convert};
use crate::tie::Tie;

/// One job and the future that awaits it.
pub(crate) struct Link {
    tie: Tie<Convert>,
    target: Target,
    /// The call's number: its outcome is delivered on the thread marked with it, if any.
    call: Call,
}

/// Where the outcome goes.
enum Target {
    /// An asyncio future, weak (invariant 2); its loop is found through it, so the link keeps
    /// no loop alive.
    Future(Py<PyWeakrefReference>),
    /// A trio call's state (weak, as a future) and the trio token of its run.
    Trio {
        state: Py<PyWeakrefReference>,
        token: Py<PyAny>,
    },
}

impl Link {
    /// Ties `job` to `future` and to the loop's token: adds the done callback and polls the
    /// job once.
    pub(crate) fn tie(
        py: Python<'_>,
        job: AbortableNative<Convert>,
        call: Call,
        loop_token: &CancelToken,
        future: &Bound<'_, PyAny>,
    ) -> PyResult<Arc<Link>> {
        let link = Arc::new(Link {
            tie: Tie::new(job, loop_token),
            target: Target::Future(PyWeakrefReference::new(future)?.unbind()),
            call,
        });
        let on_done = CancelOnDrop(link.clone());
        let callback = PyCFunction::new_closure(
            py,
            Some(c"tethered_pyo3_done"),
            Some(c"Cancels the native job when its future is done or dropped."),
            move |_args, _kwargs| -> PyResult<()> {
                // Done: settled with the job's outcome (the cancel below is then too late to
                // change anything), or cancelled by code that reached the private future.
                on_done.0.tie.unwanted();
                on_done.0.cancel(CancelReason::Dropped, None);
                Ok(())
            },
        )?;
        future.call_method1("add_done_callback", (callback,))?;
        // On the caller's thread, under the GIL: a job that finished already is delivered here.
        link.poll(true);
        Ok(link)
    }

    /// Ties `job` to a trio call's `state` (from `glue.trio_state()`): its outcome goes through
    /// the state's trio token, and freeing the state (nothing awaits the call) cancels the job.
    /// The exit token stands for the loop's: trio cancels what its run still awaits itself.
    pub(crate) fn tie_trio(
        py: Python<'_>,
        job: AbortableNative<Convert>,
        call: Call,
        exit_token: &CancelToken,
        state: &Bound<'_, PyAny>,
    ) -> PyResult<Arc<Link>> {
        let link = Arc::new(Link {
            tie: Tie::new(job, exit_token),
            target: Target::Trio {
                state: PyWeakrefReference::new(state)?.unbind(),
                token: state.getattr("token")?.unbind(),
            },
            call,
        });
        let on_free = CancelOnDrop(link.clone());
        let tether = PyCFunction::new_closure(
            py,
            Some(c"tethered_pyo3_tether"),
            Some(c"Cancels the native job when the trio call that awaits it is freed."),
            move |_args, _kwargs| -> PyResult<()> {
                on_free.0.tie.unwanted();
                Ok(())
            },
        )?;
        state.setattr("tether", tether)?;
        // On the caller's thread, under the GIL: a job that finished already is delivered here.
        link.poll(true);
        Ok(link)
    }

    /// Cancels the job, unless it has finished, with `cause` beside the reason if there is one.
    pub(crate) fn cancel(&self, reason: CancelReason, cause: Option<Cause>) {
        self.tie.cancel(reason, cause);
    }

    /// Polls the job; once it is ready, delivers its outcome here if this thread may take the
    /// GIL (`attached`: the caller's thread, which holds it, as the call ties the job; or the
    /// thread that has just run the closure), else on the delivery thread.
    fn poll(self: &Arc<Self>, attached: bool) {
        let waker = Waker::from(self.clone());
        let Some(result) = self.tie.poll(&waker) else {
            return;
        };
        // Anywhere else, this may be a thread of the application's that cancelled the job, and
        // it must not take the GIL (see `delivery.rs`).
        let link = self.clone();
        delivery::deliver(self.call, attached, Box::new(move || link.deliver(result)));
    }

    fn deliver(&self, result: Result<Convert, NativeError<Convert>>) {
        // Nothing of a user's (a conversion, a drop) may unwind into the thread that woke us.
        let _contained = tethered::__private::catch_panic(move || {
            if !self.tie.is_wanted() {
                return; // `result` is dropped detached; pyo3 defers its reference drops
            }
            let Some(_pass) = exit::enter() else {
                return; // the interpreter is exiting: `result` is dropped, detached
            };
            // `None` when there is no interpreter to attach to; `result` is dropped then too.
            let _ = Python::try_attach(|py| self.deliver_attached(py, result));
        });
    }

    fn deliver_attached(&self, py: Python<'_>, result: Result<Convert, NativeError<Convert>>) {
        match &self.target {
            Target::Future(future) => deliver_to_future(py, future, result),
            Target::Trio { state, token } => deliver_to_trio(py, state, token, result),
        }
    }
}

fn deliver_to_future(
    py: Python<'_>,
    future: &Py<PyWeakrefReference>,
    result: Result<Convert, NativeError<Convert>>,
) {
    let Some(future) = future.bind(py).upgrade() else {
        return; // freed: nobody can await it any more
    };
    let (how, value) = outcome::to_python(py, result);
    let Ok(event_loop) = future.call_method0("get_loop") else {
        return;
    };
    let sent = glue(py).and_then(|glue| {
        event_loop.call_method1(
            "call_soon_threadsafe",
            (glue.resolve.bind(py), &future, how as u8, value),
        )
    });
    if let Err(err) = sent {
        // A closed loop refuses with RuntimeError: nothing runs on it any more, so nothing
        // awaits the future. Anything else is reported the way Python reports errors that
        // have no caller.
        let closed = event_loop
            .call_method0("is_closed")
            .and_then(|closed| closed.is_truthy())
            .unwrap_or(true);
        if !closed {
            err.write_unraisable(py, Some(&future));
        }
    }
}

fn deliver_to_trio(
    py: Python<'_>,
    state: &Py<PyWeakrefReference>,
    token: &Py<PyAny>,
    result: Result<Convert, NativeError<Convert>>,
) {
    let Some(state) = state.bind(py).upgrade() else {
        return; // freed: nobody can await the call any more
    };
    let (how, value) = outcome::to_python(py, result);
    let sent = glue(py).and_then(|glue| {
        token.bind(py).call_method1(
            "run_sync_soon",
            (glue.trio_resolve.bind(py), &state, how as u8, value),
        )
    });
    if let Err(err) = sent {
        // `trio.RunFinishedError`: the run is over, so nothing awaits the call.
        let finished = err
            .get_type(py)
            .name()
            .is_ok_and(|name| name == "RunFinishedError");
        if !finished {
            err.write_unraisable(py, Some(&state));
        }
    }
}

impl Wake for Link {
    fn wake(self: Arc<Self>) {
        self.poll(false);
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.poll(false);
    }
}

/// Held by the done callback: cancels the job when the callback goes away, which happens when
/// the future is freed (or after the callback ran, when the job is settled or cancelled
/// already, and this does nothing).
struct CancelOnDrop(Arc<Link>);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        self.0.tie.unwanted();
        self.0.cancel(CancelReason::Dropped, None);
    }
}
