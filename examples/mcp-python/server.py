"""An MCP server over stdio whose tool calls stop their native work when they end early.

The tools run native code of the extension module `tethered_example` (Rust, built with
tethered-pyo3): `spin` spins a core for some seconds, `sandbox` interprets an untrusted script
that may never halt. Each returns a coroutine tied to its native job: when the asyncio task
awaiting it is cancelled, the job's token is cancelled, the native loop sees it at its next
step and returns, and only then does the task's CancelledError go on. So every way a call can
end stops its native job:

| How the call ends | What cancels the tool's task |
| --- | --- |
| the client sends `notifications/cancelled` | the SDK (mcp 2.3.0): `JSONRPCDispatcher._dispatch_notification` cancels the request's scope |
| the client's request timeout | the SDK's client sends `notifications/cancelled` when it gives up (`JSONRPCDispatcher.send_raw_request`); for a client that does not, this server's limit, `--max-call-seconds` |
| the client closes the session, or its process dies | stdin ends: the SDK's `JSONRPCDispatcher.run` cancels the calls in flight at EOF |
| SIGTERM or SIGINT | this server: it ends its input, which takes the SDK down that same EOF path, and exits at most 2 s later |

Run it (after examples/mcp-python/setup.sh):  .venv/bin/python server.py  (an MCP client
spawns it and speaks JSON-RPC on its stdin and stdout; it logs on stderr).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import tethered_example
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

NAME = "tethered-mcp-python"

# How long the server may take to stop after SIGTERM (or once its input ended) before it
# exits regardless.
SHUTDOWN_DEADLINE = 2.0


def log(message: str) -> None:
    """One line on stderr (stdout carries the protocol)."""
    print(f"{NAME}: {message}", file=sys.stderr, flush=True)


class Calls:
    """The tool calls in flight, and the server's own limit on how long one may run."""

    def __init__(self) -> None:
        self.in_flight = 0
        self.limit = 3600.0

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
            log(f"{tool}: ran past the limit of {self.limit:g} s; its native job stopped")
            raise ToolError(
                f"the call ran past the server's limit of {self.limit:g} s and was stopped"
            ) from None
        except anyio.get_cancelled_exc_class():
            log(f"{tool}: cancelled; its native job returned")
            raise
        finally:
            self.in_flight -= 1


calls = Calls()


async def refuse_bad_tool_calls(ctx: Any, call_next: Any) -> Any:
    """Middleware: a `tools/call` of an unknown tool, or with arguments that do not match the
    tool's input schema, is answered with JSON-RPC error -32602 (Invalid params), as the MCP
    spec has it for unknown tools. (mcp 2.3.0's MCPServer would answer both with a tool result
    marked `isError`; a protocol error tells the client its request was wrong, and no native
    work starts.) Middleware sees the raw params, before the SDK validates them."""
    params = ctx.params
    if ctx.method == "tools/call" and isinstance(params, Mapping) and isinstance(params.get("name"), str):
        name = params["name"]
        validator = (await tool_validators()).get(name)
        if validator is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown tool: {name}")
        arguments = params.get("arguments")
        error = jsonschema.exceptions.best_match(
            validator.iter_errors({} if arguments is None else arguments)
        )
        if error is not None:
            raise MCPError(
                code=INVALID_PARAMS, message=f"Invalid arguments for tool {name}: {error.message}"
            )
    return await call_next(ctx)


_validators: dict[str, Any] = {}


async def tool_validators() -> dict[str, Any]:
    """A JSON Schema validator per tool, of the input schema `tools/list` announces."""
    if not _validators:
        for tool in await server.list_tools():
            cls = jsonschema.validators.validator_for(tool.input_schema)
            _validators[tool.name] = cls(tool.input_schema)
    return _validators


server = MCPServer(NAME, log_level="WARNING", middleware=[refuse_bad_tool_calls])


@server.tool(structured_output=False)
async def spin(seconds: float) -> str:
    """Spins one CPU core in native code for `seconds` (0 to 3600) and returns "done".
    Cancelling the call stops the loop at its next step."""
    try:
        job = tethered_example.spin_seconds(seconds)
    except (ValueError, TypeError) as err:
        # Rust validates: finite, from 0 to 3600.
        raise MCPError(code=INVALID_PARAMS, message=f"Invalid arguments for tool spin: {err}") from None
    return await calls.run("spin", job)


@server.tool(structured_output=False)
async def sandbox(code: str) -> str:
    """Runs untrusted `code` in a tiny interpreter on a native thread and returns its report
    (JSON: outcome, reason, steps, registers). One instruction a line: `set R X`, `add R X`,
    `sub R X`, `mul R X` (X a register or an integer), `jnz R label`, `jmp label`, `halt`;
    `label:` marks a line. A script that never halts runs until the call is cancelled."""
    try:
        job = tethered_example.run_script(code)
    except ValueError as err:
        raise ToolError(f"the script does not parse: {err}") from None
    return json.dumps(await calls.run("sandbox", job))


@server.tool(structured_output=False)
async def running(stops: int = 0) -> str:
    """`{"running": N}`: how many native jobs run now. With `stops` > 0, also `"stops"`: the
    last `stops` returns of `spin` loops, oldest first, as [returned_at (CLOCK_MONOTONIC
    seconds), "done" or "stopped", the token's cancel reason or null]."""
    answer: dict[str, Any] = {"running": tethered_example.stats()["running"]}
    if stops > 0:
        answer["stops"] = [list(stop) for stop in tethered_example.spin_returns()[-stops:]]
    return json.dumps(answer)


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
    """Once the server starts stopping, it exits within SHUTDOWN_DEADLINE, stopped or not."""

    def __init__(self) -> None:
        self._timer: threading.Timer | None = None
        self._started = 0.0

    def start(self, why: str) -> None:
        if self._timer is None:
            self._started = time.monotonic()
            self._timer = threading.Timer(SHUTDOWN_DEADLINE, self._expire, (why,))
            self._timer.daemon = True
            self._timer.start()

    def elapsed(self) -> float:
        """Seconds since the server started stopping."""
        return time.monotonic() - self._started if self._timer is not None else 0.0

    def cancel(self) -> None:
        if self._timer is not None:
            self._timer.cancel()

    @staticmethod
    def _expire(why: str) -> None:
        log(f"exit ({why}): the shutdown deadline passed; running={tethered_example.stats()['running']}")
        os._exit(1)


async def serve(deadline: Deadline) -> None:
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
            f"exit ({why}): running={tethered_example.stats()['running']}, "
            f"calls in flight={calls.in_flight}, stopped in {deadline.elapsed() * 1000:.0f} ms"
        )
        signals.cancel_scope.cancel()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--max-call-seconds",
        type=float,
        default=3600.0,
        help="stop a tool call (and its native job) that runs longer (default: 3600)",
    )
    calls.limit = parser.parse_args().max_call_seconds
    deadline = Deadline()
    anyio.run(serve, deadline)
    deadline.cancel()


if __name__ == "__main__":
    main()
