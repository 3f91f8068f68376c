"""The Python half of tethered-pyo3: what runs on the event loop's thread.

Compiled once per interpreter by glue.rs; nothing here is public API.
"""

import asyncio
import collections.abc
import sys

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


class NativeCall:
    """What `spawn_native` and `spawn_native_joined` return: a coroutine written by hand that
    awaits the native job's future `fut`.

    A coroutine by hand rather than an `async def`: a coroutine cancelled before its first step
    never runs its own body (asyncio throws the CancelledError in at the start), so an
    `async def` could not cancel the job, nor wait for it, when the cancel comes that early (a
    TaskGroup sibling failing at once). Registered as a `collections.abc.Coroutine`, it goes
    wherever asyncio, anyio and TaskGroups take a coroutine (`await`, `create_task`,
    `TaskGroup.create_task`, `gather`, `wait_for`, anyio's `start_soon`), on every loop.

    The job starts when the function is called, as `run_in_executor` starts its work: the
    native side needs no step of the coroutine to begin, and a coroutine that is never awaited
    stops its job when it is freed (`fut`'s done callback goes with it).

    - Plain (`joined` false): the task waits on `fut` itself, so cancelling the task cancels
      `fut` (with the task's cancel message), which cancels the job; the CancelledError comes
      at once, while the closure returns in its own time.
    - Joined: the task waits on a separate waiter future, so `fut` stays pending until the
      native code has returned; a cancel cancels the job with `cancel(message)` and is raised
      only once the job has returned. Cancels that come while waiting are absorbed; the first
      one is raised at the end.

    Either way, a cancel before the first step cancels the job, and anything else thrown in
    (or closing the coroutine unfinished) cancels it too: its awaiter is gone.
    """

    __slots__ = ("_fut", "_cancel", "_joined", "_cancelled", "_closed")

    def __init__(self, fut, cancel, joined):
        self._fut = fut
        self._cancel = cancel
        self._joined = joined
        self._cancelled = None
        self._closed = False

    def __await__(self):
        return self

    def __iter__(self):
        return self

    def __next__(self):
        return self.send(None)

    def send(self, _value):
        if self._joined:
            return self._step_joined()
        return self._step()

    def throw(self, typ, value=None, traceback=None):
        if value is None:
            value = typ() if isinstance(typ, type) else typ
        if isinstance(value, asyncio.CancelledError):
            if self._joined:
                if self._cancelled is None:
                    self._cancelled = value
                    self._cancel(cancel_message(value))
                return self._step_joined()
            # The task cancelled `fut` already if it waited on it; not before its first step.
            if not self._fut.done():
                self._fut.cancel(cancel_message(value))
            self._closed = True
            raise value
        if not self._closed and not self._fut.done():
            self._cancel(None)
        self._closed = True
        raise value

    def close(self):
        # Closed unfinished (its task was destroyed without finishing): stop the job.
        if not self._closed and not self._fut.done():
            self._cancel(None)
        self._closed = True

    def _step(self):
        fut = self._fut
        if fut.done():
            self._closed = True
            # The job's value, or its exception (a CancelledError for a cancelled future).
            raise StopIteration(fut.result())
        fut._asyncio_future_blocking = True
        return fut

    def _step_joined(self):
        fut = self._fut
        if fut.done():
            self._closed = True
            if self._cancelled is not None:
                if not fut.cancelled():
                    fut.exception()  # retrieved: asyncio would log an exception nobody looked at
                raise self._cancelled
            raise StopIteration(fut.result())
        waiter = fut.get_loop().create_future()
        fut.add_done_callback(lambda _done, waiter=waiter: waiter.done() or waiter.set_result(None))
        waiter._asyncio_future_blocking = True
        return waiter

    def __repr__(self):
        state = "done" if self._fut.done() else "running"
        kind = "joined " if self._joined else ""
        return f"<tethered native {kind}call ({state})>"


collections.abc.Coroutine.register(NativeCall)


def call(fut, cancel, joined):
    """The awaitable of a native job: see `NativeCall`."""
    return NativeCall(fut, cancel, joined)


def running_library():
    """Which async library runs the calling coroutine: "asyncio", "trio" (directly or as
    anyio's backend), or None."""
    try:
        asyncio.get_running_loop()
        return "asyncio"
    except RuntimeError:
        pass
    trio = sys.modules.get("trio")
    if trio is not None:
        try:
            trio.lowlevel.current_task()
            return "trio"
        except RuntimeError:
            pass
    return None


class TrioState:
    """What a native job shares with the trio task that awaits it: the trio token its outcome
    arrives through (`run_sync_soon`), the task waiting for it, the outcome once it arrived, and
    `tether`, whose freeing (with this object: nothing awaits the call any more) cancels the
    job."""

    __slots__ = ("token", "task", "outcome", "tether", "__weakref__")

    def __init__(self):
        import trio

        self.token = trio.lowlevel.current_trio_token()
        self.task = None
        self.outcome = None
        self.tether = None


def trio_state():
    return TrioState()


def trio_resolve(state, how, value):
    """Runs in trio's thread (`run_sync_soon`): keeps the outcome and wakes the waiting task."""
    import outcome
    import trio

    state.outcome = (how, value)
    task = state.task
    if task is not None:
        state.task = None
        trio.lowlevel.reschedule(task, outcome.Value(None))


async def trio_wait(state, cancel, joined):
    """The trio call of a native job: a real coroutine (trio runs a coroutine's body from its
    first step, and delivers cancellation only at its checkpoints).

    Waiting is `wait_task_rescheduled`, a checkpoint: a cancel of the enclosing scope (now or
    while it waits) runs `abort`, which cancels the job. Plain: the task is rescheduled with
    `Cancelled` at once, as trio's `to_thread.run_sync(abandon_on_cancel=True)` does. Joined:
    the task waits until the job has returned, then raises the `Cancelled`.
    """
    import trio

    if state.outcome is not None:
        await trio.lowlevel.checkpoint()
        return _trio_outcome(state.outcome)
    state.task = trio.lowlevel.current_task()
    raise_cancel = None

    def abort(raise_cancel_fn):
        nonlocal raise_cancel
        cancel(None)
        if joined:
            raise_cancel = raise_cancel_fn
            return trio.lowlevel.Abort.FAILED
        state.task = None
        return trio.lowlevel.Abort.SUCCEEDED

    await trio.lowlevel.wait_task_rescheduled(abort)
    if raise_cancel is not None:
        raise_cancel()
    return _trio_outcome(state.outcome)


def _trio_outcome(settled):
    how, value = settled
    if how == RESULT:
        return value
    if how == EXCEPTION:
        if isinstance(value, StopIteration):
            raise _replacement(value, "StopIteration")
        raise value
    raise RuntimeError(f"the native job was cancelled before it ran: {value}")
