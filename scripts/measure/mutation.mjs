#!/usr/bin/env node
// `npm run test:mutation [-- stryker options]`: mutation testing of the core (stryker.config.mjs), then the score per
// file (scripts/measure/mutation-score.mjs), checked against its per-file minimums: exit 1 below them.
//
//   npm run test:mutation                                   every file in stryker.config.mjs `mutate`
//   npm run test:mutation -- --mutate lib/patch/plan.ts     one file
//   npm run test:mutation -- --mutate lib/patch/plan.ts --concurrency 1
//
// Stryker copies the worktree into a sandbox and runs the unit suite there, in-process against the simulated addon,
// so the TypeScript build (dist/, for the tests that spawn the CLI) and the simulated build (build/Release,
// build/sim-metal, build/test) must exist first: this script builds both (build:sim is incremental). Linux only: on
// macOS the suites that need the simulated Metal skip themselves, and their mutants would all survive.
// Reports: build/mutation/index.html and build/mutation/mutation.json. Not part of .ci/run (it takes far longer).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

function main(args) {
  if (process.platform !== 'linux') {
    process.stderr.write('test:mutation runs on Linux, against the simulated Metal (npm run build:sim)\n');
    return 2;
  }
  if (!args.includes('--skip-build')) {
    for (const step of ['build', 'build:sim']) {
      const status = run(npm, ['run', '--silent', step]);
      if (status !== 0) return status;
    }
  }
  const strykerArgs = args.filter((a) => a !== '--skip-build');
  const started = Date.now();
  const status = run(process.execPath, [
    path.join(root, 'node_modules', '@stryker-mutator', 'core', 'bin', 'stryker.js'),
    'run',
    ...strykerArgs,
  ]);
  const minutes = ((Date.now() - started) / 60000).toFixed(1);
  process.stdout.write(`\nstryker finished in ${minutes} min (exit ${status})\n`);
  const report = path.join(root, 'build', 'mutation', 'mutation.json');
  if (status === 0 && existsSync(report)) {
    // --check: the minimums (85 % per file, exec 75 %, 90 % for the files raised), so a run below them fails, here
    // and in CI.
    const scored = run(process.execPath, [
      path.join(root, 'scripts', 'measure', 'mutation-score.mjs'),
      report,
      '--check',
    ]);
    if (scored !== 0) return scored;
  }
  return status;
}

process.exitCode = main(process.argv.slice(2));
