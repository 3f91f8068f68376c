"""Finding native code that ignores its token, from Python: `cancel_stats()` counts by reason the
cancels that reached running work and the returns after them, and times the returns by job name;
`stubborn_jobs()` lists a job still running past `set_stubborn_after(...)`, until it returns."""

import asyncio
import math
import time

import pytest
import tethered_example as ext
from conftest import SETTLE, eventually


@pytest.fixture
def stubborn_after():
    """The threshold is process-wide: each test that sets it puts the default back."""
    yield ext.set_stubborn_after
    ext.set_stubborn_after(1.0)


def delta(after, before, key, reason):
    return after[key][reason] - before[key][reason]


async def cancel_when_running(name, seconds, honour):
    """A task awaiting `named(...)`, cancelled once its job runs; returns the task, which ends
    (with `CancelledError`) once the native work has returned."""
    task = asyncio.create_task(ext.named(name, seconds, honour))
    assert await eventually(lambda: ext.stats()["running"] >= 1, SETTLE)
    await asyncio.sleep(0.02)
    task.cancel()
    return task


async def test_a_job_that_honours_its_cancel_is_counted_and_timed_and_never_stubborn(
    stubborn_after,
):
    stubborn_after(0.2)
    before = ext.cancel_stats()
    task = await cancel_when_running("py-honest", 30.0, True)
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await eventually(
        lambda: "py-honest" in ext.cancel_stats()["cancel_to_return"], SETTLE
    )
    after = ext.cancel_stats()
    # A cancelled asyncio task reads `Dropped` (the README's table).
    assert delta(after, before, "reached_running", "dropped") == 1
    assert delta(after, before, "returned_after_cancel", "dropped") == 1
    timed = after["cancel_to_return"]["py-honest"]
    assert timed["count"] == 1
    assert 0 <= timed["max"] < 1.0, timed
    assert timed["p50"] is not None and timed["p50"] <= max(timed["max"], 1e-05)
    assert sum(count for _, count in timed["buckets"]) == 1
    assert timed["buckets"][0][0] == pytest.approx(1e-05)
    assert timed["buckets"][-1][0] == math.inf
    await asyncio.sleep(0.3)
    assert all(job["name"] != "py-honest" for job in ext.stubborn_jobs())
    assert after["stubborn"] == before["stubborn"]


async def test_a_job_that_ignores_its_cancel_is_listed_then_timed_when_it_returns(
    stubborn_after,
):
    stubborn_after(0.2)
    before = ext.cancel_stats()
    started = time.monotonic()
    task = await cancel_when_running("py-stubborn", 1.5, False)

    def listed():
        return [job for job in ext.stubborn_jobs() if job["name"] == "py-stubborn"]

    assert await eventually(listed, SETTLE)
    (job,) = listed()
    assert job["reason"] == "dropped"
    assert job["since_cancel"] >= 0.2
    assert isinstance(job["id"], int)
    assert job["cause"] is None or isinstance(job["cause"], str)
    meanwhile = ext.cancel_stats()
    assert delta(meanwhile, before, "reached_running", "dropped") == 1
    assert delta(meanwhile, before, "returned_after_cancel", "dropped") == 0
    assert meanwhile["stubborn"] == before["stubborn"] + 1
    assert "py-stubborn" not in meanwhile["cancel_to_return"]

    # It returns at the end of its 1.5 s, and only then does the cancelled task end: listed
    # no more, timed by name.
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not listed()
    assert time.monotonic() - started >= 1.0
    assert await eventually(
        lambda: "py-stubborn" in ext.cancel_stats()["cancel_to_return"], SETTLE
    )
    after = ext.cancel_stats()
    assert delta(after, before, "returned_after_cancel", "dropped") == 1
    slow = after["cancel_to_return"]["py-stubborn"]
    assert slow["count"] == 1 and slow["max"] >= 0.2, slow


def test_set_stubborn_after_refuses_what_is_no_duration(stubborn_after):
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError, match="from 0 to math.inf"):
            stubborn_after(bad)
    stubborn_after(math.inf)  # never lists
    stubborn_after(0)
