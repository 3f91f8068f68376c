"""The reason table, row by row: what each way of stopping a Python caller makes the native job's
token read (`probe.reason`), with the language's own detail kept as the cause (`probe.cause`).

The rows are the ones of the README's table; every test here spins a job until its token is
cancelled and reads the reason and the cause the closure saw when it returned."""

import asyncio
import gc
import sys

import anyio
import pytest
import tethered_example as ext
from conftest import awaiting, needs_311, returned, started

trio = pytest.importorskip("trio")

DEADLINE = 0.05


async def cancelled_task(message=None):
    """A task awaiting a job, cancelled (with `message`) once the job runs."""
    probe = ext.Probe()
    task = asyncio.create_task(awaiting(ext.spin(probe)))
    await started(probe)
    task.cancel(message) if message is not None else task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.returned, "the cancelled task's CancelledError came before the native return"
    return probe


async def test_task_cancel_reads_dropped():
    probe = await cancelled_task()
    assert (probe.reason, probe.cause) == ("Dropped", None)


async def test_task_cancel_with_a_message_reads_dropped_with_the_message_as_the_cause():
    probe = await cancelled_task("client went away")
    assert (probe.reason, probe.cause) == ("Dropped", "client went away")


@needs_311
async def test_asyncio_timeout_reads_timeout():
    probe = ext.Probe()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(DEADLINE):
            await ext.spin(probe)
    assert (probe.reason, probe.cause) == ("Timeout", None)


@needs_311
async def test_asyncio_timeout_at_reads_timeout_from_a_nested_coroutine():
    probe = ext.Probe()

    async def inner():
        return await ext.spin(probe)

    async def middle():
        return await inner()

    loop = asyncio.get_running_loop()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout_at(loop.time() + DEADLINE):
            await middle()
    assert probe.reason == "Timeout"


@needs_311
async def test_an_unexpired_asyncio_timeout_around_a_cancel_reads_dropped():
    probe = ext.Probe()

    async def guarded():
        async with asyncio.timeout(60):
            return await ext.spin(probe)

    task = asyncio.create_task(guarded())
    await started(probe)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert probe.reason == "Dropped"


async def test_wait_for_reads_timeout_from_3_12_on():
    probe = ext.Probe()
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(ext.spin(probe), DEADLINE)
    assert await returned(probe)
    # Before 3.12, wait_for runs the coroutine in a task of its own and cancels that task
    # without a trace of the deadline: the job reads Dropped there.
    expected = "Timeout" if sys.version_info >= (3, 12) else "Dropped"
    assert probe.reason == expected


@needs_311
async def test_a_failing_task_group_sibling_reads_dropped():
    probe = ext.Probe()

    async def fail_once_started():
        await started(probe)
        raise ValueError("sibling failed")

    with pytest.raises(ExceptionGroup):
        async with asyncio.TaskGroup() as group:
            group.create_task(awaiting(ext.spin(probe)))
            group.create_task(fail_once_started())
    assert await returned(probe)
    assert probe.reason == "Dropped"


async def test_a_freed_call_reads_dropped():
    probe = ext.Probe()
    call = ext.spin(probe)  # the job starts here, and nothing ever awaits it
    await started(probe)
    del call
    gc.collect()
    assert await returned(probe)
    assert probe.reason == "Dropped"


def test_a_closed_loop_reads_shutdown():
    probe = ext.Probe()
    loop = asyncio.new_event_loop()
    try:

        async def start():
            return ext.spin(probe)  # a job nothing awaits when the loop closes

        call = loop.run_until_complete(start())
        assert probe.wait_started(5.0)
    finally:
        loop.close()
    assert probe.wait_returned(5.0)
    assert probe.reason == "Shutdown"
    del call


async def test_a_job_deadline_reads_timeout_and_raises_timeout_error():
    probe = ext.Probe()
    with pytest.raises(TimeoutError, match="reached its deadline"):
        await ext.spin_for(probe, DEADLINE)
    assert probe.returned, "TimeoutError came before the native return"
    assert probe.reason == "Timeout"


async def test_a_parent_token_reads_its_reason_and_cause():
    parent = ext.Parent()
    probe = ext.Probe()
    call = ext.spin_child_of(parent, probe)
    await started(probe)
    parent.cancel("request ended")
    assert await call > 0  # the closure's value still arrives
    assert (probe.reason, probe.cause) == ("Requested", "request ended")


def anyio_row(backend, stop):
    probe = ext.Probe()

    async def main():
        if stop == "deadline":
            with anyio.move_on_after(DEADLINE):
                await ext.spin(probe)
        else:
            async with anyio.create_task_group() as group:

                async def run():
                    await ext.spin(probe)

                group.start_soon(run)
                while not probe.running:
                    await anyio.sleep(0.001)
                group.cancel_scope.cancel()

    anyio.run(main, backend=backend)
    assert probe.wait_returned(5.0)
    return probe


def test_anyio_on_asyncio_cancel_reads_dropped_with_anyio_s_message():
    probe = anyio_row("asyncio", "cancel")
    assert probe.reason == "Dropped"
    assert probe.cause.startswith("Cancelled via cancel scope")


def test_anyio_on_asyncio_deadline_reads_timeout():
    probe = anyio_row("asyncio", "deadline")
    assert probe.reason == "Timeout"
    assert probe.cause.endswith("reason: deadline exceeded")


def test_anyio_on_trio_cancel_reads_dropped():
    assert anyio_row("trio", "cancel").reason == "Dropped"


def test_anyio_on_trio_deadline_reads_timeout():
    assert anyio_row("trio", "deadline").reason == "Timeout"


def test_trio_fail_after_reads_timeout_and_cancel_reads_dropped():
    timed, cancelled = ext.Probe(), ext.Probe()

    async def main():
        with pytest.raises(trio.TooSlowError):
            with trio.fail_after(DEADLINE):
                await ext.spin(timed)
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:

                async def run():
                    await ext.spin(cancelled)

                nursery.start_soon(run)
                while not cancelled.running:
                    await trio.sleep(0.001)
                scope.cancel()

    trio.run(main)
    assert timed.wait_returned(5.0) and cancelled.wait_returned(5.0)
    assert (timed.reason, cancelled.reason) == ("Timeout", "Dropped")
