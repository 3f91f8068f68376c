"""tethered-mcp for Python: what an MCP server on the official SDK's `MCPServer` (mcp 2.3.0)
needs so that every tool call's native job (a `tethered-pyo3` coroutine) stops however the call
ends, and the server stops as soon as they have. The SDK cancels a call's task on
`notifications/cancelled`, on its client's request timeout (the client sends the cancel) and at
the end of stdin, and a tethered job stops with the task; what is left is here:

- `Calls.run(tool, job)`: awaits a job under the server's own limit (for a client that went
  quiet without cancelling: the job reads `Timeout`, the call answers a tool error), counting
  the calls in flight;
- `run_stdio(server, ...)`: serves stdio until the input ends or SIGTERM / SIGINT, which end
  the input (the SDK installs no signal handler: SIGTERM would kill the process mid-step), with
  stdin read by a daemon thread (the SDK's read cannot be interrupted, and holds the exit), a
  broken pipe of a dead client taken as the end it is, bad lines answered with -32700 / -32600,
  and an exit within `shutdown_deadline` seconds whatever happens.

    calls = tethered_mcp.Calls(limit=3600)

    @server.tool()
    async def spin(seconds: float) -> str:
        return await calls.run("spin", tethered_example.spin_seconds(seconds))

    tethered_mcp.run_stdio(server, calls, running=lambda: tethered_example.stats()["running"])
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError


def stderr_log(name: str) -> Callable[[str], None]:
    """A log of one line on stderr per message, prefixed with `name` (stdout carries the
    protocol)."""

    def log(message: str) -> None:
        print(f"{name}: {message}", file=sys.stderr, flush=True)

    return log


class Calls:
    """The tool calls in flight, and the server's own limit on how long one may run."""

    def __init__(self, limit: float = 3600.0, log: Callable[[str], None] | None = None) -> None:
        self.in_flight = 0
        self.limit = limit
        self.log = log or stderr_log("tethered-mcp")

    async def run(self, tool: str, job: Any) -> Any:
        """Awaits `job`, a coroutine of `tethered_example` (its native job already started).

        Whatever cancels this task (the SDK, for any of the endings above) cancels the job, and
        the CancelledError goes on once the native code returned: when this coroutine is done,
        so is its job. The limit stops a call whose client went quiet without cancelling.
        """
        self.in_flight += 1
        try:
            # An anyio deadline on asyncio: the job's token reads CancelReason::Timeout.
            with anyio.fail_after(self.limit):
                return await job
        except TimeoutError:
            self.log(f"{tool}: ran past the limit of {self.limit:g} s; its native job stopped")
            raise ToolError(
                f"the call ran past the server's limit of {self.limit:g} s and was stopped"
            ) from None
        except anyio.get_cancelled_exc_class():
            self.log(f"{tool}: cancelled; its native job returned")
            raise
        finally:
            self.in_flight -= 1


def invalid_line_answer(line: str) -> JSONRPCError | None:
    """The JSON-RPC error answering `line`, or None if it is a JSON-RPC message."""
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValidationError:
        pass
    try:
        value = json.loads(line)
    except ValueError:
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=PARSE_ERROR, message="Parse error"))
    request_id = value.get("id") if isinstance(value, dict) else None
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        request_id = None
    return JSONRPCError(
        jsonrpc="2.0", id=request_id, error=ErrorData(code=INVALID_REQUEST, message="Invalid Request")
    )


class StdinLines:
    """The server's input, for `stdio_server(stdin=...)`: the lines of the client's pipe.

    Two gaps of mcp 2.3.0's own stdin (`mcp/server/stdio.py`, `stdio_server`), closed here:

    - It reads with `anyio.wrap_file` on an AnyIO worker thread, which a cancel cannot
      interrupt and which is no daemon: after SIGTERM the server could not end its read, nor
      exit, until the client wrote or closed its end. Here a daemon thread reads the pipe, and
      `end()` ends the input as EOF does, which takes the SDK down its own EOF path (the calls
      in flight cancelled and answered, the answers written, `run` returning).
    - A line that is not JSON-RPC is dropped there with a debug log
      (`JSONRPCDispatcher._dispatch` without `on_stream_exception`); here it is answered:
      -32700 Parse error, or -32600 Invalid Request (with its id when it has a usable one).

    As the SDK's does, it takes fd 0 for itself and points fd 0 at /dev/null.
    """

    def __init__(self, on_end: Callable[[], None]) -> None:
        self._on_end = on_end
        self._fd = os.dup(0)  # not inherited by children (PEP 446)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self._send, self._receive = anyio.create_memory_object_stream[bytes](16)
        self._answers: Any = None

    def start(self, write_stream: Any) -> None:
        """Starts reading; the answers to bad lines go to `write_stream`."""
        self._answers = write_stream
        token = anyio.lowlevel.current_token()
        threading.Thread(target=self._read, args=(token,), name="stdin", daemon=True).start()

    def _read(self, token: Any) -> None:
        rest = b""
        try:
            while chunk := os.read(self._fd, 1 << 16):
                *lines, rest = (rest + chunk).split(b"\n")
                for line in lines:
                    anyio.from_thread.run(self._send.send, line, token=token)
            if rest:
                anyio.from_thread.run(self._send.send, rest, token=token)
        except Exception:
            return  # end() closed the input, or the loop is gone
        try:
            anyio.from_thread.run_sync(self._send.close, token=token)
        except Exception:
            pass

    def end(self) -> None:
        """Ends the input now, as EOF does (what was read and not yet taken is dropped)."""
        self._receive.close()

    def __aiter__(self) -> StdinLines:
        return self

    async def __anext__(self) -> str:
        while True:
            try:
                line = (await self._receive.receive()).decode("utf-8", "replace")
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                self._on_end()
                raise StopAsyncIteration from None
            if not line.strip():
                continue
            answer = invalid_line_answer(line)
            if answer is None:
                return line
            await self._answers.send(SessionMessage(answer))


