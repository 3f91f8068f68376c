"""How long from asyncio's cancel to the native closure's return.

Prints the median and the worst of ROUNDS runs each; run with `-s` to see them:

    target/py-venv/bin/python -m pytest crates/tethered-pyo3/tests/python/test_latency.py -s

`task.cancel()` is timed from the call; `asyncio.wait_for` from its deadline (its timer
firing late is part of what a caller waits). Both include the loop iteration after the cancel
that runs the future's done callback, which cancels the token. Two kinds of job: `spin` checks
its token in a busy loop (and so competes with the loop's thread for a core), `idle` sleeps on
its token (`wait_timeout`), as a job waiting for I/O or a lock would.
"""

import asyncio
import statistics
import time

import pytest
import tethered_example as ext
from conftest import RETURN_WITHIN, awaiting, returned, started

ROUNDS = 100
WAIT_FOR_TIMEOUT = 0.02


def report(what, seconds):
    ms = sorted(s * 1e3 for s in seconds)
    print(
        f"\n{what}: cancel to native return over {len(ms)} runs: "
        f"median {statistics.median(ms):.3f} ms, worst {ms[-1]:.3f} ms"
    )
    assert ms[-1] < RETURN_WITHIN * 1e3


JOBS = pytest.mark.parametrize("job", ["spin", "idle"])


@JOBS
async def test_task_cancel_to_native_return(job):
    latencies = []
    for _ in range(ROUNDS):
        probe = ext.Probe()
        task = asyncio.create_task(awaiting(getattr(ext, job)(probe)))
        await started(probe)
        cancelled_at = time.monotonic()
        task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            pass
        assert await returned(probe)
        latencies.append(probe.returned_at - cancelled_at)
    report(f"{job}, task.cancel()", latencies)


@JOBS
async def test_wait_for_timeout_to_native_return(job):
    loop = asyncio.get_running_loop()
    latencies = []
    for _ in range(ROUNDS):
        probe = ext.Probe()
        fut = getattr(ext, job)(probe)
        await started(probe)  # a job cancelled before its closure started would never run it
        deadline = loop.time() + WAIT_FOR_TIMEOUT  # loop.time() is time.monotonic()
        try:
            await asyncio.wait_for(fut, WAIT_FOR_TIMEOUT)
        except asyncio.TimeoutError:
            pass
        assert await returned(probe)
        latencies.append(probe.returned_at - deadline)
    report(f"{job}, asyncio.wait_for(.., {WAIT_FOR_TIMEOUT})", latencies)
