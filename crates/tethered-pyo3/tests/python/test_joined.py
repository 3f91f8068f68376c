"""A cancelled caller waits for the native code: the awaiting task's cancellation completes only
after the closure returned, unless a grace bounds the wait. The jobs here spin until cancelled,
then clean up until the test calls `probe.release()`, so what comes first never depends on how
fast the machine is."""

import asyncio
import sys
import time

import anyio
import pytest
import tethered_example as ext
from conftest import Naive, awaiting, eventually, needs_311, returned, started

RELEASE_AFTER = 0.2  # the clean-up's length where the test lets the loop release it


async def test_joined_cancellation_completes_after_the_native_return():
    probe = ext.Probe()
    task = asyncio.create_task(awaiting(ext.spin_lingering(probe)))
    await started(probe)
    asyncio.get_running_loop().call_later(RELEASE_AFTER, probe.release)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.returned, "CancelledError came before the native code returned"
    assert probe.returned_at <= time.monotonic()
    assert probe.reason == "Dropped"


async def test_plain_cancellation_completes_at_once_and_the_native_code_returns_later():
    probe = ext.Probe()
    task = asyncio.create_task(awaiting(ext.spin_lingering(probe, grace=0)))
    await started(probe)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not probe.returned, "asyncio's usual semantics: CancelledError at once"
    probe.release()
    assert await returned(probe)


async def test_joined_wait_for_raises_timeout_only_after_the_native_return():
    probe = ext.Probe()
    joined = ext.spin_lingering(probe)  # the job starts here; awaiting it starts below
    await started(probe)
    asyncio.get_running_loop().call_later(RELEASE_AFTER, probe.release)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(joined, 0.05)
    assert probe.returned
    assert probe.reason == ("Timeout" if sys.version_info >= (3, 12) else "Dropped")


@needs_311
async def test_joined_asyncio_timeout_raises_only_after_the_native_return():
    probe = ext.Probe()
    joined = ext.spin_lingering(probe)
    await started(probe)
    asyncio.get_running_loop().call_later(RELEASE_AFTER, probe.release)
    with pytest.raises(asyncio.TimeoutError):
        async with asyncio.timeout(0.05):
            await joined
    assert probe.returned


async def test_joined_absorbs_repeated_cancels_and_keeps_the_first_message():
    probe = ext.Probe()
    task = asyncio.create_task(awaiting(ext.spin_lingering(probe)))
    await started(probe)
    task.cancel("first")
    await asyncio.sleep(0.05)
    task.cancel("second")
    await asyncio.sleep(0.05)
    assert not task.done()
    probe.release()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.returned
    assert (probe.reason, probe.cause) == ("Dropped", "first")


async def test_joined_gives_the_value_when_not_cancelled():
    value = object()
    assert await ext.echo(value) is value


def test_naive_joining_waits_forever_where_tethered_joining_returns():
    """anyio's to_thread.run_sync joins too, but cannot stop the thread: its cancel scope does
    not exit until the test stops the spinner."""
    naive = Naive()
    probe = ext.Probe()
    probe.release()  # no clean-up: return as soon as cancelled
    exited = {}

    async def main():
        joined = ext.spin_lingering(probe)
        await started(probe)
        with anyio.move_on_after(0.05):
            await joined
        exited["tethered"] = probe.returned

        async def run_naive():
            with anyio.move_on_after(0.05):
                await anyio.to_thread.run_sync(naive.spinner.run)
            exited["naive"] = time.monotonic()

        async with anyio.create_task_group() as tg:
            tg.start_soon(run_naive)
            await anyio.sleep(0.5)
            assert "naive" not in exited, "the naive scope exited while its thread spins"
            stopped = time.monotonic()
            naive.spinner.stop()
        assert exited["naive"] >= stopped

    with naive:
        anyio.run(main, backend="asyncio")
    assert exited["tethered"]


@needs_311
async def test_joined_cancelled_before_its_first_step_still_cancels_and_waits():
    # A TaskGroup sibling failing at once cancels a task before it ever ran: the joined
    # awaitable still cancels the job and waits for its native return.
    probe = ext.Probe()
    joined = ext.spin_lingering(probe)  # the job starts here
    await started(probe)
    task = asyncio.create_task(joined)
    task.cancel()  # before the task's first step
    asyncio.get_running_loop().call_later(RELEASE_AFTER, probe.release)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.returned, "CancelledError came before the native code returned"
    assert probe.reason == "Dropped"


@needs_311
async def test_joined_goes_wherever_a_coroutine_goes():
    assert asyncio.iscoroutine(ext.echo(1))
    assert await asyncio.create_task(ext.echo(2)) == 2
    async with asyncio.TaskGroup() as group:
        task = group.create_task(ext.echo(3))
    assert task.result() == 3
    assert await asyncio.gather(ext.echo(4), ext.echo(5)) == [4, 5]
    assert await asyncio.wait_for(ext.echo(6), 10) == 6


async def test_joined_runs_under_anyio_start_soon():
    results = []

    async def keep(value):
        results.append(await ext.echo(value))

    async with anyio.create_task_group() as group:
        group.start_soon(keep, 7)
        group.start_soon(ext.echo, 8)
    assert results == [7]


async def test_a_grace_bounds_the_wait_and_counts_the_closure_detached():
    probe = ext.Probe()
    task = asyncio.create_task(awaiting(ext.spin_lingering(probe, grace=0.1)))
    await started(probe)
    cancelled_at = time.monotonic()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    waited = time.monotonic() - cancelled_at
    # The clean-up is never released: the caller raised once the grace passed, and no sooner.
    assert not probe.returned
    assert 0.1 <= waited < 5.0
    assert ext.stats()["detached"] == 1
    probe.release()
    assert await returned(probe)
    assert await eventually(lambda: ext.stats()["detached"] == 0, 5.0)


async def test_a_zero_grace_raises_at_once_and_counts_the_closure_detached():
    probe = ext.Probe()
    task = asyncio.create_task(awaiting(ext.spin_lingering(probe, grace=0)))
    await started(probe)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not probe.returned
    assert ext.stats()["detached"] == 1
    probe.release()
    assert await returned(probe)
    assert probe.reason == "Dropped"
