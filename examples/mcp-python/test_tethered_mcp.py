"""tethered_mcp.py on its own, with a server of plain Python tools (fixtures/py_tools.py) and the
official SDK's client: the end of stdin and SIGTERM stop the calls in flight and the server at
once, the server's limit stops a call with a tool error, a line that is no JSON-RPC is answered;
and the README's server, copied from it, with a native tool.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.types import REQUEST_TIMEOUT

HERE = Path(__file__).resolve().parent
SERVER = HERE / "fixtures" / "py_tools.py"
BOUND = 5.0

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@asynccontextmanager
async def connect(*args: str, errlog):
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER), *args])
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            yield session


async def until_running(session: ClientSession, n: int) -> None:
    deadline = time.monotonic() + BOUND
    while json.loads((await session.call_tool("running", {})).content[0].text)["running"] != n:
        assert time.monotonic() < deadline, f"never {n} calls in flight"
        await anyio.sleep(0.005)


async def test_the_end_of_stdin_stops_the_calls_and_the_server_at_once(tmp_path: Path) -> None:
    log = tmp_path / "server.stderr"
    with log.open("w") as errlog:
        async with connect(errlog=errlog) as session, anyio.create_task_group() as tg:
            tg.start_soon(session.call_tool, "wait", {"seconds": 600})
            await until_running(session, 1)
            tg.cancel_scope.cancel()
            closed = time.monotonic()
    # The client's exit closed stdin; the SDK's client would send SIGTERM only 2 s later.
    assert time.monotonic() - closed < 2.0, log.read_text()
    assert "exit (stdin closed)" in log.read_text()


async def test_the_servers_limit_stops_a_call_with_a_tool_error(tmp_path: Path) -> None:
    with (tmp_path / "server.stderr").open("w") as errlog:
        async with connect("--max-call-seconds", "0.2", errlog=errlog) as session:
            answer = await session.call_tool("wait", {"seconds": 600})
            assert answer.is_error
            assert "limit of 0.2 s" in answer.content[0].text
            await until_running(session, 0)


def raw_server() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, str(SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


def send(process: subprocess.Popen[bytes], message: object) -> None:
    assert process.stdin is not None
    line = message if isinstance(message, str) else json.dumps(message)
    process.stdin.write((line + "\n").encode())
    process.stdin.flush()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
}


def test_sigterm_stops_the_calls_and_the_server_at_once() -> None:
    process = raw_server()
    send(process, INITIALIZE)
    assert process.stdout is not None
    process.stdout.readline()
    send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    send(process, {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "wait", "arguments": {"seconds": 600}}})
    time.sleep(0.3)
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    assert process.wait(BOUND) == 0
    assert time.monotonic() - signalled < 2.0
    assert process.stderr is not None
    assert "exit (SIGTERM)" in process.stderr.read().decode()


def test_a_line_that_is_no_json_rpc_is_answered() -> None:
    process = raw_server()
    try:
        send(process, INITIALIZE)
        assert process.stdout is not None
        process.stdout.readline()
        send(process, "this is no JSON")
        assert json.loads(process.stdout.readline())["error"]["code"] == -32700
        send(process, {"jsonrpc": "2.0", "id": 7, "nothing": True})
        answer = json.loads(process.stdout.readline())
        assert (answer["id"], answer["error"]["code"]) == (7, -32600)
    finally:
        process.kill()
        process.wait()


async def test_the_readmes_server_serves_and_stops_its_native_work(tmp_path: Path) -> None:
    """The README's server as a new user would copy it, beside the module: its tool answers,
    a call the client times out stops its native job, and the end of the session ends the
    server at once with nothing running (a 600 s spin that did not stop would say so)."""
    readme = (HERE / "README.md").read_text()
    section = readme[readme.index("## The glue is a module") :]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the README shows a server in a python block"
    copy = HERE / "readme_server.generated.py"
    copy.write_text(match.group(1))
    log = tmp_path / "server.stderr"
    try:
        params = StdioServerParameters(command=sys.executable, args=[str(copy)])
        with log.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    done = await session.call_tool("spin", {"seconds": 0.05})
                    assert not done.is_error and "done" in done.content[0].text
                    with pytest.raises(MCPError) as timed_out:
                        await session.call_tool("spin", {"seconds": 600}, read_timeout_seconds=0.3)
                    assert timed_out.value.error.code == REQUEST_TIMEOUT
                closed = time.monotonic()
        assert time.monotonic() - closed < 2.0, log.read_text()
        text = log.read_text()
        assert "spin: cancelled; its native job returned" in text, text
        assert re.search(r"exit \(stdin closed\): running=0,", text), text
    finally:
        copy.unlink(missing_ok=True)
