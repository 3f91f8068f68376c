"""server.py against the official MCP SDK's own client (`mcp.ClientSession` over
`mcp.client.stdio.stdio_client`, which spawns `.venv/bin/python server.py`): every way a tool
call can end stops its native job, 200 calls with half of them cancelled leave nothing running,
bad input is answered with a protocol error while other calls go on, and the time from a
client's cancel to the native loop's return is measured.

How a test sees the native side: the `running` tool answers `{"running": N}` (the extension's
count of native jobs running), and with `stops` the last returns of `spin` loops, stamped on
CLOCK_MONOTONIC, which `time.monotonic()` here reads too. Where the client's end ends the
session, the server's stderr (a file: stdio_client's `errlog`) tells what it stopped and how
many jobs ran when it exited.

Run: examples/mcp-python/setup.sh && examples/mcp-python/.venv/bin/python -m pytest -q examples/mcp-python
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import signal
import statistics
import subprocess
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    REQUEST_TIMEOUT,
    JSONRPCNotification,
    JSONRPCRequest,
    jsonrpc_message_adapter,
)

HERE = Path(__file__).resolve().parent
PYTHON = HERE / ".venv" / "bin" / "python"
SERVER = HERE / "server.py"

# Far above what a step needs (a native job stops within microseconds of its token's cancel);
# a step that takes this long has failed.
BOUND = 5.0

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class ServerLog:
    """The server's stderr, written to a file (stdio_client's `errlog` needs a real one)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.file = path.open("w")

    def text(self) -> str:
        return self.path.read_text()

    async def wait_for(self, pattern: str, bound: float = BOUND) -> re.Match[str]:
        deadline = time.monotonic() + bound
        while (found := re.search(pattern, self.text())) is None:
            assert time.monotonic() < deadline, f"no {pattern!r} on the server's stderr:\n{self.text()}"
            await anyio.sleep(0.01)
        return found

    async def pid(self) -> int:
        return int((await self.wait_for(r"ready \(pid (\d+)\)"))[1])


@pytest.fixture
def server_log(tmp_path: Path):
    log = ServerLog(tmp_path / "server.stderr")
    yield log
    log.file.close()


class Tap:
    """The client's write stream to the server, recorded. With `drop_cancels`, the
    `notifications/cancelled` the client sends never reach the server: a client that gives up
    on a call without saying so (as mcp 1.x's did on a timeout)."""

    def __init__(self, drop_cancels: bool = False) -> None:
        self.sent: list[Any] = []
        self.drop_cancels = drop_cancels
        self.inner: Any = None

    def wrap(self, inner: Any) -> Tap:
        self.inner = inner
        return self

    async def send(self, item: SessionMessage, /) -> None:
        self.sent.append(item.message)
        if self.drop_cancels and self._is_cancel(item.message):
            return
        await self.inner.send(item)

    async def aclose(self) -> None:
        await self.inner.aclose()

    def close(self) -> None:
        self.inner.close()

    async def __aenter__(self) -> Tap:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    @staticmethod
    def _is_cancel(message: Any) -> bool:
        return isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled"

    def calls(self, tool: str) -> list[Any]:
        """The ids of the `tools/call` requests of `tool` sent so far."""
        return [
            message.id
            for message in self.sent
            if isinstance(message, JSONRPCRequest)
            and message.method == "tools/call"
            and (message.params or {}).get("name") == tool
        ]

    def cancels(self) -> list[tuple[Any, str]]:
        """The (requestId, reason) of every `notifications/cancelled` sent so far."""
        return [
            (message.params["requestId"], message.params.get("reason", ""))
            for message in self.sent
            if self._is_cancel(message)
        ]


@asynccontextmanager
async def connect(*args: str, errlog: ServerLog, tap: Tap | None = None):
    """A session with a new server (`server.py *args`), initialized."""
    params = StdioServerParameters(command=str(PYTHON), args=[str(SERVER), *args], cwd=str(HERE))
    async with stdio_client(params, errlog=errlog.file) as (read, write):
        async with ClientSession(read, tap.wrap(write) if tap else write) as session:
            await session.initialize()
            yield session


async def running(session: ClientSession, stops: int = 0) -> dict[str, Any]:
    """The `running` tool's answer: {"running": N}, and the last `stops` spin returns."""
    result = await session.call_tool("running", {"stops": stops} if stops else {})
    assert not result.is_error, result
    return json.loads(result.content[0].text)


