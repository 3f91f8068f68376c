"""tethered-pyo3 against what an asyncio user would pick instead, paired in one run.

Not a test (pytest collects test_*.py only). From the repository's root, with the example
module built into examples/mcp-python/.venv (examples/mcp-python/setup.sh; any virtualenv with
`tethered_example` installed does, e.g. those crates/tethered-pyo3/python/setup.sh makes):

    examples/mcp-python/.venv/bin/python crates/tethered-pyo3/tests/python/bench_peers.py

(`--rounds N` and `--batch B` change the defaults, 200 and 64.) Both setup scripts build the
module without optimizations (maturin's default); numbers to publish want a release build
(`maturin develop --release`, or the wheel of `maturin build --release`). What is measured is
the latency a coroutine awaits: a call to a trivial native job until its result is back on the
loop.
`tethered_example.add(a, b)` (a tethered job) against
1. `tethered_example.add_tokio(a, b)`: pyo3-async-runtimes' `future_into_py` over tokio's
   `spawn_blocking` (the same module, so both sides pay the same call into it);
2. `asyncio.to_thread(operator.add, a, b)`; and
3. `loop.run_in_executor(None, operator.add, a, b)` (the loop's default executor, which
   `to_thread` uses too, without copying the context).

Pairing: under `asyncio.run`, after warm-up rounds, each round times a batch of B calls of each
side, each call awaited before the next (one in flight: the latency, not the throughput),
tethered first in even rounds and the peer first in odd ones; the round's ratio is tethered's
batch time over the peer's. The table and target/tethered-bench/peers-pyo3.json give the median
ratio with its quartiles over the rounds, and each side's median time per call.
"""

import argparse
import asyncio
import json
import operator
import os
import pathlib
import platform
import shlex
import statistics
import sys
import time

import tethered_example as ext

ROOT = pathlib.Path(__file__).resolve().parents[4]
OUTPUT = ROOT / "target" / "tethered-bench" / "peers-pyo3.json"
WARMUP_ROUNDS = 20
GOAL = 1.0


def quantile(values, q):
    """The q-quantile of `values`, interpolated between the nearest ranks."""
    ordered = sorted(values)
    at = (len(ordered) - 1) * q
    low = int(at)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (at - low)


async def batch(call, size):
    """Times `size` awaits of `call(i, 1)`, one after another, in nanoseconds."""
    total = 0
    started = time.perf_counter_ns()
    for i in range(size):
        total += await call(i, 1)
    took = time.perf_counter_ns() - started
    # Each call adds 1 to i: a wrong sum means a side did not do the work.
    want = size * (size - 1) // 2 + size
    if total != want:
        raise RuntimeError(f"a batch summed to {total}, not {want}")
    return took


async def paired(tethered, peer, rounds, size):
    """The rounds of one row: tethered and its peer side by side, the order alternating."""
    ratios, this_ns, peer_ns = [], [], []
    for round_ in range(-WARMUP_ROUNDS, rounds):
        if round_ % 2 == 0:
            a = await batch(tethered, size)
            b = await batch(peer, size)
        else:
            b = await batch(peer, size)
            a = await batch(tethered, size)
        if round_ < 0:
            continue
        ratios.append(a / b)
        this_ns.append(a / size)
        peer_ns.append(b / size)
    return {
        "rounds": rounds,
        "ratio_median": quantile(ratios, 0.5),
        "ratio_q1": quantile(ratios, 0.25),
        "ratio_q3": quantile(ratios, 0.75),
        "this_us": statistics.median(this_ns) / 1000,
        "peer_us": statistics.median(peer_ns) / 1000,
    }


def to_thread(a, b):
    return asyncio.to_thread(operator.add, a, b)


def run_in_executor(a, b):
    return asyncio.get_running_loop().run_in_executor(None, operator.add, a, b)


ROWS = [
    (
        "await a native call",
        "pyo3-async-runtimes `future_into_py` + tokio `spawn_blocking`",
        ext.add_tokio,
    ),
    ("await a native call", "`asyncio.to_thread(operator.add, …)`", to_thread),
    ("await a native call", "`loop.run_in_executor(None, operator.add, …)`", run_in_executor),
]


def command():
    """The command line that ran this script, from the repository's root."""

    def from_root(path):
        path = pathlib.Path(path)
        absolute = path if path.is_absolute() else pathlib.Path.cwd() / path
        try:
            return str(absolute.relative_to(ROOT))
        except ValueError:
            return str(path)

    # sys.executable as called (a virtualenv's python is a link: resolving it would lose the
    # virtualenv).
    words = [from_root(sys.executable), from_root(__file__), *sys.argv[1:]]
    return " ".join(shlex.quote(word) for word in words)


async def main(rounds, size):
    loop = asyncio.get_running_loop()
    # The size asyncio gives the default executor (ThreadPoolExecutor's default), which
    # `to_thread` and `run_in_executor(None, …)` both use.
    workers = min(32, (os.cpu_count() or 1) + 4)
    module = pathlib.Path(ext.__file__).parent
    try:
        module = module.relative_to(ROOT)
    except ValueError:
        pass
    notes = (
        f"{size} awaits one after another per batch and side, order alternating each round, "
        f"{WARMUP_ROUNDS} warm-up rounds; the default executor has up to {workers} threads; "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{type(loop).__module__}.{type(loop).__name__}; tethered_example from {module}"
    )
    print(f"{rounds} rounds of {size} awaited calls per side ({notes})")
    results = []
    for measured, peer, call in ROWS:
        row = await paired(ext.add, call, rounds, size)
        results.append(
            {
                "crate": "pyo3",
                "measured": measured,
                "peer": peer,
                "goal": "≤ 1.0×",
                "goal_ratio": GOAL,
                **row,
                "command": command(),
                "notes": notes,
            }
        )
    return results


def print_table(results):
    header = ["measured", "peer", "this µs", "peer µs", "ratio (q1–q3)", "goal"]
    lines = [
        [
            r["measured"],
            r["peer"],
            f"{r['this_us']:.2f}",
            f"{r['peer_us']:.2f}",
            f"{r['ratio_median']:.3f}× ({r['ratio_q1']:.3f}–{r['ratio_q3']:.3f})",
            f"{r['goal']} {'met' if r['ratio_median'] <= r['goal_ratio'] else 'MISSED'}",
        ]
        for r in results
    ]
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    for line in [header, *lines]:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--batch", type=int, default=64)
    args = parser.parse_args()
    if args.rounds < 1 or args.batch < 1:
        parser.error("--rounds and --batch want positive integers")
    results = asyncio.run(main(args.rounds, args.batch))
    print_table(results)
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    print(f"wrote {OUTPUT.relative_to(ROOT)}")
