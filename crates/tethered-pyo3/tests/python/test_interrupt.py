"""Ctrl-C stops a synchronous native call (`run_native`): a child Python runs the call in its
main thread and this test sends it SIGINT, as a terminal does."""

import json
import signal
import statistics
import subprocess
import sys
import textwrap
import time

import pytest
import tethered_example as ext

# Runs `rounds` synchronous calls in its main thread; a helper thread says when each one's
# closure runs. Prints one line per event, flushed, for the test to follow.
CHILD = textwrap.dedent(
    """
    import json, sys, threading
    import tethered_example as ext

    kind, rounds = sys.argv[1], int(sys.argv[2])

    def say(*words):
        print(*words, flush=True)

    for round in range(rounds):
        probe = ext.Probe()

        def announce(probe=probe, round=round):
            if probe.wait_started(10):
                say("started", round)

        threading.Thread(target=announce, daemon=True).start()
        try:
            if kind == "spin":
                ext.spin_sync(probe)
            elif kind == "ignore":
                ext.ignore_token_sync(probe, 1.5, 0.2)
            elif kind == "ignore-long":
                ext.ignore_token_sync(probe, 3.0, 60.0)
            elif kind == "naive":
                spinner = ext.NaiveSpinner()
                probe = None
                threading.Thread(target=lambda: say("started", round), daemon=True).start()
                spinner.run()
            say("returned", round)
        except KeyboardInterrupt:
            stats = ext.stats()
            say("interrupted", json.dumps([
                "returned" if probe is not None and probe.returned else "running",
                [probe.reason, probe.cause] if probe is not None else None,
                stats["running"], stats["detached"],
            ]))
    if kind.startswith("ignore"):
        # The abandoned closure returns by itself, and is counted out.
        import time
        deadline = time.monotonic() + 10
        while ext.stats()["running"] and time.monotonic() < deadline:
            time.sleep(0.01)
        stats = ext.stats()
        say("settled", stats["running"], stats["detached"])
    """
)


class Child:
    def __init__(self, kind, rounds=1):
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, kind, str(rounds)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def expect(self, word):
        line = self.process.stdout.readline().split(maxsplit=1)
        assert line and line[0] == word, (word, line, self.stderr())
        return line[1].split() if len(line) > 1 else []

    def interrupted(self):
        return json.loads(self.expect_raw("interrupted"))

    def expect_raw(self, word):
        line = self.process.stdout.readline()
        assert line.startswith(word + " "), (word, line, self.stderr())
        return line[len(word) + 1 :]

    def interrupt(self):
        self.process.send_signal(signal.SIGINT)
        return time.monotonic()

    def stderr(self):
        if self.process.poll() is None:
            return "(still running)"
        return self.process.stderr.read()

    def finish(self):
        try:
            assert self.process.wait(10) == 0, self.stderr()
        finally:
            self.kill()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self.process.stdout.close()
        self.process.stderr.close()


def test_ctrl_c_stops_a_spinning_synchronous_call_and_raises_keyboard_interrupt():
    rounds = 20
    child = Child("spin", rounds)
    times = []
    try:
        for round in range(rounds):
            child.expect("started")
            # Ctrl-C comes at any moment of the wait, not just after the call began.
            time.sleep((round * 7 % 20) / 1000)
            sent = child.interrupt()
            state, reason, running, _ = child.interrupted()
            times.append(time.monotonic() - sent)
            # KeyboardInterrupt is raised only once the closure has returned.
            assert state == "returned"
            assert reason == ["Dropped", "interrupted: KeyboardInterrupt"] and running == 0
        child.finish()
    finally:
        child.kill()
    median, worst = statistics.median(times), max(times)
    print(f"SIGINT to KeyboardInterrupt, closure returned: median {median * 1000:.1f} ms, "
          f"worst {worst * 1000:.1f} ms ({rounds} runs)")
    # The handlers run every 20 ms: generous for a loaded machine.
    assert worst < 2.0


def test_a_closure_that_ignores_its_token_is_abandoned_after_the_grace():
    child = Child("ignore")
    try:
        child.expect("started")
        sent = child.interrupt()
        state, _, running, detached = child.interrupted()
        took = time.monotonic() - sent
        # Raised after the 0.2 s grace, with the closure still sleeping and counted detached.
        assert (state, running, detached) == ("running", 1, 1)
        assert 0.15 < took < 1.4, took
        running, detached = child.expect("settled")
        assert (running, detached) == ("0", "0")
        child.finish()
    finally:
        child.kill()


def test_a_second_ctrl_c_raises_at_once():
    child = Child("ignore-long")
    try:
        child.expect("started")
        child.interrupt()
        time.sleep(0.3)
        assert child.process.poll() is None, "still waiting for the closure, within the grace"
        sent = child.interrupt()
        state, _, _, detached = child.interrupted()
        assert time.monotonic() - sent < 1.0
        assert state == "running" and detached == 1
        child.expect("settled")
        child.finish()
    finally:
        child.kill()


def test_a_naive_synchronous_call_ignores_ctrl_c_until_it_returns():
    child = Child("naive")
    try:
        child.expect("started")
        time.sleep(0.1)
        child.interrupt()
        time.sleep(1.0)
        # No KeyboardInterrupt, no return: the native loop spins on after Ctrl-C.
        assert child.process.poll() is None
    finally:
        child.kill()  # the clean-up the naive call needs: kill the process


def test_a_timeout_cancels_the_synchronous_call_and_raises_timeout_error():
    probe = ext.Probe()
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="reached its deadline"):
        ext.spin_sync(probe, timeout=0.1)
    assert probe.returned and probe.reason == "Timeout"
    assert time.monotonic() - started < 5.0


# A process whose SIGTERM handler exits (as a Ray worker's, or a server's, does), running a
# synchronous call in its main thread.
SIGTERM_CHILD = textwrap.dedent(
    """
    import json, signal, sys, threading
    import tethered_example as ext

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))
    probe = ext.Probe()

    def announce():
        if probe.wait_started(10):
            print("started", flush=True)

    threading.Thread(target=announce, daemon=True).start()
    try:
        ext.spin_sync(probe)
    except SystemExit:
        print("exited", json.dumps([probe.returned, probe.reason, probe.cause]), flush=True)
        raise
    """
)


def test_a_sigterm_handler_that_exits_stops_the_call_as_a_shutdown():
    process = subprocess.Popen(
        [sys.executable, "-c", SIGTERM_CHILD],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout.readline().strip() == "started"
        process.send_signal(signal.SIGTERM)
        line = process.stdout.readline()
        assert line.startswith("exited "), (line, process.stderr.read())
        # The process is going away: the reason says so, not that a caller gave up.
        assert json.loads(line[len("exited ") :]) == [True, "Shutdown", "interrupted: SystemExit"]
        assert process.wait(10) == 3
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
