// `npm run build`: builds the native addon this server runs (../node/addon, on tethered-napi)
// with napi-rs's CLI, as .ci/node-package.sh does. The addon's own pinned dev dependencies (the
// CLI, TypeScript) are installed with `npm ci` only when they are missing or differ from its
// package-lock.json; then `npm run build` there (cargo builds incrementally) writes
// `tethered-napi-example.<platform>.node`, `index.js` and `index.d.ts`. Idempotent.
// Needs cargo (Rust 1.88 or later) and, for the first run, the npm registry.

import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import process from 'node:process';

const addon = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'node', 'addon');

function say(line) {
  process.stderr.write(`build: ${line}\n`);
}

/** Runs npm with `args` in the addon's folder; exits if it fails. */
function npm(args) {
  // Under `npm run`, npm_execpath is npm's own script: run it with this node, on any platform.
  const execPath = process.env.npm_execpath;
  const [command, argv] = execPath && /npm-cli\.c?js$/.test(execPath)
    ? [process.execPath, [execPath, ...args]]
    : [process.platform === 'win32' ? 'npm.cmd' : 'npm', args];
  say(`npm ${args.join(' ')} (in ${addon})`);
  const run = spawnSync(command, argv, { cwd: addon, stdio: 'inherit', shell: process.platform === 'win32' && command === 'npm.cmd' });
  if (run.status !== 0) {
    say(`npm ${args.join(' ')} failed (${run.error?.message ?? `exit ${run.status ?? run.signal}`})`);
    process.exit(1);
  }
}

/** The addon's dev dependencies that are not installed at the version its lock file pins. */
function missingDevDependencies() {
  const lock = JSON.parse(readFileSync(join(addon, 'package-lock.json'), 'utf8'));
  const wanted = Object.keys(lock.packages?.['']?.devDependencies ?? {});
  return wanted.filter((name) => {
    const pinned = lock.packages[`node_modules/${name}`]?.version;
    const manifest = join(addon, 'node_modules', name, 'package.json');
    if (!existsSync(manifest)) return true;
    return JSON.parse(readFileSync(manifest, 'utf8')).version !== pinned;
  });
}

const missing = missingDevDependencies();
if (missing.length > 0) {
  say(`the addon's dev dependencies to install: ${missing.join(', ')}`);
  npm(['ci', '--no-audit', '--no-fund', '--loglevel=error']);
  // The marker .ci/node-package.sh reads to skip `npm ci` when the lock file did not change.
  copyFileSync(join(addon, 'package-lock.json'), join(addon, 'node_modules', '.tethered-lock'));
} else {
  say("the addon's dev dependencies are installed");
}
npm(['run', 'build']);

// What the server needs of it.
const built = createRequire(import.meta.url)(addon);
for (const name of ['spin', 'stats', 'takeStops', 'nowNs']) {
  if (typeof built[name] !== 'function') {
    say(`the built addon has no ${name}()`);
    process.exit(1);
  }
}
say(`the addon is built: ${addon}`);
