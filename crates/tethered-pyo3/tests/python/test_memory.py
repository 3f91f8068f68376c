"""Memory: running more jobs does not grow the interpreter's memory, and a burst of jobs leaves
no more idle threads behind than the thread cache keeps (four a core, at least eight).

Each idle thread holds its stack and the interpreter's thread state (about 25 KiB) for the
cache's keep-alive: with every thread of a burst kept, 256 calls at once left 174 threads and
4.2 MB behind them, which a measure of 20,000 jobs read as 211 B a job. The harness here is
the steady state: a fixed number of worker coroutines, warmed up first, so that what grows is
what the jobs leave, not the harness's own tasks.
"""

import asyncio
import gc
import os
import sys

import pytest
import tethered_example as ext

from conftest import LOOP

pytestmark = pytest.mark.skipif(
    LOOP != "asyncio" or sys.version_info < (3, 11),
    reason="measured once per interpreter 3.11+, on the default loop",
)

CONCURRENCY = 64


def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def threads():
    return len(os.listdir("/proc/self/task"))


async def run(jobs, concurrency):
    async def worker(count):
        for i in range(count):
            assert await ext.add(i, 1) == i + 1

    await asyncio.gather(*(worker(jobs // concurrency) for _ in range(concurrency)))


async def growth(jobs):
    gc.collect()
    before = rss()
    await run(jobs, CONCURRENCY)
    gc.collect()
    return rss() - before


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc (Linux)")
@pytest.mark.timeout(600)  # 60,000 jobs: tens of seconds on a loaded 2-core machine
def test_memory_does_not_grow_with_the_number_of_jobs_run():
    async def main():
        await run(20 * CONCURRENCY, CONCURRENCY)  # threads, the loop's structures
        few = await growth(20_000)
        many = await growth(40_000)
        return few, many

    few, many = asyncio.run(main())
    print(f"steady state: +{few} B over 20,000 jobs, +{many} B over 40,000")
    assert many / 40_000 < 16, f"{many / 40_000:.1f} B a job over 40,000 jobs"
    assert many < few + 1024 * 1024, (
        f"memory grows with the jobs run: +{few} B over 20,000, +{many} B over 40,000"
    )


@pytest.mark.skipif(not os.path.exists("/proc/self/task"), reason="needs /proc (Linux)")
def test_a_burst_leaves_at_most_the_cache_of_idle_threads():
    cap = max(8, 4 * len(os.sched_getaffinity(0)))

    async def main():
        await ext.add(0, 1)
        before = threads()
        await asyncio.gather(*(ext.add(i, 1) for i in range(256)))
        await asyncio.sleep(0.2)  # the burst's threads end as their jobs return
        return before, threads()

    before, after = asyncio.run(main())
    assert after - before <= cap, f"{after - before} threads more after a burst (cap {cap})"
