"""Shared helpers of the tethered-pyo3 suite.

Every test runs real native jobs from the example module (examples/python/ext, built by
crates/tethered-pyo3/python/setup.sh). A test that shows what code without tethered does runs a
`NaiveSpinner` behind `loop.run_in_executor`, checks that it still spins where the tethered job
stopped, then stops it: the spinner's flag belongs to the test.
"""

import asyncio
import inspect
import os
import sys
import time

import pytest
import tethered_example as ext

# Generous bounds for a busy 2-core machine: each is seconds above what the behaviour needs.
RETURN_WITHIN = 2.0  # a cancelled native job returns within this
SETTLE = 10.0  # counters settle (threads exit) within this


# The loop every test runs on: TETHERED_TEST_LOOP is `asyncio` (the default), `eager` (the
# default loop with asyncio's eager task factory, 3.12+) or `uvloop`. The Rust side's test
# runner sets it for each cell of the interpreter matrix.
LOOP = os.environ.get("TETHERED_TEST_LOOP", "asyncio")


class _EagerPolicy(asyncio.DefaultEventLoopPolicy):
    """The default loop, whose tasks take their first step at `create_task`."""

    def new_event_loop(self):
        loop = super().new_event_loop()
        loop.set_task_factory(asyncio.eager_task_factory)
        return loop


if LOOP == "uvloop":
    import uvloop

    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
elif LOOP == "eager":
    if sys.version_info < (3, 12):
        raise RuntimeError("the eager task factory needs Python 3.12")
    asyncio.set_event_loop_policy(_EagerPolicy())
elif LOOP != "asyncio":
    raise RuntimeError(f"TETHERED_TEST_LOOP={LOOP!r}: expected asyncio, eager or uvloop")

# What Python 3.10 lacks that some tests use: `asyncio.TaskGroup`, `asyncio.timeout`,
# `ExceptionGroup`.
needs_311 = pytest.mark.skipif(
    sys.version_info < (3, 11), reason="needs asyncio.TaskGroup / asyncio.timeout (3.11+)"
)


def pytest_report_header(config):
    return f"tethered-pyo3: Python {sys.version.split()[0]}, loop {LOOP}"


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Runs `async def` tests on a fresh loop with `asyncio.run` (of the policy above)."""
    if inspect.iscoroutinefunction(pyfuncitem.obj):
        names = pyfuncitem._fixtureinfo.argnames
        asyncio.run(pyfuncitem.obj(**{name: pyfuncitem.funcargs[name] for name in names}))
        return True
    return None


@pytest.fixture(autouse=True)
def no_native_job_left_running():
    """Every test ends with no tethered closure running (they all return once cancelled)."""
    yield
    assert wait_until(lambda: ext.stats()["running"] == 0, SETTLE), ext.stats()


def wait_until(condition, timeout):
    """Polls `condition` until it holds or `timeout` seconds pass; whether it held."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.001)
    return True


async def eventually(condition, timeout):
    """`wait_until` for coroutines: polls without blocking the loop, which runs at least once
    (so that tasks just made start awaiting before the test goes on)."""
    await asyncio.sleep(0)
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.001)
    return True


async def started(*probes):
    """Waits until each probe's closure runs, and lets the loop run the tasks just made."""
    assert await eventually(lambda: all(p.running or p.returned for p in probes), SETTLE)
    await asyncio.sleep(0.01)


async def returned(probe, timeout=RETURN_WITHIN):
    """Whether the probe's closure returned within `timeout` seconds."""
    return await eventually(lambda: probe.returned, timeout)


async def awaiting(awaitable):
    """A coroutine that awaits `awaitable`: wrap it in a task to have a task awaiting a job."""
    return await awaitable


class Naive:
    """Native work as it runs without tethered: a spin loop behind `run_in_executor`.

    `async with Naive() as naive:` stops the spinner on the way out, whatever the test saw.
    """

    def __init__(self):
        self.spinner = ext.NaiveSpinner()

    def start(self, loop=None):
        loop = loop or asyncio.get_running_loop()
        return loop.run_in_executor(None, self.spinner.run)

    async def started(self):
        assert await eventually(lambda: self.spinner.running, SETTLE)

    @property
    def running(self):
        return self.spinner.running

    def stop(self):
        self.spinner.stop()
        assert wait_until(lambda: not self.spinner.running, SETTLE)

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        self.spinner.stop()
        assert await eventually(lambda: not self.spinner.running, SETTLE)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
