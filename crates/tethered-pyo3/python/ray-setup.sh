#!/usr/bin/env bash
# Makes the environment of tethered-pyo3's Ray suite (tests/ray): target/ray-venv, a
# virtualenv of python3 (one interpreter: the suite starts a Ray cluster, which takes a
# machine's memory for a while) with requirements.txt, ray-requirements.txt (Ray, pinned) and
# the example module's wheel, which setup.sh builds.
#
# Where Ray cannot be installed (no wheel for this Python or platform, no registry), it writes
# the reason to target/ray-venv.unavailable and exits 0: the suite's runner reports the suite
# as skipped, with that reason, rather than passing it silently.
#
# Idempotent: Ray is installed again only when a requirements file changed.
# Run from anywhere:   crates/tethered-pyo3/python/ray-setup.sh
# Then:                target/ray-venv/bin/python -m pytest crates/tethered-pyo3/tests/ray
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
venv="$root/target/ray-venv"
python=${PYTHON:-python3}
unavailable="$root/target/ray-venv.unavailable"
rm -f "$unavailable"

# The example module's wheel (target/py-wheels), and the matrix beside it.
bash "$here/setup.sh" >/dev/null

want=$("$python" -c 'import sys; print(sys.version.split()[0])')
if [ "$("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)" != "$want" ]; then
    echo "ray-setup.sh: creating $venv with Python $want"
    rm -rf "$venv"
    "$python" -m venv "$venv"
fi
stamp="$venv/.tethered-requirements"
if ! cat "$here/requirements.txt" "$here/ray-requirements.txt" | cmp -s - "$stamp"; then
    echo "ray-setup.sh: installing requirements.txt and ray-requirements.txt into $venv"
    if ! log=$("$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        -r "$here/requirements.txt" -r "$here/ray-requirements.txt" 2>&1); then
        reason=$(printf '%s\n' "$log" | grep -m1 -E 'ERROR|error' || printf '%s\n' "$log" | tail -1)
        echo "pip could not install Ray $(grep -m1 '^ray==' "$here/ray-requirements.txt") on CPython $want ($(uname -sm)): $reason" > "$unavailable"
        echo "ray-setup.sh: $(cat "$unavailable")"
        exit 0
    fi
    cat "$here/requirements.txt" "$here/ray-requirements.txt" > "$stamp"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    --force-reinstall --no-deps "$root"/target/py-wheels/*.whl
echo "ray-setup.sh: Ray $("$venv/bin/python" -c 'import ray; print(ray.__version__)') on CPython $want in $venv"
