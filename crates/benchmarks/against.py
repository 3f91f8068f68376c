#!/usr/bin/env python3
"""Paired round trips of this tree's core against the core at another git revision.

    python3 crates/benchmarks/against.py REVISION [--rounds N] [--runs K]

`round_trip_paired` compares tethered with the raw primitive; whether a change made a round
trip dearer is a comparison of two versions of tethered, and across runs the machine drifts by
more than such a change. This script checks REVISION out into a temporary worktree (under
target/against/), gives its crates another version number there so that both versions can be
dependencies of one crate, builds the scratch crate `against/main.rs` against both, and runs it
K times: each of N rounds times a batch of 16 round trips of the raw primitive, REVISION's
adapter and this tree's, in rotation (tokio's `spawn_blocking`, then smol's `unblock`). It
prints the median and quartiles of other/raw, this/raw and this/other. The worktree is removed
afterwards; nothing in the repository changes.

With --cancelled, each round trip's job spins until its token reads cancelled, and the caller
cancels it (`Tethered::cancel`) once it runs, then awaits it (the raw primitive: a flag the
closure polls): the path on which a cancel reaches running work, which the core records for
`cancel_stats()` and the stubborn jobs.

With --concurrent, each round instead times a batch of 2,000 tokio jobs spawned at once from a
task on a multi-thread runtime and then awaited, as `concurrent_paired` does: the load in which
a job's cross-thread traffic (its locks, counts and reference counts) shows most. Its rounds
last milliseconds, so --rounds defaults to 300 there.

The harness calls `tethered_tokio::spawn_native` and `tethered_smol::spawn_native`, so
REVISION must have both (every revision since the adapters landed does).
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
OUT = ROOT / "target" / "against"
# The other revision's crates get this version, so that both versions can be resolved side by
# side (cargo refuses two path packages with one name and one version in a lockfile).
OTHER_VERSION = "0.0.0-against"


def run(*args, **kwargs):
    print("+", " ".join(str(a) for a in args), file=sys.stderr)
    return subprocess.run(args, check=True, **kwargs)


def workspace_version(manifest):
    text = manifest.read_text()
    section = re.search(r"^\[workspace\.package\]\n(.*?)(?=^\[)", text, re.S | re.M)
    if not section:
        sys.exit(f"{manifest}: no [workspace.package] section")
    version = re.search(r'^version = "([^"]+)"', section.group(1), re.M)
    if not version:
        sys.exit(f"{manifest}: no version in [workspace.package]")
    return version.group(1)


def renumber(tree):
    """Gives every crate of `tree` the version OTHER_VERSION, and its path dependencies too.

    Only a line that sets a package's own version (`version = "..."` alone) or names a path
    dependency is rewritten: a registry dependency that happens to have the same version
    keeps it.
    """
    old = workspace_version(tree / "Cargo.toml")
    # A path dependency may ask for the exact version (`=0.1.0`, as the family asks for its
    # core's): the `=` stays.
    pattern = re.compile(rf'\bversion = "(=?){re.escape(old)}"')
    for manifest in [tree / "Cargo.toml", *tree.glob("crates/*/Cargo.toml")]:
        lines = manifest.read_text().splitlines(keepends=True)
        for i, line in enumerate(lines):
            if line.startswith("version = ") or "path = " in line:
                lines[i] = pattern.sub(rf'version = "\g<1>{OTHER_VERSION}"', line)
        manifest.write_text("".join(lines))


def harness_manifest(tree):
    def crate(path):
        return str(path).replace("\\", "\\\\")

    return f"""[package]
name = "tethered-against"
version = "0.0.0"
edition = "2024"
publish = false

[[bin]]
name = "against"
path = "{crate(HERE / "against" / "main.rs")}"

[dependencies]
this_tokio = {{ package = "tethered-tokio", path = "{crate(ROOT / "crates/tethered-tokio")}" }}
this_smol = {{ package = "tethered-smol", path = "{crate(ROOT / "crates/tethered-smol")}" }}
other_tokio = {{ package = "tethered-tokio", path = "{crate(tree / "crates/tethered-tokio")}" }}
other_smol = {{ package = "tethered-smol", path = "{crate(tree / "crates/tethered-smol")}" }}
this_core = {{ package = "tethered", path = "{crate(ROOT / "crates/tethered")}" }}
other_core = {{ package = "tethered", path = "{crate(tree / "crates/tethered")}" }}
tokio = {{ version = "1.47", features = ["rt", "rt-multi-thread"] }}
blocking = "1.6.2"
futures-lite = "2.6"

# Not a member of the repository's workspace.
[workspace]
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("revision", help="the git revision to compare against, e.g. HEAD~3")
    parser.add_argument("--rounds", type=int, help="rounds per run (5000; 300 with --concurrent)")
    parser.add_argument("--runs", type=int, default=3, help="runs (3)")
    parser.add_argument("--concurrent", action="store_true",
                        help="batches of 2,000 concurrent tokio jobs instead of round trips")
    parser.add_argument("--cancelled", action="store_true",
                        help="round trips of a job cancelled while it runs")
    args = parser.parse_args()
    if args.rounds is None:
        args.rounds = 300 if args.concurrent else 5000
    if args.rounds < 1 or args.runs < 1:
        sys.exit("--rounds and --runs must be at least 1")

    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--short", f"{args.revision}^{{commit}}"],
        capture_output=True, text=True)
    if commit.returncode != 0:
        sys.exit(f"not a revision of this repository: {args.revision}")
    commit = commit.stdout.strip()

    tree = OUT / f"tree-{commit}"
    harness = OUT / "harness"
    if tree.exists():
        run("git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree))
    OUT.mkdir(parents=True, exist_ok=True)
    run("git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet", str(tree), commit)
    try:
        renumber(tree)
        if harness.exists():
            shutil.rmtree(harness)
        harness.mkdir()
        (harness / "Cargo.toml").write_text(harness_manifest(tree))
        # The repository's lockfile pins the shared dependencies; cargo adds what is missing.
        shutil.copy(ROOT / "Cargo.lock", harness / "Cargo.lock")
        env = {**os.environ, "CARGO_TARGET_DIR": str(OUT / "target")}
        run("cargo", "build", "--release", "--quiet", "--manifest-path",
            str(harness / "Cargo.toml"), env=env)
        binary = OUT / "target" / "release" / "against"
        mode = ["concurrent"] if args.concurrent else ["cancelled"] if args.cancelled else []
        unit = ("batches of 2,000 concurrent jobs" if args.concurrent
                else "rounds of 16 cancelled jobs" if args.cancelled else "rounds of 16")
        print(f"this tree against {commit} ({args.revision}), {args.rounds} {unit} per run")
        for _ in range(args.runs):
            run(str(binary), str(args.rounds), *mode)
    finally:
        run("git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree))


if __name__ == "__main__":
    main()
