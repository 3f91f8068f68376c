"""`ray.cancel` stops the native work of a Ray task or actor call: the recipe, run on a local Ray.

Each path runs a native loop of the example extension module (`tethered_example`, Rust built with
tethered-pyo3: `spin_recorded` is a synchronous `run_native` call, `spin_recorded_async` a
`spawn_native` coroutine), cancels it once it runs, and reads how long the loop took to stop: the
loop writes what stopped it to a file as it returns, and the file's time is compared with the
cancel's. Ray's own `force=True` (the worker process killed, and a new one started for the next
call) is the peer.

    crates/tethered-pyo3/python/ray-setup.sh
    target/ray-venv/bin/python examples/ray/ray_cancel.py [--rounds N]

Prints one line per path: the median and the worst time from `ray.cancel` to the native stop,
and the reason and cause the loop's token read.
"""

import argparse
import os
import statistics
import tempfile
import time

import ray
from ray.exceptions import GetTimeoutError, TaskCancelledError

SECONDS = 120.0  # what a loop runs when nothing cancels it


@ray.remote(max_retries=0)
def task(record):
    import tethered_example as ext

    # A synchronous call: Ray's cancel interrupts this thread, and `run_native` stops the loop.
    return ext.spin_recorded("ray-task", SECONDS, record)


@ray.remote(max_retries=0)
def parent(record):
    # `ray.cancel(parent)` cancels this child too (`recursive=True`, the default).
    return ray.get(task.remote(record))


@ray.remote(max_retries=0)
def plain(started):
    import tethered_example as ext

    with open(started, "w") as file:
        file.write(str(os.getpid()))
    ext.naive_sleep(SECONDS)  # no tethered: nothing but the process's end stops it


@ray.remote(max_retries=0)
def quick():
    return os.getpid()


@ray.remote(max_concurrency=4)
class Threaded:
    def spin(self, record):
        import tethered_example as ext

        # Ray only sets a flag for this thread's call; `run_native` reads it at each check.
        return ext.spin_recorded("ray-threaded", SECONDS, record)


@ray.remote
class Async:
    async def spin(self, record):
        import tethered_example as ext

        # Ray cancels this method's asyncio task; the coroutine cancels the job.
        return await ext.spin_recorded_async("ray-async", SECONDS, record)


def wait_for(path, ready=lambda text: text != "", timeout=60.0):
    """Waits until the file at `path` reads something `ready` accepts; its text."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path) as file:
                text = file.read()
        except FileNotFoundError:
            text = ""
        if ready(text):
            return text
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never came")
        time.sleep(0.0005)


def cancel_and_time(submit, cancel=ray.cancel, before_cancel=None):
    """Submits a call, cancels it once its loop runs, and gives the seconds from the cancel to
    the loop's stop, with what its token read."""
    with tempfile.TemporaryDirectory() as scratch:
        record = os.path.join(scratch, "stop")
        ref = submit(record)
        wait_for(record, lambda text: text == "running")  # the loop runs
        if before_cancel is not None:
            before_cancel(ref)
        cancelled = time.time_ns()
        cancel(ref)
        stop = wait_for(record, lambda text: text not in ("", "running"))
        stopped = os.stat(record).st_mtime_ns
        try:
            ray.get(ref, timeout=60)
            raise AssertionError("the cancelled call returned a value")
        except TaskCancelledError:
            pass
        return max(stopped - cancelled, 0) / 1e9, stop


def timeout_idiom(ref):
    # A timed-out `ray.get` cancels nothing: the caller cancels.
    try:
        ray.get(ref, timeout=0.1)
    except GetTimeoutError:
        pass


def force_peer():
    """Ray's `force=True`: the worker process is killed. The seconds from the cancel to the
    process's end, and the next call's time on a new worker."""
    with tempfile.TemporaryDirectory() as scratch:
        started_file = os.path.join(scratch, "pid")
        ref = plain.remote(started_file)
        wait_for(started_file)
        with open(started_file) as file:
            pid = int(file.read())
        time.sleep(0.1)
        cancelled = time.monotonic()
        ray.cancel(ref, force=True)
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.0005)
        gone = time.monotonic() - cancelled
        try:
            ray.get(ref, timeout=60)
        except ray.exceptions.RayError:
            pass
        next_call = time.monotonic()
        ray.get(quick.remote())
        return gone, time.monotonic() - next_call


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1, help="cancels per path (1)")
    args = parser.parse_args()

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    threaded = Threaded.remote()
    asynchronous = Async.remote()
    paths = {
        "task": lambda record: task.remote(record),
        "child task (recursive)": lambda record: parent.remote(record),
        "threaded actor method": lambda record: threaded.spin.remote(record),
        "async actor method": lambda record: asynchronous.spin.remote(record),
    }
    for name, submit in paths.items():
        results = [cancel_and_time(submit) for _ in range(args.rounds)]
        show(name, results)
    results = [
        cancel_and_time(paths["task"], before_cancel=timeout_idiom) for _ in range(args.rounds)
    ]
    show("task, after ray.get(timeout=)", results)

    forced = [force_peer() for _ in range(args.rounds)]
    gone = [g for g, _ in forced]
    nexts = [n for _, n in forced]
    print(
        f"{'peer: force=True (no tethered)':<32} process gone: median "
        f"{statistics.median(gone) * 1000:7.1f} ms, worst {max(gone) * 1000:7.1f} ms; "
        f"the next call on a new worker: median {statistics.median(nexts) * 1000:.0f} ms"
    )
    ray.shutdown()


def show(name, results):
    times = [seconds for seconds, _ in results]
    stops = sorted({stop for _, stop in results})
    print(
        f"{name:<32} cancel to native stop: median {statistics.median(times) * 1000:7.1f} ms, "
        f"worst {max(times) * 1000:7.1f} ms; token read {', '.join(stops)}"
    )


if __name__ == "__main__":
    main()
