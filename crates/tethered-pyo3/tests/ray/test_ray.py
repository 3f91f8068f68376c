"""`ray.cancel` and `ray.kill` stop the native work of a Ray task or actor call, on a cluster of
three nodes on this machine, for each way Ray reaches a running call:

- a task (`KeyboardInterrupt` on the worker's main thread, which `run_native` sees at its next
  signal check), its child tasks with `recursive=True`, and the `ray.get(timeout=)` idiom;
- a threaded actor's method (Ray sets only a flag, `is_canceled()`, which `run_native` reads at
  each check on the method's thread);
- an async actor's method (Ray cancels its asyncio task, which a `spawn_native` coroutine sees);
- `ray.kill` of an actor (the process ends at once, native threads with it);
- SIGTERM to an actor's worker (Ray's handler raises `SystemExit`, a `Shutdown`).

Each checks that the native loop stopped within a bound after the cancel (no thread of its name
left on any node), that the reason its token read is `Dropped` with the cause `ray.cancel`, and
that the worker serves the next call. The naive halves show the same without tethered: a plain
pyo3 call that releases the GIL runs on to its end."""

import os
import signal
import time

import pytest
from conftest import (
    STOP_WITHIN,
    alive,
    ray,
    report,
    running,
    stopped_within,
    threads_named,
    wait_until,
)

import tethered_example as ext  # noqa: F401  (installed in the workers' environment too)
from ray.exceptions import GetTimeoutError, TaskCancelledError

NATIVE_SECONDS = 120.0  # what a loop would run without a cancel
NAIVE_SECONDS = 3.0  # what the naive halves run, to their end


@ray.remote(max_retries=0)
def spin_task(name, record):
    import tethered_example as ext

    return ext.spin_recorded(name, NATIVE_SECONDS, record)


@ray.remote(max_retries=0)
def naive_task(seconds):
    import tethered_example as ext

    ext.naive_sleep(seconds)
    return os.getpid()


@ray.remote(max_retries=0)
def pid_task():
    return os.getpid()


@ray.remote(max_retries=0)
def parent_task(name, record):
    child = spin_task.options(resources={"node_b": 1}).remote(name, record)
    return ray.get(child)


@ray.remote(max_concurrency=4, max_restarts=0)
class Threaded:
    def spin(self, name, record):
        import tethered_example as ext

        return ext.spin_recorded(name, NATIVE_SECONDS, record)

    def naive(self, seconds):
        import tethered_example as ext

        ext.naive_sleep(seconds)

    def pid(self):
        return os.getpid()


@ray.remote(max_restarts=0)
class Sync:
    """One method at a time, on the worker's main thread."""

    def spin(self, name, record):
        import tethered_example as ext

        return ext.spin_recorded(name, NATIVE_SECONDS, record)

    def pid(self):
        return os.getpid()


@ray.remote(max_restarts=0)
class Async:
    async def spin(self, name, record):
        import tethered_example as ext

        return await ext.spin_recorded_async(name, NATIVE_SECONDS, record)

    async def pid(self):
        return os.getpid()


def read(record):
    return record.read_text() if record.exists() else None


def test_a_cancelled_task_stops_its_native_loop_and_its_worker_serves_the_next(
    cluster, tmp_path
):
    record = tmp_path / "task"
    ref = spin_task.options(resources={"node_a": 1}).remote("rt-task", str(record))
    pid = running("rt-task")
    ray.cancel(ref)
    took = stopped_within("rt-task")
    assert took is not None, "the native loop ran on after ray.cancel"
    report("task", took)
    with pytest.raises(TaskCancelledError):
        ray.get(ref, timeout=30)
    assert read(record) == "Dropped|ray.cancel"
    assert alive(pid), "the worker process died"
    assert isinstance(ray.get(pid_task.options(resources={"node_a": 1}).remote()), int)


def test_a_cancelled_task_without_tethered_runs_on_to_its_end(cluster):
    ref = naive_task.options(resources={"node_a": 1}).remote(NAIVE_SECONDS)
    time.sleep(1.0)  # the worker is in the native call
    cancelled = time.monotonic()
    ray.cancel(ref)
    # Ray's KeyboardInterrupt waits for the native call: only its end ends the task.
    with pytest.raises(TaskCancelledError):
        ray.get(ref, timeout=30)
    assert time.monotonic() - cancelled >= NAIVE_SECONDS - 1.0 - 0.5


def test_recursive_cancel_stops_a_child_task_on_another_node(cluster, tmp_path):
    record = tmp_path / "child"
    ref = parent_task.options(resources={"node_a": 1}).remote("rt-child", str(record))
    running("rt-child")
    ray.cancel(ref, recursive=True)
    took = stopped_within("rt-child")
    assert took is not None, "the child's native loop ran on after a recursive ray.cancel"
    report("child task (recursive)", took)
    with pytest.raises(TaskCancelledError):
        ray.get(ref, timeout=30)
    assert read(record) == "Dropped|ray.cancel"


def test_the_timeout_idiom_get_then_cancel(cluster, tmp_path):
    record = tmp_path / "timeout"
    ref = spin_task.options(resources={"node_b": 1}).remote("rt-timeout", str(record))
    running("rt-timeout")
    with pytest.raises(GetTimeoutError):
        ray.get(ref, timeout=0.2)
    # A timed-out `ray.get` cancels nothing: the loop still runs until the cancel.
    assert threads_named("rt-timeout")
    ray.cancel(ref)
    took = stopped_within("rt-timeout")
    assert took is not None
    report("task after ray.get(timeout=)", took)
    assert read(record) == "Dropped|ray.cancel"


