"""A process forked after native jobs ran (multiprocessing's fork start method, a preloading
server such as gunicorn) gets working machinery of its own: its jobs deliver their outcomes and
its cancels reach its jobs, though the threads that delivered them in the parent do not exist in
the child."""

import asyncio
import multiprocessing
import os
import warnings

import pytest
import tethered_example as ext

CHILD_LIMIT = 30  # seconds; a child whose jobs never resolve is killed and the test fails

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform")


def child_work(results):
    """What the child does: awaits a job's value and cancels a spinning job by a timeout."""

    async def main():
        value = await ext.add(40, 2)
        probe = ext.Probe()
        try:
            await asyncio.wait_for(ext.spin(probe), 0.05)
        except asyncio.TimeoutError:
            pass
        return value, probe.returned

    results.put(asyncio.run(main()))


def test_a_forked_child_runs_and_cancels_jobs():
    # The parent's delivery thread exists once a job has delivered an outcome here.
    async def add():
        return await ext.add(1, 2)

    assert asyncio.run(add()) == 3
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    with warnings.catch_warnings():
        # 3.12+ warns that forking a process with threads may deadlock the child: the threads
        # of this crate hold no lock a child needs, which is what the test checks.
        warnings.simplefilter("ignore", DeprecationWarning)
        child = context.Process(target=child_work, args=(results,))
        child.start()
    child.join(CHILD_LIMIT)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"the forked child's jobs never resolved within {CHILD_LIMIT} s")
    assert child.exitcode == 0
    assert results.get(timeout=5) == (42, True)
