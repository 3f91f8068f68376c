"""A thousand jobs cancelled at once: nothing keeps running, nothing burns CPU."""

import asyncio
import time

import tethered_example as ext
from conftest import SETTLE, Naive, awaiting, eventually

JOBS = 1000
NAIVE_JOBS = 4


async def cpu_seconds_over(seconds):
    """CPU time this process uses (all its threads) while the loop idles for `seconds`."""
    before = time.process_time()
    await asyncio.sleep(seconds)
    return time.process_time() - before


async def test_thousand_cancelled_jobs_end_with_nothing_running_and_no_cpu_burn():
    assert ext.stats()["running"] == 0
    probes = [ext.Probe() for _ in range(JOBS)]
    tasks = [asyncio.create_task(awaiting(ext.idle(p))) for p in probes]
    assert await eventually(lambda: all(p.running for p in probes), 60.0)
    assert ext.stats()["running"] == JOBS

    for task in tasks:
        task.cancel()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert all(isinstance(r, asyncio.CancelledError) for r in results)
    assert await eventually(lambda: ext.stats()["running"] == 0, SETTLE), ext.stats()
    assert all(p.reason == "Dropped" for p in probes)
    await asyncio.sleep(0.1)  # the last threads exit
    tethered_burn = await cpu_seconds_over(0.5)

    # The same cancel for spinners behind run_in_executor: they run on, each on a core.
    async with Naive() as first:
        naives = [first] + [Naive() for _ in range(NAIVE_JOBS - 1)]
        try:
            tasks = [asyncio.create_task(awaiting(n.start())) for n in naives]
            for naive in naives:
                await naive.started()
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            naive_burn = await cpu_seconds_over(0.5)
            assert all(n.running for n in naives)
        finally:
            for naive in naives:
                naive.spinner.stop()

    print(f"\nCPU over 0.5 s after the cancel: tethered {tethered_burn:.3f} s "
          f"({JOBS} jobs), naive {naive_burn:.3f} s ({NAIVE_JOBS} executor jobs)")
    assert tethered_burn < 0.15
    assert naive_burn > max(0.05, 10 * tethered_burn)