def test_a_threaded_actor_method_cancelled_stops_its_native_loop(cluster, tmp_path):
    actor = Threaded.options(resources={"node_b": 1}).remote()
    pid = ray.get(actor.pid.remote(), timeout=60)
    record = tmp_path / "threaded"
    ref = actor.spin.remote("rt-threaded", str(record))
    other = actor.spin.remote("rt-sibling", str(tmp_path / "sibling"))
    running("rt-threaded")
    running("rt-sibling")
    ray.cancel(ref)
    took = stopped_within("rt-threaded")
    assert took is not None, "the threaded actor's native loop ran on after ray.cancel"
    report("threaded actor method", took)
    with pytest.raises(TaskCancelledError):
        ray.get(ref, timeout=30)
    assert read(record) == "Dropped|ray.cancel"
    # Only the cancelled call stopped: its sibling on another thread of the actor runs on.
    assert threads_named("rt-sibling")
    ray.cancel(other)
    assert stopped_within("rt-sibling") is not None
    # The actor (its process) serves the next call.
    assert ray.get(actor.pid.remote(), timeout=30) == pid
    ray.kill(actor)


def test_a_threaded_actor_method_without_tethered_runs_on_to_its_end(cluster):
    actor = Threaded.options(resources={"node_b": 1}).remote()
    ray.get(actor.pid.remote(), timeout=60)
    ref = actor.naive.remote(NAIVE_SECONDS)
    time.sleep(1.0)
    cancelled = time.monotonic()
    ray.cancel(ref)
    # Ray only sets a flag: the call returns at its natural end.
    with pytest.raises(TaskCancelledError):
        ray.get(ref, timeout=30)
    assert time.monotonic() - cancelled >= NAIVE_SECONDS - 1.0 - 0.5
    ray.kill(actor)


def test_an_async_actor_method_cancelled_stops_its_native_job(cluster, tmp_path):
    actor = Async.options(resources={"node_a": 1}).remote()
    pid = ray.get(actor.pid.remote(), timeout=60)
    record = tmp_path / "async"
    ref = actor.spin.remote("rt-async", str(record))
    running("rt-async")
    ray.cancel(ref)
    took = stopped_within("rt-async")
    assert took is not None, "the async actor's native job ran on after ray.cancel"
    report("async actor method", took)
    with pytest.raises(TaskCancelledError):
        ray.get(ref, timeout=30)
    # Ray cancels the method's asyncio task: the caller gave up.
    assert read(record).startswith("Dropped|")
    assert ray.get(actor.pid.remote(), timeout=30) == pid
    ray.kill(actor)


def test_ray_kill_ends_the_actor_and_its_native_loops_with_it(cluster):
    actor = Threaded.options(resources={"node_a": 1}).remote()
    pid = ray.get(actor.pid.remote(), timeout=60)
    refs = [actor.spin.remote(f"rt-kill-{i}", os.devnull) for i in range(2)]
    for i in range(2):
        running(f"rt-kill-{i}")
    killed = time.monotonic()
    ray.kill(actor)
    for i in range(2):
        assert stopped_within(f"rt-kill-{i}") is not None
    report("ray.kill of a threaded actor (the process)", time.monotonic() - killed)
    # Ray ends the actor's process at once (`_Exit`): no code of it runs, the native loops
    # end with it.
    assert wait_until(lambda: not alive(pid), STOP_WITHIN) is not None, "the actor lives on"
    for ref in refs:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(ref, timeout=30)


def test_sigterm_to_an_actor_stops_its_native_loop_as_a_shutdown(cluster, tmp_path):
    # A node drained, `ray stop`, an orchestrator's stop: the worker gets SIGTERM, and Ray's
    # handler raises `SystemExit` on its main thread, where the method's `run_native` waits.
    actor = Sync.options(resources={"node_b": 1}).remote()
    pid = ray.get(actor.pid.remote(), timeout=60)
    record = tmp_path / "sigterm"
    ref = actor.spin.remote("rt-sigterm", str(record))
    running("rt-sigterm")
    os.kill(pid, signal.SIGTERM)
    took = stopped_within("rt-sigterm")
    assert took is not None, "the native loop ran on after SIGTERM"
    report("SIGTERM to a synchronous actor", took)
    # The process is going away: the token reads Shutdown, not a caller giving up.
    assert read(record) == "Shutdown|interrupted: SystemExit"
    assert wait_until(lambda: not alive(pid), STOP_WITHIN) is not None, "the actor lives on"
    with pytest.raises(ray.exceptions.RayActorError):
        ray.get(ref, timeout=30)


def test_a_hundred_tasks_cancelled_at_once_across_nodes(cluster, tmp_path):
    refs = [
        spin_task.options(resources={"node_a" if i % 2 else "node_b": 1}).remote(
            "rt-many", str(tmp_path / f"many-{i}")
        )
        for i in range(100)
    ]
    # One per CPU runs (four on the two worker nodes); the rest wait for a CPU.
    running_now = lambda: len(threads_named("rt-many"))  # noqa: E731
    deadline = time.monotonic() + 60
    while running_now() < 4 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert running_now() >= 2, "the tasks never ran"
    for ref in refs:
        ray.cancel(ref)
    took = stopped_within("rt-many", timeout=30)
    assert took is not None, f"{running_now()} native loops ran on after 100 cancels"
    report("100 tasks at once", took)
    for ref in refs:
        with pytest.raises(TaskCancelledError):
            ray.get(ref, timeout=60)
    stops = [read(tmp_path / f"many-{i}") for i in range(100)]
    ran = [stop for stop in stops if stop is not None]
    assert ran and all(stop == "Dropped|ray.cancel" for stop in ran), stops
    # No loop ever started after its cancel, and none is left on any node.
    time.sleep(1.0)
    assert not threads_named("rt-many")
