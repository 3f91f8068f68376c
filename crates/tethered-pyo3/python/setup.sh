#!/usr/bin/env bash
# Makes the Python environment of tethered-pyo3's tests and example: a virtualenv under
# target/py-venv with the pinned packages of requirements.txt, and the example extension
# module (examples/python/ext) built with maturin and installed into it.
#
# Idempotent: the packages are installed again only when requirements.txt changed, and the
# module is rebuilt incrementally. Needs python3 (3.11+, with venv and pip) and cargo.
# Run from anywhere:   crates/tethered-pyo3/python/setup.sh
# Then:                target/py-venv/bin/python -m pytest crates/tethered-pyo3/tests/python
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
venv="$root/target/py-venv"
python=${PYTHON:-python3}

if ! "$venv/bin/python" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
    echo "setup.sh: creating $venv with $("$python" --version 2>&1)"
    rm -rf "$venv"
    "$python" -m venv "$venv"
fi

stamp="$venv/.tethered-requirements"
if ! cmp -s "$here/requirements.txt" "$stamp"; then
    echo "setup.sh: installing $here/requirements.txt"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$here/requirements.txt"
    cp "$here/requirements.txt" "$stamp"
fi

# A target dir of its own: this script runs inside `cargo test`, which holds the lock of the
# workspace's main one. maturin builds an extension module (no libpython link).
echo "setup.sh: building examples/python/ext with maturin"
CARGO_TARGET_DIR="$root/target/pyo3" VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" \
    "$venv/bin/maturin" develop --quiet --locked \
    --manifest-path "$root/examples/python/ext/Cargo.toml"
