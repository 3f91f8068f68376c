"""What awaiting a native job gives: its value, its exception, its panic."""

import asyncio
import collections.abc

import anyio
import pytest
import tethered_example as ext
from conftest import needs_311


async def test_value_is_the_closures_return_value():
    assert await ext.add(2, 40) == 42


async def test_python_objects_pass_through_unchanged():
    value = {"a": [1, 2.5, None]}
    assert await ext.echo(value) is value


async def test_closure_error_is_raised_as_that_python_exception():
    with pytest.raises(ValueError, match="^bad input$"):
        await ext.fail("bad input")


async def test_a_closure_raising_stop_iteration_raises_runtime_error_instead_of_hanging():
    # asyncio refuses a StopIteration in a future; the awaiter still gets an answer.
    with pytest.raises(RuntimeError, match="StopIteration") as raised:
        await asyncio.wait_for(ext.stop_iteration("no next item"), 10)
    assert isinstance(raised.value.__cause__, StopIteration)
    assert raised.value.__cause__.args == ("no next item",)


async def test_panic_is_raised_as_panic_exception_with_its_message():
    # pyo3's PanicException derives from BaseException, as for a panicking #[pyfunction].
    with pytest.raises(BaseException, match="^boom 7$") as raised:
        await ext.panic("boom 7")
    assert type(raised.value).__name__ == "PanicException"
    assert not isinstance(raised.value, Exception)


async def test_both_variants_return_the_same_coroutine_type():
    plain, joined = ext.add(1, 1), ext.echo(2)
    assert type(plain) is type(joined)
    assert asyncio.iscoroutine(plain) and isinstance(plain, collections.abc.Coroutine)
    assert await plain == 2
    assert await joined == 2


@needs_311
async def test_a_plain_call_goes_wherever_a_coroutine_goes():
    assert await asyncio.create_task(ext.add(1, 1)) == 2
    async with asyncio.TaskGroup() as group:
        task = group.create_task(ext.add(1, 2))
    assert task.result() == 3
    assert await asyncio.gather(ext.add(2, 2), ext.add(2, 3)) == [4, 5]
    assert await asyncio.wait_for(ext.add(3, 3), 10) == 6
    assert await asyncio.ensure_future(ext.add(3, 4)) == 7


async def test_a_plain_call_runs_under_anyio_start_soon():
    async with anyio.create_task_group() as group:
        group.start_soon(ext.add, 1, 1)


def test_without_a_running_loop_the_call_raises_runtime_error():
    with pytest.raises(RuntimeError, match="no running asyncio event loop"):
        ext.add(1, 2)


async def test_many_results_each_reach_their_own_future():
    results = await asyncio.gather(*(ext.add(n, n) for n in range(200)))
    assert results == [2 * n for n in range(200)]


async def test_builder_names_the_thread_and_runs_on_the_given_spawner():
    assert await ext.thread_name() == "example-job"
    assert await ext.pool_thread_name() == "example-pool"


async def test_parse_error_of_a_script_is_raised_at_the_call():
    with pytest.raises(ValueError, match="line 1: unknown instruction"):
        ext.run_script("jump nowhere")


async def test_a_script_that_halts_returns_its_registers():
    report = await ext.run_script("set x 3\nloop:\nadd y 2\nsub x 1\njnz x loop\nhalt")
    assert report == {
        "outcome": "halted",
        "reason": None,
        "steps": 11,
        "registers": {"x": 0, "y": 6},
    }


class _LoopWithoutContext(asyncio.SelectorEventLoop):
    """A loop whose `call_later` takes no `context=`, as older or hand-written loops."""

    def call_later(self, delay, callback, *args):
        return super().call_later(delay, callback, *args)


def test_a_loop_whose_call_later_takes_no_context_still_runs_jobs():
    async def add():
        return await ext.add(20, 22)

    loop = _LoopWithoutContext()
    try:
        assert loop.run_until_complete(add()) == 42
    finally:
        loop.close()
