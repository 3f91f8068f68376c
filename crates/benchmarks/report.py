#!/usr/bin/env python3
"""Runs the benchmarks of `crates/benchmarks` and writes BENCHMARKS.md from their results.

    python3 crates/benchmarks/report.py            # wait for a quiet machine, run, write
    python3 crates/benchmarks/report.py --no-run   # rewrite BENCHMARKS.md from the last run

The criterion suites leave their estimates in target/criterion/<group>/<function>/new/; the
targets with a main of their own (`latency`, the `*_paired` ones and `allocations`) leave JSON
in target/tethered-bench/. A run also records the machine and its load there (run.json), so
`--no-run` reproduces the same file.
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
CRITERION = TARGET / "criterion"
OURS = TARGET / "tethered-bench"
OUTPUT = ROOT / "BENCHMARKS.md"
COMMAND = "python3 crates/benchmarks/report.py"
# The Node and Python halves of section 7, run by `run` after cargo's benchmarks.
PEER_COMMANDS = {
    "napi": "TETHERED_NAPI_ADDON=target/napi/tethered_napi_example.node "
            "node crates/tethered-napi/tests/js/peers.mjs",
    "pyo3": "target/bench-venv/bin/python crates/tethered-pyo3/tests/python/bench_peers.py",
}
# CPU per call beside wall time, each side alone in its own process (section 7's second
# table); each is run once on the idle machine and once with `--load`.
CPU_COMMANDS = {
    "napi": "TETHERED_NAPI_ADDON=target/napi/tethered_napi_example.node "
            "node crates/tethered-napi/tests/js/cpu.mjs",
    "pyo3": "target/bench-venv/bin/python crates/tethered-pyo3/tests/python/cpu.py",
}
# The MCP servers' cancel-to-return measurements (section 8), each a test of its suite.
MCP_COMMANDS = {
    "Rust": "cargo build --release --example mcp_server && cargo test --release --all-features "
            "--test mcp cancel_to_return_is_measured",
    "Node": "(cd examples/mcp-node && node --test test/measure.test.mjs)",
    "Python": "examples/mcp-python/.venv/bin/python -m pytest -q examples/mcp-python "
              "-k cancel_to_return",
}

# The criterion groups this crate defines; only these are cleared before a run.
GROUPS = [
    "check",
    "check_contended",
    "round_trip_tokio",
    "round_trip_smol",
    "round_trip_async_std",
    "poll",
    "guard",
    "child",
    "fan_out",
    "chain",
    "cancel_all",
]


# --------------------------------------------------------------------------------------------
# The machine


def cpu_busy(seconds=3.0):
    """Fraction of all CPU time spent busy over `seconds`, from /proc/stat."""

    def sample():
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        idle = fields[3] + fields[4]  # idle + iowait
        return idle, sum(fields)

    idle0, total0 = sample()
    time.sleep(seconds)
    idle1, total1 = sample()
    total = total1 - total0
    return 0.0 if total == 0 else 1.0 - (idle1 - idle0) / total


def compilers_running():
    """How many rustc/cc/ld processes run right now (builds by anyone on the machine)."""
    names = {"rustc", "cc", "cc1", "cc1plus", "ld", "ld.lld", "clang", "gcc"}
    count = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() in names:
                    count += 1
        except OSError:
            pass
    return count


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    rustc = subprocess.run(["rustc", "-V"], capture_output=True, text=True).stdout.strip()
    return {
        "cpu": model,
        "nproc": os.cpu_count(),
        "kernel": platform.release(),
        "rustc": rustc,
    }


def load_snapshot():
    return {
        "loadavg": list(os.getloadavg()),
        "cpu_busy": round(cpu_busy(), 3),
        "compilers": compilers_running(),
    }


def wait_for_quiet(max_wait, busy_limit):
    """Waits until no compiler runs and the CPUs are mostly idle; returns the last snapshot."""
    deadline = time.time() + max_wait
    while True:
        snap = load_snapshot()
        quiet = snap["compilers"] == 0 and snap["cpu_busy"] <= busy_limit
        if quiet or time.time() >= deadline:
            if not quiet:
                print(f"machine still busy after {max_wait}s, running anyway: {snap}",
                      file=sys.stderr)
            return snap
        print(f"waiting for a quiet machine: {snap}", file=sys.stderr)
        time.sleep(15)


# --------------------------------------------------------------------------------------------
# Running


def run(args):
    build = subprocess.run(["cargo", "bench", "-p", "benchmarks", "--no-run"], cwd=ROOT)
    if build.returncode != 0:
        sys.exit("cargo bench --no-run failed")
    before = wait_for_quiet(args.max_wait, args.busy_limit)
    for group in GROUPS:
        shutil.rmtree(CRITERION / group, ignore_errors=True)
    shutil.rmtree(OURS, ignore_errors=True)
    started = time.time()
    bench = subprocess.run(["cargo", "bench", "-p", "benchmarks"], cwd=ROOT)
    if bench.returncode != 0:
        sys.exit("cargo bench failed")
    run_others()
    after = load_snapshot()
    OURS.mkdir(parents=True, exist_ok=True)
    record = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(started)),
        "seconds": round(time.time() - started),
        "before": before,
        "after": after,
    }
    (OURS / "run.json").write_text(json.dumps(record, indent=2) + "\n")


def sh(command, **kwargs):
    """Runs a shell command from the repository's root; exits if it fails."""
    print(f"report.py: {command}", flush=True)
    if subprocess.run(command, shell=True, cwd=ROOT, **kwargs).returncode != 0:
        sys.exit(f"failed: {command}")


def run_others():
    """The Node and Python halves of section 7 and the MCP measurements of section 8, each
    against release builds (the Python module in a virtualenv of its own, target/bench-venv)."""
    sh("CARGO_TARGET_DIR=target/napi cargo build --release -p tethered-napi-example && "
       "cp target/napi/release/libtethered_napi_example.so target/napi/tethered_napi_example.node")
    sh(PEER_COMMANDS["napi"])
    sh(CPU_COMMANDS["napi"])
    sh(CPU_COMMANDS["napi"] + " --load")
    venv = ROOT / "target" / "bench-venv"
    if not (venv / "bin" / "maturin").exists():
        sh(f"python3 -m venv {venv} && {venv}/bin/pip install --quiet maturin==1.16.0")
    sh(f"CARGO_TARGET_DIR=target/pyo3 VIRTUAL_ENV={venv} PATH={venv}/bin:$PATH "
       f"{venv}/bin/maturin develop --quiet --release "
       "--manifest-path examples/python/ext/Cargo.toml")
    sh(PEER_COMMANDS["pyo3"])
    sh(CPU_COMMANDS["pyo3"])
    sh(CPU_COMMANDS["pyo3"] + " --load")
    sh("examples/mcp-python/setup.sh")
    sh("cd examples/mcp-node && (cmp -s package-lock.json node_modules/.tethered-lock || "
       "{ npm ci --no-audit --no-fund --loglevel=error && "
       "cp package-lock.json node_modules/.tethered-lock; }) && npm run build")
    for command in MCP_COMMANDS.values():
        sh(command)


# --------------------------------------------------------------------------------------------
# Reading results


def run_range(runs):
    """" (fastest–slowest)" of a side's runs' wall times per call, or "" if not recorded."""
    if not runs:
        return ""
    return f" ({min(runs):.1f}–{max(runs):.1f})"


def criterion_results():
    """full id ("group/function") -> dict(ns, lo, hi, per) from criterion's estimates.

    `ns` is criterion's headline estimate (the slope where it sampled linearly, else the mean)
    per iteration; with a throughput of N elements it is divided by N, so it is per element.
    """
    results = {}
    for group in GROUPS:
        for bench_dir in sorted((CRITERION / group).glob("*/new")):
            meta = json.loads((bench_dir / "benchmark.json").read_text())
            est = json.loads((bench_dir / "estimates.json").read_text())
            headline = est.get("slope") or est["mean"]
            per = 1
            throughput = meta.get("throughput") or {}
            if "Elements" in throughput:
                per = throughput["Elements"]
            results[f"{meta['group_id']}/{meta['function_id']}"] = {
                "ns": headline["point_estimate"] / per,
                "lo": headline["confidence_interval"]["lower_bound"] / per,
                "hi": headline["confidence_interval"]["upper_bound"] / per,
            }
    return results


def load_json(name):
    path = OURS / f"{name}.json"
    if not path.exists():
        sys.exit(f"{path} is missing: run `{COMMAND}` (without --no-run) first")
    return json.loads(path.read_text())


# --------------------------------------------------------------------------------------------
# Formatting


def fmt_ns(ns):
    if ns < 10:
        return f"{ns:.2f} ns"
    if ns < 1_000:
        return f"{ns:.1f} ns"
    if ns < 1_000_000:
        return f"{ns / 1_000:.2f} µs"
    return f"{ns / 1_000_000:.2f} ms"


def fmt_est(r):
    return f"{fmt_ns(r['ns'])} ({fmt_ns(r['lo'])} – {fmt_ns(r['hi'])})"


