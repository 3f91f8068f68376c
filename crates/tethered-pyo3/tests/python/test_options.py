"""`JobOptions` in Python: a parent token and a scope cancel jobs from the Rust side; the
awaiting coroutine then gets the closure's value, or a CancelledError for a job that never ran."""

import asyncio
import threading

import pytest
import tethered_example as ext
from conftest import eventually, returned, started


async def test_parent_cancel_stops_the_job_and_the_value_still_arrives():
    parent = ext.Parent()
    probe = ext.Probe()
    fut = ext.spin_child_of(parent, probe)
    await started(probe)
    parent.cancel("request ended")
    steps = await fut  # the future was pending: the closure's value reaches it
    assert steps > 0
    assert (probe.reason, probe.cause) == ("Requested", "request ended")


async def test_a_job_of_a_cancelled_parent_never_runs_and_its_future_is_cancelled():
    parent = ext.Parent()
    parent.cancel("too late")
    probe = ext.Probe()
    with pytest.raises(asyncio.CancelledError, match="too late"):
        await ext.spin_child_of(parent, probe)
    assert not probe.returned and not probe.running


async def test_scope_bounds_the_jobs_and_cancel_all_stops_running_and_queued_ones():
    probes = [ext.Probe() for _ in range(3)]
    futures = [ext.spin_in_scope(p) for p in probes]  # the scope runs two at a time
    await started(probes[0], probes[1])
    await asyncio.sleep(0.1)
    assert not probes[2].running, "the third job waits for a slot"

    ext.cancel_scope()
    results = await asyncio.gather(*map(outcome, futures))
    assert results[0] > 0 and results[1] > 0
    assert isinstance(results[2], asyncio.CancelledError), results[2]
    assert "shutting down" in str(results[2])
    assert probes[0].reason == probes[1].reason == "Shutdown"
    assert not probes[2].returned, "a job cancelled while queued never runs"


async def test_a_cancelled_task_frees_its_scope_slot_for_the_next_job():
    first, second = ext.Probe(), ext.Probe()
    blocker = ext.Probe()
    blocking = asyncio.ensure_future(ext.spin_in_scope(blocker))
    timed = ext.spin_in_scope(first)
    await started(blocker, first)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(timed, 0.05)
    assert await returned(first)
    # The slot is free again: a new job starts while `blocker` still holds the other one.
    later = asyncio.ensure_future(ext.spin_in_scope(second))
    await started(second)
    assert await eventually(lambda: second.running, 2.0)
    later.cancel()
    blocking.cancel()
    assert await returned(second)
    assert await returned(blocker)


async def test_a_cancel_on_a_rust_thread_never_takes_the_gil_there():
    # A queued job finishes on the thread that cancels it. That thread holds a lock of the
    # application's; this thread holds the GIL and waits for that lock. Had the cancelling
    # thread delivered the outcome itself, it would wait for the GIL: a deadlock.
    parent = ext.Parent()
    fut = ext.queued_child_of(parent)
    holding = ext.cancel_on_a_rust_thread_holding_a_lock(parent)
    assert holding.cancel_then_take_the_lock(5.0), "the cancelling thread waited for the GIL"
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(fut, 10)


def _os_thread_name():
    """The calling thread's name as the OS has it (15 bytes at most), which Rust threads set."""
    with open(f"/proc/self/task/{threading.get_native_id()}/comm", encoding="utf-8") as comm:
        return comm.read().strip()


async def test_an_outcome_is_handed_to_the_loop_by_the_thread_that_ran_the_closure_and_never_by_a_canceller():
    # The thread that has just run the closure hands its outcome to the loop itself (one hop
    # less); a job that finished before the call returned, by the caller's thread; a job that
    # a cancel on another thread finished before it ran, by the crate's own delivery thread,
    # never by the thread that cancelled.
    loop = asyncio.get_running_loop()
    senders = []
    original = loop.call_soon_threadsafe

    def recording(callback, *args, **kwargs):
        if getattr(callback, "__name__", "") == "resolve":
            senders.append(_os_thread_name())
        return original(callback, *args, **kwargs)

    loop.call_soon_threadsafe = recording
    try:
        # Still running when the call returns: it finishes on its own thread.
        assert await ext.sleep(0.05, "slept") == "slept"
        # Finished when the call returns (its parent was cancelled: it never ran).
        cancelled = ext.Parent()
        cancelled.cancel("too late")
        with pytest.raises(asyncio.CancelledError, match="too late"):
            await ext.spin_child_of(cancelled, ext.Probe())
        # Finished by a cancel on a Rust thread of the application's.
        parent = ext.Parent()
        fut = ext.queued_child_of(parent)
        holding = ext.cancel_on_a_rust_thread_holding_a_lock(parent)
        assert holding.cancel_then_take_the_lock(5.0)
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(fut, 10)
    finally:
        del loop.call_soon_threadsafe
    assert senders == ["tethered-native", _os_thread_name(), "tethered-pyo3-d"]


async def outcome(call):
    """What awaiting `call` gives, its CancelledError included. Caught in the coroutine that
    awaits the job: a task (as `gather` makes) raises a CancelledError of its own, without the
    reason."""
    try:
        return await call
    except asyncio.CancelledError as cancelled:
        return cancelled
