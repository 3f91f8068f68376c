#!/usr/bin/env bash
# Makes examples/mcp-python/.venv: a virtualenv of python3 (3.10 or later; PYTHON=... picks
# another) with the pinned packages of requirements.txt (the official MCP SDK, pytest, maturin)
# and the example extension module `tethered_example` (examples/python/ext) built from this
# repository with maturin.
#
# Idempotent: the virtualenv is made again only when it is missing or of another Python, the
# packages installed again only when requirements.txt changed; the module is rebuilt
# incrementally (in target/pyo3, the target dir crates/tethered-pyo3/python/setup.sh uses too)
# and reinstalled on every run. Needs python3 (with venv and pip) and cargo.
# Run from anywhere:   examples/mcp-python/setup.sh
# Then:                examples/mcp-python/.venv/bin/python -m pytest -q examples/mcp-python
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
venv="$here/.venv"
python=${PYTHON:-python3}

if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 10))'; then
    echo "setup.sh: $python is $("$python" -V 2>&1); the example needs Python 3.10 or later" >&2
    exit 1
fi

want=$("$python" -c 'import sys; print(sys.version.split()[0])')
if [ "$("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)" != "$want" ]; then
    echo "setup.sh: creating $venv with Python $want"
    rm -rf "$venv"
    "$python" -m venv "$venv"
fi

stamp="$venv/.tethered-requirements"
if ! cmp -s "$here/requirements.txt" "$stamp"; then
    echo "setup.sh: installing requirements.txt into $venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$stamp"
fi

# An extension module (abi3, no libpython link) built into the virtualenv: `maturin develop`
# rebuilds what changed and installs it again.
echo "setup.sh: building examples/python/ext with maturin"
CARGO_TARGET_DIR="$root/target/pyo3" VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" \
    "$venv/bin/maturin" develop --quiet --locked \
    --manifest-path "$root/examples/python/ext/Cargo.toml"
"$venv/bin/python" -c 'import tethered_example; tethered_example.spin_seconds' \
    || { echo "setup.sh: tethered_example lacks spin_seconds" >&2; exit 1; }
echo "setup.sh: ready: $venv/bin/python $here/server.py"