async def until_running(session: ClientSession, n: int, bound: float = BOUND) -> None:
    """Polls `running` until it answers `{"running": n}`."""
    deadline = time.monotonic() + bound
    while (now := (await running(session))["running"]) != n:
        assert time.monotonic() < deadline, f"running stayed {now}, not {n}, for {bound} s"
        await anyio.sleep(0.005)


class Call:
    """A tool call in a task of its own, which the test may cancel."""

    def __init__(self, session: ClientSession, tool: str, arguments: dict[str, Any], **options: Any):
        self.session, self.tool, self.arguments, self.options = session, tool, arguments, options
        self.scope = anyio.CancelScope()
        self.done = anyio.Event()
        self.result: Any = None
        self.error: MCPError | None = None
        self.cancelled = False

    async def run(self) -> None:
        with self.scope:
            try:
                self.result = await self.session.call_tool(self.tool, self.arguments, **self.options)
            except MCPError as err:
                self.error = err
        self.cancelled = self.scope.cancelled_caught
        self.done.set()

    def text(self) -> str:
        assert self.result is not None and not self.result.is_error, (self.result, self.error)
        return self.result.content[0].text


def process_gone(pid: int) -> bool:
    """The process has exited (a zombie whose parent has not reaped it counts)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


async def until_gone(pid: int, bound: float) -> None:
    deadline = time.monotonic() + bound
    while not process_gone(pid):
        assert time.monotonic() < deadline, f"the server (pid {pid}) still runs after {bound} s"
        await anyio.sleep(0.005)


async def test_a_cancelled_call_stops_its_job(server_log: ServerLog) -> None:
    tap = Tap()
    async with connect(errlog=server_log, tap=tap) as session, anyio.create_task_group() as tg:
        call = Call(session, "spin", {"seconds": 60})
        tg.start_soon(call.run)
        await until_running(session, 1)

        call.scope.cancel()  # the client sends notifications/cancelled for it
        await call.done.wait()
        await until_running(session, 0)

        assert call.cancelled
        [request_id] = tap.calls("spin")
        assert tap.cancels() == [(request_id, "caller cancelled")]
        [stop] = (await running(session, stops=1))["stops"]
        assert stop[1:] == ["stopped", "Dropped"]
    assert "spin: cancelled; its native job returned" in server_log.text()


async def test_a_timed_out_call_stops_its_job(server_log: ServerLog) -> None:
    tap = Tap()
    async with connect(errlog=server_log, tap=tap) as session, anyio.create_task_group() as tg:
        call = Call(session, "spin", {"seconds": 60}, read_timeout_seconds=1.0)
        tg.start_soon(call.run)
        await until_running(session, 1)

        await call.done.wait()  # the client's timeout: it sends notifications/cancelled
        assert call.error is not None and call.error.error.code == REQUEST_TIMEOUT
        await until_running(session, 0)

        [request_id] = tap.calls("spin")
        assert tap.cancels() == [(request_id, "timed out after 1.0s")]
        [stop] = (await running(session, stops=1))["stops"]
        assert stop[1:] == ["stopped", "Dropped"]


async def test_a_client_that_gives_up_without_cancelling_is_stopped_by_the_servers_limit(
    server_log: ServerLog,
) -> None:
    tap = Tap(drop_cancels=True)
    async with (
        connect("--max-call-seconds", "2", errlog=server_log, tap=tap) as session,
        anyio.create_task_group() as tg,
    ):
        call = Call(session, "spin", {"seconds": 60}, read_timeout_seconds=0.5)
        tg.start_soon(call.run)
        await until_running(session, 1)
        await call.done.wait()
        assert call.error is not None and call.error.error.code == REQUEST_TIMEOUT
        assert len(tap.cancels()) == 1  # sent by the client, dropped on the way

        # The server never heard: the job runs on, until the server's own limit.
        assert (await running(session))["running"] == 1
        await until_running(session, 0)
        [stop] = (await running(session, stops=1))["stops"]
        assert stop[1:] == ["stopped", "Timeout"]
    assert "spin: ran past the limit of 2 s; its native job stopped" in server_log.text()


async def test_closing_the_session_stops_the_job(server_log: ServerLog) -> None:
    tap = Tap()
    async with anyio.create_task_group() as tg:
        async with connect(errlog=server_log, tap=tap) as session:
            call = Call(session, "spin", {"seconds": 60})
            tg.start_soon(call.run)
            await until_running(session, 1)
            closing = time.monotonic()
        # The session is closed, then the transport: the server's stdin closes, and
        # stdio_client waits for the server to exit (2 s, then SIGTERM).
        closed_in = time.monotonic() - closing
        await call.done.wait()

    assert call.error is not None and call.error.error.code == CONNECTION_CLOSED
    assert tap.cancels() == []  # no notifications/cancelled: the end of stdin stopped it
    log = server_log.text()
    assert "spin: cancelled; its native job returned" in log
    assert re.search(r"exit \(stdin closed\): running=0, calls in flight=0", log), log
    assert closed_in < 2.0, f"the server took {closed_in:.2f} s to exit: stdio_client sent SIGTERM"


KILLED_CLIENT = """
import json, sys
import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

