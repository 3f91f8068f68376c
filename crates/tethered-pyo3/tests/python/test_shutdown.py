"""The loop closing, `asyncio.run` ending and the interpreter exiting with jobs still running."""

import asyncio
import gc
import subprocess
import sys
import textwrap
import time
import warnings

import pytest
import tethered_example as ext
from conftest import RETURN_WITHIN, Naive, awaiting, returned, started, wait_until


def test_loop_close_cancels_running_jobs_with_shutdown(capfd):
    awaited, bare, late = ext.Probe(), ext.Probe(), ext.Probe()
    loop = asyncio.new_event_loop()
    with Naive() as naive:

        async def start():
            task = asyncio.ensure_future(awaiting(ext.spin(awaited)))
            fut = ext.spin(bare)  # a future nobody awaits in a task
            ignoring = ext.ignore_token(late, 0.3)  # returns after the close, to a closed loop
            untethered = naive.start()
            await asyncio.sleep(0.01)
            return task, fut, ignoring, untethered

        handles = loop.run_until_complete(start())
        assert awaited.wait_started(RETURN_WITHIN) and bare.wait_started(RETURN_WITHIN)
        # Started before the close, or the close cancels it before it runs and it never returns.
        assert late.wait_started(RETURN_WITHIN)
        assert wait_until(lambda: naive.running, RETURN_WITHIN)

        loop.close()  # the loop is stopped with all four pending
        assert awaited.wait_returned(RETURN_WITHIN)
        assert bare.wait_returned(RETURN_WITHIN)
        assert awaited.reason == bare.reason == "Shutdown"
        assert late.wait_returned(RETURN_WITHIN)
        time.sleep(0.2)  # its outcome meets the closed loop (and is dropped)
        assert naive.running, "loop.close() leaves executor jobs running"
        handles[0]._log_destroy_pending = False  # it stays pending on the closed loop: known
        del handles

    err = capfd.readouterr().err
    assert "Event loop is closed" not in err
    assert "Traceback" not in err


def test_a_loop_dropped_unclosed_with_its_task_cancels_the_job():
    probe = ext.Probe()
    loop = asyncio.new_event_loop()

    async def start():
        return asyncio.ensure_future(awaiting(ext.spin(probe)))

    task = loop.run_until_complete(start())
    loop.run_until_complete(asyncio.sleep(0.01))
    assert probe.wait_started(RETURN_WITHIN)
    # The task, its future and the loop now reference each other and nothing else does; the
    # collector frees them together, and the loop's finalizer closes it.
    task._log_destroy_pending = False  # "Task was destroyed but it is pending!": on purpose
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)  # "unclosed event loop": on purpose
        del task, loop
        gc.collect()
    assert probe.wait_returned(RETURN_WITHIN)
    # Which goes first, the loop's close or the future's drop, is the collector's choice.
    assert probe.reason in ("Shutdown", "Dropped")


def test_asyncio_run_ending_cancels_the_jobs_left_running():
    in_task, bare = ext.Probe(), ext.Probe()
    kept = []

    async def main():
        kept.append(asyncio.create_task(awaiting(ext.spin(in_task))))
        kept.append(ext.spin(bare))
        await asyncio.sleep(0.01)
        assert in_task.wait_started(RETURN_WITHIN) and bare.wait_started(RETURN_WITHIN)

    with Naive() as naive:

        async def main_naive():
            kept.append(naive.start())
            await naive.started()

        asyncio.run(main())
        # asyncio.run cancels the tasks left (`Dropped`, as any task cancel), then closes the
        # loop, which cancels the rest (`Shutdown`).
        assert in_task.wait_returned(RETURN_WITHIN) and in_task.reason == "Dropped"
        assert bare.wait_returned(RETURN_WITHIN) and bare.reason == "Shutdown"

        # Without tethered: asyncio.run waits for the default executor at its end, so it
        # does not return while the executor job spins. Run it in a thread to see that.
        import threading

        runner = threading.Thread(target=asyncio.run, args=(main_naive(),), daemon=True)
        runner.start()
        runner.join(1.0)
        assert runner.is_alive(), "asyncio.run returned while its executor job spins"
        naive.spinner.stop()
        runner.join(RETURN_WITHIN)
        assert not runner.is_alive()


