"""`spawn_native_joined`: the awaiting task's cancellation completes only after the native code
returned. The jobs here spin until cancelled, then clean up for LINGER seconds."""

import asyncio
import time

import anyio
import pytest
import tethered_example as ext
from conftest import Naive, awaiting, returned, started

LINGER = 1.0  # far longer than a cancel takes to reach the awaiting task


async def cancel_and_observe(task):
    """Cancels `task` and returns when its CancelledError arrived (time.monotonic())."""
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    return time.monotonic()


async def test_joined_cancellation_completes_after_the_native_return():
    probe = ext.Probe()
    task = asyncio.create_task(awaiting(ext.spin_joined(probe, LINGER)))
    await started(probe)
    cancelled_at = await cancel_and_observe(task)
    assert probe.returned, "CancelledError came before the native code returned"
    assert probe.returned_at <= cancelled_at
    assert probe.reason == "Dropped"


async def test_plain_cancellation_completes_at_once_and_the_native_code_returns_later():
    probe = ext.Probe()
    task = asyncio.create_task(awaiting(ext.spin_lingering(probe, LINGER)))
    await started(probe)
    await cancel_and_observe(task)
    assert not probe.returned, "asyncio's usual semantics: CancelledError at once"
    assert await returned(probe, LINGER + 2.0)


async def test_joined_wait_for_raises_timeout_only_after_the_native_return():
    probe = ext.Probe()
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(ext.spin_joined(probe, LINGER), 0.05)
    assert probe.returned
    assert probe.reason == "Dropped"


async def test_joined_asyncio_timeout_raises_only_after_the_native_return():
    probe = ext.Probe()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await ext.spin_joined(probe, LINGER)
    assert probe.returned


async def test_joined_absorbs_repeated_cancels_and_keeps_the_first_message():
    probe = ext.Probe()
    task = asyncio.create_task(awaiting(ext.spin_joined(probe, LINGER)))
    await started(probe)
    task.cancel("first")
    await asyncio.sleep(0.05)
    task.cancel("second")
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.returned
    assert probe.reason == 'Custom("first")'


async def test_joined_gives_the_value_when_not_cancelled():
    value = object()
    assert await ext.echo_joined(value) is value


def test_naive_joining_waits_forever_where_tethered_joining_returns():
    """anyio's to_thread.run_sync joins too, but cannot stop the thread: its cancel scope does
    not exit until the test stops the spinner."""
    naive = Naive()
    probe = ext.Probe()
    exited = {}

    async def main():
        with anyio.move_on_after(0.05):
            await ext.spin_joined(probe, 0.0)
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