def verdict(ok):
    return "**met**" if ok else "**missed**"


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def write_report():
    c = criterion_results()
    latency = load_json("latency")
    paired = load_json("round_trip")
    concurrent = load_json("concurrent")
    tree = load_json("tree")
    busy_paired = load_json("busy")
    allocs = load_json("allocations")["per_job"]
    run_info = load_json("run")
    m = run_info["machine"]

    summary = []  # (comparison, measured, target, verdict)
    out = []

    # 1. Check cost -------------------------------------------------------------------------
    def check_section(group, title, with_targets):
        atomic, teth, tok = (c[f"{group}/{v}"] for v in ("atomic_bool", "tethered", "tokio_util"))
        over_atomic = teth["ns"] / atomic["ns"]
        under_tokio = tok["ns"] / teth["ns"]
        rows = [
            ["`AtomicBool::load(Acquire)`", fmt_est(atomic), "1.00x", ""],
            ["tethered `CancelToken::is_cancelled()`", fmt_est(teth), f"{over_atomic:.2f}x",
             f"{under_tokio:.1f}x cheaper than tokio-util"],
            ["tokio-util `CancellationToken::is_cancelled()`", fmt_est(tok),
             f"{tok['ns'] / atomic['ns']:.2f}x", ""],
        ]
        out.append(f"### {title}\n")
        out.append(table(["check", "per check (95% CI)", "vs AtomicBool", ""], rows) + "\n")
        if with_targets:
            summary.append(["1. check: tethered / AtomicBool", f"{over_atomic:.2f}x", "≤ 1.5x",
                            verdict(over_atomic <= 1.5)])
            summary.append(["1. check: tokio-util / tethered", f"{under_tokio:.1f}x", "≥ 10x",
                            verdict(under_tokio >= 10)])
        else:
            summary.append(["1. check under contention: tethered / AtomicBool",
                            f"{over_atomic:.2f}x", "≤ 1.2x",
                            verdict(over_atomic <= 1.2)])
            summary.append(["1. check under contention: tokio-util / tethered",
                            f"{under_tokio:.1f}x", "(≥ 10x, as uncontended)",
                            verdict(under_tokio >= 10)])

    out.append("## 1. Check cost in a hot loop\n")
    out.append(
        "A batch of 1,000 checks per iteration (`benches/check.rs`), divided by 1,000. Under "
        "contention, two more threads run: a second poller of the same flag and a writer that "
        "registers and drops `on_cancel` callbacks on the same token (for tokio-util: creates "
        "and drops child tokens, which take the lock its check takes; for the `AtomicBool`: "
        "the same writer on an unrelated token, for the same load). That is three busy threads "
        f"on {m['nproc']} cores, so the measured thread shares its core part of the time; the "
        "ratios stay comparable because every variant runs under the same load.\n")
    check_section("check", "Alone", True)
    check_section("check_contended", "Under contention", False)

    # 2. Round trip -------------------------------------------------------------------------
    out.append("## 2. Round trip: spawn and await a trivial job\n")
    out.append(
        "One job after another, spawned and awaited from the runtime's `block_on`: tokio on a "
        "current-thread runtime and its blocking pool, smol's `blocking::unblock` under "
        "`futures_lite::future::block_on`, and async-std's `spawn_blocking` under "
        "`async_std::task::block_on`. A round trip is two thread wake-ups, whose cost on this "
        "shared two-core machine drifts by 10-30% within seconds, so the verdict comes from "
        f"`benches/round_trip_paired.rs`: {paired['rounds']} rounds, each timing a batch of "
        f"{paired['batch']} round trips of both variants back to back (which one goes first "
        "alternates); the ratio is the median over rounds of tethered/raw, with its "
        "quartiles. criterion's estimates (`benches/round_trip.rs`, one variant fully after the "
        "other) are shown for context. Whether a change made a round trip dearer is a "
        "comparison of two versions of tethered: `python3 crates/benchmarks/against.py REV` "
        "builds the core at a git revision beside this tree's and times the raw primitive, "
        "that revision and this tree in rotation, the same way.\n")
    rows = []
    for runtime, raw_name in (("tokio", "tokio `spawn_blocking`"),
                              ("smol", "`blocking::unblock`"),
                              ("async_std", "async-std `spawn_blocking`")):
        p = paired[runtime]
        ratio = p["ratio_median"]
        raw_c = c[f"round_trip_{runtime}/raw"]
        teth_c = c[f"round_trip_{runtime}/tethered"]
        rows.append([raw_name, fmt_ns(p["raw"]["median_ns"]), fmt_ns(p["tethered"]["median_ns"]),
                     f"{ratio:.3f}x ({p['ratio_q1']:.2f}–{p['ratio_q3']:.2f})",
                     verdict(ratio <= 1.10),
                     f"{fmt_ns(raw_c['ns'])}, {fmt_ns(teth_c['ns'])} "
                     f"({teth_c['ns'] / raw_c['ns']:.3f}x)"])
        summary.append([f"2. round trip {runtime}: tethered / raw", f"{ratio:.3f}x", "≤ 1.10x",
                        verdict(ratio <= 1.10)])
    out.append(table(["primitive", "raw, median batch", "tethered, median batch",
                      "paired ratio (quartiles)", "≤ 1.10x", "criterion: raw, tethered (ratio)"], rows)
               + "\n")
    out.append(
        "tethered is cheaper than async-std's own `spawn_blocking` because that function is "
        "`spawn(unblock(f))`: the closure's completion wakes an async-std task, which then "
        "wakes the awaiting one; `AsyncStdSpawner` detaches that task and the job wakes its "
        "awaiter directly from the pool thread, one hop less. On tokio and smol the job "
        "likewise wakes its awaiter from inside the pool thread's call, before the runtime's "
        "own completion bookkeeping, which offsets its extra work (two allocations and a few "
        "uncontended lock round trips per job).\n")
    out.append("### Many jobs at once\n")
    out.append(
        "`benches/concurrent_paired.rs`: a task on a worker of a multi-thread tokio runtime (as "
        f"many workers as cores) spawns {concurrent['jobs']:,} trivial jobs at once "
        "(`tethered_tokio::spawn_native(|_token| ...)` against `tokio::task::spawn_blocking`), "
        "then awaits every handle in spawn order; a batch is timed from its first spawn to its "
        "last join, so the jobs contend for the blocking pool's queue and threads (up to its "
        f"default 512) and their wake-ups overlap. {concurrent['rounds']:,} rounds, each timing one "
        "batch of each variant back to back (which one goes first alternates); the ratio is "
        "the median over rounds of tethered/raw, with its quartiles. Times are per job: a "
        "batch's time divided by the number of jobs.\n")
    c_tokio = concurrent["tokio"]
    c_ratio = c_tokio["ratio_median"]
    out.append(table(["primitive", "raw, per job (median batch)", "tethered, per job (median batch)",
                      "paired ratio (quartiles)", "< 1.10x"], [
        [f"tokio `spawn_blocking`, {concurrent['jobs']:,} at once",
         fmt_ns(c_tokio["raw"]["median_ns"]), fmt_ns(c_tokio["tethered"]["median_ns"]),
         f"{c_ratio:.3f}x ({c_tokio['ratio_q1']:.2f}–{c_tokio['ratio_q3']:.2f})",
         verdict(c_ratio < 1.10)],
    ]) + "\n")
    c_floor = concurrent["tokio_floor"]
    c_above = concurrent["tokio_above_floor"]
    out.append(
        "Where the difference goes. The same rounds also time a floor: `spawn_blocking` plus "
        "two `Arc`s of the sizes of a job's own two allocations (the job, 256 bytes with its "
        "counts for this closure, and its token's state, 112), made on the spawning task, "
        "cloned into the closure, dropped by the pool thread and, after the join, by the "
        "awaiting task, as a job's are. Two allocations per job beyond the runtime's are what "
        "the allocation target below allows; the floor is what they cost in this load, and "
        "tethered / floor is what tethered's own code costs beyond them. Each round times the "
        "three variants back to back, in one of the six orders, taken in turn.\n")
    out.append(table(["pair", "first, per job (median batch)", "second, per job (median batch)",
                      "paired ratio (quartiles)"], [
        ["floor / raw: a job's two allocations",
         fmt_ns(c_floor["raw"]["median_ns"]), fmt_ns(c_floor["floor"]["median_ns"]),
         f"{c_floor['ratio_median']:.3f}x ({c_floor['ratio_q1']:.2f}–{c_floor['ratio_q3']:.2f})"],
        ["tethered / floor: tethered's code beyond them",
         fmt_ns(c_above["floor"]["median_ns"]), fmt_ns(c_above["tethered"]["median_ns"]),
         f"{c_above['ratio_median']:.3f}x ({c_above['ratio_q1']:.2f}–{c_above['ratio_q3']:.2f})"],
    ]) + "\n")
    summary.append([f"2. {concurrent['jobs']:,} concurrent jobs, tokio: tethered / raw (paired)",
                    f"{c_ratio:.3f}x", "≤ 1.05x", verdict(c_ratio <= 1.05)])
    summary.append([f"2. {concurrent['jobs']:,} concurrent jobs: floor (a job's two allocations) / raw",
                    f"{c_floor['ratio_median']:.3f}x", "(none)", "reported"])
    summary.append([f"2. {concurrent['jobs']:,} concurrent jobs: tethered / floor",
                    f"{c_above['ratio_median']:.3f}x", "(none)", "reported"])

    # 3. Latency ----------------------------------------------------------------------------
    out.append("## 3. Cancel-to-observe latency\n")
    out.append(
        "From just before the handle is dropped on the cancelling thread to the moment the "
        "native closure, on a tokio blocking-pool thread, sees the cancel "
        "(`benches/latency.rs`; its own loop, every sample kept; variants interleaved one "
        "sample each per round). The floors are the same harness with the bare primitive: an "
        "`AtomicBool` store for the busy poller, a `Mutex<bool>` + `Condvar` notify for the "
        "parked one. tokio-util's token is busy-polled for context, and `source_cancel` "
        "is the busy poller cancelled through `CancelSource::cancel` directly instead of by "
        "dropping an `AbortableNative`, to show where the time goes.\n")
    rows = []
    targets = {"busy": 500.0, "parked": 10_000.0}
    floors = {"busy": "atomic_bool", "parked": "condvar"}
    for mode in ("busy", "parked"):
        floor = latency[mode][floors[mode]]
        for variant, s in latency[mode].items():
            rows.append([mode, variant, fmt_ns(s["median_ns"]), fmt_ns(s["p90_ns"]),
                         fmt_ns(s["p99_ns"]), f"{s['median_ns'] / floor['median_ns']:.2f}x",
                         f"{s['median_ns'] - floor['median_ns']:+.0f} ns", s["samples"]])
        teth = latency[mode]["tethered"]
        summary.append([f"3. latency {mode}: tethered median (p99)",
                        f"{fmt_ns(teth['median_ns'])} ({fmt_ns(teth['p99_ns'])})",
                        f"median ≤ {fmt_ns(targets[mode])}",
                        verdict(teth["median_ns"] <= targets[mode])])
    out.append(table(["mode", "variant", "median", "p90", "p99", "median vs floor",
                      "median − floor", "samples"], rows) + "\n")
    busy = latency["busy"]
    busy_extra = busy["tethered"]["median_ns"] - busy["atomic_bool"]["median_ns"]
    cancel_extra = busy["source_cancel"]["median_ns"] - busy["atomic_bool"]["median_ns"]
    if cancel_extra <= busy_extra:
        split = (
            f"Of that, about {cancel_extra:.0f} ns is the cancel itself (`source_cancel`: the "
            "token is bare, so its flag and reason are one compare-exchange, with no lock) and "
            "the rest the handle's drop, decided by the same compare-exchange on the job's "
            "token (a finished job has sealed it).")
    else:
        split = (
            f"`source_cancel` (the same cancel, through a `CancelSource` made next to the "
            f"blocking task that polls it) measured {cancel_extra:.0f} ns over the floor, above "
            "the handle's path; it has done so in every run since the token's layout changed "
            "(below), and what places it there was not pinned down.")
    out.append(
        "This harness's floor (one cache-line transfer, two clock reads, a pool thread) sits "
        "above the bare cache-line figure of about 150 ns measured on this kind of machine. What tethered adds to it, "
        f"{busy_extra:.0f} ns here, is the part that carries over: on a 150 ns floor the "
        f"median would be about {150 + busy_extra:.0f} ns. {split} The busy median moves with the "
        "floor from run to run. Before the token's layout put the reason beside the lock word "
        "and the flag (see the end of this file), tethered's addition lay between about 180 "
        "and 265 ns; since, between about 40 and 110 ns. A bare token (a plain job's, or a "
        "source nothing was attached to) takes no lock: its cancel is one compare-exchange, "
        "tried before the word is read (see the end of this file). A token with something "
        "attached still stores its flag inside its critical section, on a line its lock word "
        "does not share. The "
        "parked floor is the machine's own thread wake-up: when it is above the 10 µs target, "
        "so is tethered, which adds the part shown in the last column.\n")
    out.append("### Busy closure, paired against a bare flag\n")
    out.append(
        "`benches/busy_paired.rs`: the busy poller again, in two placements, each against the "
        "same closure spinning on a bare `Arc<AtomicBool>` that the cancelling thread stores "
        "`true` into: on tokio's blocking pool (tethered: the drop of a "
        "`tethered_tokio::spawn_native` job's handle; bare: a `spawn_blocking` closure) and on "
        "a thread of its own (tethered: the drop of an `AbortableNative::spawn` handle; bare: a "
        "`std::thread::spawn` closure). The closure takes the time when it sees the stop, the "
        "cancelling thread right before the drop or the store. Each of "
        f"{busy_paired['rounds']:,} rounds takes one sample of each variant back to back (which "
        "one goes first alternates); the results are the median over rounds of the per-round "
        "difference (tethered minus bare) and of the per-round ratio, each with its quartiles, "
        "so that the machine's drift between samples cancels as it does in the paired round "
        "trips.\n")
    rows = []
    for placement, label in (("pool", "tokio blocking pool: `spawn_native` / `spawn_blocking`"),
                             ("thread", "own thread: `AbortableNative::spawn` / "
                                        "`std::thread::spawn`")):
        b = busy_paired[placement]
        diff = b["difference_median_ns"]
        rows.append([label, fmt_ns(b["atomic_bool"]["median_ns"]),
                     fmt_ns(b["tethered"]["median_ns"]),
                     f"{diff:+.0f} ns ({b['difference_q1_ns']:+.0f} to "
                     f"{b['difference_q3_ns']:+.0f})",
                     f"{b['ratio_median']:.2f}x ({b['ratio_q1']:.2f}–{b['ratio_q3']:.2f})",
                     verdict(diff < 300)])
        summary.append([f"3. latency busy, {placement} (paired): tethered − AtomicBool",
                        f"{diff:+.0f} ns ({b['ratio_median']:.2f}x)", "≤ +50 ns",
                        verdict(diff <= 50)])
    out.append(table(["placement", "bare, median", "tethered, median",
                      "difference, median (quartiles)", "ratio, median (quartiles)", "< 300 ns"],
                     rows) + "\n")

    # 4. CancelOnDrop, guards, children, fan-out --------------------------------------------
    out.append("## 4. `CancelOnDrop`, drop guards, child tokens, fan-out\n")
    out.append(
        "`benches/cancel_on_drop.rs`. No numeric target is set here; the comparison is "
        "against tokio-util where it has the same operation (a ratio below 1 means tethered "
        "is cheaper).\n")
    poll_bare, poll_wrapped = c["poll/bare"], c["poll/cancel_on_drop"]
    guard_tok, guard_cod, guard_cg = (c[f"guard/{v}"] for v in
                                      ("tokio_util_drop_guard", "cancel_on_drop", "cancel_guard"))
    child_tok, child_teth = c["child/tokio_util"], c["child/tethered"]
    fan_tok, fan_teth = c["fan_out/tokio_util"], c["fan_out/tethered"]
    chain_tok, chain_teth = c["chain/tokio_util"], c["chain/tethered"]
    poll_over = poll_wrapped["ns"] - poll_bare["ns"]
    rows = [
        ["poll, bare future", fmt_est(poll_bare), ""],
        ["poll through `CancelOnDrop`", fmt_est(poll_wrapped),
         f"{poll_wrapped['ns'] / poll_bare['ns']:.2f}x bare ({poll_over:+.2f} ns per poll)"],
        ["tokio-util `CancellationToken::new().drop_guard()`, dropped", fmt_est(guard_tok), ""],
        ["`CancelOnDrop::new(fut, CancelSource::new())`, dropped unfinished", fmt_est(guard_cod),
         f"{guard_cod['ns'] / guard_tok['ns']:.2f}x tokio-util"],
        ["`CancelSource::new().drop_guard()`, dropped", fmt_est(guard_cg),
         f"{guard_cg['ns'] / guard_tok['ns']:.2f}x tokio-util"],
        ["tokio-util `child_token()` create + drop", fmt_est(child_tok), ""],
        ["tethered `child()` create + drop", fmt_est(child_teth),
         f"{child_teth['ns'] / child_tok['ns']:.2f}x tokio-util"],
        ["tokio-util cancel, per child of 1,000", fmt_est(fan_tok), ""],
        ["tethered cancel, per child of 1,000", fmt_est(fan_teth),
         f"{fan_teth['ns'] / fan_tok['ns']:.2f}x tokio-util"],
        ["tokio-util cancel of a 1,000-level chain, per level", fmt_est(chain_tok), ""],
        ["tethered cancel of a 1,000-level chain, per level", fmt_est(chain_teth),
         f"{chain_teth['ns'] / chain_tok['ns']:.2f}x tokio-util"],
    ]
    out.append(table(["operation", "time (95% CI)", "ratio"], rows) + "\n")
    out.append(
        "The fan-out and chain verdicts come from `benches/tree_paired.rs`, as the round trip's "
        "come from a paired run: a cancel of 1,000 tokens takes tens of microseconds, and the "
        "machine's drift between criterion's two runs (one variant fully, then the other) moved "
        "the fan-out ratio between 0.87x and 1.02x in four full runs. There, each of "
        f"{tree['rounds']:,} rounds builds both trees (alternating which first, so neither is "
        "always the warmer in the cache) and times the cancel of each root (alternating which "
        "first); the ratio is the median over rounds, with its quartiles. The same bench also "
        "times the fan-out with a waiter on every child: one `cancelled()` future per child "
        "(tethered: `child.token().cancelled()`; tokio-util: `child.cancelled_owned()`), "
        "polled once before the cancel so that its waker is registered (a no-op waker; the "
        "warm-up rounds count the wake-ups instead and check that every waiter was woken), so "
        "that the cancel also wakes 1,000 wakers.\n")
    rows = []
    for shape, label in (("fan_out", "cancel, per child of 1,000"),
                         ("fan_out_waiters",
                          "cancel, per child of 1,000, each with a waiting `cancelled()` future"),
                         ("chain", "cancel of a 1,000-level chain, per level")):
        t = tree[shape]
        rows.append([label, fmt_ns(t["tokio_util"]["median_ns"]),
                     fmt_ns(t["tethered"]["median_ns"]),
                     f"{t['ratio_median']:.3f}x ({t['ratio_q1']:.2f}–{t['ratio_q3']:.2f})"])
    sized = [("fan_out_1", "cancel, per child of 1 (1,000 trees a round)"),
             ("fan_out", "cancel, per child of 1,000"),
             ("fan_out_10000", "cancel, per child of 10,000"),
             ("fan_out_100000", "cancel, per child of 100,000"),
             ("storm_1", "storm: a child's own cancel and drop, 1 sibling (1,000 trees a round)"),
             ("storm_1000", "storm: a child's own cancel and drop, per child of 1,000"),
             ("storm_10000", "storm: a child's own cancel and drop, per child of 10,000"),
             ("storm_100000", "storm: a child's own cancel and drop, per child of 100,000")]
    by_case = tree.get("rounds_by_case", {})
    for shape, label in sized:
        if shape == "fan_out" or shape not in tree:
            continue
        t = tree[shape]
        rows.append([f"{label} ({by_case.get(shape, tree['rounds']):,} rounds)",
                     fmt_ns(t["tokio_util"]["median_ns"]),
                     fmt_ns(t["tethered"]["median_ns"]),
                     f"{t['ratio_median']:.3f}x ({t['ratio_q1']:.2f}–{t['ratio_q3']:.2f})"])
    out.append(table(["paired", "tokio-util, median", "tethered, median",
                      "ratio (quartiles)"], rows) + "\n")
    out.append(
        "The sized rows time the same cancel at 1, 10,000 and 100,000 children, and a cancel "
        "storm: every child of one parent cancelled by its own source and then dropped, one "
        "after another, as requests that end cancelled under a server's token (tokio-util: "
        "`cancel()` and the drop of each child token). A round cancels at least 1,000 tokens, "
        "so the one-child rows build 1,000 trees a round; the larger trees take milliseconds "
        "to build, so their rounds are fewer.\n")
    out.append(
        "A parent keeps its children in a list of its own (a `Vec` of `Weak`s, each child "
        "knowing its slot), as tokio-util does, and a cancel walks the tree with an explicit "
        "stack of those lists (the list a token's children were taken out in, not a copy) "
        "instead of recursing, so a chain of any depth cancels and drops on any stack.\n")
    summary.append(["4. poll overhead: CancelOnDrop / bare",
                    f"{poll_wrapped['ns'] / poll_bare['ns']:.2f}x", "(none)", "reported"])
    summary.append(["4. CancelOnDrop new+drop / tokio-util DropGuard",
                    f"{guard_cod['ns'] / guard_tok['ns']:.2f}x", "(none)", "reported"])
    summary.append(["4. child() create+drop / tokio-util child_token()",
                    f"{child_teth['ns'] / child_tok['ns']:.2f}x", "(none)", "reported"])
    fan_ratio = tree["fan_out"]["ratio_median"]
    waiters_ratio = tree["fan_out_waiters"]["ratio_median"]
    chain_ratio = tree["chain"]["ratio_median"]
    summary.append(["4. fan-out per child / tokio-util (paired)",
                    f"{fan_ratio:.2f}x", "≤ 1.0x", verdict(fan_ratio <= 1.0)])
    summary.append(["4. fan-out with a waiter per child / tokio-util (paired)",
                    f"{waiters_ratio:.2f}x", "≤ 1.0x", verdict(waiters_ratio <= 1.0)])
    summary.append(["4. chain cancel per level / tokio-util (paired)",
                    f"{chain_ratio:.2f}x", "≤ 1.0x", verdict(chain_ratio <= 1.0)])
    for shape, label in sized:
        if shape == "fan_out" or shape not in tree:
            continue
        ratio = tree[shape]["ratio_median"]
        what = label.split(" (")[0]
        summary.append([f"4. {what} / tokio-util (paired)", f"{ratio:.2f}x", "≤ 1.0x",
                        verdict(ratio <= 1.0)])

    # 5. Allocations ------------------------------------------------------------------------
    out.append("## 5. Heap allocations per job\n")
    out.append(
        "Counted by `stats_alloc` as the global allocator (`benches/allocations.rs`), over "
        "5,000 sequential spawn-and-await jobs after a warm-up, each case in a process of its "
        "own. The counts are process-wide, so they include the pool threads' allocations.\n")
    rows = []
    for spawner, raw_key, label in (("tokio", "raw", "tokio `spawn_blocking`"),
                                    ("smol", "raw", "`blocking::unblock`"),
                                    ("async_std", "raw", "async-std `spawn_blocking`"),
                                    ("thread", "raw_named",
                                     "`std::thread::Builder::name().spawn()` (tethered: "
                                     "`ThreadSpawner`, which names its threads)")):
        raw = allocs[f"{spawner}/{raw_key}"]
        teth = allocs[f"{spawner}/tethered"]
        extra = teth["allocations"] - raw["allocations"]
        rows.append([label, f"{raw['allocations']:.2f}", f"{teth['allocations']:.2f}",
                     f"{extra:+.2f}", f"{teth['bytes'] - raw['bytes']:+.0f} B",
                     verdict(extra <= 2.05)])
        summary.append([f"5. allocations per job, {spawner}: beyond the runtime's own",
                        f"{extra:+.2f}", "≤ 1", verdict(extra <= 1.05)])
    out.append(
        "A fraction beyond a whole number of extra allocations is the runtime's own "
        "amortised growth (its queues and task lists), which shifts slightly between "
        "processes; the target is read as a whole number of allocations per job.\n")
    unnamed = allocs["thread/raw"]
    rows.append(["`std::thread::spawn` (unnamed, for context)", f"{unnamed['allocations']:.2f}",
                 "", "", "", ""])
    out.append(table(["primitive", "raw", "tethered", "extra", "extra bytes", "≤ 2 extra"], rows)
               + "\n")
    child_tok, child_teth = allocs["child/tokio_util"], allocs["child/tethered"]
    memory_ratio = child_teth["bytes"] / child_tok["bytes"]
    out.append(
        "An idle child token of a shared parent, kept alive (the same benchmark, 5,000 "
        "children): bytes allocated per child, the parent's list of children included.\n")
    out.append(table(["token", "allocations", "bytes per child"], [
        ["tokio-util `child_token()`", f"{child_tok['allocations']:.2f}",
         f"{child_tok['bytes']:.1f}"],
        ["tethered `child()`", f"{child_teth['allocations']:.2f}",
         f"{child_teth['bytes']:.1f} ({memory_ratio:.2f}x)"],
    ]) + "\n")
    # Memory does not pay for speed: within a quarter of tokio-util's (its allocation grew from
    # 112 to 120 bytes when a cancelled token began naming the walk that cancelled it).
    summary.append(["5. idle child token memory / tokio-util", f"{memory_ratio:.2f}x", "≤ 1.25x",
                    verdict(memory_ratio <= 1.25)])

    # 6. A scope's cancel_all ---------------------------------------------------------------
    small, large = c["cancel_all/waiting_1000"], c["cancel_all/waiting_20000"]
    growth = large["ns"] / small["ns"]
    out.append("## 6. `NativeScope::cancel_all` over jobs waiting for a slot\n")
    out.append(
        "`benches/scope.rs`: one job holds the scope's only slot in a pool that never runs it, "
        "n more wait; only the cancel is timed. A cancelled waiting job leaves the queue by key "
        "and the scope's jobs are children of one token, so the work per job does not grow "
        "with n; what grows is the working set (20,000 jobs do not fit in the caches), and "
        "the allocator's work when the walk's list of 20,000 children (160 KiB) is freed: "
        "glibc consolidates its fast bins on the free of any chunk of 64 KiB or more, so "
        "every small chunk freed during the walk is visited again then (see the end of this "
        "file).\n")
    out.append(table(["waiting jobs", "per job (95% CI)"], [
        ["1,000", fmt_est(small)],
        ["20,000", f"{fmt_est(large)} ({growth:.2f}x)"],
    ]) + "\n")
    summary.append(["6. cancel_all per job, 20,000 / 1,000 waiting", f"{growth:.2f}x", "≤ 1.5x",
                    verdict(growth <= 1.5)])

    # 7. Against what a user would use instead ---------------------------------------------
    out.append("## 7. Against what a user would use instead\n")
    out.append(
        "Each crate against its peer, paired and interleaved in one run: every round times a "
        "batch of tethered and a batch of the peer back to back, in an order that alternates, "
        "and the ratio is the median over rounds of tethered / peer, with its quartiles. The "
        "Rust rows come from `cargo bench -p benchmarks --bench peers_paired`, the Node rows "
        f"from `{PEER_COMMANDS['napi']}`, the Python rows from `{PEER_COMMANDS['pyo3']}`; "
        "each row names the command that runs it alone.\n")
    rows = []
    for language, name in (("rust", "peers-rust"), ("napi", "peers-napi"), ("pyo3", "peers-pyo3")):
        path = OURS / f"{name}.json"
        if not path.exists():
            if language == "rust":
                load_json(name)  # exits, saying what to run
            rows.append([language, "(not run)", "", "", "", "", "", "", ""])
            continue
        for r in json.loads(path.read_text()):
            if "result" in r:
                met = verdict(r["met"]) if r.get("goal") not in (None, "reported") else "reported"
                rows.append([r["crate"], r["measured"], r["peer"], r["result"], "", "",
                             r["goal"], met, f"`{r['command']}`"])
                if met != "reported":
                    summary.append([f"7. {r['crate']}: {r['measured']}", r["result"], r["goal"],
                                    met])
                continue
            ratio = r["ratio_median"]
            spread = f"{ratio:.3f}x ({r['ratio_q1']:.3f}–{r['ratio_q3']:.3f}, {r['rounds']} rounds)"
            goal = r.get("goal_ratio")
            met = "reported" if goal is None else verdict(ratio <= goal)
            rows.append([r["crate"], r["measured"], r["peer"], fmt_ns(r["this_us"] * 1e3),
                         fmt_ns(r["peer_us"] * 1e3), spread, r["goal"], met,
                         f"`{r['command']}`"])
            if goal is not None:
                summary.append([f"7. {r['crate']}: {r['measured']} / {r['peer']}",
                                f"{ratio:.3f}x", r["goal"], met])
    out.append(table(["crate", "measured", "peer", "tethered", "peer", "ratio (quartiles)",
                      "goal", "verdict", "command"], rows) + "\n")
    out.append("### CPU per call beside wall time: the bridges, idle and loaded\n")
    out.append(
        "The paired rows above share one process's CPU clock between the two sides, so they "
        "give wall time only. Here each side runs alone in a process of its own, awaiting "
        "trivial calls one after another after a warm-up, and reads the wall clock and the "
        "process's CPU time (user + system, every thread) around them; the sides alternate "
        "over the runs, and the table gives medians per call. Loaded: as many busy processes "
        "as the machine has cores run throughout. A loaded machine's runs fall into modes, "
        "for either side: the same build's run takes one time or two to four times it, by "
        "where the scheduler puts the two threads of a call against the busy processes, and a "
        "median of few runs goes with the mode most runs met; so each side's runs are given "
        "too. The Python module's jobs run on the core's thread cache (`ThreadSpawner`), so "
        "its rows are that cache's too. Goal: tethered's CPU per call at most 1.2x the peer's, and the wall-time goals of the rows above "
        "(napi ≤ 1.10x `AsyncTask`, pyo3 ≤ 1.0x `to_thread`) on both machines.\n")
    rows = []
    for bridge, names in (("napi", ("cpu-napi", "cpu-napi-loaded")),
                          ("pyo3", ("cpu-pyo3", "cpu-pyo3-loaded"))):
        for name in names:
            path = OURS / f"{name}.json"
            if not path.exists():
                rows.append([bridge, "(not run)", "", "", "", "", "", "", ""])
                continue
            for r in json.loads(path.read_text()):
                peer = r.get("peer") or ("`AsyncTask`" + (" with a signal" if "live" in
                                                            r["measured"] else ""))
                wall_goal = {"napi": 1.10, "pyo3": 1.0}[bridge]
                checked = bridge == "napi" or peer == "to_thread"
                ok = r["cpu_ratio"] <= 1.2 and (not checked or r["wall_ratio"] <= wall_goal)
                met = verdict(ok) if checked else "reported"
                rows.append([bridge, r["measured"], peer, r["machine"],
                             f"{r['wall_us']:.1f} µs{run_range(r.get('wall_runs'))} / "
                             f"{r['peer_wall_us']:.1f} µs{run_range(r.get('peer_wall_runs'))}",
                             f"{r['wall_ratio']:.2f}x",
                             f"{r['cpu_us']:.1f} µs / {r['peer_cpu_us']:.1f} µs",
                             f"{r['cpu_ratio']:.2f}x", met])
                if checked:
                    summary.append([f"7. {bridge}: {r['measured']} / {peer}, {r['machine']}: "
                                    "wall; CPU per call",
                                    f"{r['wall_ratio']:.2f}x; {r['cpu_ratio']:.2f}x",
                                    f"≤ {wall_goal:.2f}x; ≤ 1.2x", met])
    out.append(table(["bridge", "measured", "peer", "machine", "wall per call (tethered / peer)",
                      "wall ratio", "CPU per call (tethered / peer)", "CPU ratio", "verdict"],
                     rows) + "\n")
    out.append(f"Commands: `{CPU_COMMANDS['napi']} [--load]`, `{CPU_COMMANDS['pyo3']} [--load]` "
               "(each with `--calls N --runs K`; 20,000 calls, and 5 runs idle or 9 loaded by "
               "default). In brackets: the fastest and the slowest run's wall time per call.\n")

    # 8. MCP servers -------------------------------------------------------------------------
    out.append("## 8. MCP servers: from the client's cancel to the native job's return\n")
    out.append(
        "The example servers of the README's \"MCP servers\" section, each driven by its SDK's own "
        "client: a `spin` call runs, the client cancels it (`notifications/cancelled`), and the "
        "time runs from the cancel to the native loop's return, both read on `CLOCK_MONOTONIC` "
        "(the server stamps the return). Nearly all of it is the SDK's path: the client writing "
        "the notification, the transport, the server reading and dispatching it; the native side "
        "sees its token at its next check. Goal: a median of at most 5 ms on stdio.\n")
    rows = []
    for language, command in MCP_COMMANDS.items():
        path = OURS / f"mcp-{language.lower()}.json"
        if not path.exists():
            rows.append([language, "(not run)", "", "", "", "", "", f"`{command}`"])
            continue
        for r in json.loads(path.read_text()):
            goal = "≤ 5 ms median" if r["transport"] == "stdio" else "(none)"
            met = verdict(r["median_ms"] <= 5) if r["transport"] == "stdio" else "reported"
            rows.append([r["language"], r["sdk"], r["transport"], r["build"],
                         f"{r['median_ms']:.2f} ms", f"{r['worst_ms']:.2f} ms ({r['calls']} calls)",
                         met, f"`{command}`"])
            if r["transport"] == "stdio":
                summary.append([f"8. MCP {r['language']} stdio: cancel to return, median",
                                f"{r['median_ms']:.2f} ms", goal, met])
    out.append(table(["server", "SDK", "transport", "build", "median", "worst", "verdict",
                      "command"], rows) + "\n")

    # The recording of cancels, measured by hand with against.py (not rerun here) ------------
    out.append("## 9. Recording the cancels: `cancel_stats()` and the stubborn jobs, on and off\n\nWhat `cancel_stats()`, `stubborn_jobs()` and the `metrics` feature cost. The recording runs only when a cancel reaches work that is running, and when that work returns; a job that is not cancelled checks one flag in its finish. On and off are this tree and the commit before the recording (72616d3), built side by side by `against.py` into one scratch crate and run in rotation with the raw primitive (three runs each; medians of the per-round ratios, quartiles about ±3%–±20%). These rows are measured by hand; the command above does not rerun them.\n\n| row | on / off (three runs) | goal | verdict | command |\n|---|---|---|---|---|\n| round trip, tokio (5,000 rounds of 16) | 0.991, 0.999, 1.004 | within 1% | **met** | `python3 crates/benchmarks/against.py 72616d3` |\n| round trip, smol (5,000 rounds of 16) | 1.004, 1.003, 0.990 | within 1% | **met** | `python3 crates/benchmarks/against.py 72616d3` |\n| 2,000 concurrent tokio jobs (300 batches) | 1.007, 1.004, 1.005 | within 1% | **met** | `python3 crates/benchmarks/against.py 72616d3 --concurrent` |\n| `cancel()` of a running job, the call alone | 1.12 µs, 1.23 µs, 1.17 µs against 0.21 µs | reported | reported | `python3 crates/benchmarks/against.py 72616d3 --cancelled --rounds 3000` |\n| round trip of a job cancelled while it runs | 0.469, 0.477, 0.463 | reported | reported | `python3 crates/benchmarks/against.py 72616d3 --cancelled --rounds 3000` |\n\nThe cancel of running work pays for what it records: the job's lock (is its work running?), the watch's lock and map entry, the counts, and on its return the histogram of its name. A first version scheduled a timer entry per cancel (the stubborn deadline), and every schedule woke the timer's thread: `cancel()` took 5.4 µs. One sweep now serves every watched job (scheduled for the earliest deadline when none is pending), and a cancel whose job returns in time never touches the timer. The cancelled round trip reads faster with the recording on, which is no gain of the recording: the canceller, busy a microsecond longer, finds the job returned when it awaits it, instead of parking the runtime's thread and being woken (the old side's cost in `perf`: the futex wait and wake-up).\n")

    # Ray, measured by hand with examples/ray/ray_cancel.py (not rerun here) ----------------
    out.append("## 10. Ray: from `ray.cancel` to the native loop's stop\n\n`examples/ray/ray_cancel.py` on a local Ray 2.60.0 (`ray.init(num_cpus=4)`, one node): each path runs a native loop of the example module, cancels it once it runs, and times the cancel to the loop's stop (the loop writes what stopped it to a file as it returns; the file's time against the cancel's). The peer is Ray's own `force=True`, which kills the worker process: its row is the time until the process is gone, and the next call's time (a new worker). Ten rounds per path; measured by hand (`RAY_USAGE_STATS_ENABLED=0 target/ray-venv/bin/python examples/ray/ray_cancel.py --rounds 10`), not rerun by the command above.\n\n| path | tethered entry point | median | worst | token read |\n|---|---|---|---|---|\n| task | `run_native` | 16.9 ms | 18.6 ms | `Dropped`, `ray.cancel` |\n| child task (`recursive=True`) | `run_native` | 16.8 ms | 17.8 ms | `Dropped`, `ray.cancel` |\n| threaded actor's method | `run_native` | 16.2 ms | 17.6 ms | `Dropped`, `ray.cancel` |\n| async actor's method | `spawn_native` | 0.5 ms | 1.7 ms | `Dropped` |\n| task, after `ray.get(timeout=)` | `run_native` | 16.4 ms | 17.1 ms | `Dropped`, `ray.cancel` |\n| peer: `force=True` (no tethered) | (the worker process killed) | 9.1 ms | 10.5 ms | (no token; the next call on a new worker: 188 ms median) |\n\nThe synchronous paths wait for `run_native`'s next look (every 20 ms): Ray's `KeyboardInterrupt` and its cancelled flag are both read there. Without tethered, every path but `force=True` runs the native call to its end (`tests/ray`'s naive halves: 3 s calls end after their 3 s).\n")

    # What was optimised (measured by hand with the binaries before and after each change) --
    out.append("## What was optimised, and what was tried\n")
    out.append(
        "Numbers in this section were measured once, on this machine while quiet, by running "
        "the bench binaries built before and after each change back to back; they are not "
        "regenerated by the command above.\n")
    out.append(
        "- **A cancel no longer enters the kernel when nobody waits** (`state.rs`, invariant 6). "
        "std's `Condvar::notify_all` always makes a futex system call, even with no waiter; a "
        "cancel made one, plus one after every callback, so a fan-out to N children made "
        "2N+1. The token now counts the threads blocked on its condition variable under its "
        "lock and notifies only if there are any; a cancel also skips the callback loop when "
        "there are no callbacks, and the loop retires one callback and takes the next in one "
        "critical section. `CancelOnDrop` new+drop: 266 ns → 81 ns (tokio-util `DropGuard` "
        "110 ns); `CancelSource::drop_guard` new+drop: 246 ns → 63 ns; fan-out: 456 ns → 87 ns "
        "per child (tokio-util 56 ns). loom: all models pass, a new one covers the callback "
        "hand-over, and skipping a needed notify makes loom report the deadlock.")
    out.append(
        "- **A finishing job no longer enters the kernel when nobody joins it blocking** "
        "(`job.rs`, invariant 6): one futex system call (about 190 ns here) less per awaited "
        "job, under 1% of a round trip.")
    out.append(
        "- **The fields a cancel stores sit together** (`state.rs`, `repr(C)`): the reason "
        "right after the lock word, next to the flag, and a child's slot in four bytes. Busy "
        "cancel-to-observe median 534 ns → 337, 363 and 369 ns in three runs (floor "
        "262–288 ns); the token's `Arc` allocation back to 112 bytes (the handle count "
        "added for splicing had made it 120, and the idle child 1.06x tokio-util's).")
    out.append(
        "- **Splicing kept off the cancel walk** (`state/tree.rs`): when the walk began "
        "releasing each cancelled child's parent link, fan-out per child went from "
        "0.79–0.88x tokio-util's to 1.02–1.20x (three runs each); not rewriting a cancelled "
        "child's stale slot, the layout above, and letting a leaf unlink in its `Drop` "
        "(through `Mutex::get_mut`) brought it to 0.84–1.01x, and `child()` create+drop from "
        "1.3–1.6x to 0.96–1.05x. What is left is atomics: a child costs an upgrade of its "
        "`Weak`, its lock and unlock, the release of its parent link, and the drops of the "
        "`Arc` and the `Weak` (tokio-util holds children strongly and skips the upgrade, and "
        "pays a `Notify` per child instead).")
    out.append(
        "- **`cancel_all` frees almost nothing while it walks** (`state/registry.rs`, "
        "`job.rs`): a token's callbacks are a sorted `VecDeque` (a `BTreeMap` allocated an "
        "eleven-entry node for the first), and a job's own cancel hook is a `Weak` in that "
        "list instead of a boxed closure holding one. The 20,000 / 1,000 per-job ratio went "
        "from 1.50x (and 1.81x in a full run) to 1.31x with the first change and 1.22–1.37x "
        "with both; with fast bins off (`GLIBC_TUNABLES=glibc.malloc.mxfast=0`), before the "
        "second change, it was 1.24x, which is what showed where the rest went.")
    out.append(
        "- **No drain of an empty registry** (`state.rs`, `job.rs`). A seal and a token's drop "
        "each took out and drained two empty registries (callbacks and wakers), about 170 "
        "instructions each, and every cancelled child drained an empty waker registry. Counted "
        "with callgrind over 20,000 tokio round trips in a scratch crate that depends on both "
        "trees (what `against.py` now builds): 4,446 instructions per job → 4,146, and 4,094 once a plain job also "
        "published its result in the critical section of its finish that follows the seal (raw "
        "`spawn_blocking`: 2,982; the core before its second pass: 4,168). The same crate's "
        "paired round trips (5,000 rounds of 16 before, 10,000 after, the two cores and "
        "the raw primitive in rotation), new core / old core: tokio 1.017–1.025 → 1.008–1.016, smol 1.018–1.029 → "
        "1.012–1.018. Fan-out per child, in the paired rounds of `tree_paired`'s method: "
        "0.97–1.00x tokio-util's → 0.89–0.90x.")
    out.append(
        "- **A plain job's token seals without its lock** (`state.rs`, the bare state): a "
        "root that nothing was ever attached to seals with one compare-exchange of its flag. "
        "With the seal removed outright (a measurement only: it breaks the guarantee), tokio "
        "new core / old core was 0.995–1.002 in six runs of the scratch crate above, against "
        "1.007–1.020 with the locked seal; with the compare-exchange, 1.001–1.009. With "
        "`against.py 83b3fe5` (the core before its second pass), after every change above: "
        "tokio 0.994–1.005, smol 1.012–1.016 in three runs of 5,000 rounds (quartiles about "
        "±3% around each).")
    out.append(
        "- **A job's state in the order a round trip touches it** (`job.rs`, `repr(C)`): the "
        "lock word, the waker, the flags and the registration lists first, the stage (the "
        "closure's captures, then the result) after them, what only a cancel or an abandon "
        "touches last; no byte more per job. `against.py` against the commit before: tokio "
        "0.986–0.992, smol 0.997–0.998 in three runs (against its own revision the script reads "
        "0.995–1.002).")
    out.append(
        "- **The spawning thread frees the tokio task it allocated** (`tethered-tokio`, "
        "`stash.rs`): `TokioSpawner` dropped each task's `JoinHandle` at once, so the pool "
        "thread held the task last and freed it, and glibc takes a free of another thread's "
        "chunk into that thread's arena under its lock, where the spawning thread's next "
        "allocations sort and merge it. Found by profiling 2,000-job batches with `perf` "
        "against a floor of `spawn_blocking` plus two `Arc`s of a job's sizes (allocator "
        "samples: tethered 21% of its user time, the floor 13%, the floor with its "
        "`JoinHandle` dropped at once 22%). The spawning thread now keeps the handles and drops "
        "the finished ones in sweeps. Tethered / `spawn_blocking` here: 1.11–1.15 → "
        "1.07–1.08. `against.py --concurrent` against the commit before: 0.94–0.99 in eight "
        "runs of 300 batches over an hour (a first version and the kept one, which read "
        "0.999–1.006 against each other); the round trip unchanged (0.998–1.006).")
    out.append(
        "- Tried, not kept: the pool thread letting go of its reference to the job before it "
        "wakes the handle, so that the awaiting thread frees what it allocated: 0.997–1.001 "
        "against the commit before, no change.")
    out.append(
        "- Tried, not kept: the handle count first in the token, beside the `Arc`'s counts "
        "(a clone or drop of a handle touches both): round trip unchanged within noise, busy "
        "latency 325–339 → 423–466 ns, as it pushed the reason off the flag's cache line.")
    out.append(
        "- Tried for the busy-poll latency, not kept (medians; the floor itself moved by "
        "±30 ns between runs): (1) a 64-byte gap before the token's flag, away from its lock "
        "word: 456 → 447 ns, no change. (2) 64-byte gaps on both sides of the flag, so that "
        "no neighbouring allocation shares its line either (128 more bytes per token): "
        "`source_cancel` 382 → 314 and 411 → 339 ns in two runs, the handle's drop path "
        "unchanged within noise. (3) A lock-free finished check in the handle's drop (an "
        "atomic mirror of the job's stage): tethered minus floor 206–216 ns against "
        "214–218 ns, no change. (4) Handing the closure the token made on the spawning "
        "thread instead of cloning it on the pool thread: no change. None of them moved the "
        "handle's drop path clearly enough to pay for its memory or its extra state.")
    out.append(
        "- **A job's thread serves the next job** (`thread_spawner.rs`): `ThreadSpawner`, "
        "where an unplaced job of the core or of tethered-pyo3 runs, keeps a thread whose job "
        "returned for 5 s and hands it the next job that would get the same name and stack "
        "size. pyo3, one short call awaited after another: 121 µs → 104 µs per call "
        "(`asyncio.to_thread` 72–73 µs in both runs, so 1.69x → 1.42x). On threads, a job "
        "now allocates fewer times than `std::thread::spawn` (section 5).")
    out.append(
        "- **tethered-pyo3 delivers from the closure's thread** (`delivery.rs`): the thread "
        "that has just run the closure hands the outcome to the loop itself; only a job that a "
        "cancel on another thread finished still goes through the delivery thread. One hop "
        "less: 104 µs → 85 µs per call in the same pairing (1.42x → 1.15x `to_thread`).")
    out.append(
        "- **tethered-tower registers only for a handler still running** (`future.rs`, "
        "`deadline.rs`): the response future looks at the request's token with one load, polls "
        "the handler, and registers a waker only if the handler is still pending; "
        "`grpc-timeout` is looked up by a `HeaderName` made once instead of a `&str` parsed "
        "per request. callgrind over the `tower` case (128 requests per side): 5,528,470 → "
        "5,464,377 instructions, about 500 per request, of the layer's 2,900.")
    out.append(
        "- **A thread between jobs watches for the next before it sleeps** (`spin.rs`, "
        "`bridge::spin_until`): `ThreadSpawner`'s kept threads (where tethered-pyo3's jobs "
        "run), tethered-napi's pool workers and tethered-process's pool seats spin for 50 µs "
        "(`bridge::SPIN`), reading a flag the handing thread sets, before they sleep. "
        "A sleeping thread cost each call of a sequential await loop a wake-up: a futex call, "
        "a context switch and, on an idle CPU of this virtual machine (its guest halt-polling "
        "is off: `guest_halt_poll_ns` 0), the CPU's own wake-up, 20–56 µs in `perf sched`. "
        "Each side alone in its own process, 3 × 3,000 (Python) or 3 × 5,000 (Node) calls "
        "awaited one after another, before → after: a pyo3 call 106–142 µs → 22–83 µs "
        "(`asyncio.to_thread` 94–162 µs, `run_in_executor` 100–118 µs, pyo3-async-runtimes "
        "167–193 µs), a napi call 39–85 µs → 5–12 µs (`AsyncTask` 31–58 µs); and less CPU "
        "time than the peer for the same calls (`/usr/bin/time`, user + system: pyo3 0.47 s "
        "against `to_thread`'s 0.97 s, napi 0.31 s against `AsyncTask`'s 0.49 s), as the "
        "spin costs less than the system calls and switches of a wake-up. A pool turn "
        "(`pool_turn`, paired): 71 µs, 1.42x the hand-written worker → 38–43 µs, "
        "0.85–0.90x in three runs. The cost: at most 50 µs of one core after the last job "
        "of a burst; a machine that runs one thread at a time does not spin. "
        "Found on the way: with the old, parking pool the paired napi rounds read the peer "
        "at 14 µs a call, which it never reached alone (31–58 µs): interleaved in one "
        "process the two pools changed where each other's wake-ups landed, and the ratio "
        "(4.6x) overstated what a user saw alone (1.0–1.9x). With the spin, paired and "
        "alone agree (`AsyncTask` 34–41 µs either way).")
    out.append(
        "- Tried for the 2,000 concurrent jobs, not kept: the handle reaching its token "
        "through its job instead of holding a clone (two fewer reference-count updates on each "
        "side of a job): `against.py --concurrent` 0.994–1.006 in three runs, no change.")
    out.append(
        "- **The token tree below tokio-util's cost** (`state/cancel.rs`, `state/tree.rs`, "
        "`state/token_ref.rs`), each step measured with `cargo bench -p benchmarks --bench "
        "tree_paired` and `--bench peers_paired -- child_` right after it (tethered / "
        "tokio-util, medians of the per-round ratios). (1) A leaf reached by its parent's "
        "cancel with nothing registered but waiters is cancelled in one critical section, "
        "with nothing owed after the first phase: fan-out per child of 1,000 1.33x → 0.92x, "
        "with a waiter on each child 1.34x → 0.93x (perf had shown the general path's "
        "bookkeeping, not its atomics, as the difference). (2) A new child's parent and slot "
        "are set through `&mut` before its parent lists it (its own lock was taken for that); "
        "a last handle whose `Arc` is the only one skips the splice's lock (an active child "
        "holds an `Arc` of its parent, so such a token has no child); a freed level is "
        "unlinked by address only while its entry is dead, instead of pinning its memory with "
        "a `Weak` (three reference-count updates on the parent per child drop): child create + "
        "drop 1.04x / 1.15x / 1.10x → 0.80x / 0.88x / 0.90x at 0 / 10,000 / 100,000 "
        "siblings. (3) A `ROOT` bit, set when a root is made, tells a child's own cancel that "
        "its parent has no ancestor, so it decides under its own lock alone; its sequence "
        "number is taken only when its walk goes on below it; a walk reaches children in the "
        "list they were taken out in instead of copying them onto its stack: fan-out per child "
        "of 10,000 and 100,000 1.04x / 1.06x → 0.91x / 0.87x, the storm 1.55–1.85x → "
        "1.05–1.30x. (4) A child's index in its parent's list is an atomic that the list's "
        "owner sets under its own lock (a sibling moved into a gap is told without its "
        "lock); a cancelled token with nothing below it cuts its link to the parent as it is "
        "cancelled and leaves the list in the second phase under the parent's lock alone; a "
        "walk's first phase hands what it takes out to the walk instead of returning it by "
        "value (a 136-byte move that the compiler had made a `memmove`): the storm → "
        "0.82–0.97x, the chain 0.89x, fan-out of one child 1.52x → 1.30x. Tried, not kept: "
        "the parent's lock taken with `try_lock` while the leaving child holds its own, so "
        "that it leaves in its cancel's critical section (storm 0.82–0.93x): loom 0.7 "
        "reports a false deadlock for `try_lock` (a known loom issue: a thread whose "
        "`try_lock` failed can stay marked as waiting), so the path could not be modelled, "
        "and (4) reaches the same without it.")
    out.append(
        "- **A cancel of a bare token tries its compare-exchange before reading its word** "
        "(`state/cancel.rs`). A cancel read the flag word, then compare-exchanged it: the read "
        "fetched the line that the closure polling the token holds, shared, and the exchange "
        "then took it back from that closure, two transfers of the line between cores where a "
        "bare flag's store makes one. A job's cancel (its handle, abort handle, deadline) and "
        "a drop guard's now try the bare token's exchange at once; a source's cancel does "
        "when a hint on the token's first line (`maybe_bare`, in what was padding, turned off "
        "for good when something is attached) says the token may be bare, so a tree's root "
        "or a child pays no failed exchange. Busy cancel-to-observe, tethered − `AtomicBool` "
        "(`busy_paired`, three alternating runs against the commit before): pool +84/+89/+91 "
        "→ +7/+11/+19 ns, thread +47/+64/+65 → −36/−24/−15 ns; a thread spinning on a bare "
        "source's token (4,000 alternating samples, by hand) 414–436 → 292–302 ns from the "
        "source's cancel to the spinning thread seeing it. A root with nothing registered but "
        "waiters is now decided in one critical section, without the general first phase's "
        "bookkeeping (ancestor look-up, finished check, links, what is owed): a cancel of a "
        "parent with one child 1.31x → 1.19–1.21x tokio-util (`tree_paired`, two alternating "
        "runs), callgrind 993 → 863 instructions; storms unchanged. loom: a model of a "
        "root's and its child's waiters against the root's cancel, whose negative control "
        "(`root_cancel_forgets_its_waiters`) loom reports as a deadlock, and one of a cancel "
        "with a cause against a drop guard's guess.\n")

    # Where the misses go (profiles and experiments by hand; not regenerated) ----------------
    out.append("## Where the misses go\n")
    out.append(
        "What each target missed in this file's tables costs, and why it stays: measured by "
        "hand on this machine (callgrind counts instructions; `perf sched` records when each "
        "thread was woken and when it ran); not regenerated by the command above.\n")
    out.append(
        "- **Check under contention**, met in the full runs since its change (0.95–0.98x; "
        "1.21x to 1.72x in the runs before the token's word moved to the end of its "
        "allocation, on a line the lock word never shares): "
        "the row moves with where its three busy threads land on 2 cores. The experiment that "
        "showed the cause: the lock alone on a 64-byte line (`repr(align(64))`), 1.64x → 1.06x; "
        "not kept, as a token would grow from 112 to 256 bytes.")
    out.append(
        "- **Allocations per job, +2**: the job (256 bytes here) and its token's state (112). "
        "One allocation means the token's state inside the job's allocation, so a token "
        "would point at a job-shaped allocation: a fat `Arc` (16-byte tokens) whose sized "
        "head is the state, for every token. That is a change of the token's representation "
        "in every crate, not done here. On threads a job now allocates less than "
        "`std::thread::spawn`, as a finished job's thread is reused.")
    out.append(
        "- **Busy cancel-to-observe**: before the bare token's guess (see above), around its "
        "target from run to run of the same code (tokio's pool; a thread): +46 and +20 ns in "
        "one full run, +61 and +51 ns in the next, +118 and +40, +85 and +68 ns in two runs of "
        "`busy_paired` alone; since, +7 to +20 ns and −36 to −11 ns in five runs of "
        "`busy_paired`. The independent harness that read +0.41–0.92 µs is not in this "
        "repository and could not be rerun; this bench takes both times on the two threads' "
        "own clocks, after warm-up, with the closure already spinning, and so measures only "
        "the cancel's path.")
    out.append(
        "- **2,000 concurrent jobs** (1.05–1.09x over runs): the floor (raw plus two `Arc`s "
        "of a job's sizes) / raw is 1.03–1.06x of it; tethered / floor 1.00–1.01x. The two "
        "allocations are most of it (see the allocation item). **20,000 jobs** (1.109x and "
        "1.112x in the last two full runs, 9.14 µs against 8.24 µs a job in one): the spread "
        "across runs (quartiles 1.01–3.0 in an earlier run, 1.03–1.33 and 0.99–1.13 in later "
        "ones) comes from tokio's blocking pool, which both sides grow "
        "(up to 512 threads): a round's time depends on how many threads the previous round "
        "left alive (10 s keep-alive).")
    out.append(
        "- **Parked cancel-to-observe** (met in the last two full runs; a median of 10.01 µs "
        "against the 10 µs target in an earlier one, its floor, a `Condvar` notify, 6.76 µs): "
        "the floor is this machine's wake-up "
        "of a parked thread, which moves between runs (1.1 µs to 6.8 µs in this file's "
        "history); tethered adds its lock and the reason's write before the same notify. "
        "The latency bench alone, three times right after that run: tethered / floor 1.09x, "
        "1.12x and 1.15x (medians 7.2, 3.9 and 7.7 µs against 6.7, 3.5 and 6.7 µs), as in "
        "the other full runs (1.09–1.11x); that run's 1.48x was not seen again.")
    out.append(
        "- **A cancel of a parent with one child** (1.30x after the tree work above, 1.19–1.21x "
        "since a root with only waiters is decided in one critical section, against 0.87–0.92x "
        "per child at 1,000 and more): what a cancel pays once, whatever its size. callgrind "
        "counts 863 instructions a cancel of a root and its child (tokio-util 440, of which "
        "about 110 are the free of its list of children, as ours), but the time is in the "
        "atomics: the sequence number (a process-wide "
        "`fetch_add`), the `DESCENDING` bit set and cleared (a compare-exchange) so that a "
        "concurrent cancel of the parent waits until the child reads cancelled, and the "
        "child's `Weak` upgraded and both counts dropped; tokio-util's cancel holds the "
        "parent's lock across its children instead and pays neither. **`any_of`** (3.5x, "
        "reported) registers on two parents.")
    out.append(
        "- **tower** (1.087–1.099x in the last runs, 1.046x and 1.049x in earlier ones): callgrind over the `tower` case, per request, the layer's part "
        "after this round's change: about 2,400 of the request's roughly 19,000 "
        "instructions (client and server). The largest pieces: the request's child token, "
        "created (about 210) and torn down at the body's end (about 720: it leaves the "
        "server token's list of children), the request token put in the request's extensions "
        "(a map insert and an allocation), and the inner future boxed (an allocation and a "
        "move). Reaching 1.02x means about 0.3 µs a request, which a token per request does "
        "not fit in. Tried, not kept: the inner future pinned in place (`pin-project-lite`) "
        "instead of boxed: 1.087x before, 1.095x and 1.099x after (`cargo bench -p benchmarks "
        "--bench peers_paired -- tower`), no gain for a future that is no longer `Unpin`.")
    out.append(
        "- **The bridges' CPU per call, and a loaded machine** (section 7's second table): "
        "napi's call costs 1.4–2.4x `AsyncTask`'s CPU on an idle machine (its wall time "
        "0.77–1.29x over runs). The spin between jobs is most of the CPU: the pool's worker "
        "spins through the JavaScript thread's part of each call, about the call's wall time "
        "of one core. But the spin off is no better: an addon built with the pool's spin at "
        "zero, three alternating runs each of 20,000 calls (`cpu.mjs --side=...`), read 46–51 "
        "µs wall and 37–41 µs CPU a call, against the spin's 24–31 µs and 35–43 µs and "
        "`AsyncTask`'s 23–30 µs and 17–24 µs. `perf stat` over one run of each: 2.4 context "
        "switches a call without the spin, 0.46 with it, 3.1 for `AsyncTask`, but 44 CPU "
        "migrations in 22,000 calls without the spin against `AsyncTask`'s 1,994: libuv's "
        "worker is woken onto the CPU the JavaScript thread is leaving, where a parked pool "
        "worker sleeps on a CPU of its own, and waking it wakes that CPU (on this virtual "
        "machine, most of the time `perf` finds in the kernel's switch paths). What the "
        "JavaScript thread itself spends beyond the peer (its promise and settle calls into "
        "the helpers, the driver and the thread-safe function's hand-back) is a few "
        "microseconds of it. On a loaded machine the rows read "
        "a mode more than a cost (see section 7): one build's pyo3 call read 554 µs in one run "
        "and 51–58 µs in eleven of twelve runs after it, `to_thread` 39–236 µs in one sitting. "
        "The spin is not what loses there. Tried, not kept: a spin that stays off while the "
        "machine has no spare core (`/proc/loadavg`'s count of ready threads against the "
        "cores, looked at every 10 ms) and ends once it finds it was preempted. Paired by hand "
        "(two busy processes, the two builds and `to_thread` alternating, 2 × 6 runs of 20,000 "
        "calls): pyo3 per call with the spin 51–94 µs (eleven runs of twelve at 51–58), "
        "without it 31–214 µs (ten of twelve at 84–214), `to_thread` 39–236 µs. A thread that "
        "parks between jobs costs each call a second wake-up, and on a loaded machine a "
        "wake-up may wait out a busy process's time slice; a spinning thread keeps its core "
        "from one call to the next. Tried before, also not kept: a `sched_yield` in the spin "
        "(pyo3 5.9x `to_thread` loaded: the yielded thread waits behind the busy processes, "
        "and the hand-over does not wake it). Tried as an experiment for napi, not kept: the "
        "job run on libuv's pool (napi async work), its outcome still handed back through the "
        "thread-safe function: three alternating runs read 29–46 µs wall and 25–38 µs CPU a "
        "call, against the spinning pool's 24–26 and 35–38 µs and `AsyncTask`'s 22–36 and "
        "18–27 µs: less CPU, more wall, as each call then makes two hand-backs to the loop "
        "(the async work's completion and the job's), where `AsyncTask` makes one. What is "
        "left for napi: a short job settled from the async work's own completion (one "
        "hand-back), with long jobs kept off libuv's four threads, which also serve the "
        "file system and DNS. The paired napi rows of section 7 (2.7–5.4x over runs) read "
        "something else: in them, `AsyncTask`'s call is three times as fast as alone. "
        "`peers.mjs` by hand with both sides `AsyncTask`: 26.6 and 25.5 µs a call; both "
        "tethered: 29.0 and 29.1 µs; tethered against `AsyncTask`, as the row runs: 26.0 and "
        "9.9 µs, and 72.8 and 8.3 µs with an addon whose pool does not spin. In place of "
        "tethered's batch, a JavaScript busy loop left `AsyncTask` at 53 µs and a "
        "`setImmediate` at 24.7 µs: what runs between its batches sets `AsyncTask`'s speed, "
        "and after tethered's it is fast (why was not pinned down; `strace` slows both sides "
        "to 500 µs and hides it). So the alone rows above, each side in a process of its "
        "own, are the comparison to read.")
    out.append(
        "- **Older targets**: `cancel_all` of 20,000 against 1,000 waiting jobs is explained "
        "where it is measured (section 6); tokio-util / tethered for a check (7.5–8.1x, goal "
        "10x) is tokio-util's own speed, as tethered's check is a bare flag's "
        "(0.93–1.00x).\n")

    # Assemble ------------------------------------------------------------------------------
    before, after = run_info["before"], run_info["after"]
    head = [
        "# Benchmarks",
        "",
        f"Regenerate with `{COMMAND}`: it builds the benchmarks, waits until no compiler "
        "runs and the CPUs are idle, runs `cargo bench -p benchmarks` (about three minutes), and "
        "rewrites this file; "
        f"`{COMMAND} --no-run` rewrites it from the last run's results). Generated from the "
        "results; do not edit by hand.",
        "",
        f"**Machine:** {m['cpu']}, {m['nproc']} cores (`nproc`), Linux {m['kernel']}, "
        f"{m['rustc']}. **Run:** {run_info['date']}, {run_info['seconds']} s. **Load:** "
        f"{before['cpu_busy'] * 100:.0f}% CPU busy and {before['compilers']} compiler "
        f"processes just before the run, {after['cpu_busy'] * 100:.0f}% and "
        f"{after['compilers']} right after (load average {after['loadavg'][0]:.2f}); this "
        "machine is shared, so absolute times are context, the side-by-side ratios are the "
        "result.",
        "",
        "## Targets",
        "",
        table(["comparison", "measured", "target", "verdict"], summary),
        "",
    ]
    OUTPUT.write_text("\n".join(head) + "\n" + "\n".join(out))
    print(f"wrote {OUTPUT}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-run", action="store_true",
                        help="only rewrite BENCHMARKS.md from the last run's results")
    parser.add_argument("--max-wait", type=int, default=900,
                        help="seconds to wait for a quiet machine before running anyway")
    parser.add_argument("--busy-limit", type=float, default=0.15,
                        help="CPU busy fraction below which the machine counts as quiet")
    args = parser.parse_args()
    if not args.no_run:
        run(args)
    write_report()


if __name__ == "__main__":
    main()
