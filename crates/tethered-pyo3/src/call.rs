//! One call of a spawning function: the job started for the async library that runs the caller,
//! and the awaitable that ties the two together.

use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyCFunction;
use tethered::{AbortableNative, CancelReason, CancelToken, Cause, JobOptions, Placement};

use crate::delivery::{self, Call};
use crate::event_loop::{loop_token, running_loop};
use crate::exit;
use crate::glue::{Stop, glue};
use crate::into_py_result::IntoPyResult;
use crate::link::Link;
use crate::outcome::Convert;

/// Starts `f` with `options` and returns its awaitable: one code path per library, chosen
/// here.
pub(crate) fn call<'py, P, F, R, M>(
    py: Python<'py>,
    options: JobOptions<P>,
    f: F,
) -> PyResult<Bound<'py, PyAny>>
where
    P: Placement,
    F: FnOnce(CancelToken) -> R + Send + 'static,
    R: IntoPyResult<M>,
{
    if exit::exiting() {
        return Err(PyRuntimeError::new_err(
            "the interpreter is exiting (its atexit handlers are running, after \
             tethered-pyo3's own, which cancelled every native job): no native job starts \
             now, since nothing could deliver its outcome",
        ));
    }
    let glue = glue(py)?;
    let library = glue.running_library.bind(py).call0()?;
    let library = if library.is_none() {
        None
    } else {
        Some(library.extract::<String>()?)
    };
    match library.as_deref() {
        Some("asyncio") => {
            let event_loop = running_loop(py)?;
            let loop_token = loop_token(py, &event_loop)?;
            let future = event_loop.call_method0("create_future")?;
            let (job, call) = start(options, f)?;
            let link = Link::tie(py, job, call, &loop_token, &future)?;
            glue.call
                .bind(py)
                .call1((future, cancel_function(py, link)?))
        }
        Some("trio") => {
            let exit = exit::exit_token(py)?;
            let state = glue.trio_state.bind(py).call0()?;
            let (job, call) = start(options, f)?;
            let link = Link::tie_trio(py, job, call, &exit, &state)?;
            glue.trio_wait
                .bind(py)
                .call1((state, cancel_function(py, link)?))
        }
        _ => Err(PyRuntimeError::new_err(
            "no running asyncio event loop or trio run on this thread: a tethered native job \
             is awaited where it starts, so call this function from a coroutine that asyncio \
             or trio runs (directly or through anyio); from synchronous code, use run_native",
        )),
    }
}

/// Spawns the job whose closure's value the delivery converts under the GIL, and numbers the
/// call, so that its outcome can be delivered on the thread that ran the closure.
fn start<P, F, R, M>(options: JobOptions<P>, f: F) -> PyResult<(AbortableNative<Convert>, Call)>
where
    P: Placement,
    F: FnOnce(CancelToken) -> R + Send + 'static,
    R: IntoPyResult<M>,
{
    let call = Call::next();
    let job = tethered::spawn(options, move |token| -> Convert {
        let value = f(token);
        delivery::closure_returned(call);
        Box::new(move |py: Python<'_>| value.into_py_result(py))
    })
    .map_err(|err| PyRuntimeError::new_err(format!("the native job did not start: {err}")))?;
    Ok((job, call))
}

/// `cancel(stop, message or None)`: what the awaitable calls when its awaiter is cancelled.
fn cancel_function(py: Python<'_>, link: Arc<Link>) -> PyResult<Bound<'_, PyCFunction>> {
    PyCFunction::new_closure(
        py,
        Some(c"tethered_pyo3_cancel"),
        Some(c"Cancels the native job: cancel(stop, message or None)."),
        move |args, _kwargs| -> PyResult<()> {
            let stop: u8 = args.get_item(0)?.extract()?;
            let reason = match Stop::from_code(stop) {
                Stop::Timeout => CancelReason::Timeout,
                Stop::GaveUp => CancelReason::Dropped,
            };
            let message = args.get_item(1)?;
            if message.is_none() {
                link.cancel(reason, None);
            } else {
                link.cancel(reason, Some(Cause::msg(message.str()?.to_string())));
            }
            Ok(())
        },
    )
}
