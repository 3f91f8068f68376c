"""A sandbox server: POST a script, and a native interpreter runs it until it halts, runs out of
steps, or the client goes away, which stops the interpreter's thread at once.

The interpreter is `run_script` of the example extension module (examples/python/ext, Rust
with tethered-pyo3); this file is a bare ASGI app under uvicorn, and has no dependency but those.

    POST /run[?max_steps=N]   body: the script   -> 200 {"outcome", "reason", "steps", "registers"}
                                                    400 {"error"} when it does not parse
    GET  /stats                                  -> 200 tethered.stats() of the process

Run with:  target/py-venv/bin/python examples/python/sandbox_server.py [--port 8000]
(see examples/python/README.md).
"""

import argparse
import asyncio
import json
import socket
import sys
from urllib.parse import parse_qs

import tethered_example
import uvicorn


async def run_until_disconnect(receive, awaitable):
    """Awaits `awaitable` unless the client disconnects first; `None` if it did.

    uvicorn tells an app that its client went away only through `receive()`, so watch it
    beside the job. Cancelling the job's future cancels the native interpreter's token.
    """
    job = asyncio.ensure_future(awaitable)
    disconnect = asyncio.ensure_future(wait_for_disconnect(receive))
    try:
        await asyncio.wait({job, disconnect}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Whatever ended the wait (the job, the client, this handler's own cancellation by
        # a server shutting down), neither may outlive the request. Both are no-ops if done.
        job.cancel()
        disconnect.cancel()
    return job.result() if job.done() and not job.cancelled() else None


async def wait_for_disconnect(receive):
    while (await receive())["type"] != "http.disconnect":
        pass


async def read_body(receive):
    body = b""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if not message.get("more_body"):
            return body


async def respond(send, status, document):
    body = json.dumps(document).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def app(scope, receive, send):
    """The ASGI application (HTTP only: it runs with lifespan="off")."""
    route = (scope["method"], scope["path"])
    if route == ("GET", "/stats"):
        return await respond(send, 200, tethered_example.stats())
    if route != ("POST", "/run"):
        return await respond(send, 404, {"error": "POST /run or GET /stats"})

    source = await read_body(receive)
    if source is None:
        return  # gone before it sent the script
    query = parse_qs(scope.get("query_string", b"").decode())
    try:
        max_steps = int(query["max_steps"][0]) if "max_steps" in query else None
        run = tethered_example.run_script(source.decode(), max_steps)
    except ValueError as err:
        return await respond(send, 400, {"error": str(err)})
    report = await run_until_disconnect(receive, run)
    if report is not None:
        await respond(send, 200, report)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    args = parser.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    host, port = sock.getsockname()[:2]
    print(f"listening on http://{host}:{port}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    uvicorn.Server(config).run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