async def main():
    params = StdioServerParameters(command=sys.executable, args=[sys.argv[1]])
    async with stdio_client(params) as (read, write):  # the server's stderr is ours
        async with ClientSession(read, write) as session:
            await session.initialize()
            async with anyio.create_task_group() as tg:
                tg.start_soon(session.call_tool, "spin", {"seconds": 60})
                tg.start_soon(session.call_tool, "sandbox", {"code": "top:\\nadd x 1\\njmp top"})
                while True:
                    answer = await session.call_tool("running", {})
                    if json.loads(answer.content[0].text)["running"] == 2:
                        break
                    await anyio.sleep(0.005)
                print("running 2", flush=True)
                await anyio.sleep(3600)

anyio.run(main)
"""


async def test_a_killed_client_stops_the_jobs(server_log: ServerLog, tmp_path: Path) -> None:
    script = tmp_path / "client.py"
    script.write_text(KILLED_CLIENT)
    client = subprocess.Popen(
        [str(PYTHON), str(script), str(SERVER)], stdout=subprocess.PIPE, stderr=server_log.file
    )
    try:
        with anyio.fail_after(BOUND * 2):
            line = await anyio.to_thread.run_sync(client.stdout.readline)
        assert line == b"running 2\n", server_log.text()
        pid = await server_log.pid()
        client.kill()  # SIGKILL: no notification, no closing of anything but by the kernel
        client.wait()
    finally:
        client.kill()
        client.wait()
        client.stdout.close()

    # The server reads EOF on stdin (and EPIPE on stdout), stops both jobs, reports, exits.
    exit_line = await server_log.wait_for(r"exit \(stdin closed.*\): running=(\d+), calls in flight=(\d+)")
    assert exit_line.groups() == ("0", "0"), server_log.text()
    log = server_log.text()
    assert "spin: cancelled; its native job returned" in log
    assert "sandbox: cancelled; its native job returned" in log
    await until_gone(pid, BOUND)


async def test_sigterm_stops_the_jobs_and_the_server(server_log: ServerLog) -> None:
    async with connect(errlog=server_log) as session, anyio.create_task_group() as tg:
        calls = [
            Call(session, "spin", {"seconds": 60}),
            Call(session, "sandbox", {"code": "top:\nadd x 1\njmp top"}),
        ]
        for call in calls:
            tg.start_soon(call.run)
        await until_running(session, 2)
        pid = await server_log.pid()

        os.kill(pid, signal.SIGTERM)
        await until_gone(pid, 2.0)  # the server's shutdown deadline
        for call in calls:
            await call.done.wait()
            assert call.error is not None and call.error.error.code == CONNECTION_CLOSED

    log = server_log.text()
    assert "SIGTERM: stopping 2 call(s) in flight" in log
    assert "spin: cancelled; its native job returned" in log
    assert "sandbox: cancelled; its native job returned" in log
    assert re.search(r"exit \(SIGTERM\): running=0, calls in flight=0", log), log


async def test_a_cancelled_sandbox_stops_the_interpreter(server_log: ServerLog) -> None:
    async with connect(errlog=server_log) as session, anyio.create_task_group() as tg:
        result = await session.call_tool("sandbox", {"code": "set x 5\nloop:\nsub x 1\njnz x loop\nhalt"})
        assert json.loads(result.content[0].text) == {
            "outcome": "halted",
            "reason": None,
            "steps": 12,
            "registers": {"x": 0},
        }
        unparsable = await session.call_tool("sandbox", {"code": "fly away"})
        assert unparsable.is_error and "does not parse" in unparsable.content[0].text

        endless = Call(session, "sandbox", {"code": "top:\nadd x 1\njmp top"})
        tg.start_soon(endless.run)
        await until_running(session, 1)
        endless.scope.cancel()
        await endless.done.wait()
        await until_running(session, 0)
        assert endless.cancelled
    assert "sandbox: cancelled; its native job returned" in server_log.text()


async def test_two_hundred_calls_with_half_cancelled(server_log: ServerLog) -> None:
    tap = Tap()
    async with connect(errlog=server_log, tap=tap) as session, anyio.create_task_group() as tg:
        # 100 calls whose jobs run until cancelled, all running; then 100 more that end by
        # themselves, and while those are in flight, the first 100 cancelled.
        to_cancel = [Call(session, "spin", {"seconds": 600}) for _ in range(100)]
        to_finish = [Call(session, "spin", {"seconds": 1.0}) for _ in range(100)]
        for call in to_cancel:
            tg.start_soon(call.run)
        await until_running(session, 100)
        for call in to_finish:
            tg.start_soon(call.run)
        for call in to_cancel:
            call.scope.cancel()
        for call in to_cancel + to_finish:
            with anyio.fail_after(BOUND):
                await call.done.wait()
        await until_running(session, 0)

        assert all(call.cancelled for call in to_cancel)
        assert [call.text() for call in to_finish] == ["done"] * 100
        assert len(tap.cancels()) == 100
        stops = (await running(session, stops=200))["stops"]
        assert sorted((outcome, reason) for _, outcome, reason in stops) == sorted(
            [("stopped", "Dropped")] * 100 + [("done", None)] * 100
        )
        # The server still answers.
        assert (await session.call_tool("spin", {"seconds": 0})).content[0].text == "done"
        assert await running(session) == {"running": 0}


BAD_CALLS = [
    ("no_such_tool", {}),
    ("spin", {"seconds": "ten"}),  # not a number
    ("spin", {"seconds": None}),
    ("spin", {"seconds": [1]}),
    ("spin", {"seconds": True}),
    ("spin", {"seconds": -1}),  # negative
    ("spin", {"seconds": 1e12}),  # huge
    ("spin", {"seconds": 3600.5}),
    ("spin", {}),  # missing
    ("sandbox", {"code": 42}),
    ("sandbox", {}),
    ("running", {"stops": "all"}),
]


async def test_bad_calls_are_answered_with_a_protocol_error_while_other_calls_go_on(
    server_log: ServerLog,
) -> None:
    async with connect(errlog=server_log) as session, anyio.create_task_group() as tg:
        ongoing = Call(session, "spin", {"seconds": 1.5})
        tg.start_soon(ongoing.run)
        await until_running(session, 1)
        for tool, arguments in BAD_CALLS:
            with pytest.raises(MCPError) as refused:
                await session.call_tool(tool, arguments)
            assert refused.value.error.code == INVALID_PARAMS, (tool, arguments, refused.value.error)
            assert (await running(session))["running"] == 1, (tool, arguments)  # nothing started
        await ongoing.done.wait()
        assert ongoing.text() == "done"
        await until_running(session, 0)


@asynccontextmanager
async def raw_connection(errlog: ServerLog):
    """A new server, spawned by hand, with the SDK's ClientSession on its pipes and a way to
    write raw lines beside it. Yields (session, write_raw, answers): `answers` is every line
    the server wrote, parsed, including those the session has no use for."""
    process = await anyio.open_process([str(PYTHON), str(SERVER)], stderr=errlog.file, cwd=str(HERE))
    to_session, session_reads = anyio.create_memory_object_stream[Any](100)
    session_writes, from_session = anyio.create_memory_object_stream[Any](100)
    answers: list[dict[str, Any]] = []
    lock = anyio.Lock()

    async def write_raw(data: bytes) -> None:
        async with lock:  # whole lines, never interleaved with the session's
            await process.stdin.send(data)

    async def read() -> None:
        rest = b""
        async with to_session:
            async for chunk in process.stdout:
                *lines, rest = (rest + chunk).split(b"\n")
                for line in lines:
                    answers.append(json.loads(line))
                    await to_session.send(SessionMessage(jsonrpc_message_adapter.validate_json(line)))

    async def write() -> None:
        async for item in from_session:
            await write_raw(item.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n")

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            tg.start_soon(write)
            async with ClientSession(session_reads, session_writes) as session:
                await session.initialize()
                yield session, write_raw, answers
            await process.stdin.aclose()
            with anyio.fail_after(BOUND):
                await process.wait()
            tg.cancel_scope.cancel()
    finally:
        if process.returncode is None:
            process.kill()
        await process.aclose()


RAW_LINES = [
    # (line, the id of the answer, its error code)
    (b"{this is not json", None, PARSE_ERROR),
    (b"\xff\xfe\x00 not even text", None, PARSE_ERROR),
    (b"[1, 2, 3]", None, INVALID_REQUEST),  # a batch, which MCP does not have
    (b'{"jsonrpc": "2.0", "id": 901, "method": 7}', 901, INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": 902, "method": "tools/call", "params": "spin"}', 902, INVALID_REQUEST),
    (b'{"jsonrpc": "2.0", "id": 903, "method": "no/such/method"}', 903, METHOD_NOT_FOUND),
    (
        b'{"jsonrpc": "2.0", "id": 904, "method": "tools/call",'
        b' "params": {"name": "spin", "arguments": {"seconds": 1e999}}}',  # infinite
        904,
        INVALID_PARAMS,
    ),
    (b'{"jsonrpc": "2.0", "id": 905, "method": "tools/call", "params": {"name": "spin"}}', 905, INVALID_PARAMS),
    (b'{"jsonrpc": "2.0", "id": 906, "method": "tools/call", "params": {}}', 906, INVALID_PARAMS),
]


async def test_invalid_json_rpc_is_answered_with_a_protocol_error_while_other_calls_go_on(
    server_log: ServerLog,
) -> None:
    async with raw_connection(server_log) as (session, write_raw, answers), anyio.create_task_group() as tg:
        ongoing = Call(session, "spin", {"seconds": 1.5})
        tg.start_soon(ongoing.run)
        await until_running(session, 1)
        for line, _, _ in RAW_LINES:
            await write_raw(line + b"\n")
        await write_raw(b"\n")  # a blank line: nothing to answer

        deadline = time.monotonic() + BOUND
        errors = [(answer["id"], answer["error"]["code"]) for answer in answers if "error" in answer]
        while len(errors) < len(RAW_LINES):
            assert time.monotonic() < deadline, f"answered {errors} of {RAW_LINES}"
            await anyio.sleep(0.01)
            errors = [(answer["id"], answer["error"]["code"]) for answer in answers if "error" in answer]
        assert sorted(errors, key=repr) == sorted([(id_, code) for _, id_, code in RAW_LINES], key=repr)

        await ongoing.done.wait()
        assert ongoing.text() == "done"
        assert (await session.call_tool("spin", {"seconds": 0})).content[0].text == "done"
        await until_running(session, 0)


async def test_cancel_to_return_is_measured(server_log: ServerLog, capsys: pytest.CaptureFixture[str]) -> None:
    times = []
    async with connect(errlog=server_log) as session, anyio.create_task_group() as tg:
        for _ in range(50):
            call = Call(session, "spin", {"seconds": 60})
            tg.start_soon(call.run)
            await until_running(session, 1)
            cancelled_at = time.monotonic()
            call.scope.cancel()
            await until_running(session, 0)
            [(returned_at, outcome, reason)] = (await running(session, stops=1))["stops"]
            assert (outcome, reason) == ("stopped", "Dropped")
            times.append((returned_at - cancelled_at) * 1000)
            await call.done.wait()
    median, worst = statistics.median(times), max(times)
    with capsys.disabled():
        print(
            f"\nmcp-python cancel-to-return: median {median:.3f} ms, worst {worst:.3f} ms "
            f"({len(times)} calls; from the client's cancel to the native loop's return)"
        )
    results = Path(__file__).resolve().parents[2] / "target" / "tethered-bench"
    results.mkdir(parents=True, exist_ok=True)
    entry = {
        "language": "Python",
        "sdk": f"mcp {importlib.metadata.version('mcp')}",
        "transport": "stdio",
        "build": "debug (maturin develop)",
        "calls": len(times),
        "median_ms": median,
        "worst_ms": worst,
    }
    (results / "mcp-python.json").write_text(json.dumps([entry]) + "\n")
    assert median < 100, times
