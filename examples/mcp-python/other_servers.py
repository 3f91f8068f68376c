"""The official Python SDK's client against the other two example servers, over stdio and
streamable HTTP: the Rust one (`examples/mcp_server.rs`, on tethered-rmcp) and the Node one
(`examples/mcp-node/server.mjs`, on tethered-napi). Every way a call can end stops its native
job, 200 calls with half of them cancelled leave nothing running, bad input is answered with an
error while another call goes on.

Each server answers `running` with `{"running": N}`, its native jobs running now: how a test
sees the native side.

The servers come from the environment, as `cargo test` (`tests/mcp_examples.rs`, which runs
this file) sets it: `TETHERED_MCP_RUST_SERVER` (the compiled example) and
`TETHERED_MCP_NODE_SERVER` (`server.mjs`, with its `node_modules` installed). Run by hand, a test
whose server is not named is skipped, saying so.

Run: examples/mcp-python/.venv/bin/python -m pytest -q examples/mcp-python/other_servers.py
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import REQUEST_TIMEOUT

# Far above what a step needs; a step that takes this long has failed.
BOUND = 5.0

SERVERS = {
    "rust": os.environ.get("TETHERED_MCP_RUST_SERVER"),
    "node": os.environ.get("TETHERED_MCP_NODE_SERVER"),
}

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def command(server: str) -> list[str]:
    path = SERVERS[server]
    if not path:
        pytest.skip(f"TETHERED_MCP_{server.upper()}_SERVER is not set: run through `cargo test --test mcp_examples`")
    return ["node", path] if path.endswith(".mjs") else [path]


class HttpServer:
    """A server listening on a free port of 127.0.0.1, its stderr in a file."""

    def __init__(self, server: str, log: Path) -> None:
        self.log = log
        self.process = subprocess.Popen(
            [*command(server), "--http", "127.0.0.1:0"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log.open("w"),
        )
        deadline = time.monotonic() + BOUND * 4
        while (found := re.search(r"listening on (http://\S+)", log.read_text())) is None:
            assert self.process.poll() is None, f"the server ended:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"the server printed no address:\n{log.read_text()}"
            time.sleep(0.01)
        self.url = found[1]

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(BOUND)
        except subprocess.TimeoutExpired:
            self.process.kill()
            raise


@pytest.fixture(params=["rust", "node"])
def server(request: pytest.FixtureRequest) -> str:
    command(request.param)  # skips, saying why, when the server is not named
    return request.param


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def endpoint(server: str, transport: str, tmp_path: Path):
    """What `connect` reaches: the server's command (stdio), or its URL (HTTP)."""
    if transport == "stdio":
        yield ("stdio", server, tmp_path / "server.stderr")
        return
    http = HttpServer(server, tmp_path / "server.stderr")
    try:
        yield ("http", http.url, http.log)
    finally:
        http.stop()


@asynccontextmanager
async def connect(
    endpoint: tuple[str, str, Path], terminate_on_close: bool = True, connections: int = 100
):
    """A session with the server, initialized. Over HTTP every call in flight holds one of
    `connections` (the SDK's default client allows 100)."""
    kind, where, log = endpoint
    if kind == "stdio":
        argv = command(where)
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        with log.open("a") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session
    else:
        limits = httpx2.Limits(max_connections=connections, max_keepalive_connections=20)
        timeout = httpx2.Timeout(30.0, read=300.0)
        async with (
            httpx2.AsyncClient(limits=limits, timeout=timeout) as client,
            streamable_http_client(where, http_client=client, terminate_on_close=terminate_on_close) as (
                read,
                write,
            ),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            yield session


async def running(session: ClientSession) -> int:
    result = await session.call_tool("running", {})
    assert not result.is_error, result
    return json.loads(result.content[0].text)["running"]


async def until_running(session: ClientSession, n: int, bound: float = BOUND) -> None:
    deadline = time.monotonic() + bound
    while (now := await running(session)) != n:
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

    async def run(self) -> None:
        with self.scope:
            try:
                self.result = await self.session.call_tool(self.tool, self.arguments, **self.options)
            except MCPError as err:
                self.error = err
        self.done.set()


async def test_a_cancelled_call_stops_its_job(endpoint) -> None:
    async with connect(endpoint) as session, anyio.create_task_group() as tg:
        call = Call(session, "spin", {"seconds": 600})
        tg.start_soon(call.run)
        await until_running(session, 1)
        call.scope.cancel()  # the client sends notifications/cancelled
        await call.done.wait()
        await until_running(session, 0)
        # The server goes on serving.
        done = await session.call_tool("spin", {"seconds": 0.01})
        assert done.content[0].text == "done"


async def test_a_timed_out_call_stops_its_job(endpoint) -> None:
    async with connect(endpoint) as session, anyio.create_task_group() as tg:
        call = Call(session, "spin", {"seconds": 600}, read_timeout_seconds=0.5)
        tg.start_soon(call.run)
        await call.done.wait()
        assert call.error is not None and call.error.error.code == REQUEST_TIMEOUT, call.error
        await until_running(session, 0)


async def test_closing_the_session_stops_the_job(endpoint) -> None:
    kind, _, log = endpoint
    async with connect(endpoint) as watcher:
        started = time.monotonic()
        async with connect(endpoint) as session:
            task = Call(session, "spin", {"seconds": 600})
            async with anyio.create_task_group() as tg:
                tg.start_soon(task.run)
                await until_running(session, 1)
                tg.cancel_scope.cancel()
                # Leaving the session: over stdio it closes the server's stdin; over HTTP
                # the client sends DELETE.
            started = time.monotonic()
        if kind == "http":
            await until_running(watcher, 0)
        # Over stdio the session's server exits with its stdin (the SDK's client would wait
        # 2 s before it sends SIGTERM): it stopped its job at once.
        assert time.monotonic() - started < 2.0, log.read_text()


@pytest.fixture
def http_endpoint(server: str, tmp_path: Path):
    """The server over HTTP (a closed session over stdio is the end of stdin: tested above)."""
    http = HttpServer(server, tmp_path / "server.stderr")
    try:
        yield ("http", http.url, http.log)
    finally:
        http.stop()


async def test_a_client_that_closes_without_delete_stops_the_job(http_endpoint) -> None:
    endpoint = http_endpoint
    async with connect(endpoint) as watcher:
        async with connect(endpoint, terminate_on_close=False) as session:
            task = Call(session, "spin", {"seconds": 600})
            async with anyio.create_task_group() as tg:
                tg.start_soon(task.run)
                await until_running(watcher, 1)
                tg.cancel_scope.cancel()
        # No DELETE: the call's connection closed is all the server hears.
        await until_running(watcher, 0)


KILLED_CLIENT = """
import anyio, sys
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

async def main():
    kind, where = sys.argv[1], sys.argv[2:]
    if kind == "stdio":
        opened = stdio_client(StdioServerParameters(command=where[0], args=where[1:]))
    else:
        opened = streamable_http_client(where[0])
    async with opened as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        print("calling", flush=True)
        await session.call_tool("spin", {"seconds": 600})

anyio.run(main)
"""


def children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(stat.parent.name))
    return found


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