def only(err: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    """`err` is of `kinds`, or a group of nothing else."""
    if isinstance(err, kinds):
        return True
    inner = getattr(err, "exceptions", None)  # an ExceptionGroup, or exceptiongroup's on 3.10
    return bool(inner) and all(only(each, kinds) for each in inner)


class Deadline:
    """Once the server starts stopping, it exits within `seconds`, stopped or not."""

    def __init__(
        self, seconds: float, running: Callable[[], int], log: Callable[[str], None]
    ) -> None:
        self._seconds = seconds
        self._running = running
        self._log = log
        self._timer: threading.Timer | None = None
        self._started = 0.0

    def start(self, why: str) -> None:
        if self._timer is None:
            self._started = time.monotonic()
            self._timer = threading.Timer(self._seconds, self._expire, (why,))
            self._timer.daemon = True
            self._timer.start()

    def elapsed(self) -> float:
        """Seconds since the server started stopping."""
        return time.monotonic() - self._started if self._timer is not None else 0.0

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    def _expire(self, why: str) -> None:
        self._log(f"exit ({why}): the shutdown deadline passed; running={self._running()}")
        os._exit(1)


async def serve(
    server: MCPServer,
    calls: Calls,
    deadline: Deadline,
    running: Callable[[], int],
    log: Callable[[str], None],
) -> None:
    """Serves the client on stdin and stdout until the input ends or a signal comes."""
    why = "stdin closed"
    stdin = StdinLines(on_end=lambda: deadline.start(why))

    async def on_signals() -> None:
        nonlocal why
        # mcp 2.3.0 installs no signal handler: SIGTERM would kill the process at once (its
        # native jobs with it, mid-step, nothing answered, nothing reported), and SIGINT would
        # raise KeyboardInterrupt wherever the loop is. Here either one ends the input.
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                if why == "stdin closed":
                    why = signal.Signals(signum).name
                    log(f"{why}: stopping {calls.in_flight} call(s) in flight")
                    deadline.start(why)
                    stdin.end()

    async with anyio.create_task_group() as signals:
        signals.start_soon(on_signals)
        log(f"ready (pid {os.getpid()})")
        try:
            # MCPServer.run_stdio_async() (mcp 2.3.0) is this, with stdio_server's own stdin.
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
                stdin.start(write_stream)
                lowlevel = server._lowlevel_server  # noqa: SLF001
                await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
        except Exception as err:
            # A client that died leaves a broken pipe: once its stdin ended, the SDK cancels
            # the calls in flight and answers them, and mcp 2.3.0's stdout_writer
            # (mcp/server/stdio.py) lets the write's BrokenPipeError out of stdio_server, after
            # the calls' tasks (and so their native jobs) are done. Not a crash here.
            if not only(err, (BrokenPipeError, ConnectionResetError)):
                raise
            why += ", stdout broken"
        # The SDK has joined every call's task, and each ended only once its native job had
        # returned: nothing of theirs runs now.
        log(
            f"exit ({why}): running={running()}, "
            f"calls in flight={calls.in_flight}, stopped in {deadline.elapsed() * 1000:.0f} ms"
        )
        signals.cancel_scope.cancel()


def run_stdio(
    server: MCPServer,
    calls: Calls,
    *,
    running: Callable[[], int],
    shutdown_deadline: float = 2.0,
    log: Callable[[str], None] | None = None,
) -> None:
    """Serves `server` on stdin and stdout until the input ends (the client closed its session,
    or died) or SIGTERM / SIGINT, and returns once every call's task (and so its native job)
    is done, or exits the process `shutdown_deadline` seconds after the stop began, whatever
    runs. `running()` counts the native jobs still running (for the log)."""
    log = log or calls.log
    deadline = Deadline(shutdown_deadline, running, log)
    anyio.run(serve, server, calls, deadline, running, log)
    deadline.cancel()
