"""Typing stubs of `tethered_example`, the example extension module of tethered-pyo3.

Every function that runs a native job returns the coroutine tethered-pyo3 makes
(`spawn_native` and `spawn_native_with`): await it, or hand it to `asyncio.create_task`,
`TaskGroup.create_task`, `asyncio.gather`, `asyncio.wait_for` or anyio's `start_soon`. The job
starts at the call; cancelling the task that awaits it cancels the job.
"""

import asyncio
from collections.abc import Coroutine
from typing import Any, Literal, TypedDict, TypeVar

_T = TypeVar("_T")

class Report(TypedDict):
    """What a run of a sandbox script produced."""

    outcome: Literal["halted", "cancelled", "out of steps"]
    reason: str | None
    steps: int
    registers: dict[str, int]

class Stats(TypedDict):
    running: int
    queued: int
    detached: int
    spawned: int
    cancelled: int
    panicked: int

class ByReason(TypedDict):
    """A count per cancel reason."""

    requested: int
    dropped: int
    timeout: int
    shutdown: int
    failed: int

class CancelToReturn(TypedDict):
    """The time from a cancel reaching running work to its return, for one job name."""

    count: int
    sum: float
    max: float
    p50: float | None
    p99: float | None
    buckets: list[tuple[float, int]]

class CancelStats(TypedDict):
    """What cancels did to the module's running native work (`cancel_stats()`)."""

    reached_running: ByReason
    returned_after_cancel: ByReason
    abandoned: ByReason
    stubborn: int
    cancel_to_return: dict[str, CancelToReturn]

class StubbornJob(TypedDict):
    """A job cancelled and still running past the threshold (`stubborn_jobs()`)."""

    id: int
    name: str | None
    reason: Literal["requested", "dropped", "timeout", "shutdown", "failed"]
    cause: str | None
    since_cancel: float

def cancel_stats() -> CancelStats: ...
def stubborn_jobs() -> list[StubbornJob]: ...
def set_stubborn_after(seconds: float) -> None: ...
def named(name: str, seconds: float, honour: bool) -> Coroutine[Any, Any, None]:
    """`seconds` of work in a job named `name`; stops at a cancel only if `honour`."""

def spin_recorded(name: str, seconds: float, record: str) -> int:
    """A synchronous native loop named `name` (its thread too) that runs until cancelled (Ctrl-C,
    `ray.cancel`) or `seconds` passed; writes `"running"` to the file `record` as it starts, and
    what stopped it (`"Dropped|ray.cancel"`, `"returned"`) as it returns."""

def spin_recorded_async(name: str, seconds: float, record: str) -> Coroutine[Any, Any, int]:
    """`spin_recorded` as a coroutine: cancelling the awaiting task cancels it."""

def naive_sleep(seconds: float) -> None:
    """A plain pyo3 call without tethered: releases the GIL and sleeps; nothing stops it."""

def run_script(source: str, max_steps: int | None = None) -> Coroutine[Any, Any, Report]:
    """Runs `source` in the sandbox interpreter on a native thread; `ValueError` at the call
    for a script that does not parse."""

def stats() -> Stats: ...
def add(a: int, b: int) -> Coroutine[Any, Any, int]: ...
def add_tokio(a: int, b: int) -> asyncio.Future[int]:
    """The benchmark's peer of `add`: pyo3-async-runtimes over tokio's `spawn_blocking`. A
    cancelled await does not stop the native closure."""

def echo(value: _T) -> Coroutine[Any, Any, _T]: ...
def fail(message: str) -> Coroutine[Any, Any, None]: ...
def stop_iteration(message: str) -> Coroutine[Any, Any, None]: ...
def panic(message: str) -> Coroutine[Any, Any, None]: ...
def spin(probe: Probe) -> Coroutine[Any, Any, int]: ...
def spin_lingering(probe: Probe, grace: float | None = None) -> Coroutine[Any, Any, int]:
    """`spin`, with a clean-up after the cancel that lasts until `probe.release()`; a cancelled
    awaiter waits for it, or `grace` seconds at most."""

def spin_for(probe: Probe, timeout: float) -> Coroutine[Any, Any, int]:
    """`spin` with a deadline of its own: `TimeoutError` after `timeout` seconds."""

def idle(probe: Probe) -> Coroutine[Any, Any, None]: ...
def sleep(seconds: float, value: _T) -> Coroutine[Any, Any, _T]: ...
def ignore_token(probe: Probe, seconds: float) -> Coroutine[Any, Any, None]: ...
def thread_name() -> Coroutine[Any, Any, str | None]: ...
def pool_thread_name() -> Coroutine[Any, Any, str | None]: ...
def spin_child_of(parent: Parent, probe: Probe) -> Coroutine[Any, Any, int]: ...
def queued_child_of(parent: Parent) -> Coroutine[Any, Any, int]: ...
def cancel_on_a_rust_thread_holding_a_lock(parent: Parent) -> CancelHolding: ...
def spin_in_scope(probe: Probe) -> Coroutine[Any, Any, int]: ...
def cancel_scope() -> None: ...
def spin_sync(probe: Probe, timeout: float | None = None, grace: float | None = None) -> int:
    """A synchronous call that Ctrl-C (KeyboardInterrupt) or the timeout stops."""

def ignore_token_sync(probe: Probe, seconds: float, grace: float) -> None: ...
def spin_seconds(seconds: float) -> Coroutine[Any, Any, Literal["done", "stopped"]]:
    """A busy loop on a native thread that looks at its token every step: `"done"` once
    `seconds` have passed, `"stopped"` if its token was cancelled (the awaiting coroutine then
    raises anyway). `ValueError` at the call unless `seconds` is finite and from 0 to 3600."""

def spin_returns() -> list[tuple[float, Literal["done", "stopped"], str | None]]:
    """The last 256 returns of `spin_seconds` loops, oldest first: `(returned_at, outcome,
    reason)`, `returned_at` in `time.monotonic()` seconds, `reason` the token's (`"Dropped"`,
    `"Timeout"`, ...) or `None`."""

class Probe:
    """What a native job of the suite reports: whether it runs, returned, and why it stopped."""

    def __init__(self) -> None: ...
    @property
    def steps(self) -> int: ...
    @property
    def running(self) -> bool: ...
    @property
    def returned(self) -> bool: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def cause(self) -> str | None: ...
    @property
    def returned_at(self) -> float | None: ...
    def release(self) -> None: ...
    def wait_started(self, timeout: float) -> bool: ...
    def wait_returned(self, timeout: float) -> bool: ...

class NaiveSpinner:
    """A spin loop with no token, as native work runs behind `run_in_executor`."""

    def __init__(self) -> None: ...
    def run(self) -> int: ...
    def stop(self) -> None: ...
    @property
    def running(self) -> bool: ...
    @property
    def steps(self) -> int: ...

class Parent:
    """A parent token the suite cancels from Python."""

    def __init__(self) -> None: ...
    def cancel(self, message: str) -> None: ...

class CancelHolding:
    def cancel_then_take_the_lock(self, timeout: float) -> bool: ...
