"""A real HTTP client hangs up on a real ASGI server (uvicorn on 127.0.0.1, a free port), and
the native work behind the request stops."""

import asyncio
import http.client
import pathlib
import socket
import subprocess
import sys
import threading
import time

import httpx
import tethered_example as ext
import uvicorn
from conftest import RETURN_WITHIN, SETTLE, Naive, wait_until

EXAMPLES = pathlib.Path(__file__).resolve().parents[4] / "examples" / "python"
sys.path.insert(0, str(EXAMPLES))
import sandbox_server  # noqa: E402  (the example server: its app and its disconnect watch)

ENDLESS = "loop:\nadd x 1\njmp loop\n"


def hang_up(base, path, body, once):
    """POSTs `body` to `path`, waits until `once()` holds (the work behind the request runs),
    then hangs up without reading the response, as a client that gave up does."""
    host, port = base.removeprefix("http://").split(":")
    client = http.client.HTTPConnection(host, int(port), timeout=SETTLE)
    try:
        client.request("POST", path, body=body)  # sends; the response is never read
        assert wait_until(once, SETTLE), "the request's work did not start"
    finally:
        client.close()


def test_client_hanging_up_stops_the_sandbox_servers_interpreter():
    server = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "sandbox_server.py"), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = server.stdout.readline()
        assert line.startswith("listening on http://127.0.0.1:"), line
        base = line.split()[-1]

        report = httpx.post(f"{base}/run", content="set x 9\nmul x 9\nhalt", timeout=10).json()
        assert report == {"outcome": "halted", "reason": None, "steps": 3, "registers": {"x": 81}}
        assert httpx.post(f"{base}/run", content="nonsense", timeout=10).status_code == 400

        def stats():
            return httpx.get(f"{base}/stats", timeout=10).json()

        before = stats()
        hang_up(base, "/run", ENDLESS.encode(), lambda: stats()["running"] == 1)

        assert wait_until(lambda: stats()["running"] == 0, RETURN_WITHIN + 3.0), stats()
        after = stats()
        assert after["spawned"] == before["spawned"] + 1
        assert after["cancelled"] == before["cancelled"] + 1
    finally:
        server.terminate()
        server.wait(timeout=SETTLE)
        server.stdout.close()


class ServerThread:
    """uvicorn serving `app` on 127.0.0.1 (a free port) from a thread of this process."""

    def __init__(self, app):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, args=([self.sock],), daemon=True)

    def __enter__(self):
        self.thread.start()
        assert wait_until(lambda: self.server.started, SETTLE)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(SETTLE)
        self.sock.close()
        assert not self.thread.is_alive(), "uvicorn did not shut down"


def test_client_hanging_up_stops_tethered_work_but_not_executor_work():
    probe = ext.Probe()
    naive = Naive()

    async def app(scope, receive, send):
        await sandbox_server.read_body(receive)
        if scope["path"] == "/tethered":
            work = ext.spin(probe)
        else:
            work = asyncio.get_running_loop().run_in_executor(None, naive.spinner.run)
        # The same watch for both: the client's disconnect cancels the awaited future.
        await sandbox_server.run_until_disconnect(receive, work)

    with ServerThread(app) as server:
        # Stopped before the server: asyncio.run, under uvicorn, would wait for it at its end.
        with naive:
            hang_up(server.url, "/tethered", b"", lambda: probe.running)
            hang_up(server.url, "/naive", b"", lambda: naive.running)
            assert probe.wait_returned(RETURN_WITHIN + 1.0)
            assert probe.reason == "Dropped"
            time.sleep(0.2)
            assert naive.running, "the executor job should still spin after its client left"
