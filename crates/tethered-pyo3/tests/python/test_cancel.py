"""Every way asyncio (and anyio) cancels an awaiting task reaches the native loop.

Each test runs a tethered `spin` and a naive `NaiveSpinner` behind `run_in_executor` through the
same cancel: the tethered closure returns within seconds (in practice, within a millisecond),
with the reason the table in the crate docs gives; the naive one spins on until the test stops it.
Each waits for the closures to start before the cancel: a job cancelled before its closure
started never runs it, and there would be nothing to see return.
"""

import asyncio
import gc
import sys

import anyio
import pytest
import tethered_example as ext
from conftest import Naive, awaiting, needs_311, returned, started


async def test_task_cancel_stops_the_native_loop_with_dropped():
    probe = ext.Probe()
    async with Naive() as naive:
        tethered = asyncio.create_task(awaiting(ext.spin(probe)))
        untethered = asyncio.create_task(awaiting(naive.start()))
        await started(probe)
        await naive.started()

        tethered.cancel()
        untethered.cancel()
        for task in (tethered, untethered):
            with pytest.raises(asyncio.CancelledError):
                await task

        assert await returned(probe)
        assert probe.reason == "Dropped"
        await asyncio.sleep(0.2)
        assert naive.running, "the naive executor job should still spin"


async def test_cancel_message_reaches_native_code_as_custom():
    probe = ext.Probe()
    task = asyncio.create_task(awaiting(ext.spin(probe)))
    await started(probe)
    task.cancel("client went away")
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await returned(probe)
    assert (probe.reason, probe.cause) == ("Dropped", "client went away")


async def test_a_task_cancelled_with_a_message_stops_the_native_loop_with_it():
    probe = ext.Probe()
    task = asyncio.ensure_future(ext.spin(probe))
    await started(probe)
    assert task.cancel("stop")
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await returned(probe)
    assert (probe.reason, probe.cause) == ("Dropped", "stop")


async def test_a_call_freed_unawaited_cancels_the_job_with_dropped():
    probe = ext.Probe()
    call = ext.spin(probe)
    await started(probe)
    del call  # nothing can await it any more, as when a Rust future is dropped
    gc.collect()
    assert await returned(probe)
    assert probe.reason == "Dropped"


async def test_wait_for_timeout_stops_the_native_loop():
    probe = ext.Probe()
    async with Naive() as naive:
        tethered, untethered = ext.spin(probe), naive.start()
        await started(probe)
        await naive.started()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(tethered, 0.05)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(untethered, 0.05)

        assert await returned(probe)
        # asyncio cancels the inner future without a message: a timeout is `Dropped`.
        assert probe.reason == ("Timeout" if sys.version_info >= (3, 12) else "Dropped")
        await asyncio.sleep(0.2)
        assert naive.running


@needs_311
async def test_asyncio_timeout_stops_the_native_loop():
    probe = ext.Probe()
    async with Naive() as naive:
        tethered, untethered = ext.spin(probe), naive.start()
        await started(probe)
        await naive.started()
        with pytest.raises(asyncio.TimeoutError):
            async with asyncio.timeout(0.05):
                await tethered
        with pytest.raises(asyncio.TimeoutError):
            async with asyncio.timeout(0.05):
                await untethered

        assert await returned(probe)
        assert probe.reason == "Timeout"
        await asyncio.sleep(0.2)
        assert naive.running


@needs_311
async def test_taskgroup_sibling_failure_stops_the_native_loop():
    probe = ext.Probe()

    async with Naive() as naive:

        async def fail_soon():
            await started(probe)
            await naive.started()
            raise ValueError("sibling failed")

        with pytest.raises(ExceptionGroup) as group:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(awaiting(ext.spin(probe)))
                tg.create_task(awaiting(naive.start()))
                tg.create_task(fail_soon())
        assert group.group_contains(ValueError, match="sibling failed")

        assert await returned(probe)
        assert probe.reason == "Dropped"
        await asyncio.sleep(0.2)
        assert naive.running


def test_anyio_cancel_scope_stops_the_native_loop():
    probe = ext.Probe()
    timed_out = ext.Probe()
    naive = Naive()

    async def main():
        async with anyio.create_task_group() as tg:

            async def run_tethered():
                await ext.spin(probe)

            async def run_naive():
                # abandon_on_cancel: without it anyio would wait for the thread forever.
                await anyio.to_thread.run_sync(naive.spinner.run, abandon_on_cancel=True)

            tg.start_soon(run_tethered)
            tg.start_soon(run_naive)
            await started(probe)
            await naive.started()
            tg.cancel_scope.cancel()

        fut = ext.spin(timed_out)
        await started(timed_out)
        with anyio.move_on_after(0.05):
            await fut

    with naive:
        anyio.run(main, backend="asyncio")
        assert probe.wait_returned(2.0)
        assert timed_out.wait_returned(2.0)
        # anyio cancels with a message of its own, kept as the cause; its deadline reads Timeout.
        assert probe.reason == "Dropped"
        assert probe.cause.startswith("Cancelled via cancel scope")
        assert timed_out.reason == "Timeout"
        assert timed_out.cause.endswith("reason: deadline exceeded")
        assert naive.running


async def test_a_cancel_reaches_only_the_job_of_the_cancelled_task():
    left, right = ext.Probe(), ext.Probe()
    cancelled = asyncio.create_task(awaiting(ext.spin(left)))
    kept = asyncio.create_task(awaiting(ext.spin(right)))
    await started(left, right)
    cancelled.cancel()
    assert await returned(left)
    await asyncio.sleep(0.1)
    assert right.running
    kept.cancel()
    assert await returned(right)


@needs_311
async def test_a_plain_call_cancelled_before_its_first_step_cancels_the_job():
    # A TaskGroup sibling failing at once cancels a task before it ever ran.
    probe = ext.Probe()
    task = asyncio.create_task(ext.spin(probe))  # the job starts at the call
    await started(probe)
    task.cancel("early")
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await returned(probe)
    assert (probe.reason, probe.cause) == ("Dropped", "early")


@needs_311
async def test_a_taskgroup_sibling_failing_at_once_stops_a_plain_call():
    probe = ext.Probe()
    calls = [ext.spin(probe)]  # the job starts here
    await started(probe)

    async def group_of_two():
        async with asyncio.TaskGroup() as group:
            group.create_task(fail_now())  # fails first: the next task never takes a step
            # With the eager task factory the group is shutting down already, and 3.12 refuses
            # the task without closing the call: freed, the call stops its job all the same.
            group.create_task(calls.pop())

    # In a task of its own: on CPython 3.12.1 with the eager task factory, a sibling that fails
    # inside `create_task` leaves a cancel pending on the task that holds the group, which
    # would hit the test's next await.
    outcome = await asyncio.gather(asyncio.ensure_future(group_of_two()), return_exceptions=True)
    assert isinstance(outcome[0], (ExceptionGroup, asyncio.CancelledError)), outcome
    # A refused call stays referenced by the traceback of the RuntimeError in the group's
    # exception (the refusing frame holds it) until that is let go of.
    outcome.clear()
    gc.collect()
    assert await returned(probe)
    assert probe.reason == "Dropped"


async def fail_now():
    raise ValueError("sibling failed")
