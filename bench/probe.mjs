#!/usr/bin/env node
// The package's import time and probe() cost, as ratios against `node -e 0` measured in the same run.
//   import:         node -e "await import('metal-cap-shim')"            (no native code loads at import)
//   import+probe:   the same, then probe()                               (loads the addon, asks Metal)
//   offline probe:  import, then probeSnapshot(<bundled snapshot>)       (any OS)
// Runs are interleaved and medians reported. On Linux, probe() uses the simulated build when it is present.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const entry = JSON.stringify(path.join(root, 'dist', 'index.js'));
const RUNS = Number(process.env.BENCH_RUNS ?? 15);
const env = {
  ...process.env,
  METAL_CAP_SHIM_SIM_SNAPSHOT: process.env.METAL_CAP_SHIM_SIM_SNAPSHOT ?? 'vz-guest-m1-ultra-tahoe-stock',
};

const cases = {
  'node -e 0': '0',
  import: `await import(${entry})`,
  'import+probe': `const m = await import(${entry}); if (!m.probe().supported && process.platform === 'darwin') process.exit(1)`,
  'offline probe': `const m = await import(${entry}); m.probeSnapshot('vz-guest-m1-ultra-tahoe-stock')`,
};

function timeOnce(code) {
  const t0 = process.hrtime.bigint();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], { env, stdio: 'ignore' });
  if (r.status !== 0) throw new Error(`benchmark case failed: ${code}`);
  return Number(process.hrtime.bigint() - t0) / 1e6;
}

const samples = Object.fromEntries(Object.keys(cases).map((k) => [k, []]));
for (let i = 0; i < RUNS; i++) for (const [name, code] of Object.entries(cases)) samples[name].push(timeOnce(code));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const base = median(samples['node -e 0']);

// In-process cost of one probe() after the first (addon loaded, device created).
const inProcess = spawnSync(
  process.execPath,
  [
    '--input-type=module',
    '-e',
    `const m = await import(${entry}); m.probe(); const n = 200; const t0 = process.hrtime.bigint();
     for (let i = 0; i < n; i++) m.probe({ allDevices: true });
     console.log(Number(process.hrtime.bigint() - t0) / 1e3 / n);`,
  ],
  { env, encoding: 'utf8' },
);

console.log(`${RUNS} interleaved runs each; wall time of a whole node process`);
for (const name of Object.keys(cases)) {
  const m = median(samples[name]);
  console.log(`${name.padEnd(14)} ${m.toFixed(1).padStart(7)} ms   ${(m / base).toFixed(3)}× node -e 0`);
}
console.log(`probe({ allDevices: true }) in process: ${Number(inProcess.stdout).toFixed(1)} µs per call`);
console.log(
  JSON.stringify({
    importOverNode: Number((median(samples.import) / base).toFixed(3)),
    importProbeOverNode: Number((median(samples['import+probe']) / base).toFixed(3)),
    offlineProbeOverNode: Number((median(samples['offline probe']) / base).toFixed(3)),
    probeMicroseconds: Number(Number(inProcess.stdout).toFixed(1)),
  }),
);
