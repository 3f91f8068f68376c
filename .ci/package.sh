#!/usr/bin/env bash
# Packages every publishable crate together, as `cargo publish` would upload them, and checks
# what each `.crate` holds:
# - it builds on its own: `cargo package` unpacks each `.crate` and builds it (here with every
#   feature), resolving the other workspace crates through a temporary local registry made of the
#   `.crate` files just packaged, so a crate that needs an unpackaged file or an unpublished
#   dependency fails here;
# - it carries its README and both licence files (the crates' LICENSE-* are symlinks to the files
#   at the repository root; `cargo package` stores the files they point to);
# - its published manifest names no workspace package that is never published (a test-only crate
#   such as tethered-test-support), as any kind of dependency: cargo drops dev-dependencies that
#   have no version, and this makes sure it did, and that no shipped test, example or bench
#   still uses one.
#
# The working tree need not be committed (`--allow-dirty`): this checks what the files make.
# `cargo publish` itself refuses a dirty tree.
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t crates < <(.ci/publishable.sh)
metadata=$(cargo metadata --no-deps --format-version 1 --offline)
mapfile -t unpublished < <(jq -r \
    '.packages[] | select(.publish != null and (.publish | length) == 0) | .name' <<<"$metadata")

# Cargo treats what comes from a registry as immutable, and the temporary registry holds our
# crates under an unchanged name and version: run after run, it would reuse the copy of the core
# it unpacked under $CARGO_HOME/registry/src/-<hash>/ and the core it compiled from that copy, and
# verify the adapters against the core of an earlier run. So: a target directory of its own,
# and before each run no trace of our crates in it, nor in those unpacked copies.
export CARGO_TARGET_DIR="${PACKAGE_TARGET_DIR:-target/package-check}"
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rm -rf "$CARGO_TARGET_DIR/package"
packages=()
for crate in "${crates[@]}"; do
    packages+=(-p "$crate")
    version=$(jq -r --arg n "$crate" '.packages[] | select(.name == $n) | .version' <<<"$metadata")
    rm -rf "$cargo_home"/registry/src/-*/"$crate-$version" \
        "$CARGO_TARGET_DIR"/debug/.fingerprint/"$crate"-*
done
echo "package: ${crates[*]}"
cargo package --locked --allow-dirty --all-features "${packages[@]}"

unpacked=$(mktemp -d)
trap 'rm -rf "$unpacked"' EXIT
failed=0
fail() {
    echo "package: $*" >&2
    failed=1
}
for crate in "${crates[@]}"; do
    version=$(jq -r --arg n "$crate" '.packages[] | select(.name == $n) | .version' <<<"$metadata")
    file="$CARGO_TARGET_DIR/package/$crate-$version.crate"
    [ -f "$file" ] || { fail "$crate: $file was not made"; continue; }
    tar -xzf "$file" -C "$unpacked"
    root="$unpacked/$crate-$version"

    # The published manifest, read without resolving anything (it lies outside the workspace).
    published=$(cargo metadata --no-deps --format-version 1 --offline \
        --manifest-path "$root/Cargo.toml")
    readme=$(jq -r '.packages[0].readme // empty' <<<"$published")
    if [ -z "$readme" ]; then
        fail "$crate: the published manifest names no readme"
    elif [ ! -s "$root/$readme" ]; then
        fail "$crate: $readme is not in $file"
    fi
    for licence in LICENSE-MIT LICENSE-APACHE; do
        if ! cmp -s "$root/$licence" "$licence"; then
            fail "$crate: $licence missing from $file or not the repository's" \
                "(add it: ln -s ../../$licence crates/<dir>/$licence)"
        fi
    done

    deps=$(jq -r '.packages[0].dependencies[] | "\(.name) \(.kind // "normal")"' <<<"$published")
    for name in "${unpublished[@]}"; do
        while read -r dep kind; do
            if [ "$dep" = "$name" ]; then
                fail "$crate: the published manifest depends on $name ($kind)," \
                    "which is never published"
            fi
        done <<<"$deps"
    done
    # Nor may a shipped test, example or bench use one (it could not build from the package).
    for name in "${unpublished[@]}"; do
        lib=${name//-/_}
        users=$(grep -rlE "\b$lib::|\buse $lib\b|extern crate $lib\b" \
            "$root"/{tests,examples,benches} 2>/dev/null || true)
        if [ -n "$users" ]; then
            fail "$crate: shipped files use $name, which is never published" \
                "(exclude them from the package):" "$(tr '\n' ' ' <<<"${users//$root\//}")"
        fi
    done
    echo "package: $crate $version: $(tar -tzf "$file" | wc -l) files," \
        "$(du -k "$file" | cut -f1) KiB; dependencies: $(cut -d' ' -f1 <<<"$deps" | sort -u |
            paste -sd' ' -)"
done
exit "$failed"
