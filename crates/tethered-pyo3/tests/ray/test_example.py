"""The Ray example (`examples/ray/ray_cancel.py`) runs as its docs say, on a Ray of its own, and
every path it shows stops its native loop with the reason the README's table gives."""

import os
import pathlib
import subprocess
import sys

SCRIPT = pathlib.Path(__file__).parents[4] / "examples" / "ray" / "ray_cancel.py"


def test_the_example_runs_and_every_path_stops_its_native_loop():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    print(done.stdout)
    lines = {line.split("  ")[0]: line for line in done.stdout.splitlines()}
    for path in (
        "task",
        "child task (recursive)",
        "threaded actor method",
        "task, after ray.get(timeout=)",
    ):
        assert path in lines, done.stdout
        assert lines[path].endswith("token read Dropped|ray.cancel"), lines[path]
    # Ray cancels an async actor's method through asyncio, which gives no cause.
    assert lines["async actor method"].endswith("token read Dropped|"), done.stdout
    assert "peer: force=True" in done.stdout