async def test_a_killed_client_stops_the_job(endpoint, tmp_path: Path) -> None:
    kind, where, _ = endpoint
    args = command(where) if kind == "stdio" else [where]
    client = subprocess.Popen(
        [sys.executable, "-c", KILLED_CLIENT, kind, *args],
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "client.stderr").open("w"),
    )
    assert client.stdout.readline().decode().strip() == "calling"
    if kind == "http":
        async with connect(endpoint) as watcher:
            await until_running(watcher, 1)
            client.kill()
            client.wait()
            await until_running(watcher, 0)
        return
    # Over stdio the client's server is its child: its stdin ends with the client, and it
    # stops its job and exits.
    deadline = time.monotonic() + BOUND
    while not (servers := children(client.pid)):
        assert time.monotonic() < deadline, "the client started no server"
        await anyio.sleep(0.01)
    await anyio.sleep(0.3)  # the call reaches the server
    client.kill()
    client.wait()
    deadline = time.monotonic() + BOUND
    for pid in servers:
        while not gone(pid):
            assert time.monotonic() < deadline, f"the server {pid} runs on after its client died"
            await anyio.sleep(0.01)


async def test_two_hundred_calls_with_half_cancelled_leave_nothing_running(endpoint) -> None:
    # Each server runs as many CPU-bound jobs at once as the machine has cores and queues the
    # others: 100 calls that run until cancelled, some running and the rest waiting; then 100
    # that end by themselves, and while those are in flight, the first 100 cancelled.
    async with connect(endpoint, connections=400) as session, anyio.create_task_group() as tg:
        to_cancel = [Call(session, "spin", {"seconds": 600}) for _ in range(100)]
        to_finish = [Call(session, "spin", {"seconds": 0.01}) for _ in range(100)]
        for call in to_cancel:
            tg.start_soon(call.run)
        await until_running(session, min(2, os.cpu_count() or 1))
        for call in to_finish:
            tg.start_soon(call.run)
        for call in to_cancel:
            call.scope.cancel()
        with anyio.fail_after(BOUND * 6):
            for call in to_cancel + to_finish:
                await call.done.wait()
        assert all(
            call.result is not None and call.result.content[0].text == "done" for call in to_finish
        ), [call.result or call.error for call in to_finish if call.result is None or call.result.is_error]
        await until_running(session, 0, bound=BOUND * 4)


async def test_bad_input_is_answered_with_an_error_while_another_call_goes_on(endpoint) -> None:
    async with connect(endpoint) as session, anyio.create_task_group() as tg:
        call = Call(session, "spin", {"seconds": 600})
        tg.start_soon(call.run)
        await until_running(session, 1)
        for bad in ({"seconds": -1}, {"seconds": "soon"}, {}):
            try:
                answer = await session.call_tool("spin", bad)
            except MCPError:
                continue  # a protocol error (invalid params)
            assert answer.is_error, (bad, answer)
        assert await running(session) == 1, "the bad calls touched the running one"
        call.scope.cancel()
        await call.done.wait()
        await until_running(session, 0)
