#!/usr/bin/env bash
# The example addon as a JavaScript user gets it: built with napi-rs's CLI (its TypeScript
# declarations generated, tethered-napi's own prepended), the declarations checked by
# `tsc --noEmit` against a typed caller (examples/node/typed.ts), packed with `npm pack`, then
# installed in a fresh folder and run there with nothing but `node` on PATH (no Rust toolchain).
# Idempotent; needs node and npm (20 or later), cargo, and the npm registry for the first run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
addon="$root/examples/node/addon"
cd "$addon"

# The pinned CLI and TypeScript of package-lock.json, installed again only when it changed.
if ! cmp -s package-lock.json node_modules/.tethered-lock 2>/dev/null; then
    npm ci --no-audit --no-fund --loglevel=error
    cp package-lock.json node_modules/.tethered-lock
fi
npm run --silent build
echo "node-package: built $(ls ./*.node), index.js and index.d.ts"
npx --no-install tsc --noEmit -p ../tsconfig.json
echo "node-package: tsc --noEmit accepts examples/node/typed.ts"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
npm pack --pack-destination "$work" --loglevel=error >/dev/null
tarball=$(ls "$work"/*.tgz)
echo "node-package: packed $(basename "$tarball"): $(tar -tzf "$tarball" | tr '\n' ' ')"

mkdir "$work/fresh" "$work/bin"
cd "$work/fresh"
npm init -y >/dev/null
npm install --no-audit --no-fund --loglevel=error "$tarball"
# Nothing but node on PATH: no cargo, no rustc, no npm.
ln -s "$(command -v node)" "$work/bin/node"
if PATH="$work/bin" command -v cargo rustc >/dev/null 2>&1; then
    echo "node-package: a Rust toolchain is on the restricted PATH" >&2
    exit 1
fi
env -i HOME="$work" PATH="$work/bin" node -e '
const assert = require("node:assert/strict");
const addon = require("tethered-napi-example");
(async () => {
  assert.equal(await addon.add(40, 2), 42);
  const signal = AbortSignal.timeout(100);
  await assert.rejects(addon.spin(60_000, { signal }), (err) => {
    assert.equal(err.name, "AbortError");
    assert.equal(err.code, "ABORT_ERR");
    assert.equal(err.reason, "Timeout");
    assert.equal(err.cause, signal.reason);
    return true;
  });
  const deadline = Date.now() + 2000;
  while (addon.live() > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.equal(addon.live(), 0, "the aborted loop still runs");
  console.log("node-package: the installed package ran in a fresh folder without Rust:",
    JSON.stringify(addon.takeStops().map((stop) => stop.reason)));
})().catch((err) => { console.error(err); process.exit(1); });
'
