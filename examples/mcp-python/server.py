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
import sys
from collections.abc import Mapping
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators
import tethered_example
import tethered_mcp
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

NAME = "tethered-mcp-python"

# How long the server may take to stop after SIGTERM (or once its input ended) before it
# exits regardless.
SHUTDOWN_DEADLINE = 2.0


def log(message: str) -> None:
    """One line on stderr (stdout carries the protocol)."""
    print(f"{NAME}: {message}", file=sys.stderr, flush=True)


calls = tethered_mcp.Calls(log=log)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--max-call-seconds",
        type=float,
        default=3600.0,
        help="stop a tool call (and its native job) that runs longer (default: 3600)",
    )
    calls.limit = parser.parse_args().max_call_seconds
    tethered_mcp.run_stdio(
        server, calls, running=lambda: tethered_example.stats()["running"], shutdown_deadline=SHUTDOWN_DEADLINE
    )


if __name__ == "__main__":
    main()
