#!/usr/bin/env bash
# Runs the test binaries of the core and the runtime adapters under valgrind's memcheck and fails
# on a definite or indirect leak (an `Arc` cycle between tokens, children, jobs and scopes would
# pass every test and still show here), on an invalid read or write, on a use of uninitialised
# memory, or on a test that fails under valgrind.
#
# Environment:
#   MEMCHECK_PACKAGES        the packages whose test binaries run (default: the core and the
#                            three runtime adapters).
#   MEMCHECK_SKIP_BINARIES   test binaries (target names) not run here (default: soak; see below).
#   MEMCHECK_SKIP_TESTS      single tests not run here, as package/binary::test (default: the
#                            four below). An entry that names no test fails the step.
#
# - The binaries are built by `cargo test -p <each package> --all-features --no-run` (in the
#   default target directory, beside the test step's). Doc-tests are not run under valgrind.
# - Each binary runs with `--test-threads=1`: valgrind runs one thread at a time anyway, so
#   parallel tests gain nothing, and one at a time the order is stable and an error's stack
#   belongs to one test. `--fair-sched=yes` hands the CPU round-robin, so a test thread waiting
#   for a closure that spins on its token is not starved by it.
# - The `soak` binaries are skipped: every other assertion of theirs holds under valgrind, but
#   each ends by asserting the process burns under 5% of a core in the 500 ms after 10,000 jobs,
#   which a 20-50x slowdown breaks (measured 16-20% under valgrind, every closure returned).
# - Five tests are skipped (MEMCHECK_SKIP_TESTS):
#   - tethered/tree: the three million-level chains take about 100 s each under valgrind; the
#     other tree tests (a fan-out of 1,000 children and their grandchildren, 10,000 dead
#     children, splicing under concurrent churn) run.
#   - tethered/panics: two tests make a panic payload whose own drop panics. The core leaks such
#     a payload on purpose (`contain::drop_payload` forgets it: dropping it again could panic
#     forever) and counts it in `stats().leaked_payloads`, which the tests assert. valgrind
#     reports each as a definite leak of 16 bytes, made by std's panic machinery inside
#     `drop_payload`. It is our own deliberate leak, so it is not suppressed: the tests that make
#     it are left to the main test step, and any other leak still fails here.
# - RUST_BACKTRACE=0: the tests panic on purpose; symbolising those backtraces under valgrind is
#   slow and only fills std's (reachable) symbol cache.
# - Suppressions: .ci/memcheck/tethered.supp, each entry with the reason it is not our bug.
# - A canary (.ci/memcheck/canary.rs, a leaked `Arc` cycle) must be reported first, so a
#   valgrind that sees nothing cannot pass the step.
set -euo pipefail
cd "$(dirname "$0")/.."

read -r -a packages <<<"${MEMCHECK_PACKAGES:-tethered tethered-tokio tethered-smol tethered-async-std}"
skip_binaries=" ${MEMCHECK_SKIP_BINARIES-soak} "
default_skip_tests="tethered/tree::a_million_level_chain_cancels_on_a_default_stack
tethered/tree::a_million_level_chain_comes_apart_from_either_end_without_a_cancel
tethered/tree::a_million_level_chain_held_by_its_leaf_drops_on_a_default_stack
tethered/panics::a_callback_panicking_with_a_payload_that_panics_on_drop_is_contained
tethered/panics::a_cancel_guard_dropped_during_unwinding_does_not_abort"
read -r -d '' -a skip_tests <<<"${MEMCHECK_SKIP_TESTS-$default_skip_tests}" || true

missing=()
command -v valgrind >/dev/null || missing+=(valgrind)
command -v jq >/dev/null || missing+=(jq)
if [ "${#missing[@]}" -gt 0 ]; then
    .ci/apt-install.sh "${missing[@]}"
fi
valgrind --version

out=target/memcheck
rm -rf "$out"
mkdir -p "$out"
exit_on_error=86
# shellcheck disable=SC2054 # the commas belong to valgrind's option values
valgrind=(valgrind --tool=memcheck --leak-check=full
    --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect
    --error-exitcode="$exit_on_error" --fair-sched=yes --child-silent-after-fork=yes
    --num-callers=40 --suppressions=.ci/memcheck/tethered.supp --gen-suppressions=all)

