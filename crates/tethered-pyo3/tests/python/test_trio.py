"""trio, directly and as anyio's backend: the same functions work, trio's cancellation (the
abort of `wait_task_rescheduled`) cancels the job's token, and the joined variant holds."""

import statistics
import time

import anyio
import pytest
import tethered_example as ext
from conftest import RETURN_WITHIN, SETTLE

trio = pytest.importorskip("trio")

RELEASE_AFTER = 0.2


async def trio_started(*probes):
    """Waits (trio) until each probe's closure runs."""
    deadline = time.monotonic() + SETTLE
    while not all(p.running or p.returned for p in probes):
        assert time.monotonic() < deadline, "a job never started"
        await trio.sleep(0.001)


async def trio_returned(probe, timeout=RETURN_WITHIN):
    deadline = time.monotonic() + timeout
    while not probe.returned:
        if time.monotonic() > deadline:
            return False
        await trio.sleep(0.001)
    return True


def test_a_trio_call_gives_its_value_and_its_exception():
    async def main():
        assert await ext.add(40, 2) == 42
        assert await ext.echo("joined") == "joined"
        with pytest.raises(ValueError, match="no good"):
            await ext.fail("no good")
        async with trio.open_nursery() as nursery:
            nursery.start_soon(ext.add, 1, 2)

    trio.run(main)


def test_move_on_after_stops_the_native_loop():
    async def main():
        probe = ext.Probe()
        with trio.move_on_after(0.05) as scope:
            await ext.spin(probe)
        assert scope.cancelled_caught
        assert await trio_returned(probe)
        assert probe.reason == "Timeout"

    trio.run(main)


def test_fail_after_stops_the_native_loop_and_raises_too_slow():
    async def main():
        probe = ext.Probe()
        with pytest.raises(trio.TooSlowError):
            with trio.fail_after(0.05):
                await ext.spin(probe)
        assert await trio_returned(probe)

    trio.run(main)


def test_a_failing_nursery_sibling_stops_the_job():
    async def main():
        probe = ext.Probe()

        async def fail_once_started():
            await trio_started(probe)
            raise ValueError("sibling failed")

        with pytest.raises(BaseException) as raised:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ext.spin, probe)
                nursery.start_soon(fail_once_started)
        assert "sibling failed" in repr(raised.value)
        assert await trio_returned(probe)

    trio.run(main)


def test_joined_cancellation_completes_after_the_native_return():
    async def main():
        probe = ext.Probe()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(release_later, probe)
            with trio.move_on_after(0.05):
                await ext.spin_lingering(probe)
            # The scope's Cancelled came only once the native code had returned.
            assert probe.returned

    async def release_later(probe):
        await trio_started(probe)
        await trio.sleep(RELEASE_AFTER)
        probe.release()

    trio.run(main)


def test_plain_cancellation_completes_at_once_and_the_native_code_returns_later():
    async def main():
        probe = ext.Probe()
        with trio.move_on_after(0.05):
            await ext.spin_lingering(probe, grace=0)
        assert not probe.returned, "trio's abandon-on-cancel semantics: Cancelled at once"
        probe.release()
        assert await trio_returned(probe)

    trio.run(main)


def test_two_hundred_jobs_cancelled_at_once_all_stop():
    async def main():
        probes = [ext.Probe() for _ in range(200)]
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:
                for probe in probes:
                    nursery.start_soon(ext.spin, probe)
                await trio_started(*probes)
                scope.cancel()
        for probe in probes:
            assert await trio_returned(probe)
            assert probe.reason == "Dropped"

    trio.run(main)


def test_a_call_freed_unawaited_cancels_its_job():
    async def main():
        probe = ext.Probe()
        call = ext.spin(probe)
        await trio_started(probe)
        call.close()  # as the garbage collector does for a coroutine never awaited
        del call
        assert await trio_returned(probe)
        assert probe.reason == "Dropped"

    trio.run(main)


def test_anyio_on_trio_move_on_after_and_start_soon():
    async def main():
        probe = ext.Probe()
        with anyio.move_on_after(0.05):
            await ext.spin(probe)
        assert await trio_returned(probe)
        async with anyio.create_task_group() as group:
            group.start_soon(ext.add, 2, 3)
        assert await ext.echo(7) == 7

    anyio.run(main, backend="trio")


def test_trio_cancel_to_native_return_times():
    async def main():
        times = []
        for _ in range(20):
            probe = ext.Probe()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(ext.spin, probe)
                await trio_started(probe)
                cancelled = time.monotonic()
                nursery.cancel_scope.cancel()
            assert await trio_returned(probe)
            times.append(probe.returned_at - cancelled)
        median, worst = statistics.median(times), max(times)
        print(f"trio cancel to native return: median {median * 1e3:.2f} ms, "
              f"worst {worst * 1e3:.2f} ms (20 runs)")
        assert worst < RETURN_WITHIN

    trio.run(main)
