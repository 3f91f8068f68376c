"""The Python half of tethered-pyo3: what runs on the event loop's thread.

Compiled once per interpreter by glue.rs; nothing here is public API.
"""

import asyncio
import collections.abc
import gc
import math
import sys
import types

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


# Why the awaiter stopped waiting (the Rust side's `Stop`): it gave up, or a deadline expired.
GAVE_UP = 0
TIMEOUT = 1

# What anyio's asyncio backend appends to the message of a cancel that its deadline made.
_ANYIO_DEADLINE = "; reason: deadline exceeded"

# Coroutine frames and the objects they await: what `_deadline_expired` walks through.
_WALKED = (types.CoroutineType, types.GeneratorType, types.AsyncGeneratorType)


def cancel_message(exc):
    """The message a `cancel(msg)` gave a CancelledError, or None."""
    if exc.args and exc.args[0] is not None:
        return str(exc.args[0])
    return None


def asyncio_stop(task, message):
    """Why `task` was cancelled: TIMEOUT when a deadline did it, GAVE_UP otherwise.

    asyncio cancels a task without saying why, so the deadline is found where it lives: the
    `asyncio.Timeout` (3.11+, behind `asyncio.timeout`, `timeout_at` and, from 3.12,
    `wait_for`) of an `async with` on the task's chain of awaits, which reads `expired()` once
    it fired. anyio's cancel scopes say so in their message.
    """
    if message is not None and message.endswith(_ANYIO_DEADLINE):
        return TIMEOUT
    if task is not None and _deadline_expired(task.get_coro()):
        return TIMEOUT
    return GAVE_UP


def _deadline_expired(coro):
    """Whether an expired `asyncio.Timeout` is held by a frame on the chain of awaits from
    `coro` (an `async with` keeps the context manager, or its bound `__aexit__`, on the frame's
    stack until it exits)."""
    timeout_type = getattr(asyncio, "Timeout", None)
    if timeout_type is None:
        return False  # 3.10: no such object; its `wait_for` reads as GAVE_UP
    stack = [coro]
    seen = set()
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        for ref in gc.get_referents(obj):
            held = getattr(ref, "__self__", ref) if isinstance(ref, types.MethodType) else ref
            if isinstance(held, timeout_type):
                if held.expired():
                    return True
            elif isinstance(ref, _WALKED):
                stack.append(ref)
    return False


class NativeCall:
    """What `spawn_native` and `spawn_native_with` return: a coroutine written by hand that
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

    The task waits on a separate waiter future, so `fut` stays pending until the job's handle
    resolves: when the closure returned, or once the job's grace passed after a cancel (the
    Rust side abandons it then, at once for a grace of zero). A cancel cancels the job with
    `cancel(stop, message)` and is raised once `fut` is done. Cancels that come while waiting
    are absorbed; the first one is raised at the end. A cancel before the first step cancels
    the job too, and anything else thrown in (or closing the coroutine unfinished) cancels it:
    its awaiter is gone.
    """

    __slots__ = ("_fut", "_cancel", "_cancelled", "_closed")

    def __init__(self, fut, cancel):
        self._fut = fut
        self._cancel = cancel
        self._cancelled = None
        self._closed = False

    def __await__(self):
        return self

    def __iter__(self):
        return self

    def __next__(self):
        return self.send(None)

    def send(self, _value):
        return self._step()

    def throw(self, typ, value=None, traceback=None):
        if value is None:
            value = typ() if isinstance(typ, type) else typ
        if isinstance(value, asyncio.CancelledError):
            if self._cancelled is None:
                self._cancelled = value
                message = cancel_message(value)
                self._cancel(asyncio_stop(asyncio.current_task(), message), message)
            return self._step()
        if not self._closed and not self._fut.done():
            self._cancel(GAVE_UP, None)
        self._closed = True
        raise value

    def close(self):
        # Closed unfinished (its task was destroyed without finishing): stop the job.
        if not self._closed and not self._fut.done():
            self._cancel(GAVE_UP, None)
        self._closed = True

    def _step(self):
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
        return f"<tethered native call ({state})>"


collections.abc.Coroutine.register(NativeCall)


def call(fut, cancel):
    """The awaitable of a native job: see `NativeCall`."""
    return NativeCall(fut, cancel)


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


async def trio_wait(state, cancel):
    """The trio call of a native job: a real coroutine (trio runs a coroutine's body from its
    first step, and delivers cancellation only at its checkpoints).

    Waiting is `wait_task_rescheduled`, a checkpoint: a cancel of the enclosing scope (now or
    while it waits) runs `abort`, which cancels the job (TIMEOUT when the effective deadline has
    passed) and waits until its handle resolved (the closure returned, or its grace passed),
    then raises the `Cancelled`.
    """
    import trio

    if state.outcome is not None:
        await trio.lowlevel.checkpoint()
        return _trio_outcome(state.outcome)
    state.task = trio.lowlevel.current_task()
    deadline = trio.current_effective_deadline()
    raise_cancel = None

    def abort(raise_cancel_fn):
        nonlocal raise_cancel
        # -inf: the scope was cancelled before the call began to wait, which says nothing of a
        # deadline.
        timed_out = math.isfinite(deadline) and trio.current_time() >= deadline
        cancel(TIMEOUT if timed_out else GAVE_UP, None)
        raise_cancel = raise_cancel_fn
        return trio.lowlevel.Abort.FAILED

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
