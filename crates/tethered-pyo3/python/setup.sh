#!/usr/bin/env bash
# Makes the Python environments of tethered-pyo3's tests and example:
#
# - target/py-venv: a virtualenv of python3 (the default interpreter) with the pinned packages
#   of requirements.txt and maturin, into which the example extension module
#   (examples/python/ext) is installed; what the example and a quick pytest run use;
# - target/py-wheels: that module built once as an abi3 wheel (CPython 3.10 and later);
# - target/py-matrix/<version>: a virtualenv per CPython 3.10+ found (python3 on PATH, and every
#   interpreter under pyenv's root), each with the pinned packages and the wheel; the list is
#   written to target/py-matrix/interpreters, one `version path` per line, and every
#   interpreter left out is said with its reason.
#
# Idempotent: packages are installed again only when requirements.txt changed, the module is
# rebuilt incrementally, the wheel reinstalled each run. Needs python3 (with venv and pip), cargo.
# Run from anywhere:   crates/tethered-pyo3/python/setup.sh
# Then:                target/py-venv/bin/python -m pytest crates/tethered-pyo3/tests/python
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
venv="$root/target/py-venv"
python=${PYTHON:-python3}
wheels="$root/target/py-wheels"
matrix="$root/target/py-matrix"

# Makes virtualenv $2 with interpreter $1 (again if it has another version), and installs the
# pinned packages when they changed.
make_venv() {
    local interpreter=$1 dir=$2
    local want
    want=$("$interpreter" -c 'import sys; print(sys.version.split()[0])')
    if [ "$("$dir/bin/python" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)" != "$want" ]; then
        echo "setup.sh: creating $dir with Python $want"
        rm -rf "$dir"
        "$interpreter" -m venv "$dir"
    fi
    local stamp="$dir/.tethered-requirements"
    if ! cmp -s "$here/requirements.txt" "$stamp"; then
        echo "setup.sh: installing requirements.txt into $dir"
        "$dir/bin/python" -m pip install --quiet --disable-pip-version-check \
            -r "$here/requirements.txt"
        cp "$here/requirements.txt" "$stamp"
    fi
}

make_venv "$python" "$venv"

# A target dir of its own: this script runs inside `cargo test`, which holds the lock of the
# workspace's main one. maturin builds an extension module (no libpython link), abi3 for 3.10+.
echo "setup.sh: building examples/python/ext with maturin"
CARGO_TARGET_DIR="$root/target/pyo3" VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" \
    "$venv/bin/maturin" develop --quiet --locked \
    --manifest-path "$root/examples/python/ext/Cargo.toml"
rm -rf "$wheels"
CARGO_TARGET_DIR="$root/target/pyo3" VIRTUAL_ENV="$venv" PATH="$venv/bin:$PATH" \
    "$venv/bin/maturin" build --quiet --locked --interpreter "$venv/bin/python" \
    --manifest-path "$root/examples/python/ext/Cargo.toml" --out "$wheels"
wheel=$(ls "$wheels"/*.whl)
case "$wheel" in
    *abi3*) ;;
    *) echo "setup.sh: $wheel is not an abi3 wheel" >&2; exit 1 ;;
esac

# Every CPython the machine has: python3 on PATH, and pyenv's.
candidates=("$(command -v "$python")")
pyenv_root=${PYENV_ROOT:-$HOME/.pyenv}
if command -v pyenv >/dev/null 2>&1; then
    pyenv_root=$(pyenv root)
fi
for found in "$pyenv_root"/versions/*/bin/python3; do
    [ -x "$found" ] && candidates+=("$found")
done

mkdir -p "$matrix"
list="$matrix/interpreters"
: > "$list.new"
seen=" "
for interpreter in "${candidates[@]}"; do
    info=$("$interpreter" -c 'import sys, platform; print(platform.python_implementation(), sys.version.split()[0], sys.version_info >= (3, 10))' 2>/dev/null) || {
        echo "setup.sh: $interpreter does not run, skipped"
        continue
    }
    read -r implementation version recent <<<"$info"
    if [ "$implementation" != CPython ]; then
        echo "setup.sh: $interpreter is $implementation $version, skipped (CPython only)"
        continue
    fi
    if [ "$recent" != True ]; then
        echo "setup.sh: CPython $version ($interpreter) is older than 3.10, skipped"
        continue
    fi
    case "$seen" in *" $version "*) continue ;; esac
    seen="$seen$version "
    if ! "$interpreter" -c 'import venv, ensurepip' 2>/dev/null; then
        echo "setup.sh: CPython $version ($interpreter) has no venv or ensurepip, skipped"
        continue
    fi
    make_venv "$interpreter" "$matrix/$version"
    "$matrix/$version/bin/python" -m pip install --quiet --disable-pip-version-check \
        --force-reinstall --no-deps "$wheel"
    echo "$version $matrix/$version/bin/python" >> "$list.new"
done
mv "$list.new" "$list"
echo "setup.sh: the matrix runs on: $(cut -d' ' -f1 "$list" | tr '\n' ' ')"
