#!/usr/bin/env bash
# Prints the name of every workspace package that can be published (its manifest does not say
# `publish = false`), one a line, in the order `cargo metadata` lists them. New crates under
# `crates/` are picked up without editing any script.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v jq >/dev/null; then
    "$(dirname "$0")/apt-install.sh" jq
fi

# `publish` is null when unrestricted and a list of allowed registries otherwise; `publish = false`
# is the empty list.
cargo metadata --no-deps --format-version 1 --offline |
    jq -r '.packages[] | select(.publish == null or (.publish | length) > 0) | .name'
