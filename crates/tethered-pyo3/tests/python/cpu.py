"""CPU per call beside wall time per call, each side alone in its own process.

Not a test (pytest collects test_*.py only). `bench_peers.py` pairs the sides in one process,
where the process's CPU clock is shared: a side's idle threads spinning into the other's batch
would be charged to it. Here each run is one side in one process. From the repository's root,
with `tethered_example` built in release mode into the interpreter's environment (as
`crates/benchmarks/report.py` does in target/bench-venv):

    target/bench-venv/bin/python crates/tethered-pyo3/tests/python/cpu.py [--calls N] [--runs K] [--load]

Each run awaits N trivial calls one after another under `asyncio.run` (`a + b`: tethered's
`add` on its job threads; pyo3-async-runtimes' `add_tokio` on tokio's blocking pool;
`asyncio.to_thread(operator.add, ...)`; `loop.run_in_executor(None, operator.add, ...)`) after
2,000 warm-up calls, and reads the wall clock and `time.process_time_ns()` (user + system, every
thread of the process) around them. The sides alternate over K runs; the table gives each
side's median wall and CPU time per call and tethered's ratios to each peer. With --load, as
many busy processes as the machine has cores run throughout (a loaded machine). Results:
target/tethered-bench/cpu-pyo3.json (cpu-pyo3-loaded.json with --load).
"""

import argparse
import asyncio
import json
import operator
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[4]
WARMUP = 2_000


def sides():
    """Each side's call, made on the running loop."""
    import tethered_example as ext

    def to_thread(a, b):
        return asyncio.to_thread(operator.add, a, b)

    def run_in_executor(a, b):
        return asyncio.get_running_loop().run_in_executor(None, operator.add, a, b)

    return {
        "tethered": ext.add,
        "pyo3-async-runtimes": ext.add_tokio,
        "to_thread": to_thread,
        "run_in_executor": run_in_executor,
    }


async def one_side(call, calls):
    """Awaits `calls` calls of `call(i, 1)`, one after another, after the warm-up."""
    for i in range(WARMUP):
        await call(i, 1)
    total = 0
    cpu = time.process_time_ns()
    started = time.perf_counter_ns()
    for i in range(calls):
        total += await call(i, 1)
    wall = time.perf_counter_ns() - started
    used = time.process_time_ns() - cpu
    # Each call adds 1 to i: a wrong sum means a side did not do the work.
    want = calls * (calls - 1) // 2 + calls
    if total != want:
        raise RuntimeError(f"the calls summed to {total}, not {want}")
    return {"wall_us": wall / calls / 1000, "cpu_us": used / calls / 1000}


def walls(runs):
    """Each run's wall time per call, in order, to a tenth of a microsecond."""
    return sorted(round(run["wall_us"], 1) for run in runs)


def run_side(name, calls):
    """One run of one side, in a process of its own."""
    child = subprocess.run(
        [sys.executable, __file__, "--side", name, "--calls", str(calls)],
        capture_output=True,
        text=True,
        check=False,
    )
    if child.returncode != 0:
        raise RuntimeError(f"{name} failed: {child.stderr}")
    return json.loads(child.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    # A loaded machine's runs fall into modes (where the scheduler puts the threads against the
    # busy processes), for either side: more runs, and every run's time in the results.
    parser.add_argument("--runs", type=int, help="5 idle, 9 loaded by default")
    parser.add_argument("--load", action="store_true")
    parser.add_argument("--side", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.runs is None:
        args.runs = 9 if args.load else 5
    if args.calls < 1 or args.runs < 1:
        parser.error("--calls and --runs want positive numbers")
    names = list(sides())
    if args.side is not None:
        if args.side not in names:
            parser.error(f"--side must be one of {', '.join(names)}")
        print(json.dumps(asyncio.run(one_side(sides()[args.side], args.calls))), flush=True)
        # The measurement is out. pyo3-async-runtimes' tokio threads can touch Python while
        # the interpreter finalizes ("PyGILState_Release: thread state ... must be current"),
        # a crash of the peer's exit, not of its calls: this process ends without finalizing.
        os._exit(0)

    load = []
    if args.load:
        for _ in range(os.cpu_count() or 1):
            load.append(subprocess.Popen([sys.executable, "-c", "while True: pass"]))
    samples = {name: [] for name in names}
    try:
        for run in range(args.runs):
            for name in names if run % 2 == 0 else list(reversed(names)):
                samples[name].append(run_side(name, args.calls))
    finally:
        for process in load:
            process.kill()
            process.wait()

    machine = "loaded" if args.load else "idle"
    tethered_wall = statistics.median(s["wall_us"] for s in samples["tethered"])
    tethered_cpu = statistics.median(s["cpu_us"] for s in samples["tethered"])
    rows = []
    for peer in names[1:]:
        peer_wall = statistics.median(s["wall_us"] for s in samples[peer])
        peer_cpu = statistics.median(s["cpu_us"] for s in samples[peer])
        rows.append(
            {
                "measured": "await a native call",
                "peer": peer,
                "machine": machine,
                "wall_us": tethered_wall,
                "cpu_us": tethered_cpu,
                "peer_wall_us": peer_wall,
                "peer_cpu_us": peer_cpu,
                "wall_ratio": tethered_wall / peer_wall,
                "cpu_ratio": tethered_cpu / peer_cpu,
                "runs": args.runs,
                "calls": args.calls,
                "wall_runs": walls(samples["tethered"]),
                "peer_wall_runs": walls(samples[peer]),
            }
        )
    for r in rows:
        print(
            f"{r['measured']} vs {r['peer']} ({machine}): wall {r['wall_us']:.2f} µs vs "
            f"{r['peer_wall_us']:.2f} µs ({r['wall_ratio']:.3f}x), CPU {r['cpu_us']:.2f} µs vs "
            f"{r['peer_cpu_us']:.2f} µs ({r['cpu_ratio']:.3f}x), median of {args.runs} runs of "
            f"{args.calls} calls; runs {r['wall_runs'][0]}–{r['wall_runs'][-1]} µs vs "
            f"{r['peer_wall_runs'][0]}–{r['peer_wall_runs'][-1]} µs"
        )
    output = ROOT / "target" / "tethered-bench" / f"cpu-pyo3{'-loaded' if args.load else ''}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(rows, indent=2) + "\n")
    print(f"wrote {output.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
