#!/usr/bin/env bash
# Proves the declared `rust-version`: builds and tests every publishable crate with a real Rust of
# that version (Debian's rustc-web/cargo-web packages, under /usr/bin, beside the default
# toolchain), with the committed Cargo.lock.
#
# Environment:
#   MSRV_BUILD_ONLY  space-separated packages whose tests are built but not run here (default:
#                    tethered-pyo3, whose tests drive a pytest suite against an extension module
#                    built by the default toolchain; they run once, in the main test step).
#   MSRV_SKIP_INSTALL=1  fail instead of installing when /usr/bin/cargo is not the MSRV.
set -euo pipefail
cd "$(dirname "$0")/.."

# The workspace's `rust-version` (in `[workspace.package]`; the unpublished root package declares
# its own, for the examples).
msrv=$(awk '/^\[/ { section = $0 } section == "[workspace.package]" && /^rust-version = / { gsub(/"/, "", $3); print $3 }' Cargo.toml)
[ -n "$msrv" ] || { echo "msrv: no rust-version in the root Cargo.toml" >&2; exit 1; }
# The Debian version that carries this Rust; bump both together.
debian_version="1.85.0+dfsg3-1~deb12u3"
case "$debian_version" in
    "$msrv".*) ;;
    *) echo "msrv: Debian package $debian_version is not Rust $msrv; update msrv.sh" >&2; exit 1 ;;
esac

# (The version is read into a variable first: `... | grep -q` under pipefail fails when grep
# exits before the writer is done.)
is_msrv() {
    local version
    version=$("/usr/bin/$1" --version 2>/dev/null) || return 1
    [[ "$version" == "$1 $msrv."* ]]
}

if ! is_msrv cargo || ! is_msrv rustc; then
    if [ "${MSRV_SKIP_INSTALL:-0}" = 1 ]; then
        echo "msrv: /usr/bin/cargo is not Rust $msrv and MSRV_SKIP_INSTALL=1" >&2
        exit 1
    fi
    # --allow-downgrades: an upgrade of rustc-web (bookworm-security carries newer ones) is undone.
    .ci/apt-install.sh --allow-downgrades "rustc-web=$debian_version" \
        "cargo-web=$debian_version" "libstd-rust-web-dev=$debian_version" || {
        echo "msrv: could not install Rust $msrv ($debian_version) from Debian; if the" \
            "archive no longer carries that version, pick the one it has (apt-cache policy" \
            "rustc-web) and update msrv.sh, or raise rust-version honestly" >&2
        exit 1
    }
fi

mapfile -t publishable < <(.ci/publishable.sh)
build_only=" ${MSRV_BUILD_ONLY-tethered-pyo3} "

# A crate whose dependencies need a newer Rust declares its own `rust-version` (tethered-napi:
# napi 3 declares 1.88). It cannot build with this Rust; the test step builds and tests it with
# the default toolchain, which is at least what it declares. Say so here, with the version.
metadata=$(cargo metadata --no-deps --format-version 1 --offline)
crates=()
for crate in "${publishable[@]}"; do
    declared=$(jq -r --arg n "$crate" '.packages[] | select(.name == $n) | .rust_version // empty' \
        <<<"$metadata")
    if [ -n "$declared" ] && [ "$declared" != "$msrv" ] &&
        [ "$(printf '%s\n%s\n' "$msrv" "$declared" | sort -V | tail -n1)" = "$declared" ]; then
        echo "msrv: $crate declares Rust $declared (newer than $msrv, as its dependencies need):" \
            "left to the test step, which builds and tests it with $(rustc --version)"
        continue
    fi
    crates+=("$crate")
done

# rustup's proxies live earlier on PATH and would pick the default toolchain for `cargo`, `rustc`
# and `rustdoc` (also when cargo or a build script runs them by name): call the Debian binaries by
# absolute path, name them to cargo, drop rustup's overrides, and put links to exactly these three
# first on PATH (not all of /usr/bin, which would also swap the Python that pyo3's build finds).
unset RUSTUP_TOOLCHAIN RUSTC_WRAPPER RUSTC_WORKSPACE_WRAPPER CARGO_BUILD_RUSTC CARGO
export CARGO_TARGET_DIR=target/msrv
shims="$PWD/$CARGO_TARGET_DIR/bin"
mkdir -p "$shims"
for name in cargo rustc rustdoc; do
    ln -sfn "/usr/bin/$name" "$shims/$name"
done
export PATH="$shims:$PATH"
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
cargo=/usr/bin/cargo
for tool in "$cargo" "$RUSTC" "$RUSTDOC"; do
    version=$("$tool" --version)
    echo "$version"
    [[ "$version" == *" $msrv."* ]] || { echo "msrv: $tool is not Rust $msrv" >&2; exit 1; }
done
# And no rustup proxy answers for the names cargo and build scripts may run.
for name in cargo rustc rustdoc; do
    version=$("$name" --version)
    [[ "$version" == "$name $msrv."* ]] ||
        { echo "msrv: $name on PATH is $version, not Rust $msrv" >&2; exit 1; }
done

run=() build=()
for crate in "${crates[@]}"; do
    if [[ "$build_only" == *" $crate "* ]]; then
        build+=(-p "$crate")
    else
        run+=(-p "$crate")
    fi
done
echo "msrv: building and testing with Rust $msrv: ${crates[*]}"

# Two invocations, each building once what it needs: the crates whose tests run, and the
# build-only ones (built with all of them, the set would unify dependency features differently
# from the run's, and the run would build much of it again). Both always run; the step fails if
# either did.
status=0
if [ "${#run[@]}" -gt 0 ]; then
    # --no-fail-fast: one run names every test that fails on this Rust.
    $cargo test --locked --all-features --no-fail-fast "${run[@]}" || status=$?
fi
if [ "${#build[@]}" -gt 0 ]; then
    echo "msrv: tests built, not run (MSRV_BUILD_ONLY): ${build[*]}"
    $cargo test --locked --all-features --no-run "${build[@]}" || status=$?
fi
exit "$status"
