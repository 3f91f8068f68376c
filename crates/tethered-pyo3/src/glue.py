"""The Python half of tethered-pyo3: what runs on the event loop's thread.

Compiled once per interpreter by glue.rs; nothing here is public API.
"""

import asyncio

# How `resolve` settles a future (the Rust side passes these numbers).
RESULT = 0
EXCEPTION = 1
CANCEL = 2


def resolve(fut, how, value):
    """Settles `fut` with a native job's outcome.

    Scheduled with `loop.call_soon_threadsafe` from the thread the job finished on, so it runs
    on the loop's thread, where touching the future is allowed. A future that is done already
    was cancelled by its awaiter (or settled by someone else) in the meantime: its outcome is
    nobody's any more, and setting it would raise InvalidStateError.
    """
    if fut.done():
        return
    if how == EXCEPTION and isinstance(value, StopIteration):
        # asyncio refuses a StopIteration in a future (TypeError: it "interacts badly with
        # generators"), as Python turns one leaving a generator into a RuntimeError (PEP 479).
        value = _replacement(value, "StopIteration")
    try:
        if how == RESULT:
            fut.set_result(value)
        elif how == EXCEPTION:
            fut.set_exception(value)
        else:
            fut.cancel(value)
    except BaseException as refused:  # noqa: BLE001 - the future must never stay pending
        # Whatever the future refused, its awaiter still gets an answer: a future left pending
        # here would hang the task that awaits it forever.
        if not fut.done():
            fut.set_exception(_replacement(refused, "an outcome the future refused"))


def _replacement(cause, what):
    """A RuntimeError that stands in for `cause`, which a future cannot carry."""
    error = RuntimeError(f"native job raised {what}: {cause!r}")
    error.__cause__ = cause
    return error


def cancel_message(exc):
    """The message a `cancel(msg)` gave a CancelledError, or None."""
    if exc.args and exc.args[0] is not None:
        return str(exc.args[0])
    return None


async def joined(fut, cancel):
    """Awaits `fut`; when the awaiting task is cancelled, cancels the native job with
    `cancel(message)` and lets the CancelledError through only once the job has returned.

    `asyncio.wait` never cancels what it waits for, so the job's future stays pending until the
    native code has returned and its outcome has arrived. Cancels that come while waiting are
    absorbed: the first one is re-raised at the end.
    """
    try:
        await asyncio.wait((fut,))
    except asyncio.CancelledError as cancelled:
        cancel(cancel_message(cancelled))
        while not fut.done():
            try:
                await asyncio.wait((fut,))
            except asyncio.CancelledError:
                pass
        if not fut.cancelled():
            fut.exception()  # retrieved: asyncio would log an exception nobody looked at
        raise
    return fut.result()