# The canary: valgrind must report its leak.
rustc --edition 2024 -g -o "$out/canary" .ci/memcheck/canary.rs
if "${valgrind[@]}" --log-file="$out/canary.valgrind" "$out/canary" >/dev/null; then
    echo "memcheck: the canary's leaked cycle was not reported; valgrind sees nothing" >&2
    cat "$out/canary.valgrind" >&2
    exit 1
fi
grep -q 'definitely lost: [1-9]' "$out/canary.valgrind" ||
    { echo "memcheck: the canary failed without a definite leak" >&2; cat "$out/canary.valgrind" >&2; exit 1; }
echo "memcheck: canary: $(grep -o 'definitely lost: .*' "$out/canary.valgrind") (as planted)"

# Manifest path -> package name, for the packages asked for.
metadata=$(cargo metadata --no-deps --format-version 1 --offline)
manifests=$(jq -c --arg pkgs "${packages[*]}" \
    '[.packages[] | select(.name as $n | $pkgs | split(" ") | index($n)) |
      {key: .manifest_path, value: .name}] | from_entries' <<<"$metadata")
found=$(jq -r 'length' <<<"$manifests")
[ "$found" -eq "${#packages[@]}" ] ||
    { echo "memcheck: not every package of '${packages[*]}' is in the workspace" >&2; exit 1; }

selection=()
for package in "${packages[@]}"; do
    selection+=(-p "$package")
done
cargo test "${selection[@]}" --all-features --no-run --message-format=json-render-diagnostics \
    >"$out/artifacts.json"
mapfile -t binaries < <(jq -r --argjson m "$manifests" '
    select(.reason == "compiler-artifact" and .executable != null and .profile.test)
    | select($m[.manifest_path] != null)
    | "\($m[.manifest_path]) \(.target.name) \(.executable)"' "$out/artifacts.json" | sort)

failed=() ran=0
for line in "${binaries[@]}"; do
    read -r package name executable <<<"$line"
    if [[ "$skip_binaries" == *" $name "* ]]; then
        echo "memcheck: $package/$name: skipped (MEMCHECK_SKIP_BINARIES)"
        continue
    fi
    log="$out/$package-$name"
    ran=$((ran + 1))
    skips=()
    for entry in "${skip_tests[@]}"; do
        [[ "$entry" == "$package/$name::"* ]] || continue
        test_name=${entry#"$package/$name::"}
        listed=$("$executable" --list --exact "$test_name" 2>/dev/null || true)
        if ! grep -qx "$test_name: test" <<<"$listed"; then
            echo "memcheck: MEMCHECK_SKIP_TESTS names $entry, which $executable does not have" >&2
            failed+=("$package/$name")
            continue 2
        fi
        skips+=(--skip "$test_name")
        echo "memcheck: $package/$name: skipping $test_name (MEMCHECK_SKIP_TESTS)"
    done
    if [ "${#skips[@]}" -gt 0 ]; then
        skips+=(--exact)
    fi
    began=$SECONDS
    status=0
    RUST_BACKTRACE=0 timeout 900 "${valgrind[@]}" --log-file="$log.valgrind" \
        "$executable" --test-threads=1 "${skips[@]}" >"$log.out" 2>&1 || status=$?
    tests=$(grep -o '^test result: .*' "$log.out" | sed -e "s/^test result: //" -e "s/; [0-9]* measured.*//" || true)
    errors=$(grep -o 'ERROR SUMMARY: [0-9]* errors' "$log.valgrind" | grep -o '[0-9]*' || echo "?")
    lost=$(grep -o 'definitely lost: [0-9,]* bytes' "$log.valgrind" | grep -o '[0-9,]* bytes' ||
        echo "0 bytes")
    echo "memcheck: $package/$name: ${tests:-no test result}; $errors valgrind errors," \
        "definitely lost $lost ($((SECONDS - began))s)"
    if [ "$status" -ne 0 ]; then
        if [ "$status" -eq "$exit_on_error" ]; then
            echo "memcheck: $package/$name: valgrind found errors:" >&2
            cat "$log.valgrind" >&2
        else
            echo "memcheck: $package/$name: exit status $status under valgrind; the test output:" >&2
            tail -n 60 "$log.out" >&2
            tail -n 20 "$log.valgrind" >&2
        fi
        failed+=("$package/$name")
    fi
done

if [ "${#failed[@]}" -gt 0 ]; then
    echo "memcheck: failed: ${failed[*]} (logs in $out)" >&2
    exit 1
fi
echo "memcheck: $ran test binaries of ${packages[*]}: no definite or indirect leak, no memory error"