EXIT_SCRIPT = textwrap.dedent(
    """
    import asyncio, atexit, sys
    import tethered_example as ext

    spinning, ignoring = ext.Probe(), ext.Probe()

    def report():
        # Registered before the module's hook, so it runs after it (atexit is LIFO).
        spinning.wait_returned(5.0)
        print("spin:", spinning.reason, "ignoring started:", ignoring.running, flush=True)

    atexit.register(report)
    loop = asyncio.new_event_loop()

    async def start():
        # `spin` stops at its token; `ignore_token` never looks at it.
        return ext.spin(spinning), ext.ignore_token(ignoring, 3600.0)

    jobs = loop.run_until_complete(start())
    spinning.wait_started(5.0)
    ignoring.wait_started(5.0)
    print("started", flush=True)
    # Exit with both jobs running and the loop neither running nor closed.
    """
)

NAIVE_EXIT_SCRIPT = textwrap.dedent(
    """
    import asyncio
    import tethered_example as ext

    spinner = ext.NaiveSpinner()
    loop = asyncio.new_event_loop()
    fut = loop.run_in_executor(None, spinner.run)
    while not spinner.running:
        pass
    print("started", flush=True)
    """
)


def run_python(script, timeout):
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=timeout
    )


def test_interpreter_exit_cancels_running_jobs_and_does_not_wait_for_them():
    started = time.monotonic()
    done = run_python(EXIT_SCRIPT, timeout=60)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "started" in done.stdout
    assert "spin: Shutdown ignoring started: True" in done.stdout, done.stdout
    assert done.stderr == ""
    assert took < 30, f"exit took {took:.1f} s"


def test_naive_executor_job_keeps_the_interpreter_from_exiting():
    process = subprocess.Popen(
        [sys.executable, "-c", NAIVE_EXIT_SCRIPT], stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout.readline().strip() == "started"
        # concurrent.futures joins its worker threads at exit: this one never returns.
        try:
            process.wait(timeout=2.0)
            raise AssertionError("the interpreter exited with its executor job spinning")
        except subprocess.TimeoutExpired:
            pass
    finally:
        process.kill()
        process.wait()
        process.stdout.close()


LATE_ATEXIT_SCRIPT = textwrap.dedent(
    """
    import asyncio
    import atexit
    import tethered_example as ext

    async def add(a, b):
        return await ext.add(a, b)

    def late():
        # Registered before the crate's own hook, so it runs after it.
        try:
            print("late:", asyncio.run(add(1, 2)), flush=True)
        except RuntimeError as refused:
            print("late: refused:", refused, flush=True)

    atexit.register(late)
    print("first:", asyncio.run(add(2, 3)), flush=True)  # registers the crate's hook
    """
)


def test_a_job_started_from_a_later_atexit_handler_is_refused_not_hung():
    done = run_python(LATE_ATEXIT_SCRIPT, timeout=30)
    assert done.returncode == 0, done.stderr
    assert "first: 5" in done.stdout, done.stdout
    assert "late: refused: the interpreter is exiting" in done.stdout, done.stdout


class _FakeClockLoop(asyncio.SelectorEventLoop):
    """A loop whose clock can jump ahead, as a fake clock (looptime) makes it."""

    ahead = 0.0

    def time(self):
        return super().time() + self.ahead


def _spin_for_a_while(loop_change):
    """Starts a spinning job, lets `loop_change(loop)` happen, and reports whether the job was
    left running (not cancelled with Shutdown) until the test cancelled it itself."""

    async def scenario():
        loop = asyncio.get_running_loop()
        probe = ext.Probe()
        task = asyncio.create_task(awaiting(ext.spin(probe)))
        await started(probe)
        loop_change(loop)
        for _ in range(5):
            await asyncio.sleep(0.01)
        still_running = probe.running and probe.reason is None
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert await returned(probe)
        return still_running

    loop = _FakeClockLoop()
    try:
        return loop.run_until_complete(scenario())
    finally:
        loop.close()


def test_a_fake_clock_that_jumps_decades_ahead_does_not_shut_the_loops_jobs_down():
    def jump(loop):
        loop.ahead = 2e9  # past the sentinel's due time: the loop runs it

    assert _spin_for_a_while(jump), "the loop's jobs were cancelled with Shutdown"


def test_code_that_cancels_the_loops_timers_does_not_shut_the_loops_jobs_down():
    def sweep(loop):
        for handle in list(loop._scheduled):
            handle.cancel()

    assert _spin_for_a_while(sweep), "the loop's jobs were cancelled with Shutdown"
