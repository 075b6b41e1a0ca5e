#!/usr/bin/env node
// `npm run sim`: sets up the simulated Metal in a checkout, for trying the live API and `exec` on Linux
// (docs/simulation.md). One command, each step said as it runs:
//
//   1. the toolchain (scripts/build/sim-toolchain.mjs): what is missing is one line naming the Debian packages and
//      the apt-get command, and exit 1, before anything else runs
//   2. npm's dependencies, with `npm ci`, when node_modules/ lacks them
//   3. dist/ with `npm run build`, when it does not match lib/ (scripts/build/source-stamp.mjs)
//   4. the native test build (scripts/build/build-sim.mjs, with its progress)
//   5. build/test/consumer, the program of docs/simulation.md's `exec` example, compiled against the simulated Metal
//      with test/sim-metal/flags as a third party would
//
// and at the end, the commands to try.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { missingLine, missingRequirements, repoRoot, simCflags, simLibs } from './sim-toolchain.mjs';

const label = 'npm run sim';
const say = (line) => process.stdout.write(`${label}: ${line}\n`);

/** Runs a command in the checkout; its output goes to ours when `show`, else is kept and printed only if it fails. */
function step(what, command, args, show) {
  say(what);
  const started = performance.now();
  const r = spawnSync(command, args, {
    cwd: repoRoot,
    stdio: show ? 'inherit' : ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
  });
  if (r.status !== 0) {
    if (!show) process.stderr.write(`${r.stdout ?? ''}${r.stderr ?? ''}`);
    process.stderr.write(
      `${label}: ${[command, ...args].join(' ')} failed (${r.error?.message ?? `exit ${r.status}`})\n`,
    );
    process.exit(1);
  }
  return ((performance.now() - started) / 1000).toFixed(1);
}

if (process.platform !== 'linux') {
  process.stderr.write(`${label}: the simulated Metal is the Linux test build; on macOS the real Metal is there\n`);
  process.exit(1);
}
const missing = missingRequirements();
if (missing.length > 0) {
  process.stderr.write(`${missingLine(missing, label)}\n`);
  process.exit(1);
}
const npm = 'npm';
if (!existsSync(path.join(repoRoot, 'node_modules', 'node-addon-api'))) {
  step('npm dependencies (npm ci)', npm, ['ci', '--no-audit', '--no-fund'], true);
}
const stamp = spawnSync(process.execPath, [path.join(repoRoot, 'scripts', 'build', 'source-stamp.mjs')], {
  stdio: 'ignore',
});
if (stamp.status !== 0) {
  const took = step('dist/ from lib/ (npm run build)', npm, ['run', '--silent', 'build'], false);
  say(`built dist/ in ${took}s`);
}
step(
  'the native test build (npm run build:sim)',
  process.execPath,
  [path.join(repoRoot, 'scripts', 'build', 'build-sim.mjs')],
  true,
);

const source = path.join(repoRoot, 'test', 'native', 'consumer.mm');
const consumer = path.join(repoRoot, 'build', 'test', 'consumer');
if (!existsSync(consumer) || statSync(consumer).mtimeMs <= statSync(source).mtimeMs) {
  mkdirSync(path.dirname(consumer), { recursive: true });
  const took = step(
    'build/test/consumer (test/native/consumer.mm, compiled with test/sim-metal/flags)',
    'clang++-14',
    [...simCflags(), source, '-o', consumer, ...simLibs()],
    false,
  );
  say(`built build/test/consumer in ${took}s`);
}

const vm = 'METAL_CAP_SHIM_SIM_SNAPSHOT=vz-guest-m1-ultra-tahoe-stock';
process.stdout.write(
  [
    `${label}: ready. Try, in this folder (docs/simulation.md says what each shows):`,
    `  ${vm} node dist/cli.js probe --short`,
    `  ${vm} build/test/consumer | grep -o '"1007":[a-z]*'`,
    `  ${vm} node dist/cli.js exec -- build/test/consumer | grep -o '"1007":[a-z]*'`,
    '',
  ].join('\n'),
);
